// The mechanism views of a learned task vector: OV and MLP reconstruction, key-head saliency, linear
// propagation on a subspace and its polar decomposition. See ltv_mechanism.h.
#include "analysis/methods/ltv_mechanism.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <algorithm>
#include <cmath>
#include <limits>

#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/label_projector.h"
#include "analysis/toolkit/prompt_batches.h"
#include "model/mlp.h"
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

void checkResidualSite(const Site& site, const char* what) {
  if (site.kind != SiteKind::ResidPre && site.kind != SiteKind::ResidPost)
    fail(what, ": a task vector enters hook_resid_pre or hook_resid_post, not ", site.name());
}

}  // namespace

int firstReadingLayer(const Site& site) {
  checkResidualSite(site, "task-vector site");
  return site.kind == SiteKind::ResidPre ? site.layer : site.layer + 1;
}

Eigen::VectorXd toEigenVector(const at::Tensor& t) {
  const at::Tensor c = t.detach().to(at::kCPU, at::kDouble).contiguous().view({-1});  // [d]
  Eigen::VectorXd v(c.numel());
  std::copy(c.data_ptr<double>(), c.data_ptr<double>() + c.numel(), v.data());
  return v;
}

// ---- OV circuits ----

ReconNorm reconNorm(const std::string& name) {
  if (name == "layer") return ReconNorm::Layer;
  if (name == "none") return ReconNorm::Raw;
  fail("ltv: recon_norm \"", name, "\", expected layer or none");
}

at::Tensor layerReadOf(const Transformer& model, int layer, bool mlp, const at::Tensor& x, ReconNorm norm) {
  checkLayer(model, layer, "reconstruction");
  checkTheta(model, x, "reconstruction");
  const at::Tensor xf = x.detach().to(at::kCPU, at::kFloat);  // [d_model]
  // A post-norm family (OLMo-2) feeds the raw residual to its attention and MLP.
  if (norm == ReconNorm::Raw || model.config().norm_placement == NormPlacement::Post) return xf;
  const LayerWeights& w = model.weights().layers[static_cast<size_t>(layer)];
  const at::Tensor& g = mlp ? w.mlp_norm_w : w.attn_norm_w;
  const at::Tensor& b = mlp ? w.mlp_norm_b : w.attn_norm_b;
  // n(θ) − n(0): the norm's own bias (n(0) = b for a LayerNorm, 0 for RMSNorm) is no part of θ.
  const at::Tensor both = normedBy(model, at::stack({xf, at::zeros_like(xf)}), g, b);  // [2, d_model]
  return (both[0] - both[1]).to(at::kFloat);
}

namespace {

// Every head's OV image of x in one layer: [head, d_model] float32 on the model's device.
at::Tensor layerOvImages(const Transformer& model, int l, const at::Tensor& x) {
  const ModelConfig& c = model.config();
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, dh = c.d_head, d = c.d_model;
  const at::Tensor xf = x.detach().to(model.device(), at::kFloat);  // [d_model]
  const LayerWeights& w = model.weights().layers[static_cast<size_t>(l)];
  const at::Tensor wv = w.wv.to(at::kFloat);  // [kv_head·d_head, d_model]
  const at::Tensor wo = w.wo.to(at::kFloat);  // [d_model, head·d_head]
  // The value each kv head reads from x, then shared by the query heads of its group.
  const at::Tensor v = at::matmul(wv, xf).view({KV, dh}).repeat_interleave(G, 0);  // [head, d_head]
  // Each head's W_O block applied to its own value.
  const at::Tensor woHeads = wo.view({d, H, dh}).permute({1, 0, 2});  // [head, d_model, d_head]
  return at::matmul(woHeads, v.unsqueeze(-1)).squeeze(-1);            // [head, d_model]
}

}  // namespace

at::Tensor headOvImages(const Transformer& model, const at::Tensor& x) {
  checkTheta(model, x, "OV images");
  std::vector<at::Tensor> perLayer;
  for (int l = 0; l < model.config().n_layers; ++l)
    perLayer.push_back(layerOvImages(model, l, x));
  return at::stack(perLayer).to(at::kCPU);  // [layers, head, d_model]
}

