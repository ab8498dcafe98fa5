// NVLS (NVLink SHARP) all-reduce: the plan, NCCL's tuner entries and choice, and the 8 x H200 busbw curve of
// reference/hardware.md (stas00/ml-engineering all-reduce-8xH200.md, NCCL 2.27.7: NVLS from 2 MiB up). One
// simulation per TEST_CASE (one SimGrid engine per process).
#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/collective_registry.hpp"
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/error.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include "tests/support/one_collective.hpp"
#include "tests/support/preset_cluster.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace zerosim;
using collectives::Algorithm;
using collectives::Protocol;
using program::CollectiveKind;

namespace {

constexpr double kTol = 1e-12; // pure arithmetic
constexpr double kFidelityTol = 0.01; // simulation vs closed form
constexpr double kValidationTol = 0.15; // the acceptance band
constexpr double kMebi = 1048576.0;

scenario::ClusterSpec preset(const std::string& topology, const std::vector<std::string>& overrides = {}) {
  return zerosim::test::preset_cluster(topology, overrides);
}

double busbw(const scenario::ClusterSpec& cluster, CollectiveKind kind, double size) {
  const double t = zerosim::test::one_collective_seconds(cluster, kind, size);
  REQUIRE(t > 0);
  return size / t * collectives::bus_bandwidth_factor(kind, cluster.world_size());
}

/// The NVLS model by hand for 8 GPUs on 18 x 20.6 GB/s NVLink4: 25 us (NCCL hwLat NVLink/NVLS/Simple) +
/// (L + 2)/L x S·(1 + 1/8) / (370.8e9 x 0.85) (each GPU moves S + S/n each way; NCCL nvlsEfficiency 0.85 on Hopper;
/// L loops of 16 channels x 8 heads x NCCL's chunk and two more of pipeline fill, nvls.hpp); busbw = S / t x 2·7/8.
/// L by hand: 16 KiB chunks below 8 MiB, 32 KiB below 64 MiB, 64 KiB below 1 GiB, 128 KiB from 1 GiB.
double nvls_busbw_by_hand(double s) {
  const double chunk = s < 8 * kMebi ? 16384 : s < 64 * kMebi ? 32768 : s < 1024 * kMebi ? 65536 : 131072;
  const double loops = std::ceil(s / (128 * chunk));
  const double t = 25e-6 + (loops + 2) / loops * s * 1.125 / (370.8e9 * 0.85);
  return s / t * 1.75;
}

} // namespace

TEST_CASE("plan: nvls all-reduce is one intra-node phase of S(1 + 1/n) in one latency step", "[collectives][unit]") {
  // n = 8, S = 1e9 B: 1.125e9 B each way (scatter S, reduced shard S/n to the multicast address).
  const auto phases = collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Bytes(1e9), 8, 8);
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].bytes_per_rank.value() == Approx(1.125e9).epsilon(kTol));
  CHECK(phases[0].latency_steps == 1);
  CHECK(phases[0].scope == collectives::PeerScope::NODE);
  CHECK(collectives::parse_algorithm("nvls") == Algorithm::NVLS);
}

TEST_CASE("plan: nvls is one-node all-reduce only", "[collectives][unit]") {
  REQUIRE_THROWS_WITH(collectives::plan(CollectiveKind::ALL_GATHER, Algorithm::NVLS, Bytes(1e9), 8, 8),
                      Catch::Contains("all_reduce only"));
  REQUIRE_THROWS_WITH(collectives::plan(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Bytes(1e9), 16, 8),
                      Catch::Contains("one node"));
}

TEST_CASE("nccl tuning: nvls has no base latency, a 25 us NVLink hop and the Hopper NVLS efficiency",
          "[collectives][unit]") {
  collectives::TuneTopology t;
  t.ranks = 8;
  t.gpus_per_node = 8;
  t.intra_bandwidth = ByteRate(370.8e9);
  t.nvls = true;
  CHECK(collectives::base_latency(Algorithm::NVLS, Protocol::SIMPLE).value() == 0.0);
  CHECK(collectives::hop_latency(collectives::LinkClass::NVLINK, Algorithm::NVLS, Protocol::SIMPLE).value() ==
        Approx(25e-6).epsilon(kTol));
  CHECK(collectives::bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Protocol::SIMPLE, t) ==
        Approx(0.85).epsilon(kTol));
  // model_time = 25 us + 1.125 S / (370.8e9 x 0.85), S = 1 GiB.
  const double s = 1024 * kMebi;
  CHECK(collectives::model_time(CollectiveKind::ALL_REDUCE, {Algorithm::NVLS, Protocol::SIMPLE}, Bytes(s), t).value() ==
        Approx(25e-6 + 1.125 * s / (370.8e9 * 0.85)).epsilon(kTol));
}

TEST_CASE("choose: nvls for large all-reduces on an NVLS node, never without NVLS support or on several nodes",
          "[collectives][unit]") {
  const auto h200 = preset("hgx-h200");
  REQUIRE(h200.nvls);
  const auto big = engine::resolve_choice(h200, CollectiveKind::ALL_REDUCE, Bytes(1024 * kMebi));
  CHECK(big.algorithm == Algorithm::NVLS);
  CHECK(big.protocol == Protocol::SIMPLE);
  // Small messages stay on the ring with LL: at 64 KiB, ring/LL 6.6 + 14 x 0.6 + 1.75·65536 / (370.8e9 x 0.5) s =
  // 15.6 us < 25 us of NVLS latency (tuning.cc v2.27.7-1).
  CHECK(engine::resolve_choice(h200, CollectiveKind::ALL_REDUCE, Bytes(65536)).algorithm == Algorithm::RING);
  // NCCL has NVLS all-gather / reduce-scatter too; zerosim runs them as rings.
  CHECK(engine::resolve_choice(h200, CollectiveKind::ALL_GATHER, Bytes(1024 * kMebi)).algorithm == Algorithm::RING);
  CHECK(engine::resolve_choice(preset("hgx-h200", {"cluster.nvls=false"}), CollectiveKind::ALL_REDUCE,
                               Bytes(1024 * kMebi))
            .algorithm == Algorithm::RING);
  CHECK(engine::resolve_choice(preset("dgx-a100"), CollectiveKind::ALL_REDUCE, Bytes(1024 * kMebi)).algorithm !=
        Algorithm::NVLS);
  CHECK(engine::resolve_choice(preset("dgx-h100", {"cluster.nodes=2"}), CollectiveKind::ALL_REDUCE, Bytes(1024 * kMebi))
            .algorithm != Algorithm::NVLS);
}

