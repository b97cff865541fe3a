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
          .add(
              "more_tasks", &FvOptions::more_tasks,
              "further tasks run beside --task (datasets, comma-separated; the task's other settings): each "
              "gets its own AIE, the heads are the top of the AIE averaged over all the tasks (the universal "
              "set), and each task's FV from those heads is evaluated on it (empty: --task alone)")
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
       "the AIE averaged over the tasks of heads_from or of this run (the universal head set's ranking)"},
      {OutputSpec::Kind::Grid, "fv.aie.*", "ΔP", "the AIE of one of more_tasks (a run of several tasks)"},
      {OutputSpec::Kind::Curve, "fv.accuracy_vs_layer", "layer → accuracy",
       "zero-shot accuracy with the function vector added after the layer", "Task vectors",
       "Function-vector accuracy vs layer"},
      {OutputSpec::Kind::Curve, "fv.accuracy_vs_layer.*", "layer → accuracy",
       "zero-shot accuracy of one of more_tasks with its function vector added after the layer"},
      {OutputSpec::Kind::Table, "fv.top_heads", "AIE", "the heads summed into the function vector"},
      {OutputSpec::Kind::Table, "fv.tasks", "accuracy",
       "a run of several tasks: each task's zero-shot, ICL and best-layer FV accuracy (universal heads)"},
      {OutputSpec::Kind::Tensor, "fv", "", "[d_model] the function vector"},
      {OutputSpec::Kind::Tensor, "mean_z", "", "[layers, heads, d_head] the clean mean head outputs"},
      {OutputSpec::Kind::Tensor, "fv.*", "", "[d_model] the function vector of one of more_tasks"},
      {OutputSpec::Kind::Tensor, "mean_z.*", "", "[layers, heads, d_head] one of more_tasks' mean outputs"},
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

HeadGrid averageAie(const std::vector<HeadGrid>& perTask) {
  if (perTask.empty()) fail("universal AIE: no task grids");
  const int layers = perTask.front().layers(), heads = perTask.front().heads();
  HeadGrid out;
  out.id = "fv.aie_universal";
  out.name = "Universal AIE: the AIE averaged over " + std::to_string(perTask.size()) + " tasks";
  out.unit = "ΔP";
  out.provenance.method = "fv";
  out.values = Eigen::MatrixXd::Zero(layers, heads);           // [layers, heads]
  Eigen::MatrixXd var = Eigen::MatrixXd::Zero(layers, heads);  // [layers, heads] Σ_t se_t²
  bool allSe = true;
  for (const HeadGrid& g : perTask) {
    if (g.layers() != layers || g.heads() != heads)
      fail("universal AIE: grid ", g.id, " of ", g.provenance.task, " is ", g.layers(), " x ", g.heads(),
           ", the first is ", layers, " x ", heads);
    out.values += g.values;  // Ā = (1/|T|) Σ_t AIE_t, each task's grid once
    if (g.hasSe())
      var += g.se.cwiseAbs2();
    else
      allSe = false;
  }
  const double n = static_cast<double>(perTask.size());
  out.values /= n;
  // SE(Ā) = (1/|T|) √(Σ_t se_t²): the tasks' means are independent (each over its own prompts).
  if (allSe) out.se = var.cwiseSqrt() / n;
  return out;
}

