// gnuplot scripts of a run's memory timeline, step breakdown and peak memory (analysis/plots.hpp).
#include "analysis/plots.hpp"

#include "analysis/memory_csv.hpp"
#include "analysis/result_json.hpp"
#include "analysis/sweep.hpp"
#include "sim/error.hpp"
#include "sim/quantity.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace zerosim::analysis {

namespace {

namespace fs = std::filesystem;

/// One colour per memory tag, the same in every picture (colour-blind-safe Okabe-Ito first, then greys/pastels;
/// grad_partition in Paul Tol's wine, set apart from the vermillion IPG bucket beside it in stages 1-3; the stage-3
/// gather buffer in Tol's indigo, dark against the light lilac activations drawn on top of it).
const std::map<std::string, std::string>& tag_colours() {
  static const std::map<std::string, std::string> colours{
      {"lp_params", "#0072B2"},      {"fp32_master", "#56B4E9"}, {"optimizer_states", "#009E73"},
      {"grad_partition", "#882255"}, {"lp_grads", "#F0E442"},    {"ipg_bucket", "#D55E00"},
      {"gather_buffer", "#332288"},  {"fp32_grads", "#8C564B"},  {"flatten_temp", "#999999"},
      {"activations", "#B39DDB"},    {"working", "#C7E9C0"},
  };
  return colours;
}

std::string tag_colour(const std::string& tag) {
  const auto it = tag_colours().find(tag);
  return it == tag_colours().end() ? "#666666" : it->second;
}

/// What a tag holds, for the key (short; the full knob text is in result.json peak_attribution).
std::string tag_title(const std::string& tag) {
  static const std::map<std::string, std::string> titles{
      {"lp_params", "lp params (bf16/fp16)"},
      {"fp32_master", "fp32 master params"},
      {"optimizer_states", "Adam m, v (fp32)"},
      {"grad_partition", "grad partition"},
      {"lp_grads", "lp grads"},
      {"ipg_bucket", "IPG bucket"},
      {"gather_buffer", "stage-3 gather buffer"},
      {"fp32_grads", "fp32 grads (step)"},
      {"flatten_temp", "flatten/cast temporaries"},
      {"activations", "activations"},
      {"working", "working memory"},
  };
  const auto it = titles.find(tag);
  return it == titles.end() ? tag : it->second;
}

/// gnuplot double-quoted string literal.
std::string gp_quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n')
      out += "\\n"; // gnuplot's newline escape inside double quotes
    else
      out += c;
  }
  return out + "\"";
}

/// `set terminal ...; set output ...` for the format, `width` x `height` pixels.
std::string terminal(PlotFormat format, const std::string& output_file, int width, int height) {
  std::string s;
  if (format == PlotFormat::PNG)
    s = fmt::format("set terminal pngcairo size {},{} noenhanced font \"sans,10\"\n", width, height);
  else
    s = fmt::format("set terminal svg size {},{} fixed font \"sans,10\" noenhanced background \"white\"\n", width,
                    height);
  s += "set output " + gp_quoted(output_file) + "\n";
  return s;
}

/// Tags in stacking order: plot_tag_order() first, then others by name; only those in `present`.
std::vector<std::string> ordered_tags(const std::set<std::string>& present) {
  std::vector<std::string> out;
  for (const auto& t : plot_tag_order())
    if (present.count(t) != 0)
      out.push_back(t);
  for (const auto& t : present)
    if (std::find(plot_tag_order().begin(), plot_tag_order().end(), t) == plot_tag_order().end())
      out.push_back(t);
  return out;
}

// gnuplot's character cell at the 10 pt font of these pictures, px: pngcairo's GPVAL_TERM_HCHAR and VCHAR over
// GPVAL_TERM_SCALE (1600 / 200 and 3104 / 200; svg's is 7 x 15, smaller). Key and label layouts are estimated
// with it: gnuplot sizes its key with the same numbers.
constexpr double kCharPx = 8.0;
constexpr double kLinePx = 15.5;
/// The plot area of the 560 px high run pictures (memory timeline, bar charts), px high; estimated low (gnuplot gives
/// them about 440 px, 425 under a two-line title), so that distances on the y axis estimated with it are not short.
constexpr double kRunPlotPx = 420.0;

/// Where a text over a bar (or over the peak) is anchored so that the capacity line does not strike it through: the
/// text reaches `reach_px` above its anchor. When the capacity `cap` is at or above `top` and under the text's top
/// (plus 2 px for the line's width), the text is anchored at the capacity line instead, so that it sits just above
/// the line; otherwise at `top`. `y_top` is the axis top; all in GiB.
double label_anchor(double top, double cap, double y_top, double reach_px) {
  return cap > 0.0 && cap >= top && cap - top < (reach_px + 2.0) * y_top / kRunPlotPx ? cap : top;
}

/// How far an upright label `offset 0,0.8` reaches above its anchor, px: its middle 0.8 lines up, half a line more.
constexpr double kUprightLabelReachPx = 1.3 * kLinePx;

/// A tag whose largest value in a picture is under this share of the memory axis is too thin to see (0.5 %: about
/// 2 px of the ~440 px plot area): it gets no series and no key entry of its own, one key line names such tags.
constexpr double kThinTagShare = 0.005;

/// The tags of `ordered` (stacking order) that are drawn: those whose largest value in the picture (`largest`, B)
/// reaches kThinTagShare of the axis top `y_top_bytes`. The others are appended to `thin`, in order.
std::vector<std::string> visible_tags(const std::vector<std::string>& ordered,
                                      const std::map<std::string, double>& largest, double y_top_bytes,
                                      std::vector<std::string>& thin) {
  std::vector<std::string> drawn;
  for (const auto& t : ordered) {
    const auto it = largest.find(t);
    if (it != largest.end() && it->second >= kThinTagShare * y_top_bytes)
      drawn.push_back(t);
    else
      thin.push_back(t);
  }
  return drawn;
}

/// The key lines naming the tags too thin to draw (none when there are none).
/// At most about 48 characters a line (a LoRA run's eight thin tags on one line made gnuplot drop the whole key,
/// which did not fit beside the plot); further names go on their own lines.
std::vector<std::string> thin_tags_lines(const std::vector<std::string>& thin, double y_top_bytes) {
  if (thin.empty())
    return {};
  std::vector<std::string> lines{fmt::format("under {:.2f} GiB, not drawn:", kThinTagShare * y_top_bytes / kGiB)};
  for (std::size_t i = 0; i < thin.size(); ++i) {
    const std::string name = tag_title(thin[i]) + (i + 1 < thin.size() ? "," : "");
    if (lines.back().size() + 1 + name.size() > 48)
      lines.push_back("  " + name);
    else
      lines.back() += " " + name;
  }
  return lines;
}

/// Colour of the hatched band between the allocated stack and the reserved line of a memory timeline.
constexpr const char* kReservedGapColour = "#8C8C8C";

/// Key lines of that band (the first beside its hatched sample, the rest indented under it), at most 28 characters
/// each, as "reserved (caching allocator)": the key column, and so the plot's width, stay as they were. One gnuplot
/// key entry per line, as thin_tags_key.
std::vector<std::string> reserved_gap_key_lines() {
  return {"reserved, not allocated:", "  cached free blocks + blocks", "  held for other streams"};
}

/// The key entries of thin_tags_lines ("" when none): `NaN` draws nothing, the white sample is unseen.
std::string thin_tags_key(const std::vector<std::string>& thin, double y_top_bytes) {
  const std::vector<std::string> lines = thin_tags_lines(thin, y_top_bytes);
  if (lines.empty())
    return {};
  std::vector<std::string> entries;
  for (const auto& l : lines)
    entries.push_back("NaN with lines lc rgb \"#ffffff\" title " + gp_quoted(l));
  return fmt::format("{}", fmt::join(entries, ", \\\n     "));
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in)
    throw Error("cannot read " + p.string());
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(p.string() + ": not valid JSON (" + e.what() + ")");
  }
}

double num(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

/// Fills a PlotVariant from a result.json / summary.json `summary` object.
void fill_from_summary(PlotVariant& v, const nlohmann::json& s) {
  if (const auto b = s.find("breakdown"); b != s.end() && b->is_object()) {
    v.breakdown.forward_s = num(*b, "forward_s");
    v.breakdown.backward_s = num(*b, "backward_s");
    v.breakdown.optimizer_s = num(*b, "optimizer_s");
    v.breakdown.other_compute_s = num(*b, "other_compute_s");
    v.breakdown.exposed_comm_s = num(*b, "exposed_comm_s");
    // PCIe and NVMe apart since session 26; an older summary's exposed offload is all PCIe.
    v.breakdown.exposed_offload_s =
        b->contains("exposed_offload_pcie_s") ? num(*b, "exposed_offload_pcie_s") : num(*b, "exposed_offload_s");
    v.breakdown.exposed_offload_nvme_s = num(*b, "exposed_offload_nvme_s");
    v.breakdown.exposed_cpu_s = num(*b, "exposed_cpu_s");
    v.breakdown.exposed_host_s = num(*b, "exposed_host_s");
    v.breakdown.idle_other_s = num(*b, "idle_other_s");
  }
  v.step_time_s = num(s, "step_time_s");
  v.peak_bytes = num(s, "peak_allocated_bytes");
  if (!(s.contains("steady_peak_reached") && s["steady_peak_reached"].is_boolean() &&
        !s["steady_peak_reached"].get<bool>()))
    v.steady_peak_bytes = num(s, "steady_peak_memory_bytes");
  v.capacity_bytes = num(s, "capacity_bytes");
  v.oom_gpu_demand_bytes = num(s, "oom_gpu_demand_bytes");
  v.oom_request_bytes = num(s, "oom_request_bytes");
  if (const auto it = s.find("oom_label"); it != s.end() && it->is_string())
    v.oom_label = it->get<std::string>();
  if (const auto it = s.find("oom_tag"); it != s.end() && it->is_string())
    v.oom_tag = it->get<std::string>();
  if (const auto it = s.find("oom_rank"); it != s.end() && it->is_number_integer())
    v.oom_rank = it->get<int>();
  v.fits = !(s.contains("fits") && s["fits"].is_boolean()) || s["fits"].get<bool>();
  v.oom_on_host = s.contains("oom_on_host") && s["oom_on_host"].is_boolean() && s["oom_on_host"].get<bool>();
  v.finished = !(s.contains("finished") && s["finished"].is_boolean()) || s["finished"].get<bool>();
  if (const auto it = s.find("steps_completed"); it != s.end() && it->is_number())
    v.steps_completed = it->get<int>();
  if (const auto it = s.find("peak_step"); it != s.end() && it->is_number_integer()) // as peak_at_initialisation
    v.peak_at_init = it->get<int>() < 0 && v.peak_bytes > 0.0 && !(!v.fits && !v.finished && v.steps_completed == 0);
  if (const auto it = s.find("grad_accum"); it != s.end() && it->is_number_integer())
    v.grad_accum = it->get<std::int64_t>();
  if (const auto t = s.find("peak_by_tag_bytes"); t != s.end() && t->is_object())
    for (auto it = t->begin(); it != t->end(); ++it)
      if (it->is_number())
        v.peak_by_tag_bytes[it.key()] = it->get<double>();
}

/// A variant label for an axis: the compare key's last segment and the value ("zero.stage=2" -> "stage=2").
std::string axis_label(const std::string& label) {
  const auto eq = label.find('=');
  const auto dot = label.rfind('.', eq);
  return eq != std::string::npos && dot != std::string::npos ? label.substr(dot + 1) : label;
}

/// The run bar charts are 1000 px wide; the plot area is what the y tic labels and label (about 60 px) and the key
/// at the right leave. gnuplot gives the key (its longest title + about 10) characters of kCharPx (boundary.c).
double bar_plot_width_px(std::size_t key_chars) { return 930.0 - (static_cast<double>(key_chars) + 10.0) * kCharPx; }

/// Longest line of the numbered bars' legend under a bar chart, characters: the x label is centred under the plot
/// area, whose middle is about 340 px from the picture's left edge.
constexpr std::size_t kBarLegendChars = 80;
/// Text lines of a wrapped tick label, at most; longer labels number the bars instead.
constexpr std::size_t kMaxTickLines = 4;

/// The x axis of a bar chart with one bar per variant. When every label is `key=value` with the same key (one
/// compared key), the key becomes the axis title and the bars are labelled by value alone ("zero.stage" / "0",
/// "1", ...); otherwise by axis_label() under the title "variant". A label wider than its bar's share of the plot
/// area is wrapped after its commas ("{stage: 2," over "offload_optimizer: cpu}"); when even that does not fit, the
/// bars are numbered 1, 2, ... and the x label lists what each number is (a figure legend under the axis).
struct BarAxis {
  std::string title = "variant";
  std::vector<std::string> labels; ///< tick labels, a newline between wrapped lines (gp_quoted escapes it)
  std::string xlabel; ///< the title, then in numbered mode the legend lines
  bool numbered = false;
  std::size_t tick_lines = 1; ///< text lines of the tallest tick label
  /// Text lines under the plot beyond one tick line and one x-label line: the picture grows by them, so that the
  /// plot area keeps its height (kRunPlotPx).
  std::size_t extra_lines = 0;
};

/// Pieces of `label` split after each ", " (the comma stays at the end of its piece).
std::vector<std::string> comma_pieces(const std::string& label) {
  std::vector<std::string> pieces;
  std::size_t from = 0;
  for (std::size_t at = label.find(", "); at != std::string::npos; at = label.find(", ", from)) {
    pieces.push_back(label.substr(from, at + 1 - from));
    from = at + 2;
  }
  pieces.push_back(label.substr(from));
  return pieces;
}

/// One entry of the numbered bars' legend ("3: {stage: 3, offload_optimizer: ...}") on lines of at most
/// kBarLegendChars characters: the x label is centred, so a longer line would reach past the picture's left edge
/// (newuser29 #17). Broken after its commas (comma_pieces), the further lines indented by 4 spaces; a piece longer
/// than a line is cut at the line's length.
std::vector<std::string> legend_entry_lines(const std::string& entry) {
  constexpr std::size_t kIndent = 4;
  std::vector<std::string> lines;
  for (std::string piece : comma_pieces(entry)) {
    if (!lines.empty() && lines.back().size() + 1 + piece.size() <= kBarLegendChars) {
      lines.back() += " " + piece;
      continue;
    }
    for (;;) {
      const std::size_t indent = lines.empty() ? 0 : kIndent;
      if (indent + piece.size() <= kBarLegendChars) {
        lines.push_back(std::string(indent, ' ') + piece);
        break;
      }
      lines.push_back(std::string(indent, ' ') + piece.substr(0, kBarLegendChars - indent));
      piece.erase(0, kBarLegendChars - indent);
    }
  }
  return lines;
}

/// The bar axis of `variants` in a chart whose key's longest title has `key_chars` characters.
BarAxis bar_axis(const std::vector<PlotVariant>& variants, std::size_t key_chars) {
  BarAxis a;
  std::string key;
  bool shared = !variants.empty();
  for (const auto& v : variants) {
    const auto eq = v.label.find('=');
    if (eq == std::string::npos || eq == 0 || (!key.empty() && v.label.compare(0, eq, key) != 0)) {
      shared = false;
      break;
    }
    key = v.label.substr(0, eq);
  }
  std::vector<std::string> plain;
  for (const auto& v : variants)
    plain.push_back(shared ? v.label.substr(key.size() + 1) : axis_label(v.label));
  if (shared)
    a.title = key;
  a.xlabel = a.title;
  // Characters a tick label line may have: its bar's share of the plot area in kCharPx (drawn characters are
  // about 7 px wide on average: the rest keeps neighbouring labels apart). gnuplot's histogram x range leaves half
  // a bar's share free on either side: n bars get n + 1 shares.
  const double slot_px = bar_plot_width_px(key_chars) / static_cast<double>(variants.size() + 1);
  const auto room = static_cast<std::size_t>(std::max(1.0, std::floor(slot_px / kCharPx)));
  for (const auto& label : plain) {
    std::vector<std::string> lines;
    for (const auto& piece : comma_pieces(label)) {
      if (piece.size() > room) {
        a.numbered = true;
        break;
      }
      if (!lines.empty() && lines.back().size() + 1 + piece.size() <= room)
        lines.back() += " " + piece;
      else
        lines.push_back(piece);
    }
    a.numbered = a.numbered || lines.size() > kMaxTickLines;
    if (a.numbered)
      break;
    a.labels.push_back(fmt::format("{}", fmt::join(lines, "\n")));
    a.tick_lines = std::max(a.tick_lines, lines.size());
  }
  if (!a.numbered) {
    a.extra_lines = a.tick_lines - 1;
    return a;
  }
  a.tick_lines = 1;
  a.labels.clear();
  std::vector<std::string> legend;
  bool last_wrapped = false; // the last line ends a wrapped entry: the next entry starts a line of its own
  for (std::size_t i = 0; i < plain.size(); ++i) {
    a.labels.push_back(std::to_string(i + 1));
    const std::string entry = fmt::format("{}: {}", i + 1, plain[i]);
    const auto lines = legend_entry_lines(entry);
    if (lines.size() == 1 && !last_wrapped && !legend.empty() &&
        legend.back().size() + 4 + entry.size() <= kBarLegendChars)
      legend.back() += "    " + entry;
    else
      legend.insert(legend.end(), lines.begin(), lines.end());
    last_wrapped = lines.size() > 1;
  }
  a.xlabel = fmt::format("{} (bars numbered)\n{}", a.title, fmt::join(legend, "\n"));
  a.extra_lines = legend.size();
  return a;
}

/// `set xtics ...` and `set xlabel ...` of a bar axis: upright tick labels (wrapped or numbered by bar_axis so that
/// they fit side by side). gnuplot makes room under the plot for one line of tick labels only: under wrapped ones
/// the x label moves down by their further lines, and the bottom margin (in lines) holds both.
std::string bar_axis_text(const BarAxis& axis) {
  std::string s = "set xtics nomirror\n";
  if (axis.tick_lines <= 1)
    return s + "set xlabel " + gp_quoted(axis.xlabel) + "\n";
  const auto xlabel_lines = static_cast<std::size_t>(1 + std::count(axis.xlabel.begin(), axis.xlabel.end(), '\n'));
  return s + fmt::format("set xlabel {} offset 0,-{}\nset bmargin {}\n", gp_quoted(axis.xlabel), axis.tick_lines - 1,
                         axis.tick_lines + xlabel_lines + 1);
}

/// How the totals over the bars are written: one line ("12.34 GiB, fits"), two lines ("12.34 GiB" over "fits"),
/// or standing vertically (one line rotated by 90 degrees) when even the two-line texts do not fit side by side.
enum class BarLabels { OneLine, TwoLines, Standing };

/// The `with labels` clause of the totals above the bars: centred, or standing vertically when crowded.
std::string bar_total_labels(BarLabels mode) {
  return mode == BarLabels::Standing   ? "with labels rotate by 90 left offset 0,0.5"
         : mode == BarLabels::TwoLines ? "with labels offset 0,1.8"
                                       : "with labels offset 0,0.8";
}

/// How far a total's text reaches above its anchor, px: an upright line `offset 0,0.8` 1.3 lines; two lines
/// `offset 0,1.8` (the first line at the offset, the second under it) 2.3 lines; a standing text half a line and
/// its `chars` characters (and one to spare).
double bar_label_reach_px(BarLabels mode, std::size_t chars) {
  return mode == BarLabels::Standing   ? 0.5 * kLinePx + kCharPx * static_cast<double>(chars + 1)
         : mode == BarLabels::TwoLines ? 2.3 * kLinePx
                                       : kUprightLabelReachPx;
}

/// The top of a bar chart's y axis that keeps a text reaching `reach_px` above `anchor` inside the frame: the
/// anchor must be at most 1 - reach / kRunPlotPx of the axis (and 1 % more to spare).
double y_top_for_label(double anchor, double reach_px) {
  return anchor * 1.01 / (1.0 - std::min(0.8, reach_px / kRunPlotPx));
}

/// Height of a run bar chart, px: 560, and a text line more per BarAxis::extra_lines.
int bar_chart_height(const BarAxis& axis) { return 560 + 16 * static_cast<int>(axis.extra_lines); }

/// The title line of a memory picture whose y axis is fitted to the data (--y-range fit) under the capacity.
/// `gib_list` is the capacity in GiB without the unit ("80.00"), or several ("79.65, 80.00").
std::string capacity_off_chart(const std::string& gib_list) {
  return "device capacity " + gib_list + " GiB is above this axis (fitted to the data: --y-range fit)";
}
std::string capacity_off_chart(double cap_gib) { return capacity_off_chart(fmt::format("{:.2f}", cap_gib)); }

/// "12.34 GiB" (GiB = 2^30 B).
std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

} // namespace

