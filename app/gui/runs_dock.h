#pragma once
// The Runs dock: every run of the session by its label (method · model · task · seed), newest last, with
// its id, options and headline numbers in the tooltip; runs of another model than the loaded one are
// greyed. Delete removes the selected runs from the session.
#include <QWidget>

#include <vector>

#include "gui_types.h"

class QListWidget;
class QPushButton;

namespace hs::gui {

class RunsDock : public QWidget {
  Q_OBJECT
 public:
  explicit RunsDock(QWidget* parent = nullptr);

  // `model` is the loaded model's label ("toy" or its path); runs of other models are greyed.
  void setRuns(const std::vector<AnalysisRun>& runs, const QString& model);
  QListWidget* list() const { return list_; }
  QStringList labels() const;  // the rows as shown
  void selectRun(const QString& id);

 Q_SIGNALS:
  void deleteRequested(const QStringList& runIds);
  void closeOtherModelsRequested();

 private:
  QListWidget* list_ = nullptr;
  QPushButton* delete_ = nullptr;
};

}  // namespace hs::gui
