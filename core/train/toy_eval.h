#pragma once
// Accuracy of a model on each task kind of the toy world (`headscope-cli eval-toy`). Multi-token answers
// count as correct only when every token is the argmax given the previous ones (greedy exact match,
// computed teacher-forced in one batched forward).
#include <nlohmann/json.hpp>

#include <vector>

#include "model/intervention.h"
#include "model/transformer.h"
#include "tasks/toy/eval_prompts.h"
#include "tasks/toy/world.h"

namespace hs {

struct ToyEvalOptions {
  int n = 200;                              // prompts per measured quantity
  uint64_t seed = 1;                        // evaluation seed (fresh prompts, never training samples)
  int batch = 64;                           // prompts per forward
  std::vector<Intervention> interventions;  // applied to every prompt (e.g. head ablations)
};

struct PromptScore {
  bool correct = false;  // every answer token was the argmax
  int first_pred = -1;   // argmax at the first answer position
  bool in_label_set = false;
};

// Scores prompts in left-padded batches.
std::vector<PromptScore> scorePrompts(const Transformer& model, const std::vector<toy::EvalPrompt>& prompts,
                                      const std::vector<Intervention>& interventions, int batch = 64);

// {"induction_acc", "concept_copy_acc", "translation_acc", "icl_cls_acc_8shot", "icl_cls_acc_0shot",
//  "tr_ratio_0shot", "tr_ratio_8shot", "function_acc_8shot", "function_acc_0shot", "chance": {...},
//  "format": {...}, "n", "seed"}
nlohmann::json evalToy(const Transformer& model, const toy::ToyWorld& world, const ToyEvalOptions& opts);

}  // namespace hs
