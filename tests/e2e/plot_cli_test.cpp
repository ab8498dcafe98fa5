// End-to-end tests of `zerosim plot`: simulate a small run with the built binary (ZEROSIM_EXE), plot it with the
// installed gnuplot and check the files: PNG signature (PNG spec §5.2: 89 50 4E 47 0D 0A 1A 0A), SVG root element,
// one memory picture per variant and traced rank, and the one-line / exit-2 error contract.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"
#include "tests/support/reserved_gap.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::slurp;
using zerosim::test::TempDir;

namespace {

/// Runs `zerosim args...` with stdout/stderr captured in `tmp` (working directory: the test's); `env` entries
/// ("K=V") are added to the environment.
Outcome run_plot_zerosim(const fs::path& tmp, const std::vector<std::string>& args,
                         const std::vector<std::string>& env = {}) {
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  opt.env = env;
  return zerosim::test::run_zerosim(tmp, args, opt);
}

/// GPT-2 small (124M) on one RTX 4090, stage 0 vs 3, 2 steps: fast, and fits.
fs::path small_run(const fs::path& tmp) {
  const fs::path sc = tmp / "small.yaml";
  std::ofstream(sc) << "name: plot-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 0}\n"
                       "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, on_oom: continue}\n"
                       "compare: {zero.stage: [0, 3]}\n";
  const fs::path out = tmp / "run";
  const Outcome o = run_plot_zerosim(tmp, {"run", sc.string(), "--out", out.string(), "--quiet"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  return out;
}

bool is_png(const fs::path& p) {
  const std::string b = slurp(p);
  return b.size() > 1000 && b.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) == 0;
}

std::size_t lines(const std::string& s) { return zerosim::test::count_lines(s); }

} // namespace

TEST_CASE("zerosim plot: a two-variant run gives memory timelines, step breakdown and peak memory PNGs", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path());
  const fs::path pics = tmp.path() / "pics";
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  for (const char* f :
       {"memory-stage-0-rank0.png", "memory-stage-3-rank0.png", "step-breakdown.png", "peak-memory.png"}) {
    INFO(f);
    CHECK(is_png(pics / f));
    CHECK_THAT(o.out, Contains(f));
  }
  // The scripts are kept, and a second plot of the same run writes the same script text.
  const std::string first = slurp(pics / "memory-stage-3-rank0.gp");
  CHECK_THAT(first, Contains("GPU memory (GiB = 2^30 B)") && Contains("reserved (caching allocator)"));
  // The gap between the allocated stack and the reserved line is drawn: reserved - allocated of memory.csv.
  for (const char* v : {"stage-0", "stage-3"}) {
    INFO(v);
    const auto gap = zerosim::test::check_reserved_gap(slurp(pics / ("memory-" + std::string(v) + "-rank0.gp")),
                                                       slurp(run / v / "memory.csv"), 0);
    CHECK(gap.band);
    CHECK(gap.rows > 100);
    CHECK(gap.mismatches == std::vector<std::string>{});
  }
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()}).status == 0);
  CHECK(slurp(pics / "memory-stage-3-rank0.gp") == first);
}

TEST_CASE("zerosim plot: --format svg writes SVG files into the run directory", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path());
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", (run / "stage-3").string(), "--format", "svg"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  const std::string svg = slurp(run / "stage-3" / "memory-stage-3-rank0.svg");
  CHECK_THAT(svg, Contains("<svg"));
  CHECK_THAT(slurp(run / "stage-3" / "peak-memory.svg"), Contains("</svg>"));
}

TEST_CASE("zerosim plot: a missing directory, a bad format or a missing gnuplot is one line and exit 2", "[e2e]") {
  TempDir tmp;
  const Outcome missing = run_plot_zerosim(tmp.path(), {"plot", (tmp.path() / "nope").string()});
  CHECK(missing.status == 2);
  CHECK(lines(missing.err) == 1);
  CHECK_THAT(missing.err, Contains("zerosim: ") && Contains("does not exist"));

  const Outcome empty = run_plot_zerosim(tmp.path(), {"plot", tmp.path().string()});
  CHECK(empty.status == 2);
  CHECK_THAT(empty.err, Contains("neither summary.json nor result.json"));

  const Outcome fmt = run_plot_zerosim(tmp.path(), {"plot", tmp.path().string(), "--format", "gif"});
  CHECK(fmt.status == 2);
  CHECK_THAT(fmt.err, Contains("--format"));

  const fs::path run = small_run(tmp.path());
  const Outcome no_gnuplot =
      run_plot_zerosim(tmp.path(), {"plot", run.string()}, {"ZEROSIM_GNUPLOT=" + (tmp.path() / "no-gnuplot").string()});
  CHECK(no_gnuplot.status == 2);
  CHECK(lines(no_gnuplot.err) == 1);
  CHECK_THAT(no_gnuplot.err, Contains("gnuplot not found"));
}

