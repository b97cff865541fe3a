#pragma once
// Unicode data for the normalizers (unicode_normalize.cpp), generated into unicode_tables.cpp by
// scripts/gen_unicode_tables.py. Every table is sorted by its first field(s) for binary search.
#include <cstddef>
#include <cstdint>

namespace hs::unicode::tables {

struct CombiningClass {
  char32_t cp;
  uint8_t ccc;
};
struct Decomposition {
  char32_t cp;
  uint8_t compat;   // 0: the full canonical decomposition; 1: the full compatibility one (where it differs)
  uint32_t offset;  // into kDecompositionData
  uint32_t length;
};
struct Composition {
  char32_t first, second, composite;
};

extern const char* const kUnicodeVersion;
extern const CombiningClass kCombiningClass[];
extern const size_t kCombiningClassCount;
extern const Decomposition kDecomposition[];
extern const size_t kDecompositionCount;
extern const char32_t kDecompositionData[];
extern const Composition kComposition[];
extern const size_t kCompositionCount;

}  // namespace hs::unicode::tables
