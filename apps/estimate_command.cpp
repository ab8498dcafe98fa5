// `zerosim estimate`: DeepSpeed's model-state memory estimators (estimate_zero2_model_states_mem_needs and
// estimate_zero3_model_states_mem_needs, reference/zero_semantics.md §2.1-2.3) printed as DeepSpeed prints them, from
// a parameter count, a model preset / Hugging Face config.json, or a scenario file. No simulation runs.
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/sim_child.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/workload/formulas.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/model_states.hpp"

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const char* kEstimateUsage =
    "usage: zerosim estimate (--params N [--largest-layer-params L] | --model PRESET|config.json | SCENARIO.yaml "
    "[--set key=value]...) [--gpus-per-node G] [--nodes N] [--stage 2|3] [--formula current|pre-0.14.3] "
    "[--buffer-factor F]";

/// A parameter count: a positive number, optionally in scientific notation or with a K/M/B/T suffix
/// (1e3/1e6/1e9/1e12), e.g. "2851e6", "2851M", "6.7B".
double parse_count(const std::string& option, const std::string& text) {
  if (text.empty())
    throw UsageError("estimate: " + option + " needs a number");
  const std::optional<double> v = parse_scaled_count(text);
  if (!v || *v < 1)
    throw UsageError("estimate: " + option + " expects a positive count such as 2851e6 or 2851M, got '" + text + "'");
  return std::round(*v);
}

int parse_positive_int(const std::string& option, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || v < 1 || v > 1'000'000)
    throw UsageError("estimate: " + option + " expects a whole number from 1 to 1000000, got '" + text + "'");
  return static_cast<int>(v);
}

/// What to estimate: Ψ, the largest layer (nullopt: unknown) and the cluster shape.
struct Target {
  std::string heading; ///< "" or e.g. "variant zero.stage=2 (model gpt2-xl)"
  double params = 0;
  std::optional<double> largest_layer;
  int gpus_per_node = 1;
  int nodes = 1;
  std::optional<std::int64_t> hidden; ///< h when a model is known (ZeRO-Infinity MSWM line)
  std::int64_t intermediate = 0; ///< the MLP's inner size I (4h for GPT-2), with `hidden`
  /// Parameters of the LM head's own weight (V x h; 0 when tied to the embedding), when a model is known: Ψ is the
  /// causal-LM class's count, which AutoModel (no head) falls short of by this much.
  std::optional<double> own_head;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  if (from.empty())
    return s;
  for (std::size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
  return s;
}

/// Resolves `--model REF` (a preset name or a config.json path) through the scenario loader, so presets and Hugging
/// Face configs are read exactly as `zerosim run` reads them: a throw-away one-key scenario file is loaded.
scenario::Scenario load_model_ref(const std::string& ref) {
  const std::string value = model_ref_for_scenario(ref);
  std::string quoted = "'";
  for (char c : value) {
    if (c == '\n' || c == '\r')
      throw UsageError("estimate: --model must be one line");
    quoted += c == '\'' ? std::string("''") : std::string(1, c);
  }
  quoted += "'";
  const TempDir tmp("estimate"); // removed on return and on Ctrl-C
  const std::string templ = (tmp.path() / "model.yaml").string();
  {
    // seq_len 1: only the parameter table matters, and a short max_positions must not reject the model.
    std::ofstream f(templ);
    f << "name: estimate\nmodel: " << quoted << "\ntraining:\n  seq_len: 1\n  micro_batch: 1\n";
    if (!f.flush())
      throw Error("estimate: cannot write the temporary file " + templ + ": " + std::strerror(errno));
  }
  try {
    return scenario::load_scenario(templ).front().scenario;
  } catch (const ScenarioError& e) {
    throw UsageError(replace_all(e.what(), templ + ":2", "estimate: --model"));
  }
}

void print_header(std::string& out, const Target& t) {
  // DeepSpeed's HW / SW lines (stage3.py / stage_1_and_2.py estimate_*_all_cold): counts in whole millions.
  out += fmt::format("HW: Setup with {} node{}, {} GPU{} per node.\n", t.nodes, t.nodes == 1 ? "" : "s",
                     t.gpus_per_node, t.gpus_per_node == 1 ? "" : "s");
  out += fmt::format("SW: Model with {}M total params ({:.0f})", static_cast<long long>(t.params / 1e6), t.params);
  if (t.largest_layer)
    out += fmt::format(", {}M largest layer params ({:.0f})", static_cast<long long>(*t.largest_layer / 1e6),
                       *t.largest_layer);
  out += ".\n";
  // DeepSpeed's estimators count whatever model they are given; published snippets often pass AutoModel (no LM head).
  if (t.own_head)
    out += *t.own_head > 0 ? fmt::format(
                                 "(total params are the causal-LM model's, *ForCausalLM / GPT2LMHeadModel, with its LM "
                                 "head; AutoModel, without it, has {:.0f} = V x h fewer)\n",
                                 *t.own_head)
                           : std::string(
                                 "(total params are the causal-LM model's, *ForCausalLM / GPT2LMHeadModel; its LM head "
                                 "shares the embedding, so AutoModel counts the same)\n");
}

void print_rows(std::string& out, const std::vector<zero::EstimateRow>& rows) {
  // Columns 7 characters wide (DeepSpeed's table), wider when a figure needs it, so the bars stay aligned.
  std::size_t w = 7;
  for (const auto& r : rows)
    for (const double v : {r.mem.cpu.value(), r.mem.gpu.value()})
      w = std::max(w, fmt::format("{:.2f}", v / kGiB).size());
  out += fmt::format("  {:>{}} | {:>{}} | Options\n", "per CPU", w + 4, "per GPU", w + 4);
  for (const auto& r : rows)
    out += fmt::format("  {:{}.2f} GiB | {:{}.2f} GiB | {}\n", r.mem.cpu.value() / kGiB, w, r.mem.gpu.value() / kGiB, w,
                       zero::estimate_options_text(r));
}

} // namespace

