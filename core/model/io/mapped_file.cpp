#include "model/io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/error.h"

namespace hs {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    fail(path, ": cannot open: ", std::strerror(errno), " (expected an existing checkpoint file)");
  if (!S_ISREG(st.st_mode))
    fail(path, ": not a regular file (expected a checkpoint file, got a folder or device)");
  if (st.st_size == 0) fail(path, ": file is empty (0 bytes)");

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(path, ": cannot open for reading: ", std::strerror(errno));
  const size_t size = static_cast<size_t>(st.st_size);
  // Private + writable: writes become copy-on-write pages of this process only.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int mapErrno = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) fail(path, ": mmap of ", size, " bytes failed: ", std::strerror(mapErrno));
  return std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<uint8_t*>(p), size));
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::release(const void* p, size_t n) const {
  if (!contains(p, n) || n == 0) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t from = (reinterpret_cast<uintptr_t>(p) + page - 1) / page * page;
  const uintptr_t to = (reinterpret_cast<uintptr_t>(p) + n) / page * page;
  if (to > from) ::madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);
}

bool MappedFile::contains(const void* p, size_t n) const {
  const auto* b = static_cast<const uint8_t*>(p);
  return b >= data_ && n <= size_ && b <= data_ + (size_ - n);
}

}  // namespace hs
