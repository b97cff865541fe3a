#pragma once
// The Evaluation dock: "Evaluate with interventions" and its result — ICL accuracy and TR ratio with the
// enabled ablations, zero-shot accuracy with the enabled patches / steering, each against its baseline
// with the difference Δ and 95 % intervals; the random-heads control (as many random heads ablated, several
// draws); and every prompt before / after. A result whose task or interventions differ from the current
// ones is marked stale (greyed, with the reason) rather than shown as if it were current.
#include <QWidget>

#include <optional>

#include "gui_types.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace hs::gui {

// The numbers of an `evaluate` run (its summary and its evaluate.prompts table), for the dock: what the
// worker sends when an evaluation ends and what a reopened session shows again. taskJson and entries (what
// the result is for) are the caller's. Throws hs::Error naming what the run lacks.
EvalResult evalResultOf(const AnalysisRun& run);

class EvaluationDock : public QWidget {
  Q_OBJECT
 public:
  explicit EvaluationDock(QWidget* parent = nullptr);

  void setResult(const EvalResult& r);
  void clearResult();  // "Not evaluated yet."
  const std::optional<EvalResult>& result() const { return result_; }
  // The current task (JSON) and interventions: the result is stale when they differ from its own.
  void setCurrent(const QString& taskJson, const std::vector<InterventionEntry>& entries);
  bool isStale() const { return !staleReason_.isEmpty(); }
  QString staleReason() const { return staleReason_; }
  int randomDraws() const;
  QPushButton* evaluateButton() const { return evaluate_; }
  QTableWidget* table() const { return table_; }
  QTableWidget* promptTable() const { return prompts_; }
  QPushButton* allColumnsButton() const { return allColumns_; }
  QString note() const;

 Q_SIGNALS:
  void evaluateRequested();
  void promptsTableRequested(const QString& runId);  // "All columns…": the run's table on the Prompts tab

 private:
  void updateStale();

  QPushButton* evaluate_ = nullptr;
  QSpinBox* draws_ = nullptr;
  QTableWidget* table_ = nullptr;
  QTableWidget* prompts_ = nullptr;
  QPushButton* allColumns_ = nullptr;
  QLabel* note_ = nullptr;
  QLabel* stale_ = nullptr;
  std::optional<EvalResult> result_;
  QString currentTask_;
  std::vector<InterventionEntry> currentEntries_;  // enabled only
  QString staleReason_;
};

}  // namespace hs::gui
