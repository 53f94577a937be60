#!/bin/sh
# examples/demo.sh run again after a stage of its second round died holding
# its input (kill -9, ^C, a crash: here GRPO_FSYS_CRASH_AT), as the README
# and grpo(7) say: "a second run on the same spool goes on from its newest
# policy". The second run must train step 2 as a run never stopped does:
# the same policy, the same progress rows (the reward of step 2's own round,
# not step 1's), nothing left claimed.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 13
task="$GRPO_TOP/examples/addition"
demo() { GRPO_DEMO_STEPS=$1 GRPO_DEMO_TARGET=2 sh "$GRPO_TOP/examples/demo.sh" "$2" > "$2.out" 2> "$2.err"; }
demo 2 "$T/ref" || exit 1
# the demo's round 2 by hand up to STAGE, which dies at its first output
# file's creation (1: the input claimed, nothing published) or at the call
# after that file's publishing rename (2: published, the input still claimed)
crashed() { # crashed DIR STAGE 1|2
	s=$1
	demo 1 "$s" || exit 1
	collect() { grpo-collect --model "$s/policy" --prompts "$task/prompts.jsonl" -n 16 --max-tokens 2 \
		--seed 2 -o "$s/rollouts"; }
	score() { grpo-score --reward gsm8k --ref "$s/init" --metrics "$s/score.jsonl" -o "$s/scored" \
		"$s/rollouts"; }
	pack() { grpo-pack --seq-len 512 --step 2 --flush -o "$s/batches" "$s/scored"; }
	collect || exit 1
	[ "$2" = pack ] && { score || exit 1; }
	rm -rf "$T/trace" && cp -R "$s" "$T/trace"
	at=$( (s=$T/trace && GRPO_FSYS_TRACE=1 $2 2>&1) | awk -v w="$3" '
		$1 == "fsys" && $3 == "open_excl" && !o { o = 1; if (w == 1) { print $2; exit } }
		$1 == "fsys" && $3 == "rename_noreplace" && o { print $2 + 1; exit }')
	GRPO_FSYS_CRASH_AT=$at $2 2> /dev/null
	echo "$?"
}
same() { # same DIR: rc and standard error of the second run, then whether it matches the reference
	echo "$1:$(cat "$2.err")"
	cut -f1-3 "$2/progress.tsv" | cmp -s - "$T/ref.rows" && echo rows
	cmp -s "$2/policy/step_2/model.safetensors" "$T/ref/policy/step_2/model.safetensors" && echo policy
	grpo-spool status "$2" | grep -c claimed
}
cut -f1-3 "$T/ref/progress.tsv" > "$T/ref.rows"
for c in "score 1 holding the rollouts it claimed" "score 2 after publishing its output, before its metrics line" \
	"pack 1 holding the scored file it claimed"; do
	set -- $c
	st=$1 n=$2
	shift 2
	is "$(crashed "$T/$st$n" $st $n)" 86 "grpo-$st dies $*"
	demo 2 "$T/$st$n"
	is "$(same $? "$T/$st$n" | tr '\n' ' ')" "0: rows policy 0 " \
		"demo.sh run again trains step 2 as a run never stopped, its progress row that of step 2, nothing claimed"
	is "$(grep -c '^   2 ' "$T/$st$n.out")" 1 "and prints step 2's line"
done

# stopped (^C) once grpo-step had published step 2 and written its metrics
# line, before the demo wrote step 2's progress row: the next run writes
# it, from the metrics files, before going on
s=$T/row
demo 1 "$s" || exit 1
grpo-collect --model "$s/policy" --prompts "$task/prompts.jsonl" -n 16 --max-tokens 2 --seed 2 \
	-o "$s/rollouts" &&
	grpo-score --reward gsm8k --ref "$s/init" --metrics "$s/score.jsonl" -o "$s/scored" "$s/rollouts" &&
	grpo-pack --seq-len 512 --step 2 --flush -o "$s/batches" "$s/scored" &&
	grpo-step --model "$s/init" --batches "$s/batches" --step 2 -o "$s/policy" --lr 0.01 \
		--entropy-coef 0.02 --metrics "$s/step.jsonl" || exit 1
demo 3 "$s"
is "$?:$(cat "$s.err"):$(cut -f1 "$s/progress.tsv" | tr '\n' ' ')" "0::step 1 2 3 " "run again, it writes step 2's row, then trains step 3"
demo 3 "$T/ref3" || exit 1
cut -f1-3 "$T/ref3/progress.tsv" > "$T/ref3.rows"
cut -f1-3 "$s/progress.tsv" | cmp -s - "$T/ref3.rows"
is "$?:$(grep -c '^   2 ' "$s.out")" "0:1" "its rows are a run never stopped's, step 2's printed too"

# grpo-step killed once it had published step 2, while it retired the
# step's micro-batches (at its last rename): the step's metrics line is
# written by then, and the next run's rows are a run never stopped's
s=$T/retire
demo 1 "$s" || exit 1
grpo-collect --model "$s/policy" --prompts "$task/prompts.jsonl" -n 16 --max-tokens 2 --seed 2 \
	-o "$s/rollouts" &&
	grpo-score --reward gsm8k --ref "$s/init" --metrics "$s/score.jsonl" -o "$s/scored" "$s/rollouts" &&
	grpo-pack --seq-len 512 --step 2 --flush -o "$s/batches" "$s/scored" || exit 1
train() { grpo-step --model "$1/init" --batches "$1/batches" --step 2 -o "$1/policy" --lr 0.01 \
	--entropy-coef 0.02 --metrics "$1/step.jsonl"; }
rm -rf "$T/trace" && cp -R "$s" "$T/trace"
at=$(GRPO_FSYS_TRACE=1 train "$T/trace" 2>&1 | awk '$1 == "fsys" && $3 == "rename_noreplace" { n = $2 } END { print n }')
GRPO_FSYS_CRASH_AT=$at train "$s" 2> /dev/null
is "$?:$(ls "$s/policy" | tr '\n' ' '):$(grep -c '"step":2,' "$s/step.jsonl")" "86:step_0 step_1 step_2 :1" \
	"grpo-step killed retiring step 2's micro-batches: step 2 published, its metrics line written"
demo 3 "$s"
cut -f1-3 "$s/progress.tsv" | cmp -s - "$T/ref3.rows"
is "$?:$(cat "$s.err")" "0:" "run again, the demo's rows are a run never stopped's"
