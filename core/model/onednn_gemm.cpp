#include "model/onednn_gemm.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "model/huge_page_tensor.h"
#include "util/error.h"

#ifdef HEADSCOPE_ONEDNN
#include <dnnl.hpp>
#endif

namespace hs {

#ifdef HEADSCOPE_ONEDNN

namespace {

dnnl::engine& cpuEngine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);  // engines and primitives are thread-safe
  return e;
}

dnnl::stream& cpuStream() {
  thread_local dnnl::stream s(cpuEngine());  // streams are not: one per calling thread
  return s;
}

}  // namespace

bool onednnBf16GemmAvailable() {
  static const bool ok = [] {
    try {
      const at::Tensor x = at::rand({3, 5}).to(at::kBFloat16);  // [rows, in]
      const at::Tensor w = at::rand({4, 5}).to(at::kBFloat16);  // [out, in]
      const at::Tensor y = onednnLinearBf16ToFloat(x, w);       // [rows, out]
      return at::allclose(y, at::mm(x.to(at::kFloat), w.to(at::kFloat).t()), 1e-5, 1e-5);
    } catch (const std::exception&) {
      return false;  // no bf16 matmul on this CPU: the caller falls back
    }
  }();
  return ok;
}

at::Tensor onednnLinearBf16ToFloat(const at::Tensor& x, const at::Tensor& w) {
  using dnnl::memory;
  if (x.dim() != 2 || w.dim() != 2 || x.size(1) != w.size(1) || x.scalar_type() != at::kBFloat16 ||
      w.scalar_type() != at::kBFloat16 || !x.device().is_cpu() || !w.device().is_cpu() || w.stride(1) != 1)
    fail("onednnLinearBf16ToFloat: expected bf16 CPU x [rows, in] and w [out, in] with contiguous rows, got ",
         x.sizes(), " ", x.scalar_type(), " and ", w.sizes(), " ", w.scalar_type());
  const at::Tensor xc = x.contiguous();  // [rows, in]
  const int64_t rows = xc.size(0), in = xc.size(1), out = w.size(0);
  at::Tensor y = emptyOnHugePages({rows, out}, at::kFloat);  // [rows, out]
  if (rows == 0 || out == 0) return y;
  // oneDNN's OpenMP runtime uses the calling thread's OpenMP thread count: the one ATen set.
  at::init_num_threads();
  dnnl::engine& engine = cpuEngine();
  dnnl::stream& stream = cpuStream();
  const memory::desc src({rows, in}, memory::data_type::bf16, memory::dims{in, 1});
  const memory::desc wei({in, out}, memory::data_type::bf16, memory::dims{1, w.stride(0)});  // wᵀ, a view
  const memory::desc dst({rows, out}, memory::data_type::f32, memory::dims{out, 1});
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, dst), engine);  // oneDNN caches these
  const dnnl::matmul mm(pd);
  memory ms(src, engine, xc.data_ptr()), mw(wei, engine, w.data_ptr()), md(dst, engine, y.data_ptr());
  mm.execute(stream, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}});
  stream.wait();
  return y;
}

#else

bool onednnBf16GemmAvailable() {
  return false;
}

at::Tensor onednnLinearBf16ToFloat(const at::Tensor&, const at::Tensor&) {
  fail("onednnLinearBf16ToFloat: this build has no oneDNN (configure with libdnnl-dev installed)");
}

#endif

}  // namespace hs
