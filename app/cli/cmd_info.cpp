// headscope-cli info MODEL: architecture, sizes, files and the memory plan of a checkpoint (JSON).
// Large checkpoints are read from their headers only (safetensors headers, GGUF metadata, the llama2.c
// header, config.json): no weight is read or converted, so an 8B model answers in well under a second. Small
// ones (up to 256 MB of weights, or any with --load) are loaded too, to find heads that write nothing.
#include <ATen/ATen.h>

#include "cli_common.h"
#include "model/load/memory_plan.h"
#include "model/load/silent_heads.h"
#include "model/onednn_gemm.h"
#include "model/thread_policy.h"
#include "results/results_json.h"
#include "tasks/toy_vocabulary.h"
#include "util/error.h"

namespace hs::cli {
namespace {

constexpr uint64_t kLoadForInfoBytes = 256ull * 1000 * 1000;

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

nlohmann::json needsJson(const std::vector<DeviceNeed>& needs) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& n : needs)
    out.push_back(
        {{"device", n.device.str()},
         {"weights_bytes", n.weights},
         {"working_bytes", n.working},
         {"available_bytes", n.available >= 0 ? nlohmann::json(n.available) : nlohmann::json(nullptr)}});
  return out;
}

}  // namespace

void addInfoCommand(CLI::App& app) {
  static ModelArgs args;
  static bool load = false;
  auto* cmd = app.add_subcommand("info", "Architecture, sizes, files and memory plan of a checkpoint (JSON)");
  addModelArgs(*cmd, args);
  cmd->add_flag("--load", load,
                "also load the weights (to list heads that write nothing) whatever their size");
  cmd->callback([] {
    const ModelProbe probe = probeModel(args.model);
    const ModelConfig& c = probe.config;
    std::vector<std::string> notes = probe.notes;

    // The plan loading would make with these options: the dtype "auto" picks, or why it would refuse.
    const DeviceMap devices = parseDeviceMap(args.device, args.gpu_layers, c.n_layers);
    const MemoryBudget budget = currentMemoryBudget();
    nlohmann::json memory;
    std::string dtype;
    bool fits = true;
    try {
      const MemoryPlan plan = planMemory(probe.path, c, probe.n_params, args.dtype, devices, budget);
      dtype = dtypeName(plan.dtype);
      memory["devices"] = needsJson(plan.devices);
      for (const std::string& n : plan.notes())
        notes.push_back(n);
    } catch (const Error& e) {
      fits = false;
      dtype = args.dtype == "auto" ? c.dtype : dtypeName(parseDtype(args.dtype));
      memory["devices"] =
          needsJson(memoryNeeds(c, probe.n_params, c10::elementSize(parseDtype(dtype)), devices, budget));
      notes.push_back(e.what());
    }
    memory["fits"] = fits;
    memory["ram_limit"] = budget.ram_source;

    nlohmann::json silent = nullptr, tokenizer = nullptr;
    LoadedModel m;
    if (fits && (load || probe.stored_bytes <= kLoadForInfoBytes)) {
      m = loadForCli(args);
      silent = silentHeads(m.model->weights(), c);
      for (const auto& n : m.notes)
        if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    } else {
      m.path = probe.path, m.format = probe.format, m.config = c;
      attachTokenizer(m, args.tokenizer);
      notes.insert(notes.end(), m.notes.begin(), m.notes.end());
      notes.push_back(cat("headers only (", formatBytes(probe.stored_bytes),
                          " of weights): heads that write nothing are not checked; --load checks them"));
    }
    if (m.tokenizer) tokenizer = m.tokenizer->kind();

    const ThreadPolicy policy = followLoad();
    nlohmann::json j = {
        {"architecture", toString(c.arch)},
        {"model_type", c.model_type},
        {"format", probe.format},
        {"n_layers", c.n_layers},
        {"n_heads", c.n_heads},
        {"n_kv_heads", c.n_kv_heads},
        {"d_model", c.d_model},
        {"d_head", c.d_head},
        {"d_mlp", c.d_mlp},
        {"vocab_size", c.vocab_size},
        {"context_length", c.context_length},
        {"n_params", probe.n_params},
        {"dtype", dtype},
        {"stored_dtype", c.dtype},
        {"stored_bytes", probe.stored_bytes},
        {"device", devices.describe()},
        {"threads", policy.threads},
        {"threads_source", policy.source},
        {"blas_threads", blasThreading()},
        {"blas_core", blasCore()},
        {"f32_gemm", float32GemmBackend()},
        {"memory", memory},
        {"rope", ropeName(c.rope_layout)},
        {"rope_theta", c.rope_theta},
        {"tied_embeddings", c.tied_embeddings},
        {"path", probe.path},
        {"files", probe.files},
        {"tokenizer", tokenizer},
        {"silent_heads", silent},
        // The toy world's vocabulary: methods use their toy defaults (tasks/toy_vocabulary.h).
        {"toy_vocabulary", isToyVocabulary(c.vocab_size, m.tokenizer.get())},
        {"notes", notes},
    };
    printJson(j);
  });
}

}  // namespace hs::cli
