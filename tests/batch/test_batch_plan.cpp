// Batch plans and their jobs, in-process: the grid expands in the documented order with stable ids that
// change exactly when what a job computes changes; a typo fails at expansion naming the plan, the job and
// the key; shards partition the jobs; Slurm's array variables give the shard; the array script carries the
// plan's resources; runBatch writes each run once, skips finished ones, logs failures and goes on; merging
// gives one session with every run, byte for byte the same each time.
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "analysis/framework/registry.h"
#include "batch/merge.h"
#include "batch/plan.h"
#include "batch/runner.h"
#include "batch/slurm.h"
#include "session/session.h"
#include "test_method.h"
#include "util/file_text.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace hs;
using namespace hs::batch;

// "flaky": the echo method that fails on the seeds listed in its option `fail_seeds` (a method error in the
// middle of a batch, without depending on any file).
struct FlakyOptions {
  std::vector<int> fail_seeds;
  uint64_t seed = 1;
};
void registerFlakyMethod() {
  if (findMethod("flaky")) return;
  static const OptionTable<FlakyOptions> table =
      OptionTable<FlakyOptions>()
          .add("fail_seeds", &FlakyOptions::fail_seeds, "seeds that fail")
          .add("seed", &FlakyOptions::seed, "seed");
  MethodInfo m = test::echoMethod();
  m.name = "flaky";
  m.title = "Flaky echo (test method)";
  m.options = table.specs();
  m.run = [](const MethodInputs& in, const json& options, const AnalysisContext& ctx) {
    const FlakyOptions o = table.read(options);
    for (int s : o.fail_seeds)
      if (static_cast<uint64_t>(s) == o.seed)
        throw std::runtime_error("flaky fails on seed " + std::to_string(s));
    test::EchoOptions e;
    e.seed = o.seed;
    return test::runEcho(in.model, e, ctx);
  };
  registerMethod(m);
}

json toyPlan() {
  return json::parse(R"({
    "format_version": 1, "name": "grid",
    "models": ["toy"],
    "tasks": ["toy:category_label", {"dataset": "toy:antonym_a", "shots": 4}],
    "task_defaults": {"n_prompts": 6},
    "methods": [{"method": "fv", "options": {"n_mean": 4}}, "evaluate", "induction", "geometry"],
    "seeds": [1, 2]
  })");
}

// The plan written to `dir`/plan.json and expanded.
Expansion expand(const QTemporaryDir& dir, const json& plan, const std::string& name = "plan.json") {
  const std::string path = dir.filePath(QString::fromStdString(name)).toStdString();
  std::ofstream(path) << plan.dump(1);
  return expandPlan(loadPlan(path));
}

