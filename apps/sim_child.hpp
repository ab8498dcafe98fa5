// One simulation per forked child process (SimGrid's Engine is a process singleton; DESIGN.md "Rules of the house"),
// shared by `zerosim run` (one child at a time) and `zerosim sweep` / `zerosim plan` (up to --jobs at once).
// Implemented in apps/run_command.cpp.
#pragma once

#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <sys/types.h>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace zerosim::cli {

/// A simulation running in a child: its pid and the read end of its result pipe.
struct SimChild {
  pid_t pid = -1;
  int fd = -1;
};

/// Forks a child that simulates `v`, writes the output files `v.scenario.outputs` enables into `dir`, and sends its
/// summary up the pipe ('S' + summary JSON, 'E' + one-line message, or 'W' + one-line message when the simulation
/// ran but an output file could not be written). Throws zerosim::Error when pipe or fork fail.
/// The first call installs zerosim's SIGINT handler (unless SIGINT is ignored): on Ctrl-C the process prints
/// "zerosim: interrupted" on stderr, interrupts the children not yet reaped by collect_simulation and dies of SIGINT
/// (exit status 130 in a shell); the children die of it quietly.
[[nodiscard]] SimChild start_simulation(const scenario::Variant& v, const std::string& dir);

/// The debugging environment variable ZEROSIM_DEBUG_SIMULATION_ERROR: when set to a non-empty TEXT, every simulation
/// child fails before simulating with the error TEXT (sent as 'E' + TEXT), as a generator or engine error would.
inline constexpr const char* kDebugSimulationErrorEnv = "ZEROSIM_DEBUG_SIMULATION_ERROR";

/// Reaps child `pid` (blocking in waitpid) given everything it wrote on its pipe (`msg`; the caller read it to EOF
/// and closed the fd). Returns true with `out` filled, else false with `why` (one line); `*write_failed`, when given,
/// is set to true when the failure was writing the output files ('W'), left as it is otherwise.
[[nodiscard]] bool collect_simulation(pid_t pid, const std::string& msg, analysis::RunSummary& out, std::string& why,
                                      bool* write_failed = nullptr);

/// Sets the line Ctrl-C prints instead of "zerosim: interrupted" (each ends with a newline): `none` when no variant
/// of this run finished, `finished` when one did. Call before the first start_simulation.
void set_interrupt_message(const std::string& none, const std::string& finished);

/// A command's private temporary directory, $TMPDIR/zerosim-COMMAND-XXXXXX (mkdtemp: a fresh name, mode 0700),
/// removed with everything in it (at most 4 levels deep) on scope exit and on Ctrl-C or SIGTERM, once the simulation
/// children are dead, so that no interrupted command leaves it behind: the one thing zerosim's interrupt handler
/// removes besides a run's own variant directories. At most 4 alive at once. Throws zerosim::Error naming `command` when it
/// cannot be created.
class TempDir {
 public:
  explicit TempDir(const std::string& command);
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir();
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::size_t slot_ = 0; ///< its slot among the directories the interrupt handler removes
};

/// Reads `fd` to EOF (retrying on EINTR).
[[nodiscard]] std::string read_to_eof(int fd);

/// How run_points shows its progress on stderr.
enum class Progress {
  NONE, ///< nothing
  BAR, ///< one line redrawn in place (a terminal)
  LINES ///< a plain line at most every progress_line_seconds() and at the end (a log file or a pipe)
};

/// Seconds between two progress lines where no bar is drawn (sweep and plan on a stderr that is not a terminal, a
/// long `run`): 30, or the environment's ZEROSIM_PROGRESS_SECONDS (for the tests; unset or empty: 30). Throws
/// UsageError naming the variable when it is set to anything but a number of seconds in (0, 86400]; run, sweep and
/// plan call it before any output exists, so a bad value stops them at once instead of being ignored.
[[nodiscard]] double progress_line_seconds();

/// Simulates `points` (keys[i] = point_key of points[i]) with up to `jobs` children at once; `make(i)` builds the
/// variant of points[i]. A ScenarioError from make (the loader rejects the combination) becomes that point's invalid
/// row, never simulated; any other throw its error row. Each finished row is appended to `journal` (one JSON line;
/// "" = no journal) as soon as it is known. `progress` counts from `already_done` of `total`. Returns the rows in the
/// order of `points`, whatever the completion order; `*simulated_out`, when given, is the number of points that ran a
/// simulation (the rest were rejected by make: invalid rows, or error rows of a scenario that failed to load).
/// Implemented in apps/sweep_command.cpp.
[[nodiscard]] std::vector<analysis::SweepRow> run_points(const std::vector<analysis::SweepPoint>& points,
                                                         const std::vector<std::string>& keys,
                                                         const std::function<scenario::Variant(std::size_t)>& make,
                                                         unsigned jobs, const std::string& journal, Progress progress,
                                                         std::size_t already_done, std::size_t total,
                                                         std::size_t* simulated_out = nullptr);

} // namespace zerosim::cli
