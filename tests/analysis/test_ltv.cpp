// LTV (learned task vectors) and its mechanism views.
// - Polar decomposition: a known rotation × SPD matrix gives back its factors; Q is orthogonal, Σ symmetric
//   PSD and QΣ = W also for a singular W; rotation / stretch of hand-picked θ.
// - Training: the loss falls on a random GQA model, θ is the only tensor with a gradient, the weights
//   are unchanged.
// - OV reconstruction equals a hand-written per-head sum (GQA kv-head mapping), and each head's OV image
//   of a normed residual equals the engine's hook_result on a one-token prompt (attention = 1 on itself).
// - Toy model, antonym_a: LTV at the middle layer beats vanilla TV and the FV baseline (and zero-shot);
//   results are complete; the run survives a session round trip.
#include <ATen/ATen.h>
#include <Eigen/Dense>
#include <QtTest>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <optional>

#include "../engine/engine_fixtures.h"
#include "analysis/icl_eval.h"
#include "analysis/ltv.h"
#include "analysis/ltv_mechanism.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "results/results_json.h"
#include "session/session.h"
#include "test_paths.h"

namespace {

// A bare prompt for the hand models: ids, N = the last position, the answer token.
hs::Prompt handPrompt(std::vector<int> ids, int answer) {
  hs::Prompt p;
  p.ids = std::move(ids);
  p.last = p.length() - 1;
  p.answer_token = answer;
  p.answer_tokens = {answer};
  return p;
}

Eigen::Matrix3d rotationZ(double rad) {
  Eigen::Matrix3d r;
  r << std::cos(rad), -std::sin(rad), 0, std::sin(rad), std::cos(rad), 0, 0, 0, 1;
  return r;
}

double seriesAt(const hs::Curve& c, const std::string& name, double x) {
  for (const auto& [n, y] : c.series)
    if (n == name)
      for (size_t i = 0; i < c.x.size(); ++i)
        if (c.x[i] == x) return y[i];
  return std::nan("");
}

}  // namespace

class TestLtv : public QObject {
  Q_OBJECT

  std::optional<hs::AnalysisOutput> toyRun_;
  std::string toyPath_;

  // The toy analysis at the middle layer, computed once (toyLtvBeatsBaselines and the round trip).
  const hs::AnalysisOutput& toyRun() {
    if (!toyRun_) {
      const hs::LoadedModel m = hs::loadModel("toy");
      toyPath_ = m.path;
      hs::TaskSpec spec;
      spec.dataset = "toy:antonym_a";
      spec.shots = 10;
      spec.n_prompts = 54;  // the whole test split
      spec.seed = 1;
      hs::LtvOptions o;
      o.layers = {m.config.n_layers / 2};
      // The default schedule (1000 steps, lr 5e-3, validation every 25 steps, patience 8).
      o.train_prompts = 179;  // the whole train split
      o.valid_prompts = 23;
      o.icl_prompts = 40;
      o.fv_prompts = 10;
      o.prop_samples = m.config.d_model + 40;
      o.prop_prompts = 2;
      o.random_sets = 3;
      toyRun_ = hs::runLtv(*m.model, *m.tokenizer, spec, o, hs::test::modelContext(m.path));
    }
    return *toyRun_;
  }

