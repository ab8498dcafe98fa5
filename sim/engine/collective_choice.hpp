// Which collective algorithm and protocol a cluster uses for a given op and size: the scenario's override or
// NCCL's tuner (sim/collectives/nccl_tuning.hpp). SimGrid-free, so the apps can print the choice.
#pragma once

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>

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

/// What caps the bandwidth of a collective's data movement (newuser31 F11: raising cluster.nic.bandwidth past the
/// NVLink's share changed nothing, and nothing said why). Of the phase that takes longest at its bandwidth
/// (bytes_per_rank over the phase's uncontended bandwidth times NCCL's protocol / channel factor), the resource that
/// sets that bandwidth: the GPU's intra-node link (bandwidth x efficiency per GPU per direction; the host-staged
/// PCIe path without p2p), the node's network (nics_per_node x nic bandwidth x efficiency per node per direction;
/// a share per GPU when every GPU of a node crosses at once), or NCCL's cap for the protocol and channel count
/// (collectives::phase_bandwidth_factor < 1). The bandwidths are those the engine gives the phase's flows
/// (collectives::phase_bandwidth; the same as the rail-aligned ring routes on the presets). For a ring all-reduce,
/// all-gather or reduce-scatter, busbw tends to `bandwidth` as the size grows (nccl-tests PERFORMANCE.md: the ring's
/// bus bandwidth is its per-rank link rate).
struct BindingLimit {
  double bandwidth = 0; ///< B/s the phase's data moves at, at most, after NCCL's factor (0: no phase)
  /// "intra-node link", "host-staged PCIe path", "network" or "NCCL protocol / channel cap"
  std::string resource;
  std::string detail; ///< the figures behind it, e.g. "cluster.intra_node 450.00 GB/s x efficiency 0.824 = ..."
  /// The other resource on the phase's path and its rate, when there is one ("network: 8 NICs x 50.00 GB/s ..."),
  /// so that a reader sees by how much it is faster; "" otherwise.
  std::string other;
};
[[nodiscard]] BindingLimit binding_limit(const scenario::ClusterSpec& cluster, program::CollectiveKind kind,
                                         collectives::CollectiveChoice choice, Bytes size);

/// Checks the cluster's collective settings (names; nvls only with cluster.nvls, p2p, one node; direct on one node)
/// up front; throws
/// zerosim::Error naming the bad key.
void check_collective_settings(const scenario::ClusterSpec& cluster);

} // namespace zerosim::engine
