// MainWindow: importing runs into the open session (published results, other sessions' runs).
#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "analysis/framework/analysis_output.h"
#include "analysis/framework/registry.h"
#include "analysis/methods/published.h"
#include "batch/merge.h"
#include "main_window.h"
#include "session_io.h"

namespace hs::gui {

QStringList MainWindow::shippedPublishedSessions() {
  const QString dir = QString::fromStdString(publishedResourceDir());
  if (dir.isEmpty()) return {};
  QStringList out;
  for (const QString& f : QDir(dir).entryList({"*.hscope"}, QDir::Files, QDir::Name))
    out << QDir(dir).filePath(f);
  return out;
}

bool MainWindow::importRuns(const QStringList& paths) {
  std::vector<std::string> taken;
  for (const AnalysisOutputPtr& o : outputs_)
    taken.push_back(runOf(o).id);
  taken.insert(taken.end(), pendingIds_.begin(), pendingIds_.end());
  std::vector<AnalysisOutputPtr> added;
  std::vector<std::string> published;  // result files and folders, read together (one run per checkpoint)
  try {                                // read everything before the session changes
    for (const QString& path : paths) {
      if (!path.endsWith(".hscope", Qt::CaseInsensitive)) {
        published.push_back(path.toStdString());
        continue;
      }
      if (batch::isStudySession(path.toStdString()))
        throw std::runtime_error(path.toStdString() +
                                 " is a merged batch study; File → Open session opens it in its own window");
      const GuiSessionState session = loadGuiSession(path);
      for (const AnalysisOutputPtr& o : session.outputs) {
        auto copy = std::make_shared<AnalysisOutput>(*o);
        if (std::find(taken.begin(), taken.end(), copy->run.id) != taken.end())
          renameRun(*copy, uniqueRunId(copy->run.method.empty() ? "run" : copy->run.method, taken));
        taken.push_back(copy->run.id);
        added.push_back(std::move(copy));
      }
    }
    if (!published.empty()) {
      for (AnalysisRun& run : importPublished(published, taken)) {
        auto out = std::make_shared<AnalysisOutput>();
        out->run = std::move(run);
        taken.push_back(out->run.id);
        added.push_back(std::move(out));
      }
    }
  } catch (const std::exception& e) {
    showError("import", QString::fromStdString(e.what()));
    return false;
  }
  if (added.empty()) {
    showError("import", "no runs in " + paths.join(", "));
    return false;
  }
  outputs_.insert(outputs_.end(), added.begin(), added.end());
  refreshResults();
  setDirty(true);
  QStringList ids;
  for (const AnalysisOutputPtr& o : added)
    ids << QString::fromStdString(runOf(o).id);
  log(QString("imported %1 run(s) from %2: %3").arg(added.size()).arg(paths.join(", "), ids.join(", ")));
  return true;
}

}  // namespace hs::gui
