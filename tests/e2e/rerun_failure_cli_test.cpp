// End-to-end tests of a `zerosim run` into a directory an earlier run wrote, when this run's simulations fail. A run
// writes into OUT/.zerosim-partial and replaces the earlier outputs only with results: when no variant completes
// (every simulation killed, as by the kernel's OOM killer, or a full disk) the earlier outputs stay exactly as they
// were and the last line says so; when some variants complete the run replaces the earlier one, as a finished run
// does, unless a variant failed writing its files (then nothing is replaced). Failures are made with a file size
// limit (RLIMIT_FSIZE), which fails a write as a full disk does and, with SIGXFSZ at its default action, kills the
// writing simulation process.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"

#include <algorithm>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;

using zerosim::test::Outcome;
using zerosim::test::run_zerosim;
using zerosim::test::RunOptions;
using zerosim::test::slurp;
using zerosim::test::TempDir;

namespace {

/// GPT-2 small on one RTX 4090 at analytic fidelity (a fraction of a second per variant), ZeRO stage 0 and 3 side by
/// side: variant directories stage-0 and stage-3 (apps/variant_dir.cpp), each with trace.json, memory.csv and
/// result.json, written in that order (apps/run_command.cpp child_main).
const char* kScenario =
    "name: rerun\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\n"
    "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: analytic}\n"
    "compare:\n  zero.stage: [0, 3]\n";

/// Every regular file under `dir` (path relative to it -> content), the staging directory left out.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (auto it = fs::recursive_directory_iterator(dir); it != fs::recursive_directory_iterator(); ++it) {
    if (it->path().filename() == ".zerosim-partial") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file())
      files[fs::relative(it->path(), dir).string()] = slurp(it->path());
  }
  return files;
}

/// A complete earlier run of `scenario` in DIR/out: both variants, summary.json, report.html drawn by `zerosim
/// report`, and a file of the user's own. Returns what it holds.
std::map<std::string, std::string> earlier_run(const fs::path& dir, const std::string& scenario = kScenario) {
  std::ofstream(dir / "s.yaml") << scenario;
  const Outcome first = run_zerosim(dir, {"run", "s.yaml", "--out", "out", "-q"});
  INFO("first run stderr: " << first.err);
  REQUIRE(first.status == 0);
  REQUIRE(run_zerosim(dir, {"report", "out"}).status == 0);
  std::ofstream(dir / "out" / "notes.txt") << "mine\n";
  const auto files = snapshot(dir / "out");
  for (const char* f : {"summary.json", "report.html", "notes.txt", "stage-0/trace.json", "stage-0/memory.csv",
                        "stage-0/result.json", "stage-3/trace.json", "stage-3/memory.csv", "stage-3/result.json"})
    REQUIRE(files.count(f) == 1);
  return files;
}

/// The last line of `text` (without its newline).
std::string last_line(const std::string& text) {
  const std::string t = text.substr(0, text.size() - (text.empty() || text.back() != '\n' ? 0 : 1));
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

} // namespace

TEST_CASE("zerosim run: a re-run whose every simulation is killed leaves the earlier outputs as they were", "[e2e]") {
  // A new user's re-run died in every variant (the OOM killer's SIGKILL) and left only an empty summary.json:
  // the earlier results, report and pictures were gone. Here each simulation process is killed by SIGXFSZ on its
  // first write past 4 KiB: its first file, trace.json, is larger (checked on the earlier run's files below).
  TempDir tmp;
  const auto before = earlier_run(tmp.path());
  constexpr std::uint64_t kLimit = 4096;
  REQUIRE(before.at("stage-0/trace.json").size() > kLimit);
  REQUIRE(before.at("stage-3/trace.json").size() > kLimit);
  RunOptions killed;
  killed.max_file_bytes = kLimit;

  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out"}, killed);
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 1);
  const std::string killed_by =
      "failed: simulation process killed by signal " + std::to_string(SIGXFSZ) + " (" + ::strsignal(SIGXFSZ) + ")";
  CHECK_THAT(o.err, Contains("zerosim: variant 'zero.stage=0' " + killed_by + "\n"));
  CHECK_THAT(o.err, Contains("zerosim: variant 'zero.stage=3' " + killed_by + "\n"));
  CHECK(last_line(o.err) == "zerosim: no variant completed; out keeps the previous run's outputs");
  CHECK_THAT(o.out, Contains("no variant completed") && !Contains("outputs in"));
  // Byte for byte what the earlier run left (the report and the user's file included), and no staging directory:
  // the killed simulations' unfinished temporaries were removed with it.
  CHECK(snapshot(tmp.path() / "out") == before);
  CHECK_FALSE(fs::exists(tmp.path() / "out" / ".zerosim-partial"));

  // The same into a directory no run wrote: nothing is created, and the line says nothing was written.
  const Outcome fresh = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "fresh", "-q"}, killed);
  INFO("fresh stderr: " << fresh.err);
  CHECK(fresh.status == 1);
  CHECK(last_line(fresh.err) == "zerosim: no variant completed; nothing was written to fresh");
  CHECK_FALSE(fs::exists(tmp.path() / "fresh"));
}

