#!/usr/bin/env python3
"""The Python half of scripts/gpu_check.sh: HeadScope (hs_gpu_probe) against Hugging Face transformers on the
GPU. Models are random-initialised from configs (no download); each family's checkpoint is written with
save_pretrained (safetensors), HeadScope loads the folder, both run the same tokens, eager attention.

Tolerances: float32 max |logit difference| <= 1e-4 (docs/reference.md). bfloat16 <= 5e-2 * max(1, max |logit|):
both round every projection to bf16 (8 significant bits) and may order the accumulation differently, so a
logit of magnitude 1 may differ by a few bf16 ulps (2^-8 each).
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

TOKENS = [(7919 * i + 13) % 1000 for i in range(24)]

# Where both sides run: "cuda" (the check), or "cpu" for the dry run that tests this script itself
# (tests/gpu_check: a stand-in for transformers' Llama, no GPU).
DEVICE = "cuda"


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def free_cache():
    if DEVICE == "cuda":
        torch.cuda.empty_cache()

# Small configs per family: real layouts (GQA, biases, norms, rotary variants), small sizes.
FAMILIES = {
    "llama": dict(cls="LlamaConfig", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=256,
                  rope_theta=500000.0, rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                         high_freq_factor=4.0,
                                                         original_max_position_embeddings=64)),
    "mistral": dict(cls="MistralConfig", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                    num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=256,
                    sliding_window=None),
    "qwen2": dict(cls="Qwen2Config", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, vocab_size=1000, max_position_embeddings=256,
                  use_sliding_window=False),
    "qwen3": dict(cls="Qwen3Config", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=1000,
                  max_position_embeddings=256, use_sliding_window=False),
    # Token ids inside the small vocabulary: the defaults (50256, 50279) are refused as out of range.
    "gpt2": dict(cls="GPT2Config", n_embd=128, n_layer=3, n_head=4, vocab_size=1000, n_positions=256,
                 bos_token_id=999, eos_token_id=999),
    "gpt_neox": dict(cls="GPTNeoXConfig", hidden_size=128, intermediate_size=512, num_hidden_layers=3,
                     num_attention_heads=4, vocab_size=1000, max_position_embeddings=256, rotary_pct=0.25),
    "olmo2": dict(cls="Olmo2Config", hidden_size=128, intermediate_size=256, num_hidden_layers=3,
                  num_attention_heads=4, num_key_value_heads=4, vocab_size=1000, max_position_embeddings=256,
                  eos_token_id=999),
    "gemma2": dict(cls="Gemma2Config", hidden_size=128, intermediate_size=256, num_hidden_layers=4,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=1000,
                   max_position_embeddings=256, sliding_window=16),
    "gemma3": dict(cls="Gemma3TextConfig", hidden_size=128, intermediate_size=256, num_hidden_layers=6,
                   num_attention_heads=4, num_key_value_heads=2, head_dim=32, vocab_size=1000,
                   max_position_embeddings=256, sliding_window=16),
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def probe(args, model, out, device=None, dtype="f32", gpu_layers=None, time_it=False, ids=TOKENS,
          grid=False):
    cmd = [args.probe, model, "--device", device or DEVICE, "--dtype", dtype, "--ids", ",".join(map(str, ids)),
           "--out", out]
    if gpu_layers is not None:
        cmd += ["--gpu-layers", str(gpu_layers)]
    if time_it:
        cmd.append("--time")
    if grid:
        cmd.append("--grid")
    info = run(cmd)
    vocab = os.path.getsize(out) // 4 // len(ids)
    logits = torch.from_file(out, size=len(ids) * vocab, dtype=torch.float32).view(len(ids), vocab)
    return info, logits


def dtype_kw(dtype):
    """transformers 5 names the load dtype `dtype` (`torch_dtype` is deprecated there); earlier ones and the
    dry run's stand-in take `torch_dtype`."""
    import transformers
    try:
        major = int(transformers.__version__.split(".")[0])
    except ValueError:
        major = 0
    return {"dtype": dtype} if major >= 5 else {"torch_dtype": dtype}


def make_family(name, spec, folder):
    import transformers
    cfg = getattr(transformers, spec["cls"])(**{k: v for k, v in spec.items() if k != "cls"})
    cfg._attn_implementation = "eager"
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(cfg, **dtype_kw(torch.float32))
    with torch.no_grad():  # norms away from 1 and non-zero biases, so every weight matters
        for n, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.1)
    model.save_pretrained(folder, safe_serialization=True)
    # The reference is the model as transformers loads the folder HeadScope reads: the in-memory one can
    # differ from what was saved (a tied GPT-2 whose head was initialised apart from its embedding).
    return transformers.AutoModelForCausalLM.from_pretrained(folder, **dtype_kw(torch.float32),
                                                             attn_implementation="eager")


