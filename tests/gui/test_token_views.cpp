// Token views at any prompt length (issue 40), on the toy model at 1280 × 800: the Attention tab's token
// strip shows, for every shown head, that head's attention row from the chosen query (the PatternView's row,
// not a recomputation of its own); clicking a chip or a heatmap cell chooses the query; chips wrap inside the
// width without overlapping and their labels and the heads' legend stay whole with four heads. The logit
// lens shows every position of a 200-token prompt in the Prompt tab's width, without a scroll bar; scrolling
// is an explicit opt-in.
#include <QApplication>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSplitter>
#include <QTabWidget>
#include <QToolTip>
#include <QtTest>

#include <algorithm>
#include <cmath>

#include "attention_tab.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "lens_view.h"
#include "plot_style.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "token_strip.h"

using hs::HeadRef;
using hs::TokenStrip;
using hs::gui::AttentionTab;
using hs::gui::MainWindow;
using hs::gui::PatternView;

namespace {

const std::vector<HeadRef> kFourHeads = {{0, 1}, {1, 2}, {2, 3}, {3, 6}};

// Every shown head's weights on the strip equal its pattern's row `q` (keys up to q; later keys have none).
void checkRowsEqualPatterns(const AttentionTab& tab, int q) {
  const TokenStrip* strip = tab.tokenStrip();
  QCOMPARE(strip->query(), q);
  QCOMPARE(strip->headCount(), tab.shownCount());
  for (int i = 0; i < tab.shownCount(); ++i) {
    const PatternView* p = tab.patternOf(tab.heads()[static_cast<size_t>(i)]);
    QVERIFY(p);
    QCOMPARE(strip->count(), p->n);
    for (int k = 0; k < p->n; ++k) {
      const double want = p->weights[static_cast<size_t>(q * p->n + k)];
      const double got = strip->weight(i, k);
      if (k > q) {
        QVERIFY2(std::isnan(got),
                 qPrintable(QString("head %1 key %2 after query %3: %4").arg(i).arg(k).arg(q).arg(got)));
        continue;
      }
      QVERIFY2(std::abs(got - want) < 1e-12,
               qPrintable(QString("head %1 query %2 key %3: %4 vs the pattern's %5")
                              .arg(i)
                              .arg(q)
                              .arg(k)
                              .arg(got)
                              .arg(want)));
    }
  }
}

bool overlap(const QRect& a, const QRect& b) {
  return a.intersects(b);
}

// A lens map of the Prompt tab with `n` positions and `layers` layers (pieces with spaces and newlines).
hs::gui::PromptView longPromptView(int n, int layers) {
  hs::gui::PromptView v;
  for (int p = 0; p < n; ++p) {
    v.ids.push_back(p % 50);
    v.pieces << (p % 7 == 3 ? QString("\n") : QString(" w%1").arg(p));
  }
  v.text = v.pieces.join("");
  v.lensGrid.resize(static_cast<size_t>(layers));
  for (int l = 0; l < layers; ++l)
    for (int p = 0; p < n; ++p)
      v.lensGrid[static_cast<size_t>(l)].push_back(
          {p, QString("x%1").arg(p), 1.0, (l + 1.0) / (layers + 1.0)});
  return v;
}

}  // namespace

class TestTokenViews : public QObject {
  Q_OBJECT
  std::unique_ptr<MainWindow> w_;

  // The toy window at 1280 × 800 with four heads on the Attention tab, their patterns all arrived.
  AttentionTab* fourHeads() {
    AttentionTab* tab = w_->attentionTab();
    w_->headsView()->setSelection(kFourHeads);
    w_->tabs()->setCurrentIndex(MainWindow::AttentionTabIndex);
    auto arrived = [tab] {
      if (tab->shownCount() != 4) return false;
      for (const HeadRef& h : kFourHeads)
        if (!tab->patternOf(h)) return false;
      return true;
    };
    if (!QTest::qWaitFor(arrived, 60000)) return nullptr;
    hs::test::settle();
    return tab;
  }

