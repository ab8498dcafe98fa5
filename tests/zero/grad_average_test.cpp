// DeepSpeed's gradient averaging (sim/zero/generator_common.hpp emit_grad_average): the in-place div_(N_d) or
// postscale mul_(1 / N_d) over each reduced gradient tensor, a memory-bound pass that reads and writes the tensor in
// its dtype. Expected values are hand calculations on TinyModel (tests/zero/test_model.hpp): Ψ = 4 x (1,000,000 +
// 1,000) = 4,004,000 elements of bf16 (2 B), one bucket for the whole model (reduce_bucket_size 5e8 and
// MEMORY_OPT_ALLREDUCE_SIZE 5e8 elements both exceed Ψ). Times use the engine's memory-bound pricing
// (stream_actor.cpp do_compute: bytes / (memory_bandwidth x memory_efficiency)) on the test GPU of
// tests/support/test_gpu.hpp: 2e12 B/s x 0.8 = 1.6e12 B/s.
#include "sim/zero/generator_common.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <variant>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;

namespace {
constexpr double kTol = 1e-9;
constexpr double kAchievedHbm = 2e12 * 0.8; // test-gpu memory_bandwidth x memory_efficiency, B/s

/// One op of step 1 as the tests see it: its stream's name, its position there, its label and its bytes (compute)
/// or payload (collective).
struct Seen {
  std::string stream;
  std::size_t index = 0;
  std::string label;
  double bytes = 0;
  bool collective = false;
};

/// The compute ops of step 1 whose label starts with "average", and the GRAD_REDUCE collectives of step 1.
std::vector<Seen> step1(const program::StepProgram& p, bool collectives) {
  std::vector<Seen> out;
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    for (std::size_t i = 0; i < p.streams[s].ops.size(); ++i) {
      const auto& op = p.streams[s].ops[i];
      if (p.step_of(static_cast<program::StreamId>(s), i) != 1)
        continue;
      const std::string& l = p.labels[op.label];
      if (const auto* c = std::get_if<program::Compute>(&op.body); c && !collectives && l.rfind("average", 0) == 0)
        out.push_back({p.streams[s].name, i, l, c->bytes.value(), false});
      if (const auto* k = std::get_if<program::Collective>(&op.body);
          k && collectives && op.phase == program::Phase::GRAD_REDUCE)
        out.push_back({p.streams[s].name, i, l, k->bytes.value(), true});
    }
  return out;
}
} // namespace

/// The ops of `ops` whose label is `label` (exactly).
std::vector<Seen> named(const std::vector<Seen>& ops, const std::string& label) {
  std::vector<Seen> out;
  for (const auto& o : ops)
    if (o.label == label)
      out.push_back(o);
  return out;
}

/// Sum of the bytes of `ops`.
double total(const std::vector<Seen>& ops) {
  double sum = 0;
  for (const auto& o : ops)
    sum += o.bytes;
  return sum;
}

scenario::ZeroConfig with_fp32_comm(scenario::ZeroConfig z) {
  z.communication_data_type = scenario::CommDataType::FP32;
  return z;
}

TEST_CASE(
    "grad average: stage 0 multiplies each all-reduced bucket by 1/N_d after the all-reduce, on the "
    "default stream, in the communication dtype, only at N_d > 1 (engine.py allreduce_bucket postscale)",
    "[zero][validation]") {
  // postscale_gradients defaults to true and gradient_predivide_factor to 1.0: after dist.all_reduce,
  // `factor != world size` holds at N_d = 4, so mul_(1/4) reads and writes the bucket: 2 x 2 B x 4,004,000 =
  // 16,016,000 B, 16,016,000 / 1.6e12 = 10.01 us. With communication_data_type fp32 it runs on the fp32 copy
  // before the copy back: 2 x 4 B x Ψ = 32,032,000 B, 20.02 us. At N_d = 1 factor == world size: no kernel.
  const auto p = generate(make_workload(), zero_config(0), 4);
  const auto avg = named(step1(p, false), "average allreduce bucket 0");
  const auto ar = named(step1(p, true), "allreduce bucket 0");
  REQUIRE(avg.size() == 1);
  REQUIRE(ar.size() == 1);
  CHECK(avg[0].stream == "compute");
  CHECK(avg[0].stream == ar[0].stream);
  CHECK(avg[0].index == ar[0].index + 1); // right after the all-reduce, before any copy back
  CHECK(avg[0].bytes == Approx(16'016'000).epsilon(kTol));
  CHECK(avg[0].bytes / kAchievedHbm == Approx(10.01e-6).epsilon(kTol));
  const auto f =
      named(step1(generate(make_workload(), with_fp32_comm(zero_config(0)), 4), false), "average allreduce bucket 0");
  REQUIRE(f.size() == 1);
  CHECK(f[0].bytes / kAchievedHbm == Approx(20.02e-6).epsilon(kTol));
  CHECK(step1(generate(make_workload(), zero_config(0), 1), false).empty());
}

