// The actor of one stream of one rank: runs the stream's ops in order (program.hpp "Semantics").
#include "sim/engine/stream_actor.hpp"

#include "sim/engine/collective_runner.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>

namespace sg4 = simgrid::s4u;

namespace zerosim::engine {
namespace {

/// x / rate, with 0 when there is nothing to do (so a zero peak does not give NaN for zero work).
double time_of(double amount, double rate) { return amount == 0 ? 0.0 : amount / rate; }

std::uint64_t wire_size(double bytes) { return static_cast<std::uint64_t>(std::llround(std::max(bytes, 0.0))); }

class StreamRunner {
 public:
  StreamRunner(Simulation& sim, int rank, program::StreamId stream)
      : sim_(sim),
        rank_(rank),
        stream_(stream),
        rs_(sim.ranks[static_cast<std::size_t>(rank)]),
        num_streams_(sim.program->streams.size()) {}

  /// Returns false when the run was stopped (OOM with STOP).
  bool run() {
    const auto& ops = sim_.program->streams[stream_].ops;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (sim_.stopped)
        return false;
      if (std::holds_alternative<program::CpuCompute>(ops[i].body)) {
        i = do_cpu_run(ops, i);
        continue;
      }
      if (!step(ops[i]))
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

  /// Kernel time = (flops - attention_flops) / (peak x matmul_efficiency x gemm_utilization) + attention_flops x
  /// attention_work / (peak x attention_efficiency, or matmul_efficiency when 0) + bytes / (memory_bandwidth x
  /// memory_efficiency)
  /// (program.hpp Compute), peak = EngineOptions::matmul_peak or gpu.peak_lp. Executed as work on the GPU host so concurrent kernels share the GPU.
  void do_compute(const program::Op& op, const program::Compute& c) {
    const auto& g = sim_.cluster->gpu;
    const double peak = sim_.options.matmul_peak > 0 ? sim_.options.matmul_peak : g.peak_lp.value();
    const double attn = std::min(c.attention_flops.value(), c.flops.value());
    const double attn_eff = g.attention_efficiency > 0 ? g.attention_efficiency : g.matmul_efficiency;
    const double t = time_of(c.flops.value() - attn, peak * g.matmul_efficiency * c.gemm_utilization) +
                     time_of(attn * c.attention_work, peak * attn_eff) +
                     time_of(c.bytes.value(), g.memory_bandwidth.value() * g.memory_efficiency);
    const double t0 = sim_.now();
    const int step = rs_.step;
    if (t > 0)
      sg4::this_actor::execute(t * topology::kGpuHostSpeed);
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), c.bytes.value(), c.flops.value(), step);
  }

  void do_collective(const program::Op& op, const program::Collective& c) {
    run_collective(sim_, rank_, stream_, op, c);
  }

  /// The host-side staging memcpy of a pageable copy: one driver thread moves `bytes` at
  /// cpu.pageable_copy_bandwidth, serialized with the DMA (fit to a DGX A100 bandwidthTest, 32 MB:
  /// pinned 25.7 / 25.8 GB/s, pageable 10.0 / 10.8 GB/s H2D / D2H; docs/tutorials/offload.md).
  void pageable_memcpy(double bytes) {
    const double t = time_of(bytes, sim_.cluster->cpu.pageable_copy_bandwidth.value());
    if (t > 0)
      sg4::this_actor::sleep_for(t);
  }

  /// One PCIe DMA between `from` and `to` (Comm::sendto, waited on). When an OOM stop kills this actor inside the
  /// wait, the running comm's handle goes to Simulation::orphan_comms instead of being dropped (SimGrid prints a
  /// backtrace for a running Comm's last handle; newuser20a saw it on stage 3 with parameter offload).
  void dma(sg4::Host* from, sg4::Host* to, std::uint64_t bytes) {
    sg4::CommPtr comm = sg4::Comm::sendto_async(from, to, bytes);
    struct Keep {
      Simulation& sim;
      sg4::CommPtr& comm;
      Keep(Simulation& s, sg4::CommPtr& c) : sim(s), comm(c) {}
      Keep(const Keep&) = delete;
      Keep& operator=(const Keep&) = delete;
      ~Keep() { sim.keep_if_running(comm); }
    } keep(sim_, comm);
    comm->wait();
  }

