// CSV / JSON export: exact file contents for grids (wide and long), curves and tables, numbers that
// read back to the same double, RFC 4180 quoting, and the file names a run exports to.
#include <QtTest>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "results/results_json.h"
#include "session/export_csv.h"
#include "util/error.h"

namespace fs = std::filesystem;

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

hs::HeadGrid smallGrid() {
  hs::HeadGrid g;
  g.id = "tsla.tr";
  g.values.resize(2, 3);  // [layers, heads]
  g.values << 0.1, -2, 1.0 / 3.0, std::numeric_limits<double>::quiet_NaN(), 1e-300,
      -std::numeric_limits<double>::infinity();
  return g;
}

}  // namespace

class TestExportCsv : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void numbersReadBackExactly() {
    QCOMPARE(hs::csvNumber(0.1), std::string("0.1"));  // shortest form, not 0.10000000000000001
    QCOMPARE(hs::csvNumber(-2), std::string("-2"));
    QCOMPARE(hs::csvNumber(std::nan("")), std::string("NaN"));
    QCOMPARE(hs::csvNumber(-std::numeric_limits<double>::infinity()), std::string("-inf"));
    for (double v : {1.0 / 3.0, 0.1 + 0.2, 1e-300, 4.9e-324, 1.7976931348623157e308, -123456.789, 2.0 / 7.0})
      QCOMPARE(std::strtod(hs::csvNumber(v).c_str(), nullptr), v);
  }

  void gridWideAndLong() {
    const hs::HeadGrid g = smallGrid();
    QCOMPARE(hs::gridToCsvWide(g), std::string("layer,h0,h1,h2\n"
                                               "0,0.1,-2,0.3333333333333333\n"
                                               "1,NaN,1e-300,-inf\n"));
    QCOMPARE(hs::gridToCsvLong(g), std::string("layer,head,value\n"
                                               "0,0,0.1\n0,1,-2\n0,2,0.3333333333333333\n"
                                               "1,0,NaN\n1,1,1e-300\n1,2,-inf\n"));
  }

  void curveAndTableWithQuoting() {
    hs::Curve c;
    c.id = "acc";
    c.x_label = "k, heads";
    c.x = {0, 1, 2};
    c.series = {{"concept", {0.5, 0.25, 0.125}}, {"say \"token\"", {1, 0.75, std::nan("")}}};
    QCOMPARE(hs::curveToCsv(c), std::string("\"k, heads\",concept,\"say \"\"token\"\"\"\n"
                                            "0,0.5,1\n1,0.25,0.75\n2,0.125,NaN\n"));
    c.x_label.clear();
    QVERIFY(hs::curveToCsv(c).rfind("x,concept,", 0) == 0);
    c.series[0].second.pop_back();
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::curveToCsv(c));

    hs::Table t;
    t.id = "metrics";
    t.columns = {"set", "accuracy", "n"};
    t.rows = {{"baseline", 0.75, 50}, {"TR, ablated", nlohmann::json(), 50}};
    QCOMPARE(hs::tableToCsv(t), std::string("set,accuracy,n\nbaseline,0.75,50\n\"TR, ablated\",,50\n"));
  }

  // Intervals in the exports (issue 39, item 2): a curve's intervals as "<series>_lo,<series>_hi" columns
  // after the series; a grid's standard errors as the long form's "se" column and a wide ".se.csv" file.
  void intervalsAreExported() {
    hs::Curve c;
    c.id = "acc";
    c.x_label = "k";
    c.x = {0, 1};
    c.series = {{"tr", {1.0, 0.25}}, {"random", {1.0, 0.5}}};
    c.intervals = {{"random", {0.8, 0.25}, {1.0, 0.75}}};
    QCOMPARE(hs::curveToCsv(c),
             std::string("k,tr,random,random_lo,random_hi\n0,1,1,0.8,1\n1,0.25,0.5,0.25,0.75\n"));
    c.intervals[0].hi.pop_back();
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::curveToCsv(c));

    hs::HeadGrid g = smallGrid();
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::gridSeToCsvWide(g));
    g.se = Eigen::MatrixXd::Constant(2, 3, 0.5);
    g.se(1, 0) = std::nan("");
    QCOMPARE(hs::gridToCsvLong(g), std::string("layer,head,value,se\n"
                                               "0,0,0.1,0.5\n0,1,-2,0.5\n0,2,0.3333333333333333,0.5\n"
                                               "1,0,NaN,NaN\n1,1,1e-300,0.5\n1,2,-inf,0.5\n"));
    QCOMPARE(hs::gridSeToCsvWide(g), std::string("layer,h0,h1,h2\n0,0.5,0.5,0.5\n1,NaN,0.5,0.5\n"));
    hs::AnalysisRun run;
    run.id = "r";
    run.grids = {g};
    QTemporaryDir dir;
    const std::vector<std::string> files = hs::exportRun(run, dir.path().toStdString());
    QCOMPARE(files.size(), size_t(2));
    QVERIFY(files[1].size() > 7 && files[1].substr(files[1].size() - 7) == ".se.csv");
  }

  void jsonExportIsTheResultsForm() {
    const hs::HeadGrid g = smallGrid();
    const nlohmann::json j = nlohmann::json::parse(hs::gridToJsonText(g));
    QCOMPARE(j["shape"], nlohmann::json({2, 3}));
    QCOMPARE(j["values"][1][0], nlohmann::json("NaN"));
    const hs::HeadGrid back = j.get<hs::HeadGrid>();
    QCOMPARE(back.values(0, 2), g.values(0, 2));
  }

  void fileNames() {
    QCOMPARE(hs::fileNameFromId("tsla.tr"), std::string("tsla.tr"));
    QCOMPARE(hs::fileNameFromId("a/b c"), std::string("a_b_c"));
    QCOMPARE(hs::fileNameFromId(".."), std::string("_.."));
    QCOMPARE(hs::fileNameFromId(""), std::string("_"));
  }

  void exportSessionWritesEveryResult() {
    QTemporaryDir tmp;
    QVERIFY(tmp.isValid());
    const std::string folder = (fs::path(tmp.path().toStdString()) / "out" / "nested").string();

    hs::Session s;
    hs::AnalysisRun r;
    r.id = "tsla-1";
    r.grids = {smallGrid()};
    r.grids.push_back(smallGrid());
    r.grids[1].id = "tsla.tl";
    hs::Curve c;
    c.id = "geometry/alignment";
    c.x = {0, 1};
    c.series = {{"baseline", {0.5, 0.75}}};
    r.curves = {c};
    hs::Table t;
    t.id = "metrics";
    t.columns = {"a"};
    t.rows = {{1}};
    r.tables = {t};
    s.runs = {r};
    hs::AnalysisRun r2;
    r2.id = "ind-2";
    r2.grids = {smallGrid()};
    r2.grids[0].id = "induction.score";
    s.runs.push_back(r2);

    hs::CsvExportOptions opt;
    opt.long_form = true;
    opt.json = true;
    const auto written = hs::exportSession(s, folder, opt);
    std::vector<std::string> names;
    for (const auto& p : written) {
      QVERIFY2(fs::exists(p), p.c_str());
      names.push_back(fs::path(p).filename().string());
    }
    QCOMPARE(names,
             (std::vector<std::string>{"tsla-1.tsla.tr.csv", "tsla-1.tsla.tr.long.csv", "tsla-1.tsla.tr.json",
                                       "tsla-1.tsla.tl.csv", "tsla-1.tsla.tl.long.csv", "tsla-1.tsla.tl.json",
                                       "tsla-1.geometry_alignment.csv", "tsla-1.geometry_alignment.json",
                                       "tsla-1.metrics.csv", "ind-2.induction.score.csv",
                                       "ind-2.induction.score.long.csv", "ind-2.induction.score.json"}));
    QCOMPARE(readText(written[0]), hs::gridToCsvWide(smallGrid()));
    QCOMPARE(readText(written[6]), std::string("x,baseline\n0,0.5\n1,0.75\n"));
    QCOMPARE(readText(written[8]), std::string("a\n1\n"));

    // Ids that collide once made file-name safe: refused before anything is written.
    hs::AnalysisRun clash;
    clash.id = "c";
    clash.grids = {smallGrid(), smallGrid()};
    clash.grids[0].id = "a/b";
    clash.grids[1].id = "a_b";
    const std::string f2 = (fs::path(tmp.path().toStdString()) / "clash").string();
    try {
      hs::exportRun(clash, f2);
      QFAIL("colliding file names accepted");
    } catch (const hs::Error& e) {
      QVERIFY2(QString(e.what()).contains("a/b") && QString(e.what()).contains("a_b"), e.what());
    }
    QVERIFY(!fs::exists(f2));  // nothing written, not even the folder

    // Across runs too: run "a.b" grid "c" and run "a" grid "b.c" both make "a.b.c.csv".
    hs::Session two;
    two.runs = {hs::AnalysisRun{}, hs::AnalysisRun{}};
    two.runs[0].id = "a.b";
    two.runs[0].grids = {smallGrid()};
    two.runs[0].grids[0].id = "c";
    two.runs[1].id = "a";
    two.runs[1].grids = {smallGrid()};
    two.runs[1].grids[0].id = "b.c";
    try {
      hs::exportSession(two, f2);
      QFAIL("colliding file names across runs accepted");
    } catch (const hs::Error& e) {
      QVERIFY2(QString(e.what()).contains("a.b.c.csv"), e.what());
    }
    QVERIFY(!fs::exists(f2));
  }

  void singleFileWriters() {
    QTemporaryDir tmp;
    const std::string p = (fs::path(tmp.path().toStdString()) / "g.csv").string();
    hs::writeGridCsv(smallGrid(), p, /*wide=*/false);
    QCOMPARE(readText(p), hs::gridToCsvLong(smallGrid()));
    const std::string bad = (fs::path(tmp.path().toStdString()) / "no" / "such" / "g.csv").string();
    try {
      hs::writeGridCsv(smallGrid(), bad);
      QFAIL("wrote into a missing folder");
    } catch (const hs::Error& e) {
      QVERIFY2(QString(e.what()).contains(QString::fromStdString(bad)), e.what());
    }
  }
};

QTEST_GUILESS_MAIN(TestExportCsv)
#include "test_export_csv.moc"
