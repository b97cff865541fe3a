// The shared head operations (core/analysis/toolkit/head_toolkit.h, prompt_batches.h) against independent
// computations: head interventions grouped per layer act like one intervention per head; mean head outputs
// equal per-prompt unpadded forwards; the corpus mean is the mean over its windows; scoring teacher-forces
// every answer token; random head sets are seeded, disjoint from what they exclude and complete; per-head
// writes add up to the attention block's write (through OLMo-2's post-norm too); the toy model's corpus
// is the toy world's own text.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QtTest>

#include <algorithm>
#include <fstream>
#include <set>

#include "../engine/engine_fixtures.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/prompt_batches.h"
#include "model/load/model_loader.h"
#include "model/load/silent_heads.h"
#include "test_paths.h"
#include "util/error.h"

namespace {

const hs::TokenSeqs kPrompts = {{1, 5, 9, 13, 2}, {3, 4}, {7, 8, 11, 40, 41, 42, 0}};

// hook_z of every layer for one unpadded prompt: [layers, pos, heads, d_head].
at::Tensor zOf(const hs::Transformer& m, const std::vector<int64_t>& ids) {
  hs::RunRequest r;
  r.tokens = at::tensor(ids, at::kLong).view({1, -1});
  for (int l = 0; l < m.config().n_layers; ++l)
    r.capture.insert(hs::attnZ(l));
  const hs::RunResult res = m.run(r);
  std::vector<at::Tensor> per;
  for (int l = 0; l < m.config().n_layers; ++l)
    per.push_back(res.cache.at(hs::attnZ(l))[0]);
  return at::stack(per, 0).to(at::kDouble);
}

at::Tensor lastLogits(const hs::Transformer& m, const std::vector<int64_t>& ids,
                      const std::vector<hs::Intervention>& ivs) {
  hs::RunRequest r;
  r.tokens = at::tensor(ids, at::kLong).view({1, -1});
  r.interventions = ivs;
  return m.run(r).logits[0][-1];
}

}  // namespace

