// headscope-cli batch and merge as a user runs them, on the toy model: the exit status counts failed jobs
// and a rerun retries only those; a batch killed with SIGKILL resumes without redoing a finished run and
// leaves no half-written one; shards given by --shard and by Slurm's array variables together make the
// same study as one sequential run, and merging it twice writes the same bytes; --slurm writes the array
// script and submits it through whatever `sbatch` is on the PATH.
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "batch/merge.h"
#include "batch_test_util.h"
#include "session/session.h"
#include "test_paths.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using Result = hs::test::ProcessResult;

Result runCli(const QStringList& args,
              const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  return hs::test::runProcess(QString::fromStdString(hs::test::cliPath()), args, env);
}

std::set<std::string> idSet(const json& ids) {
  std::set<std::string> out;
  for (const json& id : ids)
    out.insert(id.get<std::string>());
  return out;
}

// What identifies a file's content version: inode and modification time (a rewrite changes both).
std::map<std::string, std::pair<ino_t, long long>> stamps(const QString& dir) {
  std::map<std::string, std::pair<ino_t, long long>> out;
  for (const std::string& id : hs::test::finishedRuns(dir)) {
    struct stat st {};
    const std::string f = (dir + "/runs/").toStdString() + id + ".hscope";
    if (::stat(f.c_str(), &st) == 0)
      out[id] = {st.st_ino, static_cast<long long>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec};
  }
  return out;
}

