// zero.communication_data_type (DeepSpeed's top-level communication_data_type, deepspeed/runtime/config.py
// get_communication_data_type; engine.py communication_data_type): the dtype the gradient reductions run in. The
// expected values are hand calculations on TinyModel (tests/zero/test_model.hpp): Ψ = 4 x (1,000,000 + 1,000) =
// 4,004,000 elements, bf16 (2 B), no padding for N_d in {1, 2, 4}; with fp32 communication every gradient
// collective carries 4Ψ = 16,016,000 B instead of 2Ψ = 8,008,000 B, and the parameter all-gathers keep 2 B.
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

scenario::ZeroConfig fp32_comm(int stage) {
  auto z = zero_config(stage);
  z.communication_data_type = scenario::CommDataType::FP32;
  return z;
}

double flatten_peak(const WalkResult& r, int step) {
  return r.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, step);
}
} // namespace

TEST_CASE(
    "communication_data_type fp32, stage 3: the IPG bucket is fp32 from init and the reduce-scatter carries "
    "4 B per element, the all-gathers 2 (stage3.py, coalesced_collectives.py)",
    "[zero][validation]") {
  // stage3.py l.731-735: the bucket is torch.empty(reduce_bucket_size, dtype=communication dtype): 5e8 x 4 B = 2e9 B
  // (bf16: 1e9 B). The grads are upcast on their copy into it; at the end of backward the whole model (< 5e8
  // elements) is one bucket: reduce_scatter_coalesced torch.cat's an interleaved fp32 flat copy of 4Ψ =
  // 16,016,000 B and reduce-scatters it; this rank's partitions are cast back to bf16 (l.1825-1826: 2Ψ/4 =
  // 2,002,000 B) while the flat copy, which the views point into, is still live: 18,018,000 B of temporaries.
  // All-gathers are unchanged: step 1 gathers the weights 2 x 4e6 B and the post-step persistent biases 2 x 4,000 B.
  const TinyModel m;
  const int n = 4;
  const auto r = walk(generate(make_workload(m), fp32_comm(3), n));
  const auto base = walk(generate(make_workload(m), zero_config(3), n));
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, -1) == Approx(2e9).epsilon(kTol));
  CHECK(base.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, -1) == Approx(1e9).epsilon(kTol));
  for (int step : {0, 1}) {
    INFO("step " << step);
    CHECK(r.stats(step, CollectiveKind::REDUCE_SCATTER).payload == Approx(4 * psi(m)).epsilon(kTol));
    CHECK(base.stats(step, CollectiveKind::REDUCE_SCATTER).payload == Approx(2 * psi(m)).epsilon(kTol));
  }
  CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'000).epsilon(kTol));
  CHECK(base.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(8'008'000).epsilon(kTol));
  CHECK(flatten_peak(r, 1) == Approx(4 * psi(m) + 2 * psi(m) / n).epsilon(kTol));
  CHECK(flatten_peak(base, 1) == Approx(2 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "communication_data_type fp32, stage 3 before DeepSpeed 0.17.2: the IPG bucket is bf16 and each bucket's grads "
    "get an fp32 copy before the interleave (stage3.py __avg_scatter_grads)",
    "[zero][validation]") {
  // v0.6.0-v0.17.1: torch.empty(self.reduce_bucket_size, dtype=self.dtype) (stage3.py l.370-372 @v0.9.0, l.538-540
  // @v0.17.1): 5e8 x 2 B = 1e9 B; from v0.17.2 one bucket per communication dtype (l.402, l.559-561 @v0.17.2):
  // 5e8 x 4 B = 2e9 B. Before v0.17.2 the grads are copied in as bf16 and __avg_scatter_grads casts the bucket's
  // grads, `[g.to(communication_data_type) ...]` (l.1081-1082 @v0.9.0): 4Ψ = 16,016,000 B, live while
  // reduce_scatter_coalesced's interleaved fp32 copy (4Ψ) is made and reduce-scattered and while this rank's
  // partitions are cast back to bf16 (2Ψ/4): 8Ψ + Ψ/2 = 34,034,000 B of temporaries (0.17.2: 4Ψ + Ψ/2 =
  // 18,018,000 B). The copy into the bucket reads and writes 2 B per element instead of 2 + 4.
  const TinyModel m;
  const int n = 4;
  auto old = fp32_comm(3);
  old.deepspeed_version = {0, 9, 0};
  auto split = fp32_comm(3);
  split.deepspeed_version = {0, 17, 2};
  const auto r = walk(generate(make_workload(m), old, n));
  const auto r2 = walk(generate(make_workload(m), split, n));
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, -1) == Approx(1e9).epsilon(kTol));
  CHECK(r2.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, -1) == Approx(2e9).epsilon(kTol));
  CHECK(flatten_peak(r, 1) == Approx(34'034'000).epsilon(kTol));
  CHECK(flatten_peak(r2, 1) == Approx(18'018'000).epsilon(kTol));
  CHECK(r.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(4 * psi(m)).epsilon(kTol));
  CHECK(r2.stats(1, CollectiveKind::REDUCE_SCATTER).payload == Approx(4 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "communication_data_type fp32, stage 1 and 2: the bucket stays bf16, each flattened chunk gets an fp32 "
    "copy and the all-reduce carries 4 B per element (stage_1_and_2.py allreduce_bucket)",
    "[zero][validation]") {
  // setup_buckets allocates reduce_bucket_size elements of the model dtype: 5e8 x 2 B = 1e9 B (overlap_comm off:
  // one buffer), whatever communication_data_type says. allreduce_bucket (l.1841-1865): flatten -> bf16 2Ψ =
  // 8,008,000 B, `.to(fp32)` -> 4Ψ = 16,016,000 B live with it: 24,024,000 B; all_reduce on the fp32 copy (4Ψ B
  // of payload), copy back, drop. The parameter all-gather after the step stays bf16: 2Ψ B.
  const TinyModel m;
  const int n = 4;
  for (int stage : {1, 2}) {
    INFO("stage " << stage);
    const auto r = walk(generate(make_workload(m), fp32_comm(stage), n));
    CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); }, 1) == Approx(1e9).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(4 * psi(m)).epsilon(kTol));
    CHECK(r.stats(1, CollectiveKind::ALL_GATHER).payload == Approx(2 * psi(m)).epsilon(kTol));
    CHECK(flatten_peak(r, 1) == Approx(6 * psi(m)).epsilon(kTol));
  }
  // reduce_scatter=false (gradient_reduction_w_predivide, l.1259-1289): the bucket itself is `.to(fp32)`: 4Ψ B, no
  // flatten.
  auto z = fp32_comm(2);
  z.reduce_scatter = false;
  const auto r = walk(generate(make_workload(m), z, n));
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(4 * psi(m)).epsilon(kTol));
  CHECK(flatten_peak(r, 1) == Approx(4 * psi(m)).epsilon(kTol));
  // bf16 (the model's dtype, written out): no cast, 2 B per element; the only temporary left is the step's flatten
  // of this rank's partition grads, 2Ψ/4 = 2,002,000 B.
  z.communication_data_type = scenario::CommDataType::BF16;
  const auto same = walk(generate(make_workload(m), z, n));
  CHECK(same.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(2 * psi(m)).epsilon(kTol));
  CHECK(flatten_peak(same, 1) == Approx(2 * psi(m) / n).epsilon(kTol));
}

