#!/bin/sh
# grpo(7)'s EXAMPLES, run as the page writes them, one after another in a
# directory holding the source tree's examples/, as a reader would type them.
# The first (the demo's loop, with K for the step) is examples/demo.sh's,
# which demo.t runs. From "The stages by hand" to "The same through pipes"
# the tools warn where the page leads a reader to expect it (a group of one,
# sequences without reference logprobs, grpo-step's logprobs far from the
# sampler's) and grpo-step -v reports its step; from "Make a tiny model" on,
# every command is silent on standard error.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
mkdir -p "$T/run" && ln -s "$GRPO_TOP/examples" "$T/run/examples"
# blocks FROM TO: the literal blocks of EXAMPLES from the paragraph whose
# first line starts with FROM up to the one whose first line starts with TO
blocks() {
	awk -v from="$1" -v to="$2" '
		/^\.Sh EXAMPLES/ { ex = 1; next } /^\.Sh / { ex = 0 }
		!ex { next }
		index($0, from) == 1 { in_range = 1 } index($0, to) == 1 { in_range = 0 }
		/^\.Bd -literal/ { lit = 1; next } /^\.Ed/ { lit = 0; next }
		lit && in_range' "$GRPO_TOP/man/grpo.7" | sed 's/\\e/\\/g'
}
blocks "The stages by hand" "Make a tiny model" > "$T/run/by-hand.sh"
blocks "Make a tiny model" "No such paragraph" > "$T/run/tiny.sh"
[ -s "$T/run/by-hand.sh" ] && [ -s "$T/run/tiny.sh" ] || { echo "Bail out! no examples found in grpo.7"; exit 1; }

(cd "$T/run" && sh -e ./by-hand.sh > out 2> err)
is "$?" 0 "grpo(7)'s examples by hand, training and pipes run as written: $(tr '\n' ';' < "$T/run/by-hand.sh")"
# what is left on standard error once the warnings and grpo-step -v's lines are taken out
grep -v -e ': warning: ' -e '^grpo-step: published model as spool/policy/step_0$' \
	-e '^grpo-step: step 1: loss .* 3 sequences, 25 tokens, ' "$T/run/err" > "$T/run/other"
is "$(cat "$T/run/other")" "" "they print nothing on standard error but warnings and grpo-step -v's report"
grep -q '^grpo-step: step 1: warning: trainer and sampler logprobs differ' "$T/run/err"
is "$?" 0 "grpo-step warns that the random model's logprobs are far from the sampler's, as the page says"
[ -f "$T/run/spool/batches/step_1/DONE" ] && [ -f "$T/run/spool/policy/step_0/config.json" ] &&
	[ -f "$T/run/spool/policy/step_1/model.safetensors" ]
is "$?" 0 "the spool holds step 1's micro-batches, the initial model as policy/step_0 and the trained one as policy/step_1"

(cd "$T/run" && sh -e ./tiny.sh > out 2> err && ls spool/scored/step_0/rank_0/*.zst > /dev/null)
is "$?:$(cat "$T/run/err")" "0:" "grpo(7)'s last examples run as written, silently, and score into spool/scored/step_0: $(tr '\n' ';' < "$T/run/tiny.sh")"
