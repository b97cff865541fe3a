// SITE (docs/methods.md, "SITE").
// - Definition on a random tiny Llama: with α ≈ 1 everywhere the loss equals a run whose z at N is replaced
// by
//   t in every layer, with α ≈ 0 it equals the plain run (hand cases of the interpolation).
// - Gradient flows only into the logits: after backward the logits have a non-zero gradient, the frozen
//   weights and the task embedding none; training leaves the weights bit-identical.
// - Training on a fixed target moves α and lowers the loss, deterministically for a seed.
// - Scoring as the official eval.py: first-token match by default (a prompt whose first answer token is the
//   model's argmax counts even when the rest of the answer differs); exact match = the lower-cased string
//   prefix of the greedy generation after stripping, cutting at the line break and "(", "St." read as
//   "Saint" (hand cases), case-sensitive only on capitalize / lowercase tasks; the toy template's stop
//   token is <nl>.
// - On the toy model SITE raises zero-shot accuracy on toy:antonym_a well above zero-shot; its training
//   prompts are drawn afresh each step from the whole train split (recorded, in step order), its
//   embedding prompts and evaluation prompts are recorded too.
// - The CLI writes a session whose α grid equals its --json output and whose α tensor matches the grid.
// - Exact match's generation is the official generate: max_new_tokens (20) new tokens or EOS, decoded and
//   stripped (the separator rule is the option generation_stop separator); a dataset folder with the
//   official train.json / valid.json / test.json is read with those splits (splits seeded: the 70/9/21 one).
// - α's standard error: the sd over alpha_resamples bootstrap resamples of the embedding and training
//   prompts, each α_b recomputed from scratch; 0 where one prompt leaves nothing to resample.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QtTest>

#include <QDir>
#include <QTemporaryDir>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "../engine/engine_fixtures.h"
#include "analysis/methods/site.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/icl_task.h"
#include "test_paths.h"
#include "util/error.h"

namespace {

// Prompts of the tiny model: BOS-like 1 then random tokens; the target is token 11 for every prompt.
std::vector<hs::SiteExample> tinyExamples(int n, uint64_t seed) {
  at::manual_seed(seed);
  std::vector<hs::SiteExample> ex;
  for (int i = 0; i < n; ++i) {
    const at::Tensor r = at::randint(2, 50, {5 + i % 3}, at::kLong);  // [pos]
    std::vector<int64_t> ids = {1};
    for (int64_t k = 0; k < r.numel(); ++k)
      ids.push_back(r[k].item<int64_t>());
    ex.push_back({ids, 11});
  }
  return ex;
}

at::Tensor tinyEmbedding(const hs::Transformer& m) {
  std::vector<std::vector<int64_t>> prompts;
  for (const auto& e : tinyExamples(6, 99))
    prompts.push_back(e.ids);
  return hs::meanZ(m, prompts, hs::ZMean::LastPosition);  // [layers, heads, d_head]
}

double plainLoss(const hs::Transformer& m, const hs::SiteExample& e,
                 const std::vector<hs::Intervention>& ivs) {
  hs::RunRequest req;
  req.tokens = at::tensor(e.ids, at::kLong).view({1, -1});  // [1, pos]
  req.last_logits_only = true;
  req.interventions = ivs;
  const at::Tensor logits = m.run(req).logits[0][0];  // [vocab]
  return -at::log_softmax(logits.to(at::kDouble), -1)[e.answer].item<double>();
}

// The toy model's 10-shot antonym prompts SITE's training tests use (seed 2).
hs::TaskSpec toyAntonymSpec(int nPrompts) {
  return hs::test::toyAntonymSpec(nPrompts, 2);
}

// The token ids of the first n zero-shot queries of `spec`'s train split.
std::set<std::vector<int64_t>> trainQueries(const hs::Tokenizer& tok, hs::TaskSpec spec, int n) {
  spec.split = "train";
  spec.shots = 0;
  spec.n_prompts = n;
  std::set<std::vector<int64_t>> out;
  for (const hs::Prompt& p : hs::buildIclTask(tok, spec).zero_shot)
    out.insert({p.ids.begin(), p.ids.end()});
  return out;
}

}  // namespace

