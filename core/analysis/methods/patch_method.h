#pragma once
// The `patch` analysis: the activation patching sweep (patch_sweep.h) of one prompt pair as a run. Grid
// "patch.effect" (per position: "patch.effect.pos<P>"); with `attribution` also "patch.attribution"
// (".pos<P>") and the table "patch.rank_agreement" (Spearman ρ and Kendall τ of exact vs attribution).
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"
#include "model/transformer.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct PatchOptions {
  std::string clean, corrupt;               // prompt texts (encoded as the tokenizer's config says)
  std::vector<int> clean_ids, corrupt_ids;  // or the prompts as token ids
  std::string target, distractor;           // TOKEN: "#ID", a vocabulary string, or text of one token
  std::string metric = "prob";              // prob | logit | logit_diff (read at the last position)
  std::string mode = "clean";               // clean | zero | mean: what a patched head's z becomes
  MeanSource mean;                          // mode mean: a neutral corpus by default; "task" = the pair
  std::vector<int> positions;               // patched positions (negative from the end); empty = the last
  bool per_position = false;                // one grid per position (every position when none are given)
  bool attribution = false;                 // also attribution patching and its rank agreement
  bool naive = false;                       // one full forward per head instead of the fast path
};
const OptionTable<PatchOptions>& patchOptionTable();
MethodInfo patchMethod();  // the registry record

// `tok` may be null when both prompts are given as ids and the tokens as #ID.
AnalysisOutput runPatch(const Transformer& model, const Tokenizer* tok, const PatchOptions& o,
                        const AnalysisContext& ctx = {});

// TOKEN as the patch options take it: "#ID", a raw vocabulary string ("▁Ben", "Ġthe"), or text that
// encodes (without BOS) to exactly one token other than the unknown token. Errors name `option` (e.g.
// "--target").
int64_t resolveToken(const Tokenizer* tok, int64_t vocabSize, const std::string& s,
                     const std::string& option);

}  // namespace hs
