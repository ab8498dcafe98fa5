#!/usr/bin/env bash
# The main job: install what is missing, build, and simulate the default scenario
# (GPT-2 XL on one RTX 4090, ZeRO stages 0-3 side by side). Extra arguments go to `zerosim run`
# (e.g. --set training.micro_batch=2 --out out/mine).
set -euo pipefail
cd "$(dirname "$0")/.."
# One line on stderr before the install and build, which print nothing here and can take minutes on a fresh machine
# (stdout stays the report).
if [ -x build/apps/zerosim ]; then
  echo "run-main: checking the zerosim build..." >&2
else
  echo "run-main: building zerosim (first build: missing packages, then a few minutes)..." >&2
fi
"./scripts/build.sh" --target zerosim >/dev/null
exec ./build/apps/zerosim run scenarios/examples/single-gpu-zero-stages.yaml "$@"
