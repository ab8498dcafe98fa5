// memory.csv: the memory timeline of the traced ranks, one row per MemSample (allocated bytes of one tag after a
// change, the device total and its reserved bytes). Columns: time_s,rank,device,tag,bytes,total_bytes,reserved_bytes.
#pragma once

#include "sim/trace/run_result.hpp"

#include <ostream>
#include <string>

namespace zerosim::analysis {

/// Header line of memory.csv (without newline).
inline constexpr const char* kMemoryCsvHeader = "time_s,rank,device,tag,bytes,total_bytes,reserved_bytes";
/// The header of memory.csv files written before reserved_bytes (zerosim plot still reads them).
inline constexpr const char* kMemoryCsvHeaderV1 = "time_s,rank,device,tag,bytes,total_bytes";

/// Writes the header and one row per run.mem_samples entry, in recorder order. device is "gpu" or "host", tag
/// as program::to_string(MemTag), bytes as integers (allocations are whole bytes), time with 1 ns resolution;
/// reserved_bytes is the caching allocator's reserved memory after the change (GPU), the allocated total (host).
/// `steps` > 0 keeps the samples of the first `steps` optimizer steps (outputs.trace_steps; analysis::traced_until).
void write_memory_csv(std::ostream& out, const trace::RunResult& run, int steps = 0);

/// Writes to `path` atomically (path.tmp + rename). Throws zerosim::Error on I/O failure.
void write_memory_csv(const std::string& path, const trace::RunResult& run, int steps = 0);

} // namespace zerosim::analysis
