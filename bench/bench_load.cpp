// bench_load: what does opening a safetensors checkpoint cost in time and memory, and what does loading a
// bf16 checkpoint as float32 cost at a real model's shape?
//
// 1. Opening. Writes a ~400 MB random fp32 safetensors file (or uses FILE), then in this process:
//   a. mmap path: SafetensorsFile::open + tensor() for every tensor + read one element of each;
//   b. baseline:  read the whole file into fresh memory with std::ifstream (what a copying loader does).
// For each it reports wall time and the growth of peak RSS (getrusage ru_maxrss and /proc VmHWM).
// The map must not copy: its RSS growth is a few pages per tensor, far below the file size, while the
// baseline grows by the whole file. Exits 1 if the map path looks like a copy.
// The file is written by a forked child so the writer's 400 MB of tensors never count towards this
// process's peak RSS. Both paths read a file that is already in the page cache (it was just written).
//
// 2. Converting, at the Llama-3.2-1B shape (the random bf16 checkpoint bench_real_shapes uses, 2.5 GB,
// written once into <build>/bench-data/llama-3.2-1b by scripts/make_real_shape_checkpoint.py): the time
// from the call to float32 weights ready for the forward, each side in a process of its own (fresh memory,
// its own peak RSS), the sides alternating for --rounds rounds, medians and ratios ours / baseline:
//   - ours:  hs::loadModel(DIR, dtype f32), and the same in bf16 (aligned copies of the stored weights);
//   - Tensor::to: the same file mapped and every tensor converted by Tensor::to(kFloat).contiguous(), its
//     file pages released after it (the loader's conversion before the one-pass copies);
//   - transformers: AutoModelForCausalLM.from_pretrained(DIR, dtype=float32) in the reference environment
//     (bench/load_peers.py), and plain PyTorch there: safetensors.torch.load_file + Tensor.float();
//     without that environment these say why they were skipped.
// Every side also sums the bits of layer 0's q_proj weight as float32, which must agree (same values).
// All use every hardware thread (hs::applyThreadPolicy without following the load); the Python sides get
// the malloc settings hs::tuneAllocator gives ours.
//
// usage: bench_load [FILE] [--rounds R] [--data DIR] [--no-convert]
// Prints one JSON object on stdout and, on stderr, a table of the conversion part.
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

#include "bench_util.h"
#include "model/io/safetensors.h"
#include "model/load/model_loader.h"
#include "model/thread_policy.h"
#include "util/allocator.h"

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

// ---------------------------------------------------------------------------------------------------
// 2. Converting

double cpuSeconds(const timeval& t) {
  return double(t.tv_sec) + double(t.tv_usec) * 1e-6;
}

// The sum of the bits of a float32 tensor read as int32: equal sums, equal values (in practice).
int64_t bitSum(const at::Tensor& t) {
  return t.contiguous().view(at::kInt).to(at::kLong).sum().item<int64_t>();
}

// The child: load DIR as `mode` ("ours-f32", "ours-bf16", "tensor-to-f32"), report the load's wall, user and
// system time, the process's peak RSS and layer 0's q_proj bit sum (as float32).
int childLoad(const std::string& dir, const std::string& mode) {
  hs::tuneAllocator();
  hs::applyThreadPolicy(/*followLoad=*/false);
  rusage r0{}, r1{};
  getrusage(RUSAGE_SELF, &r0);
  const auto t0 = std::chrono::steady_clock::now();
  at::Tensor q;
  std::vector<at::Tensor> keep;  // the Tensor::to side's weights, alive until the end
  hs::LoadedModel m;
  if (mode == "ours-f32" || mode == "ours-bf16") {
    hs::LoadOptions o;
    o.dtype = mode == "ours-f32" ? "f32" : "bf16";
    m = hs::loadModel(dir, o);
    q = m.model->weights().layers.at(0).wq;
  } else if (mode == "tensor-to-f32") {
    const hs::SafetensorsCheckpoint ckpt = hs::SafetensorsCheckpoint::open(dir);
    for (const std::string& name : ckpt.names()) {
      keep.push_back(ckpt.tensor(name).to(at::kFloat).contiguous());
      ckpt.release(name);
      if (name == "model.layers.0.self_attn.q_proj.weight") q = keep.back();
    }
  } else {
    std::cerr << "bench_load: unknown child mode " << mode << "\n";
    return 2;
  }
  const double loadS = seconds(t0, std::chrono::steady_clock::now());
  getrusage(RUSAGE_SELF, &r1);
  std::cout << nlohmann::json{{"load_s", loadS},
                              {"user_s", cpuSeconds(r1.ru_utime) - cpuSeconds(r0.ru_utime)},
                              {"sys_s", cpuSeconds(r1.ru_stime) - cpuSeconds(r0.ru_stime)},
                              {"peak_rss_bytes", maxRssBytes()},
                              {"q_bits", bitSum(q.to(at::kFloat))}}
                   .dump()
            << std::endl;
  return 0;
}

