// Parsing quantities with units, as a person writes them in a scenario ("24GiB", "450GBps", "400Gbps", "2us",
// "165.2TFLOPS", "2.7GHz"). One table per dimension (STYLE.md §5; the layout follows SimGrid's src/xbt/xbt_parse_units.cpp):
// decimal prefixes k/M/G/T/P = 1e3.. and binary prefixes Ki/Mi/Gi/Ti = 2^10..; a lower-case `b` in a rate means bits.
#pragma once

#include "sim/quantity.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace zerosim::scenario {

/// Where a value came from, for the ScenarioError a bad value raises.
struct ValueLocation {
  std::string file; ///< file path, or "<cli>" for a command-line override
  int line = 0; ///< 1-based, 0 when unknown
  std::string key; ///< dotted key, e.g. "cluster.intra_node.bandwidth"
};

/// One row of a unit table: the suffix as written and its factor to the SI base unit of the dimension.
struct UnitRow {
  std::string_view suffix;
  double factor;
};

/// The unit tables, exposed for `zerosim list`, the docs and the tests.
[[nodiscard]] const std::vector<UnitRow>& byte_units(); ///< B, kB..PB, KiB..TiB -> bytes
[[nodiscard]] const std::vector<UnitRow>& byte_rate_units(); ///< Bps/B/s (bytes), bps (bits, /8) -> B/s
[[nodiscard]] const std::vector<UnitRow>& second_units(); ///< s, ms, us, ns -> s
[[nodiscard]] const std::vector<UnitRow>& flop_rate_units(); ///< FLOPS, kFLOPS..PFLOPS -> FLOP/s
[[nodiscard]] const std::vector<UnitRow>& frequency_units(); ///< Hz, kHz, MHz, GHz -> Hz

/// "24GiB" -> 24·2^30 B; "80GB" -> 80e9 B. Throws ScenarioError at `where` on a bare number, an unknown unit or text
/// that is not a number. Spaces between number and unit are allowed ("24 GiB"). A bare 0 (also "0.0") is accepted
/// here and by the four parsers below: zero is zero in every unit.
[[nodiscard]] Bytes parse_bytes(std::string_view text, const ValueLocation& where);
/// "450GBps" -> 450e9 B/s; "400Gbps" -> 400e9/8 B/s (bits); "25GiBps" -> 25·2^30 B/s.
[[nodiscard]] ByteRate parse_byte_rate(std::string_view text, const ValueLocation& where);
/// "2us" -> 2e-6 s; "1.5ms" -> 1.5e-3 s; "5ns" -> 5e-9 s.
[[nodiscard]] Seconds parse_seconds(std::string_view text, const ValueLocation& where);
/// "165.2TFLOPS" -> 165.2e12 FLOP/s; "1.3PFLOPS" -> 1.3e15 FLOP/s.
[[nodiscard]] FlopRate parse_flop_rate(std::string_view text, const ValueLocation& where);
/// "2.7GHz" -> 2.7e9 Hz; "3400MHz" -> 3.4e9 Hz.
[[nodiscard]] Frequency parse_frequency(std::string_view text, const ValueLocation& where);
/// A DeepSpeed element count: "500000000", "5e8" or "5.0e8"; must be a non-negative integer below 2^63.
/// "auto" is not accepted here (the caller resolves it, reference/calibration.md §4.3).
[[nodiscard]] Elements parse_elements(std::string_view text, const ValueLocation& where);

/// Levenshtein distance, for "did you mean" hints.
[[nodiscard]] std::size_t edit_distance(std::string_view a, std::string_view b);
/// "did you mean 'x'?": the candidates `word` (3+ characters) begins, when 1-3 do ("a100" -> 'a100-40gb' or
/// 'a100-80gb'); else the candidate nearest to `word` when it is close enough (distance <= max(2, |word|/3)); else "".
[[nodiscard]] std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

} // namespace zerosim::scenario