 private Q_SLOTS:
  void initTestCase() {
    hs::test::isolateSettings("test_token_views");
    QString error;
    w_ = hs::test::toyWindow(12, &error);
    QVERIFY2(w_, qPrintable(error));
    w_->resize(1280, 800);
    hs::test::settle();
  }
  void cleanupTestCase() { w_.reset(); }

  // Until a query is chosen, the strip shows every head's row at the last position; clicking a chip makes
  // that token the query (the tab's queryPosition, the strip's weights, the signal); clicking a heatmap cell
  // chooses its row, which every map outlines; hover on a chip names every head's weight.
  void stripShowsEveryHeadsRowFromTheChosenQuery() {
    AttentionTab* tab = fourHeads();
    QVERIFY(tab);
    const int n = tab->patternOf(kFourHeads[0])->n;
    QVERIFY(n > 12);
    QCOMPARE(tab->queryPosition(), n - 1);
    checkRowsEqualPatterns(*tab, n - 1);
    auto outlinedRow = [tab](int q) {
      int outlines = 0;
      for (int i = 0; i < tab->plot()->itemCount(); ++i)
        if (const auto* mark = qobject_cast<QCPItemRect*>(tab->plot()->item(i))) {
          ++outlines;
          if (!mark->visible() || mark->topLeft->coords().y() != q - 0.5 ||
              mark->bottomRight->coords().y() != q + 0.5)
            return false;
        }
      return outlines == 4;  // one per map
    };
    QVERIFY2(outlinedRow(n - 1), "the maps do not outline the last row");

    TokenStrip* strip = tab->tokenStrip();
    QVERIFY(strip->isVisible());
    QSignalSpy changed(tab, &AttentionTab::queryChanged);
    const QRect chip = strip->chipRect(5);
    QVERIFY(!chip.isEmpty());
    QTest::mouseClick(strip, Qt::LeftButton, Qt::NoModifier, chip.center());
    QCOMPARE(tab->queryPosition(), 5);
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.last().at(0).toInt(), 5);
    checkRowsEqualPatterns(*tab, 5);
    // The weights are the query's own: row 5 differs from the last row for some head and key.
    bool differs = false;
    for (int i = 0; i < 4; ++i) {
      const PatternView* p = tab->patternOf(kFourHeads[static_cast<size_t>(i)]);
      for (int k = 0; k <= 5; ++k)
        differs |= std::abs(p->weights[static_cast<size_t>(5 * n + k)] -
                            p->weights[static_cast<size_t>((n - 1) * n + k)]) > 1e-3;
    }
    QVERIFY(differs);
    // Bands: the head's strongest key is its darkest band; keys after the query are all one grey.
    for (int i = 0; i < 4; ++i) {
      int strongest = 0, weakest = 0;
      for (int k = 0; k <= 5; ++k) {
        if (strip->weight(i, k) > strip->weight(i, strongest)) strongest = k;
        if (strip->weight(i, k) < strip->weight(i, weakest)) weakest = k;
      }
      if (strip->weight(i, strongest) - strip->weight(i, weakest) > 0.1)
        QVERIFY(strip->bandColor(i, strongest).lightnessF() < strip->bandColor(i, weakest).lightnessF());
      QCOMPARE(strip->bandColor(i, 6), strip->bandColor(i, n - 1));
    }
    // Hover on a chip: every head with its weight, to three decimals.
    const QString tip = strip->chipToolTip(2);
    for (int i = 0; i < 4; ++i) {
      const HeadRef h = kFourHeads[static_cast<size_t>(i)];
      const QString line =
          QString("L%1.H%2: %3").arg(h.layer).arg(h.head).arg(strip->weight(i, 2), 0, 'f', 3);
      QVERIFY2(tip.contains(line), qPrintable(tip + " lacks " + line));
    }
    QHelpEvent help(QEvent::ToolTip, strip->chipRect(2).center(),
                    strip->mapToGlobal(strip->chipRect(2).center()));
    QApplication::sendEvent(strip, &help);
    QCOMPARE(QToolTip::text(), tip);

    // A heatmap cell chooses its row as the query; the maps outline that row.
    tab->plot()->replot();
    const QPoint cell = tab->cellCenter(1, 10, 3);
    QTest::mouseClick(tab->plot(), Qt::LeftButton, Qt::NoModifier, cell);
    QCOMPARE(tab->queryPosition(), 10);
    QCOMPARE(changed.count(), 2);
    checkRowsEqualPatterns(*tab, 10);
    QVERIFY2(outlinedRow(10), "the maps do not outline the chosen row");

