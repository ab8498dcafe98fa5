// Adam's m and v at initialisation before DeepSpeed v0.13.2 and lazily at the first step from it (PR #5104, commit
// 18179807f "Remove optimizer step on initialization": initialize_optimizer_states no longer calls the optimizer's
// step; zero_semantics.md §3.4, §3.5, §7 item 17). Every test compares v0.13.1 with v0.13.2 on TinyModel:
// Ψ = 4 x (1,000,000 + 1,000) = 4,004,000 elements; at N = 4 the stage 1/2 partition (padded to 2N = 8: no padding)
// and the stage 3 partition (Σ ceil(numel/4) = 4 x 250,250) are both p = 1,001,000 elements, one stage-3 sub-group.
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CopyDir;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr double kPsi = 4'004'000;
constexpr double kP = 1'001'000; // partition at N = 4
constexpr std::array<int, 3> kBefore{0, 13, 1};
constexpr std::array<int, 3> kAfter{0, 13, 2};
constexpr double kAdamSecondsPerParam = 2.2e-10; // ZeRO-Offload Table 4: 1B params in 0.22 s (zero_semantics §4.1)

WalkResult run(scenario::ZeroConfig z, const std::array<int, 3>& version, double cpu_adam = 0.0) {
  z.deepspeed_version = version;
  return walk(generate(make_workload(), z, 4, 2, cpu_adam));
}

double total(const Sample& s) { return s.total; }
double grads_and_states(const Sample& s) { return s.tag(MemTag::FP32_GRADS) + s.tag(MemTag::OPTIMIZER_STATES); }
} // namespace

TEST_CASE("AdamStateInit: stage 1/2 create m and v at init before v0.13.2, at step 0 from it (PR #5104)",
          "[zero][validation]") {
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto old_r = run(zero_config(stage), kBefore);
    const auto new_r = run(zero_config(stage), kAfter);
    REQUIRE_FALSE(old_r.deadlock);
    REQUIRE_FALSE(new_r.deadlock);
    // Init, v0.13.1: lp flat 2Ψ = 8,008,000 + fp32 master 4p = 4,004,000, then initialize_optimizer_states' zero fp32
    // grad 4p = 4,004,000 live while the step creates m, v 8p = 8,008,000: peak 24,024,000 B, then the grad is dropped:
    // 20,020,000 B. v0.13.2: no step, no Adam state. The fp32 master's making holds its lp clone 2p for a moment
    // (2Ψ + 4p + 2p, stage_1_and_2.py `.clone().float()`, fp32_master_init_test); then initialize_optimizer_states
    // still allocates the zero fp32 grad of the partition and drops it at once (`group.grad = None` without
    // cpu_offload; stage_1_and_2.py l.667-686 @v0.13.2, unchanged to l.816-835 @v0.19.5): peak 2Ψ + 4p + 4p =
    // 16,016,000 B (above the clone's 14,014,000 B), then 12,012,000 B.
    CHECK(old_r.peak(total, -1) == Approx(2 * kPsi + 16 * kP).epsilon(kTol));
    CHECK(old_r.peak(grads_and_states, -1) == Approx(12 * kP).epsilon(kTol));
    CHECK(last_of(old_r, -1)->total == Approx(2 * kPsi + 12 * kP).epsilon(kTol));
    CHECK(last_of(old_r, -1)->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kP).epsilon(kTol));
    CHECK(new_r.peak(total, -1) == Approx(2 * kPsi + 8 * kP).epsilon(kTol));
    CHECK(new_r.peak(grads_and_states, -1) == Approx(4 * kP).epsilon(kTol));
    CHECK(last_of(new_r, -1)->total == Approx(2 * kPsi + 4 * kP).epsilon(kTol));
    CHECK(last_of(new_r, -1)->tag(MemTag::OPTIMIZER_STATES) == 0);
    CHECK(last_of(new_r, -1)->tag(MemTag::FP32_GRADS) == 0);
    // Step 0's peak, stage 2: at block.3.weight's gradient in the backward (the last block's saved activations are
    // freed): lp params 2Ψ + that lp grad 2 x 1,000,000 + fp32 master 4p + one IPG bucket of reduce_bucket_size
    // 5e8 x 2 B + the saved activations of blocks 0-2, 3 x 10e6 = 1,044,012,000 B; v0.13.1 adds m, v 8p =
    // 1,052,020,000 B. Stage 1 (DeepSpeedZeroOptimizer without partition_gradients) peaks at block.2's backward
    // working memory instead: 2Ψ + lp grads of blocks 2-3 2 x 1,001,000 + 4p + bucket 1e9 + activations 3 x 10e6 +
    // 2e6 working = 1,046,014,000 B, + 8p before v0.13.2.
    const double new_peak =
        stage == 2 ? 2 * kPsi + 2e6 + 4 * kP + 1e9 + 3e7 : 2 * kPsi + 2 * 1'001'000 + 4 * kP + 1e9 + 3e7 + 2e6;
    CHECK(new_r.peak(total, 0) == Approx(new_peak).epsilon(kTol));
    CHECK(old_r.peak(total, 0) == Approx(new_peak + 8 * kP).epsilon(kTol));
    // From step 1 on both releases hold m, v: the same peak.
    CHECK(old_r.peak(total, 1) == Approx(new_peak + 8 * kP).epsilon(kTol));
    CHECK(new_r.peak(total, 1) == Approx(new_peak + 8 * kP).epsilon(kTol));
  }
}

