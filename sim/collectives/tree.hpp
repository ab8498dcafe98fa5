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

/// Pipeline of NCCL's tree with the Simple protocol: every channel sends its share size / channels up (reduce) and
/// down (broadcast) the tree in chunks, forwarding each chunk as soon as it has arrived (all_reduce.h runTreeSplit).
/// NCCL v2.27.7-1 (src/enqueue.cc calcCollChunking) cuts the share into chunks of one Simple step, the 4 MiB buffer
/// over NCCL_STEPS = 8 = 512 KiB, at every size; a share below 512 KiB is one chunk. (NCCL 2.4-2.19 halved the chunk
/// down to 32 KiB while a channel had fewer than depth·8, depth·4 or depth chunks, enqueue.cc computeColl v2.19.3-1;
/// 2.20 dropped that rule for the Simple tree.)
struct TreePipeline {
  Bytes chunk{0.0}; ///< NCCL's chunk size (B): 512 KiB
  int chunks = 1; ///< chunks per channel, ceil(size / (channels · chunk)), at least 1
};

/// NCCL's tree chunking of an all-reduce of `size` bytes over `channels` channels (< 1 counts as 1). Uncontended, a
/// phase of a tree of depth hops then takes depth·α + (chunks + depth - 1)·(size / chunks) / B: the first chunk
/// crosses depth hops, the others follow one chunk time apart (pipeline fill).
[[nodiscard]] TreePipeline tree_pipeline(Bytes size, int channels);

} // namespace zerosim::collectives
