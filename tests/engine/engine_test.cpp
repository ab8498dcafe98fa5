// Engine tests: simulated times against closed forms worked out by hand in the comments.
// One simulation per TEST_CASE (SimGrid's Engine is a process singleton; ctest runs a process per TEST_CASE).
#include "sim/engine/engine.hpp"
#include "sim/engine/recorder.hpp"

#include "sim/error.hpp"
#include "tests/engine/zero3_like_program.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

#include <chrono>

using namespace zerosim;
using namespace zerosim::program;

namespace {

constexpr double kTol = 1e-6; // closed forms that SimGrid reproduces exactly (reference/simgrid_notes.md §3)
constexpr double kFidelityTol = 0.01; // the brief's 1 % agreement between fidelity levels and the formula

/// One node of `gpus` GPUs on a star: B = 25e9 B/s per direction, α = 5 us per GPU-to-GPU hop;
/// PCIe 25e9 B/s, 1 us. GPU: 100 TFLOP/s lp at 50 % efficiency, 2e12 B/s memory at 80 %, `memory` bytes.
scenario::ClusterSpec star(int gpus, double memory = 80e9) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu = zerosim::test::test_gpu(memory); // 100e12 FLOP/s x 0.5, 2e12 B/s x 0.8
  // Explicit ring with the ideal protocol: the alpha-beta closed forms below hold exactly.
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

/// `c` with the explicit ring and the ideal protocol (alpha-beta closed forms).
scenario::ClusterSpec ring_none(scenario::ClusterSpec c) {
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

engine::EngineOptions flow() { return {}; }
engine::EngineOptions analytic() {
  engine::EngineOptions o;
  o.fidelity = scenario::Fidelity::ANALYTIC;
  return o;
}

StepProgram one_all_reduce(double bytes) {
  ProgramBuilder b;
  b.add_group("dp");
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(bytes));
  return b.build(1);
}

// Ring all-reduce of S = 1e9 B on N = 8: 2(N-1)/N·S/B + 2(N-1)·α = 2·7/8·1e9/25e9 + 14·5e-6 = 0.07 + 7e-5 s
// (Patarasuk & Yuan 2009; nccl-tests PERFORMANCE.md).
constexpr double kRing8 = 2.0 * 7.0 / 8.0 * 1e9 / 25e9 + 14 * 5e-6;

// Compute{1e12 FLOP, 1e9 B}: 1e12 / (100e12·0.5) + 1e9 / (2e12·0.8) = 0.02 + 0.000625 = 0.020625 s.
constexpr double kKernel = 1e12 / (100e12 * 0.5) + 1e9 / (2e12 * 0.8);

} // namespace

TEST_CASE("run_simulation: ring all-reduce at flow fidelity costs 2(N-1)/N·S/B + 2(N-1)α", "[engine][unit]") {
  const auto r = engine::run_simulation(star(8), one_all_reduce(1e9), flow());
  REQUIRE(r.finished);
  REQUIRE(r.world_size == 8);
  REQUIRE(r.end_time == Approx(kRing8).epsilon(kFidelityTol));
  REQUIRE(r.end_time == Approx(kRing8).epsilon(kTol));
  // Traffic of rank 0: one call, payload S, wire 2·7/8·S.
  const auto ar = static_cast<std::size_t>(CollectiveKind::ALL_REDUCE);
  REQUIRE(r.traffic.collective_calls[ar] == 1);
  REQUIRE(r.traffic.collective_bytes[ar] == Approx(1e9).epsilon(kTol));
  REQUIRE(r.traffic.wire_bytes[ar] == Approx(1.75e9).epsilon(kTol));
  REQUIRE(r.spans.size() == 1); // trace_ranks = 1
  REQUIRE(r.spans[0].end - r.spans[0].start == Approx(kRing8).epsilon(kTol));
}

TEST_CASE("run_simulation: ring all-reduce at analytic fidelity costs 2(N-1)/N·S/B + 2(N-1)α", "[engine][unit]") {
  const auto r = engine::run_simulation(star(8), one_all_reduce(1e9), analytic());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(kRing8).epsilon(kFidelityTol));
}

TEST_CASE("run_simulation: N reduces of S/N to each rank take S/B, a reduce-scatter of S (N-1)/N x S/B",
          "[engine][unit]") {
  // DeepSpeed stage 1/2 without use_multi_rank_bucket_allreduce reduces a bucket of S with one dist.reduce per owner.
  // On star(2) (B = 25e9 B/s per direction, alpha = 5 us per hop): each reduce of S/2 is a one-link chain carrying
  // S/2 in 1 step, S/2 / B + alpha; the two run back to back on the stream: S / B + 2 alpha = 1e9 / 25e9 + 1e-5 =
  // 0.04001 s. A reduce-scatter of S: (N-1)/N x S / B + alpha = 0.02 + 5e-6 s. Rank 0's wire: it sends S/2 in the
  // reduce whose root is rank 1 and nothing in its own: mean (N-1)/N x S/2 per call = 2.5e8 B per call, 5e8 B in all.
  ProgramBuilder b;
  b.add_group("dp");
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.collective(comm, Phase::GRAD_REDUCE, "reduce to rank 0", CollectiveKind::REDUCE, Bytes(5e8));
  b.collective(comm, Phase::GRAD_REDUCE, "reduce to rank 1", CollectiveKind::REDUCE, Bytes(5e8));
  const auto r = engine::run_simulation(star(2), b.build(1), flow());
  REQUIRE(r.finished);
  CHECK(r.end_time == Approx(1e9 / 25e9 + 2 * 5e-6).epsilon(kTol));
  const auto k = static_cast<std::size_t>(CollectiveKind::REDUCE);
  CHECK(r.traffic.collective_calls[k] == 2);
  CHECK(r.traffic.wire_bytes[k] == Approx(5e8).epsilon(kTol));
}

