#pragma once
// Small helpers shared by the benchmarks: run a reference command, time a call, take a median.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

}  // namespace hs::bench
