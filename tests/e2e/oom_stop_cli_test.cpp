// End-to-end tests of how a run ends early: an OOM with on_oom: stop at every fidelity (the run stops cleanly, exit
// 0, no SimGrid noise on stderr), in `zerosim run` and `zerosim sweep`, and Ctrl-C (SIGINT) during a run (one line
// from zerosim, death by SIGINT, no simulation process left running).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

using zerosim::test::Outcome;
using zerosim::test::read_json;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;
using zerosim::test::write_file;

namespace {

/// What SimGrid prints when a run is torn down badly: s4u::Comm::~Comm's backtrace of a comm dropped while still
/// running ("Comm ... freed before its completion", src/s4u/s4u_Comm.cpp), the atexit cleanup finding live actors
/// (src/kernel/EngineImpl.cpp), and any SimGrid log line ("[ker_engine/WARNING]", "[s4u_comm/INFO]", ...).
void check_no_simgrid_noise(const std::string& err) {
  CHECK_THAT(err, !Contains("Backtrace"));
  CHECK_THAT(err, !Contains("freed before its completion"));
  CHECK_THAT(err, !Contains("Process called exit"));
  CHECK_THAT(err, !Contains("Deadlock"));
  CHECK_THAT(err, !Contains("/WARNING]"));
  CHECK_THAT(err, !Contains("/INFO]"));
  CHECK_THAT(err, !Contains("/CRITICAL]"));
}

/// ZeRO stage 3 on 2 DGX H100 nodes (16 ranks, per-GPU NICs: node-crossing collectives are split over the rails)
/// with the GPUs cut to `memory`. Activations without flash attention take s·b·h·(34 + 5·a·s/h) bytes per layer
/// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", Table 2):
/// - gpt2-xl (h=1600, a=25, L=48), b=2, s=1024: 1024·2·1600·(34 + 80) = 373.6 MB per layer, 17.9 GB for 48 layers;
/// - llama-2-7b (h=4096, a=32, L=32), b=4, s=1024: 1024·4·4096·(34 + 40) = 1.24 GB per layer, 39.7 GB for 32;
/// both beyond 16 GiB = 17.18 GB, so the forward pass runs out of memory while parameter all-gathers are in flight.
std::string oom_scenario(const std::string& model, int micro_batch, const std::string& fidelity) {
  return "name: oom-stop\nmodel: " + model + "\ntraining: {micro_batch: " + std::to_string(micro_batch) +
         ", seq_len: 1024, precision: bf16, flash_attention: false}\n"
         "zero: {stage: 3}\n"
         "cluster: {topology: dgx-h100, nodes: 2, gpu: {preset: h100-sxm, memory: 16GiB}}\n"
         "simulation: {steps: 2, fidelity: " +
         fidelity + ", fold: off, on_oom: stop}\noutputs: {trace_json: false, memory_csv: false}\n";
}

/// The first process whose parent is `parent` (from /proc/<pid>/stat), or -1.
pid_t child_of(pid_t parent) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // pid (comm) state ppid ...: comm may hold spaces, so parse after the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(stat.substr(close + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent)
      return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

/// Whether process `pid` is gone or a zombie (dead, not yet reaped).
bool dead(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat))
    return true;
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

/// How a zerosim run ended when interrupted.
struct Interrupted {
  int status = 0; ///< waitpid status
  std::string out;
  std::string err;
  bool child_dead = false; ///< the simulation child died too (within 10 s)
};

/// Starts `zerosim args...` in its own process group with SIGINT at its default (as a shell's foreground job),
/// waits until it has forked its simulation child, then sends SIGINT to the whole group (Ctrl-C in a terminal) or,
/// with `group` false, to the zerosim process alone.
Interrupted interrupt_zerosim(const fs::path& dir, const std::vector<std::string>& args, bool group) {
  std::vector<std::string> argv_s{ZEROSIM_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const fs::path out = dir / "stdout.txt";
  const fs::path err = dir / "stderr.txt";
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGINT, SIG_DFL);
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || ::chdir(dir.c_str()) != 0)
      ::_exit(127);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid); // also from here, so that the group exists before killpg whoever runs first
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  pid_t sim = -1;
  while ((sim = child_of(pid)) < 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (sim < 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    FAIL("zerosim started no simulation process within 30 s");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100)); // let the simulation get under way
  if (group)
    ::killpg(pid, SIGINT);
  else
    ::kill(pid, SIGINT);
  Interrupted r;
  const auto wait_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::waitpid(pid, &r.status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > wait_deadline) {
      ::killpg(pid, SIGKILL);
      ::waitpid(pid, &r.status, 0);
      FAIL("zerosim did not stop within 30 s of SIGINT");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const auto dead_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!(r.child_dead = dead(sim)) && std::chrono::steady_clock::now() < dead_deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!r.child_dead)
    ::kill(sim, SIGKILL);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

