#pragma once
// The engine worker: lives on its own QThread and owns the model. The UI sends jobs through queued
// calls and receives plain value types through signals; it never waits on torch. Every job catches
// its exceptions and reports them as failed(job, message); Cancel is honoured between forwards.
#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <vector>

#include "analysis/framework/analysis_context.h"
#include "analysis/toolkit/head_edits.h"
#include "gui_types.h"
#include "head_circuit.h"
#include "model/intervention.h"
#include "tasks/icl_task.h"

namespace hs::gui {

// The one translation of the Interventions dock's entries into core's head edits
// (analysis/toolkit/head_edits.h): the enabled entries, in order. The Prompt tab's forward turns them into
// interventions with headEditInterventions, the evaluation into its options with evaluateOptionsOf, so
// "mean-ablate" means the corpus mean in both.
HeadEdit headEditOf(const InterventionEntry& e);
std::vector<HeadEdit> headEditsOf(const std::vector<InterventionEntry>& entries);
// The `evaluate` method's options for the enabled entries (evaluateOptionsOf); throws when an entry has
// parameters the method does not take (custom positions; patched or steered heads with different
// parameters: the method has one set per kind).
nlohmann::json evaluateOptions(const std::vector<InterventionEntry>& entries);

class EngineWorker : public QObject {
  Q_OBJECT
 public:
  EngineWorker();
  ~EngineWorker() override;

  // Thread-safe: asks the running job to stop at its next check.
  void requestCancel() { cancel_ = true; }

 public Q_SLOTS:
  // dtype: auto, f32, bf16, f16; device: cpu, cuda, cuda:N or a list; gpuLayers: see LoadOptions.
  void loadModel(const QString& path, const QString& tokenizer, const QString& dtype = "auto",
                 const QString& device = "cpu", int gpuLayers = -1);
  // The prompt's next-token prediction, logit lens (every position) and direct logit attribution, with the
  // enabled `entries` applied (patches and steering take their source's vector: the clean ICL mean or an
  // ICL prompt of `taskJson`'s task, a text, the corpus mean) and without them.
  void runPrompt(const QString& text, int topK, const std::vector<hs::gui::InterventionEntry>& entries = {},
                 const QString& taskJson = {});
  void attentionPattern(const QString& text, int layer, int head,
                        const std::vector<hs::gui::InterventionEntry>& entries = {},
                        const QString& taskJson = {});
  // The head card's engine part (head_circuit.h): the head's pattern on `text` (no interventions) and its OV
  // circuit on the label tokens of the task (TaskSpec JSON); arrives through headCircuitReady.
  void headCircuit(const QString& text, int layer, int head, const QString& taskJson);
  // The texts of token-id sequences (a run's prompt records and their answers, for the Prompts tab); they
  // arrive through promptsDecoded with `tag`.
  void decodePrompts(const QString& tag, const std::vector<std::vector<int>>& ids,
                     const std::vector<std::vector<int>>& answers);
  // Runs the method `method` of the registry (core/analysis/framework/registry.h) on the task (TaskSpec JSON)
  // with `optionsJson` (checked against the method's options); the run gets the id `runId`.
  void runAnalysis(const QString& method, const QString& taskJson, const QString& optionsJson,
                   const QString& runId);
  // The first ICL prompt of the task, token by token (errors go into TaskPreview::error, no dialog).
  void previewTask(const QString& taskJson);
  // The `evaluate` method with the enabled entries: ICL accuracy / TR ratio with the ablations, zero-shot
  // accuracy with the patches and steering, each against its baseline; the run (id `runId`) arrives
  // through analysisReady, the numbers through evaluationReady.
  // `randomDraws` > 0 adds the random-heads control (as many heads as ablated, drawn from the others).
  void evaluate(const QString& taskJson, const std::vector<hs::gui::InterventionEntry>& entries,
                const QString& runId, int randomDraws = 0);

 Q_SIGNALS:
  void modelLoaded(const hs::gui::ModelInfo& info);
  void promptReady(const hs::gui::PromptView& view);
  void patternReady(const hs::gui::PatternView& view);
  void headCircuitReady(const hs::gui::HeadCircuit& circuit);
  void promptsDecoded(const QString& tag, const QStringList& texts, const QStringList& answers);
  void analysisReady(const hs::gui::AnalysisOutputPtr& output);
  void taskPreviewReady(const hs::gui::TaskPreview& preview);
  void evaluationReady(const hs::gui::EvalResult& result);
  void progress(double fraction, const QString& message);
  void trainingPoint(const QString& curve, int step, double value);  // a live training curve grows
  void failed(const QString& job, const QString& message);
  void cancelled(const QString& job);
  void busy(bool running);

 private:
  AnalysisContext context();  // progress → progress(), cancellation ← requestCancel()
  // The forward interventions of the enabled entries on the prompt `ids` (mean ablation: the head's mean
  // over this prompt's positions, as `headscope-cli logits --ablate-mode mean`; patches and steering: their
  // source's vector, as the `evaluate` method computes it, headSourceZ / steerHeads).
  std::vector<Intervention> interventionsFor(const std::vector<InterventionEntry>& entries,
                                             const std::vector<int64_t>& ids, const QString& taskJson);
  // An entry's source vectors [layers, heads, d_head], cached per source and task.
  at::Tensor sourceZ(const HeadVectorSource& source, const QString& taskJson);
  // Runs a registry method on the loaded model (throws without one).
  AnalysisOutputPtr run(const std::string& method, const TaskSpec& spec, const nlohmann::json& options,
                        const QString& runId);
  template <typename F>
  void job(const QString& name, F&& body);

  struct State;
  std::unique_ptr<State> state_;
  std::atomic<bool> cancel_{false};
};

}  // namespace hs::gui
