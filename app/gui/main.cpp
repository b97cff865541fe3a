// headscope: the desktop workbench.
//   headscope                      the toy model, the default toy task, first analyses
//   headscope FILE.hscope          opens a session (written by the GUI or headscope-cli)
//   headscope MODEL [--tokenizer]  opens a model (HF folder, llama2.c .bin, .gguf)
//   --import PATH                  adds runs to the session: a published session (.hscope) or published
//                                  result files / folders (repeatable)
//   --screenshot DIR               after the first analysis and an evaluation, saves one PNG per tab and
//   quits; with --screenshot-view published: the toy's dual-route grids beside the published ones
//   (published_vs_toy.png) and the Dynamics tab (dynamics.png) of the imported runs; with
//   --screenshot-view workspace: the head card, the method-agreement matrix, the Prompts tab and a run diff
//   (head_card.png, agreement.png, prompts.png, run_diff.png)
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QTimer>

#include <functional>
#include <memory>

#include "../common/data_roots.h"
#include "agreement_matrix.h"
#include "dynamics_view.h"
#include "evaluation_dock.h"
#include "head_card.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "main_window.h"
#include "model/blas_buffers.h"
#include "model/io/mapped_file.h"
#include "model/thread_policy.h"
#include "prompt_slices.h"
#include "results/rank_stats.h"
#include "run_diff.h"
#include "util/allocator.h"
#include "workspace_views.h"

using hs::gui::MainWindow;

namespace {
// Drives the window, after the start analyses (every method on the toy model), to a representative state (top
// induction heads selected and zero-ablated, the comparison scatter on, the top head's pattern shown, the
// evaluation done), then grabs every tab.
void scriptScreenshots(MainWindow& w, const QString& dir, QSize size) {
  w.setInteractive(false);
  w.resize(size);  // the documented size, whatever window geometry the settings remember
  auto finish = std::make_shared<std::function<void()>>([&w, dir] {
    for (const QString& f : w.saveScreenshots(dir))
      qInfo("wrote %s", qPrintable(f));
    QApplication::quit();
  });
  QObject::connect(
      &w, &MainWindow::gridsShown, &w,
      [&w] {
        const hs::HeadGrid& g = w.headsView()->grid();
        w.headsTab()->setCompare(true);
        w.headsView()->selectTopK(1);  // one head: its pattern is requested
        w.interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, hs::topHeads(g, 3));
        w.evaluate();
      },
      Qt::SingleShotConnection);
  QObject::connect(
      &w, &MainWindow::evaluationShown, &w,
      [&w, finish] {
        if (w.headsTab()->setCurrentMetric("tsla-1/tsla.tr"))
          w.headsTab()->setCompare(true, "induction-1/induction.prefix_matching");
        w.headsView()->selectTopK(3);
        QTimer::singleShot(1500, &w, [finish] { (*finish)(); });
      },
      Qt::SingleShotConnection);
  // Never hang a docs build; a loaded machine may need minutes for every method on the toy model.
  QTimer::singleShot(600000, &w, [finish] { (*finish)(); });
}

