#include "analysis/toolkit/icl_accuracy.h"

#include <cmath>
#include <limits>

namespace hs {

std::vector<double> answerProbabilities(const IclEval& e) {
  std::vector<double> p;
  for (double lp : e.answer_logprob)
    p.push_back(std::exp(lp));
  return p;
}

IclEval evaluateIcl(const Transformer& model, const std::vector<Prompt>& prompts, const IclEvalOptions& opt,
                    const AnalysisContext& ctx) {
  std::vector<std::vector<int64_t>> answers;
  for (const Prompt& p : prompts)
    answers.push_back({p.answer_token});
  AnswerScoring scoring;
  scoring.batch = opt.batch;
  scoring.interventions = opt.interventions;
  scoring.label_set = opt.label_tokens;
  scoring.label_sets = opt.label_sets;
  const std::vector<AnswerScore> scores = scoreAnswers(model, tokenSeqs(prompts), answers, scoring, ctx);
  IclEval ev;
  ev.n = static_cast<int>(prompts.size());
  int correct = 0, inLabels = 0;
  double probSum = 0;
  for (const AnswerScore& s : scores) {
    ev.predictions.push_back(s.first_pred);
    ev.answer_logprob.push_back(s.first_logprob);
    probSum += std::exp(s.first_logprob);
    correct += s.correct;
    inLabels += s.in_label_set;
  }
  ev.accuracy = static_cast<double>(correct) / ev.n;
  ev.mean_answer_prob = probSum / ev.n;
  ev.tr_ratio = opt.label_tokens.empty() && opt.label_sets.empty() ? std::numeric_limits<double>::quiet_NaN()
                                                                   : static_cast<double>(inLabels) / ev.n;
  return ev;
}

}  // namespace hs
