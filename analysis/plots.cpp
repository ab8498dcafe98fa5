// gnuplot scripts of a run's memory timeline, step breakdown and peak memory (analysis/plots.hpp).
#include "analysis/plots.hpp"

#include "analysis/memory_csv.hpp"
#include "sim/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace zerosim::analysis {

namespace {

namespace fs = std::filesystem;

constexpr double kGiB = 1073741824.0;  // 2^30 B: GiB wherever a number meets a person (PREAMBLE)

/// One colour per memory tag, the same in every picture (colour-blind-safe Okabe-Ito first, then greys/pastels).
const std::map<std::string, std::string>& tag_colours() {
  static const std::map<std::string, std::string> colours{
      {"lp_params", "#0072B2"},      {"fp32_master", "#56B4E9"},   {"optimizer_states", "#009E73"},
      {"grad_partition", "#E69F00"}, {"lp_grads", "#F0E442"},      {"ipg_bucket", "#D55E00"},
      {"gather_buffer", "#CC79A7"},  {"fp32_grads", "#8C564B"},    {"flatten_temp", "#999999"},
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
      out += "\\n";  // gnuplot's newline escape inside double quotes
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
    v.breakdown.exposed_offload_s = num(*b, "exposed_offload_s");
    v.breakdown.exposed_cpu_s = num(*b, "exposed_cpu_s");
    v.breakdown.idle_other_s = num(*b, "idle_other_s");
  }
  v.step_time_s = num(s, "step_time_s");
  v.peak_bytes = num(s, "peak_allocated_bytes");
  v.capacity_bytes = num(s, "capacity_bytes");
  v.fits = !(s.contains("fits") && s["fits"].is_boolean()) || s["fits"].get<bool>();
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

/// `set xtics ...` for bars labelled `labels`: rotated when the labels would run into each other (about 110
/// characters fit side by side at 10 pt in the 1000 px wide bar charts).
std::string xtics_for(const std::vector<PlotVariant>& variants) {
  std::size_t longest = 0;
  for (const auto& v : variants)
    longest = std::max(longest, axis_label(v.label).size());
  return longest * variants.size() > 110 ? "set xtics nomirror rotate by -30\n" : "set xtics nomirror\n";
}

/// "12.34 GiB" (GiB = 2^30 B).
std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / kGiB); }

} // namespace

const char* plot_extension(PlotFormat format) { return format == PlotFormat::PNG ? "png" : "svg"; }

const std::vector<std::string>& plot_tag_order() {
  static const std::vector<std::string> order{"lp_params",  "fp32_master",   "optimizer_states", "grad_partition",
                                              "lp_grads",   "ipg_bucket",    "gather_buffer",    "fp32_grads",
                                              "flatten_temp", "activations", "working"};
  return order;
}

PlotRun load_plot_run(const std::string& dir) {
  const fs::path root(dir);
  if (!fs::is_directory(root))
    throw Error("run directory '" + dir + "' does not exist (run `zerosim run SCENARIO --out DIR` first)");
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
      if (jv.contains("summary") && jv["summary"].is_object())
        fill_from_summary(v, jv["summary"]);
      const fs::path csv = root / sub / "memory.csv";
      v.memory_csv = fs::exists(csv) ? csv.string() : std::string();
      run.variants.push_back(std::move(v));
    }
    return run;
  }
  const fs::path result_path = root / "result.json";
  if (!fs::exists(result_path))
    throw Error("'" + dir + "' has neither summary.json nor result.json (not a `zerosim run` output directory)");
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
  if (r.contains("summary") && r["summary"].is_object())
    fill_from_summary(v, r["summary"]);
  const fs::path csv = root / "memory.csv";
  v.memory_csv = fs::exists(csv) ? csv.string() : std::string();
  run.variants.push_back(std::move(v));
  return run;
}

