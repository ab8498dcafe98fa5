// The actor of one stream of one rank: runs the stream's ops in order (program.hpp "Semantics").
#include "sim/engine/stream_actor.hpp"

#include "sim/collectives/collective_plan.hpp"

#include <cmath>
#include <mutex>
#include <type_traits>

namespace sg4 = simgrid::s4u;

namespace zerosim::engine {
namespace {

/// put_async needs a payload pointer; nothing reads it (the transfer's size is what is simulated).
char g_payload = 0;

/// x / rate, with 0 when there is nothing to do (so a zero peak does not give NaN for zero work).
double time_of(double amount, double rate) { return amount == 0 ? 0.0 : amount / rate; }

std::uint64_t wire_size(double bytes) { return static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0))); }

class StreamRunner {
public:
  StreamRunner(Simulation& sim, int rank, program::StreamId stream)
      : sim_(sim), rank_(rank), stream_(stream), rs_(sim.ranks[static_cast<std::size_t>(rank)]),
        num_streams_(sim.program->streams.size()) {}

  /// Returns false when the run was stopped (OOM with STOP).
  bool run() {
    for (const program::Op& op : sim_.program->streams[stream_].ops) {
      if (sim_.stopped)
        return false;
      if (!step(op))
        return false;
    }
    return true;
  }

private:
  bool step(const program::Op& op) {
    return std::visit(
        [&](const auto& body) -> bool {
          using T = std::decay_t<decltype(body)>;
          if constexpr (std::is_same_v<T, program::Compute>)
            do_compute(op, body);
          else if constexpr (std::is_same_v<T, program::Collective>)
            do_collective(op, body);
          else if constexpr (std::is_same_v<T, program::Copy>)
            do_copy(op, body);
          else if constexpr (std::is_same_v<T, program::CpuCompute>)
            do_cpu(op, body);
          else if constexpr (std::is_same_v<T, program::Alloc>)
            return do_alloc(op, body);
          else if constexpr (std::is_same_v<T, program::Free>)
            do_free(body);
          else if constexpr (std::is_same_v<T, program::Record>)
            do_record(body);
          else if constexpr (std::is_same_v<T, program::Wait>)
            do_wait(body);
          else if constexpr (std::is_same_v<T, program::Mark>)
            do_mark(body);
          return true;
        },
        op.body);
  }

