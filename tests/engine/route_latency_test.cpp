// flow and analytic fidelity charge a collective's route latency on every step of its critical path (beyond NCCL's
// per-step table, collectives::TuneTopology::inter_step_extra): an 8-node ring all-gather against its hand-derived
// closed form. One simulation per TEST_CASE (SimGrid's Engine is a process singleton); flow and analytic are held to
// the same closed form, so they agree with each other.
#include "sim/engine/engine.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;

namespace {

constexpr double kUs = 1e-6;
constexpr double kTol = 1e-6;
constexpr double kBytes = 1048576; // 1 MiB

/// 8 nodes x 8 GPUs: NVLink 300e9 B/s and 3.4 us (NCCL's hwLat NVLink Ring/Simple), one 50e9 B/s NIC per node of
/// latency `nic_latency`, all 8 nodes under one leaf switch (node crossing l + L). Ring, Simple protocol, no NCCL
/// bandwidth caps (the test GPU has no compute capability), 1 us network overhead (no CPU named).
scenario::ClusterSpec cluster(double nic_latency) {
  scenario::ClusterSpec c;
  c.nodes = 8;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(300e9), Seconds(3.4 * kUs), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1 * kUs), "test"};
  c.nic = {ByteRate(50e9), Seconds(nic_latency), "test"};
  c.nics_per_node = 1;
  c.fabric = scenario::FabricKind::FAT_TREE;
  c.gpu = zerosim::test::test_gpu(80e9);
  c.collective_algorithm = "ring";
  c.collective_protocol = "simple";
  return c;
}

double run(double nic_latency, scenario::Fidelity f) {
  ProgramBuilder b;
  b.add_group("dp");
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::PARAM_GATHER, "allgather", CollectiveKind::ALL_GATHER, Bytes(kBytes));
  engine::EngineOptions o;
  o.fidelity = f;
  o.fold = scenario::FoldPolicy::OFF;
  o.trace_ranks = 0;
  const auto r = engine::run_simulation(cluster(nic_latency), b.build(1), o);
  REQUIRE(r.finished);
  return r.end_time;
}

// Ring all-gather over 64 ranks: 63 steps, 7 of them across nodes (tuning.cc nInterSteps = nNodes - 1).
// Bytes: 63/64 x 1 MiB through the 50e9 B/s NIC = 1032192 / 50e9 = 20.64384 us.
constexpr double kWire = 63.0 / 64.0 * kBytes / 50e9;
// NIC at 5 us: the crossing (3.4 + 5 us) is below NCCL's network step (14 us), so NCCL's table stands:
// base 8.4 + 56 x 3.4 + 7 x 14 = 8.4 + 190.4 + 98 = 296.8 us.
constexpr double kAt5us = 296.8 * kUs + kWire;
// NIC at 100 us: each network step pays 14 us + the crossing's excess over NCCL's reference (3.4 + 100) - (3.4 + 14)
// = 86 us, i.e. 100 us: 8.4 + 190.4 + 7 x 100 = 898.8 us.
constexpr double kAt100us = 898.8 * kUs + kWire;
// Raising the NIC latency by d = 200 us adds d on each of the 7 network steps: 7 x 200 = 1400 us.
constexpr double kAt300us = kAt100us + 7 * 200 * kUs;

} // namespace

TEST_CASE("Route latency analytic: NIC below NCCL's network step leaves the table's latency", "[engine][validation]") {
  REQUIRE(run(5 * kUs, scenario::Fidelity::ANALYTIC) == Approx(kAt5us).epsilon(kTol));
}

TEST_CASE("Route latency flow: NIC below NCCL's network step leaves the table's latency", "[engine][validation]") {
  REQUIRE(run(5 * kUs, scenario::Fidelity::FLOW) == Approx(kAt5us).epsilon(kTol));
}

TEST_CASE("Route latency analytic: an 8-node ring all-gather pays a 100 us NIC on each network step",
          "[engine][validation]") {
  REQUIRE(run(100 * kUs, scenario::Fidelity::ANALYTIC) == Approx(kAt100us).epsilon(kTol));
}

TEST_CASE("Route latency flow: an 8-node ring all-gather pays a 100 us NIC on each network step",
          "[engine][validation]") {
  REQUIRE(run(100 * kUs, scenario::Fidelity::FLOW) == Approx(kAt100us).epsilon(kTol));
}

