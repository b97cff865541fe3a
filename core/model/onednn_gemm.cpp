#include "model/onednn_gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>

#include <cstdlib>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/huge_page_tensor.h"
#include "util/error.h"

#ifdef HEADSCOPE_ONEDNN
#include <dnnl.hpp>
#endif

namespace hs {

#ifdef HEADSCOPE_ONEDNN

namespace {

bool wantsAtenGemm() {
  const char* v = std::getenv("HEADSCOPE_GEMM");
  return v && std::string(v) == "aten";
}

// The checks a oneDNN product makes of its operands: x [rows, in] and w [out, in] of `dtype` on the CPU,
// w's rows contiguous, b [out] float32 or undefined.
void expectOperands(const char* who, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                    at::ScalarType dtype) {
  if (x.dim() != 2 || w.dim() != 2 || x.size(1) != w.size(1) || x.scalar_type() != dtype ||
      w.scalar_type() != dtype || !x.device().is_cpu() || !w.device().is_cpu() || w.stride(1) != 1)
    fail(who, ": expected ", dtype, " CPU x [rows, in] and w [out, in] with contiguous rows, got ", x.sizes(),
         " ", x.scalar_type(), " and ", w.sizes(), " ", w.scalar_type());
  if (b.defined() &&
      (b.dim() != 1 || b.size(0) != w.size(0) || b.scalar_type() != at::kFloat || !b.device().is_cpu()))
    fail(who, ": expected a float32 CPU bias [", w.size(0), "], got ", b.sizes(), " ", b.scalar_type());
}

dnnl::engine& cpuEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);  // engines and primitives are thread-safe
  return e;
}

dnnl::stream& cpuStream() {
  thread_local dnnl::stream s(cpuEngine());  // streams are not: one per calling thread
  return s;
}

// x [rows, in] · wᵀ (+ b) with x and w of `type`, into a new float32 [rows, out].
at::Tensor matmulToFloat(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                         dnnl::memory::data_type type) {
  using dnnl::memory;
  const at::Tensor xc = x.contiguous();  // [rows, in]
  const int64_t rows = xc.size(0), in = xc.size(1), out = w.size(0);
  at::Tensor y = emptyOnHugePages({rows, out}, at::kFloat);  // [rows, out]
  if (rows == 0 || out == 0) return y;
  // oneDNN's OpenMP runtime uses the calling thread's OpenMP thread count: set it to ATen's once per thread,
  // as ATen's own parallel ops do (at::init_num_threads on every call would also rebuild ATen's pthreadpool,
  // whose new threads spin: that made a GPT-2-sized forward 5× slower).
  at::internal::lazy_init_num_threads();
  dnnl::engine& engine = cpuEngine();
  dnnl::stream& stream = cpuStream();
  const memory::desc src({rows, in}, type, memory::dims{in, 1});
  const memory::desc wei({in, out}, type, memory::dims{1, w.stride(0)});  // wᵀ, a view
  const memory::desc dst({rows, out}, memory::data_type::f32, memory::dims{out, 1});
  const at::Tensor bc = b.defined() ? b.contiguous() : at::Tensor();  // [out]
  const memory::desc bias =
      bc.defined() ? memory::desc({1, out}, memory::data_type::f32, memory::dims{out, 1}) : memory::desc();
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), engine);  // cached by oneDNN
  const dnnl::matmul mm(pd);
  memory ms(src, engine, xc.data_ptr()), mw(wei, engine, w.data_ptr()), md(dst, engine, y.data_ptr());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}};
  if (bc.defined()) args.emplace(DNNL_ARG_BIAS, memory(bias, engine, bc.data_ptr()));
  mm.execute(stream, args);
  stream.wait();
  return y;
}

// a [..., m, k] · b [..., k, n], float32 with equal batch dims, into a new contiguous [..., m, n]; each
// operand is read through its strides where oneDNN can (one of its last two dims dense), else copied.
at::Tensor batchedMatmulFloat(const at::Tensor& a, const at::Tensor& b) {
  using dnnl::memory;
  auto readable = [](const at::Tensor& t) {
    for (int64_t d = 0; d < t.dim(); ++d)
      if (t.stride(d) == 0 && t.size(d) > 1) return t.contiguous();  // expanded: oneDNN takes no zero stride
    return t.stride(-1) == 1 || t.stride(-2) == 1 ? t : t.contiguous();
  };
  const at::Tensor ar = readable(a), br = readable(b);
  std::vector<int64_t> shape = ar.sizes().vec();
  shape.back() = br.size(-1);
  at::Tensor y = at::empty(shape, ar.options());  // [..., m, n]
  if (y.numel() == 0) return y;
  if (ar.size(-1) == 0) return y.zero_();
  at::internal::lazy_init_num_threads();
  dnnl::engine& engine = cpuEngine();
  dnnl::stream& stream = cpuStream();
  auto desc = [](const at::Tensor& t) {
    return memory::desc(memory::dims(t.sizes().begin(), t.sizes().end()), memory::data_type::f32,
                        memory::dims(t.strides().begin(), t.strides().end()));
  };
  const memory::desc src = desc(ar), wei = desc(br), dst = desc(y);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);  // cached by oneDNN
  const dnnl::matmul mm(pd);
  memory ms(src, engine, ar.data_ptr()), mw(wei, engine, br.data_ptr()), md(dst, engine, y.data_ptr());
  mm.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}});
  stream.wait();
  return y;
}

