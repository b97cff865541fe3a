#include "batch/plan.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "analysis/framework/registry.h"
#include "session/sha256.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads one member of a plan object with a type check; errors name the place ("models[1].dtype").
class Reader {
 public:
  Reader(const json& j, std::string where, std::string file) : j_(j), where_(std::move(where)), file_(file) {
    if (!j_.is_object()) failAt("", "is a JSON " + std::string(j_.type_name()) + ", expected an object");
  }

  // Refuses keys outside `known`.
  void only(const std::set<std::string>& known) const {
    for (const auto& [key, value] : j_.items()) {
      if (known.count(key)) continue;
      std::string list;
      for (const std::string& k : known)
        list += (list.empty() ? "" : ", ") + k;
      failAt(key, "is not a plan key here (known: " + list + ")");
    }
  }
  bool has(const std::string& key) const { return j_.contains(key) && !j_.at(key).is_null(); }
  const json& at(const std::string& key) const { return j_.at(key); }

  std::string text(const std::string& key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    if (!j_.at(key).is_string()) failAt(key, typeText(key, "a string"));
    return j_.at(key).get<std::string>();
  }
  long long integer(const std::string& key, long long fallback, long long min) const {
    if (!has(key)) return fallback;
    const json& v = j_.at(key);
    if (!v.is_number_integer()) failAt(key, typeText(key, "a whole number"));
    const long long n = v.get<long long>();
    if (n < min) failAt(key, "is " + std::to_string(n) + ", expected at least " + std::to_string(min));
    return n;
  }
  std::vector<std::string> texts(const std::string& key) const {
    std::vector<std::string> out;
    if (!has(key)) return out;
    const json& v = j_.at(key);
    if (!v.is_array()) failAt(key, typeText(key, "an array of strings"));
    for (const json& s : v) {
      if (!s.is_string()) failAt(key, "holds a " + std::string(s.type_name()) + ", expected strings");
      out.push_back(s.get<std::string>());
    }
    return out;
  }

  [[noreturn]] void failAt(const std::string& key, const std::string& what) const {
    std::string place = where_;
    if (!key.empty()) place += (place.empty() ? "" : ".") + key;
    fail(file_, ": ", place.empty() ? std::string("the plan") : place, " ", what);
  }

 private:
  std::string typeText(const std::string& key, const std::string& expected) const {
    return "is a JSON " + std::string(j_.at(key).type_name()) + ", expected " + expected;
  }
  const json& j_;
  std::string where_, file_;
};

const std::set<std::string> kDtypes = {"auto",     "f32",     "bf16", "f16", "float32",
                                       "bfloat16", "float16", "fp32", "fp16"};

std::string checkedDtype(const Reader& r, const std::string& key, const std::string& fallback) {
  const std::string d = r.text(key, fallback);
  if (!kDtypes.count(d)) r.failAt(key, "is \"" + d + "\", expected auto, f32, bf16 or f16");
  return d;
}

// The task fields a plan may set (a task entry, or task_defaults without "dataset").
void readTaskFields(const Reader& r, TaskSpec& t) {
  if (r.has("seed")) r.failAt("seed", "is set by the plan's \"seeds\", not per task");
  t.template_id = r.text("template", t.template_id);
  t.shots = static_cast<int>(r.integer("shots", t.shots, 0));
  t.n_prompts = static_cast<int>(r.integer("n_prompts", t.n_prompts, 1));
  if (r.has("label_words")) t.label_words = r.texts("label_words");
  t.split = r.text("split", t.split);
  if (t.split != "train" && t.split != "valid" && t.split != "test")
    r.failAt("split", "is \"" + t.split + "\", expected train, valid or test");
}

// "seed" is known only to be refused with the reason (readTaskFields).
const std::set<std::string> kTaskKeys = {"dataset",     "template", "shots", "n_prompts",
                                         "label_words", "split",    "seed"};

// `p` against the plan's folder when it is relative and names something there; otherwise as written
// ("toy", a hub id, an absolute path).
std::string resolvePath(const std::string& folder, const std::string& p) {
  if (p.empty() || p == "toy" || fs::path(p).is_absolute()) return p;
  const fs::path there = fs::path(folder) / p;
  std::error_code ec;
  if (fs::exists(there, ec)) return fs::absolute(there).lexically_normal().string();
  return p;
}

