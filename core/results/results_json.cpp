#include "results/results_json.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>

#include "util/error.h"
#include "util/json_read.h"

namespace hs {

namespace {

using nlohmann::json;

const json& requireObject(const json& j, const std::string& where) {
  if (!j.is_object()) fail(where, ": is a JSON ", j.type_name(), ", expected an object");
  return j;
}

// A string member: required members must exist; absent optional ones read as "".
std::string stringMember(const json& j, const char* key, const std::string& where, bool required) {
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) fail(where, ": has no \"", key, "\"");
    return {};
  }
  if (!it->is_string()) fail(where, ": \"", key, "\" is a JSON ", it->type_name(), ", expected a string");
  return it->get<std::string>();
}

// An array member (absent optional arrays read as empty).
const json& arrayMember(const json& j, const char* key, const std::string& where, bool required) {
  static const json kEmpty = json::array();
  auto it = j.find(key);
  if (it == j.end()) {
    if (required) fail(where, ": has no \"", key, "\"");
    return kEmpty;
  }
  if (!it->is_array()) fail(where, ": \"", key, "\" is a JSON ", it->type_name(), ", expected an array");
  return *it;
}

json objectMember(const json& j, const char* key, const std::string& where) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return json::object();
  if (!it->is_object()) fail(where, ": \"", key, "\" is a JSON ", it->type_name(), ", expected an object");
  return *it;
}

json doublesToJson(const std::vector<double>& v) {
  json a = json::array();
  for (double d : v)
    a.push_back(doubleToJson(d));
  return a;
}

std::vector<double> doublesFromJson(const json& a, const std::string& where) {
  std::vector<double> v;
  v.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    v.push_back(doubleFromJson(a[i], where + "[" + std::to_string(i) + "]"));
  return v;
}

// Table cells: numbers are doubles (non-finite ones encoded as for grids), anything else as given.
json cellToJson(const json& c) {
  if (c.is_number_float()) return doubleToJson(c.get<double>());
  return c;
}

json cellFromJson(const json& c) {
  if (c.is_string()) {
    const auto& s = c.get_ref<const std::string&>();
    if (s == "NaN" || s == "Infinity" || s == "-Infinity") return doubleFromJson(c, "cell");
  }
  return c;
}

// A [rows, cols] matrix as rows of doubles (doubleToJson).
json matrixToJson(const Eigen::MatrixXd& m) {
  json rows = json::array();
  for (Eigen::Index l = 0; l < m.rows(); ++l) {
    json row = json::array();
    for (Eigen::Index h = 0; h < m.cols(); ++h)
      row.push_back(doubleToJson(m(l, h)));
    rows.push_back(std::move(row));
  }
  return rows;
}

// The inverse for `rows` already checked to hold L arrays; each must hold H entries.
Eigen::MatrixXd matrixFromJson(const json& rows, int64_t L, int64_t H, const std::string& where,
                               const std::string& key) {
  for (int64_t l = 0; l < L; ++l) {
    const json& row = rows[static_cast<size_t>(l)];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != H)
      fail(where, ": ", key, " row ", l, " has ",
           row.is_array() ? std::to_string(row.size()) : row.type_name(), " entries, expected ", H);
  }
  Eigen::MatrixXd m(L, H);  // [layers, heads]
  for (int64_t l = 0; l < L; ++l) {
    const json& row = rows[static_cast<size_t>(l)];
    for (int64_t h = 0; h < H; ++h)
      m(l, h) = doubleFromJson(row[static_cast<size_t>(h)],
                               where + ": " + key + "[" + std::to_string(l) + "][" + std::to_string(h) + "]");
  }
  return m;
}

Provenance provenanceMember(const json& j, const std::string& where) {
  auto it = j.find("provenance");
  if (it == j.end() || it->is_null()) return {};
  return withContext(where, [&] { return it->get<Provenance>(); });
}

}  // namespace

