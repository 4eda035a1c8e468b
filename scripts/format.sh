#!/usr/bin/env bash
# Formats the C and C++ sources with clang-format-22 (.clang-format: LLVM
# style). --check lists the files that would change and fails if any would.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h' '*.c')
if [ "${1:-}" = "--check" ]; then
  clang-format-22 --dry-run --Werror "${files[@]}"
else
  clang-format-22 -i "${files[@]}"
fi
