// Memory conservation at the end of a simulation (issue 3): after the last step every buffer a ZeRO program
// allocated is freed except the ones it declares persistent (StepProgram::persistent: model states and the buffers
// DeepSpeed allocates once). The engine executes the program independently of that declaration, so what it still
// holds at the end, on the GPU and on the host, must be exactly the declared buffers' bytes.
#include "sim/engine/caching_allocator.hpp"
#include "sim/engine/engine.hpp"
#include "sim/program/program.hpp"
#include "tests/support/in_child.hpp"
#include "tests/support/test_gpu.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <variant>
#include <vector>

using namespace zerosim;
using program::Device;
using scenario::OffloadDevice;

namespace {

/// Sum of the declared persistent buffers' bytes on `d`; a GPU request counts as PyTorch's allocator rounds it (a
/// multiple of 512 B, CachingAllocator::round_size), host buffers as requested.
double persistent_bytes(const program::StepProgram& p, Device d) {
  double sum = 0;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<program::Alloc>(&op.body))
        if (a->device == d && std::binary_search(p.persistent.begin(), p.persistent.end(), a->buffer))
          sum += d == Device::GPU ? static_cast<double>(engine::CachingAllocator::round_size(
                                        static_cast<std::uint64_t>(std::llround(a->bytes.value()))))
                                  : a->bytes.value();
  return sum;
}

struct Case {
  std::string name;
  int stage = 0;
  int n = 1;
  int ga = 1;
  bool overlap = false;
  OffloadDevice offload_optimizer = OffloadDevice::NONE;
  OffloadDevice offload_param = OffloadDevice::NONE;
  bool bf16_fp32_accum = false; ///< bf16 with fp32 gradient accumulation: BF16_Optimizer at stages 0/1
  double trainable_fraction = 1.0;
};

/// Largest |end-of-run bytes - declared persistent bytes| over the ranks' GPUs and the node's host, or -1 when the
/// run did not finish. Runs in a forked child (one SimGrid simulation per process).
double conservation_error(const Case& k) {
  return zerosim::test::in_child([&] {
    zero::testing::TinyModel m;
    m.grad_accum = k.ga;
    auto wl = zero::testing::make_workload(m);
    wl.training.trainable_fraction = k.trainable_fraction;
    if (k.bf16_fp32_accum)
      wl.training.precision = scenario::Precision::BF16;
    auto z = zero::testing::zero_config(k.stage);
    z.overlap_comm = k.overlap;
    z.reduce_bucket_size = 1'500'000;
    z.sub_group_size = 2'000'000;
    z.offload_optimizer = k.offload_optimizer;
    z.offload_param = k.offload_param;
    if (k.bf16_fp32_accum) {
      z.grad_accum_dtype = scenario::GradAccumDtype::FP32;
      z.deepspeed_version = {0, 16, 0};
    }
    const auto p = zero::testing::generate(wl, z, k.n, 2, 2.2e-10);
    const auto r = engine::run_simulation(zerosim::test::test_node(k.n, true), p, {});
    if (!r.finished || r.oom)
      return -1.0;
    double worst = 0;
    for (const auto& mem : r.memory)
      worst = std::max(worst, std::fabs(mem.final_bytes - persistent_bytes(p, Device::GPU)));
    const double host = persistent_bytes(p, Device::HOST) * k.n; // the node holds every rank's host buffers
    for (const auto& mem : r.host_node_memory)
      worst = std::max(worst, std::fabs(mem.final_bytes - host));
    if (r.host_node_memory.empty() && host > 0)
      worst = std::max(worst, host);
    return worst;
  });
}

} // namespace

TEST_CASE(
    "Conservation: at the end of a simulation only the declared persistent buffers are allocated, for every "
    "stage, offload device, BF16_Optimizer and frozen parameters",
    "[engine][validation]") {
  const std::vector<Case> cases = {
      {"stage 0", 0, 2, 2},
      {"stage 1", 1, 2, 2},
      {"stage 2, overlap", 2, 2, 2, true},
      {"stage 3", 3, 2, 2, true},
      {"stage 1, optimizer on cpu", 1, 2, 2, false, OffloadDevice::CPU},
      {"stage 2, optimizer on cpu, overlap", 2, 2, 2, true, OffloadDevice::CPU},
      {"stage 2, optimizer on nvme", 2, 2, 1, false, OffloadDevice::NVME},
      {"stage 3, optimizer on cpu", 3, 2, 2, true, OffloadDevice::CPU},
      {"stage 3, optimizer and params on cpu", 3, 2, 1, true, OffloadDevice::CPU, OffloadDevice::CPU},
      {"stage 3, optimizer and params on nvme", 3, 2, 1, true, OffloadDevice::NVME, OffloadDevice::NVME},
      {"stage 3, params on cpu, optimizer on the GPU", 3, 2, 2, true, OffloadDevice::NONE, OffloadDevice::CPU},
      {"stage 3, params on nvme, optimizer on the GPU", 3, 2, 1, true, OffloadDevice::NONE, OffloadDevice::NVME},
      {"stage 0, BF16_Optimizer", 0, 2, 2, false, OffloadDevice::NONE, OffloadDevice::NONE, true},
      {"stage 1, BF16_Optimizer", 1, 2, 1, false, OffloadDevice::NONE, OffloadDevice::NONE, true},
      {"stage 2, frozen 99 %", 2, 2, 2, false, OffloadDevice::NONE, OffloadDevice::NONE, false, 0.01},
      {"stage 3, frozen 99 %", 3, 2, 1, true, OffloadDevice::NONE, OffloadDevice::NONE, false, 0.01},
      {"stage 2, frozen, optimizer on cpu", 2, 1, 1, false, OffloadDevice::CPU, OffloadDevice::NONE, false, 0.01},
  };
  for (const Case& k : cases) {
    INFO(k.name);
    CHECK(conservation_error(k) == Approx(0).margin(0.5));
  }
}
