#include "sim/collectives/tree.hpp"

#include <algorithm>
#include <cmath>

namespace zerosim::collectives {

namespace {
int ceil_log2(int x) {
  int k = 0;
  while ((1 << k) < x)
    ++k;
  return k;
}
} // namespace

std::vector<PhasePlan> tree_plan(Bytes size, int n, int gpus_per_node) {
  const int nodes = n / gpus_per_node;
  const int inter = ceil_log2(nodes);
  PhasePlan up;
  up.bytes_per_rank = size; // S/2 in each of the two trees
  up.peer_offset = 1;
  up.latency_steps = (gpus_per_node - 1) + inter;
  up.inter_node_steps = inter;
  PhasePlan down = up;
  down.peer_offset = -1;
  return {up, down};
}

TreePipeline tree_pipeline(Bytes size, int channels) {
  const double per_channel = size.value() / std::max(channels, 1);
  TreePipeline p;
  p.chunk = Bytes(4.0 * 1024 * 1024 / 8); // NCCL's Simple buffer (4 MiB) over NCCL_STEPS (8)
  p.chunks = std::max(1, static_cast<int>(std::ceil(per_channel / p.chunk.value())));
  return p;
}

} // namespace zerosim::collectives
