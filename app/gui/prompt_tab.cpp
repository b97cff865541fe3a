#include "prompt_tab.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

#include "head_grid_view.h"

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
  lens_ = new QTableWidget(0, 0);
  lens_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  lens_->setToolTip("Logit lens: the top token after each layer (rows) at every position (columns)");
  split->addWidget(top_);
  split->addWidget(lens_);
  split->setStretchFactor(0, 2);
  split->setStretchFactor(1, 3);
  layout->addWidget(split, 1);
  connect(run, &QPushButton::clicked, this, &PromptTab::runRequested);
  connect(edit_, &QLineEdit::returnPressed, this, &PromptTab::runRequested);
  connect(apply_, &QCheckBox::toggled, this, &PromptTab::runRequested);
}

bool PromptTab::applyInterventions() const {
  return apply_->isChecked();
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
  // The logit lens grid: layers down, positions across; each cell the top token and its probability.
  const int layers = static_cast<int>(v.lensGrid.size());
  const int n = layers ? static_cast<int>(v.lensGrid.front().size()) : 0;
  lens_->setRowCount(layers);
  lens_->setColumnCount(n);
  QStringList header;
  for (int p = 0; p < n; ++p)
    header << QString("%1 %2").arg(p).arg(p < v.pieces.size() ? shown(v.pieces[p]) : QString());
  lens_->setHorizontalHeaderLabels(header);
  QStringList rows;
  for (int l = 0; l < layers; ++l)
    rows << QString("after L%1").arg(l);
  lens_->setVerticalHeaderLabels(rows);
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < n; ++p) {
      const TopToken& t = v.lensGrid[static_cast<size_t>(l)][static_cast<size_t>(p)];
      auto* item = new QTableWidgetItem(shown(t.piece));
      item->setToolTip(QString("after layer %1 at position %2 ('%3'): '%4' p=%5")
                           .arg(l)
                           .arg(p)
                           .arg(v.pieces.value(p), t.piece)
                           .arg(t.prob, 0, 'f', 3));
      item->setBackground(QColor::fromHsvF(0.6, std::clamp(t.prob, 0.0, 1.0) * 0.6, 1.0));
      lens_->setItem(l, p, item);
    }
  lens_->resizeColumnsToContents();
  if (n > 0) lens_->scrollToItem(lens_->item(0, n - 1));
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
  ranked_->horizontalHeader()->setStretchLastSection(true);
  ranked_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  split->addWidget(grid_);
  split->addWidget(ranked_);
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
