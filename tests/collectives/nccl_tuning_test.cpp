// NCCL tuning model, tree and hierarchical plans: values worked out by hand from NVIDIA/nccl src/graph/tuning.cc
// v2.27.7-1 and the algorithms' definitions.
#include "sim/collectives/nccl_tuning.hpp"
#include "sim/collectives/collective_plan.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::collectives;
using program::CollectiveKind;

namespace {
constexpr double kTol = 1e-12; // pure arithmetic

/// 8 GPUs on NVLink at 240e9 B/s per direction (one node).
TuneTopology nvlink8() {
  TuneTopology t;
  t.ranks = 8;
  t.gpus_per_node = 8;
  t.intra = LinkClass::NVLINK;
  t.intra_bandwidth = ByteRate(240e9);
  return t;
}
} // namespace

TEST_CASE("plan: tree all-reduce sends S up and S down with chain + log2(nodes) latency", "[collectives][unit]") {
  // 4 nodes x 8 GPUs, S = 1e9: two phases of 1e9 B; steps (8-1) + log2(4) = 9, of which 2 cross the network.
  auto ph = plan(CollectiveKind::ALL_REDUCE, Algorithm::TREE, Bytes(1e9), 32, 8);
  REQUIRE(ph.size() == 2);
  for (const auto& p : ph) {
    REQUIRE(p.bytes_per_rank.value() == Approx(1e9).epsilon(kTol));
    REQUIRE(p.latency_steps == 9);
    REQUIRE(p.inter_node_steps == 2);
  }
  REQUIRE(ph[0].peer_offset == 1);
  REQUIRE(ph[1].peer_offset == -1);
}

TEST_CASE("plan: tree is all-reduce only", "[collectives][unit]") {
  REQUIRE_THROWS_WITH(plan(CollectiveKind::ALL_GATHER, Algorithm::TREE, Bytes(1e9), 8, 8),
                      Catch::Contains("all_reduce only"));
}

TEST_CASE("plan: hierarchical all-reduce is intra reduce-scatter, inter all-reduce of S/g, intra all-gather",
          "[collectives][unit]") {
  // 4 nodes x 8 GPUs, S = 8e9: intra 7/8·8e9 = 7e9 B in 7 steps; inter 2·3/4·(8e9/8) = 1.5e9 B in 6 network
  // steps; intra 7e9 B in 7 steps.
  auto ph = plan(CollectiveKind::ALL_REDUCE, Algorithm::HIERARCHICAL, Bytes(8e9), 32, 8);
  REQUIRE(ph.size() == 3);
  REQUIRE(ph[0].scope == PeerScope::NODE);
  REQUIRE(ph[0].bytes_per_rank.value() == Approx(7e9).epsilon(kTol));
  REQUIRE(ph[0].latency_steps == 7);
  REQUIRE(ph[1].scope == PeerScope::ACROSS_NODES);
  REQUIRE(ph[1].bytes_per_rank.value() == Approx(1.5e9).epsilon(kTol));
  REQUIRE(ph[1].latency_steps == 6);
  REQUIRE(ph[1].inter_node_steps == 6);
  REQUIRE(ph[2].scope == PeerScope::NODE);
  REQUIRE(ph[2].bytes_per_rank.value() == Approx(7e9).epsilon(kTol));
}

TEST_CASE("plan: hierarchical on one node is the ring", "[collectives][unit]") {
  auto ph = plan(CollectiveKind::ALL_REDUCE, Algorithm::HIERARCHICAL, Bytes(1e9), 8, 8);
  REQUIRE(ph.size() == 1);
  REQUIRE(ph[0].bytes_per_rank.value() == Approx(1.75e9).epsilon(kTol));
  REQUIRE(ph[0].latency_steps == 14);
}

TEST_CASE("plan: a multi-node ring counts its network steps", "[collectives][unit]") {
  // 4 nodes: all-reduce crosses 2(4-1) = 6 times, all-gather 3 times (tuning.cc nInterSteps).
  REQUIRE(plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 32, 8)[0].inter_node_steps == 6);
  REQUIRE(plan(CollectiveKind::ALL_GATHER, Algorithm::RING, Bytes(1e9), 32, 8)[0].inter_node_steps == 3);
}

