#include "model/io/mapped_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "util/error.h"

namespace hs {

namespace {

// The registry is a fixed array so the signal handler can read it without locks or allocation: a slot is
// filled (path, range) before `state` says live, and emptied after `state` says free.
constexpr int kSlots = 512;
constexpr size_t kPathBytes = 1024;

enum SlotState : int { kFree = 0, kBusy = 1, kLive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  std::atomic<uintptr_t> begin{0}, end{0};
  std::atomic<bool> faulted{false};
  char path[kPathBytes] = {};
  // The file as mapped (read outside the handler only).
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  int64_t mtimeNs = 0;
};

Slot g_slots[kSlots];
std::mutex g_registryMutex;  // serialises register/unregister (never taken by the handler)
std::atomic<int> g_mode{-1};
struct sigaction g_previous {};

int64_t mtimeNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

int registerMap(const std::string& path, const uint8_t* data, size_t size, const struct stat& st) {
  std::lock_guard<std::mutex> lock(g_registryMutex);
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    if (s.state.load(std::memory_order_acquire) != kFree) continue;
    s.state.store(kBusy, std::memory_order_relaxed);
    std::strncpy(s.path, path.c_str(), kPathBytes - 1);
    s.path[kPathBytes - 1] = '\0';
    s.begin.store(reinterpret_cast<uintptr_t>(data), std::memory_order_relaxed);
    s.end.store(reinterpret_cast<uintptr_t>(data) + size, std::memory_order_relaxed);
    s.faulted.store(false, std::memory_order_relaxed);
    s.dev = st.st_dev;
    s.ino = st.st_ino;
    s.size = st.st_size;
    s.mtimeNs = mtimeNs(st);
    s.state.store(kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregisterMap(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_registryMutex);
  g_slots[slot].state.store(kFree, std::memory_order_release);
}

void writeAll(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Async-signal-safe: atomics, write, mmap, _exit only.
void onSigbus(int sig, siginfo_t* info, void* ctx) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != kLive) continue;
    const uintptr_t b = s.begin.load(std::memory_order_relaxed), e = s.end.load(std::memory_order_relaxed);
    if (addr < b || addr >= e) continue;
    if (g_mode.load() == static_cast<int>(MappedFileFaultMode::Recover)) {
      void* p = ::mmap(reinterpret_cast<void*>(b), e - b, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (p != MAP_FAILED) {
        s.faulted.store(true, std::memory_order_release);
        return;  // the faulting read is retried and now reads zeros
      }
    }
    writeAll("error: ");
    writeAll(s.path);
    writeAll(
        ": the file changed on disk while it was loaded (truncated or rewritten in place), so its "
        "weights can no longer be read; nothing was written. Reload the model and run again.\n");
    ::_exit(1);
  }
  // Not one of ours: the previous disposition (by default, terminate with SIGBUS).
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction) return g_previous.sa_sigaction(sig, info, ctx);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN && g_previous.sa_handler) {
    return g_previous.sa_handler(sig);
  }
  ::signal(SIGBUS, SIG_DFL);
  ::raise(SIGBUS);
}

}  // namespace

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  // O_NONBLOCK: a FIFO must not block the open; its type is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno), " (expected an existing checkpoint file)");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, ": cannot open: ", std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file (expected a checkpoint file, got ",
         S_ISDIR(st.st_mode)    ? "a folder"
         : S_ISFIFO(st.st_mode) ? "a FIFO"
         : S_ISCHR(st.st_mode)  ? "a character device"
                                : "a device or socket",
         ")");
  }
  if (st.st_size == 0) {
    ::close(fd);
    fail(path, ": file is empty (0 bytes)");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  // Private + writable: writes become copy-on-write pages of this process only.
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int mapErrno = errno;
  ::close(fd);  // the mapping keeps its own reference to the file
  if (p == MAP_FAILED) fail(path, ": mmap of ", size, " bytes failed: ", std::strerror(mapErrno));
  auto m = std::shared_ptr<MappedFile>(new MappedFile(path, static_cast<uint8_t*>(p), size));
  m->slot_ = registerMap(path, m->data_, size, st);
  return m;
}

MappedFile::~MappedFile() {
  unregisterMap(slot_);
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

void installMappedFileFaultHandler(MappedFileFaultMode mode) {
  const int previousMode = g_mode.exchange(static_cast<int>(mode));
  if (previousMode >= 0) return;  // installed before; only the mode changed
  struct sigaction sa {};
  sa.sa_sigaction = onSigbus;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_SIGINFO;
  ::sigaction(SIGBUS, &sa, &g_previous);
}

std::vector<std::string> faultedMappedFiles() {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(g_registryMutex);
  for (Slot& s : g_slots)
    if (s.state.load(std::memory_order_acquire) == kLive && s.faulted.load(std::memory_order_acquire))
      out.emplace_back(s.path);
  return out;
}

std::vector<std::string> changedMappedFiles() {
  std::vector<std::string> out;
  std::lock_guard<std::mutex> lock(g_registryMutex);
  for (Slot& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) != kLive) continue;
    struct stat st {};
    const bool same = ::stat(s.path, &st) == 0 && st.st_dev == s.dev && st.st_ino == s.ino &&
                      st.st_size == s.size && mtimeNs(st) == s.mtimeNs;
    if (!same || s.faulted.load()) out.emplace_back(s.path);
  }
  return out;
}

std::string mappedFileChangedMessage(const std::string& path) {
  return path +
         ": the file changed on disk while it was loaded (truncated, replaced or rewritten in place); "
         "results computed from it are not trustworthy. Reload the model and run again";
}

}  // namespace hs
