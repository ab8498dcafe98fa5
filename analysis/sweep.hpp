// Parameter sweeps (`zerosim sweep`, `zerosim merge`): grid and zipped axes over scenario keys, expansion into
// points, stable point keys for resuming, deterministic shard slices, result rows as CSV / JSON, and merging of
// shard outputs. Pure: no processes, no files except through the string functions' callers, no wall clock.
#pragma once

#include "analysis/summary.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::analysis {

/// One axis: a dotted scenario key and the values it takes, as written (parsed as YAML by the loader).
struct SweepAxis {
  std::string key;
  std::vector<std::string> values;
  int line = 0; ///< line of the key in the scenario file, 0 when it came from the command line
};

/// A sweep definition. Points = Cartesian product of the `grid` axes (first axis slowest) x the `zip` group (all
/// zip axes advance together; they must have equal lengths). The zip group is the innermost dimension.
struct SweepSpec {
  std::vector<SweepAxis> grid;
  std::vector<SweepAxis> zip;
};

/// One point: its position in the expansion order and its overrides (key, value) in axis order (grid, then zip).
struct SweepPoint {
  std::size_t index = 0;
  std::vector<std::pair<std::string, std::string>> overrides;

  /// The overrides as load_scenario takes them: "key=value".
  [[nodiscard]] std::vector<std::string> as_set_args() const;
  /// A readable label, e.g. "zero.stage=2 training.micro_batch=4".
  [[nodiscard]] std::string label() const;
};

/// Number of points of `spec` (1 for an empty spec: the base scenario). Throws zerosim::Error when an axis has no
/// value, a key appears twice, or the zip axes differ in length (the message names the key).
[[nodiscard]] std::size_t sweep_size(const SweepSpec& spec);

/// Every point of `spec`, index 0..sweep_size-1. Throws like sweep_size.
[[nodiscard]] std::vector<SweepPoint> expand_sweep(const SweepSpec& spec);

/// Stable key of a point: 16 hex digits of FNV-1a 64 (Fowler, Noll, Vo; IETF draft-eastlake-fnv) over the base
/// overrides and then the point's overrides, each "key=value\n", both in key order (a base key given twice counts
/// with its last value), then `context`. Independent of the point's index and of the order the command line gave
/// them in. `context` is what else decides the point's result: `zerosim sweep` passes the scenario file without its
/// sweep block and the point's resolved scenario without the paths it was read from (simulated_scenario_text), so a
/// journal row of an edited scenario or preset no longer matches and is simulated again, while the same files run
/// from another directory, by another path or after a move still match.
[[nodiscard]] std::string point_key(const SweepPoint& p, const std::vector<std::string>& base_sets = {},
                                    const std::string& context = {});

/// True when directory `dir` holds what `zerosim sweep` writes (sweep.json or its journal.jsonl), whatever else is in
/// it: `zerosim run` refuses such a directory, and `zerosim sweep` one with a run's summary.json but none of these.
[[nodiscard]] bool holds_sweep_outputs(const std::string& dir);

/// The scenario file as YAML reads it: `text` parsed and emitted again (yaml-cpp's block style), so comments, blank
/// lines, indentation and quoting that do not change a value do not change the text. What a sweep hashes, so that a
/// comment added to the file does not throw away the finished points. `text` itself when it is not valid YAML
/// (the loader reports that). Deterministic: map keys keep the file's order.
[[nodiscard]] std::string canonical_yaml_text(const std::string& text);

/// `scenario_text` without its top-level `sweep:` block (the line that opens it and the indented, blank or comment
/// lines that follow, up to the next top-level key): the part of a sweep's scenario file that every point shares.
[[nodiscard]] std::string without_sweep_block(const std::string& scenario_text);

/// FNV-1a 64-bit hash (16 hex digits) of what defines a sweep: the scenario file's bytes and every axis with its
/// values in order (grid, then zip). Two shards of one sweep have the same; `merge` refuses different ones.
[[nodiscard]] std::string sweep_fingerprint(const std::string& scenario_text, const SweepSpec& spec);

/// A shard: the slice `index` of `count` (0 <= index < count).
struct Shard {
  int index = 0;
  int count = 1;
};

/// Parses "i/n" (0-based i < n). Throws zerosim::Error naming the text otherwise.
[[nodiscard]] Shard parse_shard(const std::string& text);

