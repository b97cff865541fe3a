#include "model/io/llama2c.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>

#include "model/io/map_tensor.h"
#include "model/io/mapped_file.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint32_t kMagic = 0x616b3432;  // "ak42"
constexpr uint64_t kVersionedHeaderBytes = 256;

struct Header {
  int version = 0;
  int dim = 0, hidden = 0, layers = 0, heads = 0, kvHeads = 0, vocab = 0, seqLen = 0;
  bool shared = true;
  int groupSize = 0;  // v2 only
  uint64_t headerBytes = 0;
};

int32_t readI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

Header parseHeader(const MappedFile& f) {
  const std::string& path = f.path();
  Header h;
  if (f.size() < 28)
    fail(path, ": file has ", f.size(), " bytes, too short for a llama2.c header (28 bytes at least)");
  const uint8_t* p = f.data();
  uint32_t magic;
  std::memcpy(&magic, p, 4);
  const uint8_t* fields = p;
  if (magic == kMagic) {
    if (f.size() < kVersionedHeaderBytes)
      fail(path, ": file has ", f.size(), " bytes, too short for the 256-byte llama2.c v1/v2 header");
    h.version = readI32(p + 4);
    if (h.version != 1 && h.version != 2)
      fail(path, ": llama2.c version ", h.version, " is not supported (expected 1 fp32 or 2 Q8_0)");
    fields = p + 8;
    h.shared = p[36] != 0;
    if (p[36] > 1) fail(path, ": shared_classifier flag is ", int(p[36]), ", expected 0 or 1");
    if (h.version == 2) h.groupSize = readI32(p + 37);
    h.headerBytes = kVersionedHeaderBytes;
  } else {
    h.headerBytes = 28;
  }
  h.dim = readI32(fields);
  h.hidden = readI32(fields + 4);
  h.layers = readI32(fields + 8);
  h.heads = readI32(fields + 12);
  h.kvHeads = readI32(fields + 16);
  h.vocab = readI32(fields + 20);
  h.seqLen = readI32(fields + 24);
  if (h.version == 0) {
    h.shared = h.vocab > 0;  // legacy convention: a negative vocab size means "untied classifier follows"
    if (h.vocab == std::numeric_limits<int32_t>::min())  // its negation is no int32
      fail(path, ": llama2.c header: vocab_size ", h.vocab, " is out of range");
    if (h.vocab < 0) h.vocab = -h.vocab;
  }

  // Bounds keep every size computation below far from uint64 overflow.
  auto check = [&](bool ok, auto&&... what) {
    if (!ok)
      fail(path, ": llama2.c v", h.version, " header {dim ", h.dim, ", hidden_dim ", h.hidden, ", n_layers ",
           h.layers, ", n_heads ", h.heads, ", n_kv_heads ", h.kvHeads, ", vocab_size ", h.vocab,
           ", seq_len ", h.seqLen, "} is not a valid model: ", what...);
  };
  check(h.dim > 0 && h.dim <= (1 << 16), "dim must be in 1..65536");
  check(h.hidden > 0 && h.hidden <= (1 << 20), "hidden_dim must be in 1..1048576");
  check(h.layers > 0 && h.layers <= 1024, "n_layers must be in 1..1024");
  check(h.heads > 0 && h.heads <= h.dim, "n_heads must be in 1..dim");
  check(h.kvHeads > 0 && h.kvHeads <= h.heads, "n_kv_heads must be in 1..n_heads");
  check(h.heads % h.kvHeads == 0, "n_heads must be a multiple of n_kv_heads");
  check(h.dim % h.heads == 0, "dim must be a multiple of n_heads");
  check((h.dim / h.heads) % 2 == 0, "head size dim/n_heads must be even (RoPE rotates pairs)");
  check(h.vocab > 0 && h.vocab <= (1 << 22), "vocab_size must be in 1..4194304");
  check(h.seqLen > 0 && h.seqLen <= (1 << 24), "seq_len must be in 1..16777216");
  if (h.version == 2)
    check(h.groupSize > 0 && h.dim % h.groupSize == 0, "group_size ", h.groupSize, " must divide dim");
  return h;
}