    // Set from outside (a session): the strip follows; -1 is no query (nothing coloured, no outline).
    tab->setQueryPosition(3);
    checkRowsEqualPatterns(*tab, 3);
    tab->setQueryPosition(-1);
    QCOMPARE(tab->queryPosition(), -1);
    QVERIFY(std::isnan(strip->weight(0, 0)));
    for (int i = 0; i < tab->plot()->itemCount(); ++i)
      QVERIFY(!tab->plot()->item(i)->visible());
    tab->setQueryPosition(n - 1);
  }

  // With four heads at 1280 × 800: the chips wrap inside the strip's width, in reading order, never
  // overlapping; every chip holds its label; the legend names every head without overlapping the caption,
  // each other or the chips; the strip needs no horizontal scrolling; the heatmaps keep a usable height and
  // their titles fit their columns.
  void fourHeadsStayLegibleAt1280() {
    AttentionTab* tab = fourHeads();
    QVERIFY(tab);
    TokenStrip* strip = tab->tokenStrip();
    const int n = strip->count();
    QVERIFY(n > 0);
    QCOMPARE(strip->headCount(), 4);
    const QFontMetrics fm = strip->fontMetrics();
    for (int i = 0; i < n; ++i) {
      const QRect r = strip->chipRect(i);
      QVERIFY2(r.left() >= 0 && r.right() < strip->width(), qPrintable(QString("chip %1 outside").arg(i)));
      const QString piece = TokenStrip::shownPiece(tab->patternOf(kFourHeads[0])->pieces[i]);
      QVERIFY2(strip->chipLabel(i) == piece,
               qPrintable(QString("chip %1 shows '%2' for '%3'").arg(i).arg(strip->chipLabel(i), piece)));
      QVERIFY(fm.horizontalAdvance(piece) <= strip->chipTextRect(i).width() &&
              r.contains(strip->chipTextRect(i)));
      for (int h = 0; h < 4; ++h)
        QVERIFY(r.contains(strip->bandRect(h, i)));
      if (i > 0) {
        const QRect prev = strip->chipRect(i - 1);
        QVERIFY2((r.top() == prev.top() && r.left() > prev.right()) || r.top() > prev.bottom(),
                 qPrintable(QString("chip %1 not after chip %2").arg(i).arg(i - 1)));
      }
    }
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j)
        QVERIFY2(!overlap(strip->chipRect(i), strip->chipRect(j)),
                 qPrintable(QString("chips %1 and %2").arg(i).arg(j)));
    for (int h = 0; h < 4; ++h) {
      const QRect r = strip->legendRect(h);
      QVERIFY(r.right() < strip->width());
      QVERIFY2(!overlap(r, strip->captionRect()), "a legend entry over the caption");
      for (int g = h + 1; g < 4; ++g)
        QVERIFY2(!overlap(r, strip->legendRect(g)), "two legend entries overlap");
      for (int i = 0; i < n; ++i)
        QVERIFY2(!overlap(r, strip->chipRect(i)), "a legend entry over a chip");
      const HeadRef head = kFourHeads[static_cast<size_t>(h)];
      QVERIFY(r.width() >= fm.horizontalAdvance(QString("L%1.H%2").arg(head.layer).arg(head.head)));
    }
    auto* area = qobject_cast<QScrollArea*>(strip->parentWidget()->parentWidget());
    QVERIFY(area);
    QVERIFY(strip->width() <= area->viewport()->width());
    QVERIFY(!area->horizontalScrollBar()->isVisible());
    // The strip takes the height its chips need (here all of them are in view), at most 35 % of the tab's
    // splitter; the maps get the rest.
    const int stripNeeds = strip->heightForWidth(area->viewport()->width()) + 2 * area->frameWidth();
    qInfo("strip %d px (its chips need %d) of %d", area->height(), stripNeeds, tab->splitter()->height());
    QVERIFY(area->height() <= AttentionTab::kMaxStripShare * tab->splitter()->height() + 1);
    QVERIFY(area->height() >=
            std::min(stripNeeds, static_cast<int>(AttentionTab::kMaxStripShare * tab->splitter()->height())));
    QVERIFY2(area->height() <= std::max(stripNeeds, area->minimumHeight()) + 1, "empty room under the chips");

    // The heatmaps above keep a usable height, and their titles fit the panels' columns.
    const int line = QFontMetrics(hs::plotstyle::tickFont()).height();
    for (int i = 0; i < 4; ++i) {
      const auto* map = qobject_cast<QCPColorMap*>(tab->plot()->plottable(i));
      QVERIFY(map);
      const QRect cells = map->keyAxis()->axisRect()->rect();
      qInfo("panel %d: %d x %d px of cells", i, cells.width(), cells.height());
      QVERIFY2(cells.height() >= 10 * line,
               qPrintable(QString("panel %1 only %2 px high").arg(i).arg(cells.height())));
    }
    for (int e = 0; e < tab->plot()->plotLayout()->elementCount(); ++e)
      if (const auto* title = qobject_cast<QCPTextElement*>(tab->plot()->plotLayout()->elementAt(e)))
        QVERIFY2(QFontMetrics(title->font()).horizontalAdvance(title->text()) <= title->outerRect().width(),
                 qPrintable(title->text() + " wider than its column"));

    // A long prompt in a narrow strip: the chips take more lines, never more width.
    TokenStrip narrow;
    QStringList pieces;
    std::vector<hs::TokenStripHead> heads(4);
    const int m = 200;
    for (int p = 0; p < m; ++p)
      pieces << (p % 9 == 0 ? QString("\n") : QString(" longer_piece_%1").arg(p));
    for (int h = 0; h < 4; ++h) {
      heads[static_cast<size_t>(h)].name = QString("L%1.H%2").arg(h).arg(h);
      heads[static_cast<size_t>(h)].weights.assign(static_cast<size_t>(m * m), 1.0 / m);
    }
    narrow.setData(pieces, heads);
    narrow.setQuery(m - 1);
    narrow.resize(300, narrow.heightForWidth(300));
    for (int i = 0; i < m; ++i) {
      QVERIFY(narrow.chipRect(i).left() >= 0 && narrow.chipRect(i).right() < 300);
      QVERIFY(narrow.chipRect(i).bottom() < narrow.height());
      for (int j = i + 1; j < m; ++j)
        QVERIFY(!overlap(narrow.chipRect(i), narrow.chipRect(j)));
    }
    QCOMPARE(TokenStrip::shownPiece("\n"), QString("↵"));
    QCOMPARE(TokenStrip::shownPiece(" a"), QString("·a"));
  }

  // In a short host (the head card) the maps keep the height: the strip starts collapsed to the splitter's
  // handle; in a tall one it takes what its chips need.
  void shortHostKeepsTheMaps() {
    AttentionTab tab;
    tab.resize(700, 380);
    tab.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    PatternView v;
    v.head = {1, 2};
    v.n = 30;
    for (int p = 0; p < v.n; ++p)
      v.pieces << QString("tok%1").arg(p);
    v.weights.assign(static_cast<size_t>(v.n * v.n), 1.0 / v.n);
    tab.setPattern(v);
    hs::test::settle();
    QCOMPARE(tab.splitter()->sizes().at(1), 0);
    QVERIFY(tab.plot()->height() >= AttentionTab::kMinMapsHeight);
    tab.resize(700, 900);
    hs::test::settle();
    const int strip = tab.splitter()->sizes().at(1);
    QVERIFY2(strip >= tab.tokenStrip()->heightForWidth(tab.tokenStrip()->width()),
             qPrintable(QString::number(strip)));
    QCOMPARE(tab.tokenStrip()->count(), v.n);
  }

  // The toy prompt in the Prompt tab at 1280 × 800: every position in view, no scroll bar.
  void lensShowsTheWholeToyPrompt() {
    w_->tabs()->setCurrentIndex(MainWindow::PromptTabIndex);
    QTRY_VERIFY_WITH_TIMEOUT(!w_->promptView().lensGrid.empty() && !w_->isBusy(), 60000);
    hs::test::settle();
    hs::LensView* lens = w_->promptTab()->lensView();
    lens->plot()->replot();
    const int n = lens->map().positions();
    QVERIFY(n > 20);
    QCOMPARE(lens->firstPosition(), 0);
    QCOMPARE(lens->visiblePositions(), n);
    QVERIFY(!lens->scrollBar()->isVisible());
    const QRect cells = lens->plot()->axisRect()->rect();
    QVERIFY(cells.contains(lens->cellCenter(0, 0)) && cells.contains(lens->cellCenter(0, n - 1)));
  }

  // A 200-token prompt in a Prompt tab 1280 px wide: all 200 positions lie inside the view's width, no
  // scroll bar, position labels a line apart, hover on the last names it; "Scroll" is the opt-in to wide
  // cells that scroll, and turning it off shows everything again.
  void lensFitsTwoHundredPositions() {
    hs::gui::PromptTab tab("");
    tab.resize(1280, 700);
    tab.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    const int n = 200, L = 4;
    tab.setView(longPromptView(n, L));
    hs::test::settle();
    hs::LensView* lens = tab.lensView();
    lens->plot()->replot();
    hs::test::settle();
    QCOMPARE(lens->map().positions(), n);
    QVERIFY(!tab.lensScrollBox()->isChecked());
    QCOMPARE(lens->firstPosition(), 0);
    QCOMPARE(lens->visiblePositions(), n);
    QVERIFY(!lens->scrollBar()->isVisible());
    // No horizontal overflow: the view fits its scroll area, the cells fit the view, every position's cell
    // is inside the cells' rect.
    QVERIFY(lens->width() <= lens->parentWidget()->width());
    const QRect cells = lens->plot()->axisRect()->rect();
    QVERIFY(QRect(QPoint(0, 0), lens->plot()->size()).contains(cells));
    for (int p = 0; p < n; ++p)
      QVERIFY2(cells.contains(lens->cellCenter(L - 1, p)),
               qPrintable(QString("position %1 not in view").arg(p)));
    QVERIFY(lens->hoverText(lens->cellCenter(2, n - 1))
                .startsWith(QString("after layer 2 · position %1").arg(n - 1)));
    QVERIFY(lens->hoverText(lens->cellCenter(1, 0)).startsWith("after layer 1 · position 0"));
    // Position labels at least a line of the tick font apart (turned by 60°), thinned no more than needed.
    const QVector<double> ticks = lens->plot()->xAxis->tickVector();
    QVERIFY(ticks.size() >= 2);
    const double pitch =
        std::abs(lens->plot()->xAxis->coordToPixel(ticks[1]) - lens->plot()->xAxis->coordToPixel(ticks[0]));
    const int line = QFontMetrics(hs::plotstyle::tickFont()).height();
    qInfo("%d positions in %d px: labels every %d positions, %.1f px apart", n, cells.width(),
          lens->labelStep(), pitch);
    QVERIFY2(pitch >= line / 0.866 - 0.5, "overlapping position labels");
    QVERIFY2(pitch <= 3 * line / 0.866 || ticks[1] - ticks[0] == 1, "labels thinned for another width");
    // No top-token label is drawn in a cell too narrow for it.
    QCOMPARE(lens->visibleLabels(), 0);

    // Opt-in scrolling: wide cells, a scroll bar, the end in view; off again, all 200.
    tab.lensScrollBox()->setChecked(true);
    hs::test::settle();
    QVERIFY(lens->scrolling());
    QVERIFY(lens->scrollBar()->isVisible());
    QVERIFY(lens->visiblePositions() < n);
    QCOMPARE(lens->firstPosition() + lens->visiblePositions(), n);
    QCOMPARE(tab.viewState()["lens_scroll"], true);
    tab.lensScrollBox()->setChecked(false);
    hs::test::settle();
    QCOMPARE(lens->visiblePositions(), n);
    QVERIFY(!lens->scrollBar()->isVisible());
    tab.restoreViewState({{"lens_scroll", true}});
    QVERIFY(lens->scrolling());
  }
};

QTEST_MAIN(TestTokenViews)
#include "test_token_views.moc"
