// PCIe switches (cluster.gpus_per_pcie_switch, cluster.pcie_switch_uplink): GPUs hang in groups from a switch whose
// one split-duplex uplink to the CPU they share. Routes checked with SimGrid's route_to, transfer times against
// latency + size / bandwidth worked out by hand (CM02 + crosstraffic:0 + TCP-gamma:0 make that exact, and max-min
// sharing splits a link evenly between equal flows: reference/simgrid_notes.md §3).
// One SimGrid Engine per process: ctest runs each TEST_CASE in its own process.
#include "tests/support/preset_cluster.hpp"
#include "tests/support/simgrid_engine.hpp"
#include "topologies/builder/platform_builder.hpp"

#include "sim/error.hpp"

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace sg4 = simgrid::s4u;
using namespace zerosim;
using Catch::Contains;
using Catch::StartsWith;

namespace {

constexpr double kTol = 1e-9; // SimGrid reproduces latency + size / bandwidth exactly
constexpr double kBytes = 1e9; // S, one copy
constexpr double kHostBw = 31.5e9; // host_link: PCIe 4.0 x16 per direction
constexpr double kHostLat = 5.7e-6;
constexpr double kUplinkBw = 25e9; // switch uplink, chosen below the host link so that it is the bottleneck
constexpr double kUplinkLat = 1e-6;

/// A DGX-like node built by hand: 8 GPUs on NVLink (p2p), 2 GPUs per PCIe switch.
scenario::ClusterSpec switched_node(int per_switch = 2) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(300e9), Seconds(3.4e-6), "test"};
  c.host_link = {ByteRate(kHostBw), Seconds(kHostLat), "test"};
  c.gpus_per_pcie_switch = per_switch;
  c.pcie_switch_uplink = {ByteRate(kUplinkBw), Seconds(kUplinkLat), "test"};
  c.gpu.memory = Bytes(80e9);
  return c;
}

struct Route {
  std::vector<sg4::Link*> links;
  double latency = 0;
  [[nodiscard]] double min_bandwidth() const {
    double bw = std::numeric_limits<double>::infinity();
    for (const auto* l : links)
      bw = std::min(bw, l->get_bandwidth());
    return bw;
  }
  [[nodiscard]] std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto* l : links)
      out.push_back(l->get_name());
    return out;
  }
};

Route route(sg4::Host* a, sg4::Host* b) {
  Route r;
  a->route_to(b, r.links, &r.latency);
  return r;
}

/// True when some link of `r` is named "<prefix>...".
bool crosses(const Route& r, const std::string& prefix) {
  const auto n = r.names();
  return std::any_of(n.begin(), n.end(), [&](const std::string& s) { return s.rfind(prefix, 0) == 0; });
}

} // namespace

TEST_CASE("build_platform: GPU to CPU crosses its PCIe link then its switch uplink", "[topologies][unit]") {
  // GPU 0 -> CPU: host_link (5.7 us, 31.5e9) then uplink of switch 0 (1 us, 25e9): latency 6.7 us, bandwidth 25e9.
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(switched_node());
  const Route up = route(p.gpus[0], p.cpu_of(0));
  REQUIRE(up.links.size() == 2);
  CHECK(up.names()[0].rfind("node0-gpu0-pcie", 0) == 0);
  CHECK(up.names()[1].rfind("node0-pcie-switch0", 0) == 0);
  CHECK(up.latency == Approx(kHostLat + kUplinkLat).epsilon(kTol));
  CHECK(up.min_bandwidth() == Approx(kUplinkBw).epsilon(kTol));
  // CPU -> GPU 0: the same two links in the other direction (split duplex: different SimGrid links).
  const Route down = route(p.cpu_of(0), p.gpus[0]);
  REQUIRE(down.links.size() == 2);
  CHECK(down.names()[0].rfind("node0-pcie-switch0", 0) == 0);
  CHECK(down.latency == Approx(kHostLat + kUplinkLat).epsilon(kTol));
  CHECK(down.links[0] != up.links[1]);
  // GPU i hangs from switch i / 2: GPUs 0, 1 share switch 0; GPUs 6, 7 switch 3.
  CHECK(route(p.gpus[1], p.cpu_of(1)).links[1] == up.links[1]);
  CHECK(route(p.gpus[7], p.cpu_of(7)).names()[1].rfind("node0-pcie-switch3", 0) == 0);
  // p2p GPU -> GPU routes do not touch PCIe: NVLink up + down, 3.4 us.
  const Route nv = route(p.gpus[0], p.gpus[1]);
  CHECK_FALSE(crosses(nv, "node0-pcie"));
  CHECK(nv.latency == Approx(3.4e-6).epsilon(kTol));
}

