// The self-contained HTML report of a run (analysis/report.hpp).
#include "analysis/report.hpp"

#include "analysis/atomic_file.hpp"
#include "analysis/console.hpp"
#include "analysis/measured_band.hpp"
#include "analysis/plots.hpp"
#include "analysis/result_json.hpp"
#include "analysis/version.hpp"
#include "sim/error.hpp"
#include "sim/quantity.hpp"

#include <fmt/format.h>
#include <boost/archive/iterators/base64_from_binary.hpp>
#include <boost/archive/iterators/transform_width.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

namespace zerosim::analysis {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw Error("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json read_json(const fs::path& p) {
  const std::string text = read_text(p);
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(p.string() + ": not valid JSON (" + e.what() + ")");
  }
}

RunSummary summary_of(const json& s, const fs::path& file) {
  return summary_in_file(s.is_object() ? s.dump() : std::string(), file.string());
}

/// Steps of a result.json ("steps": [{step, start_s, end_s}]).
std::vector<trace::StepTiming> steps_of(const json& r, const fs::path& file) {
  std::vector<trace::StepTiming> steps;
  const auto it = r.find("steps");
  if (it == r.end() || !it->is_array())
    return steps;
  try {
    for (const auto& s : *it)
      steps.push_back({s.at("step").get<int>(), s.at("start_s").get<double>(), s.at("end_s").get<double>()});
  } catch (const json::exception& e) {
    throw Error(file.string() + ": malformed \"steps\" (" + e.what() + ")");
  }
  return steps;
}

/// The timeline of one variant directory from its result.json (steps) and trace.json (spans), drawn at
/// timeline_window(`first_steady`); a note when a file is missing.
ReportTimeline load_timeline(const fs::path& dir, int first_steady) {
  ReportTimeline none;
  const fs::path result_path = dir / "result.json";
  const fs::path trace_path = dir / "trace.json";
  if (!fs::exists(result_path) || !fs::exists(trace_path)) {
    none.note = "no " + (fs::exists(result_path) ? trace_path : result_path).string() + ": no timeline";
    return none;
  }
  const json r = read_json(result_path);
  const std::vector<trace::StepTiming> steps = steps_of(r, result_path);
  const double end_s = r.value("end_time_s", 0.0);
  const json t = read_json(trace_path);
  const auto events = t.find("traceEvents");
  if (events == t.end() || !events->is_array())
    throw Error(trace_path.string() + ": no \"traceEvents\" array");
  std::map<int, std::string> thread_names;
  std::vector<ReportSpan> spans;
  try {
    for (const auto& e : *events) {
      const std::string ph = e.value("ph", std::string());
      if (ph == "M" && e.value("name", std::string()) == "thread_name") {
        thread_names[e.at("tid").get<int>()] = e.at("args").at("name").get<std::string>();
      } else if (ph == "X") {
        ReportSpan s;
        s.rank = e.at("pid").get<int>();
        s.stream = e.at("tid").get<int>();
        s.start_s = e.at("ts").get<double>() * 1e-6; // trace-event times are in microseconds
        s.end_s = s.start_s + e.at("dur").get<double>() * 1e-6;
        s.name = e.value("name", std::string());
        s.phase = e.value("cat", std::string());
        if (const auto a = e.find("args"); a != e.end() && a->is_object()) {
          s.bytes = a->value("bytes", 0.0);
          s.flops = a->value("flops", 0.0);
        }
        spans.push_back(std::move(s));
      }
    }
  } catch (const json::exception& e) {
    throw Error(trace_path.string() + ": malformed trace event (" + e.what() + ")");
  }
  std::vector<std::string> names;
  for (const auto& [tid, name] : thread_names) {
    if (tid < 0 || tid > 1024) // a stream index, not a thread id: a handful per rank (sim/program/program.hpp)
      throw Error(fmt::format("{}: stream index {} out of range", trace_path.string(), tid));
    if (names.size() <= static_cast<std::size_t>(tid))
      names.resize(static_cast<std::size_t>(tid) + 1);
    names[static_cast<std::size_t>(tid)] = name;
  }
  const StepWindow w = timeline_window(steps, end_s, first_steady, spans);
  ReportTimeline out = make_timeline(std::move(spans), std::move(names), w);
  out.steady_first_step = first_steady;
  return out;
}

/// Colour of a phase in the timeline (Okabe-Ito, colour-blind safe), and the legend order.
const std::vector<std::pair<std::string, std::string>>& phase_colours() {
  static const std::vector<std::pair<std::string, std::string>> c{
      {"init", "#999999"},      {"forward", "#0072B2"},      {"backward", "#56B4E9"}, {"grad_reduce", "#D55E00"},
      {"optimizer", "#009E73"}, {"param_gather", "#CC79A7"}, {"offload", "#E69F00"},  {"other", "#F0E442"},
  };
  return c;
}

std::string phase_colour(const std::string& phase) {
  for (const auto& [p, c] : phase_colours())
    if (p == phase)
      return c;
  return "#666666";
}

/// A "nice" tick spacing (1, 2 or 5 x 10^k) giving about `n` ticks over `span`.
double nice_step(double span, int n) {
  if (span <= 0)
    return 1;
  const double raw = span / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
}

std::string td(const std::string& text, const char* cls = nullptr) {
  return cls == nullptr ? "<td>" + text + "</td>" : fmt::format("<td class=\"{}\">{}</td>", cls, text);
}

/// Private scratch directory, removed with its content at the end of the scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = (fs::temp_directory_path() / "zerosim-report-XXXXXX").string();
    if (::mkdtemp(templ.data()) == nullptr)
      throw Error("cannot create a temporary directory under " + fs::temp_directory_path().string());
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

