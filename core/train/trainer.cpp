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

using ParameterTable = std::vector<std::pair<std::string, at::Tensor*>>;

// Overwrites the freshly initialised parameters with the extension's start weights.
void copyStartWeights(const ModelConfig& config, const ModelWeights& startWeights,
                      const ParameterTable& table) {
  ModelWeights start = startWeights;
  auto from = llamaParameterTable(start, config);
  if (from.size() != table.size()) fail("training: the start weights lack parameters of the config");
  at::NoGradGuard noGrad;
  for (size_t i = 0; i < table.size(); ++i)
    table[i].second->copy_(*from[i].second);
}

// The extension's parameters as trainable leaves; the extension holds the same leaves afterwards, so its
// interventions and penalty see what the optimiser updates.
std::vector<at::Tensor> extensionLeaves(TrainExtension* ext) {
  std::vector<at::Tensor> leaves;
  if (!ext || ext->params.empty()) return leaves;
  for (const at::Tensor& p : ext->params)
    leaves.push_back(p.detach().requires_grad_(true));
  ext->params = leaves;
  return leaves;
}

torch::optim::AdamWOptions adamwOptions(const TrainConfig& cfg, double weightDecay) {
  return torch::optim::AdamWOptions(cfg.lr).betas({cfg.beta1, cfg.beta2}).weight_decay(weightDecay);
}

// The model's parameters with weight decay; the extension's, if any, in a second group without.
std::vector<torch::optim::OptimizerParamGroup> paramGroups(const TrainConfig& cfg,
                                                           const std::vector<at::Tensor>& params,
                                                           const std::vector<at::Tensor>& extraParams) {
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(params,
                      std::make_unique<torch::optim::AdamWOptions>(adamwOptions(cfg, cfg.weight_decay)));
  if (!extraParams.empty())
    groups.emplace_back(extraParams, std::make_unique<torch::optim::AdamWOptions>(adamwOptions(cfg, 0.0)));
  return groups;
}

// What a checkpoint holds and what signs it.
struct RunState {
  const ModelConfig& config;
  const TrainConfig& cfg;
  const TrainExtension* ext;
  const std::string& checkpointDir;
  ModelWeights& weights;
  const ParameterTable& table;
  const std::vector<at::Tensor>& extraParams;
  torch::optim::AdamW& opt;
  TrainResult& result;

  std::string statePath() const { return checkpointDir + "/trainer_state.json"; }
};

// Where a resumed run goes on from.
struct ResumePoint {
  int64_t step = 0;
  double seconds = 0;
};

// Loads the checkpoint in run.checkpointDir, if it holds one, into the parameters, the optimiser and the
// result's curve; fails when it was made with other settings.
ResumePoint resumeFromCheckpoint(const RunState& run) {
  ResumePoint from;
  const std::string statePath = run.statePath();
  if (run.checkpointDir.empty() || !std::filesystem::exists(statePath)) return from;
  withContext("resuming from " + run.checkpointDir, [&] {
    const nlohmann::json state = readJsonFile(statePath, json_limits::recipe());
    if (state.at("format_version").get<int>() != kStateFormatVersion)
      fail(statePath, ": trainer state format ", state.at("format_version"), ", expected ",
           kStateFormatVersion);
    const nlohmann::json signature = configSignature(run.config, run.cfg, run.ext);
    if (state.at("signature") != signature)
      fail(statePath, ": the checkpoint was made with other settings: ", state.at("signature").dump(),
           " vs now ", signature.dump());
    auto file = SafetensorsFile::open(run.checkpointDir + "/model.safetensors");
    at::NoGradGuard noGrad;
    for (auto& [name, t] : run.table)
      t->copy_(file->tensor(name));
    if (!run.extraParams.empty()) {
      auto extra = SafetensorsFile::open(run.checkpointDir + "/extra.safetensors");
      for (size_t i = 0; i < run.extraParams.size(); ++i)
        run.extraParams[i].copy_(extra->tensor(extraName(i)));
    }
    torch::load(run.opt, run.checkpointDir + "/optimizer.pt");
    from.step = state.at("step");
    from.seconds = state.at("seconds");
    for (const auto& p : state.at("curve"))
      run.result.curve.push_back(progressFromJson(p));
    // States written before the record existed have none.
    run.result.numeric_kernels = state.value("numeric_kernels", nlohmann::json::array());
    return 0;
  });
  return from;
}

// Writes the resumable state after `stepsDone` steps (nothing without a checkpoint folder).
void saveCheckpoint(const RunState& run, int64_t stepsDone, double seconds) {
  const std::string& dir = run.checkpointDir;
  if (dir.empty()) return;
  std::filesystem::create_directories(dir);
  saveHfLlama(dir, run.weights, run.config);
  if (!run.extraParams.empty()) {
    std::vector<std::pair<std::string, at::Tensor>> extra;
    for (size_t i = 0; i < run.extraParams.size(); ++i)
      extra.emplace_back(extraName(i), run.extraParams[i].detach());
    writeSafetensors(dir + "/extra.safetensors", extra);
  }
  const std::string optTmp = dir + "/optimizer.pt.tmp";
  torch::save(run.opt, optTmp);
  std::filesystem::rename(optTmp, dir + "/optimizer.pt");
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& p : run.result.curve)
    curve.push_back(progressJson(p));
  const nlohmann::json state = {{"format_version", kStateFormatVersion},
                                {"step", stepsDone},
                                {"seconds", seconds},
                                {"signature", configSignature(run.config, run.cfg, run.ext)},
                                {"numeric_kernels", run.result.numeric_kernels},
                                {"curve", curve}};
  writeText(run.statePath(), state.dump(1) + "\n");
}

