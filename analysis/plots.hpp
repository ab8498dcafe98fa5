// Pictures of a finished run: gnuplot scripts generated from a run directory's memory.csv, result.json and
// summary.json (the `zerosim plot` command runs gnuplot on them). Three kinds of picture:
//  - the memory timeline of one traced rank: allocated GPU memory over simulated time, stacked by tag, with the
//    device capacity as a line and the peak marked and labelled;
//  - the step-time breakdown across variants (stacked bars);
//  - the peak allocated memory by tag across variants (stacked bars, capacity line);
// and, from a sweep's sweep.json (analysis/sweep.hpp), the step-time breakdown per point, scaling curves (tokens/s
// and MFU vs GPUs) and GPU memory vs micro-batch.
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

/// How high the memory axis of the memory timelines and peak-memory bars runs: to the device capacity (and the
/// data, when they go past it), so that the picture shows how close the run is to the limit; or fitted to the data
/// (`zerosim plot --y-range fit`), the capacity then said in the title when its line is off the chart.
enum class YRange { Capacity, Fit };

/// File extension of a format without the dot: "png" / "svg".
[[nodiscard]] const char* plot_extension(PlotFormat format);

/// One GPU row of memory.csv (analysis/memory_csv.hpp): the allocated bytes of `tag` on `rank` after a change.
struct MemoryCsvRow {
  double time_s = 0.0; ///< simulated time, s
  int rank = 0;
  std::string tag;
  double bytes = 0.0; ///< allocated bytes of the tag after the change, B
  double reserved = -1.0; ///< the device's reserved bytes after the change, B; < 0: not in the file (older CSV)
};

/// Where one step's time went, s (result.json `summary.breakdown`, analysis/summary.hpp).
struct PlotBreakdown {
  double forward_s = 0.0;
  double backward_s = 0.0;
  double optimizer_s = 0.0;
  double other_compute_s = 0.0;
  double exposed_comm_s = 0.0;
  double exposed_offload_s = 0.0; ///< the PCIe copies' part of summary.breakdown.exposed_offload_s
  double exposed_offload_nvme_s = 0.0; ///< the NVMe swaps' part (offload to nvme)
  double exposed_cpu_s = 0.0;
  double exposed_host_s = 0.0;
  double idle_other_s = 0.0;
};

/// One variant of a run, as the plots need it.
struct PlotVariant {
  std::string name; ///< file-name part: the variant directory ("stage-2")
  std::string label; ///< axis label: the compare label ("zero.stage=2") or the name
  std::string memory_csv; ///< path of its memory.csv ("" when absent)
  PlotBreakdown breakdown; ///< steady-state step breakdown, s
  double step_time_s = 0.0; ///< steady-state step time, s
  std::map<std::string, double> peak_by_tag_bytes; ///< allocated bytes by tag at the peak, B
  double peak_bytes = 0.0; ///< peak allocated GPU memory, B
  /// The peak was reached at initialisation, before step 0 (result.json peak_step -1 with a peak; false when the
  /// summary does not say).
  bool peak_at_init = false;
  /// Peak allocated over steps >= 1 (result.json steady_peak_memory_bytes), B; 0 when no step >= 1 began.
  double steady_peak_bytes = 0.0;
  double capacity_bytes = 0.0; ///< device memory, B
  bool fits = true; ///< false when the run hit an OOM
  bool oom_on_host = false; ///< the OOM was of host memory (offload), not of the GPU
  bool finished = true; ///< ran to its last step (false: stopped, e.g. at an OOM with simulation.on_oom: stop)
  int steps_completed = -1; ///< optimizer steps completed; -1 when the summary does not say (older zerosim)
  std::int64_t grad_accum = 0; ///< GA: micro-steps per optimizer step; 0 when the summary does not say
  /// A GPU OOM's demand: reserved + CUDA context + NCCL buffers + the segment the failed cudaMalloc asked for
  /// (RunSummary::oom_gpu_demand_bytes), B; 0 without a GPU OOM.
  double oom_gpu_demand_bytes = 0.0;
  /// The failed allocation of the first OOM (result.json oom_request_bytes, oom_label, oom_tag, oom_rank): B, the
  /// op's label, the memory tag, the rank; 0 / "" when the summary does not say.
  double oom_request_bytes = 0.0;
  std::string oom_label;
  std::string oom_tag;
  int oom_rank = 0;
};

/// A run directory, read: the scenario name and its variants in summary.json order.
struct PlotRun {
  std::string scenario;
  std::vector<PlotVariant> variants;
};