// The toy model's dual-route grids (induction with the dual-route stage) beside the published Llama-3-8B
// concept-copying grid (imported with --import), then the Dynamics tab on the OLMo-2 concept-copying series
// when one was imported.
void scriptPublishedScreenshots(MainWindow& w, const QString& dir, QSize size) {
  w.setInteractive(false);
  w.setStartAnalyses({});
  w.resize(size);
  auto finish = std::make_shared<std::function<void()>>([&w, dir] {
    QDir().mkpath(dir);
    auto shoot = [&w, dir](int tab, const char* name) {
      w.tabs()->setCurrentIndex(tab);
      QApplication::processEvents();
      const QString f = QDir(dir).filePath(name);
      if (w.grab().save(f)) qInfo("wrote %s", qPrintable(f));
    };
    shoot(MainWindow::HeadsTabIndex, "published_vs_toy.png");
    if (w.dynamicsTab()->setCurrentSeries("OLMo-2-1124-7B/dual_route.concept_copying") ||
        w.dynamicsTab()->hasSeries())
      shoot(MainWindow::DynamicsTabIndex, "dynamics.png");
    QApplication::quit();
  });
  QObject::connect(
      &w, &MainWindow::modelReady, &w, [&w] { w.runAnalysis("dual-route"); }, Qt::SingleShotConnection);
  QObject::connect(
      &w, &MainWindow::gridsShown, &w,
      [&w, finish] {
        QString published;
        for (const hs::AnalysisRun& r : w.runs())
          if (r.method == "published" && r.provenance.model == "Meta-Llama-3-8B")
            published = QString::fromStdString(r.id) + "/dual_route.concept_copying";
        for (const hs::AnalysisRun& r : w.runs())
          if (r.method == "dual-route")
            w.headsTab()->setCurrentMetric(QString::fromStdString(r.id) + "/dual_route.concept_copying");
        w.headsTab()->setCompareMode(hs::gui::HeadsTab::CompareMode::SideBySide);
        w.headsTab()->setCompare(true, published);
        QTimer::singleShot(1000, &w, [finish] { (*finish)(); });
      },
      Qt::SingleShotConnection);
  // The dual-route run takes minutes on a busy 2-core machine; never hang a docs build.
  QTimer::singleShot(540000, &w, [finish] { (*finish)(); });
}

// The views of issue 40 on the toy model: induction, TSLA and function vectors at start, a second TSLA run
// with the other score definition, the top three TR heads zero-ablated and evaluated; then the head card of
// the top TR head, the agreement matrix (k = 4), the evaluation's ICL prompts sorted by the answer's
// probability after the ablation, and the run diff of the two TSLA runs.
void scriptWorkspaceScreenshots(MainWindow& w, const QString& dir, QSize size) {
  w.setInteractive(false);
  w.setStartAnalyses({"induction", "tsla", "fv"});
  w.resize(size);
  auto finish = std::make_shared<std::function<void()>>([&w, dir, size] {
    hs::gui::WorkspaceViews* views = w.workspaceViews();
    views->agreement()->setK(4);
    // The evaluation's ICL prompts, those the ablation hurt most first.
    if (views->promptSlices()->setSource("evaluate-1/evaluate.prompts")) {
      views->promptSlices()->setFilter("icl", "set");
      views->promptSlices()->sortBy("p_answer_after", Qt::AscendingOrder);
    }
    if (hs::gui::RunDiffDialog* d = views->compareRuns("tsla-1", "tsla-2")) {
      d->resize(std::min(1400, size.width() - 40), std::min(860, size.height() - 40));
      d->view()->setGrid("tsla.tl");
    }
    for (const QString& f : views->saveScreenshots(dir))
      qInfo("wrote %s", qPrintable(f));
    QApplication::quit();
  });
  auto step = std::make_shared<int>(0);
  QObject::connect(&w, &MainWindow::gridsShown, &w, [&w, step] {
    bool tsla = false, fv = false, induction = false;
    for (const hs::AnalysisRun& r : w.runs()) {
      tsla |= r.id == "tsla-1";
      fv |= r.method == "fv";
      induction |= r.method == "induction";
    }
    if (*step == 0 && tsla && fv && induction) {
      *step = 1;
      w.runAnalysis("tsla", {{"score_definition", "norm"}});
    } else if (*step == 1 && w.runs().size() >= 4) {
      *step = 2;
      w.headsTab()->setCurrentMetric("tsla-1/tsla.tr");
      const std::vector<hs::HeadRef> top = hs::topHeads(w.headsView()->grid(), 3);
      w.interventionsDock()->add(hs::gui::InterventionKind::ZeroAblate, top);
      w.evaluate();
    }
  });
  QObject::connect(
      &w, &MainWindow::evaluationShown, &w,
      [&w] { w.workspaceViews()->showHeadCard(hs::topHeads(w.headsView()->grid(), 1).front()); },
      Qt::SingleShotConnection);
  QObject::connect(
      w.workspaceViews(), &hs::gui::WorkspaceViews::headCircuitShown, &w,
      [&w, finish] { QTimer::singleShot(1500, &w, [finish] { (*finish)(); }); }, Qt::SingleShotConnection);
  QTimer::singleShot(900000, &w, [finish] { (*finish)(); });  // never hang a docs build
}

