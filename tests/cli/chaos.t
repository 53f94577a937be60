#!/bin/sh
# The loop of examples/demo.sh (collect, score, pack, step through one
# spool), each stage of its second round killed at one file-system call
# after another (GRPO_FSYS_CRASH_AT), then grpo-spool recover and the round
# run again, as grpo(7) says: the spool must end as a run never killed left
# it, byte for byte (the same rollouts, scored groups, micro-batches and
# policy steps, nothing waiting or claimed, no temporaries).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
. "$GRPO_TOP/tests/cli/loop.sh"
init_model "$T/ref/init" 2> "$T/err"
round "$T/ref" 1 && cp -R "$T/ref" "$T/one" && round "$T/ref" 2 && grpo-spool recover --tmp-age 0 "$T/ref"
is "$?:$(cat "$T/err")" "0:" "two rounds, never killed"
digest "$T/ref" > "$T/ref.d"
for st in collect score pack step; do
	# how many calls the stage makes in round 2; a crash point every so many of them, from
	# the first (nothing done yet) to the last (all published, the input not yet retired)
	rm -rf "$T/w" && cp -R "$T/one" "$T/w"
	round "$T/w" 2 $st trace
	calls=$(grep -c "^fsys [0-9]" "$T/err")
	: > "$T/err"
	by=$((calls / 12 + 1))
	bad= n=1 tried=0
	while [ $n -le "$calls" ]; do
		rm -rf "$T/w" && cp -R "$T/one" "$T/w"
		round "$T/w" 2 $st $n
		rc=$?
		grpo-spool recover --tmp-age 0 "$T/w" && round "$T/w" 2 && grpo-spool recover --tmp-age 0 "$T/w"
		rc2=$?
		if [ $rc -ne 86 ] || [ $rc2 -ne 0 ] || ! digest "$T/w" | cmp -s - "$T/ref.d"; then
			bad="$bad $n"
		fi
		[ $n -lt "$calls" ] && [ $((n + by)) -gt "$calls" ] && n=$((calls - by))
		n=$((n + by)) tried=$((tried + 1))
	done
	is "$calls:${bad:- none}" "$calls: none" \
		"grpo-$st killed at $tried of its $calls calls, recovered, run again: the spool as never killed"
done
