// End-to-end tests of `zerosim diff`: two small GPT-2 runs differing in zero.stage, a run directory against a
// scenario file, a single run against a comparison, two sweeps point by point, and the one-line / exit-2 error
// contract.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::TempDir;

namespace {

Outcome zs(const fs::path& tmp, const std::vector<std::string>& args) {
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  return zerosim::test::run_zerosim(tmp, args, opt);
}

/// GPT-2 small (124M) on one RTX 4090 at `stage`, 2 steps: fast, and fits.
fs::path scenario(const fs::path& tmp, int stage) {
  const fs::path sc = tmp / ("stage" + std::to_string(stage) + ".yaml");
  std::ofstream(sc) << "name: diff-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: " << stage
                    << "}\ncluster: {topology: one-rtx4090}\nsimulation: {steps: 2, on_oom: continue}\n";
  return sc;
}

std::size_t lines(const std::string& s) { return zerosim::test::count_lines(s); }

} // namespace

TEST_CASE("zerosim diff: two runs differing in zero.stage name the key and the moves", "[e2e]") {
  TempDir tmp;
  const fs::path a = tmp.path() / "a";
  const fs::path b = tmp.path() / "b";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 1).string(), "--out", a.string(), "--quiet"}).status == 0);
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 3).string(), "--out", b.string(), "--quiet"}).status == 0);
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("zero.stage: 1 -> 3"));
  CHECK_THAT(o.out, Contains("step time"));
  CHECK_THAT(o.out, Contains("peak allocated"));
  CHECK_THAT(o.out, Contains("GiB"));
  // A scenario file as B is simulated first (into a temporary directory) and compared the same way.
  const Outcome o2 = zs(tmp.path(), {"diff", a.string(), scenario(tmp.path(), 3).string()});
  INFO("stderr2: " << o2.err);
  REQUIRE(o2.status == 0);
  CHECK_THAT(o2.out, Contains("zero.stage: 1 -> 3"));
}

TEST_CASE("zerosim diff: overlap_comm that follows zero.stage is marked as its default, one the user set is not",
          "[e2e]") {
  // DeepSpeed's config validator makes overlap_comm default to true at stage 3 and false at stages 1 and 2
  // (zero_semantics §7.12): two runs differing in zero.stage alone differ in it without either setting it.
  TempDir tmp;
  const auto write = [&](const std::string& name, const std::string& zero) {
    const fs::path p = tmp.path() / (name + ".yaml");
    std::ofstream(p) << "name: " << name << "\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: " << zero
                     << "\ncluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: analytic}\n";
    return p.string();
  };
  const std::string s1 = write("s1", "{stage: 1}");
  const std::string s3 = write("s3", "{stage: 3}");
  const Outcome o = zs(tmp.path(), {"diff", s1, s3});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("zero.stage: 1 -> 3\n"));
  CHECK_THAT(o.out, Contains("zero.overlap_comm: false -> true  (the default for zero.stage, set by neither)\n"));
  // Set on one side: the user changed it, printed as a plain change.
  const std::string s1_on = write("s1-on", "{stage: 1, overlap_comm: true}");
  const std::string s3_off = write("s3-off", "{stage: 3, overlap_comm: false}");
  const Outcome set = zs(tmp.path(), {"diff", s1_on, s3_off});
  INFO("stdout: " << set.out << "\nstderr: " << set.err);
  REQUIRE(set.status == 0);
  CHECK_THAT(set.out, Contains("zero.overlap_comm: true -> false\n"));
  const Outcome one = zs(tmp.path(), {"diff", s1, s3_off});
  INFO("stdout: " << one.out << "\nstderr: " << one.err);
  REQUIRE(one.status == 0);
  CHECK_THAT(one.out, Contains("zero.stage: 1 -> 3\n"));
  CHECK_THAT(one.out, !Contains("overlap_comm")); // false at both: no difference at all
}

