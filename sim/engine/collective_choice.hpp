// Which collective algorithm and protocol a cluster uses for a given op and size: the scenario's override or
// NCCL's tuner (sim/collectives/nccl_tuning.hpp). SimGrid-free, so the apps can print the choice.
#pragma once

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/scenario/scenario.hpp"

namespace zerosim::engine {

/// The tuner's view of `cluster`: world ranks, GPUs per node, the intra-node link class (PCI when the intra-node
/// bandwidth does not exceed the host link's, or without p2p; NVLink otherwise) and achievable bandwidths
/// (bandwidth x efficiency; the node's network bandwidth is nics_per_node x nic; without p2p the intra-node rate is
/// min(host_link, host_bridge / gpus_per_node), every GPU of a ring phase sending through the bridge at once);
/// NVLS enabled when cluster.nvls, p2p and one node; mesh (DIRECT enabled, intra class NVLink, intra_bandwidth per
/// peer link) when cluster.intra_node_topology is mesh, p2p and one node; the per-step route latency beyond NCCL's
/// table (TuneTopology::intra_step_extra, inter_step_extra) from topology::ring_route_summary. Throws zerosim::Error
/// on an impossible fabric (as ring_route_summary).
[[nodiscard]] collectives::TuneTopology tune_topology(const scenario::ClusterSpec& cluster);

/// The (algorithm, protocol) used for `kind` on `size` bytes: cluster.collective_algorithm / collective_protocol
/// when not "auto", the tuner's choice otherwise ("tree" for an op other than all-reduce runs the ring, "nvls" for
/// a reduce or for an all-gather / reduce-scatter on more than kNvlsMaxArity GPUs per node too).
/// Throws zerosim::Error on an unknown name.
[[nodiscard]] collectives::CollectiveChoice resolve_choice(const scenario::ClusterSpec& cluster,
                                                           program::CollectiveKind kind, Bytes size);
/// resolve_choice() with the cluster's tune_topology() already computed (`topo`), as the engine keeps it per run.
[[nodiscard]] collectives::CollectiveChoice resolve_choice(const scenario::ClusterSpec& cluster,
                                                           const collectives::TuneTopology& topo,
                                                           program::CollectiveKind kind, Bytes size);

/// Checks the cluster's collective settings (names; nvls only with cluster.nvls, p2p, one node; direct on one node)
/// up front; throws
/// zerosim::Error naming the bad key.
void check_collective_settings(const scenario::ClusterSpec& cluster);

} // namespace zerosim::engine
