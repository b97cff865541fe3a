// Function vectors: mean z over clean prompts, AIE over shuffled-label prompts (the patching sweep in
// Mean mode), the FV as the sum of the top heads' mean writes, and zero-shot accuracy with the FV added
// after each layer.
#include "analysis/methods/function_vectors.h"

#include <limits>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <sstream>

#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis/toolkit/patch_sweep.h"
#include "results/intervals.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

const OptionTable<FvOptions>& fvOptionTable() {
  static const OptionTable<FvOptions> table =
      OptionTable<FvOptions>()
          .add("n_mean", &FvOptions::n_mean, "clean ICL prompts averaged into the mean head outputs",
               OptionCheck::atLeast(1))
          .add("n_corrupt", &FvOptions::n_corrupt, "shuffled-label prompts of the AIE sweep",
               OptionCheck::atLeast(1))
          .add("top", &FvOptions::top, "heads summed into the function vector", OptionCheck::atLeast(1))
          .add("source_split", &FvOptions::source_split, "split of the mean and shuffled prompts' queries",
               OptionCheck::oneOf({"train", "valid", "test"}))
          .add("heads_from", &FvOptions::heads_from,
               "earlier FV runs of several tasks (their --json files, comma-separated): the FV sums the top "
               "heads of their AIE grids averaged, the official universal head set (empty: this task's AIE)")
          .add("batch", &FvOptions::batch, "prompts per forward in the evaluations", OptionCheck::atLeast(1));
  return table;
}

MethodInfo fvMethod() {
  MethodInfo m;
  m.name = "fv";
  m.title = "Function vectors (causal head scores)";
  m.paper =
      "Todd, Li, Sen Sharma, Mueller, Wallace, Bau: Function Vectors in Large Language Models (ICLR 2024)";
  m.description =
      "Which heads carry the task. Each head's output at the last position is averaged over clean ICL "
      "prompts; on prompts whose demonstration labels are shuffled (the task is no longer shown), one head "
      "at a time gets its clean mean back and the rise of the correct answer's probability is its average "
      "indirect effect (AIE). The function vector is the sum of the top heads' mean writes; added to the "
      "residual stream after a layer of a zero-shot prompt, it shows how much of the task it carries, layer "
      "by layer.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.default_task.dataset = "toy:antonym_a";
  m.default_task.shots = 10;
  m.options = fvOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "fv.aie", "ΔP", "rise of P(answer) when the head's clean mean is restored"},
      {OutputSpec::Kind::Grid, "fv.aie_universal", "ΔP",
       "the AIE averaged over the tasks of heads_from (the universal head set's ranking)"},
      {OutputSpec::Kind::Curve, "fv.accuracy_vs_layer", "layer → accuracy",
       "zero-shot accuracy with the function vector added after the layer", "Task vectors",
       "Function-vector accuracy vs layer"},
      {OutputSpec::Kind::Table, "fv.top_heads", "AIE", "the heads summed into the function vector"},
      {OutputSpec::Kind::Tensor, "fv", "", "[d_model] the function vector"},
      {OutputSpec::Kind::Tensor, "mean_z", "", "[layers, heads, d_head] the clean mean head outputs"},
  };
  m.gui.at_start = true;
  m.gui.start_on_toy_only = true;
  m.gui.start_on_open_task = true;
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runFv(in.model, *in.tokenizer, in.task, fvOptionTable().read(options), ctx);
  };
  return m;
}

HeadGrid averageIndirectEffect(const Transformer& model, const std::vector<Prompt>& corrupt,
                               const at::Tensor& meanZ, const AnalysisContext& ctx) {
  if (corrupt.empty()) fail("averageIndirectEffect: no shuffled-label prompts given");
  std::vector<PatchSweepSpec> specs;
  for (size_t i = 0; i < corrupt.size(); ++i) {
    const Prompt& p = corrupt[i];
    if (p.answer_token < 0) fail("averageIndirectEffect: prompt ", i, " has no answer token");
    PatchSweepSpec s;
    s.corrupt.assign(p.ids.begin(), p.ids.end());
    s.target = p.answer_token;
    s.metric = PatchMetric::TargetProb;
    s.mode = PatchMode::Mean;
    s.positions = {-1};  // N
    s.mean_z = meanZ;    // [layers, heads, d_head]
    specs.push_back(std::move(s));
  }
  at::NoGradGuard noGrad;
  HeadGrid g = patchingSweepAverage(model, specs, ctx);
  g.id = "fv.aie";
  g.name = "Average indirect effect (z at N ← mean, shuffled labels)";
  g.unit = "ΔP";
  g.provenance.method = "fv";
  return g;
}

