// The --topology option of `zerosim collective` and `zerosim plan` (apps/topology_option.hpp).
#include "apps/topology_option.hpp"

#include "analysis/result_json.hpp"
#include "apps/cli.hpp"
#include "apps/sim_child.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace zerosim::cli {

bool names_scenario_file(const std::string& topology) {
  if (!scenario::names_topology_file(topology))
    return false;
  // Only a regular file of at most the loader's 16 MiB input limit is opened here (a device given by mistake is
  // read, and refused, by the loader).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(topology, ec) || std::filesystem::file_size(topology, ec) > (16u << 20) || ec)
    return false;
  try {
    const YAML::Node n = YAML::LoadFile(topology);
    return n.IsMap() && (n["cluster"].IsDefined() || n["model"].IsDefined());
  } catch (const YAML::Exception&) {
    return false; // not readable or not YAML: the loader names the file (and line) when it reads it as a topology
  }
}

void require_topology_file(const std::string& command, const std::string& topology) {
  std::error_code ec;
  if (scenario::names_topology_file(topology) && !std::filesystem::exists(topology, ec))
    throw UsageError(command + ": --topology " + topology +
                     ": no such file (a scenario or topology file; a preset name has no '/' and no .yaml ending; "
                     "`zerosim list` shows the presets)");
}

scenario::ClusterSpec load_cluster(const std::string& command, const std::string& topology,
                                   const std::vector<std::string>& overrides) {
  const TempDir tmp(command); // removed on return and on Ctrl-C
  const std::string path = (tmp.path() / "topology.yaml").string();
  // A relative topology file is relative to the current directory, where the user typed it (the throwaway file
  // lives elsewhere). Quoted as YAML, so any path reaches the loader as written.
  std::string value = topology;
  if (scenario::names_topology_file(topology)) {
    std::error_code ec;
    const std::filesystem::path abs = std::filesystem::absolute(topology, ec);
    if (!ec)
      value = abs.lexically_normal().string();
  }
  {
    YAML::Emitter e;
    e << YAML::BeginMap << YAML::Key << "name" << YAML::Value << command << YAML::Key << "model" << YAML::Value
      << "gpt2" << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap << YAML::Key << "topology" << YAML::Value
      << value << YAML::EndMap << YAML::EndMap;
    std::ofstream f(path);
    f << e.c_str() << "\n";
    if (!f.flush())
      throw Error(command + ": cannot write a temporary scenario " + path + ": " + std::strerror(errno));
  }
  try {
    auto variants = scenario::load_scenario(path, overrides);
    return variants.front().scenario.cluster;
  } catch (const ScenarioError& e) {
    if (e.file() != path)
      throw; // a topology file's own line, or --set
    // The throwaway file holds only --topology: name the option, not the file; an error the loader places in it
    // for another key (one --set changed) names the key alone.
    const std::string what = e.what();
    const auto at = what.find(": " + e.key() + ": ");
    if (e.key() != "cluster.topology" && at != std::string::npos)
      throw UsageError(command + ": " + what.substr(at + 2));
    throw UsageError(command +
                     ": --topology: " + (at == std::string::npos ? what : what.substr(at + e.key().size() + 4)));
  }
}

scenario::ClusterSpec load_scenario_cluster(const std::string& command, const std::string& path,
                                            const std::vector<std::string>& overrides) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw UsageError(command + ": --topology " + path +
                     ": no such scenario file (a preset name has no '/' and no .yaml; `zerosim list` shows the "
                     "presets)");
  auto variants = scenario::load_scenario(path, overrides);
  const std::string first = analysis::cluster_text(variants.front().scenario.cluster);
  for (const auto& v : variants) {
    if (analysis::cluster_text(v.scenario.cluster) == first)
      continue;
    const YAML::Node compare = YAML::LoadFile(path)["compare"];
    const std::string key =
        compare && compare.IsMap() && compare.size() > 0 ? compare.begin()->first.as<std::string>() : "";
    if (key == "cluster" || key.rfind("cluster.", 0) == 0)
      throw UsageError(command + ": --topology " + path + ": its variants differ in the cluster (compare: " + key +
                       "); pick one with --set " + (key == "cluster" ? "cluster.KEY" : key) + "=VALUE");
    // compare_set: gives some variants cluster keys of their own; one --set of such a key gives them all one value.
    throw UsageError(command + ": --topology " + path + ": its variants differ in the cluster (" +
                     variants.front().label + " and " + v.label +
                     ", through compare_set:); pick one with --set cluster.KEY=VALUE");
  }
  return variants.front().scenario.cluster;
}

scenario::ClusterSpec resolve_cluster(const std::string& command, const std::string& topology,
                                      const std::vector<std::string>& overrides) {
  require_topology_file(command, topology);
  return names_scenario_file(topology) ? load_scenario_cluster(command, topology, overrides)
                                       : load_cluster(command, topology, overrides);
}

} // namespace zerosim::cli