std::vector<std::string> finished_variant_dirs(const std::string& dir) {
  std::vector<std::string> completed;
  const auto scan = [&completed](const fs::path& d) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code ec2;
      if (it->is_directory(ec2) && fs::is_regular_file(it->path() / "result.json", ec2))
        completed.push_back(it->path().string());
    }
  };
  scan(fs::path(dir));
  // An interrupted run's finished variants wait in its staging directory (apps/run_command.cpp): the scan above
  // finds a one-variant run's result.json there, this one the sub-directory of each variant of a comparison.
  scan(fs::path(dir) / kUnfinishedRunDir);
  std::sort(completed.begin(), completed.end());
  return completed;
}

/// A `zerosim run` writes summary.json last, so finished variants without it mean the run stopped (Ctrl-C, a crash)
/// after those variants finished: name them, so that the user can VERB each one on its own.
std::vector<std::string> run_folders_in(const std::string& dir, bool sweeps) {
  std::vector<std::string> runs;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_directory(ec2) || it->path().filename().string().rfind('.', 0) == 0)
      continue;
    if (fs::is_regular_file(it->path() / "summary.json", ec2) ||
        (sweeps && fs::is_regular_file(it->path() / "sweep.json", ec2)))
      runs.push_back(it->path().string());
  }
  std::sort(runs.begin(), runs.end());
  return runs;
}

std::string no_run_files_error(const std::string& dir, const std::string& verb) {
  // A folder of runs (out/ holding out/a and out/b, each a `zerosim run --out` directory) is not one run: say what
  // the command takes and which folders it found. Checked first: every single run folder also has a result.json,
  // which would read as an interrupted run's variant below.
  const bool sweeps = verb == "plot";
  if (const std::vector<std::string> runs = run_folders_in(dir, sweeps); !runs.empty()) {
    std::string list;
    for (const auto& r : runs)
      list += (list.empty() ? "" : ", ") + r;
    return "'" + dir + "' is not one run's folder but holds " + std::to_string(runs.size()) +
           (runs.size() == 1 ? " run folder (" : " run folders (") + list + "): `zerosim " + verb +
           "` takes the folder of one `zerosim run` (summary.json or result.json)" +
           (sweeps ? " or one `zerosim sweep` (sweep.json)" : "") + ", e.g. `zerosim " + verb + " " + runs.front() +
           "`";
  }
  const std::vector<std::string> completed = finished_variant_dirs(dir);
  std::error_code ec;
  // An interrupted sweep has its journal but no sweep.json yet (zerosim diff says the same).
  if (completed.empty() && fs::is_regular_file(fs::path(dir) / "journal.jsonl", ec) &&
      !fs::exists(fs::path(dir) / "sweep.json", ec))
    return "'" + dir +
           "' holds an unfinished sweep (journal.jsonl, no sweep.json): run the same `zerosim sweep` command again "
           "to finish it" +
           (sweeps ? ", then plot it" : "");
  if (completed.empty())
    return "'" + dir + "' has neither summary.json nor result.json (not a `zerosim run` output directory)";
  std::string list;
  for (const auto& c : completed)
    list += (list.empty() ? "" : ", ") + c;
  return dir + ": no summary.json (the run did not finish); completed variants: " + list + " -- " + verb +
         (completed.size() == 1 ? " that directory" : " those directories one by one");
}

const char* plot_extension(PlotFormat format) { return format == PlotFormat::PNG ? "png" : "svg"; }

const std::vector<std::string>& plot_tag_order() {
  static const std::vector<std::string> order{"lp_params",    "fp32_master", "optimizer_states", "grad_partition",
                                              "lp_grads",     "ipg_bucket",  "gather_buffer",    "fp32_grads",
                                              "flatten_temp", "activations", "working"};
  return order;
}

void require_run_dir(const std::string& dir) {
  const fs::path root(dir);
  if (fs::is_directory(root))
    return;
  if (fs::exists(root))
    throw Error("'" + dir + "' is not a directory (give the directory `zerosim run SCENARIO --out DIR` wrote)");
  throw Error("run directory '" + dir + "' does not exist (run `zerosim run SCENARIO --out DIR` first)");
}

PlotRun load_plot_run(const std::string& dir) {
  const fs::path root(dir);
  require_run_dir(dir);
  PlotRun run;
  const fs::path summary_path = root / "summary.json";
  if (fs::exists(summary_path)) {
    const nlohmann::json s = read_json(summary_path);
    run.scenario = s.value("scenario", std::string());
    if (!s.contains("variants") || !s["variants"].is_array() || s["variants"].empty())
      throw Error(summary_path.string() + ": no completed variant to plot");
    for (const auto& jv : s["variants"]) {
      PlotVariant v;
      const std::string sub = jv.value("dir", std::string("."));
      v.label = jv.value("label", std::string());
      v.name = sub == "." || sub.empty() ? (run.scenario.empty() ? std::string("run") : run.scenario) : sub;
      if (v.label.empty())
        v.label = v.name;
      const bool has_summary = jv.contains("summary") && jv["summary"].is_object();
      (void)summary_in_file(has_summary ? jv["summary"].dump() : std::string(), summary_path.string());
      fill_from_summary(v, jv["summary"]);
      const fs::path csv = root / sub / "memory.csv";
      v.memory_csv = fs::exists(csv) ? csv.string() : std::string();
      run.variants.push_back(std::move(v));
    }
    return run;
  }
  const fs::path result_path = root / "result.json";
  if (!fs::exists(result_path))
    throw Error(no_run_files_error(dir, "plot"));
  const nlohmann::json r = read_json(result_path);
  if (r.contains("scenario") && r["scenario"].is_object())
    run.scenario = r["scenario"].value("name", std::string());
  PlotVariant v;
  v.name = fs::absolute(root).lexically_normal().filename().string();
  if (v.name.empty())
    v.name = fs::absolute(root).lexically_normal().parent_path().filename().string();
  v.label = r.value("variant", std::string());
  if (v.label.empty())
    v.label = v.name;
  const bool has_summary = r.contains("summary") && r["summary"].is_object();
  (void)summary_in_file(has_summary ? r["summary"].dump() : std::string(), result_path.string());
  fill_from_summary(v, r["summary"]);
  const fs::path csv = root / "memory.csv";
  v.memory_csv = fs::exists(csv) ? csv.string() : std::string();
  run.variants.push_back(std::move(v));
  return run;
}

