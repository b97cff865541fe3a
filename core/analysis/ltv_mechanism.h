#pragma once
// The mechanism views of a learned task vector θ injected at the residual entering layer l (DESIGN 5.5):
//  - OV reconstruction: what the attention heads after l would write if they read θ through their OV
//    circuits, θ_OV = Σ_{l'>l, k} W_O^{l',k} W_V^{l',k} θ (no norm, no bias, attention weight 1);
//  - key heads: saliency |a_{l,k} · ∂p(y*)/∂a_{l,k}| of each head's write at N under the injection;
//  - linear propagation: a least-squares map W (d × d) from the injected vector to the change of the
//    final residual at N, its polar decomposition W = QΣ, and the rotation / stretch it applies to θ.
#include <ATen/core/Tensor.h>
#include <Eigen/Core>

#include <cstdint>
#include <vector>

#include "analysis/analysis_context.h"
#include "model/transformer.h"
#include "tasks/prompt.h"

namespace hs {

// ---- OV circuits ----

// Every head's OV image of x: out[l, k] = W_O^{l,k} W_V^{g(k)} x with g(k) = k / (H / H_kv) the kv head
// that query head k reads (GQA), W_V^{g} the rows g·dh..(g+1)·dh of wv. No norm, no value bias.
// x [d_model] → [layers, heads, d_model] float32.
at::Tensor headOvImages(const Transformer& model, const at::Tensor& x);

// θ_OV = Σ over layers l' > layer (l' >= layer when includeLayer) and every head of W_O W_V θ: [d_model].
at::Tensor ovReconstruction(const Transformer& model, const at::Tensor& theta, int layer,
                            bool includeLayer = false);

// ---- key heads ----

// Saliency of every head: |a_{l,k,N} · ∂p(y*)/∂a_{l,k,N}| with θ added at hook_resid_pre(layer), N,
// averaged over prompts. a = W_O^k z_k, so a · ∂p/∂a = z_k · ∂p/∂z_k; the gradient is taken through a
// zero Add on hook_z at N of every layer (one forward + backward per batch). → [layers, heads].
Eigen::MatrixXd keyHeadSaliency(const Transformer& model, const std::vector<Prompt>& prompts, int layer,
                                const at::Tensor& theta, int batch = 16, int pad_id = 0,
                                const AnalysisContext& ctx = {});

// ---- linear propagation ----

struct PropagationFit {
  Eigen::MatrixXd W;  // [d_model, d_model]: Δh ≈ W v
  double r2 = 0;      // share of the variance of Δh (over samples) the fit explains
  int samples = 0;
};

// Fits W by least squares over v_i = θ + λ·(‖θ‖/√d)·ε_i, ε_i ~ N(0, I) (seeded), i < samples (> d):
// Δh_i = h(v_i) − h(0), h = hook_resid_post of the last layer at N (before the final norm), averaged
// over prompts, where v is added at hook_resid_pre(layer), N. λ is relative: the perturbations are about
// λ times as long as θ. Cancellation between forwards.
PropagationFit fitLinearPropagation(const Transformer& model, const std::vector<Prompt>& prompts, int layer,
                                    const at::Tensor& theta, int samples, double lambda, uint64_t seed,
                                    int pad_id = 0, const AnalysisContext& ctx = {});

// W = QΣ with Q = U Vᵀ orthogonal and Σ = V S Vᵀ symmetric positive semi-definite, from the SVD
// W = U S Vᵀ. Square W only.
struct PolarDecomposition {
  Eigen::MatrixXd Q, Sigma;
};
PolarDecomposition polarDecompose(const Eigen::MatrixXd& W);

// cos(θ, Qθ) (how much W turns θ) and ‖Σθ‖ / ‖θ‖ (how much it stretches θ).
struct RotationStretch {
  double cos_theta_Qtheta = 0;
  double stretch = 0;
};
RotationStretch rotationStretch(const PolarDecomposition& p, const Eigen::VectorXd& theta);

// float tensor [d] ↔ Eigen vector.
Eigen::VectorXd toEigenVector(const at::Tensor& t);

}  // namespace hs
