#pragma once
// The head operations every analysis shares: interventions on heads and on the residual stream, mean
// head outputs (last position, all positions, or a neutral text corpus), head writes into the residual
// stream, top-k and random head sets, and the provenance of a run. One implementation of each; the
// analyses, the CLI and the GUI call these.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/batch_runner.h"
#include "analysis/options.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// ---- interventions ----
// On hook_z of `heads` at `positions` (empty = every position), one intervention per layer.
std::vector<Intervention> zeroHeads(const std::vector<HeadRef>& heads,
                                    const std::vector<int>& positions = {});
// z ← mean_z[layer, head] ([layers, heads, d_head]).
std::vector<Intervention> meanHeads(const std::vector<HeadRef>& heads, const at::Tensor& mean_z,
                                    const std::vector<int>& positions = {});
// z ← values[layer, head] ([layers, heads, d_head]; e.g. a clean run's mean: "patch from clean").
std::vector<Intervention> replaceHeads(const std::vector<HeadRef>& heads, const at::Tensor& values,
                                       const std::vector<int>& positions = {});
// z ← z + scale · values[layer, head] ([layers, heads, d_head]).
std::vector<Intervention> addHeads(const std::vector<HeadRef>& heads, const at::Tensor& values,
                                   const std::vector<int>& positions = {}, double scale = 1.0);
// Zero (mean_z undefined) or mean ablation of `heads` at every position.
std::vector<Intervention> ablateHeads(const std::vector<HeadRef>& heads, const at::Tensor& mean_z = {});
// A residual-stream site (hook_resid_pre / hook_resid_post of a layer) at `positions`: v [d_model].
Intervention addToResidual(Site site, const at::Tensor& v, const std::vector<int>& positions = {-1},
                           double scale = 1.0);
Intervention replaceResidual(Site site, const at::Tensor& v, const std::vector<int>& positions = {-1});

// ---- mean head outputs ----
enum class ZMean {
  LastPosition,  // hook_z at N of every prompt
  AllPositions,  // hook_z at every real position of every prompt
};
// Mean hook_z per head over prompts: [layers, heads, d_head] float32 (accumulated in float64).
at::Tensor meanZ(const Transformer& model, const TokenSeqs& prompts, ZMean scope,
                 const AnalysisContext& ctx = {}, int batch = 16);
// The mean over all positions of a neutral text: the file is read, encoded (with BOS when the tokenizer
// adds one) and cut into `chunks` windows of `chunk_tokens` tokens (fewer when the text is short).
struct CorpusMean {
  std::string file;
  int chunk_tokens = 128;
  int chunks = 64;
};
at::Tensor corpusMeanZ(const Transformer& model, const Tokenizer& tok, const CorpusMean& corpus,
                       const AnalysisContext& ctx = {});

// Where a mean ablation's means come from. The default is a neutral text corpus: replacing a head by its
// mean output on the task's own prompts puts the task signal back (DESIGN 5.1).
struct MeanSource {
  std::string source =
      "corpus";        // "corpus" (corpusMeanZ of `corpus`), "file" (`file`), "task" (task prompts)
  std::string corpus;  // text file; "" = the default corpus (defaultMeanCorpus())
  std::string file;    // safetensors file holding mean_z [layers, heads, d_head]
};
// The neutral text the corpus mean reads when none is given: the excerpt of WikiText-2's test split that
// ships with HeadScope (share/headscope/corpora), or "" when it is not installed.
std::string defaultMeanCorpus();
// The mean z a mean ablation uses: [layers, heads, d_head] float32. `taskPrompts` serve source "task"
// (their all-position mean). Errors name the file or the source.
at::Tensor resolveMeanZ(const Transformer& model, const Tokenizer* tok, const MeanSource& source,
                        const TokenSeqs& taskPrompts, const AnalysisContext& ctx = {});
// A description of the source for provenance ("corpus /path (64 windows of 128 tokens)", "task prompts").
std::string describeMeanSource(const MeanSource& source);
// Adds the three options (mean_source, mean_corpus, mean_file) of a MeanSource member to a method's table.
template <class O>
OptionTable<O>& addMeanSourceOptions(OptionTable<O>& table, MeanSource O::*member) {
  return table
      .add(
          "mean_source", [member](O& o) -> std::string& { return (o.*member).source; },
          "where mean ablation's means come from: a neutral text corpus, a safetensors file with mean_z, or "
          "the task's own prompts",
          OptionCheck::oneOf({"corpus", "file", "task"}))
      .add(
          "mean_corpus", [member](O& o) -> std::string& { return (o.*member).corpus; },
          "text file of the corpus mean (empty: wikitext-2 from the reference data)", OptionCheck::path())
      .add(
          "mean_file", [member](O& o) -> std::string& { return (o.*member).file; },
          "safetensors file with mean_z [layers, heads, d_head] (mean_source file)", OptionCheck::path());
}

// ---- prompts a run records ----
// Appends `prompts` to the run's prompt records under `set` (query at N = the last position).
void recordPrompts(AnalysisOutput& out, const std::string& set, const std::vector<Prompt>& prompts);
void recordPrompts(AnalysisOutput& out, const std::string& set, const TokenSeqs& prompts,
                   const std::vector<std::vector<int64_t>>& answers = {});

// ---- head writes ----
// W_O slice of one head: [d_model, d_head] (GPT-2's combined projection included).
at::Tensor headOutputWeight(const Transformer& model, int layer, int head);
// a = W_O slice · z per head: z [n, layers, heads, d_head] → [n, layers, heads, d_model] float32.
at::Tensor headWrites(const Transformer& model, const at::Tensor& z);
// Per-head writes at the last position of every prompt: [n_prompts, layers, heads, d_model] float32.
at::Tensor headOutputsAtLast(const Transformer& model, const TokenSeqs& prompts,
                             const std::vector<Intervention>& interventions = {},
                             const AnalysisContext& ctx = {});

// ---- head sets ----
// Every head of an L × H model in a seeded random order.
std::vector<HeadRef> randomHeadOrder(int layers, int heads, uint64_t seed);
// A seeded random set of k heads outside `exclude` (fewer when the pool is smaller), layer-major order.
std::vector<HeadRef> randomHeads(int layers, int heads, int k, const std::set<HeadRef>& exclude,
                                 uint64_t seed);
// Every head is inside the model; throws naming `what` and the offending head otherwise.
void checkHeads(const Transformer& model, const std::vector<HeadRef>& heads, const std::string& what);
// [[l, h], ...] (an OptionType::HeadList value) → heads.
std::vector<HeadRef> headsFromJson(const nlohmann::json& j);

// ---- provenance and progress ----
// The provenance of a run's results: method, the model (ctx.model_path), task, seed, prompts, options.
Provenance makeProvenance(const std::string& method, const AnalysisContext& ctx, const std::string& task,
                          uint64_t seed, int n_prompts, const nlohmann::json& options);
// Stage i of n of a run: progress into [i/n, (i+1)/n), messages prefixed with `what`.
AnalysisContext stage(const AnalysisContext& ctx, int i, int n, const std::string& what);

}  // namespace hs
