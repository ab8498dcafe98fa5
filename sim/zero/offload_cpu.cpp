#include "sim/zero/offload_cpu.hpp"

#include "sim/error.hpp"
#include "sim/zero/cpu_adam.hpp"
#include "sim/zero/ipg_bucket.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace zerosim::zero {

using program::BufferId;
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

Stage12Pinning stage12_pinning(const scenario::ZeroConfig& cfg) {
  const bool pin = cfg.pin_optimizer_effective();
  const bool old = cfg.deepspeed_before(0, 10, 1);
  return {old || pin, old ? false : pin || (!cfg.deepspeed_before(0, 14, 1) && cfg.deepspeed_before(0, 18, 3)), pin};
}

namespace {

/// One streaming pass of the host step over `elems` partition elements: its DRAM bytes by where they live, priced
/// at cpu_seconds_per_byte with the pinned ones weighted by GeneratorInput::pinned_byte_weight.
class HostPass {
 public:
  HostPass(const GeneratorContext& ctx, Elements elems) : ctx_(ctx), elems_(static_cast<double>(elems)) {}
  /// Adds `per_element` bytes per element, page-locked when `pinned`.
  HostPass& bytes(bool pinned, double per_element) {
    (pinned ? pinned_ : pageable_) += per_element * elems_;
    return *this;
  }
  /// Adds `per_element` bytes per element of newly allocated host memory, first-touched by the pass (page faults at
  /// GeneratorInput::page_fault_seconds_per_byte, on top of the pass's own bytes).
  HostPass& fresh(double per_element) {
    fresh_ += per_element * elems_;
    return *this;
  }
  [[nodiscard]] Seconds seconds() const {
    return Seconds(std::max(node_seconds(), thread_seconds()) + ctx_.in().page_fault_seconds_per_byte * fresh_);
  }
  /// seconds() of a CPU Adam pass of the optimizer step: also adds its bounded seconds to the bound it took
  /// (GeneratorNotes).
  [[nodiscard]] Seconds adam_seconds() const {
    if (GeneratorNotes* notes = ctx_.in().notes) {
      notes->cpu_adam_priced = true;
      const double node = node_seconds();
      const double thread = thread_seconds();
      (thread > node ? notes->cpu_adam_thread_bound_seconds : notes->cpu_adam_node_bound_seconds) +=
          std::max(node, thread);
    }
    return seconds();
  }

 private:
  // Two bounds hold at once and the pass ends at the later one (cpu_adam.hpp "Threads per rank"): the busiest
  // NUMA node's DRAM (pinned bytes weighted) and the rank's own threads (every byte once).
  [[nodiscard]] double node_seconds() const {
    return cpu_seconds_per_byte(ctx_.in().cpu_adam_seconds_per_param) *
           (ctx_.in().pinned_byte_weight * pinned_ + pageable_);
  }
  [[nodiscard]] double thread_seconds() const {
    return cpu_seconds_per_byte(ctx_.in().thread_seconds_per_param) * (pinned_ + pageable_);
  }

  const GeneratorContext& ctx_;
  double elems_;
  double pinned_ = 0;
  double pageable_ = 0;
  double fresh_ = 0;
};

} // namespace

bool emit_cpu_adam_tile_buffers(GeneratorContext& ctx, program::StreamId cpu) {
  if (!ctx.cfg().deepspeed_before(0, 14, 3) || ctx.cfg().offload_optimizer == scenario::OffloadDevice::NONE ||
      ctx.wl().training.optimizer_impl != scenario::OptimizerImpl::FUSED)
    return false;
  constexpr double kTileBytes = 128.0 * 1024 * 1024 * 4.0; // TILE x sizeof(float)
  ctx.b().alloc_persistent(cpu, Phase::INIT, "cpu adam tile buffers (pinned)", MemTag::FLATTEN_TEMP,
                           Bytes(2.0 * kTileBytes), Device::HOST, true);
  return true;
}

