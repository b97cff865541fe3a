#pragma once
// The Evaluation dock: "Evaluate with interventions" and its result — ICL accuracy and TR ratio with the
// enabled ablations, zero-shot accuracy with the enabled patches / steering, each against its baseline
// with the difference Δ.
#include <QWidget>

#include <optional>

#include "gui_types.h"

class QLabel;
class QPushButton;
class QTableWidget;

namespace hs::gui {

class EvaluationDock : public QWidget {
  Q_OBJECT
 public:
  explicit EvaluationDock(QWidget* parent = nullptr);

  void setResult(const EvalResult& r);
  const std::optional<EvalResult>& result() const { return result_; }
  QPushButton* evaluateButton() const { return evaluate_; }
  QTableWidget* table() const { return table_; }

 Q_SIGNALS:
  void evaluateRequested();

 private:
  QPushButton* evaluate_ = nullptr;
  QTableWidget* table_ = nullptr;
  QLabel* note_ = nullptr;
  std::optional<EvalResult> result_;
};

}  // namespace hs::gui
