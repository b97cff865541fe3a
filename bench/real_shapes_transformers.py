#!/usr/bin/env python3
"""transformers' side of bench_real_shapes, run with the reference environment's Python (PyTorch 2.x):
the same checkpoint folder HeadScope loads (config.json + safetensors), read by
AutoModelForCausalLM.from_pretrained at the compute dtype, eager attention, under torch.inference_mode,
with the given thread count, as a researcher's script would run it. Nothing is downloaded
(HF_HUB_OFFLINE=1 is set here as well as by the bench).

    real_shapes_transformers.py forward DIR {bfloat16,float32} --tokens T [--runs N] [--threads K]
        Loads, runs one warm-up forward over tokens t_i = (7919 i + 13) mod vocab (all positions' logits,
        as float32), then --runs timed forwards. Prints one JSON object: load and forward seconds (median),
        every forward, peak RSS, and a checksum of the logits (the keys real_shapes_torch.py prints).
    real_shapes_transformers.py logits DIR {bfloat16,float32} --ids 1,2,3 [--top K] [--threads K]
        What `headscope-cli logits DIR --ids ...` does, as a whole script: load, one forward, the last
        position's logits, softmax and top K, printed as one JSON object with every last logit. The bench
        times the whole process, Python's start and imports included.
"""
import argparse
import json
import os
import resource
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402


def load(folder, dtype):
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=getattr(torch, dtype),
                                                 attn_implementation="eager")
    return model.eval()


def forward(a):
    with torch.inference_mode():
        t0 = time.perf_counter()
        model = load(a.dir, a.dtype)
        load_s = time.perf_counter() - t0
        vocab = model.config.vocab_size
        tokens = torch.tensor([[(7919 * i + 13) % vocab for i in range(a.tokens)]])
        logits = model(tokens, use_cache=False).logits.float()  # warm-up
        times = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            logits = model(tokens, use_cache=False).logits.float()
            times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"load_s": load_s, "forward_s": times[len(times) // 2], "forward_runs": times,
                      "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                      "logits_last_argmax": int(logits[0, -1].argmax()),
                      "logits_abs_mean": float(logits.abs().mean()),
                      "torch": torch.__version__}))


def logits(a):
    ids = [int(x) for x in a.ids.split(",") if x]
    with torch.inference_mode():
        model = load(a.dir, a.dtype)
        last = model(torch.tensor([ids]), use_cache=False, logits_to_keep=1).logits[0, -1].float()
        probs = torch.softmax(last.double(), 0)
        top = torch.topk(last, min(a.top, last.numel()))
    print(json.dumps({"ids": ids, "last_logits": last.tolist(),
                      "top": [{"id": int(i), "logit": float(v), "prob": float(probs[i])}
                              for v, i in zip(top.values, top.indices)]}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["forward", "logits"])
    ap.add_argument("dir")
    ap.add_argument("dtype", choices=["bfloat16", "float32"])
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ids", default="")
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    forward(a) if a.mode == "forward" else logits(a)


if __name__ == "__main__":
    main()
