#include "sim/collectives/hierarchical.hpp"

#include "sim/collectives/ring.hpp"

namespace zerosim::collectives {

namespace {
PhasePlan intra(program::CollectiveKind kind, Bytes size, int g) {
  PhasePlan p;
  p.bytes_per_rank = size * ring_wire_fraction(kind, g);
  p.peer_offset = 1;
  p.latency_steps = ring_steps(kind, g);
  p.scope = PeerScope::NODE;
  return p;
}
PhasePlan across(program::CollectiveKind kind, Bytes shard, int nodes) {
  PhasePlan p;
  p.bytes_per_rank = shard * ring_wire_fraction(kind, nodes);
  p.peer_offset = 1;
  p.latency_steps = ring_steps(kind, nodes);
  p.inter_node_steps = p.latency_steps;
  p.scope = PeerScope::ACROSS_NODES;
  return p;
}
} // namespace

std::vector<PhasePlan> hierarchical_plan(program::CollectiveKind kind, Bytes size, int n, int gpus_per_node) {
  using K = program::CollectiveKind;
  const int g = gpus_per_node;
  const int nodes = n / g;
  const Bytes shard = size / static_cast<double>(g);
  switch (kind) {
  case K::ALL_REDUCE:
    return {intra(K::REDUCE_SCATTER, size, g), across(K::ALL_REDUCE, shard, nodes), intra(K::ALL_GATHER, size, g)};
  case K::REDUCE_SCATTER:
    return {intra(K::REDUCE_SCATTER, size, g), across(K::REDUCE_SCATTER, shard, nodes)};
  case K::ALL_GATHER:
    return {across(K::ALL_GATHER, shard, nodes), intra(K::ALL_GATHER, size, g)};
  case K::REDUCE: // plan() runs a reduce as a ring only
    break;
  }
  return {};
}

} // namespace zerosim::collectives
