// The ring algorithm (Patarasuk & Yuan 2009, "Bandwidth optimal all-reduce algorithms for clusters of
// workstations", JPDC 69(2); NCCL's default for large payloads), as phases of aggregated flows.
#pragma once

#include "sim/collectives/collective_plan.hpp"

namespace zerosim::collectives {

/// Ring phases of `kind` over n >= 2 ranks for a payload of `size` bytes (nccl-tests convention).
/// All-reduce = reduce-scatter followed by all-gather on the same ring: every rank sends 2(n-1) chunks of S/n to
/// its successor, i.e. 2(n-1)/n·S bytes in 2(n-1) latency steps. All-gather and reduce-scatter: (n-1) chunks,
/// (n-1)/n·S bytes in n-1 steps. Reduce (to one root): a chain of n-1 links pipelined in chunks, each link carrying
/// S, so every rank sends S in n-1 steps (the root's send stands in for the chain's unused last link: the same
/// time, one flow more), plus the chain's pipeline fill of n - 2 chunks (PhasePlan::pipeline_fill_chunks). Returned
/// as ONE phase (peer +1) because a ring's steps are pipelined on the same
/// link: aggregating them into one flow gives the same bandwidth term, and latency_steps carries the α term.
/// Preconditions (checked by plan()): n >= 2, size > 0.
[[nodiscard]] std::vector<PhasePlan> ring_plan(program::CollectiveKind kind, Bytes size, int n);

/// ring_plan() on nodes of gpus_per_node GPUs: the same phase, with inter_node_steps = 2(nodes-1) for all-reduce
/// and nodes-1 for all-gather / reduce-scatter (NCCL src/graph/tuning.cc nInterSteps).
[[nodiscard]] std::vector<PhasePlan> ring_plan(program::CollectiveKind kind, Bytes size, int n, int gpus_per_node);

/// Number of ring steps: 2(n-1) for all-reduce, n-1 for all-gather / reduce-scatter / reduce.
[[nodiscard]] int ring_steps(program::CollectiveKind kind, int n);

/// Fraction of the payload each rank sends: 2(n-1)/n for all-reduce, (n-1)/n for all-gather / reduce-scatter, 1
/// for reduce (each link of its chain; the root sends nothing, so the mean over ranks is (n-1)/n: wire_bytes_per_rank).
/// Equal to nccl-tests' bus-bandwidth factor, which is defined so that busbw is the per-link ring bandwidth.
[[nodiscard]] double ring_wire_fraction(program::CollectiveKind kind, int n);

} // namespace zerosim::collectives
