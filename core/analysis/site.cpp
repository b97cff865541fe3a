// SITE: task embedding, α training through Interpolate interventions on hook_z, generation-based
// evaluation with the injection in the prefill pass only.
#include "analysis/site.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "analysis/head_toolkit.h"
#include "analysis/patching.h"
#include "results/results_json.h"
#include "util/error.h"

namespace hs {

namespace {

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
          .add("n_train", &SiteOptions::n_train, "distinct zero-shot training prompts (cycled)",
               OptionCheck::atLeast(1))
          .add("max_new_tokens", &SiteOptions::max_new_tokens, "greedy tokens generated at most",
               OptionCheck::atLeast(1), "max-new")
          .add("train_split", &SiteOptions::train_split, "split of the embedding and training queries",
               OptionCheck::oneOf({"train", "valid", "test"}));
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
      "cross-entropy of the first answer token. Heads with α near 1 are the ones the task needs; accuracy "
      "is measured by greedy generation with the injection in the prefill pass, also for the high-α and "
      "low-α heads alone.";
  m.tasks = {TaskKind::Classification, TaskKind::Generation};
  m.default_task.dataset = "toy:antonym_a";
  m.default_task.shots = 10;
  m.options = siteOptionTable().specs();
  m.outputs = {
      {OutputSpec::Kind::Grid, "site.alpha", "α", "how much of the task embedding the head gets"},
      {OutputSpec::Kind::Curve, "site.loss", "step → loss", "training loss"},
      {OutputSpec::Kind::Table, "site.accuracy", "accuracy", "zero-shot, ICL, SITE, high-α and low-α heads"},
      {OutputSpec::Kind::Tensor, "alpha", "", "[layers, heads] α"},
      {OutputSpec::Kind::Tensor, "t", "", "[layers, heads, d_head] the task embedding"},
  };
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

  std::mt19937_64 rng(seed);
  std::vector<size_t> order(examples.size());
  std::iota(order.begin(), order.end(), size_t(0));
  size_t cursor = order.size();  // reshuffle at the first step

