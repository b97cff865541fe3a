// headscope-cli rerun RECORD [MODEL] [--run ID]
//
// Repeats a run from its record: RECORD is a run JSON (--json of any method command) or a session
// (.hscope; --run picks the run when it holds several). The method, its options (every key of a run's
// options is an option of its method, or "task": registry.h) and the task come from the record; the model
// is the one the record names (a session's path, dtype and tokenizer; a run JSON's provenance), and MODEL,
// --tokenizer and --dtype replace it. Writes --out / --json as the method's own command does.
#include <ATen/core/grad_mode.h>

#include <memory>

#include "analysis/framework/registry.h"
#include "cli_common.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/icl_task.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::cli {
namespace {

struct RerunArgs {
  std::string record;
  std::string run;
  ModelArgs model;
  RunOutputArgs out;
  bool dtypeGiven = false;
};

// What a record says about the run to repeat.
struct RunRecord {
  AnalysisRun run;
  std::string model;      // path as the run loaded it ("toy" for the embedded model)
  std::string dtype;      // "" when the record does not say
  std::string tokenizer;  // "" for the model's own
};

bool isJsonFile(const std::string& path) {
  const std::string head = readFilePrefix(path, "run record", 64);
  const size_t first = head.find_first_not_of(" \t\r\n");
  return first != std::string::npos && head[first] == '{';
}

RunRecord readRunJson(const std::string& path, const std::string& runId) {
  RunRecord r;
  r.run = withContext(path, [&] { return readJsonFile(path, json_limits::session()).get<AnalysisRun>(); });
  if (!runId.empty() && runId != r.run.id) fail(path, ": holds run ", r.run.id, ", not ", runId);
  r.model = r.run.provenance.model;
  return r;
}

RunRecord readSessionRun(const std::string& path, const std::string& runId) {
  const Session s = loadSession(path);
  if (s.runs.empty()) fail(path, ": the session holds no run");
  std::string ids;
  for (const AnalysisRun& run : s.runs)
    ids += (ids.empty() ? "" : ", ") + run.id;
  if (runId.empty() && s.runs.size() > 1) fail(path, ": holds runs ", ids, "; pick one with --run ID");
  const AnalysisRun* run = runId.empty() ? &s.runs.front() : s.findRun(runId);
  if (!run) fail(path, ": no run ", runId, " (it holds ", ids, ")");
  RunRecord r;
  r.run = *run;
  r.model = s.model.value("path", run->provenance.model);
  r.dtype = s.model.value("dtype", "");
  r.tokenizer = s.tokenizer.value("path", "");
  return r;
}

void rerun(RerunArgs a) {
  const RunRecord rec = isJsonFile(a.record) ? readRunJson(a.record, a.run) : readSessionRun(a.record, a.run);
  const MethodInfo& m = requireMethod(rec.run.method);
  if (m.imported)
    fail(a.record, ": run ", rec.run.id, " was imported (", m.name, "), not computed; nothing to rerun");
  // The record's options: those of the method's table, the task apart; anything else means the record
  // was made by a build whose options differ, and is named rather than dropped.
  for (const auto& [key, value] : rec.run.options.items())
    if (key != "task" && !m.option(key))
      fail(a.record, ": run ", rec.run.id, " has option ", key, ", which ", m.name, " does not take");
  const nlohmann::json options = methodOptionsOf(rec.run);
  TaskSpec task = m.default_task;
  if (m.takesTask()) {
    if (!rec.run.options.contains("task")) fail(a.record, ": run ", rec.run.id, " records no task");
    task = withContext(a.record, [&] { return taskSpecFromJson(rec.run.options.at("task")); });
  }
  if (a.model.model.empty()) a.model.model = rec.model;
  if (a.model.model.empty()) fail(a.record, ": run ", rec.run.id, " names no model; give one (MODEL)");
  if (!a.dtypeGiven && !rec.dtype.empty()) a.model.dtype = rec.dtype;
  if (a.model.tokenizer.empty()) a.model.tokenizer = rec.tokenizer;
  resolveOptions(m.options, options, m.name);
  checkRunDestinations(a.out);
  const LoadedModel lm = loadForCli(a.model);
  AnalysisContext ctx = cliContext(m.name);
  ctx.run_id = a.out.run_id.empty() ? rec.run.id : a.out.run_id;
  ctx.model_path = modelLabel(lm, a.model);
  const AnalysisOutput out = runMethod(m, MethodInputs{*lm.model, lm.tokenizer.get(), task}, options, ctx);
  writeRunOutputs(lm, a.model, m.takesTask() ? &task : nullptr, out, a.out);
}

}  // namespace

void addRerunCommand(CLI::App& app) {
  auto a = std::make_shared<RerunArgs>();
  CLI::App* cmd = app.add_subcommand("rerun", "Repeat a run from its record (a run JSON or a session)");
  cmd->add_option("record", a->record, "the run JSON (--json) or the session (.hscope) holding the run")
      ->required();
  addModelArgs(*cmd, a->model, false);
  cmd->get_option("model")->description("the model to run on instead of the one the record names");
  cmd->get_option("--dtype")->default_str("the record's");
  cmd->add_option("--run", a->run, "the run to repeat when the session holds several")
      ->default_str("the session's only run");
  addRunOutputArgs(*cmd, a->out);
  cmd->callback([a, cmd] {
    at::NoGradGuard noGrad;  // as the method commands: SITE and LTV enable gradients where they train
    RerunArgs args = *a;
    args.dtypeGiven = cmd->count("--dtype") > 0;
    rerun(std::move(args));
  });
}

}  // namespace hs::cli
