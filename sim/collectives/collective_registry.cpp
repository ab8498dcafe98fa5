#include "sim/collectives/collective_registry.hpp"

#include "sim/error.hpp"

#include <array>
#include <string>

namespace zerosim::collectives {

namespace {
constexpr std::array<AlgorithmInfo, 5> kAlgorithms{{
    {Algorithm::RING, "ring",
     "ring: each rank sends to its successor; all-reduce = reduce-scatter + all-gather, 2(n-1) steps of S/n",
     "Patarasuk & Yuan 2009, JPDC 69(2); nccl-tests doc/PERFORMANCE.md"},
    {Algorithm::TREE, "tree",
     "double binary tree all-reduce: reduce up and broadcast down two complementary trees, log-depth latency",
     "Sanders, Speck & Traeff 2009, Parallel Computing 35(12); NVIDIA/nccl src/graph/tuning.cc"},
    {Algorithm::HIERARCHICAL, "hierarchical",
     "intra-node reduce-scatter, inter-node all-reduce of the 1/g shard, intra-node all-gather",
     "Jia et al. 2018, arXiv:1807.11205 section 3.3"},
    {Algorithm::NVLS, "nvls",
     "NVLink SHARP (one node, NVSwitch-3): the switch reduces / replicates; all-reduce moves S(1 + 1/n) each way "
     "per GPU, all-gather / reduce-scatter S one way and S/n the other",
     "NVIDIA/nccl src/graph/tuning.cc (NVLS entries, v2.27.7-1 and 5067397); src/device/all_reduce.h, "
     "all_gather.h, reduce_scatter.h (RunWorkColl NVLS Simple, v2.27.7-1); NVIDIA/nccl issue #1083"},
    {Algorithm::DIRECT, "direct",
     "direct (all-to-all, one node): every rank sends S/n to each of its n-1 peers at once; all-reduce = "
     "reduce-scatter + all-gather, 2 steps; uses every link of a full-mesh node",
     "Thakur, Rabenseifner & Gropp 2005, IJHPCA 19(1) (pairwise exchange, here all peers at once); "
     "docs/collectives.md"},
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
