// The recorder: stream actors report what they did; the recorder keeps spans and memory samples of the traced
// ranks, and rank 0's per-step busy times, step boundaries and traffic (data types: sim/trace/run_result.hpp).
// Pure C++, no SimGrid: times are passed in by the caller.
#pragma once

#include "sim/program/program.hpp"
#include "sim/trace/run_result.hpp"

#include <cstdint>
#include <vector>

namespace zerosim::engine {

class Recorder {
 public:
  /// @param trace_ranks ranks 0..trace_ranks-1 keep spans and memory samples
  Recorder(int trace_ranks, std::vector<program::StreamKind> stream_kinds);

  [[nodiscard]] bool traced(int rank) const { return rank < trace_ranks_; }

  /// A busy interval [start, end] (s) of one op of a stream. `step` is the rank's optimizer step when it started.
  void span(int rank, program::StreamId stream, const program::Op& op, double start, double end, double bytes,
            double flops, int step);
  /// rank 0 began a collective at `time` (s), on any stream: starts a comm-busy interval if none is open.
  void comm_begin(double time);
  /// rank 0 finished a collective at `time` during `step`: closes the comm-busy interval when none is left.
  void comm_end(double time, int step);

  void mem_sample(int rank, double time, program::Device device, program::MemTag tag, double tag_bytes, double total,
                  double reserved);

  void step_begin(int step, double time);
  void step_end(int step, double time);

  /// rank 0 issued a collective of `payload` B that sends `wire` B from the rank, an op of the program's optimizer
  /// `step` (StepProgram::step_of; -1, before step 0, counts as step 0): added to the whole run's and that step's
  /// traffic.
  void collective_traffic(program::CollectiveKind kind, double payload, double wire, int step);
  /// rank 0 issued a copy of `bytes` B, an op of `step` (as collective_traffic).
  void copy_traffic(program::CopyDir dir, double bytes, int step);

  /// Moves the collected data into `out` (steps, per-step busy, traffic, spans, memory samples).
  void finish(trace::RunResult& out);

  /// Rank 0's busy intervals by category, for the idle-time attribution of each step (s).
  struct Interval {
    double start = 0;
    double end = 0;
  };
  /// COPY: a GPU <-> host copy over PCIe (H2D, D2H); NVME: an NVMe read or write of a swap (offload to nvme).
  enum class Busy : std::uint8_t { COMPUTE, COMM, COPY, CPU, HOST, NVME, COUNT_ };
  static constexpr std::size_t kBusyKinds = static_cast<std::size_t>(Busy::COUNT_);

 private:
  trace::PhaseTimes& phase_times(int step);
  double& comm_busy(int step);
  trace::Traffic& step_traffic(int step);

  int trace_ranks_;
  std::vector<program::StreamKind> stream_kinds_;
  std::vector<trace::StepTiming> steps_;
  std::vector<double> step_start_;
  std::vector<trace::PhaseTimes> phase_busy_;
  std::vector<double> comm_busy_;
  int comm_active_ = 0;
  double comm_open_since_ = 0;
  trace::Traffic traffic_;
  std::vector<trace::Traffic> step_traffic_; ///< by step number
  std::vector<trace::Span> spans_;
  std::vector<trace::MemSample> samples_;
  std::vector<Interval> busy_[kBusyKinds];
};

/// Idle time of the compute stream inside [lo, hi] attributed by cause (trace::IdleTimes precedence), from rank 0's
/// busy intervals per category, indexed by Recorder::Busy (any order, may overlap). Exposed for tests.
[[nodiscard]] trace::IdleTimes attribute_idle(const std::vector<Recorder::Interval> (&busy)[Recorder::kBusyKinds],
                                              double lo, double hi);

} // namespace zerosim::engine
