// MainWindow: the loaded model's files changed on disk (loaded_files_watch.h).
#include <QMessageBox>

#include "loaded_files_watch.h"
#include "main_window.h"

namespace hs::gui {

void MainWindow::watchModelFiles(const ModelInfo& info) {
  if (!filesWatch_) {
    filesWatch_ = new LoadedFilesWatch(this);
    connect(filesWatch_, &LoadedFilesWatch::changed, this, &MainWindow::onModelFilesChanged);
  }
  filesWatch_->watch(info.files);
}

void MainWindow::onModelFilesChanged(const QStringList& paths) {
  const QString list = paths.join(", ");
  log("the loaded model's files changed on disk: " + list);
  Q_EMIT modelFilesChanged(paths);
  if (!interactive_ || info_.path.isEmpty()) return;
  const auto answer = QMessageBox::warning(
      this, "HeadScope — model changed on disk",
      QString("%1 changed on disk while the model was loaded.\n\nResults computed from now on may not be "
              "those of the file, and reading a truncated file fails. Reload the model now?")
          .arg(list),
      QMessageBox::Yes | QMessageBox::No, QMessageBox::Yes);
  if (answer == QMessageBox::Yes) openModel(info_.path, tokenizerPath_, false);
}

}  // namespace hs::gui
