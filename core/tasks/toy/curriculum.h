#pragma once
// A curriculum for the toy model: the mixture changes with the sample index, in stages. Sample i of stage s
// is MixtureSampler(world, stage s config, seed).sampleAt(i), so the stream still depends on (seed, i) only
// and a resumed trainer continues it exactly with seek(i).
//
// Why stages: in-context abilities rest on induction heads, which form first
// and fast when repeated spans are common (Olsson et al.); task recognition (which label words / which output
// language) is learned early, task learning (which category goes with which label, from the demos alone)
// slowly. So: an induction- and copy-heavy warm-up, then the full mixture, then a phase weighted towards the
// ICL episodes whose accuracy is the target (classification, function episodes).
#include <cstdint>
#include <string>
#include <vector>

#include "tasks/toy/mixture.h"

namespace hs::toy {

struct CurriculumStage {
  std::string name;
  uint64_t until = 0;  // this stage serves sample indices below `until` (after the previous stage's)
  MixtureConfig config;
};

// The recipe's choices about the stages; the defaults are the shipped model's.
struct CurriculumOptions {
  double icl_from = 0.70;        // the icl stage serves this fraction of the samples onwards; in (0.15, 1]
  double category_weight = 0.0;  // > 0: category-naming episodes (episodes.h) in every stage, this weight
  double icl_cls_weight = 3.0;   // the classification episodes' weight in the icl stage; in (0, 20]
  // The category-naming episodes' separator: "=" or ":" (the classification episodes' separator, so the
  // category a word has is asked for at the position where classification reads it).
  std::string category_sep = "=";
  // > 0: category-level (fuzzy) list copying (episodes.h fuzzyListEpisode) in every stage, this weight: the
  // category match a classification query needs, trained where it is the only way to predict.
  // 0 turns them off.
  double fuzzy_list_weight = 1.0;
  // The fuzzy lists' separator between words: ":" (like classification, so the query's category is matched
  // from a ":" to what follows the earlier ":"s) or "," (like the other lists).
  std::string fuzzy_list_sep = ":";
};

// The separator token of a category_sep string; fails on anything but "=" and ":".
int categorySepToken(const std::string& sep);
// The separator token of a fuzzy_list_sep string; fails on anything but "," and ":".
int fuzzyListSepToken(const std::string& sep);

// Warm-up (first 15%: induction and lists weighted up), main (default mixture, up to `icl_from` of the
// samples), icl (classification and function episodes weighted up). The last stage extends past
// total_samples. Category naming, when on, gives the model the category as a feature before the
// classification episodes ask it to map categories to fresh labels.
std::vector<CurriculumStage> defaultCurriculum(uint64_t total_samples, int seq_len = 256,
                                               const CurriculumOptions& options = {});

class CurriculumSampler {
 public:
  // Stages must have increasing `until` and one seq_len (the trainer's batch shape).
  CurriculumSampler(const ToyWorld& world, const std::vector<CurriculumStage>& stages, uint64_t seed);

  Sample next() { return sampleAt(position_++); }
  Sample sampleAt(uint64_t index) const { return samplers_[stageAt(index)].sampleAt(index); }
  uint64_t position() const { return position_; }
  void seek(uint64_t position) { position_ = position; }

  size_t stageAt(uint64_t index) const;  // the last stage serves every index past the others
  const std::vector<CurriculumStage>& stages() const { return stages_; }

 private:
  std::vector<CurriculumStage> stages_;
  std::vector<MixtureSampler> samplers_;
  uint64_t position_ = 0;
};

}  // namespace hs::toy
