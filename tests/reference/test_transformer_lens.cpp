// HeadScope's hook sites against TransformerLens's hooks of the same name. tl_reference.py writes a random
// GPT-2- and a Llama-shaped (GQA) checkpoint as transformers saves it, boots TransformerLens on each folder
// (TransformerBridge with the HookedTransformer names and no weight processing: TransformerLens 4.x has no
// HookedTransformer class) and records its hooks on 2 × 14 tokens; HeadScope loads the same folders and must
// hold the same tensor under the same name:
//   blocks.{l}.hook_resid_pre / hook_resid_mid / hook_resid_post / hook_attn_out / hook_mlp_out, and
//   blocks.{l}.attn.hook_q / hook_pattern / hook_z, logits      the same tensor
//   blocks.{l}.attn.hook_k / hook_v                              ours per query head, TransformerLens's per
//   kv
//                                                                head (hooks.h): ours [:, :, h] = its
//                                                                [:, :, h / group]
//   ln_final.hook_out                                            the final norm's output (weight and bias
//                                                                applied: what the unembedding reads); its
//                                                                hook_normalized (before the weight) is not a
//                                                                site of ours, checked as (ours − b) / w
// and patching the clean row into the corrupt one at a site (TransformerLens: run_with_hooks; HeadScope: a
// replace intervention) must give the same logits.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/hooks.h"
#include "model/io/safetensors.h"
#include "model/load/model_loader.h"
#include "reference_env.h"

namespace {

// float32 on both sides, the same weights; the two differ only in the order of summation (GEMM blocking,
// fused vs separate norm arithmetic), ~1e-7 relative per operation. Logits: the 1e-4. Patterns are
// probabilities (≤ 1): 1e-5 absolute. Every other tensor grows with depth, so its bound is relative to its
// largest |value|: 1e-5 × max(1, max |TransformerLens|). Measured differences are 10-100× below these
// (qInfo lines); a wrong site placement (before/after a norm, RoPE or bias) moves values by O(1).
constexpr double kLogits = 1e-4;
constexpr double kPattern = 1e-5;
constexpr double kRelative = 1e-5;

double maxAbsDiff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

double relativeBound(const at::Tensor& ref) {
  return kRelative * std::max(1.0, ref.abs().max().item<double>());
}

// Our site for a TransformerLens hook name (its names are ours, by construction of the table).
hs::Site siteOf(const std::string& tlName) {
  return hs::Site::parse(tlName);
}

}  // namespace

