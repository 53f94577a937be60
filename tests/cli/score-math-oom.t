#!/bin/sh
# grpo-score's math and repetition rewards when memory runs out: each run
# below fails its N-th allocation (tests/cli/fail-malloc.c), for every N a
# normal run makes. Each run either fails, exit 1, its last word naming
# memory, or writes exactly what the run without the fault wrote: a reward
# that could not be computed is never scored as 0 (wrong) in its place.
. "$GRPO_TOP/tests/cli/lib.sh"
fail_malloc_lib
plan 3
cd "$T"
TOK="$GRPO_TOP/tests/data/tokadded/tokenizer.json"   # byte-level: any text is its bytes

# responses that take each allocating path: sets and lists (list_equal),
# \pm (expand), words for repetition
i=0
while IFS='|' read -r resp ans; do
	ids=$(jq -n --arg r "$resp" '$r' | grpo-cat -t "$TOK" --encode) || break
	jq -nc --arg a "$ans" --argjson ids "$ids" --argjson i $i \
		'{group_id: $i, trajectories: [{prompt_tokens: [1, 2], response_tokens: $ids,
		  logprobs: [$ids[] | -1], answer: $a, sequence_id: $i, group_id: $i,
		  policy_version: 0, finish_reason: "stop"}]}'
	i=$((i + 1))
done > in.jsonl <<'CASES'
so \boxed{\{1, 2\} \cup [3, 4)} and so on and so on|[3,4) \cup \{2, 1\}
so \boxed{1 \pm \sqrt{2}} so so so|1-\sqrt2, 1+\sqrt2
\boxed{\{\{1\}, \{2, 3\}\}} a b a b|\{\{3, 2\}, \{1\}\}
\boxed{0.5}|\frac{1}{2}
CASES
grpo-cat --from-json -o in.zst in.jsonl
grpo-score -r math -r repetition -t "$TOK" in.zst > want.zst 2> err
is "$?:$(grpo-cat want.zst | jq -c '.trajectories[0].rewards // .rewards' | tr '\n' ' ')" \
	"0:[1,-0.1] [1,0] [1,0] [1,0] " "without a fault: every answer right; \"and so on\" twice"

env LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_COUNT="$T/count" grpo-score -r math -r repetition -t "$TOK" in.zst > /dev/null 2>&1
calls=$(cat count)
bad= failed=0
n=1
while [ "$n" -le "$calls" ]; do
	timeout 60 env LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_NTH=$n \
		grpo-score -r math -r repetition -t "$TOK" in.zst > got.zst 2> err
	rc=$?
	case $rc in
	0) cmp -s got.zst want.zst || bad="$bad $n:output" ;;
	1) failed=$((failed + 1)); case $(tail -n 1 err) in grpo-score:*memory*) ;; *) bad="$bad $n:message" ;; esac ;;
	*) bad="$bad $n:exit$rc" ;;
	esac
	n=$((n + 1))
done
ok $([ "$calls" -gt 50 ]; echo $?) "a normal run allocates ($calls times)"
is "${bad:-none}" none "each of the $calls faults: exit 1 naming memory ($failed), or the same output"
