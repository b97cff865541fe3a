#include "analysis/methods/patch_method.h"

#include <cmath>

#include "analysis/toolkit/attribution_patching.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep.h"
#include "results/rank_stats.h"
#include "util/error.h"

namespace hs {
namespace {

PatchMetric metricOf(const std::string& s) {
  if (s == "prob") return PatchMetric::TargetProb;
  if (s == "logit") return PatchMetric::TargetLogit;
  if (s == "logit_diff") return PatchMetric::LogitDiff;
  fail("patch: metric '", s, "', expected prob, logit or logit_diff");
}

PatchMode modeOf(const std::string& s) {
  if (s == "clean") return PatchMode::FromClean;
  if (s == "zero") return PatchMode::Zero;
  if (s == "mean") return PatchMode::Mean;
  fail("patch: mode '", s, "', expected clean, zero or mean");
}

// One prompt of the pair from its text or its ids; empty when neither is given.
std::vector<int64_t> pairPrompt(const Tokenizer* tok, const std::string& text, const std::vector<int>& ids,
                                const std::string& which) {
  if (!text.empty() && !ids.empty()) fail("give either --", which, " or --", which, "-ids, not both");
  if (!ids.empty()) return {ids.begin(), ids.end()};
  if (text.empty()) return {};
  if (!tok) fail("--", which, " needs the model's tokenizer (none loaded); give --", which, "-ids");
  const std::vector<int> enc = tok->encode(text);
  return {enc.begin(), enc.end()};
}

// "['a' 'b' ...]" (or the ids without a tokenizer) for error messages about a prompt.
std::string describeTokens(const Tokenizer* tok, const std::vector<int64_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? " " : "") + (tok ? "'" + tok->piece(int(ids[i])) + "'" : std::to_string(ids[i]));
  return s + "]";
}

// The library names grids after mode and metric ("patch.from_clean.target_prob"); the run names them
// after what they are ("patch.effect"), mode and metric stay in the provenance options.
void renameGrid(HeadGrid& g, const std::string& base, bool perPosition, const AnalysisContext& ctx,
                const nlohmann::json& runOptions) {
  g.id = base;
  if (perPosition) g.id += ".pos" + std::to_string(g.provenance.options["position"].get<int>());
  g.provenance.method = "patch";
  g.provenance.model = ctx.model_path;
  g.provenance.task = "prompt pair";
  for (const char* k : {"clean_ids", "corrupt_ids", "mean_over"})
    if (runOptions.contains(k)) g.provenance.options[k] = runOptions[k];
}

nlohmann::json topHeadsJson(const HeadGrid& g, int k) {
  HeadGrid absGrid = g;
  absGrid.values = g.values.cwiseAbs();
  nlohmann::json top = nlohmann::json::array();
  for (const HeadRef& h : topHeads(absGrid, k))
    top.push_back({{"layer", h.layer}, {"head", h.head}, {"effect", g.values(h.layer, h.head)}});
  return top;
}

}  // namespace

const OptionTable<PatchOptions>& patchOptionTable() {
  using O = PatchOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("clean", &O::clean, "clean prompt text (encoded as the tokenizer config says)")
        .add("corrupt", &O::corrupt, "corrupt prompt text (same token length as the clean one)")
        .add("clean_ids", &O::clean_ids, "clean prompt as token ids, comma separated",
             OptionCheck::atLeast(0))
        .add("corrupt_ids", &O::corrupt_ids, "corrupt prompt as token ids, comma separated",
             OptionCheck::atLeast(0))
        .add("target", &O::target, "target token: a vocabulary string, one-token text, or #ID")
        .add("distractor", &O::distractor, "distractor token for logit_diff, as the target")
        .add("metric", &O::metric,
             "read at the last position: prob = P(target), logit = logit(target), logit_diff = "
             "logit(target) - logit(distractor)",
             OptionCheck::oneOf({"prob", "logit", "logit_diff"}))
        .add(
            "mode", &O::mode,
            "what a patched head's z becomes: clean = the clean run's, zero, mean = its mean per mean_source "
            "(a neutral text corpus by default; task: all positions of the given prompts)",
            OptionCheck::oneOf({"clean", "zero", "mean"}));
    addMeanSourceOptions(t, &O::mean);
    t.add("positions", &O::positions, "patched positions, negative from the end (empty: the last)")
        .add("per_position", &O::per_position, "one grid per position (every position when none are given)")
        .add("attribution", &O::attribution,
             "also attribution patching (first-order estimate) and its rank correlation with the sweep")
        .add("naive", &O::naive, "one full forward per head (the reference loop) instead of the fast path");
    return t;
  }();
  return table;
}

