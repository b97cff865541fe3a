// headscope-cli logits MODEL (--text S | --ids ...) [--top K] [--ablate L.H,...] [--ablate-mode zero|mean]
#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>

#include "analysis/toolkit/head_edits.h"
#include "analysis/toolkit/head_toolkit.h"
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {
namespace {

struct LogitsArgs {
  ModelArgs model;
  std::string text, ids, ablate, ablateMode = "zero";
  int top = 10;
};

// One edit per ablated head on hook_z at every position (analysis/toolkit/head_edits.h, the GUI's and
// evaluate's translation): mean ablation replaces the head's z by its mean over the neutral corpus.
std::vector<Intervention> ablations(const LoadedModel& m, const std::vector<HeadRef>& heads,
                                    const std::string& mode) {
  checkHeads(*m.model, heads, "--ablate");  // before any corpus mean is computed
  std::vector<HeadEdit> edits;
  for (const HeadRef& h : heads)
    edits.push_back(
        {mode == "mean" ? HeadEditKind::MeanAblate : HeadEditKind::ZeroAblate, h, {}, 1.0, -1, {}});
  return headEditInterventions(*m.model, edits, [&](const HeadVectorSource& s) {
    return headSourceZ(*m.model, m.tokenizer.get(), {}, s);  // [layers, heads, d_head]
  });
}

}  // namespace

void addLogitsCommand(CLI::App& app) {
  static LogitsArgs a;
  auto* cmd =
      app.add_subcommand("logits", "Next-token logits at the last position, optionally with heads ablated");
  addModelArgs(*cmd, a.model);
  cmd->add_option("--text", a.text, "prompt text (encoded as the tokenizer config says)")
      ->default_str("none");
  cmd->add_option("--ids", a.ids, "prompt token ids, comma separated")->default_str("none");
  cmd->add_option("--top", a.top, "how many top tokens to list")->check(CLI::PositiveNumber);
  cmd->add_option("--ablate", a.ablate, "heads to ablate: LAYER.HEAD,LAYER.HEAD,...")->default_str("none");
  cmd->add_option(
         "--ablate-mode", a.ablateMode,
         "zero: hook_z := 0 at all positions; mean: hook_z := its mean over a neutral text corpus (the "
         "toy world's text for the toy model), as the GUI and evaluate mean-ablate")
      ->check(CLI::IsMember({"zero", "mean"}));
  cmd->callback([] {
    const LoadedModel m = loadForCli(a.model);
    const std::vector<int64_t> ids = promptIds(m, a.text, a.ids);
    c10::InferenceMode guard;
    const at::Tensor tokens = at::tensor(ids, at::kLong).unsqueeze(0).to(m.model->device());  // [1, pos]
    RunRequest req;
    req.tokens = tokens;
    req.last_logits_only = true;
    req.interventions = ablations(m, parseHeadList(a.ablate), a.ablateMode);
    const RunResult r = m.model->run(req);
    const at::Tensor last = r.logits[0][-1].to(at::kFloat).cpu().contiguous();  // [vocab]
    const at::Tensor probs = at::softmax(last.to(at::kDouble), 0);              // [vocab]
    const int k = std::min<int>(a.top, static_cast<int>(last.size(0)));
    const auto topk = at::topk(last, k);
    const at::Tensor topIdx = std::get<1>(topk);  // [k]
    nlohmann::json top = nlohmann::json::array();
    for (int i = 0; i < k; ++i) {
      const int64_t id = topIdx[i].item<int64_t>();
      top.push_back({{"id", id},
                     {"piece", m.tokenizer ? m.tokenizer->piece(static_cast<int>(id)) : std::string()},
                     {"logit", last[id].item<float>()},
                     {"prob", probs[id].item<double>()}});
    }
    const float* p = last.data_ptr<float>();
    printJson({{"ids", ids},
               {"last_logits", std::vector<float>(p, p + last.numel())},
               {"top", top},
               {"ablated", a.ablate},
               {"ablate_mode", a.ablateMode}});
  });
}

}  // namespace hs::cli
