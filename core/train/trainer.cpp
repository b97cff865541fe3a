#include "train/trainer.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <torch/types.h>  // before clip_grad.h, which uses torch::Tensor without including it

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>
#include <torch/serialize.h>

#include <chrono>
#include <cmath>
#include <filesystem>

#include "model/io/atomic_file.h"
#include "model/io/safetensors.h"
#include "model/transformer.h"
#include "train/hf_export.h"
#include "train/numeric_kernels.h"
#include "util/error.h"
#include "util/file_text.h"

namespace hs {
namespace {

constexpr int kStateFormatVersion = 1;

nlohmann::json configSignature(const ModelConfig& c, const TrainConfig& t, const TrainExtension* ext) {
  nlohmann::json sig = {
      {"n_layers", c.n_layers},     {"n_heads", c.n_heads}, {"n_kv_heads", c.n_kv_heads},
      {"d_model", c.d_model},       {"d_head", c.d_head},   {"d_mlp", c.d_mlp},
      {"vocab_size", c.vocab_size}, {"steps", t.steps},     {"lr", t.lr},
      {"warmup", t.warmup},         {"seed", t.seed},       {"weight_decay", t.weight_decay}};
  if (ext) sig["extension"] = ext->signature;
  return sig;
}

std::string extraName(size_t i) {
  return "extra." + std::to_string(i);
}

void writeText(const std::string& path, const std::string& text) {
  AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

nlohmann::json progressJson(const TrainProgress& p) {
  return {
      {"step", p.step}, {"loss", p.loss}, {"lr", p.lr}, {"kind_loss", p.kind_loss}, {"seconds", p.seconds}};
}

TrainProgress progressFromJson(const nlohmann::json& j) {
  TrainProgress p;
  p.step = j.at("step");
  p.loss = j.at("loss");
  p.lr = j.at("lr");
  p.kind_loss = j.at("kind_loss").get<std::map<std::string, double>>();
  p.seconds = j.at("seconds");
  return p;
}

double learningRate(const TrainConfig& cfg, int64_t step) {
  if (cfg.warmup > 0 && step < cfg.warmup) return cfg.lr * static_cast<double>(step + 1) / cfg.warmup;
  const double span = std::max<int64_t>(1, cfg.steps - cfg.warmup);
  const double progress = std::min(1.0, static_cast<double>(step - cfg.warmup) / span);
  const double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return cfg.lr * (cfg.min_lr_ratio + (1.0 - cfg.min_lr_ratio) * cosine);
}

ModelWeights initWeights(const ModelConfig& c, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  const auto opts = at::TensorOptions().dtype(at::kFloat);
  auto normal = [&](std::vector<int64_t> shape, double stdev) {
    return at::empty(shape, opts).normal_(0.0, stdev, gen);
  };
  const double std0 = 0.02, stdResid = 0.02 / std::sqrt(2.0 * c.n_layers);
  const int64_t d = c.d_model, q = int64_t(c.n_heads) * c.d_head, kv = int64_t(c.n_kv_heads) * c.d_head;
  ModelWeights w;
  w.tok_emb = normal({c.vocab_size, d}, std0);  // [vocab, d_model]
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights L;
    L.attn_norm_w = at::ones({d}, opts);        // [d_model]
    L.wq = normal({q, d}, std0);                // [n_heads*d_head, d_model]
    L.wk = normal({kv, d}, std0);               // [n_kv*d_head, d_model]
    L.wv = normal({kv, d}, std0);               // [n_kv*d_head, d_model]
    L.wo = normal({d, q}, stdResid);            // [d_model, n_heads*d_head]
    L.mlp_norm_w = at::ones({d}, opts);         // [d_model]
    L.w_gate = normal({c.d_mlp, d}, std0);      // [d_mlp, d_model]
    L.w_up = normal({c.d_mlp, d}, std0);        // [d_mlp, d_model]
    L.w_down = normal({d, c.d_mlp}, stdResid);  // [d_model, d_mlp]
    w.layers.push_back(L);
  }
  w.final_norm_w = at::ones({d}, opts);                                         // [d_model]
  w.unembed = c.tied_embeddings ? w.tok_emb : normal({c.vocab_size, d}, std0);  // [vocab, d_model]
  return w;
}

TrainResult train(const ModelConfig& config, const TrainConfig& cfg,
                  const std::function<TrainBatch(int64_t step)>& batchAt, const std::string& checkpointDir,
                  const std::function<void(const TrainProgress&)>& onProgress, ModelWeights* out,
                  TrainExtension* ext) {
  useThreads(cfg.threads);
  ModelWeights weights = initWeights(config, cfg.seed);
  auto table = llamaParameterTable(weights, config);
  if (ext && ext->start) {
    ModelWeights start = *ext->start;
    auto from = llamaParameterTable(start, config);
    if (from.size() != table.size()) fail("training: the start weights lack parameters of the config");
    at::NoGradGuard noGrad;
    for (size_t i = 0; i < table.size(); ++i)
      table[i].second->copy_(*from[i].second);
  }
  std::vector<at::Tensor> params, extraParams;
  for (auto& [name, t] : table) {
    t->requires_grad_(true);
    params.push_back(*t);
  }
  const auto options = [&](double wd) {
    return torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(wd);
  };
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(params, std::make_unique<torch::optim::AdamWOptions>(options(cfg.weight_decay)));
  if (ext && !ext->params.empty()) {
    for (const at::Tensor& p : ext->params)
      extraParams.push_back(p.detach().requires_grad_(true));
    ext->params = extraParams;  // the caller's interventions and penalty see the same leaves
    groups.emplace_back(extraParams, std::make_unique<torch::optim::AdamWOptions>(options(0.0)));
  }
  torch::optim::AdamW opt(std::move(groups), options(cfg.weight_decay));

  TrainResult result;
  int64_t start = 0;
  double secondsBefore = 0;
  const std::string statePath = checkpointDir + "/trainer_state.json";
  if (!checkpointDir.empty() && std::filesystem::exists(statePath)) {
    withContext("resuming from " + checkpointDir, [&] {
      const nlohmann::json state = readJsonFile(statePath, json_limits::recipe());
      if (state.at("format_version").get<int>() != kStateFormatVersion)
        fail(statePath, ": trainer state format ", state.at("format_version"), ", expected ",
             kStateFormatVersion);
      if (state.at("signature") != configSignature(config, cfg, ext))
        fail(statePath, ": the checkpoint was made with other settings: ", state.at("signature").dump(),
             " vs now ", configSignature(config, cfg, ext).dump());
      auto file = SafetensorsFile::open(checkpointDir + "/model.safetensors");
      at::NoGradGuard noGrad;
      for (auto& [name, t] : table)
        t->copy_(file->tensor(name));
      if (!extraParams.empty()) {
        auto extra = SafetensorsFile::open(checkpointDir + "/extra.safetensors");
        for (size_t i = 0; i < extraParams.size(); ++i)
          extraParams[i].copy_(extra->tensor(extraName(i)));
      }
      torch::load(opt, checkpointDir + "/optimizer.pt");
      start = state.at("step");
      secondsBefore = state.at("seconds");
      for (const auto& p : state.at("curve"))
        result.curve.push_back(progressFromJson(p));
      // States written before the record existed have none.
      result.numeric_kernels = state.value("numeric_kernels", nlohmann::json::array());
      return 0;
    });
  }

  Transformer model(config, weights, Transformer::Weights::Trainable);  // shares the parameter tensors
  auto save = [&](int64_t stepsDone, double seconds) {
    if (checkpointDir.empty()) return;
    std::filesystem::create_directories(checkpointDir);
    saveHfLlama(checkpointDir, weights, config);
    if (!extraParams.empty()) {
      std::vector<std::pair<std::string, at::Tensor>> extra;
      for (size_t i = 0; i < extraParams.size(); ++i)
        extra.emplace_back(extraName(i), extraParams[i].detach());
      writeSafetensors(checkpointDir + "/extra.safetensors", extra);
    }
    const std::string optTmp = checkpointDir + "/optimizer.pt.tmp";
    torch::save(opt, optTmp);
    std::filesystem::rename(optTmp, checkpointDir + "/optimizer.pt");
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& p : result.curve)
      curve.push_back(progressJson(p));
    const nlohmann::json state = {{"format_version", kStateFormatVersion},
                                  {"step", stepsDone},
                                  {"seconds", seconds},
                                  {"signature", configSignature(config, cfg, ext)},
                                  {"numeric_kernels", result.numeric_kernels},
                                  {"curve", curve}};
    writeText(statePath, state.dump(1) + "\n");
  };

  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return secondsBefore + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  double windowLoss = 0;
  int64_t windowSteps = 0;
  std::map<std::string, std::pair<double, int64_t>> windowKind;
  const int64_t end = cfg.stop_after > 0 ? std::min(cfg.steps, cfg.stop_after) : cfg.steps;
  // Only a piece that computes steps adds its kernels: resuming a finished stage computes nothing.
  if (start < end) addNumericKernels(result.numeric_kernels, numericKernels());
  for (int64_t step = start; step < end; ++step) {
    const double lr = learningRate(cfg, step);
    for (size_t g = 0; g < opt.param_groups().size(); ++g)
      static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[g].options())
          .lr(g == 0 ? lr : lr * ext->lr_ratio);

