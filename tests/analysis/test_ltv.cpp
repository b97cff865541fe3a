// LTV (learned task vectors) and its mechanism views.
// - Polar decomposition: a known rotation × SPD matrix gives back its factors; Q is orthogonal, Σ symmetric
//   PSD and QΣ = W also for a singular W; rotation / stretch of hand-picked θ; a tall matrix too.
// - Injection: θ [layers, slots, d] becomes one Add per layer at the chosen site and positions, equal to
//   hand-written residual edits; extracted vectors fill every slot.
// - Training: the loss falls on a random GQA model, θ is the only tensor with a gradient, the weights
//   are unchanged; several positions and layers train one θ per slot.
// - OV reconstruction equals a hand-written per-head sum over the layers after the site (GQA kv-head
//   mapping), and each head's OV image of a normed residual equals the engine's hook_result on a one-token
//   prompt (attention = 1 on itself); the MLP control equals the engine's hook_mlp_out of a normed input and
//   a hand sum over the later layers (SwiGLU and a biased GELU MLP).
// - Linear propagation: the subspace fit recovers a known linear map (exactly on span(B); with r = d its
//   rotation and stretch are the full polar decomposition's), also at d = 4096 with 64 directions; the
//   model's propagation from the output of the last layer is the identity.
// - Key-head saliency is NaN before the site and the key / random heads all lie after it.
// - Toy model, antonym_a, all vectors at the output of the middle layer: LTV beats vanilla TV, additive TV,
//   the FV and zero-shot by stated margins below the measured gaps (the FV beats zero-shot), in every
//   zero-shot injection configuration too; ablating the key heads takes θ's effect away at least as much as
//   random heads; the propagation fit's R², rotation and stretch lie in bands around the measured values;
//   the valid, test, OV / MLP reconstruction and mean (corpus) ablation accuracies are recomputed from the
//   run's recorded prompts and tensors at the site the run names; every mean answer probability has its
//   bootstrap interval over the test prompts (recomputed from each prompt's p(y*)) and the random key-head
//   sets' mean row its sd and t interval; the run survives a session round trip.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <Eigen/Dense>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>

#include "../engine/engine_fixtures.h"
#include "analysis/methods/ltv.h"
#include "analysis/methods/ltv_mechanism.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "model/mlp.h"
#include "results/intervals.h"
#include "results/results_json.h"
#include "results/table_columns.h"
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

// The prompts of a recorded set, as evaluation prompts (ids, N, first answer token).
std::vector<hs::Prompt> recorded(const hs::AnalysisRun& run, const std::string& set) {
  std::vector<hs::Prompt> out;
  for (const hs::PromptRecord& r : run.prompts)
    if (r.set == set)
      out.push_back(handPrompt({r.ids.begin(), r.ids.end()}, static_cast<int>(r.answer_ids.at(0))));
  return out;
}

const hs::Table& tableOf(const hs::AnalysisRun& run, const std::string& id) {
  const hs::Table* t = hs::test::findTable(run, id);
  if (!t) throw hs::Error("no table " + id);
  return *t;
}

// A numeric cell of the table row whose first cell is `row`.
double cell(const hs::Table& t, const std::string& row, const std::string& column) {
  const size_t col = static_cast<size_t>(hs::columnIndex(t, column));  // a missing column: at() throws
  for (const auto& r : t.rows)
    if (r.at(0).get<std::string>() == row) return r.at(col).get<double>();
  return std::nan("");
}

Eigen::MatrixXd toEigen(const at::Tensor& t) {
  const at::Tensor c = t.to(at::kDouble).contiguous();  // [rows, cols]
  Eigen::MatrixXd m(c.size(0), c.size(1));
  for (int64_t i = 0; i < c.size(0); ++i)
    for (int64_t j = 0; j < c.size(1); ++j)
      m(i, j) = c[i][j].item<double>();
  return m;
}

}  // namespace

class TestLtv : public QObject {
  Q_OBJECT

  std::optional<hs::AnalysisOutput> toyRun_;
  std::string toyPath_;
  std::optional<hs::LoadedModel> toy_;

  const hs::LoadedModel& toy() {
    if (!toy_) toy_ = hs::loadModel("toy");
    return *toy_;
  }

