// `zerosim largest SCENARIO`: the largest model (model.layers) or micro-batch (training.micro_batch) that still fits,
// per variant of the scenario: "does 7B fit on my card, and what is the biggest that does?". Each probe is one
// simulation in a forked child (apps/sim_child.hpp), without output files; the search is analysis/largest.hpp.
#include "analysis/largest.hpp"
#include "analysis/summary.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/sim_child.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const char* kLargestUsage =
    "usage: zerosim largest SCENARIO.yaml [--key model.layers|training.micro_batch] [--max N] "
    "[--headroom H] [--host-headroom H] [--set key=value]...";

/// The integer keys the search may vary: bigger values need more memory (more layers, more sequences).
std::int64_t key_value(const scenario::Scenario& s, const std::string& key) {
  return key == "model.layers" ? s.model.layers : s.training.micro_batch;
}

/// "10.99B" (1e9) or "350M" parameters.
std::string params_text(double p) {
  return p >= 1e9 ? fmt::format("{:.2f}B", p / 1e9) : fmt::format("{:.0f}M", p / 1e6);
}

/// Why a probe does not fit: its OOM, in one line.
std::string miss_reason(const analysis::RunSummary& s) {
  return s.oom_description.empty() ? std::string("does not fit") : s.oom_description;
}

/// The figures of a fitting probe, one line.
std::string fit_figures(const analysis::RunSummary& s) {
  std::string t = fmt::format("peak allocated {:.2f} GiB, reserved {:.2f} GiB, nvidia-smi {:.2f} of {:.2f} GiB",
                              s.peak_bytes / kGiB, s.peak_reserved_bytes / kGiB, s.nvidia_smi_bytes / kGiB,
                              s.capacity_bytes / kGiB);
  if (s.host_node_peak_bytes > 0)
    t += s.host_capacity_bytes > 0
             ? fmt::format("; host {:.1f} of {:.1f} GiB", s.host_node_peak_bytes / kGiB, s.host_capacity_bytes / kGiB)
             : fmt::format("; host {:.1f} GiB (host memory unlimited)", s.host_node_peak_bytes / kGiB);
  if (analysis::has_step_time(s))
    t += fmt::format("; step {:.4f} s", s.step_time_s);
  return t;
}

} // namespace