TEST_CASE("zerosim run: a re-run on a full disk keeps the earlier outputs and names its partial files", "[e2e]") {
  // Writes past the limit fail (SIGXFSZ ignored: EFBIG, as ENOSPC on a full disk) and the child reports "write
  // failed" with the OS reason (strerror(EFBIG) is "File too large"). A variant writes trace.json, memory.csv, then
  // result.json. With no rank timelines (outputs.trace_ranks: 0) its trace.json and memory.csv are small and its
  // result.json is not (sizes from the earlier run; a run's files are deterministic), so the limit lies above both
  // variants' trace.json and memory.csv and below either result.json: each variant writes two whole files and fails
  // on the third. No variant completes, and the four whole files are this run's partial outputs.
  TempDir tmp;
  const auto before = earlier_run(tmp.path(), std::string(kScenario) + "outputs: {trace_ranks: 0}\n");
  std::uint64_t small = 0, result = std::numeric_limits<std::uint64_t>::max();
  for (const char* v : {"stage-0/", "stage-3/"}) {
    small = std::max<std::uint64_t>(
        {small, before.at(std::string(v) + "trace.json").size(), before.at(std::string(v) + "memory.csv").size()});
    result = std::min<std::uint64_t>(result, before.at(std::string(v) + "result.json").size());
  }
  REQUIRE(small < result);
  RunOptions full;
  full.max_file_bytes = (small + result) / 2;
  full.ignore_sigxfsz = true;

  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out", "-q"}, full);
  INFO("stderr: " << o.err);
  CHECK(o.status == 1);
  for (const char* v : {"0", "3"})
    CHECK_THAT(o.err,
               Contains(std::string("zerosim: variant 'zero.stage=") + v + "' failed: out/.zerosim-partial/stage-" + v +
                        "/result.json: write failed: File too large\n"));
  CHECK(last_line(o.err) ==
        "zerosim: no variant completed; out keeps the previous run's outputs (this run's partial "
        "outputs are in out/.zerosim-partial)");
  CHECK(snapshot(tmp.path() / "out") == before);
  // The partial outputs: each variant's whole trace.json and memory.csv (the earlier run's, byte for byte), and
  // nothing else (no result.json, no temporary).
  const fs::path staging = tmp.path() / "out" / ".zerosim-partial";
  std::map<std::string, std::string> partial;
  for (const auto& e : fs::recursive_directory_iterator(staging))
    if (e.is_regular_file())
      partial[fs::relative(e.path(), staging).string()] = slurp(e.path());
  std::map<std::string, std::string> expected;
  for (const char* f : {"stage-0/trace.json", "stage-0/memory.csv", "stage-3/trace.json", "stage-3/memory.csv"})
    expected[f] = before.at(f);
  CHECK(partial == expected);
}

