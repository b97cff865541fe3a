#include "model/intervention_apply.h"

#include <ATen/ATen.h>
#include <ATen/TensorIndexing.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <vector>

#include "util/error.h"

namespace hs {

namespace {

std::string shapeString(at::IntArrayRef sizes) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < sizes.size(); ++i)
    os << (i ? ", " : "") << sizes[i];
  os << "]";
  return os.str();
}

// True when a tensor of shape `from` broadcasts to exactly `to` (numpy rules, no growth of `to`).
bool broadcastsTo(at::IntArrayRef from, at::IntArrayRef to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 1; i <= from.size(); ++i) {
    const int64_t f = from[from.size() - i], t = to[to.size() - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

// Checks one list of indices against [lo, hi) and maps it to local indices (`offset` is subtracted,
// negative entries count from the end of [lo, hi)). Empty = everything.
at::Tensor resolveList(const std::vector<int>& list, int64_t lo, int64_t hi, bool negativeFromEnd,
                       const std::string& what, const std::string& who, const at::Device& device) {
  std::vector<int64_t> local;
  if (list.empty()) {
    for (int64_t i = 0; i < hi - lo; ++i)
      local.push_back(i);
  } else {
    std::set<int64_t> seen;
    for (int v : list) {
      int64_t l = (negativeFromEnd && v < 0) ? (hi - lo) + v : v - lo;
      if (l < 0 || l >= hi - lo) {
        std::ostringstream range;
        range << "[" << lo << ", " << hi << ")";
        if (negativeFromEnd) range << " or [" << -(hi - lo) << ", -1] from the end";
        fail(who, ": ", what, " ", v, " out of range ", range.str());
      }
      if (!seen.insert(l).second) fail(who, ": ", what, " ", v, " is listed twice");
      local.push_back(l);
    }
  }
  return at::tensor(local, at::TensorOptions().dtype(at::kLong)).to(device);  // [n]
}

// The advanced-index list that selects rows × positions × heads of a tensor in site layout. Each
// index tensor is shaped to broadcast along its own axis, so the gathered slice keeps the site's
// axis order: [rows, pos, head, ...] (or [rows, head, q_pos, k_pos] for the pattern).
// (TensorIndex rather than a c10::List of c10::optional: the same call in libtorch 1.13 and 2.x, where
// c10::optional is a deprecated alias.)
std::vector<at::indexing::TensorIndex> selectionIndices(const ResolvedIntervention& r) {
  const SiteInfo& info = siteInfo(r.iv->site.kind);
  std::vector<std::pair<int, at::Tensor>> axes = {{0, r.rows}, {info.posAxis, r.positions}};
  if (info.perHead) axes.push_back({info.headAxis, r.heads});
  std::sort(axes.begin(), axes.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<at::indexing::TensorIndex> indices;
  for (size_t i = 0; i < axes.size(); ++i) {
    std::vector<int64_t> shape(axes.size(), 1);
    shape[i] = -1;
    indices.emplace_back(axes[i].second.view(shape));
  }
  return indices;
}

}  // namespace

std::string describeIntervention(const Intervention& iv, size_t index) {
  std::ostringstream os;
  os << "intervention " << index << " (" << toString(iv.op) << " at " << iv.site.name() << ")";
  return os.str();
}

ResolvedIntervention resolveIntervention(const Intervention& iv, size_t index, const ModelConfig& c,
                                         const RunExtent& e, const at::Device& device) {
  const std::string who = describeIntervention(iv, index);
  const SiteInfo& info = siteInfo(iv.site.kind);
  if (iv.site.kind == SiteKind::LnFinal) {
    if (iv.site.layer != -1) fail(who, ": ln_final has no layer (expected -1, got ", iv.site.layer, ")");
  } else if (iv.site.layer < 0 || iv.site.layer >= c.n_layers) {
    fail(who, ": layer ", iv.site.layer, " out of range [0, ", c.n_layers, ")");
  }
  if (!info.perHead && !iv.heads.empty())
    fail(who, ": site ", iv.site.name(), " has no head axis, but heads were given");

  const bool needsTensor = iv.op == InterventionOp::Mean || iv.op == InterventionOp::Replace ||
                           iv.op == InterventionOp::Add || iv.op == InterventionOp::Interpolate;
  if (needsTensor && !iv.tensor.defined()) fail(who, ": the op needs a tensor, none given");
  if (iv.op == InterventionOp::Interpolate && !iv.alpha.defined())
    fail(who, ": interpolate needs alpha, none given");

  ResolvedIntervention r;
  r.iv = &iv;
  r.index = index;
  r.rows = resolveList(iv.rows, 0, e.batch, false, "batch row", who, device);
  // Non-negative positions are absolute (cache included); only this forward's positions exist.
  r.positions = resolveList(iv.positions, e.cached, e.cached + e.fresh, true, "position", who, device);
  r.vectors = r.rows.numel() * r.positions.numel();
  r.selectsAll = iv.rows.empty() && iv.positions.empty();
  if (info.perHead) {
    r.heads = resolveList(iv.heads, 0, c.n_heads, false, "head", who, device);
    r.vectors *= r.heads.numel();
    r.selectsAll = r.selectsAll && iv.heads.empty();
  }
  // Explicit lists that happen to cover everything in order are also "all" (no indexing).
  return r;
}

at::Tensor applyIntervention(const ResolvedIntervention& r, const at::Tensor& x, bool& owned) {
  const Intervention& iv = *r.iv;
  try {
    std::vector<at::indexing::TensorIndex> indices;
    if (!r.selectsAll) indices = selectionIndices(r);
    const at::Tensor slice = r.selectsAll ? x : x.index(indices);  // [rows, pos, head, ...] in site order

    // The op's value: a full-site-shape tensor is indexed like x; anything else must broadcast.
    auto value = [&](const at::Tensor& t, const char* name) {
      at::Tensor v = t.to(x.options());
      if (v.sizes() == x.sizes() && !r.selectsAll) v = v.index(indices);
      if (!broadcastsTo(v.sizes(), slice.sizes()))
        fail(name, " of shape ", shapeString(t.sizes()), " matches neither the site shape ",
             shapeString(x.sizes()), " nor broadcasts to the selected slice ", shapeString(slice.sizes()));
      return v;
    };

    at::Tensor updated;  // same shape as slice
    switch (iv.op) {
      case InterventionOp::Zero:
        updated = at::zeros_like(slice);
        break;
      case InterventionOp::Mean:
      case InterventionOp::Replace:
        updated = value(iv.tensor, "tensor").expand(slice.sizes());
        break;
      case InterventionOp::Add:
        updated = slice + iv.scale * value(iv.tensor, "tensor");
        break;
      case InterventionOp::Interpolate: {
        const at::Tensor alpha = value(iv.alpha, "alpha");
        updated = (1 - alpha) * slice + alpha * value(iv.tensor, "tensor");
        break;
      }
      case InterventionOp::Scale:
        updated = slice * iv.scale;
        break;
    }
    if (r.selectsAll) {
      owned = false;
      return updated;
    }
    at::Tensor out = owned ? x : x.clone();
    out.index_put_(indices, updated);
    owned = true;
    return out;
  } catch (const std::exception& ex) {
    // c10::Error messages carry a C++ backtrace; keep only the first line.
    std::string what = ex.what();
    const auto nl = what.find('\n');
    if (nl != std::string::npos) what.resize(nl);
    fail(describeIntervention(iv, r.index), ": ", what);
  }
}

}  // namespace hs
