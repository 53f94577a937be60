# The second half of make.sh, run where torch and transformers are installed:
#   python3 make_expected.py DIR
# For each model directory DIR/{qwen2,qwen3,llama} written by grpo-init:
#   - load it with transformers in float64 and fail unless every tensor in the
#     files was used and every parameter was found (what save_pretrained's
#     inverse needs), and tying is what config.json says;
#   - five sequences, each at its own temperature, their response tokens'
#     logprobs and the entropies of the predicting distributions;
#   - the gradient of  sum c_t logprob_t + sum d_t entropy_t  over every
#     response token, for every parameter, under Hugging Face's names.
# Writes DIR/FAMILY/expected.json and DIR/FAMILY/grad.safetensors.
import json, sys
import torch, torch.nn.functional as F
import transformers
from transformers import AutoModelForCausalLM
from safetensors.torch import save_file

root = sys.argv[1]
lens = [(3, 7), (1, 12), (9, 4), (5, 1), (20, 25)]      # (prompt, response) lengths
temps = [1.0, 0.7, 1.3, 0.9, 1.0]
for fam in ("qwen2", "qwen3", "llama"):
    d = f"{root}/{fam}"
    cfg = json.load(open(f"{d}/config.json"))
    V = cfg["vocab_size"]
    g = torch.Generator().manual_seed(1234)
    seqs = [(torch.randint(0, V, (p,), generator=g).tolist(), torch.randint(0, V, (r,), generator=g).tolist())
            for p, r in lens]
    cl = [torch.randn(r, generator=g, dtype=torch.float64) for _, r in lens]
    ce = [torch.randn(r, generator=g, dtype=torch.float64) for _, r in lens]
    m, info = AutoModelForCausalLM.from_pretrained(d, dtype=torch.float64, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    assert not bad, f"{fam}: {bad}"
    tied = m.lm_head.weight.data_ptr() == m.model.embed_tokens.weight.data_ptr()
    assert tied == bool(cfg.get("tie_word_embeddings")), f"{fam}: tied {tied}"
    m.eval()
    loss, lps, ents = 0, [], []
    for (a, b), t, c1, c2 in zip(seqs, temps, cl, ce):
        logits = m(input_ids=torch.tensor([a + b])).logits[0] / t
        lp = F.log_softmax(logits, -1)[len(a) - 1:len(a) - 1 + len(b)]   # row j predicts b[j]
        tok = lp.gather(1, torch.tensor(b)[:, None])[:, 0]
        H = -(lp.exp() * lp).sum(-1)
        loss = loss + (c1 * tok).sum() + (c2 * H).sum()
        lps.append(tok.tolist())
        ents.append(H.tolist())
    loss.backward()
    grads = {n: p.grad.float().contiguous() for n, p in m.named_parameters()}
    save_file(grads, f"{d}/grad.safetensors")
    out = {"made_by": f"torch {torch.__version__}, transformers {transformers.__version__}",
           "architecture": cfg["architectures"][0], "loading_info": {k: list(v) for k, v in info.items()},
           "tied": tied, "sequences": [{"prompt_tokens": a, "response_tokens": b, "temperature": t}
                                       for (a, b), t in zip(seqs, temps)],
           "logprobs": lps, "entropy": ents,
           "logprob_coefficients": [c.tolist() for c in cl], "entropy_coefficients": [c.tolist() for c in ce],
           "loss": loss.item()}
    json.dump(out, open(f"{d}/expected.json", "w"))
    print(fam, "loaded cleanly; loss", loss.item(), "tensors", len(grads))
