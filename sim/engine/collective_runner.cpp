// Collective execution at `chunk`, `flow` and `analytic` fidelity (DESIGN.md "engine/"; reference/simgrid_notes.md §7.1).
#include "sim/engine/collective_runner.hpp"

#include "sim/collectives/tree.hpp"
#include "topologies/builder/platform_builder.hpp"

#include <simgrid/simix.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace sg4 = simgrid::s4u;

namespace zerosim::engine {
namespace {

/// put_async needs a payload pointer; nothing reads it (the transfer's size is what is simulated).
char g_payload = 0;

std::uint64_t wire_size(double bytes) { return static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0))); }

int wrap(int x, int m) { return ((x % m) + m) % m; }

/// Starts `comm` (set up, not yet started). A latency-free comm is started inside one kernel call
/// (simcall_answered; the comm's own start runs directly within it, SimGrid 3.32 simix.hpp) with
/// Simulation::starting_latency_free set: SimGrid starts the network action, and calls the latency-factor callback,
/// synchronously in that call when the comm's other side is there (CommImpl::isend / irecv / start), so the mark
/// reaches this comm and no other, whatever other comm of the same hosts and size starts at the same time (another
/// stream's collective, a copy). A mailbox comm starts when its second side is posted, so both sides of a latency-free
/// comm are started here; its sender and receiver are in the same phase (every phase runs on all ranks of a
/// stream), except where a phase's message meets the next phase's opposite-direction receive on a cluster without
/// split flows (phase_peers): then the later side's phase decides.
void start_comm(Simulation& sim, const sg4::CommPtr& comm, bool latency_free) {
  if (!latency_free) {
    comm->start();
    return;
  }
  simgrid::kernel::actor::simcall_answered([&sim, &comm] {
    sim.starting_latency_free = true;
    try {
      comm->start();
    } catch (...) { // the exception goes back to the actor; no later comm may see the mark
      sim.starting_latency_free = false;
      throw;
    }
    sim.starting_latency_free = false;
  });
}

/// Mailbox send of `bytes` (the payload pointer is never read), started as start_comm.
sg4::CommPtr put_comm(Simulation& sim, sg4::Mailbox* to, std::uint64_t bytes, bool latency_free) {
  if (!latency_free)
    return to->put_async(&g_payload, bytes);
  sg4::CommPtr c = to->put_init(&g_payload, bytes);
  start_comm(sim, c, true);
  return c;
}

/// Mailbox receive into `got`, started as start_comm.
sg4::CommPtr get_comm(Simulation& sim, sg4::Mailbox* mine, char** got, bool latency_free) {
  if (!latency_free)
    return mine->get_async<char>(got);
  sg4::CommPtr c = mine->get_init()->set_dst_data(reinterpret_cast<void**>(got), sizeof(void*));
  start_comm(sim, c, true);
  return c;
}

/// Host-to-host transfer of `bytes` (Comm::sendto_async), started as start_comm.
sg4::CommPtr sendto_comm(Simulation& sim, sg4::Host* src, sg4::Host* dst, std::uint64_t bytes, bool latency_free) {
  if (!latency_free)
    return sg4::Comm::sendto_async(src, dst, bytes);
  sg4::CommPtr c = sg4::Comm::sendto_init(src, dst);
  c->set_payload_size(bytes);
  start_comm(sim, c, true);
  return c;
}

/// The peer rank `rank` sends to in phase `ph` (offset +off) among the m simulated ranks, nodes of g GPUs.
int peer_of(const collectives::PhasePlan& ph, int rank, int off, int m, int g) {
  switch (ph.scope) {
  case collectives::PeerScope::NODE: {
    const int base = rank / g * g;
    return base + wrap(rank - base + off, g);
  }
  case collectives::PeerScope::ACROSS_NODES:
    return wrap(rank + off * g, m);
  case collectives::PeerScope::GLOBAL:
    break;
  }
  return wrap(rank + off, m);
}

