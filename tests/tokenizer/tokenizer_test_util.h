#pragma once
// Helpers for the tokenizer tests: file reading and a tiny GGUF metadata reader (test-only; the real GGUF
// reader lives in core/model/io). Only the key/value section is parsed; tensors are skipped.
#include <QtTest>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace hs::test {

inline std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeAll(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary);
  out << data;
}

inline QString ids(const std::vector<int>& v) {
  QStringList parts;
  for (int i : v)
    parts << QString::number(i);
  return "[" + parts.join(", ") + "]";
}

// GGUF v2/v3 metadata: scalar values as double/int64/bool/string, arrays as vectors.
struct GgufKv {
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
  std::map<std::string, bool> bools;
  std::map<std::string, std::string> strings;
  std::map<std::string, std::vector<std::string>> stringArrays;
  std::map<std::string, std::vector<double>> numberArrays;
};

inline GgufKv readGgufKv(const std::string& path) {
  const std::string d = readAll(path);
  size_t o = 0;
  auto need = [&](size_t n) {
    if (o + n > d.size()) throw std::runtime_error(path + ": truncated GGUF metadata");
  };
  auto rd = [&](auto& v) {
    need(sizeof(v));
    std::memcpy(&v, d.data() + o, sizeof(v));
    o += sizeof(v);
  };
  auto rdStr = [&]() {
    uint64_t n = 0;
    rd(n);
    need(n);
    std::string s = d.substr(o, n);
    o += n;
    return s;
  };
  // Scalar of GGUF type t as a double (ints, floats, bool).
  auto rdNumber = [&](uint32_t t) -> double {
    switch (t) {
      case 0: {
        uint8_t v;
        rd(v);
        return v;
      }
      case 1: {
        int8_t v;
        rd(v);
        return v;
      }
      case 2: {
        uint16_t v;
        rd(v);
        return v;
      }
      case 3: {
        int16_t v;
        rd(v);
        return v;
      }
      case 4: {
        uint32_t v;
        rd(v);
        return v;
      }
      case 5: {
        int32_t v;
        rd(v);
        return v;
      }
      case 6: {
        float v;
        rd(v);
        return v;
      }
      case 7: {
        uint8_t v;
        rd(v);
        return v;
      }
      case 10: {
        uint64_t v;
        rd(v);
        return static_cast<double>(v);
      }
      case 11: {
        int64_t v;
        rd(v);
        return static_cast<double>(v);
      }
      case 12: {
        double v;
        rd(v);
        return v;
      }
    }
    throw std::runtime_error(path + ": unknown GGUF type " + std::to_string(t));
  };
  if (d.compare(0, 4, "GGUF") != 0) throw std::runtime_error(path + ": not GGUF");
  o = 4;
  uint32_t version = 0;
  uint64_t nTensors = 0, nKv = 0;
  rd(version);
  rd(nTensors);
  rd(nKv);
  GgufKv kv;
  for (uint64_t i = 0; i < nKv; ++i) {
    const std::string key = rdStr();
    uint32_t t = 0;
    rd(t);
    if (t == 8) {
      kv.strings[key] = rdStr();
    } else if (t == 9) {
      uint32_t et = 0;
      uint64_t n = 0;
      rd(et);
      rd(n);
      for (uint64_t j = 0; j < n; ++j) {
        if (et == 8)
          kv.stringArrays[key].push_back(rdStr());
        else
          kv.numberArrays[key].push_back(rdNumber(et));
      }
    } else if (t == 6 || t == 12) {
      kv.floats[key] = rdNumber(t);
    } else if (t == 7) {
      kv.bools[key] = rdNumber(t) != 0;
    } else if (t == 4) {  // uint32: 0xFFFFFFFF means "none" for token ids
      uint32_t v = 0;
      rd(v);
      kv.ints[key] = v == 0xFFFFFFFFu ? -1 : static_cast<int64_t>(v);
    } else {
      kv.ints[key] = static_cast<int64_t>(rdNumber(t));
    }
  }
  return kv;
}

inline GgufVocab ggufVocabOf(const std::string& path) {
  const GgufKv kv = readGgufKv(path);
  GgufVocab v;
  v.source = path;
  v.model = kv.strings.at("tokenizer.ggml.model");
  if (kv.strings.count("tokenizer.ggml.pre")) v.pre = kv.strings.at("tokenizer.ggml.pre");
  v.tokens = kv.stringArrays.at("tokenizer.ggml.tokens");
  for (double s : kv.numberArrays.at("tokenizer.ggml.scores"))
    v.scores.push_back(static_cast<float>(s));
  for (double t : kv.numberArrays.at("tokenizer.ggml.token_type"))
    v.token_types.push_back(static_cast<int>(t));
  if (kv.stringArrays.count("tokenizer.ggml.merges")) v.merges = kv.stringArrays.at("tokenizer.ggml.merges");
  auto id = [&](const char* key) { return kv.ints.count(key) ? static_cast<int>(kv.ints.at(key)) : -1; };
  v.bos = id("tokenizer.ggml.bos_token_id");
  v.eos = id("tokenizer.ggml.eos_token_id");
  v.unk = id("tokenizer.ggml.unknown_token_id");
  v.pad = id("tokenizer.ggml.padding_token_id");
  if (kv.bools.count("tokenizer.ggml.add_bos_token")) v.add_bos = kv.bools.at("tokenizer.ggml.add_bos_token");
  if (kv.bools.count("tokenizer.ggml.add_eos_token")) v.add_eos = kv.bools.at("tokenizer.ggml.add_eos_token");
  if (kv.bools.count("tokenizer.ggml.add_space_prefix"))
    v.add_space_prefix = kv.bools.at("tokenizer.ggml.add_space_prefix");
  return v;
}

}  // namespace hs::test

// Run an expression that must throw hs::Error (or any std::exception) whose message contains every
// fragment given.
#define HS_EXPECT_ERROR(expr, ...)                                                                   \
  do {                                                                                               \
    bool thrown_ = false;                                                                            \
    try {                                                                                            \
      (void)(expr);                                                                                  \
    } catch (const std::exception& e_) {                                                             \
      thrown_ = true;                                                                                \
      const std::string msg_ = e_.what();                                                            \
      for (const std::string& frag_ : std::vector<std::string>{__VA_ARGS__})                         \
        QVERIFY2(msg_.find(frag_) != std::string::npos,                                              \
                 qPrintable(QString("message \"%1\" lacks \"%2\"")                                   \
                                .arg(QString::fromStdString(msg_), QString::fromStdString(frag_)))); \
    }                                                                                                \
    QVERIFY2(thrown_, "expected an error from: " #expr);                                             \
  } while (0)
