// Entry point of the ZeRO program generators: one StepProgram per rank for stage 0/1/2/3, following DeepSpeed's
// behaviour as specified in reference/zero_semantics.md §3 (each generator cites the § and DeepSpeed function).
#pragma once

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/workload.hpp"

#include <limits>

namespace zerosim::zero {

/// What the generator found while pricing the program, for the run's report (RunSummary); filled through
/// GeneratorInput::notes when that is set.
struct GeneratorNotes {
  /// An optimizer-step CPU Adam pass was priced (optimizer offload; DeepSpeedCPUAdam or torch.optim on the host).
  bool cpu_adam_priced = false;
  /// Seconds of the optimizer-step CPU Adam passes priced in the program (every unrolled step, sub-group, tile and
  /// torch pass) that took the node's DRAM bound (pinned bytes weighted), and those that took the rank's OpenMP-thread
  /// bound (GeneratorInput::thread_seconds_per_param, every byte once): each pass adds the larger of its two bounds,
  /// without its page faults (offload_cpu.cpp HostPass). The passes of one step can take different bounds, since
  /// their pinned share of bytes differs (e.g. torch single-tensor Adam's two passes).
  double cpu_adam_node_bound_seconds = 0;
  double cpu_adam_thread_bound_seconds = 0;
  /// Whether the thread bound set most of CPU Adam's time: its passes' seconds exceed the node-bound passes' (a tie
  /// counts as the node's, as a tie within one pass does).
  [[nodiscard]] bool cpu_adam_thread_bound() const {
    return cpu_adam_thread_bound_seconds > cpu_adam_node_bound_seconds;
  }
};

/// Inputs of a generator.
struct GeneratorInput {
  const workload::Workload& workload;
  const scenario::ZeroConfig& zero;
  int dp_degree = 1; ///< N_d
  int steps = 2; ///< optimizer steps to unroll (each has training.grad_accum micro-steps)
  /// Seconds of CPU work per parameter for one CPU Adam update (offload); 0 when there is no offload.
  double cpu_adam_seconds_per_param = 0;
  /// Host-thread costs (generator_common.hpp "Host thread"); the scenario's simulation.host. Default: none (GPU
  /// streams run back to back), so hand-built inputs keep the GPU-only program.
  scenario::HostSpec host = scenario::HostSpec::none();
  /// GPU memory PyTorch can use on a rank, B: device capacity - CUDA context - NCCL buffers (what
  /// accelerator.available_memory() reports before the model is loaded). Stage 1/2 init flattens the lp params on
  /// the GPU only when the free memory, with the module's lp params loaded, holds the flat buffer; otherwise on the
  /// CPU (stage_1_and_2.py __init__, `flatten_on_accelerator`, DeepSpeed >= v0.19.0; earlier versions always
  /// flatten on the CPU). Default: unlimited (the GPU path).
  double gpu_memory_for_pytorch = std::numeric_limits<double>::infinity();
  /// The GPU's GEMM parameters (workload/gemm.hpp): each layer's forward, recompute and backward Compute op gets
  /// gemm_utilization() of its GEMMs. Default: sm_count 0, every GEMM at the large-GEMM rate.
  workload::GemmHardware gemm{};
  /// Relative cost of a byte of page-locked host memory in the host step's streaming passes (cpu_adam.hpp
  /// pinned_byte_weight: the node's NUMA layout and ranks). Default 1: every byte at cpu_adam_seconds_per_param's rate.
  double pinned_byte_weight = 1.0;
  /// Seconds per byte of a freshly allocated host tensor's first touch (1 / cluster.cpu.page_fault_bandwidth): torch
  /// temporaries on the CPU and host casts into new tensors. Default 0: free (hand-built inputs without a CPU).
  double page_fault_seconds_per_byte = 0.0;
  /// CPU-Adam seconds per parameter of ONE rank bound by its own OpenMP threads (cpu_adam_seconds_per_param with the
  /// launcher's threads: c cores' compute and c x cpu.core_memory_bandwidth), when that is slower than the node-bound
  /// cpu_adam_seconds_per_param; 0 = no thread bound. A host pass takes the larger of the node bound (pinned bytes
  /// weighted, the busiest NUMA node) and this bound (every byte once, the rank's cores): cpu_adam.hpp.
  double thread_seconds_per_param = 0.0;
  /// Where the generator reports what it found (GeneratorNotes); nullptr = not reported.
  GeneratorNotes* notes = nullptr;
};

/// Dispatches on zero.stage to stage{0,1,2,3}_generator. Throws zerosim::Error for an unsupported combination
/// (e.g. offload_param with stage < 3), naming the DeepSpeed rule.
[[nodiscard]] program::StepProgram generate_program(const GeneratorInput& in);

/// DeepSpeed's limit on offload_param=nvme swap buffers: every parameter's partition (ceil(numel / N_d) lp
/// elements) must fit one buffer of `zero.param_swap_buffer_size` elements (swap_tensor/partitioned_param_swapper.py
/// asserts "More elements ... than buffer size"). Returns "" when it holds or parameters are not swapped to NVMe,
/// else the reason. generate_program throws it; `zerosim run`, `sweep` and `plan` check it before anything runs
/// (apps/checked_scenario.hpp).
[[nodiscard]] std::string check_param_swap_buffers(const workload::Workload& wl, const scenario::ZeroConfig& z,
                                                   int dp_degree);

} // namespace zerosim::zero
