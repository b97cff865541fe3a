// The RAM a run may take (util/memory.h): the smallest of MemAvailable, the cgroup's memory.max, the
// address-space limit and HEADSCOPE_MEMORY_LIMIT, read from fake procfs and cgroupfs mounts with known
// contents, named in what the plausibility checks say when they refuse.
#include <sys/resource.h>
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <string>

#include "util/error.h"
#include "util/memory.h"

using namespace hs;

namespace {

void writeFile(const QString& path, const std::string& text) {
  QDir().mkpath(QFileInfo(path).path());
  std::ofstream(path.toStdString()) << text;
}

// The error `f` throws ("" when none).
template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return {};
}

constexpr uint64_t kFakeVmBytes = 1000 * 1024;  // the fake self/status's VmSize: 1000 kB

// What ramRoom must answer when the fake mounts allow `bytes`: an address-space limit the test runs under
// (ulimit -v) also counts, against the fake VmSize.
uint64_t underRlimit(uint64_t bytes) {
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    return std::min<uint64_t>(bytes, as.rlim_cur > kFakeVmBytes ? as.rlim_cur - kFakeVmBytes : 0);
  return bytes;
}

}  // namespace

class TestMemory : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;
  QString proc_, cg_;

 private Q_SLOTS:
  void init() {
    qunsetenv("HEADSCOPE_MEMORY_LIMIT");
    proc_ = dir_.path() + "/proc", cg_ = dir_.path() + "/cgroup";
    QDir(proc_).removeRecursively(), QDir(cg_).removeRecursively();
    writeFile(proc_ + "/meminfo",
              "MemTotal:       32000000 kB\nMemFree:         1000000 kB\n"
              "MemAvailable:    8000000 kB\nBuffers:          100000 kB\n");
    writeFile(proc_ + "/self/status", "Name:\theadscope\nVmPeak:\t    2000 kB\nVmSize:\t    1000 kB\n");
    writeFile(proc_ + "/self/cgroup", "0::/user.slice/job\n");
  }
  void cleanup() { qunsetenv("HEADSCOPE_MEMORY_LIMIT"); }

 private:
  RamRoom room() const { return ramRoom(proc_.toStdString(), cg_.toStdString()); }

 private Q_SLOTS:

  void memAvailableWithoutOtherLimits() {
    const RamRoom r = room();
    QCOMPARE(r.bytes, underRlimit(8000000ull * 1024));
    if (r.bytes == 8000000ull * 1024) QCOMPARE(QString::fromStdString(r.source), QString("MemAvailable"));
  }

  // A Slurm or container job: the cgroup's memory.max minus what the group already uses, when smaller.
  void cgroupLimitWins() {
    writeFile(cg_ + "/user.slice/job/memory.max", "4000000000\n");
    writeFile(cg_ + "/user.slice/job/memory.current", "1000000000\n");
    RamRoom r = room();
    QCOMPARE(r.bytes, underRlimit(3000000000ull));
    if (r.bytes == 3000000000ull) QCOMPARE(QString::fromStdString(r.source), QString("cgroup memory limit"));
    // "max" is no limit; a group over its limit has no room.
    writeFile(cg_ + "/user.slice/job/memory.max", "max\n");
    QCOMPARE(room().bytes, underRlimit(8000000ull * 1024));
    writeFile(cg_ + "/user.slice/job/memory.max", "500000000\n");
    QCOMPARE(room().bytes, uint64_t(0));
  }

  // Slurm sets a job's limit on the job's folder; its processes run in a step's folder below it, whose own
  // memory.max is "max". The smallest room of the folder and its parents counts.
  void parentCgroupLimitCounts() {
    writeFile(proc_ + "/meminfo", "MemAvailable:   64000000 kB\n");  // a large node
    writeFile(proc_ + "/self/cgroup", "0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n");
    const QString job = cg_ + "/system.slice/slurmstepd.scope/job_42";
    writeFile(job + "/step_0/user/task_0/memory.max", "max\n");
    writeFile(job + "/step_0/user/task_0/memory.current", "100000000\n");
    writeFile(job + "/memory.max", "16000000000\n");
    writeFile(job + "/memory.current", "6000000000\n");  // the job's other steps count
    writeFile(cg_ + "/system.slice/memory.max", "max\n");
    QCOMPARE(room().bytes, underRlimit(10000000000ull));
    // A tighter limit further down wins.
    writeFile(job + "/step_0/memory.max", "4000000000\n");
    writeFile(job + "/step_0/memory.current", "1000000000\n");
    QCOMPARE(room().bytes, underRlimit(3000000000ull));
  }

  // cgroup v1 (older clusters): the memory controller's limit_in_bytes, where "no limit" is a number near
  // 2^63.
  void cgroupV1MemoryLimit() {
    writeFile(proc_ + "/self/cgroup", "11:memory:/slurm/uid_0/job_7/step_0\n4:cpu,cpuacct:/slurm\n");
    const QString job = cg_ + "/memory/slurm/uid_0/job_7";
    writeFile(job + "/step_0/memory.limit_in_bytes", "9223372036854771712\n");
    writeFile(job + "/step_0/memory.usage_in_bytes", "200000000\n");
    QCOMPARE(room().bytes, underRlimit(8000000ull * 1024));
    writeFile(job + "/memory.limit_in_bytes", "8000000000\n");
    writeFile(job + "/memory.usage_in_bytes", "2000000000\n");
    const RamRoom r = room();
    QCOMPARE(r.bytes, underRlimit(6000000000ull));
    if (r.bytes == 6000000000ull) QCOMPARE(QString::fromStdString(r.source), QString("cgroup memory limit"));
  }

  // The address-space limit counts what the process has mapped already (VmSize).
  void addressSpaceLimitCountsMappedMemory() {
#if defined(__SANITIZE_ADDRESS__)
    QSKIP("AddressSanitizer's shadow memory cannot run under an address-space limit");
#endif
    writeFile(proc_ + "/meminfo", "MemAvailable:  1073741824 kB\n");  // 1 TiB: not the smallest
    rlimit old{};
    QCOMPARE(getrlimit(RLIMIT_AS, &old), 0);
    rlimit capped = old;
    const rlim_t want = rlim_t(64) << 30;  // 64 GiB, far above what this test maps
    capped.rlim_cur = old.rlim_cur == RLIM_INFINITY ? want : std::min(old.rlim_cur, want);
    QCOMPARE(setrlimit(RLIMIT_AS, &capped), 0);
    const RamRoom r = room();
    setrlimit(RLIMIT_AS, &old);
    QCOMPARE(r.bytes, uint64_t(capped.rlim_cur) - kFakeVmBytes);
    QCOMPARE(QString::fromStdString(r.source), QString("RLIMIT_AS (ulimit -v)"));
  }

  void userCapWinsAndIsChecked() {
    qputenv("HEADSCOPE_MEMORY_LIMIT", "1.5G");
    const RamRoom r = room();
    QCOMPARE(r.bytes, underRlimit(1500000000ull));
    if (r.bytes == 1500000000ull)
      QCOMPARE(QString::fromStdString(r.source), QString("HEADSCOPE_MEMORY_LIMIT"));
    qputenv("HEADSCOPE_MEMORY_LIMIT", "lots");
    const std::string e = errorOf([&] { room(); });
    QVERIFY2(e.find("HEADSCOPE_MEMORY_LIMIT") != std::string::npos &&
                 e.find("\"lots\" is not a memory size") != std::string::npos,
             e.c_str());
  }

  // Nothing readable: no limit known, and no source named.
  void nothingKnown() {
    const RamRoom r = ramRoom((dir_.path() + "/missing").toStdString(), cg_.toStdString());
    QCOMPARE(r.source.empty(), r.bytes == UINT64_MAX);
  }

  // The plausibility check refuses past half of the room and names the limit that decided it.
  void checkFitsNamesTheLimit() {
    qputenv("HEADSCOPE_MEMORY_LIMIT", "100M");
    checkFitsInMemory("task t", 40, 1000 * 1000, "prompts", "ask for fewer prompts (--n)");
    const std::string e = errorOf(
        [] { checkFitsInMemory("task t", 60, 1000 * 1000, "prompts", "ask for fewer prompts (--n)"); });
    QVERIFY2(
        e.find("task t: 60 prompts need about 60 MB, more than half of the 100 MB") != std::string::npos &&
            e.find("(HEADSCOPE_MEMORY_LIMIT)") != std::string::npos && e.find("--n") != std::string::npos,
        e.c_str());
  }

  void sizesReadAndWritten() {
    QCOMPARE(QString::fromStdString(formatBytes(17)), QString("17 bytes"));
    QCOMPARE(QString::fromStdString(formatBytes(12'000)), QString("12 kB"));
    QCOMPARE(QString::fromStdString(formatBytes(320'000'000)), QString("320 MB"));
    QCOMPARE(QString::fromStdString(formatBytes(32'120'000'000)), QString("32.1 GB"));
    QCOMPARE(parseByteSize("600M"), uint64_t(600'000'000));
    QCOMPARE(parseByteSize("1.5G"), uint64_t(1'500'000'000));
    QCOMPARE(parseByteSize("2TB"), uint64_t(2'000'000'000'000));
    QCOMPARE(parseByteSize("4096"), uint64_t(4096));
    for (const char* bad : {"lots", "-1G", "8X", ""})
      QVERIFY2(errorOf([&] { parseByteSize(bad); }).find("is not a memory size") != std::string::npos, bad);
  }
};

QTEST_GUILESS_MAIN(TestMemory)
#include "test_memory.moc"
