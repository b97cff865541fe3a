#pragma once
// The mechanism views of a learned task vector θ added at N of a residual site — hook_resid_post(l) (the
// output of layer l) or hook_resid_pre(l) (the residual entering layer l) — (docs/methods.md, "LTV"). The
// heads and MLPs that read θ are those of the layers after the site: l' > l for resid_post(l), l' >= l for
// resid_pre(l) (firstReadingLayer).
//  - OV reconstruction: what the attention heads after the site would write if they read θ through their
//    OV circuits, θ_OV = Σ_{l' reading, k} W_O^{l',k} W_V^{l',k} (n_{l'}(θ) − n_{l'}(0)), n_{l'} the input
//    norm layer l' applies before its attention (attention weight 1, no value bias); ReconNorm::Raw reads
//    θ itself (n = identity), the earlier definition;
//  - MLP reconstruction, the control beside it: θ_MLP = Σ_{l' reading} (MLP_{l'}(m_{l'}(θ)) −
//    MLP_{l'}(m_{l'}(0))), m_{l'} the norm layer l' applies before its MLP (Raw: m = identity); the
//    difference removes the output bias and a LayerNorm's bias. Through the norms both reconstructions are
//    invariant to θ's scale (up to the norms' eps), so their comparison is not a scale effect;
//  - key heads: saliency |a_{l,k} · ∂p(y*)/∂a_{l,k}| of each head's write at N under the injection, for
//    the heads after the site only (the others are NaN: they cannot read θ);
//  - linear propagation: a least-squares map W from the injected vector to the change of the final
//    residual at N, by default the full d × d fit (r = d, any d ≤ 4096: propagationDirections), or
//    restricted to a subspace S = span(θ, r − 1 seeded random directions); its polar decomposition W = QΣ
//    (W|_S = QΣ on a subspace), the rotation / stretch it applies to θ, and how much closer Q turns θ to
//    the task's label subspace (labelAlignment of θ and of Qθ).
#include <ATen/core/Tensor.h>
#include <Eigen/Core>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "model/hooks.h"
#include "model/transformer.h"
#include "tasks/prompt.h"

