// CPU-Adam model (sim/zero/cpu_adam.hpp) against ZeRO-Offload's Table 4 (Ren et al. 2021, arXiv 2101.06840;
// reference/calibration.md §4, zero_semantics.md §7 item 25).
#include "sim/zero/cpu_adam.hpp"
#include "sim/error.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

using namespace zerosim;

namespace {

constexpr double kTol = 1e-3;

/// The DGX-2 host of topologies/cpus/dgx2-xeon-8168.yaml, written out by hand: 2 x Xeon Platinum 8168,
/// 48 cores x 2.7 GHz x 16 lanes x 2 FMA x 2 = 8.2944 TFLOPS; 2 x 6 channels x 2666 MT/s x 8 B = 255.968 GB/s.
scenario::CpuSpec dgx2_host() {
  scenario::CpuSpec c;
  c.name = "dgx2-xeon-8168";
  c.cores = 48;
  c.peak_fp32 = FlopRate(48 * 2.7e9 * 16 * 2 * 2);
  c.memory_bandwidth = ByteRate(2 * 6 * 2666e6 * 8);
  return c;
}

} // namespace

TEST_CASE(
    "cpu_adam_step_time: DGX-2 host, 1B params = 0.22 s (ZeRO-Offload Table 4, the calibration point) "
    "(zero_semantics §7.25)",
    "[zero][validation]") {
  CHECK(zero::cpu_adam_step_time(1e9, dgx2_host()).value() == Approx(0.22).epsilon(kTol));
}

TEST_CASE(
    "cpu_adam_step_time: 4B and 10B params within 16% of ZeRO-Offload Table 4 with the same constant "
    "(zero_semantics §7.25)",
    "[zero][validation]") {
  // Paper: 4B -> 1.03 s, 10B -> 2.57 s. The model is linear: 4 x 0.22 = 0.88 s (-14.6%), 10 x 0.22 = 2.2 s
  // (-14.4%); the paper's time per parameter is 0.2575 ns at 4B and 0.257 ns at 10B vs 0.22 ns at 1B.
  constexpr double kPaperGap = 0.16;
  const auto cpu = dgx2_host();
  const double t4 = zero::cpu_adam_step_time(4e9, cpu).value();
  const double t10 = zero::cpu_adam_step_time(10e9, cpu).value();
  CHECK(t4 == Approx(0.88).epsilon(kTol));
  CHECK(t10 == Approx(2.2).epsilon(kTol));
  CHECK(std::abs(t4 - 1.03) / 1.03 < kPaperGap);
  CHECK(std::abs(t10 - 2.57) / 2.57 < kPaperGap);
}

TEST_CASE("cpu_adam_step_time: memory-bound on the DGX-2 host (compute term < 1/10 of the memory term)",
          "[zero][unit]") {
  // compute: 64 FLOP / 8.2944e12 FLOP/s = 7.7e-12 s; memory: 30 B / 255.968e9 B/s = 1.17e-10 s per param.
  const auto cpu = dgx2_host();
  const double compute = zero::kCpuAdamFlopsPerParam / cpu.peak_fp32.value();
  const double memory = zero::kCpuAdamBytesPerParam / cpu.memory_bandwidth.value();
  CHECK(compute * 10 < memory);
  CHECK(zero::cpu_adam_step_time(1.0, cpu).value() == Approx(memory / zero::kCpuAdamEfficiency).epsilon(kTol));
}

TEST_CASE("cpu_adam_step_time: a desktop 2-channel DDR5-5200 host is 3.08x slower than the DGX-2 host",
          "[zero][unit]") {
  // Both memory-bound: 255.968 / 83.2 GB/s = 3.0765.
  scenario::CpuSpec desk;
  desk.peak_fp32 = FlopRate(16 * 4.5e9 * 8 * 2 * 2);
  desk.memory_bandwidth = ByteRate(2 * 5200e6 * 8);
  CHECK(zero::cpu_adam_step_time(1e9, desk).value() / zero::cpu_adam_step_time(1e9, dgx2_host()).value() ==
        Approx(255.968 / 83.2).epsilon(kTol));
}