// Reads consecutive tensors from the map, in file order.
class Cursor {
 public:
  Cursor(std::shared_ptr<MappedFile> map, uint64_t offset) : map_(std::move(map)), offset_(offset) {}

  at::Tensor f32(const std::vector<int64_t>& shape) {
    const uint64_t n = static_cast<uint64_t>(checkedNumel(shape));
    at::Tensor t = tensorFromMap(map_, map_->data() + offset_, shape, at::kFloat);
    offset_ += n * 4;
    return t;
  }

  // Q8_0 (llama2.c v2): int8 values, then one fp32 scale per group of `group` consecutive values.
  at::Tensor q80(const std::vector<int64_t>& shape, int group, const std::string& what) {
    const int64_t n = checkedNumel(shape);
    if (n % group != 0)
      fail(map_->path(), ": tensor ", what, " has ", n, " values, not a multiple of group_size ", group);
    const int64_t groups = n / group;
    at::Tensor q = at::empty({groups, group}, at::kChar);  // [groups, group]
    std::memcpy(q.data_ptr(), map_->data() + offset_, static_cast<size_t>(n));
    offset_ += static_cast<uint64_t>(n);
    at::Tensor s = at::empty({groups, 1}, at::kFloat);  // [groups, 1]; may be unaligned in the file
    std::memcpy(s.data_ptr(), map_->data() + offset_, static_cast<size_t>(groups) * 4);
    offset_ += static_cast<uint64_t>(groups) * 4;
    return (q.to(at::kFloat) * s).reshape(shape);  // x = q * scale
  }

  uint64_t offset() const { return offset_; }
  void skip(uint64_t bytes) { offset_ += bytes; }

 private:
  std::shared_ptr<MappedFile> map_;
  uint64_t offset_;
};

std::string layerKey(int l, const char* suffix) {
  return "model.layers." + std::to_string(l) + "." + suffix;
}

using TensorMap = decltype(RawCheckpoint::tensors);

// Bytes of the legacy freq_cis_real/imag table of a v0 file.
uint64_t ropeTableBytes(const Header& h) {
  const uint64_t hs = static_cast<uint64_t>(h.dim / h.heads);
  return 2 * static_cast<uint64_t>(h.seqLen) * (hs / 2) * 4;
}

// Checks the file's size against what the header implies, before any tensor is touched. Returns whether
// a v0 file carries the legacy RoPE table.
bool checkFileSize(const Header& h, const MappedFile& map, const std::string& path) {
  const uint64_t D = h.dim, H = h.hidden, L = h.layers, V = h.vocab;
  const uint64_t hs = D / h.heads, kvDim = hs * h.kvHeads;
  const uint64_t normFloats = (2 * L + 1) * D;
  const uint64_t matrixFloats =
      V * D + L * (D * D + 2 * kvDim * D + D * D + 3 * H * D) + (h.shared ? 0 : V * D);
  const uint64_t ropeBytes = ropeTableBytes(h);
  uint64_t expected = 0, alternative = 0;
  if (h.version == 0) {
    expected = h.headerBytes + (normFloats + matrixFloats) * 4 + ropeBytes;
    alternative = expected - ropeBytes;  // some converters drop the legacy RoPE table
  } else if (h.version == 1) {
    expected = alternative = h.headerBytes + (normFloats + matrixFloats) * 4;
  } else {
    const uint64_t G = static_cast<uint64_t>(h.groupSize);
    expected = alternative = h.headerBytes + normFloats * 4 + matrixFloats + matrixFloats / G * 4;
  }
  if (map.size() != expected && map.size() != alternative) {
    if (h.version == 0)
      fail(path, ": file has ", map.size(), " bytes, header implies ", expected, " (or ", alternative,
           " without the legacy RoPE table) for llama2.c v0 {dim ", h.dim, ", hidden_dim ", h.hidden,
           ", n_layers ", h.layers, ", n_heads ", h.heads, ", n_kv_heads ", h.kvHeads, ", vocab ", h.vocab,
           ", seq_len ", h.seqLen, h.shared ? ", shared classifier}" : ", untied classifier}");
    fail(path, ": file has ", map.size(), " bytes, header implies ", expected, " for llama2.c v", h.version,
         " {dim ", h.dim, ", hidden_dim ", h.hidden, ", n_layers ", h.layers, ", n_heads ", h.heads,
         ", n_kv_heads ", h.kvHeads, ", vocab ", h.vocab, ", seq_len ", h.seqLen,
         h.shared ? ", shared classifier}" : ", untied classifier}");
  }
  return h.version == 0 && map.size() == expected;
}

