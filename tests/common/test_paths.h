#pragma once
// Paths the tests need, fixed at configure time. Reference data is read-only third-party data
// under ../shared/data; a test that needs it skips with a clear message when it is absent.
#include <QtTest>

#include <filesystem>
#include <string>

namespace hs::test {

inline std::string sharedData(const std::string& rel) {
  return std::string(HEADSCOPE_SHARED_DATA_DIR) + "/" + rel;
}
inline std::string sourceDir(const std::string& rel) {
  return std::string(HEADSCOPE_SOURCE_DIR) + "/" + rel;
}
inline std::string referencePython() {
  return HEADSCOPE_REFERENCE_PYTHON;
}
#ifdef HEADSCOPE_CLI_PATH
inline std::string cliPath() {
  return HEADSCOPE_CLI_PATH;
}
#endif

}  // namespace hs::test

// Skip the current test function when a reference file is missing.
#define HS_REQUIRE_FILE(path)                                                                     \
  do {                                                                                            \
    if (!std::filesystem::exists(path))                                                           \
      QSKIP(qPrintable(QString("reference data missing: %1").arg(QString::fromStdString(path)))); \
  } while (0)