const char* kStyle = R"(body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1200px}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left}
td.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}th{background:#f2f2f2}
.oom{color:#a00;font-weight:bold}.fits{color:#070;font-weight:bold}.note{color:#555;font-style:italic}
#oom{background:#fff0f0;border:1px solid #e99;padding:.2em 1em}#oom h2{margin-top:.4em}svg,img.plot{max-width:100%;height:auto}
figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}code{background:#f4f4f4;padding:0 .2em}
#js-errors{color:#a00})";

// Errors of the page's own scripts are written into the page (the e2e test reads the DOM); the load marker tells
// that the page finished loading.
const char* kOnError = R"(window.onerror=function(m,s,l){var e=document.getElementById('js-errors');)"
                       R"(if(e){e.textContent+='JS error: '+m+' (line '+l+')\n';}return false;};)";
const char* kOnLoad =
    R"(window.addEventListener('load',function(){var e=document.getElementById('js-errors');)"
    R"(Array.prototype.forEach.call(document.images,function(i){if(!(i.complete&&i.naturalWidth>0)&&e))"
    R"({e.textContent+='image not decoded: '+i.alt+'\n';}});var d=document.createElement('div');)"
    R"(d.id='report-loaded';d.hidden=true;d.textContent='report loaded';)"
    R"(document.body.appendChild(d);});)";

/// Which steps the step time averages, as the console says it (console.cpp: "mean of steps >= N"): the steady-state
/// window starts at each variant's steady_first_step (analysis/summary.cpp first_steady_step).
std::string steady_window_text(const ReportInput& in) {
  std::set<int> firsts;
  for (const auto& v : in.variants)
    firsts.insert(v.summary.steady_first_step);
  if (firsts.size() > 1)
    return "mean of each variant's steady-state steps (step 0 is warm-up; from step 2 where DeepSpeed's throughput "
           "timer syncs, step 1 running without it, else from step 1; the timeline says which)";
  const int first = firsts.empty() ? 1 : *firsts.begin();
  return "mean of steps &#8805; " + std::to_string(first) + " (step 0 is warm-up" +
         (first >= 2 ? html_escape("; step 1 runs without the throughput timer's sync") : std::string()) + ")";
}

std::string summary_section(const ReportInput& in) {
  std::string h =
      "<section id=\"summary\">\n<h2>Summary</h2>\n<table>\n<tr><th>Variant</th><th>Step time (s)</th>"
      "<th>Tokens/s</th><th>GPU-hours per 1B tokens</th><th>TFLOP/s per GPU</th><th>MFU</th><th>GEMM "
      "shapes</th><th>Peak allocated (GiB)</th>"
      "<th>Peak reserved (GiB)</th><th>nvidia-smi (GiB)</th><th>Capacity (GiB)</th><th>Fits</th>"
      "<th>Reason</th></tr>\n";
  bool any_past_oom = false;
  for (const auto& v : in.variants) {
    const RunSummary& s = v.summary;
    // A variant stopped at its OOM has no step time, whatever steps completed before it (has_step_time).
    const bool stepped = has_step_time(s);
    // Timed past an OOM (simulation.on_oom: continue): the console's "!" mark on the number, explained under the
    // table.
    const bool past_oom = stepped && s.oom;
    any_past_oom = any_past_oom || past_oom;
    std::string step = stepped ? report_seconds(s.step_time_s) + (past_oom ? "!" : "") : "&#8212;";
    if (stepped && !s.steady_state)
      step += " (warm-up step only)";
    std::string reason;
    if (s.oom) { // the first clause; the whole description is in the "Out of memory" section
      reason = html_escape(
          s.oom_description.substr(0, std::min(s.oom_description.find(" (largest"), s.oom_description.find(';'))));
      // The first failed allocation is not the step's shortfall: simulated on past it (on_oom: continue), the
      // would-be nvidia-smi peak says how far the step is over, as the console's fits column does.
      if (simulated_past_gpu_oom(s))
        reason += html_escape(fmt::format("; simulated on: nvidia-smi peak {} over the capacity",
                                          memory_text(s.nvidia_smi_bytes - s.capacity_bytes)));
    } else if (!s.fits)
      reason = html_escape(fmt::format("peak allocated {} / nvidia-smi {} GiB exceed the capacity {} GiB",
                                       report_gib(s.peak_bytes), report_gib(s.nvidia_smi_bytes),
                                       report_gib(s.capacity_bytes)));
    else
      reason = html_escape(
          fmt::format("nvidia-smi {} of {} GiB", report_gib(s.nvidia_smi_bytes), report_gib(s.capacity_bytes)));
    if (s.steps_completed > 0 && !s.finished)
      reason += " (run stopped before the end)";
    const bool ranks_differ = s.peak_reserved_bytes > 0 && s.peak_rank != s.peak_reserved_rank;
    h += "<tr>" + td(html_escape(v.label)) + td(step, "num") +
         td(stepped ? fmt::format("{:.1f}", s.tokens_per_s) : "&#8212;", "num") +
         // As the console's throughput line: 1e9 tokens / (tokens/s) x N_d GPUs, in hours.
         td(stepped && s.tokens_per_s > 0
                ? gpu_hours_text(1e9 / s.tokens_per_s / 3600.0 * s.world_size) +
                      // Offload to nvme: what those tokens write to a node's drives, against their rated endurance.
                      (nvme_write_bytes_per_billion_tokens(s) > 0
                           ? fmt::format("<br><small>NVMe writes {:.2f} TB per node</small>",
                                         nvme_write_bytes_per_billion_tokens(s) / 1e12)
                           : std::string())
                : "&#8212;",
            "num") +
         td(stepped ? fmt::format("{:.1f}", s.model_tflops_per_gpu) : "&#8212;", "num") +
         // With a causal FlashAttention kernel and much attention the GPU executes less than MFU counts: the
         // executed rate's share of peak under it (console mfu_count_note, explained under the table).
         td(stepped ? fmt::format("{:.1f} %", s.mfu * 100.0) +
                          (mfu_count_note(s).empty() ? std::string()
                                                     : fmt::format("<br><small>executed {:.1f} %*</small>",
                                                                   s.mfu * s.executed_flops_ratio * 100.0))
                    : "&#8212;",
            "num") +
         // GEMM shapes: the rate of the step's GEMMs, nothing for a variant without a step (an OOM at initialisation
         // ran none).
         td(stepped ? fmt::format("{:.1f} %", s.gemm_utilization * 100.0) : "&#8212;", "num") +
         // The worst ranks of the two peaks can differ (stage 3's reserved peak on another rank): named then.
         // A peak reached at initialisation (before step 0) is said so, with the steady-state peak beside it.
         td(report_gib(s.peak_bytes) + (ranks_differ ? fmt::format(" (rank {})", s.peak_rank) : std::string()) +
                (!peak_at_initialisation(s) ? std::string()
                 : s.steady_peak_reached    ? "<br><small>at initialisation, before step 0; steady-state " +
                                               report_gib(s.steady_peak_bytes) + "</small>"
                                         : std::string("<br><small>at initialisation, before step 0</small>")),
            "num") +
         td(report_gib(s.peak_reserved_bytes) +
                (ranks_differ ? fmt::format(" (rank {})", s.peak_reserved_rank) : std::string()),
            "num") +
         td(report_gib(s.nvidia_smi_bytes), "num") + td(report_gib(s.capacity_bytes), "num") +
         (s.fits && !s.oom ? td("fits", "fits") : td("OOM", "oom")) + td(reason) + "</tr>\n";
  }
  h += "</table>\n";
  if (in.variants.size() >= 2) { // the console report's verdict (analysis/console.hpp compare_verdict)
    std::vector<VariantSummary> vs;
    for (const auto& v : in.variants)
      vs.push_back({v.label, v.dir, v.summary});
    std::string verdict = html_escape(compare_verdict(vs));
    for (std::size_t at; (at = verdict.find('\n')) != std::string::npos;) // the console's indent: not in HTML
      verdict.replace(at, verdict.find_first_not_of(' ', at + 1) - at, "<br>");
    h += "<p class=\"verdict\">" + verdict + "</p>\n";
  }
  h += "<p class=\"note\">Step time: " + steady_window_text(in) +
       ". TFLOP/s = 1e12 "
       "model FLOP/s; MFU = model FLOP/s over the GPU's peak (Chowdhery et al. 2022, App. B). GEMM shapes = the "
       "fraction of the large-GEMM rate the model's GEMMs reach on this GPU (tile and wave quantization; "
       "docs/compute.md). GiB = 2<sup>30</sup> "
       "B. nvidia-smi = reserved + CUDA context + NCCL buffers, which decides a GPU OOM.</p>\n";
  // As the console says it: the measured band's note unless every timed variant is collective-bound, whose own note
  // (summary caveats) replaces it, with the memory part kept.
  const bool any_step =
      std::any_of(in.variants.begin(), in.variants.end(), [](const auto& v) { return has_step_time(v.summary); });
  const bool all_bound = std::all_of(in.variants.begin(), in.variants.end(), [](const auto& v) {
    return !has_step_time(v.summary) || v.summary.collective_bound;
  });
  if (any_step && !all_bound)
    h += "<p class=\"note\">Note: " + html_escape(best_case_note()) + ".</p>\n";
  std::vector<std::string> unvalidated; // a GPU no measured band covers (summary caveats), once per note
  for (const auto& v : in.variants)
    for (const std::string& c : v.summary.caveats)
      if (c.rfind(kUnvalidatedGpuNoteStart, 0) == 0 &&
          std::find(unvalidated.begin(), unvalidated.end(), c) == unvalidated.end()) {
        unvalidated.push_back(c);
        h += "<p class=\"note\">Note: " + html_escape(c) + ".</p>\n";
      }
  for (const auto& v : in.variants)
    for (const std::string& c : v.summary.caveats)
      if ((v.summary.collective_bound && c.rfind(kCollectiveBoundNoteStart, 0) == 0) ||
          c.rfind(kMultinodeZero3NoteStart, 0) == 0)
        h += "<p class=\"note\">Note" + (in.variants.size() == 1 ? std::string() : " on " + html_escape(v.label)) +
             ": " + html_escape(c) + ".</p>\n";
  if (any_step && all_bound)
    h += "<p class=\"note\">Note: " + html_escape(memory_margin_note()) + ".</p>\n";
  for (const auto& v : in.variants) // the MFU note of each variant that has one ("executed N %*" in its cell)
    if (const std::string note = mfu_count_note(v.summary); !note.empty())
      h += "<p class=\"note\">* MFU of " + html_escape(v.label) + ": it " + html_escape(note) + ".</p>\n";
  if (any_past_oom)
    h += "<p class=\"note\">! simulated past its OOM (simulation.on_oom: continue) as if memory were unlimited: the "
         "real run stops there, so its throughput and GPU-hours are not reachable on this GPU.</p>\n";
  h += "</section>\n";
  return h;
}

std::string breakdown_section(const ReportInput& in) {
  // With gradient accumulation a step is GA micro-steps: the heading says how many, each row when they differ.
  std::vector<std::int64_t> gas;
  for (const auto& v : in.variants)
    gas.push_back(v.summary.grad_accum);
  const std::string ga_step = optimizer_step_text(gas);
  const bool ga_per_row = !ga_step.empty() && (gas.empty() || ga_step != optimizer_step_text(gas.front()));
  std::string h =
      "<section id=\"breakdown\">\n<h2>Step-time breakdown" +
      (ga_step.empty() ? std::string()
                       : " (" + html_escape(ga_step) + (ga_per_row ? ", GA as in each row" : "") + ")") +
      "</h2>\n<table>\n<tr><th>Variant</th>"
      "<th>Forward</th><th>Backward</th><th>Optimizer (GPU)</th><th>Other compute (bucket copies, casts, checks)</th>"
      "<th>Exposed communication</th><th>Exposed offload copies (PCIe)</th><th>Exposed NVMe swaps</th><th>Exposed "
      "CPU</th>"
      "<th>Host thread</th><th>Other idle</th><th>Step time</th></tr>\n";
  for (const auto& v : in.variants) {
    const StepBreakdown& b = v.summary.breakdown;
    h += "<tr>" + td(html_escape(v.label) + (ga_per_row && v.label.find("grad_accum=") == std::string::npos
                                                 ? fmt::format(" (GA={})", v.summary.grad_accum)
                                                 : std::string()));
    if (v.summary.steps_completed == 0) {
      // No step completed (an OOM stopped the run): nothing to break down.
      h += "<td colspan=\"11\">\u2014 (no optimizer step completed)</td></tr>\n";
      continue;
    }
    if (!has_step_time(v.summary)) { // steps before the OOM that stopped it: not a step of a run that trains
      h += "<td colspan=\"11\">\u2014 (the run stopped at its OOM)</td></tr>\n";
      continue;
    }
    for (double x :
         {b.forward_s, b.backward_s, b.optimizer_s, b.other_compute_s, b.exposed_comm_s, b.exposed_offload_pcie_s,
          b.exposed_offload_nvme_s, b.exposed_cpu_s, b.exposed_host_s, b.idle_other_s, v.summary.step_time_s})
      h += td(report_seconds(x), "num");
    h += "</tr>\n";
  }
  h += "</table>\n<p class=\"note\">Seconds per steady-state " +
       std::string(ga_step.empty() ? "step" : "optimizer step (all its micro-steps)") +
       ", by what rank 0's compute stream was doing "
       "(exposed = the compute stream idle while that ran; host thread = idle while the Python thread issued work: "
       "eager "
       "op launches, DeepSpeed's hooks).</p>\n</section>\n";
  return h;
}

/// Rank 0's collectives in one step by kind (RunSummary::step_traffic), as the console's "comm per step" line.
std::string communication_section(const ReportInput& in) {
  // The kinds shown: all-reduce, all-gather and reduce-scatter always; reduce (DeepSpeed's per-owner dist.reduce
  // before 0.12.4) only when a variant issued one.
  std::vector<program::CollectiveKind> kinds;
  for (const program::CollectiveKind k : kReportCollectiveOrder) {
    const auto i = static_cast<std::size_t>(k);
    const bool used = std::any_of(in.variants.begin(), in.variants.end(), [&](const auto& v) {
      return v.summary.step_traffic_step >= 0 && v.summary.step_traffic.collective_calls[i] > 0;
    });
    if (k != program::CollectiveKind::REDUCE || used)
      kinds.push_back(k);
  }
  std::string h =
      "<section id=\"communication\">\n<h2>Communication per step</h2>\n<table>\n<tr><th rowspan=\"2\">Variant</th>"
      "<th rowspan=\"2\">Step</th>";
  for (const program::CollectiveKind k : kinds) {
    std::string name = program::to_string(k);
    std::replace(name.begin(), name.end(), '_', '-');
    h += "<th colspan=\"3\">" + name + "</th>";
  }
  h += "<th rowspan=\"2\">Wire in all (GB)</th><th rowspan=\"2\">Wire in Ψ &#215; 2 B</th><th rowspan=\"2\">ZeRO "
       "paper §7</th></tr>\n<tr>";
  for (std::size_t i = 0; i < kinds.size(); ++i)
    h += "<th>Calls</th><th>Payload (GB)</th><th>Wire (GB)</th>";
  h += "</tr>\n";
  for (const auto& v : in.variants) {
    const RunSummary& s = v.summary;
    h += "<tr>" + td(html_escape(v.label));
    if (s.step_traffic_step < 0) { // no step completed, or a result from before the figure was recorded
      h += "<td colspan=\"" + std::to_string(4 + 3 * kinds.size()) +
           "\">\u2014 (no optimizer step completed, or a run from an older zerosim)</td></tr>\n";
      continue;
    }
    h += td(std::to_string(s.step_traffic_step) + (s.step_traffic_steady ? "" : " (warm-up)"), "num");
    double wire = 0;
    for (const program::CollectiveKind k : kinds) {
      const auto i = static_cast<std::size_t>(k);
      const trace::Traffic& t = s.step_traffic;
      h += td(fmt::format("{:.0f}", t.collective_calls[i]), "num") +
           td(fmt::format("{:.2f}", t.collective_bytes[i] / 1e9), "num") +
           td(fmt::format("{:.2f}", t.wire_bytes[i] / 1e9), "num");
      wire += t.wire_bytes[i];
    }
    h += td(fmt::format("{:.2f}", wire / 1e9), "num");
    h += s.params > 0
             ? td(fmt::format("{:.2f}Ψ", step_wire_in_psi(s)), "num") + td(html_escape(paper_comm_volume_text(s)))
             : td("&#8212;", "num") + td("&#8212;");
    h += "</tr>\n";
  }
  h +=
      "</table>\n<p class=\"note\">What rank 0 sends in one optimizer step: the last completed step, by the step "
      "each collective was issued for (the warm-up step 0 only when no other completed: stage 3 gathers more then, "
      "while it records its module trace). "
      "Payload = the tensor size DeepSpeed passes to NCCL, summed; wire = the bytes the rank sends under the algorithm "
      "used (a ring sends (N<sub>d</sub> &#8722; 1)/N<sub>d</sub> of an all-gather or reduce-scatter payload and "
      "twice that of an all-reduce; NVLS less; a reduce to one rank is sent by every rank but that one). GB = "
      "10<sup>9</sup> B. The ZeRO paper (Rajbhandari et al. 2020, §7) "
      "counts elements sent per rank: 2Ψ for data parallelism and stages 1-2, 3Ψ for stage 3; one bf16/fp16 "
      "element is 2 B. result.json has the same figures under <code>collectives_per_step</code>.</p>\n</section>\n";
  return h;
}

std::string attribution_section(const ReportInput& in) {
  std::string h = "<section id=\"attribution\">\n<h2>Peak memory attribution</h2>\n";
  for (const auto& v : in.variants) {
    const RunSummary& s = v.summary;
    h += "<h3>" + html_escape(v.label) + "</h3>\n";
    h += "<p>Peak allocated GPU memory " + report_gib(s.peak_bytes) + " GiB on rank " + std::to_string(s.peak_rank) +
         fmt::format(" at t = {:.6f} s", s.peak_time_s) +
         (s.peak_step >= 0 ? " (step " + std::to_string(s.peak_step) + ")"
                           : std::string(" (initialisation, before step 0)")) +
         ", reached by the op <code>" + html_escape(s.peak_label) + "</code>" +
         (peak_at_initialisation(s) && s.steady_peak_reached
              ? "; the steady-state peak (steps &#8805; 1), what training holds, is " +
                    report_gib(s.steady_peak_bytes) + " GiB"
              : std::string()) +
         ".</p>\n";
    if (s.alloc_retries > 0 && !(s.oom && s.alloc_retries == 1))
      h += fmt::format(
          "<p>cudaMalloc retries: {} on rank {}{}: the caching allocator released its cached free segments "
          "to make room{}.</p>\n",
          s.alloc_retries, s.alloc_retries_rank, s.oom ? " up to the OOM" : "",
          s.alloc_retry_wait_s > 0 ? fmt::format(", after waiting {:.2f} ms in all for blocks other streams still used",
                                                 s.alloc_retry_wait_s * 1e3)
                                   : std::string());
    if (s.peak_attribution.empty()) {
      h += "<p class=\"note\">Nothing was allocated.</p>\n";
      continue;
    }
    h += "<table>\n<tr><th>Tag at the peak</th><th>GiB</th><th>Controlled by (DeepSpeed knob)</th></tr>\n";
    for (const auto& a : s.peak_attribution)
      h += "<tr>" + td("<code>" + html_escape(a.tag) + "</code>") + td(report_gib(a.bytes), "num") +
           td(html_escape(a.knob)) + "</tr>\n";
    h += "</table>\n";
    // As the console's model-states and reserved-peak lines (analysis/console.cpp).
    if (s.paper_model_state_bytes > 0)
      h += fmt::format(
          "<p>Model states as the ZeRO paper counts them (§5.1, K = 12; stage {}, N<sub>d</sub> = {}): "
          "{} = {}, to set against the peak above.</p>\n",
          s.zero_stage, s.world_size, html_escape(paper_model_states_formula(s.zero_stage)),
          html_escape(size_in_units(s.paper_model_state_bytes)));
    if (const std::string note = bf16_optimizer_states_text(s); !note.empty())
      h += "<p class=\"note\">Note: " + html_escape(note) + ".</p>\n";
    if (s.peak_reserved_bytes > 0) {
      const ReservedSplit split = reserved_split(s);
      h += fmt::format(
          "<p>Peak reserved {} GiB on rank {} (at <code>{}</code>): {} GiB allocated + {} GiB held for "
          "other streams (blocks of freed tensors that a stream's queued kernels still use: "
          "<code>record_stream</code>) + {} GiB cached free blocks and fragmentation.</p>\n",
          report_gib(s.peak_reserved_bytes), s.peak_reserved_rank, html_escape(s.peak_reserved_label),
          report_gib(split.allocated), report_gib(split.held), report_gib(split.cached));
      if (!s.reserved_note.empty())
        h += "<p class=\"note\">Note: " + html_escape(s.reserved_note) + ".</p>\n";
    }
    if (!s.host_peak_attribution.empty()) {
      // As the console's host lines (analysis/console.cpp host_lines): the node total is what cluster.host_memory
      // limits; the table is one rank's share.
      h += "<p>Peak host memory " + report_gib(s.host_peak_bytes) + " GiB per rank (" +
           report_gib(s.host_pinned_at_peak_bytes) + " GiB of it pinned), " + report_gib(s.host_node_peak_bytes) +
           " GiB per node" +
           (s.host_capacity_bytes > 0 ? " of " + report_gib(s.host_capacity_bytes) + " GiB"
                                      : std::string(" (host memory unlimited)")) +
           (s.host_peak_step >= 0 ? ", step " + std::to_string(s.host_peak_step) : std::string()) +
           (s.host_peak_label.empty() ? std::string()
                                      : ", reached by <code>" + html_escape(s.host_peak_label) + "</code>") +
           ".</p>\n<table>\n<tr><th>Host tag at the peak (per rank)</th><th>GiB</th><th>Controlled by (DeepSpeed "
           "knob)</th></tr>\n";
      for (const auto& a : s.host_peak_attribution)
        h += "<tr>" + td("<code>" + html_escape(a.tag) + "</code>") + td(report_gib(a.bytes), "num") +
             td(html_escape(a.knob)) + "</tr>\n";
      h += "</table>\n";
    }
  }
  return h + "</section>\n";
}

std::string plots_section(const ReportInput& in) {
  std::string h = "<section id=\"plots\">\n<h2>Plots</h2>\n";
  if (!in.plots_note.empty())
    h += "<p class=\"note\">" + html_escape(in.plots_note) + "</p>\n";
  for (const auto& p : in.plots)
    h += "<figure>\n<figcaption>" + html_escape(p.title) + "</figcaption>\n" + p.markup + "\n</figure>\n";
  return h + "</section>\n";
}

std::string timeline_section(const ReportInput& in) {
  std::string h =
      "<section id=\"timeline\">\n<h2>Stream timeline of one step</h2>\n<p class=\"note\">One row per "
      "stream of up to " +
      std::to_string(kReportTimelineRanks) +
      " traced ranks, one rectangle per op coloured by phase (ops closer than a pixel share one, coloured by the "
      "phase with the most time in it); hover for the ops, their durations and bytes. Times in ms from the start of "
      "the step.</p>\n";
  for (const auto& v : in.variants) {
    const ReportTimeline& t = v.timeline;
    h += "<h3>" + html_escape(v.label) + "</h3>\n";
    if (!t.note.empty()) {
      h += "<p class=\"note\">" + html_escape(t.note) + "</p>\n";
      continue;
    }
    // Whether the drawn step is one the step time averages (steps >= steady_first_step; the summary's note).
    const std::string window = "steps &#8805; " + std::to_string(t.steady_first_step);
    std::string which;
    if (t.step < 0)
      which = "No step completed; the whole run";
    else if (t.step == 0)
      which = "Step 0 (warm-up; no step of the step-time mean completed)";
    else if (t.step == t.steady_first_step)
      which = "Step " + std::to_string(t.step) + " (the first step of the step-time mean, " + window + ")";
    else if (t.step > t.steady_first_step)
      which = "Step " + std::to_string(t.step) + " (in the step-time mean, " + window + ")";
    else
      which = "Step " + std::to_string(t.step) + " (not in the step-time mean of " + window +
              ": the trace holds none of them)";
    h += "<p>" + which + fmt::format(", t = {:.6f} .. {:.6f} s, ", t.start_s, t.end_s);
    std::string ranks;
    for (int r : t.ranks)
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    h += (t.ranks.size() == 1 ? "rank " : "ranks ") + ranks + ".</p>\n" + timeline_svg(t) + "\n";
  }
  return h + "</section>\n";
}

} // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string report_seconds(double s) { return fmt::format("{:.4f}", s); }

std::string report_gib(double bytes) { return fmt::format("{:.2f}", bytes / kGiB); }

StepWindow steady_step_window(const std::vector<trace::StepTiming>& steps, double end_s, int first_steady) {
  for (const auto& s : steps)
    if (s.step >= first_steady)
      return {s.step, s.start, s.end};
  for (const auto& s : steps)
    if (s.step >= 1)
      return {s.step, s.start, s.end};
  if (!steps.empty())
    return {steps.back().step, steps.back().start, steps.back().end};
  return {-1, 0.0, end_s};
}

StepWindow timeline_window(const std::vector<trace::StepTiming>& steps, double end_s, int first_steady,
                           const std::vector<ReportSpan>& spans) {
  const StepWindow w = steady_step_window(steps, end_s, first_steady);
  if (first_steady <= 1 || w.step < first_steady || std::any_of(spans.begin(), spans.end(), [&](const ReportSpan& s) {
        return s.end_s > w.start_s && s.start_s < w.end_s;
      }))
    return w;
  return steady_step_window(steps, end_s, 1);
}

ReportTimeline make_timeline(std::vector<ReportSpan> spans, std::vector<std::string> stream_names,
                             const StepWindow& w) {
  ReportTimeline t;
  t.stream_names = std::move(stream_names);
  t.step = w.step;
  t.start_s = w.start_s;
  t.end_s = w.end_s;
  std::set<int> all_ranks;
  for (const auto& s : spans)
    all_ranks.insert(s.rank);
  for (int r : all_ranks)
    if (static_cast<int>(t.ranks.size()) < kReportTimelineRanks)
      t.ranks.push_back(r);
  if (t.ranks.empty()) {
    t.note = "no traced spans (simulation.trace_ranks traced none): no timeline";
    return t;
  }
  if (!(w.end_s > w.start_s)) {
    t.note = "the run has no simulated time: no timeline";
    return t;
  }
  const int last_rank = t.ranks.back();
  for (auto& s : spans) {
    if (s.rank > last_rank || s.stream < 0 || s.end_s < w.start_s || s.start_s > w.end_s)
      continue;
    if (s.end_s == w.start_s && s.start_s < w.start_s)
      continue; // ended exactly when the window begins: belongs to the previous step
    s.start_s = std::max(s.start_s, w.start_s);
    s.end_s = std::min(s.end_s, w.end_s);
    t.spans.push_back(std::move(s));
  }
  std::stable_sort(t.spans.begin(), t.spans.end(), [](const ReportSpan& a, const ReportSpan& b) {
    return std::tie(a.rank, a.stream, a.start_s) < std::tie(b.rank, b.stream, b.start_s);
  });
  for (const auto& s : t.spans) // a stream without a name (not in stream_names) gets "stream N"
    if (s.stream >= static_cast<int>(t.stream_names.size()))
      t.stream_names.resize(static_cast<std::size_t>(s.stream) + 1);
  for (std::size_t i = 0; i < t.stream_names.size(); ++i)
    if (t.stream_names[i].empty())
      t.stream_names[i] = "stream " + std::to_string(i);
  return t;
}

ReportTimeline timeline_from_run(const trace::RunResult& run, int first_steady) {
  std::vector<ReportSpan> spans;
  spans.reserve(run.spans.size());
  for (const auto& s : run.spans)
    spans.push_back({static_cast<int>(s.rank), static_cast<int>(s.stream), s.start, s.end,
                     label_of(run.labels, s.label), program::to_string(s.phase), s.bytes, s.flops});
  const StepWindow w = timeline_window(run.steps, run.end_time, first_steady, spans);
  ReportTimeline t = make_timeline(std::move(spans), run.stream_names, w);
  t.steady_first_step = first_steady;
  return t;
}

std::string inline_svg(const std::string& svg, const std::string& id_prefix) {
  const auto begin = svg.find("<svg");
  if (begin == std::string::npos)
    throw Error("gnuplot output has no <svg> element");
  std::string s = svg.substr(begin);
  // Drop comments.
  for (auto c = s.find("<!--"); c != std::string::npos; c = s.find("<!--", c)) {
    const auto e = s.find("-->", c);
    s.erase(c, e == std::string::npos ? std::string::npos : e + 3 - c);
  }
  // Drop the namespace declarations: implicit for <svg> in HTML, and they are the only URLs gnuplot writes.
  for (const char* attr : {"xmlns:xlink=", "xmlns="}) {
    for (auto a = s.find(attr); a != std::string::npos; a = s.find(attr, a)) {
      const std::size_t q = a + std::char_traits<char>::length(attr);
      if (q >= s.size() || (s[q] != '"' && s[q] != '\''))
        break;
      const auto e = s.find(s[q], q + 1);
      s.erase(a, e == std::string::npos ? std::string::npos : e + 1 - a);
    }
  }
  // Prefix ids and references to them so several pictures can share one page.
  std::string out;
  out.reserve(s.size() + 4096);
  static const std::string kRefs[] = {" id=\"", " id='", "href=\"#", "href='#", "url(#"};
  std::size_t i = 0;
  while (i < s.size()) {
    bool hit = false;
    for (const auto& pat : kRefs)
      if (s.compare(i, pat.size(), pat) == 0) {
        out += pat + id_prefix;
        i += pat.size();
        hit = true;
        break;
      }
    if (!hit)
      out += s[i++];
  }
  return out;
}

std::string timeline_svg(const ReportTimeline& t) {
  constexpr double kWidth = 1100, kLeft = 170, kRight = 20, kTop = 28, kRow = 16, kGap = 4, kRankGap = 12;
  constexpr double plot_w = kWidth - kLeft - kRight;
  static_assert(plot_w == kReportTimelinePlotPx);
  const double dur = t.end_s - t.start_s;
  if (!(dur > 0))
    return "<svg class=\"timeline\" width=\"400\" height=\"20\"><text x=\"0\" y=\"14\">empty time window</text></svg>";
  const auto x_of = [&](double time) { return kLeft + (time - t.start_s) / dur * plot_w; };

  // Rows: each (rank, stream) with a span, in rank then stream order.
  std::vector<std::pair<int, int>> rows;
  {
    std::set<std::pair<int, int>> seen;
    for (const auto& s : t.spans)
      seen.insert({s.rank, s.stream});
    rows.assign(seen.begin(), seen.end());
  }
  std::map<std::pair<int, int>, double> row_y;
  double y = kTop;
  int prev_rank = rows.empty() ? 0 : rows.front().first;
  for (const auto& r : rows) {
    if (r.first != prev_rank)
      y += kRankGap;
    prev_rank = r.first;
    row_y[r] = y;
    y += kRow + kGap;
  }
  const double axis_y = y + 4;
  std::set<std::string> phases;
  for (const auto& s : t.spans)
    phases.insert(s.phase);
  const double legend_y = axis_y + 34;
  const double height = legend_y + 16;

  std::string h = fmt::format(
      "<svg class=\"timeline\" width=\"{0}\" height=\"{1:.0f}\" viewBox=\"0 0 {0} {1:.0f}\" "
      "font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n",
      kWidth, height);
  h += fmt::format("<title>stream timeline, step {}</title>\n", t.step);
  h += fmt::format("<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{:.0f}\" fill=\"#ffffff\"/>\n", kWidth, height);
  // Row labels and backgrounds.
  for (const auto& r : rows) {
    const double ry = row_y[r];
    h += fmt::format("<rect x=\"{}\" y=\"{:.1f}\" width=\"{}\" height=\"{}\" fill=\"#f4f4f4\"/>\n", kLeft, ry, plot_w,
                     kRow);
    h += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">rank {} {}</text>\n", kLeft - 6, ry + kRow - 4,
                     r.first, html_escape(t.stream_names[static_cast<std::size_t>(r.second)]));
  }
  // Time axis in ms from the window start.
  const double dur_ms = dur * 1e3;
  const double step_ms = nice_step(dur_ms, 8);
  h += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#333\"/>\n", kLeft, axis_y,
                   kLeft + plot_w, axis_y);
  for (int k = 0; k * step_ms <= dur_ms * (1 + 1e-9); ++k) {
    const double ms = k * step_ms;
    const double x = kLeft + ms / dur_ms * plot_w;
    h += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4:g}</text>\n",
        x, axis_y, axis_y + 4, axis_y + 16, ms);
  }
  h += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{} (ms)</text>\n", kLeft + plot_w / 2,
                   axis_y + 29,
                   t.step >= 0 ? fmt::format("time from the start of step {}", t.step)
                               : std::string("time from the start of the run"));
  // Spans, merged per lane at the drawing's resolution (a stage-3 step holds thousands of sub-pixel ops, each
  // with its tooltip, megabytes of page that draw no differently): a span joins the lane's current rectangle when
  // it begins less than a pixel after that ends and either the rectangle is still narrower than a pixel (it then
  // takes the colour of the phase with the most time in it) or the span is, and of the rectangle's phase. An op a
  // pixel wide or more keeps its own rectangle and tooltip. See kReportTimelinePlotPx.
  struct Block {
    const ReportSpan* first = nullptr;
    const ReportSpan* last = nullptr;
    double x0 = 0, x1 = 0;
    std::size_t ops = 0;
    double busy_s = 0, bytes = 0, flops = 0;
    std::vector<std::pair<std::string, std::pair<double, std::size_t>>> phases; // phase, (s, ops), first seen first
    [[nodiscard]] const std::string& phase() const { // the phase with the most time; the first seen on a tie
      const auto* best = &phases.front();
      for (const auto& p : phases)
        if (p.second.first > best->second.first)
          best = &p;
      return best->first;
    }
  };
  std::vector<const ReportSpan*> order;
  order.reserve(t.spans.size());
  for (const auto& s : t.spans)
    order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const ReportSpan* a, const ReportSpan* b) {
    return std::tie(a->rank, a->stream, a->start_s) < std::tie(b->rank, b->stream, b->start_s);
  });
  const auto draw = [&](const Block& b) {
    const ReportSpan& f = *b.first;
    const std::string& lane = t.stream_names[static_cast<std::size_t>(f.stream)];
    std::string tip;
    if (b.ops == 1) {
      tip = fmt::format("{} [{}] rank {} {}: start {:.3f} ms, duration {:.3f} ms", f.name, f.phase, f.rank, lane,
                        (f.start_s - t.start_s) * 1e3, (f.end_s - f.start_s) * 1e3);
    } else {
      std::string by_phase;
      for (const auto& [p, sn] : b.phases)
        by_phase += fmt::format("{}{} {} ({:.3f} ms)", by_phase.empty() ? "" : ", ", p, sn.second, sn.first * 1e3);
      tip = fmt::format(
          "{} ops closer than a pixel, rank {} {}: {} .. {}; start {:.3f} ms, end {:.3f} ms, busy "
          "{:.3f} ms; {}",
          b.ops, f.rank, lane, f.name, b.last->name, (f.start_s - t.start_s) * 1e3, (b.last->end_s - t.start_s) * 1e3,
          b.busy_s * 1e3, by_phase);
    }
    if (b.bytes > 0)
      tip += fmt::format(", {:.3f} GiB", b.bytes / kGiB);
    if (b.flops > 0)
      tip += fmt::format(", {:.3g} FLOP", b.flops);
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{}\" fill=\"{}\"><title>{}</title>"
        "</rect>\n",
        b.x0, row_y[{f.rank, f.stream}], std::max(b.x1 - b.x0, 0.5), kRow, phase_colour(b.phase()), html_escape(tip));
  };
  Block cur;
  for (const ReportSpan* s : order) {
    const double x0 = x_of(s->start_s);
    const double x1 = x_of(s->end_s);
    const bool same_lane = cur.ops > 0 && cur.first->rank == s->rank && cur.first->stream == s->stream;
    // Only a sub-pixel op joins (a wide one keeps its own rectangle and tooltip): into a sub-pixel rectangle, or a
    // wider one of its phase.
    if (!(same_lane && x0 - cur.x1 < 1.0 && x1 - x0 < 1.0 && (cur.x1 - cur.x0 < 1.0 || s->phase == cur.phase()))) {
      if (cur.ops > 0)
        draw(cur);
      cur = Block{};
      cur.first = s;
      cur.x0 = x0;
      cur.x1 = x1;
    }
    cur.last = s;
    cur.x1 = std::max(cur.x1, x1);
    ++cur.ops;
    cur.busy_s += s->end_s - s->start_s;
    cur.bytes += s->bytes;
    cur.flops += s->flops;
    auto it = std::find_if(cur.phases.begin(), cur.phases.end(), [&](const auto& p) { return p.first == s->phase; });
    if (it == cur.phases.end())
      it = cur.phases.insert(cur.phases.end(), {s->phase, {0.0, 0}});
    it->second.first += s->end_s - s->start_s;
    ++it->second.second;
  }
  if (cur.ops > 0)
    draw(cur);
  // Legend: the phases present, in the fixed phase order (unknown ones last, by name).
  double lx = kLeft;
  auto legend = [&](const std::string& p) {
    h += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{:.1f}\" "
        "y=\"{:.1f}\">{}</text>\n",
        lx, legend_y, phase_colour(p), lx + 14, legend_y + 9, html_escape(p));
    lx += 24 + 7.0 * static_cast<double>(p.size());
  };
  for (const auto& [p, c] : phase_colours())
    if (phases.erase(p) != 0)
      legend(p);
  for (const auto& p : phases)
    legend(p);
  return h + "</svg>";
}

