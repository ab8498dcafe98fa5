// Memory and traffic facts of reference/zero_semantics.md §7 that no other test asserted: each TEST_CASE names its
// item as (zero_semantics §7.N) and checks the generated programs (or the engine) against the hand calculation in
// its comment. The other §7 items are asserted where their mechanism is tested (grep "zero_semantics §7.").
// The last test asserts a §3 fact with no §7 item (padding of the stage 1/2 flat buffer and the stage 3 partitions).
#include "sim/engine/engine.hpp"
#include "sim/program/program.hpp"
#include "sim/zero/model_states.hpp"
#include "tests/support/test_gpu.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::CopyDir;
using program::MemTag;

namespace {

constexpr double kTol = 1e-9;
constexpr double kAdamSecondsPerParam = 2.2e-10; // ZeRO-Offload Table 4: 1B params in 0.22 s (zero_semantics §4.1)

/// Stage 3 config where every parameter is gathered on demand and released after each use (no persistence, no
/// reuse, no prefetch: a prefetch walk that passes a later use of a gathered param keeps it until then,
/// partitioned_param_coordinator.py l.642-651), so each fetch's gathers are visible.
scenario::ZeroConfig stage3_release_every_use() {
  auto z = zero_config(3);
  z.stage3_param_persistence_threshold = 0;
  z.stage3_max_reuse_distance = 0;
  z.stage3_prefetch_bucket_size = 0;
  return z;
}

/// `blocks` blocks of one `weight_numel` weight and a 1,000-element bias: with the default persistence threshold
/// (1e5) the bias persists, so each stage 3 submodule gathers exactly one tensor, its weight.
TinyModel one_weight_blocks(int blocks, Elements weight_numel) {
  TinyModel m;
  m.blocks = blocks;
  m.weight_numel = weight_numel;
  m.bias_numel = 1'000;
  return m;
}

} // namespace

TEST_CASE("GPT-2 1.5B: mixed-precision Adam model states are 16 B/param = 24 GB on one GPU (zero_semantics §7.4)",
          "[zero][validation]") {
  // ZeRO paper §3.1: Ψ = 1.5e9, fp16 params 2Ψ + fp16 grads 2Ψ + fp32 params, momentum, variance 4Ψ + 4Ψ + 4Ψ
  // = 16Ψ = 24e9 B. The program: 4 blocks of 374,999,000 + 1,000 elements = 1.5e9, stage 0 (no partitioning) at
  // N_d = 1; at the end of step 1's backward all four state kinds coexist.
  const TinyModel m = one_weight_blocks(4, 374'999'000);
  REQUIRE(psi(m) == 1.5e9);
  const auto r = walk(generate(make_workload(m), zero_config(0), 1));
  REQUIRE_FALSE(r.deadlock);
  REQUIRE(r.peak([](const Sample& s) { return s.model_states(); }, 1) == Approx(24e9).epsilon(kTol));
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }, 1) == Approx(3e9).epsilon(kTol));
  const auto* end = last_of(r, 1); // after the step: params 2Ψ, master 4Ψ, m and v 8Ψ
  REQUIRE(end->tag(MemTag::LP_PARAMS) == Approx(3e9).epsilon(kTol));
  REQUIRE(end->tag(MemTag::FP32_MASTER) == Approx(6e9).epsilon(kTol));
  REQUIRE(end->tag(MemTag::OPTIMIZER_STATES) == Approx(12e9).epsilon(kTol));
  REQUIRE(paper_model_state_bytes(0, 1.5e9, 1).value() == Approx(24e9).epsilon(kTol));
}