TEST_CASE("zerosim diff: a compared section's variant pairs with the key compare that sets the same key", "[e2e]") {
  // A: compare: {zero: [{stage: 0}, {stage: 2, overlap_comm: true}]}; B: compare: {zero.stage: [0, 2]}.
  // "zero={stage: 0}" and "zero.stage=0" are the same configuration and are compared; A's stage-2 variant also sets
  // overlap_comm, so it is not B's "zero.stage=2" and both are listed as one-sided.
  TempDir tmp;
  const std::string head =
      "model: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\ncluster: {topology: one-rtx4090}\n"
      "simulation: {steps: 2, fidelity: analytic}\n";
  const fs::path a = tmp.path() / "section.yaml";
  const fs::path b = tmp.path() / "key.yaml";
  std::ofstream(a) << "name: section\n" << head << "compare:\n  zero: [{stage: 0}, {stage: 2, overlap_comm: true}]\n";
  std::ofstream(b) << "name: key\n" << head << "compare:\n  zero.stage: [0, 2]\n";
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("== variant zero={stage: 0} vs zero.stage=0"));
  CHECK_THAT(o.out, Contains("only in A: variant zero={stage: 2, overlap_comm: true}"));
  CHECK_THAT(o.out, Contains("only in B: variant zero.stage=2"));
  CHECK_THAT(o.out, !Contains("only in A: variant zero={stage: 0}"));
}

TEST_CASE("zerosim diff: a directory reused by a later run is read as that run, not its predecessor's files", "[e2e]") {
  // A single run leaves out/result.json. A comparison then written into the same directory removes it (the run's
  // stale variants go), but a copy put back by hand (or left by a zerosim before that cleanup) must not count:
  // out/summary.json lists the comparison's variants only, and diff must compare those.
  TempDir tmp;
  const fs::path out = tmp.path() / "out";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 1).string(), "--out", out.string(), "--quiet"}).status == 0);
  const fs::path kept = tmp.path() / "single-result.json";
  fs::copy_file(out / "result.json", kept);
  const fs::path cmp = tmp.path() / "cmp.yaml";
  std::ofstream(cmp) << "name: diff-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 1}\n"
                        "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, on_oom: continue}\n"
                        "compare:\n  zero.stage: [1, 2]\n";
  REQUIRE(zs(tmp.path(), {"run", cmp.string(), "--out", out.string(), "--quiet"}).status == 0);
  CHECK_FALSE(fs::exists(out / "result.json")); // the single run's file was removed
  fs::copy_file(kept, out / "result.json"); // and is back, stale
  const Outcome o = zs(tmp.path(), {"diff", out.string(), cmp.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("== variant zero.stage=1"));
  CHECK_THAT(o.out, Contains("== variant zero.stage=2"));
  CHECK_THAT(o.out, !Contains("only in"));
}

TEST_CASE("zerosim diff: a single run pairs with the comparison's variant that has its settings", "[e2e]") {
  // A: one run at zero.stage 2. B: the same scenario run with compare: {zero.stage: [1, 2]}, written to folders
  // stage-1 and stage-2. A's label ("") names no variant of B; its settings are those of B's stage-2 variant, so the
  // two are compared: no scenario key differs (compare_key / compare_values only say which comparison the variant
  // came from) and, the simulation being deterministic, every figure is the same (delta +0.0%).
  TempDir tmp;
  const fs::path single = tmp.path() / "single";
  const fs::path cmp = tmp.path() / "cmp";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--out", single.string(), "--quiet"}).status == 0);
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--set", "compare={zero.stage: [1, 2]}", "--out",
                          cmp.string(), "--quiet"})
              .status == 0);
  REQUIRE(fs::is_directory(cmp / "stage-2"));
  const Outcome o = zs(tmp.path(), {"diff", single.string(), cmp.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains(single.string() + " is a single run: compared with B's variant zero.stage=2 (folder "
                                               "stage-2), the one with the same settings; B's other variants are not "
                                               "compared: stage-1"));
  CHECK_THAT(o.out, Contains("== variant (single run) vs zero.stage=2"));
  CHECK_THAT(o.out, Contains("scenario keys that differ: none"));
  CHECK_THAT(o.out, Contains("  step time ") && Contains("  peak allocated ") && Contains("+0.0%"));
  CHECK_THAT(o.out, !Contains("only in") && !Contains("compare_key"));
  // The comparison as A: the same pairing, the other way round.
  const Outcome r = zs(tmp.path(), {"diff", cmp.string(), single.string()});
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, Contains("compared with A's variant zero.stage=2 (folder stage-2)"));
  CHECK_THAT(r.out, Contains("== variant zero.stage=2 vs (single run)"));
}