void emit_stage12_offload_init(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s,
                               bool cpu_accumulation) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  // engine.py _configure_basic_optimizer builds DeepSpeedCPUAdam before the ZeRO optimizer.
  (void)emit_cpu_adam_tile_buffers(ctx, s.cpu);
  (void)emit_lp_flatten(ctx, part);
  // single_partition_of_fp32_groups comes from this rank's slice of the flat lp buffer, self.device being 'cpu' with
  // cpu_offload (stage_1_and_2.py l.223 @v0.18.5). Until v0.18.2 `.to(self.device).clone().float()` moves the slice
  // to the host first and clones it there (l.438-439 @v0.18.2). From v0.18.3 (PR #7700)
  // `.detach().clone().to(device=self.device, dtype=master dtype)` clones it on the GPU first (l.449-450 @v0.18.3,
  // l.448-449 @v0.18.5, l.489-490 @v0.19.5): an lp transient of the padded partition, dropped with the statement,
  // whose block the caching allocator keeps. Either way the blocking copy moves lp bytes: torch converts the dtype
  // of a blocking device-to-host copy on the CPU (aten/src/ATen/native/cuda/Copy.cu copy_kernel_cuda).
  std::optional<BufferId> clone;
  if (!ctx.cfg().deepspeed_before(0, 18, 3)) {
    clone = b.alloc(c, Phase::INIT, "fp32 master partition (lp clone)", MemTag::FLATTEN_TEMP, ctx.lp(p));
    ctx.mem_kernel(c, Phase::INIT, "fp32 master partition (lp clone)", ctx.lp(p) * 2.0);
  }
  ctx.host_copy(c, Phase::INIT, "fp32 master partition: d2h lp", CopyDir::D2H, ctx.lp(p), true, true);
  if (clone)
    b.free(c, Phase::INIT, *clone);
  // temp_grad_buffer_for_gpu_offload: largest param numel x lp on the GPU, and a pinned CPU twin.
  Elements largest = 0;
  for (const auto& pr : ctx.params())
    largest = std::max(largest, pr.numel);
  b.alloc_persistent(c, Phase::INIT, "temp grad buffer for gpu offload", MemTag::FLATTEN_TEMP, ctx.lp(largest));
  // Which host buffers are page-locked follows the release (stage12_pinning; notes of session 10); pin_memory
  // defaults to false before v0.19.5. The Adam state is never pinned. Copies from or to pageable buffers go through
  // the driver's staging buffer and block the host (GeneratorContext::host_copy); the host step weighs the pinned
  // bytes (they sit on one NUMA node, cpu_adam.hpp pinned_byte_weight; emit_stage12_offload_step).
  const Stage12Pinning pinned = stage12_pinning(ctx.cfg());
  b.alloc_persistent(s.cpu, Phase::INIT, "temp grad buffer for gpu offload (host)", MemTag::FLATTEN_TEMP,
                     ctx.lp(largest), Device::HOST, pinned.buffers);
  // single_partition_of_fp32_groups on the CPU, its fp32 grad, and the lp staging partition.
  b.alloc_persistent(s.cpu, Phase::INIT, "fp32 master partition", MemTag::FP32_MASTER, GeneratorContext::fp32(p),
                     Device::HOST, pinned.master);
  b.alloc_persistent(s.cpu, Phase::INIT, "fp32 grad partition", MemTag::FP32_GRADS, GeneratorContext::fp32(p),
                     Device::HOST, pinned.buffers);
  // That grad is initialize_optimizer_states' zero grad (kept with cpu_offload). Before v0.13.2 (adam_state_at_init)
  // the function then runs optimizer.step(): DeepSpeedCPUAdam creates m, v on the host (pageable) before training;
  // the constructor returns only when it is done, so step 0 starts after it.
  if (adam_state_at_init(ctx.cfg())) {
    b.alloc_persistent(s.cpu, Phase::INIT, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0,
                       Device::HOST);
    emit_host_adam_init_step(ctx, s.cpu, p, "", {.fp32_grads = pinned.buffers, .fp32_master = pinned.master});
    b.join(c, s.cpu);
  }
  // param_buffer_of_bit16_for_cpu_offload_groups, the host cast's target, exists from v0.17.0 (PR #7309); earlier
  // releases send the fp32 partition up (v0.14.1-v0.16) or cast into a per-step temporary (emit_stage12_offload_step).
  if (!ctx.cfg().deepspeed_before(0, 17, 0))
    b.alloc_persistent(s.cpu, Phase::INIT, "lp partition staging", MemTag::LP_PARAMS, ctx.lp(p), Device::HOST,
                       pinned.lp_staging);
  if (cpu_accumulation)
    b.alloc_persistent(s.cpu, Phase::INIT, "lp grad accumulation", MemTag::LP_GRADS, ctx.lp(p), Device::HOST,
                       pinned.buffers);
}

void emit_host_overflow_scan(GeneratorContext& ctx, program::StreamId cpu, Elements n, double element_bytes,
                             bool pinned, const std::string& label) {
  ctx.b().cpu(cpu, Phase::OPTIMIZER, label,
              HostPass(ctx, n).bytes(pinned, 2.0 * element_bytes).bytes(false, 2.0 * 2.0).fresh(2.0).seconds());
}