TEST_CASE("AdamStateInit: BF16_Optimizer creates m and v at init before v0.13.2", "[zero][validation]") {
  auto z = zero_config(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  const auto old_r = run(z, kBefore);
  const auto new_r = run(z, kAfter);
  // The init step's grads are views of the full fp32 gradient buffer (4Ψ): no temporary. End of init: bf16 flat 2Ψ +
  // fp32 master 4p + fp32 grad buffer 4Ψ = 28,028,000 B, + m, v 8p = 36,036,000 B before v0.13.2.
  CHECK(last_of(new_r, -1)->total == Approx(6 * kPsi + 4 * kP).epsilon(kTol));
  CHECK(last_of(old_r, -1)->total == Approx(6 * kPsi + 12 * kP).epsilon(kTol));
  CHECK(old_r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 0) == Approx(8 * kP));
  CHECK(old_r.peak(total, 0) == Approx(new_r.peak(total, 0) + 8 * kP).epsilon(kTol));
}

TEST_CASE(
    "AdamStateInit: stage 3 steps each sub-group at init with the zero grad of the largest sub-group live "
    "before v0.13.2",
    "[zero][validation]") {
  auto z = zero_config(3);
  z.reduce_bucket_size = 1'000; // keep the IPG bucket (2,000 B) out of the init peak
  const auto old_r = run(z, kBefore);
  const auto new_r = run(z, kAfter);
  // lp partitions 2p = 2,002,000 + persistent biases 4 x 1,000 x 2 B = 8,000 + fp32 master 4p = 4,004,000 + the init
  // zero grad of the largest (only) sub-group 4p = 4,004,000, with m, v 8p = 8,008,000 created while it is live
  // (v0.13.1): init peak 18,026,000 B; v0.13.2 10,018,000 B. Then the grad is dropped and the IPG bucket (2,000 B)
  // and grad partitions (2p) follow: end of init 16,026,000 B (v0.13.1) and 8,018,000 B (v0.13.2).
  CHECK(old_r.peak(total, -1) == Approx(18 * kP + 8'000).epsilon(kTol));
  CHECK(old_r.peak(grads_and_states, -1) == Approx(12 * kP).epsilon(kTol));
  CHECK(new_r.peak(total, -1) == Approx(10 * kP + 8'000).epsilon(kTol));
  CHECK(last_of(old_r, -1)->total == Approx(16 * kP + 10'000).epsilon(kTol));
  CHECK(last_of(new_r, -1)->total == Approx(8 * kP + 10'000).epsilon(kTol));
  // Step 0: the forward and backward of v0.13.1 carry m, v; v0.13.2 creates them at the optimizer step, after the
  // activations are gone, so step 0's peak is 8p lower; from step 1 they agree.
  CHECK(old_r.peak(total, 0) == Approx(new_r.peak(total, 0) + 8 * kP).epsilon(kTol));
  CHECK(old_r.peak(total, 1) == Approx(new_r.peak(total, 1)).epsilon(kTol));
}

TEST_CASE("AdamStateInit: offload_optimizer=cpu puts m and v on the host at init before v0.13.2",
          "[zero][validation]") {
  for (int stage : {2, 3}) {
    INFO("stage " << stage);
    auto z = zero_config(stage);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    const auto old_r = run(z, kBefore, kAdamSecondsPerParam);
    const auto new_r = run(z, kAfter, kAdamSecondsPerParam);
    REQUIRE_FALSE(old_r.deadlock);
    CHECK(last_of(old_r, -1)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kP).epsilon(kTol));
    CHECK(last_of(new_r, -1)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
    CHECK(last_of(new_r, 0)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kP).epsilon(kTol));
    // Host time: the init step is priced at init (state init 8 B + Adam 28 B per element = 36/30 of a CPU-Adam op of
    // 30 B); step 0 of v0.13.2 pays the state creation (8/30) that v0.13.1 paid at init. Page faults are free here.
    const double adam = kP * kAdamSecondsPerParam;
    CHECK(old_r.cpu_seconds.at(-1) - (new_r.cpu_seconds.count(-1) ? new_r.cpu_seconds.at(-1) : 0.0) ==
          Approx(36.0 / 30.0 * adam).epsilon(1e-6));
    CHECK(new_r.cpu_seconds.at(0) - old_r.cpu_seconds.at(0) == Approx(8.0 / 30.0 * adam).epsilon(1e-6));
  }
}

TEST_CASE(
    "AdamStateInit: with NVMe the init step swaps each sub-group in and out and step 0 reads m and v "
    "before v0.13.2",
    "[zero][validation]") {
  auto z = zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  const auto old_r = run(z, kBefore, kAdamSecondsPerParam);
  const auto new_r = run(z, kAfter, kAdamSecondsPerParam);
  REQUIRE_FALSE(old_r.deadlock);
  // Init: both write the fp32 master (4p) to NVMe; v0.13.1 then reads it back (4p), steps, and writes master + m + v
  // (12p), its host m, v (8p) released after the swap-out. The constructor waits for the master's write in both.
  CHECK(old_r.copied(-1, CopyDir::NVME_READ) == Approx(4 * kP).epsilon(kTol));
  CHECK(old_r.copied(-1, CopyDir::NVME_WRITE) == Approx(16 * kP).epsilon(kTol));
  CHECK(new_r.copied(-1, CopyDir::NVME_WRITE) == Approx(4 * kP).epsilon(kTol));
  CHECK(new_r.copied(-1, CopyDir::NVME_READ) == 0);
  CHECK(old_r.peak([](const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }, -1) == Approx(8 * kP));
  CHECK(last_of(old_r, -1)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  // Step 0's swap-in: fp32 master + grads (8p), + m, v (8p) when they exist already (v0.13.1); step 1 reads 16p in both.
  CHECK(new_r.copied(0, CopyDir::NVME_READ) == Approx(8 * kP).epsilon(kTol));
  CHECK(old_r.copied(0, CopyDir::NVME_READ) == Approx(16 * kP).epsilon(kTol));
  CHECK(old_r.copied(1, CopyDir::NVME_READ) == Approx(16 * kP).epsilon(kTol));
}

namespace {
/// Host Adam m, v (OPTIMIZER_STATES on the host) of a sample.
double host_mv(const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }

scenario::ZeroConfig nvme_swapper(bool pipelined, Elements sub_group_size) {
  auto z = zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  z.sub_group_size = sub_group_size;
  z.optimizer_pipeline_read = pipelined;
  z.optimizer_swap_buffer_count = 12;
  return z;
}
} // namespace

TEST_CASE("AdamStateInit: the pipelined NVMe swapper keeps the host m, v it created until the next swap-in",
          "[zero][validation]") {
  // DeepSpeedCPUAdam creates m, v with torch.zeros_like (pageable). PartitionedOptimizerSwapper writes them and
  // sets their .data empty (release_memory); PipelinedOptimizerSwapper copies them into swap buffers to write them
  // and keeps them until the sub-group's next _swap_in_optimizer_state points them at swap buffers
  // (pipelined_optimizer_swapper.py, optimizer_utils.py set_swap_buffers). One sub-group of p = 1,001,000 elements
  // (sub_group_size 1e9): 8 B x p = 8,008,000 B.
  const Elements one = 1'000'000'000;
  // v0.13.1: created by the init step. Pipelined: all of them at the end of init, through step 0's forward and
  // backward, freed at step 0's swap-in. Not pipelined: freed at init's swap-out.
  const auto old_pipe = run(nvme_swapper(true, one), kBefore, kAdamSecondsPerParam);
  const auto old_flat = run(nvme_swapper(false, one), kBefore, kAdamSecondsPerParam);
  REQUIRE_FALSE(old_pipe.deadlock);
  CHECK(last_of(old_pipe, -1)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kP).epsilon(kTol));
  CHECK(last_of(old_flat, -1)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  CHECK(old_pipe.peak(host_mv, 0) == Approx(8 * kP).epsilon(kTol));
  CHECK(last_of(old_pipe, 0)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  CHECK(old_pipe.peak(host_mv, 1) == 0);
  // v0.13.2: created by step 0. Pipelined: kept from step 0 into step 1 (freed at its swap-in); not pipelined: only
  // while step 0 steps the sub-group.
  const auto new_pipe = run(nvme_swapper(true, one), kAfter, kAdamSecondsPerParam);
  const auto new_flat = run(nvme_swapper(false, one), kAfter, kAdamSecondsPerParam);
  REQUIRE_FALSE(new_pipe.deadlock);
  CHECK(new_pipe.peak(host_mv, -1) == 0);
  CHECK(last_of(new_pipe, 0)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kP).epsilon(kTol));
  CHECK(last_of(new_flat, 0)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  CHECK(new_flat.peak(host_mv, 0) == Approx(8 * kP).epsilon(kTol));
  CHECK(new_pipe.peak(host_mv, 1) == Approx(8 * kP).epsilon(kTol));
  CHECK(last_of(new_pipe, 1)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
}

TEST_CASE(
    "AdamStateInit: with 4 sub-groups the pipelined swapper holds all four sub-groups' m, v, the other swapper one",
    "[zero][validation]") {
  // sub_group_size 250,250 at N = 4: each block's partition (250,000 + 250 elements) closes a sub-group, K = 4 of
  // S = 250,250. The non-pipelined swapper frees a sub-group's m, v at its swap-out: at most 8 B x S = 2,002,000 B
  // on the host. The pipelined one keeps all four: 4 x 8 B x S = 8 B x p = 8,008,000 B at the end of step 0
  // (v0.13.2), and step 1's swap-ins drop them one by one.
  const Elements s = 250'250;
  const auto pipe = run(nvme_swapper(true, s), kAfter, kAdamSecondsPerParam);
  const auto flat = run(nvme_swapper(false, s), kAfter, kAdamSecondsPerParam);
  REQUIRE_FALSE(pipe.deadlock);
  CHECK(flat.peak(host_mv, 0) == Approx(8 * 250'250.0).epsilon(kTol));
  CHECK(last_of(pipe, 0)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(4 * 8 * 250'250.0).epsilon(kTol));
  CHECK(last_of(pipe, 1)->host_tag(MemTag::OPTIMIZER_STATES) == 0);
}

TEST_CASE(
    "AdamStateInit: the init step of torch single-tensor AdamW holds its sqrt and denom temps (adamw.py) before "
    "v0.13.2",
    "[zero][validation]") {
  // initialize_optimizer_states' step is the wrapped optimizer's own step (stage3.py _optimizer_step, l.865 @v0.9.0),
  // so torch 1.13's _single_tensor_adamw runs `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)` at
  // init as at every step: v.sqrt() and the quotient, 4p each, live at once. Stage 3, N = 4, one sub-group of p =
  // 1,001,000: lp partitions 2p + persistent biases 8,000 + fp32 master 4p + init zero grad 4p + m, v 8p + the two
  // temps 8p = 26p + 8,000 = 26,034,000 B at init (FusedAdam: 18p + 8,000). Both are freed at the end of the step:
  // the end of init is the same as FusedAdam's.
  auto z = zero_config(3);
  z.reduce_bucket_size = 1'000;
  z.deepspeed_version = kBefore;
  auto wl = make_workload();
  wl.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  const auto torch_r = walk(generate(wl, z, 4, 2));
  const auto fused_r = run(z, kBefore);
  const Sample* s = torch_r.find(-1, "adam at init sub-group 0: denom temp (torch single-tensor)", false);
  REQUIRE(s != nullptr);
  CHECK(s->tag(MemTag::FLATTEN_TEMP) == Approx(8 * kP).epsilon(kTol));
  CHECK(s->total == Approx(26 * kP + 8'000).epsilon(kTol));
  CHECK(torch_r.peak(total, -1) == Approx(26 * kP + 8'000).epsilon(kTol));
  CHECK(fused_r.peak(total, -1) == Approx(18 * kP + 8'000).epsilon(kTol));
  CHECK(last_of(torch_r, -1)->total == Approx(last_of(fused_r, -1)->total).epsilon(kTol));
  // From v0.13.2 there is no init step, so no temps at init.
  z.deepspeed_version = kAfter;
  CHECK(walk(generate(wl, z, 4, 2)).find(-1, "adam at init sub-group 0: denom temp (torch single-tensor)", false) ==
        nullptr);
}
