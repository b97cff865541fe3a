// The evaluate method: mean ablation takes its means from the mean source (a neutral corpus by default:
// on the toy model the toy world's own text), never the task's prompts unless asked; patches and steering
// take the clean ICL mean at N by default, or a chosen ICL prompt's or a text's z, and steering can add the
// head's write to another layer's residual stream — each equal to the intervention built by hand. Its run
// records the mean source and the prompts it scored.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <QtTest>

#include "analysis/methods/evaluate.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/icl_accuracy.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "util/error.h"

class TestEvaluate : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;
  std::unique_ptr<hs::IclTask> task_;

  // icl_intervened's (accuracy, TR ratio, first predictions' log-probability) from a run's summary.
  static std::pair<double, double> intervened(const hs::AnalysisOutput& out) {
    const auto& s = out.run.summary.at("icl_intervened");
    return {s.at("accuracy").get<double>(), s.at("tr_ratio").get<double>()};
  }

 private Q_SLOTS:
  void initTestCase() {
    at::set_num_threads(1);
    toy_ = hs::loadModel("toy");
    hs::TaskSpec spec;  // toy:category_label, 8 shots
    spec.n_prompts = 24;
    task_ = std::make_unique<hs::IclTask>(hs::buildIclTask(*toy_.tokenizer, spec));
  }

  void meanAblationUsesTheMeanSource() {
    const std::vector<hs::HeadRef> heads = {{3, 0}, {3, 3}, {3, 5}, {3, 6}, {2, 7}, {1, 1}, {1, 2}};
    hs::EvaluateOptions o;
    o.mean_ablate = heads;
    const hs::AnalysisOutput out = hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
    // The same ablation by hand with the toy world's corpus mean.
    hs::IclEvalOptions eo;
    eo.label_tokens = task_->label_tokens;
    eo.interventions =
        hs::meanHeads(heads, hs::meanZ(*toy_.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions));
    const hs::IclEval want = hs::evaluateIcl(*toy_.model, task_->icl, eo);
    QCOMPARE(intervened(out).first, want.accuracy);
    QCOMPARE(intervened(out).second, want.tr_ratio);
    const std::string what = out.run.options.at("mean_source_description").get<std::string>();
    QVERIFY2(what.find("toy world") != std::string::npos, what.c_str());
    // The task's clean mean at N (what mean ablation used before) is another intervention.
    eo.interventions =
        hs::meanHeads(heads, hs::meanZ(*toy_.model, hs::tokenSeqs(task_->icl), hs::ZMean::LastPosition));
    const hs::IclEval clean = hs::evaluateIcl(*toy_.model, task_->icl, eo);
    qInfo("7 heads mean-ablated: corpus mean acc %.3f TR %.3f; task's clean mean at N acc %.3f TR %.3f",
          want.accuracy, want.tr_ratio, clean.accuracy, clean.tr_ratio);
    // mean_source task: the all-position mean of the task's prompts.
    o.mean.source = "task";
    const hs::AnalysisOutput own = hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
    eo.interventions =
        hs::meanHeads(heads, hs::meanZ(*toy_.model, hs::tokenSeqs(task_->icl), hs::ZMean::AllPositions));
    QCOMPARE(intervened(own).first, hs::evaluateIcl(*toy_.model, task_->icl, eo).accuracy);
    QCOMPARE(own.run.options.at("mean_source_description").get<std::string>(),
             std::string("all positions of the task's prompts"));
  }

  // hook_z of `head` at the last position of `ids`, from a plain forward: [d_head].
  at::Tensor zAtLast(const std::vector<int64_t>& ids, hs::HeadRef head) const {
    hs::RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    req.capture.insert(hs::attnZ(head.layer));
    return toy_.model->run(req).cache.at(hs::attnZ(head.layer))[0][-1][head.head].to(at::kFloat);
  }

  // The run's zero-shot numbers against evaluateIcl on the zero-shot prompts with `ivs`: accuracy and every
  // prompt's answer probability after the interventions.
  void compareZeroShot(const hs::AnalysisOutput& out, const std::vector<hs::Intervention>& ivs) {
    hs::IclEvalOptions eo;
    eo.label_tokens = task_->label_tokens;
    eo.interventions = ivs;
    const hs::IclEval want = hs::evaluateIcl(*toy_.model, task_->zero_shot, eo);
    QCOMPARE(out.run.summary.at("zero_shot_intervened").at("accuracy").get<double>(), want.accuracy);
    const hs::Table* per = hs::test::findById(out.run.tables, "evaluate.prompts");
    QVERIFY(per);
    size_t i = 0;
    double moved = 0;
    for (const auto& row : per->rows) {
      if (row[0] != "zero_shot") continue;
      const double got = row[7].get<double>(), expect = std::exp(want.answer_logprob[i++]);
      QVERIFY2(std::abs(got - expect) < 1e-5,
               qPrintable(QString("prompt %1: %2 vs %3").arg(i).arg(got).arg(expect)));
      moved = std::max(moved, std::abs(got - row[5].get<double>()));
    }
    QCOMPARE(i, task_->zero_shot.size());
    QVERIFY2(moved > 1e-4, "the intervention changed no answer probability");
  }

  // Steering from ICL prompt 1 into the residual stream before layer 1: W_O · z of the head, scaled.
  void steerIntoAnotherLayer() {
    const hs::HeadRef head{3, 3};
    hs::EvaluateOptions o;
    o.steer = {head};
    o.steer_scale = 3.0;
    o.steer_source.source = "prompt";
    o.steer_source.prompt = 1;
    o.steer_layer = 1;
    const hs::AnalysisOutput out = hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
    const at::Tensor z = zAtLast(hs::tokenSeqs({task_->icl[1]})[0], head);            // [d_head]
    const at::Tensor write = at::matmul(hs::headOutputWeight(*toy_.model, 3, 3), z);  // [d_model]
    hs::Intervention iv;
    iv.site = hs::residPre(1);
    iv.positions = {-1};
    iv.op = hs::InterventionOp::Add;
    iv.tensor = write;
    iv.scale = 3.0;
    compareZeroShot(out, {iv});
    QCOMPARE(out.run.options.at("steer_layer").get<int>(), 1);
    QCOMPARE(out.run.options.at("steer_source").get<std::string>(), std::string("prompt"));
  }

  // A patch from a text: the head's z at the text's last token replaces its z at N.
  void patchFromText() {
    const hs::HeadRef head{3, 6};
    const std::string text = task_->icl[5].text;
    hs::EvaluateOptions o;
    o.patch_clean = {head};
    o.patch_source.source = "text";
    o.patch_source.text = text;
    const hs::AnalysisOutput out = hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
    const std::vector<int> ids = toy_.tokenizer->encode(text);
    hs::Intervention iv;
    iv.site = hs::attnZ(head.layer);
    iv.heads = {head.head};
    iv.positions = {-1};
    iv.op = hs::InterventionOp::Replace;
    iv.tensor = zAtLast({ids.begin(), ids.end()}, head);
    compareZeroShot(out, {iv});
  }

  // The options are declared once, with defaults (the CLI's help and the GUI's form come from them), and
  // refused where they cannot run.
  void sourceOptionsAreDeclaredAndChecked() {
    const hs::MethodInfo m = hs::evaluateMethod();
    for (const char* key : {"patch_source", "patch_prompt", "patch_text", "steer_source", "steer_prompt",
                            "steer_text", "steer_layer"}) {
      const hs::OptionSpec* spec = m.option(key);
      QVERIFY2(spec && !spec->help.empty(), key);
    }
    QCOMPARE(m.option("steer_layer")->default_value.get<int>(), -1);
    QCOMPARE(m.option("steer_source")->default_value.get<std::string>(), std::string("clean_mean"));
    QVERIFY_THROWS_EXCEPTION(std::exception,
                             hs::resolveOptions(m.options, {{"patch_source", "mean"}}, "evaluate"));
    hs::EvaluateOptions o;
    o.steer = {{3, 3}};
    o.steer_layer = 4;  // the toy model has 4 layers
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get()));
    o.steer_layer = -1;
    o.steer_source.source = "prompt";
    o.steer_source.prompt = 24;  // 24 prompts: 0 to 23
    try {
      hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
      QFAIL("a prompt outside the task was accepted");
    } catch (const hs::Error& e) {
      QVERIFY2(std::string(e.what()).find("24") != std::string::npos, e.what());
    }
  }

  void recordsItsPrompts() {
    hs::EvaluateOptions o;
    o.zero_ablate = {{3, 0}};
    const hs::AnalysisOutput out = hs::runEvaluate(*toy_.model, *task_, o, {}, toy_.tokenizer.get());
    int icl = 0, zs = 0;
    for (const hs::PromptRecord& r : out.run.prompts) {
      const std::vector<hs::Prompt>& set = r.set == "icl" ? task_->icl : task_->zero_shot;
      const hs::Prompt& p = set[size_t(r.set == "icl" ? icl++ : zs++)];
      QVERIFY(r.ids == std::vector<int64_t>(p.ids.begin(), p.ids.end()));
      QCOMPARE(r.query_pos, p.last);
      QCOMPARE(r.answer_ids[0], int64_t(p.answer_token));
      QVERIFY(r.label_ids == std::vector<int64_t>(task_->label_tokens.begin(), task_->label_tokens.end()));
    }
    QCOMPARE(icl, 24);
    QCOMPARE(zs, 24);
  }

  // One translation of head edits: evaluateOptionsOf gives the options runEvaluate takes, and refuses what
  // one evaluation cannot hold (two patch sources, own positions) naming both edits.
  void editsBecomeTheEvaluationsOptions() {
    using hs::HeadEdit;
    using hs::HeadEditKind;
    const std::vector<HeadEdit> edits = {{HeadEditKind::ZeroAblate, {3, 0}, {}, 1.0, -1, {}},
                                         {HeadEditKind::MeanAblate, {2, 7}, {}, 1.0, -1, {}},
                                         {HeadEditKind::Patch, {1, 1}, {"prompt", 2, ""}, 1.0, -1, {}},
                                         {HeadEditKind::Steer, {1, 2}, {"mean", 0, ""}, 2.0, 1, {}}};
    const nlohmann::json o = hs::evaluateOptionsOf(edits);
    QCOMPARE(o.at("zero_ablate"), nlohmann::json::parse("[[3, 0]]"));
    QCOMPARE(o.at("mean_ablate"), nlohmann::json::parse("[[2, 7]]"));
    QCOMPARE(o.at("patch_source").get<std::string>(), std::string("prompt"));
    QCOMPARE(o.at("patch_prompt").get<int>(), 2);
    QCOMPARE(o.at("steer_source").get<std::string>(), std::string("mean"));
    QCOMPARE(o.at("steer_scale").get<double>(), 2.0);
    QCOMPARE(o.at("steer_layer").get<int>(), 1);
    const hs::EvaluateOptions read =
        hs::evaluateOptionTable().read(hs::resolveOptions(hs::evaluateOptionTable().specs(), o, "evaluate"));
    QCOMPARE(read.patch_source.prompt, 2);
    std::vector<HeadEdit> mixed = edits;
    mixed.push_back({HeadEditKind::Patch, {0, 1}, {"text", 0, "x"}, 1.0, -1, {}});
    try {
      hs::evaluateOptionsOf(mixed);
      QFAIL("two patch sources were accepted");
    } catch (const hs::Error& e) {
      const std::string m = e.what();
      QVERIFY2(m.find("patch 1.1") != std::string::npos && m.find("patch 0.1") != std::string::npos,
               e.what());
    }
    std::vector<HeadEdit> placed = {{HeadEditKind::ZeroAblate, {3, 0}, {}, 1.0, -1, {-1}}};
    QVERIFY_EXCEPTION_THROWN(hs::evaluateOptionsOf(placed), hs::Error);
  }

  // Mean ablation through the edits is the corpus mean (the toy world's text on the toy model), as
  // evaluate's: the same logits as meanHeads with that mean, not the prompt's own positions.
  void meanAblateEditIsTheCorpusMean() {
    const std::vector<hs::HeadRef> heads = {{3, 0}, {2, 5}};
    std::vector<hs::HeadEdit> edits;
    for (const hs::HeadRef& h : heads)
      edits.push_back({hs::HeadEditKind::MeanAblate, h, {}, 1.0, -1, {}});
    const std::vector<hs::Intervention> ivs =
        hs::headEditInterventions(*toy_.model, edits, [&](const hs::HeadVectorSource& s) {
          return hs::headSourceZ(*toy_.model, toy_.tokenizer.get(), {}, s);
        });
    const std::vector<int64_t> ids(task_->icl[0].ids.begin(), task_->icl[0].ids.end());
    auto last = [&](const std::vector<hs::Intervention>& iv) {
      hs::RunRequest req;
      req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
      req.interventions = iv;
      return toy_.model->run(req).logits[0][-1];  // [vocab]
    };
    const at::Tensor want =
        last(hs::meanHeads(heads, hs::meanZ(*toy_.model, hs::toyCorpusWindows(), hs::ZMean::AllPositions)));
    QVERIFY(at::allclose(last(ivs), want, 1e-5, 1e-5));
    const at::Tensor own = last(hs::meanHeads(heads, hs::meanZ(*toy_.model, {ids}, hs::ZMean::AllPositions)));
    QVERIFY(!at::allclose(own, want, 1e-5, 1e-5));
  }
};

QTEST_GUILESS_MAIN(TestEvaluate)
#include "test_evaluate.moc"
