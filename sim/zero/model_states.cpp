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
  case 0:
    return Bytes((2.0 + 2.0 + k_bytes) * params);
  case 1:
    return Bytes(4.0 * params + k_bytes * params / n);
  case 2:
    return Bytes(2.0 * params + (2.0 + k_bytes) * params / n);
  case 3:
    return Bytes((2.0 + 2.0 + k_bytes) * params / n);
  default:
    break;
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
                                                  double f, Zero2Formula formula) {
  check_gpus(gpus_per_node, nodes, "estimate_zero2_model_states_mem_needs");
  const double total_gpus = static_cast<double>(gpus_per_node) * nodes;
  // stage_1_and_2.py estimate_zero2_model_states_mem_needs (zero_semantics.md §2.1). The offload CPU term uses
  // the *total* GPU count, as DeepSpeed does.
  if (cpu_offload)
    return {Bytes(2.0 * params), Bytes(params * std::max(4.0 * total_gpus, 16.0) * f)};
  const Bytes cpu(params * 4.0 * gpus_per_node * f);
  // Before PR #5099 (v0.14.3) the no-offload GPU term was 4Ψ + int(16Ψ/N) (zero_semantics.md §2.1 "History").
  if (formula == Zero2Formula::PRE_0_14_3)
    return {Bytes(4.0 * params + py_int(16.0 * params / total_gpus)), cpu};
  return {Bytes(2.0 * params + py_int(18.0 * params / total_gpus)), cpu};
}

MemEstimate estimate_zero3_model_states_mem_needs(double params, double largest_layer_params, int gpus_per_node,
                                                  int nodes, bool cpu_offload, bool cpu_offload_params, bool zero_init,
                                                  double f) {
  check_gpus(gpus_per_node, nodes, "estimate_zero3_model_states_mem_needs");
  const double total_gpus = static_cast<double>(gpus_per_node) * nodes;
  const double gpus_factor = 1.0 / nodes;
  const double g = gpus_per_node;
  const double largest_layer_memory = 4.0 * largest_layer_params; // fp16 param + fp16 grad (§2.2)
  // stage3.py estimate_zero3_model_states_mem_needs (zero_semantics.md §2.2): cpu_offload is tested first.
  if (cpu_offload) {
    if (cpu_offload_params) {
      const double cpu =
          zero_init ? params * 18.0 * gpus_factor * f : params * std::max(4.0 * g, 18.0 * gpus_factor) * f;
      return {Bytes(largest_layer_memory), Bytes(cpu)};
    }
    const double cpu = zero_init ? params * 16.0 * gpus_factor * f : params * std::max(4.0 * g, 16.0 * gpus_factor) * f;
    return {Bytes(largest_layer_memory + py_int(2.0 * params / total_gpus)), Bytes(cpu)};
  }
  const double cpu = zero_init ? largest_layer_params * 4.0 * g * f : params * 4.0 * g * f;
  return {Bytes(largest_layer_memory + py_int(18.0 * params / total_gpus)), Bytes(cpu)};
}

std::vector<EstimateRow> zero2_estimate_table(double params, int gpus_per_node, int nodes, double f,
                                              Zero2Formula formula) {
  std::vector<EstimateRow> rows;
  for (const bool offload : {true, false}) {
    EstimateRow r;
    r.offload_optimizer = offload;
    r.mem = estimate_zero2_model_states_mem_needs(params, gpus_per_node, nodes, offload, f, formula);
    rows.push_back(r);
  }
  return rows;
}

std::vector<EstimateRow> zero3_estimate_table(double params, double largest_layer_params, int gpus_per_node, int nodes,
                                              double f) {
  std::vector<EstimateRow> rows;
  for (const bool offload_param : {true, false})
    for (const bool offload_optimizer : {true, false}) {
      if (offload_param && !offload_optimizer)
        continue; // DeepSpeed's printout skips param offload without optimizer offload
      for (const int zero_init : {1, 0}) {
        EstimateRow r;
        r.offload_param = offload_param;
        r.offload_optimizer = offload_optimizer;
        r.zero_init = zero_init;
        r.mem = estimate_zero3_model_states_mem_needs(params, largest_layer_params, gpus_per_node, nodes,
                                                      offload_optimizer, offload_param, zero_init == 1, f);
        rows.push_back(r);
      }
    }
  return rows;
}

std::string estimate_options_text(const EstimateRow& row) {
  const std::string opt = row.offload_optimizer ? "cpu " : "none";
  if (row.zero_init < 0)
    return "offload_optimizer=" + opt;
  return std::string("offload_param=") + (row.offload_param ? "cpu " : "none") + ", offload_optimizer=" + opt +
         ", zero_init=" + std::to_string(row.zero_init);
}

} // namespace zerosim::zero
