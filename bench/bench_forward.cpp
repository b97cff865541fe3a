// Forward speed of our engine against plain PyTorch on the same weights, measured in the same run.
//
// A GPT-2-small-shaped random checkpoint (12 layers, 12 heads, d_model 768, vocab 50257; written once by
// tests/load/reference_forward.py into a temp folder, or argv[1] if given) is loaded with loadModel; one
// prompt of 128 tokens; median of N forwards after warm-up under c10::InferenceMode with
// at::set_num_threads(hardware threads). The baseline is reference_forward.py's float32 torch forward of
// the same weights and tokens with the same thread count. Also measured: capturing every hook site of
// every layer vs capturing nothing. Prints one JSON object.
//
// usage: bench_forward [checkpoint-folder] [--runs N] [--tokens T]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>
#include <nlohmann/json.hpp>
#include "bench_util.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "model/load/model_loader.h"
#include "model/onednn_gemm.h"
#include "model/thread_policy.h"
#include "util/allocator.h"

namespace fs = std::filesystem;

namespace {

using hs::bench::python;
std::string script() {
  return std::string(HEADSCOPE_SOURCE_DIR) + "/tests/load/reference_forward.py";
}

using hs::bench::capture;
using hs::bench::median;
using hs::bench::seconds;

}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();  // keep freed activations in the process (util/allocator.h)
  std::string folder;
  int runs = 10, nTokens = 128;
  const int warmup = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (a == "--tokens" && i + 1 < argc) {
      nTokens = std::atoi(argv[++i]);
    } else {
      folder = a;
    }
  }
  const int threads =
      hs::applyThreadPolicy(/*followLoad=*/false).threads;  // the CPU count, fixed (model/thread_policy.h)

  bool temp = false;
  if (folder.empty()) {
    char tmpl[] = "/tmp/headscope-bench-forward-XXXXXX";
    if (!mkdtemp(tmpl)) {
      std::cerr << "cannot create a temp folder\n";
      return 1;
    }
    folder = tmpl;
    temp = true;
    std::cerr << "writing a GPT-2-small-shaped random checkpoint to " << folder << "\n";
    capture(python() + " " + script() + " bench-gen --out " + folder);
  }

  nlohmann::json report;
  try {
    const hs::LoadedModel m = hs::loadModel(folder);
    const hs::ModelConfig& c = m.config;
    std::vector<int64_t> ids;
    for (int i = 0; i < nTokens; ++i)
      ids.push_back((7919LL * i + 13) % c.vocab_size);  // as bench_tokens()
    hs::RunRequest plain;
    plain.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    hs::RunRequest all = plain;
    for (const auto& info : hs::siteTable()) {
      if (info.kind == hs::SiteKind::LnFinal) {
        all.capture.insert(hs::lnFinal());
        continue;
      }
      for (int l = 0; l < c.n_layers; ++l)
        all.capture.insert({info.kind, l});
    }

    c10::InferenceMode guard;
    at::Tensor last;
    size_t capturedBytes = 0;
    auto runPlain = [&] { last = m.model->run(plain).logits; };
    // The same weights copied out of the memory map into ordinary (anonymous) memory: shows what the
    // zero-copy map costs at run time (page-cache pages, no transparent huge pages).
    hs::ModelWeights copied = m.model->weights();
    hs::forEachWeight(copied, [](at::Tensor& t) {
      if (t.defined()) t = t.contiguous().clone();
    });
    const hs::Transformer copiedModel(c, copied);
    auto runCopied = [&] { last = copiedModel.run(plain).logits; };
    auto runCapture = [&] {
      const hs::RunResult r = m.model->run(all);
      capturedBytes = 0;
      for (const auto& kv : r.cache)
        capturedBytes += kv.second.numel() * kv.second.element_size();
    };
    // Alternate the two so that load from other processes hits both alike.
    for (int i = 0; i < warmup; ++i) {
      runPlain();
      runCapture();
      runCopied();
    }
    std::vector<double> tPlain, tCapture, tCopied;
    for (int i = 0; i < runs; ++i) {
      tPlain.push_back(seconds(runPlain));
      tCapture.push_back(seconds(runCapture));
      tCopied.push_back(seconds(runCopied));
    }
    const double ours = median(tPlain), withCapture = median(tCapture), oursCopied = median(tCopied);

    const std::string torchOut =
        capture(python() + " " + script() + " bench-torch --dir " + folder + " --tokens " +
                std::to_string(nTokens) + " --threads " + std::to_string(threads) + " --runs " +
                std::to_string(runs) + " --warmup " + std::to_string(warmup));
    const nlohmann::json t = nlohmann::json::parse(torchOut);
    const double torchMedian = t["median_s"].get<double>();
    double headDiff = 0;  // same weights, same tokens: the two forwards must agree
    const at::Tensor lastRow = last[0][-1].to(at::kDouble);
    for (int i = 0; i < 8; ++i)
      headDiff =
          std::max(headDiff, std::abs(lastRow[i].item<double>() - t["last_logits_head"][i].get<double>()));

    report = {{"benchmark", "forward"},
              {"model", "gpt2-small shape, random weights"},
              {"n_layers", c.n_layers},
              {"d_model", c.d_model},
              {"vocab", c.vocab_size},
              {"tokens", nTokens},
              {"threads", threads},
              {"blas_core", hs::blasCore()},
              {"f32_gemm", hs::float32GemmBackend()},
              {"runs", runs},
              {"ours_median_s", ours},
              {"ours_copied_weights_median_s", oursCopied},
              {"torch_median_s", torchMedian},
              {"ratio_ours_over_torch", ours / torchMedian},
              {"capture_all_sites_median_s", withCapture},
              {"captured_sites", all.capture.size()},
              {"captured_bytes", capturedBytes},
              {"capture_overhead_ratio", withCapture / ours},
              {"last_logits_max_abs_diff_vs_torch", headDiff}};
  } catch (const std::exception& e) {
    std::cerr << "bench_forward: " << e.what() << "\n";
    if (temp) fs::remove_all(folder);
    return 1;
  }
  if (temp) fs::remove_all(folder);
  std::cout << report.dump(2) << "\n";
  return 0;
}
