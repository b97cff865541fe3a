#pragma once
// The label subspace of TSLA (docs/methods.md, "TSLA"): the span of the unembedding rows of the label tokens.
//   W = W_U[Y]  [labels, d_model],   G = W Wᵀ  [labels, labels],   P a = Wᵀ G⁺ (W a).
// P is the orthogonal projector onto span(W's rows); it is applied as two thin products through the
// |Y|×|Y| Gram pseudo-inverse and never materialised as a d×d matrix. The pseudo-inverse makes
// collinear or repeated label rows (rank-deficient G) still give the projection onto their span.
// All maths runs in float64 (G of a real model's unembedding can be badly conditioned); results are
// returned in float64.
#include <ATen/core/Tensor.h>

#include <vector>

#include "model/transformer.h"

namespace hs {

class LabelProjector {
 public:
  // rows: [labels, d_model] (any floating dtype). Throws when there are no rows.
  explicit LabelProjector(const at::Tensor& rows);

  // P a for a batch of vectors: [..., d_model] → [..., d_model] float64.
  at::Tensor project(const at::Tensor& a) const;
  // ‖P a‖₂: [..., d_model] → [...] float64.
  at::Tensor projectedNorm(const at::Tensor& a) const;
  // The TL direction of gold label index y*: W[y*] − mean_{y'≠y*} W[y']: [d_model] float64.
  // With a single label the mean is empty and the direction is W[y*].
  at::Tensor tlDirection(int gold) const;
  // All of them, row y = tlDirection(y): [labels, d_model] float64.
  at::Tensor tlDirections() const;

  int labels() const { return static_cast<int>(w_.size(0)); }
  int dModel() const { return static_cast<int>(w_.size(1)); }
  const at::Tensor& rows() const { return w_; }       // [labels, d_model] float64
  const at::Tensor& gramPinv() const { return gp_; }  // [labels, labels] float64

 private:
  at::Tensor w_;   // [labels, d_model]
  at::Tensor gp_;  // [labels, labels] G⁺
};

// W_U[Y]: the unembedding rows of `labelTokens`: [labels, d_model] float32 on the CPU. Throws naming a
// token outside the vocabulary.
//
// foldFinalNorm: the rows as the logits read the residual stream h through the final norm with its scale
// s(h) frozen, logit_y = ⟨row_y, h⟩ / s(h) + const: each row times the norm's weight g (W_U diag(g));
// for a LayerNorm the rows are then centred, since the norm subtracts h's mean first. A head's write `a`
// then moves logit y by ⟨row_y, a⟩ / s, and the label subspace is the one the model reads, not that of the
// raw rows (which differs wherever g is not uniform).
at::Tensor unembedRows(const Transformer& model, const std::vector<int>& labelTokens,
                       bool foldFinalNorm = false);

// The final norm applied to residual-stream vectors h [..., d_model]: what the unembedding reads (the
// model's ln_final), computed in float64 on the CPU: [..., d_model] float64.
at::Tensor finalNormed(const Transformer& model, const at::Tensor& h);
// The model's norm (its kind, eps and Gemma's 1 + w) with weight w and bias b (may be undefined) applied to
// h [..., d_model], in float64 on the CPU: a block's input norm (attn_norm_w, mlp_norm_w) or the final one.
at::Tensor normedBy(const Transformer& model, const at::Tensor& h, const at::Tensor& w, const at::Tensor& b);

}  // namespace hs