TEST_CASE(
    "derived_peak_fp32: the DGX-2 host's components give 8.2944 TFLOPS, and halving cores halves the compute term",
    "[zero][unit]") {
  // 48 cores x 2.7e9 Hz x 16 fp32 lanes (AVX-512) x 2 FMA units x 2 FLOP = 8.2944e12 FLOP/s (Intel ARK, Xeon
  // Platinum 8168, two sockets). Compute term of 1B params: 1e9 x 64 / 8.2944e12 = 7.716e-3 s; with 24 cores
  // (4.1472e12 FLOP/s) 15.432e-3 s. The memory term, 1e9 x 30 / 255.968e9 = 0.11720 s, is larger either way, so the
  // 1B step stays 0.11720 / 0.5327 = 0.2200 s: on this host cores matter below 64 / 30 x 255.968e9 / (2.7e9 x 64) =
  // 3.16 cores only.
  scenario::CpuSpec c = dgx2_host();
  c.base_clock = Frequency(2.7e9);
  c.fp32_simd_lanes = 16;
  c.fma_units = 2;
  CHECK(scenario::derived_peak_fp32(c).value() == Approx(8.2944e12).epsilon(1e-12));
  const double compute48 = 1e9 * zero::kCpuAdamFlopsPerParam / scenario::derived_peak_fp32(c).value();
  c.cores = 24;
  CHECK(scenario::derived_peak_fp32(c).value() == Approx(4.1472e12).epsilon(1e-12));
  const double compute24 = 1e9 * zero::kCpuAdamFlopsPerParam / scenario::derived_peak_fp32(c).value();
  CHECK(compute48 == Approx(7.716e-3).epsilon(kTol));
  CHECK(compute24 == Approx(15.432e-3).epsilon(kTol));
  CHECK(compute24 == Approx(2 * compute48).epsilon(1e-12));
  // A missing component: no derived peak.
  c.fma_units = 0;
  CHECK(scenario::derived_peak_fp32(c).value() == 0);
}

TEST_CASE(
    "cpu_adam_step_time: cluster.cpu.cores reaches the step through the derived peak: the DGX-2 host with 2 and 1 "
    "cores is compute-bound and doubles, with 24 it stays memory-bound at 0.22 s",
    "[zero][unit]") {
  // topologies/cpus/dgx2-xeon-8168.yaml gives cores 48, base_clock 2.7GHz, fp32_simd_lanes 16, fma_units 2.
  // 2 cores: 2 x 2.7e9 x 16 x 2 x 2 = 345.6e9 FLOP/s; compute 1e9 x 64 / 345.6e9 = 0.18519 s > memory 0.11720 s:
  // t = 0.18519 / 0.5327 = 0.34764 s. 1 core: 0.37037 / 0.5327 = 0.69527 s. 24 cores: memory-bound, 0.2200 s.
  const std::string sc = scenario::data_dir() + "/scenarios/examples/single-gpu-zero-stages.yaml";
  const auto cpu_with = [&](const std::string& cores) {
    // One NUMA node: the preset's two need two cores (numa_nodes does not enter cpu_adam_step_time).
    const std::vector<std::string> set = {"cluster.topology=dgx2-v100", "training.precision=fp16",
                                          "training.flash_attention=false", "cluster.cpu.numa_nodes=1",
                                          "cluster.cpu.cores=" + cores};
    return scenario::load_scenario(sc, set).front().scenario.cluster.cpu;
  };
  const auto c2 = cpu_with("2");
  const auto c1 = cpu_with("1");
  const auto c24 = cpu_with("24");
  CHECK(c2.peak_fp32.value() == Approx(345.6e9).epsilon(1e-12));
  CHECK(c1.peak_fp32.value() == Approx(172.8e9).epsilon(1e-12));
  CHECK(c24.peak_fp32.value() == Approx(4.1472e12).epsilon(1e-12));
  CHECK(zero::cpu_adam_step_time(1e9, c2).value() == Approx(0.34764).epsilon(kTol));
  CHECK(zero::cpu_adam_step_time(1e9, c1).value() == Approx(0.69527).epsilon(kTol));
  CHECK(zero::cpu_adam_step_time(1e9, c1).value() == Approx(2 * zero::cpu_adam_step_time(1e9, c2).value()));
  CHECK(zero::cpu_adam_step_time(1e9, c24).value() == Approx(0.22).epsilon(kTol));
}

