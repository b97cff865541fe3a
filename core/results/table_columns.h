#pragma once
// Finding a Table's column by name: readers of a table never rely on its columns' order.
#include <string>

#include "results/results.h"

namespace hs {

// The index of the column called `name`, or -1 when the table has none.
inline int columnIndex(const Table& t, const std::string& name) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == name) return static_cast<int>(c);
  return -1;
}

}  // namespace hs
