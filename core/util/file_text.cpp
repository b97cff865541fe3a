#include "util/file_text.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "util/error.h"

namespace hs {

std::string readTextFile(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, ": cannot open ", what);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail(path, ": read error");
  return ss.str();
}

nlohmann::json readJsonFile(const std::string& path, const std::string& what) {
  const std::string text = readTextFile(path, what);
  if (std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c) != 0; }))
    fail(path, ": empty file, expected JSON");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(path, ": malformed JSON: ", e.what());
  }
}

}  // namespace hs
