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
  // single_partition_of_fp32_groups: the partition cloned to fp32 on the GPU.
  b.alloc_persistent(c, Phase::INIT, "fp32 master partition", MemTag::FP32_MASTER,
                     GeneratorContext::fp32(part.partition));
}

void emit_stage12_step(GeneratorContext& ctx, const FlatPartition& part, IpgBucket& bucket, int step) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  // stage_1_and_2.py step (§3.4): flatten the partition's grads (new lp tensor) -> .to(fp32) -> del lp flat ->
  // averaged_gradients = None -> optimizer.step() -> fp32 grad = None -> fp32 master copied into the lp partition.
  // step 1: scaled_global_norm -> get_grad_norm_direct over averaged_gradients, this rank's pieces of the lp grads.
  std::vector<Elements> pieces;
  for (const auto& pr : ctx.params())
    if (pr.trainable)
      pieces.push_back(part.own(pr.flat_offset, pr.numel));
  emit_grad_norm(ctx, c, pieces);
  BufferId lp_flat = b.alloc(c, Phase::OPTIMIZER, "flatten partition grads", MemTag::FLATTEN_TEMP, ctx.lp(p));
  ctx.mem_kernel(c, Phase::OPTIMIZER, "flatten partition grads", ctx.lp(p) * 2.0);
  BufferId g32 = b.alloc(c, Phase::OPTIMIZER, "fp32 grad partition", MemTag::FP32_GRADS, GeneratorContext::fp32(p));
  ctx.mem_kernel(c, Phase::OPTIMIZER, "cast grads to fp32", ctx.lp(p) + GeneratorContext::fp32(p));
  b.free(c, Phase::OPTIMIZER, lp_flat);
  if (auto gp = bucket.take_partition())
    b.free(c, Phase::OPTIMIZER, *gp);
  emit_unscale_and_clip(ctx, c, p, "");
  if (step == 0) // lazy Adam state since DeepSpeed v0.13.2 (PR #5104), FusedAdam state init at first step
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
  ctx.step_sync(); // fp16: step() -> check_overflow -> has_overflow reads the flag with .item() (host waits)
  if (setup.offload)
    emit_stage12_offload_step(ctx, setup.part, *setup.offload, step);
  else
    emit_stage12_step(ctx, setup.part, bucket, step);
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
