// Unit tests of the gnuplot script generators (analysis/plots.hpp). Inputs are hand-made rows whose GiB values are
// whole numbers (1 GiB = 2^30 B = 1073741824 B), so every expected line below is written out by hand.
#include "analysis/plots.hpp"
#include "analysis/result_json.hpp"
#include "analysis/sweep.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

using namespace zerosim;
using namespace zerosim::analysis;
using Catch::Contains;

namespace {

// kGiB: zerosim::kGiB (sim/quantity.hpp) = 2^30 = 1073741824 B.

/// rank 0: lp_params 2 GiB at t=0, fp32_master 4 GiB at t=1 s, freed at t=2 s; rank 1: one row; one host row.
std::vector<MemoryCsvRow> two_tag_rows() {
  return {{0.0, 0, "lp_params", 2 * kGiB},
          {1.0, 0, "fp32_master", 4 * kGiB},
          {1.0, 1, "lp_params", kGiB},
          {2.0, 0, "fp32_master", 0.0},
          {2.0, 0, "activations", 0.0}};
}

/// The number that follows `prefix` in `s` (the first occurrence); NaN when absent.
double number_after(const std::string& s, const std::string& prefix) {
  const auto at = s.find(prefix);
  return at == std::string::npos ? std::nan("") : std::stod(s.substr(at + prefix.size()));
}

/// The rows of a memory timeline script's `$mem` data block, each as its numbers (time, then the columns).
std::vector<std::vector<double>> mem_data(const std::string& script) {
  std::vector<std::vector<double>> out;
  const auto begin = script.find("$mem << EOD\n");
  const auto end = script.find("EOD\n", begin + 12);
  if (begin == std::string::npos || end == std::string::npos)
    return out;
  std::istringstream in(script.substr(begin + 12, end - begin - 12));
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream cells(line);
    std::vector<double> row;
    for (double x = 0; cells >> x;)
      row.push_back(x);
    out.push_back(row);
  }
  return out;
}

/// The lower and upper data columns (1-based, as gnuplot counts) of the hatched "reserved, not allocated" band of a
/// memory timeline script; {0, 0} when it has none.
std::pair<int, int> reserved_gap_columns(const std::string& script) {
  static const std::regex re(R"re(\$mem using 1:(\d+):(\d+) with filledcurves fs pattern \d+ noborder )re"
                             R"re(lc rgb "#[0-9A-Fa-f]{6}" title "reserved, not allocated:")re");
  std::smatch m;
  if (!std::regex_search(script, m, re))
    return {0, 0};
  return {std::stoi(m[1]), std::stoi(m[2])};
}

PlotVariant variant(const std::string& name, double cap_gib) {
  PlotVariant v;
  v.name = name;
  v.label = "zero.stage=" + name;
  v.capacity_bytes = cap_gib * kGiB;
  return v;
}

} // namespace

TEST_CASE("parse_memory_csv: keeps GPU rows in file order and skips host rows", "[analysis][unit]") {
  std::istringstream in(
      "time_s,rank,device,tag,bytes,total_bytes\n"
      "0.500000000,0,gpu,lp_params,2147483648,2147483648\n"
      "0.600000000,0,host,fp32_master,4096,4096\n"
      "3.250000000,1,gpu,activations,1073741824,3221225472\n");
  const auto rows = parse_memory_csv(in, "memory.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].time_s == 0.5);
  CHECK(rows[0].tag == "lp_params");
  CHECK(rows[0].bytes == 2147483648.0);
  CHECK(rows[1].rank == 1);
  CHECK(rows[0].reserved < 0); // a file written before reserved_bytes: no reserved line
  CHECK(memory_csv_ranks(rows) == std::vector<int>{0, 1});
}

TEST_CASE("parse_memory_csv: a wrong header or a short row is an error naming file and line", "[analysis][unit]") {
  std::istringstream bad_header("time,rank\n");
  REQUIRE_THROWS_WITH(parse_memory_csv(bad_header, "m.csv"), Contains("m.csv:1") && Contains("header"));
  std::istringstream short_row("time_s,rank,device,tag,bytes,total_bytes\n0.5,0,gpu\n");
  REQUIRE_THROWS_WITH(parse_memory_csv(short_row, "m.csv"), Contains("m.csv:2") && Contains("6 comma-separated"));
  std::istringstream bad_number("time_s,rank,device,tag,bytes,total_bytes\nx,0,gpu,lp_params,1,1\n");
  REQUIRE_THROWS_WITH(parse_memory_csv(bad_number, "m.csv"), Contains("m.csv:2") && Contains("malformed"));
}

TEST_CASE("memory_timeline_script: stacked step function, capacity line and labelled peak", "[analysis][unit]") {
  const auto s = memory_timeline_script(two_tag_rows(), 0, variant("2", 8.0), "demo", "out.png", PlotFormat::PNG);
  // Columns: time, lp_params, lp_params + fp32_master (cumulative GiB); activations is never non-zero -> left out.
  // Each change gives the state just before it and the state after it (a step function).
  CHECK_THAT(s, Contains("$mem << EOD\n"
                         "0.000000000 0.000000 0.000000\n"
                         "0.000000000 0.000000 0.000000\n"
                         "0.000000000 2.000000 2.000000\n"
                         "1.000000000 2.000000 2.000000\n"
                         "1.000000000 2.000000 6.000000\n"
                         "2.000000000 2.000000 6.000000\n"
                         "2.000000000 2.000000 2.000000\n"
                         "2.000000000 2.000000 2.000000\n"
                         "EOD\n"));
  CHECK_THAT(s, !Contains("activations"));
  // Peak 2 + 4 = 6 GiB first reached at t = 1 s, in the left half of [0, 2] s -> left-aligned label.
  CHECK_THAT(s, Contains("\"peak 6.00 GiB at t = 1.000 s\" at 1.000000000,6.000000 left"));
  CHECK_THAT(s, Contains("8.000000 with lines dt 2 lw 2 lc rgb \"black\" title \"device capacity 8.00 GiB\""));
  // y range: max(capacity 8, peak 6) * 1.12 + 0.01 = 8.97 GiB.
  CHECK_THAT(s, Contains("set yrange [0:8.970000]"));
  CHECK_THAT(s, Contains("set xlabel \"simulated time (s)\""));
  CHECK_THAT(s, Contains("set ylabel \"allocated GPU memory (GiB = 2^30 B)\""));
  CHECK_THAT(s, Contains("set title \"demo: zero.stage=2, rank 0: allocated GPU memory by tag\""));
  // A title too wide for the plot area was cut at both ends (trial 24: the scenario's name was lost): over 90
  // characters, it breaks after the variant's label.
  auto long_label = variant("2", 8.0);
  long_label.label = "zero={stage: 3, offload_optimizer: cpu, offload_param: cpu}";
  CHECK_THAT(memory_timeline_script(two_tag_rows(), 0, long_label, "q1-llama3b", "out.png", PlotFormat::PNG),
             Contains("set title \"q1-llama3b: zero={stage: 3, offload_optimizer: cpu, offload_param: cpu},\\nrank 0: "
                      "allocated GPU memory by tag\""));
  CHECK_THAT(s, Contains("set terminal pngcairo") && Contains("set output \"out.png\""));
  CHECK_THAT(s, Contains("$mem using 1:(0):2 with filledcurves") && Contains("$mem using 1:2:3 with filledcurves"));
  // Same data, same script (deterministic output).
  CHECK(s == memory_timeline_script(two_tag_rows(), 0, variant("2", 8.0), "demo", "out.png", PlotFormat::PNG));
  // A single run's variant label is the scenario's name: the title names it once, not "x: x".
  const auto v = variant("2", 8.0);
  CHECK_THAT(memory_timeline_script(two_tag_rows(), 0, v, v.label, "out.png", PlotFormat::PNG),
             Contains("set title \"" + v.label + ", rank 0: allocated") && !Contains(v.label + ": " + v.label));
}

TEST_CASE("memory pictures: memory.csv's reserved bytes are drawn as a line over the stacked tags",
          "[analysis][unit]") {
  // The current header carries reserved_bytes; a V1 file (no such column, above) keeps reserved < 0 and no line.
  std::istringstream in(
      "time_s,rank,device,tag,bytes,total_bytes,reserved_bytes\n"
      "0.5,0,gpu,lp_params,2147483648,2147483648,2149580800\n");
  const auto parsed = parse_memory_csv(in, "memory.csv");
  REQUIRE(parsed.size() == 1);
  CHECK(parsed[0].reserved == 2149580800.0);
  std::istringstream short_row("time_s,rank,device,tag,bytes,total_bytes,reserved_bytes\n0.5,0,gpu,x,1,1\n");
  REQUIRE_THROWS_WITH(parse_memory_csv(short_row, "m.csv"), Contains("m.csv:2") && Contains("7 comma-separated"));
  // two_tag_rows on rank 0 with reserved 2, 8 (a 4 GiB segment and 2 GiB of cache kept), 8 GiB: the last column.
  auto rows = two_tag_rows();
  rows[0].reserved = 2 * kGiB;
  rows[1].reserved = 8 * kGiB;
  rows[3].reserved = 8 * kGiB;
  rows[4].reserved = 8 * kGiB;
  const auto s = memory_timeline_script(rows, 0, variant("2", 8.0), "demo", "out.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("$mem << EOD\n"
                         "0.000000000 0.000000 0.000000 0.000000\n"
                         "0.000000000 0.000000 0.000000 0.000000\n"
                         "0.000000000 2.000000 2.000000 2.000000\n"
                         "1.000000000 2.000000 2.000000 2.000000\n"
                         "1.000000000 2.000000 6.000000 8.000000\n"
                         "2.000000000 2.000000 6.000000 8.000000\n"
                         "2.000000000 2.000000 2.000000 8.000000\n"
                         "2.000000000 2.000000 2.000000 8.000000\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("$mem using 1:4 with lines lw 1.5 lc rgb \"#000000\" title \"reserved (caching allocator)\""));
  CHECK_THAT(s, Contains("rank 0: allocated GPU memory by tag, reserved as a line"));
  // y range: max(capacity 8, reserved 8, peak 6) * 1.12 + 0.01 = 8.97 GiB; fitted: reserved 8 * 1.15 + 0.01 = 9.21.
  CHECK_THAT(s, Contains("set yrange [0:8.970000]"));
  CHECK_THAT(memory_timeline_script(rows, 0, variant("2", 80.0), "demo", "out.png", PlotFormat::PNG, YRange::Fit),
             Contains("set yrange [0:9.210000]"));
  // Reserved 6.2 GiB at the 6 GiB peak: the label goes over the line instead of through it. Fitted axis 9.21 GiB
  // over ~420 px, a text line 15.5 px = 0.3399 GiB; the label reaches 1.3 lines + 2 px = 0.486 GiB above its anchor,
  // so it is anchored at 6.2: 0.8 + 0.2 / 0.3399 = 1.39 lines over the point.
  rows[1].reserved = 6.2 * kGiB;
  CHECK_THAT(memory_timeline_script(rows, 0, variant("2", 80.0), "demo", "out.png", PlotFormat::PNG, YRange::Fit),
             Contains("point pt 7 ps 1.2 lc rgb \"black\" offset 1,1.4 boxed front"));
}

TEST_CASE("memory pictures: the gap from the allocated stack up to the reserved line is a hatched band in the key",
          "[analysis][unit]") {
  // rank 0, GiB (1 GiB = 2^30 B): each row is (time, tag, allocated bytes of the tag, reserved after it).
  //   t = 0    lp_params   2        reserved 2    allocated 2        gap 0
  //   t = 0.5  working     0.03125  reserved 2.5  allocated 2.03125  gap 0.46875 (working is under 0.5 % of the
  //                                                                   8.97 GiB axis: thin, stacked last, not drawn)
  //   t = 1    fp32_master 4        reserved 8    allocated 6.03125  gap 1.96875
  //   t = 2    fp32_master 0        reserved 8    allocated 2.03125  gap 5.96875 (the freed segment stays cached)
  //   t = 3    activations 1        reserved 8    allocated 3.03125  gap 4.96875
  //   t = 4    activations 0        reserved 3    allocated 2.03125  gap 0.96875 (cached segments released)
  // plus a rank-1 row at t = 1 that rank 0's picture ignores.
  const std::vector<MemoryCsvRow> rows{{0.0, 0, "lp_params", 2 * kGiB, 2 * kGiB},
                                       {0.5, 0, "working", 0.03125 * kGiB, 2.5 * kGiB},
                                       {1.0, 0, "fp32_master", 4 * kGiB, 8 * kGiB},
                                       {1.0, 1, "lp_params", 1 * kGiB, 1 * kGiB},
                                       {2.0, 0, "fp32_master", 0.0, 8 * kGiB},
                                       {3.0, 0, "activations", 1 * kGiB, 8 * kGiB},
                                       {4.0, 0, "activations", 0.0, 3 * kGiB}};
  const auto s = memory_timeline_script(rows, 0, variant("3", 8.0), "demo", "m.png", PlotFormat::PNG);
  INFO(s);
  // The band and its key: one entry with the hatched sample, two more lines under it, then the reserved line.
  CHECK_THAT(s, Contains(
                    "title \"reserved, not allocated:\", \\\n"
                    "     NaN with lines lc rgb \"#ffffff\" title \"  cached free blocks + blocks\", \\\n"
                    "     NaN with lines lc rgb \"#ffffff\" title \"  held for other streams\", \\\n"
                    "     $mem using 1:6 with lines lw 1.5 lc rgb \"#000000\" title \"reserved (caching allocator)\""));
  // Columns: time, lp_params, + fp32_master, + activations, + working (the allocated total), reserved.
  const auto [lower, upper] = reserved_gap_columns(s);
  CHECK(lower == 5);
  CHECK(upper == 6);
  // The band's height at each change: reserved - allocated from the input rows (the state after every row of that
  // time, the last data row of that time in the step function).
  std::map<double, double> gap_gib;
  {
    std::map<std::string, double> bytes;
    for (const auto& r : rows) {
      if (r.rank != 0)
        continue;
      bytes[r.tag] = r.bytes;
      double allocated = 0;
      for (const auto& [tag, b] : bytes)
        allocated += b;
      gap_gib[r.time_s] = (r.reserved - allocated) / kGiB;
    }
  }
  REQUIRE(gap_gib.size() == 6);
  CHECK(gap_gib.at(0.5) == 0.46875); // the hand values above
  CHECK(gap_gib.at(2.0) == 5.96875);
  const auto data = mem_data(s);
  REQUIRE(data.size() > 6);
  for (const auto& [t, gap] : gap_gib) {
    const std::vector<double>* last = nullptr;
    for (const auto& row : data)
      if (row.size() == 6 && row[0] == t)
        last = &row;
    INFO("t = " << t);
    REQUIRE(last != nullptr);
    CHECK((*last)[upper - 1] - (*last)[lower - 1] == Approx(gap).margin(2e-6)); // 6 decimals each
  }
  // Under the reserved line the peak label has a white box; a file without reserved bytes has no band and no box.
  CHECK_THAT(s, Contains("set style textbox opaque noborder") && Contains("offset 1,0.8 boxed front"));
  const auto v1 = memory_timeline_script(two_tag_rows(), 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG);
  CHECK(reserved_gap_columns(v1) == std::pair<int, int>{0, 0});
  CHECK_THAT(v1, !Contains("reserved, not allocated") && !Contains("boxed") && !Contains("textbox"));
}

