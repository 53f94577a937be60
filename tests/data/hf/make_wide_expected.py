# transformers' logprobs for the two real-width models of make_wide.sh, past
# 4000 positions, for test_model_wide. Run where torch and transformers are
# (the GPU machine; it uses CUDA when there is one, else the CPU), after
# make_wide.sh has written the models there with the same grpo-init:
#
#   sh tests/data/hf/make_wide.sh DIR
#   python3 tests/data/hf/make_wide_expected.py DIR tests/data/hf/wide-expected.json
#
# Each model is loaded in float64 (its bfloat16 weights exactly) and must
# load with no missing, unexpected or mismatched tensor. Two sequences of
# random token ids (torch.Generator seeded 4200; the ids are written out, so
# the C side need not reproduce torch's generator), each its own forward
# pass: one of 4200 tokens and one of 37. For each sequence, positions i
# (the token ids[i], predicted from position i-1, as model_forward numbers
# them): every i from 4000 on and a few early ones for the long one, every
# i >= 1 for the short one; at each, at temperatures 1 and 0.7, the
# token's logprob and the entropy of the predicting distribution.
#
# The JSON:
#   {"made_by": "torch X, transformers Y, on DEVICE",
#    "temperatures": [1.0, 0.7],
#    "sequences": [{"ids": [...], "positions": [...]}, ...],
#    "models": {"qwen2-wide": {"architecture": ..., "safetensors_sha256": HEX,
#                              "logprobs": [[[...]]], "entropy": [[[...]]]}, ...}}
# logprobs[s][k][j]: sequence s, temperature k, position sequences[s].positions[j];
# safetensors_sha256: of the model.safetensors read, so that a C side whose
# grpo-init wrote other bytes can say so.
import hashlib, json, sys

import torch, torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM

MODELS = ["qwen2-wide", "qwen3-wide"]
TEMPS = [1.0, 0.7]
LONG, SHORT = 4200, 37
EARLY = [1, 2, 3, 17, 100, 1000, 2047, 2048, 3071, 3999]


def main():
    assert len(sys.argv) == 3, "usage: python3 make_wide_expected.py MODELS_DIR OUT.json"
    root, out = sys.argv[1], sys.argv[2]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    g = torch.Generator().manual_seed(4200)
    vocab = {json.load(open(f"{root}/{name}/config.json"))["vocab_size"] for name in MODELS}
    assert vocab == {512}, f"vocabularies {vocab}: make_wide.sh makes 512"
    seqs = [{"ids": torch.randint(0, 512, (LONG,), generator=g).tolist(), "positions": EARLY + list(range(4000, LONG))},
            {"ids": torch.randint(0, 512, (SHORT,), generator=g).tolist(), "positions": list(range(1, SHORT))}]
    res = {"made_by": f"torch {torch.__version__}, transformers {transformers.__version__}, on {dev}"
                      + (f" ({torch.cuda.get_device_name()})" if dev == "cuda" else ""),
           "temperatures": TEMPS, "sequences": seqs, "models": {}}
    for name in MODELS:
        d = f"{root}/{name}"
        cfg = json.load(open(f"{d}/config.json"))
        m, info = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, attn_implementation="sdpa",
                                                       output_loading_info=True)
        bad = {k: v for k, v in info.items() if v}
        assert not bad, f"{d}: {bad}"
        assert next(m.parameters()).dtype == torch.float64, f"{d}: not loaded in float64"
        assert m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr(), f"{d}: not tied"
        m.to(dev).eval()
        lps, ents = [], []
        with torch.no_grad():
            for s in seqs:
                ids = torch.tensor([s["ids"]], device=dev)
                # the head applied here, in float64, whatever dtype the model's forward gives its logits
                hidden = m.model(input_ids=ids).last_hidden_state[0]
                logits = hidden @ m.lm_head.weight.T
                assert logits.dtype == torch.float64 and logits.shape == (len(s["ids"]), 512), f"{d}: logits {logits.shape}"
                pos = torch.tensor(s["positions"], device=dev)
                tok = ids[0, pos]
                lk, ek = [], []
                for t in TEMPS:
                    lp = F.log_softmax(logits[pos - 1] / t, -1)          # row i-1 predicts ids[i]
                    lk.append(lp.gather(1, tok[:, None])[:, 0].tolist())
                    ek.append((-(lp.exp() * lp).sum(-1)).tolist())
                lps.append(lk)
                ents.append(ek)
        sha = hashlib.sha256(open(f"{d}/model.safetensors", "rb").read()).hexdigest()
        res["models"][name] = {"architecture": cfg["architectures"][0], "safetensors_sha256": sha,
                               "logprobs": lps, "entropy": ents}
        flat = [x for s in lps for k in s for x in k]
        assert all(x == x and -100 < x < 0 for x in flat), f"{d}: a logprob out of range"
        print(f"{name}: {len(flat)} logprobs, {min(flat):.4f} to {max(flat):.4f}; sha256 {sha[:16]}")
        del m
    with open(out, "w") as f:
        json.dump(res, f, separators=(",", ":"))
        f.write("\n")
    print(out, "written")


if __name__ == "__main__":
    main()
