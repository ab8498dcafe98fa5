// Collectives on per-GPU NICs and the rail-optimized fabric (docs/collectives.md "Rail-optimized fabrics"): a
// node-crossing ring flow is split over the node's NICs (NCCL's rail-aligned channels), the hierarchical algorithm's
// inter-node ring of GPU i stays on rail i. Full engine runs against hand-computed closed forms; ideal protocol
// (collective_protocol none: the platform's own hop latencies) unless stated. One simulation per TEST_CASE.
#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include "tests/support/one_collective.hpp"
#include "tests/support/preset_cluster.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace zerosim;
using program::CollectiveKind;

namespace {

constexpr double kFidelityTol = 0.01; // simulation vs closed form (latency rounding of the hand forms)

/// 2 nodes x 8 GPUs by hand, NVLink 10e12 B/s (never the bottleneck) and l = 2 us per GPU-GPU hop, 8 NICs of
/// 25e9 B/s (200 Gb/s HDR) and L = 5 us, rail fabric with a spine.
scenario::ClusterSpec rail_cluster(int nodes = 2, int nics = 8) {
  scenario::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.gpu.memory = Bytes(80e9);
  c.intra_node = {ByteRate(10e12), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.nic = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.nics_per_node = nics;
  c.fabric = scenario::FabricKind::RAIL;
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

double run_time(const scenario::ClusterSpec& c, CollectiveKind kind, double size,
                scenario::Fidelity fidelity = scenario::Fidelity::FLOW,
                scenario::FoldPolicy fold = scenario::FoldPolicy::OFF) {
  const double t = zerosim::test::one_collective_seconds(c, kind, size, zerosim::test::engine_options(fidelity, fold));
  REQUIRE(t > 0);
  return t;
}

/// Ring all-reduce on the rail cluster by hand: n = 16 ranks, S = 1e9 B. Every rank sends 2·15/16·S; the two
/// node-crossing hops split it over `nics` NICs of 25e9 B/s (the NVLink hops are 400x faster), so the time is
/// 2·15/16·S / (nics x 25e9) + 30 hops x (l + L = 7 us) (the slowest hop's latency on each of the 30 steps).
double ring_by_hand(int nics) { return 2.0 * 15 / 16 * 1e9 / (nics * 25e9) + 30 * 7e-6; }

} // namespace

TEST_CASE("rail fabric: inter-node ring all-reduce busbw with 8 rail NICs is 8 times one NIC's bandwidth",
          "[collectives][unit]") {
  // Hand calculation: busbw = S / t x 2·15/16 with t = ring_by_hand(8) = 9.375 ms + 0.21 ms = 9.585 ms:
  // 195.6e9 B/s, i.e. 8 x 25e9 = 200e9 B/s less the latency term (2.2 %).
  const double t = run_time(rail_cluster(), CollectiveKind::ALL_REDUCE, 1e9);
  REQUIRE(t == Approx(ring_by_hand(8)).epsilon(kFidelityTol));
  const double busbw = 1e9 / t * 2 * 15 / 16;
  CHECK(busbw == Approx(8 * 25e9).epsilon(0.03));
}

TEST_CASE("rail fabric: with one NIC per node the same ring runs at one NIC's bandwidth", "[collectives][unit]") {
  // One NIC (rail 0) for all 8 GPUs: t = 2·15/16·1e9 / 25e9 + 30 x 7 us = 75.21 ms, 8x the 8-rail time's
  // bandwidth term.
  auto c = rail_cluster(2, 1);
  const double t = run_time(c, CollectiveKind::ALL_REDUCE, 1e9);
  REQUIRE(t == Approx(ring_by_hand(1)).epsilon(kFidelityTol));
}

TEST_CASE("rail fabric: hierarchical all-reduce keeps GPU i's inter-node traffic on rail i", "[collectives][unit]") {
  // Intra reduce-scatter: 7/8·S / 10e12 + 7 x 2 us; inter all-reduce of S/8 among same-index GPUs on 2 nodes, each
  // over its own NIC: 2·1/2·(S/8) / 25e9 + 2 x 7 us; intra all-gather like the reduce-scatter. S = 1e9 B:
  // 2 x (87.5 us + 14 us) + 5 ms + 14 us = 5.217 ms; the node moves S/8 per GPU x 8 GPUs at 8 x 25e9 B/s.
  auto c = rail_cluster();
  c.collective_algorithm = "hierarchical";
  const double s = 1e9;
  const double t = 2 * (0.875 * s / 10e12 + 7 * 2e-6) + (s / 8) / 25e9 + 2 * 7e-6;
  REQUIRE(run_time(c, CollectiveKind::ALL_REDUCE, s) == Approx(t).epsilon(kFidelityTol));
}

TEST_CASE("rail fabric: chunk fidelity agrees with the split ring's closed form", "[collectives][unit]") {
  CHECK(run_time(rail_cluster(), CollectiveKind::ALL_REDUCE, 1e9, scenario::Fidelity::CHUNK) ==
        Approx(ring_by_hand(8)).epsilon(kFidelityTol));
}

TEST_CASE("rail fabric: analytic fidelity prices the rail-aligned ring", "[collectives][unit]") {
  // The world ring's node-crossing hop is rail-aligned (l + L = 7 us at 8 NICs), not the cross-rail route through
  // the spine (l + 2L) that SimGrid gives for node k GPU 7 -> node k+1 GPU 0.
  CHECK(run_time(rail_cluster(), CollectiveKind::ALL_REDUCE, 1e9, scenario::Fidelity::ANALYTIC) ==
        Approx(ring_by_hand(8)).epsilon(kFidelityTol));
}

namespace {
/// 4 nodes x 8 GPUs, n = 32: 2·31/32·1e9 / (8 x 25e9) + 62 x 7 us = 10.122 ms.
double ring4_by_hand() { return 2.0 * 31 / 32 * 1e9 / (8 * 25e9) + 62 * 7e-6; }
} // namespace

TEST_CASE("rail fabric: an unfolded 4-node ring matches its closed form", "[collectives][unit]") {
  CHECK(run_time(rail_cluster(4), CollectiveKind::ALL_REDUCE, 1e9) == Approx(ring4_by_hand()).epsilon(kFidelityTol));
}

TEST_CASE("rail fabric: rank folding applies and gives the unfolded ring's time", "[collectives][unit]") {
  // Folding simulates 2 nodes and keeps the world's sizes and steps; the rail fabric is symmetric and non-blocking,
  // so the folded run equals the same closed form as the unfolded one.
  const auto c = rail_cluster(4);
  CHECK(engine::simulated_ranks(c, engine::EngineOptions{}) == 16);
  CHECK(run_time(c, CollectiveKind::ALL_REDUCE, 1e9, scenario::Fidelity::FLOW, scenario::FoldPolicy::AUTO) ==
        Approx(ring4_by_hand()).epsilon(kFidelityTol));
}

TEST_CASE("per-GPU NICs on a fat tree: the ring's node crossing uses all the node's NICs", "[collectives][unit]") {
  // Same cluster on a fat tree whose nodes reach it through per-GPU NICs: the split ring equals the rail ring.
  auto c = rail_cluster();
  c.fabric = scenario::FabricKind::FAT_TREE;
  c.nic_per_gpu = true;
  REQUIRE(run_time(c, CollectiveKind::ALL_REDUCE, 1e9) == Approx(ring_by_hand(8)).epsilon(kFidelityTol));
}

namespace {
scenario::ClusterSpec preset(const std::string& topology, const std::vector<std::string>& overrides = {}) {
  return zerosim::test::preset_cluster(topology, overrides);
}
} // namespace

TEST_CASE("scenario: the DGX presets give every GPU its own NIC and a rail fabric loads", "[collectives][unit]") {
  // hardware.md / presets: DGX-A100 8 x 200 Gb/s HDR, DGX-H100 8 x 400 Gb/s NDR, DGX-2 8 x 100 Gb/s EDR.
  const auto a100 = preset("dgx-a100", {"cluster.nodes=2"});
  CHECK(a100.nic_per_gpu);
  CHECK(a100.nics_per_node == 8);
  CHECK(a100.nic.bandwidth.value() == Approx(25e9));
  const auto h100 = preset("dgx-h100", {"cluster.nodes=2", "cluster.fabric=rail", "cluster.rail_spine=false"});
  CHECK(h100.fabric == scenario::FabricKind::RAIL);
  CHECK_FALSE(h100.rail_spine);
  CHECK(h100.nic.bandwidth.value() == Approx(50e9));
  const auto dgx2 = preset("dgx2-v100", {"cluster.nodes=2"});
  CHECK(dgx2.nic_per_gpu);
  CHECK(dgx2.nic.bandwidth.value() == Approx(12.5e9));
}

TEST_CASE("scenario: per-GPU NICs that do not split the GPUs evenly are an input error", "[collectives][unit]") {
  REQUIRE_THROWS_WITH(preset("dgx-a100", {"cluster.nodes=2", "cluster.nics_per_node=3"}),
                      Catch::Contains("cluster.nics_per_node") && Catch::Contains("do not split"));
  REQUIRE_THROWS_WITH(preset("dgx-a100", {"cluster.nodes=2", "cluster.nics_per_node=3", "cluster.fabric=rail",
                                          "cluster.nic_per_gpu=false"}),
                      Catch::Contains("cluster.nics_per_node"));
}

namespace {
/// 2 x dgx-h100 (per-GPU NICs on the fat tree), ring all-reduce of 1 GiB, ideal protocol, by hand: the ring is
/// NVLink-bound (18 x 20.6 = 370.8e9 B/s < 8 x 50e9 through the NICs): 2·15/16·2^30 / 370.8e9 + 30 hops x
/// (3.4 us NVLink + 14 us NIC) = 5.4296 ms + 0.522 ms = 5.9516 ms.
double dgx_h100_ring_by_hand() { return 2.0 * 15 / 16 * 1073741824.0 / 370.8e9 + 30 * 17.4e-6; }
double dgx_h100_ring(scenario::Fidelity f) {
  return run_time(preset("dgx-h100",
                         {"cluster.nodes=2", "cluster.collective_algorithm=ring", "cluster.collective_protocol=none"}),
                  CollectiveKind::ALL_REDUCE, 1073741824.0, f);
}
} // namespace

TEST_CASE("per-GPU NICs: a 2 x dgx-h100 ring at flow fidelity stays NVLink-bound", "[collectives][unit]") {
  CHECK(dgx_h100_ring(scenario::Fidelity::FLOW) == Approx(dgx_h100_ring_by_hand()).epsilon(kFidelityTol));
}

TEST_CASE("per-GPU NICs: a 2 x dgx-h100 ring at chunk fidelity stays NVLink-bound (PXN hop)", "[collectives][unit]") {
  // Without the PXN NVLink flow a node-crossing step would run at 8 x 50e9 through the NICs, faster than NVLink:
  // 5.53 ms, 5 % below the closed form.
  CHECK(dgx_h100_ring(scenario::Fidelity::CHUNK) == Approx(dgx_h100_ring_by_hand()).epsilon(kFidelityTol));
}

TEST_CASE("per-GPU NICs: a 2 x dgx-a100 ring is NIC-bound at InfiniBand's payload rate", "[collectives][unit]") {
  // The preset sets no nic.efficiency, so each 25e9 B/s HDR NIC moves 4096 B of data per 4096 + 26 B packet
  // (LRH 8 + BTH 12 + ICRC 4 + VCRC 2): 8 x 25e9 x 4096 / 4122 = 198.738e9 B/s per node, below NVLink's
  // 12 x 20 = 240e9. 2·15/16·2^30 / 198.738e9 + 30 hops x (3.4 + 14 us) = 10.1302 + 0.522 = 10.6522 ms (10.5883 ms
  // at the line rate).
  const double by_hand = 2.0 * 15 / 16 * 1073741824.0 / (8 * 25e9 * 4096.0 / 4122.0) + 30 * 17.4e-6;
  CHECK(by_hand == Approx(10.6522e-3).epsilon(1e-5));
  const auto c =
      preset("dgx-a100", {"cluster.nodes=2", "cluster.collective_algorithm=ring", "cluster.collective_protocol=none"});
  CHECK(run_time(c, CollectiveKind::ALL_REDUCE, 1073741824.0) == Approx(by_hand).epsilon(1e-6));
}

TEST_CASE("per-GPU NICs: a tree all-reduce with LL at chunk fidelity finishes (no cross-phase deadlock)",
          "[collectives][unit]") {
  // Regression: the tree's broadcast phase (peer -1) runs while neighbours are still in the reduce phase (peer +1).
  // A rank receiving a split transfer takes no mailbox message, so a message of the other phase must not wait in its
  // mailbox. The run must finish; at chunk fidelity every step pays its own latencies, so it cannot beat NCCL's
  // modelled tree/LL time (tuning.cc), which is its lower bound here.
  const auto c =
      preset("dgx-h100", {"cluster.nodes=2", "cluster.collective_algorithm=tree", "cluster.collective_protocol=ll"});
  const double t = run_time(c, CollectiveKind::ALL_REDUCE, 1048576.0, scenario::Fidelity::CHUNK);
  CHECK(t >= collectives::model_time(CollectiveKind::ALL_REDUCE,
                                     {collectives::Algorithm::TREE, collectives::Protocol::LL}, Bytes(1048576.0),
                                     engine::tune_topology(c))
                 .value());
}
