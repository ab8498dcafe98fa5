#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/tree.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::collectives;
using program::CollectiveKind;

namespace {
constexpr double kTol = 1e-12; // pure arithmetic: only rounding error
}

TEST_CASE("plan: ring all-reduce is one phase of 2(n-1)/n·S to the successor in 2(n-1) steps", "[collectives][unit]") {
  // n = 8, S = 1e9 B: 2·7/8·1e9 = 1.75e9 B, 14 steps (nccl-tests PERFORMANCE.md; Patarasuk & Yuan 2009).
  auto phases = plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 8);
  REQUIRE(phases.size() == 1);
  REQUIRE(phases[0].bytes_per_rank.value() == Approx(1.75e9).epsilon(kTol));
  REQUIRE(phases[0].peer_offset == 1);
  REQUIRE(phases[0].latency_steps == 14);
}

TEST_CASE("plan: ring all-gather and reduce-scatter send (n-1)/n·S in n-1 steps", "[collectives][unit]") {
  // n = 4, S = 4e6 B: 3/4·4e6 = 3e6 B, 3 steps.
  for (auto kind : {CollectiveKind::ALL_GATHER, CollectiveKind::REDUCE_SCATTER}) {
    auto phases = plan(kind, Algorithm::RING, Bytes(4e6), 4);
    REQUIRE(phases.size() == 1);
    REQUIRE(phases[0].bytes_per_rank.value() == Approx(3e6).epsilon(kTol));
    REQUIRE(phases[0].peer_offset == 1);
    REQUIRE(phases[0].latency_steps == 3);
  }
}

TEST_CASE("wire_bytes_per_rank: equals the sum of the plan's phase bytes", "[collectives][unit]") {
  for (auto kind : {CollectiveKind::ALL_REDUCE, CollectiveKind::ALL_GATHER, CollectiveKind::REDUCE_SCATTER}) {
    for (int n : {1, 2, 3, 8, 64, 1024}) {
      double sum = 0;
      for (const auto& p : plan(kind, Algorithm::RING, Bytes(123456789.0), n))
        sum += p.bytes_per_rank.value();
      REQUIRE(wire_bytes_per_rank(kind, Algorithm::RING, Bytes(123456789.0), n).value() == Approx(sum).epsilon(kTol));
    }
  }
  // Hand value: all-reduce n = 2 sends S (2·1/2·S).
  REQUIRE(wire_bytes_per_rank(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1000), 2).value() ==
          Approx(1000).epsilon(kTol));
}

TEST_CASE("plan: a single rank or an empty payload has no phase", "[collectives][unit]") {
  for (auto kind : {CollectiveKind::ALL_REDUCE, CollectiveKind::ALL_GATHER, CollectiveKind::REDUCE_SCATTER}) {
    REQUIRE(plan(kind, Algorithm::RING, Bytes(1e9), 1).empty());
    REQUIRE(plan(kind, Algorithm::RING, Bytes(0), 8).empty());
    REQUIRE(wire_bytes_per_rank(kind, Algorithm::RING, Bytes(1e9), 1).value() == 0.0);
  }
}

TEST_CASE("plan: rejects a group size below 1 and a negative size", "[collectives][unit]") {
  SECTION("n = 0") {
    REQUIRE_THROWS_AS(plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1), 0), Error);
    REQUIRE_THROWS_WITH(plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1), 0),
                        Catch::Contains("n must be >= 1"));
  }
  SECTION("n = -3") {
    REQUIRE_THROWS_WITH(wire_bytes_per_rank(CollectiveKind::ALL_GATHER, Algorithm::RING, Bytes(1), -3),
                        Catch::Contains("got -3"));
  }
  SECTION("negative size") {
    REQUIRE_THROWS_WITH(plan(CollectiveKind::REDUCE_SCATTER, Algorithm::RING, Bytes(-1), 4),
                        Catch::Contains("size must be >= 0"));
  }
  SECTION("bus_bandwidth_factor n = 0") {
    REQUIRE_THROWS_WITH(bus_bandwidth_factor(CollectiveKind::ALL_REDUCE, 0), Catch::Contains("n must be >= 1"));
  }
}

