#pragma once
// Figures for papers: any QCustomPlot to PNG, PDF or SVG at a chosen size and resolution.
//
// Size semantics: width × height is the LOGICAL size of the figure (the layout size, in pixels at
// 96 DPI = 1/96 inch each); dpi scales the raster. A PNG of 800 × 600 at 192 DPI is 1600 × 1200
// pixels with the same layout as on screen, tagged 192 DPI. PDF pages are width × height points;
// SVG view boxes are width × height user units tagged with dpi. 0 for width/height means the
// plot's current on-screen size.
#include <QDialog>
#include <QString>

class QComboBox;
class QCustomPlot;
class QLineEdit;
class QSpinBox;

namespace hs {

enum class ExportFormat { Png, Pdf, Svg };

struct ExportOptions {
  ExportFormat format = ExportFormat::Png;
  int width = 0;   // logical pixels; 0: current width
  int height = 0;  // logical pixels; 0: current height
  int dpi = 96;    // raster resolution (PNG) and the resolution tag of SVG
  QString title;   // document title written into PDF/SVG metadata
};

// The format named by a file's extension (.png, .pdf, .svg; case-insensitive); false if unknown.
bool exportFormatFromPath(const QString& path, ExportFormat* format);
QString exportFormatExtension(ExportFormat format);  // "png", "pdf", "svg"

// Writes `plot` to `path`. Returns false and sets *error (naming the file and what failed) on
// failure; the plot's on-screen state is unchanged either way.
bool exportPlot(QCustomPlot& plot, const QString& path, const ExportOptions& options,
                QString* error = nullptr);

// A small dialog: file (with Browse), format, width, height, DPI. exec() then options()/path().
class ExportDialog : public QDialog {
  Q_OBJECT
 public:
  explicit ExportDialog(const QCustomPlot& plot, const QString& suggestedPath = QString(),
                        QWidget* parent = nullptr);
  ExportOptions options() const;
  QString path() const;

  // Runs the dialog on `plot` and exports when accepted; errors are shown in a message box.
  // Returns true when a file was written.
  static bool run(QCustomPlot& plot, QWidget* parent, const QString& suggestedPath = QString());

 private:
  void syncExtension();

  QLineEdit* path_ = nullptr;
  QComboBox* format_ = nullptr;
  QSpinBox* width_ = nullptr;
  QSpinBox* height_ = nullptr;
  QSpinBox* dpi_ = nullptr;
};

}  // namespace hs
