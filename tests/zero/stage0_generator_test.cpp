#include "sim/zero/stage0_generator.hpp"
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

TEST_CASE(
    "Stage0Generator: step transient is 24Ψ / 18Ψ during Adam and 14Ψ after (zero_semantics.md §3.3) "
    "(zero_semantics §7.16)",
    "[zero][validation]") {
  // FP16_Optimizer step: lp params 2 + fp32 master 4 + Adam m,v 8 + lp grads 2 + fp32 grad list 4 + flat fp32
  // grad 4 = 24Ψ; the list and the lp grads dropped -> 18Ψ; flat fp32 grad freed -> 14Ψ. Activations are freed
  // by then, so these are the totals of GPU memory.
  const TinyModel m;
  const double psi_b = psi(m);
  const auto r = walk(generate(make_workload(m), zero_config(0), 4));
  for (int step : {0, 1}) {
    INFO("step " << step);
    const auto* peak = r.find(step, "flat fp32 grad", false);
    REQUIRE(peak != nullptr);
    REQUIRE(peak->total == Approx(24 * psi_b).epsilon(kTol));
    const auto* adam = r.find(step, "grad block.3.bias", true); // last lp grad set to None
    REQUIRE(adam != nullptr);
    REQUIRE(adam->total == Approx(18 * psi_b).epsilon(kTol));
    const auto* after = r.find(step, "flat fp32 grad", true);
    REQUIRE(after != nullptr);
    REQUIRE(after->total == Approx(14 * psi_b).epsilon(kTol));
  }
}

TEST_CASE(
    "Stage0Generator: Adam state exists from init via FP16_Optimizer's dummy step (§3.3) (zero_semantics §7.16, §7.17)",
    "[zero][validation]") {
  const TinyModel m;
  const auto r = walk(generate(make_workload(m), zero_config(0), 4));
  // The last init sample (before STEP_BEGIN 0): lp 2Ψ + master 4Ψ + m/v 8Ψ = 14Ψ, no dummy grad left.
  const Sample* last_init = nullptr;
  for (const auto& s : r.timeline)
    if (s.step == -1)
      last_init = &s;
  REQUIRE(last_init != nullptr);
  REQUIRE(last_init->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * psi(m)).epsilon(kTol));
  REQUIRE(last_init->total == Approx(14 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "Stage0Generator: one all-reduce of 2Ψ bytes per step after backward / at the GA boundary only "
    "(§3.3 / §3.7) (zero_semantics §7.16)",
    "[zero][unit]") {
  TinyModel m;
  m.grad_accum = 3;
  const auto r = walk(generate(make_workload(m), zero_config(0), 4));
  for (int step : {0, 1}) {
    REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).calls == 1); // Ψ = 4e6 < 5e8: one bucket
    REQUIRE(r.stats(step, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
    REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).calls == 0);
  }
  // lp grads accumulate in param.grad: 2Ψ at most, whatever GA.
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }) == Approx(2 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "Stage0Generator: grads are all-reduced in MEMORY_OPT_ALLREDUCE_SIZE buckets / each flattened into a temp "
    "(engine.py allreduce_no_retain / §3.3)",
    "[zero][unit]") {
  // Hand calculation: tensors in model order 2e8, 1e3, 2e8, 1e3, 2e8, ... The running count first exceeds 5e8 at
  // the third weight (2e8 + 1e3 + 2e8 + 1e3 + 2e8 = 600,002,000) -> bucket 1; the rest (1e3 + 2e8 + 1e3 =
  // 200,002,000) -> bucket 2. Largest flatten temp = 600,002,000 x 2 B.
  TinyModel m;
  m.weight_numel = 200'000'000;
  const auto r = walk(generate(make_workload(m), zero_config(0), 4, 1));
  REQUIRE(r.stats(0, CollectiveKind::ALL_REDUCE).calls == 2);
  REQUIRE(r.stats(0, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
  REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, 0) ==
          Approx(2 * 600'002'000.0).epsilon(kTol));
}

