// bench_load: what does opening a safetensors checkpoint cost in time and memory?
//
// Writes a ~400 MB random fp32 safetensors file (or uses argv[1]), then in this process:
//   1. mmap path: SafetensorsFile::open + tensor() for every tensor + read one element of each;
//   2. baseline:  read the whole file into fresh memory with std::ifstream (what a copying loader does).
// For each it reports wall time and the growth of peak RSS (getrusage ru_maxrss and /proc VmHWM).
// The map must not copy: its RSS growth is a few pages per tensor, far below the file size, while the
// baseline grows by the whole file. Prints one JSON object; exits 1 if the map path looks like a copy.
//
// The file is written by a forked child so the writer's 400 MB of tensors never count towards this
// process's peak RSS. Both paths read a file that is already in the page cache (it was just written).
#include <ATen/ATen.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "model/io/safetensors.h"

namespace {

int64_t maxRssBytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux reports KiB
}

int64_t procStatusBytes(const char* field) {  // "VmHWM" / "VmRSS" in bytes, -1 if unavailable
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::string key = std::string(field) + ":";
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return std::stoll(line.substr(key.size())) * 1024;
  return -1;
}

// Reset VmHWM to the current RSS (Linux >= 4.0); ru_maxrss cannot be reset, so order matters below.
void resetHwm() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
}

struct Sample {
  int64_t maxrss, hwm, rss;
  static Sample now() { return {maxRssBytes(), procStatusBytes("VmHWM"), procStatusBytes("VmRSS")}; }
};

double seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void writeRandomFile(const std::string& path, int nTensors, int64_t rows, int64_t cols) {
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    int rc = 0;
    try {
      at::manual_seed(0);
      std::vector<std::pair<std::string, at::Tensor>> ts;
      for (int i = 0; i < nTensors; ++i)
        ts.emplace_back("model.layers." + std::to_string(i) + ".weight",
                        at::randn({rows, cols}));  // [rows, cols]
      hs::writeSafetensors(path, ts, {{"format", "pt"}});
    } catch (const std::exception& e) {
      std::cerr << "bench_load: writing " << path << " failed: " << e.what() << "\n";
      rc = 1;
    }
    _exit(rc);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("writer child failed");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string path;
    bool temp = false;
    if (argc > 1) {
      path = argv[1];
    } else {
      path = (std::filesystem::temp_directory_path() /
              ("headscope_bench_load_" + std::to_string(getpid()) + ".safetensors"))
                 .string();
      temp = true;
      writeRandomFile(path, 100, 1024, 1024);  // 100 x 4 MiB = 400 MiB of fp32
    }
    const int64_t fileBytes = static_cast<int64_t>(std::filesystem::file_size(path));

    // 1. The memory-mapped reader.
    resetHwm();
    const Sample m0 = Sample::now();
    auto t0 = std::chrono::steady_clock::now();
    double checksum = 0;
    size_t nTensors = 0;
    {
      auto f = hs::SafetensorsFile::open(path);
      for (const auto& name : f->names()) {
        const at::Tensor t = f->tensor(name);
        if (t.numel() > 0) checksum += t.reshape({-1})[0].item<double>();
        ++nTensors;
      }
    }
    auto t1 = std::chrono::steady_clock::now();
    const Sample m1 = Sample::now();

    // 2. Baseline: the whole file copied into fresh memory.
    resetHwm();
    const Sample b0 = Sample::now();
    auto t2 = std::chrono::steady_clock::now();
    double baseChecksum = 0;
    {
      std::ifstream in(path, std::ios::binary);
      std::vector<char> buf(static_cast<size_t>(fileBytes));
      in.read(buf.data(), fileBytes);
      if (!in) throw std::runtime_error("baseline read of " + path + " failed");
      baseChecksum = static_cast<double>(buf[static_cast<size_t>(fileBytes) - 1]);
    }
    auto t3 = std::chrono::steady_clock::now();
    const Sample b1 = Sample::now();

    if (temp) std::filesystem::remove(path);

    const int64_t mapDelta = m1.maxrss - m0.maxrss, baseDelta = b1.maxrss - b0.maxrss;
    const double ratio = static_cast<double>(mapDelta) / static_cast<double>(fileBytes);
    nlohmann::json out = {
        {"file", temp ? "temporary random fp32 file (deleted)" : path},
        {"file_bytes", fileBytes},
        {"tensors", nTensors},
        {"load_seconds", seconds(t0, t1)},
        {"peak_rss_delta_bytes", mapDelta},
        {"vmhwm_delta_bytes", m1.hwm - m0.hwm},
        {"rss_over_file_ratio", ratio},
        {"baseline_ifstream",
         {{"load_seconds", seconds(t2, t3)},
          {"peak_rss_delta_bytes", baseDelta},
          {"vmhwm_delta_bytes", b1.hwm - b0.hwm},
          {"rss_over_file_ratio", static_cast<double>(baseDelta) / static_cast<double>(fileBytes)}}},
        {"speedup_vs_baseline", seconds(t2, t3) / std::max(seconds(t0, t1), 1e-9)},
        {"checksum", checksum + 0 * baseChecksum},
    };
    std::cout << out.dump(2) << std::endl;
    // A reader that copies would grow RSS by about the file size.
    if (ratio > 0.1) {
      std::cerr << "bench_load: mmap path grew peak RSS by " << mapDelta << " bytes for a " << fileBytes
                << "-byte file: the reader copies\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_load: " << e.what() << "\n";
    return 2;
  }
}
