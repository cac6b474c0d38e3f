#!/usr/bin/env bash
# Installs every Debian package titan needs. Idempotent: when everything is
# already installed it only runs dpkg-query and returns in well under a second.
set -euo pipefail

PACKAGES=(
  # Build tools; lld links titan's binaries and titan-compile's per-rank
  # executables ~8x faster than GNU ld.
  cmake ninja-build g++ pkg-config lld
  # MLIR/LLVM 22.1: the compiler infrastructure titan is built on.
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools
  # LibTorch 1.13 (TorchScript import) and the PyTorch numerics oracle.
  libtorch-dev python3-torch python3-numpy
  # CPU runtime: BLAS and collectives.
  libopenblas-dev libgloo-dev
  # Config files, tests, integer programming.
  libtomlplusplus-dev libgtest-dev libgmock-dev coinor-libcbc-dev libglpk-dev
  # Checkpoints: fast CRC-32 of the zip entries DCP stores chunks in.
  libdeflate-dev
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
