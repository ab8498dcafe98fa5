// The shared state of one simulation and the body of the actor that runs one stream of one rank.
// Internal to engine/ (includes SimGrid).
#pragma once

#include "sim/collectives/nccl_tuning.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/memory_pool.hpp"
#include "sim/engine/recorder.hpp"
#include "topologies/builder/platform_builder.hpp"

#include <simgrid/s4u.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace zerosim::engine {

/// What an Alloc of a buffer said (all ranks run the same program, so this is per buffer, not per rank).
struct BufferInfo {
  program::MemTag tag = program::MemTag::WORKING;
  double bytes = 0;
  program::Device device = program::Device::GPU;
  bool pinned = false; ///< host buffer, page-locked (program::Alloc::pinned)
};

/// RankState::waiting_for of a stream not blocked in a Wait.
inline constexpr program::EventId kNoEvent = ~program::EventId{0};

/// RankState::live bits: the tensor still counts as allocated; its block is still held (program::FreeKind).
inline constexpr std::uint8_t kTensorLive = 1;
inline constexpr std::uint8_t kBlockHeld = 2;

/// Per-rank mutable state.
struct RankState {
  MemoryPool gpu; ///< caching-allocator model, capacity = the GPU's memory
  MemoryPool host; ///< this rank's host allocations (unlimited: the node pool decides OOM)
  int node = 0; ///< index into Simulation::host_nodes
  std::vector<std::uint8_t> live; ///< per buffer: kTensorLive | kBlockHeld while allocated, cleared by Frees
  std::vector<std::uint8_t> recorded; ///< per event: Record reached
  /// Per stream: the event that stream is blocked on in a Wait (kNoEvent when it is not): a stream waits for one event
  /// at a time, so the Record of that event releases the stream's own semaphore (StreamRunner::do_record).
  std::vector<program::EventId> waiting_for;
  /// Per stream: what a Wait blocks on (capacity 0; released once by the awaited Record). Created with the rank.
  std::vector<simgrid::s4u::SemaphorePtr> wake;
  /// Per stream: GPU buffers whose tensor that stream freed (Free{TENSOR}) while the block stayed held
  /// (record_stream); entries whose block came back are dropped lazily. A failing cudaMalloc on that stream waits
  /// for them (StreamRunner::synchronize_events).
  std::vector<std::vector<program::BufferId>> record_streamed;
  /// Signalled by every Free{BLOCK} while a stream waits in synchronize_events (null until one first does).
  simgrid::s4u::ConditionVariablePtr block_returned;
  int block_waiters = 0; ///< streams blocked in synchronize_events
  int step = -1;
  int nccl_kernels = 0; ///< collectives running on this GPU: their CTAs hold SMs (the GPU host's pstate)
  /// Per group: the issue number (program::Collective::seq) of the group's next collective allowed to start on this
  /// rank, i.e. how many of its collectives have ended here (one NCCL communicator runs its kernels in issue order).
  std::vector<std::uint32_t> comm_next;
  /// Per group: signalled when one of its collectives ends on this rank while another waits for its turn (created
  /// with the simulation).
  std::vector<simgrid::s4u::ConditionVariablePtr> comm_turn;
  int comm_turn_waiters = 0; ///< stream actors of this rank blocked in a comm_turn wait
};

/// A communicator's state for one stream: the rendezvous that starts every collective once all ranks arrived.
struct CollectiveChannel {
  simgrid::s4u::BarrierPtr barrier;
};

/// Route facts of the ring successor (offset +1) of each rank, for latency steps and the analytic mode.
struct RouteInfo {
  double latency = 0; ///< s
  double bandwidth = 0; ///< B/s, the slowest link of the route
};

/// What every rank of a collective computes alike from its kind and size (the group does not enter): the tuner's
/// choice, the phases of its algorithm on the world and each phase's bandwidth factor. Kept per (kind, bytes) for the
/// run, so the ranks of a collective (and its repeats in later micro-batches and steps) compute it once.
struct CollectivePlan {
  collectives::CollectiveChoice choice;
  std::vector<collectives::PhasePlan> phases;
  std::vector<double> factors; ///< collectives::phase_bandwidth_factor per phase
};

struct Simulation {
  const scenario::ClusterSpec* cluster = nullptr;
  const program::StepProgram* program = nullptr;
  EngineOptions options;
  topology::Platform platform;
  int world = 0; ///< data-parallel world size (collective sizes and latency steps use it)
  int ranks_simulated = 0; ///< ranks with actors: world, or the representative nodes when folded
  [[nodiscard]] bool folded() const { return ranks_simulated < world; }

