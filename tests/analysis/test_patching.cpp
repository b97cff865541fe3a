// The activation patching sweep and attribution patching.
// - The fast sweep (restart at the patched layer from the corrupt residual, KV prefix, heads batched)
//   returns the naive one-forward-per-head grid within 1e-5, on stories260K (a real trained Llama) and
//   on a random GQA model, for every mode, metric, a last and a middle position, position sets and the
//   per-position mode.
// - Properties that hold by construction of the model: identical clean and corrupt prompts give a zero
//   grid; a head whose W_O block is zero has no effect; a last-layer patch before the last position
//   cannot reach the logits; patching where the two prompts still agree changes nothing.
// - Attribution patching equals the directional derivative (central finite difference through an
//   Interpolate intervention), and ranks heads like the exact sweep on stories260K (Spearman > 0.5).
// - The engine's start_layer / resid_in / read-only KV entry reproduces the full forward.
// - Cancellation throws hs::Cancelled and leaves the model usable.
#include <ATen/ATen.h>
#include <QtTest>

#include <cmath>
#include <functional>

#include "../engine/engine_fixtures.h"
#include "analysis/methods/patch_method.h"
#include "analysis/toolkit/attribution_patching.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"

namespace {

double gridDiff(const hs::HeadGrid& a, const hs::HeadGrid& b) {
  return (a.values - b.values).cwiseAbs().maxCoeff();
}
double gridMax(const hs::HeadGrid& g) {
  return g.values.cwiseAbs().maxCoeff();
}

// `call` must throw hs::Error with `needle` in its message.
void expectErrorMentioning(const std::function<void()>& call, const char* needle) {
  try {
    call();
    QFAIL(qPrintable(QString("expected an error mentioning \"%1\"").arg(needle)));
  } catch (const hs::Error& e) {
    QVERIFY2(std::string(e.what()).find(needle) != std::string::npos, e.what());
  }
}

std::vector<int64_t> toIds(const std::vector<int>& v) {
  return {v.begin(), v.end()};
}

// The last-position logits [vocab] of a prompt.
at::Tensor lastLogits(const hs::Transformer& m, const std::vector<int64_t>& ids) {
  hs::RunRequest req;
  req.tokens = hs::test::row(ids);
  req.last_logits_only = true;
  return m.run(req).logits[0][0];
}

// The stories260K prompt pair of the brief: a clean name-repetition prompt and a corrupt one with
// another name in both places (same token length, so the middle of the prompt differs in what it
// attends to); target = the clean prompt's next token, distractor = the corrupt one's.
struct StoriesPair {
  std::shared_ptr<hs::Transformer> model;
  std::vector<int64_t> clean, corrupt;
  int64_t target = -1, distractor = -1;
};

}  // namespace

class TestPatching : public QObject {
  Q_OBJECT

  StoriesPair stories_;
  bool haveStories_ = false;

  hs::PatchSweepSpec storiesSpec(hs::PatchMode mode, hs::PatchMetric metric) const {
    hs::PatchSweepSpec s;
    s.clean = stories_.clean;
    s.corrupt = stories_.corrupt;
    s.target = stories_.target;
    s.distractor = stories_.distractor;
    s.mode = mode;
    s.metric = metric;
    return s;
  }

  static hs::PatchSweepSpec tinySpec(hs::PatchMode mode, hs::PatchMetric metric) {
    hs::PatchSweepSpec s;
    s.clean = {1, 5, 9, 13, 17, 21, 25, 29, 33, 37};
    s.corrupt = {1, 5, 9, 44, 17, 21, 2, 29, 33, 37};
    s.target = 11;
    s.distractor = 3;
    s.mode = mode;
    s.metric = metric;
    return s;
  }