// Whether oneDNN computes `type` products on this CPU, checked once against ATen's on a small case.
bool runsHere(at::ScalarType dtype) {
  try {
    const at::Tensor x = at::rand({3, 5}).to(dtype);  // [rows, in]
    const at::Tensor w = at::rand({4, 5}).to(dtype);  // [out, in]
    const at::Tensor b = at::rand({4});               // [out]
    const at::Tensor y = dtype == at::kFloat ? onednnLinearFloat(x, w, b) : onednnLinearBf16ToFloat(x, w);
    const at::Tensor ref = at::mm(x.to(at::kFloat), w.to(at::kFloat).t());  // [rows, out]
    return at::allclose(y, dtype == at::kFloat ? ref + b : ref, 1e-5, 1e-5);
  } catch (const std::exception&) {
    return false;  // no such matmul on this CPU: the caller falls back
  }
}

const char* isaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "sse41";
    case dnnl::cpu_isa::avx:
      return "avx";
    case dnnl::cpu_isa::avx2:
      return "avx2";
    case dnnl::cpu_isa::avx2_vnni:
      return "avx2_vnni";
    case dnnl::cpu_isa::avx512_core:
      return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

}  // namespace

bool onednnBf16GemmAvailable() {
  static const bool ok = runsHere(at::kBFloat16);
  return ok;
}

bool onednnFloatGemmAvailable() {
  static const bool ok = !wantsAtenGemm() && runsHere(at::kFloat);
  return ok;
}

at::Tensor onednnLinearBf16ToFloat(const at::Tensor& x, const at::Tensor& w) {
  expectOperands("onednnLinearBf16ToFloat", x, w, at::Tensor(), at::kBFloat16);
  return matmulToFloat(x, w, at::Tensor(), dnnl::memory::data_type::bf16);
}

at::Tensor onednnLinearFloat(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  expectOperands("onednnLinearFloat", x, w, b, at::kFloat);
  return matmulToFloat(x, w, b, dnnl::memory::data_type::f32);
}

std::string float32GemmBackend() {
  if (!onednnFloatGemmAvailable()) return "ATen (BLAS)";
  const dnnl::version_t* v = dnnl::version();
  return cat("oneDNN ", v->major, ".", v->minor, ".", v->patch, " (", isaName(dnnl::get_effective_cpu_isa()),
             ")");
}

#else

bool onednnBf16GemmAvailable() {
  return false;
}

bool onednnFloatGemmAvailable() {
  return false;
}

at::Tensor onednnLinearBf16ToFloat(const at::Tensor&, const at::Tensor&) {
  fail("onednnLinearBf16ToFloat: this build has no oneDNN (configure with libdnnl-dev installed)");
}

at::Tensor onednnLinearFloat(const at::Tensor&, const at::Tensor&, const at::Tensor&) {
  fail("onednnLinearFloat: this build has no oneDNN (configure with libdnnl-dev installed)");
}

std::string float32GemmBackend() {
  return "ATen (BLAS)";
}

#endif

at::Tensor affine(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const bool grad = at::GradMode::is_enabled() &&
                    (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad()));
  const bool onednn = !grad && x.scalar_type() == at::kFloat && w.scalar_type() == at::kFloat &&
                      (!b.defined() || b.scalar_type() == at::kFloat) && w.device().is_cpu() &&
                      x.device().is_cpu() && w.dim() == 2 && w.stride(1) == 1 && onednnFloatGemmAvailable();
  if (!onednn) return at::linear(x, w, b);
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = w.size(0);
  return onednnLinearFloat(x.reshape({-1, x.size(-1)}), w, b).view(shape);  // [..., out]
}

at::Tensor batchedMatmul(const at::Tensor& a, const at::Tensor& b) {
#ifdef HEADSCOPE_ONEDNN
  // Below this many multiply-adds per batch entry (m·k·n) ATen's own loop is faster than a oneDNN call: a
  // patching sweep's variants score one query against their one fresh key, in batches of rows × heads.
  constexpr int64_t kTinyProduct = 400;
  const bool grad = at::GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
  const bool onednn = !grad && a.dim() >= 3 && a.dim() == b.dim() && a.scalar_type() == at::kFloat &&
                      b.scalar_type() == at::kFloat && a.device().is_cpu() && b.device().is_cpu() &&
                      a.sizes().slice(0, a.dim() - 2) == b.sizes().slice(0, b.dim() - 2) &&
                      a.size(-1) == b.size(-2) && a.size(-2) * a.size(-1) * b.size(-1) >= kTinyProduct &&
                      onednnFloatGemmAvailable();
  if (onednn) {
    try {
      return batchedMatmulFloat(a, b);
    } catch (const dnnl::error&) {
      // a layout this oneDNN has no kernel for: ATen computes it
    }
  }
#endif
  return at::matmul(a, b);
}

}  // namespace hs
