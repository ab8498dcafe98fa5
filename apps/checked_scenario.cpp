#include "apps/checked_scenario.hpp"

#include "sim/error.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/offload_nvme.hpp"
#include "sim/zero/stage3_generator.hpp"
#include "sim/zero/zero_program.hpp"

namespace zerosim::cli {

std::vector<scenario::Variant> load_checked_scenario(const std::string& path,
                                                     const std::vector<std::string>& overrides) {
  std::vector<scenario::Variant> variants = scenario::load_scenario(path, overrides);
  for (const auto& v : variants) {
    const auto& sc = v.scenario;
    if (sc.zero.stage == 3 && sc.zero.offload_optimizer == scenario::OffloadDevice::NVME &&
        (sc.zero.optimizer_pipeline_read || sc.zero.optimizer_pipeline_write)) {
      const workload::Workload wl = workload::build_workload(sc.model, sc.training);
      const zero::GeneratorInput in{wl, sc.zero, sc.cluster.world_size()};
      const std::string why =
          zero::check_optimizer_swap_buffers(sc.zero, zero::stage3_sub_group_count(in, sc.zero.sub_group_size));
      if (!why.empty()) {
        // Named at the buffer count where it was written, else at the pipeline key that asked for the buffers.
        scenario::KeySource at{path, 0, "zero.offload_optimizer_buffer_count"};
        for (const char* key : {"zero.offload_optimizer_pipeline_write", "zero.offload_optimizer_pipeline_read",
                                "zero.offload_optimizer_buffer_count"})
          if (const auto it = v.sources.find(key); it != v.sources.end())
            at = it->second;
        throw ScenarioError(at.file, at.line, at.key,
                            why + (v.label.empty() ? std::string() : " (compare variant " + v.label + ")"));
      }
    }
    if (sc.zero.offload_param != scenario::OffloadDevice::NVME)
      continue;
    const std::string why = zero::check_param_swap_buffers(workload::build_workload(sc.model, sc.training), sc.zero,
                                                           sc.cluster.world_size());
    if (why.empty())
      continue;
    // Named at the buffer size where it was written (scenario, compare value, ds_config, --set); left at DeepSpeed's
    // default, at the key that put the parameters on NVMe.
    scenario::KeySource at{path, 0, "zero.offload_param_buffer_size"};
    if (const auto it = v.sources.find("zero.offload_param_buffer_size"); it != v.sources.end())
      at = it->second;
    else if (const auto nvme = v.sources.find("zero.offload_param"); nvme != v.sources.end())
      at = nvme->second;
    throw ScenarioError(at.file, at.line, at.key,
                        why + (v.label.empty() ? std::string() : " (compare variant " + v.label + ")"));
  }
  return variants;
}

} // namespace zerosim::cli
