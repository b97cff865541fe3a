#pragma once
// Small helpers shared by the benchmarks: run a reference command, time a call, take a median.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace hs::bench {

// The Python with PyTorch used for reference timings (Debian's /usr/bin/python3 + python3-torch).
inline std::string python() {
  const char* env = std::getenv("HEADSCOPE_REFERENCE_PYTHON");
  return env ? env : "/usr/bin/python3";
}

// Runs a command and returns its stdout; exits on failure.
inline std::string capture(const std::string& cmd) {
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    std::cerr << "cannot run: " << cmd << "\n";
    std::exit(1);
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  if (pclose(p) != 0) {
    std::cerr << "failed: " << cmd << "\n" << out << "\n";
    std::exit(1);
  }
  return out;
}

inline double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// A command run in a child process of its own: its stdout, exit status, wall time (from the fork to the
// exit, the program's start included) and peak RSS (wait4's ru_maxrss: the largest of the process and of
// the children it waited for, so a `sh -c` wrapper does not hide its program's).
struct ProcessRun {
  std::string out;
  int status = -1;  // the exit code; 128 + the signal when one ended it
  double wall_s = 0;
  int64_t peak_rss_bytes = 0;
};

inline ProcessRun runMeasured(const std::string& cmd) {
  ProcessRun r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls before exec
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return r;
  }
  char buf[65536];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0)
    r.out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.peak_rss_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  return r;
}

// The reference environment's Python (PyTorch 2.x and transformers: ./scripts/setup.sh --with-reference
// makes .venv-reference in the source tree; HEADSCOPE_REFERENCE_VENV names another folder), or "" with
// *why set to the one line a bench prints in place of its columns. Checked once per process.
inline std::string referencePython(std::string* why) {
  static std::string python, reason;
  static bool checked = false;
  if (!checked) {
    checked = true;
    const char* env = std::getenv("HEADSCOPE_REFERENCE_VENV");
    const std::string venv = env ? env : std::string(HEADSCOPE_SOURCE_DIR) + "/.venv-reference";
    const std::string py = venv + "/bin/python";
    if (!std::filesystem::exists(py)) {
      reason = "skipped: reference environment absent (./scripts/setup.sh --with-reference)";
    } else if (runMeasured(py + " -c 'import torch, transformers, safetensors' 2>/dev/null").status != 0) {
      reason = "skipped: reference environment " + venv +
               " does not import torch and transformers (rerun ./scripts/setup.sh --with-reference)";
    } else {
      python = py;
    }
  }
  if (why) *why = reason;
  return python;
}

}  // namespace hs::bench
