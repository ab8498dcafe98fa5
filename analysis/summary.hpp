// The run summary: the numbers a person reads first (step time, throughput, MFU, peak memory, fits/OOM), derived
// from one simulation's RunResult. Pure data; writers (result_json, console) live beside it in analysis/.
#pragma once

#include "analysis/attribution.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"
#include "sim/workload/workload.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::analysis {

/// The steady step (mean over the steady window, first_steady_step) split by what rank 0's compute stream was doing. The step time is
/// compute_busy_s + exposed_comm_s + exposed_offload_s + exposed_cpu_s + exposed_host_s + idle_other_s.
struct StepBreakdown {
  double forward_s = 0; ///< compute-stream kernels in Phase::FORWARD
  double backward_s = 0; ///< compute-stream kernels in Phase::BACKWARD
  double optimizer_s = 0; ///< compute-stream kernels in Phase::OPTIMIZER (GPU Adam, casts)
  double other_compute_s = 0; ///< compute-stream kernels in every other phase (bucket and flatten copies, ...)
  double compute_busy_s = 0; ///< sum of the above (collectives on the compute stream are not compute)
  double comm_busy_s = 0; ///< seconds rank 0 had a collective in flight on any stream
  double exposed_comm_s = 0; ///< compute stream idle or blocked while communication ran (not hidden by compute)
  /// compute stream idle while offload traffic ran: exposed_offload_pcie_s + exposed_offload_nvme_s
  double exposed_offload_s = 0;
  double exposed_offload_pcie_s = 0; ///< ... while a GPU <-> host copy over PCIe (H2D, D2H) ran
  /// ... while an NVMe swap read or write ran and no PCIe copy (offload to nvme; trace::IdleTimes::offload_nvme)
  double exposed_offload_nvme_s = 0;
  double exposed_cpu_s = 0; ///< compute stream idle while the CPU worked (CPU Adam with optimizer offload)
  /// compute stream idle while the host (Python) thread issued work: eager op launches, DeepSpeed's hooks (ZeRO-3's
  /// module hooks on one GPU, the offload path's per-parameter checks); trace::IdleTimes::host
  double exposed_host_s = 0;
  double idle_other_s = 0; ///< compute stream idle with nothing running on rank 0
};

/// The host side of the optimizer step with optimizer offload: seconds rank 0's CPU-optimizer stream (StreamKind::CPU)
/// was busy per steady step, by work (mean over the steady window, as StepBreakdown). The compute stream waits for only part
/// of it (StepBreakdown::exposed_cpu_s). All 0 without optimizer offload, or when rank 0 has no timeline
/// (outputs.trace_ranks = 0: the split is read from rank 0's spans).
struct HostStep {
  double cpu_adam_s = 0; ///< DeepSpeedCPUAdam's update (sim/zero/cpu_adam.hpp)
  double unscale_s = 0; ///< unscale_and_clip_grads: `mul_` over the fp32 gradient partition on the host
  double lp_cast_s = 0; ///< the updated fp32 params cast to bf16/fp16 on the host before their H2D copy
  double other_s = 0; ///< any other work on the CPU-optimizer stream
  [[nodiscard]] double total() const { return cpu_adam_s + unscale_s + lp_cast_s + other_s; }
};

/// The headline numbers of one run. Times in seconds, memory in bytes (GiB = 2^30 only when printed).
struct RunSummary {
  std::string gpu_name;
  int world_size = 0; ///< N_d
  int steps_completed = 0; ///< optimizer steps that reached STEP_END on rank 0
  bool finished = false; ///< every stream of every rank ran to its end

  double warmup_step_s = 0; ///< duration of step 0 (warm-up: lazy allocations), 0 if it did not complete
  /// steady-state step time: mean of the completed steps >= steady_first_step (step 0 if it is the only one)
  double step_time_s = 0;
  bool steady_state = false; ///< true when step_time_s comes from steps >= 1
  int steady_first_step = 1; ///< first step of the steady window (first_steady_step); 1 in older summaries
  std::vector<double> step_times_s; ///< every completed step, in order

