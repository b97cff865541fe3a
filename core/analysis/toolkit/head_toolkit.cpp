#include "analysis/toolkit/head_toolkit.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include "model/io/safetensors.h"
#include "results/timestamp.h"
#include "tasks/toy/mixture.h"
#include "tasks/toy/rng.h"
#include "tasks/toy/world.h"
#include "util/error.h"
#include "util/file_text.h"
#include "util/resources.h"

namespace hs {
namespace {

// mean_z [layers, heads, d_head] of a safetensors file (e.g. the dual-route study's pile-10k means).
at::Tensor readMeanZFile(const std::string& path) {
  const auto f = SafetensorsFile::open(path);
  if (!f->has("mean_z")) fail("no tensor \"mean_z\" (it holds: ", f->names().size(), " other tensors)");
  return f->tensor("mean_z").to(at::kFloat).clone();
}

// Heads grouped by layer, in layer order.
std::map<int, std::vector<int>> byLayer(const std::vector<HeadRef>& heads) {
  std::map<int, std::vector<int>> out;
  for (const HeadRef& h : heads)
    out[h.layer].push_back(h.head);
  return out;
}

// values[layer, heads] for one layer: [heads, d_head] on values' device.
at::Tensor perLayerValues(const at::Tensor& values, int layer, const std::vector<int>& heads) {
  if (!values.defined() || values.dim() != 3)
    fail("head values must be [layers, heads, d_head], got ",
         values.defined() ? values.sizes() : at::IntArrayRef{});
  const at::Tensor idx = at::tensor(std::vector<int64_t>(heads.begin(), heads.end()), at::kLong);
  return values.select(0, layer).index_select(0, idx.to(values.device()));  // [heads, d_head]
}

std::vector<Intervention> onHeads(const std::vector<HeadRef>& heads, const std::vector<int>& positions,
                                  InterventionOp op, const at::Tensor& values, double scale) {
  std::vector<Intervention> out;
  for (const auto& [layer, idx] : byLayer(heads)) {
    Intervention iv;
    iv.site = attnZ(layer);
    iv.heads = idx;
    iv.positions = positions;
    iv.op = op;
    iv.scale = scale;
    if (op != InterventionOp::Zero) iv.tensor = perLayerValues(values, layer, idx);
    out.push_back(iv);
  }
  return out;
}

}  // namespace

std::vector<Intervention> zeroHeads(const std::vector<HeadRef>& heads, const std::vector<int>& positions) {
  return onHeads(heads, positions, InterventionOp::Zero, {}, 1.0);
}

std::vector<Intervention> meanHeads(const std::vector<HeadRef>& heads, const at::Tensor& mean_z,
                                    const std::vector<int>& positions) {
  if (!heads.empty() && !mean_z.defined()) fail("mean ablation needs the mean head outputs (mean_z)");
  return onHeads(heads, positions, InterventionOp::Mean, mean_z, 1.0);
}

std::vector<Intervention> replaceHeads(const std::vector<HeadRef>& heads, const at::Tensor& values,
                                       const std::vector<int>& positions) {
  return onHeads(heads, positions, InterventionOp::Replace, values, 1.0);
}

std::vector<Intervention> addHeads(const std::vector<HeadRef>& heads, const at::Tensor& values,
                                   const std::vector<int>& positions, double scale) {
  return onHeads(heads, positions, InterventionOp::Add, values, scale);
}

std::vector<Intervention> ablateHeads(const std::vector<HeadRef>& heads, const at::Tensor& mean_z) {
  return mean_z.defined() ? meanHeads(heads, mean_z) : zeroHeads(heads);
}

Intervention addToResidual(Site site, const at::Tensor& v, const std::vector<int>& positions, double scale) {
  Intervention iv;
  iv.site = site;
  iv.positions = positions;
  iv.op = InterventionOp::Add;
  iv.tensor = v;  // [d_model], broadcast over [rows, positions, d_model]
  iv.scale = scale;
  return iv;
}

ZGradientProbes zGradientProbes(const Transformer& model, int firstLayer, const std::vector<int>& positions,
                                at::IntArrayRef shape) {
  const auto opts = at::TensorOptions().dtype(model.dtype()).device(model.device());
  ZGradientProbes p;
  for (int l = firstLayer; l < model.config().n_layers; ++l) {
    p.probes.push_back(at::zeros(shape, opts).requires_grad_(true));
    Intervention iv;
    iv.site = attnZ(l);
    iv.positions = positions;
    iv.op = InterventionOp::Add;
    iv.tensor = p.probes.back();
    p.interventions.push_back(iv);
  }
  return p;
}

Intervention replaceResidual(Site site, const at::Tensor& v, const std::vector<int>& positions) {
  Intervention iv;
  iv.site = site;
  iv.positions = positions;
  iv.op = InterventionOp::Replace;
  iv.tensor = v;  // [d_model]
  return iv;
}

at::Tensor meanZ(const Transformer& model, const TokenSeqs& prompts, ZMean scope, const AnalysisContext& ctx,
                 int batch) {
  const ModelConfig& c = model.config();
  if (scope == ZMean::LastPosition)
    return captureAtLast(model, prompts, attnZ, {}, ctx, batch).to(at::kDouble).mean(0).to(at::kFloat);
  BatchRun run;
  run.batch = batch;
  run.what = "mean z over all positions";
  for (int l = 0; l < c.n_layers; ++l)
    run.capture.insert(attnZ(l));
  at::Tensor sum = at::zeros({c.n_layers, c.n_heads, c.d_head}, at::kDouble);  // [layers, heads, d_head]
  double count = 0;
  forEachBatch(
      model, prompts, run,
      [&](size_t, size_t, const PaddedBatch& pb, const RunResult& r) {
        const at::Tensor m = pb.attention_mask.to(at::kDouble).unsqueeze(-1).unsqueeze(-1);  // [b, pos, 1, 1]
        for (int l = 0; l < c.n_layers; ++l)
          sum[l] += (r.cache.at(attnZ(l)).to(at::kCPU, at::kDouble) * m).sum(at::IntArrayRef{0, 1});
        count += pb.attention_mask.sum().item<double>();
      },
      ctx);
  return (sum / count).to(at::kFloat);  // [layers, heads, d_head]
}

at::Tensor corpusMeanZ(const Transformer& model, const Tokenizer& tok, const CorpusMean& corpus,
                       const AnalysisContext& ctx) {
  if (corpus.chunk_tokens < 2 || corpus.chunks < 1)
    fail("corpus mean: chunk_tokens ", corpus.chunk_tokens, " and chunks ", corpus.chunks,
         " must be >= 2 and >= 1");
  const std::string text = withContext(corpus.file, [&] { return readTextFile(corpus.file); });
  // Encode no more text than the windows need (a corpus may be many megabytes): about 8 bytes a token.
  const size_t wanted = static_cast<size_t>(corpus.chunk_tokens) * static_cast<size_t>(corpus.chunks);
  const std::string head = text.substr(0, std::min(text.size(), wanted * 8));
  const std::vector<int> ids = tok.encode(head, false);
  const int64_t bos = tok.addsBos() ? tok.bosId() : -1;
  const int body = corpus.chunk_tokens - (bos >= 0 ? 1 : 0);
  TokenSeqs windows;
  for (size_t start = 0;
       start + static_cast<size_t>(body) <= ids.size() && static_cast<int>(windows.size()) < corpus.chunks;
       start += static_cast<size_t>(body)) {
    std::vector<int64_t> w;
    if (bos >= 0) w.push_back(bos);
    w.insert(w.end(), ids.begin() + static_cast<std::ptrdiff_t>(start),
             ids.begin() + static_cast<std::ptrdiff_t>(start) + body);
    windows.push_back(std::move(w));
  }
  if (windows.empty())
    fail(corpus.file, ": the corpus encodes to ", ids.size(), " tokens, fewer than one window of ", body);
  const int64_t ctxLen = model.config().context_length;
  if (ctxLen > 0 && corpus.chunk_tokens > ctxLen)
    fail("corpus mean: windows of ", corpus.chunk_tokens, " tokens exceed the model's context of ", ctxLen);
  return meanZ(model, windows, ZMean::AllPositions, ctx, 8);
}

TokenSeqs toyCorpusWindows(int chunks, int chunk_tokens) {
  if (chunks < 1 || chunk_tokens < 2) fail("toy corpus: ", chunks, " windows of ", chunk_tokens, " tokens");
  toy::MixtureConfig mc;
  mc.seq_len = chunk_tokens;
  mc.w_icl_cls = 0;
  mc.w_function = 0;
  mc.w_category = 0;
  mc.w_fuzzy_list = 0;
  const toy::MixtureSampler sampler(toy::ToyWorld::build(), mc, /*seed=*/0x636f7270ULL);
  TokenSeqs out;
  for (int i = 0; i < chunks; ++i) {
    std::vector<int> t = sampler.sampleAt(static_cast<uint64_t>(i)).tokens;
    while (!t.empty() && t.back() == toy::tok::kPad)
      t.pop_back();
    out.emplace_back(t.begin(), t.end());
  }
  return out;
}

std::string defaultMeanCorpus() {
  return findResource("corpora/wikitext-2-test-excerpt.txt");
}

at::Tensor resolveMeanZ(const Transformer& model, const Tokenizer* tok, const MeanSource& source,
                        const TokenSeqs& taskPrompts, const AnalysisContext& ctx) {
  const ModelConfig& c = model.config();
  if (source.source == "task") {
    if (taskPrompts.empty()) fail("mean source task: no task prompts to average over");
    return meanZ(model, taskPrompts, ZMean::AllPositions, ctx);
  }
  if (source.source == "file") {
    if (source.file.empty()) fail("mean source file: give the file (mean_file, --mean-file)");
    const at::Tensor z = withContext(source.file, [&] { return readMeanZFile(source.file); });
    if (z.dim() != 3 || z.size(0) != c.n_layers || z.size(1) != c.n_heads || z.size(2) != c.d_head)
      fail(source.file, ": mean_z is [", z.sizes(), "], the model needs [", c.n_layers, ", ", c.n_heads, ", ",
           c.d_head, "]");
    return z.to(at::kFloat);
  }
  if (source.source != "corpus") fail("mean source '", source.source, "': expected corpus, file or task");
  if (source.corpus.empty() && isToyVocabulary(model.config().vocab_size, tok)) {
    const CorpusMean cm;
    return meanZ(model, toyCorpusWindows(cm.chunks, std::min(cm.chunk_tokens, std::max(2, c.context_length))),
                 ZMean::AllPositions, ctx, 8);
  }
  if (!tok) fail("mean source corpus: the model has no tokenizer to read the corpus with");
  CorpusMean cm;
  cm.file = source.corpus.empty() ? defaultMeanCorpus() : source.corpus;
  if (cm.file.empty())
    fail(
        "mean source corpus: no corpus given and the default (wikitext-2 in the reference data) is not here; "
        "give --mean-corpus FILE");
  cm.chunk_tokens = std::min(cm.chunk_tokens, std::max(2, c.context_length));
  return corpusMeanZ(model, *tok, cm, ctx);
}

std::string describeMeanSource(const MeanSource& source, const Transformer* model, const Tokenizer* tok) {
  if (source.source == "task") return "all positions of the task's prompts";
  if (source.source == "file") return "mean_z of " + source.file;
  const CorpusMean cm;
  if (source.corpus.empty() && model && isToyVocabulary(model->config().vocab_size, tok))
    return cat("all positions of ", cm.chunks, " samples of ", cm.chunk_tokens,
               " tokens of the toy world's training mixture without its ICL episodes (induction spans, "
               "copied and translated lists)");
  const std::string file = source.corpus.empty() ? defaultMeanCorpus() : source.corpus;
  return cat("all positions of ", cm.chunks, " windows of ", cm.chunk_tokens, " tokens of ", file);
}

void recordPrompts(AnalysisOutput& out, const std::string& set, const std::vector<Prompt>& prompts) {
  for (const Prompt& p : prompts)
    out.run.prompts.push_back({set,
                               {p.ids.begin(), p.ids.end()},
                               p.length() - 1,
                               {p.answer_tokens.begin(), p.answer_tokens.end()},
                               {}});
}

void recordPrompts(AnalysisOutput& out, const std::string& set, const std::vector<Prompt>& prompts,
                   const std::vector<std::vector<int>>& labelSets) {
  if (labelSets.size() != 1 && labelSets.size() != prompts.size())
    fail("recording prompts of ", set, ": ", labelSets.size(), " label sets for ", prompts.size(),
         " prompts");
  const size_t first = out.run.prompts.size();
  recordPrompts(out, set, prompts);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::vector<int>& labels = labelSets[labelSets.size() == 1 ? 0 : i];
    out.run.prompts[first + i].label_ids.assign(labels.begin(), labels.end());
  }
}

