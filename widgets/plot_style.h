#pragma once
// Shared look of every HeadScope plot: colour maps, series palette, integer tick steps, fonts.
#include <QColor>
#include <QFont>

#include "qcustomplot_include.h"

namespace hs::plotstyle {

// Perceptually uniform sequential map (matplotlib's viridis, 9 stops) for values of one sign.
QCPColorGradient sequentialGradient();
// Diverging blue–white–red map (ColorBrewer RdBu) for signed values; white is the centre of the range,
// so callers pass a data range symmetric around 0.
QCPColorGradient divergingGradient();
// Colour of the i-th series of a line or scatter plot (Tableau 10, cycled).
QColor seriesColor(int i);

// A tick step of 1, 2, 5, 10, 20, ... so that at most `maxTicks` integer ticks cover `count` cells.
int integerTickStep(int count, int maxTicks = 16);
// An axis ticker that puts ticks at the integers 0, step, 2·step, ... and never between them.
QSharedPointer<QCPAxisTicker> integerTicker(int count, int maxTicks = 16);

// Fonts for plot titles, axis labels and tick labels.
QFont titleFont();
QFont labelFont();
QFont tickFont();

// Axis labels, tick labels and title fonts of `plot` set to the fonts above; grid lines light.
void applyBaseStyle(QCustomPlot& plot);

// A plot filling `host` (no margins) in the base style: every plot widget starts here.
QCustomPlot* addPlot(QWidget& host);
// A title row above the plot's layout (row 0), its text kept fitting the width in at most kTitleLines lines
// (keepTextFitting): a long title (LTV's curves name their site, fit and measures) never takes the plot's
// height.
inline constexpr int kTitleLines = 2;
QCPTextElement* addTitle(QCustomPlot& plot);
// An axis of a cell map (head grid, logit lens): no grid lines through the cells, no sub-ticks, short ticks.
void styleCellAxis(QCPAxis& axis);
// A cell map on the plot's main axes, one crisp cell per coordinate, and its colour bar at the right in the
// label and tick fonts; the caller places the bar in the layout and calls alignColorScale once it is there.
QCPColorMap* addCellMap(QCustomPlot& plot, QCPColorScale** scale);
// The colour bar spans exactly the map's height.
void alignColorScale(QCustomPlot& plot, QCPColorScale& scale);

// Widens the axis range by `fraction` of its size on each side, so that markers at the extremes are not cut
// by the frame; a flat range gets 10 % of its centre (at least 0.5) instead.
void padAxisRange(QCPAxis& axis, double fraction);

// Puts the legend of the main axis rect into the corner where it covers the fewest data points of the
// plot's graphs (ranges must already be final). Ties prefer top-right, top-left, bottom-right, bottom-left.
// Returns true when the corner changed (the caller replots).
bool placeLegendInEmptiestCorner(QCustomPlot& plot);
// Keeps the legend in the emptiest corner whenever the plot is laid out anew (data, resize, export).
void keepLegendInEmptiestCorner(QCustomPlot& plot);

// Wraps the legend's items into as many lines as `room` pixels hold at the largest item's size (columns of
// the widest item for foColumnsFirst, rows of the tallest for foRowsFirst), at least 1 and at most
// min(maxLines, items), and re-flows them when that changes. Callers run it before each replot.
void wrapLegendToRoom(QCPLegend& legend, QCPLayoutGrid::FillOrder order, int room, int maxLines = 1 << 20);

// `text` laid out to fit `width` pixels in `font`: each line that is too wide is broken at its widest
// separators ("    ", " · ", ", ", " ") into as few lines as fit, and a single word still too wide is elided.
QString fitText(const QString& text, const QFont& font, int width);
// Keeps the text element within the plot's width whenever the plot is replotted (new text, resize, export):
// the text last set through QCPTextElement::setText is the full text; what is shown is fitText of it.
// With maxLines > 0 the fitted text has at most that many lines, the last one elided ("…").
void keepTextFitting(QCustomPlot& plot, QCPTextElement& element, int maxLines = 0);

// Replots `plot` unless it has no area (not laid out yet, or given none by a splitter or a stack that was
// hidden): drawing into its empty buffer only warns ("QPainter::begin: Paint device returned engine == 0",
// "QCPLayer::drawToPaintBuffer() … inactive painter"), and the plot replots itself when a resize gives it an
// area. Every view replots through this.
void replotIfSized(QCustomPlot& plot, QCustomPlot::RefreshPriority priority = QCustomPlot::rpRefreshHint);
// The same for the plot's own replot on resize: a resize to an empty size (a splitter's or a stack's hidden
// page shown again, before its layout runs) is not passed to the plot. applyBaseStyle does this.
void skipEmptyResizes(QCustomPlot& plot);

}  // namespace hs::plotstyle
