// The mechanism views of a learned task vector: OV reconstruction, key-head saliency, linear
// propagation and its polar decomposition. See ltv_mechanism.h.
#include "analysis/ltv_mechanism.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>

#include "analysis/icl_eval.h"
#include "analysis/ltv.h"
#include "util/error.h"

namespace hs {

namespace {

void checkLayer(const Transformer& model, int layer, const char* what) {
  const int L = model.config().n_layers;
  if (layer < 0 || layer >= L) fail(what, ": layer ", layer, " does not exist (", L, " layers)");
}

void checkTheta(const Transformer& model, const at::Tensor& theta, const char* what) {
  if (!theta.defined() || theta.dim() != 1 || theta.size(0) != model.config().d_model)
    fail(what, ": θ must be a [", model.config().d_model, "] vector, got ",
         theta.defined() ? theta.sizes().vec().size() : 0, " dims");
}

}  // namespace

Eigen::VectorXd toEigenVector(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kDouble).contiguous().view({-1});  // [d]
  Eigen::VectorXd v(c.numel());
  std::copy(c.data_ptr<double>(), c.data_ptr<double>() + c.numel(), v.data());
  return v;
}

// ---- OV circuits ----

at::Tensor headOvImages(const Transformer& model, const at::Tensor& x) {
  checkTheta(model, x, "OV images");
  const ModelConfig& c = model.config();
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, dh = c.d_head, d = c.d_model;
  const at::Tensor xf = x.detach().to(model.device(), at::kFloat);  // [d_model]
  std::vector<at::Tensor> perLayer;
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = model.weights().layers[static_cast<size_t>(l)];
    const at::Tensor wv = w.wv.to(at::kFloat);  // [kv_head·d_head, d_model]
    const at::Tensor wo = w.wo.to(at::kFloat);  // [d_model, head·d_head]
    // The value each kv head reads from x, then shared by the query heads of its group.
    const at::Tensor v = at::matmul(wv, xf).view({KV, dh}).repeat_interleave(G, 0);  // [head, d_head]
    // Each head's W_O block applied to its own value.
    const at::Tensor woHeads = wo.view({d, H, dh}).permute({1, 0, 2});     // [head, d_model, d_head]
    perLayer.push_back(at::matmul(woHeads, v.unsqueeze(-1)).squeeze(-1));  // [head, d_model]
  }
  return at::stack(perLayer).to(at::kCPU);  // [layers, head, d_model]
}

at::Tensor ovReconstruction(const Transformer& model, const at::Tensor& theta, int layer, bool includeLayer) {
  checkLayer(model, layer, "OV reconstruction");
  const at::Tensor img = headOvImages(model, theta);  // [layers, head, d_model]
  const int64_t first = includeLayer ? layer : layer + 1;
  const int64_t L = img.size(0);
  if (first >= L) return at::zeros({img.size(2)}, at::kFloat);  // no layer after the last one
  return img.narrow(0, first, L - first).sum(0).sum(0);         // [d_model]
}

// ---- key heads ----