int largest_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim largest options");
  visible.add_options() //
      ("key", po::value<std::string>()->default_value("model.layers"),
       "the integer key to search: model.layers (model size at the preset's width) or training.micro_batch") //
      ("max", po::value<long long>(), "largest value tried (default and limit: 1000 layers, 4096 sequences)") //
      ("headroom", po::value<std::string>(),
       "GPU memory a fit must leave free, as zerosim plan --headroom: a size (1GiB) or a percentage of the card "
       "(5%); the memory a fit cannot give back (its nvidia-smi peak on the full card less what a failed "
       "cudaMalloc's retry releases) is at most the capacity less this, and a fit whose nvidia-smi peak is not is "
       "marginal; default 0") //
      ("host-headroom", po::value<std::string>(),
       "host RAM a fit must leave free on each node, as zerosim plan --host-headroom: a size (8GiB) or a percentage "
       "of cluster.host_memory (10%), which must be set; a fit's node host peak is at most it less this; default 0") //
      ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key (repeatable)") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "scenario", "largest", kLargestUsage, vm))
    return 0;
  const std::vector<std::string> files =
      vm.count("scenario") ? vm["scenario"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (files.size() != 1)
    throw UsageError("largest: expected one scenario file, got " + std::to_string(files.size()) + " (" + kLargestUsage +
                     ")");
  const std::string key = vm["key"].as<std::string>();
  if (key != "model.layers" && key != "training.micro_batch")
    throw UsageError("largest: --key " + key + ": expected model.layers or training.micro_batch");
  // model.layers stops at the loader's limit; a micro-batch of 4096 sequences is far past any card's memory.
  const long long limit = key == "model.layers" ? scenario::kMaxModelLayers : 4096;
  const long long max = vm.count("max") ? vm["max"].as<long long>() : limit;
  if (max < 1 || max > limit)
    throw UsageError(fmt::format("largest: --max {}: must be in [1, {}] for {}", max, limit, key));
  std::vector<std::string> sets =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  for (auto& s : sets)
    s = scenario::normalize_override(s);
  check_distinct_sets(sets);
  for (const auto& s : sets)
    if (s.rfind(key + "=", 0) == 0)
      throw UsageError("largest: --set " + s + ": the search sets " + key +
                       " itself (start from the scenario's value, "
                       "or bound it with --max)");
  const std::string file = files.front();
  const std::vector<scenario::Variant> variants = scenario::load_scenario(file, sets);
  if (variants.empty())
    throw Error("largest: " + file + ": the scenario expands to no variant");
  // A comparison that varies the searched key collapses to one run when the probe sets it (the loader's note).
  const bool collapses =
      !scenario::load_scenario(file,
                               [&] {
                                 auto p = sets;
                                 p.push_back(key + "=" + std::to_string(key_value(variants.front().scenario, key)));
                                 return p;
                               }())
           .front()
           .note.empty();
  const std::size_t searches = collapses ? 1 : variants.size();
  if (collapses)
    std::cout << "note: the scenario's compare: varies " << key << "; one search, from its first value\n";
  const std::string headroom_text = vm.count("headroom") ? vm["headroom"].as<std::string>() : "0";

  struct Found {
    std::string label;
    analysis::LargestSearch search;
    std::map<std::int64_t, analysis::RunSummary> runs;
    std::map<std::int64_t, bool> ok; ///< per probed value: it fits, headrooms included
    std::string answer = "none"; ///< for the closing table: "53 (10.99B params)"
    analysis::MarginalFit marginal; ///< the largest fit is marginal (analysis::marginal_fit, as summary.json's)
    bool capped = false; ///< every value up to --max fits
  };
  std::vector<Found> found;
  int status = 0;
  // The probes' children run in it; with every output file off they write nothing into it.
  const TempDir probe_dir("largest");
  // --headroom: memory a fit must leave free, by `zerosim plan`'s rule: the probe runs on the full card and fits when
  // it does not run out of memory and the memory it cannot give back (RunSummary::nvidia_smi_needed_bytes: the
  // nvidia-smi peak less the blocks held for other streams and cached segments a failed cudaMalloc's retry
  // releases) is at most the capacity less H. One rule for plan, largest and run --check: H covers what zerosim does
  // not model. A fit whose nvidia-smi peak does not stay H below the card keeps H only by cache flushes (retries,
  // each a device synchronize) and is marked marginal (MarginalFit::by_flushes), not rejected: the blocks held for
  // other streams follow the assumed host run-ahead (simulation.host_launch_queue), which can fill any card.
  // Checked for every variant before anything runs.
  std::vector<double> headrooms;
  for (std::size_t i = 0; i < searches; ++i)
    headrooms.push_back(headroom_text == "0"
                            ? 0.0
                            : parse_headroom("largest", headroom_text, variants[i].scenario.cluster.gpu.memory.value(),
                                             variants[i].label));
  // --host-headroom: the same rule for the node's host RAM (cluster.host_memory, which must then be set).
  std::vector<double> host_headrooms;
  for (std::size_t i = 0; i < searches; ++i)
    host_headrooms.push_back(vm.count("host-headroom")
                                 ? parse_host_headroom("largest", vm["host-headroom"].as<std::string>(),
                                                       variants[i].scenario.cluster.host_memory.value(),
                                                       "cluster.host_memory (e.g. --set cluster.host_memory=128GiB)",
                                                       variants[i].label)
                                 : 0.0);
  for (std::size_t i = 0; i < searches; ++i) {
    const scenario::Variant& base = variants[i];
    const double capacity = base.scenario.cluster.gpu.memory.value();
    const double headroom = headrooms[i];
    const double host_headroom = host_headrooms[i];
    const double host_capacity = base.scenario.cluster.host_memory.value();
    // The loader refuses more than kMaxLayerPasses layer passes (layers x GA x steps): the search stops below.
    // (on the scenario's own steps: a probe runs at most 3, but the answer must also run as the scenario is)
    const std::int64_t passes_per_layer =
        base.scenario.training.grad_accum * static_cast<std::int64_t>(base.scenario.simulation.steps);
    const std::int64_t variant_max =
        key == "model.layers"
            ? std::min<std::int64_t>(max, scenario::kMaxLayerPasses / std::max<std::int64_t>(1, passes_per_layer))
            : max;
    Found f;
    f.label = collapses ? std::string() : base.label;
    if (!f.label.empty())
      std::cout << "\n== variant " << f.label << "\n";
    if (headroom > 0)
      std::cout << fmt::format(
          "  (--headroom {:.2f} GiB: the memory a fit cannot give back on the full {:.2f} GiB card is at most "
          "{:.2f} GiB, zerosim plan's rule)\n",
          headroom / kGiB, capacity / kGiB, (capacity - headroom) / kGiB);
    if (host_headroom > 0)
      std::cout << fmt::format(
          "  (--host-headroom {:.2f} GiB: a fit's host memory peak per node is at most {:.2f} of {:.2f} GiB, zerosim "
          "plan's rule)\n",
          host_headroom / kGiB, (host_capacity - host_headroom) / kGiB, host_capacity / kGiB);
    // What a value means: the model's size, or the tokens of one micro-batch.
    const auto size_of = [&](std::int64_t value, const analysis::RunSummary& r) {
      return key == "model.layers" ? params_text(r.params) + " params"
                                   : fmt::format("{} tokens", value * base.scenario.training.seq_len);
    };
    const auto fits = [&](std::int64_t value) {
      auto probe_sets = sets;
      probe_sets.push_back(key + "=" + std::to_string(value));
      std::vector<scenario::Variant> vs = scenario::load_scenario(file, probe_sets);
      scenario::Variant v = std::move(vs.at(collapses ? 0 : i));
      v.scenario.outputs.result_json = false;
      v.scenario.outputs.trace_json = false;
      v.scenario.outputs.memory_csv = false;
      v.scenario.simulation.on_oom = scenario::OomPolicy::STOP; // the verdict is the same, and comes sooner
      // Steps after the first steady one repeat its memory (the warm-up step allocates the lazy optimizer state, the
      // next settles the allocator): 3 decide the fit as well as more, at a fraction of the time.
      v.scenario.simulation.steps = std::min(v.scenario.simulation.steps, 3);
      const SimChild child = start_simulation(v, probe_dir.path().string());
      const std::string msg = read_to_eof(child.fd);
      ::close(child.fd);
      analysis::RunSummary s;
      std::string why;
      if (!collect_simulation(child.pid, msg, s, why))
        throw Error(fmt::format("largest: {} at {}={}: the simulation failed: {}", file, key, value, why));
      std::string miss = s.fits ? headroom_miss(s.nvidia_smi_bytes, analysis::nvidia_smi_needed(s), capacity, headroom)
                                : std::string();
      if (std::string host_miss =
              s.fits ? host_headroom_miss(s.host_node_peak_bytes, host_capacity, host_headroom) : std::string();
          !host_miss.empty())
        miss += (miss.empty() ? "" : "; ") + host_miss;
      const bool over = !miss.empty(); // fits the card and the host, not a headroom
      const bool ok = s.fits && !over;
      if (over)
        s.oom_description = miss;
      // An OOM run stops at its first failed request: what it then needed, not its peak so far, is the figure.
      const std::string figure =
          ok              ? fmt::format("nvidia-smi {:.2f} GiB", s.nvidia_smi_bytes / kGiB)
          : over          ? s.oom_description
          : s.oom_on_host ? std::string("host memory exceeded")
          : s.oom_gpu_demand_bytes > 0
              ? fmt::format(
                    "stopped at its first failed cudaMalloc, which would have taken the GPU to {:.2f} "
                    "GiB; the whole step needs more",
                    s.oom_gpu_demand_bytes / kGiB)
              : std::string("out of memory");
      // A marginal fit says so on its own line, with why (as `zerosim run` calls it for the same value).
      const analysis::MarginalFit marginal = ok ? analysis::marginal_fit(s, headroom) : analysis::MarginalFit{};
      std::cout << fmt::format("  {}={:<6} {} ({}, {}{})\n", key, value,
                               ok     ? (marginal.marginal ? "fits ~" : "fits")
                               : over ? "over"
                                      : "OOM ",
                               size_of(value, s), figure,
                               marginal.marginal ? "; marginal: " + analysis::marginal_reason(marginal)
                                                 : std::string());
      std::cout.flush();
      f.runs.emplace(value, std::move(s));
      f.ok[value] = ok;
      return ok;
    };
    // Fits and is not marginal: from the probes already run, else a new probe (which prints its line).
    const auto clean = [&](std::int64_t value) {
      if (!f.ok.count(value))
        fits(value);
      return f.ok.at(value) && !analysis::marginal_fit(f.runs.at(value), headroom).marginal;
    };
    f.search = analysis::search_largest(key_value(base.scenario, key), variant_max, fits);
    const auto& r = f.search;
    if (r.largest == 0) {
      std::cout << fmt::format("  no {} fits: 1 {}\n", key, miss_reason(f.runs.at(1)));
      status = 1;
    } else {
      const analysis::RunSummary& s = f.runs.at(r.largest);
      // The closing table marks an answer at the search's upper end (">=": the limit, not the memory, stopped it)
      // and a marginal fit ("~": analysis::marginal_fit, what `zerosim run` calls marginal for the same variant).
      f.marginal = analysis::marginal_fit(s, headroom);
      f.answer = fmt::format("{}{} ({}){}", r.first_miss == 0 ? ">=" : "", r.largest, size_of(r.largest, s),
                             f.marginal.marginal ? " ~" : "");
      f.capped = r.first_miss == 0;
      // A marginal answer: the largest value below it that fits without being marginal, by the same search from the
      // largest clean probe so far (values not probed yet are simulated; marginal fits are assumed to lie above the
      // clean ones, as fits above the misses).
      std::int64_t clean_largest = r.largest;
      if (f.marginal.marginal) {
        std::int64_t start = 1;
        for (const auto& [value, ok] : f.ok)
          if (value < r.largest && ok && !analysis::marginal_fit(f.runs.at(value), headroom).marginal)
            start = std::max(start, value);
        clean_largest = r.largest > 1 ? analysis::search_largest(start, r.largest - 1, clean).largest : 0;
      }
      std::cout << fmt::format("  largest {} that fits: {} ({}){}\n    {}\n", key, r.largest, size_of(r.largest, s),
                               f.marginal.marginal ? "; marginal: " + analysis::marginal_detail(s, headroom)
                                                   : std::string(),
                               fit_figures(s));
      if (f.marginal.marginal && clean_largest > 0) {
        const analysis::RunSummary& c = f.runs.at(clean_largest);
        std::cout << fmt::format("  largest {} that fits and is not marginal: {} ({})\n    {}\n", key, clean_largest,
                                 size_of(clean_largest, c), fit_figures(c));
        f.answer += fmt::format("; not marginal: {} ({})", clean_largest, size_of(clean_largest, c));
      } else if (f.marginal.marginal) {
        std::cout << fmt::format("  no {} fits without being marginal\n", key);
        f.answer += "; none not marginal";
      }
      if (r.first_miss > 0)
        std::cout << fmt::format("  {} ({}): {}\n", r.first_miss, size_of(r.first_miss, f.runs.at(r.first_miss)),
                                 miss_reason(f.runs.at(r.first_miss)));
      else
        std::cout
            << fmt::format("  every value up to {} fits\n",
                           variant_max < max
                               ? fmt::format("{}, the most zerosim simulates at GA {} x {} steps (layers x GA x steps "
                                             "<= {})",
                                             variant_max, base.scenario.training.grad_accum,
                                             base.scenario.simulation.steps, scenario::kMaxLayerPasses)
                           : vm.count("max") ? fmt::format("--max {}", max)
                                             : fmt::format("{}, the most zerosim simulates", max));
    }
    found.push_back(std::move(f));
  }
  if (found.size() > 1) {
    std::cout << "\nlargest " << key << " per variant:\n";
    std::size_t width = 0;
    for (const auto& f : found)
      width = std::max(width, f.label.size());
    for (const auto& f : found)
      std::cout << fmt::format("  {:<{}}  {}\n", f.label, width, f.answer);
    if (std::any_of(found.begin(), found.end(), [](const Found& f) { return f.capped; }))
      std::cout << "  >= : fits at the largest value tried (the search's limit, not the memory, ended it)\n";
    analysis::MarginalFit any_marginal; // which reasons the `~` of the answers have, for the legend
    for (const auto& f : found)
      any_marginal |= f.marginal;
    if (any_marginal.marginal)
      std::cout << fmt::format("  ~ : a marginal fit, as `zerosim run` reports it: {}\n",
                               analysis::marginal_legend(any_marginal));
  }
  // An answer that used host memory on a host without a size (the desktop presets) is not what a real machine fits.
  double unlimited_host = 0;
  for (const auto& f : found)
    if (f.search.largest > 0) {
      const analysis::RunSummary& s = f.runs.at(f.search.largest);
      if (s.host_capacity_bytes <= 0)
        unlimited_host = std::max(unlimited_host, s.host_node_peak_bytes);
    }
  if (unlimited_host > 0)
    std::cout << fmt::format(
        "note: host memory is unlimited here (cluster.host_memory unset) and an answer uses up to "
        "{:.1f} GiB of it; give your machine's RAM with --set cluster.host_memory=SIZE (e.g. "
        "64GiB), or offload to NVMe (zero.offload_optimizer=nvme) when the host is the limit\n",
        unlimited_host / kGiB);
  std::cout << "(the search assumes that a larger value never fits where a smaller one does not: near a marginal fit "
               "the caching allocator can break that; try the values around the answer with zerosim run --set "
            << key << "=N)\n";
  return status;
}

} // namespace zerosim::cli
