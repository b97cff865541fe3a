#pragma once
// The reference environment: the libraries researchers run (PyTorch 2.x, transformers, tokenizers,
// safetensors, TransformerLens), pinned in scripts/reference-requirements.txt and installed by
// `./scripts/setup.sh --with-reference` into .venv-reference/. Tests that hold HeadScope against them run
// their Python half with runReferencePython(); without the environment they skip in one line that says why
// and how to get it, and with HEADSCOPE_REQUIRE_REFERENCE=1 (CI) they fail instead, so CI cannot pass
// them by skipping.
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QtTest>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "test_paths.h"

namespace hs::test {

inline std::string referenceVenvPython() {
  return std::string(HEADSCOPE_REFERENCE_VENV) + "/bin/python";
}

inline bool referenceRequired() {
  const char* v = std::getenv("HEADSCOPE_REQUIRE_REFERENCE");
  return v && std::string(v) == "1";
}

// The environment of the reference Python: offline (nothing may be downloaded), one thread as the tests'
// own (tests/CMakeLists.txt), caches in a folder of the test's.
inline QProcessEnvironment referenceProcessEnvironment() {
  static QTemporaryDir home;  // hub and torch caches of this test process, removed at exit
  QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
  env.insert("HF_HUB_OFFLINE", "1");
  env.insert("TRANSFORMERS_OFFLINE", "1");
  env.insert("HF_DATASETS_OFFLINE", "1");
  env.insert("HF_HOME", home.path() + "/hf");
  env.insert("HF_HUB_CACHE", home.path() + "/hf/hub");
  env.insert("TORCH_HOME", home.path() + "/torch");
  env.insert("MPLCONFIGDIR", home.path() + "/mpl");
  env.insert("WANDB_MODE", "disabled");
  env.insert("TOKENIZERS_PARALLELISM", "false");
  env.insert("PYTHONDONTWRITEBYTECODE", "1");
  env.insert("PYTHONPATH", QString::fromStdString(sourceDir("tests/reference")));
  return env;
}

// Whether the reference environment exists and imports every pinned library (checked once per process).
// *why is the one line a skip prints: what is missing and how to get it.
inline bool referenceEnvUsable(QString* why) {
  static int state = -1;  // -1 unknown, 0 no, 1 yes
  static QString reason;
  if (state < 0) {
    const std::string python = referenceVenvPython();
    if (!std::filesystem::exists(python)) {
      reason = QString("reference environment absent (%1 not found): run ./scripts/setup.sh --with-reference")
                   .arg(QString::fromStdString(python));
      state = 0;
    } else {
      QProcess p;
      p.setProcessEnvironment(referenceProcessEnvironment());
      p.start(QString::fromStdString(python),
              {"-c", "import torch, transformers, tokenizers, safetensors, transformer_lens"});
      const bool ok =
          p.waitForFinished(300000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
      const QStringList err = QString::fromLocal8Bit(p.readAllStandardError()).trimmed().split('\n');
      reason =
          ok ? QString()
             : QString("reference environment %1 is broken (%2): rerun ./scripts/setup.sh --with-reference")
                   .arg(QString::fromStdString(python), err.isEmpty() ? QString("no output") : err.last());
      state = ok ? 1 : 0;
    }
  }
  if (why) *why = reason;
  return state == 1;
}

// Runs `script` (a path under tests/reference, or absolute) with the reference Python; returns stdout, or
// sets *error to the exit code and the tail of stderr.
inline QString runReferencePython(const QString& script, const QStringList& args, QString* error,
                                  int timeoutMs = 900000) {
  QProcess p;
  p.setProcessEnvironment(referenceProcessEnvironment());
  const QString path = QFileInfo(script).isAbsolute()
                           ? script
                           : QString::fromStdString(sourceDir("tests/reference/")) + script;
  p.start(QString::fromStdString(referenceVenvPython()), QStringList{path} + args);
  if (!p.waitForFinished(timeoutMs) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    QStringList tail = QString::fromLocal8Bit(p.readAllStandardError()).trimmed().split('\n');
    while (tail.size() > 15)
      tail.removeFirst();
    *error = QString("%1 %2 failed (exit %3): %4")
                 .arg(QFileInfo(path).fileName(), args.join(' '))
                 .arg(p.exitCode())
                 .arg(tail.join('\n'));
    return {};
  }
  error->clear();
  return QString::fromLocal8Bit(p.readAllStandardOutput());
}

}  // namespace hs::test

// First line of a test that needs the reference environment (initTestCase): skips the suite in one line
// without it, or fails it where HEADSCOPE_REQUIRE_REFERENCE=1.
#define HS_REQUIRE_REFERENCE_ENV()                                                                     \
  do {                                                                                                 \
    QString why_;                                                                                      \
    if (!hs::test::referenceEnvUsable(&why_)) {                                                        \
      if (hs::test::referenceRequired()) QFAIL(qPrintable(why_ + " (HEADSCOPE_REQUIRE_REFERENCE=1)")); \
      QSKIP(qPrintable(why_));                                                                         \
    }                                                                                                  \
  } while (0)