void emit_host_unscale_and_adam(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix,
                                const HostPlacement& where) {
  ctx.b().cpu(cpu, Phase::OPTIMIZER, "unscale and clip fp32 grads (cpu)" + suffix,
              HostPass(ctx, n).bytes(where.fp32_grads, 8.0).seconds());
  const auto impl = ctx.wl().training.optimizer_impl;
  if (impl == scenario::OptimizerImpl::FUSED) {
    // kCpuAdamStepBytesPerParam = 28: params read + written (8 B), grads read (4 B), m and v read + written (16 B).
    static_assert(kCpuAdamStepBytesPerParam == 8.0 + 4.0 + 16.0);
    ctx.b().cpu(cpu, Phase::OPTIMIZER, "cpu adam" + suffix,
                HostPass(ctx, n)
                    .bytes(where.fp32_master, 8.0)
                    .bytes(where.fp32_grads, 4.0)
                    .bytes(where.adam_states, 16.0)
                    .adam_seconds());
    return;
  }
  // torch.optim on the CPU tensors (cpu_adam.hpp TorchCpuAdamBytes): its temporaries are new pageable tensors of
  // 4 B per element each, allocated and freed in the step (torch's CPU allocator keeps nothing), so they fault in.
  auto& b = ctx.b();
  const bool single = impl == scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  const TorchCpuAdamBytes tb = torch_cpu_adam_bytes(impl);
  const std::string name = single ? "torch single-tensor" : "torch foreach";
  const Bytes e32 = GeneratorContext::fp32(n);
  const int new_tensors = single ? 2 : 1; // T1 and T2, or foreach's one; 4 B per element each
  if (tb.fresh != 4.0 * new_tensors)
    throw Error("emit_host_unscale_and_adam: torch temporaries and their fresh bytes disagree");
  std::vector<BufferId> temps;
  for (int k = 0; k < new_tensors; ++k)
    temps.push_back(b.alloc(cpu, Phase::OPTIMIZER, "adam temp " + std::to_string(k + 1) + " (" + name + ")" + suffix,
                            MemTag::FLATTEN_TEMP, e32, Device::HOST));
  const auto pass = [&](double params, double grads, double states, double temps_bytes, double fresh) {
    return HostPass(ctx, n)
        .bytes(where.fp32_master, params)
        .bytes(where.fp32_grads, grads)
        .bytes(where.adam_states, states)
        .bytes(false, temps_bytes)
        .fresh(fresh)
        .adam_seconds();
  };
  if (single) {
    // Up to T2 = T1 / c, with T1 and T2 both live (so that ranks stepping together hold them at once): weight decay
    // (p 8), m and v updates (g 8, m, v 32), T1 = v.sqrt() (v 4, T1 4), T2 = T1 / c (T1 4, T2 4), both faulted in.
    // Then T1 is dropped, and T2.add_ (8) and p.addcdiv_(m, T2) (p 8, m 4, T2 4) finish the step.
    static_assert(8.0 + 8.0 + 36.0 + 12.0 + 8.0 + 4.0 + 12.0 == 88.0);
    b.cpu(cpu, Phase::OPTIMIZER, "cpu adam (" + name + ")" + suffix, pass(8.0, 8.0, 36.0, 12.0, tb.fresh));
    b.free(cpu, Phase::OPTIMIZER, temps.front());
    b.cpu(cpu, Phase::OPTIMIZER, "cpu adam (" + name + ", update)" + suffix, pass(8.0, 0.0, 4.0, 12.0, 0.0));
  } else {
    b.cpu(cpu, Phase::OPTIMIZER, "cpu adam (" + name + ")" + suffix,
          pass(tb.params, tb.grads, tb.states, tb.temps, tb.fresh));
  }
  b.free(cpu, Phase::OPTIMIZER, temps.back());
}

void emit_host_adam_state_init(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix) {
  ctx.b().cpu(cpu, Phase::OPTIMIZER, "cpu adam state init" + suffix,
              HostPass(ctx, n).bytes(false, 8.0).fresh(8.0).seconds());
}

void emit_host_adam_init_step(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix,
                              const HostPlacement& where) {
  ctx.b().cpu(cpu, Phase::INIT, "cpu adam at init" + suffix,
              HostPass(ctx, n)
                  .bytes(false, 8.0)
                  .fresh(8.0)
                  .bytes(where.fp32_master, 8.0)
                  .bytes(where.fp32_grads, 4.0)
                  .bytes(where.adam_states, 16.0)
                  .seconds());
}

