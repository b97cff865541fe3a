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

#include <cmath>

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
  generator.setResolution(o.dpi);
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

bool exportPlot(QCustomPlot& plot, const QString& path, const ExportOptions& o, QString* error) {
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
  switch (o.format) {
    case ExportFormat::Png: {
      const double scale = o.dpi / 96.0;
      ok = plot.savePng(path, width, height, scale, -1, o.dpi, QCP::ruDotsPerInch);
      if (!ok) return setError(error, path + QStringLiteral(": cannot write PNG"));
      break;
    }
    case ExportFormat::Pdf:
      ok = plot.savePdf(path, width, height, QCP::epNoCosmetic, QStringLiteral("HeadScope"), o.title);
      if (!ok) return setError(error, path + QStringLiteral(": cannot write PDF"));
      break;
    case ExportFormat::Svg:
      ok = writeSvg(plot, path, width, height, o, error);
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
  width_->setValue(plot.width() > 0 ? plot.width() : 800);
  height_->setValue(plot.height() > 0 ? plot.height() : 600);
  dpi_ = new QSpinBox(this);
  dpi_->setRange(36, 1200);
  dpi_->setValue(300);
  dpi_->setToolTip(tr("PNG pixels = size × DPI / 96; the layout stays as at 96 DPI"));

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
  const QString ext = exportFormatExtension(options().format);
  QFileInfo info(path_->text());
  if (info.suffix().toLower() == ext) return;
  const QString base =
      info.suffix().isEmpty() ? path_->text() : path_->text().chopped(info.suffix().size() + 1);
  path_->setText(base + QLatin1Char('.') + ext);
}

ExportOptions ExportDialog::options() const {
  ExportOptions o;
  o.format = static_cast<ExportFormat>(format_->currentData().toInt());
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
