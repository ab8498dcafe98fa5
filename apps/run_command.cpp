// `zerosim run`: load and validate the scenario (every input error surfaces here, before any output exists), then
// simulate each variant in a forked child process -- SimGrid's Engine is a process singleton, so one simulation per
// process (DESIGN.md "Rules of the house") -- and report.
#include "analysis/chrome_trace.hpp"
#include "analysis/console.hpp"
#include "analysis/memory_csv.hpp"
#include "analysis/result_json.hpp"
#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"
#include "apps/checked_scenario.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/output_lock.hpp"
#include "apps/sim_child.hpp"
#include "sim/engine/engine.hpp"
#include "sim/engine/memory_pool.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/cpu_adam.hpp"
#include "sim/zero/stage3_generator.hpp"
#include "sim/zero/zero_program.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

/// Output files of one variant (run_variant writes them; kVariantFiles lists them).
constexpr const char* kResultJson = "result.json";
constexpr const char* kTraceJson = "trace.json";
constexpr const char* kMemoryCsv = "memory.csv";

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Returns false on error.
bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    done += static_cast<std::size_t>(n);
  }
  return true;
}

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::string variant_name(const scenario::Variant& v) {
  return v.label.empty() ? std::string("'") + v.scenario.name + "'" : "'" + v.label + "'";
}

/// The child's whole job: simulate one variant, write its files into `dir`, send its summary up the pipe.
/// Protocol on the pipe: 'S' + summary JSON on success, 'E' + one-line message on failure, 'W' + one-line message
/// when an output file could not be written.
int child_main(const scenario::Variant& v, const std::string& dir, int fd) {
  try {
    // A debugging aid (README "Contributing"): the simulation fails at once with this text, as an error the generator
    // or the engine raises would. The loader rejects every input such an error could come from before a simulation
    // starts, so no scenario reaches that path; this shows how one would reach the user (tests/e2e).
    if (const char* e = std::getenv(kDebugSimulationErrorEnv); e != nullptr && *e != '\0')
      throw Error(e);
    const auto& sc = v.scenario;
    const workload::Workload wl = workload::build_workload(sc.model, sc.training);
    const bool offload = sc.zero.offload_optimizer != scenario::OffloadDevice::NONE;
    const int nccl_communicators = engine::nccl_communicators(sc.zero.stage, sc.training.process_groups);
    const double usable = sc.cluster.gpu.memory.value() - sc.simulation.cuda_context.value() -
                          engine::nccl_buffer_bytes(sc.cluster, nccl_communicators);
    // CPU-Adam time per parameter from the node's CPU (sim/zero/cpu_adam.hpp), shared by the node's ranks: the
    // node-bound rate (every core) and, when slower, the rate of the OpenMP threads its launcher gives each rank
    // (scenario::cpu_threads_per_rank); the host passes take the larger of the two bounds (offload_cpu.cpp HostPass).
    const int threads = scenario::cpu_threads_per_rank(sc.training, sc.cluster.cpu, sc.cluster.gpus_per_node);
    const double adam_s = offload ? zero::cpu_adam_seconds_per_param(sc.cluster.cpu, sc.cluster.gpus_per_node) : 0.0;
    const double thread_s =
        offload ? zero::cpu_adam_seconds_per_param(sc.cluster.cpu, sc.cluster.gpus_per_node, threads) : 0.0;
    zero::GeneratorInput in{wl, sc.zero, sc.cluster.world_size(), sc.simulation.steps, adam_s, sc.simulation.host,
                            // What PyTorch can use of the device (engine.hpp run_simulation's OOM rule).
                            usable,
                            workload::gemm_hardware(sc.cluster.gpu, wl.bytes_per_lp,
                                                    scenario::matmul_peak(sc.cluster.gpu, sc.training)),
                            offload ? zero::pinned_byte_weight(sc.cluster.cpu.numa_nodes, sc.cluster.gpus_per_node)
                                    : 1.0,
                            offload ? 1.0 / sc.cluster.cpu.page_fault_bandwidth.value() : 0.0};
    in.thread_seconds_per_param = thread_s > adam_s ? thread_s : 0.0;
    zero::GeneratorNotes notes;
    in.notes = &notes;
    const program::StepProgram prog = zero::generate_program(in);
    engine::EngineOptions eo;
    eo.fidelity = sc.simulation.fidelity;
    eo.on_oom = sc.simulation.on_oom;
    eo.trace_ranks = sc.outputs.trace_ranks;
    eo.fold = sc.simulation.fold;
    eo.cuda_context = sc.simulation.cuda_context.value();
    eo.nccl_communicators = nccl_communicators;
    eo.expandable_segments = sc.simulation.expandable_segments;
    eo.nvme_inflight_bytes = sc.zero.aio.inflight_bytes();
    eo.matmul_peak = scenario::matmul_peak(sc.cluster.gpu, sc.training).value();
    const trace::RunResult run = engine::run_simulation(sc.cluster, prog, eo);
    analysis::RunSummary s = analysis::summarize(sc, wl, run);
    // What set CPU Adam's time: the bound that priced most of its passes' seconds (GeneratorNotes), then the term of
    // that rate (cpu_adam.hpp).
    if (notes.cpu_adam_priced)
      s.cpu_adam_bound =
          zero::cpu_adam_bound_key(zero::cpu_adam_rate_bound(sc.cluster.cpu, sc.cluster.gpus_per_node,
                                                             notes.cpu_adam_thread_bound() ? threads : 0));
    // NVMe optimizer offload: what sizes its host memory (the sub-groups are packed as the generator packs them).
    if (sc.zero.stage == 3 && sc.zero.offload_optimizer == scenario::OffloadDevice::NVME) {
      analysis::OptimizerSwapBuffers b;
      b.count = sc.zero.optimizer_swap_buffer_count;
      b.largest_sub_group = zero::stage3_largest_sub_group(in, sc.zero.sub_group_size);
      b.smaller_sub_group_size = analysis::suggested_sub_group_size(b.largest_sub_group);
      if (b.smaller_sub_group_size > 0)
        b.smaller_largest_sub_group = zero::stage3_largest_sub_group(in, b.smaller_sub_group_size);
      analysis::note_optimizer_swap_buffers(s, sc, b);
    }
    const fs::path d(dir);
    // A file that cannot be written (a full disk, a permission) is reported as 'W', not 'E': the simulation ran, its
    // outputs are what failed, and `zerosim run` then keeps the previous run's outputs (run_command).
    try {
      // The variant's directory is made here, when its first file is written (zerosim run's staging directory does
      // not exist before: a run killed during the simulation, SIGKILL included, leaves none behind).
      if (sc.outputs.trace_json || sc.outputs.memory_csv || sc.outputs.result_json) {
        std::error_code ec;
        fs::create_directories(d, ec);
        if (ec)
          throw Error(dir + ": cannot create the output directory: " + ec.message());
      }
      // result.json last: a variant directory holding it is complete (report and plot name such directories after
      // an interruption), even when Ctrl-C ends the process between two files.
      if (sc.outputs.trace_json) {
        analysis::write_chrome_trace((d / kTraceJson).string(), run,
                                     v.label.empty() ? sc.name : sc.name + " " + v.label, sc.outputs.trace_steps);
      }
      if (sc.outputs.memory_csv)
        analysis::write_memory_csv((d / kMemoryCsv).string(), run, sc.outputs.trace_steps);
      if (sc.outputs.result_json)
        analysis::write_result_json((d / kResultJson).string(), sc, v.label, s, run);
    } catch (const std::exception& e) {
      write_all(fd, std::string("W") + e.what());
      return 4;
    }
    return write_all(fd, "S" + analysis::summary_json(s)) ? 0 : 3;
  } catch (const std::exception& e) {
    write_all(fd, std::string("E") + e.what());
    return 4;
  } catch (...) {
    write_all(fd, "Eunknown error");
    return 4;
  }
}

