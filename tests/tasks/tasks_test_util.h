#pragma once
// Helpers for the core/tasks suites: temporary files and error-message checks.
#include <QtTest>

#include <QTemporaryDir>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

namespace hs::test {

// Writes `content` to `name` inside `dir` and returns the full path.
inline std::string writeFile(const QTemporaryDir& dir, const std::string& name, const std::string& content) {
  const std::string path = dir.path().toStdString() + "/" + name;
  std::ofstream out(path, std::ios::binary);
  out << content;
  return path;
}

// Runs f, expects it to throw, and returns the message ("" when it did not throw).
inline std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace hs::test

// The call must throw and its message must contain every given fragment.
#define HS_EXPECT_ERROR(call, ...)                                                                 \
  do {                                                                                             \
    const std::string msg_ = hs::test::errorOf([&] { (void)(call); });                             \
    QVERIFY2(!msg_.empty(), "expected an error from " #call);                                      \
    for (const std::string& frag_ : std::initializer_list<std::string>{__VA_ARGS__})               \
      QVERIFY2(msg_.find(frag_) != std::string::npos,                                              \
               qPrintable(QString("error \"%1\" lacks \"%2\"")                                     \
                              .arg(QString::fromStdString(msg_), QString::fromStdString(frag_)))); \
  } while (0)
