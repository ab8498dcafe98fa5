#include "sim/engine/memory_pool.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using program::MemTag;

namespace {
constexpr double kTol = 1e-12;
}

TEST_CASE("MemoryPool: peak keeps the by-tag breakdown and the label of the Alloc that reached it", "[engine][unit]") {
  engine::MemoryPool pool(100);
  pool.alloc(MemTag::LP_PARAMS, 40, 0.0, 1);
  pool.alloc(MemTag::ACTIVATIONS, 30, 1.0, 2); // 70: the peak
  pool.free(MemTag::ACTIVATIONS, 30);
  pool.alloc(MemTag::WORKING, 10, 2.0, 3); // 50
  const auto m = pool.summary(7);
  REQUIRE(m.rank == 7);
  REQUIRE(m.peak.bytes == Approx(70).epsilon(kTol));
  REQUIRE(m.peak.label == 2);
  REQUIRE(m.peak.time == Approx(1.0).epsilon(kTol));
  REQUIRE(m.peak.by_tag[static_cast<std::size_t>(MemTag::LP_PARAMS)] == Approx(40).epsilon(kTol));
  REQUIRE(m.peak.by_tag[static_cast<std::size_t>(MemTag::ACTIVATIONS)] == Approx(30).epsilon(kTol));
  REQUIRE(m.final_bytes == Approx(50).epsilon(kTol));
  REQUIRE(m.steady_peak.bytes == Approx(70).epsilon(kTol)); // one step only: steady peak = peak
}

TEST_CASE("MemoryPool: steady peak counts only step >= 1, starting from what is live", "[engine][unit]") {
  engine::MemoryPool pool(100);
  pool.set_step(0, 0.0);
  pool.alloc(MemTag::LP_PARAMS, 20, 0.0, 1);
  pool.alloc(MemTag::OPTIMIZER_STATES, 60, 0.5, 2); // warm-up peak 80
  pool.free(MemTag::OPTIMIZER_STATES, 60);
  pool.set_step(1, 1.0); // 20 live entering step 1
  pool.alloc(MemTag::WORKING, 30, 1.5, 3); // steady peak 50
  const auto m = pool.summary(0);
  REQUIRE(m.peak.bytes == Approx(80).epsilon(kTol));
  REQUIRE(m.steady_peak.bytes == Approx(50).epsilon(kTol));
  REQUIRE(m.steady_peak.step == 1);
  REQUIRE(m.steady_peak.label == 3);
}

TEST_CASE("MemoryPool: fits compares against the capacity, unlimited when capacity is 0", "[engine][unit]") {
  engine::MemoryPool gpu(100);
  gpu.alloc(MemTag::LP_PARAMS, 90, 0.0, 1);
  REQUIRE(gpu.fits(10));
  REQUIRE_FALSE(gpu.fits(11));
  engine::MemoryPool host(0);
  REQUIRE(host.fits(1e18));
}