TEST_CASE("memory_timeline_script: svg terminal, and a rank without rows is an error", "[analysis][unit]") {
  const auto s = memory_timeline_script(two_tag_rows(), 1, variant("3", 24.0), "", "m.svg", PlotFormat::SVG);
  CHECK_THAT(s, Contains("set terminal svg") && Contains("set output \"m.svg\""));
  CHECK_THAT(s, Contains("\"peak 1.00 GiB at t = 1.000 s\""));
  REQUIRE_THROWS_WITH(memory_timeline_script(two_tag_rows(), 7, variant("3", 24.0), "", "m.svg", PlotFormat::SVG),
                      Contains("rank 7"));
}

TEST_CASE("step_breakdown_script: stacked categories in seconds, zero categories left out", "[analysis][unit]") {
  PlotRun run;
  run.scenario = "demo";
  auto a = variant("0", 24.0);
  a.breakdown.forward_s = 0.25;
  a.breakdown.backward_s = 0.5;
  auto b = variant("2", 24.0);
  b.breakdown.forward_s = 0.25;
  b.breakdown.backward_s = 0.5;
  b.breakdown.exposed_offload_s = 0.125;
  run.variants = {a, b};
  const auto s = step_breakdown_script(run, "step.png", PlotFormat::PNG);
  // Columns: label, forward, backward, offload copies, total (0.25 + 0.5 + 0.125 = 0.875 s).
  // One compared key (zero.stage): it titles the axis, the bars carry its values.
  // Columns: ..., total, the label over the bar (its step time; "OOM" after it when the variant ran out of memory).
  CHECK_THAT(s, Contains("$steps << EOD\n"
                         "\"0\" 0.250000000 0.500000000 0.000000000 0.750000000 \"0.750 s\" 1\n"
                         "\"2\" 0.250000000 0.500000000 0.125000000 0.875000000 \"0.875 s\" 1\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("set xlabel \"zero.stage\"\n"));
  CHECK_THAT(s, Contains("title \"forward\"") && Contains("title \"offload copies (PCIe)\""));
  CHECK_THAT(s, !Contains("CPU optimizer") && !Contains("exposed communication"));
  CHECK_THAT(s, Contains("set ylabel \"time per step (s)\""));
  CHECK_THAT(s, Contains("set xtics nomirror\n")); // 2 x 7 characters of labels: no rotation
  CHECK_THAT(s, Contains("$steps using 0:5:6 with labels offset 0,0.8 notitle"));
}

TEST_CASE("step_breakdown_script: an OOM variant is marked, and a run without any step says so", "[analysis][unit]") {
  PlotRun run;
  run.scenario = "demo";
  auto past = variant("2", 24.0); // ran on past its OOM (on_oom: continue): its time is marked
  past.breakdown.forward_s = 0.5;
  past.fits = false;
  past.steps_completed = 2;
  auto none = variant("3", 24.0); // stopped at the OOM before a step (on_oom: stop): no time at all
  none.fits = false;
  none.finished = false;
  none.steps_completed = 0;
  // Stopped at its OOM in step 2 after two steps (on_oom: stop): it does not train, so its 0.75 s of steps before
  // the OOM are no bar and no time (README: step time n/a), as in the compare table and sweep.csv.
  auto late = variant("1", 24.0);
  late.breakdown.forward_s = 0.25;
  late.breakdown.exposed_comm_s = 0.5;
  late.fits = false;
  late.finished = false;
  late.steps_completed = 2;
  run.variants = {past, none, late};
  const auto s = step_breakdown_script(run, "step.png", PlotFormat::PNG);
  // Upright labels: "OOM" on a second line (gnuplot's \n), so neighbouring labels do not run into each other.
  CHECK_THAT(s, Contains("\"2\" 0.500000000 0.500000000 \"0.500 s\\nOOM\" 2\n") &&
                    Contains("\"3\" 0.000000000 0.000000000 \"no step\\nOOM\" 2\n") &&
                    Contains("\"1\" 0.000000000 0.000000000 \"n/a\\nOOM\" 2\n"));
  CHECK_THAT(s, !Contains("exposed communication")); // only the stopped variant had some: not in the key
  CHECK_THAT(s, !Contains("no variant has a step time"));
  // No variant with a step: no empty chart (newuser23 finding 11), the reason instead.
  run.variants = {none};
  CHECK_THROWS_WITH(step_breakdown_script(run, "step.png", PlotFormat::PNG),
                    Contains("step-time breakdown: no variant completed a step"));
}

TEST_CASE("memory_timeline_script: the OOM line names host memory, and 'as if larger' only past the OOM",
          "[analysis][unit]") {
  const std::vector<MemoryCsvRow> rows = {{0.0, 0, "lp_params", 1e9}, {1.0, 0, "lp_params", 0.0}};
  auto v = variant("2", 24.0);
  v.fits = false;
  v.finished = false; // on_oom: stop
  CHECK_THAT(memory_timeline_script(rows, 0, v, "demo", "m.png", PlotFormat::PNG),
             Contains("the run stopped there (simulation.on_oom: stop)") && !Contains("as if"));
  v.finished = true; // on_oom: continue
  CHECK_THAT(memory_timeline_script(rows, 0, v, "demo", "m.png", PlotFormat::PNG),
             Contains("drawn as if the card were larger (simulation.on_oom: continue)"));
  v.oom_on_host = true;
  CHECK_THAT(memory_timeline_script(rows, 0, v, "demo", "m.png", PlotFormat::PNG),
             Contains("OOM of host memory") && !Contains("exceed 24.00 GiB"));
}

TEST_CASE("peak_memory_script: GiB by tag per variant, capacity line, fits or OOM", "[analysis][unit]") {
  PlotRun run;
  auto a = variant("0", 24.0);
  a.peak_by_tag_bytes = {{"optimizer_states", 12 * kGiB}, {"lp_params", 3 * kGiB}, {"working", 0.0}};
  a.fits = true;
  auto b = variant("3", 24.0);
  b.peak_by_tag_bytes = {{"optimizer_states", 24 * kGiB}, {"ipg_bucket", 1 * kGiB}};
  b.fits = false;
  run.variants = {a, b};
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Tag order lp_params, optimizer_states, ipg_bucket (plot_tag_order); totals 15 and 25 GiB.
  CHECK_THAT(s, Contains("$peak << EOD\n"
                         "\"0\" 3.000000 12.000000 0.000000 15.000000 \"fits\" 15.000000 0.000000 0.000000\n"
                         "\"3\" 0.000000 24.000000 1.000000 25.000000 \"OOM\" 25.000000 0.000000 0.000000\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("set arrow 1 from graph 0, first 24.000000 to graph 1, first 24.000000 nohead"));
  CHECK_THAT(s, Contains("\"device capacity 24.00 GiB\""));
  CHECK_THAT(s, Contains("set ylabel \"peak allocated GPU memory (GiB = 2^30 B)\""));
  CHECK_THAT(s, !Contains("working memory"));
  CHECK_THAT(s, !Contains("1st OOM")); // no demand known: no mark (a plot without a point)
  // A GPU OOM's demand (reserved + context + the failed segment, 40 GiB here) is marked over its bar, in the last
  // column, and the axis reaches it: 40 x 1.18 + 0.01 = 47.21 GiB.
  run.variants[1].oom_gpu_demand_bytes = 40 * kGiB;
  const auto d = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  CHECK_THAT(d, Contains("\"3\" 0.000000 24.000000 1.000000 25.000000 \"OOM\" 25.000000 40.000000 0.000000\n"));
  CHECK_THAT(d, Contains("$peak using 0:($8 > 0 ? $8 : NaN) with points pt 11 ps 1.6 lc rgb \"#B00000\" title "
                         "\"1st OOM: reserved + context + request\""));
  CHECK_THAT(d, Contains("set yrange [0:47.210000]"));
}

TEST_CASE("peak_memory_script: only tags seen in some bar get a series and a key entry", "[analysis][unit]") {
  PlotRun run;
  auto a = variant("0", 24.0);
  // fp32_grads is zero in every bar; working is 0.05 GiB, under 0.5 % of the axis (24 x 1.18 + 0.01 = 28.33 GiB,
  // 0.5 % = 0.14 GiB): too thin to see. ipg_bucket is 0 here but 1 GiB in the other bar: drawn.
  a.peak_by_tag_bytes = {{"lp_params", 20 * kGiB}, {"working", 0.05 * kGiB}, {"fp32_grads", 0.0}};
  auto b = variant("3", 24.0);
  b.peak_by_tag_bytes = {{"lp_params", 10 * kGiB}, {"ipg_bucket", 1 * kGiB}};
  run.variants = {a, b};
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Columns: lp_params, ipg_bucket, then the total over every tag (20 + 0.05 = 20.05 GiB).
  CHECK_THAT(s, Contains("$peak << EOD\n"
                         "\"0\" 20.000000 0.000000 20.050000 \"fits\" 20.050000 0.000000 0.000000\n"
                         "\"3\" 10.000000 1.000000 11.000000 \"fits\" 11.000000 0.000000 0.000000\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("title \"lp params (bf16/fp16)\"") && Contains("title \"IPG bucket\""));
  CHECK_THAT(s, !Contains("fp32 grads") && !Contains("title \"working memory\""));
  CHECK_THAT(s, Contains("title \"under 0.14 GiB, not drawn: working memory\""));
}

TEST_CASE("memory_timeline_script: a tag too thin to see on the axis gets no area and no key entry of its own",
          "[analysis][unit]") {
  // working 0.01 GiB on an 8 GiB card: the axis runs to 8 x 1.12 + 0.01 = 8.97 GiB, 0.5 % = 0.04 GiB.
  const std::vector<MemoryCsvRow> rows = {{0.0, 0, "working", 0.01 * kGiB},
                                          {0.0, 0, "lp_params", 2 * kGiB},
                                          {1.0, 0, "fp32_grads", 0.0}};
  const auto s = memory_timeline_script(rows, 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG);
  // working is stacked last (on top of lp_params), its column kept so that the peak is the full 2.01 GiB.
  CHECK_THAT(s, Contains("0.000000000 0.000000 0.010000\n0.000000000 2.000000 2.010000\n"));
  CHECK_THAT(s, Contains("\"peak 2.01 GiB at t = 0.000 s\""));
  CHECK_THAT(s, Contains("$mem using 1:(0):2 with filledcurves") && !Contains("$mem using 1:2:3"));
  CHECK_THAT(s, !Contains("title \"working memory\"") && !Contains("fp32 grads"));
  CHECK_THAT(s, Contains("title \"under 0.04 GiB, not drawn: working memory\""));
  // Eight thin tags (a LoRA run's): one line of them made gnuplot drop the whole key. Lines of at most 48
  // characters, every name on one of them.
  std::vector<MemoryCsvRow> many = {{0.0, 0, "lp_params", 2 * kGiB}};
  for (const char* tag : {"fp32_master", "optimizer_states", "grad_partition", "lp_grads", "ipg_bucket", "fp32_grads",
                          "flatten_temp", "working"})
    many.push_back({0.5, 0, tag, 0.01 * kGiB});
  const auto m = memory_timeline_script(many, 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG);
  std::vector<std::string> titles;
  for (std::size_t at = 0; (at = m.find("lc rgb \"#ffffff\" title \"", at)) != std::string::npos;) {
    at += 24;
    titles.push_back(m.substr(at, m.find('"', at) - at));
  }
  REQUIRE(titles.size() >= 3);
  CHECK(titles.front().rfind("under 0.04 GiB, not drawn:", 0) == 0);
  std::string all;
  for (const auto& t : titles) {
    INFO(t);
    CHECK(t.size() <= 48);
    all += t;
  }
  for (const char* title : {"fp32 master params", "Adam m, v (fp32)", "grad partition", "lp grads", "IPG bucket",
                            "fp32 grads (step)", "flatten/cast temporaries", "working memory"})
    CHECK_THAT(all, Contains(title));
}

TEST_CASE("peak_memory_script: a label just under the capacity line sits over the line, not struck through",
          "[analysis][unit]") {
  PlotRun run;
  for (const double gib : {23.16, 22.0, 24.5}) {
    auto v = variant(std::to_string(run.variants.size()), 24.0);
    v.peak_by_tag_bytes = {{"lp_params", gib * kGiB}};
    v.fits = gib < 24.0;
    run.variants.push_back(v);
  }
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Axis top 24.5 x 1.18 + 0.01 = 28.92 GiB over ~420 px: 0.069 GiB a pixel. An upright label reaches 1.3 lines
  // (20 px) over its anchor, so a bar top less than 22 px (1.53 GiB) under the 24 GiB line would put its label on
  // the line: 23.16 GiB is anchored at the line (24), 22 GiB (2 GiB under) and 24.5 GiB (over it) at their tops.
  CHECK_THAT(s, Contains("\"0\" 23.160000 23.160000 \"fits\" 24.000000 0.000000 0.000000\n"
                         "\"1\" 22.000000 22.000000 \"fits\" 22.000000 0.000000 0.000000\n"
                         "\"2\" 24.500000 24.500000 \"OOM\" 24.500000 0.000000 0.000000\n"));
  // The label prints the total (column 3) at the anchor (column 5).
  CHECK_THAT(s, Contains("$peak using 0:5:(sprintf(\"%.2f GiB, %s\", $3, stringcolumn(4))) with labels offset 0,0.8"));
}

TEST_CASE("step_breakdown_script: a two-line OOM label is raised alone, the others stay over their bars",
          "[analysis][unit]") {
  PlotRun run;
  auto fits = variant("1", 24.0);
  fits.breakdown.forward_s = 0.25;
  auto oom = variant("0", 24.0); // ran on past its OOM (on_oom: continue)
  oom.breakdown.forward_s = 0.5;
  oom.fits = false;
  oom.steps_completed = 2;
  run.variants = {oom, fits};
  const auto s = step_breakdown_script(run, "step.png", PlotFormat::PNG);
  // Columns: label, forward, total, text, its lines.
  CHECK_THAT(s, Contains("\"0\" 0.500000000 0.500000000 \"0.500 s\\nOOM\" 2\n"
                         "\"1\" 0.250000000 0.250000000 \"0.250 s\" 1\n"));
  CHECK_THAT(s, Contains("$steps using 0:($5 == 1 ? $3 : NaN):4 with labels offset 0,0.8 notitle") &&
                    Contains("$steps using 0:($5 == 2 ? $3 : NaN):4 with labels offset 0,1.8 notitle"));
  CHECK_THAT(s, !Contains("$steps using 0:3:4"));
  // The one OOM variant alone: only the two-line label plot (a `with labels` plot without a point crashed gnuplot).
  run.variants = {oom};
  const auto alone = step_breakdown_script(run, "step.png", PlotFormat::PNG);
  CHECK_THAT(alone, Contains("$steps using 0:($5 == 2 ? $3 : NaN):4 with labels offset 0,1.8 notitle\n") &&
                        !Contains("== 1 ?"));
}

TEST_CASE("peak_memory_script: variants on cards of different sizes each get their own capacity line",
          "[analysis][unit]") {
  // newuser31 F21: a dgx-h100 (79.65 GiB) vs dgx-a100 (80.00 GiB) comparison drew one 80.00 GiB line.
  PlotRun run;
  auto h100 = variant("h100", 79.65);
  h100.peak_by_tag_bytes = {{"lp_params", 40 * kGiB}};
  auto a100 = variant("a100", 80.0);
  a100.peak_by_tag_bytes = {{"lp_params", 40 * kGiB}};
  run.variants = {h100, a100};
  const auto s = peak_memory_script(run, "p.png", PlotFormat::PNG);
  // Bar i is centred at x = i: its line runs from i - 0.45 to i + 0.45, at its own capacity; no full-width line.
  CHECK_THAT(s, Contains("set arrow 1 from first -0.45, first 79.650000 to first 0.45, first 79.650000 nohead") &&
                    Contains("set arrow 2 from first 0.55, first 80.000000 to first 1.45, first 80.000000 nohead") &&
                    !Contains("from graph 0"));
  CHECK_THAT(s, Contains("title \"device capacity of each bar (79.65, 80.00 GiB)\"") &&
                    !Contains("\"device capacity 80.00 GiB\""));
  // The axis holds the larger: 80 x 1.18 + 0.01 = 94.41 GiB.
  CHECK_THAT(s, Contains("set yrange [0:94.410000]"));
  // Fitted axis (40 x 1.18 + 0.01 = 47.21 GiB): both capacities are off it, and the title names both.
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG, YRange::Fit),
             Contains("device capacity 79.65, 80.00 GiB is above this axis") && !Contains("set arrow"));
}

