#!/bin/sh
# examples/demo.sh where the spool's path is not a plain word: a TMPDIR with
# a space (its default spool), a name with a quote and a non-ASCII letter,
# a relative name that begins with '-'. The commands it prints to look at
# the spool must run as they are copied: they printed the path unquoted, so
# `grpo-spool status /tmp/a b/grpo-demo.X` named two spools.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
demo() { GRPO_DEMO_STEPS=1 GRPO_DEMO_TARGET=2 sh "$GRPO_TOP/examples/demo.sh" "$@"; }
printed() { # printed OUT: rc of each command the demo printed, run by sh
	sed -n 's/^Look at the spool: //p; s/^  *\(grpo-cat\|cat\) /\1 /p' "$1" | while IFS= read -r c; do
		sh -c "$c" > /dev/null 2>&1
		printf '%s ' $?
	done
}
mkdir -p "$T/a b"
TMPDIR="$T/a b" demo > "$T/out" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/a b" | grep -c '^grpo-demo\.')" "0::1" "TMPDIR with a space: the demo runs in a spool there"
is "$(printed "$T/out")" "0 0 0 " "and the three commands it prints run as printed"
demo "$T/a b/it's é" > "$T/out2" 2> "$T/err2"
is "$?:$(cat "$T/err2"):$(printed "$T/out2")" "0::0 0 0 " "a spool named with a quote and a non-ASCII letter: the same"
(cd "$T" && demo -d > "$T/out3" 2> "$T/err3")
is "$?:$(cat "$T/err3")" "0:" "a spool whose relative name begins with '-'"
[ -f "$T/-d/policy/step_1/model.safetensors" ] && [ "$(cd "$T" && printed "$T/out3")" = "0 0 0 " ]
ok $? "trained there, and its commands run"
