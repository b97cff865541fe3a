// SITE: task embedding, α training through Interpolate interventions on hook_z, generation-based
// evaluation with the injection in the prefill pass only.
#include "analysis/methods/site.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis/toolkit/patch_sweep.h"
#include "results/intervals.h"
#include "results/results_json.h"
#include "tasks/split.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {

namespace {

constexpr uint64_t kStreamSiteDraws = 0x517e, kStreamSiteResample = 0x5173;

void checkShapes(const Transformer& model, const at::Tensor& t, const at::Tensor& alpha, const char* who) {
  const ModelConfig& c = model.config();
  if (t.dim() != 3 || t.size(0) != c.n_layers || t.size(1) != c.n_heads || t.size(2) != c.d_head)
    fail(who, ": task embedding t must be [", c.n_layers, ", ", c.n_heads, ", ", c.d_head, "], got ",
         t.sizes());
  if (alpha.dim() != 2 || alpha.size(0) != c.n_layers || alpha.size(1) != c.n_heads)
    fail(who, ": alpha/logit must be [", c.n_layers, ", ", c.n_heads, "], got ", alpha.sizes());
}

// α masks of the "only high-α" / "only low-α" conditions: 1 on the selected heads, 0 elsewhere.
at::Tensor mask(const at::Tensor& selected) {
  return selected.to(at::kFloat);  // [layers, heads]
}

}  // namespace

const OptionTable<SiteOptions>& siteOptionTable() {
  static const OptionTable<SiteOptions> table =
      OptionTable<SiteOptions>()
          .add("n_embed", &SiteOptions::n_embed, "ICL prompts averaged into the task embedding t",
               OptionCheck::atLeast(1))
          .add("steps", &SiteOptions::steps, "Adam steps", OptionCheck::atLeast(1))
          .add("lr", &SiteOptions::lr, "Adam learning rate on the head logits", OptionCheck::positive())
          .add("batch", &SiteOptions::batch, "zero-shot prompts per step", OptionCheck::atLeast(1))
          .add("n_train", &SiteOptions::n_train,
               "queries of the train split the steps draw their prompts from (0: the whole split)",
               OptionCheck::atLeast(0))
          .add("exact_match", &SiteOptions::exact_match,
               "score by greedy generation, lower-cased string prefix (official --exact_match) instead of "
               "first-token match")
          .add("max_new_tokens", &SiteOptions::max_new_tokens,
               "greedy tokens generated at most (exact match)", OptionCheck::atLeast(1), "max-new")
          .add("generation_stop", &SiteOptions::generation_stop,
               "where exact match's generation ends: official = max_new_tokens or EOS, then stripped (the "
               "official generate); separator = also at the template's separator token (the earlier rule)",
               OptionCheck::oneOf({"official", "separator"}))
          .add("splits", &SiteOptions::splits,
               "dataset = a folder's own train.json / valid.json / test.json (the official splits) when the "
               "dataset comes so, else the seeded 70/9/21 split; seeded = always the seeded split",
               OptionCheck::oneOf({"dataset", "seeded"}))
          .add("train_split", &SiteOptions::train_split, "split of the embedding and training queries",
               OptionCheck::oneOf({"train", "valid", "test"}))
          .add("alpha_resamples", &SiteOptions::alpha_resamples,
               "bootstrap resamples of the embedding and training prompts, α trained anew on each: α's "
               "per-head standard error is their sd (0: none; each costs one more training)",
               OptionCheck::atLeast(0));
  return table;
}

