// HeadScope against transformers where a forward is not one call: head interventions, left-padded batches
// and greedy generation with the KV cache, for every family variant of hf_models.py (float32, and bfloat16
// for two of them). hf_interventions.py builds each random-init checkpoint and writes transformers' logits
// for the cases it describes in spec.json; this test loads the checkpoint as a user would (loadModel) and
// replays every case through HeadScope's own API:
//  - head edits on blocks.{l}.attn.hook_z (zero and mean ablation through head_toolkit's zeroHeads /
//    meanHeads with meanZ's means, patches as Replace Interventions from a cached source run), against the
//    same edit made in transformers with a forward pre-hook on the output projection. Each side's means and
//    patch sources come from its own runs, so the z of both enter too;
//  - a left-padded batch with its attention_mask (transformers given position_ids = cumsum(mask) − 1, as
//    generate() does), against HeadScope's padded batch and each row run alone;
//  - greedy decoding through the KV cache (Transformer::generateGreedy, also with heads zeroed during the
//    prefill, and the KV-cache loop it runs on a left-padded batch), against generate(do_sample=False), past
//    the sliding window where there is one.
// Tolerances: float32 1e-4 absolute on logits of magnitude ~1-10 (a few float32 ulps of sums over 64-128
// wide products and a 512-entry vocabulary, with room for the order of summation). bf16: 0.15 + 3 % of the
// largest |logit| (hf_interventions.py bf16_tol): transformers rounds the residual stream to bf16 after each
// layer, HeadScope keeps it in float32, so they differ by bf16 rounding, 8 significant bits.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QElapsedTimer>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/toolkit/head_toolkit.h"
#include "model/io/safetensors.h"
#include "model/load/model_loader.h"
#include "model/transformer.h"
#include "reference_env.h"

using nlohmann::json;

namespace {

// One case of hf_interventions.py: its spec, transformers' logits, the checkpoint loaded by HeadScope.
struct Case {
  QString name;
  json spec;
  std::shared_ptr<hs::SafetensorsFile> ref;
  hs::LoadedModel loaded;
  double tol = 0;
  QString error;  // why HeadScope could not load the checkpoint

  at::Tensor reference(const std::string& key) const { return ref->tensor(key).to(at::kDouble); }
  const hs::Transformer& model() const { return *loaded.model; }
  // How far a change must move the logits for a comparison within `tol` to be able to fail: float32 100×
  // the bound; bf16, whose bound is ~0.3 on these models where the edits move the logits by 1.5-6, 3×.
  double mustMove() const { return spec["dtype"] == "float32" ? 100 * tol : 3 * tol; }
};

json readJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// [rows, pos] int64 from a JSON list of lists.
at::Tensor tokensOf(const json& rows) {
  std::vector<int64_t> flat;
  for (const json& r : rows)
    for (const json& t : r)
      flat.push_back(t.get<int64_t>());
  return at::tensor(flat, at::kLong).view({int64_t(rows.size()), -1});
}

std::vector<int> intsOf(const json& a) {
  std::vector<int> out;
  for (const json& v : a)
    out.push_back(v.get<int>());
  return out;
}

double maxAbs(const at::Tensor& t) {
  return t.numel() ? t.abs().max().item<double>() : 0.0;
}

// hook_z of every layer over `tokens`: per layer [batch, pos, head, d_head] in the model's compute dtype.
std::vector<at::Tensor> captureZ(const hs::Transformer& m, const at::Tensor& tokens) {
  hs::RunRequest req;
  req.tokens = tokens;  // [batch, pos]
  for (int l = 0; l < m.config().n_layers; ++l)
    req.capture.insert(hs::attnZ(l));
  const hs::RunResult r = m.run(req);
  std::vector<at::Tensor> z;
  for (int l = 0; l < m.config().n_layers; ++l)
    z.push_back(r.cache.at(hs::attnZ(l)).detach());
  return z;
}

// The largest gap between the best and second-best logit: [vocab] → top1 − top2.
double topTwoMargin(const at::Tensor& logits) {
  const at::Tensor top = std::get<0>(logits.topk(2));  // [2]
  return (top[0] - top[1]).item<double>();
}

}  // namespace

