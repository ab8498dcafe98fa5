// Unit tests of the HTML report (analysis/report.hpp) on the hand-built synthetic run (tests/analysis/
// synthetic_run.hpp): escaping, page structure, and the numbers on the page against hand calculations from the
// synthetic inputs (GiB = 2^30 B).
#include <catch2/catch.hpp>

#include "analysis/chrome_trace.hpp"
#include "analysis/console.hpp"
#include "analysis/report.hpp"
#include "analysis/result_json.hpp"
#include "analysis/summary.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;
using Catch::Contains;
using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;

namespace {

ReportInput synthetic_input() {
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  ReportInput in;
  in.scenario = sc.name;
  in.run_dir = "/tmp/synthetic";
  ReportVariant v;
  v.label = "zero.stage=3";
  v.dir = ".";
  v.summary = summarize(sc, synthetic_workload(), run);
  v.timeline = timeline_from_run(run);
  in.variants.push_back(std::move(v));
  return in;
}

/// Every src= / href= value of `html` that starts with http:// or https://.
std::vector<std::string> external_refs(const std::string& html) {
  static const std::regex re(R"re((src|href)\s*=\s*["']?\s*(https?://[^"' >]*))re", std::regex::icase);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[2]);
  return out;
}

} // namespace

TEST_CASE("html_escape: replaces the five HTML metacharacters and keeps other text", "[analysis][unit]") {
  CHECK(html_escape("<a href=\"x\">Tom & Jerry's</a>") ==
        "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;");
  CHECK(html_escape("") == "");
  CHECK(html_escape("plain text 1.5 GiB") == "plain text 1.5 GiB");
  CHECK(html_escape("\xc2\xb5s") == "\xc2\xb5s"); // UTF-8 passes through unchanged
  CHECK(html_escape("&amp;") == "&amp;amp;"); // not idempotent: escaping twice is visible
}

TEST_CASE("render_report_html: the synthetic run shows the headings and the hand-set numbers", "[analysis][unit]") {
  const std::string html = render_report_html(synthetic_input());
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Contains("<title>zerosim report: synthetic</title>"));
  for (const char* id : {"summary", "breakdown", "attribution", "plots", "timeline"})
    CHECK_THAT(html, Contains(std::string("<section id=\"") + id + "\">"));
  CHECK_THAT(html, Contains("<h2>Summary</h2>"));
  // The synthetic scenario's training.grad_accum = 4: a step is an optimizer step of 4 micro-steps.
  CHECK_THAT(html, Contains("<h2>Step-time breakdown (per optimizer step, GA=4 micro-steps)</h2>"));
  CHECK_THAT(html, Contains("<h2>Peak memory attribution</h2>"));
  CHECK_THAT(html, Contains("<h2>Stream timeline of one step</h2>"));
  CHECK(html.find("id=\"oom\"") == std::string::npos); // it fits
  // Step time: mean of steps 1 and 2 = (2.0 + 2.5) / 2 = 2.25 s.
  CHECK_THAT(html, Contains("<td class=\"num\">2.2500</td>"));
  // Tokens/s: b*s*GA*N_d = 2*1024*4*8 = 65536 tokens per step / 2.25 s = 29127.1.
  CHECK_THAT(html, Contains("<td class=\"num\">29127.1</td>"));
  // GPU-hours per 1B tokens: 1e9 / 29127.1 tokens/s = 34332.3 s = 9.537 h x 8 GPUs = 76.29.
  CHECK_THAT(html, Contains("<th>GPU-hours per 1B tokens</th>") && Contains("<td class=\"num\">76.29</td>"));
  // TFLOP/s per GPU: 6e12 FLOP * GA 4 / 2.25 s = 10.67e12; MFU 10.667 / 312 = 3.42 %.
  CHECK_THAT(html, Contains("<td class=\"num\">10.7</td>"));
  CHECK_THAT(html, Contains("<td class=\"num\">3.4 %</td>"));
  // Peak: ranks 1 and 2 at 12 GiB, rank 1 reported (lowest on a tie); capacity 80 GiB.
  CHECK_THAT(html, Contains("<td class=\"num\">12.00</td>"));
  CHECK_THAT(html, Contains("<td class=\"num\">80.00</td>"));
  CHECK_THAT(html, Contains("<td class=\"fits\">fits</td>"));
  CHECK_THAT(html, Contains("Peak allocated GPU memory 12.00 GiB on rank 1 at t = 3.500000 s (step 1)"));
  CHECK_THAT(html, Contains("reached by the op <code>alloc adam</code>"));
  // Attribution: optimizer_states 8 GiB, lp_params 12 - 8 = 4 GiB, largest first.
  const auto opt = html.find("<code>optimizer_states</code></td><td class=\"num\">8.00</td>");
  const auto lp = html.find("<code>lp_params</code></td><td class=\"num\">4.00</td>");
  REQUIRE(opt != std::string::npos);
  REQUIRE(lp != std::string::npos);
  CHECK(opt < lp);
  // Breakdown, means of steps 1 and 2: forward (0.5+0.5)/2, backward (1.0+1.1)/2, optimizer 0.2, other compute
  // (grad_reduce 0.1 + 0)/2, exposed comm (0.1+0.4)/2, offload (0.05+0.1)/2, cpu (0.05+0.15)/2, host thread 0
  // (the synthetic run has none), other (0+0.05)/2.
  CHECK_THAT(html, Contains("<td class=\"num\">0.5000</td><td class=\"num\">1.0500</td><td class=\"num\">0.2000</td>"
                            "<td class=\"num\">0.0500</td><td class=\"num\">0.2500</td><td class=\"num\">0.0750</td>"
                            "<td class=\"num\">0.0000</td>"
                            "<td class=\"num\">0.1000</td><td class=\"num\">0.0000</td><td class=\"num\">0.0250</td>"
                            "<td class=\"num\">2.2500</td>"));
  // Timeline of step 1 [3, 5] s: fwd block.0 on rank 0 from 3.0 to 3.5 s, 1e9 B = 0.931 GiB, 2e12 FLOP.
  CHECK_THAT(html, Contains("<title>fwd block.0 [forward] rank 0 compute: start 0.000 ms, duration 500.000 ms, "
                            "0.931 GiB, 2e+12 FLOP</title>"));
  // The all-reduce on rank 0's comm stream 4.0 .. 4.6 s: start 1000 ms into the step, 4e9 B = 3.725 GiB.
  CHECK_THAT(html, Contains("<title>allreduce bucket 0 [grad_reduce] rank 0 comm: start 1000.000 ms, duration "
                            "600.000 ms, 3.725 GiB</title>"));
  // The page's own load marker and error sink are there, and nothing is fetched from the network.
  CHECK_THAT(html, Contains("report-loaded"));
  CHECK_THAT(html, Contains("<pre id=\"js-errors\"></pre>"));
  CHECK(external_refs(html).empty());
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
}

