// The `zerosim` command: dispatches to its subcommands (run, list, collective, estimate, plot, report, sweep, merge,
// plan, largest, validate, diff; each in apps/<name>_command.cpp). An error is one line on stderr, "zerosim: <what>",
// exit 2; exit 75 when the output directory is in use by another zerosim run or sweep. kHelp's "exit status"
// lists every code (0, 1, 2, 3 for `run --check`, 75).
#include "analysis/version.hpp"
#include "apps/cli.hpp"
#include "apps/output_lock.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <vector>

namespace {

const char* kHelp = R"(zerosim - discrete-event simulator of data-parallel training with DeepSpeed ZeRO (SimGrid)

usage:
  zerosim run SCENARIO.yaml [--set key=value]... [--out DIR] [--quiet]
              [--check [--headroom H] [--max-step-time S [--time-margin F]]]
      simulate the scenario (each `compare:` variant in its own process); writes result.json, trace.json
      (Perfetto / chrome://tracing), memory.csv per variant and summary.json into DIR, prints a report;
      --check (a CI gate) adds a one-line verdict on stdout and exit 3 when a variant does not fit
  zerosim collective --topology T [--nodes N] --op all_reduce|all_gather|reduce_scatter --sizes 1KiB:16GiB
                     [--algorithm auto|ring|tree|hierarchical|nvls|direct] [--protocol auto|ll|ll128|simple|none]
                     [--fidelity flow|analytic|chunk] [--fold auto|on|off] [--timing nccl-tests|torch-loop]
                     [--set cluster.KEY=VALUE]... [--fit FILE]
      nccl-tests-style sweep of one collective: size, algorithm, protocol, time, algbw, busbw (--set changes a
      cluster or GPU key of the preset, e.g. --set cluster.nccl_channels=2)
  zerosim plot RUN_DIR|SWEEP_DIR [--out DIR] [--format png|svg]
      gnuplot pictures of a run (memory timeline per traced rank, step-time breakdown, peak memory by tag) or of a
      sweep (breakdown per point, tokens/s and MFU vs GPUs, peak memory vs micro-batch)
  zerosim sweep SCENARIO.yaml [--axis key=v1,v2,...]... [--zip key=v1,v2,...]... [--set key=value]...
                [--out DIR] [--jobs J] [--shard i/n] [--fresh] [--quiet]
      one simulation per point of the scenario's sweep: block (parallel, resumable); sweep.csv + sweep.json
  zerosim merge DIR... --out DIR
      join the outputs of `zerosim sweep --shard i/n` runs
  zerosim plan --model M --gpu G [--topology T] [--max-gpus N] [--tokens T] [--global-batch B] [--seq-len S]
               [--flash-attention|--eager-attention] [--headroom H] [--deadline D] [--max-step-time S]
               [--time-margin F] [--price-per-gpu-hour P] [--jobs J] [--top K]
               [--host-memory SIZE] [--exhaustive] [--csv FILE] [--json FILE] [--set KEY=VALUE]...
      capacity planning: ranked feasible (stage, offload, N_d, micro-batch, GA, checkpointing) plans
  zerosim largest SCENARIO.yaml [--key model.layers|training.micro_batch] [--max N] [--headroom H]
                  [--set key=value]...
      the largest model (layers at the preset's width) or micro-batch that still fits, per variant: gallops
      and bisects with one simulation per value tried
  zerosim validate [DIR|SCENARIO.yaml...] [--quiet] [--markdown]
      run the validation scenarios (default scenarios/validation/), compare their expect: claims with the
      simulation: reference, simulated, delta %, tolerance, pass/FAIL/gap, source (docs/validation.md)
  zerosim report RUN_DIR [--out FILE]
      one self-contained HTML page of a run (default RUN_DIR/report.html): summary, breakdown, peak
      attribution, the plots and a stream timeline of one step; opens offline
  zerosim diff RUN_A RUN_B | SWEEP_A SWEEP_B
      what changed between two runs (run directories or scenario files) and how much it moved step time
      (s), tokens/s, MFU and peak memory (GiB); two sweep directories: the --set overrides that differ, then
      per point (paired by its axis values) status, step time, tokens/s and peak memory A -> B
  zerosim list [--keys | --outputs [--json]]
      list the model, GPU and topology presets and the collective algorithms (--keys: every scenario key;
      --outputs: every output file's fields, --json as JSON)
  zerosim estimate (--params N [--largest-layer-params L] | --model PRESET|config.json | SCENARIO.yaml)
                   [--gpus-per-node G] [--nodes N] [--stage 2|3] [--formula current|pre-0.14.3]
      DeepSpeed's estimate_zero2/zero3_model_states_mem_needs tables (model states only, GiB)
  zerosim --help | --version

exit status: 0 ok (an out-of-memory run is a result: exit 0, 'fits ... no (OOM)', summary.fits false in
  result.json), 1 a simulation process failed or deadlocked (also: `plan` found no feasible plan, `largest` no
  fitting value, `merge` misses points, `validate` has a failed claim), 2 bad input (one line on stderr, nothing
  written) or outputs that could not be put in place (one line saying where they are; `run --check` prints its
  FAIL verdict first), 3 `run --check`: a variant does not fit or misses --headroom / --max-step-time (outputs
  written in full), 75 the output directory is in
  use by another zerosim run or sweep (try again later; nothing written)
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
      std::cout << "zerosim " << zerosim::analysis::version() << " (build " << zerosim::analysis::build_id() << ")\n";
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
    if (cmd == "sweep")
      return zerosim::cli::sweep_command(rest);
    if (cmd == "merge")
      return zerosim::cli::merge_command(rest);
    if (cmd == "plan")
      return zerosim::cli::plan_command(rest);
    if (cmd == "plot")
      return zerosim::cli::plot_command(rest);
    if (cmd == "validate")
      return zerosim::cli::validate_command(rest);
    if (cmd == "diff")
      return zerosim::cli::diff_command(rest);
    if (cmd == "report")
      return zerosim::cli::report_command(rest);
    if (cmd == "largest")
      return zerosim::cli::largest_command(rest);
    throw zerosim::cli::UsageError("unknown command '" + cmd +
                                   "' (commands: run, list, collective, estimate, plot, report, sweep, merge, plan, "
                                   "largest, validate, diff; see 'zerosim --help')");
  } catch (const zerosim::cli::OutputBusy& e) { // another run or sweep writes there: try again later
    std::cerr << "zerosim: " << zerosim::cli::one_line(e.what()) << std::endl;
    return zerosim::cli::kExitOutputBusy;
  } catch (const std::exception& e) {
    std::cerr << "zerosim: " << zerosim::cli::one_line(e.what()) << std::endl;
    return 2;
  } catch (...) {
    std::cerr << "zerosim: unknown error" << std::endl;
    return 2;
  }
}
