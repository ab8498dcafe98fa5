#include "sim/zero/model_states.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cmath>
#include <string>

namespace zerosim::zero {

Bytes paper_model_state_bytes(int stage, double params, int dp_degree, double k_bytes) {
  if (dp_degree < 1)
    throw Error("paper_model_state_bytes: dp_degree must be >= 1, got " + std::to_string(dp_degree));
  const double n = dp_degree;
  // ZeRO paper §5 / Fig. 1 (zero_semantics.md §1.1): lp params 2Ψ, lp grads 2Ψ, optimizer states KΨ.
  switch (stage) {
  case 0: return Bytes((2.0 + 2.0 + k_bytes) * params);
  case 1: return Bytes(4.0 * params + k_bytes * params / n);
  case 2: return Bytes(2.0 * params + (2.0 + k_bytes) * params / n);
  case 3: return Bytes((2.0 + 2.0 + k_bytes) * params / n);
  default: break;
  }
  throw Error("paper_model_state_bytes: ZeRO stage must be 0..3, got " + std::to_string(stage));
}

namespace {
void check_gpus(int gpus_per_node, int nodes, const char* who) {
  if (gpus_per_node < 1 || nodes < 1)
    throw Error(std::string(who) + ": gpus_per_node and nodes must be >= 1, got " + std::to_string(gpus_per_node) +
                " x " + std::to_string(nodes));
}
// Python int() on a positive float truncates toward zero.
double py_int(double x) { return std::trunc(x); }
} // namespace

MemEstimate estimate_zero2_model_states_mem_needs(double params, int gpus_per_node, int nodes, bool cpu_offload,
                                                  double f) {
  check_gpus(gpus_per_node, nodes, "estimate_zero2_model_states_mem_needs");
  const double total_gpus = static_cast<double>(gpus_per_node) * nodes;
  // stage_1_and_2.py estimate_zero2_model_states_mem_needs (zero_semantics.md §2.1). The offload CPU term uses
  // the *total* GPU count, as DeepSpeed does.
  if (cpu_offload)
    return {Bytes(2.0 * params), Bytes(params * std::max(4.0 * total_gpus, 16.0) * f)};
  return {Bytes(2.0 * params + py_int(18.0 * params / total_gpus)), Bytes(params * 4.0 * gpus_per_node * f)};
}

MemEstimate estimate_zero3_model_states_mem_needs(double params, double largest_layer_params, int gpus_per_node,
                                                  int nodes, bool cpu_offload, bool cpu_offload_params,
                                                  bool zero_init, double f) {
  check_gpus(gpus_per_node, nodes, "estimate_zero3_model_states_mem_needs");
  const double total_gpus = static_cast<double>(gpus_per_node) * nodes;
  const double gpus_factor = 1.0 / nodes;
  const double g = gpus_per_node;
  const double largest_layer_memory = 4.0 * largest_layer_params;  // fp16 param + fp16 grad (§2.2)
  // stage3.py estimate_zero3_model_states_mem_needs (zero_semantics.md §2.2): cpu_offload is tested first.
  if (cpu_offload) {
    if (cpu_offload_params) {
      const double cpu = zero_init ? params * 18.0 * gpus_factor * f : params * std::max(4.0 * g, 18.0 * gpus_factor) * f;
      return {Bytes(largest_layer_memory), Bytes(cpu)};
    }
    const double cpu = zero_init ? params * 16.0 * gpus_factor * f : params * std::max(4.0 * g, 16.0 * gpus_factor) * f;
    return {Bytes(largest_layer_memory + py_int(2.0 * params / total_gpus)), Bytes(cpu)};
  }
  const double cpu = zero_init ? largest_layer_params * 4.0 * g * f : params * 4.0 * g * f;
  return {Bytes(largest_layer_memory + py_int(18.0 * params / total_gpus)), Bytes(cpu)};
}

} // namespace zerosim::zero
