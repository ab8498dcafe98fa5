// Turns a ClusterSpec into a SimGrid platform with SimGrid's own zone builders (DESIGN.md "topologies/").
// Only this file's implementation and engine/ include SimGrid headers.
#pragma once

#include "sim/quantity.hpp"
#include "sim/scenario/scenario.hpp"

#include <utility>
#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace zerosim::topology {

/// The built platform: one SimGrid host per GPU (rank order: node-major), one host per node for its CPU/memory.
struct Platform {
  std::vector<simgrid::s4u::Host*> gpus; ///< index = global rank
  std::vector<simgrid::s4u::Host*> cpus; ///< index = node
  int gpus_per_node = 1;
  std::vector<double> gpu_speeds; ///< the pstates of every GPU host (gpu_pstate_speeds)
  [[nodiscard]] simgrid::s4u::Host* cpu_of(int rank) const {
    return cpus.at(static_cast<std::size_t>(rank / gpus_per_node));
  }
};

/// Builds the platform into the current s4u::Engine, which must exist and be configured (network/model:CM02,
/// network/crosstraffic:0, network/TCP-gamma:0, set before the first zone; reference/simgrid_notes.md §3).
/// Shape: a node routes like a star (each GPU a split-duplex link of intra_node bandwidth and half its latency to
/// the node switch, so GPU -> GPU costs intra_node.latency + S / intra_node.bandwidth) and each GPU has its own
/// split-duplex PCIe link (host_link) to the node's CPU host. It is built as a SimGrid full zone with explicit routes,
/// because a star zone cannot give a GPU a different link towards the CPU. Nodes > 1 hang from cluster.fabric:
/// fat-tree (default; create_fatTree_zone, cluster.fabric_levels 2 or 3, leaf radix cluster.fat_tree_leaf_radix,
/// default 32, lowered to a divisor of nodes; 3 levels group as many leaves per pod, likewise lowered; leaf uplinks
/// = radix / cluster.fabric_oversubscription, which must divide it), single-switch (a 1-level fat tree), or torus
/// (create_torus_zone over cluster.torus_dimensions near-equal dimensions), or dragonfly (create_dragonfly_zone: g
/// groups of nodes/g all-to-all routers, one node per router, g the largest divisor of nodes <= sqrt(nodes); every
/// link half a NIC latency). Fat-tree links carry nics_per_node x nic
/// bandwidth and half the NIC latency (one switch = one NIC latency); torus links the same bandwidth and a whole NIC
/// latency per node-to-node hop. Inter-node traffic enters the fabric through the GPU's intra-node link, or, with
/// per-GPU NICs (per_gpu_nics()), through the GPU's own NIC link "node<k>-nic<r>", r = nic_of_gpu() (NIC bandwidth,
/// latency (intra_node.latency + nic.latency) / 2; the fabric links still carry nics_per_node x nic).
/// rail (cluster.fabric rail): NIC r of every node on rail switch "rail<r>", rail switches joined by a "spine"
/// router when cluster.rail_spine (uplinks of nodes x nic bandwidth, half a NIC latency each); one SimGrid Dijkstra
/// zone holds everything (see build_rail in the .cpp): same rail costs intra_node.latency + nic.latency, cross rail
/// intra_node.latency + 2 nic.latency through the spine (without a spine, an NVLink hop to the GPU on the other
/// rail). Hosts are named "node<i>-gpu<j>" and "node<i>-cpu".
/// Every link's SimGrid bandwidth is its LinkSpec bandwidth x efficiency (achievable payload rate).
/// Full mesh (cluster.intra_node_topology mesh; p2p and one node only): GPU i -> GPU j crosses one dedicated
/// split-duplex link of the pair ("node0-gpu<i>-gpu<j>-link", i < j: intra_node bandwidth x efficiency PER PEER LINK
/// and per direction, the whole intra_node.latency), so GPU -> GPU costs intra_node.latency + S / intra_node.bandwidth
/// and a GPU's flows to its n-1 peers do not share a link; GPU <-> CPU PCIe links as on a star.
/// Without p2p (cluster.p2p false), GPU -> GPU routes are host-staged: the sender's PCIe link up, the node's
/// host_bridge (one SHARED link for both directions, when its bandwidth is > 0), the receiver's PCIe link down.
/// PCIe switches (cluster.gpus_per_pcie_switch = s > 1, s divides gpus_per_node, or exceeds it: one partly filled
/// switch, e.g. a 1-GPU run on a DGX preset): GPU i hangs from switch i / s
/// ("node<k>-pcie-switch<i/s>") over its host_link, and the switch reaches the CPU over ONE split-duplex uplink
/// (cluster.pcie_switch_uplink, default the host_link's values) shared by its s GPUs. GPU <-> CPU routes (offload
/// copies, NVMe swaps through the CPU host) cross host_link then the uplink: latency host_link + uplink, bandwidth
/// the min; s GPUs copying at once share the uplink (DGX-2, DGX A100: 2 GPUs per switch). Host-staged GPU -> GPU
/// routes cross both GPUs' uplinks too (and the bridge between them), even between two GPUs of one switch (the copy
/// goes through host memory). NIC traffic is unchanged: with per-GPU NICs a GPU still reaches its NIC directly
/// (gateway route / rail "pcie-switch" routing weight), not over the uplink, which models the switch -> CPU link
/// only. Not modelled (throws): PCIe switches without p2p on a rail fabric.
/// GPU hosts run at 1 flop/s per "speed unit": the engine converts a kernel's duration into work.
/// Throws zerosim::Error on an impossible shape (nodes < 1, gpus_per_node < 1, a zero bandwidth, several nodes
/// without NICs, per-GPU NICs whose count does not divide gpus_per_node, a gpus_per_pcie_switch below 1 or not
/// dividing a larger gpus_per_node, or a mesh without p2p or on several nodes).
/// Every GPU host gets the pstates of gpu_pstate_speeds(nccl_sm_share).
Platform build_platform(const scenario::ClusterSpec& cluster, double nccl_sm_share = 0.0);

