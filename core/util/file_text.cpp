#include "util/file_text.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace hs {

namespace {

const char* nonRegularKind(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string sizeText(uint64_t n) {
  if (n >= (1ull << 20)) return cat(n >> 20, " MiB");
  if (n >= (1ull << 10)) return cat(n >> 10, " KiB");
  return cat(n, " bytes");
}

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

void requireRegularFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, ": cannot open ", what, ": ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, ": cannot read ", what, ": it is ", nonRegularKind(st.st_mode), ", expected a regular file");
}

namespace {

// Opens a regular file for reading; its size in *size.
int openRegular(const std::string& path, const std::string& what, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; the type is checked on the open descriptor.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open ", what, ": ", std::strerror(errno));
  Fd guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(path, ": cannot open ", what, ": ", std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail(path, ": cannot read ", what, ": it is ", nonRegularKind(st.st_mode), ", expected a regular file");
  guard.fd = -1;  // handed to the caller
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

std::string readUpTo(const Fd& f, const std::string& path, size_t size) {
  std::string out(size, '\0');
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t n = ::read(f.fd, out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path, ": read error: ", std::strerror(errno));
    }
    if (n == 0) break;  // shrank while reading: keep what is there
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

std::string readTextFile(const std::string& path, const std::string& what, uint64_t maxBytes) {
  uint64_t size = 0;
  Fd f{openRegular(path, what, &size)};
  if (size > maxBytes)
    fail(path, ": ", sizeText(size), " is more than the ", sizeText(maxBytes), " a ", what, " may have");
  return readUpTo(f, path, static_cast<size_t>(size));
}

std::string readFilePrefix(const std::string& path, const std::string& what, size_t n) {
  uint64_t size = 0;
  Fd f{openRegular(path, what, &size)};
  return readUpTo(f, path, static_cast<size_t>(std::min<uint64_t>(size, n)));
}

nlohmann::json readJsonFile(const std::string& path, const JsonLimits& limits) {
  const std::string text = readTextFile(path, limits.kind, limits.max_bytes);
  return parseJsonBounded(text, path, limits);
}

}  // namespace hs
