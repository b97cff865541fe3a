// THE forward: Transformer::run and the helpers it calls per layer, in data-flow order (the request checks
// are forward_plan.cpp); every tensor carries its shape comment.
// Dimension vocabulary: batch, pos (this forward's positions), q_pos (query positions: pos, except in the
// last layer of a run with last_layer_from), k_pos (cached + new key positions), head (query heads),
// kv_head, group (= head / kv_head), d_head, d_model, d_mlp, vocab.
#include "model/transformer.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/compute_dtype.h"
#include "model/forward_plan.h"
#include "model/huge_page_tensor.h"
#include "model/intervention_apply.h"
#include "model/mlp.h"
#include "model/onednn_gemm.h"
#include "model/rope.h"
#include "util/error.h"

namespace hs {

namespace {

// ---- building blocks -----------------------------------------------------------------------

// RMSNorm as HF computes it: in float32, x · rsqrt(mean(x²) + eps), then the weight, the result in `out`
// (the compute dtype). Llama/Qwen cast to `out` before the weight; OLMo-2 and Gemma multiply the weight in
// float32, Gemma by (1 + w).
at::Tensor rmsNorm(const at::Tensor& x, const at::Tensor& w, double eps, bool weightInFloat, bool plusOne,
                   at::ScalarType out) {
  const at::Tensor xf = x.to(at::kFloat);                                    // [..., d]
  const at::Tensor normed = xf * at::rsqrt(xf.pow(2).mean(-1, true) + eps);  // [..., d]
  if (plusOne) return ((w.to(at::kFloat) + 1.0) * normed).to(out);
  if (weightInFloat) return (w.to(at::kFloat) * normed).to(out);
  return w * normed.to(out);
}

// LayerNorm (GPT-2, GPT-NeoX) in float32: ((x − mean) / sqrt(var + eps)) · w + b, the result in `out`.
at::Tensor layerNorm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b, double eps,
                     at::ScalarType out) {
  if (x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat)
    return at::layer_norm(x, {x.size(-1)}, w, b, eps).to(out);
  const at::Tensor bf = b.defined() ? b.to(at::kFloat) : at::Tensor();
  return at::layer_norm(x.to(at::kFloat), {x.size(-1)}, w.to(at::kFloat), bf, eps).to(out);
}

// The family's RMSNorm (also for q/k norms and post-norms) and its norm (LayerNorm or RMSNorm), the result in
// the compute dtype `dt`.
at::Tensor familyRms(const ModelConfig& c, at::ScalarType dt, const at::Tensor& x, const at::Tensor& w) {
  return rmsNorm(x, w, c.norm_eps, c.arch == Architecture::Olmo2, c.norm_weight_offset, dt);
}
at::Tensor familyNorm(const ModelConfig& c, at::ScalarType dt, const at::Tensor& x, const at::Tensor& w,
                      const at::Tensor& b) {
  if (c.norm == NormKind::LayerNorm) return layerNorm(x, w, b, c.norm_eps, dt);
  return familyRms(c, dt, x, w);
}

// x · wᵀ + b with a float32 result for a bf16/f16 weight, without a float32 copy of the weight. A bf16
// weight on the CPU goes through oneDNN with a float32 destination where the build has it (onednn_gemm.h).
// Otherwise: ATen's GEMM accumulates in float32 but rounds its output to the compute dtype, so a second GEMM
// of the same inputs computes that rounding, with the rounded result subtracted inside its float32
// accumulator: hi = round(x·wᵀ), lo = round(x·wᵀ − hi), result hi + lo. lo is at most 2⁻⁹·|x·wᵀ| (bf16), so
// its own rounding leaves about 2⁻¹⁸ relative: float32 level. Two bf16 GEMMs cost less than one float32 GEMM
// (2.5× a bf16 one on AVX-512-BF16 CPUs) and need no float32 copy of the weight. A backend that rounds
// before adding (checked once) gets the weight converted to float32 in blocks of rows instead.
at::Tensor linearFloat32(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const at::Tensor bf = b.defined() ? b.to(at::kFloat) : at::Tensor();
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  const at::Tensor x2 = x.reshape({-1, x.size(-1)});  // [rows, in]
  const int64_t out = w.size(0), rows = x2.size(0);
  auto emptyResult = [&] {  // [rows, out] float32; on the CPU the large ones on huge pages
    return w.device().is_cpu() ? emptyOnHugePages({rows, out}, at::kFloat)
                               : at::empty({rows, out}, x2.options().dtype(at::kFloat));
  };
  // Gradients (attribution patching) need ATen's differentiable ops, not out= forms or oneDNN.
  const bool grad = at::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad());
  at::Tensor y;  // [rows, out] float32
  if (w.scalar_type() == at::kFloat && grad) {
    y = at::linear(x2.to(at::kFloat), w);
  } else if (w.scalar_type() == at::kFloat && !grad && w.device().is_cpu() && w.stride(1) == 1 &&
             onednnFloatGemmAvailable()) {
    y = onednnLinearFloat(x2.to(at::kFloat), w, at::Tensor());  // [rows, out] (onednn_gemm.h)
  } else if (w.scalar_type() == at::kFloat) {
    y = emptyResult();
    at::mm_out(y, x2.to(at::kFloat), w.t());
  } else if (!grad && w.scalar_type() == at::kBFloat16 && w.device().is_cpu() && w.stride(1) == 1 &&
             onednnBf16GemmAvailable()) {
    y = onednnLinearBf16ToFloat(x2.to(at::kBFloat16), w);  // one GEMM, float32 result (onednn_gemm.h)
  } else if (compensatedGemmWorks(w.scalar_type(), w.device())) {
    // In blocks of output columns (about 4 MB of compute-dtype results each): the two GEMMs' results stay
    // in cache and small, and only the float32 result is allocated at full size (at a 128k vocabulary and
    // 128 rows, whole-matrix temporaries made this three times slower than one GEMM).
    const at::Tensor xw = x2.to(w.scalar_type());  // [rows, in]
    const int64_t block =
        std::min(out, std::max<int64_t>(1024, (int64_t(2) << 20) / std::max<int64_t>(1, rows)));
    y = emptyResult();
    for (int64_t c = 0; c < out; c += block) {
      const int64_t n = std::min(block, out - c);
      const at::Tensor wt = w.narrow(0, c, n).t();                 // [in, n]
      const at::Tensor hi = at::mm(xw, wt);                        // [rows, n] rounded to the compute dtype
      const at::Tensor lo = at::addmm(hi, xw, wt, /*beta=*/-1.0);  // [rows, n] what the rounding took
      at::Tensor part = y.narrow(1, c, n);                         // [rows, n] float32
      part.copy_(hi);
      part.add_(lo);
    }
  } else {
    const int64_t block =
        std::max<int64_t>(1, (int64_t(64) << 20) / (4 * x.size(-1)));  // weight rows per part
    const at::Tensor xf = x2.to(at::kFloat);
    std::vector<at::Tensor> parts;
    for (int64_t r = 0; r < out; r += block)
      parts.push_back(at::mm(xf, w.narrow(0, r, std::min(block, out - r)).to(at::kFloat).t()));  // [rows, n]
    y = at::cat(parts, 1);
  }
  if (bf.defined()) y = grad ? y + bf : y.add_(bf);
  return y.view(shape);  // [..., out]
}