std::string readBytes(const QString& path) {
  std::ifstream f(path.toStdString(), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

class TestBatchCli : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  // Two of four jobs fail (their model is not a model): exit status 2, their logs say why, the other runs
  // are there. Once the model is fixed, a rerun runs exactly those two and clears their logs.
  void exitStatusCountsFailuresAndRerunRetriesThem() {
    const QString root = dir_.filePath("failures");
    QDir().mkpath(root);
    const QString later = root + "/later-model";
    {
      std::ofstream junk(later.toStdString());
      junk << "not a checkpoint";
    }
    const std::string plan = hs::test::writePlan(root + "/plan.json", json::parse(R"({
      "format_version": 1, "models": ["toy", "later-model"], "tasks": ["toy:antonym_a"],
      "task_defaults": {"n_prompts": 6, "shots": 3}, "methods": ["evaluate"], "seeds": [1, 2]})"));
    const QString out = root + "/out";
    const Result first = runCli({"batch", QString::fromStdString(plan), "--out", out});
    QVERIFY2(first.exitCode == 2, first.err.c_str());
    const json r1 = first.parsed();
    QCOMPARE(r1["ran"].size(), size_t(2));
    QCOMPARE(r1["failed"].size(), size_t(2));
    for (const json& id : r1["failed"]) {
      const QString log = out + "/failed/" + QString::fromStdString(id.get<std::string>()) + ".log";
      const std::string text = readBytes(log);
      QVERIFY2(text.rfind("error: loading " + later.toStdString() + ": ", 0) == 0, text.c_str());
      QVERIFY2(text.find("later-model") != std::string::npos, text.c_str());
    }
    QCOMPARE(hs::test::finishedRuns(out), idSet(r1["ran"]));

    // The fix: the path now holds the toy model. The jobs keep their ids (the plan names the same path).
    QVERIFY(QFile::remove(later));
    fs::create_directory_symlink(hs::test::sourceDir("resources/models/toy-icl"), later.toStdString());
    const Result second = runCli({"batch", QString::fromStdString(plan), "--out", out});
    QVERIFY2(second.exitCode == 0, second.err.c_str());
    const json r2 = second.parsed();
    QCOMPARE(idSet(r2["ran"]), idSet(r1["failed"]));
    QCOMPARE(idSet(r2["skipped"]), idSet(r1["ran"]));
    QVERIFY(r2["failed"].empty());
    QVERIFY(QDir(out + "/failed").entryList(QDir::Files).isEmpty());
    QCOMPARE(hs::test::finishedRuns(out).size(), size_t(4));
  }

  // SIGKILL while the batch runs (after its first run file lands): every run file there is complete, and
  // the resumed batch leaves those files untouched, runs exactly the others and cleans what the killed
  // writer left.
  void killedBatchResumesWithoutRedoingRuns() {
    const QString root = dir_.filePath("killed");
    QDir().mkpath(root);
    json plan = json::parse(R"({"format_version": 1, "models": ["toy"], "tasks": ["toy:antonym_a"],
      "task_defaults": {"n_prompts": 40, "shots": 3}, "methods": ["evaluate"], "seeds": [1, 2, 3, 4, 5, 6, 7, 8]})");
    planFile_ = hs::test::writePlan(root + "/plan.json", plan);
    const QString out = root + "/out";

    QProcess p;
    p.start(QString::fromStdString(hs::test::cliPath()), batchArgs(out));
    QVERIFY(p.waitForStarted());
    while (hs::test::finishedRuns(out).empty() && p.state() == QProcess::Running)
      QTest::qWait(10);
    p.kill();  // SIGKILL
    QVERIFY(p.waitForFinished());
    const auto before = stamps(out);
    QVERIFY(!before.empty());
    QVERIFY2(before.size() < 8, "the batch finished before it could be killed");
    for (const auto& [id, stamp] : before) {  // complete files only: each loads with its run
      const hs::Session s = hs::loadSession((out + "/runs/").toStdString() + id + ".hscope");
      QCOMPARE(s.runs.at(0).id, id);
    }

    const Result resumed = runCli(batchArgs(out));
    QVERIFY2(resumed.exitCode == 0, resumed.err.c_str());
    const json r = resumed.parsed();
    std::set<std::string> kept;
    for (const auto& [id, stamp] : before)
      kept.insert(id);
    QCOMPARE(idSet(r["skipped"]), kept);
    QCOMPARE(r["ran"].size(), 8 - kept.size());
    const auto after = stamps(out);
    QCOMPARE(after.size(), size_t(8));
    for (const auto& [id, stamp] : before)
      QVERIFY2(after.at(id) == stamp, ("run " + id + " was rewritten").c_str());
    // Nothing but the eight runs in runs/ (a killed writer's temporary file is gone).
    QCOMPARE(QDir(out + "/runs").entryList(QDir::Files | QDir::Hidden).size(), 8);
  }

  // The study of the issue in two shards, the first from --shard, the second from Slurm's array variables,
  // equals one sequential run of it, run for run; merging twice writes the same bytes.
  void shardsMergeToTheSequentialStudy() {
    const QString root = dir_.filePath("shards");
    QDir().mkpath(root);
    planFile_ = hs::test::writePlan(root + "/plan.json", hs::test::studyPlan());

    const Result a1 = runCli(batchArgs(root + "/sharded") << "--shard"
                                                          << "1/2");
    QVERIFY2(a1.exitCode == 0, a1.err.c_str());
    QCOMPARE(a1.parsed()["shard"], json("1/2"));
    QCOMPARE(a1.parsed()["ran"].size(), size_t(4));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("SLURM_ARRAY_TASK_ID", "1");
    env.insert("SLURM_ARRAY_TASK_COUNT", "2");
    const Result a2 = runCli(batchArgs(root + "/sharded"), env);
    QVERIFY2(a2.exitCode == 0, a2.err.c_str());
    QCOMPARE(a2.parsed()["shard"], json("2/2"));
    QCOMPARE(a2.parsed()["ran"].size(), size_t(4));
    QVERIFY(a2.parsed()["skipped"].empty());  // disjoint shards

    const Result b = runCli(batchArgs(root + "/sequential"));
    QVERIFY2(b.exitCode == 0, b.err.c_str());
    QCOMPARE(b.parsed()["ran"].size(), size_t(8));

    for (const char* name : {"sharded", "sequential"}) {
      const QString dir = root + "/" + name;
      const Result m = runCli({"merge", dir, "--out", dir + ".hscope"});
      QVERIFY2(m.exitCode == 0, m.err.c_str());
      QCOMPARE(m.parsed()["runs"], json(8));
    }
    const hs::Session sharded = hs::loadSession((root + "/sharded.hscope").toStdString());
    const hs::Session sequential = hs::loadSession((root + "/sequential.hscope").toStdString());
    hs::test::compareStudies(sharded, sequential);
    // Each run is its job: the method, task and seed of the spec it was made from.
    for (const hs::AnalysisRun& run : sharded.runs) {
      const json spec = sharded.batch["jobs"][run.id]["spec"];
      QCOMPARE(json(run.method), spec["method"]);
      QCOMPARE(json(run.provenance.task), spec["task"]["dataset"]);
      QCOMPARE(json(run.provenance.seed), spec["seed"]);
      QCOMPARE(run.provenance.model, std::string("toy"));
    }

    const Result again = runCli({"merge", root + "/sharded", "--out", root + "/sharded-again.hscope"});
    QVERIFY2(again.exitCode == 0, again.err.c_str());
    QCOMPARE(readBytes(root + "/sharded-again.hscope"), readBytes(root + "/sharded.hscope"));
  }

  // --slurm --dry-run writes the array script only; --slurm submits it with the sbatch on the PATH (here a
  // stand-in that records what it was asked and answers like sbatch --parsable).
  void slurmWritesAndSubmitsTheArrayScript() {
    const QString root = dir_.filePath("slurm");
    QDir().mkpath(root + "/bin");
    planFile_ = hs::test::writePlan(root + "/plan.json", hs::test::studyPlan());
    const Result dry = runCli(batchArgs(root + "/out") << "--slurm"
                                                       << "--dry-run");
    QVERIFY2(dry.exitCode == 0, dry.err.c_str());
    QCOMPARE(dry.parsed()["submitted"], json(false));
    QCOMPARE(dry.parsed()["shards"], json(4));
    const std::string script = readBytes(root + "/out/batch.sbatch");
    QVERIFY2(script.find("#SBATCH --array=0-3\n") != std::string::npos, script.c_str());
    QVERIFY2(script.find("exec " + hs::test::cliPath() + " batch " + planFile_ + " --out " +
                         (root + "/out").toStdString() + "\n") != std::string::npos,
             script.c_str());
    QVERIFY(hs::test::finishedRuns(root + "/out").empty());  // nothing ran
    QCOMPARE(hs::batch::readJobIndex((root + "/out").toStdString())["jobs"].size(), size_t(8));

    const QString fake = root + "/bin/sbatch";
    {
      std::ofstream f(fake.toStdString());
      f << "#!/bin/sh\necho \"$@\" > \"$(dirname \"$0\")/args\"\necho '4242;cluster'\n";
    }
    QFile::setPermissions(fake, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("PATH", root + "/bin:" + env.value("PATH"));
    const Result sub = runCli(batchArgs(root + "/out") << "--slurm", env);
    QVERIFY2(sub.exitCode == 0, sub.err.c_str());
    QCOMPARE(sub.parsed()["submitted"], json(true));
    QCOMPARE(sub.parsed()["slurm_job"], json("4242"));
    QCOMPARE(readBytes(root + "/bin/args"),
             "--parsable " + (root + "/out/batch.sbatch").toStdString() + "\n");
  }

  // A plan with a typo stops before any job, naming the plan file and the key; the exit status is 1.
  void typoStopsBeforeAnyJob() {
    const QString root = dir_.filePath("typo");
    QDir().mkpath(root);
    json plan = hs::test::studyPlan();
    plan["methods"][0]["options"]["n_corrupted"] = 4;
    planFile_ = hs::test::writePlan(root + "/plan.json", plan);
    const Result r = runCli(batchArgs(root + "/out"));
    QCOMPARE(r.exitCode, 1);
    QVERIFY2(r.err.find("error: " + planFile_ + ": job fv · toy · toy:category_label · seed 1") == 0,
             r.err.c_str());
    QVERIFY2(r.err.find("n_corrupted") != std::string::npos, r.err.c_str());
    QVERIFY(!QDir(root + "/out").exists());
  }

 private:
  QStringList batchArgs(const QString& out) const {
    return {"batch", QString::fromStdString(planFile_), "--out", out};
  }
  std::string planFile_;
};

QTEST_GUILESS_MAIN(TestBatchCli)
#include "test_batch_cli.moc"
