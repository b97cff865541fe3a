#include "glossary.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "analysis/framework/registry.h"

namespace hs::gui {

namespace {
std::vector<GlossaryEntry> build() {
  std::vector<GlossaryEntry> g = {
      {"accuracy", "Accuracy",
       "Share of prompts whose most likely next token (argmax at the last position N) is the first token of "
       "the "
       "gold answer. The Evaluation dock gives its 95 % Wilson score interval."},
      {"tr_ratio", "TR ratio (task-recognition ratio)",
       "Classification tasks: the share of predictions, over the whole vocabulary, that are one of the "
       "task's "
       "label words — whether the model recognised which task it is doing, right or wrong (Yang, Cho, "
       "Inoue)."},
      {"aie", "AIE (average indirect effect)",
       "Function vectors: how much patching one head's clean mean output into corrupted prompts raises the "
       "probability of the right answer, averaged over prompts (Todd et al.)."},
      {"alpha", "α (SITE head-selection weight)",
       "SITE learns one weight per head for injecting its task embedding; a large α marks a head whose "
       "output "
       "carries the task (Park, Kim, Choi, Rhee)."},
      {"prefix_matching", "Prefix matching (induction score)",
       "Attention from a token to the token after its previous occurrence on repeated random sequences: the "
       "signature of an induction head (Olsson et al.)."},
      {"prev_token", "Previous-token score", "Mean attention of a token to the one just before it."},
      {"dla", "Direct logit attribution",
       "A head's (or MLP's) write into the residual stream at the last position, read out through the final "
       "norm (its scale frozen at this prompt) and the unembedding row of the answer: the parts add up to "
       "the "
       "answer's logit."},
      {"spearman", "Spearman ρ", "Rank correlation of two metrics over all heads (compare scatter)."},
      {"kendall", "Kendall τ",
       "Share of head pairs the two metrics order alike, minus those they order unlike."},
      {"jaccard", "Jaccard@k", "Overlap of the top-k heads of two metrics: |A ∩ B| / |A ∪ B|."},
      {"silent", "Silent head",
       "A head whose output projection W_O is all zero: it writes nothing. Hatched in every grid and left "
       "out "
       "of ranks and top-k."},
      {"random_control", "Random-heads control",
       "Ablating as many randomly drawn other heads, several times: the drop any heads would cause. The "
       "chosen "
       "heads matter when their drop is well outside the draws' range."},
  };
  for (const MethodInfo& m : methods())
    for (const OutputSpec& o : m.outputs) {
      QString text = QString::fromStdString(o.meaning);
      if (!o.unit.empty())
        text += QString(" (%1: %2)")
                    .arg(o.kind == OutputSpec::Kind::Curve ? "axes" : "unit", QString::fromStdString(o.unit));
      text +=
          QString(" — method %1 (%2).").arg(QString::fromStdString(m.name), QString::fromStdString(m.title));
      g.push_back({QString::fromStdString(o.id), QString::fromStdString(o.id), text});
    }
  return g;
}
}  // namespace

std::vector<GlossaryEntry> glossary() {
  static const std::vector<GlossaryEntry> g = build();
  return g;
}

const GlossaryEntry* glossaryEntry(const QString& metricKey) {
  static const std::vector<GlossaryEntry> g = glossary();
  const QString id = metricKey.contains('/') ? metricKey.section('/', -1) : metricKey;
  for (const GlossaryEntry& e : g)
    if (e.key == id) return &e;
  return nullptr;
}

QString glossaryHtml() {
  QString html = "<h2>Glossary of metrics</h2>";
  for (const GlossaryEntry& e : glossary())
    html += QString("<p><a name=\"%1\"></a><b>%2</b><br>%3</p>")
                .arg(e.key.toHtmlEscaped(), e.term.toHtmlEscaped(), e.text.toHtmlEscaped());
  return html;
}

void showGlossary(QWidget* parent, const QString& metricKey) {
  QDialog d(parent);
  d.setWindowTitle("HeadScope — glossary of metrics");
  d.resize(620, 560);
  auto* layout = new QVBoxLayout(&d);
  auto* text = new QTextBrowser;
  text->setHtml(glossaryHtml());
  layout->addWidget(text);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
  QObject::connect(buttons, &QDialogButtonBox::rejected, &d, &QDialog::reject);
  layout->addWidget(buttons);
  if (const GlossaryEntry* e = glossaryEntry(metricKey)) text->scrollToAnchor(e->key);
  d.exec();
}

}  // namespace hs::gui
