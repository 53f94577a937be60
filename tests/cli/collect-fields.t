#!/bin/sh
# grpo-collect validates every field of a line at its line (issue 10 item 8):
# NaN or binary32-overflowing advantages, rewards and ref_logprobs fail with
# FILE:LINE, and --on-error skip skips exactly those lines; so do strings
# that would be changed silently (issue 10 item 10: a \u0000 cut the string,
# merging group ids; bytes that are not UTF-8 were stored raw).
. "$GRPO_TOP/tests/cli/lib.sh"
plan 7

tr='"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1],"reward_names":["r"]'
printf '%s\n' "{$tr,\"rewards\":[1],\"advantages\":0.5,\"group_id\":1}" \
	"{$tr,\"rewards\":[1],\"advantages\":NaN,\"group_id\":2}" \
	"{$tr,\"rewards\":[1e39],\"advantages\":1,\"group_id\":3}" \
	"{$tr,\"rewards\":[1],\"advantages\":1,\"ref_logprobs\":[NaN],\"group_id\":4}" \
	"{$tr,\"rewards\":[1],\"advantages\":1e40,\"group_id\":5}" \
	"{$tr,\"rewards\":[1],\"advantages\":1,\"ref_logprobs\":[-1e39],\"group_id\":6}" \
	"{$tr,\"rewards\":[1],\"advantages\":-0.5,\"group_id\":7}" > "$T/in.jsonl"
grpo-collect -e skip --step 0 "$T/in.jsonl" > "$T/out.zst" 2> "$T/err"
is "$?" 0 "-e skip: bad lines skipped, the rest imported"
is "$(grpo-cat "$T/out.zst" | sed 's/^{"group_id":\([0-9]*\),.*/\1/' | tr '\n' ' ')" "1 7 " "exactly the good lines are kept"
is "$(cat "$T/err")" "grpo-collect: $T/in.jsonl:2: advantages is NaN or null, not a finite number
grpo-collect: $T/in.jsonl:3: trajectory 0: rewards[0] is Infinity, not a finite number
grpo-collect: $T/in.jsonl:4: trajectory 0: ref_logprobs[0] is NaN, not a finite number
grpo-collect: $T/in.jsonl:5: trajectory 0: advantages is Infinity, not a finite number
grpo-collect: $T/in.jsonl:6: trajectory 0: ref_logprobs[0] is -Infinity, not a finite number
grpo-collect: $T/in.jsonl: skipped 5 of 7 lines
grpo-collect: warning: 2 groups of one member (its advantage is always 0)" "each bad line is named by FILE:LINE and its field"
grpo-collect -o "$T/sp/rollouts" --step 0 "$T/in.jsonl" 2> "$T/err"
is "$?:$(cat "$T/err"):$(ls "$T/sp/rollouts/step_0/rank_0" 2>/dev/null)" \
	"1:grpo-collect: $T/in.jsonl:2: advantages is NaN or null, not a finite number:" \
	"-e fail: the first bad line fails the input at its line, nothing published"

t0='"prompt_tokens":[1],"response_tokens":[2],"logprobs":[-1]'
printf '%s\n' "{\"group_id\":\"a\\u0000b\",\"trajectories\":[{$t0}]}" \
	"{\"group_id\":\"a\\u0000c\",\"trajectories\":[{$t0}]}" \
	"{\"group_id\":\"d\",\"trajectories\":[{$t0,\"answer\":\"x$(printf '\377')y\"}]}" \
	"{\"group_id\":\"a\\\\u0000b \\u00e9\",\"trajectories\":[{$t0}]}" \
	"{\"group_id\":\"e\",\"trajectories\":[{$t0,\"answer\":\"\\ud800\"}]}" > "$T/text.jsonl"
grpo-collect -e skip --step 0 "$T/text.jsonl" > "$T/out.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:grpo-collect: $T/text.jsonl:1: a NUL character (\\u0000) in a string is not supported (it would be cut there)
grpo-collect: $T/text.jsonl:2: a NUL character (\\u0000) in a string is not supported (it would be cut there)
grpo-collect: $T/text.jsonl:3: byte 103 is not UTF-8 (JSON text is UTF-8; it would be stored raw)
grpo-collect: $T/text.jsonl:5: a lone surrogate \\ud800 at byte 102 (half of a UTF-16 pair, not a character)
grpo-collect: $T/text.jsonl: skipped 4 of 5 lines
grpo-collect: warning: 1 group of one member (its advantage is always 0)" "a \\u0000 in a string, bytes that are not UTF-8 and a lone surrogate are refused at their line"
pat=$(printf '"group_id":"a\\\\u0000b \303\251"')
grpo-cat "$T/out.zst" | grep -qF "$pat"
is "$?" 0 "an escaped backslash before u0000, and UTF-8 text, kept exactly"
printf '{"index":0,"answer":"5%sy"}\n' "$(printf '\377')" > "$T/answers.jsonl"
echo "{\"group_id\":1,\"trajectories\":[{$t0}]}" > "$T/one.jsonl"
grpo-collect --step 0 -a "$T/answers.jsonl" "$T/one.jsonl" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/answers.jsonl:1: byte 23 is not UTF-8 (JSON text is UTF-8; it would be stored raw)" \
	"and so are they in an answers file (-a)"

