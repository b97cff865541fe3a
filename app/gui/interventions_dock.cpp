#include "interventions_dock.h"

#include "eliding_label.h"

#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QRegularExpression>

#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

namespace hs::gui {

InterventionsDock::InterventionsDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  // Short, so that it wraps into few lines in a narrow dock; the rest in its tooltip.
  auto* hint = new WrappedLabel("Right-click heads (Heads tab) to add; double-click an entry to edit it.");
  hint->setToolTip(
      "Checked entries apply to the Prompt and Attention tabs and to “Evaluate with interventions”. "
      "Double-click an entry for its parameters (source, scale, layer, positions).");
  hint->setObjectName("InterventionsHint");
  hint->setStyleSheet("color:#555");
  layout->addWidget(hint);
  list_ = new QListWidget;
  list_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  layout->addWidget(list_, 1);
  auto* buttons = new QHBoxLayout;
  auto* remove = new QPushButton("Remove");
  auto* clearAll = new QPushButton("Clear");
  buttons->addWidget(remove);
  buttons->addWidget(clearAll);
  buttons->addStretch(1);
  layout->addLayout(buttons);
  connect(remove, &QPushButton::clicked, this, [this] {
    for (int r = list_->count() - 1; r >= 0; --r)
      if (list_->item(r)->isSelected()) removeRow(r);
  });
  connect(clearAll, &QPushButton::clicked, this, &InterventionsDock::clear);
  connect(list_, &QListWidget::itemChanged, this, [this](QListWidgetItem* item) {
    const int r = list_->row(item);
    if (r < 0 || r >= static_cast<int>(entries_.size())) return;
    const bool on = item->checkState() == Qt::Checked;
    if (entries_[static_cast<size_t>(r)].enabled == on) return;
    entries_[static_cast<size_t>(r)].enabled = on;
    if (on) {
      const QStringList off = untickOthers(r);
      if (!off.isEmpty())
        Q_EMIT notice(QString("%1 replaces %2 (one intervention per head)")
                          .arg(interventionLabel(entries_[static_cast<size_t>(r)]), off.join(", ")));
    }
    Q_EMIT changed();
  });
  connect(list_, &QListWidget::itemDoubleClicked, this,
          [this](QListWidgetItem* item) { editParameters(list_->row(item)); });
}

void InterventionsDock::append(const InterventionEntry& e) {
  const QSignalBlocker block(list_);
  auto* item = new QListWidgetItem(interventionLabel(e));
  item->setToolTip(interventionLabel(e));
  item->setFlags(item->flags() | Qt::ItemIsUserCheckable);
  item->setCheckState(e.enabled ? Qt::Checked : Qt::Unchecked);
  list_->addItem(item);
  entries_.push_back(e);
}

QStringList InterventionsDock::untickOthers(int row) {
  QStringList off;
  const HeadRef head = entries_[static_cast<size_t>(row)].head;
  for (size_t i = 0; i < entries_.size(); ++i)
    if (static_cast<int>(i) != row && entries_[i].enabled && entries_[i].head == head) {
      entries_[i].enabled = false;
      const QSignalBlocker block(list_);
      list_->item(static_cast<int>(i))->setCheckState(Qt::Unchecked);
      off << interventionLabel(entries_[i]);
    }
  return off;
}

void InterventionsDock::add(InterventionKind kind, const std::vector<HeadRef>& heads) {
  bool any = false;
  QStringList replaced;
  for (const HeadRef& h : heads) {
    int row = -1;
    for (size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].kind == kind && entries_[i].head == h) row = static_cast<int>(i);
    if (row < 0) {
      InterventionEntry e;
      e.kind = kind;
      e.head = h;
      append(e);
      row = static_cast<int>(entries_.size()) - 1;
      // The kind's shared parameters (one patch source, one steering source, scale and layer).
      for (size_t i = 0; i + 1 < entries_.size(); ++i)
        if (entries_[i].kind == kind) {
          shareParameters(row, entries_[i]);
          break;
        }
      any = true;
    } else if (!entries_[static_cast<size_t>(row)].enabled) {
      const QSignalBlocker block(list_);
      entries_[static_cast<size_t>(row)].enabled = true;
      list_->item(row)->setCheckState(Qt::Checked);
      any = true;
    }
    const QStringList off = untickOthers(row);
    if (!off.isEmpty()) {
      replaced << off;
      any = true;
    }
  }
  if (!replaced.isEmpty())
    Q_EMIT notice(QString("%1 replaces %2 (one intervention per head; the other stays in the list, unticked)")
                      .arg(kindLabel(kind), replaced.join(", ")));
  if (any) Q_EMIT changed();
}

