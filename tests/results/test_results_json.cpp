// JSON form of the result types: exact round trips (doubles bit-exact, NaN/inf preserved), the
// exact grid layout the CLI relies on, and strict rejection of malformed input.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "results/intervals.h"
#include "results/results_json.h"
#include "util/error.h"

using nlohmann::json;

namespace {

bool sameBits(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}
bool sameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || sameBits(a, b);
}

hs::Provenance provenance() {
  hs::Provenance p;
  p.method = "tsla";
  p.model = "/models/llama";
  p.task = "sst2";
  p.seed = 18446744073709551615ull;  // the full uint64 range must survive
  p.n_prompts = 50;
  p.options = {{"shots", 8}, {"lr", 0.1}, {"label_words", {"negative", "positive"}}};
  p.created = "2026-01-02T03:04:05Z";
  return p;
}

// Values that are hard to print and read back: thirds, subnormals, extremes, -0, NaN, inf.
hs::HeadGrid awkwardGrid() {
  hs::HeadGrid g;
  g.id = "tsla.tr";
  g.name = "Task recognition ‖P a‖";
  g.unit = "logit";
  g.values.resize(3, 4);
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  g.values << 1.0 / 3.0, -0.0, 0.1, 1e-310,                                              //
      std::numeric_limits<double>::max(), std::numeric_limits<double>::min(), nan, inf,  //
      -inf, 2.0 / 3.0 * 1e300, -123456789.123456789, std::nextafter(1.0, 2.0);
  g.provenance = provenance();
  return g;
}

}  // namespace

