#pragma once
// SITE — soft head selection (DESIGN 5.4).
//
// Task embedding t[l, k] = mean hook_z at N over `n_embed` ICL prompts (spec.shots demonstrations, queries
// from the embedding split). Parameters logit ∈ R^{L×H}, initially 0; α = sigmoid(logit). On a zero-shot
// prompt, at N only and in every layer,
//     z[l, k] ← (1 − α[l, k]) z[l, k] + α[l, k] t[l, k]
// before W_O (an Interpolate intervention on hook_z whose alpha requires grad). The model is frozen; the
// loss is the cross-entropy of the first answer token; Adam (β = 0.9, 0.999, ε = 1e-8) on the logits.
//
// Inference injects in the prefill pass only: generation continues through the KV cache, whose keys and
// values at N already carry the injection. Greedy, up to `max_new_tokens`, stopping at the template's
// separator token or EOS; a query counts as correct when the generated ids start with the ids of the
// answer segment (exact-prefix match). The same rule scores zero-shot, ICL, SITE, and SITE restricted to
// high-α heads (α > 0.5 → 1, the rest 0) or to low-α heads (α < 0.5 → 1, the rest 0).
// Outputs: grid "site.alpha", curve "site.loss", table "site.accuracy"; tensors "alpha" [layers, heads]
// and "t" [layers, heads, d_head].
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/icl_task.h"
#include "analysis/registry.h"
#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/prompt.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct SiteOptions {
  int n_embed = 50;                   // M: ICL prompts averaged into t
  int steps = 400;                    // Adam steps
  double lr = 0.2;                    // Adam learning rate on the logits
  int batch = 1;                      // zero-shot prompts per step
  int n_train = 100;                  // distinct zero-shot training prompts (train split), cycled
  int max_new_tokens = 20;            // greedy generation length limit
  std::string train_split = "train";  // split of the embedding and training queries
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
};
// Adam on logit (from 0) over `examples` in a seeded order (reshuffled each pass).
SiteTraining trainSite(const Transformer& model, const std::vector<SiteExample>& examples,
                       const at::Tensor& t, const SiteOptions& opt, uint64_t seed,
                       const AnalysisContext& ctx = {});

// Exact-prefix accuracy of greedy generation over prompts, with `interventions` in the prefill pass.
// Stops at `stopToken` (or `eos`) when >= 0.
double generationAccuracy(const Transformer& model, const std::vector<Prompt>& prompts, int maxNew,
                          int64_t stopToken, int64_t eos, const std::vector<Intervention>& interventions = {},
                          const AnalysisContext& ctx = {});

// The token that ends an answer under a template: the first token of its example separator (continuation
// encoding), or -1 when the separator encodes to nothing.
int64_t separatorToken(const Tokenizer& tok, const PromptTemplate& tmpl);

}  // namespace hs
