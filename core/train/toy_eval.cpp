#include "train/toy_eval.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "analysis/toolkit/prompt_batches.h"
#include "tasks/toy/mixture.h"
#include "util/error.h"
#include "util/memory.h"

namespace hs {

std::vector<PromptScore> scorePrompts(const Transformer& model, const std::vector<toy::EvalPrompt>& prompts,
                                      const std::vector<Intervention>& interventions, int batch) {
  c10::InferenceMode guard;
  TokenSeqs seqs;
  std::vector<std::vector<int64_t>> answers;
  AnswerScoring scoring;
  scoring.batch = batch;
  scoring.interventions = interventions;
  for (size_t i = 0; i < prompts.size(); ++i) {
    const toy::EvalPrompt& p = prompts[i];
    if (p.answer.empty()) fail("eval prompt ", i, " (", p.kind, ") has no answer");
    seqs.emplace_back(p.tokens.begin(), p.tokens.end());
    answers.emplace_back(p.answer.begin(), p.answer.end());
    scoring.label_sets.push_back(p.label_set);
  }
  std::vector<PromptScore> scores;
  for (const AnswerScore& a : scoreAnswers(model, seqs, answers, scoring))
    scores.push_back({a.correct, a.first_pred, a.in_label_set});
  return scores;
}

nlohmann::json evalToy(const Transformer& model, const toy::ToyWorld& world, const ToyEvalOptions& opts) {
  using toy::evalSeed;
  const uint64_t n = static_cast<uint64_t>(opts.n);
  if (opts.n < 1 || opts.n > 10'000'000) fail("eval-toy: n = ", opts.n, ", expected 1..10000000");
  {
    // Two prompt sets are alive at once (8-shot and zero-shot classification): estimate from one prompt.
    const toy::EvalPrompt p = toy::iclClsPrompt(world, 1, 8);
    const uint64_t each = sizeof(p) +
                          (p.tokens.capacity() + p.answer.capacity() + p.label_set.capacity()) * sizeof(int) +
                          p.kind.capacity();
    checkFitsInMemory("eval-toy", 2 * n, each, "prompts", "ask for fewer prompts (--n)");
  }
  auto build = [&](auto&& make) {
    std::vector<toy::EvalPrompt> v;
    for (uint64_t i = 0; i < n; ++i)
      v.push_back(make(i));
    return v;
  };
  auto accuracy = [](const std::vector<PromptScore>& s) {
    double c = 0;
    for (const auto& x : s)
      c += x.correct;
    return s.empty() ? 0.0 : c / static_cast<double>(s.size());
  };
  auto trRatio = [](const std::vector<PromptScore>& s) {
    double c = 0;
    for (const auto& x : s)
      c += x.in_label_set;
    return s.empty() ? 0.0 : c / static_cast<double>(s.size());
  };
  auto score = [&](const std::vector<toy::EvalPrompt>& p) {
    return scorePrompts(model, p, opts.interventions, opts.batch);
  };
  // Each quantity gets its own seed family so prompts never coincide across quantities.
  auto seedOf = [&](uint64_t family, uint64_t i) { return evalSeed(opts.seed * 1000003ULL + family, i); };

  const auto induction = score(build([&](uint64_t i) { return toy::inductionPrompt(world, seedOf(1, i)); }));
  const auto conceptCopy =
      score(build([&](uint64_t i) { return toy::conceptCopyPrompt(world, seedOf(2, i)); }));
  const auto translation = score(build([&](uint64_t i) {
    return toy::translationPrompt(world, seedOf(3, i), i % 2 == 0 ? toy::Lang::A : toy::Lang::B);
  }));
  const auto cls8Prompts = build([&](uint64_t i) { return toy::iclClsPrompt(world, seedOf(4, i), 8); });
  const auto cls0Prompts = build([&](uint64_t i) { return toy::iclClsPrompt(world, seedOf(5, i), 0); });
  const auto cls8 = score(cls8Prompts);
  const auto cls0 = score(cls0Prompts);
  const std::vector<std::string> tasks = toy::MixtureConfig{}.fn_tasks;  // the tasks training used
  const auto fn8 = score(build(
      [&](uint64_t i) { return toy::functionPrompt(world, seedOf(6, i), tasks[i % tasks.size()], 8); }));
  const auto fn0 = score(build(
      [&](uint64_t i) { return toy::functionPrompt(world, seedOf(7, i), tasks[i % tasks.size()], 0); }));

  double chance = 0;
  for (const auto& p : cls0Prompts)
    chance += 1.0 / static_cast<double>(p.label_set.size());
  chance /= std::max<double>(1.0, static_cast<double>(cls0Prompts.size()));

  return {{"induction_acc", accuracy(induction)},
          {"concept_copy_acc", accuracy(conceptCopy)},
          {"translation_acc", accuracy(translation)},
          {"icl_cls_acc_8shot", accuracy(cls8)},
          {"icl_cls_acc_0shot", accuracy(cls0)},
          {"tr_ratio_8shot", trRatio(cls8)},
          {"tr_ratio_0shot", trRatio(cls0)},
          {"function_acc_8shot", accuracy(fn8)},
          {"function_acc_0shot", accuracy(fn0)},
          {"chance", {{"icl_cls", chance}}},
          {"n", opts.n},
          {"seed", opts.seed},
          {"function_tasks", tasks},
          {"format",
           {{"induction", toy::formatDescription("induction")},
            {"concept_copy", toy::formatDescription("concept_copy")},
            {"translation", toy::formatDescription("translation") + " (even prompts A→B, odd B→A)"},
            {"icl_cls", toy::formatDescription("icl_cls")},
            {"function", toy::formatDescription("function") + " (task i mod number of tasks)"},
            {"scoring",
             "greedy exact match of every answer token, teacher-forced; TR ratio = share of "
             "first-answer argmaxes (over the whole vocabulary) that are one of the episode's labels"}}}};
}

}  // namespace hs
