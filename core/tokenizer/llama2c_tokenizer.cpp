// llama2.c tok.bin: int32 max_token_length, then per token float32 score, int32 length, that many bytes
// (little endian). ids 0/1/2 are <unk>, BOS, EOS; "<0xNN>" pieces are the byte fallback; a space is a
// plain " " (SentencePiece's "▁" already replaced).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tokenizer/loaders.h"
#include "tokenizer/score_bpe.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs::detail {

std::unique_ptr<Tokenizer> loadLlama2cTokenizer(const std::string& path) {
  const std::string data = readTextFile(path, "llama2.c tokenizer", 256ull << 20);
  auto readAt = [&](size_t offset, auto& value) { std::memcpy(&value, data.data() + offset, sizeof(value)); };
  if (data.size() < 4)
    fail(path, ": not a llama2.c tokenizer: ", data.size(), " bytes, expected at least a 4-byte header");
  int32_t maxLen = 0;
  readAt(0, maxLen);
  if (maxLen <= 0 || maxLen > 65536)
    fail(path, ": not a llama2.c tokenizer: max_token_length is ", maxLen, ", expected 1..65536");

  ScoreBpeConfig cfg;
  size_t offset = 4;
  while (offset < data.size()) {
    const size_t id = cfg.pieces.size();
    if (id >= (size_t{1} << 22))
      fail(path, ": llama2.c tokenizer has more than ", size_t{1} << 22,
           " tokens, the limit on vocabularies");
    if (data.size() - offset < 8)
      fail(path, ": truncated llama2.c tokenizer: token ", id, " at byte ", offset,
           " needs an 8-byte score+length header, ", data.size() - offset, " bytes left");
    float score = 0;
    int32_t len = 0;
    readAt(offset, score);
    readAt(offset + 4, len);
    offset += 8;
    if (!std::isfinite(score))
      fail(path, ": not a llama2.c tokenizer: token ", id, " has a non-finite score");
    if (len < 0 || len > maxLen)
      fail(path, ": not a llama2.c tokenizer: token ", id, " has length ", len,
           ", expected 0..max_token_length (", maxLen, ")");
    if (data.size() - offset < static_cast<size_t>(len))
      fail(path, ": truncated llama2.c tokenizer: token ", id, " needs ", len, " bytes, ",
           data.size() - offset, " left");
    cfg.pieces.emplace_back(data, offset, len);
    cfg.scores.push_back(score);
    offset += len;
  }
  if (cfg.pieces.size() < 3)
    fail(path, ": llama2.c tokenizer has ", cfg.pieces.size(),
         " tokens, expected at least 3 (<unk>, BOS, EOS)");
  cfg.unk = 0;
  cfg.bos = 1;
  cfg.eos = 2;
  cfg.addBos = true;
  cfg.space = " ";
  cfg.addSpacePrefix = true;
  cfg.stripSpaceOnlyAfterBos = true;
  cfg.kind = "llama2c";
  cfg.source = path;
  return std::make_unique<ScoreBpeTokenizer>(std::move(cfg));
}

}  // namespace hs::detail