  double global_batch_tokens = 0; ///< b * s * GA * N_d per optimizer step
  /// GA as simulated: training.grad_accum, or as the loader derived it from training.train_batch_size
  std::int64_t grad_accum = 0;
  std::int64_t train_batch_size = 0; ///< sequences per optimizer step over all GPUs: b * GA * N_d
  double params = 0; ///< Ψ: the model's parameter count (workload::Workload::total_params)
  double trainable_params = 0; ///< parameters with gradients and optimizer states (training.trainable_fraction)
  /// What trains when not everything does: "LoRA r=16 on q_proj, v_proj" (training.lora_rank, lora_targets, with
  /// ", dropout 0.05" when lora_dropout > 0) or "trainable_fraction 0.01"; empty when every parameter trains.
  std::string trainable_note;
  /// Model states per GPU as the ZeRO paper counts them (Rajbhandari et al. 2020 §5.1, Fig. 1; mixed-precision Adam,
  /// K = 12): (2 + 2 + K)Ψ at stage 0, 2Ψ + 2Ψ + KΨ/N_d at stage 1, 2Ψ + (2 + K)Ψ/N_d at stage 2, (2 + 2 + K)Ψ/N_d
  /// at stage 3, in B. 0 when the paper's accounting does not apply: offload, frozen parameters, or fp32 training.
  double paper_model_state_bytes = 0;
  /// Bytes of one model element (params, grads, gradient collectives): 2 in fp16/bf16, 4 with training.precision fp32.
  double element_bytes = 2;
  int zero_stage = 0; ///< zero.stage of the run
  /// DeepSpeed's BF16_Optimizer ran instead of stage 1 or of stage 0's FP16_Optimizer (scenario::uses_bf16_optimizer):
  /// it holds bf16 params 2Ψ and a full fp32 gradient buffer 4Ψ on every GPU and partitions the fp32 master and Adam
  /// states over N_d, so paper_model_state_bytes (the paper's stage-0 or -1 figure) is not what it holds. false in
  /// summaries written before it was recorded.
  bool bf16_optimizer = false;
  /// Stage 3 only: Σ over the parameter tensors of ceil(numel / N_d)·N_d − numel, the zeros DeepSpeed pads each tensor
  /// with so that it splits into N_d equal partitions (partition_parameters.py _partition_param; stage3.py reduces
  /// and gathers the padded partitions), in elements; 0 at stages 0-2 and in summaries written before it was recorded.
  double stage3_padding_params = 0;
  int param_tensors =
      0; ///< parameter tensors of the model (workload::Layer::params over all layers); 0 in older summaries
  double tokens_per_s = 0; ///< global_batch_tokens / step_time_s
  double model_tflops_per_gpu = 0; ///< model FLOPs per micro-batch * GA / step time, in TFLOP/s (1e12)
  double hardware_tflops_per_gpu = 0; ///< same with recomputation (HFU numerator)
  double peak_tflops_per_gpu = 0; ///< scenario::matmul_peak (gpu.peak_lp in fp16/bf16) in TFLOP/s
  double mfu = 0; ///< model_tflops_per_gpu / peak (fraction, 0..1); Chowdhery et al. 2022 App. B
  /// Share of the model FLOPs (the MFU count) that is attention (QKᵀ, P·V) run in FlashAttention kernels, counted
  /// full s×s as PaLM does (docs/compute.md "What MFU and HFU count"); 0 without FlashAttention.
  double attention_flops_share = 0;
  /// The FLOPs the GPU executes for the model FLOPs per FLOP counted: a causal FlashAttention kernel executes half
  /// the counted attention forward and 2.5/2 x half of it backward (workload::Layer::fwd_attention_work,
  /// bwd_attention_work); 1 when nothing is skipped. mfu x this is the executed rate's share of peak.
  double executed_flops_ratio = 1;
  double hfu = 0; ///< hardware_tflops_per_gpu / peak (fraction)
  /// Fraction of the large-GEMM rate (peak x matmul_efficiency) the model's GEMM shapes reach on this GPU: tile and
  /// wave quantization, operand reads (workload::step_gemm_utilization, docs/compute.md); 1 without gpu.sm_count.
  double gemm_utilization = 1;
  StepBreakdown breakdown;
  HostStep host_step; ///< the CPU-optimizer stream's work per step (optimizer offload), by kind
  std::string cpu_name; ///< cluster.cpu: the host CPU that runs the offloaded optimizer ("" without a CPU preset)
  double cpu_memory_bandwidth = 0; ///< B/s of DRAM of that CPU (all sockets), shared by the node's ranks
  int gpus_per_node = 0; ///< ranks sharing one node's CPU
  int cpu_numa_nodes = 0; ///< NUMA nodes of that CPU's DRAM (a rank's pinned host buffers sit on one)
  /// B/s of DRAM one core of that CPU draws alone (cluster.cpu.core_memory_bandwidth); 0 when not given.
  double cpu_core_memory_bandwidth = 0;
  /// OpenMP threads each rank runs its host work (CPU Adam) on with optimizer offload, when fewer than its share of
  /// the cores (scenario::cpu_limited_threads_per_rank: e.g. torchrun's 1 thread per rank); 0 when the rank uses its
  /// whole share, or without optimizer offload.
  int cpu_threads_per_rank = 0;
  /// What set cpu_threads_per_rank ("torchrun", "accelerate", "OMP_NUM_THREADS", ...); "" when it is 0.
  std::string cpu_threads_set_by;
  /// What set the time of the host's optimizer-step Adam passes (optimizer offload; sim/zero/cpu_adam.hpp
  /// CpuAdamBound), when its passes take different bounds the one that priced most of their seconds
  /// (zero::GeneratorNotes): "node_memory" (the rank's share of the node's DRAM, its pinned bytes on one NUMA node),
  /// "thread_memory" (its OpenMP threads x cpu.core_memory_bandwidth) or "compute" (its cores' fp32 peak); "" without
  /// optimizer offload.
  std::string cpu_adam_bound;
  /// The optimizer the host runs with optimizer offload: "CPU Adam" (DeepSpeedCPUAdam), or "torch single-tensor
  /// Adam" / "torch foreach Adam" (training.optimizer_impl torch-*: torch.optim on the CPU tensors).
  std::string host_optimizer = "CPU Adam";

