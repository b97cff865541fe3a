#include "train/toy_recipe.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <filesystem>
#include <thread>

#include "model/io/atomic_file.h"
#include "model/io/safetensors.h"
#include "results/results_json.h"
#include "tasks/toy/curriculum.h"
#include "tasks/toy/mixture.h"
#include "tasks/toy/tasks.h"
#include "train/head_gates.h"
#include "train/hf_export.h"
#include "train/numeric_kernels.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {
namespace {

void writeText(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

// The recipe of the main schedule: the same without the head-pruning stage.
ToyRecipe mainScheduleOf(ToyRecipe r) {
  r.pruning = HeadPruningOptions{};
  return r;
}

nlohmann::json curveJson(const std::vector<TrainProgress>& curve) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : curve)
    j.push_back(progressJson(p));
  return j;
}

// `batch` consecutive samples of a stream, starting at sample `first`.
TrainBatch batchOf(const std::function<toy::Sample(uint64_t)>& sampleAt, uint64_t first, int64_t B,
                   int64_t T) {
  TrainBatch b;
  b.tokens = at::empty({B, T}, at::kLong);      // [batch, pos]
  b.loss_mask = at::empty({B, T}, at::kFloat);  // [batch, pos]
  auto tok = b.tokens.accessor<int64_t, 2>();
  auto msk = b.loss_mask.accessor<float, 2>();
  for (int64_t r = 0; r < B; ++r) {
    const toy::Sample s = sampleAt(first + static_cast<uint64_t>(r));
    if (static_cast<int64_t>(s.tokens.size()) != T)
      fail("toy sampler returned ", s.tokens.size(), " tokens, expected ", T);
    for (int64_t t = 0; t < T; ++t) {
      tok[r][t] = s.tokens[t];
      msk[r][t] = s.loss_mask[t];
    }
    b.kinds.push_back(s.kind);
  }
  return b;
}

// The main schedule's result taken from a finished folder of the same recipe (see trainToy's mainFrom).
TrainResult mainScheduleFrom(const std::string& dir, const ToyRecipe& mainRecipe, ModelWeights& weights) {
  const std::string path = dir + "/training.json";
  TrainResult result;
  withContext(path, [&] {
    const nlohmann::json t = readJsonFile(path, json_limits::recipe());
    const nlohmann::json recipe = migrateRecipeJson(t.at("recipe"));
    if (recipe != recipeJson(mainRecipe))
      fail("made with another recipe than this run's main schedule: ", recipe.dump(), " vs ",
           recipeJson(mainRecipe).dump());
    result.steps_done = t.at("steps").get<int64_t>();
    if (result.steps_done != mainRecipe.train.steps)
      fail("ran ", result.steps_done, " of its ", mainRecipe.train.steps, " steps");
    result.finished = true;
    result.seconds = t.at("seconds").get<double>();
    for (const auto& p : t.at("curve"))
      result.curve.push_back(progressFromJson(p));
    // Folders trained before the record existed have none.
    result.numeric_kernels = t.value("numeric_kernels", nlohmann::json::array());
    return 0;
  });
  weights = initWeights(mainRecipe.model, mainRecipe.train.seed);
  auto file = SafetensorsFile::open(dir + "/model.safetensors");
  at::NoGradGuard noGrad;
  for (auto& [name, t] : llamaParameterTable(weights, mainRecipe.model))
    t->copy_(file->tensor(name));
  return result;
}

struct PruningOutcome {
  TrainResult result;
  at::Tensor gates;              // [n_layers, n_heads] the folded (deterministic) gates
  at::Tensor openProbability;    // [n_layers, n_heads] P(z > 0) at the end
  std::vector<HeadRef> removed;  // every head with gate 0, layer-major
};

