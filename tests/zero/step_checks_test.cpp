// The optimizer step's checks across ZeRO stages: stage 3's overflow check (stage3.py has_overflow), the scalar
// all-reduces of the overflow flag and the grad norm over the data-parallel group (emit_scalar_allreduce), the host
// reads they cause by DeepSpeed release, and training.gradient_clipping's clip test in stages 1/2. Expected values are
// hand calculations from the DeepSpeed code cited in sim/zero/stage3_generator.hpp and stage2_generator.hpp.
#include "sim/zero/cpu_adam.hpp"
#include "sim/zero/stage2_generator.hpp"
#include "sim/zero/stage3_generator.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <set>
#include <string>
#include <variant>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::MemTag;
using program::StepProgram;
using scenario::Precision;

namespace {
constexpr double kTol = 1e-9;
constexpr int kN = 2;

/// TinyModel at N_d = 2: stage 3 partitions each tensor, ceil(1e6 / 2) + ceil(1e3 / 2) = 500,500 per block, x 4 =
/// 2,002,000 elements of rank 0's grad partition buffer.
constexpr double kPart = 2'002'000.0;

workload::Workload tiny(Precision precision, double clip = 0.0) {
  auto wl = make_workload();
  wl.training.precision = precision;
  wl.training.gradient_clipping = clip;
  return wl;
}

scenario::ZeroConfig config(int stage, std::array<int, 3> version) {
  auto z = zero_config(stage);
  z.deepspeed_version = version;
  z.use_multi_rank_bucket_allreduce = !z.deepspeed_before(0, 12, 4);
  if (stage == 1 && z.deepspeed_before(0, 13, 0))
    z.contiguous_gradients = false; // as the loader forces it for stage 1
  return z;
}

/// HBM bytes of the Compute ops whose label starts with `prefix`, and how many there are, over the whole program.
std::pair<double, int> traffic(const StepProgram& p, const std::string& prefix) {
  double sum = 0;
  int ops = 0;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Compute>(&op.body); c && p.labels[op.label].rfind(prefix, 0) == 0) {
        sum += c->bytes.value();
        ++ops;
      }
  return {sum, ops};
}

std::size_t stream_named(const StepProgram& p, const std::string& name) {
  for (std::size_t s = 0; s < p.streams.size(); ++s)
    if (p.streams[s].name == name)
      return s;
  return p.streams.size();
}

/// Wait ops on the host stream for an event recorded on compute (the host reads a GPU value).
int host_waits_on_compute(const StepProgram& p) {
  std::set<program::EventId> on_compute;
  for (const auto& op : p.streams.at(0).ops)
    if (const auto* r = std::get_if<program::Record>(&op.body))
      on_compute.insert(r->event);
  int k = 0;
  for (const auto& op : p.streams.at(stream_named(p, "host")).ops)
    if (const auto* w = std::get_if<program::Wait>(&op.body); w && on_compute.count(w->event) > 0)
      ++k;
  return k;
}

StepProgram with_host(const workload::Workload& wl, const scenario::ZeroConfig& z, int n = kN) {
  GeneratorInput in{wl, z, n, 1, 0.0, scenario::HostSpec{}};
  auto p = generate_program(in);
  REQUIRE(program::validate(p).empty());
  return p;
}
} // namespace

TEST_CASE("stage3_checks_overflow: fp16 always, bf16 only before DeepSpeed 0.11.2 (PR #4512)", "[zero][unit]") {
  for (const std::array<int, 3> v : {std::array{0, 9, 0}, {0, 11, 1}, {0, 11, 2}, {0, 16, 0}, {0, 19, 5}}) {
    auto z = zero_config(3);
    z.deepspeed_version = v;
    CAPTURE(v[1], v[2]);
    CHECK(stage3_checks_overflow(z, Precision::FP16));
    CHECK(stage3_checks_overflow(z, Precision::BF16) == (v < std::array{0, 11, 2}));
  }
}

