#!/usr/bin/env bash
# Configures and builds zerosim (Release) in ./build. Extra arguments go to `cmake --build`.
set -euo pipefail
cd "$(dirname "$0")/.."
"./scripts/install-deps.sh"
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$jobs" "$@"
