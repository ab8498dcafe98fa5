// Hardware presets of topologies/: the PCIe-only RTX 3090 boxes (no NVLink bridge) and the 48 GB rental cards, each
// checked against its datasheet arithmetic written out here.
#include "sim/error.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "tests/support/preset_cluster.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <string>
#include <vector>

using namespace zerosim;
using namespace zerosim::scenario;

namespace {

constexpr double kTol = 1e-9;

/// PCIe 4.0 per direction: 16 GT/s per lane, 128b/130b encoding, 8 bits per byte (PCI-SIG PCIe 4.0 base spec).
constexpr double pcie4_bytes_per_s(int lanes) { return 16e9 * lanes * 128.0 / 130.0 / 8.0; }

/// DDR4-3200: 3200 MT/s x 8 B per channel.
constexpr double ddr4_3200_bytes_per_s(int channels) { return channels * 3200e6 * 8.0; }

} // namespace

TEST_CASE("topology presets: 2x-rtx3090-pcie is the NVLink pair's desktop without the bridge, host-staged at x8/x8",
          "[scenario][unit]") {
  const ClusterSpec pcie = test::preset_cluster("2x-rtx3090-pcie");
  const ClusterSpec nvlink = test::preset_cluster("2x-rtx3090-nvlink");
  CHECK(pcie.gpus_per_node == 2);
  CHECK(pcie.gpu.preset == "rtx3090");
  // GeForce Ampere without the bridge: no peer access (NVIDIA/nccl#1127), NCCL stages through host memory.
  CHECK_FALSE(pcie.p2p);
  CHECK(nvlink.p2p);
  // The same host as the NVLink pair, so the two presets differ in the GPU-to-GPU path (and the lanes it leaves).
  CHECK(pcie.cpu.preset == "ryzen9-5950x");
  CHECK(pcie.cpu.preset == nvlink.cpu.preset);
  // AM4: the CPU's 16 graphics lanes split x8/x8 over two slots: 16 GT/s x 8 x 128/130 / 8 = 15.754 GB/s.
  CHECK(pcie.host_link.bandwidth.value() == Approx(pcie4_bytes_per_s(8)).epsilon(0.001));
  // Every staged byte is written to and read from DRAM: 2 channels x 25.6 GB/s, halved.
  CHECK(pcie.host_bridge.bandwidth.value() == Approx(ddr4_3200_bytes_per_s(2) / 2).epsilon(kTol));
  CHECK(pcie.cpu.memory_bandwidth.value() == Approx(ddr4_3200_bytes_per_s(2)).epsilon(kTol));
}

TEST_CASE("topology presets: 4x-rtx3090-pcie is 4x-rtx4090-pcie's workstation with RTX 3090 cards",
          "[scenario][unit]") {
  const ClusterSpec c3090 = test::preset_cluster("4x-rtx3090-pcie");
  const ClusterSpec c4090 = test::preset_cluster("4x-rtx4090-pcie");
  CHECK(c3090.gpus_per_node == 4);
  CHECK(c3090.gpu.preset == "rtx3090");
  CHECK_FALSE(c3090.p2p);
  CHECK(c3090.cpu.preset == "threadripper-pro-5975wx");
  CHECK(c3090.cpu.preset == c4090.cpu.preset);
  // Threadripper PRO: four x16 slots, 16 GT/s x 16 x 128/130 / 8 = 31.5 GB/s each; 8 channels DDR4-3200 halved.
  CHECK(c3090.host_link.bandwidth.value() == Approx(pcie4_bytes_per_s(16)).epsilon(0.001));
  CHECK(c3090.host_bridge.bandwidth.value() == Approx(ddr4_3200_bytes_per_s(8) / 2).epsilon(kTol));
  CHECK(c3090.host_bridge.bandwidth.value() == Approx(c4090.host_bridge.bandwidth.value()).epsilon(kTol));
}

TEST_CASE("topology presets: the RTX 3090 presets' names say whether the pair has NVLink", "[scenario][unit]") {
  std::map<std::string, std::string> summary;
  for (const auto& p : list_presets())
    if (p.kind == "topology")
      summary[p.name] = p.summary;
  REQUIRE(summary.count("2x-rtx3090-pcie") == 1);
  REQUIRE(summary.count("4x-rtx3090-pcie") == 1);
  CHECK_THAT(summary.at("2x-rtx3090-pcie"), Catch::Matchers::Contains("no GPU peer-to-peer"));
  CHECK_THAT(summary.at("4x-rtx3090-pcie"), Catch::Matchers::Contains("no GPU peer-to-peer"));
  CHECK_THAT(summary.at("2x-rtx3090-nvlink"), Catch::Matchers::Contains("intra-node 56.2 GB/s/dir"));
}
