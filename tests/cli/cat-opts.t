#!/bin/sh
# grpo-cat refuses an option that the mode given would ignore (a tokenizer
# not loaded, -v with nothing to list), as grpo-collect does: exit 2, a line
# naming the mode and the option, nothing on standard output; and two modes
# at once. The combinations grpo-cat(1) documents still run.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 22

grpo-cat --from-json -o "$T/a.zst" "$GRPO_TOP/examples/gsm8k-groups.jsonl" || { echo "Bail out! no spool file to read"; exit 1; }
echo '"hi"' > "$T/hi.jsonl"
# ARGS|the message's start (the "it goes with" list follows)
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086 # ARGS are words
	grpo-cat $args < "$T/hi.jsonl" > "$T/out" 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err" | sed 's/ (it goes with .*//'):$(wc -c < "$T/out" | tr -d ' ')" \
		"2:grpo-cat: $want:0" "grpo-cat $(echo "$args" | sed "s|$T/||g"): usage error"
done <<EOF2
--stats --tokenizer $T/no-such.json $T/a.zst|--stats takes no --tokenizer
--stats --tokenizer $T/a.zst $T/a.zst|--stats takes no --tokenizer
-v $T/a.zst|printing records takes no -v
--json --from-json|--from-json takes no --json
--from-json --model $T|--from-json takes no --model
--from-json -v|--from-json takes no -v
--from-json --head 1|--from-json takes no --head
--chat qwen --tokenizer $T/no-such.json|--chat without --encode takes no --tokenizer
--chat qwen --model $T|--chat without --encode takes no --model
--chat qwen -v|--chat without --encode takes no -v
--chat qwen3 --encode --tokenizer $T/t.json -v|--chat --encode takes no -v
--encode --tokenizer $T/t.json --head 1|--encode takes no --head
--decode --tokenizer $T/t.json --no-thinking|--decode takes no --no-thinking
-o $T/x.zst $T/a.zst|printing records takes no -o
--stats -o $T/x.zst $T/a.zst|--stats takes no -o
--stats --from-json $T/a.zst|--from-json and --stats exclude each other
--encode --decode --tokenizer $T/t.json|--encode and --decode exclude each other
EOF2
grpo-cat -v "$T/a.zst" 2> "$T/err" > /dev/null
grep -q '^usage: grpo-cat' "$T/err"
is "$?" 0 "the usage follows the message"
is "$(grpo-cat --stats -v --json --head 2 "$T/a.zst" | grep -c '"single_member_group_ids":\[')" 1 \
	"--stats takes -v, --json and --head"
is "$(grpo-cat --json --head 1 "$T/a.zst" | wc -l | tr -d ' ')" 1 "printing records takes --json and --head"
grpo-cat --json "$T/a.zst" | grpo-cat --from-json -o "$T/b.zst" && cmp -s "$T/a.zst" "$T/b.zst"
is "$?" 0 "--from-json takes -o"
is "$(grpo-cat --chat qwen < "$T/hi.jsonl")" '"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"' \
	"--chat takes no tokenizer to print the prompt"
