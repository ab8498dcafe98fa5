// Small and mid-size all-reduces against the measured curves: NCCL's NVLS chunking and pipeline fill
// (sim/collectives/nvls.hpp), the benchmark's timing loop (sim/collectives/benchmark_timing.hpp), and the 8 x H200
// (torch all_reduce_bench.py, NCCL 2.27.7; reference/hardware.md) and 8 x A100 (nccl-tests all_reduce_perf -g 8;
// stas00/ml-engineering network/README.md) busbw curves. One simulation per TEST_CASE (one SimGrid engine per
// process); the curves use the closed form, which the flow engine equals (the "flow equals" test cases).
#include "sim/collectives/benchmark_timing.hpp"
#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/error.hpp"
#include "tests/support/one_collective.hpp"
#include "tests/support/preset_cluster.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <vector>

using namespace zerosim;
using collectives::Algorithm;
using collectives::BenchmarkTiming;
using collectives::Protocol;
using program::CollectiveKind;

namespace {

constexpr double kTol = 1e-12; // pure arithmetic
constexpr double kFidelityTol = 0.01; // flow engine vs closed form
constexpr double kValidationTol = 0.15; // the acceptance band for sizes >= 1 MiB
constexpr double kKibi = 1024.0;
constexpr double kMebi = 1048576.0;
constexpr double kH200Bw = 370.8e9; // hgx-h200: 18 NVLink4 x 25 GB/s x 0.824 (NCCL topo.h SM90_NVLINK_BW 20.6)
constexpr double kNvlsEff = 0.85; // NCCL nvlsEfficiency (Hopper)

scenario::ClusterSpec preset(const std::string& topology, const std::vector<std::string>& overrides = {}) {
  return zerosim::test::preset_cluster(topology, overrides);
}

double simulated_seconds(const scenario::ClusterSpec& cluster, double size) {
  const double t = zerosim::test::one_collective_seconds(cluster, CollectiveKind::ALL_REDUCE, size);
  REQUIRE(t > 0);
  return t;
}

/// 8 x H200 NVLS all-reduce GPU time by hand: 25 us + (L + 2)/L x 1.125 S / (370.8e9 x 0.85), L = NVLS loops.
double h200_nvls_seconds(double s, int loops) {
  return 25e-6 + (loops + 2.0) / loops * 1.125 * s / (kH200Bw * kNvlsEff);
}

/// The executed GPU time of NCCL's choice on `cluster` by the closed form (what the flow engine gives uncontended on
/// one node): model_time() of the choice plus the phases' pipeline fill.
double closed_form_seconds(const scenario::ClusterSpec& cluster, double size) {
  const auto t = engine::tune_topology(cluster);
  const auto ch = engine::resolve_choice(cluster, CollectiveKind::ALL_REDUCE, Bytes(size));
  double seconds = collectives::model_time(CollectiveKind::ALL_REDUCE, ch, Bytes(size), t).value();
  for (const auto& ph :
       collectives::plan(CollectiveKind::ALL_REDUCE, ch.algorithm, Bytes(size), t.ranks, t.gpus_per_node))
    seconds += collectives::pipeline_fill_time(ph, ch.algorithm, ch.protocol, t).value();
  return seconds;
}

struct Point {
  double size;
  double busbw; // GB/s
};

double busbw_of(double size, double seconds) { return size / seconds * 1.75 / 1e9; } // 8 ranks: 2·7/8

} // namespace

