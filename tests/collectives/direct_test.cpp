// The direct (all-to-all) algorithm and full-mesh nodes: plans, NCCL-style pricing and choice, the three fidelities
// against the closed form, a switch star, and the 8 x MI300X all-reduce of reference/hardware.md. Each simulation
// runs in its own process (SimGrid: one engine per process; in_child forks when a case compares several).
#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/error.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include "tests/support/in_child.hpp"
#include "tests/support/one_collective.hpp"
#include "tests/support/preset_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace zerosim;
using collectives::Algorithm;
using collectives::PeerScope;
using collectives::Protocol;
using program::CollectiveKind;

namespace {

constexpr double kTol = 1e-12; // pure arithmetic
constexpr double kFidelityTol = 0.01; // simulation vs closed form (the 1 %)
constexpr double kValidationTol = 0.15; // the acceptance band
constexpr double kOneGiB = 1073741824.0;

scenario::ClusterSpec preset(const std::string& topology, const std::vector<std::string>& overrides = {}) {
  return zerosim::test::preset_cluster(topology, overrides);
}

/// Simulated seconds of one `kind` of `size` bytes on `cluster`.
double simulate(const scenario::ClusterSpec& cluster, CollectiveKind kind, double size, scenario::Fidelity fidelity) {
  return zerosim::test::one_collective_seconds(cluster, kind, size, zerosim::test::engine_options(fidelity));
}

/// simulate() in a forked child (several simulations in one test case).
double simulate_in_child(const scenario::ClusterSpec& cluster, CollectiveKind kind, double size,
                         scenario::Fidelity fidelity) {
  return zerosim::test::in_child([&] { return simulate(cluster, kind, size, fidelity); });
}

/// A full-mesh tuner topology of n GPUs, 64 GB/s per peer link (MI300X Infinity Fabric, hardware.md).
collectives::TuneTopology mesh_topology(int n) {
  collectives::TuneTopology t;
  t.ranks = n;
  t.gpus_per_node = n;
  t.intra = collectives::LinkClass::NVLINK;
  t.intra_bandwidth = ByteRate(64e9);
  t.mesh = true;
  return t;
}

} // namespace

TEST_CASE("plan: direct reduce-scatter and all-gather are one phase of (n-1)/n S over n-1 concurrent peers",
          "[collectives][unit]") {
  // 8 ranks, S = 1 GiB: each rank sends S/8 = 134217728 B to each of 7 peers, 7 x 134217728 = 939524096 B, 1 step.
  for (CollectiveKind kind : {CollectiveKind::REDUCE_SCATTER, CollectiveKind::ALL_GATHER}) {
    const auto p = collectives::plan(kind, Algorithm::DIRECT, Bytes(kOneGiB), 8);
    REQUIRE(p.size() == 1);
    CHECK(p[0].bytes_per_rank.value() == Approx(939524096.0).epsilon(kTol));
    CHECK(p[0].fan_out == 7);
    CHECK(p[0].peer_offset == 1);
    CHECK(p[0].latency_steps == 1);
    CHECK(p[0].scope == PeerScope::NODE);
    CHECK(p[0].inter_node_steps == 0);
  }
}

TEST_CASE("plan: direct all-reduce is reduce-scatter then all-gather, 2(n-1)/n S in 2 steps", "[collectives][unit]") {
  // Two phases of 939524096 B: 1879048192 B = 2 x 7/8 x 1 GiB, as the ring; 2 latency steps instead of 14.
  const auto p = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 8);
  REQUIRE(p.size() == 2);
  for (const auto& ph : p) {
    CHECK(ph.bytes_per_rank.value() == Approx(939524096.0).epsilon(kTol));
    CHECK(ph.fan_out == 7);
    CHECK(ph.latency_steps == 1);
  }
  CHECK(collectives::wire_bytes_per_rank(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 8).value() ==
        Approx(1879048192.0).epsilon(kTol));
  // Two ranks: one peer, so the direct exchange is the ring's (S/2 per phase).
  const auto two = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 2);
  REQUIRE(two.size() == 2);
  CHECK(two[0].fan_out == 1);
  CHECK(two[0].bytes_per_rank.value() == Approx(kOneGiB / 2).epsilon(kTol));
  CHECK(collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 1).empty());
}