std::vector<MemoryCsvRow> parse_memory_csv(std::istream& in, const std::string& what) {
  std::string line;
  if (!std::getline(in, line) || (line != kMemoryCsvHeader && line != kMemoryCsvHeaderV1))
    throw Error(what + ":1: expected the header '" + std::string(kMemoryCsvHeader) + "'");
  const std::size_t fields = line == kMemoryCsvHeader ? 7 : 6;
  std::vector<MemoryCsvRow> rows;
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty())
      continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ','))
      f.push_back(cell);
    if (f.size() != fields)
      throw Error(fmt::format("{}:{}: expected {} comma-separated fields, got {}", what, line_no, fields, f.size()));
    if (f[2] != "gpu")
      continue;
    MemoryCsvRow r;
    try {
      std::size_t used = 0;
      r.time_s = std::stod(f[0], &used);
      r.rank = std::stoi(f[1]);
      r.tag = f[3];
      r.bytes = std::stod(f[4]);
      if (fields == 7)
        r.reserved = std::stod(f[6]);
    } catch (const std::exception&) {
      throw Error(fmt::format("{}:{}: malformed row '{}'", what, line_no, line));
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<int> memory_csv_ranks(const std::vector<MemoryCsvRow>& rows) {
  std::set<int> ranks;
  for (const auto& r : rows)
    ranks.insert(r.rank);
  return {ranks.begin(), ranks.end()};
}

std::string memory_timeline_script(const std::vector<MemoryCsvRow>& csv_rows, int rank, const PlotVariant& variant,
                                   const std::string& scenario, const std::string& output_file, PlotFormat format,
                                   YRange y_range) {
  std::set<std::string> present;
  double t_end = 0.0;
  bool any = false;
  for (const auto& r : csv_rows)
    if (r.rank == rank) {
      any = true;
      if (r.bytes > 0.0)
        present.insert(r.tag);
      t_end = std::max(t_end, r.time_s);
    }
  if (!any)
    throw Error(fmt::format("memory.csv of {} has no GPU row of rank {}", variant.name, rank));
  // Every change at t = 0 (an OOM at initialisation, before any simulated time passed): the x axis counts the
  // allocations and frees in order instead, 1, 2, ..., so that the stack builds up left to right.
  const bool at_init = t_end <= 0.0;
  std::vector<MemoryCsvRow> in_order;
  if (at_init) {
    for (const auto& r : csv_rows)
      if (r.rank == rank) {
        in_order.push_back(r);
        in_order.back().time_s = static_cast<double>(in_order.size());
      }
    t_end = static_cast<double>(in_order.size()) + 1.5; // room right of the last change for the failed request
  }
  const std::vector<MemoryCsvRow>& rows = at_init ? in_order : csv_rows;
  // The request that failed, drawn on top of the stack right of the last change: an OOM of this rank at t = 0.
  const bool mark_request =
      at_init && !variant.fits && !variant.oom_on_host && variant.oom_request_bytes > 0.0 && variant.oom_rank == rank;
  // Each tag's largest value and the largest total, for the y range and for the tags too thin to see on it: those
  // are stacked last (on top) and not drawn, so the drawn areas keep their heights and the peak its value.
  std::map<std::string, double> largest;
  double largest_total = 0.0;
  double largest_reserved = -1.0; // < 0: the file has no reserved bytes (written before they were)
  for (const auto& r : rows)
    if (r.rank == rank)
      largest_reserved = std::max(largest_reserved, r.reserved);
  const bool reserved_line = largest_reserved >= 0.0;
  {
    std::map<std::string, double> now;
    double total = 0.0;
    for (const auto& r : rows)
      if (r.rank == rank) {
        double& b = now[r.tag];
        total += r.bytes - b;
        b = r.bytes;
        largest[r.tag] = std::max(largest[r.tag], r.bytes);
        largest_total = std::max(largest_total, total);
      }
  }
  const bool fit = y_range == YRange::Fit;
  double end_total = 0.0; // allocated when the last change was made (what the failed request comes on top of)
  {
    std::map<std::string, double> now;
    for (const auto& r : rows)
      if (r.rank == rank) {
        end_total += r.bytes - now[r.tag];
        now[r.tag] = r.bytes;
      }
  }
  const double largest_shown =
      std::max({largest_total, largest_reserved, mark_request ? end_total + variant.oom_request_bytes : 0.0});
  const double y_max =
      fit ? largest_shown / kGiB * 1.15 + 0.01 : std::max(variant.capacity_bytes, largest_shown) / kGiB * 1.12 + 0.01;
  std::vector<std::string> thin;
  std::vector<std::string> tags = visible_tags(ordered_tags(present), largest, y_max * kGiB, thin);
  const std::size_t drawn = tags.size();
  tags.insert(tags.end(), thin.begin(), thin.end());
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < tags.size(); ++i)
    column[tags[i]] = i;

  // Step function: at each change, a point with the state before (same time) and one with the state after, so
  // the stacked areas keep their value until the next change. Columns: time, then the cumulative GiB of tags.
  //
  // A long run changes memory hundreds of thousands of times, far more often than the picture has pixels. Time is
  // cut into kTimelineBins bins (about one per pixel of the plot); a bin with few changes is drawn exactly, a
  // busier one by its envelope: the state before it, its lowest and highest totals in time order, and the state
  // at its end. The peak (the first highest total) stays a vertex, and every bin ends in its exact state, so the
  // picture differs from the full step function only inside one pixel column and the script stays under ~1 MB.
  // The reserved bytes (the caching allocator's segments) ride along as the last column, drawn as a line.
  std::vector<double> state(tags.size(), 0.0);
  double reserved = 0.0;
  std::string data;
  auto emit_state = [&](double t, const std::vector<double>& st, double res) {
    data += fmt::format("{:.9f}", t);
    double cum = 0.0;
    for (double b : st) {
      cum += b;
      data += fmt::format(" {:.6f}", cum / kGiB);
    }
    if (reserved_line)
      data += fmt::format(" {:.6f}", res / kGiB);
    data += '\n';
  };
  auto total_of = [](const std::vector<double>& st) {
    double cum = 0.0;
    for (double b : st)
      cum += b;
    return cum;
  };
  struct Sample {
    double t = 0;
    double total = 0;
    std::vector<double> st;
    double reserved = 0;
  };
  struct Bin {
    long index = -1;
    std::vector<double> before; ///< state before the bin's first change
    double reserved_before = 0;
    double t_first = 0;
    Sample low, high, last;
    Sample reserved_high; ///< the bin's highest reserved bytes (a cache release inside it may hide it otherwise)
    std::vector<Sample> exact; ///< points drawn when the bin is quiet (total unused)
    bool busy = false; ///< more than kExactPoints points: drawn by its envelope
  } bin;
  constexpr long kTimelineBins = 1100;
  constexpr std::size_t kExactPoints = 8;
  auto flush = [&] {
    if (bin.index < 0)
      return;
    if (!bin.busy) {
      for (const Sample& e : bin.exact)
        emit_state(e.t, e.st, e.reserved);
    } else {
      emit_state(bin.t_first, bin.before, bin.reserved_before);
      // The lowest and highest totals and the highest reserved, in time order (stable: low before high on a tie).
      std::vector<const Sample*> points{&bin.low, &bin.high};
      if (reserved_line && bin.reserved_high.reserved > std::max(bin.low.reserved, bin.high.reserved))
        points.push_back(&bin.reserved_high);
      std::stable_sort(points.begin(), points.end(), [](const Sample* x, const Sample* y) { return x->t < y->t; });
      for (const Sample* p : points)
        emit_state(p->t, p->st, p->reserved);
      emit_state(bin.last.t, bin.last.st, bin.last.reserved);
    }
    bin.index = -1;
    bin.exact.clear();
    bin.busy = false;
  };
  double peak = -1.0;
  double peak_t = 0.0;
  double peak_reserved = 0.0; // the reserved line where the peak is
  double last_t = -1.0;
  emit_state(0.0, state, reserved);
  for (const auto& r : rows) {
    if (r.rank != rank)
      continue;
    const auto col = column.find(r.tag);
    if (col == column.end())
      continue; // a tag that is never non-zero on this rank
    double& slot = state[col->second];
    if (slot == r.bytes && (!reserved_line || r.reserved == reserved))
      continue;
    const long index = std::min(kTimelineBins - 1, static_cast<long>(r.time_s / t_end * kTimelineBins));
    if (index != bin.index) {
      flush();
      bin.index = index;
      bin.before = state;
      bin.reserved_before = reserved;
      bin.t_first = r.time_s;
      bin.low = {r.time_s, std::numeric_limits<double>::infinity(), {}, 0.0};
      bin.high = {r.time_s, -1.0, {}, 0.0};
      bin.reserved_high = {r.time_s, 0.0, {}, -1.0};
    }
    if (r.time_s != last_t && !bin.busy)
      bin.exact.push_back({r.time_s, 0.0, state, reserved}); // the state just before this change
    slot = r.bytes;
    if (reserved_line)
      reserved = r.reserved;
    const double total = total_of(state);
    if (!bin.busy)
      bin.exact.push_back({r.time_s, 0.0, state, reserved});
    if (bin.exact.size() > kExactPoints) {
      bin.busy = true;
      bin.exact.clear();
    }
    if (total < bin.low.total)
      bin.low = {r.time_s, total, state, reserved};
    if (total > bin.high.total)
      bin.high = {r.time_s, total, state, reserved};
    bin.last = {r.time_s, total, state, reserved};
    if (reserved > bin.reserved_high.reserved)
      bin.reserved_high = {r.time_s, total, state, reserved};
    last_t = r.time_s;
    if (total > peak) {
      peak = total;
      peak_t = r.time_s;
      peak_reserved = reserved_line ? reserved : 0.0;
    }
  }
  flush();
  emit_state(t_end, state, reserved);
  peak = std::max(peak, 0.0);

  const double cap_gib = variant.capacity_bytes / kGiB;
  const double peak_gib = peak / kGiB;
  std::string s = "# zerosim plot: memory timeline (generated; GiB = 2^30 B, time in s)\n";
  s += terminal(format, output_file, 1100, 560);
  // A single run's variant label is the scenario's name: say it once.
  // The title is centred over the plot area, left of the key: a line much wider than that is cut at both ends
  // (trial 24: a long variant label lost the scenario's name), so a long one breaks after the label.
  const std::string who =
      (scenario.empty() || scenario == variant.label ? std::string() : scenario + ": ") + variant.label;
  const std::string what =
      fmt::format("rank {}: allocated GPU memory by tag{}", rank, reserved_line ? ", reserved as a line" : "");
  constexpr std::size_t kTitleLine = 90; // characters that fit over the 1100-pixel picture's plot area
  std::string title = who + (who.size() + 2 + what.size() > kTitleLine ? ",\n" : ", ") + what;
  if (!variant.fits && variant.oom_on_host)
    title += "\nOOM of host memory (offloaded states and buffers), not of this GPU";
  else if (!variant.fits)
    title +=
        // Two lines: the title is centred over the plot area, left of the key, and one line of both clauses was
        // wider than it (the picture cut its start).
        fmt::format("\nOOM: allocator-reserved memory + CUDA context exceed {}{}", gib_text(variant.capacity_bytes),
                    variant.finished ? ";\ndrawn as if the card were larger (simulation.on_oom: continue)"
                                     : ";\nthe run stopped there (simulation.on_oom: stop)");
  if (!variant.fits && variant.oom_on_host && variant.finished)
    title += ";\ndrawn as if the host were larger (simulation.on_oom: continue)";
  const bool cap_shown = cap_gib > 0.0 && cap_gib <= y_max;
  if (cap_gib > 0.0 && !cap_shown)
    title += "\n" + capacity_off_chart(cap_gib);
  s += "set title " + gp_quoted(title) + "\n";
  if (at_init) {
    s += "set xlabel \"initialisation (every change at simulated t = 0 s): allocations and frees in order\"\n";
    s += "set xtics 1\n";
  } else {
    s += "set xlabel \"simulated time (s)\"\n";
  }
  s += reserved_line ? "set ylabel \"GPU memory (GiB = 2^30 B)\"\n"
                     : "set ylabel \"allocated GPU memory (GiB = 2^30 B)\"\n";
  s += fmt::format("set xrange [0:{:.9f}]\n", t_end);
  s += fmt::format("set yrange [0:{:.6f}]\n", y_max);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style fill solid 0.9 noborder\n";
  // The peak: a point and a label, right-aligned when it is in the right half so it stays inside the plot. The
  // label is 0.8 lines over the point, or just over the capacity line when that would strike it through.
  const bool right = peak_t > 0.5 * t_end;
  // Over the reserved line at the peak, then over the capacity line, when either would strike the label through.
  const double label_at = label_anchor(label_anchor(peak_gib, peak_reserved / kGiB, y_max, kUprightLabelReachPx),
                                       cap_gib, y_max, kUprightLabelReachPx);
  const double label_up = 0.8 + (label_at - peak_gib) / (y_max / kRunPlotPx * kLinePx);
  // Under the reserved line the label stands in the hatched band: on a white box, so that the hatching does not run
  // through its letters.
  if (reserved_line)
    s += "set style textbox opaque noborder\n";
  s += fmt::format("set label 1 {} at {:.9f},{:.6f} {} point pt 7 ps 1.2 lc rgb \"black\" offset {},{:.1f}{} front\n",
                   gp_quoted(at_init ? fmt::format("peak {:.2f} GiB", peak_gib)
                                     : fmt::format("peak {:.2f} GiB at t = {:.3f} s", peak_gib, peak_t)),
                   peak_t, peak_gib, right ? "right" : "left", right ? "-1" : "1", label_up,
                   reserved_line ? " boxed" : "");
  if (mark_request) {
    // An open red box from what was allocated up by the request, right of the last change, and what it was.
    const double x0 = t_end - 1.1;
    const double x1 = t_end - 0.3;
    const double lo = end_total / kGiB;
    const double hi = (end_total + variant.oom_request_bytes) / kGiB;
    s += fmt::format(
        "set object 1 rect from {:.3f},{:.6f} to {:.3f},{:.6f} fs empty border lc rgb \"#B00000\" lw 2 dt 2 front\n",
        x0, lo, x1, hi);
    s += fmt::format("set label 2 {} at {:.3f},{:.6f} right offset 0,0.8 tc rgb \"#B00000\" front\n",
                     gp_quoted(fmt::format("failed request: '{}', {} of {}", variant.oom_label,
                                           gib_text(variant.oom_request_bytes), variant.oom_tag)),
                     x1, hi);
  }
  s += "$mem << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < drawn; ++i) {
    const std::string lower = i == 0 ? "(0)" : fmt::format("{}", i + 1);
    s += fmt::format("$mem using 1:{}:{} with filledcurves lc rgb \"{}\" title {}, \\\n     ", lower, i + 2,
                     tag_colour(tags[i]), gp_quoted(tag_title(tags[i])));
  }
  if (const std::string key = thin_tags_key(thin, y_max * kGiB); !key.empty())
    s += key + ", \\\n     ";
  // The caching allocator's reserved memory over the stacked allocated tags: the gap is cached free blocks,
  // fragmentation and blocks held for other streams; reserved + CUDA context + NCCL buffers decides an OOM. The gap
  // is hatched from the allocated total (every tag, the thin ones too) up to the reserved line, so that the picture
  // accounts for it as the text report does. memory.csv has reserved and allocated over time, not the held blocks
  // (the run knows the split at the reserved peak only): one band names both.
  if (reserved_line) {
    const std::vector<std::string> gap = reserved_gap_key_lines();
    const std::string allocated = tags.empty() ? "(0)" : fmt::format("{}", tags.size() + 1);
    s += fmt::format("$mem using 1:{}:{} with filledcurves fs pattern 4 noborder lc rgb \"{}\" title {}, \\\n     ",
                     allocated, tags.size() + 2, kReservedGapColour, gp_quoted(gap.front()));
    for (std::size_t i = 1; i < gap.size(); ++i)
      s += "NaN with lines lc rgb \"#ffffff\" title " + gp_quoted(gap[i]) + ", \\\n     ";
  }
  if (reserved_line)
    s += fmt::format(
        "$mem using 1:{} with lines lw 1.5 lc rgb \"#000000\" title \"reserved (caching allocator)\", "
        "\\\n     ",
        tags.size() + 2);
  if (cap_shown)
    s += fmt::format("{:.6f} with lines dt 2 lw 2 lc rgb \"black\" title {}\n", cap_gib,
                     gp_quoted(fmt::format("device capacity {:.2f} GiB", cap_gib)));
  else
    s += "NaN notitle\n";
  return s;
}

