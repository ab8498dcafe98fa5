// offload_optimizer=nvme at stage 3 on the engine: without pipelining (PartitionedOptimizerSwapper) each sub-group
// is read, stepped by CPU Adam and written back in turn; pipeline_read overlaps the next sub-group's read with this
// one's CPU step, pipeline_write the previous sub-group's write (deepspeed/runtime/swap_tensor/
// pipelined_optimizer_swapper.py, stage3.py step; sim/zero/offload_nvme.hpp).
//
// TinyModel (4 blocks x {1,000,000 weight, 1,000 bias}) on one test GPU, N_d = 1, sub_group_size 1,001,000: K = 4
// sub-groups (one block each) of S = 1,001,000 elements. test_node's NVMe: 5e9 B/s read, 2e9 B/s write, 80 us per
// round of 8388608 B in flight (tests/engine/nvme_io_test.cpp). From the 2nd step on a sub-group's swap-in reads
// 16 B/element (fp32 master, grads, Adam m, v) and its swap-out writes 12 B/element (master, m, v):
//   r = ceil(16,016,000 / 8388608) x 80e-6 + 16,016,000 / 5e9 = 2 x 80e-6 + 3.2032e-3 = 3.3632e-3 s
//   w = ceil(12,012,000 / 8388608) x 80e-6 + 12,012,000 / 2e9 = 2 x 80e-6 + 6.006e-3  = 6.166e-3 s
// CPU Adam alone takes kAdamSecondsPerParam x S = 0.1001 s per sub-group (its unscale and lp cast add to it), more
// than r + w even when a read and a write share the drives, so with c a sub-group's CPU step:
//   serial:                 r + c + w per sub-group
//   pipeline_read:          r, then c + w per sub-group (the next read hides under c)
//   pipeline_read + _write: r, then c per sub-group, then the last w (each write hides under the next c)
// The rest of the step (forward, backward, grad swap-out) is the same in all three, so step 2's durations differ by
// (K - 1) x r and (K - 1) x w.
#include "sim/engine/engine.hpp"
#include "sim/zero/offload_nvme.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/test_gpu.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;

namespace {

constexpr double kTol = 1e-9; // s, absolute: differences of ~1 s step times (SimGrid's timing precision)
constexpr double kAdamSecondsPerParam = 1e-7;
constexpr double kSubGroup = 1'001'000;
constexpr int kSubGroups = 4;
constexpr double kRead = 2 * 80e-6 + 16 * kSubGroup / 5e9; // r
constexpr double kWrite = 2 * 80e-6 + 12 * kSubGroup / 2e9; // w

/// Step 2's duration with offload_optimizer=nvme and the given pipelining; -1 if the run did not finish.
double step_time_here(bool read, bool write) {
  const auto wl = zero::testing::make_workload();
  auto z = zero::testing::zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  z.sub_group_size = static_cast<Elements>(kSubGroup);
  z.optimizer_pipeline_read = read;
  z.optimizer_pipeline_write = write;
  z.optimizer_swap_buffer_count = 12;
  const auto prog = zero::testing::generate(wl, z, 1, 2, kAdamSecondsPerParam);
  const auto r = engine::run_simulation(zerosim::test::test_node(1, true), prog, {});
  return r.finished && r.steps.size() == 2 ? r.steps[1].duration() : -1.0;
}

// Before its write, initialize_parameters -> _swap_out_unpinned_tensors copies the fp32 master's source, the lp
// flat partitions on the GPU, into the pinned swap buffers (`dst.data.copy_(src.data)`, optimizer_utils.py
// l.412-433, stage3.py l.1097-1099 @v0.19.5): a blocking copy across devices and dtypes, so a D2H of the lp
// partition (2 B x Ψ = 8,008,000 B: 1 us + 8,008,000 / 25e9 on the PCIe link, + 8,008,000 / 15e9 through the
// pageable staging buffer at the default cpu.pageable_copy_bandwidth) and a cast on the host (2 B pageable read +
// 4 B pinned written per element at kAdamSecondsPerParam / 30 B):
//   M0 = 1e-6 + 3.2032e-4 + 5.33867e-4 + 6 / 30 x 1e-7 x 4,004,000 = 8.551867e-4 + 0.08008 = 0.080935187 s
constexpr double kPsi = kSubGroups * kSubGroup;
constexpr double kMasterCopy = 1e-6 + 2 * kPsi / 25e9 + 2 * kPsi / 15e9 + 6.0 / 30.0 * kAdamSecondsPerParam * kPsi;

double step_time(bool read, bool write) {
  const double v = zerosim::test::in_child([&] { return step_time_here(read, write); });
  REQUIRE(v > 0);
  return v;
}

} // namespace

TEST_CASE("OptimizerSwap: pipeline_read hides all but the first sub-group's NVMe read under CPU Adam",
          "[engine][validation]") {
  CHECK(kAdamSecondsPerParam * kSubGroup > kRead + kWrite); // the closed forms' premise
  const double serial = step_time(false, false);
  const double read = step_time(true, false);
  // serial - pipeline_read = K (r + c + w) - (r + K (c + w)) = (K - 1) r = 3 x 3.3632e-3 = 10.0896e-3 s.
  CHECK(serial - read == Approx((kSubGroups - 1) * kRead).epsilon(0).margin(kTol));
}

TEST_CASE("OptimizerSwap: pipeline_write also hides all but the last sub-group's NVMe write", "[engine][validation]") {
  const double read = step_time(true, false);
  const double both = step_time(true, true);
  const double serial = step_time(false, false);
  // pipeline_read - both = K (c + w) + r - (r + K c + w) = (K - 1) w = 3 x 6.166e-3 = 18.498e-3 s.
  CHECK(read - both == Approx((kSubGroups - 1) * kWrite).epsilon(0).margin(kTol));
  // serial - both = (K - 1) (r + w) = 27.5876e-3 s.
  CHECK(serial - both == Approx((kSubGroups - 1) * (kRead + kWrite)).epsilon(0).margin(kTol));
}

