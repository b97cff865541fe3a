"""The model families the reference suite holds HeadScope against, as transformers builds and saves them.

Every variant is a small random-init model (vocab <= 1000, 2-4 layers, d_model 64-128) built from its
transformers config class with a fixed seed and eager attention, saved the way the variant names (most:
`save_pretrained` in safetensors, as transformers 5 writes it). The weights are perturbed so that every
weight matters: 1-D parameters (norm scales, biases) get 0.1 * randn added, so a loader that drops a bias or
reads a norm as all-ones shows, and `initializer_range` is chosen so logits are of magnitude ~1-10 and
attention patterns are neither uniform nor one-hot.

Interface (other suites import it; keep it stable):
  VARIANTS                      variant name -> spec (config class, kwargs, save style, init range)
  build(variant, out_dir, dtype="float32", seed=0) -> model (eval mode, in dtype, saved into out_dir)
  layers(model), n_layers(model), n_heads(model), head_dim(model)
  attn_out_proj(model, layer)   the module whose input is the concatenated head outputs [.., heads*d_head]
"""

import json
import os

import torch
import transformers
from safetensors.torch import save_file, save_model

# Shapes shared by the variants: small enough for CI, large enough for GQA groups and partial rotary.
VOCAB = 512
D = 64
FF = 128
LAYERS = 2
HEADS = 4
MAX_POS = 128
# The sliding window of the sliding variants; the test prompt is longer (hf_forward.py: 24 positions).
WINDOW = 8


def _llama(**over):
    kw = dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=LAYERS,
              num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=MAX_POS,
              rms_norm_eps=1e-5, tie_word_embeddings=False,
              rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    kw.update(over)
    return kw


# Llama-3 frequency scaling with an original context short enough that all three bands (kept, smoothed,
# divided by factor) occur among the 8 frequency pairs of a 16-wide head.
_LLAMA3_ROPE = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
                "high_freq_factor": 4.0, "original_max_position_embeddings": 32}

