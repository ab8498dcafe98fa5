// `zerosim report`: one self-contained HTML page of a finished run (single or multi-variant) — title and scenario,
// a summary table per variant, the step-time breakdown, the collectives of one step by kind, the peak attribution (the tags live at the peak, each with
// the DeepSpeed knob that sizes it, and the op that reached it), the gnuplot pictures of analysis/plots.hpp inlined
// as <svg>, and a stream timeline of one steady-state step for up to four traced ranks (inline SVG, one row per
// stream, one rectangle per op coloured by phase, a <title> tooltip each).
//
// Self-contained: no external resource (no script, style sheet, font or image is fetched), so the page opens
// offline. Every text that comes from the run is HTML-escaped. Units where numbers meet a person: GiB = 2^30 B,
// time in s (step time) and ms (timeline), TFLOP/s = 1e12 FLOP/s, MFU in % (PREAMBLE house rules).
// Output is deterministic: the same run directory gives the same page, byte for byte (same gnuplot version).
#pragma once

#include "analysis/console.hpp"
#include "analysis/summary.hpp"
#include "sim/trace/run_result.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace zerosim::analysis {

/// `text` with & < > " ' replaced by &amp; &lt; &gt; &quot; &#39; (safe in element content and in quoted
/// attribute values).
[[nodiscard]] std::string html_escape(std::string_view text);

/// Number formats of the page (shared with the tests): step time "{:.4f}" s, tokens/s "{:.1f}", TFLOP/s "{:.1f}",
/// MFU "{:.1f}" %, memory "{:.2f}" GiB (GiB = 2^30 B).
[[nodiscard]] std::string report_seconds(double s);
[[nodiscard]] std::string report_gib(double bytes);

/// One op on one stream of one rank, in the timeline.
struct ReportSpan {
  int rank = 0;
  int stream = 0; ///< index into ReportTimeline::stream_names
  double start_s = 0; ///< simulated time, s
  double end_s = 0; ///< s
  std::string name; ///< the op label ("fwd block.0")
  std::string phase; ///< program::to_string(Phase): "forward", "grad_reduce", ...
  double bytes = 0; ///< payload or memory traffic, B (0 when none)
  double flops = 0; ///< FLOPs (0 when none)
};

/// The spans of one step window of up to four ranks.
struct ReportTimeline {
  std::vector<std::string> stream_names; ///< by stream index
  std::vector<int> ranks; ///< drawn ranks, ascending (at most kReportTimelineRanks)
  int step = -1; ///< the step drawn; -1: no step completed, the whole run is drawn
  double start_s = 0; ///< window, s
  double end_s = 0; ///< s
  std::vector<ReportSpan> spans; ///< spans overlapping the window, clipped to it
  std::string note; ///< why there is no timeline ("" when there is one)
  /// First step of the steady-state window the step time averages (RunSummary::steady_first_step): the text under
  /// the heading says whether the drawn step is one of them.
  int steady_first_step = 1;
};

/// At most this many ranks are drawn in a timeline.
inline constexpr int kReportTimelineRanks = 4;

/// Width of the timeline's time axis, px. Sub-pixel ops of one lane (rank, stream) closer than a pixel share a
/// rectangle (timeline_svg), so a lane whose ops do not overlap (one stream runs one op at a time) has at most
/// 2 kReportTimelinePlotPx + 1 rectangles: each but the last is a pixel wide, or followed by a pixel of gap, or
/// followed by an op a pixel wide (at most one such per pixel-wide rectangle).
inline constexpr double kReportTimelinePlotPx = 910;

/// The step window drawn: the first completed step >= `first_steady` (the first step of the steady-state mean,
/// RunSummary::steady_first_step: 2 when DeepSpeed's ThroughputTimer syncs, analysis/summary.cpp
/// first_steady_step), else the first completed step >= 1, else the last completed step, else the whole run
/// [0, end_s] with step -1. `steps` are (step, start_s, end_s).
struct StepWindow {
  int step = -1;
  double start_s = 0;
  double end_s = 0;
};
[[nodiscard]] StepWindow steady_step_window(const std::vector<trace::StepTiming>& steps, double end_s,
                                            int first_steady = 1);

/// The window a report's timeline draws: steady_step_window from `first_steady`, or from step 1 when no span of
/// `spans` lies in that step (trace.json keeps outputs.trace_steps steps only).
[[nodiscard]] StepWindow timeline_window(const std::vector<trace::StepTiming>& steps, double end_s, int first_steady,
                                         const std::vector<ReportSpan>& spans);

/// Keeps the spans of the lowest kReportTimelineRanks ranks that overlap `w`, clipped to it, sorted by (rank,
/// stream, start).
[[nodiscard]] ReportTimeline make_timeline(std::vector<ReportSpan> spans, std::vector<std::string> stream_names,
                                           const StepWindow& w);

