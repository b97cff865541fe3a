#include "analysis/methods/evaluate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {
namespace {

nlohmann::json evalJson(const IclEval& e) {
  const auto [lo, hi] = wilsonInterval(static_cast<int>(std::lround(e.accuracy * e.n)), e.n);
  return {{"n", e.n},
          {"accuracy", doubleToJson(e.accuracy)},
          {"accuracy_lo", doubleToJson(lo)},
          {"accuracy_hi", doubleToJson(hi)},
          {"tr_ratio", doubleToJson(e.tr_ratio)}};
}

// Zero- and mean-ablation interventions of a head set (the means: [layers, heads, d_head]), as head edits.
std::vector<Intervention> ablations(const Transformer& model, const std::vector<HeadRef>& zero,
                                    const std::vector<HeadRef>& mean, const at::Tensor& means) {
  std::vector<HeadEdit> edits;
  for (const HeadRef& h : zero)
    edits.push_back({HeadEditKind::ZeroAblate, h, {}, 1.0, -1, {}});
  for (const HeadRef& h : mean)
    edits.push_back({HeadEditKind::MeanAblate, h, {}, 1.0, -1, {}});
  return headEditInterventions(model, edits, [&](const HeadVectorSource&) { return means; });
}

// The patches and steering of the options at N, as head edits.
std::vector<HeadEdit> zeroShotEdits(const EvaluateOptions& o) {
  std::vector<HeadEdit> edits;
  for (const HeadRef& h : o.patch_clean)
    edits.push_back({HeadEditKind::Patch, h, o.patch_source, 1.0, -1, {}});
  for (const HeadRef& h : o.steer)
    edits.push_back({HeadEditKind::Steer, h, o.steer_source, o.steer_scale, o.steer_layer, {}});
  return edits;
}

}  // namespace

const OptionTable<EvaluateOptions>& evaluateOptionTable() {
  using O = EvaluateOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("zero_ablate", &O::zero_ablate, "heads zero-ablated on the ICL prompts (LAYER.HEAD,...)")
        .add(
            "mean_ablate", &O::mean_ablate,
            "heads mean-ablated on the ICL prompts (their mean per mean_source: a neutral corpus by default)")
        .add("patch_clean", &O::patch_clean,
             "heads whose z at N of zero-shot prompts is replaced by patch_source's vector")
        .add(
            "patch_source", [](O& o) -> std::string& { return o.patch_source.source; },
            "what patched heads receive: clean_mean (their z at N averaged over the ICL prompts), prompt "
            "(their z at N of ICL prompt patch_prompt) or text (their z at the last token of patch_text)",
            OptionCheck::oneOf({"clean_mean", "prompt", "text"}))
        .add(
            "patch_prompt", [](O& o) -> int& { return o.patch_source.prompt; },
            "the ICL prompt (0-based) of patch_source prompt", OptionCheck::atLeast(0))
        .add(
            "patch_text", [](O& o) -> std::string& { return o.patch_source.text; },
            "the text of patch_source text (tokenized as a prompt; its last token gives z)")
        .add("steer", &O::steer, "heads whose steer_source vector is added at N of zero-shot prompts")
        .add("steer_scale", &O::steer_scale, "scale of the steering")
        .add(
            "steer_source", [](O& o) -> std::string& { return o.steer_source.source; },
            "the steering vector of each head: clean_mean (its z at N averaged over the ICL prompts), mean "
            "(its mean per mean_source: a neutral corpus by default), prompt (its z at N of ICL prompt "
            "steer_prompt) or text (its z at the last token of steer_text)",
            OptionCheck::oneOf({"clean_mean", "mean", "prompt", "text"}))
        .add(
            "steer_prompt", [](O& o) -> int& { return o.steer_source.prompt; },
            "the ICL prompt (0-based) of steer_source prompt", OptionCheck::atLeast(0))
        .add(
            "steer_text", [](O& o) -> std::string& { return o.steer_source.text; },
            "the text of steer_source text (tokenized as a prompt; its last token gives z)")
        .add("steer_layer", &O::steer_layer,
             "where steering adds: -1 the head's own hook_z; L the head's write (W_O z) into "
             "hook_resid_pre of layer L (function-vector style)",
             OptionCheck::atLeast(-1));
    addMeanSourceOptions(t, &O::mean);
    t.add("random_draws", &O::random_draws,
          "random-heads control: head sets of the ablated size drawn from the other live heads (a "
          "non-zero W_O) (0: none)",
          OptionCheck::range(0, 1000))
        .add("random_seed", &O::random_seed, "seed of the random head sets", OptionCheck::atLeast(0))
        .add("batch", &O::batch, "prompts per forward", OptionCheck::atLeast(1));
    return t;
  }();
  return table;
}