TEST_CASE("cpu_adam_step_time: memory-bound, cores do not matter: a desktop 16-core host with 8 or 16 cores",
          "[zero][unit]") {
  // ryzen9-7950x: 16 x 4.5e9 x 8 x 2 x 2 = 2.304e12 FLOP/s; 8 cores 1.152e12. Compute per 1B: 0.02778 s and
  // 0.05556 s; memory 1e9 x 30 / 83.2e9 = 0.36058 s, larger in both: t = 0.36058 / 0.5327 = 0.67689 s in both.
  const std::string sc = scenario::data_dir() + "/scenarios/examples/single-gpu-zero-stages.yaml";
  const auto cpu_with = [&](const std::string& cores) {
    return scenario::load_scenario(sc, {"cluster.cpu=ryzen9-7950x", "cluster.cpu.cores=" + cores})
        .front()
        .scenario.cluster.cpu;
  };
  const auto c16 = cpu_with("16");
  const auto c8 = cpu_with("8");
  CHECK(c16.peak_fp32.value() == Approx(2.304e12).epsilon(1e-12));
  CHECK(c8.peak_fp32.value() == Approx(1.152e12).epsilon(1e-12));
  CHECK(zero::cpu_adam_step_time(1e9, c16).value() == Approx(0.67689).epsilon(kTol));
  CHECK(zero::cpu_adam_step_time(1e9, c8).value() == Approx(0.67689).epsilon(kTol));
}

TEST_CASE("cpu_adam_seconds_per_param: the node's ranks share the CPU", "[zero][unit]") {
  // 16 ranks of a DGX-2 each update their partition at the same time: 16 x 0.22e-9 s per parameter of the partition.
  CHECK(zero::cpu_adam_seconds_per_param(dgx2_host(), 16) == Approx(16 * 0.22e-9).epsilon(kTol));
}

TEST_CASE("pinned_byte_weight: N x ceil(R/N) / R, the busiest NUMA node's share of a pinned byte", "[zero][unit]") {
  // Hand values. DGX A100 (8 NUMA nodes, NPS4): 2 ranks put their pinned buffers on 2 of the 8 nodes, so a pinned
  // byte takes 8 x 1 / 2 = 4 times a byte spread over all nodes; 4 ranks: 8 / 4 = 2; 8 and 16 ranks use every
  // node evenly: 1. DGX-2 (2 nodes): 1 rank 2; 3 ranks 2 x 2 / 3 (two share the busiest node). One node: always 1.
  CHECK(zero::pinned_byte_weight(8, 2) == Approx(4.0));
  CHECK(zero::pinned_byte_weight(8, 4) == Approx(2.0));
  CHECK(zero::pinned_byte_weight(8, 8) == Approx(1.0));
  CHECK(zero::pinned_byte_weight(8, 16) == Approx(1.0));
  CHECK(zero::pinned_byte_weight(2, 1) == Approx(2.0));
  CHECK(zero::pinned_byte_weight(2, 3) == Approx(4.0 / 3.0));
  CHECK(zero::pinned_byte_weight(1, 1) == Approx(1.0));
  CHECK(zero::pinned_byte_weight(1, 5) == Approx(1.0));
  REQUIRE_THROWS_WITH(zero::pinned_byte_weight(0, 2), Catch::Contains("numa_nodes"));
  REQUIRE_THROWS_WITH(zero::pinned_byte_weight(8, 0), Catch::Contains("ranks_per_node"));
}

