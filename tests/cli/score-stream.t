#!/bin/sh
# grpo-score on standard input: streamed group by group, so memory does not
# grow with the input (its peak is measured for two inputs four times
# apart), a producer on a pipe is consumed and answered before it ends, and
# the output is the same as for the file, published under the same name.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 11
cd "$T"

# G groups of 4 sequences of L response tokens each, as JSON lines
gen() {
	awk -v G="$1" -v L="$2" 'BEGIN { for (g = 0; g < G; g++) {
		printf "{\"group_id\":%d,\"trajectories\":[", g
		for (j = 0; j < 4; j++) {
			r = ""; p = ""
			for (k = 0; k < L - g % 7; k++) { r = r (k ? "," : "") (k % 500 + 5); p = p (k ? "," : "") "-0.5" }
			printf "%s{\"prompt_tokens\":[1,2,3],\"response_tokens\":[%s],\"logprobs\":[%s],", j ? "," : "", r, p
			printf "\"sequence_id\":%d,\"group_id\":%d,\"policy_version\":1,\"finish_reason\":\"stop\"}", g * 4 + j, g
		}
		printf "]}\n" } }'
}
gen 300 1000 | grpo-cat --from-json -o small.zst && gen 1200 1000 | grpo-cat --from-json -o big.zst
ok $? "inputs of 300 and 1200 groups (1.2 and 4.8 million response tokens)"

grpo-score -r length -m 2000 < big.zst > out.zst && grpo-score -r length -m 2000 big.zst > file.zst
ok $? "scored from standard input and from the file"
is "$(grpo-cat out.zst | cksum)" "$(grpo-cat file.zst | cksum)" "the same groups, scored the same"

# Read whole, the large input takes about 40 MB more than the small one;
# streamed, the peak is one group and the compressor's window either way.
# AddressSanitizer holds freed memory back, so its peak says nothing here.
if [ -n "${GRPO_SANITIZED:-}" ] || ! [ -x /usr/bin/time ]; then
	echo "ok 4 # SKIP memory peak: sanitized build or no /usr/bin/time"
	_n=4
else
	/usr/bin/time -f %M -o small.rss grpo-score -r length -m 2000 < small.zst > /dev/null &&
		/usr/bin/time -f %M -o big.rss grpo-score -r length -m 2000 < big.zst > /dev/null
	s=$(tail -1 small.rss) b=$(tail -1 big.rss)
	[ "$b" -lt $((s + 8192)) ]
	ok $? "peak memory: $s KB for 300 groups, $b KB for 1200 (bound: 8 MB more)"
fi

# A producer that has written part of its stream and waits: the groups it
# has written come out before it goes on.
mkfifo pipe
( grpo-score -r length -m 2000 < pipe > part.zst; echo $? > rc ) &
exec 3> pipe
half=$(($(wc -c < big.zst) / 2))
head -c $half big.zst >&3
n=0
while [ ! -s part.zst ] && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
[ -s part.zst ]
ok $? "scored groups come out while the producer waits at byte $half ($(wc -c < part.zst) bytes after $n ticks)"
tail -c +$((half + 1)) big.zst >&3
exec 3>&-
wait
is "$(cat rc),$(grpo-cat part.zst | wc -l | tr -d ' ')" "0,1200" "then the rest, to the end"

grpo-score -r length -m 2000 -o q < small.zst && grpo-score -r length -m 2000 -a batch -o qb < small.zst
ok $? "published into a queue, streamed and (--advantage batch) read whole"
is "$(ls q/step_1/rank_0)" "$(ls qb/step_1/rank_0)" "under the same stdin-HASH name ($(ls q/step_1/rank_0))"
grpo-score -v -r length -m 2000 -o q < small.zst 2> err
grep -q "q/step_1/rank_0/stdin-.*: already published (a re-run); <stdin> not published again" err
ok $? "a re-run's copy is dropped"

# Another input that only shares the ids and response lengths (a second
# collector numbering its groups from 0 as well) is not a re-run.
gen 300 1000 | sed 's/"response_tokens":\[5,/"response_tokens":[7,/g' | grpo-cat --from-json -o other.zst
grpo-score -v -r length -m 2000 -o q < other.zst 2> err2
is "$(ls q/step_1/rank_0 | wc -l | tr -d ' ')" 2 "an input with the same ids and lengths and other tokens is published apart"
! grep -q "already published" err2
ok $? "and not dropped as a re-run"
exit $_failed