  // The toy analysis at the middle layer, computed once (the toy checks and the round trip).
  const hs::AnalysisOutput& toyRun() {
    if (!toyRun_) {
      const hs::LoadedModel& m = toy();
      toyPath_ = m.path;
      hs::TaskSpec spec;
      spec.dataset = "toy:antonym_a";
      spec.shots = 10;
      spec.n_prompts = 54;  // the whole test split
      spec.seed = 1;
      hs::LtvOptions o;  // site: the output of the layer (the default)
      o.layers = {m.config.n_layers / 2};
      o.tv_kind = "both";  // the additive vanilla TV (the default) and the substituted one
      // The default schedule (1000 steps, lr 5e-3, validation every 25 steps, patience 8).
      o.train_prompts = 179;  // the whole train split
      o.valid_prompts = 23;
      o.icl_prompts = 40;
      o.fv_prompts = 10;
      // The propagation fit: the full 128 × 128 W (the default, r = d).
      o.prop_prompts = 2;
      o.random_sets = 3;
      o.ablate_mean = true;  // the corpus mean (the default source)
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

    // A tall W (3 x 2, the map of a 2-dimensional subspace): Q has orthonormal columns, QΣ = W.
    const Eigen::MatrixXd T = W.leftCols(2);
    const hs::PolarDecomposition pt = hs::polarDecompose(T);
    QVERIFY((pt.Q.transpose() * pt.Q - Eigen::Matrix2d::Identity()).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((pt.Q * pt.Sigma - T).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::polarDecompose(Eigen::MatrixXd::Ones(2, 3)));
  }

  void injectionIsOneSiteForEveryVector() {
    const hs::Transformer m = hs::test::tinyLlama(3);
    const hs::ModelConfig& c = m.config();
    at::manual_seed(5);
    const at::Tensor tokens = hs::test::row({1, 7, 9, 12, 4, 30});  // [1, pos]
    auto logits = [&](const std::vector<hs::Intervention>& ivs) {
      hs::RunRequest req;
      req.tokens = tokens;
      req.interventions = ivs;
      return m.run(req).logits;  // [1, pos, vocab]
    };
    // "post" at layer 1 is the output of layer 1, the residual entering layer 2; "pre" enters layer 1.
    const at::Tensor v = at::randn({c.d_model});  // [d_model]
    const hs::Injection post = {{1}, "post", {-1}};
    QVERIFY(post.siteOf(1) == hs::residPost(1));
    QVERIFY(hs::Injection({{1}, "pre", {-1}}).siteOf(1) == hs::residPre(1));
    QVERIFY(hs::test::maxAbsDiff(logits(hs::injectionInterventions(post, hs::fillSlots(post, v))),
                                 logits({hs::addToResidual(hs::residPre(2), v)})) < 1e-5);
    QVERIFY(hs::test::maxAbsDiff(logits(hs::injectionInterventions(post, hs::fillSlots(post, v))),
                                 logits({hs::addToResidual(hs::residPre(1), v)})) > 1e-3);
    QVERIFY(hs::firstReadingLayer(hs::residPost(1)) == 2 && hs::firstReadingLayer(hs::residPre(1)) == 1);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::injectionSite("mid", 1));

    // Several layers and positions: θ[i][j] lands at layer layers[i], position positions[j].
    const hs::Injection many = {{0, 2}, "post", {-3, -1}};
    QCOMPARE(many.slots(), int64_t(2));
    const at::Tensor theta = at::randn({2, 2, c.d_model});  // [layers, slots, d_model]
    std::vector<hs::Intervention> hand;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)
        hand.push_back(hs::addToResidual(hs::residPost(many.layers[i]), theta[i][j], {many.positions[j]}));
    QVERIFY(hs::test::maxAbsDiff(logits(hs::injectionInterventions(many, theta)), logits(hand)) < 1e-5);
    // Every position, one shared vector.
    const hs::Injection all = {{1}, "pre", {}};
    QVERIFY(hs::test::maxAbsDiff(logits(hs::injectionInterventions(all, hs::fillSlots(all, v))),
                                 logits({hs::addToResidual(hs::residPre(1), v, {})})) < 1e-5);
    // The vanilla TV replaces: every slot holds the layer's own vector.
    const at::Tensor perLayer = at::randn({2, c.d_model});  // [layers, d_model]
    const at::Tensor filled = hs::fillSlots(many, perLayer);
    QVERIFY(at::equal(filled[1][0], perLayer[1]) && at::equal(filled[1][1], perLayer[1]));
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::injectionInterventions(many, at::zeros({2, 1, c.d_model})));
  }

  void ltvLossFallsOnlyThetaLearns() {
    const hs::Transformer m = hs::test::tinyLlama(11);
    // Eight prompts with one answer the random model does not predict.
    std::vector<hs::Prompt> train;
    for (int i = 0; i < 8; ++i)
      train.push_back(handPrompt({1, 3 + i, 20 + i, 7}, 40));
    const at::Tensor woBefore = m.weights().layers[2].wo.clone();
    const hs::Injection at1 = {{1}, "pre", {-1}};

    // One training step by hand: θ is the only tensor that receives a gradient.
    {
      at::Tensor theta = at::zeros({1, 1, m.config().d_model}).requires_grad_(true);  // [1, 1, d_model]
      const hs::PaddedBatch pb = hs::padPrompts(train, 0, train.size(), 0);
      hs::RunRequest req;
      req.tokens = pb.tokens;
      req.attention_mask = pb.attention_mask;
      req.last_logits_only = true;
      req.interventions = hs::injectionInterventions(at1, theta);
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
    const hs::LtvTraining t = hs::trainLtv(m, train, {}, at1, o);
    QCOMPARE(t.steps_run, 80);
    QCOMPARE(static_cast<int>(t.loss.size()), 80);
    // Measured 5.05 -> 2.57 (ratio 0.51); a θ that did not learn keeps the ratio near 1.
    const double first = (t.loss[0] + t.loss[1]) / 2, last = (t.loss[78] + t.loss[79]) / 2;
    QVERIFY2(last < 0.6 * first, qPrintable(QString("loss %1 -> %2").arg(first).arg(last)));
    QVERIFY(t.theta.sizes().vec() == (std::vector<int64_t>{1, 1, m.config().d_model}));
    QVERIFY(!t.theta.requires_grad());
    QVERIFY(at::equal(woBefore, m.weights().layers[2].wo));  // the model is frozen

    // Several layers and positions: one θ per slot, all of them trained.
    const hs::Injection many = {{0, 1}, "post", {-2, -1}};
    const hs::LtvTraining tm = hs::trainLtv(m, train, {}, many, o);
    QVERIFY(tm.theta.sizes().vec() == (std::vector<int64_t>{2, 2, m.config().d_model}));
    // Measured 5.00 -> 1.38 (ratio 0.28): four vectors fit the one answer faster than one.
    const double firstM = (tm.loss[0] + tm.loss[1]) / 2, lastM = (tm.loss[78] + tm.loss[79]) / 2;
    QVERIFY2(lastM < 0.4 * firstM, qPrintable(QString("loss %1 -> %2").arg(firstM).arg(lastM)));
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 2; ++j)  // each slot moved away from its start in (−0.1, 0.1)
        QVERIFY(tm.theta[i][j].abs().max().item<double>() > 0.1);

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
    const hs::LtvTraining te = hs::trainLtv(m, train, valid, at1, e);
    QVERIFY(te.early_stopped);
    QVERIFY(te.steps_run < 400);
    QCOMPARE(te.best_step, te.steps_run - e.patience * e.eval_every);
    QCOMPARE(te.best_valid_accuracy, *std::max_element(te.valid_accuracy.begin(), te.valid_accuracy.end()));
    const hs::LtvTraining again = hs::trainLtv(m, train, valid, at1, e);  // seeded: the same run again
    QVERIFY(at::equal(again.theta, te.theta));
  }

  void ovReconstructionEqualsPerHeadSum() {
    const hs::Transformer m = hs::test::tinyLlama(5);  // 3 layers, 4 query heads over 2 kv heads
    const hs::ModelConfig& c = m.config();
    at::manual_seed(3);
    const at::Tensor theta = at::randn({c.d_model});  // [d_model]
    const int G = c.n_heads / c.n_kv_heads;

    // Hand sum over l' >= first of W_O^{l',k} (W_V^{kv(k)} x_{l'}), kv(k) = k / G, with plain loops; x_{l'}
    // is θ read through layer l''s attention norm, RMSNorm(θ) ⊙ g_{l'} (the default), or θ itself (raw).
    auto handSum = [&](int first, bool raw) {
      std::vector<double> out(static_cast<size_t>(c.d_model), 0.0);
      for (int l = first; l < c.n_layers; ++l) {
        const at::Tensor wv = m.weights().layers[l].wv.to(at::kDouble),
                         wo = m.weights().layers[l].wo.to(at::kDouble);
        const at::Tensor t64 = theta.to(at::kDouble);
        const at::Tensor th = raw ? t64
                                  : t64 * at::rsqrt(t64.pow(2).mean() + c.norm_eps) *
                                        m.weights().layers[l].attn_norm_w.to(at::kDouble);
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
      // Added to the output of `layer`, θ is read by the heads of the layers after it ...
      const at::Tensor post = hs::ovReconstruction(m, theta, hs::residPost(layer)).to(at::kDouble);
      QVERIFY2(hs::test::maxAbsDiff(post, handSum(layer + 1, false)) < 1e-4,
               qPrintable(QString("layer %1").arg(layer)));
      // ... added to its input, also by the heads of `layer` itself.
      const at::Tensor pre = hs::ovReconstruction(m, theta, hs::residPre(layer)).to(at::kDouble);
      QVERIFY(hs::test::maxAbsDiff(pre, handSum(layer, false)) < 1e-4);
      // recon_norm none: θ itself, the earlier definition.
      const at::Tensor raw =
          hs::ovReconstruction(m, theta, hs::residPre(layer), hs::ReconNorm::Raw).to(at::kDouble);
      QVERIFY(hs::test::maxAbsDiff(raw, handSum(layer, true)) < 1e-4);
    }
    QCOMPARE(hs::ovReconstruction(m, theta, hs::residPost(c.n_layers - 1)).abs().max().item<double>(), 0.0);

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

  void mlpReconstructionEqualsEngineAndHandSum() {
    // SwiGLU without biases (Llama) and a GELU MLP with biases (GPT-2 style, the bias removed by − MLP(0)).
    hs::ModelConfig gelu = hs::test::tinyLlamaConfig();
    gelu.mlp = hs::MlpKind::Gelu;
    gelu.activation = "gelu_new";
    gelu.mlp_bias = true;
    for (const hs::ModelConfig& cfg : {hs::test::tinyLlamaConfig(), gelu}) {
      const hs::Transformer m(cfg, hs::test::randomWeights(cfg, 8));
      const hs::ModelConfig& c = m.config();
      // The engine's hook_mlp_out is the MLP of its normed input resid_pre + attn_out.
      hs::RunRequest req;
      req.tokens = hs::test::row({3, 14, 15});
      for (int l = 0; l < c.n_layers; ++l)
        for (hs::Site s : {hs::residPre(l), hs::attnOut(l), hs::mlpOut(l)})
          req.capture.insert(s);
      const hs::RunResult r = m.run(req);
      for (int l = 0; l < c.n_layers; ++l) {
        const at::Tensor mid = r.cache.at(hs::residPre(l))[0] + r.cache.at(hs::attnOut(l))[0];  // [pos, d]
        const at::Tensor normed =
            mid * at::rsqrt(mid.pow(2).mean(-1, true) + c.norm_eps) * m.weights().layers[l].mlp_norm_w;
        QVERIFY(hs::test::maxAbsDiff(hs::mlpForward(c, m.weights().layers[l], normed),
                                     r.cache.at(hs::mlpOut(l))[0]) < 1e-4);
      }
      // θ_MLP after the output of layer 0 = Σ_{l ≥ 1} MLP_l(m_l(θ)) − MLP_l(m_l(0)), written out by hand:
      // m_l the MLP's input norm RMSNorm(·) ⊙ g_l (the default; m_l(0) = 0) or the identity (raw).
      at::manual_seed(4);
      const at::Tensor theta = at::randn({c.d_model});  // [d_model]
      for (bool raw : {false, true}) {
        at::Tensor hand = at::zeros({c.d_model});
        for (int l = 1; l < c.n_layers; ++l) {
          const hs::LayerWeights& w = m.weights().layers[l];
          const at::Tensor x =
              raw ? theta : theta * at::rsqrt(theta.pow(2).mean() + c.norm_eps) * w.mlp_norm_w;  // [d_model]
          at::Tensor up = at::matmul(w.w_up, x), up0 = at::zeros({c.d_mlp});
          if (w.b_up.defined()) up = up + w.b_up, up0 = up0 + w.b_up;
          at::Tensor h =
              cfg.mlp == hs::MlpKind::SwiGLU ? at::silu(at::matmul(w.w_gate, x)) * up : at::gelu(up, "tanh");
          at::Tensor h0 = cfg.mlp == hs::MlpKind::SwiGLU ? at::zeros({c.d_mlp}) : at::gelu(up0, "tanh");
          hand += at::matmul(w.w_down, h) - at::matmul(w.w_down, h0);
        }
        const at::Tensor got = raw ? hs::mlpReconstruction(m, theta, hs::residPost(0), hs::ReconNorm::Raw)
                                   : hs::mlpReconstruction(m, theta, hs::residPost(0));
        QVERIFY(hs::test::maxAbsDiff(got, hand) < 1e-4);
        QVERIFY(hand.abs().max().item<double>() > 1e-2);  // not a vacuous zero
      }
      QCOMPARE(hs::mlpReconstruction(m, theta, hs::residPost(c.n_layers - 1)).abs().max().item<double>(),
               0.0);
    }
  }

  void propagationFitRecoversAKnownLinearMap() {
    // Δh = A v with a known A (d = 24): on span(B) the fit is M = A B exactly, B orthonormal with B[:,0] ∥ θ.
    const int d = 24;
    at::manual_seed(9);
    const at::Tensor A = at::randn({d, d}, at::kDouble) / std::sqrt(double(d));  // [d, d]
    const at::Tensor theta = at::randn({d}, at::kDouble);                        // [d]
    const hs::LinearResponse linear = [&](const at::Tensor& V) { return at::matmul(V, A.t()); };
    const Eigen::MatrixXd Ae = toEigen(A);
    const Eigen::VectorXd th = hs::toEigenVector(theta);
    const hs::PropagationFit sub = hs::fitLinearMap(linear, theta, 8, 20, 0.5, 3);
    QCOMPARE(sub.directions, 8);
    QCOMPARE(sub.basis.cols(), Eigen::Index(8));
    QVERIFY((sub.basis.transpose() * sub.basis - Eigen::MatrixXd::Identity(8, 8)).cwiseAbs().maxCoeff() <
            1e-12);
    QVERIFY(std::abs(sub.basis.col(0).dot(th) - th.norm()) < 1e-9);
    QVERIFY((sub.map - Ae * sub.basis).cwiseAbs().maxCoeff() < 1e-9);
    QVERIFY(sub.r2 > 1 - 1e-12);
    // With every direction (r = d) the fit is A itself, and rotation / stretch are A's polar decomposition's.
    const hs::PropagationFit full = hs::fitLinearMap(linear, theta, 1000, 2 * d, 0.5, 3);
    QCOMPARE(full.directions, d);
    QVERIFY((full.W() - Ae).cwiseAbs().maxCoeff() < 1e-9);
    const hs::RotationStretch want = hs::rotationStretch(hs::polarDecompose(Ae), th);
    const hs::RotationStretch got = hs::rotationStretch(full, th);
    QVERIFY(std::abs(got.cos_theta_Qtheta - want.cos_theta_Qtheta) < 1e-9);
    QVERIFY(std::abs(got.stretch - want.stretch) < 1e-9);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::fitLinearMap(linear, theta, 8, 8, 0.5, 3));  // samples <= r

    // d = 4096, 64 directions, 128 responses: A = 0.7 I + u wᵀ never materialised; M = A B recovered.
    const int D = 4096;
    const at::Tensor u = at::randn({D}, at::kDouble), w = at::randn({D}, at::kDouble) / std::sqrt(double(D));
    const at::Tensor big = at::randn({D}, at::kDouble);
    const hs::LinearResponse lowRank = [&](const at::Tensor& V) {
      return 0.7 * V + at::outer(at::matmul(V, w), u);  // [n, D]
    };
    const hs::PropagationFit f = hs::fitLinearMap(lowRank, big, 64, 128, 0.5, 5);
    const Eigen::MatrixXd B = f.basis;  // [D, 64]
    const Eigen::VectorXd ue = hs::toEigenVector(u), we = hs::toEigenVector(w);
    const Eigen::MatrixXd want4096 = 0.7 * B + ue * (we.transpose() * B);  // A B
    QVERIFY((f.map - want4096).cwiseAbs().maxCoeff() < 1e-7);

    // The model's propagation from the output of the last layer is the identity (Δh = v): cos 1, stretch 1.
    const hs::Transformer m = hs::test::tinyLlama(2);
    std::vector<hs::Prompt> prompts = {handPrompt({1, 4, 5}, 6), handPrompt({1, 8, 9, 10}, 6)};
    const at::Tensor th32 = at::randn({m.config().d_model});
    const hs::PropagationFit id =
        hs::fitLinearPropagation(m, prompts, hs::residPost(m.config().n_layers - 1), th32, 8, 16, 0.5, 1);
    QVERIFY((id.map - id.basis).cwiseAbs().maxCoeff() < 1e-5);
    const hs::RotationStretch rs = hs::rotationStretch(id, hs::toEigenVector(th32));
    QVERIFY(std::abs(rs.cos_theta_Qtheta - 1) < 1e-6 && std::abs(rs.stretch - 1) < 1e-5);
    // From the output of layer 0 the response (the later layers run from the captured residual) equals
    // full forwards with v added there.
    const hs::LinearResponse resp = hs::propagationResponse(m, prompts, hs::residPost(0));
    const at::Tensor V = at::randn({3, m.config().d_model}, at::kDouble);  // [n, d]
    const at::Tensor got0 = resp(V);                                       // [n, d]
    auto finalAtN = [&](const std::vector<hs::Intervention>& ivs) {
      const hs::PaddedBatch pb = hs::padPrompts(prompts, 0, prompts.size(), 0);
      hs::RunRequest req;
      req.tokens = pb.tokens;
      req.attention_mask = pb.attention_mask;
      req.capture = {hs::residPost(m.config().n_layers - 1)};
      req.interventions = ivs;
      return m.run(req)
          .cache.at(hs::residPost(m.config().n_layers - 1))
          .select(1, -1)
          .to(at::kDouble)
          .mean(0);
    };
    at::NoGradGuard noGrad;
    const at::Tensor h0 = finalAtN({});
    for (int i = 0; i < 3; ++i) {
      const at::Tensor want0 = finalAtN({hs::addToResidual(hs::residPost(0), V[i].to(at::kFloat))}) - h0;
      QVERIFY(hs::test::maxAbsDiff(got0[i], want0) < 1e-4);
      QVERIFY(want0.norm().item<double>() > 1e-2);
    }
  }

  // Measured on the toy model (antonym_a, the output of layer 2, 54 test prompts): LTV 0.944, substituted
  // vanilla TV 0.074, additive vanilla TV (the default kind) 0.148, FV 0.722, zero-shot 0.352, ICL 0.981. The
  // bounds keep a margin of at least 0.05 below each measured gap; an LTV that did not train (θ ≈ its U(−0.1,
  // 0.1) start) stays at zero-shot and fails every one of them, an FV of the wrong heads falls to zero-shot
  // or below.
  void toyLtvBeatsBaselines() {
    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    const double ltv = s["ltv_accuracy"], tvReplace = s["tv_replace_accuracy"], tvAdd = s["tv_add_accuracy"],
                 fv = s["fv_accuracy"], zs = s["zero_shot_accuracy"], icl = s["icl_accuracy"];
    QVERIFY2(ltv >= 0.85, qPrintable(QString("LTV accuracy %1").arg(ltv)));
    QVERIFY2(ltv >= zs + 0.4, qPrintable(QString("LTV %1, zero-shot %2").arg(ltv).arg(zs)));
    QVERIFY2(ltv >= tvReplace + 0.5,
             qPrintable(QString("LTV %1, substituted vanilla TV %2").arg(ltv).arg(tvReplace)));
    QVERIFY2(ltv >= tvAdd + 0.5, qPrintable(QString("LTV %1, additive vanilla TV %2").arg(ltv).arg(tvAdd)));
    QVERIFY2(ltv >= fv + 0.1, qPrintable(QString("LTV %1, FV %2").arg(ltv).arg(fv)));
    // The FV carries the task into zero-shot prompts (FV paper), and the toy model does the task in context.
    QVERIFY2(fv >= zs + 0.2, qPrintable(QString("FV %1, zero-shot %2").arg(fv).arg(zs)));
    QVERIFY2(icl >= 0.9 && icl >= zs + 0.4, qPrintable(QString("ICL %1, zero-shot %2").arg(icl).arg(zs)));

    // Training: the default schedule ran to its end (the valid split solved, its margin still growing), and
    // the recorded valid accuracy is θ's own on the recorded valid prompts (measured 1.0 = 23 / 23).
    QCOMPARE(s["ltv_steps_run"].get<int>(), 1000);
    QVERIFY(s["ltv_best_step"].get<int>() > 0 && s["ltv_best_step"].get<int>() <= 1000);
    const int mid = s["layer"];
    const hs::Site site = hs::Site::parse(s["site"].get<std::string>());
    const at::Tensor theta = out.tensors.at("ltv-1/theta_l" + std::to_string(mid));  // [d_model]
    hs::IclEvalOptions eo;
    eo.interventions = {hs::addToResidual(site, theta)};
    const double valid = hs::evaluateIcl(*toy().model, recorded(out.run, "valid"), eo).accuracy;
    QCOMPARE(s["ltv_valid_accuracy"].get<double>(), valid);
    QVERIFY2(valid >= 0.9, qPrintable(QString("valid accuracy %1").arg(valid)));

    // Key heads: ablating them takes most of what θ adds (measured 0.167 against LTV's 0.944). Random heads
    // after the site come from the live heads only (issue 39, item 1): on the toy model that pool is the
    // three other live heads of layer 3 (3.2, 3.5, 3.7; 3.1 and 3.4 write nothing), and ablating them takes
    // θ's effect as well (measured 0.093): against the other live heads after the site the key heads are not
    // singled out. Key heads picked by the opposite ranking would leave θ's effect standing and fail.
    const double keyAbl = s["key_ablation_accuracy"], randAbl = s["random_ablation_accuracy"];
    QVERIFY2(keyAbl <= ltv - 0.5, qPrintable(QString("key-head ablation %1, LTV %2").arg(keyAbl).arg(ltv)));
    QVERIFY2(randAbl <= ltv - 0.5,
             qPrintable(QString("random live heads after the site %1, LTV %2").arg(randAbl).arg(ltv)));
    QVERIFY(!s["key_heads"].get<std::string>().empty());

    // Propagation from the output of layer 2 to the last layer, the full 128 × 128 W (the default): close to
    // linear (measured R² 0.993), θ turned (measured cos 0.659) and stretched (measured 3.19). The bands
    // (cos 0.3–0.8, stretch 1.9–4.5) hold both this fit and the one on r = 48 of the 128 directions (cos
    // 0.558, stretch 3.19, R² 0.982); a propagation that were the identity (cos 1, stretch 1) or a fit of
    // noise (R² near 0) falls outside.
    const double cosQ = s["cos_theta_Qtheta"], stretch = s["stretch"], r2 = s["propagation_r2"];
    qInfo("propagation: cos(θ, Qθ) %.3f, stretch %.3f, R² %.4f", cosQ, stretch, r2);
    QVERIFY2(r2 >= 0.9 && r2 <= 1.0 + 1e-9, qPrintable(QString("R² %1").arg(r2)));
    QVERIFY2(cosQ >= 0.3 && cosQ <= 0.8, qPrintable(QString("cos(θ, Qθ) %1").arg(cosQ)));
    QVERIFY2(stretch >= 1.9 && stretch <= 4.5, qPrintable(QString("stretch %1").arg(stretch)));

    // The results a user opens: ids, shapes, series, and the one site every vector entered, named.
    QVERIFY(out.run.method == "ltv");
    QCOMPARE(s["site"].get<std::string>(), hs::residPost(mid).name());
    QVERIFY(out.run.options.at("injection_site").get<std::string>().find("hook_resid_post") !=
            std::string::npos);
    QCOMPARE(out.run.curves.size(), size_t(2));
    const hs::Curve& acc = out.run.curves[0];
    QVERIFY(acc.id == "ltv.accuracy_vs_layer");
    QVERIFY2(acc.name.find("hook_resid_post") != std::string::npos, acc.name.c_str());
    QVERIFY2(acc.x_label.find("hook_resid_post") != std::string::npos, acc.x_label.c_str());
    QCOMPARE(seriesAt(acc, "ltv", mid), ltv);
    QCOMPARE(seriesAt(acc, "tv_replace", mid), tvReplace);
    QCOMPARE(seriesAt(acc, "tv_add", mid), tvAdd);
    QCOMPARE(seriesAt(acc, "fv", mid), fv);
    QCOMPARE(seriesAt(acc, "zero_shot", mid), zs);
    QCOMPARE(seriesAt(acc, "icl", mid), icl);
    const hs::Curve& rot = out.run.curves[1];
    QVERIFY(rot.id == "ltv.rotation_stretch");
    QCOMPARE(seriesAt(rot, "cos_theta_Qtheta", mid), cosQ);
    QCOMPARE(seriesAt(rot, "stretch", mid), stretch);
    QCOMPARE(seriesAt(rot, "fit_r2", mid), r2);
    QCOMPARE(s["propagation_directions"].get<int>(), 128);  // the full W (r = d)
    QVERIFY(out.tensors.at("ltv-1/W_map").sizes().vec() == (std::vector<int64_t>{128, 128}));
    QVERIFY(out.tensors.at("ltv-1/W_basis").sizes().vec() == (std::vector<int64_t>{128, 128}));
    QVERIFY(out.run.grids[0].provenance.options.contains("steps"));
    QVERIFY(out.run.grids[0].provenance.task == "toy:antonym_a");
    QVERIFY(out.tensors.count("ltv-1/theta_l" + std::to_string(mid)));
  }

  void toyKeyHeadsOnlyAfterTheSite() {
    const hs::AnalysisOutput& out = toyRun();
    const int mid = out.run.summary["layer"];
    const hs::HeadGrid& key = out.run.grids[0];
    QVERIFY(key.id == "ltv.key_heads");
    QCOMPARE(key.layers(), 4);
    QCOMPARE(key.heads(), 8);
    // Added to the output of layer `mid`, θ can only be read by the heads of later layers.
    for (int l = 0; l < key.layers(); ++l)
      for (int h = 0; h < key.heads(); ++h)
        QVERIFY2(l <= mid ? std::isnan(key.values(l, h)) : key.values(l, h) >= 0,
                 qPrintable(QString("head %1.%2").arg(l).arg(h)));
    const hs::Table& abl = tableOf(out.run, "ltv.key_head_ablation");
    QVERIFY2(abl.name.find("mean-ablated") != std::string::npos, abl.name.c_str());
    int sets = 0;
    for (const auto& row : abl.rows) {
      const QString heads = QString::fromStdString(row.at(2).get<std::string>());  // "3.5,3.6"
      for (const QString& head : heads.split(',', Qt::SkipEmptyParts))
        QVERIFY2(head.section('.', 0, 0).toInt() > mid, qPrintable(heads));
      sets += heads.isEmpty() ? 0 : 1;
    }
    QCOMPARE(sets, 1 + 3);  // the key set and 3 random sets
    // The corpus mean (the default source) is what mean ablation used, and the run says so.
    QVERIFY(out.run.options.at("mean_source").get<std::string>() == "corpus");
    const std::string source = out.run.options.at("mean_ablation_source");
    // The toy tokenizer cannot read English: its corpus mean is over the toy world's own text, and the run
    // names that (not the WikiText file it did not read).
    QVERIFY2(source.find("toy world") != std::string::npos, source.c_str());
  }

  // Mean ablation of the key heads writes their mean over the toy world's text (the default corpus), not
  // their mean at N of the task's ICL prompts: the table's key-head row is recomputed from the recorded
  // zero-shot prompts, θ at the run's site and the corpus mean.
  void keyHeadMeanAblationUsesTheCorpusMean() {
    const hs::AnalysisOutput& out = toyRun();
    const hs::Transformer& m = *toy().model;
    const int mid = out.run.summary["layer"];
    const hs::Site site = hs::Site::parse(out.run.summary["site"].get<std::string>());
    const at::Tensor theta = out.tensors.at("ltv-1/theta_l" + std::to_string(mid));
    const hs::Table& abl = tableOf(out.run, "ltv.key_head_ablation");
    std::vector<hs::HeadRef> heads;
    for (const auto& row : abl.rows)
      if (row.at(0).get<std::string>() == "ltv_ablate_key")
        for (const QString& h :
             QString::fromStdString(row.at(2).get<std::string>()).split(',', Qt::SkipEmptyParts))
          heads.push_back({h.section('.', 0, 0).toInt(), h.section('.', 1, 1).toInt()});
    QVERIFY(!heads.empty());
    const at::Tensor corpus = hs::meanZ(m, hs::toyCorpusWindows(), hs::ZMean::AllPositions);  // [L, H, dh]
    auto ablated = [&](const at::Tensor& mean) {
      hs::IclEvalOptions eo;
      eo.interventions = {hs::addToResidual(site, theta)};
      for (const hs::Intervention& iv : hs::meanHeads(heads, mean))
        eo.interventions.push_back(iv);
      return hs::evaluateIcl(m, recorded(out.run, "zero_shot"), eo);
    };
    const hs::IclEval want = ablated(corpus);
    const double gotAcc = cell(abl, "ltv_ablate_key", "accuracy");
    const double gotProb = cell(abl, "ltv_ablate_key", "mean_answer_prob");
    const hs::IclEval own =
        ablated(hs::meanZ(m, hs::tokenSeqs(recorded(out.run, "icl_train")), hs::ZMean::LastPosition));
    QCOMPARE(gotAcc, want.accuracy);
    QVERIFY2(
        std::abs(gotProb - want.mean_answer_prob) < 1e-4,
        qPrintable(
            QString("mean answer probability %1, corpus mean %2").arg(gotProb).arg(want.mean_answer_prob)));
    // The task's own mean at N gives another probability (measured 0.0986 against the corpus mean's
    // 0.1031), so the comparison above tells the two sources apart: more than 10 times its tolerance.
    QVERIFY2(
        std::abs(own.mean_answer_prob - want.mean_answer_prob) > 1e-3,
        qPrintable(
            QString("task mean %1, corpus mean %2").arg(own.mean_answer_prob).arg(want.mean_answer_prob)));
  }

  // Measured (accuracy on the 54 test prompts; few_shot on the ICL prompts):
  //   config            LTV    vanilla TV  additive TV  FV     no vector
  //   baseline          0.944  0.074       0.148        0.722  0.352
  //   positions         0.926  0.074       0.204        0.685  0.352
  //   layers            0.944  0.056       0.000        0.111  0.352
  //   layers_positions  0.944  0.056       0.000        0.037  0.352
  //   few_shot          0.981  1.000       0.037        0.111  0.981
  // Every zero-shot configuration's LTV beats no vector by 0.4 and the best extracted vector by 0.15 (the
  // measured gaps are ≥ 0.57 and ≥ 0.24); an untrained θ would sit at the no-vector accuracy.
  void toyInjectionConfigurationsAndControls() {
    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    const hs::Table& cfg = tableOf(out.run, "ltv.injection_configs");
    QCOMPARE(cfg.rows.size(), size_t(5));
    for (const char* row : {"baseline", "positions", "layers", "layers_positions"}) {
      const double l = cell(cfg, row, "ltv"), base = cell(cfg, row, "no_vector");
      const double best =
          std::max({cell(cfg, row, "tv_replace"), cell(cfg, row, "tv_add"), cell(cfg, row, "fv")});
      QCOMPARE(base, s["zero_shot_accuracy"].get<double>());
      QVERIFY2(l >= base + 0.4, qPrintable(QString("%1: LTV %2, no vector %3").arg(row).arg(l).arg(base)));
      QVERIFY2(l >= best + 0.15,
               qPrintable(QString("%1: LTV %2, best extracted vector %3").arg(row).arg(l).arg(best)));
    }
    // The baseline row is the curve's point at the chosen layer.
    QCOMPARE(cell(cfg, "baseline", "ltv"), s["ltv_accuracy"].get<double>());
    QCOMPARE(cell(cfg, "baseline", "tv_replace"), s["tv_replace_accuracy"].get<double>());
    QCOMPARE(cell(cfg, "baseline", "tv_add"), s["tv_add_accuracy"].get<double>());
    QCOMPARE(cell(cfg, "baseline", "fv"), s["fv_accuracy"].get<double>());
    QCOMPARE(cell(cfg, "few_shot", "no_vector"), s["icl_accuracy"].get<double>());
    // LTV trained in the few-shot prompts should not make them worse than plain ICL.
    QVERIFY(cell(cfg, "few_shot", "ltv") >= cell(cfg, "few_shot", "no_vector") - 0.05);

    // The last 5 positions, capped by the shortest zero-shot prompt of the train, valid and test sets (the
    // toy's shortest has 3 tokens); one θ per (layer, position).
    int shortest = 1 << 30;
    for (const char* set : {"train", "valid", "zero_shot"})
      for (const hs::Prompt& p : recorded(out.run, set))
        shortest = std::min(shortest, p.length());
    std::string want;
    for (int k = std::min(5, shortest); k >= 1; --k)
      want += (want.empty() ? "" : ",") + std::to_string(-k);
    std::string positions;
    for (const auto& r : cfg.rows)
      if (r.at(0).get<std::string>() == "positions") positions = r.at(2).get<std::string>();
    QCOMPARE(positions, want);
    const int64_t k = std::min(5, shortest);
    QVERIFY(k >= 2);
    QVERIFY(out.tensors.at("ltv-1/theta_positions").sizes().vec() == (std::vector<int64_t>{1, k, 128}));
    QVERIFY(out.tensors.at("ltv-1/theta_layers").sizes().vec() == (std::vector<int64_t>{4, 1, 128}));
    QVERIFY(out.tensors.at("ltv-1/theta_layers_positions").sizes().vec() ==
            (std::vector<int64_t>{4, k, 128}));

    // OV and MLP reconstruction sit side by side; both accuracies are recomputed from θ and the recorded
    // zero-shot prompts, re-injected at the output of the last layer (ov_inject = final). Measured, θ read
    // through each later layer's input norm (the default): θ_OV 0.259, θ_MLP 0.296, both below zero-shot
    // (0.352): neither carries θ's effect on the toy model (reconstructionIgnoresThetaScale).
    const hs::Table& ov = tableOf(out.run, "ltv.ov_reconstruction");
    const hs::Transformer& m = *toy().model;
    const int mid = s["layer"];
    const hs::Site site = hs::Site::parse(s["site"].get<std::string>());
    const at::Tensor theta = out.tensors.at("ltv-1/theta_l" + std::to_string(mid));  // [d_model]
    auto reinjected = [&](const at::Tensor& v) {
      hs::IclEvalOptions eo;
      eo.interventions = {hs::addToResidual(hs::residPost(m.config().n_layers - 1), v)};
      return hs::evaluateIcl(m, recorded(out.run, "zero_shot"), eo).accuracy;
    };
    const at::Tensor thetaOv = hs::ovReconstruction(m, theta, site);    // [d_model]
    const at::Tensor thetaMlp = hs::mlpReconstruction(m, theta, site);  // [d_model]
    QCOMPARE(cell(ov, "ov_reconstruction", "accuracy"), reinjected(thetaOv));
    QCOMPARE(cell(ov, "mlp_reconstruction", "accuracy"), reinjected(thetaMlp));
    QCOMPARE(cell(ov, "ov_reconstruction", "accuracy"), s["ov_reconstruction_accuracy"].get<double>());
    QCOMPARE(cell(ov, "mlp_reconstruction", "accuracy"), s["mlp_reconstruction_accuracy"].get<double>());
    QCOMPARE(cell(ov, "ltv", "accuracy"), s["ltv_accuracy"].get<double>());
    QCOMPARE(cell(ov, "zero_shot", "accuracy"), s["zero_shot_accuracy"].get<double>());
    const double ovNorm = thetaOv.norm().item<double>(), mlpNorm = thetaMlp.norm().item<double>();
    QVERIFY(std::abs(cell(ov, "ov_reconstruction", "vector_norm") - ovNorm) <= 1e-5 * ovNorm);
    QVERIFY(std::abs(cell(ov, "mlp_reconstruction", "vector_norm") - mlpNorm) <= 1e-5 * mlpNorm);
    QVERIFY(mlpNorm > 0);
  }

  void toyAccuraciesFromTheRecordedPrompts() {
    // Everything needed to recompute the curve at the chosen layer is in the run: its prompts, θ, h_ICL,
    // h_ZS, the FV, and the site it names.
    const hs::AnalysisOutput& out = toyRun();
    const hs::Transformer& m = *toy().model;
    const int mid = out.run.summary["layer"];
    const hs::Site site = hs::Site::parse(out.run.summary["site"].get<std::string>());
    const std::vector<hs::Prompt> zs = recorded(out.run, "zero_shot");
    QCOMPARE(zs.size(), size_t(54));
    QCOMPARE(recorded(out.run, "train").size(), size_t(179));
    QCOMPARE(recorded(out.run, "icl_train").size(), size_t(40));
    QCOMPARE(recorded(out.run, "fv_shuffled").size(), size_t(10));
    QVERIFY(!recorded(out.run, "fewshot_train").empty());
    auto accuracy = [&](const hs::Intervention& iv) {
      hs::IclEvalOptions eo;
      eo.interventions = {iv};
      return hs::evaluateIcl(m, zs, eo).accuracy;
    };
    const hs::Curve& acc = out.run.curves[0];
    const at::Tensor theta = out.tensors.at("ltv-1/theta_l" + std::to_string(mid));
    const at::Tensor hIcl = out.tensors.at("ltv-1/h_icl"), hZs = out.tensors.at("ltv-1/h_zs");
    QCOMPARE(accuracy(hs::addToResidual(site, theta)), seriesAt(acc, "ltv", mid));
    QCOMPARE(accuracy(hs::replaceResidual(site, hIcl[mid])), seriesAt(acc, "tv_replace", mid));
    QCOMPARE(accuracy(hs::addToResidual(site, hIcl[mid] - hZs[mid])), seriesAt(acc, "tv_add", mid));
    QCOMPARE(accuracy(hs::addToResidual(site, out.tensors.at("ltv-1/fv"))), seriesAt(acc, "fv", mid));
  }

  // The vanilla TV is the LTV paper's additive one by default: θ = h_ICL − h_ZS added at the site
  // (arXiv 2509.24169: θ = h^l_{N,ICL} − h^l_N); Hendel et al.'s substituted h_ICL is the option
  // tv_kind substituted. The summary's tv_accuracy is the kind tv_kind names, recomputed from the run's
  // tensors; every curve series, table column and summary key says which kind it is; a default run
  // evaluates the additive one only.
  void vanillaTvIsTheAdditiveOne() {
    QCOMPARE(hs::LtvOptions{}.tv_kind, std::string("additive"));
    QCOMPARE(hs::ltvOptionTable().write(hs::LtvOptions{}).at("tv_kind").get<std::string>(),
             std::string("additive"));
    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    QCOMPARE(s["tv_kind"].get<std::string>(), std::string("both"));
    const int mid = s["layer"];
    const hs::Site site = hs::Site::parse(s["site"].get<std::string>());
    const at::Tensor hIcl = out.tensors.at("ltv-1/h_icl"), hZs = out.tensors.at("ltv-1/h_zs");
    hs::IclEvalOptions eo;
    eo.interventions = {hs::addToResidual(site, hIcl[mid] - hZs[mid])};
    const double additive = hs::evaluateIcl(*toy().model, recorded(out.run, "zero_shot"), eo).accuracy;
    eo.interventions = {hs::replaceResidual(site, hIcl[mid])};
    const double substituted = hs::evaluateIcl(*toy().model, recorded(out.run, "zero_shot"), eo).accuracy;
    // Measured: additive 0.148, substituted 0.074 (distinct, so the check tells the two apart).
    QVERIFY(additive != substituted);
    QCOMPARE(s["tv_accuracy"].get<double>(), additive);
    QCOMPARE(s["tv_add_accuracy"].get<double>(), additive);
    QCOMPARE(s["tv_replace_accuracy"].get<double>(), substituted);
    const hs::Curve& acc = out.run.curves[0];
    QVERIFY2(acc.name.find("tv_add = additive") != std::string::npos &&
                 acc.name.find("tv_replace = substituted") != std::string::npos,
             acc.name.c_str());

    // A run with the defaults (a short schedule, one layer, no configurations): the additive TV only.
    const hs::LoadedModel& m = toy();
    hs::TaskSpec spec;
    spec.dataset = "toy:antonym_a";
    spec.shots = 10;
    spec.n_prompts = 12;
    hs::LtvOptions o;
    o.layers = {2};
    o.layer = 2;
    o.train.steps = 3;
    o.train_prompts = 8;
    o.valid_prompts = 0;
    o.icl_prompts = 8;
    o.fv_prompts = 4;
    o.configs = false;
    o.prop_directions = 4;
    o.prop_prompts = 1;
    o.random_sets = 1;
    const hs::AnalysisOutput d = hs::runLtv(*m.model, *m.tokenizer, spec, o);
    QCOMPARE(d.run.options.at("tv_kind").get<std::string>(), std::string("additive"));
    QCOMPARE(d.run.summary["tv_kind"].get<std::string>(), std::string("additive"));
    QVERIFY(std::isnan(seriesAt(d.run.curves[0], "tv_replace", 2)));  // not evaluated: no series
    QVERIFY(!std::isnan(seriesAt(d.run.curves[0], "tv_add", 2)));
    QCOMPARE(d.run.summary["tv_accuracy"].get<double>(), seriesAt(d.run.curves[0], "tv_add", 2));
    QVERIFY(d.run.summary["tv_replace_accuracy"].is_null());
    const hs::Table& cfg = tableOf(d.run, "ltv.injection_configs");
    QVERIFY(cfg.rows.at(0).at(size_t(hs::columnIndex(cfg, "tv_replace"))).is_null());
  }

  // θ_OV and θ_MLP read θ through each later layer's input norm (recon_norm layer, the default), so they
  // do not change when θ is scaled (×0.1, ×10), and neither does the verdict "which reconstruction carries
  // θ's effect"; read raw (recon_norm none), θ_OV scales with θ and θ_MLP does not, which is how a verdict
  // can be a scale effect.
  void reconstructionIgnoresThetaScale() {
    const hs::Transformer m = hs::test::tinyLlama(5);
    at::manual_seed(6);
    const at::Tensor theta = at::randn({m.config().d_model});  // [d_model]
    const hs::Site site = hs::residPost(0);
    auto rel = [](const at::Tensor& a, const at::Tensor& b) {
      return hs::test::maxAbsDiff(a, b) / std::max(1e-12, b.abs().max().item<double>());
    };
    // Equal up to the norms' eps (1e-5 against rms(0.1 θ)² ≈ 0.01: a relative 5e-4 at most).
    for (double c : {0.1, 10.0}) {
      QVERIFY2(rel(hs::ovReconstruction(m, c * theta, site), hs::ovReconstruction(m, theta, site)) < 2e-3,
               qPrintable(QString("θ_OV at %1 θ").arg(c)));
      QVERIFY2(rel(hs::mlpReconstruction(m, c * theta, site), hs::mlpReconstruction(m, theta, site)) < 2e-3,
               qPrintable(QString("θ_MLP at %1 θ").arg(c)));
      QVERIFY(rel(hs::ovReconstruction(m, c * theta, site, hs::ReconNorm::Raw),
                  c * hs::ovReconstruction(m, theta, site, hs::ReconNorm::Raw)) < 1e-4);
    }
    QVERIFY(hs::reconstructionVerdict(0.3, 0.1) == "ov" && hs::reconstructionVerdict(0.1, 0.3) == "mlp" &&
            hs::reconstructionVerdict(0.2, 0.2) == "tie");
    QVERIFY(hs::reconNorm("layer") == hs::ReconNorm::Layer && hs::reconNorm("none") == hs::ReconNorm::Raw);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::reconNorm("rms"));

    // The toy run: its verdict, and the same verdict from θ scaled by 0.1 and 10 (each reconstruction
    // re-injected at the last layer's output on the recorded zero-shot prompts).
    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    QCOMPARE(s["recon_norm"].get<std::string>(), std::string("layer"));
    const hs::Transformer& toyModel = *toy().model;
    const hs::Site toySite = hs::Site::parse(s["site"].get<std::string>());
    const at::Tensor th = out.tensors.at("ltv-1/theta_l" + std::to_string(s["layer"].get<int>()));
    auto reinjected = [&](const at::Tensor& v) {
      hs::IclEvalOptions eo;
      eo.interventions = {hs::addToResidual(hs::residPost(toyModel.config().n_layers - 1), v)};
      return hs::evaluateIcl(toyModel, recorded(out.run, "zero_shot"), eo).accuracy;
    };
    const std::string verdict = s["reconstruction_verdict"];
    for (double c : {0.1, 1.0, 10.0}) {
      const double ov = reinjected(hs::ovReconstruction(toyModel, c * th, toySite));
      const double mlp = reinjected(hs::mlpReconstruction(toyModel, c * th, toySite));
      qInfo("θ × %g: θ_OV %.3f, θ_MLP %.3f", c, ov, mlp);
      QVERIFY2(hs::reconstructionVerdict(ov, mlp) == verdict,
               qPrintable(QString("θ × %1: OV %2, MLP %3, run's verdict %4")
                              .arg(c)
                              .arg(ov)
                              .arg(mlp)
                              .arg(QString::fromStdString(verdict))));
    }
    QCOMPARE(verdict,
             hs::reconstructionVerdict(s["ov_reconstruction_accuracy"], s["mlp_reconstruction_accuracy"]));
    for (double c : {0.1, 1.0, 10.0})  // the earlier raw reading, for the record (docs/methods.md)
      qInfo("raw θ × %g: θ_OV %.3f, θ_MLP %.3f", c,
            reinjected(hs::ovReconstruction(toyModel, c * th, toySite, hs::ReconNorm::Raw)),
            reinjected(hs::mlpReconstruction(toyModel, c * th, toySite, hs::ReconNorm::Raw)));
  }

  // The propagation fit is the full d × d W by default (up to d = 4096; r stays an option, named in the
  // output), and the rotation is also measured toward the task's label subspace: ‖P θ‖/‖θ‖ against
  // ‖P Qθ‖/‖Qθ‖.
  void propagationIsTheFullFitByDefault() {
    QCOMPARE(hs::LtvOptions{}.prop_directions, -1);
    QCOMPARE(hs::propagationDirections(-1, 128), 128);
    QCOMPARE(hs::propagationDirections(-1, 4096), 4096);
    QCOMPARE(hs::propagationDirections(-1, 5120), 128);
    QCOMPARE(hs::propagationDirections(48, 128), 48);
    QCOMPARE(hs::propagationDirections(1000, 128), 128);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::propagationDirections(0, 128));
    // ‖P v‖/‖v‖ onto span(e1, e2) of (1, 2, 2): √5 / 3.
    const at::Tensor rows = at::tensor({1.0, 0.0, 0.0, 0.0, 1.0, 0.0}, at::kDouble).view({2, 3});
    QVERIFY(std::abs(hs::labelAlignment(rows, Eigen::Vector3d(1, 2, 2)) - std::sqrt(5.0) / 3) < 1e-12);

    const hs::AnalysisOutput& out = toyRun();
    const nlohmann::json& s = out.run.summary;
    QCOMPARE(s["propagation_fit"].get<std::string>(), std::string("full"));
    QCOMPARE(s["propagation_directions"].get<int>(), 128);
    const hs::Curve& rot = out.run.curves[1];
    QVERIFY2(rot.name.find("the full W, r = d = 128") != std::string::npos, rot.name.c_str());
    const int mid = s["layer"];
    const double a0 = s["label_alignment_theta"], aQ = s["label_alignment_Qtheta"];
    QCOMPARE(seriesAt(rot, "label_alignment_theta", mid), a0);
    QCOMPARE(seriesAt(rot, "label_alignment_Qtheta", mid), aQ);
    QVERIFY(a0 > 0 && a0 <= 1 + 1e-9 && aQ > 0 && aQ <= 1 + 1e-9);
    qInfo("label alignment: θ %.3f, Qθ %.3f", a0, aQ);
  }

  // Every mean answer probability has its 95 % interval (issue 39): mean_answer_prob_lo / _hi, the
  // percentile bootstrap over the test prompts (2000 resamples, the task's seed). The θ, θ_OV and θ_MLP rows
  // and the no-vector row are recomputed here from the recorded zero-shot prompts, each prompt's
  // exp(log p(y*)) and the bootstrap; every interval holds its point. The random sets' mean row is their mean
  // with draws, sd and the 95 % t interval over the sets (kept in [0, 1]), for the accuracy and the
  // probability; the other rows are one evaluation (draws 1, no sd).
  void answerProbabilitiesHaveIntervals() {
    const hs::AnalysisOutput& out = toyRun();
    const hs::Transformer& m = *toy().model;
    const nlohmann::json& s = out.run.summary;
    const hs::Table& ov = tableOf(out.run, "ltv.ov_reconstruction");
    const hs::Table& abl = tableOf(out.run, "ltv.key_head_ablation");
    for (const hs::Table* t : {&ov, &abl})
      for (const auto& r : t->rows) {
        const std::string row = r.at(0).get<std::string>();
        for (const char* c : {"mean_answer_prob_lo", "mean_answer_prob_hi"})
          QVERIFY2(hs::columnIndex(*t, c) >= 0 && r.at(size_t(hs::columnIndex(*t, c))).is_number(),
                   qPrintable(QString("%1 %2: no %3")
                                  .arg(QString::fromStdString(t->id), QString::fromStdString(row), c)));
        const double p = cell(*t, row, "mean_answer_prob"), lo = cell(*t, row, "mean_answer_prob_lo"),
                     hi = cell(*t, row, "mean_answer_prob_hi");
        // A bootstrap over 54 prompts has width; the random sets' mean may not (on the toy model every
        // random set is the same three heads: sd 0).
        const bool width = row == "ltv_ablate_random_mean" || lo < hi;
        QVERIFY2(lo <= p && p <= hi && width && lo >= 0 && hi <= 1,
                 qPrintable(QString("%1 %2: %3 in [%4, %5]")
                                .arg(QString::fromStdString(t->id), QString::fromStdString(row))
                                .arg(p)
                                .arg(lo)
                                .arg(hi)));
      }
    const std::vector<hs::Prompt> zs = recorded(out.run, "zero_shot");
    const hs::Site site = hs::Site::parse(s["site"].get<std::string>());
    const at::Tensor theta = out.tensors.at("ltv-1/theta_l" + std::to_string(s["layer"].get<int>()));
    const hs::Site last = hs::residPost(m.config().n_layers - 1);
    const std::vector<std::pair<std::string, std::vector<hs::Intervention>>> rows = {
        {"zero_shot", {}},
        {"ltv", {hs::addToResidual(site, theta)}},
        {"ov_reconstruction", {hs::addToResidual(last, hs::ovReconstruction(m, theta, site))}},
        {"mlp_reconstruction", {hs::addToResidual(last, hs::mlpReconstruction(m, theta, site))}}};
    for (const auto& [row, ivs] : rows) {
      hs::IclEvalOptions eo;
      eo.interventions = ivs;
      const hs::IclEval e = hs::evaluateIcl(m, zs, eo);
      const std::vector<double> probs = hs::answerProbabilities(e);
      QCOMPARE(probs.size(), size_t(54));
      double mean = 0;
      for (double p : probs)
        mean += p / double(probs.size());
      const auto [lo, hi] = hs::bootstrapMeanInterval(probs, 1);
      QVERIFY2(std::abs(cell(ov, row, "mean_answer_prob") - mean) < 1e-6 &&
                   std::abs(cell(ov, row, "mean_answer_prob_lo") - lo) < 1e-6 &&
                   std::abs(cell(ov, row, "mean_answer_prob_hi") - hi) < 1e-6,
               qPrintable(QString("%1: table %2 [%3, %4], direct %5 [%6, %7]")
                              .arg(QString::fromStdString(row))
                              .arg(cell(ov, row, "mean_answer_prob"))
                              .arg(cell(ov, row, "mean_answer_prob_lo"))
                              .arg(cell(ov, row, "mean_answer_prob_hi"))
                              .arg(mean)
                              .arg(lo)
                              .arg(hi)));
      qInfo("%s: mean answer probability %.4f [%.4f, %.4f]", row.c_str(), mean, lo, hi);
    }

    // The random key-head control: 3 sets, their mean row with its spread.
    std::vector<double> acc, prob;
    for (int r = 0; r < 3; ++r) {
      const std::string row = "ltv_ablate_random_" + std::to_string(r);
      acc.push_back(cell(abl, row, "accuracy"));
      prob.push_back(cell(abl, row, "mean_answer_prob"));
      QCOMPARE(cell(abl, row, "draws"), 1.0);
    }
    const hs::Spread a = hs::spreadOf(acc), p = hs::spreadOf(prob);
    const std::string mean = "ltv_ablate_random_mean";
    QCOMPARE(cell(abl, mean, "draws"), 3.0);
    QVERIFY(std::abs(cell(abl, mean, "accuracy") - a.mean) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "mean_answer_prob") - p.mean) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "accuracy_sd") - a.sd) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "mean_answer_prob_sd") - p.sd) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "mean_answer_prob_lo") - std::max(0.0, p.lo)) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "mean_answer_prob_hi") - std::min(1.0, p.hi)) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "accuracy_lo") - std::max(0.0, a.lo)) < 1e-12);
    QVERIFY(std::abs(cell(abl, mean, "accuracy_hi") - std::min(1.0, a.hi)) < 1e-12);
    QCOMPARE(s["random_ablation_sets"].get<int>(), 3);
    QVERIFY(std::abs(s["random_ablation_accuracy_spread"]["sd"].get<double>() - a.sd) < 1e-12);
    qInfo("random key-head sets: accuracy %.3f (sd %.3f) [%.3f, %.3f], answer probability %.4f (sd %.4f)",
          a.mean, a.sd, std::max(0.0, a.lo), std::min(1.0, a.hi), p.mean, p.sd);
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