TEST_CASE("run_simulation: a 1-rank collective takes zero time", "[engine][unit]") {
  const auto r = engine::run_simulation(star(1), one_all_reduce(1e9), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == 0.0);
}

TEST_CASE("run_simulation: a kernel lasts flops/(peak·eff) + bytes/(bw·eff)", "[engine][unit]") {
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.compute(s, Phase::FORWARD, "fwd", Flops(1e12), Bytes(1e9));
  const auto r = engine::run_simulation(star(2), b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(kKernel).epsilon(kTol));
}

namespace {

/// A kernel of `flops` and `bytes` on the compute stream beside an all-reduce of 1e9 B (kRing8 on star(8)) on the
/// comm stream of every rank, both issued at t = 0.
StepProgram kernel_beside_all_reduce(double flops, double bytes) {
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.compute(comp, Phase::BACKWARD, "bwd", Flops(flops), Bytes(bytes));
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1e9));
  return b.build(1);
}

} // namespace

TEST_CASE("run_simulation: a kernel and a collective on two streams overlap (max)", "[engine][unit]") {
  const auto r = engine::run_simulation(star(8), kernel_beside_all_reduce(1e12, 1e9), flow());
  REQUIRE(r.finished);
  // max(0.020625, 0.07007) s
  REQUIRE(r.end_time == Approx(std::max(kKernel, kRing8)).epsilon(kTol));
}

namespace {

/// When a kernel of T = 1e13 / (100e12 x 0.5) = 0.2 s beside the all-reduce (kernel_beside_all_reduce) ends on
/// star(8) GPUs of `sm_count` SMs with `channels` NCCL channels.
double end_beside_all_reduce(int channels, int sm_count = 100) {
  auto c = star(8);
  c.gpu.sm_count = sm_count;
  c.nccl_channels = channels;
  const auto r = engine::run_simulation(c, kernel_beside_all_reduce(1e13, 0), flow());
  REQUIRE(r.finished);
  return r.end_time;
}

} // namespace

TEST_CASE("run_simulation: a running collective's NCCL CTAs take their SMs from a concurrent kernel",
          "[engine][unit]") {
  // 20 channels of 100 SMs: while the all-reduce runs (C = kRing8 = 0.07007 s) the kernel runs at 1 - 20/100 = 0.8 of
  // its rate, so it ends at C + (T - 0.8 C) = T + 0.2 C = 0.2 + 0.014014 = 0.214014 s (NCCL: one CTA per channel,
  // resident from launch to end).
  CHECK(end_beside_all_reduce(20) == Approx(0.2 + 0.2 * kRing8).epsilon(kTol));
}

TEST_CASE("run_simulation: with no NCCL channels a concurrent kernel keeps its rate", "[engine][unit]") {
  // nccl_channels 0: the kernel (0.2 s) outlasts the all-reduce (0.07 s) untouched, max(T, C) = 0.2 s.
  CHECK(end_beside_all_reduce(0) == Approx(0.2).epsilon(kTol));
}

TEST_CASE("run_simulation: a GPU without an SM count keeps its rate beside a collective", "[engine][unit]") {
  // gpu.sm_count 0 (the shape model off): no share to take, so max(T, C) = 0.2 s whatever the channels.
  CHECK(end_beside_all_reduce(20, 0) == Approx(0.2).epsilon(kTol));
}

TEST_CASE("run_simulation: two NCCL kernels at once take twice the SMs from a concurrent kernel", "[engine][unit]") {
  // Two all-reduces of 1e9 B on two comm streams and two communicators share each link: both run 2 x kRing8 - 14 α
  // (the bandwidth term doubles, the 14 hop latencies do not: 0.14007 s) while holding 2 x 20 of 100 SMs, so the
  // 0.2 s kernel runs at 0.6: it ends at C2 + (T - 0.6 C2) = T + 0.4 C2 = 0.2 + 0.4 x 0.14007 = 0.256028 s.
  ProgramBuilder b;
  const auto g1 = b.add_group("dp");
  const auto g2 = b.add_group("world");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm1 = b.add_stream("comm1", StreamKind::COMM);
  auto comm2 = b.add_stream("comm2", StreamKind::COMM);
  b.compute(comp, Phase::BACKWARD, "bwd", Flops(1e13), Bytes(0));
  b.collective(comm1, Phase::GRAD_REDUCE, "allreduce1", CollectiveKind::ALL_REDUCE, Bytes(1e9), g1);
  b.collective(comm2, Phase::GRAD_REDUCE, "allreduce2", CollectiveKind::ALL_REDUCE, Bytes(1e9), g2);
  auto c = star(8);
  c.gpu.sm_count = 100;
  c.nccl_channels = 20;
  const auto r = engine::run_simulation(c, b.build(1), flow());
  REQUIRE(r.finished);
  const double c2 = 2.0 * 2.0 * 7.0 / 8.0 * 1e9 / 25e9 + 14 * 5e-6;
  CHECK(r.end_time == Approx(0.2 + 0.4 * c2).epsilon(kTol));
}

