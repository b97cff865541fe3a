"""TransformerLens's half of test_transformer_lens.cpp: the same checkpoint through TransformerLens.

TransformerLens 4.x (the pinned version) has no HookedTransformer: its model is a TransformerBridge around
the transformers model, and `enable_compatibility_mode(no_processing=True)` gives the HookedTransformer hook
names (hook_q, hook_z, hook_resid_mid, ...) without the weight processing (fold_ln, centring of the writing
weights and the unembedding, folded value biases) that would change the values those hooks hold. The bridge
is booted from the folder HeadScope loads (TransformerBridge.boot_transformers(folder)), offline.

    tl_reference.py hooks --out DIR

writes, for each family of FAMILIES: DIR/<family>/ (a random transformers checkpoint, float32 safetensors,
as save_pretrained writes it), DIR/<family>-tokenizer/ (a word-level tokenizer TransformerLens insists on;
HeadScope does not read it) and DIR/<family>-tl.safetensors holding
  tokens                    [batch, pos] int64 (row 0 "clean", row 1 "corrupt")
  <hook name>               every compared hook, under TransformerLens's name, as TransformerLens holds it
  logits                    [batch, pos, vocab]
  patch.<i>                 [1, pos, vocab] logits of the corrupt row with PATCHES[i] patched in from the
                            clean row by run_with_hooks
and in its metadata "patches": the JSON list of those patches (hook, TransformerLens head indices or null,
positions or null). Prints one JSON line: {"families": [...]}.
"""

import argparse
import json
import os
import sys

import torch


# Small GPT-2- and Llama-shaped models (GQA: 4 query heads read 2 kv heads). Enough layers that every hook
# reads an earlier layer's output.
FAMILIES = {
    "gpt2": dict(
        model_type="gpt2",
        n_layer=3,
        n_head=4,
        n_embd=64,
        n_positions=64,
        vocab_size=211,
        layer_norm_epsilon=1e-5,
        bos_token_id=0,
        eos_token_id=1,
    ),
    "llama": dict(
        model_type="llama",
        num_hidden_layers=3,
        num_attention_heads=4,
        num_key_value_heads=2,
        hidden_size=64,
        head_dim=16,
        intermediate_size=96,
        vocab_size=211,
        max_position_embeddings=64,
        rms_norm_eps=1e-5,
        tie_word_embeddings=False,
    ),
}

# TransformerLens hook names compared per layer; ln_final and the logits besides.
LAYER_HOOKS = [
    "hook_resid_pre",
    "attn.hook_q",
    "attn.hook_k",
    "attn.hook_v",
    "attn.hook_pattern",
    "attn.hook_z",
    "hook_attn_out",
    "hook_resid_mid",
    "hook_mlp_out",
    "hook_resid_post",
]
FINAL_HOOKS = ["ln_final.hook_normalized", "ln_final.hook_out"]

# Patches of the clean row into the corrupt one, each a run_with_hooks with one hook (heads: TransformerLens's
# head axis, i.e. kv heads at hook_k / hook_v of a GQA model; positions: None = all).
PATCHES = [
    dict(hook="blocks.1.attn.hook_z", heads=[2], positions=None),
    dict(hook="blocks.0.attn.hook_q", heads=[3], positions=None),
    dict(hook="blocks.0.attn.hook_k", heads=[1], positions=None),
    dict(hook="blocks.1.attn.hook_v", heads=[0], positions=None),
    dict(hook="blocks.0.hook_resid_mid", heads=None, positions=[5]),
    dict(hook="blocks.2.hook_resid_pre", heads=None, positions=[5, 9]),
]

BATCH_POS = 14
SEED = 20


def make_config(family):
    from transformers import AutoConfig

    spec = dict(FAMILIES[family])
    model_type = spec.pop("model_type")
    return AutoConfig.for_model(model_type, **spec)


