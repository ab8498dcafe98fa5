#include "sim/zero/offload_cpu.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::CopyDir;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr double kAdamSecondsPerParam = 2.2e-10; // ZeRO-Offload Table 4: 1B params in 0.22 s (zero_semantics §4.1)
/// Host time of one offload step per parameter, relative to that 30-B CPU-Adam op (kCpuAdamBytesPerParam): the
/// fp32 grads' unscale mul_ (4 B read + 4 B written), DeepSpeedCPUAdam without the lp write (28 B) and, from
/// DeepSpeed 0.17.0 (stage 1/2) and in every stage-3 release, the host cast fp32 -> lp (4 B read + 2 B written):
/// (8 + 28 + 6) / 30 = 1.4 (stage_1_and_2.py / stage3.py step, unscale_and_clip_grads).
constexpr double kHostStepPerAdam = (8.0 + 28.0 + 6.0) / 30.0;
/// The first step's extra host time: Adam's m, v created with torch.zeros_like (8 B written per element), relative to
/// the 30-B CPU-Adam op (page faults are free in these inputs: page_fault_seconds_per_byte 0).
constexpr double kStateInitPerAdam = 8.0 / 30.0;
/// DeepSpeedCPUAdam's two pinned tile buffers before v0.14.3: 2 x TILE x 4 B, TILE = 128 x 1024 x 1024
/// (csrc/includes/cpu_adam.h l.23, l.66-67 @v0.3.15).
constexpr double kCpuAdamTiles = 2.0 * 128 * 1024 * 1024 * 4;

scenario::ZeroConfig offload(int stage) {
  auto z = zero_config(stage);
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  return z;
}
} // namespace

TEST_CASE(
    "OffloadCpu: stage 1/2 programs are valid and leave only the lp params and the offload grad buffer on "
    "the GPU",
    "[zero][unit]") {
  for (int stage : {1, 2})
    for (int n : {1, 4})
      for (int ga : {1, 2})
        for (bool overlap : {false, true}) {
          INFO("stage " << stage << " N " << n << " GA " << ga << " overlap " << overlap);
          TinyModel m;
          m.grad_accum = ga;
          auto z = offload(stage);
          z.overlap_comm = overlap;
          z.reduce_bucket_size = 1'500'000;
          const auto p = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
          REQUIRE(program::validate(p).empty());
          const auto r = walk(p);
          REQUIRE_FALSE(r.deadlock);
          // GPU after the last step: lp params 2Ψ + temp_grad_buffer_for_gpu_offload (largest param, lp).
          const auto& end = r.timeline.back();
          REQUIRE(end.total == Approx(2 * psi(m) + 2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
          REQUIRE(end.tag(MemTag::FP32_MASTER) == 0);
          REQUIRE(end.tag(MemTag::OPTIMIZER_STATES) == 0);
          if (n == 1)
            REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).calls == 0);
        }
}

TEST_CASE(
    "OffloadCpu: stage 2 moves 4Ψ/N B of fp32 grads D2H and 2Ψ/N B of lp params H2D per step at GA = 1 "
    "(zero_semantics.md §3.4) (zero_semantics §7.24)",
    "[zero][validation]") {
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
    for (int step : {0, 1}) {
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(4 * psi(m) / n).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(2 * psi(m) / n).epsilon(kTol));
      // Unscale, CPU Adam and the lp cast on this rank's partition only.
      REQUIRE(r.cpu_seconds.at(step) ==
              Approx((kHostStepPerAdam + kStateInitPerAdam * (step == 0)) * kAdamSecondsPerParam * psi(m) / n)
                  .epsilon(kTol));
    }
  }
}

TEST_CASE(
    "OffloadCpu: pinned host buffers' bytes cost pinned_byte_weight times a pageable byte in the host step "
    "(cpu_adam.hpp pinned_byte_weight)",
    "[zero][unit]") {
  // Hand calculation per partition element, in bytes at the 30-B CPU-Adam rate, weight w = 4 (2 ranks on a DGX A100's
  // 8 NUMA nodes): unscale grads 8; CPU Adam master 8 + grads 4 + m, v 16; lp cast master 4 + lp target 2.
  // - stage 2, DeepSpeed 0.19.5 (pin_memory true): grads, master and lp staging pinned, m, v not:
  //   4 x 8 + (4 x 12 + 16) + 4 x 6 = 120 -> 4.0 x the CPU-Adam time;
  // - stage 2, pin_memory false at 0.19.5: nothing pinned: 42 -> 1.4;
  // - stage 2, pin_memory false at 0.17.6 (fp32 master pinned always from v0.14.1 to v0.18.3):
  //   8 + (4 x 8 + 4 + 16) + (4 x 4 + 2) = 78 -> 2.6;
  // - stage 3, pin_memory true: only the fp32 grads are pinned (master `.to(cpu).clone()`, pageable cast target):
  //   4 x 8 + (8 + 4 x 4 + 16) + 6 = 78 -> 2.6.
  const TinyModel m;
  const int n = 2;
  const double p = psi(m) / n;
  struct Case {
    int stage;
    std::optional<bool> pin;
    std::array<int, 3> version;
    double host_step;
  };
  for (const Case& c : {Case{2, std::nullopt, {0, 19, 5}, 4.0}, Case{2, false, {0, 19, 5}, 1.4},
                        Case{2, false, {0, 17, 6}, 2.6}, Case{3, true, {0, 19, 5}, 2.6}}) {
    INFO("stage " << c.stage << " version 0." << c.version[1] << "." << c.version[2]);
    auto z = offload(c.stage);
    z.offload_optimizer_pin_memory = c.pin;
    z.deepspeed_version = c.version;
    const auto wl = make_workload(m);
    GeneratorInput in{wl, z, n, 2, kAdamSecondsPerParam};
    in.pinned_byte_weight = 4.0;
    const auto r = walk(generate_program(in));
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.cpu_seconds.at(1) == Approx(c.host_step * kAdamSecondsPerParam * p).epsilon(1e-6));
  }
}

