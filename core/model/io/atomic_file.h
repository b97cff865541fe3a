#pragma once
// Write a file so that readers see either the old file or the complete new one, never a torn one:
// data goes to a temp file in the same folder, which is fsynced and then renamed over the target.
// If commit() is never reached (an exception on the way), the temp file is removed.
#include <cstddef>
#include <string>

namespace hs {

class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path);  // throws naming the folder when it is not writable
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n);
  void commit();  // fsync, close, rename onto the target, fsync the folder

  const std::string& tempPath() const { return temp_; }

 private:
  std::string path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace hs
