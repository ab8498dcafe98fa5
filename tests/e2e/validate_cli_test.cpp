// End-to-end tests of `zerosim validate`: the shipped scenarios/validation/ directory must pass (known gaps allowed),
// and the exit status separates pass (0), failed claim (1) and bad input (2).
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <fstream>
#include <string>
#include <vector>

using Catch::Contains;
using zerosim::test::TempDir;

namespace {

// A small run: GPT-2 124M on one RTX 4090, bf16, stage 2, one step. The claims below are chosen so that the outcome
// does not depend on simulated numbers: world_size is 1 by construction (one-rtx4090 preset: 1 node x 1 GPU).
const char* kScenario =
    "name: tiny\nmodel: gpt2\n"
    "training: {micro_batch: 1, seq_len: 128, grad_accum: 1, precision: bf16, optimizer: adamw}\n"
    "zero: {stage: 2}\ncluster: {topology: one-rtx4090}\nsimulation: {steps: 1}\n";

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  const auto p = dir.path() / name;
  std::ofstream(p) << text;
  return p.string();
}

} // namespace

TEST_CASE("zerosim validate: the shipped validation scenarios pass or are documented known gaps", "[validation][e2e]") {
  const TempDir tmp("zerosim-validate-e2e");
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  const auto o = zerosim::test::run_zerosim(tmp.path(), {"validate"}, opt);
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Contains("claim"));
  CHECK_THAT(o.out, Contains("delta %"));
  CHECK_THAT(o.out, Contains("rajbhandari2020-fig1-memory: stage 1 model states"));
  CHECK_THAT(o.out, Contains(" 0 fail;"));
}

TEST_CASE("zerosim validate: exit 1 on a failed claim, 0 when the miss is a known gap", "[validation][e2e]") {
  const TempDir tmp("zerosim-validate-e2e");
  const std::string claim =
      "expect:\n  - claim: one GPU\n    metric: summary.world_size\n    value: 2\n"
      "    tolerance: 0\n    source: hand (one-rtx4090 has 1 GPU, so this claim is false)\n";
  const std::string bad = write(tmp, "fail.yaml", std::string(kScenario) + claim);
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  auto o = zerosim::test::run_zerosim(tmp.path(), {"validate", bad}, opt);
  INFO(o.out << o.err);
  CHECK(o.status == 1);
  CHECK_THAT(o.out, Contains("FAIL"));
  CHECK_THAT(o.out, Contains("-50.0")); // delta = (1 - 2) / 2 = -50 %
  const std::string gap = write(tmp, "gap.yaml", std::string(kScenario) + claim + "    known_gap: deliberate\n");
  o = zerosim::test::run_zerosim(tmp.path(), {"validate", gap}, opt);
  CHECK(o.status == 0);
  CHECK_THAT(o.out, Contains("gap"));
  CHECK_THAT(o.out, Contains("1 known gap, 0 fail"));
  // --quiet: the failing claims and the summary line only.
  o = zerosim::test::run_zerosim(tmp.path(), {"validate", "--quiet", gap}, opt);
  CHECK(o.status == 0);
  CHECK(o.out ==
        "1 claims: 0 pass, 1 known gap, 0 fail; |delta| over all claims (gaps included) mean 50.0%, max "
        "50.0% (GB = 1e9 B, GiB = 2^30 B)\n");
  o = zerosim::test::run_zerosim(tmp.path(), {"validate", "--quiet", bad}, opt);
  CHECK(o.status == 1);
  CHECK_THAT(o.out, Contains("FAIL") && Contains("1 claims: 0 pass, 0 known gap, 1 fail"));
}

TEST_CASE("zerosim validate --markdown: summary line, then one table row per claim with '|' escaped in cells",
          "[validation][e2e]") {
  const TempDir tmp("zerosim-validate-e2e");
  // world_size of one-rtx4090 is 1 by construction: the claim (named after its file, ok.yaml) passes with delta
  // +0.0; its source has a '|'.
  const std::string claim =
      "expect:\n  - claim: one GPU\n    metric: summary.world_size\n    value: 1\n"
      "    tolerance: 0\n    source: hand a|b\n";
  const std::string f = write(tmp, "ok.yaml", std::string(kScenario) + claim);
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  const auto o = zerosim::test::run_zerosim(tmp.path(), {"validate", "--markdown", f}, opt);
  INFO(o.out << o.err);
  CHECK(o.status == 0);
  CHECK(o.out ==
        "1 claims: 1 pass, 0 known gap, 0 fail; |delta| over all claims (gaps included) mean 0.0%, max 0.0% (GB = "
        "1e9 B, GiB = 2^30 B)\n\n"
        "| claim | reference | simulated | delta % | tolerance | status | source |\n"
        "|---|---|---|---|---|---|---|\n"
        "| ok: one GPU | 1.0000 | 1.0000 | +0.0 | 0% | pass | hand a\\|b |\n");
}

TEST_CASE("zerosim validate: exit 2 with file:line:key on a bad expect block, before any simulation",
          "[validation][e2e]") {
  const TempDir tmp("zerosim-validate-e2e");
  const std::string bad = write(tmp, "bad.yaml",
                                std::string(kScenario) +
                                    "expect:\n  - metric: summary.world_size\n    value: 1\n"
                                    "    tolerance: 0\n");
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  const auto o = zerosim::test::run_zerosim(tmp.path(), {"validate", bad}, opt);
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Contains("bad.yaml:8: expect[0].source: missing"));
  CHECK(o.out.empty());
  // A multi-variant scenario needs the variant named.
  const std::string multi = write(tmp, "multi.yaml",
                                  std::string(kScenario) +
                                      "compare:\n  zero.stage: [1, 2]\nexpect:\n"
                                      "  - metric: summary.world_size\n    value: 1\n"
                                      "    tolerance: 0\n    source: hand\n");
  const auto m = zerosim::test::run_zerosim(tmp.path(), {"validate", multi}, opt);
  CHECK(m.status == 2);
  CHECK_THAT(m.err, Contains("expect[0].variant: the scenario has several variants"));
}