std::string step_breakdown_skip_reason(const PlotRun& run) {
  // As has_step_time: a step completed (unknown in older summaries: its breakdown says), and the run did not stop
  // at its OOM.
  const bool any = std::any_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) {
    const PlotBreakdown& b = v.breakdown;
    const bool stepped = v.steps_completed > 0 ||
                         (v.steps_completed < 0 && b.forward_s + b.backward_s + b.optimizer_s + b.other_compute_s > 0);
    return stepped && (v.fits || v.finished);
  });
  if (any)
    return {};
  const bool all_oom =
      std::all_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) { return !v.fits; });
  return all_oom ? "no variant completed a step (each ran out of memory first: nothing to break down)"
                 : "no variant completed a step (nothing to break down)";
}

std::string step_breakdown_script(const PlotRun& run, const std::string& output_file, PlotFormat format) {
  if (const std::string why = step_breakdown_skip_reason(run); !why.empty())
    throw Error("step-time breakdown: " + why);
  struct Category {
    const char* title;
    const char* colour;
    double PlotBreakdown::*field;
  };
  static const Category kCategories[] = {
      {"forward", "#0072B2", &PlotBreakdown::forward_s},
      {"backward", "#56B4E9", &PlotBreakdown::backward_s},
      {"optimizer (GPU)", "#009E73", &PlotBreakdown::optimizer_s},
      {"other compute (bucket copies, casts)", "#999999", &PlotBreakdown::other_compute_s},
      {"exposed communication", "#D55E00", &PlotBreakdown::exposed_comm_s},
      {"offload copies (PCIe)", "#E69F00", &PlotBreakdown::exposed_offload_s},
      {"NVMe swaps", "#6A3D9A", &PlotBreakdown::exposed_offload_nvme_s},
      {"CPU optimizer", "#CC79A7", &PlotBreakdown::exposed_cpu_s},
      {"host thread (Python, DeepSpeed hooks)", "#8C564B", &PlotBreakdown::exposed_host_s},
      {"other idle", "#F0E442", &PlotBreakdown::idle_other_s},
  };
  std::vector<const Category*> used;
  for (const auto& c : kCategories)
    for (const auto& v : run.variants)
      if ((v.fits || v.finished) && v.breakdown.*c.field > 0.0) { // not one stopped at its OOM (no bar)
        used.push_back(&c);
        break;
      }
  if (used.empty())
    used.push_back(&kCategories[0]);
  // "0.123 s" labels: about 8 fit side by side over the bars of the 1000 px chart; past that they stand.
  const bool crowded = run.variants.size() > 8;
  std::size_t key_chars = 0;
  for (const auto* c : used)
    key_chars = std::max(key_chars, std::strlen(c->title));
  const BarAxis axis = bar_axis(run.variants, key_chars);
  // Each bar's label: its step time, "OOM" after it when the variant ran out of memory (a time simulated past the
  // OOM with on_oom: continue), "no step (OOM)" on an empty bar: no step completed, or the run stopped at its OOM
  // (on_oom: stop), whose steps before it are no step time of a configuration that trains (README).
  std::string data;
  double y_max = 0.0;
  double label_top = 0.0;
  bool any_step = false;
  for (std::size_t i = 0; i < run.variants.size(); ++i) {
    const auto& v = run.variants[i];
    data += gp_quoted(axis.labels[i]);
    const bool stopped_at_oom = !v.fits && !v.finished;
    double total = 0.0;
    for (const auto* c : used) {
      const double x = stopped_at_oom ? 0.0 : v.breakdown.*c->field;
      data += fmt::format(" {:.9f}", x);
      total += x;
    }
    const bool stepped = v.steps_completed != 0 && total > 0.0;
    any_step = any_step || stepped;
    // Upright labels of neighbouring bars are about a bar apart: "OOM" goes on a second line, or "0.219 s OOM" runs
    // into the next bar's label. Rotated (crowded) labels are a line apart and keep one line.
    const std::string sep = crowded ? " " : "\n";
    const std::string oom = v.fits ? "" : sep + (v.oom_on_host ? "host OOM" : "OOM");
    // Last column: the label's text lines (1, or 2 with an upright "OOM").
    const std::string text = stepped                                   ? fmt::format("{:.3f} s{}", total, oom)
                             : stopped_at_oom && v.steps_completed > 0 ? "n/a" + oom
                                                                       : "no step" + oom;
    const bool two = !oom.empty() && !crowded;
    data += fmt::format(" {:.9f} {} {}\n", total, gp_quoted(text), two ? 2 : 1);
    y_max = std::max(y_max, total);
    // The axis keeps every label inside the frame (a standing one is as long as its text).
    label_top = std::max(label_top, y_top_for_label(total, bar_label_reach_px(crowded ? BarLabels::Standing
                                                                              : two   ? BarLabels::TwoLines
                                                                                      : BarLabels::OneLine,
                                                                              text.size())));
  }
  if (!any_step)
    y_max = 1.0; // an empty chart still needs a range; the title says why it is empty
  // With gradient accumulation a step is GA micro-steps: the y label says how many, the title each variant's when
  // they differ.
  std::vector<std::int64_t> gas;
  for (const auto& v : run.variants)
    gas.push_back(v.grad_accum);
  const std::string ga_step = optimizer_step_text(gas);
  std::string ga_each;
  if (!ga_step.empty() && ga_step != optimizer_step_text(gas.front()) &&
      !std::all_of(run.variants.begin(), run.variants.end(),
                   [](const PlotVariant& v) { return v.label.find("grad_accum=") != std::string::npos; }))
    for (const auto& v : run.variants)
      ga_each += fmt::format("{}{} GA={}", ga_each.empty() ? "\nGA micro-steps per optimizer step: " : ", ",
                             axis_label(v.label), v.grad_accum);
  std::string s = "# zerosim plot: step-time breakdown (generated; time in s)\n";
  s += terminal(format, output_file, 1000, bar_chart_height(axis));
  s += "set title " +
       gp_quoted((run.scenario.empty() ? std::string() : run.scenario + ": ") +
                 "where one steady-state training step's time goes" + ga_each +
                 (any_step ? std::string()
                           : "\nno variant has a step time (each stopped at its OOM, or before a step completed)")) +
       "\n";
  s += "set ylabel " + gp_quoted(ga_step.empty() ? "time per step (s)" : "time " + ga_step + " (s)") + "\n";
  s += fmt::format("set yrange [0:{:.9f}]\n", std::max(y_max * (crowded ? 1.25 : 1.15), label_top) + 1e-9);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
  s += "set style fill solid 0.9 border rgb \"#333333\"\n";
  s += bar_axis_text(axis);
  s += "$steps << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < used.size(); ++i)
    s += fmt::format("$steps using {}{} lc rgb \"{}\" title {}, \\\n     ", i + 2, i == 0 ? ":xtic(1)" : "",
                     used[i]->colour, gp_quoted(used[i]->title));
  // Two-line upright labels hang down from their first line: one line up more, so that the second clears the bar.
  // Only those: the one-line labels of the other bars keep their place just over their bar (a second labels plot).
  const std::size_t total_col = used.size() + 2;
  const bool two_lines =
      !crowded && std::any_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) { return !v.fits; });
  if (two_lines) {
    // Only the label plots that have a point: gnuplot 5.4 crashes (SIGSEGV) on a one-row histogram whose `with
    // labels` plot has none (a single variant that ran out of memory).
    std::vector<std::string> labels;
    for (int lines : {1, 2})
      if (std::any_of(run.variants.begin(), run.variants.end(),
                      [&](const PlotVariant& v) { return (v.fits ? 1 : 2) == lines; }))
        labels.push_back(fmt::format("$steps using 0:(${2} == {3} ? ${0} : NaN):{1} with labels offset 0,{4} notitle",
                                     total_col, total_col + 1, total_col + 2, lines, lines == 1 ? "0.8" : "1.8"));
    s += fmt::format("{}\n", fmt::join(labels, ", \\\n     "));
  } else
    s += fmt::format("$steps using 0:{0}:{1} {2} notitle\n", total_col, total_col + 1,
                     bar_total_labels(crowded ? BarLabels::Standing : BarLabels::OneLine));
  return s;
}

std::string peak_memory_script(const PlotRun& run, const std::string& output_file, PlotFormat format, YRange y_range) {
  std::set<std::string> present;
  double cap = 0.0; // the largest capacity (B): the axis holds it
  std::set<double> capacities; // distinct known capacities, B
  for (const auto& v : run.variants) {
    for (const auto& [tag, b] : v.peak_by_tag_bytes)
      if (b > 0.0)
        present.insert(tag);
    cap = std::max(cap, v.capacity_bytes);
    if (v.capacity_bytes > 0.0)
      capacities.insert(v.capacity_bytes);
  }
  // Variants on cards of different sizes (a dgx-h100 79.65 GiB vs dgx-a100 80.00 GiB comparison, newuser31 F21): each
  // bar gets its own capacity line, across its slot, rather than one line at the largest.
  const bool per_bar_cap = capacities.size() > 1;
  // "12.34 GiB, fits" labels: about 5 fit side by side over the bars of the 1000 px chart (6 touch); "12.34 GiB"
  // over "fits", 7; more stand.
  // A bar whose peak is at initialisation (before step 0) says so under its total ("at init"), which takes a second
  // line: two-line texts then from the first bar on.
  const bool any_init =
      std::any_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) { return v.peak_at_init; });
  const BarLabels mode = run.variants.size() <= 5 && !any_init ? BarLabels::OneLine
                         : run.variants.size() <= 7            ? BarLabels::TwoLines
                                                               : BarLabels::Standing;
  // Of such a bar, the steady-state peak (steps >= 1, what training holds) is marked on it.
  const bool any_steady_mark = std::any_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) {
    return v.peak_at_init && v.steady_peak_bytes > 0.0;
  });
  // Totals over every tag, and each tag's largest value: tags too thin to see on the axis get no bar segment.
  std::map<std::string, double> largest;
  std::vector<double> totals;
  double y_max = y_range == YRange::Fit ? 0.0 : cap / kGiB;
  for (const auto& v : run.variants) {
    double total = 0.0;
    for (const auto& [tag, b] : v.peak_by_tag_bytes)
      if (b > 0.0) {
        total += b;
        largest[tag] = std::max(largest[tag], b);
      }
    totals.push_back(total);
    y_max = std::max(y_max, std::max(total, v.oom_on_host ? 0.0 : v.oom_gpu_demand_bytes) / kGiB);
  }
  // The text over each bar, and how far it reaches above its anchor (bar_label_reach_px).
  std::vector<std::string> texts;
  std::vector<double> reach;
  for (std::size_t i = 0; i < run.variants.size(); ++i) {
    const auto& v = run.variants[i];
    texts.push_back(fmt::format("{:.2f} GiB, {}{}", totals[i] / kGiB,
                                v.fits          ? "fits"
                                : v.oom_on_host ? "host OOM"
                                                : "OOM",
                                v.peak_at_init ? ", at init" : ""));
    reach.push_back(bar_label_reach_px(mode, texts.back().size()));
  }
  // Room over the bars for their texts: each text's top stays inside the frame. A text is anchored at its bar's top
  // or, when the capacity line would strike it through, over that line (label_anchor), which depends on the axis:
  // a few rounds settle it.
  double y_top = y_max * (mode == BarLabels::Standing ? 1.4 : 1.18) + 0.01;
  for (int round = 0; round < 3; ++round)
    for (std::size_t i = 0; i < totals.size(); ++i)
      y_top = std::max(y_top, y_top_for_label(label_anchor(totals[i] / kGiB, run.variants[i].capacity_bytes / kGiB,
                                                           y_top, reach[i]),
                                              reach[i]));
  // A GPU OOM happens at the request that does not fit, which can be far above the allocated peak: its demand
  // (reserved + CUDA context + NCCL + the segment) is marked over the bar, so the bar's "OOM" under the capacity line
  // reads right.
  const bool any_demand = std::any_of(run.variants.begin(), run.variants.end(), [](const PlotVariant& v) {
    return !v.oom_on_host && v.oom_gpu_demand_bytes > 0.0;
  });
  const bool cap_shown = cap > 0.0 && cap / kGiB <= y_top; // else the axis is fitted to bars far under it
  // The capacities named in the key ("device capacity 79.65, 80.00 GiB" when they differ) and, when the axis is
  // fitted under some of them, in the title.
  std::string caps_on;
  std::string caps_off;
  for (double c : capacities) {
    std::string& into = c / kGiB <= y_top ? caps_on : caps_off;
    into += (into.empty() ? "" : ", ") + fmt::format("{:.2f}", c / kGiB);
  }
  const std::string cap_key =
      per_bar_cap ? "device capacity of each bar (" + caps_on + " GiB)" : "device capacity " + gib_text(cap);
  std::vector<std::string> thin;
  std::vector<std::string> tags = visible_tags(ordered_tags(present), largest, y_top * kGiB, thin);
  if (tags.empty())
    tags.push_back("lp_params");
  // The key's longest title sets how much width the bars get (bar_axis).
  std::size_t key_chars = any_demand ? std::strlen("1st OOM: reserved + context + request") : 0;
  const char* const steady_title = "steady-state peak of an at-init bar";
  if (any_steady_mark)
    key_chars = std::max(key_chars, std::strlen(steady_title));
  for (const auto& t : tags)
    key_chars = std::max(key_chars, tag_title(t).size());
  if (cap_shown)
    key_chars = std::max(key_chars, cap_key.size());
  for (const auto& l : thin_tags_lines(thin, y_top * kGiB))
    key_chars = std::max(key_chars, l.size());
  const BarAxis axis = bar_axis(run.variants, key_chars);
  std::string data;
  for (std::size_t i = 0; i < run.variants.size(); ++i) {
    const auto& v = run.variants[i];
    data += gp_quoted(axis.labels[i]);
    for (const auto& t : tags) {
      const auto it = v.peak_by_tag_bytes.find(t);
      const double b = it == v.peak_by_tag_bytes.end() ? 0.0 : it->second;
      data += fmt::format(" {:.6f}", b / kGiB);
    }
    const std::string fits = std::string(v.fits          ? "fits"
                                         : v.oom_on_host ? "host OOM"
                                                         : "OOM") +
                             (v.peak_at_init ? ", at init" : "");
    // The label's anchor (last column): the bar top, or the capacity line when the label would cross it.
    const double anchor = label_anchor(totals[i] / kGiB, v.capacity_bytes / kGiB, y_top, reach[i]);
    data += fmt::format(" {:.6f} {} {:.6f} {:.6f} {:.6f}\n", totals[i] / kGiB, gp_quoted(fits), anchor,
                        v.oom_on_host ? 0.0 : v.oom_gpu_demand_bytes / kGiB,
                        v.peak_at_init ? v.steady_peak_bytes / kGiB : 0.0);
  }
  const std::size_t total_col = tags.size() + 2;
  std::string s = "# zerosim plot: peak memory by tag (generated; GiB = 2^30 B)\n";
  s += terminal(format, output_file, 1000, bar_chart_height(axis));
  s +=
      "set title " +
      gp_quoted(
          (run.scenario.empty() ? std::string() : run.scenario + ": ") + "allocated GPU memory at the peak, by tag" +
          (any_init ? std::string("\nat init = the peak is reached at initialisation, before step 0") : std::string()) +
          (!caps_off.empty() ? "\n" + capacity_off_chart(caps_off) : std::string())) +
      "\n";
  s += "set ylabel \"peak allocated GPU memory (GiB = 2^30 B)\"\n";
  s += fmt::format("set yrange [0:{:.6f}]\n", y_top);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
  s += "set style fill solid 0.9 border rgb \"#333333\"\n";
  s += bar_axis_text(axis);
  if (cap_shown && !per_bar_cap) {
    s += fmt::format(
        "set arrow 1 from graph 0, first {0:.6f} to graph 1, first {0:.6f} nohead dt 2 lw 2 "
        "lc rgb \"black\" front\n",
        cap / kGiB);
  } else if (cap_shown) { // bar i is centred at x = i, 0.6 wide (boxwidth): its line spans its slot, +-0.45
    int arrow = 1;
    for (std::size_t i = 0; i < run.variants.size(); ++i)
      if (const double c = run.variants[i].capacity_bytes / kGiB; c > 0.0 && c <= y_top)
        s += fmt::format(
            "set arrow {0} from first {1:.2f}, first {3:.6f} to first {2:.2f}, first {3:.6f} nohead dt 2 lw 2 "
            "lc rgb \"black\" front\n",
            arrow++, static_cast<double>(i) - 0.45, static_cast<double>(i) + 0.45, c);
  }
  s += "$peak << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < tags.size(); ++i)
    s += fmt::format("$peak using {}{} lc rgb \"{}\" title {}, \\\n     ", i + 2, i == 0 ? ":xtic(1)" : "",
                     tag_colour(tags[i]), gp_quoted(tag_title(tags[i])));
  s += fmt::format("$peak using 0:{2}:(sprintf(\"%.2f GiB{3}%s\", ${0}, stringcolumn({1}))) {4} notitle", total_col,
                   total_col + 1, total_col + 2, mode == BarLabels::TwoLines ? "\\n" : ", ", bar_total_labels(mode));
  if (any_demand) // only with a point: gnuplot 5.4 can crash on a plot without one
    s += fmt::format(
        ", \\\n     $peak using 0:(${0} > 0 ? ${0} : NaN) with points pt 11 ps 1.6 lc rgb \"#B00000\" "
        "title \"1st OOM: reserved + context + request\"",
        total_col + 3);
  if (any_steady_mark) // a line drawn across the at-init bar at its steady-state peak
    s += fmt::format(
        ", \\\n     $peak using ($0 - 0.3):(${0} > 0 ? ${0} : NaN):(0.6):(0) with vectors nohead lw 3 "
        "lc rgb \"#000000\" title {1}",
        total_col + 4, gp_quoted(steady_title));
  if (cap_shown) // key entry of the capacity line(s) drawn by the arrows
    s += ", \\\n     NaN with lines dt 2 lw 2 lc rgb \"black\" title " + gp_quoted(cap_key);
  if (const std::string key = thin_tags_key(thin, y_top * kGiB); !key.empty())
    s += ", \\\n     " + key;
  s += "\n";
  return s;
}

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

