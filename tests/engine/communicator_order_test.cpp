// One NCCL communicator runs its kernels in the order the host issued them, whatever their stream (NCCL
// src/enqueue.cc l.180-184 @v2.7.8-1, l.964-986 @v2.18.1-1): on each rank, a group's collective number k + 1
// (program::Collective::seq) starts after its number k ended. Collectives of two communicators run at the same time
// and share the links. Simulated times against hand calculations; one simulation per TEST_CASE (SimGrid's Engine is
// a process singleton).
#include "sim/engine/engine.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;

namespace {

constexpr double kTol = 1e-6; // closed forms that SimGrid reproduces exactly (reference/simgrid_notes.md §3)

/// One node of 8 GPUs on a star: B = 25e9 B/s per direction, α = 5 us per hop; explicit ring, ideal protocol.
scenario::ClusterSpec star8() {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu = zerosim::test::test_gpu(80e9);
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

// Ring all-reduce of S = 1e9 B on N = 8 alone: 2(N-1)/N·S/B + 2(N-1)·α = 2·7/8·1e9/25e9 + 14·5e-6 = 0.07007 s.
constexpr double kRing8 = 2.0 * 7.0 / 8.0 * 1e9 / 25e9 + 14 * 5e-6;
// Two such all-reduces at once on two communicators: every link carries both flows at half rate, so the bandwidth
// term doubles and the 14 hop latencies are paid once: 2 x 0.07 + 14·5e-6 = 0.14007 s for both.
constexpr double kRing8Pair = 2 * 2.0 * 7.0 / 8.0 * 1e9 / 25e9 + 14 * 5e-6;
// The host thread's delay before the first-issued all-reduce's stream reaches it.
constexpr double kDelay = 0.1;

struct Ends {
  double end = 0; ///< s, end of the run
  double first_start = 0; ///< s, rank 0's span of the first-issued all-reduce
  double second_start = 0; ///< s, rank 0's span of the second-issued one
};

/// Two all-reduces of 1e9 B on two comm streams, emitted (issued) in the order "first", "second", on one group when
/// `shared`, else on two. With `delay_first`, the first one's stream first spends kDelay on host work.
Ends run_two(bool shared, bool delay_first, scenario::Fidelity fidelity = scenario::Fidelity::FLOW) {
  ProgramBuilder b;
  const auto g1 = b.add_group("dp");
  const auto g2 = shared ? g1 : b.add_group("world");
  const auto s1 = b.add_stream("comm1", StreamKind::COMM);
  const auto s2 = b.add_stream("comm2", StreamKind::COMM);
  if (delay_first)
    b.cpu(s1, Phase::OTHER, "host", Seconds(kDelay));
  b.collective(s1, Phase::GRAD_REDUCE, "first", CollectiveKind::ALL_REDUCE, Bytes(1e9), g1);
  b.collective(s2, Phase::GRAD_REDUCE, "second", CollectiveKind::ALL_REDUCE, Bytes(1e9), g2);
  engine::EngineOptions o;
  o.fidelity = fidelity;
  const auto r = engine::run_simulation(star8(), b.build(1), o);
  REQUIRE(r.finished);
  Ends e;
  e.end = r.end_time;
  int found = 0;
  for (const auto& s : r.spans) {
    if (s.op_kind != 1) // Collective
      continue;
    (s.stream == s1 ? e.first_start : e.second_start) = s.start;
    ++found;
  }
  REQUIRE(found == 2);
  return e;
}

} // namespace

TEST_CASE("communicator order: two collectives of one communicator on two streams take the sum of their times",
          "[engine][unit]") {
  // The second waits for the first: [0, kRing8] then [kRing8, 2 kRing8] = 0.14014 s.
  const Ends e = run_two(true, false);
  CHECK(e.first_start == Approx(0.0).margin(1e-12));
  CHECK(e.second_start == Approx(kRing8).epsilon(kTol));
  CHECK(e.end == Approx(2 * kRing8).epsilon(kTol));
}

TEST_CASE("communicator order: two communicators on two streams overlap and share the links", "[engine][unit]") {
  // Both start at 0 and end together at kRing8Pair = 0.14007 s (70 us before the serialised 0.14014 s).
  const Ends e = run_two(false, false);
  CHECK(e.first_start == Approx(0.0).margin(1e-12));
  CHECK(e.second_start == Approx(0.0).margin(1e-12));
  CHECK(e.end == Approx(kRing8Pair).epsilon(kTol));
}

TEST_CASE("communicator order: a later-issued collective waits for an earlier one whose stream is behind",
          "[engine][unit]") {
  // Issue order, not arrival order: the second-issued all-reduce's stream reaches it at 0, but it starts only when
  // the first-issued one, reached at 0.1 s, has ended: 0.1 + kRing8 = 0.17007 s; the run ends at
  // 0.1 + 2 kRing8 = 0.24014 s.
  const Ends e = run_two(true, true);
  CHECK(e.first_start == Approx(kDelay).epsilon(kTol));
  CHECK(e.second_start == Approx(kDelay + kRing8).epsilon(kTol));
  CHECK(e.end == Approx(kDelay + 2 * kRing8).epsilon(kTol));
}

TEST_CASE("communicator order: on two communicators the later-issued collective runs while the other stream is behind",
          "[engine][unit]") {
  // The second runs alone over [0, kRing8], done before the first starts at 0.1 s: end 0.1 + kRing8 = 0.17007 s.
  const Ends e = run_two(false, true);
  CHECK(e.second_start == Approx(0.0).margin(1e-12));
  CHECK(e.first_start == Approx(kDelay).epsilon(kTol));
  CHECK(e.end == Approx(kDelay + kRing8).epsilon(kTol));
}

TEST_CASE("communicator order: analytic fidelity keeps the issue order too", "[engine][unit]") {
  // Analytic sleeps the closed form kRing8 per all-reduce: 0.1 + 2 kRing8 = 0.24014 s.
  const Ends e = run_two(true, true, scenario::Fidelity::ANALYTIC);
  CHECK(e.second_start == Approx(kDelay + kRing8).epsilon(kTol));
  CHECK(e.end == Approx(kDelay + 2 * kRing8).epsilon(kTol));
}
