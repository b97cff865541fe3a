#!/usr/bin/python3
"""Recomputes a HeadScope session's TSLA TR/TL grids, function-vector AIE grid and one list-tasks ablation
curve with its 95 % interval from the session alone.

Run with Debian's /usr/bin/python3 (PyTorch 1.13, no `transformers`). The session holds no weights: the
model is read from its Hugging Face folder (config.json + model.safetensors) and run by the independent
float64 Llama forward of tests/load/reference_forward.py; everything else (the prompts, the label sets, the
options) comes from the session's JSON, as a reader of the session would do it.

Usage: recompute_from_session.py SESSION MODEL_DIR
Prints one JSON object: for every recomputed grid, {"max_abs_diff", "max_abs_value", "shape"}; for the
ablation curve "<curve id>/<series>", {"max_abs_diff", "max_abs_interval_diff", "points", "y", "lo", "hi"}.

Definitions (docs/methods.md):
  TSLA  a = W_O[:, k·dh:(k+1)·dh] z_{l,k} at N; rows R = W_U[Y] (times the final norm's weight when the run's
        option final_norm is on); P the orthogonal projector onto span(R); d = R[y*] − mean_{y'≠y*} R[y'];
        the run's option score_definition "paper" (the default): TR = mean over prompts of ‖P a‖²,
        TL = mean of ⟨a, d⟩ / ‖P a‖²; "norm": ‖P a‖ and ⟨a, d⟩ / ‖P a‖ (TL 0 when P a = 0).
  FV    z̄ = mean over the "clean" prompts of z at N; AIE(l, k) = mean over the "corrupt" prompts of
        P(answer | z_{l,k} at N ← z̄_{l,k}) − P(answer).
  list-tasks  the curve "dual_route.ablation.copy_random", series "token_copying": at each k, the share of
        the "ablation.copy_random" prompts whose argmax at the last position is the answer, with the ordering's
        first k heads (the curve's provenance) replaced at every position by the run's tensor mean_z; its
        interval the 95 % Wilson score interval of that share (z = 1.959963984540054).
"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "load"))
import reference_forward as rf  # noqa: E402

F64 = torch.float64


def read_session(path):
    """The session JSON (the __metadata__ entry "headscope.session" of the safetensors header)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    return json.loads(header["__metadata__"]["headscope.session"])