def families(args, report):
    out = {}
    for name, spec in FAMILIES.items():
        folder = os.path.join(args.out, "models", name)
        r = {}
        try:
            model = make_family(name, spec, folder)
        except Exception as e:  # this transformers lacks the family
            out[name] = {"skipped": f"transformers: {type(e).__name__}: {e}"}
            continue
        ids = torch.tensor([TOKENS])
        for dtype, torch_dtype, tol in (("f32", torch.float32, 1e-4), ("bf16", torch.bfloat16, 5e-2)):
            with torch.no_grad():
                ref = model.to(DEVICE, torch_dtype)(ids.to(DEVICE)).logits[0].float().cpu()
            try:
                _, ours = probe(args, folder, os.path.join(args.out, f"{name}-{dtype}.f32"), dtype=dtype)
            except RuntimeError as e:
                r[dtype] = {"error": str(e)}
                continue
            diff = float((ours - ref).abs().max())
            bound = tol if dtype == "f32" else tol * max(1.0, float(ref.abs().max()))
            r[dtype] = {"max_abs_diff": diff, "tolerance": bound, "pass": diff <= bound}
        out[name] = r
        del model
        free_cache()
    report["families"] = out


def last_logits(model, x):
    """The last position's logits, computing no others where this transformers can (logits_to_keep,
    earlier num_logits_to_keep), as HeadScope's naive loop does."""
    for kw in ("logits_to_keep", "num_logits_to_keep"):
        try:
            return model(x, **{kw: 1}).logits[0, -1]
        except TypeError:
            continue
    return model(x).logits[0, -1]


def patch_o_proj_input(model, x, layer, head, dh, clean_in):
    """One forward with head `head` of `layer` taking its clean output at the last position: the slice of
    o_proj's input that is that head's hook_z."""
    def pre(m, a):
        z = a[0].clone()
        z[:, -1, head * dh:(head + 1) * dh] = clean_in[:, head * dh:(head + 1) * dh]
        return (z,)
    hook = model.model.layers[layer].self_attn.o_proj.register_forward_pre_hook(pre)
    try:
        return last_logits(model, x)
    finally:
        hook.remove()


def o_proj_inputs(model, x):
    """Every layer's o_proj input at the last position: [layer] -> [1, heads * head_dim]."""
    seen = {}
    layers = model.model.layers
    hooks = [layers[l].self_attn.o_proj.register_forward_pre_hook(
        lambda m, a, l=l: seen.__setitem__(l, a[0][:, -1].clone())) for l in range(len(layers))]
    try:
        model(x)
    finally:
        for h in hooks:
            h.remove()
    return seen