/// Reads the child's pipe to EOF; with `progress`, says on stderr every progress_line_seconds() that the variant is
/// still being simulated (a 4096-GPU run without folding takes minutes, and printed nothing meanwhile).
std::string read_with_progress(int fd, const scenario::Variant& v, bool progress) {
  if (!progress)
    return read_to_eof(fd);
  std::string out;
  char buf[65536];
  const auto t0 = std::chrono::steady_clock::now();
  const double every = progress_line_seconds();
  double next = every;
  for (;;) {
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::ceil(std::max(0.0, next - now) * 1000)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready == 0) {
      std::cerr << fmt::format("zerosim: still simulating variant {} ({} so far)\n", variant_name(v),
                               analysis::human_duration(next))
                << std::flush;
      next += every;
      continue;
    }
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

/// Runs one variant in a child process. Returns its summary, or prints one line naming the variant and returns
/// false when the child failed.
/// `write_failed` is set when the simulation ran but its output files could not be written.
bool run_variant(const scenario::Variant& v, const std::string& dir, analysis::RunSummary& out, bool progress,
                 bool& write_failed) {
  const SimChild child = start_simulation(v, dir);
  const std::string msg = read_with_progress(child.fd, v, progress);
  ::close(child.fd);
  std::string why;
  if (collect_simulation(child.pid, msg, out, why, &write_failed))
    return true;
  std::cerr << "zerosim: variant " << variant_name(v) << (why.rfind("lost", 0) == 0 ? ": " : " failed: ") << why
            << "\n";
  return false;
}

const char* kRunUsage =
    "usage: zerosim run SCENARIO.yaml [--set key=value]... [--out DIR] [--quiet] [--check "
    "[--headroom H] [--host-headroom H] [--max-step-time S [--time-margin F]]]";

/// Exit status of `run --check` when a variant does not fit, leaves less than --headroom (--host-headroom) free or
/// misses --max-step-time (1 and 2 keep their meanings: a failed simulation, bad input).
constexpr int kExitCheckFailed = 3;

/// The limits `run --check` holds each variant to (parsed before the simulation, so a bad one is an input error).
struct CheckLimits {
  std::vector<double> headroom; ///< B per variant (--headroom of its card, default kDefaultHeadroomPercent %; 0 = none)
  bool headroom_default = true; ///< no --headroom was given: `headroom` is the default share
  /// B per variant (--host-headroom of its node's host RAM, default analysis::kHostMarginalPercent % of
  /// cluster.host_memory as plan's; 0 = none, and without cluster.host_memory)
  std::vector<double> host_headroom;
  bool host_headroom_default = true; ///< no --host-headroom was given: `host_headroom` is the default share
  double max_step = 0; ///< s, 0 = none
  double margin = 1; ///< --time-margin: the simulated step is multiplied by it before --max-step-time
};

/// One variant's part of the verdict line: "" and `pass` filled when it passes, else why it fails. The rules are
/// plan's: fits (the simulation's OOM rule, GPU and host), the memory it cannot give back
/// (RunSummary::nvidia_smi_needed_bytes) leaves `headroom` (--headroom) free and
/// its node's host memory peak `host_headroom` (--host-headroom) of cluster.host_memory (leaves_headroom), and the
/// simulated steady step (x --time-margin) is within --max-step-time. A pass that is a marginal fit
/// (analysis::marginal_fit, as summary.json's `marginal` and plan's and largest's `~`) says so and why.
std::string check_variant(const analysis::RunSummary& s, double headroom, double host_headroom, const CheckLimits& lim,
                          std::string& pass) {
  std::vector<std::string> why;
  if (!s.fits) {
    why.push_back(s.oom_description.empty() ? std::string("does not fit") : "does not fit: " + s.oom_description);
  } else {
    if (std::string miss =
            headroom_miss(s.nvidia_smi_bytes, analysis::nvidia_smi_needed(s), s.capacity_bytes, headroom);
        !miss.empty())
      why.push_back(std::move(miss));
    if (std::string miss = host_headroom_miss(s.host_node_peak_bytes, s.host_capacity_bytes, host_headroom);
        !miss.empty())
      why.push_back(std::move(miss));
  }
  if (s.fits && lim.max_step > 0 && (s.steps_completed == 0 || lim.margin * s.step_time_s > lim.max_step))
    why.push_back(s.steps_completed == 0 ? std::string("misses --max-step-time: no step completed")
                                         : fmt::format("misses --max-step-time: {} > {:.4g} s",
                                                       margined_step_text(s.step_time_s, lim.margin), lim.max_step));
  if (!why.empty())
    return fmt::format("{}", fmt::join(why, "; "));
  const analysis::MarginalFit marginal = analysis::marginal_fit(s, headroom);
  // The host figure when the run used host memory (offload): "host RAM 121.40 of 128.00 GiB per node", or "... per
  // node, unlimited" without cluster.host_memory.
  const std::string host =
      s.host_node_peak_bytes > 0
          ? fmt::format(", host RAM {:.2f} {} per node{}", s.host_node_peak_bytes / kGiB,
                        s.host_capacity_bytes > 0 ? fmt::format("of {:.2f} GiB", s.host_capacity_bytes / kGiB)
                                                  : std::string("GiB"),
                        host_headroom > 0
                            ? fmt::format(", --host-headroom {:.2f} GiB kept free{}", host_headroom / kGiB,
                                          lim.host_headroom_default
                                              ? fmt::format(" (default {:g}%)", analysis::kHostMarginalPercent)
                                              : "")
                        : s.host_capacity_bytes > 0 ? std::string()
                                                    : std::string(" (unlimited: cluster.host_memory unset)"))
          : std::string();
  // The gate's figure when a retry gives memory back: "cannot give back 44.02 GiB", else nvidia-smi's alone.
  const std::string needed =
      s.nvidia_smi_bytes - analysis::nvidia_smi_needed(s) >= kMiB
          ? fmt::format(", cannot give back {:.2f} GiB of it", analysis::nvidia_smi_needed(s) / kGiB)
          : std::string();
  pass = fmt::format("fits (nvidia-smi {:.2f} of {:.2f} GiB{}{}{}{})", s.nvidia_smi_bytes / kGiB,
                     s.capacity_bytes / kGiB, needed,
                     headroom > 0 ? fmt::format(", --headroom {:.2f} GiB kept free{}", headroom / kGiB,
                                                lim.headroom_default
                                                    ? fmt::format(" (default {:g}%)", analysis::kDefaultHeadroomPercent)
                                                    : "")
                                  : "",
                     host, marginal.marginal ? "; marginal: " + analysis::marginal_detail(s, headroom) : std::string());
  if (lim.max_step > 0)
    pass += fmt::format(", step {} <= {:.4g} s", margined_step_text(s.step_time_s, lim.margin), lim.max_step);
  return {};
}

// ---- Ctrl-C. The terminal sends SIGINT to the whole foreground process group, simulation children included. A
// child dies of it without a word (its disposition is the one zerosim started with, normally the default; the
// engine keeps SimGrid from taking SIGINT over, sim/engine/engine.cpp). The parent prints one line, passes the
// signal on to children it alone may have received, and dies of SIGINT so that the shell sees an interrupted
// command (exit status 130), the convention for programs that catch SIGINT.

/// Pids of the simulation children alive now (0 = free slot). Lock-free atomics are async-signal-safe.
constexpr std::size_t kTrackedChildren = 1024;
std::array<std::atomic<pid_t>, kTrackedChildren> g_children{};
/// SIGINT's and SIGTERM's dispositions before zerosim installed its handler (what children get back).
struct sigaction g_sigint_before {};
struct sigaction g_sigterm_before {};

void track_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t free_slot = 0;
    if (slot.compare_exchange_strong(free_slot, pid))
      return;
  }
}

