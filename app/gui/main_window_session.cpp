// MainWindow: sessions (save / open / recent / unsaved changes), export and screenshots.
#include <QApplication>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QMessageBox>
#include <QSettings>
#include <QTabWidget>
#include <QUndoStack>

#include <optional>

#include "attention_tab.h"
#include "batch/merge.h"
#include "dynamics_view.h"
#include "evaluation_dock.h"
#include "head_grid_view.h"
#include "heads_tab.h"
#include "interventions_dock.h"
#include "main_window.h"
#include "method_dialog.h"
#include "outputs_tab.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "results_tab.h"
#include "session/export_csv.h"
#include "session_io.h"
#include "study_view.h"
#include "task_dock.h"
#include "view_state_read.h"
#include "workspace_views.h"

namespace hs::gui {

bool MainWindow::saveSessionTo(const QString& path) {
  GuiSessionState s;
  s.model = {{"path", (info_.label.isEmpty() ? info_.path : info_.label).toStdString()},
             {"format", info_.format.toStdString()},
             {"dtype", info_.dtype.toStdString()}};
  s.tokenizer = {{"path", tokenizerPath_.toStdString()}, {"kind", info_.tokenizer.toStdString()}};
  s.task = taskSpecToJson(taskDock_->spec());
  s.outputs = outputs_;
  s.selectedHeads = headsView()->selection();
  s.interventions = interventionsDock_->entries();
  // View state version 2 added "prompt" (the Prompt tab's text and toggles), "attention" (the Attention
  // tab's prompt) and "evaluation" (the Evaluation dock's result, by its evaluate run); version 3 added
  // "workspace" (the Head card's head, the agreement's statistic and k, the Prompts tab's source, filter and
  // sort) and the Attention tab's chosen query. An older session opens with the defaults of what it lacks.
  nlohmann::json prompt = promptTab_->viewState();
  prompt["text"] = promptEdit_->text().toStdString();
  prompt["from_task"] = !taskPrompt_.isEmpty() && promptEdit_->text() == taskPrompt_;
  s.viewState = {{"format_version", kViewStateVersion},
                 {"tab", tabs_->currentIndex()},
                 {"heads", headsTab_->viewState()},
                 {"dynamics", dynamicsTab_->viewState()},
                 {"prompt", prompt},
                 {"attention",
                  {{"prompt", attentionTab_->chosenPrompt().toStdString()},
                   {"query", attentionTab_->queryChosen() ? nlohmann::json(attentionTab_->queryPosition())
                                                          : nlohmann::json()}}},
                 {"workspace", workspace_->viewState()}};
  if (const auto& r = evaluationDock_->result())
    s.viewState["evaluation"] = {{"run", r->runId.toStdString()},
                                 {"task", r->taskJson.toStdString()},
                                 {"interventions", interventionsToJson(r->entries)}};
  try {
    saveGuiSession(path, s);
  } catch (const std::exception& e) {
    showError("save session", QString::fromStdString(e.what()));
    return false;
  }
  sessionPath_ = path;
  addRecent(path);
  setDirty(false);
  log("saved the session to " + path);
  return true;
}

bool MainWindow::openSession(const QString& path) {
  if (batch::isStudySession(path.toStdString())) {  // a merged batch opens in its own window (study_view.h)
    QString error;
    StudyView* study = openStudyWindow(this, path, &error);
    if (!study) {
      showError("open study", error);
      return false;
    }
    if (!info_.label.isEmpty()) study->setSilentHeads(info_.label, info_.silent);  // as the Heads tab
    addRecent(path);
    log("opened the study " + path);
    return true;
  }
  if (!maybeSave()) return false;
  GuiSessionState s;
  try {  // read and check everything before touching the window's state
    s = loadGuiSession(path);
  } catch (const std::exception& e) {
    showError("open session", QString::fromStdString(e.what()));
    return false;
  }
  // A task in a form this GUI does not know (another tool's) leaves the Task dock as it is.
  std::optional<TaskSpec> task;
  try {
    if (s.task.is_object() && s.task.contains("dataset")) task = taskSpecFromJson(s.task);
  } catch (const std::exception& e) {
    log("the session's task is not a task spec; kept the current one (" + QString::fromStdString(e.what()) +
        ")");
  }
  outputs_ = s.outputs;
  sessionPath_ = path;
  if (task) taskDock_->setSpec(*task);
  restoring_ = true;
  refreshResults();
  const nlohmann::json& view = s.viewState;
  if (view.contains("heads")) headsTab_->restoreViewState(view["heads"]);
  if (view.contains("dynamics")) dynamicsTab_->restoreViewState(view["dynamics"]);
  headsView()->setSelection(s.selectedHeads);
  if (!s.selectedHeads.empty()) attentionTab_->setHeads(s.selectedHeads);
  interventionsDock_->setEntries(s.interventions);
  restoring_ = false;
  undo_->clear();
  lastSnapshot_ = snapshot();
  restorePromptAndEvaluation(view);
  workspace_->restoreViewState(view.contains("workspace") ? view["workspace"] : nlohmann::json());
  if (view.contains("tab") && view["tab"].is_number_integer()) tabs_->setCurrentIndex(view["tab"].get<int>());
  addRecent(path);
  const QString model = QString::fromStdString(s.model.value("path", std::string()));
  log(QString("opened %1: %2 runs, %3 interventions (model %4)")
          .arg(path)
          .arg(outputs_.size())
          .arg(s.interventions.size())
          .arg(model.isEmpty() ? QString("not recorded") : model));
  // The plots need no model; load the session's model (without analysing) only when none is open.
  if (info_.path.isEmpty() && !model.isEmpty() && (model == "toy" || QFileInfo::exists(model)))
    openModel(model, QString::fromStdString(s.tokenizer.value("path", std::string())), false);
  setDirty(false);
  Q_EMIT sessionOpened();
  return true;
}

void MainWindow::restorePromptAndEvaluation(const nlohmann::json& view) {
  // Version 1 has none of these: the prompt, the lens and the evaluation start as in a new session.
  const nlohmann::json prompt =
      view.contains("prompt") && view["prompt"].is_object() ? view["prompt"] : nlohmann::json::object();
  promptTab_->restoreViewState(prompt);
  if (auto it = prompt.find("text"); prompt.is_object() && it != prompt.end() && it->is_string()) {
    const QString text = QString::fromStdString(it->get<std::string>());
    const bool fromTask =
        prompt.contains("from_task") && prompt["from_task"].is_boolean() && prompt["from_task"].get<bool>();
    promptEdit_->setText(text);
    // A typed prompt stays when the task's preview arrives; the task's own follows the task.
    taskPrompt_ = fromTask ? text : QString();
    promptFromTask_ = false;
  }
  const nlohmann::json attention = view.contains("attention") ? view["attention"] : nlohmann::json();
  const ViewStateReader attentionState(attention);
  if (attentionState.has("prompt")) attentionTab_->choosePromptText(attentionState.text("prompt"));
  if (const int query = attentionState.integer("query", -1); query >= 0)
    attentionTab_->setQueryPosition(query);
  evaluationDock_->clearResult();
  const nlohmann::json evaluation = view.contains("evaluation") ? view["evaluation"] : nlohmann::json();
  if (evaluation.is_object() && evaluation.contains("run") && evaluation["run"].is_string()) {
    const std::string id = evaluation["run"].get<std::string>();
    try {
      for (const AnalysisOutputPtr& o : outputs_)
        if (runOf(o).id == id) {
          EvalResult r = evalResultOf(runOf(o));
          r.taskJson = QString::fromStdString(evaluation.value("task", std::string()));
          r.entries = interventionsFromJson(evaluation.value("interventions", nlohmann::json::array()),
                                            "the session's evaluation");
          evaluationDock_->setResult(r);
        }
    } catch (const std::exception& e) {
      log("the session's evaluation could not be shown again: " + QString::fromStdString(e.what()));
    }
  }
  evaluationDock_->setCurrent(QString::fromStdString(taskSpecToJson(taskDock_->spec()).dump()),
                              interventionsDock_->entries());
  // With the model already loaded the restored prompt runs now (otherwise when the model arrives).
  if (!info_.path.isEmpty()) {
    runPrompt();
    requestPatterns();
  }
}

bool MainWindow::maybeSave() {
  if (!dirty_ || outputs_.empty()) return true;
  if (!interactive_) return true;  // the default answer: Discard
  const auto answer = QMessageBox::question(
      this, "HeadScope", "The session has unsaved changes. Save them first?",
      QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
  if (answer == QMessageBox::Cancel) return false;
  if (answer == QMessageBox::Discard) return true;
  QString f = sessionPath_;
  if (f.isEmpty()) {
    f = QFileDialog::getSaveFileName(this, "Save the session", {}, "HeadScope sessions (*.hscope)");
    if (f.isEmpty()) return false;
    if (!f.endsWith(".hscope")) f += ".hscope";
  }
  return saveSessionTo(f);
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList recent = settings.value("session/recent").toStringList();
  const QString abs = QFileInfo(path).absoluteFilePath();
  recent.removeAll(abs);
  recent.prepend(abs);
  while (recent.size() > 8)
    recent.removeLast();
  settings.setValue("session/recent", recent);
}

QCustomPlot* MainWindow::currentPlot() const {
  switch (tabs_->currentIndex()) {
    case HeadsTabIndex:
      return headsView()->hasGrid() ? headsView()->plot() : nullptr;
    case GeometryTabIndex:
      return geometryTab_->currentPlot();
    case TaskVectorsTabIndex:
      return taskVectorsTab_->currentPlot();
    case AttentionTabIndex:
      return attentionTab_->shownCount() > 0 ? attentionTab_->plot() : nullptr;
    case AttributionTabIndex:
      return attributionTab_->view()->hasGrid() ? attributionTab_->view()->plot() : nullptr;
    case DynamicsTabIndex:
      return dynamicsTab_->hasSeries() ? dynamicsTab_->heatmap()->plot() : nullptr;
    case ResultsTabIndex:
      return outputsTab_->currentPlot();
    default:
      return nullptr;
  }
}

bool MainWindow::exportCurrentPlot(const QString& path, const ExportOptions& options) {
  QCustomPlot* plot = currentPlot();
  if (!plot) {
    showError("export", "the current tab has no plot to export");
    return false;
  }
  QString error;
  if (!exportPlot(*plot, path, options, &error)) {
    showError("export", error);
    return false;
  }
  log("exported the plot to " + path);
  return true;
}

bool MainWindow::exportCurrentData(const QString& path) {
  if (!headsView()->hasGrid()) {
    showError("export", "no grid is shown");
    return false;
  }
  try {
    if (path.endsWith(".json", Qt::CaseInsensitive))
      writeGridJson(headsView()->grid(), path.toStdString());
    else
      writeGridCsv(headsView()->grid(), path.toStdString());
  } catch (const std::exception& e) {
    showError("export", QString::fromStdString(e.what()));
    return false;
  }
  log("exported " + QString::fromStdString(headsView()->grid().id) + " to " + path);
  return true;
}

QStringList MainWindow::saveScreenshots(const QString& dir) {
  QDir().mkpath(dir);
  QStringList written;
  const int keep = tabs_->currentIndex();
  // Every tab, named after its title: "Task vectors" → main_task_vectors.png.
  for (int i = 0; i < tabs_->count(); ++i) {
    tabs_->setCurrentIndex(i);
    QApplication::processEvents();
    const QString name = tabs_->tabText(i).remove('&').toLower().replace(' ', '_');
    const QString f = QDir(dir).filePath(QString("main_%1.png").arg(name));
    if (grab().save(f)) written << f;
  }
  tabs_->setCurrentIndex(keep);
  // A method's options form, as Run → Task recognition… opens it (generated from its registry record).
  if (MethodDialog* d = createMethodDialog("tsla")) {
    d->adjustSize();
    d->show();
    QApplication::processEvents();
    const QString f = QDir(dir).filePath("main_run_tsla.png");
    if (d->grab().save(f)) written << f;
    d->deleteLater();
  }
  return written;
}

}  // namespace hs::gui
