// The table of collective algorithms zerosim knows, for `zerosim list` and for parsing a scenario's algorithm name
// (STYLE.md §3; like SimGrid's src/smpi/colls name tables).
#pragma once

#include "sim/collectives/collective_plan.hpp"

#include <span>
#include <string_view>

namespace zerosim::collectives {

/// One registered algorithm.
struct AlgorithmInfo {
  Algorithm algorithm = Algorithm::RING;
  const char* name = ""; ///< stable lowercase name used in scenarios and output ("ring")
  const char* description = ""; ///< one line for `zerosim list`
  const char* reference = ""; ///< where its cost model comes from
};

/// Every algorithm, in a fixed order (deterministic listing).
[[nodiscard]] std::span<const AlgorithmInfo> algorithm_registry();

/// The registry entry of `a`.
[[nodiscard]] const AlgorithmInfo& algorithm_info(Algorithm a);

/// Looks an algorithm up by name (exact, lowercase). Throws zerosim::Error naming the known algorithms otherwise.
[[nodiscard]] Algorithm parse_algorithm(std::string_view name);

} // namespace zerosim::collectives