  std::vector<BufferInfo> buffers;
  std::vector<RankState> ranks;
  std::vector<MemoryPool> host_nodes; ///< per simulated node: host memory shared by its ranks (cluster.host_memory)
  std::vector<simgrid::s4u::Mailbox*> mailboxes; ///< index rank * streams + stream
  std::vector<CollectiveChannel> channels; ///< index group * streams + stream
  std::vector<RouteInfo> ring_routes; ///< per rank: route to rank + 1
  std::map<std::pair<int, int>, double> route_latency_cache; ///< (rank, peer) -> s, for other peers
  double ring_min_bandwidth = 0; ///< B/s over all ring routes
  double ring_max_latency = 0; ///< s over all ring routes
  collectives::TuneTopology tune; ///< tune_topology(*cluster), computed once per run
  /// topology::ring_route_summary(*cluster) on a multi-node cluster with per-GPU NICs (whose node-crossing ring hops
  /// are rail-aligned), computed once per run: it walks every node; nullopt otherwise.
  std::optional<topology::RingRouteSummary> rail_ring;
  /// CollectivePlan by (CollectiveKind, bytes) (collective_runner.cpp collective_plan).
  std::map<std::pair<int, double>, CollectivePlan> collective_plans;
  simgrid::s4u::MutexPtr event_mutex;

  Recorder* recorder = nullptr;
  std::optional<trace::OomInfo> oom;
  bool stopped = false; ///< OOM with STOP ended the run
  long stray_frees = 0; ///< Free ops that found their buffer not allocated on that rank (ignored)
  int actors_total = 0;
  int actors_finished = 0;
  /// Handles of comms still running when an OOM stop killed the actor that started them. SimGrid 3.32 prints a
  /// backtrace when the last handle of a running Comm goes ("Comm freed before its completion", s4u::Comm::~Comm in
  /// src/s4u/s4u_Comm.cpp): killing an actor cancels only the activity it is blocked in, and Comm::sendto_async
  /// comms belong to maestro and run on. So the handles wait here until Engine::run() returns, when every comm has
  /// finished or been cancelled, and are dropped then (run_simulation).
  std::vector<simgrid::s4u::CommPtr> orphan_comms;
  /// Moves `c` to orphan_comms when it has not finished (a scope unwinding from an OOM stop), else leaves it.
  void keep_if_running(simgrid::s4u::CommPtr& c) {
    if (c && c->get_state() != simgrid::s4u::Activity::State::FINISHED)
      orphan_comms.push_back(std::move(c));
  }
  double start_time = 0; ///< s, clock when the simulation started (the clock is not reset between engines)
  /// Set only while a collective phase starts one of its latency-free comms (collective_runner.cpp
  /// start_comm): SimGrid calls the network model's latency-factor callback (run_simulation) synchronously from
  /// CommImpl::start(), inside the kernel call that starts the comm, so the callback reads this flag for exactly that
  /// comm (it is given the comm's size and hosts, not the comm itself: NetworkModelIntf::NetworkFactorCb, SimGrid
  /// 3.32). Used by a phase whose NCCL-modelled latency is below one hop of its route (flow_phase).
  bool starting_latency_free = false;
  /// Latency factor of a latency-free comm: not 0 but vanishing (a 14 us route pays 1.4e-14 s). With factor 0,
  /// CM02 would give the flow the sharing penalty 1 instead of its route latency (network_cm02.cpp
  /// comm_action_set_variable: a flow's share of a link is inverse to its penalty, which a flow with latency takes
  /// when its latency is paid), and it would starve next to any flow that pays its latency on the same link.
  static constexpr double kLatencyFreeFactor = 1e-9;
  /// The latency factor of a comm starting now: kLatencyFreeFactor inside start_comm of a latency-free comm, else 1.
  [[nodiscard]] double latency_factor() const { return starting_latency_free ? kLatencyFreeFactor : 1.0; }
  /// Slowest route latency (s) of a fan-out phase's flows over all ranks, by (PeerScope, peer_offset, fan_out): the
  /// same for every rank of the phase (collective_runner.cpp fan_phase_latency).
  std::map<std::tuple<int, int, int>, double> fan_route_cache;

  [[nodiscard]] double now() const { return simgrid::s4u::Engine::get_clock() - start_time; }
  [[nodiscard]] double route_latency(int rank, int peer);
};

/// Runs stream `stream` of rank `rank` to its end (or until the run is stopped).
void run_stream(Simulation& sim, int rank, program::StreamId stream);

} // namespace zerosim::engine
