// nccl-tests parity: the measured bus bandwidths of reference/hardware.md "Collectives" against full engine runs
// on the shipped presets (flow fidelity, NCCL's tuner unless the measurement fixed the algorithm). No constant is
// tuned per case: the presets carry datasheet link bandwidths x NCCL's per-link efficiency (src/graph/topo.h) and
// the protocol model is NCCL's (src/graph/tuning.cc). One simulation per TEST_CASE (one SimGrid engine per process).
#include "sim/collectives/collective_plan.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "tests/support/one_collective.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace zerosim;
using program::CollectiveKind;

namespace {

constexpr double kValidationTol = 0.15; // the acceptance band for sizes >= 1 MiB
constexpr double kFidelityTol = 0.01; // flow vs analytic vs closed form
constexpr double k16GiB = 16.0 * (1ull << 30);

scenario::ClusterSpec preset(const std::string& topology, const std::vector<std::string>& overrides = {}) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("zerosim-validation-" + std::to_string(::getpid()) + ".yaml"))
          .string();
  {
    std::ofstream f(path);
    f << "name: validation\nmodel: gpt2\ncluster:\n  topology: " << topology << "\n";
  }
  auto v = scenario::load_scenario(path, overrides);
  std::filesystem::remove(path);
  return v.front().scenario.cluster;
}

/// nccl-tests busbw (B/s) of one `kind` of `size` bytes simulated on `cluster`.
double busbw(const scenario::ClusterSpec& cluster, CollectiveKind kind, double size,
             scenario::Fidelity fidelity = scenario::Fidelity::FLOW) {
  const double t = zerosim::test::one_collective_seconds(cluster, kind, size, zerosim::test::engine_options(fidelity));
  REQUIRE(t > 0);
  return size / t * collectives::bus_bandwidth_factor(kind, cluster.world_size());
}

void report(const char* what, double sim, double measured) {
  std::printf("%s: simulated %.2f GB/s, measured %.2f GB/s, delta %+.1f %%\n", what, sim / 1e9, measured / 1e9,
              100 * (sim / measured - 1));
}

} // namespace

TEST_CASE("validation: 8xA100 NVLink all-reduce busbw at 16 GiB is within 15% of 234.89 GB/s",
          "[collectives][validation]") {
  // Measured 234.89 GB/s (ml-engineering network README, hardware.md). Model: 12 NVLink3 links x 20.0 GB/s
  // (NCCL topo.h) = 240 GB/s per direction, NCCL's tuner picks ring/Simple at 16 GiB.
  const double bw = busbw(preset("dgx-a100"), CollectiveKind::ALL_REDUCE, k16GiB);
  report("8xA100 all_reduce 16GiB", bw, 234.89e9);
  REQUIRE(bw == Approx(234.89e9).epsilon(kValidationTol));
}

TEST_CASE("validation: 8xH200 ring all-reduce busbw at 16 GiB is within 15% of 367.61 GB/s",
          "[collectives][validation]") {
  // Measured with NVLS disabled (ring), NCCL 2.27.7 (hardware.md). Model: 18 x 20.6 GB/s = 370.8 GB/s.
  const double bw =
      busbw(preset("hgx-h200", {"cluster.collective_algorithm=ring"}), CollectiveKind::ALL_REDUCE, k16GiB);
  report("8xH200 ring all_reduce 16GiB", bw, 367.61e9);
  REQUIRE(bw == Approx(367.61e9).epsilon(kValidationTol));
}

TEST_CASE("validation: 8xH200 all-gather busbw at 16 GiB is within 15% of 361.4 GB/s", "[collectives][validation]") {
  const double bw = busbw(preset("hgx-h200"), CollectiveKind::ALL_GATHER, k16GiB);
  report("8xH200 all_gather 16GiB", bw, 361.4e9);
  REQUIRE(bw == Approx(361.4e9).epsilon(kValidationTol));
}

TEST_CASE("validation: 8xH200 reduce-scatter busbw at 16 GiB is within 15% of 362.9 GB/s",
          "[collectives][validation]") {
  const double bw = busbw(preset("hgx-h200"), CollectiveKind::REDUCE_SCATTER, k16GiB);
  report("8xH200 reduce_scatter 16GiB", bw, 362.9e9);
  REQUIRE(bw == Approx(362.9e9).epsilon(kValidationTol));
}

