#include "sim/collectives/collective_plan.hpp"

#include "sim/collectives/collective_registry.hpp"
#include "sim/collectives/direct.hpp"
#include "sim/collectives/hierarchical.hpp"
#include "sim/collectives/nvls.hpp"
#include "sim/collectives/ring.hpp"
#include "sim/collectives/tree.hpp"
#include "sim/error.hpp"

#include <algorithm>
#include <string>

namespace zerosim::collectives {

namespace {
void check_args(program::CollectiveKind kind, Bytes size, int n) {
  if (n < 1)
    throw Error(std::string("collective ") + program::to_string(kind) + ": group size n must be >= 1, got " +
                std::to_string(n));
  if (size < Bytes(0))
    throw Error(std::string("collective ") + program::to_string(kind) + ": size must be >= 0 bytes, got " +
                std::to_string(size.value()));
}
} // namespace

std::vector<PhasePlan> plan(program::CollectiveKind kind, Algorithm algo, Bytes size, int n) {
  return plan(kind, algo, size, n, std::max(n, 1));
}

std::vector<PhasePlan> plan(program::CollectiveKind kind, Algorithm algo, Bytes size, int n, int gpus_per_node) {
  check_args(kind, size, n);
  if (gpus_per_node < 1 || n % gpus_per_node != 0)
    throw Error(std::string("collective ") + program::to_string(kind) + ": " + std::to_string(n) +
                " ranks do not fill nodes of " + std::to_string(gpus_per_node) + " GPUs");
  if (kind == program::CollectiveKind::REDUCE && algo != Algorithm::RING)
    throw Error(std::string("collective reduce: only the ring algorithm is defined for it (NCCL's Reduce runs as a "
                            "ring chain), got ") +
                to_string(algo));
  if (algo == Algorithm::TREE && kind != program::CollectiveKind::ALL_REDUCE)
    throw Error(std::string("collective ") + program::to_string(kind) +
                ": the tree algorithm is defined for all_reduce only (NCCL runs other collectives as rings)");
  // (A reduce was refused above: NCCL's Reduce is a ring chain.)
  if (algo == Algorithm::NVLS && n / gpus_per_node > 1)
    throw Error(std::string("collective ") + program::to_string(kind) + ": nvls runs on one node, got " +
                std::to_string(n / gpus_per_node) +
                " nodes (NCCL's multi-node NVLS needs CollNet/SHARP switches, not modelled)");
  if (algo == Algorithm::DIRECT && n / gpus_per_node > 1)
    throw Error(std::string("collective ") + program::to_string(kind) +
                ": the direct algorithm runs on one node, got " + std::to_string(n / gpus_per_node) +
                " nodes (use ring, tree or hierarchical across nodes)");
  // One rank has nobody to talk to; NCCL also returns at once for a zero-element call (no kernel launched).
  if (n == 1 || size == Bytes(0))
    return {};
  const int nodes = n / gpus_per_node;
  switch (algo) {
  case Algorithm::RING:
    return ring_plan(kind, size, n, gpus_per_node);
  case Algorithm::TREE:
    return tree_plan(size, n, gpus_per_node);
  case Algorithm::NVLS:
    return kind == program::CollectiveKind::ALL_REDUCE ? nvls_plan(size, n) : nvls_ag_rs_plan(size, n);
  case Algorithm::DIRECT:
    return direct_plan(kind, size, n);
  case Algorithm::HIERARCHICAL:
    if (nodes == 1 || gpus_per_node == 1)
      return ring_plan(kind, size, n, gpus_per_node);
    return hierarchical_plan(kind, size, n, gpus_per_node);
  }
  throw Error("collective: unknown algorithm");
}

Bytes wire_bytes_per_rank(program::CollectiveKind kind, Algorithm algo, Bytes size, int n) {
  return wire_bytes_per_rank(kind, algo, size, n, std::max(n, 1));
}

Bytes wire_bytes_per_rank(program::CollectiveKind kind, Algorithm algo, Bytes size, int n, int gpus_per_node) {
  Bytes total(0);
  for (const PhasePlan& p : plan(kind, algo, size, n, gpus_per_node))
    total += p.bytes_per_rank;
  // A reduce's root sends nothing: the mean over ranks is (n-1)/n of what each chain link carries.
  if (kind == program::CollectiveKind::REDUCE && n > 1)
    total = total * (static_cast<double>(n - 1) / static_cast<double>(n));
  return total;
}

double bus_bandwidth_factor(program::CollectiveKind kind, int n) {
  if (n < 1)
    throw Error(std::string("bus_bandwidth_factor ") + program::to_string(kind) + ": group size n must be >= 1, got " +
                std::to_string(n));
  // nccl-tests doc/PERFORMANCE.md: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n. It equals the ring's
  // wire fraction by construction (busbw is the per-link bandwidth of the ring); 0 for n == 1.
  return ring_wire_fraction(kind, n);
}

const char* to_string(Algorithm a) { return algorithm_info(a).name; }

} // namespace zerosim::collectives