TEST_CASE("cpu_adam_step_time: no CPU given is an error naming cluster.cpu", "[zero][unit]") {
  REQUIRE_THROWS_WITH(zero::cpu_adam_step_time(1e9, scenario::CpuSpec{}), Catch::Contains("cluster.cpu"));
  REQUIRE_THROWS_WITH(zero::cpu_adam_seconds_per_param(dgx2_host(), 0), Catch::Contains("ranks_per_node"));
}

TEST_CASE("cpu_adam_step_time: the dgx2-v100 preset's CPU reproduces the 1B-params 0.22 s of Table 4",
          "[zero][validation]") {
  // topologies/clusters/dgx2-v100.yaml names cpu: dgx2-xeon-8168 (255.968 GB/s), the calibration host. The example
  // trains in bf16 with FlashAttention, which a V100 cannot run: fp16 and eager attention here.
  const auto v = scenario::load_scenario(scenario::data_dir() + "/scenarios/examples/single-gpu-zero-stages.yaml",
                                         {"cluster.topology=dgx2-v100", "training.precision=fp16",
                                          "training.flash_attention=false"});
  REQUIRE(!v.empty());
  const auto& cpu = v.front().scenario.cluster.cpu;
  CHECK(cpu.name == "dgx2-xeon-8168");
  CHECK(cpu.cores == 48);
  CHECK(cpu.memory_bandwidth.value() == Approx(255.968e9).epsilon(kTol));
  CHECK(cpu.numa_nodes == 2); // one per socket
  CHECK(zero::cpu_adam_step_time(1e9, cpu).value() == Approx(0.22).epsilon(kTol));
}

TEST_CASE("cpu_adam_step_time: every cluster preset names a CPU, memory-bound and slower than 0.05 s per 1B params",
          "[zero][unit]") {
  // Sanity bound from the fastest catalog host, DGX H100: 30 GB / 614.4 GB/s / 0.5327 = 0.0917 s per 1B params.
  for (const char* topo :
       {"one-rtx4090", "4x-rtx4090-pcie", "2x-rtx3090-nvlink", "dgx2-v100", "dgx-a100", "dgx-h100", "hgx-h200"}) {
    INFO(topo);
    // fp16 and eager attention: the example's bf16 and FlashAttention do not run on dgx2-v100's V100s.
    const auto v = scenario::load_scenario(scenario::data_dir() + "/scenarios/examples/single-gpu-zero-stages.yaml",
                                           {std::string("cluster.topology=") + topo, "training.precision=fp16",
                                            "training.flash_attention=false"});
    const auto& cpu = v.front().scenario.cluster.cpu;
    CHECK(!cpu.name.empty());
    CHECK(zero::kCpuAdamFlopsPerParam / cpu.peak_fp32.value() * 5 <
          zero::kCpuAdamBytesPerParam / cpu.memory_bandwidth.value());
    CHECK(zero::cpu_adam_step_time(1e9, cpu).value() > 0.05);
  }
}

TEST_CASE("cpu_adam_step_time: a scenario can name another CPU preset and an unknown one is an input error",
          "[zero][unit]") {
  const std::string sc = scenario::data_dir() + "/scenarios/examples/single-gpu-zero-stages.yaml";
  const auto v = scenario::load_scenario(sc, {"cluster.cpu=dgx-a100-epyc-7742"});
  // 2 sockets x 8 channels x 3200 MT/s x 8 B = 409.6 GB/s.
  CHECK(v.front().scenario.cluster.cpu.memory_bandwidth.value() == Approx(409.6e9).epsilon(kTol));
  REQUIRE_THROWS_WITH(scenario::load_scenario(sc, {"cluster.cpu=no-such-cpu"}), Catch::Contains("cluster.cpu"));
}