TEST_CASE("run_simulation: Record/Wait serialises a collective after a kernel (sum)", "[engine][unit]") {
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.wait(comm, b.record(comp)); // nothing before it: no-op wait
  b.compute(comp, Phase::BACKWARD, "bwd", Flops(1e12), Bytes(1e9));
  b.join(comm, comp); // comm waits for the kernel
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1e9));
  const auto r = engine::run_simulation(star(8), b.build(1), flow());
  REQUIRE(r.finished);
  // 0.020625 + 0.07007 s
  REQUIRE(r.end_time == Approx(kKernel + kRing8).epsilon(kTol));
}

TEST_CASE("run_simulation: two waiters on one event both resume at its record", "[engine][unit]") {
  ProgramBuilder b;
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto side1 = b.add_stream("side1", StreamKind::CPU);
  auto side2 = b.add_stream("side2", StreamKind::CPU);
  b.cpu(comp, Phase::OTHER, "first", Seconds(1.0));
  auto e = b.record(comp);
  b.wait(side1, e);
  b.wait(side2, e);
  b.cpu(side1, Phase::OTHER, "a", Seconds(2.0));
  b.cpu(side2, Phase::OTHER, "b", Seconds(3.0));
  const auto r = engine::run_simulation(star(2), b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(1.0 + 3.0).epsilon(kTol)); // record at 1 s, longest waiter 3 s
}

TEST_CASE("run_simulation: host-to-device copy crosses the GPU's PCIe link", "[engine][unit]") {
  ProgramBuilder b;
  auto copy = b.add_stream("copy", StreamKind::COPY);
  b.copy(copy, Phase::OFFLOAD, "h2d", CopyDir::H2D, Bytes(1e9));
  b.copy(copy, Phase::OFFLOAD, "d2d", CopyDir::D2D, Bytes(1e9));
  const auto r = engine::run_simulation(star(2), b.build(1), flow());
  REQUIRE(r.finished);
  // H2D: 1e-6 + 1e9/25e9 = 0.040001 s; D2D: 2·1e9 / (2e12·0.8) = 0.00125 s.
  REQUIRE(r.end_time == Approx(0.040001 + 0.00125).epsilon(kTol));
  REQUIRE(r.traffic.copy_bytes[static_cast<std::size_t>(CopyDir::H2D)] == Approx(1e9).epsilon(kTol));
}

TEST_CASE(
    "run_simulation: a pageable copy adds the staging memcpy to the DMA in both directions (CUDA pageable copies)",
    "[engine][unit]") {
  ProgramBuilder b;
  auto copy = b.add_stream("copy", StreamKind::COPY);
  b.copy(copy, Phase::OFFLOAD, "h2d", CopyDir::H2D, Bytes(1e9), true);
  b.copy(copy, Phase::OFFLOAD, "d2h", CopyDir::D2H, Bytes(1e9), true);
  b.copy(copy, Phase::OFFLOAD, "d2h pinned", CopyDir::D2H, Bytes(1e9));
  auto c = star(2);
  c.cpu.pageable_copy_bandwidth = ByteRate(10e9);
  const auto r = engine::run_simulation(c, b.build(1), flow());
  REQUIRE(r.finished);
  // Pageable, each way: 1e-6 latency + 1e9/25e9 DMA + 1e9/10e9 memcpy = 0.140001 s;
  // pinned D2H: 1e-6 + 1e9/25e9 = 0.040001 s.
  REQUIRE(r.end_time == Approx(2 * 0.140001 + 0.040001).epsilon(kTol));
}

TEST_CASE("run_simulation: a staging memcpy faster than the link still adds its time (serialized, not pipelined)",
          "[engine][unit]") {
  ProgramBuilder b;
  auto copy = b.add_stream("copy", StreamKind::COPY);
  b.copy(copy, Phase::OFFLOAD, "h2d", CopyDir::H2D, Bytes(1e9), true);
  auto c = star(2);
  c.cpu.pageable_copy_bandwidth = ByteRate(50e9);
  const auto r = engine::run_simulation(c, b.build(1), flow());
  REQUIRE(r.finished);
  // 1 / effective rate = 1/25e9 + 1/50e9 -> 1e9 bytes in 0.04 + 0.02 s, plus 1e-6 latency.
  REQUIRE(r.end_time == Approx(1e-6 + 0.04 + 0.02).epsilon(kTol));
}

