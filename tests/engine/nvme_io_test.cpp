// NVMe swap I/O (Copy NVME_READ / NVME_WRITE) runs as SimGrid Disk I/O on the node's "<node>-nvme" disk
// (topologies/builder/platform_builder.cpp, sim/engine/stream_actor.cpp do_copy): time = ⌈bytes / in-flight bytes⌉
// x cluster.nvme.latency + bytes / read (write) bandwidth, in-flight bytes = DeepSpeed aio block_size x queue_depth x
// intra_op_parallelism (default 1 MiB x 8 x 1 = 8388608 B), and the node's ranks share the disk. One simulation per
// TEST_CASE.
#include "sim/engine/engine.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;

namespace {

constexpr double kTol = 1e-6;

/// One node of `gpus` test GPUs with an NVMe of 5e9 B/s read, 2e9 B/s write, 80 us per request.
scenario::ClusterSpec with_nvme(int gpus) { return zerosim::test::test_node(gpus, true); }

} // namespace

TEST_CASE("run_simulation: an NVMe read of S bytes takes rounds x latency + S / read_bandwidth", "[engine][unit]") {
  ProgramBuilder b;
  auto nvme = b.add_stream("nvme", StreamKind::COPY);
  b.copy(nvme, Phase::OFFLOAD, "swap in", CopyDir::NVME_READ, Bytes(1e9));
  const auto r = engine::run_simulation(with_nvme(1), b.build(1), {});
  REQUIRE(r.finished);
  // ⌈1e9 / 8388608⌉ = 120 rounds: 120 x 80e-6 + 1e9 / 5e9 = 0.2096 s.
  CHECK(r.end_time == Approx(0.2096).epsilon(kTol));
  CHECK(r.traffic.nvme_bytes[0] == Approx(1e9).epsilon(kTol));
}

TEST_CASE("run_simulation: an NVMe write of S bytes takes rounds x latency + S / write_bandwidth", "[engine][unit]") {
  ProgramBuilder b;
  auto nvme = b.add_stream("nvme", StreamKind::COPY);
  b.copy(nvme, Phase::OFFLOAD, "swap out", CopyDir::NVME_WRITE, Bytes(1e9));
  const auto r = engine::run_simulation(with_nvme(1), b.build(1), {});
  REQUIRE(r.finished);
  // 120 x 80e-6 + 1e9 / 2e9 = 0.5096 s.
  CHECK(r.end_time == Approx(0.5096).epsilon(kTol));
  CHECK(r.traffic.nvme_bytes[1] == Approx(1e9).epsilon(kTol));
}

TEST_CASE("run_simulation: two ranks of a node share its NVMe read bandwidth", "[engine][unit]") {
  ProgramBuilder b;
  auto nvme = b.add_stream("nvme", StreamKind::COPY);
  b.copy(nvme, Phase::OFFLOAD, "swap in", CopyDir::NVME_READ, Bytes(1e9));
  const auto r = engine::run_simulation(with_nvme(2), b.build(1), {});
  REQUIRE(r.finished);
  // Both ranks read 1e9 B at the same time: 2e9 B / 5e9 B/s = 0.4 s after their 120 rounds of 80 us.
  CHECK(r.end_time == Approx(0.4096).epsilon(kTol));
}

namespace {
/// End time of one 1e9 B NVMe read with `inflight` bytes of aio requests in flight.
double read_1e9_with_inflight(double inflight) {
  ProgramBuilder b;
  auto nvme = b.add_stream("nvme", StreamKind::COPY);
  b.copy(nvme, Phase::OFFLOAD, "swap in", CopyDir::NVME_READ, Bytes(1e9));
  engine::EngineOptions o;
  o.nvme_inflight_bytes = inflight;
  const auto r = engine::run_simulation(with_nvme(1), b.build(1), o);
  REQUIRE(r.finished);
  return r.end_time;
}
} // namespace

TEST_CASE("run_simulation: a shallow aio queue pays the NVMe latency on every small round", "[engine][unit]") {
  // aio 128 KiB x 1 x 1 (131072 B in flight): ⌈1e9 / 131072⌉ = 7630 rounds: 7630 x 80e-6 + 0.2 = 0.8104 s, a
  // quarter of the bandwidth.
  CHECK(read_1e9_with_inflight(131072.0) == Approx(0.8104).epsilon(kTol));
}

TEST_CASE("run_simulation: a swap inside one aio round pays the NVMe latency once", "[engine][unit]") {
  // 1e9 B in flight: one round, 80e-6 + 1e9 / 5e9 = 0.20008 s.
  CHECK(read_1e9_with_inflight(1e9) == Approx(0.20008).epsilon(kTol));
}

TEST_CASE("run_simulation: the compute stream's wait on an NVMe swap is exposed NVMe time, not PCIe copy time",
          "[engine][unit]") {
  // The compute stream waits for a 1e9 B NVMe read (0.2096 s, as above) on a copy stream: the step is that read, all
  // of its idle time goes to the NVMe swap and none to PCIe copies (trace::IdleTimes::offload_nvme).
  ProgramBuilder b;
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto nvme = b.add_stream("nvme", StreamKind::COPY);
  b.mark(comp, MarkKind::STEP_BEGIN, 0);
  b.join(nvme, comp);
  b.copy(nvme, Phase::OFFLOAD, "swap in", CopyDir::NVME_READ, Bytes(1e9));
  b.join(comp, nvme);
  b.mark(comp, MarkKind::STEP_END, 0);
  const auto r = engine::run_simulation(with_nvme(1), b.build(1), {});
  REQUIRE(r.steps.size() == 1);
  CHECK(r.steps[0].duration() == Approx(0.2096).epsilon(kTol));
  CHECK(r.step_idle[0].offload_nvme == Approx(0.2096).epsilon(kTol));
  CHECK(r.step_idle[0].offload_copy == Approx(0.0).margin(1e-12));
  CHECK(r.step_traffic[0].nvme_bytes[0] == Approx(1e9).epsilon(kTol));
}

TEST_CASE("run_simulation: a read and a write at the same time share max(read, write) bandwidth", "[engine][unit]") {
  ProgramBuilder b;
  auto rd = b.add_stream("nvme", StreamKind::COPY);
  auto wr = b.add_stream("nvme write", StreamKind::COPY);
  b.copy(rd, Phase::OFFLOAD, "swap in", CopyDir::NVME_READ, Bytes(3e9));
  b.copy(wr, Phase::OFFLOAD, "swap out", CopyDir::NVME_WRITE, Bytes(1e9));
  const auto r = engine::run_simulation(with_nvme(1), b.build(1), {});
  REQUIRE(r.finished);
  // SimGrid's disk limits reads + writes together to max(5e9, 2e9) = 5e9 B/s, shared max-min fairly. The latency
  // rounds come first: the write's 120 x 80 us = 9.6e-3 s, the read's ceil(3e9 / 8388608) = 358 x 80 us =
  // 28.64e-3 s. The write runs alone at 2e9 B/s for 19.04e-3 s (38.08e6 B), then with the read: the write keeps
  // 2e9 B/s, the read gets 3e9 B/s, until the write ends 0.48096 s later (at 0.5096 s; the read has 1.44288e9 B);
  // then the read alone: 1.55712e9 / 5e9 = 0.311424 s, ending at 0.821024 s. Independent limits would end at
  // 28.64e-3 + 3e9 / 5e9 = 0.62864 s.
  CHECK(r.end_time == Approx(0.821024).epsilon(kTol));
}