at::Tensor ovReconstruction(const Transformer& model, const at::Tensor& theta, const Site& site,
                            ReconNorm norm) {
  checkLayer(model, site.layer, "OV reconstruction");
  checkTheta(model, theta, "OV reconstruction");
  at::NoGradGuard noGrad;
  at::Tensor sum = at::zeros({model.config().d_model}, at::kFloat);  // [d_model]
  // θ_OV = Σ_{l' after the site} Σ_k W_O^{l',k} W_V^{l',g(k)} (n_{l'}(θ) − n_{l'}(0)).
  for (int l = firstReadingLayer(site); l < model.config().n_layers; ++l)
    sum += layerOvImages(model, l, layerReadOf(model, l, false, theta, norm)).sum(0).to(at::kCPU);
  return sum;
}

at::Tensor mlpReconstruction(const Transformer& model, const at::Tensor& theta, const Site& site,
                             ReconNorm norm) {
  checkLayer(model, site.layer, "MLP reconstruction");
  checkTheta(model, theta, "MLP reconstruction");
  at::NoGradGuard noGrad;
  const ModelConfig& c = model.config();
  const at::Tensor zero = at::zeros({c.d_model}, at::kFloat);  // [d_model]
  at::Tensor sum = at::zeros({c.d_model}, at::kDouble);        // [d_model]
  for (int l = firstReadingLayer(site); l < c.n_layers; ++l) {
    const LayerWeights& lw = model.weights().layers[static_cast<size_t>(l)];
    // θ_MLP = Σ_{l'} MLP(m_{l'}(θ)) − MLP(m_{l'}(0)); m the MLP's input norm (Raw or a post-norm family:
    // the identity).
    const bool raw = norm == ReconNorm::Raw || c.norm_placement == NormPlacement::Post;
    auto mlpIn = [&](const at::Tensor& v) {
      return raw ? v.detach().to(at::kFloat)
                 : normedBy(model, v, lw.mlp_norm_w, lw.mlp_norm_b).to(at::kFloat);
    };
    const at::Tensor x = at::stack({mlpIn(theta), mlpIn(zero)});  // [2, d_model]
    const at::Tensor out =
        mlpForward(c, lw, x.to(lw.w_up.device(), lw.w_up.scalar_type())).to(at::kCPU, at::kDouble);  // [2, d]
    sum += out[0] - out[1];
  }
  return sum.to(at::kFloat);
}

std::string reconstructionVerdict(double ovAccuracy, double mlpAccuracy) {
  return ovAccuracy > mlpAccuracy ? "ov" : ovAccuracy < mlpAccuracy ? "mlp" : "tie";
}

// ---- key heads ----

