// Every run reproducible from its session: a TSLA run, a function-vector run and a list-tasks run on the toy
// model are saved as one session; tests/analysis/recompute_from_session.py (an independent /usr/bin/python3
// reader with its own float64 Llama forward from tests/load/reference_forward.py) recomputes the TR, TL and
// AIE grids from the prompts, label sets and options the session records (they must match to 1e-5), and one
// mean-ablation curve with its 95 % interval (the token-copying series of copy_random, from the recorded
// prompts, ordering and mean_z tensor: the same shares, the same Wilson bounds).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "../load/load_test_util.h"
#include "analysis/methods/function_vectors.h"
#include "analysis/methods/induction_run.h"
#include "analysis/methods/tsla.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "session/session.h"

class TestRecomputeFromSession : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { at::set_num_threads(1); }

  void gridsFromTheSessionAlone() {
    HS_REQUIRE_REFERENCE_PYTHON();
    const hs::LoadedModel toy = hs::loadModel("toy");
    hs::TaskSpec spec;  // toy:category_label, 8 shots
    spec.n_prompts = 12;
    hs::TslaOptions to;
    to.top_percent = 12.5;
    to.ablation = "zero";
    to.curves = false;
    to.perturbation = false;
    hs::AnalysisContext ctx = hs::test::modelContext("toy");
    ctx.run_id = "tsla-1";
    const hs::AnalysisOutput tsla =
        hs::runTsla(*toy.model, *toy.tokenizer, hs::buildIclTask(*toy.tokenizer, spec), to, ctx);

    hs::TaskSpec fvSpec;
    fvSpec.dataset = "toy:antonym_a";
    fvSpec.shots = 10;
    fvSpec.n_prompts = 8;
    hs::FvOptions fo;
    fo.n_mean = 12;
    fo.n_corrupt = 6;
    fo.top = 4;
    ctx.run_id = "fv-1";
    const hs::AnalysisOutput fv = hs::runFv(*toy.model, *toy.tokenizer, fvSpec, fo, ctx);

    hs::InductionRunOptions lo;  // list-tasks, small: 8 pairs order the heads, 24 prompts per task
    lo.n = 8;
    lo.n_eval = 24;
    lo.ks = {0, 1, 4, 8};
    lo.random_draws = 2;
    ctx.run_id = "list-tasks-1";
    const hs::AnalysisOutput lists = hs::runListTasks(*toy.model, toy.tokenizer.get(), lo, ctx);

    QTemporaryDir dir;
    hs::Session s;
    for (const hs::AnalysisOutput* o : {&tsla, &fv, &lists}) {
      s.runs.push_back(o->run);
      s.tensors.insert(o->tensors.begin(), o->tensors.end());
    }
    const std::string path = dir.filePath("runs.hscope").toStdString();
    hs::saveSession(path, s);

    QProcess p;
    p.start(QString::fromStdString(hs::test::referencePython()),
            {QString::fromStdString(hs::test::sourceDir("tests/analysis/recompute_from_session.py")),
             QString::fromStdString(path),
             QString::fromStdString(hs::test::sourceDir("resources/models/toy-icl"))});
    QVERIFY(p.waitForFinished(600000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const nlohmann::json got = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
    qInfo("%s", got.dump().c_str());
    for (const char* id : {"tsla.tr", "tsla.tl", "fv.aie"}) {
      QVERIFY2(got.contains(id), id);
      // Relative to the grid's scale: the paper's TR (‖P a‖²) reaches 160 on the toy model, where float32
      // rounding alone is 1e-5.
      const double diff = got[id]["max_abs_diff"].get<double>();
      const double scale = std::max(1.0, got[id]["max_abs_value"].get<double>());
      QVERIFY2(diff <= 1e-5 * scale,
               qPrintable(QString("%1: max |python − session| = %2").arg(id).arg(diff)));
      QVERIFY(got[id]["max_abs_value"].get<double>() > 0);  // a grid of zeros would match trivially
    }
    const nlohmann::json& curve = got["dual_route.ablation.copy_random/token_copying"];
    QCOMPARE(curve["points"].get<int>(), 4);
    QVERIFY2(curve["max_abs_diff"].get<double>() == 0.0, curve.dump().c_str());  // the same prompts answered
    QVERIFY2(curve["max_abs_interval_diff"].get<double>() <= 1e-12, curve.dump().c_str());
    const std::vector<double> y = curve["y"], lo2 = curve["lo"], hi = curve["hi"];
    QVERIFY(y.front() > y.back());          // ablating the top token-copying heads does cut the copies
    QVERIFY(hi.back() - lo2.back() > 0.1);  // 24 prompts: an interval, not a point
  }
};

QTEST_GUILESS_MAIN(TestRecomputeFromSession)
#include "test_recompute_from_session.moc"