/// Throws zerosim::Error unless `dir` is a directory: "'DIR' is not a directory" for a file, "run directory 'DIR'
/// does not exist" otherwise. Shared by `zerosim plot` and `zerosim report`.
void require_run_dir(const std::string& dir);

/// The directories under `dir` holding a finished variant's result.json, sorted: its sub-directories, and those of
/// an interrupted run's staging directory (kUnfinishedRunDir, analysis/result_json.hpp) or that directory itself.
[[nodiscard]] std::vector<std::string> finished_variant_dirs(const std::string& dir);

/// The separate outputs directly under `dir`, sorted: its sub-directories holding summary.json (each a `zerosim run`
/// output) or, when `sweeps`, sweep.json (a `zerosim sweep` output). Hidden ones (kUnfinishedRunDir) are left out.
[[nodiscard]] std::vector<std::string> run_folders_in(const std::string& dir, bool sweeps);

/// The one-line error for `dir` holding neither summary.json nor result.json: when it holds separate run folders
/// (run_folders_in; sweeps too for "plot"), it says what `zerosim <verb>` expects and lists them; when
/// finished_variant_dirs finds some (a run stopped before writing summary.json), it names them and tells the user to
/// `verb` ("report", "plot") each one. Never throws.
[[nodiscard]] std::string no_run_files_error(const std::string& dir, const std::string& verb);

/// Reads a run directory written by `zerosim run`: either a multi-variant parent (summary.json listing variant
/// sub-directories), a single-variant run (summary.json with dir ".") or one variant sub-directory (result.json
/// only). Throws zerosim::Error naming the missing or unreadable file, or a run without a well-formed summary
/// (summary_in_file, as `zerosim report`).
[[nodiscard]] PlotRun load_plot_run(const std::string& dir);

/// Parses memory.csv (header analysis::kMemoryCsvHeader, or kMemoryCsvHeaderV1 of older runs, whose rows have no
/// reserved bytes: MemoryCsvRow::reserved < 0); keeps the "gpu" rows in file order. `what` names the
/// source in errors. Throws zerosim::Error on a wrong header or a malformed row ("file:line: ...").
[[nodiscard]] std::vector<MemoryCsvRow> parse_memory_csv(std::istream& in, const std::string& what);

/// The ranks present in `rows`, ascending.
[[nodiscard]] std::vector<int> memory_csv_ranks(const std::vector<MemoryCsvRow>& rows);

/// Stacking order of memory tags, bottom to top: persistent model states first, transients last. Tags not in this
/// list go on top in name order.
[[nodiscard]] const std::vector<std::string>& plot_tag_order();

/// gnuplot script of the memory timeline of `rank`: allocated GPU memory (GiB) over simulated time (s) stacked by
/// tag, the device capacity as a dashed line, the peak (the first time the total is largest) marked and labelled.
/// The y axis runs to 1.12 x the larger of capacity and peak, or with YRange::Fit to 1.15 x the peak, the title
/// then naming the capacity when it is above the axis.
/// Only tags that are ever non-zero get an area and a key entry, and of those only the ones reaching 0.5 % of the
/// y axis (about 2 px); thinner ones are stacked on top undrawn, one key line naming them. Time is cut into 1100
/// bins (about a pixel each): a bin with more than a few changes is drawn by its envelope (state before, lowest and
/// highest total, state at its end), so the script stays under ~1 MB however long the run; the peak stays a vertex.
/// With reserved bytes (memory.csv's reserved_bytes column) the reserved memory is a black line and the gap from the
/// allocated total up to it a hatched band keyed "reserved, not allocated" (cached free blocks, blocks held for
/// other streams: memory.csv does not record the split over time).
/// Throws zerosim::Error when `rows` has no row of `rank`.
[[nodiscard]] std::string memory_timeline_script(const std::vector<MemoryCsvRow>& rows, int rank,
                                                 const PlotVariant& variant, const std::string& scenario,
                                                 const std::string& output_file, PlotFormat format,
                                                 YRange y_range = YRange::Capacity);

/// gnuplot script of the step-time breakdown (s) across variants: stacked bars of the eight categories
/// (categories that are zero in every variant are left out of the key), the step time printed over each bar; a
/// two-line label ("0.515 s" over "OOM") is raised by a line, the one-line labels of the other bars are not; past 8
/// bars they stand (rotated), the y axis running high enough that each label ends inside the frame.
/// The bars are labelled by variant: a label wider than its bar's share of the plot is wrapped after its commas
/// (the x label moved down and the picture grown by the extra lines); when a comma-separated piece alone is too
/// wide, the bars are numbered 1..n and the x label lists "i: label" (at most 80 characters a line).
/// Throws zerosim::Error("step-time breakdown: " + step_breakdown_skip_reason(run)) when no variant has a step.
[[nodiscard]] std::string step_breakdown_script(const PlotRun& run, const std::string& output_file, PlotFormat format);