namespace hs {

// The first layer whose attention and MLP read a vector added at `site`: l + 1 for hook_resid_post(l),
// l for hook_resid_pre(l) (n_layers when none does). Other sites are refused.
int firstReadingLayer(const Site& site);

// ---- OV and MLP circuits ----

// How the layers after the site read θ in the reconstructions (option recon_norm): Layer = through each
// layer's own input norm (the attention's before W_V, the MLP's before the MLP), Raw = θ itself.
enum class ReconNorm { Layer, Raw };
// "layer" / "none" → the reading; other names are refused.
ReconNorm reconNorm(const std::string& name);
// What layer `layer` reads of x before its attention (mlp false) or its MLP (mlp true): n(x) − n(0) with n
// the layer's input norm (Layer; a post-norm family reads x itself), or x (Raw). [d_model] float32.
at::Tensor layerReadOf(const Transformer& model, int layer, bool mlp, const at::Tensor& x, ReconNorm norm);

// Every head's OV image of x: out[l, k] = W_O^{l,k} W_V^{g(k)} x with g(k) = k / (H / H_kv) the kv head
// that query head k reads (GQA), W_V^{g} the rows g·dh..(g+1)·dh of wv. No norm, no value bias.
// x [d_model] → [layers, heads, d_model] float32.
at::Tensor headOvImages(const Transformer& model, const at::Tensor& x);

// θ_OV = Σ over the layers l' reading `site` and every head of W_O W_V layerReadOf(l', attention, θ):
// [d_model].
at::Tensor ovReconstruction(const Transformer& model, const at::Tensor& theta, const Site& site,
                            ReconNorm norm = ReconNorm::Layer);

// θ_MLP = Σ over the layers l' reading `site` of MLP(m(θ)) − MLP(m(0)), m the MLP's input norm (Layer) or
// the identity (Raw): [d_model] float32.
at::Tensor mlpReconstruction(const Transformer& model, const at::Tensor& theta, const Site& site,
                             ReconNorm norm = ReconNorm::Layer);

// Which reconstruction carries θ's effect: "ov" when θ_OV re-injected scores a higher accuracy than θ_MLP,
// "mlp" when lower, "tie" when equal.
std::string reconstructionVerdict(double ovAccuracy, double mlpAccuracy);

// ---- key heads ----

// Saliency of every head: |a_{l,k,N} · ∂p(y*)/∂a_{l,k,N}| with θ added at `site`, position N, averaged over
// prompts. a = W_O^k z_k, so a · ∂p/∂a = z_k · ∂p/∂z_k; the gradient is taken through a zero Add on hook_z
// at N of every reading layer (one forward + backward per batch). → [layers, heads]; NaN for the heads of
// the layers below firstReadingLayer(site). `se`, when given, receives each head's standard error over the
// prompts (sample sd / √n; NaN where the value is).
Eigen::MatrixXd keyHeadSaliency(const Transformer& model, const std::vector<Prompt>& prompts,
                                const Site& site, const at::Tensor& theta, int batch = 16, int pad_id = 0,
                                const AnalysisContext& ctx = {}, Eigen::MatrixXd* se = nullptr);

// ---- linear propagation ----

struct PropagationFit {
  Eigen::MatrixXd basis;  // [d_in, r] B: orthonormal columns, the first θ/‖θ‖, the rest seeded random
  Eigen::MatrixXd map;    // [d_out, r] M = W B: the fitted map on span(B) (Δh ≈ M Bᵀ v for v in span(B))
  double r2 = 0;          // share of the variance of Δh (over samples) the fit explains
  int samples = 0;
  int directions = 0;  // r
  // W on span(B) as a [d_out, d_in] matrix (M Bᵀ); the full W when r = d_in.
  Eigen::MatrixXd W() const { return map * basis.transpose(); }
};

// r of the propagation fit (option prop_directions): the full W (r = d_model) when the option is −1 and
// d_model ≤ 4096, else 128 directions; a positive option is r itself (capped at d_model).
int propagationDirections(int option, int dModel);

// A black box whose response to injected vectors is fitted: V [n, d_in] float64 CPU → Δh [n, d_out].
using LinearResponse = std::function<at::Tensor(const at::Tensor& V)>;

// Fits W on S = span(B), B = the orthonormalised [θ, r − 1 seeded N(0, I) directions] (r = min(directions,
// d_in)): v_i = θ + λ·(‖θ‖/√r)·B ε_i, ε_i ~ N(0, I_r), i < samples (> r), and least squares over the
// coefficients c_i = Bᵀ v_i of Δh_i ≈ M c_i. Exact for a linear response; cost: `samples` responses (in
// chunks of `chunk`), a [samples, r] least-squares solve and nothing d_in × d_in. Cancellation between
// chunks.
PropagationFit fitLinearMap(const LinearResponse& response, const at::Tensor& theta, int directions,
                            int samples, double lambda, uint64_t seed, int chunk = 32,
                            const AnalysisContext& ctx = {});

// The model's propagation as a response: Δh(v) = h(v) − h(0), h = hook_resid_post of the last layer at N
// (before the final norm), averaged over prompts, with v added at `site`, N. One plain forward captures the
// residual at the site; each response then runs only the layers from firstReadingLayer(site) on, from that
// residual with v added (none after the last layer: Δh = v). The model must outlive the response.
LinearResponse propagationResponse(const Transformer& model, const std::vector<Prompt>& prompts,
                                   const Site& site, int pad_id = 0);
// fitLinearMap of propagationResponse.
PropagationFit fitLinearPropagation(const Transformer& model, const std::vector<Prompt>& prompts,
                                    const Site& site, const at::Tensor& theta, int directions, int samples,
                                    double lambda, uint64_t seed, int pad_id = 0,
                                    const AnalysisContext& ctx = {});

// W = QΣ for W [m, n], m >= n: Q = U Vᵀ [m, n] with orthonormal columns and Σ = V S Vᵀ [n, n] symmetric
// positive semi-definite, from the thin SVD W = U S Vᵀ (square W: Q orthogonal, the usual polar form).
struct PolarDecomposition {
  Eigen::MatrixXd Q, Sigma;
};
PolarDecomposition polarDecompose(const Eigen::MatrixXd& W);

// cos(θ, Qθ) (how much W turns θ) and ‖Σθ‖ / ‖θ‖ (how much it stretches θ); Qθ itself.
struct RotationStretch {
  double cos_theta_Qtheta = 0;
  double stretch = 0;
  Eigen::VectorXd Qtheta;  // [d_out]
};
// Square W = QΣ.
RotationStretch rotationStretch(const PolarDecomposition& p, const Eigen::VectorXd& theta);
// A fit on span(B): the polar decomposition of M = W B, θ in the coordinates c = Bᵀθ: cos(θ, Q c) and
// ‖Σ c‖ / ‖θ‖ (equal to the full W's when r = d_in).
RotationStretch rotationStretch(const PropagationFit& fit, const Eigen::VectorXd& theta);

// How much of v lies in the label subspace span(W_U[Y]): ‖P v‖ / ‖v‖ with P the orthogonal projector onto
// the rows `labelRows` [labels, d] (label_projector.h; raw W_U rows, the residual before the final norm).
double labelAlignment(const at::Tensor& labelRows, const Eigen::VectorXd& v);

// float tensor [d] ↔ Eigen vector.
Eigen::VectorXd toEigenVector(const at::Tensor& t);

}  // namespace hs