TEST_CASE("model_time: ring Simple on 8 NVLink GPUs is base + 14 hops + 2(n-1)/n·S/B", "[collectives][unit]") {
  // 8.4 us + 14 x 3.4 us + 1.75·1e9 / 240e9 = 56e-6 + 7.291666...e-3 s.
  const double t =
      model_time(CollectiveKind::ALL_REDUCE, {Algorithm::RING, Protocol::SIMPLE}, Bytes(1e9), nvlink8()).value();
  REQUIRE(t == Approx(8.4e-6 + 14 * 3.4e-6 + 1.75e9 / 240e9).epsilon(kTol));
}

TEST_CASE("model_time: ring LL delivers half the link bandwidth (8 B lines carry 4 B of data)", "[collectives][unit]") {
  // tuning.cc v2.27.7-1: baseLat Ring/LL 6.6 us, hwLat NVLink Ring/LL 0.6 us, busBw x 0.5. All-reduce LL:
  // 6.6 + 14 x 0.6 us + 1.75e9 / (240e9/2). All-gather LL (one node): 6.6 + 7 x 0.6 us + 0.875e9 / (240e9/2).
  const auto t = nvlink8();
  REQUIRE(model_time(CollectiveKind::ALL_REDUCE, {Algorithm::RING, Protocol::LL}, Bytes(1e9), t).value() ==
          Approx(6.6e-6 + 14 * 0.6e-6 + 1.75e9 / 120e9).epsilon(kTol));
  REQUIRE(model_time(CollectiveKind::ALL_GATHER, {Algorithm::RING, Protocol::LL}, Bytes(1e9), t).value() ==
          Approx(6.6e-6 + 7 * 0.6e-6 + 0.875e9 / 120e9).epsilon(kTol));
}

TEST_CASE("choose: LL for small messages, Simple ring for large ones (NCCL's tuner)", "[collectives][unit]") {
  const auto t = nvlink8();
  // 1 KiB: LL's 15.0 us latency (6.6 + 14 x 0.6) beats LL128 (14 + 14 x 1.9 = 40.6 us) and Simple (8.4 + 14 x 3.4
  // = 56 us); the tree's chain is not shorter (6.8 + 2 x 7 x 0.6 = 15.2 us).
  const auto small = choose(CollectiveKind::ALL_REDUCE, Bytes(1024), t);
  REQUIRE(small.protocol == Protocol::LL);
  REQUIRE(small.algorithm == Algorithm::RING);
  // 16 GiB: bandwidth-bound; Simple ring (factor 1, 1.75·S) beats LL128 (0.92) and the tree (2·S at 0.9).
  const auto large = choose(CollectiveKind::ALL_REDUCE, Bytes(16.0 * (1ull << 30)), t);
  REQUIRE(large.protocol == Protocol::SIMPLE);
  REQUIRE(large.algorithm == Algorithm::RING);
  // A fixed algorithm/protocol is kept.
  const Protocol p = Protocol::LL128;
  REQUIRE(choose(CollectiveKind::ALL_REDUCE, Bytes(1024), t, nullptr, &p).protocol == Protocol::LL128);
}

TEST_CASE("choose: without NVLink LL128 is not enabled", "[collectives][unit]") {
  auto t = nvlink8();
  t.intra = LinkClass::PCI;
  for (double s : {1e3, 1e6, 1e9})
    REQUIRE(choose(CollectiveKind::ALL_REDUCE, Bytes(s), t).protocol != Protocol::LL128);
}

TEST_CASE("model_time: the small-message regime is latency-bound, the large one bandwidth-bound",
          "[collectives][unit]") {
  // nccl-tests busbw = S/t·2(n-1)/n. At 32 KiB the tuned time is >= the 15.0 us LL latency, so busbw <=
  // 32768/15e-6·1.75 = 3.8 GB/s, under 2.5 % of the 240 GB/s link; at 16 GiB it is within 1 % of the link.
  const auto t = nvlink8();
  auto busbw = [&](double s) {
    const auto c = choose(CollectiveKind::ALL_REDUCE, Bytes(s), t);
    return s / model_time(CollectiveKind::ALL_REDUCE, c, Bytes(s), t).value() * 1.75;
  };
  REQUIRE(busbw(32768) < 0.025 * 240e9);
  REQUIRE(busbw(16.0 * (1ull << 30)) == Approx(240e9).epsilon(0.01));
  double prev = 0;
  for (double s = 1024; s <= 16.0 * (1ull << 30); s *= 2) {
    REQUIRE(busbw(s) > prev); // busbw grows with size throughout the sweep
    prev = busbw(s);
  }
}