MethodInfo siteMethod() {
  MethodInfo m;
  m.name = "site";
  m.title = "SITE: soft head selection for task embeddings";
  m.paper =
      "Park, Kim, Choi, Rhee: Soft Head Selection for Injecting ICL-Derived Task Embeddings (arXiv "
      "2507.20906)";
  m.description =
      "Learns one weight α per head (a sigmoid of a trained logit) that mixes the head's task embedding — "
      "its mean output at the last position over ICL prompts — into its output on zero-shot prompts, "
      "z ← (1 − α) z + α t, at the last position of every layer. The model is frozen; the loss is the "
      "cross-entropy of the first answer token, each step on a zero-shot prompt drawn afresh from the "
      "train split. Heads with α near 1 are the ones the task needs. Accuracy is first-token match (or, "
      "with exact_match, the lower-cased string prefix of greedy generation, the injection in the prefill "
      "pass), also for the high-α and low-α heads alone.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.default_task.dataset = "toy:antonym_a";
  m.default_task.shots = 10;
  m.options = siteOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "site.alpha", "α", "how much of the task embedding the head gets",
       "Task vectors", "SITE α per head"},
      {OutputSpec::Kind::Curve, "site.loss", "step → loss", "training loss", "Task vectors", "Training loss"},
      {OutputSpec::Kind::Table, "site.accuracy", "accuracy",
       "zero-shot, ICL, SITE, high-α and low-α heads (first-token or exact match)"},
      {OutputSpec::Kind::Tensor, "alpha", "", "[layers, heads] α"},
      {OutputSpec::Kind::Tensor, "t", "", "[layers, heads, d_head] the task embedding"},
      {OutputSpec::Kind::Tensor, "alpha_resamples", "",
       "[resamples, layers, heads] α of each bootstrap resample"},
  };
  m.gui.at_start = true;
  m.gui.start_on_toy_only = true;
  m.gui.start_on_open_task = true;
  m.run = [](const MethodInputs& in, const nlohmann::json& options, const AnalysisContext& ctx) {
    return runSite(in.model, *in.tokenizer, in.task, siteOptionTable().read(options), ctx);
  };
  return m;
}

std::vector<Intervention> siteInterventions(const at::Tensor& t, const at::Tensor& alpha) {
  std::vector<Intervention> ivs;
  for (int64_t l = 0; l < alpha.size(0); ++l) {
    Intervention iv;
    iv.site = attnZ(int(l));
    iv.positions = {-1};  // N only
    iv.op = InterventionOp::Interpolate;
    iv.tensor = t[l];                   // [heads, d_head]
    iv.alpha = alpha[l].unsqueeze(-1);  // [heads, 1]
    ivs.push_back(std::move(iv));
  }
  return ivs;
}

at::Tensor siteLoss(const Transformer& model, const std::vector<SiteExample>& batch, const at::Tensor& t,
                    const at::Tensor& logit) {
  checkShapes(model, t, logit, "siteLoss");
  if (batch.empty()) fail("siteLoss: empty batch");
  // Left padding so that every row's N is the last position.
  TokenSeqs seqs;
  std::vector<int64_t> answers;
  for (const SiteExample& e : batch) {
    if (e.ids.empty() || e.answer < 0) fail("siteLoss: an example without tokens or answer");
    seqs.push_back(e.ids);
    answers.push_back(e.answer);
  }
  const PaddedBatch pb = padLeft(seqs, 0, seqs.size());
  const at::Tensor& tokens = pb.tokens;         // [batch, pos]
  const at::Tensor& amask = pb.attention_mask;  // [batch, pos]
  const auto dev = model.device();
  const at::Tensor tt = t.to(dev, model.dtype());
  const at::Tensor alpha = at::sigmoid(logit.to(dev));  // [layers, heads]
  RunRequest req;
  req.tokens = tokens.to(dev);
  req.attention_mask = amask.to(dev);
  req.last_logits_only = true;
  req.interventions = siteInterventions(tt, alpha);
  const RunResult res = model.run(req);
  const at::Tensor logp = at::log_softmax(res.logits.select(1, 0).to(at::kFloat), -1);  // [batch, vocab]
  const at::Tensor target = at::tensor(answers, at::kLong).to(dev).unsqueeze(1);        // [batch, 1]
  return -logp.gather(1, target).mean();
}

