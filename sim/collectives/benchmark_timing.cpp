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

Seconds benchmark_time(Seconds collective, BenchmarkTiming t, Seconds call_overhead) {
  if (collective.value() < 0 || call_overhead.value() < 0)
    throw Error("benchmark_time: times must be >= 0 s, got collective " + std::to_string(collective.value()) +
                " s, call_overhead " + std::to_string(call_overhead.value()) + " s");
  return t == BenchmarkTiming::TORCH_LOOP ? collective + call_overhead : collective;
}

} // namespace zerosim::collectives