/// The timeline of one in-memory run (spans of the traced ranks, labels and phases from the RunResult), drawn at
/// timeline_window(`first_steady`: the summary's steady_first_step).
[[nodiscard]] ReportTimeline timeline_from_run(const trace::RunResult& run, int first_steady = 1);

/// One variant of the page.
struct ReportVariant {
  std::string label; ///< compare label ("zero.stage=2"), or the scenario name for a single run
  std::string dir; ///< sub-directory relative to the run directory ("." for a single run)
  RunSummary summary;
  ReportTimeline timeline;
};

/// One picture as HTML markup: an inline <svg> element (no XML prolog) for the small charts, or an <img> with a
/// base64 PNG data URI for the memory timelines (thousands of steps: as SVG polygons they made the page ~10 MB).
struct ReportPlot {
  std::string title;
  std::string markup;
};

/// Everything on the page.
struct ReportInput {
  std::string scenario; ///< scenario name
  std::string run_dir; ///< shown in the header
  /// What was simulated, as the console's first line words it (scenario_headline_text of the first variant's
  /// result.json "scenario"); "" when no result.json has one (outputs.result_json: false).
  std::string simulated;
  std::vector<ReportVariant> variants; ///< in summary.json order
  std::vector<ReportPlot> plots; ///< in drawing order
  std::string plots_note; ///< why pictures are missing ("" when none is)
};

/// The headline of a result.json "scenario" object given as JSON text (analysis/result_json.cpp scenario_json): the
/// fields scenario_headline_text prints. Throws zerosim::Error 'FILE: malformed "scenario" (...)' when one is missing
/// or of the wrong type.
[[nodiscard]] ScenarioHeadline scenario_headline_from_json(const std::string& scenario_text, const std::string& file);

/// Reads a `zerosim run` output directory: summary.json (multi-variant, or single with dir "."), or a lone
/// result.json; for each variant its result.json steps and trace.json spans (the timeline); the first variant's
/// result.json "scenario" for ReportInput::simulated. Does not draw the
/// plots. Throws zerosim::Error naming the missing or malformed file.
[[nodiscard]] ReportInput load_report_input(const std::string& run_dir);

/// Draws the pictures of `run_dir` with gnuplot as SVG (analysis/plots.hpp scripts, in a private temporary
/// directory removed afterwards): the memory timeline of the lowest traced rank of every variant, the step-time
/// breakdown and the peak memory by tag. Ids inside each SVG are prefixed so several can share one page. Throws
/// zerosim::Error when gnuplot is missing or fails, or a file is unreadable.
[[nodiscard]] std::vector<ReportPlot> render_report_plots(const std::string& run_dir);

/// RFC 4648 base64 of `bytes` (with '=' padding), for data: URIs. Built on Boost.Archive's base64 iterators.
[[nodiscard]] std::string base64_encode(const std::string& bytes);

/// gnuplot SVG output made fit for inlining in HTML: drops the XML prolog, DOCTYPE and comments, the xmlns
/// declarations (implicit in HTML) and prefixes every id and #reference with `id_prefix`.
[[nodiscard]] std::string inline_svg(const std::string& svg, const std::string& id_prefix);

/// The stream timeline as an inline <svg>: one row per (rank, stream) that has spans, a rectangle per span
/// coloured by phase with a <title> tooltip (name, phase, start and duration in ms, bytes in GiB, FLOPs), a time
/// axis in ms from the window start, and a phase legend. Spans of a lane closer than a pixel share a rectangle
/// (kReportTimelinePlotPx) whose tooltip gives their count, first and last name, extent, busy time, ops and time
/// per phase and summed bytes and FLOPs. Coordinates to 0.1 px.
[[nodiscard]] std::string timeline_svg(const ReportTimeline& t);

/// The whole HTML page (UTF-8, <!DOCTYPE html>): under the title what was simulated (ReportInput::simulated) and
/// whether ranks were folded (each variant's "ranks folded" diagnostic). Element ids the tests rely on: "simulated",
/// "summary", "breakdown", "communication",
/// "attribution", "plots", "timeline", "oom" (only when a variant ran out of memory).
[[nodiscard]] std::string render_report_html(const ReportInput& in);

/// load_report_input + render_report_plots (a gnuplot failure becomes plots_note, not an error) +
/// render_report_html, written atomically to `out_file` (analysis/atomic_file.hpp). Returns the plots note ("" when
/// every picture was drawn). Throws zerosim::Error, before anything is written, on a bad run directory.
std::string write_report(const std::string& run_dir, const std::string& out_file);

} // namespace zerosim::analysis