TEST_CASE("zerosim run: a re-run in which some variants fail replaces the earlier run with the completed ones",
          "[e2e]") {
  // The run finished with results, so it is the directory's run now (README "Outputs"): summary.json lists the
  // variants that completed, the earlier run's files go (the failed variant's earlier result too: it came from
  // another run), exit status 1. The limit lies above every file of stage 0 and below stage 3's trace.json, so
  // stage 3's simulation is killed and stage 0 completes.
  TempDir tmp;
  const auto before = earlier_run(tmp.path());
  std::uint64_t largest0 = 0;
  for (const char* f : {"stage-0/trace.json", "stage-0/memory.csv", "stage-0/result.json", "summary.json"})
    largest0 = std::max<std::uint64_t>(largest0, before.at(f).size());
  const std::uint64_t trace3 = before.at("stage-3/trace.json").size();
  REQUIRE(largest0 < trace3);
  RunOptions some;
  some.max_file_bytes = (largest0 + trace3) / 2;

  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out"}, some);
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 1);
  CHECK(o.err == "zerosim: variant 'zero.stage=3' failed: simulation process killed by signal " +
                     std::to_string(SIGXFSZ) + " (" + ::strsignal(SIGXFSZ) + ")\n");
  CHECK_THAT(o.out, Contains("outputs in out\n"));
  const fs::path out = tmp.path() / "out";
  const json summary = json::parse(slurp(out / "summary.json"));
  REQUIRE(summary.at("variants").size() == 1);
  CHECK(summary.at("variants")[0].at("dir") == "stage-0");
  CHECK(fs::exists(out / "stage-0" / "result.json"));
  CHECK_FALSE(fs::exists(out / "stage-3"));
  CHECK_FALSE(fs::exists(out / "report.html")); // drawn from the replaced run
  CHECK(slurp(out / "notes.txt") == "mine\n");
  CHECK_FALSE(fs::exists(out / ".zerosim-partial"));
}

TEST_CASE("zerosim run: a re-run in which a variant's files cannot be written replaces nothing", "[e2e]") {
  // New-user trial 27 F7: on a full disk, stage 1 of a re-run completed, stages 2 and 3 failed writing trace.json,
  // and the commit replaced the earlier run with stage 1 alone: the earlier, valid stage 2 and 3 results were
  // deleted for want of disk space. A variant that failed writing its files failed for want of space, not of a
  // result: the earlier outputs stay byte for byte, and this run's finished variants stay in .zerosim-partial with
  // their summary.json. The limit lies above every file of stage 0 and below stage 3's trace.json; SIGXFSZ ignored,
  // the write fails with EFBIG as on a full disk (ENOSPC), and stage 3 writes no file at all.
  TempDir tmp;
  const auto before = earlier_run(tmp.path());
  std::uint64_t largest0 = 0;
  for (const char* f : {"stage-0/trace.json", "stage-0/memory.csv", "stage-0/result.json", "summary.json"})
    largest0 = std::max<std::uint64_t>(largest0, before.at(f).size());
  const std::uint64_t trace3 = before.at("stage-3/trace.json").size();
  REQUIRE(largest0 < trace3);
  RunOptions full;
  full.max_file_bytes = (largest0 + trace3) / 2;
  full.ignore_sigxfsz = true;

  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out"}, full);
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 1);
  CHECK_THAT(o.err, Contains("zerosim: variant 'zero.stage=3' failed: out/.zerosim-partial/stage-3/trace.json: write "
                             "failed: File too large\n"));
  CHECK(last_line(o.err) ==
        "zerosim: nothing was replaced: the outputs of 'zero.stage=3' could not be written; out "
        "keeps the previous run's outputs, and this run's finished variants are in "
        "out/.zerosim-partial");
  CHECK_THAT(o.out, !Contains("outputs in"));
  CHECK(snapshot(tmp.path() / "out") == before);
  const fs::path staging = tmp.path() / "out" / ".zerosim-partial";
  CHECK(fs::exists(staging / "stage-0" / "result.json"));
  CHECK_FALSE(fs::exists(staging / "stage-3"));
  const json summary = json::parse(slurp(staging / "summary.json"));
  REQUIRE(summary.at("variants").size() == 1);
  CHECK(summary.at("variants")[0].at("dir") == "stage-0");

  // --check names the cause in its verdict (review 28: it said "a simulation failed", and none did): stage 0 fits
  // (GPT-2 small at micro-batch 1 on 24 GB), stage 3's files could not be written. One line, also under --quiet.
  const Outcome checked = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out", "--check", "-q"}, full);
  INFO("check stdout: " << checked.out << "\ncheck stderr: " << checked.err);
  CHECK(checked.status == 1);
  CHECK(checked.out == "check: FAIL: the outputs of 'zero.stage=3' could not be written (see above)\n");
  CHECK(snapshot(tmp.path() / "out") == before);

  // With space again, the next run replaces the earlier one and clears the staging directory.
  const Outcome again = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "out", "-q"});
  INFO("again: " << again.err);
  CHECK(again.status == 0);
  CHECK_FALSE(fs::exists(staging));
  CHECK(fs::exists(tmp.path() / "out" / "stage-3" / "result.json"));
}

