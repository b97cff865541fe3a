#include "analysis/tsla.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "analysis/icl_eval.h"
#include "analysis/induction_scores.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "tasks/corruption.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kInputShuffleStream = 0x7153;

// [layers, heads] float64 tensor → Eigen.
Eigen::MatrixXd toMatrix(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();  // [layers, heads]
  Eigen::MatrixXd m(c.size(0), c.size(1));
  const double* p = c.data_ptr<double>();
  for (int64_t i = 0; i < c.size(0); ++i)
    for (int64_t j = 0; j < c.size(1); ++j)
      m(i, j) = p[i * c.size(1) + j];
  return m;
}

std::vector<double> toVector(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();  // [n]
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

// Sum over the selected heads of their prompt-mean output: meanA [layers, heads, d_model] → [d_model].
at::Tensor headSetVector(const at::Tensor& meanA, const std::vector<HeadRef>& heads) {
  at::Tensor v = at::zeros({meanA.size(2)}, meanA.options());  // [d_model]
  for (const HeadRef& h : heads)
    v += meanA[h.layer][h.head];
  return v;
}

nlohmann::json evalJson(const IclEval& e) {
  return {{"accuracy", doubleToJson(e.accuracy)}, {"tr_ratio", doubleToJson(e.tr_ratio)}, {"n", e.n}};
}

// Prompts grouped by identical label set: set → prompt indices (ascending).
std::map<std::vector<int>, std::vector<int64_t>> groupBySet(const PromptLabels& labels) {
  std::map<std::vector<int>, std::vector<int64_t>> groups;
  for (size_t i = 0; i < labels.sets.size(); ++i)
    groups[labels.sets[i]].push_back(static_cast<int64_t>(i));
  return groups;
}

std::vector<int> goldOf(const PromptLabels& labels, const std::vector<int64_t>& rows) {
  std::vector<int> g;
  for (int64_t r : rows)
    g.push_back(labels.gold[static_cast<size_t>(r)]);
  return g;
}

std::vector<Example> examplesAt(const Dataset& d, const std::vector<int>& idx) {
  std::vector<Example> out;
  for (int i : idx)
    out.push_back(d.examples[static_cast<size_t>(i)]);
  return out;
}

// A prompt set with the label set and gold index of each prompt.
struct LabelledPrompts {
  std::vector<Prompt> prompts;
  PromptLabels labels;
};

// Held-out prompts whose demonstration inputs are permuted across the demonstrations (each demo keeps its
// label, gets another demo's input): the format and label set stay, the input → label mapping goes.
LabelledPrompts shuffledInputPrompts(const Tokenizer& tok, const IclTask& eval, const PromptLabels& labels,
                                     uint64_t seed) {
  LabelledPrompts out;
  out.labels = labels;
  for (size_t i = 0; i < eval.icl.size(); ++i) {
    const std::vector<Example> demos = shuffleInputs(examplesAt(eval.dataset, eval.demo_index[i]),
                                                     toy::deriveSeed(seed, kInputShuffleStream, i));
    out.prompts.push_back(
        buildPrompt(tok, eval.tmpl, demos, eval.dataset.examples[static_cast<size_t>(eval.query_index[i])]));
  }
  return out;
}

// Held-out prompts whose labels are replaced by the numbers 1..k (in order of first appearance in the
// demonstrations, consistently for the query): the mapping stays learnable, the label words go. A prompt
// whose query label no demonstration shows has no number answer and is left out.
// Empty, with the reason in *skipped, when the tokenizer cannot tell the numbers apart by their first token.
LabelledPrompts numberLabelPrompts(const Tokenizer& tok, const IclTask& eval, std::string* skipped) {
  LabelledPrompts out;
  std::map<std::string, int> numberToken;  // "3" → its first token after the output prefix
  auto tokenOf = [&](const std::string& number) {
    auto it = numberToken.find(number);
    if (it != numberToken.end()) return it->second;
    Example probe = eval.dataset.examples.front();
    probe.outputs = {number};
    const int t = zeroShotPrompt(tok, eval.tmpl, probe).answer_token;
    numberToken[number] = t;
    return t;
  };
  for (size_t i = 0; i < eval.icl.size(); ++i) {
    const Example& query = eval.dataset.examples[static_cast<size_t>(eval.query_index[i])];
    const Relabeled r = numberLabels(examplesAt(eval.dataset, eval.demo_index[i]), query);
    bool mapped = false;
    std::vector<int> set;
    for (const auto& [old, number] : r.mapping) {
      set.push_back(tokenOf(number));
      mapped = mapped || old == query.outputs.at(0);
    }
    if (!mapped) continue;
    const Prompt p = buildPrompt(tok, eval.tmpl, r.demos, r.query);
    std::vector<int> sorted = set;
    std::sort(sorted.begin(), sorted.end());
    if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
      *skipped = cat("the number labels 1..", set.size(), " do not start with distinct tokens");
      return {};
    }
    const auto it = std::find(set.begin(), set.end(), p.answer_token);
    if (it == set.end()) fail("tsla: a number-label prompt's answer token is not one of the number tokens");
    out.prompts.push_back(p);
    out.labels.sets.push_back(set);
    out.labels.gold.push_back(static_cast<int>(it - set.begin()));
  }
  return out;
}

