// Forward speed and peak memory at a real model's shape against plain PyTorch, and the fast patching sweep
// at that shape against the naive loop, all in one run.
//
// Model: Llama-3.2-1B's shapes (16 layers × 32 heads, 8 kv heads, d_model 2048, d_mlp 8192, vocab 128256,
// tied embeddings, llama3 RoPE scaling) with random bf16 weights in the HF layout, written once by
// scripts/make_real_shape_checkpoint.py into <build>/bench-data/ and reused by later runs (2.5 GB).
// `--shape llama-3.1-8b` measures the 8B shape instead (15 GB written on request; forward only).
//
// Forward: 128 tokens t_i = (7919 i + 13) mod vocab, all positions' logits, in bfloat16 and in float32. Ours
// (`loadModel` + `Transformer::run`) and PyTorch (bench/real_shapes_torch.py, /usr/bin/python3) each run in a
// child process of their own, so each peak RSS (getrusage ru_maxrss) is that process's alone; each loads the
// checkpoint, casts it, runs one warm-up forward and reports the median of --runs forwards. The two alternate
// for --rounds rounds (default 2), so a slow minute of a shared machine falls on both; the ratio is that of
// the medians over every round's forwards, and each round's own ratio is reported too. Both use every
// hardware thread and the same malloc settings (hs::tuneAllocator).
//
// Sweep: hs::patchingSweep (FromClean hook_z at the last position, logit difference, all 512 heads) against
// the naive loop (one patched full forward per head, last-position logits), timed on --naive-heads heads and
// extrapolated to 512 plus its clean and corrupt runs, in bfloat16 (the dtype such checkpoints are used in).
//
// usage: bench_real_shapes [--shape llama-3.2-1b|llama-3.1-8b] [--runs N] [--rounds R] [--tokens T]
//                          [--naive-heads K] [--no-sweep] [--data DIR]
// Prints one JSON object.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "analysis/patching.h"
#include "bench_util.h"
#include "model/load/model_loader.h"
#include "model/onednn_gemm.h"
#include "model/thread_policy.h"
#include "sweep_bench.h"
#include "util/allocator.h"

namespace fs = std::filesystem;
using hs::bench::benchTokens;
using hs::bench::capture;
using hs::bench::median;
using hs::bench::python;
using hs::bench::seconds;

