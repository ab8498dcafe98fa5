// Command-line handling shared by the `zerosim` subcommands that take positional arguments (run, estimate, sweep,
// merge): Boost.program_options parsing with one hidden positional option, the usage error and --help.
#pragma once

#include "analysis/summary.hpp"
#include "apps/cli.hpp"
#include "sim/error.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/units.hpp"

#include <fmt/format.h>

#include <boost/program_options.hpp>

#include <cctype>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zerosim::cli {

/// A `--model` value as a scenario file would take it: a config.json path, or a Hugging Face snapshot directory
/// (one holding a config.json), made absolute, since the loader reads paths relative to the scenario file and the
/// subcommands write theirs into a temporary one; a preset name unchanged.
[[nodiscard]] inline std::string model_ref_for_scenario(const std::string& ref) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool json = ref.size() > 5 && ref.compare(ref.size() - 5, 5, ".json") == 0;
  const bool path =
      json || ref.find('/') != std::string::npos || fs::is_regular_file(fs::path(ref) / "config.json", ec);
  return path ? fs::absolute(ref).string() : ref;
}

/// The whole of `text` as a finite number (std::stod must use every character), or nullopt. The option parsers of
/// the subcommands add their own range check and message.
[[nodiscard]] inline std::optional<double> parse_finite(const std::string& text) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

/// A count written as a finite number with an optional suffix K, M, B or G, T (1e3, 1e6, 1e9, 1e12; either case):
/// "300B", "2851M", "6.7b", "1e9" -> its value; nullopt when the rest is not a finite number (parse_finite). The
/// caller checks the range (positive, at least 1, ...) and names its option in the message.
[[nodiscard]] inline std::optional<double> parse_scaled_count(std::string text) {
  double scale = 1;
  if (!text.empty())
    switch (std::toupper(static_cast<unsigned char>(text.back()))) {
    case 'K':
      scale = 1e3;
      break;
    case 'M':
      scale = 1e6;
      break;
    case 'B':
    case 'G':
      scale = 1e9;
      break;
    case 'T':
      scale = 1e12;
      break;
    default:
      break;
    }
  if (scale != 1)
    text.pop_back();
  const std::optional<double> v = parse_finite(text);
  if (!v || !std::isfinite(*v * scale))
    return std::nullopt;
  return *v * scale;
}

/// Parses `args` against `visible` (which must define a bool switch "help") plus a hidden option `positional`
/// (a std::vector<std::string>) that collects every positional argument, storing into `vm`.
/// Returns false when --help was given: "<usage>\n\n<options>\n" is then printed on stdout and the caller returns 0.
/// Throws UsageError "<command>: <program_options message> (<usage>)" on an unknown or malformed option.
[[nodiscard]] inline bool parse_command_line(const std::vector<std::string>& args,
                                             const boost::program_options::options_description& visible,
                                             const char* positional, const std::string& command, const char* usage,
                                             boost::program_options::variables_map& vm) {
  namespace po = boost::program_options;
  po::options_description hidden;
  hidden.add_options()(positional, po::value<std::vector<std::string>>());
  po::options_description all;
  all.add(visible).add(hidden);
  po::positional_options_description pos;
  pos.add(positional, -1);
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(command + ": " + e.what() + " (" + usage + ")");
  }
  if (vm["help"].as<bool>()) {
    std::cout << usage << "\n\n" << visible << "\n";
    return false;
  }
  return true;
}

/// Throws ScenarioError ("<cli>", the key) when two `--set` values name the same key (blanks around it ignored, as
/// scenario::normalize_override does): the later one would silently replace the earlier.
inline void check_distinct_sets(const std::vector<std::string>& sets) {
  std::vector<std::pair<std::string, std::string>> seen; // key, value
  for (const std::string& raw : sets) {
    const std::string s = scenario::normalize_override(raw);
    const std::size_t eq = s.find('=');
    if (eq == std::string::npos)
      continue; // the caller reports a set without '='
    const std::string key = s.substr(0, eq);
    for (const auto& [k, v] : seen)
      if (k == key)
        throw ScenarioError("<cli>", 0, key,
                            "--set gives this key twice ('" + v + "', then '" + s.substr(eq + 1) + "')",
                            "keep one of them");
    seen.emplace_back(key, s.substr(eq + 1));
  }
}

