#include "sim/zero/stage2_generator.hpp"

#include "sim/zero/offload_cpu.hpp"

#include <string>
#include <vector>

namespace zerosim::zero {

using program::BufferId;
using program::CollectiveKind;
using program::MemTag;
using program::Phase;

void emit_stage12_init(GeneratorContext& ctx, const FlatPartition& part) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  // bit16_groups_flat, padded to 2N: on the GPU (with a transient) or through the CPU, as DeepSpeed decides.
  (void)emit_lp_flatten(ctx, part);
  // single_partition_of_fp32_groups: this rank's slice of the flat lp buffer cloned, then cast to fp32 on the GPU
  // (`.clone().float()`, l.346-347 @v0.9.0; `.detach().clone().to(device, dtype)` from v0.18.3): the lp clone is a
  // transient whose block the allocator keeps.
  (void)emit_fp32_master_from_lp(ctx, c, "fp32 master partition", part.partition, MasterCast::CLONE_THEN_CAST);
  // Before v0.13.2 (adam_state_at_init) initialize_optimizer_states gives the fp32 partition a zero fp32 grad
  // (torch.zeros of the partition on the GPU), runs optimizer.step(), which creates Adam's m and v (torch AdamW: the
  // update's temporaries too, emit_gpu_adam_init_step), then drops the grad (stage_1_and_2.py
  // initialize_optimizer_states, l.605-620 @v0.9.0, l.653-674 @v0.13.1). From v0.13.2 (PR #5104) there is no step,
  // but the zero grad is still allocated (a memset kernel) and dropped at once: `group.grad = None` when not
  // cpu_offload (l.667-686 @v0.13.2, l.837-856 @v0.19.5). No empty_cache follows before training, so its block
  // stays cached on the compute stream for the caching allocator to split among later allocations.
  const Elements p = part.partition;
  const BufferId z = b.alloc(c, Phase::INIT, "init fp32 grad partition", MemTag::FP32_GRADS, GeneratorContext::fp32(p));
  ctx.mem_kernel(c, Phase::INIT, "zero init fp32 grad partition", GeneratorContext::fp32(p));
  if (adam_state_at_init(ctx.cfg())) {
    b.alloc_persistent(c, Phase::INIT, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0);
    emit_gpu_adam_init_step(ctx, c, "adam at init", p);
  }
  b.free(c, Phase::INIT, z);
}

bool stage12_checks_overflow(const scenario::ZeroConfig& cfg, scenario::Precision precision) {
  // engine.py _configure_zero_optimizer check_grad_overflow (PR #6976, v0.17.1): True for fp16; bf16 reads
  // bf16.check_grad_overflow, default False until v0.19.3 (PR #8035) and True since; False with neither fp16 nor
  // bf16 enabled (fp32). Before v0.17.1 step() itself decides: `if self.dtype == torch.float16: check_overflow()`
  // from v0.11.2 (PR #4512, "Don't check overflow for bf16 data type"; l.1831 @v0.15.3, l.1860 @v0.17.0), so bf16
  // and fp32 run no check there; before v0.11.2 it checked unconditionally, whatever the dtype (l.1707 @v0.11.1).
  if (precision == scenario::Precision::FP16 || cfg.deepspeed_before(0, 11, 2))
    return true;
  if (cfg.deepspeed_before(0, 17, 1))
    return false;
  if (precision == scenario::Precision::FP32)
    return false;
  return !cfg.deepspeed_before(0, 19, 3);
}

bool stage12_overflow_allreduce(const scenario::ZeroConfig& cfg) {
  // has_overflow: `if partition_gradients: dist.all_reduce(...)`. step() called check_overflow() with the default
  // True before v0.17.1 and with self.partition_gradients from v0.17.1 (PR #6976); v0.18.0 (PR #7580) all-reduces
  // unconditionally.
  return cfg.stage >= 2 || cfg.deepspeed_before(0, 17, 1) || !cfg.deepspeed_before(0, 18, 0);
}

bool stage12_clip_waits(const scenario::ZeroConfig& cfg, double gradient_clipping) {
  // unscale_and_clip_grads: `if clip > 1:` on the norm, a GPU tensor from v0.13.2 (PR #4974) until torch.clamp
  // replaced the test in v0.14.3 (PR #5632); only evaluated when clip_grad > 0.
  return gradient_clipping > 0 && !cfg.deepspeed_before(0, 13, 2) && cfg.deepspeed_before(0, 14, 3);
}