class TestHeadToolkit : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void headInterventionsMatchOnePerHead() {
    const hs::Transformer m = hs::test::tinyLlama();
    at::NoGradGuard g;
    const std::vector<hs::HeadRef> heads = {{0, 1}, {2, 3}, {0, 2}};
    const at::Tensor values = at::randn({3, 4, 8});  // [layers, heads, d_head]
    auto perHead = [&](hs::InterventionOp op, std::vector<int> pos, double scale) {
      std::vector<hs::Intervention> out;
      for (const hs::HeadRef& h : heads) {
        hs::Intervention iv;
        iv.site = hs::attnZ(h.layer);
        iv.heads = {h.head};
        iv.positions = pos;
        iv.op = op;
        iv.scale = scale;
        if (op != hs::InterventionOp::Zero) iv.tensor = values[h.layer][h.head];
        out.push_back(iv);
      }
      return out;
    };
    const std::vector<int64_t>& p = kPrompts[0];
    QCOMPARE(hs::zeroHeads(heads).size(), size_t(2));  // one per layer
    QVERIFY(at::allclose(lastLogits(m, p, hs::zeroHeads(heads)),
                         lastLogits(m, p, perHead(hs::InterventionOp::Zero, {}, 1)), 1e-6, 1e-6));
    QVERIFY(at::allclose(lastLogits(m, p, hs::meanHeads(heads, values)),
                         lastLogits(m, p, perHead(hs::InterventionOp::Mean, {}, 1)), 1e-6, 1e-6));
    QVERIFY(at::allclose(lastLogits(m, p, hs::replaceHeads(heads, values, {-1})),
                         lastLogits(m, p, perHead(hs::InterventionOp::Replace, {-1}, 1)), 1e-6, 1e-6));
    QVERIFY(at::allclose(lastLogits(m, p, hs::addHeads(heads, values, {-1}, 2.5)),
                         lastLogits(m, p, perHead(hs::InterventionOp::Add, {-1}, 2.5)), 1e-6, 1e-6));
    // ... and they change something.
    QVERIFY(!at::allclose(lastLogits(m, p, hs::zeroHeads(heads)), lastLogits(m, p, {}), 1e-4, 1e-4));
  }

  void meanZEqualsUnpaddedForwards() {
    const hs::Transformer m = hs::test::tinyLlama();
    at::NoGradGuard g;
    at::Tensor last = at::zeros({3, 4, 8}, at::kDouble), all = at::zeros({3, 4, 8}, at::kDouble);
    int64_t positions = 0;
    for (const auto& p : kPrompts) {
      const at::Tensor z = zOf(m, p);  // [layers, pos, heads, d_head]
      last += z.select(1, -1);
      all += z.sum(1);
      positions += int64_t(p.size());
    }
    last /= double(kPrompts.size());
    all /= double(positions);
    const at::Tensor a = hs::meanZ(m, kPrompts, hs::ZMean::LastPosition, {}, 2).to(at::kDouble);
    const at::Tensor b = hs::meanZ(m, kPrompts, hs::ZMean::AllPositions, {}, 2).to(at::kDouble);
    QVERIFY2(at::allclose(a, last, 1e-5, 1e-5),
             qPrintable(QString::number((a - last).abs().max().item<double>())));
    QVERIFY2(at::allclose(b, all, 1e-5, 1e-5),
             qPrintable(QString::number((b - all).abs().max().item<double>())));
    QVERIFY(!at::allclose(a, b, 1e-3, 1e-3));
  }

  // The corpus mean over stories260K's tokenizer: the windows are the encoded text cut into equal chunks
  // with BOS in front; their all-position mean, computed here one window at a time.
  void corpusMeanIsTheMeanOverItsWindows() {
    const std::string bin = hs::test::sharedData("models/stories260K/stories260K.bin");
    const std::string corpus = hs::test::sharedData("corpora/wikitext-2/test.txt");
    HS_REQUIRE_FILE(bin);
    HS_REQUIRE_FILE(corpus);
    hs::LoadOptions lo;
    lo.tokenizer = hs::test::sharedData("models/stories260K/tok512.bin");
    const hs::LoadedModel lm = hs::loadModel(bin, lo);
    at::NoGradGuard g;
    hs::CorpusMean cm{corpus, 24, 3};
    const at::Tensor got = hs::corpusMeanZ(*lm.model, *lm.tokenizer, cm).to(at::kDouble);
    std::ifstream f(corpus);
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    const std::vector<int> ids = lm.tokenizer->encode(text.substr(0, 24 * 3 * 8), false);
    const int64_t bos = lm.tokenizer->bosId();
    QVERIFY(lm.tokenizer->addsBos() && bos >= 0);
    at::Tensor sum;
    for (int w = 0; w < 3; ++w) {
      std::vector<int64_t> window = {bos};
      window.insert(window.end(), ids.begin() + w * 23, ids.begin() + (w + 1) * 23);
      const at::Tensor z = zOf(*lm.model, window).sum(1);  // [layers, heads, d_head]
      sum = w == 0 ? z : sum + z;
    }
    const at::Tensor want = sum / (3.0 * 24);
    QVERIFY2(at::allclose(got, want, 1e-5, 1e-5),
             qPrintable(QString::number((got - want).abs().max().item<double>())));
    cm.file = "/nonexistent/corpus.txt";
    bool threw = false;
    try {
      hs::corpusMeanZ(*lm.model, *lm.tokenizer, cm);
    } catch (const std::exception& e) {
      threw = std::string(e.what()).find("/nonexistent/corpus.txt") != std::string::npos;
    }
    QVERIFY(threw);
  }

  // Per-head writes add up to what the attention block adds to the residual stream at N:
  // resid_post − resid_pre − (the MLP's write), read from single unpadded forwards. On OLMo-2 the block's
  // write is RMSNorm(Σ W_O z) and the MLP's RMSNorm(mlp_out), so W_O z alone would not add up; the writes
  // through the post-norm at the run's activations do. Methods that need W_O z itself refuse such models.
  void headWritesAddUpToTheAttentionWrite() {
    for (const bool post : {false, true}) {
      hs::ModelConfig c = hs::test::tinyLlamaConfig();
      if (post) {
        c.arch = hs::Architecture::Olmo2;
        c.model_type = "olmo2";
        c.norm_placement = hs::NormPlacement::Post;
        c.qk_norm = hs::QkNorm::Full;
      }
      const hs::Transformer m(c, hs::test::randomWeights(c, 11));
      at::NoGradGuard g;
      const at::Tensor a = hs::headOutputsAtLast(m, kPrompts, {}, {}, 2);  // [n, layers, heads, d_model]
      QVERIFY(a.sizes().vec() == (std::vector<int64_t>{3, c.n_layers, c.n_heads, c.d_model}));
      for (size_t i = 0; i < kPrompts.size(); ++i) {
        hs::RunRequest r;
        r.tokens = at::tensor(kPrompts[i], at::kLong).view({1, -1});
        for (int l = 0; l < c.n_layers; ++l)
          r.capture.insert({hs::residPre(l), hs::residPost(l), hs::mlpOut(l)});
        const hs::RunResult res = m.run(r);
        for (int l = 0; l < c.n_layers; ++l) {
          const at::Tensor pre = res.cache.at(hs::residPre(l))[0][-1].to(at::kDouble);
          const at::Tensor postR = res.cache.at(hs::residPost(l))[0][-1].to(at::kDouble);
          at::Tensor mlp = res.cache.at(hs::mlpOut(l))[0][-1].to(at::kDouble);  // [d_model]
          if (post)
            mlp = mlp * at::rsqrt(mlp.pow(2).mean() + c.norm_eps) *
                  m.weights().layers[size_t(l)].post_mlp_norm_w.to(at::kDouble);
          const at::Tensor want = postR - pre - mlp;                       // [d_model]
          const at::Tensor got = a[int64_t(i)][l].sum(0).to(at::kDouble);  // [d_model]
          QVERIFY2(at::allclose(got, want, 1e-4, 1e-4),
                   qPrintable(QString("%1 prompt %2 layer %3: max diff %4")
                                  .arg(post ? "olmo2" : "llama")
                                  .arg(i)
                                  .arg(l)
                                  .arg((got - want).abs().max().item<double>())));
        }
      }
      QCOMPARE(hs::additiveHeadWrites(m), !post);
      if (post) {
        const at::Tensor z = at::zeros({1, c.n_layers, c.n_heads, c.d_head});
        try {
          hs::headWrites(m, z);
          QFAIL("W_O z accepted as a head write on an attention post-norm model");
        } catch (const hs::Error& e) {
          QVERIFY2(std::string(e.what()).find("olmo2") != std::string::npos, e.what());
        }
      }
    }
  }

  // The toy model's default corpus mean reads the toy world's non-ICL text (its tokenizer has no English):
  // every window is toy tokens only, without classification or function episodes.
  void toyCorpusIsTheToyWorldsText() {
    const hs::LoadedModel toy = hs::loadModel("toy");
    QVERIFY(hs::isToyVocabulary(toy.model->config().vocab_size, toy.tokenizer.get()));
    const hs::TokenSeqs w = hs::toyCorpusWindows(8, 128);
    QCOMPARE(w.size(), size_t(8));
    for (const auto& s : w) {
      QVERIFY(!s.empty() && s.size() <= 128);
      QCOMPARE(s.front(), int64_t(1));  // <bos>
      for (int64_t t : s)
        QVERIFY(t != 3 && t < 244);  // no ":" (classification) in induction and list episodes
    }
    at::NoGradGuard g;
    const at::Tensor got = hs::resolveMeanZ(*toy.model, toy.tokenizer.get(), hs::MeanSource{}, {});
    const at::Tensor want = hs::meanZ(*toy.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions);
    QVERIFY(at::allclose(got, want, 1e-6, 1e-6));
    const std::string what = hs::describeMeanSource(hs::MeanSource{}, toy.model.get(), toy.tokenizer.get());
    QVERIFY2(what.find("toy world") != std::string::npos, what.c_str());
  }

  // Teacher forcing: an answer is correct only when every one of its tokens is the argmax; the first
  // prediction and log-probability are those at N.
  void scoringTeacherForcesEveryAnswerToken() {
    const hs::Transformer m = hs::test::tinyLlama();
    at::NoGradGuard g;
    const std::vector<int64_t> p = kPrompts[0];
    std::vector<int64_t> greedy;  // the model's own continuation: 3 tokens
    std::vector<int64_t> seq = p;
    for (int i = 0; i < 3; ++i) {
      const int64_t t = lastLogits(m, seq, {}).argmax().item<int64_t>();
      greedy.push_back(t);
      seq.push_back(t);
    }
    std::vector<int64_t> wrongLast = greedy;
    wrongLast[2] = (greedy[2] + 1) % 50;
    const std::vector<hs::AnswerScore> s =
        hs::scoreAnswers(m, {p, p, kPrompts[1]}, {greedy, wrongLast, {greedy[0]}}, {});
    QVERIFY(s[0].correct);
    QVERIFY(!s[1].correct);
    QCOMPARE(s[0].first_pred, int(greedy[0]));
    QCOMPARE(s[1].first_pred, int(greedy[0]));
    const double lp = at::log_softmax(lastLogits(m, p, {}).to(at::kDouble), -1)[greedy[0]].item<double>();
    QVERIFY(std::abs(s[0].first_logprob - lp) <= 1e-5);
    QCOMPARE(s[2].first_pred, int(lastLogits(m, kPrompts[1], {}).argmax().item<int64_t>()));
  }

  void headSets() {
    const std::set<hs::HeadRef> exclude = {{0, 0}, {1, 1}};
    const std::vector<hs::HeadRef> all = hs::allHeads(3, 4);
    const auto a = hs::randomHeads(all, 5, exclude, 9), b = hs::randomHeads(all, 5, exclude, 9);
    QCOMPARE(a, b);
    QCOMPARE(a.size(), size_t(5));
    QVERIFY(std::is_sorted(a.begin(), a.end()));
    for (const hs::HeadRef& h : a)
      QVERIFY(!exclude.count(h));
    QCOMPARE(hs::randomHeads(all, 50, exclude, 9).size(), size_t(10));  // the pool is smaller
    QVERIFY(hs::drawSeed(9, 0) == 9 && hs::drawSeed(9, 1) != hs::drawSeed(9, 2));
    auto order = hs::randomHeadOrder(all, 2);
    QCOMPARE(order.size(), size_t(12));
    std::sort(order.begin(), order.end());
    QCOMPARE(std::set<hs::HeadRef>(order.begin(), order.end()).size(), size_t(12));
    const hs::Transformer m = hs::test::tinyLlama();
    try {
      hs::checkHeads(m, {{3, 0}}, "evaluate: zero_ablate");
      QFAIL("head 3.0 accepted in a 3-layer model");
    } catch (const hs::Error& e) {
      QCOMPARE(std::string(e.what()),
               std::string("evaluate: zero_ablate: head 3.0 is outside the model (3 layers x 4 heads: layers "
                           "0-2, heads 0-3)"));
    }
  }

  // Random controls draw from the live heads only (issue 39, item 1): 14 of the toy model's 32 heads have
  // an all-zero W_O, and ablating them is no control. liveHeads is the complement of silentHeads; random
  // sets and the first 18 heads of every random order are live; many draws never pick a silent head.
  void randomControlsDrawLiveHeads() {
    const hs::LoadedModel toy = hs::loadModel("toy");
    const hs::ModelConfig& c = toy.model->config();
    const std::vector<hs::HeadRef> silent = hs::silentHeads(toy.model->weights(), c);
    const std::vector<hs::HeadRef> live = hs::liveHeads(*toy.model);
    QCOMPARE(silent.size(), size_t(14));
    QCOMPARE(live.size(), size_t(18));
    const std::set<hs::HeadRef> silentSet(silent.begin(), silent.end());
    for (const hs::HeadRef& h : live)
      QVERIFY2(!silentSet.count(h), qPrintable(QString("%1.%2 live and silent").arg(h.layer).arg(h.head)));
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      for (const hs::HeadRef& h : hs::randomHeads(live, 4, {}, seed))
        QVERIFY(!silentSet.count(h));
      const std::vector<hs::HeadRef> order = hs::randomLiveHeadOrder(*toy.model, seed);
      QCOMPARE(order.size(), size_t(32));
      QCOMPARE(std::set<hs::HeadRef>(order.begin(), order.end()).size(), size_t(32));
      for (size_t i = 0; i < order.size(); ++i)
        QVERIFY2(bool(silentSet.count(order[i])) == (i >= 18),
                 qPrintable(QString("seed %1: head %2 of the order").arg(seed).arg(i)));
    }
  }

  void leftPaddingPutsEveryLastTokenAtTheEnd() {
    const hs::PaddedBatch pb = hs::padLeft(kPrompts, 0, 3, 0);
    QCOMPARE(pb.tokens.size(1), int64_t(7));
    QCOMPARE(pb.pad, (std::vector<int>{2, 5, 0}));
    for (size_t i = 0; i < 3; ++i) {
      QCOMPARE(pb.tokens[int64_t(i)][-1].item<int64_t>(), kPrompts[i].back());
      QCOMPARE(pb.attention_mask[int64_t(i)].sum().item<int64_t>(), int64_t(kPrompts[i].size()));
    }
  }
};

QTEST_GUILESS_MAIN(TestHeadToolkit)
#include "test_head_toolkit.moc"
