// Safetensors reader/writer: bit-exact round trips, zero-copy views of the map, sharded folders,
// and a clear error (naming the file and the problem) for every kind of broken file.
#include <ATen/ATen.h>

#include <QTemporaryDir>
#include <QtTest>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "io_test_util.h"
#include "model/io/safetensors.h"
#include "test_paths.h"

using namespace hs;
using hs::test::appendPod;
using hs::test::writeBytes;

namespace {

bool bitEqual(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  if (a.numel() == 0) return true;  // an empty tensor has no data pointer to compare
  const at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<size_t>(ca.numel()) * ca.element_size()) == 0;
}

// A safetensors file from a header string and raw data bytes (header written as given, unpadded).
std::string stFile(const std::string& header, const std::string& data) {
  std::string out;
  appendPod<uint64_t>(out, header.size());
  return out + header + data;
}

}  // namespace

class TestSafetensors : public QObject, protected hs::test::TempDirFixture {
  Q_OBJECT

 private Q_SLOTS:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void roundTripEveryDtypeBitExact() {
    at::manual_seed(7);
    const auto f32 = at::randn({3, 5});
    std::vector<std::pair<std::string, at::Tensor>> ts = {
        {"f64", at::randn({4, 2}, at::kDouble)},
        {"f32", f32},
        {"f16", at::randn({7}).to(at::kHalf)},
        {"bf16", at::randn({2, 3, 2}).to(at::kBFloat16)},
        {"i64", at::randint(-(int64_t(1) << 40), int64_t(1) << 40, {5}, at::kLong)},
        {"i32", at::randint(-100000, 100000, {3, 3}, at::kInt)},
        {"i16", at::randint(-30000, 30000, {3}, at::kShort)},
        {"i8", at::randint(-128, 127, {5}, at::kChar)},
        {"u8", at::randint(0, 255, {9}, at::kByte)},
        {"bool", at::randint(0, 2, {6}, at::kByte).to(at::kBool)},
        {"scalar", at::scalar_tensor(3.25)},
        {"empty", at::empty({0, 4})},
        {"transposed", f32.t()},  // non-contiguous input is written contiguous
    };
    const std::map<std::string, std::string> meta = {{"format", "pt"}, {"headscope.note", "ünïcode ✓"}};
    const std::string path = tmp("all.safetensors");
    writeSafetensors(path, ts, meta);

    auto f = SafetensorsFile::open(path);
    QCOMPARE(f->metadata(), meta);
    std::vector<std::string> expectedNames;
    for (const auto& [n, t] : ts)
      expectedNames.push_back(n);
    std::sort(expectedNames.begin(), expectedNames.end());
    QCOMPARE(f->names(), expectedNames);
    for (const auto& [n, t] : ts) {
      const at::Tensor back = f->tensor(n);
      QVERIFY2(bitEqual(back, t), n.c_str());
      QVERIFY2(back.is_contiguous(), n.c_str());
    }
    QCOMPARE(f->entry("bf16").dtype, std::string("BF16"));
    QCOMPARE(f->entry("bool").dtype, std::string("BOOL"));
    QCOMPARE(f->entry("i8").dtype, std::string("I8"));
    QCOMPARE(f->entry("transposed").shape, (std::vector<int64_t>{5, 3}));

    // The data buffer starts 8-aligned: the length prefix plus the padded header.
    const std::string bytes = hs::test::readBytes(path);
    uint64_t n;
    std::memcpy(&n, bytes.data(), 8);
    QCOMPARE((8 + n) % 8, uint64_t(0));
  }

  void tensorsAreZeroCopyViewsOfTheMap() {
    const at::Tensor w = at::arange(0, 1000, at::kFloat).reshape({10, 100});
    const at::Tensor b = at::randint(0, 255, {3}, at::kByte);  // odd-sized U8 must not misalign the F32
    const std::string path = tmp("view.safetensors");
    writeSafetensors(path, {{"b", b}, {"w", w}});
    auto f = SafetensorsFile::open(path);
    at::Tensor t = f->tensor("w");
    QVERIFY(f->mapped().contains(t.data_ptr(), t.numel() * 4));
    QVERIFY(f->mapped().contains(f->tensor("b").data_ptr(), 3));
    QVERIFY(at::equal(t, w));

    // The tensor keeps the map alive after the file object is gone...
    f.reset();
    QCOMPARE(t[9][99].item<float>(), 999.0f);
    // ...and an in-place write lands on a private copy-on-write page, never in the file.
    t.fill_(-1.0f);
    QVERIFY(at::equal(SafetensorsFile::open(path)->tensor("w"), w));
  }

