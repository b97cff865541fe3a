// The thread policy (model/thread_policy.h): the CPUs other processes keep busy are read from procfs (a fake
// one with known contents, then the real one beside busy child processes), and the pools shrink to what
// they leave free, unless HEADSCOPE_THREADS fixes the count.
#include <ATen/Parallel.h>
#include <signal.h>
#include <sys/sysinfo.h>
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
    QCOMPARE(threadsUnderLoad(2, 2, 0), 2);
    QCOMPARE(threadsUnderLoad(2, 2, 1), 1);  // one busy process on 2 cores: 1 thread
    QCOMPARE(threadsUnderLoad(2, 2, 5), 1);  // never fewer than 1
    QCOMPARE(threadsUnderLoad(16, 16, 1), 15);
    QCOMPARE(threadsUnderLoad(16, 16, 0.4), 16);  // a process busy part of the time rounds away
    QCOMPARE(threadsUnderLoad(4, 64, 32), 2);     // 4 of 64 CPUs: half the machine busy → 2 of ours
    QCOMPARE(threadsUnderLoad(4, 64, 8), 4);      // the load falls mostly on CPUs we may not use
    QCOMPARE(threadsUnderLoad(8, 4, 0), 8);       // online below our count (hot-unplug): ours stands
  }

  // loadavg's running count minus this process's threads in state R; comm may hold ") R".
  void readsAFakeProcfs() {
    QTemporaryDir dir;
    const QString root = dir.path();
    writeFile(root + "/loadavg", "0.50 0.40 0.30 6/200 1234\n");
    writeFile(root + "/self/task/100/stat", "100 (headscope) R 1 100 100 0 -1\n");
    writeFile(root + "/self/task/101/stat", "101 (evil) R x) S 1 100 100 0 -1\n");  // sleeping
    writeFile(root + "/self/task/102/stat", "102 (omp worker) R 1 100 100 0 -1\n");
    writeFile(root + "/self/task/103/stat", "103 (qt) D 1 100 100 0 -1\n");
    QCOMPARE(otherRunnableTasks(root.toStdString(), 3, 0), 4.0);

    writeFile(root + "/loadavg", "1 2\n");  // malformed
    QCOMPARE(otherRunnableTasks(root.toStdString(), 1, 0), -1.0);
    QCOMPARE(otherRunnableTasks((root + "/missing").toStdString(), 1, 0), -1.0);
  }

  // Busy child processes are always runnable, so the real procfs counts at least them, whatever else runs.
  void countsBusyProcessesOfTheMachine() {
    BusyChildren busy(2);
    QCOMPARE(static_cast<int>(busy.pids.size()), 2);
    QVERIFY2(otherRunnableTasks() >= 2.0, qPrintable(QString::number(otherRunnableTasks())));
  }

  void poolsFollowTheLoadUnlessFixed() {
    const QByteArray saved = qgetenv("HEADSCOPE_THREADS");
    qunsetenv("HEADSCOPE_THREADS");
    {
      // As many busy processes as the machine has CPUs: none of ours is free, the pools get 1 thread.
      BusyChildren busy(get_nprocs());
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
      BusyChildren busy(get_nprocs());
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
