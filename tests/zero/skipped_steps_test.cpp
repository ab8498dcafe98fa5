// training.skipped_steps: fp16 steps that overflow under dynamic loss scaling, whose optimizer step DeepSpeed skips
// (stage_1_and_2.py step, stage3.py _overflow_check_and_loss_scale_update / _overflow_clean_up,
// fp16/fused_optimizer.py step). Expected values are hand calculations on TinyModel (tests/zero/test_model.hpp):
// Ψ = 4 x (1,000,000 + 1,000) = 4,004,000 elements, here fp16 (2 B), N_d = 4, so stage 1/2 partitions of
// Ψ/4 = 1,001,000 elements and stage 3 per-tensor partitions of 250,000 + 250 per block.
#include "sim/zero/zero_program.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;
using program::StepProgram;

namespace {
constexpr double kTol = 1e-9;
constexpr int kN = 4;

workload::Workload fp16(std::int64_t skipped) {
  auto wl = make_workload();
  wl.training.precision = scenario::Precision::FP16;
  wl.training.skipped_steps = skipped;
  return wl;
}

/// Ops of step `step` whose label starts with `prefix`: how many (Compute, Collective and CpuCompute), and their
/// Compute bytes or Collective payload.
std::pair<int, double> ops(const StepProgram& p, int step, const std::string& prefix) {
  int k = 0;
  double bytes = 0;
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    for (std::size_t i = 0; i < p.streams[s].ops.size(); ++i) {
      const auto& op = p.streams[s].ops[i];
      if (p.step_of(static_cast<program::StreamId>(s), i) != step || p.labels[op.label].rfind(prefix, 0) != 0)
        continue;
      if (const auto* c = std::get_if<program::Compute>(&op.body)) {
        ++k;
        bytes += c->bytes.value();
      } else if (const auto* col = std::get_if<program::Collective>(&op.body)) {
        ++k;
        bytes += col->bytes.value();
      } else if (std::holds_alternative<program::CpuCompute>(op.body)) {
        ++k; // a host pass: counted, no bytes
      }
    }
  return {k, bytes};
}
} // namespace

TEST_CASE(
    "skipped steps: stages 1 and 2 keep the reduction and the overflow check of an overflow step and drop its norm, "
    "Adam and parameter all-gather (stage_1_and_2.py step)",
    "[zero][validation]") {
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto p = generate(fp16(1), zero_config(stage), kN);
    const auto r = walk(p);
    // The gradient reduction is the same in both steps: Ψ fp16 = 8,008,000 B of all-reduce (use_multi_rank_bucket_
    // allreduce, one bucket) per step.
    CHECK(r.stats(0, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi()).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi()).epsilon(kTol));
    // Step 0 overflows: the 1 B overflow flag is all-reduced, the 4 B norm is not; no all_gather_dp_groups (step 1:
    // 2Ψ = 8,008,000 B).
    CHECK(r.scalars.at(0).calls == 1);
    CHECK(r.scalars.at(0).payload == Approx(1).epsilon(kTol));
    CHECK(r.scalars.at(1).payload == Approx(1 + 4).epsilon(kTol));
    CHECK(r.stats(0, CollectiveKind::ALL_GATHER).calls == 0);
    CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi()).epsilon(kTol));
    // The overflow check reads the partition's slices in step 0 as in step 1; Adam and the fp32 grad only in step 1.
    CHECK(ops(p, 0, "overflow check").second == Approx(ops(p, 1, "overflow check").second).epsilon(kTol));
    CHECK(ops(p, 0, "overflow check").first > 0);
    CHECK(ops(p, 0, "adam").first == 0);
    CHECK(ops(p, 1, "adam").first > 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 0) == 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 1) == Approx(4 * psi() / kN).epsilon(kTol));
    // Lazy Adam state (from v0.13.2) appears at the first step that runs: m, v = 2 x 4 B x 1,001,000 = 8,008,000 B.
    CHECK(r.find(0, "adam m,v", false) == nullptr);
    REQUIRE(r.find(1, "adam m,v", false) != nullptr);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 0) == 0);
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 1) ==
          Approx(8 * psi() / kN).epsilon(kTol));
  }
}

