#pragma once
// Export of results to plain files (docs/architecture.md, "Sessions and export"): CSV for spreadsheets and
// pandas, JSON in the exact form of results_json.h.
//
// CSV conventions
// - Grids, wide form (the default): a header row "layer,h0,h1,...,h{H-1}", then one row per layer
//   "l,v(l,0),...,v(l,H-1)" — the heatmap as a matrix.
// - Grids, long form: header "layer,head,value", one row per head, layer-major; with standard errors
//   "layer,head,value,se". A grid with standard errors also gets them as a wide file "<...>.se.csv".
// - Curves: header "<x_label or x>,<series id>,...", then "<series id>_lo,<series id>_hi" for every series
//   with a 95 % interval; one row per x value.
// - Tables: header of the column names, one row per table row.
// - Numbers use the shortest decimal form that reads back to the same double; NaN is "NaN",
//   infinities are "inf" and "-inf" (pandas reads all three). Text fields are quoted per RFC 4180
//   when they hold a comma, quote or line break. Lines end with "\n".
#include <string>
#include <vector>

#include "results/results.h"
#include "session/session.h"

namespace hs {

std::string gridToCsvWide(const HeadGrid& g);
std::string gridToCsvLong(const HeadGrid& g);
std::string gridSeToCsvWide(const HeadGrid& g);  // the standard errors in the wide form (throws without)
std::string curveToCsv(const Curve& c);
std::string tableToCsv(const Table& t);
std::string csvNumber(double v);  // the number format above

// JSON text (2-space indent) of one grid / curve, as results_json.h writes it.
std::string gridToJsonText(const HeadGrid& g);
std::string curveToJsonText(const Curve& c);

// A file-name-safe form of an id: [A-Za-z0-9._-] kept, everything else becomes '_'.
std::string fileNameFromId(const std::string& id);

struct CsvExportOptions {
  bool wide = true;        // grids as <run>.<grid>.csv (wide form)
  bool long_form = false;  // also <run>.<grid>.long.csv
  bool json = false;       // also <run>.<grid>.json and <run>.<curve>.json
};

// The prompts of a run: header "set,index,query_pos,ids,answer_ids", one row per prompt, token ids separated
// by spaces.
std::string promptsToCsv(const std::vector<PromptRecord>& prompts);

// Writes every grid, curve and table of a run into `folder` (created if missing) as
// "<run id>.<result id>.csv" (ids made file-name safe; ".long.csv" / ".json" for the other forms), and its
// prompts as "<run id>.prompts.csv" when it recorded any;
// returns the paths written, in order. The files are written as one transaction (output_set.h): on any
// error no file of the export is left and every previous file is as it was. Throws naming the file on
// I/O errors, and — before writing anything — when two results would get the same file name.
std::vector<std::string> exportRun(const AnalysisRun& run, const std::string& folder,
                                   const CsvExportOptions& options = {});
// exportRun for every run of a session (all files as one transaction: output_set.h).
std::vector<std::string> exportSession(const Session& s, const std::string& folder,
                                       const CsvExportOptions& options = {});
// The files exportSession would write, added to `out` (created with createFolders) to be committed with
// other outputs; returns their paths.
class OutputSet;
std::vector<std::string> stageSessionExport(OutputSet& out, const Session& s, const std::string& folder,
                                            const CsvExportOptions& options = {});

// Single results to a chosen path (atomic).
void writeGridCsv(const HeadGrid& g, const std::string& path, bool wide = true);
void writeCurveCsv(const Curve& c, const std::string& path);
void writeGridJson(const HeadGrid& g, const std::string& path);
void writeCurveJson(const Curve& c, const std::string& path);

}  // namespace hs