/// Does point `index` belong to `shard`? Round robin (index mod count == shard index): deterministic, the shards
/// partition the points (disjoint, union = all) and their sizes differ by at most one.
[[nodiscard]] bool in_shard(std::size_t index, const Shard& shard);

/// The result row of one point.
struct SweepRow {
  std::size_t index = 0;
  std::string key; ///< point_key
  std::vector<std::pair<std::string, std::string>> inputs; ///< the point's overrides
  bool ok = false; ///< the simulation ran to a summary (an OOM is still ok: fits = false)
  /// The scenario loader rejected the point's combination of values (offload_param=cpu with stage 1): the point was
  /// never simulated. ok is then false and `error` holds the loader's message. Status "invalid", not "error".
  bool invalid = false;
  std::string error; ///< one line, when !ok
  double step_time_s = 0;
  double tokens_per_s = 0;
  double mfu = 0; ///< fraction 0..1
  /// step_time_s, tokens_per_s and mfu come from steady-state steps (RunSummary::steady_state); false when the
  /// run stopped (OOM) before a step >= 1 completed: sweep.csv then leaves those three cells empty, and the JSON
  /// row of such an OOM (fits false) has them null (read back as 0).
  bool steady_state = true;
  /// The run stopped at its OOM (simulation.on_oom: stop; analysis::has_step_time false): whatever steps completed
  /// before it, the point has no step time, throughput, MFU or breakdown (sweep.csv leaves them empty, sweep.json
  /// has null times). false in rows written before it was recorded.
  bool stopped_at_oom = false;
  double gemm_utilization = 1; ///< RunSummary::gemm_utilization (fraction of the large-GEMM rate)
  int world_size = 0;
  /// GA the point ran with (RunSummary::grad_accum: training.grad_accum, or derived from training.train_batch_size)
  /// and the sequences per optimizer step over all GPUs, b x GA x N_d; 0 for a point not simulated and in rows
  /// written before they were recorded.
  std::int64_t grad_accum = 0;
  std::int64_t train_batch_size = 0;
  double peak_allocated_bytes = 0; ///< worst rank's max_memory_allocated
  int peak_allocated_rank = 0;
  /// The peak allocated was reached at initialisation, before step 0 (RunSummary peak_at_initialisation); false in
  /// rows written before it was recorded.
  bool peak_at_init = false;
  /// Worst rank's peak over steps >= 1 (RunSummary::steady_peak_bytes), B; 0 when no step >= 1 began and in rows
  /// written before it was recorded.
  double steady_peak_allocated_bytes = 0;
  double peak_reserved_bytes = 0; ///< worst rank's max_memory_reserved
  int peak_reserved_rank = 0;
  double nvidia_smi_bytes = 0; ///< reserved + CUDA context + NCCL
  /// RunSummary::nvidia_smi_needed_bytes: the memory the run cannot give back (what --headroom compares), B
  double nvidia_smi_needed_bytes = 0;
  double capacity_bytes = 0;
  bool fits = false;
  std::string oom_reason; ///< one line, empty without OOM
  /// GPU OOM: reserved + CUDA context + NCCL + the failed request, B (RunSummary::oom_gpu_demand_bytes); 0 without a
  /// GPU OOM and in rows written before it was recorded
  double oom_gpu_demand_bytes = 0;
  /// Most cudaMalloc retries on one rank (RunSummary::alloc_retries): a fit with retries is marginal. 0 in rows
  /// written before it was recorded.
  long alloc_retries = 0;
  bool oom_on_host = false; ///< the OOM was the node's host memory (RunSummary::oom_on_host)
  double host_node_peak_bytes = 0; ///< worst node's host memory peak, B (offload); 0 without
  /// Host OOM: the node's live host memory at the failed allocation plus its request, B
  /// (RunSummary::oom_host_demand_bytes); 0 without a host OOM and in rows written before it was recorded.
  double oom_host_demand_bytes = 0;
  /// Why the fit is marginal (memory_bounds / marginal_reason: "allocator retries", "less than 5 % of the card
  /// free", or both), "" when it is not marginal, does not fit or was not simulated, and in rows written before it
  /// was recorded.
  std::string marginal_reason;
  StepBreakdown breakdown; ///< steady-state step breakdown of rank 0, s (RunSummary::breakdown); all 0 in rows
      ///< written before it was recorded
  /// The zerosim build that computed the row (analysis::build_id()), as its journal record says (`zerosim_build`);
  /// "" in records written before it was recorded. Not in sweep.json's rows: the table's zerosim_build covers them.
  std::string build;
  /// The run's notes: RunSummary::diagnostics, reserved_note (when set) and caveats, in that order. sweep.json keeps
  /// them once per text in its top-level "notes" list and each row's order as "note_indices" (sweep_json), which
  /// sweep_from_json reads back in that order; empty in rows written before they were recorded.
  std::vector<std::string> notes;
  /// RunSummary::measured_band, measured_step_low and _high: "" and 1, 1 when not simulated or not recorded.
  std::string measured_band;
  double measured_step_low = 1;
  double measured_step_high = 1;
  /// RunSummary::collective_bound: the point spans more than one node and its collectives are in flight for at least
  /// half of the step, so its step time is a lower bound (analysis/measured_band.hpp is_collective_bound); false
  /// when not simulated, without a step time, and in rows written before it was recorded.
  bool collective_bound = false;
  /// RunSummary::resolved: the defaults that follow other keys as the point resolved them ("zero.overlap_comm" ->
  /// "false"); empty when not simulated or in rows written before it was recorded.
  std::map<std::string, std::string> resolved;
};