  double capacity_bytes = 0; ///< GPU memory capacity (cluster.gpu.memory)
  double peak_bytes = 0; ///< peak allocated GPU memory of the worst rank over the whole run
  int peak_rank = 0; ///< the worst rank (lowest rank on ties)
  double peak_time_s = 0;
  int peak_step = -1;
  std::string peak_label; ///< label of the Alloc that reached the peak
  trace::TagBytes peak_by_tag{};
  /// peak_by_tag, largest first, with the config knob controlling each tag (analysis/attribution.hpp)
  std::vector<PeakAttributionLine> peak_attribution;
  double steady_peak_bytes = 0; ///< worst rank's peak over steps >= 1
  /// Some rank began a step >= 1 (else steady_peak_bytes is the whole-run peak); true in summaries written before
  /// it was recorded.
  bool steady_peak_reached = true;
  double host_peak_bytes = 0; ///< worst rank's peak allocated host memory (offload), 0 without
  /// Of that rank's host peak, the page-locked (pinned) B; host_peak_bytes - this is pageable (program::Alloc::pinned).
  double host_pinned_at_peak_bytes = 0;
  double host_pinned_peak_bytes = 0; ///< worst rank's most pinned host B live at once
  /// That rank's host peak: the step, the op that reached it, and what was allocated then by tag.
  int host_peak_step = -1;
  std::string host_peak_label;
  trace::TagBytes host_peak_by_tag{};
  /// Of host_peak_by_tag, the page-locked B by tag (sums to host_pinned_at_peak_bytes).
  trace::TagBytes host_pinned_at_peak_by_tag{};
  /// host_peak_by_tag, largest first, with the ds_config knob of each tag (analysis/attribution.hpp)
  std::vector<PeakAttributionLine> host_peak_attribution;

  /// PyTorch caching allocator (reference/zero_semantics.md §6): peak_bytes above is torch.cuda.max_memory_allocated
  /// (requests rounded to 512 B); reserved is max_memory_reserved (cudaMalloc'd segments, >= allocated).
  double peak_reserved_bytes = 0; ///< worst rank's peak reserved GPU memory
  int peak_reserved_rank = 0; ///< that rank (lowest on ties)
  double peak_reserved_time_s = 0;
  int peak_reserved_step = -1;
  /// At that rank's reserved peak: the Alloc that reserved it and what was allocated then, by tag
  /// (trace::RankMemory::reserved_peak).
  std::string peak_reserved_label;
  trace::TagBytes peak_reserved_by_tag{};
  /// The allocator blocks not free then (trace::RankMemory::reserved_peak_held): held - allocated is blocks of freed
  /// tensors still held for another stream (record_stream) and unsplit remainders; reserved - held is cached free
  /// blocks.
  double peak_reserved_held_bytes = 0;
  /// At ZeRO stage 3 with a separate all-gather stream and the host model: a plain-words warning that the reserved
  /// and nvidia-smi peaks depend on how far the host thread runs ahead of the GPU (simulation.host_launch_queue),
  /// set when blocks held for other streams plus cached free blocks are at least a quarter of the reserved peak
  /// (reserved_run_ahead_note); empty otherwise.
  std::string reserved_note;
  double non_pytorch_bytes = 0; ///< per GPU, outside PyTorch's allocator: CUDA context + NCCL buffers
  double nvidia_smi_bytes = 0; ///< peak_reserved_bytes + non_pytorch_bytes: what nvidia-smi would show at peak
  /// The memory the run cannot give back, B: the most, over the GPU ranks, of the reserved memory a failed
  /// cudaMalloc's retry could not release at any moment (trace::RankMemory::unreclaimable_peak: blocks held for
  /// other streams come back after synchronize_and_free_events, fully free cached segments are released) + that
  /// rank's CUDA context and NCCL buffers. At most nvidia_smi_bytes; the difference is memory the allocator gives
  /// back at the cost of a cache flush (a retry). What --headroom (plan, largest, run --check) and MarginalFit
  /// compare with the card; read it through nvidia_smi_needed(), which takes 0 (not recorded: summaries written before
  /// it was) as nvidia_smi_bytes.
  double nvidia_smi_needed_bytes = 0;
  /// Most cudaMalloc retries on one rank (an allocation that released every cached free segment and retried;
  /// PyTorch's num_alloc_retries), that rank, and the s its streams waited in them for record_stream'd blocks
  /// (in the step time; cudaFree's device synchronize is not).
  long alloc_retries = 0;
  int alloc_retries_rank = 0;
  double alloc_retry_wait_s = 0;
  double host_node_peak_bytes = 0; ///< worst node's peak host memory (shared by the node's ranks), 0 without
  double host_capacity_bytes = 0; ///< host memory per node (cluster.host_memory), 0 = unlimited

