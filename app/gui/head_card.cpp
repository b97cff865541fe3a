#include "head_card.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QRegularExpression>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "analysis/framework/registry.h"
#include "attention_tab.h"
#include "head_grid_view.h"
#include "qcustomplot_include.h"
#include "results/rank_stats.h"
#include "run_label.h"

namespace hs::gui {

namespace {

constexpr int kKeyRole = Qt::UserRole;

// The record's OutputSpec of a grid (its id, or the family "x.*" / "x*" it belongs to); nullptr when the
// method is unknown or does not declare it.
const OutputSpec* specOf(const AnalysisRun& run, const std::string& id) {
  const MethodInfo* m = findMethod(run.method);
  if (!m) return nullptr;
  for (const OutputSpec& o : m->outputs) {
    if (o.kind != OutputSpec::Kind::Grid) continue;
    std::string prefix = o.id;
    bool family = false;
    if (!prefix.empty() && prefix.back() == '*') {
      prefix.pop_back();
      family = true;
    }
    if (family ? id.rfind(prefix, 0) == 0 : id == o.id) return &o;
  }
  return nullptr;
}

bool imported(const AnalysisRun& run) {
  const MethodInfo* m = findMethod(run.method);
  return m && m->imported;
}

// A grid measures the effect of changing the head (patching, ablation) when its unit, as the record declares
// it, is a difference.
bool isEffect(const AnalysisRun& run, const HeadGrid& g) {
  const OutputSpec* o = specOf(run, g.id);
  const QString unit = QString::fromStdString(o ? o->unit : g.unit);
  return unit.startsWith(QStringLiteral("Δ"));
}

QString gridName(const HeadGrid& g) {
  return QString::fromStdString(g.name.empty() ? g.id : g.name);
}

QString tipOf(const AnalysisRun& run, const HeadGrid& g) {
  QString tip = "<b>" + gridName(g).toHtmlEscaped() + "</b> (" + QString::fromStdString(g.id) + ")";
  if (const OutputSpec* o = specOf(run, g.id)) {
    tip += "<br>" + QString::fromStdString(o->meaning).toHtmlEscaped();
    if (!o->unit.empty()) tip += " [" + QString::fromStdString(o->unit).toHtmlEscaped() + "]";
  }
  tip += "<br>run: " + runDisplayLabel(run).toHtmlEscaped();
  tip += "<br><i>double-click: show this grid on the Heads tab</i>";
  return tip;
}

// "3 / 18": the rank among the live heads (the column's header says so), or why there is none.
QString rankText(const LiveRank& r) {
  if (!r.ranked) return std::isnan(r.value) ? QStringLiteral("no value") : QStringLiteral("silent (W_O = 0)");
  return QStringLiteral("%1 / %2").arg(r.rank).arg(r.of);
}

// Green for the top tenth of the ranking, fading to none at the median.
QColor rankColor(const LiveRank& r) {
  if (!r.ranked || r.of <= 1) return {};
  const double q = static_cast<double>(r.rank - 1) / static_cast<double>(r.of - 1);  // 0 = best
  if (q >= 0.5) return {};
  const double t = q <= 0.1 ? 1.0 : (0.5 - q) / 0.4;
  return QColor::fromRgbF(1.0 - 0.45 * t, 1.0 - 0.15 * t, 1.0 - 0.45 * t);
}

// The heads a run's head-list options name (the interventions of an evaluate run, ...), by option key.
std::vector<std::pair<std::string, std::vector<HeadRef>>> headListOptions(const AnalysisRun& run) {
  std::vector<std::pair<std::string, std::vector<HeadRef>>> out;
  const MethodInfo* m = findMethod(run.method);
  if (!m) return out;
  for (const OptionSpec& o : m->options) {
    if (o.type != OptionType::HeadList) continue;
    auto it = run.options.find(o.key);
    if (it == run.options.end() || !it->is_array()) continue;
    std::vector<HeadRef> heads;
    for (const auto& h : *it)
      if (h.is_array() && h.size() == 2 && h[0].is_number_integer() && h[1].is_number_integer())
        heads.push_back({h[0].get<int>(), h[1].get<int>()});
    if (!heads.empty()) out.emplace_back(o.key, heads);
  }
  return out;
}

}  // namespace

HeadCard::HeadCard(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  title_ = new QLabel(tr("No head chosen"));
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.3);
  big.setBold(true);
  title_->setFont(big);
  bar->addWidget(title_);
  bar->addSpacing(8);
  layer_ = new QSpinBox;
  layer_->setPrefix(tr("layer "));
  headBox_ = new QSpinBox;
  headBox_->setPrefix(tr("head "));
  layer_->setToolTip(tr("Choose the head here, or click it in any head view"));
  headBox_->setToolTip(layer_->toolTip());
  bar->addWidget(layer_);
  bar->addWidget(headBox_);
  bar->addStretch(1);
  layout->addLayout(bar);
  // The links on a row of their own, so that the card never widens the window (1024 px screens).
  bar = new QHBoxLayout;
  heads_ = new QPushButton(tr("Heads tab"));
  heads_->setToolTip(tr("The chosen grid (or the first) on the Heads tab, this head selected"));
  attentionButton_ = new QPushButton(tr("Attention tab"));
  attribution_ = new QPushButton(tr("Attribution tab"));
  attribution_->setToolTip(tr("Every head's direct logit attribution on the Prompt tab's text"));
  dynamics_ = new QPushButton(tr("Dynamics tab"));
  dynamics_->setToolTip(tr("This head across training checkpoints (published series)"));
  ablate_ = new QPushButton(tr("Zero-ablate"));
  ablate_->setToolTip(tr("Add a zero-ablation of this head to the Interventions dock"));
  bar->addWidget(new QLabel(tr("Show it on:")));
  for (QPushButton* b : {heads_, attentionButton_, attribution_, dynamics_, ablate_})
    bar->addWidget(b);
  bar->addStretch(1);
  layout->addLayout(bar);
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setStyleSheet("color:#444");
  layout->addWidget(summary_);

