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
/// [--fidelity F]`: an nccl-tests-style table (size, algorithm, protocol, time, algbw, busbw), one simulation per
/// size in a forked child. Returns 0, or 1 when a size's simulation failed. Throws UsageError / ScenarioError on bad
/// input before anything is printed.
int collective_command(const std::vector<std::string>& args);

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
