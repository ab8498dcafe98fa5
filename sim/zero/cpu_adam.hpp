// CPU model of DeepSpeedCPUAdam (deepspeed/ops/csrc/adam/cpu_adam_impl.cpp: AVX-512/AVX2 SIMD, unroll 8, OpenMP
// over the cores), the optimizer ZeRO-Offload runs on the host (Ren et al. 2021, ZeRO-Offload, arXiv 2101.06840,
// §5 "CPU optimizer"; reference/zero_semantics.md §4.1; reference/calibration.md §4).
//
// Derivation. Per parameter one Adam step reads the fp32 param, grad, m and v (4 x 4 B) and writes the fp32 param,
// m and v (3 x 4 B) and the lp copy that goes back to the GPU (2 B): kCpuAdamBytesPerParam = 30 B of DRAM traffic
// (the working set, e.g. 16 GB per 1B params, is far larger than any cache). Arithmetic per parameter, counted in
// FMA-pipe lane slots: weight decay 1 FMA, m update 1 mul + 1 FMA, v update 2 mul + 1 FMA, bias-corrected denominator
// sqrt + 1 FMA, the division, the param update 1 FMA, the lp conversion 1 op = 10 ops; vsqrtps / vdivps occupy the
// divider for many cycles, counted here as 12 FMA slots each (assumption; their exact throughput is
// micro-architecture specific). Total kCpuAdamFlopsPerParam = 2 x (8 + 2 x 12) = 64 FLOP-equivalents.
// Compute and memory overlap (streaming SIMD loop), so
//     t(P) = max(P x 64 / peak_fp32, P x 30 B / memory_bandwidth) / kCpuAdamEfficiency.
// On every catalog CPU the memory term is the larger one by >= 5x: CPU Adam is memory-bandwidth bound.
//
// peak_fp32 = cores x base clock x fp32 SIMD lanes x FMA units x 2 (scenario::derived_peak_fp32, from the CPU
// preset's components; cpu.peak_fp32 may override it). The op's loop is an OpenMP `parallel for` over each tile
// (csrc/includes/cpu_adam.h Step_AVX), so a process runs on the threads it is given (OMP_NUM_THREADS; the launcher's
// --bind_cores_to_rank sets it to the cores / ranks it binds, deepspeed/launcher/launch.py), and the SIMD width is
// fixed when the op is built: AVX-512 (16 lanes) if the building host's CPU flags show avx512, else AVX2 (8), else a
// scalar loop (op_builder/builder.py simd_width; every non-x86 host gets the scalar loop, which the compiler may
// vectorize). A JIT build on the training host has the host's width; an op built on another host may be narrower,
// which cpu.fp32_simd_lanes can state. The node's R ranks step together and split the cores and the DRAM bandwidth,
// so with every core busy each rank's rate is 1/R of the node's in both terms: cpu_adam_seconds_per_param = R x t(1).
//
// Threads per rank (scenario::cpu_threads_per_rank, from training.launcher / training.omp_num_threads). A rank on T
// OpenMP threads computes with c = min(T, C/R) cores of the C (bound or time-shared, the ranks step together), and
// one core alone draws at most cpu.core_memory_bandwidth b1 of DRAM (its misses in flight / latency), so
//     t_rank(P) = max(P x 64 / (peak_fp32 x c / C), P x 30 B / min(B / R, c x b1)) / kCpuAdamEfficiency.
// DeepSpeed's launcher without --bind_cores_to_rank leaves OMP_NUM_THREADS unset (T = every CPU): c = C/R and, as
// c x b1 >= B/R on every catalog CPU, t_rank = R x t(1) as above; --bind_cores_to_rank gives T = floor(C/R), the same.
// torchrun and accelerate give T = 1: one core's compute and b1 of bandwidth per rank.
// With the NUMA weight (pinned_byte_weight below) the two bounds hold at once and do not multiply: the node bound
// is the busiest NUMA node's DRAM, B/N, shared by the bytes placed on it (pinned bytes weighted by w), and the thread
// bound is the rank's c cores issuing misses (Little's law: misses in flight / latency), which move every byte once
// wherever it sits. A host pass over P pinned and Q pageable bytes takes
//     max(node_per_byte x (w P + Q), thread_per_byte x (P + Q))
// (offload_cpu.cpp HostPass; thread_per_byte = t_rank / 30 B when slower than the node bound). [assumption] b1,
// measured node-local, holds for a core reading remote-NUMA memory: a remote miss has a longer latency, so one core
// draws somewhat less there (not modelled, errs toward a faster one-thread step).
// [assumption] kCpuAdamEfficiency (the loop's achieved fraction of its bound) is the same when the bound is one
// core's measured streaming rate as when it is the node's DRAM peak; b1 is a measured (achieved) rate, so this errs
// toward a slower one-thread step. [assumption] c cores draw c x b1 until the rank's share B/R (on Zen 2 one CCD's
// fabric link caps near 37 GB/s, kvcache-ai/ktransformers#2175, which this does not follow). Not modelled (a known
// gap, docs/validation.md gap 13): the cost of more threads than cores when the ranks' OpenMP pools share the
// machine unbound. DeepSpeed PR #7474 measured 3084 vs 2383 ms per step (1.3x) without and with --bind_cores_to_rank,
// and the zenflow-corebinding blog (blogs/zenflow-corebinding/README.md, DeepSpeed 2b68bbc) 2887 vs 2497 ms (1.16x,
// unbound runs 2707-3127 ms), both Qwen2.5-3B on 2 A100s of a DGX A100; this model gives both the same time. The
// blog rules out NUMA memory placement (numactl ran without -m, and taskset binding gave the same gain) and credits
// physical-core isolation: each rank's processes on cores of their own, its OpenMP pool sized to them, no
// hyper-thread siblings. It quantifies no part of it (its own explanation is a conjecture left open), so no
// time-slicing or barrier cost is derived here and no factor is fitted.
//
// Calibration (ONE constant, on ONE point). ZeRO-Offload's evaluation host is a DGX-2 node (the paper's
// evaluation hardware section; its CPU per NVIDIA's DGX-2 datasheet: 2 x Intel Xeon Platinum 8168, 24 cores each at
// 2.7 GHz, AVX-512, 6 channels of DDR4-2666 per socket = 255.97 GB/s; topologies/cpus/dgx2-xeon-8168.yaml)
// [m: the paper's section text was not re-read here; the search tool found no copy of it]. Table 4: DeepSpeed CPU-Adam on 1B params = 0.22 s.
// Memory term: 1e9 x 30 B / 255.97e9 B/s = 0.11720 s, so kCpuAdamEfficiency = 0.11720 / 0.22 = 0.5327.
// Check, not tuned (tests/zero/cpu_adam_test.cpp): 4B -> 0.880 s vs 1.03 s (-14.6%); 10B -> 2.200 s vs 2.57 s
// (-14.4%): the paper's time per parameter grows from 0.220 ns (1B) to 0.257 ns (4B, 10B), which a linear model
// with one constant cannot follow.
#pragma once

