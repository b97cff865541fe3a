#include "workspace_views.h"

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QTabWidget>
#include <QVBoxLayout>

#include "agreement_matrix.h"
#include "attention_tab.h"
#include "dynamics_view.h"
#include "engine_worker.h"
#include "evaluation_dock.h"
#include "head_card.h"
#include "head_circuit.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "main_window.h"
#include "prompt_slices.h"
#include "prompt_tab.h"
#include "run_diff.h"
#include "runs_dock.h"
#include "task_dock.h"
#include "view_state_read.h"

namespace hs::gui {

WorkspaceViews::WorkspaceViews(MainWindow* window) : QObject(window), w_(window) {
  qRegisterMetaType<HeadCircuit>();
  card_ = new HeadCard;
  card_->setObjectName("HeadCard");
  w_->tabs_->addTab(card_, tr("Head card"));
  agreement_ = new AgreementMatrix;
  agreement_->setObjectName("AgreementMatrix");
  w_->tabs_->addTab(agreement_, tr("Agreement"));
  slices_ = new PromptSlices;
  slices_->setObjectName("PromptSlices");
  w_->tabs_->addTab(slices_, tr("Prompts"));
  // The prompt records are decoded by the worker (it holds the tokenizer); a row opens on the Prompt tab.
  connect(slices_, &PromptSlices::decodeRequested, this,
          [this](const QString& run, const std::vector<std::vector<int>>& ids,
                 const std::vector<std::vector<int>>& answers) {
            QMetaObject::invokeMethod(
                w_->worker_, [w = w_->worker_, run, ids, answers] { w->decodePrompts(run, ids, answers); },
                Qt::QueuedConnection);
          });
  connect(w_->worker_, &EngineWorker::promptsDecoded, slices_, &PromptSlices::setDecoded);
  connect(slices_, &PromptSlices::openPrompt, this, [this](const QString& text) {
    w_->setPromptText(text);
    w_->runPrompt();
    w_->tabs_->setCurrentWidget(w_->promptTab_);
  });

  connect(w_->evaluationDock_, &EvaluationDock::promptsTableRequested, this, [this](const QString& run) {
    slices_->setSource(run + "/evaluate.prompts");
    w_->tabs_->setCurrentWidget(slices_);
  });

  // The card follows the head clicked on the Heads tab; the menu entry brings it forward.
  HeadGridView* heads = w_->headsTab_->view();
  connect(heads, &HeadGridView::selectionChanged, this, [this](const std::vector<HeadRef>& sel) {
    if (!sel.empty() && w_->headsTab_->showsLoadedModel()) card_->setHead(sel.front());
  });
  connect(heads, &HeadGridView::headCardRequested, this, &WorkspaceViews::showHeadCard);
  connect(w_->attributionTab_->view(), &HeadGridView::headCardRequested, this, &WorkspaceViews::showHeadCard);
  connect(card_, &HeadCard::circuitRequested, this, [this] {
    circuitPending_ = true;
    requestCircuit();
  });
  connect(w_->tabs_, &QTabWidget::currentChanged, this, [this] {
    if (circuitPending_) requestCircuit();
  });
  connect(w_->worker_, &EngineWorker::headCircuitReady, this, &WorkspaceViews::onCircuit);
  connect(w_, &MainWindow::promptShown, this, [this] { card_->setPrompt(w_->promptView()); });
  connect(w_, &MainWindow::taskPreviewShown, this,
          [this] { card_->setTaskPrompts(w_->taskDock_->preview().prompts); });

  // The card's links to every view that shows the head.
  connect(card_, &HeadCard::showGrid, this, [this](const QString& key, HeadRef head) {
    if (!key.isEmpty()) w_->headsTab_->setCurrentMetric(key);
    if (w_->headsTab_->showsLoadedModel()) w_->headsTab_->view()->setSelection({head});
    w_->tabs_->setCurrentWidget(w_->headsTab_);
  });
  connect(card_, &HeadCard::showAttention, this, [this](HeadRef head) {
    w_->attentionTab_->setHeads({head});
    w_->requestPatterns();
    w_->tabs_->setCurrentWidget(w_->attentionTab_);
  });
  connect(card_, &HeadCard::showAttribution, this,
          [this] { w_->tabs_->setCurrentWidget(w_->attributionTab_); });
  connect(card_, &HeadCard::showDynamics, this, [this](HeadRef head) {
    w_->dynamicsTab_->setCurveHeads({head});
    w_->tabs_->setCurrentWidget(w_->dynamicsTab_);
  });
  connect(card_, &HeadCard::ablate, this,
          [this](HeadRef head) { w_->interventionsDock_->add(InterventionKind::ZeroAblate, {head}); });

  // A cell of the agreement matrix: the two grids' scatter on the Heads tab.
  connect(agreement_, &AgreementMatrix::compareRequested, this, [this](const QString& a, const QString& b) {
    w_->tabs_->setCurrentWidget(w_->headsTab_);  // first: the scatter is laid out in a shown tab
    w_->headsTab_->setCurrentMetric(a);
    w_->headsTab_->setCompareMode(HeadsTab::CompareMode::Scatter);
    w_->headsTab_->setCompare(true, b);
  });

  installRunsMenu();
  if (auto* view = w_->menuBar()->findChild<QMenu*>("ViewMenu")) {
    view->addSeparator();
    QAction* card = view->addAction(tr("Head &card"));
    connect(card, &QAction::triggered, this, [this] { w_->tabs_->setCurrentWidget(card_); });
    QAction* agree = view->addAction(tr("Method a&greement"));
    connect(agree, &QAction::triggered, this, [this] { w_->tabs_->setCurrentWidget(agreement_); });
    QAction* prompts = view->addAction(tr("Prompt &slices"));
    connect(prompts, &QAction::triggered, this, [this] { w_->tabs_->setCurrentWidget(slices_); });
    QAction* diff = view->addAction(tr("&Compare runs…"));
    diff->setObjectName("CompareRuns");
    connect(diff, &QAction::triggered, this, [this] { compareRuns(); });
  }
}

void WorkspaceViews::setRuns(const std::vector<AnalysisRun>& shown, const std::vector<AnalysisRun>& others) {
  card_->setModel(w_->info_);
  card_->setRuns(shown, others);
  std::vector<AgreementMatrix::Entry> entries;
  for (const AnalysisRun& run : shown)
    for (const HeadGrid& g : run.grids) {
      if (w_->info_.layers > 0 && (g.layers() != w_->info_.layers || g.heads() != w_->info_.heads)) continue;
      AgreementMatrix::Entry e;
      e.key = QString::fromStdString(run.id + "/" + g.id);
      e.label = QString::fromStdString((g.name.empty() ? g.id : g.name) + " · " + run.id);
      e.grid = g;
      entries.push_back(std::move(e));
    }
  agreement_->setEntries(std::move(entries), w_->info_.silent);
  if (!w_->info_.path.isEmpty()) {  // decoding needs the model's tokenizer
    slices_->setRuns(shown);
    applySlicesState();
  }
  modelRuns_.clear();
  for (const AnalysisRun& run : shown)
    modelRuns_ << QString::fromStdString(run.id);
  if (diff_) {
    diff_->view()->setRuns(w_->runs());  // every run, other models' included
    diff_->view()->setSilentHeads(w_->info_.silent, modelRuns_);
  }
}

nlohmann::json WorkspaceViews::viewState() const {
  nlohmann::json card = nullptr;
  if (card_->hasHead()) card = {{"layer", card_->head().layer}, {"head", card_->head().head}};
  const bool jaccard = agreement_->statistic() == AgreementMatrix::Statistic::Jaccard;
  // A restored state whose source is not offered yet (no model loaded) is kept as it was restored.
  const nlohmann::json prompts =
      !pendingSlices_.is_null() ? pendingSlices_
                                : nlohmann::json{{"source", slices_->source().toStdString()},
                                                 {"filter", slices_->filterText().toStdString()},
                                                 {"column", slices_->filterColumn().toStdString()},
                                                 {"sort_column", slices_->sortColumn().toStdString()},
                                                 {"descending", slices_->sortOrder() == Qt::DescendingOrder}};
  return {{"head_card", card},
          {"agreement", {{"statistic", jaccard ? "jaccard" : "spearman"}, {"k", agreement_->k()}}},
          {"prompts", prompts}};
}

void WorkspaceViews::restoreViewState(const nlohmann::json& state) {
  const ViewStateReader r(state);
  const ViewStateReader card = r.object("head_card");
  const int layer = card.integer("layer", -1), head = card.integer("head", -1);
  if (layer >= 0 && head >= 0) card_->setHead({layer, head}, true);
  const ViewStateReader agreement = r.object("agreement");
  agreement_->setStatistic(agreement.text("statistic") == "jaccard" ? AgreementMatrix::Statistic::Jaccard
                                                                    : AgreementMatrix::Statistic::Spearman);
  agreement_->setK(agreement.integer("k", 0));
  pendingSlices_ = state.is_object() && state.contains("prompts") && state["prompts"].is_object()
                       ? state["prompts"]
                       : nlohmann::json();
  applySlicesState();
}

void WorkspaceViews::applySlicesState() {
  if (pendingSlices_.is_null()) return;
  const ViewStateReader r(pendingSlices_);
  const QString source = r.text("source");
  if (!source.isEmpty() && !slices_->setSource(source)) return;  // offered once the model is loaded
  slices_->setFilter(r.text("filter"), r.text("column"));
  if (!r.text("sort_column").isEmpty())
    slices_->sortBy(r.text("sort_column"), r.flag("descending") ? Qt::DescendingOrder : Qt::AscendingOrder);
  pendingSlices_ = nullptr;
}

void WorkspaceViews::showHeadCard(HeadRef head) {
  w_->tabs_->setCurrentWidget(card_);
  card_->setHead(head, true);
}

void WorkspaceViews::requestCircuit() {
  if (!card_->hasHead() || w_->info_.path.isEmpty()) return;
  if (w_->tabs_->currentWidget() != card_) return;  // asked for when the tab is shown
  circuitPending_ = false;
  const QString chosen = card_->chosenPrompt();
  const QString text = chosen.isEmpty() ? w_->promptText() : chosen;
  const QString task = QString::fromStdString(taskSpecToJson(w_->taskDock_->spec()).dump());
  const HeadRef h = card_->head();
  QMetaObject::invokeMethod(
      w_->worker_, [w = w_->worker_, text, h, task] { w->headCircuit(text, h.layer, h.head, task); },
      Qt::QueuedConnection);
}

void WorkspaceViews::onCircuit(const HeadCircuit& circuit) {
  if (!card_->hasHead() || !(circuit.head == card_->head())) return;
  card_->setCircuit(circuit);
  Q_EMIT headCircuitShown();
}

RunDiffDialog* WorkspaceViews::compareRuns(const QString& a, const QString& b) {
  const std::vector<AnalysisRun> runs = w_->runs();
  if (runs.size() < 2) {
    w_->showError("compare runs", "the session needs two runs to compare");
    return nullptr;
  }
  if (!diff_) diff_ = new RunDiffDialog(w_);
  diff_->view()->setRuns(runs);
  diff_->view()->setSilentHeads(w_->info_.silent, modelRuns_);
  const QString ra = a.isEmpty() ? QString::fromStdString(runs[runs.size() - 2].id) : a;
  const QString rb = b.isEmpty() ? QString::fromStdString(runs.back().id) : b;
  diff_->view()->setPair(ra, rb);
  diff_->show();
  diff_->raise();
  return diff_;
}

void WorkspaceViews::installRunsMenu() {
  QListWidget* list = w_->runsDock_->list();
  list->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(list, &QListWidget::customContextMenuRequested, this, [this, list](const QPoint& pos) {
    QListWidgetItem* at = list->itemAt(pos);
    if (!at) return;
    const QString id = at->data(Qt::UserRole).toString();
    QMenu menu;
    const QList<QListWidgetItem*> selected = list->selectedItems();
    if (selected.size() == 2) {
      const QString a = selected[0]->data(Qt::UserRole).toString(),
                    b = selected[1]->data(Qt::UserRole).toString();
      connect(menu.addAction(tr("Compare the two selected runs")), &QAction::triggered, this,
              [this, a, b] { compareRuns(a, b); });
    }
    QMenu* with = menu.addMenu(tr("Compare %1 with…").arg(id));
    for (int i = 0; i < list->count(); ++i) {
      const QString other = list->item(i)->data(Qt::UserRole).toString();
      if (other == id) continue;
      connect(with->addAction(list->item(i)->text()), &QAction::triggered, this,
              [this, id, other] { compareRuns(id, other); });
    }
    with->setEnabled(!with->isEmpty());
    menu.exec(list->viewport()->mapToGlobal(pos));
  });
}

QStringList WorkspaceViews::saveScreenshots(const QString& dir) {
  QDir().mkpath(dir);
  QStringList written;
  auto save = [&](QWidget* widget, const char* name) {
    QApplication::processEvents();
    const QString f = QDir(dir).filePath(name);
    if (widget->grab().save(f)) written << f;
  };
  const int keep = w_->tabs_->currentIndex();
  w_->tabs_->setCurrentWidget(card_);
  save(w_, "head_card.png");
  w_->tabs_->setCurrentWidget(agreement_);
  save(w_, "agreement.png");
  w_->tabs_->setCurrentWidget(slices_);
  save(w_, "prompts.png");
  w_->tabs_->setCurrentIndex(keep);
  if (diff_ && diff_->isVisible()) save(diff_, "run_diff.png");
  return written;
}

}  // namespace hs::gui
