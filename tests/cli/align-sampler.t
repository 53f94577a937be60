#!/bin/sh
# grpo-collect --model's logprobs against the trainer's (grpo-cat --model,
# grpo-score --ref) on a tiny model: the same model at the same temperature
# must agree to float rounding, whatever top-k, top-p and temperature the
# responses were sampled with; and only tokens the trainer trains are compared.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 5
grpo-init --preset tiny --seed 3 --eos 7 -o "$T/m" > /dev/null 2>&1 || exit 1
printf '%s\n' '{"prompt_tokens":[1,2,3]}' '{"prompt_tokens":[4,5]}' '{"prompt_tokens":[7]}' > "$T/p.jsonl"
max_diff() { sed 's/.*"model_logprob_abs_diff_max":\([^,}]*\).*/\1/' "$1"; }

for opts in "-t 1" "-t 0.5 --top-k 5" "-t 2 --top-p 0.3" "-t 0" "-t 0.7 --top-p 0.9 --top-k 3"; do
	grpo-collect --model "$T/m" --prompts "$T/p.jsonl" -n 3 --max-tokens 8 --seed 1 $opts
done > "$T/all.zst"
grpo-cat --model "$T/m" --stats --json "$T/all.zst" > "$T/s1"
m1=$(max_diff "$T/s1")
awk -v m="$m1" 'BEGIN { exit !(m < 1e-5) }'
is "$?:$(sed 's/.*"aligned_tokens":\([0-9]*\).*/\1/' "$T/s1")" "0:$(grpo-cat --stats --json "$T/all.zst" |
	sed 's/.*"response_tokens":\([0-9]*\).*/\1/')" \
	"sampler and model agree at every temperature, top-k and top-p, over every response token (max |diff| $m1)"

grpo-score -r length -m 8 --ref "$T/m" "$T/all.zst" 2> /dev/null | grpo-cat > "$T/scored.json"
awk 'BEGIN { RS = "\"logprobs\":\\["; w = 0 }
	NR > 1 { split($0, a, "]"); n = split(a[1], lp, ",")
		sub(/.*"ref_logprobs":\[/, "", $0); split($0, b, "]"); split(b[1], rf, ",")
		for (i = 1; i <= n; i++) { d = lp[i] - rf[i]; if (d < 0) d = -d; if (d > w) w = d } }
	END { exit !(w < 1e-5) }' "$T/scored.json"
is "$?" 0 "grpo-score's reference logprobs, from the same model, equal the sampler's"

# A trajectory without prompt tokens: nothing predicts its first response
# token, which the packer never trains (loss_mask 0), so the check must not
# compare it. Its other tokens get the sampler's logprobs as the model gives
# them after the prompt [1], and must still agree.
printf '%s\n' '{"trajectories":[{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-1]}]}' | grpo-cat --from-json |
	grpo-cat --model "$T/m" > "$T/p1.json"
lp=$(sed 's/.*"model_logprobs":\[\([^]]*\)\].*/\1/' "$T/p1.json")
printf '{"trajectories":[{"prompt_tokens":[],"response_tokens":[1,2,3],"logprobs":[-0.5,%s]}]}\n' "$lp" | grpo-cat --from-json |
	grpo-cat --model "$T/m" --stats --json > "$T/s3"
m3=$(max_diff "$T/s3")
awk -v m="$m3" 'BEGIN { exit !(m < 1e-5) }'
is "$?:$(sed 's/.*"aligned_tokens":\([0-9]*\).*/\1/' "$T/s3")" "0:2" \
	"an empty prompt's first response token, never trained, is left out of the comparison (max |diff| $m3)"

# the check names what it cannot run: a token id past the model's vocabulary, by record,
# trajectory and place; and an empty trajectory beside another is left out, not a failure
V=$(sed -n 's/.*"vocab_size": *\([0-9]*\).*/\1/p' "$T/m/config.json")
printf '{"trajectories":[{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-1]},{"prompt_tokens":[1],"response_tokens":[2,%d],"logprobs":[-1,-1]}]}\n' "$V" |
	grpo-cat --from-json | grpo-cat --model "$T/m" > /dev/null 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-cat: <stdin>: record 1: trajectory 1: response_tokens[1] is $V, outside the model's vocabulary of $V" \
	"an id past the vocabulary: named"
printf '%s\n' '{"trajectories":[{"prompt_tokens":[],"response_tokens":[]},{"prompt_tokens":[1],"response_tokens":[2,3],"logprobs":[-1,-1]}]}' |
	grpo-cat --from-json | grpo-cat --model "$T/m" > "$T/e.json"
is "$?:$(grep -o '"model_logprobs":\[[^]]*\]' "$T/e.json" | awk -F, '{ print /\[\]/ ? 0 : NF }' | tr '\n' ' ')" \
	'0:0 2 ' "a trajectory of no token beside another: no logprob, and the other's 2"
