#include "sim/engine/collective_choice.hpp"

#include "sim/collectives/collective_registry.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/error.hpp"
#include "topologies/builder/platform_builder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>

namespace zerosim::engine {
namespace {
bool is_auto(const std::string& s) { return s.empty() || s == "auto"; }

/// TuneTopology::intra_step_extra / inter_step_extra: what the ring's routes take beyond the latency NCCL's per-step
/// constants stand for. The presets' link latencies are NCCL's own Ring/Simple hwLat (tuning.cc v2.27.7-1: NVLink
/// 3.4 us, PCI 5.7 us, NET 14 us), so a route at those latencies is what NCCL's table already prices: the reference
/// of a hop inside a node is the same route with its links at those latencies (GPU link at its class's, PCIe links
/// at PCI's, the host bridge 0), of a node crossing the GPU link's plus one NET latency (one switch level). A hop
/// pays what its route has beyond its reference (never less than NCCL's own latency); across nodes the mean over
/// the ring's crossings, so that a phase's network steps add up the hops the ring really crosses (a fat tree's
/// leaf-to-leaf hops, a torus's longer wrap-around).
void set_step_extras(const scenario::ClusterSpec& c, collectives::TuneTopology& t) {
  if (t.ranks < 2)
    return;
  using collectives::Algorithm;
  using collectives::LinkClass;
  using collectives::Protocol;
  const auto simple = [](LinkClass k) { return collectives::hop_latency(k, Algorithm::RING, Protocol::SIMPLE); };
  const LinkClass gpu_link =
      t.mesh || c.intra_node.bandwidth.value() > c.host_link.bandwidth.value() ? LinkClass::NVLINK : LinkClass::PCI;
  scenario::ClusterSpec ref = c;
  ref.nodes = 1;
  ref.intra_node.latency = simple(gpu_link);
  ref.host_link.latency = simple(LinkClass::PCI);
  ref.pcie_switch_uplink.latency = simple(LinkClass::PCI);
  ref.host_bridge.latency = Seconds(0);
  const topology::RingRouteSummary routes = topology::ring_route_summary(c);
  t.intra_step_extra = Seconds(std::max(0.0, routes.intra_latency - topology::ring_route_summary(ref).intra_latency));
  const double crossing_ref = ref.intra_node.latency.value() + simple(LinkClass::NET).value();
  double extra = 0;
  int hops = 0;
  for (const auto& [lat, count] : routes.crossing_latencies) {
    extra += count * std::max(0.0, lat - crossing_ref);
    hops += count;
  }
  t.inter_step_extra = Seconds(hops > 0 ? extra / hops : 0.0);
}
} // namespace

collectives::TuneTopology tune_topology(const scenario::ClusterSpec& c) {
  collectives::TuneTopology t;
  t.ranks = c.world_size();
  t.gpus_per_node = std::max(c.gpus_per_node, 1);
  if (!c.p2p) {
    // Host-staged: two PCIe crossings and the host bridge, which all g concurrent flows of a phase share.
    t.intra = collectives::LinkClass::PCI;
    double bw = c.host_link.bandwidth.value() * c.host_link.efficiency;
    if (c.host_bridge.bandwidth.value() > 0)
      bw = std::min(bw, c.host_bridge.bandwidth.value() * c.host_bridge.efficiency / t.gpus_per_node);
    // Behind PCIe switches the s GPUs of a switch share its uplink both ways (platform_builder.hpp).
    const int s = std::min(std::max(c.gpus_per_pcie_switch, 1), t.gpus_per_node);
    if (s > 1 && c.pcie_switch_uplink.bandwidth.value() > 0)
      bw = std::min(bw, c.pcie_switch_uplink.bandwidth.value() * c.pcie_switch_uplink.efficiency / s);
    t.intra_bandwidth = ByteRate(bw);
  } else {
    t.intra = c.intra_node.bandwidth.value() <= c.host_link.bandwidth.value() ? collectives::LinkClass::PCI
                                                                              : collectives::LinkClass::NVLINK;
    t.intra_bandwidth = ByteRate(c.intra_node.bandwidth.value() * c.intra_node.efficiency);
  }
  t.inter_bandwidth =
      c.nodes > 1 ? ByteRate(c.nic.bandwidth.value() * c.nic.efficiency * c.nics_per_node) : ByteRate(0);
  t.nvls = c.nvls && c.p2p && c.nodes == 1;
  // Full mesh: one link of intra_node bandwidth per GPU pair (platform_builder.hpp); point-to-point GPU links, priced
  // with NCCL's NVLink latencies whatever their rate against PCIe.
  t.mesh = c.intra_node_topology == scenario::IntraNodeTopology::MESH && c.p2p && c.nodes == 1;
  if (t.mesh)
    t.intra = collectives::LinkClass::NVLINK;
  // tuning.cc getNetOverhead: 2 us on AMD x86 hosts, 1 us otherwise. The CPU presets name the vendor's product line
  // (the preset's name, not a display name given with cpu.name; a CPU without a preset by its name).
  const std::string& cpu = c.cpu.preset.empty() ? c.cpu.name : c.cpu.preset;
  for (const char* amd : {"epyc", "ryzen", "threadripper"})
    if (cpu.find(amd) != std::string::npos) {
      t.net_overhead = Seconds(2e-6);
      t.amd_host = true;
    }
  // NCCL's bandwidth caps: the GPU generation (tuning.cc compCapIndex) and the communicator's channels.
  const double cc = c.gpu.compute_capability;
  if (cc > 0)
    t.arch = cc >= 10 ? 3 : cc >= 9 ? 2 : cc >= 8 ? 1 : 0;
  t.channels = c.nccl_channels_effective();
  set_step_extras(c, t);
  return t;
}

collectives::CollectiveChoice resolve_choice(const scenario::ClusterSpec& cluster, program::CollectiveKind kind,
                                             Bytes size) {
  return resolve_choice(cluster, tune_topology(cluster), kind, size);
}

collectives::CollectiveChoice resolve_choice(const scenario::ClusterSpec& cluster,
                                             const collectives::TuneTopology& topo, program::CollectiveKind kind,
                                             Bytes size) {
  std::optional<collectives::Algorithm> algo;
  std::optional<collectives::Protocol> proto;
  if (!is_auto(cluster.collective_algorithm))
    algo = collectives::parse_algorithm(cluster.collective_algorithm);
  if (!is_auto(cluster.collective_protocol))
    proto = collectives::parse_protocol(cluster.collective_protocol);
  // An explicit tree applies to all-reduce only, an explicit nvls to all-reduce, all-gather and reduce-scatter (NCCL
  // 2.19+; all-gather / reduce-scatter up to NCCL_MAX_NVLS_ARITY GPUs per node); the other collectives run as rings
  // (choose() gives a reduce its ring).
  if (algo == collectives::Algorithm::TREE && kind != program::CollectiveKind::ALL_REDUCE)
    algo = collectives::Algorithm::RING;
  if (algo == collectives::Algorithm::NVLS && kind != program::CollectiveKind::ALL_REDUCE &&
      topo.gpus_per_node > collectives::kNvlsMaxArity)
    algo = collectives::Algorithm::RING;
  return collectives::choose(kind, size, topo, algo ? &*algo : nullptr, proto ? &*proto : nullptr);
}

BindingLimit binding_limit(const scenario::ClusterSpec& c, program::CollectiveKind kind,
                           collectives::CollectiveChoice choice, Bytes size) {
  const collectives::TuneTopology t = tune_topology(c);
  BindingLimit out;
  const auto phases = collectives::plan(kind, choice.algorithm, size, t.ranks, t.gpus_per_node);
  double longest = -1;
  const collectives::PhasePlan* slow = nullptr;
  double slow_factor = 1.0;
  for (const collectives::PhasePlan& ph : phases) {
    const double factor = collectives::phase_bandwidth_factor(kind, choice.algorithm, choice.protocol, ph, t);
    const double bw = collectives::phase_bandwidth(ph, t).value() * factor;
    const double time = bw > 0 ? ph.bytes_per_rank.value() / bw : 0.0;
    if (time > longest) {
      longest = time;
      slow = &ph;
      slow_factor = factor;
    }
  }
  if (slow == nullptr)
    return out;
  const double gb = 1e9;
  const double intra = t.intra_bandwidth.value();
  const std::string intra_text =
      c.p2p ? fmt::format(
                  "intra-node link: cluster.intra_node {:.2f} GB/s x efficiency {:g} = {:.2f} GB/s per GPU per "
                  "direction",
                  c.intra_node.bandwidth.value() / gb, c.intra_node.efficiency, intra / gb)
            : fmt::format("host-staged PCIe path between GPUs (no p2p): {:.2f} GB/s per GPU per direction", intra / gb);
  const bool crosses = t.nodes() > 1 && slow->scope != collectives::PeerScope::NODE;
  double net = 0;
  std::string net_text;
  if (crosses) {
    const double node = t.inter_bandwidth.value();
    const bool shared = slow->scope == collectives::PeerScope::ACROSS_NODES;
    net = shared ? node / t.gpus_per_node : node;
    net_text = fmt::format(
        "network: {} NIC{} x cluster.nic {:.2f} GB/s x efficiency {:g} = {:.2f} GB/s per node per "
        "direction{}",
        c.nics_per_node, c.nics_per_node == 1 ? "" : "s", c.nic.bandwidth.value() / gb, c.nic.efficiency, node / gb,
        shared ? fmt::format(", {:.2f} GB/s per GPU (all {} GPUs of a node cross at once)", net / gb, t.gpus_per_node)
               : std::string());
  }
  const double link = collectives::phase_bandwidth(*slow, t).value();
  const bool network_binds = crosses && net < intra;
  out.bandwidth = link * slow_factor;
  if (slow_factor < 1.0 - 1e-9) {
    out.resource = "NCCL protocol / channel cap";
    out.detail = fmt::format("NCCL's {} {} bandwidth ({} channels; tuning.cc): x {:.3f} of the {:.2f} GB/s {}",
                             collectives::to_string(choice.algorithm), collectives::to_string(choice.protocol),
                             t.channels, slow_factor, link / gb, network_binds ? "network" : "intra-node link");
    out.other = network_binds ? net_text : intra_text;
  } else if (network_binds) {
    out.resource = "network";
    out.detail = net_text;
    out.other = intra_text;
  } else {
    out.resource = c.p2p ? "intra-node link" : "host-staged PCIe path";
    out.detail = intra_text;
    out.other = net_text;
  }
  return out;
}

void check_collective_settings(const scenario::ClusterSpec& cluster) {
  try {
    if (!is_auto(cluster.collective_algorithm))
      (void)collectives::parse_algorithm(cluster.collective_algorithm);
  } catch (const Error& e) {
    throw Error(std::string("cluster.collective_algorithm: ") + e.what());
  }
  if (cluster.collective_algorithm == "nvls" && !(cluster.nvls && cluster.p2p))
    throw Error("cluster.collective_algorithm: nvls needs an NVSwitch with NVLink SHARP (cluster.nvls: true, p2p)");
  if (cluster.collective_algorithm == "nvls" && cluster.nodes > 1)
    throw Error("cluster.collective_algorithm: nvls runs on one node only, got " + std::to_string(cluster.nodes) +
                " nodes (NCCL's multi-node NVLS needs CollNet/SHARP switches, not modelled)");
  if (cluster.collective_algorithm == "direct" && cluster.nodes > 1)
    throw Error("cluster.collective_algorithm: direct runs on one node only, got " + std::to_string(cluster.nodes) +
                " nodes");
  try {
    if (!is_auto(cluster.collective_protocol))
      (void)collectives::parse_protocol(cluster.collective_protocol);
  } catch (const Error& e) {
    throw Error(std::string("cluster.collective_protocol: ") + e.what());
  }
}

} // namespace zerosim::engine
