#!/bin/sh
# grpo-pack --overlong truncate: a sequence cut to the capacity lost its end
# (its EOS), so it leaves the packer with finish_reason "length", whatever it
# was, and grpo-step --mask-truncated masks it like any response cut by the
# sampler.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 4

# 6 tokens (10) and 4 tokens (11), both finished by "stop"
cat > "$T/cut.jsonl" << 'EOF2'
{"group_id":1,"trajectories":[{"prompt_tokens":[1,2,3],"response_tokens":[4,5,6],"logprobs":[-1,-1,-1],"sequence_id":10,"group_id":1,"policy_version":0,"advantages":1,"finish_reason":"stop"},{"prompt_tokens":[1,2],"response_tokens":[7,8],"logprobs":[-1,-1],"sequence_id":11,"group_id":1,"policy_version":0,"advantages":-1,"finish_reason":"stop"}]}
EOF2
grpo-cat --from-json -o "$T/cut.zst" "$T/cut.jsonl" || exit 1
grpo-pack -T 5 -W 1 --overlong truncate -o "$T/b" "$T/cut.zst" 2> /dev/null || exit 1
cat "$T/b/step_1/rank_0"/mb_*.zst | grpo-cat --json |
	sed -n 's/.*"sequence_ids":\[\([0-9]*\)\].*"finish_reasons":\["\([a-z]*\)"\].*/\1 \2/p' | tr '\n' ' ' > "$T/fr"
is "$(cat "$T/fr")" "10 length 11 stop " "the cut sequence says length, the whole one keeps stop"

grpo-init --preset tiny --seed 7 -o "$T/model" || exit 1
field() { sed -n "s/.*\"$2\":\([-0-9.e+]*\).*/\1/p" "$1"; }
grpo-step --model "$T/model" --batches "$T/b" -o "$T/p" --mask-truncated --metrics "$T/m" 2> /dev/null
ok $? "grpo-step --mask-truncated"
is "$(field "$T/m" masked_truncated) $(field "$T/m" masked_truncated_tokens)" "1 2" \
	"masks the cut sequence and its 2 kept response tokens"
is "$(field "$T/m" sequences) $(field "$T/m" loss_tokens)" "1 2" "and trains the whole one alone"
