#include "sim/collectives/collective_registry.hpp"

#include "sim/error.hpp"

#include <array>
#include <string>

namespace zerosim::collectives {

namespace {
constexpr std::array<AlgorithmInfo, 1> kAlgorithms{{
    {Algorithm::RING, "ring",
     "ring: each rank sends to its successor; all-reduce = reduce-scatter + all-gather, 2(n-1) steps of S/n",
     "Patarasuk & Yuan 2009, JPDC 69(2); nccl-tests doc/PERFORMANCE.md"},
}};
} // namespace

std::span<const AlgorithmInfo> algorithm_registry() { return kAlgorithms; }

const AlgorithmInfo& algorithm_info(Algorithm a) {
  for (const AlgorithmInfo& info : kAlgorithms)
    if (info.algorithm == a)
      return info;
  throw Error("collective: algorithm missing from the registry");
}

Algorithm parse_algorithm(std::string_view name) {
  std::string known;
  for (const AlgorithmInfo& info : kAlgorithms) {
    if (name == info.name)
      return info.algorithm;
    known += known.empty() ? "" : ", ";
    known += info.name;
  }
  throw Error("unknown collective algorithm '" + std::string(name) + "'; known: " + known);
}

} // namespace zerosim::collectives
