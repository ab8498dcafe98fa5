// NCCL's double binary tree all-reduce (Sanders, Speck & Träff 2009, "Two-tree algorithms for full bandwidth
// broadcast, reduction and scan", Parallel Computing 35(12); NCCL 2.4 blog "Massively scale your deep learning
// training with NCCL 2.4"), as phases of aggregated flows.
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// Double-binary-tree all-reduce over n >= 2 ranks on nodes of gpus_per_node GPUs. The payload is split in two
/// halves, one per tree; every rank is a leaf of one tree and an inner node of the other, so it sends S/2 up each
/// tree (reduce) and S/2 down each tree (broadcast): S per direction in each of two phases, 2·S in all (NCCL
/// tuning.cc converts tree busBw to algbw with ratio 0.5, i.e. 2·S per rank). Within a node NCCL's trees are chains;
/// across nodes binary trees, so each phase costs (gpus_per_node - 1) intra-node hops + ceil(log2(nodes)) network
/// hops (tuning.cc: 2·((ppn-1)·intraLat + log2(nNodes)·interLat)). Flows go to peer +1 (reduce) and -1 (broadcast):
/// on a switch every rank sending and receiving S per phase loads each link like the trees do.
/// Preconditions (checked by plan()): kind == ALL_REDUCE, n >= 2, size > 0, n % gpus_per_node == 0.
[[nodiscard]] std::vector<PhasePlan> tree_plan(Bytes size, int n, int gpus_per_node);

/// Pipeline of NCCL's tree with the Simple protocol (enqueue.cc, NCCL 2.2x "Optimize chunkSize / nSteps"): every
/// channel sends its share size / channels up (reduce) and down (broadcast) the tree in chunks, forwarding each chunk
/// as soon as it has arrived. The chunk starts at one Simple step (4 MiB buffer / 8 steps = 512 KiB) and halves while a
/// channel would get fewer than depth·8 chunks (down to 128 KiB), depth·4 (down to 64 KiB), depth (down to 32 KiB),
/// where depth is the tree's hop count (tree_plan's latency_steps).
struct TreePipeline {
  Bytes chunk{0.0}; ///< NCCL's chunk size (B)
  int chunks = 1; ///< chunks per channel, ceil(size / (channels · chunk)), at least 1
};

/// NCCL's tree chunking of an all-reduce of `size` bytes over `channels` channels (< 1 counts as 1) on a tree of
/// `depth` hops. Uncontended, a phase of the tree then takes depth·α + (chunks + depth - 1)·(size / chunks) / B: the
/// first chunk crosses depth hops, the others follow one chunk time apart (pipeline fill).
[[nodiscard]] TreePipeline tree_pipeline(Bytes size, int channels, int depth);

} // namespace zerosim::collectives
