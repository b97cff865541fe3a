#pragma once
// The Prompt tab: a prompt's tokens, the next-token prediction and the logit lens at every position, with
// the ticked interventions applied or not (the "Apply interventions" toggle) and, when applied, each top
// token's probability without them and the difference. The logit lens is a heatmap (LensView): layers ×
// positions, coloured by the top token's probability, the answer token's or the clean top token's, or
// (with interventions) by the difference of that probability from the clean model's. Beside it, the
// Attribution tab: which heads and MLPs wrote the predicted token's logit at the last position (direct logit
// attribution), as a layer × head map and a ranked list.
#include <QWidget>

#include "gui_types.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QScrollArea;
class QTableWidget;

namespace hs {
class HeadGridView;
class LensView;
struct LensMap;
}  // namespace hs

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
  QString warning() const;  // the unknown-words line ("" when every word is known)

  // What the lens's colour shows.
  enum LensMeasure {
    TopProbability,       // the top token's probability
    AnswerProbability,    // the answer token's (the clean model's prediction at N)
    CleanTopProbability,  // the clean run's top token's, at each cell
  };
  LensView* lensView() const { return lensView_; }
  QComboBox* lensMeasureBox() const { return lensMeasure_; }
  QCheckBox* lensDifferenceBox() const { return lensDiff_; }   // enabled with interventions
  QCheckBox* lensScrollBox() const { return lensScrollBox_; }  // off: every position in view
  // The heatmap of `view` for a measure, as a difference from the clean model or not.
  static LensMap lensMap(const PromptView& view, LensMeasure measure, bool difference);

  // What a session keeps of the tab besides its text: "apply_interventions", "lens_measure" ("top",
  // "answer", "clean_top"), "lens_difference" (the Δ vs clean toggle) and "lens_scroll". Values of another
  // type are ignored (a session is a file).
  nlohmann::json viewState() const;
  void restoreViewState(const nlohmann::json& j);

 Q_SIGNALS:
  void runRequested();

 private:
  QLineEdit* edit_ = nullptr;
  QCheckBox* apply_ = nullptr;
  QLabel* tokens_ = nullptr;
  QLabel* warning_ = nullptr;
  QLabel* state_ = nullptr;
  QTableWidget* top_ = nullptr;
  QComboBox* lensMeasure_ = nullptr;
  QCheckBox* lensDiff_ = nullptr;
  QCheckBox* lensScrollBox_ = nullptr;
  LensView* lensView_ = nullptr;
  QScrollArea* lensScroll_ = nullptr;
  QLabel* lensTitle_ = nullptr;
  PromptView view_;
  void showLens();
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
