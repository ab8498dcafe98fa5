#include "sim/zero/stage1_generator.hpp"
#include "sim/zero/model_states.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
}

TEST_CASE("Stage1Generator: steady-state model states equal the paper's P_os = 4Ψ + 12Ψ/N_d (ZeRO §5)",
          "[zero][validation]") {
  // Peak over step 1 of lp params + lp grads + grads_in_partition + fp32 master + Adam: at the end of the
  // boundary backward the full lp grads (2Ψ) and lp params (2Ψ) coexist with master 4Ψ/N and m/v 8Ψ/N = P_os.
  // DeepSpeed differences: grads_in_partition (2Ψ/N) is allocated while the full grads drain; with the default
  // reduce_bucket_size (5e8 > Ψ) the single flush happens after every full grad was copied into the bucket, so
  // the peak is exactly P_os (with smaller buckets it can exceed P_os by up to 2Ψ/N).
  const TinyModel m;
  for (int n : {1, 2, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), zero_config(1), n));
    const double states = r.peak([](const Sample& s) { return s.model_states(); }, 1);
    REQUIRE(states == Approx(paper_model_state_bytes(1, psi(m), n).value()).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage1Generator: full lp grads accumulate over micro-steps and are reduced once / at the GA boundary "
    "(zero_semantics.md §3.4) (zero_semantics §7.14)",
    "[zero][validation]") {
  TinyModel m;
  m.grad_accum = 2;
  const auto r = walk(generate(make_workload(m), zero_config(1), 4));
  for (int step : {0, 1}) {
    INFO("step " << step);
    // One all-reduce pass over 2Ψ bytes per step, not per micro-step; then one all-gather of the lp params.
    REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
    REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).calls == 1);
    REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
  }
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }) == Approx(2 * psi(m)).epsilon(kTol));
  // One reduction per step: a single grads_in_partition buffer of 2Ψ/N, whatever GA (stage 2 needs a second one).
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GRAD_PARTITION); }) ==
          Approx(2 * psi(m) / 4).epsilon(kTol));
}

TEST_CASE(
    "Stage1Generator: the IPG bucket (1e9 B / 2e9 B with overlap_comm) lives until the GA boundary "
    "(zero_semantics §7.10)",
    "[zero][validation]") {
  // reduce_bucket_size 5e8 elements x 2 B = 1e9 B, allocated at the first backward hook of micro-step 0 and still
  // allocated when micro-step 1's forward starts.
  TinyModel m;
  m.grad_accum = 2;
  for (bool overlap : {false, true}) {
    INFO("overlap_comm " << overlap);
    auto z = zero_config(1);
    z.overlap_comm = overlap;
    const auto r = walk(generate(make_workload(m), z, 4));
    const auto* fwd2 = find_nth_alloc(r, 1, "act block.0", 1);
    REQUIRE(fwd2 != nullptr);
    REQUIRE(fwd2->tag(MemTag::IPG_BUCKET) == Approx(overlap ? 2e9 : 1e9).epsilon(kTol));
    REQUIRE(r.find(1, "flatten partition grads", false)->tag(MemTag::IPG_BUCKET) == 0);
  }
}

TEST_CASE(
    "Stage1Generator: Adam state is created lazily and grows memory by 8Ψ/N at the first step (zero_semantics §7.17)",
    "[zero][validation]") {
  const TinyModel m;
  const int n = 4;
  const auto r = walk(generate(make_workload(m), zero_config(1), n));
  REQUIRE(last_of(r, -1)->tag(MemTag::OPTIMIZER_STATES) == 0);
  REQUIRE(last_of(r, 0)->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * psi(m) / n).epsilon(kTol));
  // After the step: lp params 2Ψ + master 4Ψ/N + m,v 8Ψ/N.
  REQUIRE(last_of(r, 1)->total == Approx(2 * psi(m) + 12 * psi(m) / n).epsilon(kTol));
}