TEST_CASE("bus_bandwidth_factor: nccl-tests factors 2(n-1)/n and (n-1)/n", "[collectives][unit]") {
  // nccl-tests doc/PERFORMANCE.md: n = 8 -> all-reduce 14/8 = 1.75, all-gather / reduce-scatter 7/8 = 0.875.
  REQUIRE(bus_bandwidth_factor(CollectiveKind::ALL_REDUCE, 8) == Approx(1.75).epsilon(kTol));
  REQUIRE(bus_bandwidth_factor(CollectiveKind::ALL_GATHER, 8) == Approx(0.875).epsilon(kTol));
  REQUIRE(bus_bandwidth_factor(CollectiveKind::REDUCE_SCATTER, 8) == Approx(0.875).epsilon(kTol));
  // n = 2: all-reduce 1, all-gather 1/2; n = 1: 0 (no bus traffic).
  REQUIRE(bus_bandwidth_factor(CollectiveKind::ALL_REDUCE, 2) == Approx(1.0).epsilon(kTol));
  REQUIRE(bus_bandwidth_factor(CollectiveKind::ALL_GATHER, 2) == Approx(0.5).epsilon(kTol));
  REQUIRE(bus_bandwidth_factor(CollectiveKind::ALL_REDUCE, 1) == 0.0);
}

TEST_CASE("to_string: names the ring algorithm", "[collectives][unit]") {
  REQUIRE(std::string(to_string(Algorithm::RING)) == "ring");
}

TEST_CASE("plan: a reduce is a ring chain whose every link carries S, in n-1 steps, and the root sends nothing",
          "[collectives][unit]") {
  // NCCL's Reduce runs as a chain towards the root, pipelined in chunks: each of the n-1 links carries the whole
  // buffer (nccl-tests doc/PERFORMANCE.md: reduce's busbw = algbw). n = 4, S = 4e6 B: 4e6 B per link in 3 steps;
  // mean wire per rank 3/4 x 4e6 = 3e6 B (the root sends nothing).
  auto phases = plan(CollectiveKind::REDUCE, Algorithm::RING, Bytes(4e6), 4);
  REQUIRE(phases.size() == 1);
  CHECK(phases[0].bytes_per_rank.value() == Approx(4e6).epsilon(kTol));
  CHECK(phases[0].latency_steps == 3);
  // The chain's last link starts 4 - 2 = 2 chunks after its first (NCCL reduce.h runRing); 2 ranks: one link, no
  // fill; a ring all-reduce has none (every rank sends from its first step).
  CHECK(phases[0].pipeline_fill_chunks == 2);
  CHECK(plan(CollectiveKind::REDUCE, Algorithm::RING, Bytes(4e6), 2).front().pipeline_fill_chunks == 0);
  CHECK(plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(4e6), 4).front().pipeline_fill_chunks == 0);
  CHECK(wire_bytes_per_rank(CollectiveKind::REDUCE, Algorithm::RING, Bytes(4e6), 4).value() ==
        Approx(3e6).epsilon(kTol));
  // Over 2 nodes of 4 GPUs (the ring's plan with node crossings): still S per link, 7/8 x 8e6 = 7e6 B on average.
  CHECK(wire_bytes_per_rank(CollectiveKind::REDUCE, Algorithm::RING, Bytes(8e6), 8, 4).value() ==
        Approx(7e6).epsilon(kTol));
  CHECK(bus_bandwidth_factor(CollectiveKind::REDUCE, 4) == Approx(1.0).epsilon(kTol));
  CHECK(plan(CollectiveKind::REDUCE, Algorithm::RING, Bytes(4e6), 1).empty());
  for (auto algo : {Algorithm::TREE, Algorithm::DIRECT, Algorithm::HIERARCHICAL})
    CHECK_THROWS_WITH(plan(CollectiveKind::REDUCE, algo, Bytes(4e6), 4),
                      Catch::Contains("only the ring algorithm is defined for it"));
}

TEST_CASE("tree_pipeline: NCCL's Simple tree cuts every channel's share into 512 KiB chunks", "[collectives][unit]") {
  // enqueue.cc calcCollChunking (v2.27.7-1): a tree with the Simple protocol keeps chunkSize = one step = 4 MiB / 8
  // = 512 KiB at every size (no "Optimize chunkSize / nSteps" halving since 2.20).
  // 1 GiB on 16 channels: 64 MiB / 512 KiB = 128 chunks.
  auto p = tree_pipeline(Bytes(1073741824.0), 16);
  CHECK(p.chunk.value() == 524288.0);
  CHECK(p.chunks == 128);
  // 32 channels: 32 MiB / 512 KiB = 64 chunks.
  CHECK(tree_pipeline(Bytes(1073741824.0), 32).chunks == 64);
  // 1 MiB on 16 channels: 64 KiB per channel, one (partial) chunk; NCCL 2.19 would have cut it to 32 KiB, 2 chunks.
  p = tree_pipeline(Bytes(1048576.0), 16);
  CHECK(p.chunk.value() == 524288.0);
  CHECK(p.chunks == 1);
  // A partial last chunk counts: 1.25 MiB on one channel = ceil(1280 / 512) = 3 chunks.
  CHECK(tree_pipeline(Bytes(1310720.0), 1).chunks == 3);
  // No channel information (0) counts as one channel.
  CHECK(tree_pipeline(Bytes(1310720.0), 0).chunks == 3);
}
