// ZeRO stage 1 (P_os): DeepSpeedZeroOptimizer with partition_grads = False (reference/zero_semantics.md §3.4;
// deepspeed/runtime/zero/stage_1_and_2.py).
#pragma once

#include "sim/zero/zero_program.hpp"

namespace zerosim::zero {

/// Emits the stage-1 program: full lp grads (2Ψ) accumulate in param.grad over all micro-steps; the IPG bucket is
/// allocated at the first backward hook and freed at the GA boundary; at the boundary the grads are walked in
/// model order, copied into the bucket (which frees each full grad) and all-reduced chunk by chunk, this rank's
/// slice landing in grads_in_partition (≈2Ψ/N). With overlap_comm the boundary backward reduces in its hooks
/// instead. Then the shared stage 1/2 optimizer step and post-step all-gather (see emit_stage12_step).
[[nodiscard]] program::StepProgram generate_stage1(const GeneratorInput& in);

/// Emits DeepSpeed's BF16_Optimizer, which runs instead of ZeRO stage 1 (bf16 + zero.grad_accum_dtype fp32 + no
/// offload) and, before DeepSpeed 0.18.5, instead of FP16_Optimizer at stage 0 with fp32 accumulation, the default
/// for bf16 before 0.17.6 (scenario::uses_bf16_optimizer). Memory: bf16 params 2Ψ + a full fp32 gradient buffer 4Ψ
/// on every rank + fp32 master 4Ψ/N + Adam 8Ψ/N (it partitions them even without ZeRO), plus lp grads 2Ψ from the
/// first backward to the end of the step.
[[nodiscard]] program::StepProgram generate_bf16_optimizer(const GeneratorInput& in);

} // namespace zerosim::zero
