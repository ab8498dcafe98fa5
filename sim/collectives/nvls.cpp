#include "sim/collectives/nvls.hpp"

namespace zerosim::collectives {

std::vector<PhasePlan> nvls_plan(Bytes size, int n) {
  PhasePlan p;
  p.bytes_per_rank = size * (1.0 + 1.0 / static_cast<double>(n));
  p.peer_offset = 1;
  p.latency_steps = 1;
  p.scope = PeerScope::NODE;
  return {p};
}

} // namespace zerosim::collectives