int InterventionsDock::enabledHeads() const {
  std::set<HeadRef> heads;
  for (const InterventionEntry& e : entries_)
    if (e.enabled) heads.insert(e.head);
  return static_cast<int>(heads.size());
}

void InterventionsDock::setParameters(int row, const InterventionEntry& params) {
  if (row < 0 || row >= static_cast<int>(entries_.size())) return;
  InterventionEntry e = entries_[static_cast<size_t>(row)];
  const InterventionEntry defaults;
  const bool steer = e.kind == InterventionKind::Steer;
  e.positions = params.positions;
  e.scale = steer ? params.scale : defaults.scale;
  e.layer = steer ? params.layer : defaults.layer;
  e.source = e.hasSource() ? params.source : defaults.source;
  e.sourcePrompt = e.source == VectorSource::Prompt ? params.sourcePrompt : defaults.sourcePrompt;
  e.sourceText = e.source == VectorSource::Text ? params.sourceText : defaults.sourceText;
  if (e == entries_[static_cast<size_t>(row)]) return;
  entries_[static_cast<size_t>(row)] = e;
  relabel(row);
  // The other entries of the kind take the shared parameters, so the evaluation can run them all.
  int shared = 0;
  if (e.hasSource())
    for (size_t i = 0; i < entries_.size(); ++i) {
      if (static_cast<int>(i) == row || entries_[i].kind != e.kind) continue;
      const InterventionEntry before = entries_[i];
      shareParameters(static_cast<int>(i), e);
      shared += entries_[i] != before ? 1 : 0;
    }
  if (shared > 0)
    Q_EMIT notice(QString("%1 other %2 entr%3 now take%4 the same %5 (the evaluation %6)")
                      .arg(shared)
                      .arg(kindLabel(e.kind))
                      .arg(shared == 1 ? "y" : "ies")
                      .arg(shared == 1 ? "s" : "")
                      .arg(e.kind == InterventionKind::Steer ? "source, scale and layer" : "source")
                      .arg(e.kind == InterventionKind::Steer ? "steers every head from one source"
                                                             : "patches every head from one source"));
  Q_EMIT changed();
}

void InterventionsDock::shareParameters(int row, const InterventionEntry& from) {
  InterventionEntry& e = entries_[static_cast<size_t>(row)];
  if (!e.hasSource() || e.kind != from.kind) return;
  e.source = from.source;
  e.sourcePrompt = from.sourcePrompt;
  e.sourceText = from.sourceText;
  if (e.kind == InterventionKind::Steer) {
    e.scale = from.scale;
    e.layer = from.layer;
  }
  relabel(row);
}

void InterventionsDock::relabel(int row) {
  const QString label = interventionLabel(entries_[static_cast<size_t>(row)]);
  const QSignalBlocker block(list_);
  list_->item(row)->setText(label);
  list_->item(row)->setToolTip(label);
}

void InterventionsDock::editParameters(int row) {
  if (row < 0 || row >= static_cast<int>(entries_.size())) return;
  InterventionForm form(entries_[static_cast<size_t>(row)], layers_, prompts_, this);
  int others = 0;
  for (size_t i = 0; i < entries_.size(); ++i)
    others +=
        static_cast<int>(i) != row && entries_[i].kind == entries_[static_cast<size_t>(row)].kind ? 1 : 0;
  form.setSharedWith(entries_[static_cast<size_t>(row)].hasSource() ? others : 0);
  while (form.exec() == QDialog::Accepted) {
    InterventionEntry e;
    QString error;
    if (form.read(&e, &error)) {
      setParameters(row, e);
      return;
    }
    QMessageBox::warning(this, "Intervention", error);
  }
}