TEST_CASE("validation: 8xH200 ring all-reduce at 1 MiB is latency-bound and uses LL, as measured",
          "[collectives][validation]") {
  // hardware.md: 39.93 GB/s at 1 MiB with Ring+LL (NCCL 2.27.7 via torch's all_reduce_bench). The tuner also picks
  // ring/LL (tuning.cc v2.27.7-1): LL delivers min(llMaxBw, 0.5 x busBw) = min(141, 185.4) GB/s on one Hopper node,
  // so 6.6 + 14 x 0.6 us + 1.75·2^20 / 141e9 = 28.0 us -> 65.5 GB/s busbw at nccl-tests timing; the benchmark times
  // torch.distributed calls, which add kTorchCollectiveCallSeconds (24.5 us, small_message_test.cpp checks the
  // torch-loop curve). Asserted: the protocol, the latency-bound regime (busbw < 20 % of the link) and the closed
  // form.
  const auto c = preset("hgx-h200", {"cluster.collective_algorithm=ring"});
  const auto choice = engine::resolve_choice(c, CollectiveKind::ALL_REDUCE, Bytes(1048576.0));
  REQUIRE(choice.protocol == collectives::Protocol::LL);
  const double bw = busbw(c, CollectiveKind::ALL_REDUCE, 1048576.0);
  report("8xH200 ring all_reduce 1MiB", bw, 39.93e9);
  const double t = 6.6e-6 + 14 * 0.6e-6 + 1.75 * 1048576.0 / 141e9;
  REQUIRE(bw == Approx(1048576.0 / t * 1.75).epsilon(kFidelityTol));
  REQUIRE(bw < 0.2 * 370.8e9);
}

TEST_CASE("validation: 4xRTX4090 without P2P is slower than NVLink by the ratio of bottleneck links",
          "[collectives][validation]") {
  // 4x RTX 4090, host-staged: the 102.4e9 B/s host bridge is shared by the 4 ring flows -> 25.6e9 B/s each, below
  // PCIe's 31.5e9. The same 4 GPUs on NVLink at 240e9 B/s: busbw ratio 240 / 25.6 = 9.375 for a bandwidth-bound
  // ring (ideal protocol, 16 GiB: latency < 0.01 %). Flow run of the PCIe box: ring all-reduce busbw = 25.6e9.
  const auto box = preset("4x-rtx4090-pcie", {"cluster.collective_algorithm=ring", "cluster.collective_protocol=none"});
  const double bw = busbw(box, CollectiveKind::ALL_REDUCE, k16GiB);
  REQUIRE(bw == Approx(25.6e9).epsilon(kFidelityTol));
  auto nvlink = box;
  nvlink.p2p = true;
  nvlink.intra_node.bandwidth = ByteRate(240e9);
  const auto tp = engine::tune_topology(box);
  const auto tn = engine::tune_topology(nvlink);
  const double tpcie =
      collectives::model_time(CollectiveKind::ALL_REDUCE, {collectives::Algorithm::RING, collectives::Protocol::SIMPLE},
                              Bytes(k16GiB), tp)
          .value();
  const double tnv =
      collectives::model_time(CollectiveKind::ALL_REDUCE, {collectives::Algorithm::RING, collectives::Protocol::SIMPLE},
                              Bytes(k16GiB), tn)
          .value();
  REQUIRE(tpcie / tnv == Approx(240.0 / 25.6).epsilon(kFidelityTol));
}

