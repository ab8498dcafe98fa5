// `zerosim collective`: an nccl-tests-style sweep of one collective on a topology preset. Each size is simulated in
// its own forked child (SimGrid's Engine is one per process); the parent prints size, time, algbw and busbw
// (nccl-tests doc/PERFORMANCE.md: algbw = S / t; busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for
// all-gather / reduce-scatter). --timing torch-loop adds the per-call cost of a torch.distributed call to each time,
// as a torch benchmark measures it (sim/collectives/benchmark_timing.hpp).
#include "analysis/result_json.hpp"
#include "apps/cli.hpp"
#include "apps/sim_child.hpp"
#include "apps/topology_option.hpp"
#include "sim/collectives/benchmark_timing.hpp"
#include "sim/collectives/collective_plan.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/units.hpp"
#include "topologies/builder/platform_builder.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <boost/program_options.hpp>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace po = boost::program_options;

namespace zerosim::cli {
namespace {

const char* kUsage =
    "usage: zerosim collective --topology PRESET|TOPOLOGY.yaml|SCENARIO.yaml [--nodes N] --op "
    "all_reduce|all_gather|reduce_scatter|reduce "
    "--sizes LO:HI|SIZE|SIZE,SIZE,... [--algorithm auto|ring|tree|hierarchical|nvls|direct] "
    "[--protocol auto|ll|ll128|simple|none] [--fidelity flow|analytic|chunk] [--fold auto|on|off] "
    "[--timing nccl-tests|torch-loop] [--set KEY=VALUE]... [--fit FILE]";

/// `--set` values as the scenario loader reads them (scenario::normalize_override): cluster keys only, `gpu.X` and
/// `cpu.X` (the key table's names, docs/scenario-reference.md) as short for cluster.gpu.X / cluster.cpu.X. Keys this
/// command sets from an option of its own are refused, naming the option (the option would otherwise be overridden
/// in silence while the header names its value); so is any key outside the cluster (this command simulates one
/// collective, no model or training). Each key must be known and its value valid: the loader checks that with
/// `zerosim run --set`'s own errors (load_cluster).
std::vector<std::string> cluster_overrides(const std::vector<std::string>& sets) {
  std::vector<std::string> out;
  for (const std::string& raw : sets) {
    std::string o = scenario::normalize_override(raw);
    if (o.rfind("--", 0) == 0)
      throw UsageError("collective: --set needs KEY=VALUE, got the option '" + o + "' (" + kUsage + ")");
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw ScenarioError("<cli>", 0, o.empty() ? std::string("--set") : o, "--set needs key=value, got '" + o + "'");
    if (o.rfind("gpu.", 0) == 0 || o.rfind("cpu.", 0) == 0)
      o = "cluster." + o;
    const std::string key = o.substr(0, o.find('='));
    static const std::vector<std::pair<std::string, std::string>> by_option = {{"cluster.topology", "--topology"},
                                                                               {"cluster.nodes", "--nodes"},
                                                                               {"cluster.collective_algorithm",
                                                                                "--algorithm"},
                                                                               {"cluster.collective_protocol",
                                                                                "--protocol"},
                                                                               {"simulation.fidelity", "--fidelity"},
                                                                               {"simulation.fold", "--fold"}};
    for (const auto& [k, option] : by_option)
      if (key == k)
        throw UsageError("collective: --set " + key + ": zerosim collective sets this key from " + option + "; use " +
                         option);
    if (key.rfind("cluster.", 0) != 0 || key.size() == 8)
      throw UsageError("collective: --set " + key +
                       ": only cluster.* and gpu.* keys apply to `zerosim collective` (gpu.X and cpu.X are short for "
                       "cluster.gpu.X and cluster.cpu.X)");
    out.push_back(std::move(o));
  }
  return out;
}

/// The cluster's name as the output headers show it: the preset, plus the --set overrides that changed it, e.g.
/// "dgx-h100 (--set cluster.nccl_channels=2)", as the loader labels a changed GPU preset, so a saved table says
/// which settings produced it.
std::string cluster_label(const std::string& topology, const std::vector<std::string>& sets) {
  std::string label = topology;
  for (std::size_t i = 0; i < sets.size(); ++i)
    label += (i == 0 ? " (--set " : ", ") + sets[i];
  return sets.empty() ? label : label + ")";
}

program::CollectiveKind parse_op(const std::string& s) {
  if (s == "all_reduce")
    return program::CollectiveKind::ALL_REDUCE;
  if (s == "all_gather")
    return program::CollectiveKind::ALL_GATHER;
  if (s == "reduce_scatter")
    return program::CollectiveKind::REDUCE_SCATTER;
  if (s == "reduce")
    return program::CollectiveKind::REDUCE;
  const std::string mean = scenario::did_you_mean(s, {"all_reduce", "all_gather", "reduce_scatter", "reduce"});
  throw UsageError("collective: --op: unknown collective '" + s + "'" + (mean.empty() ? "" : ": " + mean) +
                   " (all_reduce, all_gather, reduce_scatter, reduce)");
}

/// The largest --sizes value, in bytes: 1e15 B (1 PB), the limit `run` puts on a GPU's memory (today's largest hold
/// under 300 GB). Above about 5e18 B the bytes a ring rank sends (2(n-1)/n x size) no longer fit the 64-bit byte
/// count of a simulated transfer, so the flow fidelity's times would stop growing.
constexpr double kMaxCollectiveBytes = 1e15;

/// The forms --sizes takes, for its errors and --help.
constexpr const char* kSizesForms =
    "SIZE, LO:HI (x2 steps) or a list SIZE,SIZE,..., e.g. 1MiB, 1KiB:16GiB or "
    "8B,64KiB,1MiB";

/// One size of --sizes (`text` is one element of `whole`, the option's value), in bytes. Throws UsageError
/// "collective: --sizes: ..." naming the forms --sizes takes; for nccl-tests' K/M/G suffixes (-b 1K means 1024 B)
/// it names the binary and the decimal unit.
double parse_one_size(const std::string& text, const std::string& whole) {
  try {
    return scenario::parse_bytes(text, scenario::ValueLocation{"<cli>", 0, "--sizes"}).value();
  } catch (const ScenarioError& e) {
    std::string what = e.what();
    const std::string lead = "<cli>: --sizes: ";
    if (what.rfind(lead, 0) == 0)
      what = what.substr(lead.size());
    // The number and its suffix: 1K, 1KB, 4m, 2Gb ... are nccl-tests' binary units.
    const auto digits = text.find_first_not_of("0123456789.");
    const std::string number = text.substr(0, digits);
    std::string suffix = digits == std::string::npos ? "" : text.substr(digits);
    for (char& c : suffix)
      c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    static const std::vector<std::tuple<std::string, std::string, std::string, std::string>> prefixes =
        {{"K", "KiB", "kB", "1024"}, {"M", "MiB", "MB", "1048576"}, {"G", "GiB", "GB", "1073741824"}};
    for (const auto& [p, bin, dec, factor] : prefixes)
      if (!number.empty() && (suffix == p || suffix == p + "B"))
        throw UsageError(
            fmt::format("collective: --sizes: '{}' is ambiguous: nccl-tests' -b 1{} means {} B; write "
                        "{}{} (1 {} = {} B) or {}{} (1 {} = 1{} B)",
                        text, p, factor, number, bin, bin, factor, number, dec, dec,
                        p == "K"   ? "000"
                        : p == "M" ? "000000"
                                   : "000000000"));
    throw UsageError("collective: --sizes: " + what + (whole == text ? "" : " (in '" + whole + "')") +
                     "; --sizes takes " + kSizesForms);
  }
}

/// "1KiB:16GiB" -> 1 KiB, 2 KiB, ..., 16 GiB (x2 per step, nccl-tests -f 2); "8MiB" -> {8 MiB}; "8B,64KiB,1MiB" ->
/// those sizes in that order (nccl-tests users run a few points). Throws UsageError for a size that is not
/// positive, below 1 B or not whole bytes (a collective moves whole elements), or above kMaxCollectiveBytes.
std::vector<double> parse_sizes(const std::string& s) {
  const auto check_whole = [&](double size) {
    if (size > 0 && (size < 1 || size != std::floor(size)))
      throw UsageError(
          fmt::format("collective: --sizes: {:.6g} B is not a whole number of bytes (at least 1 B), got '{}'", size,
                      s));
  };
  const auto check_limit = [&](double size) {
    if (size > kMaxCollectiveBytes)
      throw UsageError(
          fmt::format("collective: --sizes: {:.4g} B is above the limit of 1e15 B (1 PB) per collective, thousands "
                      "of times any GPU's memory, got '{}'",
                      size, s));
  };
  if (s.find(',') != std::string::npos) {
    if (s.find(':') != std::string::npos)
      throw UsageError(std::string("collective: --sizes: a list cannot hold a range LO:HI, got '") + s +
                       "'; --sizes takes " + kSizesForms);
    std::vector<double> out;
    std::size_t from = 0;
    for (;;) {
      const auto comma = s.find(',', from);
      const std::string one = s.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
      const double size = one.empty() ? 0.0 : parse_one_size(one, s);
      if (!(size > 0))
        throw UsageError("collective: --sizes: expected a positive size in the list, got '" + one + "' in '" + s + "'");
      check_whole(size);
      check_limit(size);
      out.push_back(size);
      if (comma == std::string::npos)
        return out;
      from = comma + 1;
    }
  }
  const auto colon = s.find(':');
  if (colon == std::string::npos) {
    const double size = parse_one_size(s, s);
    if (!(size > 0))
      throw UsageError(std::string("collective: --sizes: expected a positive size, got '") + s + "'; --sizes takes " +
                       kSizesForms);
    check_whole(size);
    check_limit(size);
    return {size};
  }
  const double lo = parse_one_size(s.substr(0, colon), s);
  const double hi = parse_one_size(s.substr(colon + 1), s);
  if (!(lo > 0) || hi < lo)
    throw UsageError("collective: --sizes: expected LO:HI with 0 < LO <= HI, got '" + s + "'");
  check_whole(lo); // LO x 2^k is then whole too
  check_limit(hi);
  std::vector<double> out;
  for (double x = lo; x <= hi * (1 + 1e-12); x *= 2)
    out.push_back(x);
  return out;
}

/// Simulates one collective of `size` bytes in a child process; returns its time in seconds, or a negative value
/// after printing why the child failed.
double simulate_in_child(const scenario::ClusterSpec& cluster, program::CollectiveKind kind, double size,
                         const engine::EngineOptions& options) {
  std::cout.flush();
  std::fflush(nullptr);
  int fds[2];
  if (::pipe(fds) != 0)
    throw Error(std::string("cannot create a pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0)
    throw Error(std::string("cannot fork a simulation process: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    std::string msg;
    int code = 0;
    try {
      program::ProgramBuilder b;
      b.add_group("world");
      auto s = b.add_stream("comm", program::StreamKind::COMM);
      b.collective(s, program::Phase::GRAD_REDUCE, program::to_string(kind), kind, Bytes(size));
      const auto r = engine::run_simulation(cluster, b.build(1), options);
      msg = r.finished ? fmt::format("T{:.17g}", r.end_time) : "Ethe simulation did not finish";
    } catch (const std::exception& e) {
      msg = std::string("E") + one_line(e.what());
      code = 1;
    }
    [[maybe_unused]] const auto n = ::write(fds[1], msg.data(), msg.size());
    ::close(fds[1]);
    ::_exit(code);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[256];
  for (ssize_t k; (k = ::read(fds[0], buf, sizeof buf)) > 0 || (k < 0 && errno == EINTR);)
    if (k > 0)
      msg.append(buf, static_cast<std::size_t>(k));
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!msg.empty() && msg[0] == 'T')
    return std::strtod(msg.c_str() + 1, nullptr);
  std::cerr << "zerosim: collective of " << size
            << " B: " << (msg.size() > 1 ? msg.substr(1) : std::string("simulation process failed")) << "\n";
  return -1;
}

/// One row of an nccl-tests log: payload size (B) and out-of-place time (s).
struct NcclTestsPoint {
  double bytes = 0;
  double seconds = 0;
};

/// Parses an nccl-tests log (all_reduce_perf & co., any version since 2.0): data rows are lines not starting with '#'
/// whose first token is the size in bytes and whose last eight tokens are out-of-place "time algbw busbw #wrong" then
/// in-place "time algbw busbw #wrong" (nccl-tests src/common.cu; times in us). Counts the "#  Rank  r ..." header
/// lines as the number of ranks (0 when absent). Throws zerosim::Error when no data row is found.
std::vector<NcclTestsPoint> parse_nccl_tests(const std::string& path, int& ranks) {
  std::ifstream f(path);
  if (!f)
    throw Error("--fit: cannot open '" + path + "'");
  const std::regex rank_line(R"(^#\s*Rank\s+\d+\s)");
  std::vector<NcclTestsPoint> out;
  ranks = 0;
  for (std::string line; std::getline(f, line);) {
    if (std::regex_search(line, rank_line)) {
      ++ranks;
      continue;
    }
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#')
      continue;
    std::istringstream in(line);
    std::vector<std::string> tok;
    for (std::string t; in >> t;)
      tok.push_back(t);
    if (tok.size() < 10)
      continue;
    char* end = nullptr;
    const double bytes = std::strtod(tok[0].c_str(), &end);
    if (end == tok[0].c_str() || *end != '\0' || !(bytes > 0))
      continue;
    const std::string& ts = tok[tok.size() - 8];
    const double us = std::strtod(ts.c_str(), &end);
    if (end == ts.c_str() || *end != '\0' || !(us > 0))
      continue;
    out.push_back({bytes, us * 1e-6});
  }
  if (out.empty())
    throw Error("--fit: no nccl-tests data row in '" + path +
                "' (expected lines 'size count type ... time algbw busbw "
                "#wrong time algbw busbw #wrong')");
  return out;
}

/// `--fit`: fits t(S) = a + b·S to the log by least squares on relative residuals (weights 1/t²), reads it as the
/// ring's alpha-beta form t = steps·α + frac·S/B (collectives/collective_plan.hpp analytic_time: steps = 2(n-1) and
/// frac = 2(n-1)/n for all-reduce, n-1 and (n-1)/n for all-gather / reduce-scatter), so α = a / steps and the
/// achieved bus bandwidth B = frac / b; with a topology, efficiency = B / the ring's nominal bottleneck link bandwidth
/// (topology::ring_route_summary with every efficiency set to 1). Prints the fit, a per-size comparison and the fit
/// error (RMS and maximum relative error of the fitted model against the log).
int fit_command(const std::string& path, program::CollectiveKind kind, int n_topology,
                const scenario::ClusterSpec* cluster, const std::string& label) {
  int ranks = 0;
  const auto pts = parse_nccl_tests(path, ranks);
  const int n = ranks > 0 ? ranks : n_topology;
  if (n < 2)
    throw UsageError("--fit: the log has no '#  Rank' lines; give --topology/--nodes to say how many ranks ran");
  if (pts.size() < 2)
    throw Error("--fit: need at least two sizes in '" + path + "'");
  // Weighted least squares, weights w = 1/t² (relative error): normal equations of t = a + b·S.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : pts) {
    const double w = 1.0 / (p.seconds * p.seconds);
    sw += w;
    sx += w * p.bytes;
    sy += w * p.seconds;
    sxx += w * p.bytes * p.bytes;
    sxy += w * p.bytes * p.seconds;
  }
  const double det = sw * sxx - sx * sx;
  if (!(std::abs(det) > 0))
    throw Error("--fit: the sizes in '" + path + "' do not determine a line (need two different sizes)");
  const double b = (sw * sxy - sx * sy) / det;
  const double a = (sy - b * sx) / sw;
  if (!(b > 0))
    throw Error("--fit: the times do not grow with the size; cannot fit a bandwidth");
  // The α coefficient: 2(n-1) or n-1 (the ring's latency steps).
  const double steps = collectives::plan(kind, collectives::Algorithm::RING, Bytes(1), n).front().latency_steps;
  const double frac = collectives::bus_bandwidth_factor(kind, n);
  const double alpha = a / steps;
  const double bw = frac / b;
  std::cout << fmt::format("# zerosim collective --fit {}: {} on {} ranks, {} sizes\n", path, program::to_string(kind),
                           n, pts.size());
  std::cout << fmt::format("# model t = {:.0f}·alpha + {:.4f}·S/B (ring alpha-beta form)\n", steps, frac);
  // The table's cells first, then each column as wide as its widest cell (at least the old 14/14/14/9), so a log of
  // any sizes and times (parse_nccl_tests takes any positive number) stays aligned.
  std::vector<std::array<std::string, 4>> rows{{"size(B)", "measured(us)", "model(us)", "err(%)"}};
  std::array<std::size_t, 4> width{14, 14, 14, 9};
  double sq = 0, worst = 0;
  for (const auto& p : pts) {
    const double m = a + b * p.bytes;
    const double e = (m - p.seconds) / p.seconds;
    sq += e * e;
    worst = std::max(worst, std::abs(e));
    rows.push_back({fmt::format("{:.0f}", p.bytes), fmt::format("{:.2f}", p.seconds * 1e6),
                    fmt::format("{:.2f}", m * 1e6), fmt::format("{:.3f}", e * 100)});
  }
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows)
    std::cout << fmt::format("{:>{}} {:>{}} {:>{}} {:>{}}\n", r[0], width[0], r[1], width[1], r[2], width[2], r[3],
                             width[3]);
  std::cout << fmt::format("fit: latency alpha = {:.4f} us per step, bus bandwidth B = {:.3f} GB/s\n", alpha * 1e6,
                           bw / 1e9);
  if (cluster != nullptr) {
    scenario::ClusterSpec nominal = *cluster;
    nominal.intra_node.efficiency = nominal.host_link.efficiency = nominal.nic.efficiency = 1.0;
    nominal.host_bridge.efficiency = nominal.pcie_switch_uplink.efficiency = 1.0;
    const double peak = topology::ring_route_summary(nominal).min_bandwidth;
    const double model_bw = topology::ring_route_summary(*cluster).min_bandwidth;
    std::cout << fmt::format(
        "fit: efficiency = {:.4f} of the {} ring's nominal bottleneck {:.3f} GB/s "
        "(preset assumes {:.3f} GB/s)\n",
        bw / peak, label, peak / 1e9, model_bw / 1e9);
  }
  std::cout << fmt::format("fit error: rms {:.3f} %, max {:.3f} % over {} sizes\n",
                           std::sqrt(sq / static_cast<double>(pts.size())) * 100, worst * 100, pts.size());
  return 0;
}

} // namespace

int collective_command(const std::vector<std::string>& args) {
  po::options_description opts("zerosim collective options");
  opts.add_options() //
      ("topology", po::value<std::string>(),
       "cluster preset (topologies/clusters/), a topology file of the preset format, or a scenario file whose "
       "cluster: section to use (its nodes, algorithm and protocol unless --nodes, --algorithm, --protocol are "
       "given)") //
      ("nodes", po::value<int>()->default_value(1), "nodes") //
      ("op", po::value<std::string>(),
       "all_reduce | all_gather | reduce_scatter | reduce (to rank 0: a ring chain, as NCCL's Reduce)") //
      ("sizes", po::value<std::string>(),
       "LO:HI (x2 steps), one size or a comma-separated list, e.g. 1KiB:16GiB or 8B,64KiB,1MiB; at most 1e15 B (1PB) "
       "each") //
      ("algorithm", po::value<std::string>()->default_value("auto"),
       "auto | ring | tree | hierarchical | nvls (NVSwitch presets with nvls: true) | direct (one full-mesh node)") //
      ("protocol", po::value<std::string>()->default_value("auto"), "auto | ll | ll128 | simple | none") //
      ("fidelity", po::value<std::string>()->default_value("flow"), "flow | analytic | chunk") //
      ("fold", po::value<std::string>()->default_value("auto"), "auto | on | off (rank folding)") //
      ("timing", po::value<std::string>()->default_value("nccl-tests"),
       "nccl-tests (back-to-back calls, per-call average: all_reduce_perf) | torch-loop (one synchronized, "
       "event-timed torch.distributed call per sample: ml-engineering all_reduce_bench.py; adds the "
       "per-call cost of a torch.distributed call, docs/collectives.md)") //
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a key of the preset's cluster, e.g. --set cluster.nccl_channels=2 or --set "
       "gpu.compute_capability=8.0 (cluster.* keys of docs/scenario-reference.md; gpu.X and cpu.X are short for "
       "cluster.gpu.X and cluster.cpu.X; value parsed as YAML; repeatable; the header names them)") //
      ("fit", po::value<std::string>(), "nccl-tests log to fit alpha, bus bandwidth and efficiency to") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string(e.what()) + " (" + kUsage + ")");
  }
  if (vm["help"].as<bool>()) {
    std::cout << kUsage << "\n\n" << opts;
    return 0;
  }
  const std::vector<std::string> sets =
      cluster_overrides(vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{});
  // The command's own keys first, then --set (cluster_overrides refused any key the two share).
  const auto overrides = [&](std::vector<std::string> own) {
    own.insert(own.end(), sets.begin(), sets.end());
    return own;
  };
  // The keys this command's options set. From a scenario file only the options given (its cluster keeps its own
  // nodes, algorithm and protocol otherwise); a preset takes every option's value, defaults included.
  const bool from_file = vm.count("topology") && names_scenario_file(vm["topology"].as<std::string>());
  const auto own_keys = [&](const std::vector<std::string>& options) {
    static const std::vector<std::pair<std::string, std::string>> key_of = {{"nodes", "cluster.nodes"},
                                                                            {"algorithm",
                                                                             "cluster.collective_algorithm"},
                                                                            {"protocol",
                                                                             "cluster.collective_protocol"}};
    std::vector<std::string> out;
    for (const auto& [option, key] : key_of) {
      if (std::find(options.begin(), options.end(), option) == options.end() || (from_file && vm[option].defaulted()))
        continue;
      out.push_back(key + "=" +
                    (option == "nodes" ? std::to_string(vm[option].as<int>()) : vm[option].as<std::string>()));
    }
    return out;
  };
  if (vm.count("fit")) {
    if (!vm.count("op"))
      throw UsageError(std::string("collective: missing --op (") + kUsage + ")");
    const auto kind = parse_op(vm["op"].as<std::string>());
    if (!vm.count("topology")) {
      if (!sets.empty())
        throw UsageError(
            "collective: --set changes the --topology cluster; --fit without --topology has none (give "
            "--topology to compare the fit with a changed preset)");
      return fit_command(vm["fit"].as<std::string>(), kind, 0, nullptr, "");
    }
    const std::string topology = vm["topology"].as<std::string>();
    const scenario::ClusterSpec cl = resolve_cluster("collective", topology, overrides(own_keys({"nodes"})));
    return fit_command(vm["fit"].as<std::string>(), kind, cl.world_size(), &cl, cluster_label(topology, sets));
  }
  for (const char* required : {"topology", "op", "sizes"})
    if (!vm.count(required))
      throw UsageError(std::string("collective: missing --") + required + " (" + kUsage + ")");
  const auto kind = parse_op(vm["op"].as<std::string>());
  // NCCL's Reduce runs as a ring chain whatever algorithm is asked for (collectives::choose); an algorithm named on
  // the command line that it cannot run is an error, one from a scenario file's cluster a note below.
  if (kind == program::CollectiveKind::REDUCE && vm.count("algorithm") && !vm["algorithm"].defaulted() &&
      vm["algorithm"].as<std::string>() != "auto" && vm["algorithm"].as<std::string>() != "ring")
    throw UsageError("collective: --algorithm " + vm["algorithm"].as<std::string>() +
                     ": reduce runs as a ring only (NCCL's Reduce is a ring chain); use --algorithm ring or auto");
  const auto sizes = parse_sizes(vm["sizes"].as<std::string>());
  const std::string fid = vm["fidelity"].as<std::string>();
  if (fid != "flow" && fid != "analytic" && fid != "chunk")
    throw UsageError("collective: --fidelity: expected flow, analytic or chunk, got '" + fid + "'");
  const std::string timing_name = vm["timing"].as<std::string>();
  if (timing_name != "nccl-tests" && timing_name != "torch-loop")
    throw UsageError("collective: --timing: expected nccl-tests or torch-loop, got '" + timing_name + "'");
  const auto timing = collectives::parse_benchmark_timing(timing_name);
  // The torch loop's per-call cost beyond the kernel (benchmark_timing.hpp, derived there).
  const Seconds call_overhead(collectives::kTorchCollectiveCallSeconds);
  const std::string fold = vm["fold"].as<std::string>();
  if (fold != "auto" && fold != "on" && fold != "off")
    throw UsageError("collective: --fold: expected auto, on or off, got '" + fold + "'");
  const std::string topology = vm["topology"].as<std::string>();
  // --fidelity and --fold go to the loader as the scenario keys they are, so that `zerosim run`'s limits on the
  // simulated GPUs (validate_limits: chunk above 1024 GPUs, more than 65536 GPUs as their own actors) refuse them
  // here too, in run's words with the option named.
  std::vector<std::string> keys = own_keys({"nodes", "algorithm", "protocol"});
  keys.push_back("simulation.fidelity=" + fid);
  keys.push_back("simulation.fold=" + fold);
  const scenario::ClusterSpec cluster = [&] {
    try {
      return resolve_cluster("collective", topology, overrides(keys));
    } catch (const ScenarioError& e) {
      const std::string option = e.key() == "simulation.fold" ? "--fold" : "--fidelity";
      if (e.file() != "<cli>" || (e.key() != "simulation.fold" && e.key() != "simulation.fidelity"))
        throw;
      std::string what = e.what();
      what = what.substr(what.find(": " + e.key() + ": ") + e.key().size() + 4);
      // The hint names the scenario key ("use fold: auto", "use fidelity flow"): name the option instead.
      for (const auto& [from, to] :
           {std::pair<std::string, std::string>{"use fold: ", "use --fold "}, {"use fidelity ", "use --fidelity "}})
        if (const auto at = what.find(from); at != std::string::npos)
          what.replace(at, from.size(), to);
      throw UsageError("collective: " + option + ": " + what);
    }
  }();
  engine::check_collective_settings(cluster);
  engine::EngineOptions options;
  options.fidelity = fid == "flow"    ? scenario::Fidelity::FLOW
                     : fid == "chunk" ? scenario::Fidelity::CHUNK
                                      : scenario::Fidelity::ANALYTIC;
  options.trace_ranks = 0;
  options.fold = fold == "on"    ? scenario::FoldPolicy::ON
                 : fold == "off" ? scenario::FoldPolicy::OFF
                                 : scenario::FoldPolicy::AUTO;

  const int n = cluster.world_size();
  if (n < 2)
    throw UsageError(
        fmt::format("collective: --topology {}: a collective needs at least 2 ranks, this cluster has {} (use a "
                    "multi-GPU preset such as "
                    "dgx-h100 or 4x-rtx4090-pcie; `zerosim list` shows them)",
                    cluster_label(topology, sets), n));
  // nccl-tests' count per rank: a size below one byte per rank moves nothing (its algbw would print as 0). An
  // all-reduce and a reduce move the whole buffer on every rank.
  if ((kind == program::CollectiveKind::ALL_GATHER || kind == program::CollectiveKind::REDUCE_SCATTER) &&
      sizes.front() < n)
    throw UsageError(fmt::format("collective: --sizes: {:.0f} B is less than one byte per rank for {} over {} ranks",
                                 sizes.front(), program::to_string(kind), n));
  const double factor = collectives::bus_bandwidth_factor(kind, n);
  std::cout << fmt::format("# zerosim collective: {} on {} ({} node(s) x {} GPUs = {} ranks), fidelity {}\n",
                           program::to_string(kind), cluster_label(topology, sets), cluster.nodes,
                           cluster.gpus_per_node, n, fid);
  std::cout << fmt::format("# busbw = algbw x {:.4f} (nccl-tests doc/PERFORMANCE.md); GB/s = 10^9 B/s, size in B\n",
                           factor);
  if (timing == collectives::BenchmarkTiming::TORCH_LOOP)
    std::cout << fmt::format(
        "# timing torch-loop: time = collective + {:.1f} us per torch.distributed call "
        "(all_reduce_bench.py times each call with CUDA events; docs/collectives.md)\n",
        call_overhead.value() * 1e6);
  if (kind == program::CollectiveKind::REDUCE && cluster.collective_algorithm != "auto" &&
      cluster.collective_algorithm != "ring" && !cluster.collective_algorithm.empty())
    std::cout << fmt::format(
        "# note: reduce runs as a ring (NCCL's Reduce is a ring chain); the cluster's {} is not "
        "used (docs/collectives.md)\n",
        cluster.collective_algorithm);
  else if (cluster.collective_algorithm == "tree" && kind != program::CollectiveKind::ALL_REDUCE)
    std::cout << fmt::format(
        "# note: tree applies to all_reduce only; {} runs as a ring (NCCL's fallback, "
        "docs/collectives.md)\n",
        program::to_string(kind));
  else if (cluster.collective_algorithm == "nvls" && kind != program::CollectiveKind::ALL_REDUCE &&
           cluster.gpus_per_node > collectives::kNvlsMaxArity)
    std::cout << fmt::format(
        "# note: NVLS {} needs at most {} GPUs per node (NCCL_MAX_NVLS_ARITY); it runs as a ring "
        "(docs/collectives.md)\n",
        program::to_string(kind), collectives::kNvlsMaxArity);
  if ((cluster.collective_algorithm == "nvls" || cluster.collective_algorithm == "direct") &&
      (cluster.collective_protocol == "ll" || cluster.collective_protocol == "ll128"))
    std::cout
        << fmt::format("# note: {} runs the Simple protocol only; --protocol {} is not used (docs/collectives.md)\n",
                       cluster.collective_algorithm == "nvls" ? "NVLS" : "direct", cluster.collective_protocol);
  // Columns at least as wide as their header (the size column holds up to kMaxCollectiveBytes = 1e15, 16 digits),
  // wider where a cell needs it (a 1e15 B collective on a slow link takes more than 12 digits of microseconds): the
  // rows are formatted first, then printed right-aligned to the widest cell of each column, as the --fit table.
  using Row = std::array<std::string, 6>;
  std::vector<Row> table{{"size(B)", "algorithm", "protocol", "time(us)", "algbw(GB/s)", "busbw(GB/s)"}};
  std::array<std::size_t, 6> width{16, 13, 9, 12, 12, 12};
  int status = 0;
  for (double size : sizes) {
    const auto choice = engine::resolve_choice(cluster, kind, Bytes(size));
    const double gpu_time = simulate_in_child(cluster, kind, size, options);
    if (gpu_time < 0) {
      status = 1;
      continue;
    }
    const double t = collectives::benchmark_time(Seconds(gpu_time), timing, call_overhead).value();
    const double algbw = t > 0 ? size / t / 1e9 : 0.0;
    table.push_back({fmt::format("{:.0f}", size), collectives::to_string(choice.algorithm),
                     collectives::to_string(choice.protocol), fmt::format("{:.2f}", t * 1e6),
                     fmt::format("{:.2f}", algbw), fmt::format("{:.2f}", algbw * factor)});
  }
  for (const Row& r : table)
    for (std::size_t c = 0; c < r.size(); ++c)
      width[c] = std::max(width[c], r[c].size());
  for (const Row& r : table)
    std::cout << fmt::format("{:>{}} {:>{}} {:>{}} {:>{}} {:>{}} {:>{}}\n", r[0], width[0], r[1], width[1], r[2],
                             width[2], r[3], width[3], r[4], width[4], r[5], width[5]);
  // What caps the bandwidth at the largest size (the row least dominated by latency): a faster NIC changes nothing
  // when the intra-node link binds (newuser31 F11), and this line says so.
  const double largest = *std::max_element(sizes.begin(), sizes.end());
  const auto choice = engine::resolve_choice(cluster, kind, Bytes(largest));
  if (const engine::BindingLimit limit = engine::binding_limit(cluster, kind, choice, Bytes(largest));
      limit.bandwidth > 0) {
    const bool ring = choice.algorithm == collectives::Algorithm::RING && kind != program::CollectiveKind::REDUCE;
    std::cout << fmt::format("# limit at {:.0f} B ({}/{}): the {} limits {} to {:.2f} GB/s ({})\n", largest,
                             collectives::to_string(choice.algorithm), collectives::to_string(choice.protocol),
                             limit.resource, ring ? "busbw" : "the slowest phase's data rate per GPU",
                             limit.bandwidth / 1e9, limit.detail);
    if (!limit.other.empty())
      std::cout << fmt::format("#   not binding: {}\n", limit.other);
  }
  return status;
}

} // namespace zerosim::cli