TEST_CASE("Route latency analytic: 200 us more NIC latency adds 7 x 200 us", "[engine][validation]") {
  REQUIRE(run(300 * kUs, scenario::Fidelity::ANALYTIC) == Approx(kAt300us).epsilon(kTol));
}

TEST_CASE("Route latency flow: 200 us more NIC latency adds 7 x 200 us", "[engine][validation]") {
  REQUIRE(run(300 * kUs, scenario::Fidelity::FLOW) == Approx(kAt300us).epsilon(kTol));
}

TEST_CASE("Route latency chunk: the lock-stepped ring pays the crossing on every step, at least flow's time",
          "[engine][validation]") {
  // Every step waits for the slowest hop, 3.4 + 100 us: 63 x 103.4 = 6514.2 us + base, above flow's 919.4 us.
  const double t = run(100 * kUs, scenario::Fidelity::CHUNK);
  CHECK(t >= 63 * 103.4 * kUs);
  CHECK(t >= kAt100us);
}

namespace {

/// A 1 KiB tree all-reduce with LL over 2 of cluster()'s nodes (16 ranks), NIC at `nic_latency`.
double run_tree(double nic_latency, scenario::Fidelity f) {
  auto c = cluster(nic_latency);
  c.nodes = 2;
  c.collective_algorithm = "tree";
  c.collective_protocol = "ll";
  ProgramBuilder b;
  b.add_group("dp");
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1024));
  engine::EngineOptions o;
  o.fidelity = f;
  o.fold = scenario::FoldPolicy::OFF;
  o.trace_ranks = 0;
  const auto r = engine::run_simulation(c, b.build(1), o);
  REQUIRE(r.finished);
  return r.end_time;
}

// NCCL's tree model (tuning.cc v2.27.7-1): baseLat + per phase (reduce up, broadcast down) the intra-node steps at
// hwLat NVLink and the network steps at hwLat NET, Tree/LL: base 6.8 us; each phase has gpus_per_node - 1 = 7
// NVLink steps of 0.6 us and log2(nodes) = 1 network step of 5.0 us: 6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2 us.
// Bytes: each phase moves S = 1024 B at the crossing's 50e9 B/s x the tree's LL factor 0.92 / 3.8 (no caps: the test
// GPU names no compute capability): 2 x 1024 x 3.8 / (0.92 x 50e9) = 0.16918 us. A node crossing at the reference
// (3.4 + 14 us) adds nothing; before, one crossing's route latency (17.4 us) replaced each phase's 9.2 us: 41.77 us.
constexpr double kTreeBytes = 2 * 1024 * 3.8 / (0.92 * 50e9);
constexpr double kTreeAt14us = (6.8 + 2 * (7 * 0.6 + 5.0)) * kUs + kTreeBytes;
// NIC at 20 us: each phase's network step also pays the crossing's excess (3.4 + 20) - (3.4 + 14) = 6 us.
constexpr double kTreeAt20us = kTreeAt14us + 2 * 6 * kUs;

} // namespace

TEST_CASE("Route latency flow: a 2-node tree all-reduce with LL costs NCCL's tree latency, not a crossing per phase",
          "[engine][validation]") {
  CHECK(run_tree(14 * kUs, scenario::Fidelity::FLOW) == Approx(kTreeAt14us).epsilon(1e-4));
}

TEST_CASE("Route latency analytic: a 2-node tree all-reduce with LL costs NCCL's tree latency",
          "[engine][validation]") {
  CHECK(run_tree(14 * kUs, scenario::Fidelity::ANALYTIC) == Approx(kTreeAt14us).epsilon(1e-4));
}

TEST_CASE("Route latency chunk: a 2-node tree all-reduce with LL runs as at flow fidelity", "[engine][validation]") {
  CHECK(run_tree(14 * kUs, scenario::Fidelity::CHUNK) == Approx(kTreeAt14us).epsilon(1e-4));
}

TEST_CASE("Route latency flow: a tree's network steps pay the NIC's latency beyond NCCL's 14 us",
          "[engine][validation]") {
  CHECK(run_tree(20 * kUs, scenario::Fidelity::FLOW) == Approx(kTreeAt20us).epsilon(1e-4));
}
