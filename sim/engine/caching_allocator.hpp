// A model of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, DeviceCachingAllocator):
// request rounding, small/large pools, per-stream cached blocks, best-fit reuse, block splitting and merging, segment
// sizes on a miss, and the release-the-cache-and-retry step before an OOM (reference/zero_semantics.md §6, §7 item 31).
// Pure C++, no SimGrid. One instance per simulated device; O(log n) per malloc/free in the number of blocks.
//
// expandable_segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; CUDACachingAllocator.cpp "Note [Expandable
// Segments]"): one segment per stream and pool that grows by mapping pages (2 MiB in the small pool, 20 MiB in the
// large one) at the lowest address where the request fits; on a failed mapping every page lying wholly inside a free
// block is unmapped and the request retried, so free memory between live blocks is not lost to fragmentation.
// record_stream deferral needs no model of its own: the engine executes a Free when its stream reaches it (the GPU
// timeline), which is when the event PyTorch records for a cross-stream use completes.
// Not modelled: max_split_size / roundup_power2_divisions (defaults: unlimited / off), garbage_collection_threshold,
// and the "free one big enough cached block first" step (PyTorch only does it when max_split_size is set).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace zerosim::engine {

/// CUDACachingAllocator.cpp constants (zero_semantics.md §6).
inline constexpr std::uint64_t kMinBlockSize = 512; ///< B, every request is rounded up to a multiple
inline constexpr std::uint64_t kSmallSize = 1ULL << 20; ///< B, largest request served by the small pool
inline constexpr std::uint64_t kSmallBuffer = 2ULL << 20; ///< B, small-pool segment
inline constexpr std::uint64_t kMinLargeAlloc = 10ULL << 20; ///< B, requests below this get a kLargeBuffer segment
inline constexpr std::uint64_t kLargeBuffer = 20ULL << 20; ///< B, large-pool segment for 1 MiB < size < 10 MiB
inline constexpr std::uint64_t kRoundLarge = 2ULL << 20; ///< B, larger segments are rounded up to this
/// Expandable segments map pages of kSmallBuffer (small pool) and kLargeBuffer (large pool): "we use 2MiB pages for
/// our small pool and 20MiB pages for our large pool" (Note [Expandable Segments]).
inline constexpr std::uint64_t kExpandableSmallPage = kSmallBuffer;
inline constexpr std::uint64_t kExpandableLargePage = kLargeBuffer;

class CachingAllocator {
 public:
  enum class PoolKind : std::uint8_t { SMALL, LARGE };

  /// What one malloc did.
  struct MallocResult {
    bool ok = false; ///< false: OOM (nothing changed except a released cache, see cache_released)
    std::uint64_t block_bytes = 0; ///< size of the block handed out (PyTorch's memory_allocated grows by this)
    std::uint64_t new_segment = 0; ///< B reserved by this call (0 when a cached block was reused)
    bool cache_released = false; ///< the cudaMalloc would have failed: fully-free cached segments were released
    std::uint64_t needed_segment = 0; ///< on OOM: the segment size that could not be reserved
  };

  /// @param capacity bytes cudaMalloc can obtain in total (device memory minus non-PyTorch memory); 0 = unlimited.
  /// @param expandable expandable_segments:True (file comment).
  explicit CachingAllocator(std::uint64_t capacity = 0, bool expandable = false)
      : capacity_(capacity), expandable_(expandable) {}

  /// round_size: `bytes` rounded up to a multiple of 512 B (at least 512 B).
  [[nodiscard]] static std::uint64_t round_size(std::uint64_t bytes);
  /// get_pool: requests of at most 1 MiB (after rounding) use the small pool.
  [[nodiscard]] static PoolKind pool_of(std::uint64_t rounded) {
    return rounded <= kSmallSize ? PoolKind::SMALL : PoolKind::LARGE;
  }
  /// get_allocation_size: segment size on a miss for a rounded request: <= 1 MiB -> 2 MiB; < 10 MiB -> 20 MiB;
  /// else rounded up to a multiple of 2 MiB.
  [[nodiscard]] static std::uint64_t segment_size(std::uint64_t rounded);

  /// Allocates `bytes` for the caller's handle `id` (unique among live allocations) on CUDA stream `stream`.
  /// Best fit among cached free blocks of the same pool and stream; else a new segment; if reserving it would exceed
  /// the capacity, releases every fully-free cached segment (all streams) and retries; else OOM (ok = false).
  /// Expandable: the miss maps the pages the request needs at the lowest fitting address of the stream's segment
  /// (new_segment = the bytes mapped); on failure every page wholly inside a free block is unmapped, then retry.
  /// `ignore_capacity` reserves the segment even beyond the capacity (the engine's on_oom: continue).
  /// `synchronize_events`, when set, runs before the cache is released on a failed cudaMalloc: PyTorch's
  /// release_cached_blocks first waits for the events of every record_stream'd block (synchronize_and_free_events,
  /// c10/cuda/CUDACachingAllocator.cpp), so blocks whose other-stream work was pending come back and their
  /// segments can be released too. It may free() blocks of this allocator (the engine blocks the caller in
  /// simulated time meanwhile).
  MallocResult malloc(std::uint64_t id, std::uint64_t bytes, std::uint32_t stream, bool ignore_capacity = false,
                      const std::function<void()>& synchronize_events = {});
  /// Returns the block of `id` to the cached pool of the stream it was allocated on, merging it with free neighbours
  /// of its segment. Returns the block size (0 when `id` is not live).
  std::uint64_t free(std::uint64_t id);
  /// The tensor of live block `id` was freed while the block stays allocated for another stream's queued work
  /// (record_stream; the block is returned by free() once that work is done). From now on the block no longer keeps
  /// its segment from being released on a retry: synchronize_and_free_events would free it first. No-op when `id`
  /// is not live or already marked.
  void mark_held(std::uint64_t id);
  /// empty_cache: releases every fully-free cached segment (expandable: unmaps every page wholly inside a free
  /// block); returns the bytes released.
  std::uint64_t release_cached_segments();
  [[nodiscard]] bool expandable() const { return expandable_; }

