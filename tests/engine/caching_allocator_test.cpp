// PyTorch CUDA caching allocator model (sim/engine/caching_allocator.*) and its use by MemoryPool and the engine.
// Expected values are hand calculations from the CUDACachingAllocator.cpp rules in reference/zero_semantics.md §6
// (512 B rounding; small pool <= 1 MiB; segments 2 MiB / 20 MiB / rounded to 2 MiB; best fit per stream; split when
// the remainder is >= 512 B (small) or > 1 MiB (large); release cached whole segments before an OOM) and §7 items
// 31-32. One simulation per TEST_CASE.
#include "sim/engine/caching_allocator.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/memory_pool.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::program;
using engine::CachingAllocator;

namespace {

constexpr std::uint64_t MiB = 1ULL << 20;
constexpr double kTol = 1e-12;

/// One node of `gpus` GPUs, PCIe-class 25e9 B/s links, `memory` bytes per GPU, `host` bytes of RAM per node.
scenario::ClusterSpec small_cluster(int gpus, double memory, double host = 0) {
  scenario::ClusterSpec c;
  c.nodes = 1;
  c.gpus_per_node = gpus;
  c.intra_node = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.gpu = zerosim::test::test_gpu(memory); // 100e12 FLOP/s x 0.5, 2e12 B/s x 0.8
  c.host_memory = Bytes(host);
  return c;
}

} // namespace

TEST_CASE("CachingAllocator: request rounding, pools and segment sizes (zero_semantics §7.31)", "[engine][unit]") {
  {
    CachingAllocator a;
    const auto r = a.malloc(1, 1, 0); // 1 B -> one 512 B block in a 2 MiB small-pool segment
    REQUIRE(r.ok);
    CHECK(r.block_bytes == 512);
    CHECK(r.new_segment == 2 * MiB);
    CHECK(CachingAllocator::pool_of(512) == CachingAllocator::PoolKind::SMALL);
    CHECK(a.allocated() == 512);
    CHECK(a.reserved() == 2 * MiB);
  }
  {
    CachingAllocator a;
    const auto r = a.malloc(1, MiB + 1, 0); // 1 MiB + 1 B -> 1,049,088 B (2049 x 512), large pool, 20 MiB segment
    CHECK(CachingAllocator::round_size(MiB + 1) == 1'049'088);
    CHECK(CachingAllocator::pool_of(1'049'088) == CachingAllocator::PoolKind::LARGE);
    CHECK(r.block_bytes == 1'049'088);
    CHECK(r.new_segment == 20 * MiB);
  }
  {
    CachingAllocator a;
    CHECK(a.malloc(1, 10 * MiB, 0).new_segment == 10 * MiB); // >= 10 MiB: rounded up to 2 MiB, already is
  }
  {
    CachingAllocator a;
    const auto r = a.malloc(1, 10 * MiB + 1, 0); // 10,486,272 B -> 12 MiB segment
    CHECK(r.new_segment == 12 * MiB);
    // 12 MiB - 10,486,272 = 2,096,640 B > 1 MiB remains: the large block is split.
    CHECK(r.block_bytes == 10'486'272);
    CHECK(a.reserved() == 12 * MiB);
  }
  CHECK(CachingAllocator::round_size(0) == 512);
  CHECK(CachingAllocator::round_size(1024) == 1024);
  CHECK(CachingAllocator::segment_size(MiB) == 2 * MiB); // exactly 1 MiB is still small
}

TEST_CASE(
    "CachingAllocator: stage 1/2's dropped init fp32 grad stays cached and is split before the step needs its size",
    "[engine][unit]") {
  // DeepSpeed stage 1/2 without offload, every release: initialize_optimizer_states allocates a zero fp32 grad of the
  // partition and drops it at once (stage_1_and_2.py l.667-686 @v0.13.2), with no empty_cache before training. With
  // p = 100 Mi elements on one stream: lp params 2p = 200 MiB, fp32 master 4p = 400 MiB, the init grad 4p = 400 MiB
  // (freed: a cached 400 MiB segment). The backward's grads_in_partition (2p = 200 MiB) best-fits into that block and
  // splits it (200 MiB left free, > 1 MiB); the step's fp32 grad cast (4p = 400 MiB) finds no cached block of its
  // size and takes a new segment: reserved 200 + 400 + 400 + 400 = 1400 MiB with 1200 MiB allocated, where without
  // the init grad grads_in_partition and the fp32 grad each take their own segment: 200 + 400 + 200 + 400 = 1200 MiB.
  for (bool init_grad : {true, false}) {
    INFO("init grad " << init_grad);
    CachingAllocator a;
    REQUIRE(a.malloc(1, 200 * MiB, 0).new_segment == 200 * MiB);
    REQUIRE(a.malloc(2, 400 * MiB, 0).new_segment == 400 * MiB);
    if (init_grad) {
      REQUIRE(a.malloc(3, 400 * MiB, 0).new_segment == 400 * MiB);
      CHECK(a.free(3) == 400 * MiB);
    }
    CHECK(a.malloc(4, 200 * MiB, 0).new_segment == (init_grad ? 0 : 200 * MiB));
    CHECK(a.malloc(5, 400 * MiB, 0).new_segment == 400 * MiB);
    CHECK(a.allocated() == 1200 * MiB);
    CHECK(a.reserved() == (init_grad ? 1400 : 1200) * MiB);
  }
}

