// Every scenario and preset key, declared once (STYLE.md §6): its dotted path, type, unit, default, check and doc.
// The loader parses and assigns values through this table, the validator reads its checks, and the docs and
// `zerosim list` print it. Keys of the preset files use the same entries: a model preset is walked under "model.",
// a GPU preset under "gpu.", a cluster preset under "cluster.".
#pragma once

#include "sim/scenario/scenario.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zerosim::scenario {

enum class KeyType {
  STRING, ///< any scalar text
  NAME, ///< [a-z0-9-_]+
  INT, ///< whole number
  BOOL, ///< true/false
  REAL, ///< plain number (fractions, efficiencies)
  ELEMENTS, ///< DeepSpeed element count (5e8, 500000000, "auto" where allowed)
  BYTES, ///< size with a unit ("24GiB")
  BYTE_RATE, ///< bandwidth with a unit ("450GBps", "400Gbps")
  SECONDS, ///< duration with a unit ("2us")
  FLOP_RATE, ///< compute rate with a unit ("165.2TFLOPS")
  FREQUENCY, ///< clock rate with a unit ("2.7GHz")
  ENUM, ///< one of `choices`
  OFFLOAD, ///< none|cpu|nvme, or DeepSpeed's map {device: cpu, ...}
  SPECIAL, ///< resolved by the loader itself (presets, imports, compare)
};

enum class KeyCheck {
  NONE,
  POSITIVE, ///< > 0
  NON_NEGATIVE, ///< >= 0
  FRACTION, ///< in (0, 1]
  STAGE, ///< 0..3
};

/// A parsed value, handed to the key's setter. Quantities are SI doubles in `real`.
struct KeyValue {
  std::string text; ///< the scalar as written
  std::int64_t integer = 0;
  double real = 0;
  bool boolean = false;
  bool is_auto = false; ///< ELEMENTS written as "auto" (the loader replaces it by the HF Trainer rule first)
};

struct KeySpec {
  std::string_view path; ///< dotted path, e.g. "zero.reduce_bucket_size"
  KeyType type;
  std::string_view choices; ///< ENUM: "flow|analytic"
  std::string_view unit; ///< for docs: "B", "B/s", "s", "FLOP/s", "elements", ""
  std::string_view default_text; ///< for docs: the default as a person would write it
  KeyCheck check;
  bool required; ///< must be present in a preset file of its kind
  std::string_view doc; ///< one line
  void (*set)(Scenario&, const KeyValue&); ///< nullptr for SPECIAL
};

/// The whole table, in documentation order.
[[nodiscard]] const std::vector<KeySpec>& key_table();
/// The entry for `path`, or nullptr.
[[nodiscard]] const KeySpec* find_key(std::string_view path);
/// True when some entry lies below `path` (i.e. `path` is a section such as "cluster.intra_node").
[[nodiscard]] bool is_section(std::string_view path);
/// The table as a Markdown reference (one row per key: key, type, unit, default, description), for docs/.
[[nodiscard]] std::string key_reference_markdown();
/// The immediate child names of section `prefix` ("" for the top level), in table order, for "did you mean".
[[nodiscard]] std::vector<std::string> child_keys(std::string_view prefix);

} // namespace zerosim::scenario
