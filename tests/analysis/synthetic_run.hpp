// Hand-built inputs for the analysis tests: a Scenario, a Workload and a RunResult written out by hand, so the
// tests do not depend on the loader, the generators or the engine. Every number below is used in a hand calculation
// in the tests.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"
#include "sim/workload/workload.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <string>

namespace zerosim::analysis::testing {

inline std::size_t tag(program::MemTag t) { return static_cast<std::size_t>(t); }
inline std::size_t phase(program::Phase p) { return static_cast<std::size_t>(p); }

/// 8 GPUs (1 node x 8), peak_lp 312 TFLOP/s, 80 GiB; b = 2, s = 1024, GA = 4. zero.throughput_timer_sync off, so the
/// steady window is steps >= 1 (first_steady_step) in the hand calculations below.
inline scenario::Scenario synthetic_scenario() {
  scenario::Scenario sc;
  sc.name = "synthetic";
  sc.model.name = "toy";
  sc.training.micro_batch = 2;
  sc.training.seq_len = 1024;
  sc.training.grad_accum = 4;
  sc.zero.stage = 3;
  sc.zero.throughput_timer_sync = false;
  sc.cluster.topology = "toy-node";
  sc.cluster.nodes = 1;
  sc.cluster.gpus_per_node = 8;
  sc.cluster.gpu.name = "ToyGPU";
  sc.cluster.gpu.memory = Bytes(80.0 * kGiB);
  sc.cluster.gpu.peak_lp = FlopRate(312e12);
  return sc;
}

/// Model FLOPs 6e12 and hardware FLOPs 8e12 per micro-batch.
inline workload::Workload synthetic_workload() {
  workload::Workload wl;
  wl.model_flops_per_micro_batch = Flops(6e12);
  wl.hardware_flops_per_micro_batch = Flops(8e12);
  return wl;
}

/// Three steps: step 0 [0, 3] s (warm-up), step 1 [3, 5] s, step 2 [5, 7.5] s. Compute busy by phase: step 1
/// fwd 0.5 + bwd 1.0 + opt 0.2 + grad_reduce 0.1 = 1.8 s, step 2 fwd 0.5 + bwd 1.1 + opt 0.2 = 1.8 s; comm busy
/// 0.6 s and 0.8 s. Compute-stream idle time (step - compute busy) by cause {comm, offload copy, cpu, other}:
/// step 0 {0.3, 0, 0, 1.2} (1.5 s), step 1 {0.1, 0.05, 0.05, 0} (0.2 s), step 2 {0.4, 0.1, 0.15, 0.05} (0.7 s).
/// Peaks: rank 0 10 GiB, rank 1 and 2 12 GiB (rank 1 is the worst: lowest rank on a tie).
inline trace::RunResult synthetic_run() {
  trace::RunResult r;
  r.world_size = 8;
  r.stream_names = {"compute", "comm"};
  r.labels = {"", "fwd block.0", "allreduce bucket 0", "alloc adam"};
  r.steps = {{0, 0.0, 3.0}, {1, 3.0, 5.0}, {2, 5.0, 7.5}};
  trace::PhaseTimes p0, p1, p2;
  p0.seconds[phase(program::Phase::FORWARD)] = 0.5;
  p0.seconds[phase(program::Phase::BACKWARD)] = 1.0;
  p1.seconds[phase(program::Phase::FORWARD)] = 0.5;
  p1.seconds[phase(program::Phase::BACKWARD)] = 1.0;
  p1.seconds[phase(program::Phase::OPTIMIZER)] = 0.2;
  p1.seconds[phase(program::Phase::GRAD_REDUCE)] = 0.1;
  p2.seconds[phase(program::Phase::FORWARD)] = 0.5;
  p2.seconds[phase(program::Phase::BACKWARD)] = 1.1;
  p2.seconds[phase(program::Phase::OPTIMIZER)] = 0.2;
  r.step_phase_busy = {p0, p1, p2};
  r.step_comm_busy = {0.3, 0.6, 0.8};
  r.step_idle = {{0.3, 0.0, 0.0, 1.2}, {0.1, 0.05, 0.05, 0.0}, {0.4, 0.1, 0.15, 0.05}};
  for (std::uint32_t rank = 0; rank < 3; ++rank) {
    trace::RankMemory m;
    m.rank = rank;
    m.peak.bytes = (rank == 0 ? 10.0 : 12.0) * kGiB;
    m.peak.time = 3.5;
    m.peak.step = 1;
    m.peak.label = 3;
    m.peak.by_tag[tag(program::MemTag::OPTIMIZER_STATES)] = 8.0 * kGiB;
    m.peak.by_tag[tag(program::MemTag::LP_PARAMS)] = m.peak.bytes - 8.0 * kGiB;
    m.steady_peak = m.peak;
    m.steady_peak.bytes -= 1.0 * kGiB;
    r.memory.push_back(m);
  }
  r.traffic.collective_bytes[0] = 4e9;
  r.traffic.collective_calls[0] = 3;
  r.traffic.wire_bytes[0] = 7e9;
  r.finished = true;
  r.end_time = 7.5;
  r.diagnostics = {"synthetic run"};
  // Traced rank 0 and 1: spans on both streams.
  r.spans.push_back({0, 0, 3.0, 3.5, 1, program::Phase::FORWARD, 0, 1e9, 2e12});
  r.spans.push_back({0, 1, 4.0, 4.6, 2, program::Phase::GRAD_REDUCE, 1, 4e9, 0});
  r.spans.push_back({1, 0, 3.0, 3.5, 1, program::Phase::FORWARD, 0, 1e9, 2e12});
  // Memory samples on rank 0: params 2 GiB at 0.5 s, activations 1 GiB at 3.25 s.
  // reserved: a 2 GiB segment, then a 2 GiB + 1 GiB one (the caching allocator's, here by hand).
  r.mem_samples.push_back(
      {0, 0.5, program::Device::GPU, program::MemTag::LP_PARAMS, 2.0 * kGiB, 2.0 * kGiB, 2.0 * kGiB});
  r.mem_samples.push_back(
      {0, 3.25, program::Device::GPU, program::MemTag::ACTIVATIONS, 1.0 * kGiB, 3.0 * kGiB, 4.0 * kGiB});
  return r;
}

/// synthetic_run() stopped (simulation.on_oom: stop) by rank 0's OOM at `time` s in step `step`: 3 GiB of activations
/// requested against 80 GiB of capacity.
inline trace::RunResult synthetic_run_stopped_by_oom(int step, double time) {
  trace::RunResult r = synthetic_run();
  trace::OomInfo o;
  o.rank = 0;
  o.time = time;
  o.step = step;
  o.tag = program::MemTag::ACTIVATIONS;
  o.requested = 3.0 * kGiB;
  o.capacity = 80.0 * kGiB;
  r.oom = o;
  r.finished = false;
  return r;
}

using zerosim::test::TempDir; // TempDir(tag): tests/support/temp_dir.hpp

/// True if any file in `dir` ends in ".tmp".
inline bool has_tmp_file(const std::filesystem::path& dir) {
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".tmp")
      return true;
  return false;
}

} // namespace zerosim::analysis::testing
