#include "sim/zero/cpu_adam.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <sstream>
#include <string>

namespace zerosim::zero {

namespace {
/// `x` as printf's %g writes it (16 cores, 10.6667 cores), not std::to_string's six fixed decimals.
std::string format_g(double x) {
  std::ostringstream os;
  os << x;
  return os.str();
}
} // namespace

Seconds cpu_adam_step_time(double params, const scenario::CpuSpec& cpu) {
  if (!(cpu.peak_fp32.value() > 0) || !(cpu.memory_bandwidth.value() > 0))
    throw Error(
        "cluster.cpu: optimizer offload needs the host CPU (peak_fp32 and memory_bandwidth > 0); name a CPU "
        "preset from topologies/cpus/, e.g. `cpu: dgx2-xeon-8168`" +
        (cpu.name.empty() ? std::string() : " (got '" + cpu.name + "')"));
  if (!(params >= 0))
    throw Error("cpu_adam_step_time: expected params >= 0, got " + std::to_string(params));
  const Seconds compute = Flops(params * kCpuAdamFlopsPerParam) / cpu.peak_fp32;
  const Seconds memory = Bytes(params * kCpuAdamBytesPerParam) / cpu.memory_bandwidth;
  return Seconds(std::max(compute.value(), memory.value()) / kCpuAdamEfficiency);
}

double cpu_adam_seconds_per_param(const scenario::CpuSpec& cpu, int ranks_per_node, int threads_per_rank) {
  if (ranks_per_node < 1)
    throw Error("cpu_adam_seconds_per_param: expected ranks_per_node >= 1, got " + std::to_string(ranks_per_node));
  if (threads_per_rank < 0)
    throw Error("cpu_adam_seconds_per_param: expected threads_per_rank >= 0, got " + std::to_string(threads_per_rank));
  const double whole_node = cpu_adam_step_time(1.0, cpu).value(); // also checks the CPU is given
  const double c = scenario::cpu_cores_per_rank(cpu, ranks_per_node, threads_per_rank);
  if (cpu.cores <= 0) // no core count (a CPU built in code): every core, 1/R of the node in both terms
    return static_cast<double>(ranks_per_node) * whole_node;
  const double share = static_cast<double>(cpu.cores) / ranks_per_node;
  const double b1 = cpu.core_memory_bandwidth.value();
  if (c < share && !(b1 > 0))
    throw Error("cluster.cpu.core_memory_bandwidth: a rank runs " + std::to_string(threads_per_rank) +
                " thread(s) on its share of " + format_g(share) +
                " cores, which needs one core's DRAM bandwidth; give cpu.core_memory_bandwidth (single-thread "
                "STREAM) for " +
                (cpu.name.empty() ? std::string("the CPU") : "'" + cpu.name + "'"));
  const double compute_rate = cpu.peak_fp32.value() * c / cpu.cores; // FLOP/s
  double memory_rate = cpu.memory_bandwidth.value() / ranks_per_node; // B/s
  if (b1 > 0)
    memory_rate = std::min(memory_rate, c * b1);
  return std::max(kCpuAdamFlopsPerParam / compute_rate, kCpuAdamBytesPerParam / memory_rate) / kCpuAdamEfficiency;
}

TorchCpuAdamBytes torch_cpu_adam_bytes(scenario::OptimizerImpl impl) {
  switch (impl) {
  case scenario::OptimizerImpl::TORCH_SINGLE_TENSOR:
    return {};
  case scenario::OptimizerImpl::TORCH_FOREACH:
    return {.params = 16, .grads = 8, .states = 32, .temps = 24, .fresh = 4};
  case scenario::OptimizerImpl::FUSED:
    break;
  }
  throw Error("torch_cpu_adam_bytes: FusedAdam has no torch step on the CPU (DeepSpeedCPUAdam runs there)");
}

Seconds torch_cpu_adam_step_time(double params, const scenario::CpuSpec& cpu, scenario::OptimizerImpl impl) {
  const TorchCpuAdamBytes b = torch_cpu_adam_bytes(impl);
  if (!(cpu.page_fault_bandwidth.value() > 0))
    throw Error("cluster.cpu.page_fault_bandwidth: expected a positive rate, got " +
                std::to_string(cpu.page_fault_bandwidth.value()));
  const double per_byte = cpu_adam_step_time(1.0, cpu).value() / kCpuAdamBytesPerParam;
  return Seconds(params * (b.total() * per_byte + b.fresh / cpu.page_fault_bandwidth.value()));
}

double pinned_byte_weight(int numa_nodes, int ranks_per_node) {
  if (numa_nodes < 1 || ranks_per_node < 1)
    throw Error("pinned_byte_weight: expected numa_nodes >= 1 and ranks_per_node >= 1, got " +
                std::to_string(numa_nodes) + " and " + std::to_string(ranks_per_node));
  const int ranks_on_busiest = (ranks_per_node + numa_nodes - 1) / numa_nodes;
  return static_cast<double>(numa_nodes) * ranks_on_busiest / ranks_per_node;
}

} // namespace zerosim::zero
