#include "train/numeric_kernels.h"

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <dlfcn.h>

#include <fstream>
#include <string>

namespace hs {
namespace {

// A line of at::show_config() after `key`, trimmed; "unknown" when there is none.
std::string configValue(const std::string& config, const std::string& key) {
  const size_t at = config.find(key);
  if (at == std::string::npos) return "unknown";
  const size_t from = at + key.size();
  const size_t to = config.find('\n', from);
  std::string v = config.substr(from, to == std::string::npos ? std::string::npos : to - from);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\r'))
    v.pop_back();
  return v.empty() ? "unknown" : v;
}

// An OpenBLAS function looked up in the running process, nullptr when there is none: libtorch reaches BLAS
// through libblas.so.3, which Debian's alternatives point at OpenBLAS or at the reference BLAS.
template <class Fn>
Fn openblasFunction(const char* symbol) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, symbol));
}

// OpenBLAS's own report; "unknown" when the process's BLAS is not OpenBLAS.
std::string openblasString(const char* symbol) {
  const auto fn = openblasFunction<char* (*)()>(symbol);
  const char* s = fn ? fn() : nullptr;
  return s ? std::string(s) : "unknown";
}

// OpenBLAS's thread count, -1 when the process's BLAS is not OpenBLAS.
int openblasThreads() {
  const auto fn = openblasFunction<int (*)()>("openblas_get_num_threads");
  return fn ? fn() : -1;
}

std::string cpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      std::string v = line.substr(line.find(':') + 1);
      while (!v.empty() && v.front() == ' ')
        v.erase(v.begin());
      return v;
    }
  return "unknown";
}

}  // namespace

nlohmann::json numericKernels() {
  std::string blas = openblasString("openblas_get_config");
  while (!blas.empty() && blas.back() == ' ')
    blas.pop_back();
  return {{"aten_cpu_capability", configValue(at::show_config(), "CPU capability usage: ")},
          {"blas", blas},
          {"blas_core", openblasString("openblas_get_corename")},
          {"blas_threads", openblasThreads()},
          {"cpu", cpuModel()},
          {"intra_op_threads", at::get_num_threads()}};
}

void useThreads(int threads) {
  if (threads <= 0) return;
  at::set_num_threads(threads);
  if (const auto fn = openblasFunction<void (*)(int)>("openblas_set_num_threads")) fn(threads);
}

void addNumericKernels(nlohmann::json& records, const nlohmann::json& record) {
  if (!records.is_array()) records = nlohmann::json::array();
  for (const auto& r : records)
    if (r == record) return;
  records.push_back(record);
}

}  // namespace hs
