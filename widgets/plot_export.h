#pragma once
// Figures for papers: any QCustomPlot to PNG, PDF or SVG at a chosen size and resolution.
//
// Size semantics: a PNG is exactly width × height pixels, tagged with dpi; the layout is drawn at
// width × 96 / dpi logical pixels and scaled by dpi / 96, so text has the same physical size at every DPI
// (at 96 DPI the layout is the pixel size). PDF and SVG get that same layout: pages of width × 96 / dpi
// points, view boxes of as many user units, text in view-box units (96 DPI). 0 for
// width/height means the plot's current on-screen size. The file's extension decides the format when it
// names one (.png, .pdf, .svg): a "figure.pdf" is a PDF whatever `format` says.
// Items of the plot with the property kScreenOnlyProperty set (selection outlines) are left out.
#include <QDialog>
#include <QString>

class QComboBox;
class QCustomPlot;
class QLineEdit;
class QSpinBox;

namespace hs {

inline constexpr const char* kScreenOnlyProperty = "hs_screen_only";

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
