#pragma once
// Shared by the analysis tests: a run's grids, tables and curves by id, and the session round trips, in
// process (save a run as a session, reopen it) and through the CLI (`headscope-cli <method> ... --out
// S.hscope --json R.json`, then read back the printed line, the --json run and the session), so that each
// test states only its inputs and what the outputs must agree on.
#include <QProcess>
#include <QStringList>
#include <QTemporaryDir>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/framework/analysis_output.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/icl_task.h"
#include "test_paths.h"

// Skips the calling test function when headscope-cli is not part of this build or not built yet.
#ifdef HEADSCOPE_CLI_PATH
#define HS_REQUIRE_CLI() \
  if (!std::filesystem::exists(hs::test::cliPath())) QSKIP("headscope-cli has not been built")
#else
#define HS_REQUIRE_CLI() QSKIP("headscope-cli is not part of this build")
#endif

namespace hs::test {

// The grid, table or curve of a run with this id; nullptr when there is none.
template <typename T>
const T* findById(const std::vector<T>& items, const std::string& id) {
  for (const T& item : items)
    if (item.id == id) return &item;
  return nullptr;
}
// The toy model's 10-shot antonym prompts (toy:antonym_a): n of them, drawn with `seed`.
inline TaskSpec toyAntonymSpec(int nPrompts, uint64_t seed) {
  TaskSpec spec;
  spec.dataset = "toy:antonym_a";
  spec.shots = 10;
  spec.n_prompts = nPrompts;
  spec.seed = seed;
  return spec;
}

// The context of a run on the model named `path` (its provenance's model).
inline AnalysisContext modelContext(const std::string& path) {
  AnalysisContext ctx;
  ctx.model_path = path;
  return ctx;
}

inline const HeadGrid* findGrid(const AnalysisRun& r, const std::string& id) {
  return findById(r.grids, id);
}
inline const Table* findTable(const AnalysisRun& r, const std::string& id) {
  return findById(r.tables, id);
}
inline const Curve* findCurve(const AnalysisRun& r, const std::string& id) {
  return findById(r.curves, id);
}

// Saves a session holding `out` (its run and tensors) and `task` as DIR/FILE, and reopens it.
inline Session saveAndReopen(const QTemporaryDir& dir, const std::string& file, const AnalysisOutput& out,
                             const nlohmann::json& task = nlohmann::json::object()) {
  Session s;
  s.task = task;
  s.runs.push_back(out.run);
  s.tensors = out.tensors;
  const std::string path = dir.filePath(QString::fromStdString(file)).toStdString();
  saveSession(path, s);
  return loadSession(path);
}

// What one CLI analysis run wrote.
struct CliRunOutputs {
  nlohmann::json printed;            // the JSON line on stdout
  AnalysisRun written;               // the --json file
  Session session;                   // the --out file, reopened
  const AnalysisRun* run = nullptr;  // the printed run inside `session`
};

// Runs the CLI with `args` then --out DIR/STEM.hscope --json DIR/STEM.json, checks that it succeeds and
// prints a run of `method`, and reads the outputs into `o`. Failures are recorded on the current test:
// the caller returns when QTest::currentTestFailed().
inline void runCliAnalysis([[maybe_unused]] const QTemporaryDir& dir, [[maybe_unused]] const QString& stem,
                           [[maybe_unused]] const QStringList& args,
                           [[maybe_unused]] const std::string& method, [[maybe_unused]] CliRunOutputs& o) {
#ifdef HEADSCOPE_CLI_PATH
  const QString out = dir.filePath(stem + ".hscope"), json = dir.filePath(stem + ".json");
  QProcess p;
  p.start(QString::fromStdString(cliPath()), args + QStringList{"--out", out, "--json", json});
  QVERIFY(p.waitForFinished(120000));
  QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
  o.printed = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
  QCOMPARE(o.printed["method"].get<std::string>(), method);
  std::ifstream f(json.toStdString());
  o.written = nlohmann::json::parse(f).get<AnalysisRun>();
  o.session = loadSession(out.toStdString());
  o.run = o.session.findRun(o.printed["run"].get<std::string>());
  QVERIFY(o.run);
#else
  QFAIL("headscope-cli is not part of this build");
#endif
}

}  // namespace hs::test

// In a test function: skips without the CLI, else runs `method` with the braced argument list (without
// --out / --json) into a temporary folder and declares `hs::test::CliRunOutputs name` holding what it
// wrote; returns from the test function when the run fails.
#define HS_RUN_CLI_ANALYSIS(name, stem, method, ...)                                 \
  HS_REQUIRE_CLI();                                                                  \
  QTemporaryDir name##Dir_;                                                          \
  hs::test::CliRunOutputs name;                                                      \
  hs::test::runCliAnalysis(name##Dir_, stem, QStringList __VA_ARGS__, method, name); \
  if (QTest::currentTestFailed()) return
