// The L0 head gates of the toy recipe's pruning stage (train/head_gates.h): the hard concrete formulas on
// hand-computed cases, and that folding gates into the weights gives the same model as gating hook_z.
#include <QtTest>

#include <ATen/ATen.h>

#include <cmath>

#include "model/transformer.h"
#include "train/head_gates.h"
#include "train/toy_recipe.h"
#include "train/trainer.h"
#include "util/error.h"

namespace {

double at1(const at::Tensor& t) {
  return t.item<double>();
}
at::Tensor scalar(double v) {
  return at::full({1}, v, at::kDouble);
}

hs::ModelConfig smallConfig() {
  hs::ModelConfig c = hs::defaultToyRecipe().model;
  c.n_layers = 2;
  c.n_heads = c.n_kv_heads = 4;
  c.d_model = 32;
  c.d_head = c.rotary_dim = 8;
  c.d_mlp = 64;
  c.vocab_size = 50;
  c.context_length = 16;
  return c;
}

}  // namespace

class TestHeadGates : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void hardConcreteByHand() {
    // u = 1/4 and log α = ln 3 cancel (logit(1/4) = −ln 3): s = 1/2, z = 1/2·(1.1 + 0.1) − 0.1 = 0.5.
    QVERIFY(std::abs(at1(hs::hardConcreteSample(scalar(std::log(3.0)), scalar(0.25))) - 0.5) < 1e-12);
    // u = 1/2, log α = 0: s = 1/2 again.
    QVERIFY(std::abs(at1(hs::hardConcreteSample(scalar(0.0), scalar(0.5))) - 0.5) < 1e-12);
    // The stretch past [0, 1] is clamped: large log α gives exactly 1, very negative exactly 0.
    QCOMPARE(at1(hs::hardConcreteSample(scalar(10.0), scalar(0.5))), 1.0);
    QCOMPARE(at1(hs::hardConcreteSample(scalar(-10.0), scalar(0.5))), 0.0);
    // P(z > 0) = 1/2 where log α = β·ln(−γ/ζ) = (2/3)·ln(1/11).
    QVERIFY(std::abs(at1(hs::hardConcreteOpenProbability(scalar(2.0 / 3.0 * std::log(1.0 / 11.0)))) - 0.5) <
            1e-12);
    // Test-time gates: sigmoid(0)·1.2 − 0.1 = 0.5; log α = −3 is below ln(1/11), so exactly 0; 3 gives 1.
    QVERIFY(std::abs(at1(hs::hardConcreteDeterministic(scalar(0.0))) - 0.5) < 1e-12);
    QCOMPARE(at1(hs::hardConcreteDeterministic(scalar(-3.0))), 0.0);
    QCOMPARE(at1(hs::hardConcreteDeterministic(scalar(3.0))), 1.0);
  }

  void foldedGatesEqualGatedForward() {
    const hs::ModelConfig c = smallConfig();
    hs::ModelWeights w = hs::initWeights(c, 7);
    const at::Tensor gates = at::tensor({1.0f, 0.5f, 0.0f, 0.25f, 0.0f, 1.0f, 1.0f, 0.75f}).view({2, 4});
    const at::Tensor tokens = at::randint(0, c.vocab_size, {3, 12}, at::kLong);  // [batch, pos]

    hs::RunRequest gated;
    gated.tokens = tokens;
    for (int l = 0; l < c.n_layers; ++l) {
      hs::Intervention iv;
      iv.site = hs::attnZ(l);
      iv.op = hs::InterventionOp::Interpolate;
      iv.tensor = at::zeros({1});
      iv.alpha = (1 - gates[l]).unsqueeze(1);  // [head, 1]
      gated.interventions.push_back(iv);
    }
    at::Tensor expected;
    {
      hs::ModelWeights copy = w;
      forEachWeight(copy, [](at::Tensor& t) {
        if (t.defined()) t = t.clone();
      });
      expected = hs::Transformer(c, copy).run(gated).logits;  // [batch, pos, vocab]
    }

    QCOMPARE(hs::foldHeadGates(w, c, gates), (std::vector<hs::HeadRef>{{0, 2}, {1, 0}}));
    hs::RunRequest plain;
    plain.tokens = tokens;
    plain.capture = {hs::attnPattern(0), hs::attnZ(0)};
    const hs::RunResult folded = hs::Transformer(c, w).run(plain);
    const double diff = (folded.logits - expected).abs().max().item<double>();
    QVERIFY2(diff < 1e-5, qPrintable(QString("folded vs gated logits differ by %1").arg(diff)));

    // The removed head 0.2 attends uniformly over its causal prefix and writes nothing.
    const at::Tensor pattern = folded.cache.at(hs::attnPattern(0)).select(1, 2);  // [batch, q_pos, k_pos]
    const at::Tensor uniform =
        at::tril(at::ones({12, 12})) / at::arange(1, 13, at::kFloat).unsqueeze(1);  // [q_pos, k_pos]
    QVERIFY((pattern - uniform).abs().max().item<double>() < 1e-6);
    QCOMPARE(folded.cache.at(hs::attnZ(0)).select(2, 2).abs().max().item<double>(), 0.0);
    const int64_t dh = c.d_head;
    QCOMPARE(w.layers[1].wo.narrow(1, 0, dh).abs().max().item<double>(), 0.0);
    QCOMPARE(w.layers[1].wk.narrow(0, 0, dh).abs().max().item<double>(), 0.0);
  }

  void wrongGateShapeIsRefused() {
    const hs::ModelConfig c = smallConfig();
    hs::ModelWeights w = hs::initWeights(c, 7);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::foldHeadGates(w, c, at::ones({2, 3})));
  }
};

QTEST_GUILESS_MAIN(TestHeadGates)
#include "test_head_gates.moc"