  /// No OOM, peak_bytes <= capacity_bytes and nvidia_smi_bytes <= capacity_bytes. What decides a GPU OOM in the
  /// simulation is reserved + CUDA context + NCCL > capacity (a failing cudaMalloc), not allocated.
  bool fits = false;
  bool oom = false;
  std::string oom_description; ///< one line, empty without OOM
  /// GPU OOM: what nvidia-smi would have shown had the failing cudaMalloc succeeded, B: reserved + CUDA context +
  /// NCCL + the segment asked for (trace::OomInfo; without a segment size, allocated + the request + non-PyTorch).
  /// Above capacity_bytes by construction. 0 without an OOM or for a host OOM.
  double oom_gpu_demand_bytes = 0;
  /// Host OOM: the node's live host memory at the failed allocation plus its request, B (trace::OomInfo::allocated +
  /// requested): a lower bound of what the node needs. 0 without an OOM or for a GPU OOM.
  double oom_host_demand_bytes = 0;
  /// The op whose allocation failed first (the program's label, e.g. "fwd L3 mlp"); empty without an OOM or a label.
  /// In result.json as summary.oom_label.
  std::string oom_label;
  /// The allocation that failed at the first OOM: its bytes (program::Alloc bytes, not the segment), memory tag
  /// and rank; 0 / "" / 0 without an OOM. In result.json as oom_request_bytes, oom_tag, oom_rank.
  double oom_request_bytes = 0;
  std::string oom_tag;
  int oom_rank = 0;
  /// The OOM was in host memory (cluster.host_memory per node, offload buffers), not on the GPU.
  bool oom_on_host = false;
  trace::Traffic traffic; ///< rank 0, whole run
  /// Rank 0's traffic in one optimizer step, by the step each op was generated for (trace::RunResult::step_traffic):
  /// the last completed step. step_traffic_step is its number, -1 (and all zeros) when no step completed. Wire bytes
  /// are priced for all N_d ranks, folded or not.
  trace::Traffic step_traffic;
  int step_traffic_step = -1;
  bool step_traffic_steady = false; ///< step_traffic_step >= 1 (step 0 is the warm-up step)
  std::vector<std::string> diagnostics; ///< the engine's notes (e.g. "ranks folded", a deadlock), in order
  /// The notes that qualify this run's numbers and that the console report prints outside `diagnostics`, one
  /// sentence each, so that a scripted (--quiet) reader gets them too (summarize): the best-case note on step times
  /// (best_case_note), the GPU's "not validated" note (unvalidated_gpu_note), the MFU count note (mfu_count_note, "MFU
  /// counts attention ..."), and "the run did not finish".
  /// Empty in summaries written before they were recorded.
  std::vector<std::string> caveats;
  /// How much longer the measured steps of docs/validation.md took than zerosim simulates them, for this run
  /// (analysis/measured_band.hpp): the GPU family's band, or the offload claims' band with offload. The label ("A100",
  /// "offload"; kNoMeasuredBand "none", with 1, 1, on a GPU no family band covers, whose step is not validated) and the
  /// smallest and largest measured / simulated step ratio (e.g. 1.02 and 1.28). "" and 1, 1 in summaries written
  /// before they were recorded.
  std::string measured_band;
  double measured_step_low = 1;
  double measured_step_high = 1;
  /// The run spans more than one node and rank 0 has a collective in flight for at least half of the step
  /// (is_collective_bound, analysis/measured_band.hpp): the regime of docs/validation.md gaps 16-18 and 20, where
  /// measured steps took 2.2-5.6x the simulated one, so step_time_s is a lower bound rather than inside
  /// measured_step_low/high. false without a step time, and in summaries written before it was recorded.
  bool collective_bound = false;
  /// breakdown.comm_busy_s / step_time_s: the share of the step rank 0 had a collective in flight; 0 without a step.
  double comm_busy_share = 0;
  /// The scenario settings whose default follows other keys (zero.overlap_comm from zero.stage, the pin_memory and
  /// use_multi_rank_bucket_allreduce defaults from zero.deepspeed_version, the dtypes from training.precision,
  /// cluster.nccl_channels from the intra-node link, bucket sizes a ds_config gave as "auto" from model.hidden) as
  /// this run resolved them, by dotted key, each value as `--set key=value` takes it back. Empty in summaries written
  /// before they were recorded.
  std::map<std::string, std::string> resolved;
};

/// RunSummary::nvidia_smi_needed_bytes, or nvidia_smi_bytes when it was not recorded (0), B.
[[nodiscard]] inline double nvidia_smi_needed(const RunSummary& s) {
  return s.nvidia_smi_needed_bytes > 0 ? s.nvidia_smi_needed_bytes : s.nvidia_smi_bytes;
}

/// True when the run has a step time to report: a step completed, and the run did not stop at an OOM. A variant
/// stopped at its OOM (simulation.on_oom: stop) does not train, whatever steps it completed before: its step time,
/// rates and breakdown are n/a in every view (README: "step time n/a"). A run simulated on past its OOM (on_oom:
/// continue, finished) keeps them, marked as such.
[[nodiscard]] inline bool has_step_time(const RunSummary& s) {
  return s.steps_completed > 0 && !(s.oom && !s.finished);
}