TEST_CASE(
    "grad average: stage 1 and 2 divide the whole bf16 bucket before the reduction, on the reduction "
    "stream, at any N_d (stage_1_and_2.py average_tensor)",
    "[zero][validation]") {
  // average_tensor with reduce_scatter (default): tensor.div_(N_d) of the IPG bucket in the model's dtype before the
  // flatten, the cast and the all-reduce: 2 x 2 B x Ψ = 16,016,000 B, 10.01 us, also at N_d = 1 (div_(1.0) is
  // still a kernel) and also with communication_data_type fp32 (the cast comes after). It runs under
  // `with stream(stream)`: the compute stream without overlap_comm, the reduction stream with it.
  for (int stage : {1, 2})
    for (int n : {1, 4})
      for (bool overlap : {false, true})
        for (bool fp32 : {false, true}) {
          INFO("stage " << stage << ", N_d = " << n << ", overlap_comm " << overlap << ", fp32 comm " << fp32);
          auto z = zero_config(stage);
          z.overlap_comm = overlap;
          if (fp32)
            z = with_fp32_comm(z);
          const auto p = generate(make_workload(), z, n);
          const auto avg = step1(p, false);
          const auto ar = step1(p, true);
          REQUIRE(avg.size() == 1);
          REQUIRE(ar.size() == 1);
          CHECK(avg[0].stream == (overlap ? "comm" : "compute"));
          CHECK(avg[0].stream == ar[0].stream);
          CHECK(avg[0].index < ar[0].index);
          CHECK(avg[0].bytes / kAchievedHbm == Approx(10.01e-6).epsilon(kTol));
        }
}

TEST_CASE(
    "grad average: stage 2 with reduce_scatter false multiplies the reduced tensor after the all-reduce, "
    "only at N_d > 1 (gradient_reduction_w_predivide postscale)",
    "[zero][validation]") {
  // mul_(1/N_d) of the all-reduced bucket (or its fp32 copy): 16,016,000 B = 10.01 us in bf16, 20.02 us in fp32.
  auto z = zero_config(2);
  z.reduce_scatter = false;
  const auto p = generate(make_workload(), z, 4);
  const auto avg = step1(p, false);
  const auto ar = step1(p, true);
  REQUIRE(avg.size() == 1);
  REQUIRE(ar.size() == 1);
  CHECK(avg[0].index == ar[0].index + 1);
  CHECK(avg[0].bytes / kAchievedHbm == Approx(10.01e-6).epsilon(kTol));
  const auto f = step1(generate(make_workload(), with_fp32_comm(z), 4), false);
  REQUIRE(f.size() == 1);
  CHECK(f[0].bytes / kAchievedHbm == Approx(20.02e-6).epsilon(kTol));
  CHECK(step1(generate(make_workload(), z, 1), false).empty());
}

TEST_CASE(
    "grad average: stage 2 without contiguous_gradients divides the flattened copy before its all-reduce "
    "(allreduce_bucket, divide=True)",
    "[zero][validation]") {
  // buffered_reduce_fallback -> allreduce_and_copy -> allreduce_bucket: div_ of the flat tensor (the fp32 copy
  // with communication_data_type fp32) before the all-reduce, at any N_d: 10.01 us in bf16, 20.02 us in fp32.
  auto z = zero_config(2);
  z.contiguous_gradients = false;
  for (int n : {1, 4})
    for (bool fp32 : {false, true}) {
      INFO("N_d = " << n << ", fp32 comm " << fp32);
      const auto p = generate(make_workload(), fp32 ? with_fp32_comm(z) : z, n);
      const auto avg = step1(p, false);
      const auto ar = step1(p, true);
      REQUIRE(avg.size() == 1);
      REQUIRE(ar.size() == 1);
      CHECK(avg[0].index + 1 == ar[0].index);
      CHECK(avg[0].bytes / kAchievedHbm == Approx(fp32 ? 20.02e-6 : 10.01e-6).epsilon(kTol));
    }
}

