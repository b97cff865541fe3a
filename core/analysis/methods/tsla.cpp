// TSLA's scores: gold labels and label sets, TR / TL per head, the per-layer subspace curves, the held-out
// prompts and the attention shares; the method's options and registry record. The whole run (runTsla) is in
// tsla_run.cpp. See tsla.h.
#include "analysis/methods/tsla.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "analysis/toolkit/icl_accuracy.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {

namespace {

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
    t.add("score_definition", &O::score_definition,
          "TR and TL: paper = the paper's TR = ‖P a‖² and TL = ⟨a, d⟩ / ‖P a‖²; norm = ‖P a‖ and "
          "⟨a, d⟩ / ‖P a‖ (the earlier variant)",
          OptionCheck::oneOf({"paper", "norm"}))
        .add("final_norm", &O::final_norm,
             "fold the final norm's weight into W_U for TR/TL and measure the per-layer curves on the "
             "final-normed residual (what the logits read); off (the paper's formula): raw W_U rows and raw "
             "residuals")
        .add("eval_prompts", &O::eval_prompts,
             "held-out prompts (other queries of the task's split) for the ablation, perturbation and "
             "steering tables; -1: as many as analysed",
             OptionCheck::atLeast(-1))
        .add("random_seed", &O::random_seed,
             "seed of the random head set and order, the input shuffles and the induction-score sequences")
        .add("random_draws", &O::random_draws,
             "random head sets (and orders) drawn from the live heads (a non-zero W_O) outside the TR and TL "
             "sets; the tables and curves report their mean, sd and the 95 % interval of the mean",
             OptionCheck::range(1, 1000))
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
      "(open-ended tasks: the answers the prompt's demonstrations show). TR (task recognition) is the "
      "squared norm of that projection: how much the head moves the prediction into the label set. TL (task "
      "learning) is the logit difference the head makes between the correct label and the others, divided "
      "by its TR: whether it picks the right label. The "
      "top heads by TR, by TL and by induction score, and random heads, are ablated on held-out prompts "
      "(accuracy and TR ratio; as tables, as curves over the number of heads, and on prompts whose "
      "demonstration inputs are shuffled or whose labels are numbers), and used as steering vectors on "
      "zero-shot prompts; where the heads attend, and how the last-position hidden state aligns with the "
      "subspace layer by layer with and without them, complete the picture.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.options = tslaOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "tsla.tr", "norm²", "how much the head writes into the label subspace"},
      {OutputSpec::Kind::Grid, "tsla.tl", "logit / norm²",
       "how much of that write points at the right label"},
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
      {OutputSpec::Kind::Curve, "tsla.alignment", "layer → ‖P h‖/‖h‖",
       "alignment per layer (baseline / −TR heads / −TL heads)", "Geometry",
       "Alignment with the task subspace per layer"},
      {OutputSpec::Kind::Curve, "tsla.logit_diff", "layer → logit",
       "logit difference per layer (baseline / −TR heads / −TL heads)", "Geometry",
       "Logit difference per layer"},
      {OutputSpec::Kind::Table, "tsla.overlap", "Jaccard, τ, ρ",
       "agreement of the TR, TL and induction rankings"},
  };
  m.gui.at_start = true;
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

TrTlDefinition trTlDefinition(const std::string& name) {
  if (name == "paper") return TrTlDefinition::Paper;
  if (name == "norm") return TrTlDefinition::Norm;
  fail("tsla: score_definition \"", name, "\", expected paper or norm");
}

