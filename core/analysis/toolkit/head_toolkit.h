#pragma once
// The head operations every analysis shares: interventions on heads and on the residual stream, mean
// head outputs (last position, all positions, or a neutral text corpus), head writes into the residual
// stream, top-k and random head sets, and the provenance of a run. One implementation of each; the
// analyses, the CLI and the GUI call these.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/options.h"
#include "analysis/toolkit/prompt_batches.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tasks/toy_vocabulary.h"
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
// Gradients with respect to every head's z: a zero tensor of `shape` (broadcast to hook_z's slice at
// `positions`) added to hook_z of each layer from `firstLayer` on; after a backward pass through the run
// holding `interventions`, probes[l − firstLayer].grad() is ∂(the backpropagated value)/∂z there. The one
// way the key-head saliency (LTV) and attribution patching take ∂/∂z.
struct ZGradientProbes {
  std::vector<at::Tensor> probes;           // per layer, zeros of `shape` that require grad
  std::vector<Intervention> interventions;  // one Add on hook_z per probe
};
ZGradientProbes zGradientProbes(const Transformer& model, int firstLayer, const std::vector<int>& positions,
                                at::IntArrayRef shape);

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

// The toy world's neutral text: `chunks` samples of `chunk_tokens` tokens of its training mixture without
// the ICL kinds (induction spans, copied and translated word lists; no classification or function
// episodes), trailing padding removed. The toy tokenizer cannot read English, so the toy model's corpus
// mean reads this instead of WikiText.
TokenSeqs toyCorpusWindows(int chunks = 64, int chunk_tokens = 128);

// Where a mean ablation's means come from. The default is a neutral text corpus: replacing a head by its
// mean output on the task's own prompts puts the task signal back (docs/methods.md, "TSLA").
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
// (their all-position mean). The default corpus of the toy model (its vocabulary, isToyVocabulary) is
// toyCorpusWindows(). Errors name the file or the source.
at::Tensor resolveMeanZ(const Transformer& model, const Tokenizer* tok, const MeanSource& source,
                        const TokenSeqs& taskPrompts, const AnalysisContext& ctx = {});
// A description of the source for provenance ("all positions of 64 windows of 128 tokens of /path",
// "all positions of the task's prompts"); with the model and its tokenizer it names the toy world's
// text where resolveMeanZ reads that.
std::string describeMeanSource(const MeanSource& source, const Transformer* model = nullptr,
                               const Tokenizer* tok = nullptr);
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
// The same with the label set each prompt was scored against: one set for all, or one per prompt.
void recordPrompts(AnalysisOutput& out, const std::string& set, const std::vector<Prompt>& prompts,
                   const std::vector<std::vector<int>>& labelSets);
void recordPrompts(AnalysisOutput& out, const std::string& set, const TokenSeqs& prompts,
                   const std::vector<std::vector<int64_t>>& answers = {});

// ---- generation ----
// Greedy decoding from `prompt` [pos] through the KV cache with `everyStep` applied in every forward: the
// prefill and each one-token step (an intervention at position −1 acts on the prompt's last token, then on
// every generated token's position). Stops after maxNew tokens or when the context is full. The new tokens.
std::vector<int64_t> generateWithInterventions(const Transformer& model, const std::vector<int64_t>& prompt,
                                               int maxNew, const std::vector<Intervention>& everyStep);

// ---- head writes ----
// A head's write into the residual stream. With pre-norms (Llama, GPT-2, ...) it is a = W_O slice · z, and
// the heads' writes sum to the attention block's output (plus W_O's bias). With an attention post-norm
// (OLMo-2: x + RMSNorm(Σ_k W_O z_k)) W_O z is not additive; the write is defined through the norm at the
// run's activations: a_k = g ⊙ W_O z_k / rms(o), with o = Σ_k W_O z_k the block's output at that position
// and rms(o) = sqrt(mean(o²) + eps) frozen at its value in the run, so that Σ_k a_k is exactly the
// normalised block output the residual stream receives (the norm's Jacobian would not do: RMSNorm is
// scale-invariant, its Jacobian maps o itself to ~0).
//
// W_O slice of one head: [d_model, d_head] (GPT-2's combined projection included).
at::Tensor headOutputWeight(const Transformer& model, int layer, int head);
// True when W_O z is a head's additive write (no attention post-norm).
bool additiveHeadWrites(const Transformer& model);
// Throws, naming the architecture and `what`, when the model's heads' W_O z are not additive writes.
void requireAdditiveHeadWrites(const Transformer& model, const std::string& what);
// Per-head writes from z [n, layers, heads, d_head] → [n, layers, heads, d_model] float32. Post-norm models
// need the block outputs attnOut [n, layers, d_model] (hook_attn_out at the same positions); without them
// they are refused.
at::Tensor headWrites(const Transformer& model, const at::Tensor& z, const at::Tensor& attnOut = {});
// Per-head writes at the last position of every prompt: [n_prompts, layers, heads, d_model] float32
// (through the post-norm at the run's activations where the model has one).
at::Tensor headOutputsAtLast(const Transformer& model, const TokenSeqs& prompts,
                             const std::vector<Intervention>& interventions = {},
                             const AnalysisContext& ctx = {}, int batch = 16);

// ---- vocabularies ----
// The ids random-token prompts (induction scores) draw from, [first, second): the toy world's syllables on
// the toy model, otherwise the middle half of the model's vocabulary [V/4, 3V/4): ordinary trained tokens,
// clear of byte pieces and control tokens at the start and of reserved or padding rows at the end
// (Llama-3's 256 reserved specials, Qwen's unused rows past the tokenizer).
std::pair<int64_t, int64_t> inductionTokenRange(const Transformer& model, const Tokenizer* tok);

// ---- head sets ----
// Random controls draw from the live heads only (docs/methods.md, "Random controls"): a head whose W_O is
// all zero writes nothing, so ablating it is no control (the toy model has 14 such heads of 32).
// Every head of an L × H model, layer-major.
std::vector<HeadRef> allHeads(int layers, int heads);
// The heads that write into the residual stream: a W_O slice (headOutputWeight) with a non-zero entry,
// layer-major. The complement of silentHeads (model/load/silent_heads.h).
std::vector<HeadRef> liveHeads(const Transformer& model);
// The heads of `pool` in a seeded random order.
std::vector<HeadRef> randomHeadOrder(const std::vector<HeadRef>& pool, uint64_t seed);
// A random ordering control over every head of the model: the live heads in a seeded random order, then
// the silent heads layer-major (ablating those changes nothing: a curve is flat past the live count).
std::vector<HeadRef> randomLiveHeadOrder(const Transformer& model, uint64_t seed);
// A seeded random set of k heads of `pool` outside `exclude` (fewer when the pool is smaller), layer-major.
std::vector<HeadRef> randomHeads(const std::vector<HeadRef>& pool, int k, const std::set<HeadRef>& exclude,
                                 uint64_t seed);
// The seed of draw d of a control seeded with `seed` (draw 0: seed itself).
uint64_t drawSeed(uint64_t seed, int draw);
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
