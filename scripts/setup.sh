#!/usr/bin/env bash
# Installs everything HeadScope needs on Debian 12 (as root, or through sudo), skipping what is there.
# libopenblas0-pthread matters: without it libtorch falls back to reference BLAS (~17x slower matmuls).
# libopenblas0-openmp is the OpenBLAS our programs load: it shares libtorch's OpenMP thread pool
# (CMakeLists.txt; the system's BLAS choice is left as it is).
#   ./scripts/setup.sh --with-slurm   also Slurm and munge, for the batch test on a real single-node Slurm
#                                     (test_batch_slurm; it skips where they are missing)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev libopenblas0-pthread libopenblas0-openmp
  libdnnl-dev            # oneDNN: float32 logits of bf16 models in one GEMM (CMakeLists.txt)
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libeigen3-dev nlohmann-json3-dev libpcre2-dev libcli11-dev
  python3-torch          # /usr/bin/python3 + PyTorch 1.13: independent reference forwards in tests and bench
  python3-numpy          # docs/python.md's session reader, run by test_python_snippet
  xvfb xauth             # GUI tests and screenshots without a display
  desktop-file-utils appstream   # packaging/check_deb.sh validates the shipped .desktop and metainfo files
)
if [ "${1:-}" = "--with-slurm" ]; then
  packages+=(slurmctld slurmd slurm-client munge)
elif [ -n "${1:-}" ]; then
  echo "setup: unknown option $1 (only --with-slurm)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