TEST_CASE(
    "OffloadCpu: the CPU Adam bound reported is the one that priced most of the passes' seconds, not the last pass's "
    "(GeneratorNotes)",
    "[zero][unit]") {
  // torch single-tensor Adam on the host, stage 2 at DeepSpeed 0.19.5 (pin_memory true: fp32 grads and master pinned,
  // m, v and the temporaries pageable); bytes per partition element of its two passes (emit_host_unscale_and_adam):
  // - pass 1 (up to T2 = T1 / c): master 8 + grads 8 pinned = 16, states 36 + temps 12 pageable = 48;
  // - pass 2 (T2.add_, p.addcdiv_): master 8 pinned, states 4 + temps 12 pageable = 16.
  // With a = the node bound's seconds per byte (kAdamSecondsPerParam / 30), pinned bytes weighted w = 2, and the
  // rank's threads at k x a per byte (every byte once):
  // - k = 1.3: pass 1 node a (2 x 16 + 48) = 80a < threads 1.3a x 64 = 83.2a: thread-bound;
  //            pass 2 node a (2 x 8 + 16) = 32a > threads 1.3a x 24 = 31.2a: node-bound, and it is the last pass.
  //   Per step the thread bound prices 83.2a, the node bound 32a, so the threads set CPU Adam's time.
  // - k = 1.2: 76.8a < 80a and 28.8a < 32a: node-bound throughout; k = 1.4: 89.6a > 80a and 33.6a > 32a: threads.
  const TinyModel m;
  const int n = 2;
  const double p = psi(m) / n;
  const double a = kAdamSecondsPerParam / 30.0;
  struct Case {
    double k;
    double thread_per_step; // x a x p
    double node_per_step;
    bool thread_bound;
  };
  for (const Case& c :
       {Case{1.3, 83.2, 32.0, true}, Case{1.2, 0.0, 80.0 + 32.0, false}, Case{1.4, 89.6 + 33.6, 0.0, true}}) {
    INFO("k = " << c.k);
    auto wl = make_workload(m);
    wl.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
    auto z = offload(2);
    z.deepspeed_version = {0, 19, 5};
    GeneratorInput in{wl, z, n, 2, kAdamSecondsPerParam};
    in.pinned_byte_weight = 2.0;
    in.thread_seconds_per_param = c.k * kAdamSecondsPerParam;
    GeneratorNotes notes;
    in.notes = &notes;
    REQUIRE_FALSE(walk(generate_program(in)).deadlock);
    CHECK(notes.cpu_adam_priced);
    // Two unrolled steps, each with both passes.
    CHECK(notes.cpu_adam_thread_bound_seconds == Approx(2 * c.thread_per_step * a * p).epsilon(1e-6));
    CHECK(notes.cpu_adam_node_bound_seconds == Approx(2 * c.node_per_step * a * p).epsilon(1e-6));
    CHECK(notes.cpu_adam_thread_bound() == c.thread_bound);
  }
}

