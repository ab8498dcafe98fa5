#include "analysis/chrome_trace.hpp"

#include "analysis/atomic_file.hpp"
#include "analysis/json_numbers.hpp"
#include "analysis/summary.hpp"
#include "analysis/version.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

namespace zerosim::analysis {

using nlohmann::json;

namespace {

constexpr double kUs = 1e6; // trace-event timestamps are in microseconds

const char* counter_name(program::Device d) {
  return d == program::Device::GPU ? "GPU memory by tag (GiB = 2^30 B)" : "host memory by tag (GiB = 2^30 B)";
}

class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}
  /// Writes `e` as it is: its callers build every number with json_number (ts 1500.0 -> 1500, byte args as integers),
  /// so no event is copied or walked again here.
  void operator()(const json& e) {
    out_ << (first_ ? "\n" : ",\n") << e.dump(-1, ' ', false, json::error_handler_t::replace);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

} // namespace

double traced_until(const trace::RunResult& run, int steps) {
  if (steps <= 0 || run.steps.size() < static_cast<std::size_t>(steps))
    return std::numeric_limits<double>::infinity();
  return run.steps[static_cast<std::size_t>(steps) - 1].end;
}

void write_chrome_trace(std::ostream& out, const trace::RunResult& run, const std::string& title, int steps) {
  const double until = traced_until(run, steps);
  // Traced ranks: every rank with a span or a memory sample; rank 0 always (it carries the step marks).
  std::set<std::uint32_t> ranks{0};
  for (const auto& s : run.spans)
    ranks.insert(s.rank);
  for (const auto& m : run.mem_samples)
    ranks.insert(m.rank);
  if (run.oom)
    ranks.insert(run.oom->rank);

  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":"
      << json{{"zerosim_version", version()}, {"zerosim_build", build_id()}, {"title", title}}
             .dump(-1, ' ', false, json::error_handler_t::replace)
      << ",\"traceEvents\":[";
  EventWriter emit(out);

  // Metadata: process and thread names, in rank then stream order.
  for (auto r : ranks) {
    emit(json{{"ph", "M"},
              {"name", "process_name"},
              {"pid", r},
              {"tid", 0},
              {"args", {{"name", "rank " + std::to_string(r)}}}});
    emit(json{{"ph", "M"}, {"name", "process_sort_index"}, {"pid", r}, {"tid", 0}, {"args", {{"sort_index", r}}}});
    for (std::size_t t = 0; t < run.stream_names.size(); ++t) {
      emit(json{{"ph", "M"},
                {"name", "thread_name"},
                {"pid", r},
                {"tid", t},
                {"args", {{"name", run.stream_names[t]}}}});
      emit(json{{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", r}, {"tid", t}, {"args", {{"sort_index", t}}}});
    }
  }

  // Spans, sorted by (rank, stream, start, end) with the recorder's order breaking ties.
  std::vector<std::size_t> order(run.spans.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& x = run.spans[a];
    const auto& y = run.spans[b];
    return std::tie(x.rank, x.stream, x.start, x.end) < std::tie(y.rank, y.stream, y.start, y.end);
  });
  for (auto i : order) {
    const auto& s = run.spans[i];
    if (s.start >= until)
      continue;
    json args = json::object();
    if (s.bytes > 0)
      args["bytes"] = json_number(s.bytes);
    if (s.flops > 0)
      args["flops"] = json_number(s.flops);
    emit(json{{"ph", "X"},
              {"name", label_of(run.labels, s.label)},
              {"cat", program::to_string(s.phase)},
              {"pid", s.rank},
              {"tid", s.stream},
              {"ts", json_number(s.start * kUs)},
              {"dur", json_number((s.end - s.start) * kUs)},
              {"args", std::move(args)}});
  }

  // Memory counters: one "C" event per (rank, device, time) carrying every tag seen so far on that device, so the
  // tracks stack to the device total. Samples are replayed in recorder order (time-ordered per rank).
  std::map<std::pair<std::uint32_t, program::Device>, trace::TagBytes> current;
  std::map<std::pair<std::uint32_t, program::Device>, std::array<bool, trace::kNumTags>> seen;
  const auto& ms = run.mem_samples;
  for (std::size_t i = 0; i < ms.size(); ++i) {
    if (ms[i].time >= until)
      continue; // samples at one time are all kept or all dropped, so the "last at time" test below still holds
    const auto key = std::make_pair(ms[i].rank, ms[i].device);
    current[key][static_cast<std::size_t>(ms[i].tag)] = ms[i].bytes;
    seen[key][static_cast<std::size_t>(ms[i].tag)] = true;
    const bool last_at_time = i + 1 == ms.size() || ms[i + 1].rank != ms[i].rank || ms[i + 1].device != ms[i].device ||
                              ms[i + 1].time != ms[i].time;
    if (!last_at_time)
      continue;
    json args = json::object();
    for (std::size_t t = 0; t < trace::kNumTags; ++t)
      if (seen[key][t])
        args[program::to_string(static_cast<program::MemTag>(t))] = json_number(current[key][t] / kGiB);
    emit(json{{"ph", "C"},
              {"name", counter_name(ms[i].device)},
              {"pid", ms[i].rank},
              {"ts", json_number(ms[i].time * kUs)},
              {"args", std::move(args)}});
  }

  // Step boundaries (rank 0), then the OOM.
  for (const auto& st : run.steps) {
    if (steps > 0 && st.step >= steps)
      continue;
    emit(json{{"ph", "i"},
              {"s", "p"},
              {"name", "step " + std::to_string(st.step) + " begin"},
              {"cat", "step"},
              {"pid", 0},
              {"tid", 0},
              {"ts", json_number(st.start * kUs)}});
    emit(json{{"ph", "i"},
              {"s", "p"},
              {"name", "step " + std::to_string(st.step) + " end"},
              {"cat", "step"},
              {"pid", 0},
              {"tid", 0},
              {"ts", json_number(st.end * kUs)},
              {"args", {{"duration_s", json_number(st.duration())}}}});
  }
  if (run.oom) {
    const auto& o = *run.oom;
    emit(json{{"ph", "i"},
              {"s", "g"},
              {"name", "OOM"},
              {"cat", "oom"},
              {"pid", o.rank},
              {"tid", 0},
              {"ts", json_number(o.time * kUs)},
              {"args",
               {{"description", describe_oom(o, run.labels)},
                {"tag", program::to_string(o.tag)},
                {"requested_bytes", json_number(o.requested)},
                {"capacity_bytes", json_number(o.capacity)}}}});
  }
  out << "\n]}\n";
}

void write_chrome_trace(const std::string& path, const trace::RunResult& run, const std::string& title, int steps) {
  write_file_atomic(path, [&](std::ostream& o) { write_chrome_trace(o, run, title, steps); });
}

} // namespace zerosim::analysis