// A dataset or file relative to the plan's folder ("toy:" tasks as they are).
std::string underFolder(const std::string& folder, const std::string& d) {
  if (d.rfind("toy:", 0) == 0 || fs::path(d).is_absolute()) return d;
  return (fs::path(folder) / d).lexically_normal().string();
}

std::string shortName(const std::string& s) {
  if (s.find('/') == std::string::npos) return s;
  const fs::path p(s);
  const std::string name = p.filename().string();
  return name.empty() ? p.parent_path().filename().string() : name;
}

// Calls f(element, "key[i]") for each element of the array at `key`, in order.
template <class F>
void forEachListed(const Reader& r, const std::string& key, F&& f) {
  const json& list = r.at(key);
  for (size_t i = 0; i < list.size(); ++i)
    f(list[i], key + "[" + std::to_string(i) + "]");
}

// "models": paths, or {"path", "tokenizer", "device", "dtype"} objects; device and dtype default to the
// plan's.
void readModels(const Reader& r, const std::string& file, Plan& p) {
  if (!r.has("models") || !r.at("models").is_array() || r.at("models").empty())
    r.failAt("models", "must be a non-empty array of model paths or {\"path\": ...} objects");
  forEachListed(r, "models", [&](const json& m, const std::string& where) {
    PlanModel pm{"", "", p.device, p.dtype};
    if (m.is_string()) {
      pm.path = m.get<std::string>();
    } else {
      const Reader mr(m, where, file);
      mr.only({"path", "tokenizer", "device", "dtype"});
      pm.path = mr.text("path", "");
      pm.tokenizer = mr.text("tokenizer", "");
      pm.device = mr.text("device", p.device);
      pm.dtype = checkedDtype(mr, "dtype", p.dtype);
    }
    if (pm.path.empty()) fail(file, ": ", where, " names no model (a path, a hub id or \"toy\")");
    p.models.push_back(pm);
  });
}

// "tasks": dataset ids or objects, each starting from "task_defaults".
void readTasks(const Reader& r, const std::string& file, Plan& p) {
  TaskSpec defaults;
  if (r.has("task_defaults")) {
    const Reader dr(r.at("task_defaults"), "task_defaults", file);
    dr.only({"template", "shots", "n_prompts", "label_words", "split", "seed"});
    readTaskFields(dr, defaults);
  }
  if (!r.has("tasks")) return;
  if (!r.at("tasks").is_array())
    r.failAt("tasks", "must be an array of task ids or {\"dataset\": ...} objects");
  forEachListed(r, "tasks", [&](const json& t, const std::string& where) {
    TaskSpec spec = defaults;
    if (t.is_string()) {
      spec.dataset = t.get<std::string>();
    } else {
      const Reader tr(t, where, file);
      tr.only(kTaskKeys);
      spec.dataset = tr.text("dataset", "");
      readTaskFields(tr, spec);
    }
    if (spec.dataset.empty()) fail(file, ": ", where, " names no dataset (toy:<task> or a dataset file)");
    p.tasks.push_back(spec);
  });
}

// "methods": registry names or {"method", "options"} objects; read after the tasks, which some need.
void readMethods(const Reader& r, const std::string& file, Plan& p) {
  if (!r.has("methods") || !r.at("methods").is_array() || r.at("methods").empty())
    r.failAt("methods", "must be a non-empty array of method names or {\"method\": ..., \"options\": ...}");
  forEachListed(r, "methods", [&](const json& m, const std::string& where) {
    PlanMethod pm;
    if (m.is_string()) {
      pm.method = m.get<std::string>();
    } else {
      const Reader mr(m, where, file);
      mr.only({"method", "options"});
      pm.method = mr.text("method", "");
      if (mr.has("options")) {
        if (!mr.at("options").is_object())
          mr.failAt("options", "must be a JSON object of the method's options");
        pm.options = mr.at("options");
      }
    }
    const MethodInfo& info =
        withContext(file + ": " + where, [&]() -> const MethodInfo& { return requireMethod(pm.method); });
    if (pm.options.contains("seed") && info.option("seed"))
      fail(file, ": ", where, ".options.seed is set by the plan's \"seeds\", not per method");
    if (info.takesTask() && p.tasks.empty())
      fail(file, ": ", where, " (", pm.method, ") needs a task, and the plan has no \"tasks\"");
    p.methods.push_back(pm);
  });
}