Eigen::MatrixXd keyHeadSaliency(const Transformer& model, const std::vector<Prompt>& prompts, int layer,
                                const at::Tensor& theta, int batch, int pad_id, const AnalysisContext& ctx) {
  checkLayer(model, layer, "key heads");
  checkTheta(model, theta, "key heads");
  if (prompts.empty()) fail("key heads: no prompts");
  if (batch <= 0) fail("key heads: batch size ", batch);
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  at::AutoGradMode grad(true);
  at::Tensor total = at::zeros({L, H}, at::kDouble);  // [layers, head] Σ over prompts
  const at::Tensor th = theta.detach().to(model.device(), model.dtype());
  for (size_t b = 0; b < prompts.size(); b += static_cast<size_t>(batch)) {
    ctx.checkCancelled();
    const size_t e = std::min(prompts.size(), b + static_cast<size_t>(batch));
    const PaddedBatch pb = padPrompts(prompts, b, e, pad_id);
    const int64_t B = pb.tokens.size(0);
    RunRequest req;
    req.tokens = pb.tokens.to(model.device());
    req.attention_mask = pb.attention_mask.to(model.device());
    req.last_logits_only = true;
    req.interventions.push_back(ltvInjection(layer, th));
    // A zero added to z at N of every layer: its gradient is ∂p/∂z at N.
    std::vector<at::Tensor> probes;
    for (int l = 0; l < L; ++l) {
      at::Tensor delta =
          at::zeros({B, 1, H, c.d_head}, at::TensorOptions().dtype(model.dtype()).device(model.device()))
              .requires_grad_(true);  // [batch, 1, head, d_head]
      Intervention iv;
      iv.site = attnZ(l);
      iv.positions = {-1};
      iv.op = InterventionOp::Add;
      iv.tensor = delta;
      req.interventions.push_back(iv);
      req.capture.insert(attnZ(l));
      probes.push_back(delta);
    }
    const RunResult r = model.run(req);
    const at::Tensor logits = r.logits.select(1, -1).to(at::kFloat);  // [batch, vocab]
    std::vector<int64_t> answers;
    for (size_t i = b; i < e; ++i)
      answers.push_back(prompts[i].answer_token);
    const at::Tensor target = at::tensor(answers, at::kLong).to(logits.device()).unsqueeze(1);  // [batch, 1]
    const at::Tensor p = at::softmax(logits, -1).gather(1, target).squeeze(1);                  // [batch]
    p.sum().backward();  // rows are independent, so each row's gradient is its own ∂p/∂z
    for (int l = 0; l < L; ++l) {
      const at::Tensor z =
          r.cache.at(attnZ(l)).detach().select(1, -1).to(at::kDouble);  // [batch, head, d_head]
      const at::Tensor g =
          probes[static_cast<size_t>(l)].grad().select(1, 0).to(at::kDouble);  // [batch, head, d_head]
      total[l].add_((z * g).sum(-1).abs().sum(0).cpu());  // [head]: Σ_rows |z · ∂p/∂z| = |a · ∂p/∂a|
    }
    ctx.report(static_cast<double>(e) / prompts.size(), "key-head saliency");
  }
  total /= static_cast<double>(prompts.size());
  Eigen::MatrixXd out(L, H);
  auto acc = total.accessor<double, 2>();
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      out(l, h) = acc[l][h];
  return out;
}

// ---- linear propagation ----

