#pragma once
// The engine worker: lives on its own QThread and owns the model. The UI sends jobs through queued
// slot calls and receives plain value types through signals; it never waits on torch. Every job
// catches its exceptions and reports them as failed(message); Cancel is honoured between forwards.
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>

#include "gui_types.h"

namespace hs::gui {

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  EngineWorker();
  ~EngineWorker() override;

  // Thread-safe: asks the running job to stop at its next check.
  void requestCancel() { cancel_ = true; }

 public Q_SLOTS:
  void loadModel(const QString& path, const QString& tokenizer);
  void runPrompt(const QString& text, int topK);
  void computeHeadScores(int span, int nSequences, int seed);
  void attentionPattern(const QString& text, int layer, int head);

 Q_SIGNALS:
  void modelLoaded(const hs::gui::ModelInfo& info);
  void promptReady(const hs::gui::PromptView& view);
  void gridsReady(const std::vector<hs::HeadGrid>& grids, double copyAccuracy);
  void patternReady(const hs::gui::PatternView& view);
  void progress(double fraction, const QString& message);
  void failed(const QString& job, const QString& message);
  void busy(bool running);

 private:
  template <typename F>
  void job(const QString& name, F&& body);

  struct State;
  std::unique_ptr<State> state_;
  std::atomic<bool> cancel_{false};
};

}  // namespace hs::gui
