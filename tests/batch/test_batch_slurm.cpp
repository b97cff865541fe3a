// The batch on a real Slurm: a single-node cluster on this machine (munged as the munge user, slurmctld and
// slurmd as root, everything in a temporary folder; single_node_slurm.sh starts it and stops it by its pid
// files). `headscope-cli batch --slurm` submits the study of the issue (2 tasks × 2 methods × 2 seeds on the
// toy model) as an array of 4 shards; when every array task has completed, the merged study equals a
// sequential batch of the same plan, run for run.
//
// Needs root and Debian's slurmctld, slurmd, slurm-client and munge (`scripts/setup.sh --with-slurm` installs
// them); skips, saying why, without them. Label "slurm" (`make test-slurm` runs it alone).
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "batch_test_util.h"
#include "session/session.h"
#include "test_paths.h"

namespace {

using nlohmann::json;

using Result = hs::test::ProcessResult;

Result run(const QString& program, const QStringList& args, const QProcessEnvironment& env) {
  return hs::test::runProcess(program, args, env);
}

std::string readText(const QString& path) {
  std::ifstream f(path.toStdString());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

class TestBatchSlurm : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString cluster_;
  QProcessEnvironment env_ = QProcessEnvironment::systemEnvironment();
  bool started_ = false;

  // The daemons' logs, for a failure message.
  std::string clusterLogs() const {
    std::string s;
    for (const char* f : {"slurmctld.log", "slurmd.log"}) {
      const std::string text = readText(cluster_ + "/" + f);
      s += std::string("\n== ") + f + " (last 3000 bytes)\n" +
           text.substr(text.size() > 3000 ? text.size() - 3000 : 0);
    }
    return s;
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // munged (the munge user) reaches its socket through this folder.
    QFile::setPermissions(dir_.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner |
                                           QFile::ReadGroup | QFile::ExeGroup | QFile::ReadOther |
                                           QFile::ExeOther);
    cluster_ = dir_.filePath("cluster");
    const Result start = run("bash", {HEADSCOPE_SLURM_SCRIPT, "start", cluster_}, env_);
    started_ = true;  // stop whatever part of it started
    if (start.exitCode == 77) {
      qInfo("%s", clusterLogs().c_str());  // why the daemons could not run here
      QSKIP(("no single-node Slurm here: " + start.err).c_str());
    }
    QVERIFY2(start.exitCode == 0, (start.err + clusterLogs()).c_str());
    env_.insert("SLURM_CONF", cluster_ + "/slurm.conf");
  }

  void cleanupTestCase() {
    if (started_) run("bash", {HEADSCOPE_SLURM_SCRIPT, "stop", cluster_}, env_);
  }

  void arrayOfFourShardsEqualsSequentialBatch() {
    const std::string plan = hs::test::writePlan(dir_.filePath("plan.json"), hs::test::studyPlan());
    const QString cli = QString::fromStdString(hs::test::cliPath());
    const QString out = dir_.filePath("slurm-batch");

    const Result submit = run(cli, {"batch", QString::fromStdString(plan), "--out", out, "--slurm"}, env_);
    QVERIFY2(submit.exitCode == 0, (submit.err + clusterLogs()).c_str());
    const json answer = json::parse(submit.out);
    QCOMPARE(answer["submitted"], json(true));
    QCOMPARE(answer["shards"], json(4));
    const QString job = QString::fromStdString(answer["slurm_job"].get<std::string>());
    qInfo("submitted Slurm job %s", qPrintable(job));

    // Wait until no array task of the job is pending or running.
    for (;;) {
      const Result q = run("squeue", {"-h", "-j", job, "-o", "%i %T"}, env_);
      QVERIFY2(q.exitCode == 0, (q.err + clusterLogs()).c_str());
      if (q.out.find_first_not_of(" \n") == std::string::npos) break;
      QTest::qWait(500);
    }
    // Every array task completed with exit code 0 (the batch's exit status counts failed jobs).
    const Result show = run("scontrol", {"-o", "show", "job", job}, env_);
    QVERIFY2(show.exitCode == 0, show.err.c_str());
    const std::regex task("ArrayTaskId=(\\d+) .*JobState=(\\w+) .*ExitCode=(\\d+:\\d+)");
    std::set<std::string> tasks;
    std::istringstream lines(show.out);
    for (std::string line; std::getline(lines, line);) {
      std::smatch m;
      if (!std::regex_search(line, m, task)) continue;
      tasks.insert(m[1]);
      QVERIFY2(m[2] == "COMPLETED" && m[3] == "0:0", (line + "\n" + clusterLogs()).c_str());
    }
    QCOMPARE(tasks, (std::set<std::string>{"0", "1", "2", "3"}));
    // Each array task ran its own shard: two jobs each.
    std::set<std::string> shards;
    for (const QString& f : QDir(out + "/slurm").entryList({"*.out"}, QDir::Files)) {
      const std::string log = readText(out + "/slurm/" + f);
      std::smatch m;
      QVERIFY2(std::regex_search(log, m, std::regex("shard (\\d/4) \\(Slurm array task \\d\\)")),
               log.c_str());
      shards.insert(m[1]);
      QVERIFY2(log.find("\"ran\":[\"") != std::string::npos, log.c_str());
    }
    QCOMPARE(shards, (std::set<std::string>{"1/4", "2/4", "3/4", "4/4"}));
    QCOMPARE(hs::test::finishedRuns(out).size(), size_t(8));
    QVERIFY(QDir(out + "/failed").entryList(QDir::Files).isEmpty());

    const QString sequential = dir_.filePath("sequential-batch");
    const Result seq = run(cli, {"batch", QString::fromStdString(plan), "--out", sequential}, env_);
    QVERIFY2(seq.exitCode == 0, seq.err.c_str());
    for (const QString& d : {out, sequential}) {
      const Result m = run(cli, {"merge", d, "--out", d + ".hscope"}, env_);
      QVERIFY2(m.exitCode == 0, m.err.c_str());
    }
    hs::test::compareStudies(hs::loadSession((out + ".hscope").toStdString()),
                             hs::loadSession((sequential + ".hscope").toStdString()));
  }
};

QTEST_GUILESS_MAIN(TestBatchSlurm)
#include "test_batch_slurm.moc"