  auto* split = new QSplitter(Qt::Horizontal);
  tree_ = new QTreeWidget;
  tree_->setHeaderLabels({tr("Result"), tr("Run"), tr("Value"), tr("Rank")});
  tree_->headerItem()->setToolTip(
      3, tr("Rank / number of ranked heads: 1 = the largest value. The loaded model's "
            "live heads (silent heads are left out); all heads of a published model"));
  tree_->setRootIsDecorated(true);
  tree_->setUniformRowHeights(true);
  tree_->header()->setSectionResizeMode(0, QHeaderView::Stretch);
  tree_->header()->setSectionResizeMode(1, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(2, QHeaderView::ResizeToContents);
  tree_->header()->setSectionResizeMode(3, QHeaderView::ResizeToContents);
  tree_->header()->setStretchLastSection(false);
  tree_->setTextElideMode(Qt::ElideMiddle);
  split->addWidget(tree_);
  auto* right = new QSplitter(Qt::Vertical);
  attention_ = new AttentionTab;
  // Its hint speaks of Ctrl-clicking heads for the Attention tab; the card shows one head.
  for (QLabel* l : attention_->findChildren<QLabel*>())
    if (l->wordWrap()) l->hide();
  right->addWidget(attention_);
  auto* ovBox = new QWidget;
  auto* ovLayout = new QVBoxLayout(ovBox);
  ovLayout->setContentsMargins(0, 0, 0, 0);
  ovNote_ = new QLabel;
  ovNote_->setWordWrap(true);
  ovLayout->addWidget(ovNote_);
  ov_ = new HeadGridView;
  ov_->setMenuEnabled(false);
  ovLayout->addWidget(ov_, 1);
  right->addWidget(ovBox);
  right->setStretchFactor(0, 1);
  right->setStretchFactor(1, 1);
  split->addWidget(right);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  auto chooseFromBoxes = [this] { setHead({layer_->value(), headBox_->value()}); };
  connect(layer_, &QSpinBox::valueChanged, this, chooseFromBoxes);
  connect(headBox_, &QSpinBox::valueChanged, this, chooseFromBoxes);
  connect(attention_, &AttentionTab::promptChanged, this, [this] {
    if (hasHead_) Q_EMIT circuitRequested(head_);
  });
  connect(tree_, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem* item) {
    const QString key = item->data(0, kKeyRole).toString();
    if (!key.isEmpty()) Q_EMIT showGrid(key, head_);
  });
  connect(heads_, &QPushButton::clicked, this, [this] {
    QString key;
    if (QTreeWidgetItem* item = tree_->currentItem()) key = item->data(0, kKeyRole).toString();
    for (const Row& r : rows_)
      if (key.isEmpty() && r.section == Section::Scores) key = r.key;
    Q_EMIT showGrid(key, head_);
  });
  connect(attentionButton_, &QPushButton::clicked, this, [this] { Q_EMIT showAttention(head_); });
  connect(attribution_, &QPushButton::clicked, this, [this] { Q_EMIT showAttribution(); });
  connect(dynamics_, &QPushButton::clicked, this, [this] { Q_EMIT showDynamics(head_); });
  connect(ablate_, &QPushButton::clicked, this, [this] { Q_EMIT ablate(head_); });
  rebuild();
  showCircuit();
}

