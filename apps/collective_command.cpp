// `zerosim collective`: an nccl-tests-style sweep of one collective on a topology preset. Each size is simulated in
// its own forked child (SimGrid's Engine is one per process); the parent prints size, time, algbw and busbw
// (nccl-tests doc/PERFORMANCE.md: algbw = S / t; busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for
// all-gather / reduce-scatter).
#include "apps/cli.hpp"
#include "sim/collectives/collective_plan.hpp"
#include "sim/engine/collective_choice.hpp"
#include "sim/engine/engine.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/units.hpp"

#include <boost/program_options.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace po = boost::program_options;

namespace zerosim::cli {
namespace {

const char* kUsage = "usage: zerosim collective --topology T [--nodes N] --op all_reduce|all_gather|reduce_scatter "
                     "--sizes LO:HI|SIZE [--algorithm auto|ring|tree|hierarchical] "
                     "[--protocol auto|ll|ll128|simple|none] [--fidelity flow|analytic]";

program::CollectiveKind parse_op(const std::string& s) {
  if (s == "all_reduce")
    return program::CollectiveKind::ALL_REDUCE;
  if (s == "all_gather")
    return program::CollectiveKind::ALL_GATHER;
  if (s == "reduce_scatter")
    return program::CollectiveKind::REDUCE_SCATTER;
  throw UsageError("--op: unknown collective '" + s + "' (all_reduce, all_gather, reduce_scatter)");
}

/// "1KiB:16GiB" -> 1 KiB, 2 KiB, ..., 16 GiB (x2 per step, nccl-tests -f 2); "8MiB" -> {8 MiB}.
std::vector<double> parse_sizes(const std::string& s) {
  const scenario::ValueLocation where{"<cli>", 0, "--sizes"};
  const auto colon = s.find(':');
  if (colon == std::string::npos)
    return {scenario::parse_bytes(s, where).value()};
  const double lo = scenario::parse_bytes(s.substr(0, colon), where).value();
  const double hi = scenario::parse_bytes(s.substr(colon + 1), where).value();
  if (!(lo > 0) || hi < lo)
    throw UsageError("--sizes: expected LO:HI with 0 < LO <= HI, got '" + s + "'");
  std::vector<double> out;
  for (double x = lo; x <= hi * (1 + 1e-12); x *= 2)
    out.push_back(x);
  return out;
}

/// The cluster of preset `topology` with `overrides`, resolved exactly as a scenario would (a throwaway scenario
/// file naming the smallest model; the model does not matter here).
scenario::ClusterSpec load_cluster(const std::string& topology, const std::vector<std::string>& overrides) {
  char path[] = "/tmp/zerosim-collective-XXXXXX.yaml";
  const int fd = ::mkstemps(path, 5);
  if (fd < 0)
    throw Error(std::string("cannot create a temporary scenario: ") + std::strerror(errno));
  ::close(fd);
  {
    std::ofstream f(path);
    f << "name: collective\nmodel: gpt2\ncluster:\n  topology: " << topology << "\n";
  }
  try {
    auto variants = scenario::load_scenario(path, overrides);
    std::filesystem::remove(path);
    return variants.front().scenario.cluster;
  } catch (...) {
    std::filesystem::remove(path);
    throw;
  }
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
  std::cerr << "zerosim: collective of " << size << " B: "
            << (msg.size() > 1 ? msg.substr(1) : std::string("simulation process failed")) << "\n";
  return -1;
}

} // namespace

int collective_command(const std::vector<std::string>& args) {
  po::options_description opts("zerosim collective options");
  opts.add_options()                                                                                   //
      ("topology", po::value<std::string>(), "cluster preset (topologies/clusters/)")                  //
      ("nodes", po::value<int>()->default_value(1), "nodes")                                           //
      ("op", po::value<std::string>(), "all_reduce | all_gather | reduce_scatter")                     //
      ("sizes", po::value<std::string>(), "LO:HI (x2 steps) or one size, e.g. 1KiB:16GiB")            //
      ("algorithm", po::value<std::string>()->default_value("auto"), "auto | ring | tree | hierarchical")  //
      ("protocol", po::value<std::string>()->default_value("auto"), "auto | ll | ll128 | simple | none")  //
      ("fidelity", po::value<std::string>()->default_value("flow"), "flow | analytic")                 //
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
  for (const char* required : {"topology", "op", "sizes"})
    if (!vm.count(required))
      throw UsageError(std::string("missing --") + required + " (" + kUsage + ")");
  const auto kind = parse_op(vm["op"].as<std::string>());
  const auto sizes = parse_sizes(vm["sizes"].as<std::string>());
  const std::string fid = vm["fidelity"].as<std::string>();
  if (fid != "flow" && fid != "analytic")
    throw UsageError("--fidelity: expected flow or analytic, got '" + fid + "'");
  const scenario::ClusterSpec cluster =
      load_cluster(vm["topology"].as<std::string>(),
                   {"cluster.nodes=" + std::to_string(vm["nodes"].as<int>()),
                    "cluster.collective_algorithm=" + vm["algorithm"].as<std::string>(),
                    "cluster.collective_protocol=" + vm["protocol"].as<std::string>()});
  engine::check_collective_settings(cluster);
  engine::EngineOptions options;
  options.fidelity = fid == "flow" ? scenario::Fidelity::FLOW : scenario::Fidelity::ANALYTIC;
  options.trace_ranks = 0;

  const int n = cluster.world_size();
  const double factor = collectives::bus_bandwidth_factor(kind, n);
  std::cout << fmt::format("# zerosim collective: {} on {} ({} node(s) x {} GPUs = {} ranks), fidelity {}\n",
                           program::to_string(kind), cluster.topology, cluster.nodes, cluster.gpus_per_node, n, fid);
  std::cout << fmt::format("# busbw = algbw x {:.4f} (nccl-tests doc/PERFORMANCE.md)\n", factor);
  std::cout << fmt::format("{:>14} {:>13} {:>9} {:>12} {:>12} {:>12}\n", "size(B)", "algorithm", "protocol",
                           "time(us)", "algbw(GB/s)", "busbw(GB/s)");
  int status = 0;
  for (double size : sizes) {
    const auto choice = engine::resolve_choice(cluster, kind, Bytes(size));
    const double t = simulate_in_child(cluster, kind, size, options);
    if (t < 0) {
      status = 1;
      continue;
    }
    const double algbw = t > 0 ? size / t / 1e9 : 0.0;
    std::cout << fmt::format("{:>14.0f} {:>13} {:>9} {:>12.2f} {:>12.2f} {:>12.2f}\n", size,
                             collectives::to_string(choice.algorithm), collectives::to_string(choice.protocol),
                             t * 1e6, algbw, algbw * factor);
  }
  return status;
}

} // namespace zerosim::cli