PropagationFit fitLinearPropagation(const Transformer& model, const std::vector<Prompt>& prompts, int layer,
                                    const at::Tensor& theta, int samples, double lambda, uint64_t seed,
                                    int pad_id, const AnalysisContext& ctx) {
  checkLayer(model, layer, "linear propagation");
  checkTheta(model, theta, "linear propagation");
  const ModelConfig& c = model.config();
  const int64_t d = c.d_model, P = static_cast<int64_t>(prompts.size());
  if (P == 0) fail("linear propagation: no prompts");
  if (samples <= d) fail("linear propagation: ", samples, " samples, need more than d_model = ", d);
  if (!(lambda > 0)) fail("linear propagation: λ must be positive, got ", lambda);
  at::NoGradGuard noGrad;
  const Site last = residPost(c.n_layers - 1);
  const PaddedBatch pb = padPrompts(prompts, 0, prompts.size(), pad_id);
  const at::Tensor tokens = pb.tokens.to(model.device()), mask = pb.attention_mask.to(model.device());

  // h(0): the final residual at N without any injection.
  RunRequest base;
  base.tokens = tokens;
  base.attention_mask = mask;
  base.capture = {last};
  base.last_logits_only = true;
  const at::Tensor h0 =
      model.run(base).cache.at(last).select(1, -1).to(at::kCPU, at::kDouble);  // [prompt, d]

  // v_i = θ + λ (‖θ‖/√d) ε_i.
  const at::Tensor th = theta.detach().to(at::kCPU, at::kDouble);  // [d]
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const double scale = lambda * th.norm().item<double>() / std::sqrt(static_cast<double>(d));
  const at::Tensor V = th.unsqueeze(0) + scale * at::randn({samples, d}, gen, at::kDouble);  // [sample, d]
  at::Tensor D = at::empty({samples, d}, at::kDouble);  // [sample, d] Δh

  const int64_t chunk = std::max<int64_t>(1, 256 / P);  // samples per forward (rows = chunk · prompts)
  for (int64_t s0 = 0; s0 < samples; s0 += chunk) {
    ctx.checkCancelled();
    const int64_t n = std::min<int64_t>(chunk, samples - s0);
    RunRequest req;
    req.tokens = tokens.repeat({n, 1});  // [sample·prompt, pos], row = s·P + p
    req.attention_mask = mask.repeat({n, 1});
    req.capture = {last};
    req.last_logits_only = true;
    Intervention iv;
    iv.site = residPre(layer);
    iv.positions = {-1};
    iv.op = InterventionOp::Add;
    iv.tensor = V.narrow(0, s0, n).repeat_interleave(P, 0).unsqueeze(1).to(
        model.device(), model.dtype());  // [sample·prompt, 1, d]
    req.interventions.push_back(iv);
    const at::Tensor h = model.run(req).cache.at(last).select(1, -1).to(at::kCPU, at::kDouble);  // [n·P, d]
    D.narrow(0, s0, n).copy_((h.view({n, P, d}) - h0.unsqueeze(0)).mean(1));                     // [n, d]
    ctx.report(static_cast<double>(s0 + n) / samples, "linear propagation");
  }

  // Least squares V Wᵀ ≈ D.
  Eigen::MatrixXd Ve(samples, d), De(samples, d);
  auto va = V.accessor<double, 2>();
  auto da = D.accessor<double, 2>();
  for (int64_t i = 0; i < samples; ++i)
    for (int64_t j = 0; j < d; ++j)
      Ve(i, j) = va[i][j], De(i, j) = da[i][j];
  PropagationFit fit;
  fit.samples = samples;
  const Eigen::MatrixXd Wt = Ve.colPivHouseholderQr().solve(De);  // [d, d]
  fit.W = Wt.transpose();
  const Eigen::MatrixXd resid = De - Ve * Wt;
  const Eigen::MatrixXd centred = De.rowwise() - De.colwise().mean();
  const double total = centred.squaredNorm();
  fit.r2 = total > 0 ? 1.0 - resid.squaredNorm() / total : 1.0;
  return fit;
}

PolarDecomposition polarDecompose(const Eigen::MatrixXd& W) {
  if (W.rows() != W.cols() || W.rows() == 0)
    fail("polar decomposition: expected a square matrix, got ", W.rows(), " x ", W.cols());
  // W = U S Vᵀ = (U Vᵀ)(V S Vᵀ): an orthogonal factor times a symmetric PSD one.
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(W, Eigen::ComputeFullU | Eigen::ComputeFullV);
  const Eigen::MatrixXd& U = svd.matrixU();
  const Eigen::MatrixXd& V = svd.matrixV();
  PolarDecomposition p;
  p.Q = U * V.transpose();
  p.Sigma = V * svd.singularValues().asDiagonal() * V.transpose();
  p.Sigma = 0.5 * (p.Sigma + p.Sigma.transpose());  // exactly symmetric
  return p;
}

RotationStretch rotationStretch(const PolarDecomposition& p, const Eigen::VectorXd& theta) {
  if (theta.size() != p.Q.rows())
    fail("rotation/stretch: θ has ", theta.size(), " entries, W is ", p.Q.rows());
  const double n = theta.norm();
  if (!(n > 0)) fail("rotation/stretch: θ is zero");
  RotationStretch r;
  const Eigen::VectorXd q = p.Q * theta;
  r.cos_theta_Qtheta = theta.dot(q) / (n * q.norm());
  r.stretch = (p.Sigma * theta).norm() / n;
  return r;
}

}  // namespace hs
