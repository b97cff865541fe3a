#include "analysis/evaluate.h"

#include <map>
#include <tuple>

#include "analysis/head_toolkit.h"
#include "analysis/icl_eval.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {
namespace {

nlohmann::json evalJson(const IclEval& e) {
  return {{"n", e.n}, {"accuracy", doubleToJson(e.accuracy)}, {"tr_ratio", doubleToJson(e.tr_ratio)}};
}

}  // namespace

const OptionTable<EvaluateOptions>& evaluateOptionTable() {
  using O = EvaluateOptions;
  static const OptionTable<O> table = [] {
    OptionTable<O> t;
    t.add("zero_ablate", &O::zero_ablate, "heads zero-ablated on the ICL prompts (LAYER.HEAD,...)")
        .add("mean_ablate", &O::mean_ablate,
             "heads mean-ablated on the ICL prompts (their mean per mean_source: a neutral corpus by default)")
        .add("patch_clean", &O::patch_clean, "heads patched from the clean ICL mean at N of zero-shot prompts")
        .add("steer", &O::steer, "heads whose clean ICL mean is added at N of zero-shot prompts")
        .add("steer_scale", &O::steer_scale, "scale of the steering");
    addMeanSourceOptions(t, &O::mean);
    t.add("batch", &O::batch, "prompts per forward", OptionCheck::atLeast(1));
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
      "by, their clean ICL mean — each against the same prompts without interventions.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.options = evaluateOptionTable().specs();
  m.outputs = {{OutputSpec::Kind::Table, "evaluate.accuracy", "accuracy, TR ratio",
                "each prompt set with and without the interventions"}};
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    ctx.report(0.0, "building the prompts of " + in.task.dataset);
    return runEvaluate(in.model, in.tokenizer, buildIclTask(*in.tokenizer, in.task),
                       evaluateOptionTable().read(options), ctx);
  };
  return m;
}

AnalysisOutput runEvaluate(const Transformer& model, const Tokenizer* tok, const IclTask& task,
                           const EvaluateOptions& o, const AnalysisContext& ctx) {
  // One intervention per head: a head ticked twice would make the numbers depend on the order.
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
  IclEvalOptions base;
  base.batch = o.batch;
  base.label_tokens = task.label_tokens;
  const TokenSeqs icl = tokenSeqs(task.icl);
  at::Tensor cleanMean;  // [layers, heads, d_head] hook_z at N over the ICL prompts
  if (!o.patch_clean.empty() || !o.steer.empty())
    cleanMean = meanZ(model, icl, ZMean::LastPosition, subContext(ctx, 0.0, 0.1, "clean mean"), o.batch);
  at::Tensor ablationMean;  // [layers, heads, d_head] the mean of mean_ablate, from o.mean
  if (!o.mean_ablate.empty())
    ablationMean = resolveMeanZ(model, tok, o.mean, icl, subContext(ctx, 0.1, 0.2, "mean z"));

  const IclEval iclBase = evaluateIcl(model, task.icl, base, subContext(ctx, 0.2, 0.4, "ICL"));
  IclEval iclInt = iclBase;
  const int nAblated = static_cast<int>(o.zero_ablate.size() + o.mean_ablate.size());
  if (nAblated > 0) {
    IclEvalOptions e = base;
    e.interventions = zeroHeads(o.zero_ablate);
    for (const Intervention& iv : meanHeads(o.mean_ablate, ablationMean))
      e.interventions.push_back(iv);
    iclInt = evaluateIcl(model, task.icl, e, subContext(ctx, 0.4, 0.6, "ICL with ablations"));
  }
  const IclEval zsBase = evaluateIcl(model, task.zero_shot, base, subContext(ctx, 0.6, 0.8, "zero-shot"));
  IclEval zsInt = zsBase;
  const int nPatched = static_cast<int>(o.patch_clean.size() + o.steer.size());
  if (nPatched > 0) {
    IclEvalOptions e = base;
    e.interventions = replaceHeads(o.patch_clean, cleanMean, {-1});
    for (const Intervention& iv : addHeads(o.steer, cleanMean, {-1}, o.steer_scale))
      e.interventions.push_back(iv);
    zsInt = evaluateIcl(model, task.zero_shot, e, subContext(ctx, 0.8, 1.0, "zero-shot with patches"));
  }

  AnalysisOutput out;
  out.run.id = ctx.runId("evaluate");
  out.run.method = "evaluate";
  out.run.options = evaluateOptionTable().write(o);
  if (!o.mean_ablate.empty()) out.run.options["mean_source_description"] = describeMeanSource(o.mean, &model, tok);
  out.run.options["task"] = taskSpecToJson(task.spec);
  out.run.options["label_tokens"] = task.label_tokens;
  if (task.classification()) {
    recordPrompts(out, "icl", task.icl, {task.label_tokens});
    recordPrompts(out, "zero_shot", task.zero_shot, {task.label_tokens});
  } else {
    recordPrompts(out, "icl", task.icl);
    recordPrompts(out, "zero_shot", task.zero_shot);
  }
  Table t;
  t.id = "evaluate.accuracy";
  t.name = "Accuracy and TR ratio with and without the interventions";
  t.columns = {"condition", "prompts", "n", "heads", "accuracy", "tr_ratio"};
  const std::vector<std::tuple<const char*, const char*, const IclEval*, int>> rows = {
      {"icl", "icl", &iclBase, 0},
      {"icl_intervened", "icl", &iclInt, nAblated},
      {"zero_shot", "zero_shot", &zsBase, 0},
      {"zero_shot_intervened", "zero_shot", &zsInt, nPatched}};
  for (const auto& [cond, prompts, e, heads] : rows) {
    t.rows.push_back({cond, prompts, e->n, heads, doubleToJson(e->accuracy), doubleToJson(e->tr_ratio)});
    out.run.summary[cond] = evalJson(*e);
  }
  out.run.summary["n_ablated"] = nAblated;
  out.run.summary["n_patched"] = nPatched;
  out.run.tables = {t};
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
