// Scale smoke tests: a ZeRO-3-like program on hundreds / thousands of ranks finishes, within simple bounds.
#include "sim/engine/engine.hpp"
#include "tests/engine/zero3_like_program.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>

using namespace zerosim;

namespace {

/// Runs the program on `nodes` DGX-like nodes and checks bounds that follow from its structure:
/// lower bound = the compute stream's kernels back to back; upper bound = every kernel and every collective in
/// series, each collective at its slowest ring bandwidth (the 200e9 B/s node uplink) plus its latency steps.
void run_and_check(int nodes, int layers) {
  test::Zero3LikeSpec z;
  z.layers = layers;
  const auto cluster = test::dgx_a100_like(nodes);
  const int n = cluster.world_size();
  const auto t0 = std::chrono::steady_clock::now();
  engine::EngineOptions every_rank; // no folding: this test exercises the engine at full scale
  every_rank.fold = scenario::FoldPolicy::OFF;
  const auto r = engine::run_simulation(cluster, test::zero3_like_program(z), every_rank);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("zero3-like: %d ranks, %d layers: simulated step %.17g s, wall %.2f s\n", n, layers, r.end_time, wall);

  REQUIRE(r.finished);
  REQUIRE(r.steps.size() == 1);
  const double peak = 312e12 * 0.7;
  const double hbm = 2.039e12 * 0.8;
  const double compute = layers * (z.fwd_flops / peak + z.layer_param_bytes / hbm) +
                         layers * (z.bwd_flops / peak + 2 * z.layer_param_bytes / hbm);
  const double frac = (n - 1.0) / n;
  const double coll = frac * z.layer_param_bytes / 200e9 + (n - 1) * 12e-6; // AG or RS, slowest link, max α
  REQUIRE(r.steps[0].duration() >= compute * (1 - 1e-9));
  REQUIRE(r.steps[0].duration() <= compute + 3 * layers * coll);
  // Peak memory: all layers' activations (32 x 1e8) are live at the end of forward, plus gather buffers in flight.
  REQUIRE(r.memory.size() == static_cast<std::size_t>(n));
  REQUIRE(r.memory[0].peak.bytes >= layers * 1e8);
}

} // namespace

TEST_CASE("run_simulation: a ZeRO-3-like step on 512 ranks finishes", "[engine][e2e]") { run_and_check(64, 32); }

TEST_CASE("run_simulation: a ZeRO-3-like step on 4096 ranks finishes", "[engine][e2e][.slow]") {
  run_and_check(512, 32);
}
