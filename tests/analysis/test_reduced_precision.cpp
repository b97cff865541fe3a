// bfloat16 / float16 compute that analyses can trust (issue 23). With a bf16 model, the norms, the softmax,
// q·k, pattern·V and the unembedding compute in float32 (transformer.cpp); the rest (projections, MLP, the
// residual stream) runs in bf16. This test states, with margin over what was measured, how far that is
// from the float32 run:
// - logits of the toy model (real prompts, left-padded batch, every position) and of a random Llama-3.x
//   shaped model stored in bf16 (so both runs use the very same weights), also against an independent
//   float64 reference forward;
// - the TSLA task-recognition / task-learning grids of the toy model: the largest head difference as a
//   fraction of the grid's range, the Spearman correlation of the head rankings, the top heads;
// - float16 on this libtorch: refused on the CPU at load time with a message naming the way out when its
//   kernels are missing (libtorch 1.13), otherwise held to the bf16 tolerance.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "../load/load_error_util.h"
#include "../load/load_test_util.h"
#include "analysis/methods/tsla.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis_test_util.h"
#include "model/compute_dtype.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "tasks/icl_task.h"
#include "util/error.h"

using hs::test::findGrid;

namespace {

// All-position logits of a left-padded batch, float64: [batch, pos, vocab].
at::Tensor batchLogits(const hs::Transformer& model, const std::vector<hs::Prompt>& prompts) {
  const hs::PaddedBatch b = hs::padPrompts(prompts, 0, prompts.size(), 0);
  hs::RunRequest req;
  req.tokens = b.tokens;
  req.attention_mask = b.attention_mask;
  at::NoGradGuard noGrad;
  return model.run(req).logits.to(at::kDouble) * b.attention_mask.unsqueeze(-1).to(at::kDouble);
}

struct Gap {
  double maxAbs = 0;       // max |Δlogit| over every real position and token
  double meanAbs = 0;      // mean |Δlogit|
  double scale = 0;        // max |logit| of the float32 run
  double argmaxAgree = 0;  // fraction of real positions with the same top token
  int64_t positions = 0;   // real positions compared
};

Gap gap(const at::Tensor& low, const at::Tensor& ref, const at::Tensor& realMask) {
  const at::Tensor d = (low - ref).abs();          // [batch, pos, vocab]
  const at::Tensor real = realMask.to(at::kBool);  // [batch, pos]
  Gap g;
  g.maxAbs = d.max().item<double>();
  g.meanAbs = d.index({real}).mean().item<double>();
  g.scale = ref.abs().max().item<double>();
  g.argmaxAgree = low.argmax(-1).eq(ref.argmax(-1)).index({real}).to(at::kDouble).mean().item<double>();
  g.positions = real.sum().item<int64_t>();
  return g;
}

// The model with its weights as float32 copies of a bf16 model's: the float32 run of the same weights.
hs::Transformer float32Of(const hs::Transformer& m) {
  hs::ModelWeights w = m.weights();
  hs::forEachWeight(w, [](at::Tensor& t) {
    if (t.defined()) t = t.to(at::kFloat);
  });
  if (m.weights().unembed.is_same(m.weights().tok_emb)) w.unembed = w.tok_emb;
  return hs::Transformer(m.config(), std::move(w));
}

double range(const Eigen::MatrixXd& m) {
  return m.maxCoeff() - m.minCoeff();
}

// Indices of the k largest entries of a [layers, heads] grid, as layer·heads + head.
std::vector<int> topHeads(const Eigen::MatrixXd& g, int k) {
  std::vector<int> idx(static_cast<size_t>(g.size()));
  for (int i = 0; i < int(idx.size()); ++i)
    idx[size_t(i)] = i;
  std::sort(idx.begin(), idx.end(),
            [&](int a, int b) { return g(a / g.cols(), a % g.cols()) > g(b / g.cols(), b % g.cols()); });
  idx.resize(size_t(k));
  std::sort(idx.begin(), idx.end());
  return idx;
}

}  // namespace