TEST_CASE("validation: 4xRTX5090 host-staged all-reduce at 128 MiB is twice the measured 27.26 GB/s (known gap)",
          "[collectives][validation]") {
  // Measured: NVIDIA/nccl-tests issue #287, comment of 2025-03-14, all_reduce_perf -g 4 on 4 x RTX 5090 (no P2P,
  // NCCL's SHM transport), AMD EPYC Genoa host, NCCL 2.26.2: busbw 27.26 GB/s at 128 MiB (docs/collectives.md
  // "Host-staged GPU -> GPU without p2p"). Simulated: the 4x-rtx4090-pcie box with PCIe 5.0 x16 host links and a
  // Blackwell compute capability. Hand calculation of zerosim's host-staged route: PCIe 5.0 x16 63.0e9 B/s x the
  // host link's efficiency 0.877 = 55.25e9 B/s per GPU per direction; the host bridge (12 x DDR5-4800 = 460.8e9 B/s
  // halved = 230.4e9) gives each of the 4 ring flows 57.6e9, not binding. Ring/Simple at 128 MiB: 6 steps of
  // 5.7 us PCI hop latency (NCCL hwLat, the preset's) against 1.5 x 128 MiB / 55.25e9 = 3.64 ms, so busbw is within
  // 2 % below 55.25e9. The measurement is 0.43 of the link: the known gap of docs/collectives.md (suspected: per-
  // channel latency-bound loads from host memory, not modelled). This test pins the gap so a fix updates the docs.
  const auto box =
      preset("4x-rtx4090-pcie", {"cluster.host_link.bandwidth=63.0GBps", "cluster.intra_node.bandwidth=63.0GBps",
                                 "cluster.gpu.compute_capability=12.0", "cluster.host_bridge.bandwidth=230.4GBps"});
  const double size = 134217728.0;
  const double bw = busbw(box, CollectiveKind::ALL_REDUCE, size);
  report("4xRTX5090 SHM all_reduce 128MiB", bw, 27.26e9);
  const double route = 63.0e9 * 0.877;
  REQUIRE(bw <= route * (1 + kFidelityTol));
  REQUIRE(bw >= route * 0.98);
  // The documented gap: zerosim's figure is 1.9-2.1 times the measurement.
  REQUIRE(bw / 27.26e9 > 1.9);
  REQUIRE(bw / 27.26e9 < 2.1);
}

namespace {
/// 4 DGX-A100 nodes, explicit tree/Simple, all-reduce of 1e9 B: base 8.4 us + 2 x (7 x 4.0 us + 2 x 14 us) +
/// 2 x 1e9 / (200e9 x 0.92) s (phase bandwidth min(240e9 NVLink, 8 x 25e9 network) = 200e9; tree factor 0.92;
/// NCCL tuning.cc v2.27.7-1 baseLat Tree/Simple 8.4 us, hwLat Tree/Simple NVLink 4.0 us, NET 14 us);
/// busbw = S/t·2·31/32.
double tree4_busbw() {
  const double t = 8.4e-6 + 2 * (7 * 4.0e-6 + 2 * 14e-6) + 2 * 1e9 / (200e9 * 0.92);
  return 1e9 / t * 2 * 31 / 32;
}
scenario::ClusterSpec tree4() {
  return preset("dgx-a100",
                {"cluster.nodes=4", "cluster.collective_algorithm=tree", "cluster.collective_protocol=simple"});
}
} // namespace

TEST_CASE("validation: tree all-reduce on 4 DGX-A100 nodes matches its closed form at flow fidelity",
          "[collectives][validation]") {
  REQUIRE(busbw(tree4(), CollectiveKind::ALL_REDUCE, 1e9) == Approx(tree4_busbw()).epsilon(kFidelityTol));
}

TEST_CASE("validation: tree all-reduce on 4 DGX-A100 nodes matches its closed form at analytic fidelity",
          "[collectives][validation]") {
  REQUIRE(busbw(tree4(), CollectiveKind::ALL_REDUCE, 1e9, scenario::Fidelity::ANALYTIC) ==
          Approx(tree4_busbw()).epsilon(kFidelityTol));
}

TEST_CASE("validation: hierarchical all-reduce on 2 DGX-A100 nodes matches its closed form at flow fidelity",
          "[collectives][validation]") {
  // Simple: 8.4 us + intra RS (7 x 6 us + 7/8·S / 240e9) + inter AR of S/8 on 2 nodes (2 x 14 us +
  // 2·1/2·S/8 / (200e9 / 8)) + intra AG (7 x 3.4 us + 7/8·S / 240e9), S = 1e9: each GPU's inter-node flow gets 1/8
  // of the node's 200e9 B/s.
  const auto c = preset("dgx-a100", {"cluster.nodes=2", "cluster.collective_algorithm=hierarchical",
                                     "cluster.collective_protocol=simple"});
  const double s = 1e9;
  // tuning.cc v2.27.7-1: a ring step across nodes costs at least the network post overhead, 2 us on AMD hosts (the
  // DGX A100's EPYC) x 3 with Simple = 6 us > 3.4 us of NVLink; NET Ring/Simple 14 us.
  const double t = 8.4e-6 + 2 * (7 * 6e-6 + 0.875 * s / 240e9) + 2 * 14e-6 + (s / 8) / 25e9;
  REQUIRE(busbw(c, CollectiveKind::ALL_REDUCE, s) == Approx(s / t * 2 * 15 / 16).epsilon(kFidelityTol));
}