// The head-pruning stage: L0 gates on every head's hook_z, trained with the weights (in place) on the main
// mixture's samples after the main schedule's; the final deterministic gates are folded into the weights.
PruningOutcome pruneHeads(const ToyRecipe& recipe, const toy::ToyWorld& world, ModelWeights& weights,
                          const std::string& checkpointDir,
                          const std::function<void(const TrainProgress&)>& onProgress) {
  const HeadPruningOptions& o = recipe.pruning;
  const ModelConfig& c = recipe.model;
  const uint64_t mainSamples = static_cast<uint64_t>(recipe.train.steps) * recipe.batch;
  const toy::MixtureConfig mixture = toy::defaultCurriculum(mainSamples, recipe.seq_len, recipe.curriculum)
                                         .at(1)
                                         .config;  // the main stage's mixture
  const toy::MixtureSampler sampler(world, mixture, recipe.train.seed);

  TrainConfig cfg = recipe.train;
  cfg.steps = o.steps;
  cfg.lr = o.lr;
  cfg.min_lr_ratio = 0.1;
  cfg.warmup = o.warmup;
  cfg.stop_after = recipe.train.stop_after > 0 ? recipe.train.stop_after - recipe.train.steps : -1;

  TrainExtension ext;
  ext.start = &weights;
  ext.params = {at::full({c.n_layers, c.n_heads}, o.gate_init)};  // log α [n_layers, n_heads]
  ext.lr_ratio = o.gate_lr / o.lr;
  ext.signature = recipeJson(recipe).at("head_pruning");
  ext.interventions = [&](int64_t step) {
    // Gate noise for this step: a pure function of (seed, step), so a resumed stage draws the same gates.
    at::Generator gen = at::detail::createCPUGenerator(recipe.train.seed * 1000003ULL + 7919ULL +
                                                       static_cast<uint64_t>(step));
    const at::Tensor u = at::rand({c.n_layers, c.n_heads}, gen).clamp(1e-6, 1.0 - 1e-6);  // [layer, head]
    const at::Tensor z = hardConcreteSample(ext.params[0], u);                            // [layer, head]
    std::vector<Intervention> ivs;
    for (int l = 0; l < c.n_layers; ++l) {
      Intervention iv;
      iv.site = attnZ(l);
      iv.op = InterventionOp::Interpolate;  // z·x = (1 − (1 − z))·x + (1 − z)·0
      iv.tensor = at::zeros({1});
      iv.alpha = (1 - z[l]).unsqueeze(1);  // [head, 1]
      ivs.push_back(iv);
    }
    return ivs;
  };
  ext.penalty = [&] { return o.l0_weight * hardConcreteOpenProbability(ext.params[0]).sum(); };

  const int64_t B = recipe.batch, T = recipe.seq_len;
  auto batchAt = [&](int64_t step) {
    return batchOf([&](uint64_t i) { return sampler.sampleAt(i); },
                   mainSamples + static_cast<uint64_t>(step * B), B, T);
  };
  PruningOutcome out;
  ModelWeights trained;
  out.result = train(c, cfg, batchAt, checkpointDir, onProgress, &trained, &ext);
  weights = trained;
  const at::Tensor logAlpha = ext.params[0].detach();
  out.gates = hardConcreteDeterministic(logAlpha);
  out.openProbability = hardConcreteOpenProbability(logAlpha);
  out.removed = foldHeadGates(weights, c, out.gates);
  return out;
}

nlohmann::json matrixJson(const at::Tensor& m) {
  nlohmann::json j = nlohmann::json::array();
  for (int64_t i = 0; i < m.size(0); ++i) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t k = 0; k < m.size(1); ++k)
      row.push_back(m[i][k].item<double>());
    j.push_back(row);
  }
  return j;
}

}  // namespace

