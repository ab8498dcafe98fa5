// One device's memory of one rank (or, for host memory, of one node): allocated bytes by tag, the peak (whole run and
// steady state) with its by-tag breakdown, and the capacity check that turns an Alloc into an OOM (DESIGN.md
// "engine/"). A GPU pool models PyTorch's caching allocator (caching_allocator.hpp): `allocated` is
// torch.cuda.max_memory_allocated-like (requests rounded up to 512 B), `reserved` is the sum of cudaMalloc'd segments
// (max_memory_reserved), and the OOM is decided on reserved + non-PyTorch memory (CUDA context, NCCL buffers) >
// capacity, as a failing cudaMalloc decides it (reference/zero_semantics.md §6). Pure C++, no SimGrid.
#pragma once

#include "sim/engine/caching_allocator.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"

#include <cstdint>
#include <functional>
#include <optional>

namespace zerosim::engine {

/// CUDA context + kernel images resident with lazy module loading: 287,047,680 B measured in PyTorch PR #86509
/// (CUDA_MODULE_LOADING=LAZY, the default since PyTorch 1.13 / CUDA 11.7; eager loading: 666,632,192 B).
/// reference/zero_semantics.md §6 and §7 item 32.
inline constexpr double kCudaContextBytes = 287'047'680.0;

/// NCCL's default per-connection FIFOs, B (NVIDIA/nccl v2.27.7-1 src/init.cc:618-620, constants from
/// src/include/device.h:25,93-94,110-111; unchanged from 2.10 to 2.30): SIMPLE NCCL_BUFFSIZE = 1 << 22 (4 MiB);
/// LL = 8 lines per thread x 512 threads x NCCL_STEPS 8 x 16 B line = 512 KiB; LL128 = 120 elements per thread x
/// 640 threads x 8 steps x 8 B = 4,915,200 B. NCCL sizes all three whichever protocols the platform enables.
inline constexpr double kNcclBuffSize = 4.0 * 1024 * 1024;
inline constexpr double kNcclLlBuffSize = 8.0 * 512 * 8 * 16;
inline constexpr double kNcclLl128BuffSize = 120.0 * 640 * 8 * 8;
/// CUDA_IPC_MIN, 2 MiB (src/include/comm.h:35): the multiple NCCL rounds a P2P connection's buffer up to, and the
/// cuMem allocation granularity every other device allocation of NCCL's rounds up to (ncclCuMemAlloc).
inline constexpr double kNcclAllocGranularity = 2.0 * 1024 * 1024;

/// Device memory, B, that NCCL (v2.27.7-1, cuMem on, runtime connect) holds on each GPU for `communicators`
/// communicators over all ranks of `cluster` with C = ClusterSpec::nccl_channels_effective channels; 0 for one rank.
/// Per communicator:
///  - two 2 MiB allocations at init (ncclDevCommAndChannels and rankToLocalRank, src/init.cc:447,449) and three per
///    channel for pow2Up(C) channels (devPeers shared and own, devRingUserRanks: src/channel.cc:42,45,56; the channels
///    above C up to the power of two for send/recv, src/graph/paths.cc:864,870), each rounded up to the 2 MiB
///    cuMem granularity: 4 MiB + pow2Up(C) x 6 MiB;
///  - per channel, the ring's receive connection from the previous rank and send connection to the next
///    (src/transport/generic.cc:17). Through P2P the receiver holds all three FIFOs plus its ncclRecvMem header,
///    rounded up to 2 MiB (src/transport/p2p.cc:447-448): 512 KiB + 4,915,200 B + 4 MiB = 9.1875 MiB -> 10 MiB; the
///    sender its ncclSendMem header -> 2 MiB (p2p.cc:379-380); with P2P read the SIMPLE FIFO moves to the sender
///    (6 + 6 MiB), the same 12 MiB per channel. Without p2p (cluster.p2p false) the SHM transport keeps them in host
///    memory (src/transport/shm.cc:523-534): none on the GPU;
///  - the tree's connections when an all-reduce runs the tree (tree_connected): its up and down peers in both
///    directions (generic.cc:46-47). With 2 ranks they are the ring's peers, which NCCL does not connect twice
///    (src/transport.cc:50,55); from 3 ranks on the chain adds the reverse direction, one more 12 MiB per channel.
/// Not counted: network connections priced as P2P ones (with GPUDirect RDMA NCCL stages LL128 + SIMPLE on the
/// sender's GPU too, src/transport/net.cc), NVLS buffers, PAT and send/recv connections, NCCL's kernel images.
/// Before NCCL 2.22 (no runtime connect) ring and tree were both connected at init; before 2.19 (no cuMem) the small
/// arrays were plain cudaMallocs, not 2 MiB each. DeepSpeed communicators: nccl_communicators.
[[nodiscard]] double nccl_buffer_bytes(const scenario::ClusterSpec& cluster, int communicators = 1);

/// Whether NCCL connects the tree on `cluster`: more than two ranks, p2p, and the collective setting or NCCL's
/// tuner (resolve_choice) runs an all-reduce of some size from 4 B to 1 GiB as "tree". NCCL 2.22+ connects an
/// algorithm's peers the first time a collective uses it (src/enqueue.cc:460, NCCL_RUNTIME_CONNECT=1,
/// src/init.cc:52); DeepSpeed all-reduces both 1-element flags and gradient buckets.
[[nodiscard]] bool nccl_tree_connected(const scenario::ClusterSpec& cluster);

/// NCCL communicators a data-parallel DeepSpeed run uses on each GPU (buffers per communicator: nccl_buffer_bytes).
/// groups DEEPSPEED (no mpu): DeepSpeed's engine reduces on a clone of the world group (deepspeed/utils/groups.py:668
/// _clone_world_group, engine.py:1837 and 2410 at v0.19.6), one communicator for stages 0-2; stage 3 partitions the
/// parameters on the default world group itself (zero/partition_parameters.py:1080-1081, parameter_offload.py:259-265
/// pass no group without an mpu; stage3.py:627 reduces the gradients on the parameter's group too) while the clone
/// keeps the broadcast and overflow all-reduces (engine.py:1736, stage3.py:2744): two.
/// groups MPU (Megatron-DeepSpeed): ZeRO runs every collective on the mpu's data-parallel group, a group of its own
/// even when it holds every rank (megatron/core/parallel_state.py:195-201 torch.distributed.new_group @4efb479d), and
/// the engine clones no world group (groups.py _get_data_parallel_group returns the mpu's, l.321 @v0.6.2); Megatron
/// itself runs barriers on the default world group at start-up whatever the stage (megatron/initialize.py:154-162
/// @4efb479d; with NCCL a barrier is an all-reduce on that group's communicator): two at every stage.
/// PyTorch creates a group's NCCL communicator on its first collective.
[[nodiscard]] int nccl_communicators(int zero_stage,
                                     scenario::ProcessGroups groups = scenario::ProcessGroups::DEEPSPEED);

class MemoryPool {
 public:
  /// Plain pool: exact byte counting, no allocator model (host memory).
  /// @param capacity bytes this device holds; <= 0 means unlimited.
  explicit MemoryPool(double capacity = 0) : capacity_(capacity) {}

