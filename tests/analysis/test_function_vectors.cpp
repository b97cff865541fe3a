// Function vectors (docs/methods.md, "Function vectors") on the toy model and toy:antonym_a.
// - AIE: each head's grid value equals a direct recomputation (one full forward per shuffled-label prompt
//   with that head's z at N replaced by the mean z through a Mean intervention: mean over prompts of
//   P_patched(y*) − P_corrupt(y*)), within 1e-5; and some head has a visible effect.
// - The FV tensor equals Σ over the top heads (by AIE, as listed in the summary) of W_O's column block of the
//   head (read from the raw weights) times the stored mean z; the summary's heads are the grid's top k.
// - The accuracy curve has one point per layer, constant zero-shot and ICL series equal to the summary,
//   accuracies in [0, 1]; the trained toy model does the task in context (ICL accuracy above zero-shot).
// - The CLI writes a session whose grid, curve and tensors equal its --json output and reopen unchanged.
// - The universal head set (heads_from): the AIE grids of earlier runs of two toy tasks averaged head by head
//   (grid fv.aie_universal), the FV summed over that average's top heads, every output naming the set.
// - Several tasks in one run (more_tasks): each task's AIE grid equals its single-task run's (same prompts),
//   fv.aie_universal is their head-by-head mean with SE √(se_a² + se_b²)/2, each task's FV is the universal
//   top heads' writes of its own mean z, its accuracies are its single-task run's zero-shot / ICL ones, and
//   table fv.tasks lists them with Wilson intervals; a task given twice, or beside heads_from, is refused.
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <QtTest>

#include <QTemporaryDir>

#include <cmath>
#include <fstream>

#include "analysis/methods/function_vectors.h"
#include "analysis/toolkit/head_toolkit.h"
#include "analysis/toolkit/patch_sweep.h"
#include "analysis_test_util.h"
#include "model/load/model_loader.h"
#include "results/rank_stats.h"
#include "results/results_json.h"
#include "session/session.h"
#include "tasks/icl_task.h"
#include "test_paths.h"
#include "util/error.h"

namespace {

// P(target) at the last position of a prompt, optionally under interventions.
double targetProb(const hs::Transformer& m, const std::vector<int>& ids, int target,
                  const std::vector<hs::Intervention>& ivs = {}) {
  hs::RunRequest req;
  req.tokens = at::tensor(std::vector<int64_t>(ids.begin(), ids.end()), at::kLong).view({1, -1});  // [1, pos]
  req.last_logits_only = true;
  req.interventions = ivs;
  const at::Tensor logits = m.run(req).logits[0][0];  // [vocab]
  return at::softmax(logits.to(at::kDouble), -1)[target].item<double>();
}

std::vector<std::vector<int64_t>> ids64(const std::vector<hs::Prompt>& ps) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& p : ps)
    out.emplace_back(p.ids.begin(), p.ids.end());
  return out;
}

}  // namespace

