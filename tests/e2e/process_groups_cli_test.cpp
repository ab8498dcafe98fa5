// End-to-end check of training.process_groups: the key reaches the program generator and the engine. A multi-node
// ZeRO-3 step of DeepSpeed 0.9.5, whose backward prefetches the next module's parameters while it reduce-scatters
// the last one's gradients: without an mpu the two run on two communicators and overlap; with the mpu's group they
// share one and run in issue order (NCCL src/enqueue.cc, ProcessGroupNCCL's per-group stream). Here the step is
// longer. That is not a law: with max-min link sharing, serialising can reorder other work, so a shared communicator
// need not lengthen every step. tests/engine/communicator_order_test.cpp pins the mechanism with hand values.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/support/cli_runner.hpp"
#include "tests/support/temp_dir.hpp"

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using nlohmann::json;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;
using zerosim::test::write_file;

namespace {

constexpr const char* kScenario = R"(name: process-groups
model: {family: gpt2, hidden: 4096, layers: 8, heads: 32, vocab: 50304, max_positions: 1024}
training: {micro_batch: 1, seq_len: 128, precision: fp16}
zero: {stage: 3, deepspeed_version: "0.9.5"}
cluster: {topology: dgx-a100, nodes: 2, nics_per_node: 1}
simulation: {steps: 2}
)";

/// Runs the scenario with training.process_groups = `groups`; returns result.json.
json run_with(const TempDir& tmp, const std::string& groups) {
  const fs::path sc = write_file(tmp.path(), "pg.yaml", kScenario);
  const fs::path out = tmp.path() / ("out-" + groups);
  const auto o = zerosim::test::run_zerosim(tmp.path(), {"run", sc.string(), "--quiet", "--out", out.string(), "--set",
                                                         "training.process_groups=" + groups});
  INFO(o.err);
  REQUIRE(o.status == 0);
  return json::parse(slurp(out / "result.json"));
}

} // namespace

TEST_CASE("zerosim run: training.process_groups mpu serialises ZeRO-3's gathers and reduce-scatters", "[e2e]") {
  TempDir tmp;
  const json own = run_with(tmp, "deepspeed");
  const json mpu = run_with(tmp, "mpu");
  CHECK(own["scenario"]["training"]["process_groups"] == "deepspeed");
  CHECK(mpu["scenario"]["training"]["process_groups"] == "mpu");
  const double t_own = own["summary"]["step_time_s"].get<double>();
  const double t_mpu = mpu["summary"]["step_time_s"].get<double>();
  INFO("deepspeed " << t_own << " s, mpu " << t_mpu << " s");
  CHECK(t_mpu > t_own);
}

TEST_CASE("zerosim run: training.process_groups rejects an unknown value naming the key", "[e2e]") {
  TempDir tmp;
  const fs::path sc = write_file(tmp.path(), "pg.yaml", kScenario);
  const auto o = run_zerosim(tmp.path(), {"run", sc.string(), "--quiet", "--out", (tmp.path() / "o").string(), "--set",
                                          "training.process_groups=world"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("training.process_groups"));
}
