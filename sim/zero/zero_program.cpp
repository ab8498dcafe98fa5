#include "sim/zero/zero_program.hpp"

#include "sim/error.hpp"
#include "sim/zero/stage0_generator.hpp"
#include "sim/zero/stage1_generator.hpp"
#include "sim/zero/stage2_generator.hpp"
#include "sim/zero/stage3_generator.hpp"

#include <string>

namespace zerosim::zero {

using scenario::OffloadDevice;

program::StepProgram generate_program(const GeneratorInput& in) {
  const auto& z = in.zero;
  if (z.stage < 0 || z.stage > 3)
    throw Error("zero.stage: expected 0, 1, 2 or 3, got " + std::to_string(z.stage));
  // offload_param exists only in stage 3 (DeepSpeedZeroConfig: offload_param is a ZeRO-3 feature,
  // zero_semantics.md §3.5 "Offload in stage 3").
  if (z.offload_param != OffloadDevice::NONE && z.stage != 3)
    throw Error(
        "zero.offload_param: parameter offload requires ZeRO stage 3 (DeepSpeed offload_param is a "
        "ZeRO-3 feature), got stage " +
        std::to_string(z.stage));
  // offload_optimizer needs a ZeRO optimizer (stage 1-3); stage 0's FP16_Optimizer has no offload path.
  if (z.offload_optimizer != OffloadDevice::NONE && z.stage == 0)
    throw Error(
        "zero.offload_optimizer: optimizer offload requires ZeRO stage 1, 2 or 3 (stage 0 runs "
        "FP16_Optimizer), got stage 0");
  // Simulated: offload_optimizer=cpu|nvme for stages 1-3 (stage 1/2 treat nvme as cpu, like stage_1_and_2.py's
  // cpu_offload; offload_cpu.hpp) and, in stage 3, offload_param=cpu|nvme with or without an optimizer offload
  // (stage3_generator.cpp, offload_nvme.hpp). The scenario loader mirrors these rules and also requires cluster.nvme.
  if (z.reduce_bucket_size < 1)
    throw Error("zero.reduce_bucket_size: expected >= 1 element, got " + std::to_string(z.reduce_bucket_size));
  // DeepSpeed accepts 0 (zero/config.py sub_group_size ge=0): one sub-group per parameter (sub_group_members).
  if (z.sub_group_size < 0)
    throw Error("zero.sub_group_size: expected >= 0 elements, got " + std::to_string(z.sub_group_size));
  if (const std::string why = check_param_swap_buffers(in.workload, z, in.dp_degree); !why.empty())
    throw Error("zero.offload_param.buffer_size: " + why);
  program::StepProgram p = [&] {
    if (scenario::uses_bf16_optimizer(in.workload.training, z))
      return generate_bf16_optimizer(in);
    switch (z.stage) {
    case 0:
      return generate_stage0(in);
    case 1:
      return generate_stage1(in);
    case 2:
      return generate_stage2(in);
    default:
      return generate_stage3(in);
    }
  }();
  // Memory conservation: what a finished run leaves allocated is the declared persistent buffers and nothing else.
  if (const std::string leak = program::check_conservation(p); !leak.empty())
    throw Error("internal: ZeRO stage " + std::to_string(z.stage) + " program: " + leak);
  return p;
}

std::string check_param_swap_buffers(const workload::Workload& wl, const scenario::ZeroConfig& z, int dp_degree) {
  if (z.stage != 3 || z.offload_param != scenario::OffloadDevice::NVME || dp_degree < 1)
    return {};
  const Elements n = dp_degree;
  const Elements largest = (wl.largest_tensor_numel + n - 1) / n;
  if (largest <= z.param_swap_buffer_size)
    return {};
  return std::to_string(z.param_swap_buffer_size) + " elements per swap buffer" +
         (z.param_swap_buffer_size == 100'000'000 ? " (DeepSpeed's default)" : "") +
         " is smaller than the largest parameter partition, " + std::to_string(largest) +
         " elements (DeepSpeed's partitioned_param_swapper asserts that a partition fits one buffer); set "
         "zero.offload_param_buffer_size (buffer_size in the offload_param map) to at least " +
         std::to_string(largest);
}

} // namespace zerosim::zero
