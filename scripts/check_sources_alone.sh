#!/usr/bin/env bash
# Every source of the torch-using core libraries compiles on its own, without core/pch.h. CMake gives those
# libraries the precompiled header, so a source that uses ATen without including it builds here, but
# scripts/gpu_check.sh (which compiles straight with g++, without the header) fails on it, on borrowed GPU
# time. Syntax only, JOBS at a time (default: the CPU count); lists every file that fails, exits 1 if any.
#
#   scripts/check_sources_alone.sh [FILE.cpp...]     default: core/{model,analysis,session,batch,train}
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${JOBS:-$(nproc)}
files=("$@")
[ ${#files[@]} -eq 0 ] && mapfile -t files < <(find core/model core/analysis core/session core/batch core/train \
  -name '*.cpp' | sort)
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
export log
printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -I{} sh -c '
  ${CXX:-g++} -std=c++17 -fsyntax-only -DQT_NO_KEYWORDS -Icore -isystem /usr/include/eigen3 \
    -isystem /usr/include/torch/csrc/api/include -DHEADSCOPE_RESOURCE_DIR="\"\"" \
    -DHEADSCOPE_VERSION="\"\"" -DHEADSCOPE_SOURCE_DIR="\"\"" {} > "$log/$(echo {} | tr / _).log" 2>&1 ||
    { echo "does not compile on its own: {}"; sed -n "/error/{p;q}" "$log/$(echo {} | tr / _).log"; }' |
  tee "$log/failures"
if [ -s "$log/failures" ]; then exit 1; fi
echo "${#files[@]} sources compile without the precompiled header"
