// ZeRO stage 3 (P_os+g+p): DeepSpeedZeroOptimizer_Stage3 + DeepSpeedZeRoOffload without offload
// (reference/zero_semantics.md §3.5, §3.6; deepspeed/runtime/zero/stage3.py, partition_parameters.py,
// partitioned_param_coordinator.py).
#pragma once

#include "sim/zero/zero_program.hpp"

namespace zerosim::zero {

/// Emits the stage-3 program. Streams: "compute", and with overlap_comm (default on in stage 3) "gather" for the
/// parameter all-gathers and "reduce" for the gradient reduce-scatters (else both on compute).
/// - INIT: lp partitions Σ ceil(n_i/N)·2 B, persistent params (numel <= stage3_param_persistence_threshold, taken
///   in module registration order while their total numel stays within stage3_model_persistence_threshold) in
///   full, grad_partitions_flat_buffer (model dtype), fp32 master per sub-group, a transient fp32 zero grad of the
///   largest sub-group, and ONE IPG bucket of reduce_bucket_size elements of the communication dtype from DeepSpeed
///   0.17.2 (zero.communication_data_type, the model's by default; fp32: 4 B each), of the model dtype before,
///   that is never freed (§7 #11).
/// - Per SUBMODULE (GeneratorContext::submodules: tensors grouped by module path, e.g. GPT-2 ln_1, attn.c_attn,
///   attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj) in forward and backward (reverse order): fetch = one coalesced
///   ALL_GATHER of the submodule's non-persistent params not already in flight from a prefetch (payload = padded
///   full lp size; at its first fetch its persistent params ride along and count among the fetch's params) into a
///   flat buffer allocated at the issue; the call's first wait makes every param's full tensor by a copy on the
///   gather stream (2x transient), the flat is freed when the last submodule of the call has waited (a single param
///   is gathered into its own padded buffer, allocated at the issue, 1x). A prefetch is ONE such call for all its
///   params, taken per param (the last submodule may be split), so its first wait unpacks them all. With
///   stage3_use_all_reduce_for_fetch_params several params are an ALL_REDUCE of a zeroed flat buffer that they view,
///   1x, freed at the release of the last of them, or at the step when persistent params rode along; with
///   stage3_allgather_sequential one ALL_GATHER per param into its own padded buffer, 1x, and a prefetch of one
///   param. Compute waits for it
///   before the submodule's part of the layer's kernels (PassHooks::before_submodule: its numel share) and releases
///   it after that part unless the reuse distance (stage3_max_reuse_distance, in traversed numel of the recorded
///   module order) keeps it until its next use: after the forward its layer's recompute (activation checkpointing)
///   or its backward, after the recompute its backward (§7 #22).
///   The first fwd+bwd records the trace: no prefetch, release after every use; from the next forward (micro-step
///   or step) upcoming submodules are prefetched up to min(stage3_prefetch_bucket_size, max_live - available)
///   elements; more than 2 waited fetch events make the host synchronise the oldest (§7 #21, #23). A submodule the
///   prefetch walk passes while gathered is not released before that use (__params_to_release); with
///   offload_param=nvme the walk stops at a param still on NVMe and partitions are read ahead
///   (__prefetch_nvme_param_partitions).
/// - Host thread (GeneratorInput::host): per layer the container modules' pre-hooks, per submodule fetch_sub_module
///   (module_hook + param_hook per param) and the all-gather issue (6 eager ops), its launches, its post-hook and
///   per-param release; the containers' post-hooks after the layer; the host issues the gathers (the gather stream waits for the host, not for compute);
///   reduce back-pressure and the end-of-backward reduce-stream synchronize block the host. At N == 1 the hooks
///   still run (no gathers).
/// - Backward: each full lp grad is copied into the bucket on "reduce" and freed; a flushed bucket is interleaved
///   into a temp and REDUCE_SCATTERed (payload = padded bucket bytes in the communication dtype), <= 3 in flight;
///   this rank's slice (cast back to the model dtype first when the communication dtype differs) is copied
///   (micro-step 0) or added (later) into the grad partition buffer.
/// - Step: the overflow check when stage3_checks_overflow (from v0.9.4 an isinf/isnan pass over the grad partition
///   buffer on the reduce stream, or on the CPU with offload_optimizer; before it per partition in the reduce; then
///   the flag's 1 B all-reduce and a host read); then the grad norm per optimizer sub-group (stage3.py
///   _get_norm_groups over fp16_groups): get_grad_norm_direct's fp64 norm of the sub-group's grad partitions and
///   its 8 B all-reduce, with a host read per sub-group before v0.13.0, one after the loop in v0.13.0-v0.14.4 and
///   none from v0.14.5; with offload_optimizer complete_grad_norm_calculation_for_cpu_offload's 4 B all-reduce per
///   sub-group, after a host read per param of the sub-group (before v0.13.0) or one (later), and before a host
///   read (not in v0.13.0-v0.14.4, which read once after the loop). Then per sub-group: fp32 grad 4·sub-group
///   elements, Adam (m, v created at step 0: 8Ψ/N, §7 #17), copy to the lp partition; then an ALL_GATHER of the
///   persistent params (one per param with stage3_allgather_sequential).
/// N == 1: no all-gathers and no gather buffers (param.data views the full partition, §3.6, §7 #19); the
/// reduce_scatter calls are still issued.
/// offload_optimizer=cpu (§3.5 "Offload in stage 3"): grad partitions, fp32 master/grads and Adam state in host
/// memory, "copy" and "cpu" streams; per flushed bucket the lp partition goes D2H and back H2D (micro-step 0) or
/// H2D then D2H (later), plus an fp32 D2H at the GA boundary; CPU Adam per sub-group, then the lp sub-group H2D.
/// offload_param=cpu (with offload_optimizer=cpu): lp partitions in host memory, each fetch copies the layer's
/// partitions H2D before its all-gather (at N == 1 the whole layer is copied H2D), no lp H2D after the step.
/// Throws zerosim::Error from add_offload_streams if cpu_adam_seconds_per_param <= 0 with offload.
[[nodiscard]] program::StepProgram generate_stage3(const GeneratorInput& in);

/// Whether DeepSpeedZeroOptimizer_Stage3.step() checks the gradients for overflow (stage3.py
/// _overflow_check_and_loss_scale_update): fp16 always; bf16 only before v0.11.2 (PR #4512 gated check_overflow on
/// `self.dtype == torch.float16`). Stage 3 has no bf16.check_grad_overflow switch (stages 1/2's
/// stage12_checks_overflow; PR #6976 and #8035 did not touch stage3.py).
[[nodiscard]] bool stage3_checks_overflow(const scenario::ZeroConfig& cfg, scenario::Precision precision);

/// Elements of a rank's largest optimizer sub-group when zero.sub_group_size is `sub_group_size` (stage3.py
/// _create_fp16_sub_groups: the trainable parameters' partitions, ceil(numel / N_d) each, packed in order until a
/// group holds at least sub_group_size), exactly as generate_stage3 packs them. It sizes offload_optimizer=nvme's
/// pinned swap buffers (buffer_count x it x 4 B) and the fp32 gradient buffer (4 B x it). 0 without trainable params.
[[nodiscard]] Elements stage3_largest_sub_group(const GeneratorInput& in, Elements sub_group_size);

/// Number of a rank's optimizer sub-groups at zero.sub_group_size `sub_group_size`, packed as for
/// stage3_largest_sub_group; a pipelined offload_optimizer=nvme swapper's buffer need depends on it
/// (offload_nvme.hpp check_optimizer_swap_buffers).
[[nodiscard]] std::size_t stage3_sub_group_count(const GeneratorInput& in, Elements sub_group_size);

} // namespace zerosim::zero
