// One device's memory of one rank: allocated bytes by tag, the peak (whole run and steady state) with its by-tag
// breakdown, and the capacity check that turns an Alloc into an OOM (DESIGN.md "engine/"). Pure C++, no SimGrid.
#pragma once

#include "sim/program/program.hpp"
#include "sim/trace/run_result.hpp"

namespace zerosim::engine {

class MemoryPool {
public:
  /// @param capacity bytes this device holds; <= 0 means unlimited (host memory today).
  explicit MemoryPool(double capacity = 0) : capacity_(capacity) {}

  /// True when `bytes` more would still fit under the capacity (always true when unlimited).
  [[nodiscard]] bool fits(double bytes) const { return capacity_ <= 0 || total_ + bytes <= capacity_; }

  /// Adds `bytes` of `tag` at simulated time `time` (s); updates the peaks. Does not check the capacity.
  void alloc(program::MemTag tag, double bytes, double time, program::LabelId label);
  /// Removes `bytes` of `tag`.
  void free(program::MemTag tag, double bytes);
  /// The rank entered optimizer step `step`: from step 1 on, the steady-state peak starts with what is live now.
  void set_step(int step, double time);

  [[nodiscard]] double capacity() const { return capacity_; }
  [[nodiscard]] double total() const { return total_; }
  [[nodiscard]] double tag_bytes(program::MemTag t) const { return by_tag_[static_cast<std::size_t>(t)]; }
  [[nodiscard]] const trace::TagBytes& by_tag() const { return by_tag_; }
  [[nodiscard]] int step() const { return step_; }
  [[nodiscard]] bool used() const { return used_; }

  /// Summary for the result; steady_peak falls back to the whole-run peak when no step >= 1 was entered.
  [[nodiscard]] trace::RankMemory summary(std::uint32_t rank) const;

private:
  void observe(double time, program::LabelId label);

  double capacity_ = 0;
  double total_ = 0;
  trace::TagBytes by_tag_{};
  int step_ = -1;
  bool used_ = false;
  bool steady_seen_ = false;
  trace::MemoryPeak peak_;
  trace::MemoryPeak steady_peak_;
};

} // namespace zerosim::engine
