// The evaluate method: mean ablation takes its means from the mean source (a neutral corpus by default:
// on the toy model the toy world's own text), never the task's prompts unless asked; patches and steering
// keep the clean ICL mean at N. Its run records the mean source and the prompts it scored.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <QtTest>

#include "analysis/evaluate.h"
#include "analysis/head_toolkit.h"
#include "analysis/icl_eval.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"

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
};

QTEST_GUILESS_MAIN(TestEvaluate)
#include "test_evaluate.moc"
