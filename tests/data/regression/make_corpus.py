#!/usr/bin/env python3
"""Writes the regression corpus of hostile and broken inputs (issue 25) next to this script.

Every file is small (well under 1 MB) and deterministic. Rerun after adding a case; fuzz findings are
added by hand under <reader>/ (libFuzzer names them crash-<sha1>) and need no entry here.

Layout:
  <reader>/<case>        one input per file, replayed through that reader's fuzz target (fuzz/)
  cases.json             the CLI cases: the headscope-cli arguments that open each input, and the
                         words the one-line error must contain (test_hostile_inputs runs them)

In cases.json, "{case:NAME}" is the path of a materialised case folder or file, "{tmp}" a scratch folder,
"{toy}" the embedded toy model folder; a case's "files" map names inside its folder to corpus files
("@toy/NAME" links the toy model's file).
"""
import hashlib
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
TOY = os.path.join(HERE, "..", "..", "..", "resources", "models", "toy-icl")


def write(rel, data):
    path = os.path.join(HERE, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return rel


def nested(depth, inner="1"):
    return "[" * depth + inner + "]" * depth


TOY_CONFIG = json.load(open(os.path.join(TOY, "config.json")))
TOY_TOKENIZER = json.load(open(os.path.join(TOY, "tokenizer.json")))


def config_text(**changes):
    c = dict(TOY_CONFIG)
    raw = {}
    for k, v in changes.items():
        if isinstance(v, RawJson):
            raw[k] = v.text
            c[k] = "@@" + k + "@@"
        else:
            c[k] = v
    text = json.dumps(c, indent=1)
    for k, t in raw.items():
        text = text.replace('"@@%s@@"' % k, t)
    return text


class RawJson:
    def __init__(self, text):
        self.text = text


# ---------------------------------------------------------------------------------------------------
# safetensors


def safetensors(header_text, data=b""):
    h = header_text.encode()
    while (8 + len(h)) % 8:
        h += b" "
    return struct.pack("<Q", len(h)) + h + data


def session_file(session_text, checksum=True, flip=False):
    meta = {"headscope.session": session_text}
    if checksum:
        meta["headscope.session.sha256"] = hashlib.sha256(session_text.encode() + b"\0").hexdigest()
    if flip:
        meta["headscope.session"] = session_text.replace('"tab": 1', '"tab": 3')
    return safetensors(json.dumps({"__metadata__": meta}))


# ---------------------------------------------------------------------------------------------------
# GGUF


def gguf_str(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf_kv(key, typ, value):
    out = gguf_str(key) + struct.pack("<I", typ)
    return out + gguf_value(typ, value)


def gguf_value(typ, value):
    fmt = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<B", 10: "<Q", 11: "<q", 12: "<d"}
    if typ == 8:
        return gguf_str(value)
    if typ == 9:
        et, items = value
        out = struct.pack("<IQ", et, len(items))
        for it in items:
            out += gguf_value(et, it)
        return out
    return struct.pack(fmt[typ], value)


U32, I32, F32, BOOL, STR, ARR, U64 = 4, 5, 6, 7, 8, 9, 10


def gguf(kvs, tensors=(), data=b""):
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for k in kvs:
        out += gguf_kv(*k)
    for name, dims, typ, off in tensors:
        out += gguf_str(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", typ, off)
    while len(out) % 32:
        out += b"\0"
    return out + data


def llama_meta(**over):
    base = {
        "general.architecture": (STR, "llama"),
        "llama.block_count": (U32, 2),
        "llama.embedding_length": (U32, 64),
        "llama.feed_forward_length": (U32, 172),
        "llama.attention.head_count": (U32, 8),
        "llama.context_length": (U32, 512),
        "llama.attention.layer_norm_rms_epsilon": (F32, 1e-5),
        "llama.rope.freq_base": (F32, 10000.0),
    }
    base.update(over)
    return [(k, t, v) for k, (t, v) in base.items()]


def vocab_meta(**over):
    base = {
        "tokenizer.ggml.model": (STR, "llama"),
        "tokenizer.ggml.tokens": (ARR, (STR, ["<unk>", "<s>", "</s>", "a", "b"])),
        "tokenizer.ggml.scores": (ARR, (F32, [0.0, 0.0, 0.0, -1.0, -2.0])),
        "tokenizer.ggml.bos_token_id": (U32, 1),
    }
    base.update(over)
    return [(k, t, v) for k, (t, v) in base.items()]


# ---------------------------------------------------------------------------------------------------

cases = []


def case(name, args, expect, files=None, note=""):
    cases.append({"name": name, "args": args, "expect": expect, "files": files or {}, "note": note})


def model_folder_case(name, config, expect, note):
    rel = write("config/" + name + ".json", config)
    case(name, ["info", "{case:%s}" % name], ["config.json"] + expect,
         {"config.json": rel, "model.safetensors": "@toy/model.safetensors"}, note)


# config.json
model_folder_case("config_deep_wrong_type", config_text(hidden_size=RawJson(nested(80000))),
                  ["nested deeper than 256"], "a size field of the wrong type nested 80,000 deep")
model_folder_case("config_layers_5m", config_text(num_hidden_layers=5000000),
                  ["num_hidden_layers", "1024"], "5 million layers in a 500-byte file")
model_folder_case("config_heads_wrap", config_text(num_attention_heads=4294967304),
                  ["num_attention_heads", "4294967304", "1024"], "loads as 8 heads when read as int")
model_folder_case("config_heads_2p31", config_text(num_attention_heads=2**31),
                  ["num_attention_heads", "2147483648"], "prints as -2147483648 when read as int")
model_folder_case("config_eps_negative", config_text(rms_norm_eps=-1e-5),
                  ["rms_norm_eps", "finite number > 0"], "a negative norm epsilon gives NaN logits")
model_folder_case("config_eps_inf", config_text(rms_norm_eps=RawJson("1e999")),
                  ["number overflow"], "1e999 would be infinity")
model_folder_case("config_rope_zero", config_text(rope_theta=0),
                  ["rope_theta"], "a RoPE base of 0 gives NaN angles")
model_folder_case("config_vocab_huge", config_text(vocab_size=1500000000),
                  ["vocab_size", "4194304"], "a vocabulary of 1.5e9")
model_folder_case("config_bos_2p40", config_text(bos_token_id=2**40),
                  ["bos_token_id"], "a bos id of 2^40")
model_folder_case("config_string_size", config_text(hidden_size="128"),
                  ["hidden_size", "integer"], "a size as a string")
model_folder_case("config_duplicate_key", config_text()[:-2] + ',\n "hidden_size": 64\n}',
                  ["appears twice"], "a repeated key would silently win")
model_folder_case("config_malformed", config_text()[:200], ["malformed JSON"], "a truncated config.json")

# safetensors checkpoints beside a valid config.json
def checkpoint_case(name, st_bytes, expect, note):
    rel = write("safetensors/" + name + ".safetensors", st_bytes)
    case(name, ["info", "{case:%s}" % name], ["model.safetensors"] + expect,
         {"config.json": "@toy/config.json", "model.safetensors": rel}, note)


checkpoint_case("st_nested_offsets",
                safetensors('{"a": {"dtype": "F32", "shape": [1], "data_offsets": %s}}' % nested(60000, "0, 4")),
                ["nested deeper than 16"], "data_offsets nested 60,000 deep")
checkpoint_case("st_duplicate_names",
                safetensors('{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                            '"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}', b"\0" * 8),
                ["appears twice"], "the same tensor name twice (last would win)")
checkpoint_case("st_header_runs_past", struct.pack("<Q", 1 << 40) + b"{}", ["header length"],
                "a header length past the end of the file")

# Shard indexes pointing outside the model folder
for name, shard in [("index_absolute", "/etc/passwd"), ("index_parent", "../../../../etc/passwd")]:
    rel = write("safetensors/" + name + ".json", json.dumps({"weight_map": {"model.embed_tokens.weight": shard}}))
    case(name, ["info", "{case:%s}" % name], ["model.safetensors.index.json", "not a file inside the model folder"],
         {"config.json": "@toy/config.json", "model.safetensors.index.json": rel},
         "a shard index naming a file outside the model folder")

# tokenizer.json / tokenizer_config.json / vocab.json
def tokenizer_case(name, text, expect, note, extra=None, file_name="tokenizer.json", kind="tokenizer"):
    rel = write(kind + "/" + name + "." + file_name.split(".")[-1], text)
    files = {file_name: rel}
    files.update(extra or {})
    case(name, ["tokenize", "--tokenizer", "{case:%s}/%s" % (name, file_name), "--text", "a b"], expect, files, note)


tok = dict(TOY_TOKENIZER)
deep = dict(tok)
deep["normalizer"] = "@@N@@"
seq = '{"type": "NFC"}'
for _ in range(20000):
    seq = '{"type": "Sequence", "normalizers": [' + seq + ']}'
tokenizer_case("tok_deep_normalizer", json.dumps(deep).replace('"@@N@@"', seq),
               ["tokenizer.json", "nested deeper than 256"], "a normalizer Sequence nested 20,000 deep")
big_id = json.loads(json.dumps(tok))
big_id["model"]["vocab"]["zzz"] = 1500000000
tokenizer_case("tok_id_1p5e9", json.dumps(big_id), ["tokenizer.json", "model.vocab", "1500000000", "4194303"],
               "one id of 1.5e9 sizes the id table at ~48 GB")
big_id["model"]["vocab"]["zzz"] = 2**31 - 1
tokenizer_case("tok_id_2p31m1", json.dumps(big_id), ["tokenizer.json", "2147483647"], "id 2^31-1 overflows an int")
wrong = json.loads(json.dumps(tok))
wrong["pre_tokenizer"] = {"type": 7}
tokenizer_case("tok_wrong_type", json.dumps(wrong), ["tokenizer.json", "pre_tokenizer.type", "expected a string"],
               "a type_error.302 before")
wrong = json.loads(json.dumps(tok))
wrong["added_tokens"][0]["special"] = "yes"
tokenizer_case("tok_added_wrong_type", json.dumps(wrong), ["tokenizer.json", "added_tokens[0].special"],
               "a bool given as a string")
tokenizer_case("tok_config_wrong_type", json.dumps(tok), ["tokenizer_config.json", "bos_token"],
               "tokenizer_config.json bos_token as a number",
               {"tokenizer_config.json": write("tokenizer/tok_config_wrong_type.config.json", '{"bos_token": 5}')})
tokenizer_case("tok_config_deep", json.dumps(tok), ["tokenizer_config.json", "nested deeper"],
               "tokenizer_config.json nested 70,000 deep",
               {"tokenizer_config.json": write("tokenizer/tok_config_deep.config.json",
                                               '{"added_tokens_decoder": %s}' % nested(70000))})
vocab = {"a": 0, "b": 1, "ab": 2, "<|endoftext|>": 3, "z": 1500000000}
tokenizer_case("vocab_id_1p5e9", json.dumps(vocab), ["vocab.json", "1500000000", "4194303"],
               "a vocab.json id of 1.5e9", {"merges.txt": write("vocab/vocab_id_1p5e9.merges.txt", "#version: 0.2\na b\n")},
               file_name="vocab.json", kind="vocab")
tokenizer_case("vocab_deep", '{"a": %s}' % nested(90000), ["vocab.json", "nested deeper"],
               "a vocab.json nested 90,000 deep", {"merges.txt": write("vocab/vocab_deep.merges.txt", "#version: 0.2\na b\n")},
               file_name="vocab.json", kind="vocab")

# GGUF: models (info) and vocabularies (tokenize --tokenizer)
def gguf_model_case(name, data, expect, note):
    rel = write("gguf/" + name + ".gguf", data)
    case(name, ["info", "{case:%s}/m.gguf" % name], ["m.gguf"] + expect, {"m.gguf": rel}, note)


gguf_model_case("gguf_blocks_5m", gguf(llama_meta(**{"llama.block_count": (U32, 5000000)})),
                ["block_count", "1024"], "5 million blocks in a 500-byte file")
gguf_model_case("gguf_embedding_2p40", gguf(llama_meta(**{"llama.embedding_length": (U64, 2**40)})),
                ["embedding_length", "1099511627776"], "2^40 read as 0 when cast to int")
gguf_model_case("gguf_bos_2p40", gguf(llama_meta(**{"tokenizer.ggml.bos_token_id": (U64, 2**40)})),
                ["bos_token_id", "1099511627776", "4194303"], "a bos id of 2^40 became token 0")
gguf_model_case("gguf_eps_nan", gguf(llama_meta(**{"llama.attention.layer_norm_rms_epsilon": (F32, float("nan"))})),
                ["norm epsilon", "nan"], "a NaN epsilon gives NaN logits")
gguf_model_case("gguf_rope_negative", gguf(llama_meta(**{"llama.rope.freq_base": (F32, -10000.0)})),
                ["RoPE base"], "a negative RoPE base gives NaN logits")
gguf_model_case("gguf_weights_too_big", gguf(llama_meta(**{"llama.block_count": (U32, 1000),
                                                            "llama.embedding_length": (U32, 8192),
                                                            "llama.attention.head_count": (U32, 64),
                                                            "llama.feed_forward_length": (U32, 28672)})),
                ["parameters", "bytes"], "a header declaring 0.9 T parameters in 500 bytes")


def gguf_vocab_case(name, data, expect, note):
    rel = write("gguf/" + name + ".gguf", data)
    case(name, ["tokenize", "--tokenizer", "{case:%s}/t.gguf" % name, "--text", "a b"], ["t.gguf"] + expect,
         {"t.gguf": rel}, note)


gguf_vocab_case("gguf_tokens_wrong_type", gguf(vocab_meta(**{"tokenizer.ggml.tokens": (ARR, (U32, [1, 2, 3]))})),
                ["tokenizer.ggml.tokens", "expected a string"], "a type_error.302 before")
gguf_vocab_case("gguf_model_wrong_type", gguf(vocab_meta(**{"tokenizer.ggml.model": (U32, 3)})),
                ["tokenizer.ggml.model", "expected a string"], "a type_error.302 before")
gguf_vocab_case("gguf_vocab_bos_2p40", gguf(vocab_meta(**{"tokenizer.ggml.bos_token_id": (U64, 2**40)})),
                ["bos_token_id", "4194303"], "a bos id of 2^40 became token 0")

# Sessions (export reads them)
def session_case(name, data, expect, note):
    rel = write("session/" + name + ".hscope", data)
    case(name, ["export", "{case:%s}/s.hscope" % name, "--csv", "{tmp}/csv"], ["s.hscope"] + expect,
         {"s.hscope": rel}, note)


def session_json(**parts):
    s = {"format_version": 1, "model": {}, "tokenizer": {}, "task": {}, "runs": [], "selections": {},
         "interventions": [], "view_state": {"tab": 1}}
    text = json.dumps(s)
    for k, v in parts.items():
        text = text.replace('"%s": %s' % (k, json.dumps(s[k])), '"%s": %s' % (k, v), 1)
    return text


for part, depth in [("view_state", 90000), ("model", 90000), ("task", 90000), ("selections", 90000)]:
    session_case("session_deep_" + part, session_file(session_json(**{part: '{"a": %s}' % nested(depth)})),
                 ["nested deeper than 256"], "the session's %s nested %d deep" % (part, depth))
run = ('[{"id": "r", "method": "m", "provenance": {"method": "m", "options": %s}, "grids": [], "curves": [], '
       '"tables": [], "tensors": [], "summary": {}}]' % ('{"a": %s}' % nested(90000)))
session_case("session_deep_provenance", session_file(session_json(runs=run)), ["nested deeper than 256"],
             "provenance.options nested 90,000 deep")
grid = ('[{"id": "r", "method": "m", "grids": [{"id": "g", "shape": [1000, 1048576], "values": [%s]}], '
        '"curves": [], "tables": [], "tensors": [], "summary": {}}]' % ", ".join(["[]"] * 1000))
session_case("session_grid_shape_huge", session_file(session_json(runs=grid)), ["values row 0", "1048576"],
             "a grid shape of 1000 x 1048576 with empty rows sized an 8 GB matrix before the rows were read")
session_case("session_checksum_mismatch", session_file(session_json(), flip=True),
             ["damaged", "SHA-256"], "a changed session exports altered numbers without a checksum")

# Datasets (fv toy --task FILE)
def dataset_case(name, text, expect, note, ext="json"):
    rel = write("dataset/" + name + "." + ext, text)
    case(name, ["fv", "toy", "--task", "{case:%s}/d.%s" % (name, ext), "--n", "2", "--out", "{tmp}/fv.hscope"],
         ["d." + ext] + expect, {"d." + ext: rel}, note)


dataset_case("dataset_deep", nested(100000), ["nested deeper than 256"], "a dataset nested 100,000 deep")
dataset_case("dataset_wrong_type", '[{"input": 5, "output": "b"}, {"input": "a", "output": "b"}]',
             ["input", "expected a string"], "an input that is a number")

# llama2.c checkpoints and tokenizers
def llama2c_case(name, data, expect, note):
    rel = write("llama2c/" + name + ".bin", data)
    case(name, ["info", "{case:%s}/m.bin" % name, "--tokenizer", "{toy}/tokenizer.json"], ["m.bin"] + expect,
         {"m.bin": rel}, note)


llama2c_case("llama2c_dim_huge", struct.pack("<7i", 1 << 20, 172, 5, 8, 4, 512, 512), ["dim must be in 1..65536"],
             "a dim of 2^20")
llama2c_case("llama2c_layers_negative", struct.pack("<7i", 64, 172, -5, 8, 4, 512, 512), ["n_layers"],
             "a negative layer count")
llama2c_case("llama2c_truncated", struct.pack("<7i", 64, 172, 5, 8, 4, 512, 512) + b"\0" * 1000,
             ["header implies"], "a header with 1000 bytes of weights")


def tokbin_case(name, data, expect, note):
    rel = write("tokbin/" + name + ".bin", data)
    case(name, ["tokenize", "--tokenizer", "{case:%s}/tok.bin" % name, "--text", "a b"], ["tok.bin"] + expect,
         {"tok.bin": rel}, note)


tokbin_case("tokbin_maxlen_huge", struct.pack("<i", 1 << 30), ["max_token_length"], "a max token length of 2^30")
tokbin_case("tokbin_length_negative", struct.pack("<ifi", 8, 0.0, -3), ["length -3"], "a negative piece length")
tokbin_case("tokbin_score_nan", struct.pack("<ifi", 8, float("nan"), 1) + b"a", ["non-finite score"], "a NaN score")

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump({"format_version": 1, "cases": cases}, f, indent=1)
    f.write("\n")
print(len(cases), "cases")
