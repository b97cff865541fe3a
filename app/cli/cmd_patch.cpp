// headscope-cli patch MODEL (--clean TEXT --corrupt TEXT | --clean-ids .. --corrupt-ids ..) --target TOKEN
//   [--distractor TOKEN] [--metric prob|logit|logit_diff] [--mode clean|zero|mean] [--positions -1,...]
//   [--per-position] [--attribution] [--naive] --out RUN.hscope [--json RUN.json]
//
// The activation patching sweep (DESIGN 5.3) of one prompt pair as a run of method "patch": grid
// "patch.effect" (per position: "patch.effect.pos<P>"), with --attribution also "patch.attribution"
// (".pos<P>") and the table "patch.rank_agreement" (Spearman ρ, Kendall τ of exact vs attribution).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "analysis/attribution.h"
#include "analysis/patching.h"
#include "cli_common.h"
#include "results/rank_stats.h"
#include "results/timestamp.h"
#include "util/error.h"

namespace hs::cli {
namespace {

struct PatchArgs {
  ModelArgs model;
  std::string clean, corrupt, cleanIds, corruptIds;
  std::string target, distractor;
  std::string metric = "prob", mode = "clean", positions;
  bool perPosition = false, attribution = false, naive = false;
  RunOutputArgs out;
};

PatchMetric metricOf(const std::string& s) {
  if (s == "prob") return PatchMetric::TargetProb;
  if (s == "logit") return PatchMetric::TargetLogit;
  return PatchMetric::LogitDiff;  // CLI11 checked the spelling
}

PatchMode modeOf(const std::string& s) {
  if (s == "clean") return PatchMode::FromClean;
  if (s == "zero") return PatchMode::Zero;
  return PatchMode::Mean;
}

// One prompt of the pair from --<which> TEXT or --<which>-ids LIST; empty when neither is given.
std::vector<int64_t> pairPrompt(const LoadedModel& m, const std::string& text, const std::string& ids,
                                const std::string& which) {
  if (!text.empty() && !ids.empty()) fail("give either --", which, " or --", which, "-ids, not both");
  if (!ids.empty()) return withContext("--" + which + "-ids", [&] { return parseIdList(ids); });
  if (text.empty()) return {};
  const std::vector<int> enc = requireTokenizer(m).encode(text);
  return {enc.begin(), enc.end()};
}

// "ids [a, b, ...] = pieces 'x' 'y' ..." for error messages about a prompt.
std::string describeTokens(const LoadedModel& m, const std::vector<int64_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s +=
        (i ? " " : "") + (m.tokenizer ? "'" + m.tokenizer->piece(int(ids[i])) + "'" : std::to_string(ids[i]));
  return s + "]";
}

// TOKEN: "#id", a raw vocabulary string ("▁Ben", "Ġthe"), or text that encodes (without BOS) to one token.
int64_t resolveToken(const LoadedModel& m, const std::string& s, const std::string& option) {
  const int64_t vocab = m.config.vocab_size;
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
  const Tokenizer& tok = requireTokenizer(m);
  if (const auto id = tok.idOf(s)) return *id;
  const std::vector<int> enc = tok.encode(s, false);
  if (enc.size() == 1) return enc[0];
  fail(option, " '", s, "' is not a token of the tokenizer (it encodes to ", enc.size(),
       " tokens); give a vocabulary string or #ID");
}

// Mean hook_z per head over every position of the given prompts: [layers, heads, d_head].
at::Tensor meanOverPositions(const Transformer& model, const std::vector<std::vector<int64_t>>& prompts) {
  at::NoGradGuard noGrad;
  const ModelConfig& c = model.config();
  at::Tensor sum = at::zeros({c.n_layers, c.n_heads, c.d_head}, at::kDouble);  // [layers, heads, d_head]
  int64_t count = 0;
  for (const auto& ids : prompts) {
    RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).view({1, -1}).to(model.device());  // [1, pos]
    req.last_logits_only = true;
    for (int l = 0; l < c.n_layers; ++l)
      req.capture.insert(attnZ(l));
    const RunResult r = model.run(req);
    for (int l = 0; l < c.n_layers; ++l)
      sum[l] += r.cache.at(attnZ(l))[0].to(at::kCPU, at::kDouble).sum(0);  // [heads, d_head]
    count += int64_t(ids.size());
  }
  return (sum / double(count)).to(at::kFloat);
}

// The library names grids after mode and metric ("patch.from_clean.target_prob"); the run names them
// after what they are ("patch.effect"), mode and metric stay in the provenance options.
void renameGrid(HeadGrid& g, const std::string& base, bool perPosition, const LoadedModel& m,
                const nlohmann::json& runOptions) {
  g.id = base;
  if (perPosition) g.id += ".pos" + std::to_string(g.provenance.options["position"].get<int>());
  g.provenance.model = m.path;
  g.provenance.task = "prompt pair";
  g.provenance.created = utcTimestamp();
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

void runPatch(const PatchArgs& a) {
  checkRunDestinations(a.out);
  const LoadedModel m = loadForCli(a.model);
  const Transformer& model = *m.model;
  const PatchMode mode = modeOf(a.mode);
  PatchSweepSpec spec;
  spec.metric = metricOf(a.metric);
  spec.mode = mode;
  spec.per_position = a.perPosition;
  spec.corrupt = pairPrompt(m, a.corrupt, a.corruptIds, "corrupt");
  spec.clean = pairPrompt(m, a.clean, a.cleanIds, "clean");
  if (spec.corrupt.empty()) fail("give the corrupt prompt with --corrupt TEXT or --corrupt-ids LIST");
  if (spec.clean.empty() && mode == PatchMode::FromClean)
    fail("--mode clean needs the clean prompt: give --clean TEXT or --clean-ids LIST");
  if (!spec.clean.empty() && spec.clean.size() != spec.corrupt.size())
    fail("the clean prompt has ", spec.clean.size(), " tokens ", describeTokens(m, spec.clean),
         " and the corrupt prompt ", spec.corrupt.size(), " tokens ", describeTokens(m, spec.corrupt),
         "; patching needs prompts of equal token length");
  spec.target = resolveToken(m, a.target, "--target");
  if (spec.metric == PatchMetric::LogitDiff && a.distractor.empty())
    fail("--metric logit_diff needs --distractor TOKEN");
  if (!a.distractor.empty()) spec.distractor = resolveToken(m, a.distractor, "--distractor");
  if (!a.positions.empty())
    for (int64_t p : withContext("--positions", [&] { return parseIdList(a.positions); }))
      spec.positions.push_back(int(p));

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
    // A single pair has no population to average over; the mean is taken over every position of the
    // prompts given (clean and corrupt), as `logits --ablate-mode mean` does for one prompt.
    std::vector<std::vector<int64_t>> prompts = {spec.corrupt};
    if (!spec.clean.empty()) prompts.push_back(spec.clean);
    spec.mean_z = meanOverPositions(model, prompts);  // [layers, heads, d_head]
    options["mean_over"] = spec.clean.empty() ? "all positions of the corrupt prompt"
                                              : "all positions of the clean and corrupt prompts";
  }

  AnalysisOutput out;
  out.run.id = "patch-1";
  out.run.method = "patch";
  out.run.options = options;
  const AnalysisContext ctx = cliContext("patch");
  std::vector<HeadGrid> exact = patchingSweepPositions(model, spec, ctx, a.naive);
  for (HeadGrid& g : exact)
    renameGrid(g, "patch.effect", spec.per_position, m, options);
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
    progress("patch: attribution patching");
    std::vector<HeadGrid> approx = attributionPatchingPositions(model, spec);
    Table agree;
    agree.id = "patch.rank_agreement";
    agree.name = "Exact patching vs attribution patching: rank correlation";
    agree.columns = {"exact", "attribution", "spearman_rho", "kendall_tau"};
    agree.provenance = exact.front().provenance;
    agree.provenance.options.erase("position");
    for (size_t i = 0; i < approx.size(); ++i) {
      renameGrid(approx[i], "patch.attribution", spec.per_position, m, options);
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
  writeRunOutputs(m, a.model, nullptr, out, a.out);
}

}  // namespace

void addPatchCommand(CLI::App& app) {
  static PatchArgs a;
  auto* cmd = app.add_subcommand(
      "patch",
      "Activation patching of every head's hook_z between a clean and a corrupt prompt (a session run)");
  addModelArgs(*cmd, a.model);
  cmd->add_option("--clean", a.clean, "clean prompt text (encoded as the tokenizer config says)");
  cmd->add_option("--corrupt", a.corrupt, "corrupt prompt text (same token length as the clean one)");
  cmd->add_option("--clean-ids", a.cleanIds, "clean prompt token ids, comma separated");
  cmd->add_option("--corrupt-ids", a.corruptIds, "corrupt prompt token ids, comma separated");
  cmd->add_option("--target", a.target, "target token: a vocabulary string, one-token text, or #ID")
      ->required();
  cmd->add_option("--distractor", a.distractor, "distractor token (logit_diff): as --target");
  cmd->add_option("--metric", a.metric,
                  "read at the last position: prob = P(target), logit = logit(target), "
                  "logit_diff = logit(target) - logit(distractor)")
      ->capture_default_str()
      ->check(CLI::IsMember({"prob", "logit", "logit_diff"}));
  cmd->add_option("--mode", a.mode,
                  "what a patched head's z becomes: clean = the clean run's, zero, mean = its mean over all "
                  "positions of the given prompts")
      ->capture_default_str()
      ->check(CLI::IsMember({"clean", "zero", "mean"}));
  cmd->add_option("--positions", a.positions,
                  "patched positions, comma separated, negative from the end (default: the last)");
  cmd->add_flag("--per-position", a.perPosition,
                "one grid per position (every position when --positions is not given)");
  cmd->add_flag("--attribution", a.attribution,
                "also attribution patching (first-order estimate) and its rank correlation with the sweep");
  cmd->add_flag("--naive", a.naive,
                "one full forward per head (the reference loop) instead of the fast path");
  addRunOutputArgs(*cmd, a.out);
  cmd->callback([] { runPatch(a); });
}

}  // namespace hs::cli