TEST_CASE("memory_timeline_script: a peak just under the capacity line has its label over the line",
          "[analysis][unit]") {
  // 8 GiB card: axis top 8 x 1.12 + 0.01 = 8.97 GiB over ~420 px, a text line (15.5 px) 0.331 GiB. The label
  // (0.8 lines up, 1.3 lines high at most) would reach the line from 0.47 GiB under it.
  std::vector<MemoryCsvRow> rows = {{0.0, 0, "lp_params", 7.8 * kGiB}, {1.0, 0, "lp_params", 0.0}};
  // 0.2 GiB under the line: 0.8 + 0.2 / 0.331 = 1.4 lines up, its lower edge 0.3 lines over the line.
  CHECK_THAT(memory_timeline_script(rows, 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG),
             Contains("at 0.000000000,7.800000 left point pt 7 ps 1.2 lc rgb \"black\" offset 1,1.4 front"));
  rows[0].bytes = 7.0 * kGiB; // 1 GiB under: clear of the line
  CHECK_THAT(memory_timeline_script(rows, 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG),
             Contains("at 0.000000000,7.000000 left point pt 7 ps 1.2 lc rgb \"black\" offset 1,0.8 front"));
}

TEST_CASE("memory pictures: --y-range fit scales the axis to the data and names an off-chart capacity",
          "[analysis][unit]") {
  PlotRun run;
  for (const double gib : {8.0, 10.0}) {
    auto v = variant(std::to_string(run.variants.size()), 80.0);
    v.peak_by_tag_bytes = {{"lp_params", gib * kGiB}};
    run.variants.push_back(v);
  }
  const std::string off = "device capacity 80.00 GiB is above this axis (fitted to the data: --y-range fit)";
  // Capacity (default): 80 x 1.18 + 0.01 = 94.41 GiB, the capacity line drawn and in the key.
  const auto cap = peak_memory_script(run, "p.png", PlotFormat::PNG);
  CHECK_THAT(cap, Contains("set yrange [0:94.410000]") && Contains("set arrow 1 from graph 0, first 80.000000") &&
                      Contains("title \"device capacity 80.00 GiB\"") && !Contains(off));
  // Fit: 10 x 1.18 + 0.01 = 11.81 GiB; the line would be off the chart, so the title says where the capacity is.
  const auto fit = peak_memory_script(run, "p.png", PlotFormat::PNG, YRange::Fit);
  CHECK_THAT(fit, Contains("set yrange [0:11.810000]") && !Contains("set arrow 1") &&
                      !Contains("title \"device capacity") && Contains("by tag\\n" + off + "\"\n"));
  // A capacity within the fitted axis (11 GiB <= 11.81) is drawn as usual, the title says nothing.
  for (auto& v : run.variants)
    v.capacity_bytes = 11.0 * kGiB;
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG, YRange::Fit),
             Contains("set arrow 1 from graph 0, first 11.000000") && !Contains("is above this axis"));

  // The timeline: peak 6 GiB (two_tag_rows), 8 GiB card: 6 x 1.15 + 0.01 = 6.91 GiB, the 8 GiB line off it.
  const auto tl =
      memory_timeline_script(two_tag_rows(), 0, variant("2", 8.0), "demo", "m.png", PlotFormat::PNG, YRange::Fit);
  CHECK_THAT(tl, Contains("set yrange [0:6.910000]") && !Contains("with lines dt 2") &&
                     Contains("device capacity 8.00 GiB is above this axis (fitted to the data: --y-range fit)"));
  CHECK_THAT(memory_timeline_script(two_tag_rows(), 0, variant("2", 6.5), "demo", "m.png", PlotFormat::PNG,
                                    YRange::Fit),
             Contains("6.500000 with lines dt 2 lw 2") && !Contains("is above this axis"));
}