std::string render_report_html(const ReportInput& in) {
  const std::string title = "zerosim report: " + (in.scenario.empty() ? std::string("run") : in.scenario);
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                  html_escape(title) + "</title>\n<script>" + kOnError + "</script>\n<style>" + kStyle +
                  "</style>\n</head>\n<body>\n";
  h += "<h1>" + html_escape(title) + "</h1>\n";
  h += "<p>Scenario <b>" + html_escape(in.scenario) + "</b>, " + std::to_string(in.variants.size()) +
       (in.variants.size() == 1 ? " variant" : " variants") + ", run directory <code>" + html_escape(in.run_dir) +
       "</code>, zerosim " + html_escape(version()) + ".</p>\n";
  // What was simulated and whether the ranks were folded, as the console's first line and its notes say.
  if (!in.simulated.empty())
    h += "<p id=\"simulated\">Simulated: " + html_escape(in.simulated) + ".</p>\n";
  std::vector<std::pair<std::string, std::string>> folds; // (label, note)
  for (const auto& v : in.variants)
    for (const auto& d : v.summary.diagnostics)
      if (d.rfind("ranks folded", 0) == 0)
        folds.emplace_back(v.label, d);
  const bool same_fold =
      folds.size() == in.variants.size() &&
      std::all_of(folds.begin(), folds.end(), [&](const auto& f) { return f.second == folds[0].second; });
  if (same_fold)
    h += "<p class=\"note\" id=\"folded\">Note: " + html_escape(folds.front().second) + ".</p>\n";
  else
    for (const auto& [label, note] : folds)
      h += "<p class=\"note\">Note (" + html_escape(label) + "): " + html_escape(note) + ".</p>\n";
  h += "<pre id=\"js-errors\"></pre>\n";
  std::string ooms;
  for (const auto& v : in.variants)
    if (v.summary.oom || !v.summary.fits)
      ooms += "<li><b>" + html_escape(v.label) + "</b>: " +
              html_escape(v.summary.oom
                              ? v.summary.oom_description
                              : fmt::format("does not fit: peak allocated {} GiB, nvidia-smi {} GiB, "
                                            "capacity {} GiB",
                                            report_gib(v.summary.peak_bytes), report_gib(v.summary.nvidia_smi_bytes),
                                            report_gib(v.summary.capacity_bytes))) +
              "</li>\n";
  if (!ooms.empty()) {
    h += "<section id=\"oom\">\n<h2>Out of memory</h2>\n<ul>\n" + ooms + "</ul>\n";
    for (const auto& v : in.variants)
      if (v.summary.oom && v.summary.steps_completed > 0) {
        h += "<p class=\"note\">With simulation.on_oom: continue the simulation goes on past an OOM, and the "
             "numbers of the steps after it are what a card with enough memory would show; with on_oom: stop the "
             "run ended at the OOM and has no step time (the steps before it are not those of a run that "
             "trains).</p>\n";
        break;
      }
    h += "</section>\n";
  }
  h += summary_section(in);
  h += breakdown_section(in);
  h += communication_section(in);
  h += attribution_section(in);
  h += plots_section(in);
  h += timeline_section(in);
  h += "<script>" + std::string(kOnLoad) + "</script>\n</body>\n</html>\n";
  return h;
}

