// headscope-cli info MODEL: architecture and sizes of a checkpoint.
#include <ATen/ATen.h>

#include <set>

#include "cli_common.h"
#include "model/load/silent_heads.h"
#include "results/results_json.h"

namespace hs::cli {
namespace {

// Parameters actually loaded, each storage counted once (tied embeddings share one).
long long loadedParameters(const ModelWeights& w) {
  std::set<const void*> seen;
  long long n = 0;
  auto add = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (!seen.insert(t.data_ptr()).second) return;
    n += t.numel();
  };
  forEachWeight(w, add);  // tied embeddings share storage: counted once
  return n;
}

const char* ropeName(RopeLayout r) {
  switch (r) {
    case RopeLayout::None:
      return "none";
    case RopeLayout::RotateHalf:
      return "rotate-half";
    case RopeLayout::Interleaved:
      return "interleaved";
  }
  return "?";
}

const char* dtypeName(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "float32";
    case at::kBFloat16:
      return "bfloat16";
    case at::kHalf:
      return "float16";
    case at::kDouble:
      return "float64";
    default:
      return "other";
  }
}

}  // namespace

void addInfoCommand(CLI::App& app) {
  static ModelArgs args;
  auto* cmd = app.add_subcommand("info", "Architecture, sizes and files of a checkpoint (JSON)");
  addModelArgs(*cmd, args);
  cmd->callback([] {
    const LoadedModel m = loadForCli(args);
    const ModelConfig& c = m.config;
    nlohmann::json j = {
        {"architecture", toString(c.arch)},
        {"model_type", c.model_type},
        {"format", m.format},
        {"n_layers", c.n_layers},
        {"n_heads", c.n_heads},
        {"n_kv_heads", c.n_kv_heads},
        {"d_model", c.d_model},
        {"d_head", c.d_head},
        {"d_mlp", c.d_mlp},
        {"vocab_size", c.vocab_size},
        {"context_length", c.context_length},
        {"n_params", loadedParameters(m.model->weights())},
        {"dtype", dtypeName(m.model->dtype())},
        {"stored_dtype", c.dtype},
        {"rope", ropeName(c.rope_layout)},
        {"rope_theta", c.rope_theta},
        {"tied_embeddings", c.tied_embeddings},
        {"path", m.path},
        {"files", m.files},
        {"tokenizer", m.tokenizer ? nlohmann::json(m.tokenizer->kind()) : nlohmann::json(nullptr)},
        {"silent_heads", silentHeads(m.model->weights(), c)},
        {"notes", m.notes},
    };
    printJson(j);
  });
}

}  // namespace hs::cli
