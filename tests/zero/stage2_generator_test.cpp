#include "sim/zero/stage2_generator.hpp"
#include "sim/zero/model_states.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <utility>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
}

TEST_CASE(
    "Stage2Generator: step phases 2Ψ+20Ψ/N -> 2Ψ+18Ψ/N -> 2Ψ+16Ψ/N -> 2Ψ+12Ψ/N (zero_semantics.md §3.4) "
    "(zero_semantics §7.15)",
    "[zero][validation]") {
  // stage_1_and_2.py step: lp params 2Ψ + master 4Ψ/N + m,v 8Ψ/N + grads_in_partition 2Ψ/N + lp flat 2Ψ/N + fp32
  // grad 4Ψ/N = 2Ψ + 20Ψ/N; del lp flat -> 18; averaged_gradients = None -> 16 during Adam; fp32 grad freed -> 12.
  // Measured in step 1 (m,v exist from step 0). Activations and buckets are freed by then, so these are totals.
  const TinyModel m;
  const double p = psi(m);
  for (int n : {2, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), zero_config(2), n));
    REQUIRE(r.find(1, "fp32 grad partition", false)->total == Approx(2 * p + 20 * p / n).epsilon(kTol));
    REQUIRE(r.find(1, "flatten partition grads", true)->total == Approx(2 * p + 18 * p / n).epsilon(kTol));
    REQUIRE(r.find(1, "grads_in_partition", true)->total == Approx(2 * p + 16 * p / n).epsilon(kTol));
    REQUIRE(r.find(1, "fp32 grad partition", true)->total == Approx(2 * p + 12 * p / n).epsilon(kTol));
  }
}

TEST_CASE("Stage2Generator: steady-state model states equal the paper's P_os+g = 2Ψ + 14Ψ/N_d (ZeRO §5)",
          "[zero][validation]") {
  // Peak over step 1: lp params 2Ψ + grads_in_partition 2Ψ/N + master 4Ψ/N + m/v 8Ψ/N. DeepSpeed differences:
  // grads live only from their bucket's reduction to the step (freed after), and each per-param lp grad is freed
  // right after its copy into the bucket, so no full-size grads coexist with grads_in_partition here.
  const TinyModel m;
  for (int n : {1, 2, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), zero_config(2), n));
    REQUIRE(r.peak([](const Sample& s) { return s.model_states(); }, 1) ==
            Approx(paper_model_state_bytes(2, psi(m), n).value()).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage2Generator: IPG bucket is 1e9 B / 2e9 B with overlap_comm / freed at each backward epilogue "
    "(zero_semantics §7.10)",
    "[zero][validation]") {
  TinyModel m;
  m.grad_accum = 2;
  for (bool overlap : {false, true}) {
    INFO("overlap_comm " << overlap);
    auto z = zero_config(2);
    z.overlap_comm = overlap;
    const auto r = walk(generate(make_workload(m), z, 4));
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }) ==
            Approx(overlap ? 2e9 : 1e9).epsilon(kTol));
    // Released after micro-step 0's backward: gone when micro-step 1's forward starts.
    REQUIRE(find_nth_alloc(r, 1, "act block.0", 1)->tag(MemTag::IPG_BUCKET) == 0);
  }
}

TEST_CASE(
    "Stage2Generator: every micro-step all-reduces 2Ψ bytes (multi-rank bucket all-reduce / not a "
    "reduce-scatter) in chunks of at most reduce_bucket_size (§3.4) (zero_semantics §7.13, §7.14)",
    "[zero][validation]") {
  // Hand calculation with B_r = 1.5e6 elements, backward order b3 (1e3), w3 (1e6), b2, w2, ...: the bucket takes
  // b3 + w3 = 1,001,000; b2 fits (1,002,000); w2 does not -> flush. Each later bucket holds w_k + b_{k-1}
  // = 1,001,000 and the last one w0 alone: 4 all-reduces per micro-step, 2Ψ bytes in total.
  TinyModel m;
  m.grad_accum = 2;
  auto z = zero_config(2);
  z.reduce_bucket_size = 1'500'000;
  const auto r = walk(generate(make_workload(m), z, 4));
  REQUIRE(r.stats(1, CollectiveKind::ALL_REDUCE).calls == 4 * 2);
  REQUIRE(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m) * 2).epsilon(kTol));
  REQUIRE(r.stats(1, CollectiveKind::REDUCE_SCATTER).calls == 0);
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, 0) <= 2 * 1.5e6);
  // GA > 1: later micro-steps' partition grads go to a second buffer added into the first (2 x 2Ψ/N at most).
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GRAD_PARTITION); }) ==
          Approx(2 * 2 * psi(m) / 4).epsilon(kTol));
}

