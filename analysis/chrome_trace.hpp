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

/// Where a trace of the first `steps` optimizer steps ends: rank 0's end of step `steps` - 1 (s, simulated). +inf
/// when `steps` is 0 (outputs.trace_steps' "all") or the run completed fewer steps (an OOM stop).
double traced_until(const trace::RunResult& run, int steps);

/// Writes the trace to `out` (one event per line). `steps` > 0 keeps the first `steps` optimizer steps
/// (outputs.trace_steps): spans and memory samples that start before traced_until(run, steps), their step marks,
/// and the OOM mark wherever it is; the process and thread names of every traced rank stay.
void write_chrome_trace(std::ostream& out, const trace::RunResult& run, const std::string& title, int steps = 0);

/// Writes the trace to `path` atomically (path.tmp + rename). Throws zerosim::Error on I/O failure.
void write_chrome_trace(const std::string& path, const trace::RunResult& run, const std::string& title, int steps = 0);

} // namespace zerosim::analysis
