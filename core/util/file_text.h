#pragma once
// Whole-file reads with errors that name the file: every loader of a text or JSON file goes through these,
// so a missing, unreadable, empty, oversized or malformed file reads the same wherever it is opened.
// Only regular files are read: a FIFO, a device (/dev/zero) or a folder is refused by name before any
// byte is read, so an input can neither block the program nor stream without end.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

#include "util/json_read.h"

namespace hs {

// The default size limit of readTextFile.
constexpr uint64_t kMaxTextFileBytes = 1ull << 30;

// Fails with "<path>: cannot open <what>: <reason>" unless `path` is an existing regular file (symbolic
// links are followed); a FIFO, socket, device or folder is named as such.
void requireRegularFile(const std::string& path, const std::string& what = "file");

// The file's bytes. Fails as requireRegularFile does, with "<path>: <size> is more than the <limit> a
// <what> may have", or with "<path>: read error".
std::string readTextFile(const std::string& path, const std::string& what = "file",
                         uint64_t maxBytes = kMaxTextFileBytes);

// At most the first `n` bytes of the file (checked as readTextFile does).
std::string readFilePrefix(const std::string& path, const std::string& what, size_t n);

// The file parsed as JSON within `limits` (json_read.h): fails as readTextFile does, with
// "<path>: empty file, expected JSON", "<path>: malformed JSON: <the parser's message>" or the limit
// that was exceeded.
nlohmann::json readJsonFile(const std::string& path, const JsonLimits& limits = json_limits::general());

}  // namespace hs
