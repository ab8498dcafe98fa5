// run_simulation: configures SimGrid, builds the platform, starts one actor per stream per rank and collects the
// result (DESIGN.md "engine/"; SimGrid practice: reference/simgrid_notes.md).
#include "sim/engine/engine.hpp"

#include "sim/engine/collective_choice.hpp"
#include "sim/engine/collective_runner.hpp"
#include "sim/engine/stream_actor.hpp"
#include "sim/error.hpp"

#include <fmt/core.h>
#include <xbt/log.h>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <csignal>
#include <limits>
#include <string>
#include <unordered_set>

namespace sg4 = simgrid::s4u;

namespace zerosim::engine {
namespace {

/// Set by the deadlock signal; the signal is process-wide and there is one simulation per process.
bool g_deadlock = false;

/// Above this many actors SimGrid runs out of memory mappings unless guard pages are off
/// (reference/simgrid_notes.md §4, "How many actors").
constexpr int kGuardPageActorLimit = 16000;

bool has_collective(const program::Stream& s) {
  return std::any_of(s.ops.begin(), s.ops.end(),
                     [](const program::Op& op) { return std::holds_alternative<program::Collective>(op.body); });
}

void configure_simgrid(int actors) {
  // Exact latency + size / bandwidth transfers (reference/simgrid_notes.md §3): must precede the first zone.
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  if (actors > kGuardPageActorLimit)
    sg4::Engine::set_config("contexts/guard-size:0");
}

/// Ring routes r -> r+1 among the simulated ranks (SimGrid's route_to on the built platform). The world ring's
/// slowest bandwidth and worst latency come from the routes themselves when every rank is simulated, and from
/// topology::ring_route_summary (the same routes, computed without building them) when ranks are folded.
void compute_ring_routes(Simulation& sim) {
  const int n = sim.ranks_simulated;
  sim.ring_routes.assign(static_cast<std::size_t>(n), RouteInfo{});
  sim.ring_min_bandwidth = std::numeric_limits<double>::infinity();
  sim.ring_max_latency = 0;
  if (sim.folded()) {
    const auto world_ring = topology::ring_route_summary(*sim.cluster);
    sim.ring_min_bandwidth = world_ring.min_bandwidth;
    sim.ring_max_latency = world_ring.max_latency;
  }
  if (n < 2)
    return;
  std::vector<sg4::Link*> links;
  for (int r = 0; r < n; ++r) {
    links.clear();
    double lat = 0;
    sim.platform.gpus[static_cast<std::size_t>(r)]->route_to(sim.platform.gpus[static_cast<std::size_t>((r + 1) % n)],
                                                             links, &lat);
    double bw = std::numeric_limits<double>::infinity();
    for (const auto* l : links)
      bw = std::min(bw, l->get_bandwidth());
    sim.ring_routes[static_cast<std::size_t>(r)] = RouteInfo{lat, bw};
    if (!sim.folded()) {
      sim.ring_min_bandwidth = std::min(sim.ring_min_bandwidth, bw);
      sim.ring_max_latency = std::max(sim.ring_max_latency, lat);
    }
  }
}

} // namespace

int simulated_ranks(const scenario::ClusterSpec& cluster, const EngineOptions& options) {
  return static_cast<int>(scenario::simulated_ranks(cluster, options.fold, options.fidelity));
}

trace::RunResult run_simulation(const scenario::ClusterSpec& cluster, const program::StepProgram& program,
                                const EngineOptions& options) {
  if (const std::string problem = program::validate(program); !problem.empty())
    throw Error("engine: invalid program: " + problem);
  if (cluster.world_size() < 1)
    throw Error("engine: the cluster has no GPU (nodes x gpus_per_node = " + std::to_string(cluster.world_size()) +
                ")");
  if (cluster.gpu.memory.value() <= 0)
    throw Error("engine: gpu.memory must be > 0 bytes");
  check_collective_settings(cluster);

  const int world = cluster.world_size();
  const int ranks = simulated_ranks(cluster, options);
  const std::size_t num_streams = program.streams.size();
  int actors = 0;
  for (const auto& s : program.streams)
    if (!s.ops.empty())
      actors += ranks;

  xbt_log_control_set("root.thresh:warning");
  int argc = 1;
  char name[] = "zerosim";
  char* argv[] = {name, nullptr};
  // SimGrid 3.32 installs a SIGINT handler in every Engine (EngineImpl::initialize, src/kernel/EngineImpl.cpp) that
  // calls exit(1) from inside the simulation; its atexit cleanup then finds live actors and prints "Process called
  // exit when leaving - Skipping cleanups". Ctrl-C is the process's business: keep whatever disposition it had.
  struct sigaction sigint_before {};
  ::sigaction(SIGINT, nullptr, &sigint_before);
  sg4::Engine engine(&argc, argv);
  ::sigaction(SIGINT, &sigint_before, nullptr);
  configure_simgrid(actors);

  Simulation sim;
  sim.cluster = &cluster;
  sim.program = &program;
  sim.options = options;
  sim.world = world;
  sim.ranks_simulated = ranks;
  // Folded: build only the simulated nodes (the fabric between them is the same fat tree, narrower).
  scenario::ClusterSpec built = cluster;
  built.nodes = (ranks + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  // A running NCCL kernel holds one SM per channel (CTA), which the GPU's other kernels lose meanwhile: the GPU
  // hosts' pstates price it (topology::gpu_pstate_speeds; run_collective switches them). Needs the SM count.
  const int channels = cluster.nccl_channels_effective();
  const double sm_share = cluster.gpu.sm_count > 0 && channels > 0
                              ? std::min(1.0, static_cast<double>(channels) / cluster.gpu.sm_count)
                              : 0.0;
  sim.platform = topology::build_platform(built, sm_share);
  // Latency factor 1 for every comm but those a collective phase starts latency-free (Simulation::latency_factor).
  sg4::Engine::get_instance()->get_netzone_root()->get_network_model()->set_lat_factor_cb(
      [&sim](double /*size*/, const sg4::Host* /*src*/, const sg4::Host* /*dst*/,
             const std::vector<sg4::Link*>& /*links*/,
             const std::unordered_set<sg4::NetZone*>& /*zones*/) { return sim.latency_factor(); });
  sim.start_time = sg4::Engine::get_clock();
  sim.event_mutex = sg4::Mutex::create();

  sim.buffers.assign(program.num_buffers, BufferInfo{});
  bool host_memory_used = false;
  for (const auto& s : program.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<program::Alloc>(&op.body)) {
        sim.buffers[a->buffer] = BufferInfo{a->tag, a->bytes.value(), a->device, a->pinned};
        host_memory_used = host_memory_used || a->device == program::Device::HOST;
      }

  // Device memory outside PyTorch's allocator: CUDA context + kernels, and NCCL's buffers when there are
  // communicators (reference/zero_semantics.md §6; memory_pool.hpp nccl_buffer_bytes).
  const double non_pytorch =
      std::max(options.cuda_context, 0.0) + nccl_buffer_bytes(cluster, options.nccl_communicators);
  const int nodes_simulated = (ranks + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  sim.host_nodes.assign(static_cast<std::size_t>(nodes_simulated), MemoryPool(cluster.host_memory.value()));
  sim.ranks.resize(static_cast<std::size_t>(ranks));
  for (std::size_t r = 0; r < sim.ranks.size(); ++r) {
    auto& rs = sim.ranks[r];
    rs.gpu = MemoryPool::caching(cluster.gpu.memory.value(), non_pytorch, options.expandable_segments);
    rs.host = MemoryPool(0);
    rs.node = static_cast<int>(r) / cluster.gpus_per_node;
    rs.live.assign(program.num_buffers, 0);
    rs.record_streamed.resize(program.streams.size());
    rs.recorded.assign(program.num_events, 0);
    rs.comm_next.assign(program.groups.size(), 0);
    for (std::size_t g = 0; g < program.groups.size(); ++g)
      rs.comm_turn.push_back(sg4::ConditionVariable::create());
    rs.waiting_for.assign(num_streams, kNoEvent);
    rs.wake.reserve(num_streams);
    for (std::size_t s = 0; s < num_streams; ++s)
      rs.wake.push_back(sg4::Semaphore::create(0));
  }

  sim.mailboxes.assign(static_cast<std::size_t>(ranks) * num_streams, nullptr);
  sim.channels.assign(std::max<std::size_t>(program.groups.size(), 1) * num_streams, CollectiveChannel{});
  for (std::size_t s = 0; s < num_streams; ++s) {
    if (!has_collective(program.streams[s]))
      continue;
    for (int r = 0; r < ranks; ++r)
      sim.mailboxes[static_cast<std::size_t>(r) * num_streams + s] =
          sg4::Mailbox::by_name(fmt::format("r{}.s{}", r, s));
    for (std::size_t g = 0; g < program.groups.size(); ++g)
      sim.channels[g * num_streams + s].barrier = sg4::Barrier::create(static_cast<unsigned>(ranks));
  }
  compute_ring_routes(sim);
  sim.tune = tune_topology(cluster);
  if (cluster.nodes > 1 && topology::per_gpu_nics(cluster))
    sim.rail_ring = topology::ring_route_summary(cluster);

  std::vector<program::StreamKind> kinds;
  for (const auto& s : program.streams)
    kinds.push_back(s.kind);
  Recorder recorder(std::max(options.trace_ranks, 0), kinds);
  sim.recorder = &recorder;

  g_deadlock = false;
  sg4::Engine::on_deadlock_cb([]() { g_deadlock = true; });

  for (int r = 0; r < ranks; ++r)
    for (std::size_t s = 0; s < num_streams; ++s) {
      if (program.streams[s].ops.empty())
        continue;
      const auto stream = static_cast<program::StreamId>(s);
      sg4::Actor::create(fmt::format("r{}:{}", r, program.streams[s].name),
                         sim.platform.gpus[static_cast<std::size_t>(r)],
                         [&sim, r, stream]() { run_stream(sim, r, stream); });
      ++sim.actors_total;
    }

  engine.run();
  sim.orphan_comms.clear(); // every comm has finished or been cancelled by now (Simulation::orphan_comms)

  trace::RunResult result;
  result.world_size = world;
  result.simulated_ranks = ranks;
  for (const auto& s : program.streams) {
    result.stream_names.push_back(s.name);
    result.stream_kinds.push_back(s.kind);
  }
  result.labels = program.labels;
  result.end_time = sim.now();
  result.oom = sim.oom;
  result.finished = !sim.stopped && !g_deadlock && sim.actors_finished == sim.actors_total;
  recorder.finish(result);
  result.memory.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    result.memory.push_back(sim.ranks[static_cast<std::size_t>(r)].gpu.summary(static_cast<std::uint32_t>(r)));
  if (host_memory_used) {
    for (int r = 0; r < ranks; ++r)
      result.host_memory.push_back(sim.ranks[static_cast<std::size_t>(r)].host.summary(static_cast<std::uint32_t>(r)));
    for (std::size_t n = 0; n < sim.host_nodes.size(); ++n)
      result.host_node_memory.push_back(sim.host_nodes[n].summary(static_cast<std::uint32_t>(n)));
  }
  result.host_capacity = std::max(cluster.host_memory.value(), 0.0);

  if (ranks < world)
    result.diagnostics.push_back("ranks folded: simulated " + std::to_string(ranks) + " of " + std::to_string(world) +
                                 " ranks (" + std::to_string(ranks / cluster.gpus_per_node) +
                                 " node(s)); data-parallel ranks are symmetric, so the others behave the same "
                                 "(simulation.fold: off simulates every rank)" +
                                 (options.trace_ranks > ranks
                                      ? "; outputs.trace_ranks " + std::to_string(options.trace_ranks) +
                                            ": trace.json has the " + std::to_string(ranks) + " simulated ranks"
                                      : std::string()));
  if (sim.stopped && sim.oom)
    result.diagnostics.push_back("out of memory on rank " + std::to_string(sim.oom->rank) +
                                 " at t=" + std::to_string(sim.oom->time) + " s: the run stopped there (on_oom: stop)");
  if (sim.stray_frees > 0)
    result.diagnostics.push_back(std::to_string(sim.stray_frees) +
                                 " Free ops ran before their buffer's Alloc on the same rank and were ignored (the "
                                 "program lacks a Record/Wait between the two streams)");
  if (std::string d = deadlock_diagnostic(g_deadlock, sim.stopped, sim.actors_finished, sim.actors_total); !d.empty())
    result.diagnostics.push_back(std::move(d));
  return result;
}

std::string deadlock_diagnostic(bool signalled, bool stopped, int finished, int total) {
  if (!signalled && (stopped || finished == total))
    return {};
  return "deadlock: " + std::to_string(total - finished) + " of " + std::to_string(total) +
         " stream actors never finished (a Wait on an event recorded after it, or collectives in a different order "
         "on different streams)";
}

} // namespace zerosim::engine