// 1, 2, 4, … up to half of `nHeads` (at least 1).
std::vector<int> defaultCurveKs(int nHeads) {
  std::vector<int> ks;
  for (int k = 1; k <= std::max(1, nHeads / 2); k *= 2)
    ks.push_back(k);
  return ks;
}

}  // namespace

const OptionTable<TslaOptions>& tslaOptionTable() {
  static const OptionTable<TslaOptions> table = [] {
    using O = TslaOptions;
    OptionTable<O> t;
    t.add("top_percent", &O::top_percent,
          "share of heads (%) selected by TR, TL, induction score and at random (at least one)",
          OptionCheck::range(0, 100).openBelow())
        .add("ablation", &O::ablation, "how the selected heads are ablated in the ablation tables and curves",
             OptionCheck::oneOf({"zero", "mean", "both"}));
    addMeanSourceOptions(t, &O::mean);
    t.add("final_norm", &O::final_norm,
          "fold the final norm's weight into W_U for TR/TL and measure the per-layer curves on the "
          "final-normed residual (what the logits read); off: raw W_U rows and raw residuals")
        .add("eval_prompts", &O::eval_prompts,
             "held-out prompts (other queries of the task's split) for the ablation, perturbation and "
             "steering tables; -1: as many as analysed",
             OptionCheck::atLeast(-1))
        .add("random_seed", &O::random_seed,
             "seed of the random head set and order, the input shuffles and the induction-score sequences")
        .add("induction_span", &O::induction_span, "induction scores: random tokens per copy",
             OptionCheck::atLeast(2))
        .add("induction_sequences", &O::induction_sequences, "induction scores: sequences",
             OptionCheck::atLeast(1))
        .add("steer_layer", &O::steer_layer,
             "steer the residual stream entering this layer (-1: n_layers / 2)", OptionCheck::atLeast(-1))
        .add("steer_scale", &O::steer_scale, "scale of the steering vectors")
        .add("curves", &O::curves, "ablation curves over the number of heads k per ordering")
        .add("curve_ks", &O::curve_ks, "k of the ablation curves (empty: 1, 2, 4, ... up to half the heads)",
             OptionCheck::atLeast(1))
        .add("perturbation", &O::perturbation,
             "ablation tables on held-out prompts with shuffled demonstration inputs and with number labels "
             "(classification tasks)")
        .add("batch", &O::batch, "prompts per forward", OptionCheck::atLeast(1));
    return t;
  }();
  return table;
}

MethodInfo tslaMethod() {
  MethodInfo m;
  m.name = "tsla";
  m.title = "Task recognition and task learning heads (TSLA)";
  m.paper =
      "Yang, Cho, Inoue: Localizing Task Recognition and Task Learning in In-Context Learning via Attention "
      "Head Analysis (ICLR 2026)";
  m.description =
      "Task Subspace Logit Attribution. Each head's write into the residual stream at the last prompt "
      "position is projected onto the label subspace spanned by the unembeddings of the task's label words "
      "(open-ended tasks: the answers the prompt's demonstrations show). TR (task recognition) is the norm "
      "of that projection: how much the head moves the prediction into the label set. TL (task learning) is "
      "the projection's alignment with the correct label's direction: whether it picks the right label. The "
      "top heads by TR, by TL and by induction score, and random heads, are ablated on held-out prompts "
      "(accuracy and TR ratio; as tables, as curves over the number of heads, and on prompts whose "
      "demonstration inputs are shuffled or whose labels are numbers), and used as steering vectors on "
      "zero-shot prompts; where the heads attend, and how the last-position hidden state aligns with the "
      "subspace layer by layer with and without them, complete the picture.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.options = tslaOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "tsla.tr", "norm", "how much the head writes into the label subspace"},
      {OutputSpec::Kind::Grid, "tsla.tl", "logit / norm", "how much of that write points at the right label"},
      {OutputSpec::Kind::Grid, "tsla.induction", "attention", "prefix-matching (induction) score"},
      {OutputSpec::Kind::Grid, "tsla.attention_labels", "attention",
       "share of the last position's attention on the demonstrations' labels"},
      {OutputSpec::Kind::Grid, "tsla.attention_query", "attention",
       "share of the last position's attention on the query's input"},
      {OutputSpec::Kind::Table, "tsla.ablation", "accuracy, TR ratio",
       "each head set ablated on held-out prompts"},
      {OutputSpec::Kind::Table, "tsla.perturbation", "accuracy, TR ratio",
       "the ablations on prompts with shuffled inputs and with number labels"},
      {OutputSpec::Kind::Table, "tsla.attention", "attention", "where each head set attends"},
      {OutputSpec::Kind::Table, "tsla.steering", "accuracy, TR ratio",
       "zero-shot prompts steered by each set"},
      {OutputSpec::Kind::Curve, "tsla.ablation_curve.accuracy", "k → accuracy",
       "held-out accuracy with the top k heads of each ordering ablated"},
      {OutputSpec::Kind::Curve, "tsla.ablation_curve.tr_ratio", "k → TR ratio",
       "held-out TR ratio with the top k heads of each ordering ablated"},
      {OutputSpec::Kind::Curve, "tsla.alignment", "layer → ‖P h‖/‖h‖", "alignment with the label subspace"},
      {OutputSpec::Kind::Curve, "tsla.logit_diff", "layer → logit", "correct label vs the others"},
      {OutputSpec::Kind::Table, "tsla.overlap", "Jaccard, τ, ρ",
       "agreement of the TR, TL and induction rankings"},
  };
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    ctx.report(0.0, "building the prompts of " + in.task.dataset);
    return runTsla(in.model, *in.tokenizer, buildIclTask(*in.tokenizer, in.task),
                   tslaOptionTable().read(options), ctx);
  };
  return m;
}

