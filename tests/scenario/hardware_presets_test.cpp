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
  // The bridged pair sits on the same AM4 board: the bridge does not add lanes, so its cards are x8/x8 too.
  CHECK(nvlink.host_link.bandwidth.value() == Approx(pcie4_bytes_per_s(8)).epsilon(0.001));
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

TEST_CASE("GPU presets: rtx-a6000 and l40s carry their datasheet peaks and the measured GEMM rate",
          "[scenario][unit]") {
  // RTX A6000 (GA102 workstation): 84 SMs x 1024 dense FP16 FLOP/clk/SM (full-rate FP32 accumulate) x 1.800 GHz boost
  // = 154.8 TFLOPS; FP32 84 x 128 lanes x 2 x 1.8 GHz = 38.7; 384-bit x 16 Gbps / 8 = 768 GB/s. Measured BF16 GEMM
  // 123.34 TFLOPS (zzc0721/torch-performance-test-data database.md). nvidia-smi: 49140 MiB (ECC off).
  const GpuSpec a6000 = test::preset_cluster("one-rtx4090", {"cluster.gpu=rtx-a6000"}).gpu;
  CHECK(a6000.peak_lp.value() == Approx(84 * 1024 * 1.8e9).epsilon(0.001));
  CHECK(a6000.peak_fp32.value() == Approx(84 * 128 * 2 * 1.8e9).epsilon(0.001));
  CHECK(a6000.memory_bandwidth.value() == Approx(384 / 8 * 16e9).epsilon(kTol));
  CHECK(a6000.memory.value() == Approx(49140.0 * 1024 * 1024).epsilon(kTol));
  CHECK(a6000.peak_lp.value() * a6000.matmul_efficiency == Approx(123.34e12).epsilon(0.002));
  CHECK(a6000.sm_count == 84);
  CHECK(a6000.nvlink);
  // L40S (AD102 data center): datasheet BF16 dense 362.05 TFLOPS, 864 GB/s = 384-bit x 18 Gbps / 8; ECC on: 15/16 of
  // 49140 MiB = 46068.75, nvidia-smi shows 46068 MiB. Measured BF16 GEMM 269.15 TFLOPS (same database).
  const GpuSpec l40s = test::preset_cluster("one-rtx4090", {"cluster.gpu=l40s"}).gpu;
  CHECK(l40s.peak_lp.value() == Approx(362.05e12).epsilon(kTol));
  CHECK(l40s.memory_bandwidth.value() == Approx(384 / 8 * 18e9).epsilon(kTol));
  CHECK(l40s.memory.value() == Approx(46068.0 * 1024 * 1024).epsilon(kTol));
  CHECK(l40s.peak_lp.value() * l40s.matmul_efficiency == Approx(269.15e12).epsilon(0.002));
  CHECK(l40s.sm_count == 142);
  CHECK_FALSE(l40s.nvlink);
  // The attention proxies: the RTX 4090's measured FA2 / GEMM ratio (0.73 / 0.96) times each card's GEMM fraction.
  const GpuSpec r4090 = test::preset_cluster("one-rtx4090").gpu;
  const double fa2_over_gemm = r4090.attention_efficiency / r4090.matmul_efficiency;
  CHECK(a6000.attention_efficiency == Approx(fa2_over_gemm * a6000.matmul_efficiency).epsilon(0.002));
  CHECK(l40s.attention_efficiency == Approx(fa2_over_gemm * l40s.matmul_efficiency).epsilon(0.002));
}

TEST_CASE("cluster.gpu.name: an inline card is reported under its own name, not as the modified base preset",
          "[scenario][unit]") {
  const test::TempDir dir("gpu-name");
  const auto load = [&](const std::string& gpu, const std::vector<std::string>& overrides = {}) {
    const std::string path = (dir.path() / "s.yaml").string();
    std::ofstream(path) << "name: s\nmodel: gpt2\ncluster:\n  topology: 2x-rtx3090-pcie\n  gpu: " << gpu << "\n";
    return load_scenario(path, overrides).front().scenario.cluster.gpu;
  };
  // Without a name the base preset and the changes say what the card is (as before).
  CHECK(load("{preset: rtx3090, memory: 48GiB}").name == "rtx3090 (modified: memory=48GiB)");
  // With one, that name; the base preset still picks the measured band and the efficiencies not overridden.
  const GpuSpec named = load("{preset: rtx3090, name: my-a6000, memory: 48GiB, peak_lp: 154.8TFLOPS}");
  CHECK(named.name == "my-a6000");
  CHECK(named.preset == "rtx3090");
  CHECK(named.memory.value() == Approx(48.0 * 1024 * 1024 * 1024).epsilon(kTol));
  CHECK(named.peak_lp.value() == Approx(154.8e12).epsilon(kTol));
  // Changes from the command line are still added, as for a named model.
  CHECK(load("{preset: rtx3090, name: my-a6000}", {"cluster.gpu.memory=40GiB"}).name ==
        "my-a6000 (--set memory=40GiB)");
  CHECK(load("rtx3090", {"cluster.gpu.name=card"}).name == "card");
}