void recordPrompts(AnalysisOutput& out, const std::string& set, const TokenSeqs& prompts,
                   const std::vector<std::vector<int64_t>>& answers) {
  for (size_t i = 0; i < prompts.size(); ++i)
    out.run.prompts.push_back({set,
                               prompts[i],
                               static_cast<int>(prompts[i].size()) - 1,
                               i < answers.size() ? answers[i] : std::vector<int64_t>{},
                               {}});
}

std::vector<int64_t> generateWithInterventions(const Transformer& model, const std::vector<int64_t>& prompt,
                                               int maxNew, const std::vector<Intervention>& everyStep) {
  if (prompt.empty()) fail("generation: empty prompt (give at least a BOS token)");
  at::NoGradGuard noGrad;
  std::vector<int64_t> generated;
  KVCache cache;
  RunRequest req;
  req.tokens = at::tensor(prompt, at::kLong).view({1, -1}).to(model.device());  // [1, pos]
  req.interventions = everyStep;
  req.kv = &cache;
  req.last_logits_only = true;
  while (static_cast<int>(generated.size()) < maxNew) {
    const RunResult r = model.run(req);
    const int64_t next = r.logits[0][-1].argmax().item<int64_t>();
    generated.push_back(next);
    const int ctxLen = model.config().context_length;
    if (ctxLen > 0 && cache.length() >= ctxLen) break;
    req.tokens =
        at::full({1, 1}, next, at::TensorOptions().dtype(at::kLong).device(model.device()));  // [1, 1]
  }
  return generated;
}

