// The stage 1/2 IPG (independent partition gradient) bucket of DeepSpeedZeroOptimizer: bucket buffers, the flush
// rule, the all-reduce of each flushed chunk and the copy of this rank's slice into grads_in_partition
// (reference/zero_semantics.md §3.4; deepspeed/runtime/zero/stage_1_and_2.py setup_buckets,
// reduce_independent_p_g_buckets_and_remove_grads, average_tensor, copy_grads_in_partition, _release_ipg_buffers).
#pragma once

#include "sim/zero/generator_common.hpp"

#include <optional>
#include <string>
#include <vector>

namespace zerosim::zero {

/// Stage 1/2 partitioning of the flat lp buffer (stage_1_and_2.py init, zero_semantics.md §3.4): the trainable
/// params are flattened in model order and padded to a multiple of 2·N elements (nccl_start_alignment_factor = 2);
/// rank r owns elements [r·P, (r+1)·P). The program models rank 0's partition for which slices it copies;
/// grads_in_partition is sized by the worst rank (Σ numel of params touching its partition), so the memory
/// report is conservative for every rank.
struct FlatPartition {
  Elements padded_total = 0; ///< Ψ rounded up to a multiple of 2N
  Elements partition = 0; ///< P = padded_total / N
  Elements grads_in_partition = 0; ///< max over ranks of Σ numel of params touching the partition
  /// Elements of [offset, offset + numel) inside rank 0's partition.
  [[nodiscard]] Elements own(Elements offset, Elements numel) const;
};

/// Builds the partition of ctx.params().
[[nodiscard]] FlatPartition make_flat_partition(const GeneratorContext& ctx);

/// Stage 1/2 init: the flat lp buffer bit16_groups_flat (padded Ψ, plus frozen params kept as they are) on the
/// compute stream, phase INIT. stage_1_and_2.py __init__ (DeepSpeed >= v0.19.0) empty_cache()s and flattens on the
/// GPU when accelerator.available_memory() -- in().gpu_memory_for_pytorch less the module's lp params already
/// loaded -- holds the flat buffer: the module params and the flat copy coexist (a transient FLATTEN_TEMP of lp Ψ).
/// Otherwise it moves the params to the CPU, empty_cache()s, flattens there and moves the flat buffer back: no
/// transient (the only path before v0.19.0). Returns true when it flattened on the GPU.
bool emit_lp_flatten(GeneratorContext& ctx, const FlatPartition& part);

/// ZeRO-Offload (offload_optimizer=cpu) handling of this rank's reduced slices (stage_1_and_2.py
/// async_inplace_copy_grad_to_fp32_buffer_from_gpu; zero_semantics.md §3.4 "ZeRO-Offload path").
/// The grads' D2H / H2D copies run on the reduction stream, as DeepSpeed queues them (reduce_ipg_grads).
struct OffloadGrads {
  program::StreamId copy = 0; ///< the COPY stream of the offload path; not used for the grads' copies
  bool accumulate_on_cpu = false; ///< stage 2 with GA > 1: non-boundary micro-steps move lp grads D2H (and H2D)
};

/// The IPG bucket(s) and grads_in_partition buffer of one rank.
class IpgBucket {
 public:
  /// `reduce` is the stream the reductions run on (the "comm" stream with overlap_comm, else compute). With
  /// `offload`, this rank's reduced slices go to host memory instead of grads_in_partition.
  IpgBucket(GeneratorContext& ctx, program::StreamId reduce, const FlatPartition& part,
            std::optional<OffloadGrads> offload = std::nullopt);
  /// Whether the current micro-step is the GA boundary (offload: fp32 D2H at the boundary, lp D2H before).
  void set_boundary(bool boundary) { boundary_ = boundary; }

  /// setup_buckets() at the first backward hook: B_r elements of the model dtype, twice with overlap_comm
  /// (double buffer); nothing when contiguous_gradients is off (§3.4 "Backward hooks"; §7 item 10).
  void ensure_allocated();
  /// A trainable param's lp grad `grad` (live on compute) is handed to the bucket (§3.4 flush rule): if it does
  /// not fit, the pending bucket is reduced first; a param bigger than B_r is held alone as the pending bucket
  /// (extra_large_param_to_reduce) and reduced from its own grad by the next flush, i.e. at the next param's hook or
  /// at the epilogue. With contiguous_gradients the grad is copied into the bucket and freed right after the copy.
  /// `micro` selects which partition buffer receives this rank's slice (stage 2 micro-steps > 0 use a second one).
  /// Throws zerosim::Error for a param bigger than B_r with contiguous_gradients before DeepSpeed 0.4.0, which
  /// narrows the bucket past its end there.
  void add(std::size_t param, program::BufferId grad, int micro);
  /// Reduces the pending bucket contents (no-op if empty).
  void flush();
  /// Backward / GA-boundary epilogue: flush, compute waits for the reductions, a second partition buffer (stage 2,
  /// micro-step > 0) is added into the first and freed, the bucket buffers are released (_release_ipg_buffers).
  void epilogue();
  /// The grads_in_partition buffer, if allocated; the step frees it (averaged_gradients = None). Resets it.
  std::optional<program::BufferId> take_partition();
  /// Stage 1/2 without contiguous_gradients: the lp grads of the params touching this rank's partition, which stand
  /// in for grads_in_partition (averaged_gradients holds them) until the step frees them. Empties the list.
  std::vector<program::BufferId> take_kept_partition_grads();