TEST_CASE("plan: direct runs on one node only", "[collectives][unit]") {
  REQUIRE_THROWS_WITH(collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 16, 8),
                      Catch::Contains("direct algorithm runs on one node") && Catch::Contains("2 nodes"));
  REQUIRE_NOTHROW(collectives::plan(CollectiveKind::ALL_GATHER, Algorithm::DIRECT, Bytes(kOneGiB), 8, 8));
}

TEST_CASE("analytic_time: direct on a full mesh moves each phase at (n-1) links", "[collectives][unit]") {
  // All-reduce, 8 ranks, links of 64e9 B/s, alpha 3.4 us: 2 x (7/8 S) / (7 x 64e9) + 2 x 3.4e-6
  // = 2 x 134217728 / 64e9 + 6.8e-6 = 4.194304e-3 + 6.8e-6 = 4.201104e-3 s.
  CHECK(collectives::analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 8, ByteRate(64e9),
                                   Seconds(3.4e-6))
            .value() == Approx(4.201104e-3).epsilon(kTol));
  // Reduce-scatter: 134217728 / 64e9 + 3.4e-6 = 2.100552e-3 s.
  CHECK(collectives::analytic_time(CollectiveKind::REDUCE_SCATTER, Algorithm::DIRECT, Bytes(kOneGiB), 8, ByteRate(64e9),
                                   Seconds(3.4e-6))
            .value() == Approx(2.100552e-3).epsilon(kTol));
}

TEST_CASE("nccl tuning: direct is priced as Ring/Simple with one hop per phase and all links of a mesh",
          "[collectives][unit]") {
  const auto mesh = mesh_topology(8);
  const auto ph = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::DIRECT, Bytes(kOneGiB), 8);
  // Mesh: 7 flows on 7 links of 64e9 -> 448e9 B/s; a star (mesh false): the GPU's one link, 64e9 B/s.
  CHECK(collectives::phase_bandwidth(ph[0], mesh).value() == Approx(448e9).epsilon(kTol));
  auto star = mesh;
  star.mesh = false;
  CHECK(collectives::phase_bandwidth(ph[0], star).value() == Approx(64e9).epsilon(kTol));
  // NCCL tuning.cc v2.27.7-1 Ring/Simple: base 8.4 us, hwLat NVLink 3.4 us per hop.
  CHECK(collectives::base_latency(Algorithm::DIRECT, Protocol::SIMPLE).value() == Approx(8.4e-6).epsilon(kTol));
  CHECK(collectives::table_phase_latency(ph[0], Algorithm::DIRECT, Protocol::SIMPLE, mesh).value() ==
        Approx(3.4e-6).epsilon(kTol));
  // 8.4e-6 + 2 x 3.4e-6 + 2 x 939524096 / 448e9 = 15.2e-6 + 4.194304e-3 = 4.209504e-3 s.
  CHECK(collectives::model_time(CollectiveKind::ALL_REDUCE, {Algorithm::DIRECT, Protocol::SIMPLE}, Bytes(kOneGiB), mesh)
            .value() == Approx(4.209504e-3).epsilon(kTol));
}

TEST_CASE("choose: direct only on a mesh node, Simple only, deterministic", "[collectives][unit]") {
  const auto mesh = mesh_topology(8);
  for (CollectiveKind kind : {CollectiveKind::ALL_REDUCE, CollectiveKind::REDUCE_SCATTER, CollectiveKind::ALL_GATHER}) {
    // 1 GiB: direct/Simple 15.2 us + 4.19 ms beats ring/Simple 8.4 + 14 x 3.4 us + 29.4 ms (all-reduce).
    const auto c = collectives::choose(kind, Bytes(kOneGiB), mesh);
    CHECK(c.algorithm == Algorithm::DIRECT);
    CHECK(c.protocol == Protocol::SIMPLE);
  }
  auto star = mesh;
  star.mesh = false;
  for (double s : {1024.0, 1048576.0, kOneGiB})
    CHECK(collectives::choose(CollectiveKind::ALL_REDUCE, Bytes(s), star).algorithm != Algorithm::DIRECT);
  const Algorithm direct = Algorithm::DIRECT;
  const Protocol ll = Protocol::LL;
  const auto forced = collectives::choose(CollectiveKind::ALL_GATHER, Bytes(4096), mesh, &direct, &ll);
  CHECK(forced.algorithm == Algorithm::DIRECT);
  CHECK(forced.protocol == Protocol::SIMPLE);
  CHECK(collectives::choose(CollectiveKind::ALL_REDUCE, Bytes(kOneGiB), mesh).algorithm ==
        collectives::choose(CollectiveKind::ALL_REDUCE, Bytes(kOneGiB), mesh).algorithm);
}