TEST_CASE("load_plot_run: reads summary.json variants and their memory.csv paths", "[analysis][unit]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("zerosim-plots-test-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir / "stage-2");
  RunSummary sum; // a complete summary object, as `zerosim run` writes it (summary_json)
  sum.breakdown.forward_s = 0.5;
  sum.step_time_s = 0.5;
  sum.capacity_bytes = 1024;
  sum.fits = false;
  sum.peak_bytes = 2048;
  sum.peak_by_tag[static_cast<std::size_t>(zerosim::program::MemTag::LP_PARAMS)] = 2048;
  std::ofstream(dir / "summary.json")
      << R"({"scenario":"demo","variants":[{"dir":"stage-2","label":"zero.stage=2","summary":)" << summary_json(sum)
      << "}]}";
  std::ofstream(dir / "stage-2" / "memory.csv") << "time_s,rank,device,tag,bytes,total_bytes\n";
  const PlotRun run = load_plot_run(dir.string());
  REQUIRE(run.variants.size() == 1);
  CHECK(run.scenario == "demo");
  CHECK(run.variants[0].name == "stage-2");
  CHECK(run.variants[0].label == "zero.stage=2");
  CHECK(run.variants[0].breakdown.forward_s == 0.5);
  CHECK(run.variants[0].capacity_bytes == 1024.0);
  CHECK_FALSE(run.variants[0].fits);
  CHECK(run.variants[0].peak_by_tag_bytes.at("lp_params") == 2048.0);
  CHECK(run.variants[0].memory_csv == (dir / "stage-2" / "memory.csv").string());
  REQUIRE_THROWS_WITH(load_plot_run((dir / "nope").string()), Contains("does not exist"));
  REQUIRE_THROWS_WITH(load_plot_run((dir / "stage-2").string()), Contains("neither summary.json nor result.json"));
  // A summary without its keys is rejected as `zerosim report` rejects it (summary_in_file); a file is not a run.
  std::ofstream(dir / "stage-2" / "result.json") << "{\"summary\": {\"step_time_s\": 1}}";
  REQUIRE_THROWS_WITH(load_plot_run((dir / "stage-2").string()), Contains("result.json: malformed summary"));
  REQUIRE_THROWS_WITH(load_plot_run((dir / "stage-2" / "memory.csv").string()), Contains("is not a directory"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("no_run_files_error: a folder of separate runs lists them and says what the command takes",
          "[analysis][unit]") {
  // out/ holding b (a `zerosim run` output: summary.json), a (the same), s (a `zerosim sweep` output: sweep.json),
  // v (a variant folder: result.json only), .zerosim-partial (an unfinished run's staging) and notes/ (nothing).
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("zerosim-runs-test-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  for (const char* d : {"a", "b", "s", "v", ".zerosim-partial", "notes"})
    fs::create_directories(dir / d);
  for (const char* d : {"a", "b", ".zerosim-partial"})
    std::ofstream(dir / d / "summary.json") << "{}";
  std::ofstream(dir / "s" / "sweep.json") << "{}";
  std::ofstream(dir / "v" / "result.json") << "{}";
  const std::string a = (dir / "a").string(), b = (dir / "b").string(), sw = (dir / "s").string();
  CHECK(run_folders_in(dir.string(), true) == std::vector<std::string>{a, b, sw}); // sorted
  CHECK(run_folders_in(dir.string(), false) == std::vector<std::string>{a, b});
  CHECK(no_run_files_error(dir.string(), "plot") ==
        "'" + dir.string() + "' is not one run's folder but holds 3 run folders (" + a + ", " + b + ", " + sw +
            "): `zerosim plot` takes the folder of one `zerosim run` (summary.json or result.json) or one `zerosim "
            "sweep` (sweep.json), e.g. `zerosim plot " +
            a + "`");
  CHECK(no_run_files_error(dir.string(), "report") ==
        "'" + dir.string() + "' is not one run's folder but holds 2 run folders (" + a + ", " + b +
            "): `zerosim report` takes the folder of one `zerosim run` (summary.json or result.json), e.g. `zerosim "
            "report " +
            a + "`");
  // Without separate runs, a variant folder is an unfinished run's, as before.
  for (const char* d : {"a", "b", "s"})
    fs::remove_all(dir / d);
  CHECK(run_folders_in(dir.string(), true).empty());
  CHECK_THAT(no_run_files_error(dir.string(), "plot"), Contains("no summary.json (the run did not finish)"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("step_breakdown_script: labels of mixed keys lose the key prefix and are numbered when long",
          "[analysis][unit]") {
  PlotRun run;
  for (const char* label : {"training.activation_checkpointing=false", "zero.overlap_comm=true"}) {
    PlotVariant v;
    v.name = label;
    v.label = label;
    v.breakdown.forward_s = 1.0;
    run.variants.push_back(v);
  }
  auto s = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  // Two keys: the axis stays "variant" and each bar keeps its key's last segment: "activation_checkpointing=false"
  // (30 characters). The key's longest title is "forward" (7): the plot area is 930 - (7 + 10) x 8 = 794 px, 2 bars
  // get 3 shares of 264 px, 33 characters: the labels fit.
  CHECK_THAT(s, Contains("\"activation_checkpointing=false\" 1.000000000"));
  CHECK_THAT(s, Contains("\"overlap_comm=true\" 1.000000000"));
  CHECK_THAT(s, Contains("set xlabel \"variant\"\n"));
  CHECK_THAT(s, Contains("set xtics nomirror\n"));
  CHECK_THAT(s, Contains("size 1000,560 "));
  for (int i = 0; i < 2; ++i)
    run.variants.push_back(run.variants[0]);
  // 4 bars: 5 shares of 158 px, 19 characters; 30 do not fit and there is no comma to wrap at: the bars are numbered
  // and the x label lists them, at most 80 characters a line (33 + 4 + 20, then 33 + 4 + 33), the picture 2 lines
  // (16 px each) taller so that the plot keeps its height.
  s = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("\n\"1\" 1.000000000") && Contains("\n\"4\" 1.000000000"));
  CHECK_THAT(s, Contains(
                    "set xlabel \"variant (bars numbered)\\n1: activation_checkpointing=false    2: "
                    "overlap_comm=true\\n3: activation_checkpointing=false    4: activation_checkpointing=false\"\n"));
  CHECK_THAT(s, Contains("size 1000,592 "));
  CHECK_THAT(s, !Contains("rotate by -30"));
}

TEST_CASE("peak_memory_script: long compare labels are numbered under the axis, the totals stay inside the frame",
          "[analysis][unit]") {
  // The default scenario's six variants (zero: {stage: 0} ... {stage: 3, offload_optimizer: cpu, offload_param:
  // cpu}) on a 24 GiB card: stages 0-3 need 35, 32, 32, 29 GiB (OOM), the offload variants 8 GiB.
  PlotRun run;
  run.scenario = "single-gpu-zero-stages";
  const char* labels[] = {"{stage: 0}",
                          "{stage: 1}",
                          "{stage: 2}",
                          "{stage: 3}",
                          "{stage: 2, offload_optimizer: cpu}",
                          "{stage: 3, offload_optimizer: cpu, offload_param: cpu}"};
  const double gib[] = {35, 32, 32, 29, 8, 8};
  for (int i = 0; i < 6; ++i) {
    auto v = variant(std::to_string(i), 24.0);
    v.label = std::string("zero=") + labels[i];
    v.peak_by_tag_bytes = {{"optimizer_states", gib[i] * kGiB}};
    v.fits = gib[i] < 24;
    v.breakdown.forward_s = 0.25;
    run.variants.push_back(v);
  }
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Key titles: "Adam m, v (fp32)" and "device capacity 24.00 GiB" (25 characters): the plot area is
  // 930 - (25 + 10) x 8 = 650 px, 7 shares of 93 px for 6 bars, 11 characters; "offload_optimizer: cpu," has 23.
  CHECK_THAT(s, Contains("\n\"1\" 35.000000") && Contains("\n\"6\" 8.000000"));
  CHECK_THAT(s, Contains("set xlabel \"zero (bars numbered)\\n1: {stage: 0}    2: {stage: 1}    3: {stage: 2}    4: "
                         "{stage: 3}\\n5: {stage: 2, offload_optimizer: cpu}\\n6: {stage: 3, offload_optimizer: cpu, "
                         "offload_param: cpu}\"\n"));
  CHECK_THAT(s, Contains("set xtics nomirror\n") && !Contains("rotate by -30"));
  CHECK_THAT(s, Contains("size 1000,608 ")); // 3 legend lines more than one x label line: 560 + 3 x 16 px
  // Six bars: "35.00 GiB, OOM" side by side would run into each other; "35.00 GiB" over "OOM" fits (two lines, the
  // first 1.8 lines over the bar top).
  CHECK_THAT(s, Contains("(sprintf(\"%.2f GiB\\n%s\", $3, stringcolumn(4))) with labels offset 0,1.8 notitle"));
  // The highest text's top (1.8 + 0.5 lines of 15.5 px over the 35 GiB bar) stays under the axis top in the
  // ~420 px plot area.
  double y_top = number_after(s, "set yrange [0:");
  CHECK(35.0 + 2.3 * 15.5 / 420.0 * y_top <= y_top);
  // Nine such bars: the totals stand, "35.00 GiB, OOM" (14 characters of 8 px, starting half a line over the bar):
  // the axis runs high enough for the whole text, more than the 1.4 x that the standing labels used to get.
  for (int i = 0; i < 3; ++i)
    run.variants.push_back(run.variants[0]);
  const auto crowded = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  CHECK_THAT(crowded, Contains("with labels rotate by 90 left offset 0,0.5"));
  y_top = number_after(crowded, "set yrange [0:");
  CHECK(35.0 + (0.5 * 15.5 + 14 * 8.0) / 420.0 * y_top <= y_top);
  CHECK(y_top > 1.4 * 35.0 + 0.01);
  // The step breakdown numbers the same bars the same way.
  const auto steps = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  CHECK_THAT(steps, Contains("set xlabel \"zero (bars numbered)\\n1: {stage: 0}"));
}

TEST_CASE("bar charts: a numbered bar's legend entry longer than a line is broken after its commas (newuser29 17)",
          "[analysis][unit]") {
  // newuser29's box-variants.yaml: four zero: {...} variants, the third 115 characters with its number. Centred
  // under the plot (its middle about 340 px from the left edge), a line of more than 80 characters of ~8 px reached
  // past the picture's left edge and lost its start ("tage: 3, offload_optimizer: ...").
  PlotRun run;
  for (const char* label :
       {"zero={stage: 3}", "zero={stage: 3, offload_param: {device: none}}",
        "zero={stage: 3, offload_optimizer: {device: cpu, pin_memory: false}, offload_param: {device: cpu, "
        "pin_memory: false}}",
        "zero={stage: 2, offload_param: {device: none}}"}) {
    auto v = variant("x", 24.0);
    v.label = label;
    v.peak_by_tag_bytes = {{"optimizer_states", 6 * kGiB}};
    v.breakdown.forward_s = 1.0;
    run.variants.push_back(v);
  }
  // Entry 3 by hand: "3: {stage: 3," (13) + " offload_optimizer: {device: cpu," (1 + 32) + " pin_memory: false}," (1 + 19)
  // = 66; with " offload_param: {device: cpu," (1 + 28) it would be 95 > 80: a new line, 4 spaces in, + 28 + 1 + 19
  // = 52. Entry 4 follows a broken entry: a line of its own. Entries 1 and 2 share a line (13 + 4 + 44 = 61).
  const std::string legend =
      "set xlabel \"zero (bars numbered)\\n1: {stage: 3}    2: {stage: 3, offload_param: {device: "
      "none}}\\n3: {stage: 3, offload_optimizer: {device: cpu, pin_memory: false},\\n    "
      "offload_param: {device: cpu, pin_memory: false}}\\n4: {stage: 2, offload_param: "
      "{device: none}}\"\n";
  const auto steps = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  CHECK_THAT(steps, Contains(legend));
  CHECK_THAT(peak_memory_script(run, "peak.png", PlotFormat::PNG), Contains(legend));
  // 4 legend lines more than one x label line: 560 + 4 x 16 px.
  CHECK_THAT(steps, Contains("size 1000,624 "));
  // A label with no comma to break at is cut at 80 characters: "1: " + 77 characters, then 4 spaces + the other 23.
  run.variants.resize(2);
  run.variants[0].label = "variant_" + std::string(92, 'x');
  const auto cut = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  CHECK_THAT(cut, Contains("\\n1: variant_" + std::string(69, 'x') + "\\n    " + std::string(23, 'x') + "\\n2: "));
}

TEST_CASE("bar charts: a long label with commas is wrapped onto lines when its lines fit under the bar",
          "[analysis][unit]") {
  PlotRun run;
  for (const char* label :
       {"zero={stage: 2, offload_optimizer: cpu}", "zero={stage: 3, offload_optimizer: cpu, offload_param: cpu}"}) {
    auto v = variant("x", 24.0);
    v.label = label;
    v.peak_by_tag_bytes = {{"lp_params", 3 * kGiB}};
    run.variants.push_back(v);
  }
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Key titles "lp params (bf16/fp16)", "device capacity 24.00 GiB" (25): 650 px of plot, 3 shares of 216 px for
  // 2 bars, 27 characters a line: "{stage: 2, offload_optimizer: cpu}" (34) breaks after its comma; the other
  // label needs three lines ("offload_optimizer: cpu," and "offload_param: cpu}" are 43 together).
  CHECK_THAT(s, Contains("\n\"{stage: 2,\\noffload_optimizer: cpu}\" 3.000000") &&
                    Contains("\n\"{stage: 3,\\noffload_optimizer: cpu,\\noffload_param: cpu}\" 3.000000"));
  // gnuplot leaves room for one line of tick labels: the x label moves down by the two more, the bottom margin holds
  // 3 tick lines, the x label and one line to spare; the picture grows by the two lines.
  CHECK_THAT(s, Contains("set xlabel \"zero\" offset 0,-2\nset bmargin 5\n"));
  CHECK_THAT(s, Contains("size 1000,592 "));
}

TEST_CASE("bar charts: beyond the bars' side-by-side room the totals stand vertically", "[analysis][unit]") {
  // "12.34 GiB, fits" fits side by side over 5 bars of the 1000 px chart, "12.34 GiB" over "fits" over 7, "0.123 s"
  // over 8.
  PlotRun run;
  for (int i = 0; i < 7; ++i) {
    auto v = variant(std::to_string(i), 24.0);
    v.breakdown.forward_s = 1.0;
    v.peak_by_tag_bytes = {{"lp_params", 1 * kGiB}};
    run.variants.push_back(v);
  }
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG), Contains("with labels offset 0,1.8"));
  CHECK_THAT(step_breakdown_script(run, "s.png", PlotFormat::PNG), Contains("with labels offset 0,0.8"));
  run.variants.resize(9, run.variants[0]);
  CHECK_THAT(step_breakdown_script(run, "s.png", PlotFormat::PNG), Contains("with labels rotate by 90 left"));
  run.variants.resize(8);
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG), Contains("with labels rotate by 90 left"));
  run.variants.resize(6);
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG), Contains("with labels offset 0,1.8"));
  run.variants.resize(5);
  CHECK_THAT(peak_memory_script(run, "p.png", PlotFormat::PNG), Contains("with labels offset 0,0.8"));
}

// ---- Sweep pictures (`zerosim plot SWEEP_DIR`) -------------------------------------------------------------------

namespace {

/// A completed sweep row with hand-set results.
SweepRow sweep_row(std::size_t index, std::vector<std::pair<std::string, std::string>> inputs, int gpus,
                   double tokens_per_s, double mfu) {
  SweepRow r;
  r.index = index;
  r.key = "k" + std::to_string(index);
  r.inputs = std::move(inputs);
  r.ok = true;
  r.world_size = gpus;
  r.tokens_per_s = tokens_per_s;
  r.mfu = mfu;
  r.step_time_s = 1.0;
  r.capacity_bytes = 24.0 * kGiB;
  r.fits = true;
  return r;
}

/// zero.stage {1, 3} x cluster.nodes {1, 2, 8} with one GPU per node, plus one failed point.
/// Stage 1: 1000, 1900, 6000 tokens/s (MFU 50 %, 47.5 %, 37.5 %); stage 3: 800, 1500, 5600 tokens/s, and its
/// 8-GPU point does not fit.
SweepTable scaling_table() {
  SweepTable t;
  t.scenario = "demo";
  t.axis_keys = {"zero.stage", "cluster.nodes"};
  t.points_total = 7;
  std::size_t i = 0;
  const double tok1[] = {1000, 1900, 6000};
  const double mfu1[] = {0.5, 0.475, 0.375};
  const double tok3[] = {800, 1500, 5600};
  const int nodes[] = {1, 2, 8};
  for (int k = 0; k < 3; ++k)
    t.rows.push_back(
        sweep_row(i++, {{"zero.stage", "1"}, {"cluster.nodes", std::to_string(nodes[k])}}, nodes[k], tok1[k], mfu1[k]));
  for (int k = 0; k < 3; ++k)
    t.rows.push_back(
        sweep_row(i++, {{"zero.stage", "3"}, {"cluster.nodes", std::to_string(nodes[k])}}, nodes[k], tok3[k], 0.4));
  t.rows.back().fits = false;
  SweepRow failed;
  failed.index = i;
  failed.key = "kfail";
  failed.inputs = {{"zero.stage", "3"}, {"cluster.nodes", "16"}};
  failed.error = "boom";
  t.rows.push_back(failed);
  return t;
}

/// zero.stage {2, 3} x training.micro_batch {1, 2, 4} on one 24 GiB GPU: peak allocated 10, 20, 40 GiB (stage 2)
/// and 8, 16, 30 GiB (stage 3); nvidia-smi 2 GiB more; micro-batch 4 does not fit with stage 2 (42 > 24 GiB) and
/// neither with stage 3 (32 > 24 GiB).
SweepTable memory_table() {
  SweepTable t;
  t.scenario = "demo";
  t.axis_keys = {"zero.stage", "training.micro_batch"};
  t.points_total = 6;
  const double alloc2[] = {10, 20, 40};
  const double alloc3[] = {8, 16, 30};
  const char* mbs[] = {"1", "2", "4"};
  std::size_t i = 0;
  for (const char* stage : {"2", "3"})
    for (int k = 0; k < 3; ++k) {
      SweepRow r = sweep_row(i++, {{"zero.stage", stage}, {"training.micro_batch", mbs[k]}}, 1, 100.0, 0.1);
      r.peak_allocated_bytes = (stage[0] == '2' ? alloc2[k] : alloc3[k]) * kGiB;
      r.nvidia_smi_bytes = r.peak_allocated_bytes + 2.0 * kGiB;
      r.fits = r.nvidia_smi_bytes <= r.capacity_bytes;
      t.rows.push_back(r);
    }
  return t;
}

} // namespace