 private:
  struct Pending {
    std::size_t param;
    program::BufferId grad; // only meaningful when !contiguous (grad kept until reduced)
  };
  void reduce_chunks(const std::vector<std::pair<std::size_t, Elements>>& slices, Elements elements,
                     const std::string& label);
  /// The collectives of one bucket of `elements`; without offload each copies `*own` elements back (nullptr: none).
  /// `owners`: the bucket's elements per owning rank (rank order; the per-owner dist.reduce calls when
  /// use_multi_rank_bucket_allreduce is off), empty to split it evenly.
  void reduce_collectives(Elements elements, const std::string& label, const Elements* own,
                          const std::vector<Elements>& owners = {});
  /// The stream waits before a bucket's reduction with overlap_comm (no-op without): the reduction stream after the
  /// compute stream, and from DeepSpeed 0.14.3 the compute stream after the reductions already queued. Before
  /// DeepSpeed 0.8.0 average_tensor (contiguous_gradients) synchronizes the device instead (device_synchronize).
  void order_streams();
  /// Reduces the pending extra-large param (one param bigger than B_r) from its own grad, then frees or keeps the
  /// grad as stage_1_and_2.py reduce_ipg_grads does.
  void reduce_extra_large();
  /// get_accelerator().synchronize() inside the reduction path (allreduce_and_copy with overlap_comm): the host waits
  /// for every stream; what is issued afterwards, on compute and on the reduction stream, follows all of it.
  void device_synchronize();
  void copy_back(Elements own);
  /// Without contiguous_gradients (stage 1 or 2): reduced grads of the params touching this rank's partition are
  /// kept as they are, not copied into grads_in_partition (stage 1 keeps the others too, until the epilogue).
  [[nodiscard]] bool keeps_grads() const;
  /// keeps_grads(): holds a reduced grad. Touching this rank's partition: until the step (kept_partition_), or, at
  /// stage 2 in a micro-step after the first, until the epilogue adds it into the first one's (kept_micro_).
  /// Otherwise: stage 1 until the epilogue (kept_), stage 2 freed after its reduction.
  void keep(std::size_t param, program::BufferId grad);
  /// Whether a reduction's flatten temporary stays reserved after the host drops it until its collective has run
  /// on the GPU: PyTorch before 2.8 (training.torch_version) record_stream()s a collective's input on the NCCL
  /// stream, and only the host model lets the host drop it while the GPU lags behind. Not with
  /// training.torch_nccl_avoid_record_streams (the stash is dropped at wait(), after a stream wait), nor with a
  /// communication_data_type cast (the cast copy, allocated on the reduction stream, is then the input).
  [[nodiscard]] bool input_held() const;
  /// A flatten temporary of `bytes` that a collective reads: with input_held() the host allocates it from the
  /// reduction stream's cache (program::Alloc::pool), else the reduction stream does.
  program::BufferId alloc_input(const std::string& label, Bytes bytes);
  /// Drops a flatten from alloc_input() after its collective was queued: with input_held() the tensor on the host,
  /// the block on the reduction stream once the collective queued there has run (record_stream); else a plain free.
  void release_input(program::BufferId tmp);
  /// ZeRO-Offload: per param of the bucket (its whole size in `slices`, its in-partition elements in `own_slices`),
  /// on the reduction stream.
  void offload_copy_back(const std::vector<std::pair<std::size_t, Elements>>& slices,
                         const std::vector<Elements>& own_slices);
  /// ZeRO-Offload at the boundary, per param (`numel` elements, `own` of them in this partition): the fp64 norm of
  /// the slice and the overflow check of the whole gradient, after which the host waits for the reduction stream.
  void offload_boundary_checks(Elements numel, Elements own);

  GeneratorContext& ctx_;
  program::StreamId reduce_;
  FlatPartition part_;
  bool overlap_;
  bool contiguous_;
  Elements cap_;
  std::vector<program::BufferId> buffers_;
  std::vector<Pending> pending_;
  Elements pending_elements_ = 0;
  int micro_ = 0;
  int flushes_ = 0;
  std::optional<program::BufferId> partition_;
  int partition_micro_ = 0; // micro-step in which partition_ was allocated
  std::optional<program::BufferId> extra_partition_;
  /// Stage 1: grads of params larger than the bucket and outside this rank's partition, kept until the epilogue.
  std::vector<program::BufferId> kept_;
  /// Without contiguous_gradients: grads of params touching the partition, freed by the step.
  std::vector<program::BufferId> kept_partition_;
  /// Stage 2 without contiguous_gradients, micro-steps after the first: the new in-partition grads and the elements
  /// the epilogue's add_ reads of each, freed after it.
  std::vector<std::pair<program::BufferId, Elements>> kept_micro_;
  /// The pending bucket is one param bigger than B_r (extra_large_param_to_reduce).
  bool extra_large_ = false;
  std::optional<OffloadGrads> offload_;
  bool boundary_ = true;
};

} // namespace zerosim::zero
