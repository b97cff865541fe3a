"""A stand-in for Hugging Face transformers' Llama, for the dry run of scripts/gpu_check/gpu_check.py on a
machine without a GPU or transformers (test_gpu_check_dry_run). It has what that script touches: LlamaConfig,
AutoModelForCausalLM.from_config / from_pretrained, save_pretrained, named_parameters, logits_to_keep, and
HF's module layout model.layers[l].self_attn.o_proj, whose forward pre-hooks see and may replace the
attention output before o_proj as in transformers. It computes with the project's independent reference
forward (tests/load/reference_forward.py). It is not transformers: the GPU run compares with the real one."""
import json
import os
import sys
import types

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "load"))
import reference_forward as rf  # noqa: E402

__version__ = "dry-run stand-in"


class LlamaConfig:
    model_type = "llama"

    def __init__(self, **kw):
        self.rms_norm_eps = 1e-6
        self.hidden_act = "silu"
        self.tie_word_embeddings = False
        self.rope_theta = 10000.0
        self.rope_scaling = None
        self.head_dim = None
        self.__dict__.update(kw)
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads

    def to_dict(self):
        d = {k: v for k, v in self.__dict__.items() if not k.startswith("_")}
        d["model_type"] = "llama"
        d["architectures"] = ["LlamaForCausalLM"]
        return d


class _Attn(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.o_proj = torch.nn.Linear(w.shape[1], w.shape[0], bias=False)


class _Layer(torch.nn.Module):
    def __init__(self, w):
        super().__init__()
        self.self_attn = _Attn(w)


class LlamaForCausalLM(torch.nn.Module):
    def __init__(self, config, W):
        super().__init__()
        self.config = config
        self.W = W
        L = config.num_hidden_layers
        self.model = types.SimpleNamespace(layers=torch.nn.ModuleList(
            [_Layer(W[f"model.layers.{l}.self_attn.o_proj.weight"]) for l in range(L)]))

    def named_parameters(self):
        return iter(self.W.items())

    def to(self, device=None, dtype=None):
        if dtype is not None:
            self.W = {k: v.to(dtype) for k, v in self.W.items()}
        return self

    def cuda(self):
        return self

    def save_pretrained(self, folder, safe_serialization=True):
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "config.json"), "w") as f:
            json.dump(self.config.to_dict(), f)
        rf.write_safetensors(os.path.join(folder, "model.safetensors"), {k: v.float() for k, v in self.W.items()})

    def __call__(self, x, logits_to_keep=None):
        cfg = self.config.to_dict()
        nh, dh = self.config.num_attention_heads, self.config.head_dim

        def z_hook(l, z):  # o_proj's forward pre-hooks see (and may replace) merge(z), as in transformers
            o_proj = self.model.layers[l].self_attn.o_proj
            merged = rf.merge(z)
            for hook in list(o_proj._forward_pre_hooks.values()):
                r = hook(o_proj, (merged,))
                if r is not None:
                    merged = r[0]
            return rf.heads(merged, nh, dh)

        logits = rf.forward_llama_like(cfg, self.W, x.cpu(), "llama", z_hook=z_hook)
        if logits_to_keep:
            logits = logits[:, -logits_to_keep:]
        return types.SimpleNamespace(logits=logits)


class AutoModelForCausalLM:
    @staticmethod
    def from_config(cfg, torch_dtype=torch.float32):
        d, L, V, m = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size, cfg.intermediate_size
        nh, nkv, dh = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        def g(*shape):
            return torch.randn(*shape) * 0.02
        W = {"model.embed_tokens.weight": g(V, d), "model.norm.weight": torch.ones(d), "lm_head.weight": g(V, d)}
        for l in range(L):
            p = f"model.layers.{l}."
            W.update({p + "input_layernorm.weight": torch.ones(d),
                      p + "post_attention_layernorm.weight": torch.ones(d),
                      p + "self_attn.q_proj.weight": g(nh * dh, d), p + "self_attn.k_proj.weight": g(nkv * dh, d),
                      p + "self_attn.v_proj.weight": g(nkv * dh, d), p + "self_attn.o_proj.weight": g(d, nh * dh),
                      p + "mlp.gate_proj.weight": g(m, d), p + "mlp.up_proj.weight": g(m, d),
                      p + "mlp.down_proj.weight": g(d, m)})
        return LlamaForCausalLM(cfg, W)

    @staticmethod
    def from_pretrained(folder, torch_dtype=torch.float32, attn_implementation=None):
        with open(os.path.join(folder, "config.json")) as f:
            c = json.load(f)
        c.pop("model_type", None)
        c.pop("architectures", None)
        tensors = rf.read_safetensors(os.path.join(folder, "model.safetensors"))
        W = {k: v.to(torch_dtype) for k, v in tensors.items()}
        return LlamaForCausalLM(LlamaConfig(**c), W)
