// I/O guards against hostile and broken inputs (issue 25): only regular files are read, a mapped file that
// changes on disk is named instead of crashing, outputs are one transaction, sessions carry a checksum,
// header sizes are bounded, shard paths stay in the model folder, prompt counts are estimated.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include "model/io/mapped_file.h"
#include "model/io/safetensors.h"
#include "model/load/config_json.h"
#include "robust_test_util.h"
#include "session/output_set.h"
#include "session/session.h"
#include "tasks/icl_task.h"
#include "test_paths.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/file_text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

using hs::test::errorOf;

using hs::test::readFile;
using hs::test::writeFile;

std::vector<std::string> folderEntries(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

json toyConfig() {
  return json::parse(readFile(hs::test::sourceDir("resources/models/toy-icl/config.json")));
}

hs::Session smallSession() {
  hs::Session s;
  s.view_state = {{"tab", 1}};
  s.tensors["t"] = at::arange(16, at::kFloat);
  return s;
}

// Runs `body` in a forked child with stderr captured; returns (exit status, stderr).
std::pair<int, std::string> inChild(const std::function<void()>& body) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, "pipe failed"};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    body();
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string err;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0)
    err.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return {status, err};
}

}  // namespace

class TestRobustIo : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // First, while the process has few threads: the CLI's handler names a truncated mapped file and exits 1.
  void sigbusExitNamesTheFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("weights.bin").toStdString();
    writeFile(path, std::string(1 << 16, 'x'));
    const auto [status, err] = inChild([&] {
      hs::installMappedFileFaultHandler(hs::MappedFileFaultMode::Exit);
      const auto map = hs::MappedFile::open(path);
      QFile::resize(QString::fromStdString(path), 0);        // truncated on disk while mapped
      volatile uint8_t last = map->data()[map->size() - 1];  // SIGBUS here
      (void)last;
      ::_exit(7);  // not reached when the fault is handled
    });
    QVERIFY2(WIFEXITED(status), "the child died by a signal instead of exiting");
    QCOMPARE(WEXITSTATUS(status), 1);
    QVERIFY2(err.find("error: " + path + ": the file changed on disk while it was loaded") == 0, err.c_str());
    QCOMPARE(std::count(err.begin(), err.end(), '\n'), 1L);
  }

  // The GUI's mode: the map reads as zeros, the file is reported until the map is released.
  void sigbusRecoverReportsTheFile() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("weights.bin").toStdString();
    writeFile(path, std::string(1 << 16, 'x'));
    hs::installMappedFileFaultHandler(hs::MappedFileFaultMode::Recover);
    {
      const auto map = hs::MappedFile::open(path);
      QCOMPARE(map->data()[100], uint8_t('x'));
      QVERIFY(hs::faultedMappedFiles().empty());
      QVERIFY(hs::changedMappedFiles().empty());
      QVERIFY(QFile::resize(QString::fromStdString(path), 10));
      QCOMPARE(static_cast<int>(map->data()[map->size() - 1]), 0);  // faulted, recovered as zeros
      QCOMPARE(hs::faultedMappedFiles(), std::vector<std::string>{path});
      QCOMPARE(hs::changedMappedFiles(), std::vector<std::string>{path});
    }
    QVERIFY(hs::faultedMappedFiles().empty());  // released with the map
    hs::installMappedFileFaultHandler(hs::MappedFileFaultMode::Exit);
  }

  // Rewritten in place at the same size: no fault, but the file is no longer the one mapped.
  void rewriteInPlaceIsDetected() {
    QTemporaryDir dir;
    const std::string path = dir.filePath("w.bin").toStdString();
    writeFile(path, std::string(4096, 'a'));
    const auto map = hs::MappedFile::open(path);
    QVERIFY(hs::changedMappedFiles().empty());
    {
      std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(10);
      f << 'b';
    }
    struct timespec times[2] = {{0, UTIME_OMIT}, {1, 0}};  // a different mtime, whatever the clock
    QCOMPARE(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
    QCOMPARE(hs::changedMappedFiles(), std::vector<std::string>{path});
    QVERIFY(hs::mappedFileChangedMessage(path).find(path + ": the file changed on disk") == 0);
  }

  // FIFOs block an open() and devices never end: both are refused by name before a byte is read.
  void onlyRegularFilesAreRead() {
    QTemporaryDir dir;
    const std::string fifo = dir.filePath("task.fifo").toStdString();
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_ERROR(hs::readTextFile(fifo, "dataset file"), fifo, "a FIFO (named pipe)", "regular file");
    EXPECT_ERROR(hs::readJsonFile(fifo), fifo, "FIFO");
    EXPECT_ERROR(hs::MappedFile::open(fifo), fifo, "not a regular file", "FIFO");
    EXPECT_ERROR(hs::readTextFile("/dev/zero", "word list"), "/dev/zero", "character device");
    EXPECT_ERROR(hs::loadTokenizer("/dev/zero"), "/dev/zero", "character device");
    EXPECT_ERROR(hs::loadTokenizer(fifo), fifo, "FIFO");
    EXPECT_ERROR(hs::readTextFile(dir.path().toStdString(), "dataset file"), "a folder");
    const std::string big = dir.filePath("big.txt").toStdString();
    writeFile(big, std::string(2000, 'x'));
    EXPECT_ERROR(hs::readTextFile(big, "word list", 1000), big,
                 "1 KiB is more than the 1000 bytes a word list may have");
  }

  // ---------------------------------------------------------------------------------------------
  // Outputs as one transaction

  void outputSetReplacesEverything() {
    QTemporaryDir dir;
    const std::string a = dir.filePath("a.json").toStdString(), b = dir.filePath("b.csv").toStdString();
    writeFile(a, "old a");
    hs::OutputSet out;
    out.addText(a, "new a");
    out.addText(b, "new b");
    out.commit();
    QCOMPARE(readFile(a), std::string("new a"));
    QCOMPARE(readFile(b), std::string("new b"));
    QCOMPARE(folderEntries(dir.path().toStdString()), (std::vector<std::string>{"a.json", "b.csv"}));
  }

  // A writer failing after another file was staged: nothing moved, nothing left behind.
  void failedWriteLeavesEverything() {
    QTemporaryDir dir;
    const std::string a = dir.filePath("a.json").toStdString(), b = dir.filePath("b.hscope").toStdString();
    writeFile(a, "old a");
    writeFile(b, "old b");
    hs::OutputSet out;
    out.addText(a, "new a");
    out.add(b, [](const std::string&) { hs::fail("disk full (simulated)"); });
    EXPECT_ERROR(out.commit(), "disk full");
    QCOMPARE(readFile(a), std::string("old a"));
    QCOMPARE(readFile(b), std::string("old b"));
    QCOMPARE(folderEntries(dir.path().toStdString()), (std::vector<std::string>{"a.json", "b.hscope"}));
  }

  // A failure while moving files into place: those already moved get their previous versions back,
  // a file that did not exist before is removed again.
  void failedPublishRollsBack() {
    QTemporaryDir dir;
    const std::string a = dir.filePath("a.hscope").toStdString(), b = dir.filePath("b.json").toStdString(),
                      c = dir.filePath("c.csv").toStdString();
    writeFile(a, "old a");
    writeFile(c, "old c");
    hs::OutputSet out;
    out.addText(a, "new a");
    out.addText(b, "new b");
    out.addText(c, "new c");
    out.before_publish = [](size_t i) {
      if (i == 2) hs::fail("rename failed (simulated)");
    };
    EXPECT_ERROR(out.commit(), "rename failed");
    QCOMPARE(readFile(a), std::string("old a"));
    QVERIFY(!fs::exists(b));
    QCOMPARE(readFile(c), std::string("old c"));
    QCOMPARE(folderEntries(dir.path().toStdString()), (std::vector<std::string>{"a.hscope", "c.csv"}));
  }

  void destinationsCheckedUpFront() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    EXPECT_ERROR(hs::checkDestinations({d}), d, "it is a folder");
    EXPECT_ERROR(hs::checkDestinations({d + "/nonexistent/x.json"}), "the folder", "does not exist");
    EXPECT_ERROR(hs::checkDestinations({d + "/x.json", d + "/./x.json"}), "destination of two outputs");
    EXPECT_ERROR(hs::checkDestinations({"/proc/x.json"}), "/proc/x.json", "no file can be created in /proc");
    const std::string fifo = d + "/out.fifo";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_ERROR(hs::checkDestinations({fifo}), "not a regular file");
    EXPECT_ERROR(hs::checkDestinations({""}), "empty");
    hs::checkDestinations({d + "/new.hscope", d + "/new.json"});
    hs::checkDestinations({d + "/export/sub/x.csv"}, /*createFolders=*/true);
    QVERIFY(!fs::exists(d + "/export"));                               // checking creates nothing
    QCOMPARE(folderEntries(d), std::vector<std::string>{"out.fifo"});  // nor leaves a probe file
  }

  // Export folders are created at commit and removed again when the commit fails.
  void createdFoldersRemovedOnFailure() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    hs::OutputSet out(/*createFolders=*/true);
    out.addText(d + "/csv/a.csv", "a");
    out.add(d + "/json/deep/b.json", [](const std::string&) { hs::fail("simulated"); });
    EXPECT_ERROR(out.commit(), "simulated");
    QVERIFY(folderEntries(d).empty());
    hs::OutputSet ok(/*createFolders=*/true);
    ok.addText(d + "/csv/a.csv", "a");
    ok.commit();
    QCOMPARE(readFile(d + "/csv/a.csv"), std::string("a"));
  }

  // ---------------------------------------------------------------------------------------------
  // Session checksum

  void sessionChecksumVerified() {
    QTemporaryDir dir;
    const std::string p = dir.filePath("s.hscope").toStdString();
    hs::saveSession(p, smallSession());
    const auto f = hs::SafetensorsFile::open(p);
    QCOMPARE(f->metadata().count(hs::kSessionChecksumKey), size_t(1));
    QCOMPARE(hs::loadSession(p).tensors.at("t")[3].item<float>(), 3.0f);

    // One bit of a tensor flipped.
    std::string bytes = readFile(p);
    bytes[bytes.size() - 4] ^= 0x01;
    const std::string flipped = dir.filePath("flipped.hscope").toStdString();
    writeFile(flipped, bytes);
    EXPECT_ERROR(hs::loadSession(flipped), flipped, "damaged", "SHA-256", hs::kSessionChecksumKey);

    // One character of the session JSON changed, the JSON still valid.
    bytes = readFile(p);
    const size_t at = bytes.find("\\\"tab\\\":1");
    QVERIFY(at != std::string::npos);
    bytes[at + 8] = '2';
    writeFile(flipped, bytes);
    EXPECT_ERROR(hs::loadSession(flipped), "damaged");
  }

  // Sessions written before checksums existed still open.
  void sessionWithoutChecksumOpens() {
    QTemporaryDir dir;
    const std::string p = dir.filePath("old.hscope").toStdString();
    const hs::Session s = smallSession();
    hs::writeSafetensors(p, {{"t", s.tensors.at("t")}},
                         {{hs::kSessionMetadataKey, hs::sessionToJson(s).dump()}});
    QCOMPARE(hs::loadSession(p).view_state["tab"].get<int>(), 1);
  }

  // ---------------------------------------------------------------------------------------------
  // Header limits

  void configSizesBounded() {
    auto parseWith = [](const char* key, const json& v) {
      json c = toyConfig();
      c[key] = v;
      return hs::parseHfConfig(c, "/m/config.json");
    };
    EXPECT_ERROR(parseWith("num_attention_heads", 4294967304LL), "/m/config.json", "num_attention_heads",
                 "4294967304", "1024");
    EXPECT_ERROR(parseWith("num_attention_heads", 2147483648LL), "2147483648");
    EXPECT_ERROR(parseWith("num_hidden_layers", 5000000), "num_hidden_layers", "5000000", "1024");
    EXPECT_ERROR(parseWith("vocab_size", 1500000000), "vocab_size", "4194304");
    EXPECT_ERROR(parseWith("rms_norm_eps", -1e-5), "rms_norm_eps", "finite number > 0");
    EXPECT_ERROR(parseWith("rms_norm_eps", 0), "rms_norm_eps");
    EXPECT_ERROR(parseWith("rope_theta", 0), "rope_theta");
    EXPECT_ERROR(parseWith("bos_token_id", 1LL << 40), "bos_token_id", "1099511627776");
    QCOMPARE(parseWith("num_attention_heads", 8.0).n_heads, 8);  // a whole float is that integer
  }

  void duplicateTensorNamesRefused() {
    QTemporaryDir dir;
    const std::string p = dir.filePath("m.safetensors").toStdString();
    std::string header =
        R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})";
    while ((header.size() + 8) % 8)
      header += ' ';
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    writeFile(p, bytes + header + std::string(8, '\0'));
    EXPECT_ERROR(hs::SafetensorsFile::open(p), p, "key \"a\" appears twice");
  }

  void shardsConfinedToTheModelFolder() {
    QTemporaryDir dir;
    const std::string d = dir.path().toStdString();
    for (const std::string shard : {"/etc/passwd", "../outside.safetensors", "sub/../../x.safetensors", ""}) {
      writeFile(d + "/model.safetensors.index.json", json{{"weight_map", {{"w", shard}}}}.dump());
      EXPECT_ERROR(hs::SafetensorsCheckpoint::open(d), "model.safetensors.index.json",
                   "not a file inside the model folder");
    }
  }

  // --n 10000000 is refused by its estimate before ten million prompts are built.
  void promptCountEstimated() {
    const auto tok = hs::loadTokenizer(hs::test::sourceDir("resources/models/toy-icl"));
    hs::TaskSpec spec;
    spec.n_prompts = 10'000'001;
    EXPECT_ERROR(hs::buildIclTask(*tok, spec), "10000001 prompts requested", "1..10000000");
    // Under a 1 GiB headroom (the address-space limit) the estimate says no, whatever the machine has.
    struct rlimit old {};
    QCOMPARE(::getrlimit(RLIMIT_AS, &old), 0);
    std::ifstream status("/proc/self/status");
    std::string line;
    uint64_t vmKb = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vmKb = std::stoull(line.substr(7));
    struct rlimit capped = old;
    capped.rlim_cur = vmKb * 1024 + (1ull << 30);
    QCOMPARE(::setrlimit(RLIMIT_AS, &capped), 0);
    spec.n_prompts = 10'000'000;
    const std::string msg = errorOf([&] { (void)hs::buildIclTask(*tok, spec); });
    ::setrlimit(RLIMIT_AS, &old);
    QVERIFY2(msg.find("10000000 prompts of") != std::string::npos &&
                 msg.find("need about") != std::string::npos && msg.find("--n") != std::string::npos,
             msg.c_str());
    spec.n_prompts = 5;
    QCOMPARE(hs::buildIclTask(*tok, spec).icl.size(), size_t(5));
  }
};

QTEST_GUILESS_MAIN(TestRobustIo)
#include "test_robust_io.moc"