TEST_CASE(
    "OffloadCpu: stage 2 with GA = 2 adds lp grads D2H before the boundary and H2D from the 2nd micro-step "
    "(§3.4 ZeRO-Offload path)",
    "[zero][validation]") {
  // Hand calculation per step, P = Ψ/N: micro 0 (not boundary) D2H lp 2P; micro 1 (boundary)
  // async_accumulate_grad_in_cpu_via_gpu (copy_grads_in_partition calls it whenever micro_step_id > 0): H2D lp 2P
  // and D2H lp 2P, then async_inplace_copy_grad_to_fp32_buffer_from_gpu D2H fp32 4P; step H2D lp params 2P.
  // D2H = 2P + 2P + 4P = 8P, H2D = 2P + 2P = 4P.
  TinyModel m;
  m.grad_accum = 2;
  const int n = 4;
  const double p = psi(m) / n;
  const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
  REQUIRE(r.copied(1, CopyDir::D2H) == Approx(8 * p).epsilon(kTol));
  REQUIRE(r.copied(1, CopyDir::H2D) == Approx(4 * p).epsilon(kTol));
  // Stage 1 accumulates on the GPU instead: only the boundary's fp32 D2H and the params' H2D.
  const auto r1 = walk(generate(make_workload(m), offload(1), n, 2, kAdamSecondsPerParam));
  REQUIRE(r1.copied(1, CopyDir::D2H) == Approx(4 * p).epsilon(kTol));
  REQUIRE(r1.copied(1, CopyDir::H2D) == Approx(2 * p).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: stage 2 with GA = 4 sends the lp grads D2H on the micro-steps each release did (PRs #6550, #7967)",
    "[zero][validation]") {
  // async_accumulate_grad_in_cpu_via_gpu per release, micro-steps k = 0..3 (3 = the boundary), P = Ψ/N: H2D of the
  // accumulated lp grads at k > 0 (3 x 2P) in all; D2H of the lp grads at k < 3 before v0.15.2 (3 x 2P), at k = 0
  // from v0.15.2 to v0.18.x (2P), at every k from v0.19.0 (4 x 2P). Plus the boundary's fp32 D2H 4P and the step's
  // lp params H2D 2P (v0.17.0 on, and before v0.14.1).
  //   v0.14.0: D2H 6P + 4P = 10P; v0.17.6: 2P + 4P = 6P; v0.19.5: 8P + 4P = 12P; H2D 6P + 2P = 8P in all three.
  TinyModel m;
  m.grad_accum = 4;
  const int n = 4;
  const double p = psi(m) / n;
  for (const auto& [version, d2h] :
       {std::pair{std::array<int, 3>{0, 14, 0}, 10.0}, std::pair{std::array<int, 3>{0, 17, 6}, 6.0},
        std::pair{std::array<int, 3>{0, 19, 5}, 12.0}}) {
    INFO("DeepSpeed 0." << version[1] << "." << version[2]);
    auto z = offload(2);
    z.deepspeed_version = version;
    const auto r = walk(generate(make_workload(m), z, n, 2, kAdamSecondsPerParam));
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.copied(1, CopyDir::D2H) == Approx(d2h * p).epsilon(kTol));
    CHECK(r.copied(1, CopyDir::H2D) == Approx(8 * p).epsilon(kTol));
  }
}

TEST_CASE(
    "OffloadCpu: host holds the fp32 master and grads from init and Adam state from the first step "
    "(§3.4) (zero_semantics §7.17)",
    "[zero][validation]") {
  const TinyModel m;
  const int n = 4;
  const double p = psi(m) / n;
  const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
  const auto* init = last_of(r, -1);
  REQUIRE(init->host_tag(MemTag::FP32_MASTER) == Approx(4 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::FP32_GRADS) == Approx(4 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::LP_PARAMS) == Approx(2 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  REQUIRE(last_of(r, 0)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * p).epsilon(kTol));
  // GPU model states: lp params (2Ψ) plus, in backward, one param's lp grad until it is copied into the bucket
  // (largest param 1e6 x 2 B); no fp32 state and no grads_in_partition on the GPU.
  const double states = r.peak([](const Sample& s) { return s.model_states(); }, 1);
  REQUIRE(states == Approx(2 * psi(m) + 2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: stage 3 moves 2 B D2H + 2 B H2D + 4 B D2H per partition element of grads and 2 B H2D of "
    "params per step at GA = 1 (zero_semantics.md §3.5 Offload in stage 3)",
    "[zero][validation]") {
  // Hand calculation, P = Ψ/N (no padding): grads D2H 2P + 4P = 6P, H2D 2P; params H2D 2P -> H2D 4P.
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const double p = psi(m) / n;
    const auto r = walk(generate(make_workload(m), offload(3), n, 2, kAdamSecondsPerParam));
    REQUIRE_FALSE(r.deadlock);
    for (int step : {0, 1}) {
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(4 * p).epsilon(kTol));
      REQUIRE(r.cpu_seconds.at(step) ==
              Approx((kHostStepPerAdam + kStateInitPerAdam * (step == 0)) * kAdamSecondsPerParam * p).epsilon(kTol));
    }
    // GPU keeps only the lp partitions, persistent params and the IPG bucket; the host has grads, master and
    // (after step 0) Adam state: 2P + 4P + 4P + 8P.
    const auto& end = r.timeline.back();
    REQUIRE(end.tag(MemTag::FP32_MASTER) == 0);
    REQUIRE(end.tag(MemTag::GRAD_PARTITION) == 0);
    REQUIRE(end.tag(MemTag::OPTIMIZER_STATES) == 0);
    const double host = end.host_tag(MemTag::GRAD_PARTITION) + end.host_tag(MemTag::FP32_MASTER) +
                        end.host_tag(MemTag::FP32_GRADS) + end.host_tag(MemTag::OPTIMIZER_STATES);
    REQUIRE(host == Approx(18 * p).epsilon(kTol));
  }
}

TEST_CASE("OffloadCpu: stage 3 offload programs are valid for GA and overlap variants", "[zero][unit]") {
  for (int n : {1, 4})
    for (int ga : {1, 2})
      for (bool overlap : {false, true}) {
        INFO("N " << n << " GA " << ga << " overlap " << overlap);
        TinyModel m;
        m.grad_accum = ga;
        auto z = offload(3);
        z.overlap_comm = overlap;
        z.reduce_bucket_size = 1'500'000;
        const auto p = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
        REQUIRE(program::validate(p).empty());
        const auto r = walk(p);
        REQUIRE_FALSE(r.deadlock);
        REQUIRE(r.timeline.back().tag(MemTag::FLATTEN_TEMP) == 0);
        REQUIRE(r.timeline.back().tag(MemTag::GATHER_BUFFER) == 0);
      }
}

TEST_CASE(
    "OffloadCpu: stage 3 offload_param copies each fetched partition H2D before its all-gather "
    "(zero_semantics.md §3.5 offload_param)",
    "[zero][validation]") {
  // Hand calculation, N = 4, P = Ψ/N, max_reuse_distance 0, no prefetch (a prefetch walking past a layer's backward
  // use would keep it gathered until then) and no persistent params so every layer is fetched in forward and again
  // in backward: H2D = params 2P (fwd) + 2P (bwd) + grads 2P = 6P, no lp H2D at the step
  // (CPU Adam updates the host lp partition); D2H = grads 2P + 4P = 6P; all-gather payload 2 x 2Ψ.
  // At N = 1 there is no all-gather: the fetch is an H2D copy of the whole layer (2Ψ fwd + 2Ψ bwd).
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const double p = psi(m) / n;
    auto z = offload(3);
    z.offload_param = scenario::OffloadDevice::CPU;
    z.stage3_param_persistence_threshold = 0;
    z.stage3_max_reuse_distance = 0;
    z.stage3_prefetch_bucket_size = 0;
    const auto prog = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    const auto r = walk(prog);
    REQUIRE_FALSE(r.deadlock);
    for (int step : {0, 1}) {
      INFO("step " << step);
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).payload == Approx(n > 1 ? 4 * psi(m) : 0).epsilon(kTol));
    }
    // No lp params on the GPU between steps; the host holds the lp partition 2Ψ/N.
    REQUIRE(r.timeline.back().tag(MemTag::LP_PARAMS) == 0);
    REQUIRE(r.timeline.back().tag(MemTag::GATHER_BUFFER) == 0);
    REQUIRE(r.timeline.back().host_tag(MemTag::LP_PARAMS) == Approx(2 * p).epsilon(kTol));
    // At N = 1 fetched layers still occupy GPU memory while in use.
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); }, 1) > 0);
  }
}