class TestSite : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;

 private Q_SLOTS:
  void initTestCase() {
    toy_ = hs::loadModel("toy");
    QVERIFY(toy_.tokenizer);
  }

  void interpolationHandCases() {
    const hs::Transformer m = hs::test::tinyLlama();
    const hs::ModelConfig& c = m.config();
    const at::Tensor t = tinyEmbedding(m);
    const hs::SiteExample e = tinyExamples(1, 5)[0];
    at::NoGradGuard noGrad;
    const at::Tensor on = at::full({c.n_layers, c.n_heads}, 40.0);  // α = sigmoid(40) = 1 in float32
    std::vector<hs::Intervention> replace;
    for (int l = 0; l < c.n_layers; ++l) {
      hs::Intervention iv;
      iv.site = hs::attnZ(l);
      iv.positions = {-1};
      iv.op = hs::InterventionOp::Mean;
      iv.tensor = t[l];  // [heads, d_head]
      replace.push_back(iv);
    }
    const double lossOn = hs::siteLoss(m, {e}, t, on).item<double>();
    QVERIFY(std::abs(lossOn - plainLoss(m, e, replace)) < 1e-4);
    const double lossOff = hs::siteLoss(m, {e}, t, -on).item<double>();
    QVERIFY(std::abs(lossOff - plainLoss(m, e, {})) < 1e-4);
    QVERIFY2(std::abs(lossOn - lossOff) > 1e-3, "replacing z at N by t changed nothing (vacuous case)");
    // Left-padded batch: the mean of the rows' own losses.
    const auto two = tinyExamples(2, 6);  // lengths 5+1 and 6+1
    const at::Tensor half = at::zeros({c.n_layers, c.n_heads});
    const double batched = hs::siteLoss(m, two, t, half).item<double>();
    const double single = 0.5 * (hs::siteLoss(m, {two[0]}, t, half).item<double>() +
                                 hs::siteLoss(m, {two[1]}, t, half).item<double>());
    QVERIFY(std::abs(batched - single) < 1e-4);
  }

  void gradientFlowsOnlyIntoAlpha() {
    const hs::Transformer m = hs::test::tinyLlama();
    const hs::ModelConfig& c = m.config();
    const at::Tensor t = tinyEmbedding(m);
    at::Tensor logit = at::zeros({c.n_layers, c.n_heads}).requires_grad_(true);
    const at::Tensor loss = hs::siteLoss(m, tinyExamples(2, 8), t, logit);
    QVERIFY(loss.requires_grad());
    loss.backward();
    QVERIFY(logit.grad().defined());
    QVERIFY(logit.grad().abs().sum().item<double>() > 0);
    QVERIFY(!t.requires_grad() && !t.grad().defined());
    for (const auto& lw : m.weights().layers)
      for (const at::Tensor& w : {lw.wq, lw.wk, lw.wv, lw.wo, lw.w_up, lw.w_down}) {
        QVERIFY(!w.requires_grad());
        QVERIFY(!w.grad().defined());
      }
    QVERIFY(!m.weights().tok_emb.requires_grad() && !m.weights().unembed.requires_grad());
  }

  void trainingMovesAlphaAndLowersLoss() {
    const hs::Transformer m = hs::test::tinyLlama();
    const at::Tensor t = tinyEmbedding(m);
    const at::Tensor woBefore = m.weights().layers[1].wo.clone();
    const auto examples = tinyExamples(12, 21);
    hs::SiteOptions opt;
    opt.steps = 60;
    const hs::SiteTraining a = hs::trainSite(m, examples, t, opt, 4);
    QCOMPARE(a.loss.size(), size_t(60));
    QCOMPARE(a.drawn.size(), size_t(60));  // one example drawn per step (batch 1)
    // The loss over all 12 examples, before (α = 0.5 everywhere) and after training.
    at::NoGradGuard noGrad;
    const double before = hs::siteLoss(m, examples, t, at::zeros_like(a.logit)).item<double>();
    const double after = hs::siteLoss(m, examples, t, a.logit).item<double>();
    qInfo("tiny: loss over the 12 examples %.3f -> %.3f", before, after);
    QVERIFY2(after < 0.97 * before, "the loss did not fall");  // at least 3 %
    const at::Tensor alpha = at::sigmoid(a.logit);
    QVERIFY((alpha - 0.5).abs().max().item<double>() > 0.2);
    QVERIFY(!a.logit.requires_grad());
    QVERIFY(at::equal(woBefore, m.weights().layers[1].wo));
    const hs::SiteTraining b = hs::trainSite(m, examples, t, opt, 4);
    QVERIFY(at::equal(a.logit, b.logit));
  }

  void exactMatchRuleHandCases() {
    // eval.py --exact_match: strip, first line, cut at "(", St. → Saint, lower-case, prefix of the output.
    QVERIFY(hs::siteExactMatch("  Paris\nFrance", " paris", true));
    QVERIFY(hs::siteExactMatch("Parisian", "Paris", true));  // a prefix is enough
    QVERIFY(!hs::siteExactMatch("Pari", "Paris", true));     // the output must reach the target's length
    QVERIFY(!hs::siteExactMatch("London\nParis", "Paris", true));  // only the first line counts
    QVERIFY(hs::siteExactMatch("\n  euro (EUR) and more", "Euro", true));
    QVERIFY(hs::siteExactMatch("St. Louis", "Saint Louis", true));
    QVERIFY(hs::siteExactMatch("saint petersburg", "St. Petersburg (Russia)", true));
    QVERIFY(!hs::siteExactMatch("paris", "Paris", false));  // case-sensitive tasks
    QVERIFY(hs::siteExactMatch("Paris", "Paris", false));
    QVERIFY(hs::siteCaseSensitiveTask("capitalize_first_letter"));
    QVERIFY(hs::siteCaseSensitiveTask("lowercase_last_letter"));
    QVERIFY(!hs::siteCaseSensitiveTask("antonym"));
  }

  void firstTokenMatchIsTheDefault() {
    at::NoGradGuard noGrad;
    const hs::Transformer& m = *toy_.model;
    const hs::Tokenizer& tok = *toy_.tokenizer;
    hs::TaskSpec spec;
    spec.dataset = "toy:antonym_a";
    spec.shots = 10;
    spec.n_prompts = 1;
    const hs::IclTask task = hs::buildIclTask(tok, spec);
    const int64_t nl = hs::separatorToken(tok, task.tmpl);
    QCOMPARE(nl, int64_t(*tok.idOf("<nl>")));
    hs::Prompt p = task.icl[0];
    const std::vector<int64_t> gen = m.generateGreedy({p.ids.begin(), p.ids.end()}, 2, -1);
    QCOMPARE(gen.size(), size_t(2));
    // The model's own first token followed by a token it would not generate: correct by first-token match
    // (the official default), wrong by any whole-answer rule.
    const int other = (int(gen[1]) + 1) % int(m.config().vocab_size);
    p.answer_token = int(gen[0]);
    p.answer_tokens = {int(gen[0]), other};
    p.answer = tok.decode({int(gen[0])}) + " zzz-not-a-word";
    hs::SiteScoring first;  // exact_match false
    QCOMPARE(hs::siteAccuracy(m, tok, {p}, {}, first), 1.0);
    hs::SiteScoring exact;
    exact.exact_match = true;
    exact.stop = nl;
    QCOMPARE(hs::siteAccuracy(m, tok, {p}, {}, exact), 0.0);
    // Exact match reads the decoded generation up to the separator: the model's own continuation matches.
    const std::vector<int64_t> upToNl = m.generateGreedy({p.ids.begin(), p.ids.end()}, 20, nl);
    p.answer = tok.decode(std::vector<int>(upToNl.begin(), upToNl.end()));
    QVERIFY(!p.answer.empty());
    QCOMPARE(hs::siteAccuracy(m, tok, {p}, {}, exact), 1.0);
    // A wrong first token fails both rules.
    p.answer_token = (int(gen[0]) + 1) % int(m.config().vocab_size);
    QCOMPARE(hs::siteAccuracy(m, tok, {p}, {}, first), 0.0);
  }

  void siteRaisesZeroShotAccuracyOnToy() {
    const hs::Transformer& m = *toy_.model;
    const hs::TaskSpec spec = toyAntonymSpec(30);
    hs::SiteOptions opt;
    opt.n_embed = 20;
    opt.steps = 150;  // n_train 0: every step draws from the whole train split
    const hs::AnalysisOutput out = hs::runSite(m, *toy_.tokenizer, spec, opt, hs::test::modelContext("toy"));
    QCOMPARE(out.run.grids.size(), size_t(1));
    QCOMPARE(out.run.grids[0].id, std::string("site.alpha"));
    QCOMPARE(out.run.curves[0].id, std::string("site.loss"));
    QCOMPARE(out.run.curves[0].x.size(), size_t(150));
    QCOMPARE(out.run.tables[0].id, std::string("site.accuracy"));
    QCOMPARE(out.run.tables[0].rows.size(), size_t(5));
    const nlohmann::json& acc = out.run.summary["accuracy"];
    const double zs = acc["zero_shot"], icl = acc["icl"], st = acc["site"], hi = acc["high_alpha"],
                 lo = acc["low_alpha"];
    qInfo(
        "toy antonym_a (n=30, 150 steps): zero-shot %.3f, 10-shot ICL %.3f, SITE %.3f, high-α only %.3f, "
        "low-α only %.3f; %d heads with α > 0.5; loss %.3f -> %.3f",
        zs, icl, st, hi, lo, out.run.summary["n_high_alpha"].get<int>(),
        out.run.summary["loss_first20"].get<double>(), out.run.summary["loss_last20"].get<double>());
    QVERIFY2(out.run.summary["loss_last20"].get<double>() < out.run.summary["loss_first20"].get<double>(),
             "SITE loss did not fall");
    QVERIFY2(st >= zs + 0.2, "SITE is not well above zero-shot accuracy");
    QCOMPARE(out.run.summary["scoring"].get<std::string>(), std::string("first_token"));

    // The prompts: n_embed ICL prompts, one zero-shot prompt per step drawn from the whole train split (179
    // queries of toy:antonym_a with seed 2), the evaluation sets.
    const std::set<std::vector<int64_t>> trainPool = trainQueries(*toy_.tokenizer, spec, 179);
    QCOMPARE(trainPool.size(), size_t(179));
    std::map<std::string, int> perSet;
    std::set<std::vector<int64_t>> drawn;
    for (const hs::PromptRecord& r : out.run.prompts) {
      ++perSet[r.set];
      if (r.set != "train") continue;
      QVERIFY(trainPool.count(r.ids));
      drawn.insert(r.ids);
    }
    QCOMPARE(perSet["embed"], 20);
    QCOMPARE(perSet["train"], 150);
    QCOMPARE(perSet["zero_shot"], 30);
    QCOMPARE(perSet["icl"], 30);
    qInfo("%zu distinct training prompts in 150 draws from 179", drawn.size());
    QVERIFY2(drawn.size() > 80, "the steps should draw from the whole train split, not a fixed subset");
    QVERIFY2(drawn.size() < 150, "draws are with replacement");
    const at::Tensor alpha = out.tensors.at("site-1/alpha");  // [layers, heads]
    for (int l = 0; l < alpha.size(0); ++l)
      for (int h = 0; h < alpha.size(1); ++h)
        QCOMPARE(out.run.grids[0].values(l, h), alpha[l][h].item<double>());
  }

  // Training draws every step's prompt afresh, uniformly with replacement, from the whole train split: on
  // 4 examples some aligned block of 4 draws repeats an example (a cycled reshuffle never does), and a toy
  // run's draws reach queries beyond the split's first 100 (a fixed subset of 100 prompts never does).
  void trainingDrawsFromTheWholeSplitWithReplacement() {
    const hs::Transformer tiny = hs::test::tinyLlama();
    hs::SiteOptions opt;
    opt.steps = 40;
    const hs::SiteTraining tr = hs::trainSite(tiny, tinyExamples(4, 31), tinyEmbedding(tiny), opt, 7);
    QCOMPARE(tr.drawn.size(), size_t(40));
    int repeats = 0;
    for (size_t b = 0; b + 4 <= tr.drawn.size(); b += 4)
      repeats += std::set<int>(tr.drawn.begin() + long(b), tr.drawn.begin() + long(b) + 4).size() < 4;
    QVERIFY2(repeats > 0, "every block of 4 draws is a permutation of the 4 examples: cycled, not resampled");

    const hs::TaskSpec spec = toyAntonymSpec(4);
    hs::SiteOptions o;
    o.n_embed = 4;
    o.steps = 40;
    const hs::AnalysisOutput out = hs::runSite(*toy_.model, *toy_.tokenizer, spec, o);
    const std::set<std::vector<int64_t>> first100 = trainQueries(*toy_.tokenizer, spec, 100);
    QCOMPARE(first100.size(), size_t(100));
    int beyond = 0, draws = 0;
    for (const hs::PromptRecord& r : out.run.prompts)
      if (r.set == "train") ++draws, beyond += first100.count(r.ids) ? 0 : 1;
    qInfo("%d of %d draws outside the train split's first 100 queries (179 in all)", beyond, draws);
    QCOMPARE(draws, 40);
    QVERIFY2(beyond > 0, "the steps drew only from the split's first 100 queries");
  }

  // The official model helpers' generate (models.py): max_new_tokens=20 new tokens (greedy; HF stops at EOS),
  // batch_decode(...)[0].strip(); eval.py then reads the first line. The earlier rule stopped at the
  // template's separator token; it stays as generation_stop separator.
  void generationIsTheOfficialTwentyTokens() {
    at::NoGradGuard noGrad;
    const hs::Transformer& m = *toy_.model;
    const hs::Tokenizer& tok = *toy_.tokenizer;
    QCOMPARE(hs::SiteOptions{}.generation_stop, std::string("official"));
    hs::SiteOptions opt;
    opt.exact_match = true;
    const hs::IclTask task = hs::buildIclTask(tok, toyAntonymSpec(3));
    const hs::SiteScoring official = hs::siteScoring(m, tok, opt, task.tmpl, task.dataset.id);
    QCOMPARE(official.stop, int64_t(-1));
    QCOMPARE(official.max_new_tokens, 20);
    opt.generation_stop = "separator";
    const hs::SiteScoring separator = hs::siteScoring(m, tok, opt, task.tmpl, task.dataset.id);
    QCOMPARE(separator.stop, int64_t(*tok.idOf("<nl>")));
    for (const hs::Prompt& p : task.zero_shot) {
      const std::vector<int64_t> ids(p.ids.begin(), p.ids.end());
      const std::vector<int64_t> gen = m.generateGreedy(ids, 20, official.eos);  // [≤ 20] new tokens
      std::string want = tok.decode(std::vector<int>(gen.begin(), gen.end()));
      want.erase(0, want.find_first_not_of(" \t\n\r\f\v"));
      want.erase(want.find_last_not_of(" \t\n\r\f\v") + 1);
      const std::string got = hs::siteGenerate(m, tok, p, {}, official);
      QCOMPARE(got, want);
      const std::string cut = hs::siteGenerate(m, tok, p, {}, separator);
      qInfo("official %zu tokens \"%s\"; separator rule \"%s\"", gen.size(), got.c_str(), cut.c_str());
      // The toy model answers, writes the separator and goes on: the official text runs past it.
      QVERIFY2(got.size() > cut.size() && got.compare(0, cut.size(), cut) == 0,
               qPrintable(QString("official \"%1\", separator \"%2\"")
                              .arg(QString::fromStdString(got), QString::fromStdString(cut))));
    }
  }

  // A dataset that comes as the official split folder (dataset/<task>/{train,valid,test}.json, SNU-DRL/
  // Soft_Injection) is read with those splits: the evaluation prompts are test.json's queries, the training
  // and embedding prompts train.json's; `splits seeded` re-splits the same examples 70/9/21.
  void officialSplitFolderIsUsed() {
    const hs::Tokenizer& tok = *toy_.tokenizer;
    hs::TaskSpec toySpec;
    toySpec.dataset = "toy:antonym_a";
    const hs::Dataset toyData = hs::loadTaskDataset(toySpec);
    QVERIFY(toyData.examples.size() >= 180);
    QTemporaryDir dir;
    const std::string folder = dir.filePath("antonym_toy").toStdString();
    QVERIFY(QDir().mkpath(QString::fromStdString(folder)));
    const std::vector<std::pair<std::string, std::pair<int, int>>> parts = {
        {"train", {0, 120}}, {"valid", {120, 140}}, {"test", {140, 180}}};
    std::map<std::string, std::vector<hs::Example>> files;
    for (const auto& [name, range] : parts) {
      nlohmann::json items = nlohmann::json::array();
      for (int i = range.first; i < range.second; ++i) {
        const hs::Example& e = toyData.examples[size_t(i)];
        items.push_back({{"input", e.input}, {"output", e.outputs[0]}});
        files[name].push_back(e);
      }
      std::ofstream(folder + "/" + name + ".json") << items.dump(2);
    }
    const hs::Dataset d = hs::loadDatasetAuto(folder);
    QCOMPARE(d.id, std::string("antonym_toy"));
    QVERIFY(d.given_split.has_value());
    QCOMPARE(d.given_split->train.size(), size_t(120));
    QCOMPARE(d.given_split->test.size(), size_t(40));

    hs::TaskSpec spec = toyAntonymSpec(40);  // every query of test.json
    spec.dataset = folder;
    spec.template_id = "toy-fn";
    const hs::PromptTemplate tmpl = hs::builtinTemplate("toy-fn");
    auto zeroShotIds = [&](const std::vector<hs::Example>& ex) {
      std::set<std::vector<int64_t>> out;
      for (const hs::Example& e : ex) {
        const hs::Prompt p = hs::zeroShotPrompt(tok, tmpl, e);
        out.insert({p.ids.begin(), p.ids.end()});
      }
      return out;
    };
    const std::set<std::vector<int64_t>> train = zeroShotIds(files["train"]),
                                         test = zeroShotIds(files["test"]);
    hs::SiteOptions opt;
    opt.n_embed = 4;
    opt.steps = 6;
    for (const char* splits : {"dataset", "seeded"}) {
      opt.splits = splits;
      const hs::AnalysisOutput out = hs::runSite(*toy_.model, tok, spec, opt);
      std::set<std::vector<int64_t>> evalSet;
      int trainDraws = 0, fromTrain = 0;
      for (const hs::PromptRecord& r : out.run.prompts) {
        if (r.set == "zero_shot") evalSet.insert(r.ids);
        if (r.set == "train") ++trainDraws, fromTrain += train.count(r.ids) ? 1 : 0;
      }
      if (std::string(splits) == "dataset") {
        QCOMPARE(out.run.summary["splits"].get<std::string>(), std::string("dataset files"));
        QVERIFY2(evalSet == test, "the evaluation queries are not test.json's");
        QCOMPARE(fromTrain, trainDraws);
      } else {
        QCOMPARE(out.run.summary["splits"].get<std::string>(), std::string("seeded 70/9/21"));
        QVERIFY2(evalSet != test, "splits seeded still evaluates exactly test.json");
      }
    }
  }

  // α's standard error (issue 39): the grid's se is each head's sd over alpha_resamples bootstrap resamples,
  // each α_b recomputed here from scratch: t_b the mean z at N over the resample's embedding prompts (the
  // run's recorded "embed" prompts, drawn with replacement), α_b trained from 0 on the resampled training
  // pool (the first n_train zero-shot queries of the train split) with the resample's draw seed. α itself
  // stays the full data's (the tensor "alpha"), and the resamples really resample (repeats in the pool).
  void alphaStandardErrorIsTheBootstrapSpread() {
    const hs::Transformer& m = *toy_.model;
    const hs::TaskSpec spec = toyAntonymSpec(6);
    hs::SiteOptions opt;
    opt.n_embed = 5;
    opt.n_train = 10;
    opt.steps = 30;
    opt.alpha_resamples = 3;
    const hs::AnalysisOutput out = hs::runSite(m, *toy_.tokenizer, spec, opt);
    const hs::HeadGrid& g = out.run.grids.at(0);
    QVERIFY(g.hasSe());
    QCOMPARE(out.run.summary["alpha_resamples"].get<int>(), 3);
    const at::Tensor resamples = out.tensors.at("site-1/alpha_resamples");  // [B, layers, heads]
    QVERIFY(resamples.sizes().vec() == (std::vector<int64_t>{3, 4, 8}));

    hs::TokenSeqs embed;
    for (const hs::PromptRecord& r : out.run.prompts)
      if (r.set == "embed") embed.push_back(r.ids);
    QCOMPARE(embed.size(), size_t(5));
    hs::TaskSpec trainSpec = spec;
    trainSpec.split = "train";
    trainSpec.shots = 0;
    trainSpec.n_prompts = opt.n_train;
    std::vector<hs::SiteExample> pool;
    for (const hs::Prompt& p : hs::buildIclTask(*toy_.tokenizer, trainSpec).zero_shot)
      pool.push_back({std::vector<int64_t>(p.ids.begin(), p.ids.end()), int64_t(p.answer_token)});
    QCOMPARE(pool.size(), size_t(10));
    std::vector<at::Tensor> alphas;  // [layers, heads] per resample, recomputed
    for (int b = 0; b < 3; ++b) {
      const hs::SiteResample r = hs::siteResample(spec.seed, b, embed.size(), pool.size());
      QVERIFY2(std::set<size_t>(r.train.begin(), r.train.end()).size() < pool.size(),
               "a bootstrap resample of 10 examples without a repeat: not drawn with replacement");
      hs::TokenSeqs e;
      std::vector<hs::SiteExample> examples;
      for (size_t i : r.embed)
        e.push_back(embed[i]);
      for (size_t i : r.train)
        examples.push_back(pool[i]);
      const at::Tensor t = hs::meanZ(m, e, hs::ZMean::LastPosition);  // [layers, heads, d_head]
      alphas.push_back(at::sigmoid(hs::trainSite(m, examples, t, opt, r.seed).logit));
      const double diff = (alphas.back() - resamples[b]).abs().max().item<double>();
      QVERIFY2(diff < 1e-6, qPrintable(QString("resample %1: α differs by %2").arg(b).arg(diff)));
    }
    const at::Tensor sd = at::stack(alphas).to(at::kDouble).std(0);  // [layers, heads]
    double largest = 0;
    for (int l = 0; l < 4; ++l)
      for (int h = 0; h < 8; ++h) {
        const double se = g.se(l, h);
        QVERIFY2(std::isfinite(se) && se >= 0, qPrintable(QString("head %1.%2 se %3").arg(l).arg(h).arg(se)));
        QVERIFY(std::abs(se - sd[l][h].item<double>()) < 1e-6);
        QCOMPARE(g.values(l, h), out.tensors.at("site-1/alpha")[l][h].item<double>());
        largest = std::max(largest, se);
      }
    qInfo("α's bootstrap se (3 resamples, 30 steps): largest %.4f, mean %.4f", largest,
          out.run.summary["mean_alpha_se"].get<double>());
    QVERIFY2(largest > 0.01, "resamples of other prompts should move α");
  }

  // The se measures how α depends on the prompts: with one embedding prompt and one training query every
  // resample is the same data and trains the same α (se 0 on every head); with 10 training queries and 5
  // embedding prompts it does not.
  void alphaStandardErrorVanishesWithoutDataToResample() {
    const hs::TaskSpec spec = toyAntonymSpec(4);
    hs::SiteOptions opt;
    opt.n_embed = 1;
    opt.n_train = 1;
    opt.steps = 20;
    opt.alpha_resamples = 2;
    const hs::AnalysisOutput one = hs::runSite(*toy_.model, *toy_.tokenizer, spec, opt);
    QVERIFY(one.run.grids.at(0).hasSe());
    QCOMPARE(one.run.grids.at(0).se.cwiseAbs().maxCoeff(), 0.0);
    opt.n_embed = 5;
    opt.n_train = 10;
    const hs::AnalysisOutput more = hs::runSite(*toy_.model, *toy_.tokenizer, spec, opt);
    QVERIFY(more.run.grids.at(0).hasSe());
    QVERIFY(more.run.grids.at(0).se.maxCoeff() > 0.01);
    // One resample has no spread: refused, as a negative count.
    opt.alpha_resamples = 1;
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runSite(*toy_.model, *toy_.tokenizer, spec, opt));
  }

  void cliSessionRoundTrip() {
    HS_RUN_CLI_ANALYSIS(o, "site", "site",
                        {"site", "toy", "--n", "6", "--n-embed", "5", "--n-train", "10", "--steps", "20"});
    const hs::AnalysisRun *r = o.run, &written = o.written;
    QCOMPARE(r->grids.size(), size_t(1));
    QVERIFY(r->grids[0].values == written.grids[0].values);
    QCOMPARE(r->options["steps"].get<int>(), 20);
    QCOMPARE(r->options["task"]["dataset"].get<std::string>(), std::string("toy:antonym_a"));
    QCOMPARE(nlohmann::json(r->curves).dump(), nlohmann::json(written.curves).dump());
    QCOMPARE(nlohmann::json(r->tables).dump(), nlohmann::json(written.tables).dump());
    const at::Tensor alpha = o.session.tensors.at(r->id + "/alpha");  // [layers, heads]
    QCOMPARE(alpha.size(0), int64_t(toy_.config.n_layers));
    for (int l = 0; l < alpha.size(0); ++l)
      for (int h = 0; h < alpha.size(1); ++h)
        QVERIFY(std::abs(r->grids[0].values(l, h) - alpha[l][h].item<double>()) < 1e-6);
    QCOMPARE(o.session.tensors.at(r->id + "/t").dim(), int64_t(3));
    // α's standard error (5 resamples by default) survives the session.
    QVERIFY(r->grids[0].hasSe() && r->grids[0].se == written.grids[0].se);
    QCOMPARE(o.session.tensors.at(r->id + "/alpha_resamples").size(0), int64_t(5));
  }
};

QTEST_GUILESS_MAIN(TestSite)
#include "test_site.moc"
