#!/bin/sh
# The whole loop on a CPU: a tiny model learns single-digit addition.
#
# A random model (grpo-init) with a tokenizer of its own (examples/addition:
# the digits, + and = and an end token, 13 ids) is asked the 55 sums a+b=
# with a+b <= 9 and must answer the digit. Each step runs the four stages
# through one spool:
#
#   grpo-collect   samples G answers to every prompt from the newest policy
#   grpo-score     rewards the right digit (gsm8k: the last number) and takes
#                  the initial model's logprobs, for the KL
#   grpo-pack      packs the step's sequences into micro-batches
#   grpo-step      trains on them and publishes policy/step_N
#
# and prints one line: the step, the mean reward of what was sampled, the KL
# from the initial model, the seconds it took. It stops once the reward
# reaches the target, writes a plot of reward and KL per step (with gnuplot,
# where installed) and leaves the spool to look at.
#
# Usage: sh examples/demo.sh [SPOOL]   (default: a new temporary directory)
# Run again on the same SPOOL, it goes on after the newest policy step,
# stopped or killed at any point (a stage's claims are recovered first, and
# the rows of steps trained but not yet written are written).
# Environment: GRPO_DEMO_STEPS (most steps, 150), GRPO_DEMO_TARGET (the mean
# reward at which to stop early, 0.8).
# Exit status: 0 when the steps ran (whether or not the target was reached),
# 1 when a stage failed.
set -e
top=$(cd "$(dirname "$0")/.." && pwd)
PATH="${GRPO_BIN:-$top/build/bin}:$PATH"
spool=${1:-$(mktemp -d "${TMPDIR:-/tmp}/grpo-demo.XXXXXX")}
case $spool in -*) spool=./$spool ;; esac   # not an option to the commands below
steps=${GRPO_DEMO_STEPS:-150}
target=${GRPO_DEMO_TARGET:-0.8}
task="$top/examples/addition"
G=16
# Numbers are written and compared in the C locale: in de_DE, bash's printf
# rejects 0.041 and awk writes 0,4. The rest keeps the user's locale.
num() { LC_ALL=C "$@"; }

mkdir -p "$spool"
if [ ! -d "$spool/init" ]; then
	grpo-init --family qwen2 --hidden 32 --layers 2 --heads 4 --kv-heads 2 --intermediate 64 \
		--vocab 13 --eos 12 --tokenizer "$task/tokenizer.json" --seed 1 -o "$spool/init"
fi
[ -f "$spool/progress.tsv" ] || printf 'step\treward\tkl\tseconds\n' > "$spool/progress.tsv"
echo "grpo-tools demo: a random model learns a+b= (55 prompts, $G samples each) in $spool"
printf '%4s  %6s  %8s  %7s\n' step reward kl seconds

# The claims of a stage that died (a kill, ^C) go back to their queues:
# else the next run's stage passes over its input and the step never comes.
grpo-spool recover "$spool"

# The last value of a numeric field in a JSON line.
field() { sed -n "s/.*\"$1\": *\([-0-9.e+]*\).*/\1/p" "$2" | tail -1; }

# After the newest policy step, when the spool has one (a run stopped early).
k=$(ls "$spool/policy" 2> /dev/null | sed -n 's/^step_\([0-9][0-9]*\)$/\1/p' | sort -n | tail -1)
k=$((${k:-0} + 1))
# The rows of steps published by a run stopped before it wrote them (^C
# while grpo-step published), from the metrics files as grpo-spool plot
# reads them; the seconds are not known.
last=$(tail -n 1 "$spool/progress.tsv" | cut -f1)
[ "$last" != step ] || last=0
if [ "$last" -lt $((k - 1)) ]; then
	grpo-spool plot --tsv "$spool" | num awk -F '\t' -v a="$last" -v b=$((k - 1)) \
		'NR > 1 && $1 > a && $1 <= b && $2 != "-" && $3 != "-" { print $1 "\t" $2 "\t" $3 }' |
		while IFS='	' read -r n reward kl; do
			printf '%s\t%s\t%s\t-\n' "$n" "$reward" "$kl" >> "$spool/progress.tsv"
			num printf '%4d  %6.3f  %8.5f  %7s\n' "$n" "$reward" "$kl" -
		done
fi
reached=
while [ "$k" -le "$steps" ]; do
	start=$(date +%s.%N)
	model="$spool/policy"
	[ -d "$spool/policy/step_0" ] || model="$spool/init"
	# a round stopped after packing goes straight to training
	if [ ! -f "$spool/batches/step_$k/DONE" ]; then
		grpo-collect --model "$model" --prompts "$task/prompts.jsonl" -n $G --max-tokens 2 --seed "$k" \
			-o "$spool/rollouts"
		grpo-score --reward gsm8k --ref "$spool/init" --metrics "$spool/score.jsonl" -o "$spool/scored" \
			"$spool/rollouts"
	fi
	# run again after a kill that came once the step was packed, it publishes
	# nothing and retires the inputs the killed run packed (else left waiting)
	grpo-pack --seq-len 512 --step "$k" --flush -o "$spool/batches" "$spool/scored"
	grpo-step --model "$spool/init" --batches "$spool/batches" --step "$k" -o "$spool/policy" \
		--lr 0.01 --entropy-coef 0.02 --metrics "$spool/step.jsonl"
	reward=$(field mean "$spool/score.jsonl")
	kl=$(field kl "$spool/step.jsonl")
	secs=$(num awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	printf '%s\t%s\t%s\t%s\n' "$k" "$reward" "$kl" "$secs" >> "$spool/progress.tsv"
	num printf '%4d  %6.3f  %8.5f  %7s\n' "$k" "$reward" "$kl" "$secs"
	if num awk -v r="$reward" -v t="$target" 'BEGIN { exit !(r >= t) }'; then
		reached=1
		break
	fi
	k=$((k + 1))
done
[ "$k" -le "$steps" ] || k=$steps

if command -v gnuplot > /dev/null; then
	gnuplot 2> "$spool/gnuplot.log" <<EOF
set terminal png size 800,480
set output "$spool/progress.png"
set xlabel "step"
set ylabel "mean reward"
set y2label "KL from the initial model"
set ytics nomirror
set y2tics
set key left top
plot "$spool/progress.tsv" using 1:2 skip 1 with linespoints title "reward", \
     "$spool/progress.tsv" using 1:3 skip 1 axes x1y2 with lines title "KL"
EOF
	plot="$spool/progress.png"
else
	plot="(none: gnuplot is not installed)"
fi

echo
if [ -n "$reached" ]; then
	echo "The mean reward reached $target at step $k."
else
	echo "The mean reward did not reach $target in $steps steps (GRPO_DEMO_STEPS=N for more)."
fi
echo "Plot: $plot"
# the spool as one shell word, so that the commands can be copied as they are
# whatever its name holds (TMPDIR="/tmp/a b")
q=$spool
case $q in *[!A-Za-z0-9_./+:@%=,-]*) q="'$(printf '%s' "$q" | sed "s/'/'\\\\''/g")'" ;; esac
echo "Look at the spool: grpo-spool status $q"
echo "                   grpo-cat --head 1 $q/scored/step_0/rank_0/*.zst"
echo "                   cat $q/policy/step_$k/config.json"