def load_model(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    W = {k: v.to(F64) for k, v in rf.read_safetensors(os.path.join(folder, "model.safetensors")).items()}
    return cfg, W


def grid_values(grid):
    return torch.tensor([[float(v) for v in row] for row in grid["values"]], dtype=F64)


def find_run(session, method):
    runs = [r for r in session["runs"] if r["method"] == method]
    return runs[0] if runs else None


def prompts_of(run, name):
    return [p for p in run["prompts"] if p["set"] == name]


def run_prompt(cfg, W, ids, z_hook=None):
    """Logits [batch, pos, vocab] of the ids (one row, or rows of equal length)."""
    tokens = torch.tensor(ids, dtype=torch.long)
    if tokens.dim() == 1:
        tokens = tokens[None, :]
    with torch.no_grad():
        return rf.forward_llama_like(cfg, W, tokens, cfg["model_type"], z_hook)


def z_at(cfg, W, ids, pos):
    """hook_z of every layer at position pos: [layers, heads, d_head]."""
    got = {}

    def hook(layer, z):  # z [batch, head, pos, d_head]
        got[layer] = z[0, :, pos, :].clone()
        return z

    run_prompt(cfg, W, ids, hook)
    return torch.stack([got[l] for l in range(cfg["num_hidden_layers"])])


def unembedding(W):
    return W.get("lm_head.weight", W["model.embed_tokens.weight"])


def recompute_tsla(cfg, W, run):
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    dh = cfg.get("head_dim") or cfg["hidden_size"] // H
    fold = bool(run["options"].get("final_norm", False))
    squared = run["options"].get("score_definition", "paper") == "paper"
    U = unembedding(W)
    tr, tl = torch.zeros(L, H, dtype=F64), torch.zeros(L, H, dtype=F64)
    prompts = prompts_of(run, "icl")
    for p in prompts:
        z = z_at(cfg, W, p["ids"], p["query_pos"])  # [layers, heads, d_head]
        labels = p["label_ids"]
        rows = U[labels]  # [labels, d_model]
        if fold:
            rows = rows * W["model.norm.weight"]
        q, _ = torch.linalg.qr(rows.t())  # [d_model, labels] orthonormal basis of span(rows)
        gold = labels.index(p["answer_ids"][0])
        others = [i for i in range(len(labels)) if i != gold]
        d = rows[gold] - rows[others].mean(0)  # [d_model]
        for l in range(L):
            wo = W[f"model.layers.{l}.self_attn.o_proj.weight"]  # [d_model, heads * d_head]
            for h in range(H):
                a = wo[:, h * dh:(h + 1) * dh] @ z[l, h]  # [d_model]
                norm = (q.t() @ a).norm()
                score = norm * norm if squared else norm
                tr[l, h] += score
                tl[l, h] += (a @ d) / score if norm > 0 else 0.0
    return {"tsla.tr": tr / len(prompts), "tsla.tl": tl / len(prompts)}


def recompute_aie(cfg, W, run):
    L, H = cfg["num_hidden_layers"], cfg["num_attention_heads"]
    clean = prompts_of(run, "clean")
    mean = torch.stack([z_at(cfg, W, p["ids"], p["query_pos"]) for p in clean]).mean(0)  # [L, H, d_head]
    aie = torch.zeros(L, H, dtype=F64)
    corrupt = prompts_of(run, "corrupt")
    for p in corrupt:
        pos, target = p["query_pos"], p["answer_ids"][0]
        # Row 0 unpatched, row 1 + l·H + h patched at (l, h): one forward for all heads.
        rows = 1 + L * H

        def hook(layer, z):  # z [rows, head, pos, d_head]
            z = z.clone()
            for h in range(H):
                z[1 + layer * H + h, h, pos, :] = mean[layer, h]
            return z

        logits = run_prompt(cfg, W, [p["ids"]] * rows, hook)[:, pos, :]  # [rows, vocab]
        prob = torch.softmax(logits, dim=-1)[:, target]  # [rows]
        aie += (prob[1:] - prob[0]).view(L, H)
    return {"fv.aie": aie / len(corrupt)}


def wilson(k, n, z=1.959963984540054):
    p = k / n
    z2n = z * z / n
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * ((p * (1 - p) / n + z2n / (4 * n)) ** 0.5) / (1 + z2n)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


def recompute_ablation_curve(cfg, W, run, tensors, curve_id="dual_route.ablation.copy_random",
                             series="token_copying"):
    curve = next(c for c in run["curves"] if c["id"] == curve_id)
    task = curve_id.split(".")[-1]
    order = curve["provenance"]["options"]["orderings"][series]  # [[layer, head], ...] best first
    mean = tensors[run["id"] + "/mean_z"].to(F64)  # [layers, heads, d_head]
    prompts = prompts_of(run, "ablation." + task)
    ys, los, his = [], [], []
    for k in curve["x"]:
        heads = order[:int(k)]

        def hook(layer, z):  # z [1, head, pos, d_head]: the chosen heads' mean at every position
            z = z.clone()
            for l, h in heads:
                if l == layer:
                    z[:, h, :, :] = mean[l, h]
            return z

        correct = 0
        for p in prompts:
            logits = run_prompt(cfg, W, p["ids"], hook)[0, -1]  # [vocab]
            correct += int(int(logits.argmax()) == p["answer_ids"][0])
        lo, hi = wilson(correct, len(prompts))
        ys.append(correct / len(prompts))
        los.append(lo)
        his.append(hi)
    theirs = dict((s["id"], s["y"]) for s in curve["series"])[series]
    interval = next(i for i in curve["intervals"] if i["series"] == series)
    diff = max(abs(a - float(b)) for a, b in zip(ys, theirs))
    idiff = max(max(abs(a - float(b)) for a, b in zip(los, interval["lo"])),
                max(abs(a - float(b)) for a, b in zip(his, interval["hi"])))
    return {curve_id + "/" + series: {"max_abs_diff": diff, "max_abs_interval_diff": idiff, "points": len(ys),
                                      "y": ys, "lo": los, "hi": his}}


def main():
    session_path, model_dir = sys.argv[1], sys.argv[2]
    session = read_session(session_path)
    cfg, W = load_model(model_dir)
    if cfg["model_type"] not in ("llama", "mistral", "qwen2"):
        sys.exit(f"{model_dir}: model_type {cfg['model_type']}: this script recomputes pre-norm Llama-style models")
    out = {}
    for method, recompute in (("tsla", recompute_tsla), ("fv", recompute_aie)):
        run = find_run(session, method)
        if run is None:
            continue
        grids = {g["id"]: grid_values(g) for g in run["grids"]}
        for gid, mine in recompute(cfg, W, run).items():
            theirs = grids[gid]
            out[gid] = {"max_abs_diff": float((mine - theirs).abs().max()),
                        "max_abs_value": float(mine.abs().max()), "shape": list(mine.shape)}
    run = find_run(session, "list-tasks")
    if run is not None:
        out.update(recompute_ablation_curve(cfg, W, run, rf.read_safetensors(session_path)))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
