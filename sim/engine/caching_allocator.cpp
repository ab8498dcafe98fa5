// PyTorch CUDA caching allocator model; every rule cites c10/cuda/CUDACachingAllocator.cpp through
// reference/zero_semantics.md §6.
#include "sim/engine/caching_allocator.hpp"

#include <algorithm>

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
                                                        bool ignore_capacity,
                                                        const std::function<void()>& synchronize_events) {
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
  } else if (expandable_) {
    bi = map_expandable(size, stream, pool, ignore_capacity, res);
    if (bi == kNone) {
      // The mapping failed: unmap every page wholly inside a free block (all streams), then retry once.
      ++retries_;
      if (synchronize_events)
        synchronize_events();
      res.cache_released = unmap_free_pages() > 0;
      bi = map_expandable(size, stream, pool, ignore_capacity, res);
      if (bi == kNone)
        return res; // OOM (needed_segment set by map_expandable)
    }
  } else {
    const std::uint64_t seg = segment_size(size);
    if (!ignore_capacity && capacity_ > 0 && reserved_ + seg > capacity_) {
      // cudaMalloc fails: release_cached_blocks frees every cached block that is a whole segment, then retry
      // (num_alloc_retries; §6 "On cudaMalloc failure").
      ++retries_;
      if (synchronize_events)
        synchronize_events();
      res.cache_released = release_cached_segments() > 0;
      if (reserved_ + seg > capacity_) {
        res.needed_segment = seg;
        return res; // OOM
      }
    }
    Index si = kNone;
    if (!spare_segments_.empty()) {
      si = spare_segments_.back();
      spare_segments_.pop_back();
      segments_[si] = Segment{seg, 0};
    } else {
      si = static_cast<Index>(segments_.size());
      segments_.push_back(Segment{seg, 0});
    }
    reclaimable_ += seg; // no live tensor yet; the block handed out below takes it back
    bi = new_block(Block{next_addr_, seg, stream, pool, false, kNone, kNone, false, false, si});
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
    if (expandable_) {
      auto& seg = expandable_segments_.at({stream, pool});
      if (seg.tail == bi)
        seg.tail = ri;
    }
  }
  Block& b = blocks_[bi];
  b.allocated = true;
  b.held = false;
  allocated_ += b.size; // memory_allocated counts the whole block, including an unsplit remainder
  live_[id] = bi;
  if (!expandable_)
    count_live(b.segment, +1);
  peak_unreclaimable_ = std::max(peak_unreclaimable_, unreclaimable());
  res.ok = true;
  res.block_bytes = b.size;
  return res;
}

void CachingAllocator::count_live(Index seg, int delta) {
  Segment& s = segments_[seg];
  if (delta > 0 && s.live++ == 0)
    reclaimable_ -= s.size;
  else if (delta < 0 && --s.live == 0)
    reclaimable_ += s.size;
}

std::uint64_t CachingAllocator::unreclaimable() const {
  return expandable_ ? allocated_ - held_ : reserved_ - reclaimable_;
}