at::Tensor headOutputWeight(const Transformer& model, int layer, int head) {
  const ModelConfig& c = model.config();
  if (layer < 0 || layer >= c.n_layers || head < 0 || head >= c.n_heads)
    fail("head ", layer, ".", head, " does not exist (", c.n_layers, " layers x ", c.n_heads, " heads)");
  const at::Tensor& wo = model.weights().layers[static_cast<size_t>(layer)].wo;  // [d_model, n_heads*d_head]
  return wo.slice(1, int64_t(head) * c.d_head, int64_t(head + 1) * c.d_head);    // [d_model, d_head]
}

bool additiveHeadWrites(const Transformer& model) {
  return model.config().norm_placement == NormPlacement::Pre;
}

void requireAdditiveHeadWrites(const Transformer& model, const std::string& what) {
  if (additiveHeadWrites(model)) return;
  fail(what, ": this model normalises the attention output after W_O (", model.config().model_type,
       " attention post-norm), so W_O z is not a head's additive write and this computation has no "
       "per-head meaning here; the head writes through the norm at the run's activations "
       "(headOutputsAtLast) are what TSLA and the function vectors use");
}

at::Tensor headWrites(const Transformer& model, const at::Tensor& z, const at::Tensor& attnOut) {
  const ModelConfig& c = model.config();
  if (z.dim() != 4 || z.size(1) != c.n_layers || z.size(2) != c.n_heads || z.size(3) != c.d_head)
    fail("head writes: z must be [n, ", c.n_layers, ", ", c.n_heads, ", ", c.d_head, "], got ", z.sizes());
  const bool post = !additiveHeadWrites(model);
  if (post && !attnOut.defined())
    requireAdditiveHeadWrites(model, "head writes without the attention outputs at the same positions");
  if (post && (attnOut.dim() != 3 || attnOut.size(0) != z.size(0) || attnOut.size(1) != c.n_layers ||
               attnOut.size(2) != c.d_model))
    fail("head writes: attention outputs must be [", z.size(0), ", ", c.n_layers, ", ", c.d_model, "], got ",
         attnOut.sizes());
  std::vector<at::Tensor> perLayer;
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights& lw = model.weights().layers[static_cast<size_t>(l)];
    const at::Tensor wo = lw.wo.to(at::kCPU, at::kFloat);
    const at::Tensor woHeads =
        wo.reshape({c.d_model, c.n_heads, c.d_head}).permute({1, 2, 0});  // [head, d_head, d_model]
    const at::Tensor zl = z.select(1, l).to(at::kCPU, at::kFloat).permute({1, 0, 2});  // [head, n, d_head]
    at::Tensor a = at::bmm(zl, woHeads).permute({1, 0, 2});                            // [n, head, d_model]
    if (post) {
      // The post-norm at the run's activations: g ⊙ (W_O z_k) / rms(o), rms frozen per position.
      const at::Tensor o = attnOut.select(1, l).to(at::kCPU, at::kDouble);                    // [n, d_model]
      const at::Tensor inv = at::rsqrt(o.pow(2).mean(-1, true) + c.norm_eps).to(at::kFloat);  // [n, 1]
      at::Tensor g = lw.post_attn_norm_w.to(at::kCPU, at::kFloat);                            // [d_model]
      if (c.norm_weight_offset) g = g + 1;  // Gemma scales by (1 + w)
      a = a * inv.unsqueeze(1) * g;         // [n, head, d_model]
    }
    perLayer.push_back(a);
  }
  return at::stack(perLayer, 1).contiguous();  // [n, layers, heads, d_model]
}

