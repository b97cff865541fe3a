// The request checks of Transformer::run, in the order a request is read: input, joining rows, outputs,
// padding, cache, sites, interventions. Then the position ids and attention masks they imply.
#include "model/forward_plan.h"

#include <ATen/ATen.h>

#include <sstream>

#include "util/error.h"

namespace hs {

std::string shapeOf(const at::Tensor& t) {
  std::ostringstream os;
  os << "[";
  for (int64_t i = 0; i < t.dim(); ++i)
    os << (i ? ", " : "") << t.size(i);
  os << "]";
  return os.str();
}

namespace {

// start_layer, and the tokens or the residual entering it: sets fromResid, firstLayer, tokens, batch, pos.
void readInput(const ModelConfig& c, const RunRequest& req, ForwardPlan& plan) {
  plan.fromResid = req.resid_in.defined();
  const int L0 = plan.firstLayer = req.start_layer;
  if (L0 < 0 || L0 >= c.n_layers) fail("run: start_layer ", L0, " out of range [0, ", c.n_layers, ")");
  if (L0 > 0 && !plan.fromResid)
    fail("run: start_layer ", L0, " needs resid_in, the residual stream entering that layer");
  if (plan.fromResid) {
    if (req.tokens.defined()) fail("run: give either tokens or resid_in, not both");
    if (req.resid_in.dim() != 3 || req.resid_in.size(2) != c.d_model)
      fail("run: resid_in has shape ", shapeOf(req.resid_in), ", expected [batch, pos, ", c.d_model, "]");
    plan.batch = req.resid_in.size(0), plan.pos = req.resid_in.size(1);
  } else {
    if (!req.tokens.defined() || req.tokens.dim() != 2 ||
        !at::isIntegralType(req.tokens.scalar_type(), false))
      fail("run: tokens must be an integer tensor [batch, pos], got ",
           req.tokens.defined() ? shapeOf(req.tokens) : std::string("none"));
    plan.tokens = req.tokens.to(plan.dev, at::kLong);  // [batch, pos]
    plan.batch = plan.tokens.size(0), plan.pos = plan.tokens.size(1);
  }
  if (plan.batch < 1 || plan.pos < 1)
    fail("run: the input ", shapeOf(plan.fromResid ? req.resid_in : plan.tokens), " holds no positions");
}

// Every token id is in the vocabulary; names the first that is not.
void checkTokenIds(const ModelConfig& c, const at::Tensor& tokens) {
  const at::Tensor bad = tokens.lt(0).logical_or(tokens.ge(c.vocab_size));  // [batch, pos]
  if (bad.any().item<bool>()) {
    const at::Tensor where = bad.nonzero()[0].cpu();
    const int64_t r = where[0].item<int64_t>(), p = where[1].item<int64_t>();
    fail("token id ", tokens.cpu()[r][p].item<int64_t>(), " at row ", r, ", position ", p,
         " is out of range for the vocabulary of ", c.vocab_size, " tokens");
  }
}

// Rows that join at later layers (fast patching): all unpadded, all at the same positions. Sets joinedRows.
void checkJoins(const ModelConfig& c, const RunRequest& req, ForwardPlan& plan) {
  for (const auto& [l, t] : req.resid_join) {
    if (!plan.fromResid) fail("run: resid_join needs resid_in (rows that start inside the model)");
    if (l <= plan.firstLayer || l >= c.n_layers)
      fail("run: resid_join at layer ", l, " is outside (", plan.firstLayer, ", ", c.n_layers, ")");
    if (t.dim() != 3 || t.size(1) != plan.pos || t.size(2) != c.d_model)
      fail("run: resid_join[", l, "] has shape ", shapeOf(t), ", expected [rows, ", plan.pos, ", ", c.d_model,
           "]");
    plan.joinedRows += t.size(0);
  }
  if (!req.resid_join.empty() && req.attention_mask.defined())
    fail("run: resid_join needs unpadded rows (no attention_mask)");
}

// logit_tokens and last_layer_from. Sets tailFrom.
void checkOutputs(const ModelConfig& c, const RunRequest& req, ForwardPlan& plan) {
  for (int64_t t : req.logit_tokens)
    if (t < 0 || t >= c.vocab_size)
      fail("run: logit_tokens holds ", t, ", out of range for the vocabulary of ", c.vocab_size, " tokens");
  const int64_t tailFrom = plan.tailFrom = req.last_layer_from;
  if (tailFrom < 0 || tailFrom >= plan.pos)
    fail("run: last_layer_from ", tailFrom, " is outside [0, ", plan.pos, ")");
  if (tailFrom > 0 && !req.interventions.empty()) fail("run: last_layer_from takes no interventions");
}

// The padding mask: sets real.
void readPadding(const RunRequest& req, ForwardPlan& plan) {
  const int64_t B = plan.batch, P = plan.pos;
  plan.real = at::ones({B, P}, at::TensorOptions().dtype(at::kLong).device(plan.dev));  // [batch, pos]
  if (!req.attention_mask.defined()) return;
  if (req.attention_mask.sizes() != at::IntArrayRef({B, P}))
    fail("run: attention_mask has shape ", shapeOf(req.attention_mask), ", expected [", B, ", ", P,
         "] like the input");
  plan.real = req.attention_mask.to(plan.dev, at::kLong);
  if (plan.real.ne(0).logical_and(plan.real.ne(1)).any().item<bool>())
    fail("run: attention_mask must hold only 0 (padding) and 1 (real token)");
}

// The KV cache against the input and the context: sets kv, cached, keyPositions, sharedCache, extendKv.
void checkCache(const ModelConfig& c, const RunRequest& req, ForwardPlan& plan) {
  KVCache* kv = plan.kv = req.kv;
  const int64_t T0 = plan.cached = kv ? kv->length() : 0;
  const int64_t P = plan.pos, T = plan.keyPositions = T0 + P;
  plan.sharedCache = T0 > 0 && req.kv_read_only && kv->mask.size(0) == 1;
  plan.extendKv = kv && !req.kv_read_only;
  if (T0 > 0) {
    if (kv->mask.size(0) != plan.batch && !plan.sharedCache)
      fail("run: the KV cache holds ", kv->mask.size(0), " rows, the input ", plan.batch,
           " (only a read-only cache may hold one row for all)");
    if (!req.resid_join.empty() && (!plan.sharedCache || !kv->mask.all().item<bool>()))
      fail("run: resid_join needs a read-only cache of one row without padding");
    if (int(kv->k.size()) != c.n_layers || int(kv->v.size()) != c.n_layers)
      fail("run: the KV cache holds ", kv->k.size(), " layers, the model ", c.n_layers);
  }
  const int L0 = plan.firstLayer;
  if (L0 > 0 && kv && !req.kv_read_only)
    fail("run: start_layer ", L0, " with a KV cache needs kv_read_only (layers below ", L0,
         " would not get the new positions)");
  if (T > c.context_length) {
    std::string detail = T0 > 0 ? cat(" (", T0, " cached + ", P, " new)") : "";
    fail("prompt of ", T, " tokens", detail, " exceeds the model's context of ", c.context_length);
  }
}

// Captured and intervened sites exist in this model and in the layers that run.
void checkSites(const ModelConfig& c, const RunRequest& req, int L0) {
  for (const Site& s : req.capture)
    if (s.kind == SiteKind::LnFinal ? s.layer != -1 : (s.layer < 0 || s.layer >= c.n_layers))
      fail("run: cannot capture ", s.name(), ": layer out of range [0, ", c.n_layers, ")");
    else if (s.kind != SiteKind::LnFinal && s.layer < L0)
      fail("run: cannot capture ", s.name(), ": the run starts at layer ", L0);
  if (!c.parallel_residual) return;
  // Attention and MLP both read hook_resid_pre: there is no resid_mid.
  std::vector<Site> sites(req.capture.begin(), req.capture.end());
  for (const Intervention& iv : req.interventions)
    sites.push_back(iv.site);
  for (const Site& s : sites)
    if (s.kind == SiteKind::ResidMid)
      fail("run: ", s.name(), " does not exist in a parallel-residual model (its MLP reads hook_resid_pre)");
}

// Positions count real tokens only (HF: cumsum(mask) − 1), so a left-padded row sees the same positions as
// its unpadded prompt; with a cache they continue from each row's real-token count.
at::Tensor positionIds(const RunRequest& req, const ForwardPlan& plan) {
  at::Tensor ids = plan.real.cumsum(1) - 1;  // [batch, pos]
  if (plan.cached > 0) ids = ids + plan.kv->mask.to(at::kLong).sum(1, true);
  ids = ids.clamp_min(0);                                  // padding: any valid id
  if (!req.resid_join.empty()) ids = ids.narrow(0, 0, 1);  // [1, pos]: unpadded rows share their positions
  return ids;
}

// Causal + padding masks. Sliding layers count absolute indices as HF does (left padding shifts no real
// distance).
AttentionMasks attentionMasks(const ModelConfig& c, const RunRequest& req, const ForwardPlan& plan) {
  const int64_t B = plan.batch, P = plan.pos, T0 = plan.cached, T = plan.keyPositions;
  const KVCache* kv = plan.kv;
  const bool padded = req.attention_mask.defined() || (T0 > 0 && !kv->mask.all().item<bool>());
  const bool padQueries = req.attention_mask.defined() && !plan.real.all().item<bool>();
  const bool windowBites = c.sliding_window > 0 && T > c.sliding_window;
  at::Tensor keyReal;  // [batch, 1, 1, k_pos] (padded runs only)
  if (padded) {
    keyReal = (T0 > 0 ? at::cat({kv->mask.to(at::kLong).expand({B, T0}), plan.real}, 1) : plan.real)
                  .to(at::kBool)
                  .view({B, 1, 1, T});
  }
  const at::Tensor causal =
      at::ones({P, T}, at::TensorOptions().dtype(at::kBool).device(plan.dev)).tril(T0);  // [pos, k_pos]
  auto blockedBy = [&](const at::Tensor& allowedPositions) {
    at::Tensor allowed = allowedPositions.view({1, 1, P, T});
    if (padded) allowed = allowed.logical_and(keyReal);
    return allowed.logical_not();
  };
  AttentionMasks m;
  if (P > 1 || padded) m.blocked = blockedBy(causal);
  if (windowBites) m.blockedLocal = blockedBy(causal.triu(T0 - c.sliding_window + 1));
  // Padded queries attend to nothing (their pattern row is 0, not NaN).
  if (padQueries) m.queryReal = plan.real.to(at::kFloat).view({B, 1, P, 1});
  return m;
}

}  // namespace

ForwardPlan planForward(const ModelConfig& c, const RunRequest& req, at::Device dev, at::Device home,
                        at::ScalarType dt) {
  ForwardPlan plan;
  plan.dev = dev, plan.home = home, plan.dt = dt;
  readInput(c, req, plan);
  if (!plan.fromResid) checkTokenIds(c, plan.tokens);
  checkJoins(c, req, plan);
  checkOutputs(c, req, plan);
  readPadding(req, plan);
  checkCache(c, req, plan);
  checkSites(c, req, plan.firstLayer);
  const RunExtent extent{plan.batch + plan.joinedRows, plan.cached, plan.pos};
  for (size_t i = 0; i < req.interventions.size(); ++i)
    plan.interventions.push_back(resolveIntervention(req.interventions[i], i, c, extent, home));
  plan.positionIds = positionIds(req, plan);
  plan.masks = attentionMasks(c, req, plan);
  return plan;
}

}  // namespace hs