HeadGrid universalAie(const std::string& files, int layers, int heads) {
  std::vector<HeadGrid> grids;
  nlohmann::json sources = nlohmann::json::array();
  std::stringstream list(files);
  for (std::string path; std::getline(list, path, ',');) {
    if (path.empty()) continue;
    const nlohmann::json j = readJsonFile(path);
    // One grid file, or a run: its "fv.aie" grid and, from a run of several tasks, its "fv.aie.<t>" grids.
    const std::vector<HeadGrid> fromFile = withContext("heads_from " + path, [&] {
      if (j.is_object() && j.contains("values")) return std::vector<HeadGrid>{j.get<HeadGrid>()};
      std::vector<HeadGrid> taskGrids;
      for (const HeadGrid& h : j.at("grids").get<std::vector<HeadGrid>>())
        if (h.id == "fv.aie" || h.id.rfind("fv.aie.", 0) == 0) taskGrids.push_back(h);
      if (taskGrids.empty()) fail("no fv.aie grid (give the --json file of an fv run)");
      return taskGrids;
    });
    for (const HeadGrid& g : fromFile) {
      if (g.layers() != layers || g.heads() != heads)
        fail("heads_from ", path, ": its AIE is ", g.layers(), " x ", g.heads(), ", the model has ", layers,
             " x ", heads, " heads");
      grids.push_back(g);
      sources.push_back({{"file", path}, {"task", g.provenance.task}});
    }
  }
  if (grids.empty()) fail("heads_from: no files given");
  HeadGrid out = averageAie(grids);
  out.name = "Universal AIE: the AIE averaged over the tasks of heads_from";
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

// The prompt sets of one task.
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

// Prompt sets "clean", "corrupt", "eval_zero_shot" and "eval_icl" (with the label set for classification),
// each name followed by `suffix` ("" for the run's own task, ".<t>" for a further one).
void recordFvPrompts(AnalysisOutput& out, const FvPrompts& p, const std::string& suffix = "") {
  recordPrompts(out, "clean" + suffix, p.clean);
  recordPrompts(out, "corrupt" + suffix, p.shuffled);
  if (p.eval.classification()) {
    const std::vector<std::vector<int>> labelSet = {p.eval.label_tokens};
    recordPrompts(out, "eval_zero_shot" + suffix, p.eval.zero_shot, labelSet);
    recordPrompts(out, "eval_icl" + suffix, p.eval.icl, labelSet);
  } else {
    recordPrompts(out, "eval_zero_shot" + suffix, p.eval.zero_shot);
    recordPrompts(out, "eval_icl" + suffix, p.eval.icl);
  }
}

// The run's tasks: spec, then one spec per more_tasks entry (its dataset, spec's other fields). Refused:
// more_tasks beside heads_from (two sources of the universal set), a task given twice, two tasks whose short
// names (what their grids, curves and tensors are named by) coincide.
std::vector<TaskSpec> runTasks(const TaskSpec& spec, const FvOptions& opt) {
  std::vector<TaskSpec> tasks = {spec};
  std::stringstream list(opt.more_tasks);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    TaskSpec t = spec;
    t.dataset = item.substr(b, e - b + 1);
    for (const TaskSpec& seen : tasks) {
      if (seen.dataset == t.dataset)
        fail("fv: task ", t.dataset, " is given twice (--task and more_tasks together name each task once)");
      if (shortName(seen.dataset) == shortName(t.dataset))
        fail("fv: tasks ", seen.dataset, " and ", t.dataset, " share the name ", shortName(t.dataset),
             " that their results are named by");
    }
    tasks.push_back(std::move(t));
  }
  if (tasks.size() > 1 && !opt.heads_from.empty())
    fail("fv: give heads_from (earlier runs' AIE) or more_tasks (this run's tasks), not both");
  return tasks;
}

// One task of a run of several: its prompts, mean z and AIE, and its FV from the universal heads with that
// FV's accuracies.
struct FvTask {
  TaskSpec spec;
  std::string name;  // shortName(spec.dataset): the suffix of its results
  FvPrompts prompts;
  at::Tensor mean_z;  // [layers, heads, d_head]
  HeadGrid aie;       // [layers, heads]
  at::Tensor fv;      // [d_model]
  FvAccuracy acc;
};

// Table "fv.tasks": per task its evaluation count, zero-shot and ICL accuracy, and the accuracy of its FV
// (universal heads) at its best layer, each rate with its 95 % Wilson interval.
Table tasksTable(const std::vector<FvTask>& tasks, const Provenance& prov) {
  Table t;
  t.id = "fv.tasks";
  t.name = "Each task with the FV of the universal heads (accuracy at the FV's best layer)";
  t.columns = {"task", "n_eval", "zero_shot", "icl", "fv_best_layer", "fv_accuracy", "fv_norm"};
  for (const FvTask& k : tasks) {
    const FvAccuracy& a = k.acc;
    const size_t best = size_t(std::max_element(a.fv.begin(), a.fv.end()) - a.fv.begin());
    t.rows.push_back({k.spec.dataset, a.zero_shot.n, a.zero_shot.accuracy, a.icl.accuracy, int(best),
                      a.fv[best], k.fv.norm().item<double>()});
  }
  for (const char* c : {"zero_shot", "icl", "fv_accuracy"})
    addWilsonColumns(t, c, "n_eval");
  t.provenance = prov;
  return t;
}

// The run's output (id, method, options) and in `prov` the provenance every result shares: the FV options
// and `spec`, the run's task.
AnalysisOutput startFvOutput(const TaskSpec& spec, const FvOptions& opt, const AnalysisContext& ctx,
                             Provenance* prov) {
  *prov = makeProvenance("fv", ctx, spec.dataset, spec.seed, spec.n_prompts, fvOptionTable().write(opt));
  prov->options["task"] = taskSpecToJson(spec);
  AnalysisOutput out;
  out.run.id = ctx.runId("fv");
  out.run.method = "fv";
  out.run.options = prov->options;
  return out;
}