  /// Kernel time = flops / (peak_lp x matmul_efficiency) + bytes / (memory_bandwidth x memory_efficiency)
  /// (program.hpp Compute). Executed as work on the GPU host so concurrent kernels share the GPU.
  void do_compute(const program::Op& op, const program::Compute& c) {
    const auto& g = sim_.cluster->gpu;
    const double t = time_of(c.flops.value(), g.peak_lp.value() * g.matmul_efficiency) +
                     time_of(c.bytes.value(), g.memory_bandwidth.value() * g.memory_efficiency);
    const double t0 = sim_.now();
    const int step = rs_.step;
    if (t > 0)
      sg4::this_actor::execute(t * topology::kGpuHostSpeed);
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), c.bytes.value(), c.flops.value(), step);
  }

  void do_collective(const program::Op& op, const program::Collective& c) {
    const int n = sim_.world;
    const double t0 = sim_.now();
    const int step = rs_.step;
    if (rank_ == 0) {
      sim_.recorder->collective_traffic(
          c.kind, c.bytes.value(),
          collectives::wire_bytes_per_rank(c.kind, collectives::Algorithm::RING, c.bytes, n).value());
      sim_.recorder->comm_begin(t0);
    }
    if (n > 1) {
      // Rendezvous: NCCL's ring cannot finish on any rank before every rank has launched the collective.
      sim_.channels[c.group * num_streams_ + stream_].barrier->wait();
      if (sim_.options.fidelity == scenario::Fidelity::FLOW)
        run_flow_phases(c, n);
      else
        sg4::this_actor::sleep_for(collectives::analytic_time(c.kind, collectives::Algorithm::RING, c.bytes, n,
                                                              ByteRate(sim_.ring_min_bandwidth),
                                                              Seconds(sim_.ring_max_latency))
                                       .value());
    }
    const double t1 = sim_.now();
    if (rank_ == 0)
      sim_.recorder->comm_end(t1, step);
    sim_.recorder->span(rank_, stream_, op, t0, t1, c.bytes.value(), 0.0, step);
  }

  /// `flow` fidelity: per phase one aggregated flow to the peer and one from the opposite peer; the flow pays one
  /// hop latency, the remaining latency_steps - 1 are slept (reference/simgrid_notes.md §7.1).
  /// Folded runs keep the world's sizes and latency steps, pass the flow among the simulated ranks, and pay the
  /// true ring's worst hop latency on every step (what the slowest rank of the full ring would pay).
  void run_flow_phases(const program::Collective& c, int n) {
    const int m = sim_.ranks_simulated;
    for (const collectives::PhasePlan& ph : collectives::plan(c.kind, collectives::Algorithm::RING, c.bytes, n)) {
      const int peer = ((rank_ + ph.peer_offset) % m + m) % m;
      auto* to = sim_.mailboxes[static_cast<std::size_t>(peer) * num_streams_ + stream_];
      auto* mine = sim_.mailboxes[static_cast<std::size_t>(rank_) * num_streams_ + stream_];
      sg4::CommPtr send = to->put_async(&g_payload, wire_size(ph.bytes_per_rank.value()));
      char* got = nullptr;
      sg4::CommPtr recv = mine->get_async<char>(&got);
      send->wait();
      recv->wait();
      // The two flows already paid their route latencies (the slower of the two is what this rank waited).
      const double hop = sim_.route_latency(rank_, peer);
      const int from = ((rank_ - ph.peer_offset) % m + m) % m;
      const double paid = sim_.folded() ? std::max(hop, sim_.route_latency(from, rank_)) : hop;
      const double extra = sim_.folded() ? ph.latency_steps * sim_.ring_max_latency - paid
                                         : (ph.latency_steps - 1) * hop;
      if (extra > 0)
        sg4::this_actor::sleep_for(extra);
    }
  }

  void do_copy(const program::Op& op, const program::Copy& c) {
    const double t0 = sim_.now();
    const int step = rs_.step;
    auto* gpu = sim_.platform.gpus[static_cast<std::size_t>(rank_)];
    auto* cpu = sim_.platform.cpu_of(rank_);
    const double bytes = c.bytes.value();
    switch (c.dir) {
    case program::CopyDir::H2D: sg4::Comm::sendto(cpu, gpu, wire_size(bytes)); break;
    case program::CopyDir::D2H: sg4::Comm::sendto(gpu, cpu, wire_size(bytes)); break;
    case program::CopyDir::D2D: {
      // A device-to-device copy reads and writes every byte: 2·bytes / (memory_bandwidth x memory_efficiency).
      const auto& g = sim_.cluster->gpu;
      const double t = time_of(2 * bytes, g.memory_bandwidth.value() * g.memory_efficiency);
      if (t > 0)
        sg4::this_actor::execute(t * topology::kGpuHostSpeed);
      break;
    }
    }
    if (rank_ == 0)
      sim_.recorder->copy_traffic(c.dir, bytes);
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), bytes, 0.0, step);
  }

  void do_cpu(const program::Op& op, const program::CpuCompute& c) {
    const double t0 = sim_.now();
    const int step = rs_.step;
    if (c.duration.value() > 0)
      sg4::this_actor::sleep_for(c.duration.value());
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), 0.0, 0.0, step);
  }

  /// Returns false when this Alloc stopped the run (OOM with STOP).
  bool do_alloc(const program::Op& op, const program::Alloc& a) {
    MemoryPool& pool = a.device == program::Device::GPU ? rs_.gpu : rs_.host;
    const double bytes = a.bytes.value();
    const double t = sim_.now();
    if (!pool.fits(bytes)) {
      if (!sim_.oom) {
        trace::OomInfo o;
        o.rank = static_cast<std::uint32_t>(rank_);
        o.time = t;
        o.step = rs_.step;
        o.device = a.device;
        o.label = op.label;
        o.tag = a.tag;
        o.requested = bytes;
        o.capacity = pool.capacity();
        o.live_by_tag = pool.by_tag();
        sim_.oom = o;
      }
      if (sim_.options.on_oom == scenario::OomPolicy::STOP) {
        sim_.stopped = true;
        sg4::Actor::kill_all();  // every other actor; this one returns right after
        return false;
      }
    }
    pool.alloc(a.tag, bytes, t, op.label);
    rs_.live[a.buffer] = 1;
    sim_.recorder->mem_sample(rank_, t, a.device, a.tag, pool.tag_bytes(a.tag), pool.total());
    return true;
  }

  void do_free(const program::Free& f) {
    if (!rs_.live[f.buffer]) {
      ++sim_.stray_frees;  // validate() guarantees an Alloc exists; a Free racing ahead of it on another stream
      return;              // (missing Record/Wait in the program) is ignored and reported
    }
    rs_.live[f.buffer] = 0;
    const BufferInfo& b = sim_.buffers[f.buffer];
    MemoryPool& pool = b.device == program::Device::GPU ? rs_.gpu : rs_.host;
    pool.free(b.tag, b.bytes);
    sim_.recorder->mem_sample(rank_, sim_.now(), b.device, b.tag, pool.tag_bytes(b.tag), pool.total());
  }

  /// cudaEventRecord: the event is complete from now on; wake whoever waits for it. No lock needed: actors only
  /// yield inside simcalls, and a waiter checks the flag and blocks on the condition variable without yielding in
  /// between (do_wait), so a wake-up cannot be lost; this saves two simcalls per Record.
  void do_record(const program::Record& r) {
    rs_.recorded[r.event] = 1;
    if (auto it = rs_.waiters.find(r.event); it != rs_.waiters.end()) {
      it->second->notify_all();
      rs_.waiters.erase(it);
    }
  }

  /// cudaStreamWaitEvent: block this stream until the event is recorded.
  void do_wait(const program::Wait& w) {
    if (rs_.recorded[w.event])
      return;
    std::unique_lock lock(*sim_.event_mutex);
    while (!rs_.recorded[w.event]) {
      auto& slot = rs_.waiters[w.event];
      if (!slot)
        slot = sg4::ConditionVariable::create();
      sg4::ConditionVariablePtr cv = slot;  // keep it alive across the erase in do_record
      cv->wait(lock);
    }
  }

  void do_mark(const program::Mark& m) {
    const double t = sim_.now();
    if (m.kind == program::MarkKind::STEP_BEGIN) {
      rs_.step = m.step;
      rs_.gpu.set_step(m.step, t);
      rs_.host.set_step(m.step, t);
      if (rank_ == 0)
        sim_.recorder->step_begin(m.step, t);
    } else if (rank_ == 0) {
      sim_.recorder->step_end(m.step, t);
    }
  }

  Simulation& sim_;
  int rank_;
  program::StreamId stream_;
  RankState& rs_;
  std::size_t num_streams_;
};

} // namespace

double Simulation::route_latency(int rank, int peer) {
  const int n = world;
  if (n > 1 && peer == (rank + 1) % n)
    return ring_routes[static_cast<std::size_t>(rank)].latency;
  auto key = std::make_pair(rank, peer);
  if (auto it = route_latency_cache.find(key); it != route_latency_cache.end())
    return it->second;
  std::vector<sg4::Link*> links;
  double lat = 0;
  platform.gpus[static_cast<std::size_t>(rank)]->route_to(platform.gpus[static_cast<std::size_t>(peer)], links, &lat);
  route_latency_cache.emplace(key, lat);
  return lat;
}

void run_stream(Simulation& sim, int rank, program::StreamId stream) {
  StreamRunner runner(sim, rank, stream);
  if (runner.run())
    ++sim.actors_finished;
}

} // namespace zerosim::engine
