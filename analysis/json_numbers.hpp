// How zerosim writes JSON numbers: a whole value (a count, a byte total) as a JSON integer.
#pragma once

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>

namespace zerosim::analysis {

/// `v` as an integer when it holds a whole value of magnitude at most 2^53 (4755.0 -> 4755); nullopt otherwise (0.25,
/// NaN, infinities, and whole values beyond 2^53, which a double no longer holds exactly). The one rule by which
/// zerosim writes (write_whole_numbers_as_integers) and compares (run_diff) JSON numbers.
inline std::optional<std::int64_t> whole_value(double v) {
  if (std::isfinite(v) && std::trunc(v) == v && std::fabs(v) <= 9007199254740992.0) // 2^53
    return static_cast<std::int64_t>(v);
  return std::nullopt;
}

/// `v` as the JSON value zerosim writes for it: an integer when whole_value holds one, else the float. The
/// per-value form of write_whole_numbers_as_integers, for writers that build a value once and write it at once (the
/// trace's events: chrome_trace.cpp), where a recursive pass over every value would cost a second walk.
inline nlohmann::json json_number(double v) {
  if (const auto w = whole_value(v))
    return *w;
  return v;
}

/// Replaces, recursively in `j`, every floating-point number that holds a whole value of magnitude at most 2^53 by
/// the same value as a JSON integer (4755.0 -> 4755, 85899345920.0 -> 85899345920); other values stay as they are
/// (0.25 stays a float; NaN and infinities are left to the writer). Counts and byte totals are kept as double inside
/// (exact up to 2^53), so this one rule (whole_value) at the writers of result.json, summary.json and sweep.json (and
/// json_number at trace.json's) gives strictly typed readers (a Go int64, a strict pydantic int) integers. A field
/// the output table types "number" may still be written either way, as JSON allows.
inline void write_whole_numbers_as_integers(nlohmann::json& j) {
  if (j.is_number_float()) {
    if (const auto w = whole_value(j.get<double>()))
      j = *w;
  } else if (j.is_structured()) {
    for (auto& e : j)
      write_whole_numbers_as_integers(e);
  }
}

} // namespace zerosim::analysis
