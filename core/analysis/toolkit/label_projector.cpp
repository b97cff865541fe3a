#include "analysis/toolkit/label_projector.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace hs {

LabelProjector::LabelProjector(const at::Tensor& rows) {
  if (!rows.defined() || rows.dim() != 2 || rows.size(0) < 1 || rows.size(1) < 1)
    fail("label projector: expected label rows [labels, d_model] with at least one label");
  w_ = rows.detach().to(at::kCPU, at::kDouble).contiguous();  // [labels, d_model]
  const at::Tensor g = at::matmul(w_, w_.t());                // [labels, labels]
  // Symmetric PSD: the Hermitian pseudo-inverse drops eigenvalues below rtol · λ_max, so exactly
  // collinear label rows do not blow up.
  const double rtol = 1e-10 * static_cast<double>(g.size(0));
  gp_ = at::linalg_pinv(g, rtol, /*hermitian=*/true);  // [labels, labels]
}

at::Tensor LabelProjector::project(const at::Tensor& a) const {
  if (a.size(-1) != w_.size(1))
    fail("label projector: vectors have ", a.size(-1), " dims, the label rows ", w_.size(1));
  const at::Tensor x = a.detach().to(at::kCPU, at::kDouble);  // [..., d_model]
  const at::Tensor c = at::matmul(x, w_.t());                 // [..., labels]  W a
  return at::matmul(at::matmul(c, gp_), w_);                  // [..., d_model] Wᵀ G⁺ (W a)
}

at::Tensor LabelProjector::projectedNorm(const at::Tensor& a) const {
  return project(a).norm(2, -1);  // [...]
}

at::Tensor LabelProjector::tlDirection(int gold) const {
  const int64_t n = w_.size(0);
  if (gold < 0 || gold >= n) fail("label projector: gold label ", gold, " outside 0..", n - 1);
  if (n == 1) return w_[0].clone();
  const at::Tensor others = (w_.sum(0) - w_[gold]) / static_cast<double>(n - 1);  // [d_model]
  return w_[gold] - others;                                                       // [d_model]
}

at::Tensor LabelProjector::tlDirections() const {
  std::vector<at::Tensor> dirs;
  for (int y = 0; y < labels(); ++y)
    dirs.push_back(tlDirection(y));
  return at::stack(dirs);  // [labels, d_model]
}

at::Tensor unembedRows(const Transformer& model, const std::vector<int>& labelTokens, bool foldFinalNorm) {
  const at::Tensor& u = model.weights().unembed;  // [vocab, d_model]
  if (!u.defined()) fail("label projector: the model has no unembedding matrix");
  std::vector<int64_t> ids;
  for (int t : labelTokens) {
    if (t < 0 || t >= u.size(0))
      fail("label projector: label token ", t, " outside the vocabulary of ", u.size(0));
    ids.push_back(t);
  }
  if (ids.empty()) fail("label projector: empty label set");
  const at::Tensor idx = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(u.device());  // [labels]
  at::Tensor rows = u.index_select(0, idx).to(at::kCPU, at::kDouble);  // [labels, d_model]
  if (foldFinalNorm) {
    const at::Tensor& g = model.weights().final_norm_w;  // [d_model]
    if (!g.defined()) fail("label projector: the model has no final norm weight to fold");
    at::Tensor gd = g.to(at::kCPU, at::kDouble);
    if (model.config().norm_weight_offset) gd = gd + 1;  // Gemma scales by (1 + w)
    rows = rows * gd;                                    // W_U diag(g)
    if (model.config().norm == NormKind::LayerNorm) rows = rows - rows.mean(-1, /*keepdim=*/true);  // centred
  }
  return rows.to(at::kFloat).contiguous();  // [labels, d_model]
}

at::Tensor finalNormed(const Transformer& model, const at::Tensor& h) {
  return normedBy(model, h, model.weights().final_norm_w, model.weights().final_norm_b);
}

at::Tensor normedBy(const Transformer& model, const at::Tensor& h, const at::Tensor& w, const at::Tensor& b) {
  const ModelConfig& c = model.config();
  if (h.size(-1) != c.d_model) fail("norm: vectors have ", h.size(-1), " dims, the model ", c.d_model);
  if (!w.defined()) fail("norm: the model has no weight for this norm");
  const at::Tensor x = h.detach().to(at::kCPU, at::kDouble);  // [..., d_model]
  at::Tensor g = w.to(at::kCPU, at::kDouble);
  if (c.norm_weight_offset) g = g + 1;  // Gemma scales by (1 + w)
  if (c.norm == NormKind::LayerNorm) {
    const at::Tensor centred = x - x.mean(-1, true);  // [..., d_model]
    const at::Tensor n = centred * at::rsqrt(centred.pow(2).mean(-1, true) + c.norm_eps) * g;
    return b.defined() ? n + b.to(at::kCPU, at::kDouble) : n;
  }
  return x * at::rsqrt(x.pow(2).mean(-1, true) + c.norm_eps) * g;  // [..., d_model] RMSNorm
}

}  // namespace hs
