// headscope-cli tokenize [MODEL] [--tokenizer PATH] --text S: exact ids and pieces of a text.
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {

void addTokenizeCommand(CLI::App& app) {
  static ModelArgs args;
  static std::string text;
  static std::string bos = "default";
  auto* cmd = app.add_subcommand("tokenize", "Token ids and pieces of a text (JSON)");
  addModelArgs(*cmd, args, /*modelRequired=*/false);
  cmd->add_option("--text", text, "text to encode")->required();
  cmd->add_option("--bos", bos, "prepend BOS: default (as the tokenizer config says), yes, no")
      ->check(CLI::IsMember({"default", "yes", "no"}));
  cmd->callback([] {
    std::shared_ptr<Tokenizer> tok;
    if (!args.model.empty()) {
      tok = loadForCli(args).tokenizer;
      if (!tok) fail("no tokenizer found for ", args.model, "; pass --tokenizer PATH");
    } else if (!args.tokenizer.empty()) {
      tok = loadTokenizerFile(args.tokenizer);
    } else {
      fail("tokenize needs a MODEL or --tokenizer PATH");
    }
    std::optional<bool> addBos;
    if (bos != "default") addBos = bos == "yes";
    const std::vector<int> ids = tok->encode(text, addBos);
    nlohmann::json pieces = nlohmann::json::array();
    for (int id : ids)
      pieces.push_back(tok->piece(id));
    printJson({{"ids", ids}, {"pieces", pieces}, {"decoded", tok->decode(ids)}, {"tokenizer", tok->kind()}});
  });
}

}  // namespace hs::cli
