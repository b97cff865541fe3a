#pragma once
// Strict mapping from checkpoint tensors (HF key names) to the canonical ModelWeights.
//
// One declarative table per family (architecture.cpp) lists every tensor the architecture needs: its
// checkpoint key, the shape it must have as stored (derived from the config) and how it becomes
// canonical weights (copy, GPT-2 Conv1D transpose, fused-QKV split). Every key of the checkpoint must be
// accounted for: a missing key, an unknown extra key or a wrong shape is an hs::Error naming the key,
// the file and what was expected (in the spirit of llama.cpp's create_tensor). Only known-harmless
// buffers (causal-mask `attn.bias` / `attn.masked_bias`, `attention.bias` / `attention.masked_bias`,
// `rotary_emb.inv_freq`) are ignored, and the vision tower and projector of a Gemma-3 image-text
// checkpoint, which the text forward does not use, are left unread.
// A tensor the files leave out is found under the kept name a safetensors metadata alias record gives
// (TensorLookup::aliasOf); a tied config accepts either the embedding's or the head's name being kept.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/config.h"
#include "model/device_map.h"
#include "model/io/raw_checkpoint.h"
#include "model/weights.h"

namespace hs {

class SafetensorsCheckpoint;

// Read access to a checkpoint's tensors by name.
class TensorLookup {
 public:
  virtual ~TensorLookup() = default;
  virtual std::vector<std::string> names() const = 0;
  virtual at::Tensor tensor(const std::string& name) const = 0;
  // The file holding `name` (for error messages); the checkpoint's path when unknown.
  virtual std::string fileOf(const std::string& name) const = 0;
  // The stored shape; reads no tensor data where the format has a header (safetensors).
  virtual std::vector<int64_t> shape(const std::string& name) const { return tensor(name).sizes().vec(); }
  // Called once `name` has been copied into the model: a memory-mapped source drops its pages.
  virtual void release(const std::string& name) const {}
  // A tensor left out of the files because it shared its storage with a kept one, as recorded in the
  // safetensors "__metadata__" {removed name: kept name} (safetensors.torch.save_model and transformers 4.x
  // write these, e.g. {"model.embed_tokens.weight": "lm_head.weight"} for tied embeddings).
  struct Alias {
    std::string target;  // the kept tensor's name; empty when `name` has no record
    std::string file;    // the file whose metadata holds the record
  };
  virtual Alias aliasOf(const std::string& name) const { return {}; }
};

// Over a (possibly sharded) safetensors checkpoint. Keeps the checkpoint (and its maps) alive.
class SafetensorsLookup : public TensorLookup {
 public:
  explicit SafetensorsLookup(std::shared_ptr<const SafetensorsCheckpoint> ckpt);
  std::vector<std::string> names() const override;
  at::Tensor tensor(const std::string& name) const override;
  std::string fileOf(const std::string& name) const override;
  std::vector<int64_t> shape(const std::string& name) const override;
  void release(const std::string& name) const override;
  Alias aliasOf(const std::string& name) const override;

 private:
  std::shared_ptr<const SafetensorsCheckpoint> ckpt_;
};

// Over tensors already in memory: a RawCheckpoint from the llama2.c / GGUF readers, or a test's map.
class MapLookup : public TensorLookup {
 public:
  MapLookup(std::map<std::string, at::Tensor> tensors, std::string path);
  explicit MapLookup(const RawCheckpoint& raw) : MapLookup(raw.tensors, raw.path) {}
  std::vector<std::string> names() const override;
  at::Tensor tensor(const std::string& name) const override;
  std::string fileOf(const std::string&) const override { return path_; }

 private:
  std::map<std::string, at::Tensor> tensors_;
  std::string path_;
};

// Check every key and shape against the family's table and build the canonical weights, each tensor
// converted to `dtype`, contiguous, on the device `devices` gives its part (CPU when null). Tied embeddings
// share storage (unembed is tok_emb) unless the map puts the head on another device than the embedding.
// A tensor that was copied (converted, transposed or moved) has its source released as soon as its copy is
// written, so a memory-mapped checkpoint converted to float32 costs the float32 copy, not both. The CPU's
// copies are made together, in one pass over the threads (hs::runLoadCopies), after every check.
// `origin` names the checkpoint (folder or file) in error messages. With `alignCopies`, a CPU tensor that
// would still read the stored (mapped) bytes from an address that is not 64-byte aligned is copied into
// aligned memory and its source released (MemoryPlan::copy_weights); without, it is used in place.
ModelWeights mapWeights(const ModelConfig& config, TensorLookup& lookup, const std::string& origin,
                        at::ScalarType dtype = at::kFloat, const DeviceMap* devices = nullptr,
                        bool alignCopies = false);

// The checks of mapWeights (every key accounted for, every shape) from the shapes alone, reading no tensor
// data where the format has a header. Returns the number of parameters the model will hold (a tied
// unembedding counted once).
long long checkWeights(const ModelConfig& config, const TensorLookup& lookup, const std::string& origin);

// The checkpoint keys the family's table expects for this config (sorted), for diagnostics and tests.
std::vector<std::string> expectedKeys(const ModelConfig& config, const TensorLookup& lookup);

}  // namespace hs