class TestHfInterventions : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  json index_;
  std::map<QString, std::shared_ptr<Case>> cases_;

  void addVariantRows() {
    QTest::addColumn<QString>("name");
    for (const json& c : index_) {
      const std::string n = c["name"];
      QTest::newRow(n.c_str()) << QString::fromStdString(n);
    }
  }

  // Loaded once per case and kept for the other test functions.
  std::shared_ptr<Case> load(const QString& name) {
    if (auto it = cases_.find(name); it != cases_.end()) return it->second;
    for (const json& c : index_) {
      if (QString::fromStdString(c["name"]) != name) continue;
      auto k = std::make_shared<Case>();
      k->name = name;
      const std::string dir = c["dir"];
      k->spec = readJson(dir + "/spec.json");
      k->ref = hs::SafetensorsFile::open(dir + "/reference.safetensors");
      hs::LoadOptions opts;
      opts.dtype = k->spec["dtype"].get<std::string>();  // compute in the checkpoint's dtype, as transformers
      try {
        k->loaded = hs::loadModel(dir + "/" + k->spec["model"].get<std::string>(), opts);
      } catch (const std::exception& e) {
        k->error = QString("%1: HeadScope cannot load the checkpoint: %2").arg(name, e.what());
      }
      k->tol = k->spec["tol"];
      cases_[name] = k;
      return k;
    }
    return nullptr;
  }

  // Runs a check; an exception HeadScope throws fails the row with its message instead of aborting the test.
  template <class F>
  void guarded(const QString& name, F&& check) {
    try {
      check();
    } catch (const std::exception& e) {
      QFAIL(qPrintable(QString("%1: %2").arg(name, e.what())));
    }
  }

  void checkInterventions(const QString& name) {
    const std::shared_ptr<Case> k = load(name);
    QVERIFY(k);
    QVERIFY2(k->error.isEmpty(), qPrintable(k->error));
    const hs::Transformer& m = k->model();
    const json& s = k->spec;

    const at::Tensor tokens = tokensOf(s["iv_tokens"]);  // [batch, pos]
    hs::RunRequest base;
    base.tokens = tokens;
    const at::Tensor ours0 = m.run(base).logits.to(at::kDouble);  // [batch, pos, vocab]
    const at::Tensor ref0 = k->reference("iv.base");              // [batch, pos, vocab]
    const double d0 = maxAbs(ours0 - ref0);
    QVERIFY2(d0 <= k->tol,
             qPrintable(QString("%1, no intervention: max |Δ| %2 > %3").arg(name).arg(d0).arg(k->tol)));

    // HeadScope's own means and patch source: head_toolkit's meanZ over the mean's prompts (run as a
    // left-padded batch; float64 over every real position, or over each prompt's last one) and a cached
    // hook_z of the source prompts (the full site shape, indexed with the intervention's selection, as the
    // patching sweep uses it).
    const std::vector<at::Tensor> srcZ =
        captureZ(m, tokensOf(s["iv_source_tokens"]));  // [batch, pos, head, d_head]
    hs::TokenSeqs meanPrompts;
    for (const json& p : s["iv_mean_prompts"])
      meanPrompts.push_back(p.get<std::vector<int64_t>>());
    const at::Tensor meanAll = hs::meanZ(m, meanPrompts, hs::ZMean::AllPositions);  // [layers, heads, d_head]
    const at::Tensor meanLast =
        hs::meanZ(m, meanPrompts, hs::ZMean::LastPosition);  // [layers, heads, d_head]
    // Reported with a failure: how far the two sides' means are apart.
    const double dMean = maxAbs(meanAll.to(at::kDouble) - k->reference("iv.mean_all_z"));
    const double dMeanLast = maxAbs(meanLast.to(at::kDouble) - k->reference("iv.mean_last_z"));

    for (const json& c : s["interventions"]) {
      const QString what = QString::fromStdString(c["name"].get<std::string>());
      std::vector<hs::Intervention> ivs;
      for (const json& e : c["edits"]) {
        const int layer = e["layer"];
        const std::vector<int> heads = intsOf(e["heads"]), positions = intsOf(e["positions"]);
        const std::string op = e["op"];
        std::vector<hs::HeadRef> refs;
        for (int h : heads)
          refs.push_back({layer, h});
        if (op == "mean") {  // head_toolkit's mean ablation: z ← mean_z[layer, head] at the positions
          QVERIFY(intsOf(e["rows"]).empty());
          for (const hs::Intervention& iv :
               hs::meanHeads(refs, e["mean"] == "all" ? meanAll : meanLast, positions))
            ivs.push_back(iv);
        } else if (op == "zero" && intsOf(e["rows"]).empty()) {  // head_toolkit's zero ablation
          for (const hs::Intervention& iv : hs::zeroHeads(refs, positions))
            ivs.push_back(iv);
        } else {  // a patch (or an edit of some rows): the Intervention itself
          hs::Intervention iv;
          iv.site = hs::attnZ(layer);
          iv.heads = heads;
          iv.positions = positions;
          iv.rows = intsOf(e["rows"]);
          iv.op = hs::parseInterventionOp(op);
          if (iv.op == hs::InterventionOp::Replace) iv.tensor = srcZ[layer];  // [batch, pos, head, d_head]
          ivs.push_back(iv);
        }
      }
      hs::RunRequest req;
      req.tokens = tokens;
      req.interventions = ivs;
      const hs::RunResult r = m.run(req);
      const at::Tensor ours = r.logits.to(at::kDouble);  // [batch, pos, vocab]
      const at::Tensor ref = k->reference(c["logits"]);  // [batch, pos, vocab]
      const double diff = maxAbs(ours - ref);
      const double effect = maxAbs(ref - ref0);  // how far the edit moves transformers' logits
      qInfo("%s, %s: max |Δ| %.3g (bound %.3g), the edit moves the logits by %.3g", qPrintable(name),
            qPrintable(what), diff, k->tol, effect);
      QVERIFY2(diff <= k->tol,
               qPrintable(QString("%1, %2: max |HeadScope − transformers| %3 > bound %4 (means "
                                  "differ by %5 / %6)")
                              .arg(name, what)
                              .arg(diff)
                              .arg(k->tol)
                              .arg(dMean)
                              .arg(dMeanLast)));
      // The comparison can fail: every edit moves the logits far beyond the bound.
      const double needed = k->mustMove();
      QVERIFY2(effect > needed, qPrintable(QString("%1, %2: the edit moves transformers' logits by only %3 "
                                                   "(needed %4): the comparison could not fail")
                                               .arg(name, what)
                                               .arg(effect)
                                               .arg(needed)));
    }
  }

  void checkLeftPadded(const QString& name) {
    const std::shared_ptr<Case> k = load(name);
    QVERIFY(k);
    QVERIFY2(k->error.isEmpty(), qPrintable(k->error));
    const hs::Transformer& m = k->model();
    const json& s = k->spec["pad"];
    const at::Tensor tokens = tokensOf(s["tokens"]);             // [batch, pos]
    const at::Tensor mask = tokensOf(s["mask"]);                 // [batch, pos]
    const at::Tensor ref = k->reference(s["logits"]);            // [batch, pos, vocab]
    const at::Tensor real = mask.to(at::kDouble).unsqueeze(-1);  // [batch, pos, 1]
    const int64_t B = tokens.size(0), P = tokens.size(1);

    hs::RunRequest req;
    req.tokens = tokens;
    req.attention_mask = mask;
    const at::Tensor batched = m.run(req).logits.to(at::kDouble);  // [batch, pos, vocab]
    const double dBatch = maxAbs((batched - ref) * real);

    double dAlone = 0;
    for (int64_t r = 0; r < B; ++r) {
      const int64_t n = mask[r].sum().item<int64_t>();
      hs::RunRequest one;
      one.tokens = tokens.narrow(0, r, 1).narrow(1, P - n, n);                // [1, n]
      const at::Tensor alone = m.run(one).logits.to(at::kDouble)[0];          // [n, vocab]
      dAlone = std::max(dAlone, maxAbs(alone - ref[r].narrow(0, P - n, n)));  // real positions
    }
    // The padding must matter: without the mask the padded rows' real positions are far off.
    hs::RunRequest unmasked;
    unmasked.tokens = tokens;
    const double dUnmasked = maxAbs((m.run(unmasked).logits.to(at::kDouble) - ref) * real);

    const int window = k->spec["sliding_window"];
    qInfo(
        "%s: padded batch max |Δ| %.3g, rows alone %.3g (bound %.3g; without the mask %.3g; rows of %lld "
        "positions, window %d)",
        qPrintable(name), dBatch, dAlone, k->tol, dUnmasked, static_cast<long long>(P), window);
    QVERIFY2(dBatch <= k->tol,
             qPrintable(QString("%1, left-padded batch: max |HeadScope − transformers| at real "
                                "positions %2 > bound %3")
                            .arg(name)
                            .arg(dBatch)
                            .arg(k->tol)));
    QVERIFY2(dAlone <= k->tol, qPrintable(QString("%1, each row alone: max |HeadScope − transformers' padded "
                                                  "batch| %2 > bound %3")
                                              .arg(name)
                                              .arg(dAlone)
                                              .arg(k->tol)));
    QVERIFY2(dUnmasked > k->mustMove(),
             qPrintable(QString("%1: without the attention mask the logits move by only %2 (needed %3)")
                            .arg(name)
                            .arg(dUnmasked)
                            .arg(k->mustMove())));
    if (window > 0) {
      const int64_t shortest = mask.sum(1).min().item<int64_t>();
      QVERIFY2(shortest > window,
               qPrintable(QString("%1: the shortest row (%2) does not reach past the window %3")
                              .arg(name)
                              .arg(shortest)
                              .arg(window)));
    }
  }

  void checkGeneration(const QString& name) {
    const std::shared_ptr<Case> k = load(name);
    QVERIFY(k);
    QVERIFY2(k->error.isEmpty(), qPrintable(k->error));
    const hs::Transformer& m = k->model();
    const int window = k->spec["sliding_window"];
    for (const json& g : k->spec["generate"]) {
      const QString what = QString::fromStdString(g["name"].get<std::string>());
      const at::Tensor prompt = tokensOf(g["tokens"]);   // [batch, pos]
      const at::Tensor want = tokensOf(g["new"]);        // [batch, steps]
      const at::Tensor ref = k->reference(g["logits"]);  // [batch, steps, vocab]
      const int64_t B = prompt.size(0), N = want.size(1);
      QCOMPARE(ref.size(1), N);

      // Heads zeroed during the prefill only (generateGreedy's prefillInterventions); every position of it.
      std::vector<hs::Intervention> prefill;
      if (g.contains("prefill_edits")) {
        for (const json& e : g["prefill_edits"]) {
          QCOMPARE(e["op"].get<std::string>(), std::string("zero"));
          hs::Intervention iv;
          iv.site = hs::attnZ(e["layer"].get<int>());
          iv.heads = intsOf(e["heads"]);
          iv.op = hs::InterventionOp::Zero;
          prefill.push_back(iv);
        }
        // The edit must matter: the first step's logits move far beyond the bound.
        const at::Tensor unedited = k->reference(g["unedited"]);  // [batch, steps, vocab]
        const double effect = maxAbs(ref.select(1, 0) - unedited.select(1, 0));
        QVERIFY2(effect > k->mustMove(),
                 qPrintable(
                     QString("%1, %2: zeroing the heads moves the first step's logits by only %3 (needed %4)")
                         .arg(name, what)
                         .arg(effect)
                         .arg(k->mustMove())));
      }

      // HeadScope's KV-cache loop: prefill, then one token per row per step.
      hs::KVCache cache;
      hs::RunRequest req;
      req.tokens = prompt;
      if (!g["mask"].is_null()) req.attention_mask = tokensOf(g["mask"]);
      req.interventions = prefill;
      req.kv = &cache;
      req.last_logits_only = true;
      std::vector<at::Tensor> stepLogits;  // per step [batch, vocab]
      std::vector<at::Tensor> stepTokens;  // per step [batch]
      {
        at::NoGradGuard noGrad;
        for (int64_t step = 0; step < N; ++step) {
          const at::Tensor logits = m.run(req).logits.select(1, 0).to(at::kDouble);  // [batch, vocab]
          const at::Tensor next = logits.argmax(-1);                                 // [batch]
          stepLogits.push_back(logits);
          stepTokens.push_back(next);
          req.tokens = next.view({B, 1});  // [batch, 1]
          req.attention_mask = at::Tensor();
          req.interventions.clear();
        }
      }
      const at::Tensor ours = at::stack(stepLogits, 1);  // [batch, steps, vocab]
      const at::Tensor got = at::stack(stepTokens, 1);   // [batch, steps]

      if (B == 1) {  // the public call decodes the same tokens
        const std::vector<int64_t> p(prompt.data_ptr<int64_t>(), prompt.data_ptr<int64_t>() + prompt.numel());
        const std::vector<int64_t> gen = m.generateGreedy(p, int(N), -1, prefill);
        const std::vector<int64_t> loop(got.data_ptr<int64_t>(), got.data_ptr<int64_t>() + N);
        QVERIFY2(gen == loop,
                 qPrintable(QString("%1: generateGreedy differs from its own KV-cache loop").arg(name)));
      }

      double worst = 0;
      int agreed = 0;
      QStringList partings;
      for (int64_t r = 0; r < B; ++r) {
        int64_t until = N;  // steps whose prefixes agree (compared logits)
        for (int64_t t = 0; t < N; ++t) {
          if (got[r][t].item<int64_t>() != want[r][t].item<int64_t>()) {
            until = t + 1;
            const double margin = topTwoMargin(ref[r][t]);
            partings << QString("row %1 step %2 (margin %3)").arg(r).arg(t).arg(margin);
            QVERIFY2(margin <= 2 * k->tol,
                     qPrintable(QString("%1, %2: row %3 parts from transformers at step %4 (HeadScope %5, "
                                        "transformers %6) with a top-two margin %7 > 2 × bound %8")
                                    .arg(name, what)
                                    .arg(r)
                                    .arg(t)
                                    .arg(got[r][t].item<int64_t>())
                                    .arg(want[r][t].item<int64_t>())
                                    .arg(margin)
                                    .arg(k->tol)));
            break;
          }
          ++agreed;
        }
        worst = std::max(worst, maxAbs(ours[r].narrow(0, 0, until) - ref[r].narrow(0, 0, until)));
      }
      const int64_t total = prompt.size(1) + N;
      qInfo(
          "%s, %s: %d / %lld tokens equal%s, per-step logits max |Δ| %.3g (bound %.3g), %lld positions, "
          "window %d",
          qPrintable(name), qPrintable(what), agreed, static_cast<long long>(B * N),
          partings.isEmpty() ? "" : qPrintable(", parted at " + partings.join(", ")), worst, k->tol,
          static_cast<long long>(total), window);
      QVERIFY2(worst <= k->tol,
               qPrintable(QString("%1, %2: per-step logits max |HeadScope − transformers| %3 > "
                                  "bound %4")
                              .arg(name, what)
                              .arg(worst)
                              .arg(k->tol)));
      if (window > 0)
        QVERIFY2(total > 2 * window, qPrintable(QString("%1: %2 positions do not go well past the window %3")
                                                    .arg(name)
                                                    .arg(total)
                                                    .arg(window)));
    }
  }
 private Q_SLOTS:
  void initTestCase() {
    HS_REQUIRE_REFERENCE_ENV();
    QVERIFY(dir_.isValid());
    QStringList args{"--out", dir_.path()};
    // A subset while working on one family: HEADSCOPE_HF_VARIANTS=llama,gemma2.
    if (qEnvironmentVariableIsSet("HEADSCOPE_HF_VARIANTS"))
      args << "--variants" << qEnvironmentVariable("HEADSCOPE_HF_VARIANTS");
    QElapsedTimer timer;
    timer.start();
    QString error;
    hs::test::runReferencePython("hf_interventions.py", args, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    index_ = readJson(dir_.path().toStdString() + "/index.json");
    QVERIFY2(!index_.empty(), "hf_interventions.py wrote no case");
    qInfo("transformers' side: %zu cases in %.1f s", index_.size(), timer.elapsed() / 1000.0);
  }

  // Every edit of hf_interventions.py through HeadScope's Intervention on hook_z; logits at every position.
  void headInterventions_data() { addVariantRows(); }
  void headInterventions() {
    QFETCH(QString, name);
    guarded(name, [&] { checkInterventions(name); });
  }

  // A left-padded batch: at the real positions, HeadScope's padded batch and each row alone equal
  // transformers' padded batch.
  void leftPaddedBatch_data() { addVariantRows(); }
  void leftPaddedBatch() {
    QFETCH(QString, name);
    guarded(name, [&] { checkLeftPadded(name); });
  }

  // Greedy decoding through the KV cache against generate(do_sample=False): one prompt through
  // generateGreedy (as is, and with heads zeroed during the prefill, a pre-hook active only while the
  // prompt runs in transformers), and a left-padded batch through the KV-cache loop generateGreedy runs
  // (RunRequest with a KVCache and the attention mask; HeadScope has no batched generate call). The tokens
  // must be equal; where they part, the two best logits of transformers at that step must be within 2 × the
  // bound (a near-tie random weights can make: each side's logits are within the bound of the other's). The
  // logits of every step up to a parting are compared too.
  void greedyGeneration_data() { addVariantRows(); }
  void greedyGeneration() {
    QFETCH(QString, name);
    guarded(name, [&] { checkGeneration(name); });
  }
};

QTEST_GUILESS_MAIN(TestHfInterventions)
#include "test_hf_interventions.moc"