MethodInfo evaluateMethod() {
  MethodInfo m;
  m.name = "evaluate";
  m.title = "Evaluate the task with head interventions";
  m.description =
      "Accuracy of the first answer token (and, for classification, the TR ratio: the share of predictions "
      "that are one of the label words) on the task's ICL prompts with the chosen heads zero- or "
      "mean-ablated, and on the zero-shot prompts of the same queries with heads patched from, or steered "
      "by, a source vector (their clean ICL mean by default, or their output on one prompt or text; "
      "steering optionally through the residual stream of another layer) — each against the same prompts "
      "without interventions.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.options = evaluateOptionTable().specs();
  m.outputs = {{OutputSpec::Kind::Table, "evaluate.accuracy", "accuracy (95 % interval), TR ratio",
                "each prompt set with and without the interventions"},
               {OutputSpec::Kind::Table, "evaluate.random_control", "accuracy per random draw",
                "ICL accuracy with as many random heads ablated as were chosen (random_draws > 0)"},
               {OutputSpec::Kind::Table, "evaluate.prompts", "per prompt",
                "every prompt's answer, prediction and answer probability before / after"}};
  m.gui.run_menu = false;  // the Evaluation dock runs it, with the Interventions dock's heads
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    ctx.report(0.0, "building the prompts of " + in.task.dataset);
    return runEvaluate(in.model, buildIclTask(*in.tokenizer, in.task), evaluateOptionTable().read(options),
                       ctx, in.tokenizer);
  };
  return m;
}

