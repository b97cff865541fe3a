#pragma once
// The `evaluate` analysis: the task's accuracy under head interventions, against its baseline — what the
// GUI's "Evaluate with interventions" and `headscope-cli evaluate` both run. Ablations (zero, mean) act on
// the ICL prompts at every position; a mean-ablated head's z becomes its mean from `mean` (by default over
// a neutral text corpus, never the task's own prompts unless mean_source = task: those would put the task
// signal back). Patches ("patch from clean": z at N ← the clean ICL mean) and steering (z at N += the clean
// ICL mean) act on the zero-shot prompts of the same queries, where the task is not shown; the clean mean is
// hook_z at N averaged over the task's ICL prompts — there the task signal is the point.
// Table "evaluate.accuracy": one row per condition (icl, icl_intervened, zero_shot, zero_shot_intervened)
// with n, heads, accuracy, its 95 % Wilson interval, and the TR ratio (classification; NaN otherwise).
// Prompts: "icl" and "zero_shot" (with the label set for classification tasks).
// Random-heads control (random_draws > 0): each draw ablates as many heads as were chosen, drawn at random
// from the other heads (seeded), with the same kinds (the i-th drawn head gets the i-th chosen head's
// kind); table "evaluate.random_control" has one row per draw, and the summary the draws' mean accuracy
// and the 2.5 / 97.5 % range of the draws ("random_control"). Table "evaluate.prompts" lists every prompt
// (set, index, query input, answer, prediction and answer probability before / after the interventions).
#include <utility>
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/head_toolkit.h"
#include "analysis/icl_task.h"
#include "analysis/registry.h"
#include "model/transformer.h"
#include "results/results.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct EvaluateOptions {
  std::vector<HeadRef> zero_ablate;  // hook_z ← 0 at every position of the ICL prompts
  std::vector<HeadRef> mean_ablate;  // hook_z ← its mean from `mean` at every position of the ICL prompts
  std::vector<HeadRef> patch_clean;  // hook_z at N ← the clean mean, zero-shot prompts
  std::vector<HeadRef> steer;        // hook_z at N += steer_scale · the clean mean, zero-shot prompts
  double steer_scale = 1.0;
  MeanSource mean;       // means of mean_ablate (a neutral text corpus by default)
  int random_draws = 0;  // random head sets of the ablated size (0: no control)
  int random_seed = 1;
  int batch = 16;  // prompts per forward
};
const OptionTable<EvaluateOptions>& evaluateOptionTable();
MethodInfo evaluateMethod();  // the registry record

// Throws naming the head when one head is given two interventions, or a head is outside the model.
// `tok` reads the mean corpus (needed when mean_ablate uses a corpus) and turns predicted token ids into
// pieces in the per-prompt table.
AnalysisOutput runEvaluate(const Transformer& model, const IclTask& task, const EvaluateOptions& o,
                           const AnalysisContext& ctx = {}, const Tokenizer* tok = nullptr);

// The 95 % Wilson score interval of `k` successes in `n` trials ({NaN, NaN} when n is 0).
std::pair<double, double> wilsonInterval(int k, int n);

}  // namespace hs
