#!/bin/sh
# Rollouts without sampler logprobs (Atropos without inference_logprobs):
# refused unless --allow-missing-logprobs, then marked as having none through
# the JSON view, the packer's micro-batches and the alignment check, never
# filled with invented values; grpo-step takes their ratio against the
# policy's own logprobs at the step's start, and says how many it trained.
. "$GRPO_TOP/tests/cli/lib.sh"
plan 10

printf '%s\n' '{"tokens":[[5,6,7,8],[5,6,9]],"masks":[[-100,-100,7,8],[-100,-100,9]],"scores":[1,0]}' > "$T/a.jsonl"
grpo-collect "$T/a.jsonl" > "$T/a.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "1:grpo-collect: $T/a.jsonl:1: trajectory 0: no sampler logprobs (Atropos: no inference_logprobs); --allow-missing-logprobs takes rollouts without them" \
	"refused by default, saying what to do"
grpo-collect --allow-missing-logprobs "$T/a.jsonl" > "$T/a.zst" 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "taken with --allow-missing-logprobs"
grpo-cat "$T/a.zst" > "$T/a.json"
is "$(grep -o '"logprobs":null' "$T/a.json" | wc -l | tr -d ' ')" 2 "the JSON view says none: \"logprobs\":null, not zeros"
grpo-cat --from-json "$T/a.json" | grpo-cat | cmp -s - "$T/a.json"
is "$?" 0 "and reads back the same through a spool file"
grpo-pack --seq-len 16 --ranks 1 --step 1 "$T/a.zst" | grpo-cat > "$T/mb.json"
grep -q '"logprobs_missing":\[1,1\]' "$T/mb.json"
is "$?" 0 "micro-batches mark each such sequence in logprobs_missing"

grpo-init --preset tiny --seed 7 -o "$T/tiny" && grpo-pack -T 16 -W 1 -o "$T/b" "$T/a.zst" || exit 1
grpo-step --model "$T/tiny" --batches "$T/b" -o "$T/p" --metrics "$T/m.jsonl" --debug-table "$T/t.tsv" \
	--debug-tokens 2> "$T/err"
is "$?:$(cat "$T/err")" "0:" "grpo-step trains on them, without a warning about sampler and trainer logprobs"
is "$(grep -o '"ratio_mean":[^,]*\|"sequences_without_sampler_logprobs":[0-9]*' "$T/m.jsonl" | tr '\n' ' ')" \
	'"ratio_mean":1 "sequences_without_sampler_logprobs":2 ' \
	"their ratio is against the policy at the step's start (1), and the metrics count them"
is "$(awk -F '\t' '$1 == "tok" && $18 == 1 { print $13 "|" $16 }' "$T/t.tsv" | sort -u)" "|1" \
	"the debug table leaves their sampler_lp empty, ratio 1"

model="$GRPO_SHARED/data/fixtures/models/qwen3"
if [ -f "$model/model.safetensors" ]; then
	grpo-cat --model "$model" "$T/a.zst" > "$T/al.json" 2> "$T/err"
	is "$?:$(grep -o '"model_logprob_abs_diff_mean":null,"model_logprob_abs_diff_max":null,"sampler_logprobs":"missing"' "$T/al.json" | wc -l | tr -d ' ')" \
		"0:2" "the alignment check says the sampler's logprobs are missing instead of comparing"
	grpo-cat --model "$model" --stats --json "$T/a.zst" > "$T/st.json"
	is "$?:$(grep -c '"records":1' "$T/st.json"):$(grep -c 'abs_diff' "$T/st.json")" "0:1:0" \
		"and --stats counts the group but compares no token"
else
	skip "no fixture model at $model"
	skip "no fixture model at $model"
fi