void untrack_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0))
      return;
  }
}

/// Variant directories this run created (they did not exist before it), as NUL-terminated paths; the first
/// g_fresh_count of them are live. Filled before g_fresh_count is raised, so the SIGINT handler reads only
/// finished strings.
std::vector<std::string> g_fresh_dirs;
std::atomic<std::size_t> g_fresh_count{0};
/// Per entry of g_fresh_dirs, the temporaries write_file_atomic may have left in it ("<dir>/result.json.tmp", ...,
/// kTmpPerDir of them), filled with it.
constexpr std::size_t kTmpPerDir = 3;
std::vector<std::string> g_fresh_tmp;
/// Per entry of g_fresh_dirs, "<dir>/result.json".
std::vector<std::string> g_fresh_result;

/// Appends `dir` to g_fresh_dirs with its temporaries (not yet live: g_fresh_count is raised by the caller).
void add_fresh_dir(const std::string& dir) {
  for (const char* f : {"result.json.tmp", "trace.json.tmp", "memory.csv.tmp"})
    g_fresh_tmp.push_back((fs::path(dir) / f).string());
  g_fresh_result.push_back((fs::path(dir) / kResultJson).string());
  g_fresh_dirs.push_back(dir);
}

/// Removes the temporaries of a file being written when the run stopped (an interrupted write_file_atomic), then the
/// directories of g_fresh_dirs that are still empty. rmdir(2) removes only an empty directory, so a directory
/// holding a finished variant's files stays. Async-signal-safe (unlink and rmdir only).
void remove_empty_fresh_dirs() {
  const std::size_t n = g_fresh_count.load();
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = 0; k < kTmpPerDir; ++k)
      ::unlink(g_fresh_tmp[i * kTmpPerDir + k].c_str());
    ::rmdir(g_fresh_dirs[i].c_str());
  }
}

/// The files a run writes into a variant directory (run_variant), all of which a later run removes.
constexpr std::array<const char*, 3> kVariantFiles{kResultJson, kTraceJson, kMemoryCsv};

/// Variant directories (relative, "." = out_dir itself) that the previous run into `out_dir` listed in its
/// summary.json: their outputs would otherwise sit beside this run's (or, if this run is interrupted, be taken for
/// its own). Empty when there is no readable summary.json; a listed path that is not a plain child directory is
/// skipped.
std::vector<std::string> previous_variant_dirs(const fs::path& out_dir) {
  std::vector<std::string> stale;
  std::error_code ec;
  if (!fs::is_regular_file(out_dir / "summary.json", ec))
    return stale;
  try {
    std::ifstream in(out_dir / "summary.json");
    const auto j = nlohmann::json::parse(in);
    for (const auto& v : j.at("variants")) {
      const std::string d = v.at("dir").get<std::string>();
      if (d == "." || (!d.empty() && d.find('/') == std::string::npos && d != ".."))
        stale.push_back(d);
    }
  } catch (const std::exception&) {
    stale.clear(); // not zerosim's summary.json: touch nothing
  }
  return stale;
}

/// Where commit_staged moves the previous run's outputs while this run's move in: inside the output directory (the
/// same file system, so every step is a rename), removed when the new outputs are in place.
constexpr const char* kPreviousRunDir = ".zerosim-previous";

/// The renames of one commit, undone in reverse order when a later one fails.
class MoveLog {
 public:
  /// Renames `from` to `to`, creating `to`'s missing parent directories (removed again by undo). Throws nothing.
  std::error_code move(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    std::vector<fs::path> missing;
    for (fs::path d = to.parent_path(); !d.empty() && !fs::exists(d, ec); d = d.parent_path())
      missing.push_back(d);
    fs::create_directories(to.parent_path(), ec);
    if (ec)
      return ec;
    for (auto it = missing.rbegin(); it != missing.rend(); ++it)
      made_.push_back(*it);
    fs::rename(from, to, ec);
    if (!ec)
      moves_.push_back({from, to});
    return ec;
  }

  /// Moves everything back, newest first, and removes the directories it created; returns the first path that could
  /// not be moved back with the reason ("" when all were).
  std::string undo() {
    std::string failed;
    for (auto it = moves_.rbegin(); it != moves_.rend(); ++it) {
      std::error_code ec;
      fs::rename(it->second, it->first, ec);
      if (ec && failed.empty())
        failed = it->first.string() + " (" + ec.message() + ")";
    }
    moves_.clear();
    for (auto it = made_.rbegin(); it != made_.rend(); ++it) {
      std::error_code ec;
      fs::remove(*it, ec); // only if empty
    }
    made_.clear();
    return failed;
  }

 private:
  std::vector<std::pair<fs::path, fs::path>> moves_;
  std::vector<fs::path> made_;
};

