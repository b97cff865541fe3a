#pragma once
// Value types that cross from the engine worker to the UI through queued signals. No torch here: an
// analysis output travels as a shared pointer to an incomplete type (only the worker and session_io
// look inside the tensors).
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

#include "results/results.h"

namespace hs {
struct AnalysisOutput;
}

namespace hs::gui {

struct ModelInfo {
  QString path, format, architecture, tokenizer;
  int layers = 0, heads = 0, kvHeads = 0, dModel = 0, dHead = 0, dMlp = 0, vocab = 0, context = 0;
  long long params = 0;
  QString dtype;
  QStringList notes;
  QStringList files;  // every file read (weights, config, tokenizer), watched while loaded
};

struct TopToken {
  int id = 0;
  QString piece;
  double logit = 0, prob = 0;
};

struct PromptView {
  QString text;
  std::vector<int> ids;
  QStringList pieces;
  std::vector<TopToken> top;                // next-token prediction at the last position
  std::vector<std::vector<TopToken>> lens;  // logit lens: per layer (resid_post), the top tokens
};

struct PatternView {
  HeadRef head;
  QStringList pieces;           // token labels
  std::vector<double> weights;  // [q, k] row-major attention probabilities
  int n = 0;
};

// The first ICL prompt of the current task, token by token, for the Task dock's preview.
struct TaskPreview {
  QString dataset;
  int datasetSize = 0;
  bool classification = false;
  QStringList labelWords;  // classification: class index → label word
  QString templateId;
  std::vector<int> ids;  // [pos] the exact ids the model sees
  QStringList pieces;    // [pos]
  QStringList roles;     // [pos] PromptSegment::role of each token ("bos", "input", "label", ...)
  QString answer;        // the query's gold answer
  QString text;          // the prompt text without BOS
  QString error;         // set when the task cannot be built (nothing else is then)
};

// One head intervention of the Interventions dock. Kinds: "zero_ablate", "mean_ablate" (hook_z at every
// position ← 0 / the clean mean), "patch_clean" (hook_z at N ← the clean ICL mean, on zero-shot prompts),
// "steer" (hook_z at N += the clean ICL mean, on zero-shot prompts: the head's mean output is added to the
// residual stream, Function-Vector style).
struct InterventionEntry {
  QString kind;
  HeadRef head;
  bool enabled = true;
  bool operator==(const InterventionEntry& o) const {
    return kind == o.kind && head == o.head && enabled == o.enabled;
  }
};
QString interventionLabel(const InterventionEntry& e);  // "zero-ablate L2.H5"

// Accuracy of one prompt set under one condition.
struct EvalNumbers {
  int n = 0;
  double accuracy = 0;
  double trRatio = 0;  // NaN for open-ended tasks
};
// What "Evaluate with interventions" measures: the ICL prompts with the enabled ablations and the
// zero-shot prompts with the enabled patches / steering, each against its own baseline.
struct EvalResult {
  EvalNumbers icl, iclIntervened, zeroShot, zeroShotIntervened;
  int nAblated = 0, nPatched = 0;  // enabled heads applied to each prompt set
  QString task;
};

using AnalysisOutputPtr = std::shared_ptr<const hs::AnalysisOutput>;
// The run inside an output, for code that must not include torch (defined in session_io.cpp).
const AnalysisRun& runOf(const AnalysisOutputPtr& output);
// The analyses this build can run (analysis_jobs.h), by method name.
std::vector<std::string> analysisMethodNames();

void registerMetaTypes();

}  // namespace hs::gui

Q_DECLARE_METATYPE(hs::gui::ModelInfo)
Q_DECLARE_METATYPE(hs::gui::PromptView)
Q_DECLARE_METATYPE(hs::gui::PatternView)
Q_DECLARE_METATYPE(hs::gui::TaskPreview)
Q_DECLARE_METATYPE(hs::gui::EvalResult)
Q_DECLARE_METATYPE(hs::gui::InterventionEntry)
Q_DECLARE_METATYPE(std::vector<hs::gui::InterventionEntry>)
Q_DECLARE_METATYPE(hs::gui::AnalysisOutputPtr)
Q_DECLARE_METATYPE(hs::HeadGrid)
Q_DECLARE_METATYPE(std::vector<hs::HeadGrid>)
