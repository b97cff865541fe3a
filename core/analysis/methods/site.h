#pragma once
// SITE — soft head selection (docs/methods.md, "SITE"), as the official code (SNU-DRL/Soft_Injection) runs
// it.
//
// Task embedding t[l, k] = mean hook_z at N over `n_embed` ICL prompts (spec.shots demonstrations, queries
// and demonstrations from the train split). Parameters logit ∈ R^{L×H}, initially 0; α = sigmoid(logit).
// On a zero-shot prompt, at N only and in every layer,
//     z[l, k] ← (1 − α[l, k]) z[l, k] + α[l, k] t[l, k]
// before W_O (an Interpolate intervention on hook_z whose alpha requires grad). The model is frozen; the
// loss is the cross-entropy of the first answer token; Adam (β = 0.9, 0.999, ε = 1e-8) on the logits.
// Every step draws its `batch` zero-shot prompts afresh, uniformly with replacement, from the train
// split's queries (utils.py optimize_head_selection → preprocess.py format_icl: random.sample per step).
//
// Evaluation on the zero-shot prompts of spec's split, the injection in the prefill pass only:
//  - first-token match (the default, eval.py without --exact_match): the argmax at N equals the answer's
//    first token;
//  - exact match (`exact_match`, eval.py --exact_match): greedy generation (siteGenerate) of
//    `max_new_tokens` new tokens, stopping only at EOS, decoded and stripped, as the official model helpers'
//    generate (max_new_tokens=20, then batch_decode(...).strip()); `generation_stop separator` keeps the
//    earlier rule (stop at the template's separator token or EOS); then siteExactMatch.
// Splits (`splits`): a dataset that comes as the official train.json / valid.json / test.json folder uses
// those files (Dataset::given_split); otherwise, or with `splits seeded`, the seeded 70/9/21 split.
// The same rule scores zero-shot, ICL, SITE, and SITE restricted to high-α heads (α > 0.5 → 1, the rest
// 0) or to low-α heads (α < 0.5 → 1, the rest 0).
// Outputs: grid "site.alpha", curve "site.loss", table "site.accuracy"; tensors "alpha" [layers, heads]
// and "t" [layers, heads, d_head].
// α's per-head standard error (the grid's se; `alpha_resamples` B, 0 = none): the whole estimate is
// repeated on B bootstrap resamples — the embedding prompts resampled with replacement into t_b, the
// training pool resampled with replacement, α_b trained from 0 with the same options and a resample's own
// draw seed (siteResample) — and se = the sample sd over b of α_b (the bootstrap standard error). α itself
// is the full data's. Tensor "alpha_resamples" [B, layers, heads] holds every α_b. Prompt sets recorded:
// "embed" (the ICL prompts averaged into t), "train" (the zero-shot prompt of every step, in step order),
// "zero_shot" and "icl" (evaluation).
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/icl_task.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct SiteOptions {
  int n_embed = 50;                          // M: ICL prompts averaged into t
  int steps = 400;                           // Adam steps
  double lr = 0.2;                           // Adam learning rate on the logits
  int batch = 1;                             // zero-shot prompts per step
  int n_train = 0;                           // queries of the split the steps draw from; 0 = all of them
  bool exact_match = false;                  // score by string prefix of the generation, not the first token
  int max_new_tokens = 20;                   // greedy generation length limit (exact match)
  std::string generation_stop = "official";  // "official": max_new_tokens or EOS; "separator": also there
  std::string splits = "dataset";     // "dataset": the folder's own train/valid/test files; "seeded": 70/9/21
  std::string train_split = "train";  // split of the embedding and training queries
  int alpha_resamples = 5;  // bootstrap resamples for α's standard error (each one a full training); 0 = none
};
const OptionTable<SiteOptions>& siteOptionTable();
MethodInfo siteMethod();  // the registry record

// The whole analysis. `spec` is the evaluation set (test queries by default); the embedding and training
// prompts use its dataset, template, shots and seed (hence the same split) with queries from
// opt.train_split. Training order is seeded with spec.seed. Run id and model name from ctx.
AnalysisOutput runSite(const Transformer& model, const Tokenizer& tok, const TaskSpec& spec,
                       const SiteOptions& opt = {}, const AnalysisContext& ctx = {});

// The injection: one Interpolate on every layer's hook_z at position −1, tensor t[l] [heads, d_head], alpha
// alpha[l] as [heads, 1]. `alpha` [layers, heads] may require grad (training) or not (inference).
std::vector<Intervention> siteInterventions(const at::Tensor& t, const at::Tensor& alpha);