TEST_CASE("zerosim plot: --y-range fit fits the memory axis to the data, a bad value is one line and exit 2", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path()); // GPT-2 small on a 24 GiB RTX 4090: peaks of a few GiB
  const fs::path fit = tmp.path() / "fit";
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", fit.string(), "--y-range", "fit"});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  for (const char* f : {"peak-memory.png", "memory-stage-3-rank0.png"}) {
    INFO(f);
    CHECK(is_png(fit / f));
    CHECK_THAT(o.out, Contains(f));
  }
  // The capacity line is off the fitted axis: not drawn, its value in the title.
  const std::string off = "is above this axis (fitted to the data: --y-range fit)";
  for (const char* gp : {"peak-memory.gp", "memory-stage-0-rank0.gp"}) {
    INFO(gp);
    CHECK_THAT(slurp(fit / gp), Contains("device capacity 23.99 GiB " + off) && !Contains("set arrow 1"));
  }
  // The default (capacity) draws the line and says nothing of it.
  const fs::path cap = tmp.path() / "cap";
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", cap.string()}).status == 0);
  CHECK_THAT(slurp(cap / "peak-memory.gp"), Contains("set arrow 1") && !Contains(off));

  const Outcome bad = run_plot_zerosim(tmp.path(), {"plot", run.string(), "--y-range", "auto"});
  CHECK(bad.status == 2);
  CHECK(lines(bad.err) == 1);
  CHECK_THAT(bad.err, Contains("--y-range: expected capacity or fit, got 'auto'"));
}

TEST_CASE("zerosim plot and report: a file, an empty or bad directory name the problem in one line", "[e2e]") {
  TempDir tmp;
  const fs::path file = tmp.path() / "notes.md";
  std::ofstream(file) << "# not a run\n";
  for (const char* cmd : {"plot", "report"}) {
    const Outcome o = run_plot_zerosim(tmp.path(), {cmd, file.string()});
    INFO(cmd << ": " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains("is not a directory") && !Contains("does not exist"));
  }
  // An empty directory: plot also takes sweep directories, and says so.
  const fs::path empty = tmp.path() / "empty";
  fs::create_directories(empty);
  const Outcome e = run_plot_zerosim(tmp.path(), {"plot", empty.string()});
  CHECK(e.status == 2);
  CHECK_THAT(e.err, Contains("sweep.json") && Contains("zerosim sweep"));
  // A sweep.json without its keys: the file and the missing key, not the JSON library's message.
  const fs::path sweep = tmp.path() / "sweep";
  fs::create_directories(sweep);
  std::ofstream(sweep / "sweep.json") << "{\"rows\":[]}\n";
  const Outcome sw = run_plot_zerosim(tmp.path(), {"plot", sweep.string()});
  CHECK(sw.status == 2);
  CHECK(lines(sw.err) == 1);
  CHECK_THAT(sw.err, Contains((sweep / "sweep.json").string() + ": malformed sweep.json: missing key 'scenario'"));
  CHECK_THAT(sw.err, !Contains("json.exception"));
  // A result.json of {}: plot rejects it as report does, and draws nothing.
  const fs::path bare = tmp.path() / "bare";
  fs::create_directories(bare);
  std::ofstream(bare / "result.json") << "{}\n";
  for (const char* cmd : {"plot", "report"}) {
    const Outcome o = run_plot_zerosim(tmp.path(), {cmd, bare.string()});
    INFO(cmd << ": " << o.err);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Contains("result.json: no \"summary\" object"));
  }
  CHECK_FALSE(fs::exists(bare / "step-breakdown.png"));
}

// ---- `zerosim plot SWEEP_DIR` ------------------------------------------------------------------------------------

