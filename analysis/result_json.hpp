// result.json and summary.json: the machine-readable results of a run. Units are in the key names (`_s`, `_bytes`,
// `_gib` with GiB = 2^30 B, `_tflops` = 1e12 FLOP/s). Key order is fixed (nlohmann's std::map), so output is
// deterministic.
#pragma once

#include "analysis/summary.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"

#include <string>
#include <vector>

namespace zerosim::analysis {

/// The text of result.json: {zerosim_version, variant, scenario (every resolved field), summary, peak_attribution
/// ([{tag, gib, knob}], analysis/attribution.hpp), step_times_s,
/// phase_breakdown, memory_per_rank, host_memory_per_rank, collectives (rank 0, summed over every step, warm-up
/// included), collectives_per_step (rank 0, one step: RunSummary::step_traffic, with its "step"; null without a
/// completed step), copies_bytes, oom, diagnostics}. Each entry of "steps" carries its own "collectives".
[[nodiscard]] std::string result_json(const scenario::Scenario& sc, const std::string& variant,
                                      const RunSummary& summary, const trace::RunResult& run);

/// Writes result_json(...) to `path` atomically (path.tmp + rename). Throws zerosim::Error on I/O failure.
void write_result_json(const std::string& path, const scenario::Scenario& sc, const std::string& variant,
                       const RunSummary& summary, const trace::RunResult& run);

/// Every resolved field of `sc` that decides what is simulated, as compact JSON text: result.json's "scenario"
/// object without the paths its inputs were read from (`file`, `zero.deepspeed_config`, `model.source`), whose
/// spelling depends on the working directory; what was read from those files is in the other fields. Equal texts
/// simulate the same, wherever the files are and however their paths were spelled.
[[nodiscard]] std::string simulated_scenario_text(const scenario::Scenario& sc);

/// Every resolved field of cluster `c`, its GPU and CPU included, as compact JSON text: result.json's "cluster",
/// "gpu" and "cpu" objects of the scenario, without the cluster's and its NVMe's labels (ClusterSpec::name,
/// NvmeSpec::name: the same keys set in the file or by --set label differently). Equal texts: the same cluster.
[[nodiscard]] std::string cluster_text(const scenario::ClusterSpec& c);

/// The "summary" object of result.json as text (compact), and back. summary_from_json throws zerosim::Error on
/// malformed input. Round trip: summary_from_json(summary_json(s)) == s field by field.
[[nodiscard]] std::string summary_json(const RunSummary& s);
[[nodiscard]] RunSummary summary_from_json(const std::string& text);
/// The run summary stored under "summary" in `file` (a result.json, or a variant of summary.json): `summary_text` is
/// that object as text, "" when the key is absent or not an object. Throws zerosim::Error 'FILE: no "summary"
/// object' or 'FILE: malformed summary (...)'. `zerosim report` and `zerosim plot` accept a run through it alike.
[[nodiscard]] RunSummary summary_in_file(const std::string& summary_text, const std::string& file);

/// summary.json of a multi-variant run: {zerosim_version, scenario, variants: [{label, dir, summary}]}.
[[nodiscard]] std::string summary_file_json(const std::string& scenario_name, const std::vector<VariantSummary>& v);
void write_summary_json(const std::string& path, const std::string& scenario_name,
                        const std::vector<VariantSummary>& v);

/// The directory inside a run's output directory where `zerosim run` writes its variants until the run finishes;
/// they replace the previous run's outputs only then, so an interrupted re-run leaves those untouched. Made when a
/// variant writes its first file (apps/run_command.cpp child_main), so a run killed before then leaves none.
inline constexpr const char* kUnfinishedRunDir = ".zerosim-partial";

} // namespace zerosim::analysis