/// The ring r -> r+1 (mod world) over every rank of `cluster`, as build_platform routes it, computed without building
/// the platform (SimGrid's zone creation grows superlinearly with thousands of node zones, and a folded run builds
/// only the nodes it simulates): the slowest route's bandwidth and the largest route latency. It follows the
/// builder's link parameters: intra-node hop = intra_node (also on a mesh: the pair's own link; without p2p, PCIe up
/// + PCIe switch uplink up + host bridge + uplink down + PCIe down, the uplinks with gpus_per_pcie_switch > 1);
/// node-crossing hop = intra_node + one NIC latency through a leaf switch, two through a spine, three through a
/// 3-level core (one per torus link on a torus, the worst ring hop's shortest way round; one on a rail fabric), at
/// min(intra_node, nics_per_node x nic) bandwidth. With per-GPU NICs the node-crossing hop is the rail-aligned one
/// (node k GPU i -> node k+1 GPU i over NIC i; the engine splits a node-crossing ring flow over the node's NICs, as
/// NCCL's rail-aligned channels do), so its bandwidth is still the node's nics_per_node x nic. Tests check it
/// against SimGrid's route_to for every fabric.
/// Throws zerosim::Error on an impossible fabric (fabric_levels not 2 or 3, an oversubscription that does not divide
/// the leaf radix, torus_dimensions < 1).
/// It also lists the latency of the intra-node hop and of every node-crossing hop, for the per-step latency NCCL's
/// tuner does not see (engine::tune_topology).
struct RingRouteSummary {
  double min_bandwidth = 0; ///< B/s (infinity when the world has one rank)
  double max_latency = 0; ///< s
  double intra_latency = 0; ///< s, route latency of a ring hop inside a node (0 with one GPU per node)
  /// The node-crossing ring hops (node k -> node k+1 mod nodes, rail-aligned with per-GPU NICs) grouped by route
  /// latency: (latency s, number of hops), latencies ascending; the counts add up to `nodes` (empty on one node).
  std::vector<std::pair<double, int>> crossing_latencies;
};
[[nodiscard]] RingRouteSummary ring_route_summary(const scenario::ClusterSpec& cluster);

/// Whether every GPU reaches the fabric through its own NIC: cluster.nic_per_gpu, or a rail fabric.
[[nodiscard]] bool per_gpu_nics(const scenario::ClusterSpec& cluster);

/// The NIC (0 .. nics_per_node - 1) GPU `local_gpu` of a node uses with per-GPU NICs: local_gpu / (gpus_per_node /
/// nics_per_node) (DGX A100/H100: GPU i -> NIC i; DGX-2: two GPUs per PCIe switch and NIC). Throws zerosim::Error
/// when nics_per_node does not divide gpus_per_node.
[[nodiscard]] int nic_of_gpu(const scenario::ClusterSpec& cluster, int local_gpu);

/// Nodes per leaf switch of the fat tree: cluster.fat_tree_leaf_radix (default 32) lowered to a divisor of nodes.
[[nodiscard]] int fat_tree_leaf_radix(const scenario::ClusterSpec& cluster);

/// Speed given to every GPU host: the engine executes a kernel of duration t as t x kGpuHostSpeed flops.
inline constexpr double kGpuHostSpeed = 1e12;

/// Most NCCL kernels a GPU host has a pstate for (gpu_pstate_speeds); more at once are priced as this many.
inline constexpr int kMaxNcclKernels = 8;

/// The pstates of every GPU host: pstate k is the speed left to the other kernels while k NCCL kernels each hold
/// `nccl_sm_share` of the SMs (their CTAs stay resident from launch to end), kGpuHostSpeed x (1 - k x share), at
/// least 1/1000 of it, for k = 0 .. kMaxNcclKernels; just {kGpuHostSpeed} when the share is 0. The engine switches
/// pstate as collectives start and end (engine/collective_runner.cpp). Throws zerosim::Error unless 0 <= share <= 1.
[[nodiscard]] std::vector<double> gpu_pstate_speeds(double nccl_sm_share);

} // namespace zerosim::topology