ToyRecipe defaultToyRecipe() {
  ToyRecipe r;
  const toy::ToyWorld world = toy::ToyWorld::build(r.world);
  r.model = llamaBaseConfig("hf", RopeLayout::RotateHalf);
  ModelConfig& c = r.model;
  c.n_layers = 4;
  c.n_heads = 8;
  c.n_kv_heads = 8;
  c.d_model = 128;
  c.d_head = 16;
  c.d_mlp = 384;
  c.vocab_size = world.vocabSize();
  c.context_length = r.seq_len;
  c.rotary_dim = c.d_head;
  c.tied_embeddings = false;
  c.bos_token_id = toy::tok::kBos;
  c.eos_token_id = toy::tok::kEos;
  TrainConfig& t = r.train;
  // 7000 steps of 32 x 128 tokens on one thread: for matrices this small a second thread's per-op
  // synchronisation costs more than it gives, and one thread (BLAS included, numeric_kernels.h) keeps the
  // bits independent of the machine's core count.
  t.steps = 7000;
  t.lr = 3e-3;
  t.min_lr_ratio = 0.05;
  t.warmup = 200;
  t.weight_decay = 0.01;
  t.beta1 = 0.9;
  t.beta2 = 0.98;
  t.grad_clip = 1.0;
  t.seed = 1;
  t.checkpoint_every = 250;
  t.log_every = 50;
  t.threads = 1;
  // Then 1500 steps of head pruning. The main schedule spreads induction over several redundant heads, so
  // ablating a few of them shows little; the L0 penalty concentrates each ability in the heads that keep
  // it. λ trades the two: too small closes too few heads to concentrate induction, too large costs
  // accuracy (docs/toy-model.md, "Head pruning").
  r.pruning.steps = 1500;
  r.pruning.l0_weight = 0.03;
  return r;
}

nlohmann::json recipeJson(const ToyRecipe& r) {
  nlohmann::json j = {{"format_version", kToyRecipeFormatVersion},
                      {"world",
                       {{"seed", r.world.seed},
                        {"syllables_per_language", r.world.syllables_per_language},
                        {"words_per_language", r.world.words_per_language},
                        {"categories", r.world.categories},
                        {"label_words", r.world.label_words}}},
                      {"model", llamaConfigJson(r.model)},
                      {"train",
                       {{"steps", r.train.steps},
                        {"batch", r.batch},
                        {"seq_len", r.seq_len},
                        {"lr", r.train.lr},
                        {"min_lr_ratio", r.train.min_lr_ratio},
                        {"warmup", r.train.warmup},
                        {"weight_decay", r.train.weight_decay},
                        {"betas", {r.train.beta1, r.train.beta2}},
                        {"grad_clip", r.train.grad_clip},
                        {"seed", r.train.seed},
                        {"optimizer", "AdamW"},
                        {"schedule", "linear warm-up, cosine decay"},
                        {"icl_from", r.curriculum.icl_from},
                        {"category_weight", r.curriculum.category_weight},
                        {"category_sep", r.curriculum.category_sep},
                        {"icl_cls_weight", r.curriculum.icl_cls_weight},
                        {"fuzzy_list_weight", r.curriculum.fuzzy_list_weight},
                        {"fuzzy_list_sep", r.curriculum.fuzzy_list_sep}}}};
  if (r.pruning.steps > 0)
    j["head_pruning"] = {
        {"steps", r.pruning.steps},
        {"l0_weight", r.pruning.l0_weight},
        {"lr", r.pruning.lr},
        {"gate_lr", r.pruning.gate_lr},
        {"gate_init", r.pruning.gate_init},
        {"warmup", r.pruning.warmup},
        {"gates", "hard concrete (beta 2/3, gamma -0.1, zeta 1.1) on hook_z, folded into W_O"},
        {"mixture", "the main curriculum stage's, samples after the main schedule's"}};
  return j;
}

nlohmann::json migrateRecipeJson(nlohmann::json recipe) {
  if (!recipe.is_object()) fail("the recipe is a JSON ", recipe.type_name(), ", expected an object");
  int64_t version = 0;
  if (const auto v = recipe.find("format_version"); v != recipe.end()) {
    if (!v->is_number_integer() || v->get<int64_t>() < 0)
      fail("recipe \"format_version\" is ", v->dump(), ", expected a non-negative integer");
    version = v->get<int64_t>();
    if (version > kToyRecipeFormatVersion)
      fail("recipe format_version ", version, " was written by a newer HeadScope (this build reads up to ",
           kToyRecipeFormatVersion, ")");
  }
  const auto train = recipe.find("train");
  if (train == recipe.end() || !train->is_object()) fail("the recipe has no \"train\" object");
  if (version == 0) {
    // Version 0 wrote a curriculum setting only once it existed, and the separators and the fuzzy-list
    // weight only when their episodes were on; these are the values its runs used without them.
    const std::pair<const char*, nlohmann::json> ranWith[] = {
        {"icl_from", 0.7},     {"category_weight", 0.0},   {"icl_cls_weight", 3.0},
        {"category_sep", "="}, {"fuzzy_list_weight", 0.0}, {"fuzzy_list_sep", ","}};
    for (const auto& [key, value] : ranWith)
      if (!train->contains(key)) (*train)[key] = value;
    train->erase("curriculum");  // named the source file of the curriculum; the settings above define it
    recipe["format_version"] = 1;
  }
  return recipe;
}