/// Row of a finished simulation.
[[nodiscard]] SweepRow row_from_summary(const SweepPoint& p, const std::string& key, const RunSummary& s);
/// Row of a point whose simulation failed (`why` is made one line).
[[nodiscard]] SweepRow row_from_error(const SweepPoint& p, const std::string& key, const std::string& why);
/// Row of a point whose combination of values the scenario loader rejected (`why`, its message, made one line).
[[nodiscard]] SweepRow row_from_invalid(const SweepPoint& p, const std::string& key, const std::string& why);

/// False when the point stopped at its OOM (simulation.on_oom: stop), or ran out of memory before a steady-state
/// step: its step time, throughput and MFU are then n/a (sweep.json null, sweep.csv empty, pictures leave it out)
/// and its memory is what was in use when it stopped. A fit keeps its numbers, warm-up or not, and so does a point
/// simulated on past its OOM (on_oom: continue); an error or invalid row has none anyway.
[[nodiscard]] inline bool has_step_figures(const SweepRow& r) {
  return !r.ok || r.fits || (r.steady_state && !r.stopped_at_oom);
}

/// The row's status as sweep.csv and sweep.json write it: "fits", "oom" (simulated, out of memory), "error" (the
/// simulation failed) or "invalid" (the loader rejected the combination; not simulated).
[[nodiscard]] std::string row_status(const SweepRow& r);

/// The rows that ran to no result: `failed` (status "error": the simulation failed) and `invalid` (status "invalid":
/// the loader rejected the combination, so it was never simulated, and is not a failure).
struct RowFailures {
  std::size_t failed = 0;
  std::size_t invalid = 0;
};

/// Counts the "error" and "invalid" rows of `rows` (row_status), as `zerosim sweep` and `zerosim plot` report them.
[[nodiscard]] RowFailures count_failures(const std::vector<SweepRow>& rows);

/// The host_node_peak_gib cell of sweep.csv and plan.csv: the worst node's host memory peak in GiB (2^30 B, three
/// decimals), or empty for a row that used no host memory (no offload), as for a row never simulated.
[[nodiscard]] std::string host_node_peak_gib_cell(const SweepRow& r);

/// The rows as a table for the terminal (`zerosim sweep` prints it on stdout): index, the axis values, status ("fits",
/// "fits, marginal (reason)", "oom", "host oom", "error", "invalid"), step time s, tokens/s, MFU %, nvidia-smi and
/// capacity GiB, and the node's host peak GiB when a row used host memory; a collective-bound row's step time is
/// marked "+", explained by a line under the table (collective_bound_mark_note). At most `max_rows` rows, then one
/// line saying how many more are in sweep.csv.
[[nodiscard]] std::string sweep_console_table(const std::vector<std::string>& axis_keys,
                                              const std::vector<SweepRow>& rows, std::size_t max_rows);

/// One compact JSON object per row (no line break), and back. The object has the fields of SweepRow plus "status"
/// (row_status); step_time_s, tokens_per_s and mfu are null for an OOM row without a steady-state step, as the CSV
/// leaves them empty. row_from_json throws zerosim::Error on bad input.
[[nodiscard]] std::string row_to_json(const SweepRow& r);
[[nodiscard]] SweepRow row_from_json(const std::string& text);

