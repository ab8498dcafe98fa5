// Full-mesh nodes (cluster.intra_node_topology mesh): one dedicated split-duplex link per GPU pair. Routes checked
// with SimGrid's route_to, transfer times against latency + size / bandwidth by hand (CM02 + crosstraffic:0 +
// TCP-gamma:0 make that exact: reference/simgrid_notes.md §3). One SimGrid Engine per process (one TEST_CASE each).
#include "tests/support/simgrid_engine.hpp"
#include "topologies/builder/platform_builder.hpp"

#include "sim/error.hpp"

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

namespace sg4 = simgrid::s4u;
using namespace zerosim;

namespace {

constexpr double kTol = 1e-9;

/// An MI300X-like node built by hand: 8 GPUs on a full mesh of 64 GB/s per peer link and direction, 3.4 us;
/// PCIe 5.0 x16 63 GB/s, 5.7 us.
scenario::ClusterSpec mesh_node() {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.intra_node_topology = scenario::IntraNodeTopology::MESH;
  c.intra_node = {ByteRate(64e9), Seconds(3.4e-6), "test"};
  c.host_link = {ByteRate(63e9), Seconds(5.7e-6), "test"};
  c.gpu.memory = Bytes(192e9);
  return c;
}

} // namespace

TEST_CASE("build_platform: on a mesh the route between two GPUs is exactly their own link of the per-peer bandwidth",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(mesh_node());
  REQUIRE(p.gpus.size() == 8);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) {
      if (i == j)
        continue;
      INFO("gpu " << i << " -> gpu " << j);
      std::vector<sg4::Link*> links;
      double lat = 0;
      p.gpus[static_cast<std::size_t>(i)]->route_to(p.gpus[static_cast<std::size_t>(j)], links, &lat);
      REQUIRE(links.size() == 1);
      const std::string pair = "node0-gpu" + std::to_string(std::min(i, j)) + "-gpu" + std::to_string(std::max(i, j));
      CHECK(links[0]->get_name().rfind(pair + "-link", 0) == 0);
      CHECK(links[0]->get_bandwidth() == Approx(64e9).epsilon(kTol));
      CHECK(lat == Approx(3.4e-6).epsilon(kTol));
    }
  // Split duplex: the two directions of a pair are different SimGrid links.
  std::vector<sg4::Link*> fwd, back;
  double lat = 0;
  p.gpus[2]->route_to(p.gpus[5], fwd, &lat);
  p.gpus[5]->route_to(p.gpus[2], back, &lat);
  CHECK(fwd[0] != back[0]);
  // GPU -> CPU is unchanged: the GPU's own PCIe link.
  std::vector<sg4::Link*> host;
  lat = 0;
  p.gpus[3]->route_to(p.cpu_of(3), host, &lat);
  REQUIRE(host.size() == 1);
  CHECK(host[0]->get_bandwidth() == Approx(63e9).epsilon(kTol));
  CHECK(lat == Approx(5.7e-6).epsilon(kTol));
}

TEST_CASE("build_platform: on a mesh a GPU sends to its seven peers at once at the full per-link rate",
          "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto p = topology::build_platform(mesh_node());
  // Seven flows of 1e9 B from GPU 0, one per peer link: none shares a link, so each ends at
  // 3.4e-6 + 1e9 / 64e9 = 15.6284e-3 s (on a switch star they would share GPU 0's link: 7x longer).
  std::vector<double> end(7, -1);
  sg4::Actor::create("sender", p.gpus[0], [&]() {
    std::vector<sg4::CommPtr> comms;
    for (int j = 1; j < 8; ++j)
      comms.push_back(sg4::Comm::sendto_async(p.gpus[0], p.gpus[static_cast<std::size_t>(j)], 1000000000));
    for (int j = 0; j < 7; ++j) {
      comms[static_cast<std::size_t>(j)]->wait();
      end[static_cast<std::size_t>(j)] = sg4::Engine::get_clock();
    }
  });
  e->run();
  for (double t : end)
    CHECK(t == Approx(3.4e-6 + 1e9 / 64e9).epsilon(kTol));
}

TEST_CASE("ring_route_summary: equals route_to on a mesh node", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  const auto c = mesh_node();
  const auto p = topology::build_platform(c);
  double min_bw = std::numeric_limits<double>::infinity(), max_lat = 0;
  for (std::size_t r = 0; r < 8; ++r) {
    std::vector<sg4::Link*> links;
    double lat = 0;
    p.gpus[r]->route_to(p.gpus[(r + 1) % 8], links, &lat);
    for (const auto* l : links)
      min_bw = std::min(min_bw, l->get_bandwidth());
    max_lat = std::max(max_lat, lat);
  }
  const auto model = topology::ring_route_summary(c);
  CHECK(model.min_bandwidth == Approx(min_bw).epsilon(kTol));
  CHECK(model.max_latency == Approx(max_lat).epsilon(kTol));
}

TEST_CASE("build_platform: a mesh without p2p or on several nodes is rejected naming the key", "[topologies][unit]") {
  auto e = zerosim::test::make_simgrid_engine();
  auto no_p2p = mesh_node();
  no_p2p.p2p = false;
  REQUIRE_THROWS_WITH(topology::build_platform(no_p2p),
                      Catch::Contains("cluster.intra_node_topology") && Catch::Contains("p2p"));
  auto two_nodes = mesh_node();
  two_nodes.nodes = 2;
  two_nodes.nics_per_node = 1;
  two_nodes.nic = {ByteRate(50e9), Seconds(14e-6), "test"};
  two_nodes.fabric = scenario::FabricKind::SINGLE_SWITCH;
  REQUIRE_THROWS_WITH(topology::build_platform(two_nodes),
                      Catch::Contains("cluster.intra_node_topology") && Catch::Contains("one node"));
}
