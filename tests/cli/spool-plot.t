#!/bin/sh
# grpo-spool plot: the metrics lines of grpo-score and grpo-step as one
# table per step (--tsv), drawn as a PNG by gnuplot.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 17
S="$T/spool"
mkdir -p "$S"
# two scored inputs of policy 0 (4 and 12 sequences), one of policy 1, and a
# pipeline's line from standard input, which follows; a packer's line between
cat > "$S/score.jsonl" <<'EOF2'
{"input": "/s/rollouts/step_0/rank_0/a.zst", "sequences": 4, "rewards": {"gsm8k": {"mean": 1, "std": 0}}}
{"input": "/s/rollouts/step_0/rank_1/b.zst", "sequences": 12, "rewards": {"gsm8k": {"mean": 0.5, "std": 0}}}
{"step": 1, "micro_batches": 3, "fill": 0.9}

{"input": "/s/rollouts/step_1/rank_0/c.zst", "sequences": 8, "rewards": {"gsm8k": {"mean": 0.75}, "format": {"mean": 1}}}
{"input": "standard input", "sequences": 8, "rewards": {"gsm8k": {"mean": 0.25}}}
EOF2
cat > "$S/step.jsonl" <<'EOF2'
{"step":1,"kl":0.5,"entropy":2,"clip_low":0.125,"clip_high":0.25,"grad_norm":3,"tokens_per_s":1000}
{"step":2,"kl":0.25,"entropy":1.5,"clip_low":0,"clip_high":0.5,"grad_norm":1.5,"tokens_per_s":2000}
EOF2
printf 'step\treward.gsm8k\treward.format\tkl\tentropy\tclip_fraction\tgrad_norm\ttokens_per_s
1\t0.625\t-\t0.5\t2\t0.375\t3\t1000
2\t0.75\t1\t0.25\t1.5\t0.5\t1.5\t2000
3\t0.25\t-\t-\t-\t-\t-\t-
' > "$T/want"
grpo-spool plot "$S" --tsv > "$T/got" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "--tsv reads the spool's score.jsonl and step.jsonl"
cmp -s "$T/want" "$T/got"
is "$?" 0 "the table: rewards per step weighted by sequences, clip fraction low + high, '-' where missing"
[ $? -eq 0 ] || diff "$T/want" "$T/got" | sed 's/^/# /'

grpo-spool plot "$T/none" --metrics "$S/step.jsonl" --tsv | cut -f1,2,3 | tr '\t\n' ', ' > "$T/got"
is "$(cat "$T/got")" "step,kl,entropy 1,0.5,2 2,0.25,1.5 " "--metrics names the files to read instead"

printf '{"step":1,"kl":0.5,"grad_norm":1}\nnot json\n' > "$T/bad.jsonl"
grpo-spool plot "$S" --metrics "$T/bad.jsonl" --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/bad.jsonl:2: not a JSON object" "a line that is not JSON is an error naming its file and line"
printf '{"step":1,"kl":0.5,"grad_norm":1}\n{"step":1.5,"kl":0.5,"grad_norm":1}\n' > "$T/half.jsonl"
grpo-spool plot "$S" --metrics "$T/half.jsonl" --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/half.jsonl:2: a trainer's line with step 1.5, not a step number" \
	"a trainer's line whose step is no whole number is an error, not step 1"
printf '{"step":1e20,"grad_norm":1}\n' > "$T/huge.jsonl"
grpo-spool plot "$S" --metrics "$T/huge.jsonl" --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/huge.jsonl:1: a trainer's line with step 1e+20, not a step number" \
	"a trainer's step past the spool's largest is an error, not a wrapped-around step"
printf '{"input":"s/rollouts/step_9007199254740992/rank_0/a.zst","sequences":4,"rewards":{"r":{"mean":0.5}}}\n' > "$T/far.jsonl"
grpo-spool plot "$S" --metrics "$T/far.jsonl" --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/far.jsonl:1: input s/rollouts/step_9007199254740992/rank_0/a.zst: a step past 9007199254740991" \
	"a scorer's input in a step past the largest is an error too"
printf '{"input":"s/rollouts/step_9007199254740991/rank_0/a.zst","sequences":4,"rewards":{"r":{"mean":0.5}}}\n' > "$T/last.jsonl"
is "$(grpo-spool plot "$S" --metrics "$T/last.jsonl" --tsv | sed -n 2p | cut -f1)" "9007199254740992" \
	"the largest step's input is plotted at the step after it"
