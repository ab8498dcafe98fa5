// Unit parsing: every row of every table (sim/scenario/units.cpp), and every kind of error.
// Expected values are written out by hand from the SI / IEC definitions (k = 1e3, Ki = 2^10; 1 byte = 8 bits).
#include "sim/scenario/units.hpp"

#include "sim/error.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using namespace zerosim;
using namespace zerosim::scenario;
using Catch::Contains;

namespace {
constexpr double kTol = 1e-12; ///< relative; parsing is a single multiplication
const ValueLocation kWhere{"test.yaml", 7, "cluster.gpu.memory"};

struct Case {
  const char* text;
  double expected;
};
} // namespace

TEST_CASE("parse_bytes: every unit of the size table", "[scenario][unit]") {
  const std::vector<Case> cases = {
      {"4096B", 4096.0},
      {"2kB", 2e3},
      {"512MB", 512e6},
      {"80GB", 80e9},
      {"1.5TB", 1.5e12},
      {"2PB", 2e15},
      {"4KiB", 4 * 1024.0},
      {"512MiB", 512 * 1048576.0},
      {"24GiB", 24 * 1073741824.0},
      {"2TiB", 2 * 1099511627776.0},
      {"24 GiB", 24 * 1073741824.0}, // a space between number and unit is allowed
      {"143771MiB", 143771 * 1048576.0},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(parse_bytes(c.text, kWhere).value() == Approx(c.expected).epsilon(kTol));
  }
  // Every table row appears above (keep the two in step).
  CHECK(byte_units().size() == 10);
}

TEST_CASE("parse_byte_rate: every unit of the bandwidth table, bits divided by 8", "[scenario][unit]") {
  const std::vector<Case> cases = {
      {"100Bps", 100.0},
      {"3kBps", 3e3},
      {"250MBps", 250e6},
      {"450GBps", 450e9},
      {"31.5GBps", 31.5e9},
      {"1TBps", 1e12},
      {"2KiBps", 2048.0},
      {"3MiBps", 3 * 1048576.0},
      {"25GiBps", 25 * 1073741824.0},
      {"8B/s", 8.0},
      {"700MB/s", 700e6},
      {"63GB/s", 63e9},
      {"1GiB/s", 1073741824.0},
      {"800bps", 100.0}, // 800 bit/s = 100 B/s
      {"8kbps", 1e3}, // 8000 bit/s = 1000 B/s
      {"100Mbps", 12.5e6},
      {"400Gbps", 50e9}, // NDR InfiniBand: 400 Gb/s = 50 GB/s
      {"200Gbps", 25e9}, // HDR: 25 GB/s
      {"1.6Tbps", 200e9},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(parse_byte_rate(c.text, kWhere).value() == Approx(c.expected).epsilon(kTol));
  }
  CHECK(byte_rate_units().size() == 17);
}

TEST_CASE("parse_seconds: every unit of the duration table", "[scenario][unit]") {
  const std::vector<Case> cases = {
      {"1s", 1.0}, {"1.5ms", 1.5e-3}, {"2us", 2e-6}, {"0.6us", 0.6e-6}, {"5ns", 5e-9},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(parse_seconds(c.text, kWhere).value() == Approx(c.expected).epsilon(kTol));
  }
  CHECK(second_units().size() == 4);
}

TEST_CASE("parse_flop_rate: every unit of the compute-rate table", "[scenario][unit]") {
  const std::vector<Case> cases = {
      {"7FLOPS", 7.0},           {"3kFLOPS", 3e3},      {"2MFLOPS", 2e6},        {"900GFLOPS", 900e9},
      {"165.2TFLOPS", 165.2e12}, {"989TFLOPS", 989e12}, {"19.5TFLOPS", 19.5e12}, {"1.3PFLOPS", 1.3e15},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(parse_flop_rate(c.text, kWhere).value() == Approx(c.expected).epsilon(kTol));
  }
  CHECK(flop_rate_units().size() == 6);
}

TEST_CASE("parse_frequency: every unit of the clock-rate table", "[scenario][unit]") {
  const std::vector<Case> cases = {
      {"50Hz", 50.0}, {"100kHz", 100e3}, {"3400MHz", 3.4e9}, {"2.7GHz", 2.7e9}, {"2.25 GHz", 2.25e9},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    CHECK(parse_frequency(c.text, kWhere).value() == Approx(c.expected).epsilon(kTol));
  }
  CHECK(frequency_units().size() == 4);
  REQUIRE_THROWS_WITH(parse_frequency("2.7", kWhere), Contains("a frequency needs a unit, e.g. '2.7GHz'"));
  // A unit of another dimension says what it measures.
  REQUIRE_THROWS_WITH(parse_frequency("2.7GB", kWhere),
                      Contains("'GB' is a size in bytes; this key takes a frequency"));
  REQUIRE_THROWS_WITH(parse_flop_rate("2GHz", kWhere), Contains("'GHz' is a frequency; this key takes a compute rate"));
}

