// ZeRO stage 2 (P_os+g): DeepSpeedZeroOptimizer with partition_grads = True (reference/zero_semantics.md §3.4;
// deepspeed/runtime/zero/stage_1_and_2.py).
#pragma once

#include "sim/zero/generator_common.hpp"
#include "sim/zero/ipg_bucket.hpp"
#include "sim/zero/zero_program.hpp"

namespace zerosim::zero {

/// Emits the stage-2 program: every micro-step's backward hooks copy grads into the IPG bucket(s) and all-reduce
/// each flushed chunk (on the "comm" stream with overlap_comm, else on compute); out-of-partition grads are freed
/// after their bucket; grads_in_partition (≈2Ψ/N) is allocated at the first copy; the buckets are freed at the
/// backward epilogue. Step phases 2Ψ+20Ψ/N -> 2Ψ+18Ψ/N -> 2Ψ+16Ψ/N -> 2Ψ+12Ψ/N (§7 #15).
[[nodiscard]] program::StepProgram generate_stage2(const GeneratorInput& in);

/// The stage 1/2 optimizer step without offload (stage_1_and_2.py step, §3.4 "Optimizer step"), on compute:
/// flatten this rank's partition grads into an lp temp (2Ψ/N) -> cast to fp32 (4Ψ/N) -> free the lp temp -> drop
/// grads_in_partition -> Adam (the first step creates m, v = 8Ψ/N, §7 #17) -> free the fp32 grad -> then one
/// ALL_GATHER of the flat lp params (payload padded Ψ lp), skipped when N == 1 (all_gather_dp_groups, §3.6).
void emit_stage12_step(GeneratorContext& ctx, const FlatPartition& part, IpgBucket& bucket, int step);

/// Stage 1/2 init (§3.4 "Init"): flat lp params (padded Ψ, with a transient lp copy while flattening) and the
/// fp32 master partition 4Ψ/N. Adam state is created lazily at the first step.
void emit_stage12_init(GeneratorContext& ctx, const FlatPartition& part);

} // namespace zerosim::zero