struct Side {
  std::string name, cmd;
  std::vector<double> load, user, sys;
  double rss = 0;
  std::vector<int64_t> qBits;
};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// The conversion part: every side once per round, alternating; returns the report and prints the table.
nlohmann::json convertBench(const std::string& data, int rounds) {
  const std::string dir = data + "/llama-3.2-1b";
  const std::string src = HEADSCOPE_SOURCE_DIR;
  if (!std::filesystem::exists(dir + "/config.json")) {
    std::cerr << "bench_load: writing the llama-3.2-1b checkpoint to " << dir << " (once)\n";
    hs::bench::capture(hs::bench::python() + " " + src +
                       "/scripts/make_real_shape_checkpoint.py llama-3.2-1b " + dir);
  }
  const int threads = hs::applyThreadPolicy(/*followLoad=*/false).threads;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string malloc =
      "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 PYTHONDONTWRITEBYTECODE=1 ";
  const std::string env = "HEADSCOPE_THREADS=" + std::to_string(threads) + " ";
  std::vector<Side> sides = {{"ours, float32", env + self + " --child-load " + dir + " ours-f32"},
                             {"Tensor::to, float32", env + self + " --child-load " + dir + " tensor-to-f32"},
                             {"ours, bf16", env + self + " --child-load " + dir + " ours-bf16"}};
  std::string whyNoPeers;
  const std::string py = hs::bench::referencePython(&whyNoPeers);
  if (!py.empty())
    for (const char* peer : {"transformers", "safetensors"})
      sides.push_back(
          {std::string(peer) == "transformers" ? "transformers, float32" : "PyTorch load_file, float32",
           malloc + py + " " + src + "/bench/load_peers.py " + peer + " " + dir + " --threads " +
               std::to_string(threads)});
  for (int r = 0; r < rounds; ++r) {
    std::cerr << "bench_load: llama-3.2-1b loads, round " << r + 1 << " of " << rounds << "\n";
    for (Side& s : sides) {
      const hs::bench::ProcessRun run = hs::bench::runMeasured(s.cmd);
      if (run.status != 0)
        throw std::runtime_error("failed (exit " + std::to_string(run.status) + "): " + s.cmd);
      const nlohmann::json j = nlohmann::json::parse(run.out);
      s.load.push_back(j.at("load_s")), s.user.push_back(j.at("user_s")), s.sys.push_back(j.at("sys_s"));
      s.rss = std::max(s.rss, j.at("peak_rss_bytes").get<double>());
      s.qBits.push_back(j.at("q_bits"));
    }
  }
  using hs::bench::median;
  const Side& ours = sides[0];
  nlohmann::json out = {{"checkpoint", dir}, {"threads", threads}, {"rounds", rounds}};
  bool sameValues = true;
  for (const Side& s : sides) {
    out["sides"][s.name] = {{"load_s", median(s.load)}, {"load_runs", s.load},
                            {"user_s", median(s.user)}, {"sys_s", median(s.sys)},
                            {"peak_rss_bytes", s.rss},  {"q_bits", s.qBits.front()}};
    if (s.name != ours.name) out["sides"][s.name]["ratio_ours_f32_vs"] = median(ours.load) / median(s.load);
    for (int64_t b : s.qBits)
      sameValues = sameValues && b == ours.qBits.front();
  }
  if (py.empty()) out["peers"] = whyNoPeers;
  out["same_values"] = sameValues;

  std::cerr << "\nbench_load: Llama-3.2-1B shape, bf16 checkpoint (2.5 GB) loaded; " << threads
            << " threads, " << rounds << " rounds, medians; ratio: ours float32 / the side\n\n"
            << "| side | load | user | system | peak RSS | ours f32 / side |\n|---|---|---|---|---|---|\n";
  for (const Side& s : sides)
    std::cerr << "| " << s.name << " | " << fmt("%.2f s", median(s.load)) << " | "
              << fmt("%.2f s", median(s.user)) << " | " << fmt("%.2f s", median(s.sys)) << " | "
              << fmt("%.2f GB", s.rss / 1e9) << " | "
              << (s.name == ours.name ? std::string() : fmt("%.2f×", median(ours.load) / median(s.load)))
              << " |\n";
  if (py.empty()) std::cerr << "transformers and PyTorch sides " << whyNoPeers << "\n";
  std::cerr << (sameValues ? "every side holds the same float32 q_proj values\n"
                           : "the sides' q_proj values DIFFER\n")
            << std::flush;
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, data;
  int rounds = 3;
  bool convert = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--child-load" && i + 2 < argc) return childLoad(argv[i + 1], argv[i + 2]);
    if (a == "--rounds" && i + 1 < argc) {
      rounds = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--data" && i + 1 < argc) {
      data = argv[++i];
    } else if (a == "--no-convert") {
      convert = false;
    } else if (path.empty() && a.rfind("--", 0) != 0) {
      path = a;
    } else {
      std::cerr << "usage: bench_load [FILE] [--rounds R] [--data DIR] [--no-convert]\n";
      return 2;
    }
  }
  if (data.empty())
    data =
        (std::filesystem::read_symlink("/proc/self/exe").parent_path().parent_path() / "bench-data").string();
  try {
    bool temp = false;
    if (path.empty()) {
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
    const nlohmann::json converted =
        convert ? convertBench(data, rounds) : nlohmann::json("skipped (--no-convert)");

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
        {"llama_3_2_1b_load", converted},
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
