#include "sim/zero/offload_nvme.hpp"

#include <algorithm>

namespace zerosim::zero {

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
  sw.optimizer = optimizer;
  sw.params = params;
  return sw;
}

void emit_nvme_optimizer_init(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements partition,
                              Elements largest_sub_group) {
  auto& b = ctx.b();
  // SwapBufferManager(num_elems = largest sub-group, count = buffer_count, fp32), pinned.
  b.alloc_persistent(cpu, Phase::INIT, "optimizer swap buffers (pinned)", MemTag::FP32_MASTER,
                     GeneratorContext::fp32(largest_sub_group) *
                         static_cast<double>(ctx.cfg().optimizer_swap_buffer_count),
                     Device::HOST, true);
  b.join(sw.nvme, cpu);
  b.copy(sw.nvme, Phase::INIT, "swap out fp32 master", CopyDir::NVME_WRITE, GeneratorContext::fp32(partition));
}

void emit_nvme_param_init(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements on_nvme, Elements in_host) {
  auto& b = ctx.b();
  b.alloc_persistent(cpu, Phase::INIT, "param swap buffers (pinned)", MemTag::LP_PARAMS,
                     ctx.lp(ctx.cfg().param_swap_buffer_size) * static_cast<double>(ctx.cfg().param_swap_buffer_count),
                     Device::HOST, true);
  // partition_parameters.py l.1800-1813: a partition under the swap minimum is a CPU tensor, pinned iff pin_memory.
  if (in_host > 0)
    b.alloc_persistent(cpu, Phase::INIT, "lp partitions under the NVMe swap minimum (host)", MemTag::LP_PARAMS,
                       ctx.lp(in_host), Device::HOST, ctx.cfg().pin_param_effective());
  b.join(sw.nvme, cpu);
  if (on_nvme > 0)
    b.copy(sw.nvme, Phase::INIT, "swap out lp partitions", CopyDir::NVME_WRITE, ctx.lp(on_nvme));
}

void emit_nvme_swap_in(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements elements, int step,
                       const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.nvme, cpu);
  // fp32 master + fp32 grads; Adam m, v exist on NVMe from the first step's swap-out on (created lazily at step 0,
  // §7 item 17).
  const double bytes_per_elem = step == 0 ? 8.0 : 16.0;
  b.copy(sw.nvme, Phase::OFFLOAD, "swap in optimizer " + label, CopyDir::NVME_READ,
         GeneratorContext::fp32(elements) * (bytes_per_elem / 4.0));
  b.join(cpu, sw.nvme);
}

void emit_nvme_grad_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, StreamId after, Elements elements,
                             const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.nvme, after);
  b.copy(sw.nvme, Phase::OFFLOAD, "swap out fp32 grads " + label, CopyDir::NVME_WRITE,
         GeneratorContext::fp32(elements));
}

void emit_nvme_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, StreamId cpu, Elements elements, Elements lp_on_nvme,
                        const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.nvme, cpu);
  if (sw.optimizer)
    b.copy(sw.nvme, Phase::OFFLOAD, "swap out optimizer " + label, CopyDir::NVME_WRITE,
           GeneratorContext::fp32(elements) * 3.0);
  if (sw.params && lp_on_nvme > 0)
    b.copy(sw.nvme, Phase::OFFLOAD, "swap out lp params " + label, CopyDir::NVME_WRITE, ctx.lp(lp_on_nvme));
}

void emit_nvme_param_read(GeneratorContext& ctx, const NvmeSwap& sw, StreamId after, Bytes bytes,
                          const std::string& label) {
  auto& b = ctx.b();
  b.join(sw.nvme, after);
  b.copy(sw.nvme, Phase::OFFLOAD, "swap in params " + label, CopyDir::NVME_READ, bytes);
}

} // namespace zerosim::zero