TEST_CASE("zerosim diff: a GPU changed by --set pairs with the comparison variant that changed it the same way",
          "[e2e]") {
  // A: --set cluster.gpu.memory=20GiB (GPU label "rtx4090 (--set memory=20GiB)"); B: compare: {cluster.gpu.memory:
  // [20GiB, 22GiB]} in the file ("rtx4090 (modified: memory=20GiB)", ...). The labels differ in how the change was
  // written, the settings of A and B's first variant do not: they pair.
  TempDir tmp;
  const fs::path single = tmp.path() / "single";
  const fs::path cmp = tmp.path() / "cmp.yaml";
  std::ofstream(cmp) << "name: diff-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 2}\n"
                        "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: analytic}\n"
                        "compare:\n  cluster.gpu.memory: [20GiB, 22GiB]\n";
  REQUIRE(zs(tmp.path(), {"run", cmp.string(), "--set", "compare=null", "--set", "cluster.gpu.memory=20GiB", "--out",
                          single.string(), "--quiet"})
              .status == 0);
  const Outcome o = zs(tmp.path(), {"diff", single.string(), cmp.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("compared with B's variant cluster.gpu.memory=20GiB"));
  CHECK_THAT(o.out, Contains("cluster.gpu.name: rtx4090 (--set memory=20GiB) -> rtx4090 (modified: memory=20GiB)"));
}

TEST_CASE("zerosim diff: a single run that matches no variant of a comparison names the folders to pass", "[e2e]") {
  // A at zero.stage 3 against compare: {zero.stage: [1, 2]}: no variant has A's settings. One line, exit 2, the
  // variant folders (stage-1, stage-2) and the command to run instead.
  TempDir tmp;
  const fs::path single = tmp.path() / "single";
  const fs::path cmp = tmp.path() / "cmp";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 3).string(), "--out", single.string(), "--quiet"}).status == 0);
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--set", "compare={zero.stage: [1, 2]}", "--out",
                          cmp.string(), "--quiet"})
              .status == 0);
  const Outcome o = zs(tmp.path(), {"diff", single.string(), cmp.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(lines(o.err) == 1);
  CHECK_THAT(o.err, Contains("zerosim: diff: " + single.string() + " is a single run and " + cmp.string() +
                             " holds 2 variants, none with its settings"));
  CHECK_THAT(o.err, Contains("e.g. `zerosim diff " + single.string() + " " + (cmp / "stage-1").string() + "`"));
  CHECK_THAT(o.err, Contains("(variants: stage-1, stage-2)"));
  CHECK(o.out.empty());
}

TEST_CASE("zerosim diff: runs with host memory (offload) get host peak rows in GiB", "[e2e]") {
  // Two run directories holding a hand-written result.json each (the fields diff reads): A without offload, B with
  // the optimizer on the CPU. B's worst rank peaks at 20 GiB of host memory (2^30 B each), 8 GiB of it pinned; its
  // node at 40 GiB. A writes zeros, so the deltas are +20, +40 and +8 GiB and delta % is n/a (from 0).
  TempDir tmp;
  const auto run_dir = [&](const std::string& name, const std::string& offload, double rank_gib, double node_gib,
                           double pinned_gib) {
    const fs::path d = tmp.path() / name;
    fs::create_directories(d);
    const double G = 1073741824.0;
    std::ofstream(d / "result.json")
        << R"({"variant": "", "scenario": {"name": "h", "zero": {"stage": 2, "offload_optimizer": ")" << offload
        << R"("}}, "summary": {"step_time_s": 1.0, "tokens_per_s": 1000.0, "mfu": 0.4, "peak_allocated_bytes": )"
        << 4 * G << R"(, "peak_reserved_bytes": )" << 5 * G << R"(, "nvidia_smi_bytes": )" << 6 * G
        << R"(, "fits": true, "peak_by_tag_bytes": {}, "host_peak_memory_bytes": )" << rank_gib * G
        << R"(, "host_node_peak_memory_bytes": )" << node_gib * G << R"(, "host_pinned_at_peak_bytes": )"
        << pinned_gib * G << "}}\n";
    return d;
  };
  const fs::path a = run_dir("a", "none", 0, 0, 0);
  const fs::path b = run_dir("b", "cpu", 20, 40, 8);
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("zero.offload_optimizer: none -> cpu"));
  CHECK_THAT(o.out, Contains("  host peak per rank          0.000       20.000      +20.000      n/a  GiB"));
  CHECK_THAT(o.out, Contains("  host peak per node          0.000       40.000      +40.000      n/a  GiB"));
  CHECK_THAT(o.out, Contains("  host pinned at peak         0.000        8.000       +8.000      n/a  GiB"));
  // Two runs without offload: no host rows.
  const Outcome same = zs(tmp.path(), {"diff", a.string(), a.string()});
  REQUIRE(same.status == 0);
  CHECK_THAT(same.out, Contains("peak allocated") && !Contains("host"));
}

