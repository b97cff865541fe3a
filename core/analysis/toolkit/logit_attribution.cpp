#include "analysis/toolkit/logit_attribution.h"

#include <ATen/ATen.h>

#include "util/error.h"

namespace hs {

double LogitAttribution::total() const {
  double s = embed + bias;
  for (double v : head)
    s += v;
  for (double v : mlp)
    s += v;
  for (double v : attn_bias)
    s += v;
  return s;
}

LogitAttribution directLogitAttribution(const Transformer& model, const std::vector<int64_t>& ids,
                                        int64_t answer, const std::vector<Intervention>& interventions) {
  const ModelConfig& c = model.config();
  const ModelWeights& w = model.weights();
  if (ids.empty()) fail("logit attribution: the prompt is empty");
  if (answer < 0 || answer >= c.vocab_size)
    fail("logit attribution: answer token ", answer, " is outside the vocabulary of ", c.vocab_size);
  if (c.norm_placement != NormPlacement::Pre)
    fail("logit attribution: ", toString(c.arch),
         " normalises each attention and MLP output, so their writes do not add up in the residual stream");

  RunRequest req;
  req.tokens = at::tensor(ids, at::kLong).unsqueeze(0).to(model.device());  // [1, pos]
  req.interventions = interventions;
  req.capture.insert(residPre(0));
  for (int l = 0; l < c.n_layers; ++l) {
    req.capture.insert(attnZ(l));
    req.capture.insert(mlpOut(l));
  }
  req.capture.insert(residPost(c.n_layers - 1));
  const RunResult r = model.run(req);
  auto last = [&](const Site& s) {  // the site at the last position in float64 on the CPU
    return r.cache.at(s)[0][-1].to(at::kCPU, at::kDouble);
  };

  // The final norm, frozen at this prompt's residual: n(c) = centre(c) / s ⊙ w_final.
  const bool layerNorm = c.norm == NormKind::LayerNorm;
  const at::Tensor resid = last(residPost(c.n_layers - 1));  // [d_model]
  const at::Tensor centred = layerNorm ? resid - resid.mean() : resid;
  const double s = std::sqrt(centred.pow(2).mean().item<double>() + c.norm_eps);
  const at::Tensor u = w.unembed[answer].to(at::kCPU, at::kDouble);             // [d_model]
  const at::Tensor readout = w.final_norm_w.to(at::kCPU, at::kDouble) * u / s;  // [d_model]
  auto contribution = [&](const at::Tensor& x) {                                // x [d_model]
    const at::Tensor xc = layerNorm ? x - x.mean() : x;
    return at::dot(xc, readout).item<double>();
  };

  LogitAttribution a;
  a.answer = answer;
  a.layers = c.n_layers;
  a.heads = c.n_heads;
  a.logit = r.logits[0][-1][answer].item<double>();
  a.embed = contribution(last(residPre(0)));
  if (w.final_norm_b.defined()) a.bias += at::dot(w.final_norm_b.to(at::kCPU, at::kDouble), u).item<double>();
  if (w.unembed_b.defined()) a.bias += w.unembed_b[answer].item<double>();
  a.head.reserve(static_cast<size_t>(c.n_layers * c.n_heads));
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    const at::Tensor z = last(attnZ(l));  // [head, d_head]
    const at::Tensor wo = lw.wo.to(at::kCPU, at::kDouble).reshape({c.d_model, c.n_heads, c.d_head});
    const at::Tensor writes = at::einsum("mhd,hd->hm", {wo, z});  // [head, d_model]
    for (int h = 0; h < c.n_heads; ++h)
      a.head.push_back(contribution(writes[h]));
    a.attn_bias.push_back(lw.bo.defined() ? contribution(lw.bo.to(at::kCPU, at::kDouble)) : 0.0);
    a.mlp.push_back(contribution(last(mlpOut(l))));
  }
  return a;
}

HeadGrid attributionGrid(const LogitAttribution& a) {
  HeadGrid g;
  g.id = "dla.heads";
  g.name = "Direct logit attribution to the answer";
  g.unit = "logit";
  g.values.resize(a.layers, a.heads);
  for (int l = 0; l < a.layers; ++l)
    for (int h = 0; h < a.heads; ++h)
      g.values(l, h) = a.headAt(l, h);
  return g;
}

}  // namespace hs
