#!/usr/bin/python3
"""Independent reference forwards for HeadScope's loader tests and forward benchmark.

Run with Debian's /usr/bin/python3 (PyTorch 1.13, no `transformers`). Every forward below is written
plainly from the Hugging Face modeling files (modeling_gpt2.py, modeling_llama.py, modeling_qwen2.py,
modeling_qwen3.py, modeling_gpt_neox.py, modeling_olmo2.py) and shares no code with the C++ engine.

Sub-commands
  gen   --family F --seed S --out DIR [--dtype float32|bfloat16] [--mutate KIND:KEY] [--shards N]
        Writes a small random checkpoint in HF layout (config.json + model.safetensors, written by hand),
        a batch of token ids and the all-position logits computed in float64 from the stored weights:
          DIR/reference.json  {"family", "seed", "batch", "pos", "vocab", "tokens": [[...]], ...}
          DIR/logits.f64      raw little-endian float64, [batch, pos, vocab]
        --mutate drops a tensor (missing:KEY), adds one (extra:KEY) or reshapes one (shape:KEY) after the
        logits are computed, for the strict-loading tests. --shards N splits the weights over N files
        listed by model.safetensors.index.json.
  convert-llama2c --bin FILE --out DIR
        Writes a llama2.c .bin (v0) in HF Llama layout: q/k rows permuted from interleaved pairs to
        rotate-half exactly like transformers' convert_llama_weights_to_hf.py `permute`.
  bench-gen --out DIR [--seed S]
        A GPT-2-small-shaped random checkpoint (12 layers, 12 heads, d 768, vocab 50257) in HF layout.
  bench-torch --dir DIR --tokens N --threads T --runs R --warmup W
        Times a float32 torch forward of that checkpoint (median of R runs after W warm-ups, inference
        mode, T threads) and prints JSON.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch

F64 = torch.float64

# ----------------------------------------------------------------------------------------------------------
# safetensors, by hand: 8-byte little-endian header length, JSON header, raw little-endian bytes.

_ST_DTYPES = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16", torch.int64: "I64"}
_ST_TORCH = {v: k for k, v in _ST_DTYPES.items()}


def _tensor_bytes(t):
    t = t.contiguous()
    if t.dtype in (torch.bfloat16, torch.float16):
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        b = _tensor_bytes(t)
        header[name] = {"dtype": _ST_DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dt = _ST_TORCH[e["dtype"]]
        raw = bytearray(data[base + b:base + end])
        if dt in (torch.bfloat16, torch.float16):
            t = torch.frombuffer(raw, dtype=torch.int16).view(dt)
        else:
            t = torch.frombuffer(raw, dtype=dt)
        out[name] = t.reshape(e["shape"])
    return out


# ----------------------------------------------------------------------------------------------------------
# Building blocks, each as in the HF modeling file it names.

def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def rms_norm(x, w, eps):  # LlamaRMSNorm / Qwen2RMSNorm / Qwen3RMSNorm / Olmo2RMSNorm
    var = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(var + eps))


def gelu_new(x):  # GPT-2 "gelu_new": tanh approximation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def activation(name, x):
    if name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast"):
        return gelu_new(x)
    if name == "gelu":
        return torch.nn.functional.gelu(x)
    if name == "silu":
        return torch.nn.functional.silu(x)
    raise ValueError(name)


def rope_inv_freq(dim, theta, scaling):
    """_compute_default_rope_parameters, _compute_linear_scaling_rope_parameters (as a frequency
    division, which equals dividing the positions) and _compute_llama3_parameters."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=F64) / dim))
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type"))
    if kind == "linear":
        inv_freq = inv_freq / scaling["factor"]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        f = torch.where(wavelen > low_wl, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * f / factor + smooth * f
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        inv_freq = torch.where(medium, smoothed, f)
    return inv_freq


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(x, inv_freq, positions):
    """x [batch, head, pos, rot]: rotate-half RoPE as HF apply_rotary_pos_emb."""
    freqs = positions[:, None].to(F64) * inv_freq[None, :]  # [pos, rot/2]
    emb = torch.cat((freqs, freqs), dim=-1)  # [pos, rot]
    cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
    return x * cos + rotate_half(x) * sin


def attention(q, k, v, n_rep, window=None, scaling=None, softcap=None):
    """q [b, h, p, dh], k/v [b, kv, p, dh]: eager causal attention with repeat_kv for GQA.
    window: sliding-window attention as transformers' sliding_window_overlay (key j visible from query i
    iff i - window < j <= i). scaling: the score factor (default 1/sqrt(dh)). softcap: Gemma-2's
    cap * tanh(scores / cap), applied before the mask."""
    if n_rep > 1:
        k = k.repeat_interleave(n_rep, dim=1)
        v = v.repeat_interleave(n_rep, dim=1)
    p = q.shape[2]
    scores = (q @ k.transpose(-1, -2)) * (scaling if scaling is not None else 1.0 / math.sqrt(q.shape[-1]))
    if softcap:
        scores = torch.tanh(scores / softcap) * softcap
    i = torch.arange(p)[:, None]
    j = torch.arange(p)[None, :]
    allowed = j <= i
    if window:
        allowed = allowed & (j > i - window)
    scores = scores.masked_fill(~allowed, float("-inf"))
    probs = torch.softmax(scores.float() if scores.dtype != F64 else scores, dim=-1).to(q.dtype)
    return probs @ v  # [b, h, p, dh]


def heads(x, n, dh):  # [b, p, n*dh] -> [b, n, p, dh]
    return x.view(x.shape[0], x.shape[1], n, dh).transpose(1, 2)


def merge(x):  # [b, n, p, dh] -> [b, p, n*dh]
    return x.transpose(1, 2).reshape(x.shape[0], x.shape[2], -1)


def lin(x, w, b=None):
    return torch.nn.functional.linear(x, w, b)


# ----------------------------------------------------------------------------------------------------------
# Family forwards. W: dict of HF tensor names -> tensors (already in the compute dtype).

def forward_gpt2(cfg, W, tokens):
    pre = "transformer." if "transformer.wte.weight" in W else ""
    d, nh = cfg["n_embd"], cfg["n_head"]
    dh, eps, act = d // nh, cfg.get("layer_norm_epsilon", 1e-5), cfg.get("activation_function", "gelu_new")
    pos = torch.arange(tokens.shape[1])
    x = W[pre + "wte.weight"][tokens] + W[pre + "wpe.weight"][pos]
    for l in range(cfg["n_layer"]):
        p = f"{pre}h.{l}."
        h = layer_norm(x, W[p + "ln_1.weight"], W[p + "ln_1.bias"], eps)
        qkv = h @ W[p + "attn.c_attn.weight"] + W[p + "attn.c_attn.bias"]  # Conv1D: x @ W[in, out] + b
        q, k, v = qkv.split(d, dim=2)
        z = attention(heads(q, nh, dh), heads(k, nh, dh), heads(v, nh, dh), 1)
        x = x + merge(z) @ W[p + "attn.c_proj.weight"] + W[p + "attn.c_proj.bias"]
        h = layer_norm(x, W[p + "ln_2.weight"], W[p + "ln_2.bias"], eps)
        m = activation(act, h @ W[p + "mlp.c_fc.weight"] + W[p + "mlp.c_fc.bias"])
        x = x + m @ W[p + "mlp.c_proj.weight"] + W[p + "mlp.c_proj.bias"]
    x = layer_norm(x, W[pre + "ln_f.weight"], W[pre + "ln_f.bias"], eps)
    return x @ W.get("lm_head.weight", W[pre + "wte.weight"]).t()


def rope_params(cfg, default_theta):
    """The (theta, scaling) of the global and of the sliding layers, as transformers 5 standardises a
    config (RotaryEmbeddingConfigMixin): `rope_parameters` first (one dict, or one per layer type), then
    the top-level rope_theta / rope_scaling of transformers 4 configs."""
    rp = cfg.get("rope_parameters")
    top_theta = cfg.get("rope_theta", default_theta)
    if rp and set(rp) <= {"full_attention", "sliding_attention"}:
        full = rp.get("full_attention", {})
        slide = rp.get("sliding_attention", full)
        return ((full.get("rope_theta", top_theta), full), (slide.get("rope_theta", top_theta), slide))
    if rp:
        return ((rp.get("rope_theta", top_theta), rp),) * 2
    return ((top_theta, cfg.get("rope_scaling")),) * 2


def sliding_layers(cfg, family):
    """Per layer: the sliding window (or None). MistralConfig: every layer, default 4096, null = none.
    Qwen2Config / Qwen3Config __post_init__: only with use_sliding_window; layer_types if given, else the
    layers i >= max_window_layers (default 28)."""
    n = cfg["num_hidden_layers"]
    if family == "mistral":
        return [cfg.get("sliding_window", 4096)] * n
    if family in ("qwen2", "qwen3") and cfg.get("use_sliding_window", False):
        w = cfg.get("sliding_window", 4096)
        types = cfg.get("layer_types") or [
            "sliding_attention" if i >= cfg.get("max_window_layers", 28) else "full_attention" for i in range(n)]
        return [w if t == "sliding_attention" else None for t in types]
    return [None] * n


def forward_llama_like(cfg, W, tokens, family, z_hook=None):
    """llama / mistral / qwen2 / qwen3 / olmo2 (they differ in biases, q/k norms, norm placement and
    sliding windows). z_hook(layer, z) -> z, when given, sees (and may replace) every layer's per-head
    attention output z [batch, head, pos, d_head] before o_proj: TransformerLens' hook_z."""
    d, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    dh = cfg.get("head_dim") or d // nh
    eps = cfg["rms_norm_eps"]
    (theta, scaling), (theta_local, scaling_local) = rope_params(cfg, 10000.0)
    inv_freq = rope_inv_freq(dh, theta, scaling)
    inv_freq_local = rope_inv_freq(dh, theta_local, scaling_local)
    windows = sliding_layers(cfg, family)
    pos = torch.arange(tokens.shape[1])
    x = W["model.embed_tokens.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = p + "self_attn."
        h = x if family == "olmo2" else rms_norm(x, W[p + "input_layernorm.weight"], eps)
        q = lin(h, W[a + "q_proj.weight"], W.get(a + "q_proj.bias"))
        k = lin(h, W[a + "k_proj.weight"], W.get(a + "k_proj.bias"))
        v = lin(h, W[a + "v_proj.weight"], W.get(a + "v_proj.bias"))
        if family == "olmo2":  # Olmo2Attention: RMSNorm over the whole projection, before the head split
            q = rms_norm(q, W[a + "q_norm.weight"], eps)
            k = rms_norm(k, W[a + "k_norm.weight"], eps)
        q, k, v = heads(q, nh, dh), heads(k, nkv, dh), heads(v, nkv, dh)
        if family == "qwen3":  # Qwen3Attention: RMSNorm over d_head of every head, before RoPE
            q = rms_norm(q, W[a + "q_norm.weight"], eps)
            k = rms_norm(k, W[a + "k_norm.weight"], eps)
        f = inv_freq_local if windows[l] else inv_freq
        q, k = apply_rope(q, f, pos), apply_rope(k, f, pos)
        z = attention(q, k, v, nh // nkv, window=windows[l])
        if z_hook is not None:
            z = z_hook(l, z)
        o = lin(merge(z), W[a + "o_proj.weight"], W.get(a + "o_proj.bias"))
        if family == "olmo2":
            x = x + rms_norm(o, W[p + "post_attention_layernorm.weight"], eps)
            h = x
        else:
            x = x + o
            h = rms_norm(x, W[p + "post_attention_layernorm.weight"], eps)
        m = lin(activation(cfg.get("hidden_act", "silu"), lin(h, W[p + "mlp.gate_proj.weight"])) *
                lin(h, W[p + "mlp.up_proj.weight"]), W[p + "mlp.down_proj.weight"])
        if family == "olmo2":
            m = rms_norm(m, W[p + "post_feedforward_layernorm.weight"], eps)
        x = x + m
    x = rms_norm(x, W["model.norm.weight"], eps)
    return x @ W.get("lm_head.weight", W["model.embed_tokens.weight"]).t()


def forward_gpt_neox(cfg, W, tokens):
    d, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    dh, eps = d // nh, cfg.get("layer_norm_eps", 1e-5)
    rp = cfg.get("rope_parameters") or {}
    rot = int(dh * rp.get("partial_rotary_factor", cfg.get("partial_rotary_factor", cfg.get("rotary_pct", 0.25))))
    (theta, scaling), _ = rope_params(cfg, cfg.get("rotary_emb_base", 10000))
    inv_freq = rope_inv_freq(rot, theta, scaling)
    pos = torch.arange(tokens.shape[1])
    x = W["gpt_neox.embed_in.weight"][tokens]
    for l in range(cfg["num_hidden_layers"]):
        p = f"gpt_neox.layers.{l}."

        def attn(h):
            qkv = lin(h, W[p + "attention.query_key_value.weight"], W[p + "attention.query_key_value.bias"])
            qkv = qkv.view(qkv.shape[0], qkv.shape[1], nh, 3 * dh).permute(0, 2, 1, 3)  # [b, h, p, 3*dh]
            q, k, v = qkv[..., :dh], qkv[..., dh:2 * dh], qkv[..., 2 * dh:]
            q = torch.cat((apply_rope(q[..., :rot], inv_freq, pos), q[..., rot:]), dim=-1)
            k = torch.cat((apply_rope(k[..., :rot], inv_freq, pos), k[..., rot:]), dim=-1)
            return lin(merge(attention(q, k, v, 1)), W[p + "attention.dense.weight"], W[p + "attention.dense.bias"])

        def mlp(h):
            u = activation(cfg.get("hidden_act", "gelu"),
                           lin(h, W[p + "mlp.dense_h_to_4h.weight"], W[p + "mlp.dense_h_to_4h.bias"]))
            return lin(u, W[p + "mlp.dense_4h_to_h.weight"], W[p + "mlp.dense_4h_to_h.bias"])

        ln1 = lambda t: layer_norm(t, W[p + "input_layernorm.weight"], W[p + "input_layernorm.bias"], eps)
        ln2 = lambda t: layer_norm(t, W[p + "post_attention_layernorm.weight"],
                                   W[p + "post_attention_layernorm.bias"], eps)
        if cfg.get("use_parallel_residual", True):
            x = x + attn(ln1(x)) + mlp(ln2(x))
        else:
            x = x + attn(ln1(x))
            x = x + mlp(ln2(x))
    x = layer_norm(x, W["gpt_neox.final_layer_norm.weight"], W["gpt_neox.final_layer_norm.bias"], eps)
    return x @ W.get("embed_out.weight", W["gpt_neox.embed_in.weight"]).t()


GEMMA_DEFAULTS = {
    # Gemma2Config
    "gemma2": dict(vocab_size=256000, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                   num_attention_heads=8, num_key_value_heads=4, head_dim=256, hidden_activation="gelu_pytorch_tanh",
                   rms_norm_eps=1e-6, rope_theta=10000.0, attention_bias=False, query_pre_attn_scalar=256,
                   sliding_window=4096, final_logit_softcapping=30.0, attn_logit_softcapping=50.0,
                   tie_word_embeddings=True),
    # Gemma3TextConfig
    "gemma3_text": dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                        num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                        hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, rope_theta=1_000_000.0,
                        attention_bias=False, query_pre_attn_scalar=256, sliding_window=4096,
                        final_logit_softcapping=None, attn_logit_softcapping=None, rope_local_base_freq=10_000.0,
                        sliding_window_pattern=6, tie_word_embeddings=True),
}


def gemma_text_config(cfg):
    """(text config with the config class defaults filled in, weight prefix, lm_head key)."""
    if cfg["model_type"] == "gemma3":
        text = dict(GEMMA_DEFAULTS["gemma3_text"], **cfg["text_config"])
        return text, cfg["_prefix"], cfg["_lm_head"]
    return dict(GEMMA_DEFAULTS[cfg["model_type"]], **cfg), "model.", "lm_head.weight"


def forward_gemma(cfg, W, tokens):
    """gemma2 / gemma3_text / gemma3 (its text model), from modeling_gemma2.py and modeling_gemma3.py."""
    gemma3 = cfg["model_type"] != "gemma2"
    c, pre, lm_head = gemma_text_config(cfg)
    d, nh, nkv, dh, eps = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
                           c["rms_norm_eps"])
    n = c["num_hidden_layers"]

    def norm(x, w):  # Gemma2RMSNorm / Gemma3RMSNorm: (1 + w), in float32 in HF (float64 here)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 + w)

    types = c.get("layer_types") or [
        "sliding_attention" if (i + 1) % (c["sliding_window_pattern"] if gemma3 else 2) else "full_attention"
        for i in range(n)]
    if gemma3 and not (c.get("rope_parameters") and set(c["rope_parameters"]) <= {"full_attention", "sliding_attention"}):
        (theta, scaling), _ = rope_params(c, 1_000_000.0)
        local = (c["rope_local_base_freq"], None)  # Gemma-3's local layers: default RoPE, their own base
    else:
        (theta, scaling), local = rope_params(c, c["rope_theta"])
    inv = {"full_attention": rope_inv_freq(dh, theta, scaling), "sliding_attention": rope_inv_freq(dh, *local)}
    pos = torch.arange(tokens.shape[1])
    emb = W[pre + "embed_tokens.weight"]
    x = emb[tokens] * torch.tensor(d ** 0.5, dtype=emb.dtype)  # the normalizer in the model dtype
    for l in range(n):
        p = f"{pre}layers.{l}."
        a = p + "self_attn."
        h = norm(x, W[p + "input_layernorm.weight"])
        q = heads(lin(h, W[a + "q_proj.weight"], W.get(a + "q_proj.bias")), nh, dh)
        k = heads(lin(h, W[a + "k_proj.weight"], W.get(a + "k_proj.bias")), nkv, dh)
        v = heads(lin(h, W[a + "v_proj.weight"], W.get(a + "v_proj.bias")), nkv, dh)
        if gemma3:
            q, k = norm(q, W[a + "q_norm.weight"]), norm(k, W[a + "k_norm.weight"])
        q, k = apply_rope(q, inv[types[l]], pos), apply_rope(k, inv[types[l]], pos)
        window = c["sliding_window"] if types[l] == "sliding_attention" else None
        z = attention(q, k, v, nh // nkv, window=window, scaling=c["query_pre_attn_scalar"] ** -0.5,
                      softcap=c.get("attn_logit_softcapping"))
        o = lin(merge(z), W[a + "o_proj.weight"], W.get(a + "o_proj.bias"))
        x = x + norm(o, W[p + "post_attention_layernorm.weight"])
        h = norm(x, W[p + "pre_feedforward_layernorm.weight"])
        m = lin(activation(c["hidden_activation"], lin(h, W[p + "mlp.gate_proj.weight"])) *
                lin(h, W[p + "mlp.up_proj.weight"]), W[p + "mlp.down_proj.weight"])
        x = x + norm(m, W[p + "post_feedforward_layernorm.weight"])
    x = norm(x, W[pre + "norm.weight"])
    logits = x @ W.get(lm_head, emb).t()
    cap = c.get("final_logit_softcapping")
    return torch.tanh(logits / cap) * cap if cap else logits


def forward(cfg, W, tokens):
    family = cfg["model_type"]
    with torch.no_grad():
        if family == "gpt2":
            return forward_gpt2(cfg, W, tokens)
        if family == "gpt_neox":
            return forward_gpt_neox(cfg, W, tokens)
        if family in ("gemma2", "gemma3_text", "gemma3"):
            return forward_gemma(cfg, W, tokens)
        return forward_llama_like(cfg, W, tokens, family)


# ----------------------------------------------------------------------------------------------------------
# Small random checkpoints. Scales keep activations O(1) and logits O(1-10).

VARIANTS = {
    # GPT-2: "transformer." prefix, the attn.bias / attn.masked_bias buffers old checkpoints carry, tied.
    "gpt2": dict(model_type="gpt2", architectures=["GPT2LMHeadModel"], n_embd=64, n_layer=2, n_head=4,
                 vocab_size=97, n_positions=64, n_inner=None, activation_function="gelu_new",
                 layer_norm_epsilon=1e-5),
    # GPT-2 without the prefix, exact GELU, explicit n_inner, untied lm_head.
    "gpt2-noprefix": dict(model_type="gpt2", n_embd=48, n_layer=2, n_head=3, vocab_size=80, n_positions=32,
                          n_inner=96, activation_function="gelu", layer_norm_epsilon=1e-5,
                          tie_word_embeddings=False),
    # Llama-3.1 style: GQA 4/2, rope_scaling llama3 with wavelengths on both sides of the thresholds.
    "llama": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=64, intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=101,
                  max_position_embeddings=128, rms_norm_eps=1e-5, rope_theta=500000.0, tie_word_embeddings=False,
                  hidden_act="silu",
                  rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=64)),
    # Llama with tied embeddings, linear rope scaling ("type" spelling), no GQA.
    "llama-tied": dict(model_type="llama", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=4, vocab_size=70, max_position_embeddings=64, rms_norm_eps=1e-6,
                       rope_theta=10000.0, tie_word_embeddings=True, rope_scaling=dict(type="linear", factor=2.0)),
    # Mistral with MQA and an explicit head_dim (heads * head_dim != hidden_size).
    "mistral": dict(model_type="mistral", architectures=["MistralForCausalLM"], hidden_size=48,
                    intermediate_size=80, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
                    head_dim=16, vocab_size=90, max_position_embeddings=64, rms_norm_eps=1e-5,
                    rope_theta=1000000.0, sliding_window=4096, tie_word_embeddings=False),
    # Qwen2: q/k/v biases, GQA, tied.
    "qwen2": dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=64, intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=99,
                  max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=True),
    # Qwen3: per-head q/k RMSNorm, head_dim 16 with hidden 32 and 4 heads, GQA, untied.
    "qwen3": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=32, intermediate_size=64,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=88,
                  max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False),
    # Pythia style: partial rotary 0.25, parallel residual, exact GELU, untied.
    "gpt_neox": dict(model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], hidden_size=64,
                     intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=95,
                     max_position_embeddings=64, rotary_pct=0.25, rotary_emb_base=10000, layer_norm_eps=1e-5,
                     use_parallel_residual=True, hidden_act="gelu", tie_word_embeddings=False),
    # Sequential residual, rotary 0.5, with the attention.bias / masked_bias / rotary_emb.inv_freq buffers.
    "gpt_neox-seq": dict(model_type="gpt_neox", hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=3, vocab_size=75, max_position_embeddings=64, rotary_pct=0.5,
                         rotary_emb_base=10000, layer_norm_eps=1e-5, use_parallel_residual=False,
                         hidden_act="gelu", tie_word_embeddings=False),
    # OLMo-2: post-norms, full-width q/k norm, GQA.
    "olmo2": dict(model_type="olmo2", architectures=["Olmo2ForCausalLM"], hidden_size=64, intermediate_size=96,
                  num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=100,
                  max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=500000.0, tie_word_embeddings=False),
    # Llama-3.x shaped, larger: 6 layers, 8 query heads on 2 kv heads of 64 dims, SwiGLU 4x, llama3 RoPE
    # scaling, a 2000-token vocabulary. For the bf16-vs-fp32 tolerance (the tiny variants are too small
    # to accumulate realistic rounding).
    "llama-shape": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=512,
                        intermediate_size=1408, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=2,
                        head_dim=64, vocab_size=2000, max_position_embeddings=256, rms_norm_eps=1e-5,
                        rope_theta=500000.0, tie_word_embeddings=False, hidden_act="silu",
                        rope_scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                          original_max_position_embeddings=64)),
    # Sliding windows far shorter than the 20-token prompts. Mistral: every layer.
    "mistral-window": dict(model_type="mistral", architectures=["MistralForCausalLM"], hidden_size=48,
                           intermediate_size=80, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                           vocab_size=90, max_position_embeddings=64, rms_norm_eps=1e-5, rope_theta=10000.0,
                           sliding_window=5, tie_word_embeddings=False),
    # Qwen2 with use_sliding_window: layers >= max_window_layers (here layers 1 and 2 of 3) slide.
    "qwen2-window": dict(model_type="qwen2", architectures=["Qwen2ForCausalLM"], hidden_size=64,
                         intermediate_size=96, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
                         vocab_size=99, max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=1000000.0,
                         use_sliding_window=True, sliding_window=6, max_window_layers=1, tie_word_embeddings=True),
    # Qwen3 with explicit layer_types (transformers >= 4.53) and a transformers-5 rope_parameters.
    "qwen3-layer-types": dict(model_type="qwen3", architectures=["Qwen3ForCausalLM"], hidden_size=32,
                              intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                              head_dim=16, vocab_size=88, max_position_embeddings=64, rms_norm_eps=1e-6,
                              use_sliding_window=True, sliding_window=4, max_window_layers=28,
                              layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
                              rope_parameters=dict(rope_type="default", rope_theta=1000000.0)),
    # Llama-3.1 as transformers 5 writes it: rope_theta and the llama3 scaling inside rope_parameters.
    "llama-v5": dict(model_type="llama", architectures=["LlamaForCausalLM"], hidden_size=64, intermediate_size=96,
                     num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=101,
                     max_position_embeddings=128, rms_norm_eps=1e-5, tie_word_embeddings=False, hidden_act="silu",
                     rope_parameters=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                                          high_freq_factor=4.0, original_max_position_embeddings=64)),
    # GPT-NeoX as transformers 5 writes it: partial_rotary_factor and rope_theta inside rope_parameters.
    "gpt_neox-v5": dict(model_type="gpt_neox", architectures=["GPTNeoXForCausalLM"], hidden_size=64,
                        intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, vocab_size=95,
                        max_position_embeddings=64, layer_norm_eps=1e-5, use_parallel_residual=True,
                        hidden_act="gelu", tie_word_embeddings=False,
                        rope_parameters=dict(rope_type="default", rope_theta=5000.0, partial_rotary_factor=0.5)),
    # Gemma-2: layers 0 and 2 slide (window 5), soft-caps small enough to bite on random weights,
    # query_pre_attn_scalar != head_dim, heads * head_dim != hidden, GQA, tied.
    "gemma2": dict(model_type="gemma2", architectures=["Gemma2ForCausalLM"], hidden_size=48, intermediate_size=96,
                   num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2, head_dim=16, vocab_size=97,
                   max_position_embeddings=64, rms_norm_eps=1e-6, rope_theta=10000.0, query_pre_attn_scalar=24,
                   sliding_window=5, attn_logit_softcapping=3.0, final_logit_softcapping=8.0,
                   hidden_activation="gelu_pytorch_tanh", hidden_act="gelu_pytorch_tanh", tie_word_embeddings=True),
    # Gemma-3 1B style (gemma3_text): q/k norms, sliding_window_pattern 3 (layers 0, 1, 3 slide), local RoPE
    # base 10000 for those, global base 1e6 with linear scaling, no soft-caps.
    "gemma3_text": dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_size=48,
                        intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=1,
                        head_dim=16, vocab_size=97, max_position_embeddings=64, rms_norm_eps=1e-6,
                        rope_theta=1000000.0, rope_local_base_freq=10000.0, rope_scaling=dict(rope_type="linear",
                        factor=8.0), sliding_window=4, sliding_window_pattern=3, query_pre_attn_scalar=16,
                        attn_logit_softcapping=None, final_logit_softcapping=None,
                        hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=True),
    # The same as transformers 5 writes it: layer_types and rope_parameters per layer type, no rope_theta.
    "gemma3-v5": dict(model_type="gemma3_text", architectures=["Gemma3ForCausalLM"], hidden_size=48,
                      intermediate_size=96, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                      head_dim=16, vocab_size=97, max_position_embeddings=64, rms_norm_eps=1e-6, sliding_window=4,
                      layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                      rope_parameters=dict(full_attention=dict(rope_type="linear", factor=4.0, rope_theta=500000.0),
                                           sliding_attention=dict(rope_type="default", rope_theta=20000.0)),
                      query_pre_attn_scalar=16, hidden_activation="gelu_pytorch_tanh", tie_word_embeddings=False),
    # Gemma-3 image-text (Gemma3ForConditionalGeneration, transformers < 4.52 layout): the text model under
    # language_model.model.*, text_config with most fields left to the Gemma3TextConfig defaults, and
    # vision-tower / projector tensors the text forward does not use.
    "gemma3": dict(model_type="gemma3", architectures=["Gemma3ForConditionalGeneration"], mm_tokens_per_image=4,
                   boi_token_index=95, eoi_token_index=96, image_token_index=94, _prefix="language_model.model.",
                   _lm_head="language_model.lm_head.weight",
                   text_config=dict(model_type="gemma3_text", hidden_size=48, intermediate_size=96,
                                    num_hidden_layers=3, num_attention_heads=2, num_key_value_heads=1, head_dim=32,
                                    vocab_size=97, sliding_window=3, sliding_window_pattern=2,
                                    rope_scaling=dict(rope_type="linear", factor=8.0)),
                   vision_config=dict(model_type="siglip_vision_model", hidden_size=8)),
    # The transformers >= 4.52 layout: model.language_model.*, model.vision_tower.*.
    "gemma3-new-layout": dict(model_type="gemma3", architectures=["Gemma3ForConditionalGeneration"],
                              _prefix="model.language_model.", _lm_head="lm_head.weight",
                              text_config=dict(hidden_size=48, intermediate_size=96, num_hidden_layers=2,
                                               num_attention_heads=2, num_key_value_heads=2, head_dim=16,
                                               vocab_size=97, sliding_window=3)),
}


