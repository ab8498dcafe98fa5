// A ZeRO-3-like step program for engine smoke and scale tests (not DeepSpeed-faithful; sim/zero/ is): per layer, the
// gather stream all-gathers the layer's parameters into a gather buffer, the compute stream runs the layer, and in
// backward the reduce stream reduce-scatters the layer's gradients (reference/zero_semantics.md gives the real flow).
#pragma once

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace zerosim::test {

struct Zero3LikeSpec {
  int layers = 32;
  double layer_param_bytes = 0.4e9; ///< lp bytes of one layer's parameters (all-gather output size)
  double fwd_flops = 2e13; ///< per layer
  double bwd_flops = 4e13; ///< per layer
  int steps = 1;
  /// All-gathers and reduce-scatters on one group (one NCCL communicator: they run in issue order, as with
  /// Megatron-DeepSpeed's mpu); false: the reduce-scatters on a second group (DeepSpeed's default before 0.19.3).
  bool shared_communicator = false;
};

inline program::StepProgram zero3_like_program(const Zero3LikeSpec& z) {
  using namespace program;
  ProgramBuilder b;
  const std::uint16_t gather_group = b.add_group("dp");
  const std::uint16_t reduce_group = z.shared_communicator ? gather_group : b.add_group("world");
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  auto gather = b.add_stream("gather", StreamKind::COMM);
  auto reduce = b.add_stream("reduce", StreamKind::COMM);
  for (int step = 0; step < z.steps; ++step) {
    b.mark(comp, MarkKind::STEP_BEGIN, step);
    b.join(gather, comp);
    std::vector<BufferId> acts;
    for (int pass = 0; pass < 2; ++pass) {
      const bool fwd = pass == 0;
      for (int i = 0; i < z.layers; ++i) {
        const int l = fwd ? i : z.layers - 1 - i;
        const std::string name = std::string(fwd ? "fwd" : "bwd") + " layer." + std::to_string(l);
        auto buf =
            b.alloc(gather, Phase::PARAM_GATHER, "gather " + name, MemTag::GATHER_BUFFER, Bytes(z.layer_param_bytes));
        b.collective(gather, Phase::PARAM_GATHER, "allgather " + name, CollectiveKind::ALL_GATHER,
                     Bytes(z.layer_param_bytes), gather_group);
        b.join(comp, gather);
        if (fwd) {
          b.compute(comp, Phase::FORWARD, name, Flops(z.fwd_flops), Bytes(z.layer_param_bytes));
          acts.push_back(b.alloc(comp, Phase::FORWARD, "act " + name, MemTag::ACTIVATIONS, Bytes(1e8)));
        } else {
          auto grad = b.alloc(comp, Phase::BACKWARD, "grad " + name, MemTag::LP_GRADS, Bytes(z.layer_param_bytes));
          b.compute(comp, Phase::BACKWARD, name, Flops(z.bwd_flops), Bytes(2 * z.layer_param_bytes));
          b.free(comp, Phase::BACKWARD, acts[static_cast<std::size_t>(l)]);
          b.join(reduce, comp);
          b.collective(reduce, Phase::GRAD_REDUCE, "reducescatter " + name, CollectiveKind::REDUCE_SCATTER,
                       Bytes(z.layer_param_bytes), reduce_group);
          b.free(reduce, Phase::GRAD_REDUCE, grad);
        }
        b.free(comp, fwd ? Phase::FORWARD : Phase::BACKWARD, buf);
      }
    }
    b.join(comp, reduce);
    b.mark(comp, MarkKind::STEP_END, step);
  }
  return b.build(z.steps);
}

/// DGX-A100-like nodes on a fat tree: 8 GPUs, NVSwitch 300e9 B/s / 2 us, PCIe 25e9 B/s, 8 x 25e9 B/s NICs / 5 us;
/// A100 80GB: 312e12 FLOP/s bf16 dense, 2.039e12 B/s HBM (reference/hardware.md), efficiencies 0.7 / 0.8.
inline scenario::ClusterSpec dgx_a100_like(int nodes) {
  scenario::ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(300e9), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.nic = {ByteRate(25e9), Seconds(5e-6), "test"};
  c.nics_per_node = 8;
  c.fabric = nodes > 1 ? scenario::FabricKind::FAT_TREE : scenario::FabricKind::SINGLE_SWITCH;
  c.gpu.name = "a100-like";
  c.gpu.memory = Bytes(80e9);
  c.gpu.peak_lp = FlopRate(312e12);
  c.gpu.matmul_efficiency = 0.7;
  c.gpu.memory_bandwidth = ByteRate(2.039e12);
  c.gpu.memory_efficiency = 0.8;
  return c;
}

} // namespace zerosim::test