// The run of several tasks (runFv with more_tasks). Progress: [0, 0.8) the tasks' means and AIEs, then the
// accuracies.
AnalysisOutput runFvTasks(const Transformer& model, const Tokenizer& tok, const std::vector<TaskSpec>& specs,
                          const FvOptions& opt, const AnalysisContext& ctx) {
  std::vector<FvTask> tasks;
  for (const TaskSpec& s : specs)  // every dataset loaded and every prompt built before any forward
    tasks.push_back({s,
                     shortName(s.dataset),
                     withContext("fv: task " + s.dataset, [&] { return buildFvPrompts(tok, s, opt); }),
                     {},
                     {},
                     {},
                     {}});
  at::NoGradGuard noGrad;
  const double n = static_cast<double>(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    FvTask& t = tasks[i];
    const double from = 0.8 * double(i) / n, to = 0.8 * double(i + 1) / n;
    t.mean_z = hs::meanZ(model, tokenSeqs(t.prompts.clean), ZMean::LastPosition,
                         subContext(ctx, from, from + 0.25 * (to - from), "mean z of " + t.name));
    t.aie = averageIndirectEffect(model, t.prompts.shuffled, t.mean_z,
                                  subContext(ctx, from + 0.25 * (to - from), to, "AIE of " + t.name));
  }
  std::vector<HeadGrid> aies;
  for (const FvTask& t : tasks)
    aies.push_back(t.aie);
  const HeadGrid universal = averageAie(aies);
  const std::vector<HeadRef> top = topHeads(universal, opt.top);
  for (size_t i = 0; i < tasks.size(); ++i) {
    FvTask& t = tasks[i];
    // v_t = Σ_{(l,k) ∈ top heads of Ā} W_O z̄_t[l, k]: the universal heads, this task's means.
    t.fv = topHeadsFunctionVector(model, t.mean_z, t.prompts.clean, top);  // [d_model]
    t.acc = accuracyWithFvPerLayer(model, t.prompts.eval, t.fv, opt.batch,
                                   subContext(ctx, 0.8 + 0.2 * double(i) / n, 0.8 + 0.2 * double(i + 1) / n,
                                              "FV accuracy of " + t.name));
  }

  Provenance prov;
  AnalysisOutput out = startFvOutput(specs.front(), opt, ctx, &prov);
  nlohmann::json taskList = nlohmann::json::array(), perTask = nlohmann::json::object();
  for (size_t i = 0; i < tasks.size(); ++i) {
    const FvTask& t = tasks[i];
    // The run's own task keeps the single-task names; a further task's carry ".<its short name>".
    const std::string suffix = i == 0 ? "" : "." + t.name;
    Provenance p = prov;
    p.task = t.spec.dataset;
    p.options["task"] = taskSpecToJson(t.spec);
    HeadGrid g = withRunProvenance(t.aie, p, opt.n_corrupt);
    g.id = "fv.aie" + suffix;
    g.name = "Average indirect effect on " + t.name + " (z at N ← mean, shuffled labels)";
    out.run.grids.push_back(g);
    Curve c = accuracyCurve(t.acc, p);
    c.id += suffix;
    c.name += " (" + t.name + ", universal heads)";
    out.run.curves.push_back(c);
    out.addTensor("fv" + suffix, t.fv);
    out.addTensor("mean_z" + suffix, t.mean_z);
    recordFvPrompts(out, t.prompts, suffix);
    taskList.push_back(t.spec.dataset);
    perTask[t.name] = fvSummary(universal, top, t.acc, t.fv, t.prompts.eval);
    for (const char* k : {"top_heads", "top_aie"})  // the same for every task: once, at the top level
      perTask[t.name].erase(k);
  }
  HeadGrid u = universal;
  u.provenance = prov;
  u.provenance.n_prompts = opt.n_corrupt;
  u.provenance.derived["tasks"] = taskList;
  out.run.grids.push_back(u);
  out.run.tables.push_back(topHeadsTable(universal, top, prov));
  out.run.tables.push_back(tasksTable(tasks, prov));
  out.run.summary =
      fvSummary(universal, top, tasks.front().acc, tasks.front().fv, tasks.front().prompts.eval);
  out.run.summary["head_set"] = "universal";
  out.run.summary["tasks"] = taskList;
  out.run.summary["per_task"] = perTask;
  ctx.report(1.0, "done");
  return out;
}

}  // namespace

AnalysisOutput runFv(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                     const FvOptions& opt, const AnalysisContext& ctx) {
  checkFvOptions(model.config(), opt);
  const std::vector<TaskSpec> specs = runTasks(spec, opt);
  if (specs.size() > 1) return runFvTasks(model, tok, specs, opt, ctx);
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

  Provenance prov;
  AnalysisOutput out = startFvOutput(spec, opt, ctx, &prov);
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