TEST_CASE("parse_protocol: names and errors", "[collectives][unit]") {
  REQUIRE(parse_protocol("ll") == Protocol::LL);
  REQUIRE(parse_protocol("ll128") == Protocol::LL128);
  REQUIRE(parse_protocol("simple") == Protocol::SIMPLE);
  REQUIRE(parse_protocol("none") == Protocol::NONE);
  REQUIRE_THROWS_WITH(parse_protocol("fast"),
                      Catch::Contains("unknown collective protocol 'fast'") && Catch::Contains("ll, ll128, simple"));
}

TEST_CASE("phase_bandwidth_factor: NCCL's LL, LL128, tree and channel caps (tuning.cc v2.27.7-1)",
          "[collectives][unit]") {
  // 8 GPUs at 360e9 B/s on one node; the ring's one phase (GLOBAL) sees the link's 360e9.
  TuneTopology t = nvlink8();
  t.intra_bandwidth = ByteRate(360e9);
  const auto ring = plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 8, 8).front();
  const auto f = [&](Algorithm a, Protocol p) {
    return phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, a, p, ring, t);
  };
  // No GPU generation: bandwidth_factor's plain protocol factors.
  CHECK(f(Algorithm::RING, Protocol::LL) == Approx(0.5).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::LL128) == Approx(0.92).epsilon(kTol));
  // Hopper without a channel count: no per-channel bound, but LL's absolute 141 GB/s still holds.
  t.arch = 2;
  CHECK(f(Algorithm::RING, Protocol::LL) == Approx(141.0 / 360.0).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::SIMPLE) == Approx(1.0).epsilon(kTol));
  // Hopper, 16 channels: LL capped at llMaxBw 141 GB/s (0.5 x 360 = 180 above it); LL128 min(0.92 x 360 = 331.2,
  // 16 x 36.7 = 587.2) = 331.2; Simple min(360, 16 x 60 = 960) = 360.
  t.arch = 2;
  t.channels = 16;
  CHECK(f(Algorithm::RING, Protocol::LL) == Approx(141.0 / 360.0).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::LL128) == Approx(0.92).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::SIMPLE) == Approx(1.0).epsilon(kTol));
  // 2 channels: Simple min(360, 2 x 60) = 120; LL128 min(0.92 x 120 = 110.4, 2 x 36.7 = 73.4) = 73.4; LL
  // min(141, 0.5 x 120) = 60.
  t.channels = 2;
  CHECK(f(Algorithm::RING, Protocol::SIMPLE) == Approx(120.0 / 360.0).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::LL128) == Approx(73.4 / 360.0).epsilon(kTol));
  CHECK(f(Algorithm::RING, Protocol::LL) == Approx(60.0 / 360.0).epsilon(kTol));
  // Ampere, 4 channels, tree on one node: min(360, 4 x 40 = 160) -> min(0.92 x 160 = 147.2, 4 x 24 = 96) = 96; LL128
  // then min(96 x 7/9 = 74.67, 4 x 20 = 80) = 74.67; LL min(96 / 3.8 = 25.26, 87.7) = 25.26.
  t.arch = 1;
  t.channels = 4;
  const auto tree = plan(CollectiveKind::ALL_REDUCE, Algorithm::TREE, Bytes(1e9), 8, 8).front();
  const auto g = [&](Protocol p) {
    return phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::TREE, p, tree, t) * 360e9 / 1e9;
  };
  CHECK(g(Protocol::SIMPLE) == Approx(96.0).epsilon(kTol));
  CHECK(g(Protocol::LL128) == Approx(96.0 * 7.0 / 9.0).epsilon(kTol));
  CHECK(g(Protocol::LL) == Approx(96.0 / 3.8).epsilon(kTol));
  // NVLS: only the channel bound, then its 0.85 efficiency: min(360, 4 x 40) x 0.85 / 360.
  CHECK(phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Protocol::SIMPLE, ring, t) ==
        Approx(160.0 * 0.85 / 360.0).epsilon(kTol));
  t.channels = 16; // 16 x 40 = 640 above the link: the plain factor
  CHECK(phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::NVLS, Protocol::SIMPLE, ring, t) ==
        Approx(0.85).epsilon(kTol));
}

