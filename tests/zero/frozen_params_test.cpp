// Frozen parameters (training.trainable_fraction, LoRA/PEFT-style): only the trainable adapters get grads, fp32
// master and Adam states; stage 3 partitions the frozen weights like the others (zero.Init / _convert_to_zero_parameters
// convert every parameter whatever its requires_grad; reference/calibration.md §4.4's "not split" is QLoRA's 4-bit
// weights, which zerosim does not model).
//
// Hand numbers for the TinyModel (4 blocks x {1,000,000 weight, 1,000 bias}, Ψ = 4,004,000) at f = 0.01: each
// tensor keeps a frozen base and gets an adapter of round(0.01 x numel) elements: 10,000 and 10 per block, so the
// trainable count is Ψ_t = 4 x 10,010 = 40,040 and the frozen count 3,963,960.
#include "program_walker.hpp"
#include "test_model.hpp"

#include "sim/error.hpp"
#include "sim/program/program.hpp"
#include "sim/workload/workload.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace zerosim;
using namespace zerosim::zero::testing;
using program::MemTag;

namespace {

constexpr double kTol = 1e-9;
constexpr double kPsi = 4'004'000;
constexpr double kTrainable = 40'040;
constexpr double kFrozen = kPsi - kTrainable;

workload::Workload lora_workload(double f) {
  auto w = make_workload();
  w.training.trainable_fraction = f;
  return w;
}

} // namespace

TEST_CASE("FrozenParams: stage 2 keeps the full lp model and 16 B/param of states only for the adapters",
          "[zero][unit]") {
  // N = 4: flat trainable buffer 40,040 (a multiple of 2N = 8) -> partition 10,010 elements.
  // lp params on GPU = 2 x 4,004,000 = 8,008,000 B (frozen weights are plain unpartitioned module params);
  // fp32 master 4 x 10,010 = 40,040 B; Adam m, v after the first step 8 x 10,010 = 80,080 B.
  const auto wl = lora_workload(0.01);
  const auto r = walk(generate(wl, zero_config(2), 4));
  REQUIRE(!r.deadlock);
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->tag(MemTag::LP_PARAMS) == Approx(2 * kPsi).epsilon(kTol));
  CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4 * kTrainable / 4).epsilon(kTol));
  CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kTrainable / 4).epsilon(kTol));
}

