#pragma once
// A small GGUF v2/v3 writer: tests build GGUF files with it (including quantised blocks laid out by
// hand, or deliberately broken values via addRawValue), and tools can export F32/F16/BF16 models.
// Layout is the one gguf.h reads: header, KVs, tensor infos, zero padding to the alignment, data.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/io/gguf.h"

namespace hs {

class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  void setAlignment(uint32_t alignment);  // adds general.alignment (u32)

  void addU8(const std::string& key, uint8_t v) { addPod(key, kGgufU8, v); }
  void addI8(const std::string& key, int8_t v) { addPod(key, kGgufI8, v); }
  void addU16(const std::string& key, uint16_t v) { addPod(key, kGgufU16, v); }
  void addI16(const std::string& key, int16_t v) { addPod(key, kGgufI16, v); }
  void addU32(const std::string& key, uint32_t v) { addPod(key, kGgufU32, v); }
  void addI32(const std::string& key, int32_t v) { addPod(key, kGgufI32, v); }
  void addF32(const std::string& key, float v) { addPod(key, kGgufF32, v); }
  void addBool(const std::string& key, bool v) { addPod(key, kGgufBool, static_cast<uint8_t>(v)); }
  void addU64(const std::string& key, uint64_t v) { addPod(key, kGgufU64, v); }
  void addI64(const std::string& key, int64_t v) { addPod(key, kGgufI64, v); }
  void addF64(const std::string& key, double v) { addPod(key, kGgufF64, v); }
  void addString(const std::string& key, const std::string& v);
  void addStringArray(const std::string& key, const std::vector<std::string>& v);
  void addF32Array(const std::string& key, const std::vector<float>& v);
  void addI32Array(const std::string& key, const std::vector<int32_t>& v);
  // Any value type id with an already encoded payload (e.g. an unknown type id for a test).
  void addRawValue(const std::string& key, uint32_t type, const std::string& payload);

  // A contiguous CPU copy of `t` in its own dtype (F32, F16, BF16, I8, I16, I32, I64, F64).
  void addTensor(const std::string& name, const at::Tensor& t);
  // Pre-encoded data of any ggml type (Q8_0 / Q4_0 blocks, ...); shape in torch order.
  void addRawTensor(const std::string& name, const std::vector<int64_t>& shape, uint32_t type,
                    std::string bytes);

  std::string serialize() const;
  void write(const std::string& path) const;  // atomic (temp file + rename)

 private:
  template <typename T>
  void addPod(const std::string& key, uint32_t type, T v) {
    addRawValue(key, type, std::string(reinterpret_cast<const char*>(&v), sizeof(T)));
  }
  struct Kv {
    std::string key;
    uint32_t type;
    std::string payload;
  };
  struct Tensor {
    std::string name;
    std::vector<int64_t> shape;
    uint32_t type;
    std::string bytes;
  };
  uint32_t version_;
  uint32_t alignment_ = 32;
  std::vector<Kv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace hs
