#include "published_import.h"

#include <QDir>
#include <QFileInfo>

#include "analysis/analysis_output.h"
#include "analysis/published.h"
#include "analysis/registry.h"
#include "main_window.h"
#include "session/session.h"

namespace hs::gui {

std::vector<AnalysisOutputPtr> readImportedRuns(const QStringList& paths, const std::vector<std::string>& taken) {
  std::vector<std::string> ids = taken;
  std::vector<std::string> published;
  std::vector<AnalysisOutputPtr> out;
  for (const QString& p : paths) {
    if (!p.endsWith(".hscope", Qt::CaseInsensitive)) {
      published.push_back(p.toStdString());
      continue;
    }
    const Session s = loadSession(p.toStdString());
    for (const AnalysisRun& run : s.runs) {
      auto o = std::make_shared<AnalysisOutput>();
      o->run = run;
      for (const std::string& name : run.tensors)
        o->tensors[name] = s.tensors.at(name);
      if (std::find(ids.begin(), ids.end(), run.id) != ids.end()) renameRun(*o, uniqueRunId(run.method, ids));
      ids.push_back(o->run.id);
      out.push_back(o);
    }
  }
  if (!published.empty())
    for (AnalysisRun& run : importPublished(published, ids)) {
      auto o = std::make_shared<AnalysisOutput>();
      o->run = std::move(run);
      ids.push_back(o->run.id);
      out.push_back(o);
    }
  return out;
}

QString defaultPublishedFolder() {
  const QString shipped = QString::fromStdString(publishedResourceDir());
  if (!shipped.isEmpty()) return shipped;
  const QString shared = QDir::current().absoluteFilePath("../shared/data/published/dual_route");
  return QFileInfo(shared).isDir() ? shared : QString();
}

bool MainWindow::importRuns(const QStringList& paths) {
  std::vector<std::string> taken = pendingIds_;
  for (const AnalysisOutputPtr& o : outputs_)
    taken.push_back(runOf(o).id);
  std::vector<AnalysisOutputPtr> added;
  try {
    added = readImportedRuns(paths, taken);
  } catch (const std::exception& e) {
    showError("import", QString::fromStdString(e.what()));
    return false;
  }
  QStringList ids;
  for (const AnalysisOutputPtr& o : added) {
    outputs_.push_back(o);
    ids << QString::fromStdString(runOf(o).id);
  }
  refreshResults();
  setDirty(true);
  log(QString("imported %1 run(s): %2").arg(added.size()).arg(ids.join(", ")));
  Q_EMIT gridsShown();
  return true;
}

}  // namespace hs::gui
