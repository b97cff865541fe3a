#pragma once
// What the head card (head_card.h) asks the engine about one head, computed on the worker thread
// (EngineWorker::headCircuit): its attention pattern on a prompt, and its OV circuit read on the task's label
// tokens, W_U · W_O · W_V of the head applied to each label token's embedding. No torch in this header: the
// value crosses threads as the other gui_types do.
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <vector>

#include "gui_types.h"
#include "tasks/icl_task.h"

namespace hs {
struct LoadedModel;
}

namespace hs::gui {

struct HeadCircuit {
  HeadRef head;
  QString task;         // the task's dataset (the labels' source)
  PatternView pattern;  // the head's attention on the prompt, without interventions
  QString patternError;
  // The OV circuit on the label tokens: source i is the label token the head attends to, target j the label
  // token whose logit its write raises. ov[i * n + j] = u_j · norm_final(W_O W_V norm_1(e_i)) with the final
  // norm's and the unembedding's biases left out (what attending to label i alone writes, read as logits).
  std::vector<int> labelIds;  // [n] first tokens of the labels (classification) or of the answers
  QStringList labels;         // [n] their pieces
  std::vector<double> ov;     // [n, n] row-major, logits
  std::vector<std::vector<TopToken>> promoted;  // [n] per source label: the vocabulary's top tokens
  QString ovError;                              // why there is no OV circuit (post-norm model, no labels)

  int n() const { return static_cast<int>(labelIds.size()); }
  double ovAt(int i, int j) const { return ov[static_cast<size_t>(i * n() + j)]; }
  // Labels whose own token is the label row's largest: the head copies what it attends to.
  int selfCopies() const;
};

// At most this many labels (the first ones; an open-ended task's distinct answer tokens).
inline constexpr int kMaxCircuitLabels = 16;

// The head's pattern on `text` and its OV circuit on the labels of `task`; errors go into patternError /
// ovError (nothing is thrown for them).
HeadCircuit computeHeadCircuit(const LoadedModel& m, HeadRef head, const QString& text, const TaskSpec& task,
                               int topTokens = 5);

}  // namespace hs::gui

Q_DECLARE_METATYPE(hs::gui::HeadCircuit)
