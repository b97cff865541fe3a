// Speed of the fast activation patching sweep against the naive loop (one full forward per head),
// both measured in the same run, and against a plain PyTorch loop doing the naive sweep
// (bench/bench_patching.py, /usr/bin/python3) on the same weights and tokens.
//
// Model: GPT-2-small-shaped (12 layers × 12 heads, d_model 768, d_mlp 3072, vocab 50257, context 1024),
// weights random normal(0, 0.02), LayerNorm gains 1 and biases 0, tied unembedding, built here in C++.
// They are written once to a temp safetensors file for the Python baseline. Prompt: 128 tokens
// t_i = (7919 i + 13) mod vocab (clean); the corrupt prompt changes positions 20, 64 and 100. Metric:
// logit(target) − logit(distractor) at the last position (target = the clean argmax, distractor = the
// corrupt argmax), last-position FromClean patches of every head's hook_z.
//
// Timings (at::set_num_threads(hardware threads), Python with the same thread count; both processes
// keep freed memory as hs::tuneAllocator sets glibc malloc up):
//  - fast: hs::patchingSweep, all 144 heads, clean and corrupt runs included (median of --runs);
//  - naive: hs::patchingSweepNaive with --full-naive; otherwise the same loop (one patched full
//    forward, last-position logits only) timed over --naive-heads heads spread over the layers and
//    extrapolated to 144 heads, plus its clean and corrupt runs ("naive_extrapolated": true). The
//    extrapolated loop is timed in --runs rounds, each one fast sweep then the heads' forwards, and the
//    speedup is the median of the rounds' ratios (a drift in the machine's speed slows both sides of a
//    round alike); with --full-naive, the full loop's time over the fast sweep's median;
//  - python: the same naive loop in plain PyTorch over the same heads, extrapolated alike;
//  - attribution: hs::attributionPatching (the batched clean and corrupt forward, then a forward and
//    backward of the positions from the patched one on), its Spearman ρ with the exact grid, and its
//    bar: one forward with gradients to every hook_z plus one backward through the whole model.
// The values of the timed naive heads (ours and Python's) are compared with the fast grid.
// Prints one JSON object.
//
// usage: bench_patching [--runs N] [--naive-heads K] [--full-naive] [--no-python] [--tokens T]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include "bench_util.h"
#include "sweep_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "analysis/toolkit/attribution_patching.h"
#include "analysis/toolkit/patch_sweep.h"
#include "model/io/safetensors.h"
#include "model/onednn_gemm.h"
#include "model/thread_policy.h"
#include "results/rank_stats.h"
#include "util/allocator.h"

namespace fs = std::filesystem;

namespace {

using hs::bench::python;

using hs::bench::capture;
using hs::bench::median;
using hs::bench::seconds;

hs::ModelConfig gpt2SmallConfig() {
  hs::ModelConfig c;
  c.arch = hs::Architecture::Gpt2;
  c.model_type = "gpt2";
  c.n_layers = 12, c.n_heads = 12, c.n_kv_heads = 12;
  c.d_model = 768, c.d_head = 64, c.d_mlp = 3072;
  c.vocab_size = 50257, c.context_length = 1024;
  c.norm = hs::NormKind::LayerNorm;
  c.rope_layout = hs::RopeLayout::None;
  c.learned_pos_emb = true;
  c.mlp = hs::MlpKind::Gelu;
  c.activation = "gelu_new";
  c.tied_embeddings = true;
  c.qkv_bias = c.attn_out_bias = c.mlp_bias = true;
  return c;
}

// Random normal(0, 0.02) weights in canonical names (also the names bench_patching.py reads).
std::vector<std::pair<std::string, at::Tensor>> randomTensors(const hs::ModelConfig& c) {
  at::manual_seed(0);
  const int64_t d = c.d_model, m = c.d_mlp;
  auto normal = [](std::vector<int64_t> shape) { return at::randn(shape) * 0.02; };
  std::vector<std::pair<std::string, at::Tensor>> t;
  t.push_back({"tok_emb", normal({c.vocab_size, d})});      // [vocab, d_model]
  t.push_back({"pos_emb", normal({c.context_length, d})});  // [context, d_model]
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    t.push_back({p + "attn_norm_w", at::ones({d})});
    t.push_back({p + "attn_norm_b", at::zeros({d})});
    for (const char* w : {"wq", "wk", "wv", "wo"})
      t.push_back({p + w, normal({d, d})});  // [out, in]
    for (const char* b : {"bq", "bk", "bv", "bo"})
      t.push_back({p + b, at::zeros({d})});
    t.push_back({p + "mlp_norm_w", at::ones({d})});
    t.push_back({p + "mlp_norm_b", at::zeros({d})});
    t.push_back({p + "w_up", normal({m, d})});    // [d_mlp, d_model]
    t.push_back({p + "b_up", at::zeros({m})});    // [d_mlp]
    t.push_back({p + "w_down", normal({d, m})});  // [d_model, d_mlp]
    t.push_back({p + "b_down", at::zeros({d})});  // [d_model]
  }
  t.push_back({"final_norm_w", at::ones({d})});
  t.push_back({"final_norm_b", at::zeros({d})});
  return t;
}