ModelConfig llama2cConfig(const Header& h) {
  ModelConfig c = llamaBaseConfig("llama2c", RopeLayout::Interleaved);
  c.n_layers = h.layers;
  c.n_heads = h.heads;
  c.n_kv_heads = h.kvHeads;
  c.d_model = h.dim;
  c.d_head = h.dim / h.heads;
  c.d_mlp = h.hidden;
  c.vocab_size = h.vocab;
  c.context_length = h.seqLen;
  c.rotary_dim = c.d_head;
  c.tied_embeddings = h.shared;
  c.bos_token_id = 1;
  c.eos_token_id = 2;
  c.dtype = "float32";
  return c;
}

// The tensor sizes of a header: d_model, d_mlp, n_kv_heads * d_head, vocab, n_layers.
struct Dims {
  int64_t d, m, kv, v, nl;
};
Dims dimsOf(const Header& h) {
  return {h.dim, h.hidden, int64_t{h.dim / h.heads} * h.kvHeads, h.vocab, h.layers};
}

// Per-layer blocks are stored [n_layers, ...]; each layer's tensor is a view of its row.
void perLayer(TensorMap& T, const at::Tensor& all, const char* suffix) {
  for (int64_t l = 0; l < all.size(0); ++l)
    T[layerKey(static_cast<int>(l), suffix)] = all.select(0, l);
}

// v0 (llama2.c's legacy export): fp32, the embedding first, an optional RoPE table before the classifier.
void readV0Tensors(const Header& h, bool hasRopeTable, Cursor& cur, TensorMap& T) {
  const auto [d, m, kv, v, nl] = dimsOf(h);
  T["model.embed_tokens.weight"] = cur.f32({v, d});                  // [vocab, d_model]
  perLayer(T, cur.f32({nl, d}), "input_layernorm.weight");           // [L, d_model]
  perLayer(T, cur.f32({nl, d, d}), "self_attn.q_proj.weight");       // [L, n_heads*d_head, d_model]
  perLayer(T, cur.f32({nl, kv, d}), "self_attn.k_proj.weight");      // [L, n_kv*d_head, d_model]
  perLayer(T, cur.f32({nl, kv, d}), "self_attn.v_proj.weight");      // [L, n_kv*d_head, d_model]
  perLayer(T, cur.f32({nl, d, d}), "self_attn.o_proj.weight");       // [L, d_model, n_heads*d_head]
  perLayer(T, cur.f32({nl, d}), "post_attention_layernorm.weight");  // [L, d_model]
  perLayer(T, cur.f32({nl, m, d}), "mlp.gate_proj.weight");          // [L, d_mlp, d_model]  w1
  perLayer(T, cur.f32({nl, d, m}), "mlp.down_proj.weight");          // [L, d_model, d_mlp]  w2
  perLayer(T, cur.f32({nl, m, d}), "mlp.up_proj.weight");            // [L, d_mlp, d_model]  w3
  T["model.norm.weight"] = cur.f32({d});                             // [d_model]
  if (hasRopeTable) cur.skip(ropeTableBytes(h));
  if (!h.shared) T["lm_head.weight"] = cur.f32({v, d});  // [vocab, d_model]
}

