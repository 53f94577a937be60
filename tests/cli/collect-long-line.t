#!/bin/sh
# One long line (about 16 MB, up to a million tokens) of each format a
# server writes, through grpo-collect (issue 10): the importers read it
# through data/jsonpick, keeping only the members they need and the token
# ids and logprobs as text, so the peak memory stays under 4 times the line
# (a node per value took 11 to 15 times it), and every token arrives.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 6
cd "$T"
n=1000000
# native: the JSON view's group line
awk -v n=$n 'BEGIN {
	printf "{\"group_id\":1,\"trajectories\":[{\"prompt_tokens\":[1,2,3],\"response_tokens\":["
	for (i = 0; i < n; i++) printf "%s%d", i ? "," : "", 10000 + i % 50000
	printf "],\"logprobs\":["
	for (i = 0; i < n; i++) printf "%s-0.%06d", i ? "," : "", i % 999999 + 1
	printf "],\"sequence_id\":1}]}\n" }' > native.jsonl
# vLLM /v1/completions with logprobs 0 and return_token_ids: text offsets,
# token strings and top logprobs beside the ids, which no importer needs
n2=$((n / 3))
awk -v n=$n2 'BEGIN {
	printf "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\""
	for (i = 0; i < n; i++) printf "t%d", i % 1000
	printf "\",\"logprobs\":{\"text_offset\":["
	for (i = 0; i < n; i++) printf "%s%d", i ? "," : "", 4 * i
	printf "],\"token_logprobs\":["
	for (i = 0; i < n; i++) printf "%s-0.%06d", i ? "," : "", i % 999999 + 1
	printf "],\"tokens\":["
	for (i = 0; i < n; i++) printf "%s\"t%d\"", i ? "," : "", i % 1000
	printf "],\"top_logprobs\":["
	for (i = 0; i < n; i++) printf "%s{\"t%d\":-0.%06d}", i ? "," : "", i % 1000, i % 999999 + 1
	printf "]},\"finish_reason\":\"length\",\"token_ids\":["
	for (i = 0; i < n; i++) printf "%s%d", i ? "," : "", 10000 + i % 50000
	printf "],\"prompt_token_ids\":[1,2,3]}],\"usage\":{\"prompt_tokens\":3}}\n" }' > vllm.jsonl
# SGLang /generate: [logprob, id, null] triples
n3=$((n * 2 / 3))
awk -v n=$n3 'BEGIN {
	printf "{\"text\":\"\",\"meta_info\":{\"id\":\"s1\",\"finish_reason\":{\"type\":\"length\"},\"prompt_tokens\":3,"
	printf "\"output_token_logprobs\":["
	for (i = 0; i < n; i++) printf "%s[-0.%06d,%d,null]", i ? "," : "", i % 999999 + 1, 10000 + i % 50000
	printf "],\"input_token_logprobs\":[[null,1,null],[-0.5,2,null],[-0.5,3,null]]}}\n" }' > sglang.jsonl
# What grpo-collect holds before it reads anything (its libraries: with the
# CUDA path built, cuBLAS's pages count), measured on a line of one token
# and taken off the peak, so the bound is on what the line costs.
printf '%s\n' '{"group_id":1,"trajectories":[{"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-0.5],"sequence_id":1}]}' > tiny.jsonl
base=0
if [ -z "${GRPO_SANITIZED:-}" ] && [ -x /usr/bin/time ]; then
	/usr/bin/time -f %M -o rss grpo-collect --step 0 tiny.jsonl > /dev/null 2>&1
	base=$(tail -n 1 rss)
fi
for f in native:$n vllm:$n2 sglang:$n3; do
	fmt=${f%:*} want=${f#*:}
	size=$(($(wc -c < $fmt.jsonl) / 1024))
	if [ -n "${GRPO_SANITIZED:-}" ] || ! [ -x /usr/bin/time ]; then
		grpo-collect --step 0 $fmt.jsonl > $fmt.zst
		echo "ok $((_n + 1)) # SKIP $fmt: memory peak: sanitized build or no /usr/bin/time"
		_n=$((_n + 1))
	else
		/usr/bin/time -f %M -o rss grpo-collect --step 0 $fmt.jsonl > $fmt.zst
		rss=$(($(tail -n 1 rss) - base))
		[ "$rss" -lt $((4 * size)) ]
		ok $? "$fmt: peak memory $rss KB above the $base KB of a one-token line, for a line of $size KB (bound: 4 times)"
	fi
	is "$(grpo-cat --stats $fmt.zst | sed -n 's/^tokens *[0-9]* (prompt \([0-9]*\), response \([0-9]*\),.*/\1 \2/p')" \
		"3 $want" "$fmt: the 3 prompt tokens and all $want response tokens"
done
exit $_failed