std::vector<MemoryCsvRow> parse_memory_csv(std::istream& in, const std::string& what) {
  std::string line;
  if (!std::getline(in, line) || line != kMemoryCsvHeader)
    throw Error(what + ":1: expected the header '" + std::string(kMemoryCsvHeader) + "'");
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
    if (f.size() != 6)
      throw Error(fmt::format("{}:{}: expected 6 comma-separated fields, got {}", what, line_no, f.size()));
    if (f[2] != "gpu")
      continue;
    MemoryCsvRow r;
    try {
      std::size_t used = 0;
      r.time_s = std::stod(f[0], &used);
      r.rank = std::stoi(f[1]);
      r.tag = f[3];
      r.bytes = std::stod(f[4]);
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

std::string memory_timeline_script(const std::vector<MemoryCsvRow>& rows, int rank, const PlotVariant& variant,
                                   const std::string& scenario, const std::string& output_file, PlotFormat format) {
  std::set<std::string> present;
  double t_end = 0.0;
  bool any = false;
  for (const auto& r : rows)
    if (r.rank == rank) {
      any = true;
      if (r.bytes > 0.0)
        present.insert(r.tag);
      t_end = std::max(t_end, r.time_s);
    }
  if (!any)
    throw Error(fmt::format("memory.csv of {} has no GPU row of rank {}", variant.name, rank));
  const std::vector<std::string> tags = ordered_tags(present);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < tags.size(); ++i)
    column[tags[i]] = i;

  // Step function: at each change, a point with the state before (same time) and one with the state after, so
  // the stacked areas keep their value until the next change. Columns: time, then the cumulative GiB of tags.
  std::vector<double> state(tags.size(), 0.0);
  std::string data;
  double peak = -1.0;
  double peak_t = 0.0;
  double last_t = -1.0;
  auto emit = [&](double t) {
    data += fmt::format("{:.9f}", t);
    double cum = 0.0;
    for (double b : state) {
      cum += b;
      data += fmt::format(" {:.6f}", cum / kGiB);
    }
    data += '\n';
    return cum;
  };
  emit(0.0);
  for (const auto& r : rows) {
    if (r.rank != rank)
      continue;
    const auto col = column.find(r.tag);
    if (col == column.end())
      continue;  // a tag that is never non-zero on this rank
    double& slot = state[col->second];
    if (slot == r.bytes)
      continue;
    if (r.time_s != last_t)
      emit(r.time_s);  // the state just before this change
    slot = r.bytes;
    const double total = emit(r.time_s);
    last_t = r.time_s;
    if (total > peak) {
      peak = total;
      peak_t = r.time_s;
    }
  }
  if (t_end <= 0.0)
    t_end = 1e-9;
  emit(t_end);
  peak = std::max(peak, 0.0);

  const double cap_gib = variant.capacity_bytes / kGiB;
  const double peak_gib = peak / kGiB;
  const double y_max = std::max(cap_gib, peak_gib) * 1.12 + 0.01;
  std::string s = "# zerosim plot: memory timeline (generated; GiB = 2^30 B, time in s)\n";
  s += terminal(format, output_file, 1100, 560);
  std::string title = (scenario.empty() ? std::string() : scenario + ": ") + variant.label +
                      fmt::format(", rank {}: allocated GPU memory by tag", rank);
  if (!variant.fits)
    title += fmt::format("\nOOM: allocator-reserved memory + CUDA context exceed {}; drawn as if the card were larger", gib_text(
                                                                                       variant.capacity_bytes));
  s += "set title " + gp_quoted(title) + "\n";
  s += "set xlabel \"simulated time (s)\"\n";
  s += "set ylabel \"allocated GPU memory (GiB = 2^30 B)\"\n";
  s += fmt::format("set xrange [0:{:.9f}]\n", t_end);
  s += fmt::format("set yrange [0:{:.6f}]\n", y_max);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style fill solid 0.9 noborder\n";
  // The peak: a point and a label, right-aligned when it is in the right half so it stays inside the plot.
  const bool right = peak_t > 0.5 * t_end;
  s += fmt::format("set label 1 {} at {:.9f},{:.6f} {} point pt 7 ps 1.2 lc rgb \"black\" offset {},0.8 front\n",
                   gp_quoted(fmt::format("peak {:.2f} GiB at t = {:.3f} s", peak_gib, peak_t)), peak_t, peak_gib,
                   right ? "right" : "left", right ? "-1" : "1");
  s += "$mem << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < tags.size(); ++i) {
    const std::string lower = i == 0 ? "(0)" : fmt::format("{}", i + 1);
    s += fmt::format("$mem using 1:{}:{} with filledcurves lc rgb \"{}\" title {}, \\\n     ", lower, i + 2,
                     tag_colour(tags[i]), gp_quoted(tag_title(tags[i])));
  }
  s += fmt::format("{:.6f} with lines dt 2 lw 2 lc rgb \"black\" title {}\n", cap_gib,
                   gp_quoted(fmt::format("device capacity {:.2f} GiB", cap_gib)));
  return s;
}

