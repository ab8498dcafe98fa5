// DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py), selected instead of the ZeRO stage-1 optimizer
// for a bf16 model with data_types.grad_accum_dtype fp32 and no offload (engine.py _do_optimizer_sanity_check;
// reference/zero_semantics.md §3.2). Expected values are hand calculations from that spec.
#include "sim/zero/stage1_generator.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;

scenario::ZeroConfig bf16_optimizer_config() {
  auto z = zero_config(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  return z;
}
} // namespace

TEST_CASE("BF16_Optimizer: a full fp32 gradient buffer of 4 B/param lives on every rank from init",
          "[zero][validation]") {
  // _setup_for_real_optimizer: fp32_groups_gradients_flat = zeros_like(bf16 flat, fp32) -- not partitioned.
  // TinyModel: Ψ = 4 x (1,000,000 + 1,000) = 4,004,000 elements, a multiple of 2N for N = 1, 2, 4 (no padding):
  // 4Ψ = 16,016,000 B whatever N.
  // Stage 0 with fp32 accumulation (DeepSpeed < 0.18.5) runs the same optimizer.
  const TinyModel m;
  for (int stage : {0, 1})
    for (int n : {1, 2, 4}) {
      INFO("stage " << stage << ", N_d = " << n);
      auto z = bf16_optimizer_config();
      z.stage = stage;
      const auto r = walk(generate(make_workload(m), z, n));
      REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, -1) ==
              Approx(4 * psi(m)).epsilon(kTol));
      REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }) == Approx(4 * psi(m)).epsilon(kTol));
      // The master partition is still 4Ψ/N (bf16_dp_partitions[partition_id].clone().float()).
      REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_MASTER); }) ==
              Approx(4 * psi(m) / n).epsilon(kTol));
    }
}

TEST_CASE("BF16_Optimizer: 10Ψ + 12Ψ/N are live at the bf16 all-reduce of the fp32 grads", "[zero][validation]") {
  // At the GA boundary of step 1 (activations already freed): bf16 params 2Ψ + lp grads 2Ψ (param.grad, freed only
  // by zero_grad after the step) + fp32 grad buffer 4Ψ + its bf16 cast for the all-reduce 2Ψ
  // (communication_data_type defaults to bf16, engine.py allreduce_bucket) + master 4Ψ/N + Adam m, v 8Ψ/N (created
  // at step 0) = 10Ψ + 12Ψ/N. N = 2: 16Ψ = 64,064,000 B.
  const TinyModel m;
  for (int stage : {0, 1})
    for (int n : {1, 2}) {
      INFO("stage " << stage << ", N_d = " << n);
      auto z = bf16_optimizer_config();
      z.stage = stage;
      const auto r = walk(generate(make_workload(m), z, n));
      const Sample* s = r.find(1, "fp32 grads -> bf16 for all-reduce", false);
      REQUIRE(s != nullptr);
      REQUIRE(s->total == Approx(10 * psi(m) + 12 * psi(m) / n).epsilon(kTol));
    }
}

TEST_CASE("BF16_Optimizer: one bf16 all-reduce of the whole gradient buffer per step, then one all-gather",
          "[zero][validation]") {
  // buffered_allreduce_fallback over get_grads_for_reduction() (one flat tensor: one bucket), cast to bf16: 2Ψ B
  // per step whatever GA; update_lp_params -> all_gather_dp_groups 2Ψ B, skipped at world size 1 (§7 item 18).
  TinyModel m;
  m.grad_accum = 2;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), bf16_optimizer_config(), n));
    for (int step : {0, 1}) {
      INFO("step " << step);
      REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).calls == 1);
      REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
      REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).calls == (n > 1 ? 1 : 0));
    }
  }
}

TEST_CASE("BF16_Optimizer: selected only for bf16 + grad_accum_dtype fp32 + stage 1 + no offload, or stage 0",
          "[zero][unit]") {
  scenario::TrainingSpec t;
  t.precision = scenario::Precision::BF16;
  auto z = bf16_optimizer_config();
  CHECK(scenario::uses_bf16_optimizer(t, z));
  z.grad_accum_dtype = scenario::GradAccumDtype::MODEL; // default: accumulate in bf16 -> ZeRO stage 1
  CHECK_FALSE(scenario::uses_bf16_optimizer(t, z));
  z = bf16_optimizer_config();
  z.stage = 2;
  CHECK_FALSE(scenario::uses_bf16_optimizer(t, z));
  z.stage = 0; // without ZeRO (DeepSpeed < 0.18.5; the loader rejects fp32 accumulation at stage 0 from 0.18.5)
  CHECK(scenario::uses_bf16_optimizer(t, z));
  z = bf16_optimizer_config();
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  CHECK_FALSE(scenario::uses_bf16_optimizer(t, z));
  z = bf16_optimizer_config();
  t.precision = scenario::Precision::FP16;
  CHECK_FALSE(scenario::uses_bf16_optimizer(t, z));
  // fp16 + fp32 accumulation at stage 1 stays on DeepSpeedZeroOptimizer: no full fp32 grad buffer at init (4Ψ =
  // 16,016,000 B), only initialize_optimizer_states' zero fp32 grad of the partition, 4 B x Ψ/2 = 8,008,000 B at N = 2
  // (TinyModel Ψ = 4,004,000; stage_1_and_2.py l.669-673 @v0.13.2).
  TinyModel m;
  auto wl = make_workload(m);
  wl.training.precision = scenario::Precision::FP16;
  const auto r = walk(generate(wl, z, 2));
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_GRADS); }, -1) == 4.0 * 4'004'000 / 2);
}
