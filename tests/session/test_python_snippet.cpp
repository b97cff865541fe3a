// docs/python.md tells a user how to read a session from Python; its snippets must work on the sessions
// HeadScope writes. The test takes them from the document itself (the fenced block after each
// "<!-- snippet: NAME" marker), runs a reader followed by the summary with /usr/bin/python3 on saved
// sessions, and checks what it prints against the same session read in C++: the runs, every grid's shape,
// top head and value, every tensor's dtype, shape and first value. The sessions are one written through the
// core session API with every dtype (BF16 and an empty tensor included) and non-finite grid values, and one
// written by `headscope-cli tsla` on the toy model. The safetensors-package reader (not packaged in Debian
// 12) runs with the reference environment's Python (tests/common/reference_env.h), which CI installs.
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "reference_env.h"
#include "session/session.h"
#include "test_paths.h"

namespace {

struct ProcessResult {
  int exitCode = -1;  // -1 when the process did not exit normally
  QString out, err;
};

ProcessResult runProcess(const QString& program, const QStringList& args) {
  QProcess p;
  p.start(program, args);
  p.waitForFinished(300000);
  ProcessResult r;
  r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  r.out = QString::fromUtf8(p.readAllStandardOutput());
  r.err = QString::fromUtf8(p.readAllStandardError());
  return r;
}

bool pythonImports(const char* module) {
  return runProcess(QString::fromStdString(hs::test::referencePython()), {"-c", QString("import ") + module})
             .exitCode == 0;
}

// The python block after the line starting with "<!-- snippet: NAME" in docs/python.md; empty when absent.
std::string snippet(const std::string& name) {
  std::ifstream f(hs::test::sourceDir("docs/python.md"));
  std::string line, code;
  bool marked = false, inside = false;
  while (std::getline(f, line)) {
    if (inside) {
      if (line.rfind("```", 0) == 0) return code;
      code += line + "\n";
    } else if (line.rfind("<!-- snippet: " + name + " ", 0) == 0) {
      marked = true;
    } else if (marked && line.rfind("```python", 0) == 0) {
      inside = true;
    }
  }
  return {};
}

// numpy's name of the dtype the numpy reader gives a tensor (BF16 is widened to float32).
std::string numpyDtype(at::ScalarType t) {
  switch (t) {
    case at::kDouble:
      return "float64";
    case at::kFloat:
      return "float32";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "float32";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    default:
      return "unsupported";
  }
}

// Python's repr of a tensor's first element, as the summary prints it.
std::string firstValue(const at::Tensor& t) {
  if (t.numel() == 0) return "none";
  const at::Tensor first = t.reshape({-1})[0];
  if (t.scalar_type() == at::kBool) return first.item<bool>() ? "True" : "False";
  if (at::isIntegralType(t.scalar_type(), false)) return std::to_string(first.item<int64_t>());
  return "";  // floating point: compared as a number
}

// The first largest entry in row-major order, NaN skipped (numpy's nanargmax); false when all are NaN.
bool topHead(const Eigen::MatrixXd& v, int& layer, int& head) {
  bool found = false;
  for (int l = 0; l < v.rows(); ++l)
    for (int h = 0; h < v.cols(); ++h)
      if (!std::isnan(v(l, h)) && (!found || v(l, h) > v(layer, head))) {
        layer = l;
        head = h;
        found = true;
      }
  return found;
}

hs::HeadGrid makeGrid(const std::string& id, int L, int H) {
  hs::HeadGrid g;
  g.id = id;
  g.name = id + " (display)";
  g.unit = "score";
  g.values.resize(L, H);  // [layers, heads]
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      g.values(l, h) = std::sin(1.0 + l * H + h) / 3.0;
  g.provenance.method = "synthetic";
  return g;
}

}  // namespace

