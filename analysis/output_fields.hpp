// The field reference of zerosim's machine-readable outputs (result.json, summary.json, sweep.json, memory.csv): one
// table in code, from which `zerosim list --outputs` prints docs/outputs.md's generated part
// (./scripts/update-docs.sh) and against which tests/e2e/output_fields_test.cpp checks the files a real run writes,
// so that the docs cannot drift from what is emitted.
#pragma once

#include <string>
#include <vector>

namespace zerosim::analysis {

/// One field of an output file.
struct OutputField {
  std::string file; ///< "result.json", "summary.json", "sweep.json", "memory.csv" or "plan.json" (plan --json)
  /// JSON: the path of a leaf, keys joined by '.', "[]" after an array's key for its elements ("steps[].duration_s");
  /// a segment "<tag>", "<kind>", "<phase>_s" or "<key>" stands for each key of a map whose keys are listed in the
  /// docs (memory tags, collective kinds, phases, scenario keys); a path ending in ".*" covers a whole documented
  /// subtree (result.json's scenario echo). CSV: the column name.
  std::string path;
  std::string type; ///< "number", "integer", "bool", "string", "string[]", "number[]", "object", "... | null"
  std::string unit; ///< "s" (simulated seconds), "B", "GiB" (2^30 B), "B/s", "fraction 0-1", "count", ... or ""
  /// true: scripts may rely on the name, type, unit and meaning staying (an addition never renames or removes it);
  /// false: text for people (notes, labels, descriptions) whose wording changes, or detail that may be reshaped.
  bool stable = true;
  std::string meaning;
};

/// Every field of every output file, in the order the docs list them.
[[nodiscard]] const std::vector<OutputField>& output_fields();

/// True when the emitted path `segments` (one JSON key per element, "[]" appended to an array's key, as
/// output_fields' paths spell them) is covered by `pattern` (an OutputField::path of a JSON file).
[[nodiscard]] bool output_field_matches(const std::string& pattern, const std::vector<std::string>& segments);

/// docs/outputs.md's generated part: a Markdown table per file (field, type, unit, stable, meaning) and the values
/// of the map keys the paths abbreviate (memory tags, collective kinds, phases).
[[nodiscard]] std::string output_fields_markdown();
/// The same table as JSON (zerosim list --outputs --json), for scripts that check an output file's fields: an object
/// with zerosim_version, fields (an array of {file, name, type, unit, stable, meaning}, name being OutputField::path)
/// and placeholders (each of <tag>, <kind>, <phase>: the list of names it stands for; <key>: a sentence).
[[nodiscard]] std::string output_fields_json();

} // namespace zerosim::analysis