class TestTransformerLens : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;

  std::string path(const QString& family, const char* suffix = "") const {
    return (dir_.path() + "/" + family + suffix).toStdString();
  }

 private Q_SLOTS:
  void initTestCase() {
    HS_REQUIRE_REFERENCE_ENV();
    QVERIFY(dir_.isValid());
    QString error;
    const QString out =
        hs::test::runReferencePython("tl_reference.py", {"hooks", "--out", dir_.path()}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    QVERIFY2(out.contains("\"gpt2\"") && out.contains("\"llama\""), qPrintable(out));
  }

  void sameNameSameTensor_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<int>("group");  // query heads per kv head
    QTest::newRow("gpt2") << "gpt2" << 1;
    QTest::newRow("llama-gqa") << "llama" << 2;
  }

  void sameNameSameTensor() {
    QFETCH(QString, family);
    QFETCH(int, group);
    const hs::LoadedModel m = hs::loadModel(path(family));
    const hs::ModelConfig& c = m.config;
    QCOMPARE(c.n_heads / c.n_kv_heads, group);
    const auto tl = hs::SafetensorsFile::open(path(family, "-tl.safetensors"));
    const at::Tensor tokens = tl->tensor("tokens").clone();  // [batch, pos]

    hs::RunRequest req;
    req.tokens = tokens;
    for (const hs::SiteInfo& info : hs::siteTable())
      for (int l = 0; l < c.n_layers; ++l)
        if (info.kind != hs::SiteKind::LnFinal && info.kind != hs::SiteKind::AttnResult)
          req.capture.insert({info.kind, l});
    req.capture.insert(hs::lnFinal());
    at::NoGradGuard noGrad;
    const hs::RunResult r = m.model->run(req);

    QStringList failures;  // every hook outside its bound, reported at once
    struct Worst {
      double delta = 0, ofBound = 0;  // over the layers: the largest max |Δ|, the largest max |Δ| / bound
    };
    std::map<std::string, Worst> worst;  // per hook kind, for the log
    const auto check = [&](const std::string& name, const std::string& kind, const at::Tensor& ours,
                           const at::Tensor& theirs, double bound) {
      if (ours.sizes() != theirs.sizes()) {
        failures << QString("%1 %2: shape %3, TransformerLens %4")
                        .arg(family, QString::fromStdString(name),
                             QString::fromStdString(c10::str(ours.sizes())),
                             QString::fromStdString(c10::str(theirs.sizes())));
        return;
      }
      const double d = maxAbsDiff(ours, theirs);
      worst[kind].delta = std::max(worst[kind].delta, d);
      worst[kind].ofBound = std::max(worst[kind].ofBound, d / bound);
      if (!(d <= bound))
        failures << QString("%1 %2: max |Δ| %3 > bound %4 (max |TransformerLens| %5)")
                        .arg(family, QString::fromStdString(name))
                        .arg(d, 0, 'g', 3)
                        .arg(bound, 0, 'g', 3)
                        .arg(theirs.abs().max().item<double>(), 0, 'g', 3);
    };

    const at::Tensor logits = tl->tensor("logits");    // [batch, pos, vocab]
    QVERIFY(logits.abs().max().item<double>() > 2.0);  // not degenerate
    check("logits", "logits", r.logits, logits, kLogits);
    for (int l = 0; l < c.n_layers; ++l) {
      const std::string b = "blocks." + std::to_string(l) + ".";
      for (const char* hook : {"hook_resid_pre", "attn.hook_q", "attn.hook_z", "hook_attn_out",
                               "hook_resid_mid", "hook_mlp_out", "hook_resid_post"}) {
        const at::Tensor theirs = tl->tensor(b + hook);
        check(b + hook, hook, r.cache.at(siteOf(b + hook)), theirs, relativeBound(theirs));
      }
      const at::Tensor pattern = tl->tensor(b + "attn.hook_pattern");  // [batch, head, q, k]
      // Peaked enough that a wrong mask, scale or RoPE could not hide in a nearly uniform pattern.
      QVERIFY2(pattern.amax(-1).mean().item<double>() > 0.4, qPrintable(family + " layer patterns too flat"));
      check(b + "attn.hook_pattern", "attn.hook_pattern", r.cache.at(hs::attnPattern(l)), pattern, kPattern);
      // hook_k / hook_v: TransformerLens's [batch, pos, kv_head, d_head], ours per query head.
      for (const char* hook : {"attn.hook_k", "attn.hook_v"}) {
        const at::Tensor theirs = tl->tensor(b + hook);  // [batch, pos, kv_head, d_head]
        QCOMPARE(theirs.size(2), int64_t(c.n_kv_heads));
        check(b + hook + " (per query head)", hook, r.cache.at(siteOf(b + hook)),
              theirs.repeat_interleave(group, 2), relativeBound(theirs));
      }
    }
    // ln_final.hook_out is the same name on both sides; TransformerLens's hook_normalized, which HeadScope
    // does not capture, is ours before the weight (and bias): (ours − b) / w.
    const at::Tensor out = tl->tensor("ln_final.hook_out");  // [batch, pos, d_model]
    const at::Tensor ours = r.cache.at(hs::lnFinal());       // [batch, pos, d_model]
    check("ln_final.hook_out", "ln_final", ours, out, relativeBound(out));
    const hs::ModelWeights& w = m.model->weights();
    const at::Tensor unweighted =
        (w.final_norm_b.defined() ? ours - w.final_norm_b : ours) / w.final_norm_w;  // [batch, pos, d_model]
    const at::Tensor normalized = tl->tensor("ln_final.hook_normalized");
    check("its ln_final.hook_normalized = (ours - b) / w", "ln_final", unweighted, normalized,
          relativeBound(normalized));

    QStringList summary;
    for (const auto& [kind, w] : worst)
      summary << QString("%1 %2 (%3 of its bound)")
                     .arg(QString::fromStdString(kind))
                     .arg(w.delta, 0, 'g', 2)
                     .arg(w.ofBound, 0, 'g', 2);
    qInfo("%s: max |Δ| per hook over the layers: %s", qPrintable(family), qPrintable(summary.join(", ")));
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join('\n')));
  }

  void patchingMatchesRunWithHooks_data() { sameNameSameTensor_data(); }

  // Each patch of tl_reference.py's PATCHES: the clean row's value written into the corrupt row's run at one
  // hook (selected heads / positions), TransformerLens by run_with_hooks, HeadScope by a replace
  // intervention; a TransformerLens kv head j at hook_k / hook_v is our query heads j·group …
  // j·group+group−1.
  void patchingMatchesRunWithHooks() {
    QFETCH(QString, family);
    QFETCH(int, group);
    const hs::LoadedModel m = hs::loadModel(path(family));
    const auto tl = hs::SafetensorsFile::open(path(family, "-tl.safetensors"));
    const at::Tensor tokens = tl->tensor("tokens").clone();  // [batch, pos]: clean, corrupt
    const nlohmann::json patches = nlohmann::json::parse(tl->metadata().at("patches"));
    QVERIFY(!patches.empty());
    at::NoGradGuard noGrad;
    const at::Tensor corruptLogits = tl->tensor("logits").narrow(0, 1, 1);  // [1, pos, vocab]
    for (size_t i = 0; i < patches.size(); ++i) {
      const nlohmann::json& p = patches[i];
      const std::string hook = p["hook"];
      const hs::Site site = siteOf(hook);
      hs::RunRequest clean;
      clean.tokens = tokens.narrow(0, 0, 1);  // [1, pos]
      clean.capture = {site};
      hs::Intervention iv;
      iv.site = site;
      iv.op = hs::InterventionOp::Replace;
      iv.tensor = m.model->run(clean).cache.at(site);  // the full site shape: indexed like the site
      const bool kvSite = site.kind == hs::SiteKind::AttnK || site.kind == hs::SiteKind::AttnV;
      if (!p["heads"].is_null())
        for (int h : p["heads"])
          for (int g = 0; g < (kvSite ? group : 1); ++g)
            iv.heads.push_back(kvSite ? h * group + g : h);
      if (!p["positions"].is_null())
        for (int q : p["positions"])
          iv.positions.push_back(q);
      hs::RunRequest corrupt;
      corrupt.tokens = tokens.narrow(0, 1, 1);  // [1, pos]
      corrupt.interventions = {iv};
      const at::Tensor ours = m.model->run(corrupt).logits;  // [1, pos, vocab]
      const at::Tensor theirs = tl->tensor("patch." + std::to_string(i));
      const double moved = maxAbsDiff(theirs, corruptLogits);
      const double d = maxAbsDiff(ours, theirs);
      qInfo(
          "%s: patch %s heads %s positions %s: max |Δ logits| %.2g (bound %g; the patch moves them by %.3g)",
          qPrintable(family), hook.c_str(), p["heads"].dump().c_str(), p["positions"].dump().c_str(), d,
          kLogits, moved);
      QVERIFY2(moved > 1e-2,
               qPrintable(QString("%1 %2: the patch changes nothing").arg(family).arg(hook.c_str())));
      QVERIFY2(
          d <= kLogits,
          qPrintable(QString("%1 patch at %2 (TransformerLens heads %3, positions %4): max |Δ "
                             "logits| %5 > %6")
                         .arg(family, QString::fromStdString(hook), QString::fromStdString(p["heads"].dump()),
                              QString::fromStdString(p["positions"].dump()))
                         .arg(d)
                         .arg(kLogits)));
    }
  }
};

QTEST_GUILESS_MAIN(TestTransformerLens)
#include "test_transformer_lens.moc"