TEST_CASE("render_report_html: the communication table gives one step's collectives by kind against the paper",
          "[analysis][unit]") {
  ReportInput in = synthetic_input();
  // synthetic_run records no per-step traffic (as a result.json of an older zerosim): a dash, not zeros.
  CHECK_THAT(render_report_html(in), Contains("<section id=\"communication\">") &&
                                         Contains("<h2>Communication per step</h2>") &&
                                         Contains("<td colspan=\"13\">\u2014 (no optimizer step completed"));
  // Stage 0 at N_d = 8, Ψ = 1e9 (hand calculation): the bf16 gradients all-reduced once, 2Ψ B = 2 GB of payload;
  // a ring sends 2 x 7/8 of it = 3.5 GB = 1.75 x Ψ x 2 B; ZeRO paper §7: 2Ψ x 7/8 = 1.75Ψ.
  RunSummary& s = in.variants.front().summary;
  s.zero_stage = 0;
  s.world_size = 8;
  s.params = 1e9;
  s.step_traffic_step = 2;
  s.step_traffic_steady = true;
  const auto ar = static_cast<std::size_t>(program::CollectiveKind::ALL_REDUCE);
  s.step_traffic.collective_calls[ar] = 1;
  s.step_traffic.collective_bytes[ar] = 2e9;
  s.step_traffic.wire_bytes[ar] = 3.5e9;
  const std::string html = render_report_html(in);
  // Columns: variant, step, then calls / payload / wire for all-reduce, all-gather, reduce-scatter, wire in all,
  // wire in Ψ x 2 B, the paper's figure.
  CHECK_THAT(html, Contains("<tr><td>zero.stage=3</td><td class=\"num\">2</td><td class=\"num\">1</td><td "
                            "class=\"num\">2.00</td><td class=\"num\">3.50</td><td class=\"num\">0</td><td "
                            "class=\"num\">0.00</td><td class=\"num\">0.00</td><td class=\"num\">0</td><td "
                            "class=\"num\">0.00</td><td class=\"num\">0.00</td><td class=\"num\">3.50</td><td "
                            "class=\"num\">1.75Ψ</td><td>2Ψ x 7/8 = 1.75Ψ</td></tr>"));
  CHECK_THAT(html, Contains("<code>collectives_per_step</code>"));
  CHECK_THAT(html, !Contains("<th colspan=\"3\">reduce</th>"));
  // A variant with per-owner reduces (stage 1/2 before DeepSpeed 0.12.4) adds their three columns after the others:
  // two reduces of 1 GB at N_d = 8 send 7/8 of 2 GB on average = 1.75 GB.
  const auto rd = static_cast<std::size_t>(program::CollectiveKind::REDUCE);
  s.step_traffic.collective_calls[rd] = 2;
  s.step_traffic.collective_bytes[rd] = 2e9;
  s.step_traffic.wire_bytes[rd] = 1.75e9;
  const std::string with_reduce = render_report_html(in);
  CHECK_THAT(with_reduce, Contains("<th colspan=\"3\">reduce-scatter</th><th colspan=\"3\">reduce</th>"));
  CHECK_THAT(with_reduce, Contains("<td class=\"num\">2</td><td class=\"num\">2.00</td><td class=\"num\">1.75</td><td "
                                   "class=\"num\">5.25</td>"));
  // The table sits between the breakdown and the attribution.
  CHECK(html.find("id=\"breakdown\"") < html.find("id=\"communication\""));
  CHECK(html.find("id=\"communication\"") < html.find("id=\"attribution\""));
}