void setHeadWidth(ToyRecipe& r, int64_t d_head) {
  if (d_head <= 0 || d_head % 2)
    fail("toy recipe: head width ", d_head, ": RoPE needs an even, positive width");
  r.model.d_head = d_head;
  r.model.rotary_dim = d_head;
}

void setLayerCount(ToyRecipe& r, int64_t n_layers) {
  if (n_layers <= 0) fail("toy recipe: ", n_layers, " layers: needs at least one");
  r.model.n_layers = n_layers;
}

void setHeadCount(ToyRecipe& r, int64_t n_heads) {
  if (n_heads <= 0) fail("toy recipe: ", n_heads, " heads per layer: needs at least one");
  r.model.n_heads = n_heads;
  r.model.n_kv_heads = n_heads;
}

std::optional<nlohmann::json> savedRecipeJson(const std::string& outDir) {
  const std::string path = outDir + "/checkpoint/recipe.json";
  if (!std::filesystem::exists(path)) return std::nullopt;
  return withContext(path, [&] { return migrateRecipeJson(readJsonFile(path, json_limits::recipe())); });
}

ToyRecipe resumedRecipe(const std::string& outDir, ToyRecipe base) {
  const std::string path = outDir + "/checkpoint/recipe.json";
  const std::optional<nlohmann::json> saved = savedRecipeJson(outDir);
  if (!saved) fail(path, ": missing, so the run's settings are unknown");
  withContext(path, [&] {
    const nlohmann::json& t = saved->at("train");
    base.train.steps = t.at("steps").get<int64_t>();
    base.train.seed = t.at("seed").get<uint64_t>();
    base.batch = t.at("batch").get<int>();
    base.curriculum.icl_from = t.at("icl_from").get<double>();
    base.curriculum.category_weight = t.at("category_weight").get<double>();
    base.curriculum.icl_cls_weight = t.at("icl_cls_weight").get<double>();
    base.curriculum.category_sep = t.at("category_sep").get<std::string>();
    toy::categorySepToken(base.curriculum.category_sep);
    base.curriculum.fuzzy_list_weight = t.at("fuzzy_list_weight").get<double>();
    base.curriculum.fuzzy_list_sep = t.at("fuzzy_list_sep").get<std::string>();
    toy::fuzzyListSepToken(base.curriculum.fuzzy_list_sep);
    const nlohmann::json& m = saved->at("model");
    if (m.contains("head_dim")) setHeadWidth(base, m.at("head_dim").get<int64_t>());
    setLayerCount(base, m.at("num_hidden_layers").get<int64_t>());
    setHeadCount(base, m.at("num_attention_heads").get<int64_t>());
    base.pruning = HeadPruningOptions{};
    if (saved->contains("head_pruning")) {
      const nlohmann::json& p = saved->at("head_pruning");
      base.pruning.steps = p.at("steps").get<int64_t>();
      base.pruning.l0_weight = p.at("l0_weight").get<double>();
      base.pruning.lr = p.at("lr").get<double>();
      base.pruning.gate_lr = p.at("gate_lr").get<double>();
      base.pruning.gate_init = p.at("gate_init").get<double>();
      base.pruning.warmup = p.at("warmup").get<int64_t>();
    }
  });
  return base;
}

