// Platform builder tests: simulated transfer times against latency + size / bandwidth by hand
// (CM02 + crosstraffic:0 + TCP-gamma:0 make that exact: reference/simgrid_notes.md §3).
// One SimGrid Engine per process: ctest runs each TEST_CASE in its own process (catch_discover_tests).
#include "topologies/builder/platform_builder.hpp"

#include "sim/error.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <catch2/catch.hpp>

#include <chrono>
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

std::unique_ptr<sg4::Engine> make_engine() {
  static int argc = 1;
  static char name[] = "topologies_tests";
  static char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:warning");
  auto e = std::make_unique<sg4::Engine>(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  return e;
}

/// Simulated seconds of one `bytes` transfer from `src` to `dst` with nothing else on the network.
double transfer_time(sg4::Engine& e, sg4::Host* src, sg4::Host* dst, double bytes) {
  double elapsed = -1;
  sg4::Actor::create("sender", src, [&]() {
    const double t0 = sg4::Engine::get_clock();
    sg4::Comm::sendto(src, dst, static_cast<std::uint64_t>(bytes));
    elapsed = sg4::Engine::get_clock() - t0;
  });
  e.run();
  return elapsed;
}

} // namespace

TEST_CASE("build_platform: GPU to GPU inside a node costs intra-node latency + S / NVLink bandwidth",
          "[topologies][unit]") {
  auto e = make_engine();
  auto p = topology::build_platform(dgx_like(2));
  REQUIRE(p.gpus.size() == 16);
  REQUIRE(p.cpus.size() == 2);
  // Hand calculation: 2e-6 s + 1e9 B / 300e9 B/s = 3.335333...e-3 s.
  const double expected = 2e-6 + 1e9 / 300e9;
  REQUIRE(transfer_time(*e, p.gpus[0], p.gpus[1], 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: GPU to GPU across nodes costs NVLink + NIC latency + S / aggregated NIC bandwidth",
          "[topologies][unit]") {
  auto e = make_engine();
  auto p = topology::build_platform(dgx_like(2));
  REQUIRE(p.gpus[8]->get_name() == "node1-gpu0");
  REQUIRE(p.cpu_of(8) == p.cpus[1]);
  // Route: nvlink0 up (1 us), leaf link up (2.5 us), leaf link down (2.5 us), nvlink8 down (1 us) = 7 us;
  // bottleneck 8 x 25e9 = 200e9 B/s (below NVLink's 300e9). 7e-6 + 1e9 / 200e9 = 5.007e-3 s.
  const double expected = 7e-6 + 1e9 / 200e9;
  REQUIRE(transfer_time(*e, p.gpus[0], p.gpus[8], 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: GPU to its CPU crosses only its own PCIe link", "[topologies][unit]") {
  auto e = make_engine();
  auto p = topology::build_platform(dgx_like(2));
  // 1 us + 1e9 / 25e9 = 0.040001 s.
  const double expected = 1e-6 + 1e9 / 25e9;
  REQUIRE(transfer_time(*e, p.gpus[9], p.cpu_of(9), 1e9) == Approx(expected).epsilon(kTol));
}

TEST_CASE("build_platform: a single node has no fabric and routes GPU pairs over NVLink", "[topologies][unit]") {
  auto e = make_engine();
  auto p = topology::build_platform(dgx_like(1));
  REQUIRE(p.gpus.size() == 8);
  std::vector<sg4::Link*> links;
  double lat = 0;
  p.gpus[3]->route_to(p.gpus[7], links, &lat);
  REQUIRE(links.size() == 2);
  REQUIRE(lat == Approx(2e-6).epsilon(kTol));
}

TEST_CASE("build_platform: 512 nodes build quickly and a cross-spine route has two NIC latencies", "[topologies][unit]") {
  auto e = make_engine();
  const auto t0 = std::chrono::steady_clock::now();
  auto p = topology::build_platform(dgx_like(512));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE(p.gpus.size() == 4096);
  REQUIRE(p.gpus[4095]->get_name() == "node511-gpu7");
  CHECK(wall < 5.0);
  // Leaf radix 32 -> node 0 and node 511 hang from different leaf switches: 4 fabric links of 2.5 us each plus
  // the two NVLink halves (1 us each): 12 us.
  std::vector<sg4::Link*> links;
  double lat = 0;
  p.gpus[0]->route_to(p.gpus[4095], links, &lat);
  REQUIRE(lat == Approx(12e-6).epsilon(kTol));
}

TEST_CASE("build_platform: rejects an empty cluster", "[topologies][unit]") {
  auto e = make_engine();
  auto c = dgx_like(1);
  c.nodes = 0;
  REQUIRE_THROWS_WITH(topology::build_platform(c), Catch::Contains("nodes"));
}

namespace {
/// The ring r -> r+1 over every GPU of the built platform, measured with SimGrid's route_to.
topology::RingRouteSummary measured_ring(const topology::Platform& p) {
  topology::RingRouteSummary s{std::numeric_limits<double>::infinity(), 0.0};
  const std::size_t n = p.gpus.size();
  for (std::size_t r = 0; r < n; ++r) {
    std::vector<sg4::Link*> links;
    double lat = 0;
    p.gpus[r]->route_to(p.gpus[(r + 1) % n], links, &lat);
    for (const auto* l : links)
      s.min_bandwidth = std::min(s.min_bandwidth, l->get_bandwidth());
    s.max_latency = std::max(s.max_latency, lat);
  }
  return s;
}

void check_ring_summary(const scenario::ClusterSpec& c) {
  auto e = make_engine();
  const auto p = topology::build_platform(c);
  const auto built = measured_ring(p);
  const auto model = topology::ring_route_summary(c);
  REQUIRE(model.min_bandwidth == Approx(built.min_bandwidth).epsilon(kTol));
  REQUIRE(model.max_latency == Approx(built.max_latency).epsilon(kTol));
}
} // namespace

TEST_CASE("ring_route_summary: equals route_to on one node", "[topologies][unit]") { check_ring_summary(dgx_like(1)); }

TEST_CASE("ring_route_summary: equals route_to on 4 nodes under one leaf switch", "[topologies][unit]") {
  check_ring_summary(dgx_like(4));  // 2 + 5 us, min(300e9, 8 x 25e9 = 200e9) B/s
}

TEST_CASE("ring_route_summary: equals route_to on 64 nodes with cross-spine hops", "[topologies][unit]") {
  check_ring_summary(dgx_like(64));  // leaf radix 32: 2 + 2 x 5 us
}

TEST_CASE("ring_route_summary: equals route_to without peer-to-peer (host-staged through the bridge)",
          "[topologies][unit]") {
  auto c = dgx_like(1);
  c.gpus_per_node = 4;
  c.p2p = false;
  c.host_bridge = {ByteRate(50e9), Seconds(0.5e-6), "test"};
  check_ring_summary(c);  // PCIe up + bridge + PCIe down: 2 x 1 + 0.5 us, min(25e9, 50e9) B/s
}