/// gpt2-xl at chunk fidelity on 2 DGX H100 nodes, 20 steps: it fits (80 GiB) and runs for seconds, long enough to be
/// interrupted.
const char* kLongScenario =
    "name: long\nmodel: gpt2-xl\ntraining: {micro_batch: 1, seq_len: 1024, precision: bf16}\n"
    "zero: {stage: 3}\ncluster: {topology: dgx-h100, nodes: 2}\n"
    "simulation: {steps: 20, fidelity: chunk}\n"
    "outputs: {trace_json: false, memory_csv: false}\n";

} // namespace

TEST_CASE("zerosim run: an OOM stop is clean at every fidelity (no SimGrid backtrace or warning)", "[e2e]") {
  // Regression: stopping the run killed actors holding handles to comms still in flight (rail sub-flows of a
  // node-crossing all-gather), and SimGrid printed a backtrace per dropped handle.
  struct Case {
    std::string model;
    int micro_batch;
    std::string fidelity;
  };
  const std::vector<Case> cases{{"gpt2-xl", 2, "chunk"},
                                {"llama-2-7b", 4, "chunk"},
                                {"gpt2-xl", 2, "flow"},
                                {"gpt2-xl", 2, "analytic"}};
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.model << " micro-batch " << c.micro_batch << " at " << c.fidelity << " fidelity") {
      TempDir tmp;
      const fs::path sc = write_file(tmp.path(), "oom.yaml", oom_scenario(c.model, c.micro_batch, c.fidelity));
      const fs::path out = tmp.path() / "out";
      const Outcome o = run_zerosim(tmp.path(), {"run", sc.string(), "--out", out.string()});
      INFO("stdout: " << o.out << "\nstderr: " << o.err);
      REQUIRE(o.status == 0);
      check_no_simgrid_noise(o.err);
      CHECK_THAT(o.out, Contains("out of GPU memory"));
      CHECK_THAT(o.out, Contains("the run stopped there (on_oom: stop)"));
      const json r = read_json(out / "result.json");
      CHECK(r.at("summary").at("oom").get<bool>());
      CHECK_FALSE(r.at("summary").at("fits").get<bool>());
    }
  }
}

TEST_CASE("zerosim run: an OOM stop during a parameter-offload copy is clean (no SimGrid backtrace)", "[e2e]") {
  // Regression (newuser20a): stage 3 with parameters and optimizer on the CPU ran out of GPU memory while a PCIe copy
  // of the copy stream was in flight; the OOM stop killed that actor inside Comm::sendto, and SimGrid printed a
  // backtrace for the running comm's dropped handle. LLaMA-2 7B's width at 26 and 32 layers, micro-batch 4, on one
  // RTX 4090: both stop at an OOM with a copy running (with the handle dropped, both printed the backtrace).
  for (const int layers : {26, 32}) {
    DYNAMIC_SECTION(layers << " layers") {
      TempDir tmp;
      const fs::path out = tmp.path() / "out";
      const Outcome o =
          run_zerosim(tmp.path(),
                      {"run", std::string(ZEROSIM_DATA_DIR) + "/scenarios/teaching/stage3-offload-optimizer.yaml",
                       "--set", "compare=null", "--set", "zero.offload_param=cpu", "--set", "training.micro_batch=4",
                       "--set", "simulation.on_oom=stop", "--set", "model.layers=" + std::to_string(layers), "--set",
                       "outputs.trace_json=false", "--out", out.string(), "--quiet"});
      INFO("stderr: " << o.err);
      REQUIRE(o.status == 0);
      check_no_simgrid_noise(o.err);
      CHECK(o.err.empty());
      CHECK(read_json(out / "result.json").at("summary").at("oom").get<bool>());
    }
  }
}