std::vector<int> goldLabelIndices(const std::vector<Prompt>& prompts, const std::vector<int>& labelTokens) {
  std::vector<int> gold;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const auto it = std::find(labelTokens.begin(), labelTokens.end(), prompts[i].answer_token);
    if (it == labelTokens.end())
      fail("prompt ", i, ": answer token ", prompts[i].answer_token, " (", prompts[i].answer,
           ") is not one of the task's label tokens");
    gold.push_back(static_cast<int>(it - labelTokens.begin()));
  }
  return gold;
}

PromptLabels promptLabels(const IclTask& task, const std::vector<Prompt>& prompts) {
  PromptLabels out;
  if (task.classification()) {
    out.gold = goldLabelIndices(prompts, task.label_tokens);
    out.sets.assign(prompts.size(), task.label_tokens);
    return out;
  }
  for (const Prompt& p : prompts) {
    std::set<int> s = {p.answer_token};
    for (const Prompt::Demo& d : p.demos)
      if (!d.label.empty()) s.insert(p.ids[static_cast<size_t>(d.label.begin)]);
    std::vector<int> set(s.begin(), s.end());
    out.gold.push_back(static_cast<int>(std::find(set.begin(), set.end(), p.answer_token) - set.begin()));
    out.sets.push_back(std::move(set));
  }
  return out;
}

TrTlScores trTlScores(const at::Tensor& headOutputs, const LabelProjector& projector,
                      const std::vector<int>& gold) {
  if (headOutputs.dim() != 4) fail("TR/TL: head outputs must be [prompts, layers, heads, d_model]");
  const int64_t n = headOutputs.size(0), d = headOutputs.size(3);
  if (static_cast<int64_t>(gold.size()) != n)
    fail("TR/TL: ", gold.size(), " gold labels for ", n, " prompts");
  if (n == 0) fail("TR/TL: no prompts");
  const int64_t L = headOutputs.size(1), H = headOutputs.size(2);
  const at::Tensor idx = at::tensor(std::vector<int64_t>(gold.begin(), gold.end()), at::kLong);  // [n]
  const at::Tensor dirs =
      projector.tlDirections().index_select(0, idx).view({n, 1, d});  // [n, 1, d_model] d_{y*}
  at::Tensor tr = at::empty({L, H}, at::kDouble), tl = at::empty({L, H}, at::kDouble);  // [layers, heads]
  // One layer at a time, so the float64 copies stay [n, heads, d_model] (the whole [n, layers, heads,
  // d_model] in float64 is gigabytes for an 8B model).
  for (int64_t l = 0; l < L; ++l) {
    const at::Tensor pa = projector.project(headOutputs.select(1, l));  // [n, heads, d_model] P a
    const at::Tensor norm = pa.norm(2, -1);                             // [n, heads] ‖P a‖
    // ⟨a, d⟩ = ⟨P a, d⟩ because d lies in the label subspace; a head writing nothing there scores 0.
    const at::Tensor dot = (pa * dirs).sum(-1);  // [n, heads]
    const at::Tensor ratio =
        at::where(norm > 0, dot / norm.clamp_min(1e-300), at::zeros_like(dot));  // [n, heads]
    tr[l].copy_(norm.mean(0));
    tl[l].copy_(ratio.mean(0));
  }
  return {toMatrix(tr), toMatrix(tl)};
}

TrTlScores trTlScores(const at::Tensor& headOutputs, const Transformer& model, const PromptLabels& labels,
                      bool foldFinalNorm) {
  const int64_t n = headOutputs.size(0);
  if (static_cast<int64_t>(labels.sets.size()) != n)
    fail("TR/TL: ", labels.sets.size(), " label sets for ", n, " prompts");
  TrTlScores sum;
  for (const auto& [set, rows] : groupBySet(labels)) {
    const LabelProjector p(unembedRows(model, set, foldFinalNorm));
    const at::Tensor idx = at::tensor(rows, at::kLong);  // [group]
    const TrTlScores s = trTlScores(headOutputs.index_select(0, idx), p, goldOf(labels, rows));
    const double w = static_cast<double>(rows.size()) / static_cast<double>(n);  // means over all prompts
    sum.tr = sum.tr.size() ? Eigen::MatrixXd(sum.tr + w * s.tr) : Eigen::MatrixXd(w * s.tr);
    sum.tl = sum.tl.size() ? Eigen::MatrixXd(sum.tl + w * s.tl) : Eigen::MatrixXd(w * s.tl);
  }
  return sum;
}

