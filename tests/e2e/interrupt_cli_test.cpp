// End-to-end test of what an interrupted multi-variant `zerosim run` leaves behind. A run writes its variants into
// OUT/.zerosim-partial and moves them into OUT when it finishes. Ctrl-C after the first variant finished removes
// the directories of the variants that never wrote a file (but not one that existed before the run) and writes no
// summary.json; `zerosim report` / `zerosim plot` on the run directory then say that the run did not finish and name
// the finished variant's directory. An interrupted re-run leaves the previous run's outputs as they were.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;

namespace {

/// GPT-2 XL, ZeRO stage 3, without folding (every rank simulated): one DGX H100 node (8 ranks) finishes in a
/// fraction of a second, 64 nodes (512 ranks) take many seconds, so the run is still inside variant 1 when the
/// test presses Ctrl-C right after variant 0's result.json appears.
const char* kScenario =
    "name: interrupt\nmodel: gpt2-xl\ntraining: {micro_batch: 1, seq_len: 1024, precision: bf16}\n"
    "zero: {stage: 3}\ncluster: {topology: dgx-h100, nodes: 1}\n"
    "simulation: {steps: 2, fidelity: flow, fold: off}\n"
    "outputs: {trace_json: false, memory_csv: false}\n"
    "compare:\n  cluster:\n"
    "    - {topology: dgx-h100, nodes: 1}\n"
    "    - {topology: dgx-h100, nodes: 64}\n"
    "    - {topology: dgx-h100, nodes: 63}\n"
    "    - {topology: dgx-h100, nodes: 62}\n";

/// The variant directories `zerosim run` names after the compare labels (apps/variant_dir.cpp; compare values
/// are distinct: the loader rejects a repeated one).
const char* kFirst = "cluster-topology-dgx-h100-nodes-1";
const char* kSecond = "cluster-topology-dgx-h100-nodes-64";
const char* kThird = "cluster-topology-dgx-h100-nodes-63";
const char* kFourth = "cluster-topology-dgx-h100-nodes-62";
/// Where the variants wait until the run finishes (analysis/result_json.hpp kUnfinishedRunDir).
const char* kStaging = ".zerosim-partial";

/// Starts zerosim with `args` in `dir` as a shell's foreground job would: in its own process group, with `sig` at
/// its default disposition, stderr (and, with `both`, stdout) into `err_file`, and `env` ("NAME=value", or "")
/// added to its environment. Returns its pid (also the group id).
pid_t start_in_own_group(const std::vector<std::string>& args, const fs::path& dir, const fs::path& err_file, int sig,
                         const std::string& env = "", bool both = false) {
  std::vector<std::string> argv_s{ZEROSIM_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::string env_s = env;
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(sig, SIG_DFL);
    if (!env_s.empty())
      ::putenv(env_s.data());
    const int fe = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fe < 0 || ::chdir(dir.c_str()) != 0)
      ::_exit(127);
    if (both)
      ::dup2(fe, 1);
    ::dup2(fe, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

/// Starts `zerosim run s.yaml --out out --quiet` in `dir` (start_in_own_group).
pid_t start_run_in_own_group(const fs::path& dir, const fs::path& err_file, int sig) {
  return start_in_own_group({"run", "s.yaml", "--out", "out", "--quiet"}, dir, err_file, sig);
}

/// Sends `sig` to the process group `pid` and returns its wait status; FAILs (after killing it) when it has not
/// stopped within 30 s.
int signal_and_wait(pid_t pid, int sig) {
  ::killpg(pid, sig);
  int status = 0;
  const auto wait_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > wait_deadline) {
      ::killpg(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("zerosim did not stop within 30 s of signal " << sig);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return status;
}

/// Starts the compare run of kScenario into DIR/out as a foreground job, presses Ctrl-C once the first variant's
/// result.json exists in the staging directory (written atomically: once it exists, it is complete) while the
/// second variant (64 nodes) still runs, and returns the wait status. FAILs (after killing the run) on a timeout.
int run_and_interrupt_after_first_variant(const fs::path& dir, const fs::path& err_file) {
  const fs::path first = dir / "out" / kStaging / kFirst / "result.json";
  const pid_t pid = start_run_in_own_group(dir, err_file, SIGINT);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  bool exited = false;
  while (!fs::exists(first) && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!exited && !fs::exists(first)) {
    ::killpg(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL("variant 0 wrote no result.json within 30 s");
  }
  REQUIRE_FALSE(exited); // variant 1 (64 nodes) must still be running
  return signal_and_wait(pid, SIGINT); // Ctrl-C in a terminal
}

/// The entries of `dir` whose name starts with `prefix` (a command's mkdtemp directories).
std::vector<fs::path> in_tmp(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> found;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0)
      found.push_back(e.path());
  return found;
}

/// Waits until the started command `pid` has created `dir`/PREFIX-XXXXXX/`file`, lets it run on 300 ms, presses
/// Ctrl-C and returns the wait status. FAILs (after killing it) when the file does not appear within 30 s or the
/// command exits first.
int interrupt_once_written(pid_t pid, const fs::path& dir, const std::string& prefix, const std::string& file,
                           const fs::path& err_file) {
  const auto written = [&] {
    for (const auto& p : in_tmp(dir, prefix))
      if (fs::exists(p / file))
        return true;
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  int status = 0;
  bool exited = false;
  while (!written() && std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (exited || !written()) {
    ::killpg(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL("no " << prefix << "*/" << file << " in " << dir << " within 30 s\n" << slurp(err_file));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // into the next simulation
  return signal_and_wait(pid, SIGINT);
}

} // namespace

TEST_CASE("zerosim run: Ctrl-C removes the empty variant directories and report names the finished ones", "[e2e]") {
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << kScenario;
  const fs::path out = tmp.path() / "out";
  // A directory that existed before the run is never removed, even when the run leaves it empty.
  fs::create_directories(out / kFourth);

  const fs::path err_file = tmp.path() / "stderr.txt";
  const int status = run_and_interrupt_after_first_variant(tmp.path(), err_file);
  INFO("stderr: " << slurp(err_file));
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  // A variant finished: the message says where it waits.
  CHECK(slurp(err_file) == "zerosim: interrupted; this run's finished variants are in out/.zerosim-partial\n");

  CHECK_FALSE(fs::exists(out / "summary.json"));
  CHECK(fs::exists(out / kStaging / kFirst / "result.json"));
  CHECK_FALSE(fs::exists(out / kStaging / kSecond)); // interrupted before it wrote a file
  CHECK_FALSE(fs::exists(out / kStaging / kThird)); // never started
  CHECK(fs::is_directory(out / kFourth)); // existed before the run
  for (const auto& e : fs::recursive_directory_iterator(out))
    if (e.is_directory() && e.path().filename() != kFourth)
      CHECK_FALSE(fs::is_empty(e.path()));

  const std::string first = (fs::path("out") / kStaging / kFirst).string();
  const Outcome report = run_zerosim(tmp.path(), {"report", "out"});
  INFO("report stderr: " << report.err);
  CHECK(report.status != 0);
  CHECK_THAT(report.err, Contains("out: no summary.json (the run did not finish)"));
  CHECK_THAT(report.err, Contains("completed variants: " + first + " -- report that directory"));
  CHECK(report.err.find('\n') == report.err.size() - 1); // one line

  const Outcome plot = run_zerosim(tmp.path(), {"plot", "out"});
  INFO("plot stderr: " << plot.err);
  CHECK(plot.status != 0);
  CHECK_THAT(plot.err, Contains("out: no summary.json (the run did not finish)"));
  CHECK_THAT(plot.err, Contains("completed variants: " + first + " -- plot that directory"));
}

TEST_CASE("zerosim run: an interrupted re-run leaves the previous run's outputs as they were", "[e2e]") {
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << kScenario;
  const fs::path out = tmp.path() / "out";
  // The previous run: the base scenario alone (one node), so its files are out/result.json and out/summary.json.
  const Outcome before = run_zerosim(tmp.path(), {"run", "s.yaml", "--set", "compare=null", "--out", "out", "-q"});
  INFO("first run stderr: " << before.err);
  REQUIRE(before.status == 0);
  const std::string result_before = slurp(out / "result.json");
  const std::string summary_before = slurp(out / "summary.json");
  REQUIRE_FALSE(result_before.empty());

  const fs::path err_file = tmp.path() / "stderr.txt";
  const int status = run_and_interrupt_after_first_variant(tmp.path(), err_file);
  const std::string err = slurp(err_file);
  INFO("stderr: " << err);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(err ==
        "zerosim: interrupted; out keeps the previous run's outputs (this run's finished variants are in "
        "out/.zerosim-partial)\n");
  CHECK(err.find('\n') == err.size() - 1); // one line
  CHECK(slurp(out / "result.json") == result_before);
  CHECK(slurp(out / "summary.json") == summary_before);
  CHECK(fs::exists(out / kStaging / kFirst / "result.json"));
  CHECK_FALSE(fs::exists(out / kFirst)); // not moved into place: the run did not finish
  // The previous run still reports (report.html in out/).
  const Outcome report = run_zerosim(tmp.path(), {"report", "out"});
  INFO("report stderr: " << report.err);
  CHECK(report.status == 0);
  CHECK(fs::exists(out / "report.html"));

  // A finished re-run replaces the previous run and removes the staging directory.
  const Outcome again = run_zerosim(tmp.path(), {"run", "s.yaml", "--set", "compare=null", "--set", "cluster.nodes=2",
                                                 "--out", "out", "-q"});
  INFO("re-run stderr: " << again.err);
  REQUIRE(again.status == 0);
  CHECK_FALSE(fs::exists(out / kStaging));
  CHECK(slurp(out / "result.json") != result_before);
  CHECK_FALSE(fs::exists(out / "report.html")); // drawn from the previous run: removed with it
}

TEST_CASE("zerosim run: SIGTERM to zerosim alone (kill, a scheduler's cancel) stops its simulation too", "[e2e]") {
  // Only the zerosim process gets the signal (not its process group, unlike Ctrl-C): it passes it on to the
  // running simulation, and a simulation whose zerosim died anyway is killed by the kernel (PR_SET_PDEATHSIG). So
  // no simulation process may remain in the group afterwards.
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << kScenario;
  const fs::path out = tmp.path() / "out";
  const pid_t pid = start_run_in_own_group(tmp.path(), tmp.path() / "stderr.txt", SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(out / kStaging / kFirst / "result.json") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!fs::exists(out / kStaging / kFirst / "result.json")) {
    ::killpg(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL("variant 0 wrote no result.json within 30 s");
  }
  ::kill(pid, SIGTERM); // the zerosim process only
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  // Its simulation child dies with it; allow the kernel a moment to deliver and reap.
  bool gone = false;
  for (int i = 0; i < 2000 && !gone; ++i) {
    gone = ::killpg(pid, 0) != 0;
    if (!gone)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!gone)
    ::killpg(pid, SIGKILL);
  CHECK(gone);
}

/// Starts a one-variant run of kScenario on 64 nodes (many seconds of simulation) into DIR/out, waits until the run
/// has created out/ and let it simulate for 500 ms more, then sends `sig` to `target` (the process group, or the
/// zerosim process alone) and returns the wait status.
int signal_single_run(const fs::path& dir, int sig, bool group) {
  const pid_t pid = start_in_own_group({"run", "s.yaml", "--set", "compare=null", "--set", "cluster.nodes=64", "--out",
                                        "out", "--quiet"},
                                       dir, dir / "stderr.txt", sig);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!fs::exists(dir / "out") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(500)); // inside the simulation
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) == pid)
    FAIL("the 64-node run ended within 500 ms\n" << slurp(dir / "stderr.txt"));
  if (group)
    return signal_and_wait(pid, sig);
  ::kill(pid, sig);
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

TEST_CASE("zerosim run: a run killed during its simulation leaves no staging directory", "[e2e]") {
  // The staging directory (kUnfinishedRunDir) is made when the simulation writes its first file, so SIGKILL (which
  // no handler sees) before then leaves none; SIGTERM to zerosim alone removes what the run created, out/ included.
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << kScenario;
  const fs::path out = tmp.path() / "out";
  SECTION("SIGKILL") {
    const int status = signal_single_run(tmp.path(), SIGKILL, true);
    INFO("stderr: " << slurp(tmp.path() / "stderr.txt"));
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);
    CHECK(fs::is_directory(out));
    CHECK_FALSE(fs::exists(out / kStaging));
  }
  SECTION("SIGTERM") {
    const int status = signal_single_run(tmp.path(), SIGTERM, false);
    INFO("stderr: " << slurp(tmp.path() / "stderr.txt"));
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);
    CHECK_FALSE(fs::exists(out)); // made by this run and left empty: removed
  }
}

TEST_CASE("zerosim plan: Ctrl-C removes plan's private scenario directory from the temporary directory", "[e2e]") {
  // plan writes its base scenario to $TMPDIR/zerosim-plan-XXXXXX/plan.yaml and removes it on exit; a user found it
  // left behind after Ctrl-C. LLaMA-2 7B on up to 64 A100s takes seconds, so the plan is still searching when
  // the test presses Ctrl-C right after the file appears.
  TempDir tmp;
  const fs::path err_file = tmp.path() / "stderr.txt";
  const pid_t pid = start_in_own_group({"plan", "--model", "llama-2-7b", "--gpu", "a100-80gb", "--max-gpus", "64",
                                        "--global-batch", "512", "--jobs", "1"},
                                       tmp.path(), err_file, SIGINT, "TMPDIR=" + tmp.path().string(), true);
  const int status = interrupt_once_written(pid, tmp.path(), "zerosim-plan-", "plan.yaml", err_file);
  INFO("output: " << slurp(err_file));
  CHECK(WIFSIGNALED(status));
  CHECK(in_tmp(tmp.path(), "zerosim-plan-").empty());
}

TEST_CASE("zerosim diff: Ctrl-C while a scenario file is simulated removes diff's temporary directory", "[e2e]") {
  // diff simulates a scenario file's variants into $TMPDIR/zerosim-diff-XXXXXX/variant-N. kScenario's first
  // variant (one node) finishes in a fraction of a second, its second (64 nodes) takes many: Ctrl-C once the
  // first result.json exists leaves a directory with a file in it to remove, and a child to stop first.
  TempDir tmp;
  std::ofstream(tmp.path() / "a.yaml") << kScenario;
  std::ofstream(tmp.path() / "b.yaml") << kScenario;
  const fs::path err_file = tmp.path() / "stderr.txt";
  const pid_t pid =
      start_in_own_group({"diff", "a.yaml", "b.yaml"}, tmp.path(), err_file, SIGINT, "TMPDIR=" + tmp.path().string());
  const int status = interrupt_once_written(pid, tmp.path(), "zerosim-diff-", "variant-0/result.json", err_file);
  INFO("stderr: " << slurp(err_file));
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGINT);
  CHECK(in_tmp(tmp.path(), "zerosim-diff-").empty());
}
