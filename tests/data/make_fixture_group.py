# Regenerates tests/data/fixture-group-qwen3-t0.8.jsonl from shared/data/fixtures:
# the five fixture sequences as one group whose sampler logprobs are
# Hugging Face's own at temperature 0.8. Committed output; run by hand.
import json, sys
d = json.load(open(sys.argv[1]))
m = d["models"]["qwen3"]["0.8"]
trajs = [{"prompt_tokens": s["prompt_tokens"], "response_tokens": s["response_tokens"], "logprobs": lp,
          "temperature": 0.8, "sequence_id": i, "group_id": 0, "policy_version": 0}
         for i, (s, lp) in enumerate(zip(d["sequences"], m["logprobs"]))]
print(json.dumps({"group_id": 0, "trajectories": trajs}, separators=(",", ":")))
