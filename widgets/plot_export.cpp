#include "plot_export.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QSvgGenerator>

#include <QImage>

#include <cmath>
#include <vector>

#include "qcustomplot_include.h"

namespace hs {

namespace {

bool setError(QString* error, const QString& message) {
  if (error) *error = message;
  return false;
}

// QSvgGenerator reports nothing on failure: check that the file is there and has content.
bool writeSvg(QCustomPlot& plot, const QString& path, int width, int height, const ExportOptions& o,
              QString* error) {
  QSvgGenerator generator;
  generator.setFileName(path);
  generator.setSize(QSize(width, height));
  generator.setViewBox(QRect(0, 0, width, height));
  // 96 DPI: text sizes (points) convert to view-box units as on screen, not scaled by the raster DPI.
  generator.setResolution(96);
  generator.setTitle(o.title);
  generator.setDescription(QStringLiteral("HeadScope plot"));
  QCPPainter painter;
  if (!painter.begin(&generator))
    return setError(error, path + QStringLiteral(": cannot open for writing SVG"));
  // The same painter modes QCustomPlot uses for its own vector export (savePdf): no pixmap caches,
  // no screen-only antialiasing fixes.
  painter.setMode(QCPPainter::pmVectorized);
  painter.setMode(QCPPainter::pmNoCaching);
  plot.toPainter(&painter, width, height);
  painter.end();
  if (QFileInfo(path).size() <= 0)
    return setError(error, path + QStringLiteral(": SVG export wrote nothing"));
  return true;
}

}  // namespace

bool exportFormatFromPath(const QString& path, ExportFormat* format) {
  const QString ext = QFileInfo(path).suffix().toLower();
  ExportFormat f;
  if (ext == QLatin1String("png")) {
    f = ExportFormat::Png;
  } else if (ext == QLatin1String("pdf")) {
    f = ExportFormat::Pdf;
  } else if (ext == QLatin1String("svg")) {
    f = ExportFormat::Svg;
  } else {
    return false;
  }
  if (format) *format = f;
  return true;
}

QString exportFormatExtension(ExportFormat format) {
  switch (format) {
    case ExportFormat::Png:
      return QStringLiteral("png");
    case ExportFormat::Pdf:
      return QStringLiteral("pdf");
    case ExportFormat::Svg:
      return QStringLiteral("svg");
  }
  return QString();
}

namespace {
// Hides the screen-only items (selection outlines) while a figure is written.
class ScreenOnlyHidden {
 public:
  explicit ScreenOnlyHidden(QCustomPlot& plot) {
    for (int i = 0; i < plot.itemCount(); ++i) {
      QCPAbstractItem* item = plot.item(i);
      if (item->property(kScreenOnlyProperty).toBool() && item->visible()) {
        item->setVisible(false);
        hidden_.push_back(item);
      }
    }
  }
  ~ScreenOnlyHidden() {
    for (QCPAbstractItem* item : hidden_)
      item->setVisible(true);
  }