grpo-spool plot "$T/nonexistent" --tsv > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-spool: $T/nonexistent: No such file or directory" \
	"a spool that is not there is said to be missing, not to lack metrics files"
mkdir "$T/empty"
grpo-spool plot "$T/empty" --tsv > /dev/null 2> "$T/err"
is "$?:$(grep -c 'no score.jsonl or step.jsonl' "$T/err")" "1:1" "a spool without metrics files says so"

PATH="$GRPO_BIN" grpo-spool plot "$S" > /dev/null 2> "$T/err"
is "$?:$(grep -c 'gnuplot is not installed' "$T/err")" "69:1" "without gnuplot on PATH: exit 69 and a message that says so"

if command -v gnuplot > /dev/null; then
	grpo-spool plot "$S" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(head -c 8 "$S/metrics.png" | od -An -tx1 | tr -d ' \n')" "0::89504e470d0a1a0a" \
		"a PNG in SPOOL/metrics.png by default, silently"
	grpo-spool plot "$S" -o "$T/one.png" --metrics "$S/step.jsonl" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(head -c 4 "$T/one.png" | od -An -tx1 | tr -d ' \n')" "0::89504e47" "-o names the PNG"
else
	skip "no gnuplot"
	skip "no gnuplot"
fi

# A reward's name is data (a reward program chooses it): a line break in it
# must not end gnuplot's datablock, where what follows would run as
# gnuplot's commands (system "..." among them), nor split the TSV's header.
printf '%s\n' '{"input":"/s/rollouts/step_0/rank_0/a.zst","sequences":2,"rewards":{"a\tb\nEOD\nsystem \"touch '"$T"'/ran\"\n$x << EOD\n":{"mean":1}}}' \
	'{"step":1,"kl":0.5,"grad_norm":1}' > "$T/names.jsonl"
grpo-spool plot "$T/none" --metrics "$T/names.jsonl" --tsv > "$T/got" 2> "$T/err"
is "$?:$(cat "$T/err"):$(wc -l < "$T/got"):$(head -n 1 "$T/got" | cut -f 2)" \
	'0::2:reward.a\tb\nEOD\nsystem "touch '"$T"'/ran"\n$x << EOD\n' "--tsv: a name's tab and line breaks escaped, one header line"
if command -v gnuplot > /dev/null; then
	mkdir "$T/png"
	png="$T/png/a
set output \"b.png\"
c.png"
	grpo-spool plot "$T/none" --metrics "$T/names.jsonl" -o "$png" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(head -c 4 "$png" | od -An -tx1 | tr -d ' \n'):$(ls -A "$T/png" | grep -c .)" \
		"0::89504e47:3" "a name or a PNG's name with line breaks: one PNG, of that name (3 lines of ls)"
	[ ! -e "$T/ran" ] && [ ! -e b.png ] && [ ! -e "$T/png/b.png" ]
	ok $? "and no command of theirs run"
else
	skip "no gnuplot"
	skip "no gnuplot"
fi

# A long run: 150,000 steps of trainer lines and of scorer lines. Each line
# once looked for its row from the first, which took about a minute; it
# takes seconds now. No time is asserted (a bound fails on a slow machine):
# a table gone quadratic again shows as this script taking minutes.
if [ -n "${GRPO_SANITIZED:-}" ]; then
	skip "a sanitized build: the 150,000-line run is the plain build's"
else
	awk 'BEGIN { for (i = 1; i <= 150000; i++) printf "{\"step\":%d,\"kl\":0.5,\"grad_norm\":1}\n", i }' > "$T/long-step.jsonl"
	awk 'BEGIN { for (i = 0; i < 150000; i++)
		printf "{\"input\":\"/s/rollouts/step_%d/rank_0/a.zst\",\"sequences\":4,\"rewards\":{\"r\":{\"mean\":1}}}\n", i }' \
		> "$T/long-score.jsonl"
	grpo-spool plot "$T/none" --metrics "$T/long-step.jsonl" --metrics "$T/long-score.jsonl" --tsv \
		> "$T/got" 2> "$T/err"
	is "$?:$(cat "$T/err"):$(wc -l < "$T/got"):$(tail -n 1 "$T/got")" "0::150001:$(printf '150000\t1\t0.5\t-\t-\t1\t-')" \
		"150,000 steps of both kinds plotted, one row a step"
fi
