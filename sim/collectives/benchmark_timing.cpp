#include "sim/collectives/benchmark_timing.hpp"

#include "sim/error.hpp"

#include <string>

namespace zerosim::collectives {

const char* to_string(BenchmarkTiming t) { return t == BenchmarkTiming::TORCH_LOOP ? "torch-loop" : "nccl-tests"; }

BenchmarkTiming parse_benchmark_timing(std::string_view name) {
  if (name == "nccl-tests")
    return BenchmarkTiming::NCCL_TESTS;
  if (name == "torch-loop")
    return BenchmarkTiming::TORCH_LOOP;
  throw Error("unknown benchmark timing '" + std::string(name) + "'; known: nccl-tests, torch-loop");
}

Seconds benchmark_time(Seconds collective, BenchmarkTiming t, Seconds op_launch) {
  if (collective.value() < 0 || op_launch.value() < 0)
    throw Error("benchmark_time: times must be >= 0 s, got collective " + std::to_string(collective.value()) +
                " s, op_launch " + std::to_string(op_launch.value()) + " s");
  return t == BenchmarkTiming::TORCH_LOOP ? collective + op_launch : collective;
}

} // namespace zerosim::collectives
