// ZeRO stage 2 (P_os+g): DeepSpeedZeroOptimizer with partition_grads = True (reference/zero_semantics.md §3.4;
// deepspeed/runtime/zero/stage_1_and_2.py).
#pragma once

#include "sim/zero/generator_common.hpp"
#include "sim/zero/ipg_bucket.hpp"
#include "sim/zero/offload_cpu.hpp"
#include "sim/zero/zero_program.hpp"

#include <optional>

namespace zerosim::zero {

/// Emits the stage-2 program: every micro-step's backward hooks copy grads into the IPG bucket(s) and all-reduce
/// each flushed chunk (on the "comm" stream with overlap_comm, else on compute); out-of-partition grads are freed
/// after their bucket; grads_in_partition (≈2Ψ/N) is allocated at the first copy; the buckets are freed at the
/// backward epilogue. Step phases 2Ψ+20Ψ/N -> 2Ψ+18Ψ/N -> 2Ψ+16Ψ/N -> 2Ψ+12Ψ/N (§7 #15).
[[nodiscard]] program::StepProgram generate_stage2(const GeneratorInput& in);

/// The stage 1/2 optimizer step without offload (stage_1_and_2.py step, §3.4 "Optimizer step"), on compute:
/// emit_stage12_grad_checks -> flatten this rank's partition grads into an lp temp (2Ψ/N) -> cast to fp32 (4Ψ/N) ->
/// free the lp temp -> drop grads_in_partition -> emit_unscale_and_clip (8 B per element) -> Adam (the first step
/// creates m, v = 8Ψ/N, §7 #17) -> free the fp32 grad -> then one ALL_GATHER of the flat lp params (payload padded
/// Ψ lp), skipped when N == 1 (all_gather_dp_groups, §3.6).
void emit_stage12_step(GeneratorContext& ctx, const FlatPartition& part, IpgBucket& bucket, int step);

/// Whether stage_1_and_2.py step() runs check_overflow for `precision` in the configured DeepSpeed release: always
/// before v0.11.2; v0.11.2-v0.17.0 fp16 only (`if self.dtype == torch.float16`, PR #4512); from v0.17.1 fp16
/// always, bf16 per bf16.check_grad_overflow (default False before v0.19.3, True from v0.19.3; PR #6976, #8035 --
/// engine.py), fp32 never (check_grad_overflow False with fp16 and bf16 disabled).
[[nodiscard]] bool stage12_checks_overflow(const scenario::ZeroConfig& cfg, scenario::Precision precision);

/// Whether stage_1_and_2.py has_overflow all-reduces the overflow flag over the data-parallel group (1 B, MAX):
/// stage 2 always; stage 1 before v0.17.1 and from v0.18.0, not in v0.17.1-v0.17.x (PR #6976 passed
/// partition_gradients=False, PR #7580 all-reduces unconditionally).
[[nodiscard]] bool stage12_overflow_allreduce(const scenario::ZeroConfig& cfg);

/// Whether stage_1_and_2.py unscale_and_clip_grads reads the global norm on the host (`if clip > 1` on a GPU
/// tensor): with gradient_clipping > 0 in v0.13.2 (PR #4974: the norm stays on the device) to v0.14.2 (PR #5632
/// replaced the test by torch.clamp in v0.14.3). `gradient_clipping` is training.gradient_clipping.
[[nodiscard]] bool stage12_clip_waits(const scenario::ZeroConfig& cfg, double gradient_clipping);

/// The stage 1/2 step's checks before the flatten (stage_1_and_2.py step, no offload), on compute, over this rank's
/// in-partition grad slices (averaged_gradients): the overflow check when stage12_checks_overflow (lp + 8 B per
/// element and a host wait per slice before v0.13.3, lp + 26 B from v0.13.3), the flag's all-reduce
/// (stage12_overflow_allreduce, emit_scalar_allreduce) and one `.item()` host wait; then the fp64 L2 norm per slice
/// (emit_grad_norm, lp + 16 B per element) and the all-reduce of its square (4 B): a host wait per slice and one
/// after the all-reduce before v0.13.2, none from v0.13.2 but the clip test's (stage12_clip_waits).
/// `overflow_only`: an overflow-skipped step (training.skipped_steps) stops after the overflow flag's read.
void emit_stage12_grad_checks(GeneratorContext& ctx, const FlatPartition& part, bool overflow_only = false);

/// Stage 1/2 init (§3.4 "Init"): flat lp params (padded Ψ; emit_lp_flatten: a transient lp copy when flattened on
/// the GPU) and the
/// fp32 master partition 4Ψ/N. Adam state is created lazily at the first step.
void emit_stage12_init(GeneratorContext& ctx, const FlatPartition& part);

/// What stages 1 and 2 set up before their first step (§3.4 "Streams", "Init"): the reduction stream ("comm" with
/// overlap_comm, else compute), the flat partition and, with any offload device (nvme too is cpu_offload in
/// stage_1_and_2.py __init__: no NVMe swapper below stage 3), the offload streams.
struct Stage12Setup {
  bool overlap = false; ///< cfg().overlap_comm_effective()
  program::StreamId reduce = 0; ///< where the IPG buckets are all-reduced
  FlatPartition part;
  std::optional<OffloadStreams> offload; ///< set when offload_optimizer != none
  std::optional<OffloadGrads> offload_grads; ///< what IpgBucket needs for the offload path
};

/// Creates the streams and partition of Stage12Setup and emits INIT: emit_stage12_offload_init with offload, else
/// emit_stage12_init. `cpu_accumulation`: grads of non-boundary micro-steps accumulate on the host (stage 2 with
/// GA > 1; false for stage 1, which reduces only at the GA boundary).
[[nodiscard]] Stage12Setup begin_stage12(GeneratorContext& ctx, bool cpu_accumulation);

/// The step's optimizer part: emit_stage12_offload_step with offload, after the overflow flag's all-reduce and read
/// (when stage12_checks_overflow), the norm's all-reduce and read and the clip test's read (stage12_clip_waits) on
/// compute; else emit_stage12_step.
void emit_stage12_optimizer(GeneratorContext& ctx, const Stage12Setup& setup, IpgBucket& bucket, int step);

} // namespace zerosim::zero
