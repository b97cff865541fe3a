// HeadScope against TransformerLens, the tool researchers would pick instead, and against transformers
// itself, on the same checkpoint, tokens and thread count: the forward, and activation patching of every
// head's hook_z (HeadScope's exact sweep vs TransformerLens's run_with_hooks loop, and vs transformers with
// forward pre-hooks on the attention output projection: one hooked forward per head; bench/tl_bench.py).
//
// Model: GPT-2-small-shaped (12 layers × 12 heads, d_model 768, d_mlp 3072, vocab 50257, context 1024) with
// transformers' own random init (seed 0), written by bench/tl_bench.py as save_pretrained writes it;
// HeadScope loads that folder with loadModel and TransformerLens boots on it (TransformerBridge with the
// HookedTransformer hook names and no weight processing; TransformerLens 4.x has no HookedTransformer).
// Prompt and patches as bench_patching (sweep_bench.h): 128 tokens t_i = (7919 i + 13) mod vocab (clean),
// the corrupt prompt changes positions 20, 64 and 100; metric logit(target) − logit(distractor) at the last
// position; last-position FromClean patches of each head's hook_z.
//
// Timings (the CPU count of threads, or HEADSCOPE_THREADS, on both sides: TransformerLens's torch gets the
// same count; the same glibc malloc settings on both sides; medians of --runs). On a machine shared with
// other work, more threads than free cores make both sides' thread pools wait on each other, and the
// timings scatter by several times: HEADSCOPE_THREADS=1 then gives the comparable numbers.
//  - forward: one forward of the clean prompt, logits at every position (HeadScope: Transformer::run under
//    NoGradGuard; TransformerLens: bridge(tokens) under torch.no_grad()). Their logits are compared.
//  - patching: HeadScope's hs::patchingSweep (all 144 heads, clean and corrupt runs included) against
//    TransformerLens's loop: run_with_cache(clean) of hook_z and the corrupt forward, then run_with_hooks of
//    the corrupt prompt per head, timed over --naive-heads heads spread over the layers (sweep_bench.h) and
//    extrapolated to 144 (setup + 144 × the median per-head forward; --full times all 144). The timed heads'
//    values are compared with HeadScope's grid, so both sides are seen to do the same work.
// Ratios are ours / peer (below 1: HeadScope is faster), under "transformer_lens" and "transformers". The
// load average is reported with them: on a shared machine the two processes, run one after the other, may see
// different loads.
//
// Needs the reference environment (.venv-reference, ./scripts/setup.sh --with-reference, or the folder in
// HEADSCOPE_REFERENCE_VENV); without it, prints one line saying it skipped and why, and exits 0.
// Prints one JSON object.
//
// usage: bench_transformer_lens [--runs N] [--naive-heads K] [--full] [--tokens T]
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include "bench_util.h"
#include "sweep_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/toolkit/patch_sweep.h"
#include "model/io/safetensors.h"
#include "model/load/model_loader.h"
#include "model/thread_policy.h"
#include "util/allocator.h"

namespace fs = std::filesystem;

