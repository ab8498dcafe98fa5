// The engine: runs a StepProgram on every rank of a SimGrid platform built from the cluster, and records what
// happens. One simulation per process (SimGrid's Engine is a process singleton; DESIGN.md "Rules of the house").
#pragma once

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"

#include <string>

namespace zerosim::engine {

struct EngineOptions {
  scenario::Fidelity fidelity = scenario::Fidelity::FLOW;
  scenario::OomPolicy on_oom = scenario::OomPolicy::STOP;
  int trace_ranks = 1; ///< ranks 0..trace_ranks-1 keep spans and memory samples
  /// Rank folding (DESIGN.md "Scale"): every data-parallel rank runs the same program on identical nodes, so one
  /// representative group stands for all: `analytic` simulates the first node, `flow` the first two nodes (so that
  /// the ring still crosses the fabric in both directions). Collectives keep the full world's sizes and latency
  /// steps and the true ring's worst hop latency, so an uncontended run gives the same times as without folding.
  /// AUTO folds when the cluster has more than two nodes on a symmetric, non-blocking fabric (not on an
  /// oversubscribed fat tree, a torus or a dragonfly).
  scenario::FoldPolicy fold = scenario::FoldPolicy::AUTO;
  /// B per GPU held by the CUDA context and kernels outside PyTorch's allocator (scenario simulation.cuda_context;
  /// PyTorch PR #86509, lazy loading). NCCL buffers are added when the world has more than one rank.
  double cuda_context = 287'047'680.0;
  /// NCCL communicators each GPU holds buffers for (memory_pool.hpp nccl_communicators: 2 for ZeRO stage 3 or
  /// training.process_groups mpu).
  int nccl_communicators = 1;
  /// The GPU allocators run with expandable segments (scenario simulation.expandable_segments).
  bool expandable_segments = false;
  /// Bytes of NVMe requests in flight per swap (scenario zero.aio: block_size x queue_depth x
  /// intra_op_parallelism; DeepSpeed's defaults 1 MiB x 8 x 1): a swap of S bytes pays cluster.nvme.latency
  /// ⌈S / nvme_inflight_bytes⌉ times on top of S / bandwidth.
  double nvme_inflight_bytes = 8'388'608.0;
  /// FLOP/s peak of the GEMMs and fused attention kernels (scenario::matmul_peak: gpu.peak_fp32 or peak_tf32 for an
  /// fp32 run); 0 = cluster.gpu.peak_lp.
  double matmul_peak = 0;
};

/// How many ranks run_simulation simulates for `cluster` under `options` (the world size unless folded).
[[nodiscard]] int simulated_ranks(const scenario::ClusterSpec& cluster, const EngineOptions& options);

/// Simulates `program` on every GPU of `cluster` (all ranks form the data-parallel group).
/// GPU memory capacity is cluster.gpu.memory; GPU Allocs go through a model of PyTorch's caching allocator and the
/// first one whose cudaMalloc fails (reserved + new segment > capacity - CUDA context - NCCL buffers, after releasing
/// cached segments) is an OOM; host Allocs are counted per node against cluster.host_memory (0 = unlimited). With
/// OomPolicy::STOP the run ends there (result.oom set, result.finished false), with CONTINUE it is recorded and the
/// run goes on.
/// Must be called at most once per process. Throws zerosim::Error on an invalid program.
[[nodiscard]] trace::RunResult run_simulation(const scenario::ClusterSpec& cluster, const program::StepProgram& program,
                                              const EngineOptions& options);

/// The diagnostic run_simulation adds when stream actors were left blocked: SimGrid signalled a deadlock
/// (`signalled`, Engine::on_deadlock_cb: every live actor blocked) or fewer than `total` of the stream actors
/// finished without an OOM stop (`stopped` kills them on purpose). "deadlock: N of M stream actors never finished
/// ..." with N = total - finished; empty when there is nothing to report. program::validate refuses the programs
/// known to block before a run; this is the run-time guard for what it cannot see.
[[nodiscard]] std::string deadlock_diagnostic(bool signalled, bool stopped, int finished, int total);

} // namespace zerosim::engine
