#pragma once
// Published results as runs: the dual-route study's per-head scores on real models (Feucht, Wallace, Bau,
// COLM 2025; sfeucht/dual-route-induction, MIT, its cache/ folder), read into runs of the method
// "published" so that sessions hold them like any run (the Heads tab compares them with one's own run),
// and a model's training checkpoints form learning-dynamics series (results/checkpoint_series.h).
//
// Files (the repository's layout; a file elsewhere is recognised by its name, its model being its folder,
// or the folder above when that one is a checkpoint such as "step1000" or "stage1-step1000-tokens5B"):
//   causal_scores/<model>[/<ckpt>]/{concept,token}_copying_len<L>_n<N>.json [{"layer","head_idx","score"}]
//       → grid dual_route.concept_copying / dual_route.token_copying (ΔP, as ours)
//   attention_scores/<model>[/<ckpt>]/n<N>_seqlen<L>[_randomtokents].json
//       {"next_tok_attn": [...], "end_tok_attn": [...]} (value-weighted attention from the last token)
//       random-token entities → dual_route.next_token_matching (next_tok_attn) and
//                               dual_route.last_token_matching.random_tokens (end_tok_attn);
//       real words            → dual_route.last_token_matching (end_tok_attn) and
//                               dual_route.next_token_matching.words (next_tok_attn)
//   head_orderings/<model>/<name>.json   [[layer, head], ...] best first
//       → grid dual_route.ordering.<name> (value: heads ranked below, so top-k by value is the ordering's
//         first k) and table dual_route.ordering.<name> (rank, layer, head)
//   language_patching/<model>/<details>.json   {"base_desired_acc", ...}
//       → table dual_route.language_patching.<details> (measure, value)
// One run per (model, checkpoint): provenance model "<model>" or "<model>@<checkpoint>", task
// "dual-route study (published)", seed 8 (the official scripts' seed), options {model, checkpoint, step,
// files}; the step (from "step<N>" in the checkpoint name) is what a learning-dynamics series orders by.
#include <string>
#include <vector>

#include "analysis/framework/registry.h"
#include "results/results.h"

namespace hs {

// Reads files and folders (folders recursively, their .json files) into runs with ids
// uniqueRunId("published", taken ∪ the ids given so far). A file that is not one of the forms above, has a
// head twice or misses one, is refused with one line naming it.
std::vector<AnalysisRun> importPublished(const std::vector<std::string>& paths,
                                         const std::vector<std::string>& taken = {});

// The registry record of "published": imported, not computed (no model, no CLI command of its own, no
// Run-menu entry); its options document what each run records.
MethodInfo publishedMethod();

// Where the converted copies that ship with HeadScope live (resources/published, installed to
// share/headscope/published): "" when not installed.
std::string publishedResourceDir();

}  // namespace hs