TEST_CASE("build_platform: two GPUs under one PCIe switch copying to the CPU at once share its uplink",
          "[topologies][unit]") {
  // GPUs 0 and 1 each copy S = 1e9 B to the CPU at t = 0. Their host links are their own (31.5e9 each); the uplink
  // of switch 0 (25e9) carries both: 12.5e9 each. Each ends at 6.7 us + 1e9 / 12.5e9 = 6.7 us + 2S / uplink.
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(switched_node());
  const auto t =
      zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.cpu_of(0)}, {p.gpus[1], p.cpu_of(1)}}, kBytes);
  for (double x : t)
    CHECK(x == Approx(kHostLat + kUplinkLat + 2 * kBytes / kUplinkBw).epsilon(kTol));
}

TEST_CASE("build_platform: two GPUs under different PCIe switches copy to the CPU at full speed",
          "[topologies][unit]") {
  // GPUs 0 (switch 0) and 2 (switch 1): no shared link. Each: 6.7 us + S / min(31.5e9, 25e9) = 6.7 us + 1e9 / 25e9.
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(switched_node());
  const auto t =
      zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.cpu_of(0)}, {p.gpus[2], p.cpu_of(2)}}, kBytes);
  for (double x : t)
    CHECK(x == Approx(kHostLat + kUplinkLat + kBytes / std::min(kHostBw, kUplinkBw)).epsilon(kTol));
}

TEST_CASE("build_platform: a D2H and an H2D copy under one switch do not share its split-duplex uplink",
          "[topologies][unit]") {
  // GPU 0 -> CPU (uplink UP) while CPU -> GPU 1 (uplink DOWN): separate directions, 6.7 us + 1e9 / 25e9 each.
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(switched_node());
  const auto t =
      zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.cpu_of(0)}, {p.cpu_of(1), p.gpus[1]}}, kBytes);
  for (double x : t)
    CHECK(x == Approx(kHostLat + kUplinkLat + kBytes / kUplinkBw).epsilon(kTol));
}

TEST_CASE("build_platform: gpus_per_pcie_switch 1 leaves the GPU to CPU route a single PCIe link",
          "[topologies][unit]") {
  // Today's shape: GPU -> CPU = host_link only (5.7 us, 31.5e9), whatever pcie_switch_uplink says; two GPUs copying
  // at once do not share anything: 5.7 us + 1e9 / 31.5e9 each.
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(switched_node(1));
  for (int i = 0; i < 8; ++i) {
    const Route r = route(p.gpus[static_cast<std::size_t>(i)], p.cpu_of(i));
    REQUIRE(r.links.size() == 1);
    CHECK(r.latency == Approx(kHostLat).epsilon(kTol));
    CHECK(r.min_bandwidth() == Approx(kHostBw).epsilon(kTol));
  }
  const auto t =
      zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.cpu_of(0)}, {p.gpus[1], p.cpu_of(1)}}, kBytes);
  for (double x : t)
    CHECK(x == Approx(kHostLat + kBytes / kHostBw).epsilon(kTol));
}

TEST_CASE("build_platform: without p2p a host-staged copy crosses both GPUs' switch uplinks and the host bridge",
          "[topologies][unit]") {
  // 4 GPUs without p2p, 2 per switch, host bridge 100e9 / 1 us. GPU 0 -> GPU 1 (same switch) still goes through host
  // memory: pcie0 up, uplink0 up, bridge, uplink0 down, pcie1 down = 5 links, 2 x 5.7 + 2 x 1 + 1 = 14.4 us,
  // bandwidth min(31.5e9, 25e9, 100e9) = 25e9. GPU 1 -> GPU 2 crosses uplinks 0 and 1. ring_route_summary agrees.
  scenario::ClusterSpec c = switched_node();
  c.gpus_per_node = 4;
  c.p2p = false;
  c.host_bridge = {ByteRate(100e9), Seconds(1e-6), "test"};
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(c);
  const double lat = 2 * kHostLat + 2 * kUplinkLat + 1e-6;
  const Route same = route(p.gpus[0], p.gpus[1]);
  REQUIRE(same.links.size() == 5);
  CHECK(same.names()[2].rfind("node0-host-bridge", 0) == 0);
  CHECK(same.latency == Approx(lat).epsilon(kTol));
  CHECK(same.min_bandwidth() == Approx(kUplinkBw).epsilon(kTol));
  const Route other = route(p.gpus[1], p.gpus[2]);
  REQUIRE(other.links.size() == 5);
  CHECK(crosses(other, "node0-pcie-switch0"));
  CHECK(crosses(other, "node0-pcie-switch1"));
  const auto s = topology::ring_route_summary(c);
  CHECK(s.min_bandwidth == Approx(kUplinkBw).epsilon(kTol));
  CHECK(s.max_latency == Approx(lat).epsilon(kTol));
}