SubspaceCurves subspaceCurves(const at::Tensor& residuals, const LabelProjector& projector,
                              const std::vector<int>& gold) {
  if (residuals.dim() != 3) fail("subspace curves: residuals must be [prompts, layers, d_model]");
  const int64_t n = residuals.size(0), d = residuals.size(2);
  if (static_cast<int64_t>(gold.size()) != n)
    fail("subspace curves: ", gold.size(), " gold labels for ", n, " prompts");
  const at::Tensor h = residuals.to(at::kCPU, at::kDouble);  // [n, layers, d_model]
  const at::Tensor align = projector.projectedNorm(h) / h.norm(2, -1).clamp_min(1e-300);  // [n, layers]
  const at::Tensor idx = at::tensor(std::vector<int64_t>(gold.begin(), gold.end()), at::kLong);  // [n]
  const at::Tensor dirs = projector.tlDirections().index_select(0, idx);  // [n, d_model]
  const at::Tensor diff = (h * dirs.view({n, 1, d})).sum(-1);             // [n, layers]
  return {toVector(align.mean(0)), toVector(diff.mean(0))};
}

SubspaceCurves subspaceCurves(const at::Tensor& residuals, const Transformer& model,
                              const PromptLabels& labels, bool finalNorm) {
  const int64_t n = residuals.size(0);
  if (static_cast<int64_t>(labels.sets.size()) != n)
    fail("subspace curves: ", labels.sets.size(), " label sets for ", n, " prompts");
  const at::Tensor h = finalNorm ? finalNormed(model, residuals) : residuals;  // [n, layers, d_model]
  std::vector<double> align(static_cast<size_t>(residuals.size(1)), 0.0), diff(align.size(), 0.0);
  for (const auto& [set, rows] : groupBySet(labels)) {
    const LabelProjector p(unembedRows(model, set, false));
    const SubspaceCurves c =
        subspaceCurves(h.index_select(0, at::tensor(rows, at::kLong)), p, goldOf(labels, rows));
    const double w = static_cast<double>(rows.size()) / static_cast<double>(n);
    for (size_t l = 0; l < align.size(); ++l) {
      align[l] += w * c.alignment[l];
      diff[l] += w * c.logit_diff[l];
    }
  }
  return {align, diff};
}

LabelProjector taskProjector(const Transformer& model, const IclTask& task, const std::string& method,
                             bool foldFinalNorm) {
  if (!task.classification())
    fail(method, ": task ", task.spec.dataset,
         " is not a classification task; the label subspace needs a label set (e.g. toy:category_label)");
  if (task.label_tokens.size() < 2)
    fail(method, ": task ", task.spec.dataset, " has ", task.label_tokens.size(),
         " label tokens, need at least 2");
  return LabelProjector(unembedRows(model, task.label_tokens, foldFinalNorm));
}

Provenance iclProvenance(const std::string& method, const AnalysisContext& ctx, const IclTask& task,
                         const nlohmann::json& options) {
  Provenance p = makeProvenance(method, ctx, task.spec.dataset, task.spec.seed,
                                static_cast<int>(task.icl.size()), options);
  p.options["task"] = taskSpecToJson(task.spec);
  p.options["label_tokens"] = task.label_tokens;
  return p;
}

IclTask heldOutTask(const Tokenizer& tok, const IclTask& task, int n) {
  if (n < 1) fail("tsla: ", n, " held-out prompts, need at least 1");
  const int analysed = static_cast<int>(task.icl.size());
  TaskSpec spec = task.spec;
  spec.n_prompts = analysed + n;
  const IclTask all = buildIclTask(tok, spec, task.dataset);
  for (int i = 0; i < analysed; ++i)
    if (all.icl[static_cast<size_t>(i)].ids != task.icl[static_cast<size_t>(i)].ids)
      fail("tsla: the analysed prompts are not the ones their task spec builds (prompt ", i,
           " differs); give the held-out task explicitly");
  const std::set<int> seen(all.query_index.begin(), all.query_index.begin() + analysed);
  const std::set<int> distinct(all.query_index.begin(), all.query_index.end());
  for (int i = analysed; i < analysed + n; ++i)
    if (seen.count(all.query_index[static_cast<size_t>(i)]))
      fail("tsla: the ", spec.split, " split of ", task.spec.dataset, " holds ", distinct.size(),
           " queries, too few for ", analysed, " analysed and ", n,
           " held-out prompts with different queries; lower n or eval_prompts");
  IclTask out = all;
  auto tail = [&](auto& v) { v.erase(v.begin(), v.begin() + analysed); };
  tail(out.icl);
  tail(out.zero_shot);
  tail(out.query_index);
  tail(out.demo_index);
  out.spec.n_prompts = n;
  return out;
}