TEST_CASE(
    "Comm volume per step per rank: 2Ψ elements for DP and stages 1/2 with reduce-scatter, 3Ψ for stage 3 "
    "(zero_semantics §7.5)",
    "[zero][validation]") {
  // ZeRO §7: DP all-reduce = reduce-scatter Ψ + all-gather Ψ = 2Ψ; P_os / P_os+g reduce-scatter grads Ψ and
  // all-gather params Ψ = 2Ψ; P_os+g+p all-gathers params in forward Ψ and backward Ψ plus reduce-scatter Ψ = 3Ψ.
  // The paper drops the ring factor f = (N-1)/N; per-rank wire bytes with lp = 2 B, N = 4, f = 0.75:
  //   DP / stage 1 / stage 2: 2Ψ · f · 2 B = 3Ψ B;  stage 3: 3Ψ · f · 2 B = 4.5Ψ B.
  // Stages 1/2 send the paper's volume only with use_multi_rank_bucket_allreduce=false (the default all-reduces,
  // §7.13): one dist.reduce per owning rank of each bucket, the volume of a reduce-scatter (the root of each sends
  // nothing: (N-1)/N of the bucket per rank, summed over the owners).
  const TinyModel m;
  const int n = 4;
  const auto wl = make_workload(m);
  const double p = psi(m);
  REQUIRE(walk(generate(wl, zero_config(0), n)).wire_bytes(1, n) == Approx(3 * p).epsilon(kTol));
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    auto z = zero_config(stage);
    z.use_multi_rank_bucket_allreduce = false;
    const auto r = walk(generate(wl, z, n));
    REQUIRE(r.wire_bytes(1, n) == Approx(3 * p).epsilon(kTol));
    REQUIRE(r.stats(1, CollectiveKind::REDUCE).payload == Approx(2 * p).epsilon(kTol));
    REQUIRE(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
    REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * p).epsilon(kTol));
    REQUIRE(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 0);
  }
  REQUIRE(walk(generate(wl, stage3_release_every_use(), n)).wire_bytes(1, n) == Approx(4.5 * p).epsilon(kTol));
}

TEST_CASE("Default overlap_comm: false for stages 1/2 so one 1e9 B IPG bucket, true for stage 3 (zero_semantics §7.12)",
          "[zero][validation]") {
  // config.py validator: overlap_comm unset -> True only for stage 3. Stage 1/2 IPG bucket with it false:
  // reduce_bucket_size 5e8 x 2 B = 1e9 B (2e9 B if it were true, §7.10).
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto z = zero_config(stage);
    REQUIRE_FALSE(z.overlap_comm.has_value());
    REQUIRE_FALSE(z.overlap_comm_effective());
    const auto r = walk(generate(make_workload(), z, 4));
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }) == Approx(1e9).epsilon(kTol));
  }
  REQUIRE(zero_config(3).overlap_comm_effective());
}

TEST_CASE(
    "Stage 1 holds the full lp grads through the micro-steps, stage 2 reduces each micro-step and keeps only its "
    "partition (zero_semantics §7.14)",
    "[zero][validation]") {
  // GA = 2, N = 4, Ψ = 4,004,000, largest param 1e6. Sampled when micro-step 1's forward allocates block.0's
  // activations (step 1):
  //   stage 1: param.grad of every param accumulated, 2Ψ B; nothing reduced yet, grads_in_partition 0 until the
  //            GA boundary.
  //   stage 2: micro-step 0 was reduced in its backward: lp grads 0, grads_in_partition 2Ψ/N. With
  //            contiguous_gradients each grad is copied into the IPG bucket and released at once, so at most one
  //            param's lp grad (2 x 1e6 B) exists at a time.
  TinyModel m;
  m.grad_accum = 2;
  const double p = psi(m);
  const int n = 4;
  const auto r1 = walk(generate(make_workload(m), zero_config(1), n));
  const auto* s1 = find_nth_alloc(r1, 1, "act block.0", 1);
  REQUIRE(s1 != nullptr);
  REQUIRE(s1->tag(MemTag::LP_GRADS) == Approx(2 * p).epsilon(kTol));
  REQUIRE(s1->tag(MemTag::GRAD_PARTITION) == 0);
  const auto r2 = walk(generate(make_workload(m), zero_config(2), n));
  const auto* s2 = find_nth_alloc(r2, 1, "act block.0", 1);
  REQUIRE(s2 != nullptr);
  REQUIRE(s2->tag(MemTag::LP_GRADS) == 0);
  REQUIRE(s2->tag(MemTag::GRAD_PARTITION) == Approx(2 * p / n).epsilon(kTol));
  REQUIRE(r2.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }, 1) ==
          Approx(2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
}

