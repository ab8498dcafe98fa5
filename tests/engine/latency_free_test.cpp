// A collective phase whose NCCL-modelled latency is below one hop of its route starts its flows without route latency
// (collective_runner.cpp flow_phase). Two checks against hand calculations: (1) the mark belongs to the phase's own
// comms, so a concurrent comm of the same size between the same GPUs on another stream keeps its route latency,
// and (2) a DIRECT (fan-out) phase follows the same rule, so `flow` and `analytic` agree on it. One simulation per
// TEST_CASE (SimGrid's Engine is a process singleton).
#include "sim/engine/engine.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;

namespace {

constexpr double kUs = 1e-6;

// ---- (1) Two concurrent all-gathers on one pair of GPUs, one latency-free and one not.
// 1 node x 2 GPUs on a star: 100e9 B/s NVLink of 3.4 us (NCCL's Ring/Simple hwLat, so TuneTopology's step extras are
// 0), protocol chosen by NCCL's model (no bandwidth caps: the test GPU names no compute capability). Ring all-gather
// over n = 2: one phase of one step, bytes per rank S/2.
//   S = 600 kB:  LL 6.6 + 0.6 + 300e3 / (0.5 x 100e9) = 13.2 us < Simple 8.4 + 3.4 + 3 = 14.8 us < LL128 19.16 us:
//                LL; its phase's modelled latency 0.6 us is below the 3.4 us route, so its flows go latency-free.
//   S = 1.2 MB:  Simple 8.4 + 3.4 + 6 = 17.8 us < LL 7.2 + 12 = 19.2 us < LL128 15.9 + 6.52 = 22.4 us: Simple, whose
//                3.4 us phase latency is the route's: its flows pay it.
// Both put 600 kB on the wire per rank (LL sends 8 B per 4 B of data), so the two comms from GPU 0 to GPU 1 (and
// back) have the same hosts and size. The LL stream first waits 8.4 - 6.6 = 1.8 us, so that after their base latencies
// both start their flows at t0 = 8.4 us.
// Per direction, on the one 100e9 B/s link: the LL flow runs alone during the Simple flow's 3.4 us latency
// (340 kB), then the two share the link at 50e9 B/s each (CM02 shares in inverse proportion to the flows' route
// latencies, the same 3.4 us route for both; a latency-free flow given SimGrid's penalty 1 instead would get almost
// nothing next to the Simple flow: LL ending at t0 + 12.6, Simple at t0 + 9.4): the LL flow's last 260 kB take
// 5.2 us (ends at t0 + 8.6 us); the Simple flow then has 600 - 260 = 340 kB left at the full 100e9 B/s: 3.4 us (ends
// at t0 + 12 us).
// LL then sleeps its modelled 0.6 us; Simple has paid its 3.4 us and sleeps nothing.
// (Were the latency given to the wrong comm: Simple would end at t0 + 8.6, LL at t0 + 12 + 0.6.)
constexpr double kT0 = 8.4 * kUs;
constexpr double kLLEnd = kT0 + 8.6 * kUs + 0.6 * kUs; // 17.6 us
constexpr double kSimpleEnd = kT0 + 12.0 * kUs; // 20.4 us

scenario::ClusterSpec pair_node() {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 2;
  c.intra_node = {ByteRate(100e9), Seconds(3.4 * kUs), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1 * kUs), "test"};
  c.gpu = zerosim::test::test_gpu(80e9);
  c.collective_algorithm = "ring";
  c.collective_protocol = "auto";
  return c;
}

struct PairEnds {
  double ll = 0; ///< s, end of the latency-free (LL) all-gather on rank 0
  double simple = 0; ///< s, end of the Simple all-gather on rank 0
};

