#include "prompt_tab.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "head_grid_view.h"
#include "lens_view.h"
#include "plot_style.h"

namespace hs::gui {

namespace {
QString shown(const QString& piece) {
  QString s = piece;
  return s.replace("\n", "\\n").replace(" ", "·");
}
QTableWidgetItem* number(double v, int digits) {
  auto* item = new QTableWidgetItem(std::isfinite(v) ? QString::number(v, 'f', digits) : QString("—"));
  item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  return item;
}
}  // namespace

PromptTab::PromptTab(const QString& text, QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  edit_ = new QLineEdit(text);
  auto* run = new QPushButton("Run");
  apply_ = new QCheckBox("Apply interventions");
  apply_->setChecked(true);
  apply_->setToolTip(
      "On: the prediction, the logit lens and the attention patterns are computed with the "
      "checked interventions, beside the clean probabilities. Off: the clean model.");
  bar->addWidget(edit_, 1);
  bar->addWidget(apply_);
  bar->addWidget(run);
  layout->addLayout(bar);
  tokens_ = new QLabel;
  tokens_->setWordWrap(true);
  tokens_->setTextFormat(Qt::RichText);
  layout->addWidget(tokens_);
  warning_ = new QLabel;
  warning_->setWordWrap(true);
  warning_->setStyleSheet("color:#a04000");
  warning_->hide();
  layout->addWidget(warning_);
  state_ = new QLabel;
  state_->setStyleSheet("color:#555");
  layout->addWidget(state_);
  auto* split = new QSplitter(Qt::Horizontal);
  top_ = new QTableWidget(0, 6);
  top_->setHorizontalHeaderLabels({"id", "token", "logit", "prob", "clean prob", "Δ prob"});
  top_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  top_->horizontalHeader()->setStretchLastSection(true);
  top_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // The logit lens: a heatmap of every position at any prompt length, with what its colour shows; wide
  // cells that scroll sideways on request.
  auto* lensPanel = new QWidget;
  auto* lensLayout = new QVBoxLayout(lensPanel);
  lensLayout->setContentsMargins(0, 0, 0, 0);
  auto* lensBar = new QHBoxLayout;
  auto* colour = new QLabel("Colour");  // short: the lens's bar sets the tab's minimum width
  colour->setToolTip("What colours the logit lens's cells");
  lensBar->addWidget(colour);
  lensMeasure_ = new QComboBox;
  // Keeps the tab narrow (the window's minimum width ≤ 1280 px): long choices are elided in the box.
  lensMeasure_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  lensMeasure_->setMinimumContentsLength(12);
  lensMeasure_->addItem("top token's probability", TopProbability);
  lensMeasure_->addItem("answer's probability", AnswerProbability);
  lensMeasure_->addItem("clean top token's probability", CleanTopProbability);
  lensMeasure_->setToolTip(
      "What colours each cell (layer, position): the probability of the top token there; of the answer "
      "(the clean model's prediction at the last position); or of the clean model's top token at that cell");
  lensBar->addWidget(lensMeasure_);
  lensDiff_ = new QCheckBox("Δ vs clean");
  lensDiff_->setToolTip(
      "With interventions applied: the probability with them minus the probability without them");
  lensDiff_->setEnabled(false);
  lensBar->addWidget(lensDiff_);
  lensScrollBox_ = new QCheckBox("Scroll");
  lensScrollBox_->setToolTip(
      "Off: every position in view, cells as wide as the view allows (labels where they fit). On: cells "
      "wide enough for their top-token labels; the positions scroll under a fixed layer axis.");
  lensBar->addWidget(lensScrollBox_);
  lensBar->addStretch(1);
  lensLayout->addLayout(lensBar);
  // The heatmap's title stays in view while the map scrolls.
  lensTitle_ = new QLabel;
  lensTitle_->setFont(plotstyle::titleFont());
  lensTitle_->setWordWrap(true);
  lensLayout->addWidget(lensTitle_);
  lensView_ = new LensView;
  // Models with many layers scroll vertically; sideways, the view fits every position into its width (or,
  // with "Scroll", scrolls inside itself, keeping its layer axis in view).
  lensScroll_ = new QScrollArea;
  lensScroll_->setWidget(lensView_);
  lensScroll_->setWidgetResizable(true);
  lensScroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  lensScroll_->setFrameShape(QFrame::NoFrame);
  lensLayout->addWidget(lensScroll_, 1);
  top_->setMinimumWidth(260);
  split->addWidget(top_);
  split->addWidget(lensPanel);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addWidget(split, 1);
  connect(lensMeasure_, &QComboBox::currentIndexChanged, this, &PromptTab::showLens);
  connect(lensDiff_, &QCheckBox::toggled, this, &PromptTab::showLens);
  connect(lensScrollBox_, &QCheckBox::toggled, lensView_, &LensView::setScrolling);
  connect(run, &QPushButton::clicked, this, &PromptTab::runRequested);
  connect(edit_, &QLineEdit::returnPressed, this, &PromptTab::runRequested);
  connect(apply_, &QCheckBox::toggled, this, &PromptTab::runRequested);
}

bool PromptTab::applyInterventions() const {
  return apply_->isChecked();
}

namespace {
const char* measureKey(PromptTab::LensMeasure m) {
  return m == PromptTab::AnswerProbability     ? "answer"
         : m == PromptTab::CleanTopProbability ? "clean_top"
                                               : "top";
}
}  // namespace

nlohmann::json PromptTab::viewState() const {
  return {{"apply_interventions", apply_->isChecked()},
          {"lens_measure", measureKey(static_cast<LensMeasure>(lensMeasure_->currentData().toInt()))},
          {"lens_difference", lensDiff_->isChecked()},
          {"lens_scroll", lensScrollBox_->isChecked()}};
}

void PromptTab::restoreViewState(const nlohmann::json& j) {
  if (!j.is_object()) return;
  const QSignalBlocker block(apply_);  // the window runs the prompt once the whole session is restored
  if (auto it = j.find("apply_interventions"); it != j.end() && it->is_boolean())
    apply_->setChecked(it->get<bool>());
  if (auto it = j.find("lens_measure"); it != j.end() && it->is_string())
    for (LensMeasure m : {TopProbability, AnswerProbability, CleanTopProbability})
      if (it->get<std::string>() == measureKey(m)) lensMeasure_->setCurrentIndex(lensMeasure_->findData(m));
  if (auto it = j.find("lens_difference"); it != j.end() && it->is_boolean())
    lensDiff_->setChecked(it->get<bool>());
  if (auto it = j.find("lens_scroll"); it != j.end() && it->is_boolean())
    lensScrollBox_->setChecked(it->get<bool>());
}

QString PromptTab::warning() const {
  return warning_->isHidden() ? QString() : warning_->text();
}

void PromptTab::setView(const PromptView& v) {
  QString html;
  for (int i = 0; i < v.pieces.size(); ++i)
    html += QString("<span style='background:%1'>%2<sub>%3</sub></span> ")
                .arg(i % 2 ? "#dde8f5" : "#f5e6d3", v.pieces[i].toHtmlEscaped().replace(" ", "&middot;"))
                .arg(v.ids[static_cast<size_t>(i)]);
  tokens_->setText(html);
  warning_->setVisible(!v.unknownWords.isEmpty());
  warning_->setText(QString("Not in the model's vocabulary (read as its unknown token): %1")
                        .arg(v.unknownWords.join(", ")));
  const bool intervened = v.interventions > 0;
  state_->setText(
      intervened
          ? QString("With %1 intervention(s); “clean prob” is the model without them.").arg(v.interventions)
          : QString("The clean model (no interventions applied)."));
  top_->setColumnHidden(4, !intervened);
  top_->setColumnHidden(5, !intervened);
  top_->setRowCount(static_cast<int>(v.top.size()));
  for (int r = 0; r < static_cast<int>(v.top.size()); ++r) {
    const TopToken& t = v.top[static_cast<size_t>(r)];
    top_->setItem(r, 0, number(t.id, 0));
    top_->setItem(r, 1, new QTableWidgetItem(shown(t.piece)));
    top_->setItem(r, 2, number(t.logit, 3));
    top_->setItem(r, 3, number(t.prob, 4));
    const double clean =
        r < static_cast<int>(v.topCleanProb.size()) ? v.topCleanProb[static_cast<size_t>(r)] : NAN;
    top_->setItem(r, 4, number(clean, 4));
    top_->setItem(r, 5, number(t.prob - clean, 4));
  }
  view_ = v;
  lensDiff_->setEnabled(intervened);
  showLens();
}

LensMap PromptTab::lensMap(const PromptView& v, LensMeasure measure, bool difference) {
  LensMap map;
  map.pieces = v.pieces;
  map.layers = static_cast<int>(v.lensGrid.size());
  const int n = static_cast<int>(v.pieces.size());
  auto gridAt = [](const std::vector<std::vector<double>>& g, int l, int p) {
    return l < static_cast<int>(g.size()) && p < static_cast<int>(g[static_cast<size_t>(l)].size())
               ? g[static_cast<size_t>(l)][static_cast<size_t>(p)]
               : NAN;
  };
  const bool intervened = v.interventions > 0;
  difference = difference && intervened;
  const QString answer = QString("'%1'").arg(shown(v.lensAnswerPiece));
  const QString what = measure == AnswerProbability     ? "p(answer " + answer + ")"
                       : measure == CleanTopProbability ? QString("p(clean top token)")
                                                        : QString("p(top token)");
  map.valueLabel = difference ? "Δ " + what : what;
  map.difference = difference;
  map.title =
      QString("Logit lens: %1 after each layer at every position%2")
          .arg(difference ? what + " with − without the interventions" : what)
          .arg(intervened && !difference ? QString(" (%1 intervention(s))").arg(v.interventions) : QString());
  for (int l = 0; l < map.layers; ++l) {
    const auto& row = v.lensGrid[static_cast<size_t>(l)];
    for (int p = 0; p < n; ++p) {
      LensCell c;
      if (p >= static_cast<int>(row.size())) {
        map.cells.push_back({QString(), NAN, NAN, QString()});
        continue;
      }
      const TopToken& top = row[static_cast<size_t>(p)];
      const TopToken* clean = l < static_cast<int>(v.cleanLensGrid.size()) &&
                                      p < static_cast<int>(v.cleanLensGrid[static_cast<size_t>(l)].size())
                                  ? &v.cleanLensGrid[static_cast<size_t>(l)][static_cast<size_t>(p)]
                                  : nullptr;
      c.top = top.piece;
      c.prob = top.prob;
      double value = top.prob, cleanValue = clean ? clean->prob : NAN;
      if (measure == AnswerProbability) {
        value = gridAt(v.lensAnswerProb, l, p);
        cleanValue = gridAt(v.cleanLensAnswerProb, l, p);
      } else if (measure == CleanTopProbability) {
        value = gridAt(v.lensCleanTopProb, l, p);
      }
      c.value = difference ? value - cleanValue : value;
      QStringList detail;
      if (measure != TopProbability) detail << QString("%1 %2").arg(what).arg(value, 0, 'f', 4);
      if (intervened && clean)
        detail << QString("clean: top '%1' %2").arg(shown(clean->piece)).arg(clean->prob, 0, 'f', 4);
      if (difference) detail << QString("Δ %1").arg(c.value, 0, 'f', 4);
      c.detail = detail.join(" · ");
      map.cells.push_back(c);
    }
  }
  return map;
}

void PromptTab::showLens() {
  const auto measure = static_cast<LensMeasure>(lensMeasure_->currentData().toInt());
  LensMap map = lensMap(view_, measure, lensDiff_->isChecked());
  lensTitle_->setText(map.title);
  map.title.clear();       // shown above the scroll area instead
  lensView_->setMap(map);  // opens at the last positions
}

AttributionTab::AttributionTab(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  note_ = new QLabel("Run a prompt (Prompt tab) to see which heads and MLPs write its predicted token.");
  note_->setWordWrap(true);
  layout->addWidget(note_);
  auto* split = new QSplitter(Qt::Horizontal);
  grid_ = new HeadGridView;
  ranked_ = new QTableWidget(0, 2);
  ranked_->setHorizontalHeaderLabels({"component", "logit contribution"});
  ranked_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
  ranked_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  ranked_->verticalHeader()->setVisible(false);  // the rank is the row's place; its number cost the room
  ranked_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  // Both columns whole at any window width: the component's name, and the value under its full header.
  const QFontMetrics fm(ranked_->font()), hfm(ranked_->horizontalHeader()->font());
  const int nameWidth = std::max({fm.horizontalAdvance("head L99.H99"), fm.horizontalAdvance("embeddings"),
                                  hfm.horizontalAdvance("component")});
  const int valueWidth =
      std::max(fm.horizontalAdvance("−999.9999"), hfm.horizontalAdvance("logit contribution"));
  ranked_->setMinimumWidth(nameWidth + valueWidth + 4 * fm.horizontalAdvance("  ") +
                           ranked_->verticalScrollBar()->sizeHint().width() + 2 * ranked_->frameWidth() + 24);
  split->addWidget(grid_);
  split->addWidget(ranked_);
  split->setCollapsible(1, false);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);
}

