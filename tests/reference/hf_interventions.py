#!/usr/bin/env python3
"""transformers' side of test_hf_interventions: head interventions, left-padded batches and greedy
generation with the KV cache, for every family variant of hf_models.

    hf_interventions.py --out DIR [--variants a,b,...]

For each variant (float32, and bfloat16 for BF16_VARIANTS) this builds the random-init checkpoint with
hf_models.build into DIR/<case>/model and writes beside it:
  spec.json            the cases (tokens, head edits, generation prompts) the C++ half replays in HeadScope
  reference.safetensors transformers' logits for every case (float32)
and DIR/index.json lists the cases. Everything runs in one process on one thread (CI cost).

Head edits are made the way a transformers user makes them: a forward pre-hook on the output projection
(hf_models.attn_out_proj), whose input [batch, pos, head·d_head] is the concatenation of the heads' z, so
head h's z is the slice h·d_head:(h+1)·d_head. The edits mirror HeadScope's Intervention on
blocks.{l}.attn.hook_z (core/model/intervention.h):
  zero     z ← 0 at the selected rows, positions and heads;
  mean     z ← mean_z[l, h], the head's z averaged in float64 as head_toolkit's meanZ does: over every
           position of every prompt of a second set ("all"), or over the last position of each ("last");
           transformers runs each of these prompts alone, HeadScope's meanZ as a left-padded batch;
  replace  z ← the source run's z of that head at the same row and position (a patch from other prompts).
Positions are absolute in the forward; negative ones count from the end (−1 = last).
"""
import argparse
import json
import os
import sys
import time

import torch

import hf_models

F32_TOL = 1e-4
# bf16: transformers rounds the residual stream to bf16 after every layer, HeadScope keeps it in float32
# (docs/models.md, Numerics), so the two differ by bf16 rounding of O(|logit|)-sized sums: 8 significant bits.
BF16_VARIANTS = ("llama", "gemma2")


def bf16_tol(max_logit):
    return 0.15 + 0.03 * max_logit


def text_config(model):
    cfg = model.config
    return getattr(cfg, "text_config", None) or cfg


def sliding_window(model):
    """The window of the sliding layers, or None when no layer slides."""
    cfg = text_config(model)
    w = getattr(cfg, "sliding_window", None)
    if not w:
        return None
    types = getattr(cfg, "layer_types", None)
    if types is not None and "sliding_attention" not in types:
        return None
    if getattr(cfg, "use_sliding_window", True) is False:
        return None
    return int(w)


def context_length(model):
    cfg = text_config(model)
    for name in ("max_position_embeddings", "n_positions"):
        v = getattr(cfg, name, None)
        if v:
            return int(v)
    return 2048


class Heads:
    """Pre-hooks on every layer's output projection: capture each head's z, apply head edits."""

    def __init__(self, model):
        self.model = model
        self.L = hf_models.n_layers(model)
        self.H = hf_models.n_heads(model)
        self.dh = hf_models.head_dim(model)

    def forward(self, ids, edits=(), mask=None, position_ids=None, capture=False):
        """logits [batch, pos, vocab] float32 and, with capture, {layer: z [batch, pos, head, d_head]}."""
        H, dh = self.H, self.dh
        captured = {}
        handles = []

        def make_hook(layer):
            mine = [e for e in edits if e["layer"] == layer]

            def hook(module, args):
                x = args[0]  # [batch, pos, head·d_head]
                B, P = x.shape[0], x.shape[1]
                if capture:
                    captured[layer] = x.detach().reshape(B, P, H, dh).clone()
                if not mine:
                    return None
                z = x.clone().reshape(B, P, H, dh)  # [batch, pos, head, d_head]
                for e in mine:
                    rows = e["rows"] or list(range(B))
                    pos = [p % P for p in e["positions"]] or list(range(P))
                    r = torch.tensor(rows).view(-1, 1)
                    p = torch.tensor(pos).view(1, -1)
                    for h in e["heads"]:
                        if e["op"] == "zero":
                            z[r, p, h] = 0
                        elif e["op"] == "mean":
                            z[r, p, h] = e["value"][h].to(z.dtype)  # [d_head] broadcast
                        elif e["op"] == "replace":
                            z[r, p, h] = e["value"][r, p, h].to(z.dtype)  # source z, same selection
                        else:
                            raise ValueError(e["op"])
                return (z.reshape(B, P, H * dh),) + tuple(args[1:])

            return hook

        for layer in range(self.L):
            handles.append(hf_models.attn_out_proj(self.model, layer).register_forward_pre_hook(make_hook(layer)))
        try:
            with torch.no_grad():
                out = self.model(input_ids=ids, attention_mask=mask, position_ids=position_ids, use_cache=False)
        finally:
            for h in handles:
                h.remove()
        return out.logits.float(), captured


