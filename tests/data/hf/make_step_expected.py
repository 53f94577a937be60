# One grpo-step in PyTorch + transformers, for step-parity.t: the loss and
# the gradient norm that grpo-step's metrics line reports ("loss" and
# "grad_norm") for one step over the groups of INPUT, by the formulas of
# grpo-step(1) and lib/train/loss.h, computed here in float64. Run where
# torch and transformers are (the GPU machine; the CPU is enough, the models
# are tiny):
#
#   python3 tests/data/hf/make_step_expected.py tests/data/hf/step-input.jsonl \
#       tests/data/hf/qwen2 tests/data/hf/qwen3
#
# Writes MODEL/step-expected.json for each MODEL directory:
#   {"made_by": "torch X, transformers Y", "input": "step-input.jsonl",
#    "input_sha256": HEX, "architecture": ..., "tied": BOOL,
#    "sequences": B, "loss_tokens": N,
#    "configs": [        one object a line, so that sh and sed can read it
#      {"args": "--loss-agg grpo --beta 0 --kl k3", "loss": L, "grad_norm": G,
#       "policy_loss": P, "kl_loss": K, "ratio_min": R0, "ratio_max": R1,
#       "clipped": C},
#      ... dapo, β 0; grpo, β 0.1; dapo, β 0.1 ]}
# args: grpo-step's options for that configuration; loss: Σ_t w_t·L_t over
# every loss token of the step; grad_norm: ‖∂loss/∂θ‖₂ over every parameter
# (model.parameters(), so a tied embedding counts once), before clipping;
# policy_loss and kl_loss: the loss's parts Σ w·p and Σ w·k (the KL is
# measured at β = 0 too); clipped: the tokens whose PPO term is flat.
#
# What grpo-step does, and this script with it, per loss token t of
# sequence i (the response tokens whose response_mask is 1, or all of them):
#   ℓ      log_softmax(logits / temperature_i) of the token, from the
#          position before it (the logits of prompt + response in one pass)
#   r      exp(clamp(ℓ − ℓ_old, ±20)), ℓ_old = the input's "logprobs"
#   p      −min(r·A, clip(r, 1 − 0.2, 1 + 0.2)·A), A = "advantages"
#   k      k3: exp(−Δ) + Δ − 1, Δ = ℓ − ℓ_ref ("ref_logprobs")
#   L_t    p + β·k
#   w_t    grpo: 1 / (B·n_i), n_i loss tokens of sequence i, B sequences
#          dapo: 1 / N, N loss tokens of the step
# Every number of the input is read as grpo-step reads it, as a float32.
import hashlib, json, os, sys

import torch, torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM

CONFIGS = [("grpo", 0.0), ("dapo", 0.0), ("grpo", 0.1), ("dapo", 0.1)]


def f32(x):
    """x as grpo-step holds it: a float32, widened to float64."""
    return torch.tensor(x, dtype=torch.float32).to(torch.float64)


def read_input(path):
    seqs = []
    for line in open(path):
        if not line.strip():
            continue
        g = json.loads(line)
        for t in g["trajectories"]:
            p, r = t["prompt_tokens"], t["response_tokens"]
            n = len(r)
            assert len(p) > 0, f"{path}: sequence {t['sequence_id']}: an empty prompt (its first token has no loss)"
            assert n > 0, f"{path}: sequence {t['sequence_id']}: an empty response"
            for k in ("logprobs", "ref_logprobs"):
                assert len(t[k]) == n, f"{path}: sequence {t['sequence_id']}: {len(t[k])} {k} for {n} tokens"
            mask = t.get("response_mask") or [1] * n
            assert len(mask) == n and set(mask) <= {0, 1}, f"{path}: sequence {t['sequence_id']}: response_mask"
            seqs.append({"ids": p + r, "np": len(p), "resp": r,
                         "temp": f32(t.get("temperature", 1.0)).item(), "adv": f32(t["advantages"]).item(),
                         "old": f32(t["logprobs"]), "ref": f32(t["ref_logprobs"]),
                         "mask": torch.tensor(mask, dtype=torch.bool)})
    assert seqs, f"{path}: no sequence"
    for s in seqs:
        assert s["mask"].any(), "a sequence without a loss token: grpo's mean would count it as 0"
    return seqs