TEST_CASE(
    "Stage3Generator: the overflow check scans the grad partition buffer once per step on the reduce stream, "
    "8 B per element, 1 B/element live",
    "[zero][validation]") {
  // has_overflow (v0.9.4 on): isinf(buf).any() then isnan(buf).any(): each reads the bf16/fp16 buffer (2 B), writes
  // a bool tensor (1 B) and .any() reads it (1 B): 2 x (2 + 1 + 1) = 8 B x 2,002,000 = 16,016,000 B per step; with
  // grad_accum_dtype fp32 2 x (4 + 2) = 12 B per element. One bool tensor live at a time: 2,002,000 B.
  const auto fp16 = generate(tiny(Precision::FP16), config(3, {0, 19, 5}), kN, 2);
  CHECK(traffic(fp16, "overflow check grad partitions").first == Approx(2 * 8.0 * kPart).epsilon(kTol));
  CHECK(traffic(fp16, "overflow check grad partitions").second == 2);
  const std::size_t reduce = stream_named(fp16, "reduce");
  REQUIRE(reduce < fp16.streams.size());
  int on_reduce = 0;
  for (const auto& op : fp16.streams[reduce].ops)
    on_reduce += fp16.labels[op.label] == "overflow check grad partitions" ? 1 : 0;
  CHECK(on_reduce == 2);
  const auto r = walk(fp16);
  REQUIRE_FALSE(r.deadlock);
  const Sample* t = r.find(1, "overflow check temporaries", false);
  const Sample* before = nullptr;
  for (const auto& s : r.timeline) {
    if (&s == t)
      break;
    before = &s;
  }
  REQUIRE(t != nullptr);
  REQUIRE(before != nullptr);
  CHECK(t->tag(MemTag::WORKING) - before->tag(MemTag::WORKING) == Approx(kPart).epsilon(kTol));
  auto z32 = config(3, {0, 19, 5});
  z32.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  CHECK(traffic(generate(tiny(Precision::FP16), z32, kN, 2), "overflow check grad partitions").first ==
        Approx(2 * 12.0 * kPart).epsilon(kTol));
  // bf16: no check from 0.11.2, the same scan before it.
  CHECK(traffic(generate(tiny(Precision::BF16), config(3, {0, 19, 5}), kN, 2), "overflow check").second == 0);
  CHECK(
      traffic(generate(tiny(Precision::BF16), config(3, {0, 11, 1}), kN, 2), "overflow check grad partitions").first ==
      Approx(2 * 8.0 * kPart).epsilon(kTol));
}

TEST_CASE("Stage3Generator: before DeepSpeed 0.9.4 the overflow scan runs per reduced partition at every micro-step",
          "[zero][validation]") {
  // 0.9.0 partition_grads: isinf/isnan(grad_buffer).any() per reduced partition, 8 B per element of every bucket's
  // partitions: 8 x 2,002,000 B per micro-step; GA 2 x 2 steps = 4 micro-steps. No whole-buffer scan at the step.
  auto wl = tiny(Precision::FP16);
  wl.training.grad_accum = 2;
  const auto p = generate(wl, config(3, {0, 9, 0}), kN, 2);
  CHECK(traffic(p, "overflow check reduce_scatter bucket").first == Approx(4 * 8.0 * kPart).epsilon(kTol));
  CHECK(traffic(p, "overflow check grad partitions").second == 0);
}

TEST_CASE("Stage3Generator: with offload_optimizer the overflow scan runs on the CPU over the host grad buffer",
          "[zero][validation]") {
  // offload_optimizer=cpu, fp16, 0.19.5 (pin_memory true): per pass the pinned fp16 buffer is read (2 B) and a new
  // pageable bool tensor written and read (2 B), two passes: pinned 4 B + pageable 4 B per element, and 2 B of
  // first-touched bool tensors. With cpu_adam_seconds_per_param a, pinned weight w, fault cost f per byte:
  // seconds = a / kCpuAdamBytesPerParam x (4w + 4) x 2,002,000 + 2 f x 2,002,000.
  auto z = config(3, {0, 19, 5});
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  const auto wl = tiny(Precision::FP16);
  GeneratorInput in{wl, z, kN, 1, 30e-9};
  in.pinned_byte_weight = 1.5;
  in.page_fault_seconds_per_byte = 1e-10;
  const auto p = generate_program(in);
  REQUIRE(program::validate(p).empty());
  const std::size_t cpu = stream_named(p, "cpu");
  REQUIRE(cpu < p.streams.size());
  double seconds = 0;
  int ops = 0;
  for (const auto& op : p.streams[cpu].ops)
    if (const auto* c = std::get_if<program::CpuCompute>(&op.body);
        c && p.labels[op.label] == "overflow check grad partitions (cpu)") {
      seconds += c->duration.value();
      ++ops;
    }
  CHECK(ops == 1);
  CHECK(seconds == Approx(30e-9 / kCpuAdamBytesPerParam * (4 * 1.5 + 4) * kPart + 2 * 1e-10 * kPart).epsilon(kTol));
  CHECK(traffic(p, "overflow check grad partitions").second == 0); // nothing on the GPU
}