// "seeds": distinct whole numbers; without it, the one default seed of a task.
void readSeeds(const Reader& r, Plan& p) {
  if (!r.has("seeds")) {
    p.seeds = {TaskSpec{}.seed};
    return;
  }
  const json& s = r.at("seeds");
  if (!s.is_array() || s.empty()) r.failAt("seeds", "must be a non-empty array of whole numbers >= 0");
  std::set<uint64_t> seen;
  for (const json& v : s) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<long long>() >= 0))
      r.failAt("seeds", "holds " + v.dump() + ", expected whole numbers >= 0");
    if (!seen.insert(v.get<uint64_t>()).second) r.failAt("seeds", "lists seed " + v.dump() + " twice");
    p.seeds.push_back(v.get<uint64_t>());
  }
}

// "resources": sharding and the Slurm settings of the batch scripts.
void readResources(const Reader& r, const std::string& file, Resources& res) {
  if (!r.has("resources")) return;
  const Reader rr(r.at("resources"), "resources", file);
  rr.only(
      {"shards", "max_parallel", "cpus", "gpus", "memory", "time", "partition", "account", "qos", "sbatch"});
  res.shards = static_cast<int>(rr.integer("shards", 0, 0));
  res.max_parallel = static_cast<int>(rr.integer("max_parallel", 0, 0));
  res.cpus = static_cast<int>(rr.integer("cpus", 1, 1));
  res.gpus = static_cast<int>(rr.integer("gpus", 0, 0));
  res.memory = rr.text("memory", "");
  res.time = rr.text("time", "");
  res.partition = rr.text("partition", "");
  res.account = rr.text("account", "");
  res.qos = rr.text("qos", "");
  res.sbatch = rr.texts("sbatch");
  for (const std::string& o : res.sbatch)
    if (o.rfind("--", 0) != 0 || o.find('\n') != std::string::npos)
      rr.failAt("sbatch", "holds \"" + o + "\", expected sbatch options like \"--constraint=a100\"");
}

}  // namespace

std::string Job::label() const {
  std::string l = method + " · " + shortName(spec.value("model", std::string()));
  if (task) l += " · " + shortName(spec["task"].value("dataset", std::string()));
  return l + " · seed " + std::to_string(seed);
}

Plan planFromJson(const json& j, const std::string& file) {
  Plan p;
  p.file = file;
  std::error_code ec;
  p.folder = fs::absolute(fs::path(file).parent_path(), ec).lexically_normal().string();
  p.source = j;
  const Reader r(j, "", file);
  r.only({"format_version", "name", "models", "tasks", "task_defaults", "methods", "seeds", "device", "dtype",
          "resources"});
  if (!r.has("format_version")) r.failAt("", "has no \"format_version\" (this build writes 1)");
  const long long version = r.integer("format_version", 0, 1);
  if (version > kPlanFormatVersion)
    r.failAt("format_version", "is " + std::to_string(version) + "; this build reads plans up to version " +
                                   std::to_string(kPlanFormatVersion));
  p.name = r.text("name", fs::path(file).stem().string());
  p.device = r.text("device", p.device);
  if (p.device.empty()) r.failAt("device", "is empty (cpu, cuda, cuda:N)");
  p.dtype = checkedDtype(r, "dtype", p.dtype);
  readModels(r, file, p);
  readTasks(r, file, p);
  readMethods(r, file, p);
  readSeeds(r, p);
  readResources(r, file, p.resources);
  return p;
}

Plan loadPlan(const std::string& path) {
  return planFromJson(readJsonFile(path, json_limits::batchPlan()), path);
}

std::string jobId(const json& spec) {
  return spec.at("method").get<std::string>() + "-" + sha256Hex(spec.dump()).substr(0, 16);
}

