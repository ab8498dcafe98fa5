#include "sim/zero/offload_cpu.hpp"

#include "sim/error.hpp"
#include "sim/zero/ipg_bucket.hpp"

#include <algorithm>
#include <string>

namespace zerosim::zero {

using program::CollectiveKind;
using program::CopyDir;
using program::Device;
using program::MemTag;
using program::Phase;

OffloadStreams add_offload_streams(GeneratorContext& ctx) {
  if (!(ctx.in().cpu_adam_seconds_per_param > 0))
    throw Error("offload_optimizer=cpu: cpu_adam_seconds_per_param must be > 0 (CPU Adam time per parameter), got " +
                std::to_string(ctx.in().cpu_adam_seconds_per_param));
  return add_param_offload_streams(ctx);
}

OffloadStreams add_param_offload_streams(GeneratorContext& ctx) {
  OffloadStreams s;
  s.copy = ctx.add_stream("copy", program::StreamKind::COPY);
  s.cpu = ctx.add_stream("cpu", program::StreamKind::CPU);
  return s;
}

void emit_stage12_offload_init(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s,
                               bool cpu_accumulation) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  (void)emit_lp_flatten(ctx, part);
  // temp_grad_buffer_for_gpu_offload: largest param numel x lp on the GPU, and a pinned CPU twin.
  Elements largest = 0;
  for (const auto& pr : ctx.params())
    largest = std::max(largest, pr.numel);
  b.alloc_persistent(c, Phase::INIT, "temp grad buffer for gpu offload", MemTag::FLATTEN_TEMP, ctx.lp(largest));
  // Every host buffer here is pin_memory'd (offload_optimizer.pin_memory, default true; stage_1_and_2.py __init__,
  // initialize_optimizer_states, async_accumulate_grad_in_cpu_via_gpu); only the Adam state is pageable.
  constexpr bool kPinned = true;
  b.alloc_persistent(s.cpu, Phase::INIT, "temp grad buffer for gpu offload (host)", MemTag::FLATTEN_TEMP,
                     ctx.lp(largest), Device::HOST, kPinned);
  // single_partition_of_fp32_groups on pinned CPU, its fp32 grad, and the pinned lp staging partition.
  b.alloc_persistent(s.cpu, Phase::INIT, "fp32 master partition", MemTag::FP32_MASTER, GeneratorContext::fp32(p),
                     Device::HOST, kPinned);
  b.alloc_persistent(s.cpu, Phase::INIT, "fp32 grad partition", MemTag::FP32_GRADS, GeneratorContext::fp32(p),
                     Device::HOST, kPinned);
  b.alloc_persistent(s.cpu, Phase::INIT, "lp partition staging", MemTag::LP_PARAMS, ctx.lp(p), Device::HOST, kPinned);
  if (cpu_accumulation)
    b.alloc_persistent(s.cpu, Phase::INIT, "lp grad accumulation", MemTag::LP_GRADS, ctx.lp(p), Device::HOST, kPinned);
}

void emit_stage12_offload_step(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s, int step) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  // The fp32 grads were copied D2H on the reduction stream (IpgBucket::offload_copy_back, reduce_ipg_grads); the
  // backward epilogue made compute wait for that stream and step() reads the overflow flag on the host
  // (step_sync), so CPU Adam starts once compute, hence every grad copy, is done.
  b.join(s.cpu, c);
  // DeepSpeedCPUAdam creates exp_avg / exp_avg_sq (torch.zeros_like on the CPU: pageable) at its first step (lazy
  // since v0.13.2).
  if (step == 0)
    b.alloc_persistent(s.cpu, Phase::OPTIMIZER, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0,
                       Device::HOST);
  b.cpu(s.cpu, Phase::OPTIMIZER, "cpu adam", Seconds(ctx.in().cpu_adam_seconds_per_param * static_cast<double>(p)));
  b.join(s.copy, s.cpu);
  // Non-blocking H2D copy of the updated lp partition into the flat lp buffer (2 B per element).
  b.copy(s.copy, Phase::OFFLOAD, "h2d lp params", CopyDir::H2D, ctx.lp(p));
  b.join(c, s.copy);
  if (ctx.n() > 1)
    b.collective(c, Phase::PARAM_GATHER, "allgather lp params", CollectiveKind::ALL_GATHER, ctx.lp(part.padded_total),
                 ctx.dp_group());
}

} // namespace zerosim::zero
