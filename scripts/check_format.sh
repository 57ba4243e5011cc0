#!/usr/bin/env bash
# Fails when a C++/CUDA file differs from .clang-format (STYLE.md: "clang-format is checked in CI").
# Fix with: clang-format -i $(git ls-files 'src/*.cc' 'src/*.h' 'src/*.cu' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'fuzz/*.cc')
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z 'src/*.cc' 'src/*.h' 'src/*.cu' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' 'fuzz/*.cc' |
  xargs -0 clang-format --dry-run --Werror