def sweep_parity(args, report):
    """HeadScope's fast patching sweep on the GPU against transformers' naive loop (one hooked forward per
    head), float32, every head of the small llama: the grids within 1 % of the largest effect."""
    import transformers
    folder = os.path.join(args.out, "models", "llama")
    if not os.path.exists(os.path.join(folder, "config.json")):
        report["sweep_parity"] = {"skipped": "no llama model"}
        return
    info, _ = probe(args, folder, os.path.join(args.out, "sweep.f32"), grid=True)
    ours = torch.tensor(info["grid"], dtype=torch.float64)
    n = len(TOKENS)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, **dtype_kw(torch.float32),
                                                              attn_implementation="eager").to(DEVICE)
    vocab = model.config.vocab_size
    corrupt = list(TOKENS)
    for p in (n // 6, n // 2, n * 4 // 5):
        corrupt[p] = (corrupt[p] + 12345) % vocab
    clean_x = torch.tensor([TOKENS], device=DEVICE)
    corrupt_x = torch.tensor([corrupt], device=DEVICE)
    L, H = model.config.num_hidden_layers, model.config.num_attention_heads
    dh = getattr(model.config, "head_dim", None) or model.config.hidden_size // H

    def metric(logits):
        return float(logits[1].double() - logits[2].double())

    with torch.no_grad():
        clean = o_proj_inputs(model, clean_x)
        base = metric(last_logits(model, corrupt_x))
        theirs = torch.tensor([[metric(patch_o_proj_input(model, corrupt_x, l, h, dh, clean[l])) - base
                                for h in range(H)] for l in range(L)], dtype=torch.float64)
    # Random weights give small effects, so the bound is relative: 1 % of the largest effect (a head mapped
    # wrongly differs by about the effects themselves), at least 1e-5 (float32 rounding of the logits).
    diff = float((ours - theirs).abs().max())
    scale = float(theirs.abs().max())
    tol = max(1e-5, 1e-2 * scale)
    report["sweep_parity"] = {"heads": L * H, "max_abs_diff": diff, "max_abs_effect": scale, "tolerance": tol,
                              "pass": diff <= tol and scale >= 1e-4}
    del model
    free_cache()


def device_maps(args, report):
    folder = os.path.join(args.out, "models", "llama")
    if not os.path.exists(os.path.join(folder, "config.json")):
        report["device_map"] = {"skipped": "no llama model"}
        return
    if DEVICE != "cuda":
        report["device_map"] = {"skipped": "needs CUDA"}
        return
    _, one = probe(args, folder, os.path.join(args.out, "dm-one.f32"))
    r = {}
    for label, kw in (("gpu_layers_1", dict(gpu_layers=1)), ("gpu_layers_0", dict(gpu_layers=0))):
        info, split = probe(args, folder, os.path.join(args.out, f"dm-{label}.f32"), **kw)
        diff = float((split - one).abs().max())
        r[label] = {"devices": info["device"], "max_abs_diff_vs_one_device": diff, "pass": diff <= 1e-4}
    if torch.cuda.device_count() >= 2:
        info, split = probe(args, folder, os.path.join(args.out, "dm-two.f32"), device="cuda:0,cuda:1")
        diff = float((split - one).abs().max())
        r["cuda0_cuda1"] = {"devices": info["device"], "max_abs_diff_vs_one_device": diff, "pass": diff <= 1e-4}
    report["device_map"] = r


def timings(args, report):
    import transformers
    if args.timing_model:  # the dry run: a small model instead of the 1B shape
        folder = args.timing_model
    else:
        folder = os.path.join(args.out, "llama-3.2-1b")
        if not os.path.exists(os.path.join(folder, "config.json")):
            subprocess.run([sys.executable, "scripts/make_real_shape_checkpoint.py", "llama-3.2-1b", folder],
                           check=True, capture_output=True)
    with open(os.path.join(folder, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    ids = [(7919 * i + 13) % vocab for i in range(128)]
    ours, _ = probe(args, folder, os.path.join(args.out, "1b.f32"), dtype="bf16", time_it=True, ids=ids)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, **dtype_kw(torch.bfloat16),
                                                              attn_implementation="eager").to(DEVICE)
    x = torch.tensor([ids], device=DEVICE)

    def timed(f):
        f()
        t = []
        for _ in range(3):
            sync()
            t0 = time.perf_counter()
            f()
            sync()
            t.append(time.perf_counter() - t0)
        return sorted(t)[1]

    with torch.no_grad():
        fwd = timed(lambda: model(x).logits)
        # The naive sweep: one hooked forward per head (its slice of o_proj's input at the last position
        # from the clean run, last-position logits only), timed on 16 heads and extrapolated to all.
        cfg = model.config
        L, H = cfg.num_hidden_layers, cfg.num_attention_heads
        dh = getattr(cfg, "head_dim", None) or cfg.hidden_size // H
        clean = o_proj_inputs(model, x)
        heads = [(i * L // 16, (i * 5) % H) for i in range(16)]

        def one(l, h):
            patch_o_proj_input(model, x, l, h, dh, clean[l])[1].item()
        per = timed(lambda: [one(l, h) for l, h in heads]) / len(heads)
    report["llama_3_2_1b_bf16"] = {
        "tokens": 128, "ours": ours, "transformers_forward_s": fwd,
        "ratio_forward_ours_vs_transformers": ours["forward_s"] / fwd,
        "transformers_naive_sweep_s": per * L * H,
        "speedup_our_sweep_vs_transformers_naive": per * L * H / ours["sweep_s"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--probe", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: the dry run of this script (tests/gpu_check), not a check of CUDA")
    ap.add_argument("--timing-model", help="time this model folder instead of the Llama-3.2-1B shape")
    args = ap.parse_args()
    global DEVICE
    DEVICE = args.device
    report = {"torch": torch.__version__, "cuda": torch.version.cuda, "device": DEVICE,
              "gpus": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
              if DEVICE == "cuda" else []}
    try:
        import transformers
        report["transformers"] = transformers.__version__
    except ImportError:
        report["transformers"] = None
    for step in (families, sweep_parity, device_maps, timings):
        t0 = time.perf_counter()
        try:
            step(args, report)
        except Exception as e:
            report[step.__name__ + "_error"] = f"{type(e).__name__}: {e}"
        report[step.__name__ + "_s"] = time.perf_counter() - t0
    with open(os.path.join(args.out, "gpu_check.json"), "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
