// Errors carry their context on the way up (util/error.h withContext), and cancellation is not an error:
// a job cancelled deep inside nested withContext calls arrives at the boundary as hs::Cancelled, unchanged,
// so the GUI and the CLI report "cancelled" instead of a failure.
#include <QtTest>

#include <stdexcept>
#include <string>

#include <ATen/ATen.h>

#include "analysis/framework/analysis_context.h"
#include "util/error.h"
#include "util/user_message.h"

namespace {

// Runs `f` inside three nested contexts, as a loader inside an analysis inside a job would.
template <typename F>
auto nested(F&& f) {
  return hs::withContext(
      "job", [&] { return hs::withContext("analysis", [&] { return hs::withContext("file", f); }); });
}

}  // namespace

class TestError : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void cancellationPassesThroughUnchanged() {
    bool cancelled = false, wrapped = false;
    std::string message;
    try {
      nested([]() -> int { throw hs::Cancelled(); });
    } catch (const hs::Cancelled& c) {
      cancelled = true;
      message = c.what();
    } catch (const hs::Error& e) {
      wrapped = true;
      message = e.what();
    }
    QVERIFY2(!wrapped, message.c_str());
    QVERIFY(cancelled);
    QCOMPARE(QString::fromStdString(message), QString("cancelled"));
  }

  // The way analyses cancel: AnalysisContext::checkCancelled between forward passes.
  void checkCancelledInsideContextsArrivesAsCancelled() {
    hs::AnalysisContext ctx;
    int checks = 0;
    ctx.cancelled = [&] { return ++checks == 3; };
    auto loop = [&] {
      for (int i = 0; i < 10; ++i)
        ctx.checkCancelled();
      return 0;
    };
    QVERIFY_THROWS_EXCEPTION(hs::Cancelled, nested(loop));
    QCOMPARE(checks, 3);
    try {
      checks = 0;
      nested(loop);
      QFAIL("not cancelled");
    } catch (const std::exception& e) {
      QCOMPARE(QString(e.what()), QString("cancelled"));
    }
  }

  void errorsGainEveryContextOnTheWayUp() {
    try {
      nested([]() -> int { hs::fail("bad magic ", 42); });
      QFAIL("no error");
    } catch (const hs::Cancelled&) {
      QFAIL("an error arrived as a cancellation");
    } catch (const hs::Error& e) {
      QCOMPARE(QString(e.what()), QString("job: analysis: file: bad magic 42"));
    }
    // Any std::exception becomes an hs::Error with the context (e.g. a JSON library's out_of_range).
    try {
      hs::withContext("config.json", []() -> int { throw std::out_of_range("key \"n_layers\" not found"); });
      QFAIL("no error");
    } catch (const hs::Error& e) {
      QCOMPARE(QString(e.what()), QString("config.json: key \"n_layers\" not found"));
    }
  }

  // What the user reads of any error is one line: a libtorch error's C++ stack is cut (also after context
  // was added on the way up), line breaks and control characters a file put into a quoted value are escaped,
  // and a failed allocation says "out of memory" with the ways out.
  void userMessageIsOneLine() {
    try {
      nested([] { return at::zeros({2, 3}).matmul(at::zeros({4, 5})); });
      QFAIL("a shape mismatch was accepted");
    } catch (const std::exception& e) {
      const std::string m = hs::userMessage(e);
      QVERIFY2(std::string(e.what()).find("Exception raised from") != std::string::npos, e.what());
      QVERIFY2(m.rfind("job: analysis: file: ", 0) == 0, m.c_str());
      QVERIFY2(m.find("Exception raised from") == std::string::npos, m.c_str());
      QVERIFY2(m.find('\n') == std::string::npos, m.c_str());
    }
    const std::runtime_error quoted("config.json: key \"a\x1b[31m\" unknown\nsecond line");
    QCOMPARE(QString::fromStdString(hs::userMessage(quoted)),
             QString("config.json: key \"a\\x1b[31m\" unknown; second line"));
    try {
      nested([]() -> int { throw std::bad_alloc(); });
    } catch (const std::exception& e) {
      const std::string m = hs::userMessage(e);
      QVERIFY2(m.rfind("out of memory: an allocation failed (job: analysis: file: ", 0) == 0, m.c_str());
      QVERIFY2(m.find("smaller model") != std::string::npos, m.c_str());
    }
  }

  void valuesPassThrough() {
    QCOMPARE(nested([] { return 7; }), 7);
    QCOMPARE(QString::fromStdString(nested([] { return std::string("ok"); })), QString("ok"));
  }
};

QTEST_GUILESS_MAIN(TestError)
#include "test_error.moc"
