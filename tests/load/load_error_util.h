#pragma once
// Checking the hs::Error messages of the loader tests: what a call throws, and that the message names the
// key, field or file it should. Header-only and torch-free, for the config / architecture / loader tests.
#include <QString>
#include <QtTest>

#include <string>

#include "util/error.h"

namespace hs::test {

// The message of the hs::Error that f throws ("" when it does not throw).
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const hs::Error& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace hs::test

// Fails the test unless the message `msg` contains `part`, showing both.
#define CHECK_MSG(msg, part)                                 \
  QVERIFY2(hs::test::contains(msg, part),                    \
           qPrintable(QString("message \"%1\" lacks \"%2\"") \
                          .arg(QString::fromStdString(msg), QString::fromStdString(std::string(part)))))
