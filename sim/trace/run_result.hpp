// What one simulation produces: the recorder's data (spans, memory samples, instants) and the per-rank summaries
// the engine accumulates while it runs. Plain structs; JSON/CSV/trace writers live in analysis/.
#pragma once

#include "sim/program/program.hpp"
#include "sim/quantity.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zerosim::trace {

inline constexpr std::size_t kNumTags = static_cast<std::size_t>(program::MemTag::COUNT_);
using TagBytes = std::array<double, kNumTags>; ///< bytes per MemTag, indexed by the enum value

/// A busy interval of one stream of one rank (only for traced ranks).
struct Span {
  std::uint32_t rank = 0;
  program::StreamId stream = 0;
  double start = 0; ///< s, from the start of the simulation
  double end = 0; ///< s
  program::LabelId label = 0;
  program::Phase phase = program::Phase::OTHER;
  std::uint8_t op_kind = 0; ///< index of the OpBody alternative (Compute=0, Collective=1, Copy=2, CpuCompute=3)
  double bytes = 0; ///< collective/copy payload, or memory traffic of a Compute
  double flops = 0;
};

/// The allocated bytes of one tag on one rank's device after a change (only for traced ranks).
struct MemSample {
  std::uint32_t rank = 0;
  double time = 0; ///< s
  program::Device device = program::Device::GPU;
  program::MemTag tag = program::MemTag::WORKING;
  double bytes = 0; ///< allocated bytes of this tag after the change
  double total = 0; ///< allocated bytes of the device after the change
  /// Reserved bytes of the device after the change: the caching allocator's cudaMalloc'd segments (GPU; what decides
  /// an OOM, with the CUDA context and NCCL buffers), the allocated bytes (host).
  double reserved = 0;
};

/// One optimizer step as seen on rank 0: from its STEP_BEGIN to its STEP_END mark.
struct StepTiming {
  int step = 0;
  double start = 0; ///< s
  double end = 0; ///< s
  [[nodiscard]] double duration() const { return end - start; }
};

/// Busy time per phase of the compute stream's kernels (Compute and Copy ops; collectives excluded) during one step
/// (rank 0), for the breakdown.
struct PhaseTimes {
  std::array<double, 8> seconds{}; ///< indexed by program::Phase
};

/// Where rank 0's compute stream was idle during one step, attributed to what ran elsewhere meanwhile (s).
/// Precedence when several overlap: communication, then offload copies over PCIe, then NVMe swap I/O, then CPU work,
/// then the host thread.
struct IdleTimes {
  double comm = 0; ///< a collective (or a kernel on a communication stream) was running: exposed comm
  double offload_copy = 0; ///< a host<->device copy over PCIe (H2D, D2H) was running
  double cpu = 0; ///< host CPU work (CPU Adam) was running
  double other = 0; ///< nothing was running on rank 0 (waiting for other ranks, or step bookkeeping)
  /// The host (Python) thread was busy issuing work (eager op dispatch, DeepSpeed's hooks): the GPU waited for it.
  /// Last, so that {comm, offload_copy, cpu, other} initialisers keep their meaning.
  double host = 0;
  /// An NVMe read or write (offload to nvme: a swap in or out) was running, and no PCIe copy. Last, as `host`.
  double offload_nvme = 0;
};

/// A memory peak: when, how much, what was live by tag, and the op that reached it.
struct MemoryPeak {
  double bytes = 0; ///< allocated bytes at the peak
  double time = 0; ///< s
  int step = -1; ///< optimizer step in progress (-1: before the first)
  program::LabelId label = 0; ///< label of the Alloc that reached the peak
  TagBytes by_tag{};
};