// Gemma-2 soft-capping: cap · tanh(x / cap), a smooth clamp to (−cap, cap). cap = 0: unchanged.
at::Tensor softcap(const at::Tensor& x, double cap) {
  return cap > 0 ? at::tanh(x / cap) * cap : x;
}

// Each head's write into the residual stream (no bias): result[b, p, h] = W_O[:, h·dh:(h+1)·dh] z[b, p, h].
at::Tensor perHeadResult(const at::Tensor& z, const at::Tensor& wo) {
  const int64_t B = z.size(0), P = z.size(1), H = z.size(2), dh = z.size(3), d = wo.size(0);
  const at::Tensor woHeads = wo.reshape({d, H, dh}).permute({1, 2, 0});       // [head, d_head, d_model]
  const at::Tensor zHeads = z.permute({2, 0, 1, 3}).reshape({H, B * P, dh});  // [head, batch·pos, d_head]
  const at::Tensor r = at::bmm(zHeads, woHeads);                              // [head, batch·pos, d_model]
  return r.view({H, B, P, d}).permute({1, 2, 0, 3});                          // [batch, pos, head, d_model]
}

// Per-run bookkeeping of hook sites: applies the interventions of a site (in request order), counts
// their hits, captures the value after intervention. Nothing here outlives the run.
class SiteHooks {
 public:
  SiteHooks(const std::set<Site>& capture, const std::vector<ResolvedIntervention>& resolved,
            ActivationCache& cache, std::vector<int64_t>& hits, at::Device home)
      : capture_(capture), cache_(cache), hits_(hits), home_(home) {
    for (const ResolvedIntervention& r : resolved)
      bySite_[r.iv->site].push_back(&r);
  }
  bool intervened(const Site& s) const { return bySite_.count(s) > 0; }
  bool active(const Site& s) const { return intervened(s) || capture_.count(s) > 0; }

  at::Tensor operator()(const Site& s, at::Tensor x) {
    if (bySite_.empty() && capture_.empty()) return x;
    if (x.device() != home_ && active(s)) {  // a layer on another device (device map): work on home
      const at::Device here = x.device();
      const at::Tensor y = (*this)(s, x.to(home_));
      return intervened(s) ? y.to(here) : x;
    }
    const auto it = bySite_.find(s);
    if (it != bySite_.end()) {
      bool owned = false;
      for (const ResolvedIntervention* r : it->second) {
        x = applyIntervention(*r, x, owned);
        hits_[r->index] += r->vectors;
      }
    }
    if (capture_.count(s)) cache_[s] = x;
    return x;
  }

 private:
  const std::set<Site>& capture_;
  std::map<Site, std::vector<const ResolvedIntervention*>> bySite_;
  ActivationCache& cache_;
  std::vector<int64_t>& hits_;
  at::Device home_;
};

void expectShape(const at::Tensor& t, std::vector<int64_t> shape, const std::string& name) {
  if (!t.defined())
    fail("model weights: tensor ", name, " is missing, expected shape ", shapeOf(at::empty(shape)));
  if (t.sizes() != at::IntArrayRef(shape))
    fail("model weights: tensor ", name, " has shape ", shapeOf(t), ", expected ", shapeOf(at::empty(shape)));
}

void expectOptional(const at::Tensor& t, bool wanted, std::vector<int64_t> shape, const std::string& name) {
  if (wanted) return expectShape(t, std::move(shape), name);
  if (t.defined()) fail("model weights: tensor ", name, " is present but the config does not use it");
}

}  // namespace

