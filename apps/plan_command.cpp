// `zerosim plan`: capacity planning. Enumerates ZeRO stage, offload, N_d (whole nodes, powers of two), micro-batch,
// gradient accumulation and activation checkpointing; prunes with closed forms what cannot fit (ZeRO paper model
// states, DeepSpeed's ZeRO-3 offload estimator, saved activations from the workload: lower bounds, so a pruned plan
// can never fit); simulates the rest with analytic fidelity and rank folding (several at once, apps/sim_child.hpp);
// prints a ranked table of feasible plans with the Pareto front marked, and the best rejected plans with the reason.
#include "analysis/atomic_file.hpp"
#include "analysis/console.hpp"
#include "analysis/json_numbers.hpp"
#include "analysis/measured_band.hpp"
#include "analysis/summary.hpp"
#include "analysis/sweep.hpp"
#include "analysis/version.hpp"
#include "apps/checked_scenario.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/sim_child.hpp"
#include "apps/topology_option.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/units.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/model_states.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const char* kPlanUsage =
    "usage: zerosim plan --model M --gpu G [--topology PRESET|TOPOLOGY.yaml|SCENARIO.yaml] [--max-gpus N] [--tokens T] "
    "[--global-batch B] "
    "[--seq-len S] [--flash-attention|--eager-attention] [--headroom H] [--deadline D] [--max-step-time S] "
    "[--time-margin F] [--price-per-gpu-hour P] [--jobs J] [--top K] [--wide] "
    "[--host-memory SIZE] [--host-headroom H] [--csv FILE] [--json FILE] [--exhaustive] [--set KEY=VALUE]...";

/// Micro-batch sizes tried, ascending (memory grows with b, so the first OOM ends a group).
const std::vector<int> kMicroBatches{1, 2, 4, 8, 16};

enum class Offload { NONE, OPTIMIZER, OPTIMIZER_AND_PARAMS };

const char* offload_name(Offload o) {
  switch (o) {
  case Offload::NONE:
    return "none";
  case Offload::OPTIMIZER:
    return "opt->cpu";
  case Offload::OPTIMIZER_AND_PARAMS:
    return "opt+param->cpu";
  }
  return "?";
}

/// The table's offload column (plan offloads to CPU memory only): "none", "opt", "opt+param"; the CSV and the
/// rejected lines keep offload_name's.
const char* offload_short_name(Offload o) {
  switch (o) {
  case Offload::NONE:
    return "none";
  case Offload::OPTIMIZER:
    return "opt";
  case Offload::OPTIMIZER_AND_PARAMS:
    return "opt+param";
  }
  return "?";
}

struct Candidate {
  int nodes = 1;
  int gpus_per_node = 1;
  int n_d = 1;
  int stage = 0;
  /// zero.overlap_comm for stages 1 and 2, both tried (DeepSpeed's default is off there, the usual ZeRO-2 configs
  /// set it); stage 3 keeps DeepSpeed's default (on), stage 0 has none. `--set zero.overlap_comm` pins stages 1-3.
  bool overlap = false;
  Offload offload = Offload::NONE;
  int mb = 1;
  int ga = 1;
  bool ckpt = false;
  std::size_t group = 0; ///< same (nodes, stage, overlap, offload, ckpt): micro-batches ascending

  enum class State { PENDING, PRUNED, SIMULATED, SKIPPED, DOMINATED } state = State::PENDING;
  std::string reason; ///< why rejected
  double lower_bound = 0; ///< B, lower_bound_bytes: the closed form the pruning compares with the usable memory
  analysis::SweepRow row;
  /// simulated, its nvidia-smi peak leaves --headroom free (row.fits: within the capacity, no OOM) and its node's
  /// host memory peak --host-headroom
  bool fits = false;
  /// Its row's marginal fit on the full card and host RAM (analysis::marginal_fit: cudaMalloc retries, under 5 % of
  /// the card or under 10 % of the host RAM free), what `zerosim run` and `zerosim largest` call marginal for the same
  /// scenario; all false when not simulated or not within the capacity.
  analysis::MarginalFit marginal;

  [[nodiscard]] std::string text() const {
    return fmt::format("stage {}{}, offload {}, N_d {}, mb {}, GA {}, ckpt {}", stage,
                       stage == 1 || stage == 2 ? (overlap ? " overlap_comm on" : " overlap_comm off")
                       : stage == 3 && !overlap ? " overlap_comm off"
                                                : "",
                       offload_name(offload), n_d, mb, ga, ckpt ? "on" : "off");
  }
  [[nodiscard]] std::vector<std::string> sets() const {
    std::vector<std::string> s{fmt::format("cluster.nodes={}", nodes),
                               fmt::format("cluster.gpus_per_node={}", gpus_per_node),
                               fmt::format("zero.stage={}", stage),
                               fmt::format("zero.offload_optimizer={}", offload == Offload::NONE ? "none" : "cpu"),
                               fmt::format("zero.offload_param={}",
                                           offload == Offload::OPTIMIZER_AND_PARAMS ? "cpu" : "none"),
                               fmt::format("training.micro_batch={}", mb),
                               fmt::format("training.grad_accum={}", ga),
                               fmt::format("training.activation_checkpointing={}", ckpt ? "true" : "false")};
    if (stage >= 1)
      s.push_back(fmt::format("zero.overlap_comm={}", overlap ? "true" : "false"));
    return s;
  }
};

/// Plans with more accumulation micro-steps than this are simulated at this GA and one less, then extrapolated.
constexpr int kSimulatedGa = 4;

/// The row of a plan with `ga` > kSimulatedGa micro-steps from its rows at kSimulatedGa (`at`) and kSimulatedGa - 1
/// (`below`). With analytic fidelity a step is the first micro-step, GA - 2 identical middle ones (the same ops on
/// the same state: ZeRO's buffers are allocated in the first micro-step, the reduction of the last one differs),
/// the last one and the optimizer, so each time of the step is linear in GA from 3 on:
/// t(GA) = t(at) + (GA - kSimulatedGa)·(t(at) - t(below)); tokens/s and MFU follow from the tokens of GA
/// micro-steps; memory, fits and retries are those of `at` (the middle micro-steps repeat its peak). A row that did
/// not reach a steady state (OOM, failure) is returned as `at`, with GA restored in its inputs.
analysis::SweepRow extrapolate_ga(const analysis::SweepRow& at, const analysis::SweepRow& below, int ga) {
  analysis::SweepRow r = at;
  for (auto& [key, value] : r.inputs)
    if (key == "training.grad_accum")
      value = std::to_string(ga);
  if (!at.ok || !below.ok || !at.steady_state || !below.steady_state || !(at.step_time_s > 0))
    return r;
  const double extra = ga - kSimulatedGa;
  const auto line = [extra](double a, double b) { return a + extra * (a - b); };
  r.step_time_s = line(at.step_time_s, below.step_time_s);
  const double scale = (static_cast<double>(ga) / kSimulatedGa) * (at.step_time_s / r.step_time_s);
  r.tokens_per_s = at.tokens_per_s * scale;
  r.mfu = at.mfu * scale;
  using B = analysis::StepBreakdown;
  for (double B::*f : {&B::forward_s, &B::backward_s, &B::optimizer_s, &B::other_compute_s, &B::compute_busy_s,
                       &B::comm_busy_s, &B::exposed_comm_s, &B::exposed_offload_s, &B::exposed_offload_pcie_s,
                       &B::exposed_offload_nvme_s, &B::exposed_cpu_s, &B::exposed_host_s, &B::idle_other_s})
    r.breakdown.*f = line(at.breakdown.*f, below.breakdown.*f);
  return r;
}

/// A count as --tokens takes it: "10B", "2T", "500M", "1.5K", or the plain number below 1000.
std::string count_text(double n) {
  for (const auto& [scale, suffix] : {std::pair{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}})
    if (n >= scale)
      return fmt::format("{:.4g}{}", n / scale, suffix);
  return fmt::format("{:.4g}", n);
}

/// "1e9", "300B", "2T", "500M", "10K" -> a positive finite count (parse_scaled_count). Throws UsageError.
double parse_count(const std::string& opt, const std::string& text) {
  const std::optional<double> v = parse_scaled_count(text);
  if (!v || !(*v > 0))
    throw UsageError("plan: " + opt + ": expected a positive count like 300B, 2T or 1e9, got '" + text + "'");
  return *v;
}

/// The wall-clock commitments plan derives from a simulated step: the step time with --time-margin applied, and
/// with --tokens the time to train them, GPU-hours (x N_d) and cost (x price per GPU-hour). `tokens_per_s` is the
/// simulated throughput (global batch tokens / simulated step); the margin divides it, so time to train =
/// margin x tokens / tokens_per_s.
struct Commitments {
  double step_s = 0; ///< s, margin x simulated step
  double ttt_s = 0; ///< s, time to train `tokens` (0 without --tokens)
  double gpu_hours = 0;
  double cost = 0;
};
Commitments commitments(double step_time_s, double tokens_per_s, int n_d, double tokens, double price, double margin) {
  Commitments m;
  m.step_s = margin * step_time_s;
  if (tokens > 0 && tokens_per_s > 0) {
    m.ttt_s = margin * tokens / tokens_per_s;
    m.gpu_hours = m.ttt_s / 3600.0 * n_d;
    m.cost = m.gpu_hours * price;
  }
  return m;
}

/// The cluster preset to use for GPU `gpu`: the first topologies/clusters/*.yaml (by name) whose `gpu:` is `gpu`,
/// preferring the one with the most GPUs per node; presets with `plan_default: false` are skipped. "" if none.
std::string topology_for(const std::string& gpu, int max_gpus) {
  // A preset with this GPU, the one with the most GPUs per node; else one whose GPU is of the same family (the name
  // before its first '-': a100-40gb -> dgx-a100's a100-80gb), whose GPUs the plan then replaces. With --max-gpus
  // (max_gpus > 0), the preset with the fewest GPUs per node that still holds max_gpus, if one does: a one-GPU plan
  // runs on the one-GPU desktop (its CPU and PCIe), not on a slot of a 4-GPU box. A preset that says it is not a
  // GPU's usual node (plan_default: false, e.g. one site's 4-GPU A100 nodes) is never chosen here, only by
  // --topology: a100-40gb plans on the DGX A100's 8-GPU node, the usual one for that card.
  const auto family = [](const std::string& g) { return g.substr(0, g.find('-')); };
  const fs::path dir = fs::path(scenario::data_dir()) / "topologies" / "clusters";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml")
      files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string best;
  int best_gpn = 0;
  for (const bool exact : {true, false}) {
    for (const auto& f : files) {
      try {
        const YAML::Node n = YAML::LoadFile(f.string());
        if (!n["gpu"] || !n["gpu"].IsScalar())
          continue;
        if (const YAML::Node d = n["plan_default"];
            d && d.IsScalar() && (d.Scalar() == "false" || d.Scalar() == "False" || d.Scalar() == "FALSE"))
          continue; // as the loader reads a bool (cluster.plan_default)
        const std::string g = n["gpu"].Scalar();
        if (exact ? g == gpu : family(g) == family(gpu)) {
          const int gpn = n["gpus_per_node"] ? n["gpus_per_node"].as<int>() : 1;
          const bool fits_request = max_gpus > 0 && gpn >= max_gpus;
          const bool best_fits = max_gpus > 0 && best_gpn >= max_gpus;
          const bool better = best.empty() || (fits_request && (!best_fits || gpn < best_gpn)) ||
                              (!fits_request && !best_fits && gpn > best_gpn);
          if (better) {
            best_gpn = gpn;
            best = f.stem().string();
          }
        }
      } catch (const YAML::Exception&) {
        continue; // a broken preset is reported by `zerosim list`, not here
      }
    }
    if (!best.empty())
      break;
  }
  return best;
}

/// "3.1-3.9 d" from two durations (human_duration), "20.5 h-1.1 d" when their units differ.
std::string duration_range(double low_s, double high_s) {
  std::string lo = analysis::human_duration(low_s);
  const std::string hi = analysis::human_duration(high_s);
  const auto unit = [](const std::string& t) { return t.substr(t.find_last_of(' ') + 1); };
  if (lo.find(' ') != std::string::npos && hi.find(' ') != std::string::npos && unit(lo) == unit(hi))
    lo = lo.substr(0, lo.find_last_of(' '));
  return lo + "-" + hi;
}