void AttributionTab::setView(const PromptView& v) {
  if (!v.dlaError.isEmpty() || v.dlaHeads.layers() == 0) {
    note_->setText(v.dlaError.isEmpty() ? QString("No attribution.") : v.dlaError);
    ranked_->setRowCount(0);
    return;
  }
  note_->setText(
      QString("Contribution of every head (map) and MLP (list) to the logit of '%1' (%2) at the "
              "last position%3; embeddings %4, total %5.")
          .arg(shown(v.dlaPiece))
          .arg(v.dlaLogit, 0, 'f', 3)
          .arg(v.interventions ? QString(", with %1 intervention(s)").arg(v.interventions) : QString())
          .arg(v.dlaEmbed, 0, 'f', 3)
          .arg(v.dlaLogit, 0, 'f', 3));
  grid_->setGrid(v.dlaHeads);
  std::vector<std::pair<QString, double>> parts;
  for (int l = 0; l < v.dlaHeads.layers(); ++l)
    for (int h = 0; h < v.dlaHeads.heads(); ++h)
      parts.push_back({QString("head L%1.H%2").arg(l).arg(h), v.dlaHeads.values(l, h)});
  for (size_t l = 0; l < v.dlaMlp.size(); ++l)
    parts.push_back({QString("MLP L%1").arg(l), v.dlaMlp[l]});
  parts.push_back({"embeddings", v.dlaEmbed});
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return std::abs(a.second) > std::abs(b.second); });
  ranked_->setRowCount(static_cast<int>(parts.size()));
  for (int r = 0; r < static_cast<int>(parts.size()); ++r) {
    ranked_->setItem(r, 0, new QTableWidgetItem(parts[static_cast<size_t>(r)].first));
    ranked_->setItem(r, 1, number(parts[static_cast<size_t>(r)].second, 4));
  }
}

}  // namespace hs::gui