def random_weights(cfg, g):
    fam = cfg["model_type"]

    def w(out, inp):  # Linear [out, in], std 1/sqrt(in)
        return torch.randn(out, inp, generator=g) / math.sqrt(inp)

    def norm(n):
        return 1.0 + 0.1 * torch.randn(n, generator=g)

    def bias(n):
        return 0.1 * torch.randn(n, generator=g)

    W = {}
    if fam == "gpt2":
        pre = "" if cfg.get("_noprefix") else "transformer."
        d, V, P = cfg["n_embd"], cfg["vocab_size"], cfg["n_positions"]
        m = cfg.get("n_inner") or 4 * d
        W[pre + "wte.weight"] = 0.5 * torch.randn(V, d, generator=g)
        W[pre + "wpe.weight"] = 0.3 * torch.randn(P, d, generator=g)
        for l in range(cfg["n_layer"]):
            p = f"{pre}h.{l}."
            W[p + "ln_1.weight"], W[p + "ln_1.bias"] = norm(d), bias(d)
            W[p + "attn.c_attn.weight"], W[p + "attn.c_attn.bias"] = w(3 * d, d).t().contiguous(), bias(3 * d)
            W[p + "attn.c_proj.weight"], W[p + "attn.c_proj.bias"] = w(d, d).t().contiguous(), bias(d)
            W[p + "ln_2.weight"], W[p + "ln_2.bias"] = norm(d), bias(d)
            W[p + "mlp.c_fc.weight"], W[p + "mlp.c_fc.bias"] = w(m, d).t().contiguous(), bias(m)
            W[p + "mlp.c_proj.weight"], W[p + "mlp.c_proj.bias"] = w(d, m).t().contiguous(), bias(d)
            if not cfg.get("_noprefix"):  # buffers of older checkpoints (causal mask, -1e4)
                W[p + "attn.bias"] = torch.ones(1, 1, P, P).tril()
                W[p + "attn.masked_bias"] = torch.tensor(-1e4)
        W[pre + "ln_f.weight"], W[pre + "ln_f.bias"] = norm(d), bias(d)
        if not cfg.get("tie_word_embeddings", True):
            W["lm_head.weight"] = 0.5 * torch.randn(V, d, generator=g)
        return W
    if fam == "gpt_neox":
        d, V, nh = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
        m, P = cfg["intermediate_size"], cfg["max_position_embeddings"]
        W["gpt_neox.embed_in.weight"] = torch.randn(V, d, generator=g)
        for l in range(cfg["num_hidden_layers"]):
            p = f"gpt_neox.layers.{l}."
            W[p + "input_layernorm.weight"], W[p + "input_layernorm.bias"] = norm(d), bias(d)
            W[p + "post_attention_layernorm.weight"], W[p + "post_attention_layernorm.bias"] = norm(d), bias(d)
            W[p + "attention.query_key_value.weight"] = w(3 * d, d)
            W[p + "attention.query_key_value.bias"] = bias(3 * d)
            W[p + "attention.dense.weight"], W[p + "attention.dense.bias"] = w(d, d), bias(d)
            W[p + "mlp.dense_h_to_4h.weight"], W[p + "mlp.dense_h_to_4h.bias"] = w(m, d), bias(m)
            W[p + "mlp.dense_4h_to_h.weight"], W[p + "mlp.dense_4h_to_h.bias"] = w(d, m), bias(d)
            if not cfg.get("use_parallel_residual", True):
                W[p + "attention.bias"] = torch.ones(1, 1, P, P).tril()
                W[p + "attention.masked_bias"] = torch.tensor(-1e9)
                rot = int(d // nh * cfg["rotary_pct"])
                W[p + "attention.rotary_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, rot, 2).float() / rot))
        W["gpt_neox.final_layer_norm.weight"], W["gpt_neox.final_layer_norm.bias"] = norm(d), bias(d)
        W["embed_out.weight"] = 2.0 * w(V, d)
        return W
    if fam in ("gemma2", "gemma3_text", "gemma3"):
        return random_gemma_weights(cfg, g, w)
    d, V, nh = cfg["hidden_size"], cfg["vocab_size"], cfg["num_attention_heads"]
    nkv = cfg.get("num_key_value_heads") or nh
    dh = cfg.get("head_dim") or d // nh
    m = cfg["intermediate_size"]
    W["model.embed_tokens.weight"] = torch.randn(V, d, generator=g)
    for l in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = p + "self_attn."
        if fam != "olmo2":
            W[p + "input_layernorm.weight"] = norm(d)
        W[a + "q_proj.weight"], W[a + "k_proj.weight"] = 1.5 * w(nh * dh, d), 1.5 * w(nkv * dh, d)
        W[a + "v_proj.weight"], W[a + "o_proj.weight"] = w(nkv * dh, d), w(d, nh * dh)
        if fam == "qwen2":
            W[a + "q_proj.bias"], W[a + "k_proj.bias"], W[a + "v_proj.bias"] = bias(nh * dh), bias(nkv * dh), bias(nkv * dh)
        if fam == "qwen3":
            W[a + "q_norm.weight"], W[a + "k_norm.weight"] = 2.0 * norm(dh), 2.0 * norm(dh)
        if fam == "olmo2":
            W[a + "q_norm.weight"], W[a + "k_norm.weight"] = 2.0 * norm(nh * dh), 2.0 * norm(nkv * dh)
            W[p + "post_feedforward_layernorm.weight"] = norm(d)
        W[p + "post_attention_layernorm.weight"] = norm(d)
        W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = w(m, d), w(m, d)
        W[p + "mlp.down_proj.weight"] = w(d, m)
        if l == 0 and fam != "olmo2":  # some exports keep this buffer
            W[a + "rotary_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, dh, 2).float() / dh))
    W["model.norm.weight"] = norm(d)
    if not cfg.get("tie_word_embeddings", False):
        W["lm_head.weight"] = 3.0 * w(V, d)
    else:
        W["model.embed_tokens.weight"] *= 0.5
    return W


def random_gemma_weights(cfg, g, w):
    """Gemma norm weights are stored as w in (1 + w); embeddings are scaled by sqrt(hidden) in the forward,
    so they are drawn small (and large enough that the tied unembedding gives logits of order 5)."""
    c, pre, lm_head = gemma_text_config(cfg)
    d, V, nh, nkv, dh, m = (c["hidden_size"], c["vocab_size"], c["num_attention_heads"], c["num_key_value_heads"],
                            c["head_dim"], c["intermediate_size"])

    def gain(n):
        return 0.1 * torch.randn(n, generator=g)

    W = {pre + "embed_tokens.weight": 5.0 * torch.randn(V, d, generator=g) / math.sqrt(d)}
    for l in range(c["num_hidden_layers"]):
        p = f"{pre}layers.{l}."
        a = p + "self_attn."
        W[a + "q_proj.weight"], W[a + "k_proj.weight"] = 1.5 * w(nh * dh, d), 1.5 * w(nkv * dh, d)
        W[a + "v_proj.weight"], W[a + "o_proj.weight"] = w(nkv * dh, d), w(d, nh * dh)
        if cfg["model_type"] != "gemma2":
            W[a + "q_norm.weight"], W[a + "k_norm.weight"] = gain(dh), gain(dh)
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                  "post_feedforward_layernorm"):
            W[p + n + ".weight"] = gain(d)
        W[p + "mlp.gate_proj.weight"], W[p + "mlp.up_proj.weight"] = w(m, d), w(m, d)
        W[p + "mlp.down_proj.weight"] = w(d, m)
    W[pre + "norm.weight"] = gain(d)
    if not c["tie_word_embeddings"]:
        W[lm_head] = 3.0 * w(V, d)
    if cfg["model_type"] == "gemma3":  # vision tower and projector: present in the file, unused by text
        vis = "vision_tower." if pre.startswith("language_model.") else "model.vision_tower."
        proj = "multi_modal_projector." if pre.startswith("language_model.") else "model.multi_modal_projector."
        W[vis + "vision_model.embeddings.patch_embedding.weight"] = torch.randn(8, 3, 2, 2, generator=g)
        W[proj + "mm_input_projection_weight"] = torch.randn(8, d, generator=g)
    return W


def write_ref(out, family, seed, cfg, tokens, logits, extra=None):
    with open(os.path.join(out, "logits.f64"), "wb") as f:
        f.write(logits.to(F64).contiguous().numpy().astype("<f8").tobytes())
    ref = dict(family=family, seed=seed, batch=tokens.shape[0], pos=tokens.shape[1], vocab=logits.shape[-1],
               tokens=tokens.tolist(), logits_abs_max=float(logits.abs().max()),
               logits_std=float(logits.std()))
    ref.update(extra or {})
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)


def cmd_gen(args):
    cfg = json.loads(json.dumps(VARIANTS[args.family]))
    fam = cfg["model_type"]
    if args.family == "gpt2-noprefix":
        cfg["_noprefix"] = True
    g = torch.Generator().manual_seed(args.seed)
    W = random_weights(cfg, g)
    store = torch.bfloat16 if args.dtype == "bfloat16" else torch.float32
    W = {k: v.to(store).contiguous() for k, v in W.items()}
    cfg.pop("_noprefix", None)
    cfg["torch_dtype"] = args.dtype
    os.makedirs(args.out, exist_ok=True)
    vocab = gemma_text_config(cfg)[0]["vocab_size"] if fam == "gemma3" else cfg["vocab_size"]
    tokens = torch.randint(0, vocab, (args.batch, args.pos), generator=g)
    logits = forward(cfg, {k: v.to(F64) for k, v in W.items()}, tokens)
    for k in ("_prefix", "_lm_head"):  # the reference's own notes on the Gemma-3 weight layouts
        cfg.pop(k, None)
    for m in args.mutate or []:
        kind, key = m.split(":", 1)
        if kind == "missing":
            del W[key]
        elif kind == "extra":
            W[key] = torch.zeros(3, dtype=store)
        elif kind == "shape":
            W[key] = torch.cat([W[key], W[key][:1]], dim=0)
        else:
            raise SystemExit("unknown mutation " + m)
    cfg_out = {k: v for k, v in cfg.items() if v is not None}
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg_out, f, indent=1)
    if args.shards > 1:  # model-0000i-of-0000n.safetensors + model.safetensors.index.json, as HF shards
        names = list(W)
        n = args.shards
        weight_map = {}
        for i in range(n):
            fname = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
            part = {k: W[k] for k in names[i::n]}
            write_safetensors(os.path.join(args.out, fname), part)
            weight_map.update({k: fname for k in part})
        with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=1)
    else:
        write_safetensors(os.path.join(args.out, "model.safetensors"), W)
    write_ref(args.out, args.family, args.seed, cfg, tokens, logits)
    print(json.dumps(dict(out=args.out, logits_abs_max=float(logits.abs().max()), logits_std=float(logits.std()))))


