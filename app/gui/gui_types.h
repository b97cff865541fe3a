#pragma once
// Value types that cross from the engine worker to the UI through queued signals. No torch here: an
// analysis output travels as a shared pointer to an incomplete type (only the worker and session_io
// look inside the tensors).
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <cmath>

#include <memory>
#include <vector>

#include "results/results.h"

namespace hs {
struct AnalysisOutput;
}

namespace hs::gui {

struct ModelInfo {
  QString path, format, architecture, tokenizer;
  QString label;  // the model as runs record it: "toy" for the embedded model, else its path
  int layers = 0, heads = 0, kvHeads = 0, dModel = 0, dHead = 0, dMlp = 0, vocab = 0, context = 0;
  long long params = 0;
  QString dtype;
  QString device;  // "cpu", "cuda:0", or the device map ("cpu (embedding, layers 0-11) + cuda:0 (...)")
  QStringList notes;
  QStringList files;            // every file read (weights, config, tokenizer), watched while loaded
  std::vector<HeadRef> silent;  // heads whose W_O is all zero (model/load/silent_heads.h)
  bool toyVocabulary = false;   // the toy world's vocabulary (tasks/toy_vocabulary.h): the toy model
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
  QStringList unknownWords;   // words of the text the tokenizer cannot spell (they became its unknown token)
  int interventions = 0;      // enabled interventions applied (0: the clean model)
  std::vector<TopToken> top;  // next-token prediction at the last position (with the interventions)
  std::vector<TopToken> cleanTop;           // the same, without interventions
  std::vector<double> topCleanProb;         // [top] each top token's probability without interventions
  std::vector<std::vector<TopToken>> lens;  // logit lens: per layer (resid_post), the top tokens at N
  std::vector<std::vector<TopToken>>
      lensGrid;  // [layer][pos] the top token after each layer at every position
  std::vector<std::vector<TopToken>> cleanLensGrid;  // [layer][pos] the same without interventions
  // The lens's answer token: the clean model's prediction at the last position.
  int lensAnswerId = -1;
  QString lensAnswerPiece;
  std::vector<std::vector<double>> lensAnswerProb;       // [layer][pos] its probability (as lensGrid)
  std::vector<std::vector<double>> cleanLensAnswerProb;  // [layer][pos] the same without interventions
  std::vector<std::vector<double>> lensCleanTopProb;     // [layer][pos] p(cleanLensGrid's token), as lensGrid
  // Direct logit attribution of the top token at N (analysis/toolkit/logit_attribution.h), with the
  // interventions.
  int dlaToken = -1;
  QString dlaPiece;
  HeadGrid dlaHeads;           // [layers, heads] logit contributions
  std::vector<double> dlaMlp;  // [layers]
  double dlaEmbed = 0, dlaLogit = 0;
  QString dlaError;  // why there is no attribution (e.g. OLMo-2)
};

struct PatternView {
  HeadRef head;
  QStringList pieces;           // token labels
  std::vector<double> weights;  // [q, k] row-major attention probabilities
  int n = 0;
  int interventions = 0;  // enabled interventions applied
};

// The first ICL prompt of the current task, token by token, for the Task dock's preview.
struct TaskPreview {
  QString dataset;
  int datasetSize = 0;
  bool classification = false;
  QStringList labelWords;  // classification: class index → label word
  QString templateId;
  std::vector<int> ids;      // [pos] the exact ids the model sees
  QStringList pieces;        // [pos]
  QStringList roles;         // [pos] PromptSegment::role of each token ("bos", "input", "label", ...)
  QString answer;            // the query's gold answer
  QString text;              // the prompt text without BOS
  QStringList prompts;       // the texts of the task's ICL prompts (the Attention tab's prompt picker)
  QStringList unknownWords;  // words of the prompts the tokenizer cannot spell
  QString error;             // set when the task cannot be built (nothing else is then)
};

// What the Interventions dock does to a head (the `evaluate` method's options,
// core/analysis/methods/evaluate.h).
enum class InterventionKind {
  ZeroAblate,  // hook_z at every position ← 0
  MeanAblate,  // hook_z at every position ← the head's mean
  PatchClean,  // hook_z at N ← the source's z (by default the clean ICL mean), on zero-shot prompts
  Steer,       // at N += scale · the source's z (on hook_z, or its write into another layer's residual)
};
// "zero_ablate", "mean_ablate", "patch_clean", "steer": the session's and the evaluate method's key.
const char* kindKey(InterventionKind k);
// The inverse; throws hs::Error naming an unknown kind.
InterventionKind parseInterventionKind(const std::string& key);
// "zero-ablate", "mean-ablate (corpus mean)", "patch from clean", "steer"
QString kindLabel(InterventionKind k);
inline constexpr InterventionKind kInterventionKinds[] = {
    InterventionKind::ZeroAblate, InterventionKind::MeanAblate, InterventionKind::PatchClean,
    InterventionKind::Steer};

// Where a patch's value or a steering vector comes from (HeadVectorSource of
// core/analysis/methods/evaluate.h).
enum class VectorSource {
  CleanMean,  // the head's z at N averaged over the task's ICL prompts
  Mean,       // the head's mean over a neutral text corpus (MeanSource's default; steering only)
  Prompt,     // the head's z at N of one of the task's ICL prompts
  Text,       // the head's z at the last token of a text
};
// "clean_mean", "mean", "prompt", "text": the session's and the evaluate method's value.
const char* sourceKey(VectorSource s);
VectorSource parseVectorSource(const std::string& key);  // throws hs::Error naming an unknown source
QString sourceLabel(VectorSource s);  // "clean ICL mean", "corpus mean", "ICL prompt", "text"

// One head intervention of the Interventions dock, with its parameters: the positions it acts on
// (empty: the kind's default — every position for ablations, N for patches and steering), and for patches
// and steering where the vector comes from; for steering its scale and the layer it is added at.
struct InterventionEntry {
  InterventionKind kind = InterventionKind::ZeroAblate;
  HeadRef head;
  bool enabled = true;
  double scale = 1.0;          // Steer only
  std::vector<int> positions;  // token positions (negative: from the end); empty: the default
  VectorSource source = VectorSource::CleanMean;  // PatchClean and Steer
  int sourcePrompt = 0;                           // VectorSource::Prompt: the ICL prompt (0-based)
  QString sourceText;                             // VectorSource::Text
  int layer = -1;  // Steer: -1 the head's own hook_z; L its write W_O z into hook_resid_pre(L)
  bool operator==(const InterventionEntry& o) const {
    return kind == o.kind && head == o.head && enabled == o.enabled && scale == o.scale &&
           positions == o.positions && source == o.source && sourcePrompt == o.sourcePrompt &&
           sourceText == o.sourceText && layer == o.layer;
  }
  bool operator!=(const InterventionEntry& o) const { return !(*this == o); }
  // Patches and steering take a source vector; ablations do not.
  bool hasSource() const { return kind == InterventionKind::PatchClean || kind == InterventionKind::Steer; }
};
// "zero-ablate  L2.H5", "steer  L3.H1  ×2  from ICL prompt 4  → resid_pre L1  @ -1,-2"
QString interventionLabel(const InterventionEntry& e);

// A run's headline numbers, "key value" (4 significant digits), nested objects flattened one level
// ("icl.accuracy 0.9375"); arrays, strings and deeper members are left out.
QStringList summaryNumbers(const nlohmann::json& summary);

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
  QString taskJson;                        // the exact task the numbers are for
  std::vector<InterventionEntry> entries;  // the enabled interventions they are for
  QString runId;                           // the `evaluate` run these numbers are from
  // 95 % Wilson intervals of the accuracies (icl, icl_intervened, zero_shot, zero_shot_intervened).
  double lo[4] = {NAN, NAN, NAN, NAN}, hi[4] = {NAN, NAN, NAN, NAN};
  int randomDraws = 0;
  double randomAccuracy = NAN, randomLo = NAN, randomHi = NAN;
  // Per prompt: set, query, answer, prediction / p(answer) before and after.
  struct PromptRow {
    QString set, query, answer, before, after;
    double pBefore = NAN, pAfter = NAN;
  };
  std::vector<PromptRow> prompts;
};

using AnalysisOutputPtr = std::shared_ptr<const hs::AnalysisOutput>;
// The run inside an output, for code that must not include torch (defined in session_io.cpp).
const AnalysisRun& runOf(const AnalysisOutputPtr& output);
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
