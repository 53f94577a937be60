#!/bin/sh
# The last EXAMPLES of grpo(7), from "Make a tiny model" on, run as the page
# writes them, in a directory holding the source tree's examples/: every
# command must succeed, silently on standard error.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 1
mkdir -p "$T/run" && ln -s "$GRPO_TOP/examples" "$T/run/examples"
# the literal blocks after the first line that starts the tiny model's example
sed -n '/^Make a tiny model/,/^\.Sh SEE ALSO/p' "$GRPO_TOP/man/grpo.7" |
	awk '/^\.Bd -literal/ { on = 1; next } /^\.Ed/ { on = 0 } on' | sed 's/\\e/\\/g' > "$T/run/examples.sh"
[ -s "$T/run/examples.sh" ] || { echo "Bail out! no examples found in grpo.7"; exit 1; }
(cd "$T/run" && sh -e ./examples.sh > out 2> err)
is "$?:$(cat "$T/run/err")" "0:" "grpo(7)'s last examples run as written: $(tr '\n' ';' < "$T/run/examples.sh")"
