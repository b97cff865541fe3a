#!/usr/bin/env bash
# Every source of the torch-using core libraries compiles on its own, without core/pch.h. CMake gives those
# libraries the precompiled header, so a source that uses ATen without including it builds here, but
# scripts/gpu_check.sh (which compiles straight with g++, without the header) fails on it, on borrowed GPU
# time. Syntax only, JOBS at a time (default: the CPU count); lists every file that fails, exits 1 if any.
#
#   scripts/check_sources_alone.sh [FILE.cpp...]     default: core/{model,analysis,session,batch,train}
# Against Debian's libtorch (C++17) by default; with TORCH_PYTHON=.venv-reference/bin/python against that
# Python's PyTorch 2.x headers (C++20), as gpu_check.sh compiles them there.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
TORCH_FLAGS="-std=c++17 -isystem /usr/include/torch/csrc/api/include"
if [ -n "${TORCH_PYTHON:-}" ]; then
  TORCH_FLAGS="-std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 $("$TORCH_PYTHON" -c \
    'import torch.utils.cpp_extension as c; print(" ".join("-isystem " + p for p in c.include_paths()))')" || exit 2
fi
export TORCH_FLAGS
files=("$@")
[ ${#files[@]} -eq 0 ] && mapfile -t files < <(find core/model core/analysis core/session core/batch core/train \
  -name '*.cpp' | sort)
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
export log
printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c '
  ${CXX:-g++} $TORCH_FLAGS -fsyntax-only -DQT_NO_KEYWORDS -Icore -isystem /usr/include/eigen3 \
    -DHEADSCOPE_RESOURCE_DIR="\"\"" \
    -DHEADSCOPE_VERSION="\"\"" -DHEADSCOPE_SOURCE_DIR="\"\"" {} > "$log/$(echo {} | tr / _).log" 2>&1 ||
    { echo "does not compile on its own: {}"; sed -n "/error/{p;q}" "$log/$(echo {} | tr / _).log"; }' |
  tee "$log/failures"
if [ -s "$log/failures" ]; then exit 1; fi
echo "${#files[@]} sources compile without the precompiled header"