TEST_CASE("scenario: intra_node_topology mesh without p2p or on several nodes is a one-line input error",
          "[collectives][unit]") {
  REQUIRE_THROWS_WITH(preset("mi300x-8", {"cluster.p2p=false"}),
                      Catch::Contains("cluster.intra_node_topology") && Catch::Contains("p2p"));
  REQUIRE_THROWS_WITH(preset("mi300x-8", {"cluster.nodes=2"}),
                      Catch::Contains("cluster.intra_node_topology") && Catch::Contains("one node"));
  REQUIRE_THROWS_WITH(preset("dgx-h100", {"cluster.nodes=2", "cluster.collective_algorithm=direct"}),
                      Catch::Contains("cluster.collective_algorithm") && Catch::Contains("one node"));
  // mesh on an NVLS preset (hgx-h200 sets nvls: true): reported at the mesh key the user set (<cli> here), naming
  // cluster.nvls, and before the p2p error of the same line (a new user met the preset's line first).
  REQUIRE_THROWS_WITH(preset("hgx-h200", {"cluster.intra_node_topology=mesh"}),
                      Catch::Contains("<cli>: cluster.intra_node_topology") && Catch::Contains("cluster.nvls"));
  REQUIRE_THROWS_WITH(preset("hgx-h200", {"cluster.intra_node_topology=mesh", "cluster.p2p=false"}),
                      Catch::Contains("<cli>: cluster.intra_node_topology") && Catch::Contains("p2p"));
  const auto c = preset("mi300x-8");
  CHECK(c.intra_node_topology == scenario::IntraNodeTopology::MESH);
  CHECK(engine::tune_topology(c).mesh);
  CHECK(!engine::tune_topology(preset("dgx-h100")).mesh);
}

TEST_CASE("direct: all-reduce of 1 GiB on an 8-GPU mesh, flow = chunk = analytic = closed form",
          "[collectives][unit]") {
  // mi300x-8, NCCL's choice (direct/Simple): 8.4 us base + 2 phases x (3.4 us + 7/8 GiB / (7 x 64e9))
  // = 15.2e-6 + 4.194304e-3 = 4.209504e-3 s.
  const auto c = preset("mi300x-8");
  REQUIRE(engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(kOneGiB)).algorithm == Algorithm::DIRECT);
  const double closed = 4.209504e-3;
  for (auto f : {scenario::Fidelity::FLOW, scenario::Fidelity::CHUNK, scenario::Fidelity::ANALYTIC}) {
    const double t = simulate_in_child(c, CollectiveKind::ALL_REDUCE, kOneGiB, f);
    INFO("fidelity " << static_cast<int>(f) << ": " << t);
    CHECK(t == Approx(closed).epsilon(kFidelityTol));
  }
}

TEST_CASE("direct: reduce-scatter of 1 GiB on an 8-GPU mesh, flow = chunk = analytic = closed form",
          "[collectives][unit]") {
  // Ideal protocol: 3.4 us + 1 GiB / 8 / 64e9 = 3.4e-6 + 2.097152e-3 = 2.100552e-3 s.
  const auto c = preset("mi300x-8", {"cluster.collective_algorithm=direct", "cluster.collective_protocol=none"});
  const double closed = 2.100552e-3;
  for (auto f : {scenario::Fidelity::FLOW, scenario::Fidelity::CHUNK, scenario::Fidelity::ANALYTIC}) {
    const double t = simulate_in_child(c, CollectiveKind::REDUCE_SCATTER, kOneGiB, f);
    INFO("fidelity " << static_cast<int>(f) << ": " << t);
    CHECK(t == Approx(closed).epsilon(kFidelityTol));
  }
}

