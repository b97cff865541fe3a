#include "model/load/model_loader.h"

#include <ATen/ATen.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "model/io/gguf.h"
#include "model/io/llama2c.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
#include "model/load/gguf_vocab_meta.h"
#include "model/load/silent_heads.h"
#include "util/error.h"

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

// The folder of the running executable, for an installed layout <prefix>/bin + <prefix>/share.
fs::path executableDir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
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

at::ScalarType resolveDtype(const std::string& requested, const ModelConfig& c);

void loadSafetensorsFolder(const fs::path& folder, const fs::path& weights, const std::string& requestedDtype,
                           LoadedModel& out) {
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
  out.config = readHfConfig(configPath.string());
  out.files.push_back(configPath.string());
  const at::ScalarType dtype = resolveDtype(requestedDtype, out.config);
  auto ckpt = std::make_shared<const SafetensorsCheckpoint>(SafetensorsCheckpoint::open(weights.string()));
  for (const auto& f : ckpt->files())
    out.files.push_back(f);
  SafetensorsLookup lookup(ckpt);
  ModelWeights w = withContext(configPath.string(),
                               [&] { return mapWeights(out.config, lookup, weights.string(), dtype); });
  out.model = std::make_shared<Transformer>(out.config, std::move(w));
  out.format = "safetensors";
}

void loadRaw(const RawCheckpoint& raw, at::ScalarType dtype, LoadedModel& out) {
  out.config = raw.config;
  MapLookup lookup(raw);
  out.model = std::make_shared<Transformer>(out.config, mapWeights(out.config, lookup, raw.path, dtype));
}

at::ScalarType resolveDtype(const std::string& requested, const ModelConfig& c) {
  if (requested != "auto") return parseDtype(requested);
  if (c.dtype == "bfloat16" || c.dtype == "float16") return parseDtype(c.dtype);
  return at::kFloat;
}

}  // namespace

at::ScalarType parseDtype(const std::string& dtype) {
  const std::string d = lower(dtype);
  if (d == "float32" || d == "fp32" || d == "f32" || d == "float") return at::kFloat;
  if (d == "bfloat16" || d == "bf16") return at::kBFloat16;
  if (d == "float16" || d == "fp16" || d == "f16" || d == "half") return at::kHalf;
  fail("unsupported dtype \"", dtype, "\" (supported: float32, bfloat16, float16)");
}

std::vector<std::string> toyModelCandidates() {
  std::vector<std::string> c;
#ifdef HEADSCOPE_RESOURCE_DIR
  c.push_back(std::string(HEADSCOPE_RESOURCE_DIR) + "/models/toy-icl");
#endif
  const fs::path exe = executableDir();
  if (!exe.empty()) c.push_back((exe.parent_path() / "share/headscope/models/toy-icl").string());
  c.push_back("/usr/share/headscope/models/toy-icl");
  return c;
}

LoadedModel loadModel(const std::string& pathIn, const LoadOptions& options) {
  LoadedModel out;
  std::string path = pathIn;
  if (path == "toy") {
    std::string tried;
    path.clear();
    for (const auto& c : toyModelCandidates()) {
      tried += (tried.empty() ? "" : ", ") + c;
      if (isFile(fs::path(c) / "config.json")) {
        path = c;
        break;
      }
    }
    if (path.empty())
      fail("the embedded toy model is not built yet: none of ", tried,
           " holds config.json (train it with `headscope-cli train-toy`)");
  }
  out.path = path;

  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) fail(path, ": no such file or folder");

  // Weights are cast once, while mapping (no second copy).
  const std::string ext = lower(p.extension().string());
  if (fs::is_directory(p, ec)) {
    if (!isFile(p / "config.json"))
      fail(path,
           ": not a model folder: no config.json (expected a Hugging Face folder with config.json and "
           "model.safetensors)");
    loadSafetensorsFolder(p, p, options.dtype, out);
  } else if (p.filename() == "config.json") {
    const fs::path folder = p.parent_path();
    loadSafetensorsFolder(folder, folder, options.dtype, out);
  } else if (ext == ".safetensors") {
    const fs::path folder = p.parent_path().empty() ? fs::path(".") : p.parent_path();
    if (!isFile(folder / "config.json"))
      fail(path, ": no config.json beside this .safetensors file (needed to know the architecture)");
    loadSafetensorsFolder(folder, p, options.dtype, out);
  } else if (ext == ".gguf" || (isFile(p) && hasGgufMagic(p))) {
    const RawCheckpoint raw = readGgufModel(path);
    loadRaw(raw, resolveDtype(options.dtype, raw.config), out);
    out.files.push_back(path);
    out.format = "gguf";
  } else if (ext == ".bin") {
    if (lower(p.filename().string()).rfind("pytorch_model", 0) == 0)
      fail(path, ": PyTorch pickle checkpoints are not supported; use model.safetensors");
    const RawCheckpoint raw = readLlama2c(path);
    loadRaw(raw, resolveDtype(options.dtype, raw.config), out);
    out.files.push_back(path);
    out.format = "llama2c";
  } else {
    fail(path,
         ": not a model folder nor a known model file (expected a folder with config.json, "
         "a .safetensors, a llama2.c .bin or a .gguf)");
  }

  // Tokenizer: an explicit one wins; otherwise the format's own place.
  if (!options.tokenizer.empty()) {
    out.tokenizer =
        withContext("tokenizer " + options.tokenizer, [&] { return loadTokenizerFile(options.tokenizer); });
    out.files.push_back(options.tokenizer);
  } else if (out.format == "gguf") {
    attachGgufTokenizer(path, out);
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

  const std::vector<HeadRef> silent = silentHeads(out.model->weights(), out.config);
  if (!silent.empty())
    out.notes.push_back(
        hs::cat(silent.size(), " of ", out.config.n_layers * out.config.n_heads,
                " heads write nothing (all-zero W_O columns, e.g. pruned): ", headsText(silent, ", ")));

  // Device last: weights were already cast while mapping.
  const at::Device device = [&] {
    try {
      return at::Device(options.device);
    } catch (const std::exception&) {
      fail("unsupported device \"", options.device, "\" (expected cpu, cuda or cuda:N)");
    }
  }();
  if (device.is_cuda() && !at::hasCUDA())
    fail("device \"", options.device, "\" requested but this build of libtorch has no CUDA");
  if (!device.is_cpu()) out.model->to(out.model->dtype(), device);
  return out;
}

}  // namespace hs