#include "sim/quantity.hpp"
#include "sim/scenario/scenario.hpp"

namespace zerosim::zero {

/// DRAM bytes per parameter per CPU-Adam step: read fp32 p, g, m, v (16 B) + write p, m, v (12 B) + write lp (2 B).
inline constexpr double kCpuAdamBytesPerParam = 30.0;
/// FLOP-equivalents per parameter per step (10 SIMD ops, sqrt and div counted as 12 FMA slots each; see above).
inline constexpr double kCpuAdamFlopsPerParam = 64.0;
/// Achieved fraction of the bound, calibrated once: DGX-2 host, 1B params -> 0.22 s (ZeRO-Offload Table 4).
inline constexpr double kCpuAdamEfficiency = 0.5327;

/// DRAM bytes per parameter of the DeepSpeedCPUAdam step as ZeRO-Offload calls it from DeepSpeed 0.9 on: ZeRO's step
/// casts the lp params itself afterwards (stage_1_and_2.py / stage3.py step; the fp16_param_groups copy inside the
/// op is commented out), so the op reads p, g, m, v and writes p, m, v: kCpuAdamBytesPerParam without the lp write.
inline constexpr double kCpuAdamStepBytesPerParam = 28.0;

/// Host seconds per byte of DRAM traffic of one rank's streaming loop over host tensors (CPU Adam, and torch's
/// element-wise CPU kernels in ZeRO-Offload's step: the gradients' unscale/clip `mul_`, the fp32 -> lp cast), at the
/// rate CPU Adam's calibration gives: cpu_adam_seconds_per_param / kCpuAdamBytesPerParam (memory-bound; see above).
/// [assumption] torch's OpenMP element-wise CPU kernels reach the same fraction of the DRAM bandwidth as
/// DeepSpeedCPUAdam; no published measurement separates them.
[[nodiscard]] constexpr double cpu_seconds_per_byte(double cpu_adam_seconds_per_param) {
  return cpu_adam_seconds_per_param / kCpuAdamBytesPerParam;
}

/// Seconds for one DeepSpeedCPUAdam step over `params` fp32 parameters using the whole CPU `cpu`:
/// max(params x kCpuAdamFlopsPerParam / peak_fp32, params x kCpuAdamBytesPerParam / memory_bandwidth) /
/// kCpuAdamEfficiency (derivation and calibration at the top of this header). Throws zerosim::Error naming
/// `cluster.cpu` if the CPU has no positive peak_fp32 or memory_bandwidth (no CPU preset given), or params < 0.
[[nodiscard]] Seconds cpu_adam_step_time(double params, const scenario::CpuSpec& cpu);

/// CPU-Adam seconds per parameter for ONE rank when `ranks_per_node` ranks of a node run their CPU Adam at the same
/// time on the shared CPU (data-parallel ranks are symmetric, so they step together), each on `threads_per_rank`
/// OpenMP threads (scenario::cpu_threads_per_rank; 0 = OpenMP's default, every CPU):
/// max(64 / (peak_fp32 x c / cores), 30 B / min(memory_bandwidth / R, c x core_memory_bandwidth)) /
/// kCpuAdamEfficiency with c = scenario::cpu_cores_per_rank (derivation at the top of this header). With every core
/// in use (c = cores / R) and no core_memory_bandwidth given this is ranks_per_node x cpu_adam_step_time(1, cpu).
/// Throws like cpu_adam_step_time, on ranks_per_node < 1 or threads_per_rank < 0, and naming
/// cluster.cpu.core_memory_bandwidth when fewer cores than the rank's share run (c < cores / R) and it is not given.
[[nodiscard]] double cpu_adam_seconds_per_param(const scenario::CpuSpec& cpu, int ranks_per_node,
                                                int threads_per_rank = 0);

/// Which term of cpu_adam_seconds_per_param(cpu, ranks_per_node, threads_per_rank) sets the rate:
/// COMPUTE when 64 / (peak_fp32 x c / cores) is the larger, else THREAD_MEMORY when c x core_memory_bandwidth is
/// below memory_bandwidth / R (the rank's own cores cannot draw its DRAM share), else NODE_MEMORY (the rank's share
/// of the node's DRAM). A memory tie counts as NODE_MEMORY, a compute-memory tie as memory.
enum class CpuAdamBound { NODE_MEMORY, THREAD_MEMORY, COMPUTE };

/// The CpuAdamBound of cpu_adam_seconds_per_param with the same arguments (NODE_MEMORY or COMPUTE when cpu.cores is
/// not given). Throws as cpu_adam_seconds_per_param does.
[[nodiscard]] CpuAdamBound cpu_adam_rate_bound(const scenario::CpuSpec& cpu, int ranks_per_node,
                                               int threads_per_rank = 0);

/// "node_memory", "thread_memory" or "compute": the key summary.cpu_adam_bound stores.
[[nodiscard]] const char* cpu_adam_bound_key(CpuAdamBound b);

/// torch.optim's Adam(W) on fp32 CPU tensors (offload_optimizer with training.optimizer_impl torch-*: ds_config
/// `torch_adam: true`, or a client optimizer with `zero_force_ds_cpu_optimizer: false`, engine.py
/// _configure_optimizer): the same passes as on the GPU (generator_common.cpp emit_gpu_adam_step), per element and
/// by tensor. Single-tensor (PyTorch's CPU default: foreach only defaults for CUDA tensors, optim/optimizer.py
/// _default_to_fused_or_foreach): weight-decay mul_ of p (8), m.mul_ (8), m.add_ (r m, g + w m: 12), v.mul_ (8),
/// v.addcmul_ (12), T1 = v.sqrt() (8), T2 = T1 / c (8), T2.add_ (8), p.addcdiv_(m, T2) (16) = 88 B, of which p 16,
/// g 8, m and v 40, the two temporaries 24; T1 and T2 are new tensors (8 B per element). Foreach: weight decay (8),
/// m.lerp_ (12), v.mul_ (8), v.addcmul_ (12), sqrt into one temporary (8), div_ (8), add_ (8), addcdiv_ (16) = 80 B:
/// p 16, g 8, m and v 32, the temporary 24, one new tensor (4 B per element).
struct TorchCpuAdamBytes {
  double params = 16; ///< fp32 master read + written, B per element
  double grads = 8; ///< fp32 grads read, B per element
  double states = 40; ///< m and v read + written, B per element
  double temps = 24; ///< the temporaries read + written, B per element
  double fresh = 8; ///< bytes per element of the temporaries newly allocated at every step
  [[nodiscard]] double total() const { return params + grads + states + temps; }
};
/// TorchCpuAdamBytes of `impl` (TORCH_FOREACH or TORCH_SINGLE_TENSOR). Throws zerosim::Error for FUSED (no torch
/// step on the CPU).
[[nodiscard]] TorchCpuAdamBytes torch_cpu_adam_bytes(scenario::OptimizerImpl impl);

/// Seconds for one torch.optim Adam(W) step of `impl` over `params` fp32 parameters on the whole CPU `cpu`, one
/// process: its passes at CPU Adam's per-byte rate (cpu_adam_step_time(params) / kCpuAdamBytesPerParam per byte)
/// plus its fresh temporaries' page faults at cpu.page_fault_bandwidth. Check (tests/zero/cpu_adam_test.cpp): on the
/// DGX-2 host 1B params take 1.39 s by construction (page_fault_bandwidth's default is derived there); 4B and 10B
/// give 5.56 and 13.90 s against ZeRO-Offload Table 4's PyTorch CPU 5.71 and 14.76 s. Throws like
/// cpu_adam_step_time and torch_cpu_adam_bytes, or if cpu.page_fault_bandwidth is not positive.
[[nodiscard]] Seconds torch_cpu_adam_step_time(double params, const scenario::CpuSpec& cpu,
                                               scenario::OptimizerImpl impl);

/// Relative cost of one byte of page-locked host memory in the host step's streaming passes (CPU Adam, the unscale,
/// the lp cast), against a pageable byte at cpu_seconds_per_byte: N x ceil(R / N) / R for N = `numa_nodes` NUMA
/// nodes of the node's DRAM and R = `ranks_per_node` ranks stepping together. 1 when N = 1 or N divides R.
///
/// Mechanism. Pinned buffers come from cudaHostAlloc, which places every page on the NUMA node of the allocating
/// thread (Linux first touch; measured with /proc/self/numa_maps in pytorch/pytorch#197868; ai-dynamo/dynamo#3700),
/// i.e. a rank's pinned optimizer buffers all sit on one node. Pageable tensors that torch fills with its OpenMP
/// pool (torch.zeros_like, clone, dtype casts) spread their pages over the nodes of the threads. A streaming pass
/// ends when the busiest node has moved its bytes, and each node gives B/N. The busiest node holds the pinned bytes
/// P of ceil(R/N) ranks and 1/N of every rank's pageable bytes Q: t = (ceil(R/N) P + R Q / N) / (eta B / N) =
/// (w P + Q) x R / (eta B) with w = N ceil(R/N) / R, where R / (eta B) is the per-byte rate with every byte spread.
/// [assumption] ranks' allocating threads sit on distinct nodes while R <= N (what --bind_cores_to_rank gives), and
/// a rank's pinned buffers fit in its node's share of the host memory (beyond it the kernel takes pages from other
/// nodes, which this weight does not follow).
/// Throws zerosim::Error if numa_nodes < 1 or ranks_per_node < 1.
[[nodiscard]] double pinned_byte_weight(int numa_nodes, int ranks_per_node);

} // namespace zerosim::zero
