// Rank statistics against hand-computed values (derivations in the comments) and the selection
// rules the Heads tab relies on (top-k, top-%, ranks with ties, NaN handling).
#include <QtTest>

#include <cmath>
#include <limits>

#include "results/rank_stats.h"
#include "util/error.h"

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

hs::HeadGrid grid(int L, int H, std::vector<double> v, const std::string& id = "g") {
  hs::HeadGrid g;
  g.id = id;
  g.values.resize(L, H);
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      g.values(l, h) = v[static_cast<size_t>(l * H + h)];
  return g;
}

}  // namespace

class TestRankStats : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void averageRanksWithTies() {
    // Sorted: 0.5 (1), 1 (2), 2 2 (3,4 -> 3.5), 3 (5), 5 5 (6,7 -> 6.5).
    const std::vector<double> r = hs::averageRanks({1, 2, 2, 3, 5, 5, 0.5});
    QCOMPARE(r, (std::vector<double>{2, 3.5, 3.5, 5, 6.5, 6.5, 1}));
    QCOMPARE(hs::averageRanks({7, 7, 7}), (std::vector<double>{2, 2, 2}));
    QVERIFY(hs::averageRanks({}).empty());
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::averageRanks({1, kNaN}));
  }

  void smallHandCase() {
    // a = [1,2,2,3], b = [1,3,2,2]. Ranks a = [1,2.5,2.5,4], b = [1,4,2.5,2.5]; centred
    // [-1.5,0,0,1.5] and [-1.5,1.5,0,0]: rho = 2.25 / sqrt(4.5 * 4.5) = 0.5.
    // Pairs: (0,1) (0,2) (0,3) concordant, (1,3) discordant, (1,2) tied in a, (2,3) tied in b:
    // tau_b = (3 - 1) / sqrt((6 - 1)(6 - 1)) = 0.4.
    const std::vector<double> a{1, 2, 2, 3}, b{1, 3, 2, 2};
    QCOMPARE(hs::spearmanRho(a, b), 0.5);
    QVERIFY(std::abs(hs::kendallTauB(a, b) - 0.4) < 1e-15);
    QCOMPARE(hs::kendallTauB(a, b), hs::kendallTauB(b, a));  // symmetric
  }

  void sevenValueCaseMatchesReference() {
    // a = [1,2,2,3,5,5,0.5], b = [2,1,4,4,3,3,7]. Ranks b = [2,1,5.5,5.5,3.5,3.5,7].
    // Pearson of the ranks = -7/36 (checked with torch.corrcoef: -0.19444444444444448).
    // Pair counts: 7 concordant, 11 discordant, 2 tied in a, 2 tied in b, n0 = 21:
    // tau_b = (7 - 11) / sqrt(19 * 19) = -4/19.
    const std::vector<double> a{1, 2, 2, 3, 5, 5, 0.5}, b{2, 1, 4, 4, 3, 3, 7};
    QVERIFY(std::abs(hs::spearmanRho(a, b) - (-7.0 / 36.0)) < 1e-14);
    QVERIFY(std::abs(hs::kendallTauB(a, b) - (-4.0 / 19.0)) < 1e-14);
  }

  void extremesAndUndefined() {
    const std::vector<double> up{1, 2, 3, 4, 5}, down{50, 40, 30, 20, 10}, flat{3, 3, 3, 3, 3};
    QCOMPARE(hs::spearmanRho(up, down), -1.0);
    QCOMPARE(hs::kendallTauB(up, down), -1.0);
    QCOMPARE(hs::spearmanRho(up, up), 1.0);
    QCOMPARE(hs::kendallTauB(up, up), 1.0);
    // Monotone but non-linear: rank correlations are exactly 1.
    QCOMPARE(hs::spearmanRho(up, {1, 8, 27, 64, 125}), 1.0);
    QVERIFY(std::isnan(hs::spearmanRho(up, flat)));
    QVERIFY(std::isnan(hs::kendallTauB(up, flat)));
    QVERIFY(std::isnan(hs::spearmanRho({1}, {2})));
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::spearmanRho({1, 2}, {1, 2, 3}));
  }

  void nanPairsAreDropped() {
    // Dropping pair 2 leaves the small hand case above.
    const std::vector<double> a{1, 2, kNaN, 2, 3}, b{1, 3, 100, 2, 2};
    QCOMPARE(hs::spearmanRho(a, b), 0.5);
    QVERIFY(std::abs(hs::kendallTauB(a, b) - 0.4) < 1e-15);
  }

  void jaccardOfSets() {
    using H = hs::HeadRef;
    QCOMPARE(hs::jaccard({{0, 1}, {1, 1}, {2, 0}}, {{1, 1}, {2, 0}, {3, 3}, {4, 4}}), 2.0 / 5.0);
    QCOMPARE(hs::jaccard({H{0, 0}}, {H{0, 1}}), 0.0);
    QCOMPARE(hs::jaccard({}, {}), 1.0);
    QCOMPARE(hs::jaccard({{0, 0}, {0, 0}}, {H{0, 0}}), 1.0);  // duplicates ignored
  }

  void topHeadsOrderAndTies() {
    // 2 layers x 3 heads:   layer 0: 0.5  0.9  0.1
    //                       layer 1: 0.9  NaN  0.7
    const hs::HeadGrid g = grid(2, 3, {0.5, 0.9, 0.1, 0.9, kNaN, 0.7});
    const auto top = hs::topHeads(g, 3);
    QCOMPARE(top.size(), size_t(3));
    QVERIFY((top[0] == hs::HeadRef{0, 1}));  // tie at 0.9 broken layer-major
    QVERIFY((top[1] == hs::HeadRef{1, 0}));
    QVERIFY((top[2] == hs::HeadRef{1, 2}));
    QCOMPARE(hs::topHeads(g, 100).size(), size_t(5));  // NaN is never selected
    QVERIFY(hs::topHeads(g, 0).empty());
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::topHeads(g, -1));
  }

  void topPercentRoundsUpToAtLeastOne() {
    QCOMPARE(hs::topPercentCount(1024, 3.0), 31);  // 30.72 -> 31
    QCOMPARE(hs::topPercentCount(100, 3.0), 3);    // exactly 3, not 4
    QCOMPARE(hs::topPercentCount(40, 3.0), 2);     // 1.2 -> 2
    QCOMPARE(hs::topPercentCount(10, 3.0), 1);     // 0.3 -> 1
    QCOMPARE(hs::topPercentCount(10, 100.0), 10);
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::topPercentCount(10, 0.0));
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::topPercentCount(10, 101.0));

    std::vector<double> v(40);
    for (int i = 0; i < 40; ++i)
      v[static_cast<size_t>(i)] = i;  // head (l, h) = l * 8 + h; the best are (4,7) then (4,6)
    const auto top = hs::topPercent(grid(5, 8, v), 3.0);
    QCOMPARE(top.size(), size_t(2));
    QVERIFY((top[0] == hs::HeadRef{4, 7}));
    QVERIFY((top[1] == hs::HeadRef{4, 6}));
  }

  void jaccardAtKOfGrids() {
    const hs::HeadGrid a = grid(2, 2, {4, 3, 2, 1}, "a");  // top-2 {(0,0), (0,1)}
    const hs::HeadGrid b = grid(2, 2, {4, 1, 3, 2}, "b");  // top-2 {(0,0), (1,0)}
    QCOMPARE(hs::jaccardAtK(a, b, 2), 1.0 / 3.0);
    QCOMPARE(hs::jaccardAtK(a, b, 4), 1.0);
    QCOMPARE(hs::spearmanRho(a, a), 1.0);
    try {
      (void)hs::spearmanRho(a, grid(1, 4, {1, 2, 3, 4}, "other"));
      QFAIL("grids of different shape accepted");
    } catch (const hs::Error& e) {
      QVERIFY2(QString(e.what()).contains("other") && QString(e.what()).contains("a ["), e.what());
    }
  }

  void headRankCompetition() {
    const hs::HeadGrid g = grid(2, 3, {0.5, 0.9, 0.1, 0.9, kNaN, 0.7});
    QCOMPARE(hs::headRank(g, {0, 1}), 1);
    QCOMPARE(hs::headRank(g, {1, 0}), 1);  // tied with (0,1)
    QCOMPARE(hs::headRank(g, {1, 2}), 3);
    QCOMPARE(hs::headRank(g, {0, 0}), 4);
    QCOMPARE(hs::headRank(g, {0, 2}), 5);
    QCOMPARE(hs::headRank(g, {1, 1}), 6);  // NaN after every number
    QVERIFY_THROWS_EXCEPTION(hs::Error, hs::headRank(g, {2, 0}));
  }
};

QTEST_GUILESS_MAIN(TestRankStats)
#include "test_rank_stats.moc"