class TestPythonSnippet : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string numpyReader_, safetensorsReader_, summary_;
  QString everyDtype_, noBf16_;

  // Runs `reader` + the summary on `session`; returns what it printed (a failed run fails the test).
  QString runSummary(const std::string& reader, const QString& session, const QString& name,
                     const std::string& python = hs::test::referencePython()) {
    const QString script = dir_.filePath("summary-" + name + ".py");  // not numpy.py: it would shadow numpy
    std::ofstream(script.toStdString()) << reader << "\n\n" << summary_;
    const ProcessResult r = runProcess(QString::fromStdString(python), {script, session});
    if (r.exitCode != 0)
      qWarning("%s on %s exited with %d:\n%s", qPrintable(script), qPrintable(session), r.exitCode,
               qPrintable(r.err));
    if (r.exitCode == 0) qInfo("%s printed:\n%s", qPrintable(name), qPrintable(r.out));
    return r.exitCode == 0 ? r.out : QString();
  }

  // Checks the summary's lines against the session as C++ reads it.
  void checkSummary(const QString& printed, const QString& path) {
    QVERIFY2(!printed.isEmpty(), "the snippet printed nothing (see the warning above)");
    const hs::Session s = hs::loadSession(path.toStdString());
    const QStringList lines = printed.split('\n', Qt::SkipEmptyParts);
    const QRegularExpression sessionLine("^session format (\\d+): (\\d+) runs, (\\d+) tensors$");
    const QRegularExpression runLine(
        "^run (\\S+) \\((\\S+)\\): (\\d+) grids, (\\d+) curves, (\\d+) tables, (\\d+) tensors$");
    const QRegularExpression gridLine(
        "^grid (\\S+) (\\S+): (\\d+) x (\\d+)(, top head (\\d+)\\.(\\d+) = (\\S+))?$");
    const QRegularExpression tensorLine("^tensor (\\S+): (\\S+) \\[([0-9, ]*)\\], first value (\\S+)$");
    int runs = 0, grids = 0, tensors = 0, expectedGrids = 0;
    for (const hs::AnalysisRun& run : s.runs)
      expectedGrids += static_cast<int>(run.grids.size());
    for (const QString& line : lines) {
      const std::string where = line.toStdString();
      if (auto m = sessionLine.match(line); m.hasMatch()) {
        QCOMPARE(m.captured(1).toInt(), s.format_version);
        QCOMPARE(m.captured(2).toInt(), static_cast<int>(s.runs.size()));
        QCOMPARE(m.captured(3).toInt(), static_cast<int>(s.tensors.size()));
      } else if (auto m = runLine.match(line); m.hasMatch()) {
        const hs::AnalysisRun* run = s.findRun(m.captured(1).toStdString());
        QVERIFY2(run, where.c_str());
        QCOMPARE(m.captured(2).toStdString(), run->method);
        QCOMPARE(m.captured(3).toInt(), static_cast<int>(run->grids.size()));
        QCOMPARE(m.captured(4).toInt(), static_cast<int>(run->curves.size()));
        QCOMPARE(m.captured(5).toInt(), static_cast<int>(run->tables.size()));
        QCOMPARE(m.captured(6).toInt(), static_cast<int>(run->tensors.size()));
        ++runs;
      } else if (auto m = gridLine.match(line); m.hasMatch()) {
        const hs::AnalysisRun* run = s.findRun(m.captured(1).toStdString());
        QVERIFY2(run, where.c_str());
        const hs::HeadGrid* g = nullptr;
        for (const hs::HeadGrid& candidate : run->grids)
          if (candidate.id == m.captured(2).toStdString()) g = &candidate;
        QVERIFY2(g, where.c_str());
        QCOMPARE(m.captured(3).toInt(), g->layers());
        QCOMPARE(m.captured(4).toInt(), g->heads());
        int layer = -1, head = -1;
        const bool hasTop = topHead(g->values, layer, head);
        QVERIFY2(hasTop == m.hasCaptured(5), where.c_str());
        if (hasTop) {
          QCOMPARE(m.captured(6).toInt(), layer);
          QCOMPARE(m.captured(7).toInt(), head);
          // Python's repr round-trips the double: the value must be the stored one exactly.
          QVERIFY2(std::stod(m.captured(8).toStdString()) == g->values(layer, head), where.c_str());
        }
        ++grids;
      } else if (auto m = tensorLine.match(line); m.hasMatch()) {
        const auto it = s.tensors.find(m.captured(1).toStdString());
        QVERIFY2(it != s.tensors.end(), where.c_str());
        const at::Tensor& t = it->second;
        QCOMPARE(m.captured(2).toStdString(), numpyDtype(t.scalar_type()));
        std::ostringstream shape;
        for (int64_t d = 0; d < t.dim(); ++d)
          shape << (d ? ", " : "") << t.size(d);
        QCOMPARE(m.captured(3).toStdString(), shape.str());
        const std::string expected = firstValue(t);
        if (expected.empty())  // floating point: the exact value (BF16 and F16 widen exactly)
          QVERIFY2(
              std::stod(m.captured(4).toStdString()) == t.reshape({-1})[0].to(at::kDouble).item<double>(),
              where.c_str());
        else
          QCOMPARE(m.captured(4).toStdString(), expected);
        ++tensors;
      } else {
        QFAIL(qPrintable("unexpected line: " + line));
      }
    }
    QCOMPARE(runs, static_cast<int>(s.runs.size()));
    QCOMPARE(grids, expectedGrids);
    QCOMPARE(tensors, static_cast<int>(s.tensors.size()));
  }

 private Q_SLOTS:
  void initTestCase() {
    numpyReader_ = snippet("numpy-reader");
    safetensorsReader_ = snippet("safetensors-reader");
    summary_ = snippet("summary");
    QVERIFY2(!numpyReader_.empty(), "docs/python.md has no numpy-reader snippet");
    QVERIFY2(!safetensorsReader_.empty(), "docs/python.md has no safetensors-reader snippet");
    QVERIFY2(!summary_.empty(), "docs/python.md has no summary snippet");
    if (!pythonImports("numpy"))
      QSKIP(qPrintable(
          QString("%1 cannot import numpy").arg(QString::fromStdString(hs::test::referencePython()))));

    // A session with two runs, a grid with non-finite values and a tensor of every dtype.
    hs::Session s;
    hs::AnalysisRun a;
    a.id = "synthetic-1";
    a.method = "synthetic";
    a.grids.push_back(makeGrid("synthetic.smooth", 4, 8));
    hs::HeadGrid odd = makeGrid("synthetic.nonfinite", 3, 5);
    odd.values(0, 0) = std::numeric_limits<double>::quiet_NaN();
    odd.values(1, 2) = std::numeric_limits<double>::infinity();
    odd.values(2, 4) = -std::numeric_limits<double>::infinity();
    a.grids.push_back(odd);
    hs::HeadGrid allNan = makeGrid("synthetic.nan", 2, 2);
    allNan.values.setConstant(std::numeric_limits<double>::quiet_NaN());
    a.grids.push_back(allNan);
    at::Generator gen = at::detail::createCPUGenerator(7);
    auto add = [&](hs::AnalysisRun& run, const std::string& name, const at::Tensor& t) {
      s.tensors[run.id + "/" + name] = t;
      run.tensors.push_back(run.id + "/" + name);
    };
    add(a, "f32", at::randn({3, 4}, gen));  // [3, 4]
    add(a, "f64", at::randn({2, 2}, gen).to(at::kDouble));
    add(a, "f16", at::randn({5}, gen).to(at::kHalf));
    add(a, "i64", at::arange(-3, 3, at::kLong).reshape({2, 3}));
    add(a, "i32", at::arange(7, 10, at::kInt));
    add(a, "i16", at::arange(-2, 2, at::kShort));
    add(a, "i8", at::arange(-5, -1, at::kChar));
    add(a, "u8", at::arange(200, 204, at::kLong).to(at::kByte));
    add(a, "bool", at::arange(3) > 0);  // false, true, true
    add(a, "empty", at::zeros({0, 3}));
    hs::AnalysisRun b;
    b.id = "synthetic-2";
    b.method = "synthetic";
    b.grids.push_back(makeGrid("synthetic.smooth", 2, 3));
    add(b, "vector", at::randn({16}, gen));
    s.runs = {a, b};
    noBf16_ = dir_.filePath("no-bf16.hscope");
    hs::saveSession(noBf16_.toStdString(), s);
    add(s.runs[1], "bf16", (at::randn({2, 3}, gen) * 1000).to(at::kBFloat16));
    everyDtype_ = dir_.filePath("every-dtype.hscope");
    hs::saveSession(everyDtype_.toStdString(), s);
  }

  void numpyReaderReadsEveryDtype() {
    checkSummary(runSummary(numpyReader_, everyDtype_, "numpy"), everyDtype_);
  }

  void numpyReaderReadsAnAnalysisSession() {
#ifndef HEADSCOPE_CLI_PATH
    QSKIP("headscope-cli is not built");
#else
    const QString session = dir_.filePath("tsla.hscope");
    const ProcessResult cli =
        runProcess(QString::fromStdString(hs::test::cliPath()),
                   {"tsla", "toy", "--task", "toy:category_label", "--n", "8", "--out", session});
    QVERIFY2(cli.exitCode == 0, qPrintable(cli.err));
    const QString printed = runSummary(numpyReader_, session, "numpy-tsla");
    checkSummary(printed, session);
    if (QTest::currentTestFailed()) return;
    QVERIFY2(printed.contains(QRegularExpression("^grid \\S+ tsla\\.tr: 4 x 8, top head",
                                                 QRegularExpression::MultilineOption)),
             qPrintable(printed));
#endif
  }

  void safetensorsReaderPrintsTheSame() {
    // The reference environment has the safetensors package; Debian's Python only where a user installed it.
    std::string python = hs::test::referenceVenvPython();
    if (!hs::test::referenceEnvUsable(nullptr)) {
      if (hs::test::referenceRequired() || !pythonImports("safetensors")) HS_REQUIRE_REFERENCE_ENV();
      python = hs::test::referencePython();
    }
    const QString printed = runSummary(safetensorsReader_, noBf16_, "safetensors", python);
    checkSummary(printed, noBf16_);
    QCOMPARE(printed, runSummary(numpyReader_, noBf16_, "numpy-no-bf16"));
  }
};

QTEST_GUILESS_MAIN(TestPythonSnippet)
#include "test_python_snippet.moc"