TEST_CASE(
    "communication_data_type fp32, stage 0: the flattened bucket is cast to fp32 for its all-reduce "
    "(engine.py allreduce_bucket)",
    "[zero][validation]") {
  // buffered_allreduce_fallback: one MEMORY_OPT_ALLREDUCE_SIZE bucket holds the whole model: flatten 2Ψ B, then
  // tensor.to(fp32) 4Ψ B (engine.py l.3663-3664), all-reduced (4Ψ B of payload) and copied back: 6Ψ B of
  // temporaries at once.
  const TinyModel m;
  const auto r = walk(generate(make_workload(m), fp32_comm(0), 2));
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(4 * psi(m)).epsilon(kTol));
  CHECK(flatten_peak(r, 1) == Approx(6 * psi(m)).epsilon(kTol));
}

TEST_CASE(
    "communication_data_type fp32 with BF16_Optimizer: the fp32 grad buffer is all-reduced as it is, without "
    "the bf16 cast (bf16_optimizer.py, engine.py allreduce_bucket)",
    "[zero][validation]") {
  // get_grads_for_reduction() is the fp32 buffer; allreduce_bucket casts only when communication_data_type differs
  // from its dtype: with fp32 no 2Ψ B bf16 copy, and the all-reduce carries 4Ψ B (default bf16: 2Ψ B).
  const TinyModel m;
  auto z = fp32_comm(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  const auto r = walk(generate(make_workload(m), z, 2));
  CHECK(r.stats(1, CollectiveKind::ALL_REDUCE).payload == Approx(4 * psi(m)).epsilon(kTol));
  CHECK(flatten_peak(r, 1) == 0);
  CHECK(r.find(1, "fp32 grads -> bf16 for all-reduce", false) == nullptr);
}
