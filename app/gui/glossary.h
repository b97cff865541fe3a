#pragma once
// The glossary of every metric HeadScope shows: the terms of the field (TR ratio, AIE, α, ...) written
// here, and every output every registered method declares (its id, unit and what a high value means,
// from core/analysis/framework/registry.h), so a new method's grids are explained without touching the GUI.
#include <QString>

#include <vector>

class QWidget;

namespace hs::gui {

struct GlossaryEntry {
  QString key;   // an output id ("tsla.tr") or a term ("tr_ratio")
  QString term;  // what is shown as the heading
  QString text;  // the explanation (plain text)
};

std::vector<GlossaryEntry> glossary();
// The entry of a metric key as the Heads tab names it ("<run id>/<grid id>" or the grid id); nullptr when
// the glossary has none.
const GlossaryEntry* glossaryEntry(const QString& metricKey);
QString glossaryHtml();
// A dialog with the glossary, scrolled to `metricKey`'s entry when it has one.
void showGlossary(QWidget* parent, const QString& metricKey = {});

}  // namespace hs::gui
