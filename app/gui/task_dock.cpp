#include "task_dock.h"

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

#include "analysis/framework/data_roots.h"
#include "tasks/prompt_template.h"
#include "tasks/toy/tasks.h"

namespace hs::gui {

namespace {
const char* kOpenFile = "Open dataset file…";

// The Function Vectors tasks of the shared data (<root>/datasets/function_vectors/{abstractive,
// extractive}/*.json, the roots the CLI and the GUI look in, analysis/framework/data_roots.h): the first
// root holding the folder gives them. (display name, path)
std::vector<std::pair<QString, QString>> functionVectorTasks() {
  std::vector<std::pair<QString, QString>> out;
  for (const std::string& root : dataRoots()) {
    const QDir dir(QString::fromStdString(root) + "/datasets/function_vectors");
    if (!dir.exists()) continue;
    for (const QString kind : {"abstractive", "extractive"})
      for (const QString& f : QDir(dir.filePath(kind)).entryList({"*.json"}, QDir::Files, QDir::Name))
        out.push_back({QString("FV %1: %2").arg(kind, QFileInfo(f).completeBaseName()),
                       QDir::cleanPath(QDir(dir.filePath(kind)).absoluteFilePath(f))});
    break;
  }
  return out;
}

// Background colour of a token by its segment role: demonstrations' inputs, labels and separators are
// told apart at a glance; the query input is bold.
QString roleColour(const QString& role) {
  if (role == "bos") return "#d9d9d9";
  if (role == "input") return "#dbe9f6";
  if (role == "label") return "#fde2c4";
  if (role == "separator") return "#eeeeee";
  if (role == "output_prefix" || role == "input_prefix" || role == "input_suffix") return "#e6f2dc";
  return "#f4f4f4";
}
}  // namespace

TaskDock::TaskDock(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;
  form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  dataset_ = new QComboBox;
  for (const auto& t : toy::toyTasks()) {
    const QString id = QString::fromStdString("toy:" + t.name);
    dataset_->addItem(id, id);
  }
  // A real model's tasks: the Function Vectors datasets of the shared data folder.
  for (const auto& [name, path] : functionVectorTasks()) {
    dataset_->addItem(name, path);
    dataset_->setItemData(dataset_->count() - 1, path, Qt::ToolTipRole);
  }
  dataset_->addItem(kOpenFile);
  // The longest names (dataset files, "FV abstractive: capitalize_second_letter") never widen the dock.
  dataset_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
  dataset_->setMinimumContentsLength(18);
  lastDatasetIndex_ = std::max(0, dataset_->findData(QString("toy:category_label")));
  dataset_->setCurrentIndex(lastDatasetIndex_);
  dataset_->setToolTip(
      "Toy-world tasks (the toy model), the Function Vectors tasks of the shared data folder (real models), "
      "or a dataset file (FV JSON, CSV/TSV pairs, SST-2, TREC)");
  template_ = new QComboBox;
  template_->addItem("(dataset default)", QString());
  for (const auto& id : builtinTemplateIds())
    template_->addItem(QString::fromStdString(id), QString::fromStdString(id));
  shots_ = new QSpinBox;
  shots_->setRange(0, 64);
  shots_->setValue(8);
  nPrompts_ = new QSpinBox;
  nPrompts_->setRange(1, 5000);
  nPrompts_->setValue(50);
  seed_ = new QSpinBox;
  seed_->setRange(0, 1000000);
  seed_->setValue(1);
  labelWords_ = new QLineEdit;
  labelWords_->setPlaceholderText("dataset's own (comma-separated to replace)");
  labelWords_->setToolTip("Classification only: the label words, one per class, comma-separated");
  form->addRow("Dataset", dataset_);
  form->addRow("Template", template_);
  form->addRow("Shots", shots_);
  form->addRow("Label words", labelWords_);
  form->addRow("Prompts", nPrompts_);
  form->addRow("Seed", seed_);
  layout->addLayout(form);
  info_ = new QLabel;
  info_->setWordWrap(true);
  layout->addWidget(info_);
  preview_view_ = new QTextBrowser;
  preview_view_->setMinimumHeight(120);
  preview_view_->setToolTip(
      "The first ICL prompt: one box per token with its id; colours mark the roles "
      "(blue input, orange label, green template, grey separator)");
  layout->addWidget(preview_view_, 1);

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(250);
  connect(debounce_, &QTimer::timeout, this, [this] {
    const bool user = pendingByUser_;
    pendingByUser_ = false;
    Q_EMIT changed(user);
  });
  connect(dataset_, &QComboBox::currentIndexChanged, this, [this](int i) {
    if (dataset_->itemText(i) == kOpenFile) {
      chooseDatasetFile();
      return;
    }
    lastDatasetIndex_ = i;
    scheduleChanged(true);
  });
  connect(template_, &QComboBox::currentIndexChanged, this, [this] { scheduleChanged(true); });
  for (QSpinBox* s : {shots_, nPrompts_, seed_})
    connect(s, &QSpinBox::valueChanged, this, [this] { scheduleChanged(true); });
  connect(labelWords_, &QLineEdit::editingFinished, this, [this] { scheduleChanged(true); });
}

void TaskDock::scheduleChanged(bool byUser) {
  pendingByUser_ = pendingByUser_ || byUser;
  debounce_->start();
}

void TaskDock::chooseDatasetFile() {
  const QString f = QFileDialog::getOpenFileName(this, "Open an ICL dataset", {},
                                                 "Datasets (*.json *.csv *.tsv *.txt);;All files (*)");
  if (f.isEmpty()) {
    const QSignalBlocker block(dataset_);
    dataset_->setCurrentIndex(lastDatasetIndex_);
    return;
  }
  addDataset(f);
  scheduleChanged(true);
}

void TaskDock::addDataset(const QString& id) {
  const QSignalBlocker block(dataset_);
  int i = dataset_->findData(id);
  if (i < 0) {
    i = dataset_->count() - 1;  // before "Open dataset file…"
    dataset_->insertItem(i, id, id);
  }
  dataset_->setCurrentIndex(i);
  lastDatasetIndex_ = i;
}

QStringList TaskDock::datasets() const {
  QStringList out;
  for (int i = 0; i < dataset_->count(); ++i)
    if (!dataset_->itemData(i).toString().isEmpty()) out << dataset_->itemData(i).toString();
  return out;
}

TaskSpec TaskDock::spec() const {
  TaskSpec s;
  s.dataset = dataset_->itemData(lastDatasetIndex_).toString().toStdString();
  s.template_id = template_->currentData().toString().toStdString();
  s.shots = shots_->value();
  s.n_prompts = nPrompts_->value();
  s.seed = static_cast<uint64_t>(seed_->value());
  for (const QString& w : labelWords_->text().split(',', Qt::SkipEmptyParts))
    if (!w.trimmed().isEmpty()) s.label_words.push_back(w.trimmed().toStdString());
  return s;
}

void TaskDock::setSpec(const TaskSpec& s) {
  {
    const QSignalBlocker b1(template_), b2(shots_), b3(nPrompts_), b4(seed_), b5(labelWords_);
    addDataset(QString::fromStdString(s.dataset));
    const int t = template_->findData(QString::fromStdString(s.template_id));
    template_->setCurrentIndex(t < 0 ? 0 : t);
    shots_->setValue(s.shots);
    nPrompts_->setValue(s.n_prompts);
    seed_->setValue(static_cast<int>(s.seed));
    QStringList words;
    for (const auto& w : s.label_words)
      words << QString::fromStdString(w);
    labelWords_->setText(words.join(", "));
  }
  scheduleChanged(false);
}

void TaskDock::setPreview(const TaskPreview& p) {
  preview_ = p;
  if (!p.error.isEmpty()) {
    info_->setText("<span style='color:#b00020'>" + p.error.toHtmlEscaped() + "</span>");
    preview_view_->clear();
    return;
  }
  QString info = QString("%1 examples · template %2 · %3 tokens · answer “%4”")
                     .arg(p.datasetSize)
                     .arg(p.templateId.toHtmlEscaped())
                     .arg(p.ids.size())
                     .arg(p.answer.toHtmlEscaped());
  if (p.classification) info += "<br>labels: " + p.labelWords.join(", ").toHtmlEscaped();
  info_->setText(info);
  labelWords_->setEnabled(p.classification);
  QString html = "<div style='line-height:160%'>";
  for (int i = 0; i < p.pieces.size(); ++i) {
    const QString role = i < p.roles.size() ? p.roles[i] : QString();
    QString piece = p.pieces[i].toHtmlEscaped().replace(" ", "&middot;").replace("\n", "\\n");
    if (piece.isEmpty()) piece = "∅";
    html += QString("<span style='background:%1' title='%2'>%3<sub style='color:#666'>%4</sub></span> ")
                .arg(roleColour(role), role.toHtmlEscaped(), piece)
                .arg(p.ids[static_cast<size_t>(i)]);
  }
  preview_view_->setHtml(html + "</div>");
}

}  // namespace hs::gui
