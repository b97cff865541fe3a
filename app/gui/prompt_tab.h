#pragma once
// The Prompt tab: a prompt's tokens, the next-token prediction and the logit lens at every position, with
// the ticked interventions applied or not (the "Apply interventions" toggle) and, when applied, each top
// token's probability without them and the difference. Beside it, the Attribution tab: which heads and
// MLPs wrote the predicted token's logit at the last position (direct logit attribution), as a layer × head
// map and a ranked list.
#include <QWidget>

#include "gui_types.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QTableWidget;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class PromptTab : public QWidget {
  Q_OBJECT
 public:
  explicit PromptTab(const QString& text, QWidget* parent = nullptr);
  QLineEdit* edit() const { return edit_; }
  QCheckBox* applyBox() const { return apply_; }
  bool applyInterventions() const;
  void setView(const PromptView& view);
  QTableWidget* topTable() const { return top_; }
  QTableWidget* lensTable() const { return lens_; }
  QString warning() const;  // the unknown-words line ("" when every word is known)

 Q_SIGNALS:
  void runRequested();

 private:
  QLineEdit* edit_ = nullptr;
  QCheckBox* apply_ = nullptr;
  QLabel* tokens_ = nullptr;
  QLabel* warning_ = nullptr;
  QLabel* state_ = nullptr;
  QTableWidget* top_ = nullptr;
  QTableWidget* lens_ = nullptr;
};

class AttributionTab : public QWidget {
  Q_OBJECT
 public:
  explicit AttributionTab(QWidget* parent = nullptr);
  void setView(const PromptView& view);
  HeadGridView* view() const { return grid_; }
  QTableWidget* ranked() const { return ranked_; }

 private:
  QLabel* note_ = nullptr;
  HeadGridView* grid_ = nullptr;
  QTableWidget* ranked_ = nullptr;
};

}  // namespace hs::gui
