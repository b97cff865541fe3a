#include "model/hooks.h"

#include <cstdlib>
#include <string>

#include "util/error.h"

namespace hs {

// The one naming table (TransformerLens names). Axis numbers refer to the captured tensor.
const std::vector<SiteInfo>& siteTable() {
  static const std::vector<SiteInfo> table = {
      {SiteKind::ResidPre, "blocks.{l}.hook_resid_pre", false, -1, 1, "[batch, pos, d_model]"},
      {SiteKind::AttnPattern, "blocks.{l}.attn.hook_pattern", true, 1, 2, "[batch, head, q_pos, k_pos]"},
      {SiteKind::AttnQ, "blocks.{l}.attn.hook_q", true, 2, 1, "[batch, pos, head, d_head]"},
      {SiteKind::AttnK, "blocks.{l}.attn.hook_k", true, 2, 1, "[batch, pos, head, d_head]"},
      {SiteKind::AttnV, "blocks.{l}.attn.hook_v", true, 2, 1, "[batch, pos, head, d_head]"},
      {SiteKind::AttnZ, "blocks.{l}.attn.hook_z", true, 2, 1, "[batch, pos, head, d_head]"},
      {SiteKind::AttnResult, "blocks.{l}.attn.hook_result", true, 2, 1, "[batch, pos, head, d_model]"},
      {SiteKind::AttnOut, "blocks.{l}.hook_attn_out", false, -1, 1, "[batch, pos, d_model]"},
      {SiteKind::ResidMid, "blocks.{l}.hook_resid_mid", false, -1, 1, "[batch, pos, d_model]"},
      {SiteKind::MlpOut, "blocks.{l}.hook_mlp_out", false, -1, 1, "[batch, pos, d_model]"},
      {SiteKind::ResidPost, "blocks.{l}.hook_resid_post", false, -1, 1, "[batch, pos, d_model]"},
      {SiteKind::LnFinal, "ln_final.hook_out", false, -1, 1, "[batch, pos, d_model]"},
  };
  return table;
}

const SiteInfo& siteInfo(SiteKind kind) {
  for (const SiteInfo& info : siteTable())
    if (info.kind == kind) return info;
  fail("siteInfo: unknown site kind ", static_cast<int>(kind));
}

namespace {

// A table pattern with "{l}" replaced by `layer`.
std::string withLayer(const char* pattern, const std::string& layer) {
  std::string name = pattern;
  const auto at = name.find("{l}");
  if (at != std::string::npos) name.replace(at, 3, layer);
  return name;
}

// Every name of the table, the layer written as "L": "blocks.L.hook_resid_pre, ..., ln_final.hook_out".
std::string validSiteNames() {
  std::string out;
  for (const SiteInfo& info : siteTable())
    out += (out.empty() ? "" : ", ") + withLayer(info.pattern, "L");
  return out;
}

}  // namespace

std::string Site::name() const {
  return withLayer(siteInfo(kind).pattern, std::to_string(layer));
}

Site Site::parse(const std::string& name) {
  for (const SiteInfo& info : siteTable()) {
    const std::string pattern = info.pattern;
    const auto at = pattern.find("{l}");
    if (at == std::string::npos) {
      if (name == pattern) return Site{info.kind, -1};
      continue;
    }
    const std::string prefix = pattern.substr(0, at), suffix = pattern.substr(at + 3);
    if (name.size() <= prefix.size() + suffix.size()) continue;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    if (name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    bool allDigits = !digits.empty() && digits.size() <= 6;
    for (char c : digits)
      allDigits = allDigits && c >= '0' && c <= '9';
    if (!allDigits) fail("hook site \"", name, "\": layer \"", digits, "\" is not a non-negative integer");
    return Site{info.kind, std::atoi(digits.c_str())};
  }
  if (name == "ln_final.hook_normalized")  // TransformerLens's name for the final norm before its weight
    fail(
        "hook site \"ln_final.hook_normalized\" is not captured: in TransformerLens it is the final norm "
        "before "
        "its weight and bias; the norm's output, which the unembedding reads, is \"ln_final.hook_out\"");
  fail("unknown hook site \"", name, "\" (valid: ", validSiteNames(), "; L is a layer number)");
}

}  // namespace hs
