#pragma once
// Reading a session's view state: it comes from a file, so a value of another type (or out of range) gives
// the caller's default, never an exception out of the slot that opens the session.
#include <QString>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace hs::gui {

class ViewStateReader {
 public:
  explicit ViewStateReader(const nlohmann::json& j) : j_(j) {}

  bool has(const char* key) const { return j_.is_object() && j_.contains(key); }
  // An integer in [lo, hi], else `dflt`.
  int integer(const char* key, int dflt, int64_t lo = 0, int64_t hi = int64_t{1} << 20) const {
    const nlohmann::json* v = find(key);
    return v && v->is_number_integer() && v->get<int64_t>() >= lo && v->get<int64_t>() <= hi ? v->get<int>()
                                                                                             : dflt;
  }
  double number(const char* key, double dflt) const {
    const nlohmann::json* v = find(key);
    return v && v->is_number() && std::isfinite(v->get<double>()) ? v->get<double>() : dflt;
  }
  QString text(const char* key, const QString& dflt = {}) const {
    const nlohmann::json* v = find(key);
    return v && v->is_string() ? QString::fromStdString(v->get<std::string>()) : dflt;
  }
  bool flag(const char* key, bool dflt = false) const {
    const nlohmann::json* v = find(key);
    return v && v->is_boolean() ? v->get<bool>() : dflt;
  }
  // The object under `key` (an empty one when absent or not an object).
  ViewStateReader object(const char* key) const {
    const nlohmann::json* v = find(key);
    return ViewStateReader(v && v->is_object() ? *v : empty());
  }

 private:
  const nlohmann::json* find(const char* key) const {
    if (!j_.is_object()) return nullptr;
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  static const nlohmann::json& empty() {
    static const nlohmann::json e = nlohmann::json::object();
    return e;
  }
  const nlohmann::json& j_;
};

}  // namespace hs::gui
