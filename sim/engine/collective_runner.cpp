// Collective execution at `chunk`, `flow` and `analytic` fidelity (DESIGN.md "engine/"; reference/simgrid_notes.md §7.1).
#include "sim/engine/collective_runner.hpp"

#include <algorithm>
#include <cmath>

namespace sg4 = simgrid::s4u;

namespace zerosim::engine {
namespace {

/// put_async needs a payload pointer; nothing reads it (the transfer's size is what is simulated).
char g_payload = 0;

std::uint64_t wire_size(double bytes) { return static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0))); }

int wrap(int x, int m) { return ((x % m) + m) % m; }

/// The peer rank `rank` sends to in phase `ph` (offset +off) among the m simulated ranks, nodes of g GPUs.
int peer_of(const collectives::PhasePlan& ph, int rank, int off, int m, int g) {
  switch (ph.scope) {
  case collectives::PeerScope::NODE: {
    const int base = rank / g * g;
    return base + wrap(rank - base + off, g);
  }
  case collectives::PeerScope::ACROSS_NODES: return wrap(rank + off * g, m);
  case collectives::PeerScope::GLOBAL: break;
  }
  return wrap(rank + off, m);
}

/// One-hop latency (s) of a phase as the analytic fidelity prices it: the ring's worst route for GLOBAL, the
/// intra-node hop for NODE, intra-node + one network hop for ACROSS_NODES (GPU -> leaf switch -> GPU).
double phase_route_latency(const Simulation& sim, const collectives::PhasePlan& ph) {
  const auto& c = *sim.cluster;
  switch (ph.scope) {
  case collectives::PeerScope::NODE: return c.intra_node.latency.value();
  case collectives::PeerScope::ACROSS_NODES: return c.intra_node.latency.value() + c.nic.latency.value();
  case collectives::PeerScope::GLOBAL: break;
  }
  return sim.ring_max_latency;
}

/// Bandwidth (B/s) of a phase at analytic fidelity: for GLOBAL the platform's slowest ring route (exactly what the
/// flows see uncontended) capped by the tuner's closed form, which knows about shared links; the closed form
/// otherwise.
double phase_bandwidth(const Simulation& sim, const collectives::PhasePlan& ph,
                       const collectives::TuneTopology& topo) {
  // GLOBAL: the slowest ring route, or less when the phase's flows share a link (the host bridge without p2p).
  if (ph.scope == collectives::PeerScope::GLOBAL)
    return std::min(sim.ring_min_bandwidth, collectives::phase_bandwidth(ph, topo).value());
  return collectives::phase_bandwidth(ph, topo).value();
}

double analytic_seconds(const Simulation& sim, const program::Collective& c, collectives::CollectiveChoice ch,
                        const collectives::TuneTopology& topo) {
  const int n = sim.world;
  if (ch.protocol == collectives::Protocol::NONE && ch.algorithm == collectives::Algorithm::RING)
    return collectives::analytic_time(c.kind, ch.algorithm, c.bytes, n,
                                      ByteRate(phase_bandwidth(sim, collectives::PhasePlan{}, topo)),
                                      Seconds(sim.ring_max_latency))
        .value();
  const auto phases = collectives::plan(c.kind, ch.algorithm, c.bytes, n, sim.cluster->gpus_per_node);
  if (phases.empty())
    return 0;
  const double factor = collectives::bandwidth_factor(c.kind, ch.algorithm, ch.protocol, topo);
  double t = collectives::base_latency(ch.algorithm, ch.protocol).value();
  for (const auto& ph : phases) {
    const double hop = phase_route_latency(sim, ph);
    const double lat = ch.protocol == collectives::Protocol::NONE
                           ? ph.latency_steps * hop
                           : std::max(collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value(), hop);
    t += lat + ph.bytes_per_rank.value() / (phase_bandwidth(sim, ph, topo) * factor);
  }
  return t;
}

