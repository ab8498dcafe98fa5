#!/usr/bin/env bash
# Simulator speed at scale without rank folding: llama-2-70b ZeRO-3 from a user's DeepSpeed config (micro-batch 2,
# grad_accum 4: ~4000 all-gathers and reduce-scatters per step on every rank), one step, `flow` fidelity, every rank
# its own actors (simulation.fold off: what an oversubscribed or non-symmetric fabric, which is never folded, costs).
# Prints wall time, user CPU time and peak RSS of `zerosim run` per point (RSS: the forked simulation).
# Usage: bench/zero3_unfolded.sh [NODES...]   (default: 16, i.e. 128 GPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/build.sh --target zerosim >/dev/null
bin=./build/apps/zerosim
nodes=("$@"); [ ${#nodes[@]} -eq 0 ] && nodes=(16)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-6s %-9s %-5s %12s %12s %12s %14s\n' GPUs fidelity fold wall_s user_s peak_RSS_MiB sim_step_s
for n in "${nodes[@]}"; do
  log="$out/time-$n.txt"
  /usr/bin/time -v "$bin" run bench/scenarios/llama2-70b-zero3.yaml --quiet --out "$out/run-$n" \
    --set cluster.nodes="$n" 2>"$log" >/dev/null || { cat "$log" >&2; exit 1; }
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$log" | awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }')
  user=$(awk -F': ' '/User time \(seconds\)/ {print $2}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2/1024}' "$log")
  step=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('%.4f' % d['summary']['step_time_s'])" \
    "$out/run-$n/result.json" 2>/dev/null || echo '?')
  printf '%-6s %-9s %-5s %12s %12s %12s %14s\n' "$((n * 8))" flow off "$wall" "$user" "$rss" "$step"
done