void emit_stage12_grad_checks(GeneratorContext& ctx, const FlatPartition& part, bool overflow_only) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const auto& cfg = ctx.cfg();
  // averaged_gradients: this rank's in-partition slice of every param touching the partition (rank 0's, lp).
  std::vector<std::pair<std::string, Elements>> slices;
  for (const auto& pr : ctx.params())
    if (pr.trainable)
      if (const Elements own = part.own(pr.flat_offset, pr.numel); own > 0)
        slices.emplace_back(pr.name, own);
  const auto sync = [&] { ctx.host_read(c); };
  if (stage12_checks_overflow(cfg, ctx.wl().training.precision)) {
    // check_overflow -> has_overflow_partitioned_grads_serial: _has_inf_or_nan per slice. Before v0.13.3
    // `float(x.float().sum())`: an fp32 copy (written 4 B, read 4 B per element) and a host wait per slice; from
    // v0.13.3 (PR #5115) x.float(), isnan, isinf, logical_or, .float(), max summed on the device: lp + 4 + 4+1 + 4+1
    // + 2+1 + 1+4 + 4 = lp + 26 B per element, temporaries 4+1+1+1+4 = 11 B per element, no host wait.
    // fp32 (before v0.11.2 only): x.float() is x (inf_nan_check_cost).
    const bool masks = !cfg.deepspeed_before(0, 13, 3);
    for (const auto& [name, own] : slices) {
      const InfNanCheckCost cost = inf_nan_check_cost(ctx, own, masks);
      std::optional<BufferId> t;
      if (cost.temporaries.value() > 0)
        t = b.alloc(c, Phase::OPTIMIZER, "overflow check temporaries " + name, MemTag::WORKING, cost.temporaries);
      ctx.mem_kernel(c, Phase::OPTIMIZER, "overflow check " + name, cost.traffic);
      if (t)
        b.free(c, Phase::OPTIMIZER, *t);
      if (!masks)
        sync();
    }
    // has_overflow all-reduces the 1-byte flag (MAX) over the dp group and reads it with `.item()`: one host wait.
    if (stage12_overflow_allreduce(cfg))
      emit_scalar_allreduce(ctx, c, "allreduce overflow flag", Bytes(1), ctx.dp_group());
    sync();
  }
  if (overflow_only)
    return;
  // scaled_global_norm -> get_grad_norm_direct: per slice `g.double()` and its L2 norm (emit_grad_norm, lp + 16 B
  // per element). Before v0.13.2 each norm is read with `.item()` (a host wait per slice) and the sum goes back in a
  // FloatTensor, all-reduced and read again (one more wait); from v0.13.2 (PR #4974) the norms stay on the device.
  // Either way the squared total (4 B float) is all-reduced (SUM) over the dp group.
  if (cfg.deepspeed_before(0, 13, 2)) {
    for (const auto& [name, own] : slices) {
      emit_grad_norm(ctx, c, {own});
      sync();
    }
    emit_scalar_allreduce(ctx, c, "allreduce grad norm", Bytes(4), ctx.dp_group());
    sync();
  } else {
    std::vector<Elements> pieces;
    pieces.reserve(slices.size());
    for (const auto& sl : slices)
      pieces.push_back(sl.second);
    emit_grad_norm(ctx, c, pieces);
    emit_scalar_allreduce(ctx, c, "allreduce grad norm", Bytes(4), ctx.dp_group());
    if (stage12_clip_waits(cfg, ctx.wl().training.gradient_clipping))
      sync(); // unscale_and_clip_grads' `if clip > 1` reads the norm
  }
}

