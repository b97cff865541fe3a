#include "model/io/gguf.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "model/io/map_tensor.h"
#include "util/error.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian u32

struct TypeTraits {
  uint32_t id;
  const char* name;
  int64_t blockSize;   // elements per block (1 for plain types)
  int64_t blockBytes;  // bytes per block; 0 where this reader does not know the layout
  bool decodable;
};

// ggml.c type_traits (block sizes and bytes) for every type id ggml defines.
const TypeTraits kTypes[] = {
    {0, "F32", 1, 4, true},          {1, "F16", 1, 2, true},          {2, "Q4_0", 32, 18, true},
    {3, "Q4_1", 32, 20, false},      {6, "Q5_0", 32, 22, false},      {7, "Q5_1", 32, 24, false},
    {8, "Q8_0", 32, 34, true},       {9, "Q8_1", 32, 36, false},      {10, "Q2_K", 256, 84, false},
    {11, "Q3_K", 256, 110, false},   {12, "Q4_K", 256, 144, false},   {13, "Q5_K", 256, 176, false},
    {14, "Q6_K", 256, 210, false},   {15, "Q8_K", 256, 292, false},   {16, "IQ2_XXS", 256, 66, false},
    {17, "IQ2_XS", 256, 74, false},  {18, "IQ3_XXS", 256, 98, false}, {19, "IQ1_S", 256, 50, false},
    {20, "IQ4_NL", 32, 18, false},   {21, "IQ3_S", 256, 110, false},  {22, "IQ2_S", 256, 82, false},
    {23, "IQ4_XS", 256, 136, false}, {24, "I8", 1, 1, true},          {25, "I16", 1, 2, true},
    {26, "I32", 1, 4, true},         {27, "I64", 1, 8, true},         {28, "F64", 1, 8, true},
    {29, "IQ1_M", 256, 56, false},   {30, "BF16", 1, 2, true},        {34, "TQ1_0", 256, 54, false},
    {35, "TQ2_0", 256, 66, false},
};
constexpr const char* kSupported = "F32, F16, BF16, Q8_0, Q4_0, I8, I16, I32, I64, F64";

// The types stored as a plain array of one libtorch dtype: read from the map as they are, not decoded.
const std::pair<uint32_t, at::ScalarType> kPlainTypes[] = {
    {kGgmlF32, at::kFloat}, {kGgmlF16, at::kHalf}, {kGgmlBF16, at::kBFloat16}, {kGgmlI8, at::kChar},
    {kGgmlI16, at::kShort}, {kGgmlI32, at::kInt},  {kGgmlI64, at::kLong},      {kGgmlF64, at::kDouble},
};

const TypeTraits* findType(uint32_t id) {
  for (const auto& t : kTypes)
    if (t.id == id) return &t;
  return nullptr;
}

// Limits on what the metadata may declare, checked before anything is allocated for it: an array holds
// at most as many elements as the largest vocabulary (tokens, scores, merges), a string at most 64 MiB,
// and all metadata together at most 16M values (a real GGUF has a few hundred thousand).
constexpr uint64_t kMaxArrayElements = uint64_t(1) << 22;
constexpr uint64_t kMaxStringBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxMetadataValues = uint64_t(16) << 20;

// Bounds-checked little-endian reader over the map.
class Reader {
 public:
  Reader(const MappedFile& f) : f_(f) {}