std::string expansionError(const QTemporaryDir& dir, const json& plan) {
  try {
    expand(dir, plan);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::map<std::string, std::string> idsByLabel(const Expansion& e) {
  std::map<std::string, std::string> out;
  for (const Job& j : e.jobs)
    out[j.label()] = j.id;
  return out;
}

std::string readBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

class TestBatchPlan : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    test::registerEchoMethod();
    registerFlakyMethod();
  }

  // Models, then tasks, then methods, then seeds; a taskless method once per model and seed; a method
  // skips tasks of the wrong kind, saying so.
  void expandsTheGridInOrder() {
    const Expansion e = expand(dir_, toyPlan());
    std::vector<std::string> labels;
    for (const Job& j : e.jobs)
      labels.push_back(j.label());
    const std::vector<std::string> expected = {"fv · toy · toy:category_label · seed 1",
                                               "fv · toy · toy:category_label · seed 2",
                                               "evaluate · toy · toy:category_label · seed 1",
                                               "evaluate · toy · toy:category_label · seed 2",
                                               "induction · toy · seed 1",
                                               "induction · toy · seed 2",
                                               "geometry · toy · toy:category_label · seed 1",
                                               "geometry · toy · toy:category_label · seed 2",
                                               "fv · toy · toy:antonym_a · seed 1",
                                               "fv · toy · toy:antonym_a · seed 2",
                                               "evaluate · toy · toy:antonym_a · seed 1",
                                               "evaluate · toy · toy:antonym_a · seed 2"};
    QCOMPARE(labels, expected);
    QCOMPARE(e.skipped.size(), size_t(1));
    QVERIFY2(e.skipped[0].find("geometry on toy:antonym_a: geometry needs a classification task") == 0,
             e.skipped[0].c_str());
    for (size_t i = 0; i < e.jobs.size(); ++i) {
      const Job& j = e.jobs[i];
      QCOMPARE(j.index, static_cast<int>(i));
      QVERIFY(j.id.rfind(j.method + "-", 0) == 0);
      QCOMPARE(j.id.size(), j.method.size() + 17);
      QCOMPARE(j.id, jobId(j.spec));
    }
    // The task carries the plan's defaults, the entry's own fields and the job's seed; the options are
    // resolved (every option of the method, the plan's values in place).
    const Job& fv = e.jobs[9];
    QCOMPARE(fv.task->dataset, std::string("toy:antonym_a"));
    QCOMPARE(fv.task->shots, 4);
    QCOMPARE(fv.task->n_prompts, 6);
    QCOMPARE(fv.task->seed, uint64_t(2));
    QCOMPARE(fv.spec["task"]["seed"], json(2));
    QCOMPARE(fv.options["n_mean"], json(4));
    QCOMPARE(fv.options.size(), requireMethod("fv").options.size());
    QCOMPARE(fv.spec["options"], fv.options);
    // induction has its own seed option: the job's seed goes there.
    QCOMPARE(e.jobs[5].options["seed"], json(2));
    QVERIFY(!e.jobs[5].task);
  }

  // The same job has the same id however the plan is written or wherever it lies; a job whose computation
  // changes gets a new id, and only that job.
  void idsAreStableAndSpecific() {
    const auto base = idsByLabel(expand(dir_, toyPlan()));
    QCOMPARE(idsByLabel(expand(dir_, toyPlan())), base);

    // Reordered keys, an option given at its default, the plan in another folder.
    json same = json::parse(R"({
      "seeds": [1, 2], "methods": [{"options": {"n_mean": 4}, "method": "fv"},
                                   {"method": "evaluate", "options": {}}, "induction", "geometry"],
      "task_defaults": {"n_prompts": 6}, "models": [{"path": "toy"}],
      "tasks": ["toy:category_label", {"shots": 4, "dataset": "toy:antonym_a"}], "format_version": 1,
      "device": "cpu", "dtype": "auto", "name": "another name"})");
    same["methods"][0]["options"]["top"] = requireMethod("fv").option("top")->default_value;
    QDir(dir_.path()).mkpath("elsewhere");
    QCOMPARE(idsByLabel(expand(dir_, same, "elsewhere/plan.json")), base);

    auto changed = [&](const std::function<void(json&)>& edit) {
      json p = toyPlan();
      edit(p);
      const auto ids = idsByLabel(expand(dir_, p));
      std::set<std::string> differ;
      for (const auto& [label, id] : ids)
        if (base.count(label) && base.at(label) != id) differ.insert(label);
      return differ;
    };
    // An option of fv: the four fv jobs only.
    const auto fvOnly = changed([](json& p) { p["methods"][0]["options"]["n_mean"] = 5; });
    QCOMPARE(fvOnly.size(), size_t(4));
    for (const std::string& l : fvOnly)
      QVERIFY(l.rfind("fv ·", 0) == 0);
    // The antonym task's shots: the jobs on that task.
    const auto antonym = changed([](json& p) { p["tasks"][1]["shots"] = 5; });
    QCOMPARE(antonym.size(), size_t(4));
    for (const std::string& l : antonym)
      QVERIFY(l.find("toy:antonym_a") != std::string::npos);
    // Prompts of every task: every job with a task; induction takes none.
    QCOMPARE(changed([](json& p) { p["task_defaults"]["n_prompts"] = 7; }).size(), size_t(10));
    // Device and dtype: every job.
    QCOMPARE(changed([](json& p) { p["dtype"] = "bf16"; }).size(), size_t(12));
    QCOMPARE(changed([](json& p) { p["device"] = "cuda"; }).size(), size_t(12));
  }

  // A typo fails at expansion, naming the plan file, the place and the key.
  void typosFailBeforeAnyJob() {
    const std::string planPath = dir_.filePath("plan.json").toStdString();
    auto expectError = [&](const std::function<void(json&)>& edit, std::vector<std::string> parts) {
      json p = toyPlan();
      edit(p);
      const std::string err = expansionError(dir_, p);
      for (const std::string& part : parts)
        QVERIFY2(err.find(part) != std::string::npos, ("'" + part + "' not in: " + err).c_str());
    };
    expectError([](json& p) { p["methods"][0]["options"]["topp"] = 3; },
                {planPath, "job fv · toy · toy:category_label · seed 1", "topp"});
    expectError([](json& p) { p["methods"][0]["options"]["n_mean"] = -1; }, {planPath, "fv", "n_mean"});
    expectError([](json& p) { p["methods"][1] = "evalute"; },
                {planPath, "methods[1]", "evalute", "evaluate"});
    expectError([](json& p) { p["seed"] = 3; }, {planPath, "seed is not a plan key", "seeds"});
    expectError([](json& p) { p["tasks"][1]["seed"] = 3; }, {planPath, "tasks[1].seed", "seeds"});
    expectError(
        [](json& p) {
          p["methods"][2] = json{{"method", "induction"}, {"options", {{"seed", 4}}}};
        },
        {planPath, "methods[2].options.seed", "seeds"});
    expectError([](json& p) { p["tasks"][0] = "toy:no_such_task"; }, {planPath, "tasks[0]", "no_such_task"});
    expectError(
        [](json& p) {
          p["models"][0] = json{{"path", "toy"}, {"dtype", "f64"}};
        },
        {planPath, "models[0].dtype", "f64"});
    expectError([](json& p) { p.erase("format_version"); }, {planPath, "format_version"});
    expectError([](json& p) { p["format_version"] = 2; }, {planPath, "format_version", "up to version 1"});
    expectError([](json& p) { p["resources"] = {{"gpu", 1}}; }, {planPath, "resources.gpu", "gpus"});
    expectError([](json& p) { p["seeds"] = {1, 1}; }, {planPath, "seeds", "twice"});
    // A method that fits none of the tasks is a mistake, not an empty grid.
    expectError([](json& p) { p["tasks"] = {"toy:antonym_a"}; },
                {planPath, "methods[3] (geometry) runs on none of the plan's tasks", "classification"});
  }

  // Shard K of N runs every N-th job from job K: together the shards run every job exactly once.
  void shardsPartitionTheJobs() {
    const Expansion e = expand(dir_, toyPlan());
    for (int n = 1; n <= 13; ++n) {
      std::multiset<std::string> seen;
      for (int k = 0; k < n; ++k) {
        const auto jobs = shardJobs(e, k, n);
        for (size_t i = 0; i < jobs.size(); ++i) {
          QCOMPARE(jobs[i]->index, k + static_cast<int>(i) * n);
          seen.insert(jobs[i]->id);
        }
      }
      QCOMPARE(seen.size(), e.jobs.size());
      QCOMPARE(std::set<std::string>(seen.begin(), seen.end()).size(), e.jobs.size());
    }
    QCOMPARE(parseShard("2/4").index, 1);
    QCOMPARE(parseShard("2/4").count, 4);
    for (const char* bad : {"0/4", "5/4", "a/b", "3", "1/0", "-1/4"})
      QVERIFY_THROWS_EXCEPTION(std::exception, parseShard(bad));
  }

  // Slurm's array variables give the shard: ID − MIN of COUNT (or MAX − MIN + 1).
  void shardFromSlurmArray() {
    auto shard = [](std::map<std::string, std::string> vars) {
      return shardFromSlurm([vars](const char* n) -> const char* {
        const auto it = vars.find(n);
        return it == vars.end() ? nullptr : it->second.c_str();
      });
    };
    QVERIFY(!shard({}));
    const auto a = shard({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}});
    QCOMPARE(a->index, 2);
    QCOMPARE(a->count, 4);
    const auto b =
        shard({{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_MIN", "4"}, {"SLURM_ARRAY_TASK_MAX", "7"}});
    QCOMPARE(b->index, 1);
    QCOMPARE(b->count, 4);
    QCOMPARE(b->text(), std::string("2/4"));
    QVERIFY_THROWS_EXCEPTION(std::exception, shard({{"SLURM_ARRAY_TASK_ID", "3"}}));
    QVERIFY_THROWS_EXCEPTION(std::exception,
                             shard({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    QVERIFY_THROWS_EXCEPTION(std::exception,
                             shard({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    QVERIFY_THROWS_EXCEPTION(std::exception,  // 1,3,5: not contiguous
                             shard({{"SLURM_ARRAY_TASK_ID", "3"},
                                    {"SLURM_ARRAY_TASK_COUNT", "3"},
                                    {"SLURM_ARRAY_TASK_MIN", "1"},
                                    {"SLURM_ARRAY_TASK_MAX", "5"}}));
  }

  // The array script asks for one task per shard with the plan's resources and runs the batch command.
  void sbatchScriptCarriesThePlan() {
    json p = toyPlan();
    p["resources"] = {
        {"shards", 4},    {"max_parallel", 2},  {"cpus", 3},          {"gpus", 1},
        {"memory", "8G"}, {"time", "00:10:00"}, {"partition", "gpu"}, {"sbatch", {"--constraint=a100"}}};
    const std::string planPath = dir_.filePath("plan.json").toStdString();
    std::ofstream(planPath) << p.dump();
    const Plan plan = loadPlan(planPath);
    const Expansion e = expandPlan(plan);
    const std::string s = sbatchScript(plan, e, "/opt/hs/bin/headscope-cli", planPath, "/scratch/study");
    for (const std::string& line : std::vector<std::string>{
             "#SBATCH --array=0-3%2\n", "#SBATCH --cpus-per-task=3\n", "#SBATCH --gres=gpu:1\n",
             "#SBATCH --mem=8G\n", "#SBATCH --time=00:10:00\n", "#SBATCH --partition=gpu\n",
             "#SBATCH --constraint=a100\n", "#SBATCH --output=/scratch/study/slurm/%A_%a.out\n",
             "#SBATCH --job-name=headscope-grid\n",
             "\nexec /opt/hs/bin/headscope-cli batch " + planPath + " --out /scratch/study\n"})
      QVERIFY2(s.find(line) != std::string::npos, (line + " not in:\n" + s).c_str());
    QVERIFY(s.rfind("#!/bin/bash\n", 0) == 0);
    // No more array tasks than jobs; one per job when the plan does not say.
    p["resources"] = {{"shards", 50}};
    std::ofstream(planPath) << p.dump();
    QCOMPARE(slurmShards(loadPlan(planPath), e), 12);
    p.erase("resources");
    std::ofstream(planPath) << p.dump();
    QCOMPARE(slurmShards(loadPlan(planPath), e), 12);
    QVERIFY_THROWS_EXCEPTION(
        std::exception, sbatchScript(plan, e, "/opt/hs/bin/headscope-cli", planPath, "/scratch/my study"));
  }

  // Every job runs once into DIR/runs; a failure leaves its log and the rest go on; a second pass skips the
  // finished ones and retries the failed ones; a job that succeeds later loses its failure log.
  void runBatchWritesSkipsAndLogsFailures() {
    const QString out = dir_.filePath("run-batch");
    json p = json::parse(R"({"format_version": 1, "models": ["toy"], "seeds": [1, 2, 3],
      "methods": ["echo", {"method": "flaky", "options": {"fail_seeds": [2]}}]})");
    const Expansion e = expand(dir_, p);
    QCOMPARE(e.jobs.size(), size_t(6));
    BatchOptions o;
    o.out = out.toStdString();
    std::vector<std::string> lines;
    o.log = [&](const std::string& l) { lines.push_back(l); };
    prepareOutput(o.out, loadPlan(dir_.filePath("plan.json").toStdString()), e);
    const BatchReport first = runBatch(e, o);
    QCOMPARE(first.jobs, 6);
    QCOMPARE(first.ran.size(), size_t(5));
    QCOMPARE(first.failed.size(), size_t(1));
    QVERIFY(first.skipped.empty());
    const Job& failing = e.jobs[4];  // flaky, seed 2
    QCOMPARE(first.failed[0], failing.id);
    // The model was loaded once for the six jobs.
    QCOMPARE(std::count_if(lines.begin(), lines.end(),
                           [](const std::string& l) { return l.rfind("loading ", 0) == 0; }),
             long(1));

    const Failure f = readFailure(failureLogPath(o.out, failing.id));
    QCOMPARE(f.error, std::string("flaky fails on seed 2"));
    QCOMPARE(f.label, failing.label());
    for (const Job& j : e.jobs) {
      if (j.id == failing.id) {
        QVERIFY(!fs::exists(runFilePath(o.out, j.id)));
        continue;
      }
      const Session s = loadSession(runFilePath(o.out, j.id));
      QCOMPARE(s.runs.size(), size_t(1));
      QCOMPARE(s.runs[0].id, j.id);
      QCOMPARE(s.runs[0].provenance.seed, j.seed);
      QCOMPARE(s.runs[0].provenance.model, std::string("toy"));
      QCOMPARE(s.batch["job"], j.spec);
      QVERIFY(s.methods.contains(j.method));
      QVERIFY(s.tensors.count(j.id + "/values"));
    }
    // The index lists every job.
    const json index = readJobIndex(o.out);
    QCOMPARE(index["jobs"].size(), size_t(6));
    QCOMPARE(index["jobs"][4]["id"], json(failing.id));

    const auto mtime = fs::last_write_time(runFilePath(o.out, e.jobs[0].id));
    const BatchReport second = runBatch(e, o);
    QCOMPARE(second.skipped.size(), size_t(5));
    QCOMPARE(second.failed, std::vector<std::string>{failing.id});
    QVERIFY(second.ran.empty());
    QCOMPARE(fs::last_write_time(runFilePath(o.out, e.jobs[0].id)), mtime);

    // The failing job's run appears (here: written by hand, as another shard would) → no longer a failure.
    fs::copy_file(runFilePath(o.out, e.jobs[1].id), runFilePath(o.out, failing.id));
    QVERIFY(failures(o.out).empty());
  }

  // merge: every run once, sorted by id, with its job; the same runs give the same bytes; files that are
  // not finished runs (a writer's temporary file) are not runs.
  void mergeIsCompleteAndDeterministic() {
    const QString out = dir_.filePath("merge-batch");
    json p = json::parse(R"({"format_version": 1, "models": ["toy"], "seeds": [3, 1, 2],
      "methods": [{"method": "echo", "options": {"k": 2}}, {"method": "flaky", "options": {"fail_seeds": [1]}}]})");
    const Expansion e = expand(dir_, p);
    BatchOptions o;
    o.out = out.toStdString();
    prepareOutput(o.out, loadPlan(dir_.filePath("plan.json").toStdString()), e);
    // Shard 2 of 2 only: the rest is pending.
    runBatch(e, [&] {
      BatchOptions s = o;
      s.shard = 1;
      s.shards = 2;
      return s;
    }());
    std::ofstream(o.out + "/runs/" + e.jobs[0].id + ".hscope.tmp.abc123") << "half a file";

    const Session partial = mergeBatch(o.out);
    std::set<std::string> pending;
    for (const json& id : partial.batch["pending"])
      pending.insert(id.get<std::string>());
    QCOMPARE(pending, (std::set<std::string>{e.jobs[0].id, e.jobs[2].id, e.jobs[4].id}));

    runBatch(e, o);  // the rest (shard 1 of 2 is every other job)
    QVERIFY(!fs::exists(o.out + "/runs/" + e.jobs[0].id + ".hscope.tmp.abc123"));  // the shard cleared it
    const Session s = mergeBatch(o.out);
    QCOMPARE(s.runs.size(), size_t(5));
    for (size_t i = 1; i < s.runs.size(); ++i)
      QVERIFY(s.runs[i - 1].id < s.runs[i].id);
    QCOMPARE(s.batch["failed"].size(), size_t(1));
    const Job& failing = e.jobs[4];  // flaky, seed 1
    QCOMPARE(s.batch["failed"][failing.id], json("flaky fails on seed 1"));
    QVERIFY(s.batch["pending"].empty());
    QCOMPARE(s.batch["plan"], p);
    for (const Job& j : e.jobs) {
      if (j.id == failing.id) continue;
      QVERIFY(s.findRun(j.id));
      QCOMPARE(s.batch["jobs"][j.id]["spec"], j.spec);
      QCOMPARE(s.batch["jobs"][j.id]["model"]["path"], json("toy"));
      QVERIFY(s.tensors.count(j.id + "/values"));
    }
    QVERIFY(s.methods.contains("echo") && s.methods.contains("flaky"));
    QCOMPARE(s.model["path"], json("toy"));  // shared by all runs
    QVERIFY(isStudySession([&] {
      const std::string f = dir_.filePath("study.hscope").toStdString();
      saveSession(f, s);
      return f;
    }()));
    QVERIFY(!isStudySession(runFilePath(o.out, e.jobs[0].id)));

    const std::string a = dir_.filePath("a.hscope").toStdString(),
                      b = dir_.filePath("b.hscope").toStdString();
    saveSession(a, mergeBatch(o.out));
    saveSession(b, mergeBatch(o.out));
    QCOMPARE(readBytes(a), readBytes(b));
    QVERIFY(readBytes(a).size() > 1000);
  }

  // A run file that holds another run, or no batch folder at all, is refused naming the file.
  void mergeRefusesInconsistentFolders() {
    QVERIFY_THROWS_EXCEPTION(std::exception, mergeBatch(dir_.filePath("no-such-folder").toStdString()));
    const QString out = dir_.filePath("bad-batch");
    QDir().mkpath(out + "/runs");
    try {
      mergeBatch(out.toStdString());
      QFAIL("an empty batch folder merged");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find("no finished runs") != std::string::npos, e.what());
    }
    const std::string any = runFiles(dir_.filePath("merge-batch").toStdString()).front();
    const std::string renamed = out.toStdString() + "/runs/echo-0000000000000000.hscope";
    fs::copy_file(any, renamed);
    try {
      mergeBatch(out.toStdString());
      QFAIL("a run under another job's name merged");
    } catch (const std::exception& e) {
      QVERIFY2(std::string(e.what()).find(renamed) != std::string::npos, e.what());
      QVERIFY2(std::string(e.what()).find("expected run echo-0000000000000000") != std::string::npos,
               e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestBatchPlan)
#include "test_batch_plan.moc"
