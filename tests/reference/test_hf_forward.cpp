// Every family against transformers: hf_forward.py builds each variant of hf_models.py from its
// transformers config (random init, fixed seed, eager attention), saves it as transformers saves it
// (float32 and bfloat16) and records transformers' forward on 2 × 24 tokens; HeadScope loads each folder
// as stored and must give the same tensors through its own hook points:
//   logits                          ↔ logits
//   blocks.{l}.attn.hook_pattern    ↔ output_attentions[l]                  [batch, head, q, k]
//   blocks.{l}.hook_resid_pre       ↔ output_hidden_states[l]               [batch, pos, d_model]
//   blocks.{l}.hook_resid_post      ↔ output_hidden_states[l + 1]; the last layer's from a forward hook on
//                                     it, since transformers' last hidden state is after the final norm
//   ln_final.hook_out               ↔ output_hidden_states[n_layers] (the final norm's output, scale applied)
//   blocks.{l}.attn.hook_z          ↔ the input of o_proj / c_proj / dense  [batch, pos, heads*d_head]
// Gemma's scaled embeddings are in both resid_pre 0 and hidden state 0. The prompt (24 positions) is
// longer than every sliding window (8), so the windows bite.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/hooks.h"
#include "model/io/safetensors.h"
#include "model/load/architecture.h"
#include "model/load/config_json.h"
#include "model/load/model_loader.h"
#include "reference_env.h"

namespace {

// float32: the bound for logits (measured ≤ 5.5e-6). The two sides compute in the same precision
// and differ only in summation order (GEMM blocking), ~1e-7 relative per operation. Patterns are
// probabilities (≤ 1): 1e-5 absolute (measured ≤ 7.8e-7). Residual streams, z and the final norm grow with
// depth and Gemma's √d_model embedding scale, so their bound is relative to the tensor's largest |value|:
// 1e-5 × max(1, max |ref|) (measured ≤ 6e-6 absolute).
constexpr double kF32Logits = 1e-4;
constexpr double kF32Pattern = 1e-5;
constexpr double kF32Relative = 1e-5;

// bfloat16 keeps 8 significant bits: one rounding moves a value by up to 2^-9 of it (0.2 %). transformers
// rounds every activation to bf16 (the residual stream after each block included) while HeadScope keeps
// the residual stream, norms, softmax and logits in float32 (docs/models.md, Numerics), so the two sides
// round at different places. Measured on these models, transformers' bf16 result is up to 4.2 % of the
// tensor's largest |value| away from the float32 result of the same weights (llama3's z), HeadScope's at most
// 1.34× as far as transformers' on every kind of tensor, and the two differ from each other by up to 3.3 %
// (z) and 2.5 % (logits). The bound is 5 % of the tensor's largest |value| (logits: of the largest |logit|,
// ~5 → 0.25), and 0.05 absolute for patterns (measured ≤ 0.025; transformers' own bf16 patterns stray up to
// 0.032). A wrong RoPE, window, scale or soft-cap moves logits by 12-120 % of that scale
// (detectsConfigMistakes), far outside. Besides, HeadScope's bf16 must be about as accurate as
// transformers': its largest distance from the float32 result, per kind of tensor, at most kBf16Accuracy ×
// transformers' (measured ≤ 1.34×).
constexpr double kBf16Relative = 0.05;
constexpr double kBf16Pattern = 0.05;
constexpr double kBf16Accuracy = 2.0;

struct Delta {
  double max = 0;
  QString where;  // index of the largest |Δ| and both values there
};

// max |ours − ref| and where it is; shapes must agree.
Delta delta(const at::Tensor& ours, const at::Tensor& ref) {
  const at::Tensor a = ours.to(at::kDouble), b = ref.to(at::kDouble);
  const at::Tensor diff = (a - b).abs().flatten();
  Delta d;
  const int64_t worst = diff.argmax().item<int64_t>();
  d.max = diff[worst].item<double>();
  std::vector<int64_t> index(size_t(a.dim()));
  int64_t rest = worst;
  for (int64_t i = a.dim() - 1; i >= 0; --i) {
    index[size_t(i)] = rest % a.size(i);
    rest /= a.size(i);
  }
  QStringList parts;
  for (int64_t i : index)
    parts << QString::number(i);
  d.where = QString("at [%1] (ours %2, transformers %3)")
                .arg(parts.join(", "))
                .arg(a.flatten()[worst].item<double>(), 0, 'g', 7)
                .arg(b.flatten()[worst].item<double>(), 0, 'g', 7);
  return d;
}

nlohmann::json readJson(const QString& path) {
  std::ifstream in(path.toStdString());
  return nlohmann::json::parse(in);
}

// Every variant of hf_models.py, with the architecture HeadScope must detect from its config.json.
const std::vector<std::pair<const char*, hs::Architecture>>& variants() {
  static const std::vector<std::pair<const char*, hs::Architecture>> v = {
      {"gpt2", hs::Architecture::Gpt2},
      {"gpt2-untied", hs::Architecture::Gpt2},
      {"llama", hs::Architecture::Llama},
      {"llama-mha", hs::Architecture::Llama},
      {"llama3", hs::Architecture::Llama},
      {"llama3-v4config", hs::Architecture::Llama},
      {"llama-linear-v4config", hs::Architecture::Llama},
      {"llama-tied", hs::Architecture::Llama},
      {"llama-tied-lmhead", hs::Architecture::Llama},
      {"llama-tied-embed", hs::Architecture::Llama},
      {"mistral", hs::Architecture::Mistral},
      {"qwen2", hs::Architecture::Qwen2},
      {"qwen2-window", hs::Architecture::Qwen2},
      {"qwen3", hs::Architecture::Qwen3},
      {"qwen3-layer-types", hs::Architecture::Qwen3},
      {"gpt_neox", hs::Architecture::GptNeoX},
      {"gpt_neox-v4config", hs::Architecture::GptNeoX},
      {"gpt_neox-sequential", hs::Architecture::GptNeoX},
      {"olmo2", hs::Architecture::Olmo2},
      {"gemma2", hs::Architecture::Gemma2},
      {"gemma3_text", hs::Architecture::Gemma3},
      {"gemma3_text-v4config", hs::Architecture::Gemma3},
  };
  return v;
}

}  // namespace

