#include "tasks/toy/curriculum.h"

#include <cmath>

#include "util/error.h"

namespace hs::toy {

namespace {
// The token of `sep`, one of two allowed separators; fails naming `what` otherwise.
int sepToken(const char* what, const std::string& sep, const char* a, int a_tok, const char* b, int b_tok) {
  if (sep == a) return a_tok;
  if (sep == b) return b_tok;
  fail("toy curriculum: ", what, " separator \"", sep, "\", expected \"", a, "\" or \"", b, "\"");
}
}  // namespace

int categorySepToken(const std::string& sep) {
  return sepToken("category", sep, "=", tok::kEq, ":", tok::kColon);
}

int fuzzyListSepToken(const std::string& sep) {
  return sepToken("fuzzy list", sep, ",", tok::kComma, ":", tok::kColon);
}

std::vector<CurriculumStage> defaultCurriculum(uint64_t total_samples, int seq_len,
                                               const CurriculumOptions& options) {
  const double icl_from = options.icl_from;
  if (!(icl_from > 0.15 && icl_from <= 1.0))
    fail("toy curriculum: the icl stage must start after the warm-up (15%) and by the end, got ", icl_from);
  if (!(options.category_weight >= 0.0 && options.category_weight <= 10.0))
    fail("toy curriculum: category weight ", options.category_weight, ", expected 0..10");
  if (!(options.icl_cls_weight > 0.0 && options.icl_cls_weight <= 20.0))
    fail("toy curriculum: icl-stage classification weight ", options.icl_cls_weight, ", expected (0, 20]");
  if (!(options.fuzzy_list_weight >= 0.0 && options.fuzzy_list_weight <= 10.0))
    fail("toy curriculum: fuzzy list weight ", options.fuzzy_list_weight, ", expected 0..10");
  MixtureConfig warmup;
  warmup.seq_len = seq_len;
  warmup.w_induction = 3.0;
  warmup.w_copy_list = 1.5;
  warmup.w_translate_list = 1.5;
  warmup.w_icl_cls = 1.0;
  warmup.w_function = 1.0;

  MixtureConfig main;
  main.seq_len = seq_len;

  MixtureConfig icl;
  icl.seq_len = seq_len;
  icl.w_induction = 0.5;
  icl.w_copy_list = 0.5;
  icl.w_translate_list = 0.75;
  icl.w_icl_cls = options.icl_cls_weight;
  icl.w_function = 3.0;

  const int sep = categorySepToken(options.category_sep);
  const int fuzzy_sep = fuzzyListSepToken(options.fuzzy_list_sep);
  for (MixtureConfig* c : {&warmup, &main, &icl}) {
    c->w_category = options.category_weight;
    c->cat_sep = sep;
    c->w_fuzzy_list = options.fuzzy_list_weight;
    c->fuzzy_sep = fuzzy_sep;
  }

  return {{"warmup", total_samples * 15 / 100, warmup},
          {"main", static_cast<uint64_t>(std::llround(static_cast<double>(total_samples) * icl_from)), main},
          {"icl", total_samples, icl}};
}

CurriculumSampler::CurriculumSampler(const ToyWorld& world, const std::vector<CurriculumStage>& stages,
                                     uint64_t seed)
    : stages_(stages) {
  if (stages_.empty()) fail("toy curriculum: no stages");
  for (size_t s = 0; s < stages_.size(); ++s) {
    if (s > 0 && stages_[s].until <= stages_[s - 1].until && s + 1 < stages_.size())
      fail("toy curriculum: stage \"", stages_[s].name, "\" ends at ", stages_[s].until,
           ", not after stage \"", stages_[s - 1].name, "\" (", stages_[s - 1].until, ")");
    if (stages_[s].config.seq_len != stages_[0].config.seq_len)
      fail("toy curriculum: stage \"", stages_[s].name, "\" has seq_len ", stages_[s].config.seq_len,
           ", expected ", stages_[0].config.seq_len, " like stage \"", stages_[0].name, "\"");
    samplers_.emplace_back(world, stages_[s].config, seed);
  }
}

size_t CurriculumSampler::stageAt(uint64_t index) const {
  for (size_t s = 0; s + 1 < stages_.size(); ++s)
    if (index < stages_[s].until) return s;
  return stages_.size() - 1;
}

}  // namespace hs::toy