SiteTraining trainSite(const Transformer& model, const std::vector<SiteExample>& examples,
                       const at::Tensor& t, const SiteOptions& opt, uint64_t seed,
                       const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  if (examples.empty()) fail("trainSite: no training examples");
  if (opt.steps < 1 || opt.batch < 1 || !(opt.lr > 0))
    fail("trainSite: steps, batch and lr must be positive");
  c10::InferenceMode notInference(false);  // the backward needs a recorded graph
  c10::AutoGradMode withGrad(true);

  at::Tensor logit = at::zeros({c.n_layers, c.n_heads}, at::kFloat).requires_grad_(true);  // [layers, heads]
  at::Tensor m = at::zeros_like(logit).detach(), v = at::zeros_like(logit).detach();       // Adam moments
  const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
  const at::Tensor tc = t.detach();  // the embedding is a constant, never learned

  // Every prompt of every step is drawn afresh, uniformly with replacement (portable draws).
  toy::Rng rng(toy::deriveSeed(seed, kStreamSiteDraws));

  SiteTraining out;
  for (int step = 1; step <= opt.steps; ++step) {
    ctx.checkCancelled();
    std::vector<SiteExample> batch;
    for (int b = 0; b < opt.batch; ++b) {
      const int i = static_cast<int>(rng.uniform(examples.size()));
      out.drawn.push_back(i);
      batch.push_back(examples[static_cast<size_t>(i)]);
    }
    const at::Tensor loss = siteLoss(model, batch, tc, logit);
    loss.backward();
    out.loss.push_back(loss.item<double>());
    ctx.reportPoint("site.loss", step, out.loss.back());
    {
      at::NoGradGuard noGrad;
      const at::Tensor g = logit.grad();  // [layers, heads]
      m.mul_(b1).add_(g, 1 - b1);
      v.mul_(b2).addcmul_(g, g, 1 - b2);
      const at::Tensor mHat = m / (1 - std::pow(b1, step));
      const at::Tensor vHat = v / (1 - std::pow(b2, step));
      logit.sub_(opt.lr * mHat / (vHat.sqrt() + eps));
      logit.mutable_grad() = at::Tensor();
    }
    if (step % 10 == 0 || step == opt.steps)
      ctx.report(double(step) / opt.steps, cat("step ", step, "/", opt.steps, " loss ", out.loss.back()));
  }
  out.logit = logit.detach();
  return out;
}

