// HeadScope against the real peers at real models' shapes, all in one run: the forward and its peak memory
// against transformers on PyTorch 2.x and against a plain PyTorch 1.13 forward, the whole `headscope-cli
// logits` command against a whole transformers script doing the same (load included), and the fast patching
// sweep against the naive loop.
//
// Models: GPT-2 small (12 layers × 12 heads, d_model 768, vocab 50257, tied) and Llama-3.2-1B (16 layers × 32
// heads, 8 kv heads, d_model 2048, d_mlp 8192, vocab 128256, tied embeddings, llama3 RoPE scaling) with
// random bf16 weights in the HF layout as transformers names them, written once by
// scripts/make_real_shape_checkpoint.py into <build>/bench-data/ and reused by later runs (0.25 and 2.5 GB).
// `--shape llama-3.1-8b` measures the 8B shape instead (15 GB written on request; bf16 forward only).
//
// Forward: 128 tokens t_i = (7919 i + 13) mod vocab, all positions' logits as float32, in float32 and in
// bfloat16. Three sides, each in a child process of its own, so each peak RSS (ru_maxrss) is that process's
// alone; each loads the checkpoint at the dtype, runs one warm-up forward and reports the median of --runs
// forwards:
//  - ours: `loadModel` + `Transformer::run` (this program's --child-forward);
//  - transformers: bench/real_shapes_transformers.py with the reference environment's PyTorch 2.x
//    (AutoModelForCausalLM.from_pretrained on the same folder, eager attention, inference mode); without
//    that environment its columns say it was skipped and why, and the rest runs;
//  - PyTorch 1.13: bench/real_shapes_torch.py, an independent forward in plain torch (/usr/bin/python3).
// They alternate for --rounds rounds (default 2), so a slow minute of a shared machine falls on all; each
// ratio is that of the medians over every round's forwards, and each round's own ratios are reported too.
// All use every hardware thread; both Python sides get the malloc settings hs::tuneAllocator gives ours.
//
// Command: `headscope-cli logits DIR --ids <the 128 tokens> --dtype f32|bf16` against
// `real_shapes_transformers.py logits` (load, one forward, the last position's logits, softmax and top 10,
// printed as JSON), each timed as a whole process from its start to its exit, with its peak RSS, one of each
// per round; HEADSCOPE_THREADS and --threads give both the same thread count.
//
// Sweep (Llama-3.2-1B shape): hs::patchingSweep (FromClean hook_z at the last position, logit difference, all
// 512 heads) against the naive loop (one patched full forward per head, last-position logits), timed on
// --naive-heads heads and extrapolated to 512 plus its clean and corrupt runs, in bfloat16.
//
// usage: bench_real_shapes [--shape gpt2|llama-3.2-1b|llama-3.1-8b]... [--dtype float32|bfloat16]...
//                          [--runs N] [--rounds R] [--tokens T] [--naive-heads K] [--no-sweep]
//                          [--no-command] [--data DIR]
// Prints one JSON object on stdout, then a table of the figures and ratios (ours / peer) on stderr.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "analysis/toolkit/patch_sweep.h"
#include "bench_util.h"
#include "model/load/model_loader.h"
#include "model/onednn_gemm.h"
#include "model/thread_policy.h"
#include "sweep_bench.h"
#include "util/allocator.h"

namespace fs = std::filesystem;
using hs::bench::benchTokens;
using hs::bench::capture;
using hs::bench::median;
using hs::bench::ProcessRun;
using hs::bench::python;
using hs::bench::referencePython;
using hs::bench::runMeasured;
using hs::bench::seconds;

namespace {

int64_t peakRss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<int64_t>(u.ru_maxrss) * 1024;
}

// The child: load at `dtype`, one warm-up forward, the median of `runs` forwards.
int childForward(const std::string& dir, const std::string& dtype, int tokens, int runs) {
  at::NoGradGuard noGrad;
  hs::LoadOptions o;
  o.dtype = dtype;
  hs::LoadedModel m;
  const double loadS = seconds([&] { m = hs::loadModel(dir, o); });
  hs::RunRequest r;
  r.tokens = at::tensor(benchTokens(tokens, m.config.vocab_size), at::kLong).view({1, -1});  // [1, pos]
  at::Tensor logits = m.model->run(r).logits;                                                // warm-up
  std::vector<double> t;
  for (int i = 0; i < runs; ++i)
    t.push_back(seconds([&] { logits = m.model->run(r).logits; }));
  std::cout << nlohmann::json{{"load_s", loadS},
                              {"forward_s", median(t)},
                              {"forward_runs", t},
                              {"peak_rss_bytes", peakRss()},
                              {"logits_last_argmax", logits[0][-1].argmax().item<int64_t>()},
                              {"logits_abs_mean", logits.abs().mean().item<double>()}}
                   .dump()
            << std::endl;
  return 0;
}