void run_gnuplot(const std::string& gnuplot, const std::string& script, const std::string& log,
                 const std::string& output) {
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
  in.close();
  std::error_code ec;
  fs::remove(log, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (!output.empty())
      fs::remove(output, ec);
    std::string first;
    std::stringstream ls(text);
    for (std::string l; std::getline(ls, l);)
      if (l.find_first_not_of(" \t^") != std::string::npos)
        first = first.empty() ? l : first;
    if (first.empty() && WIFSIGNALED(status))
      first = fmt::format("gnuplot was killed by signal {}", WTERMSIG(status));
    throw Error("gnuplot failed on " + script + (first.empty() ? "" : ": " + first));
  }
}

// ---- Sweep pictures ----------------------------------------------------------------------------------------------

namespace {

/// Line colours of the sweep series (Okabe-Ito, colour-blind safe; the yellow is left out: too light on white).
const std::vector<std::string>& series_colours() {
  static const std::vector<std::string> colours{"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                "#E69F00", "#56B4E9", "#000000", "#999999"};
  return colours;
}

/// How series `i` of a sweep picture is drawn: the colour, and the point types of its solid line (filled) and of
/// its dashed companion (open). Past the 8 colours the next pair of point types comes in (circle, square,
/// triangle, diamond, inverted triangle, pentagon), so the first 48 series all differ in (colour, point type).
struct SeriesStyle {
  std::string colour;
  int pt = 7; ///< gnuplot point type of the solid line (filled)
  int pt_open = 6; ///< the same shape, open: the dashed line's points
};

SeriesStyle series_style(std::size_t i) {
  static const int kPoints[][2] = {{7, 6}, {5, 4}, {9, 8}, {13, 12}, {11, 10}, {15, 14}};
  const auto& colours = series_colours();
  const auto& pts = kPoints[(i / colours.size()) % std::size(kPoints)];
  return {colours[i % colours.size()], pts[0], pts[1]};
}

/// A key under a sweep picture has at most this many rows; series beyond them are drawn but not named.
constexpr std::size_t kMaxKeyRows = 12;

/// A horizontal key (`set key ... maxcols N`): how many of the series it names and in how many columns and rows.
struct SweepKey {
  std::size_t keyed = 0; ///< series named in the key: the first `keyed`
  std::size_t columns = 1;
  std::size_t rows = 0;
};

/// Lays out a key of `per_series` entries for each of `series` series plus `extra` entries (OOM, capacity) whose
/// longest title has `longest` characters, over `width_px`. gnuplot gives each column (longest + 6) characters
/// (sample, gaps, text; boundary.c do_key_layout) and fills as many columns as fit: one character more is allowed
/// here, so that gnuplot never fits fewer columns than assumed. Series that would need more than kMaxKeyRows rows
/// are left out of the key.
SweepKey sweep_key(std::size_t series, std::size_t per_series, std::size_t extra, std::size_t longest,
                   double width_px) {
  SweepKey k;
  k.columns =
      std::max<std::size_t>(1, static_cast<std::size_t>(width_px / ((static_cast<double>(longest) + 7.0) * kCharPx)));
  const std::size_t room = k.columns * kMaxKeyRows;
  k.keyed = room > extra ? std::min(series, (room - extra) / std::max<std::size_t>(1, per_series)) : 0;
  const std::size_t entries = k.keyed * per_series + extra;
  k.rows = (entries + k.columns - 1) / k.columns;
  k.columns = k.rows == 0 ? 1 : (entries + k.rows - 1) / k.rows; // gnuplot's second pass: no empty column
  return k;
}

/// The title line saying that the key names only some series, "" when it names all of them.
std::string key_cap_note(const SweepKey& k, std::size_t series) {
  if (k.keyed >= series)
    return {};
  return fmt::format(
      "\n{} series: the key names the first {}; sweep fewer axes (or fix some with --set) for a readable picture",
      series, k.keyed);
}

/// The key's last dotted segment: "training.micro_batch" -> "micro_batch".
std::string last_segment(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

/// The value of `key` among a row's inputs, "" when absent.
std::string input_of(const SweepRow& r, const std::string& key) {
  for (const auto& [k, v] : r.inputs)
    if (k == key)
      return v;
  return {};
}

std::vector<const SweepRow*> completed_rows(const SweepTable& t) {
  std::vector<const SweepRow*> out;
  for (const SweepRow& r : t.rows)
    if (r.ok)
      out.push_back(&r);
  return out;
}

/// A line of a sweep picture: its label and its points sorted by x (then by point index).
struct SweepSeries {
  std::string label;
  std::vector<std::pair<double, const SweepRow*>> points;
};

/// Splits `rows` into series by the values of the swept keys that are neither in `x_keys` nor fixed by the x value
/// (a key whose value differs between two rows of the same x). Series in order of first appearance.
std::vector<SweepSeries> split_series(const SweepTable& t, const std::vector<const SweepRow*>& rows,
                                      const std::vector<double>& xs, const std::set<std::string>& x_keys) {
  std::vector<std::string> keys;
  for (const auto& k : t.axis_keys) {
    if (x_keys.count(k) != 0)
      continue;
    std::map<double, std::string> value_at;
    bool fixed_by_x = true;
    for (std::size_t i = 0; i < rows.size() && fixed_by_x; ++i) {
      const std::string v = input_of(*rows[i], k);
      const auto [it, fresh] = value_at.emplace(xs[i], v);
      fixed_by_x = fresh || it->second == v;
    }
    if (!fixed_by_x)
      keys.push_back(k);
  }
  std::vector<SweepSeries> out;
  std::map<std::string, std::size_t> by_label;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    std::string label;
    for (const auto& k : keys) {
      if (!label.empty())
        label += ' ';
      label += last_segment(k);
      label += '=';
      label += input_of(*rows[i], k);
    }
    const auto [it, fresh] = by_label.emplace(label, out.size());
    if (fresh)
      out.push_back(SweepSeries{label, {}});
    out[it->second].points.emplace_back(xs[i], rows[i]);
  }
  for (auto& s : out)
    std::stable_sort(s.points.begin(), s.points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return out;
}

/// Series drawn exactly over one another (the same values at the same x): a series is hidden when a later one, drawn
/// after it, has the same values; that one names it in its key entry, "(hides a, b: same values)". Hidden series
/// get no key entry of their own, so that every line one can see has one.
struct SeriesHiding {
  std::vector<bool> hidden; ///< per series
  std::vector<std::string> note; ///< per series: " (hides ...: same values)" or ""
  std::vector<std::size_t> keyed_order; ///< the visible series, in order: the key's entries
};

template <class Same>
SeriesHiding series_hiding(const std::vector<SweepSeries>& series, Same same) {
  SeriesHiding h;
  h.hidden.assign(series.size(), false);
  std::vector<std::vector<std::string>> hides(series.size());
  for (std::size_t i = 0; i < series.size(); ++i)
    for (std::size_t j = series.size(); j-- > i + 1;) // the last one drawn over it is the one seen
      if (same(series[i], series[j])) {
        h.hidden[i] = true;
        hides[j].push_back(series[i].label);
        break;
      }
  for (std::size_t i = 0; i < series.size(); ++i) {
    h.note.push_back(hides[i].empty() ? std::string()
                                      : fmt::format(" (hides {}: same values)", fmt::join(hides[i], ", ")));
    if (!h.hidden[i])
      h.keyed_order.push_back(i);
  }
  return h;
}

/// "20k", "1.5M", "500": a tick value with an SI suffix (k = 1e3, M = 1e6, G = 1e9).
std::string si_text(double v) {
  if (v >= 1e9)
    return fmt::format("{:g}G", v / 1e9);
  if (v >= 1e6)
    return fmt::format("{:g}M", v / 1e6);
  if (v >= 1e3)
    return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

/// `set {axis}tics (...)` of a log axis over [lo, hi] (lo > 0): the values 1, 2, 5 x 10^n inside it, or when fewer
/// than four of those fall inside (a range of a decade or less), 1, 1.5, 2, 3, 5, 7 x 10^n; labelled by si_text.
/// gnuplot's own log tics put one label per decade, so a range of 20k to 250k read "100k" alone.
std::string log_tics(const char* axis, double lo, double hi) {
  std::vector<double> at;
  for (const std::vector<double>& mantissas : {std::vector<double>{1, 2, 5}, std::vector<double>{1, 1.5, 2, 3, 5, 7}}) {
    at.clear();
    for (int e = static_cast<int>(std::floor(std::log10(lo))); e <= static_cast<int>(std::ceil(std::log10(hi))); ++e)
      for (double m : mantissas) {
        const double v = m * std::pow(10.0, e);
        if (v >= lo && v <= hi)
          at.push_back(v);
      }
    if (at.size() >= 4)
      break;
  }
  std::string s = fmt::format("set {}tics (", axis);
  for (std::size_t i = 0; i < at.size(); ++i)
    s += fmt::format("{}\"{}\" {:g}", i == 0 ? "" : ", ", si_text(at[i]), at[i]);
  return s + ")\n";
}

/// `set xtics (...)` at the distinct x values (for log2 axes whose values are not all powers of two).
std::string xtics_at(const std::vector<double>& xs) {
  std::set<double> distinct(xs.begin(), xs.end());
  std::string s = "set xtics nomirror (";
  bool first = true;
  for (double x : distinct) {
    s += fmt::format("{}\"{:g}\" {:g}", first ? "" : ", ", x, x);
    first = false;
  }
  return s + ")\n";
}

/// `set xrange` of a log2 axis over [lo, hi] with a margin of a quarter of a doubling on each side.
std::string log2_xrange(const std::vector<double>& xs) {
  const auto [lo, hi] = std::minmax_element(xs.begin(), xs.end());
  return fmt::format("set xrange [{:.6g}:{:.6g}]\n", *lo / 1.1892071150027210, *hi * 1.1892071150027210); // 2^0.25
}

std::string title_of(const SweepTable& t, const std::string& what) {
  return (t.scenario.empty() ? std::string() : t.scenario + " sweep: ") + what;
}

/// Micro-batch of a row as a number; false when the value is missing or not a number.
bool micro_batch_of(const SweepRow& r, double& out) {
  const std::string v = input_of(r, "training.micro_batch");
  if (v.empty())
    return false;
  try {
    std::size_t used = 0;
    out = std::stod(v, &used);
    return used == v.size() && out > 0.0;
  } catch (const std::exception&) {
    return false;
  }
}

bool has_breakdown(const SweepRow& r) {
  const StepBreakdown& b = r.breakdown;
  return b.forward_s + b.backward_s + b.optimizer_s + b.other_compute_s + b.exposed_comm_s + b.exposed_offload_s +
             b.exposed_cpu_s + b.exposed_host_s + b.idle_other_s >
         0.0;
}

} // namespace

bool is_sweep_dir(const std::string& dir) {
  const fs::path d(dir);
  return fs::is_directory(d) && fs::exists(d / "sweep.json") && !fs::exists(d / "summary.json") &&
         !fs::exists(d / "result.json");
}

SweepTable load_sweep_table(const std::string& dir) {
  const fs::path p = fs::path(dir) / "sweep.json";
  std::ifstream in(p);
  if (!in)
    throw Error("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    return sweep_from_json(ss.str());
  } catch (const Error& e) {
    throw Error(p.string() + ": " + e.what());
  }
}

std::string sweep_point_label(const SweepRow& row) {
  std::string out;
  for (const auto& [k, v] : row.inputs) {
    if (!out.empty())
      out += ' ';
    out += last_segment(k);
    out += '=';
    out += v;
  }
  return out.empty() ? std::string("base") : out;
}

std::string sweep_breakdown_skip_reason(const SweepTable& t) {
  const auto rows = completed_rows(t);
  if (rows.empty())
    return "no point of the sweep completed";
  if (std::none_of(rows.begin(), rows.end(), [](const SweepRow* r) { return has_breakdown(*r); }) &&
      std::all_of(rows.begin(), rows.end(), [](const SweepRow* r) { return !r->oom_reason.empty(); }))
    return "every point ran out of memory before completing a step (nothing to break down)";
  if (std::none_of(rows.begin(), rows.end(), [](const SweepRow* r) { return has_breakdown(*r); }))
    return "the rows carry no step breakdown (sweep.json from an older zerosim: rerun the sweep with --fresh)";
  return {};
}

std::string sweep_breakdown_script(const SweepTable& t, const std::string& output_file, PlotFormat format) {
  if (const std::string why = sweep_breakdown_skip_reason(t); !why.empty())
    throw Error("sweep step breakdown: " + why);
  struct Category {
    const char* title;
    const char* colour;
    double (*value)(const StepBreakdown&);
  };
  static const Category kCategories[] = {
      {"compute (forward, backward, other kernels)", "#0072B2",
       [](const StepBreakdown& b) { return b.forward_s + b.backward_s + b.other_compute_s; }},
      {"optimizer (GPU)", "#009E73", [](const StepBreakdown& b) { return b.optimizer_s; }},
      {"exposed communication", "#D55E00", [](const StepBreakdown& b) { return b.exposed_comm_s; }},
      {"offload copies (PCIe)", "#E69F00",
       [](const StepBreakdown& b) { return b.exposed_offload_s - b.exposed_offload_nvme_s; }},
      {"NVMe swaps", "#6A3D9A", [](const StepBreakdown& b) { return b.exposed_offload_nvme_s; }},
      {"CPU optimizer (offload)", "#CC79A7", [](const StepBreakdown& b) { return b.exposed_cpu_s; }},
      {"host thread (Python, DeepSpeed hooks)", "#8C564B", [](const StepBreakdown& b) { return b.exposed_host_s; }},
      {"other idle", "#F0E442", [](const StepBreakdown& b) { return b.idle_other_s; }},
  };
  const auto rows = completed_rows(t);
  std::vector<const Category*> used;
  for (const auto& c : kCategories)
    if (std::any_of(rows.begin(), rows.end(), [&c](const SweepRow* r) { return c.value(r->breakdown) > 0.0; }))
      used.push_back(&c);
  std::string data;
  double y_max = 0.0;
  std::size_t longest = 0;
  // With gradient accumulation a step is GA micro-steps: the y label says how many; when the points' GAs differ
  // and grad_accum is not a swept key (train_batch_size fixed, micro_batch swept), each label says its own.
  std::vector<std::int64_t> gas;
  for (const SweepRow* r : rows)
    gas.push_back(r->grad_accum);
  const std::string ga_step = optimizer_step_text(gas);
  const bool ga_differs = !ga_step.empty() && ga_step != optimizer_step_text(gas.front());
  for (const SweepRow* r : rows) {
    const bool swept_ga = std::any_of(r->inputs.begin(), r->inputs.end(),
                                      [](const auto& kv) { return kv.first == "training.grad_accum"; });
    const std::string label =
        sweep_point_label(*r) + (ga_differs && !swept_ga ? fmt::format(" GA={}", r->grad_accum) : std::string());
    longest = std::max(longest, label.size());
    data += gp_quoted(label);
    // A point stopped at its OOM before a steady-state step has no step figures (sweep.csv leaves them empty): no
    // bar, and no time over it, only "OOM".
    const bool figures = has_step_figures(*r);
    double total = 0.0;
    for (const auto* c : used) {
      const double v = figures ? c->value(r->breakdown) : 0.0;
      data += fmt::format(" {:.9f}", v);
      total += v;
    }
    data += fmt::format(" {:.9f} {}\n", total, gp_quoted(r->fits ? "" : "OOM"));
    y_max = std::max(y_max, total);
  }
  // About 55 px per bar (at least 900, at most 2400 px; the key is above the plot, so the bars get the width but
  // about 150 px of margins); labels rotated when they would run into each other (about 9 px per character at 10 pt
  // with some room between labels).
  const int width = static_cast<int>(std::clamp<std::size_t>(300 + 55 * rows.size(), 900, 2400));
  const bool rotate = longest * 9 * rows.size() > static_cast<std::size_t>(width - 150) * 8 / 10;
  // Up to 20 characters: rotated by 30 degrees and right-aligned at the tic, a label reaches about cos 30 = 0.87 of
  // its length to the left of its bar, and the left margin (in characters) makes room for the first one. Longer
  // labels stand vertically (rotated by 90 degrees) under their bar and the picture grows by ~7 px per character.
  const bool vertical = rotate && longest > 20;
  const std::size_t lmargin = std::max<std::size_t>(10, longest * 87 / 100);
  int height = vertical ? 420 + 7 * static_cast<int>(longest) : rotate ? 640 : 560;
  // The step time over each bar: side by side, "0.123 s" needs about 7 characters of the bar's width. Narrower bars
  // get it standing (rotated by 90 degrees, "OOM" after the time and in red), and when even one standing text line
  // per bar does not fit, on every `stride`-th bar only, OOM bars then getting a red cross instead.
  const double bar_px = (width - 150.0) / static_cast<double>(rows.size());
  const bool standing = bar_px < 7.0 * kCharPx;
  const auto stride = standing ? static_cast<std::size_t>(std::ceil(kLinePx / bar_px)) : std::size_t{1};
  double y_top = y_max * 1.2;
  if (standing) {
    // The standing texts need a band above the tallest bar: the picture grows by it, and the y range so that the
    // bars keep their height. The plot area before growing is the picture less the x labels (8 px per character
    // standing, about half that at 30 degrees), the title and the key (about 110 px); estimated low, which only
    // leaves more room.
    std::size_t chars = 0;
    for (const SweepRow* r : rows) {
      double total = 0.0;
      for (const auto* c : used)
        total += c->value(r->breakdown);
      chars = std::max(chars, fmt::format("{:.3g} s{}", total, r->fits || stride > 1 ? "" : " OOM").size());
    }
    const double band_px = (static_cast<double>(chars) + 2.0) * kCharPx;
    const double below_px = vertical ? kCharPx * static_cast<double>(longest)
                            : rotate ? kCharPx * static_cast<double>(longest) / 2.0 + kLinePx
                                     : kLinePx;
    const double plot_px = std::max(150.0, height - below_px - 110.0);
    y_top = y_max * 1.05 * (plot_px + band_px) / plot_px;
    height += static_cast<int>(band_px);
  }
  std::string title = title_of(t, "where one steady-state training step's time goes, per point");
  if (stride > 1)
    title += fmt::format("\nbars too narrow for every step time: printed over one bar in {}", stride);
  std::string s = "# zerosim plot: step-time breakdown across sweep points (generated; time in s)\n";
  s += terminal(format, output_file, width, height);
  s += "set title " + gp_quoted(title) + "\n";
  s += "set ylabel " + gp_quoted(ga_step.empty() ? "time per step (s)" : "time " + ga_step + " (s)") + "\n";
  s += fmt::format("set xrange [-0.6:{:.1f}]\n", static_cast<double>(rows.size()) - 0.4);
  s += fmt::format("set yrange [0:{:.9f}]\n", y_top + 1e-9);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside bottom center horizontal Left reverse noautotitle\n";
  s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
  s += "set style fill solid 0.9 border rgb \"#333333\"\n";
  s += vertical ? std::string("set xtics nomirror rotate by 90 right\n")
       : rotate ? fmt::format("set xtics nomirror rotate by 30 right\nset lmargin {}\n", lmargin)
                : std::string("set xtics nomirror\n");
  s += "$steps << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < used.size(); ++i)
    s += fmt::format("$steps using {}{} lc rgb \"{}\" title {}, \\\n     ", i + 2, i == 0 ? ":xtic(1)" : "",
                     used[i]->colour, gp_quoted(used[i]->title));
  const std::size_t total_col = used.size() + 2;
  const std::size_t oom_col = used.size() + 3;
  // Only the plots that have a point (gnuplot 5.4 crashes on a one-row histogram whose `with labels` plot has none).
  const bool any_oom = std::any_of(rows.begin(), rows.end(), [](const SweepRow* r) { return !r->fits; });
  const bool any_fit = std::any_of(rows.begin(), rows.end(), [](const SweepRow* r) { return r->fits; });
  std::vector<std::string> labels;
  if (!standing) {
    labels.push_back(
        fmt::format("$steps using 0:{0}:(${0} > 0 ? sprintf(\"%.3g s\", ${0}) : \"\") with labels offset 0,0.8 notitle",
                    total_col));
    if (any_oom)
      labels.push_back(
          fmt::format("$steps using 0:(stringcolumn({1}) eq \"OOM\" ? ${0} : NaN):(\"OOM\") with labels "
                      "offset 0,1.9 tc rgb \"#B00000\" notitle",
                      total_col, oom_col));
  } else if (stride == 1) {
    if (any_fit)
      labels.push_back(
          fmt::format("$steps using 0:(stringcolumn({1}) eq \"OOM\" ? NaN : ${0}):(sprintf(\"%.3g s\", "
                      "${0})) with labels rotate by 90 left offset 0,0.5 notitle",
                      total_col, oom_col));
    if (any_oom)
      labels.push_back(fmt::format(
          "$steps using 0:(stringcolumn({1}) eq \"OOM\" ? ${0} : NaN):(${0} > 0 ? sprintf(\"%.3g s OOM\", ${0}) : "
          "\"OOM\") with labels rotate by 90 left offset 0,0.5 tc rgb \"#B00000\" notitle",
          total_col, oom_col));
  } else {
    labels.push_back(
        fmt::format("$steps using 0:(int($0) % {1} == 0 ? ${0} : NaN):(sprintf(\"%.3g s\", ${0})) "
                    "with labels rotate by 90 left offset 0,1 notitle",
                    total_col, stride));
    if (any_oom)
      labels.push_back(
          fmt::format("$steps using 0:(stringcolumn({1}) eq \"OOM\" ? ${0} : NaN) with points pt 2 ps 1 "
                      "lw 2 lc rgb \"#B00000\" title \"does not fit (OOM)\"",
                      total_col, oom_col));
  }
  s += fmt::format("{}\n", fmt::join(labels, ", \\\n     "));
  return s;
}

/// The completed points with a step time to scale: those that fit, and those simulated on past an OOM (on_oom:
/// continue, a steady-state step); a run stopped at its OOM has none (sweep.json: null).
std::vector<const SweepRow*> timed_rows(const SweepTable& t) {
  std::vector<const SweepRow*> out;
  for (const SweepRow* r : completed_rows(t))
    if (has_step_figures(*r)) // completed_rows are ok: fits, or went on past its OOM
      out.push_back(r);
  return out;
}

std::string sweep_scaling_skip_reason(const SweepTable& t) {
  const auto rows = timed_rows(t);
  std::set<int> gpus;
  for (const SweepRow* r : rows)
    gpus.insert(r->world_size);
  if (rows.empty())
    return "no point of the sweep completed";
  if (std::none_of(rows.begin(), rows.end(), [](const SweepRow* r) { return r->tokens_per_s > 0.0; }))
    return "no completed point has a throughput (tokens/s)";
  if (gpus.size() < 2)
    return fmt::format(
        "every completed point runs on {} GPU(s) (sweep cluster.nodes or cluster.gpus_per_node for "
        "scaling curves)",
        *gpus.begin());
  return {};
}

std::string sweep_scaling_script(const SweepTable& t, const std::string& output_file, PlotFormat format) {
  if (const std::string why = sweep_scaling_skip_reason(t); !why.empty())
    throw Error("sweep scaling curves: " + why);
  const auto rows = timed_rows(t);
  std::vector<double> xs;
  for (const SweepRow* r : rows)
    xs.push_back(static_cast<double>(r->world_size));
  const std::vector<SweepSeries> series = split_series(t, rows, xs, {"cluster.nodes", "cluster.gpus_per_node"});
  std::string data;
  // Columns of each series block: GPUs, tokens/s, ideal tokens/s, MFU %, ideal MFU %, fits (1/0). Ideal linear
  // scaling from the series' smallest point that fits (N0, T0, M0): T0 * N / N0 and M0; NaN (no ideal line) when
  // no point of the series fits: what it would scale from is no configuration that trains.
  bool any_oom = false;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const auto first =
        std::find_if(series[i].points.begin(), series[i].points.end(), [](const auto& p) { return p.second->fits; });
    data += fmt::format("$scaling{} << EOD\n", i);
    const bool ideal = first != series[i].points.end();
    for (const auto& [n, r] : series[i].points) {
      data +=
          fmt::format("{:g} {:.3f} {} {:.4f} {} {}\n", n, r->tokens_per_s,
                      ideal ? fmt::format("{:.3f}", first->second->tokens_per_s * n / first->first)
                            : std::string("NaN"),
                      r->mfu * 100.0, ideal ? fmt::format("{:.4f}", first->second->mfu * 100.0) : std::string("NaN"),
                      r->fits ? 1 : 0);
      any_oom = any_oom || !r->fits;
    }
    data += "EOD\n";
  }
  const bool single = series.size() == 1 && series.front().label.empty();
  // A series with the same points as an earlier one (e.g. ZeRO stages 1 and 2 at one gradient-accumulation step) is
  // drawn over it and hides it: its key entry says so.
  auto same_points = [](const SweepSeries& a, const SweepSeries& b) {
    const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-4 * std::max(std::abs(x), std::abs(y)); };
    return a.points.size() == b.points.size() &&
           std::equal(a.points.begin(), a.points.end(), b.points.begin(), [&](const auto& p, const auto& q) {
             return p.first == q.first && p.second->fits == q.second->fits &&
                    close(p.second->tokens_per_s, q.second->tokens_per_s) && close(p.second->mfu, q.second->mfu);
           });
  };
  const SeriesHiding hiding = series_hiding(series, same_points);
  std::vector<std::string> key_titles; // of the visible series, in hiding.keyed_order
  for (const std::size_t i : hiding.keyed_order)
    key_titles.push_back((single ? std::string("simulated") : series[i].label) + hiding.note[i]);
  // One key for both panels, in a frameless plot of its own under them (a key per panel took half the picture
  // twice): the series, and the OOM marker. What the dashed lines are is said once, in the title.
  const std::string oom_title = "open marker, no line: does not fit (OOM)";
  std::size_t longest = any_oom ? oom_title.size() : 0;
  for (const auto& title : key_titles)
    longest = std::max(longest, title.size());
  const double key_width_px = 0.9 * 1300.0; // the panels span screen 0.075 to 0.975
  const SweepKey key = sweep_key(key_titles.size(), 1, any_oom ? 1 : 0, longest, key_width_px);
  const std::string title =
      title_of(t, "throughput and MFU vs number of GPUs (data parallel)") +
      "\ndashed: each line's ideal linear scaling from its smallest point that fits (tokens/s x N / N_smallest; MFU "
      "held)" +
      key_cap_note(key, key_titles.size());
  const char* const tokens_ylabel = "tokens/s (global batch tokens / step time)";
  const char* const mfu_ylabel = "MFU (% of the GPU's peak bf16/fp16 FLOP/s)";
  // Rows of the picture, px from the top: the title lines, the panels (tall enough for their y labels, which are
  // centred on them, so that no label reaches into the title), the x tic labels and x label, the key's rows.
  const double title_px = 16.0 + kLinePx * static_cast<double>(1 + std::count(title.begin(), title.end(), '\n'));
  const double panel_px =
      std::max(340.0,
               (static_cast<double>(std::max(std::strlen(tokens_ylabel), std::strlen(mfu_ylabel))) + 4.0) * kCharPx);
  const double below_px = 3.5 * kLinePx;
  const double key_px = (static_cast<double>(key.rows) + 1.0) * kLinePx;
  const double pad_px = 8.0;
  const int height = static_cast<int>(std::ceil(title_px + panel_px + below_px + key_px + pad_px));
  const double h = static_cast<double>(height);
  std::string s = "# zerosim plot: scaling curves of a sweep (generated; tokens/s, MFU in %, GPUs = world size)\n";
  s += terminal(format, output_file, 1300, height);
  s += data;
  // A line joins the points that fit only (NaN breaks it); points that do not fit (simulated as if the card were
  // larger: on_oom continue) are open markers of the series' shape and colour, without a line, so that a
  // configuration that cannot train does not read as the best curve.
  auto plot_panel = [&](int value_col, int ideal_col) {
    std::string p = "plot ";
    for (std::size_t i = 0; i < series.size(); ++i) {
      const SeriesStyle st = series_style(i);
      p += fmt::format(
          "$scaling{0} using 1:($6 == 1 ? ${1} : NaN) with linespoints lw 2 pt {3} lc rgb \"{2}\" notitle, \\\n     "
          "$scaling{0} using 1:{4} with lines dt 2 lw 1 lc rgb \"{2}\" notitle{5}",
          i, value_col, st.colour, st.pt, ideal_col, i + 1 < series.size() || any_oom ? ", \\\n     " : "\n");
      if (any_oom)
        p += fmt::format(
            "$scaling{0} using 1:($6 == 0 ? ${1} : NaN) with points pt {2} ps 1.5 lw 1.5 lc rgb \"{3}\" notitle{4}", i,
            value_col, st.pt_open, st.colour, i + 1 < series.size() ? ", \\\n     " : "\n");
    }
    return p;
  };
  s += "set multiplot title " + gp_quoted(title) + "\n";
  s += "set key off\n";
  s += fmt::format("set tmargin at screen {:.4f}\nset bmargin at screen {:.4f}\n", 1.0 - title_px / h,
                   (pad_px + key_px + below_px) / h);
  s += "set logscale x 2\n";
  s += xtics_at(xs);
  s += log2_xrange(xs);
  s += "set xlabel \"GPUs (nodes x GPUs per node)\"\n";
  s += "set grid xtics ytics lc rgb \"#dddddd\"\n";
  double t_lo = 0.0;
  double t_hi = 0.0;
  for (const auto& se : series)
    for (const auto& [n, r] : se.points) {
      const auto first = std::find_if(se.points.begin(), se.points.end(), [](const auto& p) { return p.second->fits; });
      const double ideal = first == se.points.end() ? 0.0 : first->second->tokens_per_s * n / first->first;
      if (r->tokens_per_s > 0.0)
        t_lo = t_lo == 0.0 ? r->tokens_per_s : std::min(t_lo, r->tokens_per_s);
      t_hi = std::max({t_hi, r->tokens_per_s, ideal});
    }
  s += "set lmargin at screen 0.075\nset rmargin at screen 0.475\n";
  s += "set logscale y 10\n";
  s += "set format y \"%.0s%c\"\n"; // 10k, 100k, 1M
  if (t_lo > 0.0) { // a third of a decade of room on either side (2.15 = 10^(1/3)) instead of whole decades
    const double y_lo = t_lo / 2.1544346900318838;
    const double y_hi = t_hi * 2.1544346900318838;
    s += fmt::format("set yrange [{:.6g}:{:.6g}]\n", y_lo, y_hi);
    s += log_tics("y", y_lo, y_hi);
  }
  s += fmt::format("set ylabel {}\n", gp_quoted(tokens_ylabel));
  s += plot_panel(2, 3);
  s += "set lmargin at screen 0.575\nset rmargin at screen 0.975\n";
  s += "unset logscale y\n";
  s += "set ytics autofreq\n"; // not the tokens/s panel's tick list
  s += "set format y \"%g\"\n";
  double m_max = 0.0;
  for (const SweepRow* r : rows)
    m_max = std::max(m_max, r->mfu * 100.0);
  s += fmt::format("set yrange [0:{:.4f}]\n", m_max * 1.3 + 1e-4);
  s += fmt::format("set ylabel {}\n", gp_quoted(mfu_ylabel));
  s += plot_panel(4, 5);
  s += "# the key of both panels: a frameless plot of NaN lines under them\n";
  s += fmt::format(
      "set lmargin at screen 0.075\nset rmargin at screen 0.975\nset tmargin at screen {:.4f}\n"
      "set bmargin at screen {:.4f}\n",
      (pad_px + key_px) / h, pad_px / h);
  s += "unset border\nunset tics\nunset xlabel\nunset ylabel\nunset grid\nunset logscale\n";
  s += "set xrange [0:1]\nset yrange [0:1]\n";
  s += fmt::format("set key inside center top horizontal Left reverse noautotitle maxcols {}\n", key.columns);
  std::vector<std::string> entries;
  for (std::size_t k = 0; k < key.keyed; ++k) {
    const SeriesStyle st = series_style(hiding.keyed_order[k]);
    entries.push_back(fmt::format("NaN with linespoints lw 2 pt {} lc rgb \"{}\" title {}", st.pt, st.colour,
                                  gp_quoted(key_titles[k])));
  }
  if (any_oom)
    entries.emplace_back("NaN with points pt 6 ps 1.5 lw 1.5 lc rgb \"#555555\" title " + gp_quoted(oom_title));
  if (entries.empty())
    entries.emplace_back("NaN notitle");
  s += "plot ";
  for (std::size_t i = 0; i < entries.size(); ++i)
    s += entries[i] + (i + 1 < entries.size() ? ", \\\n     " : "\n");
  s += "unset multiplot\n";
  return s;
}

std::string sweep_memory_skip_reason(const SweepTable& t) {
  if (std::find(t.axis_keys.begin(), t.axis_keys.end(), "training.micro_batch") == t.axis_keys.end())
    return "training.micro_batch is not swept";
  std::set<double> mbs;
  for (const SweepRow* r : completed_rows(t)) {
    double mb = 0.0;
    if (!micro_batch_of(*r, mb))
      return "training.micro_batch '" + input_of(*r, "training.micro_batch") + "' is not a positive number";
    mbs.insert(mb);
  }
  if (mbs.size() < 2)
    return "fewer than two micro-batch values among the completed points";
  return {};
}

namespace {

/// Height of a point's OOM mark in the memory picture, B. The peaks of a point that ran out of memory stop below
/// the capacity (the failed request is not counted), so the mark is clamped to the capacity line; what the failed
/// request would have needed (often several times the capacity) is written next to it (oom_mark_label) rather
/// than drawn, which would flatten every other point. Points that fit: their nvidia-smi peak (no mark drawn).
double oom_mark_bytes(const SweepRow& r) {
  if (r.fits)
    return r.nvidia_smi_bytes;
  return std::max(r.nvidia_smi_bytes, r.capacity_bytes);
}

/// A GPU OOM's demand in GiB (2^30 B) as it is printed: two decimals, more (up to four) while it would read as the
/// capacity `capacity_bytes` or less ("80.00 GiB" on an 80.00 GiB card), "> capacity" past that.
std::string demand_gib_text(double demand_bytes, double capacity_bytes) {
  for (int decimals = 2; decimals <= 4; ++decimals) {
    const double scale = std::pow(10.0, decimals);
    if (capacity_bytes <= 0.0 || std::round(demand_bytes / kGiB * scale) > std::round(capacity_bytes / kGiB * scale))
      return fmt::format("{:.{}f} GiB", demand_bytes / kGiB, decimals);
  }
  return "> " + gib_text(capacity_bytes);
}

/// The text next to an OOM mark: "1st OOM at N GiB" (RunSummary::oom_gpu_demand_bytes: reserved + CUDA context +
/// NCCL + the request that failed first; what the whole step would need is more; demand_gib_text), empty when the
/// row does not carry it (host OOM, older zerosim) or the point fits.
std::string oom_mark_label(const SweepRow& r) {
  if (r.fits || r.oom_gpu_demand_bytes <= 0.0)
    return {};
  return "1st OOM at " + demand_gib_text(r.oom_gpu_demand_bytes, r.capacity_bytes);
}

/// Series of a memory picture with two key entries each (peak allocated, nvidia-smi), at most; past this, one each.
constexpr std::size_t kMemorySeriesKeyedTwice = 4;
/// Text lines of the OOM block over one micro-batch, at most (memory picture); more are summarised in one.
constexpr std::size_t kOomLinesPerBlock = 3;
/// The memory picture's plot area, px high (estimated low: gnuplot gives it about 424 px).
constexpr double kMemoryPlotPx = 420.0;

} // namespace

InitPeakMark sweep_memory_init_mark(const SweepRow& r) {
  InitPeakMark m;
  m.at_init = r.peak_at_init && has_step_figures(r); // a point stopped at its OOM draws no peak to ring
  if (m.at_init && r.steady_peak_allocated_bytes > 0.0)
    m.steady_peak_bytes = r.steady_peak_allocated_bytes;
  return m;
}

std::string sweep_memory_script(const SweepTable& t, const std::string& output_file, PlotFormat format,
                                YRange y_range) {
  if (const std::string why = sweep_memory_skip_reason(t); !why.empty())
    throw Error("sweep memory vs micro-batch: " + why);
  const auto rows = completed_rows(t);
  std::vector<double> xs;
  std::set<double> capacities;
  double y_max = 0.0;
  bool any_oom = false;
  for (const SweepRow* r : rows) {
    double mb = 0.0;
    (void)micro_batch_of(*r, mb);
    xs.push_back(mb);
    if (r->capacity_bytes > 0.0)
      capacities.insert(r->capacity_bytes);
    y_max = std::max({y_max, r->peak_allocated_bytes, r->nvidia_smi_bytes});
    // The capacity line, or (--y-range fit) an OOM point's mark, which sits on it at least: the axis holds it. So
    // with an OOM point the capacity is always on the chart, and only a sweep that fits throughout has it above.
    if (y_range == YRange::Capacity)
      y_max = std::max(y_max, r->capacity_bytes);
    else if (!r->fits)
      y_max = std::max(y_max, oom_mark_bytes(*r));
    any_oom = any_oom || !r->fits;
  }
  const std::vector<SweepSeries> series = split_series(t, rows, xs, {"training.micro_batch"});
  const bool single = series.size() == 1 && series.front().label.empty();
  // A point whose peak allocated was reached at initialisation, before step 0 (sweep.csv peak_allocated_at
  // "initialisation"; the console's "^", the run pictures' "at init") is ringed, and its steady-state peak (steps >= 1)
  // drawn as a short black line under it, as the peak-memory bar chart draws it across an at-init bar.
  bool any_init = false;
  bool any_steady_mark = false;
  for (const SweepRow* r : rows) {
    const InitPeakMark m = sweep_memory_init_mark(*r);
    any_init = any_init || m.at_init;
    any_steady_mark = any_steady_mark || m.steady_peak_bytes > 0.0;
  }
  const std::string init_title = "at init";
  const std::string steady_title = "steady-state peak of an at-init point";
  // Up to kMemorySeriesKeyedTwice series, each has two key entries ("stage=2: peak allocated", "stage=2:
  // nvidia-smi ..."); more have one each, their colour and points, and the title says once what solid and dashed
  // are.
  const bool compact = !single && series.size() > kMemorySeriesKeyedTwice;
  // A series with the same values as a later one is drawn under it, unseen: its key entry goes, the later one's
  // names it (as in the scaling picture).
  const SeriesHiding hiding = series_hiding(series, [](const SweepSeries& a, const SweepSeries& b) {
    const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-4 * std::max(std::abs(x), std::abs(y)); };
    return a.points.size() == b.points.size() &&
           std::equal(a.points.begin(), a.points.end(), b.points.begin(), [&](const auto& p, const auto& q) {
             return p.first == q.first && p.second->fits == q.second->fits &&
                    has_step_figures(*p.second) == has_step_figures(*q.second) &&
                    close(p.second->peak_allocated_bytes, q.second->peak_allocated_bytes) &&
                    close(p.second->nvidia_smi_bytes, q.second->nvidia_smi_bytes);
           });
  });
  const std::string smi = "nvidia-smi (reserved + CUDA context + NCCL)";
  auto peak_title = [&](std::size_t i) {
    return single    ? std::string("peak allocated")
           : compact ? series[i].label + hiding.note[i]
                     : series[i].label + ": peak allocated" + hiding.note[i];
  };
  auto smi_title = [&](std::size_t i) { return single ? smi : series[i].label + ": " + smi; };
  std::string caps;
  for (double cap : capacities) {
    if (!caps.empty())
      caps += ", ";
    caps += gib_text(cap);
  }
  const std::string cap_title = caps.empty() ? std::string("device capacity unknown") : "device capacity " + caps;
  const std::string oom_title = "does not fit (OOM)";
  std::size_t longest = std::max({cap_title.size(), any_oom ? oom_title.size() : 0, any_init ? init_title.size() : 0,
                                  any_steady_mark ? steady_title.size() : 0});
  for (std::size_t i = 0; i < series.size(); ++i)
    longest = std::max({longest, peak_title(i).size(), compact ? 0 : smi_title(i).size()});
  const std::size_t extra_entries = (any_oom ? 2 : 1) + (any_init ? 1 : 0) + (any_steady_mark ? 1 : 0);
  // 1100 px wide, or 1400 when that is what it takes for the key to name every series.
  int width = 1100;
  SweepKey key;
  for (const int w : {1100, 1400}) {
    width = w;
    key = sweep_key(hiding.keyed_order.size(), compact ? 1 : 2, extra_entries, longest, w - 100.0);
    if (key.keyed == hiding.keyed_order.size())
      break;
  }
  const double plot_width_px = width - 100.0; // less the y tic labels and label, and the right margin
  std::string title = title_of(t, "peak GPU memory vs micro-batch");
  if (compact)
    title += "\nsolid: worst rank's peak allocated; dashed: " + smi + ", which decides OOM";
  if (any_init) // the run pictures' words
    title += "\nat init = the peak is reached at initialisation, before step 0";
  title += key_cap_note(key, hiding.keyed_order.size());
  // --y-range fit: with no OOM point (whose marks, on a capacity line, the axis holds) the axis runs to 15 % over
  // the data (no OOM text bands: headroom 1.15 below) and a capacity above it is said in the title.
  for (double cap : capacities)
    if (cap / kGiB > y_max / kGiB * 1.15 + 0.01) {
      title += "\n" + capacity_off_chart(cap / kGiB);
      break;
    }
  // The plot area keeps about kMemoryPlotPx: the picture grows by a text line per key row beyond 5 and per title
  // line beyond the first (600 px with 5 key rows and a one-line title).
  const auto title_lines = static_cast<std::size_t>(1 + std::count(title.begin(), title.end(), '\n'));
  const int height = 520 + 16 * static_cast<int>(std::max<std::size_t>(key.rows, 5) + title_lines - 1);