json doubleToJson(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

double doubleFromJson(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  fail(where, ": is ", jsonExcerpt(j), ", expected a number or one of \"NaN\", \"Infinity\", \"-Infinity\"");
}

// ---------------------------------------------------------------------------------------------
// Provenance

void to_json(json& j, const Provenance& p) {
  j = json{{"method", p.method},       {"model", p.model},     {"task", p.task},      {"seed", p.seed},
           {"n_prompts", p.n_prompts}, {"options", p.options}, {"created", p.created}};
  if (!p.derived.empty()) j["derived"] = p.derived;
}

void from_json(const json& j, Provenance& p) {
  const std::string where = "provenance";
  requireObject(j, where);
  p.method = stringMember(j, "method", where, false);
  p.model = stringMember(j, "model", where, false);
  p.task = stringMember(j, "task", where, false);
  p.created = stringMember(j, "created", where, false);
  p.seed = 0;
  if (auto it = j.find("seed"); it != j.end()) {
    if (!it->is_number_unsigned())
      fail(where, ": \"seed\" is ", jsonExcerpt(*it), ", expected a non-negative integer");
    p.seed = it->get<uint64_t>();
  }
  p.n_prompts = 0;
  if (auto it = j.find("n_prompts"); it != j.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > INT32_MAX)
      fail(where, ": \"n_prompts\" is ", jsonExcerpt(*it), ", expected an integer in 0..", INT32_MAX);
    p.n_prompts = it->get<int>();
  }
  p.options = objectMember(j, "options", where);
  p.derived = objectMember(j, "derived", where);
}

// ---------------------------------------------------------------------------------------------
// HeadGrid

void to_json(json& j, const HeadGrid& g) {
  json rows = matrixToJson(g.values);
  j = json{{"id", g.id},
           {"name", g.name},
           {"unit", g.unit},
           {"shape", {g.values.rows(), g.values.cols()}},
           {"values", std::move(rows)},
           {"provenance", g.provenance}};
  if (g.hasSe()) j["se"] = matrixToJson(g.se);
}

void from_json(const json& j, HeadGrid& g) {
  requireObject(j, "grid");
  g.id = stringMember(j, "id", "grid", true);
  const std::string where = "grid " + g.id;
  g.name = stringMember(j, "name", where, false);
  g.unit = stringMember(j, "unit", where, false);

  const json& shape = arrayMember(j, "shape", where, true);
  if (shape.size() != 2 || !shape[0].is_number_unsigned() || !shape[1].is_number_unsigned())
    fail(where, ": \"shape\" is ", jsonExcerpt(shape),
         ", expected [layers, heads] with non-negative integers");
  const auto L = shape[0].get<int64_t>(), H = shape[1].get<int64_t>();
  if (L > (1 << 20) || H > (1 << 20))
    fail(where, ": \"shape\" ", jsonExcerpt(shape), " is implausibly large");

  const json& rows = arrayMember(j, "values", where, true);
  if (static_cast<int64_t>(rows.size()) != L)
    fail(where, ": \"values\" has ", rows.size(), " rows, expected ", L, " (shape ", jsonExcerpt(shape), ")");
  // Every row is checked before the matrix is sized: the shape alone must not allocate.
  for (int64_t l = 0; l < L; ++l) {
    const json& row = rows[static_cast<size_t>(l)];
    if (!row.is_array() || static_cast<int64_t>(row.size()) != H)
      fail(where, ": values row ", l, " has ", row.is_array() ? std::to_string(row.size()) : row.type_name(),
           " entries, expected ", H, " (shape ", jsonExcerpt(shape), ")");
  }
  g.values = matrixFromJson(rows, L, H, where, "values");  // [layers, heads]
  g.se = Eigen::MatrixXd();
  if (auto it = j.find("se"); it != j.end() && !it->is_null()) {
    if (!it->is_array() || static_cast<int64_t>(it->size()) != L)
      fail(where, ": \"se\" is ", jsonExcerpt(*it), ", expected ", L, " rows of ", H, " (the values' shape)");
    g.se = matrixFromJson(*it, L, H, where, "se");  // [layers, heads]
  }
  g.provenance = provenanceMember(j, where);
}

// ---------------------------------------------------------------------------------------------
// Curve