  void compareFastNaive(const hs::Transformer& m, hs::PatchSweepSpec spec, const QString& what,
                        double minEffect) {
    const std::vector<hs::HeadGrid> fast = hs::patchingSweepPositions(m, spec, {}, false);
    const std::vector<hs::HeadGrid> naive = hs::patchingSweepPositions(m, spec, {}, true);
    QCOMPARE(fast.size(), naive.size());
    double largest = 0;
    for (size_t i = 0; i < fast.size(); ++i) {
      QCOMPARE(fast[i].layers(), m.config().n_layers);
      QCOMPARE(fast[i].heads(), m.config().n_heads);
      // The two paths differ by float32 rounding (other batch shapes, the clean and corrupt runs batched
      // in the fast path): 1e-5 relative to the metric's magnitude (probabilities: absolute).
      double scale = 1;
      for (const char* key : {"corrupt_metric", "clean_metric"})
        if (naive[i].provenance.options.contains(key))
          scale = std::max(scale, std::abs(naive[i].provenance.options[key].get<double>()));
      const double d = gridDiff(fast[i], naive[i]);
      QVERIFY2(d <= 1e-5 * scale, qPrintable(QString("%1, grid %2: max |fast - naive| = %3 (metric scale %4)")
                                                 .arg(what)
                                                 .arg(i)
                                                 .arg(d)
                                                 .arg(scale)));
      for (const char* key : {"corrupt_metric", "clean_metric"}) {
        if (!naive[i].provenance.options.contains(key)) continue;
        const double a = fast[i].provenance.options[key].get<double>();
        const double b = naive[i].provenance.options[key].get<double>();
        QVERIFY2(std::abs(a - b) <= 1e-5 * scale,
                 qPrintable(QString("%1, grid %2: %3 %4 vs %5").arg(what).arg(i).arg(key).arg(a).arg(b)));
      }
      largest = std::max(largest, gridMax(fast[i]));
    }
    // Not a vacuous comparison: some head matters.
    QVERIFY2(largest > minEffect, qPrintable(QString("%1: largest effect %2").arg(what).arg(largest)));
  }