TEST_CASE(
    "grad average: BF16_Optimizer multiplies the all-reduced grads by 1/N_d in the dtype they were reduced "
    "in (engine.py allreduce_bucket)",
    "[zero][validation]") {
  // The flat fp32 grad buffer (Ψ = 4,004,000 elements, a multiple of 2 N_d: no padding) is cast to bf16, all-reduced,
  // multiplied (2 x 2 B x Ψ = 16,016,000 B, 10.01 us) and copied back; with communication_data_type fp32 the buffer
  // itself is reduced and multiplied: 32,032,000 B, 20.02 us. None at N_d = 1.
  auto z = zero_config(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  for (bool fp32 : {false, true}) {
    INFO("fp32 comm " << fp32);
    const auto p = generate(make_workload(), fp32 ? with_fp32_comm(z) : z, 2);
    const auto avg = step1(p, false);
    const auto ar = step1(p, true);
    REQUIRE(avg.size() == 1);
    REQUIRE(ar.size() == 1);
    CHECK(avg[0].index == ar[0].index + 1);
    CHECK(avg[0].bytes / kAchievedHbm == Approx(fp32 ? 20.02e-6 : 10.01e-6).epsilon(kTol));
  }
  CHECK(step1(generate(make_workload(), z, 1), false).empty());
}

TEST_CASE(
    "grad average: stage 3 pre-divides the padded flat buffer of reduce_scatter_coalesced on the reduce "
    "stream, in the communication dtype (coalesced_collectives.py)",
    "[zero][validation]") {
  // From v0.6.0: div_(N_d) of the interleaved flat copy (N_d x ceil(numel/N_d) per param: no padding here, 2Ψ B in
  // bf16) right before the reduce-scatter: 16,016,000 B, 10.01 us; the stage 3 bucket is fp32 with
  // communication_data_type fp32: 32,032,000 B, 20.02 us; at N_d = 1 too.
  for (int n : {1, 4})
    for (bool fp32 : {false, true}) {
      INFO("N_d = " << n << ", fp32 comm " << fp32);
      const auto p = generate(make_workload(), fp32 ? with_fp32_comm(zero_config(3)) : zero_config(3), n);
      const auto avg = step1(p, false);
      const auto rs = step1(p, true);
      REQUIRE(avg.size() == 1);
      REQUIRE(rs.size() == 1);
      CHECK(avg[0].stream == rs[0].stream);
      CHECK(avg[0].index + 1 == rs[0].index);
      CHECK(avg[0].bytes / kAchievedHbm == Approx(fp32 ? 20.02e-6 : 10.01e-6).epsilon(kTol));
    }
  // Before v0.6.0 average_tensor divides each tensor of reduction_list in place instead, and that list is the whole
  // IPG buffer, torch.empty(reduce_bucket_size) of the model dtype, not its grads (stage3.py l.1950-1951,
  // 2169-2173, 2930-2934 @v0.5.10): one div_ over 5e8 x 2 B = 1e9 B, read + write 2e9 B = 1.25 ms, at any N_d.
  // With reduce_bucket_size 2,500,000 (two buckets, see the stage 3 generator test): 2 x 1e7 B, 6.25 us each. The
  // model is fp16 (2 B, as bf16): ZeRO-3 has no bf16 before v0.6.0 (config.py l.902 @v0.5.10).
  auto old = zero_config(3);
  old.deepspeed_version = {0, 5, 10};
  auto fp16 = make_workload();
  fp16.training.precision = scenario::Precision::FP16;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const auto avg = step1(generate(fp16, old, n), false);
    REQUIRE(avg.size() == 1);
    CHECK(avg[0].bytes / kAchievedHbm == Approx(1.25e-3).epsilon(kTol));
  }
  old.reduce_bucket_size = 2'500'000;
  const auto avg = step1(generate(fp16, old, 4), false);
  REQUIRE(avg.size() == 2);
  CHECK(total(avg) / kAchievedHbm == Approx(12.5e-6).epsilon(kTol));
}

TEST_CASE(
    "grad average: stage 3 with reduce_scatter false divides the bucket before its all-reduce and, at "
    "N_d > 1, writes an out-of-place product after it (__avg_scatter_contiguous_grads)",
    "[zero][validation]") {
  // buffer.div_(N_d) before the all-reduce (16,016,000 B, 10.01 us); then `gradient_predivide_factor (1.0) !=
  // world size` at N_d = 4 makes `buffer.mul(1.0)`: a new 2Ψ = 8,008,000 B tensor, another 10.01 us. N_d = 1: the
  // divide only.
  auto z = zero_config(3);
  z.reduce_scatter = false;
  const auto p = generate(make_workload(), z, 4);
  const auto avg = step1(p, false);
  const auto ar = step1(p, true);
  REQUIRE(avg.size() == 2);
  REQUIRE(ar.size() == 1);
  CHECK(avg[0].index < ar[0].index);
  CHECK(avg[1].index > ar[0].index);
  CHECK(avg[1].label.rfind("average copy", 0) == 0);
  CHECK(avg[0].bytes / kAchievedHbm == Approx(10.01e-6).epsilon(kTol));
  CHECK(avg[1].bytes / kAchievedHbm == Approx(10.01e-6).epsilon(kTol));
  const auto w = walk(p);
  CHECK(w.find(1, avg[1].label, false) != nullptr);
  CHECK(w.find(1, avg[1].label, false)->tag(program::MemTag::FLATTEN_TEMP) >= 8'008'000);
  CHECK(step1(generate(make_workload(), z, 1), false).size() == 1);
}
