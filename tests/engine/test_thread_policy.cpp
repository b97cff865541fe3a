// The thread policy (model/thread_policy.h): the CPU time other processes take is read from procfs (a fake
// one with known contents, then the real one beside busy child processes), and the pools shrink to the
// CPUs they leave free, unless HEADSCOPE_THREADS fixes the count.
#include <ATen/Parallel.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <QtTest>

#include <fstream>
#include <vector>

#include "model/thread_policy.h"

using namespace hs;

namespace {

void writeFile(const QString& path, const std::string& text) {
  QDir().mkpath(QFileInfo(path).path());
  std::ofstream(path.toStdString()) << text;
}

// `n` child processes that spin until killed: runnable tasks of other processes.
struct BusyChildren {
  std::vector<pid_t> pids;
  explicit BusyChildren(int n) {
    for (int i = 0; i < n; ++i) {
      const pid_t pid = fork();
      if (pid == 0)
        for (volatile unsigned long x = 0;; x = x + 1) {
        }
      if (pid > 0) pids.push_back(pid);
    }
  }
  ~BusyChildren() {
    for (pid_t p : pids)
      kill(p, SIGKILL);
    for (pid_t p : pids)
      waitpid(p, nullptr, 0);
  }
};

}  // namespace

class TestThreadPolicy : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void threadsAreTheCpusOthersLeaveFree() {
    QCOMPARE(threadsUnderLoad(2, 0), 2);
    QCOMPARE(threadsUnderLoad(2, 1), 1);     // one busy process on 2 cores: 1 thread
    QCOMPARE(threadsUnderLoad(2, 0.67), 1);  // ... which got 2/3 of a core beside our 2 threads
    QCOMPARE(threadsUnderLoad(2, 0.3), 2);   // a process busy part of the time rounds away
    QCOMPARE(threadsUnderLoad(2, 5), 1);     // never fewer than 1
    QCOMPARE(threadsUnderLoad(16, 1), 15);
    QCOMPARE(threadsUnderLoad(0, 0), 1);
    // A cgroup quota of 2 CPUs on a 64-CPU mask: the other 40 busy CPUs leave more than 2 free.
    QCOMPARE(threadsUnderLoad(64, 40, 2), 2);
    QCOMPARE(threadsUnderLoad(64, 63.4, 2), 1);
  }

  // cgroup v2 (`cpu.max`) and v1 (cfs quota and period) CPU limits, read from fake mounts.
  void readsTheCgroupCpuLimit() {
    QTemporaryDir dir;
    const QString proc = dir.path() + "/proc", cg = dir.path() + "/cgroup";
    const auto limit = [&] { return cgroupCpuLimit(proc.toStdString(), cg.toStdString()); };
    writeFile(proc + "/self/cgroup", "0::/job.slice/run\n");
    writeFile(cg + "/job.slice/run/cpu.max", "150000 100000\n");
    QCOMPARE(limit(), 1.5);
    writeFile(cg + "/job.slice/run/cpu.max", "max 100000\n");
    QCOMPARE(limit(), 0.0);

    // Hybrid (v2 without the cpu controller, v1 "cpu,cpuacct" mounted under that name).
    writeFile(proc + "/self/cgroup", "12:memory:/slurm/job1\n4:cpu,cpuacct:/slurm/job1\n0::/\n");
    writeFile(cg + "/cpu,cpuacct/slurm/job1/cpu.cfs_quota_us", "400000\n");
    writeFile(cg + "/cpu,cpuacct/slurm/job1/cpu.cfs_period_us", "100000\n");
    QCOMPARE(limit(), 4.0);
    writeFile(cg + "/cpu,cpuacct/slurm/job1/cpu.cfs_quota_us", "-1\n");
    QCOMPARE(limit(), 0.0);
    // "cpuacct" alone is not the cpu controller; a missing or malformed file means no limit.
    writeFile(proc + "/self/cgroup", "2:cpuacct:/a\n1:cpu:/b\n");
    writeFile(cg + "/cpuacct/a/cpu.cfs_quota_us", "100000\n");
    writeFile(cg + "/cpuacct/a/cpu.cfs_period_us", "100000\n");
    writeFile(cg + "/cpu/b/cpu.cfs_quota_us", "300000\n");
    writeFile(cg + "/cpu/b/cpu.cfs_period_us", "100000\n");
    QCOMPARE(limit(), 3.0);
    writeFile(cg + "/cpu/b/cpu.cfs_period_us", "x\n");
    QCOMPARE(limit(), 0.0);
    QCOMPARE(cgroupCpuLimit((proc + "/none").toStdString(), cg.toStdString()), 0.0);

    // A quota on a parent folder governs the folders below it (Slurm: the job's folder above its steps');
    // the smallest along the way counts.
    writeFile(proc + "/self/cgroup", "0::/slurm/job_9/step_0\n");
    writeFile(cg + "/slurm/job_9/step_0/cpu.max", "max 100000\n");
    writeFile(cg + "/slurm/job_9/cpu.max", "200000 100000\n");
    QCOMPARE(limit(), 2.0);
    writeFile(cg + "/slurm/cpu.max", "50000 100000\n");
    QCOMPARE(limit(), 0.5);
    writeFile(proc + "/self/cgroup", "4:cpu,cpuacct:/slurm/job_9/step_0\n");
    writeFile(cg + "/cpu,cpuacct/slurm/job_9/cpu.cfs_quota_us", "300000\n");
    writeFile(cg + "/cpu,cpuacct/slurm/job_9/cpu.cfs_period_us", "100000\n");
    QCOMPARE(limit(), 3.0);
  }

  // Two readings of a fake procfs: the watched CPUs' busy ticks minus this process's, per tick per CPU.
  void readsAFakeProcfs() {
    QTemporaryDir dir;
    const QString root = dir.path();
    // cpu: user nice system idle iowait irq softirq steal guest guest_nice
    writeFile(root + "/stat",
              "cpu  900 0 90 2000 0 0 0 0 0 0\n"
              "cpu0 100 0 10 1000 5 0 0 0 0 0\n"
              "cpu1 200 0 20 1000 5 0 0 0 0 0\n"
              "cpu2 600 0 60 0 0 0 0 0 0 0\n"
              "intr 12345\n");
    // comm may hold ") R 1 2" (the fields count from the last ')'); utime 40, stime 10.
    writeFile(root + "/self/stat", "77 (evil) 1 2 3) R 1 77 77 0 -1 4194560 10 0 0 0 40 10 0 0 20 0 3\n");
    CpuLoadMeter meter(root.toStdString(), {0, 1});
    QCOMPARE(meter.read(), -1.0);  // the first reading has nothing to compare with
    // 100 ticks pass on cpu0 and cpu1: 80 + 90 busy (5 softirq on cpu0; 5 irq and 10 steal on cpu1), of them
    // 70 ours → 100 ticks of others over 100 ticks per CPU = one CPU's worth. cpu2 (not ours) is ignored.
    writeFile(root + "/stat",
              "cpu  900 0 90 2000 0 0 0 0 0 0\n"
              "cpu0 170 0 15 1015 10 0 5 0 0 0\n"
              "cpu1 270 0 25 1010 5 5 0 10 0 0\n"
              "cpu2 999 0 60 0 0 0 0 0 0 0\n");
    writeFile(root + "/self/stat", "77 (evil) 1 2 3) R 1 77 77 0 -1 4194560 10 0 0 0 100 20 0 0 20 0 3\n");
    QCOMPARE(meter.read(), 1.0);
    QCOMPARE(meter.read(), -1.0);  // no tick passed

    writeFile(root + "/self/stat", "77 (truncated\n");
    QCOMPARE(meter.read(), -1.0);
    QCOMPARE(CpuLoadMeter((root + "/missing").toStdString(), {0}).read(), -1.0);
    QCOMPARE(CpuLoadMeter(root.toStdString(), {5}).read(), -1.0);  // none of the watched CPUs listed
  }

  // Busy child processes (on our CPUs: they inherit the affinity mask) take the CPUs' time while this
  // process sleeps, whatever else runs there.
  void measuresBusyProcessesOnOurCpus() {
    const std::vector<int> cpus = affinityCpus();
    QVERIFY(!cpus.empty());
    CpuLoadMeter meter("/proc", cpus);
    BusyChildren busy(static_cast<int>(cpus.size()));
    meter.read();
    QTest::qSleep(300);
    const double others = meter.read();
    QVERIFY2(others >= 0.75 * cpus.size(), qPrintable(QString::number(others)));
  }

  void poolsFollowTheLoadUnlessFixed() {
    const QByteArray saved = qgetenv("HEADSCOPE_THREADS");
    qunsetenv("HEADSCOPE_THREADS");
    {
      // As many busy processes as we have CPUs: none is free, the pools get 1 thread.
      BusyChildren busy(availableCpus());
      const ThreadPolicy p = applyThreadPolicy();
      QCOMPARE(p.threads, 1);
      QCOMPARE(at::get_num_threads(), 1);
      QVERIFY(p.busy >= 1.0);
      if (p.cpus > 1) QCOMPARE(std::string(p.source), std::string("CPUs left free by other processes"));
    }
    // Not following: the CPU count, whatever the load.
    const ThreadPolicy fixed = applyThreadPolicy(/*followLoad=*/false);
    QCOMPARE(fixed.threads, availableCpus());
    QCOMPARE(at::get_num_threads(), availableCpus());
    {
      BusyChildren busy(availableCpus());
      QCOMPARE(followLoad(true).threads, availableCpus());
    }
    // HEADSCOPE_THREADS fixes the count even when the policy was asked to follow the load.
    qputenv("HEADSCOPE_THREADS", "1");
    QCOMPARE(applyThreadPolicy().threads, 1);
    QCOMPARE(std::string(followLoad(true).source), std::string("HEADSCOPE_THREADS"));
    if (saved.isNull())
      qunsetenv("HEADSCOPE_THREADS");
    else
      qputenv("HEADSCOPE_THREADS", saved);
  }
};

QTEST_GUILESS_MAIN(TestThreadPolicy)
#include "test_thread_policy.moc"
