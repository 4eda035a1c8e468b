#!/usr/bin/env bash
# Main job: install, build, and run tgc on an example model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
build/bin/tgc-opt examples/llama-layer.mlir --canonicalize --mlir-print-ir-after-all
