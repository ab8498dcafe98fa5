// Test support: one collective alone on a cluster, run through zerosim's engine (one run per process: the engine
// owns SimGrid's one Engine; use in_child.hpp for several runs in one test case).
#pragma once

#include "sim/engine/engine.hpp"
#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

namespace zerosim::test {

/// Simulated seconds of one `kind` of `size` bytes (nccl-tests size convention) over every rank of `cluster`, issued
/// on a COMM stream of the world group, with engine options `options`; -1 when the run did not finish.
inline double one_collective_seconds(const scenario::ClusterSpec& cluster, program::CollectiveKind kind, double size,
                                     const engine::EngineOptions& options = {}) {
  program::ProgramBuilder b;
  b.add_group("world");
  auto s = b.add_stream("comm", program::StreamKind::COMM);
  b.collective(s, program::Phase::GRAD_REDUCE, "c", kind, Bytes(size));
  const auto r = engine::run_simulation(cluster, b.build(1), options);
  return r.finished ? r.end_time : -1;
}

/// Engine options with `fidelity` and `fold` (defaults otherwise).
inline engine::EngineOptions engine_options(scenario::Fidelity fidelity,
                                            scenario::FoldPolicy fold = scenario::FoldPolicy::AUTO) {
  engine::EngineOptions o;
  o.fidelity = fidelity;
  o.fold = fold;
  return o;
}

} // namespace zerosim::test