at::Tensor headOutputsAtLast(const Transformer& model, const TokenSeqs& prompts,
                             const std::vector<Intervention>& interventions, const AnalysisContext& ctx,
                             int batch) {
  if (additiveHeadWrites(model))
    return headWrites(model, captureAtLast(model, prompts, attnZ, interventions, ctx, batch));
  const int L = model.config().n_layers;
  BatchRun run;
  run.batch = batch;
  run.interventions = interventions;
  run.what = "head writes at the last position";
  for (int l = 0; l < L; ++l) {
    run.capture.insert(attnZ(l));
    run.capture.insert(attnOut(l));
  }
  std::vector<at::Tensor> zs, outs;  // each [batch, layers, ...]
  forEachBatch(
      model, prompts, run,
      [&](size_t, size_t, const PaddedBatch&, const RunResult& r) {
        std::vector<at::Tensor> z, o;
        for (int l = 0; l < L; ++l) {
          z.push_back(r.cache.at(attnZ(l)).select(1, -1));    // [batch, head, d_head]
          o.push_back(r.cache.at(attnOut(l)).select(1, -1));  // [batch, d_model]
        }
        zs.push_back(at::stack(z, 1).to(at::kCPU, at::kFloat));
        outs.push_back(at::stack(o, 1).to(at::kCPU, at::kFloat));
      },
      ctx);
  return headWrites(model, at::cat(zs, 0), at::cat(outs, 0));  // [n, layers, heads, d_model]
}