TEST_CASE("FrozenParams: stage 3 partitions frozen weights too and reduce-scatters only adapter grads",
          "[zero][unit]") {
  // N = 4, per block: frozen weight 990,000 -> partition 247,500; frozen bias 990 -> 248; adapters 10,000 -> 2,500
  // and 10 -> 3. lp partitions 4 x (247,748 + 2,503) = 4 x 250,251 = 1,001,004 elements = 2,002,008 B. Every tensor
  // of <= 1e5 elements is persistent (stage3_param_persistence_threshold, §3.5) and kept whole too: frozen biases
  // 4 x 990 and adapters 40,040 -> 2 x 44,000 = 88,000 B. The frozen weights are gathered per fetch. Adapter
  // partitions 4 x 2,503 = 10,012: fp32 master 40,048 B, Adam 80,096 B; their grads are reduce-scattered from padded
  // buckets of 4 x 10,012 elements = 80,096 B per micro-step.
  const auto wl = lora_workload(0.01);
  const auto r = walk(generate(wl, zero_config(3), 4));
  REQUIRE(!r.deadlock);
  const Sample* init = last_of(r, -1);
  REQUIRE(init != nullptr);
  CHECK(init->tag(MemTag::LP_PARAMS) == Approx(2.0 * 1'001'004 + 88'000).epsilon(kTol));
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4 * 10'012).epsilon(kTol));
  CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * 10'012).epsilon(kTol));
  CHECK(r.stats(0, program::CollectiveKind::REDUCE_SCATTER).payload == Approx(2 * 4 * 10'012).epsilon(kTol));
}

TEST_CASE("FrozenParams: with 1% trainable, stage 3 keeps about 2/N_d bytes per parameter, stage 2 the full 2",
          "[zero][unit]") {
  // Hand, after the 2nd step, N = 4: Z2 = 8,008,000 (full lp) + 12 x 10,010 (fp32 master + Adam; the grad
  // partition is freed after the step) = 8,128,120 B. Z3 = 2,002,008 (lp partitions) + 88,000 (persistent)
  // + 20,024 (adapter grad partitions) + 12 x 10,012 = 2,230,176 B: ZeRO-3 cuts a LoRA run's model states ~N_d-fold
  // because it partitions the frozen base.
  const auto wl = lora_workload(0.01);
  const auto r2 = walk(generate(wl, zero_config(2), 4));
  const auto r3 = walk(generate(wl, zero_config(3), 4));
  CHECK(last_of(r2, 1)->model_states() == Approx(8'128'120).epsilon(kTol));
  CHECK(last_of(r3, 1)->model_states() == Approx(2'230'176).epsilon(kTol));
}

TEST_CASE("FrozenParams: optimizer offload puts only the adapters' states in host memory", "[zero][unit]") {
  // Stage 2 + offload_optimizer=cpu, N = 1: host fp32 master 4 x 40,040 = 160,160 B, fp32 grads 160,160 B,
  // Adam m, v from the first step 8 x 40,040 = 320,320 B.
  const auto wl = lora_workload(0.01);
  auto z = zero_config(2);
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  const auto r = walk(generate(wl, z, 1, 2, 1e-10));
  REQUIRE(!r.deadlock);
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->host_tag(MemTag::FP32_MASTER) == Approx(4 * kTrainable).epsilon(kTol));
  CHECK(end->host_tag(MemTag::FP32_GRADS) == Approx(4 * kTrainable).epsilon(kTol));
  CHECK(end->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kTrainable).epsilon(kTol));
  // The host step runs over the 40,040 trainable elements only: unscale (8 B), CPU Adam (28 B) and the lp cast
  // (6 B) at 1e-10 s per 30-B Adam element: 40,040 x 1e-10 x 42 / 30 s; the first step also zero-fills m, v (8 B).
  CHECK(r.cpu_seconds.at(1) == Approx(kTrainable * 1e-10 * 42.0 / 30.0).epsilon(1e-6));
  CHECK(r.cpu_seconds.at(0) == Approx(kTrainable * 1e-10 * 50.0 / 30.0).epsilon(1e-6));
}

TEST_CASE("FrozenParams: trainable_fraction of 0 or above 1 is rejected", "[zero][unit]") {
  const auto wl = lora_workload(0.0);
  REQUIRE_THROWS_WITH(generate(wl, zero_config(2), 2), Catch::Contains("trainable_fraction"));
  const auto wl2 = lora_workload(1.5);
  REQUIRE_THROWS_WITH(generate(wl2, zero_config(3), 2), Catch::Contains("trainable_fraction"));
}

TEST_CASE("FrozenParams: stage 0 clones and flattens only the optimizer's (trainable) params at init", "[zero][unit]") {
  // FP16/BF16 optimizer init flattens its param groups, which hold the requires_grad params only: 2 copies x 2 B x
  // 40,040 trainable elements = 160,160 B (not 2 x 2 x 4,004,000).
  const auto r = walk(generate(lora_workload(0.01), zero_config(0), 1));
  REQUIRE(!r.deadlock);
  const auto* clone = find_nth_alloc(r, -1, "clone + flatten lp params", 0); // step -1: INIT
  REQUIRE(clone != nullptr);
  CHECK(clone->tag(MemTag::FLATTEN_TEMP) == Approx(160'160).epsilon(kTol));
}

TEST_CASE("FrozenParams: stage 1 keeps the full lp model, full lp grads and 16 B/param of states only for the adapters",
          "[zero][unit]") {
  // DeepSpeed stage 1 (stage_1_and_2.py __init__: bit16_groups take the requires_grad params only) flattens,
  // partitions and gives fp32 master / Adam / grads to the trainable params; the frozen base stays as plain
  // unpartitioned module params with no grad. Hand, N = 4, f = 0.01: trainable 40,040 (a multiple of 2N = 8) ->
  // partition 10,010 elements.
  //   lp params          2 x 4,004,000 = 8,008,000 B (every rank holds the whole model, frozen or not)
  //   lp grads           2 x 40,040    =    80,080 B at most: stage 1 holds every trainable param's full grad
  //                      until the GA boundary (zero_semantics §7.14), the frozen ones have none (not 2 x Ψ)
  //   fp32 master        4 x 10,010    =    40,040 B
  //   Adam m, v          8 x 10,010    =    80,080 B after the first step (lazy, zero_semantics §7.17)
  //   after the step (grad partition and lp grads freed): 8,008,000 + 12 x 10,010 = 8,128,120 B, as stage 2.
  const auto wl = lora_workload(0.01);
  for (const int ga : {1, 2}) {
    INFO("grad_accum " << ga);
    auto w = wl;
    w.training.grad_accum = ga;
    const auto r = walk(generate(w, zero_config(1), 4));
    REQUIRE(!r.deadlock);
    const Sample* end = last_of(r, 1);
    REQUIRE(end != nullptr);
    CHECK(end->tag(MemTag::LP_PARAMS) == Approx(2 * kPsi).epsilon(kTol));
    CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4 * kTrainable / 4).epsilon(kTol));
    CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * kTrainable / 4).epsilon(kTol));
    CHECK(end->model_states() == Approx(8'128'120).epsilon(kTol));
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS); }, 1) == Approx(2 * kTrainable).epsilon(kTol));
  }
}