Eigen::MatrixXd keyHeadSaliency(const Transformer& model, const std::vector<Prompt>& prompts,
                                const Site& site, const at::Tensor& theta, int batch, int pad_id,
                                const AnalysisContext& ctx, Eigen::MatrixXd* se) {
  checkLayer(model, site.layer, "key heads");
  checkTheta(model, theta, "key heads");
  if (prompts.empty()) fail("key heads: no prompts");
  if (batch <= 0) fail("key heads: batch size ", batch);
  const ModelConfig& c = model.config();
  const int L = c.n_layers, H = c.n_heads;
  const int first = firstReadingLayer(site);  // heads below cannot read θ
  at::AutoGradMode grad(true);
  at::Tensor total = at::zeros({L, H}, at::kDouble);    // [layers, head] Σ over prompts
  at::Tensor squares = at::zeros({L, H}, at::kDouble);  // [layers, head] Σ saliency² over prompts
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
    req.interventions.push_back(addToResidual(site, th));
    // A zero added to z at N of every reading layer: its gradient is ∂p/∂z at N.
    const ZGradientProbes zg =
        zGradientProbes(model, first, {-1}, {B, 1, H, c.d_head});  // [batch, 1, head, d_head]
    const std::vector<at::Tensor>& probes = zg.probes;
    for (int l = first; l < L; ++l) {
      req.interventions.push_back(zg.interventions[static_cast<size_t>(l - first)]);
      req.capture.insert(attnZ(l));
    }
    const RunResult r = model.run(req);
    const at::Tensor logits = r.logits.select(1, -1).to(at::kFloat);  // [batch, vocab]
    std::vector<int64_t> answers;
    for (size_t i = b; i < e; ++i)
      answers.push_back(prompts[i].answer_token);
    const at::Tensor target = at::tensor(answers, at::kLong).to(logits.device()).unsqueeze(1);  // [batch, 1]
    const at::Tensor p = at::softmax(logits, -1).gather(1, target).squeeze(1);                  // [batch]
    p.sum().backward();  // rows are independent, so each row's gradient is its own ∂p/∂z
    for (int l = first; l < L; ++l) {
      const at::Tensor z =
          r.cache.at(attnZ(l)).detach().select(1, -1).to(at::kDouble);  // [batch, head, d_head]
      const at::Tensor g = probes[static_cast<size_t>(l - first)].grad().select(1, 0).to(
          at::kDouble);                                    // [batch, head, d_head]
      const at::Tensor sal = (z * g).sum(-1).abs().cpu();  // [batch, head] |z · ∂p/∂z| = |a · ∂p/∂a|
      total[l].add_(sal.sum(0));
      squares[l].add_(sal.pow(2).sum(0));
    }
    ctx.report(static_cast<double>(e) / prompts.size(), "key-head saliency");
  }
  const double n = static_cast<double>(prompts.size());
  total /= n;
  // se = sample sd / √n: (Σx² − n·mean²) / (n − 1) / n under the root.
  const at::Tensor stdErr = n > 1
                                ? ((squares - n * total * total) / (n - 1)).clamp_min(0).sqrt() / std::sqrt(n)
                                : at::full_like(total, std::numeric_limits<double>::quiet_NaN());
  Eigen::MatrixXd out(L, H);
  if (se) se->resize(L, H);
  auto acc = total.accessor<double, 2>();
  auto sa = stdErr.accessor<double, 2>();
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h) {
      out(l, h) = l < first ? std::numeric_limits<double>::quiet_NaN() : acc[l][h];
      if (se) (*se)(l, h) = l < first ? std::numeric_limits<double>::quiet_NaN() : sa[l][h];
    }
  return out;
}

// ---- linear propagation ----

int propagationDirections(int option, int dModel) {
  if (option == -1) return dModel <= 4096 ? dModel : std::min(128, dModel);  // the full W up to d = 4096
  if (option < 1) fail("ltv: prop_directions is ", option, ", expected a positive count or -1 (the full W)");
  return std::min(option, dModel);
}

