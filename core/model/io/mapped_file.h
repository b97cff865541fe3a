#pragma once
// A read-only file mapped into memory for the lifetime of the object. Tensors that alias the map
// hold a shared_ptr to it (through their deleter), so the map outlives every view of it.
//
// The map is PROT_READ|PROT_WRITE with MAP_PRIVATE: an accidental in-place write to a zero-copy
// weight tensor lands on a private copy-on-write page and never reaches the file on disk.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

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
};

}  // namespace hs
