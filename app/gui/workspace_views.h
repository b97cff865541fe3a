#pragma once
// The views of issue 40 in the main window, fed by the session's runs and the method registry: the Head card
// tab (head_card.h: everything known about one head), the Agreement tab (widgets/agreement_matrix.h: every
// pair of head rankings of the loaded model), the Prompts tab (prompt_slices.h: per-prompt rows filtered,
// sorted, exported, opened on the Prompt tab), and run diff windows (run_diff.h: two runs' options, grids and
// curves side by side). MainWindow creates one of these after its worker and calls setRuns from
// refreshResults; everything else is wired here (the Heads tab's "Head card" menu entry, the Runs dock's
// "Compare with…" menu, View-menu entries, the worker's head-circuit requests).
#include <QObject>
#include <QPointer>
#include <QString>
#include <QStringList>

#include <vector>

#include <nlohmann/json.hpp>

#include "results/results.h"
#include "run_diff.h"

namespace hs {
class AgreementMatrix;
}

namespace hs::gui {

class HeadCard;
class MainWindow;
class PromptSlices;
struct HeadCircuit;

class WorkspaceViews : public QObject {
  Q_OBJECT
 public:
  explicit WorkspaceViews(MainWindow* window);

  // The loaded model's runs (`shown`) and the other models' runs, as the other views get them.
  void setRuns(const std::vector<AnalysisRun>& shown, const std::vector<AnalysisRun>& others);

  HeadCard* headCard() const { return card_; }
  AgreementMatrix* agreement() const { return agreement_; }
  PromptSlices* promptSlices() const { return slices_; }
  // Shows the card of `head` on its tab.
  void showHeadCard(HeadRef head);
  // A run diff window on runs a and b (ids; empty: the session's last two runs); nullptr with fewer than two
  // runs.
  RunDiffDialog* compareRuns(const QString& a = {}, const QString& b = {});
  RunDiffDialog* lastRunDiff() const { return diff_; }

  // The views' state for a session: the Head card's head, the agreement's statistic and k, and the Prompts
  // tab's source, filter and sort. Restoring keeps what cannot apply yet (the Prompts tab's source arrives
  // with the model's tokenizer) until setRuns brings it.
  nlohmann::json viewState() const;
  void restoreViewState(const nlohmann::json& state);

  // head_card.png, agreement.png, prompts.png and run_diff.png of the window's current state into `dir` (the
  // docs).
  QStringList saveScreenshots(const QString& dir);

 Q_SIGNALS:
  void headCircuitShown();  // the engine's answer for the card's head arrived

 private:
  void requestCircuit();
  void applySlicesState();  // pendingSlices_ into the Prompts tab once its source is offered
  void onCircuit(const HeadCircuit& circuit);
  void installRunsMenu();

  MainWindow* w_ = nullptr;
  HeadCard* card_ = nullptr;
  AgreementMatrix* agreement_ = nullptr;
  PromptSlices* slices_ = nullptr;
  QPointer<RunDiffDialog> diff_;
  bool circuitPending_ = false;   // the card's head changed while its tab was hidden
  QStringList modelRuns_;         // the loaded model's runs (its silent heads are theirs)
  nlohmann::json pendingSlices_;  // the Prompts tab's restored state, until its source is offered
};

}  // namespace hs::gui
