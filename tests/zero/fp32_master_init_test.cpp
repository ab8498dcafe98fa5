// The fp32 master partition's making at initialisation and the transient it leaves (emit_fp32_master_from_lp).
// DeepSpeed builds the master from the lp partition with one expression whose intermediate is freed as soon as the
// master exists; PyTorch's caching allocator keeps that block (reserved, not allocated):
//  - stage_1_and_2.py __init__: `parallel_partitioned_bit16_groups[i][partition_id].to(self.device).clone().float()`
//    (l.346-347 @v0.9.0), `.detach().clone().to(device=self.device, dtype=master dtype)` from v0.18.3 (l.489-490
//    @v0.19.5): an lp clone of the partition, 2 B per element, in every release;
//  - bf16_optimizer.py _setup_for_real_optimizer: `bf16_dp_partitions[partition_id].clone().float()` (l.117
//    @v0.9.0, l.170 @v0.19.5): a bf16 clone;
//  - stage3.py _create_fp32_partitions, per sub-group: `fp16_partitioned_groups_flat[i].to(self.device).clone()
//    .float()` (l.725-726 @v0.9.0): an lp clone; from v0.18.3 (PR #7700, l.988-990 @v0.18.3) `.to(self.device,
//    dtype=master dtype)` then `.clone()`: an fp32 cast, 4 B per element;
//  - stage_1_and_2.py with offload_optimizer (self.device = 'cpu', l.223 @v0.18.5): `.to(self.device).clone()
//    .float()` moves the lp slice to the host first until v0.18.2 (l.438-439 @v0.18.2), no GPU transient; from
//    v0.18.3 (PR #7700) `.detach().clone().to(device=self.device, dtype=master dtype)` clones it on the GPU first
//    (l.449-450 @v0.18.3, l.448-449 @v0.18.5): an lp clone of the partition, 2 B per element, on the GPU.
// TinyModel: Ψ = 4 x (1,000,000 + 1,000) = 4,004,000 elements; at N = 4 the stage 1/2 partition (padded to 2N: no
// padding) and the stage 3 partition (Σ ceil(numel/4)) are both p = 1,001,000 elements.
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CopyDir;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr double kP = 1'001'000; // partition at N = 4

WalkResult run(scenario::ZeroConfig z, const std::array<int, 3>& version, const workload::Workload& wl) {
  z.deepspeed_version = version;
  return walk(generate(wl, z, 4, 1, 2.2e-10));
}

const Sample& at(const WalkResult& r, const std::string& label, bool is_free = false) {
  const Sample* s = r.find(-1, label, is_free);
  REQUIRE(s != nullptr);
  return *s;
}
} // namespace

TEST_CASE("Fp32MasterInit: stage 1/2 clone the lp partition before the fp32 cast, in every release",
          "[zero][validation]") {
  for (int stage : {1, 2})
    for (const auto& v : {std::array<int, 3>{0, 9, 0}, std::array<int, 3>{0, 19, 5}}) {
      INFO("stage " << stage << ", v" << v[0] << "." << v[1] << "." << v[2]);
      const auto r = run(zero_config(stage), v, make_workload());
      // `.clone()`: 2 B x p = 2,002,000 B live while `.float()` makes the master, 4 B x p = 4,004,000 B.
      const Sample& master = at(r, "fp32 master partition");
      CHECK(master.tag(MemTag::FLATTEN_TEMP) == Approx(2 * kP).epsilon(kTol));
      CHECK(master.tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol));
      // The clone is dropped with the statement; the master stays.
      const Sample& dropped = at(r, "fp32 master partition (lp clone)", true);
      CHECK(dropped.tag(MemTag::FLATTEN_TEMP) == 0);
      CHECK(last_of(r, -1)->tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol));
    }
}

TEST_CASE("Fp32MasterInit: fp32 training has no transient (the clone is the master)", "[zero][validation]") {
  // training.precision fp32: `.float()` of an fp32 clone returns it: one 4 B x p = 4,004,000 B tensor, nothing else.
  workload::Workload wl = make_workload();
  wl.training.precision = scenario::Precision::FP32;
  wl.bytes_per_lp = 4.0;
  const auto r = run(zero_config(2), {0, 9, 0}, wl);
  CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FLATTEN_TEMP); }, -1) == 0);
  CHECK(at(r, "fp32 master partition").tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol));
}