void emit_stage12_step(GeneratorContext& ctx, const FlatPartition& part, IpgBucket& bucket, int step) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  // stage_1_and_2.py step (§3.4): flatten the partition's grads (new lp tensor) -> .to(fp32) -> del lp flat ->
  // averaged_gradients = None -> optimizer.step() -> fp32 grad = None -> fp32 master copied into the lp partition.
  if (ctx.overflow_skipped(step)) {
    // fp16 overflow (training.skipped_steps): after check_overflow, _update_scale halves the loss scale, then
    // zero_grad(set_to_none=True) and `averaged_gradients = {}` drop the grads and step() returns: no norm, no
    // optimizer step, no all-gather of the lp params (stage_1_and_2.py step, l.1652-1666 @v0.9.0).
    emit_stage12_grad_checks(ctx, part, true);
    if (auto gp = bucket.take_partition())
      b.free(c, Phase::OPTIMIZER, *gp);
    for (BufferId g : bucket.take_kept_partition_grads())
      b.free(c, Phase::OPTIMIZER, g);
    return;
  }
  emit_stage12_grad_checks(ctx, part, false);
  // fp32 (training.precision): `flat_grad_partition.to(fp32)` returns the flat tensor itself, which becomes the fp32
  // partition's grad: one flatten, no cast. The fp32 partition is still a clone (weights_partition =
  // ...detach().clone().to(master dtype) in __init__: emit_stage12_init), and the copy back into the "bit16"
  // partition after the step an fp32 -> fp32 copy_ (gpu_adam's copy-back at 4 B per element).
  BufferId g32 = 0;
  if (ctx.wl().training.precision == scenario::Precision::FP32) {
    g32 = b.alloc(c, Phase::OPTIMIZER, "flatten partition grads (fp32)", MemTag::FP32_GRADS, ctx.lp(p));
    ctx.mem_kernel(c, Phase::OPTIMIZER, "flatten partition grads", ctx.lp(p) * 2.0);
  } else {
    const BufferId lp_flat = b.alloc(c, Phase::OPTIMIZER, "flatten partition grads", MemTag::FLATTEN_TEMP, ctx.lp(p));
    ctx.mem_kernel(c, Phase::OPTIMIZER, "flatten partition grads", ctx.lp(p) * 2.0);
    g32 = b.alloc(c, Phase::OPTIMIZER, "fp32 grad partition", MemTag::FP32_GRADS, GeneratorContext::fp32(p));
    ctx.mem_kernel(c, Phase::OPTIMIZER, "cast grads to fp32", ctx.lp(p) + GeneratorContext::fp32(p));
    b.free(c, Phase::OPTIMIZER, lp_flat);
  }
  if (auto gp = bucket.take_partition())
    b.free(c, Phase::OPTIMIZER, *gp);
  for (BufferId g : bucket.take_kept_partition_grads()) // stage 1 without contiguous_gradients (IpgBucket::keep)
    b.free(c, Phase::OPTIMIZER, g);
  emit_unscale_and_clip(ctx, c, p, "");
  // lazy Adam state since v0.13.2 (PR #5104): FusedAdam's state init, at the first step not skipped on overflow
  if (step == ctx.first_applied_step() && !adam_state_at_init(ctx.cfg()))
    b.alloc_persistent(c, Phase::OPTIMIZER, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0);
  emit_gpu_adam_step(ctx, c, "adam", p);
  b.free(c, Phase::OPTIMIZER, g32);
  // all_gather_dp_groups (runtime/utils.py): one all_gather_into_tensor per param group into the flat lp buffer,
  // no extra memory; skipped when dp_world_size == 1 (§3.6, §7 #18).
  if (ctx.n() > 1)
    b.collective(c, Phase::PARAM_GATHER, "allgather lp params", CollectiveKind::ALL_GATHER, ctx.lp(part.padded_total),
                 ctx.dp_group());
}

Stage12Setup begin_stage12(GeneratorContext& ctx, bool cpu_accumulation) {
  Stage12Setup s;
  s.overlap = ctx.cfg().overlap_comm_effective();
  // overlap_comm: reductions on a dedicated reduction stream; otherwise on the compute stream (§3.4 "Streams").
  s.reduce = s.overlap ? ctx.add_stream("comm", program::StreamKind::COMM) : ctx.compute();
  s.part = make_flat_partition(ctx);
  // offload_optimizer=cpu: the ZeRO-Offload path (§3.4); otherwise everything stays on the GPU.
  // Any offload device, nvme too, is cpu_offload in stage_1_and_2.py __init__ (no NVMe swapper below stage 3).
  if (ctx.cfg().offload_optimizer != scenario::OffloadDevice::NONE) {
    s.offload = add_offload_streams(ctx);
    s.offload_grads = OffloadGrads{s.offload->copy, cpu_accumulation};
    emit_stage12_offload_init(ctx, s.part, *s.offload, cpu_accumulation);
  } else {
    emit_stage12_init(ctx, s.part);
  }
  return s;
}

