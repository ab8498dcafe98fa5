// The `expect:` block of a validation scenario (scenarios/validation/, STYLE.md §12): what a published source says a
// run must show, and the comparison of that claim with the simulated value. Used by `zerosim validate`
// (apps/validate_command.cpp); pure data + parsing, no simulation here.
//
// Grammar of `metric` (docs/validation.md "Writing a claim"):
//   term   := path | "ratio(" term "," term ")" | "sum(" term ("," term)* ")"
//   path   := [variant "@"] key ("." key)+   -- a number (or bool: 1/0) in the variant's result.json
//             (analysis/result_json.cpp); list elements by index. E.g. summary.step_time_s,
//             summary.nvidia_smi_gib, summary.fits, summary.collectives.all_gather.wire_bytes,
//             memory_per_rank.0.steady_peak.by_tag_bytes.optimizer_states
// A path without "variant@" uses the claim's `variant:` (required when the scenario has more than one variant).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace zerosim::cli {

/// One claim of an `expect:` list.
struct Expectation {
  std::string claim; ///< short name shown in the table ("" = the metric)
  std::string metric; ///< metric expression (grammar above)
  std::string variant; ///< default variant of the paths ("" = the scenario's only variant)
  double value = 0; ///< reference value, in `unit`
  std::string unit; ///< "" (dimensionless / as stored), a byte unit (B, KB, MB, GB, KiB, MiB, GiB) that
      ///< converts every *_bytes path, or documentary text (e.g. "s")
  double tolerance = 0; ///< relative (fraction of |value|) unless tolerance_absolute, then in `unit`
  bool tolerance_absolute = false;
  std::string source; ///< citation (required)
  std::string note; ///< free text
  std::string known_gap; ///< non-empty: a documented disagreement; reported as "gap", does not fail the run
  int line = 0; ///< 1-based line of the list entry in the file
};

/// Reads the top-level `expect:` list of `file`. Throws ScenarioError (file:line:key) when the block is missing,
/// empty, or an entry lacks metric/value/source, has an unknown key, a malformed metric or a bad tolerance
/// (a number >= 0 = relative, "N%" = relative, "N UNIT" with UNIT the entry's unit = absolute).
[[nodiscard]] std::vector<Expectation> parse_expectations(const std::string& file);

/// Checks the metric grammar of `metric`; returns "" when valid, else what is wrong.
[[nodiscard]] std::string metric_syntax_error(const std::string& metric);

/// Every variant name the metric of `e` refers to (explicit "v@" prefixes, else e.variant), sorted, unique.
[[nodiscard]] std::vector<std::string> metric_variants(const Expectation& e);

/// Evaluates the metric of `e`: `summaries` maps a variant name to the result.json object of its run. Paths ending in "_bytes" (or under a "*_bytes" object) are converted to e.unit when it is a byte unit.
/// Throws zerosim::Error naming the path when a variant or key is missing or not a number, or on a zero divisor.
[[nodiscard]] double evaluate_metric(const Expectation& e,
                                     const std::vector<std::pair<std::string, nlohmann::json>>& summaries);

/// Outcome of one claim.
enum class ClaimStatus { PASS, FAIL, KNOWN_GAP };

/// A claim compared: reference, simulated, delta % = (simulated - reference) / |reference| x 100 (0 when both are
/// 0; +-inf when only the reference is 0).
struct ClaimResult {
  double reference = 0;
  double simulated = 0;
  double delta_pct = 0;
  bool within = false; ///< |simulated - reference| <= tolerance (relative: tolerance x |reference|)
  ClaimStatus status = ClaimStatus::FAIL;
};

/// Compares `simulated` with the claim: within tolerance -> PASS; outside -> KNOWN_GAP when e.known_gap is set,
/// else FAIL.
[[nodiscard]] ClaimResult compare_claim(const Expectation& e, double simulated);

/// "pass", "FAIL", "gap".
[[nodiscard]] const char* to_string(ClaimStatus s);

} // namespace zerosim::cli