TEST_CASE(
    "torch_cpu_adam_step_time: PyTorch CPU Adam on the DGX-2 host, 1B params = 1.39 s (Table 4, the derivation of "
    "page_fault_bandwidth's default), 4B and 10B within 7 % of Table 4",
    "[zero][validation]") {
  // Per parameter at CPU Adam's per-byte rate 0.22 ns / 30 B: single-tensor passes 88 B -> 0.6453 ns, plus 8 B of
  // fresh temporaries at 10.74 GB/s -> 0.7449 ns: 1.390 ns. 4B: 5.561 s vs Table 4 5.71 s (-2.6 %); 10B: 13.90 s vs
  // 14.76 s (-5.8 %): the same growth of the paper's time per parameter with size as CPU Adam's (previous tests).
  const auto cpu = dgx2_host();
  const auto single = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  CHECK(zero::torch_cpu_adam_step_time(1e9, cpu, single).value() == Approx(1.39).epsilon(kTol));
  const double t4 = zero::torch_cpu_adam_step_time(4e9, cpu, single).value();
  const double t10 = zero::torch_cpu_adam_step_time(10e9, cpu, single).value();
  CHECK(t4 == Approx(4 * (88 * 0.22 / 30 + 8 / 10.74)).epsilon(kTol));
  CHECK(std::abs(t4 - 5.71) / 5.71 < 0.07);
  CHECK(std::abs(t10 - 14.76) / 14.76 < 0.07);
  // Foreach: 80 B of passes and one 4 B temporary: 0.5867 + 0.3724 = 0.959 ns per parameter.
  CHECK(zero::torch_cpu_adam_step_time(1e9, cpu, scenario::OptimizerImpl::TORCH_FOREACH).value() ==
        Approx(80 * 0.22 / 30 + 4 / 10.74).epsilon(kTol));
  // The ratio to DeepSpeed's CPU Adam is the tutorial's "5-7x" (docs/_tutorials/zero-offload.md).
  CHECK(zero::torch_cpu_adam_step_time(1e9, cpu, single).value() / zero::cpu_adam_step_time(1e9, cpu).value() ==
        Approx(6.32).epsilon(0.01));
  REQUIRE_THROWS_WITH(zero::torch_cpu_adam_step_time(1e9, cpu, scenario::OptimizerImpl::FUSED),
                      Catch::Contains("FusedAdam"));
}

namespace {

/// The DGX A100 host of topologies/cpus/dgx-a100-epyc-7742.yaml, written out by hand: 2 x EPYC 7742, 128 cores x
/// 2.25 GHz x 8 lanes x 2 FMA x 2 = 9.216 TFLOPS; 2 x 8 channels x 3200 MT/s x 8 B = 409.6 GB/s; one Zen 2 core
/// reads 19.9 GB/s alone (kvcache-ai/ktransformers#2175).
scenario::CpuSpec dgx_a100_host() {
  scenario::CpuSpec c;
  c.name = "dgx-a100-epyc-7742";
  c.cores = 128;
  c.peak_fp32 = FlopRate(128 * 2.25e9 * 8 * 2 * 2);
  c.memory_bandwidth = ByteRate(409.6e9);
  c.core_memory_bandwidth = ByteRate(19.9e9);
  return c;
}

} // namespace

TEST_CASE(
    "cpu_adam_seconds_per_param: DeepSpeed's launcher (OpenMP's default threads) and --bind_cores_to_rank "
    "give each of 8 ranks 1/8 of the node",
    "[zero][unit]") {
  // Hand value: 8 ranks x 30 B / 409.6e9 B/s / 0.5327 = 1.0999e-9 s per parameter (the memory term; compute
  // 8 x 64 / 9.216e12 = 5.6e-11 s is 20x smaller). 0 threads (unset) and 16 threads (128 cores / 8, numa.py l.119)
  // both run on 16 cores per rank, whose 16 x 19.9 GB/s exceeds the rank's 51.2 GB/s.
  const double expected = 8 * 30 / 409.6e9 / 0.5327;
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 0) == Approx(expected).epsilon(kTol));
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 16) == Approx(expected).epsilon(kTol));
  // More threads than cores (unbound, 128 threads per rank on 128 cores): still 16 cores' worth each.
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 128) == Approx(expected).epsilon(kTol));
  // And the same as before threads existed: ranks x the whole node's time per parameter.
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 0) ==
        Approx(8 * zero::cpu_adam_step_time(1.0, dgx_a100_host()).value()).epsilon(1e-12));
}

