#pragma once
// The main window: Model dock, centre tabs (Heads, Attention, Prompt), bottom log with progress and
// Cancel. All model work goes to the EngineWorker on its own thread.
#include <QMainWindow>
#include <QThread>

#include <vector>

#include "gui_types.h"

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace hs {
class HeadGridView;
}

namespace hs::gui {

class EngineWorker;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Loads a model on the worker; when done, runs the prompt and the head scores so the first screen
  // shows real heatmaps.
  void openModel(const QString& path, const QString& tokenizer = {});
  // Errors go to a dialog when interactive (default); tests turn that off and read lastError().
  void setInteractive(bool on) { interactive_ = on; }
  QString lastError() const { return lastError_; }
  bool isBusy() const { return busy_; }

  HeadGridView* headsView() const { return heads_; }
  QTabWidget* tabs() const { return tabs_; }
  QCustomPlot* attentionPlot() const { return attention_; }
  const PatternView& pattern() const { return pattern_; }
  const PromptView& promptView() const { return prompt_; }
  const ModelInfo& modelInfo() const { return info_; }
  QString promptText() const;
  void setPromptText(const QString& text);

 Q_SIGNALS:
  void modelReady();
  void gridsShown();
  void patternShown();
  void promptShown();
  void errorShown(const QString& message);

 public Q_SLOTS:
  void runPrompt();
  void computeHeadScores();
  void cancelJob();

 private:
  void buildUi();
  void buildMenus();
  void onModelLoaded(const ModelInfo& info);
  void onGrids(const std::vector<HeadGrid>& grids, double copyAccuracy);
  void onPrompt(const PromptView& view);
  void onPattern(const PatternView& view);
  void onFailed(const QString& job, const QString& message);
  void onProgress(double fraction, const QString& message);
  void showGrid(int index);
  void requestPattern(HeadRef head);
  void log(const QString& line);
  void closeEvent(QCloseEvent* event) override;

  QThread thread_;
  EngineWorker* worker_ = nullptr;
  bool interactive_ = true;
  bool busy_ = false;
  QString lastError_;

  ModelInfo info_;
  PromptView prompt_;
  PatternView pattern_;
  std::vector<HeadGrid> grids_;

  QTabWidget* tabs_ = nullptr;
  HeadGridView* heads_ = nullptr;
  QComboBox* metric_ = nullptr;
  QLabel* headsSummary_ = nullptr;
  QCustomPlot* attention_ = nullptr;
  QCPColorMap* attentionMap_ = nullptr;
  QLineEdit* promptEdit_ = nullptr;
  QLabel* tokensLabel_ = nullptr;
  QTableWidget* topTable_ = nullptr;
  QTableWidget* lensTable_ = nullptr;
  QLabel* modelLabel_ = nullptr;
  QPlainTextEdit* log_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* cancel_ = nullptr;
};

}  // namespace hs::gui
