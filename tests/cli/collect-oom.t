#!/bin/sh
# Memory running out while grpo-collect reads a number of many digits in a
# logprobs array (strtod gets a copy of it) fails the line with a message
# naming it, as any bad line does; it once dereferenced NULL and died of
# SIGSEGV. tests/cli/fail-malloc.c fails the copy's allocation.
. "$GRPO_TOP/tests/cli/lib.sh"
fail_malloc_lib
plan 4
# in $T, whose path LD_PRELOAD could not take if it held a space: it splits at spaces
cd "$T"
# -1.000...0 with 4320 zeros: 4323 characters, copied into 4324 bytes
num="-1.$(printf '%04320d' 0)"
line() { # line LOGPROBS: a vLLM completion of token 7 after prompt 1
	printf '{"request":{"prompt":[1]},"response":{"choices":[{"token_ids":[7],"prompt_token_ids":[1],"logprobs":{"token_logprobs":%s}}]}}\n' "$1"
}
line "[$num]" > flat.jsonl
grpo-collect flat.jsonl > /dev/null 2> err
ok $? "the number of $((${#num})) characters is read, memory permitting: $(cat err)"

# the copy made when the array is cut out succeeds, the one made to read it fails
LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_SIZE=4324 FAIL_MALLOC_AFTER=1 grpo-collect flat.jsonl > /dev/null 2> err
is "$?:$(tail -n 1 err)" "1:grpo-collect: flat.jsonl:1: choices[0]: logprobs.token_logprobs[0]: expected a number" \
	"out of memory for a number in a flat array: the line fails, named"

# SGLang's triples are rows of a span: [logprob, token id, text]
printf '{"text":"x","meta_info":{"id":"a","finish_reason":{"type":"stop"},"prompt_tokens":1,"completion_tokens":1,"output_token_logprobs":[[%s,7,null]],"input_token_logprobs":[[null,1,null]]},"request":{"input_ids":[1]}}\n' "$num" > rows.jsonl
grpo-collect rows.jsonl > /dev/null 2> err
ok $? "the same number in a row of SGLang's triples is read: $(cat err)"
LD_PRELOAD=./lib/fail-malloc.so FAIL_MALLOC_SIZE=4324 FAIL_MALLOC_AFTER=1 grpo-collect rows.jsonl > /dev/null 2> err
st=$?
[ $st -eq 1 ] && grep -q '^grpo-collect: rows.jsonl:1: ' err
ok $? "out of memory for it in a row: the line fails, named (exit $st: $(tail -n 1 err))"
