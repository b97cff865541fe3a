#pragma once
// The Interventions dock: the active head interventions (zero-ablate, mean-ablate, patch from clean,
// steering), each with a checkbox that enables it for the next evaluation; Remove and Clear.
#include <QWidget>

#include <vector>

#include "gui_types.h"

class QListWidget;

namespace hs::gui {

class InterventionsDock : public QWidget {
  Q_OBJECT
 public:
  explicit InterventionsDock(QWidget* parent = nullptr);

  // Adds one entry per head with `kind`; a head that already has that kind is not added twice (it is
  // re-enabled instead). A head acts under one intervention at a time: an enabled entry of another kind on
  // the same head is unticked, and notice() says so.
  void add(InterventionKind kind, const std::vector<HeadRef>& heads);
  // The entry's parameters: the steering scale and the positions (empty: the kind's default).
  void setParameters(int row, double scale, const std::vector<int>& positions);
  // Opens the parameter editor of a row (double-click does this too).
  void editParameters(int row);
  // Distinct heads with an enabled entry.
  int enabledHeads() const;
  std::vector<InterventionEntry> entries() const;
  void setEntries(const std::vector<InterventionEntry>& entries);
  void setEnabled(int row, bool on);
  void removeRow(int row);
  void clear();
  QListWidget* list() const { return list_; }

 Q_SIGNALS:
  void changed();
  void notice(const QString& message);  // a conflict was resolved (shown in the status bar and the log)

 private:
  void append(const InterventionEntry& e);
  // Unticks enabled entries on `row`'s head other than `row`; returns their labels.
  QStringList untickOthers(int row);
  QListWidget* list_ = nullptr;
  std::vector<InterventionEntry> entries_;  // parallel to the list rows
};

}  // namespace hs::gui