namespace {

/// GPT-2 small on DGX A100 nodes (8 GPUs each), analytic fidelity, 2 steps: cluster.nodes {1, 2} x
/// training.micro_batch {1, 2} = 4 points of 8 and 16 GPUs, each well under a second. `axes` replaces the grid.
fs::path small_sweep(const fs::path& tmp, const std::vector<std::string>& axes) {
  const fs::path sc = tmp / "sweep.yaml";
  std::ofstream(sc) << "name: plot-sweep-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 2}\n"
                       "cluster: {topology: dgx-a100, nodes: 1}\n"
                       "simulation: {steps: 2, fidelity: analytic, on_oom: continue}\n";
  const fs::path out = tmp / "sweep";
  std::vector<std::string> args{"sweep", sc.string(), "--out", out.string(), "--jobs", "2", "--quiet"};
  for (const auto& a : axes) {
    args.push_back("--axis");
    args.push_back(a);
  }
  const Outcome o = run_plot_zerosim(tmp, args);
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  return out;
}

/// Minimal XML well-formedness check (W3C XML 1.0 §2.1 document = prolog element Misc*): after the prolog
/// (XML declaration, comments, DOCTYPE) there is exactly one root element, named `root`, and every start tag is
/// closed in order. Returns "" when it holds, else what is wrong.
std::string xml_problem(const std::string& text, const std::string& root) {
  std::vector<std::string> open;
  bool root_seen = false;
  std::size_t i = 0;
  while ((i = text.find('<', i)) != std::string::npos) {
    if (text.compare(i, 4, "<!--") == 0) {
      const auto e = text.find("-->", i);
      if (e == std::string::npos)
        return "unterminated comment";
      i = e + 3;
      continue;
    }
    if (text.compare(i, 9, "<![CDATA[") == 0) {
      const auto e = text.find("]]>", i);
      if (e == std::string::npos)
        return "unterminated CDATA";
      i = e + 3;
      continue;
    }
    const auto e = text.find('>', i);
    if (e == std::string::npos)
      return "unterminated tag";
    const std::string tag = text.substr(i + 1, e - i - 1);
    i = e + 1;
    if (tag.empty() || tag[0] == '?' || tag[0] == '!')
      continue; // declaration, processing instruction, DOCTYPE
    if (tag[0] == '/') {
      const std::string name = tag.substr(1, tag.find_first_of(" \t\r\n", 1) - 1);
      if (open.empty() || open.back() != name)
        return "unbalanced </" + name + ">";
      open.pop_back();
      continue;
    }
    const std::string name = tag.substr(0, tag.find_first_of(" \t\r\n/"));
    if (open.empty()) {
      if (root_seen)
        return "a second root element <" + name + ">";
      if (name != root)
        return "root element <" + name + ">, expected <" + root + ">";
      root_seen = true;
    }
    if (tag.back() != '/')
      open.push_back(name);
  }
  if (!root_seen)
    return "no root element";
  return open.empty() ? std::string() : "unclosed <" + open.back() + ">";
}

} // namespace

TEST_CASE("zerosim plot and report: a folder of separate runs names them and what the command takes", "[e2e]") {
  // runs/ holding runs/cmp (a comparison: summary.json and two variant folders) and runs/single (one run, written
  // by --set compare=null): neither command draws anything; one line lists both folders, exit 2. Before, they were
  // called "completed variants" of a run that "did not finish", and the comparison was left out.
  TempDir tmp;
  const fs::path runs = tmp.path() / "runs";
  fs::create_directories(runs);
  const fs::path cmp = small_run(tmp.path());
  fs::rename(cmp, runs / "cmp");
  const Outcome single = run_plot_zerosim(tmp.path(), {"run", (tmp.path() / "small.yaml").string(), "--set",
                                                       "compare=null", "--out", (runs / "single").string(), "--quiet"});
  REQUIRE(single.status == 0);
  for (const char* cmd : {"plot", "report"}) {
    const Outcome o = run_plot_zerosim(tmp.path(), {cmd, runs.string()});
    INFO(cmd << ": " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains("zerosim: '" + runs.string() + "' is not one run's folder but holds 2 run folders (" +
                               (runs / "cmp").string() + ", " + (runs / "single").string() + "): `zerosim " + cmd +
                               "` takes the folder of one `zerosim run` (summary.json or result.json)"));
    CHECK_THAT(o.err, !Contains("did not finish"));
  }
  CHECK_FALSE(fs::exists(runs / "peak-memory.png"));
  CHECK_FALSE(fs::exists(runs / "report.html"));
}

