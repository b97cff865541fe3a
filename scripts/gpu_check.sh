#!/usr/bin/env bash
# One prepared run on a machine with an NVIDIA GPU, PyTorch with CUDA and Hugging Face transformers (nothing is
# downloaded: the models are random-initialised from configs). At most 10 minutes. docs/gpu.md says how to run
# it; prepare .gpu-deps/ first with scripts/gpu_deps.sh on a Debian machine and carry it along.
#  1. builds HeadScope's core + CLI and the probe scripts/gpu_check/hs_gpu_probe.cpp against the PyTorch
#     wheel's libtorch, straight with the compiler (no CMake, so no CUDA toolkit is needed: HeadScope's
#     device code uses only ATen/c10 APIs);
#  2. compares HeadScope's logits with transformers' on the GPU for every supported family (float32 within
#     1e-4; bfloat16 within 5e-2 of the logit scale, see gpu_check.py),
#     and the fast patching sweep's grid with transformers' naive loop (float32, within 1 % of the largest effect);
#  3. checks a device-map split (--gpu-layers, and cuda:0,cuda:1 when there are two GPUs) against one device;
#  4. times the forward (128 tokens) and the fast patching sweep at the Llama-3.2-1B shape against
#     transformers (its forward, and the naive per-head loop with forward hooks).
# Writes $OUT/gpu_check.json (OUT defaults to ./gpu-check-out) and prints it. DRY_RUN=1 runs it all on a CPU
# (a check of this script, not of CUDA), against the real transformers when $PYTHON has it (e.g.
# PYTHON=.venv-reference/bin/python), else against tests/gpu_check's stand-in.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu-check-out}
PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc)}
DEPS=$PWD/.gpu-deps/root
BUILD=$OUT/build
mkdir -p "$OUT" "$BUILD/obj"
[ -d "$DEPS/usr/include/eigen3" ] || { echo "gpu_check: $DEPS missing: run scripts/gpu_deps.sh on a Debian machine and carry .gpu-deps" >&2; exit 2; }
command -v "${CXX:-g++}" >/dev/null || { echo "gpu_check: no C++ compiler (${CXX:-g++})" >&2; exit 2; }

eval "$("$PY" - <<'PYEOF'
import torch, torch.utils.cpp_extension as c
print("TORCH_INC='%s'" % " ".join("-isystem " + p for p in c.include_paths()))
print("TORCH_LIB='%s'" % c.library_paths()[0])
print("ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("TORCH_CUDA=%d" % int(torch.cuda.is_available()))
print("CXX_STD=%s" % ("c++20" if int(torch.__version__.split(".")[0]) >= 2 else "c++17"))  # 2.x headers need 20
PYEOF
)"
echo "gpu_check: torch $("$PY" -c 'import torch; print(torch.__version__, torch.version.cuda)'), CUDA usable: $TORCH_CUDA, ABI $ABI"

# ---- 1. build -------------------------------------------------------------------------------------------
# The flags go in a response file: the string macros keep their quotes however many shells pass them on.
RSP=$BUILD/cxxflags.rsp
{
  echo "-std=$CXX_STD -O2 -fPIC -D_GLIBCXX_USE_CXX11_ABI=$ABI -DQT_NO_KEYWORDS -Icore -Iapp/cli"
  echo "-isystem $DEPS/usr/include -isystem $DEPS/usr/include/eigen3 $TORCH_INC"
  printf -- '-DHEADSCOPE_RESOURCE_DIR=\\"%s\\" -DHEADSCOPE_VERSION=\\"gpu-check\\" -DHEADSCOPE_SOURCE_DIR=\\"%s\\"\n' \
    "$PWD/resources" "$PWD"
} > "$RSP"
compile() {
  local o
  o="$BUILD/obj/$(echo "$1" | tr / _).o"
  [ "$o" -nt "$1" ] || "${CXX:-g++}" @"$RSP" -c "$1" -o "$o"
}
export -f compile
export BUILD RSP CXX
core_src=$(find core -name '*.cpp' | sort)
cli_src=$(ls app/cli/*.cpp)
t0=$(date +%s)
printf '%s\n' $core_src $cli_src scripts/gpu_check/hs_gpu_probe.cpp |
  xargs -P "$JOBS" -I{} bash -c 'compile "$1" || exit 255' _ {}
objs() { for f in "$@"; do echo "$BUILD/obj/$(echo "$f" | tr / _).o"; done; }
CUDA_LIBS=""
[ -e "$TORCH_LIB/libtorch_cuda.so" ] && CUDA_LIBS="-Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed"
LDFLAGS="-L$TORCH_LIB -Wl,-rpath,$TORCH_LIB $CUDA_LIBS -ltorch -ltorch_cpu -lc10 \
  -L$DEPS/usr/lib/x86_64-linux-gnu -Wl,-rpath,$DEPS/usr/lib/x86_64-linux-gnu -l:libpcre2-8.so.0 -lpthread -ldl"
${CXX:-g++} $(objs $core_src $cli_src) -o "$BUILD/headscope-cli" $LDFLAGS
${CXX:-g++} $(objs $core_src scripts/gpu_check/hs_gpu_probe.cpp) -o "$BUILD/hs_gpu_probe" $LDFLAGS
echo "gpu_check: built in $(( $(date +%s) - t0 )) s"
"$BUILD/headscope-cli" info toy --device cuda >/dev/null 2>"$OUT/info_cuda.err" || true

# ---- 2-4. comparisons and timings -------------------------------------------------------------------------
if [ -n "${DRY_RUN:-}" ]; then  # the whole script on a CPU; the tests' stand-in only where transformers is absent
  STANDIN=""
  "$PY" -c 'import transformers' 2>/dev/null || STANDIN=$PWD/tests/gpu_check/transformers_standin
  echo "gpu_check: dry run against ${STANDIN:+the stand-in for }transformers"
  PYTHONPATH=$STANDIN PYTHONDONTWRITEBYTECODE=1 \
    "$PY" scripts/gpu_check/gpu_check.py --probe "$BUILD/hs_gpu_probe" --cli "$BUILD/headscope-cli" --out "$OUT" \
    --device cpu --timing-model "$OUT/models/llama"
else
  "$PY" scripts/gpu_check/gpu_check.py --probe "$BUILD/hs_gpu_probe" --cli "$BUILD/headscope-cli" --out "$OUT"
fi