namespace {

// One intervention per head: a head ticked twice would make the numbers depend on the order.
void checkOneInterventionPerHead(const Transformer& model, const EvaluateOptions& o) {
  std::map<HeadRef, std::string> kindOf;
  for (const auto& [kind, heads] :
       {std::pair<const char*, const std::vector<HeadRef>*>{"zero_ablate", &o.zero_ablate},
        {"mean_ablate", &o.mean_ablate},
        {"patch_clean", &o.patch_clean},
        {"steer", &o.steer}}) {
    checkHeads(model, *heads, cat("evaluate: ", kind));
    for (const HeadRef& h : *heads) {
      const auto [it, fresh] = kindOf.emplace(h, kind);
      if (!fresh)
        fail("evaluate: head ", h.layer, ".", h.head, " has two interventions (", it->second, " and ", kind,
             "); keep one");
    }
  }
}

// The per-head vectors the interventions read, each [layers, heads, d_head] (undefined when unused).
struct SourceVectors {
  at::Tensor ablationMean;  // the mean of mean_ablate (and its random control), from o.mean
  at::Tensor patchZ;        // the patches' values
  at::Tensor steerZ;        // the steering vectors
};

// The vectors of mean ablation, patching and steering; steering reuses the patch's or the ablation mean's
// vectors when it names the same source. Progress [0, step).
SourceVectors resolveSourceVectors(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                                   const Tokenizer* tok, const AnalysisContext& ctx, double step) {
  SourceVectors v;
  if (!o.mean_ablate.empty())
    v.ablationMean =
        resolveMeanZ(model, tok, o.mean, tokenSeqs(task.icl), subContext(ctx, 0.0, 0.5 * step, "mean z"));
  if (!o.patch_clean.empty())
    v.patchZ = headSourceZ(model, tok, task.icl, o.patch_source, o.mean,
                           subContext(ctx, 0.5 * step, 0.75 * step, "patch source"), o.batch);
  if (!o.steer.empty()) {
    if (v.patchZ.defined() && sameSource(o.patch_source, o.steer_source))
      v.steerZ = v.patchZ;
    else if (v.ablationMean.defined() && o.steer_source.source == "mean")
      v.steerZ = v.ablationMean;
    else
      v.steerZ = headSourceZ(model, tok, task.icl, o.steer_source, o.mean,
                             subContext(ctx, 0.75 * step, step, "steering source"), o.batch);
  }
  return v;
}

// One prompt set evaluated without and with the interventions (the same when there are none).
struct BeforeAfter {
  IclEval before;
  IclEval after;
};

// The ICL prompts without and with zero_ablate / mean_ablate. Progress [step, 3 step).
BeforeAfter evaluateIclAblated(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                               const IclEvalOptions& base, const at::Tensor& ablationMean,
                               const AnalysisContext& ctx, double step) {
  BeforeAfter r;
  r.before = evaluateIcl(model, task.icl, base, subContext(ctx, step, 2 * step, "ICL"));
  r.after = r.before;
  if (!o.zero_ablate.empty() || !o.mean_ablate.empty()) {
    IclEvalOptions e = base;
    e.interventions = ablations(model, o.zero_ablate, o.mean_ablate, ablationMean);
    r.after = evaluateIcl(model, task.icl, e, subContext(ctx, 2 * step, 3 * step, "ICL with ablations"));
  }
  return r;
}

// The zero-shot prompts without and with patch_clean / steer at N. Progress [3 step, 5 step).
BeforeAfter evaluateZeroShotPatched(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                                    const IclEvalOptions& base, const SourceVectors& v,
                                    const AnalysisContext& ctx, double step) {
  BeforeAfter r;
  r.before = evaluateIcl(model, task.zero_shot, base, subContext(ctx, 3 * step, 4 * step, "zero-shot"));
  r.after = r.before;
  if (!o.patch_clean.empty() || !o.steer.empty()) {
    IclEvalOptions e = base;
    e.interventions = headEditInterventions(model, zeroShotEdits(o), [&](const HeadVectorSource& s) {
      return !o.patch_clean.empty() && sameSource(s, o.patch_source) ? v.patchZ : v.steerZ;
    });
    r.after =
        evaluateIcl(model, task.zero_shot, e, subContext(ctx, 4 * step, 5 * step, "zero-shot with patches"));
  }
  return r;
}

// The random-heads control: the table "evaluate.random_control" and each draw's accuracy.
struct RandomControl {
  Table table;
  std::vector<double> accuracy;  // [draws]
};

// `draws` ICL evaluations, each with as many heads ablated as were chosen and of the same kinds, drawn
// (seeded) from the heads not chosen. Progress [5 step, (5 + draws) step).
RandomControl randomHeadsControl(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                                 const IclEvalOptions& base, const at::Tensor& ablationMean, int draws,
                                 const AnalysisContext& ctx, double step) {
  const int nAblated = static_cast<int>(o.zero_ablate.size() + o.mean_ablate.size());
  std::set<HeadRef> chosen(o.zero_ablate.begin(), o.zero_ablate.end());
  chosen.insert(o.mean_ablate.begin(), o.mean_ablate.end());
  RandomControl rc;
  Table& control = rc.table;
  control.id = "evaluate.random_control";
  control.name = "ICL accuracy with random heads ablated (as many as chosen)";
  control.columns = {"draw", "heads", "accuracy", "tr_ratio"};
  const std::vector<HeadRef> live = liveHeads(model);
  for (int d = 0; d < draws; ++d) {
    const std::vector<HeadRef> heads =
        randomHeads(live, nAblated, chosen, static_cast<uint64_t>(o.random_seed) * 7919 + d);
    const std::vector<HeadRef> zero(heads.begin(),
                                    heads.begin() + std::min<size_t>(o.zero_ablate.size(), heads.size()));
    const std::vector<HeadRef> mean(heads.begin() + static_cast<long>(zero.size()), heads.end());
    IclEvalOptions e = base;
    e.interventions = ablations(model, zero, mean, ablationMean);
    const IclEval r = evaluateIcl(
        model, task.icl, e, subContext(ctx, (5 + d) * step, (6 + d) * step, cat("random draw ", d + 1)));
    control.rows.push_back({d + 1, headsText(heads), doubleToJson(r.accuracy), doubleToJson(r.tr_ratio)});
    rc.accuracy.push_back(r.accuracy);
  }
  return rc;
}

// The run's options (with descriptions of the sources used and the task) and its two prompt sets.
void recordOptionsAndPrompts(AnalysisOutput& out, const Transformer& model, const IclTask& task,
                             const EvaluateOptions& o, const Tokenizer* tok) {
  out.run.options = evaluateOptionTable().write(o);
  if (!o.mean_ablate.empty() || (!o.steer.empty() && o.steer_source.source == "mean"))
    out.run.options["mean_source_description"] = describeMeanSource(o.mean, &model, tok);
  if (!o.patch_clean.empty())
    out.run.options["patch_source_description"] = describeHeadVectorSource(o.patch_source);
  if (!o.steer.empty())
    out.run.options["steer_source_description"] = describeHeadVectorSource(o.steer_source);
  out.run.options["task"] = taskSpecToJson(task.spec);
  out.run.options["label_tokens"] = task.label_tokens;
  if (task.classification()) {
    recordPrompts(out, "icl", task.icl, {task.label_tokens});
    recordPrompts(out, "zero_shot", task.zero_shot, {task.label_tokens});
  } else {
    recordPrompts(out, "icl", task.icl);
    recordPrompts(out, "zero_shot", task.zero_shot);
  }
}

// Table "evaluate.accuracy", one row per condition; each condition's numbers also go into `summary`.
Table accuracyTable(const BeforeAfter& icl, const BeforeAfter& zeroShot, int nAblated, int nPatched,
                    nlohmann::json& summary) {
  Table t;
  t.id = "evaluate.accuracy";
  t.name = "Accuracy and TR ratio with and without the interventions";
  t.columns = {"condition", "prompts", "n", "heads", "accuracy", "accuracy_lo", "accuracy_hi", "tr_ratio"};
  const std::vector<std::tuple<const char*, const char*, const IclEval*, int>> rows = {
      {"icl", "icl", &icl.before, 0},
      {"icl_intervened", "icl", &icl.after, nAblated},
      {"zero_shot", "zero_shot", &zeroShot.before, 0},
      {"zero_shot_intervened", "zero_shot", &zeroShot.after, nPatched}};
  for (const auto& [cond, prompts, e, heads] : rows) {
    summary[cond] = evalJson(*e);
    const nlohmann::json& s = summary[cond];
    t.rows.push_back(
        {cond, prompts, e->n, heads, s["accuracy"], s["accuracy_lo"], s["accuracy_hi"], s["tr_ratio"]});
  }
  return t;
}

// The draws' mean accuracy, sd, the t interval of the mean and the 2.5 / 97.5 % range of the draws (summary
// "random_control").
nlohmann::json randomControlSummary(const std::vector<double>& drawAccuracy, int nAblated) {
  const int draws = static_cast<int>(drawAccuracy.size());
  const double mean = std::accumulate(drawAccuracy.begin(), drawAccuracy.end(), 0.0) / draws;
  const Spread s = spreadOf(drawAccuracy);
  return {{"draws", draws},
          {"heads", nAblated},
          {"pool", "live heads (non-zero W_O) outside the chosen ones"},
          {"accuracy", doubleToJson(mean)},
          {"accuracy_sd", doubleToJson(s.sd)},
          {"mean_lo", doubleToJson(std::isfinite(s.lo) ? std::max(0.0, s.lo) : s.lo)},
          {"mean_hi", doubleToJson(std::isfinite(s.hi) ? std::min(1.0, s.hi) : s.hi)},
          {"accuracy_lo", doubleToJson(quantile(drawAccuracy, 0.025))},
          {"accuracy_hi", doubleToJson(quantile(drawAccuracy, 0.975))}};
}

// Table "evaluate.prompts": every prompt before / after, which queries the interventions broke or fixed.
Table perPromptTable(const IclTask& task, const BeforeAfter& icl, const BeforeAfter& zeroShot,
                     const Tokenizer* tok) {
  Table per;
  per.id = "evaluate.prompts";
  per.name = "Every prompt: answer, prediction and answer probability before / after the interventions";
  per.columns = {"set",           "index", "query", "answer", "prediction", "p_answer", "prediction_after",
                 "p_answer_after"};
  auto pieceOf = [tok](int id) { return tok ? tok->piece(id) : std::to_string(id); };
  auto addRows = [&](const char* set, const std::vector<Prompt>& prompts, const IclEval& before,
                     const IclEval& after) {
    for (size_t i = 0; i < prompts.size() && i < before.predictions.size() && i < after.predictions.size();
         ++i) {
      const Prompt& p = prompts[i];
      std::string query;
      for (int k = p.query_input.begin; k < p.query_input.end && k < p.length(); ++k)
        query += p.pieces[static_cast<size_t>(k)];
      per.rows.push_back({set, static_cast<int>(i), query, p.answer, pieceOf(before.predictions[i]),
                          doubleToJson(std::exp(before.answer_logprob[i])), pieceOf(after.predictions[i]),
                          doubleToJson(std::exp(after.answer_logprob[i]))});
    }
  };
  addRows("icl", task.icl, icl.before, icl.after);
  addRows("zero_shot", task.zero_shot, zeroShot.before, zeroShot.after);
  return per;
}

}  // namespace