# spec keys:
#   config     transformers config class name
#   kwargs     its arguments
#   save       "pretrained"      save_pretrained (safetensors), transformers 5 style config.json
#              "v4config"        save_pretrained, then config.json rewritten in the transformers-4 style:
#                                rope_theta + rope_scaling instead of rope_parameters (gpt_neox:
#                                rotary_emb_base + rotary_pct; gemma3_text: rope_local_base_freq for the
#                                sliding layers, sliding_window_pattern instead of layer_types); checked
#                                by reloading it with transformers
#              "lm_head_alias"   tied: only lm_head.weight stored, metadata
#                                {"model.embed_tokens.weight": "lm_head.weight"} (safetensors.torch.save_model,
#                                what transformers 4.41 wrote)
#              "embed_alias"     tied: only model.embed_tokens.weight stored, metadata
#                                {"lm_head.weight": "model.embed_tokens.weight"}
#   init       initializer_range (logit magnitude ~1-10 at these widths)
#   tied       whether the input and output embeddings are one tensor
#   v4_type_key  (v4config) rope_scaling says "type" instead of "rope_type", as configs before 4.43 did
VARIANTS = {
    "gpt2": dict(config="GPT2Config", save="pretrained", init=0.15, tied=True,
                 kwargs=dict(vocab_size=VOCAB, n_positions=MAX_POS, n_embd=D, n_layer=LAYERS, n_head=HEADS,
                             n_inner=FF, tie_word_embeddings=True, bos_token_id=0, eos_token_id=0)),
    "gpt2-untied": dict(config="GPT2Config", save="pretrained", init=0.15, tied=False,
                        kwargs=dict(vocab_size=VOCAB, n_positions=MAX_POS, n_embd=D, n_layer=LAYERS,
                                    n_head=HEADS, n_inner=FF, tie_word_embeddings=False, bos_token_id=0,
                                    eos_token_id=0)),
    "llama": dict(config="LlamaConfig", save="pretrained", init=0.15, tied=False, kwargs=_llama()),
    "llama-mha": dict(config="LlamaConfig", save="pretrained", init=0.15, tied=False,
                      kwargs=_llama(num_key_value_heads=HEADS)),
    # transformers 5's own config.json for llama3 scaling: rope_parameters {rope_type: llama3, ...}
    "llama3": dict(config="LlamaConfig", save="pretrained", init=0.15, tied=False,
                   kwargs=_llama(rope_parameters=dict(_LLAMA3_ROPE))),
    "llama3-v4config": dict(config="LlamaConfig", save="v4config", init=0.15, tied=False,
                            kwargs=_llama(rope_parameters=dict(_LLAMA3_ROPE))),
    # Linear RoPE scaling in a transformers-4 config with the older "type" spelling of rope_type.
    "llama-linear-v4config": dict(config="LlamaConfig", save="v4config", init=0.15, tied=False, v4_type_key=True,
                                  kwargs=_llama(rope_parameters={"rope_type": "linear", "factor": 2.0,
                                                                 "rope_theta": 10000.0})),
    "llama-tied": dict(config="LlamaConfig", save="pretrained", init=0.15, tied=True,
                       kwargs=_llama(tie_word_embeddings=True)),
    "llama-tied-lmhead": dict(config="LlamaConfig", save="lm_head_alias", init=0.15, tied=True,
                              kwargs=_llama(tie_word_embeddings=True)),
    "llama-tied-embed": dict(config="LlamaConfig", save="embed_alias", init=0.15, tied=True,
                             kwargs=_llama(tie_word_embeddings=True)),
    # MQA (one kv head) with an explicit head_dim: heads * head_dim (96) != hidden_size (64).
    "mistral": dict(config="MistralConfig", save="pretrained", init=0.15, tied=False,
                    kwargs=_llama(sliding_window=WINDOW, num_key_value_heads=1, head_dim=24)),
    # Qwen2 always has q/k/v biases; tied like Qwen2-0.5B.
    "qwen2": dict(config="Qwen2Config", save="pretrained", init=0.15, tied=True,
                  kwargs=_llama(tie_word_embeddings=True)),
    # Sliding window on the layers from max_window_layers on (here layer 1), as Qwen2 configs say it.
    "qwen2-window": dict(config="Qwen2Config", save="pretrained", init=0.15, tied=True,
                         kwargs=_llama(tie_word_embeddings=True, use_sliding_window=True, sliding_window=WINDOW,
                                       max_window_layers=1)),
    # head_dim 32 != hidden 64 / heads 4; q/k RMSNorm per head; GQA.
    "qwen3": dict(config="Qwen3Config", save="pretrained", init=0.15, tied=False,
                  kwargs=_llama(head_dim=32)),
    "qwen3-layer-types": dict(config="Qwen3Config", save="pretrained", init=0.15, tied=False,
                              kwargs=_llama(head_dim=32, use_sliding_window=True, sliding_window=WINDOW,
                                            layer_types=["sliding_attention", "full_attention"])),
    "gpt_neox": dict(config="GPTNeoXConfig", save="pretrained", init=0.15, tied=False,
                     kwargs=dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF,
                                 num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                 max_position_embeddings=MAX_POS, use_parallel_residual=True,
                                 rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                  "partial_rotary_factor": 0.25})),
    "gpt_neox-v4config": dict(config="GPTNeoXConfig", save="v4config", init=0.15, tied=False,
                              kwargs=dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF,
                                          num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                          max_position_embeddings=MAX_POS, use_parallel_residual=True,
                                          rope_parameters={"rope_type": "default", "rope_theta": 20000.0,
                                                           "partial_rotary_factor": 0.5})),
    "gpt_neox-sequential": dict(config="GPTNeoXConfig", save="pretrained", init=0.15, tied=False,
                                kwargs=dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF,
                                            num_hidden_layers=LAYERS, num_attention_heads=HEADS,
                                            max_position_embeddings=MAX_POS, use_parallel_residual=False,
                                            rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                             "partial_rotary_factor": 0.25})),
    "olmo2": dict(config="Olmo2Config", save="pretrained", init=0.15, tied=False,
                  kwargs=_llama(pad_token_id=None, eos_token_id=None)),
    # Gemma-2: layers alternate sliding / global; soft-caps small enough to bend the scores and logits
    # this model produces; query_pre_attn_scalar != head_dim so a 1/sqrt(head_dim) scale shows.
    "gemma2": dict(config="Gemma2Config", save="pretrained", init=0.15, tied=True,
                   kwargs=dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=LAYERS,
                               num_attention_heads=HEADS, num_key_value_heads=2, head_dim=16,
                               max_position_embeddings=MAX_POS, query_pre_attn_scalar=24, sliding_window=WINDOW,
                               attn_logit_softcapping=3.0, final_logit_softcapping=5.0,
                               rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # Gemma-3: sliding layers rotate with the local base, the global one with a scaled global base.
    "gemma3_text": dict(config="Gemma3TextConfig", save="pretrained", init=0.15, tied=True,
                        kwargs=dict(vocab_size=VOCAB, hidden_size=D, intermediate_size=FF, num_hidden_layers=3,
                                    num_attention_heads=HEADS, num_key_value_heads=2, head_dim=16,
                                    max_position_embeddings=MAX_POS, query_pre_attn_scalar=24,
                                    sliding_window=WINDOW,
                                    layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                                    rope_parameters={
                                        "full_attention": {"rope_type": "linear", "factor": 4.0,
                                                           "rope_theta": 1000000.0},
                                        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                    })),
}
VARIANTS["gemma3_text-v4config"] = dict(VARIANTS["gemma3_text"], save="v4config")

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def layers(model):
    """The decoder blocks, in order."""
    if hasattr(model, "transformer"):  # gpt2
        return model.transformer.h
    if hasattr(model, "gpt_neox"):
        return model.gpt_neox.layers
    return model.model.layers


