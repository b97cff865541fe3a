#!/usr/bin/env bash
# Prepares .gpu-deps/ (git-ignored) on this Debian 12 machine for scripts/gpu_check.sh: the headers HeadScope's
# core + CLI need besides libtorch (Eigen, nlohmann_json, CLI11, PCRE2) and PCRE2's library, fetched with
# `apt-get download` (no install) and unpacked with `dpkg -x`. A GPU machine that has PyTorch with CUDA but
# none of these then builds HeadScope with the folder carried along (about 10 MB).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.gpu-deps
rm -rf "$out"
mkdir -p "$out/debs" "$out/root"
(cd "$out/debs" && apt-get download libeigen3-dev nlohmann-json3-dev libcli11-dev libpcre2-dev libpcre2-8-0)
for d in "$out"/debs/*.deb; do dpkg -x "$d" "$out/root"; done
rm -rf "$out/debs" "$out/root/usr/share/doc" "$out/root/usr/share/man"
ls "$out/root/usr/include" | tr '\n' ' '
echo
du -sh "$out"
