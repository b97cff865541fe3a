#include "tasks/corruption.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "tasks/split.h"
#include "tasks/toy/rng.h"
#include "util/error.h"

namespace hs {
namespace {

// Salts so that each corruption kind draws its own stream under one seed.
enum Salt : uint64_t { kDerange = 1, kWords = 2, kGarble = 3, kRepeat = 4, kConcept = 5 };

toy::Rng rngFor(uint64_t seed, Salt salt) {
  return toy::Rng(toy::deriveSeed(seed, kStreamCorrupt, salt));
}

Relabeled relabel(const std::vector<Example>& demos, const Example& query,
                  const std::vector<std::string>& newLabels) {
  Relabeled r;
  std::vector<std::string> distinct;
  for (const Example& d : demos) {
    if (d.outputs.empty()) fail("relabel: a demonstration (\"", d.input, "\") has no output");
    if (std::find(distinct.begin(), distinct.end(), d.outputs[0]) == distinct.end())
      distinct.push_back(d.outputs[0]);
  }
  for (size_t i = 0; i < distinct.size(); ++i)
    r.mapping.emplace_back(distinct[i], newLabels[i]);
  auto mapOne = [&](Example e) {
    for (const auto& [from, to] : r.mapping)
      if (!e.outputs.empty() && e.outputs[0] == from) {
        e.outputs = {to};
        break;
      }
    return e;
  };
  for (const Example& d : demos)
    r.demos.push_back(mapOne(d));
  r.query = mapOne(query);
  return r;
}

size_t distinctLabelCount(const std::vector<Example>& demos) {
  std::set<std::string> s;
  for (const Example& d : demos)
    if (!d.outputs.empty()) s.insert(d.outputs[0]);
  return s.size();
}

int drawToken(toy::Rng& rng, const TokenRange& range, int bos, int eos) {
  for (;;) {
    const int t = rng.uniformInt(range.lo, range.hi - 1);
    if (t != bos && t != eos) return t;
  }
}

void checkRange(const TokenRange& range, int need, const char* who) {
  if (range.lo < 0 || range.hi - range.lo < need)
    fail(who, ": token range [", range.lo, ", ", range.hi, ") has fewer than ", need, " ids");
}

}  // namespace

std::vector<int> derangementOf(const std::vector<std::string>& keys, uint64_t seed) {
  const size_t n = keys.size();
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  toy::Rng rng = rngFor(seed, kDerange);
  rng.shuffle(perm);
  // Repair fixed points by swaps that create none: swapping i and j is safe when neither ends up with
  // its own key. When no such j exists, every position holds key v or receives value v, so the fixed
  // points left are the unavoidable 2m - n.
  bool changed = true;
  while (changed) {
    changed = false;
    for (size_t i = 0; i < n; ++i) {
      if (keys[static_cast<size_t>(perm[i])] != keys[i]) continue;
      for (size_t j = 0; j < n; ++j) {
        if (keys[static_cast<size_t>(perm[j])] != keys[i] && keys[static_cast<size_t>(perm[i])] != keys[j]) {
          std::swap(perm[i], perm[j]);
          changed = true;
          break;
        }
      }
    }
  }
  return perm;
}

std::vector<Example> shuffleLabels(const std::vector<Example>& demos, uint64_t seed) {
  std::vector<std::string> keys;
  for (const Example& d : demos) {
    if (d.outputs.empty()) fail("shuffleLabels: a demonstration (\"", d.input, "\") has no output");
    keys.push_back(d.outputs[0]);
  }
  const std::vector<int> perm = derangementOf(keys, seed);
  std::vector<Example> out = demos;
  for (size_t i = 0; i < demos.size(); ++i) {
    out[i].outputs = demos[static_cast<size_t>(perm[i])].outputs;
    out[i].label = demos[static_cast<size_t>(perm[i])].label;
  }
  return out;
}

std::vector<Example> shuffleInputs(const std::vector<Example>& demos, uint64_t seed) {
  std::vector<std::string> keys;
  for (const Example& d : demos)
    keys.push_back(d.input);
  const std::vector<int> perm = derangementOf(keys, seed);
  std::vector<Example> out = demos;
  for (size_t i = 0; i < demos.size(); ++i)
    out[i].input = demos[static_cast<size_t>(perm[i])].input;
  return out;
}

Relabeled numberLabels(const std::vector<Example>& demos, const Example& query) {
  std::vector<std::string> numbers;
  for (size_t i = 0; i < distinctLabelCount(demos); ++i)
    numbers.push_back(std::to_string(i + 1));
  return relabel(demos, query, numbers);
}

Relabeled randomWordLabels(const std::vector<Example>& demos, const Example& query,
                           const std::vector<std::string>& words, uint64_t seed) {
  std::vector<std::string> pool;
  for (const std::string& w : words)
    if (!w.empty() && std::find(pool.begin(), pool.end(), w) == pool.end()) pool.push_back(w);
  const size_t k = distinctLabelCount(demos);
  if (pool.size() < k)
    fail("randomWordLabels: ", k, " distinct labels but only ", pool.size(),
         " distinct words to replace them");
  toy::Rng rng = rngFor(seed, kWords);
  std::vector<std::string> chosen;
  for (int j : rng.choose(static_cast<int>(pool.size()), static_cast<int>(k)))
    chosen.push_back(pool[static_cast<size_t>(j)]);
  return relabel(demos, query, chosen);
}

Prompt garbleDemoInputs(const Tokenizer& tok, const Prompt& p, TokenRange range, uint64_t seed) {
  checkRange(range, 3, "garbleDemoInputs");
  if (range.hi > tok.vocabSize())
    fail("garbleDemoInputs: token range end ", range.hi, " exceeds the vocabulary size ", tok.vocabSize());
  toy::Rng rng = rngFor(seed, kGarble);
  Prompt g = p;
  for (const Prompt::Demo& d : g.demos)
    for (int pos = d.input.begin; pos < d.input.end; ++pos) {
      g.ids[static_cast<size_t>(pos)] = drawToken(rng, range, tok.bosId(), tok.eosId());
      g.pieces[static_cast<size_t>(pos)] = tok.piece(g.ids[static_cast<size_t>(pos)]);
    }
  for (PromptSegment& s : g.segments)
    if (s.role == "input" && s.demo >= 0) s.text = tok.decode(g.idsOf(s.span));
  g.text.clear();
  for (const PromptSegment& s : g.segments)
    g.text += s.text;
  return g;
}

RepeatSequence randomTokenRepeat(int length, int repeats, TokenRange range, int bos_id, uint64_t seed) {
  if (length < 1 || repeats < 1)
    fail("randomTokenRepeat: length ", length, " and repeats ", repeats, " must be >= 1");
  checkRange(range, length, "randomTokenRepeat");
  toy::Rng rng = rngFor(seed, kRepeat);
  std::vector<int> r;
  for (int j : rng.choose(range.hi - range.lo, length))
    r.push_back(range.lo + j);
  RepeatSequence s;
  if (bos_id >= 0) {
    s.ids.push_back(bos_id);
    s.n_bos = 1;
  }
  for (int c = 0; c < repeats; ++c) {
    const int begin = static_cast<int>(s.ids.size());
    s.ids.insert(s.ids.end(), r.begin(), r.end());
    s.copies.push_back({begin, static_cast<int>(s.ids.size())});
  }
  return s;
}

std::vector<std::string> multiTokenWords(const Tokenizer& tok, const std::vector<std::string>& candidates,
                                         int min_tokens, int max_tokens) {
  const SegmentEncoder enc(tok);
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& w : candidates) {
    if (w.empty() || !seen.insert(w).second) continue;
    const int n = static_cast<int>(enc.continuation(" " + w).size());
    if (n >= min_tokens && n <= max_tokens) out.push_back(w);
  }
  return out;
}

