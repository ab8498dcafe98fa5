#include "analysis/memory_csv.hpp"

#include "analysis/atomic_file.hpp"
#include "analysis/chrome_trace.hpp"

#include <fmt/format.h>

namespace zerosim::analysis {

void write_memory_csv(std::ostream& out, const trace::RunResult& run, int steps) {
  const double until = traced_until(run, steps);
  out << kMemoryCsvHeader << '\n';
  for (const auto& m : run.mem_samples)
    if (m.time < until)
      out << fmt::format("{:.9f},{},{},{},{:.0f},{:.0f},{:.0f}\n", m.time, m.rank,
                         m.device == program::Device::GPU ? "gpu" : "host", program::to_string(m.tag), m.bytes, m.total,
                         m.reserved);
}

void write_memory_csv(const std::string& path, const trace::RunResult& run, int steps) {
  write_file_atomic(path, [&](std::ostream& o) { write_memory_csv(o, run, steps); });
}

} // namespace zerosim::analysis