void emit_host_copy_mv_to_swap_buffers(GeneratorContext& ctx, program::StreamId cpu, Elements n, Phase phase,
                                       const std::string& suffix) {
  ctx.b().cpu(cpu, phase, "copy adam m,v into pinned swap buffers" + suffix,
              HostPass(ctx, n).bytes(false, 8.0).bytes(true, 8.0).seconds());
}

void emit_host_copy_master_to_swap_buffers(GeneratorContext& ctx, program::StreamId cpu, Elements n, double src_bytes,
                                           bool src_pinned) {
  ctx.b().cpu(cpu, Phase::INIT, "copy fp32 master into pinned swap buffers",
              HostPass(ctx, n).bytes(src_pinned, src_bytes).bytes(true, 4.0).seconds());
}

void emit_host_cast(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& label,
                    const HostPlacement& where) {
  ctx.b().cpu(cpu, Phase::OPTIMIZER, label,
              HostPass(ctx, n)
                  .bytes(where.fp32_master, 4.0)
                  .bytes(where.lp_target, ctx.wl().bytes_per_lp) // fp32: an fp32 -> fp32 copy_
                  .fresh(where.lp_target_fresh ? ctx.wl().bytes_per_lp : 0.0)
                  .seconds());
}

namespace {

/// DeepSpeedCPUAdam's tile of adam_update_copy: TILE = 128 x 1024 x 1024 elements (csrc/includes/cpu_adam.h
/// @v0.3.15).
constexpr Elements kAdamCopyTile = 128LL * 1024 * 1024;

/// Stage 1/2 offload step with fp16 and DeepSpeedCPUAdam before v0.9.0: step() passes the lp partition as
/// fp16_param_groups (stage2.py l.1441-1448 @v0.3.15, stage_1_and_2.py _optimizer_step l.1736-1738 @v0.8.0; PR #3097
/// disabled it in v0.9.0), so adam_update_copy (csrc/adam/cpu_adam.cpp Step @v0.3.15) runs Adam tile by tile, writes
/// each tile's fp32 params into one of two pinned TILE buffers (4 B per element) and launches param_update_kernel,
/// which reads that buffer over PCIe into the fp16 params (4 B per element H2D; csrc/adam/custom_cuda_kernel.cu).
/// Before it overwrites a buffer the host waits for the copy issued from it two tiles before (cudaStreamSynchronize
/// from the third tile), and SynchronizeStreams waits for both at the end. There is no host cast and no lp staging.
/// The two pinned buffers are allocated at init (emit_cpu_adam_tile_buffers).
void emit_stage12_adam_update_copy(GeneratorContext& ctx, Elements p, const OffloadStreams& s,
                                   const Stage12Pinning& pinned) {
  auto& b = ctx.b();
  b.cpu(s.cpu, Phase::OPTIMIZER, "unscale and clip fp32 grads (cpu)",
        HostPass(ctx, p).bytes(pinned.buffers, 8.0).seconds());
  std::vector<program::EventId> copied;
  for (Elements t = 0, k = 0; t < p; t += kAdamCopyTile, ++k) {
    const Elements n = std::min(kAdamCopyTile, p - t);
    if (k >= 2)
      b.wait(s.cpu, copied[static_cast<std::size_t>(k - 2)]);
    // kCpuAdamStepBytesPerParam (params 8, grads 4, m and v 16) plus the fp32 param written to the pinned buffer.
    b.cpu(s.cpu, Phase::OPTIMIZER, "cpu adam + copy tile " + std::to_string(k),
          HostPass(ctx, n)
              .bytes(pinned.master, 8.0)
              .bytes(pinned.buffers, 4.0)
              .bytes(false, 16.0)
              .bytes(true, 4.0)
              .adam_seconds());
    b.join(s.copy, s.cpu);
    b.copy(s.copy, Phase::OFFLOAD, "h2d fp32 params tile " + std::to_string(k), CopyDir::H2D, GeneratorContext::fp32(n),
           false);
    copied.push_back(b.record(s.copy));
  }
  b.join(s.cpu, s.copy);
  b.join(ctx.compute(), s.cpu);
}

} // namespace

