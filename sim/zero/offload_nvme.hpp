// ZeRO-Infinity NVMe offload for stage 3 (offload_optimizer / offload_param device nvme): optimizer states and lp
// parameter partitions live on the node's NVMe and are swapped through pinned host buffers (reference/
// zero_semantics.md §3.1 offload defaults, §3.5 "Offload in stage 3", §4.2; deepspeed/runtime/swap_tensor/
// partitioned_param_swapper.py, partitioned_optimizer_swapper.py; Rajbhandari et al. 2021, ZeRO-Infinity,
// arXiv 2104.07857). Swaps are Copy{NVME_READ | NVME_WRITE} ops on an "nvme" stream; the engine runs them as SimGrid
// Disk I/O on the node's NVMe, so the node's ranks share its bandwidth.
//
// Simplifications (stated, not hidden):
//  - without offload_optimizer.pipeline_read / pipeline_write (DeepSpeed's defaults, False;
//    PartitionedOptimizerSwapper, one aio handle) each sub-group is read, updated by CPU Adam, and written back before
//    the next one is read (the 4 optimizer swap buffers hold one sub-group's p, m, v, g). With either set, stage3.py
//    _configure_tensor_swapping picks PipelinedOptimizerSwapper: a read and a write aio handle (the "nvme" and
//    "nvme write" streams, sharing the drives), pipeline_read starts the next sub-group's read as soon as this one's
//    read is waited for, pipeline_write leaves a sub-group's write running until the next sub-group's swap-out
//    starts (the last one is waited for at once); each swap in flight holds its own 4 buffers, so DeepSpeed asserts
//    "ran out of swap buffers" unless buffer_count >= 4 x (1 + pipeline_read + pipeline_write) when more than one
//    sub-group is swapped (check_optimizer_swap_buffers). With pipelining the lp params' swap-out
//    (offload_param=nvme) is put on the write stream too;
//  - the fp32 master and Adam m, v (12 B per element) are swapped at the step, and the fp32 grads (4 B) go to NVMe at
//    the GA boundary and come back with the states; the host keeps one fp32 grad buffer of the largest sub-group;
//  - stage 1/2: DeepSpeed's stage_1_and_2.py treats any offload device as cpu_offload (no swapper), so nvme there is
//    the CPU path (offload_cpu.hpp); nothing in this file runs;
//  - the aio settings (zero.aio: block_size, queue_depth, intra_op_parallelism) are modelled by the engine's disk I/O
//    (rounds of requests, each round waiting cluster.nvme.latency);
//  - offload_param.max_in_cpu (zero.offload_param_max_in_cpu, default 1e9 elements per rank): stage3.py keeps a
//    pinned CPU flat buffer of min(the rank's trainable partition elements, max_in_cpu) lp elements, and the leading
//    sub-groups that fit in it whole live there for good (stage3_generator.cpp params_in_cpu_buffer): fetched H2D
//    as with offload_param=cpu and updated in place at the step, never read from or written to NVMe. With the
//    defaults (sub_group_size 1e9) a model of up to N_d x 1e9 parameters has no lp param on NVMe at all. When some
//    sub-group is not in that buffer, DeepSpeed also pins an lp swap-out buffer at init (reserve_partitioned_swap_space
//    from 0.4.0: the largest sub-group's FULL param numels, I/O-aligned; before, the largest partition sub-group's
//    elements), counted in host memory (stage3_generator.cpp nvme_param_swap_out_buffer). The optimizer's param
//    groups are modelled as one group, so a split into several (decay / no-decay) does not change which sub-groups
//    fit max_in_cpu;
//  - an lp partition under max(1 MiB, aio block_size) stays in host memory, never written to or read from NVMe
//    (nvme_swappable). Like a partition in the max_in_cpu buffer it is AVAILABLE: the prefetch walk takes it, the
//    NVMe read-ahead skips it without a swap buffer, and its all-gather waits for no NVMe read. The optimizer
//    swapper's same rule for a sub-group (stage3.py _swappable_optimizer_subgroup) is not modelled: every sub-group
//    is swapped.
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
  /// Where the optimizer's swap-outs and the fp32 grads' swap-outs go: "nvme write" (COPY) with a pipelined
  /// optimizer swapper (its write aio handle), else `nvme`.
  program::StreamId write = 0;
  bool optimizer = false; ///< offload_optimizer == nvme
  bool params = false; ///< offload_param == nvme
  bool pipeline_read = false; ///< optimizer && offload_optimizer.pipeline_read
  bool pipeline_write = false; ///< optimizer && offload_optimizer.pipeline_write
  [[nodiscard]] bool pipelined() const { return pipeline_read || pipeline_write; }
};

