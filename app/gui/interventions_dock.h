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
  // re-enabled instead).
  void add(InterventionKind kind, const std::vector<HeadRef>& heads);
  std::vector<InterventionEntry> entries() const;
  void setEntries(const std::vector<InterventionEntry>& entries);
  void setEnabled(int row, bool on);
  void removeRow(int row);
  void clear();
  QListWidget* list() const { return list_; }

 Q_SIGNALS:
  void changed();

 private:
  void append(const InterventionEntry& e);
  QListWidget* list_ = nullptr;
  std::vector<InterventionEntry> entries_;  // parallel to the list rows
};

}  // namespace hs::gui
