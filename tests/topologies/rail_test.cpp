// Per-GPU NICs and the rail-optimized fabric (docs/collectives.md "Rail-optimized fabrics"): routes checked with
// SimGrid's route_to against hand-computed latencies, link names and bandwidths; transfer times against
// latency + size / bandwidth (CM02 + crosstraffic:0 + TCP-gamma:0: reference/simgrid_notes.md §3).
// One SimGrid Engine per process: ctest runs each TEST_CASE in its own process.
#include "tests/support/simgrid_engine.hpp"
#include "topologies/builder/platform_builder.hpp"

#include "sim/error.hpp"

#include <simgrid/s4u.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;
using namespace zerosim;

namespace {

constexpr double kTol = 1e-9;

/// A DGX-like rail cluster by hand: 8 GPUs per node, NVLink 300 GB/s and 2 us per GPU-GPU hop; PCIe 25 GB/s, 1 us;
/// 8 NICs of 25 GB/s, 5 us: l = 2 us, L = 5 us.
scenario::ClusterSpec rail(int nodes, bool spine = true) {
  scenario::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(300e9), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.nic = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.nics_per_node = 8;
  c.fabric = scenario::FabricKind::RAIL;
  c.rail_spine = spine;
  c.gpu.memory = Bytes(80e9);
  return c;
}

struct Route {
  std::vector<std::string> links;
  double latency = 0;
  double min_bandwidth = std::numeric_limits<double>::infinity();
  /// A link of the route named `name` (split-duplex links are named "<name>_UP" / "<name>_DOWN" by SimGrid).
  [[nodiscard]] bool has(const std::string& name) const {
    return std::any_of(links.begin(), links.end(),
                       [&](const std::string& l) { return l == name || l.rfind(name + "_", 0) == 0; });
  }
  [[nodiscard]] bool has_containing(const std::string& part) const {
    return std::any_of(links.begin(), links.end(),
                       [&](const std::string& l) { return l.find(part) != std::string::npos; });
  }
};

Route route(sg4::Host* a, sg4::Host* b) {
  std::vector<sg4::Link*> links;
  Route r;
  a->route_to(b, links, &r.latency);
  for (const auto* l : links) {
    r.links.push_back(l->get_name());
    r.min_bandwidth = std::min(r.min_bandwidth, l->get_bandwidth());
  }
  return r;
}

using zerosim::test::transfer_time;

} // namespace

TEST_CASE("rail fabric: a same-rail flow crosses only the two NICs of its rail", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(rail(4));
  REQUIRE(p.gpus.size() == 32);
  // node0-gpu3 -> node2-gpu3: NIC link (l + L) / 2 = 3.5 us on each side: 7 us = l + L; bandwidth one NIC.
  const Route r = route(p.gpus[3], p.gpus[2 * 8 + 3]);
  CHECK(r.has("node0-nic3"));
  CHECK(r.has("node2-nic3"));
  CHECK_FALSE(r.has_containing("spine"));
  CHECK_FALSE(r.has_containing("nvlink"));
  CHECK(r.latency == Approx(2e-6 + 5e-6).epsilon(kTol));
  CHECK(r.min_bandwidth == Approx(25e9).epsilon(kTol));
}

TEST_CASE("rail fabric: a cross-rail flow goes through the spine", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(rail(4));
  // node0-gpu7 -> node1-gpu0: NIC 7 up, rail7 -> spine -> rail0 (two 2.5 us uplinks), NIC 0 down:
  // 3.5 + 2.5 + 2.5 + 3.5 = 12 us = l + 2L.
  const Route r = route(p.gpus[7], p.gpus[8]);
  CHECK(r.has("node0-nic7"));
  CHECK(r.has("rail7-spine"));
  CHECK(r.has("rail0-spine"));
  CHECK(r.has("node1-nic0"));
  CHECK_FALSE(r.has_containing("nvlink"));
  CHECK(r.latency == Approx(2e-6 + 2 * 5e-6).epsilon(kTol));
}

TEST_CASE("rail fabric: without a spine a cross-rail flow takes one NVLink hop to the other rail",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(rail(2, false));
  // Rail 7 and rail 0 are not joined: the route crosses one node's NVLink pair (2 us) and one rail (2 + 5 us).
  const Route r = route(p.gpus[7], p.gpus[8]);
  CHECK_FALSE(r.has_containing("spine"));
  CHECK(r.has_containing("nvlink"));
  CHECK(r.latency == Approx(2e-6 + 2e-6 + 5e-6).epsilon(kTol));
}

TEST_CASE("rail fabric: GPUs of a node still talk over NVLink and reach their CPU over their own PCIe link",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(rail(2));
  const Route nv = route(p.gpus[9], p.gpus[14]);
  CHECK(nv.has("node1-gpu1-nvlink"));
  CHECK(nv.has("node1-gpu6-nvlink"));
  CHECK(nv.latency == Approx(2e-6).epsilon(kTol));
  CHECK(nv.min_bandwidth == Approx(300e9).epsilon(kTol));
  const Route host = route(p.gpus[9], p.cpu_of(9));
  CHECK(host.has("node1-gpu1-pcie"));
  CHECK(host.latency == Approx(1e-6).epsilon(kTol));
  // 1e9 B at 25e9 B/s + 1 us.
  CHECK(transfer_time(*e, p.gpus[9], p.cpu_of(9), 1e9) == Approx(1e-6 + 1e9 / 25e9).epsilon(kTol));
}