std::string step_breakdown_script(const PlotRun& run, const std::string& output_file, PlotFormat format) {
  struct Category {
    const char* title;
    const char* colour;
    double PlotBreakdown::* field;
  };
  static const Category kCategories[] = {
      {"forward", "#0072B2", &PlotBreakdown::forward_s},
      {"backward", "#56B4E9", &PlotBreakdown::backward_s},
      {"optimizer (GPU)", "#009E73", &PlotBreakdown::optimizer_s},
      {"other compute (bucket copies, casts)", "#999999", &PlotBreakdown::other_compute_s},
      {"exposed communication", "#D55E00", &PlotBreakdown::exposed_comm_s},
      {"offload copies (PCIe)", "#E69F00", &PlotBreakdown::exposed_offload_s},
      {"CPU optimizer", "#CC79A7", &PlotBreakdown::exposed_cpu_s},
      {"other idle", "#F0E442", &PlotBreakdown::idle_other_s},
  };
  std::vector<const Category*> used;
  for (const auto& c : kCategories)
    for (const auto& v : run.variants)
      if (v.breakdown.*c.field > 0.0) {
        used.push_back(&c);
        break;
      }
  if (used.empty())
    used.push_back(&kCategories[0]);
  std::string data;
  double y_max = 0.0;
  for (const auto& v : run.variants) {
    data += gp_quoted(axis_label(v.label));
    double total = 0.0;
    for (const auto* c : used) {
      data += fmt::format(" {:.9f}", v.breakdown.*c->field);
      total += v.breakdown.*c->field;
    }
    data += fmt::format(" {:.9f}\n", total);
    y_max = std::max(y_max, total);
  }
  std::string s = "# zerosim plot: step-time breakdown (generated; time in s)\n";
  s += terminal(format, output_file, 1000, 560);
  s += "set title " + gp_quoted((run.scenario.empty() ? std::string() : run.scenario + ": ") +
                             "where one steady-state training step's time goes") + "\n";
  s += "set xlabel \"variant\"\n";
  s += "set ylabel \"time per step (s)\"\n";
  s += fmt::format("set yrange [0:{:.9f}]\n", y_max * 1.15 + 1e-9);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
  s += "set style fill solid 0.9 border rgb \"#333333\"\n";
  s += xtics_for(run.variants);
  s += "$steps << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < used.size(); ++i)
    s += fmt::format("$steps using {}{} lc rgb \"{}\" title {}, \\\n     ", i + 2, i == 0 ? ":xtic(1)" : "",
                     used[i]->colour, gp_quoted(used[i]->title));
  s += fmt::format("$steps using 0:{0}:(sprintf(\"%.3f s\", ${0})) with labels offset 0,0.8 notitle\n",
                   used.size() + 2);
  return s;
}

std::string peak_memory_script(const PlotRun& run, const std::string& output_file, PlotFormat format) {
  std::set<std::string> present;
  double cap = 0.0;
  for (const auto& v : run.variants) {
    for (const auto& [tag, b] : v.peak_by_tag_bytes)
      if (b > 0.0)
        present.insert(tag);
    cap = std::max(cap, v.capacity_bytes);
  }
  std::vector<std::string> tags = ordered_tags(present);
  if (tags.empty())
    tags.push_back("lp_params");
  std::string data;
  double y_max = cap / kGiB;
  for (const auto& v : run.variants) {
    data += gp_quoted(axis_label(v.label));
    double total = 0.0;
    for (const auto& t : tags) {
      const auto it = v.peak_by_tag_bytes.find(t);
      const double b = it == v.peak_by_tag_bytes.end() ? 0.0 : it->second;
      data += fmt::format(" {:.6f}", b / kGiB);
      total += b;
    }
    data += fmt::format(" {:.6f} {}\n", total / kGiB, gp_quoted(v.fits ? "fits" : "OOM"));
    y_max = std::max(y_max, total / kGiB);
  }
  const std::size_t total_col = tags.size() + 2;
  std::string s = "# zerosim plot: peak memory by tag (generated; GiB = 2^30 B)\n";
  s += terminal(format, output_file, 1000, 560);
  s += "set title " + gp_quoted((run.scenario.empty() ? std::string() : run.scenario + ": ") +
                             "allocated GPU memory at the peak, by tag") + "\n";
  s += "set xlabel \"variant\"\n";
  s += "set ylabel \"peak allocated GPU memory (GiB = 2^30 B)\"\n";
  s += fmt::format("set yrange [0:{:.6f}]\n", y_max * 1.18 + 0.01);
  s += "set grid ytics lc rgb \"#dddddd\"\n";
  s += "set key outside right top vertical Left reverse noautotitle\n";
  s += "set style data histograms\nset style histogram rowstacked\nset boxwidth 0.6\n";
  s += "set style fill solid 0.9 border rgb \"#333333\"\n";
  s += xtics_for(run.variants);
  if (cap > 0.0) {
    s += fmt::format("set arrow 1 from graph 0, first {0:.6f} to graph 1, first {0:.6f} nohead dt 2 lw 2 "
                     "lc rgb \"black\" front\n",
                     cap / kGiB);
  }
  s += "$peak << EOD\n" + data + "EOD\n";
  s += "plot ";
  for (std::size_t i = 0; i < tags.size(); ++i)
    s += fmt::format("$peak using {}{} lc rgb \"{}\" title {}, \\\n     ", i + 2, i == 0 ? ":xtic(1)" : "",
                     tag_colour(tags[i]), gp_quoted(tag_title(tags[i])));
  s += fmt::format("$peak using 0:{0}:(sprintf(\"%.2f GiB, %s\", ${0}, stringcolumn({1}))) with labels "
                   "offset 0,0.8 notitle",
                   total_col, total_col + 1);
  if (cap > 0.0)  // key entry of the capacity line drawn by arrow 1
    s += ", \\\n     NaN with lines dt 2 lw 2 lc rgb \"black\" title " +
         gp_quoted(fmt::format("device capacity {}", gib_text(cap)));
  s += "\n";
  return s;
}

} // namespace zerosim::analysis
