// Executes one collective of one rank: picks the algorithm and protocol (scenario override or NCCL's tuner,
// sim/collectives/nccl_tuning.hpp), then runs the plan's phases as aggregated SimGrid flows (`flow` fidelity), as
// one message per algorithm step (`chunk`), or sleeps the modelled time (`analytic`). Internal to engine/ (includes SimGrid through stream_actor.hpp).
#pragma once

#include "sim/engine/collective_choice.hpp"
#include "sim/engine/stream_actor.hpp"

namespace zerosim::engine {

/// Runs collective `c` (op `op`) of rank `rank` on stream `stream`: rendezvous with the group, then the phases, and
/// records traffic, the communication window and the span. Ideal protocol ("none") with the ring reproduces the
/// alpha-beta closed form 2(n-1)/n·S/B + 2(n-1)·α exactly (collectives/analytic.cpp).
void run_collective(Simulation& sim, int rank, program::StreamId stream, const program::Op& op,
                    const program::Collective& c);

} // namespace zerosim::engine