/// Replaces the previous run's outputs in `out_dir` with this run's, staged in `staging`: the variant files of each
/// directory of `rel_dirs` ("." = the directory itself; the variants that completed) and summary.json. All or
/// nothing, as far as renames allow: the previous run's variants (a variant that failed in this run included: its
/// old result belongs to the replaced run), summary.json and the report and pictures drawn from it first move aside
/// into kPreviousRunDir, then the new files move in, then the old ones are removed. What a failed variant left in
/// `staging` stays there (the caller removes what is empty). When a step fails every rename is undone and
/// zerosim::Error says in one line what failed, that `out_dir` keeps the previous outputs and that this run's are in
/// `staging` (or, if even the undo failed, where each run's files are).
void commit_staged(const fs::path& out_dir, const fs::path& staging, const std::vector<std::string>& rel_dirs) {
  const std::vector<std::string> stale = previous_variant_dirs(out_dir);
  const fs::path previous = out_dir / kPreviousRunDir;
  const auto rel_file = [](const std::string& dir, const std::string& f) {
    return dir == "." ? fs::path(f) : fs::path(dir) / f;
  };
  const auto exists_entry = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(p, ec));
  };
  const auto is_dir_entry = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(fs::symlink_status(p, ec));
  };
  // This run's files (relative to the staging and output directories), summary.json last: it marks a whole run.
  std::vector<fs::path> incoming;
  for (const auto& rel : rel_dirs)
    for (const char* f : kVariantFiles)
      if (exists_entry(staging / rel_file(rel, f)))
        incoming.push_back(rel_file(rel, f));
  incoming.emplace_back("summary.json");
  // The previous run's files, to move aside: its variants' files, summary.json, what `zerosim report` and `zerosim
  // plot` drew from it (report.html; step-breakdown, peak-memory and memory-<variant>-rank<r> pictures and their
  // gnuplot scripts), and whatever sits where this run's files go. Pictures only where a previous zerosim run was
  // (its summary.json listed variants): a directory without one holds the user's own files, whatever their names.
  std::set<fs::path> outgoing;
  for (const auto& d : stale)
    for (const char* f : kVariantFiles)
      if (const fs::path r = rel_file(d, f); exists_entry(out_dir / r) && !is_dir_entry(out_dir / r))
        outgoing.insert(r); // a directory of that name is not a zerosim output: it stays
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !stale.empty() && !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::string ext = it->path().extension().string();
    const std::string stem = it->path().stem().string();
    const bool picture = (ext == ".png" || ext == ".svg" || ext == ".gp") &&
                         (stem == "step-breakdown" || stem == "peak-memory" ||
                          (stem.rfind("memory-", 0) == 0 && stem.find("-rank") != std::string::npos));
    std::error_code ec2;
    if ((name == "report.html" || picture) && it->is_regular_file(ec2))
      outgoing.insert(name);
  }
  // A directory without a previous run's summary.json holds no earlier outputs to keep (trial 24 finding 10).
  const std::string kept =
      out_dir.string() +
      (exists_entry(out_dir / "summary.json") ? " keeps the previous run's outputs" : " is left as it was") +
      ", and this run's are in " + staging.string() + " (zerosim report and zerosim plot read it there)";
  for (const auto& r : incoming) {
    if (is_dir_entry(out_dir / r))
      throw Error((out_dir / r).string() + ": is a directory, where this run writes its " + r.filename().string() +
                  "; nothing was replaced: " + kept);
    if (exists_entry(out_dir / r))
      outgoing.insert(r);
  }

  MoveLog log;
  const auto fail = [&](const fs::path& path, const std::string& what, const std::error_code& why) {
    const std::string undone = log.undo();
    if (undone.empty()) {
      std::error_code rm;
      fs::remove_all(previous, rm);
      throw Error(path.string() + ": " + what + " (" + why.message() + "); nothing was replaced: " + kept);
    }
    throw Error(path.string() + ": " + what + " (" + why.message() + "), and " + undone + " could not be moved back: " +
                out_dir.string() + " is incomplete; the previous run's other outputs are in " + previous.string() +
                ", this run's in " + staging.string());
  };
  fs::remove_all(previous, ec); // what a run killed in the middle of its commit was replacing
  if (ec)
    fail(previous, "cannot remove an earlier run's set-aside outputs", ec);
  for (const auto& r : outgoing)
    if (const std::error_code e = log.move(out_dir / r, previous / r))
      fail(out_dir / r, "cannot move the previous run's output aside", e);
  for (const auto& r : incoming)
    if (const std::error_code e = log.move(staging / r, out_dir / r))
      fail(out_dir / r, "cannot move this run's output into place", e);
  // Done: the previous run's files go, and its variant directories that are now empty (a user's own files keep
  // theirs; a directory this run wrote again holds its files).
  fs::remove_all(previous, ec);
  for (const auto& d : stale)
    if (d != ".")
      fs::remove(out_dir / d, ec); // only if empty
}

