#include "tasks/toy/mixture.h"

#include <algorithm>

#include "tasks/toy/tasks.h"
#include "util/error.h"

namespace hs::toy {

namespace {

constexpr int kMaxWordLen = 3;

void checkRange(const char* what, int lo, int hi, int min_lo) {
  if (lo < min_lo || hi < lo)
    fail("toy mixture config: ", what, " range [", lo, ", ", hi, "] invalid, expected ", min_lo,
         " <= lo <= hi");
}

// Longest episode each kind can produce under `c`: the sampler refuses configs whose episodes cannot fit.
size_t longestEpisode(const std::string& kind, const MixtureConfig& c) {
  const size_t words = static_cast<size_t>(c.list_max_words);
  if (kind == kKindInduction) return 1 + static_cast<size_t>(c.induction_max_span * c.induction_max_repeats);
  if (kind == kKindCopyList || kind == kKindTranslateList || kind == kKindFuzzyList)
    return 1 + 2 * (words * kMaxWordLen + words - 1) + 1;
  if (kind == kKindIclCls) return 1 + static_cast<size_t>(c.cls_max_shots + 1) * (kMaxWordLen + 3);
  if (kind == kKindCategory) return 1 + static_cast<size_t>(c.cat_max_shots + 1) * (kMaxWordLen + 3);
  return 1 + static_cast<size_t>(c.fn_max_shots + 1) * (2 * kMaxWordLen + 2);
}

std::vector<double> kindWeights(const MixtureConfig& c) {
  return {c.w_induction, c.w_copy_list, c.w_translate_list, c.w_icl_cls,
          c.w_function,  c.w_category,  c.w_fuzzy_list};
}

int drawShots(Rng& rng, double zero_shot, int max_shots) {
  if (max_shots == 0 || rng.bernoulli(zero_shot)) return 0;
  return rng.uniformInt(1, max_shots);
}

}  // namespace

const std::vector<std::string>& mixtureKinds() {
  static const std::vector<std::string> kinds = {kKindInduction, kKindCopyList, kKindTranslateList,
                                                 kKindIclCls,    kKindFunction, kKindCategory,
                                                 kKindFuzzyList};
  return kinds;
}

MixtureSampler::MixtureSampler(const ToyWorld& world, MixtureConfig config, uint64_t seed)
    : world_(world), config_(std::move(config)), seed_(seed) {
  const MixtureConfig& c = config_;
  checkRange("induction span", c.induction_min_span, c.induction_max_span, 2);
  checkRange("induction repeats", c.induction_min_repeats, c.induction_max_repeats, 2);
  checkRange("list words", c.list_min_words, c.list_max_words, 1);
  checkRange("classification labels", c.cls_min_labels, c.cls_max_labels, 2);
  if (c.induction_max_span > 2 * static_cast<int>(world_.syllables[0].size()))
    fail("toy mixture config: induction spans of ", c.induction_max_span,
         " distinct syllables, the world has ", 2 * world_.syllables[0].size());
  // A fuzzy list needs 2N distinct concepts: N words and N other words of the same categories.
  const int list_concepts = c.w_fuzzy_list > 0 ? 2 * c.list_max_words : c.list_max_words;
  if (list_concepts > world_.numConcepts())
    fail("toy mixture config: lists of ", c.list_max_words, " words need ", list_concepts,
         " distinct concepts", c.w_fuzzy_list > 0 ? " (fuzzy lists: 2 per word)" : "", ", the world has ",
         world_.numConcepts());
  if (c.cls_max_labels > world_.numCategories())
    fail("toy mixture config: ", c.cls_max_labels, " labels per episode, the world has ",
         world_.numCategories(), " categories");
  if (c.seq_len < 2) fail("toy mixture config: seq_len = ", c.seq_len, ", expected >= 2");
  if (c.pack_attempts < 1) fail("toy mixture config: pack_attempts = ", c.pack_attempts, ", expected >= 1");
  if (c.cls_max_shots < 0 || c.fn_max_shots < 0 || c.cat_max_shots < 0)
    fail("toy mixture config: negative max shots");
  if (c.cat_sep != tok::kEq && c.cat_sep != tok::kColon)
    fail("toy mixture config: cat_sep = ", c.cat_sep, ", expected the \"=\" or the \":\" token");
  if (c.fuzzy_sep != tok::kComma && c.fuzzy_sep != tok::kColon)
    fail("toy mixture config: fuzzy_sep = ", c.fuzzy_sep, ", expected the \",\" or the \":\" token");
  if (c.fn_tasks.empty()) fail("toy mixture config: fn_tasks is empty");
  for (const auto& t : c.fn_tasks)
    if (taskInfo(t).kind != TaskKind::Word)
      fail("toy mixture config: fn_tasks entry \"", t, "\" is not a word task");
  const auto weights = kindWeights(c);
  for (size_t k = 0; k < weights.size(); ++k) {
    if (weights[k] <= 0) continue;
    const size_t longest = longestEpisode(mixtureKinds()[k], c);
    if (longest > static_cast<size_t>(c.seq_len))
      fail("toy mixture config: ", mixtureKinds()[k], " episodes reach ", longest, " tokens, seq_len is ",
           c.seq_len);
  }
  Rng probe(0);
  probe.weighted(weights);  // throws on negative weights or a zero sum
}

Episode MixtureSampler::drawEpisode(const std::string& kind, Rng& rng) const {
  const MixtureConfig& c = config_;
  const ToyWorld& w = world_;
  if (kind == kKindInduction) {
    const int span = rng.uniformInt(c.induction_min_span, c.induction_max_span);
    const int repeats = rng.uniformInt(c.induction_min_repeats, c.induction_max_repeats);
    return inductionEpisode(w, randomSpan(w, rng, span), repeats);
  }
  if (kind == kKindCopyList || kind == kKindTranslateList) {
    const int n = rng.uniformInt(c.list_min_words, c.list_max_words);
    const Lang from = rng.bernoulli(0.5) ? Lang::A : Lang::B;
    const Lang to = kind == kKindCopyList ? from : (from == Lang::A ? Lang::B : Lang::A);
    return listEpisode(w, rng.choose(w.numConcepts(), n), from, to);
  }
  if (kind == kKindIclCls) {
    const int labels = rng.uniformInt(c.cls_min_labels, c.cls_max_labels);
    const int shots = drawShots(rng, c.cls_zero_shot, c.cls_max_shots);
    const Lang lang = rng.bernoulli(0.5) ? Lang::A : Lang::B;
    return clsEpisode(w, rng, labels, shots, lang);
  }
  if (kind == kKindFuzzyList) {
    const int n = rng.uniformInt(c.list_min_words, c.list_max_words);
    return fuzzyListEpisode(w, rng, n, rng.bernoulli(0.5) ? Lang::A : Lang::B, c.fuzzy_sep);
  }
  if (kind == kKindCategory) {
    const int shots = drawShots(rng, c.cat_zero_shot, c.cat_max_shots);
    return categoryEpisode(w, rng, shots, rng.bernoulli(0.5) ? Lang::A : Lang::B, c.cat_sep);
  }
  const std::string& task = rng.pick(c.fn_tasks);
  return functionEpisode(w, rng, task, drawShots(rng, c.fn_zero_shot, c.fn_max_shots));
}

Sample MixtureSampler::sampleAt(uint64_t index) const {
  Rng rng(deriveSeed(seed_, kStreamTrain, index));
  Sample s;
  s.kind = mixtureKinds()[rng.weighted(kindWeights(config_))];
  const size_t len = static_cast<size_t>(config_.seq_len);
  int misses = 0;
  // The constructor guarantees the first episode fits; later ones are kept only when they fit whole.
  while (misses < config_.pack_attempts) {
    Episode e = drawEpisode(s.kind, rng);
    if (s.tokens.size() + e.tokens.size() > len) {
      if (s.tokens.empty())
        fail("toy mixture: a ", s.kind, " episode of ", e.tokens.size(), " tokens exceeds seq_len ", len);
      ++misses;
      continue;
    }
    s.episode_starts.push_back(s.tokens.size());
    s.tokens.insert(s.tokens.end(), e.tokens.begin(), e.tokens.end());
    s.loss_mask.insert(s.loss_mask.end(), e.loss_mask.begin(), e.loss_mask.end());
    if (!config_.pack) break;
  }
  s.tokens.resize(len, tok::kPad);
  s.loss_mask.resize(len, 0);
  return s;
}

}  // namespace hs::toy
