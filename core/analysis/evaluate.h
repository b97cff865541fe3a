#pragma once
// The `evaluate` analysis: the task's accuracy under head interventions, against its baseline — what the
// GUI's "Evaluate with interventions" and `headscope-cli evaluate` both run. Ablations (zero, mean) act on
// the ICL prompts at every position; a mean-ablated head's z becomes its mean from `mean` (by default over
// a neutral text corpus, never the task's own prompts unless mean_source = task: those would put the task
// signal back). Patches ("patch from clean": z at N ← the clean ICL mean) and steering (z at N += the clean
// ICL mean) act on the zero-shot prompts of the same queries, where the task is not shown; the clean mean is
// hook_z at N averaged over the task's ICL prompts — there the task signal is the point.
// Table "evaluate.accuracy": one row per condition (icl, icl_intervened, zero_shot, zero_shot_intervened)
// with n, heads, accuracy and TR ratio (classification; NaN otherwise).
// Prompts: "icl" and "zero_shot" (with the label set for classification tasks).
#include <vector>

#include "analysis/analysis_context.h"
#include "analysis/analysis_output.h"
#include "analysis/head_toolkit.h"
#include "analysis/icl_task.h"
#include "analysis/registry.h"
#include "model/transformer.h"
#include "results/results.h"

namespace hs {

struct EvaluateOptions {
  std::vector<HeadRef> zero_ablate;  // hook_z ← 0 at every position of the ICL prompts
  std::vector<HeadRef> mean_ablate;  // hook_z ← its mean from `mean` at every position of the ICL prompts
  std::vector<HeadRef> patch_clean;  // hook_z at N ← the clean mean, zero-shot prompts
  std::vector<HeadRef> steer;        // hook_z at N += steer_scale · the clean mean, zero-shot prompts
  double steer_scale = 1.0;
  MeanSource mean;  // means of mean_ablate (a neutral text corpus by default)
  int batch = 16;   // prompts per forward
};
const OptionTable<EvaluateOptions>& evaluateOptionTable();
MethodInfo evaluateMethod();  // the registry record

// Throws naming the head when one head is given two interventions, or a head is outside the model.
// `tok` reads the mean corpus (may be null when no mean ablation uses a corpus).
AnalysisOutput runEvaluate(const Transformer& model, const Tokenizer* tok, const IclTask& task,
                           const EvaluateOptions& o, const AnalysisContext& ctx = {});

}  // namespace hs
