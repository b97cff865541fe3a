#include "analysis/toolkit/prompt_batches.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "util/error.h"

namespace hs {

PaddedBatch padLeft(const TokenSeqs& seqs, size_t begin, size_t end, int64_t pad_id) {
  if (begin >= end || end > seqs.size()) fail("padLeft: bad range [", begin, ", ", end, ")");
  size_t len = 0;
  for (size_t i = begin; i < end; ++i) {
    if (seqs[i].empty()) fail("prompt ", i, " is empty");
    len = std::max(len, seqs[i].size());
  }
  const int64_t B = static_cast<int64_t>(end - begin), P = static_cast<int64_t>(len);
  PaddedBatch pb;
  pb.tokens = at::full({B, P}, pad_id, at::kLong);   // [batch, pos]
  pb.attention_mask = at::zeros({B, P}, at::kLong);  // [batch, pos]
  auto tok = pb.tokens.accessor<int64_t, 2>();
  auto msk = pb.attention_mask.accessor<int64_t, 2>();
  for (int64_t r = 0; r < B; ++r) {
    const auto& s = seqs[begin + static_cast<size_t>(r)];
    const int64_t pad = P - static_cast<int64_t>(s.size());
    pb.pad.push_back(static_cast<int>(pad));
    for (size_t t = 0; t < s.size(); ++t) {
      tok[r][pad + static_cast<int64_t>(t)] = s[t];
      msk[r][pad + static_cast<int64_t>(t)] = 1;
    }
  }
  return pb;
}

TokenSeqs tokenSeqs(const std::vector<Prompt>& prompts) {
  TokenSeqs out;
  out.reserve(prompts.size());
  for (const Prompt& p : prompts)
    out.emplace_back(p.ids.begin(), p.ids.end());
  return out;
}

PaddedBatch padPrompts(const std::vector<Prompt>& prompts, size_t begin, size_t end, int pad_id) {
  if (begin >= end || end > prompts.size()) fail("padPrompts: bad range [", begin, ", ", end, ")");
  const std::vector<Prompt> rows(prompts.begin() + static_cast<std::ptrdiff_t>(begin),
                                 prompts.begin() + static_cast<std::ptrdiff_t>(end));
  const TokenSeqs seqs = tokenSeqs(rows);
  return padLeft(seqs, 0, seqs.size(), pad_id);
}

void forEachBatch(const Transformer& model, const TokenSeqs& seqs, const BatchRun& run,
                  const std::function<void(size_t, size_t, const PaddedBatch&, const RunResult&)>& onBatch,
                  const AnalysisContext& ctx) {
  if (seqs.empty()) fail(run.what, ": no prompts");
  if (run.batch <= 0) fail(run.what, ": batch size ", run.batch, ", expected >= 1");
  for (const Intervention& iv : run.interventions)
    if (!iv.rows.empty()) fail(run.what, ": interventions must apply to every row (rows given)");
  const int64_t ctxLen = model.config().context_length;
  at::NoGradGuard noGrad;
  for (size_t b = 0; b < seqs.size(); b += static_cast<size_t>(run.batch)) {
    ctx.checkCancelled();
    const size_t e = std::min(seqs.size(), b + static_cast<size_t>(run.batch));
    const PaddedBatch pb = padLeft(seqs, b, e, run.pad_id);
    if (ctxLen > 0 && pb.tokens.size(1) > ctxLen)
      fail(run.what, ": a prompt of ", pb.tokens.size(1), " tokens exceeds the model's context of ", ctxLen);
    RunRequest req;
    req.tokens = pb.tokens.to(model.device());
    req.attention_mask = pb.attention_mask.to(model.device());
    req.capture = run.capture;
    req.interventions = run.interventions;
    req.last_logits_only = run.last_logits_only;
    const RunResult r = model.run(req);
    onBatch(b, e, pb, r);
    ctx.report(static_cast<double>(e) / static_cast<double>(seqs.size()), run.what);
  }
}

at::Tensor captureAtLast(const Transformer& model, const TokenSeqs& seqs, Site (*site)(int),
                         const std::vector<Intervention>& interventions, const AnalysisContext& ctx,
                         int batch) {
  const int L = model.config().n_layers;
  BatchRun run;
  run.batch = batch;
  run.interventions = interventions;
  run.what = "capture at the last position";
  for (int l = 0; l < L; ++l)
    run.capture.insert(site(l));
  const int posAxis = siteInfo(site(0).kind).posAxis;
  std::vector<at::Tensor> rows;  // each [batch, layers, ...]
  forEachBatch(
      model, seqs, run,
      [&](size_t, size_t, const PaddedBatch&, const RunResult& r) {
        std::vector<at::Tensor> perLayer;
        for (int l = 0; l < L; ++l)
          perLayer.push_back(r.cache.at(site(l)).select(posAxis, -1));  // [batch, ...]
        rows.push_back(at::stack(perLayer, 1).to(at::kCPU, at::kFloat));
      },
      ctx);
  return at::cat(rows, 0);  // [n_prompts, layers, ...]
}

std::vector<AnswerScore> scoreAnswers(const Transformer& model, const TokenSeqs& prompts,
                                      const std::vector<std::vector<int64_t>>& answers,
                                      const AnswerScoring& opt, const AnalysisContext& ctx) {
  if (prompts.size() != answers.size())
    fail("scoring answers: ", prompts.size(), " prompts and ", answers.size(), " answers");
  if (!opt.label_sets.empty() && opt.label_sets.size() != prompts.size())
    fail("scoring answers: ", opt.label_sets.size(), " label sets for ", prompts.size(), " prompts");
  // Teacher forcing: prompt + answer[:-1]; the last |answer| positions predict the answer tokens.
  TokenSeqs seqs;
  size_t maxAnswer = 1;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (answers[i].empty()) fail("prompt ", i, " has no answer token");
    std::vector<int64_t> s = prompts[i];
    s.insert(s.end(), answers[i].begin(), answers[i].end() - 1);
    seqs.push_back(std::move(s));
    maxAnswer = std::max(maxAnswer, answers[i].size());
  }
  BatchRun run;
  run.batch = opt.batch;
  run.interventions = opt.interventions;
  run.last_logits_only = maxAnswer == 1;
  run.pad_id = opt.pad_id;
  run.what = "evaluate";
  std::vector<AnswerScore> scores;
  scores.reserve(prompts.size());
  forEachBatch(
      model, seqs, run,
      [&](size_t b, size_t e, const PaddedBatch&, const RunResult& r) {
        const at::Tensor logits = r.logits.to(at::kCPU, at::kFloat);  // [batch, pos, vocab]
        const int64_t T = logits.size(1);
        const at::Tensor pred = logits.argmax(-1);  // [batch, pos]
        auto pr = pred.accessor<int64_t, 2>();
        for (size_t i = b; i < e; ++i) {
          const int64_t row = static_cast<int64_t>(i - b);
          const auto& ans = answers[i];
          const int64_t A = static_cast<int64_t>(ans.size());
          AnswerScore s;
          s.correct = true;
          for (int64_t a = 0; a < A; ++a)
            if (pr[row][T - A + a] != ans[static_cast<size_t>(a)]) s.correct = false;
          s.first_pred = static_cast<int>(pr[row][T - A]);
          const at::Tensor first = logits[row][T - A];  // [vocab]
          s.first_logprob = at::log_softmax(first, -1)[ans[0]].item<double>();
          s.first_rank = static_cast<int>(first.gt(first[ans[0]]).sum().item<int64_t>());
          const std::vector<int>& labels = opt.label_sets.empty() ? opt.label_set : opt.label_sets[i];
          s.in_label_set = std::find(labels.begin(), labels.end(), s.first_pred) != labels.end();
          scores.push_back(s);
        }
      },
      ctx);
  return scores;
}

}  // namespace hs
