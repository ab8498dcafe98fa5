// ZeRO-Offload (stage 1/2, offload_optimizer=cpu) grad copies on the engine: without overlap_comm they are queued on
// the compute stream (stage_1_and_2.py reduce_ipg_grads: `stream = current_stream()`), so a PCIe-bound copy delays
// the backward kernels behind it; with overlap_comm they ride the reduction stream and overlap backward.
#include "analysis/summary.hpp"
#include "sim/engine/engine.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/test_gpu.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <cmath>

#include <sys/wait.h>
#include <unistd.h>

using namespace zerosim;

namespace {
constexpr double kTol = 1e-9;
constexpr double kAdamSecondsPerParam = 2.2e-10; // ZeRO-Offload Table 4: 1B params in 0.22 s (zero_semantics §4.1)

/// One GPU (test-gpu) whose PCIe link moves `pcie` B/s per direction with 1 us latency.
scenario::ClusterSpec one_gpu(double pcie) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 1;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(pcie), Seconds(1e-6), "test"};
  c.gpu = zerosim::test::test_gpu(80e9);
  return c;
}

/// Step 1's duration of stage 2 + CPU offload on the tiny model whose backward takes 20 ms per block; -1 when the
/// run did not finish. Runs in a forked child: SimGrid allows one simulation per process.
double step_time_here(bool overlap, double pcie) {
  zero::testing::TinyModel m;
  auto wl = zero::testing::make_workload(m);
  for (auto& l : wl.layers)
    l.bwd_flops = Flops(1e12); // 1e12 / (100e12 x 0.5) = 20 ms per block
  auto z = zero::testing::zero_config(2);
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  z.overlap_comm = overlap;
  z.reduce_bucket_size = 1'500'000; // one block (weight + bias) per bucket
  const auto prog = zero::testing::generate(wl, z, 1, 2, kAdamSecondsPerParam);
  const auto r = engine::run_simulation(one_gpu(pcie), prog, {});
  return r.finished && r.steps.size() == 2 ? r.steps[1].duration() : -1.0;
}

double step_time(bool overlap, double pcie) {
  const double v = zerosim::test::in_child([&] { return step_time_here(overlap, pcie); });
  REQUIRE(v > 0);
  return v;
}
} // namespace

TEST_CASE(
    "Offload: without overlap_comm the fp32 grad copies sit on the compute stream and add their whole PCIe time "
    "to the step",
    "[engine][validation]") {
  // Hand calculation, N = 1, Ψ = 4,004,000: per step the grads go D2H as fp32 (4Ψ B, one copy per param, on the
  // compute stream) and the updated lp params come back H2D (2Ψ B, after CPU Adam, before the next step's
  // forward). Everything is serialised on one stream, so changing the PCIe bandwidth from 25e9 to 1e9 B/s moves
  // the step by exactly 6Ψ x (1/1e9 - 1/25e9) s = 24.024e6 x 0.96e-9 = 23.063 ms (copy latencies cancel).
  const double psi = zero::testing::psi();
  const double expected = 6.0 * psi * (1.0 / 1e9 - 1.0 / 25e9);
  const double slow = step_time(false, 1e9);
  const double fast = step_time(false, 25e9);
  REQUIRE(slow - fast == Approx(expected).epsilon(1e-6));
  // With overlap_comm the buckets (B_r = 1.5e6; grads arrive bias then weight, block 3 first) are
  // {b3.bias, b3.weight, b2.bias}, {b2.weight, b1.bias}, {b1.weight, b0.bias}, {b0.weight}. A bucket is reduced and
  // copied on the comm stream when the next grad does not fit, i.e. after that weight's block backward: the first
  // bucket's fp32 copies (4 x 1,002,000 B) run during block 1's 20 ms backward and the second's (4 x 1,001,000 B)
  // during block 0's (at most 4 ms at 1e9 B/s: hidden); the last two buckets run after the last backward kernel
  // and stay exposed, as does the H2D. So the step moves by 8.012e6 x (1/1e9 - 1/25e9) s = 7.692 ms less.
  const double hidden = 4.0 * (1'002'000 + 1'001'000) * (1.0 / 1e9 - 1.0 / 25e9);
  const double slow_overlap = step_time(true, 1e9);
  const double fast_overlap = step_time(true, 25e9);
  REQUIRE(slow_overlap - fast_overlap == Approx(expected - hidden).epsilon(1e-6));
}

TEST_CASE("Offload: the host step splits into CPU Adam, gradient unscale and the lp cast by their DRAM bytes",
          "[engine][validation]") {
  // Hand calculation, N = 1, Ψ = 4,004,000, CPU Adam calibrated at 2.2e-10 s per parameter for its 30 B of DRAM
  // traffic (sim/zero/cpu_adam.hpp), so 2.2e-10 / 30 s per byte. Per step on the CPU-optimizer stream (DeepSpeed
  // 0.19.5, stage_1_and_2.py step): unscale_and_clip_grads' mul_ reads and writes the fp32 grads (8 B), CPU Adam
  // reads p, g, m, v and writes p, m, v (28 B), the fp32 params are cast to lp on the host (4 + 2 = 6 B).
  const double v = zerosim::test::in_child([] {
    zero::testing::TinyModel m;
    const auto wl = zero::testing::make_workload(m);
    auto z = zero::testing::zero_config(2);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    const auto prog = zero::testing::generate(wl, z, 1, 2, kAdamSecondsPerParam);
    const auto r = engine::run_simulation(one_gpu(25e9), prog, {});
    const auto h = analysis::host_step_of(r);
    const double per_byte = kAdamSecondsPerParam / 30.0 * zero::testing::psi();
    const bool ok = std::abs(h.cpu_adam_s - 28.0 * per_byte) < 1e-12 &&
                    std::abs(h.unscale_s - 8.0 * per_byte) < 1e-12 && std::abs(h.lp_cast_s - 6.0 * per_byte) < 1e-12 &&
                    h.other_s == 0.0;
    return r.finished && ok ? h.total() : -1.0;
  });
  // 42 B per parameter in all: 4,004,000 x 42 x 2.2e-10 / 30 = 1.23323 ms.
  REQUIRE(v == Approx(4'004'000 * 42.0 * 2.2e-10 / 30.0).epsilon(1e-9));
}
