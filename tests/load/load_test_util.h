#pragma once
// Helpers for the loader tests: run tests/load/reference_forward.py with the reference Python (Debian's
// /usr/bin/python3 with PyTorch 1.13), read the logits it writes, compare with ours.
#include <ATen/ATen.h>
#include <QProcess>
#include <QtTest>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "model/transformer.h"
#include "test_paths.h"

namespace hs::test {

inline std::string referenceScript() {
  return sourceDir("tests/load/reference_forward.py");
}

// True when the reference Python exists and imports torch (checked once).
inline bool referencePythonUsable(QString* why) {
  static int state = -1;  // -1 unknown, 0 no, 1 yes
  static QString reason;
  if (state < 0) {
    QProcess p;
    p.start(QString::fromStdString(referencePython()), {"-c", "import torch"});
    const bool ok = p.waitForFinished(120000) && p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0;
    state = ok ? 1 : 0;
    if (!ok)
      reason = QString("reference python %1 cannot import torch: %2")
                   .arg(QString::fromStdString(referencePython()),
                        QString::fromLocal8Bit(p.readAllStandardError()));
  }
  if (why) *why = reason;
  return state == 1;
}

#define HS_REQUIRE_REFERENCE_PYTHON()                                     \
  do {                                                                    \
    QString why_;                                                         \
    if (!hs::test::referencePythonUsable(&why_)) QSKIP(qPrintable(why_)); \
  } while (0)

// Runs the reference script with `args`; returns stdout, or sets *error (exit code + stderr).
inline QString runReference(const QStringList& args, QString* error) {
  QProcess p;
  p.start(QString::fromStdString(referencePython()),
          QStringList{QString::fromStdString(referenceScript())} + args);
  if (!p.waitForFinished(600000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
    *error = QString("reference_forward.py %1 failed (exit %2): %3")
                 .arg(args.join(' '))
                 .arg(p.exitCode())
                 .arg(QString::fromLocal8Bit(p.readAllStandardError()));
    return {};
  }
  error->clear();
  return QString::fromLocal8Bit(p.readAllStandardOutput());
}

inline nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

struct Reference {
  nlohmann::json info;  // reference.json
  at::Tensor tokens;    // [batch, pos] int64
  at::Tensor logits;    // [batch, pos, vocab] float64
};

inline Reference readReference(const std::string& dir) {
  Reference r;
  r.info = readJsonFile(dir + "/reference.json");
  const int64_t b = r.info["batch"], p = r.info["pos"], v = r.info["vocab"];
  std::vector<int64_t> ids;
  for (const auto& row : r.info["tokens"])
    for (const auto& t : row)
      ids.push_back(t.get<int64_t>());
  r.tokens = at::tensor(ids, at::kLong).reshape({b, p});  // [batch, pos]
  std::ifstream in(dir + "/logits.f64", std::ios::binary);
  r.logits = at::empty({b, p, v}, at::kDouble);  // [batch, pos, vocab]
  in.read(reinterpret_cast<char*>(r.logits.data_ptr<double>()), b * p * v * sizeof(double));
  if (!in) r.logits = at::Tensor();
  return r;
}

// All-position logits of our forward for the reference tokens, as float64.
inline at::Tensor ourLogits(const Transformer& model, const at::Tensor& tokens) {
  RunRequest req;
  req.tokens = tokens;                           // [batch, pos]
  return model.run(req).logits.to(at::kDouble);  // [batch, pos, vocab]
}

inline double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace hs::test
