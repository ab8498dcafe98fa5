// Hierarchical all-reduce / all-gather / reduce-scatter for multi-node clusters (Jia et al. 2018, arXiv:1807.11205
// §3.3; Horovod HOROVOD_HIERARCHICAL_ALLREDUCE): rings inside each node and rings across nodes among the GPUs of the
// same local index, so each GPU's network traffic is 1/gpus_per_node of the payload.
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// Phases over n ranks on nodes of g = gpus_per_node GPUs, N = n / g nodes (N >= 2 and g >= 2; else plan() uses the
/// ring). All-reduce: intra-node ring reduce-scatter ((g-1)/g·S, g-1 steps), inter-node ring all-reduce of the
/// S/g shard (2(N-1)/N·S/g, 2(N-1) network steps), intra-node ring all-gather ((g-1)/g·S, g-1 steps).
/// Reduce-scatter (S = input): intra-node reduce-scatter ((g-1)/g·S), then inter-node reduce-scatter of the S/g
/// shard ((N-1)/N·S/g). All-gather (S = output): inter-node all-gather of S/g ((N-1)/N·S/g), then intra-node
/// all-gather ((g-1)/g·S). Preconditions (checked by plan()): n % g == 0, size > 0.
[[nodiscard]] std::vector<PhasePlan> hierarchical_plan(program::CollectiveKind kind, Bytes size, int n,
                                                       int gpus_per_node);

} // namespace zerosim::collectives