  SiteTraining out;
  for (int step = 1; step <= opt.steps; ++step) {
    ctx.checkCancelled();
    std::vector<SiteExample> batch;
    for (int b = 0; b < opt.batch; ++b) {
      if (cursor == order.size()) {
        std::shuffle(order.begin(), order.end(), rng);
        cursor = 0;
      }
      batch.push_back(examples[order[cursor++]]);
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

double generationAccuracy(const Transformer& model, const std::vector<Prompt>& prompts, int maxNew,
                          int64_t stopToken, int64_t eos, const std::vector<Intervention>& interventions,
                          const AnalysisContext& ctx) {
  if (prompts.empty()) fail("generationAccuracy: no prompts");
  at::NoGradGuard noGrad;
  const int64_t stop = stopToken >= 0 ? stopToken : eos;
  int correct = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    ctx.checkCancelled();
    const Prompt& p = prompts[i];
    if (p.answer_tokens.empty()) fail("generationAccuracy: prompt ", i, " has no answer tokens");
    const std::vector<int64_t> ids(p.ids.begin(), p.ids.end());
    const std::vector<int64_t> gen = model.generateGreedy(ids, maxNew, stop, interventions);
    // Exact prefix: the continuation starts with the answer segment's ids (EOS cannot match an answer id).
    bool ok = gen.size() >= p.answer_tokens.size();
    for (size_t k = 0; ok && k < p.answer_tokens.size(); ++k)
      ok = gen[k] == p.answer_tokens[k];
    correct += ok ? 1 : 0;
    ctx.report(double(i + 1) / prompts.size(), cat("prompt ", i + 1, "/", prompts.size()));
  }
  return double(correct) / double(prompts.size());
}

int64_t separatorToken(const Tokenizer& tok, const PromptTemplate& tmpl) {
  const std::vector<int> ids = SegmentEncoder(tok).continuation(tmpl.example_separator);
  return ids.empty() ? -1 : ids.front();
}

AnalysisOutput runSite(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                       const SiteOptions& opt, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  if (opt.n_embed < 1 || opt.n_train < 1 || opt.max_new_tokens < 1)
    fail("site: n_embed, n_train and max_new_tokens must be >= 1");

  // Embedding and training prompts share one spec and seed with the evaluation set (the split depends on
  // the seed, so no evaluation query is used): ICL prompts 0..n_embed−1 give t, zero-shot prompts
  // 0..n_train−1 are the training examples (all queries from the train split).
  TaskSpec trainSpec = spec;
  trainSpec.split = opt.train_split;
  trainSpec.n_prompts = std::max(opt.n_embed, opt.n_train);
  const IclTask trainTask =
      withContext("site: training prompts", [&] { return buildIclTask(tok, trainSpec); });
  const IclTask evalTask = withContext("site: evaluation prompts", [&] { return buildIclTask(tok, spec); });

  // t[l, k]: mean z at N over the embedding prompts.
  const std::vector<Prompt> embedPrompts(trainTask.icl.begin(), trainTask.icl.begin() + opt.n_embed);
  const at::Tensor t = meanZ(model, tokenSeqs(embedPrompts), ZMean::LastPosition,
                             subContext(ctx, 0.0, 0.1, "task embedding"));  // [L, H, dh]

  std::vector<SiteExample> examples;
  for (int i = 0; i < opt.n_train; ++i) {
    const Prompt& p = trainTask.zero_shot[size_t(i)];
    examples.push_back({std::vector<int64_t>(p.ids.begin(), p.ids.end()), int64_t(p.answer_token)});
  }
  const SiteTraining tr =
      trainSite(model, examples, t, opt, spec.seed, subContext(ctx, 0.1, 0.7, "training α"));
  const at::Tensor alpha = at::sigmoid(tr.logit);  // [layers, heads]

  // Evaluation by generation, injection in the prefill pass only.
  const int64_t stop = separatorToken(tok, evalTask.tmpl);
  const int64_t eos = tok.eosId() >= 0 ? tok.eosId() : c.eos_token_id;
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
  Table acc;
  acc.id = "site.accuracy";
  acc.name = "Exact-prefix accuracy of greedy generation";
  acc.columns = {"condition", "accuracy", "n", "heads_injected"};
  nlohmann::json accJson = nlohmann::json::object();
  for (size_t i = 0; i < conds.size(); ++i) {
    const Condition& cd = conds[i];
    const std::vector<Intervention> ivs =
        cd.alpha.defined() ? siteInterventions(t, cd.alpha) : std::vector<Intervention>{};
    const double a =
        generationAccuracy(model, *cd.prompts, opt.max_new_tokens, stop, eos, ivs,
                           subContext(ctx, 0.7 + 0.3 * i / conds.size(), 0.7 + 0.3 * (i + 1) / conds.size(),
                                      cat("accuracy ", cd.id)));
    const std::string id = cd.id;
    const int heads = !cd.alpha.defined() ? 0
                      : id == "site"      ? c.n_layers * c.n_heads
                                          : int(cd.alpha.sum().item<double>());
    acc.rows.push_back({cd.id, a, int(cd.prompts->size()), heads});
    accJson[cd.id] = a;
  }

  Provenance prov =
      makeProvenance("site", ctx, spec.dataset, spec.seed, spec.n_prompts, siteOptionTable().write(opt));
  prov.options["task"] = taskSpecToJson(spec);
  prov.options["stop_token"] = stop;
  acc.provenance = prov;

  AnalysisOutput out;
  out.run.id = ctx.runId("site");
  out.run.method = "site";
  out.run.options = prov.options;

  HeadGrid g;
  g.id = "site.alpha";
  g.name = "SITE head weight α = sigmoid(logit)";
  g.unit = "α";
  const at::Tensor a64 = alpha.to(at::kDouble).contiguous();  // [layers, heads]
  g.values.resize(c.n_layers, c.n_heads);
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      g.values(l, h) = a64[l][h].item<double>();
  g.provenance = prov;
  out.run.grids.push_back(g);

  Curve loss;
  loss.id = "site.loss";
  loss.name = "SITE training loss (cross-entropy of the first answer token)";
  loss.x_label = "step";
  loss.y_label = "loss";
  std::vector<double> avg;
  double window = 0;
  for (size_t s = 0; s < tr.loss.size(); ++s) {
    loss.x.push_back(double(s + 1));
    window += tr.loss[s];
    if (s >= 20) window -= tr.loss[s - 20];
    avg.push_back(window / double(std::min<size_t>(s + 1, 20)));
  }
  loss.series = {{"loss", tr.loss}, {"loss_avg20", avg}};
  loss.provenance = prov;
  out.run.curves.push_back(loss);
  out.run.tables.push_back(acc);

  const int nHigh = int((alpha > 0.5).sum().item<int64_t>());
  const int nDecided = int(((alpha - 0.5).abs() > 0.4).sum().item<int64_t>());
  out.run.summary = {{"accuracy", accJson},
                     {"n_high_alpha", nHigh},
                     {"share_alpha_near_0_or_1", double(nDecided) / (c.n_layers * c.n_heads)},
                     {"mean_alpha", alpha.mean().item<double>()},
                     {"loss_first20", avg.size() >= 20 ? avg[19] : avg.back()},
                     {"loss_last20", avg.back()},
                     {"n_eval", int(evalTask.zero_shot.size())}};
  out.addTensor("alpha", alpha);
  out.addTensor("t", t);
  ctx.report(1.0, "done");
  return out;
}

}  // namespace hs
