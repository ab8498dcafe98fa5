// `zerosim plot RUN_DIR|SWEEP_DIR [--out DIR] [--format png|svg] [--y-range capacity|fit]`: pictures of a finished run, or of a sweep's
// sweep.json (`zerosim sweep --out SWEEP_DIR`), drawn by gnuplot from the scripts analysis/plots.hpp generates. Each picture's script is kept next to it (NAME.gp) so it can be re-run or
// edited. The gnuplot executable is `gnuplot` on PATH, or $ZEROSIM_GNUPLOT when set.
#include "analysis/atomic_file.hpp"
#include "analysis/plots.hpp"
#include "analysis/sweep.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: zerosim plot RUN_DIR|SWEEP_DIR [--out DIR] [--format png|svg] [--y-range capacity|fit]";

constexpr const char* kHelp = R"(

zerosim plot options:
  --out DIR             directory to write the pictures and their gnuplot
                        scripts (NAME.gp) into (default: RUN_DIR|SWEEP_DIR)
  --format png|svg      picture format (default png)
  --y-range capacity|fit
                        memory axis of a run's memory timelines and peak
                        memory bars and of a sweep's memory picture: up to
                        the GPU's capacity (default: how close to the
                        limit), or fitted to the data (~1.2 x the largest
                        value; the title names the capacity when its line
                        is off the chart)
  -h [ --help ]         show this help

A run directory gives a memory timeline per traced rank, the step-time
breakdown and the peak memory by tag; a sweep directory the breakdown per
point, tokens/s and MFU vs GPUs and peak memory vs micro-batch, those its axes
allow. gnuplot is `gnuplot` on PATH, or $ZEROSIM_GNUPLOT.
)";

struct PlotOptions {
  bool help = false; ///< -h / --help: print the usage, draw nothing
  std::string run_dir;
  std::string out_dir; ///< "" = the run directory
  analysis::PlotFormat format = analysis::PlotFormat::PNG;
  analysis::YRange y_range = analysis::YRange::Capacity;
};

/// The value of option `opt` among `choices` (name, value); a UsageError listing the names otherwise.
template <class T>
T choose(const char* opt, const std::string& v, std::initializer_list<std::pair<const char*, T>> choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (v == name)
      return value;
    names += (names.empty() ? "" : " or ") + std::string(name);
  }
  throw UsageError(std::string(opt) + ": expected " + names + ", got '" + v + "'");
}

PlotOptions parse_plot_args(const std::vector<std::string>& args) {
  PlotOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* opt) -> std::string {
      if (i + 1 >= args.size())
        throw UsageError(std::string(opt) + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      o.help = true;
      return o;
    } else if (a == "--out") {
      o.out_dir = value("--out");
    } else if (a == "--format") {
      o.format = choose("--format", value("--format"),
                        {std::pair{"png", analysis::PlotFormat::PNG}, std::pair{"svg", analysis::PlotFormat::SVG}});
    } else if (a == "--y-range") {
      o.y_range = choose("--y-range", value("--y-range"),
                         {std::pair{"capacity", analysis::YRange::Capacity}, std::pair{"fit", analysis::YRange::Fit}});
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("plot: unknown option '" + a + "' (" + kUsage + ")");
    } else if (o.run_dir.empty()) {
      o.run_dir = a;
    } else {
      throw UsageError("plot: more than one run directory ('" + o.run_dir + "', '" + a + "')");
    }
  }
  if (o.run_dir.empty())
    throw UsageError(std::string("plot: missing RUN_DIR (") + kUsage + ")");
  if (!o.out_dir.empty())
    check_out_not_root("plot", "--out", o.out_dir);
  return o;
}

void write_text(const fs::path& p, const std::string& text) { analysis::write_file_atomic(p.string(), text); }