InterventionForm::InterventionForm(const InterventionEntry& entry, int layers, const QStringList& prompts,
                                   QWidget* parent)
    : QDialog(parent), entry_(entry), prompts_(prompts) {
  setWindowTitle("Intervention: " + interventionLabel(entry));
  auto* form = new QFormLayout(this);
  const bool steer = entry.kind == InterventionKind::Steer;

  source_ = new QComboBox(this);
  for (VectorSource s :
       {VectorSource::CleanMean, VectorSource::Mean, VectorSource::Prompt, VectorSource::Text})
    if (steer || s != VectorSource::Mean)  // a patch with a corpus mean is a mean ablation at N
      source_->addItem(sourceLabel(s), static_cast<int>(s));
  source_->setToolTip(
      "Where the head's vector comes from: its output z at the last position averaged over the task's ICL "
      "prompts (clean ICL mean), its mean over a neutral text (corpus mean), its z at the last position of "
      "one ICL prompt, or of a text you type");
  prompt_ = new QSpinBox(this);
  prompt_->setRange(0, prompts.isEmpty() ? 100000 : static_cast<int>(prompts.size()) - 1);
  prompt_->setValue(entry.sourcePrompt);
  prompt_->setToolTip("The task's ICL prompt (0-based, as in the evaluation's per-prompt table)");
  promptPreview_ = new QLabel(this);
  promptPreview_->setWordWrap(true);
  promptPreview_->setStyleSheet("color:#555");
  text_ = new QLineEdit(entry.sourceText, this);
  text_->setPlaceholderText("a prompt; the head's z at its last token");
  scale_ = new QDoubleSpinBox(this);
  scale_->setRange(-100, 100);
  scale_->setDecimals(2);
  scale_->setValue(entry.scale);
  scale_->setToolTip("Steering adds scale × the source vector at the chosen positions");
  layer_ = new QSpinBox(this);
  layer_->setRange(-1, layers > 0 ? layers - 1 : 100000);
  layer_->setSpecialValueText("the head's own hook_z");
  layer_->setPrefix("residual before layer ");
  layer_->setValue(entry.layer);
  layer_->setToolTip(
      "Where steering adds: the head's own output z, or its write W_O z into the residual stream before "
      "layer L (hook_resid_pre), as function-vector steering does");
  positions_ = new QLineEdit(this);
  QStringList p;
  for (int i : entry.positions)
    p << QString::number(i);
  positions_->setText(p.join(","));
  positions_->setPlaceholderText(entry.hasSource() ? "default: -1 (the last position, N)"
                                                   : "default: every position");
  positions_->setToolTip(
      "Token positions, comma-separated; negative counts from the end (-1 = N). The "
      "Prompt and Attention tabs use them; the evaluation needs the default.");
  // Fields the kind does not take stay hidden (their values are the defaults read() keeps).
  for (QWidget* w :
       {static_cast<QWidget*>(source_), static_cast<QWidget*>(prompt_), static_cast<QWidget*>(promptPreview_),
        static_cast<QWidget*>(text_), static_cast<QWidget*>(scale_), static_cast<QWidget*>(layer_)})
    w->hide();
  if (entry.hasSource()) {
    for (QWidget* w :
         {static_cast<QWidget*>(source_), static_cast<QWidget*>(prompt_), static_cast<QWidget*>(text_)})
      w->show();
    form->addRow("Vector source", source_);
    form->addRow("ICL prompt", prompt_);
    form->addRow("", promptPreview_);
    form->addRow("Text", text_);
  }
  if (steer) {
    scale_->show();
    layer_->show();
    form->addRow("Steering scale", scale_);
    form->addRow("Add at", layer_);
  }
  form->addRow("Positions", positions_);
  shared_ = new QLabel(this);
  shared_->setWordWrap(true);
  shared_->setStyleSheet("color:#555");
  shared_->hide();
  form->addRow(shared_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(source_, &QComboBox::currentIndexChanged, this, &InterventionForm::updateEnabled);
  connect(prompt_, &QSpinBox::valueChanged, this, &InterventionForm::updateEnabled);
  setSource(entry.source);
  // Wide enough for its title (the window manager's title bar), every placeholder and a prompt preview of
  // a few lines: the fields' own hints are those of an empty line edit.
  const QFontMetrics fm(font());
  for (QLineEdit* e : {text_, positions_})
    e->setMinimumWidth(fm.horizontalAdvance(e->placeholderText()) + 32);
  layer_->setMinimumWidth(fm.horizontalAdvance(layer_->prefix() + "000") + 48);
  const int titleWidth = fm.horizontalAdvance(windowTitle()) + 160;  // + the title bar's buttons and icon
  setMinimumWidth(std::max({titleWidth, 560, form->minimumSize().width()}));
  promptPreview_->setMinimumWidth(360);
  updateEnabled();
}

void InterventionForm::setSharedWith(int others) {
  const bool steer = entry_.kind == InterventionKind::Steer;
  shared_->setVisible(others > 0);
  shared_->setText(
      QString("The %1 applies to every %2 entry (%3 more): the evaluation %4 every head from one source.")
          .arg(steer ? "source, scale and layer" : "source")
          .arg(kindLabel(entry_.kind))
          .arg(others)
          .arg(steer ? "steers" : "patches"));
}

void InterventionForm::setSource(VectorSource s) {
  const int i = source_->findData(static_cast<int>(s));
  source_->setCurrentIndex(i < 0 ? 0 : i);
}

void InterventionForm::updateEnabled() {
  const auto s = static_cast<VectorSource>(source_->currentData().toInt());
  prompt_->setEnabled(s == VectorSource::Prompt);
  text_->setEnabled(s == VectorSource::Text);
  const int i = prompt_->value();
  promptPreview_->setVisible(s == VectorSource::Prompt && i < prompts_.size());
  if (i < prompts_.size()) {
    QString t = prompts_[i];
    t.replace("\n", " ⏎ ");
    promptPreview_->setText(t.size() > 240 ? "…" + t.right(239) : t);
    promptPreview_->setToolTip(prompts_[i]);
  }
  // The preview wraps over several lines: the dialog grows to hold them (a form row keeps its first height).
  if (layout()) layout()->activate();
  adjustSize();
}

bool InterventionForm::read(InterventionEntry* out, QString* error) const {
  InterventionEntry e = entry_;
  e.positions.clear();
  for (const QString& s : positions_->text().split(QRegularExpression("[,\\s]+"), Qt::SkipEmptyParts)) {
    bool ok = false;
    const int v = s.toInt(&ok);
    if (!ok) {
      if (error) *error = "“" + s + "” is not a token position (an integer)";
      return false;
    }
    e.positions.push_back(v);
  }
  if (e.hasSource()) {
    e.source = static_cast<VectorSource>(source_->currentData().toInt());
    e.sourcePrompt = prompt_->value();
    e.sourceText = text_->text();
    if (e.source == VectorSource::Text && e.sourceText.trimmed().isEmpty()) {
      if (error) *error = "the text source is empty: type the text whose last token gives the vector";
      return false;
    }
  }
  if (e.kind == InterventionKind::Steer) {
    e.scale = scale_->value();
    e.layer = layer_->value();
  }
  *out = e;
  return true;
}

std::vector<InterventionEntry> InterventionsDock::entries() const {
  return entries_;
}

void InterventionsDock::setEntries(const std::vector<InterventionEntry>& entries) {
  {
    const QSignalBlocker block(list_);
    list_->clear();
    entries_.clear();
  }
  for (const InterventionEntry& e : entries)
    append(e);
  Q_EMIT changed();
}

void InterventionsDock::setEnabled(int row, bool on) {
  if (row < 0 || row >= list_->count()) return;
  list_->item(row)->setCheckState(on ? Qt::Checked : Qt::Unchecked);  // itemChanged updates entries_
}

void InterventionsDock::removeRow(int row) {
  if (row < 0 || row >= list_->count()) return;
  {
    const QSignalBlocker block(list_);
    delete list_->takeItem(row);
  }
  entries_.erase(entries_.begin() + row);
  Q_EMIT changed();
}

void InterventionsDock::clear() {
  if (entries_.empty()) return;
  setEntries({});
}

}  // namespace hs::gui
