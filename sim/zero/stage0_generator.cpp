#include "sim/zero/stage0_generator.hpp"

#include "sim/zero/generator_common.hpp"
#include "sim/zero/stage2_generator.hpp"

#include <optional>
#include <string>
#include <vector>

namespace zerosim::zero {

using program::BufferId;
using program::CollectiveKind;
using program::MemTag;
using program::Phase;

namespace {

/// The GA-boundary gradient all-reduce of stage 0, whatever the precision: engine _backward_epilogue ->
/// allreduce_gradients -> buffered_allreduce_fallback. Grads in model order go into buckets of
/// MEMORY_OPT_ALLREDUCE_SIZE elements; each bucket is flattened into a new temporary, all-reduced on the default
/// stream (not overlapped with backward) and copied back (§3.3). Issued at world size 1 too (§3.6). The grads are
/// in the model's dtype (ctx.lp: 2 B, 4 B in fp32). The averaging multiply runs after each all-reduce at N_d > 1.
void emit_allreduce_fallback(GeneratorContext& ctx) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  std::vector<Elements> buckets;
  Elements acc = 0;
  for (const auto& p : ctx.params()) {
    if (!p.trainable)
      continue;
    acc += p.numel;
    if (acc > kMemoryOptAllreduceSize) { // allreduce_no_retain: flush once the bucket exceeds the size
      buckets.push_back(acc);
      acc = 0;
    }
  }
  if (acc > 0)
    buckets.push_back(acc);
  // engine.py allreduce_bucket: with a communication_data_type other than the model's the flat tensor is `.to()`
  // that dtype (a new tensor, e.g. fp32: 2x the bucket's bf16 bytes), all-reduced in it and copied back into the
  // flat tensor before the per-grad copy back.
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const std::string l = "allreduce bucket " + std::to_string(i);
    const Bytes bytes = ctx.lp(buckets[i]);
    const Bytes wire = ctx.comm(buckets[i]);
    BufferId tmp = b.alloc(c, Phase::GRAD_REDUCE, "flatten " + l, MemTag::FLATTEN_TEMP, bytes);
    ctx.mem_kernel(c, Phase::GRAD_REDUCE, "flatten " + l, bytes * 2.0);
    const auto cast = ctx.cast_for_comm(c, buckets[i], l);
    b.collective(c, Phase::GRAD_REDUCE, l, CollectiveKind::ALL_REDUCE, wire, ctx.dp_group());
    // postscale_gradients (the default, prescale_gradients false) with gradient_predivide_factor 1.0: the reduced
    // tensor (the cast copy if any) is multiplied by 1 / N_d after the all-reduce; at N_d == 1 the factor equals the
    // world size and nothing runs (engine.py allreduce_bucket l.1243-1252 @v0.3.15, l.3623-3630 @v0.19.5).
    if (ctx.n() > 1)
      emit_grad_average(ctx, c, wire, l);
    ctx.uncast_from_comm(c, cast, buckets[i], l);
    ctx.mem_kernel(c, Phase::GRAD_REDUCE, "copy back " + l, bytes * 2.0);
    b.free(c, Phase::GRAD_REDUCE, tmp);
  }
}

/// Stage 0 in fp32 (training.precision fp32). engine.py _configure_optimizer: with neither fp16 nor bf16 enabled
/// and no ZeRO, _do_optimizer_sanity_check returns no wrapper and `self.optimizer = basic_optimizer` -- FusedAdam
/// (or torch.optim) stepping the model's own fp32 params. So there is no FP16_Optimizer: no flattening, no fp32
/// master copy, no loss scaler or overflow check, and no gradient norm unless training.gradient_clipping > 0
/// (_take_model_step -> clip_fp32_gradients, emit_fp32_clip). The Adam states are created lazily at the first step
/// (FusedAdam / torch.optim step() initialise an empty state). Model states: 4 (params) + 4 (grads) + 8 (m, v) = 16 B per parameter from the first
/// step on. After the step engine.zero_grad sets every param.grad to None.
/// engine.py clip_fp32_gradients (stage 0 in fp32 with gradient_clipping > 0): DeepSpeed's own clip_grad_norm_
/// (runtime/utils.py, not torch.nn.utils') over the module's params with a grad (the trainable ones). Per param
/// `p.grad.data.float().norm(2)` (fp32: no copy, one norm kernel reading 4 B per element), the stacked norms squared
/// and summed on the device, then -- whether or not there is model parallelism -- a dist.all_reduce of the 4 B float
/// over the data-parallel group (the MoE norm averaging), clip_coef = min(1, max_norm / (norm + 1e-6)) on the device
/// and `p.grad.data.mul_(clip_coef)`, one kernel per param (read 4 + write 4 B per element) at every step, clipped or not. No
/// host read: the coefficient never leaves the GPU. Not modelled: the few scalar kernels (stack, square, sum, min).
void emit_fp32_clip(GeneratorContext& ctx, program::StreamId c, const std::vector<Elements>& grads) {
  emit_grad_norm(ctx, c, grads, NormCast::FP32_AS_IS, "clip_grad_norm_", "norm");
  emit_scalar_allreduce(ctx, c, "allreduce grad norm", Bytes(4), ctx.dp_group());
  for (const Elements e : grads)
    emit_unscale_and_clip(ctx, c, e, " (clip_grad_norm_ mul_)");
}

