// Hook-site names (the one table) and intervention op names round-trip; bad strings are named.
#include <QtTest>

#include "model/hooks.h"
#include "model/intervention.h"
#include "util/error.h"

using namespace hs;

class TestSites : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void namesFollowTransformerLens() {
    QCOMPARE(QString::fromStdString(residPre(3).name()), QString("blocks.3.hook_resid_pre"));
    QCOMPARE(QString::fromStdString(attnPattern(0).name()), QString("blocks.0.attn.hook_pattern"));
    QCOMPARE(QString::fromStdString(attnQ(1).name()), QString("blocks.1.attn.hook_q"));
    QCOMPARE(QString::fromStdString(attnK(1).name()), QString("blocks.1.attn.hook_k"));
    QCOMPARE(QString::fromStdString(attnV(1).name()), QString("blocks.1.attn.hook_v"));
    QCOMPARE(QString::fromStdString(attnZ(12).name()), QString("blocks.12.attn.hook_z"));
    QCOMPARE(QString::fromStdString(attnResult(2).name()), QString("blocks.2.attn.hook_result"));
    QCOMPARE(QString::fromStdString(attnOut(4).name()), QString("blocks.4.hook_attn_out"));
    QCOMPARE(QString::fromStdString(residMid(4).name()), QString("blocks.4.hook_resid_mid"));
    QCOMPARE(QString::fromStdString(mlpOut(5).name()), QString("blocks.5.hook_mlp_out"));
    QCOMPARE(QString::fromStdString(residPost(31).name()), QString("blocks.31.hook_resid_post"));
    QCOMPARE(QString::fromStdString(lnFinal().name()), QString("ln_final.hook_out"));
  }

  void everySiteRoundTrips() {
    for (const SiteInfo& info : siteTable()) {
      for (int layer : {0, 7, 123}) {
        const Site s{info.kind, info.kind == SiteKind::LnFinal ? -1 : layer};
        const Site back = Site::parse(s.name());
        QVERIFY2(back == s, s.name().c_str());
      }
    }
    QCOMPARE(int(siteTable().size()), 12);
  }

  void tableAxesMatchShapes() {
    QCOMPARE(siteInfo(SiteKind::AttnPattern).headAxis, 1);
    QCOMPARE(siteInfo(SiteKind::AttnPattern).posAxis, 2);
    QCOMPARE(siteInfo(SiteKind::AttnZ).headAxis, 2);
    QCOMPARE(siteInfo(SiteKind::AttnZ).posAxis, 1);
    for (SiteKind k : {SiteKind::AttnQ, SiteKind::AttnK, SiteKind::AttnV}) {
      QVERIFY(siteInfo(k).perHead);
      QCOMPARE(siteInfo(k).headAxis, 2);
      QCOMPARE(siteInfo(k).posAxis, 1);
    }
    QVERIFY(!siteInfo(SiteKind::ResidMid).perHead);
    QVERIFY(!siteInfo(SiteKind::ResidPre).perHead);
    QVERIFY(siteInfo(SiteKind::AttnResult).perHead);
  }

  void badNamesAreErrorsThatQuoteTheString() {
    for (const char* bad : {"blocks.x.hook_resid_pre", "blocks..hook_resid_pre", "blocks.1.hook_nothing",
                            "ln_final", "blocks.-1.attn.hook_z", "", "ln_final.hook_normalized"}) {
      try {
        Site::parse(bad);
        QFAIL(qPrintable(QString("no error for \"%1\"").arg(bad)));
      } catch (const Error& e) {
        QVERIFY2(std::string(e.what()).find(std::string("\"") + bad) != std::string::npos, e.what());
      }
    }
  }

  // An unknown name is answered with every valid one, taken from the table (so a new site is listed too).
  void unknownNamesListTheValidOnes() {
    std::string message;
    try {
      Site::parse("blocks.0.attn.hook_rot_q");
    } catch (const Error& e) {
      message = e.what();
    }
    QVERIFY2(message.rfind("unknown hook site \"blocks.0.attn.hook_rot_q\" (valid: ", 0) == 0,
             message.c_str());
    for (const SiteInfo& info : siteTable()) {
      std::string name = info.pattern;
      if (const auto at = name.find("{l}"); at != std::string::npos) name.replace(at, 3, "L");
      QVERIFY2(message.find(name) != std::string::npos, (name + " missing from: " + message).c_str());
    }
    QVERIFY2(message.find("blocks.L.hook_resid_pre, blocks.L.attn.hook_pattern") != std::string::npos,
             message.c_str());
  }

  void opsRoundTrip() {
    for (InterventionOp op : {InterventionOp::Zero, InterventionOp::Mean, InterventionOp::Replace,
                              InterventionOp::Add, InterventionOp::Interpolate, InterventionOp::Scale})
      QVERIFY(parseInterventionOp(toString(op)) == op);
    QCOMPARE(QString(toString(InterventionOp::Interpolate)), QString("interpolate"));
    QVERIFY_THROWS_EXCEPTION(Error, parseInterventionOp("ablate"));
  }
};

QTEST_GUILESS_MAIN(TestSites)
#include "test_sites.moc"
