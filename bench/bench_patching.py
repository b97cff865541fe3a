#!/usr/bin/python3
"""Plain-PyTorch baseline of bench_patching.cpp: the naive activation patching loop (one full forward per
patched head, z of that head at the last position replaced by the clean run's) on the same weights and
tokens as the C++ bench, in the most direct PyTorch a researcher would write.

usage: bench_patching.py --weights W.safetensors --job job.json
  job.json: {"config": {...GPT-2 sizes...}, "clean": [...], "corrupt": [...], "target": t,
             "distractor": d, "heads": [[layer, head], ...], "threads": n, "warmup": k}
Prints one JSON object: median seconds per patched forward, the setup time (clean + corrupt runs), the
metric (logit[target] - logit[distractor]) change of every listed head.
Weights use HeadScope's canonical names as the bench writes them: tok_emb, pos_emb, final_norm_{w,b},
layers.L.{attn_norm_w, attn_norm_b, wq, bq, wk, bk, wv, bv, wo, bo, mlp_norm_w, mlp_norm_b, w_up, b_up,
w_down, b_down}; linear weights [out, in]; the unembedding is tied to tok_emb.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "load"))
from reference_forward import read_safetensors  # noqa: E402


def forward(cfg, W, tokens, patch=None, capture=None):
    """GPT-2 forward on [1, pos] tokens; returns the last-position logits [vocab].
    patch = (layer, head, value [d_head]) replaces that head's z at the last position;
    capture = list that receives every layer's z [pos, head, d_head]."""
    d, nh = cfg["d_model"], cfg["n_heads"]
    dh, eps = d // nh, cfg["norm_eps"]
    P = tokens.shape[1]
    x = W["tok_emb"][tokens] + W["pos_emb"][:P]  # [1, pos, d]
    causal = torch.ones(P, P, dtype=torch.bool).tril()
    for l in range(cfg["n_layers"]):
        p = f"layers.{l}."
        h = F.layer_norm(x, (d,), W[p + "attn_norm_w"], W[p + "attn_norm_b"], eps)
        q = F.linear(h, W[p + "wq"], W[p + "bq"]).view(1, P, nh, dh).transpose(1, 2)  # [1, head, pos, dh]
        k = F.linear(h, W[p + "wk"], W[p + "bk"]).view(1, P, nh, dh).transpose(1, 2)
        v = F.linear(h, W[p + "wv"], W[p + "bv"]).view(1, P, nh, dh).transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
        scores = scores.masked_fill(~causal, float("-inf"))
        z = torch.softmax(scores, -1) @ v  # [1, head, pos, dh]
        if capture is not None:
            capture.append(z[0].transpose(0, 1).clone())  # [pos, head, dh]
        if patch is not None and patch[0] == l:
            z = z.clone()
            z[0, patch[1], -1] = patch[2]
        x = x + F.linear(z.transpose(1, 2).reshape(1, P, d), W[p + "wo"], W[p + "bo"])
        h = F.layer_norm(x, (d,), W[p + "mlp_norm_w"], W[p + "mlp_norm_b"], eps)
        m = F.gelu(F.linear(h, W[p + "w_up"], W[p + "b_up"]), approximate="tanh")
        x = x + F.linear(m, W[p + "w_down"], W[p + "b_down"])
    last = F.layer_norm(x[0, -1], (d,), W["final_norm_w"], W["final_norm_b"], eps)  # [d]
    return last @ W["tok_emb"].t()  # [vocab]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--job", required=True)
    args = ap.parse_args()
    with open(args.job) as f:
        job = json.load(f)
    torch.set_num_threads(job["threads"])
    cfg = job["config"]
    W = {k: v.float().contiguous() for k, v in read_safetensors(args.weights).items()}
    clean = torch.tensor([job["clean"]], dtype=torch.int64)
    corrupt = torch.tensor([job["corrupt"]], dtype=torch.int64)
    t, dist = job["target"], job["distractor"]

    def metric(logits):
        return (logits[t] - logits[dist]).item()

    with torch.inference_mode():
        for _ in range(job.get("warmup", 1)):
            forward(cfg, W, corrupt)
        t0 = time.perf_counter()
        zs = []
        forward(cfg, W, clean, capture=zs)
        base = metric(forward(cfg, W, corrupt))
        setup = time.perf_counter() - t0
        times, values = [], []
        for layer, head in job["heads"]:
            t0 = time.perf_counter()
            logits = forward(cfg, W, corrupt, patch=(layer, head, zs[layer][-1, head]))
            times.append(time.perf_counter() - t0)
            values.append(metric(logits) - base)
    times.sort()
    print(json.dumps(dict(per_forward_median_s=times[len(times) // 2], per_forward_mean_s=sum(times) / len(times),
                          setup_s=setup, threads=job["threads"], heads=len(values), values=values,
                          corrupt_metric=base)))


if __name__ == "__main__":
    main()
