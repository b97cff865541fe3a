#include "tasks/icl_task.h"

#include <algorithm>
#include <map>

#include "tasks/corruption.h"
#include "tasks/split.h"
#include "tasks/toy/rng.h"
#include "tasks/toy/tasks.h"
#include "tasks/toy/world.h"
#include "util/error.h"
#include "util/memory.h"

namespace hs {
namespace {

constexpr uint64_t kQueryStream = 0x51, kDemoStream = 0xD3, kShuffleStream = 0x5F;

// Prompts per task at most: far above any analysis's need (each prompt costs forward passes) and far
// below an int's wrap.
constexpr int kMaxPrompts = 10'000'000;

// Heap bytes one prompt holds (ids, display pieces, segments, spans), roughly.
uint64_t approxBytes(const Prompt& p) {
  uint64_t b = sizeof(Prompt) + p.ids.capacity() * sizeof(int) + p.answer_tokens.capacity() * sizeof(int) +
               p.text.capacity() + p.answer.capacity() + p.demos.capacity() * sizeof(Prompt::Demo);
  for (const std::string& piece : p.pieces)
    b += sizeof(std::string) + piece.capacity();
  for (const PromptSegment& seg : p.segments)
    b += sizeof(PromptSegment) + seg.role.capacity() + seg.text.capacity();
  return b;
}

// The prompts of a task must fit in memory: estimated from the first prompt pair, refused with both
// numbers before the rest are built.
void checkPromptsFit(const std::string& id, int n, const Prompt& icl, const Prompt& zeroShot) {
  checkFitsInMemory(cat("task ", id), static_cast<uint64_t>(n), approxBytes(icl) + approxBytes(zeroShot) + 64,
                    cat("prompts of ", icl.ids.size(), " tokens"),
                    "ask for fewer prompts (--n, or the command's other prompt counts)");
}

const std::vector<int>& splitPart(const Split& s, const std::string& name) {
  if (name == "train") return s.train;
  if (name == "valid") return s.valid;
  if (name == "test") return s.test;
  fail("task split \"", name, "\": expected train, valid or test");
}

// Demonstrations of one prompt: distinct train examples without the query; for classification one of
// each label first (when shots allow and the train split has them), the rest at random, order shuffled.
std::vector<int> drawDemos(const Dataset& d, const std::vector<int>& train, int shots, int query,
                           uint64_t seed) {
  if (!d.classification || shots < static_cast<int>(d.label_words.size()))
    return sampleDemos(train, shots, query, seed);
  toy::Rng rng(seed);
  std::vector<int> chosen;
  for (int label = 0; label < static_cast<int>(d.label_words.size()); ++label) {
    std::vector<int> pool;
    for (int i : train)
      if (i != query && d.examples[static_cast<size_t>(i)].label == label) pool.push_back(i);
    if (!pool.empty()) chosen.push_back(rng.pick(pool));
  }
  std::vector<int> rest;
  for (int i : train)
    if (i != query && std::find(chosen.begin(), chosen.end(), i) == chosen.end()) rest.push_back(i);
  const int more = shots - static_cast<int>(chosen.size());
  if (more > static_cast<int>(rest.size()))
    fail("task ", d.id, ": the train split has ", train.size(), " examples, too few for ", shots, " shots");
  for (int j : rng.choose(static_cast<int>(rest.size()), more))
    chosen.push_back(rest[static_cast<size_t>(j)]);
  rng.shuffle(chosen);
  return chosen;
}

std::vector<Example> examplesAt(const Dataset& d, const std::vector<int>& idx) {
  std::vector<Example> out;
  for (int i : idx)
    out.push_back(d.examples[static_cast<size_t>(i)]);
  return out;
}

}  // namespace

nlohmann::json taskSpecToJson(const TaskSpec& s) {
  return {
      {"dataset", s.dataset}, {"template", s.template_id},    {"shots", s.shots}, {"n_prompts", s.n_prompts},
      {"seed", s.seed},       {"label_words", s.label_words}, {"split", s.split}};
}

TaskSpec taskSpecFromJson(const nlohmann::json& j) {
  TaskSpec s;
  try {
    s.dataset = j.at("dataset").get<std::string>();
    s.template_id = j.value("template", std::string());
    s.shots = j.value("shots", s.shots);
    s.n_prompts = j.value("n_prompts", s.n_prompts);
    s.seed = j.value("seed", s.seed);
    s.label_words = j.value("label_words", std::vector<std::string>{});
    s.split = j.value("split", s.split);
  } catch (const nlohmann::json::exception& e) {
    fail("task settings: ", e.what());
  }
  return s;
}

Dataset loadTaskDataset(const TaskSpec& spec) {
  Dataset d;
  if (spec.dataset.rfind("toy:", 0) == 0) {
    const std::string name = spec.dataset.substr(4);
    const toy::ToyWorld world = toy::ToyWorld::build();
    const toy::TaskInfo& info = toy::taskInfo(name);  // throws naming the known tasks
    d = info.kind == toy::TaskKind::Classification
            ? datasetFromToyClassification(toy::exportClassificationJson(world), spec.dataset)
            : datasetFromToyExport(toy::exportFvJson(world, name), spec.dataset);
    d.source = spec.dataset;
  } else {
    d = loadDatasetAuto(spec.dataset);
  }
  if (!spec.label_words.empty()) {
    if (!d.classification)
      fail("task ", spec.dataset, ": label words given for a task that is not classification");
    d = withLabelWords(d, spec.label_words);
  }
  return d;
}

PromptTemplate taskTemplate(const TaskSpec& spec, const Dataset& d) {
  if (!spec.template_id.empty()) return builtinTemplate(spec.template_id);
  if (d.source.rfind("toy:", 0) == 0) return builtinTemplate(d.classification ? "toy-cls" : "toy-fn");
  if (!d.template_id.empty()) return builtinTemplate(d.template_id);
  return builtinTemplate(d.classification ? "classification" : "fv");
}

Split taskSplit(const Dataset& dataset, uint64_t seed) {
  return dataset.given_split ? *dataset.given_split
                             : splitIndices(static_cast<int>(dataset.examples.size()), seed);
}

IclTask buildIclTask(const Tokenizer& tok, const TaskSpec& spec) {
  return buildIclTask(tok, spec, loadTaskDataset(spec));
}

IclTask buildIclTask(const Tokenizer& tok, const TaskSpec& spec, const Dataset& dataset) {
  if (spec.shots < 0) fail("task ", spec.dataset, ": ", spec.shots, " shots");
  if (spec.n_prompts <= 0 || spec.n_prompts > kMaxPrompts)
    fail("task ", spec.dataset, ": ", spec.n_prompts, " prompts requested, expected 1..", kMaxPrompts);
  IclTask t;
  t.spec = spec;
  t.dataset = dataset;
  t.tmpl = taskTemplate(spec, dataset);
  const int n = static_cast<int>(dataset.examples.size());
  if (n < 2) fail("task ", dataset.id, ": ", n, " examples, need at least 2");
  const Split split = taskSplit(dataset, spec.seed);
  const std::vector<int>& pool = splitPart(split, spec.split);
  if (pool.empty()) fail("task ", dataset.id, ": the ", spec.split, " split is empty (", n, " examples)");
  if (spec.shots > static_cast<int>(split.train.size()) - (spec.split == "train" ? 1 : 0))
    fail("task ", dataset.id, ": ", spec.shots, " shots but the train split holds ", split.train.size(),
         " examples");

  // Queries: the pool in a seeded order, cycling when more prompts than queries are asked for.
  std::vector<int> order = pool;
  toy::Rng qrng(toy::deriveSeed(spec.seed, kQueryStream));
  qrng.shuffle(order);
  for (int i = 0; i < spec.n_prompts; ++i) {
    const int q = order[static_cast<size_t>(i) % order.size()];
    const std::vector<int> demos =
        drawDemos(dataset, split.train, spec.shots, q, toy::deriveSeed(spec.seed, kDemoStream, i));
    const Example& query = dataset.examples[static_cast<size_t>(q)];
    t.icl.push_back(buildPrompt(tok, t.tmpl, examplesAt(dataset, demos), query));
    t.zero_shot.push_back(zeroShotPrompt(tok, t.tmpl, query));
    t.query_index.push_back(q);
    t.demo_index.push_back(demos);
    if (i == 0) checkPromptsFit(dataset.id, spec.n_prompts, t.icl.front(), t.zero_shot.front());
  }

  if (dataset.classification) {
    // The first token of each label word exactly as it follows the template's output prefix.
    std::map<int, std::string> seen;
    Example probe = dataset.examples.front();
    for (size_t k = 0; k < dataset.label_words.size(); ++k) {
      probe.outputs = {dataset.label_words[k]};
      const int first = zeroShotPrompt(tok, t.tmpl, probe).answer_token;
      if (seen.count(first))
        fail("task ", dataset.id, ": label words \"", seen[first], "\" and \"", dataset.label_words[k],
             "\" start with the same token (", first, "); choose label words with distinct first tokens");
      seen[first] = dataset.label_words[k];
      t.label_tokens.push_back(first);
    }
  }
  return t;
}

std::vector<Prompt> shuffledLabelPrompts(const Tokenizer& tok, const IclTask& task, uint64_t seed) {
  std::vector<Prompt> out;
  for (size_t i = 0; i < task.icl.size(); ++i) {
    const std::vector<Example> demos =
        shuffleLabels(examplesAt(task.dataset, task.demo_index[i]), toy::deriveSeed(seed, kShuffleStream, i));
    out.push_back(
        buildPrompt(tok, task.tmpl, demos, task.dataset.examples[static_cast<size_t>(task.query_index[i])]));
  }
  return out;
}

}  // namespace hs
