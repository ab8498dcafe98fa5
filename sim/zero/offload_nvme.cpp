#include "sim/zero/offload_nvme.hpp"

#include "sim/zero/offload_cpu.hpp"

#include <algorithm>

namespace zerosim::zero {

using program::BufferId;
using program::CopyDir;
using program::Device;
using program::MemTag;
using program::Phase;
using program::StreamId;

Bytes nvme_min_swappable_bytes(const scenario::ZeroConfig& z) {
  constexpr double kMinAioBytes = 1024.0 * 1024.0; // utils.py MIN_AIO_BYTES
  return Bytes(std::max(kMinAioBytes, z.aio.block_size.value()));
}

bool nvme_swappable(Bytes bytes, const scenario::ZeroConfig& z) {
  return nvme_min_swappable_bytes(z).value() <= bytes.value(); // `min_aio_bytes <= numel * element_size`
}

NvmeSwap add_nvme_swap(GeneratorContext& ctx, bool optimizer, bool params) {
  NvmeSwap sw;
  // DeepSpeed's aio handle runs on its own threads, not a CUDA stream: torch.cuda.synchronize does not wait for it.
  sw.nvme = ctx.add_stream("nvme", program::StreamKind::COPY, false);
  sw.write = sw.nvme;
  sw.optimizer = optimizer;
  sw.params = params;
  // stage3.py _configure_tensor_swapping: PipelinedOptimizerSwapper iff offload_optimizer.pipeline (= pipeline_read
  // or pipeline_write, offload_config.py set_pipeline); it opens a second aio handle for writes.
  sw.pipeline_read = optimizer && ctx.cfg().optimizer_pipeline_read;
  sw.pipeline_write = optimizer && ctx.cfg().optimizer_pipeline_write;
  if (sw.pipelined())
    sw.write = ctx.add_stream("nvme write", program::StreamKind::COPY, false);
  return sw;
}

int optimizer_swap_buffers_needed(const scenario::ZeroConfig& z, std::size_t sub_groups) {
  constexpr int kPerSubGroup = scenario::kAdamSwapBuffersPerSubGroup;
  const bool pipelined = z.optimizer_pipeline_read || z.optimizer_pipeline_write;
  if (!pipelined || sub_groups < 2) // the last (here only) sub-group's swaps are synchronous
    return kPerSubGroup;
  return kPerSubGroup * (1 + (z.optimizer_pipeline_read ? 1 : 0) + (z.optimizer_pipeline_write ? 1 : 0));
}

std::string check_optimizer_swap_buffers(const scenario::ZeroConfig& z, std::size_t sub_groups) {
  if (z.stage != 3 || z.offload_optimizer != scenario::OffloadDevice::NVME ||
      !(z.optimizer_pipeline_read || z.optimizer_pipeline_write))
    return {};
  const int need = optimizer_swap_buffers_needed(z, sub_groups);
  if (z.optimizer_swap_buffer_count >= need)
    return {};
  const std::string which = z.optimizer_pipeline_read && z.optimizer_pipeline_write ? "pipeline_read and pipeline_write"
                            : z.optimizer_pipeline_read                             ? "pipeline_read"
                                                                                    : "pipeline_write";
  return std::to_string(z.optimizer_swap_buffer_count) + " optimizer swap buffers are too few for " + which + " over " +
         std::to_string(sub_groups) +
         " sub-groups: each sub-group in flight holds 4 (fp32 param, m, v, "
         "grad), so the step needs " +
         std::to_string(need) +
         " (DeepSpeed's PipelinedOptimizerSwapper asserts \"ran out of swap buffers\"); set "
         "zero.offload_optimizer_buffer_count (buffer_count in the offload_optimizer map) to at least " +
         std::to_string(need);
}

void emit_nvme_optimizer_init(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, StreamId gpu, Elements partition,
                              Elements largest_sub_group, MasterInitSource src) {
  auto& b = ctx.b();
  // SwapBufferManager(num_elems = largest sub-group, count = buffer_count, fp32), pinned.
  b.alloc_persistent(cpu, Phase::INIT, "optimizer swap buffers (pinned)", MemTag::FP32_MASTER,
                     GeneratorContext::fp32(largest_sub_group) *
                         static_cast<double>(ctx.cfg().optimizer_swap_buffer_count),
                     Device::HOST, true);
  // _swap_out_unpinned_tensors: each batch of buffer_count sub-groups is copied into the swap buffers, written and
  // waited for before the next, so copying all, then writing all, takes as long. One sub-group's pageable lp
  // temporary lives at a time (the copy_ of a GPU source: a D2H of the lp partition, then a cast on the CPU).
  const double lp = ctx.wl().bytes_per_lp;
  switch (src) {
  case MasterInitSource::GPU_LP: {
    const BufferId tmp = b.alloc(cpu, Phase::INIT, "lp partition for the fp32 master (pageable)", MemTag::FLATTEN_TEMP,
                                 ctx.lp(largest_sub_group), Device::HOST);
    b.join(gpu, cpu);
    ctx.host_copy(gpu, Phase::INIT, "d2h lp partition for the fp32 master", CopyDir::D2H, ctx.lp(partition), true,
                  true);
    b.join(cpu, gpu);
    emit_host_copy_master_to_swap_buffers(ctx, cpu, partition, lp, false);
    b.free(cpu, Phase::INIT, tmp);
    break;
  }
  case MasterInitSource::HOST_PINNED_LP:
    emit_host_copy_master_to_swap_buffers(ctx, cpu, partition, lp, true);
    break;
  case MasterInitSource::HOST_FP32:
    emit_host_copy_master_to_swap_buffers(ctx, cpu, partition, 4.0, false);
    break;
  }
  b.join(sw.write, cpu); // initialize_parameters: the (pipelined swapper's write) aio handle
  b.copy(sw.write, Phase::INIT, "swap out fp32 master", CopyDir::NVME_WRITE, GeneratorContext::fp32(partition));
  // _initialize_parameters -> _swap_out_unpinned_tensors waits on the handle after each batch of buffer_count
  // tensors (`assert aio_handle.wait() == swap_tensor_count`, swap_tensor/optimizer_utils.py v0.9.0 to v0.19.6).
  b.join(cpu, sw.write);
}

void emit_nvme_param_init(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements on_nvme, Elements in_host,
                          Elements cpu_buffer, Elements cpu_swappable) {
  auto& b = ctx.b();
  b.alloc_persistent(cpu, Phase::INIT, "param swap buffers (pinned)", MemTag::LP_PARAMS,
                     ctx.lp(ctx.cfg().param_swap_buffer_size) * static_cast<double>(ctx.cfg().param_swap_buffer_count),
                     Device::HOST, true);
  // partition_parameters.py l.1800-1813: a partition under the swap minimum is a CPU tensor, pinned iff pin_memory.
  if (in_host > 0)
    b.alloc_persistent(cpu, Phase::INIT, "lp partitions under the NVMe swap minimum (host)", MemTag::LP_PARAMS,
                       ctx.lp(in_host), Device::HOST, ctx.cfg().pin_param_effective());
  b.join(sw.nvme, cpu);
  if (on_nvme + cpu_swappable > 0)
    b.copy(sw.nvme, Phase::INIT, "swap out lp partitions", CopyDir::NVME_WRITE, ctx.lp(on_nvme + cpu_swappable));
  if (cpu_buffer > 0)
    b.alloc_persistent(cpu, Phase::INIT, "lp partitions within max_in_cpu (pinned host flat buffer)", MemTag::LP_PARAMS,
                       ctx.lp(cpu_buffer), Device::HOST, true);
  if (cpu_swappable > 0) {
    b.join(sw.nvme, cpu);
    b.copy(sw.nvme, Phase::INIT, "swap in lp partitions to the CPU flat buffer", CopyDir::NVME_READ,
           ctx.lp(cpu_swappable));
    b.join(cpu, sw.nvme); // swap_into_buffer waits for its read
  }
}

void emit_nvme_swap_in(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements elements, int step,
                       const std::string& label, bool wait) {
  auto& b = ctx.b();
  b.join(sw.nvme, cpu);
  // fp32 master + fp32 grads; Adam m, v exist on NVMe from the first step's swap-out on (created lazily at the
  // first step not skipped on an fp16 overflow from v0.13.2, §7 item 17), or from init's (before v0.13.2:
  // adam_state_at_init).
  const double bytes_per_elem = step == ctx.first_applied_step() && !adam_state_at_init(ctx.cfg()) ? 8.0 : 16.0;
  b.copy(sw.nvme, Phase::OFFLOAD, "swap in optimizer " + label, CopyDir::NVME_READ,
         GeneratorContext::fp32(elements) * (bytes_per_elem / 4.0));
  if (wait)
    b.join(cpu, sw.nvme);
}

void emit_nvme_grad_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, StreamId after, Elements elements,
                             const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.write, after);
  b.copy(sw.write, Phase::OFFLOAD, "swap out fp32 grads " + label, CopyDir::NVME_WRITE,
         GeneratorContext::fp32(elements));
}