  void need(uint64_t n, const std::string& what) const {
    if (n > f_.size() - off_)
      fail(f_.path(), ": truncated GGUF file: ", what, " at byte ", off_, " needs ", n,
           " bytes, but the file has only ", f_.size(), " bytes");
  }
  template <typename T>
  T pod(const std::string& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, f_.data() + off_, sizeof(T));
    off_ += sizeof(T);
    return v;
  }
  std::string str(const std::string& what) {
    const uint64_t n = pod<uint64_t>(what + " (string length)");
    if (n > kMaxStringBytes)
      fail(f_.path(), ": ", what, " is a string of ", n, " bytes, more than the limit of ", kMaxStringBytes);
    need(n, what);
    std::string s(reinterpret_cast<const char*>(f_.data() + off_), n);
    off_ += n;
    return s;
  }
  uint64_t remaining() const { return f_.size() - off_; }
  uint64_t offset() const { return off_; }
  // Counts `n` more metadata values against kMaxMetadataValues.
  void countValues(uint64_t n, const std::string& key) {
    values_ += n;
    if (values_ > kMaxMetadataValues)
      fail(f_.path(), ": metadata holds more than ", kMaxMetadataValues, " values (at key ", key,
           "), the limit of this reader");
  }

 private:
  const MappedFile& f_;
  uint64_t off_ = 0;
  uint64_t values_ = 0;
};

uint64_t minValueBytes(uint32_t type) {
  switch (type) {
    case kGgufU8:
    case kGgufI8:
    case kGgufBool:
      return 1;
    case kGgufU16:
    case kGgufI16:
      return 2;
    case kGgufU32:
    case kGgufI32:
    case kGgufF32:
      return 4;
    case kGgufU64:
    case kGgufI64:
    case kGgufF64:
    case kGgufString:
      return 8;
    case kGgufArray:
      return 12;
    default:
      return 0;
  }
}

json readValue(Reader& r, uint32_t type, const std::string& key, const std::string& path, int depth) {
  switch (type) {
    case kGgufU8:
      return r.pod<uint8_t>(key);
    case kGgufI8:
      return r.pod<int8_t>(key);
    case kGgufU16:
      return r.pod<uint16_t>(key);
    case kGgufI16:
      return r.pod<int16_t>(key);
    case kGgufU32:
      return r.pod<uint32_t>(key);
    case kGgufI32:
      return r.pod<int32_t>(key);
    case kGgufF32:
      return static_cast<double>(r.pod<float>(key));
    case kGgufBool: {
      const uint8_t b = r.pod<uint8_t>(key);
      if (b > 1)
        fail(path, ": metadata key ", key, " is a bool with byte value ", int(b), ", expected 0 or 1");
      return b != 0;
    }
    case kGgufString:
      return r.str(key);
    case kGgufU64:
      return r.pod<uint64_t>(key);
    case kGgufI64:
      return r.pod<int64_t>(key);
    case kGgufF64:
      return r.pod<double>(key);
    case kGgufArray: {
      if (depth > 8) fail(path, ": metadata key ", key, " nests arrays deeper than 8 levels");
      const uint32_t et = r.pod<uint32_t>(key + " (array element type)");
      const uint64_t n = r.pod<uint64_t>(key + " (array length)");
      const uint64_t minBytes = minValueBytes(et);
      if (minBytes == 0)
        fail(path, ": metadata key ", key, " is an array of unknown value type ", et, " (expected 0..12)");
      if (n > r.remaining() / minBytes)
        fail(path, ": truncated GGUF file: metadata array ", key, " claims ", n, " elements but only ",
             r.remaining(), " bytes remain");
      if (n > kMaxArrayElements)
        fail(path, ": metadata array ", key, " has ", n, " elements, more than the limit of ",
             kMaxArrayElements);
      r.countValues(n, key);
      json a = json::array();
      a.get_ref<json::array_t&>().reserve(n);
      for (uint64_t i = 0; i < n; ++i)
        a.push_back(readValue(r, et, key, path, depth + 1));
      return a;
    }
    default:
      fail(path, ": metadata key ", key, " has unknown value type ", type, " (expected 0..12)");
  }
}

std::string shapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

float halfToFloat(const uint8_t* p) {
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return static_cast<float>(c10::Half(bits, c10::Half::from_bits()));
}

// ggml block_q8_0: fp16 d, int8 qs[32]; x[i] = d * qs[i].
void dequantQ8_0(const uint8_t* src, int64_t blocks, float* dst) {
  at::parallel_for(0, blocks, 1024, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t* blk = src + b * 34;
      const float d = halfToFloat(blk);
      const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
      float* out = dst + b * 32;
      for (int i = 0; i < 32; ++i)
        out[i] = d * static_cast<float>(q[i]);
    }
  });
}

