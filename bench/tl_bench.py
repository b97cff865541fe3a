"""The peers' half of bench_transformer_lens.cpp (TransformerLens and transformers), run with the reference
environment's Python.

    tl_bench.py gen --out FOLDER
        A GPT-2-small-shaped transformers checkpoint (12 layers x 12 heads, d_model 768, vocab 50257, context
        1024; transformers' own random init, seed 0), float32 safetensors as save_pretrained writes it, and a
        word-level tokenizer beside it in FOLDER-tokenizer (TransformerLens will not boot without one).
    tl_bench.py time --model FOLDER --job job.json --out logits.safetensors [--library transformer_lens]
        job.json: {"clean": [...], "corrupt": [...], "target": t, "distractor": d, "heads": [[layer, head],
        ...], "threads": n, "runs": r}. Boots TransformerLens on FOLDER (TransformerBridge with the
        HookedTransformer hook names, no weight processing: TransformerLens 4.x has no HookedTransformer) and
        times, with n threads under torch.no_grad():
          - forward: bridge(clean), all-position logits, median of r runs after one warm-up (its logits go to
            --out, [1, pos, vocab], for the bench to compare with HeadScope's);
          - the run_with_hooks patching loop as TransformerLens's tutorials write it: run_with_cache(clean)
            (hook_z only) and the corrupt run, then one run_with_hooks(corrupt) per head with a hook writing
            the clean z of that head at the last position; metric = logit[target] - logit[distractor] at
            the last position, minus the corrupt run's. Timed over the listed heads; per-forward median.
    tl_bench.py time ... --library transformers
        The same with transformers itself (AutoModelForCausalLM, eager attention): its forward, and the loop
        as one writes it there: forward pre-hooks on each layer's attention output projection capture the
        clean run's input (the heads' z, concatenated), then one hooked forward of the corrupt prompt per head
        writes that head's slice at the last position, asking for the last position's logits only
        (logits_to_keep=1).
Prints one JSON object.
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "reference"))
from tl_reference import boot_bridge, word_tokenizer  # noqa: E402


def gen(out):
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    config = GPT2Config(bos_token_id=0, eos_token_id=1)  # the GPT-2-small sizes are GPT2Config's defaults
    model = GPT2LMHeadModel(config).eval()
    model.save_pretrained(out, safe_serialization=True)
    word_tokenizer(config.vocab_size, out + "-tokenizer")
    print(json.dumps({"folder": out, "parameters": sum(p.numel() for p in model.parameters())}))


def boot_transformers(model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").eval()


def transformers_loop(model, clean, corrupt, heads, metric):
    """The clean z (o_proj input) at the last position per layer, the corrupt metric, then one hooked forward
    per head; returns (setup seconds, per-head seconds, per-head metric changes)."""
    from hf_models import attn_out_proj, head_dim

    dh = head_dim(model)
    t0 = time.perf_counter()
    clean_z = {}
    hooks = [attn_out_proj(model, l).register_forward_pre_hook(
        lambda m, a, l=l: clean_z.__setitem__(l, a[0][:, -1].clone())) for l, _ in sorted(set(heads))]
    try:
        model(clean, logits_to_keep=1)
    finally:
        for h in hooks:
            h.remove()
    corrupt_metric = metric(model(corrupt, logits_to_keep=1).logits)
    setup_s = time.perf_counter() - t0
    times, values = [], []
    for layer, head in heads:
        def pre(m, a, layer=layer, head=head):
            z = a[0].clone()  # [batch, pos, heads * d_head]
            z[:, -1, head * dh:(head + 1) * dh] = clean_z[layer][:, head * dh:(head + 1) * dh]
            return (z,)
        t0 = time.perf_counter()
        hook = attn_out_proj(model, layer).register_forward_pre_hook(pre)
        try:
            patched = model(corrupt, logits_to_keep=1).logits
        finally:
            hook.remove()
        times.append(time.perf_counter() - t0)
        values.append(metric(patched) - corrupt_metric)
    return setup_s, times, values, corrupt_metric


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def time_command(model_dir, job_path, out, library):
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(job["threads"])
    t0 = time.perf_counter()
    if library == "transformers":
        bridge = boot_transformers(model_dir)
    else:
        bridge = boot_bridge(model_dir, AutoTokenizer.from_pretrained(model_dir + "-tokenizer"))
    boot_s = time.perf_counter() - t0
    clean = torch.tensor([job["clean"]], dtype=torch.int64)  # [1, pos]
    corrupt = torch.tensor([job["corrupt"]], dtype=torch.int64)  # [1, pos]
    target, distractor = job["target"], job["distractor"]
    runs = job["runs"]

    def metric(logits):  # logits [1, pos, vocab]
        return (logits[0, -1, target] - logits[0, -1, distractor]).item()

    def forward(tokens):  # all-position logits [1, pos, vocab]
        return bridge(tokens).logits if library == "transformers" else bridge(tokens)

    with torch.no_grad():
        logits = forward(clean)  # warm-up
        forward_runs = []
        for _ in range(runs):
            t0 = time.perf_counter()
            logits = forward(clean)
            forward_runs.append(time.perf_counter() - t0)
        save_file({"logits": logits.float().contiguous()}, out)
        if library == "transformers":
            heads = [tuple(h) for h in job["heads"]]
            setup_s, times, values, corrupt_metric = transformers_loop(bridge, clean, corrupt, heads, metric)
            return report(library, boot_s, forward_runs, setup_s, times, values, corrupt_metric)

        t0 = time.perf_counter()
        _, clean_cache = bridge.run_with_cache(clean, names_filter=lambda name: name.endswith("hook_z"))
        corrupt_metric = metric(bridge(corrupt))
        setup_s = time.perf_counter() - t0

        def patch_head(head):
            def hook(z, hook):  # z [batch, pos, head, d_head]
                z[:, -1, head] = clean_cache[hook.name][:, -1, head]
                return z

            return hook

        times, values = [], []
        for layer, head in job["heads"]:
            t0 = time.perf_counter()
            patched = bridge.run_with_hooks(corrupt, fwd_hooks=[(f"blocks.{layer}.attn.hook_z", patch_head(head))])
            times.append(time.perf_counter() - t0)
            values.append(metric(patched) - corrupt_metric)
    report(library, boot_s, forward_runs, setup_s, times, values, corrupt_metric)


def report(library, boot_s, forward_runs, setup_s, times, values, corrupt_metric):
    print(
        json.dumps(
            dict(
                library=library,
                boot_s=boot_s,
                forward_median_s=median(forward_runs),
                forward_runs=forward_runs,
                setup_s=setup_s,
                per_forward_median_s=median(times),
                heads=len(values),
                values=values,
                corrupt_metric=corrupt_metric,
                threads=torch.get_num_threads(),
                torch=torch.__version__,
            )
        )
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gen")
    g.add_argument("--out", required=True)
    t = sub.add_parser("time")
    t.add_argument("--model", required=True)
    t.add_argument("--job", required=True)
    t.add_argument("--out", required=True)
    t.add_argument("--library", choices=["transformer_lens", "transformers"], default="transformer_lens")
    args = parser.parse_args()
    if args.command == "gen":
        gen(args.out)
    else:
        time_command(args.model, args.job, args.out, args.library)


if __name__ == "__main__":
    sys.exit(main())
