#!/bin/sh
# The tools' own messages on standard error are one printable line each,
# whatever they quote of the data: a file name found in a queue, a
# directory beside the steps, a model path a server sent. A control byte
# in it (an escape sequence, a line break) is shown as '?', the rule of
# the library's messages (err.h), so that it neither acts on the operator's
# terminal nor splits one message into two lines of a log.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 8

esc=$(printf '\033')
bad=$(printf 'x\033[2J\nline2.zst')   # clears a terminal, and breaks the line
shown='x?[2J?line2.zst'
# says STDERR [PATTERN]: its lines (those that PATTERN matches), then "ESC"
# where any line of it holds an escape byte
says() {
	grep -e "${2:-}" "$1"
	if grep -q "$esc" "$1"; then echo ESC; fi
}

S=$T/spool
mkdir -p "$S/rollouts/step_0/rank_0"
rollout_group 1 '[5]' > "$T/one.jsonl"   # a group of one member, which grpo-score warns of
grpo-cat --from-json -o "$S/rollouts/step_0/rank_0/$bad" "$T/one.jsonl"

# --- file names found in a queue --------------------------------------------
grpo-spool consume "$S/rollouts" -- false 2> "$T/err"
is "$?:$(says "$T/err")" \
	"1:grpo-spool: $S/rollouts/step_0/rank_0/$shown: false exited with status 1; left waiting" \
	"consume: the file a command failed on is named on one line, its control bytes as '?'"
grpo-score -r length -m 10 -o "$S/scored" "$S/rollouts" 2> "$T/err"
is "$?:$(says "$T/err")" \
	"0:grpo-score: $S/rollouts/step_0/rank_0/$shown: 1 group of one member: no baseline, advantage 0" \
	"grpo-score: an input claimed from a queue is named on one line"
mkdir "$S/scored/step_2$(printf '\033[2J\nx')"
grpo-pack -T 64 --step 4 -v --flush -o "$S/batches" "$S/scored" 2> "$T/err"
is "$?:$(says "$T/err" '^grpo-pack: ')" \
	"0:grpo-pack: $S/scored/step_2?[2J?x: not part of the spool, and no tool reads it: steps and ranks are step_N and rank_X, N and X in decimal without leading zeros" \
	"grpo-pack -v: a directory misnamed as a step is named on one line"
grpo-spool status "$S" > /dev/null 2> "$T/err"
is "$(says "$T/err")" \
	"grpo-spool: $S/scored/step_2?[2J?x: not part of the spool, and no tool reads it: steps and ranks are step_N and rank_X, N and X in decimal without leading zeros" \
	"grpo-spool status: so too"

# a line longer than cli.c's buffer on the stack, written whole all the same
long=$T/$(printf '%0200d' 0 | tr 0 d)
for i in 1 2 3 4 5 6 7 8 9 10 11; do long=$long/$(printf '%0200d' 0 | tr 0 d); done
grpo-spool consume "$long/$bad" -- true 2> "$T/err"
is "$?:$(says "$T/err")" "1:grpo-spool: $long/$shown: no such queue" \
	"a message of $(wc -c < "$T/err") bytes is one whole line too"

# --- a path given as a glob may hold the same -----------------------------
mkdir "$T/$bad"
grpo-cat --model "$T/$bad" --encode < /dev/null 2> "$T/err"
is "$?:$(says "$T/err")" "1:grpo-cat: $T/$shown: no tokenizer.json" \
	"grpo-cat: a model directory without a tokenizer is named on one line"

# --- what a server sent ------------------------------------------------------
if command -v python3 > /dev/null; then
	fake_server "$T/server"
	printf '{"model_path": "/models/\\u001b[2J\\nstep_4"}\n' > "$T/server/script.json"
	printf '{"prompt":"1+1=","answer":"2"}\n' > "$T/prompts.jsonl"
	grpo-collect -v --server "$URL" --prompts "$T/prompts.jsonl" -n 2 -o "$S/rollouts" 2> "$T/err"
	is "$?:$(says "$T/err" "^grpo-collect: $URL")" \
		"0:grpo-collect: $URL (/models/?[2J?step_4, policy version 0): 1 prompt from row 0 of $T/prompts.jsonl, 1 group of 2" \
		"grpo-collect -v: the model path the server named is shown on one line"
else
	skip "no python3 to run the fake server"
fi

# --- the library's messages keep the rule they had --------------------------
grpo-cat "$S/rollouts/step_0/rank_0/$bad" "$T/$bad" > /dev/null 2> "$T/err"
is "$?:$(says "$T/err" | sed 's/:.*//' | sort -u)" "1:grpo-cat" \
	"an error of the library that names the file is one line too"
