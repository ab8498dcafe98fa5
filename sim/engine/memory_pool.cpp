#include "sim/engine/memory_pool.hpp"

namespace zerosim::engine {

void MemoryPool::observe(double time, program::LabelId label) {
  if (total_ > peak_.bytes || !used_) {
    peak_ = trace::MemoryPeak{total_, time, step_, label, by_tag_};
  }
  if (step_ >= 1 && (total_ > steady_peak_.bytes || !steady_seen_)) {
    steady_peak_ = trace::MemoryPeak{total_, time, step_, label, by_tag_};
    steady_seen_ = true;
  }
}

void MemoryPool::alloc(program::MemTag tag, double bytes, double time, program::LabelId label) {
  by_tag_[static_cast<std::size_t>(tag)] += bytes;
  total_ += bytes;
  observe(time, label);
  used_ = true;
}

void MemoryPool::free(program::MemTag tag, double bytes) {
  by_tag_[static_cast<std::size_t>(tag)] -= bytes;
  total_ -= bytes;
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
  return m;
}

} // namespace zerosim::engine
