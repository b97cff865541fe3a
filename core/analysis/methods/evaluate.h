#pragma once
// The `evaluate` analysis: the task's accuracy under head interventions, against its baseline — what the
// GUI's "Evaluate with interventions" and `headscope-cli evaluate` both run. Ablations (zero, mean) act on
// the ICL prompts at every position; a mean-ablated head's z becomes its mean from `mean` (by default over
// a neutral text corpus, never the task's own prompts unless mean_source = task: those would put the task
// signal back). Patches ("patch from clean": z at N ← a source vector) and steering (z at N += a source
// vector) act on the zero-shot prompts of the same queries, where the task is not shown. The source is by
// default the clean ICL mean, hook_z at N averaged over the task's ICL prompts — there the task signal is
// the point —, or the head's z at the last position of one ICL prompt or of a given text, or (steering) its
// mean from `mean`. Steering acts on the head's own hook_z by default; with steer_layer L it adds the
// head's write (W_O · vector, d_model) to hook_resid_pre(L) at N instead, as function-vector steering does.
// Table "evaluate.accuracy": one row per condition (icl, icl_intervened, zero_shot, zero_shot_intervened)
// with n, heads, accuracy, its 95 % Wilson interval, and the TR ratio (classification; NaN otherwise).
// Prompts: "icl" and "zero_shot" (with the label set for classification tasks).
// Random-heads control (random_draws > 0): each draw ablates as many heads as were chosen, drawn at random
// from the other live heads (liveHeads: a non-zero W_O; seeded), with the same kinds (the i-th drawn head
// gets the i-th chosen head's kind); table "evaluate.random_control" has one row per draw, and the summary
// the draws' mean accuracy, their sd, the 95 % t interval of the mean ("mean_lo", "mean_hi") and the 2.5
// / 97.5 % range of the draws ("accuracy_lo", "accuracy_hi") ("random_control"). Table "evaluate.prompts"
// lists every prompt (set, index, query input, answer, prediction and answer probability before / after the
// interventions).
#include <utility>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_edits.h"
#include "analysis/toolkit/head_toolkit.h"
#include "model/transformer.h"
#include "results/intervals.h"  // wilsonInterval
#include "results/results.h"
#include "tasks/icl_task.h"
#include "tokenizer/tokenizer.h"

namespace hs {

struct EvaluateOptions {
  std::vector<HeadRef> zero_ablate;  // hook_z ← 0 at every position of the ICL prompts
  std::vector<HeadRef> mean_ablate;  // hook_z ← its mean from `mean` at every position of the ICL prompts
  std::vector<HeadRef> patch_clean;  // hook_z at N ← patch_source's vector, zero-shot prompts
  std::vector<HeadRef> steer;        // at N += steer_scale · steer_source's vector, zero-shot prompts
  double steer_scale = 1.0;
  HeadVectorSource patch_source;  // "clean_mean", "prompt" or "text"
  HeadVectorSource steer_source;  // "clean_mean", "mean", "prompt" or "text"
  int steer_layer = -1;           // -1: the head's own hook_z; L: its write added to hook_resid_pre(L)
  MeanSource mean;       // means of mean_ablate and of steer_source "mean" (a neutral text corpus by default)
  int random_draws = 5;  // random head sets of the ablated size (0: no control)
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

// The `evaluate` options of `edits` (docs/methods.md, "Interventions"): the heads of each kind and each
// kind's one set of parameters. Throws naming the edit when they cannot be evaluated: positions of their own
// (the evaluation acts at every position for ablations, at N for patches and steering), a patch from
// "mean", or two sources, scales or layers within patches or within steering.
nlohmann::json evaluateOptionsOf(const std::vector<HeadEdit>& edits);

}  // namespace hs