std::vector<HeadRef> allHeads(int layers, int heads) {
  std::vector<HeadRef> out;
  for (int l = 0; l < layers; ++l)
    for (int h = 0; h < heads; ++h)
      out.push_back({l, h});
  return out;
}

std::vector<HeadRef> liveHeads(const Transformer& model) {
  const ModelConfig& c = model.config();
  std::vector<HeadRef> out;
  for (int l = 0; l < c.n_layers; ++l)
    for (int h = 0; h < c.n_heads; ++h)
      if (headOutputWeight(model, l, h).ne(0).any().item<bool>()) out.push_back({l, h});
  return out;
}

std::vector<HeadRef> randomHeadOrder(const std::vector<HeadRef>& pool, uint64_t seed) {
  toy::Rng rng(toy::deriveSeed(seed, 0x72616e64ULL));
  std::vector<HeadRef> out = pool;
  rng.shuffle(out);
  return out;
}

std::vector<HeadRef> randomLiveHeadOrder(const Transformer& model, uint64_t seed) {
  const std::vector<HeadRef> live = liveHeads(model);
  std::vector<HeadRef> out = randomHeadOrder(live, seed);
  const std::set<HeadRef> isLive(live.begin(), live.end());
  for (const HeadRef& h : allHeads(model.config().n_layers, model.config().n_heads))
    if (!isLive.count(h)) out.push_back(h);
  return out;
}