    const TrainBatch batch = batchAt(step);
    const int64_t T = batch.tokens.size(1);
    RunRequest req;
    req.tokens = batch.tokens.slice(1, 0, T - 1);  // [batch, pos-1]
    if (ext && ext->interventions) req.interventions = ext->interventions(step);
    const at::Tensor targets = batch.tokens.slice(1, 1, T);                 // [batch, pos-1]
    const at::Tensor mask = batch.loss_mask.slice(1, 1, T).to(at::kFloat);  // [batch, pos-1]
    const at::Tensor logits = model.run(req).logits;                        // [batch, pos-1, vocab]
    const at::Tensor nll = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}),
                                                  targets.reshape({-1}), {}, at::Reduction::None)
                               .view_as(mask);  // [batch, pos-1]
    const at::Tensor loss = (nll * mask).sum() / mask.sum().clamp_min(1.0);
    const at::Tensor penalty = ext && ext->penalty ? ext->penalty() : at::Tensor();
    opt.zero_grad();
    (penalty.defined() ? loss + penalty : loss).backward();
    torch::nn::utils::clip_grad_norm_(params, cfg.grad_clip);  // the model's gradients only
    opt.step();

    windowLoss += loss.item<double>();
    ++windowSteps;
    {
      at::NoGradGuard noGrad;
      const at::Tensor rowLoss = (nll * mask).sum(1) / mask.sum(1).clamp_min(1.0);  // [batch]
      for (size_t r = 0; r < batch.kinds.size(); ++r) {
        auto& acc = windowKind[batch.kinds[r]];
        acc.first += rowLoss[static_cast<int64_t>(r)].item<double>();
        acc.second += 1;
      }
      if (penalty.defined()) {
        auto& acc = windowKind["penalty"];
        acc.first += penalty.item<double>();
        acc.second += 1;
      }
    }
    const bool last = step + 1 == end;
    if ((cfg.log_every > 0 && (step + 1) % cfg.log_every == 0) || last) {
      TrainProgress p;
      p.step = step + 1;
      p.loss = windowLoss / windowSteps;
      p.lr = lr;
      for (const auto& [k, acc] : windowKind)
        p.kind_loss[k] = acc.first / acc.second;
      p.seconds = elapsed();
      result.curve.push_back(p);
      if (onProgress) onProgress(p);
      windowLoss = 0;
      windowSteps = 0;
      windowKind.clear();
    }
    if ((cfg.checkpoint_every > 0 && (step + 1) % cfg.checkpoint_every == 0) || last)
      save(step + 1, elapsed());
  }
  result.steps_done = std::max(start, end);
  result.finished = result.steps_done >= cfg.steps;
  result.seconds = elapsed();
  if (out) {
    for (auto& [name, t] : table)
      t->requires_grad_(false);
    *out = weights;
  }
  return result;
}

}  // namespace hs
