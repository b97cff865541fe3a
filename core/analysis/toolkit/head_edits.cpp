#include "analysis/toolkit/head_edits.h"

#include <ATen/ATen.h>

#include <map>

#include "analysis/toolkit/prompt_batches.h"
#include "util/error.h"

namespace hs {

const char* toString(HeadEditKind k) {
  switch (k) {
    case HeadEditKind::ZeroAblate:
      return "zero_ablate";
    case HeadEditKind::MeanAblate:
      return "mean_ablate";
    case HeadEditKind::Patch:
      return "patch_clean";
    case HeadEditKind::Steer:
      return "steer";
  }
  return "?";
}

std::string describeHeadEdit(const HeadEdit& e) {
  const std::string head = cat(e.head.layer, ".", e.head.head);
  switch (e.kind) {
    case HeadEditKind::ZeroAblate:
      return "zero-ablate " + head;
    case HeadEditKind::MeanAblate:
      return "mean-ablate " + head;
    case HeadEditKind::Patch:
      return "patch " + head + " from " + describeHeadVectorSource(e.source);
    case HeadEditKind::Steer:
      return cat("steer ", head, " by ", e.scale, " × ", describeHeadVectorSource(e.source));
  }
  return head;
}

HeadVectorSource sourceOf(const HeadEdit& e) {
  if (e.kind == HeadEditKind::MeanAblate) return {"mean", 0, ""};
  return e.source;
}

bool sameSource(const HeadVectorSource& a, const HeadVectorSource& b) {
  if (a.source != b.source) return false;
  if (a.source == "prompt") return a.prompt == b.prompt;
  if (a.source == "text") return a.text == b.text;
  return true;
}

std::vector<Intervention> headEditInterventions(
    const Transformer& model, const std::vector<HeadEdit>& edits,
    const std::function<at::Tensor(const HeadVectorSource&)>& vectorOf) {
  // One vector per distinct source, in the order the edits name them.
  std::vector<std::pair<HeadVectorSource, at::Tensor>> vectors;
  auto vector = [&](const HeadVectorSource& s) {
    for (const auto& [source, z] : vectors)
      if (sameSource(source, s)) return z;
    vectors.emplace_back(s, vectorOf(s));
    return vectors.back().second;  // [layers, heads, d_head]
  };
  std::vector<Intervention> out;
  for (const HeadEdit& e : edits) {
    const std::string what = describeHeadEdit(e);
    checkHeads(model, {e.head}, what);
    std::vector<Intervention> ivs;
    const bool atN = e.kind == HeadEditKind::Patch || e.kind == HeadEditKind::Steer;
    const std::vector<int> pos = !e.positions.empty() ? e.positions
                                 : atN                ? std::vector<int>{-1}
                                                      : std::vector<int>{};
    if (e.kind == HeadEditKind::ZeroAblate) ivs = zeroHeads({e.head}, pos);
    if (e.kind == HeadEditKind::MeanAblate) ivs = meanHeads({e.head}, vector(sourceOf(e)), pos);
    if (e.kind == HeadEditKind::Patch) ivs = replaceHeads({e.head}, vector(e.source), pos);
    if (e.kind == HeadEditKind::Steer)
      ivs = withContext(what,
                        [&] { return steerHeads(model, {e.head}, vector(e.source), e.layer, pos, e.scale); });
    out.insert(out.end(), ivs.begin(), ivs.end());
  }
  return out;
}

at::Tensor headSourceZ(const Transformer& model, const Tokenizer* tok, const std::vector<Prompt>& icl,
                       const HeadVectorSource& source, const MeanSource& mean, const AnalysisContext& ctx,
                       int batch) {
  const std::string& s = source.source;
  if (s == "clean_mean") {
    if (icl.empty()) fail("the clean ICL mean needs the task's ICL prompts");
    return meanZ(model, tokenSeqs(icl), ZMean::LastPosition, ctx, batch);  // [layers, heads, d_head]
  }
  if (s == "mean") return resolveMeanZ(model, tok, mean, tokenSeqs(icl), ctx);
  if (s == "prompt") {
    if (source.prompt < 0 || source.prompt >= static_cast<int>(icl.size()))
      fail("source prompt ", source.prompt, " is outside the task's ", icl.size(), " ICL prompts (0 to ",
           static_cast<int>(icl.size()) - 1, ")");
    const std::vector<Prompt> one = {icl[static_cast<size_t>(source.prompt)]};
    return captureAtLast(model, tokenSeqs(one), attnZ, {}, ctx, 1)[0];  // [layers, heads, d_head]
  }
  if (s == "text") {
    if (!tok) fail("a text source needs the model's tokenizer");
    const std::vector<int> ids = tok->encode(source.text);
    if (ids.empty()) fail("the source text is empty");
    const TokenSeqs seqs = {std::vector<int64_t>(ids.begin(), ids.end())};
    return captureAtLast(model, seqs, attnZ, {}, ctx, 1)[0];  // [layers, heads, d_head]
  }
  fail("unknown vector source \"", s, "\" (clean_mean, mean, prompt, text)");
}

std::vector<Intervention> steerHeads(const Transformer& model, const std::vector<HeadRef>& heads,
                                     const at::Tensor& z, int layer, const std::vector<int>& positions,
                                     double scale) {
  if (layer < 0) return addHeads(heads, z, positions, scale);
  const ModelConfig& c = model.config();
  if (layer >= c.n_layers)
    fail("steering layer ", layer, " is outside the model's ", c.n_layers, " layers (0 to ", c.n_layers - 1,
         ", or -1 for the heads' own hook_z)");
  if (heads.empty()) return {};
  const at::Tensor writes = headWrites(model, z.unsqueeze(0))[0];  // [layers, heads, d_model]
  at::Tensor v = at::zeros({c.d_model}, writes.options());         // [d_model] the heads' summed write
  for (const HeadRef& h : heads)
    v = v + writes[h.layer][h.head];
  return {addToResidual(residPre(layer), v, positions, scale)};
}

std::string describeHeadVectorSource(const HeadVectorSource& source) {
  if (source.source == "clean_mean") return "hook_z at N averaged over the task's ICL prompts";
  if (source.source == "mean") return "the head's mean per mean_source";
  if (source.source == "prompt") return cat("hook_z at N of ICL prompt ", source.prompt);
  if (source.source == "text") return cat("hook_z at the last token of \"", source.text, "\"");
  return source.source;
}

}  // namespace hs
