// `zerosim plot RUN_DIR [--out DIR] [--format png|svg]`: pictures of a finished run, drawn by gnuplot from the
// scripts analysis/plots.hpp generates. Each picture's script is kept next to it (NAME.gp) so it can be re-run or
// edited. The gnuplot executable is `gnuplot` on PATH, or $ZEROSIM_GNUPLOT when set.
#include "analysis/plots.hpp"
#include "apps/cli.hpp"

#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;

struct PlotOptions {
  std::string run_dir;
  std::string out_dir;  ///< "" = the run directory
  analysis::PlotFormat format = analysis::PlotFormat::PNG;
};

PlotOptions parse_plot_args(const std::vector<std::string>& args) {
  PlotOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* opt) -> std::string {
      if (i + 1 >= args.size())
        throw UsageError(std::string(opt) + " needs a value");
      return args[++i];
    };
    if (a == "--out") {
      o.out_dir = value("--out");
    } else if (a == "--format") {
      const std::string f = value("--format");
      if (f == "png")
        o.format = analysis::PlotFormat::PNG;
      else if (f == "svg")
        o.format = analysis::PlotFormat::SVG;
      else
        throw UsageError("--format: expected png or svg, got '" + f + "'");
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("plot: unknown option '" + a + "' (usage: zerosim plot RUN_DIR [--out DIR] [--format png|svg])");
    } else if (o.run_dir.empty()) {
      o.run_dir = a;
    } else {
      throw UsageError("plot: more than one run directory ('" + o.run_dir + "', '" + a + "')");
    }
  }
  if (o.run_dir.empty())
    throw UsageError("plot: missing RUN_DIR (usage: zerosim plot RUN_DIR [--out DIR] [--format png|svg])");
  return o;
}

/// The gnuplot executable: $ZEROSIM_GNUPLOT, else the first `gnuplot` on PATH. Throws Error when none.
std::string find_gnuplot() {
  if (const char* env = std::getenv("ZEROSIM_GNUPLOT"); env != nullptr && *env != '\0') {
    if (::access(env, X_OK) != 0)
      throw Error(std::string("gnuplot not found at ZEROSIM_GNUPLOT='") + env + "'");
    return env;
  }
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
  std::string d;
  while (std::getline(ss, d, ':')) {
    const fs::path p = fs::path(d.empty() ? "." : d) / "gnuplot";
    if (::access(p.c_str(), X_OK) == 0)
      return p.string();
  }
  throw Error("gnuplot not found on PATH (install the Debian package gnuplot-nox: scripts/install-deps.sh)");
}

/// Runs `gnuplot script` with its stdout/stderr in `log`; throws Error with gnuplot's first error line on failure.
void run_gnuplot(const std::string& gnuplot, const fs::path& script, const fs::path& log) {
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error("cannot start gnuplot (fork failed)");
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    ::execl(gnuplot.c_str(), gnuplot.c_str(), script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  std::ifstream in(log);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::error_code ec;
  fs::remove(log, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string first;
    std::stringstream ls(text);
    for (std::string l; std::getline(ls, l);)
      if (l.find_first_not_of(" \t^") != std::string::npos)
        first = first.empty() ? l : first;
    throw Error("gnuplot failed on " + script.string() + (first.empty() ? "" : ": " + first));
  }
}

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out)
    throw Error("cannot write " + p.string());
}

} // namespace

int plot_command(const std::vector<std::string>& args) {
  const PlotOptions o = parse_plot_args(args);
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
  const std::string gnuplot = find_gnuplot();
  const fs::path out_dir = o.out_dir.empty() ? fs::path(o.run_dir) : fs::path(o.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir))
    throw Error("cannot create output directory " + out_dir.string());
  const std::string ext = analysis::plot_extension(o.format);

  std::vector<std::pair<std::string, std::string>> jobs;  // (base name, script)
  for (std::size_t i = 0; i < run.variants.size(); ++i)
    for (int rank : analysis::memory_csv_ranks(rows[i])) {
      const std::string base = "memory-" + run.variants[i].name + "-rank" + std::to_string(rank);
      jobs.emplace_back(base, analysis::memory_timeline_script(rows[i], rank, run.variants[i], run.scenario,
                                                               (out_dir / (base + "." + ext)).string(), o.format));
    }
  jobs.emplace_back("step-breakdown",
                    analysis::step_breakdown_script(run, (out_dir / ("step-breakdown." + ext)).string(), o.format));
  jobs.emplace_back("peak-memory",
                    analysis::peak_memory_script(run, (out_dir / ("peak-memory." + ext)).string(), o.format));
  for (const auto& [base, script] : jobs) {
    const fs::path gp = out_dir / (base + ".gp");
    write_text(gp, script);
    run_gnuplot(gnuplot, gp, out_dir / (base + ".gnuplot.log"));
    std::cout << (out_dir / (base + "." + ext)).string() << "\n";
  }
  return 0;
}

} // namespace zerosim::cli
