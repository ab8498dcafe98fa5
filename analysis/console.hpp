// The console report (text through fmt): one variant -> a block of headline numbers; several variants -> one
// side-by-side table plus each variant's peak memory by tag. Every number carries its unit; GiB = 2^30 B and
// TFLOPS = 10^12 FLOP/s are stated in the report.
#pragma once

#include "analysis/summary.hpp"
#include "sim/scenario/scenario.hpp"

#include <string>
#include <vector>

namespace zerosim::analysis {

/// The report for `variants` of scenario `sc` (the base scenario, for the header line). An empty vector gives
/// only the header.
[[nodiscard]] std::string console_report(const scenario::Scenario& sc, const std::vector<VariantSummary>& variants);

} // namespace zerosim::analysis