TEST_CASE("zerosim sweep: points that stop on an OOM at chunk fidelity leave stderr clean", "[e2e]") {
  // Each point runs in a child process whose stderr is the sweep's: both points run out of memory (see
  // oom_scenario: 17.9 GB and 35.9 GB of gpt2-xl activations at micro-batch 2 and 4 > 16 GiB).
  TempDir tmp;
  write_file(tmp.path(), "s.yaml",
             oom_scenario("gpt2-xl", 2, "chunk") + "sweep:\n  grid:\n    training.micro_batch: [2, 4]\n");
  const Outcome o = run_zerosim(tmp.path(), {"sweep", "s.yaml", "--out", "o", "--jobs", "2"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  check_no_simgrid_noise(o.err);
  CHECK_THAT(o.err, Contains("2 points: 2 simulated, 0 resumed, 0 failed"));
  const std::string csv = slurp(tmp.path() / "o" / "sweep.csv");
  INFO("sweep.csv: " << csv);
  std::size_t oom_rows = 0;
  for (std::size_t at = csv.find(",oom,"); at != std::string::npos; at = csv.find(",oom,", at + 1))
    ++oom_rows;
  CHECK(oom_rows == 2);
}

TEST_CASE("zerosim run: Ctrl-C prints one line, dies of SIGINT and stops the simulation process", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "long.yaml", kLongScenario);
  // Ctrl-C in a terminal signals the whole foreground process group; `kill -INT <pid>` signals zerosim alone, which
  // must then stop its simulation child itself.
  for (const bool group : {true, false}) {
    DYNAMIC_SECTION((group ? "SIGINT to the process group" : "SIGINT to zerosim alone")) {
      const Interrupted r = interrupt_zerosim(tmp.path(), {"run", sc.string(), "--out", "out"}, group);
      INFO("stdout: " << r.out << "\nstderr: " << r.err);
      REQUIRE(WIFSIGNALED(r.status)); // a shell reports 128 + 2 = 130
      CHECK(WTERMSIG(r.status) == SIGINT);
      CHECK(r.err == "zerosim: interrupted\n");
      CHECK(r.out.empty());
      CHECK(r.child_dead);
      // The --out directory this run created holds nothing yet: it is removed, not left empty.
      CHECK_FALSE(fs::exists(tmp.path() / "out"));
    }
  }
}

TEST_CASE("zerosim run: Ctrl-C in a re-run keeps the earlier run's outputs and leaves no empty directory", "[e2e]") {
  // A quick run of stages 2 and 3 fills out/stage-2 and out/stage-3. The long re-run of the same comparison writes
  // into out/.zerosim-partial and is interrupted during stage 2: no variant finished, so out/ keeps the earlier
  // results, byte for byte, and no directory created for the re-run.
  TempDir tmp;
  const fs::path sc =
      write_file(tmp.path(), "long.yaml", std::string(kLongScenario) + "compare:\n  zero.stage: [2, 3]\n");
  const Outcome quick = run_zerosim(tmp.path(), {"run", sc.string(), "--out", "out", "--quiet", "--set",
                                                 "simulation.steps=1", "--set", "simulation.fidelity=analytic"});
  REQUIRE(quick.status == 0);
  const fs::path out = tmp.path() / "out";
  const std::string stage3 = slurp(out / "stage-3" / "result.json");
  const std::string summary = slurp(out / "summary.json");
  REQUIRE_FALSE(stage3.empty());
  const Interrupted r = interrupt_zerosim(tmp.path(), {"run", sc.string(), "--out", "out"}, true);
  INFO("stderr: " << r.err);
  REQUIRE(WIFSIGNALED(r.status));
  CHECK(r.err == "zerosim: interrupted; out keeps the previous run's outputs\n"); // no variant of this run finished
  CHECK(slurp(out / "stage-3" / "result.json") == stage3);
  CHECK(fs::exists(out / "stage-2" / "result.json"));
  CHECK(slurp(out / "summary.json") == summary);
  CHECK_FALSE(fs::exists(out / ".zerosim-partial"));
}

TEST_CASE("zerosim sweep: Ctrl-C says where the finished points are and how to continue", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "long.yaml", kLongScenario);
  const Interrupted r = interrupt_zerosim(tmp.path(), {"sweep", sc.string(), "--out", "sw"}, true);
  INFO("stderr: " << r.err);
  REQUIRE(WIFSIGNALED(r.status));
  CHECK(WTERMSIG(r.status) == SIGINT);
  CHECK(r.err ==
        "zerosim: interrupted; the finished points are in sw/journal.jsonl: run the same command again to "
        "simulate only the rest\n");
  CHECK(r.child_dead);
  // Interrupted before its first point finished, the sweep still leaves the journal the message names (empty).
  CHECK(fs::is_regular_file(tmp.path() / "sw" / "journal.jsonl"));
}
