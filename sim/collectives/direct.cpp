#include "sim/collectives/direct.hpp"

namespace zerosim::collectives {

std::vector<PhasePlan> direct_plan(program::CollectiveKind kind, Bytes size, int n) {
  // One exchange: each rank sends one S/n block to each of the n-1 others (reduce-scatter: the block the peer owns;
  // all-gather: the rank's own block), all concurrently.
  PhasePlan p;
  p.bytes_per_rank = size * (static_cast<double>(n - 1) / static_cast<double>(n));
  p.peer_offset = 1;
  p.fan_out = n - 1;
  p.latency_steps = 1;
  p.scope = PeerScope::NODE;
  if (kind == program::CollectiveKind::ALL_REDUCE)
    return {p, p}; // reduce-scatter, then all-gather of the reduced blocks
  return {p};
}

} // namespace zerosim::collectives