/// The overlap column: "on"/"off" for stages 1 and 2 (both tried), stage 3's ("on", DeepSpeed's default, unless
/// --set zero.overlap_comm=false), "-" for stage 0.
std::string overlap_text(const Candidate& c) { return c.stage == 0 ? "-" : c.overlap ? "on" : "off"; }

/// Does `d` make simulating `c` pointless once `d` fits (and is not a marginal fit: a plan that fits only with
/// cudaMalloc retries or under the marginal shares is ranked after the clean ones, so its twin with offload or
/// checkpointing may be the best clean plan)? Same N_d, stage, overlap, micro-batch and GA, and `d` does
/// no more work in either dimension and strictly less in one: no more offload (CPU Adam and PCIe copies only add
/// time) and no recomputation where `c` has none. The relation is a product of two orders, so it is transitive:
/// a fitting plan without offload or checkpointing dominates the one with both, not only its two neighbours (which
/// are themselves dominated and never simulated).
bool dominates(const Candidate& d, const Candidate& c) {
  if (&d == &c || d.n_d != c.n_d || d.stage != c.stage || d.overlap != c.overlap || d.mb != c.mb || d.ga != c.ga)
    return false;
  const bool less_offload = static_cast<int>(d.offload) <= static_cast<int>(c.offload);
  const bool less_recompute = !d.ckpt || c.ckpt;
  return less_offload && less_recompute && (d.offload != c.offload || d.ckpt != c.ckpt);
}

/// Lower bound of the peak device bytes of `c` from closed forms (never above what the simulation allocates):
/// the model states of the ZeRO paper (§5 / Fig. 1 via zero::paper_model_state_bytes), split into what persists
/// through the step (16-bit parameters, fp32 master weights and Adam moments: P) and the 16-bit gradients (G), plus
/// the activations saved from forward to backward (A: the sum over layers of Layer::saved_activations, workload/)
/// and the CUDA context outside PyTorch's allocator. Gradients grow through backward while the activations it
/// consumes are freed, so at GA 1 the two never need to coexist: P + max(G, A). With GA > 1 the gradients of the
/// earlier micro-steps are there when the last backward starts: P + G + A.
/// With optimizer offload the fp32 master weights and Adam moments live on the host (K = 0), and what stays of the
/// gradients depends on the stage: stage 1 keeps the whole 16-bit gradients until the end of backward (2Ψ + 2Ψ);
/// stage 2 reduces each bucket during backward and copies its slice to the host, so only the 16-bit parameters are
/// sure to be there (2Ψ: DeepSpeed's estimate_zero2_model_states_mem_needs with cpu_offload, zero_semantics.md
/// §2.1); stage 3 moves its gradient partitions to the host too (2Ψ/N_d, the partitioned term of
/// estimate_zero3_model_states_mem_needs, §2.2). With parameter offload DeepSpeed's ZeRO-3 estimator GPU term 4 x
/// largest layer (§2.2). Stage 1 with overlap_comm at GA 1 reduces in its backward hooks and frees each gradient
/// once its bucket is reduced, as stage 2 does (stage_1_and_2.py; sim/zero/stage1_generator.hpp): it is bounded
/// like stage 2.
double lower_bound_bytes(const Candidate& c, const workload::Workload& wl, double cuda_context) {
  const double psi = static_cast<double>(wl.total_params);
  const int stage = c.stage == 1 && c.overlap && c.ga == 1 ? 2 : c.stage;
  const double n = c.n_d;
  double persistent = 0;
  double grads = 0;
  switch (c.offload) {
  case Offload::NONE:
    grads = stage <= 1 ? 2.0 * psi : 2.0 * psi / n;
    persistent = zero::paper_model_state_bytes(stage, psi, c.n_d, 12.0).value() - grads;
    break;
  case Offload::OPTIMIZER:
    persistent = stage == 3 ? 2.0 * psi / n : 2.0 * psi;
    grads = stage == 1 ? 2.0 * psi : 0.0;
    break;
  case Offload::OPTIMIZER_AND_PARAMS:
    persistent = 4.0 * static_cast<double>(wl.largest_layer_params);
    break;
  }
  double act = 0;
  for (const auto& l : wl.layers)
    act += l.saved_activations.value();
  return persistent + (c.ga > 1 ? grads + act : std::max(grads, act)) + cuda_context;
}

} // namespace

