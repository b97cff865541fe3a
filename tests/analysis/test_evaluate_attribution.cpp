// Direct logit attribution (analysis/toolkit/logit_attribution.h) against the model's own numbers: the parts
// add up to the answer logit (RMSNorm and LayerNorm models, with biases and learned positions), each head's
// part equals its hook_result written through the final norm's frozen scale (taken from ln_final), and an
// ablated head contributes nothing. The `evaluate` method's statistics: the Wilson interval against
// published values, the random-heads control (as many heads as chosen, none of them, seeded) and the
// per-prompt table agreeing with the accuracy it explains.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QtTest>

#include <set>

#include "../engine/engine_fixtures.h"
#include "analysis/methods/evaluate.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/logit_attribution.h"
#include "model/load/model_loader.h"
#include "util/error.h"

namespace {

hs::Transformer tinyGpt2(uint64_t seed = 11) {
  hs::ModelConfig c = hs::test::tinyLlamaConfig();
  c.arch = hs::Architecture::Gpt2;
  c.model_type = "gpt2";
  c.n_kv_heads = c.n_heads;
  c.norm = hs::NormKind::LayerNorm;
  c.rope_layout = hs::RopeLayout::None;
  c.rotary_dim = 0;
  c.learned_pos_emb = true;
  c.attn_out_bias = true;
  c.mlp_bias = true;
  c.mlp = hs::MlpKind::Gelu;
  c.activation = "gelu_new";
  return hs::Transformer(c, hs::test::randomWeights(c, seed));
}

const std::vector<int64_t> kIds = {1, 7, 19, 3, 44, 7, 19};

}  // namespace