  /// GPU pool with the caching-allocator model. cudaMalloc can obtain capacity - non_pytorch bytes in total.
  /// @param capacity device memory, B (> 0); @param non_pytorch CUDA context + NCCL buffers, B (>= 0);
  /// @param expandable expandable_segments:True (caching_allocator.hpp).
  [[nodiscard]] static MemoryPool caching(double capacity, double non_pytorch, bool expandable = false);

  /// What allocate() did.
  struct Outcome {
    bool ok = true; ///< false: out of memory (the pool is unchanged unless `force`)
    bool cache_released = false; ///< GPU: fully-free cached segments were released to make room
    double needed = 0; ///< B the failing allocation needed: the segment size (GPU) or the request (plain)
    double reserved = 0; ///< B reserved when it failed (after any cache release; plain: allocated)
  };

  /// Allocates buffer `id` of `bytes` of `tag` requested on CUDA stream `stream` at simulated time `time` (s).
  /// Plain pools fail when allocated + bytes > capacity; GPU pools when the allocator cannot reserve a segment
  /// (reserved + segment > capacity - non_pytorch after releasing the cache). With `force` the allocation is made
  /// anyway (as if memory were unlimited) and `ok` still tells whether it fitted. Updates the peaks.
  /// `pinned` (plain pools: host memory) counts the bytes as page-locked too (Alloc::pinned).
  /// GPU pools: `synchronize_events` runs when cudaMalloc fails, before the cache is released
  /// (CachingAllocator::malloc), and returns the s the caller waited in it; the allocation then happens at
  /// `time` + that wait, and the wait adds to RankMemory::alloc_retry_wait.
  Outcome allocate(std::uint64_t id, program::MemTag tag, double bytes, std::uint32_t stream, double time,
                   program::LabelId label, bool force, bool pinned = false,
                   const std::function<double()>& synchronize_events = {});
  /// Frees buffer `id` (allocated with `bytes` of `tag`, `pinned` as allocated); a GPU block returns to its stream's
  /// cache.
  void release(std::uint64_t id, program::MemTag tag, double bytes, bool pinned = false);
  /// The tensor of buffer `id` is freed (allocated drops by `bytes` of `tag`) while its block stays held
  /// (record_stream); release_block() later returns the block. Plain pools: the same as release().
  void release_tensor(std::uint64_t id, program::MemTag tag, double bytes, bool pinned = false);
  /// The block of a buffer released with release_tensor() returns to its stream's cache (no-op in plain pools).
  void release_block(std::uint64_t id);

