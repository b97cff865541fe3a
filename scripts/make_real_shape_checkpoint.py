#!/usr/bin/env python3
"""Writes a checkpoint with random bf16 weights at the real shapes of a published model (GPT-2 small, Llama-3.2-1B,
Llama-3.1-8B), in the Hugging Face layout (config.json, model.safetensors or shards +
model.safetensors.index.json), as transformers' GPT2LMHeadModel / LlamaForCausalLM name and shape them.

The weights are random (normal(0, 0.02) for matrices and biases, ones for norm gains), so the checkpoint tests speed,
memory and loading at real sizes, never model quality. Each tensor is generated and written on its own
(a chunk of rows at a time), so memory stays at one chunk whatever the model's size: the 8B shape (15 GiB)
writes on a machine with far less RAM.

usage: make_real_shape_checkpoint.py {gpt2,llama-3.2-1b,llama-3.1-8b} OUT_DIR [--seed N] [--shard-bytes B]
Needs only PyTorch (no safetensors, no transformers). Refuses when OUT_DIR's file system lacks the space.
"""
import argparse
import json
import os
import shutil
import struct
import sys

import torch

# The published configs' shapes (config.json of openai-community/gpt2, meta-llama/Llama-3.2-1B and
# meta-llama/Llama-3.1-8B).
SHAPES = {
    "gpt2": dict(model_type="gpt2", n_embd=768, n_inner=3072, n_layer=12, n_head=12, n_positions=1024,
                 n_ctx=1024, vocab_size=50257, tie_word_embeddings=True),
    "llama-3.2-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
                         max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=True,
                         rope_scaling=dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                           original_max_position_embeddings=8192, rope_type="llama3")),
    "llama-3.1-8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=128256,
                         max_position_embeddings=131072, rope_theta=500000.0, tie_word_embeddings=False,
                         rope_scaling=dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                           original_max_position_embeddings=8192, rope_type="llama3")),
}


def config_json(shape):
    if shape.get("model_type") == "gpt2":
        c = dict(architectures=["GPT2LMHeadModel"], torch_dtype="bfloat16", activation_function="gelu_new",
                 layer_norm_epsilon=1e-5, bos_token_id=50256, eos_token_id=50256, initializer_range=0.02)
        c.update(shape)
        return c
    c = dict(architectures=["LlamaForCausalLM"], model_type="llama", torch_dtype="bfloat16",
             hidden_act="silu", rms_norm_eps=1e-5, attention_bias=False, mlp_bias=False,
             bos_token_id=128000, eos_token_id=128001, initializer_range=0.02)
    c.update(shape)
    return c


def gpt2_tensors(shape):
    """GPT2LMHeadModel's tensors (Conv1D weights stored [in, out]); the head is tied to wte."""
    d, m, L = shape["n_embd"], shape["n_inner"], shape["n_layer"]
    out = [("transformer.wte.weight", [shape["vocab_size"], d], "matrix"),
           ("transformer.wpe.weight", [shape["n_positions"], d], "matrix")]
    for l in range(L):
        p = f"transformer.h.{l}."
        out += [(p + "ln_1.weight", [d], "norm"), (p + "ln_1.bias", [d], "matrix"),
                (p + "attn.c_attn.weight", [d, 3 * d], "matrix"), (p + "attn.c_attn.bias", [3 * d], "matrix"),
                (p + "attn.c_proj.weight", [d, d], "matrix"), (p + "attn.c_proj.bias", [d], "matrix"),
                (p + "ln_2.weight", [d], "norm"), (p + "ln_2.bias", [d], "matrix"),
                (p + "mlp.c_fc.weight", [d, m], "matrix"), (p + "mlp.c_fc.bias", [m], "matrix"),
                (p + "mlp.c_proj.weight", [m, d], "matrix"), (p + "mlp.c_proj.bias", [d], "matrix")]
    out += [("transformer.ln_f.weight", [d], "norm"), ("transformer.ln_f.bias", [d], "matrix")]
    return out