TEST_CASE("run_simulation: memory peak, its by-tag breakdown and the Alloc that reached it", "[engine][unit]") {
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.alloc(s, Phase::INIT, "params", MemTag::LP_PARAMS, Bytes(2e9));
  auto act = b.alloc(s, Phase::FORWARD, "act", MemTag::ACTIVATIONS, Bytes(3e9));
  auto work = b.alloc(s, Phase::FORWARD, "work", MemTag::WORKING, Bytes(1e9)); // peak 6e9 here
  b.free(s, Phase::FORWARD, work);
  b.free(s, Phase::BACKWARD, act);
  const auto p = b.build(1);
  const auto r = engine::run_simulation(star(4), p, flow());
  REQUIRE(r.finished);
  REQUIRE(r.memory.size() == 4);
  for (const auto& m : r.memory) {
    REQUIRE(m.peak.bytes == Approx(6e9).epsilon(kTol));
    REQUIRE(m.peak.by_tag[static_cast<std::size_t>(MemTag::LP_PARAMS)] == Approx(2e9).epsilon(kTol));
    REQUIRE(m.peak.by_tag[static_cast<std::size_t>(MemTag::ACTIVATIONS)] == Approx(3e9).epsilon(kTol));
    REQUIRE(m.peak.by_tag[static_cast<std::size_t>(MemTag::WORKING)] == Approx(1e9).epsilon(kTol));
    REQUIRE(r.labels.at(m.peak.label) == "work");
    REQUIRE(m.final_bytes == Approx(2e9).epsilon(kTol));
  }
  REQUIRE(r.host_memory.empty());
  REQUIRE(r.mem_samples.size() == 5); // rank 0 only: 3 allocs + 2 frees
}

namespace {
/// Compute stream: 6e9 B of params, then 6e9 B of activations (12e9 > 10e9 capacity), then records an event the comm
/// stream waits for before an all-reduce: with STOP the comm actors are left blocked and must be ended cleanly.
StepProgram oom_program() {
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  b.alloc(comp, Phase::INIT, "params", MemTag::LP_PARAMS, Bytes(6e9));
  b.compute(comp, Phase::FORWARD, "fwd", Flops(1e12), Bytes(1e9));
  b.alloc(comp, Phase::FORWARD, "act", MemTag::ACTIVATIONS, Bytes(6e9));
  b.join(comm, comp);
  b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1e9));
  return b.build(1);
}
} // namespace

TEST_CASE("run_simulation: OOM with STOP ends cleanly and reports what was live", "[engine][unit]") {
  engine::EngineOptions o;
  o.on_oom = scenario::OomPolicy::STOP;
  const auto r = engine::run_simulation(star(8, 10e9), oom_program(), o);
  REQUIRE_FALSE(r.finished);
  REQUIRE(r.oom.has_value());
  REQUIRE(r.oom->requested == Approx(6e9).epsilon(kTol));
  REQUIRE(r.oom->capacity == Approx(10e9).epsilon(kTol));
  REQUIRE(r.oom->tag == MemTag::ACTIVATIONS);
  REQUIRE(r.oom->live_by_tag[static_cast<std::size_t>(MemTag::LP_PARAMS)] == Approx(6e9).epsilon(kTol));
  REQUIRE(r.oom->time == Approx(kKernel).epsilon(kTol)); // after the forward kernel
  REQUIRE(r.end_time == Approx(kKernel).epsilon(kTol));
  REQUIRE_FALSE(r.diagnostics.empty());
}

TEST_CASE("run_simulation: OOM with CONTINUE records the OOM and runs to the end", "[engine][unit]") {
  engine::EngineOptions o;
  o.on_oom = scenario::OomPolicy::CONTINUE;
  const auto r = engine::run_simulation(star(8, 10e9), oom_program(), o);
  REQUIRE(r.finished);
  REQUIRE(r.oom.has_value());
  REQUIRE(r.memory[0].peak.bytes == Approx(12e9).epsilon(kTol));
  REQUIRE(r.end_time == Approx(kKernel + kRing8).epsilon(kTol));
}

TEST_CASE("run_simulation: a wait cycle is rejected before the run (program::validate), not a hang", "[engine][unit]") {
  ProgramBuilder b;
  auto s1 = b.add_stream("a", StreamKind::COMPUTE);
  auto s2 = b.add_stream("b", StreamKind::COMPUTE);
  const EventId e1 = b.new_event();
  const EventId e2 = b.new_event();
  // a: wait(e2), record(e1); b: wait(e1), record(e2).
  auto p = b.build(1);
  p.num_events = 2;
  p.streams[s1].ops = {Op{Wait{e2}, Phase::OTHER, 0}, Op{Record{e1}, Phase::OTHER, 0}};
  p.streams[s2].ops = {Op{Wait{e1}, Phase::OTHER, 0}, Op{Record{e2}, Phase::OTHER, 0}};
  REQUIRE_THROWS_WITH(engine::run_simulation(star(2), p, flow()), Catch::Contains("invalid program") &&
                                                                      Catch::Contains("stream a op 0") &&
                                                                      Catch::Contains("deadlock"));
}

