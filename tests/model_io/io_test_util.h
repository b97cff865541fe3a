#pragma once
// Small helpers shared by the checkpoint-reader tests: a temporary folder, raw byte files, error-message
// checks and the shapes of stories260K.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <functional>
#include <initializer_list>
#include <string>

#include "util/error.h"

namespace hs::test {

// A temporary folder for the files of a test class, mixed into it next to QObject: tmp(name) is a path in
// it; the class's initTestCase checks dir_.isValid().
class TempDirFixture {
 protected:
  QTemporaryDir dir_;
  std::string tmp(const std::string& name) const {
    return dir_.filePath(QString::fromStdString(name)).toStdString();
  }
};

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

// Checks the shapes every reader must report for stories260K (llama2.c's 260K-parameter TinyStories model)
// in the ModelConfig `c`, returning from the test function at the first mismatch.
#define HS_CHECK_STORIES260K_SHAPES(c) \
  do {                                 \
    QCOMPARE((c).n_layers, 5);         \
    QCOMPARE((c).n_heads, 8);          \
    QCOMPARE((c).n_kv_heads, 4);       \
    QCOMPARE((c).d_model, 64);         \
    QCOMPARE((c).d_head, 8);           \
    QCOMPARE((c).rotary_dim, 8);       \
    QCOMPARE((c).d_mlp, 172);          \
    QCOMPARE((c).vocab_size, 512);     \
  } while (0)
