#include "engine_worker.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <QElapsedTimer>

#include <map>

#include "analysis/icl_eval.h"
#include "analysis/icl_task.h"
#include "analysis_jobs.h"
#include "model/io/mapped_file.h"
#include "model/load/model_loader.h"
#include "util/error.h"
#include "util/one_line.h"

namespace hs::gui {

struct EngineWorker::State {
  std::unique_ptr<LoadedModel> model;
};

EngineWorker::EngineWorker() : state_(std::make_unique<State>()) {}
EngineWorker::~EngineWorker() = default;

template <typename F>
void EngineWorker::job(const QString& name, F&& body) {
  cancel_ = false;
  Q_EMIT busy(true);
  try {
    // No gradients by default, but not InferenceMode: tensors made under it (the loaded weights, task
    // embeddings, means) can never enter an autograd graph, and SITE and LTV train through the model.
    at::NoGradGuard guard;
    body();
    // A mapped weight file that faulted (truncated on disk) was read as zeros: the job's numbers are void.
    if (const auto faulted = faultedMappedFiles(); !faulted.empty())
      fail(mappedFileChangedMessage(faulted[0]));
  } catch (const Cancelled&) {
    Q_EMIT progress(0.0, name + ": cancelled");
    Q_EMIT cancelled(name);
  } catch (const c10::Error& e) {  // torch's message without its C++ stack trace
    Q_EMIT failed(name, QString::fromStdString(oneLine(e.what_without_backtrace())));
  } catch (const std::exception& e) {
    Q_EMIT failed(name, QString::fromStdString(oneLine(e.what())));
  }
  Q_EMIT busy(false);
}

namespace {

const LoadedModel& need(const std::unique_ptr<LoadedModel>& m) {
  if (!m) fail("no model is loaded");
  return *m;
}

std::vector<int64_t> encodePrompt(const LoadedModel& m, const QString& text) {
  if (!m.tokenizer) fail("the model has no tokenizer; open it with one");
  const auto ids = m.tokenizer->encode(text.toStdString());
  if (ids.empty()) fail("the prompt is empty");
  return {ids.begin(), ids.end()};
}

QStringList piecesOf(const LoadedModel& m, const std::vector<int64_t>& ids) {
  QStringList out;
  for (int64_t id : ids)
    out << QString::fromStdString(m.tokenizer->piece(static_cast<int>(id)));
  return out;
}

std::vector<TopToken> topTokens(const LoadedModel& m, const at::Tensor& logits, int k) {
  const at::Tensor l = logits.to(at::kDouble).cpu();  // [vocab]
  const at::Tensor p = at::softmax(l, 0);             // [vocab]
  const auto top = at::topk(l, std::min<int64_t>(k, l.size(0)));
  std::vector<TopToken> out;
  for (int64_t i = 0; i < std::get<1>(top).size(0); ++i) {
    const int64_t id = std::get<1>(top)[i].item<int64_t>();
    out.push_back({static_cast<int>(id),
                   m.tokenizer ? QString::fromStdString(m.tokenizer->piece(static_cast<int>(id))) : QString(),
                   l[id].item<double>(), p[id].item<double>()});
  }
  return out;
}

TaskSpec specFrom(const QString& json) {
  try {
    return taskSpecFromJson(nlohmann::json::parse(json.toStdString()));
  } catch (const nlohmann::json::exception& e) {
    fail("the task settings are not valid JSON: ", e.what());
  }
}

EvalNumbers numbers(const IclEval& e) {
  return {e.n, e.accuracy, e.tr_ratio};
}

}  // namespace

void EngineWorker::loadModel(const QString& path, const QString& tokenizer) {
  job("load model", [&] {
    Q_EMIT progress(0.0, "loading " + path);
    LoadOptions opts;
    opts.tokenizer = tokenizer.toStdString();
    auto m = std::make_unique<LoadedModel>(hs::loadModel(path.toStdString(), opts));
    ModelInfo info;
    const ModelConfig& c = m->config;
    info.path = QString::fromStdString(m->path);
    info.format = QString::fromStdString(m->format);
    info.architecture = toString(c.arch);
    info.tokenizer = m->tokenizer ? QString::fromStdString(m->tokenizer->kind()) : QString("none");
    info.layers = c.n_layers;
    info.heads = c.n_heads;
    info.kvHeads = c.n_kv_heads;
    info.dModel = c.d_model;
    info.dHead = c.d_head;
    info.dMlp = c.d_mlp;
    info.vocab = c.vocab_size;
    info.context = c.context_length;
    info.params = parameterCount(c);
    const at::ScalarType dt = m->model->dtype();
    info.dtype = dt == at::kFloat      ? "float32"
                 : dt == at::kBFloat16 ? "bfloat16"
                 : dt == at::kHalf     ? "float16"
                                       : "other";
    for (const auto& n : m->notes)
      info.notes << QString::fromStdString(n);
    for (const auto& f : m->files)
      info.files << QString::fromStdString(f);
    state_->model = std::move(m);
    Q_EMIT progress(1.0, "loaded " + info.path);
    Q_EMIT modelLoaded(info);
  });
}

void EngineWorker::runPrompt(const QString& text, int topK) {
  job("run prompt", [&] {
    const LoadedModel& m = need(state_->model);
    const std::vector<int64_t> ids = encodePrompt(m, text);
    RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    for (int l = 0; l < m.config.n_layers; ++l)
      req.capture.insert(residPost(l));
    const RunResult r = m.model->run(req);
    PromptView v;
    v.text = text;
    v.ids.assign(ids.begin(), ids.end());
    v.pieces = piecesOf(m, ids);
    v.top = topTokens(m, r.logits[0][-1], topK);
    for (int l = 0; l < m.config.n_layers; ++l) {  // logit lens at the last position after each layer
      const at::Tensor lens = m.model->logitLens(r.cache.at(residPost(l))[0][-1]);  // [vocab]
      v.lens.push_back(topTokens(m, lens, 3));
    }
    Q_EMIT promptReady(v);
  });
}

void EngineWorker::attentionPattern(const QString& text, int layer, int head) {
  job("attention pattern", [&] {
    const LoadedModel& m = need(state_->model);
    const std::vector<int64_t> ids = encodePrompt(m, text);
    if (layer < 0 || layer >= m.config.n_layers || head < 0 || head >= m.config.n_heads)
      fail("no head ", layer, ".", head, " in a model of ", m.config.n_layers, " layers × ", m.config.n_heads,
           " heads");
    RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    req.capture.insert(attnPattern(layer));
    const at::Tensor pat =
        m.model->run(req).cache.at(attnPattern(layer))[0][head].to(at::kDouble).cpu().contiguous();  // [q, k]
    PatternView v;
    v.head = {layer, head};
    v.pieces = piecesOf(m, ids);
    v.n = static_cast<int>(ids.size());
    v.weights.assign(pat.data_ptr<double>(), pat.data_ptr<double>() + pat.numel());
    Q_EMIT patternReady(v);
  });
}

AnalysisContext EngineWorker::context() {
  AnalysisContext ctx;
  // At most ~20 progress signals a second: a fast loop must not flood the UI thread's event queue.
  auto clock = std::make_shared<QElapsedTimer>();  // invalid until the first report
  ctx.progress = [this, clock](double f, const std::string& msg) {
    if (f < 1.0 && clock->isValid() && clock->elapsed() < 50) return;
    clock->start();
    Q_EMIT progress(f, QString::fromStdString(msg));
  };
  ctx.cancelled = [this] {
    if (const auto faulted = faultedMappedFiles(); !faulted.empty())
      fail(mappedFileChangedMessage(faulted[0]));
    return cancel_.load();
  };
  ctx.point = [this](const std::string& curve, int step, double value) {
    Q_EMIT trainingPoint(QString::fromStdString(curve), step, value);
  };
  return ctx;
}

void EngineWorker::runAnalysis(const QString& method, const QString& taskJson, const QString& optionsJson,
                               const QString& runId) {
  job(method, [&] {
    const LoadedModel& m = need(state_->model);
    const auto& jobs = analysisJobs();
    const auto it = jobs.find(method.toStdString());
    if (it == jobs.end()) fail("no analysis \"", method.toStdString(), "\" in this build");
    const TaskSpec spec = specFrom(taskJson);
    const nlohmann::json options =
        optionsJson.isEmpty() ? nlohmann::json::object() : nlohmann::json::parse(optionsJson.toStdString());
    auto out = std::make_shared<AnalysisOutput>(it->second(m, spec, options, context()));
    // Give the run the id the UI chose; its tensors are named "<run id>/<name>".
    const std::string oldId = out->run.id, newId = runId.toStdString();
    if (!newId.empty() && newId != oldId) {
      std::map<std::string, at::Tensor> renamed;
      for (auto& [name, t] : out->tensors)
        renamed[name.rfind(oldId + "/", 0) == 0 ? newId + name.substr(oldId.size()) : name] = t;
      for (std::string& name : out->run.tensors)
        if (name.rfind(oldId + "/", 0) == 0) name = newId + name.substr(oldId.size());
      out->tensors = std::move(renamed);
      out->run.id = newId;
    }
    Q_EMIT analysisReady(out);
  });
}

void EngineWorker::previewTask(const QString& taskJson) {
  TaskPreview v;
  try {
    const LoadedModel& m = need(state_->model);
    if (!m.tokenizer) fail("the model has no tokenizer");
    const TaskSpec spec = specFrom(taskJson);
    const IclTask task = buildIclTask(*m.tokenizer, spec);
    if (task.icl.empty()) fail("the task has no prompts");
    const Prompt& p = task.icl.front();
    v.dataset = QString::fromStdString(spec.dataset);
    v.datasetSize = static_cast<int>(task.dataset.examples.size());
    v.classification = task.classification();
    for (const auto& w : task.dataset.label_words)
      v.labelWords << QString::fromStdString(w);
    v.templateId = QString::fromStdString(task.tmpl.id);
    v.ids = p.ids;
    for (const auto& piece : p.pieces)
      v.pieces << QString::fromStdString(piece);
    for (int i = 0; i < p.length(); ++i)
      v.roles << QString();
    for (const PromptSegment& seg : p.segments)
      for (int i = seg.span.begin; i < seg.span.end && i < p.length(); ++i)
        v.roles[i] = QString::fromStdString(seg.role);
    v.answer = QString::fromStdString(p.answer);
    v.text = QString::fromStdString(p.text);
  } catch (const std::exception& e) {
    v.error = QString::fromStdString(e.what());
  }
  Q_EMIT taskPreviewReady(v);
}

void EngineWorker::evaluate(const QString& taskJson, const std::vector<InterventionEntry>& entries) {
  job("evaluate", [&] {
    const LoadedModel& m = need(state_->model);
    if (!m.tokenizer) fail("evaluation needs a tokenizer; open the model with one");
    const TaskSpec spec = specFrom(taskJson);
    const AnalysisContext ctx = context();
    ctx.report(0.0, "evaluate: building the prompts of " + spec.dataset);
    const IclTask task = buildIclTask(*m.tokenizer, spec);

    std::vector<HeadRef> zero, mean, patch, steer;
    for (const InterventionEntry& e : entries) {
      if (!e.enabled) continue;
      if (e.head.layer < 0 || e.head.layer >= m.config.n_layers || e.head.head < 0 ||
          e.head.head >= m.config.n_heads)
        fail("intervention on head L", e.head.layer, ".H", e.head.head, " is outside the model (",
             m.config.n_layers, " layers × ", m.config.n_heads, " heads)");
      (e.kind == "zero_ablate"   ? zero
       : e.kind == "mean_ablate" ? mean
       : e.kind == "patch_clean" ? patch
                                 : steer)
          .push_back(e.head);
    }
    IclEvalOptions base;
    base.label_tokens = task.label_tokens;

    // The clean reference: hook_z at N averaged over the ICL prompts.
    at::Tensor meanZ;  // [layers, heads, d_head]
    if (!mean.empty() || !patch.empty() || !steer.empty())
      meanZ = headZAtLast(*m.model, task.icl, base.pad_id, {}, ctx).mean(0);

    EvalResult r;
    r.task = QString::fromStdString(spec.dataset);
    r.icl = numbers(evaluateIcl(*m.model, task.icl, base, ctx));
    r.iclIntervened = r.icl;
    if (!zero.empty() || !mean.empty()) {
      IclEvalOptions o = base;
      if (!zero.empty()) o.interventions = headAblation(zero, false);
      if (!mean.empty()) {
        const auto mi = headAblation(mean, true, meanZ);
        o.interventions.insert(o.interventions.end(), mi.begin(), mi.end());
      }
      r.iclIntervened = numbers(evaluateIcl(*m.model, task.icl, o, ctx));
      r.nAblated = static_cast<int>(zero.size() + mean.size());
    }

    r.zeroShot = numbers(evaluateIcl(*m.model, task.zero_shot, base, ctx));
    r.zeroShotIntervened = r.zeroShot;
    if (!patch.empty() || !steer.empty()) {
      IclEvalOptions o = base;
      // Per layer: hook_z of the chosen heads at N ← (patch) or += (steer) the clean mean.
      const std::vector<std::pair<std::vector<HeadRef>, InterventionOp>> groups = {
          {patch, InterventionOp::Replace}, {steer, InterventionOp::Add}};
      for (const auto& [heads, op] : groups) {
        std::map<int, std::vector<int>> byLayer;
        for (const HeadRef& h : heads)
          byLayer[h.layer].push_back(h.head);
        for (const auto& [layer, idx] : byLayer) {
          Intervention iv;
          iv.site = attnZ(layer);
          iv.heads = idx;
          iv.positions = {-1};
          iv.op = op;
          iv.tensor = meanZ[layer].index_select(0, at::tensor(std::vector<int64_t>(idx.begin(), idx.end()),
                                                              at::kLong));  // [heads, d_head]
          o.interventions.push_back(iv);
        }
      }
      r.zeroShotIntervened = numbers(evaluateIcl(*m.model, task.zero_shot, o, ctx));
      r.nPatched = static_cast<int>(patch.size() + steer.size());
    }
    ctx.report(1.0, "evaluate: done");
    Q_EMIT evaluationReady(r);
  });
}

}  // namespace hs::gui