TEST_CASE("SweepRow: the step breakdown survives JSON and is written as CSV columns", "[analysis][unit]") {
  SweepRow r = sweep_row(0, {{"zero.stage", "2"}}, 8, 8192, 0.4);
  r.breakdown.forward_s = 0.25;
  r.breakdown.backward_s = 0.5;
  r.breakdown.optimizer_s = 0.125;
  r.breakdown.exposed_comm_s = 0.0625;
  r.breakdown.exposed_offload_s = 0.03125;
  const SweepRow back = row_from_json(row_to_json(r));
  CHECK(back.breakdown.forward_s == 0.25);
  CHECK(back.breakdown.backward_s == 0.5);
  CHECK(back.breakdown.optimizer_s == 0.125);
  CHECK(back.breakdown.exposed_comm_s == 0.0625);
  CHECK(back.breakdown.exposed_offload_s == 0.03125);
  // A row written before the breakdown was recorded still parses, with a zero breakdown.
  std::string old = row_to_json(r);
  const auto from = old.find("\"breakdown\":{");
  REQUIRE(from != std::string::npos);
  old.erase(from, old.find('}', from) + 2 - from); // the flat object and the comma after it
  const SweepRow legacy = row_from_json(old);
  CHECK(legacy.breakdown.forward_s == 0.0);
  CHECK(legacy.tokens_per_s == 8192.0);
  const std::string csv = sweep_csv({"zero.stage"}, {r});
  CHECK_THAT(csv,
             Contains(
                 ",fits,oom_reason,forward_s,backward_s,optimizer_s,other_compute_s,exposed_comm_s,"
                 "exposed_offload_s,exposed_cpu_s,idle_other_s,alloc_retries,host_node_peak_gib,"
                 "exposed_host_s,comm_in_flight_s,grad_accum,train_batch_size,peak_allocated_at,"
                 "steady_peak_allocated_gib,exposed_offload_pcie_s,exposed_offload_nvme_s,overlap_comm,marginal_reason,"
                 "marginal,collective_bound\n"));
  CHECK_THAT(
      csv,
      Contains(
          ",true,,0.25,0.5,0.125,0,0.0625,0.03125,0,0,0,,0,0,,,step,,0.03125,0,,,false,false\n")); // no retries, no host memory
  // cudaMalloc retries (a marginal fit) and the node's host RAM (offload) survive JSON and end the CSV row.
  r.alloc_retries = 3;
  r.host_node_peak_bytes = 2.0 * (1ULL << 30);
  r.breakdown.exposed_host_s = 0.015625; // the host thread's exposed time
  r.breakdown.comm_busy_s = 0.1875; // collectives in flight, the last column (hidden = 0.1875 - 0.0625)
  const SweepRow back2 = row_from_json(row_to_json(r));
  CHECK(back2.alloc_retries == 3);
  CHECK(back2.host_node_peak_bytes == 2.0 * (1ULL << 30));
  CHECK(back2.breakdown.exposed_host_s == 0.015625);
  CHECK(back2.breakdown.comm_busy_s == 0.1875);
  CHECK_THAT(sweep_csv({"zero.stage"}, {r}),
             Contains(",0.03125,0,0,3,2.000,0.015625,0.1875,,,step,,0.03125,0,,,false,false\n"));
}

TEST_CASE("sweep_scaling_script: one line per stage with its ideal linear scaling from the smallest point",
          "[analysis][unit]") {
  const SweepTable t = scaling_table();
  CHECK(sweep_scaling_skip_reason(t).empty());
  const auto s = sweep_scaling_script(t, "scaling.png", PlotFormat::PNG);
  // Columns: GPUs, tokens/s, ideal tokens/s, MFU %, ideal MFU %, fits. Ideal at N GPUs = tokens/s at 1 GPU x N:
  // 2 x 1000 = 2000 and 8 x 1000 = 8000 (stage 1); 8 x 800 = 6400 (stage 3). Ideal MFU: the 1-GPU MFU, 50 %.
  CHECK_THAT(s, Contains("$scaling0 << EOD\n"
                         "1 1000.000 1000.000 50.0000 50.0000 1\n"
                         "2 1900.000 2000.000 47.5000 50.0000 1\n"
                         "8 6000.000 8000.000 37.5000 50.0000 1\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("$scaling1 << EOD\n"
                         "1 800.000 800.000 40.0000 40.0000 1\n"
                         "2 1500.000 1600.000 40.0000 40.0000 1\n"
                         "8 5600.000 6400.000 40.0000 40.0000 0\n"
                         "EOD\n"));
  CHECK_THAT(s, !Contains("$scaling2")); // the failed 16-GPU point is not drawn
  CHECK_THAT(s, Contains("title \"stage=1\"") && Contains("title \"stage=3\""));
  CHECK_THAT(s, Contains("set logscale x 2\n"));
  CHECK_THAT(s, Contains("set xtics nomirror (\"1\" 1, \"2\" 2, \"8\" 8)\n"));
  CHECK_THAT(s, Contains("set multiplot title"));
  // A line joins the points that fit only; stage 3's 8-GPU point, which does not, is an open marker of its series'
  // shape (open circle, pt 6) and colour (series 1: #D55E00), without a line.
  CHECK_THAT(s, Contains("$scaling1 using 1:($6 == 1 ? $2 : NaN) with linespoints lw 2 pt 7 lc rgb \"#D55E00\""));
  CHECK_THAT(s, Contains("$scaling1 using 1:($6 == 0 ? $2 : NaN) with points pt 6 ps 1.5 lw 1.5 lc rgb \"#D55E00\""));
  CHECK_THAT(s, Contains("$scaling1 using 1:($6 == 1 ? $4 : NaN) with linespoints"));
  CHECK_THAT(s, Contains("title \"open marker, no line: does not fit (OOM)\""));
  CHECK_THAT(s, !Contains("using 1:2 with linespoints") && !Contains("using 1:4 with linespoints"));
  // MFU panel: y up to 1.3 x the largest MFU (50 %) = 65 %.
  CHECK_THAT(s, Contains("set yrange [0:65.0001]"));
  CHECK(s == sweep_scaling_script(t, "scaling.png", PlotFormat::PNG)); // deterministic
}

TEST_CASE("sweep_scaling_script: an axis zipped with the GPU count gives one line, not one per value",
          "[analysis][unit]") {
  SweepTable t;
  t.scenario = "zip";
  t.axis_keys = {"cluster.nodes", "training.grad_accum"};
  t.points_total = 3;
  // GA 8, 4, 2 with 1, 2, 4 nodes of 8 GPUs: the global batch stays the same; GA is fixed by the GPU count.
  t.rows = {sweep_row(0, {{"cluster.nodes", "1"}, {"training.grad_accum", "8"}}, 8, 100, 0.4),
            sweep_row(1, {{"cluster.nodes", "2"}, {"training.grad_accum", "4"}}, 16, 190, 0.38),
            sweep_row(2, {{"cluster.nodes", "4"}, {"training.grad_accum", "2"}}, 32, 360, 0.36)};
  const auto s = sweep_scaling_script(t, "scaling.svg", PlotFormat::SVG);
  CHECK_THAT(s, Contains("$scaling0 << EOD\n8 100.000 100.000 40.0000 40.0000 1\n16 190.000 200.000 38.0000 "
                         "40.0000 1\n32 360.000 400.000 36.0000 40.0000 1\nEOD\n"));
  CHECK_THAT(s, !Contains("$scaling1"));
  CHECK_THAT(s, Contains("title \"simulated\""));
  CHECK_THAT(s, Contains("set terminal svg") && Contains("set output \"scaling.svg\""));
  CHECK_THAT(s, !Contains("OOM"));
}

TEST_CASE("sweep_memory_script: capacity line at the GPU memory / 2^30, OOM points crossed", "[analysis][unit]") {
  const SweepTable t = memory_table();
  CHECK(sweep_memory_skip_reason(t).empty());
  const auto s = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  // Capacity 24 x 2^30 B / 2^30 = 24 GiB, as a dashed line across the plot and a key entry.
  CHECK_THAT(s, Contains("set arrow 1 from graph 0, first 24.000000 to graph 1, first 24.000000 nohead dt 2"));
  CHECK_THAT(s, Contains("title \"device capacity 24.00 GiB\""));
  // Columns: micro-batch, peak allocated GiB, nvidia-smi GiB, fits (nvidia-smi <= 24 GiB), height of the OOM mark
  // (here the nvidia-smi peak: it is above the 24 GiB line already), its label (no demand recorded: empty).
  CHECK_THAT(s, Contains("$memory0 << EOD\n"
                         "1 10.000000 12.000000 1 12.000000 \"\"\n"
                         "2 20.000000 22.000000 1 22.000000 \"\"\n"
                         "4 40.000000 42.000000 0 42.000000 \"\"\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("$memory1 << EOD\n"
                         "1 8.000000 10.000000 1 10.000000 \"\"\n"
                         "2 16.000000 18.000000 1 18.000000 \"\"\n"
                         "4 30.000000 32.000000 0 32.000000 \"\"\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("title \"stage=2: peak allocated\"") &&
                    Contains("title \"stage=3: nvidia-smi (reserved + CUDA context + NCCL)\""));
  CHECK_THAT(s, Contains("$memory0 using 1:($4 == 0 ? $5 : NaN) with points pt 2"));
  CHECK_THAT(s, Contains("set xtics nomirror (\"1\" 1, \"2\" 2, \"4\" 4)\n") && Contains("set logscale x 2\n"));
  // y range: the largest value (42 GiB) x 1.15 + 0.01 = 48.31 GiB (no OOM text to make room for: no demand).
  CHECK_THAT(s, Contains("set yrange [0:48.310000]"));
  CHECK_THAT(s, !Contains("set label"));
  CHECK(s == sweep_memory_script(t, "memory.png", PlotFormat::PNG)); // deterministic
}

TEST_CASE("sweep_memory_init_mark: an initialisation peak is ringed with its steady-state peak", "[analysis][unit]") {
  // memory_table(): stage 2 mb 1, 2, 4 at 10, 20, 40 GiB peak allocated; stage 3 mb 1, 2, 4 at 8, 16, 30 GiB.
  SweepTable t = memory_table();
  t.rows[0].peak_at_init = true; // stage 2 mb 1: the flatten copy's transient, 6 GiB once training runs
  t.rows[0].steady_peak_allocated_bytes = 6.0 * kGiB;
  t.rows[4].peak_at_init = true; // stage 3 mb 2: at init, and no step >= 1 began (no steady-state peak)
  t.rows[2].peak_at_init = true; // stage 2 mb 4: does not fit and stopped at its OOM: its peak is not drawn
  t.rows[2].steady_state = false;
  t.rows[2].stopped_at_oom = true;
  t.rows[2].steady_peak_allocated_bytes = 35.0 * kGiB;
  const InitPeakMark ringed = sweep_memory_init_mark(t.rows[0]);
  CHECK(ringed.at_init);
  CHECK(ringed.steady_peak_bytes == 6.0 * kGiB);
  const InitPeakMark no_steady = sweep_memory_init_mark(t.rows[4]);
  CHECK(no_steady.at_init);
  CHECK(no_steady.steady_peak_bytes == 0.0);
  const InitPeakMark stopped = sweep_memory_init_mark(t.rows[2]);
  CHECK_FALSE(stopped.at_init);
  CHECK(stopped.steady_peak_bytes == 0.0);
  CHECK_FALSE(sweep_memory_init_mark(t.rows[1]).at_init); // peak reached in a step
  const std::string s = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  // The drawn at-init points per series: micro-batch, peak allocated GiB, steady-state peak GiB (NaN: none).
  CHECK_THAT(s, Contains("$init0 << EOD\n1 10.000000 6.000000\nEOD\n"));
  CHECK_THAT(s, Contains("$init1 << EOD\n2 16.000000 NaN\nEOD\n"));
  // The words of the run pictures (peak-memory bars: "at init", "steady-state peak of an at-init bar").
  CHECK_THAT(s, Contains("\\nat init = the peak is reached at initialisation, before step 0"));
  CHECK_THAT(s, Contains("title \"at init\"") && Contains("title \"steady-state peak of an at-init point\""));
  // Without an initialisation peak, neither marks nor key entries.
  const std::string plain = sweep_memory_script(memory_table(), "memory.png", PlotFormat::PNG);
  CHECK_THAT(plain, !Contains("$init") && !Contains("at init"));
}

TEST_CASE("sweep_memory_script: an OOM point is marked on the capacity line with what the failed request needed",
          "[analysis][unit]") {
  // Two micro-batches on an 80 GiB GPU that both stop at an OOM: the peaks reached before the failure (25 GiB
  // allocated, 27 GiB nvidia-smi) are below the capacity because the failed request is not counted.
  SweepTable t;
  t.scenario = "llama";
  t.axis_keys = {"training.micro_batch"};
  t.points_total = 2;
  for (std::size_t i = 0; i < 2; ++i) {
    SweepRow r = sweep_row(i, {{"training.micro_batch", i == 0 ? "64" : "128"}}, 8, 0.0, 0.0);
    r.capacity_bytes = 80.0 * kGiB;
    r.peak_allocated_bytes = 25.0 * kGiB;
    r.nvidia_smi_bytes = 27.0 * kGiB;
    r.fits = false;
    r.oom_reason = "rank 0 out of GPU memory";
    t.rows.push_back(r);
  }
  // Both marks sit on the 80 GiB capacity line, not at the 27 GiB reached. Point 0 carries the demand: 27 GiB
  // reserved + context + NCCL, plus a 60 GiB segment = 87 GiB, written next to its mark. Point 1 comes from an older
  // zerosim without it: no label.
  t.rows[0].oom_gpu_demand_bytes = 87.0 * kGiB;
  const auto s = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("$memory0 << EOD\n"
                         "64 25.000000 27.000000 0 80.000000 \"1st OOM at 87.00 GiB\"\n"
                         "128 25.000000 27.000000 0 80.000000 \"\"\n"
                         "EOD\n"));
  // The text stands inside the frame: anchored at its top (graph 1), one line down, left-aligned at the smallest
  // micro-batch so that it does not stick out on the left; in the series' colour.
  CHECK_THAT(s, Contains("set label 1 \"1st OOM at 87.00 GiB\" at first 64, graph 1 left offset 0,-1.0 font \",9\" "
                         "tc rgb \"#0072B2\" front\n"));
  CHECK_THAT(s, !Contains("set label 2 ") && !Contains("with labels"));
  // y range: the largest value, the 80 GiB capacity, x 1.15 + 0.01 = 92.01 GiB (one text line needs less room).
  CHECK_THAT(s, Contains("set yrange [0:92.010000]"));
  // The key is under the frame, not over the capacity line.
  CHECK_THAT(s, Contains("set key below") && !Contains("set key inside"));
  // Every completed point stopped at an OOM before a step: the breakdown is skipped saying so.
  CHECK_THAT(sweep_breakdown_skip_reason(t), Contains("every point ran out of memory") && !Contains("older zerosim"));
  // The demand survives the sweep JSON; a row without the key reads as 0.
  CHECK(row_from_json(row_to_json(t.rows[0])).oom_gpu_demand_bytes == Approx(87.0 * kGiB));
  // A demand just over the 80 GiB card is not printed as the capacity ("80.0 GiB" read as equal): two decimals,
  // more while it would round to 80.00, and "> 80.00 GiB" when even four do not tell it apart.
  t.rows[0].oom_gpu_demand_bytes = 80.07 * kGiB;
  t.rows[1].oom_gpu_demand_bytes = 80.004 * kGiB;
  CHECK_THAT(sweep_memory_script(t, "memory.png", PlotFormat::PNG),
             Contains("\"1st OOM at 80.07 GiB\"\n") && Contains("\"1st OOM at 80.004 GiB\"\n"));
  t.rows[0].oom_gpu_demand_bytes = 80.00001 * kGiB;
  CHECK_THAT(sweep_memory_script(t, "memory.png", PlotFormat::PNG), Contains("\"1st OOM at > 80.00 GiB\"\n"));
}

