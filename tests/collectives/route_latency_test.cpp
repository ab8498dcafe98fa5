// The route latency a collective's steps pay beyond NCCL's per-step table (TuneTopology::intra_step_extra and
// inter_step_extra): values worked out by hand from NVIDIA/nccl src/graph/tuning.cc v2.27.7-1 (baseLat, hwLat) and
// the fabrics' route closed forms (docs/collectives.md "Fabrics between nodes").
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/engine/collective_choice.hpp"
#include "tests/support/preset_cluster.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::collectives;
using program::CollectiveKind;

namespace {
constexpr double kUs = 1e-6;
constexpr double kTol = 1e-9;
} // namespace

TEST_CASE("table_phase_latency: every ring step pays its route latency beyond NCCL's table", "[collectives][unit]") {
  // 8 nodes x 8 GPUs on NVLink, ring all-gather: 63 steps, 7 across nodes (tuning.cc nInterSteps = nNodes - 1).
  TuneTopology t;
  t.ranks = 64;
  t.gpus_per_node = 8;
  t.intra = LinkClass::NVLINK;
  t.intra_bandwidth = ByteRate(300e9);
  t.inter_bandwidth = ByteRate(50e9);
  t.intra_step_extra = Seconds(1 * kUs);
  t.inter_step_extra = Seconds(86 * kUs);
  const auto ph = plan(CollectiveKind::ALL_GATHER, Algorithm::RING, Bytes(1e6), 64, 8);
  REQUIRE(ph.size() == 1);
  REQUIRE(ph[0].latency_steps == 63);
  REQUIRE(ph[0].inter_node_steps == 7);
  // Simple: intra step max(3.4, 3 x 1 us net overhead) + 1 = 4.4 us; network step 14 + 86 = 100 us.
  // 56 x 4.4 + 7 x 100 = 246.4 + 700 = 946.4 us.
  CHECK(table_phase_latency(ph[0], Algorithm::RING, Protocol::SIMPLE, t).value() == Approx(946.4 * kUs).epsilon(kTol));
  // LL: intra max(0.6, 1 us) + 1 = 2 us; network 2.7 + 86 = 88.7 us. 56 x 2 + 7 x 88.7 = 112 + 620.9 = 732.9 us.
  CHECK(table_phase_latency(ph[0], Algorithm::RING, Protocol::LL, t).value() == Approx(732.9 * kUs).epsilon(kTol));
  // Without extras the table alone: 56 x 3.4 + 7 x 14 = 288.4 us.
  t.intra_step_extra = Seconds(0);
  t.inter_step_extra = Seconds(0);
  CHECK(table_phase_latency(ph[0], Algorithm::RING, Protocol::SIMPLE, t).value() == Approx(288.4 * kUs).epsilon(kTol));
}

TEST_CASE("tune_topology: the presets' latencies are NCCL's table, so their step extras are 0", "[collectives][unit]") {
  // dgx-h100: NVLink 3.4 us, NIC 14 us = hwLat NVLink / NET Ring Simple; 8 nodes under one leaf switch.
  const auto h100 = engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=8"}));
  CHECK(h100.intra_step_extra.value() == 0);
  CHECK(h100.inter_step_extra.value() == 0);
  // 4x-rtx4090-pcie, no p2p: the staged hop crosses two PCIe links of 5.7 us, NCCL's PCI latency each.
  const auto pcie = engine::tune_topology(test::preset_cluster("4x-rtx4090-pcie"));
  CHECK(pcie.intra_step_extra.value() == 0);
}

TEST_CASE("tune_topology: a slower NIC adds its excess over NCCL's 14 us to every network step",
          "[collectives][unit]") {
  // Node crossing l + L = 3.4 + 100 us against the reference 3.4 + 14 us: 86 us per network step.
  const auto t =
      engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=8", "cluster.nic.latency=100us"}));
  CHECK(t.inter_step_extra.value() == Approx(86 * kUs).epsilon(kTol));
  CHECK(t.intra_step_extra.value() == 0);
  // Below the reference the table's 14 us stands: no extra, no credit.
  const auto fast =
      engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=8", "cluster.nic.latency=5us"}));
  CHECK(fast.inter_step_extra.value() == 0);
}

TEST_CASE("tune_topology: a slower NVLink adds its excess over NCCL's 3.4 us to every step", "[collectives][unit]") {
  // Intra-node hop 10 us against 3.4 us: 6.6 us; a node crossing l + L = 10 + 14 against 3.4 + 14: 6.6 us too.
  const auto t =
      engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=2", "cluster.intra_node.latency=10us"}));
  CHECK(t.intra_step_extra.value() == Approx(6.6 * kUs).epsilon(kTol));
  CHECK(t.inter_step_extra.value() == Approx(6.6 * kUs).epsilon(kTol));
}

TEST_CASE("tune_topology: the fabric's longer ring hops count by how many the ring crosses", "[collectives][unit]") {
  // Fat tree, 64 nodes, leaf radix 32: ring hops 31 -> 32 and 63 -> 0 cross the spine (l + 2L = 31.4 us), the other
  // 62 stay under a leaf (l + L = 17.4 us): mean extra 2 x 14 / 64 = 0.4375 us per network step.
  const auto fat = engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=64"}));
  CHECK(fat.inter_step_extra.value() == Approx(2 * 14.0 / 64 * kUs).epsilon(kTol));
  // 2-D torus of 16 nodes (4 x 4, dimension 0 fastest): the row changes 3 -> 4, 7 -> 8, 11 -> 12 and 15 -> 0 take
  // 2 links (l + 2L), the other 12 hops one: 4 x 14 / 16 = 3.5 us.
  const auto torus =
      engine::tune_topology(test::preset_cluster("dgx-h100", {"cluster.nodes=16", "cluster.fabric=torus"}));
  CHECK(torus.inter_step_extra.value() == Approx(4 * 14.0 / 16 * kUs).epsilon(kTol));
}
