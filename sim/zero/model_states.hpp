// Closed forms for per-device model-state memory: the ZeRO paper's P_os / P_os+g / P_os+g+p expressions and
// DeepSpeed's estimate_zero2/zero3_model_states_mem_needs (reference/zero_semantics.md §1.1, §2.1, §2.2).
#pragma once

#include "sim/quantity.hpp"

#include <string>
#include <vector>

namespace zerosim::zero {

/// ZeRO paper model-state bytes per device for mixed-precision training (Rajbhandari et al. 2020, SC20,
/// arXiv 1910.02054, §5 and Fig. 1; zero_semantics.md §1.1), with Ψ = `params`, N_d = `dp_degree` and
/// K = `k_bytes` optimizer bytes per parameter (12 for mixed-precision Adam):
///   stage 0 (baseline DP)  (2 + 2 + K)·Ψ
///   stage 1 (P_os)         4Ψ + K·Ψ/N_d
///   stage 2 (P_os+g)       2Ψ + (2 + K)·Ψ/N_d
///   stage 3 (P_os+g+p)     (2 + 2 + K)·Ψ/N_d
/// Limits: the paper's accounting (lp params and grads 2 B each, no buckets, no temporaries, no padding); DeepSpeed
/// frees gradients after the step and creates Adam state lazily, see the generators for the real timeline.
/// Throws zerosim::Error if stage is not 0..3 or dp_degree < 1.
[[nodiscard]] Bytes paper_model_state_bytes(int stage, double params, int dp_degree, double k_bytes = 12.0);

/// Result of a DeepSpeed memory estimator: bytes per GPU and per CPU (DeepSpeed prints these divided by 2^30
/// with a "GB" label, i.e. GiB).
struct MemEstimate {
  Bytes gpu;
  Bytes cpu;
};

/// Which version of DeepSpeed's ZeRO-2 estimator (zero_semantics.md §2.1 "History"): CURRENT is the code since
/// PR #5099 (commit f4cb866c2, first in v0.14.3), PRE_0_14_3 the earlier one that memory.rst's example table and
/// issue printouts before mid-2024 (DeepSpeed#1883, Monkey#24) show. They differ only without offload.
enum class Zero2Formula { CURRENT, PRE_0_14_3 };

/// DeepSpeed `estimate_zero2_model_states_mem_needs` (deepspeed/runtime/zero/stage_1_and_2.py;
/// zero_semantics.md §2.1). N = gpus_per_node·nodes, f = additional_buffer_factor:
///   cpu_offload:  GPU = 2Ψ;               CPU = Ψ·max(4N, 16)·f
///   otherwise:    GPU = 2Ψ + int(18Ψ/N) (CURRENT) | 4Ψ + int(16Ψ/N) (PRE_0_14_3);  CPU = Ψ·4·gpus_per_node·f
/// Throws zerosim::Error if gpus_per_node or nodes < 1.
[[nodiscard]] MemEstimate estimate_zero2_model_states_mem_needs(double params, int gpus_per_node, int nodes,
                                                                bool cpu_offload, double additional_buffer_factor = 1.5,
                                                                Zero2Formula formula = Zero2Formula::CURRENT);

/// DeepSpeed `estimate_zero3_model_states_mem_needs` (deepspeed/runtime/zero/stage3.py; zero_semantics.md §2.2).
/// N = gpus_per_node·nodes, LLM = 4·largest_layer_params (fp16 param + grad of the largest module):
///   offload_param & offload_optimizer: GPU = LLM;               CPU = Ψ·18/n·f (zero_init) | Ψ·max(4g, 18/n)·f
///   offload_optimizer only:            GPU = LLM + int(2Ψ/N);   CPU = Ψ·16/n·f (zero_init) | Ψ·max(4g, 16/n)·f
///   no offload:                        GPU = LLM + int(18Ψ/N);  CPU = L·4·g·f (zero_init) | Ψ·4·g·f
/// with g = gpus_per_node, n = nodes, L = largest_layer_params. (offload_param without offload_optimizer is
/// treated like the no-offload row, as DeepSpeed's estimator does: its branches test cpu_offload first.)
/// Throws zerosim::Error if gpus_per_node or nodes < 1.
[[nodiscard]] MemEstimate estimate_zero3_model_states_mem_needs(double params, double largest_layer_params,
                                                                int gpus_per_node, int nodes, bool cpu_offload,
                                                                bool cpu_offload_params, bool zero_init,
                                                                double additional_buffer_factor = 1.5);

/// One row of DeepSpeed's `estimate_zero{2,3}_model_states_mem_needs_all_*` printout.
struct EstimateRow {
  bool offload_param = false; ///< offload_param=cpu (ZeRO-3 rows only)
  bool offload_optimizer = false; ///< offload_optimizer=cpu
  int zero_init = -1; ///< 1 / 0 for ZeRO-3 rows, -1 for ZeRO-2 rows (no such option)
  MemEstimate mem;
};

/// The ZeRO-2 rows in DeepSpeed's print order (stage_1_and_2.py `..._all_cold`): offload_optimizer=cpu, then none.
/// Throws zerosim::Error like estimate_zero2_model_states_mem_needs.
[[nodiscard]] std::vector<EstimateRow> zero2_estimate_table(double params, int gpus_per_node, int nodes,
                                                            double additional_buffer_factor = 1.5,
                                                            Zero2Formula formula = Zero2Formula::CURRENT);

/// The ZeRO-3 rows in DeepSpeed's print order (stage3.py `..._all_cold`): for offload_param in (cpu, none), for
/// offload_optimizer in (cpu, none), skipping (param cpu, optimizer none), for zero_init in (1, 0) -> 6 rows.
/// Throws zerosim::Error like estimate_zero3_model_states_mem_needs.
[[nodiscard]] std::vector<EstimateRow> zero3_estimate_table(double params, double largest_layer_params,
                                                            int gpus_per_node, int nodes,
                                                            double additional_buffer_factor = 1.5);

/// The "Options" column as DeepSpeed prints it, e.g. "offload_param=none, offload_optimizer=cpu , zero_init=1"
/// (ZeRO-3) or "offload_optimizer=cpu " (ZeRO-2).
[[nodiscard]] std::string estimate_options_text(const EstimateRow& row);

} // namespace zerosim::zero
