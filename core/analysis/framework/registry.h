#pragma once
// The method registry: every analysis declared once, as one MethodInfo record beside its code (name,
// title, a paragraph a researcher reads in the GUI, the tasks it accepts, its options, what it produces,
// and how to run it). The CLI's subcommands with their flags and --help, the GUI's Run menu and options
// forms, the runs' provenance and the session's method records are all generated from these records.
//
// Adding an analysis: one new file in core/analysis with its code and a function returning its record,
// and one line in builtinMethods() (registry.cpp). registerMethod adds records at run time (plugins, tests).
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "analysis/framework/options.h"
#include "model/transformer.h"
#include "tasks/icl_task.h"
#include "tokenizer/tokenizer.h"

namespace hs {

// The ICL tasks a method accepts. A method accepting none runs without a task (induction, patching).
enum class TaskKind {
  Classification,  // a closed label set (TSLA, the geometry views)
  Generation,      // open-ended answers (function-vector tasks)
};
const char* toString(TaskKind k);

// One result a method produces, by stable id ("tsla.tr"; a trailing ".*" stands for a family of ids).
// Every grid is a metric of the Heads tab and every curve and table is listed on the Results tab, whatever
// method made it; `panel` adds a panel of its own on another tab.
struct OutputSpec {
  enum class Kind { Grid, Curve, Table, Tensor };
  OutputSpec() = default;
  OutputSpec(Kind k, std::string id_, std::string unit_, std::string meaning_, std::string panel_ = {},
             std::string panelTitle = {})
      : kind(k),
        id(std::move(id_)),
        unit(std::move(unit_)),
        meaning(std::move(meaning_)),
        panel(std::move(panel_)),
        panel_title(std::move(panelTitle)) {}
  Kind kind = Kind::Grid;
  std::string id;
  std::string unit;     // grids: the value's unit; curves: "x → y"
  std::string meaning;  // one line: what a high value means
  // A panel on the GUI's "Geometry" or "Task vectors" tab ("" for none), filled from the last run holding
  // the result and drawn as its kind says (a grid as a heatmap, a curve as a plot, a table with x and y
  // columns as a 2-D projection), titled `panel_title`.
  std::string panel;
  std::string panel_title;
};
const char* toString(OutputSpec::Kind k);

// How the GUI offers a method (the CLI offers every method that runs).
struct GuiEntry {
  bool run_menu = true;   // an entry in the Run menu (false: another control runs it, as the Evaluation dock)
  std::string shortcut;   // of that entry, e.g. "Ctrl+R"
  bool at_start = false;  // run when the workbench opens a model, with `start_options`
  bool start_on_toy_only = false;   // only on the toy model (on real models it takes minutes to hours)
  bool start_on_open_task = false;  // at start, on an open-ended task rather than the Task dock's
  nlohmann::json start_options = nlohmann::json::object();  // what the first screen needs quickly
};

// What a method runs on. The model's own tokenizer (null when the model has none); the task is read
// only by methods that accept one.
struct MethodInputs {
  const Transformer& model;
  const Tokenizer* tokenizer = nullptr;
  TaskSpec task;
};

// Runs the method with resolved options (resolveOptions' result); returns its output (run id, method,
// options and provenance are stamped by runMethod).
using MethodRun = std::function<AnalysisOutput(const MethodInputs& in, const nlohmann::json& options,
                                               const AnalysisContext&)>;

struct MethodInfo {
  std::string name;             // "tsla": the CLI subcommand, the run's method, the session's key
  std::string title;            // "Task recognition and task learning heads"
  std::string paper;            // the paper it reproduces, "" for tools
  std::string description;      // one paragraph for the GUI's options form and the CLI's --help
  std::vector<TaskKind> tasks;  // empty: the method takes no task
  TaskSpec default_task;        // the task the CLI uses when none is given
  std::vector<OptionSpec> options;
  std::vector<OutputSpec> outputs;
  GuiEntry gui;
  MethodRun run;
  // Results read from files made elsewhere (published.h), not computed here: no model, no run function, no
  // CLI command or Run-menu entry of its own; sessions and views show its runs like any other.
  bool imported = false;

  bool takesTask() const { return !tasks.empty(); }
  bool accepts(TaskKind k) const;
  const OptionSpec* option(const std::string& key) const;  // nullptr when absent
};

// Every method: the built-in ones in menu order, then those added by registerMethod.
const std::deque<MethodInfo>& methods();
const MethodInfo* findMethod(const std::string& name);
// findMethod or an error listing the known names.
const MethodInfo& requireMethod(const std::string& name);
// Adds a method (refused: an empty or taken name, no run function (unless imported), an option key given
// twice).
void registerMethod(MethodInfo m);

// Runs `m`: resolves and checks `options`; for a method with a task, checks the task's kind (loading its
// dataset) and that a tokenizer is there; runs (with seeds > 1 once per seed, seeds.h); then stamps the
// output: run id ctx.runId(m.name) (tensors renamed to match), method, options (the resolved ones plus
// "task"), and the run's provenance; every grid, curve and table gets the run's provenance where it has none
// of its own (method, model, task, seed, created filled in, its own options kept).
AnalysisOutput runMethod(const MethodInfo& m, const MethodInputs& in, const nlohmann::json& options,
                         const AnalysisContext& ctx);

// The kind of a task (loads its dataset).
TaskKind taskKind(const TaskSpec& spec);
// Why `m` cannot run on `spec` ("tsla needs a classification task; toy:antonym_a is open-ended"), or ""
// when it can (always "" for a method that takes no task).
std::string taskMismatch(const MethodInfo& m, const TaskSpec& spec);

// "<method>-<n>" with the smallest n >= 1 not among `taken`.
std::string uniqueRunId(const std::string& method, const std::vector<std::string>& taken);
// Gives the run (and its tensors, named "<run id>/<name>") the id `id`.
void renameRun(AnalysisOutput& out, const std::string& id);
// The file name of a path-like label ("/x/toy-icl" → "toy-icl", "/x/toy-icl/" → "toy-icl"); other labels
// ("toy", "toy:antonym_a") as they are. How every view names a run's model and task.
std::string shortName(const std::string& pathOrLabel);
// "method · model · task · seed N": how a run is named in every view (model and task shortened to their
// file names).
std::string runLabel(const AnalysisRun& run);

// A method's record as JSON (name, title, paper, description, tasks, options with types, defaults, ranges
// and help, outputs): what a session stores beside the runs of that method.
nlohmann::json methodRecordJson(const MethodInfo& m);
// {name: record} for every method of `runs` this build knows (a session's "methods").
nlohmann::json methodRecords(const std::vector<AnalysisRun>& runs);
// A run's options as its method takes them again (the keys of its option table only), e.g. to rerun it.
nlohmann::json methodOptionsOf(const AnalysisRun& run);

}  // namespace hs
