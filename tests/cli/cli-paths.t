#!/bin/sh
# An empty argument where a tool takes a path (an option's or an operand)
# is a usage error naming it (exit 2, "expected a path, got ''"), and
# nothing is made: joined into a path, "" made "/step_1" of -o "", so that
# grpo-collect and grpo-score published into the root, and a --cursor ""
# left ./.lock. Each runs in an empty directory, which stays empty. The
# inputs named beside -o "" do not exist: a tool that took "" again would
# fail reading them rather than publish into / (the tests may run as root).
. "$GRPO_TOP/tests/cli/lib.sh"
mkdir "$T/cwd" "$T/b"
cd "$T/cwd" || exit 1
N=$T/none   # no such file

cat > "$T/cases" <<EOF
grpo-cat|--model|--model ''
grpo-cat|--tokenizer|--tokenizer ''
grpo-cat|-o|--from-json -o '' $N.jsonl
grpo-cat|operand 2|$N ''
grpo-collect|-o|-s 1 -o '' $N.jsonl
grpo-collect|--cursor|--model $N --prompts $N.jsonl --cursor ''
grpo-collect|--model|--model '' --prompts $N.jsonl
grpo-collect|--prompts|--model $N --prompts ''
grpo-collect|--tokenizer|--model $N --prompts $N.jsonl --tokenizer ''
grpo-collect|--responses|--server http://127.0.0.1:9 --prompts $N.jsonl --responses ''
grpo-collect|--answers|-a '' $N.jsonl
grpo-collect|operand 1|''
grpo-init|-o|--preset tiny -o ''
grpo-init|--tokenizer|--preset tiny --tokenizer '' -o $T/cwd/m
grpo-pack|-o|-T 8 -o '' $N.zst
grpo-pack|--metrics|-T 8 --metrics '' $N.zst
grpo-pack|--model|-T 8 --cost flops --model '' $N.zst
grpo-pack|operand 1|-T 8 ''
grpo-score|-o|-r length -m 5 -o '' $N.zst
grpo-score|--ref|-r length -m 5 --ref '' $N.zst
grpo-score|--tokenizer|-r gsm8k --tokenizer '' $N.zst
grpo-score|--metrics|-r length -m 5 --metrics '' $N.zst
grpo-score|operand 1|-r length -m 5 ''
grpo-step|-o|--batches $T/b -o '' --model $N
grpo-step|--batches|--batches '' -o $T/cwd/p --model $N
grpo-step|--model|--batches $T/b -o $T/cwd/p --model ''
grpo-step|--metrics|--batches $T/b -o $T/cwd/p --metrics ''
grpo-step|--debug-table|--batches $T/b -o $T/cwd/p --debug-table ''
grpo-spool|operand 1|status ''
grpo-spool|operand 1|gc '' --keep-last 1
grpo-spool|operand 1|consume '' -- true
grpo-spool|operand 2|quarantine $N ''
grpo-spool|-o|plot $T/b -o ''
grpo-spool|--metrics|plot $T/b --metrics ''
grpo-spool|--archive|gc $T/b --keep-last 1 --archive ''
grpo-spool|--queue|gc $T/b --keep-last 1 --queue ''
EOF
plan $(($(wc -l < "$T/cases") * 2))

while IFS='|' read -r tool opt args; do
	eval "set -- $args"
	"$tool" "$@" < /dev/null > "$T/out" 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err")" "2:$tool: $opt: expected a path, got ''" "$tool $args: refused"
	is "$(find "$T/cwd" "$T/b" -mindepth 1)" "" "$tool $args: nothing made"
done < "$T/cases"
exit $_failed
