#!/bin/sh
# bench/pack.sh in a locale whose decimal point is a comma (de_DE): awk read
# the seconds 0.012 as 0 and printf wrote them as 0,000, so every figure came
# out 0,000 or 1,000 and the ratio "infx". The figures must be the C locale's
# kind: numbers with a '.', none zero for a run that took time.
. "$GRPO_TOP/tests/cli/lib.sh"
use_locale de_DE.UTF-8 || skip_all "no de_DE.UTF-8 locale and localedef cannot make one"
command -v zstd > /dev/null || skip_all "no zstd (bench/pack.sh needs it)"
plan 3
grpo-cat --from-json -o "$T/in.zst" "$GRPO_TOP/tests/cli/pack/runs.jsonl" || exit 1
for sh in bash sh; do
	if ! command -v $sh > /dev/null; then skip "no $sh"; continue; fi
	LC_ALL=de_DE.UTF-8 BUILD=$GRPO_BUILD $sh "$GRPO_TOP/bench/pack.sh" "$T/in.zst" > "$T/$sh.out" 2>&1
	bad=$(grep -c ',[0-9]\|infx\| 0\.000 s wall' "$T/$sh.out")
	is "$?:$bad:$(grep -c '^pack.sh: W=' "$T/$sh.out")" "1:0:2" "$sh in de_DE: figures with a '.', none 0 or inf"
	[ "$bad" = 0 ] || sed 's/^/# /' "$T/$sh.out"
done
LC_ALL=de_DE.UTF-8 BUILD=$GRPO_BUILD sh "$GRPO_TOP/bench/pack.sh" "$T/none.zst" > /dev/null 2>&1
[ $? -ne 0 ]
ok $? "a missing INPUT fails"