/// SIGINT and SIGTERM held (blocked) for the object's lifetime; one that arrives meanwhile is delivered at its end.
class SignalsHeld {
 public:
  SignalsHeld() {
    sigset_t s;
    ::sigemptyset(&s);
    ::sigaddset(&s, SIGINT);
    ::sigaddset(&s, SIGTERM);
    ::sigprocmask(SIG_BLOCK, &s, &before_);
  }
  ~SignalsHeld() { restore(); }
  /// Puts back the signal mask from before (async-signal-safe; the destructor does it again, harmlessly).
  void restore() const { ::sigprocmask(SIG_SETMASK, &before_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t before_{};
};

/// The lines on_interrupt prints: without and with a finished variant of this run (finished strings: the handler
/// reads them through the atomic pointers only; set once per process, before any variant runs).
std::string g_note_text[2];
std::atomic<const char*> g_note_none{"zerosim: interrupted\n"};
std::atomic<const char*> g_note_finished{"zerosim: interrupted\n"};

void set_interrupt_notes(std::string none, std::string finished) {
  g_note_text[0] = std::move(none);
  g_note_text[1] = std::move(finished);
  g_note_none.store(g_note_text[0].c_str());
  g_note_finished.store(g_note_text[1].c_str());
}

/// Private temporary directories (TempDir) to remove with everything in them if the process is interrupted. A slot
/// is free (kTreeFree), being filled or emptied by the main program (kTreeBusy: the handler skips it), or live
/// (kTreeLive: the handler removes its path). The path is written only while the slot is busy, so the handler reads
/// finished strings; a slot is freed when its TempDir goes and may be taken again.
constexpr std::size_t kCleanupTrees = 4;
constexpr int kTreeFree = 0;
constexpr int kTreeBusy = 1;
constexpr int kTreeLive = 2;
std::array<std::string, kCleanupTrees> g_cleanup_tree{};
std::array<std::atomic<int>, kCleanupTrees> g_cleanup_tree_state{};

/// True when some cleanup-tree slot is live. Async-signal-safe.
bool any_cleanup_tree() {
  for (const auto& state : g_cleanup_tree_state)
    if (state.load() == kTreeLive)
      return true;
  return false;
}

/// Removes what the directory open as `fd` holds, descending `depth` levels into sub-directories, and closes `fd`.
/// Async-signal-safe: getdents64, unlinkat, openat, lseek and close are plain system calls (readdir is not: it
/// allocates). Entries removed while the listing is read may shift it, so a pass that removed something is redone.
void empty_directory_fd(int fd, int depth) {
  alignas(struct dirent64) char buf[4096];
  for (int pass = 0; pass < 4; ++pass) {
    bool removed = false;
    for (;;) {
      const ssize_t n = ::getdents64(fd, buf, sizeof buf);
      if (n <= 0)
        break;
      for (ssize_t off = 0; off < n;) {
        const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
        off += d->d_reclen;
        const char* name = d->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
          continue;
        if (::unlinkat(fd, name, 0) == 0) {
          removed = true;
          continue;
        }
        if (depth > 0) {
          const int sub = ::openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
          if (sub >= 0)
            empty_directory_fd(sub, depth - 1);
        }
        if (::unlinkat(fd, name, AT_REMOVEDIR) == 0)
          removed = true;
      }
    }
    if (!removed || ::lseek(fd, 0, SEEK_SET) != 0)
      break;
  }
  ::close(fd);
}

/// Removes the live TempDir directories with what they hold (at most 4 levels deep).
/// Async-signal-safe.
void remove_cleanup_trees() {
  for (std::size_t i = kCleanupTrees; i-- > 0;) {
    if (g_cleanup_tree_state[i].load() != kTreeLive)
      continue;
    const int fd = ::open(g_cleanup_tree[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
      empty_directory_fd(fd, 4);
    ::rmdir(g_cleanup_tree[i].c_str());
  }
}

/// True when a live fresh directory holds a result.json (written last: a finished variant). Async-signal-safe.
bool any_finished_variant() {
  const std::size_t n = g_fresh_count.load();
  for (std::size_t i = 0; i < n; ++i)
    if (::access(g_fresh_result[i].c_str(), F_OK) == 0)
      return true;
  return false;
}

/// The zerosim process that installed on_interrupt. A child forked a moment before Ctrl-C may still run the handler
/// it inherited (before it restores g_sigint_before): it must die quietly, not print or clean up.
std::atomic<pid_t> g_main_pid{0};

/// Only async-signal-safe calls (getpid, kill, waitpid, write, rmdir, unlinkat, sigaction, raise).
void on_interrupt(int sig) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigemptyset(&dfl.sa_mask);
  if (::getpid() != g_main_pid.load()) {
    ::sigaction(sig, &dfl, nullptr);
    ::raise(sig);
    return;
  }
  for (auto& slot : g_children)
    if (const pid_t pid = slot.load(); pid > 0)
      ::kill(pid, sig);
  if (any_cleanup_tree()) {
    // A child may be writing into a private temporary directory: wait until it is dead before removing the tree.
    for (auto& slot : g_children)
      if (const pid_t pid = slot.load(); pid > 0)
        while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
    remove_cleanup_trees();
  }
  remove_empty_fresh_dirs(); // the variants that never ran, and one killed before writing anything
  const char* note = any_finished_variant() ? g_note_finished.load() : g_note_none.load();
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, note, ::strlen(note));
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig); // delivered, with the default action, when this handler returns
}

/// Installs on_interrupt once for SIGINT (unless ignored: a background job started by a non-interactive shell) and
/// for SIGTERM (kill, a job scheduler's cancel), so that both stop the simulation children too.
void install_interrupt_handler() {
  static const bool installed = [] {
    g_main_pid = ::getpid();
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    // Both held while the handler runs: a SIGTERM during a SIGINT's waitpid must not start the handler again.
    ::sigemptyset(&sa.sa_mask);
    ::sigaddset(&sa.sa_mask, SIGINT);
    ::sigaddset(&sa.sa_mask, SIGTERM);
    ::sigaction(SIGTERM, nullptr, &g_sigterm_before);
    if (g_sigterm_before.sa_handler != SIG_IGN)
      ::sigaction(SIGTERM, &sa, nullptr);
    ::sigaction(SIGINT, nullptr, &g_sigint_before);
    if (g_sigint_before.sa_handler != SIG_IGN)
      ::sigaction(SIGINT, &sa, nullptr);
    return true;
  }();
  (void)installed;
}

/// Removes directory `dir` with everything in it (at most 4 levels deep) if the process is interrupted (SIGINT,
/// SIGTERM) from now on, once the simulation children are dead; installs the handler. Returns the slot to give
/// remove_interrupt_cleanup_tree. Throws zerosim::Error beyond kCleanupTrees directories registered at once.
std::size_t add_interrupt_cleanup_tree(const std::string& dir) {
  install_interrupt_handler();
  for (std::size_t i = 0; i < kCleanupTrees; ++i) {
    int free_slot = kTreeFree;
    if (!g_cleanup_tree_state[i].compare_exchange_strong(free_slot, kTreeBusy))
      continue;
    try {
      g_cleanup_tree[i] = dir;
    } catch (...) {
      g_cleanup_tree_state[i].store(kTreeFree);
      throw;
    }
    g_cleanup_tree_state[i].store(kTreeLive);
    return i;
  }
  throw Error("TempDir: more than " + std::to_string(kCleanupTrees) + " directories at once");
}

/// Stops removing the directory of `slot` on an interrupt and frees the slot. Call with SIGINT and SIGTERM held,
/// after removing the directory, as ~TempDir does.
void remove_interrupt_cleanup_tree(std::size_t slot) {
  if (slot < kCleanupTrees)
    g_cleanup_tree_state[slot].store(kTreeFree);
}

} // namespace

void set_interrupt_message(const std::string& none, const std::string& finished) {
  set_interrupt_notes(none, finished);
}

TempDir::TempDir(const std::string& command) {
  std::error_code ec;
  const fs::path base = fs::temp_directory_path(ec); // $TMPDIR (also $TMP, $TEMP, $TEMPDIR), else /tmp
  if (ec) {
    const char* env = std::getenv("TMPDIR");
    throw Error(command + ": cannot create a temporary directory in " + (env != nullptr ? env : "$TMPDIR") + ": " +
                ec.message());
  }
  std::string tmpl = (base / ("zerosim-" + command + "-XXXXXX")).string();
  if (::mkdtemp(tmpl.data()) == nullptr)
    throw Error(command + ": cannot create a temporary directory in " + base.string() + ": " + std::strerror(errno));
  path_ = tmpl;
  try {
    slot_ = add_interrupt_cleanup_tree(path_.string());
  } catch (...) {
    ::rmdir(tmpl.c_str());
    throw;
  }
}

TempDir::~TempDir() {
  // Signals held: Ctrl-C now is handled once the directory is gone and its slot is free, so the handler never
  // removes a path another process's mkdtemp may since have been given.
  const SignalsHeld held;
  std::error_code ec;
  fs::remove_all(path_, ec);
  remove_interrupt_cleanup_tree(slot_);
}