ConceptRepeat conceptRepeat(const Tokenizer& tok, const std::vector<std::string>& words, int n_words,
                            int repeats, uint64_t seed, std::optional<bool> add_bos) {
  std::vector<std::string> pool;
  for (const std::string& w : words)
    if (!w.empty() && std::find(pool.begin(), pool.end(), w) == pool.end()) pool.push_back(w);
  if (n_words < 1 || repeats < 1)
    fail("conceptRepeat: n_words ", n_words, " and repeats ", repeats, " must be >= 1");
  if (static_cast<int>(pool.size()) < n_words)
    fail("conceptRepeat: ", n_words, " words requested but only ", pool.size(), " distinct words given");
  toy::Rng rng = rngFor(seed, kConcept);
  const SegmentEncoder enc(tok);
  ConceptRepeat c;
  std::vector<std::vector<int>> encoded;
  for (int j : rng.choose(static_cast<int>(pool.size()), n_words)) {
    c.words.push_back(pool[static_cast<size_t>(j)]);
    encoded.push_back(enc.continuation(" " + c.words.back()));
  }
  if (add_bos.value_or(tok.addsBos())) {
    if (tok.bosId() < 0) fail("conceptRepeat: BOS requested but the tokenizer has none");
    c.ids.push_back(tok.bosId());
    c.n_bos = 1;
  }
  for (int r = 0; r < repeats; ++r) {
    const int begin = static_cast<int>(c.ids.size());
    std::vector<Span> spans;
    for (const auto& e : encoded) {
      const int b = static_cast<int>(c.ids.size());
      c.ids.insert(c.ids.end(), e.begin(), e.end());
      spans.push_back({b, static_cast<int>(c.ids.size())});
    }
    c.copies.push_back({begin, static_cast<int>(c.ids.size())});
    c.word_spans.push_back(std::move(spans));
  }
  return c;
}

}  // namespace hs