PropagationFit fitLinearMap(const LinearResponse& response, const at::Tensor& theta, int directions,
                            int samples, double lambda, uint64_t seed, int chunk,
                            const AnalysisContext& ctx) {
  if (!theta.defined() || theta.dim() != 1) fail("linear map fit: θ must be a vector");
  const int64_t d = theta.size(0);
  if (directions < 1) fail("linear map fit: ", directions, " directions, need at least 1");
  const int64_t r = std::min<int64_t>(directions, d);
  if (samples <= r) fail("linear map fit: ", samples, " samples, need more than the ", r, " directions");
  if (!(lambda > 0)) fail("linear map fit: λ must be positive, got ", lambda);
  if (chunk < 1) fail("linear map fit: chunk ", chunk);
  const at::Tensor th = theta.detach().to(at::kCPU, at::kDouble).contiguous();  // [d]
  const double norm = th.norm().item<double>();
  if (!(norm > 0)) fail("linear map fit: θ is zero");

  // B: θ/‖θ‖ then r − 1 Gaussian directions, orthonormalised (thin Householder QR, sign fixed so that
  // B[:, 0] points along θ).
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const at::Tensor G =
      at::cat({th.unsqueeze(1) / norm, at::randn({d, r - 1}, gen, at::kDouble)}, 1);  // [d, r]
  Eigen::MatrixXd Ge(d, r);
  {
    auto ga = G.accessor<double, 2>();
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < r; ++j)
        Ge(i, j) = ga[i][j];
  }
  const Eigen::HouseholderQR<Eigen::MatrixXd> qr(Ge);
  Eigen::MatrixXd B = qr.householderQ() * Eigen::MatrixXd::Identity(d, r);  // [d, r]
  const Eigen::VectorXd thE = toEigenVector(th);
  if (B.col(0).dot(thE) < 0) B.col(0) *= -1.0;
  at::Tensor Bt = at::empty({d, r}, at::kDouble);  // [d, r]
  {
    auto ba = Bt.accessor<double, 2>();
    for (int64_t i = 0; i < d; ++i)
      for (int64_t j = 0; j < r; ++j)
        ba[i][j] = B(i, j);
  }

  // Coefficients c_i = ‖θ‖ e_1 + λ (‖θ‖/√r) ε_i, vectors v_i = B c_i.
  const double scale = lambda * norm / std::sqrt(static_cast<double>(r));
  at::Tensor C = scale * at::randn({samples, r}, gen, at::kDouble);  // [sample, r]
  C.select(1, 0).add_(norm);
  const at::Tensor V = at::matmul(C, Bt.t());  // [sample, d]

  std::vector<at::Tensor> parts;
  for (int64_t s0 = 0; s0 < samples; s0 += chunk) {
    ctx.checkCancelled();
    const int64_t n = std::min<int64_t>(chunk, samples - s0);
    const at::Tensor D = response(V.narrow(0, s0, n)).to(at::kCPU, at::kDouble);  // [n, d_out]
    if (D.dim() != 2 || D.size(0) != n)
      fail("linear map fit: the response to ", n, " vectors has the wrong shape");
    parts.push_back(D);
    ctx.report(static_cast<double>(s0 + n) / samples, "linear propagation");
  }
  const at::Tensor D = at::cat(parts, 0).contiguous();  // [sample, d_out]
  const int64_t dOut = D.size(1);

  // Least squares C Mᵀ ≈ D.
  Eigen::MatrixXd Ce(samples, r), De(samples, dOut);
  auto ca = C.accessor<double, 2>();
  auto da = D.accessor<double, 2>();
  for (int64_t i = 0; i < samples; ++i) {
    for (int64_t j = 0; j < r; ++j)
      Ce(i, j) = ca[i][j];
    for (int64_t j = 0; j < dOut; ++j)
      De(i, j) = da[i][j];
  }
  const Eigen::MatrixXd Mt = Ce.colPivHouseholderQr().solve(De);  // [r, d_out]
  PropagationFit fit;
  fit.basis = std::move(B);
  fit.map = Mt.transpose();
  fit.samples = samples;
  fit.directions = static_cast<int>(r);
  const Eigen::MatrixXd resid = De - Ce * Mt;
  const Eigen::MatrixXd centred = De.rowwise() - De.colwise().mean();
  const double total = centred.squaredNorm();
  fit.r2 = total > 0 ? 1.0 - resid.squaredNorm() / total : 1.0;
  return fit;
}

LinearResponse propagationResponse(const Transformer& model, const std::vector<Prompt>& prompts,
                                   const Site& site, int pad_id) {
  checkLayer(model, site.layer, "linear propagation");
  const ModelConfig& c = model.config();
  const int64_t d = c.d_model, P = static_cast<int64_t>(prompts.size());
  if (P == 0) fail("linear propagation: no prompts");
  at::NoGradGuard noGrad;
  const Site last = residPost(c.n_layers - 1);
  const int start = firstReadingLayer(site);
  const PaddedBatch pb = padPrompts(prompts, 0, prompts.size(), pad_id);
  const at::Tensor mask = pb.attention_mask.to(model.device());

  // h(0) and the residual the vector is added to, from one plain forward.
  RunRequest base;
  base.tokens = pb.tokens.to(model.device());
  base.attention_mask = mask;
  base.capture = {last, site};
  base.last_logits_only = true;
  const RunResult r0 = model.run(base);
  const at::Tensor h0 = r0.cache.at(last).select(1, -1).to(at::kCPU, at::kDouble);  // [prompt, d]
  const at::Tensor x0 = r0.cache.at(site).detach();                                 // [prompt, pos, d]

  // Δh(v): the layers from `start` on, run from x0 with v added at N (after the last layer: Δh = v).
  return [&model, x0, h0, mask, start, last, P, d](const at::Tensor& V) -> at::Tensor {
    const int64_t n = V.size(0);
    if (start >= model.config().n_layers) return V.to(at::kCPU, at::kDouble).clone();
    at::NoGradGuard noGrad;
    at::Tensor x = x0.repeat({n, 1, 1});  // [sample·prompt, pos, d], row = s·P + p
    x.select(1, -1).add_(V.repeat_interleave(P, 0).to(x.device(), x.scalar_type()));
    RunRequest req;
    req.resid_in = x;
    req.start_layer = start;
    req.attention_mask = mask.repeat({n, 1});
    req.capture = {last};
    req.last_logits_only = true;
    const at::Tensor h = model.run(req).cache.at(last).select(1, -1).to(at::kCPU, at::kDouble);  // [n·P, d]
    return (h.view({n, P, d}) - h0.unsqueeze(0)).mean(1);                                        // [n, d]
  };
}