// One training example: a zero-shot prompt and its first answer token.
struct SiteExample {
  std::vector<int64_t> ids;  // [pos]
  int64_t answer = -1;
};

// Mean cross-entropy of the answer tokens with α = sigmoid(logit) injected (a scalar that carries the
// graph back to `logit` when it requires grad; prompts are left-padded into one batch).
at::Tensor siteLoss(const Transformer& model, const std::vector<SiteExample>& batch, const at::Tensor& t,
                    const at::Tensor& logit);

struct SiteTraining {
  at::Tensor logit;          // [layers, heads] after training (no grad)
  std::vector<double> loss;  // [steps] the loss of each step's batch, before its update
  std::vector<int> drawn;    // [steps · batch] index into `examples` of every prompt drawn, in order
};
// Adam on logit (from 0); each step draws `opt.batch` examples uniformly with replacement (seeded).
SiteTraining trainSite(const Transformer& model, const std::vector<SiteExample>& examples,
                       const at::Tensor& t, const SiteOptions& opt, uint64_t seed,
                       const AnalysisContext& ctx = {});

// The official exact-match rule (eval.py --exact_match): the generation stripped, "St." read as "Saint",
// cut at its first line break and at "(", stripped again; the target the same without the line cut; both
// lower-cased (ASCII) when `lowercase`; correct when the generation starts with the target.
bool siteExactMatch(const std::string& generated, const std::string& target, bool lowercase);
// eval.py compares case-sensitively only on tasks whose name contains "capitalize" or "lowercase".
bool siteCaseSensitiveTask(const std::string& datasetId);

struct SiteScoring {
  bool exact_match = false;  // false: first-token match
  int max_new_tokens = 20;   // exact match: greedy tokens at most
  int64_t stop = -1;  // exact match: generation also stops at this token (>= 0; generation_stop separator)
  int64_t eos = -1;   // ... and always at EOS (>= 0)
  bool lowercase = true;  // exact match: compare lower-cased
  int batch = 16;         // first-token match: prompts per forward
};
// Share of `prompts` answered correctly with `interventions` in the prefill pass (at N), by the rule of
// `scoring`: first-token match (argmax at N == the answer's first token) or exact match (greedy
// generation decoded by `tok`, siteExactMatch against the prompt's answer text).
double siteAccuracy(const Transformer& model, const Tokenizer& tok, const std::vector<Prompt>& prompts,
                    const std::vector<Intervention>& interventions, const SiteScoring& scoring,
                    const AnalysisContext& ctx = {});

// The exact-match generation of one prompt with `interventions` in the prefill: greedy, at most
// scoring.max_new_tokens tokens, ending at EOS (and at scoring.stop when >= 0), EOS dropped, decoded by `tok`
// and stripped (the official model helpers' generate: batch_decode(...,
// skip_special_tokens=True)[0].strip()).
std::string siteGenerate(const Transformer& model, const Tokenizer& tok, const Prompt& prompt,
                         const std::vector<Intervention>& interventions, const SiteScoring& scoring);

// Resample `b` of α's bootstrap (runSite, alpha_resamples): which embedding prompts (indices into the n_embed
// ICL prompts) and which training examples (indices into the pool) it averages and trains on, and the seed
// of its training draws. All derived from the task's seed, so a resample can be recomputed alone.
struct SiteResample {
  std::vector<size_t> embed;  // [n_embed] drawn with replacement
  std::vector<size_t> train;  // [pool] drawn with replacement
  uint64_t seed = 0;          // trainSite's seed
};
SiteResample siteResample(uint64_t seed, int b, size_t nEmbed, size_t nPool);

// The scoring of a run: first-token or exact match (opt.exact_match), generation as opt.generation_stop says
// (official: max_new_tokens or EOS; separator: also the first token of `tmpl`'s separator), case-insensitive
// unless the dataset's id names a case task.
SiteScoring siteScoring(const Transformer& model, const Tokenizer& tok, const SiteOptions& opt,
                        const PromptTemplate& tmpl, const std::string& datasetId);

// The token that ends an answer under a template: the first token of its example separator (continuation
// encoding), or -1 when the separator encodes to nothing.
int64_t separatorToken(const Tokenizer& tok, const PromptTemplate& tmpl);

}  // namespace hs
