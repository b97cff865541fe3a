// Intervention parameters end to end (issue 24): a steering vector's source and layer, a patch's source
// prompt, each as the Interventions dock's form sets them, in the Prompt and Attention tabs exactly as the
// same intervention built by hand on the model; the session and undo keep every field; an old session opens
// with the defaults; the GUI's evaluation equals the registry's `evaluate` with the same options. And the
// logit-lens heatmap of the Prompt tab: its cells are Transformer::logitLens's probabilities, its hover names
// the cell's top token, and its difference view is the intervened minus the clean probability.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <functional>

#include <QCheckBox>
#include <QComboBox>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QUndoStack>
#include <QtTest>

#include "analysis/framework/registry.h"
#include "analysis/toolkit/head_toolkit.h"
#include "engine_worker.h"
#include "evaluation_dock.h"
#include "gui_test_util.h"
#include "head_grid_view.h"
#include "interventions_dock.h"
#include "lens_view.h"
#include "model/load/model_loader.h"
#include "prompt_tab.h"
#include "qcustomplot_include.h"
#include "session/session.h"
#include "session_io.h"

using hs::HeadRef;
using hs::gui::InterventionEntry;
using hs::gui::InterventionKind;
using hs::gui::MainWindow;
using hs::gui::VectorSource;

namespace {

InterventionEntry entry(InterventionKind kind, HeadRef head) {
  InterventionEntry e;
  e.kind = kind;
  e.head = head;
  return e;
}

std::vector<int64_t> ids64(const std::vector<int>& ids) {
  return {ids.begin(), ids.end()};
}

}  // namespace

class TestInterventionParams : public QObject {
  Q_OBJECT

  hs::LoadedModel toy_;

  // hook_z of `head` at the last position of `ids`, from a plain forward: [d_head].
  at::Tensor zAtLast(const std::vector<int64_t>& ids, HeadRef head) const {
    hs::RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    req.capture.insert(hs::attnZ(head.layer));
    return toy_.model->run(req).cache.at(hs::attnZ(head.layer))[0][-1][head.head].to(at::kFloat);
  }
  // Next-token probabilities at the last position of `ids` under `ivs`: [vocab] float64.
  at::Tensor probsAtLast(const std::vector<int64_t>& ids, const std::vector<hs::Intervention>& ivs) const {
    hs::RunRequest req;
    req.tokens = at::tensor(ids, at::kLong).unsqueeze(0);  // [1, pos]
    req.interventions = ivs;
    return at::softmax(toy_.model->run(req).logits[0][-1].to(at::kDouble), 0);
  }
  hs::IclTask taskOf(MainWindow& w) const { return hs::buildIclTask(*toy_.tokenizer, w.taskDock()->spec()); }
  // Waits for a Prompt-tab view with `n` interventions and checks its top tokens against `want` ([vocab]).
  static void checkPromptTab(MainWindow& w, int n,
                             const std::function<at::Tensor(const hs::gui::PromptView&)>& want) {
    QTRY_VERIFY_WITH_TIMEOUT(w.promptView().interventions == n && !w.isBusy(), 60000);
    const hs::gui::PromptView v = w.promptView();
    const at::Tensor p = want(v);  // [vocab]
    QVERIFY(v.top.size() >= 3);
    for (size_t i = 0; i < 3; ++i) {
      const double expect = p[v.top[i].id].item<double>();
      QVERIFY2(std::abs(expect - v.top[i].prob) < 1e-5,
               qPrintable(QString("top %1 '%2': Prompt tab %3, by hand %4")
                              .arg(i)
                              .arg(v.top[i].piece)
                              .arg(v.top[i].prob)
                              .arg(expect)));
    }
    QCOMPARE(v.top.front().id, static_cast<int>(p.argmax().item<int64_t>()));
    // The intervention moved the prediction: a test that could not fail would not say much.
    QVERIFY2(
        std::abs(v.topCleanProb.front() - v.top.front().prob) > 1e-4,
        qPrintable(QString("clean %1, intervened %2").arg(v.topCleanProb.front()).arg(v.top.front().prob)));
  }