 private Q_SLOTS:
  void initTestCase() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    const std::string tok = hs::test::sharedData("models/stories260K/tok512.bin");
    if (!std::filesystem::exists(bin) || !std::filesystem::exists(tok)) return;
    hs::LoadOptions o;
    o.tokenizer = tok;
    const hs::LoadedModel lm = hs::loadModel(bin, o);
    stories_.model = lm.model;
    stories_.clean = toIds(lm.tokenizer->encode("Lily and Ben went to the park. Lily and Ben"));
    for (const char* name : {"Tom", "Sam", "Tim", "Max", "Sue", "Anna"}) {
      const std::string n = name;
      const auto ids = toIds(lm.tokenizer->encode("Lily and " + n + " went to the park. Lily and " + n));
      if (ids.size() == stories_.clean.size() && ids != stories_.clean) {
        stories_.corrupt = ids;
        break;
      }
    }
    QVERIFY2(!stories_.corrupt.empty(), "no corrupt name with the clean prompt's token length");
    stories_.target = lastLogits(*lm.model, stories_.clean).argmax().item<int64_t>();
    stories_.distractor = lastLogits(*lm.model, stories_.corrupt).argmax().item<int64_t>();
    if (stories_.distractor == stories_.target)
      stories_.distractor = std::get<1>(lastLogits(*lm.model, stories_.corrupt).topk(2))[1].item<int64_t>();
    haveStories_ = true;
    qInfo("stories260K: %zu tokens, target %s, distractor %s", stories_.clean.size(),
          lm.tokenizer->piece(int(stories_.target)).c_str(),
          lm.tokenizer->piece(int(stories_.distractor)).c_str());
  }

  // ---- the engine entry used by the fast path ----

  void startLayerReproducesFullForward() {
    const hs::Transformer m = hs::test::tinyLlama();
    const std::vector<int64_t> ids = {1, 5, 9, 13, 17, 21, 25, 29};
    const int P = int(ids.size());
    hs::RunRequest full;
    full.tokens = hs::test::row(ids);
    for (int l = 0; l < m.config().n_layers; ++l)
      full.capture.insert(hs::residPre(l));
    hs::KVCache kv;
    full.kv = &kv;
    const hs::RunResult ref = m.run(full);  // logits [1, pos, vocab]
    for (int l = 0; l < m.config().n_layers; ++l) {
      const at::Tensor resid = ref.cache.at(hs::residPre(l));  // [1, pos, d_model]
      // All positions from the residual, no cache.
      hs::RunRequest a;
      a.start_layer = l;
      a.resid_in = resid;
      QVERIFY(hs::test::maxAbsDiff(m.run(a).logits, ref.logits) <= 1e-5);
      // Positions 3.. from the residual, 0..2 from the (read-only) cache, three rows at once.
      hs::KVCache prefix;
      for (int i = 0; i < m.config().n_layers; ++i) {
        prefix.k.push_back(kv.k[i].narrow(2, 0, 3));  // [1, kv_head, 3, d_head]
        prefix.v.push_back(kv.v[i].narrow(2, 0, 3));
      }
      prefix.mask = kv.mask.narrow(1, 0, 3);  // [1, 3]
      hs::KVCache rows = prefix.expandRows(3);
      hs::RunRequest b;
      b.start_layer = l;
      b.resid_in = resid.narrow(1, 3, P - 3).expand({3, P - 3, m.config().d_model});  // [3, pos - 3, d_model]
      b.kv = &rows;
      b.kv_read_only = true;
      const at::Tensor logits = m.run(b).logits;  // [3, pos - 3, vocab]
      QCOMPARE(logits.size(0), 3);
      for (int r = 0; r < 3; ++r)
        QVERIFY(hs::test::maxAbsDiff(logits[r], ref.logits[0].narrow(0, 3, P - 3)) <= 1e-5);
      QCOMPARE(rows.length(), 3);  // read only: unchanged
    }
  }

  // The fast path's other engine entries: a read-only cache of one row shared by a larger batch (not copied
  // per row), rows that join the batch at later layers, and logits of chosen vocabulary entries only. Each
  // row must give what its own run from its own layer gives.
  void sharedCacheJoiningRowsAndLogitTokens() {
    const hs::Transformer m = hs::test::tinyLlama();  // grouped-query attention: kv heads < heads
    QVERIFY(m.config().n_kv_heads < m.config().n_heads);
    const std::vector<int64_t> ids = {1, 5, 9, 13, 17, 21, 25, 29};
    const int P = int(ids.size()), L = m.config().n_layers, d = m.config().d_model;
    hs::RunRequest full;
    full.tokens = hs::test::row(ids);
    for (int l = 0; l < L; ++l)
      full.capture.insert(hs::residPre(l));
    hs::KVCache kv;
    full.kv = &kv;
    const hs::RunResult ref = m.run(full);  // logits [1, pos, vocab]
    hs::KVCache prefix;                     // positions 0..4, one row
    for (int i = 0; i < L; ++i) {
      prefix.k.push_back(kv.k[i].narrow(2, 0, 5));  // [1, kv_head, 5, d_head]
      prefix.v.push_back(kv.v[i].narrow(2, 0, 5));
    }
    prefix.mask = kv.mask.narrow(1, 0, 5);  // [1, 5]
    // Rows: two start at layer 0, one joins at layer 1 and two at layer 2, each from the full run's
    // residual at positions 5.. plus noise of its own (so every row computes something else); row 3 (joins
    // at layer 2) also gets its layer-2 z zeroed for head 1. Row r: (layer, noise seed).
    const std::vector<std::pair<int, int>> rows = {{0, 0}, {0, 1}, {1, 2}, {2, 3}, {2, 4}};
    auto inputOf = [&](int row) {  // [1, pos − 5, d_model]
      at::manual_seed(100 + rows[row].second);
      const at::Tensor resid = ref.cache.at(hs::residPre(rows[row].first)).narrow(1, 5, P - 5);
      return row == 0 ? resid : resid + 0.3 * resid.std().item<double>() * at::randn(resid.sizes());
    };
    hs::RunRequest req;
    req.resid_in = at::cat({inputOf(0), inputOf(1)}, 0);
    req.resid_join[1] = inputOf(2);
    req.resid_join[2] = at::cat({inputOf(3), inputOf(4)}, 0);
    req.kv = &prefix;
    req.kv_read_only = true;
    hs::Intervention zero;
    zero.site = hs::attnZ(2);
    zero.heads = {1};
    zero.rows = {3};
    zero.op = hs::InterventionOp::Zero;
    req.interventions = {zero};
    req.logit_tokens = {7, 3, 7};
    const hs::RunResult r = m.run(req);
    QCOMPARE(r.logits.sizes(), at::IntArrayRef({5, P - 5, 3}));
    const at::Tensor chosen = at::tensor(std::vector<int64_t>{7, 3, 7}, at::kLong);
    // Row 0 is the full run's continuation.
    QVERIFY(hs::test::maxAbsDiff(r.logits[0], ref.logits[0].narrow(0, 5, P - 5).index_select(1, chosen)) <=
            1e-5);
    // Every row is the run of its own from its layer, attending to the same cached positions.
    for (int row = 0; row < int(rows.size()); ++row) {
      hs::KVCache own = prefix;
      hs::RunRequest alone;
      alone.start_layer = rows[row].first;
      alone.resid_in = inputOf(row);
      alone.kv = &own;
      alone.kv_read_only = true;
      if (row == 3) {
        hs::Intervention z0 = zero;
        z0.rows = {0};
        alone.interventions = {z0};
      }
      const at::Tensor single = m.run(alone).logits[0].index_select(1, chosen);  // [pos − 5, 3]
      QVERIFY2(hs::test::maxAbsDiff(r.logits[row], single) <= 1e-5, qPrintable(QString("row %1").arg(row)));
      if (row > 0)  // not a vacuous comparison: the rows differ
        QVERIFY2(hs::test::maxAbsDiff(r.logits[row], r.logits[row - 1]) > 1e-3,
                 qPrintable(QString("row %1").arg(row)));
    }
    QCOMPARE(prefix.length(), 5);  // read only: unchanged

    auto expectError = [&](hs::RunRequest bad, const char* needle) {
      expectErrorMentioning([&] { m.run(bad); }, needle);
    };
    hs::RunRequest outside = req;
    outside.resid_join.clear();
    outside.resid_join[0] = inputOf(0);
    expectError(outside, "resid_join at layer 0 is outside");
    hs::RunRequest shape = req;
    shape.resid_join[1] = at::zeros({1, P - 4, d});
    expectError(shape, "resid_join[1] has shape");
    hs::RunRequest writes = req;
    writes.kv_read_only = false;
    expectError(writes, "only a read-only cache may hold one row");
    hs::RunRequest badToken = req;
    badToken.logit_tokens = {m.config().vocab_size};
    expectError(badToken, "logit_tokens holds");
    hs::RunRequest badRow = req;
    badRow.interventions[0].rows = {5};
    expectError(badRow, "batch row");
  }

  void startLayerErrors() {
    const hs::Transformer m = hs::test::tinyLlama();
    const at::Tensor resid = at::zeros({1, 4, m.config().d_model});  // [1, pos, d_model]
    auto expectError = [&](hs::RunRequest req, const char* needle) {
      expectErrorMentioning([&] { m.run(req); }, needle);
    };
    hs::RunRequest noResid;
    noResid.tokens = hs::test::row({1, 2, 3, 4});
    noResid.start_layer = 1;
    expectError(noResid, "needs resid_in");
    hs::RunRequest both;
    both.tokens = hs::test::row({1, 2, 3, 4});
    both.resid_in = resid;
    expectError(both, "not both");
    hs::RunRequest badLayer;
    badLayer.resid_in = resid;
    badLayer.start_layer = 3;
    expectError(badLayer, "start_layer 3 out of range");
    hs::RunRequest below;
    below.resid_in = resid;
    below.start_layer = 2;
    below.capture.insert(hs::attnZ(1));
    expectError(below, "starts at layer 2");
    hs::KVCache kv;
    hs::RunRequest fill;
    fill.tokens = hs::test::row({1, 2});
    fill.kv = &kv;
    m.run(fill);
    hs::RunRequest writes;
    writes.resid_in = resid;
    writes.start_layer = 1;
    writes.kv = &kv;
    expectError(writes, "kv_read_only");
  }

  // ---- fast == naive ----

  void tinyFastEqualsNaive_data() {
    QTest::addColumn<int>("mode");
    QTest::addColumn<int>("metric");
    QTest::addColumn<QList<int>>("positions");
    using M = hs::PatchMode;
    using K = hs::PatchMetric;
    QTest::newRow("clean/prob/last") << int(M::FromClean) << int(K::TargetProb) << QList<int>{};
    QTest::newRow("clean/logit/middle") << int(M::FromClean) << int(K::TargetLogit) << QList<int>{3};
    QTest::newRow("clean/diff/set") << int(M::FromClean) << int(K::LogitDiff) << QList<int>{3, 6, -1};
    QTest::newRow("zero/prob/last") << int(M::Zero) << int(K::TargetProb) << QList<int>{-1};
    QTest::newRow("zero/diff/middle") << int(M::Zero) << int(K::LogitDiff) << QList<int>{4};
    QTest::newRow("mean/prob/last") << int(M::Mean) << int(K::TargetProb) << QList<int>{};
    QTest::newRow("mean/logit/first") << int(M::Mean) << int(K::TargetLogit) << QList<int>{0};
  }
  void tinyFastEqualsNaive() {
    QFETCH(int, mode);
    QFETCH(int, metric);
    QFETCH(QList<int>, positions);
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode(mode), hs::PatchMetric(metric));
    spec.positions.assign(positions.begin(), positions.end());
    if (spec.mode == hs::PatchMode::Mean)
      spec.mean_z = hs::meanZ(m, hs::TokenSeqs{{2, 4, 6, 8, 10}, {3, 7, 11, 15, 19, 23, 27}, {30, 31, 32}},
                              hs::ZMean::LastPosition);
    compareFastNaive(m, spec, QTest::currentDataTag(), 1e-4);
  }

  void tinyPerPosition() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetLogit);
    spec.per_position = true;  // every position
    compareFastNaive(m, spec, "per position", 1e-4);
    const std::vector<hs::HeadGrid> grids = hs::patchingSweepPositions(m, spec);
    QCOMPARE(int(grids.size()), int(spec.corrupt.size()));
    const int L = m.config().n_layers;
    for (size_t p = 0; p < grids.size(); ++p) {
      QCOMPARE(grids[p].provenance.options["position"].get<int>(), int(p));
      // Clean and corrupt agree before position 3: the clean z there is the corrupt z.
      if (p < 3) QVERIFY2(gridMax(grids[p]) <= 1e-6, qPrintable(QString("position %1").arg(p)));
      // The last layer's z at an earlier position never reaches the last position.
      if (p + 1 < grids.size())
        QVERIFY2(grids[p].values.row(L - 1).cwiseAbs().maxCoeff() <= 1e-6,
                 qPrintable(QString("position %1").arg(p)));
    }
    QVERIFY(grids.back().values.row(L - 1).cwiseAbs().maxCoeff() > 1e-4);
  }

  void storiesFastEqualsNaive() {
    if (!haveStories_) QSKIP("stories260K reference data missing");
    const hs::Transformer& m = *stories_.model;
    const int P = int(stories_.clean.size());
    compareFastNaive(m, storiesSpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb), "clean/prob/last",
                     1e-3);
    hs::PatchSweepSpec middle = storiesSpec(hs::PatchMode::FromClean, hs::PatchMetric::LogitDiff);
    middle.positions = {P / 2};
    compareFastNaive(m, middle, "clean/diff/middle", 0);
    compareFastNaive(m, storiesSpec(hs::PatchMode::Zero, hs::PatchMetric::TargetLogit), "zero/logit/last",
                     1e-3);
    hs::PatchSweepSpec mean = storiesSpec(hs::PatchMode::Mean, hs::PatchMetric::TargetProb);
    mean.mean_z = hs::meanZ(m, hs::TokenSeqs{stories_.clean, stories_.corrupt, {1, 100, 200, 300, 400}},
                            hs::ZMean::LastPosition);
    compareFastNaive(m, mean, "mean/prob/last", 1e-4);
    hs::PatchSweepSpec perPos = storiesSpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    perPos.per_position = true;
    perPos.positions = {P / 2, -2, -1};
    compareFastNaive(m, perPos, "clean/prob/per-position", 1e-3);
  }

  // ---- properties by construction ----

  void identicalPromptsGiveZero() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetLogit);
    spec.clean = spec.corrupt;
    spec.positions = {2, -1};
    QVERIFY(gridMax(hs::patchingSweep(m, spec)) <= 1e-6);
    QVERIFY(gridMax(hs::patchingSweepNaive(m, spec)) == 0.0);
    QVERIFY(gridMax(hs::attributionPatching(m, spec)) == 0.0);
  }

  void deadHeadHasNoEffect() {
    // Head 2 of layer 1 writes nothing: its W_O columns are zero. Patching it changes nothing, in
    // every mode; its neighbours do matter.
    hs::ModelConfig c = hs::test::tinyLlamaConfig();
    hs::ModelWeights w = hs::test::randomWeights(c, 11);
    w.layers[1].wo.narrow(1, 2 * c.d_head, c.d_head).zero_();  // [d_model, d_head] block of head 2
    const hs::Transformer m(c, w);
    for (hs::PatchMode mode : {hs::PatchMode::FromClean, hs::PatchMode::Zero}) {
      const hs::PatchSweepSpec spec = tinySpec(mode, hs::PatchMetric::TargetLogit);
      const hs::HeadGrid fast = hs::patchingSweep(m, spec), naive = hs::patchingSweepNaive(m, spec);
      QVERIFY2(std::abs(fast.values(1, 2)) <= 1e-6, qPrintable(QString::number(fast.values(1, 2))));
      QCOMPARE(naive.values(1, 2), 0.0);
      QVERIFY(std::abs(hs::attributionPatching(m, spec).values(1, 2)) <= 1e-9);
      QVERIFY(fast.values.row(1).cwiseAbs().maxCoeff() > 1e-4);
    }
  }

  void gridDescribesItself() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::Zero, hs::PatchMetric::LogitDiff);
    spec.positions = {-1, 4};
    const hs::HeadGrid g = hs::patchingSweep(m, spec);
    QCOMPARE(QString::fromStdString(g.id), QString("patch.zero.logit_diff"));
    QCOMPARE(QString::fromStdString(g.unit), QString("Δlogit diff"));
    QCOMPARE(g.provenance.method, std::string("patch"));
    QCOMPARE(g.provenance.options["positions"].get<std::vector<int>>(), (std::vector<int>{4, 9}));
    QCOMPARE(g.provenance.options["distractor"].get<int>(), 3);
    // The corrupt baseline matches a plain forward.
    const at::Tensor logits = lastLogits(m, spec.corrupt);
    const double base = (logits[11] - logits[3]).item<double>();
    QVERIFY(std::abs(g.provenance.options["corrupt_metric"].get<double>() - base) <= 1e-5);
  }

  void averageIsMeanOfPairs() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec a = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    hs::PatchSweepSpec b = a;
    b.corrupt = {1, 5, 9, 13, 17, 21, 25, 29, 40, 37};
    b.target = 20;
    const hs::HeadGrid ga = hs::patchingSweep(m, a), gb = hs::patchingSweep(m, b);
    const hs::HeadGrid mean = hs::patchingSweepAverage(m, {a, b});
    QVERIFY(((mean.values - 0.5 * (ga.values + gb.values)).cwiseAbs().maxCoeff()) <= 1e-12);
    QCOMPARE(mean.provenance.n_prompts, 2);
    // Each head's standard error over the pairs (issue 39, item 2): sample sd / √2 = |a − b| / 2.
    QVERIFY(mean.hasSe());
    QVERIFY(((mean.se - 0.5 * (ga.values - gb.values).cwiseAbs()).cwiseAbs().maxCoeff()) <= 1e-9);
    QVERIFY(!hs::patchingSweepAverage(m, {a}).hasSe());  // one pair: no spread to measure
    b.mode = hs::PatchMode::Zero;
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::patchingSweepAverage(m, {a, b}));
  }

  void specErrors() {
    const hs::Transformer m = hs::test::tinyLlama();
    auto expectError = [&](const hs::PatchSweepSpec& s, const char* needle) {
      expectErrorMentioning([&] { hs::patchingSweep(m, s); }, needle);
    };
    hs::PatchSweepSpec s = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    s.clean.pop_back();
    expectError(s, "equal lengths");
    s = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    s.target = 50;
    expectError(s, "target token 50");
    s = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::LogitDiff);
    s.distractor = -1;
    expectError(s, "distractor");
    s = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    s.positions = {10};
    expectError(s, "position 10 is out of range");
    s = tinySpec(hs::PatchMode::Mean, hs::PatchMetric::TargetProb);
    expectError(s, "mean_z");
    s.mean_z = at::zeros({3, 4, 7});
    expectError(s, "mean_z has shape");
    s = tinySpec(hs::PatchMode::Zero, hs::PatchMetric::TargetProb);
    s.clean.clear();  // not needed for zero ablation
    QCOMPARE(hs::patchingSweep(m, s).layers(), 3);
  }

  // ---- attribution ----

  // A target or distractor given as text outside the vocabulary is refused, not read as the unknown token
  // (the toy's word-level tokenizer maps unknown words to <pad>: a logit difference of <pad> against
  // <pad> would be 0 for every head).
  void tokenOutsideTheVocabularyIsRefused() {
    const hs::LoadedModel toy = hs::loadModel("toy");
    const hs::Tokenizer* tok = toy.tokenizer.get();
    QVERIFY(tok && tok->unkId() >= 0);
    const int64_t vocab = toy.config.vocab_size;
    expectErrorMentioning([&] { hs::resolveToken(tok, vocab, " zebraxyzzy", "--target"); },
                          "--target ' zebraxyzzy' is not in the tokenizer's vocabulary");
    QCOMPARE(hs::resolveToken(tok, vocab, "#" + std::to_string(tok->unkId()), "--target"),
             int64_t(tok->unkId()));
    QCOMPARE(hs::resolveToken(tok, vocab, tok->piece(tok->unkId()), "--distractor"), int64_t(tok->unkId()));
    const std::vector<int> known = tok->encode("7", false);  // a word the toy knows
    QCOMPARE(int(known.size()), 1);
    QVERIFY(known[0] != tok->unkId());
    QCOMPARE(hs::resolveToken(tok, vocab, "7", "--target"), int64_t(known[0]));
  }

  void attributionIsTheDirectionalDerivative() {
    // d/dα metric(z + α (z_clean − z)) at α = 0 is exactly the attribution of that head; a central
    // difference through an Interpolate intervention estimates it to O(ε²).
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    spec.positions = {3, -1};
    const hs::HeadGrid attrib = hs::attributionPatching(m, spec);
    QCOMPARE(attrib.id, std::string("attrib.from_clean.target_prob"));
    hs::RunRequest cleanReq;
    cleanReq.tokens = hs::test::row(spec.clean);
    for (int l = 0; l < 3; ++l)
      cleanReq.capture.insert(hs::attnZ(l));
    const hs::RunResult clean = m.run(cleanReq);
    const double eps = 1e-2;
    double worst = 0, largest = 0;
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h) {
        auto metricAt = [&](double alpha) {
          hs::RunRequest r;
          r.tokens = hs::test::row(spec.corrupt);
          hs::Intervention iv;
          iv.site = hs::attnZ(l);
          iv.heads = {h};
          iv.positions = spec.positions;
          iv.op = hs::InterventionOp::Interpolate;
          iv.tensor = clean.cache.at(hs::attnZ(l));  // full site shape: indexed like z
          iv.alpha = at::full({1}, alpha);
          r.interventions = {iv};
          return at::softmax(m.run(r).logits[0][-1].to(at::kDouble), -1)[11].item<double>();
        };
        const double fd = (metricAt(eps) - metricAt(-eps)) / (2 * eps);
        worst = std::max(worst, std::abs(fd - attrib.values(l, h)));
        largest = std::max(largest, std::abs(fd));
      }
    QVERIFY2(largest > 1e-4, qPrintable(QString::number(largest)));
    QVERIFY2(worst <= 1e-3 * largest + 1e-6,
             qPrintable(
                 QString("max |finite difference - attribution| = %1 (largest %2)").arg(worst).arg(largest)));
  }

  void attributionPerPositionSums() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::Zero, hs::PatchMetric::TargetLogit);
    spec.positions = {2, 5, -1};
    const hs::HeadGrid together = hs::attributionPatching(m, spec);
    spec.per_position = true;
    const std::vector<hs::HeadGrid> each = hs::attributionPatchingPositions(m, spec);
    QCOMPARE(int(each.size()), 3);
    Eigen::MatrixXd sum = each[0].values + each[1].values + each[2].values;
    QVERIFY((sum - together.values).cwiseAbs().maxCoeff() <= 1e-9);
    // The last layer at an earlier position has no gradient path to the last logits.
    QCOMPARE(each[0].values.row(2).cwiseAbs().maxCoeff(), 0.0);
  }

  void attributionRanksLikeTheExactSweep() {
    if (!haveStories_) QSKIP("stories260K reference data missing");
    const hs::Transformer& m = *stories_.model;
    for (hs::PatchMetric metric : {hs::PatchMetric::TargetProb, hs::PatchMetric::LogitDiff}) {
      const hs::PatchSweepSpec spec = storiesSpec(hs::PatchMode::FromClean, metric);
      // Against the naive oracle (one full forward per head): a defect attribution shares with the fast sweep
      // (their base runs) cannot hide.
      const hs::HeadGrid exact = hs::patchingSweepNaive(m, spec);
      const hs::HeadGrid approx = hs::attributionPatching(m, spec);
      const double rho = hs::spearmanRho(exact, approx);
      qInfo("stories260K attribution vs exact (%s): Spearman %.3f", hs::toString(metric), rho);
      QVERIFY2(rho > 0.5, qPrintable(QString("Spearman %1").arg(rho)));
    }
  }

  // ---- cancellation ----

  void cancellationLeavesModelUsable() {
    const hs::Transformer m = hs::test::tinyLlama();
    const hs::PatchSweepSpec spec = tinySpec(hs::PatchMode::FromClean, hs::PatchMetric::TargetProb);
    const hs::HeadGrid before = hs::patchingSweep(m, spec);
    const at::Tensor logitsBefore = lastLogits(m, spec.corrupt);
    // Both paths check before the clean run, before the corrupt run (fast: before its batched clean and
    // corrupt run) and before their first patched forward; cancelling there stops the sweep.
    for (bool naive : {false, true}) {
      int calls = 0;
      std::vector<double> progress;
      hs::AnalysisContext ctx;
      ctx.cancelled = [&] { return ++calls > 2; };
      ctx.progress = [&](double f, const std::string&) { progress.push_back(f); };
      QVERIFY_THROWS_EXCEPTION(hs::Cancelled, hs::patchingSweepPositions(m, spec, ctx, naive));
      QCOMPARE(calls, 3);
      QVERIFY(progress.empty());
    }
    int calls = 0;
    hs::AnalysisContext ctx;
    ctx.cancelled = [&] { return ++calls > 1; };
    QVERIFY_THROWS_EXCEPTION(hs::Cancelled, hs::attributionPatching(m, spec, ctx));
    QCOMPARE(hs::test::maxAbsDiff(lastLogits(m, spec.corrupt), logitsBefore), 0.0);
    QCOMPARE(gridDiff(hs::patchingSweep(m, spec), before), 0.0);
    // Progress rises to 1 in an uncancelled run: per layer (naive), per batched forward (fast; the
    // 12 variants of the tiny model are one forward).
    for (bool naive : {false, true}) {
      std::vector<double> progress;
      hs::AnalysisContext watch;
      watch.progress = [&](double f, const std::string&) { progress.push_back(f); };
      hs::patchingSweepPositions(m, spec, watch, naive);
      QCOMPARE(int(progress.size()), naive ? 3 : 1);
      QVERIFY(std::is_sorted(progress.begin(), progress.end()));
      QCOMPARE(progress.back(), 1.0);
    }
  }
};

QTEST_GUILESS_MAIN(TestPatching)
#include "test_patching.moc"