TEST_CASE("direct: on a switch star it is no faster than the ring for large messages", "[collectives][unit]") {
  // hgx-h200 without NVLS, ideal protocol, all-reduce of 1 GiB on 8 GPUs, each GPU one link of 18 x 20.6 =
  // 370.8e9 B/s into the NVSwitch. Both move 2 x 7/8 GiB per GPU through that link:
  // ring 1879048192 / 370.8e9 + 14 x 3.4e-6 = 5.067552e-3 + 47.6e-6 = 5.115152e-3 s;
  // direct (7 flows share the link) 5.067552e-3 + 2 x 3.4e-6 = 5.074352e-3 s: only 12 hop latencies (0.8 %) less.
  const auto direct = preset("hgx-h200", {"cluster.nvls=false", "cluster.collective_algorithm=direct",
                                          "cluster.collective_protocol=none"});
  const auto ring = preset("hgx-h200", {"cluster.nvls=false", "cluster.collective_algorithm=ring",
                                        "cluster.collective_protocol=none"});
  const double bandwidth_term = 1879048192.0 / 370.8e9;
  for (auto f : {scenario::Fidelity::FLOW, scenario::Fidelity::ANALYTIC}) {
    const double td = simulate_in_child(direct, CollectiveKind::ALL_REDUCE, kOneGiB, f);
    const double tr = simulate_in_child(ring, CollectiveKind::ALL_REDUCE, kOneGiB, f);
    INFO("fidelity " << static_cast<int>(f) << ": direct " << td << " s, ring " << tr << " s");
    CHECK(td == Approx(bandwidth_term + 6.8e-6).epsilon(kFidelityTol));
    CHECK(tr == Approx(bandwidth_term + 47.6e-6).epsilon(kFidelityTol));
    CHECK(td >= bandwidth_term);
    CHECK(td >= tr * (1 - kFidelityTol));
  }
}

TEST_CASE("validation: 8xMI300X all-reduce 4 GiB busbw, 8 vs 2 GPUs, ratio within 15% of 312.91 / 47.67",
          "[collectives][validation]") {
  // hardware.md (ml-engineering network README): 2 GPUs 47.67 GB/s, 8 GPUs 312.91 GB/s busbw at 4 GiB.
  // Model (mi300x-8: 64 GB/s per peer link, efficiency 1, NCCL's choice):
  //   8 GPUs, direct/Simple: t = 15.2e-6 + 2 x 7/8 x 4 GiB / 448e9 = 15.2e-6 + 16.777216e-3 = 16.792416e-3 s,
  //     busbw = 4294967296 / t x 1.75 = 447.59 GB/s (7 links x 64 GB/s, less the latency);
  //   2 GPUs (one link; ring and direct tie, the ring is kept): t = 15.2e-6 + 4294967296 / 64e9 = 67.124064e-3 s,
  //     busbw = 4294967296 / t x 1 = 63.99 GB/s.
  // The raw link rate is 34-43 % above both measurements (known gap, docs/collectives.md: no sourced xGMI
  // efficiency; not tuned to the measurement). Asserted: the engine equals the closed form, and the 8/2 ratio
  // 6.995 is within 15 % of the measured 6.564.
  const double s = 4 * kOneGiB;
  const double t8 = simulate_in_child(preset("mi300x-8"), CollectiveKind::ALL_REDUCE, s, scenario::Fidelity::FLOW);
  const double t2 = simulate_in_child(preset("mi300x-8", {"cluster.gpus_per_node=2"}), CollectiveKind::ALL_REDUCE, s,
                                      scenario::Fidelity::FLOW);
  REQUIRE(t8 > 0);
  REQUIRE(t2 > 0);
  const double bw8 = s / t8 * 1.75, bw2 = s / t2 * 1.0;
  std::printf("8xMI300X all_reduce 4GiB, 8 GPUs: simulated %.2f GB/s, measured 312.91 GB/s, delta %+.1f %%\n",
              bw8 / 1e9, 100 * (bw8 / 312.91e9 - 1));
  std::printf("8xMI300X all_reduce 4GiB, 2 GPUs: simulated %.2f GB/s, measured 47.67 GB/s, delta %+.1f %%\n", bw2 / 1e9,
              100 * (bw2 / 47.67e9 - 1));
  std::printf("8xMI300X 8/2 busbw ratio: simulated %.3f, measured %.3f, delta %+.1f %%\n", bw8 / bw2, 312.91 / 47.67,
              100 * (bw8 / bw2 / (312.91 / 47.67) - 1));
  CHECK(t8 == Approx(16.792416e-3).epsilon(kFidelityTol));
  CHECK(t2 == Approx(67.124064e-3).epsilon(kFidelityTol));
  CHECK(bw8 / bw2 == Approx(312.91 / 47.67).epsilon(kValidationTol));
  // The gap's direction: the raw links are an upper bound of the measurement.
  CHECK(bw8 >= 312.91e9);
  CHECK(bw2 >= 47.67e9);
}
