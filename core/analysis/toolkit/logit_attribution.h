#pragma once
// Direct logit attribution (Elhage et al. 2021; TransformerLens `decompose_resid` / `logit_attrs`): the final
// residual stream at the last position is the sum of its writers — the embeddings, every head's
// W_O · z, every layer's attention-output bias and every MLP — so with the final norm's scale frozen at
// its value on this prompt, the answer logit splits exactly into one contribution per writer:
//   logit[a] = Σ_c  n(c) · u_a  +  b_final · u_a + b_U[a]
// where n(c) = (c − mean(c) for LayerNorm) / s ⊙ w_final, s = the final norm's RMS (or standard deviation)
// of the whole residual, and u_a the unembedding row of the answer token a.
// Models with norms after the attention and MLP outputs (OLMo-2) are refused: their writers are not
// additive in the residual stream.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "model/intervention.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

struct LogitAttribution {
  int64_t answer = -1;  // the token whose logit is attributed
  int layers = 0, heads = 0;
  double logit = 0;               // the model's logit of `answer` at the last position
  std::vector<double> head;       // [layers * heads] layer-major: each head's W_O · z contribution
  std::vector<double> mlp;        // [layers] each MLP's contribution
  std::vector<double> attn_bias;  // [layers] the attention-output bias (zeros when the model has none)
  double embed = 0;               // token (+ position) embeddings
  double bias = 0;                // the final norm's bias and the unembedding bias
  double headAt(int l, int h) const { return head[static_cast<size_t>(l * heads + h)]; }
  // Σ of every contribution: equals `logit` up to float rounding.
  double total() const;
};

// The attribution of `answer` at the last position of `ids` (one prompt, BOS included as the model sees it),
// under `interventions` (the GUI's ticked heads; empty: the clean model). Throws hs::Error for an answer
// outside the vocabulary, an empty prompt or a model with post-norms.
LogitAttribution directLogitAttribution(const Transformer& model, const std::vector<int64_t>& ids,
                                        int64_t answer, const std::vector<Intervention>& interventions = {});

// The head contributions as a layer × head grid (id "dla.heads", unit "logit").
HeadGrid attributionGrid(const LogitAttribution& a);

}  // namespace hs
