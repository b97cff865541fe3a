// The heatmap, curve, scatter and export widgets, driven offscreen through real mouse events.
#include <QtTest>

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QImage>
#include <QMenu>
#include <QScrollBar>
#include <QSet>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QXmlStreamReader>

#include <algorithm>
#include <cmath>
#include <random>

#include "curve_view.h"
#include "head_grid_view.h"
#include "lens_view.h"
#include "plot_export.h"
#include "plot_style.h"
#include "qcustomplot_include.h"
#include "scatter_compare.h"

using hs::HeadGrid;
using hs::HeadGridView;
using hs::HeadRef;

namespace {

// 4 layers × 8 heads with 32 distinct values in a scrambled order (37 is coprime with 32), so the
// top heads are spread over the grid rather than sitting in the last row.
HeadGrid scrambledGrid(int layers = 4, int heads = 8) {
  HeadGrid g;
  g.id = "test.scrambled";
  g.name = "Test grid";
  g.unit = "logit";
  g.values.resize(layers, heads);
  const int n = layers * heads;
  for (int l = 0; l < layers; ++l) {
    for (int h = 0; h < heads; ++h)
      g.values(l, h) = ((l * heads + h) * 37 % n) / 10.0;
  }
  return g;
}

// A grid that looks like a TSLA task-recognition map of a 12-layer, 12-head model: small noisy
// scores everywhere and a handful of strong heads in the middle layers.
HeadGrid realisticGrid() {
  HeadGrid g;
  g.id = "tsla.tr";
  g.name = "Task recognition ‖P a‖";
  g.unit = "score";
  g.values.resize(12, 12);
  std::mt19937 rng(7);
  std::gamma_distribution<double> noise(1.5, 0.04);
  for (int l = 0; l < 12; ++l) {
    for (int h = 0; h < 12; ++h)
      g.values(l, h) = noise(rng) * (1.0 + 0.15 * l);
  }
  g.values(5, 3) = 0.92;
  g.values(6, 9) = 0.81;
  g.values(7, 1) = 0.66;
  g.values(4, 10) = 0.48;
  g.values(8, 6) = 0.43;
  return g;
}

std::vector<HeadRef> sortedHeads(std::vector<HeadRef> v) {
  std::sort(v.begin(), v.end());
  return v;
}

QString headsToString(const std::vector<HeadRef>& v) {
  QStringList parts;
  for (const HeadRef& h : v)
    parts << QStringLiteral("(%1,%2)").arg(h.layer).arg(h.head);
  return parts.join(QLatin1Char(' '));
}

// The colour the view's own gradient gives a value, as drawn on screen.
QColor expectedColor(const HeadGridView& view, double v) {
  return QColor::fromRgba(view.colorMap()->gradient().color(v, view.colorMap()->dataRange()));
}

bool closeColor(const QColor& a, const QColor& b, int tol = 4) {
  return std::abs(a.red() - b.red()) <= tol && std::abs(a.green() - b.green()) <= tol &&
         std::abs(a.blue() - b.blue()) <= tol;
}

int distinctColors(const QImage& img) {
  QSet<QRgb> colors;
  for (int y = 0; y < img.height(); y += 3) {
    for (int x = 0; x < img.width(); x += 3)
      colors.insert(img.pixel(x, y));
  }
  return colors.size();
}

// A lens map of `n` positions ("t0", "t1", ...) and `layers` layers, top tokens "x0", "x1", ...
hs::LensMap lensMap(int n, int layers) {
  hs::LensMap map;
  map.layers = layers;
  for (int p = 0; p < n; ++p)
    map.pieces << QString("t%1").arg(p);
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < n; ++p)
      map.cells.push_back({QString("x%1").arg(p), 0.5, (l * n + p) / double(layers * n), QString()});
  return map;
}

}  // namespace

class TestWidgets : public QObject {
  Q_OBJECT

 private:
  // A shown, laid-out view of `grid`, ready for mouse events.
  void showView(HeadGridView& view, const HeadGrid& grid) {
    view.resize(640, 480);
    view.setGrid(grid);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.plot()->replot();
  }

