#pragma once
// File → Import published results…: runs made elsewhere added to the open session. Published per-head
// scores (core/analysis/published.h: the dual-route study's JSON files or folders) become runs of the
// method "published"; a .hscope session (e.g. one written by `headscope-cli import-published`, or the
// converted copies in share/headscope/published) gives all its runs. Runs whose id is taken get a fresh one.
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

#include "gui_types.h"

namespace hs::gui {

// Reads everything first; throws hs::Error naming the file on any problem (nothing is returned then).
std::vector<AnalysisOutputPtr> readImportedRuns(const QStringList& paths, const std::vector<std::string>& taken);
// Where the import dialog starts: the shipped converted copies, else ../shared/data/published/dual_route
// when present, else "".
QString defaultPublishedFolder();

}  // namespace hs::gui