namespace {

using hs::bench::capture;
using hs::bench::median;
using hs::bench::seconds;

// The environment of every reference Python call: offline, and glibc malloc keeping freed memory as
// hs::tuneAllocator sets it up for this process.
std::string pythonEnv() {
  return "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONDONTWRITEBYTECODE=1 "
         "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 ";
}

std::string loadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();  // before any tensor
  int runs = 5, naiveHeads = 24, nTokens = 128;
  bool full = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--naive-heads" && i + 1 < argc) {
      naiveHeads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--tokens" && i + 1 < argc) {
      nTokens = std::max(101, std::atoi(argv[++i]));
    } else if (a == "--full") {
      full = true;
    } else {
      std::cerr << "usage: bench_transformer_lens [--runs N] [--naive-heads K] [--full] [--tokens T]\n";
      return 2;
    }
  }

  std::string why;
  const std::string python = hs::bench::referencePython(&why);  // bench_util.h
  if (python.empty()) {
    std::cout << "bench_transformer_lens: " << why << "\n";
    return 0;
  }
  if (std::system((pythonEnv() + python + " -c 'import transformer_lens' >/dev/null 2>&1").c_str()) != 0) {
    std::cout << "bench_transformer_lens: skipped: " << python
              << " cannot import transformer_lens (rerun ./scripts/setup.sh --with-reference)\n";
    return 0;
  }
  const int threads =
      hs::applyThreadPolicy(/*followLoad=*/false).threads;  // the CPU count, fixed (model/thread_policy.h)
  const std::string script = std::string(HEADSCOPE_SOURCE_DIR) + "/bench/tl_bench.py";

  nlohmann::json report;
  char tmpl[] = "/tmp/headscope-bench-tl-XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::cerr << "bench_transformer_lens: cannot create a temp folder\n";
    return 1;
  }
  const std::string tmpDir = tmpl, folder = tmpDir + "/gpt2-small";
  try {
    std::cerr << "writing a GPT-2-small-shaped random checkpoint to " << folder << "\n";
    capture(pythonEnv() + python + " " + script + " gen --out " + folder);
    const hs::LoadedModel m = hs::loadModel(folder);
    const hs::Transformer& model = *m.model;
    const hs::ModelConfig& c = m.config;
    const int L = c.n_layers, H = c.n_heads, nHeads = L * H;
    report["load_average_start"] = loadAverage();

    const hs::PatchSweepSpec spec = hs::bench::sweepSpec(model, nTokens, {20, 64, 100});
    at::NoGradGuard noGrad;

    // Our forward: the clean prompt, logits at every position.
    hs::RunRequest forward;
    forward.tokens = at::tensor(spec.clean, at::kLong).view({1, -1});  // [1, pos]
    at::Tensor ourLogits = model.run(forward).logits;                  // [1, pos, vocab] (warm-up)
    std::vector<double> tForward;
    for (int i = 0; i < runs; ++i)
      tForward.push_back(seconds([&] { ourLogits = model.run(forward).logits; }));

    // Our exact sweep, all heads.
    hs::HeadGrid grid = hs::patchingSweep(model, spec);  // warm-up
    std::vector<double> tSweep;
    for (int i = 0; i < runs; ++i)
      tSweep.push_back(seconds([&] { grid = hs::patchingSweep(model, spec); }));
    report["load_average_after_ours"] = loadAverage();

    // TransformerLens: the same tokens, heads and thread count.
    const std::vector<std::pair<int, int>> subset =
        hs::bench::spreadHeads(L, H, full ? nHeads : std::min(naiveHeads, nHeads));
    nlohmann::json job;
    job["clean"] = spec.clean;
    job["corrupt"] = spec.corrupt;
    job["target"] = spec.target;
    job["distractor"] = spec.distractor;
    job["threads"] = threads;
    job["runs"] = runs;
    nlohmann::json heads = nlohmann::json::array();
    for (auto [l, h] : subset)
      heads.push_back({l, h});
    job["heads"] = heads;
    const std::string jobPath = tmpDir + "/job.json", logitsPath = tmpDir + "/peer_logits.safetensors";
    std::ofstream(jobPath) << job.dump();
    report["model"] = {
        {"shape", "gpt2-small"}, {"layers", L},           {"heads", H},
        {"d_model", c.d_model},  {"vocab", c.vocab_size}, {"weights", "transformers' random init, seed 0"}};
    report["tokens"] = nTokens;
    report["threads"] = threads;
    report["runs"] = runs;
    const double oursForward = median(tForward), oursSweep = median(tSweep);
    report["forward_ours_s"] = oursForward;
    report["forward_ours_runs"] = tForward;
    report["patching_ours_sweep_s"] = oursSweep;
    report["patching_ours_sweep_runs"] = tSweep;
    report["patching_max_abs_grid_value"] = grid.values.cwiseAbs().maxCoeff();
    report["patching_heads_timed"] = subset.size();
    report["patching_extrapolated"] = !full;
    // Each peer on the same job: its forward and its per-head loop, compared with ours value by value.
    for (const std::string peer : {"transformer_lens", "transformers"}) {
      const nlohmann::json r =
          nlohmann::json::parse(capture(pythonEnv() + python + " " + script + " time --model " + folder +
                                        " --job " + jobPath + " --out " + logitsPath + " --library " + peer));
      const at::Tensor peerLogits =
          hs::SafetensorsFile::open(logitsPath)->tensor("logits");  // [1, pos, vocab]
      const std::vector<double> values = r["values"].get<std::vector<double>>();
      double gridDelta = 0;
      for (size_t i = 0; i < subset.size(); ++i)
        gridDelta = std::max(gridDelta, std::abs(values[i] - grid.values(subset[i].first, subset[i].second)));
      const double peerForward = r["forward_median_s"].get<double>();
      const double peerLoop = r["setup_s"].get<double>() + r["per_forward_median_s"].get<double>() * nHeads;
      report[peer] = {{"torch", r["torch"]},
                      {"boot_s", r["boot_s"]},
                      {"forward_s", peerForward},
                      {"forward_runs", r["forward_runs"]},
                      {"forward_ours_over_peer", oursForward / peerForward},
                      {"forward_max_abs_logit_diff", (ourLogits - peerLogits).abs().max().item<double>()},
                      {"forward_max_abs_logit", peerLogits.abs().max().item<double>()},
                      {"patching_loop_s", peerLoop},
                      {"patching_setup_s", r["setup_s"]},
                      {"patching_per_head_s", r["per_forward_median_s"]},
                      {"patching_ours_over_peer", oursSweep / peerLoop},
                      {"patching_max_abs_grid_diff", gridDelta},  // over the heads the peer ran
                      {"load_average_after", loadAverage()}};
      std::cerr << peer << ": forward ours / peer " << oursForward / peerForward << ", patching ours / peer "
                << oursSweep / peerLoop << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_transformer_lens: " << e.what() << "\n";
    fs::remove_all(tmpDir);
    return 1;
  }
  fs::remove_all(tmpDir);
  std::cout << report.dump(2) << "\n";
  return 0;
}