// A config mistake for detectsConfigMistakes.
using Mistake = std::function<void(hs::ModelConfig&)>;
Q_DECLARE_METATYPE(Mistake)

class TestHfForward : public QObject {
  Q_OBJECT

  QTemporaryDir out_;  // every variant's checkpoint and reference, written once by hf_forward.py
  nlohmann::json manifest_;

  QString folder(const QString& variant, const QString& dtype) const {
    return out_.path() + "/" + variant + "-" + dtype;
  }

 private Q_SLOTS:
  void initTestCase() {
    HS_REQUIRE_REFERENCE_ENV();
    QVERIFY(out_.isValid());
    QString error;
    hs::test::runReferencePython("hf_forward.py", {"--out", out_.path()}, &error);
    QVERIFY2(error.isEmpty(), qPrintable(error));
    manifest_ = readJson(out_.path() + "/manifest.json");
  }

  // A variant added to hf_models.py without a row here would go unchecked.
  void everyVariantHasARow() {
    std::vector<std::string> ours, theirs = manifest_.at("all_variants").get<std::vector<std::string>>();
    for (const auto& v : variants())
      ours.push_back(v.first);
    std::sort(ours.begin(), ours.end());
    std::sort(theirs.begin(), theirs.end());
    QVERIFY2(ours == theirs, qPrintable(QString("rows %1 vs hf_models.VARIANTS %2")
                                            .arg(QString::fromStdString(nlohmann::json(ours).dump()),
                                                 QString::fromStdString(nlohmann::json(theirs).dump()))));
  }

