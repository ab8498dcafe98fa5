// `zerosim largest`: the largest value of an integer scenario key (model.layers, training.micro_batch) at which a
// run still fits, found by galloping from the scenario's value and then bisecting. Pure: the caller's predicate
// simulates.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace zerosim::analysis {

/// One probe of the search: the value tried and whether the run fitted there.
struct LargestProbe {
  std::int64_t value = 0;
  bool fits = false;
};

/// What the search found. `largest` is the largest value found to fit (0: not even 1 fits); `first_miss` the
/// smallest value found not to fit above it (0: every value up to `max` fits). Valid answer: largest + 1 ==
/// first_miss, or largest == max with first_miss == 0, or largest == 0 with first_miss == 1.
struct LargestSearch {
  std::int64_t largest = 0;
  std::int64_t first_miss = 0;
  std::vector<LargestProbe> probes; ///< in the order tried; a value is never tried twice
};

/// Searches values 1..max for the largest one at which `fits` holds, assuming `fits` is monotone (true up to some
/// value, false above it; bigger models and micro-batches need more memory). From `start` (clamped to [1, max]) it
/// doubles while the run fits (or halves while it does not), then bisects the bracket: about log2(answer/start) +
/// log2(answer) probes. When `fits` is not monotone the answer is one edge of a fit, not necessarily the largest (a marginal fit
/// that needed the caching allocator's retries can fail one value below a fit). Throws std::invalid_argument when
/// max < 1; whatever `fits` throws passes through.
[[nodiscard]] LargestSearch search_largest(std::int64_t start, std::int64_t max,
                                           const std::function<bool(std::int64_t)>& fits);

} // namespace zerosim::analysis