 private Q_SLOTS:
  void initTestCase() {
    hs::test::isolateSettings("test_intervention_params");
    at::set_num_threads(1);
    toy_ = hs::loadModel("toy");
  }
  void init() { QSettings().clear(); }

  // Steering head 3.3 by its z on ICL prompt 2, added as W_O z to the residual stream before layer 1: the
  // Prompt tab's probabilities and the Attention tab's pattern are those of that intervention built by
  // hand (Transformer::run + the head's W_O slice).
  void steerFromAnotherLayer() {
    QString error;
    auto w = hs::test::toyWindow(12, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    InterventionEntry e = entry(InterventionKind::Steer, {3, 3});
    e.source = VectorSource::Prompt;
    e.sourcePrompt = 2;
    e.layer = 1;
    e.scale = 4.0;
    w->interventionsDock()->setEntries({e});
    const hs::IclTask task = taskOf(*w);
    const at::Tensor z = zAtLast(hs::tokenSeqs({task.icl[2]})[0], {3, 3});  // [d_head]
    hs::Intervention iv;
    iv.site = hs::residPre(1);
    iv.positions = {-1};
    iv.op = hs::InterventionOp::Add;
    iv.tensor = at::matmul(hs::headOutputWeight(*toy_.model, 3, 3), z);  // [d_model]
    iv.scale = 4.0;
    checkPromptTab(*w, 1, [&](const hs::gui::PromptView& v) { return probsAtLast(ids64(v.ids), {iv}); });

    // The Attention tab: head 3.3's pattern under the same steering (layer 1 feeds layer 3's queries).
    w->headsView()->setSelection({{3, 3}});
    QTRY_VERIFY_WITH_TIMEOUT(w->pattern().head == (HeadRef{3, 3}) && w->pattern().interventions == 1, 60000);
    QTRY_VERIFY_WITH_TIMEOUT(!w->isBusy(), 60000);
    const hs::gui::PatternView pat = w->pattern();
    hs::RunRequest req;
    req.tokens =
        at::tensor(ids64(toy_.tokenizer->encode(w->promptText().toStdString())), at::kLong).unsqueeze(0);
    req.interventions = {iv};
    req.capture.insert(hs::attnPattern(3));
    const at::Tensor want =
        toy_.model->run(req).cache.at(hs::attnPattern(3))[0][3].to(at::kDouble);  // [q, k]
    QCOMPARE(static_cast<int64_t>(pat.n), want.size(0));
    double err = 0;
    for (int q = 0; q < pat.n; ++q)
      for (int k = 0; k < pat.n; ++k)
        err = std::max(err,
                       std::abs(pat.weights[static_cast<size_t>(q * pat.n + k)] - want[q][k].item<double>()));
    QVERIFY2(err < 1e-6, qPrintable(QString("pattern differs by %1").arg(err)));
  }

  // A patch of head 3.6 from ICL prompt 1 writes that prompt's z at N; a steer from a typed text adds the
  // text's last-token z to the head's own hook_z.
  void patchAndSteerFromChosenSources() {
    QString error;
    auto w = hs::test::toyWindow(12, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    const hs::IclTask task = taskOf(*w);
    InterventionEntry patch = entry(InterventionKind::PatchClean, {3, 6});
    patch.source = VectorSource::Prompt;
    patch.sourcePrompt = 1;
    InterventionEntry steer = entry(InterventionKind::Steer, {3, 0});
    steer.source = VectorSource::Text;
    steer.sourceText = QString::fromStdString(task.icl[4].text);
    steer.scale = 2.0;
    w->interventionsDock()->setEntries({patch, steer});
    hs::Intervention replace;
    replace.site = hs::attnZ(3);
    replace.heads = {6};
    replace.positions = {-1};
    replace.op = hs::InterventionOp::Replace;
    replace.tensor = zAtLast(hs::tokenSeqs({task.icl[1]})[0], {3, 6});
    hs::Intervention add;
    add.site = hs::attnZ(3);
    add.heads = {0};
    add.positions = {-1};
    add.op = hs::InterventionOp::Add;
    add.tensor = zAtLast(ids64(toy_.tokenizer->encode(task.icl[4].text)), {3, 0});
    add.scale = 2.0;
    checkPromptTab(*w, 2, [&](const hs::gui::PromptView& v) {
      return probsAtLast(ids64(v.ids), {replace, add});
    });
  }

  // The dock's form: the fields a kind takes, read back into the entry; a patch offers no corpus mean.
  void formEditsTheParameters() {
    const QStringList prompts = {"a : b", "c : d", "e : f"};
    hs::gui::InterventionForm steer(entry(InterventionKind::Steer, {2, 1}), 4, prompts);
    QCOMPARE(steer.sourceBox()->count(), 4);
    steer.setSource(VectorSource::Prompt);
    steer.promptBox()->setValue(2);
    QCOMPARE(steer.promptBox()->maximum(), 2);  // three prompts
    QCOMPARE(steer.layerBox()->maximum(), 3);   // four layers
    steer.layerBox()->setValue(1);
    steer.scaleBox()->setValue(2.5);
    steer.positionsEdit()->setText("-1, -2");
    InterventionEntry e;
    QVERIFY(steer.read(&e));
    QCOMPARE(e.source, VectorSource::Prompt);
    QCOMPARE(e.sourcePrompt, 2);
    QCOMPARE(e.layer, 1);
    QCOMPARE(e.scale, 2.5);
    QCOMPARE(e.positions, (std::vector<int>{-1, -2}));
    QCOMPARE(e.head, (HeadRef{2, 1}));
    steer.setSource(VectorSource::Text);
    QString why;
    QVERIFY(!steer.read(&e, &why));  // an empty text is refused
    QVERIFY(why.contains("text"));

    hs::gui::InterventionForm patch(entry(InterventionKind::PatchClean, {2, 1}), 4, prompts);
    QCOMPARE(patch.sourceBox()->count(), 3);
    QCOMPARE(patch.sourceBox()->findData(static_cast<int>(VectorSource::Mean)), -1);
    QVERIFY(patch.layerBox()->isHidden());
    patch.setSource(VectorSource::Text);
    patch.textEdit()->setText("x y z");
    QVERIFY(patch.read(&e));
    QCOMPARE(e.sourceText, QString("x y z"));
    QCOMPARE(e.layer, -1);

    // The dock keeps only what the kind takes.
    hs::gui::InterventionsDock dock;
    QSignalSpy changed(&dock, &hs::gui::InterventionsDock::changed);
    dock.add(InterventionKind::ZeroAblate, {{1, 1}});
    InterventionEntry params = entry(InterventionKind::ZeroAblate, {1, 1});
    params.layer = 2;
    params.source = VectorSource::Prompt;
    params.positions = {0, 1};
    dock.setParameters(0, params);
    QCOMPARE(dock.entries()[0].layer, -1);
    QCOMPARE(dock.entries()[0].source, VectorSource::CleanMean);
    QCOMPARE(dock.entries()[0].positions, (std::vector<int>{0, 1}));
    QCOMPARE(changed.count(), 2);
  }

  // Undo / redo restore a parameter edit.
  void undoCoversParameterEdits() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->interventionsDock()->add(InterventionKind::Steer, {{2, 4}});
    InterventionEntry p = w->interventionsDock()->entries()[0];
    p.source = VectorSource::Text;
    p.sourceText = "ko ji";
    p.layer = 2;
    p.scale = 3;
    w->interventionsDock()->setParameters(0, p);
    QCOMPARE(w->interventionsDock()->entries()[0], p);
    w->undoStack()->undo();
    const InterventionEntry before = w->interventionsDock()->entries()[0];
    QCOMPARE(before, entry(InterventionKind::Steer, {2, 4}));
    w->undoStack()->redo();
    QCOMPARE(w->interventionsDock()->entries()[0], p);
  }

  // A session keeps every field; an entry written before the fields existed opens with their defaults;
  // a newer entry format is refused.
  void sessionKeepsEveryField() {
    InterventionEntry a = entry(InterventionKind::Steer, {3, 3});
    a.source = VectorSource::Prompt;
    a.sourcePrompt = 7;
    a.layer = 1;
    a.scale = -2.5;
    a.positions = {-1, -3};
    InterventionEntry b = entry(InterventionKind::PatchClean, {2, 0});
    b.source = VectorSource::Text;
    b.sourceText = "ka we : hu";
    b.enabled = false;
    InterventionEntry c = entry(InterventionKind::Steer, {0, 5});
    c.source = VectorSource::Mean;
    InterventionEntry d = entry(InterventionKind::MeanAblate, {1, 1});
    hs::gui::GuiSessionState s;
    s.interventions = {a, b, c, d};
    QTemporaryDir dir;
    const QString path = dir.filePath("p.hscope");
    hs::gui::saveGuiSession(path, s);
    const hs::gui::GuiSessionState back = hs::gui::loadGuiSession(path);
    QCOMPARE(back.interventions.size(), size_t(4));
    for (size_t i = 0; i < 4; ++i)
      QVERIFY2(back.interventions[i] == s.interventions[i],
               qPrintable(hs::gui::interventionLabel(back.interventions[i])));
    // Steering into another layer is stored at the residual site it acts on.
    const nlohmann::json j = hs::gui::interventionsToJson({a});
    QCOMPARE(j[0]["site"].get<std::string>(), hs::residPre(1).name());

    // The version-1 form (before sources and layers): the defaults.
    hs::Session old;
    old.interventions = nlohmann::json::array({{{"site", "blocks.3.attn.hook_z"},
                                                {"heads", {3}},
                                                {"positions", {-1}},
                                                {"custom_positions", false},
                                                {"rows", nlohmann::json::array()},
                                                {"op", "add"},
                                                {"scale", 2.0},
                                                {"kind", "steer"},
                                                {"layer", 3},
                                                {"head", 3},
                                                {"enabled", true}},
                                               {{"site", "blocks.2.attn.hook_z"},
                                                {"heads", {1}},
                                                {"positions", {-1}},
                                                {"custom_positions", false},
                                                {"rows", nlohmann::json::array()},
                                                {"op", "replace"},
                                                {"scale", 1.0},
                                                {"kind", "patch_clean"},
                                                {"layer", 2},
                                                {"head", 1},
                                                {"enabled", true}}});
    const QString oldPath = dir.filePath("old.hscope");
    hs::saveSession(oldPath.toStdString(), old);
    const auto opened = hs::gui::loadGuiSession(oldPath).interventions;
    QCOMPARE(opened.size(), size_t(2));
    InterventionEntry steer = entry(InterventionKind::Steer, {3, 3});
    steer.scale = 2.0;
    QCOMPARE(opened[0], steer);
    QCOMPARE(opened[1], entry(InterventionKind::PatchClean, {2, 1}));

    nlohmann::json newer = hs::gui::interventionsToJson({a});
    newer[0]["format_version"] = 3;
    QVERIFY_THROWS_EXCEPTION(std::exception, hs::gui::interventionsFromJson(newer, "newer.hscope"));
  }

  // "Evaluate with interventions" with a non-default source and layer is the registry's `evaluate` with the
  // same options, and differs from the default source.
  void guiEvaluationEqualsTheMethod() {
    QString error;
    auto w = hs::test::toyWindow(12, &error, "toy:copy_a");
    QVERIFY2(w, qPrintable(error));
    const hs::IclTask task = taskOf(*w);
    InterventionEntry steer = entry(InterventionKind::Steer, {3, 3});
    steer.source = VectorSource::Prompt;
    steer.sourcePrompt = 2;
    steer.layer = 1;
    steer.scale = 3.0;
    InterventionEntry patch = entry(InterventionKind::PatchClean, {3, 6});
    patch.source = VectorSource::Text;
    patch.sourceText = QString::fromStdString(task.icl[3].text);
    w->interventionsDock()->setEntries({steer, patch});
    QSignalSpy shown(w.get(), &MainWindow::evaluationShown);
    w->evaluate();
    QVERIFY(shown.wait(120000));
    const hs::gui::EvalResult r = *w->evaluationDock()->result();

    const nlohmann::json options = {{"steer", {{3, 3}}},      {"steer_source", "prompt"},
                                    {"steer_prompt", 2},      {"steer_layer", 1},
                                    {"steer_scale", 3.0},     {"patch_clean", {{3, 6}}},
                                    {"patch_source", "text"}, {"patch_text", task.icl[3].text}};
    const hs::MethodInputs in{*toy_.model, toy_.tokenizer.get(), w->taskDock()->spec()};
    const hs::AnalysisOutput cli = hs::runMethod(hs::requireMethod("evaluate"), in, options, {});
    nlohmann::json defaults = options;
    for (const char* k : {"steer_source", "steer_prompt", "steer_layer", "patch_source", "patch_text"})
      defaults.erase(k);
    const hs::AnalysisOutput plain = hs::runMethod(hs::requireMethod("evaluate"), in, defaults, {});

    QCOMPARE(r.zeroShotIntervened.accuracy,
             cli.run.summary["zero_shot_intervened"]["accuracy"].get<double>());
    const hs::Table* per = nullptr;
    const hs::Table* perPlain = nullptr;
    for (const hs::Table& t : cli.run.tables)
      if (t.id == "evaluate.prompts") per = &t;
    for (const hs::Table& t : plain.run.tables)
      if (t.id == "evaluate.prompts") perPlain = &t;
    QVERIFY(per && perPlain);
    QCOMPARE(r.prompts.size(), per->rows.size());
    double fromDefault = 0;
    for (size_t i = 0; i < per->rows.size(); ++i) {
      QCOMPARE(r.prompts[i].pAfter, per->rows[i][7].get<double>());
      fromDefault = std::max(fromDefault, std::abs(r.prompts[i].pAfter - perPlain->rows[i][7].get<double>()));
    }
    QVERIFY2(fromDefault > 1e-4, "the source and layer changed nothing");
    // The run the GUI stored records the same options.
    const std::vector<hs::AnalysisRun> runs = w->runs();
    QVERIFY(!runs.empty() && runs.back().method == "evaluate");
    for (const char* k : {"steer_source", "steer_prompt", "steer_layer", "patch_source", "patch_text"})
      QVERIFY2(runs.back().options.at(k) == cli.run.options.at(k), k);

    // Heads steered with different parameters cannot be one evaluation: refused, naming both.
    InterventionEntry other = entry(InterventionKind::Steer, {2, 2});
    QVERIFY_THROWS_EXCEPTION(std::exception, hs::gui::evaluateOptions({steer, other}));
  }

  // The logit lens heatmap: every cell is the top probability of Transformer::logitLens after that layer at
  // that position; hover names its top token; "answer" colours by the clean prediction's probability; the
  // difference view is intervened minus clean.
  void lensHeatmapIsTheLogitLens() {
    QString error;
    auto w = hs::test::toyWindow(12, &error);
    QVERIFY2(w, qPrintable(error));
    w->resize(1800, 960);
    w->tabs()->setCurrentIndex(MainWindow::PromptTabIndex);
    QTRY_VERIFY_WITH_TIMEOUT(!w->promptView().lensGrid.empty() && !w->isBusy(), 60000);
    const hs::gui::PromptView v = w->promptView();
    QApplication::processEvents();
    hs::gui::PromptTab* tab = w->promptTab();
    hs::LensView* lens = tab->lensView();
    lens->plot()->replot();
    const int n = static_cast<int>(v.ids.size()), L = toy_.config.n_layers;
    QCOMPARE(lens->map().layers, L);
    QCOMPARE(lens->map().positions(), n);

    // The lens by hand, clean and with head 3.3 zero-ablated.
    auto lensProbs = [&](const std::vector<hs::Intervention>& ivs) {
      hs::RunRequest req;
      req.tokens = at::tensor(ids64(v.ids), at::kLong).unsqueeze(0);  // [1, pos]
      req.interventions = ivs;
      for (int l = 0; l < L; ++l)
        req.capture.insert(hs::residPost(l));
      const hs::RunResult r = toy_.model->run(req);
      std::vector<at::Tensor> out;
      for (int l = 0; l < L; ++l)
        out.push_back(
            at::softmax(toy_.model->logitLens(r.cache.at(hs::residPost(l))[0]).to(at::kDouble), -1));
      return out;  // [layer] → [pos, vocab]
    };
    const std::vector<at::Tensor> clean = lensProbs({});
    const int answer = static_cast<int>(probsAtLast(ids64(v.ids), {}).argmax().item<int64_t>());
    for (int l = 0; l < L; ++l)
      for (int p = 0; p < n; ++p) {
        const double want = clean[static_cast<size_t>(l)][p].max().item<double>();
        QVERIFY2(
            std::abs(lens->value(l, p) - want) < 1e-6,
            qPrintable(
                QString("layer %1 position %2: %3 vs %4").arg(l).arg(p).arg(lens->value(l, p)).arg(want)));
      }
    // Hover on a cell names the layer, the position and the top token.
    const int l = L - 1, p = n - 1;
    const int top = static_cast<int>(clean[static_cast<size_t>(l)][p].argmax().item<int64_t>());
    const QString hover = lens->hoverText(lens->cellCenter(l, p));
    QVERIFY2(hover.contains(QString("after layer %1 · position %2").arg(l).arg(p)), qPrintable(hover));
    QVERIFY2(
        hover.contains(QString("top token '%1'").arg(QString::fromStdString(toy_.tokenizer->piece(top)))),
        qPrintable(hover));
    QVERIFY(lens->visibleLabels() > 0);

    tab->lensMeasureBox()->setCurrentIndex(
        tab->lensMeasureBox()->findData(static_cast<int>(hs::gui::PromptTab::AnswerProbability)));
    for (int p2 = 0; p2 < n; ++p2)
      QVERIFY(std::abs(lens->value(0, p2) - clean[0][p2][answer].item<double>()) < 1e-6);

    // With head 3.3 zero-ablated, the difference view is p(answer) with minus without.
    QVERIFY(!tab->lensDifferenceBox()->isEnabled());
    w->interventionsDock()->add(InterventionKind::ZeroAblate, {{3, 3}});
    QTRY_VERIFY_WITH_TIMEOUT(w->promptView().interventions == 1 && !w->isBusy(), 60000);
    QVERIFY(tab->lensDifferenceBox()->isEnabled());
    tab->lensDifferenceBox()->setChecked(true);
    QVERIFY(lens->map().difference);
    const std::vector<at::Tensor> ablated = lensProbs(hs::zeroHeads({{3, 3}}));
    double moved = 0;
    for (int p2 = 0; p2 < n; ++p2) {
      const double want = ablated[3][p2][answer].item<double>() - clean[3][p2][answer].item<double>();
      QVERIFY(std::abs(lens->value(3, p2) - want) < 1e-6);
      moved = std::max(moved, std::abs(want));
    }
    QVERIFY(moved > 1e-4);
  }
};

QTEST_MAIN(TestInterventionParams)
#include "test_intervention_params.moc"