// ---- construction ----------------------------------------------------------------------------

Transformer::Transformer(ModelConfig config, ModelWeights weights, Weights mode)
    : config_(std::move(config)), weights_(std::move(weights)) {
  ModelConfig& c = config_;
  if (c.n_kv_heads <= 0) c.n_kv_heads = c.n_heads;
  if (c.d_head <= 0 && c.n_heads > 0) c.d_head = c.d_model / c.n_heads;
  if (c.rotary_dim <= 0) c.rotary_dim = c.d_head;
  if (c.n_layers <= 0 || c.n_heads <= 0 || c.d_model <= 0 || c.vocab_size <= 0 || c.context_length <= 0)
    fail("model config: n_layers, n_heads, d_model, vocab_size and context_length must be positive (got ",
         c.n_layers, ", ", c.n_heads, ", ", c.d_model, ", ", c.vocab_size, ", ", c.context_length, ")");
  if (c.n_heads % c.n_kv_heads != 0)
    fail("model config: n_heads ", c.n_heads, " is not a multiple of n_kv_heads ", c.n_kv_heads);
  if (!knownMlpActivation(c.activation)) fail("model config: unsupported activation \"", c.activation, "\"");
  if (!c.layer_attention.empty() && int(c.layer_attention.size()) != c.n_layers)
    fail("model config: layer_attention names ", c.layer_attention.size(), " layers, the model has ",
         c.n_layers);
  const bool anySliding =
      std::count(c.layer_attention.begin(), c.layer_attention.end(), LayerAttention::Sliding) > 0;
  if (anySliding && c.sliding_window <= 0)
    fail("model config: sliding-window layers need a positive sliding_window (got ", c.sliding_window, ")");
  if (c.sliding_window < 0 || c.query_pre_attn_scalar < 0 || c.attn_logit_softcap < 0 ||
      c.final_logit_softcap < 0)
    fail("model config: sliding_window, query_pre_attn_scalar and the soft-caps must not be negative");
  if (c.rope_layout != RopeLayout::None) {
    rope_inv_freq_ = ropeInverseFrequencies(c);  // [rotary_dim/2]
    if (anySliding && c.rope_local_theta > 0)
      rope_local_inv_freq_ = ropeInverseFrequencies(c, LayerAttention::Sliding);  // [rotary_dim/2]
  }

  // Weights never take part in autograd: interventions and learned vectors are the only leaves.
  if (mode == Weights::Frozen)
    forEachWeight(weights_, [](at::Tensor& t) {
      if (t.defined()) t = t.detach();
    });

  const ModelWeights& w = weights_;
  const int64_t d = c.d_model, dq = int64_t(c.n_heads) * c.d_head, dkv = int64_t(c.n_kv_heads) * c.d_head;
  const bool ln = c.norm == NormKind::LayerNorm;
  const bool preNorms = c.norm_placement != NormPlacement::Post;
  const bool postNorms = c.norm_placement != NormPlacement::Pre;
  expectShape(w.tok_emb, {c.vocab_size, d}, "tok_emb");
  expectOptional(w.pos_emb, c.learned_pos_emb, {c.context_length, d}, "pos_emb");
  expectShape(w.final_norm_w, {d}, "final_norm_w");
  expectOptional(w.final_norm_b, ln, {d}, "final_norm_b");
  expectShape(w.unembed, {c.vocab_size, d}, "unembed");
  if (w.unembed_b.defined()) expectShape(w.unembed_b, {c.vocab_size}, "unembed_b");
  if (int(w.layers.size()) != c.n_layers)
    fail("model weights: ", w.layers.size(), " layers, expected n_layers = ", c.n_layers);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    expectOptional(lw.attn_norm_w, preNorms, {d}, p + "attn_norm_w");
    expectOptional(lw.attn_norm_b, preNorms && ln, {d}, p + "attn_norm_b");
    expectShape(lw.wq, {dq, d}, p + "wq");
    expectShape(lw.wk, {dkv, d}, p + "wk");
    expectShape(lw.wv, {dkv, d}, p + "wv");
    expectOptional(lw.bq, c.qkv_bias, {dq}, p + "bq");
    expectOptional(lw.bk, c.qkv_bias, {dkv}, p + "bk");
    expectOptional(lw.bv, c.qkv_bias, {dkv}, p + "bv");
    expectOptional(lw.q_norm_w, c.qk_norm != QkNorm::None, {c.qk_norm == QkNorm::Full ? dq : c.d_head},
                   p + "q_norm_w");
    expectOptional(lw.k_norm_w, c.qk_norm != QkNorm::None, {c.qk_norm == QkNorm::Full ? dkv : c.d_head},
                   p + "k_norm_w");
    expectShape(lw.wo, {d, dq}, p + "wo");
    expectOptional(lw.bo, c.attn_out_bias, {d}, p + "bo");
    expectOptional(lw.post_attn_norm_w, postNorms, {d}, p + "post_attn_norm_w");
    expectOptional(lw.mlp_norm_w, preNorms, {d}, p + "mlp_norm_w");
    expectOptional(lw.mlp_norm_b, preNorms && ln, {d}, p + "mlp_norm_b");
    expectOptional(lw.w_gate, c.mlp == MlpKind::SwiGLU, {c.d_mlp, d}, p + "w_gate");
    expectShape(lw.w_up, {c.d_mlp, d}, p + "w_up");
    expectOptional(lw.b_up, c.mlp_bias, {c.d_mlp}, p + "b_up");
    expectShape(lw.w_down, {d, c.d_mlp}, p + "w_down");
    expectOptional(lw.b_down, c.mlp_bias, {d}, p + "b_down");
    expectOptional(lw.post_mlp_norm_w, postNorms, {d}, p + "post_mlp_norm_w");
  }
}

