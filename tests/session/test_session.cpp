// Session files: save -> load is exact (runs, selections, interventions, tensors bit for bit),
// saving is atomic, every kind of broken file is rejected with a message naming it; and the
// SHA-256 used to fingerprint model files matches the FIPS 180-4 vectors.
#include <QtTest>

#include <ATen/ATen.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "model/io/safetensors.h"
#include "results/results_json.h"
#include "session/session.h"
#include "util/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string readBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

bool sameBytes(const at::Tensor& a, const at::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const at::Tensor ca = a.contiguous(), cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), static_cast<size_t>(ca.nbytes())) == 0;
}

hs::HeadGrid grid(const std::string& id, int L, int H, double scale) {
  hs::HeadGrid g;
  g.id = id;
  g.name = id + " (display)";
  g.unit = "ΔP";
  g.values.resize(L, H);  // [layers, heads]
  for (int l = 0; l < L; ++l)
    for (int h = 0; h < H; ++h)
      g.values(l, h) = scale * (l * H + h) / 3.0;
  g.values(0, 0) = std::numeric_limits<double>::quiet_NaN();
  g.provenance.method = "fv";
  g.provenance.seed = 1234;
  return g;
}

hs::Session makeSession(const std::string& modelFile) {
  hs::Session s;
  s.model = {{"path", modelFile}, {"format", "safetensors"}, {"dtype", "F32"}};
  s.model.update(hs::modelIdentity({modelFile}));
  s.tokenizer = {{"path", "tok512.bin"}, {"add_bos", true}};
  s.task = {{"dataset", "sst2"}, {"shots", 8}, {"seed", 7}, {"label_words", {"negative", "positive"}}};

  hs::AnalysisRun fv;
  fv.id = "fv-1";
  fv.method = "fv";
  fv.options = {{"n_prompts", 100}, {"top_k", 10}};
  fv.grids = {grid("fv.aie", 5, 8, 1.0)};
  hs::Curve c;
  c.id = "fv.layer";
  c.x_label = "layer";
  c.x = {0, 1, 2, 3, 4};
  c.series = {{"fv", {0.1, 0.2, 0.3, 0.4, 0.1 + 0.2}}};
  fv.curves = {c};
  hs::Table t;
  t.id = "fv.top";
  t.columns = {"layer", "head", "aie"};
  t.rows = {{3, 1, 0.25}, {4, 7, 1.0 / 3.0}};
  fv.tables = {t};
  fv.tensors = {"fv-1/mean_z", "fv-1/vector"};
  fv.summary = {{"accuracy", 0.8125}};

  hs::AnalysisRun site;
  site.id = "site-1";
  site.method = "site";
  site.grids = {grid("site.alpha", 5, 8, 0.01)};
  site.tensors = {"site-1/alpha", "site-1/tokens"};

  s.runs = {fv, site};
  s.selections = {{"heads", json(std::vector<hs::HeadRef>{{1, 2}, {4, 7}})}};
  s.interventions =
      json::array({{{"site", "attn.z"},
                    {"heads", {{0, 1}}},
                    {"positions", {-1}},
                    {"rows", json::array()},
                    {"op", "replace"},
                    {"scale", 1.0},
                    {"tensor", "fv-1/mean_z"}},
                   {{"site", "resid_pre"}, {"op", "add"}, {"scale", 2.5}, {"tensor", "fv-1/vector"}}});
  s.view_state = {{"tab", "heads"}, {"metric", "fv.aie"}, {"colour_range", {-1.0, 1.0}}};

  // [layers, heads, d_head] mean z, with a NaN and -0.0 that must survive bit for bit.
  at::Tensor meanZ = at::arange(5 * 8 * 4, at::kFloat).reshape({5, 8, 4}).div(7.0);
  meanZ.data_ptr<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  meanZ.data_ptr<float>()[1] = -0.0f;
  s.tensors["fv-1/mean_z"] = meanZ;
  s.tensors["fv-1/vector"] = at::linspace(-1, 1, 64, at::kDouble);  // [d_model]
  s.tensors["site-1/alpha"] =
      at::arange(40, at::kFloat).div(39.0).reshape({5, 8}).to(at::kBFloat16);  // [layers, heads]
  s.tensors["site-1/tokens"] =
      at::arange(-3, 9, at::kLong).mul(static_cast<int64_t>(1) << 40).reshape({2, 6});  // [batch, pos]
  return s;
}

template <typename F>
QString errorOf(F&& f) {
  try {
    f();
  } catch (const hs::Error& e) {
    return QString::fromUtf8(e.what());
  }
  return {};
}

}  // namespace

