#include "tokenizer/normalizer.h"

#include <algorithm>

#include "tokenizer/token_text.h"
#include "tokenizer/unicode_tables.h"
#include "tokenizer/utf8.h"

namespace hs {
namespace unicode {
namespace {

constexpr char32_t kInvalid = 0xFFFFFFFF;
// Hangul syllables are composed and decomposed by the algorithm of Unicode section 3.12.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount,
                   kSCount = kLCount * kNCount;

uint8_t combiningClass(char32_t cp) {
  if (cp < 0x300 || cp == kInvalid) return 0;
  const auto* begin = tables::kCombiningClass;
  const auto* end = begin + tables::kCombiningClassCount;
  const auto* it = std::lower_bound(begin, end, cp, [](const auto& e, char32_t c) { return e.cp < c; });
  return (it != end && it->cp == cp) ? it->ccc : 0;
}

void decomposeInto(char32_t cp, bool compat, std::vector<char32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const char32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (cp >= 0xA0 && cp != kInvalid) {
    const auto* begin = tables::kDecomposition;
    const auto* end = begin + tables::kDecompositionCount;
    auto it = std::lower_bound(begin, end, cp, [](const auto& e, char32_t c) { return e.cp < c; });
    // Rows of one codepoint: the canonical one (compat 0) first, then the compatibility one where it differs.
    const tables::Decomposition* row = nullptr;
    for (; it != end && it->cp == cp; ++it)
      if (it->compat == 0 || compat) row = it;
    if (row) {
      out.insert(out.end(), tables::kDecompositionData + row->offset,
                 tables::kDecompositionData + row->offset + row->length);
      return;
    }
  }
  out.push_back(cp);
}

char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase &&
      b < kTBase + kTCount)
    return a + (b - kTBase);
  const auto* begin = tables::kComposition;
  const auto* end = begin + tables::kCompositionCount;
  const auto* it = std::lower_bound(begin, end, std::make_pair(a, b), [](const auto& e, const auto& key) {
    return e.first != key.first ? e.first < key.first : e.second < key.second;
  });
  return (it != end && it->first == a && it->second == b) ? it->composite : kInvalid;
}

// Canonical ordering: each run of nonzero combining classes sorted stably by class.
void reorder(std::vector<char32_t>& cps) {
  for (size_t i = 0; i < cps.size();) {
    if (combiningClass(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combiningClass(cps[j]) != 0)
      ++j;
    std::stable_sort(cps.begin() + static_cast<long>(i), cps.begin() + static_cast<long>(j),
                     [](char32_t a, char32_t b) { return combiningClass(a) < combiningClass(b); });
    i = j;
  }
}

// The canonical composition algorithm (Unicode section 3.11); an invalid byte is a starter that composes
// with nothing.
void composeAll(std::vector<char32_t>& cps) {
  if (cps.empty()) return;
  size_t starterPos = 0;
  int lastClass = combiningClass(cps[0]) == 0 ? 0 : 256;
  size_t outPos = 1;
  for (size_t i = 1; i < cps.size(); ++i) {
    const char32_t ch = cps[i];
    const int chClass = combiningClass(ch);
    const char32_t composite =
        (cps[starterPos] == kInvalid || ch == kInvalid) ? kInvalid : compose(cps[starterPos], ch);
    if (composite != kInvalid && (lastClass < chClass || lastClass == 0) && lastClass != 256) {
      cps[starterPos] = composite;
      continue;
    }
    if (chClass == 0) starterPos = outPos;
    lastClass = chClass;
    cps[outPos++] = ch;
  }
  cps.resize(outPos);
}

}  // namespace

std::pair<char32_t, size_t> decodeAt(const std::string& s, size_t i) {
  const size_t n = utf8::validSequenceLength(s, i);
  if (n == 0) return {kInvalid, 1};
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return {b(0), 1};
  if (n == 2) return {((b(0) & 0x1F) << 6) | (b(1) & 0x3F), 2};
  if (n == 3) return {((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F), 3};
  return {((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F), 4};
}

size_t previousCharStart(const std::string& s, size_t i) {
  // Back over at most three continuation bytes to a start whose valid sequence ends exactly at i.
  for (size_t k = 2; k <= 4 && k <= i; ++k)
    if (utf8::validSequenceLength(s, i - k) == k) return i - k;
  return i - 1;
}

std::string normalize(const std::string& text, NormalForm form) {
  // ASCII is in every normal form.
  if (std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; }))
    return text;
  const bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  const bool composeForm = form == NormalForm::NFC || form == NormalForm::NFKC;
  std::vector<char32_t> cps;
  std::vector<unsigned char> invalidBytes;  // the bytes of the kInvalid entries, in order
  for (size_t i = 0; i < text.size();) {
    const auto [cp, n] = decodeAt(text, i);
    if (cp == kInvalid) {
      cps.push_back(kInvalid);
      invalidBytes.push_back(static_cast<unsigned char>(text[i]));
    } else {
      decomposeInto(cp, compat, cps);
    }
    i += n;
  }
  reorder(cps);
  if (composeForm) composeAll(cps);
  std::string out;
  out.reserve(text.size());
  size_t nextInvalid = 0;
  for (char32_t cp : cps)
    out += cp == kInvalid ? std::string(1, static_cast<char>(invalidBytes[nextInvalid++])) : utf8::encode(cp);
  return out;
}

bool isWhitespace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

}  // namespace unicode

std::string Normalizer::apply(const std::string& text) const {
  std::string s = text;
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::NFC:
        s = unicode::normalize(s, unicode::NormalForm::NFC);
        break;
      case NormalizerStep::Kind::NFD:
        s = unicode::normalize(s, unicode::NormalForm::NFD);
        break;
      case NormalizerStep::Kind::NFKC:
        s = unicode::normalize(s, unicode::NormalForm::NFKC);
        break;
      case NormalizerStep::Kind::NFKD:
        s = unicode::normalize(s, unicode::NormalForm::NFKD);
        break;
      case NormalizerStep::Kind::Prepend:
        if (!s.empty()) s = step.text + s;
        break;
      case NormalizerStep::Kind::Replace:
        s = tokentext::replaceAll(std::move(s), step.text, step.with);
        break;
    }
  }
  return s;
}

bool Normalizer::prepends(const std::string& text) const {
  return std::any_of(steps_.begin(), steps_.end(), [&](const NormalizerStep& s) {
    return s.kind == NormalizerStep::Kind::Prepend && s.text == text;
  });
}

}  // namespace hs
