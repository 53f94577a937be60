#!/bin/sh
# examples/demo.sh in a locale whose decimal point is a comma (de_DE), run by
# bash (sh on Fedora, Arch, macOS) and by sh: bash's printf refused the
# reward 0.041 ("Ungültige Zahl") and the demo stopped after one row of 0,000,
# and under dash awk wrote the seconds as 0,4. The rows must be the ones of
# a run in the C locale, with a '.'.
. "$GRPO_TOP/tests/cli/lib.sh"
use_locale de_DE.UTF-8 || skip_all "no de_DE.UTF-8 locale and localedef cannot make one"
plan 6
demo() { # demo SHELL DIR [LOCALE]: two steps of the demo
	LC_ALL=${3:-de_DE.UTF-8} GRPO_DEMO_STEPS=2 GRPO_DEMO_TARGET=2 $1 "$GRPO_TOP/examples/demo.sh" "$2" \
		> "$2.out" 2> "$2.err"
}
demo sh "$T/c" C || exit 1
rows() { grep '^ *[0-9]' "$1.out"; }
for sh in bash sh; do
	if ! command -v $sh > /dev/null; then
		skip "no $sh"; skip "no $sh"; skip "no $sh"
		continue
	fi
	demo $sh "$T/$sh"
	is "$?:$(cat "$T/$sh.err"):$(rows "$T/$sh" | cut -c1-26 | tr '\n' ' ')" "0::$(rows "$T/c" | cut -c1-26 | tr '\n' ' ')" \
		"$sh in de_DE: the rows of step, reward and KL are the C locale's"
	is "$(rows "$T/$sh" | grep -c '  [0-9]*\.[0-9]$')" 2 "$sh in de_DE: the seconds with a '.'"
	is "$(cut -f1-3 "$T/$sh/progress.tsv"; cut -f4 "$T/$sh/progress.tsv" | grep -c ',')" \
		"$(cut -f1-3 "$T/c/progress.tsv"; echo 0)" "$sh in de_DE: progress.tsv as in the C locale, no comma"
done
