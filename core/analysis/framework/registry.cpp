#include "analysis/framework/registry.h"

#include "analysis/framework/data_roots.h"
#include "analysis/framework/seeds.h"

#include <algorithm>
#include <deque>
#include <filesystem>
#include <mutex>
#include <set>

#include "analysis/methods/evaluate.h"
#include "analysis/methods/function_vectors.h"
#include "analysis/methods/geometry.h"
#include "analysis/methods/induction_run.h"
#include "analysis/methods/ltv.h"
#include "analysis/methods/patch_method.h"
#include "analysis/methods/published.h"
#include "analysis/methods/site.h"
#include "analysis/methods/tsla.h"
#include "analysis/toolkit/head_toolkit.h"
#include "util/error.h"

namespace hs {
namespace {

// The built-in methods in menu order: one line per method.
std::vector<MethodInfo> builtinMethods() {
  return {tslaMethod(),      geometryMethod(),        inductionMethod(), dualRouteMethod(),
          listTasksMethod(), conceptPatchingMethod(), fvMethod(),        siteMethod(),
          ltvMethod(),       patchMethod(),           evaluateMethod(),  publishedMethod()};
}

void checkRecord(const MethodInfo& m, const std::deque<MethodInfo>& existing) {
  if (m.name.empty()) fail("a method needs a name");
  for (const MethodInfo& e : existing)
    if (e.name == m.name) fail("method ", m.name, " is registered already");
  if (!m.run && !m.imported) fail("method ", m.name, " has no run function");
  std::set<std::string> keys;
  for (const OptionSpec& o : m.options)
    if (!keys.insert(o.key).second) fail("method ", m.name, ": option ", o.key, " is declared twice");
}

std::mutex& registryMutex() {
  static std::mutex m;
  return m;
}

// A deque: registering a method never moves the records findMethod handed out.
std::deque<MethodInfo>& registryStore() {
  static std::deque<MethodInfo> all = [] {
    std::deque<MethodInfo> v;
    for (MethodInfo& m : builtinMethods()) {
      addSeedDeclarations(m);
      checkRecord(m, v);
      v.push_back(std::move(m));
    }
    return v;
  }();
  return all;
}

void stampProvenance(Provenance& p, const Provenance& run) {
  if (p.method.empty()) p.method = run.method;
  if (p.model.empty()) p.model = run.model;
  if (p.task.empty()) p.task = run.task;
  if (p.seed == 0) p.seed = run.seed;
  if (p.n_prompts == 0) p.n_prompts = run.n_prompts;
  if (p.created.empty()) p.created = run.created;
  if (p.options.empty()) p.options = run.options;
  if (p.derived.empty()) p.derived = run.derived;
}

}  // namespace

const char* toString(TaskKind k) {
  return k == TaskKind::Classification ? "classification" : "generation";
}

const char* toString(OutputSpec::Kind k) {
  switch (k) {
    case OutputSpec::Kind::Grid:
      return "grid";
    case OutputSpec::Kind::Curve:
      return "curve";
    case OutputSpec::Kind::Table:
      return "table";
    case OutputSpec::Kind::Tensor:
      return "tensor";
  }
  return "?";
}

bool MethodInfo::accepts(TaskKind k) const {
  return std::find(tasks.begin(), tasks.end(), k) != tasks.end();
}

const OptionSpec* MethodInfo::option(const std::string& key) const {
  for (const OptionSpec& o : options)
    if (o.key == key) return &o;
  return nullptr;
}

const std::deque<MethodInfo>& methods() {
  std::lock_guard<std::mutex> lock(registryMutex());
  return registryStore();
}

const MethodInfo* findMethod(const std::string& name) {
  for (const MethodInfo& m : methods())
    if (m.name == name) return &m;
  return nullptr;
}

const MethodInfo& requireMethod(const std::string& name) {
  if (const MethodInfo* m = findMethod(name)) return *m;
  std::string known;
  for (const MethodInfo& m : methods())
    known += (known.empty() ? "" : ", ") + m.name;
  fail("no analysis method \"", name, "\" (methods: ", known, ")");
}

void registerMethod(MethodInfo m) {
  std::lock_guard<std::mutex> lock(registryMutex());
  std::deque<MethodInfo>& all = registryStore();
  addSeedDeclarations(m);
  checkRecord(m, all);
  all.push_back(std::move(m));
}

TaskKind taskKind(const TaskSpec& spec) {
  return loadTaskDataset(spec).classification ? TaskKind::Classification : TaskKind::Generation;
}

std::string taskMismatch(const MethodInfo& m, const TaskSpec& spec) {
  if (!m.takesTask()) return "";
  const TaskKind k = taskKind(spec);
  if (m.accepts(k)) return "";
  return cat(m.name, " needs a ", toString(m.tasks.front()), " task; ", spec.dataset, " is ",
             k == TaskKind::Classification ? "a classification task" : "open-ended (a generation task)");
}

AnalysisOutput runMethod(const MethodInfo& m, const MethodInputs& in, const nlohmann::json& options,
                         const AnalysisContext& ctx) {
  if (m.imported || !m.run)
    fail(m.name, ": its runs are imported (headscope-cli import-published), not computed");
  const nlohmann::json resolved = resolveOptions(m.options, withDataFolders(m.options, options), m.name);
  if (m.takesTask()) {
    if (!in.tokenizer) fail(m.name, ": the model has no tokenizer; give one (--tokenizer PATH)");
    const std::string why = withContext(m.name, [&] { return taskMismatch(m, in.task); });
    if (!why.empty()) fail(why);
  }
  ctx.checkCancelled();
  // The seeds options are the registry's (seeds.h): the method runs without them, once or per seed.
  nlohmann::json methodOptions = resolved;
  const int seeds = methodOptions.value("seeds", 1);
  const int seedsTopK = methodOptions.value("seeds_top_k", 0);
  methodOptions.erase("seeds");
  methodOptions.erase("seeds_top_k");
  AnalysisOutput out =
      seeds > 1 ? runAcrossSeeds(m, in, methodOptions, seeds, seedsTopK, ctx) : m.run(in, methodOptions, ctx);

  renameRun(out, ctx.runId(m.name));
  out.run.method = m.name;
  // The run's options are a recipe: exactly the resolved options (and the task), each of which the method's
  // command takes back as a flag (`headscope-cli rerun`). Anything else a method recorded beside them (a
  // description of its mean source, the prompts it evaluated) is what it derived: provenance.
  Provenance& p = out.run.provenance;
  if (out.run.options.is_object())
    for (const auto& [key, value] : out.run.options.items())
      if (key != "task" && !resolved.contains(key)) p.derived[key] = value;
  nlohmann::json runOptions = resolved;
  if (m.takesTask()) runOptions["task"] = taskSpecToJson(in.task);
  out.run.options = runOptions;
  p.method = m.name;
  p.model = ctx.model_path;
  if (m.takesTask()) {
    p.task = in.task.dataset;
    p.seed = in.task.seed;
    p.n_prompts = in.task.n_prompts;
  } else if (resolved.contains("seed") && resolved["seed"].is_number()) {
    p.seed = resolved["seed"].get<uint64_t>();
  }
  p.options = runOptions;
  if (p.created.empty()) p.created = makeProvenance(m.name, ctx, "", 0, 0, {}).created;
  for (HeadGrid& g : out.run.grids)
    stampProvenance(g.provenance, p);
  for (Curve& c : out.run.curves)
    stampProvenance(c.provenance, p);
  for (Table& t : out.run.tables)
    stampProvenance(t.provenance, p);
  return out;
}

std::string shortName(const std::string& s) {
  if (s.find('/') == std::string::npos) return s;
  const std::filesystem::path p(s);
  const std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

std::string uniqueRunId(const std::string& method, const std::vector<std::string>& taken) {
  const std::set<std::string> used(taken.begin(), taken.end());
  for (int n = 1;; ++n) {
    const std::string id = method + "-" + std::to_string(n);
    if (!used.count(id)) return id;
  }
}

void renameRun(AnalysisOutput& out, const std::string& id) {
  const std::string old = out.run.id;
  if (id.empty() || id == old) return;
  auto renamed = [&](const std::string& name) {
    return !old.empty() && name.rfind(old + "/", 0) == 0 ? id + name.substr(old.size()) : name;
  };
  std::map<std::string, at::Tensor> tensors;
  for (auto& [name, t] : out.tensors)
    tensors[renamed(name)] = t;
  out.tensors = std::move(tensors);
  for (std::string& name : out.run.tensors)
    name = renamed(name);
  out.run.id = id;
}

std::string runLabel(const AnalysisRun& run) {
  const Provenance& p = run.provenance;
  std::string label = run.method.empty() ? run.id : run.method;
  label += " · " + (p.model.empty() ? std::string("?") : shortName(p.model));
  if (!p.task.empty()) label += " · " + shortName(p.task);
  label += " · seed " + std::to_string(p.seed);
  return label;
}

nlohmann::json methodRecordJson(const MethodInfo& m) {
  nlohmann::json tasks = nlohmann::json::array();
  for (TaskKind k : m.tasks)
    tasks.push_back(toString(k));
  nlohmann::json options = nlohmann::json::array();
  for (const OptionSpec& o : m.options) {
    nlohmann::json j = {
        {"key", o.key}, {"type", toString(o.type)}, {"default", o.default_value}, {"help", o.help}};
    if (!o.rangeText().empty()) j["range"] = o.rangeText();
    if (!o.check.choices.empty()) j["choices"] = o.check.choices;
    options.push_back(j);
  }
  nlohmann::json outputs = nlohmann::json::array();
  for (const OutputSpec& o : m.outputs)
    outputs.push_back({{"kind", toString(o.kind)}, {"id", o.id}, {"unit", o.unit}, {"meaning", o.meaning}});
  nlohmann::json j = {
      {"name", m.name}, {"title", m.title},   {"paper", m.paper},  {"description", m.description},
      {"tasks", tasks}, {"options", options}, {"outputs", outputs}};
  if (m.imported) j["imported"] = true;
  return j;
}

nlohmann::json methodRecords(const std::vector<AnalysisRun>& runs) {
  nlohmann::json out = nlohmann::json::object();
  for (const AnalysisRun& r : runs)
    if (const MethodInfo* m = findMethod(r.method)) out[m->name] = methodRecordJson(*m);
  return out;
}

nlohmann::json methodOptionsOf(const AnalysisRun& run) {
  const MethodInfo& m = requireMethod(run.method);
  nlohmann::json out = nlohmann::json::object();
  for (const OptionSpec& o : m.options)
    if (run.options.contains(o.key)) out[o.key] = run.options.at(o.key);
  return out;
}

}  // namespace hs