// ---- Rail-aligned node crossings (per-GPU NICs: topology::per_gpu_nics). NCCL builds one ring per channel and
// keeps each channel's node crossing on one rail (NIC i of a node to NIC i of the next, with PXN moving the data to
// the GPU of that rail over NVLink first), so a ring's node-crossing traffic spreads over all the node's NICs. The
// platform routes a GPU -> GPU flow through the sender's and receiver's own NICs (across rails through the spine),
// so a GLOBAL-scope flow between two nodes is split into nics_per_node sub-flows of 1/nics_per_node of the bytes,
// sub-flow r from the GPU of NIC r on the sending node to the GPU of NIC r on the receiving node. The sender starts
// them (Comm::sendto_async) and, once they are all done, releases the receiver's arrival semaphore; the receiver
// acquires it instead of receiving a message, so the hand-off costs no extra latency. At `chunk` fidelity, which
// sends a message per algorithm step, only rail 0's sub-flow is simulated (1/nics_per_node of the bytes, the share
// of every rail): the rails of a split are loaded alike, so one stands for all, and eight flows per node crossing
// per step made a 1024-rank chunk run 7x slower (bench/collective_sweep.sh). PXN: NCCL moves the data over NVLink
// to the GPU on the destination's rail before the NIC, and rotates its channels' rings so that every GPU's NVLink
// carries the ring's bytes each way. The aggregated ring leaves the exiting GPU's NVLink egress and the entering
// GPU's NVLink ingress idle; one more flow, from the sender to the GPU of the sender's node with the receiver's local
// index, carries the bytes over exactly those two NVLinks, so a crossing step is capped by NVLink as in NCCL. It
// starts after the rail route's latency minus its own, so that, NVLink-bound, it ends at the NVLink hop + network
// latency + bytes / NVLink bandwidth: the pipelined NVLink-then-NIC path pays both latencies in series.

/// Whether the phase's flow from rank a to rank b is split over the NICs.
bool splits(const Simulation& sim, const collectives::PhasePlan& ph, int a, int b) {
  const auto& c = *sim.cluster;
  const int g = c.gpus_per_node;
  return ph.scope == collectives::PeerScope::GLOBAL && c.nodes > 1 && topology::per_gpu_nics(c) && a / g != b / g;
}

/// Whether the cluster may split flows (per-GPU NICs on several nodes). Its phases of negative peer offset (the
/// tree's broadcast) then use their own mailboxes and semaphores: a rank that receives a split transfer takes no
/// mailbox message, so a message of the next phase in the other direction, sent early by a neighbour, must not wait
/// in the mailbox the rank still reads in this phase (it would never be taken: deadlock).
bool split_capable(const Simulation& sim) { return sim.cluster->nodes > 1 && topology::per_gpu_nics(*sim.cluster); }
int direction(const Simulation& sim, const collectives::PhasePlan& ph) {
  return split_capable(sim) && ph.peer_offset < 0 ? 1 : 0;
}

/// Arrival semaphores, one per (rank, stream, direction) of the current simulation. SimGrid objects of an earlier
/// simulation in the same process are left alone (released references would touch a destroyed engine), hence the
/// leak.
sg4::Semaphore* arrival(const Simulation& sim, int rank, program::StreamId stream, int dir) {
  struct Registry {
    const Simulation* sim = nullptr;
    double start = -1;
    std::map<std::tuple<int, program::StreamId, int>, sg4::SemaphorePtr> sems;
  };
  static auto* reg = new Registry();
  if (reg->sim != &sim || reg->start != sim.start_time) {
    for (auto& [key, sem] : reg->sems)
      (void)sem.detach();
    reg->sems.clear();
    reg->sim = &sim;
    reg->start = sim.start_time;
  }
  auto& sem = reg->sems[{rank, stream, dir}];
  if (!sem)
    sem = sg4::Semaphore::create(0);
  return sem.get();
}

/// Starts the rail sub-flows of a split transfer of `bytes` from rank a to rank b (see splits()): one per NIC, or
/// only rail 0's at chunk fidelity.
std::vector<sg4::CommPtr> start_split(Simulation& sim, int a, int b, double bytes, bool latency_free) {
  const auto& c = *sim.cluster;
  const int g = c.gpus_per_node;
  const int nics = c.nics_per_node;
  const int per_nic = g / nics; // GPUs per NIC (topology::nic_of_gpu)
  const int rails = sim.options.fidelity == scenario::Fidelity::CHUNK ? 1 : nics;
  std::vector<sg4::CommPtr> comms;
  comms.reserve(static_cast<std::size_t>(rails) + 1); // + the PXN flow exchange() may add
  for (int r = 0; r < rails; ++r) {
    sg4::Host* src = sim.platform.gpus[static_cast<std::size_t>(a / g * g + r * per_nic)];
    sg4::Host* dst = sim.platform.gpus[static_cast<std::size_t>(b / g * g + r * per_nic)];
    comms.push_back(sendto_comm(sim, src, dst, wire_size(bytes / nics), latency_free));
  }
  return comms;
}

/// Route latency (s) of the phase's flow from rank a to rank b as the flows pay it: the rail-aligned route (GPU 0 of
/// a's node to GPU 0 of b's node, NIC 0 to NIC 0) when the flow is split, else SimGrid's route.
double flow_latency(Simulation& sim, const collectives::PhasePlan& ph, int a, int b) {
  const int g = sim.cluster->gpus_per_node;
  return splits(sim, ph, a, b) ? sim.route_latency(a / g * g, b / g * g) : sim.route_latency(a, b);
}

