// loadTokenizer(): find out which tokenizer format a path holds and read it.
#include <filesystem>

#include "tokenizer/loaders.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {

namespace {

namespace fs = std::filesystem;

std::string besideIfExists(const fs::path& file, const char* name) {
  const fs::path p = file.parent_path() / name;
  return fs::is_regular_file(p) ? p.string() : std::string();
}

// A vocab.json is a flat object of string -> integer; a tokenizer.json has a "model" object. Peek at the
// first non-space bytes after '{' instead of parsing a large file twice.
bool looksLikeVocabJson(const fs::path& file) {
  if (file.filename() == "vocab.json") return true;
  if (file.filename() == "tokenizer.json") return false;
  const std::string head = readFilePrefix(file.string(), "tokenizer file", 4096);
  return head.find("\"model\"") == std::string::npos && head.find("\"added_tokens\"") == std::string::npos &&
         head.find("\"version\"") == std::string::npos;
}

std::unique_ptr<Tokenizer> loadVocabJson(const fs::path& vocab) {
  const std::string merges = besideIfExists(vocab, "merges.txt");
  if (merges.empty())
    fail(vocab.string(), ": a vocab.json needs merges.txt beside it (",
         (vocab.parent_path() / "merges.txt").string(), " not found)");
  return detail::loadGpt2VocabMerges(vocab.string(), merges, besideIfExists(vocab, "tokenizer_config.json"));
}

std::unique_ptr<Tokenizer> loadFromFolder(const fs::path& dir) {
  if (fs::is_regular_file(dir / "tokenizer.json"))
    return detail::loadHfTokenizerJson((dir / "tokenizer.json").string(),
                                       besideIfExists(dir / "tokenizer.json", "tokenizer_config.json"));
  if (fs::is_regular_file(dir / "vocab.json")) return loadVocabJson(dir / "vocab.json");
  if (fs::is_regular_file(dir / "tokenizer.bin"))
    return detail::loadLlama2cTokenizer((dir / "tokenizer.bin").string());
  std::string hint;
  if (fs::is_regular_file(dir / "tokenizer.model"))
    hint = " (a SentencePiece tokenizer.model is not supported; provide the tokenizer.json made from it)";
  fail(dir.string(),
       ": no tokenizer found: expected tokenizer.json, vocab.json + merges.txt, or tokenizer.bin", hint);
}

}  // namespace

std::unique_ptr<Tokenizer> loadTokenizer(const std::string& path) {
  const fs::path p(path);
  if (!fs::exists(p)) fail(path, ": no such file or folder");
  if (fs::is_directory(p)) return loadFromFolder(p);
  requireRegularFile(path, "tokenizer file");  // a FIFO or device is refused before anything reads it
  if (p.extension() == ".json") {
    if (looksLikeVocabJson(p)) return loadVocabJson(p);
    return detail::loadHfTokenizerJson(path, besideIfExists(p, "tokenizer_config.json"));
  }
  {
    if (readFilePrefix(path, "tokenizer file", 4) == "GGUF")
      fail(path,
           ": a GGUF file keeps its vocabulary in its metadata; load the model (the GGUF reader builds the "
           "tokenizer with tokenizerFromGguf) instead of the tokenizer alone");
  }
  // Anything else: the llama2.c format is the only binary one a path can name alone.
  try {
    return detail::loadLlama2cTokenizer(path);
  } catch (const Error& e) {
    fail(path,
         ": not a tokenizer HeadScope can read (tokenizer.json, vocab.json + merges.txt, or llama2.c "
         "tok.bin). "
         "As a llama2.c tok.bin: ",
         e.what());
  }
}

}  // namespace hs