/// The ranks and mailboxes of one phase for `rank` on `stream`: it sends to `peer`'s mailbox `to` and receives in
/// its own mailbox `mine` from `from` (the opposite peer), among the simulated ranks.
struct PhasePeers {
  int peer = 0;
  int from = 0;
  sg4::Mailbox* to = nullptr;
  sg4::Mailbox* mine = nullptr;
};

PhasePeers phase_peers(const Simulation& sim, int rank, program::StreamId stream, const collectives::PhasePlan& ph) {
  const int m = sim.ranks_simulated;
  const int g = sim.cluster->gpus_per_node;
  const std::size_t num_streams = sim.program->streams.size();
  PhasePeers p;
  p.peer = peer_of(ph, rank, ph.peer_offset, m, g);
  p.from = peer_of(ph, rank, -ph.peer_offset, m, g);
  p.to = sim.mailboxes[static_cast<std::size_t>(p.peer) * num_streams + stream];
  p.mine = sim.mailboxes[static_cast<std::size_t>(rank) * num_streams + stream];
  return p;
}

/// What `flow` and `chunk` fidelity share: plan the collective's phases (nothing to do without any), sleep the
/// protocol's base latency once, then call `body(phase, peers, factor)` for each phase in order, where `factor` is
/// the protocol's bandwidth factor (collectives::bandwidth_factor).
template <class Body>
void for_each_phase(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                    collectives::CollectiveChoice ch, const collectives::TuneTopology& topo, Body&& body) {
  const auto phases = collectives::plan(c.kind, ch.algorithm, c.bytes, sim.world, sim.cluster->gpus_per_node);
  if (phases.empty())
    return;
  const double factor = collectives::bandwidth_factor(c.kind, ch.algorithm, ch.protocol, topo);
  if (const double base = collectives::base_latency(ch.algorithm, ch.protocol).value(); base > 0)
    sg4::this_actor::sleep_for(base);
  for (const collectives::PhasePlan& ph : phases)
    body(ph, phase_peers(sim, rank, stream, ph), factor);
}

/// `flow` fidelity: per phase one aggregated flow to the peer and one from the opposite peer. The protocol's
/// bandwidth factor inflates the bytes on the wire (LL sends 8 B per 4 B of data...), so contention shares the
/// inflated load. Latency: the flows pay their route latency; with protocol NONE the remaining latency_steps - 1
/// hops are slept (reference/simgrid_notes.md §7.1); with an NCCL protocol the phase's modelled latency minus what
/// the flows paid is slept, after the base latency once. Folded runs keep the world's sizes and latency steps, pass
/// the flows among the simulated ranks, and pay the true ring's worst hop latency on every step (protocol NONE).
void run_flow_phases(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                     collectives::CollectiveChoice ch, const collectives::TuneTopology& topo) {
  const bool ideal = ch.protocol == collectives::Protocol::NONE;
  for_each_phase(sim, rank, stream, c, ch, topo, [&](const collectives::PhasePlan& ph, const PhasePeers& p,
                                                     double factor) {
    const auto [peer, from, to, mine] = p;
    sg4::CommPtr send = to->put_async(&g_payload, wire_size(ph.bytes_per_rank.value() / factor));
    char* got = nullptr;
    sg4::CommPtr recv = mine->get_async<char>(&got);
    send->wait();
    recv->wait();
    // The two flows already paid their route latencies (the slower of the two is what this rank waited).
    const double hop = sim.route_latency(rank, peer);
    const double paid = std::max(hop, sim.route_latency(from, rank));
    double extra = 0;
    if (!ideal)
      extra = collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value() - paid;
    else if (sim.folded() && ph.scope == collectives::PeerScope::GLOBAL)
      extra = ph.latency_steps * sim.ring_max_latency - paid;
    else
      extra = (ph.latency_steps - 1) * hop;
    if (extra > 0)
      sg4::this_actor::sleep_for(extra);
  });
}

