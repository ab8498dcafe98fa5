#include "sim/zero/stage1_generator.hpp"

#include "sim/zero/generator_common.hpp"
#include "sim/zero/ipg_bucket.hpp"
#include "sim/zero/offload_cpu.hpp"
#include "sim/zero/stage2_generator.hpp"

#include <string>
#include <vector>

namespace zerosim::zero {

using program::BufferId;
using program::CollectiveKind;
using program::MemTag;
using program::Phase;

// DeepSpeed's BF16_Optimizer (deepspeed/runtime/bf16_optimizer.py) with its defaults: immediate_grad_update false
// (runtime/precision_config.py DeepSpeedBF16Config); communication_data_type unset -> bf16 (engine.py
// communication_data_type), or as zero.communication_data_type says.
program::StepProgram generate_bf16_optimizer(const GeneratorInput& in) {
  GeneratorContext ctx(in);
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const FlatPartition part = make_flat_partition(ctx);
  const Elements frozen = ctx.total_params() - ctx.trainable_params();
  const Bytes grads32 = GeneratorContext::fp32(part.padded_total);

  // INIT (_setup_for_real_optimizer): the trainable params flattened on the GPU into bf16_groups_flat, padded to a
  // multiple of 2N (module params + flat copy transiently, then the params point into the flat buffer); the fp32
  // master partition cloned from this rank's slice; fp32_groups_gradients_flat = zeros_like(flat, grad_acc_dtype):
  // a full-size fp32 gradient buffer on every rank, persistent (zero_semantics.md §3.2).
  b.alloc_persistent(c, Phase::INIT, "bf16 params (flat)", MemTag::LP_PARAMS, ctx.lp(part.padded_total + frozen));
  BufferId tmp = b.alloc(c, Phase::INIT, "flatten bf16 params", MemTag::FLATTEN_TEMP, ctx.lp(ctx.trainable_params()));
  b.free(c, Phase::INIT, tmp);
  // fp32_groups_flat_partition: `bf16_dp_partitions[partition_id].clone().float()` (bf16_optimizer.py l.117
  // @v0.9.0, unchanged since): a bf16 clone, transient.
  (void)emit_fp32_master_from_lp(ctx, c, "fp32 master partition", part.partition, MasterCast::CLONE_THEN_CAST);
  b.alloc_persistent(c, Phase::INIT, "fp32 gradient buffer (full)", MemTag::FP32_GRADS, grads32);
  ctx.mem_kernel(c, Phase::INIT, "zero fp32 gradient buffer", grads32);
  // Before v0.13.2 (adam_state_at_init) initialize_optimizer_states points each fp32 partition's grad at its slice of
  // that buffer (no new tensor), runs optimizer.step(), which creates m and v, and zeroes the buffer again
  // (clear_hp_grads) (bf16_optimizer.py l.199-212 @v0.9.0, l.205-224 @v0.13.1).
  if (adam_state_at_init(ctx.cfg())) {
    b.alloc_persistent(c, Phase::INIT, "adam m,v", MemTag::OPTIMIZER_STATES,
                       GeneratorContext::fp32(part.partition) * 2.0);
    emit_gpu_adam_init_step(ctx, c, "adam at init", part.partition);
    ctx.mem_kernel(c, Phase::INIT, "zero fp32 gradient buffer", grads32);
  }

  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    // lp grads live in param.grad: zeroed in place at every backward_prologue (clear_lp_grads, set_to_none=False),
    // freed by zero_grad(set_to_none=True) after the step -- AccumulatedGrads' pattern.
    AccumulatedGrads grads(ctx);
    emit_accumulating_micro_steps(ctx, step, grads, [&] {
      // backward_epilogue -> update_hp_grads (every micro-step): per param hp_grad.add_(lp.grad.to(fp32)); the
      // fp32 cast is a temporary of the param's size. Traffic: read lp 2 + write temp 4, read temp 4 + hp 4 + write
      // hp 4 = 18 B per element.
      for (const auto& pr : ctx.params()) {
        if (!pr.trainable)
          continue;
        const Bytes t32 = GeneratorContext::fp32(pr.numel);
        BufferId t = b.alloc(c, Phase::BACKWARD, "fp32 cast " + pr.name, MemTag::WORKING, t32);
        ctx.mem_kernel(c, Phase::BACKWARD, "accumulate fp32 grad " + pr.name, ctx.lp(pr.numel) + t32 * 4.0);
        b.free(c, Phase::BACKWARD, t);
      }
    });
    // GA boundary: allreduce_gradients -> buffered_allreduce_fallback(get_grads_for_reduction()) = the flat fp32
    // buffer, one tensor, so one bucket whose flatten is a view (torch flatten_dense_tensors of a single tensor);
    // allreduce_bucket casts it to the communication dtype (bf16 by default): a 2 B/element temporary, all-reduced,
    // copied back into the fp32 buffer (engine.py allreduce_bucket). With communication_data_type fp32 the buffer
    // already has it: no cast, the all-reduce runs on the fp32 buffer (4 B/element). Issued at world size 1 too,
    // like stage 0 (§3.6). At N_d > 1 allreduce_bucket's postscale multiply by 1 / N_d follows the all-reduce, on the
    // tensor it reduced (emit_grad_average; engine.py l.3623-3630 @v0.19.5).
    const Bytes comm = ctx.comm(part.padded_total);
    if (ctx.cfg().communication_data_type == scenario::CommDataType::FP32) {
      b.collective(c, Phase::GRAD_REDUCE, "allreduce fp32 grad buffer (fp32)", CollectiveKind::ALL_REDUCE, comm,
                   ctx.dp_group());
      if (ctx.n() > 1)
        emit_grad_average(ctx, c, comm, "allreduce fp32 grad buffer (fp32)");
    } else {
      const std::string dtype =
          scenario::to_string(ctx.cfg().communication_data_type_effective(ctx.wl().training.precision));
      BufferId cast =
          b.alloc(c, Phase::GRAD_REDUCE, "fp32 grads -> " + dtype + " for all-reduce", MemTag::FLATTEN_TEMP, comm);
      ctx.mem_kernel(c, Phase::GRAD_REDUCE, "cast fp32 grads to " + dtype, grads32 + comm);
      b.collective(c, Phase::GRAD_REDUCE, "allreduce fp32 grad buffer (" + dtype + ")", CollectiveKind::ALL_REDUCE,
                   comm, ctx.dp_group());
      if (ctx.n() > 1)
        emit_grad_average(ctx, c, comm, "allreduce fp32 grad buffer (" + dtype + ")");
      ctx.mem_kernel(c, Phase::GRAD_REDUCE, "copy back into fp32 grads", comm + grads32);
      b.free(c, Phase::GRAD_REDUCE, cast);
    }
    // step(): get_grads_for_norm returns fp32_groups_gradients[i][j], per trainable param a view of its full-size
    // slice of the (unpartitioned) fp32 buffer -- not this rank's partition -- in every release that has
    // BF16_Optimizer (v0.6.2 to v0.19.x); get_global_norm_of_tensors takes `t.data.float().norm()` of each (fp32: no
    // copy, one kernel reading 4 B per element, the padding not included). param_partition.grad is a view of the
    // fp32 buffer (no copy, grad_acc_dtype == fp32); Adam on the fp32 partition (m, v created at the first
    // step from v0.13.2, at init before; torch / FusedAdam lazy state); update_lp_params copies fp32 -> bf16
    // partition (in gpu_adam) and all_gather_dp_groups into the flat bf16 buffer (skipped at world size 1, §7 #18);
    // clear_hp_grads zero_()s the whole fp32 buffer (write 4 B/element); then zero_grad(set_to_none=True) frees the lp
    // grads.
    const Elements p = part.partition;
    std::vector<Elements> trainable;
    for (const auto& pr : ctx.params())
      if (pr.trainable)
        trainable.push_back(pr.numel);
    emit_grad_norm(ctx, c, trainable, NormCast::FP32_AS_IS, "grad norm", "norm");
    // Host reads of the norm (runtime/utils.py get_global_norm_of_tensors, clip_tensors_by_global_norm; no mpu, so
    // no all-reduce): before v0.14.1 `.item()` of each fp32 grad tensor's norm and of the summed FloatTensor, a
    // Python float afterwards. From v0.14.1 the norm stays a device tensor: step()'s `assert all_groups_norm > 0.`
    // reads it, and with gradient_clipping > 0 clip_tensors_by_global_norm's `if clip_coef < 1` reads it again.
    if (ctx.cfg().deepspeed_before(0, 14, 1)) {
      for (std::size_t i = 0; i < trainable.size(); ++i)
        ctx.host_read(c);
      ctx.host_read(c);
    } else {
      ctx.host_read(c);
      if (ctx.wl().training.gradient_clipping > 0.0)
        ctx.host_read(c);
    }
    // With gradient_clipping > 0, clip_tensors_by_global_norm(get_grads_for_norm(for_clipping=True)) multiplies
    // every full-size fp32 grad tensor by clip_coef (`t.detach().mul_`, read 4 + write 4 B per element) -- only when
    // the norm exceeds the limit, which zerosim cannot know: it assumes it does, at every step, as the other
    // stages' unscale_and_clip_grads and stage 0's clip_grad_norm_ multiply at every step (an upper bound here).
    if (ctx.wl().training.gradient_clipping > 0.0)
      for (const Elements e : trainable)
        ctx.mem_kernel(c, Phase::OPTIMIZER, "clip fp32 grads (clip_coef mul_)", GeneratorContext::fp32(e) * 2.0);
    if (step == 0 && !adam_state_at_init(ctx.cfg()))
      b.alloc_persistent(c, Phase::OPTIMIZER, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0);
    emit_gpu_adam_step(ctx, c, "adam", p);
    if (ctx.n() > 1)
      b.collective(c, Phase::PARAM_GATHER, "allgather bf16 params", CollectiveKind::ALL_GATHER,
                   ctx.lp(part.padded_total), ctx.dp_group());
    ctx.mem_kernel(c, Phase::OPTIMIZER, "zero fp32 gradient buffer", grads32);
    grads.free_all(c, Phase::OPTIMIZER);
    ctx.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
    ctx.end_step(step);
  }
  return ctx.build();
}

