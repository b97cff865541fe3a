#pragma once
// Running headscope-cli from the CLI tests as a user does: a real process, its exit code, stdout, stderr.
#include <QProcess>
#include <QStringList>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "test_paths.h"

namespace hs::test {

struct CliResult {
  int exitCode = -1;  // -1 when the process did not exit normally
  std::string out, err;
  nlohmann::json parsed() const { return nlohmann::json::parse(out); }
};

// Runs the CLI with `args` (and `env`, the test's own environment unless given) and waits for it (ctest's
// per-test timeout is the real bound).
inline CliResult runCli(const QStringList& args,
                        const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment()) {
  QProcess p;
  p.setProcessEnvironment(env);
  p.start(QString::fromStdString(cliPath()), args);
  const bool finished = p.waitForFinished(-1);
  CliResult r;
  r.exitCode = finished && p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = p.readAllStandardOutput().toStdString();
  r.err = p.readAllStandardError().toStdString();
  return r;
}

// A JSON file the CLI wrote (throws on a missing or malformed file, which fails the test).
inline nlohmann::json readJsonFile(const QString& path) {
  std::ifstream f(path.toStdString());
  return nlohmann::json::parse(f);
}

}  // namespace hs::test