TEST_CASE("zerosim diff: the step-time breakdown shows which phase moved when the optimizer goes to the CPU", "[e2e]") {
  // A: stage 2, Adam on the GPU; B: the same with offload_optimizer cpu. Without offload nothing is copied to or
  // from the host and no CPU works on the step: A's exposed offload and CPU-optimizer times are exactly 0. With it
  // the optimizer step runs as DeepSpeedCPUAdam (B's GPU optimizer time is 0) and the compute stream waits for the
  // gradient and parameter copies and for the CPU: B's are > 0, so those deltas are positive and the optimizer's
  // negative.
  TempDir tmp;
  const fs::path a = tmp.path() / "a";
  const fs::path b = tmp.path() / "b";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--out", a.string(), "--quiet"}).status == 0);
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--set", "zero.offload_optimizer=cpu", "--out",
                          b.string(), "--quiet"})
              .status == 0);
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  // The row named `name`: its A, B and delta cells.
  struct Cells {
    std::string a, b, delta;
  };
  const auto cells = [&o](const std::string& name) {
    const std::size_t at = o.out.find("\n    " + name + " ");
    REQUIRE(at != std::string::npos);
    std::istringstream line(o.out.substr(at + 5 + name.size(), o.out.find('\n', at + 1) - at - 5 - name.size()));
    Cells c;
    line >> c.a >> c.b >> c.delta;
    return c;
  };
  const Cells offload = cells("exposed offload");
  CHECK(offload.a == "0.0000");
  CHECK(std::stod(offload.b) > 0);
  CHECK(offload.delta.front() == '+');
  const Cells cpu = cells("exposed CPU optim.");
  CHECK(cpu.a == "0.0000");
  CHECK(std::stod(cpu.b) > 0);
  CHECK(cpu.delta.front() == '+');
  const Cells optimizer = cells("optimizer");
  CHECK(std::stod(optimizer.a) > 0);
  CHECK(optimizer.b == "0.0000");
  CHECK(optimizer.delta.front() == '-');
  // Every phase has its row, in the console report's order, between MFU and the memory rows.
  std::size_t prev = o.out.find("  MFU ");
  for (const char* row : {"forward", "backward", "optimizer", "other compute", "exposed comm", "exposed offload",
                          "exposed CPU optim.", "exposed host", "idle other", "comm in flight"}) {
    INFO(row);
    const std::size_t at = o.out.find(std::string("\n    ") + row + " ");
    CHECK(at != std::string::npos);
    CHECK(at > prev);
    prev = at;
  }
  CHECK(prev < o.out.find("  peak allocated "));
}