AnalysisOutput runEvaluate(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                           const AnalysisContext& ctx, const Tokenizer* tok) {
  checkOneInterventionPerHead(model, o);
  IclEvalOptions base;
  base.batch = o.batch;
  base.label_tokens = task.label_tokens;
  const int nAblated = static_cast<int>(o.zero_ablate.size() + o.mean_ablate.size());
  const int nPatched = static_cast<int>(o.patch_clean.size() + o.steer.size());
  const int draws = nAblated > 0 ? o.random_draws : 0;
  // Progress: the source vectors, four evaluations and the random draws share [0, 1] by their forwards.
  const double step = 1.0 / (5 + draws);

  const SourceVectors vectors = resolveSourceVectors(model, task, o, tok, ctx, step);
  const BeforeAfter icl = evaluateIclAblated(model, task, o, base, vectors.ablationMean, ctx, step);
  const BeforeAfter zeroShot = evaluateZeroShotPatched(model, task, o, base, vectors, ctx, step);
  const RandomControl control =
      randomHeadsControl(model, task, o, base, vectors.ablationMean, draws, ctx, step);

  AnalysisOutput out;
  out.run.id = ctx.runId("evaluate");
  out.run.method = "evaluate";
  recordOptionsAndPrompts(out, model, task, o, tok);
  out.run.tables = {accuracyTable(icl, zeroShot, nAblated, nPatched, out.run.summary)};
  out.run.summary["n_ablated"] = nAblated;
  out.run.summary["n_patched"] = nPatched;
  if (draws > 0) {
    out.run.summary["random_control"] = randomControlSummary(control.accuracy, nAblated);
    out.run.tables.push_back(control.table);
  }
  out.run.tables.push_back(perPromptTable(task, icl, zeroShot, tok));
  ctx.report(1.0, "done");
  return out;
}