TEST_CASE("CachingAllocator: best fit reuses the smallest cached block, splits and merges", "[engine][unit]") {
  CachingAllocator a;
  // A = 3 MiB: new 20 MiB segment, split into A [0,3) and a free 17 MiB block.
  REQUIRE(a.malloc(1, 3 * MiB, 0).new_segment == 20 * MiB);
  // B = 15 MiB: the 17 MiB cached block fits; 2 MiB remain (> 1 MiB) and are split off: B [3,18), free [18,20).
  const auto b = a.malloc(2, 15 * MiB, 0);
  CHECK(b.new_segment == 0);
  CHECK(b.block_bytes == 15 * MiB);
  CHECK(a.reserved() == 20 * MiB);
  CHECK(a.free(1) == 3 * MiB); // free blocks now: 3 MiB at 0, 2 MiB at 18
  // C = 1.5 MiB: best fit is the 2 MiB block, not the 3 MiB one; 0.5 MiB would remain (<= 1 MiB): not split, so C
  // holds the whole 2 MiB block (what torch.cuda.memory_allocated counts).
  const auto c = a.malloc(3, 3 * MiB / 2, 0);
  CHECK(c.new_segment == 0);
  CHECK(c.block_bytes == 2 * MiB);
  CHECK(a.allocated() == 17 * MiB);
  // Small pool: 1000 B -> 1024 B, the 2 MiB segment is split (remainder >= 512 B); the next 1000 B reuses it.
  CHECK(a.malloc(4, 1000, 0).new_segment == 2 * MiB);
  CHECK(a.malloc(5, 1000, 0).new_segment == 0);
  CHECK(a.reserved() == 22 * MiB);
  CHECK(a.segments() == 2);
  // Freeing B merges it with the free 3 MiB before it; freeing C then makes the whole 20 MiB segment one free block,
  // which empty_cache can release (it could not if the neighbours had not merged). The small segment follows.
  a.free(2);
  a.free(3);
  a.free(4);
  a.free(5);
  CHECK(a.allocated() == 0);
  CHECK(a.release_cached_segments() == 22 * MiB);
  CHECK(a.reserved() == 0);
  CHECK(a.segments() == 0);
}

TEST_CASE("CachingAllocator: live handles are counted and looked up by id, a second free returns nothing",
          "[engine][unit]") {
  CachingAllocator a;
  REQUIRE(a.malloc(7, 1000, 0).ok); // 1000 B -> 1024 B (2 x 512)
  REQUIRE(a.malloc(2, 600, 0).ok); // 600 B -> 1024 B, split from the same 2 MiB segment
  CHECK(a.live_blocks() == 2);
  CHECK(a.block_size(7) == 1024);
  CHECK(a.block_size(2) == 1024);
  CHECK(a.block_size(3) == 0); // below the largest id, never allocated
  CHECK(a.block_size(1000) == 0); // beyond every id seen
  a.mark_held(3); // not live: no-op
  CHECK(a.free(7) == 1024);
  CHECK(a.free(7) == 0); // already freed
  CHECK(a.block_size(7) == 0);
  CHECK(a.live_blocks() == 1);
  REQUIRE(a.malloc(7, 512, 0).ok); // the id is reusable once freed
  CHECK(a.block_size(7) == 512);
  CHECK(a.live_blocks() == 2);
  CHECK(a.allocated() == 512 + 1024);
}

TEST_CASE("CachingAllocator: a block freed on one stream is not reused by another", "[engine][unit]") {
  CachingAllocator a;
  REQUIRE(a.malloc(1, 4 * MiB, 1).new_segment == 20 * MiB); // stream 1
  a.free(1);
  // Stream 2 cannot use stream 1's cached 20 MiB block: it reserves a segment of its own.
  CHECK(a.malloc(2, 4 * MiB, 2).new_segment == 20 * MiB);
  CHECK(a.reserved() == 40 * MiB);
  // Stream 1 reuses its cached block.
  CHECK(a.malloc(3, 4 * MiB, 1).new_segment == 0);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.allocated() == 8 * MiB);
}

