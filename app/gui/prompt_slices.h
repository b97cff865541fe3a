#pragma once
// Prompt slicing (issue 40, after LIT): the per-prompt rows of the session as one filterable, sortable table.
// Its sources are every table whose record declares it per prompt (an OutputSpec unit starting with "per
// prompt", as evaluate.prompts) and every run's own prompt records (AnalysisRun::prompts: the exact prompts
// it ran on, decoded by the engine worker). A filter keeps the rows holding a text (in any column or one);
// a click on a column header sorts (numbers as numbers); Export writes the rows shown as CSV; activating a
// row opens its prompt on the Prompt tab (a table with "set" and "index" columns names the run's prompt
// record of that set and index).
#include <QMap>
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "results/results.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSortFilterProxyModel;
class QStandardItemModel;
class QTableView;

namespace hs::gui {

class PromptSlices : public QWidget {
  Q_OBJECT
 public:
  explicit PromptSlices(QWidget* parent = nullptr);

  // The loaded model's runs.
  void setRuns(const std::vector<AnalysisRun>& runs);
  // The texts of a run's prompt records and of their answers, in record order (the worker's answer).
  void setDecoded(const QString& runId, const QStringList& texts, const QStringList& answers);

  // Sources: "<run id>/<table id>" or "<run id>/prompts" (the run's prompt records).
  QStringList sources() const;
  bool setSource(const QString& key);
  QString source() const;
  // Keeps the rows that hold `text` (case-insensitive) in `column` ("" for any column).
  void setFilter(const QString& text, const QString& column = {});
  QString filterText() const;
  QString filterColumn() const;  // "" for any column
  void sortBy(const QString& column, Qt::SortOrder order);
  QString sortColumn() const;  // "" while unsorted
  Qt::SortOrder sortOrder() const;
  QStringList columns() const;
  int rowCount() const;  // rows shown (after the filter)
  int totalRows() const;
  QString cell(int row, const QString& column) const;  // as shown, after filter and sort
  // The prompt text of shown row `row` ("" while its run's records are not decoded, or when it has none).
  QString promptOf(int row) const;
  // The shown rows, sorted as shown, with a header line; false (with `error`) when the file cannot be
  // written.
  bool exportCsv(const QString& path, QString* error = nullptr) const;

  QTableView* view() const { return view_; }

 Q_SIGNALS:
  // The prompt records of `runId` are needed as text: ids per record and the records' answers.
  void decodeRequested(const QString& runId, const std::vector<std::vector<int>>& ids,
                       const std::vector<std::vector<int>>& answers);
  void openPrompt(const QString& text);

 private:
  const AnalysisRun* run(const QString& id) const;
  void fill();
  void updateCount();

  std::vector<AnalysisRun> runs_;
  QMap<QString, QStringList> texts_, answers_;  // run id -> decoded prompt records and answers
  QStringList requested_;                       // run ids whose decoding was asked for
  QComboBox* source_ = nullptr;
  QComboBox* column_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QLabel* count_ = nullptr;
  QStandardItemModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* view_ = nullptr;
};

}  // namespace hs::gui
