#!/usr/bin/env bash
# Configures and builds a preset (default: cpu). Usage: scripts/build.sh [cpu|cuda] [extra cmake --build args]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-cpu}
shift || true
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" "$@"
