#pragma once
// Hook sites, named as in TransformerLens. The C++ API is the typed Site; its string form (the one
// table below, kSiteTable) is what sessions and the CLI store. Never type a site name by hand.
//
// Each name holds the tensor TransformerLens holds under it (4.x: TransformerBridge with
// enable_compatibility_mode(no_processing=True), i.e. no fold_ln or centring; checked on GPT-2- and
// Llama-shaped checkpoints by tests/reference/test_transformer_lens.cpp), with two differences of layout:
// - GQA (n_kv_heads < n_heads): hook_k and hook_v are per query head, [batch, pos, head, d_head], each kv
//   head repeated for the query heads that read it (query head h reads kv head h / group). TransformerLens
//   keeps them per kv head, [batch, pos, kv_head, d_head]: its [:, :, j] is ours [:, :, j·group + g] for
//   every g < group. So a head selection at these sites picks query heads: editing one changes only what
//   that head reads, and editing TransformerLens's kv head j is editing our heads j·group … j·group +
//   group − 1 together. With n_kv_heads = n_heads both layouts are the same.
// - The final norm's output is ln_final.hook_out (its weight and bias applied: what the unembedding reads,
//   transformers' last hidden state), as in TransformerLens. TransformerLens's ln_final.hook_normalized, the
//   norm before its weight, has no site here; parse() says so instead of giving another tensor that name.
// hook_q and hook_k are the projections split into heads, before the q/k norm (Qwen3, Gemma-3, OLMo-2) and
// before RoPE, as in TransformerLens (its hook_rot_q / hook_rot_k, after RoPE, have no site here).
#include <string>
#include <vector>

namespace hs {

enum class SiteKind {
  ResidPre,     // blocks.{l}.hook_resid_pre      [batch, pos, d_model]
  AttnPattern,  // blocks.{l}.attn.hook_pattern   [batch, head, q_pos, k_pos]
  AttnQ,        // blocks.{l}.attn.hook_q         [batch, pos, head, d_head]  (before q-norm, RoPE)
  AttnK,        // blocks.{l}.attn.hook_k         [batch, pos, head, d_head]  (per query head, before k-norm)
  AttnV,        // blocks.{l}.attn.hook_v         [batch, pos, head, d_head]  (per query head)
  AttnZ,        // blocks.{l}.attn.hook_z         [batch, pos, head, d_head]
  AttnResult,   // blocks.{l}.attn.hook_result    [batch, pos, head, d_model] (computed on request only)
  AttnOut,      // blocks.{l}.hook_attn_out       [batch, pos, d_model]
  ResidMid,     // blocks.{l}.hook_resid_mid      [batch, pos, d_model]  (the MLP's input residual; none in a
                //                                 parallel-residual model, whose MLP reads resid_pre)
  MlpOut,       // blocks.{l}.hook_mlp_out        [batch, pos, d_model]
  ResidPost,    // blocks.{l}.hook_resid_post     [batch, pos, d_model]
  LnFinal,      // ln_final.hook_out              [batch, pos, d_model]  (layer is -1)
};

struct SiteInfo {
  SiteKind kind;
  const char* pattern;  // "{l}" stands for the layer
  bool perHead;         // has a head axis that interventions may select
  int headAxis;         // axis of the head dimension in the captured tensor (-1 if none)
  int posAxis;          // axis of the (query) position
  const char* shape;    // human-readable shape
};

// The one naming table.
const std::vector<SiteInfo>& siteTable();
const SiteInfo& siteInfo(SiteKind kind);

struct Site {
  SiteKind kind = SiteKind::ResidPre;
  int layer = 0;  // -1 for LnFinal

  std::string name() const;                    // "blocks.3.attn.hook_z"
  static Site parse(const std::string& name);  // throws hs::Error naming the string
  bool operator<(const Site& o) const { return kind != o.kind ? kind < o.kind : layer < o.layer; }
  bool operator==(const Site& o) const { return kind == o.kind && layer == o.layer; }
  bool operator!=(const Site& o) const { return !(*this == o); }
};

// Convenience constructors so call sites read like the table.
inline Site residPre(int l) {
  return {SiteKind::ResidPre, l};
}
inline Site attnPattern(int l) {
  return {SiteKind::AttnPattern, l};
}
inline Site attnQ(int l) {
  return {SiteKind::AttnQ, l};
}
inline Site attnK(int l) {
  return {SiteKind::AttnK, l};
}
inline Site attnV(int l) {
  return {SiteKind::AttnV, l};
}
inline Site attnZ(int l) {
  return {SiteKind::AttnZ, l};
}
inline Site attnResult(int l) {
  return {SiteKind::AttnResult, l};
}
inline Site attnOut(int l) {
  return {SiteKind::AttnOut, l};
}
inline Site residMid(int l) {
  return {SiteKind::ResidMid, l};
}
inline Site mlpOut(int l) {
  return {SiteKind::MlpOut, l};
}
inline Site residPost(int l) {
  return {SiteKind::ResidPost, l};
}
inline Site lnFinal() {
  return {SiteKind::LnFinal, -1};
}

}  // namespace hs