TEST_CASE(
    "GeneratorContext: cpu_checkpointing keeps each block's checkpoint in host memory between its forward and "
    "its recompute (DeepSpeed checkpointing.py CheckpointFunction)",
    "[zero][validation]") {
  // 4 checkpointed blocks, each keeping a 1e6 B checkpoint (TinyModel: activation_bytes / 10), stage 0, N_d = 1.
  // CheckpointFunction.forward copies the block's input to the CPU (`.to('cpu')`) and drops the GPU storage after
  // the block; backward copies it back (`.to(cuda)`) before the recompute. Per micro-step: 4 x 1e6 B each way.
  // While block.3's forward runs, the GPU holds only block.3's input (1e6 B; without cpu_checkpointing blocks
  // 0-3 = 4e6 B) and the host all four copies (4e6 B).
  TinyModel m;
  m.checkpointing = true;
  auto wl = make_workload(m);
  for (auto& l : wl.layers)
    l.kind = workload::LayerKind::BLOCK;
  auto plain = walk(generate(wl, zero_config(0), 1));
  wl.training.cpu_checkpointing = true;
  auto r = walk(generate(wl, zero_config(0), 1));
  REQUIRE_FALSE(r.deadlock);
  CHECK(plain.copies[1][program::CopyDir::D2H] == 0.0);
  CHECK(r.copies[1][program::CopyDir::D2H] == Approx(4e6));
  CHECK(r.copies[1][program::CopyDir::H2D] == Approx(4e6));
  const auto* p3 = find_nth_op(plain, 1, "fwd block.3", 0);
  const auto* c3 = find_nth_op(r, 1, "fwd block.3", 0);
  REQUIRE(p3 != nullptr);
  REQUIRE(c3 != nullptr);
  CHECK(p3->tag(MemTag::ACTIVATIONS) == Approx(4e6));
  CHECK(c3->tag(MemTag::ACTIVATIONS) == Approx(1e6));
  CHECK(c3->host_by_tag[static_cast<std::size_t>(MemTag::ACTIVATIONS)] == Approx(4e6));
  // Everything is freed again: the host copies in backward, the restored GPU checkpoints after each block.
  CHECK(r.live_at_end.size() == plain.live_at_end.size());
}

TEST_CASE("Stage0Generator: a submodule's gradient is allocated when its part of the backward ends", "[zero][unit]") {
  // AccumulateGrad creates param.grad as soon as the op producing it has run: blk.b's (its part runs first in
  // backward, two_submodule_layer) exists before blk.a's part, and holds 2 B x 1e6 = 2e6 B of lp grads then.
  const auto r = walk(generate(two_submodule_layer(), zero_config(0), 2));
  REQUIRE_FALSE(r.deadlock);
  const Sample* grad_b = find_nth_alloc(r, 0, "grad blk.b.weight", 0);
  const Sample* bwd_a = &op_at(r, 0, "bwd blk.a");
  REQUIRE(grad_b != nullptr);
  CHECK(grad_b < bwd_a);
  CHECK(bwd_a->tag(MemTag::LP_GRADS) == Approx(2e6).epsilon(1e-12));
}

TEST_CASE("generator: FlashAttention in Triton takes 1.4x the forward time and 2x the backward per executed FLOP",
          "[zero][unit]") {
  // Dao 2023 (FlashAttention-2) §4.1: FlashAttention-2 is ~1.3-1.5x faster than FlashAttention in Triton forward,
  // ~2x backward. A causal layer's executed work per counted FLOP is 0.5 forward (and recompute), 0.625 backward;
  // the compute ops carry work x time: flash2 0.5 / 0.5 / 0.625, triton 0.7 / 0.7 / 1.25.
  TinyModel m;
  m.checkpointing = true;
  for (const auto kernel : {scenario::FlashAttentionKernel::FLASH2, scenario::FlashAttentionKernel::TRITON}) {
    auto w = make_workload(m);
    w.training.flash_attention = true;
    w.training.flash_attention_kernel = kernel;
    for (auto& l : w.layers) {
      l.fwd_attention_flops = Flops(1e8);
      l.recompute_attention_flops = Flops(1e8);
      l.bwd_attention_flops = Flops(2e8);
      l.fwd_attention_work = 0.5;
      l.bwd_attention_work = 0.625;
    }
    const bool triton = kernel == scenario::FlashAttentionKernel::TRITON;
    const auto p = generate(w, zero_config(0), 2);
    int fwd = 0, recompute = 0, bwd = 0;
    for (const auto& s : p.streams)
      for (const auto& op : s.ops) {
        const auto* c = std::get_if<program::Compute>(&op.body);
        if (c == nullptr || c->attention_flops.value() <= 0)
          continue;
        const std::string& label = p.labels[op.label];
        if (label.rfind("fwd ", 0) == 0) {
          ++fwd;
          CHECK(c->attention_work == Approx(triton ? 0.7 : 0.5).epsilon(kTol));
        } else if (label.rfind("recompute ", 0) == 0) {
          ++recompute;
          CHECK(c->attention_work == Approx(triton ? 0.7 : 0.5).epsilon(kTol));
        } else {
          ++bwd;
          CHECK(c->attention_work == Approx(triton ? 1.25 : 0.625).epsilon(kTol));
        }
      }
    CHECK(fwd > 0);
    CHECK(recompute > 0);
    CHECK(bwd > 0);
  }
}