class TestEvaluateAttribution : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void attributionAddsUpToTheLogit() {
    at::NoGradGuard g;
    for (const hs::Transformer& m : {hs::test::tinyLlama(), tinyGpt2()}) {
      for (int64_t answer : {int64_t(3), int64_t(44)}) {
        const hs::LogitAttribution a = hs::directLogitAttribution(m, kIds, answer);
        QCOMPARE(a.head.size(), size_t(m.config().n_layers * m.config().n_heads));
        QVERIFY2(std::abs(a.total() - a.logit) < 1e-4, qPrintable(QString("%1: parts %2 vs logit %3")
                                                                      .arg(hs::toString(m.config().arch))
                                                                      .arg(a.total())
                                                                      .arg(a.logit)));
        // The logit is the model's own.
        hs::RunRequest r;
        r.tokens = at::tensor(kIds, at::kLong).view({1, -1});
        QVERIFY(std::abs(m.run(r).logits[0][-1][answer].item<double>() - a.logit) < 1e-6);
      }
    }
  }

  void headPartIsItsResultThroughTheFrozenNorm() {
    at::NoGradGuard g;
    for (const hs::Transformer& m : {hs::test::tinyLlama(), tinyGpt2()}) {
      const hs::ModelConfig& c = m.config();
      const int64_t answer = 5;
      const hs::LogitAttribution a = hs::directLogitAttribution(m, kIds, answer);
      hs::RunRequest r;
      r.tokens = at::tensor(kIds, at::kLong).view({1, -1});
      r.capture = {hs::lnFinal(), hs::residPost(c.n_layers - 1)};
      for (int l = 0; l < c.n_layers; ++l)
        r.capture.insert(hs::attnResult(l));
      const hs::RunResult res = m.run(r);
      const bool ln = c.norm == hs::NormKind::LayerNorm;
      auto centre = [ln](const at::Tensor& x) { return ln ? x - x.mean() : x; };
      const at::Tensor resid = centre(res.cache.at(hs::residPost(c.n_layers - 1))[0][-1].to(at::kDouble));
      at::Tensor normed = res.cache.at(hs::lnFinal())[0][-1].to(at::kDouble);  // [d_model]
      const at::Tensor w = m.weights().final_norm_w.to(at::kDouble);
      if (ln) normed = normed - m.weights().final_norm_b.to(at::kDouble);
      // The norm's scale as the forward applied it: resid ⊙ w / normed, the same in every coordinate.
      const double s = (resid * w / normed).median().item<double>();
      const at::Tensor u = m.weights().unembed[answer].to(at::kDouble);
      for (int l = 0; l < c.n_layers; ++l)
        for (int h = 0; h < c.n_heads; ++h) {
          const at::Tensor write = res.cache.at(hs::attnResult(l))[0][-1][h].to(at::kDouble);  // [d_model]
          const double direct = at::dot(centre(write) * w / s, u).item<double>();
          QVERIFY2(std::abs(direct - a.headAt(l, h)) < 1e-4,
                   qPrintable(QString("head %1.%2: %3 vs %4").arg(l).arg(h).arg(a.headAt(l, h)).arg(direct)));
        }
      // An ablated head writes nothing, and the parts still add up to the ablated model's logit.
      const hs::LogitAttribution z = hs::directLogitAttribution(m, kIds, answer, hs::zeroHeads({{1, 2}}));
      QCOMPARE(z.headAt(1, 2), 0.0);
      QVERIFY(std::abs(z.total() - z.logit) < 1e-4);
      QVERIFY(std::abs(z.logit - a.logit) > 1e-6);
    }
  }

  void attributionRefusesBadInput() {
    const hs::Transformer m = hs::test::tinyLlama();
    at::NoGradGuard g;
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::directLogitAttribution(m, kIds, 50));
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::directLogitAttribution(m, {}, 1));
  }

  // Published values (Wilson 1927; Newcombe 1998, table I): 81/263 → 0.2553–0.3662; 15/148 → 0.0624–0.1605.
  void wilsonIntervalMatchesPublishedValues() {
    auto [lo, hi] = hs::wilsonInterval(81, 263);
    QVERIFY(std::abs(lo - 0.2553) < 5e-4 && std::abs(hi - 0.3662) < 5e-4);
    std::tie(lo, hi) = hs::wilsonInterval(15, 148);
    QVERIFY(std::abs(lo - 0.0624) < 5e-4 && std::abs(hi - 0.1605) < 5e-4);
    std::tie(lo, hi) = hs::wilsonInterval(10, 10);
    QCOMPARE(hi, 1.0);
    QVERIFY(lo > 0.69 && lo < 0.73);
    QVERIFY(std::isnan(hs::wilsonInterval(0, 0).first));
  }

  void evaluateReportsControlIntervalsAndPrompts() {
    const hs::LoadedModel toy = hs::loadModel("toy");
    at::NoGradGuard g;
    hs::TaskSpec spec;
    spec.dataset = "toy:copy_a";
    spec.shots = 8;
    spec.n_prompts = 12;
    const hs::IclTask task = hs::buildIclTask(*toy.tokenizer, spec);
    hs::EvaluateOptions o;
    o.zero_ablate = {{3, 6}, {3, 5}};
    o.mean_ablate = {{3, 0}};
    o.random_draws = 3;
    const hs::AnalysisOutput out = hs::runEvaluate(*toy.model, task, o, {}, toy.tokenizer.get());
    const nlohmann::json& s = out.run.summary;
    for (const char* cond : {"icl", "icl_intervened", "zero_shot", "zero_shot_intervened"}) {
      const double acc = s[cond]["accuracy"], lo = s[cond]["accuracy_lo"], hi = s[cond]["accuracy_hi"];
      QVERIFY2(lo <= acc && acc <= hi && hi - lo > 0.05, cond);
    }
    // The control: three draws of three heads each, none of them chosen, the summary their mean.
    const hs::Table* control = nullptr;
    const hs::Table* prompts = nullptr;
    for (const hs::Table& t : out.run.tables) {
      if (t.id == "evaluate.random_control") control = &t;
      if (t.id == "evaluate.prompts") prompts = &t;
    }
    QVERIFY(control && prompts);
    QCOMPARE(control->rows.size(), size_t(3));
    double mean = 0;
    std::set<std::string> draws;
    for (const auto& row : control->rows) {
      const std::string heads = row[1];
      draws.insert(heads);
      QCOMPARE(std::count(heads.begin(), heads.end(), ','), 2L);
      for (const char* chosen : {"3.6", "3.5", "3.0"})
        QVERIFY2(("," + heads + ",").find(std::string(",") + chosen + ",") == std::string::npos,
                 heads.c_str());
      mean += row[2].get<double>() / 3;
    }
    QVERIFY(draws.size() > 1);  // different draws
    QVERIFY(std::abs(s["random_control"]["accuracy"].get<double>() - mean) < 1e-12);
    QCOMPARE(s["random_control"]["heads"].get<int>(), 3);
    // Per prompt: one row per ICL and zero-shot prompt; the predictions explain the accuracies.
    const int nIcl = s["icl"]["n"], nZs = s["zero_shot"]["n"];
    QCOMPARE(prompts->rows.size(), size_t(nIcl + nZs));
    int rightBefore = 0, rightAfter = 0;
    for (const auto& row : prompts->rows)
      if (row[0] == "icl") {
        const std::string answer =
            toy.tokenizer->piece(toy.tokenizer->encode(" " + row[3].get<std::string>(), false).front());
        rightBefore += row[4].get<std::string>() == answer;
        rightAfter += row[6].get<std::string>() == answer;
        QVERIFY(row[5].get<double>() >= 0 && row[5].get<double>() <= 1);
      }
    QCOMPARE(double(rightBefore) / nIcl, s["icl"]["accuracy"].get<double>());
    QCOMPARE(double(rightAfter) / nIcl, s["icl_intervened"]["accuracy"].get<double>());
  }
};

QTEST_GUILESS_MAIN(TestEvaluateAttribution)
#include "test_evaluate_attribution.moc"
