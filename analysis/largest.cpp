// Galloping search for the largest fitting value (analysis/largest.hpp).
#include "analysis/largest.hpp"

#include <algorithm>
#include <stdexcept>

namespace zerosim::analysis {

LargestSearch search_largest(std::int64_t start, std::int64_t max, const std::function<bool(std::int64_t)>& fits) {
  if (max < 1)
    throw std::invalid_argument("search_largest: max must be at least 1");
  LargestSearch r;
  const auto probe = [&](std::int64_t v) {
    const bool ok = fits(v);
    r.probes.push_back({v, ok});
    return ok;
  };
  // Bracket [lo, hi): lo fits (0 = nothing known to fit), hi does not (max + 1 = nothing known to fail).
  std::int64_t lo = 0;
  std::int64_t hi = max + 1;
  std::int64_t v = std::clamp<std::int64_t>(start, 1, max);
  if (probe(v)) {
    lo = v;
    while (lo < max) {
      v = lo > max / 2 ? max : 2 * lo;
      if (!probe(v)) {
        hi = v;
        break;
      }
      lo = v;
    }
  } else {
    hi = v;
    while (hi > 1) {
      v = hi / 2;
      if (probe(v)) {
        lo = v;
        break;
      }
      hi = v;
    }
  }
  while (hi - lo > 1) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (probe(mid))
      lo = mid;
    else
      hi = mid;
  }
  r.largest = lo;
  r.first_miss = hi > max ? 0 : hi;
  return r;
}

} // namespace zerosim::analysis