// --help, -h, -?, --version, -v: text only, answered before QApplication, which needs a display.
bool asksHelpOrVersion(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const QByteArray a(argv[i]);
    if (a == "--help" || a == "-h" || a == "-?" || a == "--version" || a == "-v") return true;
  }
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();      // keep freed activations in the process (util/allocator.h)
  hs::applyThreadPolicy();  // ATen's and OpenBLAS's pools sized to the CPUs (model/thread_policy.h)
  try {
    hs::reserveBlasBuffers();  // before memory can run short (model/blas_buffers.h)
  } catch (const std::exception& e) {
    qCritical("headscope: %s", e.what());
    return 1;
  }
  // A model file truncated on disk while mapped reads as zeros and fails the job instead of a crash.
  hs::installMappedFileFaultHandler(hs::MappedFileFaultMode::Recover);
  hs::useAppDataRoots();  // where empty shared-data options look (common/data_roots.h)
  QApplication::setApplicationName("HeadScope");
  QApplication::setOrganizationName("HeadScope");
  QApplication::setApplicationVersion(HEADSCOPE_VERSION);
  QCommandLineParser parser;
  parser.setApplicationDescription("Interpretability workbench for in-context learning in transformers");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("file",
                               "A session (.hscope) or a model (HF folder, llama2.c .bin, .gguf); "
                               "none: the toy model");
  QCommandLineOption tokenizer("tokenizer", "Tokenizer for the model (tokenizer.json, vocab.json, tok.bin)",
                               "path");
  QCommandLineOption screenshot("screenshot",
                                "Save one PNG per tab into DIR after the first analysis, then quit", "DIR");
  QCommandLineOption screenshotView("screenshot-view",
                                    "What --screenshot shows: tabs (every tab, default), published (the "
                                    "toy's dual-route grid beside the imported published one, and the "
                                    "Dynamics tab) or workspace (the head card, the method-agreement matrix "
                                    "and a run diff)",
                                    "VIEW", "tabs");
  QCommandLineOption import("import",
                            "Add the runs of a published session (.hscope) or published result files or "
                            "folders to the session (repeatable)",
                            "PATH");
  QCommandLineOption screenshotSize("screenshot-size", "Window size of --screenshot (default 1800x960)",
                                    "WxH", "1800x960");
  parser.addOption(tokenizer);
  parser.addOption(screenshot);
  parser.addOption(screenshotSize);
  parser.addOption(screenshotView);
  parser.addOption(import);
  if (asksHelpOrVersion(argc, argv)) {
    QCoreApplication textOnly(argc, argv);
    parser.process(textOnly);  // prints and exits
  }
  QApplication app(argc, argv);
  parser.process(app);  // --help-all lists Qt's GUI options too, so it needs the QApplication

  MainWindow window;
  if (parser.isSet(screenshot)) {
    const QStringList wh = parser.value(screenshotSize).split('x');
    const QSize size = wh.size() == 2 ? QSize(wh[0].toInt(), wh[1].toInt()) : QSize();
    if (!size.isValid() || size.width() < 200 || size.height() < 200) {
      qCritical("--screenshot-size: expected WIDTHxHEIGHT, e.g. 1280x800, got %s",
                qPrintable(parser.value(screenshotSize)));
      return 2;
    }
    if (parser.value(screenshotView) == "published")
      scriptPublishedScreenshots(window, parser.value(screenshot), size);
    else if (parser.value(screenshotView) == "workspace")
      scriptWorkspaceScreenshots(window, parser.value(screenshot), size);
    else
      scriptScreenshots(window, parser.value(screenshot), size);
  }
  window.show();
  const QStringList args = parser.positionalArguments();
  if (args.isEmpty())
    window.openDefault();
  else if (args.first().endsWith(".hscope", Qt::CaseInsensitive))
    window.openSession(args.first());
  else
    window.openModel(args.first(), parser.value(tokenizer));
  if (parser.isSet(import)) window.importRuns(parser.values(import));
  return app.exec();
}
