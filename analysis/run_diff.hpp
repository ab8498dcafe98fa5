// `zerosim diff` (issue 5): what changed between two runs and how much it moved step time and peak memory, and the
// same point by point between two sweeps. Pure: parsed from result.json texts (analysis/result_json.hpp writes them)
// or sweep tables (analysis/sweep.hpp), no file access.
#pragma once

#include "analysis/sweep.hpp"

#include <optional>
#include <string>
#include <vector>

namespace zerosim::analysis {

/// One scenario key whose value differs: dotted key ("zero.stage"), values as written in result.json's "scenario"
/// echo (strings without quotes, "(absent)" when the key exists on one side only).
struct KeyChange {
  std::string key; ///< as a scenario or --set writes it (cluster.nic.latency), unit suffixes removed
  std::string a;
  std::string b;
  bool derived = false; ///< not a scenario key (cluster.world_size, cluster.cpu.name): follows from the keys that are
  /// The scenario key whose value decided this one's default when neither side set it, else "": zero.overlap_comm
  /// defaults to true at zero.stage 3 and false at 1 and 2 (DeepSpeed runtime/zero/config.py validator), so two runs
  /// that differ in zero.stage only differ in it without anyone having changed it.
  std::string default_from{};
};

/// Bytes of one memory tag at the peak (summary.peak_by_tag_bytes) in A and B.
struct TagDelta {
  std::string tag;
  double a_bytes = 0.0;
  double b_bytes = 0.0;
};

/// One field of the step-time breakdown (result.json summary.breakdown: seconds per steady step, rank 0) in A and B;
/// unset on a side whose file lacks it.
struct PhaseDelta {
  std::string name; ///< as printed: "forward", "exposed comm", ... (kBreakdownRows in run_diff.cpp)
  std::optional<double> a_s;
  std::optional<double> b_s;
};

/// One variant compared: figures from result.json's "summary" block (seconds, tokens/s, MFU fraction, bytes).
/// Which steps a run's step time comes from.
enum class StepTimeKind { STEADY, WARMUP_ONLY, NONE };

struct VariantDiff {
  std::string label_a;
  std::string label_b;
  std::vector<KeyChange> changes; ///< sorted by key
  double step_time_a_s = 0.0, step_time_b_s = 0.0;
  /// What each step time is: StepTimeKind::STEADY (mean of steps >= 1), WARMUP_ONLY (only step 0 completed) or
  /// NONE (no step completed: the time is meaningless), from summary.steps_completed and summary.steady_state.
  StepTimeKind step_kind_a = StepTimeKind::STEADY, step_kind_b = StepTimeKind::STEADY;
  double tokens_per_s_a = 0.0, tokens_per_s_b = 0.0;
  double mfu_a = 0.0, mfu_b = 0.0;
  double peak_allocated_a_bytes = 0.0, peak_allocated_b_bytes = 0.0;
  double peak_reserved_a_bytes = 0.0, peak_reserved_b_bytes = 0.0;
  double nvidia_smi_a_bytes = 0.0, nvidia_smi_b_bytes = 0.0;
  bool fits_a = false, fits_b = false;
  /// summary.marginal and summary.marginal_reason ("less than 5 % of the card free", ...): a fit with little to
  /// spare; false and "" when the file predates them.
  bool marginal_a = false, marginal_b = false;
  std::string marginal_reason_a, marginal_reason_b;
  /// summary.alloc_retries (cudaMalloc retries of the worst rank; 0 when the file predates it).
  double alloc_retries_a = 0.0, alloc_retries_b = 0.0;
  /// Host memory (offload), B, each unset when the file lacks the field: the worst rank's peak
  /// (summary.host_peak_memory_bytes), the worst node's peak, shared by its ranks (host_node_peak_memory_bytes), and
  /// the page-locked bytes of that rank's peak (host_pinned_at_peak_bytes).
  std::optional<double> host_peak_a_bytes, host_peak_b_bytes;
  std::optional<double> host_node_peak_a_bytes, host_node_peak_b_bytes;
  std::optional<double> host_pinned_a_bytes, host_pinned_b_bytes;
  std::vector<TagDelta> top_tags; ///< at most 5 non-zero moves, largest |B - A| first (ties: tag name)
  /// The step-time breakdown, in the console report's order: GPU compute (forward, backward, optimizer, other
  /// compute), what the compute stream waited on (exposed comm, offload, CPU optimizer, host thread; idle other),
  /// then collectives in flight. Empty when neither file has summary.breakdown.
  std::vector<PhaseDelta> breakdown;
};

/// Two runs compared: matched variants, and labels present on one side only.
struct RunDiff {
  std::vector<VariantDiff> variants;
  std::vector<std::string> only_a;
  std::vector<std::string> only_b;
  std::vector<std::string> notes; ///< how the variants were paired, when not by label; printed under the A/B lines
};

/// A variant label in a form that does not depend on how the variant was written: a compared section's value
/// ("zero={stage: 2, overlap_comm: true}") is flattened to its dotted keys, each "key=value", sorted and joined by
/// one space ("zero.overlap_comm=true zero.stage=2"), so it pairs with a key compare or sweep point that sets the
/// same keys ("zero.stage=0" <-> "zero={stage: 0}"). A label that does not parse as "key=value" parts is returned
/// unchanged. Never throws.
[[nodiscard]] std::string canonical_label(const std::string& label);

/// The scenario keys that differ between two result.json texts ("scenario" objects flattened to dotted keys; arrays
/// compared as whole values). Keys that say which files a run wrote (outputs.*), whether a key was written
/// (*_explicit) or which comparison a variant belongs to (compare_key, compare_values) are not differences. Throws zerosim::Error "<what_a|what_b>: malformed JSON: ..." on bad JSON or a missing
/// "scenario" object.
[[nodiscard]] std::vector<KeyChange> diff_scenarios(const std::string& result_a, const std::string& result_b,
                                                    const std::string& what_a = "A", const std::string& what_b = "B");

/// True when two result.json texts simulated the same settings: diff_scenarios finds no key that differs apart from
/// those that name or describe a run rather than set it (name, description, file, the free-text `source` fields,
/// and the model, GPU and CPU labels model.name, cluster.gpu.name, cluster.cpu.name, which say how a change was
/// written: "(--set memory=20GiB)" or "(modified: memory=20GiB)"), so a single run pairs with the variant of a
/// comparison that has its settings. Throws as diff_scenarios.
[[nodiscard]] bool same_settings(const std::string& result_a, const std::string& result_b,
                                 const std::string& what_a = "A", const std::string& what_b = "B");

/// Compares two result.json texts (labels taken from their "variant" field). Throws zerosim::Error naming `what_a` /
/// `what_b` on malformed JSON or missing summary fields (summary.step_time_s, tokens_per_s, mfu,
/// peak_allocated_bytes, peak_reserved_bytes, nvidia_smi_bytes, fits, peak_by_tag_bytes).
[[nodiscard]] VariantDiff diff_results(const std::string& result_a, const std::string& result_b,
                                       const std::string& what_a = "A", const std::string& what_b = "B");

/// Human report: per variant, the differing keys "key: A -> B", then step time (s), tokens/s, MFU (%), the step-time
/// breakdown (s per step; n/a on a side whose file lacks it), peak allocated / reserved / nvidia-smi (GiB = 2^30 B)
/// with A, B, delta and delta %; when either run used host memory (offload) the host peak per rank and per node and
/// the pinned bytes at the host peak (GiB; n/a on a side whose file lacks the field); fits A/B, top tag moves (GiB);
/// then labels found on one side only.
[[nodiscard]] std::string format_run_diff(const RunDiff& d, const std::string& name_a, const std::string& name_b);

/// One point that both sweeps ran: the same axis overrides (as key=value sets, whatever their order).
struct SweepPointDiff {
  std::string label; ///< A's overrides "key=value" joined by one space, in A's axis order; "(base scenario)" for none
  SweepRow a;
  SweepRow b;
};

/// Two sweeps (`zerosim sweep` tables) compared point by point.
struct SweepDiff {
  /// The --set overrides every point ran with (SweepTable::sets) that differ, sorted by key; "(absent)" on the side
  /// that did not set the key. `derived` is always false.
  std::vector<KeyChange> set_changes;
  std::string scenario_a, scenario_b; ///< scenario names (SweepTable::scenario)
  std::string fingerprint_a, fingerprint_b; ///< sweep_fingerprint of each (scenario file and axis values; "" if old)
  std::string version_a, version_b; ///< zerosim version that wrote each sweep.json ("" when absent)
  std::size_t rows_a = 0, rows_b = 0; ///< points (rows) in each table
  Shard shard_a, shard_b;
  std::vector<SweepPointDiff> points; ///< the paired points, in A's row order
  std::vector<std::string> only_a; ///< labels (SweepPointDiff::label form) of A's points B lacks, in A's row order
  std::vector<std::string> only_b; ///< labels of B's points A lacks, in B's row order
};

/// Pairs the rows of two sweep tables by their inputs (the axis overrides compared as a set of key=value, so the
/// axes may come in another order; a point listed twice pairs in row order) and lists the --set overrides that
/// differ (a key given twice counts with its last value). Never throws; nothing paired is an empty `points`.
[[nodiscard]] SweepDiff diff_sweeps(const SweepTable& a, const SweepTable& b);

/// Human report of diff_sweeps: the sweeps (`name_a`, `name_b`), the --set overrides that differ ("key: a -> b"),
/// whether the scenario names differ (and the scenario file or axis values, the zerosim version, when they do), then
/// one line per paired point in A's order: label, status A/B (row_status), step time A -> B (s per steady-state step,
/// 4 decimals) with its delta %, the delta % of tokens/s, peak allocated and nvidia-smi A -> B (GiB = 2^30 B, 3
/// decimals); columns aligned. A point without step figures (an OOM that stopped before a steady-state step, an error
/// or invalid point: has_step_figures) shows n/a and no delta, nor memory for an error or invalid point; a warm-up-
/// only figure (no steady-state step) is marked '*' and has no delta. Then the points only in A, only in B.
[[nodiscard]] std::string format_sweep_diff(const SweepDiff& d, const std::string& name_a, const std::string& name_b);

} // namespace zerosim::analysis
