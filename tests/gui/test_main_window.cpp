// The application driven like a user: open a model, get real head heatmaps, click a head and see its
// attention pattern; a bad model path shows an error and keeps what was loaded.
#include <QDir>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gui_test_util.h"
#include "head_grid_view.h"
#include "main_window.h"
#include "model_dialog.h"
#include "qcustomplot_include.h"
#include "test_paths.h"

using hs::gui::MainWindow;

class TestMainWindow : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() { hs::test::isolateSettings("test_main_window"); }

  // Whatever the window remembers goes to the test location, never the user's settings.
  void settingsStayOutOfTheUsersConfig() {
    QSettings().setValue("probe", 1);
    const QString file = QSettings().fileName();
    QVERIFY2(!file.startsWith(QDir::homePath() + "/.config/"), qPrintable(file));
    QVERIFY2(file.startsWith(QStandardPaths::writableLocation(QStandardPaths::GenericConfigLocation)),
             qPrintable(file));
  }

  // File → Open model…: lists the hub cache, remembers dtype and device, and the next open uses them (the
  // Model dock shows both).
  void modelDialogRemembersDtypeAndDevice() {
    QTemporaryDir home;
    namespace fs = std::filesystem;
    const fs::path snap = fs::path(home.path().toStdString()) / "hub/models--org--cached/snapshots/abc";
    fs::create_directories(snap);
    std::ofstream(snap / "config.json") << "{}";
    std::ofstream(snap / "model.safetensors") << "";
    qputenv("HF_HOME", home.path().toUtf8());
    {
      hs::gui::ModelOpenSettings s;
      s.dtype = "bf16";
      s.remember();
      hs::gui::ModelDialog d;
      QCOMPARE(d.cachedModelCount(), 1);
      d.selectCachedModel(0);
      QCOMPARE(d.path(), QString("org/cached"));
      QCOMPARE(d.settings().dtype, QString("bf16"));
      QCOMPARE(d.settings().device, QString("cpu"));
    }
    MainWindow w;
    w.setInteractive(false);
    w.setStartAnalyses({});
    QSignalSpy ready(&w, &MainWindow::modelReady);
    w.openModel("toy", {}, false);
    QVERIFY2(ready.wait(60000) || ready.count() == 1, qPrintable(w.lastError()));
    QCOMPARE(w.modelInfo().dtype, QString("bfloat16"));
    QCOMPARE(w.modelInfo().device, QString("cpu"));
    hs::gui::ModelOpenSettings{}.remember();  // back to auto for the tests below
  }

  void openModelShowsHeadsAndPatterns() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    HS_REQUIRE_FILE(bin);
    MainWindow w;
    w.setInteractive(false);
    w.setStartAnalyses({"induction"});
    w.show();
    QSignalSpy ready(&w, &MainWindow::modelReady);
    QSignalSpy grids(&w, &MainWindow::gridsShown);
    QSignalSpy prompt(&w, &MainWindow::promptShown);
    w.openModel(QString::fromStdString(bin),
                QString::fromStdString(hs::test::sharedData("models/stories260K/tok512.bin")));
    QVERIFY2(ready.wait(60000) || ready.count() == 1, qPrintable(w.lastError()));
    QCOMPARE(w.modelInfo().layers, 5);
    QVERIFY(grids.count() == 1 || grids.wait(60000));
    QVERIFY(prompt.count() == 1 || prompt.wait(60000));

    // The heatmap holds a real 5 × 8 grid of attention scores in [0, 1].
    const hs::HeadGrid& g = w.headsView()->grid();
    QCOMPARE(g.layers(), 5);
    QCOMPARE(g.heads(), 8);
    for (int l = 0; l < 5; ++l)
      for (int h = 0; h < 8; ++h)
        QVERIFY(std::isfinite(g.values(l, h)) && g.values(l, h) >= 0 && g.values(l, h) <= 1);
    // The prompt tab shows the exact token ids of the default prompt and a top-k list.
    QCOMPARE(w.promptView().ids.front(), 1);  // llama2.c BOS
    QVERIFY(!w.promptView().top.empty());
    QCOMPARE(static_cast<int>(w.promptView().lens.size()), 5);

    // Clicking cell (2, 5) selects it and shows that head's pattern on the prompt.
    QSignalSpy pattern(&w, &MainWindow::patternShown);
    QTest::mouseClick(w.headsView()->plot(), Qt::LeftButton, {}, w.headsView()->cellCenter({2, 5}));
    QCOMPARE(w.headsView()->selection().size(), size_t(1));
    QVERIFY(pattern.wait(30000));
    QCOMPARE(w.pattern().head.layer, 2);
    QCOMPARE(w.pattern().head.head, 5);
    const int n = w.pattern().n;
    QCOMPARE(n, static_cast<int>(w.promptView().ids.size()));
    for (int q = 0; q < n; ++q) {  // each query row is a causal distribution
      double sum = 0;
      for (int k = 0; k < n; ++k) {
        const double a = w.pattern().weights[static_cast<size_t>(q * n + k)];
        if (k > q) QCOMPARE(a, 0.0);
        sum += a;
      }
      QVERIFY(std::abs(sum - 1.0) < 1e-5);
    }

    // A broken path: one error, the loaded model stays.
    QSignalSpy errors(&w, &MainWindow::errorShown);
    w.openModel("/nonexistent/model.gguf");
    QVERIFY(errors.wait(30000));
    QVERIFY2(w.lastError().contains("/nonexistent/model.gguf"), qPrintable(w.lastError()));
    QCOMPARE(w.modelInfo().layers, 5);
  }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
