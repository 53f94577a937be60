#!/bin/sh
# What every tool does alike with its options: -V and --version, getopt's
# errors in the tools' form (the program's name, not the path it was run
# by; a one-line synopsis after, not the whole usage; exit 2; an option's
# control bytes shown as '?'), messages naming -o and -v by their letter
# as every usage and SYNOPSIS spell them (however typed), and --help
# describing each option.
. "$GRPO_TOP/tests/cli/lib.sh"
tools="cat collect init pack score spool step"
plan 56

for t in $tools; do
	"$GRPO_BIN/grpo-$t" -V > "$T/out" 2> "$T/err"
	is "$?:$(cut -d' ' -f1 "$T/out"):$(cat "$T/err")" "0:grpo-$t:" "grpo-$t -V prints the version"
done

# grpo-spool's options follow its command
run() { # run TOOL ARG...: the tool by its full path
	t=$1
	shift
	if [ "$t" = spool ]; then "$GRPO_BIN/grpo-spool" status "$T" "$@"; else "$GRPO_BIN/grpo-$t" "$@"; fi
}
first() { echo "$1:$(sed -n 1p "$T/err"):$(sed -n 2p "$T/err" | cut -d' ' -f1)"; }
for t in $tools; do
	run $t -Z < /dev/null > /dev/null 2> "$T/err"
	is "$(first $?)" "2:grpo-$t: invalid option -- 'Z':usage:" "grpo-$t -Z: named grpo-$t, then the usage"
	run $t --no-such-option < /dev/null > /dev/null 2> "$T/err"
	is "$(first $?)" "2:grpo-$t: unrecognized option '--no-such-option':usage:" "grpo-$t: an unknown long option"
	is "$(wc -l < "$T/err" | tr -d ' '):$(sed -n 3p "$T/err")" "3:Run 'grpo-$t --help' for every option, or read grpo-$t(1)." \
		"grpo-$t: the message stays in sight: a one-line synopsis and where the options are told"
	run $t --output < /dev/null > /dev/null 2> "$T/err"
	is "$(first $?)" "2:grpo-$t: option '--output' requires an argument:usage:" "grpo-$t: a missing argument"
done

# an unknown option is quoted as typed (or as a script took it from a file
# name), but no escape sequence of it reaches the terminal
esc=$(printf '\033')
for t in $tools; do
	run $t "--x${esc}[2J" < /dev/null > /dev/null 2> "$T/err"
	is "$(first $?)" "2:grpo-$t: unrecognized option '--x?[2J':usage:" "grpo-$t: an option's escape byte shown as '?'"
done
run score "-$esc" < /dev/null > /dev/null 2> "$T/err"
is "$(first $?)" "2:grpo-score: invalid option -- '?':usage:" "a short option's escape byte shown as '?'"
"$GRPO_BIN/grpo-score" --re < /dev/null > /dev/null 2> "$T/err"
is "$?:$(sed -n 1p "$T/err")" \
	"2:grpo-score: option '--re' is ambiguous; possibilities: '--reward' '--reward-cmd' '--reward-timeout' '--reward-jobs' '--reward-groups' '--ref' '--ref-tokens'" \
	"an ambiguous prefix: every option it begins, in glibc's words"

# -o and -v by their letter, every other option by its long name
while IFS='|' read -r want args; do
	# shellcheck disable=SC2086 # ARGS are words
	$args < /dev/null > /dev/null 2> "$T/err"
	is "$?:$(sed -n 1p "$T/err")" "2:$want" "$args: named as the usage spells it"
done <<EOF
grpo-spool: status takes no -o|grpo-spool status $T --output $T/x.png
grpo-spool: status takes no -v|grpo-spool status $T --verbose
grpo-init: -o: expected a path, got ''|grpo-init --preset tiny --output=
grpo-step: --batches and -o are required|grpo-step --batches $T
grpo-collect: -o needs --step N, the policy version that sampled the rollouts|grpo-collect --output $T/q $T/none.jsonl
EOF

# --help: each option the tool takes (its getopt_long table) on a line of
# its own that describes it, as the man page's OPTIONS do
for t in $tools; do
	grep -oE '\{ *"[a-z][a-z0-9-]*", *(required_argument|no_argument|optional_argument|[012]) *,' \
		"$GRPO_TOP/tools/grpo-$t.c" | sed -E 's/^\{ *"([^"]*)".*/--\1/' | sort -u > "$T/src"
	"$GRPO_BIN/grpo-$t" --help | grep -E '^ +-' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u > "$T/help"
	n=$(wc -l < "$T/src" | tr -d ' ')
	[ "$n" -ge 5 ] || n="only $n"
	is "$n:$(comm -23 "$T/src" "$T/help" | tr '\n' ' ')" "$n:" "grpo-$t --help describes every option"
done
exit $_failed