AttentionShares attentionShares(const Transformer& model, const std::vector<Prompt>& prompts,
                                const AnalysisContext& ctx, int batch) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  BatchRun run;
  run.batch = batch;
  run.what = "attention at the last position";
  for (int l = 0; l < L; ++l)
    run.capture.insert(attnPattern(l));
  at::Tensor labels = at::zeros({L, H}, at::kDouble), query = at::zeros({L, H}, at::kDouble),
             inputs = at::zeros({L, H}, at::kDouble);  // [layers, heads] sums over prompts
  forEachBatch(
      model, tokenSeqs(prompts), run,
      [&](size_t b, size_t e, const PaddedBatch& pb, const RunResult& r) {
        const int64_t P = pb.tokens.size(1);
        // Per row, 0/1 masks over key positions of the label, query and demo-input tokens.
        at::Tensor mLabel = at::zeros({static_cast<int64_t>(e - b), P}, at::kDouble),  // [batch, k_pos]
            mQuery = at::zeros_like(mLabel), mInput = at::zeros_like(mLabel);
        for (size_t i = b; i < e; ++i) {
          const Prompt& p = prompts[i];
          const int64_t row = static_cast<int64_t>(i - b), pad = pb.pad[static_cast<size_t>(row)];
          for (const Prompt::Demo& d : p.demos) {
            mLabel[row].slice(0, pad + d.label.begin, pad + d.label.end).fill_(1.0);
            mInput[row].slice(0, pad + d.input.begin, pad + d.input.end).fill_(1.0);
          }
          mQuery[row].slice(0, pad + p.query_input.begin, pad + p.query_input.end).fill_(1.0);
        }
        for (int l = 0; l < L; ++l) {
          const at::Tensor a =
              r.cache.at(attnPattern(l)).select(2, -1).to(at::kCPU, at::kDouble);  // [batch, head, k_pos]
          labels[l] += (a * mLabel.unsqueeze(1)).sum(at::IntArrayRef{0, 2});
          query[l] += (a * mQuery.unsqueeze(1)).sum(at::IntArrayRef{0, 2});
          inputs[l] += (a * mInput.unsqueeze(1)).sum(at::IntArrayRef{0, 2});
        }
      },
      ctx);
  const double n = static_cast<double>(prompts.size());
  return {toMatrix(labels / n), toMatrix(query / n), toMatrix(inputs / n)};
}

AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const TslaOptions& opts, const AnalysisContext& ctx) {
  const int n = opts.eval_prompts > 0 ? opts.eval_prompts : static_cast<int>(task.icl.size());
  const IclTask evalTask = heldOutTask(tok, task, n);
  return runTsla(model, tok, task, evalTask, opts, ctx);
}

