#include "sim/collectives/collective_plan.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::collectives;
using namespace zerosim::literals;
using program::CollectiveKind;

namespace {
constexpr double kTol = 1e-12; // closed form vs hand arithmetic: rounding only
}

TEST_CASE("analytic_time: ring all-reduce matches the alpha-beta hand calculation", "[collectives][unit]") {
  // N = 8, S = 1e9 B, β = 25e9 B/s, α = 5 µs:
  // 2·7/8·1e9 / 25e9 + 2·7·5e-6 = 0.07 + 7e-5 = 0.07007 s.
  auto t = analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 8, 25_GBps, 5_us);
  REQUIRE(t.value() == Approx(0.07007).epsilon(kTol));
}

TEST_CASE("analytic_time: ring all-gather and reduce-scatter match the hand calculation", "[collectives][unit]") {
  // N = 8, S = 1e9 B, β = 25e9 B/s, α = 5 µs: 7/8·1e9 / 25e9 + 7·5e-6 = 0.035 + 3.5e-5 = 0.035035 s.
  for (auto kind : {CollectiveKind::ALL_GATHER, CollectiveKind::REDUCE_SCATTER}) {
    auto t = analytic_time(kind, Algorithm::RING, Bytes(1e9), 8, 25_GBps, 5_us);
    REQUIRE(t.value() == Approx(0.035035).epsilon(kTol));
  }
}

TEST_CASE("analytic_time: algbw x bus factor recovers the link bandwidth when alpha is 0", "[collectives][unit]") {
  // nccl-tests: busbw = S/t · factor equals the per-link bandwidth for a bandwidth-bound ring.
  for (auto kind : {CollectiveKind::ALL_REDUCE, CollectiveKind::ALL_GATHER, CollectiveKind::REDUCE_SCATTER}) {
    for (int n : {2, 4, 8, 16}) {
      auto t = analytic_time(kind, Algorithm::RING, Bytes(4e9), n, 100_GBps, Seconds(0));
      double busbw = 4e9 / t.value() * bus_bandwidth_factor(kind, n);
      REQUIRE(busbw == Approx(100e9).epsilon(kTol));
    }
  }
}

TEST_CASE("analytic_time: zero for one rank", "[collectives][unit]") {
  REQUIRE(analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1e9), 1, 25_GBps, 5_us).value() == 0.0);
}

TEST_CASE("analytic_time: rejects bad group size, bandwidth and latency", "[collectives][unit]") {
  SECTION("n = 0") {
    REQUIRE_THROWS_WITH(analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1), 0, 25_GBps, 5_us),
                        Catch::Contains("n must be >= 1"));
  }
  SECTION("zero bandwidth") {
    REQUIRE_THROWS_WITH(analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1), 2, ByteRate(0), 5_us),
                        Catch::Contains("bandwidth"));
  }
  SECTION("negative latency") {
    REQUIRE_THROWS_WITH(analytic_time(CollectiveKind::ALL_REDUCE, Algorithm::RING, Bytes(1), 2, 25_GBps,
                                      Seconds(-1e-6)),
                        Catch::Contains("latency"));
  }
}