at::ScalarType Transformer::dtype() const {
  return weights_.tok_emb.scalar_type();
}
at::Device Transformer::device() const {
  return weights_.unembed.device();
}

void Transformer::to(at::ScalarType dtype, at::Device device) {
  const bool tied = weights_.unembed.is_same(weights_.tok_emb) ||
                    weights_.unembed.data_ptr() == weights_.tok_emb.data_ptr();
  forEachWeight(weights_, [&](at::Tensor& t) {
    if (t.defined()) t = t.to(device, dtype);
  });
  if (tied) weights_.unembed = weights_.tok_emb;  // keep one copy of a tied embedding
  for (at::Tensor* f : {&rope_inv_freq_, &rope_local_inv_freq_})
    if (f->defined()) *f = f->to(device);  // stays float32
}

at::Tensor Transformer::norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
  return familyNorm(config_, dtype(), x, w, b);
}

at::Tensor Transformer::rms(const at::Tensor& x, const at::Tensor& w) const {
  return familyRms(config_, dtype(), x, w);
}

at::Tensor Transformer::unembed(const at::Tensor& normed, const std::vector<int64_t>& tokens) const {
  at::Tensor w = weights_.unembed, b = weights_.unembed_b;  // [vocab, d_model], [vocab]
  if (!tokens.empty()) {
    const at::Tensor ids = at::tensor(tokens, at::TensorOptions().dtype(at::kLong)).to(w.device());  // [n]
    w = w.index_select(0, ids);                   // [n, d_model]
    if (b.defined()) b = b.index_select(0, ids);  // [n]
  }
  const at::Tensor logits = linearFloat32(normed, w, b);  // [..., vocab or n] float32
  return softcap(logits, config_.final_logit_softcap);
}

at::Tensor Transformer::logitLens(const at::Tensor& resid) const {
  const at::Tensor x = resid.to(device(), at::kFloat);                              // [..., d_model]
  const at::Tensor normed = norm(x, weights_.final_norm_w, weights_.final_norm_b);  // [..., d_model]
  return unembed(normed);                                                           // [..., vocab]
}

// ---- the forward -----------------------------------------------------------------------------
// run() below: the plan (every request check, forward_plan.h), the embeddings, per layer attention() and
// mlpBlock(), the final norm and unembedding. The helpers come first, in data-flow order; each fast path is
// a named branch inside the helper it concerns.

namespace {

// What every layer of one forward reads besides its weights and the residual stream.
struct LayerContext {
  const ModelConfig& c;
  const ForwardPlan& plan;
  SiteHooks& hook;
  // Masks and RoPE angles, on the device of the layer that runs (moveTo).
  AttentionMasks masks;
  RopeAngles angles, anglesLocal;  // [batch, pos, 1, rot/2]; local: sliding layers with their own base
  // Per layer [batch, kv_head, k_pos, d_head], committed to the cache only when the whole run succeeded.
  std::vector<at::Tensor> newK, newV;

  at::Tensor norm(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) const {
    return familyNorm(c, plan.dt, x, w, b);
  }
  at::Tensor rms(const at::Tensor& x, const at::Tensor& w) const { return familyRms(c, plan.dt, x, w); }

