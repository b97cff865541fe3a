#pragma once
// Shared by the batch tests that run headscope-cli: the study plan of the issue (2 tasks × 2 methods × 2
// seeds on the toy model, small enough for CI), reading batch folders, and comparing two studies run for run.
#include <QDir>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "results/results_json.h"
#include "session/session.h"

namespace hs::test {

// What a finished child process left: its exit code (-1 when it crashed or was killed) and its output.
struct ProcessResult {
  int exitCode = -1;
  std::string out, err;
  nlohmann::json parsed() const { return nlohmann::json::parse(out); }
};

inline ProcessResult runProcess(const QString& program, const QStringList& args,
                                const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(program, args);
  p.waitForFinished(-1);  // ctest's timeout bounds the test
  ProcessResult r;
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput().toStdString();
  r.err = p.readAllStandardError().toStdString();
  return r;
}

// 2 tasks × 2 methods × 2 seeds = 8 jobs; 4 array tasks under Slurm.
inline nlohmann::json studyPlan() {
  return nlohmann::json::parse(R"({
    "format_version": 1,
    "name": "toy-study-test",
    "models": ["toy"],
    "tasks": ["toy:category_label", "toy:antonym_a"],
    "task_defaults": {"n_prompts": 8, "shots": 4},
    "methods": [{"method": "fv", "options": {"n_mean": 4, "n_corrupt": 4}},
                {"method": "evaluate", "options": {"mean_ablate": [[3, 6]]}}],
    "seeds": [1, 2],
    "resources": {"shards": 4, "cpus": 1, "time": "00:20:00"}
  })");
}

inline std::string writePlan(const QString& path, const nlohmann::json& plan) {
  std::ofstream(path.toStdString()) << plan.dump(2);
  return path.toStdString();
}

// The ids of the finished runs in DIR/runs.
inline std::set<std::string> finishedRuns(const QString& dir) {
  std::set<std::string> ids;
  for (const QString& f : QDir(dir + "/runs").entryList({"*.hscope"}, QDir::Files))
    ids.insert(f.chopped(7).toStdString());
  return ids;
}

// `j` without the "created" members (provenance times, the only thing two runs of a job may differ in).
inline nlohmann::json withoutCreated(nlohmann::json j) {
  if (j.is_object()) {
    j.erase("created");
    for (auto& [k, v] : j.items())
      v = withoutCreated(v);
  } else if (j.is_array()) {
    for (auto& v : j)
      v = withoutCreated(v);
  }
  return j;
}

// Two studies hold the same runs: the same ids, each run equal (grids, curves, tables, prompts, summary,
// options, provenance; times aside), the same tensors, the same jobs.
inline void compareStudies(const Session& a, const Session& b) {
  QCOMPARE(a.runs.size(), b.runs.size());
  for (size_t i = 0; i < a.runs.size(); ++i) {
    QCOMPARE(a.runs[i].id, b.runs[i].id);
    const nlohmann::json ra = withoutCreated(a.runs[i]), rb = withoutCreated(b.runs[i]);
    QVERIFY2(
        ra == rb,
        ("run " + a.runs[i].id + " differs: " + nlohmann::json::diff(ra, rb).dump().substr(0, 600)).c_str());
  }
  QCOMPARE(a.tensors.size(), b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    QVERIFY2(b.tensors.count(name), ("tensor " + name + " missing").c_str());
    QVERIFY2(t.equal(b.tensors.at(name)), ("tensor " + name + " differs").c_str());
  }
  QCOMPARE(a.batch["jobs"], b.batch["jobs"]);
  QCOMPARE(a.batch["failed"], b.batch["failed"]);
  QCOMPARE(a.methods, b.methods);
}

}  // namespace hs::test