def n_layers(model):
    return len(layers(model))


def n_heads(model):
    c = model.config
    return c.n_head if hasattr(c, "n_head") else c.num_attention_heads


def head_dim(model):
    c = model.config
    hd = getattr(c, "head_dim", None)
    if hd:
        return hd
    d = c.n_embd if hasattr(c, "n_embd") else c.hidden_size
    return d // n_heads(model)


def attn_out_proj(model, layer):
    """The attention output projection of `layer`: its input is the heads' z, concatenated [.., heads*d_head]."""
    block = layers(model)[layer]
    if hasattr(block, "attn"):  # gpt2
        return block.attn.c_proj
    if hasattr(block, "attention"):  # gpt_neox
        return block.attention.dense
    return block.self_attn.o_proj


def _config(spec):
    cls = getattr(transformers, spec["config"])
    cfg = cls(**spec["kwargs"], initializer_range=spec["init"])
    cfg._attn_implementation = "eager"
    return cfg


def _perturb(model, seed):
    """1-D parameters += 0.1 * randn, so norm scales and biases differ from their init (ones / zeros)."""
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for _, p in sorted(model.named_parameters()):
            if p.dim() == 1:
                p.add_(0.1 * torch.randn(p.shape, generator=g, dtype=p.dtype))


def _rewrite_v4_config(out_dir, type_key=False):
    """config.json as transformers 4 wrote it: rope_theta and rope_scaling in place of rope_parameters."""
    path = os.path.join(out_dir, "config.json")
    with open(path) as f:
        c = json.load(f)
    rp = dict(c.pop("rope_parameters"))
    if c["model_type"] == "gemma3_text":  # per layer type: global base + scaling, local base
        local = rp["sliding_attention"]
        rp = dict(rp["full_attention"])
        c["rope_local_base_freq"] = local["rope_theta"]
        types = c.pop("layer_types")
        pattern = types.index("full_attention") + 1
        if types != ["sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(len(types))]:
            raise ValueError(f"layer_types {types} is not a sliding_window_pattern")
        c["sliding_window_pattern"] = pattern
        c.pop("_sliding_window_pattern", None)
    c["rope_theta"] = rp.pop("rope_theta")
    if c["model_type"] == "gpt_neox":
        c["rotary_emb_base"] = c.pop("rope_theta")
        c["rotary_pct"] = rp.pop("partial_rotary_factor")
    c["rope_scaling"] = rp if rp.get("rope_type", "default") != "default" else None
    if type_key and c["rope_scaling"]:
        c["rope_scaling"]["type"] = c["rope_scaling"].pop("rope_type")
    c["transformers_version"] = "4.45.2"
    if "dtype" in c:
        c["torch_dtype"] = c.pop("dtype")
    with open(path, "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)


def _load(out_dir, dtype):
    """The folder as a researcher loads it: from_pretrained in its dtype, eager attention, eval mode.

    (Not the in-memory model cast with .to(dtype): that would also cast the RoPE inv_freq buffers to
    bfloat16, which from_pretrained keeps in float32.)"""
    return transformers.AutoModelForCausalLM.from_pretrained(out_dir, attn_implementation="eager",
                                                             dtype=dtype).eval()


def _logits(model):
    tokens = torch.arange(2 * WINDOW + 4).remainder(VOCAB).view(1, -1)
    with torch.no_grad():
        return model(tokens).logits


def build(variant, out_dir, dtype="float32", seed=0):
    """Builds `variant` with a fixed seed, saves it into out_dir as the spec says, returns it as
    transformers loads that folder (from_pretrained in dtype, eager attention, eval mode).

    The float32 and bfloat16 builds of one seed hold the same weights (bfloat16: rounded from them)."""
    spec = VARIANTS[variant]
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(_config(spec), attn_implementation="eager",
                                                          dtype=torch.float32)
    _perturb(model, seed)
    model = model.to(_DTYPES[dtype]).eval()
    model.config.dtype = _DTYPES[dtype]
    os.makedirs(out_dir, exist_ok=True)
    save = spec["save"]
    if save in ("pretrained", "v4config"):
        model.save_pretrained(out_dir, safe_serialization=True)
        if save == "v4config":
            want = _logits(_load(out_dir, _DTYPES[dtype]))
            _rewrite_v4_config(out_dir, spec.get("v4_type_key", False))
            got = _logits(_load(out_dir, _DTYPES[dtype]))
            if not torch.equal(want, got):
                raise RuntimeError(f"{out_dir}: transformers reads the rewritten config.json as another "
                                   f"model (max |logit diff| {(want - got).abs().max().item():.3g})")
    elif save == "lm_head_alias":
        model.config.save_pretrained(out_dir)
        # save_model drops one name of each shared tensor and records it in the metadata; for Llama it
        # keeps lm_head.weight and writes {"model.embed_tokens.weight": "lm_head.weight"}.
        path = os.path.join(out_dir, "model.safetensors")
        save_model(model, path, metadata={"format": "pt"})
        _check_alias(path, "lm_head.weight", "model.embed_tokens.weight")
    elif save == "embed_alias":
        model.config.save_pretrained(out_dir)
        sd = {k: v.contiguous() for k, v in model.state_dict().items() if k != "lm_head.weight"}
        path = os.path.join(out_dir, "model.safetensors")
        save_file(sd, path, metadata={"format": "pt", "lm_head.weight": "model.embed_tokens.weight"})
        _check_alias(path, "model.embed_tokens.weight", "lm_head.weight")
    else:
        raise ValueError(f"{variant}: unknown save style {save}")
    loaded = _load(out_dir, _DTYPES[dtype])
    if spec["tied"] != (loaded.get_output_embeddings().weight is loaded.get_input_embeddings().weight):
        raise RuntimeError(f"{variant}: transformers loads {out_dir} {'un' if spec['tied'] else ''}tied")
    return loaded


def _check_alias(path, kept, removed):
    from safetensors import safe_open
    with safe_open(path, "pt") as f:
        keys = set(f.keys())
        meta = f.metadata() or {}
    if kept not in keys or removed in keys or meta.get(removed) != kept:
        raise RuntimeError(f"{path}: expected {kept} stored and {removed} recorded as its alias; "
                           f"have {sorted(k for k in keys if 'embed' in k or 'lm_head' in k)}, metadata {meta}")