TEST_CASE("deadlock_diagnostic: names the blocked stream actors when SimGrid signals or actors are left over",
          "[engine][unit]") {
  // The run-time guard behind program::validate (engine.cpp run_simulation): SimGrid's deadlock signal, or actors
  // left unfinished without an OOM stop, gives "deadlock: total - finished of total ..."; an OOM stop kills the
  // actors on purpose and a clean run finishes all of them: no diagnostic.
  CHECK_THAT(engine::deadlock_diagnostic(true, false, 3, 5),
             Catch::StartsWith("deadlock: 2 of 5 stream actors never finished"));
  CHECK_THAT(engine::deadlock_diagnostic(false, false, 4, 6), Catch::StartsWith("deadlock: 2 of 6 "));
  CHECK_THAT(engine::deadlock_diagnostic(true, true, 1, 6), Catch::StartsWith("deadlock: 5 of 6 "));
  CHECK(engine::deadlock_diagnostic(false, true, 1, 6).empty());
  CHECK(engine::deadlock_diagnostic(false, false, 6, 6).empty());
}

TEST_CASE("run_simulation: rejects an invalid program", "[engine][unit]") {
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.wait(s, b.new_event());
  REQUIRE_THROWS_WITH(engine::run_simulation(star(2), b.build(1), flow()), Catch::Contains("never recorded"));
}

TEST_CASE("run_simulation: steps are timed on rank 0 with compute busy time by phase", "[engine][unit]") {
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  for (int step = 0; step < 2; ++step) {
    b.mark(comp, MarkKind::STEP_BEGIN, step);
    b.compute(comp, Phase::FORWARD, "fwd", Flops(1e12), Bytes(1e9));
    b.compute(comp, Phase::BACKWARD, "bwd", Flops(2e12), Bytes(2e9));
    b.join(comm, comp);
    b.collective(comm, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1e9));
    b.join(comp, comm);
    b.mark(comp, MarkKind::STEP_END, step);
  }
  const auto r = engine::run_simulation(star(8), b.build(2), flow());
  REQUIRE(r.finished);
  REQUIRE(r.steps.size() == 2);
  // Step = fwd (0.020625) + bwd (0.04125) + all-reduce (0.07007), serialised.
  const double step_time = kKernel + 2 * kKernel + kRing8;
  for (const auto& st : r.steps)
    REQUIRE(st.duration() == Approx(step_time).epsilon(kTol));
  REQUIRE(r.step_phase_busy.size() == 2);
  REQUIRE(r.step_phase_busy[1].seconds[static_cast<std::size_t>(Phase::FORWARD)] == Approx(kKernel).epsilon(kTol));
  REQUIRE(r.step_phase_busy[1].seconds[static_cast<std::size_t>(Phase::BACKWARD)] == Approx(2 * kKernel).epsilon(kTol));
  REQUIRE(r.step_comm_busy.size() == 2);
  REQUIRE(r.step_comm_busy[1] == Approx(kRing8).epsilon(kTol));
}

