// The optimizer step's gradient norm and unscale/clip pass on the GPU (sim/zero/generator_common.hpp
// emit_grad_norm, emit_unscale_and_clip). Expected values are hand calculations from the DeepSpeed code cited there:
// stage_1_and_2.py / stage3.py get_grad_norm_direct (g.double() then its L2 norm, per gradient tensor of the rank's
// partition) and unscale_and_clip_grads (grad.mul_ over the fp32 partition).
#include "sim/zero/generator_common.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <variant>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr int kN = 2;
constexpr int kSteps = 2;

/// Bytes of HBM traffic of the compute ops whose label starts with `prefix`, summed over the whole program.
double traffic(const program::StepProgram& p, const std::string& prefix) {
  double sum = 0;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Compute>(&op.body))
        if (p.labels[op.label].rfind(prefix, 0) == 0)
          sum += c->bytes.value();
  return sum;
}
} // namespace

TEST_CASE("grad norm: stage 1 and 2 read each lp grad piece, write and read its double copy: 18 B x Psi/N per step",
          "[zero][validation]") {
  // TinyModel: Ψ = 4 x (1e6 + 1e3) = 4,004,000, N = 2: the rank's partition is 2,002,000 elements of bf16 grads.
  // g.double(): read 2 B + write 8 B; vector_norm: read 8 B -> 18 B per element = 36,036,000 B per step.
  // unscale_and_clip_grads: mul_ on the fp32 partition, read 4 + write 4 = 8 B per element = 16,016,000 B.
  for (int stage : {1, 2}) {
    const auto p = generate(make_workload(), zero_config(stage), kN, kSteps);
    CHECK(traffic(p, "grad norm") == Approx(kSteps * 18.0 * psi() / kN).epsilon(kTol));
    CHECK(traffic(p, "unscale and clip fp32 grads") == Approx(kSteps * 8.0 * psi() / kN).epsilon(kTol));
  }
}

TEST_CASE("grad norm: stage 3 does the same over every param's own partition, the unscale per sub-group",
          "[zero][validation]") {
  // Stage 3 partitions each tensor: ceil(1e6 / 2) + ceil(1e3 / 2) = 500,500 per block, x 4 = 2,002,000 = Ψ/N.
  const auto p = generate(make_workload(), zero_config(3), kN, kSteps);
  CHECK(traffic(p, "grad norm") == Approx(kSteps * 18.0 * psi() / kN).epsilon(kTol));
  CHECK(traffic(p, "unscale and clip fp32 grads") == Approx(kSteps * 8.0 * psi() / kN).epsilon(kTol));
}

TEST_CASE("grad norm: the double copy of each piece is a transient, the largest 8 B x its elements",
          "[zero][validation]") {
  // Stage 2, rank 0's partition [0, 2,002,000) holds block.0.weight (1e6), block.0.bias, block.1.weight, block.1.bias
  // in full: the largest double copy is 8 B x 1e6 = 8e6 B, live alone (each copy is freed after its norm).
  const auto r = walk(generate(make_workload(), zero_config(2), kN, kSteps));
  double peak = 0;
  for (const auto& s : r.timeline)
    if (s.label == "grad norm: double() copy")
      peak = std::max(peak, s.tag(MemTag::WORKING));
  CHECK(peak == Approx(8e6).epsilon(kTol));
}

TEST_CASE("grad norm: stage 0 FP16_Optimizer sums float() of each lp grad, then norms and unscales the flat fp32 grad",
          "[zero][validation]") {
  // bf16, DeepSpeed 0.19.5 defaults: stage 0 runs FP16_Optimizer (fused_optimizer.py step) on the whole Ψ = 4,004,000.
  // CheckOverflow._has_inf_or_nan per lp grad: g.float() read 2 B + write 4 B, .sum() read 4 B -> 10 B x Ψ per step.
  // get_flattened_grad_norm: .float() of the fp32 flat grad is the tensor itself, .norm() reads 4 B -> 4 B x Ψ.
  // unscale_and_clip_grads: mul_ on the flat fp32 grad, read 4 + write 4 -> 8 B x Ψ. None of it divides by N.
  const auto p = generate(make_workload(), zero_config(0), kN, kSteps);
  CHECK(traffic(p, "overflow check") == Approx(kSteps * 10.0 * psi()).epsilon(kTol));
  CHECK(traffic(p, "grad norm") == Approx(kSteps * 4.0 * psi()).epsilon(kTol));
  CHECK(traffic(p, "unscale and clip fp32 grads") == Approx(kSteps * 8.0 * psi()).epsilon(kTol));
  // The float() copy of each grad is freed after its sum: the largest is block.N.weight's, 4 B x 1e6 = 4e6 B.
  const auto r = walk(p);
  double peak = 0;
  for (const auto& s : r.timeline)
    if (s.label == "overflow check: float() copy")
      peak = std::max(peak, s.tag(MemTag::WORKING));
  CHECK(peak == Approx(4e6).epsilon(kTol));
}

TEST_CASE("grad norm: BF16_Optimizer norms each trainable param's full fp32 grad, and multiplies them when clipping",
          "[zero][validation]") {
  // bf16 + grad_accum_dtype fp32 at stage 1: BF16_Optimizer. get_grads_for_norm returns fp32_groups_gradients[i][j],
  // each param's full slice of the unpartitioned fp32 buffer, whatever N: `.float()` of fp32 is the tensor, .norm()
  // reads 4 B -> 4 B x Ψ = 16,016,000 B per step at N = 2 (not 4 B x Ψ/N). With gradient_clipping 1.0 zerosim takes
  // clip_tensors_by_global_norm's `mul_(clip_coef)` as run (the norm assumed above the limit): read 4 + write 4 B per
  // element of the same full grads -> 8 B x Ψ per step; none without clipping.
  auto z = zero_config(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  for (double clip : {0.0, 1.0}) {
    INFO("gradient_clipping " << clip);
    auto wl = make_workload();
    wl.training.gradient_clipping = clip;
    REQUIRE(scenario::uses_bf16_optimizer(wl.training, z));
    const auto p = generate(wl, z, kN, kSteps);
    CHECK(traffic(p, "grad norm") == Approx(kSteps * 4.0 * psi()).epsilon(kTol));
    CHECK(traffic(p, "clip fp32 grads") == Approx(clip > 0 ? kSteps * 8.0 * psi() : 0.0).epsilon(kTol));
    CHECK(traffic(p, "unscale and clip fp32 grads") == 0.0);
  }
}
