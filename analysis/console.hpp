// The console report (text through fmt): one variant -> a block of headline numbers; several variants -> one
// side-by-side table plus each variant's peak memory by tag. Every number carries its unit; GiB = 2^30 B and
// TFLOPS = 10^12 FLOP/s are stated in the report.
#pragma once

#include "analysis/summary.hpp"
#include "sim/scenario/scenario.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace zerosim::analysis {

/// What was simulated, as the first line of every report names it (the console's header after "scenario 'NAME' - ",
/// the HTML report's "Simulated:" line): plain fields, so a report read back from result.json's "scenario" object
/// (scenario_headline_from_json, analysis/result_json.hpp) words it as the run did.
struct ScenarioHeadline {
  std::string model; ///< model.name
  /// cluster.name: the preset with the keys the scenario changed ("dgx-a100 (modified: nics_per_node=1)"), else
  /// cluster.topology ("" for a hand-written cluster)
  std::string topology;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string gpu; ///< cluster.gpu.name
  double gpu_memory_bytes = 0; ///< B, printed in GiB
  std::int64_t micro_batch = 0;
  std::int64_t seq_len = 0;
  std::int64_t grad_accum = 0; ///< as resolved (derived from training.train_batch_size when that is set)
  std::string precision; ///< "bf16", "fp16"
  bool flash_attention = false;
  std::array<int, 3> deepspeed_version{}; ///< zero.deepspeed_version as parsed
  std::string compare_key; ///< the compared key ("" without a comparison)
};

/// The headline of `sc` (the first variant's scenario in a comparison).
[[nodiscard]] ScenarioHeadline scenario_headline(const scenario::Scenario& sc);

/// "model llama-2-7b on dgx-h100: 64 node(s) x 8 h100-sxm (79.65 GiB each), micro-batch 1 x 2048 tokens, GA 1, bf16,
/// FlashAttention, DeepSpeed 0.16.0", then "(simulated as X, the newest release zerosim models)" for a later
/// release and "(first variant; K varies by row)" when the compared key K changes something the line names. No
/// trailing newline.
[[nodiscard]] std::string scenario_headline_text(const ScenarioHeadline& l);

/// The report for `variants` of scenario `sc` (the base scenario, for the header line). An empty vector gives
/// only the header.
[[nodiscard]] std::string console_report(const scenario::Scenario& sc, const std::vector<VariantSummary>& variants);

/// The one- or two-line verdict of a compared run (no trailing newline; "" for fewer than two variants): the variants
/// that fit, fastest first, with their step times; those that do not; and, when the fastest variant with a completed
/// step does not fit, how much slower the fastest fitting one is. E.g. "verdict: fits in 24.00 GiB: zero.stage=2
/// (1.41 s/step), zero.stage=3 (1.62 s/step); does not fit: zero.stage=0, zero.stage=1". A variant fits when
/// RunSummary::fits holds; step times are the steady-state step_time_s (4 significant digits).
/// Step times within a relative kVerdictTieTolerance are ties, listed in the compare order.
[[nodiscard]] std::string compare_verdict(const std::vector<VariantSummary>& variants);

/// Relative difference of two step times below which compare_verdict ranks them as equal (1e-6: the simulation's
/// float noise between variants doing the same work is ~1e-15, and the verdict prints 4 significant digits).
inline constexpr double kVerdictTieTolerance = 1e-6;

/// True when a GPU-OOM run was simulated on past its OOM (simulation.on_oom: continue) to the end with a would-be
/// nvidia-smi peak above the capacity: the console's fits column and report.html's reason then give that excess.
[[nodiscard]] bool simulated_past_gpu_oom(const RunSummary& s);

/// A memory size for people: "{:.2f} GiB" from 0.01 GiB on, else "{:.1f} MiB" (a 1 MiB card: "1.0 MiB", not
/// "0.00 GiB"); GiB = 2^30 B, MiB = 2^20 B.
[[nodiscard]] std::string memory_text(double bytes);

/// A duration for people: "12.3 s" below 2 min, then "4.5 min" below 2 h, "7.5 h" below 2 days, else "23.1 d"
/// (one decimal).
[[nodiscard]] std::string human_duration(double seconds);

/// GPU-hours with 4 significant digits and no exponent (10340, 1034, 103.4, 10.34, 1.034), never "1.034e+04" as
/// {:.4g} gives from 10^4 on.
[[nodiscard]] std::string gpu_hours_text(double hours);

/// Above this size (B) a trace.json gets large_trace_note after the run: chrome://tracing cannot load it (V8's
/// longest string is 2^29 - 24 characters, ~512 MiB, and the viewer holds the file in strings), and ui.perfetto.dev
/// takes tens of seconds to parse a JSON trace of a few hundred MB.
inline constexpr double kLargeTraceBytes = 200e6;

/// The one-line note (no trailing newline) for a trace.json at `path` of `bytes` B: its size in MB, that
/// ui.perfetto.dev opens it and chrome://tracing does not, and the keys of `outputs` that make it smaller
/// (outputs.trace_steps: 1 unless already 1, outputs.trace_ranks: 1 when above 1, outputs.trace_json: false).
[[nodiscard]] std::string large_trace_note(const std::string& path, double bytes, const scenario::OutputSpec& outputs);

