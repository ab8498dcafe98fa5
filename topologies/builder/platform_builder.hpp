// Turns a ClusterSpec into a SimGrid platform with SimGrid's own zone builders (DESIGN.md "topologies/").
// Only this file's implementation and engine/ include SimGrid headers.
#pragma once

#include "sim/quantity.hpp"
#include "sim/scenario/scenario.hpp"

#include <vector>

namespace simgrid::s4u {
class Host;
}

namespace zerosim::topology {

/// The built platform: one SimGrid host per GPU (rank order: node-major), one host per node for its CPU/memory.
struct Platform {
  std::vector<simgrid::s4u::Host*> gpus;   ///< index = global rank
  std::vector<simgrid::s4u::Host*> cpus;   ///< index = node
  int gpus_per_node = 1;
  [[nodiscard]] simgrid::s4u::Host* cpu_of(int rank) const { return cpus.at(static_cast<std::size_t>(rank / gpus_per_node)); }
};

/// Builds the platform into the current s4u::Engine, which must exist and be configured (network/model:CM02,
/// network/crosstraffic:0, network/TCP-gamma:0, set before the first zone; reference/simgrid_notes.md §3).
/// Shape: a node is a star zone (each GPU a split-duplex link of intra_node bandwidth/latency to the node switch,
/// each GPU a split-duplex PCIe link to the node's CPU host); nodes > 1 hang from a fat-tree
/// (create_fatTree_zone) whose leaf links aggregate the node's NICs (nics_per_node x nic bandwidth).
/// GPU hosts run at 1 flop/s per "speed unit": the engine converts a kernel's duration into work.
/// Throws zerosim::Error on an impossible shape (nodes < 1, gpus_per_node < 1).
Platform build_platform(const scenario::ClusterSpec& cluster);

/// Speed given to every GPU host: the engine executes a kernel of duration t as t x kGpuHostSpeed flops.
inline constexpr double kGpuHostSpeed = 1e12;

} // namespace zerosim::topology