TEST_CASE("cluster.gpu.preset_memory: the preset's capacity, kept when a scenario or --set changes memory",
          "[scenario][unit]") {
  const test::TempDir dir("gpu-preset-memory");
  const std::string path = (dir.path() / "s.yaml").string();
  std::ofstream(path)
      << "name: s\nmodel: gpt2\ncluster:\n  topology: dgx-h100\n  gpu: {preset: h100-sxm, memory: 70GB}\n";
  // topologies/gpus/h100-sxm.yaml: memory 81559MiB = 81559 x 2^20 B.
  const double h100 = 81559.0 * 1024 * 1024;
  const GpuSpec inline_gpu = load_scenario(path, {}).front().scenario.cluster.gpu;
  CHECK(inline_gpu.memory.value() == Approx(70e9).epsilon(kTol));
  CHECK(inline_gpu.preset_memory.value() == Approx(h100).epsilon(kTol));
  const GpuSpec set_gpu = load_scenario(path, {"cluster.gpu.memory=80GB"}).front().scenario.cluster.gpu;
  CHECK(set_gpu.memory.value() == Approx(80e9).epsilon(kTol));
  CHECK(set_gpu.preset_memory.value() == Approx(h100).epsilon(kTol));
}

TEST_CASE("cluster.gpu: an unknown GPU preset says how to define the card inline", "[scenario][unit]") {
  const std::string base = std::string(ZEROSIM_DATA_DIR) + "/tests/scenario/data/good.yaml";
  REQUIRE_THROWS_WITH(load_scenario(base, {"cluster.gpu=no-such-card"}),
                      Catch::Contains("cluster.gpu: unknown preset 'no-such-card'") &&
                          Catch::Contains("; or define the card inline over the closest preset: cluster.gpu: "
                                          "{preset: rtx3090, name: my-card, memory: 48GiB, peak_lp: 150TFLOPS, "
                                          "memory_bandwidth: 768GBps, ...} (the gpu.* keys of "
                                          "docs/scenario-reference.md)"));
  // A near miss keeps its suggestion first.
  REQUIRE_THROWS_WITH(load_scenario(base, {"cluster.gpu=rtx-a600"}),
                      Catch::Contains("did you mean 'rtx-a6000'? Or define the card inline"));
}

TEST_CASE("CPU presets: core_memory_bandwidth is each source's one-thread figure, reads plus writes",
          "[scenario][unit]") {
  // ryzen9-7950x: ackxolotl/memcpy on this CPU with DDR5-5200, glibc memcpy of 256 MiB in 15.3 ms = 17.5 GB/s copied;
  // a copy reads and writes each byte (STREAM Copy counts both): 2 x 17.5 = 35 GB/s.
  CHECK(test::preset_cluster("one-rtx4090").cpu.core_memory_bandwidth.value() == Approx(2 * 17.5e9).epsilon(kTol));
  // Zen 3 (ryzen9-5950x, threadripper-pro-5975wx): the same benchmark on an EPYC 7713, 20.2 GB/s copied: 2 x 20.2.
  CHECK(test::preset_cluster("2x-rtx3090-pcie").cpu.core_memory_bandwidth.value() == Approx(2 * 20.2e9).epsilon(kTol));
  CHECK(test::preset_cluster("2x-rtx3090-nvlink").cpu.core_memory_bandwidth.value() ==
        Approx(2 * 20.2e9).epsilon(kTol));
  CHECK(test::preset_cluster("4x-rtx3090-pcie").cpu.core_memory_bandwidth.value() == Approx(2 * 20.2e9).epsilon(kTol));
  // dgx2-xeon-8168: AnandTech 11544, one-thread STREAM Triad on Skylake-SP with 6 x DDR4-2666 per socket, 12 GB/s.
  CHECK(test::preset_cluster("dgx2-v100").cpu.core_memory_bandwidth.value() == Approx(12e9).epsilon(kTol));
  // dgx-a100-epyc-7742: kvcache-ai/ktransformers#2175, one thread on an EPYC 7402, node-local, 19.9 GB/s.
  CHECK(test::preset_cluster("dgx-a100").cpu.core_memory_bandwidth.value() == Approx(19.9e9).epsilon(kTol));
  // dgx-h100-xeon-8480c: no published one-thread figure found; not given (torchrun there is a load error).
  CHECK(test::preset_cluster("dgx-h100").cpu.core_memory_bandwidth.value() == 0);
  // Each figure is below the node's DRAM peak (one core cannot draw it all): 35 < 83.2, 40.4 < 51.2, 12 < 255.968.
  for (const char* name : {"one-rtx4090", "2x-rtx3090-pcie", "4x-rtx3090-pcie", "dgx2-v100", "dgx-a100"}) {
    const ClusterSpec c = test::preset_cluster(name);
    INFO(name);
    CHECK(c.cpu.core_memory_bandwidth.value() < c.cpu.memory_bandwidth.value());
  }
}

