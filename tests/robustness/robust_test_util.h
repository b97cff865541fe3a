#pragma once
// Checking hs::Error messages in the robustness tests: what a call throws, and that the message is one
// short line holding every expected fragment (the file, the key, what was wrong).
#include <QString>
#include <QtTest>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>

#include "util/error.h"

namespace hs::test {

// The message of the hs::Error that f throws ("" when it does not throw).
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const hs::Error& e) {
    return e.what();
  }
  return {};
}

// Writes `bytes` as the whole file (test inputs: crafted, truncated, oversized).
inline void writeFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

// The whole file ("" when it cannot be read).
inline std::string readFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace hs::test

#define EXPECT_ERROR(call, ...)                                                              \
  do {                                                                                       \
    const std::string msg_ = hs::test::errorOf([&] { (void)(call); });                       \
    QVERIFY2(!msg_.empty(), "expected an hs::Error from " #call);                            \
    QVERIFY2(msg_.size() < 400, msg_.substr(0, 400).c_str());                                \
    QVERIFY2(msg_.find('\n') == std::string::npos, msg_.c_str());                            \
    for (const std::string& frag_ : std::initializer_list<std::string>{__VA_ARGS__})         \
      QVERIFY2(msg_.find(frag_) != std::string::npos,                                        \
               qPrintable(QString("\"%1\" lacks \"%2\"").arg(msg_.c_str(), frag_.c_str()))); \
  } while (0)