/// `chunk` fidelity: every algorithm step is a message. A phase of latency_steps steps sends, per step, one chunk of
/// bytes_per_rank / latency_steps to the peer and receives one from the opposite peer, and waits for both before the
/// next step (a ring step forwards what the previous step received: Patarasuk & Yuan 2009 §3). Uncontended, a ring
/// all-reduce costs 2(n-1)·(α + S/(n·B)) = the alpha-beta closed form. Each step pays its own route latency; folded
/// GLOBAL phases pay the true ring's worst hop on every step (as `flow` does), and an NCCL protocol's modelled phase
/// latency minus what the steps paid is slept at the end of the phase. Under contention the steps of concurrent
/// collectives interleave on the shared links and SimGrid's max-min sharing splits each step's bandwidth.
void run_chunk_phases(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                      collectives::CollectiveChoice ch, const collectives::TuneTopology& topo) {
  const bool ideal = ch.protocol == collectives::Protocol::NONE;
  for_each_phase(sim, rank, stream, c, ch, topo, [&](const collectives::PhasePlan& ph, const PhasePeers& p,
                                                     double factor) {
    const int steps = std::max(ph.latency_steps, 1);
    const auto [peer, from, to, mine] = p;
    const std::uint64_t chunk = wire_size(ph.bytes_per_rank.value() / factor / steps);
    const double paid = std::max(sim.route_latency(rank, peer), sim.route_latency(from, rank));
    const double folded_extra =
        ideal && sim.folded() && ph.scope == collectives::PeerScope::GLOBAL ? sim.ring_max_latency - paid : 0.0;
    for (int s = 0; s < steps; ++s) {
      sg4::CommPtr send = to->put_async(&g_payload, chunk);
      char* got = nullptr;
      sg4::CommPtr recv = mine->get_async<char>(&got);
      send->wait();
      recv->wait();
      if (folded_extra > 0)
        sg4::this_actor::sleep_for(folded_extra);
    }
    if (!ideal) {
      const double extra = collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value() - steps * paid;
      if (extra > 0)
        sg4::this_actor::sleep_for(extra);
    }
  });
}

} // namespace

void run_collective(Simulation& sim, int rank, program::StreamId stream, const program::Op& op,
                    const program::Collective& c) {
  const int n = sim.world;
  const double t0 = sim.now();
  const int step = sim.ranks[static_cast<std::size_t>(rank)].step;
  const std::size_t num_streams = sim.program->streams.size();
  const collectives::TuneTopology topo = tune_topology(*sim.cluster);
  const collectives::CollectiveChoice ch = resolve_choice(*sim.cluster, c.kind, c.bytes);
  if (rank == 0) {
    Bytes wire(0);
    for (const auto& ph : collectives::plan(c.kind, ch.algorithm, c.bytes, n, sim.cluster->gpus_per_node))
      wire += ph.bytes_per_rank;
    sim.recorder->collective_traffic(c.kind, c.bytes.value(), wire.value());
    sim.recorder->comm_begin(t0);
  }
  if (n > 1) {
    // Rendezvous: an NCCL collective cannot finish on any rank before every rank has launched it.
    sim.channels[c.group * num_streams + stream].barrier->wait();
    if (sim.options.fidelity == scenario::Fidelity::FLOW)
      run_flow_phases(sim, rank, stream, c, ch, topo);
    else if (sim.options.fidelity == scenario::Fidelity::CHUNK)
      run_chunk_phases(sim, rank, stream, c, ch, topo);
    else if (const double t = analytic_seconds(sim, c, ch, topo); t > 0)
      sg4::this_actor::sleep_for(t);
  }
  const double t1 = sim.now();
  if (rank == 0)
    sim.recorder->comm_end(t1, step);
  sim.recorder->span(rank, stream, op, t0, t1, c.bytes.value(), 0.0, step);
}

} // namespace zerosim::engine