/// Per-rank memory summary for one device.
struct RankMemory {
  std::uint32_t rank = 0;
  MemoryPeak peak; ///< over the whole run
  MemoryPeak steady_peak; ///< over steps >= 1 (steady state), equal to peak when only one step
  double final_bytes = 0; ///< allocated at the end
  TagBytes final_by_tag{};
  /// Peak of reserved memory (PyTorch caching allocator segments, torch.cuda.max_memory_reserved): bytes = reserved,
  /// by_tag = what was allocated then, label = the Alloc that reserved it. Equals `peak` for host memory.
  MemoryPeak reserved_peak;
  /// B of allocator blocks not free at the reserved peak: the allocated tensors, blocks of freed tensors that
  /// record_stream still holds for another stream's pending kernels, and unsplit block remainders; the rest of
  /// reserved_peak.bytes is cached free blocks. Equals reserved_peak.bytes for host memory.
  double reserved_peak_held = 0;
  double final_reserved = 0; ///< B reserved at the end
  double non_pytorch_bytes = 0; ///< B outside PyTorch's allocator: CUDA context + NCCL buffers (0 for host memory)
  double nvidia_smi_peak = 0; ///< B, reserved_peak.bytes + non_pytorch_bytes: what nvidia-smi would show
  /// GPU: the most reserved memory, B, that a failed cudaMalloc's retry could not have given back at any moment
  /// (engine::CachingAllocator::peak_unreclaimable: reserved less the segments whose blocks are all free or held for
  /// another stream, which synchronize_and_free_events and release_cached_blocks return), with the block just
  /// allocated. At most reserved_peak.bytes. Equals reserved_peak.bytes for host memory.
  double unreclaimable_peak = 0;
  /// Host memory only: most page-locked (pinned) B live at once (program::Alloc::pinned), and the pinned B of
  /// `peak` (peak.bytes - pinned_at_peak is pageable). 0 for GPU memory.
  double pinned_peak = 0;
  double pinned_at_peak = 0;
  TagBytes pinned_by_tag_at_peak{}; ///< pinned_at_peak by tag (host memory; sums to pinned_at_peak)
  /// GPU: allocations that found no room, released every fully-free cached segment and retried
  /// (torch.cuda.memory_stats()["num_alloc_retries"]), up to and including the first OOM (on_oom: continue runs
  /// on past it, where every allocation beyond the capacity would fail again); 0 for host memory.
  long alloc_retries = 0;
  /// GPU: s the rank's allocating streams spent, inside those retries, waiting for the events of record_stream'd
  /// blocks (synchronize_and_free_events); part of the simulated time. 0 for host memory.
  double alloc_retry_wait = 0;
};

/// Out of memory: the first allocation that did not fit.
struct OomInfo {
  std::uint32_t rank = 0;
  double time = 0; ///< s
  int step = -1;
  program::Device device = program::Device::GPU;
  program::LabelId label = 0; ///< the Alloc that failed
  program::MemTag tag = program::MemTag::WORKING;
  double requested = 0; ///< B
  double capacity = 0; ///< B: GPU memory, or host memory of the node
  TagBytes live_by_tag{}; ///< what was allocated when it failed (host: on the whole node)
  double allocated = 0; ///< B allocated on the device (host: the node) when it failed
  double reserved = 0; ///< B reserved by the caching allocator when it failed (GPU; host: = allocated)
  double non_pytorch = 0; ///< B of CUDA context + NCCL buffers (GPU)
  double needed = 0; ///< B the failing cudaMalloc asked for (a segment), or the request (host)
  bool cache_released = false; ///< GPU: cached free segments were released first and it still did not fit
  bool expandable = false; ///< GPU: the allocator runs expandable segments (the failure is a page mapping)
  int node = -1; ///< node of the rank (host OOM: the node whose memory ran out)
};

/// Bytes moved per rank by kind (rank 0; summed over the run, or over one step), for the traffic report.
struct Traffic {
  std::array<double, 4> collective_bytes{}; ///< payload S per CollectiveKind, summed
  std::array<double, 4> collective_calls{};
  std::array<double, 4> wire_bytes{}; ///< bytes each rank sent on the wire per CollectiveKind (mean over ranks)
  std::array<double, 3> copy_bytes{}; ///< per CopyDir H2D, D2H, D2D
  std::array<double, 2> nvme_bytes{}; ///< NVMe swap traffic of the rank: [0] read, [1] written
};

/// Everything one simulation run yields.
struct RunResult {
  int world_size = 0;
  int simulated_ranks = 0; ///< ranks actually simulated (< world_size when folded)
  std::vector<std::string> stream_names;
  std::vector<program::StreamKind> stream_kinds; ///< parallel to stream_names
  std::vector<std::string> labels; ///< the program's label table
  std::vector<StepTiming> steps; ///< completed steps (rank 0)
  std::vector<PhaseTimes> step_phase_busy; ///< per completed step: compute-stream busy seconds by phase
  std::vector<double> step_comm_busy; ///< per step: seconds the rank-0 comm streams were busy
  std::vector<IdleTimes> step_idle; ///< per completed step: rank-0 compute-stream idle time by cause
  /// per completed step: rank 0's collectives and copies of that step, as the program's generator emitted them
  /// (program::StepProgram::step_of; those before step 0 count in step 0's)
  std::vector<Traffic> step_traffic;
  std::vector<RankMemory> memory; ///< one per simulated rank (GPU)
  std::vector<RankMemory> host_memory; ///< one per simulated rank (host), empty without offload
  /// One per simulated node (host memory is shared by the node's ranks; `rank` holds the node index), empty without
  /// offload. The node total is what cluster.host_memory limits.
  std::vector<RankMemory> host_node_memory;
  double host_capacity = 0; ///< B of host memory per node, 0 = unlimited
  Traffic traffic; ///< rank 0, whole run
  std::optional<OomInfo> oom;
  bool finished = false; ///< every stream of every rank ran to its end
  double end_time = 0; ///< s, simulated
  std::vector<Span> spans; ///< traced ranks only
  std::vector<MemSample> mem_samples; ///< traced ranks only
  std::vector<std::string> diagnostics; ///< notes for the report (e.g. "deadlock", "ranks folded")
};

} // namespace zerosim::trace
