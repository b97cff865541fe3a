#pragma once
// SHA-256 (FIPS 180-4), self-contained: HeadScope links no crypto library, and sessions only need
// it to fingerprint model files (is this the checkpoint the session was made with?).
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace hs {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t n);
  // The 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();
  std::string finishHex();  // 64 lowercase hex digits

 private:
  void block(const uint8_t* p);  // compress one 64-byte block into state_

  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffered_ = 0;
  uint64_t totalBytes_ = 0;
};

std::string sha256Hex(const std::string& bytes);
// Hash of a file's bytes, read in chunks; throws naming the file when it cannot be read.
std::string sha256File(const std::string& path);

}  // namespace hs