int estimate_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim estimate options");
  visible.add_options() //
      ("params", po::value<std::string>(), "total parameters, e.g. 2851e6 or 2851M") //
      ("largest-layer-params", po::value<std::string>(), "parameters of the largest layer (ZeRO-3), with --params") //
      ("model", po::value<std::string>(), "model preset (see `zerosim list`) or Hugging Face config.json") //
      ("set", po::value<std::vector<std::string>>()->composing(), "override a key of the scenario file") //
      ("gpus-per-node", po::value<std::string>(), "GPUs per node (default 1, or the scenario's)") //
      ("nodes", po::value<std::string>(), "nodes (default 1, or the scenario's)") //
      ("stage", po::value<std::string>(), "2 or 3 (default: both)") //
      ("formula", po::value<std::string>()->default_value("current"),
       "ZeRO-2 formula: current (DeepSpeed >= v0.14.3) or pre-0.14.3") //
      ("buffer-factor", po::value<std::string>()->default_value("1.5"),
       "DeepSpeed's additional_buffer_factor on CPU memory") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "scenario", "estimate", kEstimateUsage, vm))
    return 0;

  // Options.
  std::vector<int> stages{2, 3};
  if (vm.count("stage")) {
    const std::string s = vm["stage"].as<std::string>();
    if (s != "2" && s != "3")
      throw UsageError("estimate: --stage expects 2 or 3, got '" + s + "'");
    stages = {s == "2" ? 2 : 3};
  }
  const std::string formula_text = vm["formula"].as<std::string>();
  if (!vm["formula"].defaulted() && stages == std::vector<int>{3})
    throw UsageError(
        "estimate: --formula selects the ZeRO-2 formula, but --stage 3 prints only the ZeRO-3 table "
        "(drop --stage to see both)");
  zero::Zero2Formula formula = zero::Zero2Formula::CURRENT;
  if (formula_text == "pre-0.14.3")
    formula = zero::Zero2Formula::PRE_0_14_3;
  else if (formula_text != "current")
    throw UsageError("estimate: --formula expects current or pre-0.14.3, got '" + formula_text + "'");
  const std::string factor_text = vm["buffer-factor"].as<std::string>();
  char* end = nullptr;
  const double factor = std::strtod(factor_text.c_str(), &end);
  if (factor_text.empty() || end != factor_text.c_str() + factor_text.size() || !std::isfinite(factor) || factor <= 0)
    throw UsageError("estimate: --buffer-factor expects a positive number, got '" + factor_text + "'");
  std::optional<int> gpus_opt, nodes_opt;
  if (vm.count("gpus-per-node"))
    gpus_opt = parse_positive_int("--gpus-per-node", vm["gpus-per-node"].as<std::string>());
  if (vm.count("nodes"))
    nodes_opt = parse_positive_int("--nodes", vm["nodes"].as<std::string>());

  // Exactly one source of the parameter count.
  std::vector<std::string> positional;
  if (vm.count("scenario"))
    positional = vm["scenario"].as<std::vector<std::string>>();
  const int sources = (vm.count("params") ? 1 : 0) + (vm.count("model") ? 1 : 0) + (positional.empty() ? 0 : 1);
  if (vm.count("model") && !scenario::is_valid_utf8(vm["model"].as<std::string>()))
    throw UsageError("estimate: --model: not valid UTF-8; give the preset name or path in UTF-8");
  if (sources != 1)
    throw UsageError(std::string("estimate: give exactly one of --params N, --model PRESET|config.json or a scenario "
                                 "file (") +
                     kEstimateUsage + ")");
  if (positional.size() > 1)
    throw UsageError("estimate: expected one scenario file, got " + std::to_string(positional.size()));
  if (vm.count("largest-layer-params") && !vm.count("params"))
    throw UsageError("estimate: --largest-layer-params goes with --params (models and scenarios count it)");
  if (vm.count("set") && positional.empty())
    throw UsageError("estimate: --set applies to a scenario file");

  std::vector<Target> targets;
  if (vm.count("params")) {
    Target t;
    t.params = parse_count("--params", vm["params"].as<std::string>());
    if (vm.count("largest-layer-params")) {
      t.largest_layer = parse_count("--largest-layer-params", vm["largest-layer-params"].as<std::string>());
      if (*t.largest_layer > t.params)
        throw UsageError("estimate: --largest-layer-params exceeds --params");
    }
    t.gpus_per_node = gpus_opt.value_or(1);
    t.nodes = nodes_opt.value_or(1);
    targets.push_back(t);
  } else if (vm.count("model")) {
    const std::string ref = vm["model"].as<std::string>();
    const scenario::Scenario sc = load_model_ref(ref);
    const workload::Workload wl = workload::build_workload(sc.model, sc.training);
    Target t;
    t.heading = fmt::format("model {}", sc.model.name);
    t.params = static_cast<double>(wl.total_params);
    t.largest_layer = static_cast<double>(wl.largest_layer_params);
    t.hidden = sc.model.hidden;
    t.intermediate = sc.model.intermediate;
    t.own_head = sc.model.tied_embeddings ? 0.0 : static_cast<double>(sc.model.vocab * sc.model.hidden);
    t.gpus_per_node = gpus_opt.value_or(1);
    t.nodes = nodes_opt.value_or(1);
    targets.push_back(t);
  } else {
    std::vector<std::string> sets;
    if (vm.count("set"))
      sets = vm["set"].as<std::vector<std::string>>();
    const auto variants = scenario::load_scenario(positional.front(), sets);
    for (const auto& v : variants) {
      const auto& sc = v.scenario;
      const workload::Workload wl = workload::build_workload(sc.model, sc.training);
      Target t;
      t.params = static_cast<double>(wl.total_params);
      t.largest_layer = static_cast<double>(wl.largest_layer_params);
      t.hidden = sc.model.hidden;
      t.intermediate = sc.model.intermediate;
      t.own_head = sc.model.tied_embeddings ? 0.0 : static_cast<double>(sc.model.vocab * sc.model.hidden);
      t.gpus_per_node = gpus_opt.value_or(sc.cluster.gpus_per_node);
      t.nodes = nodes_opt.value_or(sc.cluster.nodes);
      t.heading = fmt::format("{}model {}", v.label.empty() ? "" : "variant " + v.label + ": ", sc.model.name);
      // Variants that only change what the estimators ignore (e.g. zero.stage) print once.
      bool same = false;
      for (const auto& o : targets)
        same = same || std::tie(o.params, o.largest_layer, o.gpus_per_node, o.nodes) ==
                           std::tie(t.params, t.largest_layer, t.gpus_per_node, t.nodes);
      if (!same)
        targets.push_back(t);
    }
    if (targets.size() == 1)
      targets.front().heading =
          fmt::format("scenario '{}', model {}", variants.front().scenario.name, variants.front().scenario.model.name);
  }
  const bool want3 = std::find(stages.begin(), stages.end(), 3) != stages.end();
  if (want3 && stages.size() == 1 && !targets.front().largest_layer)
    throw UsageError("estimate: ZeRO-3 needs --largest-layer-params L with --params");

  std::string out =
      "zerosim estimate: DeepSpeed's estimate_zero2/zero3_model_states_mem_needs "
      "(deepspeed/runtime/zero/stage_1_and_2.py and stage3.py)\n";
  out += fmt::format(
      "units: GiB (DeepSpeed prints 'GB' but divides by 2^30), 2 decimals; CPU figures include "
      "additional_buffer_factor {}\n",
      factor_text);
  for (const auto& t : targets) {
    out += "\n";
    if (!t.heading.empty())
      out += t.heading + "\n";
    print_header(out, t);
    for (const int stage : stages) {
      if (stage == 2) {
        out += formula == zero::Zero2Formula::CURRENT
                   ? "ZeRO-2 (formula: current, DeepSpeed >= v0.14.3: GPU = 2P + 18P/N without offload; "
                     "--formula pre-0.14.3 for 4P + 16P/N)\n"
                   : "ZeRO-2 (formula: pre-0.14.3: GPU = 4P + 16P/N without offload, as memory.rst's table and "
                     "older printouts; current code: 2P + 18P/N)\n";
        print_rows(out, zero::zero2_estimate_table(t.params, t.gpus_per_node, t.nodes, factor, formula));
        // stage_1_and_2.py estimate_zero2_model_states_mem_needs: cpu_mem = P x max(4 x total GPUs, 16) x factor
        // with offload, so from 5 GPUs on it grows with the whole cluster, not with what one node holds.
        if (t.gpus_per_node * t.nodes > 4)
          out += fmt::format(
              "  (offload_optimizer=cpu's CPU figure is DeepSpeed's P x max(4 x {} GPUs, 16) x {}: it grows with the "
              "whole cluster's GPU count, so it is not one node's host RAM; `zerosim run` simulates that, "
              "'host memory peak ... per node')\n",
              t.gpus_per_node * t.nodes, factor_text);
      } else if (t.largest_layer) {
        out += "ZeRO-3 (GPU adds 4 B x largest layer params: its fp16 param + grad)\n";
        print_rows(out, zero::zero3_estimate_table(t.params, *t.largest_layer, t.gpus_per_node, t.nodes, factor));
      } else {
        out += "ZeRO-3: skipped (give --largest-layer-params L)\n";
      }
    }
    if (want3 && t.hidden) {
      // ZeRO-Infinity §3 (reference/zero_semantics.md §4.2): fp16 param + grad of the largest linear, untiled. The
      // paper's 16 h^2 is the GPT MLP's h x 4h; a model whose MLP is h x I (SwiGLU: three of them) has 4 B x h x I.
      const double mswm = workload::zero_infinity_mswm_bytes(*t.hidden).value();
      const std::int64_t inner = t.intermediate > 0 ? t.intermediate : 4 * *t.hidden;
      if (inner == 4 * *t.hidden)
        out += fmt::format(
            "ZeRO-Infinity model-state working memory (fp16 param + grad of the h x 4h linear, "
            "16 h^2, h = {}): {:.2f} GiB per GPU, untiled\n",
            *t.hidden, mswm / (1024.0 * 1024.0 * 1024.0));
      else
        out += fmt::format(
            "ZeRO-Infinity model-state working memory (fp16 param + grad of the largest MLP linear, 4 B x h x I, "
            "h = {}, I = {}): {:.2f} GiB per GPU, untiled (the paper's 16 h^2 = {:.2f} GiB assumes I = 4h)\n",
            *t.hidden, inner,
            4.0 * static_cast<double>(*t.hidden) * static_cast<double>(inner) / (1024.0 * 1024.0 * 1024.0),
            mswm / (1024.0 * 1024.0 * 1024.0));
    }
  }
  out +=
      "\nnote: model states only (params, grads, optimizer states); no activations, buffers, allocator cache or "
      "CUDA context - `zerosim run` simulates the rest.\n"
      "note: these are DeepSpeed's estimator formulas (ZeRO-2: 2P + 18P/N, fp32 gradients counted), not the ZeRO "
      "paper's (2 + 2 + K)P accounting of Fig. 1 (stage 2: 2P + 14P/N); `zerosim run` prints the paper's figure as "
      "'model states', and `zerosim validate scenarios/validation/rajbhandari2020-fig1-memory.yaml` reproduces "
      "Fig. 1.\n";
  std::cout << out;
  return 0;
}

} // namespace zerosim::cli