/// A memory margin option `option` of `command` (--headroom of the GPU, --host-headroom of the node's host RAM):
/// "2GiB", "1.5GB" (scenario byte units) or "10%" of `capacity` -> bytes, in [0, capacity). `what` names the memory
/// in the range error ("the GPU's", "the node's host RAM of"); `variant` (a compare: variant's label, "" for none) is
/// named there too, as variants may differ. Throws UsageError "<command>: <option> ...".
[[nodiscard]] inline double parse_memory_margin(const std::string& command, const std::string& option,
                                                const std::string& text, double capacity, const std::string& what,
                                                const std::string& variant) {
  double bytes = 0;
  if (!text.empty() && text.back() == '%') {
    std::size_t used = 0;
    double pct = -1;
    try {
      pct = std::stod(text.substr(0, text.size() - 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() - 1 || !(pct >= 0 && pct < 100))
      throw UsageError(command + ": " + option + ": expected a percentage in [0, 100) like 10%, got '" + text + "'");
    bytes = capacity * pct / 100.0;
  } else {
    try {
      bytes = scenario::parse_bytes(text, {"<cli>", 0, option}).value();
    } catch (const ScenarioError&) {
      throw UsageError(command + ": " + option +
                       ": expected memory with a unit (e.g. 2GiB, 1.5GB) or a percentage (10%), got '" + text + "'");
    }
    if (!(bytes >= 0 && bytes < capacity))
      throw UsageError(fmt::format("{}: {} {}: must be at least 0 and below {} {:.2f} GiB{}", command, option, text,
                                   what, capacity / kGiB,
                                   variant.empty() ? std::string() : " (variant '" + variant + "')"));
  }
  return bytes;
}

/// --headroom of `command` (plan, largest, run): "2GiB", "1.5GB" (scenario byte units) or "10%" of `capacity` ->
/// bytes, in [0, capacity). `variant` (a compare: variant's label, "" for none) is named in the capacity error, as
/// variants may have GPUs of different sizes. Throws UsageError "<command>: --headroom ...".
[[nodiscard]] inline double parse_headroom(const std::string& command, const std::string& text, double capacity,
                                           const std::string& variant = "") {
  return parse_memory_margin(command, "--headroom", text, capacity, "the GPU's", variant);
}

/// --host-headroom of `command` (plan, largest, run): host RAM a fit must leave free on each node, "8GiB" or "10%" of
/// `host_capacity` (cluster.host_memory per node, B) -> bytes, in [0, host_capacity). A node without a host memory
/// size (0 = unlimited) has nothing to keep free: UsageError naming `how_to_set` (the key or option that gives it)
/// and `variant` ("" for none).
[[nodiscard]] inline double parse_host_headroom(const std::string& command, const std::string& text,
                                                double host_capacity, const std::string& how_to_set,
                                                const std::string& variant = "") {
  if (!(host_capacity > 0))
    throw UsageError(command + ": --host-headroom " + text + ": the node's host RAM is not given" +
                     (variant.empty() ? std::string() : " (variant '" + variant + "')") +
                     " (cluster.host_memory unset: unlimited), so nothing can be kept free of it; give it with " +
                     how_to_set);
  return parse_memory_margin(command, "--host-headroom", text, host_capacity, "the node's host RAM of", variant);
}

/// --headroom's test (plan, largest, run --check) is analysis::leaves_headroom, which summary.json's `marginal` uses too.
using analysis::leaves_headroom;

/// Why a run that fits the card (RunSummary::fits) misses --headroom, in the words of largest and run --check:
/// "leaves less than --headroom free: it cannot give back 3.70 GiB > 3.60 GiB (nvidia-smi 3.80 GiB)". The gate's
/// figure is `needed_bytes` (RunSummary::nvidia_smi_needed_bytes: the nvidia-smi peak `nvidia_smi_bytes` less what a
/// failed cudaMalloc's retry gives back) against `capacity` - `headroom`, B; GiB = 2^30 B. "" when it leaves
/// `headroom` free (leaves_headroom).
[[nodiscard]] inline std::string headroom_miss(double nvidia_smi_bytes, double needed_bytes, double capacity,
                                               double headroom) {
  if (leaves_headroom(needed_bytes, capacity, headroom))
    return {};
  return fmt::format("leaves less than --headroom free: it cannot give back {:.2f} GiB > {:.2f} GiB{}",
                     needed_bytes / kGiB, (capacity - headroom) / kGiB,
                     nvidia_smi_bytes - needed_bytes >= kMiB
                         ? fmt::format(" (nvidia-smi {:.2f} GiB, of which a cudaMalloc retry gives back {:.2f} GiB)",
                                       nvidia_smi_bytes / kGiB, (nvidia_smi_bytes - needed_bytes) / kGiB)
                         : std::string(" (= nvidia-smi)"));
}

/// Why a run that fits misses --host-headroom, in the words of plan, largest and run --check: "leaves less than
/// --host-headroom free: host RAM 121.40 GiB per node > 115.20 GiB" (its node's host memory peak against
/// `host_capacity` - `host_headroom`, B; GiB = 2^30 B); "" when it leaves `host_headroom` free (leaves_headroom) or
/// the host memory is unlimited (`host_capacity` 0).
[[nodiscard]] inline std::string host_headroom_miss(double host_node_peak_bytes, double host_capacity,
                                                    double host_headroom) {
  if (!(host_capacity > 0) || leaves_headroom(host_node_peak_bytes, host_capacity, host_headroom))
    return {};
  return fmt::format("leaves less than --host-headroom free: host RAM {:.2f} GiB per node > {:.2f} GiB",
                     host_node_peak_bytes / kGiB, (host_capacity - host_headroom) / kGiB);
}

/// The step --max-step-time tests (plan, run --check) with --time-margin applied: `margin` x `step_time_s`, followed
/// by " (1.25 x 0.8 s simulated)" when `margin` > 1; s. The figure both commands print.
[[nodiscard]] inline std::string margined_step_text(double step_time_s, double margin) {
  return fmt::format("{:.4g} s{}", margin * step_time_s,
                     margin > 1 ? fmt::format(" ({:.4g} x {:.4g} s simulated)", margin, step_time_s) : std::string());
}

/// "30d", "12h", "90m", "3600s", "500ms" -> seconds, for option `opt` of `command` (plan, run; its errors name both
/// and `example`). Throws UsageError on a missing unit, text that is not a number, or a value that is not positive
/// and finite.
[[nodiscard]] inline double parse_duration(const std::string& command, const std::string& opt, const std::string& text,
                                           const std::string& example) {
  static const std::map<std::string, double> kUnit{{"ms", 1e-3}, {"s", 1},     {"m", 60},
                                                   {"h", 3600},  {"d", 86400}, {"w", 604800}};
  // The longest unit the text ends with ("500ms" is milliseconds, not "500m" seconds).
  std::string unit;
  for (const auto& [u, factor] : kUnit)
    if (text.size() > u.size() && text.compare(text.size() - u.size(), u.size(), u) == 0 && u.size() > unit.size())
      unit = u;
  if (unit.empty())
    throw UsageError(command + ": " + opt + ": expected a duration with a unit (ms, s, m, h, d, w), e.g. " + example +
                     ", got '" + text + "'");
  const std::string number = text.substr(0, text.size() - unit.size());
  const std::optional<double> v = parse_finite(number);
  // "1us" ends in "s" but "1u" is no number: the unit is what is wrong, so the message names the accepted ones.
  if (!v)
    throw UsageError(command + ": " + opt + ": expected a finite number and one of the units ms, s, m, h, d, w, e.g. " +
                     example + ", got '" + text + "'");
  if (!(*v > 0))
    throw UsageError(command + ": " + opt + ": expected a positive duration like " + example + ", got '" + text + "'");
  return *v * kUnit.at(unit);
}

/// --time-margin (plan, run --check): a factor from 1 (the simulated best case) to 100 (above it the days and costs
/// overflow to inf and no margin is meant). Throws UsageError naming the option.
[[nodiscard]] inline double parse_time_margin(const std::string& command, const std::string& text) {
  const std::optional<double> v = parse_finite(text);
  if (!v || !(*v >= 1) || *v > 100)
    throw UsageError(command +
                     ": --time-margin: expected a factor from 1 to 100 (e.g. 1.3: real steps 30 % longer than "
                     "simulated), got '" +
                     text + "'");
  return *v;
}

/// Throws UsageError "<command>: <option> <dir>: is the filesystem root; ..." when `dir` resolves to the root
/// directory ("/", "//", "/usr/.."): a run's or sweep's files and variant folders would land among the system's.
/// `option` names where the directory came from ("--out", or "outputs.dir" of a scenario).
inline void check_out_not_root(const std::string& command, const std::string& option,
                               const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(dir, ec), ec);
  if (ec)
    p = fs::absolute(dir, ec).lexically_normal();
  if (!p.empty() && p == p.root_path())
    throw UsageError(command + ": " + option + " " + dir.string() +
                     ": is the filesystem root; give a directory of its own for the outputs, e.g. --out out/my-run");
}

} // namespace zerosim::cli
