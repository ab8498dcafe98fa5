// Shared pieces of the `zerosim` command: the usage error type and the subcommand entry points.
#pragma once

#include "sim/error.hpp"

#include <string>
#include <vector>

namespace zerosim::cli {

/// Bad command-line usage (unknown option, missing argument). Printed as one line, exit status 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

/// `zerosim run SCENARIO [--set key=value]... [--out DIR] [--quiet]`; `args` excludes "run". Returns the exit
/// status (0 ok, 1 a variant's simulation process failed). Throws ScenarioError / UsageError / Error before any
/// output directory is created when the input is bad.
int run_command(const std::vector<std::string>& args);

/// `zerosim list`: presets grouped by kind, and the collective algorithms. Returns the exit status.
int list_command(const std::vector<std::string>& args);

/// `zerosim estimate (--params N [--largest-layer-params L] | --model REF | SCENARIO) [--gpus-per-node G] [--nodes N]
/// [--stage 2|3] [--formula current|pre-0.14.3] [--buffer-factor F]`: DeepSpeed's model-state estimator tables
/// (apps/estimate_command.cpp). Returns 0; throws UsageError / ScenarioError / Error on bad input.
int estimate_command(const std::vector<std::string>& args);

/// `zerosim collective --topology T [--nodes N] --op OP --sizes LO:HI [--algorithm A] [--protocol P]
/// [--fidelity F] [--set cluster.KEY=VALUE]...`: an nccl-tests-style table (size, algorithm, protocol, time, algbw, busbw), one simulation per
/// size in a forked child. Returns 0, or 1 when a size's simulation failed. Throws UsageError / ScenarioError on bad
/// input before anything is printed.
int collective_command(const std::vector<std::string>& args);

/// `zerosim plot RUN_DIR [--out DIR] [--format png|svg]`: memory timelines per traced rank, step-time breakdown
/// and peak memory by tag, drawn by gnuplot (apps/plot_command.cpp, analysis/plots.hpp). Prints the files written;
/// returns 0. Throws UsageError / Error (missing files, gnuplot missing or failing).
int plot_command(const std::vector<std::string>& args);

/// `zerosim sweep SCENARIO [--axis key=v1,v2]... [--zip key=v1,v2]... [--set k=v]... [--out DIR] [--jobs J]
/// [--shard i/n] [--fresh] [--quiet]` (apps/sweep_command.cpp): one simulation per point, resumable; writes
/// sweep.csv, sweep.json and journal.jsonl. Returns 0, or 1 when a point failed (its row carries the error).
/// Throws ScenarioError / UsageError on a bad sweep definition before anything runs.
int sweep_command(const std::vector<std::string>& args);

/// `zerosim merge DIR|sweep.json... --out DIR`: joins shard outputs of one sweep. Returns 0, or 1 when points are
/// missing. Throws zerosim::Error when the inputs come from different sweeps.
int merge_command(const std::vector<std::string>& args);

/// `zerosim plan --model M --gpu G [--max-gpus N] [--tokens T | --global-batch B] [--deadline D] [--max-step-time S]
/// [--time-margin F] [--price-per-gpu-hour P]` (apps/plan_command.cpp): capacity planning, a ranked table of
/// feasible plans (--time-margin F: the wall-clock figures and limits use F x the simulated step).
/// Returns 0 (1 when no plan fits). Throws UsageError / ScenarioError on bad input.
int plan_command(const std::vector<std::string>& args);

/// `zerosim largest SCENARIO [--key model.layers|training.micro_batch] [--max N] [--headroom H] [--set k=v]...`
/// (apps/largest_command.cpp, analysis/largest.hpp): per variant, the largest value of the key at which the run fits
/// (its nvidia-smi peak, plus --headroom, within the GPU; the host memory within cluster.host_memory), one
/// simulation per value tried. Returns 0, or 1 when no value fits some variant. Throws UsageError / ScenarioError
/// on bad input before anything runs; Error when a probe's simulation fails.
int largest_command(const std::vector<std::string>& args);

/// `zerosim validate [DIR|SCENARIO.yaml...] [--quiet]` (apps/validate_command.cpp): runs the validation scenarios
/// (default scenarios/validation/) and compares their `expect:` claims with the simulation. Returns 0 when every
/// claim passes or is a documented known gap, 1 otherwise. Throws ScenarioError / UsageError on bad input before
/// anything runs.
int validate_command(const std::vector<std::string>& args);

/// `zerosim diff RUN_A RUN_B` (apps/diff_command.cpp, analysis/run_diff.hpp): the scenario keys that differ and the
/// moves of step time (s), tokens/s, MFU and peak memory (GiB) per variant. A run is a `zerosim run` output
/// directory or a scenario file (simulated first into a temporary directory). `zerosim diff SWEEP_A SWEEP_B`, two
/// `zerosim sweep` output directories (sweep.json): the --set overrides that differ, then per point paired by its axis
/// values the status, step time (s), tokens/s and peak memory (GiB) A -> B, and the points on one side only. Returns
/// 0; throws UsageError / Error "diff: ..." (missing path, not a run directory, malformed JSON or sweep.json, failed
/// simulation, a sweep against a run, two sweeps or comparisons of which nothing pairs).
int diff_command(const std::vector<std::string>& args);

/// `zerosim report RUN_DIR [--out FILE]` (apps/report_command.cpp, analysis/report.hpp): one self-contained HTML
/// page of a run, default RUN_DIR/report.html, written atomically. Prints the file written; returns 0. Throws
/// UsageError (bad arguments) / Error naming the missing or malformed file of the run directory.
int report_command(const std::vector<std::string>& args);

/// Output sub-directory name of a variant: "zero.stage=2" -> "stage-2" (last key segment, '-', value; characters
/// outside [A-Za-z0-9._-] become '-'). "" for an empty label.
[[nodiscard]] std::string variant_dir_name(const std::string& label);

/// `s` with line breaks replaced by spaces: every error the CLI prints is exactly one line.
[[nodiscard]] inline std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

} // namespace zerosim::cli