TrTlScores trTlScores(const at::Tensor& headOutputs, const LabelProjector& projector,
                      const std::vector<int>& gold, TrTlDefinition definition) {
  if (headOutputs.dim() != 4) fail("TR/TL: head outputs must be [prompts, layers, heads, d_model]");
  const int64_t n = headOutputs.size(0), d = headOutputs.size(3);
  if (static_cast<int64_t>(gold.size()) != n)
    fail("TR/TL: ", gold.size(), " gold labels for ", n, " prompts");
  if (n == 0) fail("TR/TL: no prompts");
  const int64_t L = headOutputs.size(1), H = headOutputs.size(2);
  const at::Tensor idx = at::tensor(std::vector<int64_t>(gold.begin(), gold.end()), at::kLong);  // [n]
  const at::Tensor dirs =
      projector.tlDirections().index_select(0, idx).view({n, 1, d});  // [n, 1, d_model] d_{y*}
  at::Tensor tr = at::empty({L, H}, at::kDouble), tl = at::empty({L, H}, at::kDouble);      // [layers, heads]
  at::Tensor trSq = at::empty({L, H}, at::kDouble), tlSq = at::empty({L, H}, at::kDouble);  // [layers, heads]
  // One layer at a time, so the float64 copies stay [n, heads, d_model] (the whole [n, layers, heads,
  // d_model] in float64 is gigabytes for an 8B model).
  for (int64_t l = 0; l < L; ++l) {
    const at::Tensor pa = projector.project(headOutputs.select(1, l));  // [n, heads, d_model] P a
    const at::Tensor norm = pa.norm(2, -1);                             // [n, heads] ‖P a‖
    // Paper: TR = ‖P a‖², TL = ⟨a, d⟩ / ‖P a‖²; Norm: ‖P a‖ and ⟨a, d⟩ / ‖P a‖.
    const at::Tensor score = definition == TrTlDefinition::Paper ? norm * norm : norm;  // [n, heads]
    // ⟨a, d⟩ = ⟨P a, d⟩ because d lies in the label subspace; a head writing nothing there scores 0.
    const at::Tensor dot = (pa * dirs).sum(-1);  // [n, heads]
    const at::Tensor ratio =
        at::where(norm > 0, dot / score.clamp_min(1e-300), at::zeros_like(dot));  // [n, heads]
    tr[l].copy_(score.mean(0));
    tl[l].copy_(ratio.mean(0));
    trSq[l].copy_(score.pow(2).mean(0));
    tlSq[l].copy_(ratio.pow(2).mean(0));
  }
  TrTlScores out{toMatrix(tr), toMatrix(tl)};
  out.tr_sq = toMatrix(trSq);
  out.tl_sq = toMatrix(tlSq);
  out.n = static_cast<int>(n);
  return out;
}

Eigen::MatrixXd standardErrors(const Eigen::MatrixXd& mean, const Eigen::MatrixXd& meanSquare, int n) {
  if (n < 2) return Eigen::MatrixXd::Constant(mean.rows(), mean.cols(), std::nan(""));
  const double k = static_cast<double>(n);
  return ((meanSquare - mean.cwiseProduct(mean)) * (k / (k - 1))).cwiseMax(0.0).cwiseSqrt() / std::sqrt(k);
}

TrTlScores trTlScores(const at::Tensor& headOutputs, const Transformer& model, const PromptLabels& labels,
                      bool foldFinalNorm, TrTlDefinition definition) {
  const int64_t n = headOutputs.size(0);
  if (static_cast<int64_t>(labels.sets.size()) != n)
    fail("TR/TL: ", labels.sets.size(), " label sets for ", n, " prompts");
  TrTlScores sum;
  for (const auto& [set, rows] : groupBySet(labels)) {
    const LabelProjector p(unembedRows(model, set, foldFinalNorm));
    const at::Tensor idx = at::tensor(rows, at::kLong);  // [group]
    const TrTlScores s = trTlScores(headOutputs.index_select(0, idx), p, goldOf(labels, rows), definition);
    const double w = static_cast<double>(rows.size()) / static_cast<double>(n);  // means over all prompts
    sum.tr = sum.tr.size() ? Eigen::MatrixXd(sum.tr + w * s.tr) : Eigen::MatrixXd(w * s.tr);
    sum.tl = sum.tl.size() ? Eigen::MatrixXd(sum.tl + w * s.tl) : Eigen::MatrixXd(w * s.tl);
    sum.tr_sq = sum.tr_sq.size() ? Eigen::MatrixXd(sum.tr_sq + w * s.tr_sq) : Eigen::MatrixXd(w * s.tr_sq);
    sum.tl_sq = sum.tl_sq.size() ? Eigen::MatrixXd(sum.tl_sq + w * s.tl_sq) : Eigen::MatrixXd(w * s.tl_sq);
  }
  sum.n = static_cast<int>(n);
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
  SubspaceCurves out{toVector(align.mean(0)), toVector(diff.mean(0))};
  for (int64_t l = 0; l < align.size(1); ++l) {
    out.alignment_per_prompt.push_back(toVector(align.select(1, l)));
    out.logit_diff_per_prompt.push_back(toVector(diff.select(1, l)));
  }
  return out;
}

