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
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <utility>

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

namespace zerosim::topology {
namespace {

/// Speed of a node's CPU host (its flops are not used: CPU work is given as durations).
constexpr double kCpuHostSpeed = 1e12;

struct NodeBuild {
  sg4::NetZone* zone = nullptr;
  NetPoint* gateway = nullptr;
};

/// The hosts and links of one node, created in `zone` (build_node's full zone, or the rail fabric's Dijkstra zone).
struct NodeParts {
  std::vector<sg4::Host*> gpus;
  std::vector<sg4::Link*> nv; ///< per GPU: its NVLink into the node switch (half the intra-node latency)
  std::vector<sg4::Link*> pcie; ///< per GPU: its PCIe link to the node's CPU (or to its PCIe switch)
  /// per PCIe switch (gpus_per_pcie_switch > 1 only): its uplink to the CPU, shared by the switch's GPUs
  std::vector<sg4::Link*> uplinks;
  std::vector<sg4::Link*> nics; ///< per NIC (per-GPU NICs only): NIC bandwidth, see make_node_parts
  /// Full mesh (intra_node_topology mesh): the link of GPU pair (i, j), i < j, at index i·g + j; UP = i -> j.
  std::vector<sg4::Link*> mesh;
  sg4::Host* cpu = nullptr;
  sg4::Link* bridge = nullptr; ///< host bridge (p2p false, bandwidth > 0)
  int per_switch = 1; ///< GPUs per PCIe switch