std::string selfPath() {
  return fs::read_symlink("/proc/self/exe").string();
}

// The malloc settings hs::tuneAllocator gives our programs, for the Python child too.
const char* kMallocEnv = "MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 ";

nlohmann::json sweep(const std::string& dir, int tokens, int naiveHeads, int runs) {
  at::NoGradGuard noGrad;
  hs::LoadOptions o;
  o.dtype = "bf16";
  const hs::LoadedModel m = hs::loadModel(dir, o);
  const hs::Transformer& model = *m.model;
  const int L = m.config.n_layers, H = m.config.n_heads, nHeads = L * H;
  const hs::PatchSweepSpec spec =
      hs::bench::sweepSpec(model, tokens, {tokens / 6, tokens / 2, (tokens * 4) / 5});

  hs::HeadGrid fast = hs::patchingSweep(model, spec);  // warm-up
  std::vector<double> tFast;
  for (int i = 0; i < runs; ++i)
    tFast.push_back(seconds([&] { fast = hs::patchingSweep(model, spec); }));

  // The naive loop over a spread subset of heads, extrapolated (as bench_patching does).
  std::unique_ptr<hs::bench::NaivePatching> naive;
  const double setup = seconds([&] { naive = std::make_unique<hs::bench::NaivePatching>(model, spec); });
  std::vector<double> t;
  double maxDiff = 0;
  for (auto [l, h] : hs::bench::spreadHeads(L, H, naiveHeads)) {
    double v = 0;
    t.push_back(seconds([&] { v = naive->effect(l, h); }));
    maxDiff = std::max(maxDiff, std::abs(v - fast.values(l, h)));
  }
  const double naiveS = setup + median(t) * nHeads;
  return {{"dtype", "bfloat16"},
          {"tokens", tokens},
          {"heads", nHeads},
          {"fast_s", median(tFast)},
          {"fast_runs", tFast},
          {"naive_s", naiveS},
          {"naive_extrapolated", true},
          {"naive_heads_timed", naiveHeads},
          {"naive_per_forward_s", median(t)},
          {"speedup_fast_vs_naive", naiveS / median(tFast)},
          {"max_abs_diff_fast_vs_naive", maxDiff},
          {"max_abs_grid_value", fast.values.cwiseAbs().maxCoeff()}};
}

const std::vector<std::string> kShapes = {"gpt2", "llama-3.2-1b", "llama-3.1-8b"};

std::string idsText(const std::vector<int64_t>& ids) {
  std::string out;
  for (int64_t id : ids)
    out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
}

// The last position's argmax of a `logits` JSON (ours or the transformers script's): the top entry's id.
int64_t topId(const std::string& out) {
  return nlohmann::json::parse(out).at("top").at(0).at("id").get<int64_t>();
}

// Runs a side's forward report command; its forwards join `runs`, its peak RSS raises `rss`.
nlohmann::json forwardSide(const std::string& cmd, std::vector<double>& runs, double& rss) {
  nlohmann::json r = nlohmann::json::parse(capture(cmd));
  for (double t : r["forward_runs"].get<std::vector<double>>())
    runs.push_back(t);
  rss = std::max(rss, r["peak_rss_bytes"].get<double>());
  return r;
}

// One side's summary: the last round's report with every round's forwards, their median and the largest
// peak RSS.
nlohmann::json summary(nlohmann::json last, const std::vector<double>& runs, double rss) {
  last["forward_runs"] = runs, last["forward_s"] = median(runs), last["peak_rss_bytes"] = rss;
  return last;
}

// The rows of the table printed at the end.
struct Row {
  std::string shape, dtype, what;
  std::string ours, transformers, pytorch;  // figures as printed
  std::string vsTransformers, vsPytorch;    // ratios ours / peer
};

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}
std::string gb(double bytes) {
  return fmt("%.2f GB", bytes / 1e9);
}
std::string ratio(double a, double b) {
  return fmt("%.2f×", a / b);
}

