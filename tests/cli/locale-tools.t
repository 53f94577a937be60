#!/bin/sh
# The tools in the user's locale: numbers read and written with a '.' in a
# comma-decimal locale (de_DE), option values and JSON keys matched as
# written in one whose i does not upper-case to I (tr_TR). No tool calls
# setlocale(3), and lib/ reads numbers with strtod and writes them with
# printf, which rely on that (lib/README.md); a tool that started to would
# change the bytes below.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
grpo-cat --from-json -o "$T/in.zst" "$GRPO_TOP/tests/cli/pack/runs.jsonl" || exit 1
run() { # run LOCALE: score with a weighted built-in and a program's fractional reward, print it
	LC_ALL=$1 grpo-score -r length=0.5 -m 1 -c 'while read -r l; do echo "{\"rewards\": {\"r\": 0.25}}"; done' \
		--reward r=1.5 -t "$GRPO_TOP/examples/addition/tokenizer.json" --metrics "$T/m.$1" "$T/in.zst" | LC_ALL=$1 grpo-cat --json > "$T/out.$1" &&
	LC_ALL=$1 grpo-cat --stats --json "$T/in.zst" >> "$T/out.$1" && grep -v '_s":' "$T/m.$1" | tr -d '\n' >> "$T/out.$1"
}
run C || exit 1
grep -q '"rewards":\[-1,0.25\],"reward_names":\["length","r"\],"advantages":-0.70690686,' "$T/out.C"
ok $? "in C: the rewards (stored unweighted) and the weighted advantage"
for l in de_DE.UTF-8 tr_TR.UTF-8; do
	if ! use_locale $l; then skip "no $l locale and localedef cannot make one"; continue; fi
	run $l
	is "$?" 0 "in $l: grpo-score and grpo-cat run"
	cmp -s "$T/out.C" "$T/out.$l"
	ok $? "in $l: the same bytes as in C"
done
