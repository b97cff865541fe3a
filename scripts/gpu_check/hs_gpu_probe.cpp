// The C++ half of scripts/gpu_check.sh: loads a checkpoint with a device (map) and dtype, runs one forward
// over the given tokens and writes all positions' logits (float32, row-major [pos, vocab]) to a raw file;
// with --time also the forward's and the fast patching sweep's seconds (median of 3 after a warm-up), with
// --grid the sweep's grid, as JSON. The sweep: the corrupt prompt changes positions n/6, n/2 and 4n/5 (id +
// 12345 mod vocab), FromClean patches of hook_z at the last position, metric logit(1) − logit(2) there.
//
// usage: hs_gpu_probe MODEL --device D [--gpu-layers N] --dtype f32|bf16 --ids 1,2,3 --out logits.f32
// [--time] [--grid]
#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/toolkit/patch_sweep.h"
#include "model/device_map.h"
#include "model/load/model_loader.h"
#include "results/results_json.h"
#include "util/user_message.h"

namespace {

// Median of 3 after a warm-up; `f` ends with a host read, which waits for the GPU's queue.
double secondsOf(const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string model, device = "cpu", dtype = "f32", ids, out;
    int gpuLayers = -1;
    bool time = false, grid = false;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
        return argv[++i];
      };
      if (a == "--device")
        device = next();
      else if (a == "--gpu-layers")
        gpuLayers = std::atoi(next().c_str());
      else if (a == "--dtype")
        dtype = next();
      else if (a == "--ids")
        ids = next();
      else if (a == "--out")
        out = next();
      else if (a == "--time")
        time = true;
      else if (a == "--grid")
        grid = true;
      else
        model = a;
    }
    at::NoGradGuard noGrad;
    hs::LoadOptions o;
    o.dtype = dtype;
    o.device = device;
    o.gpu_layers = gpuLayers;
    const hs::LoadedModel m = hs::loadModel(model, o);
    std::vector<int64_t> tok;
    std::stringstream ss(ids);
    for (std::string x; std::getline(ss, x, ',');)
      tok.push_back(std::stoll(x));
    hs::RunRequest r;
    r.tokens = at::tensor(tok, at::kLong).view({1, -1});  // [1, pos]
    const at::Tensor logits =
        m.model->run(r).logits[0].to(at::kCPU, at::kFloat).contiguous();  // [pos, vocab]
    std::ofstream(out, std::ios::binary)
        .write(static_cast<const char*>(logits.data_ptr()), static_cast<std::streamsize>(logits.nbytes()));
    nlohmann::json j = {{"device", hs::deviceMapOf(m.model->weights()).describe()},
                        {"dtype", hs::dtypeName(m.model->dtype())}};
    hs::PatchSweepSpec spec;
    spec.clean = tok;
    spec.corrupt = tok;
    for (size_t p : {tok.size() / 6, tok.size() / 2, tok.size() * 4 / 5})
      spec.corrupt[p] = (spec.corrupt[p] + 12345) % m.config.vocab_size;
    spec.target = 1, spec.distractor = 2;
    spec.metric = hs::PatchMetric::LogitDiff;
    spec.mode = hs::PatchMode::FromClean;
    if (time) {
      j["forward_s"] = secondsOf([&] { m.model->run(r).logits.sum().item<float>(); });
      j["sweep_s"] = secondsOf([&] { hs::patchingSweep(*m.model, spec); });  // its grid is read on the host
      j["sweep_heads"] = m.config.n_layers * m.config.n_heads;
    }
    if (grid) j["grid"] = nlohmann::json(hs::patchingSweep(*m.model, spec)).at("values");  // [layer][head]
    std::cout << j.dump() << std::endl;
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hs_gpu_probe: " << hs::userMessage(e) << std::endl;
    return 1;
  }
}
