// fp32 training without mixed precision (training.precision fp32): the model states per ZeRO stage against a hand
// calculation, and which optimizer-step kernels DeepSpeed 0.19.6 runs or skips in fp32.
#include "sim/zero/stage2_generator.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <string>
#include <utility>
#include <variant>

using namespace zerosim;
using namespace zerosim::zero::testing;
using program::MemTag;

namespace {

constexpr double kTol = 0.005;

/// Ψ = 64 x (117,184,300 + 3,200) = 7.5e9 elements, as the ZeRO paper test: stage 1/2 partition boundaries fall
/// between blocks for N_d in {1, 4, 16, 64} and the flat buffer needs no padding.
TinyModel big_model() {
  TinyModel m;
  m.blocks = 64;
  m.weight_numel = 117'184'300;
  m.bias_numel = 3'200;
  m.activation_bytes = 1e6;
  return m;
}

/// A test workload in fp32: 4 B params and grads.
workload::Workload fp32_workload(const TinyModel& m) {
  workload::Workload w = make_workload(m);
  w.training.precision = scenario::Precision::FP32;
  w.bytes_per_lp = 4.0;
  for (auto& l : w.layers)
    l.param_grad_bytes_lp = Bytes(4.0 * static_cast<double>(l.param_count));
  return w;
}

/// Hand calculation, bytes per GPU, Ψ = 7.5e9, model states as the paper counts them (params + grads + fp32 master +
/// Adam m, v), with DeepSpeed 0.19.6's fp32 code paths:
///  stage 0: engine.py _configure_optimizer runs the basic optimizer unwrapped: params 4Ψ + grads 4Ψ + Adam 8Ψ, no
///           master copy = 16Ψ = 120 GB.
///  stage 1: stage_1_and_2.py __init__ clones the fp32 partition anyway (weights_partition = ...clone().to(master
///           dtype)): params 4Ψ + full grads 4Ψ + (master 4 + Adam 8)Ψ/N = 8Ψ + 12Ψ/N.
///  stage 2: params 4Ψ + (grads 4 + master 4 + Adam 8)Ψ/N = 4Ψ + 16Ψ/N.
///  stage 3: stage3.py _create_fp32_partitions aliases the fp32 "fp16" partition (same dtype and device): params
///           4Ψ/N + grads 4Ψ/N + Adam 8Ψ/N = 16Ψ/N.
double hand_bytes(int stage, int n) {
  const double psi = 7.5e9;
  switch (stage) {
  case 0:
    return 16 * psi;
  case 1:
    return 8 * psi + 12 * psi / n;
  case 2:
    return 4 * psi + 16 * psi / n;
  default:
    return 16 * psi / n;
  }
}

double states(int stage, const Sample& s) {
  const double grads = stage <= 1 ? s.tag(MemTag::LP_GRADS) : s.tag(MemTag::GRAD_PARTITION);
  return s.tag(MemTag::LP_PARAMS) + grads + s.tag(MemTag::FP32_MASTER) + s.tag(MemTag::OPTIMIZER_STATES);
}

bool has_op(const WalkResult& r, const std::string& prefix) {
  for (const auto& s : r.timeline)
    if (s.label.rfind(prefix, 0) == 0)
      return true;
  return false;
}

} // namespace

TEST_CASE(
    "fp32 training: model states per ZeRO stage match the hand calculation (16, 8+12/N, 4+16/N, 16/N bytes per "
    "parameter)",
    "[zero][unit]") {
  const auto wl = fp32_workload(big_model());
  for (int stage = 0; stage <= 3; ++stage)
    for (int n : {1, 4, 16, 64}) {
      INFO("stage " << stage << ", N_d = " << n);
      const auto r = walk(generate(wl, zero_config(stage), n));
      REQUIRE_FALSE(r.deadlock);
      const double peak = r.peak([stage](const Sample& s) { return states(stage, s); }, 1);
      CHECK(peak == Approx(hand_bytes(stage, n)).epsilon(kTol));
      // A master copy only where DeepSpeed makes one: the stage 1/2 partition (4Ψ/N), never at stage 0 or 3.
      const double master = r.peak([](const Sample& s) { return s.tag(MemTag::FP32_MASTER); });
      CHECK(master == Approx(stage == 1 || stage == 2 ? 4 * 7.5e9 / n : 0.0).margin(1.0));
    }
}

TEST_CASE("fp32 training: stage 0 creates Adam states at the first step, as the unwrapped basic optimizer does",
          "[zero][unit]") {
  const auto wl = fp32_workload(big_model());
  const auto r = walk(generate(wl, zero_config(0), 1));
  // After init only the 4Ψ fp32 params; FP16_Optimizer's init step (which creates m and v) does not exist in fp32.
  const double init = r.peak([](const Sample& s) { return s.model_states(); }, -1);
  CHECK(init == Approx(4 * 7.5e9).epsilon(1e-9));
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::OPTIMIZER_STATES); }, 0) == Approx(8 * 7.5e9));
}

