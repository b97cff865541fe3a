#include "model/load/model_loader.h"

#include <ATen/ATen.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "model/compute_dtype.h"
#include "model/io/gguf.h"
#include "model/io/llama2c.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
#include "model/load/gguf_vocab_meta.h"
#include "model/load/hub_cache.h"
#include "model/load/memory_plan.h"
#include "model/load/silent_heads.h"
#include "util/error.h"
#include "util/resources.h"

namespace fs = std::filesystem;

namespace hs {

namespace {

bool isFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

bool hasGgufMagic(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char magic[4] = {};
  return in.read(magic, 4) && std::string(magic, 4) == "GGUF";
}

// ---------------------------------------------------------------------------------------------------
// Tokenizers beside a model

// A HF folder: tokenizer.json, or vocab.json + merges.txt.
void attachFolderTokenizer(const fs::path& folder, LoadedModel& out) {
  const bool hfJson = isFile(folder / "tokenizer.json");
  const bool bpeFiles = isFile(folder / "vocab.json");
  if (!hfJson && !bpeFiles) {
    out.notes.push_back(hs::cat("no tokenizer found in ", folder.string(),
                                " (looked for tokenizer.json and vocab.json + merges.txt)"));
    return;
  }
  out.tokenizer = loadTokenizer(folder.string());
  for (const char* f : {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt"})
    if (isFile(folder / f)) out.files.push_back((folder / f).string());
}

// llama2.c: the tokenizer is a separate tok.bin; prefer tok<vocab>.bin, then tokenizer.bin, then any tok*.bin
// whose vocabulary has the model's size.
void attachLlama2cTokenizer(const fs::path& bin, LoadedModel& out) {
  const fs::path dir = bin.parent_path().empty() ? fs::path(".") : bin.parent_path();
  std::vector<fs::path> candidates = {dir / ("tok" + std::to_string(out.config.vocab_size) + ".bin"),
                                      dir / "tokenizer.bin"};
  std::vector<fs::path> others;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name.rfind("tok", 0) == 0 && lower(e.path().extension().string()) == ".bin" &&
        e.path() != bin)
      others.push_back(e.path());
  }
  std::sort(others.begin(), others.end());
  candidates.insert(candidates.end(), others.begin(), others.end());
  std::vector<std::string> rejected;
  for (const auto& c : candidates) {
    if (!isFile(c) || fs::equivalent(c, bin, ec)) continue;
    try {
      std::shared_ptr<Tokenizer> tok = loadTokenizer(c.string());
      if (tok->vocabSize() != out.config.vocab_size) {
        rejected.push_back(hs::cat(c.string(), " has ", tok->vocabSize(), " tokens"));
        continue;
      }
      out.tokenizer = std::move(tok);
      out.files.push_back(c.string());
      return;
    } catch (const std::exception& e) {
      rejected.push_back(e.what());
    }
  }
  std::string why;
  for (const auto& r : rejected)
    why += "; " + r;
  out.notes.push_back(hs::cat("no tokenizer found beside ", bin.string(), " (looked for tok",
                              out.config.vocab_size, ".bin, tokenizer.bin, tok*.bin with ",
                              out.config.vocab_size, " tokens", why, "); pass one explicitly"));
}

}  // namespace

// GGUF: the vocabulary lives in the file's tokenizer.ggml.* metadata.
std::shared_ptr<Tokenizer> loadGgufTokenizer(const std::string& path) {
  const auto file = GgufFile::open(path);
  const nlohmann::json& m = file->metadata();
  if (!m.contains("tokenizer.ggml.model") || !m.contains("tokenizer.ggml.tokens")) return nullptr;
  const GgufVocab v = ggufVocabFromMetadata(m, path);
  return withContext(path, [&] { return std::shared_ptr<Tokenizer>(tokenizerFromGguf(v)); });
}

std::shared_ptr<Tokenizer> loadTokenizerFile(const std::string& path) {
  if (fs::path(path).extension() == ".gguf" || (isFile(path) && hasGgufMagic(path))) {
    auto tok = loadGgufTokenizer(path);
    if (!tok) fail(path, ": the GGUF has no tokenizer.ggml.model / tokenizer.ggml.tokens metadata");
    return tok;
  }
  return loadTokenizer(path);
}

namespace {

void attachGgufTokenizer(const std::string& path, LoadedModel& out) {
  out.tokenizer = loadGgufTokenizer(path);
  if (!out.tokenizer)
    out.notes.push_back(path + ": the GGUF has no tokenizer.ggml.model / tokenizer.ggml.tokens metadata");
}

// ---------------------------------------------------------------------------------------------------
// Weights

// Where the weights of a path are and what they are, from headers only.
struct Source {
  ModelProbe probe;
  fs::path weights;                                   // folder or file the safetensors checkpoint opens
  std::shared_ptr<const SafetensorsCheckpoint> ckpt;  // safetensors: opened (headers parsed)
  fs::path configPath;                                // safetensors: config.json
};

Source openSafetensors(const fs::path& folder, const fs::path& weights) {
  const fs::path configPath = folder / "config.json";
  if (!isFile(configPath))
    fail(weights.string(), ": no config.json in ", folder.string(), " (a Hugging Face checkpoint needs one)");
  if (fs::is_directory(weights) && !isFile(weights / "model.safetensors") &&
      !isFile(weights / "model.safetensors.index.json")) {
    std::string hint;
    if (isFile(weights / "pytorch_model.bin") || isFile(weights / "pytorch_model.bin.index.json"))
      hint = " (pytorch_model.bin is not supported: convert it to safetensors)";
    fail(folder.string(), ": no weights: neither model.safetensors nor model.safetensors.index.json", hint);
  }
  Source src;
  src.weights = weights;
  src.configPath = configPath;
  src.probe.format = "safetensors";
  src.probe.config = readHfConfig(configPath.string());
  src.probe.files.push_back(configPath.string());
  src.ckpt = std::make_shared<const SafetensorsCheckpoint>(SafetensorsCheckpoint::open(weights.string()));
  std::error_code ec;
  for (const auto& f : src.ckpt->files()) {
    src.probe.files.push_back(f);
    src.probe.stored_bytes += fs::file_size(f, ec);
  }
  SafetensorsLookup lookup(src.ckpt);
  src.probe.n_params = withContext(configPath.string(),
                                   [&] { return checkWeights(src.probe.config, lookup, weights.string()); });
  return src;
}

// llama2.c and GGUF: the header / metadata only; the tensors are read by readRaw once the plan agrees.
Source openRaw(const std::string& path, const std::string& format) {
  Source src;
  src.probe.format = format;
  const RawCheckpoint raw = format == "gguf" ? readGgufModel(path, false) : readLlama2c(path, false);
  src.probe.config = raw.config;
  src.probe.n_params = parameterCount(raw.config);
  src.probe.files.push_back(path);
  std::error_code ec;
  src.probe.stored_bytes = fs::file_size(path, ec);
  return src;
}

Source openSource(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) fail(path, ": no such file or folder");
  const std::string ext = lower(p.extension().string());
  Source src;
  if (fs::is_directory(p, ec)) {
    if (!isFile(p / "config.json"))
      fail(path,
           ": not a model folder: no config.json (expected a Hugging Face folder with config.json and "
           "model.safetensors)");
    src = openSafetensors(p, p);
  } else if (p.filename() == "config.json") {
    src = openSafetensors(p.parent_path(), p.parent_path());
  } else if (ext == ".safetensors") {
    const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (!isFile(folder / "config.json"))
      fail(path, ": no config.json beside this .safetensors file (needed to know the architecture)");
    src = openSafetensors(folder, p);
  } else if (ext == ".gguf" || (isFile(p) && hasGgufMagic(p))) {
    src = openRaw(path, "gguf");
  } else if (ext == ".bin") {
    if (lower(p.filename().string()).rfind("pytorch_model", 0) == 0)
      fail(path, ": PyTorch pickle checkpoints are not supported; use model.safetensors");
    src = openRaw(path, "llama2c");
  } else {
    fail(path,
         ": not a model folder nor a known model file (expected a folder with config.json, "
         "a .safetensors, a llama2.c .bin or a .gguf)");
  }
  src.probe.path = path;
  return src;
}

// Reads and converts the weights the plan agreed to, each straight onto its device.
ModelWeights readWeights(const Source& src, const MemoryPlan& plan, const DeviceMap& devices) {
  if (src.ckpt) {
    SafetensorsLookup lookup(src.ckpt);
    return withContext(src.configPath.string(), [&] {
      return mapWeights(src.probe.config, lookup, src.weights.string(), plan.dtype, &devices,
                        plan.copy_weights);
    });
  }
  const std::string& path = src.probe.path;
  const RawCheckpoint raw = src.probe.format == "gguf" ? readGgufModel(path) : readLlama2c(path);
  MapLookup lookup(raw);
  return mapWeights(raw.config, lookup, raw.path, plan.dtype, &devices, plan.copy_weights);
}

}  // namespace