  // Device map: the layer about to run lives on `ld`.
  void moveTo(at::Device ld) {
    if (masks.blocked.defined()) masks.blocked = masks.blocked.to(ld);
    if (masks.queryReal.defined()) masks.queryReal = masks.queryReal.to(ld);
    if (masks.blockedLocal.defined()) masks.blockedLocal = masks.blockedLocal.to(ld);
    if (angles.cos.defined()) angles = RopeAngles{angles.cos.to(ld), angles.sin.to(ld)};
    if (anglesLocal.cos.defined()) anglesLocal = RopeAngles{anglesLocal.cos.to(ld), anglesLocal.sin.to(ld)};
  }
};

// ---- embeddings (or the given residual entering start_layer) ----
// The residual stream is float32 whatever the compute dtype: it accumulates every layer's output, and
// rounding that sum to 8 significant bits after each layer is bf16's largest error. Each block reads it
// through its norm, which returns the compute dtype.
at::Tensor embed(const ModelConfig& c, const ModelWeights& w, const ForwardPlan& plan,
                 const RunRequest& req) {
  // Fast path start_layer: the residual stream entering that layer replaces the embeddings.
  if (plan.fromResid) return req.resid_in.to(plan.dev, at::kFloat);  // [batch, pos, d_model]
  at::Tensor e = at::embedding(w.tok_emb, plan.tokens);              // [batch, pos, d_model]
  // Gemma: × sqrt(d_model) in the compute dtype, the factor rounded to it first, as HF does (√3584 =
  // 59.87 is 59.75 in bf16).
  if (c.scale_embeddings) {
    const at::TensorOptions opts = at::TensorOptions().dtype(plan.dt).device(plan.dev);
    e = e * at::scalar_tensor(std::sqrt(double(c.d_model)), opts);
  }
  at::Tensor x = e.to(at::kFloat);  // [batch, pos, d_model] the residual stream
  if (c.learned_pos_emb) x = x + at::embedding(w.pos_emb, plan.positionIds).to(at::kFloat);  // GPT-2 wpe
  return x;
}

// One layer's queries, keys and values after the q/k norm and RoPE.
struct Qkv {
  at::Tensor q;       // [batch, q_pos, head, d_head]
  at::Tensor k;       // [batch, pos, kv_head, d_head]
  at::Tensor v;       // [batch, pos, kv_head, d_head]
  at::Tensor kHeads;  // [batch, pos, head, d_head], only when hook_k was edited
};

// ---- attention: projections, q/k norm, RoPE (hook_q, hook_k) ----
// (affine: at::linear, with float32 products on the CPU through oneDNN, onednn_gemm.h)
// Queries from position q0 on (last_layer_from), keys and values at every position.
Qkv projectQkv(const LayerContext& ctx, int l, const LayerWeights& lw, const at::Tensor& x, int64_t q0) {
  const ModelConfig& c = ctx.c;
  SiteHooks& hook = ctx.hook;
  const int64_t B = x.size(0), P = x.size(1), Pq = P - q0;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, dh = c.d_head;
  const bool preNorms = c.norm_placement != NormPlacement::Post;
  const bool sliding = isSlidingLayer(c, l);  // attends to the last sliding_window positions only
  const at::Tensor attnIn =
      preNorms ? ctx.norm(x, lw.attn_norm_w, lw.attn_norm_b) : x.to(ctx.plan.dt);  // [batch, pos, d_model]
  at::Tensor q = affine(attnIn.narrow(1, q0, Pq), lw.wq, lw.bq);  // [batch, q_pos, head·d_head]
  at::Tensor k = affine(attnIn, lw.wk, lw.bk);                    // [batch, pos, kv_head·d_head]
  at::Tensor v = affine(attnIn, lw.wv, lw.bv);                    // [batch, pos, kv_head·d_head]
  q = hook(attnQ(l), q.view({B, Pq, H, dh}));                     // [batch, q_pos, head, d_head]
  k = k.view({B, P, KV, dh});                                     // [batch, pos, kv_head, d_head]
  v = v.view({B, P, KV, dh});                                     // [batch, pos, kv_head, d_head]
  // hook_k is per query head (hooks.h). An edit there gives each query head its own keys (kHeads, through
  // the same norm and RoPE); the cache keeps the model's own kv-head keys, as for hook_v.
  at::Tensor kHeads;  // [batch, pos, head, d_head], only when hook_k was edited
  if (hook.active(attnK(l))) {
    const at::Tensor kSite =
        hook(attnK(l), G == 1 ? k : k.repeat_interleave(G, 2));  // [batch, pos, head, d_head]
    if (hook.intervened(attnK(l))) kHeads = kSite;
  }
  if (c.qk_norm == QkNorm::Full) {  // OLMo-2: over the whole projection (every head of a position)
    q = ctx.rms(q.reshape({B, Pq, H * dh}), lw.q_norm_w).view({B, Pq, H, dh});
    k = ctx.rms(k.reshape({B, P, KV * dh}), lw.k_norm_w).view({B, P, KV, dh});
    if (kHeads.defined())  // group member g: the keys query heads j·group + g read, over every j
      kHeads =
          ctx.rms(kHeads.reshape({B, P, KV, G, dh}).transpose(2, 3).reshape({B, P, G, KV * dh}), lw.k_norm_w)
              .view({B, P, G, KV, dh})
              .transpose(2, 3)
              .reshape({B, P, H, dh});
  } else if (c.qk_norm == QkNorm::PerHead) {  // Qwen3, Gemma-3: per head over d_head
    q = ctx.rms(q, lw.q_norm_w);
    k = ctx.rms(k, lw.k_norm_w);
    if (kHeads.defined()) kHeads = ctx.rms(kHeads, lw.k_norm_w);
  }
  if (c.rope_layout != RopeLayout::None) {
    const RopeAngles& a =
        sliding && ctx.anglesLocal.cos.defined() ? ctx.anglesLocal : ctx.angles;  // Gemma-3 local base
    const RopeAngles aq = q0 > 0 ? RopeAngles{a.cos.narrow(1, q0, Pq), a.sin.narrow(1, q0, Pq)} : a;
    q = applyRope(q, aq, c.rope_layout, c.rotary_dim);  // [batch, q_pos, head, d_head]
    k = applyRope(k, a, c.rope_layout, c.rotary_dim);   // [batch, pos, kv_head, d_head]
    if (kHeads.defined())
      kHeads = applyRope(kHeads, a, c.rope_layout, c.rotary_dim);  // [batch, pos, head, d_head]
  }
  return {q, k, v, kHeads};
}

// ---- scores (GQA: query head h reads kv head h / group, no copies of k/v) ----
// q·kᵀ·scale [batch, head, q_pos, k_pos] in float32 whatever the compute dtype: bf16/f16 q·k products are
// exact in float32, and neither the scores nor the pattern are rounded back before z. `keys` [batch,
// kv_head, k_pos, d_head] (without the cached positions when the cache is shared).
at::Tensor attentionScores(const LayerContext& ctx, int l, const Qkv& qkv, const at::Tensor& keys) {
  const ModelConfig& c = ctx.c;
  const ForwardPlan& plan = ctx.plan;
  const at::ScalarType dt = plan.dt;
  const at::Tensor& q = qkv.q;  // [batch, q_pos, head, d_head]
  const int64_t B = q.size(0), Pq = q.size(1), T0 = plan.cached, T = plan.keyPositions;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, dh = c.d_head;
  const double scale = 1.0 / std::sqrt(c.query_pre_attn_scalar > 0 ? c.query_pre_attn_scalar : double(dh));
  const at::Tensor qGrouped =
      q.transpose(1, 2).reshape({B, KV, G * Pq, dh}).to(at::kFloat);  // [batch, kv_head, group·q_pos, d_head]
  if (qkv.kHeads.defined()) {
    // Edited hook_k: each query head against its own keys, the cached ones repeated per query head.
    at::Tensor kAll = qkv.kHeads.transpose(1, 2);  // [batch, head, pos, d_head]
    if (T0 > 0)
      kAll = at::cat({plan.kv->k[l].to(dt).repeat_interleave(G, 1).expand({B, -1, -1, -1}), kAll},
                     2);  // [batch, head, k_pos, d_head]
    return at::matmul(q.transpose(1, 2).to(at::kFloat), kAll.to(at::kFloat).transpose(-1, -2)) * scale;
  }
  if (plan.sharedCache) {
    // Shared cache: every row reads the same cached keys: one product of all rows' queries with them.
    const at::Tensor kCached = plan.kv->k[l].to(dt).to(at::kFloat)[0];  // [kv_head, cached, d_head]
    const at::Tensor qAll =
        qGrouped.transpose(0, 1).reshape({KV, B * G * Pq, dh});  // [kv_head, rows, d_head]
    const at::Tensor cached = batchedMatmul(qAll, kCached.transpose(-1, -2))
                                  .view({KV, B, G * Pq, T0})
                                  .transpose(0, 1);  // [batch, kv_head, group·q_pos, cached]
    const at::Tensor fresh =
        batchedMatmul(qGrouped, keys.to(at::kFloat).transpose(-1, -2));  // [batch, kv_head, group·q_pos, pos]
    return at::cat({cached, fresh}, -1).view({B, H, Pq, T}) * scale;
  }
  return batchedMatmul(qGrouped,
                       keys.to(at::kFloat).transpose(-1, -2))  // [batch, kv_head, group·q_pos, k_pos]
             .view({B, H, Pq, T}) *
         scale;
}

// ---- pattern: soft-cap, causal/padding/window mask, softmax (hook_pattern) ----
// [batch, head, q_pos, k_pos] float32; queries from q0 on.
at::Tensor attentionPattern(const LayerContext& ctx, int l, const Qkv& qkv, const at::Tensor& keys,
                            int64_t q0) {
  const ModelConfig& c = ctx.c;
  const AttentionMasks& m = ctx.masks;
  const int64_t Pq = qkv.q.size(1);
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor scores = attentionScores(ctx, l, qkv, keys);  // [batch, head, q_pos, k_pos] float32
  scores = softcap(scores, c.attn_logit_softcap);          // Gemma-2: before the mask, as HF
  const bool sliding = isSlidingLayer(c, l);  // attends to the last sliding_window positions only
  const at::Tensor mask =
      sliding && m.blockedLocal.defined() ? m.blockedLocal : m.blocked;  // [batch or 1, 1, pos, k_pos]
  if (mask.defined()) scores = scores.masked_fill(mask.narrow(2, q0, Pq), lowest);
  at::Tensor pattern = at::softmax(scores, -1);  // [batch, head, q_pos, k_pos] float32
  if (m.queryReal.defined()) pattern = pattern * m.queryReal.narrow(2, q0, Pq);  // padded queries: all zero
  pattern = ctx.hook(attnPattern(l), pattern);  // [batch, head, q_pos, k_pos]
  return pattern.to(at::kFloat);                // [batch, head, q_pos, k_pos]
}

// ---- z = pattern · v (float32, then the compute dtype; hook_v) ----
// probs [batch, head, q_pos, k_pos], v [batch, pos, kv_head, d_head] this forward's values, `values` [batch,
// kv_head, k_pos, d_head] (without the cached positions when the cache is shared) → [batch, head, q_pos,
// d_head].
at::Tensor mixValues(const LayerContext& ctx, int l, const at::Tensor& probs, const at::Tensor& v,
                     const at::Tensor& values) {
  const ModelConfig& c = ctx.c;
  const ForwardPlan& plan = ctx.plan;
  SiteHooks& hook = ctx.hook;
  const at::ScalarType dt = plan.dt;
  const int64_t B = probs.size(0), Pq = probs.size(2), P = plan.pos, T0 = plan.cached, T = plan.keyPositions;
  const int64_t H = c.n_heads, KV = c.n_kv_heads, G = H / KV, dh = c.d_head;
  if (hook.active(attnV(l))) {
    // hook_v is per query head: expand kv heads for this forward's positions.
    at::Tensor vSite = v.repeat_interleave(G, 2);  // [batch, pos, head, d_head]
    vSite = hook(attnV(l), vSite);
    if (hook.intervened(attnV(l))) {
      // Edited hook_v: the cache keeps the unmodified kv-head values; this forward attends to the modified
      // ones.
      at::Tensor vHeads = vSite.transpose(1, 2);  // [batch, head, pos, d_head]
      if (T0 > 0)
        vHeads = at::cat({plan.kv->v[l].to(dt).repeat_interleave(G, 1).expand({B, -1, -1, -1}), vHeads},
                         2);                                   // [batch, head, k_pos, d_head]
      return at::matmul(probs, vHeads.to(at::kFloat)).to(dt);  // [batch, head, q_pos, d_head]
    }
  }
  if (plan.sharedCache) {
    // Shared cache: one product of all rows' pattern over the cached positions with the cached values.
    const at::Tensor p = probs.reshape({B, KV, G * Pq, T});  // [batch, kv_head, group·q_pos, k_pos]
    const at::Tensor pCached =
        p.narrow(-1, 0, T0).transpose(0, 1).reshape({KV, B * G * Pq, T0});  // [kv_head, rows, cached]
    const at::Tensor vCached = plan.kv->v[l].to(dt).to(at::kFloat)[0];      // [kv_head, cached, d_head]
    const at::Tensor zCached = batchedMatmul(pCached, vCached)
                                   .view({KV, B, G * Pq, dh})
                                   .transpose(0, 1);  // [batch, kv_head, group·q_pos, d_head]
    const at::Tensor zFresh =
        batchedMatmul(p.narrow(-1, T0, P), values.to(at::kFloat));  // [batch, kv_head, group·q_pos, d_head]
    return (zCached + zFresh).reshape({B, H, Pq, dh}).to(dt);       // [batch, head, q_pos, d_head]
  }
  return batchedMatmul(probs.reshape({B, KV, G * Pq, T}), values.to(at::kFloat))
      .view({B, H, Pq, dh})
      .to(dt);  // [batch, head, q_pos, d_head]
}

// ---- output projection (hook_z, hook_result, hook_attn_out; per-head results only on request) ----
// hook_z / hook_result are each head's own output before W_O / before the sum over heads, and
// hook_attn_out is the sum. With a post-norm (OLMo-2, Gemma) the residual stream receives
// norm(Σ_h result_h): a head's write is divided by the RMS of the whole layer output, so a per-head
// intervention also rescales what the other heads write; the post-norm itself is outside every hook.
// z [batch, head, q_pos, d_head] → [batch, q_pos, d_model].
at::Tensor attentionOutput(const LayerContext& ctx, int l, const LayerWeights& lw, const at::Tensor& z) {
  SiteHooks& hook = ctx.hook;
  const int64_t B = z.size(0), H = z.size(1), Pq = z.size(2), dh = z.size(3);
  const at::Tensor zSite = hook(attnZ(l), z.transpose(1, 2));  // [batch, q_pos, head, d_head]
  at::Tensor attn;                                             // [batch, q_pos, d_model]
  if (hook.active(attnResult(l))) {
    const at::Tensor result =
        hook(attnResult(l), perHeadResult(zSite, lw.wo));  // [batch, q_pos, head, d_model]
    if (hook.intervened(attnResult(l))) attn = lw.bo.defined() ? result.sum(2) + lw.bo : result.sum(2);
  }
  if (!attn.defined()) attn = affine(zSite.reshape({B, Pq, H * dh}), lw.wo, lw.bo);
  attn = hook(attnOut(l), attn);  // [batch, q_pos, d_model]
  if (ctx.c.norm_placement != NormPlacement::Pre)
    attn = ctx.norm(attn, lw.post_attn_norm_w, at::Tensor());  // OLMo-2, Gemma
  return attn;
}

// One layer's attention on the residual stream x [batch, pos, d_model] entering it → what it adds to the
// stream [batch, q_pos, d_model] (queries from q0 on). Keys and values of every position, also for the
// cache.
at::Tensor attention(LayerContext& ctx, int l, const LayerWeights& lw, const at::Tensor& x, int64_t q0) {
  const ForwardPlan& plan = ctx.plan;
  const at::ScalarType dt = plan.dt;
  const Qkv qkv = projectQkv(ctx, l, lw, x, q0);

  // ---- KV cache: cached keys/values first, then this forward's ----
  at::Tensor keys = qkv.k.transpose(1, 2);    // [batch, kv_head, k_pos, d_head]
  at::Tensor values = qkv.v.transpose(1, 2);  // [batch, kv_head, k_pos, d_head]
  if (plan.cached > 0 && !plan.sharedCache) {
    keys = at::cat({plan.kv->k[l].to(dt), keys}, 2);
    values = at::cat({plan.kv->v[l].to(dt), values}, 2);
  }
  if (plan.extendKv) {
    ctx.newK.push_back(keys.contiguous());
    ctx.newV.push_back(values.contiguous());
  }

  const at::Tensor probs = attentionPattern(ctx, l, qkv, keys, q0);  // [batch, head, q_pos, k_pos] float32
  const at::Tensor z = mixValues(ctx, l, probs, qkv.v, values);      // [batch, head, q_pos, d_head]
  return attentionOutput(ctx, l, lw, z);                             // [batch, q_pos, d_model]
}

// ---- MLP (hook_resid_mid, hook_mlp_out) ----
// The residual stream x [batch, pos, d_model] entering layer l and its attention output attn [batch, q_pos,
// d_model] → the stream leaving the layer [batch, q_pos, d_model] (positions from q0 on).
at::Tensor mlpBlock(const LayerContext& ctx, int l, const LayerWeights& lw, at::Tensor x,
                    const at::Tensor& attn, int64_t q0) {
  const ModelConfig& c = ctx.c;
  SiteHooks& hook = ctx.hook;
  if (q0 > 0) x = x.narrow(1, q0, x.size(1) - q0);                               // [batch, q_pos, d_model]
  const at::Tensor mid = c.parallel_residual ? x : hook(residMid(l), x + attn);  // [batch, q_pos, d_model]
  const at::Tensor mlpIn = c.norm_placement != NormPlacement::Post
                               ? ctx.norm(mid, lw.mlp_norm_w, lw.mlp_norm_b)
                               : mid.to(ctx.plan.dt);          // [batch, q_pos, d_model]
  at::Tensor mlp = hook(mlpOut(l), mlpForward(c, lw, mlpIn));  // [batch, q_pos, d_model]
  if (c.norm_placement != NormPlacement::Pre)
    mlp = ctx.norm(mlp, lw.post_mlp_norm_w, at::Tensor());  // OLMo-2, Gemma
  // GPT-NeoX parallel residual: x + attn(ln1 x) + mlp(ln2 x); otherwise sequential.
  return c.parallel_residual ? x + attn + mlp : mid + mlp;  // [batch, q_pos, d_model]
}

}  // namespace

