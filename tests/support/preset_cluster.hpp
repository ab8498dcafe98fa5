// Test support: the ClusterSpec of a topology preset as the scenario loader resolves it (with its validation), for
// tests that need a preset's real numbers rather than hand-built ones.
#pragma once

#include "sim/scenario/scenario_loader.hpp"
#include "tests/support/temp_dir.hpp"

#include <fstream>
#include <string>
#include <vector>

namespace zerosim::test {

/// Loads a minimal scenario (gpt2 on preset `topology`) with `overrides` ("dotted.key=value", as --set) and returns
/// its cluster. Throws what load_scenario throws (ScenarioError naming <cli> for a bad override).
inline scenario::ClusterSpec preset_cluster(const std::string& topology,
                                            const std::vector<std::string>& overrides = {}) {
  const TempDir dir("preset");
  const std::string path = (dir.path() / "preset.yaml").string();
  std::ofstream(path) << "name: preset\nmodel: gpt2\ncluster:\n  topology: " << topology << "\n";
  return scenario::load_scenario(path, overrides).front().scenario.cluster;
}

} // namespace zerosim::test