TEST_CASE("FrozenParams: LoRA at stage 2 on one GPU keeps every lp weight and 12 B per adapter element",
          "[zero][unit]") {
  // PEFT LoRA r = 8 on q_proj, v_proj (training.lora_rank) of a small LLaMA: h 64, 2 layers, 4 heads, I 128, V 256,
  // untied. Base Ψ: embed 256 x 64 = 16,384; per block 2 norms 128 + q/k/v/o 4 x 64² = 16,384 + MLP 3 x 64 x 128 =
  // 24,576 -> 41,088, x 2 = 82,176; final norm 64; lm_head 16,384: 115,008. Adapters 2 layers x 2 targets x
  // 8 x (64 + 64) = 4,096. All params 119,104.
  // N = 1 after the 2nd step: lp params 2 x 119,104 = 238,208 B (the frozen bases are module params DeepSpeed does
  // not flatten into its optimizer groups; 2 B each all the same); fp32 master 4 x 4,096 = 16,384 B; Adam m, v
  // 8 x 4,096 = 32,768 B. The adapters' lp grads live in the reduce bucket / grad partition only during the step:
  // 2 x 4,096 = 8,192 B at most.
  scenario::ModelSpec m;
  m.name = "tiny-llama";
  m.family = scenario::ModelFamily::LLAMA;
  m.hidden = 64;
  m.layers = 2;
  m.heads = 4;
  m.kv_heads = 4;
  m.intermediate = 128;
  m.vocab = 256;
  m.tied_embeddings = false;
  scenario::TrainingSpec t;
  t.seq_len = 32;
  t.lora_rank = 8;
  t.lora_targets = {"q_proj", "v_proj"};
  const auto wl = workload::build_workload(m, t);
  REQUIRE(wl.total_params == 119'104);
  REQUIRE(wl.trainable_params == 4'096);
  const auto r = walk(generate(wl, zero_config(2), 1));
  REQUIRE(!r.deadlock);
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->tag(MemTag::LP_PARAMS) == Approx(2 * 119'104).epsilon(kTol));
  CHECK(end->tag(MemTag::FP32_MASTER) == Approx(4 * 4'096).epsilon(kTol));
  CHECK(end->tag(MemTag::OPTIMIZER_STATES) == Approx(8 * 4'096).epsilon(kTol));
  const double grads =
      r.peak([](const Sample& s) { return s.tag(MemTag::LP_GRADS) + s.tag(MemTag::GRAD_PARTITION); }, 1);
  CHECK(grads <= 2 * 4'096 + kTol);
  CHECK(grads > 0);
}