TEST_CASE("topology presets: hgx-a100-4gpu is four A100 SXM4 on NVLink3, 4 links per pair, and one HDR NIC",
          "[scenario][unit]") {
  const ClusterSpec c = test::preset_cluster("hgx-a100-4gpu");
  CHECK(c.gpus_per_node == 4);
  CHECK(c.gpu.preset == "a100-40gb"); // hpc.fau.de Alex: four A100 40 GB per node
  // NVLink3: 25 GB/s per link per direction (600 GB/s bidirectional over 12 links: 600 / 2 / 12). The board joins
  // each GPU's 12 links to its 3 peers, 4 per pair: 4 x 25 = 100 GB/s per pair, 3 x 100 = 300 GB/s per GPU, the
  // preset's switch-star figure.
  const double link = 600e9 / 2 / 12;
  const double per_pair = (12 / 3) * link;
  CHECK(per_pair == Approx(100e9).epsilon(kTol));
  CHECK(c.intra_node.bandwidth.value() == Approx(3 * per_pair).epsilon(kTol));
  CHECK(c.intra_node_topology == IntraNodeTopology::SWITCH); // several nodes: a mesh is modelled on one node only
  CHECK(c.intra_node.efficiency == Approx(20.0 / 25.0).epsilon(kTol)); // NCCL topo.h SM80_NVLINK_BW 20 of 25 GB/s
  CHECK(c.p2p);
  CHECK_FALSE(c.nvls); // no NVSwitch on the 4-GPU board
  // A100 SXM4 host link: PCIe 4.0 x16, each GPU its own (no PCIe switch sharing assumed).
  CHECK(c.host_link.bandwidth.value() == Approx(pcie4_bytes_per_s(16)).epsilon(0.001));
  CHECK(c.gpus_per_pcie_switch == 1);
  // One HDR InfiniBand HCA: 200 Gb/s / 8 = 25 GB/s per direction, shared by the node's 4 GPUs.
  CHECK(c.nics_per_node == 1);
  CHECK_FALSE(c.nic_per_gpu);
  CHECK(c.nic.bandwidth.value() == Approx(200e9 / 8).epsilon(kTol));
  CHECK(c.fabric == FabricKind::FAT_TREE);
  // hpc.fau.de Alex page: "512 GB of DDR4-RAM"; DDR4 DIMMs hold a power of two GiB (16 x 32 GiB), so 512 x 2^30 B.
  CHECK(c.host_memory.value() == Approx(512.0 * 1024 * 1024 * 1024).epsilon(kTol));
  // 2 x 64-core EPYC, 8 channels of DDR4-3200 each, every channel populated ([assumption]: the DGX A100's EPYC 7742
  // preset; the page gives no DIMM count or speed).
  CHECK(c.cpu.preset == "dgx-a100-epyc-7742");
  CHECK(c.cpu.memory_bandwidth.value() == Approx(ddr4_3200_bytes_per_s(16)).epsilon(kTol));
  // No vendor NVMe rates: none, the project's default (offload to nvme then needs cluster.nvme.*).
  CHECK(c.nvme.read_bandwidth.value() == 0);
  CHECK(c.nvme.write_bandwidth.value() == 0);
}
