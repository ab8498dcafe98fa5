// Builds the SimGrid platform of a ClusterSpec (see platform_builder.hpp for the shape).
//
// Node zone: a SimGrid "full" zone holding the node's GPU hosts, its CPU host and (multi-node) a gateway router.
// A full zone lets every route be given explicitly, which is what a per-GPU PCIe link needs: GPU i -> CPU crosses
// pcie_i only, while GPU i -> GPU j crosses nvlink_i (up) then nvlink_j (down), exactly as a star would route it.
// The link of each GPU into the node switch carries half the intra-node latency, so a GPU -> GPU route inside a node
// costs intra_node.latency + S / intra_node.bandwidth (reference/simgrid_notes.md §2, "star of N GPUs").
//
// Between nodes: a 2-level fat tree (sg4::create_fatTree_zone) whose leaves are the node zones, attached through
// the ClusterCallbacks netpoint callback that returns (node zone netpoint, gateway router), as in SimGrid v3.32's
// examples/cpp/clusters-multicpu. Every fat-tree link has nics_per_node x nic bandwidth and half the NIC latency,
// so a route through one switch costs one NIC latency and a route through a spine two.
#include "topologies/builder/platform_builder.hpp"

#include "sim/error.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

namespace zerosim::topology {
namespace {

constexpr int kDefaultLeafRadix = 32;  // nodes per leaf switch when the cluster does not say

/// Speed of a node's CPU host (its flops are not used: CPU work is given as durations).
constexpr double kCpuHostSpeed = 1e12;

struct NodeBuild {
  sg4::NetZone* zone = nullptr;
  NetPoint* gateway = nullptr;
};

/// Creates node `node` (GPUs, CPU host, links, routes) under `parent` (nullptr: the node is the root zone).
NodeBuild build_node(const scenario::ClusterSpec& c, int node, const sg4::NetZone* parent, Platform& out) {
  const std::string prefix = "node" + std::to_string(node);
  auto* zone = sg4::create_full_zone(prefix);
  if (parent != nullptr)
    zone->set_parent(parent);

  const int g = c.gpus_per_node;
  std::vector<sg4::Host*> gpus;
  std::vector<sg4::Link*> nv;
  std::vector<sg4::Link*> pcie;
  for (int i = 0; i < g; ++i) {
    const std::string gname = prefix + "-gpu" + std::to_string(i);
    gpus.push_back(zone->create_host(gname, kGpuHostSpeed)->seal());
    nv.push_back(zone->create_split_duplex_link(gname + "-nvlink",
                                                    c.intra_node.bandwidth.value() * c.intra_node.efficiency)
                     ->set_latency(c.intra_node.latency.value() / 2)
                     ->seal());
    pcie.push_back(zone->create_split_duplex_link(gname + "-pcie",
                                                      c.host_link.bandwidth.value() * c.host_link.efficiency)
                       ->set_latency(c.host_link.latency.value())
                       ->seal());
  }
  auto* cpu = zone->create_host(prefix + "-cpu", kCpuHostSpeed);
  // Node-local NVMe (ZeRO-Infinity offload to nvme): one SimGrid Disk "<node>-nvme" on the CPU host, all drives
  // together; concurrent swaps of the node's ranks share its read / write bandwidth (engine: Copy NVME_READ/WRITE).
  if (c.nvme.read_bandwidth.value() > 0 && c.nvme.write_bandwidth.value() > 0)
    cpu->create_disk(prefix + "-nvme", c.nvme.read_bandwidth.value(), c.nvme.write_bandwidth.value())->seal();
  cpu->seal();

  // Without peer-to-peer, a GPU -> GPU copy is staged in host memory: up the sender's PCIe link, through the host
  // bridge (root complex + memory, shared by every such copy in both directions), down the receiver's PCIe link.
  sg4::Link* bridge = nullptr;
  if (!c.p2p && c.host_bridge.bandwidth.value() > 0)
    bridge = zone->create_link(prefix + "-host-bridge", c.host_bridge.bandwidth.value() * c.host_bridge.efficiency)
                 ->set_latency(c.host_bridge.latency.value())
                 ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED)
                 ->seal();