  void unalignedDataIsCopied() {
    // Header of 9 bytes: the data buffer starts at byte 17, so an F32 tensor there is misaligned.
    const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    std::string padded = header;
    while ((8 + padded.size()) % 4 != 1)
      padded.push_back(' ');
    std::string data;
    appendPod<float>(data, 1.5f);
    appendPod<float>(data, -2.0f);
    const std::string path = tmp("unaligned.safetensors");
    writeBytes(path, stFile(padded, data));
    auto f = SafetensorsFile::open(path);
    const at::Tensor t = f->tensor("x");
    QVERIFY(!f->mapped().contains(t.data_ptr()));
    QCOMPARE(t[0].item<float>(), 1.5f);
    QCOMPARE(t[1].item<float>(), -2.0f);
  }

  void writeIsAtomic() {
    QTemporaryDir d;
    const std::string path = d.filePath("model.safetensors").toStdString();
    writeSafetensors(path, {{"a", at::ones({2})}});
    // A failing write (complex dtype is not writable) leaves the old file intact and no temp file.
    HS_EXPECT_ERROR(writeSafetensors(path, {{"a", at::zeros({2})}, {"c", at::zeros({2}, at::kComplexFloat)}}),
                    path, "tensor c");
    QVERIFY(at::equal(SafetensorsFile::open(path)->tensor("a"), at::ones({2})));
    QCOMPARE(QDir(d.path()).entryList(QDir::Files).size(), 1);
    // Overwriting replaces the content.
    writeSafetensors(path, {{"a", at::full({3}, 2.0f)}});
    QVERIFY(at::equal(SafetensorsFile::open(path)->tensor("a"), at::full({3}, 2.0f)));
    QCOMPARE(QDir(d.path()).entryList(QDir::Files).size(), 1);
    HS_EXPECT_ERROR(
        writeSafetensors(d.filePath("no/such/dir/x.safetensors").toStdString(), {{"a", at::ones({1})}}),
        "no/such/dir/x.safetensors", "cannot create");
    HS_EXPECT_ERROR(writeSafetensors(path, {{"a", at::ones({1})}, {"a", at::ones({1})}}),
                    "tensor a given twice");
  }

