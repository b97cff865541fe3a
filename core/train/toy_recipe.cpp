#include "train/toy_recipe.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <filesystem>
#include <thread>

#include "model/io/atomic_file.h"
#include "tasks/toy/curriculum.h"
#include "tasks/toy/tasks.h"
#include "train/hf_export.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {
namespace {

void writeText(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

ToyRecipe defaultToyRecipe() {
  ToyRecipe r;
  const toy::ToyWorld world = toy::ToyWorld::build(r.world);
  ModelConfig& c = r.model;
  c.arch = Architecture::Llama;
  c.model_type = "llama";
  c.source_format = "hf";
  c.n_layers = 4;
  c.n_heads = 8;
  c.n_kv_heads = 8;
  c.d_model = 128;
  c.d_head = 16;
  c.d_mlp = 384;
  c.vocab_size = world.vocabSize();
  c.context_length = r.seq_len;
  c.norm = NormKind::RMSNorm;
  c.norm_eps = 1e-5;
  c.rope_layout = RopeLayout::RotateHalf;
  c.rope_theta = 10000.0;
  c.rotary_dim = c.d_head;
  c.mlp = MlpKind::SwiGLU;
  c.activation = "silu";
  c.tied_embeddings = false;
  c.bos_token_id = toy::tok::kBos;
  c.eos_token_id = toy::tok::kEos;
  TrainConfig& t = r.train;
  // 7000 steps of 32 x 128 tokens: about 70 minutes on one core (one thread is faster than two for
  // matrices this small: the per-op synchronisation costs more than the second core gives).
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
  return r;
}

nlohmann::json recipeJson(const ToyRecipe& r) {
  return {{"world",
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
            {"curriculum", "tasks/toy/curriculum.cpp defaultCurriculum"},
            {"icl_from", r.curriculum.icl_from},
            {"category_weight", r.curriculum.category_weight},
            {"icl_cls_weight", r.curriculum.icl_cls_weight}}}};
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
  return readJsonFile(path);
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
    // Recipes written before an option existed ran with what is now its default.
    const toy::CurriculumOptions defaults;
    base.curriculum.icl_from = t.value("icl_from", defaults.icl_from);
    base.curriculum.category_weight = t.value("category_weight", defaults.category_weight);
    base.curriculum.icl_cls_weight = t.value("icl_cls_weight", defaults.icl_cls_weight);
    const nlohmann::json& m = saved->at("model");
    if (m.contains("head_dim")) setHeadWidth(base, m.at("head_dim").get<int64_t>());
    setLayerCount(base, m.at("num_hidden_layers").get<int64_t>());
    setHeadCount(base, m.at("num_attention_heads").get<int64_t>());
  });
  return base;
}

TrainResult trainToy(const ToyRecipe& recipe, const std::string& outDir,
                     const std::function<void(const TrainProgress&)>& onProgress) {
  const toy::ToyWorld world = toy::ToyWorld::build(recipe.world);
  if (world.vocabSize() != recipe.model.vocab_size)
    fail("toy recipe: the world has ", world.vocabSize(), " tokens but the model's vocab is ",
         recipe.model.vocab_size);
  const uint64_t totalSamples = static_cast<uint64_t>(recipe.train.steps) * recipe.batch;
  const toy::CurriculumSampler sampler(
      world, toy::defaultCurriculum(totalSamples, recipe.seq_len, recipe.curriculum), recipe.train.seed);

  // The batch of step s is samples [s·batch, (s+1)·batch) of the stream: a pure function of s.
  auto batchAt = [&](int64_t step) {
    TrainBatch b;
    const int64_t B = recipe.batch, T = recipe.seq_len;
    b.tokens = at::empty({B, T}, at::kLong);      // [batch, pos]
    b.loss_mask = at::empty({B, T}, at::kFloat);  // [batch, pos]
    auto tok = b.tokens.accessor<int64_t, 2>();
    auto msk = b.loss_mask.accessor<float, 2>();
    for (int64_t r = 0; r < B; ++r) {
      const toy::Sample s = sampler.sampleAt(static_cast<uint64_t>(step * B + r));
      if (static_cast<int64_t>(s.tokens.size()) != T)
        fail("toy sampler returned ", s.tokens.size(), " tokens, expected ", T);
      for (int64_t t = 0; t < T; ++t) {
        tok[r][t] = s.tokens[t];
        msk[r][t] = s.loss_mask[t];
      }
      b.kinds.push_back(s.kind);
    }
    return b;
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
  ModelWeights weights;
  const TrainResult result =
      train(recipe.model, recipe.train, batchAt, outDir + "/checkpoint", onProgress, &weights);

  saveHfLlama(outDir, weights, recipe.model, {{"headscope.toy_recipe", recipeJson(recipe).dump()}});
  writeText(outDir + "/tokenizer.json", toy::tokenizerJson(world));
  writeText(outDir + "/tokenizer_config.json", toy::tokenizerConfigJson(world, recipe.seq_len));
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& p : result.curve)
    curve.push_back({{"step", p.step},
                     {"loss", p.loss},
                     {"lr", p.lr},
                     {"kind_loss", p.kind_loss},
                     {"seconds", p.seconds}});
  const nlohmann::json training = {
      {"recipe", recipeJson(recipe)},
      {"steps", result.steps_done},
      {"seconds", result.seconds},
      {"threads", at::get_num_threads()},
      {"final_loss",
       result.curve.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.curve.back().loss)},
      {"final_kind_loss",
       result.curve.empty() ? nlohmann::json(nullptr) : nlohmann::json(result.curve.back().kind_loss)},
      {"curve", curve}};
  writeText(outDir + "/training.json", training.dump(1) + "\n");
  return result;
}

}  // namespace hs