TEST_CASE(
    "skipped steps: stage 3 keeps the reduce-scatter and the overflow check and returns before the norm, the "
    "sub-group updates and _post_step's persistent all-gather (stage3.py step)",
    "[zero][validation]") {
  const auto p = generate(fp16(1), zero_config(3), kN);
  const auto r = walk(p);
  // reduce_scatter_coalesced of the one bucket: N x ceil(numel/N) per param = Ψ fp16 = 8,008,000 B in each step.
  CHECK(r.stats(0, CollectiveKind::REDUCE_SCATTER).payload == Approx(2 * psi()).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(2 * psi()).epsilon(kTol));
  // The 1 B overflow flag in both steps; the 8 B norm of the single sub-group only in step 1.
  CHECK(r.scalars.at(0).payload == Approx(1).epsilon(kTol));
  CHECK(r.scalars.at(1).payload == Approx(1 + 8).epsilon(kTol));
  // The biases (1,000 elements, under the 1e5 persistence threshold) are persistent: _post_step all-gathers
  // 4 x 1,000 x 2 B = 8,000 B after step 1's update, nothing after step 0's skip.
  CHECK(ops(p, 0, "allgather persistent params").first == 0);
  CHECK(ops(p, 1, "allgather persistent params").second == Approx(8'000).epsilon(kTol));
  CHECK(ops(p, 0, "adam").first == 0);
  CHECK(ops(p, 1, "adam").first > 0);
  // The fp32 grad of the sub-group (4 B x Ψ/4) exists only in the step that runs; so does the lazy m, v (8 B x Ψ/4).
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 0) == 0);
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 1) == Approx(4 * psi() / kN).epsilon(kTol));
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 0) == 0);
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 1) ==
        Approx(8 * psi() / kN).epsilon(kTol));
}

TEST_CASE(
    "skipped steps: stage 0 FP16_Optimizer drops the lp grads after its overflow check and runs no fp32 cast or "
    "Adam (fused_optimizer.py step)",
    "[zero][validation]") {
  const auto p = generate(fp16(1), zero_config(0), kN);
  const auto r = walk(p);
  // has_overflow_serial sums g.float() of each lp grad in both steps; the fp32 grad list (4Ψ) and the flat fp32
  // grad (4Ψ) -- 8Ψ = 32,032,000 B at once -- only in step 1.
  CHECK(ops(p, 0, "overflow check").first == ops(p, 1, "overflow check").first);
  CHECK(ops(p, 0, "overflow check").first > 0);
  CHECK(ops(p, 0, "adam").first == 0);
  CHECK(ops(p, 1, "adam").first > 0);
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 0) == 0);
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, 1) == Approx(8 * psi()).epsilon(kTol));
  // The lp grads (2Ψ) are gone at the end of the skipped step.
  REQUIRE(!r.timeline.empty());
  const Sample* last0 = nullptr;
  for (const auto& s : r.timeline)
    if (s.step == 0)
      last0 = &s;
  REQUIRE(last0 != nullptr);
  CHECK(last0->tag(MemTag::LP_GRADS) == 0);
}

TEST_CASE("skipped steps: default 0 skips nothing, and only fp16 may skip", "[zero][unit]") {
  const auto base = walk(generate(fp16(0), zero_config(2), kN));
  CHECK(base.stats(0, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi()).epsilon(kTol));
  auto bf16 = fp16(1);
  bf16.training.precision = scenario::Precision::BF16;
  CHECK_THROWS_WITH(generate(bf16, zero_config(2), kN), Catch::Contains("need fp16"));
}