/// Why the step-time breakdown is not drawn: "no variant completed a step (...)" when no variant has a step time (no
/// step completed, or each stopped at its OOM: simulation.on_oom: stop); "" when it is drawn. Said by `zerosim plot`
/// instead of an empty chart.
[[nodiscard]] std::string step_breakdown_skip_reason(const PlotRun& run);

/// gnuplot script of the peak allocated GPU memory (GiB) by tag across variants, with the device capacity as a
/// dashed line and "12.34 GiB, fits" / "OOM" over each bar (on two lines for 6-7 bars, standing past 7); a label
/// that the capacity line would strike through (its bar top just under the line) sits just over the line instead
/// (so does the memory timeline's peak label). Tags zero in every bar get no series and no key entry; tags under
/// 0.5 % of the y axis in every bar (too thin to see) neither, one key line naming them; the totals count every
/// tag. The y axis runs to 1.18 x (1.4 x with standing labels) the larger of capacity and the highest bar, or with
/// YRange::Fit of the highest bar alone, the title then naming the capacity when it is above the axis; and higher
/// when a label would otherwise reach past the frame. Bars are labelled as in step_breakdown_script.
[[nodiscard]] std::string peak_memory_script(const PlotRun& run, const std::string& output_file, PlotFormat format,
                                             YRange y_range = YRange::Capacity);

/// The gnuplot executable: $ZEROSIM_GNUPLOT when set (throws zerosim::Error if it is not executable), else the first
/// `gnuplot` on PATH. Throws zerosim::Error naming the Debian package when there is none.
[[nodiscard]] std::string find_gnuplot();

/// Runs `gnuplot script` (a child process) with its stdout/stderr captured in `log`, which is removed afterwards.
/// Throws zerosim::Error with gnuplot's first error line (or its signal) when it does not exit with status 0, after
/// removing `output` (the picture the script writes; a failed or crashed gnuplot leaves it empty or cut short).
void run_gnuplot(const std::string& gnuplot, const std::string& script, const std::string& log,
                 const std::string& output = {});

struct SweepRow; // analysis/sweep.hpp
struct SweepTable; // analysis/sweep.hpp

// ---- Pictures of a sweep (`zerosim plot SWEEP_DIR`), from the rows of sweep.json (analysis/sweep.hpp) ----------
// Points whose simulation failed (status error) are left out of every picture. Series ("one line per value of the
// other axes"): the swept keys other than the x axis's own keys and other than keys whose value is fixed by the x
// value over the drawn points (e.g. cluster.nodes zipped with training.grad_accum gives one line, not one per GA).
// Each series has its own (colour, point type) for the first 48 (8 colours, then the next point shape). The key
// under a picture has at most 12 rows: past that, the first series are named and the title says how many are not.

/// Is `dir` a sweep output directory: it holds sweep.json and neither summary.json nor result.json?
[[nodiscard]] bool is_sweep_dir(const std::string& dir);

/// Reads `dir`/sweep.json (sweep_from_json). Throws zerosim::Error naming the file when it is missing or malformed.
[[nodiscard]] SweepTable load_sweep_table(const std::string& dir);

/// Label of a point for an axis: each swept key's last segment and value, e.g. "stage=2 micro_batch=4"; "base"
/// for a sweep without axes.
[[nodiscard]] std::string sweep_point_label(const SweepRow& row);

/// Why the sweep gives no step-breakdown picture, "" when it does: no point completed, or no row carries a
/// breakdown (sweep.json written before rows recorded it).
[[nodiscard]] std::string sweep_breakdown_skip_reason(const SweepTable& t);

/// gnuplot script of the steady-state step time (s) of every completed point as stacked bars, one bar per point
/// labelled by its axis values, in point order. Categories (RunSummary::breakdown, analysis/summary.hpp): compute
/// (forward + backward + other compute kernels), GPU optimizer, exposed communication, exposed offload copies,
/// exposed CPU optimizer, other idle; categories zero at every point are left out. The step time is printed over
/// each bar, with "OOM" for points that do not fit; over bars too narrow for it side by side (< 7 characters) it
/// stands (rotated, "OOM" after it, the picture and y range growing by the text's height), and when not even one
/// standing line per bar fits, only every k-th bar has it and OOM bars a red cross. Throws zerosim::Error with the
/// skip reason when there is none.
[[nodiscard]] std::string sweep_breakdown_script(const SweepTable& t, const std::string& output_file,
                                                 PlotFormat format);