/// True when the peak allocated memory (peak_bytes) was reached during initialisation, before step 0 began
/// (peak_step -1): e.g. stage 1-2's flatten copy of the lp params beside the params themselves. The steady-state
/// peak (steady_peak_bytes) is then what training holds; the whole-run peak still decides nothing on its own (the
/// reserved peak + context decides an OOM). False for a run stopped at its OOM before completing a step, whose OOM
/// line already says where it stopped.
[[nodiscard]] inline bool peak_at_initialisation(const RunSummary& s) {
  return s.peak_step < 0 && s.peak_bytes > 0 && !(s.oom && !s.finished && s.steps_completed == 0);
}

/// What one "step" of a step time or step breakdown is under gradient accumulation: "per optimizer step, GA=4
/// micro-steps" (GA forward-backward micro-steps, then one optimizer step: every per-step number sums all GA of
/// them); "" when grad_accum <= 1 (a step is one forward-backward pass, nothing to say).
[[nodiscard]] std::string optimizer_step_text(std::int64_t grad_accum);

/// The same for several variants or sweep points: optimizer_step_text of the GA they share, "per optimizer step"
/// when their GAs differ and one is above 1 (then each needs its own "GA=k" beside its label), "" when every GA is
/// at most 1 (also for none).
[[nodiscard]] std::string optimizer_step_text(const std::vector<std::int64_t>& grad_accums);

/// Derives the summary of one run. Never throws on an empty or truncated run (OOM with on_oom=stop): numbers that
/// need a completed step are then 0.
/// MFU = model FLOPs per step per GPU / (step time x peak_lp, or the fp32 / TF32 peak of an fp32 run: scenario::matmul_peak) (DESIGN.md Terms; Chowdhery et al. 2022, App. B).
/// A run's reserved peak in three parts, in B, which add up to peak_reserved_bytes (when it is at least the allocated
/// sum): `allocated` = the tensors then (sum of peak_reserved_by_tag); `held` = allocator blocks not free beyond them
/// (blocks of freed tensors record_stream holds for another stream, unsplit remainders: peak_reserved_held_bytes -
/// allocated, within the gap); `cached` = the rest, cached free blocks.
struct ReservedSplit {
  double allocated = 0;
  double held = 0;
  double cached = 0;
};
[[nodiscard]] ReservedSplit reserved_split(const RunSummary& s);

/// The percentage of the card `zerosim plan` keeps free by default (its --headroom default, 5 %): the margin a planner
/// keeps for what the model leaves out (docs/sweeps-and-planning.md "Headroom"). MemoryBounds::marginal uses it too.
inline constexpr double kDefaultHeadroomPercent = 5.0;

/// --headroom's test (plan, largest, run --check) and summary.json's `marginal`: a run that fits keeps `headroom` bytes
/// free on a card of `capacity` bytes at `bytes` (the gates pass RunSummary::nvidia_smi_needed_bytes, the memory the
/// run cannot give back; host gates the node's host memory peak).
[[nodiscard]] inline bool leaves_headroom(double bytes, double capacity, double headroom) {
  return bytes <= capacity - headroom;
}

/// The share of a node's host RAM (cluster.host_memory) a fit must leave free, in percent, below which it is marginal
/// (MarginalFit::by_host) and the default of `zerosim plan --host-headroom`. The simulation holds only what DeepSpeed
/// allocates on the host (offloaded states, pinned buffers, CPU checkpoints); it does not hold, per rank, the Python
/// process with torch, deepspeed and transformers imported, PyTorch's CPU libraries and the CUDA driver's host memory
/// (its context's host side, staging buffers), nor, per node, the operating system, the page cache, data-loader
/// workers and the checkpoint a rank loads before DeepSpeed partitions it (from_pretrained). They grow with the ranks
/// per node and the model, and no measurement in docs/validation.md sizes them: 10 % is a rule of thumb for them,
/// not a calibrated figure (the console used it before it was shared); an explicit --host-headroom sets a gate from
/// the user's own measurement (`free -g` on an idle node with the ranks' processes started).
inline constexpr double kHostMarginalPercent = 10.0;