// v1: fp32, the norms first.
void readV1Tensors(const Header& h, Cursor& cur, TensorMap& T) {
  const auto [d, m, kv, v, nl] = dimsOf(h);
  perLayer(T, cur.f32({nl, d}), "input_layernorm.weight");           // [L, d_model]
  perLayer(T, cur.f32({nl, d}), "post_attention_layernorm.weight");  // [L, d_model]
  T["model.norm.weight"] = cur.f32({d});                             // [d_model]
  T["model.embed_tokens.weight"] = cur.f32({v, d});                  // [vocab, d_model]
  perLayer(T, cur.f32({nl, d, d}), "self_attn.q_proj.weight");       // [L, n_heads*d_head, d_model]
  perLayer(T, cur.f32({nl, kv, d}), "self_attn.k_proj.weight");      // [L, n_kv*d_head, d_model]
  perLayer(T, cur.f32({nl, kv, d}), "self_attn.v_proj.weight");      // [L, n_kv*d_head, d_model]
  perLayer(T, cur.f32({nl, d, d}), "self_attn.o_proj.weight");       // [L, d_model, n_heads*d_head]
  perLayer(T, cur.f32({nl, m, d}), "mlp.gate_proj.weight");          // [L, d_mlp, d_model]
  perLayer(T, cur.f32({nl, d, m}), "mlp.down_proj.weight");          // [L, d_model, d_mlp]
  perLayer(T, cur.f32({nl, m, d}), "mlp.up_proj.weight");            // [L, d_mlp, d_model]
  if (!h.shared) T["lm_head.weight"] = cur.f32({v, d});              // [vocab, d_model]
}

// v2: fp32 norms, Q8_0 matrices (dequantised to fp32 here).
void readQ80Tensors(const Header& h, Cursor& cur, TensorMap& T) {
  const auto [d, m, kv, v, nl] = dimsOf(h);
  const int g = h.groupSize;
  perLayer(T, cur.f32({nl, d}), "input_layernorm.weight");                // [L, d_model]
  perLayer(T, cur.f32({nl, d}), "post_attention_layernorm.weight");       // [L, d_model]
  T["model.norm.weight"] = cur.f32({d});                                  // [d_model]
  T["model.embed_tokens.weight"] = cur.q80({v, d}, g, "tok_embeddings");  // [vocab, d_model]
  // Each layer's matrix is quantised on its own: values then scales, layer after layer.
  auto quantLayers = [&](std::vector<int64_t> shape, const char* suffix) {
    for (int l = 0; l < h.layers; ++l)
      T[layerKey(l, suffix)] = cur.q80(shape, g, layerKey(l, suffix));
  };
  quantLayers({d, d}, "self_attn.q_proj.weight");
  quantLayers({kv, d}, "self_attn.k_proj.weight");
  quantLayers({kv, d}, "self_attn.v_proj.weight");
  quantLayers({d, d}, "self_attn.o_proj.weight");
  quantLayers({m, d}, "mlp.gate_proj.weight");
  quantLayers({d, m}, "mlp.down_proj.weight");
  quantLayers({m, d}, "mlp.up_proj.weight");
  if (!h.shared) T["lm_head.weight"] = cur.q80({v, d}, g, "output");  // [vocab, d_model]
}

}  // namespace

RawCheckpoint readLlama2c(const std::string& path, bool withTensors) {
  auto map = MappedFile::open(path);
  const Header h = parseHeader(*map);
  const bool hasRopeTable = checkFileSize(h, *map, path);
  RawCheckpoint ck;
  ck.path = path;
  ck.config = llama2cConfig(h);
  if (!withTensors) return ck;

  Cursor cur(map, h.headerBytes);
  if (h.version == 0)
    readV0Tensors(h, hasRopeTable, cur, ck.tensors);
  else if (h.version == 1)
    readV1Tensors(h, cur, ck.tensors);
  else
    readQ80Tensors(h, cur, ck.tensors);
  if (cur.offset() != map->size())
    fail(path, ": read ", cur.offset(), " bytes of ", map->size(), " (internal layout mismatch)");
  return ck;
}

}  // namespace hs
