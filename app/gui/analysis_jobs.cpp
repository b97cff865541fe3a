#include "analysis_jobs.h"

#include <algorithm>

#include "analysis/function_vectors.h"
#include "analysis/geometry.h"
#include "analysis/induction_scores.h"
#include "analysis/ltv.h"
#include "analysis/site.h"
#include "analysis/tsla.h"
#include "util/error.h"

namespace hs::gui {

AnalysisOutput runInductionJob(const LoadedModel& m, const TaskSpec& task, const nlohmann::json& options,
                               const AnalysisContext& ctx) {
  InductionScoreOptions o;
  o.span = options.value("span", 20);
  const int total = options.value("n_sequences", 16);
  const int chunk = std::max(1, options.value("chunk", 16));
  const uint64_t seed = options.value("seed", uint64_t{1});
  if (total < 1) fail("induction: n_sequences must be at least 1, got ", total);
  o.bos = m.tokenizer && m.tokenizer->bosId() >= 0 ? m.tokenizer->bosId() : m.config.bos_token_id;

  // Scores are means over sequences, so the chunk means weighted by chunk size give the exact mean.
  InductionScores sum;
  double copy = 0;
  for (int done = 0, c = 0; done < total; ++c) {
    ctx.checkCancelled();
    o.n_sequences = std::min(chunk, total - done);
    o.seed = seed + static_cast<uint64_t>(c);
    const InductionScores s = inductionScores(*m.model, o, {});
    const double w = double(o.n_sequences) / total;
    if (done == 0) {
      sum = s;
      sum.induction.values *= w;
      sum.previous_token.values *= w;
    } else {
      sum.induction.values += w * s.induction.values;
      sum.previous_token.values += w * s.previous_token.values;
    }
    copy += w * s.copy_accuracy;
    done += o.n_sequences;
    ctx.report(double(done) / total,
               "induction scores: " + std::to_string(done) + " / " + std::to_string(total) + " sequences");
  }

  AnalysisOutput out;
  out.run.id = "induction";
  out.run.method = "induction";
  out.run.options = {
      {"span", o.span}, {"n_sequences", total}, {"seed", seed}, {"chunk", chunk}, {"bos", o.bos}};
  for (HeadGrid* g : {&sum.induction, &sum.previous_token}) {
    g->provenance.method = "induction";
    g->provenance.model = m.path;
    g->provenance.task = "repeated random tokens";
    g->provenance.seed = seed;
    g->provenance.n_prompts = total;
    g->provenance.options = out.run.options;
    out.run.grids.push_back(*g);
  }
  out.run.summary = {{"copy_accuracy", copy}};
  return out;
}

namespace {

const Tokenizer& tokenizerOf(const LoadedModel& m, const char* method) {
  if (!m.tokenizer) fail(method, ": the model has no tokenizer; open it with one");
  return *m.tokenizer;
}

AnalysisOutput runTslaJob(const LoadedModel& m, const TaskSpec& spec, const nlohmann::json& options,
                          const AnalysisContext& ctx) {
  const Tokenizer& tok = tokenizerOf(m, "tsla");
  TslaOptions o;
  o.top_percent = options.value("top_percent", o.top_percent);
  o.ablation = options.value("ablation", o.ablation);
  o.model_path = m.path;
  ctx.report(0.0, "tsla: building the prompts of " + spec.dataset);
  return runTsla(*m.model, tok, buildIclTask(tok, spec), o, ctx);
}

AnalysisOutput runGeometryJob(const LoadedModel& m, const TaskSpec& spec, const nlohmann::json& options,
                              const AnalysisContext& ctx) {
  const Tokenizer& tok = tokenizerOf(m, "geometry");
  GeometryOptions o;
  o.layer = options.value("layer", o.layer);
  o.model_path = m.path;
  ctx.report(0.0, "geometry: building the prompts of " + spec.dataset);
  return runGeometry(*m.model, tok, buildIclTask(tok, spec), o, ctx);
}

// FV, SITE and LTV take the task spec itself (they draw their own train/valid prompts from its split);
// the options are the libraries' defaults (the CLI exposes them all), the schedules overridable here.
AnalysisOutput runFvJob(const LoadedModel& m, const TaskSpec& spec, const nlohmann::json&,
                        const AnalysisContext& ctx) {
  return functionVectors(*m.model, tokenizerOf(m, "fv"), spec, FvOptions{}, ctx, m.path);
}

AnalysisOutput runSiteJob(const LoadedModel& m, const TaskSpec& spec, const nlohmann::json& options,
                          const AnalysisContext& ctx) {
  SiteOptions o;
  o.steps = options.value("steps", o.steps);
  return site(*m.model, tokenizerOf(m, "site"), spec, o, ctx, m.path);
}

AnalysisOutput runLtvJob(const LoadedModel& m, const TaskSpec& spec, const nlohmann::json& options,
                         const AnalysisContext& ctx) {
  LtvOptions o;
  o.train.steps = options.value("steps", o.train.steps);
  o.layers = options.value("layers", o.layers);
  return runLtv(*m.model, tokenizerOf(m, "ltv"), spec, o, m.path, ctx);
}

}  // namespace

const std::map<std::string, AnalysisJob>& analysisJobs() {
  // One line per analysis.
  static const std::map<std::string, AnalysisJob> jobs = {
      {"induction", runInductionJob}, {"tsla", runTslaJob}, {"geometry", runGeometryJob}, {"fv", runFvJob},
      {"site", runSiteJob},           {"ltv", runLtvJob},
  };
  return jobs;
}

std::vector<std::string> analysisMethodNames() {
  std::vector<std::string> out;
  for (const auto& [name, job] : analysisJobs())
    out.push_back(name);
  return out;
}

}  // namespace hs::gui