TEST_CASE("cpu_adam_seconds_per_param: one thread per rank (torchrun) is bound by one core's DRAM bandwidth",
          "[zero][unit]") {
  // Hand values on the DGX A100 host, 8 ranks. 1 thread: memory 30 B / min(51.2, 1 x 19.9) GB/s = 1.5075e-9 s,
  // compute 64 / (9.216e12 / 128) = 8.889e-10 s: memory-bound, / 0.5327 = 2.8300e-9 s per parameter, 2.573x the
  // 16-core share's 1.0999e-9 s. 2 threads: 30 / 39.8e9 / 0.5327 = 1.4150e-9 s. 4 threads: 4 x 19.9 = 79.6 GB/s
  // exceeds the rank's 51.2 GB/s: the share again, 1.0999e-9 s.
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 1) == Approx(2.8300e-9).epsilon(kTol));
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 2) == Approx(1.4150e-9).epsilon(kTol));
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 8, 4) == Approx(1.0999e-9).epsilon(kTol));
  // One rank on one thread: 30 / 19.9e9 / 0.5327 = 2.8300e-9 s too (the node's 409.6 GB/s is not the bound).
  CHECK(zero::cpu_adam_seconds_per_param(dgx_a100_host(), 1, 1) == Approx(2.8300e-9).epsilon(kTol));
}

TEST_CASE(
    "cpu_adam_seconds_per_param: compute-bound when one core's bandwidth is large (the compute term counts "
    "the rank's cores)",
    "[zero][unit]") {
  // A made-up core that streams 1 TB/s: 1 thread computes at 9.216e12 / 128 = 7.2e10 FLOP/s, 64 / 7.2e10 =
  // 8.889e-10 s, above the memory term 30 / 51.2e9 = 5.859e-10 s: 8.889e-10 / 0.5327 = 1.6687e-9 s per parameter.
  scenario::CpuSpec c = dgx_a100_host();
  c.core_memory_bandwidth = ByteRate(1e12);
  CHECK(zero::cpu_adam_seconds_per_param(c, 8, 1) == Approx(1.6687e-9).epsilon(kTol));
}