# ----------------------------------------------------------------------------------------------------------
# llama2.c .bin (v0) -> HF Llama layout.

def permute(w, n_heads, dim1, dim2):
    """transformers/models/llama/convert_llama_weights_to_hf.py: interleaved pairs -> rotate-half rows."""
    return w.view(n_heads, dim1 // n_heads // 2, 2, dim2).transpose(1, 2).reshape(dim1, dim2)


def cmd_convert_llama2c(args):
    with open(args.bin, "rb") as f:
        data = f.read()
    dim, hid, nl, nh, nkv, vocab, seq = struct.unpack("<7i", data[:28])
    shared = vocab > 0
    vocab = abs(vocab)
    flat = torch.frombuffer(bytearray(data[28:]), dtype=torch.float32)
    off = 0

    def take(*shape):
        nonlocal off
        n = 1
        for s in shape:
            n *= s
        t = flat[off:off + n].reshape(shape).clone()
        off += n
        return t

    dh = dim // nh
    tok = take(vocab, dim)
    rms_att, wq = take(nl, dim), take(nl, nh * dh, dim)
    wk, wv = take(nl, nkv * dh, dim), take(nl, nkv * dh, dim)
    wo, rms_ffn = take(nl, dim, nh * dh), take(nl, dim)
    w1, w2, w3 = take(nl, hid, dim), take(nl, dim, hid), take(nl, hid, dim)
    rms_final = take(dim)
    off += seq * dh  # legacy freq_cis_real / freq_cis_imag
    W = {"model.embed_tokens.weight": tok}
    for l in range(nl):
        p = f"model.layers.{l}."
        W[p + "input_layernorm.weight"] = rms_att[l]
        W[p + "self_attn.q_proj.weight"] = permute(wq[l], nh, nh * dh, dim)
        W[p + "self_attn.k_proj.weight"] = permute(wk[l], nkv, nkv * dh, dim)
        W[p + "self_attn.v_proj.weight"] = wv[l]
        W[p + "self_attn.o_proj.weight"] = wo[l]
        W[p + "post_attention_layernorm.weight"] = rms_ffn[l]
        W[p + "mlp.gate_proj.weight"] = w1[l]
        W[p + "mlp.down_proj.weight"] = w2[l]
        W[p + "mlp.up_proj.weight"] = w3[l]
    W["model.norm.weight"] = rms_final
    if not shared:
        W["lm_head.weight"] = take(vocab, dim)
    cfg = dict(architectures=["LlamaForCausalLM"], model_type="llama", hidden_size=dim, intermediate_size=hid,
               num_hidden_layers=nl, num_attention_heads=nh, num_key_value_heads=nkv, vocab_size=vocab,
               max_position_embeddings=seq, rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=shared,
               bos_token_id=1, eos_token_id=2, hidden_act="silu", torch_dtype="float32")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    write_safetensors(os.path.join(args.out, "model.safetensors"), W)
    print(json.dumps(dict(out=args.out, tensors=len(W))))


# ----------------------------------------------------------------------------------------------------------
# Benchmark: GPT-2 small shape.

BENCH_CFG = dict(model_type="gpt2", architectures=["GPT2LMHeadModel"], n_embd=768, n_layer=12, n_head=12,
                 vocab_size=50257, n_positions=1024, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                 tie_word_embeddings=True, torch_dtype="float32")


def bench_tokens(n, vocab):
    """The benchmark's prompt, also built by bench_forward.cpp: t_i = (7919 i + 13) mod vocab."""
    return torch.tensor([[(7919 * i + 13) % vocab for i in range(n)]], dtype=torch.int64)


def cmd_bench_gen(args):
    cfg = dict(BENCH_CFG)
    g = torch.Generator().manual_seed(args.seed)
    W = random_weights(cfg, g)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    write_safetensors(os.path.join(args.out, "model.safetensors"), W)
    print(json.dumps(dict(out=args.out, tensors=len(W))))


def cmd_bench_torch(args):
    torch.set_num_threads(args.threads)
    with open(os.path.join(args.dir, "config.json")) as f:
        cfg = json.load(f)
    W = read_safetensors(os.path.join(args.dir, "model.safetensors"))
    W = {k: v.float().contiguous() for k, v in W.items()}
    tokens = bench_tokens(args.tokens, cfg["vocab_size"])
    times = []
    with torch.inference_mode():
        for i in range(args.warmup + args.runs):
            t0 = time.perf_counter()
            logits = forward(cfg, W, tokens)
            dt = time.perf_counter() - t0
            if i >= args.warmup:
                times.append(dt)
    times.sort()
    print(json.dumps(dict(median_s=times[len(times) // 2], min_s=times[0], runs=args.runs, threads=args.threads,
                          tokens=args.tokens, last_logits_head=logits[0, -1, :8].double().tolist())))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--family", required=True, choices=sorted(VARIANTS))
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--out", required=True)
    g.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    g.add_argument("--batch", type=int, default=2)
    g.add_argument("--pos", type=int, default=20)
    g.add_argument("--mutate", action="append")
    g.add_argument("--shards", type=int, default=1)
    c = sub.add_parser("convert-llama2c")
    c.add_argument("--bin", required=True)
    c.add_argument("--out", required=True)
    b = sub.add_parser("bench-gen")
    b.add_argument("--out", required=True)
    b.add_argument("--seed", type=int, default=0)
    t = sub.add_parser("bench-torch")
    t.add_argument("--dir", required=True)
    t.add_argument("--tokens", type=int, default=128)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--runs", type=int, default=10)
    t.add_argument("--warmup", type=int, default=2)
    args = ap.parse_args()
    {"gen": cmd_gen, "convert-llama2c": cmd_convert_llama2c, "bench-gen": cmd_bench_gen,
     "bench-torch": cmd_bench_torch}[args.cmd](args)


if __name__ == "__main__":
    main()