def random_tokens(gen, vocab, rows, length):
    # Ids from 1: 0 is the padding id of the padded cases (any id would do: padding is masked).
    return torch.randint(1, vocab, (rows, length), generator=gen)


def interventions(heads, gen, vocab, P, tensors, spec):
    """Head edits on a batch of 2 prompts of P tokens; writes iv.* tensors and spec['interventions']."""
    L, H = heads.L, heads.H
    lm = L // 2
    ids = random_tokens(gen, vocab, 2, P)  # [batch, pos]
    src = random_tokens(gen, vocab, 2, P)  # [batch, pos] the patch source
    # The mean's prompts, of different lengths (HeadScope's meanZ runs them as a left-padded batch).
    mean_prompts = [random_tokens(gen, vocab, 1, n) for n in (P, P - 3, P - 5)]  # each [1, pos]
    base, _ = heads.forward(ids)
    _, src_z = heads.forward(src, capture=True)
    mean_runs = [heads.forward(m, capture=True)[1] for m in mean_prompts]  # each prompt alone
    # mean_z [layer, head, d_head] in float64 as meanZ accumulates it: over every position of every prompt
    # (ZMean::AllPositions), or over the last position of each (ZMean::LastPosition)
    mean_all = torch.stack([torch.cat([r[l][0].double() for r in mean_runs]).mean(0) for l in range(L)]).float()
    mean_last = torch.stack([torch.stack([r[l][0, -1].double() for r in mean_runs]).mean(0)
                             for l in range(L)]).float()
    tensors["iv.base"] = base
    tensors["iv.mean_all_z"] = mean_all
    tensors["iv.mean_last_z"] = mean_last
    spec["iv_tokens"] = ids.tolist()
    spec["iv_source_tokens"] = src.tolist()
    spec["iv_mean_prompts"] = [m[0].tolist() for m in mean_prompts]

    def edit(layer, heads_, op, positions=(), rows=(), mean=None):
        return {"layer": layer, "heads": list(heads_), "op": op, "positions": list(positions),
                "rows": list(rows), "mean": mean}

    cases = [
        ("zero two layers, all positions", [edit(0, [0, H - 1], "zero"), edit(L - 1, [1 % H], "zero")]),
        ("zero, last position", [edit(lm, [H // 2], "zero", [-1]), edit(0, [0], "zero", [-1])]),
        ("mean over positions, all positions", [edit(lm, [0], "mean", mean="all"), edit(L - 1, [H - 1], "mean", mean="all")]),
        ("mean over last positions, last position", [edit(0, [H // 2, H - 1], "mean", [-1], mean="last")]),
        ("patch from other prompts, all positions", [edit(0, [1 % H], "replace"), edit(lm, [0], "replace")]),
        ("patch row 1 at positions 2 and -1", [edit(L - 1, [0, H - 1], "replace", [2, -1], [1]), edit(0, [0], "replace", [2, -1], [1])]),
    ]
    spec["interventions"] = []
    for i, (name, edits) in enumerate(cases):
        hooked = []
        for e in edits:
            e = dict(e)
            if e["op"] == "mean":
                e["value"] = (mean_all if e["mean"] == "all" else mean_last)[e["layer"]]  # [head, d_head]
            elif e["op"] == "replace":
                e["value"] = src_z[e["layer"]]  # [batch, pos, head, d_head]
            hooked.append(e)
        logits, _ = heads.forward(ids, hooked)
        key = "iv.case%d" % i
        tensors[key] = logits
        spec["interventions"].append({"name": name, "edits": edits, "logits": key})


def padded(heads, gen, vocab, Lp, tensors, spec):
    """Rows of Lp, Lp − 3 and Lp − Lp // 2 + 2 real tokens, left-padded with id 0."""
    lengths = [Lp, Lp - 3, Lp - Lp // 2 + 2]
    ids = torch.zeros(len(lengths), Lp, dtype=torch.long)  # [batch, pos]
    mask = torch.zeros(len(lengths), Lp, dtype=torch.long)  # [batch, pos]
    for r, n in enumerate(lengths):
        ids[r, Lp - n:] = random_tokens(gen, vocab, 1, n)[0]
        mask[r, Lp - n:] = 1
    position_ids = (mask.cumsum(-1) - 1).clamp(min=0)  # as generate() gives them
    logits, _ = heads.forward(ids, mask=mask, position_ids=position_ids)
    tensors["pad.logits"] = logits  # [batch, pos, vocab]; padded positions are not compared
    spec["pad"] = {"tokens": ids.tolist(), "mask": mask.tolist(), "logits": "pad.logits"}


def generation(model, gen, vocab, Pg, N, lengths, tensors, spec):
    """Greedy decoding: one prompt of Pg tokens (as is, and with heads zeroed during its prefill), then a
    left-padded batch of `lengths` prompts."""
    gc = model.generation_config
    gc.eos_token_id = None  # random weights: never stop early (HeadScope's stopToken −1)
    gc.pad_token_id = 0
    gc.bos_token_id = None
    common = dict(do_sample=False, max_new_tokens=N, min_new_tokens=N, output_logits=True,
                  return_dict_in_generate=True, use_cache=True, pad_token_id=0)
    spec["generate"] = []
    prompt = random_tokens(gen, vocab, 1, Pg)  # [1, pos]
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), **common)
    tensors["gen.single"] = torch.stack([s.float() for s in out.logits], 1)  # [1, step, vocab]
    spec["generate"].append({"name": "single prompt", "tokens": prompt.tolist(), "mask": None,
                             "new": out.sequences[:, Pg:].tolist(), "logits": "gen.single"})

    # The same prompt with heads zeroed during the prefill only (generateGreedy's prefillInterventions): the
    # KV cache carries the edit's effect into the decoding steps, which run unedited.
    L, H, dh = hf_models.n_layers(model), hf_models.n_heads(model), hf_models.head_dim(model)
    edits = [{"layer": 0, "heads": [0, H - 1], "op": "zero", "positions": [], "rows": [], "mean": None},
             {"layer": L - 1, "heads": [1 % H], "op": "zero", "positions": [], "rows": [], "mean": None}]

    def prefill_only(layer, heads):
        def hook(module, args):
            x = args[0]  # [batch, pos, head·d_head]
            if x.shape[1] == 1:  # a decoding step
                return None
            z = x.clone().reshape(x.shape[0], x.shape[1], H, dh)  # [batch, pos, head, d_head]
            z[:, :, heads] = 0
            return (z.reshape(x.shape),) + tuple(args[1:])

        return hook

    handles = [hf_models.attn_out_proj(model, e["layer"]).register_forward_pre_hook(prefill_only(e["layer"], e["heads"]))
               for e in edits]
    try:
        with torch.no_grad():
            out = model.generate(prompt, attention_mask=torch.ones_like(prompt), **common)
    finally:
        for h in handles:
            h.remove()
    tensors["gen.prefill_zero"] = torch.stack([s.float() for s in out.logits], 1)  # [1, step, vocab]
    spec["generate"].append({"name": "single prompt, heads zeroed at prefill", "tokens": prompt.tolist(),
                             "mask": None, "new": out.sequences[:, Pg:].tolist(), "logits": "gen.prefill_zero",
                             "prefill_edits": edits, "unedited": "gen.single"})

    Lp = max(lengths)
    ids = torch.zeros(len(lengths), Lp, dtype=torch.long)
    mask = torch.zeros(len(lengths), Lp, dtype=torch.long)
    for r, n in enumerate(lengths):
        ids[r, Lp - n:] = random_tokens(gen, vocab, 1, n)[0]
        mask[r, Lp - n:] = 1
    with torch.no_grad():
        out = model.generate(ids, attention_mask=mask, **common)
    tensors["gen.batch"] = torch.stack([s.float() for s in out.logits], 1)  # [batch, step, vocab]
    spec["generate"].append({"name": "left-padded batch", "tokens": ids.tolist(), "mask": mask.tolist(),
                             "new": out.sequences[:, Lp:].tolist(), "logits": "gen.batch"})


def one_case(variant, dtype, seed, out_dir):
    from safetensors.torch import save_file

    name = variant if dtype == "float32" else variant + "/bf16"
    case_dir = os.path.join(out_dir, name.replace("/", "-"))
    os.makedirs(case_dir, exist_ok=True)
    t0 = time.time()
    model = hf_models.build(variant, os.path.join(case_dir, "model"), dtype=dtype, seed=seed)
    heads = Heads(model)
    vocab = int(text_config(model).vocab_size)
    window = sliding_window(model)
    ctx = context_length(model)
    # Prompts longer than the window (twice over: the window must cut into the short padded rows too),
    # generation running well past it.
    P = 12 if window is None else max(12, 2 * window + 4)
    Pg = 8 if window is None else window + 3
    N = 12 if window is None else max(12, 2 * window + 4)
    P, Pg, N = min(P, ctx), min(Pg, ctx // 2), min(N, ctx - max(Pg, P))
    gen = torch.Generator().manual_seed(1000 + seed)
    tensors = {}
    spec = {"variant": variant, "dtype": dtype, "model": "model", "sliding_window": window or 0,
            "n_layers": heads.L, "n_heads": heads.H, "d_head": heads.dh}
    interventions(heads, gen, vocab, P, tensors, spec)
    padded(heads, gen, vocab, P, tensors, spec)
    generation(model, gen, vocab, Pg, N, [Pg, Pg - 2, max(2, Pg - Pg // 2)], tensors, spec)
    base_max = float(tensors["iv.base"].abs().max())
    spec["tol"] = F32_TOL if dtype == "float32" else bf16_tol(base_max)
    spec["max_abs_logit"] = base_max
    save_file({k: v.contiguous() for k, v in tensors.items()}, os.path.join(case_dir, "reference.safetensors"))
    with open(os.path.join(case_dir, "spec.json"), "w") as f:
        json.dump(spec, f)
    print("%s: %.1f s (window %s, P %d, prompt %d + %d new)" % (name, time.time() - t0, window, P, Pg, N),
          file=sys.stderr)
    return {"name": name, "dir": case_dir}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default="", help="comma-separated subset of hf_models.VARIANTS")
    a = ap.parse_args()
    import transformers

    transformers.utils.logging.set_verbosity_error()  # keep stderr for errors: the C++ half shows its tail
    transformers.utils.logging.disable_progress_bar()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    variants = [v for v in a.variants.split(",") if v] or list(hf_models.VARIANTS)
    cases = []
    for i, v in enumerate(variants):
        cases.append(one_case(v, "float32", i, a.out))
        if v in BF16_VARIANTS:
            cases.append(one_case(v, "bfloat16", i, a.out))
    with open(os.path.join(a.out, "index.json"), "w") as f:
        json.dump(cases, f)


if __name__ == "__main__":
    main()