/// `zerosim plot SWEEP_DIR`: the sweep pictures that the swept axes allow; the others are named on stdout with the
/// reason. Throws Error when none can be drawn.
int plot_sweep(const PlotOptions& o) {
  const analysis::SweepTable table = analysis::load_sweep_table(o.run_dir);
  const fs::path out_dir = o.out_dir.empty() ? fs::path(o.run_dir) : fs::path(o.out_dir);
  const std::vector<analysis::SweepPicture> pictures =
      analysis::sweep_pictures(table, out_dir.string(), o.format, o.y_range);
  // invalid: combinations the scenario loader rejected, never simulated.
  const auto [failed, invalid] = analysis::count_failures(table.rows);
  if (std::none_of(pictures.begin(), pictures.end(), [](const auto& p) { return p.skipped.empty(); }))
    throw Error("sweep " + o.run_dir + " gives no picture: " + pictures.front().skipped);
  const std::string gnuplot = analysis::find_gnuplot();
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir))
    throw Error("cannot create output directory " + out_dir.string());
  const std::string ext = analysis::plot_extension(o.format);
  for (const auto& p : pictures) {
    if (!p.skipped.empty()) {
      std::cout << "skipped " << p.name << ": " << p.skipped << "\n";
      continue;
    }
    const fs::path gp = out_dir / (p.name + ".gp");
    write_text(gp, p.script);
    analysis::run_gnuplot(gnuplot, gp.string(), (out_dir / (p.name + ".gnuplot.log")).string(),
                          (out_dir / (p.name + "." + ext)).string());
    std::cout << (out_dir / (p.name + "." + ext)).string() << "\n";
  }
  if (failed > 0)
    std::cout << "not drawn: " << failed << " of " << table.rows.size()
              << " points failed (status error in sweep.csv)\n";
  if (invalid > 0)
    std::cout << "not drawn: " << invalid << " of " << table.rows.size()
              << " points are invalid combinations (status invalid in sweep.csv)\n";
  return 0;
}

} // namespace

int plot_command(const std::vector<std::string>& args) {
  const PlotOptions o = parse_plot_args(args);
  if (o.help) {
    std::cout << kUsage << kHelp;
    return 0;
  }
  if (analysis::is_sweep_dir(o.run_dir))
    return plot_sweep(o);
  analysis::require_run_dir(o.run_dir);
  const fs::path dir(o.run_dir);
  // A run stopped before its summary.json (Ctrl-C) but with finished variants, or a folder holding separate runs:
  // load_plot_run names them in its error.
  if (!fs::exists(dir / "summary.json") && !fs::exists(dir / "result.json") &&
      analysis::finished_variant_dirs(o.run_dir).empty() && analysis::run_folders_in(o.run_dir, true).empty() &&
      !fs::exists(dir / "journal.jsonl"))
    throw Error("'" + o.run_dir +
                "' has neither summary.json nor result.json, nor sweep.json (not a `zerosim run` or `zerosim sweep` "
                "output directory)");
  const analysis::PlotRun run = analysis::load_plot_run(o.run_dir);
  // Read every memory.csv before drawing anything, so bad input fails before files are written.
  std::vector<std::vector<analysis::MemoryCsvRow>> rows;
  for (const auto& v : run.variants) {
    if (v.memory_csv.empty())
      throw Error("variant '" + v.label + "' has no memory.csv in " + o.run_dir);
    std::ifstream in(v.memory_csv);
    if (!in)
      throw Error("cannot read " + v.memory_csv);
    rows.push_back(analysis::parse_memory_csv(in, v.memory_csv));
  }
  const std::string gnuplot = analysis::find_gnuplot();
  const fs::path out_dir = o.out_dir.empty() ? fs::path(o.run_dir) : fs::path(o.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir))
    throw Error("cannot create output directory " + out_dir.string());
  const std::string ext = analysis::plot_extension(o.format);

  std::vector<std::pair<std::string, std::string>> jobs; // (base name, script)
  for (std::size_t i = 0; i < run.variants.size(); ++i)
    for (int rank : analysis::memory_csv_ranks(rows[i])) {
      const std::string base = "memory-" + run.variants[i].name + "-rank" + std::to_string(rank);
      jobs.emplace_back(base,
                        analysis::memory_timeline_script(rows[i], rank, run.variants[i], run.scenario,
                                                         (out_dir / (base + "." + ext)).string(), o.format, o.y_range));
    }
  // No variant with a step: no empty chart, a line saying why (as for sweep pictures without data).
  const std::string no_breakdown = analysis::step_breakdown_skip_reason(run);
  if (no_breakdown.empty())
    jobs.emplace_back("step-breakdown",
                      analysis::step_breakdown_script(run, (out_dir / ("step-breakdown." + ext)).string(), o.format));
  jobs.emplace_back("peak-memory", analysis::peak_memory_script(run, (out_dir / ("peak-memory." + ext)).string(),
                                                                o.format, o.y_range));
  for (const auto& [base, script] : jobs) {
    const fs::path gp = out_dir / (base + ".gp");
    write_text(gp, script);
    analysis::run_gnuplot(gnuplot, gp.string(), (out_dir / (base + ".gnuplot.log")).string(),
                          (out_dir / (base + "." + ext)).string());
    std::cout << (out_dir / (base + "." + ext)).string() << "\n";
  }
  if (!no_breakdown.empty())
    std::cout << "skipped step-breakdown: " << no_breakdown << "\n";
  return 0;
}

} // namespace zerosim::cli
