#include "analysis/icl_eval.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <set>

#include "util/error.h"

namespace hs {
namespace {

// Runs `prompts` in left-padded batches with `capture`; calls onBatch(begin, end, result) per batch.
template <typename F>
void forBatches(const Transformer& model, const std::vector<Prompt>& prompts, int batch, int pad_id,
                const std::set<Site>& capture, const std::vector<Intervention>& interventions, bool lastOnly,
                const AnalysisContext& ctx, const char* what, F&& onBatch) {
  if (prompts.empty()) fail(what, ": no prompts");
  if (batch <= 0) fail(what, ": batch size ", batch);
  for (const Intervention& iv : interventions)
    if (!iv.rows.empty()) fail(what, ": interventions must apply to every row (rows given)");
  const int64_t ctxLen = model.config().context_length;
  at::NoGradGuard noGrad;
  for (size_t b = 0; b < prompts.size(); b += static_cast<size_t>(batch)) {
    ctx.checkCancelled();
    const size_t e = std::min(prompts.size(), b + static_cast<size_t>(batch));
    const PaddedBatch pb = padPrompts(prompts, b, e, pad_id);
    if (ctxLen > 0 && pb.tokens.size(1) > ctxLen)
      fail(what, ": a prompt of ", pb.tokens.size(1), " tokens exceeds the model's context of ", ctxLen);
    RunRequest req;
    req.tokens = pb.tokens.to(model.device());
    req.attention_mask = pb.attention_mask.to(model.device());
    req.capture = capture;
    req.interventions = interventions;
    req.last_logits_only = lastOnly;
    const RunResult r = model.run(req);
    onBatch(b, e, r);
    ctx.report(static_cast<double>(e) / prompts.size(), what);
  }
}

std::set<Site> allOf(int layers, Site (*site)(int)) {
  std::set<Site> s;
  for (int l = 0; l < layers; ++l)
    s.insert(site(l));
  return s;
}

}  // namespace

PaddedBatch padPrompts(const std::vector<Prompt>& prompts, size_t begin, size_t end, int pad_id) {
  if (begin >= end || end > prompts.size()) fail("padPrompts: bad range [", begin, ", ", end, ")");
  int64_t len = 0;
  for (size_t i = begin; i < end; ++i)
    len = std::max<int64_t>(len, prompts[i].length());
  const int64_t B = static_cast<int64_t>(end - begin);
  PaddedBatch pb;
  pb.tokens = at::full({B, len}, pad_id, at::kLong);   // [batch, pos]
  pb.attention_mask = at::zeros({B, len}, at::kLong);  // [batch, pos]
  auto tok = pb.tokens.accessor<int64_t, 2>();
  auto msk = pb.attention_mask.accessor<int64_t, 2>();
  for (int64_t r = 0; r < B; ++r) {
    const Prompt& p = prompts[begin + static_cast<size_t>(r)];
    const int64_t pad = len - p.length();
    pb.pad.push_back(static_cast<int>(pad));
    for (int64_t t = 0; t < p.length(); ++t) {
      tok[r][pad + t] = p.ids[static_cast<size_t>(t)];
      msk[r][pad + t] = 1;
    }
  }
  return pb;
}

IclEval evaluateIcl(const Transformer& model, const std::vector<Prompt>& prompts, const IclEvalOptions& opt,
                    const AnalysisContext& ctx) {
  IclEval ev;
  ev.n = static_cast<int>(prompts.size());
  const std::set<int> labels(opt.label_tokens.begin(), opt.label_tokens.end());
  int correct = 0, inLabels = 0;
  double probSum = 0;
  forBatches(model, prompts, opt.batch, opt.pad_id, {}, opt.interventions, true, ctx, "evaluate",
             [&](size_t b, size_t e, const RunResult& r) {
               const at::Tensor logits = r.logits.select(1, -1).to(at::kCPU, at::kFloat);  // [batch, vocab]
               const at::Tensor logp = at::log_softmax(logits, -1);                        // [batch, vocab]
               const at::Tensor argmax = logits.argmax(-1);                                // [batch]
               for (size_t i = b; i < e; ++i) {
                 const int64_t row = static_cast<int64_t>(i - b);
                 const int pred = static_cast<int>(argmax[row].item<int64_t>());
                 const double lp = logp[row][prompts[i].answer_token].item<double>();
                 ev.predictions.push_back(pred);
                 ev.answer_logprob.push_back(lp);
                 probSum += std::exp(lp);
                 correct += pred == prompts[i].answer_token;
                 inLabels += labels.count(pred) > 0;
               }
             });
  ev.accuracy = static_cast<double>(correct) / ev.n;
  ev.mean_answer_prob = probSum / ev.n;
  ev.tr_ratio =
      labels.empty() ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(inLabels) / ev.n;
  return ev;
}

at::Tensor headOutputWeight(const Transformer& model, int layer, int head) {
  const ModelConfig& c = model.config();
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
    fail("head ", layer, ".", head, " does not exist (", c.n_layers, " layers x ", c.n_heads, " heads)");
  const at::Tensor& wo = model.weights().layers[static_cast<size_t>(layer)].wo;  // [d_model, n_heads*d_head]
  return wo.slice(1, int64_t(head) * c.d_head, int64_t(head + 1) * c.d_head);    // [d_model, d_head]
}

at::Tensor headZAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id,
                       const std::vector<Intervention>& interventions, const AnalysisContext& ctx) {
  const int L = model.config().n_layers;
  std::vector<at::Tensor> rows;  // each [batch, layers, heads, d_head]
  forBatches(model, prompts, 16, pad_id, allOf(L, attnZ), interventions, true, ctx, "head outputs",
             [&](size_t, size_t, const RunResult& r) {
               std::vector<at::Tensor> perLayer;
               for (int l = 0; l < L; ++l)
                 perLayer.push_back(r.cache.at(attnZ(l)).select(1, -1));  // [batch, heads, d_head]
               rows.push_back(at::stack(perLayer, 1).to(at::kCPU, at::kFloat));
             });
  return at::cat(rows, 0);  // [n_prompts, layers, heads, d_head]
}

