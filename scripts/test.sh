#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test (lit + GoogleTest) via ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
