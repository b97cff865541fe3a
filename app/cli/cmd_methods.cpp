// One headscope-cli command per analysis method, generated from the method's registry record: its options
// become flags (--key-with-dashes) with their defaults and ranges in --help; the run goes through
// runMethod, so the CLI produces exactly the runs the GUI does.
#include <ATen/core/grad_mode.h>

#include <map>
#include <memory>

#include "analysis/framework/registry.h"
#include "cli_common.h"
#include "util/error.h"

namespace hs::cli {
namespace {

// What one method command parses into; owned by the command's callback, so it lives as long as the app.
struct MethodCommandState {
  std::string method;
  ModelArgs model;
  TaskSpec task;
  RunOutputArgs out;
  std::map<std::string, std::string> text;  // option key → the text given (non-flag options)
  std::map<std::string, bool> flag;         // option key → flag value (Bool options)
  std::map<std::string, CLI::Option*> given;
};

// The options given on the command line as JSON (the rest take the record's defaults in runMethod).
nlohmann::json givenOptions(const MethodInfo& m, const MethodCommandState& st) {
  nlohmann::json j = nlohmann::json::object();
  for (const OptionSpec& o : m.options) {
    const CLI::Option* opt = st.given.at(o.key);
    if (opt->count() == 0) continue;
    if (o.type == OptionType::Bool)
      j[o.key] = st.flag.at(o.key);
    else
      j[o.key] = parseOptionText(o, st.text.at(o.key));
  }
  return j;
}

void runCommand(const MethodCommandState& st) {
  const MethodInfo& m = requireMethod(st.method);
  const nlohmann::json options = givenOptions(m, st);
  resolveOptions(m.options, options, m.name);  // every flag checked before the model loads
  checkRunDestinations(st.out);                // and every destination, before the analysis runs
  const LoadedModel lm = loadForCli(st.model);
  AnalysisContext ctx = cliContext(m.name);
  ctx.run_id = st.out.run_id.empty() ? uniqueRunId(m.name, {}) : st.out.run_id;
  ctx.model_path = modelLabel(lm, st.model);
  MethodInputs in{*lm.model, lm.tokenizer.get(), st.task};
  const AnalysisOutput out = runMethod(m, in, options, ctx);
  writeRunOutputs(lm, st.model, m.takesTask() ? &st.task : nullptr, out, st.out);
}

}  // namespace

std::string helpOf(const OptionSpec& o) {
  std::string h = o.help;
  if (!o.rangeText().empty() && o.type != OptionType::Choice) h += "; range " + o.rangeText();
  return h;
}

const char* optionTypeName(OptionType t) {
  switch (t) {
    case OptionType::Int:
      return "INT";
    case OptionType::Real:
      return "REAL";
    case OptionType::Text:
      return "TEXT";
    case OptionType::Choice:
      return "CHOICE";
    case OptionType::File:
      return "FILE";
    case OptionType::IntList:
      return "INTS";
    case OptionType::HeadList:
      return "L.H,...";
    case OptionType::Bool:
      return "";
  }
  return "";
}

CLI::App* addMethodCommand(CLI::App& app, const MethodInfo& m) {
  auto st = std::make_shared<MethodCommandState>();
  st->method = m.name;
  st->task = m.default_task;
  std::string footer = m.description;
  if (!m.paper.empty()) footer += "\n\nPaper: " + m.paper;
  CLI::App* cmd = app.add_subcommand(m.name, m.title);
  cmd->footer(footer);
  addModelArgs(*cmd, st->model);
  if (m.takesTask()) addTaskArgs(*cmd, st->task);
  for (const OptionSpec& o : m.options) {
    CLI::Option* opt = nullptr;
    // The key's flag first (what --help shows and a run's record names), then the declared short one.
    const std::string names = o.cliFlag() + (o.cliAlias().empty() ? "" : "," + o.cliAlias());
    if (o.type == OptionType::Bool) {
      bool& value = st->flag[o.key];
      value = o.default_value.get<bool>();
      const std::string negated = value ? ",!--no-" + o.cliFlag().substr(2) : "";
      opt = cmd->add_flag(names + negated, value, helpOf(o))->default_str(value ? "true" : "false");
    } else {
      opt = cmd->add_option(names, st->text[o.key], helpOf(o))->type_name(optionTypeName(o.type));
      const std::string def = o.defaultText();
      opt->default_str(def.empty() ? "none" : def);
      if (o.type == OptionType::Choice) opt->check(CLI::IsMember(o.check.choices));
    }
    st->given[o.key] = opt;
  }
  addRunOutputArgs(*cmd, st->out);
  cmd->callback([st] {
    // No gradients by default, and not InferenceMode: SITE and LTV train through the frozen model.
    at::NoGradGuard noGrad;
    runCommand(*st);
  });
  return cmd;
}

void buildCli(CLI::App& app) {
  app.option_defaults()->always_capture_default();
  addInfoCommand(app);
  addTokenizeCommand(app);
  addLogitsCommand(app);
  addGenerateCommand(app);
  addTrainToyCommand(app);
  addEvalToyCommand(app);
  addExportCommand(app);
  addImportPublishedCommand(app);
  addBatchCommand(app);
  addMergeCommand(app);
  addRerunCommand(app);
  for (const MethodInfo& m : methods())
    if (!m.imported) addMethodCommand(app, m);
}

}  // namespace hs::cli
