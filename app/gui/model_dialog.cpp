#include "model_dialog.h"

#include <ATen/Context.h>

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QVBoxLayout>

#include "model/cuda_runtime.h"
#include "model/load/hub_cache.h"

namespace hs::gui {

ModelOpenSettings ModelOpenSettings::remembered() {
  QSettings s;
  ModelOpenSettings m;
  m.dtype = s.value("model/dtype", m.dtype).toString();
  m.device = s.value("model/device", m.device).toString();
  m.gpuLayers = s.value("model/gpu_layers", m.gpuLayers).toInt();
  return m;
}

void ModelOpenSettings::remember() const {
  QSettings s;
  s.setValue("model/dtype", dtype);
  s.setValue("model/device", device);
  s.setValue("model/gpu_layers", gpuLayers);
}

ModelDialog::ModelDialog(QWidget* parent) : QDialog(parent) {
  setWindowTitle("Open model");
  auto* layout = new QVBoxLayout(this);
  auto* form = new QFormLayout;

  path_ = new QLineEdit;
  path_->setPlaceholderText("HF folder, .safetensors, .bin, .gguf, or a hub id (org/name)");
  auto* pathRow = new QHBoxLayout;
  pathRow->addWidget(path_, 1);
  auto* folder = new QPushButton("Folder…");
  auto* file = new QPushButton("File…");
  pathRow->addWidget(folder);
  pathRow->addWidget(file);
  connect(folder, &QPushButton::clicked, this, [this] {
    const QString d = QFileDialog::getExistingDirectory(this, "A Hugging Face model folder");
    if (!d.isEmpty()) path_->setText(d);
  });
  connect(file, &QPushButton::clicked, this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, "A model file", {},
                                                   "Models (*.gguf *.bin *.safetensors);;All files (*)");
    if (!f.isEmpty()) path_->setText(f);
  });
  form->addRow("Model", pathRow);

  tokenizer_ = new QLineEdit;
  tokenizer_->setPlaceholderText("beside the model (optional)");
  form->addRow("Tokenizer", tokenizer_);

  // The local hub cache (nothing is downloaded): a click fills in the model's hub id.
  cached_ = new QListWidget;
  for (const CachedModel& m : listCachedModels()) {
    auto* item = new QListWidgetItem(QString::fromStdString(m.id) +
                                     (m.complete ? QString() : QString("  (incomplete download)")));
    item->setData(Qt::UserRole, QString::fromStdString(m.id));
    item->setToolTip(QString::fromStdString(m.path));
    if (!m.complete) item->setFlags(item->flags() & ~Qt::ItemIsEnabled);
    cached_->addItem(item);
  }
  cached_->setMaximumHeight(140);
  connect(cached_, &QListWidget::currentRowChanged, this, [this](int row) { selectCachedModel(row); });
  form->addRow(QString("Hub cache\n(%1)").arg(cached_->count()), cached_);
  if (cached_->count() == 0)
    cached_->addItem(QString("no models in %1").arg(QString::fromStdString(hubCacheDir())));

  const ModelOpenSettings remembered = ModelOpenSettings::remembered();
  dtype_ = new QComboBox;
  dtype_->addItem("auto (float32 when it fits comfortably, else as stored)", "auto");
  dtype_->addItem("float32", "f32");
  dtype_->addItem("bfloat16", "bf16");
  dtype_->addItem("float16", "f16");
  dtype_->setCurrentIndex(std::max(0, dtype_->findData(remembered.dtype)));
  form->addRow("Dtype", dtype_);

  device_ = new QComboBox;
  device_->setEditable(true);  // a list such as cuda:0,cuda:1 can be typed
  device_->addItem("cpu");
  if (at::hasCUDA())
    for (int i = 0; i < static_cast<int>(at::getNumGPUs()); ++i)
      device_->addItem(QString("cuda:%1").arg(i));
  device_->setCurrentText(remembered.device);
  form->addRow("Device", device_);

  gpuLayers_ = new QSpinBox;
  gpuLayers_->setRange(-1, 4096);
  gpuLayers_->setSpecialValueText("all on the device");
  gpuLayers_->setValue(remembered.gpuLayers);
  gpuLayers_->setToolTip("The last N layers and the head on the GPU device, the rest on the CPU");
  form->addRow("GPU layers", gpuLayers_);
  if (!at::hasCUDA()) {
    const QString why = QString::fromStdString(hs::cudaUnusableReason());
    auto* note = new QLabel(why.isEmpty() ? "<i>This build of libtorch has no CUDA: CPU only.</i>"
                                          : "<i>No usable GPU: " + why.toHtmlEscaped() + ". CPU only.</i>");
    note->setWordWrap(true);
    form->addRow("", note);
  }

  layout->addLayout(form);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel);
  connect(buttons, &QDialogButtonBox::accepted, this, [this] {
    if (path_->text().trimmed().isEmpty()) return;
    settings().remember();
    accept();
  });
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  layout->addWidget(buttons);
  resize(620, 420);
}

QString ModelDialog::path() const {
  return path_->text().trimmed();
}

QString ModelDialog::tokenizer() const {
  return tokenizer_->text().trimmed();
}

ModelOpenSettings ModelDialog::settings() const {
  ModelOpenSettings s;
  s.dtype = dtype_->currentData().toString();
  s.device = device_->currentText().trimmed();
  s.gpuLayers = gpuLayers_->value();
  return s;
}

int ModelDialog::cachedModelCount() const {
  int n = 0;
  for (int i = 0; i < cached_->count(); ++i)
    n += cached_->item(i)->data(Qt::UserRole).isValid() ? 1 : 0;
  return n;
}

void ModelDialog::selectCachedModel(int row) {
  if (row < 0 || row >= cached_->count()) return;
  const QVariant id = cached_->item(row)->data(Qt::UserRole);
  if (id.isValid()) path_->setText(id.toString());
}

}  // namespace hs::gui
