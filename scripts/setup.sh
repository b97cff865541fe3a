#!/usr/bin/env bash
# Installs everything HeadScope needs on Debian 12 (as root, or through sudo), skipping what is there.
# libopenblas0-pthread matters: without it libtorch falls back to reference BLAS (~17x slower matmuls).
# libopenblas0-openmp is the OpenBLAS our programs load: it shares libtorch's OpenMP thread pool
# (CMakeLists.txt; the system's BLAS choice is left as it is).
#   ./scripts/setup.sh --with-slurm      also Slurm and munge, for the batch test on a real single-node Slurm
#                                        (test_batch_slurm; it skips where they are missing)
#   ./scripts/setup.sh --with-reference  also the reference environment: a virtual environment .venv-reference/
#                                        with the pinned PyTorch 2.x, transformers, tokenizers, safetensors and
#                                        TransformerLens of scripts/reference-requirements.txt (several GB from
#                                        the Python package index), for the reference suite (tests/reference)
#                                        and the peer benchmarks; without it those tests skip, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

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
with_reference=0
for option in "$@"; do
  case "$option" in
    --with-slurm) packages+=(slurmctld slurmd slurm-client munge) ;;
    --with-reference) with_reference=1; packages+=(python3-venv) ;;
    *) echo "setup: unknown option $option (--with-slurm, --with-reference)" >&2; exit 2 ;;
  esac
done

# The reference environment, made with Debian's Python; reused when its pins have not changed.
reference_env() {
  local venv=.venv-reference req=scripts/reference-requirements.txt
  if [ -x "$venv/bin/python" ] && cmp -s "$req" "$venv/requirements.txt"; then
    echo "setup: reference environment $venv up to date"
    return
  fi
  echo "setup: making the reference environment $venv from $req"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$req"
  cp "$req" "$venv/requirements.txt"
  "$venv/bin/python" - <<'PYEOF'
from importlib.metadata import version
print("setup: reference environment:", ", ".join(
    f"{p} {version(p)}" for p in ("torch", "transformers", "tokenizers", "safetensors", "transformer-lens")))
PYEOF
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  [ "$with_reference" = 1 ] && reference_env
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
[ "$with_reference" = 1 ] && reference_env
exit 0