class TestReducedPrecision : public QObject {
  Q_OBJECT

  hs::LoadedModel toy32_, toy16_;
  std::unique_ptr<hs::IclTask> task_;

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);  // GEMM blocking, hence rounding, independent of the machine's cores
    toy32_ = hs::loadModel("toy");
    hs::LoadOptions bf16;
    bf16.dtype = "bfloat16";
    toy16_ = hs::loadModel("toy", bf16);
    QCOMPARE(toy16_.model->dtype(), at::kBFloat16);
    hs::TaskSpec spec;  // toy:category_label, 8 shots
    spec.n_prompts = 24;
    task_ = std::make_unique<hs::IclTask>(hs::buildIclTask(*toy32_.tokenizer, spec));
  }

  void toyLogits() {
    const std::vector<hs::Prompt>& prompts = task_->icl;
    const hs::PaddedBatch b = hs::padPrompts(prompts, 0, prompts.size(), 0);
    const at::Tensor ref = batchLogits(*toy32_.model, prompts);              // the shipped float32 weights
    const at::Tensor same = batchLogits(float32Of(*toy16_.model), prompts);  // bf16-rounded weights, fp32
    const at::Tensor low = batchLogits(*toy16_.model, prompts);
    const Gap checkpoint = gap(low, ref, b.attention_mask);
    const Gap compute = gap(low, same, b.attention_mask);
    qInfo("toy, bf16 vs fp32 of the float32 checkpoint: max %.4f mean %.5f (max |logit| %.2f) argmax %.4f",
          checkpoint.maxAbs, checkpoint.meanAbs, checkpoint.scale, checkpoint.argmaxAgree);
    qInfo("toy, bf16 vs fp32 of the same (bf16) weights: max %.4f mean %.5f argmax %.4f of %lld positions",
          compute.maxAbs, compute.meanAbs, compute.argmaxAgree, static_cast<long long>(compute.positions));
    QVERIFY(checkpoint.maxAbs > 0);  // bf16 did run in bf16
    // Measured (1 thread, AVX-512-BF16 CPU): same weights max 0.91, mean 0.031, top token 98.4 % of the
    // 1,108 positions; float32 checkpoint max 0.92, mean 0.033, top token 97.2 %. With bf16 scores,
    // pattern, residual stream and logits (before this policy): max 1.03, mean 0.039, top token 93.9 %
    // (93.95 % from the float32 checkpoint). Stated tolerances, logits of magnitude up to 31:
    QVERIFY2(compute.maxAbs <= 1.5 && compute.meanAbs <= 0.045 && compute.argmaxAgree >= 0.96,
             "bf16 toy logits outside max 1.5 / mean 0.045 / top token 96 % of the same weights in float32");
    QVERIFY2(checkpoint.maxAbs <= 1.5 && checkpoint.meanAbs <= 0.05 && checkpoint.argmaxAgree >= 0.95,
             "bf16 toy logits outside max 1.5 / mean 0.05 / top token 95 % of the float32 checkpoint");
  }

  void llamaShapedLogits() {
    HS_REQUIRE_REFERENCE_PYTHON();
    QTemporaryDir dir;
    QString err;
    hs::test::runReference({"gen", "--family", "llama-shape", "--seed", "5", "--out", dir.path(), "--dtype",
                            "bfloat16", "--batch", "2", "--pos", "64"},
                           &err);
    QVERIFY2(err.isEmpty(), qPrintable(err));
    const hs::test::Reference ref = hs::test::readReference(dir.path().toStdString());
    const hs::LoadedModel f32 = hs::loadModel(dir.path().toStdString());
    hs::LoadOptions o;
    o.dtype = "bfloat16";
    const hs::LoadedModel bf16 = hs::loadModel(dir.path().toStdString(), o);
    const at::Tensor ones = at::ones({ref.tokens.size(0), ref.tokens.size(1)}, at::kLong);
    const at::Tensor l32 = hs::test::ourLogits(*f32.model, ref.tokens);
    const at::Tensor l16 = hs::test::ourLogits(*bf16.model, ref.tokens);
    QVERIFY(hs::test::maxAbsDiff(l32, ref.logits) <= 1e-4);  // the float32 run is the reference
    const Gap g = gap(l16, l32, ones);
    qInfo("llama-shape bf16 vs fp32 (same weights): max %.4f mean %.5f (max |logit| %.2f) argmax %.4f",
          g.maxAbs, g.meanAbs, g.scale, g.argmaxAgree);
    // Measured: max 0.24, mean 0.034, top token 98.4 % of 128 positions (before this policy: 0.31, 0.045,
    // 94.5 %). Stated tolerances, logits of magnitude up to 14:
    QVERIFY2(g.maxAbs <= 0.4 && g.meanAbs <= 0.05 && g.argmaxAgree >= 0.96,
             "bf16 Llama-shaped logits outside max 0.4 / mean 0.05 / top token 96 % of float32");
  }

  void tslaGrids() {
    hs::TslaOptions opts;
    opts.top_percent = 12.5;  // 4 of 32 heads
    opts.ablation = "zero";
    opts.induction_sequences = 4;
    const hs::AnalysisOutput a = hs::runTsla(*toy32_.model, *toy32_.tokenizer, *task_, opts);
    const hs::AnalysisOutput b = hs::runTsla(*toy16_.model, *toy16_.tokenizer, *task_, opts);
    for (const char* id : {"tsla.tr", "tsla.tl"}) {
      const hs::HeadGrid* g32 = findGrid(a.run, id);
      const hs::HeadGrid* g16 = findGrid(b.run, id);
      QVERIFY(g32 && g16);
      const double rel = (g16->values - g32->values).cwiseAbs().maxCoeff() / range(g32->values);
      const double rho = hs::spearmanRho(*g16, *g32);
      const bool sameTop = topHeads(g16->values, 4) == topHeads(g32->values, 4);
      qInfo("%s: max |Δ| / range = %.4f, Spearman %.4f, same top 4: %d", id, rel, rho, int(sameTop));
      // Measured: TR 0.0023 and TL 0.0020 of the grid's range, Spearman 1.0000, the same top 4 heads.
      // Stated: 1 % of the range, Spearman >= 0.999, the same top 4 (the heads TSLA selects).
      QVERIFY2(rel <= 0.01 && rho >= 0.999 && sameTop, id);
    }
  }

  void float16OnThisLibtorch() {
    const std::string problem = hs::computeDtypeProblem(at::kHalf, at::kCPU);
    hs::LoadOptions o;
    o.dtype = "float16";
    if (!problem.empty()) {
      const std::string m = hs::test::errorOf([&] { hs::loadModel("toy", o); });
      qInfo("float16 on the CPU: %s", m.c_str());
      QVERIFY2(m.find("Half") != std::string::npos || m.find("float16") != std::string::npos, m.c_str());
      QVERIFY2(m.find("bfloat16") != std::string::npos, m.c_str());
      QVERIFY2(m.find('\n') == std::string::npos, m.c_str());  // one line, no C++ frames
      QVERIFY(!hs::computeDtypeProblem(at::kBFloat16, at::kCPU).size());
      return;
    }
    const hs::LoadedModel f16 = hs::loadModel("toy", o);
    const hs::PaddedBatch b = hs::padPrompts(task_->icl, 0, task_->icl.size(), 0);
    const Gap g =
        gap(batchLogits(*f16.model, task_->icl), batchLogits(*toy32_.model, task_->icl), b.attention_mask);
    qInfo("toy, f16 vs fp32: max %.4f mean %.5f argmax %.4f", g.maxAbs, g.meanAbs, g.argmaxAgree);
    // float16 keeps 3 more mantissa bits than bf16: held to the bf16 tolerance of the float32 checkpoint.
    QVERIFY(g.maxAbs <= 1.5 && g.meanAbs <= 0.05 && g.argmaxAgree >= 0.95);
  }
};

QTEST_GUILESS_MAIN(TestReducedPrecision)
#include "test_reduced_precision.moc"