HeadGrid universalAie(const std::string& files, int layers, int heads) {
  HeadGrid out;
  out.id = "fv.aie_universal";
  out.name = "Universal AIE: the AIE averaged over the tasks of heads_from";
  out.unit = "ΔP";
  out.provenance.method = "fv";
  out.values = Eigen::MatrixXd::Zero(layers, heads);
  nlohmann::json sources = nlohmann::json::array();
  std::stringstream list(files);
  for (std::string path; std::getline(list, path, ',');) {
    if (path.empty()) continue;
    const nlohmann::json j = readJsonFile(path);
    const HeadGrid g = withContext("heads_from " + path, [&] {
      if (j.is_object() && j.contains("values")) return j.get<HeadGrid>();
      for (const HeadGrid& h : j.at("grids").get<std::vector<HeadGrid>>())
        if (h.id == "fv.aie") return h;
      fail("no fv.aie grid (give the --json file of an fv run)");
    });
    if (g.layers() != layers || g.heads() != heads)
      fail("heads_from ", path, ": its AIE is ", g.layers(), " x ", g.heads(), ", the model has ", layers,
           " x ", heads, " heads");
    out.values += g.values;  // Ā = (1/|T|) Σ_t AIE_t, each task's grid once
    sources.push_back({{"file", path}, {"task", g.provenance.task}});
  }
  if (sources.empty()) fail("heads_from: no files given");
  out.values /= static_cast<double>(sources.size());
  out.provenance.derived["heads_from"] = sources;
  return out;
}

at::Tensor functionVector(const Transformer& model, const at::Tensor& meanZ,
                          const std::vector<HeadRef>& heads) {
  const ModelConfig& c = model.config();
  if (meanZ.dim() != 3 || meanZ.size(0) != c.n_layers || meanZ.size(1) != c.n_heads ||
      meanZ.size(2) != c.d_head)
    fail("functionVector: mean_z must be [", c.n_layers, ", ", c.n_heads, ", ", c.d_head, "], got ",
         meanZ.sizes());
  requireAdditiveHeadWrites(model, "function vector from mean z");
  at::NoGradGuard noGrad;
  at::Tensor fv = at::zeros({c.d_model}, at::kFloat);  // [d_model]
  for (const HeadRef& h : heads) {
    const at::Tensor wo =
        headOutputWeight(model, h.layer, h.head).to(at::kCPU, at::kFloat);  // [d_model, d_head]
    const at::Tensor z = meanZ[h.layer][h.head].to(at::kCPU, at::kFloat);   // [d_head]
    fv += at::mv(wo, z);                                                    // a = W_O z̄
  }
  return fv;
}

