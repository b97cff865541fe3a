#pragma once
// Edits of single heads as a researcher states them — zero- or mean-ablate a head, patch its z from a
// source, steer it by a source's vector — and the one translation of such edits into interventions, shared
// by the GUI's Interventions dock (the Prompt, Attention and Attribution tabs), `evaluate` and
// `headscope-cli logits --ablate` (docs/methods.md, "Interventions"). One meaning of "mean" everywhere:
// mean ablation replaces a head's z by its mean per MeanSource, all positions of a neutral text corpus by
// default (the toy world's text for the toy model), never the prompt's or the task's own positions unless a
// caller asks for mean_source task.
#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/toolkit/head_toolkit.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// Where a patch's values or a steering vector come from: per head, a hook_z vector.
struct HeadVectorSource {
  // "clean_mean": hook_z at N averaged over the task's ICL prompts; "mean": the head's mean from a
  // MeanSource (all positions of a neutral corpus by default); "prompt": hook_z at N of the task's ICL
  // prompt number `prompt` (0-based); "text": hook_z at the last token of `text` (tokenized as a prompt).
  std::string source = "clean_mean";
  int prompt = 0;
  std::string text;
};

enum class HeadEditKind {
  ZeroAblate,  // z ← 0
  MeanAblate,  // z ← its mean per MeanSource (the "mean" vector source)
  Patch,       // z ← the source's vector
  Steer,       // z += scale · the source's vector (or its write added to hook_resid_pre(layer))
};
// "zero_ablate", "mean_ablate", "patch_clean", "steer": the `evaluate` option that lists such heads.
const char* toString(HeadEditKind k);

struct HeadEdit {
  HeadEditKind kind = HeadEditKind::ZeroAblate;
  HeadRef head;
  HeadVectorSource source;     // Patch and Steer (MeanAblate always reads "mean")
  double scale = 1.0;          // Steer
  int layer = -1;              // Steer: -1 the head's own hook_z; L its write into hook_resid_pre(L)
  std::vector<int> positions;  // empty: every position for ablations, N (−1) for patches and steering
};
// "zero-ablate 3.2", "patch 1.0 from ICL prompt 4", ...: how errors name an edit.
std::string describeHeadEdit(const HeadEdit& e);
// The source an edit reads ("mean" for MeanAblate; none for ZeroAblate).
HeadVectorSource sourceOf(const HeadEdit& e);

// The interventions of `edits`, in order. `vectorOf(source)` gives [layers, heads, d_head] for a source and
// is called once per distinct source. Throws naming the edit when its head is outside the model.
std::vector<Intervention> headEditInterventions(
    const Transformer& model, const std::vector<HeadEdit>& edits,
    const std::function<at::Tensor(const HeadVectorSource&)>& vectorOf);

// The vectors of `source` for every head: [layers, heads, d_head] float32. `icl` are the task's ICL prompts
// (clean_mean, prompt, and `mean` with source "task"); `tok` tokenizes a text source and reads a corpus.
// Errors name the source (a prompt index outside the task, an empty text).
at::Tensor headSourceZ(const Transformer& model, const Tokenizer* tok, const std::vector<Prompt>& icl,
                       const HeadVectorSource& source, const MeanSource& mean = {},
                       const AnalysisContext& ctx = {}, int batch = 16);
// Steering of `heads` by scale · z[layer, head] (z: [layers, heads, d_head]) at `positions`: with layer < 0
// on each head's own hook_z (addHeads); with layer L ≥ 0 the heads' writes W_O · z (headWrites, summed
// over the heads) added to hook_resid_pre(L) (addToResidual). Refuses a layer outside the model, and
// (through headWrites) models whose heads' writes are not additive.
std::vector<Intervention> steerHeads(const Transformer& model, const std::vector<HeadRef>& heads,
                                     const at::Tensor& z, int layer, const std::vector<int>& positions,
                                     double scale);
// A description of a source for provenance ("the clean ICL mean at N", "ICL prompt 3's z at N", ...).
std::string describeHeadVectorSource(const HeadVectorSource& source);
bool sameSource(const HeadVectorSource& a, const HeadVectorSource& b);

}  // namespace hs