at::ScalarType parseDtype(const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d == "float32" || d == "fp32" || d == "f32" || d == "float") return at::kFloat;
  if (d == "bfloat16" || d == "bf16") return at::kBFloat16;
  if (d == "float16" || d == "fp16" || d == "f16" || d == "half") return at::kHalf;
  fail("unsupported dtype \"", dtype, "\" (supported: float32, bfloat16, float16)");
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

std::vector<std::string> toyModelCandidates() {
  std::vector<std::string> c;
#ifdef HEADSCOPE_RESOURCE_DIR
  c.push_back(std::string(HEADSCOPE_RESOURCE_DIR) + "/models/toy-icl");
#endif
  for (const std::string& r : resourceCandidates("models/toy-icl"))
    c.push_back(r);
  return c;
}

void attachTokenizer(LoadedModel& out, const std::string& tokenizer) {
  // An explicit one wins; otherwise the format's own place.
  const fs::path p(out.path);
  if (!tokenizer.empty()) {
    out.tokenizer = withContext("tokenizer " + tokenizer, [&] { return loadTokenizerFile(tokenizer); });
    out.files.push_back(tokenizer);
  } else if (out.format == "gguf") {
    attachGgufTokenizer(out.path, out);
  } else if (out.format == "llama2c") {
    attachLlama2cTokenizer(p, out);
  } else {
    attachFolderTokenizer(
        fs::is_directory(p) ? p : (p.parent_path().empty() ? fs::path(".") : p.parent_path()), out);
  }
  if (out.tokenizer && out.tokenizer->vocabSize() > out.config.vocab_size)
    out.notes.push_back(hs::cat("the tokenizer has ", out.tokenizer->vocabSize(),
                                " tokens but the model only ", out.config.vocab_size,
                                ": ids >= ", out.config.vocab_size, " cannot be run"));
}

