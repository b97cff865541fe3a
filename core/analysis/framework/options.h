#pragma once
// Method options declared once. Every option of an analysis is one OptionSpec: its JSON key (also the CLI
// flag --key-with-dashes, so every option a run records can be given back on the command line, and the GUI
// form field), type, default, range or choices and a line of help. The
// CLI's flags and --help, the GUI's options forms, the run's provenance and the session's method records
// are all generated from these specs (registry.h).
//
// A method keeps its typed options struct (the C++ API its tests and callers use); an OptionTable binds
// each struct field to its spec once, so reading a run's JSON options into the struct and writing the
// struct back are generic and the defaults are the struct's own.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "results/results.h"
#include "results/results_json.h"

namespace hs {

enum class OptionType {
  Int,       // whole number (JSON integer)
  Real,      // number
  Bool,      // true / false (a CLI flag)
  Text,      // free text
  Choice,    // one of `choices`
  File,      // a path to an existing file ("" = none)
  IntList,   // [1, 2, 4]; text "1,2,4"
  HeadList,  // [[layer, head], ...]; text "3.0,3.5"
};
const char* toString(OptionType t);

// Range and choice constraints of one option.
struct OptionCheck {
  std::optional<double> min, max;    // inclusive numeric bounds (Int, Real, IntList items)
  bool min_open = false;             // min itself is excluded: (min, max]
  std::vector<std::string> choices;  // Choice
  bool file = false;                 // Text that names a file (OptionType::File)
  // Text that names a folder of the shared data: left empty, it becomes <root>/<data_folder> for the first
  // data root (data_roots.h) that holds it. The roots are the CLI's and the GUI's to give; core has none.
  std::string data_folder;

  static OptionCheck range(double lo, double hi) { return {lo, hi, false, {}, false, {}}; }
  static OptionCheck atLeast(double lo) { return {lo, std::nullopt, false, {}, false, {}}; }
  static OptionCheck positive() { return {0.0, std::nullopt, true, {}, false, {}}; }
  static OptionCheck oneOf(std::vector<std::string> c) { return {{}, {}, false, std::move(c), false, {}}; }
  static OptionCheck path() { return {{}, {}, false, {}, true, {}}; }
  static OptionCheck sharedData(std::string rel) { return {{}, {}, false, {}, false, std::move(rel)}; }
  OptionCheck& openBelow() {
    min_open = true;
    return *this;
  }
};

struct OptionSpec {
  std::string key;  // JSON key, e.g. "top_percent"
  OptionType type = OptionType::Int;
  nlohmann::json default_value;  // what a run uses when the option is not given
  OptionCheck check;
  std::string help;  // one line: what the option does
  std::string flag;  // a second, shorter CLI flag without "--" (the key's own flag always works too)
  // The bound field's own range (Int, IntList items): a value it cannot hold is refused, never wrapped.
  double field_min = -9.0e15, field_max = 9.0e15;