TEST_CASE("Stage2Generator: Adam state is created lazily at the first step (zero_semantics §7.17)",
          "[zero][validation]") {
  const TinyModel m;
  const auto r = walk(generate(make_workload(m), zero_config(2), 4));
  REQUIRE(last_of(r, -1)->tag(MemTag::OPTIMIZER_STATES) == 0);
  REQUIRE(last_of(r, 0)->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * psi(m) / 4).epsilon(kTol));
}

TEST_CASE(
    "Stage2Generator: init flattens the lp params on the GPU only when the free memory holds the flat copy "
    "(stage_1_and_2.py flatten_on_accelerator, DeepSpeed >= v0.19.0)",
    "[zero][validation]") {
  // TinyModel, N_d = 2: Ψ is a multiple of 2N, so the flat buffer is exactly 2Ψ B (fp16). With the module's lp params
  // loaded (2Ψ), the GPU flatten needs 2Ψ more: free memory for PyTorch >= 4Ψ takes the GPU path (module params +
  // flat copy = 4Ψ at once), anything less the CPU path (params moved to the host, flattened there, 2Ψ copied back).
  const TinyModel m;
  const double p = psi(m);
  const auto wl = make_workload(m);
  for (const auto& [free, init_peak] : {std::pair{4.0 * p, 4.0 * p}, std::pair{4.0 * p - 1.0, 2.0 * p}}) {
    INFO("free " << free);
    GeneratorInput in{wl, zero_config(2), 2, 1, 0.0};
    in.gpu_memory_for_pytorch = free;
    const auto r = walk(generate_program(in));
    // Init = everything before step 0; the fp32 master partition (4Ψ/N) and its lp clone (fp32_master_init_test)
    // come after the flatten and are left out here.
    const double peak = r.peak(
        [](const Sample& s) {
          return s.label.rfind("fp32 master", 0) == 0 ? 0.0 : s.tag(MemTag::LP_PARAMS) + s.tag(MemTag::FLATTEN_TEMP);
        },
        -1);
    REQUIRE(peak == Approx(init_peak).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage2Generator: DeepSpeed >= 0.19 flattens the lp params on the GPU when a second copy fits, older "
    "releases on the CPU (stage_1_and_2.py flatten_on_accelerator, v0.19.0)",
    "[zero][validation]") {
  // INIT: the flat lp buffer 2Ψ always; with flatten_on_accelerator the module params and the flat copy coexist for
  // a moment, a FLATTEN_TEMP of 2Ψ; v0.9.0 .. v0.18.x move the params to the CPU and flatten there (no transient).
  const TinyModel m;
  const double lp = 2 * psi(m);
  auto z = zero_config(2);
  const auto now = walk(generate(make_workload(m), z, 2));
  CHECK(now.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, -1) == Approx(lp).epsilon(kTol));
  z.deepspeed_version = {0, 18, 0};
  const auto old = walk(generate(make_workload(m), z, 2));
  // The only init transient left is the fp32 master's lp clone, 2 B x Ψ/2 (fp32_master_init_test).
  CHECK(old.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, -1) == Approx(lp / 2).epsilon(kTol));
  CHECK(
      old.peak([](const Sample& s) { return s.label.rfind("fp32 master", 0) == 0 ? 0.0 : s.tag(MemTag::FLATTEN_TEMP); },
               -1) == 0);
  CHECK(last_of(old, -1)->tag(MemTag::LP_PARAMS) == Approx(lp).epsilon(kTol));
}