TEST_CASE("choose: a forced nvls runs Simple whatever protocol is asked", "[collectives][unit]") {
  const auto c = preset("dgx-h100", {"cluster.collective_algorithm=nvls", "cluster.collective_protocol=ll"});
  const auto ch = engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(kMebi));
  CHECK(ch.algorithm == Algorithm::NVLS);
  CHECK(ch.protocol == Protocol::SIMPLE);
}

TEST_CASE("scenario: collective_algorithm nvls without NVLS support or on several nodes is an input error",
          "[collectives][unit]") {
  REQUIRE_THROWS_WITH(preset("dgx-a100", {"cluster.collective_algorithm=nvls"}),
                      Catch::Contains("cluster.collective_algorithm") && Catch::Contains("cluster.nvls: true"));
  REQUIRE_THROWS_WITH(preset("dgx-h100", {"cluster.collective_algorithm=nvls", "cluster.nodes=2"}),
                      Catch::Contains("cluster.collective_algorithm") && Catch::Contains("one node"));
}

TEST_CASE("nvls: an 8 x H200 all-reduce of 1 GiB at flow fidelity matches the closed form", "[collectives][unit]") {
  const double s = 1024 * kMebi;
  CHECK(busbw(preset("hgx-h200"), CollectiveKind::ALL_REDUCE, s) ==
        Approx(nvls_busbw_by_hand(s)).epsilon(kFidelityTol));
}

namespace {
/// hardware.md, 8 x H200 all-reduce busbw (GB/s) by payload, NCCL 2.27.7 (NVLS from 2 MiB up).
struct Point {
  double size;
  double busbw;
};
const std::vector<Point> kH200Nvls = {
    {4 * kMebi, 107.16},    {8 * kMebi, 155.53},    {16 * kMebi, 219.89},    {32 * kMebi, 275.84},
    {64 * kMebi, 346.51},   {128 * kMebi, 401.93},  {256 * kMebi, 436.15},   {512 * kMebi, 450.29},
    {1024 * kMebi, 463.58}, {4096 * kMebi, 473.10}, {16384 * kMebi, 482.26},
};
} // namespace

TEST_CASE("validation: 8xH200 NVLS all-reduce busbw is within 15% of the measured curve from 256 MiB up",
          "[collectives][validation]") {
  // The executed NVLS GPU time (25 us + the bytes with NCCL's chunking and pipeline fill) by hand against the
  // measurement; the flow engine equals it (previous test). The GPU time alone (nccl-tests timing) is within 15 %
  // from 256 MiB; below, the torch benchmark's per-call host launch matters too (small_message_test.cpp checks
  // the whole curve with it). Asserted: the band from 256 MiB, and that the GPU time alone never falls below the
  // measurement.
  for (const Point& p : kH200Nvls) {
    const double model = nvls_busbw_by_hand(p.size);
    std::printf("8xH200 nvls all_reduce %6.0f MiB: model %.2f GB/s, measured %.2f GB/s, delta %+.1f %%\n",
                p.size / kMebi, model / 1e9, p.busbw, 100 * (model / 1e9 / p.busbw - 1));
    CHECK(model >= p.busbw * 1e9);
    if (p.size >= 256 * kMebi)
      CHECK(model == Approx(p.busbw * 1e9).epsilon(kValidationTol));
  }
}

TEST_CASE("validation: 8xH200 NVLS all-reduce busbw at 16 GiB is within 15% of 482.26 GB/s",
          "[collectives][validation]") {
  // Full engine run with the preset (nvls: true) and NCCL's choice: NVLS/Simple; 489.2 GB/s (+1.4 %).
  const auto c = preset("hgx-h200");
  REQUIRE(engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(16384 * kMebi)).algorithm == Algorithm::NVLS);
  const double bw = busbw(c, CollectiveKind::ALL_REDUCE, 16384 * kMebi);
  std::printf("8xH200 nvls all_reduce 16GiB: simulated %.2f GB/s, measured 482.26 GB/s\n", bw / 1e9);
  REQUIRE(bw == Approx(482.26e9).epsilon(kValidationTol));
}

TEST_CASE("validation: 8xH200 with NVLS disabled stays on the ring and matches the ring measurement",
          "[collectives][validation]") {
  // hardware.md: NVLS disabled, 367.61 GB/s at 16 GiB. The tuner picks ring/Simple: 2·7/8·S / 370.8e9 -> 370.8 GB/s.
  const auto c = preset("hgx-h200", {"cluster.nvls=false"});
  REQUIRE(engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(16384 * kMebi)).algorithm == Algorithm::RING);
  const double bw = busbw(c, CollectiveKind::ALL_REDUCE, 16384 * kMebi);
  std::printf("8xH200 ring (nvls off) all_reduce 16GiB: simulated %.2f GB/s, measured 367.61 GB/s\n", bw / 1e9);
  REQUIRE(bw == Approx(367.61e9).epsilon(kValidationTol));
}