/// Runs the two all-gathers on two comm streams, the LL one's stream created first when `ll_first`.
PairEnds run_pair(bool ll_first) {
  ProgramBuilder b;
  const auto g_ll = b.add_group("dp"); // two communicators, so the two all-gathers run at the same time
  const auto g_simple = b.add_group("world");
  StreamId ll = 0;
  StreamId simple = 0;
  if (ll_first) {
    ll = b.add_stream("comm-ll", StreamKind::COMM);
    simple = b.add_stream("comm-simple", StreamKind::COMM);
  } else {
    simple = b.add_stream("comm-simple", StreamKind::COMM);
    ll = b.add_stream("comm-ll", StreamKind::COMM);
  }
  b.cpu(ll, Phase::OTHER, "wait", Seconds(8.4 * kUs - 6.6 * kUs));
  b.collective(ll, Phase::PARAM_GATHER, "allgather-ll", CollectiveKind::ALL_GATHER, Bytes(600e3), g_ll);
  b.collective(simple, Phase::PARAM_GATHER, "allgather-simple", CollectiveKind::ALL_GATHER, Bytes(1.2e6), g_simple);
  engine::EngineOptions o;
  o.fidelity = scenario::Fidelity::FLOW;
  o.fold = scenario::FoldPolicy::OFF;
  o.trace_ranks = 1;
  const auto r = engine::run_simulation(pair_node(), b.build(1), o);
  REQUIRE(r.finished);
  PairEnds e;
  int found = 0;
  for (const auto& s : r.spans) {
    if (s.op_kind != 1) // Collective
      continue;
    (s.stream == ll ? e.ll : e.simple) = s.end;
    ++found;
  }
  REQUIRE(found == 2);
  return e;
}

// ---- (2) A DIRECT phase whose modelled latency is below its route's.
// 4 GPUs without p2p (host-staged): PCIe 31.5e9 B/s of 5 us, host bridge 100e9 B/s of 1 us: a GPU -> GPU route is
// 5 + 1 + 5 = 11 us. NCCL's PCI Ring/Simple hwLat is 5.7 us, and TuneTopology's reference route (PCIe links at 5.7 us,
// bridge 0) is 11.4 us, so the step extra is 0: DIRECT (Simple only) models its one phase at 5.7 us, below the route.
// All-gather of S = 1024 B: each rank sends S/4 = 256 B to each of the 3 others, all 12 flows through the bridge:
// 3072 B / 100e9 = 30.72 ns (each PCIe link carries 768 B at 31.5e9: 24.4 ns, not the bottleneck); analytic prices
// 768 B at the host-staged 100e9 / 4 = 25e9 B/s per rank: the same 30.72 ns.
// Expected: base 8.4 + 5.7 + 0.03072 = 14.13072 us at both fidelities (before: flow paid the 11 us route).
constexpr double kDirectExpected = (8.4 + 5.7) * kUs + 768.0 / 25e9;

double run_direct(scenario::Fidelity f) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 4;
  c.intra_node = {ByteRate(31.5e9), Seconds(5 * kUs), "test"};
  c.host_link = {ByteRate(31.5e9), Seconds(5 * kUs), "test"};
  c.p2p = false;
  c.host_bridge = {ByteRate(100e9), Seconds(1 * kUs), "test"};
  c.gpu = zerosim::test::test_gpu(80e9);
  c.collective_algorithm = "direct";
  c.collective_protocol = "auto";
  ProgramBuilder b;
  b.add_group("dp");
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::PARAM_GATHER, "allgather", CollectiveKind::ALL_GATHER, Bytes(1024));
  engine::EngineOptions o;
  o.fidelity = f;
  o.fold = scenario::FoldPolicy::OFF;
  o.trace_ranks = 0;
  const auto r = engine::run_simulation(c, b.build(1), o);
  REQUIRE(r.finished);
  return r.end_time;
}

} // namespace

TEST_CASE("Latency-free flow: the LL stream created first, each same-size comm of a GPU pair pays its own latency",
          "[engine][validation]") {
  const PairEnds e = run_pair(true);
  CHECK(e.ll == Approx(kLLEnd).epsilon(1e-4));
  CHECK(e.simple == Approx(kSimpleEnd).epsilon(1e-4));
}

TEST_CASE(
    "Latency-free flow: the Simple stream created first, each same-size comm of a GPU pair pays its own "
    "latency",
    "[engine][validation]") {
  const PairEnds e = run_pair(false);
  CHECK(e.ll == Approx(kLLEnd).epsilon(1e-4));
  CHECK(e.simple == Approx(kSimpleEnd).epsilon(1e-4));
}

TEST_CASE("Latency-free flow: a DIRECT phase modelled below its route costs its modelled latency",
          "[engine][validation]") {
  CHECK(run_direct(scenario::Fidelity::FLOW) == Approx(kDirectExpected).epsilon(1e-4));
}

TEST_CASE("Latency-free analytic: a DIRECT phase modelled below its route costs its modelled latency",
          "[engine][validation]") {
  CHECK(run_direct(scenario::Fidelity::ANALYTIC) == Approx(kDirectExpected).epsilon(1e-4));
}