AnalysisOutput runTsla(const Transformer& model, const Tokenizer& tok, const IclTask& task,
                       const IclTask& evalTask, const TslaOptions& opts, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads, LH = L * H;
  if (opts.ablation != "zero" && opts.ablation != "mean" && opts.ablation != "both")
    fail("tsla: ablation must be zero, mean or both, got '", opts.ablation, "'");
  if (!(opts.top_percent > 0 && opts.top_percent <= 100))
    fail("tsla: top percent must be in (0, 100], got ", opts.top_percent);
  if (opts.steer_layer < -1 || opts.steer_layer >= L)
    fail("tsla: steering layer ", opts.steer_layer, " outside 0..", L - 1, " (or -1 for n_layers / 2)");
  const int steerLayer = opts.steer_layer >= 0 ? opts.steer_layer : L / 2;
  if (!std::isfinite(opts.steer_scale))
    fail("tsla: steering scale ", opts.steer_scale, " is not a finite number");
  if (task.icl.empty() || evalTask.icl.empty()) fail("tsla: empty prompt set");
  if (task.classification()) taskProjector(model, task, "tsla");  // refuses fewer than two labels
  if (evalTask.label_tokens != task.label_tokens)
    fail("tsla: the held-out task has other label tokens than the analysed task");
  std::set<int> analysedQueries(task.query_index.begin(), task.query_index.end());
  for (int q : evalTask.query_index)
    if (analysedQueries.count(q))
      fail("tsla: held-out query ", q, " of ", task.spec.dataset, " is also an analysed query");
  at::NoGradGuard noGrad;

  nlohmann::json options = tslaOptionTable().write(opts);
  options["eval_n_prompts"] = evalTask.icl.size();
  options["eval_prompts_from"] = "prompts " + std::to_string(task.icl.size()) + ".." +
                                 std::to_string(task.icl.size() + evalTask.icl.size() - 1) +
                                 " of the task spec (other queries of its split)";
  options["mean_source_description"] = describeMeanSource(opts.mean, &model, &tok);
  options["label_sets"] = task.classification() ? "the task's label words"
                                                : "per prompt: first tokens of the demonstrations' answers "
                                                  "and of the query's answer";
  const Provenance prov = iclProvenance("tsla", ctx, task, options);
  AnalysisOutput out;
  out.run.id = ctx.runId("tsla");
  out.run.method = "tsla";
  out.run.options = prov.options;

  // 1. Head outputs at N and the TR / TL grids.
  const PromptLabels labels = promptLabels(task, task.icl);
  const PromptLabels evalLabels = promptLabels(evalTask, evalTask.icl);
  const at::Tensor a =
      headOutputsAtLast(model, tokenSeqs(task.icl), {}, subContext(ctx, 0.0, 0.08, "head outputs"),
                        opts.batch);  // [n, layers, heads, d_model]
  const TrTlScores scores = trTlScores(a, model, labels, opts.final_norm);
  HeadGrid tr{"tsla.tr", "Task recognition ‖P a‖", "norm", scores.tr, prov};
  HeadGrid tl{"tsla.tl", "Task learning ⟨a, W_U[y*] − mean W_U[y']⟩ / ‖P a‖", "logit / norm", scores.tl,
              prov};

  // 2. Head sets: top k by TR, by TL, by prefix matching; random k outside the TR and TL sets.
  const int k = topPercentCount(LH, opts.top_percent);
  const std::vector<HeadRef> trTop = topHeads(tr, k), tlTop = topHeads(tl, k);
  InductionScoreOptions io;
  io.span = opts.induction_span;
  io.n_sequences = opts.induction_sequences;
  io.seed = opts.random_seed;
  io.bos = c.bos_token_id;
  std::tie(io.token_low, io.token_high) = inductionTokenRange(model, &tok);
  InductionScores ind = inductionScores(model, io, subContext(ctx, 0.08, 0.12, "induction heads"));
  ind.induction.id = "tsla.induction";
  ind.induction.name = "Induction (prefix matching) score";
  ind.induction.unit = "attention";
  ind.induction.provenance = prov;
  ind.induction.provenance.options["induction_tokens"] = {io.token_low, io.token_high};
  const std::vector<HeadRef> indTop = topHeads(ind.induction, k);
  std::set<HeadRef> chosen(trTop.begin(), trTop.end());
  chosen.insert(tlTop.begin(), tlTop.end());
  const std::vector<HeadRef> randTop = randomHeads(L, H, k, chosen, opts.random_seed);
  const std::vector<std::pair<std::string, const std::vector<HeadRef>*>> sets = {
      {"tr", &trTop}, {"tl", &tlTop}, {"induction", &indTop}, {"random", &randTop}};

  // 3. Ablation on the held-out prompts, zero and/or with the means of opts.mean.
  std::vector<std::string> modes;
  if (opts.ablation != "mean") modes.push_back("zero");
  if (opts.ablation != "zero") modes.push_back("mean");
  at::Tensor meanZ;  // [layers, heads, d_head]
  if (opts.ablation != "zero")
    meanZ = resolveMeanZ(model, &tok, opts.mean, tokenSeqs(task.icl), subContext(ctx, 0.12, 0.16, "mean z"));
  auto ablate = [&](const std::string& mode, const std::vector<HeadRef>& heads) {
    return mode == "mean" ? meanHeads(heads, meanZ) : zeroHeads(heads);
  };
  auto evaluate = [&](const std::vector<Prompt>& prompts, const PromptLabels& pl,
                      std::vector<Intervention> ivs, const AnalysisContext& sub) {
    IclEvalOptions eo;
    eo.batch = opts.batch;
    eo.label_sets = pl.sets;
    eo.interventions = std::move(ivs);
    return evaluateIcl(model, prompts, eo, sub);
  };
  // Baseline and every set × mode on one prompt set, as rows of `table` (first cell `condition` when
  // given); returns the baseline.
  auto ablationRows = [&](Table& table, const std::string& condition, const std::vector<Prompt>& prompts,
                          const PromptLabels& pl, nlohmann::json& summary, double from, double to) {
    const double steps = 1.0 + static_cast<double>(modes.size() * sets.size());
    int done = 0;
    auto sub = [&](const std::string& what) {
      const AnalysisContext s =
          subContext(ctx, from + (to - from) * done / steps, from + (to - from) * (done + 1) / steps, what);
      ++done;
      return s;
    };
    std::vector<nlohmann::json> lead;
    if (!condition.empty()) lead.push_back(condition);
    const IclEval base = evaluate(prompts, pl, {}, sub(condition + " baseline"));
    std::vector<nlohmann::json> row = lead;
    for (nlohmann::json v :
         {nlohmann::json("baseline"), nlohmann::json("none"), nlohmann::json(0), doubleToJson(base.accuracy),
          doubleToJson(base.tr_ratio), nlohmann::json(0.0), nlohmann::json(0.0)})
      row.push_back(v);
    table.rows.push_back(row);
    summary["baseline"] = evalJson(base);
    for (const std::string& mode : modes)
      for (const auto& [name, heads] : sets) {
        if (heads->empty()) continue;  // a model too small for a disjoint random set
        const IclEval e =
            evaluate(prompts, pl, ablate(mode, *heads), sub("ablate " + name + " (" + mode + ")"));
        row = lead;
        for (nlohmann::json v :
             {nlohmann::json(name), nlohmann::json(mode), nlohmann::json(static_cast<int>(heads->size())),
              doubleToJson(e.accuracy), doubleToJson(e.tr_ratio), doubleToJson(e.accuracy - base.accuracy),
              doubleToJson(e.tr_ratio - base.tr_ratio)})
          row.push_back(v);
        table.rows.push_back(row);
        summary[mode][name] = evalJson(e);
      }
    return base;
  };
  Table ablation{"tsla.ablation", "Held-out accuracy and TR ratio with head sets ablated", {}, {}, prov};
  ablation.columns = {"heads", "mode", "n_heads", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  nlohmann::json ablSummary = nlohmann::json::object();
  const IclEval base = ablationRows(ablation, "", evalTask.icl, evalLabels, ablSummary, 0.16, 0.3);

  // 4. Ablation curves over k: the top k heads of each ordering (the random ordering is one seeded
  //    permutation, so its sets are nested like the others).
  std::vector<Curve> curves;
  if (opts.curves) {
    std::vector<int> ks = opts.curve_ks.empty() ? defaultCurveKs(LH) : opts.curve_ks;
    for (int& kk : ks)
      kk = std::min(kk, LH);
    const std::vector<std::pair<std::string, std::vector<HeadRef>>> orders = {
        {"tr", topHeads(tr, LH)},
        {"tl", topHeads(tl, LH)},
        {"induction", topHeads(ind.induction, LH)},
        {"random", randomHeadOrder(L, H, opts.random_seed)}};
    Curve acc{"tsla.ablation_curve.accuracy",
              "Held-out accuracy with the top k heads ablated",
              "k heads",
              "accuracy",
              {},
              {},
              prov};
    Curve ratio{"tsla.ablation_curve.tr_ratio",
                "Held-out TR ratio with the top k heads ablated",
                "k heads",
                "TR ratio",
                {},
                {},
                prov};
    acc.x.push_back(0);
    for (int kk : ks)
      acc.x.push_back(kk);
    ratio.x = acc.x;
    const double steps = static_cast<double>(modes.size() * orders.size() * ks.size());
    int done = 0;
    for (const std::string& mode : modes)
      for (const auto& [name, order] : orders) {
        std::vector<double> ya = {base.accuracy}, yr = {base.tr_ratio};
        for (int kk : ks) {
          const std::vector<HeadRef> heads(order.begin(), order.begin() + kk);
          const IclEval e =
              evaluate(evalTask.icl, evalLabels, ablate(mode, heads),
                       subContext(ctx, 0.3 + 0.25 * done / steps, 0.3 + 0.25 * (done + 1) / steps,
                                  "curve " + name + " k=" + std::to_string(kk)));
          ++done;
          ya.push_back(e.accuracy);
          yr.push_back(e.tr_ratio);
        }
        const std::string series = modes.size() > 1 ? name + " (" + mode + ")" : name;
        acc.series.push_back({series, ya});
        ratio.series.push_back({series, yr});
      }
    curves.push_back(acc);
    curves.push_back(ratio);
  }

  // 5. Input perturbations (classification): the same ablations with shuffled demonstration inputs and
  //    with number labels.
  Table perturbation{
      "tsla.perturbation", "Ablations under input perturbations (held-out prompts)", {}, {}, prov};
  perturbation.columns = {"condition", "heads",    "mode",           "n_heads",
                          "accuracy",  "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  nlohmann::json pertSummary = nlohmann::json::object();
  LabelledPrompts shuffled, numbers;
  if (opts.perturbation && task.classification()) {
    shuffled = shuffledInputPrompts(tok, evalTask, evalLabels, opts.random_seed);
    std::string numbersSkipped;
    numbers = numberLabelPrompts(tok, evalTask, &numbersSkipped);
    if (!numbersSkipped.empty()) pertSummary["number_labels"] = {{"skipped", numbersSkipped}};
    ablationRows(perturbation, "shuffled_inputs", shuffled.prompts, shuffled.labels,
                 pertSummary["shuffled_inputs"], 0.55, 0.65);
    if (!numbers.prompts.empty())
      ablationRows(perturbation, "number_labels", numbers.prompts, numbers.labels,
                   pertSummary["number_labels"], 0.65, 0.75);
  }

  // 6. Steering zero-shot prompts with each set's summed mean output, at N of the residual entering
  //    layer steerLayer.
  const at::Tensor meanA = a.mean(0);  // [layers, heads, d_model]
  Table steering{
      "tsla.steering", "Held-out zero-shot accuracy and TR ratio with steering vectors", {}, {}, prov};
  steering.columns = {"vector", "layer", "norm", "accuracy", "tr_ratio", "delta_accuracy", "delta_tr_ratio"};
  const IclEval zs = evaluate(evalTask.zero_shot, evalLabels, {}, subContext(ctx, 0.75, 0.77, "zero-shot"));
  steering.rows.push_back(
      {"none", steerLayer, 0.0, doubleToJson(zs.accuracy), doubleToJson(zs.tr_ratio), 0.0, 0.0});
  nlohmann::json steerSummary = {{"none", evalJson(zs)}};
  int done = 0;
  for (const auto& [name, heads] : sets) {
    if (name == "induction" || heads->empty()) continue;
    const at::Tensor v = headSetVector(meanA, *heads);  // [d_model]
    out.addTensor("steering_" + name, v);
    const IclEval e = evaluate(
        evalTask.zero_shot, evalLabels,
        {addToResidual(residPre(steerLayer), v.to(model.device(), model.dtype()), {-1}, opts.steer_scale)},
        subContext(ctx, 0.77 + 0.02 * done, 0.79 + 0.02 * done, "steer " + name));
    ++done;
    steering.rows.push_back({name, steerLayer, v.norm().item<double>(), doubleToJson(e.accuracy),
                             doubleToJson(e.tr_ratio), doubleToJson(e.accuracy - zs.accuracy),
                             doubleToJson(e.tr_ratio - zs.tr_ratio)});
    steerSummary[name] = evalJson(e);
  }

  // 7. Where the heads attend (analysed prompts).
  const AttentionShares shares =
      attentionShares(model, task.icl, subContext(ctx, 0.83, 0.87, "attention"), std::min(opts.batch, 4));
  HeadGrid attLabels{"tsla.attention_labels", "Attention at N on the demonstrations' labels", "attention",
                     shares.labels, prov};
  HeadGrid attQuery{"tsla.attention_query", "Attention at N on the query's input", "attention", shares.query,
                    prov};
  Table attention{"tsla.attention", "Where each head set attends from the last position", {}, {}, prov};
  attention.columns = {"heads", "n_heads", "demo_labels", "query", "demo_inputs", "other"};
  for (const auto& [name, heads] : sets) {
    if (heads->empty()) continue;
    double sl = 0, sq = 0, si = 0;
    for (const HeadRef& h : *heads) {
      sl += shares.labels(h.layer, h.head);
      sq += shares.query(h.layer, h.head);
      si += shares.demo_inputs(h.layer, h.head);
    }
    const double m = static_cast<double>(heads->size());
    attention.rows.push_back({name, static_cast<int>(heads->size()), doubleToJson(sl / m),
                              doubleToJson(sq / m), doubleToJson(si / m),
                              doubleToJson(1.0 - (sl + sq + si) / m)});
  }

  // 8. Per-layer geometry of the last-position residual, with and without the TR / TL heads.
  Curve align{"tsla.alignment", "Label-subspace alignment ‖P h‖/‖h‖", "layer", "alignment", {}, {}, prov};
  Curve diff{
      "tsla.logit_diff", "Logit difference ⟨h, W_U[y*] − mean W_U[y']⟩", "layer", "logit diff", {}, {}, prov};
  for (int l = 0; l < L; ++l)
    align.x.push_back(l), diff.x.push_back(l);
  const std::vector<std::pair<std::string, const std::vector<HeadRef>*>> variants = {
      {"baseline", nullptr}, {"without_tr", &trTop}, {"without_tl", &tlTop}};
  done = 0;
  for (const auto& [name, heads] : variants) {
    const at::Tensor h = captureAtLast(
        model, tokenSeqs(task.icl), residPost, heads ? zeroHeads(*heads) : std::vector<Intervention>{},
        subContext(ctx, 0.87 + 0.04 * done, 0.91 + 0.04 * done, "residuals " + name),
        opts.batch);  // [n, L, d]
    ++done;
    const SubspaceCurves sc = subspaceCurves(h, model, labels, opts.final_norm);
    align.series.push_back({name, sc.alignment});
    diff.series.push_back({name, sc.logit_diff});
  }
  curves.push_back(align);
  curves.push_back(diff);

  // 9. Overlap of the rankings.
  Table overlap{"tsla.overlap", "Agreement of TR, TL and induction head rankings", {}, {}, prov};
  overlap.columns = {"a", "b", "k", "jaccard", "kendall_tau", "spearman_rho"};
  const std::vector<std::pair<const HeadGrid*, const HeadGrid*>> pairs = {
      {&tr, &tl}, {&tr, &ind.induction}, {&tl, &ind.induction}};
  for (const auto& [x, y] : pairs)
    overlap.rows.push_back({x->id, y->id, k, doubleToJson(jaccardAtK(*x, *y, k)),
                            doubleToJson(kendallTauB(*x, *y)), doubleToJson(spearmanRho(*x, *y))});

  // 10. The exact prompts, with the label set each was scored against.
  recordPrompts(out, "icl", task.icl, labels.sets);
  recordPrompts(out, "eval", evalTask.icl, evalLabels.sets);
  recordPrompts(out, "zero_shot", evalTask.zero_shot, evalLabels.sets);
  if (!shuffled.prompts.empty())
    recordPrompts(out, "shuffled_inputs", shuffled.prompts, shuffled.labels.sets);
  if (!numbers.prompts.empty()) recordPrompts(out, "number_labels", numbers.prompts, numbers.labels.sets);

  out.addTensor("head_outputs_mean", meanA);
  out.run.grids = {tr, tl, ind.induction, attLabels, attQuery};
  out.run.curves = curves;
  out.run.tables = {ablation, steering, overlap, attention};
  if (!perturbation.rows.empty()) out.run.tables.push_back(perturbation);
  out.run.summary = {{"n_prompts", task.icl.size()},
                     {"n_eval_prompts", evalTask.icl.size()},
                     {"n_heads_selected", k},
                     {"baseline", evalJson(base)},
                     {"ablation", ablSummary},
                     {"steering", steerSummary},
                     {"steer_layer", steerLayer},
                     {"top_tr", trTop},
                     {"top_tl", tlTop},
                     {"top_induction", indTop},
                     {"random", randTop},
                     {"induction_copy_accuracy", ind.copy_accuracy}};
  if (!pertSummary.empty()) out.run.summary["perturbation"] = pertSummary;
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