TEST_CASE("nvls_chunk_size: NCCL's three shrink rules for 16 channels x 8 heads", "[collectives][unit]") {
  // ops = 16 x 8 = 128. 128 KiB -> 64 KiB below 64·128·128 KiB = 1 GiB; -> 32 KiB below 8·128·64 KiB = 64 MiB;
  // -> 16 KiB below 2·128·32 KiB = 8 MiB (enqueue.cc calcCollChunking v2.27.7-1).
  const auto chunk = [](double s) { return collectives::nvls_chunk_size(Bytes(s), 16, 8).value(); };
  CHECK(chunk(1 * kMebi) == Approx(16 * kKibi).epsilon(kTol));
  CHECK(chunk(8 * kMebi - 1) == Approx(16 * kKibi).epsilon(kTol));
  CHECK(chunk(8 * kMebi) == Approx(32 * kKibi).epsilon(kTol));
  CHECK(chunk(64 * kMebi - 1) == Approx(32 * kKibi).epsilon(kTol));
  CHECK(chunk(64 * kMebi) == Approx(64 * kKibi).epsilon(kTol));
  CHECK(chunk(1024 * kMebi - 1) == Approx(64 * kKibi).epsilon(kTol));
  CHECK(chunk(1024 * kMebi) == Approx(128 * kKibi).epsilon(kTol));
  // 4 heads (ops = 64): 64 KiB below 512 MiB, 32 KiB below 32 MiB, 16 KiB below 4 MiB.
  CHECK(collectives::nvls_chunk_size(Bytes(500 * kMebi), 16, 4).value() == Approx(64 * kKibi).epsilon(kTol));
  CHECK(collectives::nvls_chunk_size(Bytes(3 * kMebi), 16, 4).value() == Approx(16 * kKibi).epsilon(kTol));
  REQUIRE_THROWS_WITH(collectives::nvls_chunk_size(Bytes(kMebi), 0, 8), Catch::Contains("channels >= 1"));
}

TEST_CASE("nvls_loops: ceil of the size over channels x heads x chunk", "[collectives][unit]") {
  const auto loops = [](double s) { return collectives::nvls_loops(Bytes(s), 16, 8); };
  CHECK(loops(0) == 0);
  CHECK(loops(1 * kMebi) == 1); // 1 MiB / (128 x 16 KiB = 2 MiB) -> 1
  CHECK(loops(4 * kMebi) == 2); // 4 MiB / 2 MiB
  CHECK(loops(16 * kMebi) == 4); // 16 MiB / (128 x 32 KiB = 4 MiB)
  CHECK(loops(64 * kMebi) == 8); // 64 MiB / (128 x 64 KiB = 8 MiB)
  CHECK(loops(1024 * kMebi) == 64); // 1 GiB / (128 x 128 KiB = 16 MiB)
  CHECK(loops(17 * kMebi) == 5); // 17 MiB / 4 MiB = 4.25 -> 5
}

TEST_CASE("nvls_plan: the pipeline fill is two loops of the phase's bytes", "[collectives][unit]") {
  // S = 16 MiB on 8 GPUs: bytes 1.125 S = 18 MiB, L = 4 loops, fill = (3 - 1)/4 x 18 MiB = 9 MiB.
  const auto phases = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Bytes(16 * kMebi), 8, 8);
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].bytes_per_rank.value() == Approx(18 * kMebi).epsilon(kTol));
  CHECK(phases[0].pipeline_fill_bytes.value() == Approx(9 * kMebi).epsilon(kTol));
  // Rings and trees have no fill term.
  for (const auto& ph : collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(16 * kMebi), 8, 8))
    CHECK(ph.pipeline_fill_bytes.value() == 0.0);
}

TEST_CASE("nccl tuning: the NVLS fill is paid as latency but left out of the tuner's model", "[collectives][unit]") {
  collectives::TuneTopology t;
  t.ranks = 8;
  t.gpus_per_node = 8;
  t.intra_bandwidth = ByteRate(kH200Bw);
  t.nvls = true;
  const collectives::CollectiveChoice nvls{Algorithm::NVLS, Protocol::SIMPLE};
  const auto ph = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Bytes(16 * kMebi), 8, 8).front();
  // fill = 9 MiB / (370.8e9 x 0.85) = 9437184 / 315.18e9 s = 29.942 us.
  const double fill = 9 * kMebi / (kH200Bw * kNvlsEff);
  CHECK(fill == Approx(29.942e-6).epsilon(1e-4));
  CHECK(collectives::pipeline_fill_time(ph, Algorithm::NVLS, Protocol::SIMPLE, t).value() ==
        Approx(fill).epsilon(kTol));
  CHECK(collectives::table_phase_latency(ph, Algorithm::NVLS, Protocol::SIMPLE, t).value() ==
        Approx(25e-6).epsilon(kTol));
  CHECK(collectives::phase_latency(ph, Algorithm::NVLS, Protocol::SIMPLE, t).value() ==
        Approx(25e-6 + fill).epsilon(kTol));
  // The tuner's model: 25 us + 18 MiB / 315.18e9 (NCCL tuning.cc has no fill term).
  CHECK(collectives::model_time(CollectiveKind::ALL_REDUCE, nvls, Bytes(16 * kMebi), t).value() ==
        Approx(25e-6 + 18 * kMebi / (kH200Bw * kNvlsEff)).epsilon(kTol));
  // Ring phases: no fill, phase_latency is the table's.
  const auto ring = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(16 * kMebi), 8, 8).front();
  CHECK(collectives::phase_latency(ring, Algorithm::RING, Protocol::SIMPLE, t).value() ==
        Approx(collectives::table_phase_latency(ring, Algorithm::RING, Protocol::SIMPLE, t).value()).epsilon(kTol));
}