TEST_CASE("run_simulation: host allocations go to an unlimited host pool", "[engine][unit]") {
  ProgramBuilder b;
  auto cpu = b.add_stream("cpu", StreamKind::CPU);
  b.alloc(cpu, Phase::INIT, "master", MemTag::FP32_MASTER, Bytes(500e9), Device::HOST); // > GPU memory, no OOM
  const auto r = engine::run_simulation(star(2), b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE_FALSE(r.oom.has_value());
  REQUIRE(r.host_memory.size() == 2);
  REQUIRE(r.host_memory[1].peak.bytes == Approx(500e9).epsilon(kTol));
  REQUIRE(r.memory[1].peak.bytes == 0.0);
}

TEST_CASE("run_simulation: a 2-node ring all-reduce is paced by the node uplink and its latency", "[engine][unit]") {
  // 16 ranks on 2 DGX-like nodes: the ring's two node-crossing flows (rank 7 -> 8, 15 -> 0) cross the 8 x 25e9 =
  // 200e9 B/s leaf link, all others the 300e9 B/s NVSwitch; the crossing route's latency is 1 + 2.5 + 2.5 + 1 = 7 us.
  // The slowest rank sends 2·15/16·1e9 = 1.875e9 B at 200e9 B/s after 7 us and sleeps 29 x 7 us more:
  // 1.875e9 / 200e9 + 30 x 7e-6 = 9.585e-3 s, the alpha-beta form with B = min and α = max over the ring.
  const auto r = engine::run_simulation(ring_none(test::dgx_a100_like(2)), one_all_reduce(1e9), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(1.875e9 / 200e9 + 30 * 7e-6).epsilon(kTol));
}

namespace {
engine::EngineOptions folded(scenario::Fidelity f, scenario::FoldPolicy p) {
  engine::EngineOptions o;
  o.fidelity = f;
  o.fold = p;
  return o;
}
// 8 DGX-like nodes (64 ranks, one fat-tree leaf): B = min(300e9 NVSwitch, 200e9 leaf link) = 200e9 B/s,
// α = max hop latency = 7 us (node-crossing route, as in the 2-node case above). Ring all-reduce of 1e9 B:
// 2·63/64·1e9/200e9 + 2·63·7e-6 s.
constexpr double kRing64 = 2.0 * 63.0 / 64.0 * 1e9 / 200e9 + 126 * 7e-6;
} // namespace

TEST_CASE("run_simulation: folded flow simulates two nodes and keeps the 64-rank ring time", "[engine][unit]") {
  const auto r = engine::run_simulation(ring_none(test::dgx_a100_like(8)), one_all_reduce(1e9),
                                        folded(scenario::Fidelity::FLOW, scenario::FoldPolicy::AUTO));
  REQUIRE(r.finished);
  REQUIRE(r.world_size == 64);
  REQUIRE(r.simulated_ranks == 16);
  REQUIRE(r.memory.size() == 16);
  REQUIRE(r.end_time == Approx(kRing64).epsilon(kTol));
  // Traffic keeps the world's sizes: wire bytes 2·63/64·S.
  REQUIRE(r.traffic.wire_bytes[static_cast<std::size_t>(CollectiveKind::ALL_REDUCE)] ==
          Approx(2.0 * 63.0 / 64.0 * 1e9).epsilon(kTol));
  // The fold note names the simulated ranks; it adds what trace.json holds only when more ranks were asked for.
  const auto note = std::find_if(r.diagnostics.begin(), r.diagnostics.end(),
                                 [](const std::string& d) { return d.rfind("ranks folded", 0) == 0; });
  REQUIRE(note != r.diagnostics.end());
  CHECK_THAT(*note, Catch::Contains("simulated 16 of 64 ranks") && !Catch::Contains("trace_ranks"));
}

TEST_CASE("run_simulation: a folded run asked to trace more ranks than it simulates says what trace.json holds",
          "[engine][unit]") {
  // (One simulation per test case: SimGrid's engine is created once per process.)
  auto many = folded(scenario::Fidelity::FLOW, scenario::FoldPolicy::AUTO);
  many.trace_ranks = 64;
  const auto t = engine::run_simulation(ring_none(test::dgx_a100_like(8)), one_all_reduce(1e9), many);
  REQUIRE(t.simulated_ranks == 16);
  const auto note = std::find_if(t.diagnostics.begin(), t.diagnostics.end(),
                                 [](const std::string& d) { return d.rfind("ranks folded", 0) == 0; });
  REQUIRE(note != t.diagnostics.end());
  CHECK_THAT(*note, Catch::Contains("outputs.trace_ranks 64: trace.json has the 16 simulated ranks"));
}

TEST_CASE("run_simulation: fold off simulates all 64 ranks with the same ring time", "[engine][unit]") {
  const auto r = engine::run_simulation(ring_none(test::dgx_a100_like(8)), one_all_reduce(1e9),
                                        folded(scenario::Fidelity::FLOW, scenario::FoldPolicy::OFF));
  REQUIRE(r.simulated_ranks == 64);
  REQUIRE(r.end_time == Approx(kRing64).epsilon(kTol));
}

TEST_CASE("run_simulation: folded analytic on 64 nodes uses the cross-spine hop latency", "[engine][unit]") {
  // 64 nodes > the default leaf radix 32, so some ring hops cross the spine: 1 + 4 x 2.5 + 1 = 12 us.
  // 2·511/512·1e9/200e9 + 2·511·12e-6 s; one node (8 ranks) simulated.
  const auto r = engine::run_simulation(ring_none(test::dgx_a100_like(64)), one_all_reduce(1e9),
                                        folded(scenario::Fidelity::ANALYTIC, scenario::FoldPolicy::AUTO));
  REQUIRE(r.simulated_ranks == 8);
  REQUIRE(r.end_time == Approx(2.0 * 511.0 / 512.0 * 1e9 / 200e9 + 1022 * 12e-6).epsilon(kTol));
}

TEST_CASE("attribute_idle: compute-stream idle time goes to communication, then copies, then CPU, then the host",
          "[engine][unit]") {
  using I = engine::Recorder::Interval;
  // Window [0, 10] s. Compute busy [0, 2] and [6, 7]; comm [1, 4]; copy [3, 5]; cpu [4.5, 9]; host thread
  // [8.5, 9.5]. Idle = [2, 6] u [7, 10] = 7 s: comm [2, 4] = 2 s; copy [4, 5] = 1 s (comm over by then); cpu
  // [5, 6] + [7, 9] = 3 s; host [9, 9.5] = 0.5 s (its [8.5, 9] is the CPU's); other [9.5, 10] = 0.5 s.
  const std::vector<I> busy[engine::Recorder::kBusyKinds] = {{{0, 2}, {6, 7}},
                                                             {{1, 4}},
                                                             {{3, 5}},
                                                             {{4.5, 9}},
                                                             {{8.5, 9.5}}};
  const auto t = engine::attribute_idle(busy, 0, 10);
  REQUIRE(t.comm == Approx(2.0).epsilon(kTol));
  REQUIRE(t.offload_copy == Approx(1.0).epsilon(kTol));
  REQUIRE(t.cpu == Approx(3.0).epsilon(kTol));
  REQUIRE(t.host == Approx(0.5).epsilon(kTol));
  REQUIRE(t.other == Approx(0.5).epsilon(kTol));
}

TEST_CASE("attribute_idle: a PCIe copy takes precedence over NVMe swap I/O, which takes it over CPU work",
          "[engine][unit]") {
  using I = engine::Recorder::Interval;
  // Window [0, 10] s, compute busy [0, 1]. PCIe copy [2, 4]; NVMe I/O [1, 6]; CPU [5, 8]. Idle [1, 10] = 9 s: NVMe
  // [1, 2] + [4, 6] = 3 s; copy [2, 4] = 2 s (the NVMe I/O under it is not counted twice); CPU [6, 8] = 2 s; other
  // [8, 10] = 2 s.
  std::vector<I> busy[engine::Recorder::kBusyKinds];
  busy[static_cast<std::size_t>(engine::Recorder::Busy::COMPUTE)] = {{0, 1}};
  busy[static_cast<std::size_t>(engine::Recorder::Busy::COPY)] = {{2, 4}};
  busy[static_cast<std::size_t>(engine::Recorder::Busy::NVME)] = {{1, 6}};
  busy[static_cast<std::size_t>(engine::Recorder::Busy::CPU)] = {{5, 8}};
  const auto t = engine::attribute_idle(busy, 0, 10);
  REQUIRE(t.offload_nvme == Approx(3.0).epsilon(kTol));
  REQUIRE(t.offload_copy == Approx(2.0).epsilon(kTol));
  REQUIRE(t.cpu == Approx(2.0).epsilon(kTol));
  REQUIRE(t.other == Approx(2.0).epsilon(kTol));
  REQUIRE(t.comm == Approx(0.0).margin(1e-12));
}

TEST_CASE("run_simulation: a collective on the compute stream is exposed communication, not compute",
          "[engine][unit]") {
  // overlap_comm off: the all-reduce sits on the compute stream after a kernel. Step = kernel + ring time;
  // compute busy = the kernel only; the ring time (kRing8) is idle time attributed to communication.
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  b.mark(comp, MarkKind::STEP_BEGIN, 0);
  b.compute(comp, Phase::BACKWARD, "bwd", Flops(1e12), Bytes(1e9));
  b.collective(comp, Phase::GRAD_REDUCE, "allreduce", CollectiveKind::ALL_REDUCE, Bytes(1e9));
  b.mark(comp, MarkKind::STEP_END, 0);
  const auto r = engine::run_simulation(star(8), b.build(1), flow());
  REQUIRE(r.steps.size() == 1);
  REQUIRE(r.steps[0].duration() == Approx(kKernel + kRing8).epsilon(kTol));
  double busy = 0;
  for (double v : r.step_phase_busy[0].seconds)
    busy += v;
  REQUIRE(busy == Approx(kKernel).epsilon(kTol));
  REQUIRE(r.step_idle[0].comm == Approx(kRing8).epsilon(kTol));
  REQUIRE(r.step_idle[0].other == Approx(0.0).margin(1e-12));
}

TEST_CASE("run_simulation: compute-stream idle while the host thread issues work is the host thread's",
          "[engine][unit]") {
  // The host (Python) thread spends 0.5 s before the kernel can be queued (a DeepSpeed hook, say): the compute
  // stream waits for it. Step = 0.5 s + the kernel; idle attributed to the host thread 0.5 s, none to "other".
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto host = b.add_stream("host", StreamKind::HOST);
  b.mark(comp, MarkKind::STEP_BEGIN, 0);
  b.join(host, comp);
  b.cpu(host, Phase::BACKWARD, "hook", Seconds(0.5));
  b.join(comp, host);
  b.compute(comp, Phase::BACKWARD, "bwd", Flops(1e12), Bytes(1e9));
  b.mark(comp, MarkKind::STEP_END, 0);
  const auto r = engine::run_simulation(star(1), b.build(1), flow());
  REQUIRE(r.steps.size() == 1);
  REQUIRE(r.steps[0].duration() == Approx(0.5 + kKernel).epsilon(kTol));
  REQUIRE(r.step_idle[0].host == Approx(0.5).epsilon(kTol));
  REQUIRE(r.step_idle[0].other == Approx(0.0).margin(1e-12));
  REQUIRE(r.step_idle[0].cpu == Approx(0.0).margin(1e-12));
}

TEST_CASE("run_simulation: a kernel's attention FLOPs run at gpu.attention_efficiency", "[engine][unit]") {
  // test-gpu: 100e12 FLOP/s peak, matmul efficiency 0.5, memory 2e12 B/s x 0.8. 1e12 FLOPs of which 0.4e12 are
  // FlashAttention at efficiency 0.25: 0.6e12 / 50e12 + 0.4e12 / 25e12 + 1e9 / 1.6e12 = 0.012 + 0.016 + 0.000625.
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.compute(s, Phase::FORWARD, "fwd", Flops(1e12), Bytes(1e9), Flops(0.4e12));
  auto cluster = star(2);
  cluster.gpu.attention_efficiency = 0.25;
  const auto r = engine::run_simulation(cluster, b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(0.012 + 0.016 + 0.000625).epsilon(kTol));
}

TEST_CASE("run_simulation: a kernel's GEMM FLOPs run at matmul_efficiency x gemm_utilization", "[engine][unit]") {
  // test-gpu: 100e12 FLOP/s x 0.5. 1e12 FLOPs, 0.4e12 of them FlashAttention at 0.25, GEMM utilization 0.6:
  // 0.6e12 / (50e12 · 0.6) + 0.4e12 / 25e12 + 1e9 / 1.6e12 = 0.02 + 0.016 + 0.000625 (attention is not a cuBLAS
  // GEMM: its rate does not change).
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.compute(s, Phase::FORWARD, "fwd", Flops(1e12), Bytes(1e9), Flops(0.4e12), 0.6);
  auto cluster = star(2);
  cluster.gpu.attention_efficiency = 0.25;
  const auto r = engine::run_simulation(cluster, b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(0.02 + 0.016 + 0.000625).epsilon(kTol));
}

TEST_CASE("run_simulation: fused attention time counts the FLOPs the kernels execute (attention_work)",
          "[engine][unit]") {
  // test-gpu: 100e12 FLOP/s; attention at 0.25. 0.4e12 attention FLOPs counted of 1e12, causal FlashAttention
  // backward executes 0.625 of them (half the blocks, x 2.5/2 for the QKᵀ recompute): 0.6e12 / 50e12 +
  // 0.4e12 x 0.625 / 25e12 + 1e9 / 1.6e12 = 0.012 + 0.01 + 0.000625.
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.compute(s, Phase::BACKWARD, "bwd", Flops(1e12), Bytes(1e9), Flops(0.4e12), 1.0, 0.625);
  auto cluster = star(2);
  cluster.gpu.attention_efficiency = 0.25;
  const auto r = engine::run_simulation(cluster, b.build(1), flow());
  REQUIRE(r.finished);
  REQUIRE(r.end_time == Approx(0.012 + 0.01 + 0.000625).epsilon(kTol));
}

namespace {
/// The host thread allocates three 1 GiB flattens from the comm stream's cache (program::Alloc::pool) at t = 0, one
/// after the other, and drops each at once; the comm stream runs a kernel (kKernel s, standing for the all-reduce)
/// per flatten. `record_stream`: each block returns only after its kernel (Free TENSOR on the host, BLOCK on comm,
/// as ProcessGroupNCCL before torch 2.8 leaves it); else a plain free on the host.
StepProgram host_flattens(bool record_stream) {
  ProgramBuilder b;
  b.add_group("dp");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto host = b.add_stream("host", StreamKind::HOST);
  auto comm = b.add_stream("comm", StreamKind::COMM);
  (void)comp;
  for (int i = 0; i < 3; ++i) {
    auto tmp = b.alloc_from(host, comm, Phase::GRAD_REDUCE, "flatten", MemTag::FLATTEN_TEMP, Bytes(1 << 30));
    b.join(comm, host);
    b.compute(comm, Phase::GRAD_REDUCE, "allreduce", Flops(1e12), Bytes(1e9));
    if (record_stream) {
      b.free_tensor(host, Phase::GRAD_REDUCE, tmp);
      b.join(comm, host);
      b.free_block(comm, Phase::GRAD_REDUCE, tmp);
    } else {
      b.free(host, Phase::GRAD_REDUCE, tmp);
    }
  }
  return b.build(1);
}
} // namespace

TEST_CASE("run_simulation: record_stream'd blocks the host drops ahead of the GPU stay reserved", "[engine][unit]") {
  // Each 1 GiB request is a multiple of 2 MiB: a segment of exactly 2^30 B (CUDACachingAllocator get_allocation_size).
  // The host makes all three requests at t = 0, before the first kernel ends (kKernel > 0): no block has come back,
  // so each takes a new segment: reserved 3 x 2^30 B. Allocated never holds more than one (each dropped at once).
  const auto r = engine::run_simulation(star(1), host_flattens(true), flow());
  REQUIRE(r.finished);
  CHECK(r.memory[0].reserved_peak.bytes == Approx(3.0 * (1 << 30)).epsilon(kTol));
  CHECK(r.memory[0].peak.bytes == Approx(1.0 * (1 << 30)).epsilon(kTol));
  CHECK(r.memory[0].final_bytes == Approx(0.0).margin(1.0));
}

TEST_CASE("run_simulation: a block the host frees without record_stream serves its stream's next request",
          "[engine][unit]") {
  // The same requests with plain frees (torch >= 2.8: the collective on the caller's stream, no record_stream): each
  // block is back in the comm stream's cache when the host asks again, so one segment of 2^30 B serves all three.
  const auto r = engine::run_simulation(star(1), host_flattens(false), flow());
  REQUIRE(r.finished);
  CHECK(r.memory[0].reserved_peak.bytes == Approx(1.0 * (1 << 30)).epsilon(kTol));
  CHECK(r.memory[0].peak.bytes == Approx(1.0 * (1 << 30)).epsilon(kTol));
}
