#include "sim/zero/offload_cpu.hpp"
#include "tests/zero/program_walker.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;
using program::CopyDir;
using program::MemTag;

namespace {
constexpr double kTol = 1e-9;
constexpr double kAdamSecondsPerParam = 2.2e-10; // ZeRO-Offload Table 4: 1B params in 0.22 s (zero_semantics §4.1)

scenario::ZeroConfig offload(int stage) {
  auto z = zero_config(stage);
  z.offload_optimizer = scenario::OffloadDevice::CPU;
  return z;
}
} // namespace

TEST_CASE(
    "OffloadCpu: stage 1/2 programs are valid and leave only the lp params and the offload grad buffer on "
    "the GPU",
    "[zero][unit]") {
  for (int stage : {1, 2})
    for (int n : {1, 4})
      for (int ga : {1, 2})
        for (bool overlap : {false, true}) {
          INFO("stage " << stage << " N " << n << " GA " << ga << " overlap " << overlap);
          TinyModel m;
          m.grad_accum = ga;
          auto z = offload(stage);
          z.overlap_comm = overlap;
          z.reduce_bucket_size = 1'500'000;
          const auto p = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
          REQUIRE(program::validate(p).empty());
          const auto r = walk(p);
          REQUIRE_FALSE(r.deadlock);
          // GPU after the last step: lp params 2Ψ + temp_grad_buffer_for_gpu_offload (largest param, lp).
          const auto& end = r.timeline.back();
          REQUIRE(end.total == Approx(2 * psi(m) + 2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
          REQUIRE(end.tag(MemTag::FP32_MASTER) == 0);
          REQUIRE(end.tag(MemTag::OPTIMIZER_STATES) == 0);
          if (n == 1)
            REQUIRE(r.stats(1, CollectiveKind::ALL_GATHER).calls == 0);
        }
}

TEST_CASE(
    "OffloadCpu: stage 2 moves 4Ψ/N B of fp32 grads D2H and 2Ψ/N B of lp params H2D per step at GA = 1 "
    "(zero_semantics.md §3.4 and §7 item 24)",
    "[zero][validation]") {
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
    for (int step : {0, 1}) {
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(4 * psi(m) / n).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(2 * psi(m) / n).epsilon(kTol));
      // CPU Adam on this rank's partition only.
      REQUIRE(r.cpu_seconds.at(step) == Approx(kAdamSecondsPerParam * psi(m) / n).epsilon(kTol));
    }
  }
}

TEST_CASE(
    "OffloadCpu: stage 2 with GA = 2 adds lp grads D2H before the boundary and H2D from the 2nd micro-step "
    "(§3.4 ZeRO-Offload path)",
    "[zero][validation]") {
  // Hand calculation per step, P = Ψ/N: micro 0 (not boundary) D2H lp 2P; micro 1 (boundary) H2D lp 2P + D2H
  // fp32 4P; step H2D lp params 2P. D2H = 6P, H2D = 4P.
  TinyModel m;
  m.grad_accum = 2;
  const int n = 4;
  const double p = psi(m) / n;
  const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
  REQUIRE(r.copied(1, CopyDir::D2H) == Approx(6 * p).epsilon(kTol));
  REQUIRE(r.copied(1, CopyDir::H2D) == Approx(4 * p).epsilon(kTol));
  // Stage 1 accumulates on the GPU instead: only the boundary's fp32 D2H and the params' H2D.
  const auto r1 = walk(generate(make_workload(m), offload(1), n, 2, kAdamSecondsPerParam));
  REQUIRE(r1.copied(1, CopyDir::D2H) == Approx(4 * p).epsilon(kTol));
  REQUIRE(r1.copied(1, CopyDir::H2D) == Approx(2 * p).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: host holds the fp32 master and grads from init and Adam state from the first step "
    "(§3.4 and §7 item 17)",
    "[zero][validation]") {
  const TinyModel m;
  const int n = 4;
  const double p = psi(m) / n;
  const auto r = walk(generate(make_workload(m), offload(2), n, 2, kAdamSecondsPerParam));
  const auto* init = last_of(r, -1);
  REQUIRE(init->host_tag(MemTag::FP32_MASTER) == Approx(4 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::FP32_GRADS) == Approx(4 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::LP_PARAMS) == Approx(2 * p).epsilon(kTol));
  REQUIRE(init->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  REQUIRE(last_of(r, 0)->host_tag(MemTag::OPTIMIZER_STATES) == Approx(8 * p).epsilon(kTol));
  // GPU model states: lp params (2Ψ) plus, in backward, one param's lp grad until it is copied into the bucket
  // (largest param 1e6 x 2 B); no fp32 state and no grads_in_partition on the GPU.
  const double states = r.peak([](const Sample& s) { return s.model_states(); }, 1);
  REQUIRE(states == Approx(2 * psi(m) + 2.0 * static_cast<double>(m.weight_numel)).epsilon(kTol));
}

TEST_CASE(
    "OffloadCpu: stage 3 moves 2 B D2H + 2 B H2D + 4 B D2H per partition element of grads and 2 B H2D of "
    "params per step at GA = 1 (zero_semantics.md §3.5 Offload in stage 3)",
    "[zero][validation]") {
  // Hand calculation, P = Ψ/N (no padding): grads D2H 2P + 4P = 6P, H2D 2P; params H2D 2P -> H2D 4P.
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const double p = psi(m) / n;
    const auto r = walk(generate(make_workload(m), offload(3), n, 2, kAdamSecondsPerParam));
    REQUIRE_FALSE(r.deadlock);
    for (int step : {0, 1}) {
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(4 * p).epsilon(kTol));
      REQUIRE(r.cpu_seconds.at(step) == Approx(kAdamSecondsPerParam * p).epsilon(kTol));
    }
    // GPU keeps only the lp partitions, persistent params and the IPG bucket; the host has grads, master and
    // (after step 0) Adam state: 2P + 4P + 4P + 8P.
    const auto& end = r.timeline.back();
    REQUIRE(end.tag(MemTag::FP32_MASTER) == 0);
    REQUIRE(end.tag(MemTag::GRAD_PARTITION) == 0);
    REQUIRE(end.tag(MemTag::OPTIMIZER_STATES) == 0);
    const double host = end.host_tag(MemTag::GRAD_PARTITION) + end.host_tag(MemTag::FP32_MASTER) +
                        end.host_tag(MemTag::FP32_GRADS) + end.host_tag(MemTag::OPTIMIZER_STATES);
    REQUIRE(host == Approx(18 * p).epsilon(kTol));
  }
}