void printTable(const std::vector<Row>& rows, const nlohmann::json& report) {
  std::cerr << "\nbench_real_shapes: " << report["threads"] << " threads, tokens " << report["tokens"]
            << "; ratios are ours / peer (below 1: HeadScope faster or smaller)\n\n"
            << "| shape | dtype | measure | HeadScope | transformers (torch "
            << report["transformers"]["torch"].get<std::string>()
            << ") | ours / transformers | PyTorch 1.13 | ours / PyTorch 1.13 "
               "|\n|---|---|---|---|---|---|---|---|\n";
  for (const Row& r : rows)
    std::cerr << "| " << r.shape << " | " << r.dtype << " | " << r.what << " | " << r.ours << " | "
              << r.transformers << " | " << r.vsTransformers << " | " << r.pytorch << " | " << r.vsPytorch
              << " |\n";
  std::cerr << std::flush;
}

}  // namespace

int main(int argc, char** argv) {
  hs::tuneAllocator();
  const int threads =
      hs::applyThreadPolicy(/*followLoad=*/false).threads;  // the CPU count, fixed (model/thread_policy.h)
  std::vector<std::string> shapes, dtypes;
  std::string data;
  int runs = 3, rounds = 2, tokens = 128, naiveHeads = 8;
  bool withSweep = true, withCommand = true;
  const char* usage =
      "usage: bench_real_shapes [--shape gpt2|llama-3.2-1b|llama-3.1-8b]... [--dtype float32|bfloat16]... "
      "[--runs N] [--rounds R] [--tokens T] [--naive-heads K] [--no-sweep] [--no-command] [--data DIR]\n";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--child-forward" && i + 4 < argc)
      return childForward(argv[i + 1], argv[i + 2], std::atoi(argv[i + 3]), std::atoi(argv[i + 4]));
    if (a == "--shape" && i + 1 < argc && std::count(kShapes.begin(), kShapes.end(), argv[i + 1]))
      shapes.push_back(argv[++i]);
    else if (a == "--dtype" && i + 1 < argc &&
             (std::string(argv[i + 1]) == "float32" || std::string(argv[i + 1]) == "bfloat16"))
      dtypes.push_back(argv[++i]);
    else if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--tokens" && i + 1 < argc)
      tokens = std::max(8, std::atoi(argv[++i]));
    else if (a == "--naive-heads" && i + 1 < argc)
      naiveHeads = std::max(1, std::atoi(argv[++i]));
    else if (a == "--data" && i + 1 < argc)
      data = argv[++i];
    else if (a == "--no-sweep")
      withSweep = false;
    else if (a == "--no-command")
      withCommand = false;
    else {
      std::cerr << usage;
      return 2;
    }
  }
  if (shapes.empty()) shapes = {"gpt2", "llama-3.2-1b"};
  const fs::path binDir = fs::path(selfPath()).parent_path();
  if (data.empty()) data = (binDir.parent_path() / "bench-data").string();
  const std::string cli = (binDir / "headscope-cli").string();
  std::string whyNoTransformers;
  const std::string refPython = referencePython(&whyNoTransformers);
  const std::string threadsText = std::to_string(threads);
  const std::string src = HEADSCOPE_SOURCE_DIR;
  // The transformers side: offline, its progress bars off, our malloc settings (as the PyTorch side).
  const std::string hfEnv =
      "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false TRANSFORMERS_VERBOSITY=error "
      "HF_HUB_DISABLE_PROGRESS_BARS=1 PYTHONDONTWRITEBYTECODE=1 ";

  nlohmann::json report;
  std::vector<Row> rows;
  try {
    report["threads"] = threads;
    report["tokens"] = tokens;
    report["blas_core"] = hs::blasCore();  // OpenBLAS's kernels, as OPENBLAS_CORETYPE or the CPU chose
    report["f32_gemm"] = hs::float32GemmBackend();  // oneDNN, or ATen's BLAS (HEADSCOPE_GEMM=aten)
    if (refPython.empty()) {
      report["transformers"] = {{"skipped", whyNoTransformers}, {"torch", "(absent)"}};
      std::cerr << "bench_real_shapes: transformers columns " << whyNoTransformers << "\n";
    } else {
      const std::string v = capture(refPython +
                                    " -c 'import torch, transformers; print(torch.__version__, "
                                    "transformers.__version__)' 2>/dev/null");
      report["transformers"] = {{"python", refPython},
                                {"torch", v.substr(0, v.find(' '))},
                                {"transformers", v.substr(v.find(' ') + 1, v.find('\n') - v.find(' ') - 1)}};
    }
    for (const std::string& shape : shapes) {
      const std::string dir = data + "/" + shape;
      if (!fs::exists(dir + "/config.json")) {
        std::cerr << "bench_real_shapes: writing the " << shape << " checkpoint to " << dir << " (once)\n";
        capture(python() + " " + src + "/scripts/make_real_shape_checkpoint.py " + shape + " " + dir);
      }
      const hs::ModelProbe probe = hs::probeModel(dir);
      nlohmann::json& out = report[shape];
      out["model"] = {{"params", probe.n_params},
                      {"layers", probe.config.n_layers},
                      {"heads", probe.config.n_heads},
                      {"weights", "random bf16, HF layout"}};
      std::vector<std::string> dts = dtypes;
      if (dts.empty())
        dts = shape == "llama-3.1-8b" ? std::vector<std::string>{"bfloat16"}
                                      : std::vector<std::string>{"float32", "bfloat16"};
      const std::string ids = idsText(benchTokens(tokens, probe.config.vocab_size));
      for (const std::string& dt : dts) {
        const std::string tok = " --tokens " + std::to_string(tokens) + " --runs " + std::to_string(runs) +
                                " --threads " + threadsText;
        const std::string oursCmd = std::string(kMallocEnv) + selfPath() + " --child-forward " + dir + " " +
                                    dt + " " + std::to_string(tokens) + " " + std::to_string(runs);
        const std::string torchCmd = std::string(kMallocEnv) + python() + " " + src +
                                     "/bench/real_shapes_torch.py " + dir + " " + dt + tok;
        const std::string hfCmd = std::string(kMallocEnv) + hfEnv + refPython + " " + src +
                                  "/bench/real_shapes_transformers.py forward " + dir + " " + dt + tok;
        const std::string cliDtype = dt == "float32" ? "f32" : "bf16";
        const std::string oursWhole = "HEADSCOPE_THREADS=" + threadsText + " " + cli + " logits " + dir +
                                      " --dtype " + cliDtype + " --ids " + ids + " 2>/dev/null";
        const std::string hfWhole = hfEnv + refPython + " " + src +
                                    "/bench/real_shapes_transformers.py logits " + dir + " " + dt +
                                    " --ids " + ids + " --threads " + threadsText;
        const bool command = withCommand && fs::exists(cli);

        nlohmann::json ours, torch, hf, perRound = nlohmann::json::array();
        std::vector<double> oursRuns, torchRuns, hfRuns, oursCmdRuns, hfCmdRuns;
        double oursRss = 0, torchRss = 0, hfRss = 0, oursCmdRss = 0, hfCmdRss = 0;
        bool sameTop = true;
        for (int r = 0; r < rounds; ++r) {
          std::cerr << "bench_real_shapes: " << shape << " " << dt << ", round " << r + 1 << " of " << rounds
                    << "\n";
          nlohmann::json round;
          ours = forwardSide(oursCmd, oursRuns, oursRss);
          round["ours_s"] = ours["forward_s"];
          if (!refPython.empty()) {
            hf = forwardSide(hfCmd, hfRuns, hfRss);
            round["transformers_s"] = hf["forward_s"];
            round["ratio_vs_transformers"] = ours["forward_s"].get<double>() / hf["forward_s"].get<double>();
          }
          torch = forwardSide(torchCmd, torchRuns, torchRss);
          round["pytorch_1_13_s"] = torch["forward_s"];
          round["ratio_vs_pytorch_1_13"] = ours["forward_s"].get<double>() / torch["forward_s"].get<double>();
          if (command) {
            const ProcessRun o = runMeasured(oursWhole);
            if (o.status != 0)
              throw std::runtime_error("failed (exit " + std::to_string(o.status) + "): " + oursWhole);
            oursCmdRuns.push_back(o.wall_s);
            oursCmdRss = std::max(oursCmdRss, double(o.peak_rss_bytes));
            round["command_ours_s"] = o.wall_s;
            if (!refPython.empty()) {
              const ProcessRun h = runMeasured(hfWhole);
              if (h.status != 0)
                throw std::runtime_error("failed (exit " + std::to_string(h.status) + "): " + hfWhole);
              hfCmdRuns.push_back(h.wall_s);
              hfCmdRss = std::max(hfCmdRss, double(h.peak_rss_bytes));
              round["command_transformers_s"] = h.wall_s;
              round["command_ratio"] = o.wall_s / h.wall_s;
              sameTop = sameTop && topId(o.out) == topId(h.out);
            }
          }
          perRound.push_back(round);
        }
        nlohmann::json f = {
            {"ours", summary(ours, oursRuns, oursRss)},
            {"pytorch_1_13", summary(torch, torchRuns, torchRss)},
            {"rounds", perRound},
            {"ratio_forward_ours_vs_pytorch_1_13", median(oursRuns) / median(torchRuns)},
            {"ratio_peak_rss_ours_vs_pytorch_1_13", oursRss / torchRss},
            {"same_last_argmax_pytorch_1_13", ours["logits_last_argmax"] == torch["logits_last_argmax"]}};
        Row fw{shape,
               dt,
               "forward, 128 tokens",
               fmt("%.3f s", median(oursRuns)),
               whyNoTransformers,
               fmt("%.3f s", median(torchRuns)),
               "",
               ratio(median(oursRuns), median(torchRuns))};
        Row mem{shape,        dt, "forward's peak RSS",    gb(oursRss), whyNoTransformers,
                gb(torchRss), "", ratio(oursRss, torchRss)};
        if (refPython.empty()) {
          f["transformers"] = whyNoTransformers;
        } else {
          f["transformers"] = summary(hf, hfRuns, hfRss);
          f["ratio_forward_ours_vs_transformers"] = median(oursRuns) / median(hfRuns);
          f["ratio_peak_rss_ours_vs_transformers"] = oursRss / hfRss;
          f["same_last_argmax_transformers"] = ours["logits_last_argmax"] == hf["logits_last_argmax"];
          fw.transformers = fmt("%.3f s", median(hfRuns)),
          fw.vsTransformers = ratio(median(oursRuns), median(hfRuns));
          mem.transformers = gb(hfRss), mem.vsTransformers = ratio(oursRss, hfRss);
        }
        out["forward_" + dt] = f;
        rows.push_back(fw);
        rows.push_back(mem);
        if (command) {
          nlohmann::json c = {
              {"ours",
               {{"wall_s", median(oursCmdRuns)}, {"runs", oursCmdRuns}, {"peak_rss_bytes", oursCmdRss}}}};
          Row ct{shape,
                 dt,
                 "`logits` command, whole process",
                 fmt("%.2f s", median(oursCmdRuns)),
                 whyNoTransformers,
                 "",
                 "",
                 ""};
          Row cm{shape, dt, "`logits` command's peak RSS", gb(oursCmdRss), whyNoTransformers, "", "", ""};
          if (refPython.empty()) {
            c["transformers"] = whyNoTransformers;
          } else {
            c["transformers"] = {
                {"wall_s", median(hfCmdRuns)}, {"runs", hfCmdRuns}, {"peak_rss_bytes", hfCmdRss}};
            c["ratio_ours_vs_transformers"] = median(oursCmdRuns) / median(hfCmdRuns);
            c["ratio_peak_rss_ours_vs_transformers"] = oursCmdRss / hfCmdRss;
            c["same_top_token"] = sameTop;
            ct.transformers = fmt("%.2f s", median(hfCmdRuns)),
            ct.vsTransformers = ratio(median(oursCmdRuns), median(hfCmdRuns));
            cm.transformers = gb(hfCmdRss), cm.vsTransformers = ratio(oursCmdRss, hfCmdRss);
          }
          out["logits_command_" + dt] = c;
          rows.push_back(ct);
          rows.push_back(cm);
        } else if (withCommand) {
          out["logits_command_" + dt] = "skipped: " + cli + " not built";
        }
      }
      if (withSweep && shape == "llama-3.2-1b") out["sweep"] = sweep(dir, tokens, naiveHeads, runs);
    }
  } catch (const std::exception& e) {
    std::cerr << "bench_real_shapes: " << e.what() << "\n";
    return 1;
  }
  std::cout << report.dump(2) << "\n" << std::flush;
  printTable(rows, report);
  return 0;
}