namespace {

void checkFvOptions(const ModelConfig& c, const FvOptions& opt) {
  if (opt.n_mean < 1 || opt.n_corrupt < 1) fail("fv: n_mean and n_corrupt must be >= 1");
  if (static_cast<int64_t>(opt.n_mean) + opt.n_corrupt > std::numeric_limits<int>::max())
    fail("fv: n_mean + n_corrupt is ", static_cast<int64_t>(opt.n_mean) + opt.n_corrupt, ", more than ",
         std::numeric_limits<int>::max());
  if (opt.top < 1 || opt.top > c.n_layers * c.n_heads)
    fail("fv: top must be in [1, ", c.n_layers * c.n_heads, "], got ", opt.top);
}

// The prompt sets of a run.
struct FvPrompts {
  IclTask eval;                  // the evaluation set (spec)
  std::vector<Prompt> clean;     // [n_mean] clean ICL prompts of z̄
  std::vector<Prompt> shuffled;  // [n_corrupt] shuffled-label prompts of the AIE
};

// Prompt sets from the source split: the first n_mean clean prompts give z̄, the next n_corrupt (other
// queries while the split has enough) are shuffled for the AIE. One spec, one seed: the split (which
// depends on the seed) stays the evaluation set's, so no evaluation query is a source query.
FvPrompts buildFvPrompts(const Tokenizer& tok, const TaskSpec& spec, const FvOptions& opt) {
  TaskSpec sourceSpec = spec;
  sourceSpec.split = opt.source_split;
  sourceSpec.n_prompts = opt.n_mean + opt.n_corrupt;
  const IclTask source = withContext("fv: source prompts", [&] { return buildIclTask(tok, sourceSpec); });
  FvPrompts p;
  p.eval = withContext("fv: evaluation prompts", [&] { return buildIclTask(tok, spec); });
  p.clean.assign(source.icl.begin(), source.icl.begin() + opt.n_mean);
  const std::vector<Prompt> allShuffled = shuffledLabelPrompts(tok, source, spec.seed);
  p.shuffled.assign(allShuffled.begin() + opt.n_mean, allShuffled.end());
  return p;
}

// The FV of the top heads: [d_model]. Attention post-norm (OLMo-2): each head's write through the norm at
// the clean prompts' activations, averaged over them (W_O z̄ is not the heads' additive write there;
// head_toolkit.h).
at::Tensor topHeadsFunctionVector(const Transformer& model, const at::Tensor& meanZ,
                                  const std::vector<Prompt>& clean, const std::vector<HeadRef>& top) {
  if (additiveHeadWrites(model)) return functionVector(model, meanZ, top);
  const at::Tensor meanA = headOutputsAtLast(model, tokenSeqs(clean)).mean(0);  // [layers, heads, d_model]
  at::Tensor fv = at::zeros({model.config().d_model}, at::kFloat);              // [d_model]
  for (const HeadRef& h : top)
    fv += meanA[h.layer][h.head];
  return fv;
}

// Accuracies on the evaluation queries: zero-shot and ICL, and zero-shot with the FV added after each layer.
struct FvAccuracy {
  IclEval zero_shot;
  IclEval icl;
  std::vector<double> layers;  // [layers] 0 .. L−1
  std::vector<double> fv;      // [layers] zero-shot accuracy with the FV added to hook_resid_post(l) at N
};

// Progress [0.8, 1).
FvAccuracy accuracyWithFvPerLayer(const Transformer& model, const IclTask& evalTask, const at::Tensor& fv,
                                  int batch, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  IclEvalOptions eo;
  eo.batch = batch;
  eo.label_tokens = evalTask.label_tokens;
  FvAccuracy a;
  a.zero_shot = evaluateIcl(model, evalTask.zero_shot, eo);
  a.icl = evaluateIcl(model, evalTask.icl, eo);
  for (int l = 0; l < c.n_layers; ++l) {
    ctx.checkCancelled();
    IclEvalOptions lo = eo;
    lo.interventions = {addToResidual(residPost(l), fv)};
    a.layers.push_back(l);
    a.fv.push_back(evaluateIcl(model, evalTask.zero_shot, lo).accuracy);
    ctx.report(0.8 + 0.2 * (l + 1) / c.n_layers, cat("FV accuracy: layer ", l + 1, "/", c.n_layers));
  }
  return a;
}

// The AIE grid with the run's provenance; the sweep's own options (mode, metric) kept under "sweep".
HeadGrid withRunProvenance(HeadGrid aie, const Provenance& prov, int nCorrupt) {
  nlohmann::json sweep = aie.provenance.options;
  aie.provenance = prov;
  aie.provenance.n_prompts = nCorrupt;
  aie.provenance.options["sweep"] = sweep;
  return aie;
}

// Curve "fv.accuracy_vs_layer": the FV series with the zero-shot and ICL accuracies as constant series.
Curve accuracyCurve(const FvAccuracy& a, const Provenance& prov) {
  Curve curve;
  curve.id = "fv.accuracy_vs_layer";
  curve.name = "Zero-shot accuracy with the FV added after layer l";
  curve.x_label = "layer";
  curve.y_label = "accuracy";
  curve.x = a.layers;
  curve.series = {{"fv", a.fv},
                  {"zero_shot", std::vector<double>(a.layers.size(), a.zero_shot.accuracy)},
                  {"icl", std::vector<double>(a.layers.size(), a.icl.accuracy)}};
  addWilsonIntervals(curve, a.zero_shot.n, {"fv", "zero_shot"});  // 95 %, over the evaluated prompts
  addWilsonIntervals(curve, a.icl.n, {"icl"});
  curve.provenance = prov;
  return curve;
}

// Table "fv.top_heads": rank, head and AIE of every head summed into the FV.
Table topHeadsTable(const HeadGrid& aie, const std::vector<HeadRef>& top, const Provenance& prov) {
  Table tops;
  tops.id = "fv.top_heads";
  // `aie` is the grid the heads were ranked by: this task's ("task") or the universal one ("universal").
  const std::string set = aie.id == "fv.aie_universal" ? "universal" : "task";
  tops.name = "Heads of the function vector (" + set + " head set, ranked by " + aie.id + ")";
  tops.columns = {"rank", "layer", "head", "aie", "head_set"};
  for (size_t i = 0; i < top.size(); ++i)
    tops.rows.push_back(
        {int(i + 1), top[i].layer, top[i].head, doubleToJson(aie.values(top[i].layer, top[i].head)), set});
  tops.provenance = prov;
  return tops;
}

nlohmann::json fvSummary(const HeadGrid& aie, const std::vector<HeadRef>& top, const FvAccuracy& a,
                         const at::Tensor& fv, const IclTask& evalTask) {
  nlohmann::json topJson = nlohmann::json::array(), topAie = nlohmann::json::array();
  for (const HeadRef& h : top) {
    topJson.push_back(h);
    topAie.push_back(doubleToJson(aie.values(h.layer, h.head)));
  }
  const int best = int(std::max_element(a.fv.begin(), a.fv.end()) - a.fv.begin());
  return {{"top_heads", topJson},
          {"top_aie", topAie},
          {"best_layer", best},
          {"fv_accuracy_best", a.fv[size_t(best)]},
          {"zero_shot_accuracy", a.zero_shot.accuracy},
          {"icl_accuracy", a.icl.accuracy},
          {"fv_norm", fv.norm().item<double>()},
          {"n_eval", int(evalTask.zero_shot.size())}};
}

// Prompt sets "clean", "corrupt", "eval_zero_shot" and "eval_icl" (with the label set for classification).
void recordFvPrompts(AnalysisOutput& out, const FvPrompts& p) {
  recordPrompts(out, "clean", p.clean);
  recordPrompts(out, "corrupt", p.shuffled);
  if (p.eval.classification()) {
    const std::vector<std::vector<int>> labelSet = {p.eval.label_tokens};
    recordPrompts(out, "eval_zero_shot", p.eval.zero_shot, labelSet);
    recordPrompts(out, "eval_icl", p.eval.icl, labelSet);
  } else {
    recordPrompts(out, "eval_zero_shot", p.eval.zero_shot);
    recordPrompts(out, "eval_icl", p.eval.icl);
  }
}

}  // namespace

