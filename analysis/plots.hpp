// Pictures of a finished run: gnuplot scripts generated from a run directory's memory.csv, result.json and
// summary.json (the `zerosim plot` command runs gnuplot on them). Three kinds of picture:
//  - the memory timeline of one traced rank: allocated GPU memory over simulated time, stacked by tag, with the
//    device capacity as a line and the peak marked and labelled;
//  - the step-time breakdown across variants (stacked bars);
//  - the peak allocated memory by tag across variants (stacked bars, capacity line).
// Each script is self-contained (the data are inline gnuplot data blocks, gnuplot >= 5.0) and depends only on the
// data: the same run gives the same script text, byte for byte. GiB = 2^30 B, times in s (house rule, PREAMBLE).
#pragma once

#include <cstdint>
#include <istream>
#include <map>
#include <string>
#include <vector>

namespace zerosim::analysis {

/// Output format of the pictures: PNG (gnuplot `pngcairo`) or SVG (gnuplot `svg`).
enum class PlotFormat { PNG, SVG };

/// File extension of a format without the dot: "png" / "svg".
[[nodiscard]] const char* plot_extension(PlotFormat format);

/// One GPU row of memory.csv (analysis/memory_csv.hpp): the allocated bytes of `tag` on `rank` after a change.
struct MemoryCsvRow {
  double time_s = 0.0;  ///< simulated time, s
  int rank = 0;
  std::string tag;
  double bytes = 0.0;   ///< allocated bytes of the tag after the change, B
};

/// Where one step's time went, s (result.json `summary.breakdown`, analysis/summary.hpp).
struct PlotBreakdown {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double optimizer_s = 0.0;
  double other_compute_s = 0.0;
  double exposed_comm_s = 0.0;
  double exposed_offload_s = 0.0;
  double exposed_cpu_s = 0.0;
  double idle_other_s = 0.0;
};

/// One variant of a run, as the plots need it.
struct PlotVariant {
  std::string name;                             ///< file-name part: the variant directory ("stage-2")
  std::string label;                            ///< axis label: the compare label ("zero.stage=2") or the name
  std::string memory_csv;                       ///< path of its memory.csv ("" when absent)
  PlotBreakdown breakdown;                      ///< steady-state step breakdown, s
  double step_time_s = 0.0;                     ///< steady-state step time, s
  std::map<std::string, double> peak_by_tag_bytes;  ///< allocated bytes by tag at the peak, B
  double peak_bytes = 0.0;                      ///< peak allocated GPU memory, B
  double capacity_bytes = 0.0;                  ///< device memory, B
  bool fits = true;                             ///< false when the run hit an OOM
};

/// A run directory, read: the scenario name and its variants in summary.json order.
struct PlotRun {
  std::string scenario;
  std::vector<PlotVariant> variants;
};

/// Reads a run directory written by `zerosim run`: either a multi-variant parent (summary.json listing variant
/// sub-directories), a single-variant run (summary.json with dir ".") or one variant sub-directory (result.json
/// only). Throws zerosim::Error naming the missing or unreadable file.
[[nodiscard]] PlotRun load_plot_run(const std::string& dir);

/// Parses memory.csv (header analysis::kMemoryCsvHeader); keeps the "gpu" rows in file order. `what` names the
/// source in errors. Throws zerosim::Error on a wrong header or a malformed row ("file:line: ...").
[[nodiscard]] std::vector<MemoryCsvRow> parse_memory_csv(std::istream& in, const std::string& what);

/// The ranks present in `rows`, ascending.
[[nodiscard]] std::vector<int> memory_csv_ranks(const std::vector<MemoryCsvRow>& rows);

/// Stacking order of memory tags, bottom to top: persistent model states first, transients last. Tags not in this
/// list go on top in name order.
[[nodiscard]] const std::vector<std::string>& plot_tag_order();

/// gnuplot script of the memory timeline of `rank`: allocated GPU memory (GiB) over simulated time (s) stacked by
/// tag, the device capacity as a dashed line, the peak (the first time the total is largest) marked and labelled.
/// Only tags that are ever non-zero are drawn. Throws zerosim::Error when `rows` has no row of `rank`.
[[nodiscard]] std::string memory_timeline_script(const std::vector<MemoryCsvRow>& rows, int rank,
                                                 const PlotVariant& variant, const std::string& scenario,
                                                 const std::string& output_file, PlotFormat format);

/// gnuplot script of the step-time breakdown (s) across variants: stacked bars of the eight categories
/// (categories that are zero in every variant are left out of the key), the step time printed over each bar.
[[nodiscard]] std::string step_breakdown_script(const PlotRun& run, const std::string& output_file,
                                                PlotFormat format);

/// gnuplot script of the peak allocated GPU memory (GiB) by tag across variants, with the device capacity as a
/// dashed line and "fits" / "OOM" over each bar.
[[nodiscard]] std::string peak_memory_script(const PlotRun& run, const std::string& output_file, PlotFormat format);

} // namespace zerosim::analysis
