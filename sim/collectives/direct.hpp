// The direct (all-to-all) algorithm for small groups on one node: every rank exchanges with every other rank at
// once. On a fully connected node (an xGMI / Infinity Fabric or NVLink full mesh: one dedicated link per GPU pair,
// cluster.intra_node_topology mesh) the n-1 flows of a rank cross n-1 different links, so a phase moves its bytes at
// n-1 times the per-link bandwidth; this is what RCCL's / NCCL's multi-channel rings amount to on such a node (their
// channels' rings together use every link; AMD Instinct MI300X platform: 7 peer links per GPU, hardware.md
// "Compute and memory"). On a switch star the n-1 flows share the GPU's one link and the phase is no faster than a
// ring. Bandwidth-optimal like the ring (same wire bytes) but with one latency step per phase instead of n-1
// (Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1): the pairwise-exchange reduce-scatter, one peer per step,
// here with all exchanges concurrent).
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// Direct phases of `kind` over n >= 2 ranks of ONE node (nccl-tests size convention):
/// reduce-scatter (S = input): one phase, every rank sends S/n to each of its n-1 peers at once, (n-1)/n·S bytes
/// per rank, 1 latency step; all-gather (S = output): the same, each rank sending its S/n shard to every peer;
/// all-reduce: reduce-scatter then all-gather, 2 phases, 2(n-1)/n·S bytes per rank (as the ring), 2 latency steps.
/// Every phase: peer_offset 1, fan_out n-1 (peers +1 .. +(n-1) of the node, all concurrent), scope NODE.
/// Preconditions (checked by plan()): one node, n >= 2, size > 0.
[[nodiscard]] std::vector<PhasePlan> direct_plan(program::CollectiveKind kind, Bytes size, int n);

} // namespace zerosim::collectives