TEST_CASE(
    "OffloadCpu: stage 3 offload_param without optimizer offload keeps the optimizer on the GPU and writes the lp "
    "partition back D2H (zero_semantics.md §3.5 offload_param)",
    "[zero][validation]") {
  // DeepSpeed accepts offload_param alone (offload_config.py; stage3.py _create_fp16_partitions_with_defragmentation
  // pins the lp partitions, _create_fp32_partitions puts the fp32 master on self.device = the GPU, and
  // _reassign_or_swap_out_partitioned_parameters copies the updated fp32 partition into the host lp partition).
  // Hand calculation, N = 4, P = Ψ/N, no persistent params, max_reuse_distance 0, no prefetch: H2D = params 2P (fwd) + 2P (bwd)
  // = 4P, and no grad traffic; D2H = the updated lp partition 2P per step. GPU after a step: fp32 master 4P, Adam
  // m, v 8P, grad partitions 2P, no lp params; host: the pinned lp partition 2P and nothing else.
  const TinyModel m;
  const int n = 4;
  const double p = psi(m) / n;
  auto z = zero_config(3);
  z.offload_param = scenario::OffloadDevice::CPU;
  z.stage3_param_persistence_threshold = 0;
  z.stage3_max_reuse_distance = 0;
  z.stage3_prefetch_bucket_size = 0;
  const auto prog = generate(make_workload(m), z, n, 2); // no CPU Adam time: no CPU model needed
  REQUIRE(program::validate(prog).empty());
  const auto r = walk(prog);
  REQUIRE_FALSE(r.deadlock);
  for (int step : {0, 1}) {
    INFO("step " << step);
    CHECK(r.copied(step, CopyDir::H2D) == Approx(4 * p).epsilon(kTol));
    CHECK(r.copied(step, CopyDir::D2H) == Approx(2 * p).epsilon(kTol));
  }
  const Sample& end = r.timeline.back();
  CHECK(end.tag(MemTag::LP_PARAMS) == 0);
  CHECK(end.tag(MemTag::FP32_MASTER) == Approx(4 * p).epsilon(kTol));
  CHECK(end.tag(MemTag::OPTIMIZER_STATES) == Approx(8 * p).epsilon(kTol));
  CHECK(end.tag(MemTag::GRAD_PARTITION) == Approx(2 * p).epsilon(kTol));
  CHECK(end.host_tag(MemTag::LP_PARAMS) == Approx(2 * p).epsilon(kTol));
  CHECK(end.host_tag(MemTag::FP32_MASTER) == 0);
  CHECK(end.host_tag(MemTag::OPTIMIZER_STATES) == 0);
}

TEST_CASE("OffloadCpu: stage 3 offload_param programs are valid with persistent params and prefetch", "[zero][unit]") {
  for (int n : {1, 4})
    for (int ga : {1, 2})
      for (bool overlap : {false, true}) {
        INFO("N " << n << " GA " << ga << " overlap " << overlap);
        TinyModel m;
        m.grad_accum = ga;
        auto z = offload(3);
        z.offload_param = scenario::OffloadDevice::CPU;
        z.overlap_comm = overlap;
        const auto p = generate(make_workload(m), z, n, 3, kAdamSecondsPerParam);
        REQUIRE(program::validate(p).empty());
        const auto r = walk(p);
        REQUIRE_FALSE(r.deadlock);
        // Only the persistent params (4 biases, full) and the IPG bucket stay on the GPU.
        REQUIRE(r.timeline.back().total == Approx(2.0 * 4 * static_cast<double>(m.bias_numel) + 1e9).epsilon(kTol));
      }
}

TEST_CASE(
    "OffloadCpu: stage 1/2 hold at most one param's fp32 grad slice at a time, on the reduction stream "
    "(stage_1_and_2.py async_inplace_copy_grad_to_fp32_buffer_from_gpu)",
    "[zero][validation]") {
  // Hand calculation: each param's in-partition slice is cast to a new fp32 tensor, copied D2H and dropped before
  // the next param's cast on the same stream, so the live "fp32 grad slice" bytes never exceed the largest slice
  // x 4 B. N = 1: the largest slice is a whole weight, 1e6 x 4 B = 4e6 B. N = 4 (P = 1,001,000, partitions end at
  // block boundaries): rank 0 owns block.0 whole, largest slice again 1e6 elements -> 4e6 B. The whole-bucket
  // slice (2 weights + 2 biases with B_r = 2.5e6, 8.008e6 B) must never be live at once.
  for (int stage : {1, 2})
    for (int n : {1, 4})
      for (bool overlap : {false, true}) {
        INFO("stage " << stage << " N " << n << " overlap " << overlap);
        TinyModel m;
        auto z = offload(stage);
        z.overlap_comm = overlap;
        z.reduce_bucket_size = 2'500'000;
        const auto prog = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
        const auto r = walk(prog);
        REQUIRE_FALSE(r.deadlock);
        // The reduction stream: "comm" with overlap_comm, else the compute stream (reduce_ipg_grads).
        const std::string reduce_stream = overlap ? "comm" : "compute";
        double live = 0;
        double peak = 0;
        int slices = 0;
        double prev = 0;
        for (const auto& s : r.timeline) {
          const double now = s.tag(MemTag::FLATTEN_TEMP);
          if (s.label == "fp32 grad slice") {
            REQUIRE(r.stream_names.at(s.stream) == reduce_stream);
            live += now - prev;
            slices += s.is_alloc ? 1 : 0;
            peak = std::max(peak, live);
          }
          prev = now;
        }
        REQUIRE(peak == Approx(4.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
        REQUIRE(live == Approx(0).margin(kTol));
        // One slice per param of the rank's partition per step: 8 params at N = 1, block.0's 2 at N = 4.
        REQUIRE(slices == 2 * (n == 1 ? 8 : 2));
        // Every grad D2H copy sits on the reduction stream; the copy stream only carries the params' H2D. (At init
        // the fp32 master's lp slice comes down on the compute stream: emit_stage12_offload_init.)
        for (const auto& st : prog.streams)
          for (const auto& op : st.ops)
            if (const auto* c = std::get_if<program::Copy>(&op.body);
                c && c->dir == CopyDir::D2H && op.phase != program::Phase::INIT) // init: the master's lp slice
              REQUIRE(st.name == reduce_stream);
      }
}

namespace {
/// Host bytes the program allocates as pinned / pageable (all host buffers of these programs live to the end
/// except NVMe-free paths; frees of host buffers are subtracted).
std::pair<double, double> host_pinned_pageable(const program::StepProgram& p) {
  double pinned = 0;
  double pageable = 0;
  std::map<program::BufferId, std::pair<bool, double>> host;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<program::Alloc>(&op.body); a && a->device == program::Device::HOST) {
        (a->pinned ? pinned : pageable) += a->bytes.value();
        host[a->buffer] = {a->pinned, a->bytes.value()};
      }
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* f = std::get_if<program::Free>(&op.body); f && host.count(f->buffer))
        (host[f->buffer].first ? pinned : pageable) -= host[f->buffer].second;
  return {pinned, pageable};
}
} // namespace