Expansion expandPlan(const Plan& plan) {
  // Each task resolved once, and its kind read once (that loads its dataset).
  std::vector<TaskSpec> tasks;
  std::vector<TaskKind> kinds;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    TaskSpec t = plan.tasks[i];
    t.dataset = underFolder(plan.folder, t.dataset);
    kinds.push_back(
        withContext(plan.file + ": tasks[" + std::to_string(i) + "] (" + plan.tasks[i].dataset + ")",
                    [&] { return taskKind(t); }));
    tasks.push_back(t);
  }

  Expansion e;
  std::set<std::string> ids;
  std::vector<bool> methodUsed(plan.methods.size(), false);
  std::vector<std::string> whyUnused(plan.methods.size());
  for (const PlanModel& pm : plan.models) {
    const std::string model = resolvePath(plan.folder, pm.path);
    const std::string tokenizer = resolvePath(plan.folder, pm.tokenizer);
    // Tasks for this model; methods without a task take the first pass only (index -1).
    for (int ti = plan.tasks.empty() ? -1 : 0; ti < static_cast<int>(plan.tasks.size()); ++ti) {
      for (size_t mi = 0; mi < plan.methods.size(); ++mi) {
        const PlanMethod& method = plan.methods[mi];
        const MethodInfo& info = requireMethod(method.method);
        if (info.takesTask() && ti < 0) continue;
        if (!info.takesTask() && ti > 0) continue;
        if (info.takesTask() && !info.accepts(kinds[ti])) {
          const std::string why = method.method + " needs a " + toString(info.tasks.front()) + " task; " +
                                  plan.tasks[ti].dataset + " is a " + toString(kinds[ti]) + " task";
          whyUnused[mi] = why;
          const std::string line = method.method + " on " + plan.tasks[ti].dataset + ": " + why;
          if (std::find(e.skipped.begin(), e.skipped.end(), line) == e.skipped.end())
            e.skipped.push_back(line);
          continue;
        }
        methodUsed[mi] = true;
        for (uint64_t seed : plan.seeds) {
          Job job;
          job.method = method.method;
          job.seed = seed;
          job.model = model;
          job.tokenizer = tokenizer;
          job.device = pm.device;
          job.dtype = pm.dtype;

          json spec = {{"model", pm.path},  {"tokenizer", pm.tokenizer}, {"device", pm.device},
                       {"dtype", pm.dtype}, {"method", method.method},   {"seed", seed}};
          if (info.takesTask()) {
            TaskSpec written = plan.tasks[ti];
            written.seed = seed;
            TaskSpec resolved = tasks[ti];
            resolved.seed = seed;
            job.task = resolved;
            spec["task"] = taskSpecToJson(written);
          } else {
            spec["task"] = nullptr;
          }
          // Options: file options resolved against the plan's folder to run, recorded as written.
          json given = method.options;
          if (info.option("seed")) given["seed"] = seed;
          json runGiven = given;
          for (const OptionSpec& o : info.options)
            if (o.type == OptionType::File && runGiven.contains(o.key) && runGiven[o.key].is_string())
              runGiven[o.key] = underFolder(plan.folder, runGiven[o.key].get<std::string>());
          if (!info.takesTask() && !info.option("seed")) {
            job.seed = 0;
            spec["seed"] = 0;
          }
          spec["options"] = json::object();
          job.spec = spec;
          const std::string context = plan.file + ": job " + job.label();
          job.options =
              withContext(context, [&] { return resolveOptions(info.options, runGiven, info.name); });
          json recorded = job.options;
          for (const OptionSpec& o : info.options)
            if (o.type == OptionType::File && given.contains(o.key)) recorded[o.key] = given[o.key];
          job.spec["options"] = recorded;
          job.id = jobId(job.spec);
          if (!ids.insert(job.id).second) continue;  // a taskless method met again, or a repeated entry
          job.index = static_cast<int>(e.jobs.size());
          e.jobs.push_back(std::move(job));
        }
      }
    }
  }
  for (size_t mi = 0; mi < plan.methods.size(); ++mi)
    if (!methodUsed[mi])
      fail(plan.file, ": methods[", mi, "] (", plan.methods[mi].method,
           ") runs on none of the plan's tasks (", whyUnused[mi], ")");
  return e;
}

std::vector<const Job*> shardJobs(const Expansion& e, int k, int n) {
  if (n < 1 || k < 0 || k >= n) fail("shard ", k + 1, "/", n, ": expected 1 <= K <= N");
  std::vector<const Job*> out;
  for (const Job& j : e.jobs)
    if (j.index % n == k) out.push_back(&j);
  return out;
}

}  // namespace hs::batch