namespace {

int64_t peakRss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// The child: load at `dtype`, one warm-up forward, the median of `runs` forwards.
int childForward(const std::string& dir, const std::string& dtype, int tokens, int runs) {
  at::NoGradGuard noGrad;
  hs::LoadOptions o;
  o.dtype = dtype;
  hs::LoadedModel m;
  const double loadS = seconds([&] { m = hs::loadModel(dir, o); });
  hs::RunRequest r;
  r.tokens = at::tensor(benchTokens(tokens, m.config.vocab_size), at::kLong).view({1, -1});  // [1, pos]
  at::Tensor logits = m.model->run(r).logits;                                                // warm-up
  std::vector<double> t;
  for (int i = 0; i < runs; ++i)
    t.push_back(seconds([&] { logits = m.model->run(r).logits; }));
  std::cout << nlohmann::json{{"load_s", loadS},
                              {"forward_s", median(t)},
                              {"forward_runs", t},
                              {"peak_rss_bytes", peakRss()},
                              {"logits_last_argmax", logits[0][-1].argmax().item<int64_t>()},
                              {"logits_abs_mean", logits.abs().mean().item<double>()}}
                   .dump()
            << std::endl;
  return 0;
}

std::string selfPath() {
  return fs::read_symlink("/proc/self/exe").string();
}

// The malloc settings hs::tuneAllocator gives our programs, for the Python child too.
const char* kMallocEnv = "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 ";

nlohmann::json sweep(const std::string& dir, int tokens, int naiveHeads, int runs) {
  at::NoGradGuard noGrad;
  hs::LoadOptions o;
  o.dtype = "bf16";
  const hs::LoadedModel m = hs::loadModel(dir, o);
  const hs::Transformer& model = *m.model;
  const int L = m.config.n_layers, H = m.config.n_heads, nHeads = L * H;
  const hs::PatchSweepSpec spec =
      hs::bench::sweepSpec(model, tokens, {tokens / 6, tokens / 2, (tokens * 4) / 5});

  hs::HeadGrid fast = hs::patchingSweep(model, spec);  // warm-up
  std::vector<double> tFast;
  for (int i = 0; i < runs; ++i)
    tFast.push_back(seconds([&] { fast = hs::patchingSweep(model, spec); }));

  // The naive loop over a spread subset of heads, extrapolated (as bench_patching does).
  std::unique_ptr<hs::bench::NaivePatching> naive;
  const double setup = seconds([&] { naive = std::make_unique<hs::bench::NaivePatching>(model, spec); });
  std::vector<double> t;
  double maxDiff = 0;
  for (auto [l, h] : hs::bench::spreadHeads(L, H, naiveHeads)) {
    double v = 0;
    t.push_back(seconds([&] { v = naive->effect(l, h); }));
    maxDiff = std::max(maxDiff, std::abs(v - fast.values(l, h)));
  }
  const double naiveS = setup + median(t) * nHeads;
  return {{"dtype", "bfloat16"},
          {"tokens", tokens},
          {"heads", nHeads},
          {"fast_s", median(tFast)},
          {"fast_runs", tFast},
          {"naive_s", naiveS},
          {"naive_extrapolated", true},
          {"naive_heads_timed", naiveHeads},
          {"naive_per_forward_s", median(t)},
          {"speedup_fast_vs_naive", naiveS / median(tFast)},
          {"max_abs_diff_fast_vs_naive", maxDiff},
          {"max_abs_grid_value", fast.values.cwiseAbs().maxCoeff()}};
}

}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();
  const int threads =
      hs::applyThreadPolicy(/*followLoad=*/false).threads;  // the CPU count, fixed (model/thread_policy.h)
  std::string shape = "llama-3.2-1b", data;
  int runs = 3, rounds = 2, tokens = 128, naiveHeads = 8;
  bool withSweep = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--child-forward" && i + 4 < argc)
      return childForward(argv[i + 1], argv[i + 2], std::atoi(argv[i + 3]), std::atoi(argv[i + 4]));
    if (a == "--shape" && i + 1 < argc)
      shape = argv[++i];
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--tokens" && i + 1 < argc)
      tokens = std::max(8, std::atoi(argv[++i]));
    else if (a == "--naive-heads" && i + 1 < argc)
      naiveHeads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (a == "--no-sweep")
      withSweep = false;
    else {
      std::cerr << "usage: bench_real_shapes [--shape llama-3.2-1b|llama-3.1-8b] [--runs N] [--rounds R] "
                   "[--tokens T] [--naive-heads K] [--no-sweep] [--data DIR]\n";
      return 2;
    }
  }
  if (data.empty()) data = (fs::path(selfPath()).parent_path().parent_path() / "bench-data").string();
  const std::string dir = data + "/" + shape;
  nlohmann::json report;
  try {
    if (!fs::exists(dir + "/config.json")) {
      std::cerr << "bench_real_shapes: writing the " << shape << " checkpoint to " << dir << " (once)\n";
      capture(python() + " " + HEADSCOPE_SOURCE_DIR + "/scripts/make_real_shape_checkpoint.py " + shape +
              " " + dir);
    }
    const hs::ModelProbe probe = hs::probeModel(dir);
    report["model"] = {{"shape", shape},
                       {"params", probe.n_params},
                       {"layers", probe.config.n_layers},
                       {"heads", probe.config.n_heads},
                       {"weights", "random bf16, HF layout"}};
    report["tokens"] = tokens;
    report["threads"] = threads;
    report["blas_core"] = hs::blasCore();  // OpenBLAS's kernels, as OPENBLAS_CORETYPE or the CPU chose
    report["f32_gemm"] = hs::float32GemmBackend();  // oneDNN, or ATen's BLAS (HEADSCOPE_GEMM=aten)
    const std::vector<std::string> dtypes = shape == "llama-3.2-1b"
                                                ? std::vector<std::string>{"bfloat16", "float32"}
                                                : std::vector<std::string>{"bfloat16"};
    for (const std::string& dt : dtypes) {
      nlohmann::json ours, torch, perRound = nlohmann::json::array();
      std::vector<double> oursRuns, torchRuns;
      double oursRss = 0, torchRss = 0;
      for (int r = 0; r < rounds; ++r) {
        ours = nlohmann::json::parse(capture(std::string(kMallocEnv) + selfPath() + " --child-forward " +
                                             dir + " " + dt + " " + std::to_string(tokens) + " " +
                                             std::to_string(runs)));
        torch = nlohmann::json::parse(
            capture(std::string(kMallocEnv) + python() + " " + HEADSCOPE_SOURCE_DIR +
                    "/bench/real_shapes_torch.py " + dir + " " + dt + " --tokens " + std::to_string(tokens) +
                    " --runs " + std::to_string(runs) + " --threads " + std::to_string(threads)));
        for (double t : ours["forward_runs"].get<std::vector<double>>())
          oursRuns.push_back(t);
        for (double t : torch["forward_runs"].get<std::vector<double>>())
          torchRuns.push_back(t);
        oursRss = std::max(oursRss, ours["peak_rss_bytes"].get<double>());
        torchRss = std::max(torchRss, torch["peak_rss_bytes"].get<double>());
        perRound.push_back({{"ours_s", ours["forward_s"]},
                            {"pytorch_s", torch["forward_s"]},
                            {"ratio", ours["forward_s"].get<double>() / torch["forward_s"].get<double>()}});
      }
      // The last round's reports, with every round's forwards, their median and the largest peak RSS.
      ours["forward_runs"] = oursRuns, ours["forward_s"] = median(oursRuns), ours["peak_rss_bytes"] = oursRss;
      torch["forward_runs"] = torchRuns, torch["forward_s"] = median(torchRuns),
      torch["peak_rss_bytes"] = torchRss;
      report["forward_" + dt] = {
          {"ours", ours},
          {"pytorch", torch},
          {"rounds", perRound},
          {"ratio_forward_ours_vs_pytorch", median(oursRuns) / median(torchRuns)},
          {"ratio_peak_rss_ours_vs_pytorch", oursRss / torchRss},
          {"same_last_argmax", ours["logits_last_argmax"] == torch["logits_last_argmax"]}};
    }
    if (withSweep && shape == "llama-3.2-1b") report["sweep"] = sweep(dir, tokens, naiveHeads, runs);
  } catch (const std::exception& e) {
    std::cerr << "bench_real_shapes: " << e.what() << "\n";
    return 1;
  }
  std::cout << report.dump(2) << "\n";
  return 0;
}
