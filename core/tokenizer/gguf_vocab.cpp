// A GGUF vocabulary (tokenizer.ggml.*), already read into plain values by the model loader.
// "llama": SentencePiece BPE by scores (llama.cpp llm_tokenizer_spm); "gpt2": byte-level BPE with merges
// and the split regex named by tokenizer.ggml.pre.
#include "tokenizer/bytelevel_bpe.h"
#include "tokenizer/regex_splitter.h"
#include "tokenizer/score_bpe.h"
#include "tokenizer/token_text.h"
#include "util/error.h"

namespace hs {
namespace {

enum TokenType { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

// Split regexes per tokenizer.ggml.pre (the families HeadScope's model list needs).
std::vector<std::string> splitRegexesFor(const std::string& pre, const std::string& source) {
  if (pre.empty() || pre == "default" || pre == "gpt-2" || pre == "gpt2") return {kGpt2SplitRegex};
  if (pre == "llama3" || pre == "llama-v3" || pre == "llama-bpe" || pre == "smaug-bpe")
    return {kLlama3SplitRegex};
  if (pre == "qwen2" || pre == "deepseek-r1-qwen") return {kQwen2SplitRegex};
  fail(source, ": tokenizer.ggml.pre \"", pre,
       "\" is not supported (known: default, gpt-2, llama3, llama-v3, llama-bpe, smaug-bpe, qwen2, "
       "deepseek-r1-qwen)");
}

// Control and user-defined tokens are matched in the text and never merged.
std::vector<AddedToken> specialsOf(const GgufVocab& v) {
  std::vector<AddedToken> out;
  for (size_t i = 0; i < v.token_types.size() && i < v.tokens.size(); ++i) {
    const int t = v.token_types[i];
    if ((t == kControl || t == kUserDefined) && !v.tokens[i].empty())
      out.push_back({v.tokens[i], static_cast<int>(i), t == kControl, false, false});
  }
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> tokenizerFromGguf(const GgufVocab& v) {
  const size_t n = v.tokens.size();
  if (n == 0) fail(v.source, ": tokenizer.ggml.tokens is empty");
  if (!v.token_types.empty() && v.token_types.size() != n)
    fail(v.source, ": tokenizer.ggml.token_type has ", v.token_types.size(), " entries, expected ", n);
  for (auto [name, id] : {std::pair{"bos", v.bos}, {"eos", v.eos}, {"unknown", v.unk}, {"padding", v.pad}})
    if (id >= static_cast<int>(n))
      fail(v.source, ": tokenizer.ggml.", name, "_token_id ", id, " is out of range (vocab size ", n, ")");

  if (v.model == "llama") {
    if (v.scores.size() != n)
      fail(v.source, ": tokenizer.ggml.scores has ", v.scores.size(), " entries, expected ", n,
           " (one per token)");
    ScoreBpeConfig cfg;
    cfg.pieces = v.tokens;
    cfg.scores = v.scores;
    if (!v.token_types.empty()) {
      cfg.control.resize(n);
      for (size_t i = 0; i < n; ++i)
        cfg.control[i] = v.token_types[i] == kControl;
    }
    cfg.specials = specialsOf(v);
    cfg.space = tokentext::kMetaSpace;
    cfg.addSpacePrefix = v.add_space_prefix;
    cfg.bos = v.bos;
    cfg.eos = v.eos;
    cfg.unk = v.unk;
    cfg.addBos = v.add_bos && v.bos >= 0;
    cfg.addEos = v.add_eos && v.eos >= 0;
    cfg.stripSpaceOnlyAfterBos = false;
    cfg.kind = "gguf-llama";
    cfg.source = v.source;
    return std::make_unique<ScoreBpeTokenizer>(std::move(cfg));
  }
  if (v.model == "gpt2") {
    ByteLevelBpeConfig cfg;
    for (size_t i = 0; i < n; ++i)
      cfg.vocab.emplace(v.tokens[i], static_cast<int>(i));
    for (size_t r = 0; r < v.merges.size(); ++r) {
      const std::string& m = v.merges[r];
      const size_t sp = m.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= m.size())
        fail(v.source, ": tokenizer.ggml.merges[", r, "] is \"", m,
             "\", expected two pieces separated by one space");
      cfg.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
    cfg.added = specialsOf(v);
    cfg.splitRegexes = splitRegexesFor(v.pre, v.source);
    cfg.bos = v.bos;
    cfg.eos = v.eos;
    cfg.addBos = v.add_bos && v.bos >= 0;
    cfg.source = v.source;
    return std::make_unique<ByteLevelBpeTokenizer>(std::move(cfg));
  }
  fail(v.source, ": tokenizer.ggml.model \"", v.model,
       "\" is not supported (expected \"llama\" or \"gpt2\")");
}

}  // namespace hs