ReportInput load_report_input(const std::string& run_dir) {
  const fs::path root(run_dir);
  require_run_dir(run_dir);
  ReportInput in;
  in.run_dir = run_dir;
  const fs::path summary_path = root / "summary.json";
  if (fs::exists(summary_path)) {
    const json s = read_json(summary_path);
    in.scenario = s.value("scenario", std::string());
    if (!s.contains("variants") || !s["variants"].is_array() || s["variants"].empty())
      throw Error(summary_path.string() + ": no completed variant to report");
    for (const auto& jv : s["variants"]) {
      if (!jv.is_object())
        throw Error(summary_path.string() + ": a variant is not an object");
      ReportVariant v;
      v.dir = jv.value("dir", std::string("."));
      v.label = jv.value("label", std::string());
      if (v.label.empty())
        v.label = in.scenario.empty() ? v.dir : in.scenario;
      v.summary = summary_of(jv.contains("summary") ? jv["summary"] : json(), summary_path);
      v.timeline = load_timeline(root / v.dir, v.summary.steady_first_step);
      // The first variant's scenario names what was simulated (the console's header does the same).
      if (in.variants.empty())
        if (const fs::path rp = root / v.dir / "result.json"; fs::exists(rp))
          if (const json r = read_json(rp); r.contains("scenario") && r["scenario"].is_object())
            in.simulated = scenario_headline_text(scenario_headline_from_json(r["scenario"].dump(), rp.string()));
      in.variants.push_back(std::move(v));
    }
    return in;
  }
  const fs::path result_path = root / "result.json";
  if (!fs::exists(result_path) && is_sweep_dir(run_dir))
    throw Error("'" + run_dir + "' is a sweep directory: `zerosim plot " + run_dir +
                "` draws the sweep; for one point's HTML report, run that point with `zerosim run` (its keys are "
                "in sweep.csv) and give its --out directory to `zerosim report`");
  if (!fs::exists(result_path))
    throw Error(no_run_files_error(run_dir, "report"));
  const json r = read_json(result_path);
  if (r.contains("scenario") && r["scenario"].is_object()) {
    in.scenario = r["scenario"].value("name", std::string());
    in.simulated = scenario_headline_text(scenario_headline_from_json(r["scenario"].dump(), result_path.string()));
  }
  ReportVariant v;
  v.dir = ".";
  v.label = r.value("variant", std::string());
  if (v.label.empty())
    v.label = in.scenario.empty() ? std::string("run") : in.scenario;
  v.summary = summary_of(r.contains("summary") ? r["summary"] : json(), result_path);
  v.timeline = load_timeline(root, v.summary.steady_first_step);
  in.variants.push_back(std::move(v));
  return in;
}

