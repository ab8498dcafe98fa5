// Test support: a hand-built Workload (no build_workload): `blocks` transformer-like blocks, each with a weight of
// `weight_numel` and a bias of `bias_numel` elements, fixed FLOPs and activation bytes. With the defaults
// Ψ = 4 x 1,001,000 = 4,004,000 elements, so for N in {1, 2, 4} the stage 1/2 partitions (padded to 2N) and the
// stage 3 per-param partitions (ceil(numel/N)) have no padding and stage 1/2 partition boundaries fall between
// blocks.
#pragma once

#include "sim/scenario/scenario.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/zero_program.hpp"

#include <string>

namespace zerosim::zero::testing {

struct TinyModel {
  int blocks = 4;
  Elements weight_numel = 1'000'000;
  Elements bias_numel = 1'000;
  double activation_bytes = 10e6; ///< saved per block per micro-step
  int grad_accum = 1;
  bool checkpointing = false;
};

inline workload::Workload make_workload(const TinyModel& m = {}) {
  workload::Workload w;
  w.training.grad_accum = m.grad_accum;
  w.training.activation_checkpointing = m.checkpointing;
  w.bytes_per_lp = 2.0;
  for (int i = 0; i < m.blocks; ++i) {
    workload::Layer l;
    l.name = "block." + std::to_string(i);
    l.params.push_back({l.name + ".weight", m.weight_numel, true});
    l.params.push_back({l.name + ".bias", m.bias_numel, true});
    l.param_count = m.weight_numel + m.bias_numel;
    l.fwd_flops = Flops(1e9);
    l.bwd_flops = Flops(2e9);
    l.fwd_bytes = Bytes(1e6);
    l.bwd_bytes = Bytes(2e6);
    l.saved_activations = Bytes(m.checkpointing ? m.activation_bytes / 10 : m.activation_bytes);
    l.recompute_activations = Bytes(m.checkpointing ? m.activation_bytes : 0);
    l.recompute_flops = m.checkpointing ? l.fwd_flops : Flops(0);
    l.recompute_bytes = m.checkpointing ? l.fwd_bytes : Bytes(0);
    l.fwd_working_bytes = Bytes(1e6);
    l.bwd_working_bytes = Bytes(2e6);
    l.param_grad_bytes_lp = Bytes(2.0 * static_cast<double>(l.param_count));
    w.total_params += l.param_count;
    w.layers.push_back(l);
  }
  w.trainable_params = w.total_params;
  w.largest_tensor_numel = m.weight_numel;
  w.largest_layer_params = m.weight_numel + m.bias_numel;
  return w;
}

/// One layer "blk" of two submodules: "blk.a" (3e6 elements, forward first) and "blk.b" (1e6), so the shares are
/// 0.75 / 0.25; saved tensors of 4e6, 2e6 and 2e6 B (in saving order), the first freed by blk.a's backward part, the
/// other two by blk.b's; backward op temporaries of 5e5 B.
inline workload::Workload two_submodule_layer() {
  workload::Workload w;
  w.bytes_per_lp = 2.0;
  workload::Layer l;
  l.name = "blk";
  l.params = {{"blk.a.weight", 3'000'000, true}, {"blk.b.weight", 1'000'000, true}};
  l.param_count = 4'000'000;
  l.fwd_flops = Flops(1e9);
  l.bwd_flops = Flops(2e9);
  l.fwd_bytes = Bytes(1e6);
  l.bwd_bytes = Bytes(2e6);
  l.activation_tensors = {Bytes(4e6), Bytes(2e6), Bytes(2e6)};
  l.activation_modules = {"blk.a", "blk.b", "blk.b"};
  l.saved_activations = Bytes(8e6);
  l.bwd_working_bytes = Bytes(5e5);
  l.param_grad_bytes_lp = Bytes(8e6);
  w.layers.push_back(l);
  w.total_params = w.trainable_params = 4'000'000;
  w.largest_tensor_numel = 3'000'000;
  w.largest_layer_params = 4'000'000;
  return w;
}

/// Ψ of make_workload(m).
inline double psi(const TinyModel& m = {}) { return m.blocks * static_cast<double>(m.weight_numel + m.bias_numel); }

} // namespace zerosim::zero::testing

namespace zerosim::zero::testing {

/// ZeroConfig with DeepSpeed's defaults for `stage`.
inline scenario::ZeroConfig zero_config(int stage) {
  scenario::ZeroConfig z;
  z.stage = stage;
  return z;
}

/// generate_program on `wl` with `z`, `n` ranks and `steps` steps.
inline program::StepProgram generate(const workload::Workload& wl, const scenario::ZeroConfig& z, int n, int steps = 2,
                                     double cpu_adam_seconds_per_param = 0.0) {
  GeneratorInput in{wl, z, n, steps, cpu_adam_seconds_per_param};
  return generate_program(in);
}

} // namespace zerosim::zero::testing
