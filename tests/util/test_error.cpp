// Errors carry their context on the way up (util/error.h withContext), and cancellation is not an error:
// a job cancelled deep inside nested withContext calls arrives at the boundary as hs::Cancelled, unchanged,
// so the GUI and the CLI report "cancelled" instead of a failure.
#include <QtTest>

#include <stdexcept>
#include <string>

#include "analysis/analysis_context.h"
#include "util/error.h"

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

  void valuesPassThrough() {
    QCOMPARE(nested([] { return 7; }), 7);
    QCOMPARE(QString::fromStdString(nested([] { return std::string("ok"); })), QString("ok"));
  }
};

QTEST_GUILESS_MAIN(TestError)
#include "test_error.moc"
