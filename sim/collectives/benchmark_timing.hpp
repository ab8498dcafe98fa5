// How a collective benchmark turns one collective into the time it prints, so that `zerosim collective` can be
// compared with either kind of measurement. Pure arithmetic, no SimGrid.
//
// nccl-tests (all_reduce_perf, NVIDIA/nccl-tests src/common.cu): launches `iters` collectives back to back, then
// synchronizes once and prints the elapsed host time / iters. The host enqueues the next call while the GPU runs the
// previous one, so the printed time is the collective's GPU time (as long as the host keeps ahead).
//
// torch-loop (stas00/ml-engineering network/benchmarks/all_reduce_bench.py, timed_allreduce): per call
// `dist.barrier(); start_event.record(); dist.all_reduce(t); end_event.record(); torch.cuda.synchronize()` and the
// time is start_event.elapsed_time(end_event). After the barrier and the synchronize the GPU is idle, so the start
// event is stamped as soon as it is enqueued and the interval also contains the host's issue of the all_reduce up to
// its kernel launch (Python, c10d ProcessGroupNCCL, NCCL's enqueue, cudaLaunchKernel). The script then averages
// S / time over ranks and iterations and multiplies by 2(n-1)/n (nccl-tests' all-reduce bus factor).
#pragma once

#include "sim/quantity.hpp"

#include <string_view>

namespace zerosim::collectives {

/// NCCL_TESTS: back-to-back calls, per-call average (nccl-tests). TORCH_LOOP: one synchronized, event-timed
/// torch.distributed call per sample (all_reduce_bench.py).
enum class BenchmarkTiming { NCCL_TESTS, TORCH_LOOP };

/// "nccl-tests" or "torch-loop".
[[nodiscard]] const char* to_string(BenchmarkTiming t);
/// Parses "nccl-tests" / "torch-loop"; throws zerosim::Error naming both otherwise.
[[nodiscard]] BenchmarkTiming parse_benchmark_timing(std::string_view name);

/// Per-call cost of one torch.distributed all_reduce in the torch loop beyond the NCCL kernel (s): the barrier's
/// exit, the event records, c10d ProcessGroupNCCL's work and stream bookkeeping, NCCL's enqueue and kernel launch.
/// [derived] from the latency-bound end of the same measurement: hardware.md's 8 x H200 curve gives 1.44 GB/s busbw
/// at 32 KiB, i.e. 32768 B x 1.75 / 1.44e9 B/s = 39.8 us per call, of which NCCL's ring/LL all-reduce takes 15.3 us
/// (tuning.cc v2.27.7-1: 6.6 + 14 x 0.6 us + 57,344 B / (0.5 x 370.8 GB/s)); the remaining 24.5 us is this constant.
/// The points from 1 MiB up (the validation range) stay predictions. A single PyTorch op costs less
/// (scenario.hpp HostSpec::op_launch, 10 us): a collective call does more host work than a kernel launch.
inline constexpr double kTorchCollectiveCallSeconds = 24.5e-6;

/// The time the benchmark prints for a collective whose GPU time is `collective`: NCCL_TESTS: `collective`;
/// TORCH_LOOP: `collective` + `call_overhead` (kTorchCollectiveCallSeconds for all_reduce_bench.py), which the event
/// interval contains because the GPU is idle until the call's kernel is launched. Inside a simulated training step
/// the host-thread model charges HostSpec::op_launch per collective instead (the GPU stream is busy there, so a
/// launch is hidden unless the host falls behind); this term is for the benchmark table only.
/// Throws zerosim::Error if collective or call_overhead is negative.
[[nodiscard]] Seconds benchmark_time(Seconds collective, BenchmarkTiming t, Seconds call_overhead);

} // namespace zerosim::collectives