  /// GPU i's links towards the CPU, GPU side first: its PCIe link, then its switch's uplink (when switches exist).
  [[nodiscard]] std::vector<sg4::LinkInRoute> to_cpu(int i) const {
    using D = sg4::LinkInRoute::Direction;
    std::vector<sg4::LinkInRoute> r{{pcie[static_cast<std::size_t>(i)], D::UP}};
    if (!uplinks.empty())
      r.emplace_back(uplinks[static_cast<std::size_t>(i / per_switch)], D::UP);
    return r;
  }
  /// The CPU's links towards GPU i, CPU side first (to_cpu reversed, DOWN).
  [[nodiscard]] std::vector<sg4::LinkInRoute> from_cpu(int i) const {
    using D = sg4::LinkInRoute::Direction;
    std::vector<sg4::LinkInRoute> r;
    if (!uplinks.empty())
      r.emplace_back(uplinks[static_cast<std::size_t>(i / per_switch)], D::DOWN);
    r.emplace_back(pcie[static_cast<std::size_t>(i)], D::DOWN);
    return r;
  }
};

/// The PCIe switch uplink's parameters: cluster.pcie_switch_uplink, or the host_link's when its bandwidth is 0 (a
/// hand-built ClusterSpec; the scenario loader fills unset fields from host_link).
const scenario::LinkSpec& uplink_spec(const scenario::ClusterSpec& c) {
  return c.pcie_switch_uplink.bandwidth.value() > 0 ? c.pcie_switch_uplink : c.host_link;
}

/// Creates node `node`'s GPU hosts, CPU host (with its NVMe disk), NVLink / PCIe / host-bridge links and, with
/// per-GPU NICs on several nodes, one split-duplex link per NIC ("node<k>-nic<j>": nic bandwidth x efficiency).
/// Its latency keeps the fabrics' closed forms: behind a node gateway it replaces the GPU's NVLink half
/// (intra_node.latency / 2, the fabric links add the NIC latencies); on a rail fabric, whose switches are routers
/// without links, it carries (intra_node.latency + nic.latency) / 2. Either way GPU -> NIC -> one switch -> NIC ->
/// GPU costs intra_node.latency + nic.latency.
NodeParts make_node_parts(sg4::NetZone* zone, const scenario::ClusterSpec& c, int node,
                          const std::vector<double>& gpu_speeds) {
  const std::string prefix = "node" + std::to_string(node);
  NodeParts p;
  const int g = c.gpus_per_node;
  for (int i = 0; i < g; ++i) {
    const std::string gname = prefix + "-gpu" + std::to_string(i);
    p.gpus.push_back(zone->create_host(gname, gpu_speeds)->seal());
    p.nv.push_back(
        zone->create_split_duplex_link(gname + "-nvlink", c.intra_node.bandwidth.value() * c.intra_node.efficiency)
            ->set_latency(c.intra_node.latency.value() / 2)
            ->seal());
    p.pcie.push_back(
        zone->create_split_duplex_link(gname + "-pcie", c.host_link.bandwidth.value() * c.host_link.efficiency)
            ->set_latency(c.host_link.latency.value())
            ->seal());
  }
  // Full mesh: one dedicated split-duplex link per GPU pair, intra_node bandwidth x efficiency per direction and the
  // whole intra-node latency (a GPU -> GPU route is that one link).
  if (c.intra_node_topology == scenario::IntraNodeTopology::MESH && c.p2p) {
    p.mesh.assign(static_cast<std::size_t>(g) * g, nullptr);
    for (int i = 0; i < g; ++i)
      for (int j = i + 1; j < g; ++j)
        p.mesh[static_cast<std::size_t>(i) * g + j] =
            zone->create_split_duplex_link(prefix + "-gpu" + std::to_string(i) + "-gpu" + std::to_string(j) + "-link",
                                           c.intra_node.bandwidth.value() * c.intra_node.efficiency)
                ->set_latency(c.intra_node.latency.value())
                ->seal();
  }
  // PCIe switches: one split-duplex uplink "node<k>-pcie-switch<s>" per switch (uplink bandwidth x efficiency per
  // direction), shared by its gpus_per_pcie_switch GPUs' traffic to and from the CPU.
  p.per_switch = c.gpus_per_pcie_switch;
  if (c.gpus_per_pcie_switch > 1) {
    const scenario::LinkSpec& u = uplink_spec(c);
    for (int sw = 0; sw < (g + c.gpus_per_pcie_switch - 1) / c.gpus_per_pcie_switch; ++sw)
      p.uplinks.push_back(zone->create_split_duplex_link(prefix + "-pcie-switch" + std::to_string(sw),
                                                         u.bandwidth.value() * u.efficiency)
                              ->set_latency(u.latency.value())
                              ->seal());
  }
  auto* cpu = zone->create_host(prefix + "-cpu", kCpuHostSpeed);
  // Node-local NVMe (ZeRO-Infinity offload to nvme): one SimGrid Disk "<node>-nvme" on the CPU host, all drives
  // together; concurrent swaps of the node's ranks share its read / write bandwidth (engine: Copy NVME_READ/WRITE).
  if (c.nvme.read_bandwidth.value() > 0 && c.nvme.write_bandwidth.value() > 0)
    cpu->create_disk(prefix + "-nvme", c.nvme.read_bandwidth.value(), c.nvme.write_bandwidth.value())->seal();
  p.cpu = cpu->seal();

  // Without peer-to-peer, a GPU -> GPU copy is staged in host memory: up the sender's PCIe link, through the host
  // bridge (root complex + memory, shared by every such copy in both directions), down the receiver's PCIe link.
  if (!c.p2p && c.host_bridge.bandwidth.value() > 0)
    p.bridge = zone->create_link(prefix + "-host-bridge", c.host_bridge.bandwidth.value() * c.host_bridge.efficiency)
                   ->set_latency(c.host_bridge.latency.value())
                   ->set_sharing_policy(sg4::Link::SharingPolicy::SHARED)
                   ->seal();
  if (c.nodes > 1 && per_gpu_nics(c))
    for (int j = 0; j < c.nics_per_node; ++j)
      p.nics.push_back(zone->create_split_duplex_link(prefix + "-nic" + std::to_string(j),
                                                      c.nic.bandwidth.value() * c.nic.efficiency)
                           ->set_latency(c.fabric == scenario::FabricKind::RAIL
                                             ? (c.intra_node.latency.value() + c.nic.latency.value()) / 2
                                             : c.intra_node.latency.value() / 2)
                           ->seal());
  return p;
}

/// The links of a GPU -> GPU route inside a node: NVLink up + down, the pair's own link on a full mesh, or
/// host-staged (PCIe up, [switch uplink up], host bridge, [switch uplink down], PCIe down; through the CPU even
/// between two GPUs of one PCIe switch: the copy is staged in host memory).
std::vector<sg4::LinkInRoute> intra_route(const scenario::ClusterSpec& c, const NodeParts& p, int i, int j) {
  using D = sg4::LinkInRoute::Direction;
  if (!p.mesh.empty()) {
    const int g = c.gpus_per_node;
    const int lo = std::min(i, j), hi = std::max(i, j);
    return {{p.mesh[static_cast<std::size_t>(lo) * g + hi], i < j ? D::UP : D::DOWN}};
  }
  if (c.p2p)
    return {{p.nv[i], D::UP}, {p.nv[j], D::DOWN}};
  std::vector<sg4::LinkInRoute> r = p.to_cpu(i);
  if (p.bridge != nullptr)
    r.emplace_back(p.bridge);
  for (const auto& l : p.from_cpu(j))
    r.push_back(l);
  return r;
}

void collect(const NodeParts& p, Platform& out) {
  for (auto* h : p.gpus)
    out.gpus.push_back(h);
  out.cpus.push_back(p.cpu);
}

/// Creates node `node` (GPUs, CPU host, links, routes) under `parent` (nullptr: the node is the root zone).
NodeBuild build_node(const scenario::ClusterSpec& c, int node, const sg4::NetZone* parent, Platform& out) {
  const std::string prefix = "node" + std::to_string(node);
  auto* zone = sg4::create_full_zone(prefix);
  if (parent != nullptr)
    zone->set_parent(parent);
  const NodeParts p = make_node_parts(zone, c, node, out.gpu_speeds);
  const int g = c.gpus_per_node;

  using D = sg4::LinkInRoute::Direction;
  for (int i = 0; i < g; ++i) {
    for (int j = 0; j < g; ++j)
      if (i != j)
        zone->add_route(p.gpus[i]->get_netpoint(), p.gpus[j]->get_netpoint(), nullptr, nullptr, intra_route(c, p, i, j),
                        false);
    zone->add_route(p.gpus[i]->get_netpoint(), p.cpu->get_netpoint(), nullptr, nullptr, p.to_cpu(i), false);
    zone->add_route(p.cpu->get_netpoint(), p.gpus[i]->get_netpoint(), nullptr, nullptr, p.from_cpu(i), false);
  }

  NodeBuild nb{zone, nullptr};
  if (parent != nullptr) {
    nb.gateway = zone->create_router(prefix + "-gw");
    for (int i = 0; i < g; ++i) {
      // Into the fabric through the GPU's own NIC (per-GPU NICs), else through its intra-node link.
      sg4::Link* up = p.nics.empty() ? p.nv[i] : p.nics[static_cast<std::size_t>(nic_of_gpu(c, i))];
      zone->add_route(p.gpus[i]->get_netpoint(), nb.gateway, nullptr, nullptr, {{up, D::UP}}, false);
      zone->add_route(nb.gateway, p.gpus[i]->get_netpoint(), nullptr, nullptr, {{up, D::DOWN}}, false);
    }
    // Host traffic leaving the node (not used by the engine today) rides on GPU 0's PCIe path (its switch's uplink
    // and its PCIe link).
    zone->add_route(p.cpu->get_netpoint(), nb.gateway, nullptr, nullptr, p.from_cpu(0), false);
    zone->add_route(nb.gateway, p.cpu->get_netpoint(), nullptr, nullptr, p.to_cpu(0), false);
  }
  zone->seal();
  collect(p, out);
  return nb;
}

/// A link that never constrains (FATPIPE: every flow gets its whole bandwidth; no latency). The rail fabric adds
/// them only to steer SimGrid's Dijkstra routing, which counts links (DijkstraZone: edge cost = links in the edge).
sg4::Link* routing_weight(sg4::NetZone* zone, const std::string& name) {
  return zone->create_link(name, 1e18)->set_latency(0)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE)->seal();
}

/// The rail-optimized fabric: every node's hosts and links, the rail switches and the optional spine in one SimGrid
/// Dijkstra zone (a node-zone hierarchy cannot route per GPU: a zone leaves through one gateway). Edges and their
/// link counts (Dijkstra's cost), chosen so that the intended route is strictly the cheapest:
///   GPU i -> GPU j of a node: nvlink_i, node switch (weight), nvlink_j (3), or host-staged PCIe when p2p is false;
///   GPU <-> its CPU: pcie_i, CPU port (weight) (2; crossing a CPU between two GPUs costs 4 > 3); with PCIe
///   switches pcie_i, uplink, CPU port (3; through the CPU 6 > 3 = p2p GPU -> GPU);
///   GPU i <-> rail switch r = nic_of_gpu(i): its PCIe switch (weight), NIC r of the node (2); same rail across
///   nodes: 4; the GPU -> NIC path does not cross the PCIe switch uplinks (cluster.gpus_per_pcie_switch), which
///   model the switch -> CPU links only (PCIe switches without p2p are rejected here: a host-staged GPU -> GPU
///   edge of 4-5 links would lose to GPU -> rail -> GPU, 4);
///   rail switch <-> spine: one uplink per rail (1): cross rail GPU -> rail -> spine -> rail -> GPU costs 6, less
///   than NVLink to the GPU on the target rail first (3 + 4 = 7). Without a spine that NVLink detour is the route.
/// Spine uplinks carry nodes x NIC bandwidth (non-blocking) and half a NIC latency each, so a cross-rail route costs
/// intra_node.latency + 2 x nic.latency, a same-rail route intra_node.latency + nic.latency.
void build_rail(const scenario::ClusterSpec& c, Platform& out) {
  auto* zone = sg4::create_dijkstra_zone("fabric", true);
  using D = sg4::LinkInRoute::Direction;
  const int g = c.gpus_per_node;
  std::vector<NetPoint*> rails;
  for (int r = 0; r < c.nics_per_node; ++r)
    rails.push_back(zone->create_router("rail" + std::to_string(r)));
  for (int k = 0; k < c.nodes; ++k) {
    const std::string prefix = "node" + std::to_string(k);
    const NodeParts p = make_node_parts(zone, c, k, out.gpu_speeds);
    sg4::Link* nvswitch = routing_weight(zone, prefix + "-nvswitch");
    sg4::Link* cpu_port = routing_weight(zone, prefix + "-cpu-port");
    for (int i = 0; i < g; ++i) {
      for (int j = 0; j < g; ++j) {
        if (i == j)
          continue;
        auto links = intra_route(c, p, i, j);
        if (links.size() < 3)
          links.insert(links.begin() + 1, sg4::LinkInRoute(nvswitch));
        zone->add_route(p.gpus[i]->get_netpoint(), p.gpus[j]->get_netpoint(), nullptr, nullptr, links, false);
      }
      auto up = p.to_cpu(i);
      up.emplace_back(cpu_port);
      auto down = p.from_cpu(i);
      down.insert(down.begin(), sg4::LinkInRoute(cpu_port));
      zone->add_route(p.gpus[i]->get_netpoint(), p.cpu->get_netpoint(), nullptr, nullptr, up, false);
      zone->add_route(p.cpu->get_netpoint(), p.gpus[i]->get_netpoint(), nullptr, nullptr, down, false);
      const int r = nic_of_gpu(c, i);
      sg4::Link* pcie_switch = routing_weight(zone, prefix + "-gpu" + std::to_string(i) + "-pcie-switch");
      zone->add_route(p.gpus[i]->get_netpoint(), rails[static_cast<std::size_t>(r)], nullptr, nullptr,
                      {sg4::LinkInRoute(pcie_switch), {p.nics[static_cast<std::size_t>(r)], D::UP}}, true);
    }
    collect(p, out);
  }
  if (c.rail_spine) {
    NetPoint* spine = zone->create_router("spine");
    for (int r = 0; r < c.nics_per_node; ++r) {
      auto* up = zone->create_split_duplex_link("rail" + std::to_string(r) + "-spine",
                                                c.nic.bandwidth.value() * c.nic.efficiency * c.nodes)
                     ->set_latency(c.nic.latency.value() / 2)
                     ->seal();
      zone->add_route(rails[static_cast<std::size_t>(r)], spine, nullptr, nullptr, {{up, D::UP}}, true);
    }
  }
  zone->seal();
}

/// The shape of the fabric between nodes, shared by build_platform and ring_route_summary so that they agree.
struct FabricShape {
  scenario::FabricKind kind = scenario::FabricKind::FAT_TREE;
  int levels = 2; ///< fat tree: switch levels (1 = a single switch)
  int leaf = 1; ///< fat tree: nodes per leaf switch
  int pod = 1; ///< 3-level fat tree: leaf switches per pod (aggregation group)
  int uplinks = 1; ///< fat tree: uplinks per leaf switch (leaf / oversubscription)
  std::vector<unsigned long> dims; ///< torus: size of each dimension (dimension 0 varies fastest)
  int groups = 1; ///< dragonfly: groups (one chassis each, one node per router)
  int routers = 1; ///< dragonfly: routers per group (all-to-all local links)
};

/// Near-equal factorisation of `nodes` into `d` factors, largest first: repeatedly takes the largest divisor of
/// what is left not above its d-th root (rounded up).
std::vector<unsigned long> torus_dims(int nodes, int d) {
  std::vector<unsigned long> out;
  int left = nodes;
  for (int i = d; i >= 1; --i) {
    if (i == 1) {
      out.push_back(static_cast<unsigned long>(left));
      break;
    }
    int target = static_cast<int>(std::ceil(std::pow(static_cast<double>(left), 1.0 / i) - 1e-9));
    int f = 1;
    for (int k = std::max(target, 1); k >= 1; --k)
      if (left % k == 0) {
        f = k;
        break;
      }
    out.push_back(static_cast<unsigned long>(f));
    left /= f;
  }
  std::sort(out.begin(), out.end(), std::greater<>());
  return out;
}

FabricShape fabric_shape(const scenario::ClusterSpec& c) {
  FabricShape s;
  s.kind = c.fabric == scenario::FabricKind::NONE ? scenario::FabricKind::FAT_TREE : c.fabric;
  if (s.kind == scenario::FabricKind::RAIL)
    return s;
  if (s.kind == scenario::FabricKind::SINGLE_SWITCH) {
    s.levels = 1;
    s.leaf = c.nodes;
    s.uplinks = 1;
    return s;
  }
  if (s.kind == scenario::FabricKind::TORUS) {
    if (c.torus_dimensions < 1)
      throw Error("cluster: torus_dimensions must be >= 1, got " + std::to_string(c.torus_dimensions));
    s.dims = torus_dims(c.nodes, c.torus_dimensions);
    return s;
  }
  if (s.kind == scenario::FabricKind::DRAGONFLY) {
    // Groups: the largest divisor of nodes not above sqrt(nodes), so that groups <= routers per group, which SimGrid's
    // DragonflyZone needs (its global link to group j leaves from router j of each group).
    for (int g = 1; g * g <= c.nodes; ++g)
      if (c.nodes % g == 0)
        s.groups = g;
    s.routers = c.nodes / s.groups;
    return s;
  }
  if (c.fabric_levels != 2 && c.fabric_levels != 3)
    throw Error("cluster: fabric_levels must be 2 or 3 for a fat tree, got " + std::to_string(c.fabric_levels));
  s.levels = c.fabric_levels;
  s.leaf = scenario::fat_tree_leaf_nodes(c.nodes, c.fat_tree_leaf_radix);
  s.pod = s.levels == 3 ? scenario::fat_tree_leaf_nodes(c.nodes / s.leaf, s.leaf) : 1;
  const double o = c.fabric_oversubscription;
  const double up = s.leaf / o;
  if (!(o >= 1) || std::abs(up - std::round(up)) > 1e-9 || std::round(up) < 1)
    throw Error("cluster: fabric_oversubscription must be >= 1 and divide the leaf radix " + std::to_string(s.leaf) +
                " into whole uplinks, got " + std::to_string(o));
  s.uplinks = static_cast<int>(std::round(up));
  return s;
}

/// Torus hops from node a to node b: per dimension the shorter way round (SimGrid's TorusZone routes dimension by
/// dimension; checked against route_to in tests/topologies/platform_builder_test.cpp).
int torus_hops(const std::vector<unsigned long>& dims, int a, int b) {
  int hops = 0;
  for (unsigned long d : dims) {
    const int n = static_cast<int>(d);
    const int x = a % n, y = b % n;
    const int fwd = ((y - x) % n + n) % n;
    hops += std::min(fwd, n - fwd);
    a /= n;
    b /= n;
  }
  return hops;
}

/// Links from node a to node b on the dragonfly `f` (one node per router, one chassis per group), following SimGrid
/// 3.32's DragonflyZone minimal routing: node link up; to another group: a local link to the router that holds the
/// global link to the target group (router index = target group) unless already there, the global link (arriving at
/// router index = source group), then a local link to the target router unless already there; node link down.
int dragonfly_links(const FabricShape& f, int a, int b) {
  const int ga = a / f.routers, ra = a % f.routers;
  const int gb = b / f.routers, rb = b % f.routers;
  if (a == b)
    return 2;
  if (ga == gb)
    return 3;
  return 2 + (ra != gb ? 1 : 0) + 1 + (rb != ga ? 1 : 0);
}

} // namespace