std::string resolveModelPath(const std::string& pathIn, std::vector<std::string>* notes) {
  std::string path = pathIn;
  if (path == "toy") {
    std::string tried;
    path.clear();
    for (const auto& c : toyModelCandidates()) {
      tried += (tried.empty() ? "" : ", ") + c;
      if (isFile(fs::path(c) / "config.json")) {
        // The folder itself, not the link to it: a build tree reaches the repository's copy through
        // build/share/headscope/models, and what a run records must be the copy, not that link.
        std::error_code ec;
        const fs::path real = fs::canonical(c, ec);
        path = ec ? c : real.string();
        break;
      }
    }
    if (path.empty())
      fail("the embedded toy model is not built yet: none of ", tried,
           " holds config.json (train it with `headscope-cli train-toy`)");
    return path;
  }
  std::error_code ec;
  if (fs::exists(path, ec) || !looksLikeHubId(path)) return path;
  if (const auto snapshot = resolveHubId(path)) {
    if (notes) notes->push_back(hs::cat(path, " resolved from the hub cache: ", *snapshot));
    return *snapshot;
  }
  if (path.find('/') == std::string::npos) return path;  // a plain name: "no such file" says it best
  fail(path, ": no such file or folder, and the hub cache ", hubCacheDir(),
       " does not hold it (nothing is downloaded; fetch it with `huggingface-cli download ", path,
       "`, or set HF_HOME)");
}

ModelProbe probeModel(const std::string& pathIn) {
  std::vector<std::string> notes;
  const std::string path = resolveModelPath(pathIn, &notes);
  ModelProbe probe = openSource(path).probe;
  probe.notes.insert(probe.notes.begin(), notes.begin(), notes.end());
  return probe;
}

LoadedModel loadModel(const std::string& pathIn, const LoadOptions& options) {
  LoadedModel out;
  const std::string path = resolveModelPath(pathIn, &out.notes);
  out.path = path;
  // A compute dtype the CPU kernels lack (float16 on libtorch 1.13) is refused before any weight is read.
  if (options.dtype != "auto" && options.device == "cpu")
    requireComputeDtype(parseDtype(options.dtype), at::kCPU);

  // Headers first, then the plan (dtype, devices, memory), then the weights, each cast and placed once.
  const Source src = openSource(path);
  out.config = src.probe.config;
  out.format = src.probe.format;
  out.files = src.probe.files;
  const DeviceMap devices = parseDeviceMap(options.device, options.gpu_layers, out.config.n_layers);
  MemoryBudget budget = options.check_memory ? currentMemoryBudget() : MemoryBudget{};
  if (src.ckpt && budget.ram_source == kAddressSpaceLimit) budget.mapped_checkpoint = src.probe.stored_bytes;
  const MemoryPlan plan = planMemory(path, out.config, src.probe.n_params, options.dtype, devices, budget);
  out.model = std::make_shared<Transformer>(out.config, readWeights(src, plan, devices));

  attachTokenizer(out, options.tokenizer);

  const std::vector<HeadRef> silent = silentHeads(out.model->weights(), out.config);
  if (!silent.empty())
    out.notes.push_back(
        hs::cat(silent.size(), " of ", out.config.n_layers * out.config.n_heads,
                " heads write nothing (all-zero W_O columns, e.g. pruned): ", headsText(silent, ", ")));
  for (const std::string& n : plan.notes())
    out.notes.push_back(n);
  if (!devices.single() || devices.usesCuda()) out.notes.push_back("devices: " + devices.describe());
  requireComputeDtype(out.model->dtype(), out.model->device());  // e.g. "auto" on a float16 checkpoint
  return out;
}

}  // namespace hs