/// `bytes` for a person in decimal and binary units together, the unit chosen by size: "25.27 GB (23.534 GiB)" from
/// 0.1 GB, "31.11 MB (29.669 MiB)" from 0.1 MB, "2.49 kB (2.430 KiB)" below, so that a small figure (16Ψ/N_d at a
/// huge N_d) keeps its digits instead of reading "0.00 GB". The model-states lines of the console and report.html.
[[nodiscard]] std::string size_in_units(double bytes);

/// The ZeRO paper's model-state formula for `stage` 0-3 (RunSummary::paper_model_state_bytes), as the reports print
/// it: "16Ψ", "4Ψ + 12Ψ/N_d", "2Ψ + 14Ψ/N_d", "16Ψ/N_d"; stages outside 0-3 are clamped.
[[nodiscard]] const char* paper_model_states_formula(int stage);

/// For a run of DeepSpeed's BF16_Optimizer (RunSummary::bf16_optimizer) whose paper figure is printed: what it holds
/// instead, "DeepSpeed runs BF16_Optimizer here ..., 2Ψ bf16 params + 4Ψ fp32 gradient buffer + 12Ψ/N_d = X GB
/// (Y GiB), and 2Ψ of bf16 gradients from backward to the optimizer step" (bf16_optimizer.py: the fp32 gradient buffer
/// is full on every GPU, the fp32 master and Adam states partitioned; zero_semantics §3.2); "" otherwise.
[[nodiscard]] std::string bf16_optimizer_states_text(const RunSummary& s);

/// The collective kinds in the order the reports list them: all-reduce, all-gather, reduce-scatter.
inline constexpr program::CollectiveKind kReportCollectiveOrder[] = {program::CollectiveKind::ALL_REDUCE,
                                                                     program::CollectiveKind::ALL_GATHER,
                                                                     program::CollectiveKind::REDUCE_SCATTER,
                                                                     program::CollectiveKind::REDUCE};

/// The wire bytes rank 0 sent in one step (RunSummary::step_traffic, every kind) in units of Ψ x 2 B, i.e. in
/// 16-bit elements per parameter as the ZeRO paper counts communication (§7) -- Ψ x 4 B in an fp32 run
/// (RunSummary::element_bytes); 0 when Ψ is unknown (params = 0).
[[nodiscard]] double step_wire_in_psi(const RunSummary& s);

/// The ZeRO paper's communication volume per rank per step for the stage and N_d of `s` (Rajbhandari et al. 2020
/// §7), as the reports print it beside step_wire_in_psi: "2Ψ x 7/8 = 1.75Ψ" at stages 0-2 (stage 0 all-reduces the
/// gradients: a reduce-scatter and an all-gather of Ψ elements each; stages 1-2 reduce-scatter the gradients and
/// all-gather the updated parameters), "3Ψ x 7/8 = 2.62Ψ" at stage 3 (parameters all-gathered in forward and in
/// backward, gradients reduce-scattered); a ring rank sends (N_d - 1)/N_d of each. At stages 1-2 with a gradient
/// all-reduce in the step (DeepSpeed's default use_multi_rank_bucket_allreduce, zero_semantics §3.4) it adds that
/// DeepSpeed then moves 3Ψ, as does stage 0 with BF16_Optimizer (its gradient all-reduce + parameter all-gather); at
/// stage 3, when a micro-step sent less than the paper's figure, that parameters still held from forward
/// (stage3_max_live_parameters, stage3_max_reuse_distance) are not gathered again, and when it sent more, the padding
/// of every tensor to a multiple of N_d elements (RunSummary::stage3_padding_params).
[[nodiscard]] std::string paper_comm_volume_text(const RunSummary& s);

/// The caveat every report with step times ends with (no trailing newline): zerosim's step times are the simulated
/// best case, and how much longer the measured runs of docs/validation.md took (measured_step_margin_text,
/// analysis/measured_band.hpp; its known gaps).
[[nodiscard]] const char* best_case_note();

/// The memory part of best_case_note() on its own (no trailing newline): what a run whose step-time caveat is the
/// collective-bound note (collective_bound_note, analysis/measured_band.hpp) keeps of it, since that note replaces the
/// measured band and the band would understate the step's uncertainty.
[[nodiscard]] const char* memory_margin_note();

/// "the run did not finish (N optimizer step(s) completed)" for a run that stopped early without an OOM, "" otherwise:
/// the report's note and RunSummary::caveats say the same.
[[nodiscard]] std::string unfinished_run_note(const RunSummary& s);

/// The note on an MFU whose count holds much more attention than the GPU executes, "counts attention as ...": MFU
/// counts attention as the full s×s product (PaLM, Chowdhery et al. 2022 App. B; docs/compute.md "What MFU and HFU
/// count"), while a causal FlashAttention kernel skips half of it. Said when the executed FLOPs
/// (RunSummary::executed_flops_ratio) are at least 5 % below the count: the attention share of the model FLOPs, the
/// executed share, and the executed rate in TFLOPS and as a share of peak. "" otherwise, and without a step time.
[[nodiscard]] std::string mfu_count_note(const RunSummary& s);

} // namespace zerosim::analysis
