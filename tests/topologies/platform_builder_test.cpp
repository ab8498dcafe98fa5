// Platform builder tests: simulated transfer times against latency + size / bandwidth by hand
// (CM02 + crosstraffic:0 + TCP-gamma:0 make that exact: reference/simgrid_notes.md §3).
// One SimGrid Engine per process: ctest runs each TEST_CASE in its own process (catch_discover_tests).
#include "topologies/builder/platform_builder.hpp"
#include "tests/support/simgrid_engine.hpp"

#include "sim/error.hpp"

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <catch2/catch.hpp>

#include <algorithm>

#include <limits>

namespace sg4 = simgrid::s4u;
using namespace zerosim;

namespace {

constexpr double kTol = 1e-9;

/// A DGX-A100-like cluster built by hand: 8 GPUs per node, NVSwitch 300 GB/s per direction, 2 us;
/// PCIe 4.0 x16 25 GB/s, 1 us; 8 x 25 GB/s NICs (200 Gb/s HDR each), 5 us.
scenario::ClusterSpec dgx_like(int nodes) {
  scenario::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(300e9), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.nic = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.nics_per_node = 8;
  c.fabric = nodes > 1 ? scenario::FabricKind::FAT_TREE : scenario::FabricKind::SINGLE_SWITCH;
  c.gpu.memory = Bytes(80e9);
  return c;
}

using zerosim::test::transfer_time;

} // namespace