  /// Plain pools only: true when `bytes` more would still fit under the capacity (always when unlimited).
  [[nodiscard]] bool fits(double bytes) const { return capacity_ <= 0 || total_ + bytes <= capacity_; }
  /// Plain pools only: adds `bytes` of `tag` (page-locked when `pinned`); updates the peaks. Does not check the
  /// capacity.
  void alloc(program::MemTag tag, double bytes, double time, program::LabelId label, bool pinned = false);
  /// Plain pools only: removes `bytes` of `tag` (`pinned` as allocated).
  void free(program::MemTag tag, double bytes, bool pinned = false);
  /// The rank entered optimizer step `step`: from step 1 on, the steady-state peak starts with what is live now.
  void set_step(int step, double time);

  [[nodiscard]] double capacity() const { return capacity_; }
  [[nodiscard]] double non_pytorch() const { return non_pytorch_; } ///< B, CUDA context + NCCL (GPU pools)
  [[nodiscard]] bool models_allocator() const { return allocator_.has_value(); }
  /// The GPU allocator runs with expandable segments.
  [[nodiscard]] bool expandable_segments() const { return allocator_ && allocator_->expandable(); }
  [[nodiscard]] double total() const { return total_; } ///< allocated B
  [[nodiscard]] double pinned() const { return pinned_; } ///< allocated B that are page-locked (host pools)
  /// Reserved B: the allocator's segments (GPU pools), the allocated bytes (plain pools).
  [[nodiscard]] double reserved() const { return allocator_ ? static_cast<double>(allocator_->reserved()) : total_; }
  [[nodiscard]] double tag_bytes(program::MemTag t) const { return by_tag_[static_cast<std::size_t>(t)]; }
  [[nodiscard]] const trace::TagBytes& by_tag() const { return by_tag_; }
  [[nodiscard]] int step() const { return step_; }
  [[nodiscard]] bool used() const { return used_; }
  /// Bytes counted as allocated for a request of `bytes`: rounded up to 512 B in GPU pools, exact in plain pools.
  [[nodiscard]] double counted(double bytes) const;

  /// Summary for the result; steady_peak falls back to the whole-run peak when no step >= 1 was entered.
  [[nodiscard]] trace::RankMemory summary(std::uint32_t rank) const;

 private:
  void observe(double time, program::LabelId label);

  double capacity_ = 0;
  double non_pytorch_ = 0;
  std::optional<CachingAllocator> allocator_;
  double total_ = 0;
  double pinned_ = 0; ///< B of total_ that are page-locked
  double pinned_peak_ = 0; ///< max of pinned_
  double pinned_at_peak_ = 0; ///< pinned_ when peak_ was reached
  trace::TagBytes pinned_by_tag_{}; ///< pinned_ by tag
  trace::TagBytes pinned_by_tag_at_peak_{}; ///< pinned_by_tag_ when peak_ was reached
  trace::TagBytes by_tag_{};
  int step_ = -1;
  double retry_wait_ = 0; ///< s waited in synchronize_events callbacks (until the first OOM)
  std::optional<long> retries_at_oom_; ///< cudaMalloc retries counted when the first OOM was forced through
  bool used_ = false;
  bool steady_seen_ = false;
  trace::MemoryPeak peak_;
  trace::MemoryPeak steady_peak_;
  trace::MemoryPeak reserved_peak_;
  double reserved_peak_held_ = 0; ///< held() at reserved_peak_ (trace::RankMemory::reserved_peak_held)
};

} // namespace zerosim::engine