void CachingAllocator::mark_held(std::uint64_t id) {
  const auto it = live_.find(id);
  if (it == live_.end() || blocks_[it->second].held)
    return;
  Block& b = blocks_[it->second];
  b.held = true;
  if (expandable_)
    held_ += b.size;
  else
    count_live(b.segment, -1);
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
  // A held block's tensor stopped counting at mark_held; any other block's stops now.
  if (blocks_[bi].held && expandable_)
    held_ -= size;
  else if (!blocks_[bi].held && !expandable_)
    count_live(blocks_[bi].segment, -1);
  blocks_[bi].held = false;
  // free_block / try_merge_blocks: absorb free neighbours of the same segment (expandable: mapped ones only).
  ExpandableSegment* seg = expandable_ ? &expandable_segments_.at({blocks_[bi].stream, blocks_[bi].pool}) : nullptr;
  const Index p = blocks_[bi].prev;
  if (p != kNone && !blocks_[p].allocated && !blocks_[p].unmapped) {
    if (seg != nullptr && seg->head == p)
      seg->head = bi;
    erase_free(p);
    blocks_[bi].addr = blocks_[p].addr;
    blocks_[bi].size += blocks_[p].size;
    blocks_[bi].prev = blocks_[p].prev;
    if (blocks_[bi].prev != kNone)
      blocks_[blocks_[bi].prev].next = bi;
    drop_block(p);
  }
  const Index n = blocks_[bi].next;
  if (n != kNone && !blocks_[n].allocated && !blocks_[n].unmapped) {
    if (seg != nullptr && seg->tail == n)
      seg->tail = bi;
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
  if (expandable_)
    return unmap_free_pages();
  // release_blocks: a free block without neighbours is a whole segment; cudaFree it.
  std::uint64_t released = 0;
  for (FreeSet* fs : {&small_, &large_}) {
    for (auto it = fs->begin(); it != fs->end();) {
      const Index i = it->second;
      if (blocks_[i].prev == kNone && blocks_[i].next == kNone) {
        released += blocks_[i].size;
        reserved_ -= blocks_[i].size;
        reclaimable_ -= blocks_[i].size; // a whole free segment: counted as reclaimable until now
        spare_segments_.push_back(blocks_[i].segment);
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

void CachingAllocator::link_after(Index at, Index fresh) {
  // Inserts `fresh` right after `at` in its segment's block list.
  blocks_[fresh].prev = at;
  blocks_[fresh].next = blocks_[at].next;
  if (blocks_[fresh].next != kNone)
    blocks_[blocks_[fresh].next].prev = fresh;
  blocks_[at].next = fresh;
}

void CachingAllocator::unlink(Index i, ExpandableSegment& seg) {
  const Index p = blocks_[i].prev, n = blocks_[i].next;
  if (p != kNone)
    blocks_[p].next = n;
  if (n != kNone)
    blocks_[n].prev = p;
  if (seg.head == i)
    seg.head = n;
  if (seg.tail == i)
    seg.tail = p;
  drop_block(i);
}

CachingAllocator::Index CachingAllocator::map_expandable(std::uint64_t size, std::uint32_t stream, PoolKind pool,
                                                         bool ignore_capacity, MallocResult& res) {
  auto [it, created] = expandable_segments_.try_emplace({stream, pool});
  ExpandableSegment& seg = it->second;
  if (created) {
    // "we allocate enough address space to map basically the entire physical memory of the GPU": a range of its own.
    seg.base = next_addr_;
    next_addr_ += 1ULL << 46;
    ++num_segments_;
  }
  const std::uint64_t page = page_of(pool);
  // The lowest address at which `size` fits by mapping pages: a run of non-allocated blocks (mapped-free or
  // unmapped) long enough, or one that reaches the end of the covered range (it can grow into the tail); else the
  // tail itself.
  Index start = kNone;
  for (Index i = seg.head; i != kNone && start == kNone; i = blocks_[i].next) {
    if (blocks_[i].allocated)
      continue;
    std::uint64_t run = 0;
    Index j = i;
    for (; j != kNone && !blocks_[j].allocated; j = blocks_[j].next)
      run += blocks_[j].size;
    if (run >= size || j == kNone)
      start = i;
  }
  const std::uint64_t from = start == kNone ? seg.base + seg.end : blocks_[start].addr;
  const std::uint64_t to = from + size;
  // Pages to map: the unmapped blocks of the run up to `to` (page-aligned, mapped from their start), and the tail.
  std::uint64_t new_bytes = 0;
  for (Index j = start; j != kNone && blocks_[j].addr < to; j = blocks_[j].next)
    if (blocks_[j].unmapped)
      new_bytes += std::min(blocks_[j].size, (to - blocks_[j].addr + page - 1) / page * page);
  const std::uint64_t covered = seg.base + seg.end;
  const std::uint64_t tail_bytes = to > covered ? (to - covered + page - 1) / page * page : 0;
  new_bytes += tail_bytes;
  if (!ignore_capacity && capacity_ > 0 && reserved_ + new_bytes > capacity_) {
    res.needed_segment = new_bytes;
    return kNone;
  }
  // Map: split each overlapped unmapped block into a mapped prefix and an unmapped rest, extend into the tail.
  for (Index j = start; j != kNone && blocks_[j].addr < to; j = blocks_[j].next) {
    if (!blocks_[j].unmapped)
      continue;
    const std::uint64_t mapped = std::min(blocks_[j].size, (to - blocks_[j].addr + page - 1) / page * page);
    if (mapped < blocks_[j].size) {
      Block rest = blocks_[j];
      rest.addr += mapped;
      rest.size -= mapped;
      const Index ri = new_block(rest);
      link_after(j, ri);
      if (seg.tail == j)
        seg.tail = ri;
      blocks_[j].size = mapped;
    }
    blocks_[j].unmapped = false;
  }
  if (tail_bytes > 0) {
    const Index ti = new_block(Block{covered, tail_bytes, stream, pool, false, kNone, kNone, false});
    if (seg.tail == kNone) {
      seg.head = seg.tail = ti;
    } else {
      link_after(seg.tail, ti);
      seg.tail = ti;
    }
    seg.end += tail_bytes;
    if (start == kNone)
      start = ti;
  }
  // Merge the run from `start` into one free block covering at least `size` (taken out of the free set).
  if (!blocks_[start].unmapped && !blocks_[start].allocated)
    erase_free(start);
  while (blocks_[start].size < size) {
    const Index n = blocks_[start].next;
    if (!blocks_[n].unmapped)
      erase_free(n);
    blocks_[start].size += blocks_[n].size;
    unlink(n, seg);
  }
  reserved_ += new_bytes;
  if (reserved_ > peak_reserved_)
    peak_reserved_ = reserved_;
  res.new_segment = new_bytes;
  return start;
}

std::uint64_t CachingAllocator::unmap_free_pages() {
  // "unmap all the memory in our segment corresponding to empty physical pages": for every free mapped block, the
  // pages lying wholly inside it become an unmapped block; an unmapped end of a segment is given back to the tail.
  std::uint64_t released = 0;
  for (auto& [key, seg] : expandable_segments_) {
    const std::uint64_t page = page_of(key.second);
    for (Index i = seg.head; i != kNone;) {
      const Index next = blocks_[i].next;
      Block& b = blocks_[i];
      if (b.allocated || b.unmapped) {
        i = next;
        continue;
      }
      const std::uint64_t off = b.addr - seg.base;
      const std::uint64_t lo = (off + page - 1) / page * page, hi = (off + b.size) / page * page;
      if (hi <= lo) {
        i = next;
        continue;
      }
      erase_free(i);
      const std::uint64_t left = lo - off, right = off + b.size - hi;
      Index mid = i;
      if (left > 0) {
        Block m = blocks_[i];
        m.addr = seg.base + lo;
        m.size = hi - lo;
        mid = new_block(m);
        link_after(i, mid);
        if (seg.tail == i)
          seg.tail = mid;
        blocks_[i].size = left;
        insert_free(i);
      } else {
        blocks_[i].size = hi - lo;
      }
      if (right > 0) {
        Block r = blocks_[mid];
        r.addr = seg.base + hi;
        r.size = right;
        const Index ri = new_block(r);
        link_after(mid, ri);
        if (seg.tail == mid)
          seg.tail = ri;
        insert_free(ri);
      }
      blocks_[mid].unmapped = true;
      released += hi - lo;
      i = next;
    }
    // Coalesce neighbouring unmapped blocks, then trim an unmapped end.
    for (Index i = seg.head; i != kNone;) {
      const Index n = blocks_[i].next;
      if (blocks_[i].unmapped && n != kNone && blocks_[n].unmapped) {
        blocks_[i].size += blocks_[n].size;
        unlink(n, seg);
        continue;
      }
      i = n;
    }
    while (seg.tail != kNone && blocks_[seg.tail].unmapped) {
      seg.end -= blocks_[seg.tail].size;
      unlink(seg.tail, seg);
    }
  }
  reserved_ -= released;
  return released;
}

} // namespace zerosim::engine
