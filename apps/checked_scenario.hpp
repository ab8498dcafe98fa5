// Loading a scenario with every input check `zerosim run` makes before it simulates, shared by run, sweep and plan.
#pragma once

#include "sim/scenario/scenario_loader.hpp"

#include <string>
#include <vector>

namespace zerosim::cli {

/// scenario::load_scenario(path, overrides) plus the input checks that need the model's tensors, which the loader
/// cannot make because it does not build the workload: offload_param=nvme swap buffers too small for the largest
/// parameter partition (zero::check_param_swap_buffers, DeepSpeed's partitioned_param_swapper assert), and a
/// pipelined offload_optimizer=nvme swapper with too few buffers for its sub-groups (zero::
/// check_optimizer_swap_buffers, PipelinedOptimizerSwapper's "ran out of swap buffers" assert). Every input
/// error throws ScenarioError (file:line: key of the offending key as written, Variant::sources: the buffer size, or
/// when it is left at its default the zero.offload_param that chose NVMe): `zerosim run` prints it and exits 2, and
/// `zerosim sweep` and `zerosim plan` make the point an invalid row, as for the loader's own errors. Throws what
/// load_scenario throws.
[[nodiscard]] std::vector<scenario::Variant> load_checked_scenario(const std::string& path,
                                                                   const std::vector<std::string>& overrides);

} // namespace zerosim::cli