RunResult Transformer::run(const RunRequest& req) const {
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  // Every check of the request, before any compute. Inputs, masks and positions start on the embedding's
  // device; with a device map (device_map.h) each layer gets them, and the residual stream, on its own
  // device. Results live on the head's (home).
  const ForwardPlan plan = planForward(c, req, w.tok_emb.device(), device(), dtype());
  RunResult out;
  out.hits.assign(req.interventions.size(), 0);
  SiteHooks hook(req.capture, plan.interventions, out.cache, out.hits, plan.home);

  at::Tensor x = embed(c, w, plan, req);  // [batch, pos, d_model] float32, the residual stream
  LayerContext ctx{c, plan, hook, plan.masks};
  if (c.rope_layout != RopeLayout::None)
    ctx.angles = ropeAngles(rope_inv_freq_.to(plan.dev), plan.positionIds);
  if (rope_local_inv_freq_.defined())
    ctx.anglesLocal = ropeAngles(rope_local_inv_freq_.to(plan.dev), plan.positionIds);

  for (int l = plan.firstLayer; l < c.n_layers; ++l) {
    const LayerWeights& lw = w.layers[l];
    if (x.device() != lw.wq.device()) {  // device map: this layer lives on another device
      x = x.to(lw.wq.device());
      ctx.moveTo(lw.wq.device());
    }
    // Fast path resid_join: these rows enter here, after the rows already running.
    if (const auto j = req.resid_join.find(l); j != req.resid_join.end())
      x = at::cat({x, j->second.to(x.device(), at::kFloat)}, 0);  // [batch + joining rows, pos, d_model]
    x = hook(residPre(l), x);                                     // [batch, pos, d_model]
    // Fast path last_layer_from: the last layer's queries, and all that follows them, from there on.
    const int64_t q0 = l == c.n_layers - 1 ? plan.tailFrom : 0;
    const at::Tensor attn = attention(ctx, l, lw, x, q0);  // [batch, q_pos, d_model]
    x = mlpBlock(ctx, l, lw, std::move(x), attn, q0);      // [batch, q_pos, d_model]
    x = hook(residPost(l), x);
  }

  // ---- final norm and unembedding ----
  if (x.device() != plan.home) x = x.to(plan.home);  // device map: the head lives elsewhere
  at::Tensor normed = hook(lnFinal(), norm(x, w.final_norm_w, w.final_norm_b));  // [batch, q_pos, d_model]
  if (req.last_logits_only) normed = normed.narrow(1, normed.size(1) - 1, 1);    // [batch, 1, d_model]
  out.logits =
      unembed(normed, req.logit_tokens);  // [batch, pos, vocab] float32, Gemma-2's final soft-cap applied

  for (const ResolvedIntervention& r : plan.interventions)
    if (out.hits[r.index] == 0)
      fail(describeIntervention(*r.iv, r.index), ": changed nothing in this run (empty selection)");
  if (plan.extendKv) {
    KVCache* kv = plan.kv;
    kv->k = std::move(ctx.newK);
    kv->v = std::move(ctx.newV);
    kv->mask =
        plan.cached > 0 ? at::cat({kv->mask.to(at::kLong), plan.real}, 1) : plan.real;  // [batch, k_pos]
  }
  return out;
}