TEST_CASE(
    "scalar all-reduces: the overflow flag (1 B) and the grad norm (4 B stages 1/2, 8 B stage 3) per step, "
    "none at N_d = 1",
    "[zero][validation]") {
  // One step each. Stage 3 fp16: flag 1 B + norm 8 B (double) = 2 calls, 9 B; bf16: the norm alone, 8 B. Stage 2
  // fp16: flag 1 B + norm 4 B (float) = 5 B. Stage 1 fp16: the flag is all-reduced before 0.17.1 and from 0.18.0
  // (PR #7580), not in 0.17.1 (partition_gradients=False): 2 calls / 1 call / 2 calls. Stage 1 bf16 0.18.0: no check
  // (check_grad_overflow False), the norm alone.
  const auto scalars = [](Precision pr, int stage, std::array<int, 3> v, int n) {
    const auto r = walk(generate(tiny(pr), config(stage, v), n, 1));
    REQUIRE_FALSE(r.deadlock);
    const auto it = r.scalars.find(0);
    return it == r.scalars.end() ? CollectiveStats{} : it->second;
  };
  CHECK(scalars(Precision::FP16, 3, {0, 19, 5}, kN).calls == 2);
  CHECK(scalars(Precision::FP16, 3, {0, 19, 5}, kN).payload == 9.0);
  CHECK(scalars(Precision::BF16, 3, {0, 19, 5}, kN).calls == 1);
  CHECK(scalars(Precision::BF16, 3, {0, 19, 5}, kN).payload == 8.0);
  CHECK(scalars(Precision::FP16, 2, {0, 19, 5}, kN).payload == 5.0);
  CHECK(scalars(Precision::FP16, 1, {0, 16, 0}, kN).calls == 2);
  CHECK(scalars(Precision::FP16, 1, {0, 17, 1}, kN).calls == 1);
  CHECK(scalars(Precision::FP16, 1, {0, 18, 0}, kN).calls == 2);
  CHECK(scalars(Precision::BF16, 1, {0, 18, 0}, kN).payload == 4.0);
  for (int stage : {1, 2, 3})
    CHECK(scalars(Precision::FP16, stage, {0, 19, 5}, 1).calls == 0);
  // Stage 0 (FP16_Optimizer): no data-parallel scalar all-reduce (its norm and flag reduce over the model-parallel
  // group only, runtime/utils.py get_flattened_grad_norm, CheckOverflow).
  CHECK(scalars(Precision::FP16, 0, {0, 19, 5}, kN).calls == 0);
}

TEST_CASE("Stage3Generator: host reads of the step: the overflow flag (fp16), the grad norm before 0.14.5",
          "[zero][unit]") {
  // fp16 and bf16 differ by the flag's .item() (stage3.py has_overflow) from 0.11.2. The norm is read on the host
  // before 0.14.5 (get_global_norm's math.sqrt of a device tensor; PR #5504 made it torch.linalg.norm): bf16
  // 0.14.4 waits once more than 0.14.5. Clipping changes nothing in stage 3 (a Python float before 0.14.5, a
  // torch.clamp after).
  const auto waits = [](Precision pr, std::array<int, 3> v, double clip = 0.0) {
    return host_waits_on_compute(with_host(tiny(pr, clip), config(3, v)));
  };
  CHECK(waits(Precision::FP16, {0, 19, 5}) - waits(Precision::BF16, {0, 19, 5}) == 1);
  CHECK(waits(Precision::BF16, {0, 14, 4}) - waits(Precision::BF16, {0, 14, 5}) == 1);
  CHECK(waits(Precision::FP16, {0, 11, 1}) == waits(Precision::BF16, {0, 11, 1}));
  for (const std::array<int, 3> v : {std::array{0, 13, 5}, {0, 14, 0}, {0, 19, 5}})
    CHECK(waits(Precision::BF16, v, 1.0) == waits(Precision::BF16, v, 0.0));
}

