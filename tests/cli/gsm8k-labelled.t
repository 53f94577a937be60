#!/bin/sh
# tests/data/gsm8k-labelled.jsonl (the labelled set test_gsm8k_labelled scores
# the gsm8k reward against) is exactly what its generator writes from the
# GSM8K test set: nobody edited a label by hand.
. "$GRPO_TOP/tests/cli/lib.sh"
src="$GRPO_SHARED/data/gsm8k/test.jsonl"
[ -f "$src" ] || skip_all "no GSM8K test set at $src"
command -v python3 > /dev/null || skip_all "no python3"
plan 1
python3 "$GRPO_TOP/tests/data/make_gsm8k_labelled.py" "$src" > "$T/set.jsonl"
is "$?:$(cmp "$T/set.jsonl" "$GRPO_TOP/tests/data/gsm8k-labelled.jsonl" 2>&1)" "0:" \
	"make_gsm8k_labelled.py remakes the committed set byte for byte"