namespace {
/// When step 0 begins (the end of init) with DeepSpeed v0.13.1 (Adam state created at init), pipeline_read on.
double init_time_here() {
  const auto wl = zero::testing::make_workload();
  auto z = zero::testing::zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  z.sub_group_size = static_cast<Elements>(kSubGroup);
  z.optimizer_pipeline_read = true;
  z.optimizer_swap_buffer_count = 12;
  z.deepspeed_version = {0, 13, 1};
  const auto prog = zero::testing::generate(wl, z, 1, 1, kAdamSecondsPerParam);
  const auto r = engine::run_simulation(zerosim::test::test_node(1, true), prog, {});
  return r.finished && !r.steps.empty() ? r.steps[0].start : -1.0;
}
} // namespace

TEST_CASE("OptimizerSwap: before v0.13.2 the init step reads the fp32 master only after its initial swap-out",
          "[engine][validation]") {
  // The fp32 master is copied into the swap buffers (M0, above); the pipelined swapper writes it (4 B x Ψ =
  // 16,016,000 B) on its write handle and waits for it
  // (optimizer_utils.py _swap_out_unpinned_tensors). Then the init step, per sub-group: read its master (4 B x S;
  // with pipeline_read the next one's read runs under this one's CPU step), create m, v and step with the zero grad
  // on the host (8 B fresh + 8 B master + 4 B grad + 16 B m, v = 36 B per element at kAdamSecondsPerParam / 30 B),
  // copy the new pageable m, v into pinned swap buffers (8 B read + 8 B written per element, pipelined_optimizer_
  // swapper.py _swap_out_optimizer_state), write master, m, v back (12 B x S) and wait for it (no pipeline_write):
  //   W0 = ceil(16,016,000 / 8388608) x 80e-6 + 16,016,000 / 2e9 = 2 x 80e-6 + 8.008e-3 = 8.168e-3 s
  //   r0 = ceil(4,004,000 / 8388608) x 80e-6 + 4,004,000 / 5e9   = 80e-6 + 0.8008e-3    = 0.8808e-3 s
  //   c0 = 36 / 30 x 1e-7 x 1,001,000                                                    = 0.12012 s
  //   m0 = 16 / 30 x 1e-7 x 1,001,000                                                    = 0.053386667 s
  //   init = M0 + W0 + r0 + K (c0 + m0 + w)
  //        = 0.080935187 + 8.168e-3 + 0.8808e-3 + 4 x (0.12012 + 0.053386667 + 6.166e-3) = 0.808674653 s
  // Without the wait the first read and its CPU step would overlap W0.
  constexpr double kInitWrite = 2 * 80e-6 + 4 * (kSubGroups * kSubGroup) / 2e9; // 4 B x Ψ, Ψ = K x S
  constexpr double kInitRead = 80e-6 + 4 * kSubGroup / 5e9;
  constexpr double kInitAdam = 36.0 / 30.0 * kAdamSecondsPerParam * kSubGroup;
  constexpr double kInitCopy = 16.0 / 30.0 * kAdamSecondsPerParam * kSubGroup;
  const double init = zerosim::test::in_child([] { return init_time_here(); });
  REQUIRE(init > 0);
  CHECK(init == Approx(kMasterCopy + kInitWrite + kInitRead + kSubGroups * (kInitAdam + kInitCopy + kWrite))
                    .epsilon(0)
                    .margin(kTol));
  CHECK(init == Approx(0.8086746533).epsilon(0).margin(1e-9));
}

namespace {
/// When step 0 begins with DeepSpeed v0.13.2 (no optimizer step at init), with or without pipeline_read.
double init_time_v0132_here(bool pipelined) {
  const auto wl = zero::testing::make_workload();
  auto z = zero::testing::zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  z.sub_group_size = static_cast<Elements>(kSubGroup);
  z.optimizer_pipeline_read = pipelined;
  z.optimizer_swap_buffer_count = 12;
  z.deepspeed_version = {0, 13, 2};
  const auto prog = zero::testing::generate(wl, z, 1, 1, kAdamSecondsPerParam);
  const auto r = engine::run_simulation(zerosim::test::test_node(1, true), prog, {});
  return r.finished && !r.steps.empty() ? r.steps[0].start : -1.0;
}
} // namespace

TEST_CASE("OptimizerSwap: from v0.13.2 step 0 starts after the constructor's fp32 master write",
          "[engine][validation]") {
  // The constructor's initialize_parameters copies the fp32 master into the swap buffers (M0, above), writes it
  // (4 B x Ψ = 16,016,000 B) and waits for each batch (optimizer_utils.py _swap_out_unpinned_tensors), on either
  // swapper's handle; with no optimizer step at init nothing else takes time there:
  //   W0 = ceil(16,016,000 / 8388608) x 80e-6 + 16,016,000 / 2e9 = 2 x 80e-6 + 8.008e-3 = 8.168e-3 s
  //   init = M0 + W0 = 0.080935187 + 8.168e-3 = 0.089103187 s
  for (bool pipelined : {false, true}) {
    INFO("pipeline_read " << pipelined);
    const double init = zerosim::test::in_child([&] { return init_time_v0132_here(pipelined); });
    REQUIRE(init >= 0);
    CHECK(init == Approx(kMasterCopy + 8.168e-3).epsilon(0).margin(kTol));
    CHECK(init == Approx(0.0891031867).epsilon(0).margin(1e-9));
  }
}