TEST_CASE(
    "skipped steps: stage 1/2 with optimizer offload copies the grads to the host, then returns after the overflow "
    "flag: no norm, CPU Adam, H2D of the partition or all-gather (stage_1_and_2.py step)",
    "[zero][validation]") {
  // On overflow step() runs zero_grad and reset_cpu_buffers and returns (stage_1_and_2.py l.2264-2285 @v0.19.5):
  // the backward's D2H of the fp32 grad partition (4 B x 1,001,000 = 4,004,000 B at GA 1) happens in both steps;
  // the lp partition's H2D after CPU Adam (2 B x 1,001,000 = 2,002,000 B from v0.17.0) and the lp all-gather
  // (2Ψ = 8,008,000 B) only in step 1. The scalar all-reduces: the 1 B overflow flag in both, the 4 B norm only in
  // step 1. DeepSpeedCPUAdam's lazy m, v (v0.13.2+) appear in step 1: 8 B x 1,001,000 = 8,008,000 B of host memory.
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    auto z = zero_config(stage);
    z.offload_optimizer = scenario::OffloadDevice::CPU;
    const auto p = generate(fp16(1), z, kN, 2, 1e-10);
    const auto r = walk(p);
    CHECK(r.copied(0, program::CopyDir::D2H) == Approx(4 * psi() / kN).epsilon(kTol));
    CHECK(r.copied(1, program::CopyDir::D2H) == Approx(4 * psi() / kN).epsilon(kTol));
    CHECK(r.copied(0, program::CopyDir::H2D) == 0);
    CHECK(r.copied(1, program::CopyDir::H2D) == Approx(2 * psi() / kN).epsilon(kTol));
    CHECK(r.stats(0, CollectiveKind::ALL_GATHER).calls == 0);
    CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi()).epsilon(kTol));
    CHECK(r.scalars.at(0).payload == Approx(1).epsilon(kTol));
    CHECK(r.scalars.at(1).payload == Approx(1 + 4).epsilon(kTol));
    CHECK(ops(p, 0, "cpu adam").first == 0);
    CHECK(ops(p, 1, "cpu adam").first > 0);
    CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }, 0) == 0);
    CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }, 1) ==
          Approx(8 * psi() / kN).epsilon(kTol));
  }
}

TEST_CASE(
    "skipped steps: stage 3 with optimizer offload keeps the backward's grad copies and skips CPU Adam, the H2D "
    "of the sub-groups and, on NVMe, the optimizer swaps (stage3.py step)",
    "[zero][validation]") {
  // Per-tensor partitions: 4 x (250,000 + 250) = 1,001,000 elements per rank. stage3.py step() returns after
  // _overflow_check_and_loss_scale_update (l.2582-2585 @v0.19.5); partition_grads ran in the backward: at GA 1,
  // 2 B D2H + 2 B H2D + 4 B D2H per partition element in both steps (6 x 1,001,000 = 6,006,000 B D2H). The step's
  // H2D of the updated lp sub-group (2 B x 1,001,000) only in step 1, as are CPU Adam and the lazy host m, v.
  auto z = zero_config(3);
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  const double part = psi() / kN;
  const auto p = generate(fp16(1), z, kN, 2, 1e-10);
  const auto r = walk(p);
  CHECK(r.copied(0, program::CopyDir::D2H) == Approx(6 * part).epsilon(kTol));
  CHECK(r.copied(1, program::CopyDir::D2H) == Approx(6 * part).epsilon(kTol));
  CHECK(r.copied(0, program::CopyDir::H2D) == Approx(2 * part).epsilon(kTol));
  CHECK(r.copied(1, program::CopyDir::H2D) == Approx(4 * part).epsilon(kTol));
  CHECK(ops(p, 0, "cpu adam").first == 0);
  CHECK(ops(p, 1, "cpu adam").first > 0);
  CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }, 0) == 0);
  CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::OPTIMIZER_STATES); }, 1) ==
        Approx(8 * part).epsilon(kTol));
  // offload_optimizer=nvme: the fp32 grads still go to NVMe in each backward (4 B x 1,001,000); the first step that
  // runs reads the fp32 master and grads only (8 B per element: m, v do not exist yet, created lazily by that step),
  // and writes p, m, v (12 B): step 0 reads nothing and writes 4,004,000 B, step 1 reads 8,008,000 B and writes
  // 4,004,000 + 12,012,000 = 16,016,000 B.
  z.offload_optimizer = scenario::OffloadDevice::NVME;
  const auto rn = walk(generate(fp16(1), z, kN, 2, 1e-10));
  CHECK(rn.copied(0, program::CopyDir::NVME_READ) == 0);
  CHECK(rn.copied(0, program::CopyDir::NVME_WRITE) == Approx(4 * part).epsilon(kTol));
  CHECK(rn.copied(1, program::CopyDir::NVME_READ) == Approx(8 * part).epsilon(kTol));
  CHECK(rn.copied(1, program::CopyDir::NVME_WRITE) == Approx(16 * part).epsilon(kTol));
}
