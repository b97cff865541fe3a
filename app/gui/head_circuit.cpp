#include "head_circuit.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "analysis/toolkit/head_toolkit.h"
#include "model/hooks.h"
#include "model/load/model_loader.h"
#include "util/error.h"
#include "util/user_message.h"

namespace hs::gui {

int HeadCircuit::selfCopies() const {
  int copies = 0;
  for (int i = 0; i < n(); ++i) {
    int best = 0;
    for (int j = 1; j < n(); ++j)
      if (ovAt(i, j) > ovAt(i, best)) best = j;
    copies += best == i ? 1 : 0;
  }
  return copies;
}

namespace {

// The layer's pre-attention norm (LayerNorm or RMSNorm, Gemma's 1 + w) of float32 rows [n, d_model]; the
// identity for models without one (post-norm blocks).
at::Tensor preAttentionNorm(const ModelConfig& c, const LayerWeights& lw, at::Tensor x) {
  if (!lw.attn_norm_w.defined()) return x;
  const at::Tensor w = lw.attn_norm_w.to(x.device(), at::kFloat);  // [d_model]
  if (c.norm == NormKind::LayerNorm) {
    x = x - x.mean(-1, true);
    x = x / at::sqrt(x.pow(2).mean(-1, true) + c.norm_eps) * w;
    if (lw.attn_norm_b.defined()) x = x + lw.attn_norm_b.to(x.device(), at::kFloat);
    return x;
  }
  return x / at::sqrt(x.pow(2).mean(-1, true) + c.norm_eps) * (c.norm_weight_offset ? w + 1.0 : w);
}

std::vector<int> labelTokens(const LoadedModel& m, const TaskSpec& spec) {
  if (!m.tokenizer) fail("the model has no tokenizer");
  const IclTask task = buildIclTask(*m.tokenizer, spec);
  std::vector<int> ids = task.label_tokens;
  if (ids.empty())  // open-ended: the answers' first tokens, as the prompts have them
    for (const Prompt& p : task.icl)
      if (p.answer_token >= 0 && std::find(ids.begin(), ids.end(), p.answer_token) == ids.end())
        ids.push_back(p.answer_token);
  if (static_cast<int>(ids.size()) > kMaxCircuitLabels) ids.resize(kMaxCircuitLabels);
  if (ids.empty()) fail("the task has no label or answer tokens");
  return ids;
}

void computePattern(const LoadedModel& m, HeadRef head, const QString& text, HeadCircuit& c) {
  if (!m.tokenizer) fail("the model has no tokenizer; open it with one");
  const std::vector<int> enc = m.tokenizer->encode(text.toStdString());
  if (enc.empty()) fail("the prompt is empty");
  const std::vector<int64_t> ids(enc.begin(), enc.end());
  RunRequest req;
  req.tokens = at::tensor(ids, at::kLong).unsqueeze(0).to(m.model->device());  // [1, pos]
  req.capture.insert(attnPattern(head.layer));
  const at::Tensor pat = m.model->run(req)
                             .cache.at(attnPattern(head.layer))[0][head.head]
                             .to(at::kDouble)
                             .cpu()
                             .contiguous();  // [q, k]
  c.pattern.head = head;
  c.pattern.n = static_cast<int>(ids.size());
  for (int64_t id : ids)
    c.pattern.pieces << QString::fromStdString(m.tokenizer->piece(static_cast<int>(id)));
  c.pattern.weights.assign(pat.data_ptr<double>(), pat.data_ptr<double>() + pat.numel());
}

void computeOv(const LoadedModel& m, HeadRef head, const TaskSpec& spec, int topTokens, HeadCircuit& c) {
  requireAdditiveHeadWrites(*m.model, "the OV circuit");
  const ModelConfig& cfg = m.config;
  const std::vector<int> labels = labelTokens(m, spec);
  const LayerWeights& lw = m.model->weights().layers[static_cast<size_t>(head.layer)];
  const at::Device dev = lw.wv.device();
  const int64_t dh = cfg.d_head, kv = head.head / std::max(1, cfg.n_heads / std::max(1, cfg.n_kv_heads));
  const at::Tensor ids = at::tensor(std::vector<int64_t>(labels.begin(), labels.end()), at::kLong);  // [n]
  const at::Tensor& emb = m.model->weights().tok_emb;                                  // [vocab, d_model]
  const at::Tensor e = emb.index_select(0, ids.to(emb.device())).to(dev, at::kFloat);  // [n, d_model]
  const at::Tensor x = preAttentionNorm(cfg, lw, e);                                   // [n, d_model]
  const at::Tensor wv = lw.wv.slice(0, kv * dh, (kv + 1) * dh).to(at::kFloat);         // [d_head, d_model]
  at::Tensor v = at::matmul(x, wv.t());                                                // [n, d_head]
  if (lw.bv.defined()) v = v + lw.bv.slice(0, kv * dh, (kv + 1) * dh).to(dev, at::kFloat);
  const at::Tensor wo =
      headOutputWeight(*m.model, head.layer, head.head).to(dev, at::kFloat);  // [d_model, d_head]
  const at::Tensor out = at::matmul(v, wo.t());                               // [n, d_model]
  // The biases the final norm and the unembedding add to every row are left out: logitLens of a zero write.
  const at::Tensor logits = (m.model->logitLens(out) - m.model->logitLens(at::zeros_like(out.slice(0, 0, 1))))
                                .to(at::kDouble)
                                .cpu();                                  // [n, vocab]
  const at::Tensor onLabels = logits.index_select(1, ids).contiguous();  // [n, n]
  c.labelIds = labels;
  for (int id : labels)
    c.labels << QString::fromStdString(m.tokenizer->piece(id));
  c.ov.assign(onLabels.data_ptr<double>(), onLabels.data_ptr<double>() + onLabels.numel());
  const auto top = at::topk(logits, std::min<int64_t>(topTokens, logits.size(1)), 1);
  const at::Tensor values = std::get<0>(top), indices = std::get<1>(top);  // [n, topTokens]
  for (int64_t i = 0; i < indices.size(0); ++i) {
    std::vector<TopToken> row;
    for (int64_t t = 0; t < indices.size(1); ++t) {
      const int id = static_cast<int>(indices[i][t].item<int64_t>());
      row.push_back({id, QString::fromStdString(m.tokenizer->piece(id)), values[i][t].item<double>(), NAN});
    }
    c.promoted.push_back(row);
  }
}

}  // namespace

HeadCircuit computeHeadCircuit(const LoadedModel& m, HeadRef head, const QString& text, const TaskSpec& task,
                               int topTokens) {
  const ModelConfig& cfg = m.config;
  if (head.layer < 0 || head.layer >= cfg.n_layers || head.head < 0 || head.head >= cfg.n_heads)
    fail("no head ", head.layer, ".", head.head, " in a model of ", cfg.n_layers, " layers × ", cfg.n_heads,
         " heads");
  HeadCircuit c;
  c.head = head;
  c.task = QString::fromStdString(task.dataset);
  try {
    computePattern(m, head, text, c);
  } catch (const std::exception& e) {
    c.patternError = QString::fromStdString(userMessage(e));
  }
  try {
    computeOv(m, head, task, topTokens, c);
  } catch (const std::exception& e) {
    c.ovError = QString::fromStdString(userMessage(e));
    c.labelIds.clear();
    c.labels.clear();
    c.ov.clear();
    c.promoted.clear();
  }
  return c;
}

}  // namespace hs::gui