/// Guards the comm handles of one exchange(): when the scope ends, the handles whose comm has not completed go to
/// sim.orphan_comms instead of being dropped (see Simulation::orphan_comms). exchange() waits for every comm it
/// starts, so this only acts while an OOM stop unwinds a killed actor. Declare it after the handles it guards.
class OrphanGuard {
 public:
  OrphanGuard(Simulation& sim, std::vector<sg4::CommPtr>& sub, sg4::CommPtr& send, sg4::CommPtr& recv)
      : sim_(sim), sub_(sub), send_(send), recv_(recv) {}
  OrphanGuard(const OrphanGuard&) = delete;
  OrphanGuard& operator=(const OrphanGuard&) = delete;
  ~OrphanGuard() {
    for (auto& c : sub_)
      keep(c);
    keep(send_);
    keep(recv_);
  }

 private:
  void keep(sg4::CommPtr& c) { sim_.keep_if_running(c); }

  Simulation& sim_;
  std::vector<sg4::CommPtr>& sub_;
  sg4::CommPtr& send_;
  sg4::CommPtr& recv_;
};

/// One rank's part of one message of a phase: sends `bytes` to the peer and receives from the opposite peer
/// (a mailbox message, or a split transfer across nodes: rail sub-flows plus the PXN NVLink flow), and waits for
/// both. With `latency_free` what the rank sends and receives starts without route latency (start_comm).
void exchange(Simulation& sim, int rank, program::StreamId stream, const collectives::PhasePlan& ph, int peer, int from,
              sg4::Mailbox* to, sg4::Mailbox* mine, std::uint64_t bytes, bool latency_free = false) {
  const bool split_out = splits(sim, ph, rank, peer);
  const bool split_in = splits(sim, ph, from, rank);
  std::vector<sg4::CommPtr> sub;
  sg4::CommPtr send;
  sg4::CommPtr recv;
  const OrphanGuard guard(sim, sub, send, recv);
  char* got = nullptr;
  if (split_out) {
    sub = start_split(sim, rank, peer, static_cast<double>(bytes), latency_free);
  } else {
    send = put_comm(sim, to, bytes, latency_free);
  }
  if (!split_in)
    recv = get_comm(sim, mine, &got, latency_free);
  if (const int g = sim.cluster->gpus_per_node, pxn = rank / g * g + peer % g; split_out && pxn != rank) {
    // PXN hop (see the note above start_split): over the sender's and the rail GPU's NVLinks.
    const double delay = latency_free ? 0.0 : flow_latency(sim, ph, rank, peer) - sim.route_latency(rank, pxn);
    if (delay > 0)
      sg4::this_actor::sleep_for(delay);
    sub.push_back(sendto_comm(sim, sim.platform.gpus[static_cast<std::size_t>(rank)],
                              sim.platform.gpus[static_cast<std::size_t>(pxn)], bytes, latency_free));
  }
  if (split_out) {
    for (auto& c : sub)
      c->wait();
    arrival(sim, peer, stream, direction(sim, ph))->release();
  } else {
    send->wait();
  }
  if (split_in)
    arrival(sim, rank, stream, direction(sim, ph))->acquire();
  else
    recv->wait();
}

/// One rank's part of a fan-out phase (PhasePlan::fan_out > 1: DIRECT, one node, so no flow is split over NICs):
/// sends `bytes` / fan_out to each of the peers at offsets peer_offset .. peer_offset + fan_out - 1 (their mailboxes)
/// and takes fan_out messages from its own mailbox (from the peers at the opposite offsets), all concurrently, and
/// waits for all of them. The messages of a phase are alike, so which incoming flow a receive matches does not
/// matter; every rank posts its puts when it starts the phase, after the collective's rendezvous, so all of a
/// phase's messages are in the mailboxes before any message of the rank's next phase can be. With `latency_free` the
/// flows start without route latency (start_comm).
void exchange_fan(Simulation& sim, int rank, program::StreamId stream, const collectives::PhasePlan& ph, double bytes,
                  bool latency_free = false) {
  const int m = sim.ranks_simulated;
  const int g = sim.cluster->gpus_per_node;
  const std::size_t num_streams = sim.program->streams.size();
  const int f = ph.fan_out;
  std::vector<sg4::CommPtr> sends;
  std::vector<sg4::CommPtr> recvs;
  sg4::CommPtr none[4];
  const OrphanGuard send_guard(sim, sends, none[0], none[1]);
  const OrphanGuard recv_guard(sim, recvs, none[2], none[3]);
  std::vector<char*> got(static_cast<std::size_t>(f), nullptr);
  const std::uint64_t each = wire_size(bytes / f);
  sg4::Mailbox* mine = sim.mailboxes[static_cast<std::size_t>(rank) * num_streams + stream];
  for (int k = 0; k < f; ++k) {
    const int peer = peer_of(ph, rank, ph.peer_offset + k, m, g);
    sends.push_back(
        put_comm(sim, sim.mailboxes[static_cast<std::size_t>(peer) * num_streams + stream], each, latency_free));
  }
  for (int k = 0; k < f; ++k)
    recvs.push_back(get_comm(sim, mine, &got[static_cast<std::size_t>(k)], latency_free));
  for (auto& c : sends)
    c->wait();
  for (auto& c : recvs)
    c->wait();
}