SimChild start_simulation(const scenario::Variant& v, const std::string& dir) {
  install_interrupt_handler();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0)
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  // SIGINT and SIGTERM held from fork until the child is tracked, so that the handler never misses it.
  const SignalsHeld held;
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(std::string("cannot fork a simulation process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::sigaction(SIGINT, &g_sigint_before, nullptr); // see on_interrupt: the child dies of Ctrl-C quietly
    ::sigaction(SIGTERM, &g_sigterm_before, nullptr);
    held.restore(); // a signal that came since fork is delivered now, with the restored disposition
    // If zerosim itself dies (SIGKILL included), its simulations die with it instead of running on orphaned.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent)
      ::_exit(5); // the parent died between fork and prctl
    ::close(fds[0]);
    const int code = child_main(v, dir, fds[1]);
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(code); // no atexit handlers: SimGrid's engine is torn down with the process
  }
  ::close(fds[1]);
  track_child(pid);
  return SimChild{pid, fds[0]};
}

std::string read_to_eof(int fd) { return read_all(fd); }

double progress_line_seconds() {
  const char* e = std::getenv("ZEROSIM_PROGRESS_SECONDS");
  if (e == nullptr || *e == '\0')
    return 30.0;
  char* end = nullptr;
  const double s = std::strtod(e, &end);
  // At most a day: the wait is handed to poll() in milliseconds as an int.
  if (end == e || *end != '\0' || !(s > 0 && s <= 86400))
    throw UsageError(std::string("ZEROSIM_PROGRESS_SECONDS=") + e +
                     ": expected seconds between progress lines, a number in (0, 86400] (unset: 30)");
  return s;
}

bool collect_simulation(pid_t pid, const std::string& msg, analysis::RunSummary& out, std::string& why,
                        bool* write_failed) {
  // Wait for the child's end without reaping it (WNOWAIT), forget it, then reap it: the SIGINT handler must never
  // see the pid of a reaped child, which the system may already have given to another process.
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  untrack_child(pid);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      why = "lost its simulation process";
      return false;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !msg.empty() && msg[0] == 'S') {
    try {
      out = analysis::summary_from_json(msg.substr(1));
      return true;
    } catch (const std::exception& e) {
      why = one_line(e.what());
      return false;
    }
  }
  if (write_failed != nullptr && !msg.empty() && msg[0] == 'W')
    *write_failed = true;
  if (!msg.empty() && (msg[0] == 'E' || msg[0] == 'W'))
    why = one_line(msg.substr(1)); // the child's own message, whatever its exit status
  else if (WIFSIGNALED(status))
    why = fmt::format("simulation process killed by signal {} ({})", WTERMSIG(status), ::strsignal(WTERMSIG(status)));
  else if (WIFEXITED(status))
    why = fmt::format("simulation process exited with status {}", WEXITSTATUS(status));
  else
    why = "simulation process failed";
  return false;
}

