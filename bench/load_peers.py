#!/usr/bin/env python3
"""The peers of bench_load's float32 load, run with the reference environment's Python (PyTorch 2.x): the bench's
bf16 checkpoint folder (config.json + model.safetensors) read as float32 weights, timed from the call to the
weights being ready, as a researcher's script would load it. Nothing is downloaded.

    load_peers.py transformers DIR [--threads K]
        AutoModelForCausalLM.from_pretrained(DIR, dtype=torch.float32), eager attention.
    load_peers.py safetensors DIR [--threads K]
        safetensors.torch.load_file(DIR/model.safetensors), then Tensor.float() of every tensor.

Prints one JSON object: load_s, the load's user_s and sys_s, the process's peak RSS, and q_bits, the sum of the
bits (as int32) of layer 0's q_proj weight, which bench_load compares with its own.
"""
import argparse
import json
import os
import resource
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("side", choices=["transformers", "safetensors"])
    ap.add_argument("dir")
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    if a.side == "transformers":
        from transformers import AutoModelForCausalLM
        from transformers.utils import logging
        logging.disable_progress_bar()
    else:
        from safetensors.torch import load_file
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    if a.side == "transformers":
        model = AutoModelForCausalLM.from_pretrained(a.dir, dtype=torch.float32, attn_implementation="eager")
        q = model.model.layers[0].self_attn.q_proj.weight
    else:
        weights = {k: v.float() for k, v in load_file(os.path.join(a.dir, "model.safetensors")).items()}
        q = weights["model.layers.0.self_attn.q_proj.weight"]
    load_s, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"load_s": load_s, "user_s": r1.ru_utime - r0.ru_utime, "sys_s": r1.ru_stime - r0.ru_stime,
                      "peak_rss_bytes": r1.ru_maxrss * 1024, "dtype": str(q.dtype),
                      "q_bits": int(q.detach().contiguous().view(torch.int32).long().sum()),
                      "torch": torch.__version__}))


if __name__ == "__main__":
    main()