/// Adds the "nvme" stream, and "nvme write" when the optimizer swapper is pipelined (offload_optimizer=nvme with
/// pipeline_read or pipeline_write: PipelinedOptimizerSwapper's separate read and write aio handles,
/// swap_tensor/pipelined_optimizer_swapper.py).
[[nodiscard]] NvmeSwap add_nvme_swap(GeneratorContext& ctx, bool optimizer, bool params);

/// Pinned optimizer swap buffers DeepSpeed's step needs at once with offload_optimizer=nvme at stage 3 and
/// `sub_groups` sub-groups swapped: 4 per sub-group in flight (fp32 param, Adam m and v, and the fp32 grad;
/// partitioned_optimizer_swapper.py / pipelined_optimizer_swapper.py _swap_in_optimizer_state allocate
/// num_tensors + 1), times 1 + pipeline_read + pipeline_write with more than one sub-group (the next sub-group's read
/// and the previous one's write hold theirs while this one is stepped), else 4.
[[nodiscard]] int optimizer_swap_buffers_needed(const scenario::ZeroConfig& z, std::size_t sub_groups);

/// "" when zero.offload_optimizer_buffer_count covers optimizer_swap_buffers_needed(z, sub_groups) or the optimizer
/// swapper is not pipelined, else the reason (PipelinedOptimizerSwapper asserts "ran out of swap buffers, try
/// increasing 'buffer_count'"). The non-pipelined swapper's own limit (buffer_count < 4) is not checked here.
[[nodiscard]] std::string check_optimizer_swap_buffers(const scenario::ZeroConfig& z, std::size_t sub_groups);

/// Where stage3.py _create_fp32_partitions takes the initial fp32 master from when it swaps it out
/// (initialize_parameters' src_tensors): the lp flat partitions on the GPU (no offload_param), the pinned host lp
/// partitions (offload_param=cpu), or, with offload_param=nvme, an fp32 host tensor `torch.empty` on the CPU
/// (unpinned_fp32_buffer, l.1054-1059 @v0.19.5) that the lp partitions were swapped into.
enum class MasterInitSource { GPU_LP, HOST_PINNED_LP, HOST_FP32 };

/// INIT with offload_optimizer=nvme (PartitionedOptimizerSwapper): pinned host swap buffers of
/// zero.optimizer_swap_buffer_count (default 4: one sub-group's fp32 param, m, v and grad) x largest sub-group x 4 B
/// (FP32_MASTER on HOST); the copy of the fp32 master into them, by source `src`: from the GPU a blocking D2H of the
/// lp partition (`partition` x lp B, on `gpu`) into a pageable lp temporary of the largest sub-group, which the host
/// converts (copy_kernel_cuda casts on the CPU for blocking copies), then emit_host_copy_master_to_swap_buffers; and
/// the initial swap-out of the fp32 master partition (4 B x `partition` written) on `sw.write` (the pipelined
/// swapper's write handle; else `nvme`) after `cpu`; `cpu` then waits for the write (the constructor blocks on it).
/// The lp partitions' read from NVMe into the HOST_FP32 source (_swap_in_sub_group_to_flat_buffer) is not modelled.
void emit_nvme_optimizer_init(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, program::StreamId gpu,
                              Elements partition, Elements largest_sub_group, MasterInitSource src);