program::StepProgram generate_stage1(const GeneratorInput& in) {
  GeneratorContext ctx(in);
  // offload_optimizer=cpu: the ZeRO-Offload path (§3.4). Stage 1 reduces only at the GA boundary, so its grads
  // accumulate on the GPU (no host accumulation) and only the boundary's fp32 slices go D2H.
  const Stage12Setup setup = begin_stage12(ctx, false);
  const bool overlap = setup.overlap;
  IpgBucket bucket(ctx, setup.reduce, setup.part, setup.offload_grads);
  for (int step = 0; step < in.steps; ++step) {
    ctx.begin_step(step);
    AccumulatedGrads grads(ctx);
    for (int micro = 0; micro < ctx.grad_accum(); ++micro) {
      const bool boundary = micro == ctx.grad_accum() - 1;
      PassHooks hooks;
      hooks.on_grad = [&](std::size_t p) {
        // setup_buckets runs at the first hook of every backward, for stage 1 too (§3.4 "Backward hooks").
        bucket.ensure_allocated();
        grads.on_grad(p);
        if (overlap && boundary) {
          // overlap_comm: the boundary backward reduces in its hooks like stage 2 (§3.4 "Stage 1 gradient lifetime").
          bucket.add(p, *grads.release(p), micro);
        }
      };
      hooks.split_per_submodule();
      ctx.begin_micro_step(step); // engine.forward: tput_timer.start()
      auto acts = ctx.forward({});
      ctx.backward(acts, hooks);
      if (!boundary) {
        ctx.end_micro_step(step); // engine.step() off the boundary, then the loop reads the loss
        continue;
      }
      if (!overlap) {
        // GA boundary, reduce_gradients(): walk all params in model order, copy each full grad into the bucket
        // (freeing it), reduce full buckets; the 2Ψ of full grads drains progressively (§3.4, §7 #14). The walk is a
        // Python loop on the host that calls, per param, the function a stage-2 gradient hook runs
        // (reduce_ready_partitions_and_remove_grads; stage_1_and_2.py l.636-641 @v0.9.0, l.874-879 @v0.19.6): the
        // same host time per param as a gradient hook (HostSpec::param_hook), before that param's bucket work.
        for (std::size_t p = 0; p < ctx.params().size(); ++p)
          if (auto g = grads.release(p)) {
            ctx.host_work(Phase::GRAD_REDUCE, "reduce_gradients " + ctx.params()[p].name, ctx.in().host.param_hook);
            ctx.host_issue(setup.reduce);
            bucket.add(p, *g, micro);
          }
      }
      bucket.epilogue(); // buckets freed at the GA boundary in stage 1 (§7 #10)
      grads.free_all(ctx.compute(), Phase::GRAD_REDUCE); // param.grad cleared at the end of the epilogue
    }
    emit_stage12_optimizer(ctx, setup, bucket, step);
    ctx.end_micro_step(step); // engine.step() after the optimizer step, then the loop reads the loss
    ctx.end_step(step);
  }
  return ctx.build();
}

} // namespace zerosim::zero
