#pragma once
// File → Open model…: a model (HF folder, .safetensors, llama2.c .bin, .gguf, a hub id, or one of the models
// of the local hub cache, listed), its tokenizer, and how to run it: dtype (auto, f32, bf16, f16) and device
// (cpu, each CUDA device libtorch sees, or a list), with an optional number of GPU layers. Device, dtype and
// GPU layers are remembered (QSettings model/device, model/dtype, model/gpu_layers) and used by every later
// model open, including the toy model's and a session's.
#include <QDialog>

class QComboBox;
class QLineEdit;
class QListWidget;
class QSpinBox;

namespace hs::gui {

struct ModelOpenSettings {
  QString dtype = "auto";  // auto, f32, bf16, f16
  QString device = "cpu";  // cpu, cuda, cuda:N, cuda:0,cuda:1
  int gpuLayers = -1;      // >= 0: the last N layers and the head on the device, the rest on the CPU

  static ModelOpenSettings remembered();  // from QSettings (defaults when unset)
  void remember() const;
};

class ModelDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ModelDialog(QWidget* parent = nullptr);

  QString path() const;
  QString tokenizer() const;
  ModelOpenSettings settings() const;
  int cachedModelCount() const;  // rows of the hub cache list (tests)
  void selectCachedModel(int row);

 private:
  QLineEdit* path_ = nullptr;
  QLineEdit* tokenizer_ = nullptr;
  QListWidget* cached_ = nullptr;
  QComboBox* dtype_ = nullptr;
  QComboBox* device_ = nullptr;
  QSpinBox* gpuLayers_ = nullptr;
};

}  // namespace hs::gui
