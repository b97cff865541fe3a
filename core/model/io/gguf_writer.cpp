#include "model/io/gguf_writer.h"

#include <ATen/ATen.h>

#include "model/io/atomic_file.h"
#include "util/error.h"

namespace hs {

namespace {

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

void putString(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

uint32_t ggmlTypeOf(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return kGgmlF32;
    case at::kHalf:
      return kGgmlF16;
    case at::kBFloat16:
      return kGgmlBF16;
    case at::kChar:
      return kGgmlI8;
    case at::kShort:
      return kGgmlI16;
    case at::kInt:
      return kGgmlI32;
    case at::kLong:
      return kGgmlI64;
    case at::kDouble:
      return kGgmlF64;
    default:
      fail("GGUF writer: torch dtype ", c10::toString(t), " has no ggml type");
  }
}

}  // namespace

void GgufWriter::setAlignment(uint32_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail("GGUF writer: alignment ", alignment, " is not a power of two");
  alignment_ = alignment;
  addU32("general.alignment", alignment);
}

void GgufWriter::addString(const std::string& key, const std::string& v) {
  std::string p;
  putString(p, v);
  addRawValue(key, kGgufString, p);
}

void GgufWriter::addStringArray(const std::string& key, const std::vector<std::string>& v) {
  std::string p;
  put<uint32_t>(p, kGgufString);
  put<uint64_t>(p, v.size());
  for (const auto& s : v)
    putString(p, s);
  addRawValue(key, kGgufArray, p);
}

void GgufWriter::addF32Array(const std::string& key, const std::vector<float>& v) {
  std::string p;
  put<uint32_t>(p, kGgufF32);
  put<uint64_t>(p, v.size());
  for (float x : v)
    put(p, x);
  addRawValue(key, kGgufArray, p);
}

void GgufWriter::addI32Array(const std::string& key, const std::vector<int32_t>& v) {
  std::string p;
  put<uint32_t>(p, kGgufI32);
  put<uint64_t>(p, v.size());
  for (int32_t x : v)
    put(p, x);
  addRawValue(key, kGgufArray, p);
}

void GgufWriter::addRawValue(const std::string& key, uint32_t type, const std::string& payload) {
  kvs_.push_back({key, type, payload});
}

void GgufWriter::addTensor(const std::string& name, const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU).contiguous();
  const uint32_t type = ggmlTypeOf(c.scalar_type());
  std::string bytes(static_cast<const char*>(c.data_ptr()),
                    static_cast<size_t>(c.numel()) * c.element_size());
  addRawTensor(name, c.sizes().vec(), type, std::move(bytes));
}

void GgufWriter::addRawTensor(const std::string& name, const std::vector<int64_t>& shape, uint32_t type,
                              std::string bytes) {
  tensors_.push_back({name, shape, type, std::move(bytes)});
}

std::string GgufWriter::serialize() const {
  auto align = [this](uint64_t n) { return (n + alignment_ - 1) / alignment_ * alignment_; };
  std::string out;
  put<uint32_t>(out, 0x46554747);  // "GGUF"
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size());
  for (const auto& kv : kvs_) {
    putString(out, kv.key);
    put<uint32_t>(out, kv.type);
    out += kv.payload;
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    putString(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (auto it = t.shape.rbegin(); it != t.shape.rend(); ++it)
      put<uint64_t>(out, static_cast<uint64_t>(*it));
    put<uint32_t>(out, t.type);
    put<uint64_t>(out, offset);
    offset = align(offset + t.bytes.size());
  }
  out.resize(align(out.size()), '\0');
  for (const auto& t : tensors_) {
    out += t.bytes;
    out.resize(out.size() + (align(t.bytes.size()) - t.bytes.size()), '\0');
  }
  return out;
}

void GgufWriter::write(const std::string& path) const {
  const std::string bytes = serialize();
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace hs