void HeadCard::setModel(const ModelInfo& info) {
  model_ = info;
  const QSignalBlocker b1(layer_), b2(headBox_);
  layer_->setRange(0, std::max(0, info.layers - 1));
  headBox_->setRange(0, std::max(0, info.heads - 1));
  if (hasHead_ && (head_.layer >= info.layers || head_.head >= info.heads)) hasHead_ = false;
  if (hasHead_) {  // the boxes clamped a head set while another (or no) model was loaded
    layer_->setValue(head_.layer);
    headBox_->setValue(head_.head);
  }
  rebuild();
}

void HeadCard::setRuns(const std::vector<AnalysisRun>& runs, const std::vector<AnalysisRun>& otherRuns) {
  runs_ = runs;
  others_ = otherRuns;
  rebuild();
}

void HeadCard::setPrompt(const PromptView& prompt) {
  dla_ = prompt.dlaHeads;
  dlaPiece_ = prompt.dlaPiece;
  rebuild();
}

void HeadCard::setTaskPrompts(const QStringList& prompts) {
  attention_->setTaskPrompts(prompts);
}

QString HeadCard::chosenPrompt() const {
  return attention_->chosenPrompt();
}

void HeadCard::setHead(HeadRef head, bool force) {
  const bool changed = !hasHead_ || !(head == head_);
  head_ = head;
  hasHead_ = true;
  {
    const QSignalBlocker b1(layer_), b2(headBox_);
    layer_->setValue(head.layer);
    headBox_->setValue(head.head);
  }
  if (changed) {
    circuit_ = HeadCircuit{};
    attention_->setHeads({head});
    showCircuit();
  }
  rebuild();
  if (changed || force) Q_EMIT circuitRequested(head_);
}

void HeadCard::setCircuit(const HeadCircuit& circuit) {
  if (!hasHead_ || !(circuit.head == head_)) return;
  circuit_ = circuit;
  if (circuit.patternError.isEmpty() && circuit.pattern.n > 0) attention_->setPattern(circuit.pattern);
  showCircuit();
}

std::vector<HeadCard::Row> HeadCard::rows(Section s) const {
  std::vector<Row> out;
  for (const Row& r : rows_)
    if (r.section == s) out.push_back(r);
  return out;
}

QString HeadCard::title() const {
  if (!hasHead_) return tr("No head chosen");
  return tr("Layer %1, head %2").arg(head_.layer).arg(head_.head);
}

void HeadCard::addRow(const Row& row, QTreeWidgetItem* parent, const QString& tip) {
  auto* item = new QTreeWidgetItem(parent);
  item->setText(0, row.result);
  item->setText(1, row.run);
  // A run that intervened on the head has its numbers in the result's text and tooltip, not in a column.
  item->setText(2, std::isnan(row.value) ? QStringLiteral("—") : QString::number(row.value, 'g', 4));
  item->setText(3, row.text.isEmpty() ? rankText(row.rank) : QString());
  item->setData(0, kKeyRole, row.key);
  for (int c = 0; c < 4; ++c)
    item->setToolTip(c, tip);
  item->setTextAlignment(2, Qt::AlignRight | Qt::AlignVCenter);
  if (const QColor bg = rankColor(row.rank); bg.isValid()) item->setBackground(3, bg);
  rows_.push_back(row);
}