  [[nodiscard]] std::uint64_t capacity() const { return capacity_; }
  [[nodiscard]] std::uint64_t allocated() const { return allocated_; } ///< torch.cuda.memory_allocated
  [[nodiscard]] std::uint64_t reserved() const { return reserved_; } ///< torch.cuda.memory_reserved
  [[nodiscard]] std::uint64_t peak_reserved() const { return peak_reserved_; }
  [[nodiscard]] std::size_t segments() const { return num_segments_; }
  [[nodiscard]] std::size_t live_blocks() const { return live_.size(); }
  [[nodiscard]] long alloc_retries() const { return retries_; } ///< num_alloc_retries
  /// B reserved now that a failed cudaMalloc could not give back: reserved() less what release_cached_blocks would
  /// release after synchronize_and_free_events, i.e. less every segment none of whose blocks holds a live tensor
  /// (free, or held for another stream: mark_held). Expandable segments: allocated() less the held blocks (the live
  /// tensors' blocks; the free pages of a partly mapped page at a run's edge, under two pages per run, are counted as
  /// given back).
  [[nodiscard]] std::uint64_t unreclaimable() const;
  /// Most unreclaimable() after any malloc (with the block just handed out), B: the least memory the run could
  /// have had reserved at its worst moment had every cudaMalloc before it failed and flushed the cache.
  [[nodiscard]] std::uint64_t peak_unreclaimable() const { return peak_unreclaimable_; }
  /// Size of the live block of `id`, 0 if none.
  [[nodiscard]] std::uint64_t block_size(std::uint64_t id) const;

 private:
  using Index = std::uint32_t;
  static constexpr Index kNone = ~Index{0};

  struct Block {
    std::uint64_t addr = 0; ///< virtual address (segments get disjoint ranges; never reused)
    std::uint64_t size = 0;
    std::uint32_t stream = 0;
    PoolKind pool = PoolKind::SMALL;
    bool allocated = false;
    Index prev = kNone; ///< neighbours inside the segment
    Index next = kNone;
    bool unmapped = false; ///< expandable: a page-aligned free range whose pages are not mapped (not in a FreeSet)
    bool held = false; ///< allocated, its tensor freed: held for another stream (mark_held)
    Index segment = kNone; ///< index in segments_ (not expandable)
  };
  /// One cudaMalloc'd segment (not expandable): its size and how many of its blocks hold a live tensor.
  struct Segment {
    std::uint64_t size = 0;
    std::uint32_t live = 0;
  };
  /// One expandable segment: blocks from `head` in address order cover [base, base + mapped_end); beyond is the
  /// unmapped tail of the reserved address range.
  struct ExpandableSegment {
    std::uint64_t base = 0;
    std::uint64_t end = 0; ///< B of address range covered by blocks (a multiple of the page)
    Index head = kNone;
    Index tail = kNone; ///< last block
  };
  /// Free-block order of BlockComparator: (stream, size, address).
  using Key = std::tuple<std::uint32_t, std::uint64_t, std::uint64_t>;
  using FreeSet = std::map<Key, Index>;

  Index new_block(const Block& b);
  void drop_block(Index i);
  FreeSet& free_set(PoolKind p) { return p == PoolKind::SMALL ? small_ : large_; }
  void insert_free(Index i);
  void erase_free(Index i);
  [[nodiscard]] static bool should_split(const Block& b, std::uint64_t size);
  [[nodiscard]] static std::uint64_t page_of(PoolKind p) {
    return p == PoolKind::SMALL ? kExpandableSmallPage : kExpandableLargePage;
  }
  /// Expandable miss: maps pages for `size` in the (stream, pool) segment; kNone when the capacity refuses them.
  Index map_expandable(std::uint64_t size, std::uint32_t stream, PoolKind pool, bool ignore_capacity,
                       MallocResult& res);
  std::uint64_t unmap_free_pages();
  void link_after(Index at, Index fresh);
  /// A block of segment `seg` starts (+1) or stops (-1) holding a live tensor; keeps reclaimable_ current.
  void count_live(Index seg, int delta);
  void unlink(Index i, ExpandableSegment& seg);

  std::uint64_t capacity_ = 0;
  bool expandable_ = false;
  std::map<std::pair<std::uint32_t, PoolKind>, ExpandableSegment> expandable_segments_;
  std::uint64_t allocated_ = 0;
  std::uint64_t reserved_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::uint64_t next_addr_ = 0;
  std::size_t num_segments_ = 0;
  long retries_ = 0;
  std::vector<Segment> segments_;
  std::vector<Index> spare_segments_; ///< recycled entries of segments_
  std::uint64_t reclaimable_ = 0; ///< B of segments with no live tensor (not expandable)
  std::uint64_t held_ = 0; ///< B of held blocks (expandable)
  std::uint64_t peak_unreclaimable_ = 0;
  std::vector<Block> blocks_;
  std::vector<Index> spare_; ///< recycled entries of blocks_
  FreeSet small_;
  FreeSet large_;
  std::unordered_map<std::uint64_t, Index> live_; ///< id -> allocated block (lookups only: order never observed)
};

} // namespace zerosim::engine
