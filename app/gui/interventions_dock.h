#pragma once
// The Interventions dock: the active head interventions (zero-ablate, mean-ablate, patch from clean,
// steering), each with a checkbox that enables it for the next evaluation; Remove and Clear. Double-click
// opens an entry's parameter form (InterventionForm).
#include <QDialog>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "gui_types.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace hs::gui {

// The parameters of one entry: its positions; for patches and steering the source of the vector (the
// clean ICL mean, one ICL prompt of the task by index, a text; steering also the corpus mean); for
// steering its scale and where it is added (the head's own hook_z or the residual stream before a layer).
// `layers` bounds the layer, `prompts` (the task's ICL prompts) the prompt index and previews the chosen
// prompt.
class InterventionForm : public QDialog {
  Q_OBJECT
 public:
  InterventionForm(const InterventionEntry& entry, int layers, const QStringList& prompts,
                   QWidget* parent = nullptr);
  // The entry with the form's values; false with `error` set when a field does not parse.
  bool read(InterventionEntry* out, QString* error = nullptr) const;

  QDoubleSpinBox* scaleBox() const { return scale_; }
  QComboBox* sourceBox() const { return source_; }  // item data: the VectorSource as int
  QSpinBox* promptBox() const { return prompt_; }
  QLineEdit* textEdit() const { return text_; }
  QSpinBox* layerBox() const { return layer_; }  // -1: the head's own hook_z
  QLineEdit* positionsEdit() const { return positions_; }
  void setSource(VectorSource s);
  // A line above the buttons saying that the source (and for steering the scale and layer) applies to
  // `others` more entries of the kind; hidden when `others` is 0.
  void setSharedWith(int others);
  QLabel* sharedNote() const { return shared_; }

 private:
  void updateEnabled();
  InterventionEntry entry_;
  QStringList prompts_;
  QDoubleSpinBox* scale_ = nullptr;
  QComboBox* source_ = nullptr;
  QSpinBox* prompt_ = nullptr;
  QLabel* promptPreview_ = nullptr;
  QLineEdit* text_ = nullptr;
  QSpinBox* layer_ = nullptr;
  QLineEdit* positions_ = nullptr;
  QLabel* shared_ = nullptr;
};

class InterventionsDock : public QWidget {
  Q_OBJECT
 public:
  explicit InterventionsDock(QWidget* parent = nullptr);

  // Adds one entry per head with `kind`; a head that already has that kind is not added twice (it is
  // re-enabled instead). A head acts under one intervention at a time: an enabled entry of another kind on
  // the same head is unticked, and notice() says so.
  void add(InterventionKind kind, const std::vector<HeadRef>& heads);
  // The entry's parameters from `params` (scale, positions, source, source prompt and text, layer; its
  // kind, head and enabled state stay). Parameters the kind does not take keep their defaults. The
  // evaluation patches every head from one source and steers every head from one source, by one scale, at
  // one layer: those parameters are shared by every entry of the kind, so setting them on one entry sets
  // them on the others (notice() says so), and a head added to a kind takes them from the kind's entries.
  void setParameters(int row, const InterventionEntry& params);
  // Opens the parameter form of a row (double-click does this too).
  void editParameters(int row);
  // What the form offers: the model's layer count and the task's ICL prompts.
  void setModelLayers(int layers) { layers_ = layers; }
  void setTaskPrompts(const QStringList& prompts) { prompts_ = prompts; }
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
  // Copies the parameters the kind's entries share (sharedParameters) from `from` into entry `row`.
  void shareParameters(int row, const InterventionEntry& from);
  void relabel(int row);
  QListWidget* list_ = nullptr;
  std::vector<InterventionEntry> entries_;  // parallel to the list rows
  int layers_ = 0;                          // 0: unknown (the layer is not bounded)
  QStringList prompts_;
};

}  // namespace hs::gui