/// A marginal fit: it fits, but with little to spare. The one definition, read by summary.json's `marginal` and
/// `marginal_reason`, the console's "yes, marginal", `zerosim plan`'s and `zerosim largest`'s `~` and `run --check`'s
/// pass line: the run fits (RunSummary::fits: no OOM on the GPU or the host, nvidia-smi peak within the capacity) and
/// the caching allocator needed cudaMalloc retries (alloc_retries > 0: it hit the capacity once and fitted only by
/// releasing its cached blocks), or the memory the run cannot give back (RunSummary::nvidia_smi_needed_bytes) leaves
/// less than kDefaultHeadroomPercent % of the capacity free, or that leaves the headroom (the larger of
/// kDefaultHeadroomPercent % and a gate's --headroom) free but the nvidia-smi peak does not, so the headroom is kept
/// only by cache flushes (the allocator releasing blocks held for other streams and cached segments on a failed
/// cudaMalloc), or the node's host memory peak leaves less than kHostMarginalPercent % of cluster.host_memory free
/// (only when the host memory is given and used). A --headroom or --host-headroom of plan, largest or run --check is
/// a separate gate (a fit that misses it is no fit there); only by_flushes follows --headroom.
struct MarginalFit {
  bool marginal = false; ///< by_retries || by_headroom || by_flushes || by_host; false when it does not fit
  bool by_retries = false; ///< it fits, and the allocator needed cudaMalloc retries
  /// it fits, and the memory it cannot give back leaves less than kDefaultHeadroomPercent % of the capacity free
  bool by_headroom = false;
  /// it fits, not by_headroom, and the nvidia-smi peak leaves less than the headroom free: kept only by cache flushes
  bool by_flushes = false;
  bool by_host = false; ///< it fits, and less than kHostMarginalPercent % of the node's host RAM is free
};

/// MarginalFit of a run that `fits` with `alloc_retries` cudaMalloc retries, an nvidia-smi peak of `nvidia_smi_bytes`
/// of which it cannot give back `needed_bytes` (RunSummary::nvidia_smi_needed_bytes) on a card of `capacity_bytes`,
/// and a node host memory peak of `host_node_peak_bytes` of `host_capacity_bytes` per node (0 = unlimited: no host
/// test), B; `headroom` is a gate's --headroom, B (negative: none). For a run's summary or a sweep / plan row alike.
[[nodiscard]] MarginalFit marginal_fit(bool fits, long alloc_retries, double nvidia_smi_bytes, double needed_bytes,
                                       double capacity_bytes, double host_node_peak_bytes = 0,
                                       double host_capacity_bytes = 0, double headroom = -1);

/// MarginalFit of one run's summary (fits and no OOM, alloc_retries, nvidia_smi_bytes, nvidia_smi_needed_bytes,
/// capacity_bytes, host_node_peak_bytes, host_capacity_bytes) under a gate's `headroom` (B; negative: none).
[[nodiscard]] inline MarginalFit marginal_fit(const RunSummary& s, double headroom = -1) {
  return marginal_fit(s.fits && !s.oom, s.alloc_retries, s.nvidia_smi_bytes, nvidia_smi_needed(s), s.capacity_bytes,
                      s.host_node_peak_bytes, s.host_capacity_bytes, headroom);
}

/// Machine-readable memory margins of one run, derived from its RunSummary (summary.json: reserved_not_live_bytes,
/// nvidia_smi_low_bytes, marginal), in B. The MarginalFit part is marginal_fit(s).
struct MemoryBounds : MarginalFit {
  /// At the reserved peak, reserved bytes that are not live tensors: blocks held for other streams plus cached free
  /// blocks (ReservedSplit held + cached). The amount reserved_note calls uncertain: it depends on how far the host
  /// thread runs ahead of the GPU (simulation.host_launch_queue). 0 without a reserved peak.
  double reserved_not_live = 0;
  /// A floor under nvidia_smi_bytes at this run's allocations: the largest allocated amount (peak_bytes, or the
  /// tensors at the reserved peak if more) + non_pytorch_bytes, since reserved is never below allocated. At most
  /// nvidia_smi_bytes. Not a floor under every timing: the allocations themselves follow how far the host runs
  /// ahead (stage-3 prefetch, host-side frees; simulation.host_launch_queue).
  double nvidia_smi_low = 0;
};
[[nodiscard]] MemoryBounds memory_bounds(const RunSummary& s);

/// Bytes a node's NVMe drives are written per 1e9 trained tokens with offload to nvme, the figure to set against
/// the drives' rated endurance (TBW): rank 0's NVMe writes in the steady step of step_traffic (nvme_bytes[1]) x the
/// ranks writing to the node's drives (min(gpus_per_node, world_size); ZeRO gives every rank an equal partition) x
/// the optimizer steps per 1e9 tokens (1e9 / global_batch_tokens). 0 when nothing was written, the step is not a
/// steady one (step 0 holds the initial writes), or the run has no step time. The node's drives share it (RAID-0).
[[nodiscard]] double nvme_write_bytes_per_billion_tokens(const RunSummary& s);

/// Wall-clock seconds to train 1e9 tokens at the run's simulated throughput: 1e9 / tokens_per_s. 0 without a step
/// time (has_step_time) or throughput.
[[nodiscard]] double time_per_billion_tokens_s(const RunSummary& s);

/// GPU time to train 1e9 tokens, in GPU-seconds: time_per_billion_tokens_s x world_size (every GPU is held for the
/// whole run); / 3600 for the GPU-hours the reports print. 0 without a step time or throughput.
[[nodiscard]] double gpu_time_per_billion_tokens_s(const RunSummary& s);

