#pragma once
// What an analysis hands back: the run (grids, curves, tables, summary — small, JSON) and the large
// tensors it owns (task embeddings, learned vectors, α), named as in run.tensors. The session stores
// both (tensors beside the JSON); the CLI and the GUI receive exactly this.
#include <ATen/core/Tensor.h>

#include <map>
#include <string>

#include "results/results.h"

namespace hs {

struct AnalysisOutput {
  AnalysisRun run;
  std::map<std::string, at::Tensor> tensors;  // CPU, contiguous; keys listed in run.tensors

  // Adds a tensor under `<run.id>/<name>` and lists it in run.tensors; returns the full name.
  std::string addTensor(const std::string& name, const at::Tensor& t) {
    const std::string full = run.id + "/" + name;
    tensors[full] = t.detach().to(at::kCPU).contiguous();
    run.tensors.push_back(full);
    return full;
  }
};

}  // namespace hs
