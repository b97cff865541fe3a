#!/usr/bin/env python3
"""Plain PyTorch baseline of bench_real_shapes: a Llama or GPT-2 checkpoint in HF layout (config.json + safetensors,
sharded or not) read with nothing but the standard library and torch, cast to the compute dtype tensor by
tensor, and one forward over the given tokens (all positions' logits, float32), as a researcher's own
minimal script would do it. Prints one JSON object: load and forward seconds (median of --runs after one
warm-up), peak RSS, and a checksum of the logits.

usage: real_shapes_torch.py DIR {bfloat16,float32} --tokens T [--runs N] [--threads K]
"""
import argparse
import json
import math
import mmap
import os
import resource
import struct
import time

import torch

ST = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32}


def load(folder, dtype):
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) \
        else ["model.safetensors"]
    W = {}
    for name in files:
        with open(os.path.join(folder, name), "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            n = struct.unpack("<Q", m[:8])[0]
            header = json.loads(m[8:8 + n])
            for key, e in header.items():
                if key == "__metadata__":
                    continue
                a, b = e["data_offsets"]
                raw = bytearray(m[8 + n + a:8 + n + b])  # one tensor's bytes at a time
                t = torch.frombuffer(raw, dtype=torch.int16 if e["dtype"] in ("BF16", "F16") else torch.float32)
                t = t.view(ST[e["dtype"]]).reshape(e["shape"])
                W[key] = t.to(dtype) if t.dtype != dtype else t.clone()
                del raw
            m.close()
    return W


def inv_freq(cfg):
    dh = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    f = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, dh, 2, dtype=torch.int64).float() / dh))
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "llama3":  # transformers' _compute_llama3_parameters
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / f
        f = torch.where(wavelen > old / lo, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * f / factor + smooth * f
        medium = ~(wavelen < old / hi) * ~(wavelen > old / lo)
        f = torch.where(medium, smoothed, f)
    return f


def rms(x, w, eps):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rotate(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat((-x[..., h:], x[..., :h]), -1) * sin


def forward(W, cfg, tokens, freq):
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg["hidden_size"]
    dh = cfg.get("head_dim") or d // H
    eps = cfg["rms_norm_eps"]
    B, P = tokens.shape
    x = W["model.embed_tokens.weight"][tokens]
    dt = x.dtype
    ang = torch.arange(P).float()[:, None] * freq[None, :]
    emb = torch.cat((ang, ang), -1)
    cos, sin = emb.cos().to(dt)[None, None], emb.sin().to(dt)[None, None]
    mask = torch.full((P, P), float("-inf")).triu(1)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms(x, W[p + "input_layernorm.weight"], eps)
        q = (h @ W[p + "self_attn.q_proj.weight"].T).view(B, P, H, dh).transpose(1, 2)
        k = (h @ W[p + "self_attn.k_proj.weight"].T).view(B, P, KV, dh).transpose(1, 2)
        v = (h @ W[p + "self_attn.v_proj.weight"].T).view(B, P, KV, dh).transpose(1, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
        s = (q @ k.transpose(-1, -2)).float() / math.sqrt(dh) + mask
        a = (torch.softmax(s, -1).to(dt) @ v).transpose(1, 2).reshape(B, P, H * dh)
        x = x + a @ W[p + "self_attn.o_proj.weight"].T
        h = rms(x, W[p + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(h @ W[p + "mlp.gate_proj.weight"].T) * (h @ W[p + "mlp.up_proj.weight"].T)
        x = x + g @ W[p + "mlp.down_proj.weight"].T
    x = rms(x, W["model.norm.weight"], eps)
    head = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    return (x @ head.T).float()


def gpt2_forward(W, cfg, tokens, _freq):
    """GPT2LMHeadModel's forward: learned positions, pre-LayerNorm, Conv1D weights [in, out], gelu_new."""
    H, d, eps = cfg["n_head"], cfg["n_embd"], cfg.get("layer_norm_epsilon", 1e-5)
    dh = d // H
    B, P = tokens.shape
    p0 = "transformer."
    x = W[p0 + "wte.weight"][tokens] + W[p0 + "wpe.weight"][:P]
    dt = x.dtype
    mask = torch.full((P, P), float("-inf")).triu(1)

    def ln(x, name):
        return torch.nn.functional.layer_norm(x.float(), (d,), W[name + ".weight"].float(),
                                              W[name + ".bias"].float(), eps).to(dt)

    for l in range(cfg["n_layer"]):
        p = f"{p0}h.{l}."
        h = ln(x, p + "ln_1")
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]
        q, k, v = (t.view(B, P, H, dh).transpose(1, 2) for t in qkv.split(d, -1))
        s = (q @ k.transpose(-1, -2)).float() / math.sqrt(dh) + mask
        a = (torch.softmax(s, -1).to(dt) @ v).transpose(1, 2).reshape(B, P, d)
        x = x + a @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = ln(x, p + "ln_2")
        g = torch.nn.functional.gelu(h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + g @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = ln(x, p0 + "ln_f")
    return (x @ W[p0 + "wte.weight"].T).float()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("dtype", choices=["bfloat16", "float32"])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dtype = getattr(torch, a.dtype)
    cfg = json.load(open(os.path.join(a.dir, "config.json")))
    with torch.inference_mode():
        t0 = time.perf_counter()
        W = load(a.dir, dtype)
        load_s = time.perf_counter() - t0
        gpt2 = cfg.get("model_type") == "gpt2"
        freq = None if gpt2 else inv_freq(cfg)
        run = gpt2_forward if gpt2 else forward
        tokens = torch.tensor([[(7919 * i + 13) % cfg["vocab_size"] for i in range(a.tokens)]])
        logits = run(W, cfg, tokens, freq)  # warm-up
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            logits = run(W, cfg, tokens, freq)
            times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"load_s": load_s, "forward_s": times[len(times) // 2], "forward_runs": times,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "logits_last_argmax": int(logits[0, -1].argmax()),
                      "logits_abs_mean": float(logits.abs().mean())}))


if __name__ == "__main__":
    main()
