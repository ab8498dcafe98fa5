#!/usr/bin/env bash
# Runs the simulator benchmarks (bench/). Figures go to stdout; see bench/README.md for the targets.
set -euo pipefail
cd "$(dirname "$0")/.."
bench/zero3_scaling.sh "$@"
bench/zero3_unfolded.sh
exec bench/collective_sweep.sh
