#include "tasks/toy/tasks.h"

#include "util/error.h"

namespace hs::toy {

const std::vector<TaskInfo>& toyTasks() {
  static const std::vector<TaskInfo> tasks = {
      {"translate_a_b", TaskKind::Word, Lang::A, Lang::B,
       "word in language A -> the same concept in language B"},
      {"translate_b_a", TaskKind::Word, Lang::B, Lang::A,
       "word in language B -> the same concept in language A"},
      {"antonym_a", TaskKind::Word, Lang::A, Lang::A,
       "word in A -> its antonym in A (a fixed pairing of concepts)"},
      {"successor_a", TaskKind::Word, Lang::A, Lang::A, "word in A -> the next word of a fixed cycle, in A"},
      {"copy_a", TaskKind::Word, Lang::A, Lang::A, "word in A -> the same word"},
      {"category_label", TaskKind::Classification, Lang::A, Lang::A,
       "word (A or B) -> label word of its category (category = first syllable)"},
  };
  return tasks;
}

std::vector<std::string> wordTaskNames() {
  std::vector<std::string> out;
  for (const auto& t : toyTasks())
    if (t.kind == TaskKind::Word) out.push_back(t.name);
  return out;
}

const TaskInfo& taskInfo(const std::string& name) {
  std::string known;
  for (const auto& t : toyTasks()) {
    if (t.name == name) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  fail("toy world: unknown task \"", name, "\", expected one of: ", known);
}

int applyWordTask(const ToyWorld& w, const std::string& name, int conceptId) {
  const TaskInfo& info = taskInfo(name);
  if (info.kind != TaskKind::Word)
    fail("toy world: task \"", name, "\" is a classification task, not word -> word");
  if (conceptId < 0 || conceptId >= w.numConcepts())
    fail("toy world: concept ", conceptId, " out of range [0, ", w.numConcepts(), ")");
  const size_t c = static_cast<size_t>(conceptId);
  if (name == "antonym_a") return w.antonym[c];
  if (name == "successor_a") return w.successor[c];
  return conceptId;  // translation and copy keep the concept; the languages differ (or not)
}

std::pair<std::vector<int>, std::vector<int>> wordTaskPair(const ToyWorld& w, const std::string& name,
                                                           int conceptId) {
  const TaskInfo& info = taskInfo(name);
  return {w.word(info.input_lang, conceptId), w.word(info.output_lang, applyWordTask(w, name, conceptId))};
}

int canonicalLabel(const ToyWorld& w, int category) {
  if (category < 0 || category >= w.numCategories() || category >= static_cast<int>(w.label_tokens.size()))
    fail("toy world: category ", category, " has no canonical label");
  return w.label_tokens[static_cast<size_t>(category)];
}

std::vector<std::pair<std::vector<int>, std::vector<int>>> taskPairs(const ToyWorld& w,
                                                                     const std::string& name) {
  const TaskInfo& info = taskInfo(name);
  std::vector<std::pair<std::vector<int>, std::vector<int>>> out;
  if (info.kind == TaskKind::Word) {
    for (int c = 0; c < w.numConcepts(); ++c)
      out.push_back(wordTaskPair(w, name, c));
    return out;
  }
  for (Lang l : {Lang::A, Lang::B})
    for (int c = 0; c < w.numConcepts(); ++c)
      out.push_back({w.word(l, c), {canonicalLabel(w, w.category[static_cast<size_t>(c)])}});
  return out;
}

nlohmann::json exportFvJson(const ToyWorld& w, const std::string& name) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [in, target] : taskPairs(w, name))
    out.push_back({{"input", w.text(in)}, {"output", w.text(target)}});
  return out;
}

nlohmann::json exportClassificationJson(const ToyWorld& w) {
  nlohmann::json labels = nlohmann::json::array();
  for (int k = 0; k < w.numCategories(); ++k)
    labels.push_back(w.tokenString(canonicalLabel(w, k)));
  nlohmann::json items = nlohmann::json::array();
  for (Lang l : {Lang::A, Lang::B})
    for (int c = 0; c < w.numConcepts(); ++c)
      items.push_back({{"input", w.text(w.word(l, c))}, {"label", w.category[static_cast<size_t>(c)]}});
  return {{"task", "category_label"}, {"label_words", labels}, {"items", items}};
}

std::string tokenizerJson(const ToyWorld& w) {
  nlohmann::json vocab = nlohmann::json::object();
  for (int id = 0; id < w.vocabSize(); ++id)
    vocab[w.tokenString(id)] = id;
  nlohmann::json added = nlohmann::json::array();
  for (int id : {tok::kPad, tok::kBos, tok::kEos, tok::kNl})
    added.push_back({{"id", id},
                     {"content", w.tokenString(id)},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", id != tok::kNl}});
  nlohmann::json j = {{"version", "1.0"},
                      {"truncation", nullptr},
                      {"padding", nullptr},
                      {"added_tokens", added},
                      {"normalizer", nullptr},
                      {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
                      {"post_processor", nullptr},
                      {"decoder", nullptr},
                      {"model", {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<pad>"}}}};
  return j.dump(2);
}

std::string tokenizerConfigJson(const ToyWorld& w, int max_length) {
  nlohmann::json j = {{"tokenizer_class", "PreTrainedTokenizerFast"},
                      {"bos_token", w.tokenString(tok::kBos)},
                      {"eos_token", w.tokenString(tok::kEos)},
                      {"pad_token", w.tokenString(tok::kPad)},
                      {"unk_token", w.tokenString(tok::kPad)},
                      {"add_bos_token", true},
                      {"add_eos_token", false},
                      {"model_max_length", max_length}};
  return j.dump(2);
}

nlohmann::json exportWorldJson(const ToyWorld& w) {
  const ToyWorldConfig& c = w.config;
  nlohmann::json config = {{"seed", c.seed},
                           {"syllables_per_language", c.syllables_per_language},
                           {"words_per_language", c.words_per_language},
                           {"categories", c.categories},
                           {"first_syllables_per_category", c.first_syllables_per_category},
                           {"label_words", c.label_words},
                           {"p_len", {c.p_len1, c.p_len2, c.p_len3}}};
  nlohmann::json categories = nlohmann::json::array();
  for (int k = 0; k < w.numCategories(); ++k) {
    nlohmann::json per_lang = nlohmann::json::array();
    for (Lang l : {Lang::A, Lang::B}) {
      nlohmann::json firsts = nlohmann::json::array();
      for (int id : w.first_syllables[index(l)][static_cast<size_t>(k)])
        firsts.push_back(w.tokenString(id));
      per_lang.push_back(firsts);
    }
    categories.push_back(per_lang);
  }
  nlohmann::json concepts = nlohmann::json::array();
  for (int i = 0; i < w.numConcepts(); ++i) {
    const size_t ci = static_cast<size_t>(i);
    concepts.push_back({{"a", w.text(w.word(Lang::A, i))},
                        {"b", w.text(w.word(Lang::B, i))},
                        {"category", w.category[ci]},
                        {"antonym", w.antonym[ci]},
                        {"successor", w.successor[ci]}});
  }
  return {{"format_version", 1}, {"config", config}, {"categories", categories}, {"concepts", concepts}};
}

}  // namespace hs::toy
