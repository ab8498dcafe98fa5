// PyTorch CUDA caching allocator model; every rule cites c10/cuda/CUDACachingAllocator.cpp through
// reference/zero_semantics.md §6.
#include "sim/engine/caching_allocator.hpp"

namespace zerosim::engine {

std::uint64_t CachingAllocator::round_size(std::uint64_t bytes) {
  // round_size: below kMinBlockSize -> kMinBlockSize, else the next multiple of kMinBlockSize (§6, first bullet).
  if (bytes < kMinBlockSize)
    return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

std::uint64_t CachingAllocator::segment_size(std::uint64_t rounded) {
  // get_allocation_size (§6, third bullet).
  if (rounded <= kSmallSize)
    return kSmallBuffer;
  if (rounded < kMinLargeAlloc)
    return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

bool CachingAllocator::should_split(const Block& b, std::uint64_t size) {
  // should_split with max_split_size unlimited (§6, fourth bullet): small pool splits when at least one 512 B block
  // remains, the large pool only when more than 1 MiB remains.
  const std::uint64_t remaining = b.size - size;
  return b.pool == PoolKind::SMALL ? remaining >= kMinBlockSize : remaining > kSmallSize;
}

CachingAllocator::Index CachingAllocator::new_block(const Block& b) {
  if (!spare_.empty()) {
    const Index i = spare_.back();
    spare_.pop_back();
    blocks_[i] = b;
    return i;
  }
  blocks_.push_back(b);
  return static_cast<Index>(blocks_.size() - 1);
}

void CachingAllocator::drop_block(Index i) { spare_.push_back(i); }

void CachingAllocator::insert_free(Index i) {
  const Block& b = blocks_[i];
  free_set(b.pool).emplace(Key{b.stream, b.size, b.addr}, i);
}

void CachingAllocator::erase_free(Index i) {
  const Block& b = blocks_[i];
  free_set(b.pool).erase(Key{b.stream, b.size, b.addr});
}

std::uint64_t CachingAllocator::block_size(std::uint64_t id) const {
  const auto it = live_.find(id);
  return it == live_.end() ? 0 : blocks_[it->second].size;
}

CachingAllocator::MallocResult CachingAllocator::malloc(std::uint64_t id, std::uint64_t bytes, std::uint32_t stream,
                                                        bool ignore_capacity) {
  MallocResult res;
  const std::uint64_t size = round_size(bytes);
  const PoolKind pool = pool_of(size);
  FreeSet& fs = free_set(pool);

  Index bi = kNone;
  // get_free_block: best fit = the smallest cached block of this pool and stream that is large enough (pools are
  // ordered by (stream, size, address), so lower_bound finds it).
  if (auto it = fs.lower_bound(Key{stream, size, 0}); it != fs.end() && std::get<0>(it->first) == stream) {
    bi = it->second;
    fs.erase(it);
  } else {
    const std::uint64_t seg = segment_size(size);
    if (!ignore_capacity && capacity_ > 0 && reserved_ + seg > capacity_) {
      // cudaMalloc fails: release_cached_blocks frees every cached block that is a whole segment, then retry
      // (num_alloc_retries; §6 "On cudaMalloc failure").
      ++retries_;
      res.cache_released = release_cached_segments() > 0;
      if (reserved_ + seg > capacity_) {
        res.needed_segment = seg;
        return res; // OOM
      }
    }
    bi = new_block(Block{next_addr_, seg, stream, pool, false, kNone, kNone});
    next_addr_ += seg;
    reserved_ += seg;
    ++num_segments_;
    if (reserved_ > peak_reserved_)
      peak_reserved_ = reserved_;
    res.new_segment = seg;
  }

  if (should_split(blocks_[bi], size)) {
    Block rest = blocks_[bi];
    rest.addr += size;
    rest.size -= size;
    rest.prev = bi;
    const Index ri = new_block(rest); // may reallocate blocks_: index again below
    if (blocks_[ri].next != kNone)
      blocks_[blocks_[ri].next].prev = ri;
    blocks_[bi].next = ri;
    blocks_[bi].size = size;
    insert_free(ri);
  }
  Block& b = blocks_[bi];
  b.allocated = true;
  allocated_ += b.size; // memory_allocated counts the whole block, including an unsplit remainder
  live_[id] = bi;
  res.ok = true;
  res.block_bytes = b.size;
  return res;
}

std::uint64_t CachingAllocator::free(std::uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end())
    return 0;
  const Index bi = it->second;
  live_.erase(it);
  const std::uint64_t size = blocks_[bi].size;
  allocated_ -= size;
  blocks_[bi].allocated = false;
  // free_block / try_merge_blocks: absorb free neighbours of the same segment.
  const Index p = blocks_[bi].prev;
  if (p != kNone && !blocks_[p].allocated) {
    erase_free(p);
    blocks_[bi].addr = blocks_[p].addr;
    blocks_[bi].size += blocks_[p].size;
    blocks_[bi].prev = blocks_[p].prev;
    if (blocks_[bi].prev != kNone)
      blocks_[blocks_[bi].prev].next = bi;
    drop_block(p);
  }
  const Index n = blocks_[bi].next;
  if (n != kNone && !blocks_[n].allocated) {
    erase_free(n);
    blocks_[bi].size += blocks_[n].size;
    blocks_[bi].next = blocks_[n].next;
    if (blocks_[bi].next != kNone)
      blocks_[blocks_[bi].next].prev = bi;
    drop_block(n);
  }
  insert_free(bi);
  return size;
}

std::uint64_t CachingAllocator::release_cached_segments() {
  // release_blocks: a free block without neighbours is a whole segment; cudaFree it.
  std::uint64_t released = 0;
  for (FreeSet* fs : {&small_, &large_}) {
    for (auto it = fs->begin(); it != fs->end();) {
      const Index i = it->second;
      if (blocks_[i].prev == kNone && blocks_[i].next == kNone) {
        released += blocks_[i].size;
        reserved_ -= blocks_[i].size;
        --num_segments_;
        drop_block(i);
        it = fs->erase(it);
      } else {
        ++it;
      }
    }
  }
  return released;
}

} // namespace zerosim::engine