def step(m, seqs, agg, beta):
    """grpo-step's loss for one configuration: (loss, parts) with the gradient in m's .grad."""
    m.zero_grad(set_to_none=True)
    eps = f32(0.2).item()   # --clip-low and --clip-high, floats in grpo-step
    beta = f32(beta).item()
    B = len(seqs)
    N = sum(int(s["mask"].sum()) for s in seqs)
    loss = policy = kl = 0
    clipped, rmin, rmax = 0, float("inf"), float("-inf")
    for s in seqs:
        logits = m(input_ids=torch.tensor([s["ids"]])).logits[0] / s["temp"]
        np_, n = s["np"], len(s["resp"])
        lp = F.log_softmax(logits, -1)[np_ - 1:np_ - 1 + n]           # row j predicts resp[j]
        lp = lp.gather(1, torch.tensor(s["resp"])[:, None])[:, 0]
        mk = s["mask"]
        lp, old, ref = lp[mk], s["old"][mk], s["ref"][mk]
        A = s["adv"]
        r = torch.exp(torch.clamp(lp - old, -20.0, 20.0))
        un, cl = r * A, torch.clamp(r, 1 - eps, 1 + eps) * A
        p = torch.where(un <= cl, -un, -cl)                             # flat where clipped
        d = lp - ref
        k = torch.exp(-d) + d - 1
        w = 1.0 / (B * len(lp)) if agg == "grpo" else 1.0 / N
        loss = loss + w * (p + beta * k).sum()
        policy += w * p.sum().item()
        kl += w * k.sum().item()
        clipped += int((un > cl).sum())
        rmin, rmax = min(rmin, r.min().item()), max(rmax, r.max().item())
    loss.backward()
    ss = sum((q.grad.double() ** 2).sum() for q in m.parameters() if q.grad is not None)
    return loss.item(), {"grad_norm": ss.sqrt().item(), "policy_loss": policy, "kl_loss": kl,
                         "ratio_min": rmin, "ratio_max": rmax, "clipped": clipped}, B, N


def main():
    assert len(sys.argv) >= 3, "usage: python3 make_step_expected.py INPUT.jsonl MODEL_DIR..."
    inp = sys.argv[1]
    seqs = read_input(inp)
    sha = hashlib.sha256(open(inp, "rb").read()).hexdigest()
    torch.set_grad_enabled(True)
    for d in sys.argv[2:]:
        cfg = json.load(open(f"{d}/config.json"))
        m, info = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, output_loading_info=True)
        bad = {k: v for k, v in info.items() if v}
        assert not bad, f"{d}: {bad}"
        assert next(m.parameters()).dtype == torch.float64, f"{d}: not loaded in float64"
        tied = m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
        assert tied == bool(cfg.get("tie_word_embeddings")), f"{d}: tied {tied}"
        for s in seqs:
            assert max(s["ids"]) < cfg["vocab_size"], f"{d}: a token id past the vocabulary"
        m.eval()
        lines = []
        for agg, beta in CONFIGS:
            loss, parts, B, N = step(m, seqs, agg, beta)
            assert all(map(lambda v: v == v and abs(v) != float("inf"), [loss] + list(parts.values()))), \
                f"{d}: {agg} β {beta}: not finite"
            c = {"args": f"--loss-agg {agg} --beta {beta:g} --kl k3", "loss": loss, **parts}
            lines.append(json.dumps(c))
            print(f"{d}: {c['args']}: loss {loss:.9g} grad_norm {parts['grad_norm']:.9g} "
                  f"ratio {parts['ratio_min']:.3f}..{parts['ratio_max']:.3f} clipped {parts['clipped']}/{N}")
        head = {"made_by": f"torch {torch.__version__}, transformers {transformers.__version__}",
                "input": os.path.basename(inp), "input_sha256": sha, "architecture": cfg["architectures"][0],
                "tied": tied, "sequences": B, "loss_tokens": N}
        text = json.dumps(head)[:-1] + ', "configs": [\n' + ",\n".join(lines) + "\n]}\n"
        json.loads(text)
        with open(f"{d}/step-expected.json", "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
