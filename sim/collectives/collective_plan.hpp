// Collective algorithms as pure data: how many bytes each rank puts on the wire, to which peer, in how many
// latency-bound steps; plus the alpha-beta closed forms and nccl-tests' bus-bandwidth factors.
// No SimGrid here: the engine executes plans at `flow` fidelity and uses analytic_time() at `analytic` fidelity.
#pragma once

#include "sim/program/program.hpp"
#include "sim/quantity.hpp"

#include <string>
#include <vector>

namespace zerosim::collectives {

/// RING: NCCL's ring; TREE: NCCL's double binary tree (all-reduce only); HIERARCHICAL: intra-node reduce-scatter,
/// inter-node all-reduce among same-index GPUs, intra-node all-gather (Jia et al. 2018, "Highly scalable deep
/// learning training system with mixed-precision", §3.3 hierarchical all-reduce; Horovod's hierarchical allreduce);
/// NVLS: NCCL's NVLink SHARP all-reduce, all-gather and reduce-scatter, reduced / replicated inside the NVSwitch
/// (one node, NVSwitch-3; see nvls.hpp);
/// DIRECT: every rank exchanges with every other rank at once (one node; see direct.hpp).
enum class Algorithm { RING, TREE, HIERARCHICAL, NVLS, DIRECT };

/// Which ranks a phase's peer offset counts over. GLOBAL: peer = (rank + peer_offset) mod n. NODE: the ring of the
/// rank's node, peer = node_base + (local + peer_offset) mod gpus_per_node. ACROSS_NODES: the ring of the GPUs with
/// the same local index, peer = (rank + peer_offset·gpus_per_node) mod n.
enum class PeerScope { GLOBAL, NODE, ACROSS_NODES };

/// One phase of a collective at `flow` fidelity: every rank r sends `bytes_per_rank` to rank (r + peer_offset) mod n
/// as one aggregated flow, and the phase costs `latency_steps` hop latencies in total (the flow pays one; the engine
/// adds latency_steps - 1 more). With fan_out f > 1 (DIRECT) the bytes are split evenly over f concurrent flows, to
/// the peers at offsets peer_offset .. peer_offset + f - 1 of the scope (each receiving bytes_per_rank / f), and
/// every rank receives the same from the peers at the opposite offsets.
struct PhasePlan {
  Bytes bytes_per_rank;
  int peer_offset = 1;
  int fan_out = 1; ///< concurrent flows (peers) the phase's bytes are split over; 1 except for DIRECT
  int latency_steps = 0;
  PeerScope scope = PeerScope::GLOBAL;
  int inter_node_steps = 0; ///< of latency_steps, how many cross the network (NCCL tuning.cc nInterSteps)
  /// Pipeline fill and drain, as bytes per rank of this phase that move before (and after) the steady state: the
  /// first chunk has to cross every stage of the kernel's pipeline before the last stage starts, the last chunk
  /// every stage after the first has finished. Priced like the phase's bytes (at the phase's uncontended bandwidth
  /// and protocol factor) and paid as latency (nccl_tuning.hpp phase_latency). 0 except for NVLS (nvls.hpp).
  Bytes pipeline_fill_bytes = Bytes(0);
  /// Chunk times of pipeline fill of a chain: NCCL's ring Reduce (src/device/reduce.h runRing, pattern
  /// ncclPatternPipelineTo in enqueue.cc calcCollChunking, v2.27.7-1) passes the buffer down the n - 1 links of a
  /// chain in chunks, and a link forwards a chunk only once it has received it, so the last link starts n - 2 chunks
  /// after the first. Its size depends on the protocol and the channel count (nccl_tuning.hpp pipeline_fill_time).
  /// 0 except for a reduce.
  int pipeline_fill_chunks = 0;
};

/// The phases of `kind` over `n` ranks for a payload of `size` bytes (nccl-tests convention: all-reduce in/out size,
/// all-gather output size, reduce-scatter input size). Ring: all-reduce sends 2(n-1)/n·S in 2(n-1) steps;
/// all-gather and reduce-scatter send (n-1)/n·S in n-1 steps (nccl-tests PERFORMANCE.md; Patarasuk & Yuan 2009).
/// n == 1 gives no phase. Throws zerosim::Error if n < 1 or size < 0.
[[nodiscard]] std::vector<PhasePlan> plan(program::CollectiveKind kind, Algorithm algo, Bytes size, int n);

/// plan() for n ranks on nodes of `gpus_per_node` GPUs (n a multiple of it; rank order node-major). Ring counts
/// the steps that cross nodes; TREE and HIERARCHICAL use the node structure (see tree.hpp, hierarchical.hpp).
/// TREE is defined for all-reduce only; HIERARCHICAL on one node (or one GPU per node) is the ring; NVLS is defined
/// for all-reduce, all-gather and reduce-scatter on one node only; DIRECT for every op on one node only (direct.hpp).
/// Throws zerosim::Error if n < 1, size < 0, gpus_per_node < 1, n % gpus_per_node != 0, TREE for another op than
/// all-reduce, anything but RING for a reduce, or NVLS or DIRECT on several nodes.
[[nodiscard]] std::vector<PhasePlan> plan(program::CollectiveKind kind, Algorithm algo, Bytes size, int n,
                                          int gpus_per_node);

/// Alpha-beta time of `kind` on n ranks with per-link bandwidth `bw` and per-hop latency `alpha`:
/// ring all-reduce 2(n-1)/n·S/bw + 2(n-1)·alpha; ring all-gather / reduce-scatter (n-1)/n·S/bw + (n-1)·alpha.
/// A phase of fan_out f moves its bytes at f·bw (each of its f flows on its own link of bw: a full mesh), so DIRECT
/// all-reduce costs 2·S/(n·bw) + 2·alpha, DIRECT all-gather / reduce-scatter S/(n·bw) + alpha.
/// Zero for n == 1.
[[nodiscard]] Seconds analytic_time(program::CollectiveKind kind, Algorithm algo, Bytes size, int n, ByteRate bw,
                                    Seconds alpha);

/// Bytes one rank sends on the wire: the sum of plan() bytes_per_rank; for a reduce the mean over ranks, (n-1)/n of
/// that, as its root sends nothing (ring.hpp). Throws what plan() throws.
[[nodiscard]] Bytes wire_bytes_per_rank(program::CollectiveKind kind, Algorithm algo, Bytes size, int n);
/// wire_bytes_per_rank() over the plan for nodes of `gpus_per_node` GPUs (hierarchical phases, ring node crossings).
[[nodiscard]] Bytes wire_bytes_per_rank(program::CollectiveKind kind, Algorithm algo, Bytes size, int n,
                                        int gpus_per_node);

/// nccl-tests bus-bandwidth factor: busbw = algbw x factor, with algbw = S / time.
/// all-reduce 2(n-1)/n; all-gather and reduce-scatter (n-1)/n; reduce 1 (nccl-tests PERFORMANCE.md).
[[nodiscard]] double bus_bandwidth_factor(program::CollectiveKind kind, int n);

[[nodiscard]] const char* to_string(Algorithm);

} // namespace zerosim::collectives
