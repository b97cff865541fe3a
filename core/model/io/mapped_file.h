#pragma once
// A read-only file mapped into memory for the lifetime of the object. Tensors that alias the map
// hold a shared_ptr to it (through their deleter), so the map outlives every view of it.
//
// The map is PROT_READ|PROT_WRITE with MAP_PRIVATE: an accidental in-place write to a zero-copy
// weight tensor lands on a private copy-on-write page and never reaches the file on disk.
//
// A file truncated or rewritten in place while it is mapped makes reads of the lost pages raise SIGBUS.
// Every live map is registered (address range, path, the file's identity when mapped), so a handler
// can name the file instead of crashing: installMappedFileFaultHandler.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hs {

class MappedFile {
 public:
  // Throws hs::Error naming the path when it is missing, not a regular file, empty or unmappable.
  static std::shared_ptr<MappedFile> open(const std::string& path);

  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  uint8_t* mutableData() const { return data_; }  // copy-on-write pages; never reaches the file
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Whether [p, p + n) lies inside the map (tests use it to verify zero-copy views).
  bool contains(const void* p, size_t n = 1) const;

  // Drops this process's pages of [p, p + n) (the whole pages inside it): after a weight was converted into a
  // copy, its file pages need not stay in the process's resident memory. A later read of the range faults
  // the pages in again from the file, so views stay valid.
  void release(const void* p, size_t n) const;

 private:
  MappedFile(std::string path, uint8_t* data, size_t size)
      : path_(std::move(path)), data_(data), size_(size) {}

  std::string path_;
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  int slot_ = -1;  // registry slot, -1 when the registry was full
};

// What the SIGBUS handler does when a fault lies inside a mapped file.
enum class MappedFileFaultMode {
  // Print "error: <path>: changed on disk while loaded ..." on stderr and exit with status 1 (the CLI).
  Exit,
  // Replace the whole map by zero pages, remember the file and return: the program goes on reading
  // zeros and asks faultedMappedFiles() between jobs to discard their results (the GUI).
  Recover,
};

// Installs the process-wide SIGBUS handler (once; a second call changes the mode). A SIGBUS outside
// every map keeps its default action.
void installMappedFileFaultHandler(MappedFileFaultMode mode);

// Paths of the live maps that faulted (Recover mode): they read as zeros until they are released (the
// model is reloaded). Empty when none did.
std::vector<std::string> faultedMappedFiles();

// The registered maps whose file on disk is no longer the one mapped: another inode at the path, or the
// same inode with another size or modification time. Empty when every mapped file is as it was.
std::vector<std::string> changedMappedFiles();

// The message both the handler and the callers use for a mapped file that changed while loaded.
std::string mappedFileChangedMessage(const std::string& path);

}  // namespace hs