// ggml block_q4_0: fp16 d, uint8 qs[16]; element j is the low nibble of qs[j], element j+16 the high
// nibble; x = d * (nibble - 8).
void dequantQ4_0(const uint8_t* src, int64_t blocks, float* dst) {
  at::parallel_for(0, blocks, 1024, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const uint8_t* blk = src + b * 18;
      const float d = halfToFloat(blk);
      const uint8_t* qs = blk + 2;
      float* out = dst + b * 32;
      for (int j = 0; j < 16; ++j) {
        out[j] = d * static_cast<float>((qs[j] & 0x0F) - 8);
        out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
      }
    }
  });
}

}  // namespace

std::string ggmlTypeName(uint32_t type) {
  const TypeTraits* t = findType(type);
  return t ? t->name : "unknown";
}

std::shared_ptr<GgufFile> GgufFile::open(const std::string& path) {
  auto g = std::shared_ptr<GgufFile>(new GgufFile());
  g->map_ = MappedFile::open(path);
  const MappedFile& f = *g->map_;
  Reader r(f);

  const uint32_t magic = r.pod<uint32_t>("magic");
  if (magic != kGgufMagic) {
    char m[5] = {0};
    std::memcpy(m, f.data(), 4);
    for (char& c : m)
      if (c && (c < 32 || c > 126)) c = '?';
    fail(path, ": bad magic \"", m, "\", expected \"GGUF\" (not a GGUF file)");
  }
  g->version_ = r.pod<uint32_t>("version");
  if (g->version_ != 2 && g->version_ != 3)
    fail(path, ": GGUF version ", g->version_, " is not supported (expected 2 or 3)");
  const uint64_t nTensors = r.pod<uint64_t>("tensor count");
  const uint64_t nKv = r.pod<uint64_t>("metadata count");
  // Each KV takes >= 8+4+1 bytes, each tensor info >= 8+4+8+4+8: reject absurd counts before allocating.
  if (nKv > r.remaining() / 13) fail(path, ": truncated GGUF file: header claims ", nKv, " metadata entries");
  if (nTensors > r.remaining() / 32)
    fail(path, ": truncated GGUF file: header claims ", nTensors, " tensors");

  for (uint64_t i = 0; i < nKv; ++i) {
    const std::string key = r.str("metadata key #" + std::to_string(i));
    const uint32_t type = r.pod<uint32_t>("value type of " + key);
    if (g->metadata_.contains(key)) fail(path, ": metadata key ", key, " appears twice");
    g->metadata_[key] = readValue(r, type, key, path, 0);
  }

  if (auto a = g->metadata_.find("general.alignment"); a != g->metadata_.end()) {
    if (!a->is_number_unsigned() || a->get<uint64_t>() == 0 || a->get<uint64_t>() > (uint64_t(1) << 20) ||
        (a->get<uint64_t>() & (a->get<uint64_t>() - 1)) != 0)
      fail(path, ": general.alignment is ", jsonExcerpt(*a), ", expected a power of two up to 2^20");
    g->alignment_ = a->get<uint64_t>();
  }

  std::set<std::string> names;
  for (uint64_t i = 0; i < nTensors; ++i) {
    GgufTensorInfo t;
    t.name = r.str("tensor name #" + std::to_string(i));
    const std::string where = path + ": tensor " + t.name;
    if (!names.insert(t.name).second) fail(where, ": appears twice");
    const uint32_t nDims = r.pod<uint32_t>("n_dims of " + t.name);
    if (nDims < 1 || nDims > 4) fail(where, ": has ", nDims, " dimensions, expected 1..4");
    std::vector<int64_t> ne(nDims);
    for (auto& d : ne) {
      const uint64_t v = r.pod<uint64_t>("ne of " + t.name);
      if (v == 0 || v > (uint64_t(1) << 40)) fail(where, ": dimension ", v, " is out of range 1..2^40");
      d = static_cast<int64_t>(v);
    }
    t.shape.assign(ne.rbegin(), ne.rend());
    t.type = r.pod<uint32_t>("type of " + t.name);
    t.offset = r.pod<uint64_t>("offset of " + t.name);
    const TypeTraits* tt = findType(t.type);
    if (!tt) fail(where, ": has unknown ggml type id ", t.type);
    if (ne[0] % tt->blockSize != 0)
      fail(where, ": type ", tt->name, " stores blocks of ", tt->blockSize, " values but the row length is ",
           ne[0]);
    if (t.offset % g->alignment_ != 0)
      fail(where, ": data offset ", t.offset, " is not a multiple of the alignment ", g->alignment_);
    g->tensors_.push_back(std::move(t));
  }

  const uint64_t headerEnd = r.offset();
  g->dataStart_ = (headerEnd + g->alignment_ - 1) / g->alignment_ * g->alignment_;
  const uint64_t dataSize = f.size() >= g->dataStart_ ? f.size() - g->dataStart_ : 0;
  if (!g->tensors_.empty() && f.size() < g->dataStart_)
    fail(path, ": truncated GGUF file: the data section would start at byte ", g->dataStart_,
         " but the file has ", f.size(), " bytes");

  // Every tensor's bytes must lie inside the data section and not overlap another's.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // [begin, end) relative to the data section
  std::vector<const GgufTensorInfo*> owners;
  for (const auto& t : g->tensors_) {
    const TypeTraits* tt = findType(t.type);
    const int64_t numel = checkedNumel(t.shape);
    if (numel < 0) fail(path, ": tensor ", t.name, ": shape ", shapeString(t.shape), " overflows");
    const uint64_t bytes =
        static_cast<uint64_t>(numel / tt->blockSize) * static_cast<uint64_t>(tt->blockBytes);
    if (t.offset > dataSize || bytes > dataSize - t.offset)
      fail(path, ": tensor ", t.name, " (", tt->name, " ", shapeString(t.shape), ", ", bytes,
           " bytes at data offset ", t.offset, ") runs past the end of the file (data section has ", dataSize,
           " bytes)");
    ranges.emplace_back(t.offset, t.offset + bytes);
    owners.push_back(&t);
  }
  std::vector<size_t> order(ranges.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  for (size_t i = 1; i < order.size(); ++i) {
    const auto& a = ranges[order[i - 1]];
    const auto& b = ranges[order[i]];
    if (b.first < a.second && b.second > b.first)
      fail(path, ": tensors ", owners[order[i - 1]]->name, " and ", owners[order[i]]->name,
           " overlap in the data section");
  }
  return g;
}

bool GgufFile::has(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return true;
  return false;
}

const GgufTensorInfo& GgufFile::info(const std::string& name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return t;
  fail(path(), ": no tensor named ", name, " (file has ", tensors_.size(), " tensors)");
}

at::Tensor GgufFile::tensor(const std::string& name) const {
  const GgufTensorInfo& t = info(name);
  const TypeTraits* tt = findType(t.type);
  if (!tt->decodable)
    fail(path(), ": tensor ", name, " has type ", tt->name, " (", t.type, "), supported: ", kSupported);
  const uint8_t* bytes = map_->data() + dataStart_ + t.offset;
  for (const auto& [type, dtype] : kPlainTypes)
    if (t.type == type) return tensorFromMap(map_, bytes, t.shape, dtype);
  if (t.type == kGgmlQ8_0 || t.type == kGgmlQ4_0) {
    at::Tensor out = at::empty(t.shape, at::kFloat);  // dequantised, same shape
    const int64_t blocks = out.numel() / 32;
    if (t.type == kGgmlQ8_0)
      dequantQ8_0(bytes, blocks, out.data_ptr<float>());
    else
      dequantQ4_0(bytes, blocks, out.data_ptr<float>());
    return out;
  }
  fail(path(), ": tensor ", name, " has type ", tt->name, " (", t.type, "), supported: ", kSupported);
}

}  // namespace hs