  using D = sg4::LinkInRoute::Direction;
  for (int i = 0; i < g; ++i) {
    for (int j = 0; j < g; ++j) {
      if (i == j)
        continue;
      if (c.p2p)
        zone->add_route(gpus[i]->get_netpoint(), gpus[j]->get_netpoint(), nullptr, nullptr,
                        {{nv[i], D::UP}, {nv[j], D::DOWN}}, false);
      else if (bridge != nullptr)
        zone->add_route(gpus[i]->get_netpoint(), gpus[j]->get_netpoint(), nullptr, nullptr,
                        {{pcie[i], D::UP}, sg4::LinkInRoute(bridge), {pcie[j], D::DOWN}}, false);
      else
        zone->add_route(gpus[i]->get_netpoint(), gpus[j]->get_netpoint(), nullptr, nullptr,
                        {{pcie[i], D::UP}, {pcie[j], D::DOWN}}, false);
    }
    zone->add_route(gpus[i]->get_netpoint(), cpu->get_netpoint(), nullptr, nullptr, {{pcie[i], D::UP}}, false);
    zone->add_route(cpu->get_netpoint(), gpus[i]->get_netpoint(), nullptr, nullptr, {{pcie[i], D::DOWN}}, false);
  }

  NodeBuild nb{zone, nullptr};
  if (parent != nullptr) {
    nb.gateway = zone->create_router(prefix + "-gw");
    for (int i = 0; i < g; ++i) {
      zone->add_route(gpus[i]->get_netpoint(), nb.gateway, nullptr, nullptr, {{nv[i], D::UP}}, false);
      zone->add_route(nb.gateway, gpus[i]->get_netpoint(), nullptr, nullptr, {{nv[i], D::DOWN}}, false);
    }
    // Host traffic leaving the node (not used by the engine today) rides on GPU 0's PCIe link.
    zone->add_route(cpu->get_netpoint(), nb.gateway, nullptr, nullptr, {{pcie[0], D::DOWN}}, false);
    zone->add_route(nb.gateway, cpu->get_netpoint(), nullptr, nullptr, {{pcie[0], D::UP}}, false);
  }
  zone->seal();

  for (auto* h : gpus)
    out.gpus.push_back(h);
  out.cpus.push_back(cpu);
  return nb;
}

/// Nodes per leaf switch: the requested radix if it divides `nodes`, else the largest divisor of `nodes` not above
/// it (so the 2-level tree has nodes / radix leaf switches).
int leaf_radix(int nodes, int requested) {
  int limit = requested > 0 ? requested : kDefaultLeafRadix;
  if (limit > nodes)
    limit = nodes;
  for (int k = limit; k >= 1; --k)
    if (nodes % k == 0)
      return k;
  return 1;
}

} // namespace

int fat_tree_leaf_radix(const scenario::ClusterSpec& cluster) {
  return leaf_radix(cluster.nodes, cluster.fat_tree_leaf_radix);
}

