#include "session/export_csv.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "model/io/atomic_file.h"
#include "results/results_json.h"
#include "session/output_set.h"
#include "util/error.h"

namespace hs {

namespace {

namespace fs = std::filesystem;

// RFC 4180: quote a field holding a separator, quote or line break; double the quotes inside.
std::string csvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q.push_back('"');
    q.push_back(c);
  }
  return q + "\"";
}

std::string csvCell(const nlohmann::json& c) {
  if (c.is_number()) return csvNumber(c.get<double>());
  if (c.is_string()) return csvField(c.get<std::string>());
  if (c.is_null()) return "";
  return csvField(c.dump());
}

void writeText(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

std::string csvNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest of 15..17 significant digits that reads back to exactly v (0.1 stays "0.1").
  char buf[40];
  for (int prec = 15; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

namespace {

std::string matrixToCsvWide(const Eigen::MatrixXd& m) {
  std::string s = "layer";
  for (Eigen::Index h = 0; h < m.cols(); ++h)
    s += ",h" + std::to_string(h);
  s += "\n";
  for (Eigen::Index l = 0; l < m.rows(); ++l) {
    s += std::to_string(l);
    for (Eigen::Index h = 0; h < m.cols(); ++h)
      s += "," + csvNumber(m(l, h));
    s += "\n";
  }
  return s;
}

}  // namespace

std::string gridToCsvWide(const HeadGrid& g) {
  return matrixToCsvWide(g.values);
}

std::string gridSeToCsvWide(const HeadGrid& g) {
  if (!g.hasSe()) fail("grid ", g.id, ": has no standard errors");
  return matrixToCsvWide(g.se);
}

std::string gridToCsvLong(const HeadGrid& g) {
  const bool se = g.hasSe();
  std::string s = se ? "layer,head,value,se\n" : "layer,head,value\n";
  for (int l = 0; l < g.layers(); ++l)
    for (int h = 0; h < g.heads(); ++h)
      s += std::to_string(l) + "," + std::to_string(h) + "," + csvNumber(g.values(l, h)) +
           (se ? "," + csvNumber(g.se(l, h)) : std::string()) + "\n";
  return s;
}

std::string curveToCsv(const Curve& c) {
  for (const auto& [id, y] : c.series)
    if (y.size() != c.x.size())
      fail("curve ", c.id, ": series ", id, " has ", y.size(), " values, expected ", c.x.size(),
           " (one per x)");
  for (const SeriesInterval& iv : c.intervals)
    if (iv.lo.size() != c.x.size() || iv.hi.size() != c.x.size())
      fail("curve ", c.id, ": the interval of ", iv.series, " has ", iv.lo.size(), " / ", iv.hi.size(),
           " values, expected ", c.x.size(), " (one per x)");
  std::string s = csvField(c.x_label.empty() ? "x" : c.x_label);
  for (const auto& [id, y] : c.series)
    s += "," + csvField(id);
  for (const SeriesInterval& iv : c.intervals)
    s += "," + csvField(iv.series + "_lo") + "," + csvField(iv.series + "_hi");
  s += "\n";
  for (size_t i = 0; i < c.x.size(); ++i) {
    s += csvNumber(c.x[i]);
    for (const auto& [id, y] : c.series)
      s += "," + csvNumber(y[i]);
    for (const SeriesInterval& iv : c.intervals)
      s += "," + csvNumber(iv.lo[i]) + "," + csvNumber(iv.hi[i]);
    s += "\n";
  }
  return s;
}

std::string tableToCsv(const Table& t) {
  std::string s;
  for (size_t i = 0; i < t.columns.size(); ++i)
    s += (i ? "," : "") + csvField(t.columns[i]);
  s += "\n";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (t.rows[r].size() != t.columns.size())
      fail("table ", t.id, ": row ", r, " has ", t.rows[r].size(), " cells, expected ", t.columns.size());
    for (size_t i = 0; i < t.rows[r].size(); ++i)
      s += (i ? "," : "") + csvCell(t.rows[r][i]);
    s += "\n";
  }
  return s;
}

std::string gridToJsonText(const HeadGrid& g) {
  return nlohmann::json(g).dump(2) + "\n";
}
std::string curveToJsonText(const Curve& c) {
  return nlohmann::json(c).dump(2) + "\n";
}

std::string fileNameFromId(const std::string& id) {
  std::string s;
  for (unsigned char c : id)
    s.push_back(std::isalnum(c) || c == '.' || c == '_' || c == '-' ? static_cast<char>(c) : '_');
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

void writeGridCsv(const HeadGrid& g, const std::string& path, bool wide) {
  writeText(path, wide ? gridToCsvWide(g) : gridToCsvLong(g));
}
void writeCurveCsv(const Curve& c, const std::string& path) {
  writeText(path, curveToCsv(c));
}
void writeGridJson(const HeadGrid& g, const std::string& path) {
  writeText(path, gridToJsonText(g));
}
void writeCurveJson(const Curve& c, const std::string& path) {
  writeText(path, curveToJsonText(c));
}

std::string promptsToCsv(const std::vector<PromptRecord>& prompts) {
  auto ids = [](const std::vector<int64_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i)
      s += (i ? " " : "") + std::to_string(v[i]);
    return s;
  };
  std::string out = "set,index,query_pos,ids,answer_ids,label_ids\n";
  std::map<std::string, int> index;  // position of each prompt inside its set
  for (const PromptRecord& p : prompts)
    out += csvField(p.set) + "," + std::to_string(index[p.set]++) + "," + std::to_string(p.query_pos) + "," +
           ids(p.ids) + "," + ids(p.answer_ids) + "," + ids(p.label_ids) + "\n";
  return out;
}

namespace {

// One file to write: its name inside the export folder, its text, and the result it came from.
struct ExportFile {
  std::string name, content, owner;
};

void renderRun(const AnalysisRun& run, const CsvExportOptions& options, std::vector<ExportFile>& files) {
  const std::string prefix = fileNameFromId(run.id) + ".";
  auto add = [&](const std::string& resultId, const std::string& suffix, std::string content) {
    files.push_back(
        {prefix + fileNameFromId(resultId) + suffix, std::move(content), run.id + "/" + resultId});
  };
  for (const auto& g : run.grids) {
    if (options.wide) add(g.id, ".csv", gridToCsvWide(g));
    if (options.wide && g.hasSe()) add(g.id, ".se.csv", gridSeToCsvWide(g));
    if (options.long_form) add(g.id, ".long.csv", gridToCsvLong(g));
    if (options.json) add(g.id, ".json", gridToJsonText(g));
  }
  for (const auto& c : run.curves) {
    add(c.id, ".csv", curveToCsv(c));
    if (options.json) add(c.id, ".json", curveToJsonText(c));
  }
  for (const auto& t : run.tables)
    add(t.id, ".csv", tableToCsv(t));
  if (!run.prompts.empty()) add("prompts", ".csv", promptsToCsv(run.prompts));
}

// Everything is rendered and checked before it is staged, so a name clash (two ids that differ only in
// characters a file name cannot hold) leaves the folder untouched.
std::vector<std::string> stageAll(OutputSet& out, const std::string& folder, std::vector<ExportFile> files) {
  std::map<std::string, std::string> owner;  // file name -> "<run>/<result>"
  for (const auto& f : files) {
    auto [it, inserted] = owner.emplace(f.name, f.owner);
    if (!inserted)
      fail(folder, ": results ", it->second, " and ", f.owner, " would both be written to ", f.name,
           ", expected ids that differ after making them file-name safe");
  }
  std::error_code ec;
  if (fs::exists(folder, ec) && !fs::is_directory(folder, ec))
    fail(folder, ": cannot export here: it is not a folder");
  std::vector<std::string> staged;
  for (auto& f : files) {
    const std::string path = (fs::path(folder) / f.name).string();
    out.addText(path, std::move(f.content));
    staged.push_back(path);
  }
  return staged;
}

std::vector<std::string> writeAll(const std::string& folder, std::vector<ExportFile> files) {
  OutputSet out(/*createFolders=*/true);
  std::vector<std::string> written = stageAll(out, folder, std::move(files));
  out.commit();
  return written;
}

}  // namespace

std::vector<std::string> stageSessionExport(OutputSet& out, const Session& s, const std::string& folder,
                                            const CsvExportOptions& options) {
  std::vector<ExportFile> files;
  for (const auto& r : s.runs)
    renderRun(r, options, files);
  return stageAll(out, folder, std::move(files));
}

std::vector<std::string> exportRun(const AnalysisRun& run, const std::string& folder,
                                   const CsvExportOptions& options) {
  std::vector<ExportFile> files;
  renderRun(run, options, files);
  return writeAll(folder, std::move(files));
}

std::vector<std::string> exportSession(const Session& s, const std::string& folder,
                                       const CsvExportOptions& options) {
  std::vector<ExportFile> files;
  for (const auto& r : s.runs)
    renderRun(r, options, files);
  return writeAll(folder, std::move(files));
}

}  // namespace hs