at::Tensor headOutputsAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id,
                             const std::vector<Intervention>& interventions, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const at::Tensor z = headZAtLast(model, prompts, pad_id, interventions, ctx);  // [n, layers, heads, d_head]
  std::vector<at::Tensor> perLayer;
  for (int l = 0; l < c.n_layers; ++l) {
    const at::Tensor wo = model.weights().layers[static_cast<size_t>(l)].wo.to(at::kCPU, at::kFloat);
    const at::Tensor woHeads =
        wo.reshape({c.d_model, c.n_heads, c.d_head}).permute({1, 2, 0});  // [head, d_head, d_model]
    const at::Tensor zl = z.select(1, l).permute({1, 0, 2});              // [head, n, d_head]
    perLayer.push_back(at::bmm(zl, woHeads).permute({1, 0, 2}));          // [n, head, d_model]
  }
  return at::stack(perLayer, 1).contiguous();  // [n_prompts, layers, heads, d_model]
}

at::Tensor residualsAtLast(const Transformer& model, const std::vector<Prompt>& prompts, int pad_id,
                           const std::vector<Intervention>& interventions, const AnalysisContext& ctx) {
  const int L = model.config().n_layers;
  std::vector<at::Tensor> rows;  // each [batch, layers, d_model]
  forBatches(model, prompts, 16, pad_id, allOf(L, residPost), interventions, true, ctx, "residual stream",
             [&](size_t, size_t, const RunResult& r) {
               std::vector<at::Tensor> perLayer;
               for (int l = 0; l < L; ++l)
                 perLayer.push_back(r.cache.at(residPost(l)).select(1, -1));  // [batch, d_model]
               rows.push_back(at::stack(perLayer, 1).to(at::kCPU, at::kFloat));
             });
  return at::cat(rows, 0);  // [n_prompts, layers, d_model]
}

std::vector<Intervention> headAblation(const std::vector<HeadRef>& heads, bool mean,
                                       const at::Tensor& mean_z) {
  if (mean && !mean_z.defined()) fail("mean ablation needs the mean head outputs (mean_z)");
  std::map<int, std::vector<int>> byLayer;
  for (const HeadRef& h : heads)
    byLayer[h.layer].push_back(h.head);
  std::vector<Intervention> out;
  for (const auto& [layer, hs] : byLayer) {
    Intervention iv;
    iv.site = attnZ(layer);
    iv.heads = hs;
    if (mean) {
      iv.op = InterventionOp::Mean;
      const at::Tensor idx = at::tensor(std::vector<int64_t>(hs.begin(), hs.end()), at::kLong);
      iv.tensor = mean_z.select(0, layer).index_select(0, idx.to(mean_z.device()));  // [heads, d_head]
    } else {
      iv.op = InterventionOp::Zero;
    }
    out.push_back(iv);
  }
  return out;
}

}  // namespace hs
