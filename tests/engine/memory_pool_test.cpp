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

TEST_CASE("MemoryPool: host pools count pinned bytes apart, with their maximum and their share of the peak",
          "[engine][unit]") {
  // Hand calculation: pinned 40 (master) + pageable 30 (Adam) = 70, the peak, of which 40 pinned; then the
  // pageable buffer goes, 25 more pinned arrive (65 pinned, the pinned maximum, total 65 < 70).
  engine::MemoryPool pool;
  pool.alloc(MemTag::FP32_MASTER, 40, 0.0, 1, true);
  pool.alloc(MemTag::OPTIMIZER_STATES, 30, 1.0, 2);
  pool.free(MemTag::OPTIMIZER_STATES, 30);
  pool.alloc(MemTag::FP32_GRADS, 25, 2.0, 3, true);
  REQUIRE(pool.pinned() == Approx(65).epsilon(kTol));
  const auto m = pool.summary(0);
  REQUIRE(m.peak.bytes == Approx(70).epsilon(kTol));
  REQUIRE(m.pinned_at_peak == Approx(40).epsilon(kTol));
  REQUIRE(m.pinned_peak == Approx(65).epsilon(kTol));
  // By tag at the peak: the master's 40 pinned, the Adam state's 30 not (pinned_by_tag_at_peak sums to 40).
  CHECK(m.pinned_by_tag_at_peak[static_cast<std::size_t>(MemTag::FP32_MASTER)] == Approx(40).epsilon(kTol));
  CHECK(m.pinned_by_tag_at_peak[static_cast<std::size_t>(MemTag::OPTIMIZER_STATES)] == 0.0);
  CHECK(m.pinned_by_tag_at_peak[static_cast<std::size_t>(MemTag::FP32_GRADS)] == 0.0); // arrived after the peak
  pool.free(MemTag::FP32_GRADS, 25, true);
  REQUIRE(pool.pinned() == Approx(40).epsilon(kTol));
  // The node pool path (allocate / release) counts them too.
  engine::MemoryPool node(1000);
  REQUIRE(node.allocate(1, MemTag::FP32_GRADS, 100, 0, 0.0, 1, false, true).ok);
  REQUIRE(node.pinned() == Approx(100).epsilon(kTol));
  node.release(1, MemTag::FP32_GRADS, 100, true);
  REQUIRE(node.pinned() == Approx(0).epsilon(kTol));
}