class TestFunctionVectors : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;

  static hs::TaskSpec antonymSpec(int n) { return hs::test::toyAntonymSpec(n, 3); }

 private Q_SLOTS:
  void initTestCase() {
    at::NoGradGuard noGrad;
    toy_ = hs::loadModel("toy");
    QVERIFY(toy_.tokenizer);
  }

  void aieEqualsDirectRecomputation() {
    at::NoGradGuard noGrad;
    const hs::Transformer& m = *toy_.model;
    hs::TaskSpec spec = antonymSpec(7);
    spec.split = "train";
    const hs::IclTask task = hs::buildIclTask(*toy_.tokenizer, spec);
    const std::vector<hs::Prompt> clean(task.icl.begin(), task.icl.begin() + 4);
    const std::vector<hs::Prompt> all = hs::shuffledLabelPrompts(*toy_.tokenizer, task, 11);
    const std::vector<hs::Prompt> shuffled(all.begin() + 4, all.end());  // 3 prompts
    // The shuffle changed the demonstrations but kept the query and the answer.
    QVERIFY(shuffled[0].ids != task.icl[4].ids);
    QCOMPARE(shuffled[0].answer_token, task.icl[4].answer_token);

    const at::Tensor meanZ = hs::meanZ(m, ids64(clean), hs::ZMean::LastPosition);  // [layers, heads, d_head]
    const hs::HeadGrid g = hs::averageIndirectEffect(m, shuffled, meanZ);
    QCOMPARE(g.id, std::string("fv.aie"));
    QCOMPARE(g.layers(), m.config().n_layers);
    QCOMPARE(g.heads(), m.config().n_heads);

    const std::vector<hs::HeadRef> top = hs::topHeads(g, 1);
    const std::vector<hs::HeadRef> check = {
        top[0], {0, 0}, {m.config().n_layers - 1, m.config().n_heads - 1}, {1, 3}};
    for (const hs::HeadRef& h : check) {
      double direct = 0;
      for (const hs::Prompt& p : shuffled) {
        hs::Intervention iv;
        iv.site = hs::attnZ(h.layer);
        iv.heads = {h.head};
        iv.positions = {-1};
        iv.op = hs::InterventionOp::Mean;
        iv.tensor = meanZ[h.layer][h.head];  // [d_head]
        direct += targetProb(m, p.ids, p.answer_token, {iv}) - targetProb(m, p.ids, p.answer_token);
      }
      direct /= double(shuffled.size());
      const double got = g.values(h.layer, h.head);
      QVERIFY2(std::abs(got - direct) <= 1e-5,
               qPrintable(
                   QString("head %1.%2: grid %3, direct %4").arg(h.layer).arg(h.head).arg(got).arg(direct)));
    }
    const double largest = g.values.cwiseAbs().maxCoeff();
    qInfo("AIE: largest |ΔP| %.4f at head %d.%d", largest, top[0].layer, top[0].head);
    QVERIFY2(largest > 1e-3, "no head changes P(y*) on the shuffled prompts");
  }

  void fvIsSumOfTopHeadWritesAndCurveIsConsistent() {
    const hs::Transformer& m = *toy_.model;
    const hs::ModelConfig& c = m.config();
    hs::FvOptions opt;
    opt.n_mean = 12;
    opt.n_corrupt = 4;
    opt.top = 5;
    const hs::TaskSpec spec = antonymSpec(24);
    const hs::AnalysisOutput out = hs::runFv(m, *toy_.tokenizer, spec, opt, hs::test::modelContext("toy"));

    QCOMPARE(out.run.method, std::string("fv"));
    QCOMPARE(out.run.grids.size(), size_t(1));
    const hs::HeadGrid& g = out.run.grids[0];
    QCOMPARE(g.id, std::string("fv.aie"));
    QCOMPARE(g.provenance.options["n_mean"].get<int>(), 12);
    QCOMPARE(g.provenance.options["top"].get<int>(), 5);
    QCOMPARE(g.provenance.task, std::string("toy:antonym_a"));
    const at::Tensor fv = out.tensors.at("fv-1/fv");         // [d_model]
    const at::Tensor meanZ = out.tensors.at("fv-1/mean_z");  // [layers, heads, d_head]
    QCOMPARE(meanZ.sizes().vec(), (std::vector<int64_t>{c.n_layers, c.n_heads, c.d_head}));

    // Top heads of the summary = the grid's top 5; FV = Σ W_O[:, k·dh:(k+1)·dh] z̄[l, k] from the raw weights.
    const std::vector<hs::HeadRef> top = hs::topHeads(g, 5);
    const auto listed = out.run.summary["top_heads"].get<std::vector<hs::HeadRef>>();
    QVERIFY(listed == top);
    at::Tensor expect = at::zeros({c.d_model}, at::kDouble);  // [d_model]
    for (const hs::HeadRef& h : top) {
      const at::Tensor wo =
          m.weights().layers[size_t(h.layer)].wo.to(at::kDouble);  // [d_model, heads·d_head]
      expect += at::mv(wo.slice(1, h.head * c.d_head, (h.head + 1) * c.d_head),
                       meanZ[h.layer][h.head].to(at::kDouble));
    }
    QVERIFY2(at::allclose(fv.to(at::kDouble), expect, 0, 1e-5), "FV != sum of the top heads' W_O · mean z");
    // And no other head contributes: the FV of the top 4 differs by exactly the 5th head's write.
    const at::Tensor fv4 = hs::functionVector(m, meanZ, {top.begin(), top.begin() + 4});
    QVERIFY((fv - fv4).norm().item<double>() > 1e-6);

    QCOMPARE(out.run.curves.size(), size_t(1));
    const hs::Curve& cv = out.run.curves[0];
    QCOMPARE(cv.id, std::string("fv.accuracy_vs_layer"));
    QCOMPARE(int(cv.x.size()), c.n_layers);
    QCOMPARE(cv.series.size(), size_t(3));
    const double zs = out.run.summary["zero_shot_accuracy"].get<double>();
    const double icl = out.run.summary["icl_accuracy"].get<double>();
    for (int l = 0; l < c.n_layers; ++l) {
      QCOMPARE(cv.series[1].second[size_t(l)], zs);
      QCOMPARE(cv.series[2].second[size_t(l)], icl);
      QVERIFY(cv.series[0].second[size_t(l)] >= 0 && cv.series[0].second[size_t(l)] <= 1);
    }
    const int best = out.run.summary["best_layer"].get<int>();
    QCOMPARE(cv.series[0].second[size_t(best)], out.run.summary["fv_accuracy_best"].get<double>());
    qInfo("toy antonym_a (n=24): zero-shot %.3f, 10-shot ICL %.3f, FV best %.3f at layer %d, per layer: %s",
          zs, icl, out.run.summary["fv_accuracy_best"].get<double>(), best,
          nlohmann::json(cv.series[0].second).dump().c_str());
    // The model learns the task in context; the FV is only meaningful when it does.
    QVERIFY2(icl > zs, "10-shot ICL is not above zero-shot on toy:antonym_a");
  }

  // The official universal head set (ericwtodd/function_vectors compute_universal_function_vector: the heads
  // with the highest AIE averaged over a set of tasks): runs of two tasks written as --json files, a third
  // run whose heads_from names them ranks the heads by Ā = (AIE_1 + AIE_2) / 2 and sums their writes of its
  // own task's mean z; a run without heads_from keeps its own task's AIE.
  void universalHeadSetAveragesTheTasksAie() {
    const hs::Transformer& m = *toy_.model;
    QVERIFY(hs::FvOptions{}.heads_from.empty());
    hs::FvOptions opt;
    opt.n_mean = 8;
    opt.n_corrupt = 3;
    opt.top = 4;
    QTemporaryDir dir;
    std::vector<hs::HeadGrid> grids;
    std::string files;
    for (const char* task : {"toy:antonym_a", "toy:translate_a_b"}) {
      hs::TaskSpec spec = antonymSpec(6);
      spec.dataset = task;
      const hs::AnalysisOutput o = hs::runFv(m, *toy_.tokenizer, spec, opt);
      QCOMPARE(o.run.summary["head_set"].get<std::string>(), std::string("task"));
      grids.push_back(o.run.grids.at(0));
      const std::string path =
          dir.filePath(QString::fromStdString(grids.size() == 1 ? "a.json" : "b.json")).toStdString();
      std::ofstream(path) << nlohmann::json(o.run).dump();
      files += (files.empty() ? "" : ",") + path;
    }
    QVERIFY(grids[0].values != grids[1].values);
    opt.heads_from = files;
    const hs::AnalysisOutput u = hs::runFv(m, *toy_.tokenizer, antonymSpec(6), opt);
    const hs::HeadGrid* avg = hs::test::findGrid(u.run, "fv.aie_universal");
    QVERIFY(avg);
    const Eigen::MatrixXd want = (grids[0].values + grids[1].values) / 2;
    QVERIFY((avg->values - want).cwiseAbs().maxCoeff() < 1e-12);
    QCOMPARE(avg->provenance.derived.at("heads_from").size(), size_t(2));
    const std::vector<hs::HeadRef> top = hs::topHeads(*avg, 4);
    QVERIFY(u.run.summary["top_heads"].get<std::vector<hs::HeadRef>>() == top);
    QCOMPARE(u.run.summary["head_set"].get<std::string>(), std::string("universal"));
    const hs::Table* t = hs::test::findTable(u.run, "fv.top_heads");
    QVERIFY(t);
    QCOMPARE(t->rows.at(0).back().get<std::string>(), std::string("universal"));
    QVERIFY(at::allclose(u.tensors.at("fv-1/fv"), hs::functionVector(m, u.tensors.at("fv-1/mean_z"), top), 0,
                         1e-5));
    // For the record: this task's own top 4 and the universal top 4 (docs/methods.md).
    qInfo("top 4, antonym_a alone: %s; universal: %s",
          nlohmann::json(hs::topHeads(grids[0], 4)).dump().c_str(), nlohmann::json(top).dump().c_str());
    const std::string missing = dir.filePath("missing.json").toStdString();
    QVERIFY_THROWS_EXCEPTION(hs::Error, (hs::universalAie(missing, 4, 8)));
  }

  // Todd et al. §2.2–2.3 in one run: the AIE averaged over the tasks ranks the heads, each task's FV sums
  // those heads' means of that task. Oracle: single-task runs of the same tasks (same seed, n, prompts).
  void severalTasksInOneRun() {
    const hs::Transformer& m = *toy_.model;
    hs::FvOptions opt;
    opt.n_mean = 8;
    opt.n_corrupt = 3;
    opt.top = 4;
    const std::string other = "toy:translate_a_b";
    hs::TaskSpec specA = antonymSpec(6), specB = specA;
    specB.dataset = other;
    const hs::AnalysisOutput a = hs::runFv(m, *toy_.tokenizer, specA, opt);
    const hs::AnalysisOutput b = hs::runFv(m, *toy_.tokenizer, specB, opt);
    opt.more_tasks = other;
    const hs::AnalysisOutput u = hs::runFv(m, *toy_.tokenizer, specA, opt);

    const hs::HeadGrid* ga = hs::test::findGrid(u.run, "fv.aie");
    const hs::HeadGrid* gb = hs::test::findGrid(u.run, "fv.aie." + other);
    const hs::HeadGrid* avg = hs::test::findGrid(u.run, "fv.aie_universal");
    QVERIFY(ga && gb && avg);
    QCOMPARE(u.run.grids.size(), size_t(3));
    const hs::HeadGrid &sa = a.run.grids.at(0), &sb = b.run.grids.at(0);
    QVERIFY(sa.hasSe() && sb.hasSe());
    // Per-task grids: the single-task runs' values and SEs; their provenance names their own task.
    QVERIFY((ga->values - sa.values).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((gb->values - sb.values).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY((gb->se - sb.se).cwiseAbs().maxCoeff() < 1e-12);
    QCOMPARE(ga->provenance.task, std::string("toy:antonym_a"));
    QCOMPARE(gb->provenance.task, other);
    QVERIFY(ga->name != gb->name);
    // The universal grid: the head-by-head mean, its SE that of a mean of two independent means.
    QVERIFY(sa.values != sb.values);
    const Eigen::MatrixXd want = (sa.values + sb.values) / 2;
    QVERIFY((avg->values - want).cwiseAbs().maxCoeff() < 1e-12);
    QVERIFY(avg->hasSe());
    const Eigen::MatrixXd wantSe = (sa.se.cwiseAbs2() + sb.se.cwiseAbs2()).cwiseSqrt() / 2;
    QVERIFY((avg->se - wantSe).cwiseAbs().maxCoeff() < 1e-12);
    QCOMPARE(avg->provenance.derived.at("tasks").size(), size_t(2));

    // The heads: the universal top 4; each task's FV sums their writes of its own task's mean z.
    const std::vector<hs::HeadRef> top = hs::topHeads(*avg, 4);
    QVERIFY(u.run.summary["top_heads"].get<std::vector<hs::HeadRef>>() == top);
    QCOMPARE(u.run.summary["head_set"].get<std::string>(), std::string("universal"));
    QVERIFY(at::allclose(u.tensors.at("fv-1/mean_z"), a.tensors.at("fv-1/mean_z"), 0, 1e-7));
    QVERIFY(at::allclose(u.tensors.at("fv-1/mean_z." + other), b.tensors.at("fv-1/mean_z"), 0, 1e-7));
    QVERIFY(at::allclose(u.tensors.at("fv-1/fv"), hs::functionVector(m, a.tensors.at("fv-1/mean_z"), top), 0,
                         1e-5));
    QVERIFY(at::allclose(u.tensors.at("fv-1/fv." + other),
                         hs::functionVector(m, b.tensors.at("fv-1/mean_z"), top), 0, 1e-5));

    // Accuracies per task: zero-shot and ICL as the single-task runs (the same evaluation prompts), the FV
    // curve per layer, and table fv.tasks with Wilson intervals.
    const hs::Curve* ca = hs::test::findCurve(u.run, "fv.accuracy_vs_layer");
    const hs::Curve* cb = hs::test::findCurve(u.run, "fv.accuracy_vs_layer." + other);
    QVERIFY(ca && cb);
    QCOMPARE(int(cb->x.size()), m.config().n_layers);
    QVERIFY(!cb->intervals.empty());
    const hs::Table* t = hs::test::findTable(u.run, "fv.tasks");
    QVERIFY(t);
    QCOMPARE(t->rows.size(), size_t(2));
    auto col = [&](const std::string& c) {
      return size_t(std::find(t->columns.begin(), t->columns.end(), c) - t->columns.begin());
    };
    for (const char* c : {"zero_shot_lo", "zero_shot_hi", "icl_lo", "fv_accuracy_lo", "fv_accuracy_hi"})
      QVERIFY2(col(c) < t->columns.size(), c);
    const hs::AnalysisOutput* single[2] = {&a, &b};
    for (size_t i = 0; i < 2; ++i) {
      const auto& row = t->rows[i];
      const nlohmann::json& s = single[i]->run.summary;
      QCOMPARE(row[col("task")].get<std::string>(), i == 0 ? std::string("toy:antonym_a") : other);
      QCOMPARE(row[col("zero_shot")].get<double>(), s["zero_shot_accuracy"].get<double>());
      QCOMPARE(row[col("icl")].get<double>(), s["icl_accuracy"].get<double>());
      const hs::Curve* c = i == 0 ? ca : cb;
      const auto& fvSeries = c->series[0].second;
      QCOMPARE(row[col("fv_accuracy")].get<double>(), *std::max_element(fvSeries.begin(), fvSeries.end()));
      const double lo = row[col("fv_accuracy_lo")].get<double>(),
                   hi = row[col("fv_accuracy_hi")].get<double>();
      QVERIFY(lo <= row[col("fv_accuracy")].get<double>() && row[col("fv_accuracy")].get<double>() <= hi);
      qInfo("%s: zero-shot %.3f, ICL %.3f, universal FV %.3f [%.3f, %.3f] at layer %d (n = %d)",
            row[col("task")].get<std::string>().c_str(), row[col("zero_shot")].get<double>(),
            row[col("icl")].get<double>(), row[col("fv_accuracy")].get<double>(), lo, hi,
            row[col("fv_best_layer")].get<int>(), row[col("n_eval")].get<int>());
    }
    QVERIFY(u.run.summary["per_task"].contains(other));
    qInfo("universal top 4 over antonym_a and translate_a_b: %s", nlohmann::json(top).dump().c_str());

    // Refused: a task named twice; more_tasks beside heads_from.
    opt.more_tasks = "toy:antonym_a";
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runFv(m, *toy_.tokenizer, specA, opt));
    opt.more_tasks = other;
    opt.heads_from = "a.json";
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::runFv(m, *toy_.tokenizer, specA, opt));
  }

  void cliSessionRoundTrip() {
    HS_RUN_CLI_ANALYSIS(o, "fv", "fv",
                        {"fv", "toy", "--n", "8", "--n-mean", "6", "--n-corrupt", "2", "--top", "3"});
    const hs::AnalysisRun *r = o.run, &written = o.written;
    QCOMPARE(r->grids.size(), size_t(1));
    QCOMPARE(r->grids[0].id, std::string("fv.aie"));
    QVERIFY(r->grids[0].values == written.grids[0].values);
    QVERIFY(r->grids[0].values.allFinite());
    QCOMPARE(r->options["top"].get<int>(), 3);
    QCOMPARE(r->options["task"]["dataset"].get<std::string>(), std::string("toy:antonym_a"));
    QCOMPARE(r->options["task"]["shots"].get<int>(), 10);
    QCOMPARE(nlohmann::json(r->curves).dump(), nlohmann::json(written.curves).dump());
    const at::Tensor fv = o.session.tensors.at(r->id + "/fv");
    QCOMPARE(fv.numel(), int64_t(toy_.config.d_model));
    QVERIFY(std::abs(fv.norm().item<double>() - r->summary["fv_norm"].get<double>()) < 1e-5);
    // The FV in the file is the sum of the listed top heads' writes from the stored mean z.
    const auto top = r->summary["top_heads"].get<std::vector<hs::HeadRef>>();
    QCOMPARE(top.size(), size_t(3));
    const at::Tensor again = hs::functionVector(*toy_.model, o.session.tensors.at(r->id + "/mean_z"), top);
    QVERIFY(at::allclose(fv, again, 0, 1e-5));
  }
};

QTEST_GUILESS_MAIN(TestFunctionVectors)
#include "test_function_vectors.moc"