RingRouteSummary ring_route_summary(const scenario::ClusterSpec& c) {
  RingRouteSummary s{std::numeric_limits<double>::infinity(), 0.0};
  if (c.world_size() < 2)
    return s;
  const double nv_bw = c.intra_node.bandwidth.value() * c.intra_node.efficiency;
  const double pcie_bw = c.host_link.bandwidth.value() * c.host_link.efficiency;
  auto take = [&s](double bw, double lat) {
    s.min_bandwidth = std::min(s.min_bandwidth, bw);
    s.max_latency = std::max(s.max_latency, lat);
  };
  if (c.gpus_per_node > 1) {  // hops inside a node (build_node's GPU -> GPU routes)
    if (c.p2p)
      take(nv_bw, c.intra_node.latency.value());
    else if (c.host_bridge.bandwidth.value() > 0)
      take(std::min(pcie_bw, c.host_bridge.bandwidth.value() * c.host_bridge.efficiency),
           2 * c.host_link.latency.value() + c.host_bridge.latency.value());
    else
      take(pcie_bw, 2 * c.host_link.latency.value());
  }
  if (c.nodes > 1) {  // node-crossing hops: GPU link up, fat-tree links (half a NIC latency each), GPU link down
    const double fabric_bw = c.nic.bandwidth.value() * c.nic.efficiency * c.nics_per_node;
    const int k = fat_tree_leaf_radix(c);
    const bool spine = c.nodes / k > 1;  // some ring hop (at least the wrap-around) changes leaf switch
    take(std::min(nv_bw, fabric_bw), c.intra_node.latency.value() + c.nic.latency.value() * (spine ? 2 : 1));
  }
  return s;
}

Platform build_platform(const scenario::ClusterSpec& cluster) {
  if (cluster.nodes < 1)
    throw Error("cluster: nodes must be >= 1, got " + std::to_string(cluster.nodes));
  if (cluster.gpus_per_node < 1)
    throw Error("cluster: gpus_per_node must be >= 1, got " + std::to_string(cluster.gpus_per_node));
  if (cluster.intra_node.bandwidth.value() <= 0 || cluster.host_link.bandwidth.value() <= 0)
    throw Error("cluster: intra_node and host_link bandwidths must be > 0");
  for (const scenario::LinkSpec* l : {&cluster.intra_node, &cluster.host_link, &cluster.nic})
    if (!(l->efficiency > 0 && l->efficiency <= 1))
      throw Error("cluster: link efficiency must be in (0, 1], got " + std::to_string(l->efficiency));
  if (cluster.nodes > 1 && (cluster.nic.bandwidth.value() <= 0 || cluster.nics_per_node < 1))
    throw Error("cluster: a multi-node cluster needs nics_per_node >= 1 and a nic bandwidth > 0");

  Platform out;
  out.gpus_per_node = cluster.gpus_per_node;
  out.gpus.reserve(static_cast<std::size_t>(cluster.world_size()));
  out.cpus.reserve(static_cast<std::size_t>(cluster.nodes));

  if (cluster.nodes == 1) {
    build_node(cluster, 0, nullptr, out);
    return out;
  }

  const int k = leaf_radix(cluster.nodes, cluster.fat_tree_leaf_radix);
  const auto leaves_per_switch = static_cast<unsigned>(k);
  const auto switches = static_cast<unsigned>(cluster.nodes / k);
  // Non-blocking tree: each leaf switch has as many uplinks as nodes below it (one per spine switch).
  const sg4::FatTreeParams params(2, {leaves_per_switch, switches}, {1, leaves_per_switch}, {1, 1});
  const double bw = cluster.nic.bandwidth.value() * cluster.nic.efficiency * cluster.nics_per_node;
  const double lat = cluster.nic.latency.value() / 2;

  auto node_cb = [&cluster, &out](sg4::NetZone* fat_tree, const std::vector<unsigned long>& /*coord*/,
                                  unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    NodeBuild nb = build_node(cluster, static_cast<int>(id), fat_tree, out);
    return {nb.zone->get_netpoint(), nb.gateway};
  };
  auto* tree = sg4::create_fatTree_zone("fabric", nullptr, params, sg4::ClusterCallbacks(node_cb), bw, lat,
                                        sg4::Link::SharingPolicy::SPLITDUPLEX);
  tree->seal();
  if (out.gpus.size() != static_cast<std::size_t>(cluster.world_size()))
    throw Error("platform builder: fat tree created " + std::to_string(out.cpus.size()) + " nodes, expected " +
                std::to_string(cluster.nodes));
  return out;
}

} // namespace zerosim::topology