void emit_nvme_optimizer_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements elements,
                                  bool fresh_mv, Phase phase, const std::string& label) {
  auto& b = ctx.b();
  const Bytes master = GeneratorContext::fp32(elements);
  if (!fresh_mv) { // every state tensor already sits in a pinned swap buffer: one write
    b.join(sw.write, cpu);
    b.copy(sw.write, phase, label, CopyDir::NVME_WRITE, master * 3.0);
    return;
  }
  if (sw.pipelined()) {
    emit_host_copy_mv_to_swap_buffers(ctx, cpu, elements, phase, " for " + label);
    b.join(sw.write, cpu);
    b.copy(sw.write, phase, label, CopyDir::NVME_WRITE, master * 3.0);
    return;
  }
  b.join(sw.write, cpu);
  b.copy(sw.write, phase, label + " (fp32 master)", CopyDir::NVME_WRITE, master);
  b.join(cpu, sw.write);
  emit_host_copy_mv_to_swap_buffers(ctx, cpu, elements, phase, " for " + label);
  b.join(sw.write, cpu);
  b.copy(sw.write, phase, label + " (adam m,v)", CopyDir::NVME_WRITE, master * 2.0);
  b.join(cpu, sw.write);
}

void emit_nvme_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements elements, Elements lp_on_nvme,
                        const std::string& label, bool fresh_mv) {
  auto& b = ctx.b();
  // `cpu` is the CPU stream with offload_optimizer, the copy stream with offload_param alone (then `write` is nvme).
  if (sw.optimizer)
    emit_nvme_optimizer_swap_out(ctx, sw, cpu, elements, fresh_mv, Phase::OFFLOAD, "swap out optimizer " + label);
  else
    b.join(sw.write, cpu);
  if (sw.params && lp_on_nvme > 0)
    b.copy(sw.write, Phase::OFFLOAD, "swap out lp params " + label, CopyDir::NVME_WRITE, ctx.lp(lp_on_nvme));
}

void emit_nvme_param_read(GeneratorContext& ctx, const NvmeSwap& sw, StreamId after, Bytes bytes,
                          const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.nvme, after);
  b.copy(sw.nvme, Phase::OFFLOAD, "swap in params " + label, CopyDir::NVME_READ, bytes);
}

} // namespace zerosim::zero
