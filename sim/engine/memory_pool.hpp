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

/// NCCL_BUFFSIZE default: 4 MiB FIFO per channel per peer connection (NVIDIA/nccl issue #391; zero_semantics.md §6).
inline constexpr double kNcclBuffSize = 4.0 * 1024 * 1024;

/// Device memory NCCL holds for one ring communicator: channels (ClusterSpec::nccl_channels_effective) x 2 peer
/// connections (ring prev and next) x NCCL_BUFFSIZE (4 MiB), in B. Only the SIMPLE-protocol FIFO is counted (LL/LL128
/// buffers and proxy state are not). Memory is linear in the number of channels and stops growing beyond two nodes
/// (NVIDIA/nccl issues #864, #986), so the node count does not enter.
[[nodiscard]] double nccl_buffer_bytes(const scenario::ClusterSpec& cluster);

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