class TestSession : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  std::string modelFile_;

  std::string path(const std::string& name) const {
    return (fs::path(dir_.path().toStdString()) / name).string();
  }

 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    modelFile_ = path("model.safetensors");
    hs::writeSafetensors(modelFile_, {{"w", at::ones({4, 4})}});
  }

  void saveLoadRoundTripIsExact() {
    const hs::Session s = makeSession(modelFile_);
    const std::string p = path("round.hscope");
    hs::saveSession(p, s);
    const hs::Session b = hs::loadSession(p);

    QCOMPARE(b.format_version, hs::kSessionFormatVersion);
    QCOMPARE(b.model, s.model);
    QCOMPARE(b.tokenizer, s.tokenizer);
    QCOMPARE(b.task, s.task);
    QCOMPARE(b.selections, s.selections);
    QCOMPARE(b.interventions, s.interventions);
    QCOMPARE(b.view_state, s.view_state);
    QCOMPARE(b.runs.size(), s.runs.size());
    // Runs: compare through their canonical JSON (doubles written round-trippably, NaN as "NaN").
    for (size_t i = 0; i < s.runs.size(); ++i)
      QCOMPARE(json(b.runs[i]).dump(), json(s.runs[i]).dump());
    QVERIFY(std::isnan(b.runs[0].grids[0].values(0, 0)));
    QCOMPARE(b.runs[0].grids[0].values(4, 7), s.runs[0].grids[0].values(4, 7));
    QCOMPARE(b.runs[0].curves[0].series[0].second[4], 0.1 + 0.2);
    QVERIFY(b.findRun("site-1") != nullptr);

    QCOMPARE(b.tensors.size(), s.tensors.size());
    for (const auto& [name, t] : s.tensors) {
      QVERIFY2(b.tensors.count(name), name.c_str());
      QVERIFY2(sameBytes(b.tensors.at(name), t), name.c_str());
    }
    QCOMPARE(b.tensors.at("site-1/alpha").scalar_type(), at::kBFloat16);
    QCOMPARE(b.tensors.at("site-1/tokens").scalar_type(), at::kLong);

    // The file is plain safetensors: other tools can read the tensors and the metadata.
    auto f = hs::SafetensorsFile::open(p);
    QCOMPARE(f->names().size(), size_t(4));
    const json meta = json::parse(f->metadata().at("headscope.session"));
    QCOMPARE(meta["format_version"].get<int>(), hs::kSessionFormatVersion);
    QCOMPARE(meta["runs"][0]["grids"][0]["shape"], json({5, 8}));

    // Saving what was loaded gives the same bytes: nothing drifts over save/load cycles.
    const std::string p2 = path("round2.hscope");
    hs::saveSession(p2, b);
    QCOMPARE(readBytes(p2), readBytes(p));
  }

  void loadedTensorsOwnTheirMemory() {
    const std::string p = path("own.hscope");
    hs::saveSession(p, makeSession(modelFile_));
    hs::Session b = hs::loadSession(p);
    hs::Session other;
    other.tensors["fv-1/vector"] = at::zeros({64}, at::kDouble);
    hs::saveSession(p, other);  // replace the file under the loaded session
    QCOMPARE(b.tensors.at("fv-1/vector").data_ptr<double>()[0], -1.0);
    b.tensors.at("fv-1/vector").fill_(3.0);  // writable
    QCOMPARE(b.tensors.at("fv-1/vector").data_ptr<double>()[63], 3.0);
  }

  void emptySessionIsValidSafetensors() {
    const std::string p = path("empty.hscope");
    hs::saveSession(p, hs::Session{});
    auto f = hs::SafetensorsFile::open(p);
    QVERIFY(f->names().empty());
    QVERIFY(f->metadata().count("headscope.session"));
    const hs::Session b = hs::loadSession(p);
    QVERIFY(b.runs.empty());
    QVERIFY(b.tensors.empty());
    QVERIFY(b.interventions.is_array());
  }

  void saveRejectsInconsistentSessions() {
    hs::Session s = makeSession(modelFile_);
    s.tensors.erase("site-1/alpha");
    QString msg = errorOf([&] { hs::saveSession(path("bad.hscope"), s); });
    QVERIFY2(msg.contains("run site-1 references tensor site-1/alpha"), qPrintable(msg));
    QVERIFY(!fs::exists(path("bad.hscope")));

    s = makeSession(modelFile_);
    s.runs.push_back(s.runs[0]);
    msg = errorOf([&] { hs::saveSession(path("bad.hscope"), s); });
    QVERIFY2(msg.contains("run id fv-1 appears twice"), qPrintable(msg));

    s = makeSession(modelFile_);
    s.interventions.push_back({{"op", "add"}, {"tensor", "nowhere"}});
    msg = errorOf([&] { hs::saveSession(path("bad.hscope"), s); });
    QVERIFY2(msg.contains("intervention references tensor nowhere"), qPrintable(msg));
  }

  void failedSaveLeavesOldFileIntact() {
    const std::string p = path("atomic.hscope");
    const hs::Session old = makeSession(modelFile_);
    hs::saveSession(p, old);
    const std::string before = readBytes(p);
    hs::Session bigger = makeSession(modelFile_);
    bigger.tensors["big"] = at::ones({1 << 18}, at::kFloat);  // 1 MiB

    // 1. A write that fails half-way (file size limit -> EFBIG after the first bytes).
    {
      std::signal(SIGXFSZ, SIG_IGN);
      rlimit saved{};
      QCOMPARE(getrlimit(RLIMIT_FSIZE, &saved), 0);
      rlimit small = saved;
      small.rlim_cur = 64 * 1024;
      QCOMPARE(setrlimit(RLIMIT_FSIZE, &small), 0);
      const QString msg = errorOf([&] { hs::saveSession(p, bigger); });
      setrlimit(RLIMIT_FSIZE, &saved);
      QVERIFY2(msg.contains(QString::fromStdString(p)), qPrintable(msg));
      QCOMPARE(readBytes(p), before);
    }
    // 2. A tensor of a dtype safetensors cannot hold: rejected before anything is written.
    {
      hs::Session s = makeSession(modelFile_);
      s.tensors["complex"] = at::ones({2}, at::kComplexFloat);
      const QString msg = errorOf([&] { hs::saveSession(p, s); });
      QVERIFY2(msg.contains("complex"), qPrintable(msg));
      QCOMPARE(readBytes(p), before);
    }
    // 3. A read-only folder (only meaningful when not running as root).
    const std::string ro = path("readonly");
    fs::create_directories(ro);
    const std::string rop = (fs::path(ro) / "s.hscope").string();
    hs::saveSession(rop, old);
    const std::string roBefore = readBytes(rop);
    ::chmod(ro.c_str(), 0555);
    if (::access(ro.c_str(), W_OK) != 0) {
      const QString msg = errorOf([&] { hs::saveSession(rop, bigger); });
      QVERIFY2(msg.contains(QString::fromStdString(rop)), qPrintable(msg));
      QCOMPARE(readBytes(rop), roBefore);
    } else {
      qInfo("running as root: the read-only-folder case is covered by the size-limit case above");
    }
    ::chmod(ro.c_str(), 0755);

    // No temp files are left behind, and the old session still loads.
    for (const auto& e : fs::directory_iterator(dir_.path().toStdString()))
      QVERIFY2(e.path().filename().string().find(".tmp.") == std::string::npos, e.path().c_str());
    QCOMPARE(json(hs::loadSession(p).runs[0]).dump(), json(old.runs[0]).dump());
  }

  void brokenFilesAreRejectedNamingTheFile_data() {
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("missing") << "missing"
                             << "cannot open";
    QTest::newRow("empty") << "empty"
                           << "empty";
    QTest::newRow("truncated") << "truncated"
                               << "not a readable safetensors file";
    QTest::newRow("truncated header") << "truncated header"
                                      << "not a readable safetensors file";
    QTest::newRow("random bytes") << "random"
                                  << "not a readable safetensors file";
    QTest::newRow("no metadata") << "no metadata"
                                 << "not a HeadScope session";
    QTest::newRow("other metadata") << "other metadata"
                                    << "not a HeadScope session";
    QTest::newRow("malformed json") << "malformed json"
                                    << "metadata: malformed JSON";
    QTest::newRow("json not object") << "json array"
                                     << "expected an object";
    QTest::newRow("no version") << "no version"
                                << "no \"format_version\"";
    QTest::newRow("newer version")
        << "newer"
        << "was written by a newer HeadScope (format 99, this build reads up to 1)";
    QTest::newRow("missing tensor") << "missing tensor"
                                    << "run r references tensor absent";
    QTest::newRow("bad grid") << "bad grid"
                              << "run r: grid g: \"values\" has 1 rows, expected 2";
  }
  void brokenFilesAreRejectedNamingTheFile() {
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const std::string p = path("broken-" + kind.toStdString() + ".hscope");
    const std::string k = kind.toStdString();
    const auto withMeta = [&](const std::string& text) {
      hs::writeSafetensors(p, {{"present", at::zeros({2})}}, {{"headscope.session", text}});
    };
    if (k == "empty") {
      writeBytes(p, "");
    } else if (k == "truncated" || k == "truncated header") {
      const std::string src = path("for-truncation.hscope");
      hs::saveSession(src, makeSession(modelFile_));
      const std::string bytes = readBytes(src);
      writeBytes(p, bytes.substr(0, k == "truncated" ? bytes.size() - 100 : 200));
    } else if (k == "random") {
      std::mt19937 rng(42);
      std::string bytes(4096, '\0');
      for (auto& c : bytes)
        c = static_cast<char>(rng());
      writeBytes(p, bytes);
    } else if (k == "no metadata") {
      hs::writeSafetensors(p, {{"w", at::ones({3})}});
    } else if (k == "other metadata") {
      hs::writeSafetensors(p, {{"w", at::ones({3})}}, {{"format", "pt"}});
    } else if (k == "malformed json") {
      withMeta("{\"format_version\": 1, \"runs\": [");
    } else if (k == "json array") {
      withMeta("[1, 2]");
    } else if (k == "no version") {
      withMeta("{\"runs\": []}");
    } else if (k == "newer") {
      withMeta("{\"format_version\": 99, \"runs\": [{\"id\": \"future\", \"novelty\": true}]}");
    } else if (k == "missing tensor") {
      withMeta(R"({"format_version": 1, "runs": [{"id": "r", "tensors": ["present", "absent"]}]})");
    } else if (k == "bad grid") {
      withMeta(
          R"({"format_version": 1, "runs": [{"id": "r", "grids": [{"id": "g", "shape": [2, 1], "values": [[1]]}]}]})");
    }
    const QString msg = errorOf([&] { (void)hs::loadSession(p); });
    QVERIFY2(!msg.isEmpty(), "broken file was accepted");
    QVERIFY2(msg.contains(QString::fromStdString(p)), qPrintable(msg));
    QVERIFY2(msg.contains(expected), qPrintable(msg));
  }

  // FIPS 180-4 / NIST example vectors.
  void sha256Vectors() {
    QCOMPARE(hs::sha256Hex(""),
             std::string("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
    QCOMPARE(hs::sha256Hex("abc"),
             std::string("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
    QCOMPARE(hs::sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
             std::string("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
    QCOMPARE(hs::sha256Hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqk"
                           "lmnopqrlmnopqrsmnopqrstnopqrstu"),
             std::string("cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"));
    // One million 'a', fed in uneven pieces so the block buffering is exercised.
    hs::Sha256 h;
    const std::string chunk(997, 'a');
    size_t left = 1000000;
    while (left > 0) {
      const size_t n = std::min(left, chunk.size());
      h.update(chunk.data(), n);
      left -= n;
    }
    QCOMPARE(h.finishHex(), std::string("cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
  }

  void sha256OfFilesAndModelIdentity() {
    // 1 MiB + 17 bytes of a pattern: crosses the 1 MiB read chunk. Reference: Python hashlib.
    std::string data((1 << 20) + 17, '\0');
    for (size_t i = 0; i < data.size(); ++i)
      data[i] = static_cast<char>((i * 7 + 3) % 251);
    const std::string f = path("pattern.bin");
    writeBytes(f, data);
    const std::string expected = "1d856106e5c00858d1b0b1ab2371353dd182584ad952bb3745ad051589b13d31";
    QCOMPARE(hs::sha256File(f), expected);
    QCOMPARE(hs::sha256Hex(data), expected);

    const json id = hs::modelIdentity({f});
    QCOMPARE(id["files"].size(), size_t(1));
    QCOMPARE(id["files"][0]["sha256"].get<std::string>(), expected);
    QCOMPARE(id["files"][0]["size"].get<uint64_t>(), uint64_t(data.size()));
    QCOMPARE(id["files"][0]["name"].get<std::string>(), std::string("pattern.bin"));
    QVERIFY(hs::verifyModelIdentity(id).empty());

    data[12345] ^= 1;  // same size, different content
    writeBytes(f, data);
    auto problems = hs::verifyModelIdentity(id);
    QCOMPARE(problems.size(), size_t(1));
    QVERIFY2(problems[0].find("sha256 differs") != std::string::npos, problems[0].c_str());
    writeBytes(f, data + "x");
    problems = hs::verifyModelIdentity(id);
    QVERIFY2(problems.size() == 1 && problems[0].find("size") != std::string::npos, problems[0].c_str());
    fs::remove(f);
    problems = hs::verifyModelIdentity(id);
    QVERIFY2(problems.size() == 1 && problems[0].find("missing") != std::string::npos, problems[0].c_str());

    const QString msg = errorOf([&] { (void)hs::modelIdentity({path("nope.bin")}); });
    QVERIFY2(msg.contains("nope.bin"), qPrintable(msg));
  }
};

QTEST_GUILESS_MAIN(TestSession)
#include "test_session.moc"