 private Q_SLOTS:
  void polarDecompositionHandCase() {
    // W = R S with R a rotation by 30° about z and S symmetric positive definite.
    const Eigen::Matrix3d R = rotationZ(M_PI / 6);
    Eigen::Matrix3d S;
    S << 2.0, 0.5, 0.0, 0.5, 1.0, 0.0, 0.0, 0.0, 3.0;
    const Eigen::MatrixXd W = R * S;
    const hs::PolarDecomposition p = hs::polarDecompose(W);
    QVERIFY((p.Q - R).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((p.Sigma - S).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((p.Q.transpose() * p.Q - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((p.Q * p.Sigma - W).cwiseAbs().maxCoeff() < 1e-12);

    // θ = e_z: R leaves it in place (cos 1), S stretches it by 3.
    hs::RotationStretch rs = hs::rotationStretch(p, Eigen::Vector3d(0, 0, 2));
    QVERIFY(std::abs(rs.cos_theta_Qtheta - 1.0) < 1e-12);
    QVERIFY(std::abs(rs.stretch - 3.0) < 1e-12);
    // θ = e_x: turned by 30°, S e_x = (2, 0.5, 0) of length √4.25.
    rs = hs::rotationStretch(p, Eigen::Vector3d(1, 0, 0));
    QVERIFY(std::abs(rs.cos_theta_Qtheta - std::cos(M_PI / 6)) < 1e-12);
    QVERIFY(std::abs(rs.stretch - std::sqrt(4.25)) < 1e-12);

    // A singular W (rank 2): the factors still multiply back, Q orthogonal, Σ symmetric PSD.
    Eigen::Matrix3d S0;
    S0 << 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.5;  // eigenvalues 2, 0, 0.5
    const Eigen::MatrixXd W0 = rotationZ(1.0) * S0;
    const hs::PolarDecomposition p0 = hs::polarDecompose(W0);
    QVERIFY((p0.Q * p0.Sigma - W0).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((p0.Q.transpose() * p0.Q - Eigen::Matrix3d::Identity()).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((p0.Sigma - p0.Sigma.transpose()).cwiseAbs().maxCoeff() < 1e-15);
    Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(p0.Sigma);
    QVERIFY(eig.eigenvalues().minCoeff() > -1e-12);
    QVERIFY((p0.Sigma - S0).cwiseAbs().maxCoeff() < 1e-12);  // Σ = (WᵀW)^½ is unique even when W is singular

    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::polarDecompose(Eigen::MatrixXd::Ones(2, 3)));
  }

  void ltvLossFallsOnlyThetaLearns() {
    const hs::Transformer m = hs::test::tinyLlama(11);
    // Eight prompts with one answer the random model does not predict.
    std::vector<hs::Prompt> train;
    for (int i = 0; i < 8; ++i)
      train.push_back(handPrompt({1, 3 + i, 20 + i, 7}, 40));
    const at::Tensor woBefore = m.weights().layers[2].wo.clone();

    // One training step by hand: θ is the only tensor that receives a gradient.
    {
      at::Tensor theta = at::zeros({m.config().d_model}).requires_grad_(true);  // [d_model]
      const hs::PaddedBatch pb = hs::padPrompts(train, 0, train.size(), 0);
      hs::RunRequest req;
      req.tokens = pb.tokens;
      req.attention_mask = pb.attention_mask;
      req.last_logits_only = true;
      req.interventions = {hs::ltvInjection(1, theta)};
      const at::Tensor logp = at::log_softmax(m.run(req).logits.select(1, -1), -1);  // [batch, vocab]
      logp.select(1, 40).sum().neg().backward();
      QVERIFY(theta.grad().defined());
      QVERIFY(theta.grad().abs().max().item<double>() > 0);
      int weights = 0;
      hs::forEachWeight(m.weights(), [&](const at::Tensor& w) {
        if (!w.defined()) return;
        ++weights;
        QVERIFY(!w.requires_grad());
        QVERIFY(!w.grad().defined());
      });
      QVERIFY(weights > 10);
    }

    hs::LtvTrainOptions o;
    o.steps = 80;
    o.lr = 2e-2;
    o.batch = 4;
    const hs::LtvTraining t = hs::trainLtv(m, train, {}, 1, o);
    QCOMPARE(t.steps_run, 80);
    QCOMPARE(static_cast<int>(t.loss.size()), 80);
    const double first = (t.loss[0] + t.loss[1]) / 2, last = (t.loss[78] + t.loss[79]) / 2;
    qInfo("tiny model LTV loss: %.3f -> %.3f", first, last);
    QVERIFY2(last < 0.6 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    QVERIFY(t.theta.sizes().vec() == std::vector<int64_t>{m.config().d_model});
    QVERIFY(!t.theta.requires_grad());
    QVERIFY(at::equal(woBefore, m.weights().layers[2].wo));  // the model is frozen

    // Early stop: `patience` validations without a better (accuracy, loss) end the run and keep the best θ,
    // the one validated `patience` evaluations before the end.
    hs::LtvTrainOptions e = o;
    e.steps = 400;
    e.eval_every = 5;
    e.patience = 1;
    // The valid prompts ask for another answer than training teaches, so the valid loss stops improving.
    std::vector<hs::Prompt> valid;
    for (int i = 0; i < 8; ++i)
      valid.push_back(handPrompt({1, 3 + i, 20 + i, 7}, 41));
    const hs::LtvTraining te = hs::trainLtv(m, train, valid, 1, e);
    QVERIFY(te.early_stopped);
    QVERIFY(te.steps_run < 400);
    QCOMPARE(te.best_step, te.steps_run - e.patience * e.eval_every);
    QCOMPARE(te.best_valid_accuracy, *std::max_element(te.valid_accuracy.begin(), te.valid_accuracy.end()));
    const hs::LtvTraining again = hs::trainLtv(m, train, valid, 1, e);  // seeded: the same run again
    QVERIFY(at::equal(again.theta, te.theta));
  }

  void ovReconstructionEqualsPerHeadSum() {
    const hs::Transformer m = hs::test::tinyLlama(5);  // 3 layers, 4 query heads over 2 kv heads
    const hs::ModelConfig& c = m.config();
    at::manual_seed(3);
    const at::Tensor theta = at::randn({c.d_model});  // [d_model]
    const int G = c.n_heads / c.n_kv_heads;

    // Hand sum over l' > l of W_O^{l',k} (W_V^{kv(k)} θ), kv(k) = k / G, with plain loops.
    auto handSum = [&](int first) {
      std::vector<double> out(static_cast<size_t>(c.d_model), 0.0);
      for (int l = first; l < c.n_layers; ++l) {
        const at::Tensor wv = m.weights().layers[l].wv.to(at::kDouble),
                         wo = m.weights().layers[l].wo.to(at::kDouble);
        const at::Tensor th = theta.to(at::kDouble);
        auto V = wv.accessor<double, 2>();
        auto O = wo.accessor<double, 2>();
        auto T = th.accessor<double, 1>();
        for (int k = 0; k < c.n_heads; ++k)
          for (int j = 0; j < c.d_head; ++j) {
            double v = 0;  // value coordinate j of head k
            for (int i = 0; i < c.d_model; ++i)
              v += V[(k / G) * c.d_head + j][i] * T[i];
            for (int o = 0; o < c.d_model; ++o)
              out[static_cast<size_t>(o)] += O[o][k * c.d_head + j] * v;
          }
      }
      return at::tensor(out, at::kDouble);
    };
    for (int layer = 0; layer < c.n_layers; ++layer) {
      const at::Tensor got = hs::ovReconstruction(m, theta, layer).to(at::kDouble);
      QVERIFY2(hs::test::maxAbsDiff(got, handSum(layer + 1)) < 1e-4,
               qPrintable(QString("layer %1").arg(layer)));
      const at::Tensor incl = hs::ovReconstruction(m, theta, layer, true).to(at::kDouble);
      QVERIFY(hs::test::maxAbsDiff(incl, handSum(layer)) < 1e-4);
    }
    QCOMPARE(hs::ovReconstruction(m, theta, c.n_layers - 1).abs().max().item<double>(), 0.0);

    // The engine agrees: on a one-token prompt each head attends only to itself, so hook_result of
    // head k is W_O^k W_V^{kv(k)} RMSNorm(resid_pre) — the OV image of the normed residual.
    hs::RunRequest req;
    req.tokens = hs::test::row({9});
    for (int l = 0; l < c.n_layers; ++l)
      req.capture.insert(hs::residPre(l)), req.capture.insert(hs::attnResult(l));
    const hs::RunResult r = m.run(req);
    for (int l = 0; l < c.n_layers; ++l) {
      const at::Tensor x = r.cache.at(hs::residPre(l))[0][0];  // [d_model]
      const at::Tensor normed =
          x * at::rsqrt(x.pow(2).mean() + c.norm_eps) * m.weights().layers[l].attn_norm_w;  // [d_model]
      const at::Tensor img = hs::headOvImages(m, normed)[l];                                // [head, d_model]
      const at::Tensor engine = r.cache.at(hs::attnResult(l))[0][0];                        // [head, d_model]
      QVERIFY2(hs::test::maxAbsDiff(img, engine) < 1e-4, qPrintable(QString("layer %1").arg(l)));
    }
  }

  void toyLtvBeatsBaselines() {
    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    qInfo(
        "toy antonym_a, layer %d: LTV %.3f, vanilla TV %.3f, TV add %.3f, FV %.3f, zero-shot %.3f, ICL %.3f",
        s["layer"].get<int>(), s["ltv_accuracy"].get<double>(), s["tv_accuracy"].get<double>(),
        s["tv_add_accuracy"].get<double>(), s["fv_accuracy"].get<double>(),
        s["zero_shot_accuracy"].get<double>(), s["icl_accuracy"].get<double>());
    qInfo(
        "  OV reconstruction %.3f; key heads %s ablated %.3f vs random %.3f; cos(θ,Qθ) %.3f stretch %.3f "
        "(fit R² %.3f); LTV steps %d (best %d, valid %.3f)",
        s["ov_reconstruction_accuracy"].get<double>(), s["key_heads"].get<std::string>().c_str(),
        s["key_ablation_accuracy"].get<double>(), s["random_ablation_accuracy"].get<double>(),
        s["cos_theta_Qtheta"].get<double>(), s["stretch"].get<double>(), s["propagation_r2"].get<double>(),
        s["ltv_steps_run"].get<int>(), s["ltv_best_step"].get<int>(), s["ltv_valid_accuracy"].get<double>());
    const double ltv = s["ltv_accuracy"], tv = s["tv_accuracy"], fv = s["fv_accuracy"],
                 zs = s["zero_shot_accuracy"];
    // Strictly better, unless LTV is already at 100 % (a tie at the ceiling).
    QVERIFY2(ltv > tv || (ltv == 1.0 && tv == 1.0), "LTV should beat vanilla TV at the middle layer");
    // LTV vs FV: at least as good (the shipped toy model with seed 1: LTV 0.91 vs FV 0.72 at the middle
    // layer; a tie is allowed because a model can put the FV at the ceiling too).
    qInfo("LTV - FV at the middle layer: %+.3f", ltv - fv);
    QVERIFY2(ltv >= fv, "LTV should be at least as accurate as the FV at the middle layer");
    QVERIFY2(ltv > zs + 0.2, "LTV should lift zero-shot accuracy clearly");

    // The results a user opens: ids, shapes, series.
    QVERIFY(out.run.method == "ltv");
    QCOMPARE(out.run.curves.size(), size_t(2));
    const hs::Curve& acc = out.run.curves[0];
    QVERIFY(acc.id == "ltv.accuracy_vs_layer");
    const int mid = s["layer"];
    QCOMPARE(seriesAt(acc, "ltv", mid), ltv);
    for (const char* name : {"tv_replace", "tv_add", "fv", "zero_shot", "icl"})
      QVERIFY2(!std::isnan(seriesAt(acc, name, mid)), name);
    const hs::Curve& rot = out.run.curves[1];
    QVERIFY(rot.id == "ltv.rotation_stretch");
    const double cosQ = seriesAt(rot, "cos_theta_Qtheta", mid), stretch = seriesAt(rot, "stretch", mid);
    QVERIFY(cosQ >= -1.0 - 1e-9 && cosQ <= 1.0 + 1e-9);
    QVERIFY(stretch > 0);
    QVERIFY(out.run.grids[0].id == "ltv.key_heads");
    QCOMPARE(out.run.grids[0].layers(), 4);
    QCOMPARE(out.run.grids[0].heads(), 8);
    QVERIFY(out.run.grids[0].values.minCoeff() >= 0);
    QVERIFY(out.run.tables[0].id == "ltv.key_head_ablation");
    QVERIFY(out.run.grids[0].provenance.options.contains("steps"));
    QVERIFY(out.run.grids[0].provenance.task == "toy:antonym_a");
    QVERIFY(out.tensors.count("ltv-1/theta_l" + std::to_string(mid)));
    QVERIFY(out.tensors.at("ltv-1/W").sizes().vec() == (std::vector<int64_t>{128, 128}));
  }

  void sessionRoundTrip() {
    const hs::AnalysisOutput& out = toyRun();
    hs::Session s;
    s.model = {{"path", toyPath_}};
    s.runs = {out.run};
    s.tensors = out.tensors;
    const std::string path = (std::filesystem::temp_directory_path() / "test_ltv_roundtrip.hscope").string();
    hs::saveSession(path, s);
    const hs::Session back = hs::loadSession(path);
    std::filesystem::remove(path);
    QCOMPARE(back.runs.size(), size_t(1));
    QVERIFY(nlohmann::json(back.runs[0]).dump() == nlohmann::json(out.run).dump());
    QCOMPARE(back.tensors.size(), out.tensors.size());
    for (const auto& [name, t] : out.tensors) {
      QVERIFY2(back.tensors.count(name), name.c_str());
      QVERIFY2(at::equal(back.tensors.at(name), t), name.c_str());
    }
  }
};

QTEST_GUILESS_MAIN(TestLtv)
#include "test_ltv.moc"