class TestResultsJson : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void gridHasTheDocumentedLayout() {
    hs::HeadGrid g;
    g.id = "induction.score";
    g.values.resize(2, 3);
    g.values << 1, 2, 3, 4, 5, 6;
    const json j = g;
    QCOMPARE(j["shape"], json({2, 3}));
    QCOMPARE(j["values"], json({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}));  // rows are layers
    QCOMPARE(j["id"].get<std::string>(), std::string("induction.score"));
  }

  void gridRoundTripIsBitExactThroughText() {
    const hs::HeadGrid g = awkwardGrid();
    // Through the serialized text, as a session file stores it.
    const hs::HeadGrid back = json::parse(json(g).dump()).get<hs::HeadGrid>();
    QCOMPARE(back.id, g.id);
    QCOMPARE(back.name, g.name);
    QCOMPARE(back.unit, g.unit);
    QCOMPARE(back.layers(), 3);
    QCOMPARE(back.heads(), 4);
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h)
        QVERIFY2(sameDouble(back.values(l, h), g.values(l, h)),
                 qPrintable(QString("value (%1,%2)").arg(l).arg(h)));
    QVERIFY(std::signbit(back.values(0, 1)));  // -0.0 keeps its sign
    QVERIFY(std::isnan(back.values(1, 2)));
    QCOMPARE(back.values(1, 3), std::numeric_limits<double>::infinity());
    QCOMPARE(back.values(2, 0), -std::numeric_limits<double>::infinity());
    QCOMPARE(back.provenance.seed, g.provenance.seed);
    QCOMPARE(back.provenance.options, g.provenance.options);
    QCOMPARE(back.provenance.created, g.provenance.created);
    // Re-serialising gives the same text: the form is stable.
    QCOMPARE(json(back).dump(), json(g).dump());
  }

  void nonFiniteValuesAreStrings() {
    const json j = awkwardGrid();
    QCOMPARE(j["values"][1][2], json("NaN"));
    QCOMPARE(j["values"][1][3], json("Infinity"));
    QCOMPARE(j["values"][2][0], json("-Infinity"));
    QVERIFY(j.dump().find("null") == std::string::npos);  // nothing was silently turned into null
  }

  void emptyGridRoundTrips() {
    hs::HeadGrid g;
    g.id = "empty";
    const hs::HeadGrid back = json::parse(json(g).dump()).get<hs::HeadGrid>();
    QCOMPARE(back.layers(), 0);
    QCOMPARE(back.heads(), 0);
  }

  void curveAndTableRoundTrip() {
    hs::Curve c;
    c.id = "ablation.k";
    c.name = "Accuracy vs k";
    c.x_label = "k";
    c.y_label = "accuracy";
    c.x = {0, 1, 2, 4, 8};
    c.series = {{"concept", {0.9, 0.8, 0.7, 0.1 + 0.2, std::nan("")}},
                {"token", {0.9, 0.85, -0.0, 1e-300, -std::numeric_limits<double>::infinity()}}};
    c.provenance = provenance();
    const hs::Curve cb = json::parse(json(c).dump()).get<hs::Curve>();
    QCOMPARE(cb.x, c.x);
    QCOMPARE(cb.series.size(), size_t(2));
    for (size_t s = 0; s < 2; ++s) {
      QCOMPARE(cb.series[s].first, c.series[s].first);
      for (size_t i = 0; i < c.x.size(); ++i)
        QVERIFY(sameDouble(cb.series[s].second[i], c.series[s].second[i]));
    }
    QCOMPARE(cb.x_label, c.x_label);

    hs::Table t;
    t.id = "metrics";
    t.columns = {"set", "accuracy", "tr_ratio", "n"};
    t.rows = {{"baseline", 0.1 + 0.2, std::numeric_limits<double>::quiet_NaN(), 50},
              {"TR ablated", 1.0 / 7.0, std::numeric_limits<double>::infinity(), 50}};
    const hs::Table tb = json::parse(json(t).dump()).get<hs::Table>();
    QCOMPARE(tb.columns, t.columns);
    QCOMPARE(tb.rows.size(), size_t(2));
    QCOMPARE(tb.rows[0][0].get<std::string>(), std::string("baseline"));
    QCOMPARE(tb.rows[0][1].get<double>(), 0.1 + 0.2);
    QVERIFY(std::isnan(tb.rows[0][2].get<double>()));
    QCOMPARE(tb.rows[1][2].get<double>(), std::numeric_limits<double>::infinity());
    QCOMPARE(tb.rows[1][3].get<int>(), 50);
  }

  void runRoundTrip() {
    hs::AnalysisRun r;
    r.id = "tsla-1";
    r.method = "tsla";
    r.options = {{"shots", 8}};
    r.grids = {awkwardGrid()};
    r.grids.push_back(awkwardGrid());
    r.grids[1].id = "tsla.tl";
    r.tensors = {"tsla-1/steer_tr"};
    r.summary = {{"accuracy", 0.75}};
    const hs::AnalysisRun b = json::parse(json(r).dump()).get<hs::AnalysisRun>();
    QCOMPARE(b.id, r.id);
    QCOMPARE(b.method, r.method);
    QCOMPARE(b.options, r.options);
    QCOMPARE(b.grids.size(), size_t(2));
    QCOMPARE(b.grids[1].id, std::string("tsla.tl"));
    QCOMPARE(b.tensors, r.tensors);
    QCOMPARE(b.summary, r.summary);
    QCOMPARE(json(b).dump(), json(r).dump());
  }

  void headRefIsAPair() {
    const json j = std::vector<hs::HeadRef>{{1, 2}, {3, 0}};
    QCOMPARE(j, json({{1, 2}, {3, 0}}));
    const auto back = j.get<std::vector<hs::HeadRef>>();
    QVERIFY((back[0] == hs::HeadRef{1, 2}));
  }

  void malformedInputIsRejectedWithContext_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");  // a fragment the message must hold
    QTest::newRow("rows vs shape") << R"({"id":"g","shape":[2,2],"values":[[1,2]]})"
                                   << "grid g: \"values\" has 1 rows";
    QTest::newRow("row length") << R"({"id":"g","shape":[2,2],"values":[[1,2],[3]]})"
                                << "values row 1 has 1 entries, expected 2";
    QTest::newRow("bad value") << R"({"id":"g","shape":[1,1],"values":[["x"]]})"
                               << "values[0][0]";
    QTest::newRow("null value") << R"({"id":"g","shape":[1,1],"values":[[null]]})"
                                << "values[0][0]";
    QTest::newRow("no id") << R"({"shape":[1,1],"values":[[1]]})"
                           << "has no \"id\"";
    QTest::newRow("no shape") << R"({"id":"g","values":[[1]]})"
                              << "has no \"shape\"";
    QTest::newRow("negative shape") << R"({"id":"g","shape":[-1,1],"values":[]})"
                                    << "\"shape\"";
    QTest::newRow("not object") << R"([1,2])"
                                << "expected an object";
    QTest::newRow("bad seed") << R"({"id":"g","shape":[0,0],"values":[],"provenance":{"seed":-3}})"
                              << "grid g: provenance";
  }
  void malformedInputIsRejectedWithContext() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    try {
      (void)json::parse(text.toStdString()).get<hs::HeadGrid>();
      QFAIL("accepted malformed grid JSON");
    } catch (const hs::Error& e) {
      QVERIFY2(QString(e.what()).contains(expected), e.what());
    }
  }

  // Intervals in the data model (issue 39, item 2): a grid's per-head standard errors and a curve's per-point
  // intervals survive JSON bit-exact (NaN included); files written before they existed read with none; a
  // malformed interval is refused by name.
  void intervalsRoundTrip() {
    hs::HeadGrid g = awkwardGrid();
    g.se = g.values.cwiseAbs() * 0.5;
    g.se(0, 1) = std::numeric_limits<double>::quiet_NaN();
    const hs::HeadGrid back = json::parse(json(g).dump()).get<hs::HeadGrid>();
    QVERIFY(back.hasSe());
    for (int l = 0; l < 3; ++l)
      for (int h = 0; h < 4; ++h)
        QVERIFY(sameDouble(back.se(l, h), g.se(l, h)));
    json old = json::parse(json(g).dump());
    old.erase("se");
    QVERIFY(!old.get<hs::HeadGrid>().hasSe());
    QVERIFY(!json(old.get<hs::HeadGrid>()).contains("se"));  // none written back either

    hs::Curve c;
    c.id = "dual_route.ablation.copy_random";
    c.x = {0, 1, 2};
    c.series = {{"token_copying", {1.0, 0.5, 1.0 / 3.0}}, {"random", {1.0, 0.9, 0.8}}};
    c.intervals = {{"random", {0.9, 0.7, std::numeric_limits<double>::quiet_NaN()}, {1.0, 1.0, 0.95}}};
    const hs::Curve cb = json::parse(json(c).dump()).get<hs::Curve>();
    QCOMPARE(cb.intervals.size(), size_t(1));
    QVERIFY(cb.intervalOf("random") && !cb.intervalOf("token_copying"));
    QVERIFY(cb.intervalOf("random")->lo[1] == 0.7 && std::isnan(cb.intervalOf("random")->lo[2]));
    QVERIFY(cb.intervalOf("random")->hi == c.intervals[0].hi);
    json oldCurve = json::parse(json(c).dump());
    oldCurve.erase("intervals");
    QVERIFY(oldCurve.get<hs::Curve>().intervals.empty());
    const auto expectError = [](json j, auto tag, const char* fragment) {
      try {
        (void)j.get<decltype(tag)>();
        QFAIL("accepted a malformed interval");
      } catch (const hs::Error& e) {
        QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
      }
    };
    json shortLo = json::parse(json(c).dump());
    shortLo["intervals"][0]["lo"] = {0.1};
    expectError(shortLo, hs::Curve{}, "interval of random: has 1 lo and 3 hi values, expected 3");
    json noSeries = json::parse(json(c).dump());
    noSeries["intervals"][0]["series"] = "fv";
    expectError(noSeries, hs::Curve{}, "interval of fv: no such series");
    json badSe = json::parse(json(g).dump());
    badSe["se"].erase(0);
    expectError(badSe, hs::HeadGrid{}, "\"se\" is");
  }

  // The shared interval helpers (core/results/intervals.h) on hand-computed cases.
  void intervalHelpers() {
    auto [lo, hi] = hs::wilsonInterval(81, 263);  // the published example: 0.2553 – 0.3662
    QVERIFY(std::abs(lo - 0.2553) < 1e-4 && std::abs(hi - 0.3662) < 1e-4);
    std::tie(lo, hi) = hs::wilsonInterval(0, 24);  // k = 0: exactly 0 below
    QCOMPARE(lo, 0.0);
    QVERIFY(std::abs(hi - 0.13797620467498017) < 1e-12);
    QVERIFY(std::abs(hs::studentT975(4) - 2.776445105) < 1e-9);
    QVERIFY(std::abs(hs::studentT975(40) - 2.021075390) < 1e-5);            // beyond the table: the expansion
    const hs::Spread s = hs::spreadOf({1.0, 2.0, 3.0, 4.0, std::nan("")});  // NaN left out
    QCOMPARE(s.n, 4);
    QCOMPARE(s.mean, 2.5);
    QVERIFY(std::abs(s.sd - std::sqrt(5.0 / 3.0)) < 1e-12);
    QVERIFY(std::abs(s.hi - (2.5 + 3.182446305 * std::sqrt(5.0 / 3.0) / 2.0)) < 1e-8);
    QVERIFY(std::isnan(hs::spreadOf({1.0}).lo));
    QVERIFY(std::abs(hs::standardError({1.0, 2.0, 3.0, 4.0}) - std::sqrt(5.0 / 3.0) / 2.0) < 1e-12);
    const std::vector<double> v = {0.1, 0.4, 0.35, 0.8, 0.05, 0.6};
    const auto b1 = hs::bootstrapMeanInterval(v, 7), b2 = hs::bootstrapMeanInterval(v, 7);
    QVERIFY(b1 == b2);  // seeded: the same interval every time
    QVERIFY(b1.first < 0.383 && 0.383 < b1.second && b1.first >= 0.05 && b1.second <= 0.8);
    hs::Curve c;
    c.x = {0, 1};
    c.series = {{"a", {0.5, 1.0}}, {"b", {0.25, 0.0}}};
    hs::addWilsonIntervals(c, 4, {"b"});
    QCOMPARE(c.intervals.size(), size_t(1));
    QCOMPARE(c.intervals[0].lo[1], 0.0);
    hs::Table t;
    t.columns = {"condition", "accuracy", "n"};
    t.rows = {{"a", 0.5, 10}, {"b", "?", 10}};
    hs::addWilsonColumns(t, "accuracy", "n");
    QVERIFY(t.columns.back() == "accuracy_hi" && t.rows[0].size() == 5);
    QCOMPARE(t.rows[0][3].get<double>(), hs::wilsonInterval(5, 10).first);
    QVERIFY(t.rows[1][3].is_null());
  }

  void malformedCurveAndRunRejected() {
    const auto expectError = [](const std::string& text, auto tag, const char* fragment) {
      try {
        (void)json::parse(text).get<decltype(tag)>();
        QFAIL("accepted malformed JSON");
      } catch (const hs::Error& e) {
        QVERIFY2(std::string(e.what()).find(fragment) != std::string::npos, e.what());
      }
    };
    expectError(R"({"id":"c","x":[1,2],"series":[{"id":"s","y":[1]}]})", hs::Curve{},
                "curve c: series s: has 1 y values, expected 2");
    expectError(R"({"id":"c","x":[1],"series":[{"id":"s","y":[1]},{"id":"s","y":[2]}]})", hs::Curve{},
                "appears twice");
    expectError(R"({"id":"t","columns":["a","b"],"rows":[[1]]})", hs::Table{}, "table t: row 0 has 1 cells");
    expectError(
        R"({"id":"r","grids":[{"id":"g","shape":[0,0],"values":[]},{"id":"g","shape":[0,0],"values":[]}]})",
        hs::AnalysisRun{}, "run r: grids id g appears twice");
    expectError(R"({"id":"r","grids":[{"id":"g","shape":[1,1],"values":[[true]]}]})", hs::AnalysisRun{},
                "run r: grid g: values[0][0]");
  }
};

QTEST_GUILESS_MAIN(TestResultsJson)
#include "test_results_json.moc"