bool per_gpu_nics(const scenario::ClusterSpec& cluster) {
  return cluster.nic_per_gpu || cluster.fabric == scenario::FabricKind::RAIL;
}

int nic_of_gpu(const scenario::ClusterSpec& cluster, int local_gpu) {
  const int n = cluster.nics_per_node, g = cluster.gpus_per_node;
  if (n < 1 || n > g || g % n != 0)
    throw Error("cluster: " + std::to_string(n) + " NICs do not split " + std::to_string(g) +
                " GPUs evenly (per-GPU NICs: nics_per_node must divide gpus_per_node)");
  return local_gpu / (g / n);
}

int fat_tree_leaf_radix(const scenario::ClusterSpec& cluster) {
  return scenario::fat_tree_leaf_nodes(cluster.nodes, cluster.fat_tree_leaf_radix);
}

RingRouteSummary ring_route_summary(const scenario::ClusterSpec& c) {
  RingRouteSummary s;
  s.min_bandwidth = std::numeric_limits<double>::infinity();
  if (c.world_size() < 2)
    return s;
  const double nv_bw = c.intra_node.bandwidth.value() * c.intra_node.efficiency;
  const double pcie_bw = c.host_link.bandwidth.value() * c.host_link.efficiency;
  auto take = [&s](double bw, double lat) {
    s.min_bandwidth = std::min(s.min_bandwidth, bw);
    s.max_latency = std::max(s.max_latency, lat);
  };
  std::map<double, int> crossings; // node-crossing hop latency -> hops
  auto crossing = [&](double lat) { ++crossings[lat]; };
  auto finish = [&s, &crossings]() {
    s.crossing_latencies.assign(crossings.begin(), crossings.end());
    return s;
  };
  if (c.gpus_per_node > 1) { // hops inside a node (build_node's GPU -> GPU routes)
    if (c.p2p) {
      take(nv_bw, c.intra_node.latency.value());
      s.intra_latency = c.intra_node.latency.value();
    } else {
      // Host-staged: PCIe up, [switch uplink up], [host bridge], [switch uplink down], PCIe down.
      double bw = pcie_bw;
      double lat = 2 * c.host_link.latency.value();
      if (c.gpus_per_pcie_switch > 1) {
        const scenario::LinkSpec& u = uplink_spec(c);
        bw = std::min(bw, u.bandwidth.value() * u.efficiency);
        lat += 2 * u.latency.value();
      }
      if (c.host_bridge.bandwidth.value() > 0) {
        bw = std::min(bw, c.host_bridge.bandwidth.value() * c.host_bridge.efficiency);
        lat += c.host_bridge.latency.value();
      }
      take(bw, lat);
      s.intra_latency = lat;
    }
  }
  if (c.nodes > 1) { // node-crossing hops: GPU link up, fat-tree links (half a NIC latency each), GPU link down
    const double fabric_bw = c.nic.bandwidth.value() * c.nic.efficiency * c.nics_per_node;
    const FabricShape f = fabric_shape(c);
    const double l = c.intra_node.latency.value();
    const double nic = c.nic.latency.value();
    for (int i = 0; i < c.nodes; ++i) {
      const int j = (i + 1) % c.nodes;
      double nics = 1; // NIC latencies on the hop i -> j
      if (f.kind == scenario::FabricKind::TORUS)
        nics = torus_hops(f.dims, i, j); // one NIC latency per torus link
      else if (f.kind == scenario::FabricKind::DRAGONFLY)
        nics = dragonfly_links(f, i, j) / 2.0; // half a NIC latency per dragonfly link
      else if (f.kind == scenario::FabricKind::RAIL)
        nics = 1; // rail-aligned: NIC i -> rail switch i -> NIC i (the engine splits a node-crossing flow over rails)
      else if (f.levels >= 2 && i / f.leaf != j / f.leaf) // leaves the leaf switch ...
        nics = f.levels == 3 && i / (f.leaf * f.pod) != j / (f.leaf * f.pod) ? 3 : 2; // ... and, 3 levels, its pod
      take(std::min(nv_bw, fabric_bw), l + nic * nics);
      crossing(l + nic * nics);
    }
  }
  return finish();
}