/// One line of a sweep's journal.jsonl: row_to_json's object plus `zerosim_build` (r.build), which row_from_json and
/// parse_journal read back into SweepRow::build ("" when absent). A resumed sweep reuses only rows of its own build.
[[nodiscard]] std::string journal_record(const SweepRow& r);

/// Rows of a journal (one row_to_json per line). Lines that are not a row are skipped; a later row with the same key
/// replaces an earlier one. `bad_lines`, when given, receives the 1-based numbers of the skipped lines except a last
/// line without a newline (a write cut short by a crash, which is expected and says nothing): garbage, or JSON that is
/// not a row.
[[nodiscard]] std::vector<SweepRow> parse_journal(const std::string& text,
                                                  std::vector<std::size_t>* bad_lines = nullptr);

/// CSV (RFC 4180 quoting): index, key, one column per axis key (in `axis_keys` order), status (row_status), error,
/// step_time_s, tokens_per_s, mfu, gemm_utilization, world_size, peak_allocated_gib, peak_allocated_rank,
/// peak_reserved_gib, peak_reserved_rank, nvidia_smi_gib, capacity_gib, fits, oom_reason, then the step breakdown in
/// s: forward_s, backward_s, optimizer_s, other_compute_s, exposed_comm_s, exposed_offload_s, exposed_cpu_s,
/// idle_other_s, then alloc_retries, host_node_peak_gib, the breakdown's exposed_host_s and comm_in_flight_s, then
/// grad_accum and train_batch_size (sequences per optimizer step, b x GA x N_d; empty when not known), then
/// peak_allocated_at ("initialisation" when peak_allocated_gib was reached before step 0, else "step") and
/// steady_peak_allocated_gib (the peak over steps >= 1; empty when no step >= 1 began), exposed_offload_pcie_s,
/// exposed_offload_nvme_s, overlap_comm, marginal_reason and collective_bound (true / false; empty without a step
/// time): columns added later come last, so that the earlier ones keep their places. GiB = 2^30 B. Rows in the order
/// given.
[[nodiscard]] std::string sweep_csv(const std::vector<std::string>& axis_keys, const std::vector<SweepRow>& rows);

/// The sweep JSON: {zerosim_version, scenario, axes, points_total, shard: "i/n", rows: [...]}.
struct SweepTable {
  std::string scenario;
  std::vector<std::string> axis_keys;
  std::size_t points_total = 0;
  Shard shard;
  std::vector<SweepRow> rows; ///< sorted by index
  std::vector<std::string> sets; ///< the --set overrides every point ran with (key=value), sorted
  /// sweep_fingerprint() of the scenario file and the sweep definition; empty in sweeps written before it existed.
  std::string fingerprint;
  /// The zerosim release whose build computed the rows (version(); `zerosim sweep` sets it, merge_sweeps takes the
  /// parts' one, so that it names the release of zerosim_build), as sweep_from_json reads it ("" when absent);
  /// sweep_json writes this build's version() when it is "".
  std::string zerosim_version;
  /// The build that computed the rows (analysis::build_id(); `zerosim sweep` sets it, merge_sweeps takes the parts'
  /// one); "" in sweeps written before it was recorded, and then sweep_json leaves the field out.
  std::string zerosim_build;
};
[[nodiscard]] std::string sweep_json(const SweepTable& t);
/// Throws zerosim::Error on malformed input.
[[nodiscard]] SweepTable sweep_from_json(const std::string& text);

/// Joins shard tables of one sweep into one (shard 0/1, rows sorted by index). Throws zerosim::Error when the
/// tables disagree on scenario, axes, points_total or --set overrides, or two rows with the same index differ in key,
/// or when two tables were computed by different builds (zerosim_build; "" counts as a build of its own) or releases
/// (zerosim_version, which two sweep.json files written before build ids can differ in), which would put two timing
/// models in one table: the message names both builds (releases) and, when `names` gives one per part (the
/// directories or files read), both parts. The result keeps the parts' zerosim_version and zerosim_build. `missing`
/// receives the indices no table has.
[[nodiscard]] SweepTable merge_sweeps(const std::vector<SweepTable>& parts, std::vector<std::size_t>& missing,
                                      const std::vector<std::string>& names = {});

/// How messages name a build: the id, or "an unrecorded build" for "" (outputs of a zerosim before build ids).
[[nodiscard]] std::string build_name(const std::string& build);

} // namespace zerosim::analysis