TEST_CASE(
    "Stage2Generator: contiguous_gradients=False all-reduces each bucket (buffered_reduce_fallback) whatever "
    "reduce_scatter and use_multi_rank_bucket_allreduce say",
    "[zero][validation]") {
  // reduce_ipg_grads without contiguous grads calls buffered_reduce_fallback -> allreduce_and_copy: all-reduce of
  // every gradient, 2Ψ bytes of payload per micro-step and no reduce-scatter (stage_1_and_2.py @v0.9.0, @v0.19.5).
  // With contiguous grads and use_multi_rank_bucket_allreduce=False the same buckets go out as per-owner reduces
  // (average_tensor: dist.reduce of each owner's slices), 2Ψ bytes of payload in all, no reduce-scatter.
  const TinyModel m;
  auto z = zero_config(2);
  z.use_multi_rank_bucket_allreduce = false;
  z.contiguous_gradients = false;
  const auto r = walk(generate(make_workload(m), z, 4));
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == 0);
  z.contiguous_gradients = true;
  const auto rc = walk(generate(make_workload(m), z, 4));
  CHECK(rc.stats(1, CollectiveKind::ALL_REDUCE).payload == 0);
  CHECK(rc.stats(1, CollectiveKind::REDUCE_SCATTER).payload == 0);
  CHECK(rc.stats(1, CollectiveKind::REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
}

TEST_CASE("Stage2Generator: a layer's backward runs per submodule, each submodule's gradient hook after its part",
          "[zero][unit]") {
  // DeepSpeed's gradient hooks fire per parameter while the layer's backward runs (stage_1_and_2.py
  // reduce_ready_partitions_and_remove_grads). Backward runs blk.b (share 0.25) then blk.a:
  //  - blk.b's gradient reaches the bucket before blk.a's backward kernels run;
  //  - each part holds the op temporaries (5e5 B) only around its kernels: none are live at a bucket copy;
  //  - each saved tensor is freed by the part of the submodule that saves it: after blk.b's part its two tensors
  //    (2e6 + 2e6 B), so 4e6 B (blk.a's) are still live at blk.b's copy -- not the 6e6 B a release in proportion to
  //    the part's share (0.25 x 8e6 = 2e6 B freed) would leave; after blk.a's part (the last) none.
  const auto r = walk(generate(two_submodule_layer(), zero_config(2), 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* copy_b = &op_at(r, 1, "copy grad to bucket blk.b.weight");
  const Sample* copy_a = &op_at(r, 1, "copy grad to bucket blk.a.weight");
  const Sample* bwd_b = &op_at(r, 1, "bwd blk.b");
  const Sample* bwd_a = &op_at(r, 1, "bwd blk.a");
  CHECK(bwd_b < copy_b);
  CHECK(copy_b < bwd_a);
  CHECK(bwd_a < copy_a);
  CHECK(bwd_b->tag(MemTag::WORKING) == Approx(5e5).epsilon(kTol));
  CHECK(bwd_a->tag(MemTag::WORKING) == Approx(5e5).epsilon(kTol));
  CHECK(copy_b->tag(MemTag::WORKING) == 0);
  CHECK(copy_a->tag(MemTag::WORKING) == 0);
  CHECK(copy_b->tag(MemTag::ACTIVATIONS) == Approx(4e6).epsilon(kTol));
  CHECK(copy_a->tag(MemTag::ACTIVATIONS) == 0);
}

TEST_CASE(
    "Stage2Generator: a split layer that recomputes re-runs its forward before the backward parts and frees it all",
    "[zero][unit]") {
  // two_submodule_layer with full checkpointing: 1e6 B kept (the input), 8e6 B re-materialised in backward as two
  // tensors (5e6 freed by blk.a's part, 3e6 by blk.b's). Stages 0-2 re-run the forward in one piece ("recompute
  // blk"), then run blk.b's and blk.a's parts; after the last part nothing of the layer is live (no ACTIVATIONS or
  // WORKING buffer left at the end of the program).
  auto wl = two_submodule_layer();
  auto& l = wl.layers.front();
  l.activation_tensors = {Bytes(1e6)};
  l.activation_modules = {""};
  l.saved_activations = Bytes(1e6);
  l.recompute_tensors = {Bytes(5e6), Bytes(3e6)};
  l.recompute_modules = {"blk.a", "blk.b"};
  l.recompute_activations = Bytes(8e6);
  l.recompute_flops = l.fwd_flops;
  l.recompute_bytes = l.fwd_bytes;
  const auto r = walk(generate(wl, zero_config(2), 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* re = &op_at(r, 1, "recompute blk");
  const Sample* bwd_b = &op_at(r, 1, "bwd blk.b");
  const Sample* bwd_a = &op_at(r, 1, "bwd blk.a");
  CHECK(re < bwd_b);
  CHECK(bwd_b < bwd_a);
  // During blk.b's part: the kept input 1e6 + the recomputed 8e6 as ACTIVATIONS / WORKING, plus 5e5 of temporaries.
  CHECK(bwd_b->tag(MemTag::ACTIVATIONS) == Approx(1e6).epsilon(kTol));
  CHECK(bwd_b->tag(MemTag::WORKING) == Approx(8e6 + 5e5).epsilon(kTol));
  // During blk.a's part the kept input is still live (it lives to the layer's end); blk.b's 3e6 are gone.
  CHECK(bwd_a->tag(MemTag::ACTIVATIONS) == Approx(1e6).epsilon(kTol));
  CHECK(bwd_a->tag(MemTag::WORKING) == Approx(5e6 + 5e5).epsilon(kTol));
  for (const auto& [id, tag] : r.live_at_end)
    CHECK((tag != MemTag::ACTIVATIONS && tag != MemTag::WORKING));
}

TEST_CASE(
    "Stage2Generator: stages 1 and 2 order the next step's first gradient reduction after the lp all-gather by the "
    "streams alone (stage_1_and_2.py l.2396, l.1350-1363)",
    "[zero][unit]") {
  // DeepSpeed v0.19.6 stage_1_and_2.py step(): the fp32 -> lp copy (l.2389-2390) and all_gather_dp_groups (l.2396)
  // run on the current (compute) stream, so the next forward follows them in stream order, and with overlap_comm the
  // reduction stream waits for the current stream before each bucket (average_tensor, l.1350-1363): no host
  // synchronize is needed, and a program that dropped that wait would fail here. With offload_optimizer the updated
  // lp partition comes H2D before the all-gather reads it.
  TinyModel m;
  m.grad_accum = 2;
  const auto wl = make_workload(m);
  for (const int stage : {1, 2})
    for (const bool offload : {false, true}) {
      INFO("stage " << stage << ", offload " << offload);
      auto z = zero_config(stage);
      z.overlap_comm = true;
      if (offload)
        z.offload_optimizer = scenario::OffloadDevice::CPU;
      GeneratorInput in{wl, z, 2, 2, offload ? 2.2e-10 : 0.0, scenario::HostSpec{}};
      const auto p = generate_program(in);
      REQUIRE(program::validate(p).empty());
      REQUIRE_FALSE(walk(p).deadlock);
      const OpRef gather = find_op(p, "compute", 0, "allgather lp params", true, true);
      CHECK(ordered_after(p, gather, find_op(p, "comm", 1, "", false, true)));
      if (offload)
        CHECK(ordered_after(p, find_op(p, "copy", 0, "h2d lp params", true), gather));
    }
}

namespace {
/// TinyModel with B_r = 1.5e6 elements: the hooks run block.3.bias, block.3.weight, block.2.bias (1,002,000 elements,
/// bucket 0), then block.2.weight does not fit, so bucket 0 is reduced in block.2's hooks; bucket 1 (block.2.weight,
/// block.1.bias) in block.1's hooks, i.e. before block.0's backward kernels are issued.
scenario::ZeroConfig two_bucket_config(std::array<int, 3> version, bool contiguous) {
  auto z = zero_config(2);
  z.overlap_comm = true;
  z.contiguous_gradients = contiguous;
  z.reduce_bucket_size = 1'500'000;
  z.deepspeed_version = version;
  // The release's default, as the loader sets it: per-owner reduces before 0.12.4, all-reduced chunks from it.
  z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
  return z;
}
} // namespace

TEST_CASE(
    "Stage2Generator: with overlap_comm compute waits for the previous bucket's reduction from DeepSpeed 0.14.3 "
    "(PR #5606), not before",
    "[zero][unit]") {
  // average_tensor @v0.9.0 (l.894-897) only makes the reduction stream wait for the current stream; PR #5606 (first
  // in v0.14.3) adds current_stream().wait_stream(reduction_stream). So bucket 0's reduction (issued in block.2's
  // hooks) precedes block.0's backward kernels only when bucket 1's flush (in block.1's hooks) makes compute wait.
  // In both releases the reduction waits for the backward that produced its grads (block.2's kernels).
  const auto wl = make_workload(TinyModel{});
  for (const auto& [version, waits] :
       {std::pair{std::array<int, 3>{0, 9, 0}, false}, std::pair{std::array<int, 3>{0, 14, 2}, false},
        std::pair{std::array<int, 3>{0, 14, 3}, true}, std::pair{std::array<int, 3>{0, 19, 5}, true}}) {
    INFO("DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    const auto z = two_bucket_config(version, true);
    const auto p = generate(wl, z, 2);
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    const OpRef bucket0 = find_op(p, "comm", 1, "allreduce bucket 0", true, true);
    CHECK(ordered_after(p, find_op(p, "compute", 1, "bwd block.2", true), bucket0));
    CHECK(ordered_after(p, bucket0, find_op(p, "compute", 1, "bwd block.0", false)) == waits);
  }
}

TEST_CASE(
    "Stage2Generator: overlap_comm without contiguous gradients synchronizes the device before every bucket "
    "(allreduce_and_copy)",
    "[zero][unit]") {
  // allreduce_and_copy (stage_1_and_2.py l.1352-1354 @v0.9.0) calls get_accelerator().synchronize() with overlap_comm:
  // when bucket 1 is flushed in block.1's hooks, the host waits for bucket 0's all-reduce (and the backward so far),
  // so block.0's grad hooks on the host and block.0's backward kernels come after it. With contiguous gradients
  // (average_tensor, no synchronize before 0.14.3) neither does: the host meets the reduction stream only at the
  // epilogue's synchronize. DeepSpeed 0.9.0, so that no stream wait of PR #5606 orders them either.
  const auto wl = make_workload(TinyModel{});
  const scenario::HostSpec host{Seconds(1e-5), Seconds(0), Seconds(1e-4)};
  for (const bool contiguous : {true, false}) {
    INFO("contiguous_gradients " << contiguous);
    const auto z = two_bucket_config({0, 9, 0}, contiguous);
    GeneratorInput in{wl, z, 2, 2, 0.0, host};
    const auto p = generate_program(in);
    REQUIRE(program::validate(p).empty());
    REQUIRE_FALSE(walk(p).deadlock);
    // Without contiguous gradients bucket 0 is an all-reduce of the flattened grads, with them a reduce per owner.
    const OpRef bucket0 = find_op(p, "comm", 1, "allreduce bucket 0", true, true);
    CHECK(ordered_after(p, bucket0, find_op(p, "host", 1, "grad hooks block.0", false)) == !contiguous);
    CHECK(ordered_after(p, bucket0, find_op(p, "compute", 1, "bwd block.0", false)) == !contiguous);
  }
  // Without a host model the same order on the GPU alone.
  const auto z = two_bucket_config({0, 9, 0}, false);
  const auto p = generate(wl, z, 2);
  CHECK(ordered_after(p, find_op(p, "comm", 1, "allreduce bucket 0", true, true),
                      find_op(p, "compute", 1, "bwd block.0", false)));
}

// Two ranks, two buckets (two_bucket_config): whether bucket 0's all-reduce is ordered before block.0's grad hooks
// on the host and its backward kernels on rank 1 (`syncs`), in a program that validates and does not deadlock.
static void check_bucket0_order(const auto& wl, const scenario::ZeroConfig& z, const scenario::HostSpec& host,
                                bool syncs) {
  GeneratorInput in{wl, z, 2, 2, 0.0, host};
  const auto p = generate_program(in);
  REQUIRE(program::validate(p).empty());
  REQUIRE_FALSE(walk(p).deadlock);
  const OpRef bucket0 = find_op(p, "comm", 1, "allreduce bucket 0", true, true);
  CHECK(ordered_after(p, bucket0, find_op(p, "host", 1, "grad hooks block.0", false)) == syncs);
  CHECK(ordered_after(p, bucket0, find_op(p, "compute", 1, "bwd block.0", false)) == syncs);
}

TEST_CASE(
    "Stage2Generator: without use_multi_rank_bucket_allreduce each owner's share is flattened from DeepSpeed "
    "0.12.4, and with overlap_comm the device synchronized first",
    "[zero][unit]") {
  // N_d = 2, TinyModel: Ψ = 4,004,000, rank 0 owns blocks 0-1, rank 1 blocks 2-3 (flat order). Bucket 0 (block.3.bias,
  // block.3.weight, block.2.bias) is all rank 1's: 1,002,000 elements. From 0.12.4 allreduce_no_retain ->
  // allreduce_bucket flattens it into a new tensor of 1,002,000 x 2 B = 2,004,000 B before the reduce to rank 1
  // (stage_1_and_2.py l.1841 @v0.19.6); before, the reduces run on narrow()s of the bucket (average_tensor @v0.9.0).
  // Bucket 1 (block.2.weight for rank 1, block.1.bias for rank 0) flattens 2,000,000 B, then 2,000 B.
  const auto wl = make_workload(TinyModel{});
  for (const auto& [version, flattens] :
       {std::pair{std::array<int, 3>{0, 12, 3}, false}, std::pair{std::array<int, 3>{0, 12, 4}, true}}) {
    INFO("DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    auto z = two_bucket_config(version, true);
    z.use_multi_rank_bucket_allreduce = false;
    z.overlap_comm = false;
    const auto r = walk(generate(wl, z, 2));
    REQUIRE_FALSE(r.deadlock);
    const Sample* b0 = r.find(1, "flatten allreduce bucket 0 to rank 1", false);
    const Sample* b1r1 = r.find(1, "flatten allreduce bucket 1 to rank 1", false);
    const Sample* b1r0 = r.find(1, "flatten allreduce bucket 1 to rank 0", false);
    REQUIRE((b0 != nullptr) == flattens);
    if (flattens) {
      REQUIRE(b1r1 != nullptr);
      REQUIRE(b1r0 != nullptr);
      CHECK(b0->tag(MemTag::FLATTEN_TEMP) == Approx(2'004'000.0).epsilon(kTol));
      CHECK(b1r1->tag(MemTag::FLATTEN_TEMP) == Approx(2'000'000.0).epsilon(kTol));
      CHECK(b1r0->tag(MemTag::FLATTEN_TEMP) == Approx(2'000.0).epsilon(kTol)); // one owner's share live at a time
    }
    CHECK(r.stats(1, CollectiveKind::REDUCE).calls == 5); // buckets 0 and 3: one owner each, buckets 1 and 2: two
  }
  // With overlap_comm, 0.12.4 (before PR #5606's stream wait): bucket 1's first reduce synchronizes the device, so
  // bucket 0's reduce precedes block.0's hooks on the host and its kernels; 0.12.3 has no such point.
  const scenario::HostSpec host{Seconds(1e-5), Seconds(0), Seconds(1e-4)};
  for (const auto& [version, syncs] :
       {std::pair{std::array<int, 3>{0, 12, 3}, false}, std::pair{std::array<int, 3>{0, 12, 4}, true}}) {
    INFO("overlap_comm, DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    auto z = two_bucket_config(version, true);
    z.use_multi_rank_bucket_allreduce = false;
    check_bucket0_order(wl, z, host, syncs);
  }
}

TEST_CASE(
    "Stage2Generator: before DeepSpeed 0.8.0 average_tensor synchronizes the device before every bucket with "
    "overlap_comm (PR #2500)",
    "[zero][unit]") {
  // average_tensor begins with torch.cuda.synchronize() under overlap_comm before v0.8.0 (stage2.py l.677-680
  // @v0.3.15, stage_1_and_2.py l.896-899 @v0.7.7); v0.8.0 (PR #2500) makes it reduction_stream.wait_stream()
  // (l.937-940 @v0.8.0). With contiguous gradients and per-owner reduces (the pre-0.12.4 path), bucket 1's flush in
  // block.1's hooks therefore makes the host wait for bucket 0's reduces and the backward so far, so block.0's grad
  // hooks on the host and its backward kernels come after bucket 0's reduces in 0.3.15 and 0.7.7; in 0.8.0 nothing
  // orders them before the epilogue.
  const auto wl = make_workload(TinyModel{});
  const scenario::HostSpec host{Seconds(1e-5), Seconds(0), Seconds(1e-4)};
  for (const auto& [version, syncs] :
       {std::pair{std::array<int, 3>{0, 3, 15}, true}, std::pair{std::array<int, 3>{0, 7, 7}, true},
        std::pair{std::array<int, 3>{0, 8, 0}, false}}) {
    INFO("DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    check_bucket0_order(wl, two_bucket_config(version, true), host, syncs);
  }
}

TEST_CASE(
    "Stage2Generator: a param larger than the bucket is reduced at the next param's hook, and before DeepSpeed "
    "0.4.0 it fails with contiguous_gradients",
    "[zero][unit]") {
  // reduce_bucket_size 500,000 < the 1e6-element weights. Backward hooks: block.3.bias, block.3.weight,
  // block.2.bias, ... With contiguous gradients block.3.weight becomes extra_large_param_to_reduce and the bucket's
  // elements (stage_1_and_2.py l.825-830 @v0.6.0, l.1197-1203 @v0.19.5); block.2.bias's hook finds the bucket full
  // and reduce_ipg_grads averages block.3.weight's own grad (l.1199-1205 @v0.6.0, l.1672-1686 @v0.19.5), i.e. after
  // block.2's backward kernels. No overlap_comm: the reductions run on the compute stream, in issue order.
  // Memory at block.2.bias's grad: block.3.weight's grad (not yet reduced) 1e6 x 2 B + block.2.bias's 1,000 x 2 B
  // = 2,002,000 B of lp grads.
  // Before v0.4.0 the weight is copied into the bucket: narrow(0, 0, 1e6) of a 500,000-element buffer raises
  // (stage2.py l.630-635 @v0.3.15): an Error. Without contiguous gradients it is a one-grad bucket of
  // buffered_reduce_fallback in every release: no error.
  const auto wl = make_workload(TinyModel{});
  auto z = zero_config(2);
  z.reduce_bucket_size = 500'000;
  for (const auto& version : {std::array<int, 3>{0, 4, 0}, std::array<int, 3>{0, 19, 5}}) {
    INFO("DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
    z.deepspeed_version = version;
    z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
    const auto p = generate(wl, z, 2);
    REQUIRE(program::validate(p).empty());
    const auto r = walk(p);
    REQUIRE_FALSE(r.deadlock);
    CHECK(ordered_after(p, find_op(p, "compute", 1, "bwd block.2", true),
                        find_op(p, "compute", 1, "allreduce block.3.weight", false, true)));
    const Sample* b2 = r.find(1, "grad block.2.bias", false);
    REQUIRE(b2 != nullptr);
    CHECK(b2->tag(MemTag::LP_GRADS) == Approx(2'002'000.0).epsilon(kTol));
  }
  z.deepspeed_version = {0, 3, 16};
  z.use_multi_rank_bucket_allreduce = false;
  CHECK_THROWS_WITH(generate(wl, z, 2), Catch::Contains("fails with contiguous_gradients in DeepSpeed before 0.4.0"));
  z.contiguous_gradients = false;
  CHECK_NOTHROW(generate(wl, z, 2));
}

TEST_CASE(
    "Stage2Generator: without contiguous_gradients the partition's grads are kept themselves until the step, no "
    "grads_in_partition",
    "[zero][validation]") {
  // reduce_ipg_grads copies into grads_in_partition only with contiguous_gradients (`elif
  // self.contiguous_gradients: copy_grads_in_partition`, stage_1_and_2.py l.1222-1238 @v0.9.0, l.1712-1724
  // @v0.19.5); the epilogue's get_flat_partition(return_tensor_list=True) keeps the in-partition grads in
  // averaged_gradients (l.700-706 @v0.9.0; all_grad_tensors from v0.17.6, l.920-936 @v0.19.5) until the step.
  // TinyModel, N_d = 2: P = 2,002,000, rank 0 (the program's) owns blocks 0-1 exactly. reduce_bucket_size
  // 1,001,000: one block per bucket, flushed at the next block's first hook, the last by the epilogue.
  //   at block 0's flush (the epilogue): block 1's kept grads 2,002,000 B + block 0's 2,002,000 B + the flatten
  //   2,002,000 B = 6,006,000 B of lp grads + flattens + grads_in_partition (block 3's and 2's grads, rank 1's,
  //   went after their reduction). A grads_in_partition copy would hold 2 B x 2,002,000 = 4,004,000 B there
  //   instead of block 1's grads: 8,008,000 B.
  //   at the step's flatten: rank 0's grads, 4,004,000 B; none left at the end.
  // GA 2: micro-step 1's in-partition grads (4,004,000 B) coexist with micro-step 0's until the epilogue adds them
  // in (l.712-720 @v0.9.0): 8,008,000 B of lp grads at micro-step 1's last flatten (10,010,000 B with it),
  // 4,004,000 B at the step.
  for (const int ga : {1, 2}) {
    for (const auto& version : {std::array<int, 3>{0, 9, 0}, std::array<int, 3>{0, 19, 5}}) {
      INFO("GA " << ga << ", DeepSpeed " << version[0] << "." << version[1] << "." << version[2]);
      TinyModel m;
      m.grad_accum = ga;
      auto z = zero_config(2);
      z.contiguous_gradients = false;
      z.reduce_bucket_size = 1'001'000;
      z.deepspeed_version = version;
      const auto r = walk(generate(make_workload(m), z, 2));
      REQUIRE_FALSE(r.deadlock);
      CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::GRAD_PARTITION); }, 1) == 0.0);
      const Sample* last = find_nth_alloc(r, 1, "flatten allreduce bucket 3", ga - 1);
      REQUIRE(last != nullptr);
      CHECK(last->tag(MemTag::LP_GRADS) == Approx(ga == 1 ? 4'004'000.0 : 8'008'000.0).epsilon(kTol));
      CHECK(last->tag(MemTag::LP_GRADS) + last->tag(MemTag::FLATTEN_TEMP) + last->tag(MemTag::GRAD_PARTITION) ==
            Approx(ga == 1 ? 6'006'000.0 : 10'010'000.0).epsilon(kTol));
      const Sample* step = r.find(1, "flatten partition grads", false);
      REQUIRE(step != nullptr);
      CHECK(step->tag(MemTag::LP_GRADS) == Approx(4'004'000.0).epsilon(kTol));
      CHECK((find_nth_op(r, 1, "accumulate grads in partition", 0) != nullptr) == (ga > 1));
      for (const auto& [buf, tag] : r.live_at_end)
        CHECK(tag != MemTag::LP_GRADS);
    }
  }
}
