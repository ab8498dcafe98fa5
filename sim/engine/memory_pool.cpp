#include "sim/engine/memory_pool.hpp"

#include "sim/engine/collective_choice.hpp"

#include <cmath>

namespace zerosim::engine {

namespace {
std::uint64_t whole_bytes(double b) { return b <= 0 ? 0 : static_cast<std::uint64_t>(std::ceil(b)); }
} // namespace

bool nccl_tree_connected(const scenario::ClusterSpec& cluster) {
  if (cluster.world_size() <= 2 || !cluster.p2p)
    return false;
  const collectives::TuneTopology topo = tune_topology(cluster);
  for (int k = 2; k <= 30; ++k)
    if (resolve_choice(cluster, topo, program::CollectiveKind::ALL_REDUCE, Bytes(std::ldexp(1.0, k))).algorithm ==
        collectives::Algorithm::TREE)
      return true;
  return false;
}

double nccl_buffer_bytes(const scenario::ClusterSpec& cluster, int communicators) {
  const int c = cluster.nccl_channels_effective();
  if (c <= 0 || communicators <= 0)
    return 0.0;
  int p2p_channels = 1; // pow2Up(C): the channels NCCL initialises (src/graph/paths.cc:864,870)
  while (p2p_channels < c)
    p2p_channels *= 2;
  const double g = kNcclAllocGranularity;
  const double metadata = 2.0 * g + 3.0 * g * p2p_channels;
  // The receiver's three FIFOs and its header, rounded up to the next 2 MiB multiple; the sender's header, 2 MiB.
  const double fifos = kNcclLlBuffSize + kNcclLl128BuffSize + kNcclBuffSize;
  const double pair = (std::floor(fifos / g) + 1.0) * g + g;
  const double peer_pairs = cluster.p2p ? (nccl_tree_connected(cluster) ? 2.0 : 1.0) : 0.0;
  return communicators * (metadata + peer_pairs * c * pair);
}

int nccl_communicators(int zero_stage, scenario::ProcessGroups groups) {
  if (groups == scenario::ProcessGroups::MPU)
    return 2;
  return zero_stage == 3 ? 2 : 1;
}

MemoryPool MemoryPool::caching(double capacity, double non_pytorch, bool expandable) {
  MemoryPool p(capacity);
  p.non_pytorch_ = non_pytorch;
  // What cudaMalloc can still obtain; a non-positive remainder leaves 1 B so that every segment fails.
  const double limit = capacity - non_pytorch;
  p.allocator_.emplace(capacity <= 0 ? 0 : limit >= 1 ? static_cast<std::uint64_t>(std::floor(limit)) : 1, expandable);
  return p;
}

double MemoryPool::counted(double bytes) const {
  if (!allocator_)
    return bytes;
  // A zero-byte tensor gets no block (the allocator returns a null pointer for size 0).
  const std::uint64_t b = whole_bytes(bytes);
  return b == 0 ? 0.0 : static_cast<double>(CachingAllocator::round_size(b));
}

void MemoryPool::observe(double time, program::LabelId label) {
  if (total_ > peak_.bytes || !used_) {
    peak_ = trace::MemoryPeak{total_, time, step_, label, by_tag_};
    pinned_at_peak_ = pinned_;
    pinned_by_tag_at_peak_ = pinned_by_tag_;
  }
  if (pinned_ > pinned_peak_)
    pinned_peak_ = pinned_;
  if (step_ >= 1 && (total_ > steady_peak_.bytes || !steady_seen_)) {
    steady_peak_ = trace::MemoryPeak{total_, time, step_, label, by_tag_};
    steady_seen_ = true;
  }
  const double r = reserved();
  if (r > reserved_peak_.bytes || !used_) {
    reserved_peak_ = trace::MemoryPeak{r, time, step_, label, by_tag_};
    reserved_peak_held_ = allocator_ ? static_cast<double>(allocator_->allocated()) : total_;
  }
}

void MemoryPool::alloc(program::MemTag tag, double bytes, double time, program::LabelId label, bool pinned) {
  by_tag_[static_cast<std::size_t>(tag)] += bytes;
  total_ += bytes;
  if (pinned) {
    pinned_ += bytes;
    pinned_by_tag_[static_cast<std::size_t>(tag)] += bytes;
  }
  observe(time, label);
  used_ = true;
}

void MemoryPool::free(program::MemTag tag, double bytes, bool pinned) {
  by_tag_[static_cast<std::size_t>(tag)] -= bytes;
  total_ -= bytes;
  if (pinned) {
    pinned_ -= bytes;
    pinned_by_tag_[static_cast<std::size_t>(tag)] -= bytes;
  }
}

MemoryPool::Outcome MemoryPool::allocate(std::uint64_t id, program::MemTag tag, double bytes, std::uint32_t stream,
                                         double time, program::LabelId label, bool force, bool pinned,
                                         const std::function<double()>& synchronize_events) {
  Outcome out;
  if (!allocator_) {
    out.ok = fits(bytes);
    out.needed = bytes;
    out.reserved = total_;
    if (out.ok || force)
      alloc(tag, bytes, time, label, pinned);
    return out;
  }
  if (whole_bytes(bytes) == 0) {
    alloc(tag, 0.0, time, label);
    return out;
  }
  double waited = 0;
  std::function<void()> sync;
  // After the first OOM of an on_oom: continue run, memory counts as unlimited: a cudaMalloc that fails goes on
  // without waiting for other streams' record_stream'd blocks. Those waits cannot happen in the real run (it stopped
  // at the OOM) and, with every later request over the capacity, they would wait on streams that wait on this one.
  if (synchronize_events && !(force && retries_at_oom_))
    sync = [&] { waited += synchronize_events(); };
  auto r = allocator_->malloc(id, whole_bytes(bytes), stream, false, sync);
  if (!retries_at_oom_)
    retry_wait_ += waited;
  out.cache_released = r.cache_released;
  if (!r.ok) {
    out.ok = false;
    out.needed = static_cast<double>(r.needed_segment);
    out.reserved = static_cast<double>(allocator_->reserved());
    if (!force)
      return out;
    // on_oom: continue runs on as if memory were unlimited; every later cudaMalloc beyond the capacity would count
    // as a retry, so the count (and the waits) stop at the first OOM.
    if (!retries_at_oom_)
      retries_at_oom_ = allocator_->alloc_retries();
    r = allocator_->malloc(id, whole_bytes(bytes), stream, true);
  }
  // Allocated counts the 512 B-rounded request (not an unsplit remainder of a large block, which PyTorch's
  // memory_allocated would include: at most 1 MiB per block; it shows in reserved - allocated instead).
  alloc(tag, counted(bytes), time + waited, label);
  return out;
}

void MemoryPool::release(std::uint64_t id, program::MemTag tag, double bytes, bool pinned) {
  if (allocator_)
    allocator_->free(id);
  free(tag, counted(bytes), pinned && !allocator_);
}

void MemoryPool::release_tensor(std::uint64_t id, program::MemTag tag, double bytes, bool pinned) {
  if (!allocator_) {
    release(id, tag, bytes, pinned);
    return;
  }
  allocator_->mark_held(id);
  free(tag, counted(bytes), false);
}

void MemoryPool::release_block(std::uint64_t id) {
  if (allocator_)
    allocator_->free(id);
}

void MemoryPool::set_step(int step, double time) {
  step_ = step;
  if (step_ >= 1 && !steady_seen_) {
    // What is live when the steady state begins counts towards its peak (label 0: no Alloc reached it).
    steady_peak_ = trace::MemoryPeak{total_, time, step_, 0, by_tag_};
    steady_seen_ = true;
  }
}

trace::RankMemory MemoryPool::summary(std::uint32_t rank) const {
  trace::RankMemory m;
  m.rank = rank;
  m.peak = peak_;
  m.steady_peak = steady_seen_ ? steady_peak_ : peak_;
  m.final_bytes = total_;
  m.final_by_tag = by_tag_;
  m.reserved_peak = reserved_peak_;
  m.reserved_peak_held = reserved_peak_held_;
  m.final_reserved = reserved();
  m.non_pytorch_bytes = non_pytorch_;
  m.nvidia_smi_peak = reserved_peak_.bytes + non_pytorch_;
  m.unreclaimable_peak = allocator_ ? static_cast<double>(allocator_->peak_unreclaimable()) : reserved_peak_.bytes;
  m.pinned_peak = pinned_peak_;
  m.pinned_at_peak = pinned_at_peak_;
  m.pinned_by_tag_at_peak = pinned_by_tag_at_peak_;
  m.alloc_retries = allocator_ ? retries_at_oom_.value_or(allocator_->alloc_retries()) : 0;
  m.alloc_retry_wait = retry_wait_;
  return m;
}

} // namespace zerosim::engine