ScenarioHeadline scenario_headline_from_json(const std::string& scenario_text, const std::string& file) {
  try {
    const json j = json::parse(scenario_text);
    ScenarioHeadline l;
    l.model = j.at("model").at("name").get<std::string>();
    const json& c = j.at("cluster");
    // The preset with the scenario's changes; result.json files written before the label have the preset only.
    const std::string name = c.value("name", std::string());
    l.topology = name.empty() ? c.at("topology").get<std::string>() : name;
    l.nodes = c.at("nodes").get<int>();
    l.gpus_per_node = c.at("gpus_per_node").get<int>();
    l.gpu = j.at("gpu").at("name").get<std::string>();
    l.gpu_memory_bytes = j.at("gpu").at("memory_bytes").get<double>();
    const json& t = j.at("training");
    l.micro_batch = t.at("micro_batch").get<std::int64_t>();
    l.seq_len = t.at("seq_len").get<std::int64_t>();
    l.grad_accum = t.at("grad_accum").get<std::int64_t>();
    l.precision = t.at("precision").get<std::string>();
    l.flash_attention = t.at("flash_attention").get<bool>();
    // As written ("0.16", "0.16.0+cu118"); the loader accepted it, so it starts with major.minor[.patch].
    const std::string v = j.at("zero").at("deepspeed_version").get<std::string>();
    if (std::sscanf(v.c_str(), "%d.%d.%d", &l.deepspeed_version[0], &l.deepspeed_version[1], &l.deepspeed_version[2]) <
        2)
      throw Error("zero.deepspeed_version '" + v + "' is not a release");
    l.compare_key = j.value("compare_key", std::string());
    return l;
  } catch (const std::exception& e) {
    throw Error(file + ": malformed \"scenario\" (" + e.what() + ")");
  }
}