TEST_CASE("Fp32MasterInit: BF16_Optimizer clones the bf16 partition before the fp32 cast", "[zero][validation]") {
  auto z = zero_config(1);
  z.grad_accum_dtype = scenario::GradAccumDtype::FP32; // BF16_Optimizer (bf16_optimizer_test)
  const auto r = run(z, {0, 9, 0}, make_workload());
  const Sample& master = at(r, "fp32 master partition");
  CHECK(master.tag(MemTag::FLATTEN_TEMP) == Approx(2 * kP).epsilon(kTol)); // 2,002,000 B
  CHECK(master.tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol)); // 4,004,000 B
  CHECK(at(r, "fp32 master partition (lp clone)", true).tag(MemTag::FLATTEN_TEMP) == 0);
}

TEST_CASE(
    "Fp32MasterInit: stage 3 makes each sub-group's master with an lp clone until v0.18.2, an fp32 cast from "
    "v0.18.3 (PR #7700)",
    "[zero][validation]") {
  // sub_group_size 500,500 at N = 4: partitions w 250,000, b 250 in registration order; the greedy packing closes a
  // group once it reaches 500,500: w0 b0 w1 b1 = 500,500 | w2 b2 w3 b3 = 500,500.
  auto z = zero_config(3);
  z.sub_group_size = 500'500;
  constexpr double kSg = 500'500;
  for (const bool cast_first : {false, true}) {
    INFO((cast_first ? "v0.18.3" : "v0.9.0"));
    const auto r = run(z, cast_first ? std::array<int, 3>{0, 18, 3} : std::array<int, 3>{0, 9, 0}, make_workload());
    // Transient: 2 B x 500,500 = 1,001,000 B (clone) or 4 B x 500,500 = 2,002,000 B (cast), per sub-group.
    const double tmp = (cast_first ? 4 : 2) * kSg;
    const std::string suffix = cast_first ? " (fp32 cast)" : " (lp clone)";
    const Sample& m0 = at(r, "fp32 master partition sub-group 0");
    CHECK(m0.tag(MemTag::FLATTEN_TEMP) == Approx(tmp).epsilon(kTol));
    CHECK(m0.tag(MemTag::FP32_MASTER) == Approx(4 * kSg).epsilon(kTol)); // 2,002,000 B
    CHECK(at(r, "fp32 master partition sub-group 0" + suffix, true).tag(MemTag::FLATTEN_TEMP) == 0);
    const Sample& m1 = at(r, "fp32 master partition sub-group 1");
    CHECK(m1.tag(MemTag::FLATTEN_TEMP) == Approx(tmp).epsilon(kTol));
    CHECK(m1.tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol)); // both sub-groups: 4,004,000 B
  }
}

TEST_CASE(
    "Fp32MasterInit: stage 1/2 with optimizer offload clone the lp partition on the GPU from v0.18.3 (PR #7700), "
    "on the host before",
    "[zero][validation]") {
  // stage_1_and_2.py __init__ with cpu_offload: l.438-439 @v0.18.2 `.to('cpu').clone().float()`; l.449-450 @v0.18.3
  // and l.448-449 @v0.18.5 `.detach().clone().to(device='cpu', dtype=fp32)`. Either way one blocking D2H of the lp
  // slice: 2 B x p = 2,002,000 B (torch converts the dtype of a blocking D2H copy on the CPU).
  for (int stage : {1, 2})
    for (const auto& v : {std::array<int, 3>{0, 18, 2}, std::array<int, 3>{0, 18, 3}, std::array<int, 3>{0, 18, 5}}) {
      INFO("stage " << stage << ", v" << v[0] << "." << v[1] << "." << v[2]);
      auto z = zero_config(stage);
      z.offload_optimizer = scenario::OffloadDevice::CPU;
      const auto r = run(z, v, make_workload());
      const bool gpu_clone = v >= std::array<int, 3>{0, 18, 3};
      const Sample* clone = r.find(-1, "fp32 master partition (lp clone)", false);
      REQUIRE((clone != nullptr) == gpu_clone);
      if (gpu_clone) {
        // Live on the GPU beside the flat lp params (2 B x Ψ = 8,008,000 B): the clone, 2 B x p = 2,002,000 B.
        CHECK(clone->tag(MemTag::FLATTEN_TEMP) == Approx(2 * kP).epsilon(kTol));
        CHECK(clone->tag(MemTag::LP_PARAMS) == Approx(2 * 4 * kP).epsilon(kTol));
        CHECK(at(r, "fp32 master partition (lp clone)", true).tag(MemTag::FLATTEN_TEMP) == 0);
      }
      // No fp32 master on the GPU in any release: it is the host's (4 B x p = 4,004,000 B).
      CHECK(r.peak([](const Sample& s) { return s.tag(MemTag::FP32_MASTER); }, -1) == 0);
      CHECK(at(r, "fp32 master partition").host_tag(MemTag::FP32_MASTER) == Approx(4 * kP).epsilon(kTol));
      CHECK(r.copies.at(-1).at(CopyDir::D2H) == Approx(2 * kP).epsilon(kTol));
    }
}