TEST_CASE("Stage1/2: gradient_clipping > 0 adds the clip test's host read in DeepSpeed 0.13.2-0.14.2 only",
          "[zero][unit]") {
  // stage_1_and_2.py unscale_and_clip_grads: `if clip > 1` on the GPU norm tensor (0.13.2, PR #4974, to 0.14.2;
  // PR #5632's torch.clamp from 0.14.3); a Python float before 0.13.2. Offload too (the norm comes back as a tensor).
  CHECK(stage12_clip_waits(config(2, {0, 14, 0}), 1.0));
  CHECK_FALSE(stage12_clip_waits(config(2, {0, 14, 0}), 0.0));
  CHECK_FALSE(stage12_clip_waits(config(2, {0, 13, 1}), 1.0));
  CHECK_FALSE(stage12_clip_waits(config(2, {0, 14, 3}), 1.0));
  for (int stage : {1, 2}) {
    for (const bool offload : {false, true}) {
      const auto waits = [&](std::array<int, 3> v, double clip) {
        auto z = config(stage, v);
        if (offload)
          z.offload_optimizer = scenario::OffloadDevice::CPU;
        const auto wl = tiny(Precision::BF16, clip);
        GeneratorInput in{wl, z, kN, 1, offload ? 30e-9 : 0.0, scenario::HostSpec{}};
        return host_waits_on_compute(generate_program(in));
      };
      CAPTURE(stage, offload);
      CHECK(waits({0, 13, 2}, 1.0) - waits({0, 13, 2}, 0.0) == 1);
      CHECK(waits({0, 14, 2}, 0.5) - waits({0, 14, 2}, 0.0) == 1);
      CHECK(waits({0, 13, 1}, 1.0) == waits({0, 13, 1}, 0.0));
      CHECK(waits({0, 14, 3}, 1.0) == waits({0, 14, 3}, 0.0));
    }
  }
}

namespace {
/// Optimizer sub-groups of TinyModel at N_d = 2, packed by hand as stage3.py _create_fp16_sub_groups does: the
/// partitions in order (w0 b0 w1 b1 ... = 500,000 500 500,000 500 ...) until a group holds >= `size` elements.
/// Returns the number of params in each group.
std::vector<int> tiny_sub_groups(double size) {
  std::vector<int> groups;
  double acc = 0;
  int params = 0;
  for (int i = 0; i < 8; ++i) {
    acc += i % 2 == 0 ? 500'000.0 : 500.0;
    ++params;
    if (acc >= size) {
      groups.push_back(params);
      acc = 0;
      params = 0;
    }
  }
  if (params > 0)
    groups.push_back(params);
  return groups;
}

/// sub_group_size 600,000 at N_d = 2: w0 b0 w1 = 1,000,500 | b1 w2 b2 w3 = 1,001,000 | b3 = 500: 3 groups of 3, 4
/// and 1 params. The default 1e9 is one group of all 8.
constexpr Elements kSmallSubGroup = 600'000;

scenario::ZeroConfig stage3_config(std::array<int, 3> v, Elements sub_group_size, bool offload) {
  auto z = config(3, v);
  z.sub_group_size = sub_group_size;
  if (offload)
    z.offload_optimizer = scenario::OffloadDevice::CPU;
  return z;
}

/// Host waits on the compute stream over one bf16 step (no overflow check from v0.11.2, so the grad norm's reads are
/// the only ones of the optimizer step on compute).
int stage3_waits(std::array<int, 3> v, Elements sub_group_size, bool offload) {
  const auto wl = tiny(Precision::BF16);
  GeneratorInput in{wl, stage3_config(v, sub_group_size, offload), kN, 1, offload ? 30e-9 : 0.0, scenario::HostSpec{}};
  const auto p = generate_program(in);
  REQUIRE(program::validate(p).empty());
  return host_waits_on_compute(p);
}
} // namespace