// The schedule's rate for the model's group; the extension's group runs at lr × lr_ratio.
void setLearningRate(torch::optim::AdamW& opt, double lr, const TrainExtension* ext) {
  for (size_t g = 0; g < opt.param_groups().size(); ++g)
    static_cast<torch::optim::AdamWOptions&>(opt.param_groups()[g].options())
        .lr(g == 0 ? lr : lr * ext->lr_ratio);
}

// The tensors of one step that the loss window reads.
struct StepLoss {
  at::Tensor loss;     // scalar: mean next-token loss over the masked targets
  at::Tensor nll;      // [batch, pos-1]
  at::Tensor mask;     // [batch, pos-1]
  at::Tensor penalty;  // scalar, or undefined without an extension penalty
};

// Forward, backward, gradient clipping (the model's gradients only) and one optimiser step.
StepLoss trainStep(Transformer& model, torch::optim::AdamW& opt, const std::vector<at::Tensor>& params,
                   const TrainConfig& cfg, const TrainExtension* ext, int64_t step, const TrainBatch& batch) {
  const int64_t T = batch.tokens.size(1);
  RunRequest req;
  req.tokens = batch.tokens.slice(1, 0, T - 1);  // [batch, pos-1]
  if (ext && ext->interventions) req.interventions = ext->interventions(step);
  const at::Tensor targets = batch.tokens.slice(1, 1, T);  // [batch, pos-1]
  StepLoss s;
  s.mask = batch.loss_mask.slice(1, 1, T).to(at::kFloat);  // [batch, pos-1]
  const at::Tensor logits = model.run(req).logits;         // [batch, pos-1, vocab]
  s.nll = at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}), {},
                                 at::Reduction::None)
              .view_as(s.mask);  // [batch, pos-1]
  s.loss = (s.nll * s.mask).sum() / s.mask.sum().clamp_min(1.0);
  s.penalty = ext && ext->penalty ? ext->penalty() : at::Tensor();
  opt.zero_grad();
  (s.penalty.defined() ? s.loss + s.penalty : s.loss).backward();
  torch::nn::utils::clip_grad_norm_(params, cfg.grad_clip);
  opt.step();
  return s;
}

// Mean loss, and mean loss per sample kind (the penalty as kind "penalty"), since the last log.
class LossWindow {
 public:
  void add(const StepLoss& s, const std::vector<std::string>& kinds) {
    loss_ += s.loss.item<double>();
    ++steps_;
    at::NoGradGuard noGrad;
    const at::Tensor rowLoss = (s.nll * s.mask).sum(1) / s.mask.sum(1).clamp_min(1.0);  // [batch]
    for (size_t r = 0; r < kinds.size(); ++r) {
      auto& acc = kind_[kinds[r]];
      acc.first += rowLoss[static_cast<int64_t>(r)].item<double>();
      acc.second += 1;
    }
    if (s.penalty.defined()) {
      auto& acc = kind_["penalty"];
      acc.first += s.penalty.item<double>();
      acc.second += 1;
    }
  }

  // The window as a log entry; the window starts again empty.
  TrainProgress take(int64_t step, double lr, double seconds) {
    TrainProgress p;
    p.step = step;
    p.loss = loss_ / steps_;
    p.lr = lr;
    for (const auto& [k, acc] : kind_)
      p.kind_loss[k] = acc.first / acc.second;
    p.seconds = seconds;
    loss_ = 0;
    steps_ = 0;
    kind_.clear();
    return p;
  }

 private:
  double loss_ = 0;
  int64_t steps_ = 0;
  std::map<std::string, std::pair<double, int64_t>> kind_;
};

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
  if (ext && ext->start) copyStartWeights(config, *ext->start, table);
  std::vector<at::Tensor> params;
  for (auto& [name, t] : table) {
    t->requires_grad_(true);
    params.push_back(*t);
  }
  const std::vector<at::Tensor> extraParams = extensionLeaves(ext);
  torch::optim::AdamW opt(paramGroups(cfg, params, extraParams), adamwOptions(cfg, cfg.weight_decay));

  TrainResult result;
  const RunState run{config, cfg, ext, checkpointDir, weights, table, extraParams, opt, result};
  const ResumePoint from = resumeFromCheckpoint(run);
  const int64_t start = from.step;

  Transformer model(config, weights, Transformer::Weights::Trainable);  // shares the parameter tensors
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return from.seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  LossWindow window;
  const int64_t end = cfg.stop_after > 0 ? std::min(cfg.steps, cfg.stop_after) : cfg.steps;
  // Only a piece that computes steps adds its kernels: resuming a finished stage computes nothing.
  if (start < end) addNumericKernels(result.numeric_kernels, numericKernels());
  for (int64_t step = start; step < end; ++step) {
    const double lr = learningRate(cfg, step);
    setLearningRate(opt, lr, ext);
    const TrainBatch batch = batchAt(step);
    window.add(trainStep(model, opt, params, cfg, ext, step, batch), batch.kinds);
    const bool last = step + 1 == end;
    if ((cfg.log_every > 0 && (step + 1) % cfg.log_every == 0) || last) {
      const TrainProgress p = window.take(step + 1, lr, elapsed());
      result.curve.push_back(p);
      if (onProgress) onProgress(p);
    }
    if ((cfg.checkpoint_every > 0 && (step + 1) % cfg.checkpoint_every == 0) || last)
      saveCheckpoint(run, step + 1, elapsed());
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
