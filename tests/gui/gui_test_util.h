#pragma once
// Shared set-up of the GUI suites: isolated settings, and a MainWindow on the toy model with a small
// toy task and its first analysis shown.
#include <QApplication>
#include <QCoreApplication>
#include <QSettings>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QtTest>

#include <memory>

#include "main_window.h"
#include "task_dock.h"
#include "tasks/icl_task.h"

namespace hs::test {

// Every Qt message since it was last cleared, for suites that check start-up, runs and sessions are quiet:
// install `collect` with qInstallMessageHandler and read `collectedMessages()`.
inline QStringList& collectedMessages() {
  static QStringList messages;
  return messages;
}
inline void collect(QtMsgType, const QMessageLogContext&, const QString& m) {
  collectedMessages() << m;
}

// Layouts settle over several posted requests.
inline void settle() {
  for (int i = 0; i < 4; ++i)
    QApplication::processEvents();
}

// Settings of the test binaries live in Qt's test location (~/.qttest, or the build folder's test-home that
// CTest sets as XDG_CONFIG_HOME), under their own application name, and start empty: never the user's.
inline void isolateSettings(const char* suite) {
  QStandardPaths::setTestModeEnabled(true);
  QCoreApplication::setOrganizationName("HeadScopeTests");
  QCoreApplication::setApplicationName(suite);
  QSettings().clear();
}

// The toy model, toy:category_label with 8 shots and `nPrompts` prompts, induction scores shown.
// Returns nullptr (after QFAIL-style messages via the bool) when something does not arrive in time.
inline std::unique_ptr<gui::MainWindow> toyWindow(int nPrompts, QString* error,
                                                  const std::string& dataset = "toy:category_label") {
  auto w = std::make_unique<gui::MainWindow>();
  w->setInteractive(false);
  w->setStartAnalyses({"induction"});
  TaskSpec spec;
  spec.dataset = dataset;
  spec.shots = 8;
  spec.n_prompts = nPrompts;
  w->taskDock()->setSpec(spec);
  w->show();
  QSignalSpy grids(w.get(), &gui::MainWindow::gridsShown);
  w->openDefault();
  if (!grids.wait(60000)) {
    *error = "no analysis arrived: " + w->lastError();
    return nullptr;
  }
  return w;
}

}  // namespace hs::test