std::string base64_encode(const std::string& bytes) {
  namespace it = boost::archive::iterators;
  using Encoder = it::base64_from_binary<it::transform_width<std::string::const_iterator, 6, 8>>;
  std::string out(Encoder(bytes.begin()), Encoder(bytes.end()));
  out.append((3 - bytes.size() % 3) % 3, '='); // the iterators emit no padding
  return out;
}

std::vector<ReportPlot> render_report_plots(const std::string& run_dir) {
  const PlotRun run = load_plot_run(run_dir);
  const std::string gnuplot = find_gnuplot();
  ScratchDir tmp;
  std::vector<ReportPlot> plots;
  int n = 0;
  // `png`: a base64 data URI <img> (memory timelines, thousands of steps); else inline SVG (small charts).
  auto draw = [&](const std::string& title, bool png, const auto& make_script) {
    const std::string base = "plot" + std::to_string(n);
    const fs::path img = tmp.path() / (base + (png ? ".png" : ".svg"));
    const fs::path gp = tmp.path() / (base + ".gp");
    write_file_atomic(gp.string(), make_script(img.string(), png ? PlotFormat::PNG : PlotFormat::SVG));
    try {
      run_gnuplot(gnuplot, gp.string(), (tmp.path() / (base + ".log")).string(), img.string());
    } catch (const Error& e) { // this picture only: the others are still drawn
      plots.push_back({title, "<p class=\"note\">not drawn: " + html_escape(e.what()) + "</p>"});
      ++n;
      return;
    }
    std::string markup;
    if (png) {
      markup = "<img class=\"plot\" alt=\"" + html_escape(title) + "\" src=\"data:image/png;base64," +
               base64_encode(read_text(img)) + "\">";
    } else {
      markup = inline_svg(read_text(img), fmt::format("p{}-", n));
      if (const auto t = markup.find("<title>Gnuplot</title>"); t != std::string::npos)
        markup.replace(t, 22, "<title>" + html_escape(title) + "</title>");
    }
    plots.push_back({title, std::move(markup)});
    ++n;
  };
  for (const auto& v : run.variants) {
    if (v.memory_csv.empty())
      continue;
    std::ifstream in(v.memory_csv);
    if (!in)
      throw Error("cannot read " + v.memory_csv);
    const std::vector<MemoryCsvRow> rows = parse_memory_csv(in, v.memory_csv);
    const std::vector<int> ranks = memory_csv_ranks(rows);
    if (ranks.empty())
      continue;
    draw(fmt::format("Memory timeline: {}, rank {}", v.label, ranks.front()), true,
         [&](const std::string& out, PlotFormat f) {
           return memory_timeline_script(rows, ranks.front(), v, run.scenario, out, f);
         });
  }
  draw("Step-time breakdown", false,
       [&](const std::string& out, PlotFormat f) { return step_breakdown_script(run, out, f); });
  draw("Peak memory by tag", false,
       [&](const std::string& out, PlotFormat f) { return peak_memory_script(run, out, f); });
  return plots;
}

std::string write_report(const std::string& run_dir, const std::string& out_file) {
  ReportInput in = load_report_input(run_dir);
  try {
    in.plots = render_report_plots(run_dir);
  } catch (const Error& e) {
    in.plots_note = std::string("plots not drawn: ") + e.what();
  }
  const std::string html = render_report_html(in);
  write_file_atomic(out_file, html);
  return in.plots_note;
}

} // namespace zerosim::analysis
