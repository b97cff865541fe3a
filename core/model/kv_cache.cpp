#include <ATen/ATen.h>

#include "model/transformer.h"
#include "util/error.h"

namespace hs {

int64_t KVCache::length() const {
  if (mask.defined()) return mask.size(1);
  if (!k.empty() && k[0].defined()) return k[0].size(2);
  return 0;
}

KVCache KVCache::sliceRows(const std::vector<int64_t>& rows) const {
  if (empty()) return {};
  const int64_t batch = mask.size(0);
  for (int64_t r : rows)
    if (r < 0 || r >= batch) fail("KVCache::sliceRows: row ", r, " out of range [0, ", batch, ")");
  const at::Tensor idx = at::tensor(rows, at::TensorOptions().dtype(at::kLong)).to(mask.device());  // [n]
  KVCache out;
  for (const at::Tensor& t : k)
    out.k.push_back(t.index_select(0, idx));  // [n, kv_head, pos, d_head]
  for (const at::Tensor& t : v)
    out.v.push_back(t.index_select(0, idx));  // [n, kv_head, pos, d_head]
  out.mask = mask.index_select(0, idx);       // [n, pos]
  return out;
}

KVCache KVCache::expandRows(int64_t n) const {
  if (empty()) return {};
  if (mask.size(0) != 1) fail("KVCache::expandRows: the cache holds ", mask.size(0), " rows, expected 1");
  if (n < 1) fail("KVCache::expandRows: n = ", n, ", expected >= 1");
  // Views, not copies: the next forward concatenates new positions into fresh tensors anyway.
  KVCache out;
  for (const at::Tensor& t : k)
    out.k.push_back(t.expand({n, -1, -1, -1}));  // [n, kv_head, pos, d_head]
  for (const at::Tensor& t : v)
    out.v.push_back(t.expand({n, -1, -1, -1}));  // [n, kv_head, pos, d_head]
  out.mask = mask.expand({n, -1});               // [n, pos]
  return out;
}

}  // namespace hs