SubspaceCurves subspaceCurves(const at::Tensor& residuals, const Transformer& model,
                              const PromptLabels& labels, bool finalNorm) {
  const int64_t n = residuals.size(0);
  if (static_cast<int64_t>(labels.sets.size()) != n)
    fail("subspace curves: ", labels.sets.size(), " label sets for ", n, " prompts");
  const at::Tensor h = finalNorm ? finalNormed(model, residuals) : residuals;  // [n, layers, d_model]
  std::vector<double> align(static_cast<size_t>(residuals.size(1)), 0.0), diff(align.size(), 0.0);
  std::vector<std::vector<double>> alignPer(align.size()), diffPer(align.size());  // [layers][prompts]
  for (const auto& [set, rows] : groupBySet(labels)) {
    const LabelProjector p(unembedRows(model, set, false));
    const SubspaceCurves c =
        subspaceCurves(h.index_select(0, at::tensor(rows, at::kLong)), p, goldOf(labels, rows));
    const double w = static_cast<double>(rows.size()) / static_cast<double>(n);
    for (size_t l = 0; l < align.size(); ++l) {
      align[l] += w * c.alignment[l];
      diff[l] += w * c.logit_diff[l];
      alignPer[l].insert(alignPer[l].end(), c.alignment_per_prompt[l].begin(),
                         c.alignment_per_prompt[l].end());
      diffPer[l].insert(diffPer[l].end(), c.logit_diff_per_prompt[l].begin(),
                        c.logit_diff_per_prompt[l].end());
    }
  }
  return {align, diff, alignPer, diffPer};
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
  const int64_t n = static_cast<int64_t>(prompts.size());
  at::Tensor labels = at::zeros({n, L, H}, at::kDouble), query = at::zeros_like(labels),
             inputs = at::zeros_like(labels);  // [prompts, layers, heads] each prompt's shares
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
        const int64_t b0 = static_cast<int64_t>(b), e0 = static_cast<int64_t>(e);
        for (int l = 0; l < L; ++l) {
          const at::Tensor a =
              r.cache.at(attnPattern(l)).select(2, -1).to(at::kCPU, at::kDouble);  // [batch, head, k_pos]
          labels.slice(0, b0, e0).select(1, l).copy_((a * mLabel.unsqueeze(1)).sum(2));  // [batch, head]
          query.slice(0, b0, e0).select(1, l).copy_((a * mQuery.unsqueeze(1)).sum(2));
          inputs.slice(0, b0, e0).select(1, l).copy_((a * mInput.unsqueeze(1)).sum(2));
        }
      },
      ctx);
  AttentionShares out{toMatrix(labels.mean(0)), toMatrix(query.mean(0)), toMatrix(inputs.mean(0))};
  out.labels_se = standardErrors(out.labels, toMatrix(labels.pow(2).mean(0)), static_cast<int>(n));
  out.query_se = standardErrors(out.query, toMatrix(query.pow(2).mean(0)), static_cast<int>(n));
  out.labels_per_prompt = labels;
  out.query_per_prompt = query;
  out.inputs_per_prompt = inputs;
  return out;
}

}  // namespace hs