/// The largest route latency (s) among the flows a fan-out phase sends from and receives at `rank`.
double fan_latency(Simulation& sim, const collectives::PhasePlan& ph, int rank) {
  const int m = sim.ranks_simulated;
  const int g = sim.cluster->gpus_per_node;
  double lat = 0;
  for (int k = 0; k < ph.fan_out; ++k) {
    const int off = ph.peer_offset + k;
    lat = std::max({lat, sim.route_latency(rank, peer_of(ph, rank, off, m, g)),
                    sim.route_latency(peer_of(ph, rank, -off, m, g), rank)});
  }
  return lat;
}

/// The slowest route latency (s) among all the flows of a fan-out phase, over every simulated rank (computed once
/// per (scope, peer_offset, fan_out), which decide the peers, peer_of): what decides, for every rank alike, whether the
/// phase goes latency-free (flow_phase).
double fan_phase_latency(Simulation& sim, const collectives::PhasePlan& ph) {
  const auto key = std::make_tuple(static_cast<int>(ph.scope), ph.peer_offset, ph.fan_out);
  if (const auto it = sim.fan_route_cache.find(key); it != sim.fan_route_cache.end())
    return it->second;
  double lat = 0;
  for (int r = 0; r < sim.ranks_simulated; ++r)
    lat = std::max(lat, fan_latency(sim, ph, r));
  sim.fan_route_cache.emplace(key, lat);
  return lat;
}

/// The ring's world summary (topology::ring_route_summary) on a cluster with per-GPU NICs, whose node-crossing ring
/// hops are rail-aligned; nullopt otherwise (the engine's measured ring routes are then exact). Computed once per run
/// (Simulation::rail_ring).
const std::optional<topology::RingRouteSummary>& rail_ring(const Simulation& sim) { return sim.rail_ring; }

/// The collective's CollectivePlan (the tuner's choice for its kind and size, the phases on the world, their
/// bandwidth factors under sim.tune), computed on first use and kept in sim.collective_plans: every input is fixed for
/// the run, so the ranks and repeats of a collective share one.
const CollectivePlan& collective_plan(Simulation& sim, const program::Collective& c) {
  const auto key = std::make_pair(static_cast<int>(c.kind), c.bytes.value());
  if (const auto it = sim.collective_plans.find(key); it != sim.collective_plans.end())
    return it->second;
  CollectivePlan p;
  p.choice = resolve_choice(*sim.cluster, sim.tune, c.kind, c.bytes);
  p.phases = collectives::plan(c.kind, p.choice.algorithm, c.bytes, sim.world, sim.cluster->gpus_per_node);
  for (const collectives::PhasePlan& ph : p.phases)
    p.factors.push_back(
        collectives::phase_bandwidth_factor(c.kind, p.choice.algorithm, p.choice.protocol, ph, sim.tune));
  return sim.collective_plans.emplace(key, std::move(p)).first->second;
}

/// One-hop latency (s) of a phase as the analytic fidelity prices it: the ring's worst route for GLOBAL (the
/// rail-aligned one with per-GPU NICs), the intra-node hop for NODE, intra-node + one network hop for ACROSS_NODES
/// (GPU -> leaf switch -> GPU).
double phase_route_latency(const Simulation& sim, const collectives::PhasePlan& ph) {
  const auto& c = *sim.cluster;
  switch (ph.scope) {
  case collectives::PeerScope::NODE:
    return c.intra_node.latency.value();
  case collectives::PeerScope::ACROSS_NODES:
    return c.intra_node.latency.value() + c.nic.latency.value();
  case collectives::PeerScope::GLOBAL:
    break;
  }
  if (const auto& rail = rail_ring(sim))
    return rail->max_latency;
  return sim.ring_max_latency;
}

