// ZeRO stage 0: plain data parallelism with DeepSpeed's FP16_Optimizer (reference/zero_semantics.md §3.3;
// deepspeed/runtime/fp16/fused_optimizer.py, engine.py allreduce_gradients / buffered_allreduce_fallback).
#pragma once

#include "sim/zero/zero_program.hpp"

namespace zerosim::zero {

/// DeepSpeed's stage-0 gradient all-reduce bucket, MEMORY_OPT_ALLREDUCE_SIZE (engine.py), in elements.
inline constexpr Elements kMemoryOptAllreduceSize = 500'000'000;

/// Emits the stage-0 program: persistent lp params 2Ψ, fp32 master 4Ψ and Adam m/v 8Ψ from init (dummy step);
/// lp grads 2Ψ accumulate in param.grad; after the GA-boundary backward the grads are all-reduced on the compute
/// stream in kMemoryOptAllreduceSize-element buckets (flatten temp -> all_reduce -> copy back); the step builds a
/// per-param fp32 grad list (4Ψ) and a flat fp32 grad (4Ψ): transient ≈ 24Ψ, 18Ψ during Adam, 14Ψ after (§7 #16).
[[nodiscard]] program::StepProgram generate_stage0(const GeneratorInput& in);

} // namespace zerosim::zero