TEST_CASE("zerosim plot: a sweep over nodes and micro-batch gives breakdown, scaling and memory pictures", "[e2e]") {
  TempDir tmp;
  const fs::path sweep = small_sweep(tmp.path(), {"cluster.nodes=1,2", "training.micro_batch=1,2"});
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", sweep.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  for (const char* f : {"sweep-breakdown.png", "sweep-scaling.png", "sweep-memory.png"}) {
    INFO(f);
    CHECK(is_png(sweep / f));
    CHECK_THAT(o.out, Contains(f));
  }
  CHECK_THAT(o.out, !Contains("skipped"));
  // The scripts hold the data: 1 and 2 nodes of 8 GPUs = 8 and 16 GPUs on the scaling x axis (one line per
  // micro-batch), micro-batch 1 and 2 on the memory x axis (one line per node count), one bar per point.
  const std::string scaling = slurp(sweep / "sweep-scaling.gp");
  CHECK_THAT(scaling, Contains("set xtics nomirror (\"8\" 8, \"16\" 16)"));
  CHECK_THAT(scaling, Contains("title \"micro_batch=1\"") && Contains("title \"micro_batch=2\""));
  const std::string memory = slurp(sweep / "sweep-memory.gp");
  CHECK_THAT(memory, Contains("set xtics nomirror (\"1\" 1, \"2\" 2)"));
  CHECK_THAT(memory, Contains("title \"nodes=1: peak allocated\""));
  const std::string breakdown = slurp(sweep / "sweep-breakdown.gp");
  CHECK_THAT(breakdown, Contains("\"nodes=2 micro_batch=2\""));
  // Plotting again writes the same script bytes.
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", sweep.string()}).status == 0);
  CHECK(slurp(sweep / "sweep-scaling.gp") == scaling);
  CHECK(slurp(sweep / "sweep-memory.gp") == memory);

  // SVG into another directory: each file is an XML document whose root element is <svg>.
  const fs::path svg_dir = tmp.path() / "svg";
  const Outcome s =
      run_plot_zerosim(tmp.path(), {"plot", sweep.string(), "--format", "svg", "--out", svg_dir.string()});
  INFO("stderr: " << s.err);
  REQUIRE(s.status == 0);
  for (const char* f : {"sweep-breakdown.svg", "sweep-scaling.svg", "sweep-memory.svg"}) {
    INFO(f);
    const std::string text = slurp(svg_dir / f);
    CHECK(text.size() > 1000);
    CHECK(xml_problem(text, "svg").empty());
  }
}

TEST_CASE("zerosim plot: a sweep without the axis a picture needs says which were skipped and why", "[e2e]") {
  TempDir tmp;
  const fs::path sweep = small_sweep(tmp.path(), {"zero.stage=0,3"});
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", sweep.string(), "--out", (tmp.path() / "p").string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK(is_png(tmp.path() / "p" / "sweep-breakdown.png"));
  CHECK_THAT(o.out, Contains("skipped sweep-scaling: every completed point runs on 8 GPU(s)"));
  CHECK_THAT(o.out, Contains("skipped sweep-memory: training.micro_batch is not swept"));
  CHECK_FALSE(fs::exists(tmp.path() / "p" / "sweep-scaling.png"));
  CHECK_FALSE(fs::exists(tmp.path() / "p" / "sweep-memory.png"));
}

