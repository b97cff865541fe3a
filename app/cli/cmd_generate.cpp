// headscope-cli generate MODEL --text S --max-new N: greedy continuation through the KV cache.
#include <c10/core/InferenceMode.h>

#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {

void addGenerateCommand(CLI::App& app) {
  static ModelArgs args;
  static std::string text, ids;
  static int maxNew = 32;
  static bool noStop = false;
  auto* cmd = app.add_subcommand("generate", "Greedy generation (JSON: ids, text)");
  addModelArgs(*cmd, args);
  cmd->add_option("--text", text, "prompt text")->default_str("none");
  cmd->add_option("--ids", ids, "prompt token ids, comma separated")->default_str("none");
  cmd->add_option("--max-new", maxNew, "new tokens at most")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-stop", noStop, "do not stop at the end-of-sequence token");
  cmd->callback([] {
    const LoadedModel m = loadForCli(args);
    const std::vector<int64_t> prompt = promptIds(m, text, ids);
    c10::InferenceMode guard;
    const int64_t stop = noStop ? -1 : (m.tokenizer ? m.tokenizer->eosId() : m.config.eos_token_id);
    const std::vector<int64_t> fresh = m.model->generateGreedy(prompt, maxNew, stop);
    std::vector<int64_t> all = prompt;
    all.insert(all.end(), fresh.begin(), fresh.end());
    nlohmann::json j = {{"ids", all}, {"prompt_ids", prompt}, {"new_ids", fresh}};
    if (m.tokenizer) {
      j["text"] = m.tokenizer->decode(std::vector<int>(all.begin(), all.end()));
      j["completion"] = m.tokenizer->decode(std::vector<int>(fresh.begin(), fresh.end()));
    }
    printJson(j);
  });
}

}  // namespace hs::cli
