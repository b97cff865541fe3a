#pragma once
// The Results tab: every curve and table of every run in the session, whatever method made it. It reads the
// runs and the methods' records (registry.h), never a result id, so the results of a method added later
// show here with no GUI code of their own. Left: the runs and their results; right: the chosen curve
// (CurveView) or table, under a line saying what the result means (its OutputSpec).
#include <QStringList>
#include <QWidget>

#include <vector>

#include "results/results.h"

class QCustomPlot;
class QLabel;
class QStackedWidget;
class QTableWidget;
class QTreeWidget;

namespace hs {
class CurveView;
}  // namespace hs

namespace hs::gui {

class OutputsTab : public QWidget {
  Q_OBJECT
 public:
  explicit OutputsTab(QWidget* parent = nullptr);

  // Lists every curve and table of `runs` (the selection kept when it is still there).
  void setRuns(const std::vector<AnalysisRun>& runs);
  // "<run id>/<result id>" of every listed result, in the tree's order.
  QStringList resultKeys() const;
  // Shows that result; false when it is not listed.
  bool select(const QString& key);
  QString selectedKey() const;
  // The plot of the shown curve (export), nullptr when a table or nothing is shown.
  QCustomPlot* currentPlot() const;
  QTableWidget* table() const { return table_; }

 private:
  void showSelected();

  std::vector<AnalysisRun> runs_;
  QTreeWidget* tree_ = nullptr;
  QLabel* meaning_ = nullptr;
  QStackedWidget* stack_ = nullptr;  // 0: hint, 1: curve, 2: table
  QLabel* hint_ = nullptr;
  CurveView* curve_ = nullptr;
  QTableWidget* table_ = nullptr;
};

}  // namespace hs::gui
