# Writes step-input.jsonl (to standard output): the scored groups that
# step-parity.t feeds grpo-cat --from-json | grpo-pack | grpo-step, and that
# make_step_expected.py reads. Plain Python, deterministic (its own seeded
# random.Random): run it anywhere and the bytes are the same.
#
#   python3 make_step_input.py > step-input.jsonl
#
# Two groups of four sequences for the tiny models of this directory (vocab
# 320): one prompt per group, responses of 1 to 20 tokens, temperatures not
# all 1, advantages of both signs and none 0, and one sequence whose
# response_mask leaves two tokens out of the loss. The sampler's logprobs
# ("logprobs", the ratio's ℓ_old) and the reference's ("ref_logprobs") are
# log(1/320) ± 0.3, close to what the tiny random models give (their
# distributions are nearly flat, ℓ ≈ −5.77), so the ratios straddle
# 1 ± 0.2: some tokens are clipped, some not. Every number has four
# decimals at most.
import json, math, random

V = 320
rng = random.Random(20261126)
groups = [
    {"prompt": 3, "responses": [1, 5, 12, 20], "temps": [1.0, 0.7, 1.3, 1.0], "mask": None},
    {"prompt": 7, "responses": [2, 9, 4, 15], "temps": [0.9, 1.0, 1.0, 0.6], "mask": (1, [3, 4])},
]
flat = -math.log(V)
for g, spec in enumerate(groups):
    prompt = [rng.randrange(V) for _ in range(spec["prompt"])]
    trajs = []
    for i, (n, temp) in enumerate(zip(spec["responses"], spec["temps"])):
        adv = 0.0
        while abs(adv) < 0.05:
            adv = round(rng.uniform(-1.5, 1.5), 4)
        t = {"prompt_tokens": prompt,
             "response_tokens": [rng.randrange(V) for _ in range(n)],
             "logprobs": [round(flat + rng.uniform(-0.3, 0.3), 4) for _ in range(n)],
             "ref_logprobs": [round(flat + rng.uniform(-0.3, 0.3), 4) for _ in range(n)],
             "sequence_id": 10 * g + i, "group_id": g, "policy_version": 0,
             "temperature": temp, "advantages": adv, "finish_reason": "stop"}
        if spec["mask"] and spec["mask"][0] == i:
            t["response_mask"] = [0 if j in spec["mask"][1] else 1 for j in range(n)]
        trajs.append(t)
    print(json.dumps({"group_id": g, "trajectories": trajs}, separators=(",", ":")))
