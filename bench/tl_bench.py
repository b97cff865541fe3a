"""TransformerLens's half of bench_transformer_lens.cpp, run with the reference environment's Python.

    tl_bench.py gen --out FOLDER
        A GPT-2-small-shaped transformers checkpoint (12 layers x 12 heads, d_model 768, vocab 50257, context
        1024; transformers' own random init, seed 0), float32 safetensors as save_pretrained writes it, and a
        word-level tokenizer beside it in FOLDER-tokenizer (TransformerLens will not boot without one).
    tl_bench.py time --model FOLDER --job job.json --out logits.safetensors
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


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def time_command(model_dir, job_path, out):
    from safetensors.torch import save_file
    from transformers import AutoTokenizer

    with open(job_path) as f:
        job = json.load(f)
    torch.set_num_threads(job["threads"])
    t0 = time.perf_counter()
    bridge = boot_bridge(model_dir, AutoTokenizer.from_pretrained(model_dir + "-tokenizer"))
    boot_s = time.perf_counter() - t0
    clean = torch.tensor([job["clean"]], dtype=torch.int64)  # [1, pos]
    corrupt = torch.tensor([job["corrupt"]], dtype=torch.int64)  # [1, pos]
    target, distractor = job["target"], job["distractor"]
    runs = job["runs"]

    def metric(logits):  # logits [1, pos, vocab]
        return (logits[0, -1, target] - logits[0, -1, distractor]).item()

    with torch.no_grad():
        logits = bridge(clean)  # warm-up
        forward_runs = []
        for _ in range(runs):
            t0 = time.perf_counter()
            logits = bridge(clean)
            forward_runs.append(time.perf_counter() - t0)
        save_file({"logits": logits.float().contiguous()}, out)

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
    print(
        json.dumps(
            dict(
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
    args = parser.parse_args()
    if args.command == "gen":
        gen(args.out)
    else:
        time_command(args.model, args.job, args.out)


if __name__ == "__main__":
    sys.exit(main())
