#pragma once
// Whole-file reads with errors that name the file: every loader of a text or JSON file goes through these,
// so a missing, unreadable, empty or malformed file reads the same wherever it is opened.
#include <nlohmann/json.hpp>

#include <string>

namespace hs {

// The file's bytes. Fails with "<path>: cannot open <what>" or "<path>: read error".
std::string readTextFile(const std::string& path, const std::string& what = "file");

// The file parsed as JSON. Fails as readTextFile does, with "<path>: empty file, expected JSON", or with
// "<path>: malformed JSON: <the parser's message, with line and column>".
nlohmann::json readJsonFile(const std::string& path, const std::string& what = "file");

}  // namespace hs