 private:
  std::vector<QCPAbstractItem*> hidden_;
};
}  // namespace

bool exportPlot(QCustomPlot& plot, const QString& path, const ExportOptions& given, QString* error) {
  ExportOptions o = given;
  exportFormatFromPath(path, &o.format);  // the name the user typed wins over the format box
  const int width = o.width > 0 ? o.width : plot.width();
  const int height = o.height > 0 ? o.height : plot.height();
  if (width <= 0 || height <= 0) {
    return setError(
        error, path + QStringLiteral(": export size %1×%2 is empty; expected a positive width and height")
                          .arg(width)
                          .arg(height));
  }
  if (o.dpi < 1 || o.dpi > 2400) {
    return setError(error, path + QStringLiteral(": DPI %1 out of range; expected 1–2400").arg(o.dpi));
  }
  const QFileInfo info(path);
  if (!info.absoluteDir().exists()) {
    return setError(error, path + QStringLiteral(": folder %1 does not exist").arg(info.absolutePath()));
  }
  bool ok = false;
  const ScreenOnlyHidden hide(plot);
  // The figure's layout size: the same in every format (PNG pixels / (dpi / 96); PDF points; SVG units).
  const int logicalW = std::max(1, static_cast<int>(std::lround(width * 96.0 / o.dpi)));
  const int logicalH = std::max(1, static_cast<int>(std::lround(height * 96.0 / o.dpi)));
  switch (o.format) {
    case ExportFormat::Png: {
      // Exactly width × height pixels: the layout at width / scale, drawn scaled by scale = dpi / 96.
      ok = plot.savePng(path, logicalW, logicalH, o.dpi / 96.0, -1, o.dpi, QCP::ruDotsPerInch);
      if (ok) {  // rounding of the logical size may leave a pixel over or under: make it exact
        QImage img(path);
        if (!img.isNull() && img.size() != QSize(width, height)) {
          img = img.scaled(width, height, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
          img.setDotsPerMeterX(static_cast<int>(std::lround(o.dpi / 0.0254)));
          img.setDotsPerMeterY(static_cast<int>(std::lround(o.dpi / 0.0254)));
          ok = img.save(path, "PNG");
        }
      }
      if (!ok) return setError(error, path + QStringLiteral(": cannot write PNG"));
      break;
    }
    case ExportFormat::Pdf:
      ok = plot.savePdf(path, logicalW, logicalH, QCP::epNoCosmetic, QStringLiteral("HeadScope"), o.title);
      if (!ok) return setError(error, path + QStringLiteral(": cannot write PDF"));
      break;
    case ExportFormat::Svg:
      ok = writeSvg(plot, path, logicalW, logicalH, o, error);
      break;
  }
  // Exports re-lay out the plot at the export size; restore the on-screen layout.
  plot.replot(QCustomPlot::rpQueuedReplot);
  return ok;
}

ExportDialog::ExportDialog(const QCustomPlot& plot, const QString& suggestedPath, QWidget* parent)
    : QDialog(parent) {
  setWindowTitle(tr("Export plot"));
  path_ = new QLineEdit(suggestedPath.isEmpty() ? QStringLiteral("plot.png") : suggestedPath, this);
  auto* browse = new QPushButton(tr("Browse…"), this);
  auto* pathRow = new QHBoxLayout;
  pathRow->addWidget(path_, 1);
  pathRow->addWidget(browse);

  format_ = new QComboBox(this);
  format_->addItem(QStringLiteral("PNG"), int(ExportFormat::Png));
  format_->addItem(QStringLiteral("PDF"), int(ExportFormat::Pdf));
  format_->addItem(QStringLiteral("SVG"), int(ExportFormat::Svg));
  ExportFormat initial;
  if (exportFormatFromPath(path_->text(), &initial)) format_->setCurrentIndex(int(initial));

  width_ = new QSpinBox(this);
  height_ = new QSpinBox(this);
  for (QSpinBox* s : {width_, height_}) {
    s->setRange(50, 20000);
    s->setSuffix(tr(" px"));
  }
  // The default keeps the on-screen layout: the size in pixels at 300 DPI.
  width_->setValue((plot.width() > 0 ? plot.width() : 800) * 300 / 96);
  height_->setValue((plot.height() > 0 ? plot.height() : 600) * 300 / 96);
  dpi_ = new QSpinBox(this);
  dpi_->setRange(36, 1200);
  dpi_->setValue(300);
  dpi_->setToolTip(
      tr("The PNG is exactly width × height pixels; the DPI sets how large text is drawn "
         "(96: as on screen). PDF: points; SVG: units at 96 DPI."));

  auto* form = new QFormLayout;
  form->addRow(tr("File"), pathRow);
  form->addRow(tr("Format"), format_);
  form->addRow(tr("Width"), width_);
  form->addRow(tr("Height"), height_);
  form->addRow(tr("DPI"), dpi_);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(form);
  layout->addWidget(buttons);

  connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
  connect(format_, &QComboBox::currentIndexChanged, this, [this] { syncExtension(); });
  connect(browse, &QPushButton::clicked, this, [this] {
    const QString p = QFileDialog::getSaveFileName(this, tr("Export plot"), path_->text(),
                                                   tr("Images (*.png *.pdf *.svg)"));
    if (p.isEmpty()) return;
    path_->setText(p);
    ExportFormat f;
    if (exportFormatFromPath(p, &f)) format_->setCurrentIndex(int(f));
  });
}

void ExportDialog::syncExtension() {
  // Keep the file extension in step with the chosen format.
  const QString ext = exportFormatExtension(static_cast<ExportFormat>(format_->currentData().toInt()));
  QFileInfo info(path_->text());
  if (info.suffix().toLower() == ext) return;
  const QString base =
      info.suffix().isEmpty() ? path_->text() : path_->text().chopped(info.suffix().size() + 1);
  path_->setText(base + QLatin1Char('.') + ext);
}

ExportOptions ExportDialog::options() const {
  ExportOptions o;
  o.format = static_cast<ExportFormat>(format_->currentData().toInt());
  exportFormatFromPath(path_->text(), &o.format);
  o.width = width_->value();
  o.height = height_->value();
  o.dpi = dpi_->value();
  o.title = QFileInfo(path_->text()).completeBaseName();
  return o;
}

QString ExportDialog::path() const {
  return path_->text();
}

bool ExportDialog::run(QCustomPlot& plot, QWidget* parent, const QString& suggestedPath) {
  ExportDialog dialog(plot, suggestedPath, parent);
  if (dialog.exec() != QDialog::Accepted) return false;
  QString error;
  if (!exportPlot(plot, dialog.path(), dialog.options(), &error)) {
    QMessageBox::warning(parent, tr("Export failed"), error);
    return false;
  }
  return true;
}

}  // namespace hs
