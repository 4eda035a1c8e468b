#!/usr/bin/env bash
# Installs everything tgc needs on a fresh Debian 12 machine, from Debian's archive only.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail

PACKAGES=(
  # LLVM/MLIR 22: headers, libMLIR.so, tablegen, lit/FileCheck, clang as linker driver
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libomp-22-dev
  # formatting (scripts/format.sh)
  clang-format-22
  # build
  cmake ninja-build ccache g++ libgtest-dev
  # numerics oracle and benchmark peer (Debian's torch, OpenBLAS as its BLAS)
  python3 python3-torch python3-numpy libopenblas0
  # data parallelism (tgc --data-parallel; mpirun)
  openmpi-bin libopenmpi-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
