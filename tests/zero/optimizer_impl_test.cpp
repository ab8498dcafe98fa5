// training.optimizer_impl: the GPU Adam step's temporaries (sim/zero/generator_common.hpp emit_gpu_adam_step).
// Expected values are hand calculations from the torch/optim/adamw.py update expressions cited there.
#include "sim/zero/generator_common.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr int kN = 2;
} // namespace

TEST_CASE("emit_gpu_adam_step: torch single-tensor AdamW holds sqrt(v) and the quotient at once, 8 B x Psi/N",
          "[zero][validation]") {
  // Stage 2, N = 2, step 1 (m, v exist): when the denom temp is allocated the rank holds lp params 2Ψ + fp32 master
  // 4Ψ/N + m, v 8Ψ/N + fp32 grad partition 4Ψ/N + v.sqrt() 4Ψ/N + the quotient 4Ψ/N = 2Ψ + 24Ψ/N
  // (TinyModel Ψ = 4,004,000: 2Ψ + 12Ψ = 14Ψ = 56,056,000 B), against FusedAdam's 2Ψ + 16Ψ/N during the update.
  auto wl = make_workload();
  wl.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  const auto r = walk(generate(wl, zero_config(2), kN));
  const Sample* s = r.find(1, "adam: denom temp (torch single-tensor)", false);
  REQUIRE(s != nullptr);
  CHECK(s->tag(MemTag::FLATTEN_TEMP) == Approx(8 * psi() / kN).epsilon(kTol));
  CHECK(s->total == Approx(2 * psi() + 24 * psi() / kN).epsilon(kTol));
  // Both temps are gone after the step.
  CHECK(r.live_at_end.size() == walk(generate(make_workload(), zero_config(2), kN)).live_at_end.size());
}

TEST_CASE("emit_gpu_adam_step: torch foreach AdamW needs one 4 B x Psi/N temp, FusedAdam none", "[zero][validation]") {
  // _multi_tensor_adamw: exp_avg_sq_sqrt = _foreach_sqrt(v), then in place: 2Ψ + 16Ψ/N + 4Ψ/N = 2Ψ + 20Ψ/N.
  auto wl = make_workload();
  wl.training.optimizer_impl = scenario::OptimizerImpl::TORCH_FOREACH;
  const auto r = walk(generate(wl, zero_config(1), kN));
  const Sample* s = r.find(1, "adam: sqrt(v) temp (torch foreach)", false);
  REQUIRE(s != nullptr);
  CHECK(s->tag(MemTag::FLATTEN_TEMP) == Approx(4 * psi() / kN).epsilon(kTol));
  CHECK(s->total == Approx(2 * psi() + 20 * psi() / kN).epsilon(kTol));
  const auto fused = walk(generate(make_workload(), zero_config(1), kN));
  CHECK(fused.find(1, "adam: sqrt(v) temp (torch foreach)", false) == nullptr);
}

TEST_CASE("emit_gpu_adam_step: stage 3 steps each sub-group with the configured torch optimizer too",
          "[zero][validation]") {
  // stage3.py _optimizer_step(sub_group_id) calls the wrapped optimizer's step on that sub-group's fp32 partition:
  // torch foreach AdamW then allocates _foreach_sqrt(v), 4 B per sub-group element -- the same bytes as the
  // sub-group's fp32 gradient (4 B per element) that is live at that moment.
  auto wl = make_workload();
  wl.training.optimizer_impl = scenario::OptimizerImpl::TORCH_FOREACH;
  const auto r = walk(generate(wl, zero_config(3), kN));
  const Sample* s = r.find(1, "adam sub-group 0: sqrt(v) temp (torch foreach)", false);
  REQUIRE(s != nullptr);
  CHECK(s->tag(MemTag::FP32_GRADS) > 0);
  CHECK(s->tag(MemTag::FLATTEN_TEMP) == Approx(s->tag(MemTag::FP32_GRADS)).epsilon(kTol));
  const auto fused = walk(generate(make_workload(), zero_config(3), kN));
  CHECK(fused.find(1, "adam sub-group 0: sqrt(v) temp (torch foreach)", false) == nullptr);
}