/// Bandwidth (B/s) of a phase at analytic fidelity: for GLOBAL the platform's slowest ring route (exactly what the
/// flows see uncontended; with per-GPU NICs the rail-aligned hop of nics_per_node NICs) capped by the tuner's closed
/// form, which knows about shared links; the closed form otherwise.
double phase_bandwidth(const Simulation& sim, const collectives::PhasePlan& ph, const collectives::TuneTopology& topo) {
  // GLOBAL: the slowest ring route, or less when the phase's flows share a link (the host bridge without p2p).
  if (ph.scope == collectives::PeerScope::GLOBAL) {
    const auto& rail = rail_ring(sim);
    return std::min(rail ? rail->min_bandwidth : sim.ring_min_bandwidth,
                    collectives::phase_bandwidth(ph, topo).value());
  }
  return collectives::phase_bandwidth(ph, topo).value();
}

/// A collective's duration (s) at `analytic` fidelity, from its CollectivePlan `cp` (collective_plan): the ring's
/// alpha-beta form for protocol NONE's ring, else the protocol's base latency plus, per phase, its latency and its
/// bytes at the phase's bandwidth times its cached bandwidth factor; 0 without any phase.
double analytic_seconds(const Simulation& sim, const program::Collective& c, const CollectivePlan& cp,
                        const collectives::TuneTopology& topo) {
  const int n = sim.world;
  const collectives::CollectiveChoice ch = cp.choice;
  if (ch.protocol == collectives::Protocol::NONE && ch.algorithm == collectives::Algorithm::RING)
    return collectives::analytic_time(c.kind, ch.algorithm, c.bytes, n,
                                      ByteRate(phase_bandwidth(sim, collectives::PhasePlan{}, topo)),
                                      Seconds(phase_route_latency(sim, collectives::PhasePlan{})))
        .value();
  if (cp.phases.empty())
    return 0;
  double t = collectives::base_latency(ch.algorithm, ch.protocol).value();
  for (std::size_t i = 0; i < cp.phases.size(); ++i) {
    const collectives::PhasePlan& ph = cp.phases[i];
    const double factor = cp.factors[i];
    const double hop = phase_route_latency(sim, ph);
    // An NCCL protocol's phase costs its modelled latency, as at `flow` (whose flows go latency-free when one hop of
    // their route is more than that: flow_phase).
    const double lat = ch.protocol == collectives::Protocol::NONE
                           ? ph.latency_steps * hop
                           : collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value();
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
  if (direction(sim, ph) != 0) { // see split_capable()
    p.to = sg4::Mailbox::by_name(p.to->get_name() + "-reverse");
    p.mine = sg4::Mailbox::by_name(p.mine->get_name() + "-reverse");
  }
  return p;
}

/// What `flow` and `chunk` fidelity share: plan the collective's phases (nothing to do without any), sleep the
/// protocol's base latency once, then call `body(phase, peers, factor)` for each phase in order, where `factor` is
/// the phase's bandwidth factor under NCCL's caps (collectives::phase_bandwidth_factor).
template <class Body>
void for_each_phase(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c, Body&& body) {
  const CollectivePlan& cp = collective_plan(sim, c);
  if (cp.phases.empty())
    return;
  if (const double base = collectives::base_latency(cp.choice.algorithm, cp.choice.protocol).value(); base > 0)
    sg4::this_actor::sleep_for(base);
  for (std::size_t i = 0; i < cp.phases.size(); ++i)
    body(cp.phases[i], phase_peers(sim, rank, stream, cp.phases[i]), cp.factors[i]);
}

/// One phase at `flow` fidelity: one aggregated flow to the peer and one from the opposite peer (fan_out flows each
/// way for a fan-out phase, exchange_fan). The protocol's bandwidth factor inflates the bytes on the wire (LL sends
/// 8 B per 4 B of data...), so contention shares the inflated load. Latency: the flows pay their route latency; with
/// protocol NONE the remaining latency_steps - 1 hops are slept (reference/simgrid_notes.md §7.1); with an NCCL
/// protocol the phase's modelled latency minus what the flows paid is slept (nccl_tuning.hpp phase_latency: NCCL's
/// per-step table plus each step's route latency beyond it, TuneTopology::intra_step_extra / inter_step_extra).
/// Where that modelled latency is below one hop of the flows' routes (the links carry Simple's latencies, 3.4 us
/// NVLink and 14 us network on the presets, while NCCL's LL tree prices a 2-node phase at 7 x 0.6 + 5.0 = 9.2 us),
/// the phase's flows start without route latency (start_comm) and the modelled latency is slept whole: the phase
/// costs what NCCL's model says, as the tuner and `analytic` price it. The rule is the same for a fan-out (DIRECT)
/// phase, judged by the slowest of all its flows' routes (fan_phase_latency): its flows pay their routes when the
/// modelled latency covers them, else none does, so that uncontended every phase costs its modelled latency at
/// `flow` as at `analytic` (where a Simple phase's modelled latency is below its route: DIRECT on a node without
/// p2p, whose host-staged route takes two PCIe links and the host bridge while NCCL prices one PCI hop). Folded runs
/// keep the world's sizes and latency steps, pass the flows among the simulated ranks, and pay the true ring's worst
/// hop latency on every step (protocol NONE).
void flow_phase(Simulation& sim, int rank, program::StreamId stream, collectives::CollectiveChoice ch,
                const collectives::TuneTopology& topo, const collectives::PhasePlan& ph, const PhasePeers& p,
                double factor) {
  const bool ideal = ch.protocol == collectives::Protocol::NONE;
  const auto [peer, from, to, mine] = p;
  const bool fan = ph.fan_out > 1;
  // The flows pay their route latencies (the slowest is what this rank waits), unless the phase's slowest route
  // (phase_route_latency, or fan_phase_latency for a fan-out phase: the same for every rank of the phase, so that all
  // its flows go one way) is more than its modelled latency: then every flow of the phase goes latency-free.
  const double hop = fan ? fan_latency(sim, ph, rank) : flow_latency(sim, ph, rank, peer);
  const double route = fan ? hop : std::max(hop, flow_latency(sim, ph, from, rank));
  const double modelled = ideal ? 0.0 : collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value();
  const bool latency_free = !ideal && modelled < (fan ? fan_phase_latency(sim, ph) : phase_route_latency(sim, ph));
  if (fan)
    exchange_fan(sim, rank, stream, ph, ph.bytes_per_rank.value() / factor, latency_free);
  else
    exchange(sim, rank, stream, ph, peer, from, to, mine, wire_size(ph.bytes_per_rank.value() / factor), latency_free);
  const double paid = latency_free ? 0.0 : route;
  double extra = 0;
  if (!ideal)
    extra = modelled - paid;
  else if (sim.folded() && ph.scope == collectives::PeerScope::GLOBAL)
    extra = ph.latency_steps * sim.ring_max_latency - paid;
  else
    extra = (ph.latency_steps - 1) * hop;
  if (extra > 0)
    sg4::this_actor::sleep_for(extra);
}

/// `flow` fidelity: every phase as flow_phase.
void run_flow_phases(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                     collectives::CollectiveChoice ch, const collectives::TuneTopology& topo) {
  for_each_phase(sim, rank, stream, c, [&](const collectives::PhasePlan& ph, const PhasePeers& p, double factor) {
    flow_phase(sim, rank, stream, ch, topo, ph, p, factor);
  });
}

/// Most messages one tree phase sends per rank at `chunk` fidelity (tree_pipeline_phase): NCCL's chunk count grows
/// with the size (2048 per phase for 16 GiB on 16 channels); above this the messages carry several chunks each.
constexpr int kMaxTreeMessages = 256;

/// One phase (reduce up or broadcast down) of NCCL's tree with the ideal or Simple protocol at `chunk` fidelity, as
/// NCCL pipelines it (all_reduce.h: every rank forwards a chunk up or down the tree as soon as it has arrived; chunk
/// size and count per channel: collectives::tree_pipeline). The first chunk crosses the tree's depth = latency_steps
/// hops, paying each hop's latency once, and the others follow it one chunk time apart, so uncontended a phase takes
///   depth·α + (chunks + depth - 1)·(bytes / chunks) / B,
/// B the slowest link's bandwidth. The rank sleeps the path's latency (α per hop as `flow` and `analytic` price the
/// phase: the slowest ring hop per step with the ideal protocol, the tuner's modelled phase latency with Simple),
/// then sends its bytes to the peer as min(chunks, kMaxTreeMessages) lock-stepped messages without route latency
/// (start_comm), each step a chunk on every link of the tree: the pipeline's steady state, whose bandwidth SimGrid
/// shares with concurrent traffic. Last it sleeps the fill, depth - 1 chunk times, each the measured time of its
/// messages over the chunk count (bytes / chunks / B uncontended). Before, every step of a phase (as many as the
/// tree has hops, bytes / depth each) paid the phase's slowest hop: a spine crossing on all 13 steps of a 64-node
/// dgx-h100 tree (31.4 us against the tuner's 3.4 us NVLink and 14 us network steps).
void tree_pipeline_phase(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                         collectives::CollectiveChoice ch, const collectives::TuneTopology& topo,
                         const collectives::PhasePlan& ph, const PhasePeers& p, double factor) {
  const int depth = std::max(ph.latency_steps, 1);
  const collectives::TreePipeline pipe = collectives::tree_pipeline(c.bytes, topo.channels);
  const int messages = std::min(pipe.chunks, kMaxTreeMessages);
  const double path = ch.protocol == collectives::Protocol::NONE
                          ? depth * phase_route_latency(sim, ph)
                          : collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value();
  if (path > 0)
    sg4::this_actor::sleep_for(path);
  const std::uint64_t bytes = wire_size(ph.bytes_per_rank.value() / factor / messages);
  const double t0 = sim.now();
  for (int s = 0; s < messages; ++s)
    exchange(sim, rank, stream, ph, p.peer, p.from, p.to, p.mine, bytes, true);
  const double fill = (depth - 1) * (sim.now() - t0) / pipe.chunks;
  if (fill > 0)
    sg4::this_actor::sleep_for(fill);
}

/// `chunk` fidelity: every algorithm step is a message (a tree's phase: NCCL's pipeline, tree_pipeline_phase). A
/// phase of latency_steps steps sends, per step, one chunk of
/// bytes_per_rank / latency_steps to the peer and receives one from the opposite peer, and waits for both before the
/// next step (a ring step forwards what the previous step received: Patarasuk & Yuan 2009 §3). Uncontended, a ring
/// all-reduce costs 2(n-1)·(α + S/(n·B)) = the alpha-beta closed form. Each step pays its own route latency; folded
/// GLOBAL phases pay the true ring's worst hop on every step (as `flow` does), and an NCCL protocol's modelled phase
/// latency (nccl_tuning.hpp phase_latency, with the route latency beyond NCCL's table) minus steps x the phase's
/// slowest hop (what every rank's lock-stepped steps paid) is slept at the end of the phase. Under contention the steps of concurrent
/// collectives interleave on the shared links and SimGrid's max-min sharing splits each step's bandwidth.
/// NCCL's low-latency protocols (LL, LL128) run as at `flow` fidelity (flow_phase): their per-hop latencies (NCCL
/// tuning.cc hwLat, e.g. 0.6 us over NVLink and 2.7 us over the network for a ring with LL) are below the links'
/// latencies, which are the Simple protocol's, so a message per step would pay Simple's latency on every step (a
/// 1 MiB all-gather on 256 GPUs: 4.4 ms instead of 0.3 ms). NCCL selects them for small messages, where the step
/// structure matters least.
void run_chunk_phases(Simulation& sim, int rank, program::StreamId stream, const program::Collective& c,
                      collectives::CollectiveChoice ch, const collectives::TuneTopology& topo) {
  const bool ideal = ch.protocol == collectives::Protocol::NONE;
  const bool low_latency = ch.protocol == collectives::Protocol::LL || ch.protocol == collectives::Protocol::LL128;
  for_each_phase(sim, rank, stream, c, [&](const collectives::PhasePlan& ph, const PhasePeers& p, double factor) {
    if (low_latency) {
      flow_phase(sim, rank, stream, ch, topo, ph, p, factor);
      return;
    }
    if (ch.algorithm == collectives::Algorithm::TREE) {
      tree_pipeline_phase(sim, rank, stream, c, ch, topo, ph, p, factor);
      return;
    }
    const int steps = std::max(ph.latency_steps, 1);
    const auto [peer, from, to, mine] = p;
    const bool fan = ph.fan_out > 1;
    const std::uint64_t chunk = wire_size(ph.bytes_per_rank.value() / factor / steps);
    const double paid = fan ? fan_latency(sim, ph, rank)
                            : std::max(flow_latency(sim, ph, rank, peer), flow_latency(sim, ph, from, rank));
    // Every step takes the phase's slowest hop (the lock step: a ring phase has n - 1 or more steps,
    // enough to carry the slowest hop's delay to every rank). Folded, the world's slowest hop is
    // missing from the simulated ring (a spine crossing between leaf switches), so every rank tops up
    // to it: the ring's worst hop with the ideal protocol (as `flow`), the phase's hop
    // (phase_route_latency, what the NCCL top-up below assumes) with an NCCL protocol.
    double step_extra = 0;
    if (!fan && ph.scope == collectives::PeerScope::GLOBAL && sim.folded())
      step_extra = (ideal ? sim.ring_max_latency : phase_route_latency(sim, ph)) - paid;
    for (int s = 0; s < steps; ++s) {
      if (fan) // a fan-out step: the same concurrent flows as at flow fidelity (DIRECT has one step)
        exchange_fan(sim, rank, stream, ph, static_cast<double>(chunk));
      else
        exchange(sim, rank, stream, ph, peer, from, to, mine, chunk);
      if (step_extra > 0)
        sg4::this_actor::sleep_for(step_extra);
    }
    if (!ideal) {
      // Every rank waits for its neighbours on every step, so each step of the phase took the
      // phase's slowest hop (the top-up must not count this rank's faster hop).
      const double hop = fan ? paid : std::max(paid, phase_route_latency(sim, ph));
      const double extra = collectives::phase_latency(ph, ch.algorithm, ch.protocol, topo).value() - steps * hop;
      if (extra > 0)
        sg4::this_actor::sleep_for(extra);
    }
  });
}

/// Blocks until collective `c` is its group's next on this rank: a communicator's kernels run in the order they were
/// issued, whatever their stream (NCCL 2.7.8 makes the launch stream wait for the communicator's previous kernel,
/// src/enqueue.cc l.180-184 @v2.7.8-1; NCCL 2.18 chains every launch through the communicator's deviceStream,
/// l.964-986 @v2.18.1-1; under torch.distributed each process group also launches on its own ProcessGroupNCCL
/// stream). The wait ends: every rank runs the same program, and program::validate (run before the simulation)
/// dry-runs it with these rules and the Record-before-Wait rule, rejecting a program where a stream would stick. No
/// simcall when it is already its turn (the common case).
void wait_turn(Simulation& sim, RankState& rs, const program::Collective& c) {
  if (rs.comm_next[c.group] == c.seq)
    return;
  ++rs.comm_turn_waiters;
  // Manual lock/unlock, as in stream_actor.cpp do_wait (an OOM stop's kill_all may unwind from inside the wait).
  sim.event_mutex->lock();
  while (rs.comm_next[c.group] != c.seq)
    rs.comm_turn[c.group]->wait(sim.event_mutex);
  sim.event_mutex->unlock();
  --rs.comm_turn_waiters;
}

/// Collective `c` ended on this rank: the group's next may start. No lock needed, as in do_record: a waiter checks
/// comm_next and blocks without yielding in between.
void end_turn(RankState& rs, const program::Collective& c) {
  rs.comm_next[c.group] = c.seq + 1;
  if (rs.comm_turn_waiters > 0)
    rs.comm_turn[c.group]->notify_all();
}

} // namespace

