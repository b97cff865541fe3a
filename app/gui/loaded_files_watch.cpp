#include "loaded_files_watch.h"

#include <QFileInfo>

namespace hs::gui {

LoadedFilesWatch::LoadedFilesWatch(QObject* parent) : QObject(parent) {
  settle_.setSingleShot(true);
  settle_.setInterval(300);
  connect(&watcher_, &QFileSystemWatcher::fileChanged, this, &LoadedFilesWatch::onFileChanged);
  connect(&settle_, &QTimer::timeout, this, &LoadedFilesWatch::flush);
}

void LoadedFilesWatch::watch(const QStringList& files) {
  if (!watcher_.files().isEmpty()) watcher_.removePaths(watcher_.files());
  pending_.clear();
  settle_.stop();
  files_.clear();
  for (const QString& f : files)
    files_ << QFileInfo(f).absoluteFilePath();
  files_.removeDuplicates();
  if (!files_.isEmpty()) watcher_.addPaths(files_);
}

void LoadedFilesWatch::onFileChanged(const QString& path) {
  pending_.insert(path);
  // A file replaced by rename drops out of the watch: follow the path to the new file.
  if (QFileInfo::exists(path) && !watcher_.files().contains(path)) watcher_.addPath(path);
  settle_.start();
}

void LoadedFilesWatch::flush() {
  if (pending_.isEmpty()) return;
  QStringList paths(pending_.begin(), pending_.end());
  paths.sort();
  pending_.clear();
  Q_EMIT changed(paths);
}

}  // namespace hs::gui
