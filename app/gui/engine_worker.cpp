#include "engine_worker.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include "analysis/induction_scores.h"
#include "model/load/model_loader.h"
#include "util/error.h"

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
    c10::InferenceMode guard;
    body();
  } catch (const Cancelled&) {
    Q_EMIT progress(0.0, name + ": cancelled");
  } catch (const std::exception& e) {
    Q_EMIT failed(name, QString::fromStdString(e.what()));
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

void EngineWorker::computeHeadScores(int span, int nSequences, int seed) {
  job("head scores", [&] {
    const LoadedModel& m = need(state_->model);
    InductionScoreOptions o;
    o.span = span;
    o.n_sequences = nSequences;
    o.seed = static_cast<uint64_t>(seed);
    o.bos = m.tokenizer && m.tokenizer->bosId() >= 0 ? m.tokenizer->bosId() : m.config.bos_token_id;
    AnalysisContext ctx;
    ctx.progress = [this](double f, const std::string& msg) {
      Q_EMIT progress(f, QString::fromStdString(msg));
    };
    ctx.cancelled = [this] { return cancel_.load(); };
    InductionScores s = inductionScores(*m.model, o, ctx);
    s.induction.provenance.model = m.path;
    s.previous_token.provenance.model = m.path;
    Q_EMIT gridsReady({s.induction, s.previous_token}, s.copy_accuracy);
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

}  // namespace hs::gui
