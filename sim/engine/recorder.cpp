#include "sim/engine/recorder.hpp"

#include <algorithm>
#include <array>

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

trace::Traffic& Recorder::step_traffic(int step) {
  const auto i = static_cast<std::size_t>(std::max(step, 0));
  if (step_traffic_.size() <= i)
    step_traffic_.resize(i + 1);
  return step_traffic_[i];
}

void Recorder::span(int rank, program::StreamId stream, const program::Op& op, double start, double end, double bytes,
                    double flops, int step) {
  if (rank == 0) {
    // Kernels and copies on the compute stream are "compute busy"; a collective there (overlap_comm off) blocks it
    // but is communication, as is any kernel on a communication stream (bucket flatten, interleave).
    const bool on_compute = stream_kinds_.at(stream) == program::StreamKind::COMPUTE;
    Busy cat = Busy::COMM;
    // The host (Python) thread's time is its own category: compute-stream idle while only the host works is the GPU
    // waiting for the host to issue work.
    const bool host = stream_kinds_.at(stream) == program::StreamKind::HOST;
    if (host)
      cat = Busy::HOST;
    else if (std::holds_alternative<program::CpuCompute>(op.body))
      cat = Busy::CPU;
    else if (const auto* cp = std::get_if<program::Copy>(&op.body); cp != nullptr && cp->dir != program::CopyDir::D2D)
      cat = cp->dir == program::CopyDir::NVME_READ || cp->dir == program::CopyDir::NVME_WRITE ? Busy::NVME : Busy::COPY;
    else if (!std::holds_alternative<program::Collective>(op.body) && on_compute)
      cat = Busy::COMPUTE;
    if (cat == Busy::COMPUTE)
      phase_times(step).seconds[static_cast<std::size_t>(op.phase)] += end - start;
    if (end > start)
      busy_[static_cast<std::size_t>(cat)].push_back(Interval{start, end});
  }
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
                          double total, double reserved) {
  if (!traced(rank))
    return;
  samples_.push_back(trace::MemSample{static_cast<std::uint32_t>(rank), time, device, tag, tag_bytes, total, reserved});
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

void Recorder::collective_traffic(program::CollectiveKind kind, double payload, double wire, int step) {
  const auto k = static_cast<std::size_t>(kind);
  for (trace::Traffic* t : {&traffic_, &step_traffic(step)}) {
    t->collective_bytes[k] += payload;
    t->collective_calls[k] += 1;
    t->wire_bytes[k] += wire;
  }
}

void Recorder::copy_traffic(program::CopyDir dir, double bytes, int step) {
  for (trace::Traffic* t : {&traffic_, &step_traffic(step)}) {
    if (dir == program::CopyDir::NVME_READ || dir == program::CopyDir::NVME_WRITE)
      t->nvme_bytes[dir == program::CopyDir::NVME_READ ? 0 : 1] += bytes;
    else
      t->copy_bytes[static_cast<std::size_t>(dir)] += bytes;
  }
}

namespace {

/// Sorted, merged union of `v` clipped to [lo, hi].
std::vector<Recorder::Interval> merged(const std::vector<Recorder::Interval>& v, double lo, double hi) {
  std::vector<Recorder::Interval> in;
  for (const auto& i : v)
    if (i.end > lo && i.start < hi)
      in.push_back({std::max(i.start, lo), std::min(i.end, hi)});
  std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  std::vector<Recorder::Interval> out;
  for (const auto& i : in) {
    if (!out.empty() && i.start <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

bool covers(const std::vector<Recorder::Interval>& m, double x) {
  auto it = std::upper_bound(m.begin(), m.end(), x, [](double v, const auto& i) { return v < i.start; });
  return it != m.begin() && x < std::prev(it)->end;
}

} // namespace

trace::IdleTimes attribute_idle(const std::vector<Recorder::Interval> (&busy)[Recorder::kBusyKinds], double lo,
                                double hi) {
  trace::IdleTimes t;
  if (!(hi > lo))
    return t;
  std::array<std::vector<Recorder::Interval>, Recorder::kBusyKinds> m;
  std::vector<double> cuts{lo, hi};
  for (std::size_t c = 0; c < Recorder::kBusyKinds; ++c) {
    m[c] = merged(busy[c], lo, hi);
    for (const auto& i : m[c]) {
      cuts.push_back(i.start);
      cuts.push_back(i.end);
    }
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  // Every elementary segment between two consecutive cut points is wholly inside or outside each union.
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const double a = cuts[k], b = cuts[k + 1], mid = 0.5 * (a + b), len = b - a;
    if (covers(m[0], mid))
      continue; // the compute stream was busy
    if (covers(m[1], mid))
      t.comm += len;
    else if (covers(m[2], mid))
      t.offload_copy += len;
    else if (covers(m[5], mid))
      t.offload_nvme += len;
    else if (covers(m[3], mid))
      t.cpu += len;
    else if (covers(m[4], mid))
      t.host += len;
    else
      t.other += len;
  }
  return t;
}

void Recorder::finish(trace::RunResult& out) {
  out.steps = steps_;
  const std::size_t n = steps_.size();
  out.step_phase_busy.assign(n, trace::PhaseTimes{});
  out.step_comm_busy.assign(n, 0.0);
  out.step_idle.assign(n, trace::IdleTimes{});
  out.step_traffic.assign(n, trace::Traffic{});
  for (std::size_t i = 0; i < n; ++i)
    out.step_idle[i] = attribute_idle(busy_, steps_[i].start, steps_[i].end);
  for (std::size_t i = 0; i < n; ++i) {
    const auto s = static_cast<std::size_t>(std::max(steps_[i].step, 0));
    if (s < phase_busy_.size())
      out.step_phase_busy[i] = phase_busy_[s];
    if (s < comm_busy_.size())
      out.step_comm_busy[i] = comm_busy_[s];
    if (s < step_traffic_.size())
      out.step_traffic[i] = step_traffic_[s];
  }
  out.traffic = traffic_;
  out.spans = std::move(spans_);
  out.mem_samples = std::move(samples_);
}

} // namespace zerosim::engine