TEST_CASE("benchmark_time: nccl-tests prints the collective, the torch loop adds the per-call cost",
          "[collectives][unit]") {
  const Seconds gpu(84.9e-6);
  const Seconds call(collectives::kTorchCollectiveCallSeconds);
  CHECK(collectives::benchmark_time(gpu, BenchmarkTiming::NCCL_TESTS, call).value() == Approx(84.9e-6).epsilon(kTol));
  CHECK(collectives::benchmark_time(gpu, BenchmarkTiming::TORCH_LOOP, call).value() ==
        Approx(84.9e-6 + call.value()).epsilon(kTol));
  // The per-call cost is what the latency-bound end of hardware.md's torch-loop curve leaves after NCCL's time:
  // 32 KiB at 1.44 GB/s busbw = 32768 x 1.75 / 1.44e9 = 39.82 us per call; ring/LL (tuning.cc v2.27.7-1) takes
  // 6.6 + 14 x 0.6 us + 1.75 x 32768 / (370.8e9 x 0.5) = 15.31 us; 39.82 - 15.31 = 24.51 us.
  const double ring_ll_32k = 6.6e-6 + 14 * 0.6e-6 + 1.75 * 32 * kKibi / (kH200Bw * 0.5);
  CHECK(collectives::kTorchCollectiveCallSeconds == Approx(32 * kKibi * 1.75 / 1.44e9 - ring_ll_32k).epsilon(0.005));
  CHECK(simulated_seconds(preset("hgx-h200"), 32 * kKibi) == Approx(ring_ll_32k).epsilon(kFidelityTol));
  CHECK(collectives::parse_benchmark_timing("torch-loop") == BenchmarkTiming::TORCH_LOOP);
  CHECK(std::string(collectives::to_string(BenchmarkTiming::NCCL_TESTS)) == "nccl-tests");
  REQUIRE_THROWS_WITH(collectives::parse_benchmark_timing("torch"), Catch::Contains("nccl-tests, torch-loop"));
  REQUIRE_THROWS_WITH(collectives::benchmark_time(Seconds(-1), BenchmarkTiming::NCCL_TESTS, Seconds(0)),
                      Catch::Contains(">= 0"));
}

TEST_CASE("nvls: an 8 x H200 all-reduce of 16 MiB at flow fidelity equals the closed form with the fill",
          "[collectives][unit]") {
  // 25 us + 6/4 x 18 MiB / (370.8e9 x 0.85) = 25 + 89.83 = 114.83 us.
  const double s = 16 * kMebi;
  REQUIRE(engine::resolve_choice(preset("hgx-h200"), CollectiveKind::ALL_REDUCE, Bytes(s)).algorithm ==
          Algorithm::NVLS);
  CHECK(simulated_seconds(preset("hgx-h200"), s) == Approx(h200_nvls_seconds(s, 4)).epsilon(kFidelityTol));
}

