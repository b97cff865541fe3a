#pragma once
// GGUF v2/v3 (llama.cpp, https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
//   "GGUF" u32 version, u64 n_tensors, u64 n_kv, n_kv x {string key, u32 type, value},
//   n_tensors x {string name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset},
//   padding to general.alignment (default 32), then the tensor data (offsets relative to it).
// Strings are u64 length + bytes. ne[0] is the fastest-moving dimension, so torch shape = ne reversed.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/io/mapped_file.h"
#include "model/io/raw_checkpoint.h"

namespace hs {

// ggml tensor type ids (ggml.h enum ggml_type) that matter here.
enum GgmlType : uint32_t {
  kGgmlF32 = 0,
  kGgmlF16 = 1,
  kGgmlQ4_0 = 2,
  kGgmlQ8_0 = 8,
  kGgmlQ4_K = 12,
  kGgmlI8 = 24,
  kGgmlI16 = 25,
  kGgmlI32 = 26,
  kGgmlI64 = 27,
  kGgmlF64 = 28,
  kGgmlBF16 = 30,
};
std::string ggmlTypeName(uint32_t type);  // "Q4_K", or "unknown" for ids ggml does not define

// GGUF metadata value types (gguf_type).
enum GgufValueType : uint32_t {
  kGgufU8 = 0,
  kGgufI8 = 1,
  kGgufU16 = 2,
  kGgufI16 = 3,
  kGgufU32 = 4,
  kGgufI32 = 5,
  kGgufF32 = 6,
  kGgufBool = 7,
  kGgufString = 8,
  kGgufArray = 9,
  kGgufU64 = 10,
  kGgufI64 = 11,
  kGgufF64 = 12,
};

struct GgufTensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // torch order, i.e. ne reversed
  uint32_t type = 0;
  uint64_t offset = 0;  // relative to the start of the data section
};

class GgufFile {
 public:
  // Parses and validates the header and every tensor's byte range. Tensors of types this reader
  // cannot decode (K-quants, ...) are listed; tensor() on them throws.
  static std::shared_ptr<GgufFile> open(const std::string& path);

  uint32_t version() const { return version_; }
  const std::string& path() const { return map_->path(); }
  const nlohmann::json& metadata() const { return metadata_; }  // every KV; arrays as JSON arrays
  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  bool has(const std::string& name) const;
  const GgufTensorInfo& info(const std::string& name) const;  // throws naming file + tensor
  // F32 (and F16/BF16/I8..I64/F64 in their own dtype) as zero-copy views of the map when aligned;
  // Q8_0 and Q4_0 dequantised to F32. Throws naming the tensor and its type for other types.
  at::Tensor tensor(const std::string& name) const;
  uint64_t alignment() const { return alignment_; }
  uint64_t dataOffset() const { return dataStart_; }
  const MappedFile& mapped() const { return *map_; }

 private:
  std::shared_ptr<MappedFile> map_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32, dataStart_ = 0;
  nlohmann::json metadata_ = nlohmann::json::object();
  std::vector<GgufTensorInfo> tensors_;
};

// A GGUF Llama model (general.architecture "llama": llama2.c-converted and llama.cpp-converted
// Llama/Mistral) as config + tensors under Hugging Face Llama names; q/k rows keep GGUF's
// interleaved RoPE layout. Any other architecture, or a tensor without a mapping, is an error.
// withTensors = false: metadata and tensor names checked, no tensor read (config only, for `info`).
RawCheckpoint readGgufModel(const std::string& path, bool withTensors = true);

}  // namespace hs