TrainResult trainToy(const ToyRecipe& recipe, const std::string& outDir,
                     const std::function<void(const TrainProgress&)>& onProgress,
                     const std::string& mainFrom) {
  const toy::ToyWorld world = toy::ToyWorld::build(recipe.world);
  if (world.vocabSize() != recipe.model.vocab_size)
    fail("toy recipe: the world has ", world.vocabSize(), " tokens but the model's vocab is ",
         recipe.model.vocab_size);
  const uint64_t totalSamples = static_cast<uint64_t>(recipe.train.steps) * recipe.batch;
  const toy::CurriculumSampler sampler(
      world, toy::defaultCurriculum(totalSamples, recipe.seq_len, recipe.curriculum), recipe.train.seed);
  // The batch of step s is samples [s·batch, (s+1)·batch) of the stream: a pure function of s.
  auto batchAt = [&](int64_t step) {
    return batchOf([&](uint64_t i) { return sampler.sampleAt(i); },
                   static_cast<uint64_t>(step * recipe.batch), recipe.batch, recipe.seq_len);
  };

  std::filesystem::create_directories(outDir + "/checkpoint");
  const nlohmann::json recipeNow = recipeJson(recipe);
  if (std::filesystem::exists(outDir + "/checkpoint/trainer_state.json")) {
    const std::optional<nlohmann::json> saved = savedRecipeJson(outDir);
    if (saved && *saved != recipeNow)
      fail(outDir, "/checkpoint/recipe.json: the checkpoint was made with another recipe: ", saved->dump(),
           " vs now ", recipeNow.dump());
  }
  // The recipe beside the resumable state, so `train-toy --resume` continues with the same settings.
  writeText(outDir + "/checkpoint/recipe.json", recipeNow.dump(1) + "\n");
  const ToyRecipe mainRecipe = mainScheduleOf(recipe);
  ModelWeights weights;
  TrainResult result = mainFrom.empty() ? train(mainRecipe.model, mainRecipe.train, batchAt,
                                                outDir + "/checkpoint", onProgress, &weights)
                                        : mainScheduleFrom(mainFrom, mainRecipe, weights);

  nlohmann::json stages = nlohmann::json::array();
  stages.push_back({{"name", "main"},
                    {"steps", result.steps_done},
                    {"from", mainFrom.empty() ? nlohmann::json(nullptr) : nlohmann::json(mainFrom)}});
  nlohmann::json pruningJson;
  if (recipe.pruning.steps > 0 && result.finished &&
      (recipe.train.stop_after <= 0 || recipe.train.stop_after > recipe.train.steps)) {
    const int64_t offset = result.steps_done;
    const double secondsBefore = result.seconds;
    auto shifted = [&](TrainProgress p) {
      p.step += offset;
      p.seconds += secondsBefore;
      return p;
    };
    const PruningOutcome pruned =
        pruneHeads(recipe, world, weights, outDir + "/checkpoint-pruning", [&](const TrainProgress& p) {
          if (onProgress) onProgress(shifted(p));
        });
    for (const auto& p : pruned.result.curve)
      result.curve.push_back(shifted(p));
    result.steps_done += pruned.result.steps_done;
    result.seconds += pruned.result.seconds;
    result.finished = pruned.result.finished;
    for (const auto& k : pruned.result.numeric_kernels)
      addNumericKernels(result.numeric_kernels, k);
    pruningJson = {{"gates", matrixJson(pruned.gates)},
                   {"open_probability", matrixJson(pruned.openProbability)},
                   {"removed_heads", pruned.removed}};  // [[layer, head], ...]
    stages.push_back({{"name", "head_pruning"}, {"steps", pruned.result.steps_done}});
  } else if (recipe.pruning.steps > 0) {
    result.finished = false;  // the pruning stage has not run yet
  }

  saveHfLlama(outDir, weights, recipe.model, {{"headscope.toy_recipe", recipeNow.dump()}});
  writeText(outDir + "/tokenizer.json", toy::tokenizerJson(world));
  writeText(outDir + "/tokenizer_config.json", toy::tokenizerConfigJson(world, recipe.seq_len));
  nlohmann::json training = {
      {"recipe", recipeNow},
      {"steps", result.steps_done},
      {"seconds", result.seconds},
      {"threads", at::get_num_threads()},
      {"numeric_kernels", result.numeric_kernels},
      {"final_loss",
       result.curve.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.curve.back().loss)},
      {"final_kind_loss",
       result.curve.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.curve.back().kind_loss)},
      {"curve", curveJson(result.curve)}};
  if (recipe.pruning.steps > 0) {
    training["stages"] = stages;
    training["head_pruning"] = pruningJson;
  }
  writeText(outDir + "/training.json", training.dump(1) + "\n");
  return result;
}

}  // namespace hs