TEST_CASE("phase_bandwidth_factor: across nodes the LL cap follows the host CPU (Intel 39 / AMD 22.5 GB/s on 2 nodes)",
          "[collectives][unit]") {
  // 2 nodes x 8 Hopper GPUs, 100e9 B/s into the network per node: the multi-node ring phase runs at min(intra,
  // inter) = 100e9. LL: min(llMaxBw[CPU][2 nodes], 0.5 x 100 = 50).
  TuneTopology t = nvlink8();
  t.ranks = 16;
  t.intra_bandwidth = ByteRate(360e9);
  t.inter_bandwidth = ByteRate(100e9);
  t.arch = 2;
  t.channels = 16;
  const auto ph = plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 16, 8).front();
  const auto ll = [&] {
    return phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::RING, Protocol::LL, ph, t);
  };
  REQUIRE(phase_bandwidth(ph, t).value() == Approx(100e9).epsilon(kTol));
  CHECK(ll() == Approx(39.0 / 100.0).epsilon(kTol));
  t.amd_host = true;
  CHECK(ll() == Approx(22.5 / 100.0).epsilon(kTol));
  // Across nodes the search draws Hopper's channels from the inter array (48 GB/s first): 2 channels bound Simple at
  // 2 x 48 = 96 of the 100.
  t.channels = 2;
  CHECK(phase_bandwidth_factor(CollectiveKind::ALL_REDUCE, Algorithm::RING, Protocol::SIMPLE, ph, t) ==
        Approx(96.0 / 100.0).epsilon(kTol));
}

TEST_CASE("choose: a reduce runs as a ring whatever algorithm is asked for (NCCL's Reduce is ring only)",
          "[collectives][unit]") {
  // One full-mesh node: DIRECT is a candidate for the other collectives, never for a reduce; a forced tree, NVLS or
  // DIRECT (cluster.collective_algorithm) still gives the reduce a ring, with the protocol asked for.
  TuneTopology t = nvlink8();
  t.mesh = true;
  CHECK(choose(CollectiveKind::REDUCE, Bytes(1e9), t).algorithm == Algorithm::RING);
  const Protocol ll = Protocol::LL;
  for (const Algorithm forced : {Algorithm::TREE, Algorithm::NVLS, Algorithm::DIRECT}) {
    const CollectiveChoice c = choose(CollectiveKind::REDUCE, Bytes(1e9), t, &forced, &ll);
    CHECK(c.algorithm == Algorithm::RING);
    CHECK(c.protocol == Protocol::LL);
  }
}

TEST_CASE("reduce_chunk_bytes: NCCL's ring Reduce chunk per channel is one step of the protocol's buffer",
          "[collectives][unit]") {
  // init.cc / primitives.h v2.27.7-1: Simple 4 MiB / 8 steps; LL (8 x 512 x 8 x 16 B) / 8 / 2 (half is flags); LL128
  // (120 x 640 x 8 x 8 B) / 8 x 15/16; REDUCE_CHUNKSTEPS 1.
  CHECK(reduce_chunk_bytes(Protocol::SIMPLE).value() == Approx(524288.0).epsilon(kTol));
  CHECK(reduce_chunk_bytes(Protocol::LL).value() == Approx(32768.0).epsilon(kTol));
  CHECK(reduce_chunk_bytes(Protocol::LL128).value() == Approx(576000.0).epsilon(kTol));
  CHECK(reduce_chunk_bytes(Protocol::NONE).value() == 0.0);
}

