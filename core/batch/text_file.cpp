#include "batch/text_file.h"

#include "model/io/atomic_file.h"

namespace hs::batch {

void writeTextAtomic(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace hs::batch
