#include "evaluation_dock.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <cmath>

#include "results/results_json.h"
#include "results/table_columns.h"
#include "util/error.h"

namespace hs::gui {

EvalResult evalResultOf(const AnalysisRun& run) {
  const nlohmann::json& s = run.summary;
  auto numbers = [](const nlohmann::json& e) {
    return EvalNumbers{e.at("n").get<int>(), doubleFromJson(e.at("accuracy"), "accuracy"),
                       doubleFromJson(e.at("tr_ratio"), "tr_ratio")};
  };
  EvalResult r;
  try {
    r.task = QString::fromStdString(run.provenance.task);
    r.runId = QString::fromStdString(run.id);
    r.icl = numbers(s.at("icl"));
    r.iclIntervened = numbers(s.at("icl_intervened"));
    r.zeroShot = numbers(s.at("zero_shot"));
    r.zeroShotIntervened = numbers(s.at("zero_shot_intervened"));
    r.nAblated = s.at("n_ablated").get<int>();
    r.nPatched = s.at("n_patched").get<int>();
    const char* conds[4] = {"icl", "icl_intervened", "zero_shot", "zero_shot_intervened"};
    for (int i = 0; i < 4; ++i) {
      r.lo[i] = doubleFromJson(s.at(conds[i]).at("accuracy_lo"), "accuracy_lo");
      r.hi[i] = doubleFromJson(s.at(conds[i]).at("accuracy_hi"), "accuracy_hi");
    }
    if (s.contains("random_control")) {
      const nlohmann::json& c = s["random_control"];
      r.randomDraws = c.at("draws").get<int>();
      r.randomAccuracy = doubleFromJson(c.at("accuracy"), "accuracy");
      r.randomLo = doubleFromJson(c.at("accuracy_lo"), "accuracy_lo");
      r.randomHi = doubleFromJson(c.at("accuracy_hi"), "accuracy_hi");
    }
  } catch (const nlohmann::json::exception& e) {
    fail("run ", run.id, ": not an evaluate summary (", e.what(), ")");
  }
  for (const Table& t : run.tables)
    if (t.id == "evaluate.prompts") {
      // By column name: the table's columns are the method's to order.
      auto column = [&](const char* name) {
        const int c = columnIndex(t, name);
        if (c < 0) fail("evaluate.prompts has no column ", name);
        return static_cast<size_t>(c);
      };
      const size_t set = column("set"), query = column("query"), answer = column("answer"),
                   before = column("prediction"), after = column("prediction_after"),
                   pBefore = column("p_answer"), pAfter = column("p_answer_after");
      auto text = [](const nlohmann::json& j) { return QString::fromStdString(j.get<std::string>()); };
      for (const auto& row : t.rows)
        r.prompts.push_back({text(row.at(set)), text(row.at(query)), text(row.at(answer)),
                             text(row.at(before)), text(row.at(after)),
                             doubleFromJson(row.at(pBefore), "p_answer"),
                             doubleFromJson(row.at(pAfter), "p_answer_after")});
    }
  return r;
}

namespace {
QString pct(double v) {
  return std::isfinite(v) ? QString::number(100.0 * v, 'f', 1) + " %" : QString("—");
}
QString delta(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "—";
  const double d = 100.0 * (b - a);
  return QString("%1%2 pp").arg(d > 0 ? "+" : "").arg(d, 0, 'f', 1);
}
QString interval(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  return QString("95 % interval %1 – %2").arg(pct(lo), pct(hi));
}
std::vector<InterventionEntry> enabledOnly(const std::vector<InterventionEntry>& entries) {
  std::vector<InterventionEntry> out;
  for (const InterventionEntry& e : entries)
    if (e.enabled) out.push_back(e);
  return out;
}
}  // namespace

EvaluationDock::EvaluationDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  evaluate_ = new QPushButton("Evaluate with interventions");
  evaluate_->setToolTip(
      "Runs the current task on the worker: ICL prompts with the checked ablations, "
      "zero-shot prompts with the checked patches and steering (Ctrl+E)");
  draws_ = new QSpinBox;
  draws_->setRange(0, 50);
  draws_->setValue(5);
  draws_->setPrefix("random: ");  // short: the dock must fit beside the tabs at 1280 px
  draws_->setSuffix(" draws");
  draws_->setToolTip(
      "Random-heads control: also ablate as many random live heads (drawn from the others), this many "
      "times: how much "
      "of the drop any heads would cause");
  bar->addWidget(evaluate_, 1);
  bar->addWidget(draws_);
  layout->addLayout(bar);
  table_ = new QTableWidget(5, 3);
  table_->setHorizontalHeaderLabels({"baseline", "intervened", "Δ"});
  table_->setVerticalHeaderLabels(
      {"ICL accuracy", "ICL TR ratio", "0-shot accuracy", "0-shot TR ratio", "random heads"});
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setMinimumHeight(170);
  layout->addWidget(table_);
  stale_ = new QLabel;
  stale_->setWordWrap(true);
  stale_->setStyleSheet("color:#a04000");
  stale_->hide();
  layout->addWidget(stale_);
  note_ = new QLabel("Not evaluated yet.");
  note_->setWordWrap(true);
  note_->setStyleSheet("color:#555");
  layout->addWidget(note_);
  // Five narrow columns fit the dock's width without scrolling: the set, the answer and the probabilities
  // whole, the query and the prediction share what is left, elided at their start (the query's end is the
  // word asked about); every cell's whole text is in its tooltip, and every column of the evaluate.prompts
  // table is on the Prompts tab ("All columns").
  prompts_ = new QTableWidget(0, 5);
  prompts_->setHorizontalHeaderLabels({"set", "query", "answer", "prediction", "p(answer)"});
  prompts_->horizontalHeaderItem(3)->setToolTip("the top token before → after the interventions");
  prompts_->horizontalHeaderItem(4)->setToolTip("the answer's probability before → after the interventions");
  prompts_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
  for (int c : {0, 2, 4})  // "ICL" / "0-shot", the answer word and "0.41 → 0.12": short, always whole
    prompts_->horizontalHeader()->setSectionResizeMode(c, QHeaderView::ResizeToContents);
  prompts_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  prompts_->setTextElideMode(Qt::ElideLeft);
  prompts_->setWordWrap(false);
  prompts_->verticalHeader()->hide();
  prompts_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  prompts_->setToolTip(
      "Every prompt: the prediction and the answer's probability before and after the "
      "interventions (red: broken by them, green: fixed)");
  auto* promptsBar = new QHBoxLayout;
  promptsBar->addWidget(new QLabel("Every prompt"), 1);
  allColumns_ = new QPushButton("All columns…");
  allColumns_->setToolTip("The evaluation's per-prompt table on the Prompts tab: filter, sort, export");
  allColumns_->setEnabled(false);
  promptsBar->addWidget(allColumns_);
  layout->addLayout(promptsBar);
  layout->addWidget(prompts_, 1);
  connect(allColumns_, &QPushButton::clicked, this, [this] {
    if (result_) Q_EMIT promptsTableRequested(result_->runId);
  });
  connect(evaluate_, &QPushButton::clicked, this, &EvaluationDock::evaluateRequested);
}

