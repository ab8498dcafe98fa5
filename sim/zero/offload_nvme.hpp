// ZeRO-Infinity NVMe offload for stage 3 (offload_optimizer / offload_param device nvme): optimizer states and lp
// parameter partitions live on the node's NVMe and are swapped through pinned host buffers (reference/
// zero_semantics.md §3.1 offload defaults, §3.5 "Offload in stage 3", §4.2; deepspeed/runtime/swap_tensor/
// partitioned_param_swapper.py, partitioned_optimizer_swapper.py; Rajbhandari et al. 2021, ZeRO-Infinity,
// arXiv 2104.07857). Swaps are Copy{NVME_READ | NVME_WRITE} ops on an "nvme" stream; the engine runs them as SimGrid
// Disk I/O on the node's NVMe, so the node's ranks share its bandwidth.
//
// Simplifications (stated, not hidden):
//  - pipeline_read / pipeline_write are DeepSpeed's defaults (False): each sub-group is read, updated by CPU Adam,
//    and written back before the next one is read (the 4 optimizer swap buffers hold one sub-group's p, m, v, g);
//  - the fp32 master and Adam m, v (12 B per element) are swapped at the step, and the fp32 grads (4 B) go to NVMe at
//    the GA boundary and come back with the states; the host keeps one fp32 grad buffer of the largest sub-group;
//  - stage 1/2: DeepSpeed's stage_1_and_2.py treats any offload device as cpu_offload (no swapper), so nvme there is
//    the CPU path (offload_cpu.hpp); nothing in this file runs;
//  - the aio settings (zero.aio: block_size, queue_depth, intra_op_parallelism) are modelled by the engine's disk I/O
//    (rounds of requests, each round waiting cluster.nvme.latency); max_in_cpu, the swap buffers' buffer_count and
//    buffer_size settings are not (DeepSpeed's defaults are used), and a layer partition larger than buffer_size is
//    not rejected;
//  - an lp partition under max(1 MiB, aio block_size) stays in host memory, never written to or read from NVMe
//    (nvme_swappable); the prefetch walk still treats it as a param to swap in (it takes a swap-buffer slot there,
//    with no bytes read), where DeepSpeed finds it AVAILABLE. The optimizer swapper's same rule for a sub-group
//    (stage3.py _swappable_optimizer_subgroup) is not modelled: every sub-group is swapped.
// Stage 3's prefetch stops at a param still on NVMe, and partitions are read ahead as DeepSpeed's
// __prefetch_nvme_param_partitions does (stage3_generator.cpp fetch / prefetch_nvme).
#pragma once

#include "sim/zero/generator_common.hpp"

namespace zerosim::zero {

/// The smallest tensor DeepSpeed's NVMe swappers put on NVMe, B: max(MIN_AIO_BYTES = 1 MiB, zero.aio.block_size)
/// (deepspeed/runtime/swap_tensor/utils.py l.14-16 MIN_AIO_BYTES = MIN_SWAPPABLE_BYTES = 1024**2;
/// partitioned_param_swapper.py l.100 and optimizer_utils.py l.180 min_aio_bytes).
[[nodiscard]] Bytes nvme_min_swappable_bytes(const scenario::ZeroConfig& z);

/// Whether a tensor of `bytes` goes to NVMe: nvme_min_swappable_bytes(z) <= bytes; a smaller one stays in host
/// memory. The param swapper's rule (partitioned_param_swapper.py l.136-141 swappable_tensor), applied to each
/// param's partition of ceil(numel / N) lp elements when it is first partitioned (partition_parameters.py
/// l.1792-1813 _partition_param: not swappable, it is allocated on the CPU, pinned iff offload_param.pin_memory, or
/// on the GPU when persistent). DeepSpeed's optimizer swapper applies the same rule to a sub-group's fp32 partition
/// (optimizer_utils.py l.211-215 is_swappable_tensor; stage3.py l.1214-1219 _swappable_optimizer_subgroup).
[[nodiscard]] bool nvme_swappable(Bytes bytes, const scenario::ZeroConfig& z);

/// The NVMe side of stage 3's offload.
struct NvmeSwap {
  program::StreamId nvme = 0; ///< "nvme" (COPY): Disk reads and writes of the node's NVMe
  bool optimizer = false; ///< offload_optimizer == nvme
  bool params = false; ///< offload_param == nvme
};

/// Adds the "nvme" stream.
[[nodiscard]] NvmeSwap add_nvme_swap(GeneratorContext& ctx, bool optimizer, bool params);

/// INIT with offload_optimizer=nvme (PartitionedOptimizerSwapper): pinned host swap buffers of
/// zero.optimizer_swap_buffer_count (default 4: one sub-group's fp32 param, m, v and grad) x largest sub-group x 4 B
/// (FP32_MASTER on HOST), and the initial swap-out of the fp32
/// master partition (4 B x `partition` written) on `nvme`, after `cpu` built it.
void emit_nvme_optimizer_init(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements partition,
                              Elements largest_sub_group);

/// INIT with offload_param=nvme (AsyncPartitionedParameterSwapper): pinned host buffers of
/// zero.param_swap_buffer_count x zero.param_swap_buffer_size lp elements (defaults 5 x 1e8; LP_PARAMS on HOST), the
/// swap-out of this rank's swappable lp partitions (lp x `on_nvme` written) and, in host memory (LP_PARAMS, pinned iff
/// offload_param.pin_memory), the `in_host` lp elements of the non-persistent partitions too small to swap
/// (nvme_swappable).
void emit_nvme_param_init(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements on_nvme,
                          Elements in_host);

/// Before CPU Adam on a sub-group of `elements`: `nvme` waits for `cpu` (the swap buffers are free), reads the fp32
/// master (4 B/elem), the fp32 gradients swapped out in backward (4 B/elem; PartitionedOptimizerSwapper
/// swap_in_optimizer_state -> _swap_in_gradients) and, from the 2nd step on, Adam m and v (8 B/elem); then `cpu`
/// waits for the reads.
void emit_nvme_swap_in(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements elements, int step,
                       const std::string& label);

/// After CPU Adam on a sub-group: `nvme` waits for `cpu` and writes the fp32 master, m and v back (12 B/elem) and,
/// with offload_param=nvme, the updated lp params (lp bytes/elem).
/// At the GA boundary with offload_optimizer=nvme: the fp32 gradient partition of `elements` (already D2H in the
/// swap buffers) is written to NVMe after `after` (stage3.py _offload_grad_partition_at_boundary ->
/// _swap_out_offload_fp32_gradients -> swap_out_gradients): 4 B/elem written on `nvme`.
void emit_nvme_grad_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId after, Elements elements,
                             const std::string& label);

/// `lp_on_nvme`: the sub-group's lp elements whose partitions live on NVMe (nvme_swappable; the rest are updated
/// in host memory).
void emit_nvme_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements elements,
                        Elements lp_on_nvme, const std::string& label);

/// A parameter fetch with offload_param=nvme: `nvme` waits for `after`, reads `bytes` of lp partitions into a pinned
/// swap buffer; returns nothing, the caller makes the H2D copy stream wait for `nvme`.
void emit_nvme_param_read(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId after, Bytes bytes,
                          const std::string& label);

} // namespace zerosim::zero