  void forward_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<int>("arch");
    for (const auto& v : variants())
      for (const char* dtype : {"float32", "bfloat16"})
        QTest::newRow(qPrintable(QString("%1 %2").arg(v.first, dtype)))
            << QString(v.first) << QString(dtype) << int(v.second);
  }

  void forward() {
    QFETCH(QString, variant);
    QFETCH(QString, dtype);
    QFETCH(int, arch);
    const bool f32 = dtype == "float32";
    const QString dir = folder(variant, dtype);

    hs::LoadOptions opts;
    opts.dtype = dtype.toStdString();  // as stored
    const hs::LoadedModel m = hs::loadModel((dir + "/model").toStdString(), opts);
    const hs::ModelConfig& c = m.config;
    QCOMPARE(int(c.arch), arch);
    QCOMPARE(m.model->dtype(), f32 ? at::kFloat : at::kBFloat16);
    QCOMPARE(c.tied_embeddings, manifest_.at("tied").at(variant.toStdString()).get<bool>());
    const int L = c.n_layers;
    QCOMPARE(L, manifest_.at("n_layers").at(variant.toStdString()).get<int>());

    const hs::SafetensorsCheckpoint ref =
        hs::SafetensorsCheckpoint::open((dir + "/reference.safetensors").toStdString());
    const at::Tensor tokens = ref.tensor("tokens").clone();  // [batch, pos]
    QVERIFY(tokens.size(1) > c.sliding_window);              // windows (where any) bite
    const at::Tensor refLogits = ref.tensor("logits");       // [batch, pos, vocab]
    // Not degenerate: logits of order 1-10 that vary across positions and tokens.
    QVERIFY(refLogits.abs().max().item<double>() > 2.0);
    QVERIFY(refLogits.to(at::kDouble).std().item<double>() > 0.5);

    hs::RunRequest req;
    req.tokens = tokens;
    for (int l = 0; l < L; ++l)
      req.capture.insert({hs::residPre(l), hs::residPost(l), hs::attnPattern(l), hs::attnZ(l)});
    req.capture.insert(hs::lnFinal());
    const hs::RunResult r = m.model->run(req);

    // Per kind of tensor, the largest |ours − transformers| and, in bf16, each side's distance from the
    // float32 result of the same weights (upcast.*): how far each side's bf16 arithmetic strays.
    struct Worst {
      double vsTransformers = 0, theirError = 0, ourError = 0;
    };
    std::map<QString, Worst> worst;
    QStringList failures;  // every site outside its bound, reported at once
    const auto check = [&](const QString& kind, const QString& site, const at::Tensor& ours,
                           const std::string& key) {
      const at::Tensor theirs = ref.tensor(key);
      if (ours.sizes() != theirs.sizes()) {
        failures << QString("%1 %2 %3: shape %4 vs transformers %5")
                        .arg(variant, dtype, site, QString::fromStdString(c10::str(ours.sizes())),
                             QString::fromStdString(c10::str(theirs.sizes())));
        return;
      }
      // Residual-like tensors grow with depth and Gemma's √d_model embedding scale: bounds relative to the
      // tensor's largest |value|; patterns (≤ 1) absolute; logits absolute in float32 (the 1e-4).
      const double scale = std::max(1.0, theirs.abs().max().item<double>());
      double bound = 0;
      if (kind == "pattern")
        bound = f32 ? kF32Pattern : kBf16Pattern;
      else if (kind == "logits" && f32)
        bound = kF32Logits;
      else
        bound = (f32 ? kF32Relative : kBf16Relative) * scale;
      const Delta d = delta(ours, theirs);
      Worst& w = worst[kind];
      w.vsTransformers = std::max(w.vsTransformers, d.max);
      if (!f32) {
        const at::Tensor exact = ref.tensor("upcast." + key);
        w.theirError = std::max(w.theirError, delta(theirs, exact).max);
        w.ourError = std::max(w.ourError, delta(ours, exact).max);
      }
      if (!(d.max <= bound))
        failures << QString("%1 %2 %3: max |Δ| %4 > bound %5 %6")
                        .arg(variant, dtype, site)
                        .arg(d.max, 0, 'g', 3)
                        .arg(bound, 0, 'g', 3)
                        .arg(d.where);
    };

    check("logits", "logits", r.logits, "logits");
    for (int l = 0; l < L; ++l) {
      const QString b = QString("blocks.%1.").arg(l);
      const std::string n = std::to_string(l);
      check("pattern", b + "attn.hook_pattern", r.cache.at(hs::attnPattern(l)), "pattern." + n);
      check("resid", b + "hook_resid_pre", r.cache.at(hs::residPre(l)), "hidden." + n);
      check("resid", b + "hook_resid_post", r.cache.at(hs::residPost(l)),
            l + 1 < L ? "hidden." + std::to_string(l + 1) : "resid_post_last");
      const at::Tensor z = r.cache.at(hs::attnZ(l));  // [batch, pos, head, d_head]
      QCOMPARE(z.size(2), int64_t(c.n_heads));
      check("z", b + "attn.hook_z", z.reshape({z.size(0), z.size(1), -1}),
            "z." + n);  // [batch, pos, heads*d_head]
    }
    check("ln_final", "ln_final.hook_out", r.cache.at(hs::lnFinal()), "hidden." + std::to_string(L));

    QStringList summary;
    for (const char* kind : {"logits", "pattern", "resid", "z", "ln_final"}) {
      const Worst& w = worst[kind];
      if (!f32 && !(w.ourError <= kBf16Accuracy * w.theirError))
        failures << QString(
                        "%1 %2 %3: our bf16 strays %4 from the float32 result, more than %5 × "
                        "transformers' %6")
                        .arg(variant, dtype, kind)
                        .arg(w.ourError, 0, 'g', 3)
                        .arg(kBf16Accuracy)
                        .arg(w.theirError, 0, 'g', 3);
      summary << (f32 ? QString("%1 %2").arg(kind).arg(w.vsTransformers, 0, 'g', 3)
                      : QString("%1 %2 (from float32: transformers %3, ours %4)")
                            .arg(kind)
                            .arg(w.vsTransformers, 0, 'g', 3)
                            .arg(w.theirError, 0, 'g', 3)
                            .arg(w.ourError, 0, 'g', 3));
    }
    qInfo("%s %s (max |logit| %.3g): max |Δ| %s", qPrintable(variant), qPrintable(dtype),
          refLogits.abs().max().item<double>(), qPrintable(summary.join(", ")));
    QVERIFY2(failures.isEmpty(), qPrintable(failures.join('\n')));
  }

  // A bf16 checkpoint loaded as float32 holds exactly the bf16 weights, so it must match transformers
  // running the same model upcast to float32 within the float32 bound.
  void bf16CheckpointAsFloat32_data() {
    QTest::addColumn<QString>("variant");
    for (const auto& v : variants())
      QTest::newRow(v.first) << QString(v.first);
  }

  void bf16CheckpointAsFloat32() {
    QFETCH(QString, variant);
    const QString dir = folder(variant, "bfloat16");
    hs::LoadOptions opts;
    opts.dtype = "float32";
    const hs::LoadedModel m = hs::loadModel((dir + "/model").toStdString(), opts);
    QCOMPARE(m.config.dtype, std::string("bfloat16"));
    QCOMPARE(m.model->dtype(), at::kFloat);
    const hs::SafetensorsCheckpoint ref =
        hs::SafetensorsCheckpoint::open((dir + "/reference.safetensors").toStdString());
    hs::RunRequest req;
    req.tokens = ref.tensor("tokens").clone();  // [batch, pos]
    const Delta d = delta(m.model->run(req).logits, ref.tensor("upcast.logits"));
    qInfo("%s bfloat16 as float32: max |Δ| logits %.3g", qPrintable(variant), d.max);
    QVERIFY2(d.max <= kF32Logits,
             qPrintable(QString("%1 bfloat16 checkpoint as float32: logits max |Δ| %2 > %3 %4")
                            .arg(variant)
                            .arg(d.max, 0, 'g', 3)
                            .arg(kF32Logits)
                            .arg(d.where)));
  }

  // The comparison is sharp: the same float32 weights read under a config with one mistake HeadScope could
  // make (a window off by one, a soft-cap left out, the wrong attention scale or RoPE) are far outside the
  // bound; positions a window does not reach yet are not.
  void detectsConfigMistakes_data() {
    QTest::addColumn<QString>("variant");
    QTest::addColumn<QString>("what");
    QTest::addColumn<Mistake>("mistake");
    using C = hs::ModelConfig&;
    const auto row = [](const char* v, const char* what, Mistake f) {
      QTest::newRow(qPrintable(QString("%1 %2").arg(v, what))) << QString(v) << QString(what) << f;
    };
    row("mistral", "window + 1", [](C c) { c.sliding_window += 1; });
    row("mistral", "window - 1", [](C c) { c.sliding_window -= 1; });
    row("mistral", "no window", [](C c) { c.layer_attention.clear(); });
    row("qwen2-window", "layer 0 sliding (max_window_layers off by one)",
        [](C c) { c.layer_attention.at(0) = hs::LayerAttention::Sliding; });
    row("qwen3-layer-types", "layer_types swapped",
        [](C c) { std::swap(c.layer_attention.at(0), c.layer_attention.at(1)); });
    row("gemma2", "no attention soft-cap", [](C c) { c.attn_logit_softcap = 0; });
    row("gemma2", "no final soft-cap", [](C c) { c.final_logit_softcap = 0; });
    row("gemma2", "1/sqrt(head_dim) scaling", [](C c) { c.query_pre_attn_scalar = 0; });
    row("gemma2", "odd layers sliding",
        [](C c) { std::swap(c.layer_attention.at(0), c.layer_attention.at(1)); });
    row("gemma2", "embeddings unscaled", [](C c) { c.scale_embeddings = false; });
    row("gemma3_text", "global RoPE on local layers", [](C c) { c.rope_local_theta = 0; });
    row("gemma3_text", "RMSNorm without 1 + w", [](C c) { c.norm_weight_offset = false; });
    row("gemma3_text", "global layers unscaled", [](C c) { c.rope_scaling = hs::RopeScaling{}; });
    row("llama3", "interleaved RoPE pairs", [](C c) { c.rope_layout = hs::RopeLayout::Interleaved; });
    row("llama3", "llama3 scaling ignored", [](C c) { c.rope_scaling = hs::RopeScaling{}; });
    row("llama-linear-v4config", "linear scaling ignored", [](C c) { c.rope_scaling = hs::RopeScaling{}; });
    row("gpt_neox", "full rotary", [](C c) { c.rotary_dim = c.d_head; });
    row("gpt_neox", "sequential residual", [](C c) { c.parallel_residual = false; });
  }

  void detectsConfigMistakes() {
    QFETCH(QString, variant);
    QFETCH(QString, what);
    QFETCH(Mistake, mistake);
    const std::string dir = folder(variant, "float32").toStdString();
    const hs::SafetensorsCheckpoint ref = hs::SafetensorsCheckpoint::open(dir + "/reference.safetensors");
    const at::Tensor tokens = ref.tensor("tokens").clone();  // [batch, pos]
    const at::Tensor want = ref.tensor("logits");            // [batch, pos, vocab]
    const hs::ModelConfig good = hs::readHfConfig(dir + "/model/config.json");
    auto ckpt =
        std::make_shared<const hs::SafetensorsCheckpoint>(hs::SafetensorsCheckpoint::open(dir + "/model"));
    const auto logitsWith = [&](const hs::ModelConfig& c) {
      hs::SafetensorsLookup lookup(ckpt);
      hs::Transformer t(c, hs::mapWeights(c, lookup, dir));
      hs::RunRequest req;
      req.tokens = tokens;
      return t.run(req).logits;  // [batch, pos, vocab]
    };
    const double right = delta(logitsWith(good), want).max;
    QVERIFY2(right <= kF32Logits, qPrintable(QString("%1 as read: max |Δ| %2").arg(variant).arg(right)));
    hs::ModelConfig bad = good;
    mistake(bad);
    const at::Tensor wrong = logitsWith(bad);
    const double diff = delta(wrong, want).max;
    qInfo("%s with %s: max |Δ| %.3g", qPrintable(variant), qPrintable(what), diff);
    // 100× the float32 bound: a mistake is not rounding.
    QVERIFY2(diff > 100 * kF32Logits,
             qPrintable(QString("%1 with %2 is indistinguishable: max |Δ| %3").arg(variant, what).arg(diff)));
    if (what == "no window") {  // the first `window` positions never reach past it
      const int64_t w = good.sliding_window;
      const double early = delta(wrong.narrow(1, 0, w), want.narrow(1, 0, w)).max;
      QVERIFY2(early <= kF32Logits, qPrintable(QString("first %1 positions: max |Δ| %2").arg(w).arg(early)));
    }
  }
};

QTEST_GUILESS_MAIN(TestHfForward)
#include "test_hf_forward.moc"
