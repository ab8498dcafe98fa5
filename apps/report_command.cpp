// `zerosim report RUN_DIR [--out FILE]`: one self-contained HTML page of a finished run (analysis/report.hpp), by
// default RUN_DIR/report.html. The pictures are drawn by gnuplot (analysis/plots.hpp); without gnuplot the page
// is still written, says why the pictures are missing, and a warning goes to stderr.
#include "analysis/report.hpp"
#include "apps/cli.hpp"

#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

namespace zerosim::cli {

namespace {

constexpr const char* kUsage = "usage: zerosim report RUN_DIR [--out FILE]";

constexpr const char* kHelp = R"(

zerosim report options:
  --out FILE            the HTML file to write (default RUN_DIR/report.html)
  -h [ --help ]         show this help

One self-contained HTML page of a finished run: summary, step breakdown, peak
attribution, the plots and a stream timeline of one step; it opens offline.
)";

struct ReportOptions {
  bool help = false; ///< -h / --help: print the usage, write nothing
  std::string run_dir;
  std::string out_file; ///< "" = RUN_DIR/report.html
};

ReportOptions parse_report_args(const std::vector<std::string>& args) {
  ReportOptions o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.help = true;
      return o;
    } else if (a == "--out") {
      if (i + 1 >= args.size())
        throw UsageError(std::string("report: --out needs a value (") + kUsage + ")");
      o.out_file = args[++i];
      if (o.out_file.empty())
        throw UsageError(std::string("report: --out needs a non-empty file name (") + kUsage + ")");
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("report: unknown option '" + a + "' (" + kUsage + ")");
    } else if (o.run_dir.empty()) {
      o.run_dir = a;
    } else {
      throw UsageError("report: more than one run directory ('" + o.run_dir + "', '" + a + "')");
    }
  }
  if (o.run_dir.empty())
    throw UsageError(std::string("report: missing RUN_DIR (") + kUsage + ")");
  return o;
}

} // namespace

int report_command(const std::vector<std::string>& args) {
  const ReportOptions o = parse_report_args(args);
  if (o.help) {
    std::cout << kUsage << kHelp;
    return 0;
  }
  if (!o.out_file.empty() && std::filesystem::is_directory(o.out_file))
    throw UsageError("report: --out " + o.out_file + " is a directory; give the HTML file to write, e.g. " +
                     (std::filesystem::path(o.out_file) / "report.html").string());
  const std::string out = o.out_file.empty() ? (std::filesystem::path(o.run_dir) / "report.html").string() : o.out_file;
  const std::string note = analysis::write_report(o.run_dir, out);
  if (!note.empty())
    std::cerr << "zerosim: warning: " << one_line(note) << "\n";
  std::cout << out << "\n";
  return 0;
}

} // namespace zerosim::cli
