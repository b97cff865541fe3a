#pragma once
// Hook sites, named as in TransformerLens. The C++ API is the typed Site; its string form (the one
// table below, kSiteTable) is what sessions and the CLI store. Never type a site name by hand.
#include <string>
#include <vector>

namespace hs {

enum class SiteKind {
  ResidPre,     // blocks.{l}.hook_resid_pre        [batch, pos, d_model]
  AttnPattern,  // blocks.{l}.attn.hook_pattern     [batch, head, q_pos, k_pos]
  AttnV,        // blocks.{l}.attn.hook_v           [batch, pos, head, d_head]  (GQA expanded to query heads)
  AttnZ,        // blocks.{l}.attn.hook_z           [batch, pos, head, d_head]
  AttnResult,   // blocks.{l}.attn.hook_result      [batch, pos, head, d_model] (computed on request only)
  AttnOut,      // blocks.{l}.hook_attn_out         [batch, pos, d_model]
  MlpOut,       // blocks.{l}.hook_mlp_out          [batch, pos, d_model]
  ResidPost,    // blocks.{l}.hook_resid_post       [batch, pos, d_model]
  LnFinal,      // ln_final.hook_normalized         [batch, pos, d_model]  (layer is -1)
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