program::StepProgram generate_stage0_fp32(const GeneratorInput& in) {
  GeneratorContext ctx(in);
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements train = ctx.trainable_params();
  std::vector<Elements> trainable_grads; // clip_grad_norm_ walks the params whose grad is not None
  for (const auto& p : ctx.params())
    if (p.trainable)
      trainable_grads.push_back(p.numel);
  b.alloc_persistent(c, Phase::INIT, "fp32 params", MemTag::LP_PARAMS, ctx.lp(ctx.total_params()));
  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    AccumulatedGrads grads(ctx); // param.grad in fp32, accumulated across micro-steps by autograd
    emit_accumulating_micro_steps(ctx, step, grads);
    emit_allreduce_fallback(ctx);
    if (ctx.wl().training.gradient_clipping > 0)
      emit_fp32_clip(ctx, c, trainable_grads);
    if (step == 0)
      b.alloc_persistent(c, Phase::OPTIMIZER, "adam m,v", MemTag::OPTIMIZER_STATES,
                         GeneratorContext::fp32(train) * 2.0);
    emit_gpu_adam_step(ctx, c, "adam", train, false); // the params are the fp32 ones: nothing to copy back
    grads.free_all(c, Phase::OPTIMIZER); // engine.zero_grad: param.grad = None
    ctx.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
    ctx.end_step(step);
  }
  return ctx.build();
}

} // namespace

program::StepProgram generate_stage0(const GeneratorInput& in) {
  if (in.workload.training.precision == scenario::Precision::FP32)
    return generate_stage0_fp32(in);
  GeneratorContext ctx(in);
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements psi = ctx.total_params();
  const Elements train = ctx.trainable_params();

  // INIT (fused_optimizer.py __init__, §3.3): params are cloned and flattened (transient ≈3x lp), the fp32 master
  // is a flat copy, and initialize_optimizer_states runs one optimizer.step() with a zero fp32 flat grad so Adam's
  // exp_avg / exp_avg_sq exist from init (unlike ZeRO 1-3, §7 #17).
  // The optimizer's param groups hold the trainable params only (HF Trainer / PEFT pass requires_grad ones), so
  // with frozen weights only the adapters are cloned and flattened.
  b.alloc_persistent(c, Phase::INIT, "lp params", MemTag::LP_PARAMS, ctx.lp(psi));
  BufferId clone = b.alloc(c, Phase::INIT, "clone + flatten lp params", MemTag::FLATTEN_TEMP, ctx.lp(train) * 2.0);
  b.free(c, Phase::INIT, clone);
  b.alloc_persistent(c, Phase::INIT, "fp32 master", MemTag::FP32_MASTER, GeneratorContext::fp32(train));
  BufferId zero_grad = b.alloc(c, Phase::INIT, "dummy fp32 grad", MemTag::FP32_GRADS, GeneratorContext::fp32(train));
  b.alloc_persistent(c, Phase::INIT, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(train) * 2.0);
  b.free(c, Phase::INIT, zero_grad);

  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    AccumulatedGrads grads(ctx);
    emit_accumulating_micro_steps(ctx, step, grads);
    emit_allreduce_fallback(ctx);
    // Step (fused_optimizer.py step), fp16 and (DDP_BFLOAT16, DeepSpeed >= 0.18.5) bf16 alike: first
    // CheckOverflow.has_overflow_serial sums `g.float()` of every lp grad (a 4 B/element transient per tensor).
    std::vector<Elements> lp_grads;
    for (const auto& p : ctx.params())
      if (p.trainable)
        lp_grads.push_back(p.numel);
    emit_grad_norm(ctx, c, lp_grads, NormCast::LP_TO_FLOAT, "overflow check", "sum");
    // Then per-param fp32 grad copies (4Ψ), flattened into one fp32 grad (4Ψ): peak
    // 2 + 4 + 8 + 2 + 4 + 4 = 24Ψ; the list and the lp grads are dropped -> 18Ψ during Adam; flat fp32 grad freed
    // after the update -> 14Ψ (§3.3, §7 #16).
    ctx.step_sync(); // fp16: FP16_Optimizer.step's overflow check reads the flag with .item() (host waits)
    if (ctx.overflow_skipped(step)) {
      // fp16 overflow (training.skipped_steps): _update_scale halves the loss scale, every lp grad is set to None
      // and step() returns (fp16/fused_optimizer.py step, l.240-252 @v0.9.0): no fp32 grads, norm or Adam.
      grads.free_all(c, Phase::OPTIMIZER);
      ctx.end_micro_step(step);
      ctx.end_step(step);
      continue;
    }
    BufferId list = b.alloc(c, Phase::OPTIMIZER, "fp32 grad list", MemTag::FP32_GRADS, GeneratorContext::fp32(train));
    ctx.mem_kernel(c, Phase::OPTIMIZER, "cast grads to fp32", ctx.lp(train) + GeneratorContext::fp32(train));
    BufferId flat = b.alloc(c, Phase::OPTIMIZER, "flat fp32 grad", MemTag::FP32_GRADS, GeneratorContext::fp32(train));
    ctx.mem_kernel(c, Phase::OPTIMIZER, "flatten fp32 grads", GeneratorContext::fp32(train) * 2.0);
    b.free(c, Phase::OPTIMIZER, list);
    grads.free_all(c, Phase::OPTIMIZER);
    // get_flattened_grad_norm: `.float().norm()` of the flat fp32 grad (no copy), whatever gradient_clipping says;
    // unscale_and_clip_grads then runs mul_ over it at every step (apply_scale is always true).
    emit_grad_norm(ctx, c, {train}, NormCast::FP32_AS_IS);
    emit_unscale_and_clip(ctx, c, train, "");
    emit_gpu_adam_step(ctx, c, "adam", train);
    b.free(c, Phase::OPTIMIZER, flat);
    ctx.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
    ctx.end_step(step);
  }
  return ctx.build();
}

} // namespace zerosim::zero
