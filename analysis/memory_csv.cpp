#include "analysis/memory_csv.hpp"

#include "analysis/atomic_file.hpp"

#include <fmt/format.h>

namespace zerosim::analysis {

void write_memory_csv(std::ostream& out, const trace::RunResult& run) {
  out << kMemoryCsvHeader << '\n';
  for (const auto& m : run.mem_samples)
    out << fmt::format("{:.9f},{},{},{},{:.0f},{:.0f}\n", m.time, m.rank,
                       m.device == program::Device::GPU ? "gpu" : "host", program::to_string(m.tag), m.bytes, m.total);
}

void write_memory_csv(const std::string& path, const trace::RunResult& run) {
  write_file_atomic(path, [&](std::ostream& o) { write_memory_csv(o, run); });
}

} // namespace zerosim::analysis
