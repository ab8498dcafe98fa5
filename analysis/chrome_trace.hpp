// trace.json in the Chrome trace-event format (opens in Perfetto and chrome://tracing; format: "Trace Event
// Format", Google, docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
//
// Layout: a process per traced rank (pid = rank, named "rank N"), a thread per stream (tid = stream index, named
// after the stream), "X" complete events per span (ts/dur in microseconds, name = op label, cat = phase, args bytes
// and flops), "C" counter events of allocated memory by tag per rank and device (values in GiB = 2^30 B, the counter
// name says so), "i" instant events for step boundaries (on rank 0) and the OOM. Events are emitted in a fixed order.
#pragma once

#include "sim/trace/run_result.hpp"

#include <ostream>
#include <string>

namespace zerosim::analysis {

/// Writes the trace to `out` (one event per line).
void write_chrome_trace(std::ostream& out, const trace::RunResult& run, const std::string& title);

/// Writes the trace to `path` atomically (path.tmp + rename). Throws zerosim::Error on I/O failure.
void write_chrome_trace(const std::string& path, const trace::RunResult& run, const std::string& title);

} // namespace zerosim::analysis