int plan_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim plan options");
  visible.add_options() //
      ("model", po::value<std::string>(), "model preset (scenarios/models/) or a Hugging Face config.json") //
      ("gpu", po::value<std::string>(), "GPU preset (topologies/gpus/), e.g. a100-80gb") //
      ("topology", po::value<std::string>(),
       "cluster preset (default: the one with GPU G and most GPUs per node, else G's family's; "
       "docs/sweeps-and-planning.md), a topology file of the preset format, or "
       "a scenario file whose cluster: section to use (its nodes x gpus_per_node is then the default --max-gpus; "
       "--gpu and --host-memory replace its GPU and host RAM)") //
      ("max-gpus", po::value<int>(), "largest N_d searched (default: one node, or a --topology scenario's nodes)") //
      ("tokens", po::value<std::string>(), "tokens to train, e.g. 300B: ranks by time to train") //
      ("global-batch", po::value<int>(), "global batch in sequences: GA = B / (mb x N_d)") //
      ("seq-len", po::value<int>()->default_value(1024),
       "tokens per sequence (default: the model's context length, model.max_positions, when it defines one; else "
       "1024)") //
      ("flash-attention", po::bool_switch(),
       "train with FlashAttention (no s^2 activations, fused attention kernels); the default where the GPU has it "
       "(Ampere and newer: what transformers' default sdpa attention runs)") //
      ("eager-attention", po::bool_switch(),
       "train with eager attention (s^2 scores saved; transformers attn_implementation=\"eager\"); the default on "
       "V100 and Turing") //
      ("headroom", po::value<std::string>(),
       "keep this much GPU memory free at the peak, e.g. 2GiB or 10%; default 5%, 0 for none. Tested on the "
       "memory a plan cannot give back: its nvidia-smi peak less the blocks held for other streams and cached "
       "segments a failed cudaMalloc's retry releases (summary.json nvidia_smi_needed_bytes); a plan whose "
       "nvidia-smi peak misses it is marginal (~), not rejected") //
      ("deadline", po::value<std::string>(), "reject plans slower than this, e.g. 30d (needs --tokens)") //
      ("max-step-time", po::value<std::string>(),
       "reject plans whose step (one optimizer step, x --time-margin) takes longer, e.g. 2s or 800ms") //
      ("time-margin", po::value<std::string>(),
       (std::string("multiply the simulated step time by this factor (1 to 100; default 1, the simulated best case) "
                    "for the time to train, GPU-hours, cost, --deadline and --max-step-time (docs/validation.md: "
                    "measured steps took ") +
        analysis::measured_step_margin_text() +
        "; a \"measured band\" line under the table gives that factor for the GPU's family (for plans with offload: "
        "the offload claims') and the best plan's step, time to train, GPU-h and cost over it, --wide every row's "
        "and --csv every plan's, and a line names the ranks whose simulated throughputs differ by less than the "
        "band's spread: not decidable by simulation)")
           .c_str()) //
      ("price-per-gpu-hour", po::value<double>(), "price of one GPU-hour, for the cost column") //
      ("jobs,j", po::value<int>(), "simulations at once (default: number of cores)") //
      ("top", po::value<int>()->default_value(15), "plans shown") //
      ("wide", po::bool_switch(),
       "also print each plan's measured band under its row (its step, time to train, GPU-h and cost over its GPU "
       "family's band; by default one line per band under the table gives the factor and the best plan's)") //
      ("exhaustive", po::bool_switch(),
       "also simulate plans a fitting plan with less offload or recomputation beats") //
      ("host-memory", po::value<std::string>(),
       "host RAM per node, e.g. 128GiB: offload plans that need more are rejected (default: the topology's, if it "
       "sets one)") //
      ("host-headroom", po::value<std::string>(),
       "keep this much of the host RAM per node free at a plan's host memory peak, e.g. 8GiB or 20%; default 10% "
       "(for the OS and the ranks' Python processes, which are not simulated), 0 for none; needs a host RAM size "
       "(--host-memory or the topology's)") //
      ("csv", po::value<std::string>(), "also write every candidate (ranked, then rejected) to this CSV") //
      ("json", po::value<std::string>(),
       "also write the plan to this JSON file: the inputs it used (time margin, headroom, price, GPU, topology, "
       "sequence length, ...) and every candidate's row with the --csv columns as typed values (docs/outputs.md, "
       "plan.json)") //
      ("set", po::value<std::vector<std::string>>()->composing(),
       "KEY=VALUE: a scenario key for every plan, e.g. training.kernel_impl=fused, zero.overlap_comm=true or the node "
       "shape: cluster.gpus_per_node=4, cluster.nics_per_node=1, cluster.nic.bandwidth=200Gbps (a key plan searches "
       "is refused, except zero.overlap_comm, which then replaces its search)") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(visible).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("plan: ") + e.what() + " (" + kPlanUsage + ")");
  }
  if (vm["help"].as<bool>()) {
    std::cout << kPlanUsage << "\n\n" << visible << "\n";
    return 0;
  }
  (void)progress_line_seconds(); // a bad ZEROSIM_PROGRESS_SECONDS is an error now, not when the first line is due
  if (!vm.count("model") || !vm.count("gpu"))
    throw UsageError(std::string("plan: --model and --gpu are required (") + kPlanUsage + ")");
  if (vm.count("deadline") && !vm.count("tokens"))
    throw UsageError("plan: --deadline needs --tokens (the deadline bounds the time to train them)");
  if (vm.count("price-per-gpu-hour") && !vm.count("tokens"))
    throw UsageError("plan: --price-per-gpu-hour needs --tokens (the cost is that of training them)");
  if (vm["top"].as<int>() < 1)
    throw UsageError("plan: --top must be at least 1");
  const std::string gpu = vm["gpu"].as<std::string>();
  if (!scenario::is_valid_utf8(vm["model"].as<std::string>()))
    throw UsageError("plan: --model: not valid UTF-8; give the preset name or path in UTF-8");
  const std::string model = model_ref_for_scenario(vm["model"].as<std::string>());
  std::string topology = vm.count("topology") ? vm["topology"].as<std::string>()
                                              : topology_for(gpu, vm.count("max-gpus") ? vm["max-gpus"].as<int>() : 0);
  std::error_code gpu_ec;
  if (topology.empty() && !fs::exists(fs::path(scenario::data_dir()) / "topologies" / "gpus" / (gpu + ".yaml"), gpu_ec))
    topology = "one-rtx4090"; // not a GPU preset: the loader names it (with its "did you mean")
  if (topology.empty())
    throw UsageError("plan: --gpu " + gpu +
                     ": no topology preset has this GPU or one of its family; give --topology (its nodes then get "
                     "this GPU; `zerosim list` names the presets)");
  const double tokens = vm.count("tokens") ? parse_count("--tokens", vm["tokens"].as<std::string>()) : 0;
  const double deadline =
      vm.count("deadline") ? parse_duration("plan", "--deadline", vm["deadline"].as<std::string>(), "30d") : 0;
  const double max_step = vm.count("max-step-time")
                              ? parse_duration("plan", "--max-step-time", vm["max-step-time"].as<std::string>(), "2s")
                              : 0;
  const double margin = vm.count("time-margin") ? parse_time_margin("plan", vm["time-margin"].as<std::string>()) : 1.0;
  if (vm.count("time-margin") && !vm.count("tokens") && !vm.count("max-step-time"))
    throw UsageError(
        "plan: --time-margin needs --tokens or --max-step-time (it lengthens the time to train the "
        "tokens, their GPU-hours and cost, and the step that --deadline and --max-step-time test)");
  const double price = vm.count("price-per-gpu-hour") ? vm["price-per-gpu-hour"].as<double>() : 0;
  if (vm.count("price-per-gpu-hour") && !(price > 0))
    throw UsageError("plan: --price-per-gpu-hour must be > 0");
  const int global_batch = vm.count("global-batch") ? vm["global-batch"].as<int>() : 0;
  if (vm.count("global-batch") && global_batch < 1)
    throw UsageError("plan: --global-batch must be at least 1");
  if (vm.count("jobs") && vm["jobs"].as<int>() < 1)
    throw UsageError("plan: --jobs must be at least 1");
  const unsigned jobs = vm.count("jobs") ? static_cast<unsigned>(vm["jobs"].as<int>())
                                         : std::max(1u, std::thread::hardware_concurrency());
  // --set: scenario keys every candidate gets, before its own (the keys plan searches are refused); each read once
  // as the loader reads it (scenario::normalize_override: KEY=VALUE without blanks around the '='), and used so.
  const std::vector<std::string> raw_sets =
      vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  check_distinct_sets(raw_sets);
  std::vector<std::string> user_sets;
  for (const std::string& raw : raw_sets) {
    user_sets.push_back(scenario::normalize_override(raw));
    const auto eq = user_sets.back().find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("plan: --set needs KEY=VALUE, got '" + raw + "'");
  }
  std::optional<bool> pinned_overlap; // --set zero.overlap_comm: stages 1-3 use it (1 and 2 instead of trying both)
  bool cpu_checkpointing = false; // --set training.cpu_checkpointing=true: only plans with (full) checkpointing
  for (const std::string& a : user_sets) {
    const auto eq = a.find('=');
    const std::string key = a.substr(0, eq);
    // cluster.gpus_per_node is the node's shape, not searched: N_d runs over powers of two within a node of that
    // size, then whole nodes (the candidates set it to the GPUs they use of a node, below). The node count is.
    if (key == "cluster.nodes")
      throw UsageError(
          "plan: --set cluster.nodes: plan searches the number of nodes (N_d = nodes x "
          "cluster.gpus_per_node, up to --max-gpus); give --max-gpus to bound it, or use `zerosim run` "
          "or `zerosim sweep` to fix it");
    static const std::vector<std::pair<std::string, std::string>> searched =
        {{"zero.stage", "the ZeRO stage (0-3)"},
         {"zero.offload_optimizer", "offload (none, optimizer, optimizer + parameters to the CPU)"},
         {"zero.offload_param", "offload (none, optimizer, optimizer + parameters to the CPU)"},
         {"training.micro_batch", "the micro-batch (1, 2, 4, 8, 16)"},
         {"training.grad_accum", "GA (--global-batch / (micro-batch x N_d) with --global-batch, else 1)"},
         {"training.activation_checkpointing", "activation checkpointing (off and on)"}};
    for (const auto& [k, what] : searched)
      if (key == k)
        throw UsageError("plan: --set " + key + ": plan searches this key: " + what +
                         "; use `zerosim run` or `zerosim sweep` to fix it");
    // Keys with an option of their own: the option, or its default, would otherwise be overridden in silence
    // (while the header names the option's value).
    static const std::vector<std::pair<std::string, std::string>> by_option =
        {{"model", "--model"},
         {"model.preset", "--model"},
         {"cluster.topology", "--topology"},
         {"cluster.gpu", "--gpu"},
         {"cluster.gpu.preset", "--gpu"},
         {"cluster.host_memory", "--host-memory"},
         {"training.seq_len", "--seq-len"},
         {"training.flash_attention", "--flash-attention or --eager-attention"}};
    for (const auto& [k, option] : by_option)
      if (key == k)
        throw UsageError("plan: --set " + key + ": plan sets this key from " + option + "; use " + option);
    // How each candidate is simulated is plan's (analytic fidelity, 2 steps, past an OOM, folded ranks).
    if (key == "simulation.fidelity" || key == "simulation.steps" || key == "simulation.on_oom" ||
        key == "simulation.fold")
      throw UsageError("plan: --set " + key +
                       ": plan simulates every candidate its own way (analytic fidelity, 2 steps, on_oom: continue, "
                       "fold: auto); use `zerosim run` or `zerosim sweep` to simulate a plan otherwise");
    if (key == "compare" || key == "compare_set" || key == "sweep")
      throw UsageError("plan: --set " + key + ": plan runs one scenario per candidate, without " + key +
                       "; use `zerosim run` or `zerosim sweep` for comparisons");
    if (key == "training.cpu_checkpointing") {
      const std::string v = a.substr(eq + 1);
      if (v != "true" && v != "false")
        throw UsageError("plan: --set training.cpu_checkpointing: expected true or false, got '" + v + "'");
      cpu_checkpointing = v == "true";
    }
    if (key == "zero.overlap_comm") {
      const std::string v = a.substr(eq + 1);
      if (v != "true" && v != "false")
        throw UsageError("plan: --set zero.overlap_comm: expected true or false, got '" + v + "'");
      pinned_overlap = v == "true";
    }
  }

  // --topology a scenario file: its cluster: section, validated at its own lines (with the --set cluster keys)
  // before it is copied into the base scenario below; its nodes x gpus_per_node is the default --max-gpus.
  if (vm.count("topology"))
    require_topology_file("plan", topology);
  const bool topology_scenario = vm.count("topology") && names_scenario_file(topology);
  YAML::Node file_cluster(YAML::NodeType::Map);
  int file_gpus = 0;
  if (topology_scenario) {
    std::vector<std::string> cluster_sets;
    for (const std::string& a : user_sets)
      if (a.rfind("cluster.", 0) == 0)
        cluster_sets.push_back(a);
    file_gpus = load_scenario_cluster("plan", topology, cluster_sets).world_size();
    if (const YAML::Node c = YAML::LoadFile(topology)["cluster"]; c.IsMap())
      file_cluster = YAML::Clone(c);
  }
  // The cluster: section of the base scenario: the scenario file's (without its nodes, which plan searches, and with
  // a relative topology file made absolute: the base lives elsewhere), else --topology's preset or topology file;
  // --gpu replaces the GPU (an inline GPU map keeps its keys over the --gpu preset).
  const YAML::Node base_cluster = [&] {
    YAML::Node c = YAML::Clone(file_cluster);
    std::error_code ec;
    const auto absolute = [&](const std::string& file, const fs::path& dir) {
      const fs::path p(file);
      return (p.is_absolute() ? p : fs::absolute(dir / p, ec)).lexically_normal().string();
    };
    if (topology_scenario) {
      c.remove("nodes");
      const YAML::Node& cc = c;
      if (cc["topology"] && cc["topology"].IsScalar() && scenario::names_topology_file(cc["topology"].Scalar()))
        c["topology"] = absolute(cc["topology"].Scalar(), fs::path(topology).parent_path());
    } else {
      c["topology"] = scenario::names_topology_file(topology) ? absolute(topology, fs::path(".")) : topology;
    }
    const YAML::Node& cc = c;
    if (cc["gpu"] && cc["gpu"].IsMap())
      c["gpu"]["preset"] = gpu;
    else
      c["gpu"] = gpu;
    // A GPU without NVLink SHARP put into an NVLS node (--topology dgx-h100 --gpu a100-80gb) runs ring/tree.
    if (!scenario::has_nvlink_sharp_gpu(gpu))
      c["nvls"] = false;
    if (vm.count("host-memory"))
      c["host_memory"] = vm["host-memory"].as<std::string>();
    return c;
  }();
  // The base scenario, in a private temporary file: every candidate is this plus --set style overrides, so the
  // loader validates the model, GPU and topology names once here (ScenarioError, exit 2).
  // Removed on exit and on Ctrl-C (or a kill), which ends the process in the signal handler, past destructors.
  const TempDir tmp("plan");
  const std::string base_path = (tmp.path() / "plan.yaml").string();
  // The base scenario's text; `flash` is --flash-attention unless the GPU cannot run FlashAttention (below).
  // `flash` unset: the loader's default for the GPU (training.flash_attention unwritten).
  // The sequence length: --seq-len, or unset the model's context length (below, once the model is loaded).
  int seq_len = vm["seq-len"].as<int>();
  const auto write_base = [&](std::optional<bool> flash) {
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << "plan" << YAML::Key << "model" << YAML::Value << model
      << YAML::Key << "training" << YAML::Value << YAML::BeginMap << YAML::Key << "seq_len" << YAML::Value << seq_len;
    if (flash)
      e << YAML::Key << "flash_attention" << YAML::Value << *flash;
    if (cpu_checkpointing) // the checkpoints it moves to the host exist only with checkpointing
      e << YAML::Key << "activation_checkpointing" << YAML::Value << true;
    e << YAML::EndMap << YAML::Key << "cluster" << YAML::Value << base_cluster;
    e << YAML::Key << "simulation" << YAML::Value << YAML::BeginMap << YAML::Key << "steps" << YAML::Value << 2
      << YAML::Key << "fidelity" << YAML::Value << "analytic" << YAML::Key << "on_oom" << YAML::Value << "continue"
      << YAML::Key << "fold" << YAML::Value << "auto" << YAML::EndMap << YAML::EndMap;
    std::ofstream(base_path) << e.c_str() << "\n";
  };
  // A GPU without FlashAttention (gpu.flash_attention: false, e.g. V100) plans with eager attention, and the header
  // says so; one without bf16 tensor cores gets fp16 from the loader (training.precision is not written here).
  bool flash_dropped = false;
  const bool flash_flag = vm["flash-attention"].as<bool>();
  const bool eager_flag = vm["eager-attention"].as<bool>();
  if (flash_flag && eager_flag)
    throw UsageError("plan: --flash-attention and --eager-attention exclude each other");
  write_base(flash_flag ? std::optional<bool>(true) : eager_flag ? std::optional<bool>(false) : std::nullopt);
  // An error in the generated file comes from one of the options: name the option, not the private file.
  const auto load_base = [&] {
    try {
      try {
        return scenario::load_scenario(base_path, user_sets).front().scenario;
      } catch (const ScenarioError& e) {
        if (e.key() != "training.flash_attention" || !flash_flag)
          throw;
        flash_dropped = true;
        write_base(std::nullopt);
        return scenario::load_scenario(base_path, user_sets).front().scenario;
      }
    } catch (const ScenarioError& e) {
      const std::string& k = e.key();
      const std::string option = k.rfind("model", 0) == 0                       ? "--model"
                                 : k == "cluster.gpu" || k.rfind("gpu", 0) == 0 ? "--gpu"
                                 : k.rfind("training.seq_len", 0) == 0          ? "--seq-len"
                                 : k == "cluster.host_memory"                   ? "--host-memory"
                                 : k.rfind("cluster", 0) == 0                   ? "--topology"
                                                                                : k;
      const std::string what = e.what();
      const auto at = what.find(": " + k + ": ");
      // A file the user gave (a config.json as --model) keeps its place: "--model cfg.json:1: model.model_type: ...".
      const bool user_file = e.file() != base_path && e.file() != "<cli>" && !e.file().empty();
      throw UsageError("plan: " + option + ": " +
                       (user_file                 ? what
                        : at == std::string::npos ? what
                                                  : what.substr(at + k.size() + 4)));
    }
  };
  scenario::Scenario base = load_base();
  // Without --seq-len, the sequences are as long as the model was trained for (its config.json's
  // max_position_embeddings, model.max_positions) when it says: planning Llama-2 at 1024 tokens hides what 4096 needs
  // (newuser31 F16). A model that does not say keeps 1024; the header names which and why.
  std::string seq_len_why;
  if (vm["seq-len"].defaulted()) {
    seq_len_why = " (--seq-len default)";
    if (const std::int64_t context = base.model.max_positions; context > 0) {
      seq_len_why = fmt::format(" (the model's context length, model.max_positions {}: --seq-len unset)", context);
      if (context != seq_len) {
        seq_len = static_cast<int>(context);
        write_base(flash_dropped ? std::nullopt
                   : flash_flag  ? std::optional<bool>(true)
                   : eager_flag  ? std::optional<bool>(false)
                                 : std::nullopt);
        base = load_base();
      }
    }
  }
  const int gpn = base.cluster.gpus_per_node;
  // --set without cluster.gpus_per_node: every candidate sets it to the GPUs it uses of a node (its sets()), and the
  // loader refuses one key given twice in one layer. The base above has the user's node size (gpn).
  std::vector<std::string> node_sets;
  for (const std::string& a : user_sets)
    if (a.rfind("cluster.gpus_per_node=", 0) != 0)
      node_sets.push_back(a);
  const int max_gpus = vm.count("max-gpus") ? vm["max-gpus"].as<int>() : std::max(gpn, file_gpus);
  if (max_gpus < 1)
    throw UsageError("plan: --max-gpus must be at least 1");
  if (max_gpus > scenario::kMaxWorldGpus)
    throw UsageError(fmt::format("plan: --max-gpus {}: above the {} GPUs zerosim simulates; use --max-gpus {} or less",
                                 max_gpus, scenario::kMaxWorldGpus, scenario::kMaxWorldGpus));
  if (max_gpus > gpn && base.cluster.fabric == scenario::FabricKind::NONE)
    throw UsageError(
        fmt::format("plan: --max-gpus {}: topology {} has {} GPU{} per node and no network between "
                    "nodes; use --max-gpus {} or a topology with a fabric (e.g. dgx-a100)",
                    max_gpus, topology, gpn, gpn == 1 ? "" : "s", gpn));
  const double capacity = base.cluster.gpu.memory.value();
  // Default 5 %: the margin a planner keeps for what the model leaves out (docs/sweeps-and-planning.md "Headroom").
  const double headroom = vm.count("headroom")
                              ? parse_headroom("plan", vm["headroom"].as<std::string>(), capacity)
                              : capacity * analysis::kDefaultHeadroomPercent / 100.0; // as parse_headroom("5%")
  const double usable = capacity - headroom; ///< what the memory a plan cannot give back may reach
  const std::string usable_text = headroom > 0 ? fmt::format("{:.1f} GiB ({:.1f} GiB - --headroom {:.1f} GiB)",
                                                             usable / kGiB, capacity / kGiB, headroom / kGiB)
                                               : fmt::format("{:.1f} GiB", capacity / kGiB);
  // Host RAM per node (0 = unlimited) and what a plan must leave free of it: default kHostMarginalPercent %, the
  // share below which `zerosim run` calls a fit marginal (the OS and the ranks' processes are not simulated), as the
  // GPU's default headroom is its marginal share: a planner keeps both margins. No size, no gate (and an explicit
  // --host-headroom is an error: nothing to keep free of).
  const double host_capacity = base.cluster.host_memory.value();
  const bool host_headroom_pct = !vm.count("host-headroom") || vm["host-headroom"].as<std::string>().back() == '%';
  const double host_headroom =
      vm.count("host-headroom")
          ? parse_host_headroom("plan", vm["host-headroom"].as<std::string>(), host_capacity,
                                "--host-memory SIZE (e.g. 128GiB)")
          : host_capacity * analysis::kHostMarginalPercent / 100.0; // as parse_host_headroom("10%")
  const bool exhaustive = vm["exhaustive"].as<bool>();
  const bool wide = vm["wide"].as<bool>();
  // --csv and --json are written after the search: a directory that does not exist fails now, not minutes later.
  const auto check_output_file = [&](const char* option) {
    const fs::path file(vm[option].as<std::string>());
    const std::string opt = std::string("--") + option;
    if (file.empty())
      throw UsageError("plan: " + opt + ": empty path (give a file, e.g. " + opt + " plan." + option + ")");
    const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    if (!fs::is_directory(dir, ec) || fs::is_directory(file, ec))
      throw UsageError("plan: " + opt + " " + file.string() + ": " +
                       (fs::is_directory(file, ec) ? std::string("is a directory")
                        : fs::exists(dir, ec)      ? dir.string() + " is not a directory"
                                                   : "its directory does not exist"));
    // Writable as it will be written (analysis/atomic_file.hpp): a temporary file beside it (root passes access(2)
    // checks, so try it). A device or FIFO is written in place later; opening a FIFO now would hand its reader an
    // early end of file, so it is not probed.
    bool writable = true;
    if (!fs::exists(file, ec) || fs::is_regular_file(file, ec)) {
      const fs::path probe = dir / (".zerosim-" + std::string(option) + "-probe-" + std::to_string(::getpid()));
      writable = static_cast<bool>(std::ofstream(probe));
      fs::remove(probe, ec);
    }
    if (!writable)
      throw UsageError("plan: " + opt + " " + file.string() + ": cannot be written");
  };
  if (vm.count("csv"))
    check_output_file("csv");
  if (vm.count("json"))
    check_output_file("json");
  if (vm.count("csv") && vm.count("json")) {
    std::error_code ec;
    // Absolute first: weakly_canonical keeps a relative path whose first element does not exist relative, so
    // "x.csv" and "./x.csv" would differ.
    const fs::path a = fs::weakly_canonical(fs::absolute(vm["csv"].as<std::string>()), ec);
    const fs::path b = fs::weakly_canonical(fs::absolute(vm["json"].as<std::string>()), ec);
    if (a == b)
      throw UsageError("plan: --csv and --json name the same file, " + vm["json"].as<std::string>() +
                       "; give each its own");
  }

  const auto t0 = std::chrono::steady_clock::now();
  // ---- enumerate
  std::vector<Candidate> cands;
  std::size_t groups = 0;
  std::size_t batch_mismatch = 0;
  std::set<int> nd_all; // every N_d enumerated
  std::set<int> nd_batch_ok; // those for which some micro-batch divides the global batch
  std::size_t ga_too_large = 0; // (mb, N_d) whose GA for --global-batch exceeds scenario::kMaxGradAccum
  // N_d: 1, 2, 4, ... GPUs of one node (cluster.gpus_per_node), then 2, 4, ... whole nodes.
  std::vector<std::pair<int, int>> shapes; // (nodes, gpus per node)
  for (int g = 1; g < gpn && g <= max_gpus; g *= 2)
    shapes.emplace_back(1, g);
  for (int nodes = 1; nodes * gpn <= max_gpus; nodes *= 2)
    shapes.emplace_back(nodes, gpn);
  // --max-gpus itself, when it is not a power of two but part of a node or whole nodes (the 24 GPUs of 3 nodes a
  // user has): the largest setup asked for is always searched.
  if (max_gpus < gpn && (max_gpus & (max_gpus - 1)) != 0)
    shapes.emplace_back(1, max_gpus);
  else if (max_gpus > gpn && max_gpus % gpn == 0 && ((max_gpus / gpn) & (max_gpus / gpn - 1)) != 0)
    shapes.emplace_back(max_gpus / gpn, gpn);
  const std::vector<std::pair<int, int>> all_shapes = shapes; // what --max-gpus asks for (the header's "N_d up to")
  // A shape the topology cannot take (e.g. a mesh node such as mi300x-8 is modelled on one node only) would have
  // every candidate rejected as "not a valid scenario", visible only in --csv: it is left out of the search, and a
  // line below says which N_d and why (the loader's message without its location).
  std::map<int, std::string> nd_invalid; // N_d -> why
  std::erase_if(shapes, [&](const std::pair<int, int>& shape) {
    try {
      std::vector<std::string> sets = node_sets;
      sets.push_back(fmt::format("cluster.nodes={}", shape.first));
      sets.push_back(fmt::format("cluster.gpus_per_node={}", shape.second));
      (void)scenario::load_scenario(base_path, sets);
      return false;
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      const auto at = what.find(": " + e.key() + ": ");
      nd_invalid.emplace(shape.first * shape.second, at == std::string::npos ? what : what.substr(at + 2));
      return true;
    }
  });
  if (shapes.empty())
    throw UsageError("plan: no N_d up to --max-gpus " + std::to_string(max_gpus) + " is a valid scenario on " +
                     topology + ": " + nd_invalid.begin()->second);
  for (const auto& [nodes, per_node] : shapes)
    for (int stage = 0; stage <= 3; ++stage)
      for (Offload off : {Offload::NONE, Offload::OPTIMIZER, Offload::OPTIMIZER_AND_PARAMS}) {
        if (off != Offload::NONE && stage == 0)
          continue; // DeepSpeed offload needs ZeRO (stage >= 1; zero_semantics.md §3.1)
        if (off == Offload::OPTIMIZER_AND_PARAMS && stage != 3)
          continue; // parameter offload is stage 3 only
        for (bool overlap : {false, true})
          for (bool ckpt : {false, true}) {
            if (cpu_checkpointing && !ckpt)
              continue; // --set training.cpu_checkpointing=true: its checkpoints need checkpointing
            if (stage == 0 && overlap)
              continue; // stage 0 has no overlap_comm
            if (stage == 3 && overlap != pinned_overlap.value_or(true))
              continue; // DeepSpeed's stage-3 default (on), or --set zero.overlap_comm
            if ((stage == 1 || stage == 2) && pinned_overlap && overlap != *pinned_overlap)
              continue; // both tried, unless --set zero.overlap_comm
            const std::size_t g = groups++;
            for (int mb : kMicroBatches) {
              Candidate c;
              c.nodes = nodes;
              c.gpus_per_node = per_node;
              c.n_d = nodes * per_node;
              c.stage = stage;
              c.overlap = overlap;
              c.offload = off;
              c.mb = mb;
              c.ckpt = ckpt;
              c.group = g;
              nd_all.insert(c.n_d);
              if (global_batch > 0) {
                if (global_batch % (mb * c.n_d) != 0) {
                  ++batch_mismatch;
                  continue; // this (mb, N_d) cannot make the global batch
                }
                nd_batch_ok.insert(c.n_d);
                c.ga = global_batch / (mb * c.n_d);
                if (c.ga > scenario::kMaxGradAccum) {
                  ++ga_too_large; // not simulable; a larger micro-batch of the same plan may be
                  continue;
                }
              }
              cands.push_back(c);
            }
          }
      }
  if (cands.empty())
    throw UsageError(
        fmt::format("plan: no (micro-batch, N_d) divides --global-batch {} with at most {} accumulation micro-steps "
                    "(micro-batches 1..16, N_d = powers of two up to {} within a node of {}, then whole nodes)",
                    global_batch, scenario::kMaxGradAccum, max_gpus, gpn));

  // ---- prune with the closed forms (a lower bound above the capacity cannot fit)
  std::map<std::pair<int, bool>, workload::Workload> wls;
  std::size_t pruned = 0;
  for (Candidate& c : cands) {
    auto key = std::make_pair(c.mb, c.ckpt);
    if (wls.count(key) == 0) {
      scenario::TrainingSpec t = base.training;
      t.micro_batch = c.mb;
      t.activation_checkpointing = c.ckpt;
      wls.emplace(key, workload::build_workload(base.model, t));
    }
    const double lb = lower_bound_bytes(c, wls.at(key), base.simulation.cuda_context.value());
    c.lower_bound = lb;
    if (lb > usable) {
      c.state = Candidate::State::PRUNED;
      c.reason = fmt::format("closed form: model states + saved activations + CUDA context >= {:.1f} GiB > {}",
                             lb / kGiB, usable_text);
      ++pruned;
    }
  }

  // ---- simulate in rounds: each round runs the smallest pending micro-batch of every live group; an OOM ends
  // its group (memory grows with the micro-batch, so larger ones are rejected without simulating).
  std::size_t simulated = 0;
  std::map<std::size_t, std::string> dead; // group -> the OOM that ended it
  const bool tty = ::isatty(2) != 0;
  double last_line = 0; // seconds since t0 at the last progress line on a non-terminal stderr
  for (;;) {
    std::vector<std::size_t> round;
    std::map<std::size_t, bool> taken;
    for (std::size_t i = 0; i < cands.size(); ++i) {
      Candidate& c = cands[i];
      if (c.state != Candidate::State::PENDING)
        continue;
      if (dead.count(c.group) != 0) {
        c.state = Candidate::State::SKIPPED;
        c.reason = dead.at(c.group);
        continue;
      }
      if (taken.count(c.group) != 0)
        continue;
      if (!exhaustive) {
        bool waiting = false;
        const Candidate* winner = nullptr;
        for (const Candidate& d : cands) {
          if (!dominates(d, c))
            continue;
          if (d.state == Candidate::State::PENDING)
            waiting = true;
          else if (d.state == Candidate::State::SIMULATED && d.fits && !d.marginal.marginal && winner == nullptr)
            winner = &d; // a marginal fit (ranked after the clean plans) leaves its safer twin to be simulated
        }
        if (winner != nullptr) {
          c.state = Candidate::State::DOMINATED;
          c.reason = "not simulated: " + winner->text() + " fits and does less work";
          continue;
        }
        if (waiting) {
          taken[c.group] = true; // the group waits for the plan that would make this one pointless
          continue;
        }
      }
      taken[c.group] = true;
      round.push_back(i);
    }
    if (round.empty()) {
      // Cannot happen (dominance is a strict order within one (N_d, stage, mb, GA)), but never leave work behind.
      for (std::size_t i = 0; i < cands.size() && round.empty(); ++i)
        if (cands[i].state == Candidate::State::PENDING && dead.count(cands[i].group) == 0)
          round.push_back(i);
    }
    if (round.empty())
      break;
    std::vector<analysis::SweepPoint> pts;
    std::vector<std::string> keys;
    // A plan with more than kSimulatedGa accumulation micro-steps is simulated at GA = kSimulatedGa - 1 and
    // kSimulatedGa and extrapolated (extrapolate_ga): its own GA would cost simulation time linear in GA (GA 256
    // of a 7B model: 6 s against 0.2 s) for micro-steps that repeat exactly. second[k] is the index of round[k]'s
    // GA - 1 point, or npos.
    std::vector<std::size_t> second(round.size(), std::string::npos);
    const auto add_point = [&](std::size_t cand, int ga) {
      analysis::SweepPoint p;
      p.index = pts.size();
      for (const std::string& s : node_sets)
        p.overrides.emplace_back(s.substr(0, s.find('=')), s.substr(s.find('=') + 1));
      for (const std::string& s : cands[cand].sets()) {
        std::string key = s.substr(0, s.find('='));
        std::string value = s.substr(s.find('=') + 1);
        if (key == "training.grad_accum")
          value = std::to_string(ga);
        p.overrides.emplace_back(std::move(key), std::move(value));
      }
      pts.push_back(p);
      keys.push_back(analysis::point_key(p));
    };
    for (std::size_t k = 0; k < round.size(); ++k)
      add_point(round[k], std::min(cands[round[k]].ga, kSimulatedGa));
    for (std::size_t k = 0; k < round.size(); ++k)
      if (cands[round[k]].ga > kSimulatedGa) {
        second[k] = pts.size();
        add_point(round[k], kSimulatedGa - 1);
      }
    const auto make = [&](std::size_t k) {
      return std::move(load_checked_scenario(base_path, pts[k].as_set_args()).front());
    };
    const auto rows = run_points(pts, keys, make, jobs, "", Progress::NONE, 0, pts.size());
    simulated += round.size();
    for (std::size_t k = 0; k < round.size(); ++k) {
      Candidate& c = cands[round[k]];
      c.row = second[k] == std::string::npos ? rows[k] : extrapolate_ga(rows[k], rows[second[k]], c.ga);
      // At the plan's own GA: an extrapolated row's collectives in flight and step are its GA's.
      c.row.collective_bound =
          c.row.ok && c.row.steady_state &&
          analysis::is_collective_bound(c.n_d, c.gpus_per_node, c.row.breakdown.comm_busy_s, c.row.step_time_s);
      c.state = Candidate::State::SIMULATED;
      c.marginal = analysis::marginal_fit(c.row.ok && c.row.fits, c.row.alloc_retries, c.row.nvidia_smi_bytes,
                                          c.row.nvidia_smi_needed_bytes, c.row.capacity_bytes,
                                          c.row.host_node_peak_bytes, host_capacity, headroom);
      // Within the capacity (the simulation's OOM rule), what it cannot give back below the usable memory
      // (--headroom; a plan whose nvidia-smi peak is above it keeps the headroom only by cache flushes: marginal,
      // MarginalFit::by_flushes), and leaving --host-headroom of the host RAM.
      const std::string host_miss = c.row.ok && c.row.fits
                                        ? host_headroom_miss(c.row.host_node_peak_bytes, host_capacity, host_headroom)
                                        : std::string();
      const bool gpu_room = leaves_headroom(c.row.nvidia_smi_needed_bytes, capacity, headroom);
      c.fits = c.row.ok && c.row.fits && gpu_room && host_miss.empty();
      if (!c.row.ok) {
        c.reason = (c.row.invalid ? "not a valid scenario: " : "simulation failed: ") + c.row.error;
        dead[c.group] = fmt::format("not simulated: the same plan at mb {} failed", c.mb);
      } else if (!c.fits) {
        if (!c.row.fits)
          c.reason = c.row.oom_reason.empty() ? fmt::format("does not fit: {:.1f} GiB (nvidia-smi) > {}",
                                                            c.row.nvidia_smi_bytes / kGiB, usable_text)
                                              : "OOM: " + c.row.oom_reason;
        else if (!gpu_room)
          c.reason =
              fmt::format("does not fit: {:.1f} GiB it cannot give back > {}{}", c.row.nvidia_smi_needed_bytes / kGiB,
                          usable_text,
                          c.row.nvidia_smi_bytes - c.row.nvidia_smi_needed_bytes >= kMiB
                              ? fmt::format(" (nvidia-smi {:.1f} GiB less {:.1f} GiB a cudaMalloc retry gives back)",
                                            c.row.nvidia_smi_bytes / kGiB,
                                            (c.row.nvidia_smi_bytes - c.row.nvidia_smi_needed_bytes) / kGiB)
                              : std::string(" (= nvidia-smi)"));
        if (!host_miss.empty())
          c.reason +=
              (c.reason.empty() ? "" : "; ") + host_miss +
              fmt::format(" ({:.2f} GiB - --host-headroom {:.2f} GiB)", host_capacity / kGiB, host_headroom / kGiB);
        // Past a host OOM plan simulates on as if memory were unlimited (on_oom: continue): the node's peak is the
        // whole need.
        if (c.row.oom_on_host && c.row.host_node_peak_bytes > 0)
          c.reason += fmt::format(
              "; simulated on past it as if memory were unlimited, the plan needs {:.2f} GiB of host RAM per node",
              c.row.host_node_peak_bytes / kGiB);
        // Host memory does not shrink with a larger micro-batch (the same states, more CPU checkpoints if any).
        if (c.row.fits && gpu_room)
          dead[c.group] = fmt::format(
              "a smaller micro-batch already leaves less than --host-headroom free (mb {} needs {:.1f} GiB of host "
              "RAM per node)",
              c.mb, c.row.host_node_peak_bytes / kGiB);
        else if (c.row.fits)
          dead[c.group] = fmt::format(
              "a smaller micro-batch already leaves less than --headroom free (mb {} cannot give back "
              "{:.1f} GiB)",
              c.mb, c.row.nvidia_smi_needed_bytes / kGiB);
        else if (c.row.oom_on_host)
          dead[c.group] = fmt::format(
              "a smaller micro-batch already runs out of host memory (mb {} needs {:.0f} GiB "
              "of host RAM per node)",
              c.mb, c.row.host_node_peak_bytes / kGiB);
        else
          dead[c.group] = fmt::format(
              "a smaller micro-batch already runs out of memory (mb {} reaches {:.1f} GiB "
              "nvidia-smi when run past its OOM)",
              c.mb, c.row.nvidia_smi_bytes / kGiB);
      }
    }
    const std::string counts =
        fmt::format("plan: {} simulated, {} pruned of {} candidates", simulated, pruned, cands.size());
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (tty) {
      std::cerr << "\r" << counts << std::flush;
    } else if (now - last_line >= progress_line_seconds() &&
               std::any_of(cands.begin(), cands.end(), [&](const Candidate& c) {
                 return c.state == Candidate::State::PENDING && dead.count(c.group) == 0;
               })) {
      // A log or a pipe: a plain line now and then, so a long search shows it is alive.
      last_line = now;
      std::cerr << counts << ", still searching after " << analysis::human_duration(now) << "\n" << std::flush;
    }
  }
  if (tty)
    std::cerr << "\n";

  // ---- rank the feasible plans
  struct Plan {
    const Candidate* c;
    double ttt_s = 0; ///< time to train `tokens`
    double gpu_hours = 0;
    double cost = 0;
    bool pareto = false;
  };
  std::vector<Plan> plans;
  std::vector<const Candidate*> rejected;
  // " (x1.3 --time-margin)" after a time to train the margin multiplied; "" without one.
  const std::string margin_text = margin > 1 ? fmt::format(" (x{:.4g} --time-margin)", margin) : std::string();
  for (Candidate& c : cands) {
    if (c.state == Candidate::State::SIMULATED && c.fits && c.row.tokens_per_s > 0) {
      Plan p{&c};
      const Commitments m = commitments(c.row.step_time_s, c.row.tokens_per_s, c.n_d, tokens, price, margin);
      p.ttt_s = m.ttt_s;
      p.gpu_hours = m.gpu_hours;
      p.cost = m.cost;
      std::vector<std::string> misses;
      if (tokens > 0 && deadline > 0 && p.ttt_s > deadline)
        misses.push_back(fmt::format("misses the deadline: {}{} > {}", analysis::human_duration(p.ttt_s), margin_text,
                                     analysis::human_duration(deadline)));
      if (max_step > 0 && m.step_s > max_step)
        misses.push_back(fmt::format("misses --max-step-time: {} > {:.4g} s",
                                     margined_step_text(c.row.step_time_s, margin), max_step));
      if (!misses.empty()) {
        c.reason = fmt::format("{}", fmt::join(misses, "; "));
        rejected.push_back(&c);
        continue;
      }
      plans.push_back(p);
    } else {
      rejected.push_back(&c);
    }
  }
  // Best first: plans that are not marginal fits (Candidate::marginal) before marginal ones (a retry means the
  // allocator already ran out of room once, and under 5 % free leaves little for what the simulation does not see, a
  // display or another process: either can turn it into an OOM), then the highest throughput (= shortest step per
  // token and time to train), then fewer GPUs, then the enumeration order (deterministic).
  std::stable_sort(plans.begin(), plans.end(), [](const Plan& a, const Plan& b) {
    if (a.c->marginal.marginal != b.c->marginal.marginal)
      return b.c->marginal.marginal;
    if (a.c->row.tokens_per_s != b.c->row.tokens_per_s)
      return a.c->row.tokens_per_s > b.c->row.tokens_per_s;
    return a.c->n_d < b.c->n_d;
  });
  // Pareto front on (time to train, GPU-hours) with --tokens (cost = GPU-hours x price: the same front), else on
  // (step time per token, GPUs): a plan is on it when no other plan is at least as good on both and better on one.
  // A marginal plan does not push a plan that is not marginal off the front: the clean plans have their own front,
  // so a safe choice is always starred.
  const auto second = [tokens](const Plan& p) { return tokens > 0 ? p.gpu_hours : static_cast<double>(p.c->n_d); };
  for (Plan& p : plans) {
    p.pareto = true;
    for (const Plan& q : plans) {
      if (&p == &q || (!p.c->marginal.marginal && q.c->marginal.marginal))
        continue;
      const bool no_worse = q.c->row.tokens_per_s >= p.c->row.tokens_per_s && second(q) <= second(p);
      const bool better = q.c->row.tokens_per_s > p.c->row.tokens_per_s || second(q) < second(p);
      if (no_worse && better) {
        p.pareto = false;
        break;
      }
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // ---- print
  // N_d searched: powers of two within a node, then 2, 4, ... whole nodes; say so when --max-gpus is not one.
  int largest_nd = 1;
  for (const auto& [nodes, per_node] : all_shapes)
    largest_nd = std::max(largest_nd, nodes * per_node);
  const std::string nd_text =
      largest_nd == max_gpus
          ? fmt::format("N_d up to {}", max_gpus)
          : fmt::format(
                "N_d up to {} (--max-gpus {}: N_d is a power of two within a node of {}, then 2, 4, ... "
                "whole nodes, and --max-gpus itself when it is part of a node or whole nodes)",
                largest_nd, max_gpus, gpn);
  const std::string attention =
      flash_dropped ? fmt::format("eager attention (--flash-attention ignored: FlashAttention does not run on {})",
                                  base.cluster.gpu.name)
      : base.training.flash_attention
          ? (flash_flag ? std::string("FlashAttention")
                        : std::string("FlashAttention (the default where the GPU has it, as transformers' sdpa; "
                                      "--eager-attention: eager)"))
      : !base.cluster.gpu.flash_attention
          ? fmt::format("eager attention (FlashAttention does not run on {})", base.cluster.gpu.name)
          : std::string("eager attention (--eager-attention)");
  const std::string precision =
      base.cluster.gpu.bf16
          ? std::string(scenario::to_string(base.training.precision))
          : fmt::format("{} ({} has no bf16)", scenario::to_string(base.training.precision), base.cluster.gpu.name);
  std::cout << fmt::format("zerosim plan: {} on {} ({}, {:.2f} GiB per GPU{}{}), {}, {}, {}{}{}\n", base.model.name,
                           base.cluster.gpu.name, topology, capacity / kGiB,
                           headroom > 0 ? fmt::format(", {:.2f} GiB kept free{}", headroom / kGiB,
                                                      vm.count("headroom") ? "" : " (--headroom default 5%)")
                                        : std::string(),
                           host_capacity > 0
                               ? fmt::format(", {:.0f} GiB host RAM per node{}", host_capacity / kGiB,
                                             host_headroom > 0
                                                 ? fmt::format(", {:.2f} GiB kept free{}", host_headroom / kGiB,
                                                               vm.count("host-headroom")
                                                                   ? ""
                                                                   : fmt::format(" (--host-headroom default {:g}%)",
                                                                                 analysis::kHostMarginalPercent))
                                                 : std::string())
                               : std::string(),
                           nd_text, precision, attention,
                           global_batch > 0
                               ? fmt::format(", global batch {} x {} tokens{}", global_batch, base.training.seq_len,
                                             seq_len_why)
                               : fmt::format(", sequences of {} tokens{}", base.training.seq_len, seq_len_why),
                           tokens > 0 ? ", " + count_text(tokens) + " tokens" : std::string());
  // What plan assumes beyond what it searches: overlap_comm (searched for stages 1 and 2 unless --set), and the
  // --set keys.
  std::cout << fmt::format(
      "ZeRO stages 0-3; {}; DeepSpeed {} defaults otherwise{}\n",
      pinned_overlap ? fmt::format("stages 1-3 with overlap_comm {} (--set)", *pinned_overlap ? "on" : "off")
                     : std::string("stages 1 and 2 tried with overlap_comm off (DeepSpeed's default for them) and on"),
      base.zero.deepspeed_version_text,
      user_sets.empty() ? std::string() : fmt::format(" and --set {}", fmt::join(user_sets, ", ")));
  if (cpu_checkpointing)
    std::cout << "only plans with activation checkpointing (--set training.cpu_checkpointing=true moves its "
                 "checkpoints to the host)\n";
  // A ds_config (--set zero.deepspeed_config) sets what plan searches too: say that plan's values win.
  if (!base.zero.deepspeed_config.empty())
    std::cout << "the ds_config's ZeRO stage, offload devices, micro-batch and GA are searched, not taken from it" +
                     std::string(pinned_overlap ? "" : ", and so is overlap_comm for stages 1 and 2") +
                     "; its other settings apply to every plan\n";
  const auto count_state = [&cands](Candidate::State st) {
    return std::count_if(cands.begin(), cands.end(), [st](const Candidate& c) { return c.state == st; });
  };
  std::cout << fmt::format(
      "{} candidates: {} pruned by the closed forms, {} simulated (analytic fidelity{}), "
      "{} "
      "skipped after a smaller micro-batch ran out of memory or failed, {} skipped as dominated; {} "
      "feasible\n{}\n",
      cands.size(), pruned, simulated, largest_nd > 2 * gpn ? ", ranks folded above two nodes" : "",
      count_state(Candidate::State::SKIPPED), count_state(Candidate::State::DOMINATED), plans.size(),
      ga_too_large > 0 ? fmt::format("({} more would need over {} accumulation micro-steps for the global batch, "
                                     "zerosim's grad_accum limit: not enumerated)\n",
                                     ga_too_large, scenario::kMaxGradAccum)
                       : std::string());
  // N_d values no micro-batch fits to the global batch are left out of the search: say which, and a batch that
  // would keep them (the next multiple of the largest N_d).
  if (global_batch > 0) {
    std::vector<int> left_out;
    for (int nd : nd_all)
      if (nd_batch_ok.count(nd) == 0)
        left_out.push_back(nd);
    if (!left_out.empty()) {
      const int largest = *nd_all.rbegin();
      std::cout << fmt::format(
          "(N_d {} left out: --global-batch {} is not a multiple of N_d x micro-batch for any "
          "micro-batch; e.g. --global-batch {} keeps every N_d)\n",
          fmt::join(left_out, ", "), global_batch, (global_batch + largest - 1) / largest * largest);
    }
  }
  // N_d values whose cluster shape is not a valid scenario on this topology: one line each reason.
  std::map<std::string, std::vector<int>> invalid_by_reason;
  for (const auto& [nd, why] : nd_invalid)
    invalid_by_reason[why].push_back(nd);
  for (const auto& [why, nds] : invalid_by_reason)
    std::cout << fmt::format("(N_d {} left out: not a valid scenario on {}: {})\n", fmt::join(nds, ", "), topology,
                             why);
  const int top = std::max(1, vm["top"].as<int>());
  // How much longer the measured steps of this GPU's family took than simulated (docs/validation.md); a plan with
  // offload takes the offload claims' band instead (its step is largely the host's, whatever the GPU).
  const analysis::MeasuredBand gpu_band = analysis::measured_band(gpu);
  const analysis::MeasuredBand offload_band = analysis::offload_band();
  // ZeRO-3 across nodes without offload: the GPU family's band and the validation record of that scope (gap 17),
  // analysis::run_band for a plan of two nodes of this topology.
  const analysis::MeasuredBand z3_band = analysis::run_band(false, gpu, 3, 2 * gpn, gpn);
  // Which band a plan takes: its GPU family's; with offload the offload claims' (its step is largely the host's,
  // whatever the GPU); ZeRO-3 across nodes z3_band (analysis::in_multinode_zero3_scope). Its figures are the
  // simulated ones (without --time-margin) x the band's ends.
  enum class BandKind { GPU, MULTINODE_ZERO3, OFFLOAD };
  const auto band_kind = [](const Candidate& c) {
    return c.offload != Offload::NONE                                                   ? BandKind::OFFLOAD
           : analysis::in_multinode_zero3_scope(c.stage, false, c.n_d, c.gpus_per_node) ? BandKind::MULTINODE_ZERO3
                                                                                        : BandKind::GPU;
  };
  const auto band_by_kind = [&](BandKind k) -> const analysis::MeasuredBand& {
    return k == BandKind::OFFLOAD ? offload_band : k == BandKind::MULTINODE_ZERO3 ? z3_band : gpu_band;
  };
  const auto band_of = [&](const Candidate& c) -> const analysis::MeasuredBand& { return band_by_kind(band_kind(c)); };
  if (!plans.empty()) {
    // The rows shown: the best `top`, then the plans on the Pareto front ranked below them (a cheaper plan that
    // meets the deadline is on it, whatever its rank by throughput).
    // At most `top` of them, best first; the rest of the front is in the CSV.
    std::vector<std::size_t> shown;
    std::size_t front_left_out = 0;
    for (std::size_t i = 0; i < plans.size(); ++i) {
      if (static_cast<int>(i) < top)
        shown.push_back(i);
      else if (plans[i].pareto && static_cast<int>(shown.size()) < 2 * top)
        shown.push_back(i);
      else if (plans[i].pareto)
        ++front_left_out;
    }
    const std::size_t beyond_top = static_cast<std::size_t>(
        std::count_if(shown.begin(), shown.end(), [top](std::size_t i) { return static_cast<int>(i) >= top; }));
    // Host RAM per node, for the plans that offload (what the offloaded states and pinned buffers take).
    bool any_offload = false;
    for (std::size_t i : shown)
      any_offload = any_offload || plans[i].c->offload != Offload::NONE;
    analysis::MarginalFit any_marginal; // which reasons the `~` of the shown rows have, for the legend
    for (std::size_t i : shown)
      any_marginal |= plans[i].c->marginal;
    const bool any_bound =
        std::any_of(shown.begin(), shown.end(), [&](std::size_t i) { return plans[i].c->row.collective_bound; });
    // The table: one cell per column, each column as wide as its widest cell (heading included), right-aligned and
    // one space apart, so that it fits a 120-column terminal with --tokens, a price and offload plans. The memory
    // column is nvidia-smi's figure (reserved + CUDA context + NCCL), named as run and sweep.csv name it: `run`'s
    // "peak GiB" is the allocated peak, a few GiB less. The headroom column carries the marginal mark `~` in a
    // column of its own (no space before it).
    std::vector<std::string> heads{"rank", "P",          "N_d",      "stage", "overlap", "offload",  "mb", "GA",
                                   "ckpt", "nvidia-smi", "headroom", "",      "step s",  "tokens/s", "MFU"};
    if (any_offload)
      heads.emplace_back("host GiB");
    if (tokens > 0)
      heads.insert(heads.end(), {"to train", "GPU-h"});
    if (price > 0 && tokens > 0)
      heads.emplace_back("cost");
    const std::size_t kMark = 11; // the `~` column, after headroom
    std::vector<std::vector<std::string>> cells;
    for (const std::size_t i : shown) {
      const Plan& p = plans[i];
      const Candidate& c = *p.c;
      std::vector<std::string> r{std::to_string(i + 1),
                                 p.pareto ? "*" : "",
                                 std::to_string(c.n_d),
                                 std::to_string(c.stage),
                                 overlap_text(c),
                                 offload_short_name(c.offload),
                                 std::to_string(c.mb),
                                 std::to_string(c.ga),
                                 c.ckpt ? "on" : "off",
                                 fmt::format("{:.2f}", c.row.nvidia_smi_bytes / kGiB),
                                 fmt::format("{:.2f}", (capacity - c.row.nvidia_smi_bytes) / kGiB),
                                 c.marginal.marginal ? "~" : "",
                                 fmt::format("{:.4g}{}", c.row.step_time_s, c.row.collective_bound ? "+" : ""),
                                 fmt::format("{:.0f}", c.row.tokens_per_s),
                                 fmt::format("{:.1f}%", 100.0 * c.row.mfu)};
      if (any_offload) // "-" without host memory, as the CSV leaves the column empty
        r.push_back(c.row.host_node_peak_bytes > 0 ? fmt::format("{:.1f}", c.row.host_node_peak_bytes / kGiB) : "-");
      if (tokens > 0)
        r.insert(r.end(), {analysis::human_duration(p.ttt_s), analysis::gpu_hours_text(p.gpu_hours)});
      if (price > 0 && tokens > 0)
        r.push_back(fmt::format("{:.2f}", p.cost));
      cells.push_back(std::move(r));
    }
    std::vector<std::size_t> widths(heads.size());
    for (std::size_t k = 0; k < heads.size(); ++k) {
      widths[k] = heads[k].size();
      for (const auto& r : cells)
        widths[k] = std::max(widths[k], r[k].size());
    }
    const auto table_line = [&](const std::vector<std::string>& r) {
      std::string line;
      for (std::size_t k = 0; k < r.size(); ++k)
        line += (k == 0 || k == kMark ? "" : " ") + std::string(widths[k] - r[k].size(), ' ') + r[k];
      return line.substr(0, line.find_last_not_of(' ') + 1);
    };
    // What --time-margin multiplied in this table and its tests, for the note over it.
    std::vector<std::string> margin_uses;
    if (tokens > 0)
      margin_uses.insert(margin_uses.end(), {"to train", "GPU-h"});
    if (tokens > 0 && price > 0)
      margin_uses.emplace_back("cost");
    if (deadline > 0)
      margin_uses.emplace_back("--deadline");
    if (max_step > 0)
      margin_uses.emplace_back("--max-step-time");
    std::string margin_used = margin_uses.empty() ? std::string() : margin_uses.front(); // "a, b and c"
    for (std::size_t i = 1; i < margin_uses.size(); ++i)
      margin_used += (i + 1 == margin_uses.size() ? " and " : ", ") + margin_uses[i];
    // With --time-margin the line over the table says which of its columns include it (the heading stays "to train":
    // a suffix would widen the table past 120 columns).
    if (margin > 1)
      std::cout << fmt::format(
          "x{:.4g} (--time-margin): {} use{} {:.4g} x the simulated step time; step s, tokens/s "
          "and MFU are the simulation's\n",
          margin, margin_used, margin_uses.size() == 1 ? "s" : "", margin);
    std::cout << table_line(heads) << "\n";
    const auto band_figures = [&](const Plan& p) {
      const analysis::MeasuredBand& band = band_of(*p.c);
      std::string text =
          fmt::format("step {:.4g}-{:.4g} s", band.low * p.c->row.step_time_s, band.high * p.c->row.step_time_s);
      if (tokens > 0)
        text += fmt::format(", to train {}, GPU-h {}-{}",
                            duration_range(band.low * p.ttt_s / margin, band.high * p.ttt_s / margin),
                            analysis::gpu_hours_text(band.low * p.gpu_hours / margin),
                            analysis::gpu_hours_text(band.high * p.gpu_hours / margin));
      if (price > 0 && tokens > 0)
        text += fmt::format(", cost {:.2f}-{:.2f}", band.low * p.cost / margin, band.high * p.cost / margin);
      return text;
    };
    for (std::size_t k = 0; k < shown.size(); ++k) {
      const std::size_t i = shown[k];
      if (static_cast<int>(i) >= top && (k == 0 || static_cast<int>(shown[k - 1]) < top))
        std::cout << "on the Pareto front, ranked below the best " << top << ":\n";
      std::cout << table_line(cells[k]) << "\n";
      // --wide: what the measured runs of this GPU family (or with offload) took for the same step, under the row.
      if (wide)
        std::cout << "           measured band: " << band_figures(plans[i]) << "\n";
    }
    // The ranked rows from rank 1 (not the Pareto rows below --top), for the "not decidable" lines, and the band
    // their spread is judged by: both bands' range when some offload and some do not (wider than a pair of the same
    // kind needs: the line may then name a pair that the narrower band alone would not).
    std::vector<double> top_tokens_per_s;
    std::set<BandKind> top_kinds;
    for (std::size_t i : shown)
      if (static_cast<int>(i) < top) {
        top_tokens_per_s.push_back(plans[i].c->row.tokens_per_s);
        top_kinds.insert(band_kind(*plans[i].c));
      }
    analysis::MeasuredBand rank_band = band_by_kind(*top_kinds.begin());
    for (const BandKind k : top_kinds)
      if (k != *top_kinds.begin())
        rank_band = analysis::combined_band(rank_band, band_by_kind(k));
    // One line per measured band the shown rows take (their GPU family's; with ZeRO-3 across nodes that and the
    // record of such runs; the offload claims' for the plans with offload): the factor, the claims it is over, and
    // the figures of the best shown plan with that band (--wide prints every row's under it). "" when no shown row
    // takes the band. The last line printed ends with the --wide hint.
    std::set<BandKind> shown_kinds;
    for (std::size_t i : shown)
      shown_kinds.insert(band_kind(*plans[i].c));
    const BandKind last_kind = *shown_kinds.rbegin();
    const auto band_line = [&](BandKind kind) {
      const auto first =
          std::find_if(shown.begin(), shown.end(), [&](std::size_t i) { return band_kind(*plans[i].c) == kind; });
      if (first == shown.end())
        return std::string();
      const bool offload = kind == BandKind::OFFLOAD;
      const analysis::MeasuredBand& band = band_by_kind(kind);
      const std::string family =
          gpu_band.own_family
              ? fmt::format("the {} step-time claims on {}", gpu_band.claims, gpu_band.label)
              : fmt::format("all {} step-time claims without offload, none on {}", gpu_band.claims, gpu);
      // A GPU no family band covers: no band's claims ran on it, with offload or without, so its simulated step is
      // not validated (the console's note on a run; summary.measured_band "none").
      const std::string claims =
          (offload ? fmt::format("the {} step-time claims with offload, {}", band.claims,
                                 gpu_band.own_family ? std::string("any GPU") : "none on " + gpu)
           : kind == BandKind::MULTINODE_ZERO3
               ? fmt::format("{} and the {} of ZeRO-3 runs across nodes, {:.2f}x compute-bound to {:.2f}x bound by "
                             "collectives: gap 17",
                             family, analysis::multinode_zero3_band().claims, analysis::multinode_zero3_band().low,
                             analysis::multinode_zero3_band().high)
               : family) +
          (gpu_band.own_family ? "" : ", so its simulated step is not validated against measurements");
      const std::string where = offload ? std::string("with offload")
                                        : "on " + (gpu_band.own_family ? gpu_band.label : gpu) +
                                              (kind == BandKind::MULTINODE_ZERO3 ? ", ZeRO-3 across nodes" : "");
      return fmt::format(
          "measured band {}: measured steps took {:.2f}-{:.2f}x the simulated step ({}; "
          "docs/validation.md){}\n",
          where, band.low, band.high, claims,
          wide ? (margin > 1 ? "; each row's figures over it (without --time-margin) are under the row"
                             : "; each row's figures over it are under the row")
               : fmt::format("; so for rank {}: {}{}{}", *first + 1, band_figures(plans[*first]),
                             margin > 1 ? " (without --time-margin)" : "",
                             kind == last_kind ? "; --wide: for each row" : ""));
    };
    std::cout
        << (tokens > 0 ? "P: * = on the Pareto front of (time to train, GPU-hours)"
                       : "P: * = on the Pareto front of (throughput, GPUs)")
        << "; nvidia-smi = reserved + CUDA context + NCCL (decides OOM); nvidia-smi and headroom in GiB = 2^30 B; "
           "--headroom is tested on the memory a plan cannot give back (nvidia-smi less what a failed cudaMalloc's "
           "retry releases)\n"
        << (any_offload ? "offload to CPU memory: opt = the optimizer states (ZeRO-Offload), opt+param = the "
                          "optimizer states and the parameters (ZeRO-3)\n"
                        : "")
        << (any_marginal.marginal ? fmt::format("~ = marginal, as `zerosim run` and `zerosim largest` call it "
                                                "(summary.json `marginal`): {}; ranked after the plans that are not\n",
                                                analysis::marginal_legend(any_marginal))
                                  : std::string())
        << (any_bound ? "+ after step s = collective-bound (--csv collective_bound): " +
                            analysis::collective_bound_mark_note() + "; the band lines below do not cover it\n"
                      : std::string())
        << (any_offload && !(base.cluster.host_memory.value() > 0)
                ? "host GiB = host RAM per node at its peak; not checked: no host memory given (the "
                  "topology sets none, or --host-memory 0; --host-memory SIZE rejects plans that need more)\n"
                : "")
        << (static_cast<int>(plans.size()) > top
                ? fmt::format("(the best {} of {} feasible plans{}; --top N shows more, --csv FILE writes all)\n", top,
                              plans.size(),
                              beyond_top > 0 ? fmt::format(" and {} more on the Pareto front{}", beyond_top,
                                                           front_left_out > 0 ? fmt::format(" ({} more of it in --csv)",
                                                                                            front_left_out)
                                                                              : std::string())
                                             : std::string())
                : std::string())
        << band_line(BandKind::GPU) << band_line(BandKind::MULTINODE_ZERO3) << band_line(BandKind::OFFLOAD)
        << analysis::undecidable_ranks_note(top_tokens_per_s, rank_band) << analysis::best_case_note()
        << (margin > 1 ? fmt::format("; here --time-margin {:.4g} applies one", margin)
                       : std::string("; --time-margin F applies one (the simulated step x F) to the time to "
                                     "train, GPU-hours, cost, --deadline and --max-step-time"))
        << "\n";
    if (plans.front().c->offload != Offload::NONE) {
      // The first plan's lead rests on the host step, whose simulation assumes bound CPU threads: name the best
      // plan that does not depend on it, so the reader can weigh the two.
      const auto no_offload =
          std::find_if(plans.begin(), plans.end(), [](const Plan& p) { return p.c->offload == Offload::NONE; });
      std::cout
          << "rank 1 offloads: its host step assumes each rank's CPU threads bound to its own cores (DeepSpeed "
             "--bind_cores_to_rank); unbound, measured host steps took 15-30 % longer (docs/validation.md). "
          << (no_offload == plans.end() ? std::string("No plan without offload fits.")
              : no_offload->c->row.tokens_per_s > plans.front().c->row.tokens_per_s
                  // Faster, ranked after rank 1 for being marginal (`~`): say so, with its reason.
                  ? fmt::format("The best plan without offload is rank {}: {:.0f} tokens/s, {:.0f} % above rank "
                                "1, ranked after it as a marginal fit ({}).",
                                no_offload - plans.begin() + 1, no_offload->c->row.tokens_per_s,
                                100.0 * (no_offload->c->row.tokens_per_s / plans.front().c->row.tokens_per_s - 1.0),
                                analysis::marginal_reason(no_offload->c->marginal))
                  : fmt::format("The best plan without offload is rank {}: {:.0f} tokens/s, {:.0f} % "
                                "below rank 1.",
                                no_offload - plans.begin() + 1, no_offload->c->row.tokens_per_s,
                                100.0 * (1.0 - no_offload->c->row.tokens_per_s / plans.front().c->row.tokens_per_s)))
          << "\n";
    }
  } else {
    // The search offloads to CPU memory only (Offload: none, optimizer, optimizer and params); say so, with the keys
    // that try ZeRO-Infinity's NVMe offload in a scenario.
    std::cout << "no feasible plan\n"
              << "NVMe offload was not searched (plan offloads to CPU memory only): to try it, run a scenario with "
                 "zero.stage: 3, zero.offload_optimizer: nvme and zero.offload_param: nvme (zerosim run SCENARIO "
                 "--set zero.offload_optimizer=nvme --set zero.offload_param=nvme; zero.offload_param_buffer_size at "
                 "least the largest parameter partition) on a topology with cluster.nvme\n";
    // The host RAM that would make a plan feasible, when host memory rejected some: the best (highest throughput)
    // simulated plan whose GPU side fits --headroom and which ran out of host memory or left less than
    // --host-headroom free. Its node's simulated host peak is its whole need (plan simulates on past a host OOM,
    // on_oom: continue, as if memory were unlimited); the RAM to ask for keeps --host-headroom free on top of it: a
    // share p of the RAM needs peak / (1 - p), a size h needs peak + h. Rounded up to 0.01 GiB.
    const Candidate* host_best = nullptr;
    const Candidate* host_least = nullptr; // the one with the smallest host peak
    for (const Candidate& c : cands)
      if (c.state == Candidate::State::SIMULATED && c.row.ok && !c.fits && c.row.host_node_peak_bytes > 0 &&
          (c.row.fits || c.row.oom_on_host) && leaves_headroom(c.row.nvidia_smi_needed_bytes, capacity, headroom)) {
        if (host_best == nullptr || c.row.tokens_per_s > host_best->row.tokens_per_s)
          host_best = &c;
        if (host_least == nullptr || c.row.host_node_peak_bytes < host_least->row.host_node_peak_bytes)
          host_least = &c;
      }
    // The host RAM per node a plan with a node host peak of `peak` B needs to pass --host-headroom, GiB rounded up
    // to 0.01, and how it follows.
    const auto host_need = [&](double peak) {
      const double share = host_headroom / host_capacity;
      const double need = host_headroom_pct ? peak / (1.0 - share) : peak + host_headroom;
      const std::string how =
          host_headroom <= 0 ? std::string("its peak, --host-headroom 0")
          : host_headroom_pct
              ? fmt::format("{:.2f} GiB / (1 - {:g} %), --host-headroom {:g}% kept free", peak / kGiB, 100.0 * share,
                            100.0 * share)
              : fmt::format("{:.2f} GiB + --host-headroom {:.2f} GiB", peak / kGiB, host_headroom / kGiB);
      return std::make_pair(std::ceil(need / kGiB * 100.0) / 100.0, how);
    };
    if (host_best != nullptr) {
      const auto [need, how] = host_need(host_best->row.host_node_peak_bytes);
      std::cout << fmt::format(
          "host RAM: the best plan rejected for host memory ({}) needs {:.2f} GiB per node at its simulated host "
          "peak (simulated on past a host OOM as if memory were unlimited: the whole need); it is feasible with "
          "--host-memory {:.2f}GiB or more ({})",
          host_best->text(), host_best->row.host_node_peak_bytes / kGiB, need, how);
      if (host_least->row.host_node_peak_bytes < host_best->row.host_node_peak_bytes) {
        const double least = host_need(host_least->row.host_node_peak_bytes).first;
        std::cout << fmt::format("; the least any of them needs is {:.2f} GiB ({}): --host-memory {:.2f}GiB",
                                 host_least->row.host_node_peak_bytes / kGiB, host_least->text(), least);
      }
      std::cout << "\n";
    }
  }
  // Best rejected: simulated ones by throughput, then the pruned ones by how little they miss.
  // Order: simulated (OOM before a crashed simulation, then by throughput), skipped after a smaller micro-batch's
  // OOM, pruned by the closed forms (smallest excess first), dominated last.
  const auto prio = [](const Candidate* c) {
    switch (c->state) {
    case Candidate::State::SIMULATED:
      return 0;
    case Candidate::State::SKIPPED:
      return 1;
    case Candidate::State::PRUNED:
      return 2;
    default:
      return 3;
    }
  };
  std::stable_sort(rejected.begin(), rejected.end(), [&prio](const Candidate* a, const Candidate* b) {
    if (prio(a) != prio(b))
      return prio(a) < prio(b);
    if (prio(a) == 0 && a->row.ok != b->row.ok)
      return a->row.ok; // an OOM says more about the plan than a crashed simulation
    if (prio(a) == 0)
      return a->row.tokens_per_s > b->row.tokens_per_s;
    if (prio(a) == 2)
      return a->lower_bound < b->lower_bound; // the same order as by how far over the usable memory
    return false;
  });
  if (!rejected.empty()) {
    std::cout << "\nbest rejected:\n";
    std::size_t shown = 0;
    for (const Candidate* c : rejected)
      if (c->state != Candidate::State::DOMINATED && shown++ < 6)
        std::cout << "  " << c->text() << ": " << c->reason << "\n";
    if (const auto dominated = count_state(Candidate::State::DOMINATED); dominated > 0)
      std::cout << fmt::format(
          "  ({} plans not simulated: a plan with less offload or no recomputation and the same "
          "N_d, stage, mb and GA fits; --exhaustive simulates them)\n",
          dominated);
  }
  std::cerr << fmt::format("plan: searched {} candidates in {:.1f} s ({} job{})\n", cands.size(), secs, jobs,
                           jobs == 1 ? "" : "s");

  if (vm.count("csv") || vm.count("json")) {
    // One row per candidate (ranked, then rejected), the same cells for --csv (text) and --json (typed: numbers as
    // numbers, true / false, null where the CSV cell is empty).
    std::vector<std::string> columns;
    std::string csv;
    nlohmann::json rows = nlohmann::json::array();
    const auto line = [&](const std::string& rank, const Plan* p, const Candidate& c, const std::string& status) {
      std::vector<std::string> cells;
      nlohmann::json row = nlohmann::json::object();
      const bool header = columns.empty();
      // A cell: its CSV text and its JSON value.
      const auto put = [&](const char* name, std::string text, nlohmann::json value) {
        if (header)
          columns.emplace_back(name);
        cells.push_back(std::move(text));
        row[name] = std::move(value);
      };
      // A number where it exists (CSV with `spec`), else an empty cell and null.
      const auto number = [&](const char* name, bool has, double x, const char* spec = "{:.6g}") {
        put(name, has ? fmt::format(fmt::runtime(spec), x) : std::string(),
            has ? analysis::json_number(x) : nlohmann::json());
      };
      const auto flag = [&](const char* name, bool has, bool b) {
        put(name, has ? std::string(b ? "true" : "false") : std::string(), has ? nlohmann::json(b) : nlohmann::json());
      };
      const auto integer = [&](const char* name, bool has, long long n) {
        put(name, has ? std::to_string(n) : std::string(), has ? nlohmann::json(n) : nlohmann::json());
      };
      std::string reason = c.reason;
      std::replace(reason.begin(), reason.end(), '"', '\'');
      // Time to train, GPU-hours and cost only where they exist: a feasible plan, with --tokens (cost: and a
      // price); empty cells otherwise, not 0.
      const bool timed = p != nullptr && tokens > 0; // p is set exactly for the feasible plans
      // A candidate never simulated (pruned, skipped, dominated) or without a steady-state step has no step time,
      // throughput, MFU or peak: empty cells (as in sweep.csv), not 0.
      // A plan that does not fit keeps its peak (how far over) but no throughput: sorted by tokens/s, an infeasible
      // run past its OOM would otherwise head the list. The host column is empty without host memory (no offload),
      // as in sweep.csv.
      const bool ran = c.state == Candidate::State::SIMULATED && c.row.ok;
      const bool stepped = ran && c.fits && c.row.step_time_s > 0;
      put("rank", rank, rank.empty() ? nlohmann::json() : nlohmann::json(std::stoi(rank)));
      put("pareto", p && p->pareto ? "1" : "0", p != nullptr && p->pareto);
      integer("n_d", true, c.n_d);
      integer("stage", true, c.stage);
      put("offload", offload_name(c.offload), offload_name(c.offload));
      integer("micro_batch", true, c.mb);
      integer("grad_accum", true, c.ga);
      flag("checkpointing", true, c.ckpt);
      put("status", status, status);
      number("step_time_s", stepped, c.row.step_time_s);
      number("tokens_per_s", stepped, c.row.tokens_per_s);
      number("mfu", stepped, c.row.mfu, "{:.4f}");
      number("nvidia_smi_gib", ran, c.row.nvidia_smi_bytes / kGiB, "{:.3f}");
      number("time_to_train_s", timed, timed ? p->ttt_s : 0.0);
      number("gpu_hours", timed, timed ? p->gpu_hours : 0.0);
      number("cost", timed && price > 0, timed ? p->cost : 0.0);
      put("reason", "\"" + reason + "\"", c.reason);
      integer("alloc_retries", ran, c.row.alloc_retries);
      flag("marginal", ran, c.marginal.marginal);
      put("host_node_peak_gib", ran ? analysis::host_node_peak_gib_cell(c.row) : std::string(),
          ran && c.row.host_node_peak_bytes > 0 ? analysis::json_number(c.row.host_node_peak_bytes / kGiB)
                                                : nlohmann::json());
      number("lower_bound_gib", true, c.lower_bound / kGiB, "{:.3f}");
      flag("overlap_comm", c.stage != 0, c.overlap);
      // Each plan's measured band (the table prints it per band, --wide per row): the band's name and ends, and the
      // step, time to train, GPU-hours and cost over it, from the simulated figures (without --time-margin, as the
      // table's band lines), where those exist.
      const analysis::MeasuredBand& band = band_of(c);
      const double unmargined = 1.0 / margin;
      put("measured_band", stepped ? band.label : std::string(),
          stepped ? nlohmann::json(band.label) : nlohmann::json());
      number("band_low", stepped, band.low);
      number("band_high", stepped, band.high);
      number("step_time_low_s", stepped, band.low * c.row.step_time_s);
      number("step_time_high_s", stepped, band.high * c.row.step_time_s);
      number("time_to_train_low_s", timed, timed ? band.low * p->ttt_s * unmargined : 0.0);
      number("time_to_train_high_s", timed, timed ? band.high * p->ttt_s * unmargined : 0.0);
      number("gpu_hours_low", timed, timed ? band.low * p->gpu_hours * unmargined : 0.0);
      number("gpu_hours_high", timed, timed ? band.high * p->gpu_hours * unmargined : 0.0);
      number("cost_low", timed && price > 0, timed ? band.low * p->cost * unmargined : 0.0);
      number("cost_high", timed && price > 0, timed ? band.high * p->cost * unmargined : 0.0);
      // Collective-bound (sweep.csv's column): its step time is a lower bound, the band above understates it; empty
      // without a step time.
      flag("collective_bound", stepped, c.row.collective_bound);
      // The figure --headroom tests (summary.json nvidia_smi_needed_bytes): the nvidia-smi peak less what a failed
      // cudaMalloc's retry gives back; empty when not simulated.
      number("needed_gib", ran, c.row.nvidia_smi_needed_bytes / kGiB, "{:.3f}");
      if (header)
        csv += fmt::format("{}\n", fmt::join(columns, ","));
      csv += fmt::format("{}\n", fmt::join(cells, ","));
      rows.push_back(std::move(row));
    };
    for (std::size_t i = 0; i < plans.size(); ++i)
      line(std::to_string(i + 1), &plans[i], *plans[i].c, "feasible");
    for (const Candidate* c : rejected)
      line("", nullptr, *c,
           c->state == Candidate::State::PRUNED      ? "pruned"
           : c->state == Candidate::State::SKIPPED   ? "skipped"
           : c->state == Candidate::State::DOMINATED ? "dominated"
                                                     : "rejected");
    if (vm.count("csv"))
      analysis::write_file_atomic(vm["csv"].as<std::string>(), csv);
    if (vm.count("json")) {
      // What plan searched with, as it used it: the options after their defaults (a size in bytes, a duration in
      // seconds), null where an option was not given and has no default.
      const auto opt_number = [](bool has, double x) { return has ? analysis::json_number(x) : nlohmann::json(); };
      std::vector<int> n_d;
      for (const auto& [nodes, per_node] : shapes)
        n_d.push_back(nodes * per_node);
      nlohmann::json inputs = {{"model", base.model.name},
                               {"gpu", gpu},
                               {"topology", topology},
                               {"gpus_per_node", gpn},
                               {"max_gpus", max_gpus},
                               {"n_d", n_d},
                               {"seq_len", base.training.seq_len},
                               {"seq_len_from", !vm["seq-len"].defaulted() ? "--seq-len"
                                                : seq_len_why.find("max_positions") != std::string::npos
                                                    ? "model.max_positions"
                                                    : "default"},
                               {"global_batch", global_batch > 0 ? nlohmann::json(global_batch) : nlohmann::json()},
                               {"tokens", opt_number(tokens > 0, tokens)},
                               {"time_margin", analysis::json_number(margin)},
                               {"price_per_gpu_hour", opt_number(price > 0, price)},
                               {"deadline_s", opt_number(deadline > 0, deadline)},
                               {"max_step_time_s", opt_number(max_step > 0, max_step)},
                               {"capacity_bytes", analysis::json_number(capacity)},
                               {"headroom_bytes", analysis::json_number(headroom)},
                               {"usable_bytes", analysis::json_number(usable)},
                               {"host_memory_bytes", opt_number(host_capacity > 0, host_capacity)},
                               {"host_headroom_bytes", opt_number(host_capacity > 0, host_headroom)},
                               {"precision", scenario::to_string(base.training.precision)},
                               {"flash_attention", base.training.flash_attention},
                               {"exhaustive", exhaustive},
                               {"set", user_sets}};
      const nlohmann::json counts = {{"candidates", cands.size()},
                                     {"pruned", pruned},
                                     {"simulated", simulated},
                                     {"skipped", count_state(Candidate::State::SKIPPED)},
                                     {"dominated", count_state(Candidate::State::DOMINATED)},
                                     {"feasible", plans.size()}};
      nlohmann::json doc = {{"zerosim_version", analysis::version()},
                            {"zerosim_build", analysis::build_id()},
                            {"inputs", inputs},
                            {"counts", counts},
                            {"columns", columns},
                            {"rows", rows}};
      analysis::write_whole_numbers_as_integers(doc);
      analysis::write_file_atomic(vm["json"].as<std::string>(),
                                  doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    }
  }
  return plans.empty() ? 1 : 0;
}

} // namespace zerosim::cli
