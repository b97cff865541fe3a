#pragma once
// How the GUI names a run: its label everywhere (the Runs dock, the Heads tab's pickers, the Results tab,
// the panels' subtitles) is registry.h's runLabel, "method · model · task · seed N", followed by the options
// the run did not take at their defaults, so two runs that differ only in their options read differently;
// its tooltip lists every option, the provenance and the headline numbers as rich text whose lines wrap.
#include <QString>
#include <QStringList>

#include "results/results.h"

namespace hs::gui {

// "key=value" for each of the run's method options whose value differs from the option's default, in the
// method's option order (shared-data folders filled in from the data roots count as defaults). Empty for a
// method this build does not know.
QStringList nonDefaultOptions(const AnalysisRun& run);
// runLabel(run), then " · " and nonDefaultOptions joined by ", " when there are any.
QString runDisplayLabel(const AnalysisRun& run);
// Rich text: the label, the run id, when it was made, what it holds, the task, every option (non-default
// ones in bold) and the summary's numbers, each on its own line, long values broken after their
// separators so that the text wraps (a tooltip never runs off the screen).
QString runToolTip(const AnalysisRun& run);

}  // namespace hs::gui
