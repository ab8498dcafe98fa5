#!/usr/bin/env bash
# Regenerates the generated part of docs/scenario-reference.md (the key table) from the key table in the code.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --target zerosim >/dev/null
doc=docs/scenario-reference.md
head=$(awk '/^\| key \| type/ {exit} {print}' "$doc")
{ printf '%s\n' "$head"; ./build/apps/zerosim list --keys; } > "$doc.tmp" && mv "$doc.tmp" "$doc"
