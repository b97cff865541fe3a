#include "analysis/toolkit/patch_sweep_checks.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <set>

#include "util/error.h"

namespace hs {

const char* toString(PatchMetric m) {
  switch (m) {
    case PatchMetric::TargetProb:
      return "target_prob";
    case PatchMetric::TargetLogit:
      return "target_logit";
    case PatchMetric::LogitDiff:
      return "logit_diff";
  }
  return "?";
}

const char* toString(PatchMode m) {
  switch (m) {
    case PatchMode::FromClean:
      return "from_clean";
    case PatchMode::Zero:
      return "zero";
    case PatchMode::Mean:
      return "mean";
  }
  return "?";
}

PatchMetric parsePatchMetric(const std::string& s) {
  for (PatchMetric m : {PatchMetric::TargetProb, PatchMetric::TargetLogit, PatchMetric::LogitDiff})
    if (s == toString(m)) return m;
  fail("unknown patching metric \"", s, "\" (expected target_prob, target_logit or logit_diff)");
}

PatchMode parsePatchMode(const std::string& s) {
  for (PatchMode m : {PatchMode::FromClean, PatchMode::Zero, PatchMode::Mean})
    if (s == toString(m)) return m;
  fail("unknown patching mode \"", s, "\" (expected from_clean, zero or mean)");
}

at::Tensor patchMetric(const at::Tensor& lastLogits, const PatchSweepSpec& spec) {
  const at::Tensor logits = lastLogits.to(at::kDouble);  // [batch, vocab]
  switch (spec.metric) {
    case PatchMetric::TargetProb:
      return at::softmax(logits, -1).select(1, spec.target);  // [batch]
    case PatchMetric::TargetLogit:
      return logits.select(1, spec.target);  // [batch]
    case PatchMetric::LogitDiff:
      return logits.select(1, spec.target) - logits.select(1, spec.distractor);  // [batch]
  }
  fail("patchMetric: unknown metric");
}

namespace patching {

namespace {

// The last pos − first positions of a capture [rows, positions, ...] (which holds all positions, or, in
// the last layer of a last_layer_from run, those only).
at::Tensor fromFirst(const at::Tensor& t, const Prepared& p) {
  const int64_t n = p.pos - p.first;
  return t.narrow(1, t.size(1) - n, n);
}

at::Tensor tokenRow(const std::vector<int64_t>& ids, const at::Device& device) {
  return at::tensor(ids, at::TensorOptions().dtype(at::kLong)).view({1, -1}).to(device);  // [1, pos]
}

void checkTokens(const std::vector<int64_t>& ids, int64_t vocab, const std::string& who, const char* which) {
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      fail(who, ": ", which, " token ", ids[i], " at position ", i, " is out of range [0, ", vocab, ")");
}

}  // namespace

Prepared prepare(const Transformer& model, const PatchSweepSpec& spec, const std::string& who) {
  const ModelConfig& c = model.config();
  const int64_t P = int64_t(spec.corrupt.size());
  if (P == 0) fail(who, ": the corrupt prompt is empty");
  if (P > c.context_length)
    fail(who, ": the prompt of ", P, " tokens exceeds the context of ", c.context_length);
  checkTokens(spec.corrupt, c.vocab_size, who, "corrupt");
  const bool fromClean = spec.mode == PatchMode::FromClean;
  if (fromClean) {
    if (int64_t(spec.clean.size()) != P)
      fail(who, ": the clean prompt has ", spec.clean.size(), " tokens, the corrupt one ", P,
           " (patching from clean needs equal lengths)");
    checkTokens(spec.clean, c.vocab_size, who, "clean");
  }
  if (spec.target < 0 || spec.target >= c.vocab_size)
    fail(who, ": target token ", spec.target, " is out of range [0, ", c.vocab_size, ")");
  if (spec.metric == PatchMetric::LogitDiff && (spec.distractor < 0 || spec.distractor >= c.vocab_size))
    fail(who, ": the logit_diff metric needs a distractor token in [0, ", c.vocab_size, "), got ",
         spec.distractor);
  if (spec.mode == PatchMode::Mean) {
    const std::vector<int64_t> want = {c.n_layers, c.n_heads, c.d_head};
    if (!spec.mean_z.defined())
      fail(who, ": mean mode needs mean_z [", c.n_layers, ", ", c.n_heads, ", ", c.d_head, "]");
    if (spec.mean_z.sizes() != at::IntArrayRef(want))
      fail(who, ": mean_z has shape ", spec.mean_z.sizes(), ", expected [layers, heads, d_head] = [",
           c.n_layers, ", ", c.n_heads, ", ", c.d_head, "]");
  }

  Prepared p;
  p.pos = P;
  p.corrupt = tokenRow(spec.corrupt, model.device());
  if (fromClean) p.clean = tokenRow(spec.clean, model.device());
  std::set<int> chosen;
  if (spec.positions.empty()) {
    if (spec.per_position) {
      for (int i = 0; i < P; ++i)
        chosen.insert(i);
    } else {
      chosen.insert(int(P - 1));
    }
  }
  for (int q : spec.positions) {
    const int64_t a = q < 0 ? P + q : q;
    if (a < 0 || a >= P)
      fail(who, ": position ", q, " is out of range [0, ", P, ") or [", -P, ", -1] from the end");
    if (!chosen.insert(int(a)).second) fail(who, ": position ", q, " is listed twice");
  }
  p.positions.assign(chosen.begin(), chosen.end());
  p.first = p.positions.front();
  return p;
}

std::vector<at::Tensor> cleanHeadOutputs(const Transformer& model, const Prepared& p,
                                         const PatchSweepSpec& spec, double* cleanMetric) {
  std::vector<at::Tensor> z;
  if (spec.mode != PatchMode::FromClean) return z;
  const int L = model.config().n_layers;
  RunRequest req;
  req.tokens = p.clean;
  req.last_logits_only = true;
  for (int l = 0; l < L; ++l)
    req.capture.insert(attnZ(l));
  RunResult r = model.run(req);
  if (cleanMetric) *cleanMetric = patchMetric(r.logits.select(1, 0).detach(), spec).item<double>();
  for (int l = 0; l < L; ++l)
    z.push_back(fromFirst(r.cache.at(attnZ(l)), p).detach());  // [1, pos − first, head, d_head]
  return z;
}

CorruptRun corruptRun(const Transformer& model, const Prepared& p, const PatchSweepSpec& spec,
                      bool keepState) {
  const int L = model.config().n_layers;
  CorruptRun out;
  RunRequest req;
  req.tokens = p.corrupt;
  req.last_logits_only = true;
  if (keepState) {
    for (int l = 0; l < L; ++l) {
      req.capture.insert(residPre(l));
      req.capture.insert(attnZ(l));
    }
    req.kv = &out.kv;
    req.last_layer_from = p.first;
  }
  const RunResult r = model.run(req);
  out.metric = patchMetric(r.logits.select(1, 0), spec).item<double>();
  if (keepState)
    for (int l = 0; l < L; ++l) {
      out.residPre.push_back(fromFirst(r.cache.at(residPre(l)), p).detach());  // [1, pos − first, d_model]
      out.z.push_back(fromFirst(r.cache.at(attnZ(l)), p).detach());  // [1, pos − first, head, d_head]
    }
  return out;
}

BaseRuns baseRuns(const Transformer& model, const Prepared& p, const PatchSweepSpec& spec,
                  const AnalysisContext& ctx) {
  BaseRuns out;
  ctx.checkCancelled();
  if (spec.mode != PatchMode::FromClean) {
    out.corrupt = corruptRun(model, p, spec, true);
    return out;
  }
  const int L = model.config().n_layers;
  // Identical prompts (a control) run once: both rows are then the same numbers, bit for bit.
  const int64_t cr = at::equal(p.clean, p.corrupt) ? 0 : 1;  // the corrupt row
  RunRequest both;
  both.tokens = cr == 0 ? p.corrupt : at::cat({p.clean, p.corrupt}, 0);  // [1 or 2, pos]
  for (int l = 0; l < L; ++l) {
    both.capture.insert(attnZ(l));
    both.capture.insert(residPre(l));
  }
  both.kv = &out.corrupt.kv;
  both.last_logits_only = true;
  both.last_layer_from = p.first;
  const LogitColumns columns = logitColumns(spec);  // only the metric's logits
  both.logit_tokens = columns.tokens;
  const RunResult r = model.run(both);
  const at::Tensor metrics = patchMetric(r.logits.select(1, 0), columns.spec).cpu();  // [1 or 2] float64
  out.cleanMetric = metrics[0].item<double>();
  out.corrupt.metric = metrics[cr].item<double>();
  for (int l = 0; l < L; ++l) {
    const at::Tensor z = fromFirst(r.cache.at(attnZ(l)), p);  // [1 or 2, pos − first, head, d_head]
    out.cleanZ.push_back(z.narrow(0, 0, 1).detach());
    out.corrupt.z.push_back(z.narrow(0, cr, 1).detach());
    out.corrupt.residPre.push_back(
        fromFirst(r.cache.at(residPre(l)), p).narrow(0, cr, 1).detach());  // [1, pos − first, d_model]
  }
  out.corrupt.kv = out.corrupt.kv.sliceRows({cr});  // [1, kv_head, pos, d_head] per layer
  return out;
}

LogitColumns logitColumns(const PatchSweepSpec& spec) {
  LogitColumns c;
  c.spec = spec;
  if (spec.metric == PatchMetric::TargetProb) return c;
  c.tokens.push_back(spec.target);
  c.spec.target = 0;
  if (spec.metric == PatchMetric::LogitDiff) {
    c.tokens.push_back(spec.distractor);
    c.spec.distractor = 1;
  }
  return c;
}

KVCache prefixOf(const KVCache& kv, int64_t n) {
  KVCache out;
  if (n == 0) return out;
  for (const at::Tensor& t : kv.k)
    out.k.push_back(t.narrow(2, 0, n));  // [1, kv_head, n, d_head]
  for (const at::Tensor& t : kv.v)
    out.v.push_back(t.narrow(2, 0, n));  // [1, kv_head, n, d_head]
  out.mask = kv.mask.narrow(1, 0, n);    // [1, n]
  return out;
}

at::Tensor stateIndex(const Transformer& model, const Prepared& p, const std::vector<int>& positions) {
  std::vector<int64_t> rows;
  for (int q : positions)
    rows.push_back(q - p.first);
  return at::tensor(rows, at::kLong).to(model.device());  // [n_pos]
}

at::Tensor patchValues(const Transformer& model, const PatchSweepSpec& spec, const Prepared& p,
                       const std::vector<at::Tensor>& cleanZ, int layer, const std::vector<int>& positions) {
  const ModelConfig& c = model.config();
  const auto opts = at::TensorOptions().dtype(model.dtype()).device(model.device());
  const int64_t n = int64_t(positions.size());
  switch (spec.mode) {
    case PatchMode::FromClean: {
      return cleanZ.at(layer)[0].index_select(0, stateIndex(model, p, positions));  // [n_pos, head, d_head]
    }
    case PatchMode::Zero:
      return at::zeros({n, c.n_heads, c.d_head}, opts);  // [n_pos, head, d_head]
    case PatchMode::Mean:
      return spec.mean_z[layer].to(opts).unsqueeze(0).expand(
          {n, c.n_heads, c.d_head});  // [n_pos, head, d_head]
  }
  fail("patchValues: unknown mode");
}

HeadGrid makeGrid(const Transformer& model, const PatchSweepSpec& spec, const std::string& idPrefix,
                  const std::string& namePrefix, const std::vector<int>& positions, const std::string& path) {
  const ModelConfig& c = model.config();
  HeadGrid g;
  g.id = idPrefix + "." + toString(spec.mode) + "." + toString(spec.metric);
  const char* what = spec.mode == PatchMode::FromClean ? "from clean"
                     : spec.mode == PatchMode::Zero    ? "zero"
                                                       : "mean";
  const char* metric = spec.metric == PatchMetric::TargetProb    ? "P(target)"
                       : spec.metric == PatchMetric::TargetLogit ? "logit(target)"
                                                                 : "logit(target) − logit(distractor)";
  g.name = namePrefix + " (" + what + "): Δ " + metric;
  g.unit = spec.metric == PatchMetric::TargetProb    ? "ΔP"
           : spec.metric == PatchMetric::TargetLogit ? "Δlogit"
                                                     : "Δlogit diff";
  g.values = Eigen::MatrixXd::Zero(c.n_layers, c.n_heads);  // [layers, heads]
  g.provenance.method = "patch";
  g.provenance.n_prompts = 1;
  nlohmann::json& o = g.provenance.options;
  o["mode"] = toString(spec.mode);
  o["metric"] = toString(spec.metric);
  o["target"] = spec.target;
  if (spec.metric == PatchMetric::LogitDiff) o["distractor"] = spec.distractor;
  o["positions"] = positions;
  o["per_position"] = spec.per_position;
  o["path"] = path;
  return g;
}

}  // namespace patching
}  // namespace hs