TEST_CASE("cpu_adam_rate_bound: which term of the rate sets it (node DRAM share, the threads' DRAM, compute)",
          "[zero][unit]") {
  // Hand terms on the DGX A100 host, 8 ranks (the cases above). 16 cores per rank: compute 64 / (9.216e12 / 8) =
  // 5.56e-11 s < memory 30 / min(51.2e9, 16 x 19.9e9 = 318.4e9) = 5.86e-10 s, the DRAM share: node.
  CHECK(zero::cpu_adam_rate_bound(dgx_a100_host(), 8, 0) == zero::CpuAdamBound::NODE_MEMORY);
  CHECK(zero::cpu_adam_rate_bound(dgx_a100_host(), 8, 16) == zero::CpuAdamBound::NODE_MEMORY);
  // 1 thread: compute 8.889e-10 s < memory 30 / 19.9e9 = 1.5075e-9 s, and 19.9 < 51.2 GB/s: the thread's DRAM.
  CHECK(zero::cpu_adam_rate_bound(dgx_a100_host(), 8, 1) == zero::CpuAdamBound::THREAD_MEMORY);
  CHECK(zero::cpu_adam_rate_bound(dgx_a100_host(), 1, 1) == zero::CpuAdamBound::THREAD_MEMORY);
  // 4 threads: 79.6 GB/s exceeds the 51.2 GB/s share, so the share binds again.
  CHECK(zero::cpu_adam_rate_bound(dgx_a100_host(), 8, 4) == zero::CpuAdamBound::NODE_MEMORY);
  // A 1 TB/s core: 64 / 7.2e10 = 8.889e-10 s > 30 / 51.2e9 = 5.859e-10 s: compute.
  scenario::CpuSpec c = dgx_a100_host();
  c.core_memory_bandwidth = ByteRate(1e12);
  CHECK(zero::cpu_adam_rate_bound(c, 8, 1) == zero::CpuAdamBound::COMPUTE);
  // A 1-core-per-rank share on a core that cannot draw it: 128 ranks x 1 core, 409.6 / 128 = 3.2 GB/s per rank
  // against a made-up 2 GB/s core: the threads' DRAM with every core in use.
  c.core_memory_bandwidth = ByteRate(2e9);
  CHECK(zero::cpu_adam_rate_bound(c, 128, 0) == zero::CpuAdamBound::THREAD_MEMORY);
  CHECK(std::string(zero::cpu_adam_bound_key(zero::CpuAdamBound::NODE_MEMORY)) == "node_memory");
  CHECK(std::string(zero::cpu_adam_bound_key(zero::CpuAdamBound::THREAD_MEMORY)) == "thread_memory");
  CHECK(std::string(zero::cpu_adam_bound_key(zero::CpuAdamBound::COMPUTE)) == "compute");
}

TEST_CASE("cpu_adam_seconds_per_param: fewer threads than the rank's cores need cpu.core_memory_bandwidth",
          "[zero][unit]") {
  scenario::CpuSpec c = dgx_a100_host();
  c.core_memory_bandwidth = ByteRate(0);
  REQUIRE_THROWS_WITH(zero::cpu_adam_seconds_per_param(c, 8, 1), Catch::Contains("core_memory_bandwidth"));
  // Every core in use needs no one-core figure.
  CHECK(zero::cpu_adam_seconds_per_param(c, 8, 16) == Approx(8 * 30 / 409.6e9 / 0.5327).epsilon(kTol));
  REQUIRE_THROWS_WITH(zero::cpu_adam_seconds_per_param(c, 8, -1), Catch::Contains("threads_per_rank"));
}

TEST_CASE("cpu_threads_per_rank: what each launcher leaves OMP_NUM_THREADS at", "[zero][unit]") {
  const scenario::CpuSpec cpu = dgx_a100_host();
  scenario::TrainingSpec t;
  // DeepSpeed's launcher sets nothing without --bind_cores_to_rank (launch.py l.246-248 @v0.19.5): OpenMP's default.
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 8) == 0);
  // --bind_cores_to_rank: physical cores // local processes (numa.py l.119): 128 // 8 = 16, 128 // 3 = 42.
  t.launcher = scenario::Launcher::DEEPSPEED_BIND_CORES;
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 8) == 16);
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 3) == 42);
  // torchrun: 1 with more than one process per node, unset with one (run.py config_from_args).
  t.launcher = scenario::Launcher::TORCHRUN;
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 8) == 1);
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 1) == 0);
  t.launcher = scenario::Launcher::ACCELERATE;
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 8) == 1);
  // An exported OMP_NUM_THREADS wins over torchrun's default.
  t.omp_num_threads = 8;
  CHECK(scenario::cpu_threads_per_rank(t, cpu, 8) == 8);
  // cpu_cores_per_rank: min(threads, cores / ranks).
  CHECK(scenario::cpu_cores_per_rank(cpu, 8, 1) == Approx(1.0));
  CHECK(scenario::cpu_cores_per_rank(cpu, 8, 0) == Approx(16.0));
  CHECK(scenario::cpu_cores_per_rank(cpu, 8, 64) == Approx(16.0));
}
