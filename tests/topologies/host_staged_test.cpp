// Host-staged GPU -> GPU transfers (p2p: false) and link sharing: simulated times against latency + size /
// bandwidth worked out by hand (CM02 + crosstraffic:0 + TCP-gamma:0: reference/simgrid_notes.md §3).
// One SimGrid Engine per process: ctest runs each TEST_CASE in its own process.
#include "tests/support/simgrid_engine.hpp"
#include "topologies/builder/platform_builder.hpp"

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <catch2/catch.hpp>

#include <vector>

namespace sg4 = simgrid::s4u;
using namespace zerosim;

namespace {

constexpr double kTol = 1e-9; // SimGrid reproduces latency + size / bandwidth exactly

/// 4 GPUs without P2P: PCIe 31.5e9 B/s per direction, 5 us each; host bridge 100e9 B/s shared, 1 us.
scenario::ClusterSpec pcie_box() {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 4;
  c.intra_node = {ByteRate(31.5e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(31.5e9), Seconds(5e-6), "test"};
  c.p2p = false;
  c.host_bridge = {ByteRate(100e9), Seconds(1e-6), "test"};
  c.gpu.memory = Bytes(24e9);
  return c;
}

} // namespace

TEST_CASE("build_platform: without p2p a GPU-GPU copy crosses two PCIe links and the host bridge",
          "[topologies][unit]") {
  // One 1e9 B copy alone: latency 5 + 1 + 5 us; bottleneck min(31.5e9, 100e9) = 31.5e9 B/s:
  // 11e-6 + 1e9 / 31.5e9 s.
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(pcie_box());
  const auto t = zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.gpus[1]}}, 1e9);
  REQUIRE(t[0] == Approx(11e-6 + 1e9 / 31.5e9).epsilon(kTol));
}

TEST_CASE("build_platform: four host-staged ring flows share the host bridge, which becomes the bottleneck",
          "[topologies][unit]") {
  // Ring 0->1->2->3->0: each PCIe link carries one flow per direction (31.5e9 B/s), the shared bridge carries all
  // four: 100e9 / 4 = 25e9 B/s each < 31.5e9. Each 1e9 B flow: 11e-6 + 1e9 / 25e9 s.
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(pcie_box());
  const auto t = zerosim::test::concurrent_transfer_times(
      *e, {{p.gpus[0], p.gpus[1]}, {p.gpus[1], p.gpus[2]}, {p.gpus[2], p.gpus[3]}, {p.gpus[3], p.gpus[0]}}, 1e9);
  for (double x : t)
    REQUIRE(x == Approx(11e-6 + 1e9 / 25e9).epsilon(kTol));
}

TEST_CASE("build_platform: two concurrent flows on one link each get half its bandwidth", "[topologies][unit]") {
  // NVSwitch-like node (p2p): GPU 0 sends 1e9 B to GPU 1 and to GPU 2 at once. Both cross GPU 0's up-link
  // (300e9 B/s): 150e9 each; the down-links (300e9) are not limiting. 2 us + 1e9 / 150e9 s each.
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 4;
  c.intra_node = {ByteRate(300e9), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu.memory = Bytes(80e9);
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(c);
  const auto t = zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.gpus[1]}, {p.gpus[0], p.gpus[2]}}, 1e9);
  REQUIRE(t[0] == Approx(2e-6 + 1e9 / 150e9).epsilon(kTol));
  REQUIRE(t[1] == Approx(2e-6 + 1e9 / 150e9).epsilon(kTol));
}

TEST_CASE("build_platform: link efficiency scales the simulated bandwidth", "[topologies][unit]") {
  // 300e9 B/s NVSwitch at efficiency 0.8 (NCCL topo.h: 20 of 25 GB/s per NVLink3 link): 2 us + 1e9 / 240e9 s.
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 2;
  c.intra_node = {ByteRate(300e9), Seconds(2e-6), "test", 0.8};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu.memory = Bytes(80e9);
  auto e = zerosim::test::make_simgrid_engine();
  auto p = topology::build_platform(c);
  const auto t = zerosim::test::concurrent_transfer_times(*e, {{p.gpus[0], p.gpus[1]}}, 1e9);
  REQUIRE(t[0] == Approx(2e-6 + 1e9 / 240e9).epsilon(kTol));
}