nlohmann::json evaluateOptionsOf(const std::vector<HeadEdit>& edits) {
  nlohmann::json options = nlohmann::json::object();
  for (HeadEditKind k :
       {HeadEditKind::ZeroAblate, HeadEditKind::MeanAblate, HeadEditKind::Patch, HeadEditKind::Steer})
    options[toString(k)] = nlohmann::json::array();
  // One set of parameters per kind: every patched head shares the patch's source, every steered head the
  // steering's source, scale and layer.
  const HeadEdit* patch = nullptr;
  const HeadEdit* steer = nullptr;
  for (const HeadEdit& e : edits) {
    const std::string what = describeHeadEdit(e);
    if (!e.positions.empty())
      fail(what,
           ": the evaluation acts at its fixed positions (every position for ablations, N for patches "
           "and steering); clear the edit's positions to evaluate it");
    if (e.kind == HeadEditKind::Patch) {
      if (e.source.source == "mean")
        fail(what, ": the evaluation patches from the clean ICL mean, an ICL prompt or a text");
      if (patch && !sameSource(patch->source, e.source))
        fail("the evaluation patches every head from one source; ", describeHeadEdit(*patch), " and ", what);
      patch = &e;
    }
    if (e.kind == HeadEditKind::Steer) {
      if (steer &&
          (!sameSource(steer->source, e.source) || steer->scale != e.scale || steer->layer != e.layer))
        fail("the evaluation steers every head from one source, by one scale, at one layer; ",
             describeHeadEdit(*steer), " (layer ", steer->layer, ") and ", what, " (layer ", e.layer, ")");
      steer = &e;
    }
    options[toString(e.kind)].push_back({e.head.layer, e.head.head});
  }
  auto put = [&](const std::string& prefix, const HeadVectorSource& s) {
    options[prefix + "_source"] = s.source;
    if (s.source == "prompt") options[prefix + "_prompt"] = s.prompt;
    if (s.source == "text") options[prefix + "_text"] = s.text;
  };
  if (patch) put("patch", patch->source);
  if (steer) {
    put("steer", steer->source);
    options["steer_scale"] = steer->scale;
    options["steer_layer"] = steer->layer;
  }
  return options;
}

}  // namespace hs