int run_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim run options");
  visible.add_options() //
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a scenario key, e.g. --set zero.stage=2 (value parsed as YAML; repeatable)") //
      ("out", po::value<std::string>(), "output directory (default: outputs.dir, else out/<scenario name>)") //
      ("quiet,q", po::bool_switch(), "do not print the report (files are still written)") //
      ("check", po::bool_switch(),
       "gate mode (CI): after the run, print one verdict line on stdout (also with --quiet), 'check: pass: ...' or "
       "'check: FAIL: ...', and exit 3 when a variant does not fit (or misses --headroom / --host-headroom / "
       "--max-step-time); the "
       "outputs are written in full either way") //
      ("headroom", po::value<std::string>(),
       "with --check (implies it): GPU memory a fit must leave free, as zerosim plan --headroom: a size (2GiB) "
       "or a percentage of the card (10%); default 5%, plan's; 0 keeps only the run's own OOM rule. Tested on the "
       "memory the run cannot give back (summary.json nvidia_smi_needed_bytes: the nvidia-smi peak less what a "
       "failed cudaMalloc's retry releases); a fit whose nvidia-smi peak misses it passes as marginal") //
      ("host-headroom", po::value<std::string>(),
       "with --check (implies it): host RAM a fit must leave free on each node at its host memory peak, as zerosim "
       "plan --host-headroom: a size (8GiB) or a percentage of cluster.host_memory (10%), which must be set; default "
       "10%, plan's, when cluster.host_memory is set (none without it); 0 keeps only the run's own host OOM rule") //
      ("max-step-time", po::value<std::string>(),
       "with --check (implies it): fail when the simulated steady step (the best case, as plan --max-step-time "
       "tests it; not the measured band's upper end, step_time_s x summary.measured_step_high) takes longer, e.g. "
       "10s or 800ms") //
      ("time-margin", po::value<std::string>(),
       "with --max-step-time: multiply the simulated step by this factor (1 to 100) before testing it, as plan "
       "--time-margin; e.g. summary.measured_step_high, the measured band's upper factor") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "scenario", "run", kRunUsage, vm))
    return 0;
  (void)progress_line_seconds(); // a bad ZEROSIM_PROGRESS_SECONDS is an error now, not when the first line is due
  // --set values first: `--set --out DIR` hands "--out" to --set and leaves DIR as a second positional argument,
  // which would otherwise be reported as an extra scenario file.
  std::vector<std::string> sets;
  if (vm.count("set"))
    sets = vm["set"].as<std::vector<std::string>>();
  for (const auto& s : sets) {
    if (s.rfind("--", 0) == 0)
      throw UsageError("run: --set needs key=value, got the option '" + s + "' (" + kRunUsage + ")");
    if (s.find('=') == std::string::npos || s.front() == '=')
      throw ScenarioError("<cli>", 0, s.empty() ? std::string("--set") : s, "--set needs key=value, got '" + s + "'");
  }
  check_distinct_sets(sets);
  if (!vm.count("scenario"))
    throw UsageError(std::string("run: missing the scenario file (") + kRunUsage + ")");
  const auto& positional = vm["scenario"].as<std::vector<std::string>>();
  if (positional.size() != 1)
    throw UsageError("run: expected one scenario file, got " + std::to_string(positional.size()) + " (" + kRunUsage +
                     ")");
  const std::string path = positional.front();
  if (vm.count("out") && vm["out"].as<std::string>().empty())
    throw UsageError("run: --out: empty path (give a directory, e.g. --out out/my-run)");

  // All validation happens here, before any output directory is created: the loader's, and the limits that need
  // the model's tensors (load_checked_scenario, shared with sweep and plan).
  const std::vector<scenario::Variant> variants = load_checked_scenario(path, sets);
  if (variants.empty())
    throw Error(path + ": the scenario expands to no variant");
  const scenario::Scenario& base = variants.front().scenario;
  if (!variants.front().note.empty())
    std::cerr << "zerosim: note: " << variants.front().note << "\n";
  // --check's limits, parsed before any output exists (a bad one is bad input: exit 2, nothing written).
  const bool check = vm["check"].as<bool>() || vm.count("headroom") || vm.count("host-headroom") ||
                     vm.count("max-step-time") || vm.count("time-margin");
  CheckLimits limits;
  for (const auto& v : variants)
    limits.headroom.push_back(
        vm.count("headroom")
            ? parse_headroom("run", vm["headroom"].as<std::string>(), v.scenario.cluster.gpu.memory.value(), v.label)
            : v.scenario.cluster.gpu.memory.value() * analysis::kDefaultHeadroomPercent / 100.0); // plan's
  limits.headroom_default = !vm.count("headroom");
  for (const auto& v : variants)
    limits.host_headroom.push_back(vm.count("host-headroom")
                                       ? parse_host_headroom("run", vm["host-headroom"].as<std::string>(),
                                                             v.scenario.cluster.host_memory.value(),
                                                             "cluster.host_memory (e.g. --set "
                                                             "cluster.host_memory=128GiB)",
                                                             v.label)
                                       : v.scenario.cluster.host_memory.value() * analysis::kHostMarginalPercent /
                                             100.0); // plan's default; 0 without cluster.host_memory
  limits.host_headroom_default = !vm.count("host-headroom");
  if (vm.count("max-step-time"))
    limits.max_step = parse_duration("run", "--max-step-time", vm["max-step-time"].as<std::string>(), "10s");
  if (vm.count("time-margin")) {
    if (!vm.count("max-step-time"))
      throw UsageError(
          "run: --time-margin needs --max-step-time (it lengthens the simulated step that "
          "--max-step-time tests)");
    limits.margin = parse_time_margin("run", vm["time-margin"].as<std::string>());
  }

  fs::path out_dir;
  if (vm.count("out"))
    out_dir = vm["out"].as<std::string>();
  else if (!base.outputs.dir.empty())
    out_dir = base.outputs.dir;
  else
    out_dir = fs::path("out") / (base.name.empty() ? std::string("scenario") : base.name);
  check_out_not_root("run", vm.count("out") ? "--out" : "outputs.dir", out_dir);

  // Variant sub-directories: none for a single run; otherwise sanitised labels, made unique with a suffix.
  std::vector<fs::path> dirs;
  std::vector<std::string> rel_dirs; // relative to out_dir, as summary.json records them
  std::set<std::string> used;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    if (variants.size() == 1) {
      dirs.push_back(out_dir);
      rel_dirs.emplace_back(".");
      continue;
    }
    std::string name = variant_dir_name(variants[i].label);
    if (name.empty())
      name = "variant-" + std::to_string(i);
    std::string unique = name;
    for (int k = 2; used.count(unique) != 0; ++k)
      unique = name + "-" + std::to_string(k);
    used.insert(unique);
    dirs.push_back(out_dir / unique);
    rel_dirs.push_back(unique);
  }
  // Every output target must be a directory, or absent, before hours of simulation are spent.
  for (const auto& d : dirs) {
    std::error_code ec;
    if (fs::exists(d, ec) && !fs::is_directory(d, ec))
      throw Error(d.string() + ": exists and is not a directory (choose another --out)");
  }
  // A sweep's directory (zerosim sweep): the run's files would sit among the sweep's, and `plot` / `report` would
  // take the directory for a run.
  if (analysis::holds_sweep_outputs(out_dir.string()))
    throw Error(out_dir.string() + ": holds a sweep's outputs (sweep.json, journal.jsonl); choose another --out");
  // The variants are written into a staging directory inside out_dir and moved into place when the run ends
  // (commit_staged), so an interrupted re-run leaves the previous run's outputs as they were. Remember the
  // directories this run creates: on Ctrl-C (on_interrupt) or a failure, those that received no file are removed
  // again; a directory that existed before the run is never touched. The handler is installed first so that a
  // Ctrl-C from here on finds the list.
  install_interrupt_handler();
  g_fresh_count.store(0);
  g_fresh_dirs.clear();
  g_fresh_tmp.clear();
  g_fresh_result.clear();
  // Reserved now: the handler may read the entries already counted while more are appended (no reallocation).
  g_fresh_dirs.reserve(dirs.size() + 2);
  g_fresh_tmp.reserve(kTmpPerDir * (dirs.size() + 2));
  g_fresh_result.reserve(dirs.size() + 2);
  const fs::path staging = out_dir / analysis::kUnfinishedRunDir;
  {
    std::error_code ec;
    if (!fs::exists(out_dir, ec)) // first, so that it is removed last (after the staging directory)
      add_fresh_dir(out_dir.string());
  }
  std::vector<analysis::VariantSummary> done;
  bool failed = false;
  std::vector<std::string> unwritten; // variants whose outputs could not be written (a full disk)
  bool sim_failed = false; // a variant failed other than writing its files (a killed or failing simulation)
  // One process writes into an output directory at a time (another run or sweep into the same --out would mix
  // their files); the lock is taken before anything in it is touched.
  {
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    if (ec)
      throw Error(out_dir.string() + ": cannot create the output directory: " + ec.message());
    if (!g_fresh_dirs.empty() && g_fresh_dirs.front() == out_dir.string())
      g_fresh_count.store(1);
  }
  const OutputLock lock(out_dir);
  // A sweep: block is read by `zerosim sweep` only (key table: "ignored by `zerosim run`"); say so rather than run
  // its base point in silence. Here, once the run goes ahead, so that an error above stays one line.
  // The file loaded above; should it have changed since, the note is skipped rather than the run failing here,
  // after its output directory exists.
  try {
    for (const auto& entry : YAML::LoadFile(path))
      if (entry.first.as<std::string>() == "sweep" && !entry.second.IsNull())
        std::cerr << "zerosim: note: " << path << ":" << entry.first.Mark().line + 1
                  << ": sweep: is read by `zerosim sweep` only; `zerosim run` simulates the scenario without it\n";
  } catch (const YAML::Exception&) {
  }
  {
    // What a killed run (SIGKILL, power loss) left in the staging directory is not this run's.
    std::error_code ec;
    fs::remove_all(staging, ec);
    if (ec)
      throw Error(staging.string() + ": cannot remove an earlier unfinished run's outputs: " + ec.message());
  }
  // What Ctrl-C prints: whether the previous run's outputs stayed, and, once a variant finished, where it is.
  const bool had_previous = fs::is_regular_file(out_dir / "summary.json");
  const std::string interrupted =
      had_previous ? "zerosim: interrupted; " + out_dir.string() + " keeps the previous run's outputs"
                   : std::string("zerosim: interrupted");
  set_interrupt_notes(interrupted + "\n",
                      interrupted +
                          (interrupted.find(';') == std::string::npos
                               ? "; this run's finished variants are in " + staging.string()
                               : " (this run's finished variants are in " + staging.string() + ")") +
                          "\n");
  std::vector<fs::path> staged;
  for (const auto& rel : rel_dirs)
    staged.push_back(rel == "." ? staging : staging / rel);
  add_fresh_dir(staging.string());
  if (variants.size() > 1)
    for (const auto& d : staged)
      add_fresh_dir(d.string());
  // The staging and variant directories are not made here but by each simulation when it writes its first file
  // (child_main), so a run killed before that (SIGKILL: no handler runs) leaves no empty staging directory. They
  // are live for the cleanup at once: rmdir of one not made yet does nothing. Whether they can be made is checked
  // now, before hours of simulation.
  if (::access(out_dir.c_str(), W_OK | X_OK) != 0)
    throw Error(out_dir.string() + ": cannot write in the output directory: " + std::strerror(errno));
  g_fresh_count.store(g_fresh_dirs.size());
  try {
    for (std::size_t i = 0; i < variants.size(); ++i) {
      analysis::RunSummary s;
      bool write_failed = false;
      if (run_variant(variants[i], staged[i].string(), s, !vm["quiet"].as<bool>(), write_failed)) {
        // A deadlock is a simulator defect, not a result: the outputs stay for inspection, the exit status is 1.
        for (const std::string& d : s.diagnostics)
          if (d.rfind("deadlock:", 0) == 0) {
            std::cerr << "zerosim: variant " << variant_name(variants[i]) << ": the simulation " << d
                      << " (an internal error; the outputs are kept)\n";
            failed = true;
            sim_failed = true;
          }
        done.push_back({variants[i].label, rel_dirs[i], std::move(s), i});
      } else {
        failed = true;
        if (write_failed)
          unwritten.push_back(variant_name(variants[i]));
        else
          sim_failed = true;
      }
    }
  } catch (...) {
    remove_empty_fresh_dirs();
    g_fresh_count.store(0);
    throw;
  }
  // --check: one verdict line on stdout, also under --quiet (a CI log's record), over the variants that completed,
  // on every way out once the simulations ran: `extra` names a failure after them (the move into --out).
  const auto print_verdict = [&](const std::string& extra) {
    std::vector<std::string> misses;
    std::vector<std::string> passes;
    for (const auto& v : done) {
      const std::string who = v.label.empty() ? std::string() : "'" + v.label + "': ";
      std::string pass;
      const std::string why =
          check_variant(v.summary, v.index < limits.headroom.size() ? limits.headroom[v.index] : 0.0,
                        v.index < limits.host_headroom.size() ? limits.host_headroom[v.index] : 0.0, limits, pass);
      (why.empty() ? passes : misses).push_back(who + (why.empty() ? pass : why));
    }
    if (sim_failed)
      misses.push_back("a simulation failed (see above)");
    if (!unwritten.empty())
      misses.push_back(fmt::format("the outputs of {} could not be written (see above)", fmt::join(unwritten, ", ")));
    if (!extra.empty())
      misses.push_back(extra);
    const bool miss = !misses.empty();
    std::cout << "check: " << (miss ? "FAIL: " : "pass: ") << fmt::format("{}", fmt::join(miss ? misses : passes, "; "))
              << "\n";
    std::cout.flush();
    return miss;
  };
  bool partial_left = false; // files of failed variants remain in the staging directory
  {
    // The previous run's outputs give way to this run's, if a variant completed: a run without one has no result to
    // replace them with (every simulation killed, a full disk), so they stay as they were. Ctrl-C waits until
    // summary.json is written: the directory then holds one whole run, never a mix.
    const SignalsHeld held;
    // A variant whose files could not be written (a full disk, a permission) failed for want of space, not of a
    // result: replacing the previous run would delete that variant's earlier, valid results for nothing. Nothing is
    // replaced; this run's finished variants stay in the staging directory with a summary.json (when it can be
    // written), where `zerosim report` and `zerosim plot` read them.
    if (!done.empty() && !unwritten.empty()) {
      try {
        std::error_code ec;
        fs::create_directories(staging, ec);
        if (!ec)
          analysis::write_summary_json((staging / "summary.json").string(), base.name, done);
      } catch (const Error&) {
      }
    } else if (!done.empty()) {
      try {
        std::error_code ec;
        fs::create_directories(staging, ec); // made by the first file written (none with every output off)
        if (ec)
          throw Error(staging.string() + ": cannot create the output directory: " + ec.message());
        analysis::write_summary_json((staging / "summary.json").string(), base.name, done);
        std::vector<std::string> completed;
        for (const auto& v : done)
          completed.push_back(v.dir);
        commit_staged(out_dir, staging, completed);
      } catch (const Error& e) {
        g_fresh_count.store(0);
        // The simulation is done and its outputs are kept in the staging directory: report it, then the failure.
        if (!vm["quiet"].as<bool>()) {
          std::cout << analysis::console_report(base, done);
          std::cout.flush();
        }
        if (check)
          print_verdict("the outputs could not be moved into " + out_dir.string() + ": " + e.what());
        throw;
      }
    }
    // What failed variants left: their temporaries go, and the directories left empty (the staging directory, and
    // the output directory if this run created it and nothing went into it). Their finished files stay.
    remove_empty_fresh_dirs();
    g_fresh_count.store(0);
    std::error_code ec;
    partial_left = fs::exists(staging, ec);
  }
  const bool held_back = !done.empty() && !unwritten.empty(); // nothing replaced: this run's outputs are in staging
  if (!vm["quiet"].as<bool>()) {
    std::cout << analysis::console_report(base, done);
    if (!done.empty() && !held_back)
      std::cout << "outputs in " << out_dir.string() << "\n";
    std::cout.flush();
  }
  // After the report, where it is seen (a note from the simulation would scroll away above it).
  for (const auto& v : done) {
    if (held_back)
      break;
    const fs::path trace = (out_dir / v.dir / kTraceJson).lexically_normal();
    std::error_code ec;
    const std::uintmax_t bytes = fs::file_size(trace, ec);
    if (!ec && static_cast<double>(bytes) > analysis::kLargeTraceBytes)
      std::cerr << analysis::large_trace_note(trace.string(), static_cast<double>(bytes),
                                              variants[v.index].scenario.outputs)
                << "\n";
  }
  if (done.empty())
    std::cerr << "zerosim: no variant completed; "
              << (had_previous ? out_dir.string() + " keeps the previous run's outputs" +
                                     (partial_left ? " (this run's partial outputs are in " + staging.string() + ")"
                                                   : std::string())
                  : partial_left ? "this run's partial outputs are in " + staging.string()
                                 : "nothing was written to " + out_dir.string())
              << "\n";
  else if (held_back)
    std::cerr << fmt::format(
        "zerosim: nothing was replaced: the outputs of {} could not be written; {}, and this "
        "run's finished variants are in {}\n",
        fmt::join(unwritten, ", "),
        had_previous ? out_dir.string() + " keeps the previous run's outputs" : out_dir.string() + " is left as it was",
        staging.string());
  else if (partial_left)
    std::cerr << "zerosim: the failed variants' partial outputs are in " << staging.string() << "\n";
  const bool check_failed = check && print_verdict("");
  return failed ? 1 : check_failed ? kExitCheckFailed : 0;
}

} // namespace zerosim::cli
