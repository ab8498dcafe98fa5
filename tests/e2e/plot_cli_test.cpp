// End-to-end tests of `zerosim plot`: simulate a small run with the built binary (ZEROSIM_EXE), plot it with the
// installed gnuplot and check the files: PNG signature (PNG spec §5.2: 89 50 4E 47 0D 0A 1A 0A), SVG root element,
// one memory picture per variant and traced rank, and the one-line / exit-2 error contract.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::TempDir;
using zerosim::test::slurp;

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

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n' ? 1 : 0;
  return n;
}

} // namespace

TEST_CASE("zerosim plot: a two-variant run gives memory timelines, step breakdown and peak memory PNGs", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path());
  const fs::path pics = tmp.path() / "pics";
  const Outcome o = run_plot_zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  for (const char* f : {"memory-stage-0-rank0.png", "memory-stage-3-rank0.png", "step-breakdown.png",
                        "peak-memory.png"}) {
    INFO(f);
    CHECK(is_png(pics / f));
    CHECK_THAT(o.out, Contains(f));
  }
  // The scripts are kept, and a second plot of the same run writes the same script text.
  const std::string first = slurp(pics / "memory-stage-3-rank0.gp");
  CHECK_THAT(first, Contains("allocated GPU memory (GiB = 2^30 B)"));
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
