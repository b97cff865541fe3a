#include "analysis/label_projector.h"

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

at::Tensor unembedRows(const Transformer& model, const std::vector<int>& labelTokens) {
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
  return u.index_select(0, idx).to(at::kCPU, at::kFloat).contiguous();  // [labels, d_model]
}

}  // namespace hs