void emit_stage12_optimizer(GeneratorContext& ctx, const Stage12Setup& setup, IpgBucket& bucket, int step) {
  if (setup.offload) {
    const auto c = ctx.compute();
    const auto& cfg = ctx.cfg();
    const auto sync = [&] { ctx.host_read(c); };
    // step() -> check_overflow -> has_overflow: local_overflow (found while the grads were copied out) goes up in a
    // ByteTensor, is all-reduced (MAX) and read with `.item()` (a host wait).
    if (stage12_checks_overflow(cfg, ctx.wl().training.precision)) {
      if (stage12_overflow_allreduce(cfg))
        emit_scalar_allreduce(ctx, c, "allreduce overflow flag", Bytes(1), ctx.dp_group());
      sync();
    }
    // fp16 overflow (training.skipped_steps): the grads went D2H into the host fp32 grad partition during the
    // backward as usual; step() then runs zero_grad(set_to_none=True) and reset_cpu_buffers (host bookkeeping only:
    // norm_for_param_grads, local_overflow) and returns: no norm all-reduce, no CPU Adam, no H2D of the updated
    // partition, no all-gather (stage_1_and_2.py step, l.2264-2285 @v0.19.5; the same in stage2.py @v0.3.16).
    if (ctx.overflow_skipped(step))
      return;
    // complete_grad_norm_calculation_for_cpu_offload: the per-param norms summed on the host (`.item()` each), a
    // FloatTensor all-reduced (SUM) over the dp group and read back (`.item()`): a host wait after the all-reduce.
    // The result goes back to the GPU as a tensor, which unscale_and_clip_grads' `if clip > 1` reads again in
    // v0.13.2-v0.14.2 with clipping.
    emit_scalar_allreduce(ctx, c, "allreduce grad norm", Bytes(4), ctx.dp_group());
    sync();
    if (stage12_clip_waits(cfg, ctx.wl().training.gradient_clipping))
      sync();
    emit_stage12_offload_step(ctx, setup.part, *setup.offload, step);
  } else {
    emit_stage12_step(ctx, setup.part, bucket, step); // its overflow check reads the flag (emit_stage12_grad_checks)
  }
}

program::StepProgram generate_stage2(const GeneratorInput& in) {
  GeneratorContext ctx(in);
  // Stage 2 with GA > 1 and offload accumulates the non-boundary micro-steps' grads on the host.
  const Stage12Setup setup = begin_stage12(ctx, ctx.grad_accum() > 1);
  IpgBucket bucket(ctx, setup.reduce, setup.part, setup.offload_grads);
  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    for (int micro = 0; micro < ctx.grad_accum(); ++micro) {
      bucket.set_boundary(micro == ctx.grad_accum() - 1);
      PassHooks hooks;
      // Stage 2 reduces in the hooks of every micro-step (engine.py: stage >= 2 communicates at non-boundary
      // micro-steps too); each grad is a fresh autograd tensor handed to the bucket.
      hooks.on_grad = [&](std::size_t p) {
        const auto& pr = ctx.params()[p];
        bucket.ensure_allocated();
        BufferId g =
            ctx.b().alloc(ctx.compute(), Phase::BACKWARD, "grad " + pr.name, MemTag::LP_GRADS, ctx.lp(pr.numel));
        bucket.add(p, g, micro);
      };
      hooks.split_per_submodule();
      ctx.begin_micro_step(step); // engine.forward: tput_timer.start()
      auto acts = ctx.forward({});
      ctx.backward(acts, hooks);
      bucket.epilogue(); // buckets released once per backward in stage 2 (§7 #10)
      if (micro + 1 < ctx.grad_accum())
        ctx.end_micro_step(step); // engine.step() off the boundary, then the loop reads the loss
    }
    emit_stage12_optimizer(ctx, setup, bucket, step);
    ctx.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
    ctx.end_step(step);
  }
  return ctx.build();
}

} // namespace zerosim::zero