TEST_CASE(
    "zerosim plot: a single variant that ran out of memory draws its step breakdown (gnuplot 5.4 crashed on "
    "it), and a failed gnuplot leaves no picture behind",
    "[e2e]") {
  // GPT-2 small at stage 0 needs ~2 GB of model states alone: on a 1 GiB card it runs out of memory and, with
  // on_oom: continue, is timed past it. Its breakdown bar carries a two-line "OOM" label and no one-line label:
  // the one-line label plot had no point, and gnuplot 5.4 died of SIGSEGV on such a one-row histogram.
  TempDir tmp;
  const fs::path sc = tmp.path() / "oom.yaml";
  std::ofstream(sc) << "name: plot-oom\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 0}\n"
                       "cluster: {topology: one-rtx4090, gpu: {memory: 1GiB}}\n"
                       "simulation: {steps: 2, on_oom: continue}\n";
  const fs::path run = tmp.path() / "run";
  REQUIRE(run_plot_zerosim(tmp.path(), {"run", sc.string(), "--out", run.string(), "--quiet"}).status == 0);
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", run.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK(is_png(run / "step-breakdown.png"));
  CHECK_THAT(slurp(run / "step-breakdown.gp"), Contains("OOM") && !Contains("== 1 ?"));

  // A gnuplot that writes part of its picture and fails: the picture is removed, one line, exit 2.
  const fs::path fake = tmp.path() / "fake-gnuplot";
  std::ofstream(fake) << "#!/bin/sh\nout=$(sed -n 's/^set output \"\\(.*\\)\"$/\\1/p' \"$1\")\n"
                         "printf 'half' > \"$out\"\necho 'line 3: something broke' >&2\nexit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  const fs::path pics = tmp.path() / "pics";
  const Outcome bad = run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()},
                                       {"ZEROSIM_GNUPLOT=" + fake.string()});
  CHECK(bad.status == 2);
  CHECK(lines(bad.err) == 1);
  CHECK_THAT(bad.err, Contains("gnuplot failed") && Contains("something broke"));
  for (const auto& e : fs::directory_iterator(pics)) {
    INFO(e.path());
    CHECK(e.path().extension() != ".png");
  }
}

TEST_CASE("zerosim plot and report: an interrupted sweep (journal, no sweep.json) says to finish it first", "[e2e]") {
  // New-user trial: after Ctrl-C of a sweep, plot called its folder "not a `zerosim run` or `zerosim sweep` output
  // directory" while diff said "an unfinished sweep". The journal line is a minimal row: only its presence matters.
  TempDir tmp;
  const fs::path sweep = tmp.path() / "sweep";
  fs::create_directories(sweep);
  std::ofstream(sweep / "journal.jsonl") << "{\"key\": \"k\"}\n";
  for (const char* cmd : {"plot", "report"}) {
    const Outcome o = run_plot_zerosim(tmp.path(), {cmd, sweep.string()});
    INFO(cmd << ": " << o.err);
    CHECK(o.status == 2);
    CHECK(lines(o.err) == 1);
    CHECK_THAT(o.err, Contains("'" + sweep.string() +
                               "' holds an unfinished sweep (journal.jsonl, no sweep.json): run the same `zerosim "
                               "sweep` command again to finish it"));
  }
  CHECK_FALSE(fs::exists(sweep / "report.html"));
}