  // The OOM marks of every series sit on the capacity line, so their texts go in one block per micro-batch at the
  // top of the frame, inside it (anchored at graph 1, one text line under the other), and the y range keeps the
  // curves below the blocks. A block has a line per distinct "1st OOM at N GiB", in the series' colour when one
  // series has it, "(k series)" after it otherwise; past kOomLinesPerBlock lines it is summarised in one line.
  struct OomLine {
    std::string text;
    std::string colour;
  };
  struct OomBlock {
    double mb = 0.0;
    std::vector<OomLine> lines;
    double left_px = 0.0; ///< text extent to the left and right of the micro-batch, px
    double right_px = 0.0;
    const char* align = "center";
  };
  std::map<double, std::vector<std::pair<double, std::size_t>>> oom_at; // micro-batch -> (demand B, series)
  std::map<std::pair<double, std::size_t>, std::string> oom_text; // (micro-batch, series) -> oom_mark_label
  for (std::size_t i = 0; i < series.size(); ++i)
    for (const auto& [mb, r] : series[i].points)
      if (const std::string text = oom_mark_label(*r); !text.empty()) {
        oom_at[mb].emplace_back(r->oom_gpu_demand_bytes, i);
        oom_text[{mb, i}] = text;
      }
  const double mb_lo = *std::min_element(xs.begin(), xs.end());
  const double mb_hi = *std::max_element(xs.begin(), xs.end());
  const double doublings = std::log2(mb_hi / mb_lo) + 0.5; // log2_xrange: a quarter doubling of margin each side
  std::vector<OomBlock> blocks;
  for (auto& [mb, found] : oom_at) {
    std::sort(found.begin(), found.end());
    std::vector<std::pair<std::string, std::vector<std::size_t>>> groups; // text, its series, by demand
    for (const auto& [demand, i] : found) {
      const std::string& text = oom_text[{mb, i}];
      if (groups.empty() || groups.back().first != text)
        groups.push_back({text, {}});
      groups.back().second.push_back(i);
    }
    OomBlock b;
    b.mb = mb;
    if (groups.size() <= kOomLinesPerBlock) {
      for (const auto& [text, in] : groups)
        b.lines.push_back(in.size() == 1 ? OomLine{text, series_style(in.front()).colour}
                                         : OomLine{fmt::format("{} ({} series)", text, in.size()), "black"});
    } else {
      b.lines.push_back({fmt::format("{} series: {} to {}", found.size(), oom_text[{mb, found.front().second}],
                                     oom_text[{mb, found.back().second}].substr(std::strlen("1st OOM at "))),
                         "black"});
    }
    // Left-aligned at the smallest micro-batch and right-aligned at the largest, so that no text leaves the frame;
    // centred elsewhere. Texts are 9 pt: 0.9 of the 10 pt character width.
    std::size_t chars = 0;
    for (const auto& l : b.lines)
      chars = std::max(chars, l.text.size());
    const double w = 0.9 * kCharPx * static_cast<double>(chars);
    b.align = mb == mb_lo ? "left" : mb == mb_hi ? "right" : "center";
    b.left_px = mb == mb_lo ? 0.0 : mb == mb_hi ? w : w / 2.0;
    b.right_px = w - b.left_px;
    blocks.push_back(std::move(b));
  }
  // Blocks of neighbouring micro-batches that would run into each other: every other block goes under the others.
  bool stagger = false;
  for (std::size_t k = 1; k < blocks.size(); ++k) {
    const double gap_px = plot_width_px * std::log2(blocks[k].mb / blocks[k - 1].mb) / doublings;
    stagger = stagger || blocks[k - 1].right_px + blocks[k].left_px + kCharPx > gap_px;
  }
  std::size_t lines_top = 0; // text lines of the top row of blocks (every block unless staggered)
  std::size_t lines_under = 0; // of the staggered blocks under them
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    std::size_t& row = stagger && k % 2 == 1 ? lines_under : lines_top;
    row = std::max(row, blocks[k].lines.size());
  }
  const std::size_t band_lines = lines_top + lines_under;
  // y range: 15 % over the largest value, or more when the blocks need it: the band of band_lines text lines (and
  // half a line of room) must stay above the largest value, with 2 % to spare.
  const double band_px = blocks.empty() ? 0.0 : (static_cast<double>(band_lines) + 0.6) * kLinePx;
  const double headroom = std::max(1.15, 1.02 / (1.0 - band_px / kMemoryPlotPx));
  const double y_top = y_max / kGiB * headroom + 0.01;

  std::string s = "# zerosim plot: GPU memory vs micro-batch of a sweep (generated; GiB = 2^30 B)\n";
  s += terminal(format, output_file, width, height);
  s += "set title " + gp_quoted(title) + "\n";
  s += "set logscale x 2\n";
  s += xtics_at(xs);
  s += log2_xrange(xs);
  s += "set xlabel \"micro-batch (training.micro_batch, sequences per GPU)\"\n";
  s += "set ylabel \"GPU memory (GiB = 2^30 B)\"\n";
  s += fmt::format("set yrange [0:{:.6f}]\n", y_top);
  s += "set grid xtics ytics lc rgb \"#dddddd\"\n";
  // The key goes under the frame: inside, it covers the capacity line (drawn across the whole width near the top).
  s += fmt::format("set key below Left reverse noautotitle maxcols {}\n", key.columns);
  int arrow = 1;
  for (double cap : capacities)
    if (cap / kGiB <= y_top)
      s += fmt::format(
          "set arrow {0} from graph 0, first {1:.6f} to graph 1, first {1:.6f} nohead dt 2 lw 2 "
          "lc rgb \"black\" front\n",
          arrow++, cap / kGiB);
  int label = 1;
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const std::size_t first_line = stagger && k % 2 == 1 ? lines_top : 0;
    for (std::size_t l = 0; l < blocks[k].lines.size(); ++l)
      s += fmt::format("set label {} {} at first {:g}, graph 1 {} offset 0,-{:.1f} font \",9\" tc rgb \"{}\" front\n",
                       label++, gp_quoted(blocks[k].lines[l].text), blocks[k].mb, blocks[k].align,
                       static_cast<double>(first_line + l) + 1.0, blocks[k].lines[l].colour);
  }
  // Columns of each series block: micro-batch, peak allocated GiB, nvidia-smi GiB, fits (1/0), height of the OOM
  // mark in GiB (oom_mark_bytes: at least the capacity line), the mark's label (oom_mark_label). A point that stopped
  // at its OOM (on_oom: stop: no steady-state step) has only the memory in use when it stopped, below what it
  // needed: NaN, so the lines end at the last point that fits and the OOM mark speaks for it.
  for (std::size_t i = 0; i < series.size(); ++i) {
    s += fmt::format("$memory{} << EOD\n", i);
    for (const auto& [mb, r] : series[i].points) {
      const bool stopped = !has_step_figures(*r);
      const auto gib = [&](double bytes) { return stopped ? std::string("NaN") : fmt::format("{:.6f}", bytes / kGiB); };
      s += fmt::format("{:g} {} {} {} {:.6f} {}\n", mb, gib(r->peak_allocated_bytes), gib(r->nvidia_smi_bytes),
                       r->fits ? 1 : 0, oom_mark_bytes(*r) / kGiB, gp_quoted(oom_mark_label(*r)));
    }
    s += "EOD\n";
  }
  // The at-init points of each series that has any: micro-batch, peak allocated GiB, steady-state peak GiB (NaN when
  // no step >= 1 began).
  std::vector<bool> has_init(series.size(), false);
  for (std::size_t i = 0; i < series.size(); ++i) {
    std::string block;
    for (const auto& [mb, r] : series[i].points)
      if (const InitPeakMark m = sweep_memory_init_mark(*r); m.at_init)
        block += fmt::format("{:g} {:.6f} {}\n", mb, r->peak_allocated_bytes / kGiB,
                             m.steady_peak_bytes > 0.0 ? fmt::format("{:.6f}", m.steady_peak_bytes / kGiB) : "NaN");
    if (!block.empty()) {
      has_init[i] = true;
      s += fmt::format("$init{} << EOD\n", i) + block + "EOD\n";
    }
  }
  s += "plot ";
  for (std::size_t i = 0; i < series.size(); ++i) {
    const SeriesStyle st = series_style(i);
    // Keyed: visible, and among the first key.keyed visible series.
    const auto rank = std::find(hiding.keyed_order.begin(), hiding.keyed_order.end(), i);
    const bool keyed =
        rank != hiding.keyed_order.end() && static_cast<std::size_t>(rank - hiding.keyed_order.begin()) < key.keyed;
    s += fmt::format(
        "$memory{0} using 1:2 with linespoints lw 2 pt {2} lc rgb \"{1}\" {3}, \\\n     "
        "$memory{0} using 1:3 with linespoints dt 2 lw 2 pt {4} lc rgb \"{1}\" {5}, \\\n     ",
        i, st.colour, st.pt, keyed ? "title " + gp_quoted(peak_title(i)) : std::string("notitle"), st.pt_open,
        keyed && !compact ? "title " + gp_quoted(smi_title(i)) : std::string("notitle"));
    if (any_oom)
      s += fmt::format(
          "$memory{0} using 1:($4 == 0 ? $5 : NaN) with points pt 2 ps 2.5 lw 2 lc rgb \"black\" "
          "notitle, \\\n     ",
          i);
    if (has_init
            [i]) // the ring, and the steady-state peak as a line centred on the point, 0.16 of a doubling wide (log2 x)
      s += fmt::format(
          "$init{0} using 1:2 with points pt 6 ps 2.5 lw 1.5 lc rgb \"black\" notitle, \\\n     "
          "$init{0} using ($1 * 0.945):3:($1 * 0.113):(0) with vectors nohead lw 3 lc rgb \"black\" notitle, \\\n     ",
          i);
  }
  if (any_init)
    s += "NaN with points pt 6 ps 2.5 lw 1.5 lc rgb \"black\" title " + gp_quoted(init_title) + ", \\\n     ";
  if (any_steady_mark)
    s += "NaN with lines lw 3 lc rgb \"black\" title " + gp_quoted(steady_title) + ", \\\n     ";
  if (any_oom)
    s += "NaN with points pt 2 ps 2.5 lw 2 lc rgb \"black\" title " + gp_quoted(oom_title) + ", \\\n     ";
  if (capacities.empty() || *capacities.begin() / kGiB <= y_top)
    s += "NaN with lines dt 2 lw 2 lc rgb \"black\" title " + gp_quoted(cap_title) + "\n";
  else
    s += "NaN notitle\n";
  return s;
}

std::vector<SweepPicture> sweep_pictures(const SweepTable& t, const std::string& out_dir, PlotFormat format,
                                         YRange y_range) {
  const fs::path dir(out_dir);
  const std::string ext = std::string(".") + plot_extension(format);
  std::vector<SweepPicture> out;
  auto add = [&](const char* name, const std::string& why, auto make) {
    SweepPicture p{name, {}, why};
    if (why.empty())
      p.script = make(t, (dir / (std::string(name) + ext)).string(), format);
    out.push_back(std::move(p));
  };
  add("sweep-breakdown", sweep_breakdown_skip_reason(t), sweep_breakdown_script);
  add("sweep-scaling", sweep_scaling_skip_reason(t), sweep_scaling_script);
  add("sweep-memory", sweep_memory_skip_reason(t), [&](const SweepTable& table, const std::string& file, PlotFormat f) {
    return sweep_memory_script(table, file, f, y_range);
  });
  return out;
}

} // namespace zerosim::analysis