PropagationFit fitLinearPropagation(const Transformer& model, const std::vector<Prompt>& prompts,
                                    const Site& site, const at::Tensor& theta, int directions, int samples,
                                    double lambda, uint64_t seed, int pad_id, const AnalysisContext& ctx) {
  checkTheta(model, theta, "linear propagation");
  const int64_t P = std::max<int64_t>(1, static_cast<int64_t>(prompts.size()));
  return fitLinearMap(propagationResponse(model, prompts, site, pad_id), theta, directions, samples, lambda,
                      seed, static_cast<int>(std::max<int64_t>(1, 256 / P)), ctx);
}

PolarDecomposition polarDecompose(const Eigen::MatrixXd& W) {
  if (W.rows() < W.cols() || W.cols() == 0)
    fail("polar decomposition: expected a matrix with at least as many rows as columns, got ", W.rows(),
         " x ", W.cols());
  // W = U S Vᵀ = (U Vᵀ)(V S Vᵀ): orthonormal columns times a symmetric PSD factor (thin SVD; divide and
  // conquer, so that the full d × d W of a 4096-wide model is minutes, not hours).
  Eigen::BDCSVD<Eigen::MatrixXd> svd(W, Eigen::ComputeThinU | Eigen::ComputeThinV);
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
  r.Qtheta = p.Q * theta;
  r.cos_theta_Qtheta = theta.dot(r.Qtheta) / (n * r.Qtheta.norm());
  r.stretch = (p.Sigma * theta).norm() / n;
  return r;
}

RotationStretch rotationStretch(const PropagationFit& fit, const Eigen::VectorXd& theta) {
  if (theta.size() != fit.basis.rows())
    fail("rotation/stretch: θ has ", theta.size(), " entries, the fit's basis ", fit.basis.rows());
  const double n = theta.norm();
  if (!(n > 0)) fail("rotation/stretch: θ is zero");
  if (fit.map.rows() != theta.size())
    fail("rotation/stretch: the fit maps into ", fit.map.rows(), " dimensions, θ has ", theta.size());
  const PolarDecomposition p = polarDecompose(fit.map);
  const Eigen::VectorXd coords = fit.basis.transpose() * theta;  // [r] = ‖θ‖ e_1
  RotationStretch r;
  r.Qtheta = p.Q * coords;  // [d_out]
  r.cos_theta_Qtheta = theta.dot(r.Qtheta) / (n * r.Qtheta.norm());
  r.stretch = (p.Sigma * coords).norm() / n;
  return r;
}

double labelAlignment(const at::Tensor& labelRows, const Eigen::VectorXd& v) {
  if (labelRows.dim() != 2 || labelRows.size(1) != v.size())
    fail("label alignment: label rows must be [labels, ", v.size(), "]");
  const double n = v.norm();
  if (!(n > 0)) fail("label alignment: the vector is zero");
  at::Tensor t = at::empty({v.size()}, at::kDouble);  // [d]
  std::copy(v.data(), v.data() + v.size(), t.data_ptr<double>());
  // ‖P v‖ / ‖v‖, P the orthogonal projector onto span(W_U[Y]) (TSLA's alignment of a residual vector).
  return LabelProjector(labelRows).projectedNorm(t).item<double>() / n;
}

}  // namespace hs
