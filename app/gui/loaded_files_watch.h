#pragma once
// Watches the files of the loaded model (weights, config, tokenizer). A checkpoint rewritten, truncated or
// replaced while the GUI keeps it mapped for hours would otherwise give wrong numbers or a fault on the
// next read: the window hears about it at once and offers to reload (main_window_watch.cpp).
#include <QFileSystemWatcher>
#include <QObject>
#include <QSet>
#include <QStringList>
#include <QTimer>

namespace hs::gui {

class LoadedFilesWatch : public QObject {
  Q_OBJECT
 public:
  explicit LoadedFilesWatch(QObject* parent = nullptr);

  // Replaces the watched set (an empty list stops watching).
  void watch(const QStringList& files);
  const QStringList& files() const { return files_; }

 Q_SIGNALS:
  // Once per burst of changes (writes come in many small events), with the files that changed.
  void changed(const QStringList& paths);

 private:
  void onFileChanged(const QString& path);
  void flush();

  QFileSystemWatcher watcher_;
  QStringList files_;
  QSet<QString> pending_;
  QTimer settle_;
};

}  // namespace hs::gui
