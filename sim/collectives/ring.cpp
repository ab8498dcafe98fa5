#include "sim/collectives/ring.hpp"

namespace zerosim::collectives {

int ring_steps(program::CollectiveKind kind, int n) {
  switch (kind) {
  case program::CollectiveKind::ALL_REDUCE:
    return 2 * (n - 1);
  case program::CollectiveKind::REDUCE_SCATTER:
  case program::CollectiveKind::ALL_GATHER:
  case program::CollectiveKind::REDUCE:
    return n - 1;
  }
  return 0;
}

double ring_wire_fraction(program::CollectiveKind kind, int n) {
  // A reduce is a chain of n - 1 links towards the root, pipelined in chunks: each link carries the whole buffer
  // (NCCL's Reduce runs ring only; nccl-tests doc/PERFORMANCE.md: its bus bandwidth equals its algorithm bandwidth).
  if (kind == program::CollectiveKind::REDUCE)
    return n > 1 ? 1.0 : 0.0;
  // Each step moves one chunk of S/n bytes to the successor (Patarasuk & Yuan 2009 §3).
  return static_cast<double>(ring_steps(kind, n)) / static_cast<double>(n);
}

std::vector<PhasePlan> ring_plan(program::CollectiveKind kind, Bytes size, int n) {
  PhasePlan p;
  p.bytes_per_rank = size * ring_wire_fraction(kind, n);
  p.peer_offset = 1;
  p.latency_steps = ring_steps(kind, n);
  // A reduce's chain starts its last link n - 2 chunks after its first (collective_plan.hpp pipeline_fill_chunks).
  if (kind == program::CollectiveKind::REDUCE && n > 2)
    p.pipeline_fill_chunks = n - 2;
  return {p};
}

std::vector<PhasePlan> ring_plan(program::CollectiveKind kind, Bytes size, int n, int gpus_per_node) {
  std::vector<PhasePlan> phases = ring_plan(kind, size, n);
  // A node-major ring crosses the network once per node boundary per pass.
  const int nodes = n / gpus_per_node;
  phases[0].inter_node_steps = nodes > 1 ? ring_steps(kind, nodes) : 0;
  return phases;
}

} // namespace zerosim::collectives