TEST_CASE("build_platform: GPU to GPU inside a node costs intra-node latency + S / NVLink bandwidth",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(dgx_like(2));
  REQUIRE(p.gpus.size() == 16);
  REQUIRE(p.cpus.size() == 2);
  // Hand calculation: 2e-6 s + 1e9 B / 300e9 B/s = 3.335333...e-3 s.
  const double expected = 2e-6 + 1e9 / 300e9;
  REQUIRE(transfer_time(*e, p.gpus[0], p.gpus[1], 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: GPU to GPU across nodes costs NVLink + NIC latency + S / aggregated NIC bandwidth",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(dgx_like(2));
  REQUIRE(p.gpus[8]->get_name() == "node1-gpu0");
  REQUIRE(p.cpu_of(8) == p.cpus[1]);
  // Route: nvlink0 up (1 us), leaf link up (2.5 us), leaf link down (2.5 us), nvlink8 down (1 us) = 7 us;
  // bottleneck 8 x 25e9 = 200e9 B/s (below NVLink's 300e9). 7e-6 + 1e9 / 200e9 = 5.007e-3 s.
  const double expected = 7e-6 + 1e9 / 200e9;
  REQUIRE(transfer_time(*e, p.gpus[0], p.gpus[8], 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: GPU to its CPU crosses only its own PCIe link", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(dgx_like(2));
  // 1 us + 1e9 / 25e9 = 0.040001 s.
  const double expected = 1e-6 + 1e9 / 25e9;
  REQUIRE(transfer_time(*e, p.gpus[9], p.cpu_of(9), 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: a single node has no fabric and routes GPU pairs over NVLink", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(dgx_like(1));
  REQUIRE(p.gpus.size() == 8);
  std::vector<sg4::Link*> links;
  double lat = 0;
  p.gpus[3]->route_to(p.gpus[7], links, &lat);
  REQUIRE(links.size() == 2);
  REQUIRE(lat == Approx(2e-6).epsilon(kTol));
}

// How fast a large platform builds is measured by bench/ (the 4096-GPU runs), not timed here: a wall-clock bound in
// a unit test fails on a loaded machine.
TEST_CASE("build_platform: 512 nodes build and a cross-spine route has two NIC latencies", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(dgx_like(512));
  REQUIRE(p.gpus.size() == 4096);
  REQUIRE(p.gpus[4095]->get_name() == "node511-gpu7");
  // Leaf radix 32 -> node 0 and node 511 hang from different leaf switches: 4 fabric links of 2.5 us each plus
  // the two NVLink halves (1 us each): 12 us.
  std::vector<sg4::Link*> links;
  double lat = 0;
  p.gpus[0]->route_to(p.gpus[4095], links, &lat);
  REQUIRE(lat == Approx(12e-6).epsilon(kTol));
}

TEST_CASE("build_platform: rejects an empty cluster", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = dgx_like(1);
  c.nodes = 0;
  REQUIRE_THROWS_WITH(topology::build_platform(c), Catch::Contains("nodes"));
}

namespace {
/// The ring r -> r+1 over every GPU of the built platform, measured with SimGrid's route_to; the latencies of its
/// node-crossing hops go to `crossings` and the last intra-node hop's to intra_latency.
topology::RingRouteSummary measured_ring(const topology::Platform& p, int gpus_per_node,
                                         std::vector<double>& crossings) {
  topology::RingRouteSummary s;
  s.min_bandwidth = std::numeric_limits<double>::infinity();
  const std::size_t n = p.gpus.size();
  const std::size_t g = static_cast<std::size_t>(gpus_per_node);
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<sg4::Link*> links;
    double lat = 0;
    p.gpus[r]->route_to(p.gpus[(r + 1) % n], links, &lat);
    for (const auto* l : links)
      s.min_bandwidth = std::min(s.min_bandwidth, l->get_bandwidth());
    s.max_latency = std::max(s.max_latency, lat);
    if (r / g != (r + 1) % n / g)
      crossings.push_back(lat);
    else
      s.intra_latency = lat;
  }
  std::sort(crossings.begin(), crossings.end());
  return s;
}

void check_ring_summary(const scenario::ClusterSpec& c) {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(c);
  std::vector<double> crossings;
  const auto built = measured_ring(p, c.gpus_per_node, crossings);
  const auto model = topology::ring_route_summary(c);
  REQUIRE(model.min_bandwidth == Approx(built.min_bandwidth).epsilon(kTol));
  REQUIRE(model.max_latency == Approx(built.max_latency).epsilon(kTol));
  REQUIRE(model.intra_latency == Approx(built.intra_latency).epsilon(kTol));
  // Every node-crossing hop's latency, as route_to gives it (the summary lists them grouped and ascending).
  std::vector<double> listed;
  for (const auto& [lat, count] : model.crossing_latencies)
    listed.insert(listed.end(), static_cast<std::size_t>(count), lat);
  REQUIRE(listed.size() == crossings.size());
  for (std::size_t i = 0; i < listed.size(); ++i)
    CHECK(listed[i] == Approx(crossings[i]).epsilon(kTol));
}
} // namespace

TEST_CASE("ring_route_summary: equals route_to on one node", "[topologies][unit]") { check_ring_summary(dgx_like(1)); }

TEST_CASE("ring_route_summary: equals route_to on 4 nodes under one leaf switch", "[topologies][unit]") {
  check_ring_summary(dgx_like(4)); // 2 + 5 us, min(300e9, 8 x 25e9 = 200e9) B/s
}

TEST_CASE("ring_route_summary: equals route_to on 64 nodes with cross-spine hops", "[topologies][unit]") {
  check_ring_summary(dgx_like(64)); // leaf radix 32: 2 + 2 x 5 us
}

TEST_CASE("ring_route_summary: equals route_to without peer-to-peer (host-staged through the bridge)",
          "[topologies][unit]") {
  auto c = dgx_like(1);
  c.gpus_per_node = 4;
  c.p2p = false;
  c.host_bridge = {ByteRate(50e9), Seconds(0.5e-6), "test"};
  check_ring_summary(c); // PCIe up + bridge + PCIe down: 2 x 1 + 0.5 us, min(25e9, 50e9) B/s
}

// ---- fabrics (docs/collectives.md "Fabrics"): each builds, routes as its closed form says, and ring_route_summary
// agrees with route_to.
namespace {
scenario::ClusterSpec with_fabric(int nodes, scenario::FabricKind kind) {
  auto c = dgx_like(nodes);
  c.fabric = kind;
  return c;
}

/// Latency SimGrid's route_to gives from GPU a to GPU b.
double route_latency(const topology::Platform& p, int a, int b) {
  std::vector<sg4::Link*> links;
  double lat = 0;
  p.gpus[static_cast<std::size_t>(a)]->route_to(p.gpus[static_cast<std::size_t>(b)], links, &lat);
  return lat;
}
} // namespace

TEST_CASE("build_platform: a single switch joins any two nodes in one NIC latency", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(with_fabric(64, scenario::FabricKind::SINGLE_SWITCH));
  // NVLink halves 1 + 1 us, two switch links of 2.5 us: 7 us for every node pair.
  CHECK(route_latency(p, 0, 8) == Approx(7e-6).epsilon(kTol));
  CHECK(route_latency(p, 0, 63 * 8) == Approx(7e-6).epsilon(kTol));
}

TEST_CASE("ring_route_summary: equals route_to on a single switch", "[topologies][unit]") {
  check_ring_summary(with_fabric(16, scenario::FabricKind::SINGLE_SWITCH)); // 2 + 5 us
}

TEST_CASE("build_platform: a 3-level fat tree costs 1, 2 or 3 NIC latencies by the lowest common switch",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = with_fabric(32, scenario::FabricKind::FAT_TREE);
  c.fabric_levels = 3;
  c.fat_tree_leaf_radix = 4; // 4 nodes per leaf, 4 leaves per pod, 2 pods
  const auto p = topology::build_platform(c);
  // 2 us of NVLink plus 5 us per switch level climbed (two 2.5 us links each).
  CHECK(route_latency(p, 0, 1 * 8) == Approx(2e-6 + 5e-6).epsilon(kTol)); // same leaf
  CHECK(route_latency(p, 0, 4 * 8) == Approx(2e-6 + 10e-6).epsilon(kTol)); // same pod, other leaf
  CHECK(route_latency(p, 0, 16 * 8) == Approx(2e-6 + 15e-6).epsilon(kTol)); // other pod
}

TEST_CASE("ring_route_summary: equals route_to on a 3-level fat tree", "[topologies][unit]") {
  auto c = with_fabric(32, scenario::FabricKind::FAT_TREE);
  c.fabric_levels = 3;
  c.fat_tree_leaf_radix = 4;
  check_ring_summary(c); // 2 + 3 x 5 us (the wrap-around hop crosses pods)
}

TEST_CASE("ring_route_summary: equals route_to on a 2:1 oversubscribed fat tree", "[topologies][unit]") {
  auto c = with_fabric(16, scenario::FabricKind::FAT_TREE);
  c.fat_tree_leaf_radix = 4;
  c.fabric_oversubscription = 2;
  check_ring_summary(c); // 2 + 2 x 5 us; a ring hop is one flow per leaf uplink: full bandwidth
}

namespace {
/// Simulated seconds until both transfers (a0 -> b0 and a1 -> b1, `bytes` each, started together) end.
double two_transfers(sg4::Engine& e, sg4::Host* a0, sg4::Host* b0, sg4::Host* a1, sg4::Host* b1, double bytes) {
  double end = -1;
  sg4::Actor::create("senders", a0, [&]() {
    auto c0 = sg4::Comm::sendto_async(a0, b0, static_cast<std::uint64_t>(bytes));
    auto c1 = sg4::Comm::sendto_async(a1, b1, static_cast<std::uint64_t>(bytes));
    c0->wait();
    c1->wait();
    end = sg4::Engine::get_clock();
  });
  e.run();
  return end;
}

double cross_leaf_pair_time(double oversubscription) {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = with_fabric(4, scenario::FabricKind::FAT_TREE);
  c.fat_tree_leaf_radix = 2; // leaves {0,1} and {2,3}
  c.fabric_oversubscription = oversubscription;
  const auto p = topology::build_platform(c);
  // Both nodes of leaf 0 send to both nodes of leaf 1 at once (GPU 0 of each).
  return two_transfers(*e, p.gpus[0], p.gpus[16], p.gpus[8], p.gpus[24], 1e9);
}
} // namespace

TEST_CASE("build_platform: a non-blocking fat tree gives two cross-leaf flows full bandwidth", "[topologies][unit]") {
  // Two spines, one per flow: 2 + 10 us + 1e9 / 200e9 B/s = 0.005012 s.
  CHECK(cross_leaf_pair_time(1) == Approx(12e-6 + 1e9 / 200e9).epsilon(kTol));
}

TEST_CASE("build_platform: 2:1 oversubscription halves a cross-leaf flow's bandwidth", "[topologies][unit]") {
  // One uplink for two nodes: each flow gets 100e9 B/s: 12 us + 1e9 / 100e9 = 0.010012 s.
  CHECK(cross_leaf_pair_time(2) == Approx(12e-6 + 1e9 / 100e9).epsilon(kTol));
}

TEST_CASE("build_platform: rejects an oversubscription that does not divide the leaf radix", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = with_fabric(8, scenario::FabricKind::FAT_TREE);
  c.fat_tree_leaf_radix = 4;
  c.fabric_oversubscription = 3;
  REQUIRE_THROWS_WITH(topology::build_platform(c), Catch::Contains("fabric_oversubscription"));
}

TEST_CASE("build_platform: a torus routes the shorter way round each dimension", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto c = with_fabric(16, scenario::FabricKind::TORUS); // 2 dimensions: 4 x 4
  const auto p = topology::build_platform(c);
  // One NIC latency (5 us) per torus link plus 2 us of NVLink.
  CHECK(route_latency(p, 0, 1 * 8) == Approx(2e-6 + 5e-6).epsilon(kTol)); // (0,0) -> (1,0)
  CHECK(route_latency(p, 0, 3 * 8) == Approx(2e-6 + 5e-6).epsilon(kTol)); // (0,0) -> (3,0): wrap-around
  CHECK(route_latency(p, 0, 5 * 8) == Approx(2e-6 + 10e-6).epsilon(kTol)); // (0,0) -> (1,1)
  CHECK(route_latency(p, 0, 10 * 8) == Approx(2e-6 + 20e-6).epsilon(kTol)); // (0,0) -> (2,2)
}

TEST_CASE("ring_route_summary: equals route_to on a torus", "[topologies][unit]") {
  check_ring_summary(with_fabric(12, scenario::FabricKind::TORUS)); // 4 x 3: worst ring hop 2 links
}

TEST_CASE("build_platform: a dragonfly routes minimally through the global link of the target group",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(with_fabric(16, scenario::FabricKind::DRAGONFLY)); // 4 groups x 4 routers
  // Every dragonfly link 2.5 us (half a NIC latency), plus 2 us of NVLink. Node n = group n / 4, router n % 4;
  // the global link between groups i and j joins router j of group i and router i of group j.
  CHECK(route_latency(p, 0, 1 * 8) == Approx(2e-6 + 3 * 2.5e-6).epsilon(kTol)); // same group: up, local, down
  CHECK(route_latency(p, 1 * 8, 4 * 8) == Approx(2e-6 + 3 * 2.5e-6).epsilon(kTol)); // (0,1) -> (1,0): global only
  CHECK(route_latency(p, 0, 4 * 8) == Approx(2e-6 + 4 * 2.5e-6).epsilon(kTol)); // (0,0) -> (1,0): local + global
  CHECK(route_latency(p, 0, 5 * 8) == Approx(2e-6 + 5 * 2.5e-6).epsilon(kTol)); // (0,0) -> (1,1): local, global, local
}

TEST_CASE("ring_route_summary: equals route_to on a dragonfly", "[topologies][unit]") {
  check_ring_summary(with_fabric(12, scenario::FabricKind::DRAGONFLY)); // 3 groups x 4 routers
}

TEST_CASE("gpu_pstate_speeds: pstate k leaves 1 - k x share of the GPU, at least 1/1000", "[topologies][unit]") {
  // Share 0.2 (20 NCCL channels of 100 SMs): 1, 0.8, 0.6, 0.4, 0.2, then the 1e-3 floor up to kMaxNcclKernels.
  const auto s = topology::gpu_pstate_speeds(0.2);
  REQUIRE(s.size() == static_cast<std::size_t>(topology::kMaxNcclKernels) + 1);
  const double full = topology::kGpuHostSpeed;
  CHECK(s[0] == full);
  CHECK(s[1] == Approx(0.8 * full));
  CHECK(s[4] == Approx(0.2 * full));
  CHECK(s[5] == Approx(1e-3 * full));
  CHECK(s.back() == Approx(1e-3 * full));
  // No share: one pstate, the GPU's full speed; a share outside [0, 1] is refused.
  CHECK(topology::gpu_pstate_speeds(0.0) == std::vector<double>{full});
  CHECK_THROWS_WITH(topology::gpu_pstate_speeds(1.5), Catch::Contains("must be in [0, 1]"));
}
