"""Forward references from transformers for every variant of hf_models.py, in float32 and bfloat16.

    hf_forward.py --out DIR [--variants a,b,...] [--dtypes float32,bfloat16]

For each variant V and dtype D it writes
    DIR/V-D/model/              the checkpoint, saved as hf_models.build saves V
    DIR/V-D/reference.safetensors
        tokens            [batch, pos] int64      batch 2, POS positions (longer than every sliding window)
        logits            [batch, pos, vocab]     float32 (from the model's own dtype D)
        pattern.{l}       [batch, head, q, k]     output_attentions (eager attention)
        hidden.{i}        [batch, pos, d_model]   output_hidden_states: i < L the residual stream entering
                                                  layer i (hidden.0: the embeddings, Gemma's scaled);
                                                  hidden.L the final norm's output
        resid_post_last   [batch, pos, d_model]   the last layer's output (before the final norm), from a
                                                  forward hook on it, since hidden.L is after the norm
        z.{l}             [batch, pos, heads*d_head]  the input of the attention output projection
        upcast.<name>     bfloat16 only: every tensor above from the same weights upcast to float32 and
                                                  run in float32 (what loading the bf16 checkpoint as
                                                  float32 must reproduce, and the exact result both sides'
                                                  bf16 arithmetic approximates)
    DIR/manifest.json   {"variants": [...], "dtypes": [...], "pos": POS, "batch": 2, "n_layers": {V: L},
                         "tied": {V: bool}, "all_variants": every variant hf_models knows}
All tensors but tokens are stored as float32. Nothing is downloaded.
"""

import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

import hf_models

BATCH = 2
POS = 24  # > hf_models.WINDOW (8): every sliding layer's window bites
assert POS > hf_models.WINDOW


def _tokens():
    g = torch.Generator().manual_seed(1234)
    return torch.randint(0, hf_models.VOCAB, (BATCH, POS), generator=g)  # [batch, pos]


def _first(output):
    return output[0] if isinstance(output, (tuple, list)) else output


def forward(model, tokens):
    """logits, patterns, hidden states, the last layer's output and every layer's z."""
    L = hf_models.n_layers(model)
    z, last = {}, {}
    handles = []
    for l in range(L):
        def pre(module, args, l=l):
            z[l] = args[0].detach().float().clone()  # [batch, pos, heads*d_head]
        handles.append(hf_models.attn_out_proj(model, l).register_forward_pre_hook(pre))

    def post(module, args, output):
        last["x"] = _first(output).detach().float().clone()  # [batch, pos, d_model]
    handles.append(hf_models.layers(model)[L - 1].register_forward_hook(post))
    try:
        with torch.no_grad():
            out = model(tokens, output_attentions=True, output_hidden_states=True, use_cache=False)
    finally:
        for h in handles:
            h.remove()
    if len(out.attentions) != L or len(out.hidden_states) != L + 1:
        raise RuntimeError(f"{len(out.attentions)} patterns and {len(out.hidden_states)} hidden states "
                           f"for {L} layers")
    t = {"logits": out.logits.float().contiguous()}
    for l in range(L):
        t[f"pattern.{l}"] = out.attentions[l].float().contiguous()
        t[f"z.{l}"] = z[l].contiguous()
    for i, h in enumerate(out.hidden_states):
        t[f"hidden.{i}"] = h.float().contiguous()
    t["resid_post_last"] = last["x"].contiguous()
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--variants", default=",".join(hf_models.VARIANTS))
    ap.add_argument("--dtypes", default="float32,bfloat16")
    args = ap.parse_args()
    torch.set_num_threads(1)
    variants = [v for v in args.variants.split(",") if v]
    dtypes = [d for d in args.dtypes.split(",") if d]
    tokens = _tokens()
    n_layers = {}
    for v in variants:
        if v not in hf_models.VARIANTS:
            sys.exit(f"unknown variant {v}; known: {', '.join(hf_models.VARIANTS)}")
        for d in dtypes:
            folder = os.path.join(args.out, f"{v}-{d}")
            model = hf_models.build(v, os.path.join(folder, "model"), dtype=d)
            t = forward(model, tokens)
            if d != "float32":
                t.update({"upcast." + k: x for k, x in forward(model.float(), tokens).items()})
            t["tokens"] = tokens.clone()
            save_file(t, os.path.join(folder, "reference.safetensors"))
            n_layers[v] = hf_models.n_layers(model)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump({"variants": variants, "dtypes": dtypes, "batch": BATCH, "pos": POS, "n_layers": n_layers,
                   "tied": {v: hf_models.VARIANTS[v]["tied"] for v in variants},
                   "all_variants": list(hf_models.VARIANTS)}, f, indent=1)


if __name__ == "__main__":
    main()