void HeadCard::rebuild() {
  rows_.clear();
  tree_->clear();
  title_->setText(title());
  for (QPushButton* b : {heads_, attentionButton_, attribution_, dynamics_, ablate_})
    b->setEnabled(hasHead_);
  if (!hasHead_) {
    summary_->setText(
        tr("Click a head in any head view (or right-click → Head card) to see everything the "
           "session knows about it."));
    return;
  }
  const int nLive = model_.layers * model_.heads - static_cast<int>(model_.silent.size());
  const bool silent = std::find(model_.silent.begin(), model_.silent.end(), head_) != model_.silent.end();
  auto section = [this](const QString& name, const QString& tip) {
    auto* item = new QTreeWidgetItem(tree_);
    item->setText(0, name);
    item->setToolTip(0, tip);
    QFont f = item->font(0);
    f.setBold(true);
    item->setFont(0, f);
    item->setFirstColumnSpanned(true);
    item->setExpanded(true);
    return item;
  };
  QTreeWidgetItem* scores = section(tr("Scores in every grid of the session's runs"),
                                    tr("Rank among the live heads: 1 = the largest value"));
  QTreeWidgetItem* effects = section(
      tr("Effect of ablating or patching it"),
      tr("Grids whose unit is a difference (Δ, as their method's record declares), and the runs whose head "
         "options name this head, with their headline numbers"));
  QTreeWidgetItem* prompt = section(tr("On the current prompt"), tr("The Prompt tab's text"));
  QTreeWidgetItem* published = section(tr("Published results (same layer and head)"),
                                       tr("Imported runs; the rank is among that model's heads"));
  int topTen = 0, ranked = 0;
  for (const AnalysisRun& run : runs_) {
    if (imported(run)) continue;  // listed with the published results
    for (const HeadGrid& g : run.grids) {
      if (g.layers() != model_.layers || g.heads() != model_.heads) continue;
      Row r;
      r.section = isEffect(run, g) ? Section::Effects : Section::Scores;
      r.key = QString::fromStdString(run.id + "/" + g.id);
      r.result = gridName(g);
      r.run = QString::fromStdString(run.id);
      r.rank = liveRank(g, head_, model_.silent);
      r.value = r.rank.value;
      if (r.rank.ranked) {
        ++ranked;
        topTen += r.rank.rank <= std::max(1, r.rank.of / 10) ? 1 : 0;
      }
      addRow(r, r.section == Section::Effects ? effects : scores, tipOf(run, g));
    }
    for (const auto& [key, heads] : headListOptions(run)) {
      if (std::find(heads.begin(), heads.end(), head_) == heads.end()) continue;
      Row r;
      r.section = Section::Effects;
      const QStringList numbers = summaryNumbers(run.summary);
      // The accuracies first (with and without the intervention), else the first numbers.
      QStringList shown = numbers.filter(QRegularExpression("accuracy \\S+$"));
      if (shown.isEmpty()) shown = numbers;
      r.result = tr("%1 with %2 head(s): %3")
                     .arg(QString::fromStdString(key))
                     .arg(heads.size())
                     .arg(shown.mid(0, 2).join(" · "));
      r.run = QString::fromStdString(run.id);
      r.text = numbers.join(" · ");
      addRow(r, effects,
             "<b>" + runDisplayLabel(run).toHtmlEscaped() + "</b><br>" +
                 QString::fromStdString(key).toHtmlEscaped() + ": " +
                 QString::fromStdString(headsText(heads, ", ")) + "<br>" +
                 numbers.join("<br>").toHtmlEscaped());
    }
  }
  if (dla_.layers() == model_.layers && dla_.heads() == model_.heads && dla_.layers() > 0) {
    Row r;
    r.section = Section::Prompt;
    r.key = QString();
    r.result = tr("Direct logit attribution to “%1”").arg(dlaPiece_);
    r.run = tr("Prompt tab");
    r.rank = liveRank(dla_, head_, model_.silent);
    r.value = r.rank.value;
    addRow(
        r, prompt,
        tr("The head's W_O·z contribution to the predicted token's logit at the last position (Attribution "
           "tab)"));
  }
  for (const std::vector<AnalysisRun>* list : {&runs_, &others_})
    for (const AnalysisRun& run : *list) {
      if (!imported(run)) continue;
      for (const HeadGrid& g : run.grids) {
        if (head_.layer >= g.layers() || head_.head >= g.heads()) continue;
        Row r;
        r.section = Section::Published;
        r.key = QString::fromStdString(run.id + "/" + g.id);
        r.result = gridName(g);
        r.run = QString::fromStdString(shortName(run.provenance.model));
        r.rank = liveRank(g, head_);
        r.value = r.rank.value;
        addRow(r, published, tipOf(run, g));
      }
    }
  QTreeWidgetItem* ov =
      section(tr("OV circuit: the vocabulary's top promoted tokens per label"),
              tr("W_U·W_O·W_V of the head applied to each label token's embedding, as logits"));
  if (circuit_.n() > 0)
    for (const QString& line : promotedText().split('\n')) {
      auto* item = new QTreeWidgetItem(ov);
      item->setText(0, line);
      item->setToolTip(0, line);
      item->setFirstColumnSpanned(true);
    }
  else
    ov->setHidden(true);
  for (QTreeWidgetItem* s : {scores, effects, prompt, published}) {
    if (s->childCount() == 0) {
      auto* none = new QTreeWidgetItem(s);
      none->setText(0, tr("(none in this session)"));
      none->setForeground(0, QColor("#888"));
    }
  }
  QString text =
      tr("%1 · %2 live heads").arg(QString::fromStdString(shortName(model_.label.toStdString()))).arg(nLive);
  if (silent)
    text += tr(" · this head is silent (W_O all zero): it writes nothing");
  else if (ranked > 0)
    text += tr(" · in the top 10 % of %1 of its %2 rankings").arg(topTen).arg(ranked);
  summary_->setText(text);
  tree_->resizeColumnToContents(1);
}