TEST_CASE("validation: 8xH200 all-reduce busbw with the torch loop is within 15% of the measured curve from 1 MiB",
          "[collectives][validation]") {
  // hardware.md (ml-engineering all_reduce_bench.py, torch 2.9.1, NCCL 2.27.7), busbw GB/s, "NVLS from 2 MiB up;
  // Ring+LL up to 1 MiB". Simulated: NCCL's choice (tuning.cc v2.27.7-1) executed (NVLS with its fill) + the 24.5 us
  // per-call cost of the torch loop (kTorchCollectiveCallSeconds, fitted on the 32 KiB point, outside this range).
  // E.g. 16 MiB: 25 us + 6/4 x 18 MiB / 315.18e9 + 24.5 us = 139.33 us -> 16 MiB / 139.33 us x 1.75 = 210.7 GB/s
  // against 219.89 (-4.2 %). Achieved: -13.8 % (4 MiB) to +6.9 % (32 MiB).
  const std::vector<Point> measured = {
      {1 * kMebi, 39.93},    {4 * kMebi, 107.16},    {8 * kMebi, 155.53},    {16 * kMebi, 219.89},
      {32 * kMebi, 275.84},  {64 * kMebi, 346.51},   {128 * kMebi, 401.93},  {256 * kMebi, 436.15},
      {512 * kMebi, 450.29}, {1024 * kMebi, 463.58}, {4096 * kMebi, 473.10}, {16384 * kMebi, 482.26},
  };
  const auto c = preset("hgx-h200");
  for (const Point& p : measured) {
    const double t = collectives::benchmark_time(Seconds(closed_form_seconds(c, p.size)), BenchmarkTiming::TORCH_LOOP,
                                                 Seconds(collectives::kTorchCollectiveCallSeconds))
                         .value();
    const double sim = busbw_of(p.size, t);
    const auto ch = engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(p.size));
    std::printf("8xH200 all_reduce %6.0f MiB %s/%s: simulated %.2f GB/s, measured %.2f GB/s, delta %+.1f %%\n",
                p.size / kMebi, collectives::to_string(ch.algorithm), collectives::to_string(ch.protocol), sim, p.busbw,
                100 * (sim / p.busbw - 1));
    CHECK(sim == Approx(p.busbw).epsilon(kValidationTol));
    CHECK(ch.algorithm == (p.size <= 1 * kMebi ? Algorithm::RING : Algorithm::NVLS));
    CHECK(ch.protocol == (p.size <= 1 * kMebi ? Protocol::LL : Protocol::SIMPLE));
  }
}

TEST_CASE("validation: 8xA100 all-reduce busbw with nccl-tests timing against the measured curve",
          "[collectives][validation]") {
  // ml-engineering network/README.md: all_reduce_perf -b 32k -e 16G -f 2 -g 8 -n 50 on one A100 node (NCCL version
  // not given); hardware.md keeps its 16 GiB point (234.89 GB/s, validation_test.cpp). nccl-tests timing: the GPU
  // time of NCCL's choice, no host term. Achieved: within 15 % from 512 MiB (+6.2 % to +2.1 %); below, the model is
  // optimistic, +20 % at 256 MiB to +203 % at 1 MiB (docs/collectives.md lists the points and the suspected causes:
  // the measured 1-4 MiB times are flat at ~101 us, which no bandwidth term explains). Asserted: the band from
  // 512 MiB and that the model is never below the measurement.
  const std::vector<Point> measured = {
      {1 * kMebi, 18.00},     {2 * kMebi, 36.18},     {4 * kMebi, 72.33},      {8 * kMebi, 109.93},
      {16 * kMebi, 106.16},   {32 * kMebi, 138.49},   {64 * kMebi, 171.54},    {128 * kMebi, 176.92},
      {256 * kMebi, 194.07},  {512 * kMebi, 222.72},  {1024 * kMebi, 229.04},  {2048 * kMebi, 231.41},
      {4096 * kMebi, 233.88}, {8192 * kMebi, 234.61}, {16384 * kMebi, 234.89},
  };
  const auto c = preset("dgx-a100");
  for (const Point& p : measured) {
    const double sim = busbw_of(p.size, closed_form_seconds(c, p.size));
    const auto ch = engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(p.size));
    std::printf("8xA100 all_reduce %6.0f MiB %s/%s: simulated %.2f GB/s, measured %.2f GB/s, delta %+.1f %%\n",
                p.size / kMebi, collectives::to_string(ch.algorithm), collectives::to_string(ch.protocol), sim, p.busbw,
                100 * (sim / p.busbw - 1));
    CHECK(sim >= p.busbw);
    if (p.size >= 512 * kMebi)
      CHECK(sim == Approx(p.busbw).epsilon(kValidationTol));
  }
}