/// A node's host memory in GiB (2^30 B, three decimals) as the tables show it: ">= X" with X = `need_at_oom` when
/// that is > 0 (a host OOM that stopped the run: live host memory at the failure + its request), else `node_peak`,
/// or `none` when that is 0 (no host allocations). run's compare table, sweep's table and sweep.csv / plan.csv.
[[nodiscard]] std::string host_gib_cell(double node_peak, double need_at_oom, const char* none);

/// Why a fit is marginal, in the console's words: "allocator retries", "less than 5 % of the card free", "headroom
/// only after cache flushes", "host RAM under 10 % free", the reasons present joined by ", " and " and "; "" when it
/// is not marginal.
[[nodiscard]] std::string marginal_reason(const MarginalFit& b);

/// Merges `b`'s reasons into `a` (each flag or-ed): the reasons of several fits, for one legend.
MarginalFit& operator|=(MarginalFit& a, const MarginalFit& b);

/// The `~` legend of `zerosim plan` and `zerosim largest` for the reasons set in `m` (the union over the fits shown):
/// each reason in marginal_reason's words and what it means, "allocator retries (a cudaMalloc succeeded only after
/// the caching allocator released its cached blocks)", "less than 5 % of the card free (at the nvidia-smi peak;
/// --headroom 5% keeps it free)", "host RAM under 10 % free (at the node's host memory peak; --host-headroom 10%
/// keeps it free)", joined by "; or "; "" when none is set.
[[nodiscard]] std::string marginal_legend(const MarginalFit& m);

/// The same reason with its figures, for a line about one fit (largest, run --check): "allocator retries (the
/// caching allocator released its cached blocks 3 times to fit)", "less than 5 % of the card free (it cannot give
/// back 3.85 of 4.00 GiB, leaving 0.15 GiB, under 0.20 GiB)", "headroom only after cache flushes (nvidia-smi 3.95 of
/// 4.00 GiB leaves 0.05 GiB, under 0.20 GiB; 1.20 GiB of it is blocks held for other streams and cached segments a
/// cudaMalloc retry gives back, without which it needs 2.75 GiB)", "host RAM under 10 % free (node peak 121.40 of
/// 128.00 GiB leaves 6.60 GiB, under 12.80 GiB)", the reasons present joined as marginal_reason joins them; "" when
/// it is not marginal. `headroom` as marginal_fit's. GiB = 2^30 B.
[[nodiscard]] std::string marginal_detail(const RunSummary& s, double headroom = -1);

/// The note of RunSummary::reserved_note for a run of ZeRO `stage` with the all-gather on its own stream
/// (`gather_stream`: overlap_comm), the host model on (`host_model`) and a launch queue of `launch_queue` kernels
/// (0 = unbounded), or "" when it does not apply: the stage-3 fetch frees gathered parameters on the host with
/// record_stream (partition_parameters.py free_param), so the blocks stay reserved until the compute stream has
/// used them, and the all-gather stream's pool keeps them cached afterwards; DeepSpeed's throttle
/// (partitioned_param_coordinator.py __max_ongoing_fetch_events = 2) waits for the all-gather stream, not the
/// compute stream, so only the launch queue bounds how many are held. Applies when split.held + split.cached is at
/// least a quarter of the reserved peak.
[[nodiscard]] std::string reserved_run_ahead_note(const RunSummary& s, int stage, bool gather_stream, bool host_model,
                                                  int launch_queue);

/// Model-state bytes per GPU by the ZeRO paper's formulas (Rajbhandari et al. 2020 §5.1 and Fig. 1: fp16 parameters
/// and gradients 2Ψ + 2Ψ, K = 12 B of fp32 master, momentum and variance per parameter; stage 1 partitions the KΨ
/// over N_d, stage 2 also the gradients, stage 3 everything): 16Ψ, 4Ψ + 12Ψ/N, 2Ψ + 14Ψ/N, 16Ψ/N for `stage` 0..3
/// with Ψ = `params` and N = `n_d`. Fig. 1's Ψ = 7.5e9, N_d = 64: 120, 31.4, 16.6, 1.9 GB. Throws zerosim::Error
/// unless 0 <= stage <= 3 and n_d >= 1.
[[nodiscard]] double paper_model_state_bytes(int stage, double params, int n_d);

[[nodiscard]] RunSummary summarize(const scenario::Scenario& sc, const workload::Workload& wl,
                                   const trace::RunResult& run);

/// The optimizer's NVMe swap buffers of a stage-3 run with offload_optimizer=nvme (DeepSpeed's
/// PartitionedOptimizerSwapper: `count` pinned fp32 buffers, each the size of the largest sub-group), with the
/// largest sub-group a smaller zero.sub_group_size would give. The caller packs the sub-groups
/// (zero::stage3_largest_sub_group); analysis only words them.
struct OptimizerSwapBuffers {
  int count = 0; ///< zero.optimizer_swap_buffer_count (offload_optimizer.buffer_count; DeepSpeed's default 4)
  Elements largest_sub_group = 0; ///< elements of the rank's largest sub-group at the scenario's zero.sub_group_size
  Elements smaller_sub_group_size = 0; ///< the zero.sub_group_size to suggest (suggested_sub_group_size); 0 = none
  Elements smaller_largest_sub_group = 0; ///< elements of the largest sub-group at smaller_sub_group_size
};