TEST_CASE("zerosim diff: bad input is one line and exit 2", "[e2e]") {
  TempDir tmp;
  const Outcome missing = zs(tmp.path(), {"diff", (tmp.path() / "nope").string(), (tmp.path() / "nope2").string()});
  CHECK(missing.status == 2);
  CHECK_THAT(missing.err, Contains("zerosim: diff: "));
  CHECK(lines(missing.err) == 1);

  const fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  const Outcome notrun = zs(tmp.path(), {"diff", empty.string(), empty.string()});
  CHECK(notrun.status == 2);
  CHECK_THAT(notrun.err, Contains("zerosim: diff: "));
  CHECK_THAT(notrun.err, Contains("not a run directory"));
  CHECK(lines(notrun.err) == 1);

  const fs::path bad = tmp.path() / "bad";
  fs::create_directories(bad);
  std::ofstream(bad / "result.json") << "{\"scenario\": [1,\n";
  const Outcome malformed = zs(tmp.path(), {"diff", bad.string(), bad.string()});
  CHECK(malformed.status == 2);
  CHECK_THAT(malformed.err, Contains("zerosim: diff: "));
  CHECK_THAT(malformed.err, Contains("malformed JSON"));
  CHECK(lines(malformed.err) == 1);
}

TEST_CASE("zerosim diff: two comparisons that pair no variant are one line and exit 2", "[e2e]") {
  // A compares zero.stage 0 and 1, B zero.stage 2 and 3 of another scenario name: no label pairs, so there is
  // nothing to diff. As for a single run that matches no variant: one line naming both sides' variant folders and
  // what else differs, exit 2, nothing on stdout.
  TempDir tmp;
  const fs::path a = tmp.path() / "a";
  const fs::path b = tmp.path() / "b";
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 1).string(), "--set", "compare={zero.stage: [0, 1]}", "--out",
                          a.string(), "--quiet"})
              .status == 0);
  REQUIRE(zs(tmp.path(), {"run", scenario(tmp.path(), 2).string(), "--set", "compare={zero.stage: [2, 3]}", "--set",
                          "name=other", "--out", b.string(), "--quiet"})
              .status == 0);
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  CHECK(o.status == 2);
  CHECK(lines(o.err) == 1);
  CHECK_THAT(o.err, Contains("zerosim: diff: no variant of " + a.string() + " (stage-0, stage-1) pairs with one of " +
                             b.string() + " (stage-2, stage-3)"));
  CHECK_THAT(o.err, Contains("; the runs also differ in scenario 'diff-e2e' vs 'other'"));
  CHECK_THAT(o.err, !Contains("model "));
  CHECK(o.out.empty());
}

namespace {

/// GPT-2 small on one RTX 4090, 2 steps, analytic, without the host-thread model (its step is the GPU's; with the
/// host model the step of so small a model is the host's at any of the test's sequence lengths): four sweep points
/// take about a second.
fs::path sweep_scenario(const fs::path& tmp) {
  const fs::path sc = tmp / "sweep.yaml";
  std::ofstream(sc)
      << "name: diff-sweep\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 1}\n"
         "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, fidelity: analytic, host_op_launch: 0, "
         "host_module_hook: 0, host_param_hook: 0}\n";
  return sc;
}

} // namespace