hs::ModelWeights toWeights(const hs::ModelConfig& c,
                           const std::vector<std::pair<std::string, at::Tensor>>& t) {
  std::map<std::string, at::Tensor> byName(t.begin(), t.end());
  hs::ModelWeights w;
  w.tok_emb = byName.at("tok_emb");
  w.pos_emb = byName.at("pos_emb");
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    hs::LayerWeights lw;
    lw.attn_norm_w = byName.at(p + "attn_norm_w"), lw.attn_norm_b = byName.at(p + "attn_norm_b");
    lw.wq = byName.at(p + "wq"), lw.wk = byName.at(p + "wk"), lw.wv = byName.at(p + "wv");
    lw.wo = byName.at(p + "wo");
    lw.bq = byName.at(p + "bq"), lw.bk = byName.at(p + "bk"), lw.bv = byName.at(p + "bv");
    lw.bo = byName.at(p + "bo");
    lw.mlp_norm_w = byName.at(p + "mlp_norm_w"), lw.mlp_norm_b = byName.at(p + "mlp_norm_b");
    lw.w_up = byName.at(p + "w_up"), lw.b_up = byName.at(p + "b_up");
    lw.w_down = byName.at(p + "w_down"), lw.b_down = byName.at(p + "b_down");
    w.layers.push_back(lw);
  }
  w.final_norm_w = byName.at("final_norm_w");
  w.final_norm_b = byName.at("final_norm_b");
  w.unembed = w.tok_emb;
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();  // before any tensor: the fast sweep and the naive loop both run with it
  int runs = 3, naiveHeads = 24, nTokens = 128;
  bool fullNaive = false, withPython = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--naive-heads" && i + 1 < argc) {
      naiveHeads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--tokens" && i + 1 < argc) {
      nTokens = std::max(101, std::atoi(argv[++i]));
    } else if (a == "--full-naive") {
      fullNaive = true;
    } else if (a == "--no-python") {
      withPython = false;
    } else {
      std::cerr
          << "usage: bench_patching [--runs N] [--naive-heads K] [--full-naive] [--no-python] [--tokens T]\n";
      return 2;
    }
  }
  const int threads =
      hs::applyThreadPolicy(/*followLoad=*/false).threads;  // the CPU count, fixed (model/thread_policy.h)

  nlohmann::json report;
  std::string tmpDir;
  try {
    const hs::ModelConfig c = gpt2SmallConfig();
    const int L = c.n_layers, H = c.n_heads, nHeads = L * H;
    const auto tensors = randomTensors(c);
    const hs::Transformer model(c, toWeights(c, tensors));

    const hs::PatchSweepSpec spec = hs::bench::sweepSpec(model, nTokens, {20, 64, 100});

    // Warm-up; the fast sweep is timed below, in rounds with the naive loop.
    hs::HeadGrid fast = hs::patchingSweep(model, spec);
    std::vector<double> tFast;
    auto timeFast = [&] { tFast.push_back(seconds([&] { fast = hs::patchingSweep(model, spec); })); };
    // Where the fast sweep's time goes: one plain forward (the sweep batches two: clean and corrupt) and
    // the moments its progress reports arrive (one per batched forward of variants).
    const double oneForward = seconds([&] {
      at::NoGradGuard noGrad;
      hs::RunRequest r;
      r.tokens = at::tensor(spec.corrupt, at::kLong).view({1, -1});  // [1, pos]
      r.last_logits_only = true;
      model.run(r);
    });
    std::vector<double> layerDone;
    {
      const auto t0 = std::chrono::steady_clock::now();
      hs::AnalysisContext ctx;
      ctx.progress = [&](double, const std::string&) {
        layerDone.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      };
      hs::patchingSweep(model, spec, ctx);
    }

    // The naive loop: patchingSweepNaive over all heads, or the same loop over a spread subset.
    const std::vector<std::pair<int, int>> subset =
        hs::bench::spreadHeads(L, H, fullNaive ? nHeads : std::min(naiveHeads, nHeads));
    double naiveS = 0, naivePerForward = 0, naiveSetup = 0, naiveVsFast = 0;
    std::vector<double> naiveValues;
    std::vector<double> roundSpeedups;  // per round: the naive loop's time over the fast sweep's
    if (fullNaive) {
      for (int i = 0; i < runs; ++i)
        timeFast();
      hs::HeadGrid naive;
      naiveS = seconds([&] { naive = hs::patchingSweepNaive(model, spec); });
      naivePerForward = naiveS / nHeads;
      naiveVsFast = (naive.values - fast.values).cwiseAbs().maxCoeff();
      for (auto [l, h] : subset)
        naiveValues.push_back(naive.values(l, h));
    } else {
      std::unique_ptr<hs::bench::NaivePatching> naive;
      naiveSetup = seconds([&] { naive = std::make_unique<hs::bench::NaivePatching>(model, spec); });
      // Rounds of one fast sweep and the subset's naive forwards, so that a machine whose speed drifts
      // (other tenants, clocks) slows both sides of each round's ratio alike.
      std::vector<double> t;
      for (int round = 0; round < runs; ++round) {
        timeFast();
        std::vector<double> tRound;
        for (auto [l, h] : subset) {
          double v = 0;
          tRound.push_back(seconds([&] { v = naive->effect(l, h); }));
          if (round == 0) naiveValues.push_back(v);
          naiveVsFast = std::max(naiveVsFast, std::abs(v - fast.values(l, h)));
        }
        roundSpeedups.push_back((naiveSetup + median(tRound) * nHeads) / tFast.back());
        t.insert(t.end(), tRound.begin(), tRound.end());
      }
      naivePerForward = median(t);
      naiveS = naiveSetup + naivePerForward * nHeads;
    }
    const double fastS = median(tFast);

    // Attribution patching.
    hs::HeadGrid attrib = hs::attributionPatching(model, spec);
    std::vector<double> tAttrib;
    for (int i = 0; i < runs; ++i)
      tAttrib.push_back(seconds([&] { attrib = hs::attributionPatching(model, spec); }));
    const double rho = hs::spearmanRho(fast, attrib);
    // Its bar: one forward of the corrupt prompt with gradients to every layer's hook_z and one backward
    // of the metric through the whole model.
    std::vector<double> tForwardBackward;
    for (int i = 0; i < runs; ++i)
      tForwardBackward.push_back(seconds([&] {
        hs::RunRequest r;
        r.tokens = at::tensor(spec.corrupt, at::kLong).view({1, -1});  // [1, pos]
        r.last_logits_only = true;
        std::vector<at::Tensor> probes;
        for (int l = 0; l < L; ++l) {
          probes.push_back(at::zeros({1, H, c.d_head}).requires_grad_(true));  // [pos, head, d_head]
          hs::Intervention iv;
          iv.site = hs::attnZ(l);
          iv.positions = {-1};
          iv.op = hs::InterventionOp::Add;
          iv.tensor = probes.back();
          r.interventions.push_back(iv);
        }
        hs::patchMetric(model.run(r).logits.select(1, 0), spec)[0].backward();
      }));

    report["model"] = {{"shape", "gpt2-small"}, {"layers", L},           {"heads", H},
                       {"d_model", c.d_model},  {"vocab", c.vocab_size}, {"weights", "normal(0, 0.02)"}};
    report["tokens"] = nTokens;
    report["threads"] = threads;
    report["blas_core"] = hs::blasCore();  // OpenBLAS's kernels, as OPENBLAS_CORETYPE or the CPU chose
    report["f32_gemm"] = hs::float32GemmBackend();  // oneDNN, or ATen's BLAS (HEADSCOPE_GEMM=aten)
    report["metric"] = "logit_diff";
    report["fast_s"] = fastS;
    report["fast_runs"] = tFast;
    report["one_forward_s"] = oneForward;
    report["fast_layer_done_at_s"] = layerDone;
    report["naive_s"] = naiveS;
    report["naive_per_forward_s"] = naivePerForward;
    report["naive_extrapolated"] = !fullNaive;
    report["naive_heads_timed"] = subset.size();
    // The median of the rounds' ratios (extrapolated naive loop); with --full-naive, the one full loop's
    // time over the fast sweep's median.
    report["speedup_fast_vs_naive"] = roundSpeedups.empty() ? naiveS / fastS : median(roundSpeedups);
    report["speedup_rounds"] = roundSpeedups;
    report["max_abs_diff_fast_vs_naive"] = naiveVsFast;
    report["max_abs_grid_value"] = fast.values.cwiseAbs().maxCoeff();
    report["attribution_s"] = median(tAttrib);
    report["forward_backward_s"] = median(tForwardBackward);
    report["ratio_attribution_vs_forward_backward"] = median(tAttrib) / median(tForwardBackward);
    report["attribution_spearman_vs_exact"] = rho;

    if (withPython) {
      char tmpl[] = "/tmp/headscope-bench-patching-XXXXXX";
      if (!mkdtemp(tmpl)) throw std::runtime_error("cannot create a temp folder");
      tmpDir = tmpl;
      const std::string weights = tmpDir + "/weights.safetensors", job = tmpDir + "/job.json";
      hs::writeSafetensors(weights, tensors);
      nlohmann::json j;
      j["config"] = {{"d_model", c.d_model}, {"n_heads", H}, {"n_layers", L}, {"norm_eps", c.norm_eps}};
      j["clean"] = spec.clean;
      j["corrupt"] = spec.corrupt;
      j["target"] = spec.target;
      j["distractor"] = spec.distractor;
      j["threads"] = threads;
      j["warmup"] = 1;
      nlohmann::json heads = nlohmann::json::array();
      for (auto [l, h] : subset)
        heads.push_back({l, h});
      j["heads"] = heads;
      std::ofstream(job) << j.dump();
      const std::string script = std::string(HEADSCOPE_SOURCE_DIR) + "/bench/bench_patching.py";
      const nlohmann::json py = nlohmann::json::parse(capture(
          // The same malloc settings as hs::tuneAllocator (glibc tunables), so Python's loop is not
          // slowed by returning memory to the kernel either.
          "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 " + python() + " " + script +
          " --weights " + weights + " --job " + job));
      const double pyPerForward = py["per_forward_median_s"].get<double>();
      const double pyNaive = py["setup_s"].get<double>() + pyPerForward * nHeads;
      const std::vector<double> pyValues = py["values"].get<std::vector<double>>();
      double pyVsFast = 0;
      for (size_t i = 0; i < subset.size(); ++i)
        pyVsFast = std::max(pyVsFast, std::abs(pyValues[i] - fast.values(subset[i].first, subset[i].second)));
      report["python_naive_s"] = pyNaive;
      report["python_per_forward_s"] = pyPerForward;
      report["python_heads_timed"] = py["heads"];
      report["speedup_fast_vs_python_naive"] = pyNaive / fastS;
      report["ratio_our_naive_vs_python_naive"] = naiveS / pyNaive;
      report["max_abs_diff_python_vs_fast"] = pyVsFast;
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_patching: " << e.what() << "\n";
    if (!tmpDir.empty()) fs::remove_all(tmpDir);
    return 1;
  }
  if (!tmpDir.empty()) fs::remove_all(tmpDir);
  std::cout << report.dump(2) << "\n";
  return 0;
}
