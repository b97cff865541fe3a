#pragma once
// The head card: everything the session knows about one head in one panel (issue 40). Its score and rank
// among the live heads in every grid of every run of the loaded model, whatever method made it (labelled by
// the grid's name, explained by its registry OutputSpec in the tooltip); the effect of ablating or patching
// it (grids whose OutputSpec unit is a difference "Δ…", and the runs whose head-list options name it, with
// their headline numbers); its direct logit attribution on the current prompt; the same head in imported
// published results; its attention pattern on the current prompt (the Attention tab's view) and its OV
// circuit on the task's label tokens (head_circuit.h, computed by the engine worker); and a button to every
// view that shows it.
#include <QString>
#include <QStringList>
#include <QWidget>

#include <vector>

#include "gui_types.h"
#include "head_circuit.h"
#include "results/rank_agreement.h"

class QLabel;
class QPushButton;
class QSpinBox;
class QTreeWidget;
class QTreeWidgetItem;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class AttentionTab;

class HeadCard : public QWidget {
  Q_OBJECT
 public:
  // The card's sections, in order.
  enum class Section { Scores, Effects, Prompt, Published };
  // One line of the card.
  struct Row {
    Section section = Section::Scores;
    QString key;     // "<run id>/<grid id>" (the Heads tab's key); "" for lines that are not a grid
    QString result;  // the grid's name (or what the line is)
    QString run;     // the run's id
    double value = NAN;
    LiveRank rank;  // among the live heads (of the loaded model), or every head with a number (other models)
    QString text;   // a run that intervened on the head: its headline numbers (no value, no rank)
  };

  explicit HeadCard(QWidget* parent = nullptr);

  // The loaded model: its shape and silent heads (left out of every rank).
  void setModel(const ModelInfo& info);
  // The loaded model's runs, and the runs of other models (published results are looked at in both).
  void setRuns(const std::vector<AnalysisRun>& runs, const std::vector<AnalysisRun>& otherRuns = {});
  // The Prompt tab's result: its direct logit attribution is a line of the card.
  void setPrompt(const PromptView& prompt);
  // The task's ICL prompts (the pattern's prompt picker).
  void setTaskPrompts(const QStringList& prompts);
  // Shows `head` (emits circuitRequested when it changes or `force`).
  void setHead(HeadRef head, bool force = false);
  HeadRef head() const { return head_; }
  bool hasHead() const { return hasHead_; }
  // The engine's answer; ignored when it is for another head.
  void setCircuit(const HeadCircuit& circuit);
  const HeadCircuit& circuit() const { return circuit_; }
  // The prompt the pattern is asked on: "" for the Prompt tab's text, else the chosen task prompt.
  QString chosenPrompt() const;

  const std::vector<Row>& rows() const { return rows_; }
  // The rows of one section.
  std::vector<Row> rows(Section s) const;
  QString title() const;  // "Layer 2, head 5 · toy · 31 live heads"
  QTreeWidget* tree() const { return tree_; }
  AttentionTab* attention() const { return attention_; }
  HeadGridView* ovView() const { return ov_; }
  QString promotedText() const;  // the OV circuit's top tokens per label, one line each

 Q_SIGNALS:
  // The card needs the head's pattern (on chosenPrompt()) and OV circuit.
  void circuitRequested(hs::HeadRef head);
  void showGrid(const QString& key, hs::HeadRef head);  // the Heads tab on that grid, the head selected
  void showAttention(hs::HeadRef head);
  void showAttribution();
  void showDynamics(hs::HeadRef head);
  void ablate(hs::HeadRef head);

 private:
  void rebuild();
  void showCircuit();
  void addRow(const Row& row, QTreeWidgetItem* parent, const QString& tip);

  ModelInfo model_;
  std::vector<AnalysisRun> runs_, others_;
  HeadGrid dla_;
  QString dlaPiece_;
  HeadRef head_;
  bool hasHead_ = false;
  HeadCircuit circuit_;
  std::vector<Row> rows_;

  QLabel* title_ = nullptr;
  QLabel* summary_ = nullptr;
  QSpinBox* layer_ = nullptr;
  QSpinBox* headBox_ = nullptr;
  QPushButton* heads_ = nullptr;
  QPushButton* attentionButton_ = nullptr;
  QPushButton* attribution_ = nullptr;
  QPushButton* dynamics_ = nullptr;
  QPushButton* ablate_ = nullptr;
  QTreeWidget* tree_ = nullptr;
  AttentionTab* attention_ = nullptr;
  HeadGridView* ov_ = nullptr;
  QLabel* ovNote_ = nullptr;
};

}  // namespace hs::gui