int EvaluationDock::randomDraws() const {
  return draws_->value();
}

QString EvaluationDock::note() const {
  return note_->text();
}

void EvaluationDock::setResult(const EvalResult& r) {
  result_ = r;
  const double rows[4][2] = {{r.icl.accuracy, r.iclIntervened.accuracy},
                             {r.icl.trRatio, r.iclIntervened.trRatio},
                             {r.zeroShot.accuracy, r.zeroShotIntervened.accuracy},
                             {r.zeroShot.trRatio, r.zeroShotIntervened.trRatio}};
  const int condOf[4][2] = {{0, 1}, {-1, -1}, {2, 3}, {-1, -1}};  // which accuracy has an interval
  for (int i = 0; i < 4; ++i) {
    table_->setItem(i, 0, new QTableWidgetItem(pct(rows[i][0])));
    table_->setItem(i, 1, new QTableWidgetItem(pct(rows[i][1])));
    table_->setItem(i, 2, new QTableWidgetItem(delta(rows[i][0], rows[i][1])));
    for (int c = 0; c < 2; ++c)
      if (condOf[i][c] >= 0) table_->item(i, c)->setToolTip(interval(r.lo[condOf[i][c]], r.hi[condOf[i][c]]));
  }
  // The control: the same number of random heads; Δ against the chosen heads' result.
  table_->setItem(4, 0, new QTableWidgetItem(r.randomDraws ? QString("%1 draws").arg(r.randomDraws) : "—"));
  table_->setItem(4, 1, new QTableWidgetItem(pct(r.randomAccuracy)));
  table_->setItem(4, 2, new QTableWidgetItem(delta(r.icl.accuracy, r.randomAccuracy)));
  table_->item(4, 1)->setToolTip(r.randomDraws
                                     ? QString("ICL accuracy with %1 random heads ablated, mean of %2 "
                                               "draws; 2.5–97.5 %% of the draws: %3 – %4")
                                           .arg(r.nAblated)
                                           .arg(r.randomDraws)
                                           .arg(pct(r.randomLo), pct(r.randomHi))
                                     : QString("no random control (set the draws above)"));
  for (int i = 0; i < 5; ++i)
    for (int c = 0; c < 3; ++c)
      table_->item(i, c)->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
  note_->setText(QString("%1 · %2 prompts · %3 heads ablated on ICL prompts, %4 heads patched/steered on "
                         "zero-shot prompts · ICL accuracy %5 → %6 (%7)")
                     .arg(r.task.toHtmlEscaped())
                     .arg(r.icl.n)
                     .arg(r.nAblated)
                     .arg(r.nPatched)
                     .arg(pct(r.icl.accuracy), pct(r.iclIntervened.accuracy), interval(r.lo[1], r.hi[1])));
  allColumns_->setEnabled(true);
  prompts_->setRowCount(static_cast<int>(r.prompts.size()));
  for (int i = 0; i < static_cast<int>(r.prompts.size()); ++i) {
    const EvalResult::PromptRow& p = r.prompts[static_cast<size_t>(i)];
    const QStringList cells = {p.set == "zero_shot" ? "0-shot"
                               : p.set == "icl"     ? "ICL"
                                                    : p.set,
                               p.query, p.answer, p.before == p.after ? p.before : p.before + " → " + p.after,
                               QString("%1 → %2").arg(p.pBefore, 0, 'f', 2).arg(p.pAfter, 0, 'f', 2)};
    for (int c = 0; c < cells.size(); ++c) {
      auto* item = new QTableWidgetItem(cells[c]);
      item->setToolTip(c == 4 ? QString("%1 → %2").arg(p.pBefore, 0, 'f', 4).arg(p.pAfter, 0, 'f', 4)
                              : cells[c]);
      prompts_->setItem(i, c, item);
    }
    const bool rightBefore = p.before.trimmed() == p.answer.trimmed();
    const bool rightAfter = p.after.trimmed() == p.answer.trimmed();
    if (rightBefore != rightAfter)
      for (int c = 0; c < cells.size(); ++c)
        prompts_->item(i, c)->setBackground(rightAfter ? QColor("#dff0d8") : QColor("#f8d7da"));
  }
  updateStale();
}

void EvaluationDock::clearResult() {
  result_.reset();
  for (int i = 0; i < table_->rowCount(); ++i)
    for (int c = 0; c < table_->columnCount(); ++c)
      delete table_->takeItem(i, c);
  prompts_->setRowCount(0);
  allColumns_->setEnabled(false);
  note_->setText("Not evaluated yet.");
  updateStale();
}

void EvaluationDock::setCurrent(const QString& taskJson, const std::vector<InterventionEntry>& entries) {
  currentTask_ = taskJson;
  currentEntries_ = enabledOnly(entries);
  updateStale();
}

void EvaluationDock::updateStale() {
  staleReason_.clear();
  if (result_ && !currentTask_.isEmpty()) {
    if (result_->taskJson != currentTask_)
      staleReason_ = "the task changed since this evaluation";
    else if (result_->entries != currentEntries_)
      staleReason_ = "the interventions changed since this evaluation";
  }
  stale_->setVisible(!staleReason_.isEmpty());
  stale_->setText("Stale: " + staleReason_ + ". Evaluate again for current numbers.");
  table_->setEnabled(staleReason_.isEmpty());
  prompts_->setEnabled(staleReason_.isEmpty());
}

}  // namespace hs::gui