TEST_CASE("fp32 training: the optimizer step runs no overflow check, no lp cast and copies back only at stages 1-2",
          "[zero][unit]") {
  const scenario::Precision fp32 = scenario::Precision::FP32;
  // engine.py _configure_zero_optimizer: check_grad_overflow = False with neither fp16 nor bf16 (v0.17.1 on).
  // v0.11.2-v0.17.0: stage_1_and_2.py step() `if self.dtype == torch.float16: self.check_overflow()` (PR #4512;
  // l.1831 @v0.15.3, l.1860 @v0.17.0): no check in fp32 or bf16. Before v0.11.2 it checked unconditionally
  // (l.1707 @v0.11.1).
  scenario::ZeroConfig z = zero_config(2);
  CHECK_FALSE(zero::stage12_checks_overflow(z, fp32));
  for (const auto& v : {std::array<int, 3>{0, 17, 0}, std::array<int, 3>{0, 15, 3}, std::array<int, 3>{0, 11, 2}}) {
    z.deepspeed_version = {v[0], v[1], v[2]};
    INFO("v" << v[0] << "." << v[1] << "." << v[2]);
    CHECK_FALSE(zero::stage12_checks_overflow(z, fp32));
    CHECK_FALSE(zero::stage12_checks_overflow(z, scenario::Precision::BF16));
    CHECK(zero::stage12_checks_overflow(z, scenario::Precision::FP16));
  }
  z.deepspeed_version = {0, 11, 1};
  CHECK(zero::stage12_checks_overflow(z, fp32));
  CHECK(zero::stage12_checks_overflow(z, scenario::Precision::BF16));
  const auto wl = fp32_workload(TinyModel{});
  for (int stage = 0; stage <= 3; ++stage) {
    INFO("stage " << stage);
    const auto r = walk(generate(wl, zero_config(stage), 2));
    CHECK_FALSE(has_op(r, "overflow check"));
    CHECK_FALSE(has_op(r, "cast grads to fp32") != (stage == 3)); // stage 3's flatten keeps its label
    CHECK_FALSE(has_op(r, "clone + flatten lp params"));
    // stage_1_and_2.py step: bit16_partitions[id].data.copy_(fp32_partition) is an fp32 -> fp32 copy; stage 0 has
    // no master and stage 3's copy_ of an aliased partition moves nothing.
    CHECK(has_op(r, "adam fp32->lp") == (stage == 1 || stage == 2));
  }
}

TEST_CASE("fp32 training: gradient collectives move 4 B per element (communication_data_type defaults to fp32)",
          "[zero][unit]") {
  const TinyModel m;
  const auto lp = walk(generate(make_workload(m), zero_config(2), 4));
  const auto f32 = walk(generate(fp32_workload(m), zero_config(2), 4));
  using program::CollectiveKind;
  // Same elements, twice the bytes: every reduce and all-gather of step 1.
  for (CollectiveKind k : {CollectiveKind::REDUCE_SCATTER, CollectiveKind::ALL_REDUCE, CollectiveKind::REDUCE,
                           CollectiveKind::ALL_GATHER}) {
    INFO(static_cast<int>(k));
    CHECK(f32.stats(1, k).payload == Approx(2.0 * lp.stats(1, k).payload));
  }
  CHECK(f32.wire_bytes(1, 4) > 0);
}

TEST_CASE(
    "fp32 training: stage 0 with gradient_clipping runs clip_grad_norm_ (per-param norm, a 4 B all-reduce, "
    "per-param mul_) at every step",
    "[zero][unit]") {
  // engine.py _take_model_step -> clip_fp32_gradients -> runtime/utils.py clip_grad_norm_ (fp32, no ZeRO). The
  // default TinyModel: 4 blocks x (weight 1,000,000 + bias 1,000) = 8 grads, Ψ = 4,004,000 elements.
  //  norm: p.grad.float().norm() reads each fp32 grad once: 8 kernels, 4 B x 4,004,000 = 16,016,000 B per step;
  //  all-reduce of the 4 B float norm over the data-parallel group: 1 call of 4 B per step at N_d = 4;
  //  mul_(clip_coef): read + write 4 B: 8 kernels, 8 B x 4,004,000 = 32,032,000 B per step.
  // Two steps: twice each. No host read and no extra memory (the fp32 grad is its own .float()).
  const TinyModel m;
  auto wl = fp32_workload(m);
  const auto none = generate(wl, zero_config(0), 4);
  wl.training.gradient_clipping = 1.0;
  const auto clip = generate(wl, zero_config(0), 4);
  const auto kernels = [](const program::StepProgram& p, const std::string& prefix) {
    double bytes = 0;
    int ops = 0;
    for (const auto& s : p.streams)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<program::Compute>(&op.body); c && p.labels[op.label].rfind(prefix, 0) == 0) {
          bytes += c->bytes.value();
          ++ops;
        }
    return std::pair<double, int>{bytes, ops};
  };
  CHECK(kernels(none, "clip_grad_norm_").second == 0);
  CHECK(kernels(none, "unscale and clip").second == 0);
  CHECK(kernels(clip, "clip_grad_norm_: norm").first == Approx(2 * 16'016'000.0));
  CHECK(kernels(clip, "clip_grad_norm_: norm").second == 2 * 8);
  CHECK(kernels(clip, "unscale and clip fp32 grads (clip_grad_norm_ mul_)").first == Approx(2 * 32'032'000.0));
  CHECK(kernels(clip, "unscale and clip fp32 grads (clip_grad_norm_ mul_)").second == 2 * 8);
  auto rn = walk(none);
  auto rc = walk(clip);
  REQUIRE_FALSE(rc.deadlock);
  for (int step : {0, 1}) {
    CHECK(rn.scalars.count(step) == 0);
    REQUIRE(rc.scalars.count(step) == 1);
    CHECK(rc.scalars.at(step).calls == 1);
    CHECK(rc.scalars.at(step).payload == Approx(4.0));
  }
  CHECK(rc.peak([](const Sample& s) { return s.total; }) == Approx(rn.peak([](const Sample& s) { return s.total; })));
}
