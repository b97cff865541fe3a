#include "analysis/framework/options.h"

#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "util/error.h"
#include "util/file_text.h"

namespace hs {
namespace {

std::string number(double v) {
  if (v == std::floor(v) && std::abs(v) < 1.0e16) return std::to_string(static_cast<long long>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> items;
  std::string item;
  std::stringstream ss(s);
  while (std::getline(ss, item, ','))
    if (!item.empty()) items.push_back(item);
  return items;
}

// A whole number from text; nullopt for anything else.
std::optional<long long> wholeNumber(const std::string& s) {
  try {
    size_t used = 0;
    const long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

bool inRange(const OptionCheck& c, double v) {
  if (c.min && (c.min_open ? v <= *c.min : v < *c.min)) return false;
  if (c.max && v > *c.max) return false;
  return true;
}

// The value checked against its spec; returns it normalised (e.g. 3.0 for an Int option becomes 3).
nlohmann::json checked(const OptionSpec& s, const nlohmann::json& v, const std::string& what) {
  auto bad = [&](const std::string& expected) -> nlohmann::json {
    std::string shown = v.dump();
    if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
    fail(what, ": option ", s.key, " = ", shown, ": expected ", expected);
  };
  auto numberIn = [&](double d, const char* kind) {
    if (!std::isfinite(d) || !inRange(s.check, d))
      bad(std::string(kind) + (s.rangeText().empty() ? "" : " in " + s.rangeText()));
  };
  // A whole number the bound field cannot hold (an int option given 4294967297) is refused with the range
  // it can take, instead of wrapping around.
  auto fitsField = [&](double d, const char* kind) {
    if (d >= s.field_min && d <= s.field_max) return;
    const double lo = s.check.min ? std::max(*s.check.min, s.field_min) : s.field_min;
    const double hi = s.check.max ? std::min(*s.check.max, s.field_max) : s.field_max;
    bad(cat(kind, " in [", number(lo), ", ", number(hi), "]"));
  };
  switch (s.type) {
    case OptionType::Int: {
      if (!v.is_number()) return bad("a whole number");
      const double d = v.get<double>();
      if (d != std::floor(d) || std::abs(d) > 9.0e15) return bad("a whole number");
      fitsField(d, "a whole number");
      numberIn(d, "a whole number");
      return v.is_number_unsigned() ? nlohmann::json(v.get<uint64_t>()) : nlohmann::json(v.get<int64_t>());
    }
    case OptionType::Real:
      if (!v.is_number()) return bad("a number");
      numberIn(v.get<double>(), "a number");
      return v.get<double>();
    case OptionType::Bool:
      if (!v.is_boolean()) return bad("true or false");
      return v;
    case OptionType::Text:
      if (!v.is_string()) return bad("text");
      return v;
    case OptionType::Choice: {
      if (!v.is_string()) return bad("one of " + s.rangeText());
      for (const std::string& c : s.check.choices)
        if (c == v.get<std::string>()) return v;
      return bad("one of " + s.rangeText());
    }
    case OptionType::File: {
      if (!v.is_string()) return bad("a file path");
      const std::string p = v.get<std::string>();
      // A missing file, a folder, a FIFO or a device is named as such (file_text.h).
      if (!p.empty()) withContext(cat(what, ": option ", s.key), [&] { requireRegularFile(p); });
      return v;
    }
    case OptionType::IntList:
      if (!v.is_array()) return bad("a list of whole numbers");
      for (const nlohmann::json& e : v) {
        if (!e.is_number_integer()) return bad("a list of whole numbers");
        fitsField(e.get<double>(), "whole numbers");
        numberIn(e.get<double>(), "whole numbers");
      }
      return v;
    case OptionType::HeadList:
      if (!v.is_array()) return bad("a list of [layer, head] pairs");
      for (const nlohmann::json& e : v)
        if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer() || !e[1].is_number_integer() ||
            e[0].get<int64_t>() < 0 || e[1].get<int64_t>() < 0)
          return bad("a list of [layer, head] pairs of non-negative integers");
      return v;
  }
  return v;
}

}  // namespace

const char* toString(OptionType t) {
  switch (t) {
    case OptionType::Int:
      return "int";
    case OptionType::Real:
      return "real";
    case OptionType::Bool:
      return "bool";
    case OptionType::Text:
      return "text";
    case OptionType::Choice:
      return "choice";
    case OptionType::File:
      return "file";
    case OptionType::IntList:
      return "int_list";
    case OptionType::HeadList:
      return "head_list";
  }
  return "?";
}

std::string OptionSpec::cliFlag() const {
  std::string f = key;
  for (char& c : f)
    if (c == '_') c = '-';
  return "--" + f;
}

std::string OptionSpec::cliAlias() const {
  return flag.empty() ? std::string() : "--" + flag;
}

std::string OptionSpec::defaultText() const {
  return optionText(*this, default_value);
}

std::string OptionSpec::rangeText() const {
  if (type == OptionType::Choice) {
    std::string s;
    for (const std::string& c : check.choices)
      s += (s.empty() ? "" : " | ") + c;
    return s;
  }
  if (!check.min && !check.max) return "";
  if (check.min && !check.max) return (check.min_open ? "> " : ">= ") + number(*check.min);
  if (!check.min) return "<= " + number(*check.max);
  return (check.min_open ? "(" : "[") + number(*check.min) + ", " + number(*check.max) + "]";
}

nlohmann::json resolveOptions(const std::vector<OptionSpec>& specs, const nlohmann::json& given,
                              const std::string& what) {
  if (!given.is_null() && !given.is_object()) fail(what, ": options must be a JSON object");
  std::set<std::string> known;
  nlohmann::json out = nlohmann::json::object();
  for (const OptionSpec& s : specs) {
    known.insert(s.key);
    const bool has = given.is_object() && given.contains(s.key);
    out[s.key] = checked(s, has ? given.at(s.key) : s.default_value, what);
  }
  if (given.is_object())
    for (const auto& [key, value] : given.items())
      if (!known.count(key)) {
        std::string list;
        for (const OptionSpec& s : specs)
          list += (list.empty() ? "" : ", ") + s.key;
        fail(what, ": unknown option \"", key, "\" (options: ", list.empty() ? "none" : list, ")");
      }
  return out;
}

nlohmann::json parseOptionText(const OptionSpec& s, const std::string& text) {
  auto bad = [&](const std::string& expected) -> nlohmann::json {
    fail(s.cliFlag(), ": '", text, "' is not ", expected);
  };
  switch (s.type) {
    case OptionType::Int: {
      const auto v = wholeNumber(text);
      if (!v) return bad("a whole number");
      return *v;
    }
    case OptionType::Real: {
      try {
        size_t used = 0;
        const double d = std::stod(text, &used);
        if (used == text.size()) return d;
      } catch (const std::exception&) {
      }
      return bad("a number");
    }
    case OptionType::Bool:
      if (text == "true" || text == "1" || text == "on" || text == "yes") return true;
      if (text == "false" || text == "0" || text == "off" || text == "no") return false;
      return bad("true or false");
    case OptionType::Text:
    case OptionType::Choice:
    case OptionType::File:
      return text;
    case OptionType::IntList: {
      nlohmann::json a = nlohmann::json::array();
      for (const std::string& item : splitComma(text)) {
        const auto v = wholeNumber(item);
        if (!v) return bad("a comma-separated list of whole numbers");
        a.push_back(*v);
      }
      return a;
    }
    case OptionType::HeadList: {
      nlohmann::json a = nlohmann::json::array();
      for (const std::string& item : splitComma(text)) {
        const size_t dot = item.find('.');
        const auto l = dot == std::string::npos ? std::nullopt : wholeNumber(item.substr(0, dot));
        const auto h = dot == std::string::npos ? std::nullopt : wholeNumber(item.substr(dot + 1));
        if (!l || !h || *l < 0 || *h < 0) return bad("a list of heads LAYER.HEAD (e.g. 3.0,3.5)");
        a.push_back({*l, *h});
      }
      return a;
    }
  }
  return text;
}

std::string optionText(const OptionSpec& s, const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (s.type == OptionType::IntList && v.is_array()) {
    std::string out;
    for (const nlohmann::json& e : v)
      out += (out.empty() ? "" : ",") + e.dump();
    return out;
  }
  if (s.type == OptionType::HeadList && v.is_array()) {
    std::string out;
    for (const nlohmann::json& e : v)
      if (e.is_array() && e.size() == 2) out += (out.empty() ? "" : ",") + e[0].dump() + "." + e[1].dump();
    return out;
  }
  if (v.is_number_float()) return number(v.get<double>());
  return v.dump();
}

}  // namespace hs
