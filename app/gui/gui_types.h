#pragma once
// Value types that cross from the engine worker to the UI through queued signals. No torch here.
#include <QMetaType>
#include <QString>
#include <QStringList>

#include <vector>

#include "results/results.h"

namespace hs::gui {

struct ModelInfo {
  QString path, format, architecture, tokenizer;
  int layers = 0, heads = 0, kvHeads = 0, dModel = 0, dHead = 0, dMlp = 0, vocab = 0, context = 0;
  long long params = 0;
  QString dtype;
  QStringList notes;
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

void registerMetaTypes();

}  // namespace hs::gui

Q_DECLARE_METATYPE(hs::gui::ModelInfo)
Q_DECLARE_METATYPE(hs::gui::PromptView)
Q_DECLARE_METATYPE(hs::gui::PatternView)
Q_DECLARE_METATYPE(hs::HeadGrid)
Q_DECLARE_METATYPE(std::vector<hs::HeadGrid>)
