#pragma once
// Safetensors (https://github.com/huggingface/safetensors): 8-byte little-endian header length N,
// N bytes of JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}},
// then the data buffer; offsets are relative to the start of the buffer.
//
// Files are memory-mapped; tensor() returns a zero-copy view of the map when the data is aligned.
// Every structural problem is an hs::Error that names the file, the tensor and what was expected.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/io/mapped_file.h"

namespace hs {

struct SafetensorsEntry {
  std::string name, dtype;      // dtype as written: "F32", "BF16", ...
  std::vector<int64_t> shape;   // torch order
  uint64_t begin = 0, end = 0;  // byte range inside the data buffer
};

class SafetensorsFile {  // one .safetensors file
 public:
  static std::shared_ptr<SafetensorsFile> open(const std::string& path);

  const std::string& path() const { return map_->path(); }
  std::vector<std::string> names() const;  // sorted
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  const SafetensorsEntry& entry(const std::string& name) const;  // throws naming file + name
  // CPU tensor in the stored dtype: a zero-copy view of the map when aligned (the tensor keeps the
  // map alive), a copy otherwise.
  at::Tensor tensor(const std::string& name) const;
  const std::map<std::string, std::string>& metadata() const { return metadata_; }  // "__metadata__"
  const MappedFile& mapped() const { return *map_; }
  void release(const std::string& name) const;  // MappedFile::release of the tensor's bytes

 private:
  std::shared_ptr<MappedFile> map_;
  uint64_t dataStart_ = 0;  // 8 + header length
  std::map<std::string, SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

// A checkpoint: a folder with model.safetensors, or shards listed by model.safetensors.index.json,
// or a single .safetensors path. Every tensor lives in exactly one file.
class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open(const std::string& pathOrFolder);

  std::vector<std::string> names() const;  // sorted
  bool has(const std::string& name) const { return owner_.count(name) != 0; }
  at::Tensor tensor(const std::string& name) const;
  const SafetensorsEntry& entry(const std::string& name) const;  // dtype, shape, byte range (header only)
  // Drops the process's pages of the tensor's bytes (MappedFile::release): for a tensor already copied.
  void release(const std::string& name) const;
  std::string fileOf(const std::string& name) const;
  std::vector<std::string> files() const;  // in the order they were opened
  // Each file's "__metadata__" with the file's path, in the order the files were opened.
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> fileMetadata() const;
  const std::string& path() const { return path_; }

 private:
  const SafetensorsFile& fileFor(const std::string& name) const;

  std::string path_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, size_t> owner_;  // tensor name -> index into files_
};

// Safetensors dtype name <-> torch dtype. Throws for names libtorch 1.13 cannot hold.
at::ScalarType safetensorsDtype(const std::string& name, const std::string& context);
std::string safetensorsDtypeName(at::ScalarType t);  // throws for unsupported torch dtypes

// Writes atomically (temp file in the same folder + fsync + rename). Tensors are made contiguous CPU.
// dtypes F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL. The header is padded with spaces so the
// data buffer starts at a multiple of 8, and tensors are laid out largest element size first, so
// every tensor is aligned for its dtype and reads back zero-copy.
void writeSafetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

}  // namespace hs
