// The memory plan made before loading, the dtype `auto` picks, device maps, and reading an 8B-shaped
// checkpoint from its headers only.
#include <ATen/ATen.h>
#include <QTemporaryDir>
#include <QtTest>

#include <dlfcn.h>

#include <fstream>
#include <functional>
#include <string>

#include "load_error_util.h"
#include "model/cuda_runtime.h"
#include "model/device_map.h"
#include "model/load/memory_plan.h"
#include "model/load/model_loader.h"
#include "real_shape_util.h"
#include "test_paths.h"

namespace {

constexpr uint64_t GB = 1000ull * 1000 * 1000;

hs::MemoryBudget ram(uint64_t bytes) {
  hs::MemoryBudget b;
  b.ram_available = bytes;
  b.ram_source = "test";
  return b;
}

using hs::test::errorOf;

bool has(const std::string& s, const std::string& part) {
  return hs::test::contains(s, part);
}

}  // namespace

class TestMemoryPlan : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  // The 8B shape from headers alone: the same config, parameter count and files as loading would see, from
  // a checkpoint whose 16 GB of data are holes (nothing is read, or the holes would give zero weights).
  void probeReadsHeadersOnly() {
    QTemporaryDir dir;
    const std::string folder = hs::test::writeSparseRealShape(dir.path().toStdString());
    const hs::ModelProbe p = hs::probeModel(folder);
    QCOMPARE(p.format, std::string("safetensors"));
    QCOMPARE(p.config.n_layers, 32);
    QCOMPARE(p.config.d_model, 4096);
    QCOMPARE(p.config.n_kv_heads, 8);
    QCOMPARE(p.config.dtype, std::string("bfloat16"));
    QCOMPARE(p.n_params, hs::test::realShapeParams({}));
    QCOMPARE(p.n_params, 8030261248LL);  // Llama-3.1-8B's published parameter count
    QVERIFY(p.stored_bytes > 16 * GB);
    QCOMPARE(p.files.size(), size_t(2));  // config.json + model.safetensors
  }

  // A wrong shape or a missing tensor is found from the headers, as loading finds it.
  void probeChecksShapes() {
    QTemporaryDir dir;
    hs::test::RealShape s;
    s.layers = 2, s.d = 64, s.heads = 4, s.kvHeads = 2, s.dHead = 16, s.dMlp = 96, s.vocab = 100;
    const std::string folder = hs::test::writeSparseRealShape(dir.path().toStdString(), s);
    QCOMPARE(hs::probeModel(folder).n_params, hs::test::realShapeParams(s));
    nlohmann::json cfg = nlohmann::json::parse(std::ifstream(folder + "/config.json"));
    cfg["intermediate_size"] = 97;
    std::ofstream(folder + "/config.json") << cfg.dump();
    const std::string e = errorOf([&] { hs::probeModel(folder); });
    QVERIFY2(has(e, "mlp.gate_proj.weight") && has(e, "[97, 64]"), e.c_str());
  }

  // auto: float32 when its copy takes at most half of the RAM, else the checkpoint's bf16; a model that does
  // not fit at all is refused before loading, naming the sizes and the ways out.
  void autoDtypeFollowsTheRoomThereIs() {
    QTemporaryDir dir;
    const hs::ModelProbe p = hs::probeModel(hs::test::writeSparseRealShape(dir.path().toStdString()));
    const hs::DeviceMap cpu = hs::DeviceMap::all(c10::kCPU, 32);

    const hs::MemoryPlan roomy = hs::planMemory("m", p.config, p.n_params, "auto", cpu, ram(128 * GB));
    QCOMPARE(roomy.dtype, at::kFloat);
    QVERIFY2(has(roomy.note, "dtype auto: float32"), roomy.note.c_str());
    QVERIFY(roomy.devices.at(0).weights == uint64_t(p.n_params) * 4);
    QVERIFY(roomy.copy_weights && roomy.weights_note.empty());

    const hs::MemoryPlan tight = hs::planMemory("m", p.config, p.n_params, "auto", cpu, ram(24 * GB));
    QCOMPARE(tight.dtype, at::kBFloat16);
    QVERIFY2(has(tight.note, "bfloat16 as stored") && has(tight.note, "--dtype f32"), tight.note.c_str());
    QVERIFY(tight.devices.at(0).weights == uint64_t(p.n_params) * 2);
    // bf16 as stored, 17.5 GB of 24: the weights stay mapped (no private copy), and the note says why.
    QVERIFY(!tight.copy_weights);
    QVERIFY2(has(tight.weights_note, "memory-mapped pages"), tight.weights_note.c_str());

    // Asked for float32 on 24 GB: refused with the sizes and --dtype bf16 as the way out.
    const std::string f32 =
        errorOf([&] { hs::planMemory("/m/8b", p.config, p.n_params, "f32", cpu, ram(24 * GB)); });
    QVERIFY2(has(f32, "/m/8b: not enough memory to load it as float32") && has(f32, "32.1 GB") &&
                 has(f32, "24.0 GB available") && has(f32, "--dtype bf16") && has(f32, "--device cuda"),
             f32.c_str());
    // Nothing fits in 8 GB: auto is refused too (bf16 needs 16 GB).
    const std::string none =
        errorOf([&] { hs::planMemory("m", p.config, p.n_params, "auto", cpu, ram(8 * GB)); });
    QVERIFY2(has(none, "as bfloat16") && has(none, "16.1 GB") && !has(none, "--dtype bf16"), none.c_str());
  }

  // Under `ulimit -v` the loader reads the budget with the checkpoint already mapped, so its pages count as
  // used: weights used in place from them need only the working memory on top. The 8B in bf16 with 6 GB
  // left after mapping its 16 GB fits in place; counting the weights twice refused it. Weights that must be
  // converted (float32) still need their own room.
  void mappedCheckpointCountsOnceUnderAnAddressSpaceLimit() {
    QTemporaryDir dir;
    const hs::ModelProbe p = hs::probeModel(hs::test::writeSparseRealShape(dir.path().toStdString()));
    const hs::DeviceMap cpu = hs::DeviceMap::all(c10::kCPU, 32);
    hs::MemoryBudget b = ram(6 * GB);
    b.ram_source = hs::kAddressSpaceLimit;
    const std::string twice = errorOf([&] { hs::planMemory("m", p.config, p.n_params, "auto", cpu, b); });
    QVERIFY2(has(twice, "not enough memory to load it as bfloat16"), twice.c_str());
    b.mapped_checkpoint = p.stored_bytes;
    const hs::MemoryPlan inPlace = hs::planMemory("m", p.config, p.n_params, "auto", cpu, b);
    QCOMPARE(inPlace.dtype, at::kBFloat16);
    QVERIFY(!inPlace.copy_weights);
    QCOMPARE(inPlace.devices.at(0).available, int64_t(6 * GB + p.stored_bytes));
    const std::string f32 = errorOf([&] { hs::planMemory("m", p.config, p.n_params, "f32", cpu, b); });
    QVERIFY2(has(f32, "not enough memory to load it as float32"), f32.c_str());
  }

  // With the last N layers on a GPU, the GPU holds those layers and the head, the CPU the rest.
  void gpuLayersSplitTheWeights() {
    QTemporaryDir dir;
    const hs::ModelProbe p = hs::probeModel(hs::test::writeSparseRealShape(dir.path().toStdString()));
    hs::DeviceMap m = hs::DeviceMap::all(c10::kCPU, 32);
    const c10::Device gpu(c10::kCUDA, 0);
    for (int l = 24; l < 32; ++l)
      m.layers[l] = gpu;
    m.head = gpu;
    QCOMPARE(m.describe(), std::string("cpu (embedding, layers 0-23) + cuda:0 (layers 24-31, head)"));
    hs::MemoryBudget b = ram(64 * GB);
    b.gpu_free = {int64_t(4 * GB)};
    const auto needs = hs::memoryNeeds(p.config, p.n_params, 2, m, b);
    QCOMPARE(needs.size(), size_t(2));
    uint64_t cpuW = 0, gpuW = 0;
    for (const auto& n : needs)
      (n.device.is_cpu() ? cpuW : gpuW) = n.weights;
    const uint64_t embed = 128256ull * 4096 * 2;
    QVERIFY(cpuW > gpuW);
    QVERIFY(cpuW + gpuW >= uint64_t(p.n_params) * 2 - 1000 && cpuW + gpuW <= uint64_t(p.n_params) * 2);
    QVERIFY(gpuW > embed);  // the untied head went with the GPU layers
    const std::string e = errorOf([&] { hs::planMemory("m", p.config, p.n_params, "bf16", m, b); });
    QVERIFY2(has(e, "cuda:0 needs") && has(e, "4.0 GB available") && has(e, "fewer --gpu-layers"), e.c_str());
  }

  // Device names and lists: errors name the bad part; CUDA on this build is refused in words.
  void deviceMapsParseAndRefuse() {
    QCOMPARE(hs::parseDeviceMap("cpu", -1, 4).describe(), std::string("cpu"));
    QVERIFY(hs::parseDeviceMap("cpu", -1, 4).single());
    QVERIFY(has(errorOf([] { hs::parseDeviceMap("tpu", -1, 4); }), "unknown device \"tpu\""));
    QVERIFY(has(errorOf([] { hs::parseDeviceMap("cpu", 2, 4); }), "--gpu-layers 2 needs one CUDA device"));
    QVERIFY(has(errorOf([] { hs::parseDeviceMap("cpu,", -1, 4); }), "empty entry"));
    if (!at::hasCUDA()) {  // a CPU libtorch says so; a CUDA one without a usable GPU gives the runtime's
                           // reason
      const std::string e = errorOf([] { hs::parseDeviceMap("cuda:0,cuda:1", -1, 4); });
      if (hs::cudaUnusableReason().empty())
        QVERIFY2(has(e, "this build of libtorch has no CUDA"), e.c_str());
      else
        QVERIFY2(has(e, "no GPU is usable: the CUDA runtime") && !has(e, "has no CUDA"), e.c_str());
    }
  }

  // A CUDA libtorch on a machine whose GPU is not usable (no device in the job, an old driver) says why in
  // the runtime's words instead of asking for a CUDA build; a device's free memory comes from the runtime.
  // The runtime is a stand-in (tests/load/fake_cuda_runtime.cpp) loaded the way libtorch loads libcudart.
  void cudaRuntimeWithoutUsableGpu() {
    if (at::hasCUDA()) QSKIP("this libtorch sees a GPU");
    if (!hs::cudaUnusableReason().empty()) {
      // A CUDA libtorch (the PyTorch 2.x wheel, make test-torch2) on this GPU-less machine: its own runtime
      // is loaded, so the stand-in cannot be; the real runtime's reason must reach the user instead.
      const std::string e = errorOf([] { hs::parseDeviceMap("cuda", -1, 4); });
      QVERIFY2(has(e, "device \"cuda\" requested, but no GPU is usable: the CUDA runtime says \"") &&
                   has(e, "(error ") && has(e, "--device cpu"),
               e.c_str());
      QCOMPARE(hs::cudaFreeBytes(0), int64_t(-1));
      return;
    }
    QCOMPARE(hs::cudaUnusableReason(), std::string());  // no runtime loaded: a CPU-only libtorch
    QCOMPARE(hs::cudaFreeBytes(0), int64_t(-1));
    void* lib = dlopen(FAKE_CUDA_RUNTIME, RTLD_NOW | RTLD_GLOBAL);
    QVERIFY2(lib, dlerror());
    const auto set = reinterpret_cast<void (*)(int, int, size_t)>(dlsym(lib, "fakeCudaSet"));
    QVERIFY(set);
    qputenv("CUDA_VISIBLE_DEVICES", "");
    set(100, 0, 0);
    std::string e = errorOf([] { hs::parseDeviceMap("cuda", -1, 4); });
    QVERIFY2(has(e,
                 "device \"cuda\" requested, but no GPU is usable: the CUDA runtime says \"no CUDA-capable "
                 "device is detected\" (error 100); CUDA_VISIBLE_DEVICES=\"\"") &&
                 has(e, "--device cpu") && !has(e, "no CUDA (a CPU-only libtorch"),
             e.c_str());
    qunsetenv("CUDA_VISIBLE_DEVICES");
    set(35, 0, 0);
    e = errorOf([] { hs::parseDeviceMap("cuda:0", 2, 4); });
    QVERIFY2(has(e, "CUDA driver version is insufficient") && !has(e, "CUDA_VISIBLE_DEVICES"), e.c_str());
    set(0, 0, 0);
    e = errorOf([] { hs::parseDeviceMap("cuda:0,cuda:1", -1, 4); });
    QVERIFY2(has(e, "the CUDA runtime sees no device"), e.c_str());
    set(0, 2, 7 * GB);  // devices the runtime counts: no reason; free memory per device, -1 for a bad index
    QCOMPARE(hs::cudaUnusableReason(), std::string());
    QCOMPARE(hs::cudaFreeBytes(1), int64_t(7 * GB));
    QCOMPARE(hs::cudaFreeBytes(2), int64_t(-1));
    dlclose(lib);
  }

  // Loading follows the plan and says what auto chose (the Model dock and `info` show the note).
  void loaderAppliesThePlan() {
    const std::string toy = hs::resolveModelPath("toy");
    const hs::LoadedModel m = hs::loadModel(toy);
    QCOMPARE(m.model->dtype(), at::kFloat);
    bool noted = false;
    for (const auto& n : m.notes)
      noted = noted || has(n, "dtype auto: float32");
    QVERIFY(noted);
  }
};

QTEST_GUILESS_MAIN(TestMemoryPlan)
#include "test_memory_plan.moc"