/// Why the sweep gives no scaling picture, "" when it does: the completed points must run on at least two
/// different numbers of GPUs (world_size = cluster.nodes x gpus per node), and some must have a throughput.
[[nodiscard]] std::string sweep_scaling_skip_reason(const SweepTable& t);

/// gnuplot script of the scaling curves: tokens/s (left, log-log) and MFU in % (right) vs number of GPUs (log2 x
/// axis), one line per series, each with its ideal linear scaling as a dashed line of the same colour: tokens/s
/// of the series' smallest point times N / N_smallest, and that point's MFU held constant (perfect weak scaling of
/// data parallelism keeps per-GPU throughput, hence MFU); the title says so once. The smallest point is the
/// series' smallest that fits (no ideal line when none does). A series' line joins only its points that fit; the
/// others (simulated as if the card were larger) are open markers of its shape and colour without a line. A series
/// whose points equal an earlier one's (within 0.01 %, less than a pixel) hides it: its key entry says "(hides
/// LABEL: same values)".
/// The panels have explicit margins: under the title, tall enough for their y labels, above one key shared by
/// both. Throws zerosim::Error with the skip reason when there is none.
[[nodiscard]] std::string sweep_scaling_script(const SweepTable& t, const std::string& output_file, PlotFormat format);

/// Why the sweep gives no memory-vs-micro-batch picture, "" when it does: training.micro_batch must be swept, with
/// at least two numeric values among the completed points.
[[nodiscard]] std::string sweep_memory_skip_reason(const SweepTable& t);

/// How the memory picture marks a point whose peak allocated was reached at initialisation, before step 0
/// (SweepRow::peak_at_init: sweep.csv peak_allocated_at "initialisation", the console's "^", the run pictures'
/// "at init").
struct InitPeakMark {
  bool at_init = false; ///< ringed: an at-init peak that is drawn (not a point stopped at its OOM, whose peak is NaN)
  double steady_peak_bytes = 0; ///< its steady-state peak (steps >= 1), B, drawn as a short line; 0: none began
};
[[nodiscard]] InitPeakMark sweep_memory_init_mark(const SweepRow& r);

/// gnuplot script of GPU memory (GiB = 2^30 B) vs training.micro_batch (log2 x axis), one colour per series: the
/// worst rank's peak allocated memory (solid) and what nvidia-smi would show (peak reserved + CUDA context + NCCL,
/// dashed; this decides OOM), each distinct device capacity as a black dashed line, points that do not fit marked
/// with a cross, points whose peak is an initialisation peak ringed with their steady-state peak under them
/// (sweep_memory_init_mark; "at init = ..." in the title). Up to 4 series each have two key entries; more have one
/// (series label), solid and dashed being explained in the title. The "1st OOM at N GiB" texts (two decimals, up to
/// four while the demand would read as the capacity, "> C GiB" past that) form one block per micro-batch inside the
/// top of the frame (one line per distinct demand, "(k series)" when shared, summarised past 3 lines; neighbouring
/// blocks that would touch alternate between two rows), with the y range kept clear of them. Throws zerosim::Error
/// with the skip reason when there is none.
/// With `y_range` Fit the axis runs to the data (as memory_timeline_script's), a capacity above it drawn neither as a
/// line nor in the key but said in the title.
[[nodiscard]] std::string sweep_memory_script(const SweepTable& t, const std::string& output_file, PlotFormat format,
                                              YRange y_range = YRange::Capacity);

/// One picture of a sweep: its file base name and its script, or why it is skipped.
struct SweepPicture {
  std::string name; ///< "sweep-breakdown", "sweep-scaling" or "sweep-memory"
  std::string script; ///< gnuplot script writing `out_dir`/name.EXT; "" when skipped
  std::string skipped; ///< one line, "" when drawn
};

/// The three sweep pictures in the order breakdown, scaling, memory, each drawn or skipped with its reason;
/// `y_range` applies to the memory picture (sweep_memory_script).
[[nodiscard]] std::vector<SweepPicture> sweep_pictures(const SweepTable& t, const std::string& out_dir,
                                                       PlotFormat format, YRange y_range = YRange::Capacity);

} // namespace zerosim::analysis
