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
  zerosim list
      list the model, GPU and topology presets and the collective algorithms
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
    throw zerosim::cli::UsageError("unknown command '" + cmd + "' (commands: run, list; see 'zerosim --help')");
  } catch (const std::exception& e) {
    std::cerr << "zerosim: " << zerosim::cli::one_line(e.what()) << std::endl;
    return 2;
  } catch (...) {
    std::cerr << "zerosim: unknown error" << std::endl;
    return 2;
  }
}