TEST_CASE("sweep_memory_script: OOM labels of different series at one micro-batch do not print over each other",
          "[analysis][unit]") {
  // Stages 1, 2 and 3 fit at micro-batch 4 and run out of memory at 8: all marks sit at (8, capacity). Their texts
  // form one block over micro-batch 8, one line per distinct demand, under each other from the top of the frame.
  SweepTable t;
  t.scenario = "llama";
  t.axis_keys = {"zero.stage", "training.micro_batch"};
  t.points_total = 6;
  std::size_t index = 0;
  for (const char* stage : {"1", "2", "3"})
    for (const char* mb : {"4", "8"}) {
      SweepRow r = sweep_row(index++, {{"zero.stage", stage}, {"training.micro_batch", mb}}, 8, 1.0, 1000.0);
      r.capacity_bytes = 80.0 * kGiB;
      r.peak_allocated_bytes = 70.0 * kGiB;
      r.nvidia_smi_bytes = 75.0 * kGiB;
      r.fits = std::string(mb) == "4";
      // Stages 1 and 2 need the same 81 GiB at their first failed request, stage 3 needs 90 GiB.
      r.oom_gpu_demand_bytes = r.fits ? 0.0 : (std::string(stage) == "3" ? 90.0 : 81.0) * kGiB;
      t.rows.push_back(r);
    }
  const auto s = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  // The shared demand is one line (black: two series), stage 3's the next line down in its colour (series 2:
  // #009E73); right-aligned at the largest micro-batch so that they stay inside the frame.
  CHECK_THAT(s, Contains("set label 1 \"1st OOM at 81.00 GiB (2 series)\" at first 8, graph 1 right offset 0,-1.0 "
                         "font \",9\" tc rgb \"black\" front\n"));
  CHECK_THAT(s, Contains("set label 2 \"1st OOM at 90.00 GiB\" at first 8, graph 1 right offset 0,-2.0 font \",9\" "
                         "tc rgb \"#009E73\" front\n"));
  CHECK_THAT(s, !Contains("set label 3 ") && !Contains("with labels"));
  // The two lines ((2 + 0.6) x 15.5 px of the ~420 px plot area) stay above the largest value, 80 GiB: the y range
  // is at least 80 / (1 - 40.3 / 420); 80 x 1.15 is more.
  CHECK_THAT(s, Contains("set yrange [0:92.010000]"));

  // Four series with four different demands at one micro-batch: one summary line instead of four.
  t.rows.clear();
  index = 0;
  for (const char* stage : {"0", "1", "2", "3"})
    for (const char* mb : {"4", "8"}) {
      SweepRow r = sweep_row(index++, {{"zero.stage", stage}, {"training.micro_batch", mb}}, 8, 1.0, 1000.0);
      r.capacity_bytes = 80.0 * kGiB;
      r.fits = std::string(mb) == "4";
      r.oom_gpu_demand_bytes = r.fits ? 0.0 : (81.0 + std::stod(stage)) * kGiB;
      t.rows.push_back(r);
    }
  const auto four = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  CHECK_THAT(four, Contains("set label 1 \"4 series: 1st OOM at 81.00 GiB to 84.00 GiB\" at first 8, graph 1 right"));
  CHECK_THAT(four, !Contains("set label 2 "));
}

namespace {

/// Every occurrence of `prefix` in `s`, with the rest of its line.
std::vector<std::string> lines_with(const std::string& s, const std::string& prefix) {
  std::vector<std::string> out;
  for (auto at = s.find(prefix); at != std::string::npos; at = s.find(prefix, at + 1))
    out.push_back(s.substr(at, s.find('\n', at) - at));
  return out;
}

/// zero.bucket (`series` values: one series each) x training.micro_batch {1, 2} on 1 or 2 nodes of 8 GPUs (one per
/// micro-batch value); every point fits.
SweepTable many_series_table(int series) {
  SweepTable t;
  t.scenario = "many";
  t.axis_keys = {"zero.bucket", "training.micro_batch", "cluster.nodes"};
  std::size_t index = 0;
  for (int b = 0; b < series; ++b)
    for (int mb : {1, 2}) {
      SweepRow r = sweep_row(index++,
                             {{"zero.bucket", std::to_string(b)},
                              {"training.micro_batch", std::to_string(mb)},
                              {"cluster.nodes", std::to_string(mb)}},
                             8 * mb, 1000.0 * mb + b, 0.4);
      r.peak_allocated_bytes = (10.0 + b) * kGiB;
      r.nvidia_smi_bytes = (12.0 + b) * kGiB;
      r.capacity_bytes = 80.0 * kGiB;
      t.rows.push_back(r);
    }
  t.points_total = t.rows.size();
  return t;
}

} // namespace

TEST_CASE("sweep pictures: past 8 series the colours repeat with other point types, every series its own style",
          "[analysis][unit]") {
  // Ten series: the eight colours, then the first two again with squares (gnuplot point types 5 / 4) instead of
  // circles (7 / 6).
  const SweepTable t = many_series_table(10);
  const auto memory = sweep_memory_script(t, "m.png", PlotFormat::PNG);
  std::set<std::string> styles;
  for (const auto& l : lines_with(memory, "using 1:2 with linespoints")) // "... pt 7 lc rgb "#0072B2" title ..."
    styles.insert(l.substr(l.find(" pt "), l.find(" title") - l.find(" pt ")));
  CHECK(styles.size() == 10);
  CHECK_THAT(memory, Contains("$memory0 using 1:2 with linespoints lw 2 pt 7 lc rgb \"#0072B2\""));
  CHECK_THAT(memory, Contains("$memory8 using 1:2 with linespoints lw 2 pt 5 lc rgb \"#0072B2\""));
  CHECK_THAT(memory, Contains("$memory8 using 1:3 with linespoints dt 2 lw 2 pt 4 lc rgb \"#0072B2\""));
  const auto scaling = sweep_scaling_script(t, "s.png", PlotFormat::PNG);
  std::set<std::string> keyed;
  for (const auto& l : lines_with(scaling, "NaN with linespoints"))
    keyed.insert(l.substr(0, l.find(" title")));
  CHECK(keyed.size() == 10);
  CHECK_THAT(scaling, Contains("$scaling9 using 1:($6 == 1 ? $2 : NaN) with linespoints lw 2 pt 5 lc rgb \"#D55E00\""));
}

TEST_CASE("sweep_memory_script: past 4 series one key entry per series, solid and dashed said once in the title",
          "[analysis][unit]") {
  const auto few = sweep_memory_script(many_series_table(4), "m.png", PlotFormat::PNG);
  CHECK_THAT(few, Contains("title \"bucket=3: peak allocated\"") &&
                      Contains("title \"bucket=3: nvidia-smi (reserved + CUDA context + NCCL)\""));
  CHECK_THAT(few, !Contains("solid:"));
  const auto s = sweep_memory_script(many_series_table(10), "m.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("lc rgb \"#0072B2\" title \"bucket=0\", \\\n") && Contains("title \"bucket=9\""));
  CHECK_THAT(s, !Contains(": peak allocated") && !Contains("title \"bucket=9: nvidia-smi"));
  CHECK_THAT(s, Contains("set title \"many sweep: peak GPU memory vs micro-batch\\nsolid: worst rank's peak "
                         "allocated; dashed: nvidia-smi (reserved + CUDA context + NCCL), which decides OOM\"\n"));
  // Ten entries of 8 characters and the capacity's 25: (25 + 7) x 8 px per column in the 1000 px of the plot, 3
  // columns; 11 entries, 4 rows. The picture keeps its 600 px (room for 5 rows).
  CHECK_THAT(s, Contains("set key below Left reverse noautotitle maxcols 3\n"));
  CHECK_THAT(s, Contains("size 1100,616 ")); // one more title line: 16 px more
}

TEST_CASE("sweep pictures: a key that would run past 12 rows names the first series and says so in the title",
          "[analysis][unit]") {
  const SweepTable t = many_series_table(70);
  const auto memory = sweep_memory_script(t, "m.png", PlotFormat::PNG);
  // The capacity entry is the longest (25 characters): (25 + 7) x 8 px columns, 3 in the 1000 px of the plot
  // (36 entries), so the picture widens to 1400 px: 5 columns, 60 entries, the capacity's and 59 series.
  CHECK_THAT(memory, Contains("set terminal pngcairo size 1400,"));
  CHECK_THAT(memory, Contains("\\n70 series: the key names the first 59; sweep fewer axes (or fix some with --set) "
                              "for a readable picture\"\n"));
  CHECK(lines_with(memory, "title \"bucket=").size() == 59);
  CHECK_THAT(memory, Contains("$memory69 using 1:2 with linespoints lw 2 pt 9 lc rgb \"#56B4E9\" notitle"));
  CHECK_THAT(memory, Contains("maxcols 5\n"));
  // 12 rows and 3 title lines: 520 + 16 x (12 + 2) px.
  CHECK_THAT(memory, Contains("size 1400,744 "));
  const auto scaling = sweep_scaling_script(t, "s.png", PlotFormat::PNG);
  // Scaling: (9 + 7) x 8 px columns in 1170 px: 9 columns of 12 rows hold all 70.
  CHECK_THAT(scaling, !Contains("the key names"));
  CHECK(lines_with(scaling, "NaN with linespoints").size() == 70);
  CHECK_THAT(scaling, Contains("maxcols 9\n"));
}

TEST_CASE("sweep_scaling_script: the panels sit between the title and one shared key, tall enough for their y labels",
          "[analysis][unit]") {
  const SweepTable t = many_series_table(18);
  const auto s = sweep_scaling_script(t, "s.png", PlotFormat::PNG);
  const double height = number_after(s, "set terminal pngcairo size 1300,");
  const double top = number_after(s, "set tmargin at screen ");
  const double bottom = number_after(s, "set bmargin at screen ");
  REQUIRE(height > 0.0);
  // Two title lines (15.5 px each, gnuplot's line at 10 pt) above the panels' frame.
  CHECK((1.0 - top) * height >= 2 * 15.5);
  // The y labels are centred on the panels and longer than neither: "tokens/s (global batch tokens / step time)",
  // 42 characters of 8 px.
  CHECK((top - bottom) * height >= 42 * 8.0);
  // One key, in a frameless plot of its own under both panels, spanning them: 18 entries.
  CHECK(lines_with(s, "set key ").size() == 2); // "set key off" for the panels, then the key's
  CHECK_THAT(s, Contains("set key off\n"));
  const auto key_at = s.find("# the key of both panels");
  REQUIRE(key_at != std::string::npos);
  const std::string key = s.substr(key_at);
  CHECK(number_after(key, "set tmargin at screen ") <= bottom);
  CHECK_THAT(key, Contains("set lmargin at screen 0.075\nset rmargin at screen 0.975\n"));
  CHECK(lines_with(key, "NaN with linespoints").size() == 18);
  CHECK(lines_with(s, "\" title \"").size() == 18); // the panels' lines are not in the key again
  CHECK_THAT(s, Contains("\\ndashed: each line's ideal linear scaling from its smallest point"));
}

TEST_CASE("sweep_memory_script: OOM texts of neighbouring micro-batches that would touch go on alternate lines",
          "[analysis][unit]") {
  // Micro-batches 1 to 64, all out of memory with five series needing 81, 82, 83, 81, 82 GiB: three lines per
  // micro-batch. 7 values over the ~1000 px of the plot are 154 px apart; "1st OOM at 81.00 GiB (2 series)" is 30
  // characters of 7.2 px = 216 px: the blocks of micro-batches 2, 8 and 32 go under the others.
  SweepTable t;
  t.scenario = "llama";
  t.axis_keys = {"zero.stage", "training.micro_batch"};
  std::size_t index = 0;
  for (int stage = 0; stage < 5; ++stage)
    for (int mb = 1; mb <= 64; mb *= 2) {
      SweepRow r =
          sweep_row(index++, {{"zero.stage", std::to_string(stage)}, {"training.micro_batch", std::to_string(mb)}}, 8,
                    1.0, 1000.0);
      r.capacity_bytes = 80.0 * kGiB;
      r.peak_allocated_bytes = 70.0 * kGiB;
      r.nvidia_smi_bytes = 75.0 * kGiB;
      r.fits = false;
      r.oom_gpu_demand_bytes = (81.0 + stage % 3) * kGiB;
      t.rows.push_back(r);
    }
  t.points_total = t.rows.size();
  const auto s = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("set label 1 \"1st OOM at 81.00 GiB (2 series)\" at first 1, graph 1 left offset 0,-1.0"));
  CHECK_THAT(s, Contains("set label 3 \"1st OOM at 83.00 GiB\" at first 1, graph 1 left offset 0,-3.0 font \",9\" "
                         "tc rgb \"#009E73\""));
  CHECK_THAT(s, Contains("set label 4 \"1st OOM at 81.00 GiB (2 series)\" at first 2, graph 1 center offset 0,-4.0"));
  CHECK_THAT(s, Contains("set label 7 \"1st OOM at 81.00 GiB (2 series)\" at first 4, graph 1 center offset 0,-1.0"));
  CHECK_THAT(s, Contains("set label 19 \"1st OOM at 81.00 GiB (2 series)\" at first 64, graph 1 right offset 0,-1.0"));
  CHECK_THAT(s, !Contains("set label 22 "));
  // Six text lines (and half a line) of 15.5 px, under the top of the ~424 px plot area, stay above the largest
  // value (the 80 GiB capacity): the y range grows past the usual 1.15 x.
  const double y_top = number_after(s, "set yrange [0:");
  CHECK(80.0 <= y_top * (1.0 - 6.5 * 15.5 / 424.0));
}