AnalysisOutput runFv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                     const FvOptions& opt, const AnalysisContext& ctx) {
  checkFvOptions(model.config(), opt);
  const FvPrompts prompts = buildFvPrompts(tok, spec, opt);

  at::NoGradGuard noGrad;
  const at::Tensor meanZ =
      hs::meanZ(model, tokenSeqs(prompts.clean), ZMean::LastPosition, subContext(ctx, 0.0, 0.2, "mean z"));
  const HeadGrid aie =
      averageIndirectEffect(model, prompts.shuffled, meanZ, subContext(ctx, 0.2, 0.8, "AIE"));
  // The heads: this task's top AIE, or the universal set (the AIE averaged over heads_from's tasks).
  const bool universal = !opt.heads_from.empty();
  const HeadGrid ranking =
      universal ? universalAie(opt.heads_from, model.config().n_layers, model.config().n_heads) : aie;
  const std::vector<HeadRef> top = topHeads(ranking, opt.top);
  const at::Tensor fv = topHeadsFunctionVector(model, meanZ, prompts.clean, top);  // [d_model]
  const FvAccuracy acc = accuracyWithFvPerLayer(model, prompts.eval, fv, opt.batch, ctx);

  // Provenance shared by every result (options: the FV options and the task).
  Provenance prov =
      makeProvenance("fv", ctx, spec.dataset, spec.seed, spec.n_prompts, fvOptionTable().write(opt));
  prov.options["task"] = taskSpecToJson(spec);

  AnalysisOutput out;
  out.run.id = ctx.runId("fv");
  out.run.method = "fv";
  out.run.options = prov.options;
  out.run.grids.push_back(withRunProvenance(aie, prov, opt.n_corrupt));
  if (universal) {
    HeadGrid u = ranking;
    u.provenance = prov;
    u.provenance.derived["heads_from"] = ranking.provenance.derived.at("heads_from");
    out.run.grids.push_back(u);
  }
  out.run.curves.push_back(accuracyCurve(acc, prov));
  out.run.tables.push_back(topHeadsTable(ranking, top, prov));
  out.run.summary = fvSummary(ranking, top, acc, fv, prompts.eval);
  out.run.summary["head_set"] = universal ? "universal" : "task";
  recordFvPrompts(out, prompts);
  out.addTensor("fv", fv);
  out.addTensor("mean_z", meanZ);
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