QString HeadCard::promotedText() const {
  QStringList lines;
  for (int i = 0; i < circuit_.n() && i < static_cast<int>(circuit_.promoted.size()); ++i) {
    QStringList tokens;
    for (const TopToken& t : circuit_.promoted[static_cast<size_t>(i)])
      tokens << QStringLiteral("%1 (%2)").arg(t.piece.trimmed()).arg(t.logit, 0, 'f', 2);
    lines << QStringLiteral("“%1” → %2").arg(circuit_.labels[i].trimmed(), tokens.join(", "));
  }
  return lines.join("\n");
}

void HeadCard::showCircuit() {
  if (!hasHead_) {
    ovNote_->setText(QString());
    ov_->hide();
    return;
  }
  if (!circuit_.ovError.isEmpty()) {
    ovNote_->setText(tr("OV circuit: %1").arg(circuit_.ovError));
    ov_->hide();
    return;
  }
  if (circuit_.n() == 0) {
    ovNote_->setText(tr("OV circuit: computing…"));
    ov_->hide();
    return;
  }
  ov_->show();
  const int n = circuit_.n();
  HeadGrid g;
  g.id = "head_card.ov";
  g.name = tr("OV circuit of L%1.H%2 on the labels").arg(head_.layer).arg(head_.head).toStdString();
  g.unit = "logit";
  g.values.resize(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      g.values(i, j) = circuit_.ovAt(i, j);
  QStringList ticks;
  for (const QString& l : circuit_.labels)
    ticks << l.trimmed();
  ov_->setGrid(g);
  ov_->setAxisText(tr("promoted label"), ticks, tr("attended label"), ticks);
  ov_->plot()->xAxis->setTickLabelRotation(45);  // label words side by side overlap in a narrow card
  const QStringList labels = circuit_.labels;
  ov_->setCellText([labels](HeadRef cell, double v) {
    return QStringLiteral("attending to “%1” raises “%2” by %3")
        .arg(labels.value(cell.layer).trimmed(), labels.value(cell.head).trimmed())
        .arg(v, 0, 'f', 3);
  });
  ovNote_->setText(tr("W_U·W_O·W_V on the %1 labels of %2: %3 of %1 promote themselves most.")
                       .arg(n)
                       .arg(circuit_.task)
                       .arg(circuit_.selfCopies()));
  ovNote_->setToolTip(
      tr("Row: the label token the head attends to (its embedding through the layer's norm); column: the "
         "label whose logit the head's write W_O·W_V raises (through the final norm and W_U, biases left "
         "out). A copying head has its largest value on the diagonal."));
  rebuild();  // the tree's OV section lists the top promoted tokens
}

}  // namespace hs::gui
