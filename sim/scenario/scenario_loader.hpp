// Loading scenarios from YAML (yaml-cpp), with presets, `--set` overrides and `compare:` variants.
// Every error is a ScenarioError naming file:line: key (and the nearest valid key for a typo).
#pragma once

#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zerosim::scenario {

/// Most gradient-accumulation micro-steps a scenario may ask for (training.grad_accum): every micro-step is
/// simulated, and past the first few each adds the same time.
inline constexpr std::int64_t kMaxGradAccum = 256;

/// Most GPUs in one node (cluster.gpus_per_node): a node is simulated whole, and its cost grows with the square of
/// its GPUs; the largest NVLink domains hold 72 (GB200 NVL72) to 576 GPUs.
inline constexpr std::int64_t kMaxGpusPerNode = 1024;

/// Most GPUs in one scenario (cluster.nodes x cluster.gpus_per_node, 2^20): scenario_loader.cpp validate_limits
/// refuses more, and `zerosim plan --max-gpus` refuses a search above it.
inline constexpr std::int64_t kMaxWorldGpus = std::int64_t{1} << 20;

/// Where a scenario key got its value: for an error about it found after loading (apps/checked_scenario.cpp).
struct KeySource {
  std::string file; ///< the scenario, a preset, an imported ds_config.json, or "<cli>" for --set
  int line = 0; ///< 1-based line of the key (its YAML node's mark), 0 when unknown
  std::string key; ///< the key as written there, e.g. "zero.offload_param.buffer_size"
};

/// One simulation to run: a fully resolved scenario plus the label of its variant ("" when there is no `compare:`,
/// else e.g. "zero.stage=2").
struct Variant {
  std::string label;
  Scenario scenario;
  /// One line for the user when loading changed what the scenario file asks for ("" otherwise): a `--set` of a key
  /// the comparison varies replaced the comparison with one run.
  std::string note;
  /// Where each key set for this variant was last set, by key-table path ("zero.offload_param_buffer_size");
  /// keys left at their defaults are absent.
  std::map<std::string, KeySource> sources;
};

/// Loads `path`, applies `overrides` (each "dotted.key=value", value parsed as YAML), resolves presets (model,
/// gpu, topology), imports `zero.deepspeed_config` and a `model: path/to/config.json`, validates, and expands
/// `compare:` into one Variant per value (a single Variant otherwise).
/// Throws ScenarioError (file:line: key: ...) on any bad input.
[[nodiscard]] std::vector<Variant> load_scenario(const std::string& path,
                                                 const std::vector<std::string>& overrides = {});

/// A `--set` override as the loader reads it: blanks (spaces, tabs) around the key and before the value removed,
/// so that `zero.stage = 2` (quoted on a shell line) is `zero.stage=2`. Text without '=' is returned unchanged.
[[nodiscard]] std::string normalize_override(const std::string& override_text);

/// The most layers a scenario may have (model.layers): the program is unrolled per layer, and the largest published
/// dense transformers have about 100-130.
inline constexpr std::int64_t kMaxModelLayers = 1000;

/// The most layer passes (model.layers x training.grad_accum x simulation.steps) one run may unroll: about 13 kB of
/// memory and 0.13 ms of simulation each (scenario_loader.cpp validate_limits).
inline constexpr std::int64_t kMaxLayerPasses = 500000;

/// True when `path` (dotted, as `--set` takes it: "cluster.nic.latency", "cluster.gpu.sm_count") names a scenario
/// key or section that a scenario file, `--set` or `compare:` may set.
[[nodiscard]] bool is_settable_key(const std::string& path);

/// True when `text` is well-formed UTF-8 (Unicode 15, Table 3-7), as scenario files and --set values must be; for
/// command-line values other commands put into a generated scenario (plan, estimate --model).
[[nodiscard]] bool is_valid_utf8(const std::string& text);

/// Directory holding topologies/ and scenarios/: $ZEROSIM_DATA_DIR if set; else the nearest directory at most three
/// levels above the running executable that holds topologies/clusters/ and scenarios/ (the checkout it was built
/// in); else the source dir compiled in. Throws ScenarioError when $ZEROSIM_DATA_DIR is set but does not exist or
/// holds no topologies/clusters/ and scenarios/models/.
[[nodiscard]] std::string data_dir();

/// True when `topology` (a cluster.topology value, or `--topology` of collective and plan) names a file rather
/// than a preset: it contains '/' or ends in .yaml or .yml (preset names have neither).
[[nodiscard]] bool names_topology_file(std::string_view topology);

/// A preset as listed by `zerosim list`.
struct PresetInfo {
  std::string kind; ///< "model", "gpu", "cpu" or "topology"
  std::string name;
  std::string summary; ///< one line, e.g. "1.56B params, h=1600, L=48" or "24 GB GDDR6X, 165 TFLOPS bf16"
  std::string source;
};

/// Every preset shipped under data_dir(), sorted by kind then name. Throws ScenarioError on a broken preset file.
[[nodiscard]] std::vector<PresetInfo> list_presets();

} // namespace zerosim::scenario