TEST_CASE("zerosim run, report, plot and sweep: with GA=4 every step-time label says a step is 4 micro-steps",
          "[e2e]") {
  // With gradient accumulation one optimizer step runs GA forward-backward micro-steps; the step time and its
  // breakdown sum all of them. GA=4 is set in the scenario; without it (GA=1) nothing is added.
  TempDir tmp;
  const std::string base =
      "model: gpt2\nzero: {stage: 2}\ncluster: {topology: one-rtx4090}\n"
      "simulation: {steps: 2, on_oom: continue}\n";
  const std::string label = "per optimizer step, GA=4 micro-steps";
  std::ofstream(tmp.path() / "ga4.yaml") << "name: ga4\ntraining: {micro_batch: 1, seq_len: 256, grad_accum: 4}\n"
                                         << base;
  const fs::path run = tmp.path() / "run";
  const Outcome o = run_plot_zerosim(tmp.path(), {"run", (tmp.path() / "ga4.yaml").string(), "--out", run.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains(" s " + label + " (steady state"));
  CHECK_THAT(o.out, Contains("step breakdown:    (" + label + ") GPU compute:"));
  REQUIRE(run_plot_zerosim(tmp.path(), {"report", run.string()}).status == 0);
  CHECK_THAT(slurp(run / "report.html"), Contains("<h2>Step-time breakdown (" + label + ")</h2>"));
  const fs::path pics = tmp.path() / "pics";
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()}).status == 0);
  CHECK_THAT(slurp(pics / "step-breakdown.gp"), Contains("set ylabel \"time " + label + " (s)\""));

  // A sweep whose points share GA=4: the y label says it.
  std::ofstream(tmp.path() / "sweep4.yaml") << "name: ga4-sweep\ntraining: {micro_batch: 1, seq_len: 256, "
                                               "grad_accum: 4}\nsweep: {zero.stage: [1, 2]}\n"
                                            << base;
  const fs::path sw4 = tmp.path() / "sw4";
  REQUIRE(
      run_plot_zerosim(tmp.path(), {"sweep", (tmp.path() / "sweep4.yaml").string(), "--out", sw4.string(), "--quiet"})
          .status == 0);
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", sw4.string(), "--out", (tmp.path() / "p4").string()}).status == 0);
  CHECK_THAT(slurp(tmp.path() / "p4" / "sweep-breakdown.gp"), Contains("set ylabel \"time " + label + " (s)\""));

  // train_batch_size 4 on one GPU with micro_batch swept: GA = 4 / (micro_batch x 1) = 4 and 2, which the point
  // labels (micro_batch only) would not show: each bar says its GA.
  std::ofstream(tmp.path() / "sweep-tbs.yaml") << "name: tbs-sweep\ntraining: {micro_batch: 1, seq_len: 256, "
                                                  "train_batch_size: 4}\nsweep: {training.micro_batch: [1, 2]}\n"
                                               << base;
  const fs::path sws = tmp.path() / "sws";
  REQUIRE(run_plot_zerosim(tmp.path(),
                           {"sweep", (tmp.path() / "sweep-tbs.yaml").string(), "--out", sws.string(), "--quiet"})
              .status == 0);
  REQUIRE(run_plot_zerosim(tmp.path(), {"plot", sws.string(), "--out", (tmp.path() / "ps").string()}).status == 0);
  const std::string gp = slurp(tmp.path() / "ps" / "sweep-breakdown.gp");
  CHECK_THAT(gp, Contains("set ylabel \"time per optimizer step (s)\""));
  CHECK_THAT(gp, Contains("\"micro_batch=1 GA=4\""));
  CHECK_THAT(gp, Contains("\"micro_batch=2 GA=2\""));

  // GA=1: a step is one forward-backward pass, and nothing is added.
  std::ofstream(tmp.path() / "ga1.yaml") << "name: ga1\ntraining: {micro_batch: 1, seq_len: 256}\n" << base;
  const Outcome o1 =
      run_plot_zerosim(tmp.path(), {"run", (tmp.path() / "ga1.yaml").string(), "--out", (tmp.path() / "r1").string()});
  REQUIRE(o1.status == 0);
  CHECK_THAT(o1.out, Contains("step breakdown:    GPU compute:"));
  CHECK_THAT(o1.out, !Contains("optimizer step, GA="));
}

TEST_CASE(
    "zerosim plot: a run whose variants all ran out of memory at initialisation skips the breakdown and marks "
    "the failed request",
    "[e2e]") {
  // LLaMA-2 7B (Ψ = 6,738,415,616) at stage 0 on one 24 GiB RTX 4090, on_oom: stop: the bf16 params take 2Ψ B =
  // 12.55 GiB, then the next request at initialisation does not fit, so no step runs (newuser23 finding 11).
  TempDir tmp;
  const fs::path sc = tmp.path() / "io.yaml";
  std::ofstream(sc) << "name: init-oom\nmodel: llama-2-7b\ntraining: {micro_batch: 1, seq_len: 256}\n"
                       "zero: {stage: 0}\ncluster: {topology: one-rtx4090}\nsimulation: {steps: 2, on_oom: stop}\n";
  const fs::path run = tmp.path() / "run";
  REQUIRE(run_plot_zerosim(tmp.path(), {"run", sc.string(), "--out", run.string(), "--quiet"}).status == 0);
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", run.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("skipped step-breakdown: no variant completed a step (each ran out of memory first: "
                             "nothing to break down)\n"));
  CHECK_FALSE(fs::exists(run / "step-breakdown.png"));
  CHECK(is_png(run / "peak-memory.png"));
  CHECK(is_png(run / "memory-init-oom-rank0.png"));
  const std::string gp = slurp(run / "memory-init-oom-rank0.gp");
  // Every change at t = 0: the x axis counts them instead of running 0 .. 1e-9 s.
  CHECK_THAT(gp, Contains("set xlabel \"initialisation (every change at simulated t = 0 s): allocations and frees"));
  CHECK_THAT(gp, !Contains("1e-09") && !Contains("0.000000001"));
  // The failed request is drawn from the 2Ψ B = 13,476,831,232 B = 12.551 GiB of params upward, and named.
  CHECK_THAT(gp, Contains("set object 1 rect from ") && Contains(",12.551") && Contains("\"failed request: '"));
}