  std::string cliFlag() const;      // "--top-percent": the key with '_' → '-', so a run's options are flags
  std::string cliAlias() const;     // "--flag" when a second flag is declared, else ""
  std::string defaultText() const;  // the default as the CLI and the forms write it ("3", "zero", "")
  std::string rangeText() const;    // "(0, 100]", "zero | mean | both", "" when unconstrained
};

// `given` (a JSON object holding any subset of the options) completed with the defaults; every value is
// checked against its spec (type, range, choices; a File must exist) and unknown keys are refused. Errors
// name `what` (the method) and the key, e.g. "tsla: option top_percent = 200 is outside (0, 100]".
nlohmann::json resolveOptions(const std::vector<OptionSpec>& specs, const nlohmann::json& given,
                              const std::string& what);

// One option's value from the text a CLI argument or a form field holds ("12", "0.5", "true", "1,2,4",
// "3.0,3.5"); throws naming the option when the text does not parse. Range checks are resolveOptions'.
nlohmann::json parseOptionText(const OptionSpec& spec, const std::string& text);
// The inverse: a value as text (what parseOptionText reads back).
std::string optionText(const OptionSpec& spec, const nlohmann::json& value);

namespace detail {
template <class I>
void setFieldRange(OptionSpec& s) {
  s.field_min = std::max(s.field_min, static_cast<double>(std::numeric_limits<I>::min()));
  s.field_max = std::min(s.field_max, static_cast<double>(std::numeric_limits<I>::max()));
}
template <class T>
constexpr OptionType optionTypeOf() {
  if constexpr (std::is_same_v<T, bool>) return OptionType::Bool;
  if constexpr (std::is_integral_v<T>) return OptionType::Int;
  if constexpr (std::is_floating_point_v<T>) return OptionType::Real;
  if constexpr (std::is_same_v<T, std::string>) return OptionType::Text;
  if constexpr (std::is_same_v<T, std::vector<int>>) return OptionType::IntList;
  if constexpr (std::is_same_v<T, std::vector<HeadRef>>) return OptionType::HeadList;
}
}  // namespace detail

// The options of struct O, each bound to its field. Defaults are the fields of `defaults` (O{} unless given).
//   OptionTable<TslaOptions>()
//       .add("top_percent", &TslaOptions::top_percent, "share of heads selected", OptionCheck::range(0, 100))
//       .add("steps", [](LtvOptions& o) -> int& { return o.train.steps; }, "optimizer steps");
template <class O>
class OptionTable {
 public:
  explicit OptionTable(O defaults = O{}) : defaults_(std::move(defaults)) {}

  // `field` is a pointer to a data member of O or a callable O& → T&. Text fields with choices become
  // Choice options, with check.file File options.
  template <class Field>
  OptionTable& add(const std::string& key, Field field, const std::string& help, OptionCheck check = {},
                   const std::string& flag = "") {
    using T = std::remove_cv_t<std::remove_reference_t<std::invoke_result_t<Field, O&>>>;
    OptionSpec s;
    s.key = key;
    s.type = detail::optionTypeOf<T>();
    if (s.type == OptionType::Text && !check.choices.empty()) s.type = OptionType::Choice;
    if (s.type == OptionType::Text && check.file) s.type = OptionType::File;
    s.default_value = std::invoke(field, defaults_);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) detail::setFieldRange<T>(s);
    if constexpr (std::is_same_v<T, std::vector<int>>) detail::setFieldRange<int>(s);
    s.check = std::move(check);
    s.help = help;
    s.flag = flag;
    fields_.push_back({std::move(s),
                       [field](O& o, const nlohmann::json& v) { std::invoke(field, o) = v.get<T>(); },
                       [field](O& o) { return nlohmann::json(std::invoke(field, o)); }});
    return *this;
  }

  std::vector<OptionSpec> specs() const {
    std::vector<OptionSpec> out;
    for (const Field& f : fields_)
      out.push_back(f.spec);
    return out;
  }
  // The struct from resolved options (resolveOptions' result): defaults for keys it lacks.
  O read(const nlohmann::json& resolved) const {
    O o = defaults_;
    for (const Field& f : fields_)
      if (resolved.contains(f.spec.key)) f.set(o, resolved.at(f.spec.key));
    return o;
  }
  // The struct as JSON options (every bound field).
  nlohmann::json write(const O& o) const {
    nlohmann::json j = nlohmann::json::object();
    O copy = o;  // std::invoke needs an lvalue O& for accessor callables
    for (const Field& f : fields_)
      j[f.spec.key] = f.get(copy);
    return j;
  }

 private:
  struct Field {
    OptionSpec spec;
    std::function<void(O&, const nlohmann::json&)> set;
    std::function<nlohmann::json(O&)> get;
  };
  O defaults_;
  std::vector<Field> fields_;
};

}  // namespace hs
