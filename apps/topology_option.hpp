// The --topology option of `zerosim collective` and `zerosim plan`: a cluster preset (topologies/clusters/), a
// topology file of the preset format, or a scenario file whose `cluster:` section is the cluster.
#pragma once

#include "sim/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace zerosim::cli {

/// True when --topology `topology` names a scenario file: a path (scenario::names_topology_file) to a YAML map with
/// a top-level `cluster` or `model` key. A path to any other file (a preset-format topology, or one that does not
/// parse) is a topology file, whose errors the loader reports at its own lines; a name without '/' or .yaml is a
/// preset.
[[nodiscard]] bool names_scenario_file(const std::string& topology);

/// Throws UsageError "COMMAND: --topology PATH: no such file ..." when `topology` names a file
/// (scenario::names_topology_file) that does not exist: which kind it was meant to be cannot be told.
void require_topology_file(const std::string& command, const std::string& topology);

/// The cluster of preset or topology file `topology` with `overrides` (--set KEY=VALUE), resolved exactly as a
/// scenario would: a throwaway scenario file naming the smallest model and `cluster.topology: topology` (a relative
/// file path made absolute). Throws UsageError "COMMAND: --topology: ..." for an unknown preset or a missing file,
/// ScenarioError (its file:line: key) for an error inside a topology file.
[[nodiscard]] scenario::ClusterSpec load_cluster(const std::string& command, const std::string& topology,
                                                 const std::vector<std::string>& overrides);

/// The cluster of the scenario file `path` with `overrides` (its `cluster:` section, presets resolved, validated as
/// `zerosim run` does). Throws UsageError "COMMAND: --topology PATH: ..." when the file does not exist or its
/// variants (`compare:`, `compare_set:`) do not all have the same cluster, ScenarioError (file:line: key) on bad
/// input.
[[nodiscard]] scenario::ClusterSpec load_scenario_cluster(const std::string& command, const std::string& path,
                                                          const std::vector<std::string>& overrides);

/// The cluster --topology names: a scenario file (load_scenario_cluster), else a preset or topology file
/// (load_cluster), after require_topology_file.
[[nodiscard]] scenario::ClusterSpec resolve_cluster(const std::string& command, const std::string& topology,
                                                    const std::vector<std::string>& overrides);

} // namespace zerosim::cli