TEST_CASE("sweep_breakdown_script: over narrow bars the step times stand, and past one text line per bar are thinned",
          "[analysis][unit]") {
  auto table = [](int points) {
    SweepTable t;
    t.scenario = "wide";
    t.axis_keys = {"zero.bucket"};
    for (int i = 0; i < points; ++i) {
      SweepRow r = sweep_row(static_cast<std::size_t>(i), {{"zero.bucket", std::to_string(i)}}, 8, 1000.0, 0.4);
      r.breakdown.forward_s = 1.0;
      r.fits = i % 2 == 0;
      t.rows.push_back(r);
    }
    t.points_total = t.rows.size();
    return t;
  };
  // 16 bars of (1180 - 150) / 16 = 64 px: "1 s" side by side, "OOM" over it, as before.
  const auto few = sweep_breakdown_script(table(16), "b.png", PlotFormat::PNG);
  CHECK_THAT(few, Contains("with labels offset 0,0.8 notitle") && Contains(":(\"OOM\") with labels offset 0,1.9"));
  CHECK_THAT(few, !Contains("rotate by 90 left"));
  // 72 bars of 2250 / 72 = 31 px: standing, "OOM" after the time of the bars that do not fit, in red.
  const auto many = sweep_breakdown_script(table(72), "b.png", PlotFormat::PNG);
  CHECK_THAT(many, Contains("? NaN : $3):(sprintf(\"%.3g s\", $3)) with labels rotate by 90 left offset 0,0.5"));
  CHECK_THAT(many, Contains(":($3 > 0 ? sprintf(\"%.3g s OOM\", $3) : \"OOM\") with labels rotate by 90 left offset "
                            "0,0.5 tc rgb \"#B00000\""));
  // A point stopped at its OOM before a steady-state step has no step figures (empty in sweep.csv): no bar (its
  // forward 1 s is dropped, total 0), and no "0 s" over it, only "OOM".
  auto stopped = table(16);
  stopped.rows[1].steady_state = false; // rows[1] does not fit (odd index)
  const auto st = sweep_breakdown_script(stopped, "b.png", PlotFormat::PNG);
  CHECK_THAT(st, Contains("\"bucket=1\" 0.000000000 0.000000000 \"OOM\"\n"));
  // So is a point stopped at its OOM after steady-state steps (on_oom: stop, OOM in step 2): it does not train.
  auto late = table(16);
  late.rows[1].stopped_at_oom = true;
  CHECK_THAT(sweep_breakdown_script(late, "b.png", PlotFormat::PNG),
             Contains("\"bucket=1\" 0.000000000 0.000000000 \"OOM\"\n"));
  CHECK_THAT(st, Contains(":($3 > 0 ? sprintf(\"%.3g s\", $3) : \"\") with labels offset 0,0.8 notitle"));
  CHECK_THAT(many, !Contains("with labels offset 0,0.8"));
  // The standing "1 s OOM" (7 characters + 2 of room, 72 px) needs a band over the bars: the picture grows by it
  // (640 px with labels at 30 degrees), and the y range past the 1.2 x of upright labels, so that the bars keep
  // their height: 1.05 x (478.5 + 72) / 478.5 px of plot area.
  CHECK_THAT(many, Contains("size 2400,712 "));
  CHECK(number_after(many, "set yrange [0:") == Approx(1.05 * 550.5 / 478.5).epsilon(1e-6));
  // 200 bars of 11 px: a standing line is 15.5 px, so every second bar has its time, OOM bars a red cross.
  const auto crowded = sweep_breakdown_script(table(200), "b.png", PlotFormat::PNG);
  CHECK_THAT(crowded, Contains("(int($0) % 2 == 0 ? $3 : NaN)"));
  CHECK_THAT(crowded, Contains("with points pt 2 ps 1 lw 2 lc rgb \"#B00000\" title \"does not fit (OOM)\""));
  CHECK_THAT(crowded, Contains("printed over one bar in 2"));
}

TEST_CASE("sweep_breakdown_script: one stacked bar per completed point, labelled by its axis values",
          "[analysis][unit]") {
  SweepTable t = memory_table();
  t.rows.resize(2);
  t.rows[0].breakdown.forward_s = 0.25;
  t.rows[0].breakdown.backward_s = 0.5;
  t.rows[0].breakdown.other_compute_s = 0.25;
  t.rows[0].breakdown.exposed_comm_s = 0.5;
  t.rows[1].breakdown.forward_s = 0.5;
  t.rows[1].breakdown.backward_s = 1.0;
  t.rows[1].breakdown.exposed_offload_s = 0.25;
  t.rows[1].fits = false;
  SweepRow failed;
  failed.index = 2;
  failed.inputs = {{"zero.stage", "2"}, {"training.micro_batch", "8"}};
  t.rows.push_back(failed);
  CHECK(sweep_breakdown_skip_reason(t).empty());
  const auto s = sweep_breakdown_script(t, "steps.png", PlotFormat::PNG);
  // Columns: label, compute (forward + backward + other: 0.25 + 0.5 + 0.25 = 1 s; 0.5 + 1 = 1.5 s), exposed
  // communication, offload copies, total, OOM mark; the failed point has no bar; zero categories are left out.
  CHECK_THAT(s, Contains("$steps << EOD\n"
                         "\"stage=2 micro_batch=1\" 1.000000000 0.500000000 0.000000000 1.500000000 \"\"\n"
                         "\"stage=2 micro_batch=2\" 1.500000000 0.000000000 0.250000000 1.750000000 \"OOM\"\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("title \"compute (forward, backward, other kernels)\"") &&
                    Contains("title \"exposed communication\"") && Contains("title \"offload copies (PCIe)\""));
  CHECK_THAT(s, !Contains("optimizer (GPU)") && !Contains("other idle"));
  CHECK_THAT(s, Contains("set ylabel \"time per step (s)\""));
  CHECK(s == sweep_breakdown_script(t, "steps.png", PlotFormat::PNG));
}

TEST_CASE("sweep_pictures: a picture the axes cannot give is skipped with its reason", "[analysis][unit]") {
  SweepTable t = memory_table(); // one GPU everywhere, micro-batch swept, no breakdown recorded
  const auto pics = sweep_pictures(t, "out", PlotFormat::SVG);
  REQUIRE(pics.size() == 3);
  CHECK(pics[0].name == "sweep-breakdown");
  CHECK_THAT(pics[0].skipped, Contains("no step breakdown"));
  CHECK(pics[1].name == "sweep-scaling");
  CHECK_THAT(pics[1].skipped, Contains("every completed point runs on 1 GPU"));
  CHECK(pics[1].script.empty());
  CHECK(pics[2].name == "sweep-memory");
  CHECK(pics[2].skipped.empty());
  CHECK_THAT(pics[2].script, Contains("set output \"out/sweep-memory.svg\""));
  REQUIRE_THROWS_WITH(sweep_scaling_script(t, "x.png", PlotFormat::PNG), Contains("runs on 1 GPU"));
  const SweepTable scaling = scaling_table();
  CHECK_THAT(sweep_memory_skip_reason(scaling), Contains("training.micro_batch is not swept"));
  REQUIRE_THROWS_WITH(sweep_memory_script(scaling, "x.png", PlotFormat::PNG), Contains("not swept"));
  t.axis_keys = {"zero.stage", "training.micro_batch"};
  for (auto& r : t.rows)
    r.inputs[1].second = "2";
  CHECK_THAT(sweep_memory_skip_reason(t), Contains("fewer than two micro-batch values"));
}

TEST_CASE("is_sweep_dir and load_sweep_table: a directory with sweep.json and no run summary", "[analysis][unit]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("zerosim-sweep-plots-test-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  CHECK_FALSE(is_sweep_dir(dir.string()));
  REQUIRE_THROWS_WITH(load_sweep_table(dir.string()), Contains("sweep.json"));
  std::ofstream(dir / "sweep.json") << sweep_json(scaling_table());
  CHECK(is_sweep_dir(dir.string()));
  const SweepTable t = load_sweep_table(dir.string());
  CHECK(t.rows.size() == 7);
  CHECK(t.axis_keys == std::vector<std::string>{"zero.stage", "cluster.nodes"});
  std::ofstream(dir / "summary.json") << "{}";
  CHECK_FALSE(is_sweep_dir(dir.string())); // a run directory wins
  std::ofstream(dir / "sweep.json") << "{not json";
  REQUIRE_THROWS_WITH(load_sweep_table(dir.string()), Contains("sweep.json") && Contains("malformed"));
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("sweep pictures: a point stopped at its OOM (no steady-state step) draws no line value", "[analysis][unit]") {
  // With on_oom: stop a point's memory is what was in use when it stopped, below what it needed: the memory lines
  // end at the last point that fits (NaN), the OOM mark stays; the scaling curves leave such a point out (its
  // throughput is null in sweep.json).
  SweepTable m = memory_table();
  m.rows[2].steady_state = false; // stage 2, mb 4: did not fit and stopped
  const std::string mem = sweep_memory_script(m, "memory.png", PlotFormat::PNG);
  CHECK_THAT(mem, Contains("\n4 NaN NaN 0 "));
  CHECK_THAT(mem, Contains("\n4 30.000000 32.000000 0 ")); // stage 3, mb 4 went on past its OOM: drawn
  SweepTable s = scaling_table();
  s.rows[5].steady_state = false; // stage 3 on 8 GPUs: does not fit, stopped
  s.rows[5].tokens_per_s = 0.0;
  const std::string sc = sweep_scaling_script(s, "scaling.png", PlotFormat::PNG);
  CHECK_THAT(sc, !Contains("\n8 0.000"));
  CHECK_THAT(sc, Contains("\n8 6000.000")); // stage 1 on 8 GPUs stays
}

TEST_CASE("sweep_scaling_script: a series that never fits has no ideal line, a series equal to another says so",
          "[analysis][unit]") {
  SweepTable t = scaling_table();
  t.rows.pop_back(); // the failed point
  // Stage 2: the same throughput and MFU as stage 1 at every GPU count (as ZeRO-1 and -2 at one GA step).
  for (std::size_t k = 0; k < 3; ++k) {
    SweepRow r = t.rows[k];
    r.index = t.rows.size();
    r.key = "k2-" + std::to_string(k);
    r.inputs[0].second = "2";
    t.rows.push_back(r);
  }
  // Stage 0: out of memory at every point (simulated on as if the card were larger).
  for (std::size_t k = 0; k < 3; ++k) {
    SweepRow r = t.rows[k];
    r.index = t.rows.size();
    r.key = "k0-" + std::to_string(k);
    r.inputs[0].second = "0";
    r.fits = false;
    t.rows.push_back(r);
  }
  t.points_total = t.rows.size();
  const auto s = sweep_scaling_script(t, "scaling.png", PlotFormat::PNG);
  // Series in order of appearance: stage 1, 3, 2, 0. Stage 2 is drawn over stage 1 and hides it: its key says so.
  CHECK_THAT(s, Contains("title \"stage=2 (hides stage=1: same values)\""));
  // Stage 1, hidden, has no key entry of its own: every entry is a line one can see.
  CHECK_THAT(s, !Contains("title \"stage=1\"") && Contains("title \"stage=3\"") && Contains("title \"stage=0\""));
  // Stage 0 has no point that fits: nothing to scale from, no ideal line (NaN columns); its points are open markers.
  CHECK_THAT(s, Contains("$scaling3 << EOD\n"
                         "1 1000.000 NaN 50.0000 NaN 0\n"
                         "2 1900.000 NaN 47.5000 NaN 0\n"
                         "8 6000.000 NaN 37.5000 NaN 0\n"
                         "EOD\n"));
  // Stage 3's ideal line starts at its smallest point that fits (1 GPU, 800 tokens/s): 8 x 800 at 8 GPUs.
  CHECK_THAT(s, Contains("\n8 5600.000 6400.000 40.0000 40.0000 0\n"));
  CHECK_THAT(s, Contains("$scaling3 using 1:($6 == 0 ? $2 : NaN) with points pt 6 ps 1.5 lw 1.5 lc rgb \"#CC79A7\""));
  CHECK_THAT(s, Contains("its smallest point that fits"));
}

TEST_CASE("memory_timeline_script: a busy stretch is drawn by its envelope, keeping the peak and the end state",
          "[analysis][unit]") {
  // 100 000 changes of one tag, all inside time bin 0 of a 1100 s run (bins are 1100 s / 1100 = 1 s wide):
  // i = 0..5 at t = i * 1e-6 s: 1..6 GiB; i = 6 at t = 0.6 s: 7 GiB (the peak); i >= 7 at t = 0.6 + 0.3 i / 1e5 s:
  // 1 + (i - 7) mod 5 GiB, cycling 1..5. Then one change at t = 1100 s (the last bin): the tag drops to 0.
  std::vector<MemoryCsvRow> rows;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double t = i < 6 ? i * 1e-6 : 0.6 + 0.3 * i / n * (i >= 7 ? 1 : 0);
    const double gib = i < 7 ? i + 1 : 1 + (i - 7) % 5;
    rows.push_back({t, 0, "activations", gib * kGiB});
  }
  rows.push_back({1100.0, 0, "activations", 0.0});
  const auto s = memory_timeline_script(rows, 0, variant("3", 8.0), "demo", "m.png", PlotFormat::PNG);
  // Bin 0 drawn as: the state before it (0 GiB, at its first change t = 0), its lowest total (1 GiB, first at t = 0),
  // its highest (7 GiB at t = 0.6), its end state; then bin 1099 exactly (before / after), then t_end. The end of
  // the cycle: i = 99999 -> 1 + (99992 mod 5) = 1 + 2 = 3 GiB, at t = 0.6 + 0.3 * 99999 / 1e5 = 0.899997 s.
  CHECK_THAT(s, Contains("$mem << EOD\n"
                         "0.000000000 0.000000\n"
                         "0.000000000 0.000000\n"
                         "0.000000000 1.000000\n"
                         "0.600000000 7.000000\n"
                         "0.899997000 3.000000\n"
                         "1100.000000000 3.000000\n"
                         "1100.000000000 0.000000\n"
                         "1100.000000000 0.000000\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("\"peak 7.00 GiB at t = 0.600 s\""));
  CHECK(s.size() < 4000); // the full step function would be 200 000 lines (~4 MB)

  // With reserved bytes: 20 changes at t = i ms (one busy bin of a 100 s run: bins 0.09 s wide), activations
  // (i mod 3) + 1 GiB, reserved 5 GiB except 9 GiB at i = 10 (a segment later released on a retry). The envelope
  // keeps that highest reserved point (t = 0.010 s, 2 GiB allocated) between the highest total (3 GiB at 0.002 s)
  // and the end state (i = 19: 2 GiB).
  std::vector<MemoryCsvRow> res;
  for (int i = 0; i < 20; ++i)
    res.push_back({i * 0.001, 0, "activations", (i % 3 + 1) * kGiB, (i == 10 ? 9.0 : 5.0) * kGiB});
  res.push_back({100.0, 0, "activations", 0.0, 5 * kGiB});
  CHECK_THAT(memory_timeline_script(res, 0, variant("3", 16.0), "demo", "m.png", PlotFormat::PNG),
             Contains("$mem << EOD\n"
                      "0.000000000 0.000000 0.000000\n"
                      "0.000000000 0.000000 0.000000\n"
                      "0.000000000 1.000000 5.000000\n"
                      "0.002000000 3.000000 5.000000\n"
                      "0.010000000 2.000000 9.000000\n"
                      "0.019000000 2.000000 5.000000\n"
                      "100.000000000 2.000000 5.000000\n"
                      "100.000000000 0.000000 5.000000\n"
                      "100.000000000 0.000000 5.000000\n"
                      "EOD\n"));
}

