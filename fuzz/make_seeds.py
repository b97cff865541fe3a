#!/usr/bin/env python3
"""Seed corpora for the fuzz targets: real files from ../shared/data and the toy model, small valid files
written here (every format needs a few inputs that get far into its reader), and the regression corpus.

usage: make_seeds.py OUT_DIR   (writes OUT_DIR/<target>/...; existing files are kept, so a corpus grows)
"""
import hashlib
import json
import os
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared", "data")
TOY = os.path.join(ROOT, "resources", "models", "toy-icl")
REGRESSION = os.path.join(ROOT, "tests", "data", "regression")
OUT = sys.argv[1]


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def copy(target, src, name=None, prefix=b"", limit=None):
    if not os.path.exists(src):
        print("seed missing, skipped:", src)
        return
    data = open(src, "rb").read()
    if limit:
        data = data[:limit]
    put(target, name or os.path.basename(src), prefix + data)


def regression(target, folder):
    d = os.path.join(REGRESSION, folder)
    if os.path.isdir(d):
        for f in sorted(os.listdir(d)):
            copy(target, os.path.join(d, f), "regression-" + f)


def safetensors(tensors, metadata=None):
    """tensors: list of (name, dtype, shape, raw bytes)."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    off = 0
    data = b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data += raw
    h = json.dumps(header, separators=(",", ":")).encode()
    while (8 + len(h)) % 8:
        h += b" "
    return struct.pack("<Q", len(h)) + h + data


def f32(values):
    return struct.pack("<%df" % len(values), *values)


# safetensors
put("safetensors", "small.safetensors",
    safetensors([("a", "F32", [2, 3], f32([1, 2, 3, 4, 5, 6])), ("b", "F16", [4], b"\x00\x3c" * 4),
                 ("c", "BF16", [2], b"\x80\x3f" * 2), ("d", "I64", [1], struct.pack("<q", 7)),
                 ("e", "U8", [0], b"")], {"format": "pt"}))
put("safetensors", "one.safetensors", safetensors([("w", "F32", [1], f32([0.5]))]))
with open(os.path.join(TOY, "model.safetensors"), "rb") as f:  # the toy header with a few tensors' bytes
    n = struct.unpack("<Q", f.read(8))[0]
    header = f.read(n)
    put("safetensors", "toy-header.safetensors", struct.pack("<Q", n) + header + f.read(4096))
regression("safetensors", "safetensors")

# GGUF: the real stories260K file and small ones


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors=(), data=b""):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k, typ, payload in kvs:
        out += gguf_str(k) + struct.pack("<I", typ) + payload
    for name, dims, typ, off in tensors:
        out += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", typ, off)
    while len(out) % 32:
        out += b"\0"
    return out + data


def arr(et, items):
    if et == 8:
        return struct.pack("<IQ", et, len(items)) + b"".join(gguf_str(s) for s in items)
    fmt = {6: "<f", 5: "<i", 4: "<I"}[et]
    return struct.pack("<IQ", et, len(items)) + b"".join(struct.pack(fmt, v) for v in items)


tokens = ["<unk>", "<s>", "</s>", "\u2581a", "\u2581b", "a", "b", "\u2581ab"]
vocab_kvs = [("tokenizer.ggml.model", 8, gguf_str("llama")), ("tokenizer.ggml.tokens", 9, arr(8, tokens)),
             ("tokenizer.ggml.scores", 9, arr(6, [0.0, 0.0, 0.0, -1, -2, -3, -4, -0.5])),
             ("tokenizer.ggml.token_type", 9, arr(5, [2, 3, 3, 1, 1, 1, 1, 1])),
             ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1))]
d, hid, L, H, V = 8, 16, 1, 2, len(tokens)
shapes = [("token_embd.weight", [d, V]), ("output_norm.weight", [d]), ("blk.0.attn_norm.weight", [d]),
          ("blk.0.attn_q.weight", [d, d]), ("blk.0.attn_k.weight", [d, d]), ("blk.0.attn_v.weight", [d, d]),
          ("blk.0.attn_output.weight", [d, d]), ("blk.0.ffn_norm.weight", [d]), ("blk.0.ffn_gate.weight", [d, hid]),
          ("blk.0.ffn_up.weight", [d, hid]), ("blk.0.ffn_down.weight", [hid, d])]
tinfo, data, off = [], b"", 0
for name, dims in shapes:
    n = 1
    for x in dims:
        n *= x
    tinfo.append((name, dims, 0, off))
    data += f32([0.01 * (i % 7) for i in range(n)])
    off += 4 * n
    while off % 32:
        data += b"\0"
        off += 1
model_kvs = [("general.architecture", 8, gguf_str("llama")), ("llama.block_count", 4, struct.pack("<I", L)),
             ("llama.embedding_length", 4, struct.pack("<I", d)),
             ("llama.feed_forward_length", 4, struct.pack("<I", hid)),
             ("llama.attention.head_count", 4, struct.pack("<I", H)),
             ("llama.context_length", 4, struct.pack("<I", 32)),
             ("llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5))]
put("gguf", "tiny-model.gguf", gguf(model_kvs + vocab_kvs, tinfo, data))
put("gguf", "vocab-only.gguf", gguf(vocab_kvs))
copy("gguf", os.path.join(SHARED, "models", "stories260K", "stories260K.gguf"))
regression("gguf", "gguf")

# llama2.c: a tiny valid v0 file and the real one
dim, hidden, layers, heads, kv, vocab, seq = 8, 16, 1, 2, 2, 16, 8
floats = vocab * dim + layers * dim + layers * (dim * dim * 2 + 2 * kv * (dim // heads) * dim) + layers * dim
floats += layers * 3 * hidden * dim + dim + 2 * seq * (dim // heads // 2)
put("llama2c", "tiny-v0.bin", struct.pack("<7i", dim, hidden, layers, heads, kv, vocab, seq) + f32([0.1] * floats))
copy("llama2c", os.path.join(SHARED, "models", "stories260K", "stories260K.bin"))
regression("llama2c", "llama2c")

# config.json of every family
copy("config_json", os.path.join(TOY, "config.json"), "toy-config.json")
configs = {
    "gpt2": {"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100, "n_positions": 64},
    "neox": {"model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
             "intermediate_size": 256, "vocab_size": 100, "rotary_pct": 0.25, "use_parallel_residual": True},
    "qwen3": {"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128, "vocab_size": 100,
              "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}},
    "olmo2": {"architectures": ["Olmo2ForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "eos_token_id": [1, 2]},
}
for name, c in configs.items():
    put("config_json", name + ".json", json.dumps(c, indent=1))
regression("config_json", "config")

# tokenizer.json: the toy's (WordLevel), a byte-level BPE and a SentencePiece-style one
copy("tokenizer_json", os.path.join(TOY, "tokenizer.json"), "toy-tokenizer.json")
byte_level = {"model": {"type": "BPE", "vocab": {"H": 0, "e": 1, "l": 2, "o": 3, "\u0120": 4, "w": 5, "He": 6,
                                                 "ll": 7, "\u0120w": 8}, "merges": ["H e", "l l", "\u0120 w"]},
              "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": "\\p{N}+"}, "behavior": "Isolated"},
                  {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True}]},
              "added_tokens": [{"id": 9, "content": "<s>", "special": True}],
              "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
                                                                         {"Sequence": {"id": "A"}}]}}
put("tokenizer_json", "byte-level.json", json.dumps(byte_level))
sp = {"model": {"type": "BPE", "byte_fallback": True, "unk_token": "<unk>",
                "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x41>": 3, "\u2581": 4, "a": 5, "\u2581a": 6},
                "merges": [["\u2581", "a"]]},
      "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                                                         {"type": "Replace", "pattern": {"String": " "},
                                                          "content": "\u2581"}]},
      "added_tokens": [{"id": 1, "content": "<s>", "special": True}]}
put("tokenizer_json", "sentencepiece.json", json.dumps(sp))
regression("tokenizer_json", "tokenizer")

# vocab.json (+ "\n#merges\n" + merges.txt)
put("vocab_json", "small.json", json.dumps({"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3}) + "\n#merges\n#version: 0.2\na b\n")
gpt2 = os.path.join(SHARED, "tokenizers", "gpt2")
if os.path.exists(os.path.join(gpt2, "vocab.json")):
    merges = open(os.path.join(gpt2, "merges.txt"), "rb").read().split(b"\n")[:2000]
    put("vocab_json", "gpt2.json", open(os.path.join(gpt2, "vocab.json"), "rb").read() + b"\n#merges\n" + b"\n".join(merges))
regression("vocab_json", "vocab")

# tok.bin
copy("tok_bin", os.path.join(SHARED, "models", "stories260K", "tok512.bin"))
regression("tok_bin", "tokbin")

# datasets: the first byte picks .json, .csv, .tsv or sniffed text
fv = os.path.join(SHARED, "datasets", "function_vectors", "abstractive")
for name in ["antonym.json", "sentiment.json", "country-capital.json"]:
    copy("dataset", os.path.join(fv, name), prefix=b"\0", limit=20000)
put("dataset", "pairs.csv", b"\1input,output\nhot,cold\n\"a, b\",\"c \"\"d\"\"\"\n")
put("dataset", "pairs.tsv", b"\2hot\tcold\nup\tdown\n")
copy("dataset", os.path.join(SHARED, "datasets", "classification", "sst2", "stsa.binary.dev"), "sst2.txt",
     prefix=b"\3", limit=4000)
copy("dataset", os.path.join(SHARED, "datasets", "classification", "trec", "test.txt"), "trec.txt", prefix=b"\3",
     limit=4000)
for f in sorted(os.listdir(os.path.join(REGRESSION, "dataset"))):
    copy("dataset", os.path.join(REGRESSION, "dataset", f), "regression-" + f, prefix=b"\0")

# sessions: a run with a grid, a curve and a table, one tensor, and the checksum


def session(text, tensors):
    h = hashlib.sha256()
    h.update(text.encode() + b"\0")
    for name, dtype, shape, raw in sorted(tensors):
        h.update(name.encode() + b"\0" + dtype.encode() + b"\0" + json.dumps(shape, separators=(",", ":")).encode() + b"\0")
        h.update(raw)
    return safetensors(tensors, {"headscope.session": text, "headscope.session.sha256": h.hexdigest()})


prov = {"method": "m", "model": "toy", "task": "t", "created": "2025-01-01T00:00:00Z", "seed": 1, "n_prompts": 2,
        "options": {}}
run = {"id": "r", "method": "m", "options": {}, "summary": {"acc": 0.5},
       "grids": [{"id": "g", "name": "G", "unit": "u", "shape": [2, 2], "values": [[1, "NaN"], [0.5, -1]],
                  "provenance": prov}],
       "curves": [{"id": "c", "name": "C", "x_label": "k", "y_label": "acc", "x": [1, 2],
                   "series": [{"id": "s", "y": [0.1, "Infinity"]}], "provenance": prov}],
       "tables": [{"id": "t", "name": "T", "columns": ["a", "b"], "rows": [["x", 1], ["y", None]],
                   "provenance": prov}],
       "tensors": ["r/v"]}
text = json.dumps({"format_version": 1, "model": {"path": "toy"}, "tokenizer": {}, "task": {"dataset": "toy:copy_a"},
                   "runs": [run], "selections": {"heads": [[0, 1]]},
                   "interventions": [{"site": "blocks.0.attn.hook_z", "heads": [1], "op": "zero", "tensor": "r/v"}],
                   "view_state": {"tab": 0}}, separators=(",", ":"))
put("session", "run.hscope", session(text, [("r/v", "F32", [4], f32([1, 2, 3, 4]))]))
put("session", "empty.hscope", session(json.dumps({"format_version": 1}), []))
regression("session", "session")
print("seeds in", OUT)
