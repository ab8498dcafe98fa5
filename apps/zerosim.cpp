// The `zerosim` command. Subcommands: run, list. Every error is one line on stderr, "zerosim: <what>", exit 2.
#include "analysis/version.hpp"
#include "apps/cli.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char* kHelp = R"(zerosim - discrete-event simulator of data-parallel training with DeepSpeed ZeRO (SimGrid)

usage:
  zerosim run SCENARIO.yaml [--set key=value]... [--out DIR] [--quiet]
      simulate the scenario (each `compare:` variant in its own process); writes result.json, trace.json
      (Perfetto / chrome://tracing), memory.csv per variant and summary.json into DIR, prints a report
  zerosim collective --topology T [--nodes N] --op all_reduce|all_gather|reduce_scatter --sizes 1KiB:16GiB
                     [--algorithm auto|ring|tree|hierarchical] [--protocol auto|ll|ll128|simple|none]
                     [--fidelity flow|analytic]
      nccl-tests-style sweep of one collective: size, algorithm, protocol, time, algbw, busbw
  zerosim list
      list the model, GPU and topology presets and the collective algorithms
  zerosim estimate (--params N [--largest-layer-params L] | --model PRESET|config.json | SCENARIO.yaml)
                   [--gpus-per-node G] [--nodes N] [--stage 2|3] [--formula current|pre-0.14.3]
      DeepSpeed's estimate_zero2/zero3_model_states_mem_needs tables (model states only, GiB)
  zerosim --help | --version

exit status: 0 ok, 1 a simulation process failed, 2 bad input (one line on stderr, nothing written)
)";

} // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty())
      throw zerosim::cli::UsageError("missing command (try 'zerosim --help')");
    const std::string& cmd = args.front();
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::cout << kHelp;
      return 0;
    }
    if (cmd == "--version" || cmd == "-V" || cmd == "version") {
      std::cout << "zerosim " << zerosim::analysis::version() << "\n";
      return 0;
    }
    if (cmd == "run")
      return zerosim::cli::run_command(rest);
    if (cmd == "list")
      return zerosim::cli::list_command(rest);
    if (cmd == "estimate")
      return zerosim::cli::estimate_command(rest);
    if (cmd == "collective")
      return zerosim::cli::collective_command(rest);
    throw zerosim::cli::UsageError("unknown command '" + cmd + "' (commands: run, list, collective, estimate; see 'zerosim --help')");
  } catch (const std::exception& e) {
    std::cerr << "zerosim: " << zerosim::cli::one_line(e.what()) << std::endl;
    return 2;
  } catch (...) {
    std::cerr << "zerosim: unknown error" << std::endl;
    return 2;
  }
}