TEST_CASE("zerosim diff: two sweeps rerun with another --set are compared point by point", "[e2e]") {
  // A: zero.stage 1, 2 x micro-batch 1 at --set training.seq_len=256; B: the axes in the other order, zero.stage 2, 3,
  // at seq_len 1024. The point (stage 2, micro-batch 1) is in both whatever the axis order; stage 1 is only in A,
  // stage 3 only in B. Four times the tokens per sequence take the GPU longer: B's step time is larger (delta > 0).
  TempDir tmp;
  const fs::path sc = sweep_scenario(tmp.path());
  const fs::path a = tmp.path() / "a";
  const fs::path b = tmp.path() / "b";
  REQUIRE(zs(tmp.path(), {"sweep", sc.string(), "--axis", "zero.stage=1,2", "--axis", "training.micro_batch=1", "--set",
                          "training.seq_len=256", "--out", a.string(), "--jobs", "2", "--quiet"})
              .status == 0);
  REQUIRE(zs(tmp.path(), {"sweep", sc.string(), "--axis", "training.micro_batch=1", "--axis", "zero.stage=2,3", "--set",
                          "training.seq_len=1024", "--out", b.string(), "--jobs", "2", "--quiet"})
              .status == 0);
  const Outcome o = zs(tmp.path(), {"diff", a.string(), b.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK(o.err.empty());
  CHECK_THAT(o.out, Contains("A: " + a.string() + " (sweep of 'diff-sweep', 2 points)\n"));
  CHECK_THAT(o.out, Contains("--set overrides that differ:\n  training.seq_len: 256 -> 1024\n"));
  CHECK_THAT(o.out, Contains("scenario name: the same (diff-sweep)\n"));
  CHECK_THAT(o.out, Contains("1 point in both, in A's order (A -> B; s per steady-state step; GiB = 2^30 B):\n"));
  const std::size_t at = o.out.find("\n  zero.stage=2 training.micro_batch=1  fits/fits  ");
  REQUIRE(at != std::string::npos);
  // label, status, step A, "->", step B, delta %, tokens/s %, then memory A -> B twice.
  std::istringstream line(o.out.substr(at + 1, o.out.find('\n', at + 1) - at - 1));
  std::string label1, label2, status, step_a, arrow, step_b, delta, tokens;
  line >> label1 >> label2 >> status >> step_a >> arrow >> step_b >> delta >> tokens;
  CHECK(arrow == "->");
  CHECK(std::stod(step_b) > std::stod(step_a));
  CHECK(delta.front() == '+');
  CHECK(tokens.back() == '%');
  CHECK_THAT(o.out, Contains("\n\nonly in A: zero.stage=1 training.micro_batch=1\n"
                             "only in B: training.micro_batch=1 zero.stage=3\n"));
  CHECK_THAT(o.out, !Contains("n/a"));
  // A sweep against itself: every point pairs, nothing moved.
  const Outcome same = zs(tmp.path(), {"diff", a.string(), (a / "sweep.json").string()});
  INFO("stdout: " << same.out << "\nstderr: " << same.err);
  REQUIRE(same.status == 0);
  CHECK_THAT(same.out, Contains("--set overrides that differ: none") && Contains("2 points in both") &&
                           Contains("+0.0%") && !Contains("only in"));
}

TEST_CASE("zerosim diff: a sweep against a run, a malformed sweep.json or no common point is one line, exit 2",
          "[e2e]") {
  TempDir tmp;
  const fs::path sc = sweep_scenario(tmp.path());
  const fs::path sweep = tmp.path() / "sweep";
  const fs::path run = tmp.path() / "run";
  REQUIRE(zs(tmp.path(), {"sweep", sc.string(), "--axis", "zero.stage=1", "--out", sweep.string(), "--quiet"}).status ==
          0);
  REQUIRE(zs(tmp.path(), {"run", sc.string(), "--out", run.string(), "--quiet"}).status == 0);
  for (const auto& [x, y] : {std::pair{sweep, run}, std::pair{run, sweep}}) {
    const Outcome o = zs(tmp.path(), {"diff", x.string(), y.string()});
    INFO("stdout: " << o.out << "\nstderr: " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains("zerosim: diff: " + sweep.string() + " is a sweep (sweep.json) and " + run.string() +
                               " is a run directory: compare two sweeps, or two runs"));
    CHECK(o.out.empty());
  }
  // A scenario file is not simulated to find out.
  const Outcome file = zs(tmp.path(), {"diff", sweep.string(), sc.string()});
  CHECK(file.status == 2);
  CHECK_THAT(file.err, Contains(sc.string() + " is a scenario file"));
  CHECK(file.out.empty());

  const fs::path bad = tmp.path() / "bad";
  fs::create_directories(bad);
  std::ofstream(bad / "sweep.json") << "{\"scenario\": \"x\", \"axes\": [\n";
  const Outcome malformed = zs(tmp.path(), {"diff", sweep.string(), bad.string()});
  INFO("stderr: " << malformed.err);
  CHECK(malformed.status == 2);
  CHECK(lines(malformed.err) == 1);
  CHECK_THAT(malformed.err, Contains("zerosim: diff: " + (bad / "sweep.json").string() + ": malformed sweep.json: "));
  CHECK(malformed.out.empty());

  // A sweep with no row in common (here: none at all) is not an empty diff.
  const fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  std::ofstream(empty / "sweep.json")
      << R"({"scenario": "other", "axes": ["training.micro_batch"], "points_total": 0, "shard": "0/1", "rows": []})";
  const Outcome none = zs(tmp.path(), {"diff", sweep.string(), empty.string()});
  INFO("stderr: " << none.err);
  CHECK(none.status == 2);
  CHECK(lines(none.err) == 1);
  CHECK_THAT(none.err, Contains("zerosim: diff: no point of " + sweep.string() +
                                " (1 point, axes zero.stage) pairs "
                                "with one of " +
                                empty.string() + " (0 points, axes training.micro_batch)"));
  CHECK(none.out.empty());
}

TEST_CASE(
    "zerosim sweep: each point's GA and global batch are in sweep.csv and sweep.json, and diff reads older "
    "sweeps without them",
    "[e2e]") {
  // training.train_batch_size 4 on one GPU (N_d = 1): GA = 4 / (micro_batch x 1) = 4, 2, 1 for micro-batch 1, 2, 4,
  // and the global batch is 4 sequences at every point.
  TempDir tmp;
  const fs::path sc = sweep_scenario(tmp.path());
  const fs::path a = tmp.path() / "a";
  REQUIRE(zs(tmp.path(), {"sweep", sc.string(), "--axis", "training.micro_batch=1,2,4", "--set",
                          "training.train_batch_size=4", "--out", a.string(), "--jobs", "2", "--quiet"})
              .status == 0);
  std::ifstream csv_in(a / "sweep.csv");
  std::string header, line;
  std::getline(csv_in, header);
  // GA and the global batch, then the peak's phase and the steady-state peak, then the offload split and the resolved
  // overlap_comm (added later, so last).
  const std::string last =
      ",grad_accum,train_batch_size,peak_allocated_at,steady_peak_allocated_gib,"
      "exposed_offload_pcie_s,exposed_offload_nvme_s,overlap_comm,marginal_reason,marginal,collective_bound";
  REQUIRE(header.size() > last.size());
  CHECK(header.substr(header.size() - last.size()) == last);
  std::vector<std::string> tails;
  while (std::getline(csv_in, line)) {
    std::size_t at = line.size();
    for (int k = 0; k < 10; ++k) // the tenth comma from the end starts grad_accum's cell
      at = line.rfind(',', at - 1);
    const std::string tail = line.substr(at);
    tails.push_back(tail.substr(0, tail.find(',', tail.find(',', 1) + 1)));
  }
  CHECK(tails == std::vector<std::string>{",4,4", ",2,4", ",1,4"});
  nlohmann::json j = nlohmann::json::parse(std::ifstream(a / "sweep.json"));
  REQUIRE(j.at("rows").size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CHECK(j["rows"][i].at("grad_accum").get<int>() == 4 >> i);
    CHECK(j["rows"][i].at("train_batch_size").get<int>() == 4);
  }
  // A sweep written before the fields existed: the same rows without them. diff pairs the points as before.
  const fs::path old = tmp.path() / "old";
  fs::create_directories(old);
  for (auto& r : j["rows"]) {
    r.erase("grad_accum");
    r.erase("train_batch_size");
  }
  std::ofstream(old / "sweep.json") << j.dump(2);
  const Outcome o = zs(tmp.path(), {"diff", (old / "sweep.json").string(), a.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("3 points in both") && Contains("+0.0%") && !Contains("only in"));
}