TEST_CASE(
    "OffloadCpu: stage 3 with param and optimizer offload pins 8 B per partition element, the fp32 master and "
    "Adam state stay pageable (calibration.md §4.2, stage3.py)",
    "[zero][validation]") {
  // calibration.md §4.2 (DeepSpeed docs memory.rst "Pinned Memory"): with offload_param, 6 B per param are pinned
  // (2 B fp16 params + 4 B fp32 grads), +2 B fp16 grads if GA > 1. DeepSpeed's current stage3.py pins
  // param_groups_fp16_flat_cpu_memory (lp params, 2 B), grad_partitions_flat_buffer (2 B in the grad-accumulation
  // dtype, allocated by _setup_for_real_optimizer whatever GA) and the sub-groups' fp32 grad buffers
  // (initialize_optimizer_states, 4 B): 8 B per partition element at any GA -- the docs' GA > 1 figure; at GA = 1
  // the code pins 2 B more than the docs say. Pageable: the fp32 master (_create_fp32_partitions: .to(cpu).clone(),
  // 4 B) and DeepSpeedCPUAdam's exp_avg / exp_avg_sq (torch.zeros_like, 8 B). Hand calculation at N = 4,
  // P = Ψ/N = 1,001,000: pinned 8P = 8,008,000 B; pageable after step 0: 12P = 12,012,000 B.
  for (int ga : {1, 2}) {
    INFO("GA " << ga);
    TinyModel m;
    m.grad_accum = ga;
    const int n = 4;
    const double p = psi(m) / n;
    auto z = offload(3);
    z.offload_param = scenario::OffloadDevice::CPU;
    const auto prog = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
    const auto [pinned, pageable] = host_pinned_pageable(prog);
    REQUIRE(pinned == Approx(8 * p).epsilon(kTol));
    REQUIRE(pageable == Approx(12 * p).epsilon(kTol));
  }
  // Stage 2 + CPU optimizer offload at GA = 1 (stage_1_and_2.py __init__): fp32 master 4P, fp32 grads 4P, lp
  // staging 2P and temp_grad_buffer_for_cpu_offload (largest param, 1e6 x 2 B) pinned; Adam 8P pageable.
  const TinyModel m;
  const double p = psi(m) / 4;
  const auto [pinned2, pageable2] =
      host_pinned_pageable(generate(make_workload(m), offload(2), 4, 2, kAdamSecondsPerParam));
  REQUIRE(pinned2 == Approx(10 * p + 2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
  REQUIRE(pageable2 == Approx(8 * p).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: stage 2 brings the updated lp partition to the GPU as each DeepSpeed release did (PR #5301, "
    "PR #7309)",
    "[zero][validation]") {
  // P = Ψ/N. v0.17.0 on (PR #7309): host cast (6 B) + H2D of the pinned lp buffer, 2P B. v0.14.1-v0.16 (PR #5301):
  // H2D of the pinned fp32 partition, 4P B, into a GPU temporary of 4P B. Before v0.14.1: host cast into a pageable
  // lp temporary (2P B of host memory) and its H2D, 2P B. The grads' D2H is 4P B in all three.
  const TinyModel m;
  const int n = 4;
  const double p = psi(m) / n;
  struct Release {
    std::array<int, 3> version;
    double h2d; ///< bytes per partition element
    double host_step; ///< host seconds per element / kAdamSecondsPerParam
  };
  for (const Release& rel : {Release{{0, 19, 5}, 2.0, kHostStepPerAdam}, Release{{0, 16, 0}, 4.0, 36.0 / 30.0},
                             Release{{0, 14, 0}, 2.0, kHostStepPerAdam}}) {
    INFO("DeepSpeed " << rel.version[0] << "." << rel.version[1] << "." << rel.version[2]);
    auto z = offload(2);
    z.deepspeed_version = rel.version;
    const auto prog = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    const auto r = walk(prog);
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.copied(1, CopyDir::D2H) == Approx(4 * p).epsilon(kTol));
    CHECK(r.copied(1, CopyDir::H2D) == Approx(rel.h2d * p).epsilon(kTol));
    CHECK(r.cpu_seconds.at(1) == Approx(rel.host_step * kAdamSecondsPerParam * p).epsilon(kTol));
    double gpu_temp = 0;
    double host_temp = 0;
    for (const auto& smp : r.timeline)
      if (smp.step == 1 && smp.is_alloc && smp.label.find("partition") != std::string::npos) {
        gpu_temp = std::max(gpu_temp, smp.tag(MemTag::FLATTEN_TEMP));
        host_temp = std::max(host_temp, smp.host_tag(MemTag::FLATTEN_TEMP));
      }
    if (rel.version[1] == 16)
      CHECK(gpu_temp == Approx(2.0 * static_cast<double>(m.weight_numel) + 4 * p).epsilon(kTol));
    // At v0.14.0 also DeepSpeedCPUAdam's two pinned tile buffers, 2 x 128Mi x 4 B (cpu_adam.h l.57-58 @v0.14.2).
    if (rel.version[1] == 14)
      CHECK(host_temp == Approx(2.0 * static_cast<double>(m.weight_numel) + 2 * p + kCpuAdamTiles).epsilon(kTol));
  }
}

TEST_CASE(
    "OffloadCpu: stage 2 checks every param's whole gradient for inf/nan at the boundary (PR #5115: 11 B per "
    "element live from v0.13.3, 4 B before)",
    "[zero][validation]") {
  // N = 1, GA = 1: each param is its own partition. Persistent on the GPU in FLATTEN_TEMP: temp_grad_buffer_for_
  // gpu_offload, 2 B x the largest param (L = weight_numel). Per param at the boundary, one after the other: the fp64
  // norm (8 B/element), the overflow check's temporaries (v0.13.3 on: fp32 copy 4 + three bool masks 3 + fp32 of the
  // mask 4 = 11 B/element; before: the fp32 copy, 4 B/element) and the fp32 slice for the D2H (4 B/element).
  // Peak FLATTEN_TEMP in a step: 2L + max(8L, 11L, 4L) = 13L (v0.19.5), 2L + 8L = 10L (v0.9.0).
  const TinyModel m;
  const double l = static_cast<double>(m.weight_numel);
  for (const auto& [version, peak] :
       {std::pair{std::array<int, 3>{0, 19, 5}, 13.0 * l}, std::pair{std::array<int, 3>{0, 9, 0}, 10.0 * l}}) {
    INFO("DeepSpeed 0." << version[1] << "." << version[2]);
    auto z = offload(2);
    z.deepspeed_version = version;
    // As the loader sets it for releases before 0.12.4 (no use_multi_rank_bucket_allreduce, so no flatten of the
    // bucket, which would otherwise be the larger temporary at 0.9.0).
    z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
    const auto r = walk(generate(make_workload(m), z, 1, 2, kAdamSecondsPerParam));
    REQUIRE_FALSE(r.deadlock);
    double top = 0;
    for (const auto& smp : r.timeline)
      if (smp.step == 1)
        top = std::max(top, smp.tag(MemTag::FLATTEN_TEMP));
    CHECK(top == Approx(peak).epsilon(kTol));
  }
}

TEST_CASE(
    "OffloadCpu: which host buffers are pinned follows offload_optimizer.pin_memory and the release "
    "(PRs #4131, #7689, #8207)",
    "[zero][validation]") {
  // Stage 2 + CPU optimizer offload at GA = 1 (stage_1_and_2.py __init__ at each tag), P = Psi/N, L = the largest
  // param (temp_grad_buffer_for_cpu_offload, 2 B x L). Host buffers: temp 2L, fp32 master 4P, fp32 grads 4P, lp
  // staging 2P (from v0.17.0); Adam m, v 8P never pinned. pin_memory defaults to false before v0.19.5 (PR #8207).
  //   v0.9.0 (before #4131): fp32 grads and the temp buffer pinned whatever pin_memory says, the master never.
  //   v0.12.0 (#4131 on, before #5301-era master pinning): everything follows pin_memory (false): nothing pinned.
  //   v0.17.5 (v0.14.1 - v0.18.2): the fp32 master pinned whatever pin_memory says, the rest follows it.
  //   v0.18.3 (#7689): everything follows pin_memory.
  const TinyModel m;
  const double p = psi(m) / 4;
  const double temp = 2.0 * static_cast<double>(m.weight_numel);
  struct Case {
    std::array<int, 3> version;
    std::optional<bool> pin;
    double pinned;
  };
  for (const Case& c :
       {Case{{0, 9, 0}, std::nullopt, temp + 4 * p}, Case{{0, 12, 0}, std::nullopt, 0.0},
        Case{{0, 17, 5}, std::nullopt, 4 * p}, Case{{0, 18, 3}, std::nullopt, 0.0},
        Case{{0, 17, 5}, true, temp + 10 * p}, Case{{0, 18, 3}, true, temp + 10 * p}, Case{{0, 19, 5}, false, 0.0}}) {
    INFO("DeepSpeed " << c.version[1] << "." << c.version[2] << " pin_memory "
                      << (c.pin ? (*c.pin ? "true" : "false") : "default"));
    auto z = offload(2);
    z.deepspeed_version = c.version;
    z.offload_optimizer_pin_memory = c.pin;
    const auto [pinned, pageable] = host_pinned_pageable(generate(make_workload(m), z, 4, 2, kAdamSecondsPerParam));
    // Before v0.14.3 DeepSpeedCPUAdam also holds its two pinned tile buffers, whatever pin_memory says.
    const double tiles = c.version < std::array<int, 3>{0, 14, 3} ? kCpuAdamTiles : 0.0;
    CHECK(pinned == Approx(c.pinned + tiles).epsilon(kTol));
    // The same buffers, only their pinning moves; the lp staging buffer (2P) exists from v0.17.0 (PR #7309).
    const double staging = c.version < std::array<int, 3>{0, 17, 0} ? 0.0 : 2 * p;
    CHECK(pinned + pageable == Approx(temp + 16 * p + staging + tiles).epsilon(kTol));
  }
  // Stage 3 with parameter and optimizer offload at v0.17.5 (pin_memory false by default): only the offloaded lp
  // partitions (param_groups_fp16_flat_cpu_memory, 2P) stay pinned; the grad buffers (2P + 4P) follow pin_memory.
  auto z3 = offload(3);
  z3.offload_param = scenario::OffloadDevice::CPU;
  z3.deepspeed_version = {0, 17, 5};
  const auto [pinned3, pageable3] = host_pinned_pageable(generate(make_workload(m), z3, 4, 2, kAdamSecondsPerParam));
  CHECK(pinned3 == Approx(2 * p).epsilon(kTol));
  CHECK(pageable3 == Approx(18 * p).epsilon(kTol));
}

namespace {
/// The distinct labels of the H2D / D2H copies of `p` whose host side is pageable (program::Copy::pageable), with
/// stage 3's per-sub-group / per-bucket suffix cut off at the known stems. Init copies are left out: stage 1/2's
/// fp32 master comes down into a new `.to('cpu')` tensor, pageable in every release (fp32_master_init_test.cpp).
std::set<std::string> pageable_copies(const program::StepProgram& p) {
  static const std::array<const char*, 8> stems =
      {"d2h fp32 grad partition", "d2h lp grad partition", "h2d lp grad partition", "h2d lp params",
       "h2d fp32 params",         "d2h fp32 grads",        "d2h lp grads",          "h2d accumulated grads"};
  std::set<std::string> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Copy>(&op.body); c && c->pageable && op.phase != program::Phase::INIT) {
        const std::string& l = p.labels.at(op.label);
        const auto* stem = std::find_if(stems.begin(), stems.end(), [&](const char* x) { return l.rfind(x, 0) == 0; });
        out.insert(stem == stems.end() ? l : std::string(*stem));
      }
  return out;
}
} // namespace

TEST_CASE(
    "OffloadCpu: a copy is pageable exactly when its host buffer is, per release (PRs #4131, #5301, #7309, #7689, "
    "#8207, stage3.py _reassign_or_swap_out_partitioned_parameters)",
    "[zero][validation]") {
  // Stage 1/2 (stage12_pinning, the previous test): the fp32 grad D2H and the GA > 1 lp grad round trip touch the
  // grad buffers; the step's H2D reads the lp staging buffer (v0.17.0 on), the fp32 master (v0.14.1 - v0.16) or a
  // pageable host-cast temporary (before v0.14.1, always pageable; before v0.9.0 fp16 goes up from DeepSpeedCPUAdam's
  // pinned tile buffers instead, the adam_update_copy test below). Stage 3: the lp grad round trip goes through
  // grad_partitions_flat_buffer and the fp32 grads into the fp32 grad partition, both pinned iff pin_memory; the
  // updated lp sub-group goes H2D from `fp16.copy_(fp32)`'s host cast, a fresh pageable tensor, whatever pin_memory.
  const TinyModel m;
  struct Case {
    int stage;
    std::array<int, 3> version;
    std::optional<bool> pin;
    int ga;
    std::set<std::string> pageable;
  };
  const std::vector<Case> cases = {
      {2, {0, 19, 5}, std::nullopt, 1, {}},
      {2, {0, 19, 5}, false, 1, {"d2h fp32 grads", "h2d lp params"}},
      {2, {0, 19, 5}, false, 2, {"d2h fp32 grads", "h2d lp params", "d2h lp grads", "h2d accumulated grads"}},
      {2, {0, 17, 5}, std::nullopt, 1, {"d2h fp32 grads", "h2d lp params"}},
      {2, {0, 16, 0}, std::nullopt, 1, {"d2h fp32 grads"}}, // the fp32 master is pinned from v0.14.1
      {2, {0, 14, 0}, std::nullopt, 1, {"d2h fp32 grads", "h2d lp params"}},
      {2, {0, 9, 0}, std::nullopt, 1, {"h2d lp params"}}, // grad buffers pinned whatever pin_memory says
      {1, {0, 17, 5}, true, 1, {}},
      {3, {0, 19, 5}, std::nullopt, 1, {"h2d lp params"}},
      {3,
       {0, 17, 6},
       std::nullopt,
       1,
       {"d2h lp grad partition", "h2d lp grad partition", "d2h fp32 grad partition", "h2d lp params"}},
  };
  for (const Case& c : cases) {
    INFO("stage " << c.stage << " DeepSpeed 0." << c.version[1] << "." << c.version[2] << " pin_memory "
                  << (c.pin ? (*c.pin ? "true" : "false") : "default") << " GA " << c.ga);
    TinyModel tm = m;
    tm.grad_accum = c.ga;
    auto z = offload(c.stage);
    z.deepspeed_version = c.version;
    z.offload_optimizer_pin_memory = c.pin;
    z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
    const auto prog = generate(make_workload(tm), z, 4, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    CHECK(pageable_copies(prog) == c.pageable);
  }
}

TEST_CASE(
    "OffloadCpu: torch.optim on the offloaded CPU tensors costs its passes plus its fresh temporaries' page faults, "
    "and a host cast into a new tensor pays its page faults (cpu_adam.hpp TorchCpuAdamBytes)",
    "[zero][validation]") {
  // P = Ψ/N, per-byte rate a = kAdamSecondsPerParam / 30, fault cost f = 1e-11 s/B (a distinct magnitude), pinned
  // weight 1. Stage 2 at 0.19.5, GA 1: unscale 8 B + torch's passes (single-tensor 88 B, foreach 80 B) + the cast into
  // the pinned lp staging buffer 6 B (not new), plus the temporaries' first touch (8 B / 4 B) at f. Host memory in
  // step 1: the temporaries (8P / 4P) on top of the persistent temp grad buffer (2 B x the largest param L).
  // Stage 3 (fused): unscale 8 + CPU Adam 28 + cast 6 B, and the cast's target is a new pageable tensor: + 2P x f.
  const TinyModel m;
  const int n = 4;
  const double p = psi(m) / n;
  const double a = kAdamSecondsPerParam / 30.0;
  const double f = 1e-11;
  const double l = static_cast<double>(m.weight_numel);
  const auto run = [&](int stage, scenario::OptimizerImpl impl) {
    auto wl = make_workload(m);
    wl.training.optimizer_impl = impl;
    const auto z = offload(stage);
    GeneratorInput in{.workload = wl,
                      .zero = z,
                      .dp_degree = n,
                      .steps = 2,
                      .cpu_adam_seconds_per_param = kAdamSecondsPerParam,
                      .page_fault_seconds_per_byte = f};
    const auto prog = generate_program(in);
    REQUIRE(program::validate(prog).empty());
    const auto r = walk(prog);
    REQUIRE_FALSE(r.deadlock);
    return r;
  };
  struct Case {
    scenario::OptimizerImpl impl;
    double pass_bytes;
    double fresh_bytes;
  };
  for (const Case& c : {Case{scenario::OptimizerImpl::TORCH_SINGLE_TENSOR, 88.0, 8.0},
                        Case{scenario::OptimizerImpl::TORCH_FOREACH, 80.0, 4.0}}) {
    INFO("fresh bytes " << c.fresh_bytes);
    const auto r = run(2, c.impl);
    CHECK(r.cpu_seconds.at(1) == Approx(((8.0 + c.pass_bytes + 6.0) * a + c.fresh_bytes * f) * p).epsilon(kTol));
    double host_temp = 0;
    for (const auto& smp : r.timeline)
      if (smp.step == 1)
        host_temp = std::max(host_temp, smp.host_tag(MemTag::FLATTEN_TEMP));
    CHECK(host_temp == Approx(2.0 * l + c.fresh_bytes * p).epsilon(kTol));
  }
  const auto r3 = run(3, scenario::OptimizerImpl::FUSED);
  CHECK(r3.cpu_seconds.at(1) == Approx(((8.0 + 28.0 + 6.0) * a + 2.0 * f) * p).epsilon(kTol));
  // The first step also creates m, v (torch.zeros_like): 8 B written and 8 B faulted in per element.
  CHECK(r3.cpu_seconds.at(0) == Approx(((8.0 + 28.0 + 6.0 + 8.0) * a + (2.0 + 8.0) * f) * p).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: before v0.9.0 fp16 stage 1/2 offload updates the lp params inside DeepSpeedCPUAdam, 4 B per "
    "element H2D in 128M-element tiles, with no host cast (adam_update_copy, PR #3097)",
    "[zero][validation]") {
  // stage2.py step l.1441-1448 @v0.3.15 and stage_1_and_2.py _optimizer_step l.1736-1738 @v0.8.0 pass
  // fp16_param_groups to DeepSpeedCPUAdam; csrc/adam/cpu_adam.cpp Step @v0.3.15 writes each tile's fp32 params to a
  // pinned buffer (4 B) that param_update_kernel reads into the fp16 params (4 B H2D per element). v0.9.0 (PR #3097)
  // comments that out: the host casts into a fresh pageable lp tensor (4 B read + 2 B written, 2 B faulted in) and
  // copies 2 B per element H2D.
  // 2 blocks of 150,000,000 + 1,000 elements at N = 1: p = 300,002,000 = 3 tiles of at most TILE = 134,217,728.
  TinyModel m;
  m.blocks = 2;
  m.weight_numel = 150'000'000;
  workload::Workload wl = make_workload(m);
  wl.training.precision = scenario::Precision::FP16;
  constexpr double p = 300'002'000;
  struct Release {
    std::array<int, 3> version;
    double h2d_per_element;
    double host_bytes_per_element; ///< unscale 8 + Adam 28 + the pinned tile write 4, or + the lp cast 6
    int tiles;
    std::set<std::string> pageable; ///< the grad buffers are pinned before v0.10.1 whatever pin_memory says
  };
  for (const Release& rel : {Release{{0, 8, 3}, 4.0, 8.0 + 28.0 + 4.0, 3, {}}, Release{{0, 3, 15}, 4.0, 40.0, 3, {}},
                             Release{{0, 9, 0}, 2.0, 8.0 + 28.0 + 6.0, 0, {"h2d lp params"}}}) {
    INFO("v" << rel.version[0] << "." << rel.version[1] << "." << rel.version[2]);
    auto z = offload(2);
    z.deepspeed_version = rel.version;
    const auto prog = generate(wl, z, 1, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    const auto r = walk(prog);
    REQUIRE_FALSE(r.deadlock);
    CHECK(r.copied(1, CopyDir::H2D) == Approx(rel.h2d_per_element * p).epsilon(kTol));
    // Page faults are free in these inputs, so the host step is bytes x cpu_adam_seconds_per_param / 30 B.
    CHECK(r.cpu_seconds.at(1) == Approx(rel.host_bytes_per_element / 30.0 * kAdamSecondsPerParam * p).epsilon(kTol));
    int tiles = 0;
    for (const auto& s : r.timeline)
      tiles += s.step == 1 && s.label.rfind("h2d fp32 params tile ", 0) == 0;
    CHECK(tiles == rel.tiles);
    // The tiles go up from pinned buffers; v0.9.0's lp H2D from the host cast's pageable tensor.
    CHECK(pageable_copies(prog) == rel.pageable);
  }
}

TEST_CASE("OffloadCpu: DeepSpeedCPUAdam pins two 128M-element fp32 tile buffers before v0.14.3", "[zero][validation]") {
  // csrc/includes/cpu_adam.h: the Adam_Optimizer constructor cudaMallocHost's _doubled_buffer[0] and [1] of
  // TILE x sizeof(float) each, TILE = 128 x 1024 x 1024 (l.23, l.66-67 @v0.3.15; l.54-55 @v0.9.0; l.57-58 @v0.14.2):
  // 2 x 134,217,728 x 4 B = 1,073,741,824 B of pinned host memory per rank, whatever the stage. v0.14.3 (PR #5409)
  // has no cudaMallocHost there. torch.optim on the CPU (optimizer_impl torch-*) is not DeepSpeedCPUAdam.
  const auto tile_allocs = [](const program::StepProgram& p) {
    std::vector<program::Alloc> out;
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* a = std::get_if<program::Alloc>(&op.body);
            a != nullptr && p.labels[op.label] == "cpu adam tile buffers (pinned)")
          out.push_back(*a);
    return out;
  };
  struct Case {
    int stage;
    std::array<int, 3> version;
    scenario::OptimizerImpl impl;
    std::size_t expected;
  };
  using I = scenario::OptimizerImpl;
  for (const Case& c :
       {Case{2, {0, 3, 15}, I::FUSED, 1}, Case{2, {0, 14, 2}, I::FUSED, 1}, Case{2, {0, 14, 3}, I::FUSED, 0},
        Case{3, {0, 9, 0}, I::FUSED, 1}, Case{3, {0, 19, 5}, I::FUSED, 0}, Case{2, {0, 9, 0}, I::TORCH_FOREACH, 0}}) {
    INFO("stage " << c.stage << " v" << c.version[0] << "." << c.version[1] << "." << c.version[2]);
    auto z = offload(c.stage);
    z.deepspeed_version = c.version;
    workload::Workload wl = make_workload();
    wl.training.optimizer_impl = c.impl;
    const auto prog = generate(wl, z, 2, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    const auto a = tile_allocs(prog);
    REQUIRE(a.size() == c.expected);
    if (a.empty())
      continue;
    CHECK(a[0].bytes.value() == Approx(1'073'741'824.0).epsilon(kTol));
    CHECK(a[0].device == program::Device::HOST);
    CHECK(a[0].pinned);
    CHECK(a[0].tag == MemTag::FLATTEN_TEMP);
  }
}