  void corruptFilesAreRejected_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("expected");
    auto row = [](const char* name, const std::string& bytes, const char* expected) {
      QTest::newRow(name) << QByteArray(bytes.data(), static_cast<int>(bytes.size())) << QString(expected);
    };
    const std::string d16(16, '\0');
    row("shorter than 8 bytes", std::string("\x05\0\0", 3),
        "has 3 bytes, shorter than the 8-byte header length");
    {
      std::string b;
      appendPod<uint64_t>(b, 1000);
      row("header length past the end", b + "{}",
          "header length 1000 runs past the end of the file (file has 10 bytes");
    }
    row("header not JSON", stFile("{\"a\": [1,", d16), "header: malformed JSON");
    row("header not an object", stFile("[1, 2, 3]", d16), "header is a JSON array, expected an object");
    row("entry missing dtype", stFile(R"({"w":{"shape":[4],"data_offsets":[0,16]}})", d16),
        "tensor w: header entry has no \"dtype\"");
    row("entry missing shape", stFile(R"({"w":{"dtype":"F32","data_offsets":[0,16]}})", d16),
        "tensor w: header entry has no \"shape\"");
    row("entry missing data_offsets", stFile(R"({"w":{"dtype":"F32","shape":[4]}})", d16),
        "tensor w: header entry has no \"data_offsets\"");
    row("entry not an object", stFile(R"({"w":[1]})", d16),
        "tensor w: header entry is array, expected an object");
    row("unknown dtype", stFile(R"({"w":{"dtype":"Q7","shape":[4],"data_offsets":[0,16]}})", d16),
        "tensor w: unknown dtype \"Q7\", expected one of F64, F32");
    row("negative shape", stFile(R"({"w":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", d16),
        "tensor w: \"shape\" holds -4, expected non-negative integers");
    row("offsets out of range", stFile(R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})", d16),
        "tensor w: data_offsets [0, 400] run past the end of the data buffer (16 bytes)");
    row("end before begin", stFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", d16),
        "tensor w: data_offsets [8, 4] end before they begin");
    row("size mismatch", stFile(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d16),
        "tensor w: data_offsets [0, 8] hold 8 bytes, expected 12 (shape [3] x 4-byte F32)");
    row("overlapping entries",
        stFile(
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
            d16),
        "tensors a [0, 8) and b [4, 12) overlap");
    row("metadata not strings", stFile(R"({"__metadata__":{"n":3}})", d16),
        "\"__metadata__\" key n is number, expected a string");
    row("offsets not a pair", stFile(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", d16),
        "\"data_offsets\" is [0], expected [begin, end]");
  }

  void corruptFilesAreRejected() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, expected);
    const std::string path = tmp("corrupt.safetensors");
    writeBytes(path, bytes.toStdString());
    HS_EXPECT_ERROR(SafetensorsFile::open(path), path, expected.toStdString());
  }

  void fileSystemErrors() {
    const std::string missing = tmp("missing.safetensors");
    HS_EXPECT_ERROR(SafetensorsFile::open(missing), missing, "cannot open");
    const std::string empty = tmp("empty.safetensors");
    writeBytes(empty, "");
    HS_EXPECT_ERROR(SafetensorsFile::open(empty), empty, "empty");
    HS_EXPECT_ERROR(SafetensorsFile::open(dir_.path().toStdString()), dir_.path().toStdString(),
                    "not a regular file");
    writeSafetensors(tmp("one.safetensors"), {{"a", at::ones({1})}});
    HS_EXPECT_ERROR(SafetensorsFile::open(tmp("one.safetensors"))->tensor("b"), "one.safetensors",
                    "no tensor named b");
  }

  void checkpointSingleFileAndFolder() {
    QTemporaryDir d;
    const std::string folder = d.path().toStdString();
    writeSafetensors(folder + "/model.safetensors", {{"x", at::ones({2})}, {"y", at::zeros({3})}});
    for (const std::string& p : {folder, folder + "/model.safetensors"}) {
      const auto ck = SafetensorsCheckpoint::open(p);
      QCOMPARE(ck.names(), (std::vector<std::string>{"x", "y"}));
      QCOMPARE(ck.files(), std::vector<std::string>{folder + "/model.safetensors"});
      QVERIFY(at::equal(ck.tensor("y"), at::zeros({3})));
      HS_EXPECT_ERROR(ck.tensor("z"), "no tensor named z");
    }
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder + "/nothing"), folder + "/nothing",
                    "no such file or folder");
    QTemporaryDir e;
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(e.path().toStdString()), "no model.safetensors");
  }

  void shardedFolder() {
    QTemporaryDir d;
    const std::string folder = d.path().toStdString();
    at::manual_seed(1);
    const auto a = at::randn({4, 4}), b = at::randn({8}).to(at::kBFloat16), c = at::randn({2, 3});
    writeSafetensors(folder + "/model-00001-of-00002.safetensors", {{"layer.0.w", a}, {"layer.0.b", b}});
    writeSafetensors(folder + "/model-00002-of-00002.safetensors", {{"layer.1.w", c}});
    const nlohmann::json index = {{"metadata", {{"total_size", 100}}},
                                  {"weight_map",
                                   {{"layer.0.w", "model-00001-of-00002.safetensors"},
                                    {"layer.0.b", "model-00001-of-00002.safetensors"},
                                    {"layer.1.w", "model-00002-of-00002.safetensors"}}}};
    writeBytes(folder + "/model.safetensors.index.json", index.dump());
    const auto ck = SafetensorsCheckpoint::open(folder);
    QCOMPARE(ck.names(), (std::vector<std::string>{"layer.0.b", "layer.0.w", "layer.1.w"}));
    QCOMPARE(ck.files().size(), size_t(2));
    QCOMPARE(ck.fileOf("layer.1.w"), folder + "/model-00002-of-00002.safetensors");
    QVERIFY(bitEqual(ck.tensor("layer.0.w"), a));
    QVERIFY(bitEqual(ck.tensor("layer.0.b"), b));
    QVERIFY(bitEqual(ck.tensor("layer.1.w"), c));
  }

  void shardedFolderErrors() {
    QTemporaryDir d;
    const std::string folder = d.path().toStdString();
    const std::string indexPath = folder + "/model.safetensors.index.json";
    writeSafetensors(folder + "/s1.safetensors", {{"a", at::ones({1})}, {"b", at::ones({1})}});

    writeBytes(indexPath,
               R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors"}})");
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder), indexPath,
                    "names shard s2.safetensors which does not exist");

    writeBytes(indexPath,
               R"({"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","z":"s1.safetensors"}})");
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder), indexPath,
                    "tensor z is mapped to shard s1.safetensors", "does not contain it");

    writeBytes(indexPath, R"({"weight_map":{"a":"s1.safetensors"}})");
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder), "s1.safetensors: holds tensor b which");

    writeBytes(indexPath, R"({"metadata":{}})");
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder), indexPath, "no \"weight_map\"");

    writeBytes(indexPath, "not json");
    HS_EXPECT_ERROR(SafetensorsCheckpoint::open(folder), indexPath, "malformed JSON");
  }
};

QTEST_GUILESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