void to_json(json& j, const Curve& c) {
  json series = json::array();
  for (const auto& [id, y] : c.series)
    series.push_back(json{{"id", id}, {"y", doublesToJson(y)}});
  j = json{{"id", c.id},
           {"name", c.name},
           {"x_label", c.x_label},
           {"y_label", c.y_label},
           {"x", doublesToJson(c.x)},
           {"series", std::move(series)},
           {"provenance", c.provenance}};
  if (!c.intervals.empty()) {
    json intervals = json::array();
    for (const SeriesInterval& i : c.intervals)
      intervals.push_back(
          json{{"series", i.series}, {"lo", doublesToJson(i.lo)}, {"hi", doublesToJson(i.hi)}});
    j["intervals"] = std::move(intervals);
  }
}

void from_json(const json& j, Curve& c) {
  requireObject(j, "curve");
  c.id = stringMember(j, "id", "curve", true);
  const std::string where = "curve " + c.id;
  c.name = stringMember(j, "name", where, false);
  c.x_label = stringMember(j, "x_label", where, false);
  c.y_label = stringMember(j, "y_label", where, false);
  c.x = doublesFromJson(arrayMember(j, "x", where, true), where + ": x");
  c.series.clear();
  std::set<std::string> seen;
  for (const json& s : arrayMember(j, "series", where, true)) {
    requireObject(s, where + ": series entry");
    std::string id = stringMember(s, "id", where + ": series entry", true);
    const std::string sw = where + ": series " + id;
    if (!seen.insert(id).second) fail(sw, ": appears twice, expected unique series ids");
    std::vector<double> y = doublesFromJson(arrayMember(s, "y", sw, true), sw + ": y");
    if (y.size() != c.x.size())
      fail(sw, ": has ", y.size(), " y values, expected ", c.x.size(), " (one per x)");
    c.series.emplace_back(std::move(id), std::move(y));
  }
  c.intervals.clear();
  for (const json& i : arrayMember(j, "intervals", where, false)) {
    requireObject(i, where + ": interval entry");
    SeriesInterval si;
    si.series = stringMember(i, "series", where + ": interval entry", true);
    const std::string iw = where + ": interval of " + si.series;
    if (!seen.count(si.series)) fail(iw, ": no such series");
    if (c.intervalOf(si.series)) fail(iw, ": appears twice");
    si.lo = doublesFromJson(arrayMember(i, "lo", iw, true), iw + ": lo");
    si.hi = doublesFromJson(arrayMember(i, "hi", iw, true), iw + ": hi");
    if (si.lo.size() != c.x.size() || si.hi.size() != c.x.size())
      fail(iw, ": has ", si.lo.size(), " lo and ", si.hi.size(), " hi values, expected ", c.x.size(),
           " (one per x)");
    c.intervals.push_back(std::move(si));
  }
  c.provenance = provenanceMember(j, where);
}

// ---------------------------------------------------------------------------------------------
// Table

void to_json(json& j, const Table& t) {
  json rows = json::array();
  for (const auto& r : t.rows) {
    json row = json::array();
    for (const auto& cell : r)
      row.push_back(cellToJson(cell));
    rows.push_back(std::move(row));
  }
  j = json{{"id", t.id},
           {"name", t.name},
           {"columns", t.columns},
           {"rows", std::move(rows)},
           {"provenance", t.provenance}};
}

void from_json(const json& j, Table& t) {
  requireObject(j, "table");
  t.id = stringMember(j, "id", "table", true);
  const std::string where = "table " + t.id;
  t.name = stringMember(j, "name", where, false);
  t.columns.clear();
  for (const json& c : arrayMember(j, "columns", where, true)) {
    if (!c.is_string()) fail(where, ": column name ", jsonExcerpt(c), " is not a string");
    t.columns.push_back(c.get<std::string>());
  }
  t.rows.clear();
  const json& rows = arrayMember(j, "rows", where, true);
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].is_array() || rows[r].size() != t.columns.size())
      fail(where, ": row ", r, " has ",
           rows[r].is_array() ? std::to_string(rows[r].size()) : rows[r].type_name(), " cells, expected ",
           t.columns.size(), " (one per column)");
    std::vector<json> row;
    for (const json& cell : rows[r])
      row.push_back(cellFromJson(cell));
    t.rows.push_back(std::move(row));
  }
  t.provenance = provenanceMember(j, where);
}