TEST_CASE(
    "World size 1, stages 1/2: fp32 master 4Ψ and Adam 8Ψ on the single GPU, no all-gather (zero_semantics §7.18)",
    "[zero][validation]") {
  // N = 1: the only partition is the whole model. After step 1: fp32 master 4Ψ = 16,016,000 B, Adam m and v
  // 8Ψ = 32,032,000 B (Ψ = 4,004,000); all_gather_dp_groups is skipped, the gradient all-reduce still issued.
  const TinyModel m;
  const double p = psi(m);
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto r = walk(generate(make_workload(m), zero_config(stage), 1));
    const auto* end = last_of(r, 1);
    REQUIRE(end->tag(MemTag::FP32_MASTER) == Approx(4 * p).epsilon(kTol));
    REQUIRE(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * p).epsilon(kTol));
    REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).calls == 0);
    REQUIRE(r.stats(1, CollectiveKind::ALL_REDUCE).calls > 0);
  }
}

TEST_CASE(
    "Stage 3 prefetch: defaults 5e7 / 1e9 / 1e5, and each fetch prefetches until 5e7 elements are in flight "
    "(zero_semantics §7.21)",
    "[zero][validation]") {
  // config.py defaults: stage3_prefetch_bucket_size 5e7, stage3_max_live_parameters 1e9, persistence 1e5.
  const scenario::ZeroConfig d;
  REQUIRE(d.stage3_prefetch_bucket_size == 50'000'000);
  REQUIRE(d.stage3_max_live_parameters == 1'000'000'000);
  REQUIRE(d.stage3_param_persistence_threshold == 100'000);
  // 12 blocks of one 2e7-element weight (bias persistent), N = 4, reuse distance 0. Step 1 (trace complete), fetch
  // of block.0: gather block.0, then prefetch while numel_prefetching < min(1e9 - 2e7 available, 5e7): block.1
  // (2e7), block.2 (4e7), block.3 (6e7, stop). Gathered when block.0's forward kernels run: 4 weights x
  // 2e7 x 2 B = 1.6e8 B (a 5e8 window, the docs' value, would gather all 12 = 4.8e8 B; no prefetch 4e7 B).
  const TinyModel m = one_weight_blocks(12, 20'000'000);
  auto z = zero_config(3);
  z.stage3_max_reuse_distance = 0;
  const auto r = walk(generate(make_workload(m), z, 4));
  const auto* s = find_nth_op(r, 1, "fwd block.0", 0);
  REQUIRE(s != nullptr);
  REQUIRE(s->tag(MemTag::GATHER_BUFFER) == Approx(1.6e8).epsilon(kTol));
  // Step 0 records the trace: block.0 alone (4e7 B).
  const auto* s0 = find_nth_op(r, 0, "fwd block.0", 0);
  REQUIRE(s0 != nullptr);
  REQUIRE(s0->tag(MemTag::GATHER_BUFFER) == Approx(4e7).epsilon(kTol));
}

TEST_CASE(
    "Stage 3 prefetch is gated by max_live_parameters minus the params already available "
    "(zero_semantics §7.21)",
    "[zero][validation]") {
  // As above with stage3_max_live_parameters = 5e7: after gathering block.0 (2e7 available) the budget is
  // min(5e7 - 2e7, 5e7) = 3e7: block.1 (2e7), block.2 (4e7, stop) -> 3 weights x 4e7 B = 1.2e8 B.
  const TinyModel m = one_weight_blocks(12, 20'000'000);
  auto z = zero_config(3);
  z.stage3_max_reuse_distance = 0;
  z.stage3_max_live_parameters = 50'000'000;
  const auto r = walk(generate(make_workload(m), z, 4));
  const auto* s = find_nth_op(r, 1, "fwd block.0", 0);
  REQUIRE(s != nullptr);
  REQUIRE(s->tag(MemTag::GATHER_BUFFER) == Approx(1.2e8).epsilon(kTol));
}

TEST_CASE(
    "Stage 3 defaults on a 3e8-param model release no param in forward, so backward gathers nothing "
    "(zero_semantics §7.22)",
    "[zero][validation]") {
  // 10 blocks of a 29,999,000-element weight + 1,000-element (persistent) bias: Ψ = 3e8, N = 4, defaults.
  // __params_to_release after block k's forward (step 1): the fwd+bwd volume before block k's backward reuse is
  // 2 x (9 - k) x 3e7 <= 5.4e8 < max_reuse_distance 1e9 -> kept. Step 1 all-gathers: the 10 weights once,
  // 10 x 29,999,000 x 2 B = 599,980,000 B, plus the post-step all-gather of the persistent biases 10 x 1,000 x 2 B
  // = 20,000 B -> 6e8 B = 2Ψ B.
  // Contrast, Ψ = 6e8 (weights 59,999,000): block.0's distance is 18 x 6e7 = 1.08e9 >= 1e9 -> released and
  // gathered again in backward (block.1: 16 x 6e7 = 9.6e8, kept): 11 x 119,998,000 + 20,000 = 1,319,998,000 B.
  const TinyModel small = one_weight_blocks(10, 29'999'000);
  REQUIRE(psi(small) == 3e8);
  const auto rs = walk(generate(make_workload(small), zero_config(3), 4));
  REQUIRE(rs.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(6e8).epsilon(kTol));
  const TinyModel big = one_weight_blocks(10, 59'999'000);
  const auto rb = walk(generate(make_workload(big), zero_config(3), 4));
  REQUIRE(rb.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(1'319'998'000.0).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: stage 1 moves 4Ψ/N B of fp32 grads D2H and 2Ψ/N B of lp params H2D per step at GA = 1 "
    "(zero_semantics §7.24)",
    "[zero][validation]") {
  // stage_1_and_2.py with offload_optimizer=cpu, GA = 1: async_inplace_copy_grad_to_fp32_buffer_from_gpu copies
  // this rank's Ψ/N grad elements as fp32 (4Ψ/N B) to the host; step copies the updated lp partition back (2Ψ/N B).
  // Ψ = 4,004,000: N = 1 -> 16,016,000 / 8,008,000 B; N = 4 -> 4,004,000 / 2,002,000 B.
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    auto z = zero_config(1);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    const auto r = walk(generate(make_workload(m), z, n, 2, kAdamSecondsPerParam));
    for (int step : {0, 1}) {
      INFO("step " << step);
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(4 * psi(m) / n).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(2 * psi(m) / n).epsilon(kTol));
    }
  }
}

TEST_CASE(
    "run_simulation: nvidia-smi = reserved + eager CUDA context 666,632,192 B + NCCL buffers on 2 GPUs "
    "(zero_semantics §7.32)",
    "[zero][validation]") {
  // PyTorch PR #86509: context + modules 666,632,192 B with eager loading (287,047,680 B lazy, the default, is
  // checked on one GPU in tests/engine). NCCL with 2 ranks on a PCIe-class link (25e9 B/s), 2 channels
  // (memory_pool.hpp nccl_buffer_bytes, NCCL v2.27.7-1): 2 x 2 MiB + 2 channels x 3 x 2 MiB of device arrays, and per
  // channel the ring's receive buffer (LL 512 KiB + LL128 4,915,200 B + SIMPLE 4 MiB -> 10 MiB) and send header
  // (2 MiB): 16 + 24 = 40 MiB. A 1 B tensor: 512 B allocated, one 2 MiB segment reserved.
  // nvidia-smi per GPU = 2,097,152 + 666,632,192 + 41,943,040 = 710,672,384 B.
  constexpr double MiB = 1024.0 * 1024.0;
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = 2;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu = zerosim::test::test_gpu(80e9);
  program::ProgramBuilder b;
  auto s = b.add_stream("compute", program::StreamKind::COMPUTE);
  b.alloc(s, program::Phase::INIT, "tiny", MemTag::WORKING, Bytes(1));
  engine::EngineOptions opt;
  opt.cuda_context = 666'632'192.0;
  const auto r = engine::run_simulation(c, b.build(1), opt);
  REQUIRE(r.finished);
  REQUIRE(r.memory.size() == 2);
  for (const auto& m : r.memory) {
    INFO("rank " << m.rank);
    CHECK(m.peak.bytes == 512.0);
    CHECK(m.reserved_peak.bytes == 2.0 * MiB);
    CHECK(m.non_pytorch_bytes == 666'632'192.0 + 40.0 * MiB);
    CHECK(m.nvidia_smi_peak == 710'672'384.0);
  }
}

TEST_CASE(
    "Padding: stage 1/2 pad the flat lp buffer to a multiple of 2 N_d, stage 3 pads each param to ceil(numel / N_d) "
    "(stage_1_and_2.py nccl_start_alignment_factor, partition_parameters.py _partition_param)",
    "[zero][validation]") {
  // Four blocks of a 1,000,001-element weight and a 1,000-element bias, N_d = 4: Ψ = 4 x 1,001,001 = 4,004,004.
  //   Stages 1/2: flatten_dense_tensors_aligned pads the flat buffer to a multiple of 2 x 4 = 8 -> 4,004,008
  //     elements, each rank's partition 1,001,002: fp32 master 4 x 1,001,002 = 4,004,008 B, Adam 8 x 1,001,002 =
  //     8,008,016 B; the full lp flat buffer (all ranks' partitions) 2 x 4,004,008 = 8,008,016 B, which the
  //     post-step all_gather_into_tensor fills (payload 8,008,016 B).
  //   Stage 3 (no persistent params): each param split on its own, weight ceil(1,000,001 / 4) = 250,001, bias 250;
  //     per rank 4 x 250,251 = 1,001,004 elements: lp partitions 2,002,008 B, grad partitions 2,002,008 B, fp32
  //     master 4,004,016 B, Adam 8,008,032 B; each micro-step's reduce-scatter input holds the padded grads,
  //     4 x 1,001,004 x 2 B = 8,008,032 B.
  TinyModel m;
  m.weight_numel = 1'000'001;
  const int n = 4;
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto r = walk(generate(make_workload(m), zero_config(stage), n));
    REQUIRE_FALSE(r.deadlock);
    const auto* end = last_of(r, 1);
    REQUIRE(end != nullptr);
    CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4'004'008).epsilon(kTol));
    CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8'008'016).epsilon(kTol));
    CHECK(end->tag(MemTag::LP_PARAMS) == Approx(8'008'016).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'016).epsilon(kTol));
  }
  auto z = zero_config(3);
  z.stage3_param_persistence_threshold = 0;
  const auto r = walk(generate(make_workload(m), z, n));
  REQUIRE_FALSE(r.deadlock);
  const auto* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->tag(MemTag::LP_PARAMS) == Approx(2'002'008).epsilon(kTol));
  CHECK(end->tag(MemTag::GRAD_PARTITION) == Approx(2'002'008).epsilon(kTol));
  CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4'004'016).epsilon(kTol));
  CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8'008'032).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(8'008'032).epsilon(kTol));
}
