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

namespace {

/// The two terms of cpu_adam_seconds_per_param before kCpuAdamEfficiency: seconds per parameter of compute and of
/// memory, and whether the memory rate is the rank's threads' (c x b1 < B / R).
struct AdamTerms {
  double compute = 0;
  double memory = 0;
  bool thread_memory = false;
};

AdamTerms adam_terms(const scenario::CpuSpec& cpu, int ranks_per_node, int threads_per_rank) {
  if (ranks_per_node < 1)
    throw Error("cpu_adam_seconds_per_param: expected ranks_per_node >= 1, got " + std::to_string(ranks_per_node));
  if (threads_per_rank < 0)
    throw Error("cpu_adam_seconds_per_param: expected threads_per_rank >= 0, got " + std::to_string(threads_per_rank));
  (void)cpu_adam_step_time(1.0, cpu); // checks the CPU is given
  const double c = scenario::cpu_cores_per_rank(cpu, ranks_per_node, threads_per_rank);
  const double r = ranks_per_node;
  if (cpu.cores <= 0) // no core count (a CPU built in code): every core, 1/R of the node in both terms
    return {r * kCpuAdamFlopsPerParam / cpu.peak_fp32.value(), r * kCpuAdamBytesPerParam / cpu.memory_bandwidth.value(),
            false};
  const double share = static_cast<double>(cpu.cores) / ranks_per_node;
  const double b1 = cpu.core_memory_bandwidth.value();
  if (c < share && !(b1 > 0))
    throw Error("cluster.cpu.core_memory_bandwidth: a rank runs " + std::to_string(threads_per_rank) +
                " thread(s) on its share of " + format_g(share) +
                " cores, which needs one core's DRAM bandwidth; give cpu.core_memory_bandwidth for " +
                (cpu.name.empty() ? std::string("the CPU") : "'" + cpu.name + "'") +
                ": one core's DRAM bytes read plus written per second alone on its own NUMA node (single-thread "
                "STREAM Triad)");
  const double compute_rate = cpu.peak_fp32.value() * c / cpu.cores; // FLOP/s
  const double node_rate = cpu.memory_bandwidth.value() / ranks_per_node; // B/s
  const bool thread_memory = b1 > 0 && c * b1 < node_rate;
  const double memory_rate = thread_memory ? c * b1 : node_rate;
  return {kCpuAdamFlopsPerParam / compute_rate, kCpuAdamBytesPerParam / memory_rate, thread_memory};
}

} // namespace

double cpu_adam_seconds_per_param(const scenario::CpuSpec& cpu, int ranks_per_node, int threads_per_rank) {
  const AdamTerms t = adam_terms(cpu, ranks_per_node, threads_per_rank);
  return std::max(t.compute, t.memory) / kCpuAdamEfficiency;
}

CpuAdamBound cpu_adam_rate_bound(const scenario::CpuSpec& cpu, int ranks_per_node, int threads_per_rank) {
  const AdamTerms t = adam_terms(cpu, ranks_per_node, threads_per_rank);
  if (t.compute > t.memory)
    return CpuAdamBound::COMPUTE;
  return t.thread_memory ? CpuAdamBound::THREAD_MEMORY : CpuAdamBound::NODE_MEMORY;
}

const char* cpu_adam_bound_key(CpuAdamBound b) {
  switch (b) {
  case CpuAdamBound::NODE_MEMORY:
    return "node_memory";
  case CpuAdamBound::THREAD_MEMORY:
    return "thread_memory";
  case CpuAdamBound::COMPUTE:
    break;
  }
  return "compute";
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