TEST_CASE("parse_elements: DeepSpeed element counts in plain and exponent form", "[scenario][unit]") {
  CHECK(parse_elements("500000000", kWhere) == 500'000'000);
  CHECK(parse_elements("5e8", kWhere) == 500'000'000);
  CHECK(parse_elements("5.0e8", kWhere) == 500'000'000);
  CHECK(parse_elements("1e9", kWhere) == 1'000'000'000);
  CHECK(parse_elements("0", kWhere) == 0);
  CHECK(parse_elements("16777216", kWhere) == 16'777'216);
  // Beyond an int64 (2^63 - 1 ~ 9.22e18) the count is out of range, not "not a whole number".
  REQUIRE_THROWS_WITH(parse_elements("1e30", kWhere), Contains("'1e30' is out of range (at most 9.2e18 elements)"));
  REQUIRE_THROWS_WITH(parse_elements("-5", kWhere), Contains("expected a non-negative whole number of elements"));
  REQUIRE_THROWS_WITH(parse_elements("2.5", kWhere), Contains("expected a non-negative whole number of elements"));
}

TEST_CASE("units: a bare number where a unit is due is an error with a hint", "[scenario][unit]") {
  REQUIRE_THROWS_AS(parse_bytes("24", kWhere), ScenarioError);
  REQUIRE_THROWS_WITH(parse_bytes("24", kWhere), Contains("a size needs a unit, e.g. '24GiB'"));
  REQUIRE_THROWS_WITH(parse_byte_rate("450", kWhere), Contains("a bandwidth needs a unit"));
  REQUIRE_THROWS_WITH(parse_seconds("2", kWhere), Contains("a duration needs a unit, e.g. '2us'"));
  REQUIRE_THROWS_WITH(parse_flop_rate("165", kWhere), Contains("a compute rate needs a unit"));
}

TEST_CASE("units: a bare 0 needs no unit in any dimension, other bare numbers still do", "[scenario][unit]") {
  CHECK(parse_bytes("0", kWhere).value() == 0.0);
  CHECK(parse_byte_rate("0", kWhere).value() == 0.0);
  CHECK(parse_seconds("0", kWhere).value() == 0.0);
  CHECK(parse_seconds(" 0.0 ", kWhere).value() == 0.0);
  CHECK(parse_flop_rate("0", kWhere).value() == 0.0);
  REQUIRE_THROWS_WITH(parse_seconds("0.5", kWhere), Contains("a duration needs a unit"));
  REQUIRE_THROWS_WITH(parse_bytes("1", kWhere), Contains("a size needs a unit"));
}

TEST_CASE("units: errors carry file, line and key", "[scenario][unit]") {
  REQUIRE_THROWS_WITH(parse_bytes("24", kWhere), Contains("test.yaml:7: cluster.gpu.memory:"));
  try {
    (void)parse_bytes("abc", kWhere);
    FAIL("no throw");
  } catch (const ScenarioError& e) {
    CHECK(e.file() == "test.yaml");
    CHECK(e.line() == 7);
    CHECK(e.key() == "cluster.gpu.memory");
  }
}

TEST_CASE("units: unknown units, non-numbers and bad counts are rejected", "[scenario][unit]") {
  SECTION("unknown unit, with the nearest valid one") {
    REQUIRE_THROWS_WITH(parse_bytes("24GIB", kWhere), Contains("unknown unit 'GIB'"));
    REQUIRE_THROWS_WITH(parse_bytes("24GIB", kWhere), Contains("did you mean 'GiB'?"));
    REQUIRE_THROWS_WITH(parse_byte_rate("10GBs", kWhere), Contains("unknown unit 'GBs'"));
    REQUIRE_THROWS_WITH(parse_seconds("2sec", kWhere), Contains("unknown unit"));
    REQUIRE_THROWS_WITH(parse_flop_rate("1TFLOP", kWhere), Contains("did you mean 'TFLOPS'?"));
  }
  SECTION("a size where a rate is due") {
    REQUIRE_THROWS_WITH(parse_byte_rate("24GiB", kWhere), Contains("unknown unit 'GiB'"));
  }
  SECTION("a unit of another kind is named as such, not matched to the nearest spelling") {
    // "2us" for a size was answered "did you mean 'B'?" (a student's typo for the wrong key).
    REQUIRE_THROWS_WITH(parse_bytes("2us", kWhere),
                        Contains("'us' is a time; this key takes a size") && !Contains("did you mean"));
    REQUIRE_THROWS_WITH(parse_seconds("2GB", kWhere), Contains("'GB' is a size in bytes; this key takes a duration"));
  }
  SECTION("not a number") {
    REQUIRE_THROWS_WITH(parse_bytes("GiB", kWhere), Contains("expected a size like '24GiB', got 'GiB'"));
    REQUIRE_THROWS_WITH(parse_seconds("", kWhere), Contains("expected a duration"));
    REQUIRE_THROWS_WITH(parse_bytes("nanGiB", kWhere), Contains("finite"));
  }
  SECTION("element counts must be whole, non-negative, unit-less") {
    REQUIRE_THROWS_WITH(parse_elements("1.5", kWhere), Contains("non-negative whole number"));
    REQUIRE_THROWS_WITH(parse_elements("-5", kWhere), Contains("non-negative whole number"));
    REQUIRE_THROWS_WITH(parse_elements("500MB", kWhere), Contains("counts elements, not bytes"));
    REQUIRE_THROWS_WITH(parse_elements("auto", kWhere), Contains("expected an element count"));
  }
}

TEST_CASE("did_you_mean: suggests the nearest candidate only when it is close", "[scenario][unit]") {
  const std::vector<std::string> keys = {"micro_batch", "seq_len", "grad_accum"};
  CHECK(did_you_mean("micro_btach", keys) == "did you mean 'micro_batch'?");
  CHECK(did_you_mean("seqlen", keys) == "did you mean 'seq_len'?");
  CHECK(did_you_mean("completely_different", keys).empty());
  CHECK(edit_distance("kitten", "sitting") == 3); // the textbook example (Levenshtein 1966)
}

TEST_CASE("did_you_mean: a word that begins one to three candidates names them", "[scenario][unit]") {
  // "a100" is 2 edits from "h200" but begins both A100 presets: those are meant.
  const std::vector<std::string> gpus{"a100-40gb", "a100-80gb", "h100-sxm", "h200", "rtx4090"};
  CHECK(did_you_mean("a100", gpus) == "did you mean 'a100-40gb' or 'a100-80gb'?");
  CHECK(did_you_mean("rtx", gpus) == "did you mean 'rtx4090'?");
  CHECK(did_you_mean("h2", gpus) == "did you mean 'h200'?"); // 2 characters: the nearest, as before
}

TEST_CASE("did_you_mean: a word that ends candidates after a separator names them (a sub-key without its section)",
          "[scenario][unit]") {
  // New-user 14: `zero.pin_memory` is DeepSpeed's offload_optimizer.pin_memory / offload_param.pin_memory.
  const std::vector<std::string> zero{"stage",         "offload_optimizer",        "offload_optimizer_pin_memory",
                                      "offload_param", "offload_param_pin_memory", "overlap_comm"};
  CHECK(did_you_mean("pin_memory", zero) ==
        "did you mean 'offload_optimizer_pin_memory' or 'offload_param_pin_memory'?");
  CHECK(did_you_mean("comm", zero) == "did you mean 'overlap_comm'?");
  CHECK(did_you_mean("memory", zero) == "did you mean 'offload_optimizer_pin_memory' or 'offload_param_pin_memory'?");
  // New-user 29: `--set cluster.gpu=a6000` for the preset rtx-a6000 (a '-' separates the vendor prefix).
  const std::vector<std::string> gpus{"a100-40gb", "l40s", "rtx-a6000", "rtx3090", "rtx4090"};
  CHECK(did_you_mean("a6000", gpus) == "did you mean 'rtx-a6000'?");
  CHECK(did_you_mean("A6000", gpus) == "did you mean 'rtx-a6000'?");
}

TEST_CASE("did_you_mean: a one- or two-character word names the short candidates it begins", "[scenario][unit]") {
  // New-user 14-B: "512G" suggested 'B' (one edit) where 'GB' or 'GiB' is meant.
  const std::vector<std::string> units{"B", "kB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB"};
  CHECK(did_you_mean("G", units) == "did you mean 'GB' or 'GiB'?");
  CHECK(did_you_mean("Mi", units) == "did you mean 'MiB'?");
  CHECK(did_you_mean("X", units) == "did you mean 'B'?"); // begins none: the nearest, as before
}
