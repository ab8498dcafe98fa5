// Alpha-beta (Hockney) closed forms of the collectives: time = latency_steps·α + wire_bytes / β.
// Ring: Patarasuk & Yuan 2009 (JPDC 69(2)) §3; Thakur, Rabenseifner & Gropp 2005 (IJHPCA 19(1)) Table 1
// ("ring"/bucket rows). Assumes every rank has its own link of bandwidth β per direction and no contention: the
// `flow` fidelity of the engine must agree with these on an uncontended ring (DESIGN.md, collectives/).
#include "sim/collectives/collective_plan.hpp"

#include "sim/error.hpp"

#include <string>

namespace zerosim::collectives {

Seconds analytic_time(program::CollectiveKind kind, Algorithm algo, Bytes size, int n, ByteRate bw, Seconds alpha) {
  if (!(bw > ByteRate(0)))
    throw Error(std::string("collective ") + program::to_string(kind) + ": bandwidth must be > 0 B/s, got " +
                std::to_string(bw.value()));
  if (alpha < Seconds(0))
    throw Error(std::string("collective ") + program::to_string(kind) + ": latency must be >= 0 s, got " +
                std::to_string(alpha.value()));
  Seconds t(0);
  // The same phases the flow fidelity runs, each costing latency_steps·α plus its bytes at β (at fan_out·β for a
  // fan-out phase: its flows on as many links of a full mesh).
  for (const PhasePlan& p : plan(kind, algo, size, n))
    t += alpha * static_cast<double>(p.latency_steps) + p.bytes_per_rank / (bw * static_cast<double>(p.fan_out));
  return t;
}

} // namespace zerosim::collectives