 private Q_SLOTS:
  void clickSelectsExactlyThatHead() {
    HeadGridView view;
    showView(view, scrambledGrid());
    QSignalSpy spy(&view, &HeadGridView::selectionChanged);
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, view.cellCenter({2, 5}));
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{2, 5}}));
    QCOMPARE(spy.count(), 1);
    QCOMPARE(spy.at(0).at(0).value<std::vector<HeadRef>>(), (std::vector<HeadRef>{{2, 5}}));

    // A plain click on another cell replaces the selection; a click outside the cells clears it.
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, view.cellCenter({0, 7}));
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{0, 7}}));
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, QPoint(2, 2));
    QVERIFY(view.selection().empty());
    QCOMPARE(spy.count(), 3);
  }

  void pixelMappingRoundTripsOverEveryCell() {
    HeadGridView view;
    showView(view, scrambledGrid());
    const QPoint c00 = view.cellCenter({0, 0}), c11 = view.cellCenter({1, 1});
    const int halfW = (c11.x() - c00.x()) / 2, halfH = (c11.y() - c00.y()) / 2;
    QVERIFY2(halfW > 4 && halfH > 4, "cells are too small to click");
    for (int l = 0; l < 4; ++l) {
      for (int h = 0; h < 8; ++h) {
        const QPoint c = view.cellCenter({l, h});
        // Centre and points just inside the four corners all belong to the cell.
        for (const QPoint& d : {QPoint(0, 0), QPoint(halfW - 2, halfH - 2), QPoint(-halfW + 2, -halfH + 2),
                                QPoint(halfW - 2, -halfH + 2), QPoint(-halfW + 2, halfH - 2)}) {
          const auto got = view.headAt(c + d);
          QVERIFY2(got && *got == (HeadRef{l, h}),
                   qPrintable(QStringLiteral("pixel offset (%1,%2) of cell (%3,%4)")
                                  .arg(d.x())
                                  .arg(d.y())
                                  .arg(l)
                                  .arg(h)));
        }
      }
    }
    // Just outside the grid is no head.
    QVERIFY(!view.headAt(view.cellCenter({0, 0}) - QPoint(halfW + 3, 0)));
    QVERIFY(!view.headAt(view.cellCenter({3, 7}) + QPoint(0, halfH + 3)));
  }

  void ctrlClickTogglesHeads() {
    HeadGridView view;
    showView(view, scrambledGrid());
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::NoModifier, view.cellCenter({2, 5}));
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::ControlModifier, view.cellCenter({0, 1}));
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::ControlModifier, view.cellCenter({3, 7}));
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{0, 1}, {2, 5}, {3, 7}}));
    QTest::mouseClick(view.plot(), Qt::LeftButton, Qt::ControlModifier, view.cellCenter({2, 5}));
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{0, 1}, {3, 7}}));
  }

  void hoverTooltipNamesLayerHeadValueRank() {
    HeadGridView view;
    const HeadGrid g = scrambledGrid();
    showView(view, g);
    const HeadRef target{1, 3};
    QTest::mouseMove(view.plot(), view.cellCenter(target));
    const QString tip = view.plot()->toolTip();
    const double v = g.values(1, 3);
    int rank = 1;  // independent oracle: 1 + number of strictly larger values
    for (int l = 0; l < 4; ++l) {
      for (int h = 0; h < 8; ++h)
        rank += g.values(l, h) > v ? 1 : 0;
    }
    QVERIFY2(tip.contains(QStringLiteral("layer 1")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("head 3")), qPrintable(tip));
    QVERIFY2(tip.contains(QString::number(v, 'g', 4)), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("logit")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("rank %1 of 32").arg(rank)), qPrintable(tip));
    // Leaving the grid clears the tooltip.
    QTest::mouseMove(view.plot(), QPoint(2, 2));
    QVERIFY(view.plot()->toolTip().isEmpty());
  }

  void layerZeroIsDrawnAtTheTop() {
    HeadGridView view;
    const HeadGrid g = scrambledGrid();
    showView(view, g);
    QVERIFY(view.cellCenter({0, 0}).y() < view.cellCenter({3, 0}).y());
    QVERIFY(view.cellCenter({0, 0}).x() < view.cellCenter({0, 7}).x());
    // The colour under each cell centre is the colour of that cell's value: the data are drawn
    // where the mapping says (not flipped, not transposed).
    const QImage img = view.plot()->grab().toImage();
    for (int l = 0; l < 4; ++l) {
      for (int h = 0; h < 8; ++h) {
        const QColor got = img.pixelColor(view.cellCenter({l, h}));
        const QColor want = expectedColor(view, g.values(l, h));
        QVERIFY2(closeColor(got, want), qPrintable(QStringLiteral("cell (%1,%2): drawn %3, expected %4")
                                                       .arg(l)
                                                       .arg(h)
                                                       .arg(got.name(), want.name())));
      }
    }
    QCOMPARE(view.colorScale()->axis()->label(), QStringLiteral("logit"));
  }

  void singleHeadColumnIsDrawnFull() {
    HeadGrid g;
    g.name = "one head";
    g.values.resize(3, 1);
    g.values << 0.1, 0.5, 0.9;
    HeadGridView view;
    showView(view, g);
    const QImage img = view.plot()->grab().toImage();
    for (int l = 0; l < 3; ++l) {
      const QPoint c = view.cellCenter({l, 0});
      QCOMPARE(*view.headAt(c), (HeadRef{l, 0}));
      QVERIFY(closeColor(img.pixelColor(c), expectedColor(view, g.values(l, 0))));
    }
  }

  void selectTopKPicksTheLargest() {
    HeadGridView view;
    const HeadGrid g = scrambledGrid();
    showView(view, g);
    std::vector<std::pair<double, HeadRef>> all;
    for (int l = 0; l < 4; ++l) {
      for (int h = 0; h < 8; ++h)
        all.push_back({g.values(l, h), {l, h}});
    }
    std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int k : {1, 3, 5}) {
      std::vector<HeadRef> want;
      for (int i = 0; i < k; ++i)
        want.push_back(all[i].second);
      view.selectTopK(k);
      QVERIFY2(view.selection() == sortedHeads(want),
               qPrintable(headsToString(view.selection()) + " vs " + headsToString(sortedHeads(want))));
    }
    view.selectTopPercent(10);  // ceil(3.2) = 4 of 32 heads
    QCOMPARE(view.selection().size(), size_t(4));
    view.selectTopK(0);
    QVERIFY(view.selection().empty());
    // Heads outside the grid are never selected.
    view.setSelection({{9, 9}, {1, 1}, {1, 1}});
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{1, 1}}));
  }

  void gradientFollowsTheSignOfTheValues() {
    HeadGridView view;
    showView(view, scrambledGrid());
    QVERIFY(!view.isDiverging());
    QCOMPARE(view.colorMap()->dataRange().lower, 0.0);
    QCOMPARE(view.colorMap()->dataRange().upper, 3.1);

    HeadGrid signedGrid = scrambledGrid();
    signedGrid.values.array() -= 1.0;  // values in [-1, 2.1]
    view.setGrid(signedGrid);
    QVERIFY(view.isDiverging());
    // Centred at zero: the range is symmetric, so 0 gets the middle (white) colour.
    QCOMPARE(view.colorMap()->dataRange().lower, -2.1);
    QCOMPARE(view.colorMap()->dataRange().upper, 2.1);
    const QColor mid = expectedColor(view, 0.0);
    QVERIFY2(mid.red() > 230 && mid.green() > 230 && mid.blue() > 230, qPrintable(mid.name()));
  }

  void contextMenuActionsEmitWithTheSelection() {
    HeadGridView view;
    showView(view, scrambledGrid());
    QSignalSpy zero(&view, &HeadGridView::zeroAblate);
    QSignalSpy mean(&view, &HeadGridView::meanAblate);
    QSignalSpy patch(&view, &HeadGridView::patchFromClean);
    QSignalSpy steer(&view, &HeadGridView::addToSteering);
    QSignalSpy pattern(&view, &HeadGridView::showPattern);
    const std::vector<HeadRef> sel{{1, 1}, {2, 6}};
    view.setSelection(sel);

    view.menuAction(HeadGridView::MenuAction::ZeroAblate)->trigger();
    QCOMPARE(zero.count(), 1);
    QCOMPARE(zero.at(0).at(0).value<std::vector<HeadRef>>(), sel);
    QCOMPARE(mean.count() + patch.count() + steer.count() + pattern.count(), 0);

    view.menuAction(HeadGridView::MenuAction::MeanAblate)->trigger();
    view.menuAction(HeadGridView::MenuAction::PatchFromClean)->trigger();
    view.menuAction(HeadGridView::MenuAction::AddToSteering)->trigger();
    QCOMPARE(mean.count(), 1);
    QCOMPARE(patch.count(), 1);
    QCOMPARE(steer.count(), 1);
    QCOMPARE(mean.at(0).at(0).value<std::vector<HeadRef>>(), sel);
    QCOMPARE(patch.at(0).at(0).value<std::vector<HeadRef>>(), sel);
    QCOMPARE(steer.at(0).at(0).value<std::vector<HeadRef>>(), sel);
    QCOMPARE(zero.count(), 1);

    // A real right-click on a head outside the selection selects it and targets the menu at it.
    QTest::mouseClick(view.plot(), Qt::RightButton, Qt::NoModifier, view.cellCenter({3, 2}));
    QCOMPARE(view.selection(), (std::vector<HeadRef>{{3, 2}}));
    QVERIFY(view.menuHead() && *view.menuHead() == (HeadRef{3, 2}));
    view.menuAction(HeadGridView::MenuAction::ShowPattern)->trigger();
    QCOMPARE(pattern.count(), 1);
    QCOMPARE(pattern.at(0).at(0).value<HeadRef>(), (HeadRef{3, 2}));
    for (QWidget* w : QApplication::topLevelWidgets()) {
      if (qobject_cast<QMenu*>(w)) w->close();
    }
  }

  void exportWritesValidPngPdfSvg() {
    HeadGridView view;
    showView(view, scrambledGrid());
    view.selectTopK(2);
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    // HEADSCOPE_SCREENSHOT_DIR keeps the exports, to render them back and look at them.
    const QByteArray keep = qgetenv("HEADSCOPE_SCREENSHOT_DIR");
    const QDir dir(keep.isEmpty() ? tmp.path() : QString::fromLocal8Bit(keep));
    QString error;

    const QString png = dir.filePath("heads.png");
    QVERIFY2(hs::exportPlot(*view.plot(), png, {hs::ExportFormat::Png, 800, 600, 96, "heads"}, &error),
             qPrintable(error));
    QImage img(png);
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), QSize(800, 600));
    QVERIFY2(distinctColors(img) > 20, "PNG looks blank");

    // The PNG is exactly the requested pixels at any DPI; 192 DPI draws the same figure with text and lines
    // twice as large (a different image), tagged 192 DPI.
    const QString png2 = dir.filePath("heads@2x.png");
    QVERIFY2(hs::exportPlot(*view.plot(), png2, {hs::ExportFormat::Png, 800, 600, 192, "heads"}, &error),
             qPrintable(error));
    QImage img2(png2);
    QCOMPARE(img2.size(), QSize(800, 600));
    QVERIFY(std::abs(img2.dotsPerMeterX() - 192 / 0.0254) < 2);
    QVERIFY(img2.convertToFormat(QImage::Format_RGB32) != img.convertToFormat(QImage::Format_RGB32));

    const QString pdf = dir.filePath("heads.pdf");
    QVERIFY2(hs::exportPlot(*view.plot(), pdf, {hs::ExportFormat::Pdf, 800, 600, 96, "heads"}, &error),
             qPrintable(error));
    QFile pdfFile(pdf);
    QVERIFY(pdfFile.open(QIODevice::ReadOnly));
    const QByteArray pdfBytes = pdfFile.readAll();
    QVERIFY(pdfBytes.startsWith("%PDF"));
    QVERIFY2(pdfBytes.size() > 2000, qPrintable(QString::number(pdfBytes.size())));

    const QString svg = dir.filePath("heads.svg");
    QVERIFY2(hs::exportPlot(*view.plot(), svg, {hs::ExportFormat::Svg, 800, 600, 96, "heads"}, &error),
             qPrintable(error));
    QFile svgFile(svg);
    QVERIFY(svgFile.open(QIODevice::ReadOnly));
    QXmlStreamReader xml(&svgFile);
    int drawing = 0, texts = 0;
    bool sawTitleText = false;
    QString currentElement;
    while (!xml.atEnd()) {
      xml.readNext();
      if (xml.isStartElement()) {
        currentElement = xml.name().toString();
        if (currentElement == "path" || currentElement == "image" || currentElement == "rect" ||
            currentElement == "polyline")
          ++drawing;
        if (currentElement == "text") ++texts;
      } else if (xml.isCharacters() && xml.text().toString().contains("Test grid")) {
        sawTitleText = true;
      }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY2(drawing > 10, qPrintable(QString::number(drawing)));
    QVERIFY(texts > 5);  // tick labels, axis labels, title
    QVERIFY(sawTitleText);

    // Unknown folders fail with a message naming the file.
    const QString bad = dir.filePath("no/such/dir/x.png");
    QVERIFY(!hs::exportPlot(*view.plot(), bad, {hs::ExportFormat::Png, 100, 100, 96, ""}, &error));
    QVERIFY(error.contains(bad));
    hs::ExportFormat f;
    QVERIFY(hs::exportFormatFromPath("a/b.SVG", &f) && f == hs::ExportFormat::Svg);
    QVERIFY(!hs::exportFormatFromPath("a/b.txt", &f));
  }

  void exportDialogKeepsFormatAndExtensionInStep() {
    HeadGridView view;
    showView(view, scrambledGrid());
    hs::ExportDialog dialog(*view.plot(), "/tmp/fig.png");
    QCOMPARE(dialog.options().format, hs::ExportFormat::Png);
    auto* format = dialog.findChild<QComboBox*>();
    QVERIFY(format);
    format->setCurrentIndex(int(hs::ExportFormat::Svg));
    QCOMPARE(dialog.options().format, hs::ExportFormat::Svg);
    QCOMPARE(dialog.path(), QStringLiteral("/tmp/fig.svg"));
    const auto spins = dialog.findChildren<QSpinBox*>();
    QCOMPARE(spins.size(), 3);  // width, height, DPI
    spins[0]->setValue(1000);
    spins[2]->setValue(150);
    QCOMPARE(dialog.options().width, 1000);
    QCOMPARE(dialog.options().dpi, 150);
  }

  void curveViewShowsEverySeries() {
    hs::Curve c;
    c.id = "geometry.alignment";
    c.name = "Alignment vs layer";
    c.x_label = "layer";
    c.y_label = "alignment";
    c.x = {0, 1, 2, 3, 4};
    c.series = {{"baseline", {0.1, 0.3, 0.5, 0.7, 0.9}}, {"-TR heads", {0.1, 0.2, 0.25, 0.3, NAN}}};
    hs::CurveView view;
    view.resize(600, 400);
    view.setCurve(c);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.plot()->graphCount(), 2);
    QCOMPARE(view.plot()->graph(0)->name(), QStringLiteral("baseline"));
    QCOMPARE(view.plot()->graph(1)->name(), QStringLiteral("-TR heads"));
    QCOMPARE(view.plot()->graph(0)->data()->size(), 5);
    QCOMPARE(view.plot()->legend->itemCount(), 2);
    QCOMPARE(view.plot()->xAxis->label(), QStringLiteral("layer"));
    QCOMPARE(view.plot()->yAxis->label(), QStringLiteral("alignment"));
    // Every finite point is inside the visible ranges.
    QVERIFY(view.plot()->xAxis->range().contains(0) && view.plot()->xAxis->range().contains(4));
    QVERIFY(view.plot()->yAxis->range().contains(0.1) && view.plot()->yAxis->range().contains(0.9));
    // The two series are drawn in different colours.
    QVERIFY(view.plot()->graph(0)->pen().color() != view.plot()->graph(1)->pen().color());
    // The legend sits where it hides no data point.
    view.plot()->replot();
    const QRect legend = view.plot()->legend->outerRect();
    for (int g = 0; g < 2; ++g) {
      for (auto it = view.plot()->graph(g)->data()->constBegin();
           it != view.plot()->graph(g)->data()->constEnd(); ++it) {
        if (!std::isfinite(it->value)) continue;
        const QPoint p(int(view.plot()->xAxis->coordToPixel(it->key)),
                       int(view.plot()->yAxis->coordToPixel(it->value)));
        QVERIFY2(!legend.contains(p),
                 qPrintable(QStringLiteral("legend covers (%1, %2)").arg(it->key).arg(it->value)));
      }
    }
  }

  // Intervals are drawn and read (issue 39, item 2): a series with a 95 % interval gets a band (its upper
  // bound filled down to its lower bound, under the lines, not in the legend); hovering names every
  // series' value at the nearest x with its interval; a head grid's tooltip gives the head's ± se.
  void intervalsAreDrawnAndHovered() {
    hs::Curve c;
    c.id = "tsla.ablation_curve.accuracy";
    c.x_label = "k heads";
    c.x = {0, 1, 2, 4};
    c.series = {{"tr", {1.0, 0.25, 0.2, 0.2}}, {"random", {1.0, 0.9, 0.7, 0.5}}};
    c.intervals = {{"random", {0.86, 0.6, 0.4, 0.1}, {1.0, 1.0, 0.95, 0.8}}};
    hs::CurveView view;
    view.resize(600, 400);
    view.setCurve(c);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCOMPARE(view.plot()->graphCount(), 4);  // two series, and the random band's two bounds
    QCOMPARE(view.plot()->graph(1)->name(), QStringLiteral("random"));
    QCOMPARE(view.bands().size(), size_t(1));
    const QCPGraph* band = view.bands()[0];
    QVERIFY(band->channelFillGraph() != nullptr);
    QVERIFY(band->brush().style() != Qt::NoBrush && band->brush().color().alpha() < 255);
    QCOMPARE(band->data()->size(), 4);
    QCOMPARE(band->data()->at(3)->value, 0.8);
    QCOMPARE(band->channelFillGraph()->data()->at(3)->value, 0.1);
    QCOMPARE(view.plot()->legend->itemCount(), 2);
    QVERIFY(band->layer()->index() < view.plot()->graph(0)->layer()->index());  // under the lines
    view.plot()->replot();
    const QPoint at(int(view.plot()->xAxis->coordToPixel(4.0)), int(view.plot()->yAxis->coordToPixel(0.5)));
    QTest::mouseMove(view.plot(), at);
    const QString tip = view.plot()->toolTip();
    QVERIFY2(tip.contains(QStringLiteral("k heads = 4")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("random: 0.5 (95 %: 0.1 – 0.8)")), qPrintable(tip));
    QVERIFY2(tip.contains(QStringLiteral("tr: 0.2")) && !tip.contains(QStringLiteral("tr: 0.2 (")),
             qPrintable(tip));

    view.hide();  // the grid's window gets the mouse
    HeadGridView grid;
    HeadGrid g = scrambledGrid();
    g.se = Eigen::MatrixXd::Constant(4, 8, 0.031);
    showView(grid, g);
    QTest::mouseMove(grid.plot(), grid.cellCenter({1, 3}));
    QVERIFY2(grid.plot()->toolTip().contains(QStringLiteral("± 0.031")), qPrintable(grid.plot()->toolTip()));
  }

  // A series on the right axis counts where it is drawn: here its last point is the only one in the bottom
  // right corner, which is the emptiest by the left axis alone.
  void legendAvoidsPointsOfTheRightAxis() {
    hs::Curve c;
    c.id = "ltv.rotation";
    c.x = {0, 1, 2, 3, 4};
    c.series = {{"cos", {0.5, 0.5, 0.5, 0.5, 0.5}},
                {"fit", {0.05, 0.05, 0.5, 0.95, 0.95}},
                {"stretch", {2, 2, 2, 60, 2}}};  // ten times the others: the right axis
    hs::CurveView view;
    view.resize(600, 400);
    view.setCurve(c);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QCustomPlot* plot = view.plot();
    QCOMPARE(plot->graph(2)->valueAxis(), plot->yAxis2);
    plot->replot();
    const QRect legend = plot->legend->outerRect();
    for (int g = 0; g < plot->graphCount(); ++g) {
      const QCPGraph* graph = plot->graph(g);
      for (auto it = graph->data()->constBegin(); it != graph->data()->constEnd(); ++it) {
        const QPoint p(int(plot->xAxis->coordToPixel(it->key)),
                       int(graph->valueAxis()->coordToPixel(it->value)));
        QVERIFY2(!legend.contains(p), qPrintable(QStringLiteral("legend covers %1 at (%2, %3)")
                                                     .arg(graph->name())
                                                     .arg(it->key)
                                                     .arg(it->value)));
      }
    }
  }

  void scatterCompareReportsRankAgreement() {
    const HeadGrid a = scrambledGrid();
    HeadGrid same = a;
    same.id = "copy";
    same.values = a.values.array() * 2.0 + 1.0;  // monotone transform: identical ranking
    hs::ScatterCompare view;
    view.resize(500, 450);
    view.setGrids(a, same, 4);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    QVERIFY(view.hasData());
    QCOMPARE(view.spearman(), 1.0);
    QCOMPARE(view.kendall(), 1.0);
    QCOMPARE(view.jaccardAtK(), 1.0);
    QVERIFY(view.statsText().contains("Spearman") && view.statsText().contains("Kendall") &&
            view.statsText().contains("Jaccard@4"));

    HeadGrid reversed = a;
    reversed.values = -a.values;
    view.setGrids(a, reversed, 4);
    QCOMPARE(view.spearman(), -1.0);
    QCOMPARE(view.kendall(), -1.0);
    QCOMPARE(view.jaccardAtK(), 0.0);
    // Every head is plotted once, and a point can be found again under its pixel.
    int points = 0;
    for (int i = 0; i < view.plot()->graphCount(); ++i)
      points += view.plot()->graph(i)->data()->size();
    QCOMPARE(points, 32);
    view.plot()->replot();
    const auto near = view.headNear(view.pointCenter({2, 3}), 1.0);
    QVERIFY(near && *near == (HeadRef{2, 3}));

    view.setGrids(a, scrambledGrid(3, 8));
    QVERIFY(!view.hasData());
  }

  // By default a long prompt fits the view: every position is a cell inside the view's width (no scroll
  // bar), hover finds the first and the last, position labels are thinned to a line apart and top-token
  // labels shown only in cells that hold them; a wider view keeps every position and widens the cells.
  void lensFitsEveryPositionByDefault() {
    const int n = 60, L = 5;
    const hs::LensMap map = lensMap(n, L);
    hs::LensView view;
    view.resize(700, 420);
    view.setMap(map);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.plot()->replot();
    QApplication::processEvents();

    QVERIFY(!view.scrolling());
    QVERIFY(view.minimumSizeHint().width() <= 700);
    QCOMPARE(view.width(), 700);
    QCOMPARE(view.visiblePositions(), n);
    QCOMPARE(view.firstPosition(), 0);
    QVERIFY(!view.scrollBar()->isVisible());
    const QRect cells = view.plot()->axisRect()->rect();
    QVERIFY(cells.left() > 0 && view.plot()->rect().contains(cells));
    for (int p = 0; p < n; ++p)
      QVERIFY2(cells.contains(view.cellCenter(L - 1, p)), qPrintable(QString("position %1").arg(p)));
    QVERIFY(view.hoverText(view.cellCenter(2, n - 1))
                .startsWith(QString("after layer 2 · position %1 't%1'").arg(n - 1)));
    QVERIFY(view.hoverText(view.cellCenter(4, 0)).startsWith("after layer 4 · position 0 't0'"));
    // Position labels a line of the tick font apart (turned by 60°); "x59" needs more than a 9-px cell.
    const QVector<double> ticks = view.plot()->xAxis->tickVector();
    QVERIFY(ticks.size() >= 2);
    const double pitch =
        std::abs(view.plot()->xAxis->coordToPixel(ticks[1]) - view.plot()->xAxis->coordToPixel(ticks[0]));
    QVERIFY2(pitch >= QFontMetrics(hs::plotstyle::tickFont()).height() / 0.866 - 0.5,
             qPrintable(QString::number(pitch)));
    QCOMPARE(view.visibleLabels(), 0);

    // Wider: still every position, wider cells.
    const double cellWidth = cells.width() / double(n);
    view.resize(1400, 420);
    view.plot()->replot();
    QCOMPARE(view.visiblePositions(), n);
    QVERIFY(view.plot()->axisRect()->rect().width() / double(n) > cellWidth);
    QVERIFY(view.plot()->axisRect()->rect().contains(view.cellCenter(0, n - 1)));

    // A short prompt: its cells hold their top-token labels.
    view.setMap(lensMap(3, L));
    view.plot()->replot();
    QCOMPARE(view.visiblePositions(), 3);
    QCOMPARE(view.visibleLabels(), 3 * L);
  }

  // Scrolling is an opt-in: a prompt too long for kMinCellWidth cells then scrolls inside the view, the
  // layer axis and the colour bar stay where they are, the map opens at the last positions (the
  // prediction), hover follows the scrolled window, and a resize keeps the end in view until the user
  // scrolls away from it. Turned off, every position is in view again.
  void lensScrollsPositionsWhenAskedAndKeepsTheLayerAxis() {
    const int n = 60, L = 5;
    hs::LensMap map = lensMap(n, L);
    hs::LensView view;
    view.resize(700, 420);
    view.setScrolling(true);
    view.setMap(map);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    view.plot()->replot();

    QVERIFY(view.minimumSizeHint().width() <= 700);
    QCOMPARE(view.width(), 700);
    const int visible = view.visiblePositions();
    QVERIFY2(visible >= 4 && visible < n, qPrintable(QString::number(visible)));
    QVERIFY(view.scrollBar()->isVisible());
    // Opens at the end: the last position is the rightmost cell, the layer axis is still on screen.
    QCOMPARE(view.firstPosition() + visible, n);
    const QRect cells = view.plot()->axisRect()->rect();
    const QRect shown = view.plot()->rect();
    QVERIFY(cells.left() > 0 && shown.contains(cells));
    QCOMPARE(view.plot()->yAxis->range().lower, -0.5);
    QVERIFY(cells.contains(view.cellCenter(L - 1, n - 1)));
    QVERIFY(!cells.contains(view.cellCenter(0, 0)));
    QVERIFY(view.hoverText(view.cellCenter(2, n - 1)).contains(QString("position %1 't%1'").arg(n - 1)));
    QVERIFY(view.hoverText(view.cellCenter(2, n - 1)).startsWith("after layer 2 "));

    // Wider: still at the end, more positions in view.
    view.resize(1000, 420);
    view.plot()->replot();
    QVERIFY(view.visiblePositions() > visible);
    QCOMPARE(view.firstPosition() + view.visiblePositions(), n);

    // The user scrolls to the start: position 0 in view at the same layer axis, and a resize keeps it.
    view.scrollBar()->triggerAction(QAbstractSlider::SliderToMinimum);
    QCOMPARE(view.firstPosition(), 0);
    view.plot()->replot();
    QVERIFY(view.plot()->axisRect()->rect().contains(view.cellCenter(0, 0)));
    QVERIFY(view.hoverText(view.cellCenter(4, 0)).startsWith("after layer 4 · position 0 't0'"));
    QCOMPARE(view.plot()->axisRect()->rect().left(), cells.left());
    view.resize(800, 420);
    QCOMPARE(view.firstPosition(), 0);

    // A short prompt fits: no scroll bar, every position in view.
    view.setMap(lensMap(3, L));
    QCOMPARE(view.visiblePositions(), 3);
    QCOMPARE(view.firstPosition(), 0);
    QVERIFY(!view.scrollBar()->isVisible());

    // Off again: the long prompt's every position.
    view.setMap(map);
    view.setScrolling(false);
    QCOMPARE(view.visiblePositions(), n);
    QCOMPARE(view.firstPosition(), 0);
    QVERIFY(!view.scrollBar()->isVisible());
  }

  // Not a check: writes the Heads widget as it looks with a realistic grid, for the docs.
  void screenshot() {
    const QByteArray dir = qgetenv("HEADSCOPE_SCREENSHOT_DIR");
    if (dir.isEmpty()) QSKIP("set HEADSCOPE_SCREENSHOT_DIR to write docs screenshots");
    HeadGridView view;
    view.resize(620, 520);
    showView(view, realisticGrid());
    view.resize(620, 520);
    view.selectTopK(3);
    view.plot()->replot();
    QVERIFY(view.grab().save(QString::fromLocal8Bit(dir) + "/heads_widget.png"));

    hs::CurveView curve;
    hs::Curve c;
    c.name = "Alignment with the label subspace";
    c.x_label = "layer";
    c.y_label = "alignment";
    for (int l = 0; l < 12; ++l)
      c.x.push_back(l);
    std::vector<double> base, tr, tl;
    for (int l = 0; l < 12; ++l) {
      base.push_back(0.05 + 0.8 / (1 + std::exp(-(l - 5.5))));
      tr.push_back(0.05 + 0.35 / (1 + std::exp(-(l - 6.5))));
      tl.push_back(0.05 + 0.7 / (1 + std::exp(-(l - 6.0))));
    }
    c.series = {{"baseline", base}, {"without TR heads", tr}, {"without TL heads", tl}};
    curve.resize(620, 420);
    curve.setCurve(c);
    curve.show();
    QVERIFY(QTest::qWaitForWindowExposed(&curve));
    curve.plot()->replot();
    QVERIFY(curve.grab().save(QString::fromLocal8Bit(dir) + "/curve_widget.png"));

    hs::ScatterCompare scatter;
    HeadGrid other = realisticGrid();
    std::mt19937 rng(3);
    std::normal_distribution<double> jitter(0, 0.05);
    for (int i = 0; i < other.values.size(); ++i)
      other.values.data()[i] += jitter(rng);
    other.id = "induction";
    other.name = "Induction score";
    scatter.resize(560, 480);
    scatter.setGrids(realisticGrid(), other, 5);
    scatter.show();
    QVERIFY(QTest::qWaitForWindowExposed(&scatter));
    scatter.plot()->replot();
    QVERIFY(scatter.grab().save(QString::fromLocal8Bit(dir) + "/scatter_widget.png"));
  }
};

QTEST_MAIN(TestWidgets)
#include "test_widgets.moc"
