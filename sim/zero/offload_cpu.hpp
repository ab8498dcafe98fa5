// ZeRO-Offload for stages 1/2 (offload_optimizer: cpu): fp32 master, fp32 grads and Adam state in pinned host
// memory, CPU Adam, fp32 grads D2H and lp params H2D (reference/zero_semantics.md §3.4 "ZeRO-Offload path";
// deepspeed/runtime/zero/stage_1_and_2.py; ZeRO-Offload, Ren et al. 2021, arXiv 2101.06840). The offload streams
// are shared with stage 3's offload path (stage3_generator.cpp, §3.5).
#pragma once

#include "sim/zero/generator_common.hpp"
#include "sim/zero/ipg_bucket.hpp"

namespace zerosim::zero {

/// The side streams of the offload path.
struct OffloadStreams {
  program::StreamId copy = 0; ///< "copy" (COPY): D2H grads, H2D params over the GPU's host link
  program::StreamId cpu = 0; ///< "cpu" (CPU): DeepSpeedCPUAdam
};

/// Adds the "copy" and "cpu" streams. Throws zerosim::Error if cpu_adam_seconds_per_param is not > 0 (the CPU
/// Adam time must come from a CPU model).
[[nodiscard]] OffloadStreams add_offload_streams(GeneratorContext& ctx);
/// The same "copy" and "cpu" streams for stage 3's offload_param without optimizer offload: the copy stream moves
/// the lp partitions, the CPU stream only holds the host allocations (no CPU Adam, so no CPU model is needed).
[[nodiscard]] OffloadStreams add_param_offload_streams(GeneratorContext& ctx);

/// Which of stage 1/2's offload host buffers are page-locked in the simulated release (stage_1_and_2.py __init__,
/// initialize_optimizer_states, async_accumulate_grad_in_cpu_via_gpu): before v0.10.1 the fp32 grad partition, the
/// temp grad buffer and the lp accumulation buffers are pinned whatever offload_optimizer.pin_memory says, the fp32
/// master never; from v0.10.1 (PR #4131) every buffer follows pin_memory, except the fp32 master, pinned always
/// from v0.14.1 (PR #5301) until PR #7689 (v0.18.3).
struct Stage12Pinning {
  bool buffers = false; ///< fp32 grad partition, temp grad buffer, lp accumulation buffers
  bool master = false; ///< fp32 master partition
  bool lp_staging = false; ///< lp partition staging buffer (the host cast's target from v0.17.0)
};
[[nodiscard]] Stage12Pinning stage12_pinning(const scenario::ZeroConfig& cfg);

/// INIT with offload (stage_1_and_2.py __init__, §3.4): GPU lp flat params (padded Ψ) and
/// temp_grad_buffer_for_gpu_offload (largest param, lp; kept for the run); host (pinned): fp32 master partition
/// 4Ψ/N, fp32 grad partition 4Ψ/N, lp partition staging buffer 2Ψ/N, its twin of the temp grad buffer, and with
/// stage 2 and GA > 1 the lp accumulation buffers 2Ψ/N. Adam state is created lazily at the first step. The fp32
/// master comes down as a blocking D2H of the lp partition (2Ψ/N bytes with 16-bit params); from DeepSpeed v0.18.3
/// it is cloned on the GPU first, a transient of lp x the padded partition (stage_1_and_2.py l.448-449 @v0.18.5).
void emit_stage12_offload_init(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s,
                               bool cpu_accumulation);

/// Which host tensors of the offloaded optimizer step are page-locked (cudaHostAlloc: all on one NUMA node, so their
/// bytes cost GeneratorInput::pinned_byte_weight times a pageable byte; cpu_adam.hpp pinned_byte_weight).
struct HostPlacement {
  bool fp32_grads = false; ///< the fp32 gradient partition (unscaled in place, read by CPU Adam)
  bool fp32_master = false; ///< the fp32 master partition (CPU Adam's params; the lp cast's source)
  bool adam_states = false; ///< exp_avg / exp_avg_sq (pinned only in ZeRO-Infinity's NVMe swap buffers)
  bool lp_target = false; ///< where the host's fp32 -> lp cast writes
  /// The cast writes into a new pageable tensor (`lp.copy_(fp32)` across devices: PyTorch's copy_kernel_cuda casts
  /// on the host into a fresh tensor), whose pages fault in at every step (cluster.cpu.page_fault_bandwidth).
  bool lp_target_fresh = false;
};

/// DeepSpeedCPUAdam's two pinned tile buffers, 2 x TILE x 4 B = 1 GiB of page-locked host memory per rank
/// (TILE = 128 x 1024 x 1024 elements; the C++ Adam_Optimizer constructor cudaMallocHost's _doubled_buffer[0] and [1],
/// csrc/includes/cpu_adam.h l.66-67 @v0.3.15, l.54-55 @v0.9.0, l.57-58 @v0.14.2), held for the run. Emitted on the
/// host stream `cpu` in phase INIT, tag FLATTEN_TEMP, label "cpu adam tile buffers (pinned)", when the simulated
/// release has them (before v0.14.3: PR #5409 dropped the CUDA path) and the host optimizer is DeepSpeedCPUAdam
/// (offload_optimizer with training.optimizer_impl fused); otherwise nothing. Returns whether it emitted.
bool emit_cpu_adam_tile_buffers(GeneratorContext& ctx, program::StreamId cpu);

/// DeepSpeed's host optimizer work over `n` fp32 elements on the host stream `cpu` (stage_1_and_2.py and stage3.py
/// step): unscale_and_clip_grads' `mul_` of the gradients (4 B read + 4 B written per element) and DeepSpeedCPUAdam
/// (kCpuAdamStepBytesPerParam: params 8 B, grads 4 B, m and v 16 B), each at cpu_seconds_per_byte with the pinned
/// bytes of `where` weighted; labels "unscale and clip fp32 grads (cpu)<suffix>" and "cpu adam<suffix>". With
/// training.optimizer_impl torch-* the step is torch.optim's on the CPU tensors instead (cpu_adam.hpp
/// TorchCpuAdamBytes), "cpu adam (torch single-tensor|torch foreach)<suffix>", with its temporaries allocated on the
/// host for the step and their page faults priced.
void emit_host_unscale_and_adam(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix,
                                const HostPlacement& where);

/// stage3.py has_overflow with offload_optimizer (grad_partitions_flat_buffer in host memory, pinned iff `pinned`):
/// torch.isinf(buffer).any() and torch.isnan(buffer).any() on the CPU over its `n` elements of `element_bytes` each
/// (the grad-accumulation dtype). Per pass the buffer is read and a new 1 B/element bool tensor written, then read by
/// .any(): 2 x (element_bytes + 2) B per element at cpu_seconds_per_byte (pinned bytes weighted), plus the bool
/// tensors' first-touch page faults (2 B per element; pageable, allocated per call). Host stream `cpu`, phase
/// OPTIMIZER, label `label`.
void emit_host_overflow_scan(GeneratorContext& ctx, program::StreamId cpu, Elements n, double element_bytes,
                             bool pinned, const std::string& label);

/// The first step's creation of Adam's exp_avg / exp_avg_sq for `n` fp32 elements on the host stream `cpu`
/// (DeepSpeedCPUAdam / torch.optim: `torch.zeros_like` at the first step, pageable): 8 B written per element and its
/// first-touch page faults (GeneratorInput::page_fault_seconds_per_byte), labelled "cpu adam state init<suffix>".
void emit_host_adam_state_init(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix);

/// initialize_optimizer_states' DeepSpeedCPUAdam step on `n` zero-gradient fp32 elements before v0.13.2
/// (adam_state_at_init): exp_avg / exp_avg_sq created (`torch.zeros_like`, pageable: 8 B written per element and its
/// first-touch page faults) and one Adam pass (28 B per element, kCpuAdamStepBytesPerParam), `where` placing the
/// master and grads. Host stream `cpu`, phase INIT, label "cpu adam at init<suffix>". The memory is the caller's.
void emit_host_adam_init_step(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& suffix,
                              const HostPlacement& where);

/// ZeRO-Infinity's optimizer swapper copying the Adam m, v that CPU Adam has just created (`torch.zeros_like`,
/// pageable) into its pinned swap buffers before writing them to NVMe: `dst.data.copy_(src.data)` per tensor
/// (swap_tensor/optimizer_utils.py l.412-433 _swap_out_unpinned_tensors, pipelined_optimizer_swapper.py l.177-188
/// _swap_out_optimizer_state @v0.19.5). Per element 8 B read (pageable) + 8 B written (pinned) at cpu_seconds_per_byte,
/// the pinned bytes weighted; no page faults (SwapBufferManager zero-fills its buffers when it pins them, utils.py
/// l.191-192). Host stream `cpu`, phase `phase`, label "copy adam m,v into pinned swap buffers<suffix>".
void emit_host_copy_mv_to_swap_buffers(GeneratorContext& ctx, program::StreamId cpu, Elements n, program::Phase phase,
                                       const std::string& suffix);

/// ZeRO-Infinity's optimizer swapper copying the initial fp32 master of `n` elements into its pinned fp32 swap buffers
/// before the first NVMe write: initialize_parameters -> _swap_out_unpinned_tensors, `dst.data.copy_(src.data)` per
/// sub-group, its source the sub-group's flat partition (stage3.py l.1097-1099, optimizer_utils.py l.412-433
/// @v0.19.5; the same from v0.3.16). Per element `src_bytes` read (page-locked iff `src_pinned`) + 4 B written
/// (pinned) at cpu_seconds_per_byte, the pinned bytes weighted; no page faults (SwapBufferManager zero-fills its
/// buffers when it pins them). Host stream `cpu`, phase INIT, label "copy fp32 master into pinned swap buffers".
void emit_host_copy_master_to_swap_buffers(GeneratorContext& ctx, program::StreamId cpu, Elements n, double src_bytes,
                                           bool src_pinned);

/// The host's cast of `n` updated fp32 parameters into lp (4 B read from the master + 2 B written to the target per
/// element; fp32 training: a 4 B copy) on stream `cpu`, at cpu_seconds_per_byte with the pinned bytes of `where` weighted, plus the target's
/// page faults when it is a new tensor (HostPlacement::lp_target_fresh), labelled `label`.
void emit_host_cast(GeneratorContext& ctx, program::StreamId cpu, Elements n, const std::string& label,
                    const HostPlacement& where);

/// Step with offload (stage_1_and_2.py step, cpu_offload branch): the CPU stream waits for compute, which waited
/// for the reduction stream carrying the grads' D2H copies (IpgBucket epilogue),
/// creates Adam m, v on the host at the first step (8Ψ/N, §7 item 17), unscales the fp32 grads (8 B per element) and
/// runs CPU Adam (kCpuAdamStepBytesPerParam) on the host at cpu_seconds_per_byte, then brings the updated lp
/// partition to the GPU as the release did: from v0.17.0 a host cast into the pinned lp buffer (6 B per element) and
/// an H2D of 2Ψ/N B (§7 item 24); v0.14.1-v0.16 an H2D of the fp32 partition (4Ψ/N B) into a GPU temporary cast
/// there; before v0.14.1 a host cast into a pageable temporary and its H2D. Then compute all-gathers the lp params
/// (skipped at N == 1, §3.6).
void emit_stage12_offload_step(GeneratorContext& ctx, const FlatPartition& part, const OffloadStreams& s, int step);

} // namespace zerosim::zero
