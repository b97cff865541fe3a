// The Unicode normal forms of the tokenizer normalizers (core/tokenizer/normalizer.h) on cases that need
// each part of the algorithm: decomposition (canonical and compatibility, recursive), canonical reordering,
// composition with blocked marks, Hangul by the algorithm, singletons, and bytes that are not UTF-8. The
// expected strings are Python's unicodedata.normalize; test_hf_tokenizers holds the whole tokenizers
// against the library.
#include <QtTest>

#include <string>

#include "tokenizer/normalizer.h"

using hs::unicode::NormalForm;

namespace {

struct Case {
  const char* name;
  std::string input, nfc, nfd, nfkc, nfkd;
};

const Case kCases[] = {
    {"combining acute", "e\u0301", "\u00e9", "e\u0301", "\u00e9", "e\u0301"},
    {"marks composed in order", "a\u0323\u0301\u0302", "\u1ea1\u0301\u0302", "a\u0323\u0301\u0302",
     "\u1ea1\u0301\u0302", "a\u0323\u0301\u0302"},
    {"Hangul jamo", "\u1100\u1161\u11a8", "\uac01", "\u1100\u1161\u11a8", "\uac01", "\u1100\u1161\u11a8"},
    {"Hangul syllable", "\uac01", "\uac01", "\u1100\u1161\u11a8", "\uac01", "\u1100\u1161\u11a8"},
    {"ligature", "\ufb01", "\ufb01", "\ufb01", "fi", "fi"},
    {"circled digit", "\u2460", "\u2460", "\u2460", "1", "1"},
    {"leading mark", "\u0301a", "\u0301a", "\u0301a", "\u0301a", "\u0301a"},
    {"angstrom singleton", "\u212b", "\u00c5", "A\u030a", "\u00c5", "A\u030a"},
    {"long s with dots", "\u1e9b\u0323", "\u1e9b\u0323", "\u017f\u0323\u0307", "\u1e69", "s\u0323\u0307"},
    {"reordered marks", "x\u0345\u0307\u0323", "\u1e8b\u0323\u0345", "x\u0323\u0307\u0345",
     "\u1e8b\u0323\u0345", "x\u0323\u0307\u0345"},
    {"invalid bytes kept", "e\xff\u0301", "e\xff\u0301", "e\xff\u0301", "e\xff\u0301", "e\xff\u0301"},
    {"ascii", "plain text", "plain text", "plain text", "plain text", "plain text"},
};

}  // namespace

class TestNormalizer : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void normalForms() {
    for (const Case& c : kCases) {
      const std::pair<NormalForm, const std::string*> forms[] = {{NormalForm::NFC, &c.nfc},
                                                                 {NormalForm::NFD, &c.nfd},
                                                                 {NormalForm::NFKC, &c.nfkc},
                                                                 {NormalForm::NFKD, &c.nfkd}};
      const char* names[] = {"NFC", "NFD", "NFKC", "NFKD"};
      for (int f = 0; f < 4; ++f) {
        const std::string got = hs::unicode::normalize(c.input, forms[f].first);
        QVERIFY2(got == *forms[f].second, qPrintable(QString("%1 of %2: got \"%3\", expected \"%4\"")
                                                         .arg(names[f], c.name, QString::fromStdString(got),
                                                              QString::fromStdString(*forms[f].second))));
      }
    }
  }

  void steps() {
    const hs::Normalizer llama2({{hs::NormalizerStep::Kind::Prepend, "\u2581", {}},
                                 {hs::NormalizerStep::Kind::Replace, " ", "\u2581"}});
    QCOMPARE(llama2.apply("a b"), std::string("\u2581a\u2581b"));
    QCOMPARE(llama2.apply(""), std::string());  // Prepend adds nothing to empty text
    QVERIFY(llama2.prepends("\u2581"));
    const hs::Normalizer qwen({{hs::NormalizerStep::Kind::NFC, {}, {}}});
    QCOMPARE(qwen.apply("cafe\u0301"), std::string("caf\u00e9"));
    QVERIFY(!qwen.prepends("\u2581"));
  }

  void whitespace() {
    for (char32_t cp : {0x20, 0x09, 0x0A, 0x0D, 0x85, 0xA0, 0x1680, 0x2009, 0x2028, 0x3000})
      QVERIFY2(hs::unicode::isWhitespace(cp), qPrintable(QString::number(cp, 16)));
    for (char32_t cp : {0x1C, 0x200B, 0x180E, 0xFEFF, 0x41})
      QVERIFY2(!hs::unicode::isWhitespace(cp), qPrintable(QString::number(cp, 16)));
  }
};

QTEST_GUILESS_MAIN(TestNormalizer)
#include "test_normalizer.moc"