TEST_CASE("pipeline_fill_time: a ring reduce on 16 ranks fills 14 chunks of the protocol on every channel",
          "[collectives][unit]") {
  // 16 GPUs on one node at 100e9 B/s, 16 channels, no GPU generation (no caps): the chain's last link starts 14
  // chunk times after its first, each chunk time moving one chunk on each of the 16 channels at 100e9 B/s in all.
  TuneTopology t;
  t.ranks = 16;
  t.gpus_per_node = 16;
  t.intra = LinkClass::NVLINK;
  t.intra_bandwidth = ByteRate(100e9);
  t.channels = 16;
  const auto big = plan(CollectiveKind::REDUCE, Algorithm::RING, Bytes(1073741824.0), 16, 16).front();
  const auto fill = [&](const PhasePlan& ph, Protocol p) {
    return pipeline_fill_time(ph, Algorithm::RING, p, t).value();
  };
  // Simple: 14 x 524288 x 16 / 100e9 = 1.17440512e-3 s; LL: 14 x 32768 x 16 / (100e9 x 0.5) = 1.4680064e-4 s; LL128:
  // 14 x 576000 x 16 / (100e9 x 0.92) = 129024000 / 9.2e10 = 1.40243478e-3 s.
  CHECK(fill(big, Protocol::SIMPLE) == Approx(1.17440512e-3).epsilon(1e-9));
  CHECK(fill(big, Protocol::LL) == Approx(1.4680064e-4).epsilon(1e-9));
  CHECK(fill(big, Protocol::LL128) == Approx(129024000.0 / 9.2e10).epsilon(1e-9));
  // A payload smaller than a chunk per channel (1 MiB < 16 x 512 KiB): NCCL splits it over the channels in smaller
  // chunks, so each chunk time moves the whole payload: 14 x 1048576 / 100e9 = 1.4680064e-4 s.
  const auto small = plan(CollectiveKind::REDUCE, Algorithm::RING, Bytes(1048576.0), 16, 16).front();
  CHECK(fill(small, Protocol::SIMPLE) == Approx(1.4680064e-4).epsilon(1e-9));
  // The engine pays it on top of NCCL's table latency.
  CHECK(phase_latency(big, Algorithm::RING, Protocol::SIMPLE, t).value() ==
        Approx(table_phase_latency(big, Algorithm::RING, Protocol::SIMPLE, t).value() + 1.17440512e-3).epsilon(1e-9));
  // No NCCL protocol, no channel count, or an all-reduce: no chain fill.
  CHECK(fill(big, Protocol::NONE) == 0.0);
  const auto ar = plan(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1073741824.0), 16, 16).front();
  CHECK(fill(ar, Protocol::SIMPLE) == 0.0);
  t.channels = 0;
  CHECK(fill(big, Protocol::SIMPLE) == 0.0);
  // Volta with 2 channels: Simple's busBw is capped at 2 x 40 GB/s (tuning.cc), so each chunk time is longer:
  // 14 x 524288 x 2 / 80e9 = 1.8350080e-4 s.
  t.channels = 2;
  t.arch = 0;
  CHECK(fill(big, Protocol::SIMPLE) == Approx(14.0 * 524288.0 * 2.0 / 80e9).epsilon(1e-9));
}

TEST_CASE("model_time: a scalar all-reduce over 1024 ranks (128 nodes x 8) costs the tree's LL latency, 85.2 us",
          "[collectives][unit]") {
  // The optimizer step's overflow flag (1 B) and grad norm (8 B) all-reduces at N_d = 1024 (sim/zero
  // emit_scalar_allreduce). Bandwidth is irrelevant at 8 B; the latencies (tuning.cc v2.27.7-1): ring LL: 6.6 us +
  // 2 x 1023 steps, 2 x 127 of them across nodes at 2.7 us and 1792 on NVLink at 0.6 us = 1767.6 us, plus the
  // network post overhead; tree LL: 6.8 us + 2 x ((8 - 1) x 0.6 + log2(128) x 5.0) us = 6.8 + 2 x 39.2 = 85.2 us.
  TuneTopology t;
  t.ranks = 1024;
  t.gpus_per_node = 8;
  t.intra = LinkClass::NVLINK;
  t.intra_bandwidth = ByteRate(240e9);
  t.inter_bandwidth = ByteRate(25e9);
  for (const double bytes : {1.0, 8.0}) {
    const auto c = choose(CollectiveKind::ALL_REDUCE, Bytes(bytes), t);
    CHECK(c.algorithm == Algorithm::TREE);
    CHECK(c.protocol == Protocol::LL);
    CHECK(model_time(CollectiveKind::ALL_REDUCE, c, Bytes(bytes), t).value() == Approx(85.2e-6).epsilon(1e-3));
  }
}