void emit_stage12_offload_step(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s, int step) {
  auto& b = ctx.b();
  const auto c = ctx.compute();
  const Elements p = part.partition;
  // The fp32 grads were copied D2H on the reduction stream (IpgBucket::offload_copy_back, reduce_ipg_grads); the
  // backward epilogue made compute wait for that stream and step() reads the overflow flag on the host
  // (step_sync), so CPU Adam starts once compute, hence every grad copy, is done.
  b.join(s.cpu, c);
  // DeepSpeedCPUAdam creates exp_avg / exp_avg_sq (torch.zeros_like on the CPU: pageable) at its first step (lazy
  // since v0.13.2; before, at init: emit_stage12_offload_init): the first one not skipped on an fp16 overflow.
  if (step == ctx.first_applied_step() && !adam_state_at_init(ctx.cfg())) {
    b.alloc_persistent(s.cpu, Phase::OPTIMIZER, "adam m,v", MemTag::OPTIMIZER_STATES, GeneratorContext::fp32(p) * 2.0,
                       Device::HOST);
    emit_host_adam_state_init(ctx, s.cpu, p, "");
  }
  // unscale_and_clip_grads: `grad.mul_(1. / combined_scale)` on the pinned fp32 grad partition, whatever the scale
  // (v0.9.0 to v0.19.5), then CPU Adam.
  const auto& cfg = ctx.cfg();
  const Stage12Pinning pinned = stage12_pinning(cfg);
  const bool adam_update_copy = cfg.deepspeed_before(0, 9, 0) &&
                                ctx.wl().training.precision == scenario::Precision::FP16 &&
                                ctx.wl().training.optimizer_impl == scenario::OptimizerImpl::FUSED;
  if (adam_update_copy)
    emit_stage12_adam_update_copy(ctx, p, s, pinned);
  else
    emit_host_unscale_and_adam(ctx, s.cpu, p, "", {.fp32_grads = pinned.buffers, .fp32_master = pinned.master});
  if (adam_update_copy) {
    // The lp params are on the GPU already.
  } else if (!cfg.deepspeed_before(0, 17, 0)) {
    // PR #7309 (v0.17.0): the fp32 partition is cast on the host into the pinned lp buffer (4 B read + 2 B written),
    // which goes H2D non_blocking into the lp partition (2 B per element, §7 item 24).
    emit_host_cast(ctx, s.cpu, p, "cast fp32 -> lp partition (cpu)",
                   {.fp32_master = pinned.master, .lp_target = pinned.lp_staging});
    b.join(s.copy, s.cpu);
    ctx.host_copy(s.copy, Phase::OFFLOAD, "h2d lp params", CopyDir::H2D, ctx.lp(p), !pinned.lp_staging);
    b.join(c, s.copy);
  } else if (!cfg.deepspeed_before(0, 14, 1)) {
    // PR #5301 (v0.14.1) to v0.16: `bit16.copy_(fp32_partition.to(device))`: the pinned fp32 partition goes H2D
    // (4 B per element, blocking, on the current stream) into a GPU temporary that is cast into the lp partition;
    // PR #7309 names the transient ("about 3x that of params_FP16").
    b.join(c, s.cpu);
    BufferId tmp = b.alloc(c, Phase::OPTIMIZER, "fp32 partition on the gpu (h2d)", MemTag::FLATTEN_TEMP,
                           GeneratorContext::fp32(p));
    ctx.host_copy(c, Phase::OFFLOAD, "h2d fp32 params", CopyDir::H2D, GeneratorContext::fp32(p), !pinned.master, true);
    ctx.mem_kernel(c, Phase::OPTIMIZER, "cast fp32 -> lp partition", GeneratorContext::fp32(p) + ctx.lp(p));
    b.free(c, Phase::OPTIMIZER, tmp);
    b.join(s.copy, c);
  } else {
    // Before v0.14.1: `bit16.copy_(fp32_partition)`, blocking, across devices and dtypes: PyTorch casts on the host
    // into a pageable lp temporary (copy_kernel_cuda converts on the CPU for blocking copies, to spare GPU memory)
    // and copies that H2D (2 B per element) through the driver's staging buffer (what PR #5301 sped up 4-6x).
    BufferId tmp =
        b.alloc(s.cpu, Phase::OPTIMIZER, "lp partition (pageable cast)", MemTag::FLATTEN_TEMP, ctx.lp(p), Device::HOST);
    emit_host_cast(ctx, s.cpu, p, "cast fp32 -> lp partition (cpu)",
                   {.fp32_master = pinned.master, .lp_target_fresh = true});
    b.join(s.copy, s.cpu);
    ctx.host_copy(s.copy, Phase::OFFLOAD, "h2d lp params", CopyDir::H2D, ctx.lp(p), true, true);
    b.join(s.cpu, s.copy);
    b.free(s.cpu, Phase::OPTIMIZER, tmp);
    b.join(c, s.copy);
  }
  if (ctx.n() > 1)
    b.collective(c, Phase::PARAM_GATHER, "allgather lp params", CollectiveKind::ALL_GATHER, ctx.lp(part.padded_total),
                 ctx.dp_group());
}

} // namespace zerosim::zero
