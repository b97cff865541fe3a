#pragma once
// The Task dock: which ICL task every analysis and the evaluation run on (hs::TaskSpec): dataset (the toy
// tasks, the Function Vectors tasks found in the shared data folders, or a dataset file: FV JSON, CSV/TSV,
// SST-2, TREC), template, shots, label words, n prompts, seed; and a live preview of the first ICL prompt
// with its token boundaries, ids and segment roles.
#include <QWidget>

#include "gui_types.h"
#include "tasks/icl_task.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;
class QTextBrowser;
class QTimer;

namespace hs::gui {

class TaskDock : public QWidget {
  Q_OBJECT
 public:
  explicit TaskDock(QWidget* parent = nullptr);

  TaskSpec spec() const;
  // Shows `s` (adds a dataset file to the list when needed) and emits changed(false) once.
  void setSpec(const TaskSpec& s);
  // Shows the worker's preview of the current spec.
  void setPreview(const TaskPreview& preview);
  const TaskPreview& preview() const { return preview_; }

  QComboBox* datasetBox() const { return dataset_; }  // item data: the dataset (TaskSpec::dataset)
  // The datasets the list offers, in order (toy tasks, Function Vectors tasks, files opened).
  QStringList datasets() const;
  QSpinBox* shotsBox() const { return shots_; }

 Q_SIGNALS:
  // The spec changed (debounced: one signal per burst of edits); byUser is false when only setSpec
  // changed it.
  void changed(bool byUser);

 private:
  void scheduleChanged(bool byUser);
  void chooseDatasetFile();
  void addDataset(const QString& id);

  QComboBox* dataset_ = nullptr;
  QComboBox* template_ = nullptr;
  QSpinBox* shots_ = nullptr;
  QSpinBox* nPrompts_ = nullptr;
  QSpinBox* seed_ = nullptr;
  QLineEdit* labelWords_ = nullptr;
  QLabel* info_ = nullptr;
  QTextBrowser* preview_view_ = nullptr;
  QTimer* debounce_ = nullptr;
  TaskPreview preview_;
  int lastDatasetIndex_ = 0;
  bool pendingByUser_ = false;
};

}  // namespace hs::gui
