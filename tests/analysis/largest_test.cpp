// search_largest (analysis/largest.hpp): the galloping search of `zerosim largest` against thresholds known by
// construction: fits(v) = v <= T, so the answer is T (or max, or nothing).
#include <catch2/catch.hpp>

#include "analysis/largest.hpp"

#include <cmath>
#include <cstdint>
#include <set>
#include <stdexcept>

using zerosim::analysis::search_largest;

namespace {

/// Probes a galloping search may take to find threshold `t` from `start`: doubling (or halving) over at most
/// ceil(log2(hi / lo)) + 2 values (hi, lo = the larger and smaller of t and start), then bisecting the last
/// bracket, at most hi wide: ceil(log2(hi)) + 1 more.
std::size_t probe_bound(std::int64_t start, std::int64_t t) {
  const double hi = static_cast<double>(std::max<std::int64_t>({t, start, 1}));
  const double lo = static_cast<double>(std::max<std::int64_t>(std::min(t, start), 1));
  return static_cast<std::size_t>(std::ceil(std::log2(hi / lo)) + 2 + std::ceil(std::log2(hi)) + 1);
}

} // namespace

TEST_CASE("search_largest: finds the threshold from above and below, each value tried once", "[analysis][unit]") {
  const std::int64_t max = 4096;
  for (const std::int64_t t : {1, 2, 3, 7, 35, 36, 53, 64, 65, 1000, 4095}) {
    for (const std::int64_t start : {1, 4, 16, 36, 100, 4096}) {
      const auto r = search_largest(start, max, [t](std::int64_t v) { return v <= t; });
      INFO("threshold " << t << ", start " << start);
      CHECK(r.largest == t);
      CHECK(r.first_miss == t + 1);
      std::set<std::int64_t> seen;
      for (const auto& p : r.probes) {
        CHECK(seen.insert(p.value).second);
        CHECK(p.fits == (p.value <= t));
      }
      CHECK(r.probes.size() <= probe_bound(start, t));
    }
  }
}

TEST_CASE("search_largest: everything fits up to max, or nothing fits", "[analysis][unit]") {
  const auto all = search_largest(8, 100, [](std::int64_t) { return true; });
  CHECK(all.largest == 100);
  CHECK(all.first_miss == 0);
  // 8, 16, 32, 64, then max itself (doubling 64 would pass it).
  REQUIRE(all.probes.size() == 5);
  CHECK(all.probes.back().value == 100);
  const auto none = search_largest(8, 100, [](std::int64_t) { return false; });
  CHECK(none.largest == 0);
  CHECK(none.first_miss == 1);
  // 8, 4, 2, 1.
  CHECK(none.probes.size() == 4);
  // A start beyond max is clamped to it.
  const auto clamped = search_largest(500, 100, [](std::int64_t v) { return v <= 60; });
  CHECK(clamped.probes.front().value == 100);
  CHECK(clamped.largest == 60);
  CHECK_THROWS_AS(search_largest(1, 0, [](std::int64_t) { return true; }), std::invalid_argument);
}