TEST_CASE("rail fabric: eight same-rail flows of one node run at eight times one NIC's bandwidth",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(rail(2));
  // GPU i of node 0 sends 1e9 B to GPU i of node 1, all eight at once: each has its own NIC pair, so all end at
  // 7 us + 1e9 / 25e9 s = 0.040007 s, i.e. 8 x 25e9 B/s through the node.
  double end = -1;
  sg4::Actor::create("senders", p.gpus[0], [&]() {
    std::vector<sg4::CommPtr> comms;
    for (int i = 0; i < 8; ++i)
      comms.push_back(sg4::Comm::sendto_async(p.gpus[static_cast<std::size_t>(i)],
                                              p.gpus[static_cast<std::size_t>(8 + i)], 1'000'000'000));
    for (auto& c : comms)
      c->wait();
    end = sg4::Engine::get_clock();
  });
  e->run();
  CHECK(end == Approx(7e-6 + 1e9 / 25e9).epsilon(kTol));
}

TEST_CASE("ring_route_summary: on a rail fabric the node-crossing hop is the rail-aligned route",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto c = rail(4);
  const auto p = topology::build_platform(c);
  const auto s = topology::ring_route_summary(c);
  // The engine splits a node-crossing ring flow over the 8 rails (node k GPU i -> node k+1 GPU i), so the hop's
  // latency is route_to of a same-rail pair and its bandwidth 8 NICs, capped by NVLink: min(300e9, 8 x 25e9).
  CHECK(s.max_latency == Approx(route(p.gpus[8 + 2], p.gpus[16 + 2]).latency).epsilon(kTol));
  CHECK(s.max_latency == Approx(7e-6).epsilon(kTol));
  CHECK(s.min_bandwidth == Approx(200e9).epsilon(kTol));
}

TEST_CASE("per-GPU NICs on a fat tree: a GPU leaves its node through its own NIC", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = rail(4);
  c.fabric = scenario::FabricKind::FAT_TREE;
  c.nic_per_gpu = true;
  const auto p = topology::build_platform(c);
  // node0-gpu5 -> node3-gpu2 (4 nodes under one leaf switch): NIC 5 of node 0 in place of the NVLink half (1 us),
  // two fat-tree links of 2.5 us, NIC 2 of node 3 (1 us): 7 us = l + L, as through the gateway; bandwidth one NIC
  // (the fat-tree links carry 8 x 25e9).
  const Route r = route(p.gpus[5], p.gpus[3 * 8 + 2]);
  CHECK(r.has("node0-nic5"));
  CHECK(r.has("node3-nic2"));
  CHECK_FALSE(r.has_containing("nvlink"));
  CHECK(r.min_bandwidth == Approx(25e9).epsilon(kTol));
  CHECK(r.latency == Approx(2e-6 + 5e-6).epsilon(kTol));
}

TEST_CASE("per-GPU NICs: two GPUs share a NIC when a node has half as many NICs as GPUs", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = rail(2);
  c.gpus_per_node = 16; // DGX-2: 16 GPUs, 8 NICs, GPU i -> NIC i / 2
  REQUIRE(topology::nic_of_gpu(c, 0) == 0);
  REQUIRE(topology::nic_of_gpu(c, 1) == 0);
  REQUIRE(topology::nic_of_gpu(c, 15) == 7);
  const auto p = topology::build_platform(c);
  CHECK(route(p.gpus[3], p.gpus[16 + 3]).has("node0-nic1"));
  // Two GPUs of one NIC still talk over NVLink, not through their shared rail switch.
  CHECK(route(p.gpus[2], p.gpus[3]).has("node0-gpu2-nvlink"));
}

TEST_CASE("per-GPU NICs: rejects NICs that do not split the GPUs evenly", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = rail(2);
  c.nics_per_node = 3;
  REQUIRE_THROWS_WITH(topology::build_platform(c), Catch::Contains("do not split"));
}

TEST_CASE("ring_route_summary: with per-GPU NICs on a fat tree the node-crossing hop is the same-index route",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = rail(64);
  c.fabric = scenario::FabricKind::FAT_TREE; // leaf radix 32: the wrap-around hop crosses the spine
  c.nic_per_gpu = true;
  const auto p = topology::build_platform(c);
  const auto s = topology::ring_route_summary(c);
  // node 63 GPU 0 -> node 0 GPU 0: NIC (1 us), leaf, spine, leaf (4 x 2.5 us), NIC (1 us) = 12 us = l + 2L;
  // bandwidth: the split hop's 8 NICs, min(300e9, 8 x 25e9) = 200e9.
  CHECK(s.max_latency == Approx(route(p.gpus[63 * 8], p.gpus[0]).latency).epsilon(kTol));
  CHECK(s.max_latency == Approx(2e-6 + 2 * 5e-6).epsilon(kTol));
  CHECK(s.min_bandwidth == Approx(200e9).epsilon(kTol));
}