TEST_CASE("render_report_html: text from the run is escaped", "[analysis][unit]") {
  ReportInput in = synthetic_input();
  in.scenario = "a<b>&c";
  in.variants[0].label = "<script>alert(1)</script>";
  in.variants[0].summary.peak_attribution[0].knob = "x=\"1\" & <y>";
  in.variants[0].timeline.spans[0].name = "<img src=x.png onerror=alert(2)>";
  const std::string html = render_report_html(in);
  CHECK(html.find("<script>alert") == std::string::npos);
  CHECK_THAT(html, Contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK_THAT(html, Contains("zerosim report: a&lt;b&gt;&amp;c"));
  CHECK_THAT(html, Contains("x=&quot;1&quot; &amp; &lt;y&gt;"));
  CHECK(html.find("<img") == std::string::npos);
  CHECK_THAT(html, Contains("&lt;img src=x.png onerror=alert(2)&gt;"));
}

TEST_CASE("render_report_html: a compared run states the verdict under the summary table", "[analysis][unit]") {
  ReportInput in = synthetic_input(); // one variant: 2.25 s/step, fits in 80 GiB
  in.variants[0].label = "zero.stage=2";
  in.variants.push_back(in.variants[0]);
  in.variants[1].label = "zero.stage=0";
  in.variants[1].summary.fits = false;
  in.variants[1].summary.oom = true;
  in.variants[1].summary.step_time_s = 1.5; // faster, but it does not fit: 2.25 / 1.5 = 1.50x
  const std::string html = render_report_html(in);
  CHECK_THAT(html, Contains("<p class=\"verdict\">verdict: fits in 80.00 GiB: zero.stage=2 (2.25 s/step)<br>does "
                            "not fit: zero.stage=0<br>zero.stage=2 takes 1.50x the step time of zero.stage=0 "
                            "(1.5 s/step), which would need more GPU memory</p>"));
  CHECK(html.find("class=\"verdict\"") < html.find("<section id=\"breakdown\">"));
  CHECK(render_report_html(synthetic_input()).find("class=\"verdict\"") == std::string::npos); // one variant
}

TEST_CASE("render_report_html: an OOM run says so instead of failing", "[analysis][unit]") {
  ReportInput in = synthetic_input();
  RunSummary& s = in.variants[0].summary;
  s.oom = true;
  s.fits = false;
  s.oom_description =
      "rank 0 out of GPU memory at t=3.250000 s (step 1): 'alloc adam' needed 2.00 GiB of "
      "optimizer_states (largest: lp_params 4.00 GiB); cudaMalloc fails";
  const std::string html = render_report_html(in);
  CHECK_THAT(html, Contains("<section id=\"oom\">"));
  CHECK_THAT(html, Contains("<h2>Out of memory</h2>"));
  CHECK_THAT(html, Contains(html_escape(s.oom_description))); // whole, in the OOM section
  CHECK_THAT(html, Contains("<td class=\"oom\">OOM</td>"));
  // The table keeps the first clause only.
  CHECK_THAT(html, Contains("<td>rank 0 out of GPU memory at t=3.250000 s (step 1): &#39;alloc adam&#39; needed "
                            "2.00 GiB of optimizer_states</td>"));
  CHECK_THAT(html, !Contains("cudaMalloc retries"));
  s.alloc_retries = 4;
  s.alloc_retries_rank = 2;
  s.alloc_retry_wait_s = 0.0125;
  CHECK_THAT(render_report_html(in),
             Contains("cudaMalloc retries: 4 on rank 2 up to the OOM") && Contains("after waiting 12.50 ms in all"));
  // Simulated on past the OOM (the synthetic run finished: on_oom: continue): its 2.25 s step stays, marked "!" as
  // the console marks it, with the mark explained under the table.
  CHECK_THAT(render_report_html(in), Contains("<td class=\"num\">2.2500!</td>") &&
                                         Contains("! simulated past its OOM (simulation.on_oom: continue)"));
  CHECK_THAT(render_report_html(synthetic_input()), !Contains("2.2500!") && !Contains("simulated past its OOM"));
  // A run with a step time carries the console's best-case caveat; one without any (stopped at its OOM) does not.
  CHECK_THAT(render_report_html(synthetic_input()), Contains("Note: step times are the simulated best case"));
  // The allocated and the reserved peak on different ranks: each cell names its rank (else neither does).
  ReportInput ranks = synthetic_input();
  ranks.variants[0].summary.peak_reserved_bytes = 30 * kGiB;
  ranks.variants[0].summary.peak_rank = 0;
  ranks.variants[0].summary.peak_reserved_rank = 3;
  CHECK_THAT(render_report_html(ranks), Contains(" (rank 0)</td>") && Contains("30.00 (rank 3)</td>"));
  ranks.variants[0].summary.peak_reserved_rank = 0;
  CHECK_THAT(render_report_html(ranks), !Contains(" (rank 0)</td>"));
  // Stopped at the OOM after its 3 steps (on_oom: stop): it does not train, so no step time, rates or breakdown.
  s.finished = false;
  const std::string stopped = render_report_html(in);
  CHECK_THAT(stopped, !Contains("2.2500") && !Contains("29127.1") && !Contains("simulated best case"));
  CHECK_THAT(stopped, Contains("<td class=\"num\">&#8212;</td><td class=\"num\">&#8212;</td>"));
  CHECK_THAT(stopped, Contains("\u2014 (the run stopped at its OOM)</td></tr>"));
  // Stopped before any step completed: the breakdown has no numbers to show, not a row of zeros.
  s.steps_completed = 0;
  s.gemm_utilization = 0.99;
  const std::string none = render_report_html(in);
  CHECK_THAT(none, Contains("\u2014 (no optimizer step completed)</td></tr>"));
  // No GEMM ran either: no GEMM-shape rate (it read 99.0 % for a variant that died at initialisation).
  CHECK_THAT(none, !Contains("99.0 %"));
  CHECK_THAT(none, Contains("<td class=\"num\">&#8212;</td><td class=\"num\">&#8212;</td><td class=\"num\">"
                            "&#8212;</td><td class=\"num\">&#8212;</td><td class=\"num\">&#8212;</td>"));
}

TEST_CASE("steady_step_window: first step >= 1, else the last step, else the whole run", "[analysis][unit]") {
  const std::vector<trace::StepTiming> three{{0, 0.0, 3.0}, {1, 3.0, 5.0}, {2, 5.0, 7.5}};
  const StepWindow w = steady_step_window(three, 7.5);
  CHECK(w.step == 1);
  CHECK(w.start_s == 3.0);
  CHECK(w.end_s == 5.0);
  const StepWindow w0 = steady_step_window({{0, 0.0, 3.0}}, 4.0);
  CHECK(w0.step == 0);
  CHECK(w0.end_s == 3.0);
  const StepWindow none = steady_step_window({}, 1.25);
  CHECK(none.step == -1);
  CHECK(none.start_s == 0.0);
  CHECK(none.end_s == 1.25);
}

TEST_CASE("steady_step_window: from the first step of the steady-state mean when it is later than step 1",
          "[analysis][unit]") {
  // DeepSpeed's ThroughputTimer syncs from step 2 (start_step=2): the step time then averages steps >= 2, and the
  // report's timeline draws step 2, [5.0, 7.5] s, a step of that mean.
  const std::vector<trace::StepTiming> three{{0, 0.0, 3.0}, {1, 3.0, 5.0}, {2, 5.0, 7.5}};
  const StepWindow w = steady_step_window(three, 7.5, 2);
  CHECK(w.step == 2);
  CHECK(w.start_s == 5.0);
  CHECK(w.end_s == 7.5);
  // No step >= 2 completed: the first step >= 1 as before.
  CHECK(steady_step_window({{0, 0.0, 3.0}, {1, 3.0, 5.0}}, 5.0, 2).step == 1);
}

TEST_CASE("render_report_html: the timeline and the summary say which steps the step time averages",
          "[analysis][unit]") {
  // The synthetic scenario with the throughput timer's sync: steady window steps >= 2 (summary.cpp
  // first_steady_step), step time = step 2 alone = 7.5 - 5.0 = 2.5 s.
  auto sc = synthetic_scenario();
  sc.zero.throughput_timer_sync = true;
  trace::RunResult run = synthetic_run();
  ReportInput in;
  in.scenario = sc.name;
  ReportVariant v;
  v.label = "sync";
  v.summary = summarize(sc, synthetic_workload(), run);
  REQUIRE(v.summary.steady_first_step == 2);
  CHECK(v.summary.step_time_s == Approx(2.5));
  SECTION("the traced spans lie in step 1 only: step 1 is drawn and said to be outside the mean") {
    v.timeline = timeline_from_run(run, v.summary.steady_first_step);
    CHECK(v.timeline.step == 1);
    in.variants.push_back(v);
    const std::string html = render_report_html(in);
    CHECK_THAT(html, Contains("Step time: mean of steps &#8805; 2 (step 0 is warm-up; step 1 runs without the "
                              "throughput timer&#39;s sync)"));
    CHECK_THAT(html, Contains("<p>Step 1 (not in the step-time mean of steps &#8805; 2: the trace holds none of "
                              "them), t = 3.000000 .. 5.000000 s"));
  }
  SECTION("a span in step 2: step 2 is drawn and said to be in the mean") {
    run.spans.push_back({0, 0, 5.5, 6.0, 1, program::Phase::FORWARD, 0, 1e9, 2e12});
    v.timeline = timeline_from_run(run, v.summary.steady_first_step);
    CHECK(v.timeline.step == 2);
    in.variants.push_back(v);
    CHECK_THAT(render_report_html(in),
               Contains("<p>Step 2 (the first step of the step-time mean, steps &#8805; 2), t = 5.000000 .. "
                        "7.500000 s"));
  }
}

TEST_CASE("timeline_svg: ops of a lane closer than a pixel share a rectangle, wider ones keep their own",
          "[analysis][unit]") {
  // Window [0, 10] s over kReportTimelinePlotPx = 910 px: 91 px per s. 50 ops of 10 ms (0.91 px each), forward and
  // backward in turn, then one optimizer op of 1 s (91 px) after a gap. By hand: op0 (forward, 0.91 px: narrower
  // than a pixel) takes op1 (1.82 px, forward and backward 10 ms each: coloured forward, the first seen on a tie);
  // op2 is narrow and forward: it joins; op3 (backward) starts the next rectangle, which op4 and op5 (backward, the
  // rectangle's phase) join. So rectangles of 3 ops, alternately forward and backward: 16 of them for ops 0-47 and
  // one of op48-op49 (forward on the tie), 9 forward and 8 backward; then the optimizer op alone with its tooltip.
  ReportTimeline t;
  t.stream_names = {"compute"};
  t.ranks = {0};
  t.step = 1;
  t.start_s = 0.0;
  t.end_s = 10.0;
  for (int k = 0; k < 50; ++k)
    t.spans.push_back(
        {0, 0, 0.01 * k, 0.01 * (k + 1), "op" + std::to_string(k), k % 2 == 0 ? "forward" : "backward", 0, 0});
  t.spans.push_back({0, 0, 5.0, 6.0, "adam", "optimizer", 0, 0});
  const std::string svg = timeline_svg(t);
  const auto count = [&svg](const std::string& what) {
    std::size_t n = 0;
    for (auto p = svg.find(what); p != std::string::npos; p = svg.find(what, p + 1))
      ++n;
    return n;
  };
  CHECK(count("\"><title>") == 18);
  CHECK(count("<title>3 ops closer than a pixel, rank 0 compute: ") == 16);
  CHECK(count("fill=\"#0072B2\"><title>") == 9); // forward
  CHECK(count("fill=\"#56B4E9\"><title>") == 8); // backward
  CHECK_THAT(svg, Contains("<title>3 ops closer than a pixel, rank 0 compute: op0 .. op2; start 0.000 ms, end 30.000 "
                           "ms, busy 30.000 ms; forward 2 (20.000 ms), backward 1 (10.000 ms)</title>"));
  CHECK_THAT(svg, Contains("<title>2 ops closer than a pixel, rank 0 compute: op48 .. op49; start 480.000 ms, end "
                           "500.000 ms, busy 20.000 ms; forward 1 (10.000 ms), backward 1 (10.000 ms)</title>"));
  CHECK_THAT(svg, Contains("<rect x=\"625.0\" y=\"28.0\" width=\"91.0\" height=\"16\" fill=\"#009E73\"><title>adam "
                           "[optimizer] rank 0 compute: start 5000.000 ms, duration 1000.000 ms</title>"));
}

TEST_CASE("make_timeline: at most four ranks, spans clipped to the window and sorted", "[analysis][unit]") {
  std::vector<ReportSpan> spans;
  for (int r = 5; r >= 0; --r)
    spans.push_back({r, 0, 2.5, 3.5, "op", "forward", 0, 0}); // starts before the window [3, 5]
  spans.push_back({0, 1, 5.5, 6.0, "later", "other", 0, 0}); // after the window
  spans.push_back({0, 1, 2.0, 3.0, "before", "other", 0, 0}); // ends when the window begins
  const ReportTimeline t = make_timeline(spans, {"compute", "comm"}, {1, 3.0, 5.0});
  CHECK(t.ranks == std::vector<int>{0, 1, 2, 3});
  REQUIRE(t.spans.size() == 4);
  for (std::size_t i = 0; i < t.spans.size(); ++i) {
    CHECK(t.spans[i].rank == static_cast<int>(i));
    CHECK(t.spans[i].start_s == 3.0); // clipped from 2.5
    CHECK(t.spans[i].end_s == 3.5);
  }
  const ReportTimeline empty = make_timeline({}, {"compute"}, {1, 3.0, 5.0});
  CHECK_THAT(empty.note, Contains("no traced spans"));
}

TEST_CASE("inline_svg: drops the prolog and namespace URLs and prefixes ids", "[analysis][unit]") {
  const std::string gp =
      "<?xml version=\"1.0\" encoding=\"utf-8\"  standalone=\"no\"?>\n<!-- c -->\n<svg \n"
      " width=\"10\" height=\"10\"\n xmlns=\"http://www.w3.org/2000/svg\"\n"
      " xmlns:xlink=\"http://www.w3.org/1999/xlink\"\n>\n<g id=\"gnuplot_canvas\">"
      "<path id='gpPt0' d='M0,0'/><use xlink:href='#gpPt0'/><rect fill=\"url(#grad)\"/></g></svg>\n";
  const std::string s = inline_svg(gp, "p3-");
  CHECK(s.rfind("<svg", 0) == 0);
  CHECK(s.find("http") == std::string::npos);
  CHECK(s.find("<?xml") == std::string::npos);
  CHECK_THAT(s, Contains("<g id=\"p3-gnuplot_canvas\">"));
  CHECK_THAT(s, Contains("<path id='p3-gpPt0'"));
  CHECK_THAT(s, Contains("xlink:href='#p3-gpPt0'"));
  CHECK_THAT(s, Contains("url(#p3-grad)"));
  REQUIRE_THROWS_WITH(inline_svg("not svg", "p-"), Contains("no <svg>"));
}

TEST_CASE("load_report_input: reads result.json and trace.json written by the analysis writers", "[analysis][unit]") {
  TempDir tmp("report");
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const RunSummary s = summarize(sc, synthetic_workload(), run);
  write_result_json((tmp.path() / "result.json").string(), sc, "", s, run);
  write_chrome_trace((tmp.path() / "trace.json").string(), run, "synthetic");
  const ReportInput in = load_report_input(tmp.path().string());
  CHECK(in.scenario == "synthetic");
  REQUIRE(in.variants.size() == 1);
  CHECK(in.variants[0].label == "synthetic");
  CHECK(in.variants[0].summary.step_time_s == Approx(2.25).epsilon(1e-12));
  const ReportTimeline& t = in.variants[0].timeline;
  CHECK(t.note.empty());
  CHECK(t.step == 1);
  CHECK(t.ranks == std::vector<int>{0, 1});
  REQUIRE(t.spans.size() == 3); // the three synthetic spans all lie in step 1 [3, 5] s
  CHECK(t.spans[0].name == "fwd block.0");
  CHECK(t.spans[1].name == "allreduce bucket 0");
  CHECK(t.spans[1].phase == "grad_reduce");
  CHECK(t.stream_names == std::vector<std::string>{"compute", "comm"});
  // What was simulated, read back from result.json's "scenario", in the words of the console's first line.
  CHECK(in.simulated ==
        "model toy on toy-node: 1 node(s) x 8 ToyGPU (80.00 GiB each), micro-batch 2 x 1024 tokens, "
        "GA 4, bf16, eager attention, DeepSpeed 0.19.5");
  CHECK_THAT(console_report(sc, {}), Contains("scenario 'synthetic' - " + in.simulated + "\n"));
}

TEST_CASE("load_report_input: a multi-variant run names what its first variant simulated, and why it differs by row",
          "[analysis][unit]") {
  TempDir tmp("report-multi");
  auto sc = synthetic_scenario();
  sc.compare_key = "training.micro_batch";
  sc.training.train_batch_size = 64; // GA derived: 64 / (2 x 8) = 4, as the synthetic scenario has it
  sc.zero.deepspeed_version = {0, 14, 0};
  sc.zero.deepspeed_version_text = "0.14";
  const auto run = synthetic_run();
  const RunSummary s = summarize(sc, synthetic_workload(), run);
  fs::create_directories(tmp.path() / "a");
  write_result_json((tmp.path() / "a" / "result.json").string(), sc, "training.micro_batch=2", s, run);
  write_summary_json((tmp.path() / "summary.json").string(), "synthetic",
                     {{"training.micro_batch=2", "a", s}, {"training.micro_batch=4", "b", s}});
  const ReportInput in = load_report_input(tmp.path().string());
  CHECK(in.simulated ==
        "model toy on toy-node: 1 node(s) x 8 ToyGPU (80.00 GiB each), micro-batch 2 x 1024 tokens, "
        "GA 4, bf16, eager attention, DeepSpeed 0.14.0 (first variant; training.micro_batch varies by "
        "row)");
  CHECK(in.simulated == scenario_headline_text(scenario_headline(sc)));
  // A "scenario" without a field it needs: an error naming the file, not a blank line.
  CHECK_THROWS_WITH(scenario_headline_from_json(R"({"model": {"name": "toy"}})", "x/result.json"),
                    Contains("x/result.json: malformed \"scenario\""));
}

TEST_CASE("render_report_html: the top of the page says what was simulated and whether ranks were folded",
          "[analysis][unit]") {
  ReportInput in = synthetic_input();
  CHECK_THAT(render_report_html(in), !Contains("id=\"simulated\"") && !Contains("ranks folded"));
  in.simulated =
      "model llama-2-7b on dgx-h100: 64 node(s) x 8 h100-sxm (79.65 GiB each), micro-batch 1 x 2048 "
      "tokens, GA 1, bf16, FlashAttention, DeepSpeed 0.16.0";
  const std::string fold = "ranks folded: simulated 8 of 512 ranks (1 node(s))";
  in.variants.front().summary.diagnostics.push_back(fold);
  ReportInput two = in;
  two.variants.push_back(in.variants.front());
  two.variants.back().label = "zero.stage=2";
  const std::string html = render_report_html(two);
  CHECK_THAT(html, Contains("<p id=\"simulated\">Simulated: model llama-2-7b on dgx-h100: 64 node(s) x 8 h100-sxm "
                            "(79.65 GiB each), micro-batch 1 x 2048 tokens, GA 1, bf16, FlashAttention, DeepSpeed "
                            "0.16.0.</p>"));
  // Folded alike in every variant: one note, before the summary table.
  CHECK_THAT(html, Contains("<p class=\"note\" id=\"folded\">Note: " + fold + ".</p>"));
  CHECK(html.find("id=\"simulated\"") < html.find("id=\"summary\""));
  CHECK(html.find("id=\"folded\"") < html.find("id=\"summary\""));
  // Only one variant folded: the note names it.
  two.variants.back().summary.diagnostics.clear();
  CHECK_THAT(render_report_html(two),
             Contains("<p class=\"note\">Note (zero.stage=3): " + fold + ".</p>") && !Contains("id=\"folded\""));
}

TEST_CASE("write_report: a missing or broken run directory throws naming the file and writes nothing",
          "[analysis][unit]") {
  TempDir tmp("report");
  const fs::path out = tmp.path() / "report.html";
  REQUIRE_THROWS_WITH(write_report((tmp.path() / "nope").string(), out.string()), Contains("nope"));
  REQUIRE_THROWS_WITH(write_report(tmp.path().string(), out.string()),
                      Contains("neither summary.json nor result.json"));
  std::ofstream(tmp.path() / "summary.json") << "{ not json";
  REQUIRE_THROWS_WITH(write_report(tmp.path().string(), out.string()), Contains("summary.json"));
  std::ofstream(tmp.path() / "summary.json") << R"({"scenario": "x", "variants": [{"dir": ".", "summary": {}}]})";
  REQUIRE_THROWS_WITH(write_report(tmp.path().string(), out.string()), Contains("summary.json: malformed summary"));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(has_tmp_file(tmp.path()));
}

TEST_CASE("base64_encode: the RFC 4648 section 10 test vectors", "[analysis][unit]") {
  CHECK(base64_encode("").empty());
  CHECK(base64_encode("f") == "Zg==");
  CHECK(base64_encode("fo") == "Zm8=");
  CHECK(base64_encode("foo") == "Zm9v");
  CHECK(base64_encode("foob") == "Zm9vYg==");
  CHECK(base64_encode("fooba") == "Zm9vYmE=");
  CHECK(base64_encode("foobar") == "Zm9vYmFy");
  CHECK(base64_encode(std::string("\x89PNG\r\n\x1a\n", 8)) == "iVBORw0KGgo="); // the PNG signature
}

TEST_CASE("render_report_html: the paper's model states keep their digits at a huge N_d, in MB and kB",
          "[analysis][unit]") {
  auto in = synthetic_input();
  auto& s = in.variants[0].summary;
  s.zero_stage = 3;
  // GPT-2 124M at N_d = 800,000: 16 x 124,439,808 / 800,000 = 2488.80 B = 2.49 kB = 2488.80 / 1024 = 2.430 KiB
  // (in GB, "0.00").
  s.world_size = 800000;
  s.paper_model_state_bytes = 16.0 * 124439808 / 800000;
  CHECK_THAT(render_report_html(in), Contains("16Ψ/N_d = 2.49 kB (2.430 KiB), to set against the peak above"));
  // At N_d = 64: 31,109,952 B = 31.11 MB = 31,109,952 / 2^20 = 29.669 MiB.
  s.world_size = 64;
  s.paper_model_state_bytes = 16.0 * 124439808 / 64;
  CHECK_THAT(render_report_html(in), Contains("16Ψ/N_d = 31.11 MB (29.669 MiB), to set against the peak above"));
}

TEST_CASE("render_report_html: the paper's model states and the reserved peak's split, as the console gives them",
          "[analysis][unit]") {
  auto in = synthetic_input();
  auto& s = in.variants[0].summary;
  // Stage 3 on 8 GPUs with Ψ = 1e9: 16Ψ/8 = 2 GB = 1.86 GiB.
  s.zero_stage = 3;
  s.paper_model_state_bytes = 2e9;
  // Reserved 15 GiB at its peak: 12 GiB allocated (8 + 4 by tag), blocks not free 13 GiB: 1 GiB held, 2 GiB free.
  s.peak_reserved_bytes = 15.0 * kGiB;
  s.peak_reserved_by_tag = {};
  s.peak_reserved_by_tag[0] = 8.0 * kGiB;
  s.peak_reserved_by_tag[1] = 4.0 * kGiB;
  s.peak_reserved_held_bytes = 13.0 * kGiB;
  const std::string html = render_report_html(in);
  // 2e9 / 2^30 = 1.8626 GiB; the console's units (size_in_units), three decimals of GiB.
  CHECK_THAT(html, Contains("Model states as the ZeRO paper counts them (§5.1, K = 12; stage 3, N<sub>d</sub> = "
                            "8): 16Ψ/N_d = 2.00 GB (1.863 GiB)"));
  CHECK_THAT(html, Contains(": 12.00 GiB allocated + 1.00 GiB held for other streams") &&
                       Contains("+ 2.00 GiB cached free blocks and fragmentation"));
  CHECK_THAT(html, !Contains("BF16_Optimizer"));
  // Stage 0 under BF16_Optimizer (newuser23 finding 6): Ψ = 1e9, 8 GPUs: 2Ψ + 4Ψ + 12Ψ/8 = 7.5 GB = 6.985 GiB.
  s.zero_stage = 0;
  s.world_size = 8;
  s.params = 1e9;
  s.paper_model_state_bytes = 16e9;
  s.bf16_optimizer = true;
  CHECK_THAT(render_report_html(in), Contains("<p class=\"note\">Note: DeepSpeed runs BF16_Optimizer here") &&
                                         Contains("12Ψ/N_d = 7.50 GB (6.985 GiB)"));
}

TEST_CASE("render_report_html: an initialisation peak is labelled with the steady-state peak, MFU gets its note",
          "[analysis][unit]") {
  ReportInput in = synthetic_input();
  RunSummary& s = in.variants[0].summary;
  s.peak_bytes = 25.103 * kGiB; // newuser23 finding 2: stage 2's flatten copy before step 0
  s.peak_step = -1;
  s.steady_peak_bytes = 20.962 * kGiB;
  s.steady_peak_reached = true;
  // newuser23 finding 8: 83.9 % attention, executed 0.161 + 0.839 x 0.5833 = 0.6504 of the count; MFU 3.4 % of the
  // synthetic run x 0.6504 = 2.2 %.
  s.attention_flops_share = 0.839;
  s.executed_flops_ratio = 0.161 + 0.839 * (0.5 / 3 + 2 * 0.625 / 3);
  const std::string html = render_report_html(in);
  CHECK_THAT(html, Contains("<br><small>at initialisation, before step 0; steady-state 20.96</small>"));
  CHECK_THAT(html, Contains(" (initialisation, before step 0), reached by the op"));
  CHECK_THAT(html, Contains("; the steady-state peak (steps &#8805; 1), what training holds, is 20.96 GiB."));
  CHECK_THAT(html, Contains("3.4 %<br><small>executed 2.2 %*</small>"));
  CHECK_THAT(html, Contains("<p class=\"note\">* MFU of zero.stage=3: it counts attention as the full s x s product"));
  s.peak_step = 1;
  s.executed_flops_ratio = 1;
  const std::string plain = render_report_html(in);
  CHECK_THAT(plain,
             !Contains("at initialisation, before step 0") && !Contains("* MFU of") && !Contains("executed 2.2"));
}
