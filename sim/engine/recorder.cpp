#include "sim/engine/recorder.hpp"

#include <algorithm>

namespace zerosim::engine {

Recorder::Recorder(int trace_ranks, std::vector<program::StreamKind> stream_kinds)
    : trace_ranks_(trace_ranks), stream_kinds_(std::move(stream_kinds)) {}

trace::PhaseTimes& Recorder::phase_times(int step) {
  const auto i = static_cast<std::size_t>(std::max(step, 0));
  if (phase_busy_.size() <= i)
    phase_busy_.resize(i + 1);
  return phase_busy_[i];
}

double& Recorder::comm_busy(int step) {
  const auto i = static_cast<std::size_t>(std::max(step, 0));
  if (comm_busy_.size() <= i)
    comm_busy_.resize(i + 1, 0.0);
  return comm_busy_[i];
}

void Recorder::span(int rank, program::StreamId stream, const program::Op& op, double start, double end,
                    double bytes, double flops, int step) {
  if (rank == 0 && stream_kinds_.at(stream) == program::StreamKind::COMPUTE)
    phase_times(step).seconds[static_cast<std::size_t>(op.phase)] += end - start;
  if (!traced(rank))
    return;
  trace::Span s;
  s.rank = static_cast<std::uint32_t>(rank);
  s.stream = stream;
  s.start = start;
  s.end = end;
  s.label = op.label;
  s.phase = op.phase;
  s.op_kind = static_cast<std::uint8_t>(op.body.index());
  s.bytes = bytes;
  s.flops = flops;
  spans_.push_back(s);
}

void Recorder::comm_begin(double time) {
  if (comm_active_++ == 0)
    comm_open_since_ = time;
}

void Recorder::comm_end(double time, int step) {
  if (--comm_active_ == 0)
    comm_busy(step) += time - comm_open_since_;
}

void Recorder::mem_sample(int rank, double time, program::Device device, program::MemTag tag, double tag_bytes,
                          double total) {
  if (!traced(rank))
    return;
  samples_.push_back(trace::MemSample{static_cast<std::uint32_t>(rank), time, device, tag, tag_bytes, total});
}

void Recorder::step_begin(int step, double time) {
  const auto i = static_cast<std::size_t>(std::max(step, 0));
  if (step_start_.size() <= i)
    step_start_.resize(i + 1, 0.0);
  step_start_[i] = time;
}

void Recorder::step_end(int step, double time) {
  const auto i = static_cast<std::size_t>(std::max(step, 0));
  const double start = i < step_start_.size() ? step_start_[i] : 0.0;
  steps_.push_back(trace::StepTiming{step, start, time});
}

void Recorder::collective_traffic(program::CollectiveKind kind, double payload, double wire) {
  const auto k = static_cast<std::size_t>(kind);
  traffic_.collective_bytes[k] += payload;
  traffic_.collective_calls[k] += 1;
  traffic_.wire_bytes[k] += wire;
}

void Recorder::copy_traffic(program::CopyDir dir, double bytes) {
  traffic_.copy_bytes[static_cast<std::size_t>(dir)] += bytes;
}

void Recorder::finish(trace::RunResult& out) {
  out.steps = steps_;
  const std::size_t n = steps_.size();
  out.step_phase_busy.assign(n, trace::PhaseTimes{});
  out.step_comm_busy.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const auto s = static_cast<std::size_t>(std::max(steps_[i].step, 0));
    if (s < phase_busy_.size())
      out.step_phase_busy[i] = phase_busy_[s];
    if (s < comm_busy_.size())
      out.step_comm_busy[i] = comm_busy_[s];
  }
  out.traffic = traffic_;
  out.spans = std::move(spans_);
  out.mem_samples = std::move(samples_);
}

} // namespace zerosim::engine