TEST_CASE("OffloadCpu: stage 3 offload programs are valid for GA and overlap variants", "[zero][unit]") {
  for (int n : {1, 4})
    for (int ga : {1, 2})
      for (bool overlap : {false, true}) {
        INFO("N " << n << " GA " << ga << " overlap " << overlap);
        TinyModel m;
        m.grad_accum = ga;
        auto z = offload(3);
        z.overlap_comm = overlap;
        z.reduce_bucket_size = 1'500'000;
        const auto p = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
        REQUIRE(program::validate(p).empty());
        const auto r = walk(p);
        REQUIRE_FALSE(r.deadlock);
        REQUIRE(r.timeline.back().tag(MemTag::FLATTEN_TEMP) == 0);
        REQUIRE(r.timeline.back().tag(MemTag::GATHER_BUFFER) == 0);
      }
}

TEST_CASE(
    "OffloadCpu: stage 3 offload_param copies each fetched partition H2D before its all-gather "
    "(zero_semantics.md §3.5 offload_param)",
    "[zero][validation]") {
  // Hand calculation, N = 4, P = Ψ/N, max_reuse_distance 0 and no persistent params so every layer is fetched in
  // forward and again in backward: H2D = params 2P (fwd) + 2P (bwd) + grads 2P = 6P, no lp H2D at the step
  // (CPU Adam updates the host lp partition); D2H = grads 2P + 4P = 6P; all-gather payload 2 x 2Ψ.
  // At N = 1 there is no all-gather: the fetch is an H2D copy of the whole layer (2Ψ fwd + 2Ψ bwd).
  const TinyModel m;
  for (int n : {1, 4}) {
    INFO("N_d = " << n);
    const double p = psi(m) / n;
    auto z = offload(3);
    z.offload_param = scenario::OffloadDevice::CPU;
    z.stage3_param_persistence_threshold = 0;
    z.stage3_max_reuse_distance = 0;
    const auto prog = generate(make_workload(m), z, n, 2, kAdamSecondsPerParam);
    REQUIRE(program::validate(prog).empty());
    const auto r = walk(prog);
    REQUIRE_FALSE(r.deadlock);
    for (int step : {0, 1}) {
      INFO("step " << step);
      REQUIRE(r.copied(step, CopyDir::H2D) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.copied(step, CopyDir::D2H) == Approx(6 * p).epsilon(kTol));
      REQUIRE(r.stats(step, CollectiveKind::ALL_GATHER).payload == Approx(n > 1 ? 4 * psi(m) : 0).epsilon(kTol));
    }
    // No lp params on the GPU between steps; the host holds the lp partition 2Ψ/N.
    REQUIRE(r.timeline.back().tag(MemTag::LP_PARAMS) == 0);
    REQUIRE(r.timeline.back().tag(MemTag::GATHER_BUFFER) == 0);
    REQUIRE(r.timeline.back().host_tag(MemTag::LP_PARAMS) == Approx(2 * p).epsilon(kTol));
    // At N = 1 fetched layers still occupy GPU memory while in use.
    REQUIRE(r.peak([](const Sample& s) { return s.tag(MemTag::GATHER_BUFFER); }, 1) > 0);
  }
}

TEST_CASE("OffloadCpu: stage 3 offload_param programs are valid with persistent params and prefetch", "[zero][unit]") {
  for (int n : {1, 4})
    for (int ga : {1, 2})
      for (bool overlap : {false, true}) {
        INFO("N " << n << " GA " << ga << " overlap " << overlap);
        TinyModel m;
        m.grad_accum = ga;
        auto z = offload(3);
        z.offload_param = scenario::OffloadDevice::CPU;
        z.overlap_comm = overlap;
        const auto p = generate(make_workload(m), z, n, 3, kAdamSecondsPerParam);
        REQUIRE(program::validate(p).empty());
        const auto r = walk(p);
        REQUIRE_FALSE(r.deadlock);
        // Only the persistent params (4 biases, full) and the IPG bucket stay on the GPU.
        REQUIRE(r.timeline.back().total == Approx(2.0 * 4 * static_cast<double>(m.bias_numel) + 1e9).epsilon(kTol));
      }
}