MethodInfo patchMethod() {
  MethodInfo m;
  m.name = "patch";
  m.title = "Activation patching of every head between two prompts";
  m.paper = "Meng et al. 2022; Wang et al. 2023 (activation patching); Nanda 2023 (attribution patching)";
  m.description =
      "For a clean and a corrupt prompt of the same token length, each head's output (hook_z) in the corrupt "
      "run is replaced — by the clean run's, by zero or by its mean — at the chosen positions, one head at a "
      "time, and the change of a metric at the last position (probability or logit of a target token, or a "
      "logit difference against a distractor) is that head's effect. Attribution patching estimates all "
      "effects from one forward and backward pass; its rank agreement with the exact sweep is reported.";
  m.options = patchOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "patch.effect", "Δmetric",
       "effect of patching the head (per position: .pos<P>)"},
      {OutputSpec::Kind::Grid, "patch.attribution", "Δmetric", "first-order estimate of the same effect"},
      {OutputSpec::Kind::Table, "patch.rank_agreement", "ρ, τ", "exact vs attribution ranking"},
  };
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runPatch(in.model, in.tokenizer, patchOptionTable().read(options), ctx);
  };
  return m;
}

int64_t resolveToken(const Tokenizer* tok, int64_t vocab, const std::string& s, const std::string& option) {
  if (s.size() > 1 && s[0] == '#') {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(s.substr(1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != s.size() - 1 || id < 0 || id >= vocab)
      fail(option, " '", s, "': expected #ID with an id in [0, ", vocab, ")");
    return id;
  }
  if (!tok) fail(option, " '", s, "': the model has no tokenizer; give the token as #ID");
  if (const auto id = tok->idOf(s)) return *id;
  const std::vector<int> enc = tok->encode(s, false);
  if (enc.size() == 1 && enc[0] >= 0 && enc[0] == tok->unkId())
    fail(option, " '", s, "' is not in the tokenizer's vocabulary (it encodes to the unknown token ",
         tok->piece(enc[0]), "); give a vocabulary string or #ID");
  if (enc.size() == 1) return enc[0];
  fail(option, " '", s, "' is not a token of the tokenizer (it encodes to ", enc.size(),
       " tokens); give a vocabulary string or #ID");
}

AnalysisOutput runPatch(const Transformer& model, const Tokenizer* tok, const PatchOptions& a,
                        const AnalysisContext& ctx) {
  const int64_t vocab = model.config().vocab_size;
  const PatchMode mode = modeOf(a.mode);
  PatchSweepSpec spec;
  spec.metric = metricOf(a.metric);
  spec.mode = mode;
  spec.per_position = a.per_position;
  spec.corrupt = pairPrompt(tok, a.corrupt, a.corrupt_ids, "corrupt");
  spec.clean = pairPrompt(tok, a.clean, a.clean_ids, "clean");
  if (spec.corrupt.empty()) fail("give the corrupt prompt with --corrupt TEXT or --corrupt-ids LIST");
  if (spec.clean.empty() && mode == PatchMode::FromClean)
    fail("--mode clean needs the clean prompt: give --clean TEXT or --clean-ids LIST");
  if (!spec.clean.empty() && spec.clean.size() != spec.corrupt.size())
    fail("the clean prompt has ", spec.clean.size(), " tokens ", describeTokens(tok, spec.clean),
         " and the corrupt prompt ", spec.corrupt.size(), " tokens ", describeTokens(tok, spec.corrupt),
         "; patching needs prompts of equal token length");
  if (a.target.empty()) fail("give the target token with --target TOKEN");
  spec.target = resolveToken(tok, vocab, a.target, "--target");
  if (spec.metric == PatchMetric::LogitDiff && a.distractor.empty())
    fail("--metric logit_diff needs --distractor TOKEN");
  if (!a.distractor.empty()) spec.distractor = resolveToken(tok, vocab, a.distractor, "--distractor");
  spec.positions = a.positions;

  nlohmann::json options = {{"metric", toString(spec.metric)},
                            {"mode", toString(spec.mode)},
                            {"target", spec.target},
                            {"target_token", a.target},
                            {"distractor", spec.distractor},
                            {"positions", spec.positions},
                            {"per_position", spec.per_position},
                            {"attribution", a.attribution},
                            {"path", a.naive ? "naive" : "fast"},
                            {"clean_ids", spec.clean},
                            {"corrupt_ids", spec.corrupt}};
  if (mode == PatchMode::Mean) {
    // A neutral corpus by default (head_toolkit.h MeanSource); mean_source task averages over every
    // position of the prompts given (clean and corrupt).
    TokenSeqs prompts = {spec.corrupt};
    if (!spec.clean.empty()) prompts.push_back(spec.clean);
    spec.mean_z = resolveMeanZ(model, tok, a.mean, prompts, ctx);  // [layers, heads, d_head]
    options["mean_over"] = a.mean.source != "task" ? describeMeanSource(a.mean, &model, tok)
                           : spec.clean.empty()    ? "all positions of the corrupt prompt"
                                                   : "all positions of the clean and corrupt prompts";
  }

  AnalysisOutput out;
  out.run.id = ctx.runId("patch");
  out.run.method = "patch";
  out.run.options = options;
  std::vector<HeadGrid> exact = patchingSweepPositions(model, spec, ctx, a.naive);
  for (HeadGrid& g : exact)
    renameGrid(g, "patch.effect", spec.per_position, ctx, options);
  nlohmann::json perGrid = nlohmann::json::array();
  for (const HeadGrid& g : exact) {
    nlohmann::json s = {{"grid", g.id},
                        {"corrupt_metric", g.provenance.options["corrupt_metric"]},
                        {"top_heads", topHeadsJson(g, 5)}};
    if (g.provenance.options.contains("clean_metric"))
      s["clean_metric"] = g.provenance.options["clean_metric"];
    perGrid.push_back(s);
  }
  out.run.summary["grids"] = perGrid;

  if (a.attribution) {
    ctx.report(1.0, "attribution patching");
    std::vector<HeadGrid> approx = attributionPatchingPositions(model, spec);
    Table agree;
    agree.id = "patch.rank_agreement";
    agree.name = "Exact patching vs attribution patching: rank correlation";
    agree.columns = {"exact", "attribution", "spearman_rho", "kendall_tau"};
    agree.provenance = exact.front().provenance;
    agree.provenance.options.erase("position");
    for (size_t i = 0; i < approx.size(); ++i) {
      renameGrid(approx[i], "patch.attribution", spec.per_position, ctx, options);
      const double rho = spearmanRho(exact[i], approx[i]), tau = kendallTauB(exact[i], approx[i]);
      // NaN (a constant grid) is written as null in JSON.
      auto num = [](double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); };
      agree.rows.push_back({exact[i].id, approx[i].id, num(rho), num(tau)});
      out.run.summary["grids"][i]["attribution_spearman_rho"] = num(rho);
      out.run.summary["grids"][i]["attribution_kendall_tau"] = num(tau);
    }
    exact.insert(exact.end(), approx.begin(), approx.end());
    out.run.tables.push_back(agree);
  }
  out.run.grids = exact;
  return out;
}

}  // namespace hs