TEST_CASE("build_platform: per-GPU NIC traffic does not cross the PCIe switch uplinks", "[topologies][unit]") {
  // 2 nodes on one switch, 8 NICs (nic_per_gpu): node 0 GPU 0 -> node 1 GPU 0 is NIC 0 up, fabric, NIC 0 down; no
  // "pcie" link on the way. GPU -> CPU still crosses the uplink (6.7 us).
  scenario::ClusterSpec c = switched_node();
  c.nodes = 2;
  c.nic = {ByteRate(25e9), Seconds(14e-6), "test"};
  c.nics_per_node = 8;
  c.nic_per_gpu = true;
  c.fabric = scenario::FabricKind::SINGLE_SWITCH;
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(c);
  const Route net = route(p.gpus[0], p.gpus[8]);
  CHECK_FALSE(crosses(net, "node0-pcie"));
  CHECK_FALSE(crosses(net, "node1-pcie"));
  CHECK(crosses(net, "node0-nic0"));
  CHECK(route(p.gpus[9], p.cpu_of(9)).latency == Approx(kHostLat + kUplinkLat).epsilon(kTol));
}

TEST_CASE("build_platform: on a rail fabric GPU to CPU crosses the uplink and rail routes are unchanged",
          "[topologies][unit]") {
  // Rail fabric, 2 nodes, 8 NICs: GPU 3 -> CPU = pcie3, uplink 1 (+ a zero-cost routing weight): 6.7 us; same rail
  // node 0 GPU 3 -> node 1 GPU 3: intra_node.latency + nic.latency = 3.4 + 14 us, no PCIe link.
  scenario::ClusterSpec c = switched_node();
  c.nodes = 2;
  c.nic = {ByteRate(25e9), Seconds(14e-6), "test"};
  c.nics_per_node = 8;
  c.fabric = scenario::FabricKind::RAIL;
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(c);
  const Route host = route(p.gpus[3], p.cpu_of(3));
  CHECK(crosses(host, "node0-pcie-switch1"));
  CHECK(host.latency == Approx(kHostLat + kUplinkLat).epsilon(kTol));
  const Route rail = route(p.gpus[3], p.gpus[11]);
  CHECK_FALSE(crosses(rail, "node0-pcie"));
  CHECK(rail.latency == Approx(3.4e-6 + 14e-6).epsilon(kTol));
}

TEST_CASE("build_platform: a gpus_per_pcie_switch that does not divide gpus_per_node is rejected",
          "[topologies][unit]") {
  REQUIRE_THROWS_WITH(topology::build_platform(switched_node(3)),
                      Contains("cluster.gpus_per_pcie_switch") && Contains("do not divide 8"));
}

TEST_CASE("load_scenario: gpus_per_pcie_switch 3 on an 8-GPU node is a one-line error naming the key",
          "[topologies][unit]") {
  REQUIRE_THROWS_WITH(zerosim::test::preset_cluster("dgx-a100", {"cluster.gpus_per_pcie_switch=3"}),
                      Contains("<cli>") && Contains("cluster.gpus_per_pcie_switch") &&
                          Contains("3 GPUs per PCIe switch do not divide 8 GPUs per node"));
  try {
    (void)zerosim::test::preset_cluster("dgx-a100", {"cluster.gpus_per_pcie_switch=3"});
  } catch (const Error& err) {
    CHECK(std::string(err.what()).find('\n') == std::string::npos);
  }
}

