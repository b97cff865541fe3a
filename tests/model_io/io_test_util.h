#pragma once
// Small helpers shared by the checkpoint-reader tests: raw byte files and error-message checks.
#include <QtTest>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "util/error.h"

namespace hs::test {

inline void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

template <typename T>
void appendPod(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Runs f and returns the hs::Error message, or "" (with a test failure) when nothing was thrown.
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const hs::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not an hs::Error> ") + e.what();
  }
  return "";
}

}  // namespace hs::test

// Expects f() to throw an hs::Error whose message contains every one of the given fragments.
#define HS_EXPECT_ERROR(expr, ...)                                                                     \
  do {                                                                                                 \
    const std::string hsMsg_ = hs::test::errorOf([&] { (void)(expr); });                               \
    QVERIFY2(!hsMsg_.empty(), "expected an hs::Error from " #expr ", nothing was thrown");             \
    for (const std::string& hsPart_ : std::initializer_list<std::string>{__VA_ARGS__})                 \
      QVERIFY2(hsMsg_.find(hsPart_) != std::string::npos,                                              \
               qPrintable(QString("message \"%1\" lacks \"%2\"")                                       \
                              .arg(QString::fromStdString(hsMsg_), QString::fromStdString(hsPart_)))); \
  } while (0)
