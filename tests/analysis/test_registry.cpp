// The method registry (core/analysis/framework/registry.h) and the option tables (options.h): every built-in
// method is declared once and consistently; options are checked with messages naming the key; a method
// registered at run time runs through runMethod into a stamped run that a saved session keeps, with the
// method's record beside it.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

#include "../engine/engine_fixtures.h"
#include "analysis/framework/registry.h"
#include "analysis/methods/evaluate.h"
#include "analysis/methods/function_vectors.h"
#include "analysis/methods/ltv.h"
#include "analysis/methods/tsla.h"
#include "results/intervals.h"
#include "results/rank_stats.h"
#include "session/session.h"
#include "test_method.h"
#include "util/error.h"

using nlohmann::json;

namespace {

// The message of what `f` throws ("" when it does not throw).
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define QVERIFY_ERROR_HAS(expr, needle)                                                          \
  do {                                                                                           \
    const std::string message_ = errorOf([&] { (void)(expr); });                                 \
    QVERIFY2(message_.find(needle) != std::string::npos, ("got: \"" + message_ + "\"").c_str()); \
  } while (0)

}  // namespace

class TestRegistry : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { hs::test::registerEchoMethod(); }

  // The methods the issue names, each with a title, a description, outputs and a run function; option
  // keys unique; every default passes its own checks and survives the text form (CLI / form fields).
  void builtinRecordsAreComplete() {
    std::set<std::string> names;
    for (const hs::MethodInfo& m : hs::methods()) {
      QVERIFY2(names.insert(m.name).second, m.name.c_str());
      QVERIFY2(!m.title.empty() && !m.description.empty() && !m.outputs.empty() && (m.run || m.imported),
               m.name.c_str());
      const json defaults = hs::resolveOptions(m.options, json::object(), m.name);
      QCOMPARE(defaults.size(), m.options.size());
      for (const hs::OptionSpec& o : m.options) {
        QVERIFY2(!o.help.empty(), (m.name + " " + o.key).c_str());
        const json back = hs::parseOptionText(o, hs::optionText(o, o.default_value));
        QVERIFY2(back == defaults.at(o.key) ||
                     (back.is_number() && back.get<double>() == defaults.at(o.key).get<double>()),
                 (m.name + " " + o.key + ": " + back.dump() + " vs " + defaults.at(o.key).dump()).c_str());
      }
    }
    for (const char* n :
         {"tsla", "induction", "fv", "site", "ltv", "geometry", "patch", "evaluate", "published", "echo"})
      QVERIFY2(names.count(n), n);
  }

  // Reading resolved defaults into the struct and writing it back is the identity, for every struct.
  void optionTablesRoundTrip() {
    auto check = [](const auto& table, const std::vector<hs::OptionSpec>& specs, const char* what) {
      json given = {{specs.front().key, specs.front().default_value}};
      const json resolved = hs::resolveOptions(specs, given, what);
      QCOMPARE(table.write(table.read(resolved)), resolved);
    };
    check(hs::tslaOptionTable(), hs::tslaMethod().options, "tsla");
    check(hs::fvOptionTable(), hs::fvMethod().options, "fv");
    check(hs::ltvOptionTable(), hs::ltvMethod().options, "ltv");
    check(hs::evaluateOptionTable(), hs::evaluateMethod().options, "evaluate");
    // A non-default value reaches the struct: ltv's nested training options included.
    const hs::LtvOptions l = hs::ltvOptionTable().read(
        hs::resolveOptions(hs::ltvMethod().options, {{"steps", 17}, {"lr", 0.25}}, "ltv"));
    QCOMPARE(l.train.steps, 17);
    QCOMPARE(l.train.lr, 0.25);
  }

  void badOptionsNameTheKey() {
    const std::vector<hs::OptionSpec> specs = hs::tslaMethod().options;
    QVERIFY_ERROR_HAS(hs::resolveOptions(specs, {{"top_percent", 200}}, "tsla"),
                      "tsla: option top_percent = 200: expected a number in (0, 100]");
    QVERIFY_ERROR_HAS(hs::resolveOptions(specs, {{"top_percent", 0}}, "tsla"), "(0, 100]");
    QVERIFY_ERROR_HAS(hs::resolveOptions(specs, {{"ablation", "half"}}, "tsla"),
                      "option ablation = \"half\": expected one of zero | mean | both");
    QVERIFY_ERROR_HAS(hs::resolveOptions(specs, {{"batch", 2.5}}, "tsla"),
                      "option batch = 2.5: expected a whole number");
    QVERIFY_ERROR_HAS(hs::resolveOptions(specs, {{"no_such", 1}}, "tsla"), "unknown option \"no_such\"");
    QVERIFY_ERROR_HAS(hs::resolveOptions(hs::evaluateMethod().options, {{"steer", {{1}}}}, "evaluate"),
                      "[layer, head] pairs");
    const hs::OptionSpec* heads = hs::requireMethod("evaluate").option("zero_ablate");
    QVERIFY(heads);
    QCOMPARE(hs::parseOptionText(*heads, "3.0,3.5"), (json{{3, 0}, {3, 5}}));
    QVERIFY_ERROR_HAS(hs::parseOptionText(*heads, "3-0"), "--zero-ablate: '3-0' is not a list of heads");
    QVERIFY_ERROR_HAS(hs::requireMethod("nonesuch"), "no analysis method \"nonesuch\" (methods: tsla");
  }

  // A whole number the option's field cannot hold is refused with the range it can take, never wrapped:
  // every int option of every method, given 2^32 + 1 (which an int would read as 1), and the echo
  // method's unsigned seed given -1.
  void integerOptionsStayInTheirField() {
    int checked = 0;
    for (const hs::MethodInfo& m : hs::methods())
      for (const hs::OptionSpec& o : m.options) {
        if (o.type != hs::OptionType::Int && o.type != hs::OptionType::IntList) continue;
        const json big = int64_t(4294967297);
        const json given = {{o.key, o.type == hs::OptionType::Int ? big : json::array({big})}};
        if (o.field_max >= 4294967297.0) continue;  // a 64-bit field holds it
        const std::string message = errorOf([&] { hs::resolveOptions(m.options, given, m.name); });
        // The range named is the option's own when it has one, else the field's ("[1, 2147483647]").
        QVERIFY2(message.find("option " + o.key + " = 4294967297: expected whole numbers in [") !=
                         std::string::npos ||
                     message.find("option " + o.key + " = [4294967297]: expected whole numbers in [") !=
                         std::string::npos ||
                     message.find("option " + o.key + " = 4294967297: expected a whole number in [") !=
                         std::string::npos,
                 (m.name + " " + o.key + ": \"" + message + "\"").c_str());
        ++checked;
      }
    QVERIFY(checked >= 10);
    QVERIFY_ERROR_HAS(hs::resolveOptions(hs::requireMethod("echo").options, {{"seed", -1}}, "echo"),
                      "echo: option seed = -1: expected a whole number in [0, 9000000000000000]");
    QVERIFY_ERROR_HAS(hs::resolveOptions(hs::tslaMethod().options, {{"batch", int64_t(4294967297)}}, "tsla"),
                      "tsla: option batch = 4294967297: expected a whole number in [1, 2147483647]");
  }

  void registeringTwiceIsRefused() {
    QVERIFY_ERROR_HAS(hs::registerMethod(hs::test::echoMethod()), "method echo is registered already");
    hs::MethodInfo twice = hs::test::echoMethod();
    twice.name = "echo2";
    twice.options.push_back(twice.options.front());
    QVERIFY_ERROR_HAS(hs::registerMethod(twice), "option k is declared twice");
  }

  // runMethod stamps the run: the id asked for (tensors renamed with it), method, resolved options,
  // provenance on the run and on every grid; the values follow the options given.
  void runMethodStampsTheRun() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::AnalysisContext ctx;
    ctx.run_id = "echo-7";
    ctx.model_path = "tiny";
    const hs::MethodInputs in{m, nullptr, {}};
    const hs::AnalysisOutput a = hs::runMethod(hs::requireMethod("echo"), in, json::object(), ctx);
    const hs::AnalysisOutput b =
        hs::runMethod(hs::requireMethod("echo"), in, {{"mode", "doubled"}, {"heads", {{1, 2}}}}, ctx);
    QCOMPARE(a.run.id, std::string("echo-7"));
    QCOMPARE(a.run.method, std::string("echo"));
    QCOMPARE(a.run.tensors, (std::vector<std::string>{"echo-7/values"}));
    QVERIFY(a.tensors.count("echo-7/values"));
    QCOMPARE(a.run.options.at("k").get<int>(), 3);
    QCOMPARE(b.run.options.at("mode").get<std::string>(), std::string("doubled"));
    QCOMPARE(a.run.provenance.method, std::string("echo"));
    QCOMPARE(a.run.provenance.model, std::string("tiny"));
    QCOMPARE(a.run.provenance.seed, uint64_t(7));
    QVERIFY(!a.run.provenance.created.empty());
    const hs::HeadGrid& ga = a.run.grids.at(0);
    QCOMPARE(ga.provenance.model, std::string("tiny"));
    QCOMPARE(ga.provenance.options.at("scale").get<double>(), 0.5);
    const hs::HeadGrid& gb = b.run.grids.at(0);
    QCOMPARE(gb.values(1, 2), 0.0);
    QVERIFY(ga.values(0, 0) > 0);
    QVERIFY(std::abs(gb.values(0, 0) - 2 * ga.values(0, 0)) <= 1e-12);
    QCOMPARE(hs::runLabel(a.run), std::string("echo · tiny · seed 7"));
  }

  // A method with a task refuses a task of the wrong kind before running, and a run without a tokenizer.
  // seeds > 1 repeats the run with every seed option advanced (issue 39, item 2): the output is the first
  // seed's run plus "echo.seeds" (each headline number's mean, sd and t interval over the seeds, each seed's
  // value as its own run gives it) and "echo.seed_overlap" (each grid's top-k heads per seed and their mean
  // pairwise Jaccard); the registry declares both tables and the options on every method with a seed.
  void seedsRepeatTheRun() {
    const hs::Transformer m = hs::test::tinyLlama();
    const hs::MethodInputs in{m, nullptr, {}};
    const hs::MethodInfo& echo = hs::requireMethod("echo");
    QVERIFY(echo.option("seeds") && echo.option("seeds_top_k"));
    QVERIFY(hs::findMethod("tsla")->option("seeds") && hs::findMethod("list-tasks")->option("seeds"));
    QVERIFY(!hs::findMethod("patch")->option("seeds"));  // nothing seeded: one exact run
    const hs::AnalysisOutput three = hs::runMethod(echo, in, {{"seeds", 3}, {"seed", 11}}, {});
    std::vector<double> maxima;
    std::vector<std::vector<hs::HeadRef>> tops;
    for (int s = 11; s < 14; ++s) {
      const hs::AnalysisOutput one = hs::runMethod(echo, in, {{"seed", s}}, {});
      maxima.push_back(one.run.summary.at("max").get<double>());
      tops.push_back(hs::topHeads(one.run.grids.at(0), 4));
    }
    QCOMPARE(three.run.grids.at(0).values,
             hs::runMethod(echo, in, {{"seed", 11}}, {}).run.grids.at(0).values);
    QCOMPARE(three.run.options.at("seeds").get<int>(), 3);
    auto table = [&](const std::string& id) -> const hs::Table* {
      for (const hs::Table& t : three.run.tables)
        if (t.id == id) return &t;
      return nullptr;
    };
    const hs::Table *numbers = table("echo.seeds"), *overlap = table("echo.seed_overlap");
    QVERIFY(numbers && overlap);
    QCOMPARE(numbers->rows.size(), size_t(1));
    const std::vector<json>& row = numbers->rows[0];
    const hs::Spread want = hs::spreadOf(maxima);
    QCOMPARE(row[0].get<std::string>(), std::string("max"));
    QVERIFY(std::abs(row[2].get<double>() - want.mean) < 1e-12 &&
            std::abs(row[3].get<double>() - want.sd) < 1e-12);
    QVERIFY(std::abs(row[6].get<double>() - want.lo) < 1e-12 &&
            std::abs(row[7].get<double>() - want.hi) < 1e-12);
    for (size_t i = 0; i < 3; ++i)
      QCOMPARE(row[8 + i].get<double>(), maxima[i]);
    QCOMPARE(numbers->columns.back(), std::string("seed 13"));
    const std::vector<json>& o = overlap->rows.at(0);
    QCOMPARE(o[0].get<std::string>(), std::string("echo.mean_z"));
    QCOMPARE(o[1].get<int>(), 4);
    double jac = 0;
    for (size_t a = 0; a < 3; ++a)
      for (size_t b = a + 1; b < 3; ++b)
        jac += hs::jaccard(tops[a], tops[b]) / 3.0;
    QVERIFY(std::abs(o[3].get<double>() - jac) < 1e-12);
    QCOMPARE(o[8].get<std::string>(), hs::headsText(tops[0]));
    QCOMPARE(three.run.summary.at("seeds").at("numbers").at("max").at("n").get<int>(), 3);
    bool declared = false;
    for (const hs::OutputSpec& out : echo.outputs)
      declared = declared || out.id == "echo.seed_overlap";
    QVERIFY(declared);
  }

  void taskKindsAreChecked() {
    const hs::MethodInfo& tsla = hs::requireMethod("tsla");
    const hs::MethodInfo& geometry = hs::requireMethod("geometry");
    hs::TaskSpec antonym;
    antonym.dataset = "toy:antonym_a";
    QCOMPARE(hs::taskKind(antonym), hs::TaskKind::Generation);
    QCOMPARE(
        hs::taskMismatch(geometry, antonym),
        std::string("geometry needs a classification task; toy:antonym_a is open-ended (a generation task)"));
    hs::TaskSpec cls;
    QCOMPARE(hs::taskMismatch(geometry, cls), std::string());
    QCOMPARE(hs::taskMismatch(tsla, cls), std::string());
    QCOMPARE(hs::taskMismatch(tsla, antonym), std::string());  // open-ended: the in-context answers
    QCOMPARE(hs::taskMismatch(hs::requireMethod("fv"), antonym), std::string());
    const hs::Transformer m = hs::test::tinyLlama();
    QVERIFY_ERROR_HAS(hs::runMethod(tsla, {m, nullptr, cls}, json::object(), {}),
                      "tsla: the model has no tokenizer");
  }

  void runIdsAndRenames() {
    QCOMPARE(hs::uniqueRunId("fv", {}), std::string("fv-1"));
    QCOMPARE(hs::uniqueRunId("fv", {"fv-1", "fv-2", "tsla-3"}), std::string("fv-3"));
    QCOMPARE(hs::uniqueRunId("fv", {"fv-2"}), std::string("fv-1"));
    hs::AnalysisOutput o;
    o.run.id = "fv-1";
    o.addTensor("fv", at::zeros({2}));
    hs::renameRun(o, "fv-9");
    QCOMPARE(o.run.tensors, (std::vector<std::string>{"fv-9/fv"}));
    QVERIFY(o.tensors.count("fv-9/fv") && !o.tensors.count("fv-1/fv"));
  }

  // A saved session holds the run and its method's record (options with defaults and help), and a run
  // can be removed with its tensors.
  void sessionKeepsRunsAndMethodRecords() {
    const hs::Transformer m = hs::test::tinyLlama();
    hs::AnalysisContext ctx;
    ctx.model_path = "tiny";
    const hs::AnalysisOutput out =
        hs::runMethod(hs::requireMethod("echo"), {m, nullptr, {}}, {{"k", 2}}, ctx);
    hs::Session s;
    s.runs.push_back(out.run);
    s.tensors = out.tensors;
    s.methods = hs::methodRecords(s.runs);
    QTemporaryDir dir;
    const std::string path = dir.filePath("echo.hscope").toStdString();
    hs::saveSession(path, s);
    hs::Session back = hs::loadSession(path);
    QCOMPARE(back.runs.at(0).id, std::string("echo-1"));
    QCOMPARE(back.runs.at(0).provenance.model, std::string("tiny"));
    const json& rec = back.methods.at("echo");
    QCOMPARE(rec.at("title").get<std::string>(), hs::test::echoMethod().title);
    // The record as registered: the method's options and the registry's seeds options (seeds.h).
    QCOMPARE(rec.at("options").size(), hs::requireMethod("echo").options.size());
    QCOMPARE(rec.at("options")[0].at("key").get<std::string>(), std::string("k"));
    QCOMPARE(rec.at("options")[0].at("default").get<int>(), 3);
    QCOMPARE(rec.at("options")[0].at("range").get<std::string>(), std::string("[1, 10]"));
    QCOMPARE(hs::methodOptionsOf(back.runs.at(0)).at("k").get<int>(), 2);
    QVERIFY(back.removeRun("echo-1"));
    QVERIFY(back.runs.empty() && back.tensors.empty());
    QVERIFY(!back.removeRun("echo-1"));
  }
};

QTEST_GUILESS_MAIN(TestRegistry)
#include "test_registry.moc"
