#pragma once
// The training sampler of the toy model: an endless, deterministic stream of fixed-length samples, each
// tagged with its kind so every kind can be evaluated alone. Sample i depends only on (seed, i): its Rng is
// seeded from deriveSeed(seed, kStreamTrain, i), so a trainer that resumes with seek(i) continues the exact
// stream it would have seen.
//
// A sample is one kind, packed: episodes of that kind (each opening with <bos>) are appended while they fit,
// then <pad> (mask 0) fills up to seq_len. Attention may see across episodes; that is fine for a toy.
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/toy/episodes.h"
#include "tasks/toy/world.h"

namespace hs::toy {

// Kind tags, stable strings (they go into logs and eval JSON).
inline constexpr const char* kKindInduction = "induction";
inline constexpr const char* kKindCopyList = "copy_list";
inline constexpr const char* kKindTranslateList = "translate_list";
inline constexpr const char* kKindIclCls = "icl_cls";
inline constexpr const char* kKindFunction = "function";
inline constexpr const char* kKindCategory = "category";
inline constexpr const char* kKindFuzzyList = "fuzzy_list";
const std::vector<std::string>& mixtureKinds();  // the seven above, in this order

struct MixtureConfig {
  int seq_len = 256;
  bool pack = true;       // false: one episode per sample
  int pack_attempts = 4;  // episodes tried that did not fit before padding the rest
  // Relative weights of the kinds (0 disables a kind).
  double w_induction = 1.0;
  double w_copy_list = 0.75;
  double w_translate_list = 0.75;
  double w_icl_cls = 2.0;
  double w_function = 2.0;
  // Category naming, off by default. Last in the weights: a zero leaves the other kinds' draws unchanged.
  double w_category = 0.0;
  // Category-level (fuzzy) list copying, off by default; after w_category for the same reason.
  double w_fuzzy_list = 0.0;
  int fuzzy_sep = tok::kComma;  // between the words of a fuzzy list: "," (tok::kComma) or ":" (tok::kColon)
  // induction: <bos> + a span of distinct syllables repeated several times
  int induction_min_span = 8, induction_max_span = 24;
  int induction_min_repeats = 2, induction_max_repeats = 4;
  // copy_list / translate_list / fuzzy_list: lists of distinct words
  int list_min_words = 3, list_max_words = 8;
  // icl_cls: shots = 0 with probability cls_zero_shot, else uniform in [1, cls_max_shots]
  int cls_min_labels = 2, cls_max_labels = 4, cls_max_shots = 12;
  double cls_zero_shot = 0.1;
  // function: shots = 0 with probability fn_zero_shot, else uniform in [1, fn_max_shots]; task uniform
  int fn_max_shots = 10;
  double fn_zero_shot = 0.1;
  // category: shots = 0 with probability cat_zero_shot, else uniform in [1, cat_max_shots]; language uniform
  int cat_max_shots = 6;
  double cat_zero_shot = 0.3;
  int cat_sep = tok::kEq;  // "x = d" (tok::kEq) or "x : d" (tok::kColon)
  std::vector<std::string> fn_tasks = {"translate_a_b", "translate_b_a", "antonym_a", "successor_a",
                                       "copy_a"};
};

struct Sample {
  std::vector<int> tokens;             // [seq_len] ids < world.vocabSize(), <pad> after the last episode
  std::vector<uint8_t> loss_mask;      // [seq_len] 1 where tokens[t] is a target of the logits at t-1
  std::string kind;                    // one of mixtureKinds()
  std::vector<size_t> episode_starts;  // position of each episode's <bos>
};

class MixtureSampler {
 public:
  // Validates the config against the world (every enabled kind's longest episode must fit seq_len).
  MixtureSampler(const ToyWorld& world, MixtureConfig config, uint64_t seed);

  Sample next() { return sampleAt(position_++); }
  // Sample `index` of the stream, without moving the position.
  Sample sampleAt(uint64_t index) const;
  uint64_t position() const { return position_; }
  void seek(uint64_t position) { position_ = position; }

  const MixtureConfig& config() const { return config_; }
  const ToyWorld& world() const { return world_; }
  uint64_t seed() const { return seed_; }

 private:
  Episode drawEpisode(const std::string& kind, Rng& rng) const;

  ToyWorld world_;  // a copy: the sampler stays valid whatever the caller does with its world
  MixtureConfig config_;
  uint64_t seed_;
  uint64_t position_ = 0;
};

}  // namespace hs::toy
