#include "apps/checked_scenario.hpp"

#include "sim/error.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/zero_program.hpp"

namespace zerosim::cli {

std::vector<scenario::Variant> load_checked_scenario(const std::string& path,
                                                     const std::vector<std::string>& overrides) {
  std::vector<scenario::Variant> variants = scenario::load_scenario(path, overrides);
  for (const auto& v : variants) {
    const auto& sc = v.scenario;
    if (sc.zero.offload_param != scenario::OffloadDevice::NVME)
      continue;
    const std::string why = zero::check_param_swap_buffers(workload::build_workload(sc.model, sc.training), sc.zero,
                                                           sc.cluster.world_size());
    if (!why.empty())
      throw ScenarioError(sc.zero.deepspeed_config.empty() ? path : sc.zero.deepspeed_config, 0,
                          "zero.offload_param_buffer_size",
                          why + (v.label.empty() ? std::string() : " (compare variant " + v.label + ")"));
  }
  return variants;
}

} // namespace zerosim::cli
