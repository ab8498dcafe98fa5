// Unit tests of the gnuplot script generators (analysis/plots.hpp). Inputs are hand-made rows whose GiB values are
// whole numbers (1 GiB = 2^30 B = 1073741824 B), so every expected line below is written out by hand.
#include "analysis/plots.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace zerosim;
using namespace zerosim::analysis;
using Catch::Contains;

namespace {

constexpr double kGiB = 1073741824.0;

/// rank 0: lp_params 2 GiB at t=0, fp32_master 4 GiB at t=1 s, freed at t=2 s; rank 1: one row; one host row.
std::vector<MemoryCsvRow> two_tag_rows() {
  return {{0.0, 0, "lp_params", 2 * kGiB}, {1.0, 0, "fp32_master", 4 * kGiB}, {1.0, 1, "lp_params", kGiB},
          {2.0, 0, "fp32_master", 0.0},    {2.0, 0, "activations", 0.0}};
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
  std::istringstream in("time_s,rank,device,tag,bytes,total_bytes\n"
                        "0.500000000,0,gpu,lp_params,2147483648,2147483648\n"
                        "0.600000000,0,host,fp32_master,4096,4096\n"
                        "3.250000000,1,gpu,activations,1073741824,3221225472\n");
  const auto rows = parse_memory_csv(in, "memory.csv");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].time_s == 0.5);
  CHECK(rows[0].tag == "lp_params");
  CHECK(rows[0].bytes == 2147483648.0);
  CHECK(rows[1].rank == 1);
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
  CHECK_THAT(s, Contains("set terminal pngcairo") && Contains("set output \"out.png\""));
  CHECK_THAT(s, Contains("$mem using 1:(0):2 with filledcurves") && Contains("$mem using 1:2:3 with filledcurves"));
  // Same data, same script (deterministic output).
  CHECK(s == memory_timeline_script(two_tag_rows(), 0, variant("2", 8.0), "demo", "out.png", PlotFormat::PNG));
}

TEST_CASE("memory_timeline_script: svg terminal, and a rank without rows is an error", "[analysis][unit]") {
  const auto s = memory_timeline_script(two_tag_rows(), 1, variant("3", 24.0), "", "m.svg", PlotFormat::SVG);
  CHECK_THAT(s, Contains("set terminal svg") && Contains("set output \"m.svg\""));
  CHECK_THAT(s, Contains("\"peak 1.00 GiB at t = 1.000 s\""));
  REQUIRE_THROWS_WITH(
      memory_timeline_script(two_tag_rows(), 7, variant("3", 24.0), "", "m.svg", PlotFormat::SVG),
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
  CHECK_THAT(s, Contains("$steps << EOD\n"
                         "\"stage=0\" 0.250000000 0.500000000 0.000000000 0.750000000\n"
                         "\"stage=2\" 0.250000000 0.500000000 0.125000000 0.875000000\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("title \"forward\"") && Contains("title \"offload copies (PCIe)\""));
  CHECK_THAT(s, !Contains("CPU optimizer") && !Contains("exposed communication"));
  CHECK_THAT(s, Contains("set ylabel \"time per step (s)\""));
  CHECK_THAT(s, Contains("set xtics nomirror\n"));  // 2 x 7 characters of labels: no rotation
  CHECK_THAT(s, Contains("sprintf(\"%.3f s\", $5)"));
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
                         "\"stage=0\" 3.000000 12.000000 0.000000 15.000000 \"fits\"\n"
                         "\"stage=3\" 0.000000 24.000000 1.000000 25.000000 \"OOM\"\n"
                         "EOD\n"));
  CHECK_THAT(s, Contains("set arrow 1 from graph 0, first 24.000000 to graph 1, first 24.000000 nohead"));
  CHECK_THAT(s, Contains("\"device capacity 24.00 GiB\""));
  CHECK_THAT(s, Contains("set ylabel \"peak allocated GPU memory (GiB = 2^30 B)\""));
  CHECK_THAT(s, !Contains("working memory"));
}

TEST_CASE("load_plot_run: reads summary.json variants and their memory.csv paths", "[analysis][unit]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() /
                       ("zerosim-plots-test-" + std::to_string(::getpid()) + "-" +
                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
  fs::create_directories(dir / "stage-2");
  std::ofstream(dir / "summary.json")
      << R"({"scenario":"demo","variants":[{"dir":"stage-2","label":"zero.stage=2","summary":{)"
         R"("breakdown":{"forward_s":0.5},"step_time_s":0.5,"capacity_bytes":1024,"fits":false,)"
         R"("peak_allocated_bytes":2048,"peak_by_tag_bytes":{"lp_params":2048}}}]})";
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
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST_CASE("step_breakdown_script: long compare labels lose the key prefix and rotate", "[analysis][unit]") {
  PlotRun run;
  for (const char* value : {"false", "true"}) {
    PlotVariant v;
    v.name = std::string("activation_checkpointing-") + value;
    v.label = std::string("training.activation_checkpointing=") + value;
    v.breakdown.forward_s = 1.0;
    run.variants.push_back(v);
  }
  auto s = step_breakdown_script(run, "s.png", PlotFormat::PNG);
  // "training.activation_checkpointing=false" -> "activation_checkpointing=false" (30 characters); 2 x 30 = 60
  // characters fit side by side (limit 110): no rotation.
  CHECK_THAT(s, Contains("\"activation_checkpointing=false\" 1.000000000"));
  CHECK_THAT(s, Contains("set xtics nomirror\n"));
  for (int i = 0; i < 2; ++i)
    run.variants.push_back(run.variants[static_cast<std::size_t>(i)]);
  s = step_breakdown_script(run, "s.png", PlotFormat::PNG);  // 4 x 30 = 120 characters > 110: rotated
  CHECK_THAT(s, Contains("set xtics nomirror rotate by -30\n"));
}