std::vector<HeadRef> randomHeads(const std::vector<HeadRef>& from, int k, const std::set<HeadRef>& exclude,
                                 uint64_t seed) {
  // Fisher–Yates with mt19937_64, so the set is the same on every platform.
  std::vector<HeadRef> pool;
  for (const HeadRef& h : from)
    if (!exclude.count(h)) pool.push_back(h);
  std::mt19937_64 rng(seed);
  const int take = std::max(0, std::min<int>(k, static_cast<int>(pool.size())));
  for (int i = 0; i < take; ++i) {
    const uint64_t j = i + rng() % (pool.size() - i);
    std::swap(pool[i], pool[j]);
  }
  pool.resize(take);
  std::sort(pool.begin(), pool.end());
  return pool;
}

uint64_t drawSeed(uint64_t seed, int draw) {
  return draw == 0 ? seed : toy::deriveSeed(seed, 0x64726177ULL, static_cast<uint64_t>(draw));
}

std::pair<int64_t, int64_t> inductionTokenRange(const Transformer& model, const Tokenizer* tok) {
  if (isToyVocabulary(model.config().vocab_size, tok)) {
    static const toy::ToyWorld w = toy::ToyWorld::build();
    const std::pair<int, int> r = w.syllableIdRange();
    return {r.first, r.second};
  }
  const int64_t v = model.config().vocab_size;
  return {v / 4, 3 * v / 4};
}

void checkHeads(const Transformer& model, const std::vector<HeadRef>& heads, const std::string& what) {
  const ModelConfig& c = model.config();
  for (const HeadRef& h : heads)
    if (h.layer < 0 || h.layer >= c.n_layers || h.head < 0 || h.head >= c.n_heads)
      fail(what, ": head ", h.layer, ".", h.head, " is outside the model (", c.n_layers, " layers x ",
           c.n_heads, " heads: layers 0-", c.n_layers - 1, ", heads 0-", c.n_heads - 1, ")");
}

std::vector<HeadRef> headsFromJson(const nlohmann::json& j) {
  std::vector<HeadRef> out;
  for (const nlohmann::json& e : j)
    out.push_back({e.at(0).get<int>(), e.at(1).get<int>()});
  return out;
}

Provenance makeProvenance(const std::string& method, const AnalysisContext& ctx, const std::string& task,
                          uint64_t seed, int n_prompts, const nlohmann::json& options) {
  Provenance p;
  p.method = method;
  p.model = ctx.model_path;
  p.task = task;
  p.seed = seed;
  p.n_prompts = n_prompts;
  p.options = options;
  p.created = utcTimestamp();
  return p;
}

AnalysisContext stage(const AnalysisContext& ctx, int i, int n, const std::string& what) {
  return subContext(ctx, double(i) / n, double(i + 1) / n, what);
}

}  // namespace hs
