#include "batch/runner.h"

#include <ATen/core/grad_mode.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "analysis/framework/registry.h"
#include "batch/text_file.h"
#include "model/load/model_loader.h"
#include "results/timestamp.h"
#include "session/model_identity.h"
#include "session/session.h"
#include "util/error.h"
#include "util/user_message.h"

namespace hs::batch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string hostName() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}

void makeFolder(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) fail(dir, ": cannot create the batch folder: ", ec.message());
}

// Temporary files a killed writer left for run `id` (AtomicFile names them "<id>.hscope.tmp.XXXXXX"). Only
// the shard that owns the job touches them, so none of them belongs to a live writer.
void removeLeftovers(const std::string& dir, const std::string& id) {
  const std::string prefix = id + ".hscope.tmp.";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::path(dir) / "runs", ec))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) fs::remove(entry.path(), ec);
}

// A loaded model and what every run of it records, kept while consecutive jobs share it.
struct ModelSlot {
  std::string key;    // model, tokenizer, device, dtype
  std::string error;  // loading failed: every job of this model fails with it
  LoadedModel loaded;
  json record;  // the session's "model": path, format, dtype, files with sha256
};

std::string modelKey(const Job& j) {
  return json{j.model, j.tokenizer, j.device, j.dtype}.dump();
}

std::unique_ptr<ModelSlot> loadSlot(const Job& j, const BatchOptions& o) {
  auto slot = std::make_unique<ModelSlot>();
  slot->key = modelKey(j);
  try {
    LoadOptions lo;
    lo.tokenizer = j.tokenizer;
    lo.dtype = j.dtype;
    lo.device = j.device;
    if (o.log) o.log("loading " + j.model + " (" + j.device + ", dtype " + j.dtype + ")");
    slot->loaded = loadModel(j.model, lo);
    slot->record = modelIdentity(slot->loaded.files);
    slot->record["path"] = j.model;
    slot->record["format"] = slot->loaded.format;
    slot->record["dtype"] = dtypeName(slot->loaded.model->dtype());
  } catch (const std::exception& e) {
    slot->error = "loading " + j.model + ": " + userMessage(e);
  }
  return slot;
}

// Runs one job and writes its run file; throws on any failure.
void runJob(const Job& j, const ModelSlot& slot, const BatchOptions& o) {
  if (!slot.error.empty()) fail(slot.error);
  const MethodInfo& m = requireMethod(j.method);
  AnalysisContext ctx;
  ctx.run_id = j.id;
  ctx.model_path = j.model;
  if (o.log) {
    auto last = std::make_shared<int>(-10);
    auto log = o.log;
    const std::string id = j.id;
    ctx.progress = [log, last, id](double f, const std::string& message) {
      const int pct = static_cast<int>(f * 100.0);
      if (pct < *last + 10) return;  // a line per 10 %: shard logs stay readable
      *last = pct;
      log(id + ": " + std::to_string(pct) + "% " + message);
    };
  }
  const MethodInputs in{*slot.loaded.model, slot.loaded.tokenizer.get(), j.task.value_or(TaskSpec{})};
  const AnalysisOutput out = runMethod(m, in, j.options, ctx);

  Session s;
  s.model = slot.record;
  s.tokenizer = {{"path", j.tokenizer}};
  if (j.task) s.task = taskSpecToJson(*j.task);
  s.runs.push_back(out.run);
  s.tensors = out.tensors;
  s.methods = methodRecords(s.runs);
  s.batch = {{"format_version", 1}, {"job", j.spec}};
  saveSession(runFilePath(o.out, j.id), s);
}

void writeFailure(const Job& j, const std::string& error, const BatchOptions& o) {
  std::string text = "error: " + error + "\n";
  text += "job: " + j.id + "\n";
  text += "label: " + j.label() + "\n";
  text += "spec: " + j.spec.dump() + "\n";
  text += "host: " + hostName() + "\n";
  text += "time: " + utcTimestamp() + "\n";
  text += "shard: " + std::to_string(o.shard + 1) + "/" + std::to_string(o.shards) + "\n";
  writeTextAtomic(failureLogPath(o.out, j.id), text);
}

}  // namespace

std::string runFilePath(const std::string& dir, const std::string& id) {
  return (fs::path(dir) / "runs" / (id + ".hscope")).string();
}

std::string failureLogPath(const std::string& dir, const std::string& id) {
  return (fs::path(dir) / "failed" / (id + ".log")).string();
}

void prepareOutput(const std::string& dir, const Plan& plan, const Expansion& e) {
  makeFolder(dir);
  makeFolder((fs::path(dir) / "runs").string());
  makeFolder((fs::path(dir) / "failed").string());
  writeTextAtomic((fs::path(dir) / "plan.json").string(), plan.source.dump(2) + "\n");
  json jobs = json::array();
  for (const Job& j : e.jobs)
    jobs.push_back({{"id", j.id}, {"label", j.label()}, {"spec", j.spec}});
  std::error_code ec;
  const std::string planFile = fs::absolute(plan.file, ec).lexically_normal().string();
  const json index = {{"format_version", 1},
                      {"plan", {{"file", planFile}, {"name", plan.name}}},
                      {"jobs", jobs},
                      {"skipped", e.skipped}};
  writeTextAtomic((fs::path(dir) / "jobs.json").string(), index.dump(1) + "\n");
}

BatchReport runBatch(const Expansion& e, const BatchOptions& o) {
  // No gradients, and not InferenceMode: SITE and LTV train through the frozen model (as the CLI runs them).
  at::NoGradGuard noGrad;
  const std::vector<const Job*> jobs = shardJobs(e, o.shard, o.shards);
  BatchReport report;
  report.jobs = static_cast<int>(jobs.size());
  std::unique_ptr<ModelSlot> slot;
  int done = 0;
  for (const Job* j : jobs) {
    ++done;
    const std::string where = "[" + std::to_string(done) + "/" + std::to_string(jobs.size()) + "] " + j->id +
                              " (" + j->label() + ")";
    std::error_code ec;
    if (fs::exists(runFilePath(o.out, j->id), ec)) {
      report.skipped.push_back(j->id);
      if (o.log) o.log(where + ": finished before, skipped");
      continue;
    }
    removeLeftovers(o.out, j->id);
    if (!slot || slot->key != modelKey(*j)) {
      slot.reset();  // free the previous model before loading the next
      slot = loadSlot(*j, o);
    }
    const auto start = std::chrono::steady_clock::now();
    try {
      runJob(*j, *slot, o);
      fs::remove(failureLogPath(o.out, j->id), ec);
      report.ran.push_back(j->id);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char secs[32];
      std::snprintf(secs, sizeof(secs), "%.1f", s);
      if (o.log) o.log(where + ": done in " + secs + " s");
    } catch (const std::exception& ex) {
      const std::string error = userMessage(ex);
      report.failed.push_back(j->id);
      if (o.log) o.log(where + ": FAILED: " + error);
      try {
        writeFailure(*j, error, o);
      } catch (const std::exception& w) {
        if (o.log) o.log(where + ": cannot write its failure log: " + userMessage(w));
      }
    }
  }
  return report;
}

}  // namespace hs::batch