TEST_CASE("load_scenario: a --set gpus_per_node that the preset's switch size does not divide is reported at <cli>",
          "[topologies][unit]") {
  // The dgx-a100 preset sets gpus_per_pcie_switch: 2 (its line in the preset file); the user's --set of 3 GPUs per
  // node is what broke the division, so the error names the user's key and where the preset's value comes from.
  REQUIRE_THROWS_WITH(zerosim::test::preset_cluster("dgx-a100", {"cluster.gpus_per_node=3"}),
                      StartsWith("<cli>") && Contains("cluster.gpus_per_node:") &&
                          Contains("2 GPUs per PCIe switch do not divide 3 GPUs per node") &&
                          Contains("(cluster.gpus_per_pcie_switch = 2 at dgx-a100.yaml:"));
}

TEST_CASE("load_scenario: the uplink defaults to the host link and the DGX presets put 2 GPUs per switch",
          "[topologies][unit]") {
  // 4 x RTX 4090 (host link PCIe 4.0 x16 = 31.5e9 B/s, 5.7 us) with 2 GPUs per switch and no uplink keys: the
  // uplink takes the host link's values.
  const auto ws = zerosim::test::preset_cluster("4x-rtx4090-pcie", {"cluster.gpus_per_pcie_switch=2"});
  CHECK(ws.gpus_per_pcie_switch == 2);
  CHECK(ws.pcie_switch_uplink.bandwidth.value() == Approx(31.5e9).epsilon(kTol));
  CHECK(ws.pcie_switch_uplink.latency.value() == Approx(5.7e-6).epsilon(kTol));
  CHECK(ws.pcie_switch_uplink.efficiency == Approx(ws.host_link.efficiency).epsilon(kTol));
  // The default follows a host_link override (resolved after every key is applied); an explicit uplink key wins.
  const auto slow = zerosim::test::preset_cluster("4x-rtx4090-pcie", {"cluster.gpus_per_pcie_switch=2",
                                                                      "cluster.host_link.bandwidth=10GBps"});
  CHECK(slow.pcie_switch_uplink.bandwidth.value() == Approx(10e9).epsilon(kTol));
  const auto own = zerosim::test::preset_cluster("4x-rtx4090-pcie", {"cluster.gpus_per_pcie_switch=2",
                                                                     "cluster.pcie_switch_uplink.bandwidth=20GBps"});
  CHECK(own.pcie_switch_uplink.bandwidth.value() == Approx(20e9).epsilon(kTol));
  CHECK(own.pcie_switch_uplink.latency.value() == Approx(5.7e-6).epsilon(kTol));
  // Without the key the node has no switch level.
  CHECK(zerosim::test::preset_cluster("4x-rtx4090-pcie").gpus_per_pcie_switch == 1);
  // DGX-2: 2 V100 per PLX switch, PCIe 3.0 x16 uplink = 8 GT/s x 16 x 128/130 / 8 = 15.75e9 B/s.
  const auto dgx2 = zerosim::test::preset_cluster("dgx2-v100");
  CHECK(dgx2.gpus_per_pcie_switch == 2);
  CHECK(dgx2.pcie_switch_uplink.bandwidth.value() == Approx(15.75e9).epsilon(kTol));
  // DGX A100: 2 A100 per Gen4 switch, PCIe 4.0 x16 uplink = 16 GT/s x 16 x 128/130 / 8 = 31.5e9 B/s.
  const auto a100 = zerosim::test::preset_cluster("dgx-a100");
  CHECK(a100.gpus_per_pcie_switch == 2);
  CHECK(a100.pcie_switch_uplink.bandwidth.value() == Approx(31.5e9).epsilon(kTol));
}

TEST_CASE("build_platform: a one-GPU run on the DGX-2 preset hangs its GPU from one partly filled PCIe switch",
          "[topologies][unit]") {
  // dgx2-v100 with gpus_per_node 1 (a single V100 of the box): gpus_per_pcie_switch 2 exceeds it, so the GPU sits
  // alone under switch 0. GPU -> CPU: host link (PCIe 3.0 x16, 5.7 us) then the uplink (PCIe 3.0 x16, 5.7 us):
  // 11.4 us, 15.75e9 B/s x 0.877 (the preset's host_link.efficiency, which the uplink inherits) = 13.81275e9 B/s.
  const auto c = zerosim::test::preset_cluster("dgx2-v100", {"cluster.gpus_per_node=1"});
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(c);
  const Route r = route(p.gpus[0], p.cpu_of(0));
  REQUIRE(r.links.size() == 2);
  CHECK(crosses(r, "node0-pcie-switch0"));
  CHECK(r.latency == Approx(2 * 5.7e-6).epsilon(kTol));
  CHECK(r.min_bandwidth() == Approx(15.75e9 * 0.877).epsilon(kTol));
}