TEST_CASE("Stage3Generator: the grad norm is all-reduced once per optimizer sub-group, 8 B, or 4 B with offload",
          "[zero][validation]") {
  // stage3.py _get_norm_groups calls get_grad_norm_direct (8 B double) or, with offload_optimizer,
  // complete_grad_norm_calculation_for_cpu_offload (4 B FloatTensor) once per entry of fp16_groups, the sub-groups.
  const std::vector<int> small = tiny_sub_groups(600'000.0);
  REQUIRE(small == std::vector<int>{3, 4, 1});
  REQUIRE(tiny_sub_groups(1e9).size() == 1);
  for (const std::array<int, 3> v : {std::array{0, 12, 6}, {0, 13, 0}, {0, 14, 4}, {0, 14, 5}, {0, 19, 6}}) {
    for (const bool offload : {false, true}) {
      const auto scalars = [&](Elements size) {
        const auto r =
            walk(generate(tiny(Precision::BF16), stage3_config(v, size, offload), kN, 1, offload ? 30e-9 : 0.0));
        REQUIRE_FALSE(r.deadlock);
        return r.scalars.at(0);
      };
      CAPTURE(v[1], v[2], offload);
      const double bytes = offload ? 4.0 : 8.0;
      CHECK(scalars(kSmallSubGroup).calls == static_cast<int>(small.size()));
      CHECK(scalars(kSmallSubGroup).payload == Approx(bytes * static_cast<double>(small.size())).epsilon(kTol));
      CHECK(scalars(1'000'000'000).calls == 1);
    }
  }
  // One get_grad_norm_direct per sub-group: the fp64 norm kernels are emitted group by group, 2 per piece (cast and
  // vector_norm) over the same 8 pieces, so the traffic does not change: 18 B x 2,002,000.
  const auto p = generate(tiny(Precision::BF16), stage3_config({0, 19, 6}, kSmallSubGroup, false), kN, 1);
  CHECK(traffic(p, "grad norm").first == Approx(18.0 * kPart).epsilon(kTol));
  CHECK(traffic(p, "grad norm").second == 2 * 8);
}

TEST_CASE("Stage3Generator: zero.sub_group_size 0 makes one optimizer sub-group per trainable param",
          "[zero][validation]") {
  // stage3.py _create_fp16_sub_groups with sub_group_size 0 (DeepSpeed's config accepts it, ge=0): 0 is below the
  // group's numel, so no early return, and `local_sub_group_size >= 0` closes a group after every param. TinyModel
  // has 8 trainable params (w0 b0 ... w3 b3), so 8 sub-groups at N_d = 2: 8 norm all-reduces of 8 B per step
  // (_get_norm_groups), and initialize_optimizer_states' fp32 grad buffer is the largest sub-group, one weight's
  // partition: ceil(1e6 / 2) = 500,000 elements x 4 B = 2,000,000 B.
  const std::vector<int> per_param = tiny_sub_groups(0.0);
  REQUIRE(per_param == std::vector<int>(8, 1));
  const auto r = walk(generate(tiny(Precision::BF16), stage3_config({0, 19, 6}, 0, false), kN, 1));
  REQUIRE_FALSE(r.deadlock);
  CHECK(r.scalars.at(0).calls == 8);
  CHECK(r.scalars.at(0).payload == Approx(8.0 * 8).epsilon(kTol));
  const Sample* t = find_nth_alloc(r, -1, "init fp32 grad", 0);
  REQUIRE(t != nullptr);
  CHECK(t->tag(MemTag::FP32_GRADS) == Approx(2'000'000).epsilon(kTol));
  // Negative sizes are still rejected (config ge=0).
  auto bad = stage3_config({0, 19, 6}, -1, false);
  CHECK_THROWS_WITH(generate(tiny(Precision::BF16), bad, kN, 1), Catch::Contains("zero.sub_group_size"));
}

TEST_CASE("Stage3Generator: the grad norm's host reads per sub-group by release, GPU path", "[zero][unit]") {
  // get_grad_norm_direct reads each sub-group's all-reduced total with `.item()` before 0.13.0: G reads. From
  // 0.13.0 (PR #4436) the totals stay on the device and get_global_norm's math.sqrt reads once. From 0.14.5
  // (PR #5504) torch.linalg.norm of the stacked norms: none. G = 3 (kSmallSubGroup) or 1 (default).
  const int g = static_cast<int>(tiny_sub_groups(600'000.0).size());
  const auto waits = [](std::array<int, 3> v, Elements size) { return stage3_waits(v, size, false); };
  CHECK(waits({0, 12, 6}, kSmallSubGroup) - waits({0, 12, 6}, 1'000'000'000) == g - 1);
  for (const std::array<int, 3> v : {std::array{0, 13, 0}, {0, 14, 4}, {0, 14, 5}, {0, 19, 6}}) {
    CAPTURE(v[1], v[2]);
    CHECK(waits(v, kSmallSubGroup) == waits(v, 1'000'000'000));
  }
  CHECK(waits({0, 12, 6}, kSmallSubGroup) - waits({0, 13, 0}, kSmallSubGroup) == g - 1);
  CHECK(waits({0, 14, 4}, kSmallSubGroup) - waits({0, 14, 5}, kSmallSubGroup) == 1);
}

TEST_CASE("Stage3Generator: the grad norm's host reads per sub-group by release, offload_optimizer", "[zero][unit]") {
  // complete_grad_norm_calculation_for_cpu_offload per sub-group of P_i params: before 0.13.0 `.item()` of each
  // param's norm (P_i reads) and of the all-reduced total (1); 0.13.0-0.14.4 `float()` of the device sum (1) and
  // get_global_norm's math.sqrt once after the loop; from 0.14.5 `float()` and `.cpu()` (2 per sub-group). With
  // P = 8 params: G = 3 gives 8 + 3 = 11, 3 + 1 = 4 and 6 reads; G = 1 gives 9, 2 and 2.
  const std::vector<int> small = tiny_sub_groups(600'000.0);
  const int g = static_cast<int>(small.size());
  int params = 0;
  for (const int k : small)
    params += k;
  REQUIRE(params == 8);
  const auto waits = [](std::array<int, 3> v, Elements size) { return stage3_waits(v, size, true); };
  const Elements big = 1'000'000'000;
  CHECK(waits({0, 12, 6}, kSmallSubGroup) - waits({0, 12, 6}, big) == (params + g) - (params + 1));
  CHECK(waits({0, 13, 0}, kSmallSubGroup) - waits({0, 13, 0}, big) == (g + 1) - 2);
  CHECK(waits({0, 14, 4}, kSmallSubGroup) - waits({0, 14, 4}, big) == (g + 1) - 2);
  CHECK(waits({0, 14, 5}, kSmallSubGroup) - waits({0, 14, 5}, big) == 2 * g - 2);
  CHECK(waits({0, 19, 6}, kSmallSubGroup) - waits({0, 19, 6}, big) == 2 * g - 2);
  // Across releases at G = 3: the per-param `.item()`s go at 0.13.0, the `.cpu()` per sub-group comes at 0.14.5.
  CHECK(waits({0, 12, 6}, kSmallSubGroup) - waits({0, 13, 0}, kSmallSubGroup) == (params + g) - (g + 1));
  CHECK(waits({0, 14, 5}, kSmallSubGroup) - waits({0, 14, 4}, kSmallSubGroup) == 2 * g - (g + 1));
}

TEST_CASE("BF16_Optimizer: the norm's host reads by release and gradient_clipping's clip test from 0.14.1",
          "[zero][unit]") {
  // runtime/utils.py get_global_norm_of_tensors before 0.14.1: `.item()` of each fp32 grad tensor's norm (TinyModel:
  // 8 trainable params) and of the summed FloatTensor: 8 + 1 = 9 reads, a Python float after that. From 0.14.1 the
  // norm is a device tensor: bf16_optimizer.py step's `assert all_groups_norm > 0.` reads it once and, with
  // gradient_clipping > 0, clip_tensors_by_global_norm's `if clip_coef < 1` once more.
  const auto waits = [](std::array<int, 3> v, double clip) {
    auto z = config(1, v);
    z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
    REQUIRE(scenario::uses_bf16_optimizer(tiny(Precision::BF16, clip).training, z));
    return host_waits_on_compute(with_host(tiny(Precision::BF16, clip), z));
  };
  CHECK(waits({0, 14, 0}, 0.0) - waits({0, 14, 1}, 0.0) == (8 + 1) - 1);
  CHECK(waits({0, 14, 0}, 1.0) == waits({0, 14, 0}, 0.0));
  for (const std::array<int, 3> v : {std::array{0, 14, 1}, {0, 16, 0}, {0, 18, 4}}) {
    CAPTURE(v[1], v[2]);
    CHECK(waits(v, 1.0) - waits(v, 0.0) == 1);
  }
}
