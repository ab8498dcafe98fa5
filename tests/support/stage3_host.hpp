// Test support: a ZeRO-3 program generated with the host-thread model, and the gathered parameters' buffers in it
// (their allocating stream and their frees), for the host-thread tests of tests/zero and tests/engine.
#pragma once

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/zero_program.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::test {

/// Host costs of distinct magnitudes, so that a hand count can tell them apart: op launch 1e-5 s, module hook
/// 1e-3 s, param hook 1e-4 s.
inline scenario::HostSpec distinct_host_costs() {
  return scenario::HostSpec{Seconds(1e-5), Seconds(1e-3), Seconds(1e-4)};
}

/// A ZeRO-3 program of `wl` at N_d = 2 over 2 steps with distinct_host_costs(), and its "gathered ..." buffers.
struct Stage3HostProgram {
  program::StepProgram program;
  std::size_t host = 0; ///< index of the "host" stream (streams.size() when absent)
  std::size_t compute = 0; ///< index of the "compute" stream
  std::map<program::BufferId, std::size_t> gathered; ///< each gathered parameter's buffer -> its allocating stream
  /// Every freed buffer -> (stream, kind) of each of its frees, in stream order.
  std::map<program::BufferId, std::vector<std::pair<std::size_t, program::FreeKind>>> frees;
};

/// Stage3HostProgram of `wl` with `z` made stage 3 with no persistent params and max_reuse_distance 0 (every
/// submodule released after each use while the trace is not complete); `z`'s other settings are kept.
inline Stage3HostProgram stage3_host_program(const workload::Workload& wl, scenario::ZeroConfig z) {
  z.stage = 3;
  z.stage3_param_persistence_threshold = 0;
  z.stage3_max_reuse_distance = 0;
  Stage3HostProgram out;
  const zero::GeneratorInput in{wl, z, 2, 2, 0.0, distinct_host_costs()};
  out.program = zero::generate_program(in);
  const auto& p = out.program;
  const auto stream_named = [&](const std::string& name) {
    for (std::size_t s = 0; s < p.streams.size(); ++s)
      if (p.streams[s].name == name)
        return s;
    return p.streams.size();
  };
  out.host = stream_named("host");
  out.compute = stream_named("compute");
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    for (const auto& op : p.streams[s].ops) {
      if (const auto* a = std::get_if<program::Alloc>(&op.body);
          a != nullptr && p.labels[op.label].rfind("gathered ", 0) == 0)
        out.gathered[a->buffer] = s;
      if (const auto* f = std::get_if<program::Free>(&op.body))
        out.frees[f->buffer].emplace_back(s, f->kind);
    }
  return out;
}

} // namespace zerosim::test