TEST_CASE("sweep_memory_script: --y-range fit runs the axis to the data and names the capacity off the chart",
          "[analysis][unit]") {
  // memory_table() on an 80 GiB card, where every point fits: the largest value is stage 2's 42 GiB nvidia-smi peak
  // at micro-batch 4, so the fitted axis ends at 42 x 1.15 + 0.01 = 48.31 GiB, under the 80 GiB line: no capacity
  // line, no key entry, and the title says where the capacity is.
  SweepTable t = memory_table();
  for (auto& r : t.rows) {
    r.capacity_bytes = 80.0 * (1ull << 30);
    r.fits = true;
  }
  const auto fit = sweep_memory_script(t, "memory.png", PlotFormat::PNG, YRange::Fit);
  CHECK_THAT(fit, Contains("set yrange [0:48.310000]"));
  CHECK_THAT(fit, !Contains("set arrow 1 ") && !Contains("title \"device capacity 80.00 GiB\""));
  CHECK_THAT(fit, Contains("device capacity 80.00 GiB is above this axis"));
  // The default runs the axis past the capacity: 80 x 1.15 + 0.01 = 92.01 GiB, with the line and its key entry.
  const auto cap = sweep_memory_script(t, "memory.png", PlotFormat::PNG);
  CHECK_THAT(cap, Contains("set yrange [0:92.010000]"));
  CHECK_THAT(cap,
             Contains("set arrow 1 from graph 0, first 80.000000") && Contains("title \"device capacity 80.00 GiB\""));
  CHECK_THAT(cap, !Contains("is above this axis"));
  // A point that stopped at its OOM far below the card (14 GiB in use when a request failed on an 80 GiB card) is
  // marked on the capacity line: the fitted axis goes up to it, and the line is drawn, not named off the chart.
  t.rows.back().fits = false;
  t.rows.back().peak_allocated_bytes = 12.0 * (1ull << 30);
  t.rows.back().nvidia_smi_bytes = 14.0 * (1ull << 30);
  const auto oom = sweep_memory_script(t, "memory.png", PlotFormat::PNG, YRange::Fit);
  CHECK_THAT(oom, Contains("set arrow 1 from graph 0, first 80.000000") && !Contains("is above this axis"));
}

TEST_CASE("peak_memory_script: a peak at initialisation says 'at init' and marks the steady-state peak",
          "[analysis][unit]") {
  PlotRun run;
  auto a = variant("1", 80.0);
  a.peak_by_tag_bytes = {{"lp_params", 12 * kGiB}, {"optimizer_states", 6 * kGiB}};
  auto b = variant("2", 80.0); // stage 2 at N_d = 64: lp params + their flatten copy before step 0 (newuser23 #2)
  b.peak_by_tag_bytes = {{"lp_params", 12 * kGiB}, {"flatten_temp", 12 * kGiB}};
  b.peak_at_init = true;
  b.steady_peak_bytes = 20 * kGiB;
  run.variants = {a, b};
  const auto s = peak_memory_script(run, "peak.png", PlotFormat::PNG);
  // Columns: lp_params, optimizer_states, flatten_temp, total, text, anchor, OOM demand, steady-state peak of an
  // at-init bar (0 for the others).
  CHECK_THAT(s, Contains("\"1\" 12.000000 6.000000 0.000000 18.000000 \"fits\" 18.000000 0.000000 0.000000\n"
                         "\"2\" 12.000000 0.000000 12.000000 24.000000 \"fits, at init\" 24.000000 0.000000 "
                         "20.000000\n"));
  // Two-line totals ("24.00 GiB" over "fits, at init"), a line across the bar at 20 GiB, and the title says what
  // "at init" is.
  CHECK_THAT(s, Contains("sprintf(\"%.2f GiB\\n%s\""));
  CHECK_THAT(s, Contains("$peak using ($0 - 0.3):($9 > 0 ? $9 : NaN):(0.6):(0) with vectors nohead lw 3 lc rgb "
                         "\"#000000\" title \"steady-state peak of an at-init bar\""));
  CHECK_THAT(s, Contains("\\nat init = the peak is reached at initialisation, before step 0\""));
  run.variants = {a};
  CHECK_THAT(peak_memory_script(run, "peak.png", PlotFormat::PNG), !Contains("at init") && !Contains("vectors"));
}

TEST_CASE("load_plot_run: peak_step -1 with a peak is an initialisation peak, unless the run stopped at an OOM first",
          "[analysis][unit]") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("zerosim-plots-init-" + std::to_string(::getpid()) + "-" +
                                   std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir / "v");
  std::ofstream(dir / "v" / "memory.csv") << "time_s,rank,device,tag,bytes,total_bytes\n";
  const auto load = [&](const RunSummary& sum) {
    std::ofstream(dir / "summary.json") << R"({"scenario":"demo","variants":[{"dir":"v","label":"v","summary":)"
                                        << summary_json(sum) << "}]}";
    return load_plot_run(dir.string()).variants.at(0);
  };
  RunSummary sum;
  sum.peak_bytes = 2e9;
  sum.peak_step = -1;
  sum.steady_peak_bytes = 1e9;
  sum.steady_peak_reached = true;
  sum.steps_completed = 2;
  sum.fits = true;
  PlotVariant v = load(sum);
  CHECK(v.peak_at_init);
  CHECK(v.steady_peak_bytes == 1e9);
  sum.peak_step = 1;
  CHECK_FALSE(load(sum).peak_at_init);
  // Stopped at an OOM at initialisation (on_oom: stop): its OOM says so; no steady-state peak either.
  sum.peak_step = -1;
  sum.oom = true;
  sum.fits = false;
  sum.finished = false;
  sum.steps_completed = 0;
  sum.steady_peak_reached = false;
  v = load(sum);
  CHECK_FALSE(v.peak_at_init);
  CHECK(v.steady_peak_bytes == 0.0);
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("memory_timeline_script: an OOM at initialisation counts the changes on x and marks the failed request",
          "[analysis][unit]") {
  // Every change at t = 0 (newuser23 finding 11): lp_params 12 GiB, fp32_master 24 GiB, then 'adam m,v' asks 48 GiB
  // of optimizer_states and fails on an 80 GiB card.
  const std::vector<MemoryCsvRow> rows = {{0.0, 0, "lp_params", 12 * kGiB}, {0.0, 0, "fp32_master", 24 * kGiB}};
  auto v = variant("0", 80.0);
  v.fits = false;
  v.finished = false;
  v.steps_completed = 0;
  v.oom_request_bytes = 48 * kGiB;
  v.oom_label = "adam m,v";
  v.oom_tag = "optimizer_states";
  v.oom_rank = 0;
  const auto s = memory_timeline_script(rows, 0, v, "demo", "m.png", PlotFormat::PNG);
  // Two changes at x = 1 and 2; the axis runs to 2 + 1.5 = 3.5 and counts them.
  CHECK_THAT(s, Contains("set xrange [0:3.500000000]\n"));
  CHECK_THAT(s, Contains("set xlabel \"initialisation (every change at simulated t = 0 s): allocations and frees in "
                         "order\"\nset xtics 1\n"));
  CHECK_THAT(s, !Contains("1e-09"));
  const auto data = mem_data(s);
  REQUIRE(data.size() >= 3);
  CHECK(data.back()[0] == 3.5);
  // The request: from the 36 GiB allocated up by 48 to 84 GiB, x from 3.5 - 1.1 = 2.4 to 3.2; the axis holds it
  // (84 x 1.12 + 0.01 = 94.09 GiB).
  CHECK_THAT(s, Contains("set object 1 rect from 2.400,36.000000 to 3.200,84.000000 fs empty border lc rgb "
                         "\"#B00000\" lw 2 dt 2 front\n"));
  CHECK_THAT(s, Contains("\"failed request: 'adam m,v', 48.00 GiB of optimizer_states\" at 3.200,84.000000 right"));
  CHECK_THAT(s, Contains("set yrange [0:94.090000]"));
  CHECK_THAT(s, Contains("\"peak 36.00 GiB\""));
  // Another rank's timeline, or a run with time passing: no request box.
  v.oom_rank = 1;
  CHECK_THAT(memory_timeline_script(rows, 0, v, "demo", "m.png", PlotFormat::PNG), !Contains("failed request"));
  const std::vector<MemoryCsvRow> timed = {{0.0, 0, "lp_params", 12 * kGiB}, {2.0, 0, "fp32_master", 24 * kGiB}};
  v.oom_rank = 0;
  const auto t = memory_timeline_script(timed, 0, v, "demo", "m.png", PlotFormat::PNG);
  CHECK_THAT(t, Contains("set xlabel \"simulated time (s)\"") && !Contains("failed request"));
}

TEST_CASE("step_breakdown_skip_reason: no variant with a step gives no chart but a reason", "[analysis][unit]") {
  PlotRun run;
  auto none = variant("0", 24.0);
  none.fits = false;
  none.finished = false;
  none.steps_completed = 0;
  run.variants = {none, none};
  CHECK(step_breakdown_skip_reason(run) ==
        "no variant completed a step (each ran out of memory first: nothing to break down)");
  CHECK_THROWS_WITH(step_breakdown_script(run, "s.png", PlotFormat::PNG),
                    Contains("step-time breakdown: no variant completed a step"));
  auto stepped = variant("1", 24.0);
  stepped.steps_completed = 2;
  stepped.breakdown.forward_s = 0.5;
  run.variants.push_back(stepped);
  CHECK(step_breakdown_skip_reason(run).empty());
}

TEST_CASE("sweep_memory_script: a series hidden under a later one with the same values is named in that one's key",
          "[analysis][unit]") {
  SweepTable t = memory_table();
  // Stage 1: the same values as stage 2 at every micro-batch, drawn first, so stage 2 hides it.
  const std::vector<SweepRow> stage2(t.rows.begin(), t.rows.begin() + 3);
  for (std::size_t k = 0; k < 3; ++k) {
    SweepRow r = stage2[k];
    r.index = 10 + k;
    r.key = "k1-" + std::to_string(k);
    r.inputs[0].second = "1";
    t.rows.insert(t.rows.begin() + static_cast<std::ptrdiff_t>(k), r);
  }
  t.points_total = t.rows.size();
  const auto s = sweep_memory_script(t, "m.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("title \"stage=2: peak allocated (hides stage=1: same values)\""));
  CHECK_THAT(s, !Contains("title \"stage=1"));
  CHECK_THAT(s, Contains("title \"stage=3: peak allocated\""));
  CHECK_THAT(s, Contains("$memory0 using 1:2 with linespoints lw 2 pt 7 lc rgb \"#0072B2\" notitle"));
}

TEST_CASE("sweep_scaling_script: a log tokens/s axis over less than two decades gets 1-2-5 tick labels",
          "[analysis][unit]") {
  SweepTable t = scaling_table();
  t.rows.pop_back();
  // 20k to 250k tokens/s (newuser23 finding 5): the axis runs a third of a decade beyond, 20000 / 2.1544 = 9283 to
  // 250000 x 2.1544 = 538609; 1-2-5 values inside: 10k, 20k, 50k, 100k, 200k, 500k.
  const double tok[] = {20000, 60000, 250000, 18000, 50000, 200000};
  for (std::size_t k = 0; k < 6; ++k)
    t.rows[k].tokens_per_s = k == 3 ? 20000 : tok[k];
  const auto s = sweep_scaling_script(t, "s.png", PlotFormat::PNG);
  CHECK_THAT(s, Contains("set ytics (\"10k\" 10000, \"20k\" 20000, \"50k\" 50000, \"100k\" 100000, \"200k\" 200000, "
                         "\"500k\" 500000)\n"));
  CHECK_THAT(s, Contains("unset logscale y\nset ytics autofreq\n")); // the MFU panel gets its own ticks
}