std::vector<double> gpu_pstate_speeds(double nccl_sm_share) {
  if (!(nccl_sm_share >= 0 && nccl_sm_share <= 1))
    throw Error("gpu_pstate_speeds: the NCCL SM share must be in [0, 1], got " + std::to_string(nccl_sm_share));
  if (nccl_sm_share == 0)
    return {kGpuHostSpeed};
  std::vector<double> speeds;
  for (int k = 0; k <= kMaxNcclKernels; ++k)
    speeds.push_back(kGpuHostSpeed * std::max(1.0 - k * nccl_sm_share, 1e-3));
  return speeds;
}

Platform build_platform(const scenario::ClusterSpec& cluster, double nccl_sm_share) {
  if (cluster.nodes < 1)
    throw Error("cluster: nodes must be >= 1, got " + std::to_string(cluster.nodes));
  if (cluster.gpus_per_node < 1)
    throw Error("cluster: gpus_per_node must be >= 1, got " + std::to_string(cluster.gpus_per_node));
  if (cluster.intra_node.bandwidth.value() <= 0 || cluster.host_link.bandwidth.value() <= 0)
    throw Error("cluster: intra_node and host_link bandwidths must be > 0");
  for (const scenario::LinkSpec* l : {&cluster.intra_node, &cluster.host_link, &cluster.nic, &uplink_spec(cluster)})
    if (!(l->efficiency > 0 && l->efficiency <= 1))
      throw Error("cluster: link efficiency must be in (0, 1], got " + std::to_string(l->efficiency));
  if (cluster.gpus_per_pcie_switch < 1 || (cluster.gpus_per_node > cluster.gpus_per_pcie_switch &&
                                           cluster.gpus_per_node % cluster.gpus_per_pcie_switch != 0))
    throw Error("cluster.gpus_per_pcie_switch: " + std::to_string(cluster.gpus_per_pcie_switch) +
                " GPUs per PCIe switch do not divide " + std::to_string(cluster.gpus_per_node) + " GPUs per node");
  if (cluster.gpus_per_pcie_switch > 1 && !cluster.p2p && cluster.nodes > 1 &&
      cluster.fabric == scenario::FabricKind::RAIL)
    throw Error("cluster.gpus_per_pcie_switch: PCIe switches without p2p are not modelled on a rail fabric");
  if (cluster.nodes > 1 && (cluster.nic.bandwidth.value() <= 0 || cluster.nics_per_node < 1))
    throw Error("cluster: a multi-node cluster needs nics_per_node >= 1 and a nic bandwidth > 0");
  if (cluster.intra_node_topology == scenario::IntraNodeTopology::MESH && (!cluster.p2p || cluster.nodes > 1))
    throw Error("cluster.intra_node_topology: mesh needs p2p and one node, got p2p " +
                std::string(cluster.p2p ? "true" : "false") + " and " + std::to_string(cluster.nodes) + " nodes");

  Platform out;
  out.gpus_per_node = cluster.gpus_per_node;
  out.gpu_speeds = gpu_pstate_speeds(nccl_sm_share);
  out.gpus.reserve(static_cast<std::size_t>(cluster.world_size()));
  out.cpus.reserve(static_cast<std::size_t>(cluster.nodes));

  if (cluster.nodes == 1) {
    build_node(cluster, 0, nullptr, out);
    return out;
  }

  if (per_gpu_nics(cluster))
    (void)nic_of_gpu(cluster, 0); // throws when the NICs do not split the GPUs evenly
  const FabricShape f = fabric_shape(cluster);
  const double bw = cluster.nic.bandwidth.value() * cluster.nic.efficiency * cluster.nics_per_node;
  if (f.kind == scenario::FabricKind::RAIL) {
    build_rail(cluster, out);
    return out;
  }

  auto node_cb = [&cluster, &out](sg4::NetZone* fat_tree, const std::vector<unsigned long>& /*coord*/,
                                  unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
    NodeBuild nb = build_node(cluster, static_cast<int>(id), fat_tree, out);
    return {nb.zone->get_netpoint(), nb.gateway};
  };
  sg4::NetZone* fabric = nullptr;
  if (f.kind == scenario::FabricKind::TORUS) {
    // Direct node-to-node links, one NIC latency each.
    fabric = sg4::create_torus_zone("fabric", nullptr, f.dims, sg4::ClusterCallbacks(node_cb), bw,
                                    cluster.nic.latency.value(), sg4::Link::SharingPolicy::SPLITDUPLEX);
  } else if (f.kind == scenario::FabricKind::DRAGONFLY) {
    // Every link (node-router, local, global) half a NIC latency: node -> router -> node costs one NIC latency.
    const sg4::DragonflyParams params({static_cast<unsigned>(f.groups), 1}, {1, 1},
                                      {static_cast<unsigned>(f.routers), 1}, 1);
    fabric = sg4::create_dragonfly_zone("fabric", nullptr, params, sg4::ClusterCallbacks(node_cb), bw,
                                        cluster.nic.latency.value() / 2, sg4::Link::SharingPolicy::SPLITDUPLEX);
  } else {
    // Extended generalised fat tree XGFT(h; m; w) (SimGrid FatTreeZone; Ohring et al. 1995): `down` children and
    // `up` parents per level. Non-blocking: a leaf switch has as many uplinks as nodes below it (one per spine);
    // oversubscribed o:1, leaf / o uplinks. A 3-level tree groups `pod` leaves under `leaf` aggregation switches,
    // each with `pod` uplinks to the core. Links carry half a NIC latency: one switch costs one NIC latency.
    const auto k = static_cast<unsigned>(f.leaf);
    const auto u = static_cast<unsigned>(f.uplinks);
    const double lat = cluster.nic.latency.value() / 2;
    sg4::FatTreeParams params(1, {static_cast<unsigned>(cluster.nodes)}, {1}, {1});
    if (f.levels == 2)
      params = sg4::FatTreeParams(2, {k, static_cast<unsigned>(cluster.nodes) / k}, {1, u}, {1, 1});
    else if (f.levels == 3) {
      const auto p = static_cast<unsigned>(f.pod);
      params = sg4::FatTreeParams(3, {k, p, static_cast<unsigned>(cluster.nodes) / (k * p)}, {1, u, p}, {1, 1, 1});
    }
    fabric = sg4::create_fatTree_zone("fabric", nullptr, params, sg4::ClusterCallbacks(node_cb), bw, lat,
                                      sg4::Link::SharingPolicy::SPLITDUPLEX);
  }
  fabric->seal();
  if (out.gpus.size() != static_cast<std::size_t>(cluster.world_size()))
    throw Error("platform builder: fat tree created " + std::to_string(out.cpus.size()) + " nodes, expected " +
                std::to_string(cluster.nodes));
  return out;
}

} // namespace zerosim::topology