void run_collective(Simulation& sim, int rank, program::StreamId stream, const program::Op& op,
                    const program::Collective& c) {
  const int n = sim.world;
  RankState& rs = sim.ranks[static_cast<std::size_t>(rank)];
  wait_turn(sim, rs, c); // the kernel launches once the communicator's previous one ended
  const double t0 = sim.now();
  const int step = sim.ranks[static_cast<std::size_t>(rank)].step;
  const std::size_t num_streams = sim.program->streams.size();
  const collectives::TuneTopology& topo = sim.tune;
  const CollectivePlan& cp = collective_plan(sim, c);
  const collectives::CollectiveChoice ch = cp.choice;
  if (rank == 0) {
    const Bytes wire = collectives::wire_bytes_per_rank(c.kind, ch.algorithm, c.bytes, n, sim.cluster->gpus_per_node);
    // The step the op was generated for, not the rank's current one: stage 3's host thread runs ahead and issues
    // the next step's first all-gathers before the compute stream reaches STEP_BEGIN (StepProgram::step_begin_ops).
    const int op_step = sim.program->step_of(stream, op);
    sim.recorder->collective_traffic(c.kind, c.bytes.value(), wire.value(), op_step);
    sim.recorder->comm_begin(t0);
  }
  // From its launch to its end (waiting for the other ranks included) the NCCL kernel holds one SM per channel,
  // and the GPU's other kernels run on the rest: the GPU host's pstate k prices k NCCL kernels at once
  // (topology::gpu_pstate_speeds). A contended GEMM loses more than its share of SMs when they cut a wave short
  // (NVIDIA developer forum thread 337991: 24 NCCL CTAs beside a one-wave 132-tile GEMM on an H100 nearly doubled it);
  // this prices the proportional share only.
  sg4::Host* gpu = sim.platform.gpus[static_cast<std::size_t>(rank)];
  const auto nccl_kernels = [&](int delta) {
    rs.nccl_kernels += delta;
    if (gpu->get_pstate_count() > 1)
      gpu->set_pstate(
          std::min<unsigned long>(static_cast<unsigned long>(rs.nccl_kernels), gpu->get_pstate_count() - 1));
  };
  if (n > 1) {
    nccl_kernels(+1);
    // Rendezvous: an NCCL collective cannot finish on any rank before every rank has launched it.
    sim.channels[c.group * num_streams + stream].barrier->wait();
    if (sim.options.fidelity == scenario::Fidelity::FLOW)
      run_flow_phases(sim, rank, stream, c, ch, topo);
    else if (sim.options.fidelity == scenario::Fidelity::CHUNK)
      run_chunk_phases(sim, rank, stream, c, ch, topo);
    else if (const double t = analytic_seconds(sim, c, cp, topo); t > 0)
      sg4::this_actor::sleep_for(t);
    nccl_kernels(-1);
  }
  const double t1 = sim.now();
  end_turn(rs, c);
  if (rank == 0)
    sim.recorder->comm_end(t1, step);
  sim.recorder->span(rank, stream, op, t0, t1, c.bytes.value(), 0.0, step);
}

} // namespace zerosim::engine