/// INIT with offload_param=nvme (AsyncPartitionedParameterSwapper): pinned host buffers of
/// zero.param_swap_buffer_count x zero.param_swap_buffer_size lp elements (defaults 5 x 1e8; LP_PARAMS on HOST), the
/// swap-out at zero.Init of this rank's swappable lp partitions (lp x (`on_nvme` + `cpu_swappable`) written) and, in
/// host memory (LP_PARAMS, pinned iff offload_param.pin_memory), the `in_host` lp elements of the non-persistent
/// partitions too small to swap (nvme_swappable) outside the CPU flat buffer. Then stage3.py's pinned CPU flat buffer
/// of `cpu_buffer` lp elements (min(trainable partition elements, offload_param.max_in_cpu); pinned whatever
/// pin_memory says, _create_param_groups_fp16_flat_cpu_memory l.808-831 @v0.19.5), into which the `cpu_swappable`
/// lp elements it holds that were written to NVMe are read back for good (_move_to_flat_buffer -> swap_into_buffer,
/// l.793-797), the host waiting for the read.
void emit_nvme_param_init(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements on_nvme,
                          Elements in_host, Elements cpu_buffer, Elements cpu_swappable);

/// Before CPU Adam on a sub-group of `elements`: `nvme` waits for `cpu` (the swap buffers are free), reads the fp32
/// master (4 B/elem), the fp32 gradients swapped out in backward (4 B/elem; PartitionedOptimizerSwapper
/// swap_in_optimizer_state -> _swap_in_gradients) and, from the 2nd step on, Adam m and v (8 B/elem); then, with
/// `wait`, `cpu` waits for the reads (without: pipeline_read's read-ahead of the next sub-group, waited for by the
/// caller with a join of `cpu` on `nvme` before that sub-group's step).
void emit_nvme_swap_in(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements elements, int step,
                       const std::string& label, bool wait = true);

/// After CPU Adam on a sub-group: `sw.write` waits for `cpu` and writes the fp32 master, m and v back (12 B/elem)
/// and, with offload_param=nvme, the updated lp params (lp bytes/elem) (on `nvme` without pipelining). The caller
/// decides whether `cpu` waits for the write (pipelined swapper: a synchronous swap-out, or the pending one's
/// completion at the next swap-out).
/// At the GA boundary with offload_optimizer=nvme: the fp32 gradient partition of `elements` (already D2H in the
/// swap buffers) is written to NVMe after `after` (stage3.py _offload_grad_partition_at_boundary ->
/// _swap_out_offload_fp32_gradients -> swap_out_gradients): 4 B/elem written on `nvme`.
void emit_nvme_grad_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId after, Elements elements,
                             const std::string& label);

/// `lp_on_nvme`: the sub-group's lp elements whose partitions live on NVMe (nvme_swappable; the rest are updated
/// in host memory). `fresh_mv`: as emit_nvme_optimizer_swap_out.
void emit_nvme_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements elements,
                        Elements lp_on_nvme, const std::string& label, bool fresh_mv = false);

/// The optimizer part of a sub-group's swap-out (offload_optimizer=nvme): the fp32 master, m and v of `elements`
/// (12 B per element) written on `sw.write` after `cpu`, phase `phase`, labels starting with `label`. With
/// `fresh_mv` (m, v created by this step, pageable, the master in a pinned swap buffer) the swapper copies m, v into
/// pinned buffers on `cpu` first (emit_host_copy_mv_to_swap_buffers): PipelinedOptimizerSwapper before its one write
/// (pipelined_optimizer_swapper.py l.167-193 @v0.19.5); PartitionedOptimizerSwapper writes the pinned master (4 B)
/// and waits for it, then copies m, v, writes them (8 B) and waits (partitioned_optimizer_swapper.py l.100-116,
/// optimizer_utils.py l.412-433 _swap_out_unpinned_tensors). The caller decides whether `cpu` waits at the end.
void emit_nvme_optimizer_swap_out(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId cpu, Elements elements,
                                  bool fresh_mv, program::Phase phase, const std::string& label);

/// A parameter fetch with offload_param=nvme: `nvme` waits for `after`, reads `bytes` of lp partitions into a pinned
/// swap buffer; returns nothing, the caller makes the H2D copy stream wait for `nvme`.
void emit_nvme_param_read(GeneratorContext& ctx, const NvmeSwap& sw, program::StreamId after, Bytes bytes,
                          const std::string& label);

} // namespace zerosim::zero