  void do_copy(const program::Op& op, const program::Copy& c) {
    const double t0 = sim_.now();
    const int step = rs_.step;
    auto* gpu = sim_.platform.gpus[static_cast<std::size_t>(rank_)];
    auto* cpu = sim_.platform.cpu_of(rank_);
    const double bytes = c.bytes.value();
    switch (c.dir) {
    case program::CopyDir::H2D:
      // Pageable: the driver first copies the source into its pinned staging buffer, then DMAs it.
      if (c.pageable)
        pageable_memcpy(bytes);
      dma(cpu, gpu, wire_size(bytes));
      break;
    case program::CopyDir::D2H:
      dma(gpu, cpu, wire_size(bytes));
      // Pageable: the DMA lands in the staging buffer, then the driver copies it out to the destination.
      if (c.pageable)
        pageable_memcpy(bytes);
      break;
    case program::CopyDir::D2D: {
      // A device-to-device copy reads and writes every byte: 2·bytes / (memory_bandwidth x memory_efficiency).
      const auto& g = sim_.cluster->gpu;
      const double t = time_of(2 * bytes, g.memory_bandwidth.value() * g.memory_efficiency);
      if (t > 0)
        sg4::this_actor::execute(t * topology::kGpuHostSpeed);
      break;
    }
    case program::CopyDir::NVME_READ:
    case program::CopyDir::NVME_WRITE: {
      // ZeRO-Infinity swap: Disk I/O on the node's NVMe (the builder's "<node>-nvme" disk on the CPU host), shared
      // by the node's ranks. DeepSpeed's aio handle keeps block_size x queue_depth x intra_op_parallelism bytes of
      // requests in flight (EngineOptions::nvme_inflight_bytes); each round of them waits the device latency, the
      // bytes stream at the read (write) bandwidth: ⌈bytes / in flight⌉ x latency + bytes / bandwidth.
      const auto disks = cpu->get_disks();
      if (disks.empty())
        throw Error("offload to nvme: node of rank " + std::to_string(rank_) +
                    " has no NVMe (set cluster.nvme.read_bandwidth and write_bandwidth)");
      const double inflight = sim_.options.nvme_inflight_bytes;
      const double rounds = inflight > 0 ? std::max(1.0, std::ceil(bytes / inflight)) : 1.0;
      if (sim_.cluster->nvme.latency.value() > 0)
        sg4::this_actor::sleep_for(rounds * sim_.cluster->nvme.latency.value());
      const auto size = static_cast<sg_size_t>(std::llround(bytes));
      if (size > 0) {
        if (c.dir == program::CopyDir::NVME_READ)
          disks.front()->read(size);
        else
          disks.front()->write(size);
      }
      break;
    }
    }
    if (rank_ == 0)
      sim_.recorder->copy_traffic(c.dir, bytes, sim_.program->step_of(stream_, op));
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), bytes, 0.0, step);
  }

  /// A run of consecutive CpuCompute ops from ops[i]: one sleep to the end of the last, each op's span at its own
  /// times (t_{k+1} = t_k + duration_k, as sequential sleeps give). Returns the index of the run's last op.
  std::size_t do_cpu_run(const std::vector<program::Op>& ops, std::size_t i) {
    std::size_t j = i;
    while (j + 1 < ops.size() && std::holds_alternative<program::CpuCompute>(ops[j + 1].body))
      ++j;
    if (j == i) {
      do_cpu(ops[i], std::get<program::CpuCompute>(ops[i].body));
      return i;
    }
    const double t_begin = sim_.now();
    const int step = rs_.step;
    double t = t_begin;
    for (std::size_t k = i; k <= j; ++k) {
      const double d = std::get<program::CpuCompute>(ops[k].body).duration.value();
      if (d > 0)
        t += d;
    }
    if (t > t_begin)
      sg4::this_actor::sleep_for(t - t_begin);
    t = t_begin;
    for (std::size_t k = i; k <= j; ++k) {
      const double d = std::get<program::CpuCompute>(ops[k].body).duration.value();
      const double t1 = d > 0 ? t + d : t;
      sim_.recorder->span(rank_, stream_, ops[k], t, t1, 0.0, 0.0, step);
      t = t1;
    }
    return j;
  }

  void do_cpu(const program::Op& op, const program::CpuCompute& c) {
    const double t0 = sim_.now();
    const int step = rs_.step;
    if (c.duration.value() > 0)
      sg4::this_actor::sleep_for(c.duration.value());
    sim_.recorder->span(rank_, stream_, op, t0, sim_.now(), 0.0, 0.0, step);
  }

  /// Returns false when this Alloc stopped the run (OOM with STOP).
  /// GPU: the caching allocator serves the request from this stream's cached blocks (DeepSpeed allocates on the
  /// stream doing the work, so the Alloc's stream is the allocator's stream), or from Alloc::pool's when the host
  /// allocates for another stream; OOM when its cudaMalloc would fail.
  /// Host: the rank's own pool (unlimited, for the per-rank report) and its node's pool (cluster.host_memory).
  bool do_alloc(const program::Op& op, const program::Alloc& a) {
    const bool gpu = a.device == program::Device::GPU;
    MemoryPool& pool = gpu ? rs_.gpu : sim_.host_nodes[static_cast<std::size_t>(rs_.node)];
    const double bytes = a.bytes.value();
    const double t_request = sim_.now();
    const bool force = sim_.options.on_oom == scenario::OomPolicy::CONTINUE;
    // What was live when the request failed, for the OOM report. The retry's callback captures only `this` and `at`:
    // small enough for std::function's in-place storage, so an Alloc allocates no closure on the heap.
    struct Live {
      MemoryPool* pool;
      trace::TagBytes by_tag;
      double allocated;
    } at{&pool, pool.by_tag(), pool.total()};
    const auto sync = [this, &at] {
      const double waited = synchronize_events();
      at.by_tag = at.pool->by_tag();
      at.allocated = at.pool->total();
      return waited;
    };
    // The cache the block comes from: the Alloc's own stream, or the stream the host allocates for (Alloc::pool).
    const std::uint32_t cache = a.pool == program::kOwnPool ? stream_ : a.pool;
    const MemoryPool::Outcome got =
        gpu ? pool.allocate(a.buffer, a.tag, bytes, cache, t_request, op.label, force, false, sync)
            : pool.allocate(a.buffer, a.tag, bytes, stream_, t_request, op.label, force, a.pinned);
    const double t = sim_.now(); // later than t_request when a cudaMalloc retry waited (synchronize_events)
    if (!got.ok) {
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
        o.live_by_tag = at.by_tag;
        o.allocated = at.allocated;
        o.reserved = got.reserved;
        o.non_pytorch = pool.non_pytorch();
        o.needed = got.needed;
        o.cache_released = got.cache_released;
        o.expandable = pool.expandable_segments();
        o.node = rs_.node;
        sim_.oom = o;
      }
      if (!force) {
        sim_.stopped = true;
        sg4::Actor::kill_all(); // every other actor; this one returns right after
        return false;
      }
    }
    if (!gpu)
      rs_.host.alloc(a.tag, bytes, t, op.label, a.pinned);
    rs_.live[a.buffer] = kTensorLive | kBlockHeld;
    const MemoryPool& mine = gpu ? rs_.gpu : rs_.host;
    sim_.recorder->mem_sample(rank_, t, a.device, a.tag, mine.tag_bytes(a.tag), mine.total(), mine.reserved());
    return true;
  }

  void do_free(const program::Free& f) {
    using program::FreeKind;
    const std::uint8_t parts = f.kind == FreeKind::TENSOR  ? kTensorLive
                               : f.kind == FreeKind::BLOCK ? kBlockHeld
                                                           : static_cast<std::uint8_t>(kTensorLive | kBlockHeld);
    if ((rs_.live[f.buffer] & parts) != parts) {
      ++sim_.stray_frees; // validate() guarantees an Alloc exists; a Free racing ahead of it on another stream
      return; // (missing Record/Wait in the program) is ignored and reported
    }
    rs_.live[f.buffer] = static_cast<std::uint8_t>(rs_.live[f.buffer] & ~parts);
    const BufferInfo& b = sim_.buffers[f.buffer];
    // The block goes back to the cache of the stream that allocated it when the Free op runs; a record_stream'd
    // tensor is freed in two parts (FreeKind), its block held until the other stream's Free{BLOCK}.
    if (f.kind == FreeKind::BLOCK) {
      rs_.gpu.release_block(f.buffer);
      if (rs_.block_waiters > 0)
        rs_.block_returned->notify_all(); // no lock needed, as in do_record
      return;
    }
    if (b.device == program::Device::GPU) {
      if (f.kind == FreeKind::TENSOR) {
        rs_.gpu.release_tensor(f.buffer, b.tag, b.bytes);
        auto& mine = rs_.record_streamed[stream_];
        mine.push_back(f.buffer);
        if (mine.size() >= 64 && (mine.size() & (mine.size() - 1)) == 0) // at powers of two: amortized O(1)
          std::erase_if(mine, [&](program::BufferId id) { return (rs_.live[id] & kBlockHeld) == 0; });
      } else
        rs_.gpu.release(f.buffer, b.tag, b.bytes);
    } else {
      sim_.host_nodes[static_cast<std::size_t>(rs_.node)].release(f.buffer, b.tag, b.bytes, b.pinned);
      rs_.host.free(b.tag, b.bytes, b.pinned);
    }
    const MemoryPool& pool = b.device == program::Device::GPU ? rs_.gpu : rs_.host;
    sim_.recorder->mem_sample(rank_, sim_.now(), b.device, b.tag, pool.tag_bytes(b.tag), pool.total(), pool.reserved());
  }

  /// synchronize_and_free_events, as a failing cudaMalloc runs it before releasing the cache: this stream (the
  /// thread that allocates) waits until every block whose tensor it freed while another stream still used it
  /// (record_stream) has come back. Those blocks' Free{BLOCK} ops were emitted before this Alloc (the builder
  /// emits the two parts together), so the wait cannot deadlock. Returns the s waited.
  double synchronize_events() {
    auto& mine = rs_.record_streamed[stream_];
    const auto held = [&](program::BufferId id) { return (rs_.live[id] & kBlockHeld) != 0; };
    std::erase_if(mine, [&](program::BufferId id) { return !held(id); });
    if (mine.empty())
      return 0.0;
    const double t0 = sim_.now();
    if (!rs_.block_returned)
      rs_.block_returned = sg4::ConditionVariable::create(); // a simcall: re-check below
    ++rs_.block_waiters;
    // Lock and unlock by hand, not with std::unique_lock: when an OOM stops the run, kill_all() unwinds this actor
    // from inside cv->wait, and a destructor that unlocks would make a simcall during that unwinding (SimGrid then
    // aborts: "ForcefulKillException at the top-level exception handler").
    sim_.event_mutex->lock();
    while (std::any_of(mine.begin(), mine.end(), held))
      rs_.block_returned->wait(sim_.event_mutex);
    sim_.event_mutex->unlock();
    --rs_.block_waiters;
    mine.clear();
    return sim_.now() - t0;
  }

  /// cudaEventRecord: the event is complete from now on; wake the streams blocked on it (one release of each one's
  /// semaphore). A stream checks the flag and registers in waiting_for without yielding in between (actors only yield
  /// inside simcalls, do_wait), so a wake-up cannot be lost.
  void do_record(const program::Record& r) {
    rs_.recorded[r.event] = 1;
    for (std::size_t s = 0; s < rs_.waiting_for.size(); ++s)
      if (rs_.waiting_for[s] == r.event) {
        rs_.waiting_for[s] = kNoEvent;
        rs_.wake[s]->release();
      }
  }

  /// cudaStreamWaitEvent: block this stream until the event is recorded. Two simcalls (Semaphore::acquire) where the
  /// shared mutex and a condition variable took four or five (lock: two; the condition variable's creation; wait;
  /// unlock).
  void do_wait(const program::Wait& w) {
    if (rs_.recorded[w.event])
      return;
    rs_.waiting_for[stream_] = w.event;
    rs_.wake[stream_]->acquire();
  }

  void do_mark(const program::Mark& m) {
    const double t = sim_.now();
    if (m.kind == program::MarkKind::STEP_BEGIN) {
      rs_.step = m.step;
      rs_.gpu.set_step(m.step, t);
      rs_.host.set_step(m.step, t);
      if (rank_ % sim_.cluster->gpus_per_node == 0) // the node's first rank moves the shared host pool on
        sim_.host_nodes[static_cast<std::size_t>(rs_.node)].set_step(m.step, t);
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
  const int n = ranks_simulated;
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