TEST_CASE("zerosim run: an error raised inside the simulation process is printed as its one line, exit 1, no outputs",
          "[e2e]") {
  // Review 27: a simulation child's own 'E' message (a generator or engine error) was once replaced by "exited with
  // status 4". The loader rejects every input such an error could come from before a simulation starts, so no
  // scenario raises one: ZEROSIM_DEBUG_SIMULATION_ERROR (README "Contributing") makes every simulation process fail
  // at once with its text, through the same path (apps/run_command.cpp child_main's catch).
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << kScenario;
  RunOptions failing;
  failing.env = {"ZEROSIM_DEBUG_SIMULATION_ERROR=zero: stage 3 generator rejected the program (test)"};
  const Outcome o = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "fresh"}, failing);
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 1);
  // Each variant's line is the child's own message after the variant's name; then one line on what was written.
  CHECK(o.err ==
        "zerosim: variant 'zero.stage=0' failed: zero: stage 3 generator rejected the program (test)\n"
        "zerosim: variant 'zero.stage=3' failed: zero: stage 3 generator rejected the program (test)\n"
        "zerosim: no variant completed; nothing was written to fresh\n");
  CHECK_THAT(o.out, !Contains("outputs in"));
  // No half output: neither the directory nor its staging directory exists.
  CHECK_FALSE(fs::exists(tmp.path() / "fresh"));

  // A message of several lines (an exception's what() can hold any text) stays one line per variant.
  RunOptions multi;
  multi.env = {"ZEROSIM_DEBUG_SIMULATION_ERROR=engine: first line\nsecond line"};
  const Outcome m = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "fresh", "-q"}, multi);
  INFO("stderr: " << m.err);
  CHECK(m.status == 1);
  CHECK_THAT(m.err, Contains("zerosim: variant 'zero.stage=3' failed: engine: first line second line\n"));
  CHECK(std::count(m.err.begin(), m.err.end(), '\n') == 3);
  CHECK_FALSE(fs::exists(tmp.path() / "fresh"));

  // Set but empty: no error (the variable is off), the run completes.
  RunOptions off;
  off.env = {"ZEROSIM_DEBUG_SIMULATION_ERROR="};
  const Outcome ok = run_zerosim(tmp.path(), {"run", "s.yaml", "--out", "fresh", "-q"}, off);
  INFO("stderr: " << ok.err);
  CHECK(ok.status == 0);
  CHECK(fs::exists(tmp.path() / "fresh" / "stage-3" / "result.json"));
}

TEST_CASE("zerosim sweep: an error raised inside a point's simulation is an error row with its message, exit 1",
          "[e2e]") {
  // The same child error in a sweep: status "error" (not "invalid": the loader accepted the point), the message in
  // the row, a failed count, exit 1; the table is still written (a sweep's rows are its output).
  TempDir tmp;
  std::ofstream(tmp.path() / "s.yaml") << "name: sw\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 128}\n"
                                          "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: "
                                          "analytic}\n";
  RunOptions failing;
  failing.env = {"ZEROSIM_DEBUG_SIMULATION_ERROR=engine: simulated failure (test)"};
  const Outcome o =
      run_zerosim(tmp.path(), {"sweep", "s.yaml", "--axis", "zero.stage=1,2", "--out", "o", "-q"}, failing);
  INFO("stderr: " << o.err);
  CHECK(o.status == 1);
  const json j = json::parse(slurp(tmp.path() / "o" / "sweep.json"));
  REQUIRE(j.at("rows").size() == 2);
  for (const auto& r : j.at("rows")) {
    CHECK(r.at("status") == "error");
    CHECK(r.at("error") == "engine: simulated failure (test)");
  }
}