TEST_CASE("Stage1Generator: with overlap_comm each submodule's gradient goes to the bucket before the next part runs",
          "[zero][unit]") {
  // Backward runs blk.b's part, then blk.a's (two_submodule_layer): with overlap_comm stage 1 reduces in the
  // boundary backward's hooks like stage 2, which fire per parameter during the layer (stage_1_and_2.py
  // reduce_ready_partitions_and_remove_grads), so blk.b's copy into the bucket comes between the two parts.
  auto z = zero_config(1);
  z.overlap_comm = true;
  const auto r = walk(generate(two_submodule_layer(), z, 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* bwd_b = &op_at(r, 1, "bwd blk.b");
  const Sample* copy_b = &op_at(r, 1, "copy grad to bucket blk.b.weight");
  const Sample* bwd_a = &op_at(r, 1, "bwd blk.a");
  CHECK(bwd_b < copy_b);
  CHECK(copy_b < bwd_a);
}

TEST_CASE("Stage1Generator: the grad of a param larger than the bucket outside the partition lives until the epilogue",
          "[zero][validation]") {
  // TinyModel: 4 blocks of weight 1e6 + bias 1e3 elements; N_d = 2: P = 2,002,000, rank 0 (the program's) owns blocks
  // 0-1, rank 1 blocks 2-3. reduce_bucket_size 5e5 < 1e6: each weight is reduced from its own grad, never copied
  // into the bucket (extra_large_param_to_reduce, stage_1_and_2.py l.1197-1203 @v0.19.5). Stage 1 re-points an
  // in-partition grad into grads_in_partition but never clears one outside it (reduce_ipg_grads `else: # zero stage
  // 1`, l.1725-1727 @v0.19.5, l.1541-1543 @v0.18.3) before the epilogue's zero_grad (l.888 @v0.18.3), which follows
  // _release_ipg_buffers: when the bucket buffers go, block.3.weight's and block.2.weight's grads are still live,
  // 2 x 1e6 x 2 B = 4e6 B of lp grads (the biases were copied into the bucket and the owned weights re-pointed).
  // Stage 2 drops each outside grad after its reduction (clear_grad_attribute, l.1722 @v0.19.5): 0 B then.
  const TinyModel m;
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    auto z = zero_config(stage);
    z.overlap_comm = true;
    z.reduce_bucket_size = 500'000;
    const auto r = walk(generate(make_workload(m), z, 2));
    REQUIRE_FALSE(r.deadlock);
    const Sample* release = r.find(1, "ipg bucket 0", true);
    REQUIRE(release != nullptr);
    CHECK(release->tag(MemTag::LP_GRADS) == Approx(stage == 1 ? 4e6 : 0.0).margin(1.0));
  }
}

TEST_CASE(
    "Stage1Generator: without contiguous_gradients every reduced grad lives until the epilogue and the "
    "partition's until the step",
    "[zero][validation]") {
  // DeepSpeed's stage 1 with contiguous_gradients false (forced so before 0.13.0, engine.py; set by the user after)
  // takes buffered_reduce_fallback: each bucket's grads are flattened, all-reduced and copied back into param.grad,
  // and reduce_ipg_grads' stage-1 branch (`else: # zero stage 1`, stage_1_and_2.py l.1240-1242 @v0.9.0,
  // l.1541-1543 @v0.18.3) copies into grads_in_partition only with contiguous_gradients and clears nothing. So no
  // grad goes before the epilogue's zero_grad(set_to_none=True) (l.723 @v0.9.0, l.888 @v0.18.3), and the grads of the
  // params touching the rank's partition stay as the views get_flat_partition(return_tensor_list=True) puts in
  // averaged_gradients (l.700-706 @v0.9.0) until the step flattens them.
  // TinyModel: 4 blocks of weight 1e6 + bias 1e3 elements, Ψ = 4,004,000; N_d = 2: P = 2,002,000, rank 0 (the
  // program's) owns blocks 0-1. reduce_bucket_size 1,001,000: one block per bucket, buckets 0-3 per step, the last
  // one flushed by the epilogue.
  //   at the last bucket's flatten: lp grads = 2 B x 4,004,000 = 8,008,000 B (every grad still live);
  //   peak of lp grads + flattens + grads_in_partition = 8,008,000 + 2 B x 1,001,000 = 10,010,000 B;
  //   grads_in_partition is never allocated (0 B);
  //   at the step's flatten of the partition: rank 0's two blocks' grads, 2 B x 2,002,000 = 4,004,000 B.
  const TinyModel m;
  for (const bool overlap : {false, true}) {
    INFO("overlap_comm " << overlap);
    auto z = zero_config(1);
    z.contiguous_gradients = false;
    z.overlap_comm = overlap;
    z.reduce_bucket_size = 1'001'000;
    const auto r = walk(generate(make_workload(m), z, 2));
    REQUIRE_FALSE(r.deadlock);
    const Sample* last = r.find(1, "flatten allreduce bucket 3", false);
    REQUIRE(last != nullptr);
    CHECK(last->tag(MemTag::LP_GRADS) == Approx(8'008'000.0).epsilon(kTol));
    CHECK(r.peak(
              [](const Sample& s) {
                return s.tag(MemTag::LP_GRADS) + s.tag(MemTag::FLATTEN_TEMP) + s.tag(MemTag::GRAD_PARTITION);
              },
              1) == Approx(10'010'000.0).epsilon(kTol));
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::GRAD_PARTITION); }, 1) == 0.0);
    const Sample* step = r.find(1, "flatten partition grads", false);
    REQUIRE(step != nullptr);
    CHECK(step->tag(MemTag::LP_GRADS) == Approx(4'004'000.0).epsilon(kTol));
    for (const auto& [buf, tag] : r.live_at_end)
      CHECK(tag != MemTag::LP_GRADS); // every kept grad was freed (epilogue or step)
  }
}