// ---- generation --------------------------------------------------------------------------------

std::vector<int64_t> Transformer::generateGreedy(
    const std::vector<int64_t>& prompt, int maxNew, int64_t stopToken,
    const std::vector<Intervention>& prefillInterventions) const {
  if (prompt.empty()) fail("generateGreedy: empty prompt (give at least a BOS token)");
  at::NoGradGuard noGrad;  // decoding never needs gradients
  std::vector<int64_t> generated;
  if (maxNew <= 0) return generated;
  KVCache cache;
  RunRequest req;
  req.tokens = at::tensor(prompt, at::TensorOptions().dtype(at::kLong)).view({1, -1});  // [1, pos]
  req.interventions = prefillInterventions;  // prefill only: the cache carries their effect onwards
  req.kv = &cache;
  req.last_logits_only = true;
  while (true) {
    const RunResult r = run(req);
    const int64_t next = r.logits[0][-1].argmax().item<int64_t>();
    if (next == stopToken) break;
    generated.push_back(next);
    if (int(generated.size()) >= maxNew || cache.length() >= config_.context_length) break;
    req.tokens = at::full({1, 1}, next, at::TensorOptions().dtype(at::kLong));  // [1, 1]
    req.interventions.clear();
  }
  return generated;
}

}  // namespace hs