def tensors(shape):
    """(name, torch shape, kind) in the order HF writes them; kind "norm" = ones, "matrix" = normal."""
    if shape.get("model_type") == "gpt2":
        return gpt2_tensors(shape)
    d, m, L = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"]
    q = shape["num_attention_heads"] * shape["head_dim"]
    kv = shape["num_key_value_heads"] * shape["head_dim"]
    V = shape["vocab_size"]
    out = [("model.embed_tokens.weight", [V, d], "matrix")]
    for l in range(L):
        p = f"model.layers.{l}."
        out += [(p + "input_layernorm.weight", [d], "norm"),
                (p + "self_attn.q_proj.weight", [q, d], "matrix"),
                (p + "self_attn.k_proj.weight", [kv, d], "matrix"),
                (p + "self_attn.v_proj.weight", [kv, d], "matrix"),
                (p + "self_attn.o_proj.weight", [d, q], "matrix"),
                (p + "post_attention_layernorm.weight", [d], "norm"),
                (p + "mlp.gate_proj.weight", [m, d], "matrix"),
                (p + "mlp.up_proj.weight", [m, d], "matrix"),
                (p + "mlp.down_proj.weight", [d, m], "matrix")]
    out.append(("model.norm.weight", [d], "norm"))
    if not shape["tie_word_embeddings"]:
        out.append(("lm_head.weight", [V, d], "matrix"))
    return out


def numel(s):
    n = 1
    for x in s:
        n *= x
    return n


def shard(specs, shard_bytes):
    """Greedy split in order, as transformers' save_pretrained does (max_shard_size)."""
    shards, cur, size = [], [], 0
    for spec in specs:
        b = numel(spec[1]) * 2
        if cur and size + b > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(spec)
        size += b
    shards.append(cur)
    return shards


def write_shard(path, specs, gen, chunk_elems=1 << 25):
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, s, _ in specs:
        b = numel(s) * 2
        header[name] = {"dtype": "BF16", "shape": s, "data_offsets": [offset, offset + b]}
        offset += b
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, s, kind in specs:
            n = numel(s)
            if kind == "norm":
                f.write(torch.ones(n, dtype=torch.bfloat16).view(torch.int16).numpy().tobytes())
                continue
            done = 0
            while done < n:
                k = min(chunk_elems, n - done)
                x = torch.randn(k, generator=gen).mul_(0.02).to(torch.bfloat16)
                f.write(x.view(torch.int16).numpy().tobytes())
                done += k
    os.replace(tmp, path)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--shard-bytes", type=int, default=5 * 10**9, help="largest shard (HF default 5 GB)")
    a = ap.parse_args()

    shape = SHAPES[a.shape]
    specs = tensors(shape)
    total = sum(numel(s) * 2 for _, s, _ in specs)
    os.makedirs(a.out, exist_ok=True)
    free = shutil.disk_usage(a.out).free
    if free < total + (1 << 30):
        sys.exit(f"{a.out}: {free / 2**30:.1f} GiB free, the {a.shape} checkpoint needs "
                 f"{total / 2**30:.1f} GiB (+1 GiB margin)")
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    gen = torch.Generator().manual_seed(a.seed)

    parts = shard(specs, a.shard_bytes)
    names = ["model.safetensors"] if len(parts) == 1 else \
        [f"model-{i + 1:05d}-of-{len(parts):05d}.safetensors" for i in range(len(parts))]
    weight_map = {}
    for fname, part in zip(names, parts):
        print(f"writing {fname} ({len(part)} tensors)", file=sys.stderr, flush=True)
        write_shard(os.path.join(a.out, fname), part, gen)
        weight_map.update({n: fname for n, _, _ in part})
    if len(parts) > 1:
        with open(os.path.join(a.out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config_json(shape), f, indent=2)
    print(json.dumps({"shape": a.shape, "out": a.out, "bytes": total, "files": names}))


if __name__ == "__main__":
    main()