/// The zero.sub_group_size to suggest for a largest sub-group of `largest` elements: the power of ten one below
/// its order of magnitude (1,000,400,000 -> 1e8; 124,439,808 -> 1e7); 0 below 10 elements.
[[nodiscard]] Elements suggested_sub_group_size(Elements largest);

/// Adds a note to s.diagnostics naming what sizes the host memory of NVMe optimizer offload: buffer_count x the
/// largest sub-group x 4 B of pinned swap buffers per rank (and per node with several ranks), plus the fp32 gradient
/// buffer of that sub-group (4 B x it), in GB (1e9 B), and that a smaller zero.sub_group_size cuts both, with the
/// figure at `b.smaller_sub_group_size` (deepspeed/runtime/swap_tensor/partitioned_optimizer_swapper.py,
/// stage3.py initialize_optimizer_states). Only at stage 3 with offload_optimizer=nvme, and only when host memory
/// matters: swap buffers of at least a quarter of the rank's host peak (with or without a host OOM; the note is then
/// marked as the OOM's).
void note_optimizer_swap_buffers(RunSummary& s, const scenario::Scenario& sc, const OptimizerSwapBuffers& b);

/// Adds a note to s.diagnostics when an imported ds_config turned on ZeRO++ (hpZ, qwZ, qgZ) or MiCS
/// (sc.zero.unmodelled_ds_fields): DeepSpeed acts on them, zerosim simulates plain ZeRO-3, and the note says which way
/// each would move memory and traffic. At stages 0-2 it says they do nothing (DeepSpeed uses them at stage 3 only).
void note_unmodelled_ds_fields(RunSummary& s, const scenario::Scenario& sc);

/// Adds a "not modelled" diagnostic naming the offload maps' fields set away from DeepSpeed's default that zerosim
/// reads but does not simulate (sc.zero.unmodelled_offload_fields: pipeline_read/write, fast_init, max_in_cpu, ...)
/// and what each does in DeepSpeed.
void note_unmodelled_offload_fields(RunSummary& s, const scenario::Scenario& sc);

/// The first optimizer step of the steady window, the completed steps the step time, its breakdown and HostStep
/// average: step 2 when `throughput_timer_sync` (zero.throughput_timer_sync) is on and step 2 completed
/// (simulation.steps >= 3), else step 1. Step 0 is warm-up (lazy allocations, stage-3 trace). DeepSpeed's
/// ThroughputTimer (deepspeed/utils/timer.py, start_step=2) synchronizes the device at every forward and
/// engine.step() only from step 2 on, so step 1 runs without it (the host may run ahead into step 2) and differs from
/// every later step; steps 2, 3, ... repeat one another. The one place this rule lives.
[[nodiscard]] int first_steady_step(bool throughput_timer_sync, const std::vector<trace::StepTiming>& steps);

/// Rank 0's CPU-optimizer work per steady step (HostStep) from the spans of `run` (stream kinds in
/// run.stream_kinds): each span of a StreamKind::CPU stream of rank 0 is clipped to the steps >= `first_step` it
/// overlaps (first_steady_step; step 0 when no such step completed) and summed by its label's kind: "cpu adam...",
/// "unscale and clip...", "cast fp32 -> lp...", else other; the sums are divided by the number of those steps. Zero
/// without such spans.
[[nodiscard]] HostStep host_step_of(const trace::RunResult& run, int first_step = 1);

/// Tags sorted by bytes, largest first (ties: enum order), without zero entries; at most `n`.
[[nodiscard]] std::vector<std::pair<program::MemTag, double>> top_tags(const trace::TagBytes& by_tag,
                                                                       std::size_t n = trace::kNumTags);

/// One-line description of an OOM, e.g. "rank 0 out of GPU memory at t=1.234 s (step 1): 'alloc adam' needed
/// 2.00 GiB of optimizer_states with 22.10 GiB of 24.00 GiB allocated (GiB = 2^30 B)", followed for a GPU by the
/// reason: the segment cudaMalloc asked for, reserved and non-PyTorch bytes against the capacity.
[[nodiscard]] std::string describe_oom(const trace::OomInfo& oom, const std::vector<std::string>& labels);

/// Label text of `id` in `labels`, "" when out of range.
[[nodiscard]] std::string label_of(const std::vector<std::string>& labels, program::LabelId id);

/// A variant's summary as the CLI collects them.
struct VariantSummary {
  std::string label; ///< "" for a single run, else e.g. "zero.stage=2"
  std::string dir; ///< output directory of the variant, relative to the run's output directory ("." if single)
  RunSummary summary;
  /// Its place in the scenario's expansion (scenario::load_scenario's order, 0-based): what per-variant settings of
  /// the command (run --check's --headroom of its card) are indexed by. 0 for a single run.
  std::size_t index = 0;
};

} // namespace zerosim::analysis