def randomize(model, generator):
    """Weights of order 1/sqrt(fan_in), norm gains around 1 and small biases: peaked attention patterns and
    residual streams of order 1-10, so the hooks compared are far from degenerate (transformers' own init,
    std 0.02 and unit gains, gives nearly uniform patterns)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                is_gain = "ln" in name or "norm" in name
                base = 1.0 if is_gain and name.endswith("weight") else 0.0
                p.copy_(base + (0.2 if is_gain else 0.1) * torch.randn(p.shape, generator=generator))
            elif "wte" in name or "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=generator))
            elif "wpe" in name:
                p.copy_(0.5 * torch.randn(p.shape, generator=generator))
            else:
                # GPT-2's Conv1D stores [in, out], nn.Linear [out, in]: the fan-in is the smaller side here
                # only by accident, so take it from the module's layout.
                fan_in = p.shape[0] if ".c_" in name else p.shape[1]
                p.copy_(1.5 * torch.randn(p.shape, generator=generator) / fan_in**0.5)


def word_tokenizer(vocab, folder):
    """A word-level tokenizer over t0..t{vocab-1}: TransformerBridge.boot_transformers needs one."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    t = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(
        tokenizer_object=t, bos_token="t0", eos_token="t1", unk_token="t0", pad_token="t1"
    ).save_pretrained(folder)
    return AutoTokenizer.from_pretrained(folder)


def boot_bridge(folder, tokenizer):
    """TransformerLens on the saved checkpoint: HookedTransformer hook names, no weight processing."""
    from transformer_lens.model_bridge import TransformerBridge

    bridge = TransformerBridge.boot_transformers(folder, tokenizer=tokenizer, device="cpu", dtype=torch.float32)
    bridge.enable_compatibility_mode(no_processing=True, disable_warnings=True)
    return bridge


def head_patch(clean, heads, positions):
    """A run_with_hooks hook writing the clean row's value into the selected heads / positions."""

    def hook(value, hook):
        pos = slice(None) if positions is None else positions
        if heads is None:
            value[:, pos] = clean[:, pos]
        elif value.dim() == 4 and "pattern" not in hook.name:  # [batch, pos, head, d]
            for h in heads:
                value[:, pos, h] = clean[:, pos, h]
        else:
            raise ValueError(f"unsupported patch at {hook.name}")
        return value

    return hook


def hooks_command(out):
    from safetensors.torch import save_file

    families = []
    for i, family in enumerate(FAMILIES):
        from transformers import AutoModelForCausalLM

        generator = torch.Generator().manual_seed(SEED + i)
        torch.manual_seed(SEED + i)
        config = make_config(family)
        model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32).eval()
        randomize(model, generator)
        folder = os.path.join(out, family)
        model.save_pretrained(folder, safe_serialization=True)
        tokenizer = word_tokenizer(config.vocab_size, folder + "-tokenizer")
        del model  # TransformerLens reads the checkpoint from the folder, as HeadScope does

        bridge = boot_bridge(folder, tokenizer)
        tokens = torch.randint(0, config.vocab_size, (2, BATCH_POS), generator=generator)  # [batch, pos]
        n_layers = bridge.cfg.n_layers
        names = [f"blocks.{l}.{h}" for l in range(n_layers) for h in LAYER_HOOKS] + FINAL_HOOKS
        with torch.no_grad():
            logits, cache = bridge.run_with_cache(tokens, names_filter=lambda n: n in names)
            tensors = {"tokens": tokens.contiguous(), "logits": logits.float().contiguous()}
            missing = [n for n in names if n not in cache]
            if missing:
                raise SystemExit(f"{family}: TransformerLens did not fire {missing}")
            for n in names:
                tensors[n] = cache[n].float().clone()  # resid_post l and resid_pre l + 1 share storage
            clean_cache = {n: cache[n][0:1].clone() for n in names}
            for j, patch in enumerate(PATCHES):
                hook = head_patch(clean_cache[patch["hook"]], patch["heads"], patch["positions"])
                patched = bridge.run_with_hooks(tokens[1:2], fwd_hooks=[(patch["hook"], hook)])
                tensors[f"patch.{j}"] = patched.float().contiguous()
        path = os.path.join(out, family + "-tl.safetensors")
        save_file(tensors, path, metadata={"patches": json.dumps(PATCHES)})
        families.append(family)
    print(json.dumps({"families": families}))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    hooks = sub.add_parser("hooks")
    hooks.add_argument("--out", required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.command == "hooks":
        hooks_command(args.out)


if __name__ == "__main__":
    sys.exit(main())