TEST_CASE("MemoryPool: fragmentation makes reserved exceed allocated by a hand-computed amount", "[engine][unit]") {
  auto pool = engine::MemoryPool::caching(80e9, 0);
  const double m = static_cast<double>(MiB);
  // X1 = 6 MiB and X2 = 6 MiB in one 20 MiB segment (8 MiB left free); X3 = 8 MiB takes the rest exactly.
  REQUIRE(pool.allocate(1, MemTag::ACTIVATIONS, 6 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(2, MemTag::ACTIVATIONS, 6 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(3, MemTag::WORKING, 8 * m, 0, 0.0, 1, false).ok);
  CHECK(pool.reserved() == Approx(20 * m).epsilon(kTol));
  pool.release(1, MemTag::ACTIVATIONS, 6 * m); // a 6 MiB hole at the segment start
  // 7 MiB does not fit the 6 MiB hole: a new 20 MiB segment (7 MiB < 10 MiB).
  REQUIRE(pool.allocate(4, MemTag::WORKING, 7 * m, 0, 1.0, 2, false).ok);
  // allocated = 6 + 8 + 7 = 21 MiB; reserved = 40 MiB; gap = 6 MiB hole + 13 MiB unused tail = 19 MiB.
  CHECK(pool.total() == Approx(21 * m).epsilon(kTol));
  CHECK(pool.reserved() == Approx(40 * m).epsilon(kTol));
  CHECK(pool.reserved() - pool.total() == Approx(19 * m).epsilon(kTol));
  const auto s = pool.summary(0);
  CHECK(s.peak.bytes == Approx(21 * m).epsilon(kTol));
  CHECK(s.reserved_peak.bytes == Approx(40 * m).epsilon(kTol));
  CHECK(s.reserved_peak.label == 2);
}

TEST_CASE("CachingAllocator: OOM when reserved would exceed capacity though allocated would fit", "[engine][unit]") {
  CachingAllocator a(40 * MiB);
  // A = 8 MiB: 20 MiB segment split into A [0,8) + 12 MiB free. B = 8 MiB: best fit 12 MiB, remainder 4 MiB split.
  REQUIRE(a.malloc(1, 8 * MiB, 0).ok);
  REQUIRE(a.malloc(2, 8 * MiB, 0).ok);
  a.free(1); // free: 8 MiB at 0 and 4 MiB at 16, separated by B: nothing merges, no segment is wholly free
  // C = 22 MiB: allocated would be 8 + 22 = 30 MiB <= 40 MiB, but no cached block is large enough and the new
  // 22 MiB segment would make reserved 20 + 22 = 42 MiB > 40 MiB; releasing the cache frees nothing: OOM.
  const auto c = a.malloc(3, 22 * MiB, 0);
  CHECK_FALSE(c.ok);
  CHECK_FALSE(c.cache_released);
  CHECK(c.needed_segment == 22 * MiB);
  CHECK(a.reserved() == 20 * MiB);
  CHECK(a.allocated() == 8 * MiB);
  CHECK(a.alloc_retries() == 1);
}

TEST_CASE("CachingAllocator: releasing cached segments avoids an OOM", "[engine][unit]") {
  CachingAllocator a(64 * MiB);
  REQUIRE(a.malloc(1, 30 * MiB, 0).new_segment == 30 * MiB);
  REQUIRE(a.malloc(2, 30 * MiB, 0).new_segment == 30 * MiB);
  a.free(1); // a whole 30 MiB segment is cached: reserved stays 60 MiB
  CHECK(a.reserved() == 60 * MiB);
  // 31 MiB does not fit the cached 30 MiB block; 60 + 32 = 92 MiB > 64 MiB, so the cached segment is released
  // (reserved 30 MiB) and the retry reserves 32 MiB: 62 MiB <= 64 MiB.
  const auto r = a.malloc(3, 31 * MiB, 0);
  CHECK(r.ok);
  CHECK(r.cache_released);
  CHECK(r.new_segment == 32 * MiB);
  CHECK(a.reserved() == 62 * MiB);
  CHECK(a.peak_reserved() == 62 * MiB);
}

TEST_CASE("MemoryPool: the rank summary counts the allocations that released the cache and retried", "[engine][unit]") {
  // The sequence of the previous test through MemoryPool: one retry (the 31 MiB request), reported in
  // RankMemory::alloc_retries as torch.cuda.memory_stats()["num_alloc_retries"] would; a request that finds room
  // (the 1 MiB one, in the small pool) adds none.
  auto pool = engine::MemoryPool::caching(64.0 * MiB, 0);
  const double m = static_cast<double>(MiB);
  REQUIRE(pool.allocate(1, MemTag::ACTIVATIONS, 30 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(2, MemTag::ACTIVATIONS, 30 * m, 0, 0.0, 1, false).ok);
  pool.release(1, MemTag::ACTIVATIONS, 30 * m);
  CHECK(pool.summary(0).alloc_retries == 0);
  const auto r = pool.allocate(3, MemTag::WORKING, 31 * m, 0, 1.0, 2, false);
  REQUIRE(r.ok);
  CHECK(r.cache_released);
  REQUIRE(pool.allocate(4, MemTag::WORKING, 0.5 * m, 0, 2.0, 3, false).ok);
  CHECK(pool.summary(0).alloc_retries == 1);
}

TEST_CASE("MemoryPool: with on_oom continue the retry count stops at the first OOM", "[engine][unit]") {
  // 64 MiB of cudaMalloc capacity. A 40 MiB request, then a 40 MiB one forced through (force = on_oom: continue):
  // the second cannot be served even after releasing the cache, 1 retry, OOM. The run goes on as if memory were
  // unlimited, so each later request beyond the capacity would fail and count again; they do not (PyTorch would
  // have stopped at the first).
  auto pool = engine::MemoryPool::caching(64.0 * MiB, 0);
  const double m = static_cast<double>(MiB);
  REQUIRE(pool.allocate(1, MemTag::ACTIVATIONS, 40 * m, 0, 0.0, 1, true).ok);
  CHECK_FALSE(pool.allocate(2, MemTag::ACTIVATIONS, 40 * m, 0, 0.0, 1, true).ok);
  CHECK(pool.summary(0).alloc_retries == 1);
  CHECK_FALSE(pool.allocate(3, MemTag::ACTIVATIONS, 40 * m, 0, 0.0, 1, true).ok);
  CHECK_FALSE(pool.allocate(4, MemTag::ACTIVATIONS, 40 * m, 0, 0.0, 1, true).ok);
  CHECK(pool.summary(0).alloc_retries == 1);
}

TEST_CASE("CachingAllocator: unreclaimable() is reserved less the segments a retry releases, by hand",
          "[engine][unit]") {
  // PyTorch's retry (release_cached_blocks: synchronize_and_free_events, then cudaFree of every free block that is a
  // whole segment) gives back the segments none of whose blocks holds a live tensor: free ones and ones whose blocks
  // record_stream holds for another stream. Sizes >= 10 MiB take a segment of their own size (multiples of 2 MiB).
  CachingAllocator a;
  REQUIRE(a.malloc(1, 100 * MiB, 0).new_segment == 100 * MiB);
  REQUIRE(a.malloc(2, 50 * MiB, 0).new_segment == 50 * MiB);
  CHECK(a.unreclaimable() == 150 * MiB); // both tensors live
  a.mark_held(2); // its tensor freed, its block held for another stream: its 50 MiB segment is reclaimable
  CHECK(a.unreclaimable() == 100 * MiB);
  CHECK(a.allocated() == 150 * MiB); // memory_allocated still counts the held block
  a.free(1); // a whole free 100 MiB segment: reclaimable too
  CHECK(a.unreclaimable() == 0);
  CHECK(a.reserved() == 150 * MiB);
  // 30 MiB reuses the cached 100 MiB block (best fit), split: 70 MiB stay free inside a segment that now holds a
  // live tensor, so the whole 100 MiB segment is kept (fragmentation is not given back).
  REQUIRE(a.malloc(3, 30 * MiB, 0).new_segment == 0);
  CHECK(a.unreclaimable() == 100 * MiB);
  // 200 MiB: a new segment. Reserved 350 MiB, of which the held 50 MiB segment is reclaimable: 300 MiB, the most.
  REQUIRE(a.malloc(4, 200 * MiB, 0).new_segment == 200 * MiB);
  CHECK(a.peak_reserved() == 350 * MiB);
  CHECK(a.unreclaimable() == 350 * MiB - 50 * MiB);
  CHECK(a.peak_unreclaimable() == 300 * MiB);
  // The held block comes back: nothing more is reclaimable (its segment already counted), nothing less.
  a.free(2);
  CHECK(a.unreclaimable() == 300 * MiB);
  // empty_cache releases the free 50 MiB segment: reserved and the reclaimable part drop together.
  CHECK(a.release_cached_segments() == 50 * MiB);
  CHECK(a.reserved() == 300 * MiB);
  CHECK(a.unreclaimable() == 300 * MiB);
  a.mark_held(7); // not live: no-op
  CHECK(a.unreclaimable() == 300 * MiB);
}

TEST_CASE("run_simulation: held blocks fill the card and the unreclaimable peak is reserved less them",
          "[engine][unit]") {
  // cudaMalloc can obtain 34 MiB (the GPU holds the CUDA context + 34 MiB). The host stream allocates x1 = 16 MiB,
  // the compute stream reads it in a 1e9 B memory-bound kernel (0.625 ms), the host frees x1's tensor at once
  // (record_stream: the block stays held) and allocates x2 = 16 MiB (a second segment: reserved 32 MiB, the reserved
  // peak), which the compute stream also reads; the host frees x2's tensor and asks for y = 12 MiB: 32 + 12 MiB >
  // 34 MiB, so the cudaMalloc fails, waits for both held blocks, releases their segments and retries: one retry.
  // At the reserved peak: reserved 32 MiB; tensors 16 MiB (x2; the reported by-tag sum); blocks not free 32 MiB
  // (reserved_peak_held: x1 held + x2); held for another stream = 32 - 16 = 16 MiB; cached = 32 - 32 = 0.
  // The gate's figure, reserved - held - cached, is 32 - 16 - 0 = 16 MiB: x1's segment is what the retry gives
  // back. No moment holds more that a retry could not release (x1 alone: 16; y alone: 12).
  const double m = static_cast<double>(MiB);
  ProgramBuilder b;
  auto h = b.add_stream("host", StreamKind::COMPUTE);
  auto c = b.add_stream("compute", StreamKind::COMPUTE);
  auto x1 = b.alloc(h, Phase::FORWARD, "gathered x1", MemTag::GATHER_BUFFER, Bytes(16 * m));
  b.join(c, h);
  b.compute(c, Phase::FORWARD, "fwd reads x1", Flops(0), Bytes(1e9));
  b.free_tensor(h, Phase::FORWARD, x1);
  b.free_block(c, Phase::FORWARD, x1);
  auto x2 = b.alloc(h, Phase::FORWARD, "gathered x2", MemTag::GATHER_BUFFER, Bytes(16 * m));
  b.join(c, h);
  b.compute(c, Phase::FORWARD, "fwd reads x2", Flops(0), Bytes(1e9));
  b.free_tensor(h, Phase::FORWARD, x2);
  b.free_block(c, Phase::FORWARD, x2);
  auto y = b.alloc(h, Phase::FORWARD, "gathered y", MemTag::GATHER_BUFFER, Bytes(12 * m));
  b.free(h, Phase::FORWARD, y);
  b.join(h, c);
  const auto p = b.build(1);
  REQUIRE(validate(p).empty());
  const double context = 287'047'680.0;
  const auto res = engine::run_simulation(small_cluster(1, context + 34 * m), p, engine::EngineOptions{});
  REQUIRE(res.finished);
  REQUIRE_FALSE(res.oom.has_value());
  const auto& mem = res.memory[0];
  CHECK(mem.alloc_retries == 1);
  double tensors = 0;
  for (const double t : mem.reserved_peak.by_tag)
    tensors += t;
  CHECK(mem.reserved_peak.bytes == Approx(32 * m).epsilon(kTol));
  CHECK(tensors == Approx(16 * m).epsilon(kTol));
  const double held = mem.reserved_peak_held - tensors;
  const double cached = mem.reserved_peak.bytes - mem.reserved_peak_held;
  CHECK(held == Approx(16 * m).epsilon(kTol));
  CHECK(cached == Approx(0.0).margin(1.0));
  CHECK(mem.unreclaimable_peak == Approx(mem.reserved_peak.bytes - held - cached).epsilon(kTol));
  CHECK(mem.unreclaimable_peak == Approx(16 * m).epsilon(kTol));
  // nvidia-smi shows reserved + context: 32 MiB + context, 94.1 % of the card (context + 34 MiB); the memory the
  // run cannot give back is 16 MiB + context.
  CHECK(mem.nvidia_smi_peak == Approx(context + 32 * m).epsilon(kTol));
  CHECK(mem.non_pytorch_bytes == Approx(context).epsilon(kTol));
}

TEST_CASE("MemoryPool: expandable segments count the live tensors' blocks as unreclaimable, held ones not",
          "[engine][unit]") {
  // Expandable: one growing segment per stream and pool; a failed mapping unmaps every page inside a free block.
  // 40 MiB and 20 MiB on stream 0 map 60 MiB (20 MiB pages). x (20 MiB) is held for another stream: after a retry's
  // synchronize its pages are free and unmapped, so 40 MiB stays.
  auto pool = engine::MemoryPool::caching(1e12, 0, true);
  const double m = static_cast<double>(MiB);
  REQUIRE(pool.allocate(1, MemTag::ACTIVATIONS, 40 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(2, MemTag::GATHER_BUFFER, 20 * m, 0, 0.0, 1, false).ok);
  pool.release_tensor(2, MemTag::GATHER_BUFFER, 20 * m);
  REQUIRE(pool.allocate(3, MemTag::WORKING, 20 * m, 0, 0.0, 1, false).ok); // new pages: 80 MiB mapped
  const auto s = pool.summary(0);
  CHECK(s.reserved_peak.bytes == Approx(80 * m).epsilon(kTol));
  CHECK(s.unreclaimable_peak == Approx(60 * m).epsilon(kTol)); // 40 + 20 live, the held 20 MiB not
}

TEST_CASE("nccl_buffer_bytes: NCCL's per-channel arrays and 10 + 2 MiB per ring (and tree) link, none for one GPU",
          "[engine][unit]") {
  // NCCL v2.27.7-1 constants: LL 8 x 512 x 8 x 16 B = 524,288 B; LL128 120 x 640 x 8 x 8 B = 4,915,200 B; SIMPLE
  // 4,194,304 B; together 9,633,792 B = 9.1875 MiB, which the receiver's buffer (plus its header) rounds up to
  // 10 MiB (CUDA_IPC_MIN 2 MiB); the sender's header rounds up to 2 MiB: 12 MiB per channel per link.
  // Metadata: 2 x 2 MiB per communicator + 3 x 2 MiB per channel of pow2Up(C).
  CHECK(engine::nccl_buffer_bytes(small_cluster(1, 80e9)) == 0.0);
  // PCIe-class (25e9 B/s): C = 2; two ranks, so the tree's peers are the ring's. 4 + 2 x 6 + 2 x 12 = 40 MiB.
  CHECK(engine::nccl_buffer_bytes(small_cluster(2, 80e9)) == Approx(40.0 * MiB).epsilon(kTol));
  // Two communicators (ZeRO stage 3): 80 MiB.
  CHECK(engine::nccl_buffer_bytes(small_cluster(2, 80e9), 2) == Approx(80.0 * MiB).epsilon(kTol));
  // Without p2p the FIFOs live in host memory (SHM transport): only the metadata, 16 MiB.
  auto shm = small_cluster(2, 80e9);
  shm.p2p = false;
  CHECK(engine::nccl_buffer_bytes(shm) == Approx(16.0 * MiB).epsilon(kTol));
  // NVLink/NVSwitch, 8 ranks, C = 16, ring only: 4 + 16 x 6 + 16 x 12 = 292 MiB.
  auto nvlink = small_cluster(8, 80e9);
  nvlink.intra_node.bandwidth = ByteRate(300e9);
  nvlink.collective_algorithm = "ring";
  CHECK_FALSE(engine::nccl_tree_connected(nvlink));
  CHECK(engine::nccl_buffer_bytes(nvlink) == Approx(292.0 * MiB).epsilon(kTol));
  // All-reduces on the tree connect its reverse-direction links too: + 16 x 12 = 484 MiB.
  nvlink.collective_algorithm = "tree";
  CHECK(engine::nccl_tree_connected(nvlink));
  CHECK(engine::nccl_buffer_bytes(nvlink) == Approx(484.0 * MiB).epsilon(kTol));
  // cluster.nccl_channels 24 (ring): pow2Up = 32 channels of metadata, 4 + 32 x 6 + 24 x 12 = 484 MiB.
  nvlink.collective_algorithm = "ring";
  nvlink.nccl_channels = 24;
  CHECK(engine::nccl_buffer_bytes(nvlink) == Approx(484.0 * MiB).epsilon(kTol));
  auto one = small_cluster(1, 80e9);
  one.nccl_channels = 24;
  CHECK(engine::nccl_buffer_bytes(one, 2) == 0.0);
}

TEST_CASE("nccl_communicators: DeepSpeed's cloned world group, plus the world group itself at stage 3",
          "[engine][unit]") {
  // groups.py _clone_world_group for stages 0-2; stage 3 partitions on dist.get_world_group() as well.
  CHECK(engine::nccl_communicators(0) == 1);
  CHECK(engine::nccl_communicators(1) == 1);
  CHECK(engine::nccl_communicators(2) == 1);
  CHECK(engine::nccl_communicators(3) == 2);
}

TEST_CASE("nccl_communicators: under an mpu the data-parallel group and Megatron's world group at every stage",
          "[engine][unit]") {
  // Megatron-DeepSpeed: parallel_state.py:195-201 (@4efb479d) makes the data-parallel group with new_group, which
  // DeepSpeed uses for every ZeRO collective (groups.py _get_data_parallel_group, l.321-329 @v0.6.2: no clone of the
  // world group); initialize.py:154-162 runs barriers on the world group: two communicators at stages 0-3.
  using scenario::ProcessGroups;
  for (int stage = 0; stage <= 3; ++stage)
    CHECK(engine::nccl_communicators(stage, ProcessGroups::MPU) == 2);
  CHECK(engine::nccl_communicators(2, ProcessGroups::DEEPSPEED) == 1);
  // Hand calculation: 2 ranks, 2 channels (small_cluster, the test above): 40 MiB per communicator, so a stage-2
  // run under an mpu holds 80 MiB of NCCL buffers where the same run without one holds 40 MiB.
  const auto c = small_cluster(2, 80e9);
  CHECK(engine::nccl_buffer_bytes(c, engine::nccl_communicators(2, ProcessGroups::MPU)) ==
        Approx(80.0 * MiB).epsilon(kTol));
  CHECK(engine::nccl_buffer_bytes(c, engine::nccl_communicators(2, ProcessGroups::DEEPSPEED)) ==
        Approx(40.0 * MiB).epsilon(kTol));
}

TEST_CASE("run_simulation: allocated peak fits but reserved does not, so the run is out of memory", "[engine][unit]") {
  // 1 GPU (no NCCL): capacity = CUDA context 287,047,680 B + 40 MiB, so cudaMalloc can get 40 MiB in all. The
  // allocation pattern of the OOM test above: 8 + 22 = 30 MiB allocated would fit, 20 + 22 = 42 MiB reserved not.
  const double m = static_cast<double>(MiB);
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  auto a1 = b.alloc(s, Phase::FORWARD, "a", MemTag::ACTIVATIONS, Bytes(8 * m));
  b.alloc(s, Phase::FORWARD, "b", MemTag::ACTIVATIONS, Bytes(8 * m));
  b.free(s, Phase::FORWARD, a1);
  b.alloc(s, Phase::FORWARD, "c", MemTag::WORKING, Bytes(22 * m));
  const auto r = engine::run_simulation(small_cluster(1, 287'047'680.0 + 40 * m), b.build(1), engine::EngineOptions{});
  REQUIRE(r.oom.has_value());
  CHECK_FALSE(r.finished);
  CHECK(r.oom->device == Device::GPU);
  CHECK(r.oom->tag == MemTag::WORKING);
  CHECK(r.oom->allocated == Approx(8 * m).epsilon(kTol));
  CHECK(r.oom->reserved == Approx(20 * m).epsilon(kTol));
  CHECK(r.oom->needed == Approx(22 * m).epsilon(kTol));
  CHECK(r.oom->non_pytorch == Approx(287'047'680.0).epsilon(kTol));
  CHECK(r.oom->allocated + r.oom->requested <= r.oom->capacity - r.oom->non_pytorch); // allocated would fit
  REQUIRE(r.memory.size() == 1);
  CHECK(r.memory[0].peak.bytes == Approx(16 * m).epsilon(kTol));
  CHECK(r.memory[0].reserved_peak.bytes == Approx(20 * m).epsilon(kTol));
}

TEST_CASE("run_simulation: nvidia-smi figure is reserved plus the CUDA context on one GPU (zero_semantics §7.32)",
          "[engine][unit]") {
  ProgramBuilder b;
  auto s = b.add_stream("compute", StreamKind::COMPUTE);
  b.alloc(s, Phase::INIT, "tiny", MemTag::WORKING, Bytes(1)); // 512 B allocated, one 2 MiB segment reserved
  const auto r = engine::run_simulation(small_cluster(1, 24e9), b.build(1), engine::EngineOptions{});
  REQUIRE(r.finished);
  REQUIRE(r.memory.size() == 1);
  const auto& m = r.memory[0];
  CHECK(m.peak.bytes == 512.0);
  CHECK(m.reserved_peak.bytes == 2.0 * MiB);
  CHECK(m.non_pytorch_bytes == 287'047'680.0); // PyTorch PR #86509, lazy loading; no NCCL with one rank
  CHECK(m.nvidia_smi_peak == 2.0 * MiB + 287'047'680.0);
}

TEST_CASE("run_simulation: a record_stream'd tensor leaves allocated at its TENSOR free and reserved at its BLOCK free",
          "[engine][unit]") {
  // One GPU. g = 8 MiB takes a 20 MiB segment. Its tensor is freed on compute while the second stream still reads
  // it (a 1 GB memory-bound kernel): allocated drops to 0 at once but the block stays held, so w = 16 MiB does not
  // fit the 12 MiB left in the segment and a new 16 MiB segment is cudaMalloc'd. Allocated peak = 16 MiB (24 MiB
  // if the TENSOR free did not count), reserved peak = 20 + 16 = 36 MiB (20 MiB if the block were released with
  // the tensor).
  const double m = static_cast<double>(MiB);
  ProgramBuilder b;
  auto c = b.add_stream("compute", StreamKind::COMPUTE);
  auto r = b.add_stream("reduce", StreamKind::COMPUTE);
  auto g = b.alloc(c, Phase::BACKWARD, "grad", MemTag::LP_GRADS, Bytes(8 * m));
  b.join(r, c);
  b.compute(r, Phase::BACKWARD, "copy grad to bucket", Flops(0), Bytes(1e9));
  b.free_block(r, Phase::BACKWARD, g);
  b.free_tensor(c, Phase::BACKWARD, g);
  auto w = b.alloc(c, Phase::BACKWARD, "work", MemTag::WORKING, Bytes(16 * m));
  b.free(c, Phase::BACKWARD, w);
  b.join(c, r);
  const auto p = b.build(1);
  REQUIRE(validate(p).empty());
  const auto res = engine::run_simulation(small_cluster(1, 24e9), p, engine::EngineOptions{});
  REQUIRE(res.finished);
  CHECK(res.diagnostics.empty()); // no stray Free
  CHECK(res.memory[0].peak.bytes == Approx(16 * m).epsilon(kTol));
  CHECK(res.memory[0].reserved_peak.bytes == Approx(36 * m).epsilon(kTol));
  // Not free at that peak: w's 16 MiB block and g's 8 MiB block, which record_stream still holds for the second
  // stream (24 MiB); the rest of g's segment, 12 MiB, is the cached free part.
  CHECK(res.memory[0].reserved_peak_held == Approx(24 * m).epsilon(kTol));
  CHECK(res.memory[0].final_bytes == 0);
}

TEST_CASE("run_simulation: a failing cudaMalloc waits for record_stream'd blocks, then releases the cache and retries",
          "[engine][unit]") {
  // cudaMalloc can obtain 30 MiB (the GPU holds the CUDA context + 30 MiB). The host stream allocates x = 16 MiB
  // (one 16 MiB segment); the compute stream reads it in a 1e9 B memory-bound kernel, 1e9 / (2e12 x 0.8) =
  // 0.625 ms; the host frees x's tensor at once (free_param: record_stream, then param.data = empty) and asks for
  // y = 16 MiB. 16 + 16 MiB > 30 MiB, so cudaMalloc fails; PyTorch's release_cached_blocks first synchronizes the
  // events of record_stream'd blocks: the host waits until the compute stream's BLOCK free at t = 0.625 ms, x's
  // segment is whole and free, it is released, and y's cudaMalloc succeeds. Without the wait this is an OOM.
  // The host then runs its own 0.625 ms kernel on y: the run ends at 2 x 0.625 ms, not 0.625 ms.
  const double m = static_cast<double>(MiB);
  ProgramBuilder b;
  auto h = b.add_stream("host", StreamKind::COMPUTE);
  auto c = b.add_stream("compute", StreamKind::COMPUTE);
  auto x = b.alloc(h, Phase::FORWARD, "gathered x", MemTag::GATHER_BUFFER, Bytes(16 * m));
  b.join(c, h);
  b.compute(c, Phase::FORWARD, "fwd reads x", Flops(0), Bytes(1e9));
  b.free_tensor(h, Phase::FORWARD, x);
  b.free_block(c, Phase::FORWARD, x);
  auto y = b.alloc(h, Phase::FORWARD, "gathered y", MemTag::GATHER_BUFFER, Bytes(16 * m));
  b.compute(h, Phase::FORWARD, "fwd reads y", Flops(0), Bytes(1e9));
  b.free(h, Phase::FORWARD, y);
  b.join(h, c);
  const auto p = b.build(1);
  REQUIRE(validate(p).empty());
  const auto res = engine::run_simulation(small_cluster(1, 287'047'680.0 + 30 * m), p, engine::EngineOptions{});
  REQUIRE(res.finished);
  REQUIRE_FALSE(res.oom.has_value());
  const auto& mem = res.memory[0];
  CHECK(mem.alloc_retries == 1);
  CHECK(mem.alloc_retry_wait == Approx(1e9 / (2e12 * 0.8)).epsilon(1e-9));
  CHECK(mem.peak.bytes == Approx(16 * m).epsilon(kTol)); // x's tensor was freed before y
  CHECK(res.end_time == Approx(2 * 1e9 / (2e12 * 0.8)).epsilon(1e-9));
  CHECK(mem.reserved_peak.bytes == Approx(16 * m).epsilon(kTol)); // x's segment was released before y's
  CHECK(mem.final_bytes == 0);
}

TEST_CASE("run_simulation: host memory is shared per node and overflows as a host OOM", "[engine][unit]") {
  // 2 ranks on one node with 100e9 B of host RAM: each allocates 60e9 B on the host (each alone would fit), the node
  // would hold 120e9 B > 100e9 B: the second allocation is a host OOM.
  ProgramBuilder b;
  auto cpu = b.add_stream("cpu", StreamKind::CPU);
  b.alloc(cpu, Phase::INIT, "master", MemTag::FP32_MASTER, Bytes(60e9), Device::HOST);
  const auto r = engine::run_simulation(small_cluster(2, 80e9, 100e9), b.build(1), engine::EngineOptions{});
  REQUIRE(r.oom.has_value());
  CHECK_FALSE(r.finished);
  CHECK(r.oom->device == Device::HOST);
  CHECK(r.oom->capacity == Approx(100e9).epsilon(kTol));
  CHECK(r.oom->node == 0);
  CHECK(r.oom->requested == Approx(60e9).epsilon(kTol));
  CHECK(r.oom->live_by_tag[static_cast<std::size_t>(MemTag::FP32_MASTER)] == Approx(60e9).epsilon(kTol));
  CHECK(r.host_capacity == Approx(100e9).epsilon(kTol));
}

TEST_CASE("MemoryPool: a zero-byte GPU tensor takes no block and a 1 B one counts 512 B (zero_semantics §7.31)",
          "[engine][unit]") {
  auto pool = engine::MemoryPool::caching(24e9, 287'047'680.0);
  REQUIRE(pool.allocate(1, MemTag::WORKING, 0, 0, 0.0, 1, false).ok); // PyTorch returns a null pointer for size 0
  CHECK(pool.total() == 0.0);
  CHECK(pool.reserved() == 0.0);
  REQUIRE(pool.allocate(2, MemTag::WORKING, 1, 0, 0.0, 1, false).ok);
  CHECK(pool.total() == 512.0);
  CHECK(pool.reserved() == 2.0 * MiB);
  pool.release(2, MemTag::WORKING, 1);
  pool.release(1, MemTag::WORKING, 0);
  CHECK(pool.total() == 0.0);
  CHECK(pool.reserved() == 2.0 * MiB); // the freed block stays cached
}

TEST_CASE("CachingAllocator: expandable segments grow one segment by 20 MiB pages and reuse its free tail",
          "[engine][unit]") {
  // Note [Expandable Segments]: one segment per stream and pool, large-pool pages of 20 MiB. 30 MiB maps 2 pages
  // (40 MiB) and leaves a 10 MiB free remainder (> 1 MiB: split), which an 8 MiB request then reuses.
  CachingAllocator a(0, true);
  const auto r1 = a.malloc(1, 30 * MiB, 0);
  REQUIRE(r1.ok);
  CHECK(r1.new_segment == 40 * MiB);
  CHECK(a.reserved() == 40 * MiB);
  const auto r2 = a.malloc(2, 8 * MiB, 0);
  REQUIRE(r2.ok);
  CHECK(r2.new_segment == 0);
  CHECK(a.reserved() == 40 * MiB);
  CHECK(a.segments() == 1);
  // Another stream gets a segment of its own.
  CHECK(a.malloc(3, 30 * MiB, 7).new_segment == 40 * MiB);
  CHECK(a.segments() == 2);
}

TEST_CASE("CachingAllocator: expandable segments fit a request that a sliver of a split segment refuses",
          "[engine][unit]") {
  // Capacity 80 MiB. Sequence: 50 MiB, free it, 30 MiB (reuses and splits it), then 40 MiB with 30 MiB live.
  // Default: the 50 MiB segment holds the live 30 MiB and a 20 MiB free sliver; 40 MiB needs a new 40 MiB segment:
  // 50 + 40 > 80 and no segment is wholly free -> OOM.
  // Expandable: 50 MiB maps 3 pages (60 MiB); the 30 MiB reuses it and leaves [30, 60) free; 40 MiB starts at 30 MiB
  // and needs [60, 70): one more page -> 80 MiB mapped = the capacity: fits, 70 MiB allocated.
  for (bool expandable : {false, true}) {
    INFO("expandable " << expandable);
    CachingAllocator a(80 * MiB, expandable);
    REQUIRE(a.malloc(1, 50 * MiB, 0).ok);
    a.free(1);
    REQUIRE(a.malloc(2, 30 * MiB, 0).ok);
    const auto r = a.malloc(3, 40 * MiB, 0);
    CHECK(r.ok == expandable);
    if (expandable) {
      CHECK(a.reserved() == 80 * MiB);
      CHECK(a.allocated() == 70 * MiB);
    } else {
      CHECK(r.needed_segment == 40 * MiB);
    }
  }
}

TEST_CASE("CachingAllocator: expandable segments unmap the pages inside free blocks before an OOM, then retry",
          "[engine][unit]") {
  // Capacity 100 MiB, expandable. a = 40 MiB at [0, 40), b = 40 MiB at [40, 80), c = 10 MiB at [80, 90) (one more
  // page: 100 MiB mapped, [90, 100) free). free(a). 50 MiB: no mapped free block is large enough; the lowest run is
  // [0, 40) (40 < 50, closed by b), then [90, 100) reaching the end: it needs [100, 140), 2 pages, 140 > 100 ->
  // unmap the pages wholly inside free blocks: [0, 20) and [20, 40) (the page [80, 100) holds c): 60 MiB mapped;
  // retry: [0, 40) is still too short, [90, 100) + 2 pages -> 100 MiB mapped, 100 MiB allocated.
  CachingAllocator a(100 * MiB, true);
  REQUIRE(a.malloc(1, 40 * MiB, 0).ok);
  REQUIRE(a.malloc(2, 40 * MiB, 0).ok);
  REQUIRE(a.malloc(3, 10 * MiB, 0).ok);
  CHECK(a.reserved() == 100 * MiB);
  a.free(1);
  const auto r = a.malloc(4, 50 * MiB, 0);
  REQUIRE(r.ok);
  CHECK(r.cache_released);
  CHECK(a.alloc_retries() == 1);
  CHECK(a.reserved() == 100 * MiB);
  CHECK(a.allocated() == 100 * MiB);
  // empty_cache with nothing free releases nothing; freeing b then releases its two pages.
  CHECK(a.release_cached_segments() == 0);
  a.free(2);
  CHECK(a.release_cached_segments() == 40 * MiB);
  CHECK(a.reserved() == 60 * MiB);
  // The unmapped hole [0, 80) is mapped again, from its start, by a request that fits in it (lowest address first):
  // 40 MiB maps 2 pages, back to 100 MiB.
  const auto again = a.malloc(5, 40 * MiB, 0);
  REQUIRE(again.ok);
  CHECK(again.new_segment == 40 * MiB);
  CHECK(a.reserved() == 100 * MiB);
  CHECK(a.segments() == 1);
}

TEST_CASE("MemoryPool: with expandable segments the same fragmenting sequence reserves one growing segment",
          "[engine][unit]") {
  // The sequence of "fragmentation makes reserved exceed allocated": 6, 6, 8 MiB, free the first 6, then 7 MiB.
  // Expandable (20 MiB large-pool pages): 6 + 6 + 8 = 20 MiB map exactly one page; the 7 MiB request does not fit
  // the 6 MiB hole, so it goes to the lowest address where pages can be added: the tail, one more page.
  // reserved = 40 MiB as before, but in ONE segment, and an OOM retry could unmap nothing (no page is wholly free:
  // the 6 MiB hole and the 13 MiB tail share their pages with live blocks).
  auto pool = engine::MemoryPool::caching(80e9, 0, true);
  const double m = static_cast<double>(MiB);
  REQUIRE(pool.allocate(1, MemTag::ACTIVATIONS, 6 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(2, MemTag::ACTIVATIONS, 6 * m, 0, 0.0, 1, false).ok);
  REQUIRE(pool.allocate(3, MemTag::WORKING, 8 * m, 0, 0.0, 1, false).ok);
  CHECK(pool.reserved() == Approx(20 * m).epsilon(kTol));
  pool.release(1, MemTag::ACTIVATIONS, 6 * m);
  REQUIRE(pool.allocate(4, MemTag::WORKING, 7 * m, 0, 1.0, 2, false).ok);
  CHECK(pool.total() == Approx(21 * m).epsilon(kTol));
  CHECK(pool.reserved() == Approx(40 * m).epsilon(kTol));
}