// ---------------------------------------------------------------------------------------------
// AnalysisRun

void to_json(json& j, const PromptRecord& p) {
  j = json{{"set", p.set}, {"ids", p.ids}, {"query_pos", p.query_pos}, {"answer_ids", p.answer_ids}};
  if (!p.label_ids.empty()) j["label_ids"] = p.label_ids;
}

void from_json(const json& j, PromptRecord& p) {
  requireObject(j, "prompt");
  p.set = stringMember(j, "set", "prompt", false);
  auto ids = [&](const char* key) {
    std::vector<int64_t> out;
    for (const json& v : arrayMember(j, key, "prompt", false)) {
      if (!v.is_number_integer()) fail("prompt: ", key, " holds ", v.dump(), ", expected token ids");
      out.push_back(v.get<int64_t>());
    }
    return out;
  };
  p.ids = ids("ids");
  p.answer_ids = ids("answer_ids");
  p.label_ids = ids("label_ids");
  const auto q = j.find("query_pos");
  p.query_pos = q != j.end() && q->is_number_integer() ? q->get<int>() : -1;
}

void to_json(json& j, const AnalysisRun& r) {
  j = json{
      {"id", r.id},           {"method", r.method},  {"options", r.options}, {"provenance", r.provenance},
      {"grids", r.grids},     {"curves", r.curves},  {"tables", r.tables},   {"prompts", r.prompts},
      {"tensors", r.tensors}, {"summary", r.summary}};
}

void from_json(const json& j, AnalysisRun& r) {
  requireObject(j, "run");
  r.id = stringMember(j, "id", "run", true);
  const std::string where = "run " + r.id;
  r.method = stringMember(j, "method", where, false);
  r.options = objectMember(j, "options", where);
  r.summary = objectMember(j, "summary", where);
  r.provenance = provenanceMember(j, where);

  // Ids must be unique per kind inside a run: exports and views address results by them.
  auto readAll = [&](const char* key, auto& out) {
    out.clear();
    std::set<std::string> ids;
    for (const json& e : arrayMember(j, key, where, false)) {
      out.push_back(withContext(
          where, [&] { return e.get<typename std::remove_reference_t<decltype(out)>::value_type>(); }));
      if (!ids.insert(out.back().id).second)
        fail(where, ": ", key, " id ", out.back().id, " appears twice, expected unique ids");
    }
  };
  readAll("grids", r.grids);
  readAll("curves", r.curves);
  readAll("tables", r.tables);
  r.prompts.clear();
  for (const json& p : arrayMember(j, "prompts", where, false))
    r.prompts.push_back(withContext(where, [&] { return p.get<PromptRecord>(); }));

  r.tensors.clear();
  for (const json& t : arrayMember(j, "tensors", where, false)) {
    if (!t.is_string()) fail(where, ": tensor name ", jsonExcerpt(t), " is not a string");
    r.tensors.push_back(t.get<std::string>());
  }
}

// ---------------------------------------------------------------------------------------------
// HeadRef

void to_json(json& j, const HeadRef& h) {
  j = json::array({h.layer, h.head});
}

std::string headsText(const std::vector<HeadRef>& heads, const std::string& sep) {
  std::string s;
  for (const HeadRef& h : heads)
    s += (s.empty() ? "" : sep) + std::to_string(h.layer) + "." + std::to_string(h.head);
  return s;
}

void from_json(const json& j, HeadRef& h) {
  auto small = [](const json& v) {
    return v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= (1 << 20);
  };
  if (!j.is_array() || j.size() != 2 || !small(j[0]) || !small(j[1]))
    fail("head ", jsonExcerpt(j), ": expected [layer, head] with integers in 0..", 1 << 20);
  h.layer = j[0].get<int>();
  h.head = j[1].get<int>();
}

}  // namespace hs