namespace {

std::string stripped(const std::string& s) {
  const char* ws = " \t\n\r\f\v";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

std::string replaceAll(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string lowerAscii(std::string s) {
  for (char& ch : s)
    if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
  return s;
}

std::string beforeFirst(const std::string& s, char c) {
  return s.substr(0, s.find(c));
}

}  // namespace

bool siteExactMatch(const std::string& generated, const std::string& target, bool lowercase) {
  // eval.py: target.replace('St.', 'Saint').split('(')[0].strip(); the output (already stripped by the
  // model helper's generate) .replace('St.', 'Saint').split('\n')[0].split('(')[0].strip().
  std::string t = stripped(beforeFirst(replaceAll(stripped(target), "St.", "Saint"), '('));
  std::string o =
      stripped(beforeFirst(beforeFirst(replaceAll(stripped(generated), "St.", "Saint"), '\n'), '('));
  if (lowercase) t = lowerAscii(t), o = lowerAscii(o);
  return o.compare(0, t.size(), t) == 0;  // out[:len(target)] == target
}

bool siteCaseSensitiveTask(const std::string& datasetId) {
  const std::string id = lowerAscii(datasetId);
  return id.find("capitalize") != std::string::npos || id.find("lowercase") != std::string::npos;
}

double siteAccuracy(const Transformer& model, const Tokenizer& tok, const std::vector<Prompt>& prompts,
                    const std::vector<Intervention>& interventions, const SiteScoring& scoring,
                    const AnalysisContext& ctx) {
  if (prompts.empty()) fail("site accuracy: no prompts");
  if (!scoring.exact_match) {
    IclEvalOptions eo;
    eo.batch = scoring.batch;
    eo.interventions = interventions;
    return evaluateIcl(model, prompts, eo, ctx).accuracy;
  }
  int correct = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ctx.checkCancelled();
    const Prompt& p = prompts[i];
    correct +=
        siteExactMatch(siteGenerate(model, tok, p, interventions, scoring), p.answer, scoring.lowercase);
    ctx.report(double(i + 1) / prompts.size(), cat("prompt ", i + 1, "/", prompts.size()));
  }
  return double(correct) / double(prompts.size());
}

std::string siteGenerate(const Transformer& model, const Tokenizer& tok, const Prompt& prompt,
                         const std::vector<Intervention>& interventions, const SiteScoring& scoring) {
  at::NoGradGuard noGrad;
  const std::vector<int64_t> ids(prompt.ids.begin(), prompt.ids.end());
  // generate(max_new_tokens=20): greedy until the budget or EOS; with a separator rule also at its token.
  const int64_t stop = scoring.stop >= 0 ? scoring.stop : scoring.eos;
  std::vector<int64_t> gen = model.generateGreedy(ids, scoring.max_new_tokens, stop, interventions);
  if (scoring.eos >= 0 && scoring.stop >= 0)  // stopped at the separator: an EOS before it ends the text
    gen.erase(std::find(gen.begin(), gen.end(), scoring.eos), gen.end());
  // batch_decode(..., skip_special_tokens=True)[0].strip()
  return stripped(tok.decode(std::vector<int>(gen.begin(), gen.end())));
}

SiteScoring siteScoring(const Transformer& model, const Tokenizer& tok, const SiteOptions& opt,
                        const PromptTemplate& tmpl, const std::string& datasetId) {
  SiteScoring scoring;
  scoring.exact_match = opt.exact_match;
  scoring.max_new_tokens = opt.max_new_tokens;
  scoring.stop = opt.generation_stop == "separator" ? separatorToken(tok, tmpl) : -1;
  scoring.eos = tok.eosId() >= 0 ? tok.eosId() : model.config().eos_token_id;
  scoring.lowercase = !siteCaseSensitiveTask(datasetId);
  return scoring;
}

SiteResample siteResample(uint64_t seed, int b, size_t nEmbed, size_t nPool) {
  const uint64_t s = toy::deriveSeed(seed, kStreamSiteResample, static_cast<uint64_t>(b));
  return {bootstrapIndices(nEmbed, toy::deriveSeed(s, 1)), bootstrapIndices(nPool, toy::deriveSeed(s, 2)),
          toy::deriveSeed(s, 3)};
}

int64_t separatorToken(const Tokenizer& tok, const PromptTemplate& tmpl) {
  const std::vector<int> ids = SegmentEncoder(tok).continuation(tmpl.example_separator);
  return ids.empty() ? -1 : ids.front();
}

namespace {

// The prompt sets of a run: embedding and training prompts from opt.train_split of the same dataset and
// seed as the evaluation set.
struct SitePrompts {
  Dataset data;
  IclTask embed;  // ICL prompts 0..n_embed−1: averaged into t
  IclTask train;  // zero-shot prompts the training steps draw from
  IclTask eval;   // the evaluation set (spec)
};

// The split depends on the seed, so no evaluation query is used for embedding or training; the training
// steps draw from the zero-shot prompts of every query of the split (or of its first n_train queries in the
// spec's seeded order).
SitePrompts buildSitePrompts(const Tokenizer& tok, const TaskSpec& spec, const SiteOptions& opt) {
  SitePrompts p;
  p.data = withContext("site: task", [&] { return loadTaskDataset(spec); });
  if (opt.splits == "seeded") p.data.given_split.reset();  // the seeded 70/9/21 split even of a split folder
  const Dataset& data = p.data;
  TaskSpec embedSpec = spec;
  embedSpec.split = opt.train_split;
  embedSpec.n_prompts = opt.n_embed;
  p.embed = withContext("site: embedding prompts", [&] { return buildIclTask(tok, embedSpec, data); });
  const Split split = taskSplit(data, spec.seed);  // the folder's own files, or the seeded split
  const size_t poolSize = opt.train_split == "train"   ? split.train.size()
                          : opt.train_split == "valid" ? split.valid.size()
                                                       : split.test.size();
  TaskSpec trainSpec = embedSpec;
  trainSpec.shots = 0;  // only the zero-shot prompts are used
  trainSpec.n_prompts = opt.n_train > 0 ? opt.n_train : static_cast<int>(std::max<size_t>(1, poolSize));
  p.train = withContext("site: training prompts", [&] { return buildIclTask(tok, trainSpec, data); });
  p.eval = withContext("site: evaluation prompts", [&] { return buildIclTask(tok, spec, data); });
  return p;
}

// One training example per zero-shot prompt: its tokens and first answer token.
std::vector<SiteExample> trainingExamples(const IclTask& train) {
  std::vector<SiteExample> examples;
  for (const Prompt& p : train.zero_shot)
    examples.push_back({std::vector<int64_t>(p.ids.begin(), p.ids.end()), int64_t(p.answer_token)});
  return examples;
}

// Table "site.accuracy": zero-shot, ICL, SITE and SITE restricted to the high-α / low-α heads, injected in
// the prefill pass only (first-token match reads N of that pass). Each accuracy also goes into `accJson`.
// Progress [0.7, 1).
Table accuracyTable(const Transformer& model, const Tokenizer& tok, const IclTask& evalTask,
                    const at::Tensor& t, const at::Tensor& alpha, const SiteScoring& scoring,
                    const AnalysisContext& ctx, nlohmann::json& accJson) {
  const ModelConfig& c = model.config();
  const at::Tensor high = mask(alpha > 0.5), low = mask(alpha < 0.5);  // [layers, heads]
  struct Condition {
    const char* id;
    const std::vector<Prompt>* prompts;
    at::Tensor alpha;  // undefined: no injection
  };
  const std::vector<Condition> conds = {{"zero_shot", &evalTask.zero_shot, {}},
                                        {"icl", &evalTask.icl, {}},
                                        {"site", &evalTask.zero_shot, alpha},
                                        {"high_alpha", &evalTask.zero_shot, high},
                                        {"low_alpha", &evalTask.zero_shot, low}};
  const std::string rule = scoring.exact_match ? "exact_match" : "first_token";
  Table acc;
  acc.id = "site.accuracy";
  acc.name =
      scoring.exact_match
          ? "Exact-match accuracy: greedy generation starts with the answer (lower-cased string prefix)"
          : "First-token accuracy: the argmax at N is the answer's first token";
  acc.columns = {"condition", "accuracy", "n", "heads_injected", "scoring"};
  accJson = nlohmann::json::object();
  for (size_t i = 0; i < conds.size(); ++i) {
    const Condition& cd = conds[i];
    const std::vector<Intervention> ivs =
        cd.alpha.defined() ? siteInterventions(t, cd.alpha) : std::vector<Intervention>{};
    const double a = siteAccuracy(model, tok, *cd.prompts, ivs, scoring,
                                  subContext(ctx, 0.7 + 0.3 * i / conds.size(),
                                             0.7 + 0.3 * (i + 1) / conds.size(), cat("accuracy ", cd.id)));
    const std::string id = cd.id;
    const int heads = !cd.alpha.defined() ? 0
                      : id == "site"      ? c.n_layers * c.n_heads
                                          : int(cd.alpha.sum().item<double>());
    acc.rows.push_back({cd.id, a, int(cd.prompts->size()), heads, rule});
    accJson[cd.id] = a;
  }
  addWilsonColumns(acc, "accuracy", "n");  // 95 % Wilson over each condition's prompts
  return acc;
}

// α's bootstrap: opt.alpha_resamples resamples (siteResample) of the embedding prompts and the training
// pool, each giving t_b and α_b trained from 0 as the full run's α. Progress [from, to) of ctx; the
// resamples' losses are not drawn into the live loss curve. Returns [B, layers, heads] (undefined for B = 0).
at::Tensor alphaResamples(const Transformer& model, const std::vector<Prompt>& embed,
                          const std::vector<SiteExample>& examples, const SiteOptions& opt, uint64_t seed,
                          const AnalysisContext& ctx, double from, double to) {
  std::vector<at::Tensor> alphas;  // [layers, heads] per resample
  const int B = opt.alpha_resamples;
  for (int b = 0; b < B; ++b) {
    AnalysisContext sub = subContext(ctx, from + (to - from) * b / B, from + (to - from) * (b + 1) / B,
                                     cat("α resample ", b + 1, "/", B));
    sub.point = nullptr;
    const SiteResample r = siteResample(seed, b, embed.size(), examples.size());
    TokenSeqs embedSeqs;
    for (size_t i : r.embed)
      embedSeqs.push_back(std::vector<int64_t>(embed[i].ids.begin(), embed[i].ids.end()));
    std::vector<SiteExample> pool;
    for (size_t i : r.train)
      pool.push_back(examples[i]);
    const at::Tensor tb = meanZ(model, embedSeqs, ZMean::LastPosition,
                                subContext(sub, 0.0, 0.05, "task embedding"));  // [L, H, dh]
    alphas.push_back(
        at::sigmoid(trainSite(model, pool, tb, opt, r.seed, subContext(sub, 0.05, 1.0, "training")).logit));
  }
  return B > 0 ? at::stack(alphas) : at::Tensor();  // [B, layers, heads]
}

// Grid "site.alpha": α = sigmoid(logit) per head; with resamples [B, layers, heads] (B >= 2) its se is each
// head's sample sd over them (the bootstrap standard error).
HeadGrid alphaGrid(const ModelConfig& c, const at::Tensor& alpha, const at::Tensor& resamples,
                   const Provenance& prov) {
  HeadGrid g;
  g.id = "site.alpha";
  g.name = "SITE head weight α = sigmoid(logit)";
  g.unit = "α";
  const at::Tensor a64 = alpha.to(at::kDouble).contiguous();  // [layers, heads]
  g.values.resize(c.n_layers, c.n_heads);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      g.values(l, h) = a64[l][h].item<double>();
  if (resamples.defined() && resamples.size(0) >= 2) {
    const at::Tensor sd =
        resamples.to(at::kDouble).std(0, /*unbiased=*/true).contiguous();  // [layers, heads]
    g.se.resize(c.n_layers, c.n_heads);
    for (int l = 0; l < c.n_layers; ++l)
      for (int h = 0; h < c.n_heads; ++h)
        g.se(l, h) = sd[l][h].item<double>();
  }
  g.provenance = prov;
  return g;
}

// The mean of the last (up to) 20 losses at every step: [steps].
std::vector<double> movingAverage20(const std::vector<double>& loss) {
  std::vector<double> avg;
  double window = 0;
  for (size_t s = 0; s < loss.size(); ++s) {
    window += loss[s];
    if (s >= 20) window -= loss[s - 20];
    avg.push_back(window / double(std::min<size_t>(s + 1, 20)));
  }
  return avg;
}

// Curve "site.loss": every step's loss and its 20-step moving average.
Curve lossCurve(const std::vector<double>& loss, const std::vector<double>& avg, const Provenance& prov) {
  Curve curve;
  curve.id = "site.loss";
  curve.name = "SITE training loss (cross-entropy of the first answer token)";
  curve.x_label = "step";
  curve.y_label = "loss";
  for (size_t s = 0; s < loss.size(); ++s)
    curve.x.push_back(double(s + 1));
  curve.series = {{"loss", loss}, {"loss_avg20", avg}};
  curve.provenance = prov;
  return curve;
}

// The prompt sets a run records: "embed", "train" (every step's drawn prompt, in order), "zero_shot", "icl".
void recordSitePrompts(AnalysisOutput& out, const SitePrompts& p, const SiteTraining& tr) {
  recordPrompts(out, "embed", p.embed.icl);
  std::vector<Prompt> drawn;
  for (int i : tr.drawn)
    drawn.push_back(p.train.zero_shot[static_cast<size_t>(i)]);
  recordPrompts(out, "train", drawn);
  recordPrompts(out, "zero_shot", p.eval.zero_shot);
  recordPrompts(out, "icl", p.eval.icl);
}

}  // namespace

AnalysisOutput runSite(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                       const SiteOptions& opt, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  if (opt.n_embed < 1 || opt.n_train < 0 || opt.max_new_tokens < 1)
    fail("site: n_embed and max_new_tokens must be >= 1 and n_train >= 0");
  if (opt.alpha_resamples < 0 || opt.alpha_resamples == 1)
    fail("site: alpha_resamples must be 0 (no standard error) or >= 2 (an sd needs two), got ",
         opt.alpha_resamples);
  const SitePrompts prompts = buildSitePrompts(tok, spec, opt);

  // t[l, k]: mean z at N over the embedding prompts.
  const at::Tensor t = meanZ(model, tokenSeqs(prompts.embed.icl), ZMean::LastPosition,
                             subContext(ctx, 0.0, 0.05, "task embedding"));  // [L, H, dh]
  const std::vector<SiteExample> examples = trainingExamples(prompts.train);
  // Training takes [0.05, 0.7), shared equally by α and its resamples.
  const double trainEnd = 0.05 + 0.65 / (1 + opt.alpha_resamples);
  const SiteTraining tr =
      trainSite(model, examples, t, opt, spec.seed, subContext(ctx, 0.05, trainEnd, "training α"));
  const at::Tensor alpha = at::sigmoid(tr.logit);  // [layers, heads]
  const at::Tensor resamples =
      alphaResamples(model, prompts.embed.icl, examples, opt, spec.seed, ctx, trainEnd,
                     0.7);  // [B, layers, heads]

  const SiteScoring scoring = siteScoring(model, tok, opt, prompts.eval.tmpl, prompts.data.id);
  nlohmann::json accJson;
  Table acc = accuracyTable(model, tok, prompts.eval, t, alpha, scoring, ctx, accJson);

  Provenance prov =
      makeProvenance("site", ctx, spec.dataset, spec.seed, spec.n_prompts, siteOptionTable().write(opt));
  prov.options["task"] = taskSpecToJson(spec);
  prov.options["stop_token"] = scoring.stop;
  prov.options["eos_token"] = scoring.eos;
  prov.options["case_sensitive"] = !scoring.lowercase;
  acc.provenance = prov;

  AnalysisOutput out;
  out.run.id = ctx.runId("site");
  out.run.method = "site";
  out.run.options = prov.options;
  out.run.grids.push_back(alphaGrid(c, alpha, resamples, prov));
  const std::vector<double> avg = movingAverage20(tr.loss);
  out.run.curves.push_back(lossCurve(tr.loss, avg, prov));
  out.run.tables.push_back(acc);

  const int nHigh = int((alpha > 0.5).sum().item<int64_t>());
  const int nDecided = int(((alpha - 0.5).abs() > 0.4).sum().item<int64_t>());
  out.run.summary = {{"accuracy", accJson},
                     {"n_high_alpha", nHigh},
                     {"share_alpha_near_0_or_1", double(nDecided) / (c.n_layers * c.n_heads)},
                     {"mean_alpha", alpha.mean().item<double>()},
                     {"loss_first20", avg.size() >= 20 ? avg[19] : avg.back()},
                     {"loss_last20", avg.back()},
                     {"n_eval", int(prompts.eval.zero_shot.size())},
                     {"scoring", scoring.exact_match ? "exact_match" : "first_token"},
                     {"generation_stop", opt.generation_stop},
                     {"splits", prompts.data.given_split ? "dataset files" : "seeded 70/9/21"},
                     {"n_train_queries", int(examples.size())},
                     {"alpha_resamples", opt.alpha_resamples},
                     {"alpha_se", opt.alpha_resamples >= 2
                                      ? "sd of α over the bootstrap resamples of the embedding and training "
                                        "prompts (each trained anew)"
                                      : "none (alpha_resamples 0)"}};
  if (out.run.grids.front().hasSe()) out.run.summary["mean_alpha_se"] = out.run.grids.front().se.mean();
  recordSitePrompts(out, prompts, tr);
  out.addTensor("alpha", alpha);
  out.addTensor("t", t);
  if (resamples.defined()) out.addTensor("alpha_resamples", resamples);
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
