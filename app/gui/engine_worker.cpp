#include "engine_worker.h"

#include "evaluation_dock.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <QElapsedTimer>
#include <QRegularExpression>

#include <map>
#include <optional>
#include <tuple>

#include "analysis/framework/registry.h"
#include "analysis/methods/evaluate.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/logit_attribution.h"
#include "model/device_map.h"
#include "model/io/mapped_file.h"
#include "model/load/model_loader.h"
#include "model/load/silent_heads.h"
#include "model/thread_policy.h"
#include "results/results_json.h"
#include "results/table_columns.h"
#include "tasks/icl_task.h"
#include "tasks/toy_vocabulary.h"
#include "util/error.h"
#include "util/user_message.h"

namespace hs::gui {

struct EngineWorker::State {
  std::unique_ptr<LoadedModel> model;
  std::string label;  // the model as runs record it: "toy" for the embedded model, else its path
  // Source vectors of patches and steering ([layers, heads, d_head]), by source and task; emptied when
  // another model is loaded.
  std::map<std::string, at::Tensor> sources;
};

EngineWorker::EngineWorker() : state_(std::make_unique<State>()) {}
EngineWorker::~EngineWorker() = default;

template <typename F>
void EngineWorker::job(const QString& name, F&& body) {
  cancel_ = false;
  Q_EMIT busy(true);
  // This thread's pools sized to the CPUs other processes leave free (model/thread_policy.h).
  followLoad(true);
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
  } catch (const std::exception& e) {  // torch errors (wrapped or not) and allocation failures: one line
    Q_EMIT failed(name, QString::fromStdString(userMessage(e)));
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

// Words of `text` the tokenizer cannot spell: their tokens do not decode back to them (a WordLevel
// vocabulary's unknown token, a vocabulary without byte fallback). Spaces are ignored in the comparison, so
// tokenizers that split punctuation or add a dummy prefix are not flagged.
QStringList unknownWords(const Tokenizer& tok, const QString& text) {
  QStringList out;
  for (const QString& w : text.split(QRegularExpression("\\s+"), Qt::SkipEmptyParts)) {
    if (out.contains(w)) continue;
    const std::vector<int> ids = tok.encode(w.toStdString(), false);
    QString back = QString::fromStdString(tok.decode(ids));
    back.remove(QRegularExpression("\\s"));
    if (back != w) out << w;
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

nlohmann::json optionsFrom(const QString& json) {
  if (json.isEmpty()) return nlohmann::json::object();
  try {
    return nlohmann::json::parse(json.toStdString());
  } catch (const nlohmann::json::exception& e) {
    fail("the analysis options are not valid JSON: ", e.what());
  }
}

}  // namespace

void EngineWorker::loadModel(const QString& path, const QString& tokenizer, const QString& dtype,
                             const QString& device, int gpuLayers) {
  job("load model", [&] {
    Q_EMIT progress(0.0, "loading " + path);
    LoadOptions opts;
    opts.tokenizer = tokenizer.toStdString();
    opts.dtype = dtype.toStdString();
    opts.device = device.toStdString();
    opts.gpu_layers = gpuLayers;
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
    info.device = QString::fromStdString(deviceMapOf(m->model->weights()).describe());
    for (const auto& n : m->notes)
      info.notes << QString::fromStdString(n);
    for (const auto& f : m->files)
      info.files << QString::fromStdString(f);
    info.silent = silentHeads(m->model->weights(), c);
    info.toyVocabulary = isToyVocabulary(c.vocab_size, m->tokenizer.get());
    if (info.toyVocabulary)
      info.notes << "toy vocabulary: the toy world's tasks and the methods' toy defaults apply";
    state_->label = path == "toy" ? "toy" : m->path;
    info.label = QString::fromStdString(state_->label);
    state_->model = std::move(m);
    state_->sources.clear();
    Q_EMIT progress(1.0, "loaded " + info.path);
    Q_EMIT modelLoaded(info);
  });
}

at::Tensor EngineWorker::sourceZ(const HeadVectorSource& source, const QString& taskJson) {
  const LoadedModel& m = need(state_->model);
  // The task's prompts matter to the clean mean and to a chosen prompt; a text or the corpus mean does not
  // change with the task.
  const bool needsTask = source.source == "clean_mean" || source.source == "prompt";
  std::string key = source.source;
  if (source.source == "prompt") key += "#" + std::to_string(source.prompt);
  if (source.source == "text") key += "#" + source.text;
  if (needsTask) key += "@" + taskJson.toStdString();
  if (const auto it = state_->sources.find(key); it != state_->sources.end()) return it->second;
  const std::string what = describeHeadVectorSource(source);
  if (needsTask && taskJson.isEmpty()) fail(what, ": needs a task");
  std::vector<Prompt> icl;
  if (needsTask) {
    if (!m.tokenizer) fail("the model has no tokenizer");
    icl = buildIclTask(*m.tokenizer, specFrom(taskJson)).icl;
  }
  const at::Tensor z = withContext(
      what, [&] { return headSourceZ(*m.model, m.tokenizer.get(), icl, source, MeanSource{}, context()); });
  if (state_->sources.size() >= 32) state_->sources.clear();  // a bound on what edits can pile up
  state_->sources[key] = z;
  return z;
}

std::vector<Intervention> EngineWorker::interventionsFor(const std::vector<InterventionEntry>& entries,
                                                         const std::vector<int64_t>& ids,
                                                         const QString& taskJson) {
  const LoadedModel& m = need(state_->model);
  const std::vector<HeadEdit> edits = headEditsOf(entries);
  const int n = static_cast<int>(ids.size());
  for (const HeadEdit& e : edits)
    for (int p : e.positions)
      if (p >= n || p < -n)
        fail(describeHeadEdit(e), ": position ", p, " is outside the prompt's ", n, " tokens");
  return headEditInterventions(*m.model, edits,
                               [&](const HeadVectorSource& source) { return sourceZ(source, taskJson); });
}

void EngineWorker::runPrompt(const QString& text, int topK, const std::vector<InterventionEntry>& entries,
                             const QString& taskJson) {
  job("run prompt", [&] {
    const LoadedModel& m = need(state_->model);
    const std::vector<int64_t> ids = encodePrompt(m, text);
    const std::vector<Intervention> ivs = interventionsFor(entries, ids, taskJson);
    RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0).to(m.model->device());  // [1, pos]
    req.interventions = ivs;
    for (int l = 0; l < m.config.n_layers; ++l)
      req.capture.insert(residPost(l));
    const RunResult r = m.model->run(req);
    PromptView v;
    v.text = text;
    v.ids.assign(ids.begin(), ids.end());
    v.pieces = piecesOf(m, ids);
    v.unknownWords = unknownWords(*m.tokenizer, text);
    for (const InterventionEntry& e : entries)
      v.interventions += e.enabled ? 1 : 0;
    v.top = topTokens(m, r.logits[0][-1], topK);
    // The clean run: the same prompt without interventions, with its own logit lens.
    RunResult cleanRun;
    if (!ivs.empty()) {
      RunRequest clean;
      clean.tokens = req.tokens;
      clean.capture = req.capture;
      cleanRun = m.model->run(clean);
    }
    const RunResult& c = ivs.empty() ? r : cleanRun;
    const at::Tensor cleanLogits = c.logits[0][-1];  // [vocab]
    v.cleanTop = topTokens(m, cleanLogits, topK);
    const at::Tensor cleanProbs = at::softmax(cleanLogits.to(at::kDouble).cpu(), 0);  // [vocab]
    for (const TopToken& t : v.top)
      v.topCleanProb.push_back(cleanProbs[t.id].item<double>());
    // The logit lens after each layer at every position, with and without the interventions. The answer
    // token is the clean model's prediction at N, so that its probability means the same in both runs.
    const int n = static_cast<int>(ids.size());
    v.lensAnswerId = v.cleanTop.empty() ? -1 : v.cleanTop.front().id;
    v.lensAnswerPiece = v.cleanTop.empty() ? QString() : v.cleanTop.front().piece;
    for (int l = 0; l < m.config.n_layers; ++l) {
      const at::Tensor lens = m.model->logitLens(r.cache.at(residPost(l))[0]);  // [pos, vocab]
      const at::Tensor probs = at::softmax(lens.to(at::kDouble).cpu(), -1);     // [pos, vocab]
      const at::Tensor cleanLens =
          ivs.empty() ? lens : m.model->logitLens(c.cache.at(residPost(l))[0]);  // [pos, vocab]
      const at::Tensor cleanP = ivs.empty() ? probs : at::softmax(cleanLens.to(at::kDouble).cpu(), -1);
      v.lens.push_back(topTokens(m, lens[n - 1], 3));
      std::vector<TopToken> row, cleanRow;
      std::vector<double> answer, cleanAnswer, cleanTopP;
      for (int p = 0; p < n; ++p) {
        row.push_back(topTokens(m, lens[p], 1).front());
        cleanRow.push_back(ivs.empty() ? row.back() : topTokens(m, cleanLens[p], 1).front());
        answer.push_back(v.lensAnswerId >= 0 ? probs[p][v.lensAnswerId].item<double>() : NAN);
        cleanAnswer.push_back(v.lensAnswerId >= 0 ? cleanP[p][v.lensAnswerId].item<double>() : NAN);
        cleanTopP.push_back(probs[p][cleanRow.back().id].item<double>());
      }
      v.lensGrid.push_back(row);
      v.cleanLensGrid.push_back(cleanRow);
      v.lensAnswerProb.push_back(answer);
      v.cleanLensAnswerProb.push_back(cleanAnswer);
      v.lensCleanTopProb.push_back(cleanTopP);
    }
    // What wrote the predicted token's logit: every head and MLP at N.
    if (!v.top.empty()) {
      v.dlaToken = v.top.front().id;
      v.dlaPiece = v.top.front().piece;
      try {
        const LogitAttribution a = directLogitAttribution(*m.model, ids, v.dlaToken, ivs);
        v.dlaHeads = attributionGrid(a);
        v.dlaHeads.name =
            "Direct logit attribution to \"" + v.dlaPiece.toStdString() + "\" at the last position";
        v.dlaMlp = a.mlp;
        v.dlaEmbed = a.embed;
        v.dlaLogit = a.logit;
      } catch (const Error& e) {
        v.dlaError = QString::fromStdString(e.what());
      }
    }
    Q_EMIT promptReady(v);
  });
}

void EngineWorker::attentionPattern(const QString& text, int layer, int head,
                                    const std::vector<InterventionEntry>& entries, const QString& taskJson) {
  job("attention pattern", [&] {
    const LoadedModel& m = need(state_->model);
    const std::vector<int64_t> ids = encodePrompt(m, text);
    if (layer < 0 || layer >= m.config.n_layers || head < 0 || head >= m.config.n_heads)
      fail("no head ", layer, ".", head, " in a model of ", m.config.n_layers, " layers × ", m.config.n_heads,
           " heads");
    RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0).to(m.model->device());  // [1, pos]
    req.interventions = interventionsFor(entries, ids, taskJson);
    req.capture.insert(attnPattern(layer));
    const at::Tensor pat =
        m.model->run(req).cache.at(attnPattern(layer))[0][head].to(at::kDouble).cpu().contiguous();  // [q, k]
    PatternView v;
    v.head = {layer, head};
    v.pieces = piecesOf(m, ids);
    v.n = static_cast<int>(ids.size());
    v.weights.assign(pat.data_ptr<double>(), pat.data_ptr<double>() + pat.numel());
    for (const InterventionEntry& e : entries)
      v.interventions += e.enabled ? 1 : 0;
    Q_EMIT patternReady(v);
  });
}

void EngineWorker::headCircuit(const QString& text, int layer, int head, const QString& taskJson) {
  job("head card", [&] {
    Q_EMIT headCircuitReady(computeHeadCircuit(need(state_->model), {layer, head}, text, specFrom(taskJson)));
  });
}

void EngineWorker::decodePrompts(const QString& tag, const std::vector<std::vector<int>>& ids,
                                 const std::vector<std::vector<int>>& answers) {
  job("decode prompts", [&] {
    const LoadedModel& m = need(state_->model);
    if (!m.tokenizer) fail("the model has no tokenizer");
    QStringList texts, answerTexts;
    for (const std::vector<int>& p : ids)
      texts << QString::fromStdString(m.tokenizer->decode(p));
    for (const std::vector<int>& a : answers)
      answerTexts << QString::fromStdString(m.tokenizer->decode(a));
    Q_EMIT promptsDecoded(tag, texts, answerTexts);
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

AnalysisOutputPtr EngineWorker::run(const std::string& method, const TaskSpec& spec,
                                    const nlohmann::json& options, const QString& runId) {
  const LoadedModel& m = need(state_->model);
  AnalysisContext ctx = context();
  ctx.run_id = runId.toStdString();
  ctx.model_path = state_->label;
  const MethodInputs in{*m.model, m.tokenizer.get(), spec};
  return std::make_shared<AnalysisOutput>(runMethod(requireMethod(method), in, options, ctx));
}

void EngineWorker::runAnalysis(const QString& method, const QString& taskJson, const QString& optionsJson,
                               const QString& runId) {
  job(method, [&] {
    Q_EMIT analysisReady(run(method.toStdString(), specFrom(taskJson), optionsFrom(optionsJson), runId));
  });
}

void EngineWorker::previewTask(const QString& taskJson) {
  TaskPreview v;
  try {
    const LoadedModel& m = need(state_->model);
    if (!m.tokenizer) fail("the model has no tokenizer");
    const TaskSpec spec = specFrom(taskJson);
    // The reason first: a toy-world task on another model fails on its words (label words sharing a first
    // token, unknown words), which would hide it.
    if (spec.dataset.rfind("toy:", 0) == 0 && !isToyVocabulary(m.config.vocab_size, m.tokenizer.get()))
      fail(spec.dataset, " is a task of the toy world, made of words only the toy model's vocabulary has; ",
           shortName(m.path), " has another vocabulary. Choose one of its tasks in the Dataset list (the ",
           "Function Vectors tasks, \"FV …\") or open a dataset file");
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
    for (size_t i = 0; i < task.icl.size() && i < 200; ++i)
      v.prompts << QString::fromStdString(task.icl[i].text);
    v.unknownWords = unknownWords(*m.tokenizer, v.text);
  } catch (const std::exception& e) {
    v.error = QString::fromStdString(e.what());
  }
  Q_EMIT taskPreviewReady(v);
}

HeadEdit headEditOf(const InterventionEntry& e) {
  HeadEdit h;
  // The kinds share their keys (the session's and the evaluate method's option names).
  for (HeadEditKind k :
       {HeadEditKind::ZeroAblate, HeadEditKind::MeanAblate, HeadEditKind::Patch, HeadEditKind::Steer})
    if (std::string(toString(k)) == kindKey(e.kind)) h.kind = k;
  h.head = e.head;
  h.source = {sourceKey(e.source), e.sourcePrompt, e.sourceText.toStdString()};
  h.scale = e.scale;
  h.layer = e.layer;
  h.positions = e.positions;
  return h;
}

std::vector<HeadEdit> headEditsOf(const std::vector<InterventionEntry>& entries) {
  std::vector<HeadEdit> out;
  for (const InterventionEntry& e : entries)
    if (e.enabled) out.push_back(headEditOf(e));
  return out;
}

nlohmann::json evaluateOptions(const std::vector<InterventionEntry>& entries) {
  return evaluateOptionsOf(headEditsOf(entries));
}

void EngineWorker::evaluate(const QString& taskJson, const std::vector<InterventionEntry>& entries,
                            const QString& runId, int randomDraws) {
  job("evaluate", [&] {
    nlohmann::json options = evaluateOptions(entries);
    options["random_draws"] = randomDraws;  // 0 too: the method's default is 5 draws
    const TaskSpec spec = specFrom(taskJson);
    const AnalysisOutputPtr out = run("evaluate", spec, options, runId);
    EvalResult r = evalResultOf(out->run);
    r.task = QString::fromStdString(spec.dataset);
    r.taskJson = taskJson;
    for (const InterventionEntry& e : entries)
      if (e.enabled) r.entries.push_back(e);
    Q_EMIT analysisReady(out);
    Q_EMIT evaluationReady(r);
  });
}

}  // namespace hs::gui
