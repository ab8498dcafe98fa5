// Collective algorithms as pure data: how many bytes each rank puts on the wire, to which peer, in how many
// latency-bound steps; plus the alpha-beta closed forms and nccl-tests' bus-bandwidth factors.
// No SimGrid here: the engine executes plans at `flow` fidelity and uses analytic_time() at `analytic` fidelity.
#pragma once

#include "sim/program/program.hpp"
#include "sim/quantity.hpp"

#include <string>
#include <vector>

namespace zerosim::collectives {

enum class Algorithm { RING };

/// One phase of a collective at `flow` fidelity: every rank r sends `bytes_per_rank` to rank (r + peer_offset) mod n
/// as one aggregated flow, and the phase costs `latency_steps` hop latencies in total (the flow pays one; the engine
/// adds latency_steps - 1 more).
struct PhasePlan {
  Bytes bytes_per_rank;
  int peer_offset = 1;
  int latency_steps = 0;
};

/// The phases of `kind` over `n` ranks for a payload of `size` bytes (nccl-tests convention: all-reduce in/out size,
/// all-gather output size, reduce-scatter input size). Ring: all-reduce sends 2(n-1)/n·S in 2(n-1) steps;
/// all-gather and reduce-scatter send (n-1)/n·S in n-1 steps (nccl-tests PERFORMANCE.md; Patarasuk & Yuan 2009).
/// n == 1 gives no phase. Throws zerosim::Error if n < 1 or size < 0.
[[nodiscard]] std::vector<PhasePlan> plan(program::CollectiveKind kind, Algorithm algo, Bytes size, int n);

/// Alpha-beta time of `kind` on n ranks with per-link bandwidth `bw` and per-hop latency `alpha`:
/// ring all-reduce 2(n-1)/n·S/bw + 2(n-1)·alpha; ring all-gather / reduce-scatter (n-1)/n·S/bw + (n-1)·alpha.
/// Zero for n == 1.
[[nodiscard]] Seconds analytic_time(program::CollectiveKind kind, Algorithm algo, Bytes size, int n, ByteRate bw,
                                    Seconds alpha);

/// Bytes one rank sends on the wire: the sum of plan() bytes_per_rank.
[[nodiscard]] Bytes wire_bytes_per_rank(program::CollectiveKind kind, Algorithm algo, Bytes size, int n);

/// nccl-tests bus-bandwidth factor: busbw = algbw x factor, with algbw = S / time.
/// all-reduce 2(n-1)/n; all-gather and reduce-scatter (n-1)/n (nccl-tests PERFORMANCE.md).
[[nodiscard]] double bus_bandwidth_factor(program::CollectiveKind kind, int n);

[[nodiscard]] const char* to_string(Algorithm);

} // namespace zerosim::collectives
