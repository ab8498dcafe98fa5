// Unit tests of the output field table (analysis/output_fields.hpp): its path matching and docs/outputs.md's copy.
#include "analysis/output_fields.hpp"

#include "analysis/json_numbers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <string>

using zerosim::analysis::output_field_matches;
using zerosim::analysis::output_fields;
using zerosim::analysis::output_fields_markdown;

TEST_CASE("output_field_matches: literal keys, array elements, map placeholders and subtrees", "[analysis][unit]") {
  CHECK(output_field_matches("summary.mfu", {"summary", "mfu"}));
  CHECK_FALSE(output_field_matches("summary.mfu", {"summary", "hfu"}));
  CHECK_FALSE(output_field_matches("summary.mfu", {"summary", "mfu", "x"}));
  CHECK(output_field_matches("steps[].duration_s", {"steps[]", "duration_s"}));
  CHECK_FALSE(output_field_matches("steps[].duration_s", {"steps", "duration_s"}));
  CHECK(output_field_matches("summary.peak_by_tag_bytes.<tag>", {"summary", "peak_by_tag_bytes", "activations"}));
  // "<phase>_s" stands for a key ending in _s, nothing else; "<key>" takes a dotted scenario key as one key.
  CHECK(output_field_matches("steps[].compute_busy_by_phase.<phase>_s",
                             {"steps[]", "compute_busy_by_phase", "forward_s"}));
  CHECK_FALSE(
      output_field_matches("steps[].compute_busy_by_phase.<phase>_s", {"steps[]", "compute_busy_by_phase", "forward"}));
  CHECK(output_field_matches("rows[].resolved.<key>", {"rows[]", "resolved", "zero.overlap_comm"}));
  CHECK(output_field_matches("scenario.*", {"scenario", "zero", "stage"}));
  CHECK_FALSE(output_field_matches("scenario.*", {"scenario"}));
}

TEST_CASE("output_fields: one entry per file and path, each with a type and a meaning", "[analysis][unit]") {
  std::set<std::string> seen;
  for (const auto& f : output_fields()) {
    INFO(f.file << ": " << f.path);
    CHECK(seen.insert(f.file + ":" + f.path).second);
    CHECK(!f.type.empty());
    CHECK(!f.meaning.empty());
    // A field named in bytes or seconds says so in its unit column (a rate "_per_s" has its own).
    const auto ends = [&f](const std::string& tail) {
      return f.path.size() > tail.size() && f.path.compare(f.path.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends("_bytes"))
      CHECK(f.unit == "B");
    if (ends("_s") && !ends("_per_s"))
      CHECK(f.unit == "s");
  }
}

TEST_CASE("output_fields: docs/outputs.md holds the current generated tables", "[analysis][unit]") {
  // Regenerate with scripts/update-docs.sh.
  std::ifstream in(std::string(ZEROSIM_DATA_DIR) + "/docs/outputs.md");
  REQUIRE(in.good());
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO("docs/outputs.md is stale: run scripts/update-docs.sh");
  CHECK(doc.find(output_fields_markdown()) != std::string::npos);
}

TEST_CASE("write_whole_numbers_as_integers: whole floats become JSON integers, others stay", "[analysis][unit]") {
  nlohmann::json j = {{"calls", 4755.0},
                      {"capacity_bytes", 85899345920.0}, // 80 GiB
                      {"step_time_s", 0.25},
                      {"neg", -3.0},
                      {"big", 18014398509481984.0}, // 2^54: beyond exact doubles, left a float
                      {"count", 7},
                      {"rows", {{{"bytes", 512.0}}, {{"bytes", 1.5}}}},
                      {"name", "x"}};
  zerosim::analysis::write_whole_numbers_as_integers(j);
  CHECK(j.dump() ==
        "{\"big\":1.8014398509481984e+16,\"calls\":4755,\"capacity_bytes\":85899345920,\"count\":7,"
        "\"name\":\"x\",\"neg\":-3,\"rows\":[{\"bytes\":512},{\"bytes\":1.5}],\"step_time_s\":0.25}");
  CHECK(j.at("calls").is_number_integer());
  CHECK(j.at("step_time_s").is_number_float());
}

TEST_CASE("whole_value and json_number: the whole-number rule, value by value", "[analysis][unit]") {
  using zerosim::analysis::json_number;
  using zerosim::analysis::whole_value;
  // 2^53 = 9007199254740992 is the largest magnitude kept; 2^53 + 2 (the next double) is not.
  CHECK(whole_value(9007199254740992.0) == std::optional<std::int64_t>(9007199254740992));
  CHECK(whole_value(-9007199254740992.0) == std::optional<std::int64_t>(-9007199254740992));
  CHECK_FALSE(whole_value(9007199254740994.0).has_value());
  CHECK_FALSE(whole_value(0.25).has_value());
  CHECK_FALSE(whole_value(std::numeric_limits<double>::infinity()).has_value());
  CHECK_FALSE(whole_value(std::numeric_limits<double>::quiet_NaN()).has_value());
  CHECK(whole_value(-0.0) == std::optional<std::int64_t>(0));
  // A trace timestamp of 1.5 ms in microseconds is 1500: written as an integer; 0.5 us stays a float.
  CHECK(json_number(1.5e-3 * 1e6).dump() == "1500");
  CHECK(json_number(1.5e-3 * 1e6).is_number_integer());
  CHECK(json_number(0.5).dump() == "0.5");
}
