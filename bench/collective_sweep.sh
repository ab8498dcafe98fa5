#!/usr/bin/env bash
# Collective sweep: one ring all-reduce of 1 GiB (ideal protocol) on N = 8 ... 16384 H100s (dgx-h100 nodes of 8 GPUs on
# a fat-tree) at each fidelity. Prints wall time and peak RSS of `zerosim collective` per point (RSS: the largest
# process, i.e. the forked simulation) and the simulated time.
# `chunk` runs unfolded (every rank an actor, a message per ring step) up to CHUNK_MAX ranks (default 1024); `flow`
# and `analytic` run with the default folding (auto: two / one representative nodes above two nodes) and, for flow,
# unfolded up to FLOW_UNFOLDED_MAX ranks (default 2048).
# Targets (issue 4, 2 cores): chunk 1024 ranks <= 30 s; flow 16384 ranks <= 2 s; analytic 16384 ranks <= 0.2 s.
# Usage: bench/collective_sweep.sh [NODES...]   (default: 1 2 4 ... 2048 nodes = 8 ... 16384 ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${ZEROSIM_BIN:-./build/apps/zerosim}
[ -n "${ZEROSIM_BIN:-}" ] || ./scripts/build.sh --target zerosim >/dev/null
chunk_max=${CHUNK_MAX:-1024}
flow_unfolded_max=${FLOW_UNFOLDED_MAX:-2048}
nodes=("$@"); [ ${#nodes[@]} -eq 0 ] && nodes=(1 2 4 8 16 32 64 128 256 512 1024 2048)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-6s %-9s %-5s %10s %13s %12s\n' ranks fidelity fold wall_s peak_RSS_MiB sim_time_ms
for n in "${nodes[@]}"; do
  ranks=$((n * 8))
  points=(analytic:auto flow:auto)
  [ "$n" -gt 2 ] && [ "$ranks" -le "$flow_unfolded_max" ] && points+=(flow:off)
  [ "$ranks" -le "$chunk_max" ] && points+=(chunk:off)
  for point in "${points[@]}"; do
    fid=${point%%:*} fold=${point##*:}
    log="$out/time-$n-$fid-$fold.txt"
    /usr/bin/time -v "$bin" collective --topology dgx-h100 --nodes "$n" --op all_reduce --sizes 1GiB \
      --algorithm ring --protocol none --fidelity "$fid" --fold "$fold" >"$out/out.txt" 2>"$log" \
      || { cat "$log" "$out/out.txt" >&2; exit 1; }
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
    sim=$(awk '!/^#/ && NF >= 6 && $1 ~ /^[0-9]+$/ {printf "%.3f", $4 / 1000}' "$out/out.txt")
    printf '%-6s %-9s %-5s %10s %13s %12s\n' "$ranks" "$fid" "$fold" "$wall" "$rss" "$sim"
  done
done
