// The bounded JSON reader and the typed field readers (core/util/json_read.h).
#include <QtTest>

#include <string>

#include "robust_test_util.h"
#include "util/error.h"
#include "util/json_read.h"

using nlohmann::json;

namespace {

using hs::test::errorOf;

std::string nestedArrays(int depth) {
  return std::string(depth, '[') + "1" + std::string(depth, ']');
}

}  // namespace

class TestJsonRead : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // Depth is refused while parsing, before a tree exists to recurse over: the issue's 80,000 levels crashed
  // error messages and copies; the limit (256) is a few hundred levels and real files nest below 20.
  void depthLimit() {
    const hs::JsonLimits l = hs::json_limits::general();
    QCOMPARE(hs::parseJsonBounded(nestedArrays(256), "f.json", l).dump().size(), size_t(256 * 2 + 1));
    EXPECT_ERROR(hs::parseJsonBounded(nestedArrays(257), "f.json", l), "f.json", "nested deeper than 256");
    EXPECT_ERROR(hs::parseJsonBounded(nestedArrays(80000), "f.json", l), "f.json", "nested deeper than 256");
    const std::string deepObject = [] {
      std::string s;
      for (int i = 0; i < 90000; ++i)
        s += "{\"a\": ";
      return s + "1" + std::string(90000, '}');
    }();
    EXPECT_ERROR(hs::parseJsonBounded(deepObject, "s.hscope", hs::json_limits::session()), "s.hscope",
                 "nested deeper than 256", "session JSON");
    EXPECT_ERROR(hs::parseJsonBounded("{\"a\": {\"shape\": " + nestedArrays(20) + "}}", "m.safetensors",
                                      hs::json_limits::safetensorsHeader()),
                 "nested deeper than 16", "safetensors header");
  }

  void sizeAndCountLimits() {
    hs::JsonLimits l = hs::json_limits::general();
    l.max_bytes = 100;
    EXPECT_ERROR(hs::parseJsonBounded(std::string(200, ' ') + "1", "f.json", l), "f.json", "201 bytes",
                 "100 bytes");
    l = hs::json_limits::general();
    l.max_values = 10;
    QVERIFY(hs::parseJsonBounded("[1,2,3,4,5,6,7,8,9]", "f.json", l).size() == 9);  // 9 + the array
    EXPECT_ERROR(hs::parseJsonBounded("[1,2,3,4,5,6,7,8,9,10]", "f.json", l), "more than 10 values");
    l.max_string_bytes = 4;
    EXPECT_ERROR(hs::parseJsonBounded("[\"abcdef\"]", "f.json", l), "string of 6 bytes", "limit of 4 bytes");
    EXPECT_ERROR(hs::parseJsonBounded("{\"abcdef\": 1}", "f.json", l), "key of 6 bytes");
  }

  // nlohmann keeps the last of two equal keys: a second "a" would silently replace the first.
  void duplicateKeysRefused() {
    EXPECT_ERROR(hs::parseJsonBounded(R"({"a": 1, "b": 2, "a": 3})", "f.json", hs::json_limits::general()),
                 "f.json", "key \"a\" appears twice");
    const json j =
        hs::parseJsonBounded(R"({"a": {"x": 1}, "b": {"x": 2}})", "f.json", hs::json_limits::general());
    QCOMPARE(j["b"]["x"].get<int>(), 2);  // the same key in two objects is fine
  }

  void malformedAndEmpty() {
    EXPECT_ERROR(hs::parseJsonBounded("{\"a\": [1,\n2,", "f.json", hs::json_limits::general()), "f.json",
                 "malformed JSON", "line 2");
    EXPECT_ERROR(hs::parseJsonBounded(" \n ", "f.json", hs::json_limits::general()), "empty file");
    // The parser's "last read" excerpt of a long token is cut: the message stays one short line.
    EXPECT_ERROR(hs::parseJsonBounded("[\"" + std::string(100000, 'x'), "f.json", hs::json_limits::general()),
                 "malformed JSON");
  }

  void excerptIsShort() {
    const json big = json::parse(nestedArrays(200));
    QVERIFY(hs::jsonExcerpt(big).size() <= 63);
    json arr = json::array();
    for (int i = 0; i < 100000; ++i)
      arr.push_back(i);
    const std::string e = hs::jsonExcerpt(arr, 30);
    QVERIFY2(e.size() <= 33 && e.rfind("[0, 1, 2", 0) == 0 && e.substr(e.size() - 3) == "...", e.c_str());
    QCOMPARE(hs::jsonExcerpt(json("ab")), std::string("\"ab\""));
    QCOMPARE(hs::jsonExcerpt(json(std::string("\xff\xfe"))).empty(), false);  // invalid UTF-8 does not throw
  }

  // 64-bit reads with explicit ranges: 4294967304 is refused, never read as 8; 2^40 never as 0.
  void typedReads() {
    const json j = json::parse(R"({"heads": 4294967304, "neg": -2147483649, "big": 1099511627776,
      "f": 64.0, "half": 2.5, "s": "x", "o": {"list": [1, "two"]}, "n": null})");
    const hs::JsonNode root(j, "/m/config.json");
    EXPECT_ERROR(root.at("heads").intIn(1, 1024), "/m/config.json: heads", "4294967304", "1..1024");
    EXPECT_ERROR(root.at("neg").integer(-1, 100), "neg", "-2147483649");
    EXPECT_ERROR(root.at("big").integer(0, (1 << 22) - 1), "big", "1099511627776", "4194303");
    QCOMPARE(root.at("big").integer(0, INT64_MAX), int64_t(1) << 40);
    QCOMPARE(root.at("f").intIn(1, 100), 64);
    EXPECT_ERROR(root.at("half").intIn(0, 10), "half", "expected an integer", "a number 2.5");
    EXPECT_ERROR(root.at("s").intIn(0, 10), "s: expected an integer, found a string \"x\"");
    EXPECT_ERROR(root.at("o").at("list").at(size_t{0}).string(), "o.list[0]", "expected a string",
                 "an integer 1");
    QCOMPARE(root.at("o").at("list").at(size_t{1}).string(), std::string("two"));
    EXPECT_ERROR(root.at("o").string(), "o: expected a string, found an object of 1 entries");
    EXPECT_ERROR(root.at("missing"), "/m/config.json", "missing required field \"missing\"");
    EXPECT_ERROR(root.at("n"), "missing required field \"n\"");  // null counts as absent
    QVERIFY(!root.has("n"));
    QCOMPARE(root.optInteger("absent", 7, 0, 10), int64_t(7));
    QCOMPARE(root.optString("s", "d"), std::string("x"));
    EXPECT_ERROR(root.optBool("s", false), "s: expected true or false");
    EXPECT_ERROR(root.at("o").at("list").array(1), "o.list", "has 2 elements", "limit of 1");
    const json weird = json::parse(R"({"a b.c": {"x": 1}})");
    EXPECT_ERROR(hs::JsonNode(weird, "f").at("a b.c").at("x").string(), "[\"a b.c\"].x");
  }

  void finiteNumbers() {
    const json j = json::parse(R"({"neg": -1e-5, "zero": 0, "big": 1e308, "ok": 1e-6})");
    const hs::JsonNode r(j, "c.json");
    EXPECT_ERROR(r.at("neg").positiveFinite(), "neg", "finite number > 0");
    EXPECT_ERROR(r.at("zero").positiveFinite(), "zero");
    QCOMPARE(r.at("ok").positiveFinite(), 1e-6);
    // 1e999 would be infinity: the parser refuses it.
    EXPECT_ERROR(hs::parseJsonBounded(R"({"eps": 1e999})", "c.json", hs::json_limits::modelConfig()),
                 "c.json", "number overflow");
  }
};

QTEST_GUILESS_MAIN(TestJsonRead)
#include "test_json_read.moc"
