// Input handling found by a new-user test: --set against compare, DeepSpeed ds_config.json field checks, offload
// combinations rejected at load time, duplicate YAML keys, and the wording and location of messages. Each bad input
// must be one ScenarioError naming file, line and key. Fixtures are written by the tests into a temporary directory,
// so the line numbers asserted below can be read off the strings here.
#include "sim/scenario/key_table.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include "sim/error.hpp"
#include "sim/workload/workload.hpp"
#include "sim/zero/zero_program.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

using namespace zerosim;
using namespace zerosim::scenario;
using Catch::Contains;
namespace fs = std::filesystem;

namespace {

/// A fresh directory for this test case's fixture files, removed at the end.
class FixtureDir {
 public:
  FixtureDir() {
    path_ = fs::temp_directory_path() / ("zerosim-inputs-" + std::to_string(::getpid()) + "-" +
                                         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path_);
  }
  ~FixtureDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  FixtureDir(const FixtureDir&) = delete;
  FixtureDir& operator=(const FixtureDir&) = delete;

  /// Writes `text` to `name` (sub-directories created) and returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }
  [[nodiscard]] const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

/// GPT-2 small with a short sequence, importing `ds` (a ds_config.json next to it) when not empty; `training`
/// lines go under `training:`, `extra` at the end (after the zero block when there is one).
std::string gpt2_scenario(const std::string& ds = "", const std::string& extra = "", const std::string& training = "") {
  std::string s =
      "name: inputs\n" // line 1
      "model: gpt2\n" // line 2
      "training:\n" // line 3
      "  seq_len: 128\n" // line 4
      + training;
  if (!ds.empty())
    s += "zero:\n  deepspeed_config: " + ds + "\n"; // lines 5-6 without `training` lines
  return s + extra;
}

Scenario load_one(const std::string& path, const std::vector<std::string>& overrides = {}) {
  auto v = load_scenario(path, overrides);
  REQUIRE(v.size() == 1);
  return v.front().scenario;
}

} // namespace

TEST_CASE("load_scenario: a --set of the compared key replaces the comparison", "[scenario][validation]") {
  FixtureDir dir;
  const std::string sc = dir.write("cmp.yaml", gpt2_scenario("", "compare:\n  zero.stage: [0, 1, 2, 3]\n"));
  SECTION("a valid value runs alone") {
    const auto v = load_scenario(sc, {"zero.stage=1"});
    REQUIRE(v.size() == 1);
    CHECK(v.front().label.empty());
    CHECK(v.front().scenario.zero.stage == 1);
    CHECK(v.front().scenario.compare_key.empty());
    CHECK(v.front().note ==
          "--set zero.stage=1 replaces the comparison compare.zero.stage (4 values): one run with "
          "that setting");
  }
  SECTION("out-of-range and malformed values are checked like any --set") {
    for (const char* bad : {"5", "-1"})
      REQUIRE_THROWS_WITH(load_scenario(sc, {std::string("zero.stage=") + bad}),
                          Contains("<cli>: zero.stage: ZeRO stage must be 0, 1, 2 or 3"));
    for (const char* bad : {"abc", "2.5"})
      REQUIRE_THROWS_WITH(load_scenario(sc, {std::string("zero.stage=") + bad}),
                          Contains("<cli>: zero.stage: expected a whole number"));
  }
  SECTION("a bad compare given with --set is reported at <cli>") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare={}"}), Contains("<cli>: compare: expected one dotted key"));
  }
  SECTION("another --set leaves the comparison in place") {
    const auto v = load_scenario(sc, {"training.micro_batch=2"});
    CHECK(v.size() == 4);
    CHECK(v.front().note.empty());
  }
}

TEST_CASE("load_scenario: a bad compare value is reported at its line, naming the variant", "[scenario][validation]") {
  FixtureDir dir;
  // A repeated value would give two identical variants: rejected at its line.
  const std::string dup = dir.write("dupv.yaml", gpt2_scenario("", "compare:\n  zero.stage: [2, 3, 3]\n"));
  REQUIRE_THROWS_WITH(load_scenario(dup), Contains("dupv.yaml:6: compare.zero.stage: duplicate value '3'"));
  // line 5: "compare:", line 6: the list holding 9
  const std::string sc = dir.write("cmp.yaml", gpt2_scenario("", "compare:\n  zero.stage: [1, 9]\n"));
  REQUIRE_THROWS_WITH(load_scenario(sc), Contains("cmp.yaml:6: zero.stage: ZeRO stage must be 0, 1, 2 or 3, got '9'"));
  REQUIRE_THROWS_WITH(load_scenario(sc), Contains("(compare variant zero.stage=9)"));
  // An error every variant makes alike (here a key GPT-2 does not have) does not depend on the compared key: no
  // variant is named.
  const std::string all = dir.write("all.yaml", gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\n"));
  REQUIRE_THROWS_WITH(load_scenario(all, {"model.kv_heads=4"}),
                      Contains("<cli>: model.kv_heads: family gpt2") && !Contains("compare variant"));
  // Block list: the bad value has a line of its own (line 8).
  const std::string block = dir.write("block.yaml", gpt2_scenario("", "compare:\n  zero.stage:\n    - 1\n    - 7\n"));
  REQUIRE_THROWS_WITH(load_scenario(block), Contains("block.yaml:8: zero.stage:"));
}

TEST_CASE("load_scenario: a second YAML document is an error at its '---' line", "[scenario][validation]") {
  FixtureDir dir;
  SECTION("keys after a '---' line") {
    // Lines 1-4 the scenario, line 5 "---", line 6 the key yaml-cpp's Load would have dropped.
    const std::string sc = dir.write("two.yaml", gpt2_scenario("", "---\nzero: {stage: 3}\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("two.yaml:5: yaml: a second YAML document (after a '---' line)") &&
                                               Contains("remove the '---' line"));
  }
  SECTION("a leading '---' starts the first document, not a second") {
    const std::string sc = dir.write("lead.yaml", "---\n" + gpt2_scenario());
    CHECK(load_one(sc).training.seq_len == 128);
  }
  SECTION("an empty document after the last '---' drops nothing") {
    const std::string sc = dir.write("trail.yaml", gpt2_scenario() + "---\n# nothing here\n");
    CHECK(load_one(sc).training.seq_len == 128);
  }
}

TEST_CASE("load_scenario: duplicate YAML keys name the key and both lines", "[scenario][validation]") {
  FixtureDir dir;
  SECTION("two top-level blocks") {
    const std::string sc = dir.write("dup.yaml", gpt2_scenario("", "zero:\n  stage: 1\nzero:\n  stage: 2\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc),
                        Contains("dup.yaml:7: zero: duplicate key: first at line 5, again at line 7"));
  }
  SECTION("a nested key") {
    const std::string sc = dir.write("dup.yaml", gpt2_scenario("", "simulation:\n  steps: 2\n  steps: 3\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("dup.yaml:7: simulation.steps: duplicate key: first at line 6"));
  }
  SECTION("inside a --set value") {
    const std::string sc = dir.write("ok.yaml", gpt2_scenario());
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training={seq_len: 64, seq_len: 32}"}),
                        Contains("<cli>: training.seq_len: duplicate key"));
  }
}

TEST_CASE("load_scenario: file and required-key messages say what is wrong", "[scenario][validation]") {
  FixtureDir dir;
  SECTION("a directory is not an empty file") {
    REQUIRE_THROWS_WITH(load_scenario(dir.path().string()), Contains("is a directory"));
  }
  SECTION("a scenario without model names the file and the key") {
    const std::string sc = dir.write("nomodel.yaml", "name: x\ntraining:\n  seq_len: 128\n");
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("nomodel.yaml: model: required key missing"));
  }
}

TEST_CASE("load_scenario: unsupported offload combinations fail at load time", "[scenario][validation]") {
  FixtureDir dir;
  const std::string sc = dir.write("off.yaml", gpt2_scenario());
  SECTION("offload_optimizer with stage 0, worded without FP16_Optimizer for a bf16 run") {
    try {
      (void)load_scenario(sc, {"zero.offload_optimizer=cpu", "training.precision=bf16"});
      FAIL("expected a ScenarioError");
    } catch (const ScenarioError& e) {
      const std::string what = e.what();
      CHECK_THAT(what, Contains("<cli>: zero.offload_optimizer: optimizer offload needs ZeRO stage 1, 2 or 3"));
      CHECK(what.find("FP16_Optimizer") == std::string::npos);
    }
  }
  SECTION(
      "a ds_config's offload under the scenario's own zero.stage 0 (which wins over the ds_config's stage 3): "
      "reported at the scenario's stage, naming where the offload came from") {
    dir.write("z3off.json",
              "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"offload_optimizer\": "
              "{\"device\": \"cpu\"}\n  }\n}\n");
    // Lines: 1 name, 2 model, 3 training:, 4 seq_len, 5 zero:, 6 deepspeed_config, 7 stage: 0.
    const std::string mixed = dir.write("mixed.yaml", gpt2_scenario("z3off.json", "  stage: 0\n"));
    REQUIRE_THROWS_WITH(load_scenario(mixed),
                        Contains("mixed.yaml:7: zero.stage: optimizer offload needs ZeRO stage 1, 2 or 3") &&
                            Contains("(zero_optimization.offload_optimizer = cpu at z3off.json:4)"));
    // Without the scenario's stage the ds_config's stage 3 holds and the offload is accepted.
    CHECK(load_one(dir.write("ds_only.yaml", gpt2_scenario("z3off.json"))).zero.stage == 3);
  }
  SECTION("stage 3 nvme offload needs the node's NVMe") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.stage=3", "zero.offload_optimizer=nvme",
                                           "cluster.nvme.read_bandwidth=0GBps"}),
                        Contains("zero.offload_optimizer: offload to nvme needs the node's NVMe"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.stage=3", "zero.offload_optimizer=cpu", "zero.offload_param=nvme",
                                           "cluster.nvme.write_bandwidth=0GBps"}),
                        Contains("zero.offload_param: offload to nvme needs the node's NVMe"));
    // Stage 1/2 treat nvme as cpu (stage_1_and_2.py cpu_offload): no NVMe needed.
    CHECK_NOTHROW(
        load_scenario(sc, {"zero.stage=2", "zero.offload_optimizer=nvme", "cluster.nvme.read_bandwidth=0GBps"}));
  }
  SECTION("offload_param without stage 3") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.stage=2", "zero.offload_optimizer=cpu", "zero.offload_param=cpu"}),
                        Contains("zero.offload_param: parameter offload needs ZeRO stage 3 (got stage 2)"));
  }
  SECTION("offload_param without offload_optimizer is accepted, as by DeepSpeed") {
    CHECK_NOTHROW(load_scenario(sc, {"zero.stage=3", "zero.offload_param=cpu"}));
  }
  SECTION("every compare variant is checked up front and the bad one is named") {
    // offload_optimizer is on line 6; stage 0 of the comparison cannot offload.
    const std::string cmp =
        dir.write("cmp.yaml", gpt2_scenario("", "zero:\n  offload_optimizer: cpu\ncompare:\n  zero.stage: [2, 0]\n"));
    REQUIRE_THROWS_WITH(load_scenario(cmp), Contains("cmp.yaml:6: zero.offload_optimizer:"));
    REQUIRE_THROWS_WITH(load_scenario(cmp), Contains("(compare variant zero.stage=0)"));
  }
  SECTION("a GPT-2 model with grouped-query attention") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"model.kv_heads=4"}), Contains("<cli>: model.kv_heads: family gpt2"));
  }
}

TEST_CASE("load_scenario: the loader accepts exactly the offload combinations the generator simulates",
          "[scenario][validation]") {
  // Whatever loads must also generate (the forked simulation can never fail on input), and whatever the generator
  // rejects must already be rejected by the loader.
  FixtureDir dir;
  const std::string sc = dir.write("all.yaml", gpt2_scenario());
  const char* devices[] = {"none", "cpu", "nvme"};
  int accepted = 0;
  for (int stage = 0; stage <= 3; ++stage)
    for (const char* opt : devices)
      for (const char* par : devices) {
        INFO("stage " << stage << " offload_optimizer " << opt << " offload_param " << par);
        const std::vector<std::string> set{"zero.stage=" + std::to_string(stage),
                                           std::string("zero.offload_optimizer=") + opt,
                                           std::string("zero.offload_param=") + par};
        bool loads = true;
        Scenario s;
        try {
          s = load_one(sc, set);
        } catch (const ScenarioError&) {
          loads = false;
        }
        ZeroConfig z;
        z.stage = stage;
        z.offload_optimizer = std::string(opt) == "cpu"    ? OffloadDevice::CPU
                              : std::string(opt) == "nvme" ? OffloadDevice::NVME
                                                           : OffloadDevice::NONE;
        z.offload_param = std::string(par) == "cpu"    ? OffloadDevice::CPU
                          : std::string(par) == "nvme" ? OffloadDevice::NVME
                                                       : OffloadDevice::NONE;
        ModelSpec m; // a 2-layer GPT-2: the combination check does not depend on the size
        m.name = "tiny";
        m.hidden = 64;
        m.layers = 2;
        m.heads = 4;
        m.kv_heads = 4;
        m.vocab = 128;
        m.max_positions = 128;
        TrainingSpec t;
        t.seq_len = 16;
        const workload::Workload wl = workload::build_workload(m, t);
        bool generates = true;
        try {
          (void)zero::generate_program(zero::GeneratorInput{wl, z, 1, 1, 1e-9});
        } catch (const Error&) {
          generates = false;
        }
        CHECK(loads == generates);
        accepted += loads ? 1 : 0;
      }
  // Simulated: every stage without offload (4), offload_optimizer=cpu|nvme with stages 1-3 (6), and stage 3 with
  // offload_param=cpu|nvme with any optimizer placement (6).
  CHECK(accepted == 16); // stage 0: 1; stage 1, 2: optimizer none|cpu|nvme; stage 3: 3 x 3
}

TEST_CASE("load_scenario: ds_config.json zero_optimization fields are DeepSpeed's", "[scenario][validation]") {
  FixtureDir dir;
  const std::string sc = dir.write("ds.yaml", gpt2_scenario("ds.json"));
  SECTION("a typo is rejected with the nearest valid name") {
    dir.write("ds.json", "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"reduce_bucket_sise\": 5e8\n  }\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc),
                        Contains("ds.json:4: zero_optimization.reduce_bucket_sise: unknown DeepSpeed ZeRO field"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("did you mean 'reduce_bucket_size'?"));
  }
  SECTION("a typo inside an offload map") {
    dir.write("ds.json",
              "{\"zero_optimization\": {\"stage\": 2,\n"
              "  \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memroy\": true}}}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("ds.json:2: zero_optimization.offload_optimizer.pin_memroy"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("did you mean 'pin_memory'?"));
  }
  SECTION("pin_memory is true or false, and unset follows the release (false before 0.19.5)") {
    dir.write("ds.json",
              "{\"zero_optimization\": {\"stage\": 2,\n"
              "  \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": 1}}}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("zero_optimization.offload_optimizer.pin_memory: expected true or "
                                                    "false, got '1'"));
    const std::string y =
        dir.write("pin.yaml",
                  gpt2_scenario("", "zero:\n  stage: 2\n  offload_optimizer: {device: cpu, pin_memory: false}\n"));
    const Scenario pinned_off = load_one(y, {"zero.deepspeed_version=0.19.5"});
    CHECK_FALSE(pinned_off.zero.pin_optimizer_effective());
    const std::string d = dir.write("def.yaml", gpt2_scenario("", "zero:\n  stage: 2\n  offload_optimizer: cpu\n"));
    CHECK_FALSE(load_one(d, {"zero.deepspeed_version=0.17.5"}).zero.pin_optimizer_effective());
    CHECK(load_one(d, {"zero.deepspeed_version=0.19.5"}).zero.pin_optimizer_effective());
  }
  SECTION("the same offload field check in a scenario's DeepSpeed-style map") {
    const std::string y = dir.write("y.yaml", gpt2_scenario("",
                                                            "zero:\n  stage: 2\n  offload_optimizer: "
                                                            "{device: cpu, buffer_cnt: 4}\n"));
    REQUIRE_THROWS_WITH(load_scenario(y), Contains("y.yaml:7: zero.offload_optimizer.buffer_cnt"));
  }
  SECTION("partial optimizer offload is not simulated") {
    dir.write("ds.json",
              "{\"zero_optimization\": {\"stage\": 3,\n"
              "  \"offload_optimizer\": {\"device\": \"cpu\", \"ratio\": 0.3}}}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("zero_optimization.offload_optimizer.ratio"));
  }
  SECTION("a deprecated field together with its replacement (DeepSpeed config_utils.py refuses it too)") {
    dir.write("ds.json",
              "{\"zero_optimization\": {\"stage\": 2, \"cpu_offload\": true,\n"
              "  \"offload_optimizer\": {\"device\": \"cpu\"}}}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("zero_optimization.cpu_offload: the deprecated cpu_offload"));
  }
  SECTION("nvme in the JSON is reported at its line") {
    dir.write("ds.json",
              "{\"zero_optimization\": {\"stage\": 3,\n"
              "  \"offload_optimizer\": {\"device\": \"nvme\", \"nvme_path\": \"/local_nvme\"}}}\n");
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.nvme.read_bandwidth=0GBps"}),
                        Contains("ds.json:2: zero_optimization.offload_optimizer: offload to nvme"));
  }
}

TEST_CASE("load_scenario: every DeepSpeed zero_optimization field and alias is accepted", "[scenario][unit]") {
  // The field names and aliases of DeepSpeedZeroConfig and the offload configs (deepspeedai/DeepSpeed master
  // edaa7221267243c7be7fb49c5d5f5c4fb97b4641, deepspeed/runtime/zero/config.py and offload_config.py); values are
  // each field's DeepSpeed default unless the test needs another.
  FixtureDir dir;
  dir.write("ds.json", R"({
  "zero_optimization": {
    "stage": 3, "contiguous_gradients": true, "reduce_scatter": true, "reduce_bucket_size": 5e8,
    "use_multi_rank_bucket_allreduce": true, "allgather_partitions": true, "allgather_bucket_size": 5e8,
    "overlap_comm": true, "load_from_fp32_weights": true, "elastic_checkpoint": false,
    "offload_param": {"device": "cpu", "nvme_path": null, "buffer_count": 5, "buffer_size": 1e8,
                      "max_in_cpu": 1e9, "pin_memory": true},
    "offload_optimizer": {"device": "cpu", "nvme_path": null, "buffer_count": 4, "pin_memory": true,
                          "pipeline_read": false, "pipeline_write": false, "fast_init": false, "ratio": 1.0,
                          "super_offload": false, "cpuadam_cores_perc": 0.8},
    "zenflow": null, "sub_group_size": 1e9, "cpu_offload_use_pin_memory": null,
    "prefetch_bucket_size": 40000000, "param_persistence_threshold": 20000,
    "model_persistence_threshold": 9223372036854775807, "stage3_model_persistence_threshold": 9223372036854775807,
    "max_live_parameters": 300000000, "max_reuse_distance": 400000000,
    "gather_16bit_weights_on_model_save": false, "stage3_gather_16bit_weights_on_model_save": false,
    "module_granularity_threshold": 0, "stage3_module_granularity_threshold": 0,
    "use_all_reduce_for_fetch_params": false, "stage3_use_all_reduce_for_fetch_params": false,
    "allgather_sequential": false, "stage3_allgather_sequential": false,
    "stage3_gather_fp16_weights_on_model_save": false, "ignore_unused_parameters": true, "legacy_stage1": false,
    "round_robin_gradients": true, "zero_hpz_partition_size": 1, "zero_quantized_weights": false,
    "zero_quantized_nontrainable_weights": false, "zero_quantized_gradients": false, "zeropp_loco_param": null,
    "mics_shard_size": -1, "mics_hierarchical_params_gather": false, "memory_efficient_linear": true,
    "pipeline_loading_checkpoint": false, "override_module_apply": true, "log_trace_cache_warnings": false,
    "enable_sanity_checks": false, "save_muon_momentum_buffer_in_memory": false, "leaf_module": {}
  }
})");
  const Scenario s = load_one(dir.write("ds.yaml", gpt2_scenario("ds.json")));
  CHECK(s.zero.stage == 3);
  CHECK(s.zero.offload_param == OffloadDevice::CPU);
  CHECK(s.zero.offload_optimizer == OffloadDevice::CPU);
  CHECK(s.zero.offload_optimizer_pin_memory == std::optional<bool>(true)); // pin_memory is read, not ignored
  CHECK(s.zero.offload_param_pin_memory == std::optional<bool>(true));
  CHECK(s.zero.round_robin_gradients);
  // The un-prefixed field names set the same keys as their stage3_ aliases.
  CHECK(s.zero.stage3_prefetch_bucket_size == 40'000'000);
  CHECK(s.zero.stage3_param_persistence_threshold == 20'000);
  CHECK(s.zero.stage3_max_live_parameters == 300'000'000);
  CHECK(s.zero.stage3_max_reuse_distance == 400'000'000);
  // sys.maxsize, DeepSpeed's default model_persistence_threshold, is no cap.
  CHECK(s.zero.stage3_model_persistence_threshold == ZeroConfig::kNoPersistenceCap);
  // Deprecated spellings still work: cpu_offload / cpu_offload_param = true -> device cpu.
  dir.write("old.json", "{\"zero_optimization\": {\"stage\": 3, \"cpu_offload\": true, \"cpu_offload_param\": true}}");
  const Scenario o = load_one(dir.write("old.yaml", gpt2_scenario("old.json")));
  CHECK(o.zero.offload_optimizer == OffloadDevice::CPU);
  CHECK(o.zero.offload_param == OffloadDevice::CPU);
  // ... each with a note, as DeepSpeed warns from 0.3.15 on (zero/config.py _sanity_check l.65-78 @v0.3.15:
  // "cpu_offload is deprecated. Please use offload_optimizer"), naming the line (all on line 1 here) and the
  // replacement (newuser29 #11).
  std::vector<std::string> deprecated;
  for (const std::string& n : o.import_notes)
    if (n.find(" is deprecated (") != std::string::npos)
      deprecated.push_back(n);
  REQUIRE(deprecated.size() == 2);
  CHECK_THAT(deprecated[0],
             Contains("old.json:1: zero_optimization.cpu_offload is deprecated (DeepSpeed 0.3.15 and later warn and "
                      "read it as offload_optimizer {device: cpu} with the release's other defaults): simulated as "
                      "zero.offload_optimizer cpu; write \"offload_optimizer\": {\"device\": \"cpu\"} instead"));
  CHECK_THAT(deprecated[1], Contains("zero_optimization.cpu_offload_param is deprecated") &&
                                Contains("simulated as zero.offload_param cpu"));
  // false: nothing offloaded, and still the deprecation (DeepSpeed warns for the field whatever its value).
  dir.write("off.json", "{\"zero_optimization\": {\"stage\": 2,\n  \"cpu_offload\": false}}");
  const Scenario f = load_one(dir.write("off.yaml", gpt2_scenario("off.json")));
  CHECK(f.zero.offload_optimizer == OffloadDevice::NONE);
  const auto note = std::find_if(f.import_notes.begin(), f.import_notes.end(),
                                 [](const std::string& n) { return n.find(" is deprecated (") != std::string::npos; });
  REQUIRE(note != f.import_notes.end());
  CHECK_THAT(*note, Contains("off.json:2: zero_optimization.cpu_offload is deprecated") &&
                        Contains("only when true): false offloads nothing"));
  // The legacy boolean form: "zero_optimization": true is stage 1 (config.py read_zero_config_deprecated).
  dir.write("bool.json", "{\"zero_optimization\": true}");
  CHECK(load_one(dir.write("bool.yaml", gpt2_scenario("bool.json"))).zero.stage == 1);
}

TEST_CASE("load_scenario: ds_config batch, precision and optimizer apply unless the scenario sets them",
          "[scenario][unit]") {
  FixtureDir dir;
  dir.write("ds.json", R"({
  "train_micro_batch_size_per_gpu": 4,
  "gradient_accumulation_steps": 3,
  "bf16": {"enabled": true},
  "optimizer": {"type": "Adam", "params": {"lr": 1e-4, "adam_w_mode": false}},
  "zero_optimization": {"stage": 1}
})");
  SECTION("not set in the scenario: the JSON's values") {
    const Scenario s = load_one(dir.write("ds.yaml", gpt2_scenario("ds.json")));
    CHECK(s.training.micro_batch == 4);
    CHECK(s.training.grad_accum == 3);
    CHECK(s.training.precision == Precision::BF16);
    CHECK(s.training.optimizer == OptimizerKind::ADAM); // adam_w_mode false: plain Adam
    CHECK(s.zero.stage == 1);
  }
  SECTION("set in the scenario: the scenario wins") {
    const Scenario s = load_one(
        dir.write("ds.yaml", gpt2_scenario("ds.json", "  stage: 2\n", "  micro_batch: 1\n  precision: fp16\n")));
    CHECK(s.training.micro_batch == 1);
    CHECK(s.training.precision == Precision::FP16);
    CHECK(s.training.grad_accum == 3);
    CHECK(s.zero.stage == 2);
  }
  SECTION("fp16, and the legacy bfloat16 section") {
    dir.write("fp.json", "{\"fp16\": {\"enabled\": true}}");
    CHECK(load_one(dir.write("fp.yaml", gpt2_scenario("fp.json"))).training.precision == Precision::FP16);
    dir.write("bf.json", "{\"bfloat16\": {\"enabled\": true}}");
    CHECK(load_one(dir.write("bf.yaml", gpt2_scenario("bf.json"))).training.precision == Precision::BF16);
    CHECK(load_one(dir.write("bf1.yaml", gpt2_scenario("bf.json", "", "  precision: fp16\n"))).training.precision ==
          Precision::FP16); // scenario wins
    CHECK(load_one(dir.write("bf2.yaml", gpt2_scenario("bf.json")), {"training.precision=fp16"}).training.precision ==
          Precision::FP16);
  }
  SECTION("optimizer types: case-insensitive adam/adamw, and DeepSpeed runs \"adam\" as AdamW by default") {
    dir.write("o1.json", "{\"optimizer\": {\"type\": \"ADAMW\"}}");
    CHECK(load_one(dir.write("o1.yaml", gpt2_scenario("o1.json"))).training.optimizer == OptimizerKind::ADAMW);
    CHECK(load_one(dir.write("o1b.yaml", gpt2_scenario("o1.json", "", "  optimizer: adam\n"))).training.optimizer ==
          OptimizerKind::ADAM); // scenario wins
    dir.write("o2.json", "{\"optimizer\": {\"type\": \"adam\"}}");
    CHECK(load_one(dir.write("o2.yaml", gpt2_scenario("o2.json"))).training.optimizer == OptimizerKind::ADAMW);
  }
  SECTION("other optimizer types are rejected naming the key") {
    for (const char* t : {"Lamb", "OneBitAdam", "FusedAdam", "SGD"}) {
      INFO(t);
      dir.write("bad.json", std::string("{\n  \"optimizer\": {\n    \"type\": \"") + t + "\"\n  }\n}\n");
      REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                          Contains(
                              std::string("bad.json:3: optimizer.type: zerosim models Adam and AdamW only, got '") + t +
                              "'"));
    }
  }
}

TEST_CASE("load_scenario: selective recomputation needs activation checkpointing", "[scenario][unit]") {
  FixtureDir dir;
  const Scenario s = load_one(dir.write("sel.yaml", gpt2_scenario("", "",
                                                                  "  activation_checkpointing: true\n"
                                                                  "  recompute_granularity: selective\n")));
  CHECK(s.training.recompute_granularity == RecomputeGranularity::SELECTIVE);
  CHECK(load_one(dir.write("full.yaml", gpt2_scenario(""))).training.recompute_granularity ==
        RecomputeGranularity::FULL);
  // Line 5: the key under training (lines 3-4: training:, seq_len).
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("off.yaml", gpt2_scenario("", "", "  recompute_granularity: selective\n"))),
                      Contains(
                          "off.yaml:5: training.recompute_granularity: selective recomputation is a kind of activation "
                          "checkpointing, which is off") &&
                          Contains("activation_checkpointing: true"));
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("", "", "  recompute_granularity: some\n"))),
                      Contains("bad.yaml:5: training.recompute_granularity"));
}

TEST_CASE("load_scenario: the ds_config aio section sets zero.aio, its old thread_count name too", "[scenario][unit]") {
  // deepspeed/runtime/swap_tensor/constants.py: block_size 1048576, queue_depth 8, intra_op_parallelism 1.
  FixtureDir dir;
  const Scenario d = load_one(dir.write("d.yaml", gpt2_scenario("")));
  CHECK(d.zero.aio.inflight_bytes() == 8388608.0);
  dir.write("aio.json", R"({"aio": {"block_size": 262144, "queue_depth": 32, "thread_count": 2,
  "single_submit": false, "overlap_events": true}})");
  const Scenario s = load_one(dir.write("aio.yaml", gpt2_scenario("aio.json")));
  CHECK(s.zero.aio.block_size.value() == 262144.0);
  CHECK(s.zero.aio.queue_depth == 32);
  CHECK(s.zero.aio.intra_op_parallelism == 2);
  CHECK(s.zero.aio.inflight_bytes() == 262144.0 * 32 * 2);
  CHECK(load_one(dir.write("aio2.yaml", gpt2_scenario("aio.json")), {"zero.aio.queue_depth=4"}).zero.aio.queue_depth ==
        4); // the scenario (or --set) wins
  dir.write("bad.json", "{\n  \"aio\": {\n    \"queue_dept\": 8\n  }\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                      Contains("bad.json:3: aio.queue_dept: unknown DeepSpeed aio field") && Contains("queue_depth"));
  dir.write("neg.json", "{\"aio\": {\"queue_depth\": 0}}");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("neg.yaml", gpt2_scenario("neg.json"))),
                      Contains("neg.json:1: aio.queue_depth"));
}

TEST_CASE(
    "load_scenario: cpu_checkpointing needs full activation checkpointing, and a ds_config's activation_checkpointing "
    "section sets it (a no-op without checkpointing)",
    "[scenario][unit]") {
  // deepspeed/runtime/activation_checkpointing/config.py: the section's fields are partition_activations,
  // contiguous_memory_optimization, cpu_checkpointing, number_checkpoints, synchronize_checkpoint_boundary, profile.
  FixtureDir dir;
  CHECK_FALSE(load_one(dir.write("d.yaml", gpt2_scenario(""))).training.cpu_checkpointing);
  const Scenario y = load_one(
      dir.write("y.yaml", gpt2_scenario("", "", "  activation_checkpointing: true\n  cpu_checkpointing: true\n")));
  CHECK(y.training.cpu_checkpointing);
  // Line 5: the key under training (lines 3-4: training:, seq_len).
  REQUIRE_THROWS_WITH(load_scenario(dir.write("off.yaml", gpt2_scenario("", "", "  cpu_checkpointing: true\n"))),
                      Contains("off.yaml:5: training.cpu_checkpointing") &&
                          Contains("activation_checkpointing is off"));
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("sel.yaml", gpt2_scenario("", "",
                                                              "  cpu_checkpointing: true\n  activation_checkpointing: "
                                                              "true\n  recompute_granularity: selective\n"))),
                      Contains("sel.yaml:5: training.cpu_checkpointing") && Contains("selective"));
  dir.write(
      "ac.json",
      R"({"bf16": {"enabled": true}, "activation_checkpointing": {"partition_activations": true, "cpu_checkpointing": true,
  "contiguous_memory_optimization": false, "number_checkpoints": null, "synchronize_checkpoint_boundary": false,
  "profile": false}})");
  CHECK(load_one(dir.write("ac.yaml", gpt2_scenario("ac.json", "", "  activation_checkpointing: true\n")))
            .training.cpu_checkpointing);
  // The same ds_config under a scenario without checkpointing (a user's HF Trainer config): DeepSpeed accepts the
  // block and it moves nothing, so it is cleared and marked for the report's note, not an error.
  const Scenario quiet = load_one(dir.write("ac_off.yaml", gpt2_scenario("ac.json")));
  CHECK_FALSE(quiet.training.cpu_checkpointing);
  REQUIRE(quiet.import_notes.size() == 1);
  CHECK_THAT(quiet.import_notes[0], Contains("activation_checkpointing.cpu_checkpointing: true changes nothing"));
  CHECK(load_one(dir.write("ac_on.yaml", gpt2_scenario("ac.json", "", "  activation_checkpointing: true\n")))
            .import_notes.empty());
  dir.write("typo.json", "{\n  \"activation_checkpointing\": {\n    \"cpu_checkpoint\": true\n  }\n}\n");
  REQUIRE_THROWS_WITH(
      load_scenario(dir.write("typo.yaml", gpt2_scenario("typo.json", "", "  activation_checkpointing: true\n"))),
      Contains("typo.json:3: activation_checkpointing.cpu_checkpoint: unknown DeepSpeed activation_checkpointing "
               "field") &&
          Contains("cpu_checkpointing"));
  dir.write("str.json", R"({"activation_checkpointing": {"cpu_checkpointing": "yes"}})");
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("str.yaml", gpt2_scenario("str.json", "", "  activation_checkpointing: true\n"))),
                      Contains("str.json:1: activation_checkpointing.cpu_checkpointing: expected true or false"));
}

TEST_CASE("load_scenario: the offload maps' buffer_count and buffer_size set the NVMe swap buffers",
          "[scenario][unit]") {
  // deepspeed/runtime/zero/offload_config.py: offload_param buffer_count 5, buffer_size 1e8; offload_optimizer
  // buffer_count 4. Read from the YAML map form and from a ds_config; 0 is rejected (no buffer to swap through).
  FixtureDir dir;
  const Scenario d = load_one(dir.write("d.yaml", gpt2_scenario()));
  CHECK(d.zero.param_swap_buffer_count == 5);
  CHECK(d.zero.param_swap_buffer_size == 100'000'000);
  CHECK(d.zero.optimizer_swap_buffer_count == 4);
  const Scenario y = load_one(
      dir.write("y.yaml", gpt2_scenario("",
                                        "zero:\n  stage: 3\n  offload_optimizer: {device: nvme, buffer_count: 5}\n"
                                        "  offload_param: {device: nvme, buffer_count: 3, buffer_size: 2e8}\n")));
  CHECK(y.zero.param_swap_buffer_count == 3);
  CHECK(y.zero.param_swap_buffer_size == 200'000'000);
  CHECK(y.zero.optimizer_swap_buffer_count == 5);
  dir.write("ds.json", R"({"zero_optimization": {"stage": 3, "offload_optimizer": {"device": "nvme", "buffer_count": 6},
  "offload_param": {"device": "nvme", "buffer_count": 7, "buffer_size": 300000000}}})");
  const Scenario j = load_one(dir.write("j.yaml", gpt2_scenario("ds.json")));
  CHECK(j.zero.param_swap_buffer_count == 7);
  CHECK(j.zero.param_swap_buffer_size == 300'000'000);
  CHECK(j.zero.optimizer_swap_buffer_count == 6);
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("z.yaml", gpt2_scenario("",
                                                            "zero:\n  stage: 3\n  offload_optimizer: cpu\n"
                                                            "  offload_param: {device: nvme, buffer_count: 0}\n"))),
                      Contains("z.yaml:8: zero.offload_param.buffer_count"));
}

TEST_CASE("load_scenario: offload_param.max_in_cpu is read from the map, the flat key and a ds_config",
          "[scenario][unit]") {
  // deepspeed/runtime/zero/offload_config.py l.39 @v0.19.5: max_in_cpu int >= 0, default 1e9 (elements). 0 is legal.
  FixtureDir dir;
  CHECK(load_one(dir.write("d.yaml", gpt2_scenario())).zero.param_max_in_cpu == 1'000'000'000);
  const Scenario y = load_one(
      dir.write("y.yaml", gpt2_scenario("",
                                        "zero:\n  stage: 3\n  offload_optimizer: cpu\n"
                                        "  offload_param: {device: nvme, max_in_cpu: 2.5e8, buffer_size: 3e8}\n")));
  CHECK(y.zero.param_max_in_cpu == 250'000'000);
  const Scenario f = load_one(
      dir.write("f.yaml",
                gpt2_scenario("", "zero:\n  stage: 3\n  offload_param: nvme\n  offload_param_max_in_cpu: 0\n")));
  CHECK(f.zero.param_max_in_cpu == 0);
  // DeepSpeedExamples' ZeRO-Infinity config (Megatron-LM-v1.1.5-ZeRO3/examples/ds_zero_stage_infinity_config.json).
  dir.write("ds.json", R"({"zero_optimization": {"stage": 3,
    "offload_param": {"device": "nvme", "nvme_path": "/nvme_data", "max_in_cpu": 1, "pin_memory": true}}})");
  const Scenario j = load_one(dir.write("j.yaml", gpt2_scenario("ds.json")));
  CHECK(j.zero.param_max_in_cpu == 1);
  CHECK(j.zero.unmodelled_offload_fields.empty());
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("bad.yaml", gpt2_scenario("",
                                                              "zero:\n  stage: 3\n"
                                                              "  offload_param: {device: nvme, max_in_cpu: 1e9, "
                                                              "buffer_size: 2e8}\n  offload_param_max_in_cpu: 5e8\n"))),
                      Contains("max_in_cpu"));
}

TEST_CASE(
    "load_scenario: offload_optimizer's pipeline_read and pipeline_write are read from the map, the flat keys "
    "and a ds_config",
    "[scenario][unit]") {
  // deepspeed/runtime/zero/offload_config.py: both default false; either one selects PipelinedOptimizerSwapper.
  FixtureDir dir;
  const Scenario d = load_one(dir.write("d.yaml", gpt2_scenario()));
  CHECK_FALSE(d.zero.optimizer_pipeline_read);
  CHECK_FALSE(d.zero.optimizer_pipeline_write);
  const Scenario y = load_one(
      dir.write("y.yaml",
                gpt2_scenario("", "zero:\n  stage: 3\n  offload_optimizer: {device: nvme, pipeline_read: true}\n")));
  CHECK(y.zero.optimizer_pipeline_read);
  CHECK_FALSE(y.zero.optimizer_pipeline_write);
  const Scenario f = load_one(dir.write("f.yaml", gpt2_scenario("",
                                                                "zero:\n  stage: 3\n  offload_optimizer: nvme\n"
                                                                "  offload_optimizer_pipeline_write: true\n")));
  CHECK_FALSE(f.zero.optimizer_pipeline_read);
  CHECK(f.zero.optimizer_pipeline_write);
  dir.write("ds.json", R"({"zero_optimization": {"stage": 3,
  "offload_optimizer": {"device": "nvme", "pipeline_read": true, "pipeline_write": true, "buffer_count": 12}}})");
  const Scenario j = load_one(dir.write("j.yaml", gpt2_scenario("ds.json")));
  CHECK(j.zero.optimizer_pipeline_read);
  CHECK(j.zero.optimizer_pipeline_write);
  CHECK_FALSE(load_one(dir.write("j.yaml", gpt2_scenario("ds.json")), {"zero.offload_optimizer_pipeline_read=false"})
                  .zero.optimizer_pipeline_read);
  REQUIRE_THROWS_WITH(load_scenario(dir.write("c.yaml", gpt2_scenario("",
                                                                      "zero:\n  stage: 3\n" // 5, 6
                                                                      "  offload_optimizer_pipeline_read: false\n"
                                                                      "  offload_optimizer: {device: nvme, "
                                                                      "pipeline_read: true}\n"))),
                      Contains("c.yaml:8: zero.offload_optimizer.pipeline_read: true conflicts with "
                               "zero.offload_optimizer_pipeline_read: false (line 7)"));
}

TEST_CASE("load_scenario: each variant says where its keys were set (file, line, key as written)", "[scenario][unit]") {
  // For checks made after loading (apps/checked_scenario.cpp): gpt2_scenario's lines 1-4, then zero: on 5.
  FixtureDir dir;
  const std::string file = dir.write("w.yaml", gpt2_scenario("",
                                                             "zero:\n" // 5
                                                             "  stage: 3\n" // 6
                                                             "  offload_optimizer: cpu\n" // 7
                                                             "  offload_param: {device: nvme, buffer_size: 2e8}\n" // 8
                                                             ));
  const auto v = load_scenario(file, {"zero.offload_param_buffer_count=3"});
  REQUIRE(v.size() == 1);
  const auto& src = v.front().sources;
  REQUIRE(src.count("zero.offload_param_buffer_size") == 1);
  CHECK(src.at("zero.offload_param_buffer_size").file == file);
  CHECK(src.at("zero.offload_param_buffer_size").line == 8);
  CHECK(src.at("zero.offload_param_buffer_size").key == "zero.offload_param.buffer_size");
  CHECK(src.at("zero.stage").line == 6);
  CHECK(src.at("zero.offload_param_buffer_count").file == "<cli>");
  CHECK(src.count("zero.reduce_bucket_size") == 0); // left at its default
}

TEST_CASE("load_scenario: an offload field given both in the map and as its flat key must agree",
          "[scenario][validation]") {
  // offload_optimizer: {pin_memory: X} and offload_optimizer_pin_memory: Y set one setting (likewise buffer_count
  // and buffer_size). Before this check the key written last won silently. Lines: gpt2_scenario's 4, then zero: on 5.
  FixtureDir dir;
  const auto zero = [&](const std::string& name, const std::string& body) {
    return dir.write(name, gpt2_scenario("", "zero:\n" + body));
  };
  SECTION("different values in the scenario: an error at the second, naming both keys and the first line") {
    const std::string map_first = zero("a.yaml",
                                       "  stage: 2\n" // 6
                                       "  offload_optimizer: {device: cpu, pin_memory: true}\n" // 7
                                       "  offload_optimizer_pin_memory: false\n"); // 8
    REQUIRE_THROWS_WITH(load_scenario(map_first),
                        Contains("a.yaml:8: zero.offload_optimizer_pin_memory: false conflicts with "
                                 "zero.offload_optimizer.pin_memory: true (line 7); give one"));
    // The other order, block style: reported at the map's field (line 9), naming the flat key's line 6.
    const std::string flat_first = zero("b.yaml",
                                        "  offload_optimizer_pin_memory: false\n" // 6
                                        "  stage: 2\n" // 7
                                        "  offload_optimizer:\n" // 8
                                        "    pin_memory: true\n" // 9
                                        "    device: cpu\n"); // 10
    REQUIRE_THROWS_WITH(load_scenario(flat_first),
                        Contains("b.yaml:9: zero.offload_optimizer.pin_memory: true conflicts with "
                                 "zero.offload_optimizer_pin_memory: false (line 6); give one"));
    // offload_param's map and its buffer_count / pin_memory flat keys: the same rule.
    const std::string param = zero("c.yaml",
                                   "  stage: 3\n" // 6
                                   "  offload_param: {device: nvme, buffer_count: 5}\n" // 7
                                   "  offload_param_buffer_count: 6\n"); // 8
    REQUIRE_THROWS_WITH(load_scenario(param), Contains("c.yaml:8: zero.offload_param_buffer_count: 6 conflicts with "
                                                       "zero.offload_param.buffer_count: 5 (line 7); give one"));
    const std::string opt_count = zero("d.yaml",
                                       "  stage: 2\n" // 6
                                       "  offload_optimizer_buffer_count: 2\n" // 7
                                       "  offload_optimizer: {device: nvme, buffer_count: 3}\n"); // 8
    REQUIRE_THROWS_WITH(load_scenario(opt_count),
                        Contains("d.yaml:8: zero.offload_optimizer.buffer_count: 3 conflicts with "
                                 "zero.offload_optimizer_buffer_count: 2 (line 7)"));
    const std::string param_pin = zero("e.yaml",
                                       "  stage: 3\n" // 6
                                       "  offload_param: {device: cpu, pin_memory: false}\n" // 7
                                       "  offload_param_pin_memory: true\n"); // 8
    REQUIRE_THROWS_WITH(load_scenario(param_pin), Contains("e.yaml:8: zero.offload_param_pin_memory: true conflicts"));
  }
  SECTION("the same value given both ways is accepted, compared as a value (8 and 8e0 are one count)") {
    const Scenario s = load_one(zero("same.yaml",
                                     "  stage: 3\n"
                                     "  offload_param: {device: nvme, buffer_count: 8, pin_memory: false}\n"
                                     "  offload_param_buffer_count: 8e0\n"
                                     "  offload_param_pin_memory: false\n"));
    CHECK(s.zero.param_swap_buffer_count == 8);
    CHECK(s.zero.offload_param_pin_memory == std::optional<bool>(false));
  }
  SECTION("a later layer still overrides: --set and compare beat the file, the file beats its ds_config") {
    const std::string sc = zero("o.yaml",
                                "  stage: 2\n"
                                "  offload_optimizer: {device: cpu, pin_memory: true}\n");
    CHECK(load_one(sc, {"zero.offload_optimizer_pin_memory=false"}).zero.offload_optimizer_pin_memory ==
          std::optional<bool>(false));
    // The flat key written before the map in the file, the map's value replaced by --set: the --set value wins
    // whatever the order of the keys.
    const std::string before = zero("p.yaml",
                                    "  offload_optimizer_pin_memory: true\n"
                                    "  stage: 2\n"
                                    "  offload_optimizer: {device: cpu, pin_memory: true}\n");
    CHECK(load_one(before, {"zero.offload_optimizer_pin_memory=false"}).zero.offload_optimizer_pin_memory ==
          std::optional<bool>(false));
    const std::string cmp = zero("q.yaml",
                                 "  stage: 2\n"
                                 "  offload_optimizer: {device: cpu, pin_memory: true}\n"
                                 "compare:\n  zero.offload_optimizer_pin_memory: [false, true]\n");
    const auto v = load_scenario(cmp);
    REQUIRE(v.size() == 2);
    CHECK(v[0].scenario.zero.offload_optimizer_pin_memory == std::optional<bool>(false));
    CHECK(v[1].scenario.zero.offload_optimizer_pin_memory == std::optional<bool>(true));
    // docs/scenario-reference.md: keys written in the scenario win over the imported ds_config.json.
    dir.write("ds.json", R"({"zero_optimization": {"stage": 2,
      "offload_optimizer": {"device": "cpu", "pin_memory": true, "buffer_count": 6}}})");
    const Scenario s = load_one(dir.write("ds.yaml", gpt2_scenario("ds.json",
                                                                   "  offload_optimizer_pin_memory: false\n"
                                                                   "  offload_optimizer_buffer_count: 3\n")));
    CHECK(s.zero.offload_optimizer_pin_memory == std::optional<bool>(false));
    CHECK(s.zero.optimizer_swap_buffer_count == 3);
  }
}

TEST_CASE("load_scenario: fewer than 4 NVMe optimizer swap buffers are refused at stage 3, as DeepSpeed asserts",
          "[scenario][unit]") {
  // swap_in_optimizer_state takes num_tensors() + 1 buffers per sub-group: Adam's fp32 params, exp_avg, exp_avg_sq
  // and the gradients = 4; SwapBufferManager.allocate returns None with fewer and the step asserts.
  FixtureDir dir;
  REQUIRE_THROWS_WITH(load_scenario(dir.write("b.yaml", gpt2_scenario("",
                                                                      "zero:\n  stage: 3\n"
                                                                      "  offload_optimizer: {device: nvme, "
                                                                      "buffer_count: 3}\n"))),
                      Contains("b.yaml:7: zero.offload_optimizer.buffer_count: 3 pinned swap buffers are fewer than "
                               "an Adam sub-group swaps in at once, 4") &&
                          Contains("at least 4"));
  dir.write("ds.json", R"({"zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "buffer_count": 1}}})");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("j.yaml", gpt2_scenario("ds.json"))),
                      Contains("ds.json:2: zero_optimization.offload_optimizer.buffer_count: 1 pinned swap buffers"));
  // 4 runs; stage 2 has no swapper (nvme runs as cpu offload), so its count is not checked.
  CHECK(load_one(dir.write("ok.yaml", gpt2_scenario("",
                                                    "zero:\n  stage: 3\n  offload_optimizer: {device: nvme, "
                                                    "buffer_count: 4}\n")))
            .zero.optimizer_swap_buffer_count == 4);
  CHECK(load_one(dir.write("s2.yaml", gpt2_scenario("",
                                                    "zero:\n  stage: 2\n  offload_optimizer: {device: nvme, "
                                                    "buffer_count: 2}\n")))
            .zero.optimizer_swap_buffer_count == 2);
}

TEST_CASE("load_scenario: the offload maps' unmodelled fields are type-checked as DeepSpeed does and noted when set",
          "[scenario][unit]") {
  // offload_config.py: fast_init bool = False; max_in_cpu int >= 0 = 1e9 (a modelled key now, checked as an element
  // count); nvme_path a path or None (pipeline_read and pipeline_write are modelled keys: PipelinedOptimizerSwapper).
  FixtureDir dir;
  REQUIRE_THROWS_WITH(load_scenario(dir.write("b.yaml", gpt2_scenario("",
                                                                      "zero:\n  stage: 3\n"
                                                                      "  offload_optimizer: {device: nvme, "
                                                                      "fast_init: maybe}\n"))),
                      Contains("b.yaml:7: zero.offload_optimizer.fast_init: expected true or false, got 'maybe'"));
  dir.write("neg.json", R"({"zero_optimization": {"stage": 3,
    "offload_param": {"device": "nvme", "max_in_cpu": -5}}})");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("neg.yaml", gpt2_scenario("neg.json"))),
                      Contains("neg.json:2: zero_optimization.offload_param.max_in_cpu") &&
                          Contains("expected a non-negative whole number of elements, got '-5'"));
  // Defaults (and nvme_path, which changes nothing simulated) leave no note; other values are listed.
  const Scenario d = load_one(dir.write("d.yaml", gpt2_scenario("",
                                                                "zero:\n  stage: 3\n  offload_optimizer: "
                                                                "{device: nvme, pipeline_read: false, "
                                                                "nvme_path: /local_nvme, fast_init: false}\n")));
  CHECK(d.zero.unmodelled_offload_fields.empty());
  dir.write("on.json", R"({"zero_optimization": {"stage": 3,
    "offload_optimizer": {"device": "nvme", "pipeline_read": true, "fast_init": true, "buffer_count": 8},
    "offload_param": {"device": "cpu", "max_in_cpu": 1e9}}})");
  const Scenario on = load_one(dir.write("on.yaml", gpt2_scenario("on.json")));
  using P = std::pair<std::string, std::string>;
  CHECK(on.zero.unmodelled_offload_fields == std::vector<P>{{"offload_optimizer.fast_init", "true"}});
  CHECK(on.zero.optimizer_pipeline_read);
  // Every field the maps accept is documented on the key (docs/scenario-reference.md is generated from it), the
  // no-effect ones as such (newuser32 #17). Fields: DeepSpeedZeroOffloadOptimizerConfig and
  // DeepSpeedZeroOffloadParamConfig, deepspeed/runtime/zero/offload_config.py, v0.19.5 lines 21-105.
  const KeySpec* opt = find_key("zero.offload_optimizer");
  const KeySpec* par = find_key("zero.offload_param");
  REQUIRE(opt != nullptr);
  REQUIRE(par != nullptr);
  for (const char* f : {"device", "nvme_path", "buffer_count", "pin_memory", "pipeline_read", "pipeline_write",
                        "fast_init", "ratio", "super_offload", "cpuadam_cores_perc"})
    CHECK_THAT(std::string(opt->doc), Contains(f));
  CHECK_THAT(std::string(opt->doc), Contains("fast_init, super_offload and cpuadam_cores_perc are accepted and "
                                             "type-checked as DeepSpeed does but have no simulated effect"));
  for (const char* f : {"device", "nvme_path", "buffer_count", "buffer_size", "max_in_cpu", "pin_memory"})
    CHECK_THAT(std::string(par->doc), Contains(f));
}

TEST_CASE("load_scenario: the scenario's zero.aio takes DeepSpeed's aio names and byte counts, as a ds_config does",
          "[scenario][unit]") {
  // aio_config.py: block_size (bytes), queue_depth, intra_op_parallelism (thread_count before 0.14), single_submit
  // false, overlap_events true, use_gds false.
  FixtureDir dir;
  const Scenario y = load_one(dir.write("a.yaml", gpt2_scenario("",
                                                                "zero:\n  stage: 3\n  aio:\n"
                                                                "    block_size: 2097152\n    thread_count: 4\n"
                                                                "    single_submit: true\n"
                                                                "    overlap_events: true\n")));
  CHECK(y.zero.aio.block_size.value() == 2097152.0);
  CHECK(y.zero.aio.intra_op_parallelism == 4);
  CHECK(y.zero.aio.single_submit);
  using P = std::pair<std::string, std::string>;
  CHECK(y.zero.unmodelled_offload_fields == std::vector<P>{{"aio.single_submit", "true"}});
  dir.write("a.json", R"({"zero_optimization": {"stage": 3},
    "aio": {"block_size": 2097152, "thread_count": 4, "single_submit": true, "overlap_events": true}})");
  const Scenario j = load_one(dir.write("j.yaml", gpt2_scenario("a.json")));
  CHECK(j.zero.aio.block_size.value() == 2097152.0);
  CHECK(j.zero.aio.intra_op_parallelism == 4);
  CHECK(j.zero.unmodelled_offload_fields == std::vector<P>{{"aio.single_submit", "true"}});
  // The same wrong value is refused both ways.
  REQUIRE_THROWS_WITH(load_scenario(dir.write("b.yaml", gpt2_scenario("", "zero:\n  aio:\n    single_submit: 1\n"))),
                      Contains("b.yaml:7: zero.aio.single_submit: expected true or false"));
  dir.write("b.json", R"({"aio": {"single_submit": 1}})");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bj.yaml", gpt2_scenario("b.json"))),
                      Contains("b.json:1: aio.single_submit: expected true or false, got '1'"));
}

TEST_CASE("load_scenario: a host_link set above its share of a preset's PCIe switch uplink is noted with offload",
          "[scenario][unit]") {
  // dgx-a100: 2 GPUs per PCIe switch, uplink 31.5 GB/s. host_link 31.5 GB/s x 2 GPUs = 63 > 31.5: the note names
  // the uplink; 15.75 GB/s x 2 = 31.5 is within it: no note.
  FixtureDir dir;
  const std::string p = dir.write("d.yaml", gpt2_scenario("",
                                                          "zero:\n  stage: 2\n  offload_optimizer: cpu\n"
                                                          "cluster:\n  topology: dgx-a100\n"));
  const auto notes = [](const Scenario& sc) {
    std::string all;
    for (const auto& n : sc.import_notes)
      all += n + "\n";
    return all;
  };
  CHECK_THAT(notes(load_one(p)), !Contains("pcie_switch_uplink"));
  CHECK_THAT(notes(load_one(p, {"cluster.host_link.bandwidth=63GBps"})),
             Contains("cluster.host_link.bandwidth 63.00 GB/s (--set) is above its share of the PCIe switch uplink: 2 "
                      "GPUs share cluster.pcie_switch_uplink.bandwidth 31.50 GB/s (15.75 GB/s each"));
  CHECK_THAT(notes(load_one(p, {"cluster.host_link.bandwidth=15.75GBps"})), !Contains("pcie_switch_uplink"));
  // Setting the uplink too is the what-if done right: no note.
  CHECK_THAT(notes(load_one(p, {"cluster.host_link.bandwidth=63GBps", "cluster.pcie_switch_uplink.bandwidth=126GBps"})),
             !Contains("pcie_switch_uplink"));
}

TEST_CASE("load_scenario: a key given twice in a JSON object is an error naming both lines", "[scenario][unit]") {
  // Python's json.load and nlohmann keep the last of two equal keys silently; the YAML loader rejects duplicates,
  // and so does the JSON one (ds_config.json here; HF config.json goes through the same reader).
  FixtureDir dir;
  dir.write("dup.json", "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"stage\": 3\n  }\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("dup.yaml", gpt2_scenario("dup.json"))),
                      Contains("dup.json:4: stage: duplicate JSON key (first at line 3)"));
}

TEST_CASE(
    "load_scenario: a ds_config with fp16 and bf16 both disabled, or both left out of a raw DeepSpeed config, "
    "is fp32 training, with a note",
    "[scenario][unit]") {
  // DeepSpeed with neither fp16 nor bf16 enabled trains in fp32 (engine.py: no FP16/BF16 wrapper, communication
  // data type fp32; FP16_ENABLED_DEFAULT and BFLOAT16_ENABLED_DEFAULT are False). Both sections left out of an HF
  // Trainer config (one with "auto" values) keep the scenario's training.precision: accelerate adds the section of
  // --bf16 / --fp16.
  FixtureDir dir;
  dir.write("off.json", "{\n  \"bf16\": {\"enabled\": false},\n  \"fp16\": {\"enabled\": false}\n}\n");
  const Scenario s = load_one(dir.write("off.yaml", gpt2_scenario("off.json")));
  CHECK(s.training.precision == Precision::FP32);
  CHECK(s.import_notes == std::vector<std::string>{"ds_config enables neither fp16 nor bf16: DeepSpeed trains in fp32 "
                                                   "without mixed precision (no loss scaling, no fp32 master copy at "
                                                   "stage 0): simulated as fp32"});
  // The scenario's own training.precision wins over the ds_config's, and then the fp32 note is not given.
  const Scenario own = load_one(dir.write("own.yaml", gpt2_scenario("off.json", "", "  precision: bf16\n")));
  CHECK(own.training.precision == Precision::BF16);
  CHECK(std::none_of(own.import_notes.begin(), own.import_notes.end(),
                     [](const std::string& n) { return n.rfind("ds_config enables neither", 0) == 0; }));
  dir.write("none.json", "{\"zero_optimization\": {\"stage\": 2}}");
  const Scenario none = load_one(dir.write("none.yaml", gpt2_scenario("none.json")));
  CHECK(none.training.precision == Precision::FP32);
  REQUIRE(none.import_notes.size() == 1);
  CHECK_THAT(none.import_notes[0], Contains("enables neither fp16 nor bf16") && Contains("raw DeepSpeed config"));
  // The scenario's training.precision wins, with neither the fp32 note nor an override note.
  const Scenario said = load_one(dir.write("said.yaml", gpt2_scenario("none.json", "", "  precision: fp16\n")));
  CHECK(said.training.precision == Precision::FP16);
  CHECK(said.import_notes.empty());
  // An HF Trainer config (an "auto" value) without either section: the scenario's precision (default bf16).
  dir.write("hf.json", "{\"train_micro_batch_size_per_gpu\": \"auto\", \"zero_optimization\": {\"stage\": 2}}");
  const Scenario hf = load_one(dir.write("hf.yaml", gpt2_scenario("hf.json")));
  CHECK(hf.training.precision == Precision::BF16);
  CHECK(std::none_of(hf.import_notes.begin(), hf.import_notes.end(),
                     [](const std::string& n) { return n.rfind("ds_config enables neither", 0) == 0; }));
}

TEST_CASE("load_scenario: a ds_config fp16 or bf16 enabled auto says what it was read as", "[scenario][unit]") {
  // HF Trainer fills "auto" from --fp16 / --bf16 (transformers integrations/deepspeed.py trainer_config_process); a
  // section left out stays disabled. gpt2_scenario: the default cluster, a GPU with bf16.
  FixtureDir dir;
  SECTION("fp16 \"auto\" and no bf16 section: fp16, the one precision the config can run") {
    dir.write("fa.json", "{\n  \"fp16\": {\"enabled\": \"auto\"}\n}\n");
    const Scenario s = load_one(dir.write("fa.yaml", gpt2_scenario("fa.json")));
    CHECK(s.training.precision == Precision::FP16);
    CHECK(s.import_notes ==
          std::vector<std::string>{
              "ds_config fp16.enabled is \"auto\" (HF Trainer fills it from --fp16): simulated as fp16, the one mixed "
              "precision the config can enable (with --bf16 or no flag DeepSpeed trains in fp32: training.precision "
              "fp32)"});
    // The scenario's own training.precision wins, and then nothing was assumed.
    const Scenario own = load_one(dir.write("fa2.yaml", gpt2_scenario("fa.json", "", "  precision: bf16\n")));
    CHECK(own.training.precision == Precision::BF16);
    CHECK(own.import_notes.empty());
  }
  SECTION("fp16 \"auto\" with bf16 disabled: fp16") {
    dir.write("fb.json", "{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": false}}");
    CHECK(load_one(dir.write("fb.yaml", gpt2_scenario("fb.json"))).training.precision == Precision::FP16);
  }
  SECTION("both \"auto\": the scenario's precision, named") {
    dir.write("both.json", "{\"fp16\": {\"enabled\": \"auto\"}, \"bf16\": {\"enabled\": \"auto\"}}");
    const Scenario s = load_one(dir.write("both.yaml", gpt2_scenario("both.json")));
    CHECK(s.training.precision == Precision::BF16);
    REQUIRE(s.import_notes.size() == 1);
    CHECK_THAT(s.import_notes[0], Contains("fp16.enabled and bf16.enabled are \"auto\"") &&
                                      Contains("simulated as bf16 (training.precision's default)"));
    const Scenario v100 = load_one(dir.write("bothv.yaml", gpt2_scenario("both.json")), {"cluster.topology=dgx2-v100"});
    CHECK(v100.training.precision == Precision::FP16);
    REQUIRE(v100.import_notes.size() == 1);
    CHECK_THAT(v100.import_notes[0], Contains("simulated as fp16 (GPU 'v100-32gb' has no bf16)"));
  }
  SECTION("bf16 \"auto\" alone on a GPU without bf16 is the bf16 error at its line") {
    dir.write("ba.json", "{\"zero_optimization\": {\"stage\": 2},\n  \"bf16\": {\"enabled\": \"auto\"}}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("ba.yaml", gpt2_scenario("ba.json")), {"cluster.topology=dgx2-v100"}),
                        Contains("ba.json:2: bf16.enabled: bf16 needs bf16 tensor cores"));
  }
}

TEST_CASE("load_scenario: a key set both in the ds_config and the scenario or --set says which won and why",
          "[scenario][unit]") {
  // "Keys written here win" over an imported ds_config (docs: scenario reference, zero.deepspeed_config); newuser22
  // finding 6: a scenario's stage 2 silently replaced the ds_config's stage 3. Every key the import sets goes through
  // one rule: a different value from the scenario file, a compare value or --set wins and leaves one note naming
  // both values and where they were written; the same value is no conflict and leaves none.
  FixtureDir dir;
  dir.write("ds.json",
            "{\n"
            "  \"train_micro_batch_size_per_gpu\": 2,\n" // line 2
            "  \"gradient_accumulation_steps\": 4,\n" // line 3
            "  \"bf16\": {\"enabled\": true},\n" // line 4
            "  \"zero_optimization\": {\n" // line 5
            "    \"stage\": 3,\n" // line 6
            "    \"reduce_bucket_size\": \"auto\",\n" // line 7
            "    \"overlap_comm\": true,\n" // line 8
            "    \"offload_optimizer\": {\"device\": \"cpu\"}\n" // line 9
            "  },\n  \"optimizer\": {\"type\": \"AdamW\"}\n}\n"); // DeepSpeedCPUAdam under the offload
  const std::string sc = dir.write("ov.yaml",
                                   "name: ov\n" // line 1
                                   "model: gpt2\n" // line 2
                                   "training:\n" // line 3
                                   "  seq_len: 128\n" // line 4
                                   "  micro_batch: 1\n" // line 5
                                   "  grad_accum: 4\n" // line 6 (same as ds)
                                   "zero:\n" // line 7
                                   "  deepspeed_config: ds.json\n" // line 8
                                   "  stage: 2\n" // line 9
                                   "  offload_optimizer: none\n"); // line 10
  const Scenario s = load_one(sc, {"zero.reduce_bucket_size=5e8"});
  CHECK(s.zero.stage == 2);
  CHECK(s.training.micro_batch == 1);
  CHECK(s.zero.offload_optimizer == OffloadDevice::NONE);
  CHECK(s.zero.reduce_bucket_size == 500000000); // the --set, over "auto" = h^2 = 768^2 = 589824 for GPT-2 small
  const std::string tail = ": a key given in the scenario or with --set wins over the imported ds_config";
  const std::vector<std::string> want = {
      "training.micro_batch 1 (ov.yaml:5) overrides 2 from the ds_config's train_micro_batch_size_per_gpu (ds.json:2)" +
          tail,
      "zero.stage 2 (ov.yaml:9) overrides 3 from the ds_config's zero_optimization.stage (ds.json:6)" + tail,
      "zero.offload_optimizer none (ov.yaml:10) overrides cpu from the ds_config's zero_optimization.offload_optimizer "
      "(ds.json:9)" +
          tail,
      "zero.reduce_bucket_size 5e8 (--set) overrides \"auto\" (= 589824) from the ds_config's "
      "zero_optimization.reduce_bucket_size (ds.json:7)" +
          tail,
  };
  std::vector<std::string> got;
  for (const std::string& n : s.import_notes)
    if (n.find("overrides") != std::string::npos)
      got.push_back(n);
  std::sort(got.begin(), got.end());
  std::vector<std::string> sorted_want = want;
  std::sort(sorted_want.begin(), sorted_want.end());
  CHECK(got == sorted_want); // grad_accum 4 = 4, overlap_comm and bf16 not written again: no note
  // Without the scenario's keys: nothing overridden, no note.
  const std::string plain = dir.write("plain.yaml", gpt2_scenario("ds.json"));
  for (const std::string& n : load_one(plain).import_notes)
    CHECK(n.find("overrides") == std::string::npos);
  // A --set over a key the ds_config set, the scenario file not: named as --set.
  const Scenario p = load_one(plain, {"training.precision=fp16"});
  REQUIRE(!p.import_notes.empty());
  CHECK(std::count_if(p.import_notes.begin(), p.import_notes.end(), [](const std::string& n) {
          return n.rfind("training.precision fp16 (--set) overrides bf16 from the ds_config's bf16.enabled (ds.json:4)",
                         0) == 0;
        }) == 1);
}

TEST_CASE("load_scenario: every combination of ds_config bf16 and fp16 enabled true, false, auto or absent",
          "[scenario][unit]") {
  // HF Trainer (transformers src/transformers/integrations/deepspeed.py, trainer_config_process) fills an "auto"
  // fp16.enabled from --fp16 and bf16.enabled from --bf16 and refuses a written true/false that its flag contradicts
  // (fill_match, must_match); a section left out is not checked and stays off. At most one flag is given. DeepSpeed
  // then trains in the enabled precision, fp32 with none, and refuses both. So, per flag:
  //   bf16    fp16    | --bf16   --fp16   no flag | simulated   note says
  //   auto    auto    | bf16     fp16     fp32    | scenario's  both auto; set training.precision
  //   auto    absent  | bf16     fp32     fp32    | bf16        --fp16 or no flag: fp32
  //   auto    false   | bf16     refused  fp32    | bf16        --fp16 contradicts fp16.enabled: false
  //   auto    true    | refused  fp16     refused | fp16        only --fp16 matches fp16.enabled: true
  //   absent  auto    | fp32     fp16     fp32    | fp16        --bf16 or no flag: fp32
  //   false   auto    | refused  fp16     fp32    | fp16        --bf16 contradicts bf16.enabled: false
  //   true    auto    | bf16     refused  refused | bf16        only --bf16 matches (newuser22: not "fp32")
  //   true    true    | DeepSpeed error: both enabled
  //   false   false   | fp32 whatever the flag (also one false, the other absent) | fp32, with a note
  //   others (no auto)| the enabled one, no note; both sections left out: fp32 (a raw DeepSpeed config), noted
  // gpt2_scenario: the default cluster, a GPU with bf16, so the scenario's precision defaults to bf16.
  struct Row {
    const char* bf16; ///< the bf16 section's "enabled" as JSON, or nullptr for no section
    const char* fp16;
    const char* precision; ///< simulated, or nullptr when the load is refused
    std::vector<const char*> note; ///< fragments of the one note; empty: no note
    std::vector<const char*> not_in_note;
  };
  const std::vector<Row> table = {
      {"\"auto\"",
       "\"auto\"",
       "bf16",
       {"are \"auto\"", "with neither flag DeepSpeed trains in fp32", "training.precision's default",
        "set training.precision"},
       {}},
      {"\"auto\"",
       nullptr,
       "bf16",
       {"bf16.enabled is \"auto\"", "with --fp16 or no flag DeepSpeed trains in fp32"},
       {"refuses"}},
      {"\"auto\"",
       "false",
       "bf16",
       {"--fp16 contradicts fp16.enabled: false", "with no flag DeepSpeed trains in fp32"},
       {"with --fp16 or"}},
      {"\"auto\"", "true", "fp16", {"fp16.enabled is true and bf16.enabled \"auto\"", "only --fp16 matches"}, {"fp32"}},
      {nullptr,
       "\"auto\"",
       "fp16",
       {"fp16.enabled is \"auto\"", "with --bf16 or no flag DeepSpeed trains in fp32"},
       {"refuses"}},
      {"false",
       "\"auto\"",
       "fp16",
       {"--bf16 contradicts bf16.enabled: false", "with no flag DeepSpeed trains in fp32"},
       {"with --bf16 or"}},
      {"true", "\"auto\"", "bf16", {"bf16.enabled is true and fp16.enabled \"auto\"", "only --bf16 matches"}, {"fp32"}},
      {"true", "true", nullptr, {}, {}},
      {"false", "false", "fp32", {"enables neither fp16 nor bf16", "without mixed precision"}, {}},
      {"true", "false", "bf16", {}, {}},
      {"false", "true", "fp16", {}, {}},
      {"true", nullptr, "bf16", {}, {}},
      {nullptr, "true", "fp16", {}, {}},
      {"false", nullptr, "fp32", {"enables neither fp16 nor bf16"}, {}}, // one written false: fp32
      {nullptr, "false", "fp32", {"enables neither fp16 nor bf16"}, {}},
      {nullptr, nullptr, "fp32", {"enables neither fp16 nor bf16", "raw DeepSpeed config"}, {}},
  };
  FixtureDir dir;
  int i = 0;
  for (const Row& r : table) {
    // A section per line, as HF's example configs are written: the note follows the section that was applied, by
    // its line (on one line every section shares it, which hid newuser29 #22's lost note).
    std::string json = "{\"zero_optimization\": {\"stage\": 1}";
    if (r.bf16)
      json += ",\n\"bf16\": {\"enabled\": " + std::string(r.bf16) + "}";
    if (r.fp16)
      json += ",\n\"fp16\": {\"enabled\": " + std::string(r.fp16) + "}";
    json += "\n}";
    const std::string name = "p" + std::to_string(i++);
    dir.write(name + ".json", json);
    const std::string sc = dir.write(name + ".yaml", gpt2_scenario(name + ".json"));
    INFO(json);
    if (!r.precision) {
      CHECK_THROWS_AS(load_scenario(sc), ScenarioError);
      continue;
    }
    const Scenario s = load_one(sc);
    CHECK(to_string(s.training.precision) == std::string(r.precision));
    if (r.note.empty()) {
      CHECK(s.import_notes.empty());
      continue;
    }
    REQUIRE(s.import_notes.size() == 1);
    INFO(s.import_notes[0]);
    CHECK_THAT(s.import_notes[0], Contains(std::string("simulated as ") + r.precision));
    for (const char* f : r.note)
      CHECK_THAT(s.import_notes[0], Contains(f));
    for (const char* f : r.not_in_note)
      CHECK_THAT(s.import_notes[0], !Contains(f));
  }
}

TEST_CASE("load_scenario: a ds_config train_batch_size is micro-batch x GA x GPUs: checked, or the missing one derived",
          "[scenario][unit]") {
  // DeepSpeed runtime/config.py _set_batch_related_parameters. gpt2_scenario: one GPU (the default cluster).
  FixtureDir dir;
  const auto with = [&](const std::string& name, const std::string& json) {
    dir.write(name + ".json", json);
    return load_one(dir.write(name + ".yaml", gpt2_scenario(name + ".json")));
  };
  const Scenario all = with("all", R"({"train_batch_size": 4, "train_micro_batch_size_per_gpu": 2,
  "gradient_accumulation_steps": 2})");
  CHECK(all.training.micro_batch * all.training.grad_accum == 4);
  const Scenario ga = with("ga", R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2})");
  CHECK(ga.training.grad_accum == 32); // 64 / (2 x 1)
  const Scenario mb = with("mb", R"({"train_batch_size": 64, "gradient_accumulation_steps": 4})");
  CHECK(mb.training.micro_batch == 16); // 64 / (4 x 1)
  const Scenario only = with("only", R"({"train_batch_size": 8})");
  CHECK(only.training.grad_accum == 1);
  CHECK(only.training.micro_batch == 8);
  CHECK_NOTHROW(with("auto", R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 2})"));
  dir.write("bad.json",
            "{\n  \"train_batch_size\": 64,\n  \"train_micro_batch_size_per_gpu\": 2,\n"
            "  \"gradient_accumulation_steps\": 2\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                      Contains(
                          "bad.json:2: train_batch_size: 64 is not micro_batch x grad_accum x GPUs = 2 x 2 x 1 = 4"));
  dir.write("odd.json", "{\"train_batch_size\": 7, \"train_micro_batch_size_per_gpu\": 2}");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("odd.yaml", gpt2_scenario("odd.json"))),
                      Contains("odd.json:1: train_batch_size: 7 is not a multiple of 2"));
}

TEST_CASE("load_scenario: training.train_batch_size derives GA per GPU count, as DeepSpeed's train_batch_size does",
          "[scenario][unit]") {
  // 512 sequences, micro-batch 2: GA = 512 / (2 x N_d): 32 on 8 GPUs (one dgx-a100), 16 on 16 (two nodes) -- what a
  // sweep over cluster.nodes needs to keep the global batch.
  FixtureDir dir;
  const std::string sc = dir.write("tbs.yaml", gpt2_scenario("", "", "  micro_batch: 2\n  train_batch_size: 512\n"));
  CHECK(load_one(sc, {"cluster.topology=dgx-a100"}).training.grad_accum == 32);
  CHECK(load_one(sc, {"cluster.topology=dgx-a100", "cluster.nodes=2"}).training.grad_accum == 16);
  // Not a multiple: the key and its line.
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.topology=dgx-a100", "cluster.nodes=3"}),
                      Contains("tbs.yaml:6: training.train_batch_size: 512 is not a multiple of 48"));
  // With a ds_config's train_batch_size too, they must agree.
  dir.write("ds.json", "{\"train_batch_size\": 64}");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("both.yaml", gpt2_scenario("ds.json", "", "  train_batch_size: 512\n"))),
                      Contains("training.train_batch_size: 512 differs from the ds_config's train_batch_size 64"));
}

TEST_CASE("load_scenario: the advice of a train_batch_size that is not micro_batch x GA x GPUs loads as written",
          "[scenario][unit]") {
  // The user's case (newuser22 finding 8): micro_batch 1, grad_accum 4 on one DGX A100 (8 GPUs) = 32 sequences, and
  // --set training.train_batch_size 96 or 100. Each "key: value" of the advice, given back as --set key=value, must
  // load: 96 = 1 x 12 x 8 (grad_accum 12) = 3 x 4 x 8 (micro_batch 3), 32 = 1 x 4 x 8, and 0 = no global batch.
  // 100 is no multiple of 8 (nor of 32), so neither grad_accum nor micro_batch is offered. (The old advice,
  // train_batch_size "auto", is a ds_config spelling the scenario key rejects.)
  FixtureDir dir;
  const std::string sc = dir.write("tb.yaml", gpt2_scenario("", "cluster:\n  topology: dgx-a100\n",
                                                            "  micro_batch: 1\n  grad_accum: 4\n"));
  const auto advice_of = [&](const std::string& tbs) {
    std::string msg;
    try {
      (void)load_scenario(sc, {"training.train_batch_size=" + tbs});
    } catch (const ScenarioError& e) {
      msg = e.what();
    }
    INFO(msg);
    REQUIRE_THAT(msg, Contains(tbs + " is not micro_batch x grad_accum x GPUs = 1 x 4 x 8 = 32"));
    // "key: value" pairs after "; set ": training.grad_accum: 12, training.train_batch_size: 32 (or 0, ...)
    std::vector<std::pair<std::string, std::string>> out;
    const std::string hint = msg.substr(msg.find("; set "));
    for (std::size_t p = hint.find("training."); p != std::string::npos; p = hint.find("training.", p + 1)) {
      const std::size_t colon = hint.find(": ", p);
      std::size_t end = colon + 2;
      while (end < hint.size() && std::isdigit(static_cast<unsigned char>(hint[end])))
        ++end;
      out.emplace_back(hint.substr(p, colon - p), hint.substr(colon + 2, end - colon - 2));
    }
    return out;
  };
  using KV = std::vector<std::pair<std::string, std::string>>;
  const KV a96 = advice_of("96");
  CHECK(a96 == KV{{"training.grad_accum", "12"}, {"training.micro_batch", "3"}, {"training.train_batch_size", "32"}});
  for (const auto& [k, v] : a96) {
    const Scenario s = load_one(sc, {"training.train_batch_size=96", k + "=" + v});
    CHECK(s.training.micro_batch * s.training.grad_accum * 8 == s.training.train_batch_size);
  }
  CHECK(load_one(sc, {"training.train_batch_size=0"}).training.grad_accum == 4); // "or 0": no global batch
  CHECK(advice_of("100") == KV{{"training.train_batch_size", "32"}});
  // From a ds_config: its train_batch_size may be "auto" (HF Trainer fills it in) or the product.
  dir.write("tb.json",
            "{\"train_batch_size\": 100, \"train_micro_batch_size_per_gpu\": 1,\n"
            " \"gradient_accumulation_steps\": 4}\n");
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("tbd.yaml", gpt2_scenario("tb.json", "cluster:\n  topology: dgx-a100\n"))),
                      Contains("set \"train_batch_size\": 32 or \"auto\" in tb.json"));
  dir.write("tb.json",
            "{\"train_batch_size\": \"auto\", \"train_micro_batch_size_per_gpu\": 1,\n"
            " \"gradient_accumulation_steps\": 4}\n");
  CHECK(load_one((dir.path() / "tbd.yaml").string()).training.grad_accum == 4);
}

TEST_CASE("load_scenario: a trainable_fraction that leaves no tensor a trainable element is an error",
          "[scenario][unit]") {
  // GPT-2 small: the largest tensor is wte, 50257 x 768 = 38,597,376 elements; round(f x n) = 0 below f = 0.5 / n
  // = 1.3e-8. 1e-8 leaves 0 everywhere (an error); 2e-8 leaves wte 1 element (accepted).
  FixtureDir dir;
  const std::string sc = dir.write("lora.yaml", gpt2_scenario());
  REQUIRE_THROWS_WITH(load_scenario(sc, {"training.trainable_fraction=1e-8"}),
                      Contains("training.trainable_fraction: 1e-08 leaves no parameter trainable") &&
                          Contains("the largest has 38597376 elements"));
  CHECK_NOTHROW(load_scenario(sc, {"training.trainable_fraction=2e-8"}));
}

TEST_CASE("load_scenario: a DeepSpeed config given as the model says where it belongs", "[scenario][unit]") {
  // A user passed ds_config.json to plan --model: no model_type, but zero_optimization.
  FixtureDir dir;
  dir.write("ds.json", "{\n  \"zero_optimization\": {\"stage\": 2}\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("a.yaml", "name: a\nmodel: ds.json\n")),
                      Contains("ds.json: model.model_type: expected a string model_type") &&
                          Contains("this is a DeepSpeed config") && Contains("zero.deepspeed_config"));
  // Any other JSON without model_type gets no such hint.
  dir.write("other.json", "{\"hidden_size\": 8}");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("b.yaml", "name: b\nmodel: other.json\n")),
                      Contains("expected a string model_type") && !Contains("DeepSpeed config"));
}

TEST_CASE("load_scenario: a DeepSpeed key in a scenario is an unknown key, a ds_config as the scenario is named",
          "[scenario][unit]") {
  // Review 28 finding 1: a scenario with one stray top-level gradient_accumulation_steps was called "a DeepSpeed
  // config, not a scenario". A file with a scenario's own top-level key (name, model, ...) is a scenario.
  FixtureDir dir;
  const std::string stray = dir.write("t1.yaml",
                                      "name: t1\nmodel: gpt2\ntraining: {micro_batch: 1}\n"
                                      "cluster: {topology: one-rtx4090}\ngradient_accumulation_steps: 4\n");
  REQUIRE_THROWS_WITH(load_scenario(stray), Contains("t1.yaml:5: gradient_accumulation_steps: unknown key") &&
                                                Contains("did you mean 'training.grad_accum'?") &&
                                                Contains("ds_config") && !Contains("not a scenario"));
  // Any scenario key makes it a scenario, even alone: zero_optimization is then an unknown key at its line.
  const std::string named = dir.write("t2.yaml", "model: gpt2\nzero_optimization: {stage: 2}\n");
  REQUIRE_THROWS_WITH(load_scenario(named), Contains("t2.yaml:2: zero_optimization: unknown key") &&
                                                Contains("zero:") && !Contains("not a scenario"));
  // A DeepSpeed config (only DeepSpeed keys) given as the scenario is named as one, at its first DeepSpeed key.
  const std::string ds =
      dir.write("ds.json", "{\n  \"train_batch_size\": 8,\n  \"gradient_accumulation_steps\": 4\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(ds), Contains("ds.json:2: train_batch_size: this is a DeepSpeed config, not a "
                                                  "scenario") &&
                                             Contains("zero: {deepspeed_config: ds.json}"));
}

TEST_CASE("load_scenario: a Hugging Face argument name as a key names zerosim's key, not the nearest spelling",
          "[scenario][unit]") {
  // newuser29 #5: by edit distance gradient_checkpointing is nearest to gradient_clipping (another feature) and
  // per_device_train_batch_size to train_batch_size (the global batch); HF's names are mapped to the keys that set
  // the same thing.
  FixtureDir dir;
  const std::string f = dir.write("hf.yaml",
                                  "name: hf\nmodel: gpt2\ntraining: {micro_batch: 1,\n"
                                  "  gradient_checkpointing: true}\ncluster: {topology: one-rtx4090}\n");
  REQUIRE_THROWS_WITH(load_scenario(f), Contains("hf.yaml:4: training.gradient_checkpointing: unknown key") &&
                                            Contains("did you mean 'training.activation_checkpointing'?") &&
                                            !Contains("gradient_clipping"));
  const std::string base = dir.write("b.yaml", "name: b\nmodel: gpt2\ncluster: {topology: one-rtx4090}\n");
  REQUIRE_THROWS_WITH(load_scenario(base, {"training.per_device_train_batch_size=2"}),
                      Contains("did you mean 'training.micro_batch'?") && !Contains("train_batch_size'"));
  REQUIRE_THROWS_WITH(load_scenario(base, {"training.bf16=true"}),
                      Contains("did you mean 'training.precision: bf16'?"));
  REQUIRE_THROWS_WITH(load_scenario(base, {"max_seq_length=2048"}), Contains("did you mean 'training.seq_len'?"));
  // Another misspelling still gets the nearest key.
  REQUIRE_THROWS_WITH(load_scenario(base, {"training.micro_bach=2"}), Contains("did you mean 'training.micro_batch'?"));
}

TEST_CASE("load_scenario: a scenario read from a pipe needs name:, its '63' is no name", "[scenario][unit]") {
  // Review 28: `zerosim run <(printf 'model: gpt2\n')` reads /dev/fd/63 and named the run '63' (out/63). Here a pipe
  // of this process, read through /dev/fd/<n> as the shell's process substitution is.
  const auto through_pipe = [](const std::string& text) {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fds[1]);
    std::string what;
    std::string name;
    try {
      name = load_scenario("/dev/fd/" + std::to_string(fds[0])).at(0).scenario.name;
    } catch (const std::exception& e) {
      what = e.what();
    }
    ::close(fds[0]);
    return std::pair{name, what};
  };
  const auto [unnamed, error] = through_pipe("model: gpt2\n");
  CHECK(unnamed.empty());
  CHECK_THAT(error, Contains("name: required key missing: /dev/fd/") && Contains("is no regular file") &&
                        Contains("e.g. 'name: my-run'"));
  const auto [named, none] = through_pipe("name: piped\nmodel: gpt2\n");
  INFO(none);
  CHECK(named == "piped");
}

TEST_CASE("load_scenario: Hugging Face config.json names and position limits", "[scenario][unit]") {
  FixtureDir dir;
  const std::string gpt2 = R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
    "vocab_size": 50257, "n_positions": 1024)";
  const std::string llama = R"({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
    "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000,
    "max_position_embeddings": 2048)";
  SECTION("name: _name_or_path, else the directory and file read, with the model_type") {
    dir.write("ckpt/my-gpt2/config.json", gpt2 + ", \"_name_or_path\": \"openai-community/gpt2\"}");
    CHECK(load_one(dir.write("a.yaml", "name: a\nmodel: ckpt/my-gpt2/config.json\ntraining:\n  seq_len: 128\n"))
              .model.name == "openai-community/gpt2");
    dir.write("ckpt/my-gpt2/plain.json", gpt2 + "}");
    CHECK(load_one(dir.write("b.yaml", "name: b\nmodel: ckpt/my-gpt2/plain.json\ntraining:\n  seq_len: 128\n"))
              .model.name == "my-gpt2/plain.json (gpt2)");
    // A config.json beside a scenario given by a relative path (`zerosim run my.yaml`): the directory's own name,
    // not "." or "config".
    dir.write("tiny-gpt/config.json", gpt2 + "}");
    dir.write("tiny-gpt/my.yaml", "name: c\nmodel: config.json\ntraining:\n  seq_len: 128\n");
    const fs::path cwd = fs::current_path();
    fs::current_path(dir.path() / "tiny-gpt");
    std::string name;
    try {
      name = load_one("my.yaml").model.name;
    } catch (...) {
      fs::current_path(cwd);
      throw;
    }
    fs::current_path(cwd);
    CHECK(name == "tiny-gpt/config.json (gpt2)");
  }
  SECTION("gpt2: seq_len beyond n_positions (or its alias max_position_embeddings) is rejected") {
    dir.write("g/config.json", gpt2 + "}");
    REQUIRE_THROWS_WITH(load_scenario(
                            dir.write("g.yaml", "name: g\nmodel: g/config.json\ntraining:\n  seq_len: 2048\n")),
                        Contains("g.yaml:4: training.seq_len: seq_len 2048 exceeds the model's max_positions 1024"));
    dir.write("h/config.json", R"({"model_type": "gpt2", "n_embd": 768, "n_layer": 12, "n_head": 12,
      "vocab_size": 50257, "max_position_embeddings": 512})");
    const std::string h = dir.write("h.yaml", "name: h\nmodel: h/config.json\ntraining:\n  seq_len: 512\n");
    CHECK(load_one(h).model.max_positions == 512);
    REQUIRE_THROWS_WITH(load_scenario(h, {"training.seq_len=1024"}), Contains("exceeds the model's max_positions 512"));
  }
  SECTION("a model path that does not exist is named as a path, not as an unknown preset") {
    REQUIRE_THROWS_WITH(load_scenario(dir.write("np.yaml", "name: k\nmodel: no/such/dir\n")),
                        Contains("np.yaml:2: model: 'no/such/dir' is neither a model preset nor a readable Hugging "
                                 "Face config.json"));
  }
  SECTION("an absent num_key_value_heads takes the config class's default: Llama = heads, Mistral 8, Qwen2 32") {
    // transformers: LlamaConfig(num_key_value_heads=None) -> num_attention_heads; MistralConfig(..., 8);
    // Qwen2Config(..., 32). Mistral-7B-v0.1 dims without the key count the checkpoint's 7,241,732,096 parameters.
    const std::string dims = R"({"hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
      "num_hidden_layers": 32, "vocab_size": 32000, "model_type": ")";
    dir.write("kl/config.json", dims + R"(llama"})");
    dir.write("km/config.json", dims + R"(mistral"})");
    dir.write("kq/config.json", dims + R"(qwen2"})");
    const Scenario kl = load_one(dir.write("kl.yaml", "name: k\nmodel: kl/config.json\n"));
    CHECK(kl.model.kv_heads == 32);
    CHECK(std::count(kl.import_notes.begin(), kl.import_notes.end(),
                     "num_key_value_heads is missing from config.json, so LlamaConfig's default num_attention_heads "
                     "(32, multi-head attention) applies; add num_key_value_heads if the checkpoint uses "
                     "grouped-query attention") == 1);
    // model.kv_heads given on the command line or in the scenario: that value is used, and the note about the
    // config class's default is not printed.
    const auto kv_note = [](const Scenario& s) {
      return std::count_if(s.import_notes.begin(), s.import_notes.end(), [](const std::string& n) {
        return n.find("num_key_value_heads is missing") != std::string::npos;
      });
    };
    const Scenario kls = load_one(dir.write("kls.yaml", "name: k\nmodel: kl/config.json\n"), {"model.kv_heads=8"});
    CHECK(kls.model.kv_heads == 8);
    CHECK(kv_note(kls) == 0);
    const Scenario kly = load_one(dir.write("kly.yaml", "name: k\nmodel:\n  preset: kl/config.json\n  kv_heads: 8\n"));
    CHECK(kly.model.kv_heads == 8);
    CHECK(kv_note(kly) == 0);
    CHECK(load_one(dir.write("km.yaml", "name: k\nmodel: km/config.json\n")).model.kv_heads == 8);
    CHECK(load_one(dir.write("kq.yaml", "name: k\nmodel: kq/config.json\n")).model.kv_heads == 32);
  }
  SECTION("kv_heads errors of a config.json name its line, and an absent key names the class default") {
    // Qwen2.5-1.5B's dims (12 heads) on lines 2-6: Qwen2Config's default 32 KV heads does not divide 12.
    const std::string dims =
        "{\"model_type\": \"qwen2\",\n\"hidden_size\": 1536,\n\"intermediate_size\": 8960,\n"
        "\"num_attention_heads\": 12,\n\"num_hidden_layers\": 28,\n\"vocab_size\": 151936";
    dir.write("nokv/config.json", dims + "}");
    REQUIRE_THROWS_WITH(load_one(dir.write("nokv.yaml", "name: k\nmodel: nokv/config.json\n")),
                        Contains("config.json:1: model.kv_heads: kv_heads (32) must divide heads (12); "
                                 "num_key_value_heads is missing from config.json, so Qwen2Config's default 32 "
                                 "applies"));
    dir.write("badkv/config.json", dims + ",\n\"num_key_value_heads\": 7}");
    REQUIRE_THROWS_WITH(load_one(dir.write("badkv.yaml", "name: k\nmodel: badkv/config.json\n")),
                        Contains("config.json:7: model.kv_heads: kv_heads (7) must divide heads (12)") &&
                            !Contains("default"));
    // --set model.kv_heads replaces the default: the error is the command line's, without the default's sentence.
    REQUIRE_THROWS_WITH(load_one(dir.write("setkv.yaml", "name: k\nmodel: nokv/config.json\n"), {"model.kv_heads=5"}),
                        Contains("<cli>: model.kv_heads: kv_heads (5) must divide heads (12)") && !Contains("default"));
    // heads must divide hidden: the line of num_attention_heads.
    dir.write("badh/config.json",
              "{\"model_type\": \"llama\",\n\"hidden_size\": 1536,\n\"intermediate_size\": 8960,"
              "\n\"num_attention_heads\": 7,\n\"num_hidden_layers\": 28,\n\"vocab_size\": 151936}");
    REQUIRE_THROWS_WITH(load_one(dir.write("badh.yaml", "name: k\nmodel: badh/config.json\n")),
                        Contains("config.json:4: model.heads: heads (7) must divide hidden (1536)"));
  }
  SECTION("sliding_window: mistral's is read (null = none), qwen2's only with use_sliding_window") {
    const std::string base = R"({"hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
      "num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000)";
    dir.write("m/config.json", base + R"(, "model_type": "mistral", "sliding_window": 4096})");
    CHECK(load_one(dir.write("m.yaml", "name: m\nmodel: m/config.json\ntraining:\n  seq_len: 8192\n"))
              .model.sliding_window == 4096);
    dir.write("n/config.json", base + R"(, "model_type": "mistral", "sliding_window": null})");
    CHECK(load_one(dir.write("n.yaml", "name: n\nmodel: n/config.json\n")).model.sliding_window == 0);
    dir.write("z/config.json", base + R"(, "model_type": "mistral", "sliding_window": 0})");
    CHECK(load_one(dir.write("z.yaml", "name: z\nmodel: z/config.json\n")).model.sliding_window == 0);
    dir.write("q/config.json", base + R"(, "model_type": "qwen2", "sliding_window": 4096})");
    CHECK(load_one(dir.write("q.yaml", "name: q\nmodel: q/config.json\n")).model.sliding_window == 0);
    dir.write("r/config.json",
              base + R"(, "model_type": "qwen2", "use_sliding_window": true, "sliding_window": 4096})");
    CHECK(load_one(dir.write("r.yaml", "name: r\nmodel: r/config.json\n")).model.sliding_window == 4096);
    // Qwen2Config.max_window_layers: the first layer that uses the window; default 28; Mistral's apply to all.
    CHECK(load_one(dir.write("r2.yaml", "name: r\nmodel: r/config.json\n")).model.max_window_layers == 28);
    dir.write("s/config.json", base + R"(, "model_type": "qwen2", "use_sliding_window": true, "sliding_window": 4096,
      "max_window_layers": 21})");
    CHECK(load_one(dir.write("s.yaml", "name: s\nmodel: s/config.json\n")).model.max_window_layers == 21);
    CHECK(load_one(dir.write("m2.yaml", "name: m\nmodel: m/config.json\n")).model.max_window_layers == 0);
    // 0: every layer uses the window.
    dir.write("t/config.json", base + R"(, "model_type": "qwen2", "use_sliding_window": true, "sliding_window": 4096,
      "max_window_layers": 0})");
    CHECK(load_one(dir.write("t.yaml", "name: t\nmodel: t/config.json\n")).model.max_window_layers == 0);
  }
  SECTION("opt: OPTConfig names are read, a projected embedding (OPT-350m) is refused") {
    const std::string opt = R"({"model_type": "opt", "hidden_size": 2048, "num_hidden_layers": 24,
      "num_attention_heads": 32, "ffn_dim": 8192, "vocab_size": 50272, "max_position_embeddings": 2048,
      "word_embed_proj_dim": 2048, "activation_function": "relu")";
    dir.write("o/config.json", opt + "}");
    const Scenario s = load_one(dir.write("o.yaml", "name: o\nmodel: o/config.json\n"));
    CHECK(s.model.family == ModelFamily::OPT);
    CHECK(s.model.intermediate == 8192);
    CHECK(s.model.max_positions == 2048);
    CHECK(s.model.tied_embeddings);
    dir.write("p/config.json", R"({"model_type": "opt", "hidden_size": 1024, "num_hidden_layers": 24,
      "num_attention_heads": 16, "ffn_dim": 4096, "vocab_size": 50272, "max_position_embeddings": 2048,
      "word_embed_proj_dim": 512})");
    REQUIRE_THROWS_WITH(load_one(dir.write("p.yaml", "name: p\nmodel: p/config.json\n")),
                        Contains("config.json:3: model.word_embed_proj_dim: an embedding projected"));
    dir.write("nb/config.json", opt + R"(, "enable_bias": false})");
    REQUIRE_THROWS_WITH(load_one(dir.write("nb.yaml", "name: o\nmodel: nb/config.json\n")),
                        Contains("model.enable_bias: is false: this OPT variant is not modelled"));
    // OPT has neither grouped-query nor sliding-window attention.
    REQUIRE_THROWS_WITH(load_one(dir.write("kv.yaml", "name: o\nmodel: o/config.json\n"), {"model.kv_heads=8"}),
                        Contains("family opt has no grouped-query attention"));
    // An inline OPT without max_positions: the error points at the family line (line 3).
    REQUIRE_THROWS_WITH(load_one(dir.write("mp.yaml",
                                           "name: o\nmodel:\n  family: opt\n  hidden: 64\n  layers: 2\n  heads: 4\n"
                                           "  vocab: 100\n")),
                        Contains("mp.yaml:3: model.max_positions: required for family opt"));
    REQUIRE_THROWS_WITH(load_one(dir.write("sw.yaml", "name: o\nmodel: o/config.json\n"), {"model.sliding_window=256"}),
                        Contains(
                            "model.sliding_window: is a llama-family key: opt attends to the whole causal context"));
  }
  SECTION("a Hugging Face snapshot directory stands for its config.json") {
    dir.write("snap/config.json", R"({"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
      "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000})");
    const Scenario s = load_one(dir.write("snap.yaml", "name: s\nmodel: snap\n"));
    CHECK(s.model.hidden == 2048);
    CHECK(s.model.layers == 22);
    dir.write("empty/readme.txt", "no config here");
    REQUIRE_THROWS_WITH(load_one(dir.write("empty.yaml", "name: s\nmodel: empty\n")),
                        Contains("empty.yaml:2: model: 'empty' is a directory without a config.json"));
  }
  SECTION("attention biases: qwen2 always on q/k/v, llama and mistral with attention_bias: true on all four") {
    const std::string base = R"({"hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
      "num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000)";
    dir.write("bq/config.json", base + R"(, "model_type": "qwen2"})");
    CHECK(load_one(dir.write("bq.yaml", "name: b\nmodel: bq/config.json\n")).model.attention_bias ==
          AttentionBias::QKV);
    dir.write("bl/config.json", base + R"(, "model_type": "llama", "attention_bias": true})");
    CHECK(load_one(dir.write("bl.yaml", "name: b\nmodel: bl/config.json\n")).model.attention_bias ==
          AttentionBias::QKVO);
    dir.write("bn/config.json", base + R"(, "model_type": "mistral"})");
    CHECK(load_one(dir.write("bn.yaml", "name: b\nmodel: bn/config.json\n")).model.attention_bias ==
          AttentionBias::NONE);
    // LlamaConfig's own spelling: true = all four projections.
    CHECK(load_one(dir.write("bt.yaml", "name: b\nmodel: llama-2-7b\n"), {"model.attention_bias=true"})
              .model.attention_bias == AttentionBias::QKVO);
    CHECK(load_one(dir.write("bf.yaml", "name: b\nmodel: llama-2-7b\n"), {"model.attention_bias=false"})
              .model.attention_bias == AttentionBias::NONE);
    REQUIRE_THROWS_WITH(load_one(dir.write("bg.yaml", "name: b\nmodel: gpt2\n"), {"model.attention_bias=qkv"}),
                        Contains("model.attention_bias: is a llama-family key"));
  }
  SECTION("mlp biases: llama reads mlp_bias, mistral and qwen2 layers read neither bias key (a note says so)") {
    const std::string base = R"({"hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
      "num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000)";
    dir.write("ml/config.json", base + R"(, "model_type": "llama", "mlp_bias": true})");
    Scenario s = load_one(dir.write("ml.yaml", "name: b\nmodel: ml/config.json\n"));
    CHECK(s.model.mlp_bias);
    CHECK(s.model.attention_bias == AttentionBias::NONE);
    CHECK(s.import_notes.empty());
    // MistralAttention and MistralMLP are built without biases whatever the config says.
    dir.write("mm/config.json", base + R"(, "model_type": "mistral",
      "attention_bias": true, "mlp_bias": true})");
    s = load_one(dir.write("mm.yaml", "name: b\nmodel: mm/config.json\n"));
    CHECK(!s.model.mlp_bias);
    CHECK(s.model.attention_bias == AttentionBias::NONE);
    REQUIRE(s.import_notes.size() == 2);
    CHECK_THAT(s.import_notes[0], Contains("config.json:3: attention_bias is true, but transformers' Mistral layers "
                                           "do not read it"));
    CHECK_THAT(s.import_notes[1], Contains("config.json:3: mlp_bias is true"));
    dir.write("mq/config.json", base + R"(, "model_type": "qwen2", "mlp_bias": true})");
    s = load_one(dir.write("mq.yaml", "name: b\nmodel: mq/config.json\n"));
    CHECK(!s.model.mlp_bias);
    CHECK(s.model.attention_bias == AttentionBias::QKV);
    REQUIRE(s.import_notes.size() == 1);
    CHECK(load_one(dir.write("mt.yaml", "name: b\nmodel: llama-2-7b\n"), {"model.mlp_bias=true"}).model.mlp_bias);
    REQUIRE_THROWS_WITH(load_one(dir.write("mg.yaml", "name: b\nmodel: gpt2\n"), {"model.mlp_bias=true"}),
                        Contains("model.mlp_bias: is a llama-family key"));
  }
  SECTION("llama: max_position_embeddings is recorded, a longer seq_len is allowed (rotary positions)") {
    dir.write("l/config.json", llama + "}");
    const Scenario s = load_one(dir.write("l.yaml", "name: l\nmodel: l/config.json\ntraining:\n  seq_len: 4096\n"));
    CHECK(s.model.max_positions == 2048);
    CHECK(s.training.seq_len == 4096);
    CHECK(s.model.name == "l/config.json (llama)");
  }
}

TEST_CASE("load_scenario: sizes that would run for hours are rejected with the limit and a hint", "[scenario][unit]") {
  // Each limit is far above real setups (zerosim's loader, validate_limits): the program is unrolled per step,
  // micro-step and layer, and chunk fidelity sends 2(N-1) messages per rank per all-reduce.
  const std::string sc = std::string(ZEROSIM_DATA_DIR) + "/scenarios/examples/single-gpu-zero-stages.yaml";
  SECTION("layers") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"model.layers=1001"}),
                        Catch::Contains("model.layers") && Catch::Contains("1000"));
  }
  SECTION("steps") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"simulation.steps=101"}), Catch::Contains("simulation.steps"));
  }
  SECTION("grad_accum") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.grad_accum=257"}), Catch::Contains("training.grad_accum"));
  }
  SECTION("layers x micro-steps x steps above 500,000 layer passes, each within its own limit") {
    // newuser20a: 1000 x 256 x 100 = 25,600,000 passes ran out of 20 GB. 1000 x 50 x 10 = 500,000 is the limit
    // itself (allowed); one more micro-step, 1000 x 51 x 10 = 510,000, is not, and the message names the largest
    // factor's key.
    CHECK_NOTHROW(load_scenario(sc, {"model.layers=1000", "training.grad_accum=50", "simulation.steps=10"}));
    REQUIRE_THROWS_WITH(
        load_scenario(sc, {"model.layers=1000", "training.grad_accum=51", "simulation.steps=10"}),
        Catch::Contains("<cli>: model.layers: model.layers x training.grad_accum x simulation.steps = 1000 x 51 x 10 = "
                        "510000 layer passes is above the 500000"));
  }
  SECTION("chunk fidelity above 1024 GPUs") {
    REQUIRE_THROWS_WITH(load_scenario(sc,
                                      {"cluster.topology=dgx-h100", "cluster.nodes=129", "simulation.fidelity=chunk"}),
                        Catch::Contains("simulation.fidelity") && Catch::Contains("1032"));
  }
  SECTION("tokens per micro-batch above 2^30 (the byte counts of b·s·V logits would leave exact range)") {
    // The default scenario has seq_len 1024: micro_batch 2^20 + 1 gives 2^30 + 1024 tokens.
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.micro_batch=1048577"}),
                        Catch::Contains("training.micro_batch") && Catch::Contains("above 2^30"));
  }
  SECTION("whole numbers beyond 2^31 - 1 are out of range, not wrapped") {
    // 4294967297 = 2^32 + 1 would be stored as 1 node.
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.nodes=4294967297"}),
                        Catch::Contains("<cli>: cluster.nodes: '4294967297' is out of range (at most 2147483647)"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.nodes=1e12"}),
                        Catch::Contains("<cli>: cluster.nodes: '1e12' is out of range (at most 2147483647)"));
  }
  SECTION("whole numbers in exponent notation are read (5e2 = 500), fractions are not") {
    CHECK(load_scenario(sc, {"training.seq_len=5e2"}).front().scenario.training.seq_len == 500);
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.seq_len=1.5"}),
                        Catch::Contains("training.seq_len: expected a whole number, got '1.5'"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.seq_len=5e-1"}),
                        Catch::Contains("training.seq_len: expected a whole number, got '5e-1'"));
  }
  SECTION("more than 2^20 GPUs") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.topology=dgx-h100", "cluster.nodes=131073"}),
                        Catch::Contains("cluster.nodes") && Catch::Contains("1048584 GPUs is above the 1048576"));
  }
  SECTION("more than 1024 GPUs in one node (a node is simulated whole, folded or not)") {
    // One node is never folded: before the limit, 100000 GPUs in one node filled the host's RAM.
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpus_per_node=100000"}),
                        Catch::Contains("<cli>: cluster.gpus_per_node: 100000 GPUs in one node is above the 1024"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpus_per_node=1025", "cluster.nodes=4"}),
                        Catch::Contains("cluster.gpus_per_node: 1025 GPUs in one node"));
  }
  SECTION("more than 65536 GPUs simulated unfolded, with fold: off or on a fabric auto does not fold") {
    // 8193 nodes x 8 GPUs = 65544 GPUs > 65536; auto would fold a non-blocking fabric to 2 nodes (16 GPUs).
    const std::vector<std::string> big = {"cluster.topology=dgx-h100", "cluster.nodes=8193"};
    auto with = [&big](const std::string& extra) {
      std::vector<std::string> o = big;
      o.push_back(extra);
      return o;
    };
    REQUIRE_THROWS_WITH(load_scenario(sc, with("simulation.fold=off")), Catch::Contains("simulation.fold") &&
                                                                            Catch::Contains("65544 GPUs") &&
                                                                            Catch::Contains("the limit is 65536"));
    REQUIRE_THROWS_WITH(load_scenario(sc, with("cluster.fabric=torus")), Catch::Contains("cluster.fabric") &&
                                                                             Catch::Contains("65544 GPUs") &&
                                                                             Catch::Contains("the limit is 65536"));
    REQUIRE_NOTHROW(load_scenario(sc, big));
  }
  SECTION("a bucket size of 0 or below gets one message, not 'non-negative' for -5 (0 is not allowed either)") {
    for (const char* bad : {"0", "-5"})
      REQUIRE_THROWS_WITH(load_scenario(sc, {"compare=null", std::string("zero.reduce_bucket_size=") + bad}),
                          Catch::Contains(std::string("<cli>: zero.reduce_bucket_size: must be positive, got '") + bad +
                                          "'"));
  }
  SECTION("gradient buckets of fewer than 1e4 elements") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.reduce_bucket_size=1000"}),
                        Catch::Contains("zero.reduce_bucket_size: 1000 elements is below the 10000"));
  }
  SECTION("a GPU memory no GPU has") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory=1e30GB"}),
                        Catch::Contains("cluster.gpu.memory") && Catch::Contains("1e15 B"));
  }
  SECTION("an SM count no GPU has") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.sm_count=200000"}), Catch::Contains("sm_count"));
  }
  SECTION("a compute capability written without its point") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.compute_capability=90"}),
                        Catch::Contains("cluster.gpu.compute_capability") &&
                            Catch::Contains("90 is not a CUDA compute capability"));
  }
  SECTION("the limits themselves are accepted") {
    // Each at its own limit, the other two small enough for the 500,000 layer passes: 1000 x 5 x 100, 1000 x 256 x 1
    // (one step: 256,000) and 10 x 256 x 100 (256,000).
    REQUIRE_NOTHROW(load_scenario(sc, {"model.layers=1000", "simulation.steps=100", "training.grad_accum=5",
                                       "training.micro_batch=1048576", "zero.reduce_bucket_size=10000",
                                       "cluster.gpus_per_node=1024"}));
    REQUIRE_NOTHROW(load_scenario(sc, {"model.layers=1000", "simulation.steps=1", "training.grad_accum=256"}));
    REQUIRE_NOTHROW(load_scenario(sc, {"model.layers=10", "simulation.steps=100", "training.grad_accum=256"}));
  }
}

TEST_CASE("load_scenario: zero.grad_accum_dtype is read from YAML and ds_config, bad values name file:line: key",
          "[scenario][validation]") {
  FixtureDir dir;
  SECTION("YAML value, default and ds_config data_types.grad_accum_dtype (DtypeEnum synonyms)") {
    const std::string sc =
        dir.write("ok.yaml", gpt2_scenario("", "zero:\n  stage: 1\n  grad_accum_dtype: fp32\n", "  precision: bf16\n"));
    CHECK(load_one(sc).zero.grad_accum_dtype == GradAccumDtype::FP32);
    const std::string plain = dir.write("plain.yaml", gpt2_scenario());
    CHECK(load_one(plain).zero.grad_accum_dtype == GradAccumDtype::MODEL);
    dir.write("ds.json",
              "{\n  \"bf16\": {\"enabled\": true},\n  \"zero_optimization\": {\"stage\": 1},\n"
              "  \"data_types\": {\"grad_accum_dtype\": \"float32\"}\n}\n");
    CHECK(load_one(dir.write("ds.yaml", gpt2_scenario("ds.json"))).zero.grad_accum_dtype == GradAccumDtype::FP32);
  }
  SECTION("an unknown dtype names file:line: key") {
    // line 5: zero:, line 6: stage, line 7: grad_accum_dtype
    const std::string sc = dir.write("bad.yaml", gpt2_scenario("", "zero:\n  stage: 1\n  grad_accum_dtype: fp64\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("bad.yaml:7: zero.grad_accum_dtype"));
  }
  SECTION("the other 16-bit dtype is not modelled") {
    const std::string sc = dir.write("mix.yaml", gpt2_scenario("", "zero:\n  stage: 1\n  grad_accum_dtype: fp16\n",
                                                               "  precision: bf16\n"));
    // training has one extra line: zero block on lines 6-8
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("mix.yaml:8: zero.grad_accum_dtype: accumulating bf16 gradients"));
  }
  SECTION("fp32 accumulation without ZeRO is DeepSpeed's unsupported mix") {
    const std::string sc = dir.write("s0.yaml", gpt2_scenario("", "zero:\n  stage: 0\n  grad_accum_dtype: fp32\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("s0.yaml:7: zero.grad_accum_dtype: fp32 accumulation"));
    // fp16 model: unsupported in every release, 0.16.0 included (engine.py _do_optimizer_sanity_check, else branch).
    REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.deepspeed_version=0.16.0", "training.precision=fp16"}),
                        Contains("zero.grad_accum_dtype: fp32 accumulation of fp16"));
  }
  SECTION("fp32 accumulation on the ZeRO optimizer of stages 1 and 2 is refused as not modelled, stage 3 takes it") {
    // stage_1_and_2.py use_separate_grad_accum keeps fp32 copies of the gradients, which zerosim does not model;
    // stage 3's grad_partitions_flat_buffer takes the dtype (stage3.py l.742), which it does.
    const std::string s2 =
        dir.write("s2.yaml", gpt2_scenario("", "zero:\n  stage: 2\n  grad_accum_dtype: fp32\n", "  precision: bf16\n"));
    REQUIRE_THROWS_WITH(load_scenario(s2), Contains("s2.yaml:8: zero.grad_accum_dtype: fp32 accumulation of bf16 "
                                                    "gradients at stage 2 is not modelled"));
    REQUIRE_THROWS_WITH(load_scenario(s2, {"zero.stage=1", "zero.offload_optimizer=cpu"}),
                        Contains("at stage 1 with offload_optimizer is not modelled"));
    CHECK(load_one(s2, {"zero.stage=3"}).zero.grad_accum_dtype == GradAccumDtype::FP32);
  }
  SECTION("bf16 without ZeRO: fp32 accumulation and BF16_Optimizer before DeepSpeed 0.17.6 / 0.18.5") {
    // engine.py get_data_types before 0.17.6 (PR #7515): grad_accum_dtype None + bf16 + no ZeRO -> fp32, which
    // _do_optimizer_sanity_check maps to BF16_OPTIMIZER; an explicit bf16 raises. 0.17.6 - 0.18.4: default bf16
    // (FP16_Optimizer in bf16), explicit fp32 still BF16_Optimizer; from 0.18.5 (PR #7790) explicit fp32 raises.
    const std::string plain = dir.write("b0.yaml", gpt2_scenario("", "zero:\n  stage: 0\n", "  precision: bf16\n"));
    const Scenario old = load_one(plain, {"zero.deepspeed_version=0.17.5"});
    CHECK(old.zero.grad_accum_dtype == GradAccumDtype::FP32);
    CHECK(uses_bf16_optimizer(old.training, old.zero));
    const Scenario mid = load_one(plain, {"zero.deepspeed_version=0.17.6"});
    CHECK(mid.zero.grad_accum_dtype == GradAccumDtype::MODEL);
    CHECK_FALSE(uses_bf16_optimizer(mid.training, mid.zero));
    CHECK(uses_bf16_optimizer(load_one(plain, {"zero.deepspeed_version=0.18.4", "zero.grad_accum_dtype=fp32"}).training,
                              load_one(plain, {"zero.deepspeed_version=0.18.4", "zero.grad_accum_dtype=fp32"}).zero));
    REQUIRE_THROWS_WITH(load_scenario(plain, {"zero.deepspeed_version=0.18.5", "zero.grad_accum_dtype=fp32"}),
                        Contains("zero.grad_accum_dtype: fp32 accumulation of bf16") &&
                            Contains("BF16_Optimizer before 0.18.5"));
    REQUIRE_THROWS_WITH(load_scenario(plain, {"zero.deepspeed_version=0.16.0", "zero.grad_accum_dtype=bf16"}),
                        Contains("<cli>: zero.grad_accum_dtype: bf16 accumulation without ZeRO is refused before "
                                 "DeepSpeed 0.17.6"));
    // ZeRO stage 1 keeps the model's dtype by default in every release.
    CHECK(load_one(plain, {"zero.deepspeed_version=0.16.0", "zero.stage=1"}).zero.grad_accum_dtype ==
          GradAccumDtype::MODEL);
  }
  SECTION("a non-string ds_config value names the JSON file and line") {
    dir.write("dsbad.json",
              "{\n  \"zero_optimization\": {\"stage\": 1},\n  \"data_types\": {\n"
              "    \"grad_accum_dtype\": 32\n  }\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("dsbad.yaml", gpt2_scenario("dsbad.json"))),
                        Contains("dsbad.json:4: data_types.grad_accum_dtype"));
  }
}

TEST_CASE("load_scenario: training.optimizer_impl is read, and with optimizer offload torch_adam is the CPU loop",
          "[scenario][validation]") {
  FixtureDir dir;
  SECTION("values") {
    const std::string sc = dir.write("impl.yaml", gpt2_scenario("", "", "  optimizer_impl: torch-single-tensor\n"));
    CHECK(load_one(sc).training.optimizer_impl == OptimizerImpl::TORCH_SINGLE_TENSOR);
    CHECK(load_one(dir.write("def.yaml", gpt2_scenario())).training.optimizer_impl == OptimizerImpl::FUSED);
  }
  SECTION("unknown value names file:line: key") {
    const std::string sc = dir.write("bad.yaml", gpt2_scenario("", "", "  optimizer_impl: apex\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("bad.yaml:5: training.optimizer_impl"));
  }
  SECTION("ds_config optimizer.params.torch_adam (engine.py _configure_basic_optimizer)") {
    dir.write("ta.json",
              "{\n  \"optimizer\": {\n    \"type\": \"AdamW\",\n"
              "    \"params\": {\"torch_adam\": true}\n  }\n}\n");
    CHECK(load_one(dir.write("ta.yaml", gpt2_scenario("ta.json"))).training.optimizer_impl ==
          OptimizerImpl::TORCH_FOREACH);
    dir.write("tabad.json",
              "{\n  \"optimizer\": {\n    \"type\": \"AdamW\",\n"
              "    \"params\": {\"torch_adam\": \"yes\"}\n  }\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("tabad.yaml", gpt2_scenario("tabad.json"))),
                        Contains("tabad.json:4: optimizer.params.torch_adam"));
  }
  SECTION("with offload_optimizer the torch step runs on the CPU tensors") {
    // Written in the scenario: kept as written.
    const std::string sc = dir.write("off.yaml", gpt2_scenario("", "zero:\n  stage: 2\n  offload_optimizer: cpu\n",
                                                               "  optimizer_impl: torch-foreach\n"));
    CHECK(load_one(sc).training.optimizer_impl == OptimizerImpl::TORCH_FOREACH);
    // Imported from torch_adam: torch's default for CPU tensors, the single-tensor loop (optim/optimizer.py
    // _default_to_fused_or_foreach picks foreach only for CUDA tensors).
    dir.write("taoff.json",
              "{\n  \"optimizer\": {\"type\": \"AdamW\", \"params\": {\"torch_adam\": true}},\n"
              "  \"zero_optimization\": {\"stage\": 2, \"offload_optimizer\": {\"device\": \"cpu\"}}\n}\n");
    CHECK(load_one(dir.write("taoff.yaml", gpt2_scenario("taoff.json"))).training.optimizer_impl ==
          OptimizerImpl::TORCH_SINGLE_TENSOR);
  }
  SECTION("zero_force_ds_cpu_optimizer is imported, and a non-boolean names file:line") {
    dir.write("force.json", "{\n  \"zero_force_ds_cpu_optimizer\": false\n}\n");
    CHECK_FALSE(load_one(dir.write("force.yaml", gpt2_scenario("force.json"))).zero.force_ds_cpu_optimizer);
    CHECK(load_one(dir.write("noforce.yaml", gpt2_scenario())).zero.force_ds_cpu_optimizer);
    dir.write("forcebad.json", "{\n  \"zero_force_ds_cpu_optimizer\": \"no\"\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("forcebad.yaml", gpt2_scenario("forcebad.json"))),
                        Contains("forcebad.json:2: zero_force_ds_cpu_optimizer"));
  }
  SECTION("no optimizer section under offload: HF Trainer's torch AdamW is refused as DeepSpeed does") {
    // deepspeed/runtime/engine.py _configure_optimizer: a client optimizer other than DeepSpeedCPUAdam/CPULion
    // under ZeRO-Offload raises ZeRORuntimeException while zero_force_ds_cpu_optimizer is true (its default,
    // runtime/constants.py); HF Trainer passes torch.optim.AdamW when the ds_config has no "optimizer".
    const std::string zero =
        "  \"zero_optimization\": {\"stage\": 2,\n    \"offload_optimizer\": {\"device\": \"cpu\"}}";
    dir.write("hfno.json", "{\n  \"gradient_accumulation_steps\": \"auto\",\n" + zero + "\n}\n");
    REQUIRE_THROWS_WITH(
        load_scenario(dir.write("hfno.yaml", gpt2_scenario("hfno.json"))),
        Contains("hfno.json:4: zero_optimization.offload_optimizer: hfno.json has no \"optimizer\" section") &&
            Contains("zero_force_ds_cpu_optimizer"));
    // The offload set by the scenario, not the ds_config: the error names the scenario's line of
    // zero.offload_optimizer (line 7: the gpt2_scenario lines 1-6, then this key), or <cli> for a --set.
    dir.write("hfnz.json",
              "{\n  \"gradient_accumulation_steps\": \"auto\",\n  \"zero_optimization\": {\"stage\": 2}\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("hfnz.yaml", gpt2_scenario("hfnz.json", "  offload_optimizer: cpu\n"))),
                        Catch::StartsWith((dir.path() / "hfnz.yaml").string() + ":7: zero.offload_optimizer: ") &&
                            Contains("hfnz.json has no \"optimizer\" section"));
    REQUIRE_THROWS_WITH(load_scenario(dir.write("hfnc.yaml", gpt2_scenario("hfnz.json")),
                                      {"zero.offload_optimizer=cpu"}),
                        Catch::StartsWith("<cli>: zero.offload_optimizer: ") &&
                            Contains("hfnz.json has no \"optimizer\" section"));
    // HF Trainer's config is told by an "auto" in a key HF Trainer fills (transformers integrations/deepspeed.py
    // trainer_config_process / trainer_config_finalize): an "auto" only in the scheduler's warmup_num_steps is one.
    dir.write("hfsch.json",
              "{\n  \"scheduler\": {\"type\": \"WarmupLR\", \"params\": {\"warmup_num_steps\": \"auto\"}},\n" + zero +
                  "\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("hfsch.yaml", gpt2_scenario("hfsch.json"))),
                        Contains("hfsch.json:4: zero_optimization.offload_optimizer: hfsch.json has no \"optimizer\" "
                                 "section") &&
                            Contains("scheduler.params.warmup_num_steps"));
    // An "auto" in a key HF Trainer does not fill (steps_per_print) does not make an HF Trainer config: the client
    // may pass DeepSpeedCPUAdam, simulated as that with the note.
    dir.write("dsauto.json", "{\n  \"steps_per_print\": \"auto\",\n" + zero + "\n}\n");
    const Scenario da = load_one(dir.write("dsauto.yaml", gpt2_scenario("dsauto.json")));
    CHECK(std::count_if(da.import_notes.begin(), da.import_notes.end(), [](const std::string& n) {
            return n.find("dsauto.json has no \"optimizer\" section: simulated as a client DeepSpeedCPUAdam") == 0;
          }) == 1);
    // zero_force_ds_cpu_optimizer false: DeepSpeed runs the client's optimizer (the existing note tells which).
    dir.write("hfnof.json", "{\n  \"gradient_accumulation_steps\": \"auto\",\n" + zero +
                                ",\n  \"zero_force_ds_cpu_optimizer\": false\n}\n");
    const Scenario hf = load_one(dir.write("hfnof.yaml", gpt2_scenario("hfnof.json")));
    CHECK_FALSE(hf.zero.force_ds_cpu_optimizer);
    // HF Trainer.create_optimizer passes torch.optim.AdamW: DeepSpeed steps it on the CPU tensors, so torch's
    // single-tensor CPU AdamW is simulated, and a note says why.
    CHECK(hf.training.optimizer_impl == OptimizerImpl::TORCH_SINGLE_TENSOR);
    CHECK(std::count_if(hf.import_notes.begin(), hf.import_notes.end(), [](const std::string& n) {
            return n.find("hfnof.json has no \"optimizer\" section and \"auto\" values") == 0 &&
                   n.find("torch-single-tensor") != std::string::npos;
          }) == 1);
    // The scenario's own training.optimizer_impl wins, without that note.
    const Scenario hff =
        load_one(dir.write("hfnoff.yaml", gpt2_scenario("hfnof.json", "", "  optimizer_impl: fused\n")));
    CHECK(hff.training.optimizer_impl == OptimizerImpl::FUSED);
    for (const std::string& n : hff.import_notes)
      CHECK(n.find("HF Trainer passes") == std::string::npos);
    // Without offload a client optimizer is fine: no error, no note.
    dir.write("hfnooff.json",
              "{\n  \"gradient_accumulation_steps\": \"auto\",\n  \"zero_optimization\": "
              "{\"stage\": 2}\n}\n");
    for (const std::string& n : load_one(dir.write("hfnooff.yaml", gpt2_scenario("hfnooff.json"))).import_notes)
      CHECK(n.find("optimizer") == std::string::npos);
    // No "auto" (not an HF Trainer config): the client may pass DeepSpeedCPUAdam; simulated as that, with a note.
    dir.write("dsno.json", "{\n" + zero + "\n}\n");
    const Scenario s = load_one(dir.write("dsno.yaml", gpt2_scenario("dsno.json")));
    CHECK(std::count_if(s.import_notes.begin(), s.import_notes.end(), [](const std::string& n) {
            return n.find("dsno.json has no \"optimizer\" section: simulated as a client DeepSpeedCPUAdam") == 0;
          }) == 1);
  }
  SECTION("ds_config \"auto\" micro-batch and GA the scenario leaves unset: a note names each key and the value") {
    dir.write("ab.json", "{\"train_micro_batch_size_per_gpu\": \"auto\", \"gradient_accumulation_steps\": \"auto\"}");
    Scenario s = load_one(dir.write("ab.yaml", gpt2_scenario("ab.json")));
    std::vector<std::string> notes;
    for (const std::string& n : s.import_notes)
      if (n.find("\"auto\" (HF Trainer fills it from --") != std::string::npos)
        notes.push_back(n);
    REQUIRE(notes.size() == 2);
    // The scenario sets seq_len 128, so the micro-batch note does not mention it.
    CHECK(notes[0] ==
          "ds_config train_micro_batch_size_per_gpu is \"auto\" (HF Trainer fills it from "
          "--per_device_train_batch_size): simulated as training.micro_batch = 1, the default; set "
          "training.micro_batch to your per_device_train_batch_size");
    CHECK_THAT(notes[1], Contains("gradient_accumulation_steps is \"auto\"") &&
                             Contains("simulated as training.grad_accum = 1, the default"));
    // The scenario's train_batch_size with its micro_batch: GA is derived as DeepSpeed does (runtime/config.py
    // _set_batch_related_parameters: train_batch_size = micro x GA x world size), 256 / (2 x 16 GPUs) = 8, and the
    // note states that value, not the default 1 (newuser30 finding 17).
    s = load_one(dir.write("ab3.yaml", gpt2_scenario("ab.json", "", "  micro_batch: 2\n  train_batch_size: 256\n")),
                 {"cluster.gpus_per_node=16"});
    CHECK(s.training.grad_accum == 8);
    notes.clear();
    for (const std::string& n : s.import_notes)
      if (n.find("\"auto\" (HF Trainer fills it from --") != std::string::npos)
        notes.push_back(n);
    REQUIRE(notes.size() == 1);
    CHECK(notes[0] ==
          "ds_config gradient_accumulation_steps is \"auto\" (HF Trainer fills it from "
          "--gradient_accumulation_steps): simulated as training.grad_accum = 8, derived from "
          "training.train_batch_size 256 / (micro_batch 2 x 16 GPUs), as DeepSpeed derives it "
          "(train_batch_size = micro_batch x grad_accum x GPUs); pass --gradient_accumulation_steps 8 "
          "to match");
    // Only train_batch_size: GA 1 and micro-batch 256 / 16 = 16, both said so.
    s = load_one(dir.write("ab4.yaml", gpt2_scenario("ab.json", "", "  train_batch_size: 256\n")),
                 {"cluster.gpus_per_node=16"});
    CHECK(s.training.micro_batch == 16);
    CHECK(s.training.grad_accum == 1);
    CHECK(std::count_if(s.import_notes.begin(), s.import_notes.end(), [](const std::string& n) {
            return n.find(
                       "simulated as training.micro_batch = 16, derived from training.train_batch_size 256 / 16 "
                       "GPUs") != std::string::npos ||
                   n.find(
                       "simulated as training.grad_accum = 1, with training.train_batch_size 256 and neither "
                       "it nor the micro-batch given") != std::string::npos;
          }) == 2);
    // Set in the scenario: no note for that key.
    s = load_one(dir.write("ab2.yaml", gpt2_scenario("ab.json", "", "  micro_batch: 4\n")));
    CHECK(s.training.micro_batch == 4);
    CHECK(std::count_if(s.import_notes.begin(), s.import_notes.end(), [](const std::string& n) {
            return n.find("\"auto\" (HF Trainer fills it from --") != std::string::npos;
          }) == 1);
  }
  SECTION("timers.throughput: enabled AND synchronized (deepspeed/utils/config.py), located at the field") {
    CHECK(load_one(dir.write("t0.yaml", gpt2_scenario())).zero.throughput_timer_sync);
    dir.write("t1.json", "{\n  \"timers\": {\"throughput\": {\"enabled\": true, \"synchronized\": false}}\n}\n");
    CHECK_FALSE(load_one(dir.write("t1.yaml", gpt2_scenario("t1.json"))).zero.throughput_timer_sync);
    dir.write("t2.json", "{\n  \"timers\": {\"throughput\": {\"enabled\": false}}\n}\n");
    CHECK_FALSE(load_one(dir.write("t2.yaml", gpt2_scenario("t2.json"))).zero.throughput_timer_sync);
    dir.write("t3.json", "{\n  \"timers\": {\"throughput\": {\"enabled\": true}}\n}\n");
    CHECK(load_one(dir.write("t3.yaml", gpt2_scenario("t3.json"))).zero.throughput_timer_sync);
    // A --set wins over the imported value.
    CHECK(load_one(dir.write("t4.yaml", gpt2_scenario("t1.json")), {"zero.throughput_timer_sync=true"})
              .zero.throughput_timer_sync);
    dir.write("tbad.json", "{\n  \"timers\": {\n    \"throughput\": {\"synchronized\": \"no\"}\n  }\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("tbad.yaml", gpt2_scenario("tbad.json"))),
                        Contains("tbad.json:3: timers.throughput.synchronized"));
    dir.write("tunk.json", "{\n  \"timers\": {\"wall_clock\": {}}\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("tunk.yaml", gpt2_scenario("tunk.json"))),
                        Contains("tunk.json:2: timers.wall_clock"));
  }
}

TEST_CASE("load_scenario: a --set inside a compared section applies to every variant and is validated",
          "[scenario][validation]") {
  // `compare: {zero: [...]}` merges each value into the zero section; a --set of zero.X applies to every variant.
  FixtureDir dir;
  const std::string sc =
      dir.write("cmp-section.yaml",
                gpt2_scenario("", "compare:\n  zero: [{stage: 1}, {stage: 2, overlap_comm: true}]\n"));
  const auto v = load_scenario(sc, {"zero.reduce_bucket_size=5e7"});
  REQUIRE(v.size() == 2);
  for (const auto& x : v)
    CHECK(x.scenario.zero.reduce_bucket_size == 50'000'000);
  CHECK(v[0].scenario.zero.stage == 1);
  CHECK(v[1].scenario.zero.stage == 2);
  CHECK(v[0].note.empty());
  // A --set of a key the compare values name (stage; overlap_comm, named by one value only) would run every variant
  // with it under the variants' own labels (a new user's report): as with `compare: {zero.stage: [...]}`, it
  // replaces the comparison with one run of the scenario's zero section plus the --set, and says so.
  const auto stage = load_scenario(sc, {"zero.stage=3"});
  REQUIRE(stage.size() == 1);
  CHECK(stage[0].label.empty());
  CHECK(stage[0].scenario.zero.stage == 3);
  CHECK(stage[0].scenario.compare_key.empty());
  CHECK(stage[0].note ==
        "--set zero.stage=3 replaces the comparison compare.zero (2 values): one run with that setting");
  const auto overlap = load_scenario(sc, {"zero.overlap_comm=false"});
  REQUIRE(overlap.size() == 1);
  CHECK(overlap[0].scenario.zero.stage == 0); // gpt2_scenario sets no stage: the default, 0
  CHECK_THAT(overlap[0].note, Contains("--set zero.overlap_comm=false replaces the comparison compare.zero"));
  const auto off = load_scenario(sc, {"zero.stage=3", "compare=null"});
  CHECK(off.at(0).scenario.zero.stage == 3);
  CHECK(off.at(0).note.empty()); // the user turned the comparison off: nothing to say
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.reduce_bucket_size=two"}), Contains("zero.reduce_bucket_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.contiguous_gradients=maybe"}), Contains("zero.contiguous_gradients"));
}

TEST_CASE("load_scenario: compare_set adds overrides to the variants of one compare value only",
          "[scenario][validation]") {
  FixtureDir dir;
  const std::string sc =
      dir.write("cs.yaml",
                gpt2_scenario("",
                              "compare:\n  zero.stage: [1, 2, 3]\ncompare_set:\n  3: {training.micro_batch: 4, "
                              "training.optimizer_impl: fused}\n",
                              "  optimizer_impl: torch-foreach\n"));
  const auto v = load_scenario(sc);
  REQUIRE(v.size() == 3);
  CHECK(v[0].scenario.training.micro_batch == 1);
  CHECK(v[1].scenario.training.optimizer_impl == OptimizerImpl::TORCH_FOREACH);
  CHECK(v[2].scenario.zero.stage == 3);
  CHECK(v[2].scenario.training.micro_batch == 4);
  CHECK(v[2].scenario.training.optimizer_impl == OptimizerImpl::FUSED);
  SECTION("--set compare=null turns the comparison off together with its compare_set") {
    const auto one = load_scenario(sc, {"compare=null"});
    REQUIRE(one.size() == 1);
    CHECK(one[0].scenario.training.micro_batch == 1);
    CHECK(one[0].scenario.training.optimizer_impl == OptimizerImpl::TORCH_FOREACH);
  }
  SECTION("compare_set written without a compare: block is an error") {
    const std::string bad = dir.write("cs0.yaml", gpt2_scenario("", "compare_set:\n  3: {zero.stage: 3}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("cs0.yaml:6: compare_set: needs a compare: block"));
  }
  // Without a `training:` block in the fixtures below: line 5 "compare:", 6 its list, 7 "compare_set:", 8 the entry.
  SECTION("a value that is not compared") {
    const std::string bad =
        dir.write("cs2.yaml",
                  gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\ncompare_set:\n  3: {zero.stage: 3}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad),
                        Contains("cs2.yaml:8: compare_set.3: not one of the values of compare.zero.stage"));
  }
  SECTION("an unknown key") {
    const std::string bad =
        dir.write("cs3.yaml",
                  gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\ncompare_set:\n  2: {training.loss_imp: hf}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("cs3.yaml:8: compare_set.2.training.loss_imp: unknown key"));
  }
  SECTION("an override of what the compare value itself sets") {
    const std::string bad =
        dir.write("cs5.yaml",
                  gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\ncompare_set:\n  2: {zero.stage: 0}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad),
                        Contains("cs5.yaml:8: compare_set.2.zero.stage: is set by the compare value"));
  }
  SECTION("a --set of the compared key runs that value with its compare_set overrides") {
    const auto one = load_scenario(sc, {"zero.stage=3"});
    REQUIRE(one.size() == 1);
    CHECK(one[0].scenario.training.micro_batch == 4);
    CHECK(one[0].scenario.training.optimizer_impl == OptimizerImpl::FUSED);
    CHECK(load_scenario(sc, {"zero.stage=2"})[0].scenario.training.micro_batch == 1);
  }
  SECTION("a value not compared: the hint lists the values as written") {
    const std::string bad =
        dir.write("cs6.yaml",
                  gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\ncompare_set:\n  5: {zero.stage: 3}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("the values, as written here: 1, 2"));
  }
  SECTION("a compare_set given with --set is blamed on the command line, not on the scenario file") {
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare_set={5: {zero.stage: 3}}"}),
                        Contains("<cli>: compare_set.5: not one of the values of compare.zero.stage") &&
                            !Contains("cs.yaml"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare_set={3: {training.loss_imp: hf}}"}),
                        Contains("<cli>: compare_set.3.training.loss_imp: unknown key"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare_set={3: {zero.stage: 0}}"}),
                        Contains("<cli>: compare_set.3.zero.stage: is set by the compare value"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare_set=[1, 2]"}), Contains("<cli>: compare_set: expected a map"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"compare=null", "compare_set={3: {zero.stage: 3}}"}),
                        Contains("<cli>: compare_set: needs a compare: block"));
  }
  SECTION("a value of a compared section is keyed by its text in quotes, and the hint says so") {
    const std::string ok =
        dir.write("cs7.yaml",
                  gpt2_scenario("",
                                "compare:\n  zero: [{stage: 1}, {stage: 3, offload_optimizer: cpu}]\n"
                                "compare_set:\n  \"{stage: 3, offload_optimizer: cpu}\": {training.micro_batch: 4}\n"));
    const auto loaded = load_scenario(ok);
    REQUIRE(loaded.size() == 2);
    CHECK(loaded[0].scenario.training.micro_batch == 1);
    CHECK(loaded[1].scenario.training.micro_batch == 4);
    const std::string bad = dir.write("cs8.yaml", gpt2_scenario("",
                                                                "compare:\n  zero: [{stage: 1}, {stage: 3}]\n"
                                                                "compare_set:\n  1: {training.micro_batch: 4}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("key a map value by that text in quotes, e.g. \"{stage: 1}\""));
  }
  SECTION("a bad value is reported at its line, naming the variant") {
    const std::string bad =
        dir.write("cs4.yaml",
                  gpt2_scenario("", "compare:\n  zero.stage: [1, 2]\ncompare_set:\n  2: {training.loss_impl: foo}\n"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("cs4.yaml:8: training.loss_impl:"));
    REQUIRE_THROWS_WITH(load_scenario(bad), Contains("(compare variant zero.stage=2)"));
  }
}

TEST_CASE("load_scenario: a compared section is merged into the scenario's section, key by key",
          "[scenario][validation]") {
  // training: {seq_len: 128, micro_batch: 4, flash_attention: true}; compare over the whole training section with
  // values naming only loss_impl: both variants keep micro-batch 4 and FlashAttention (a new user's report: they
  // used to be dropped, silently, because the value replaced the section).
  FixtureDir dir;
  const std::string sc =
      dir.write("merge.yaml", gpt2_scenario("", "compare:\n  training: [{loss_impl: hf}, {loss_impl: megatron}]\n",
                                            "  micro_batch: 4\n  flash_attention: true\n"));
  const auto v = load_scenario(sc);
  REQUIRE(v.size() == 2);
  for (const auto& x : v) {
    CHECK(x.scenario.training.micro_batch == 4);
    CHECK(x.scenario.training.flash_attention);
    CHECK(x.scenario.training.seq_len == 128);
  }
  CHECK(v[0].scenario.training.loss_impl == LossImpl::HF);
  CHECK(v[1].scenario.training.loss_impl == LossImpl::MEGATRON);
}

TEST_CASE("load_scenario: a GPU or CPU key written as in the key table (gpu.X) points at cluster.gpu.X",
          "[scenario][validation]") {
  // The key table documents preset keys as gpu.X / cpu.X; in a scenario they live under cluster (a new user's
  // report: `--set gpu.attention_efficiency=0.5` and a top-level `gpu:` gave no useful hint).
  FixtureDir dir;
  const std::string sc = dir.write("g.yaml", gpt2_scenario());
  REQUIRE_THROWS_WITH(load_scenario(sc, {"gpu.attention_efficiency=0.5"}),
                      Contains("<cli>: gpu.attention_efficiency: unknown key; in a scenario it is "
                               "cluster.gpu.attention_efficiency"));
  const std::string top = dir.write("g2.yaml", gpt2_scenario("", "gpu: {memory: 8GiB}\n"));
  REQUIRE_THROWS_WITH(load_scenario(top), Contains("g2.yaml:5: gpu: unknown key; in a scenario the gpu keys go under "
                                                   "cluster: (cluster.gpu)"));
}

TEST_CASE("load_scenario: cluster.cpu takes {preset: name, key: value} and --set cluster.cpu.X, as cluster.gpu does",
          "[scenario][unit]") {
  // topologies/cpus/dgx-a100-epyc-7742.yaml: 128 cores, 409.6 GB/s, 8 NUMA nodes (NPS4). An inline key overrides
  // one field and keeps the preset's others.
  FixtureDir dir;
  const std::string sc =
      dir.write("c.yaml",
                gpt2_scenario("", "cluster: {topology: dgx-a100, cpu: {preset: dgx-a100-epyc-7742, numa_nodes: 2}}\n"));
  const Scenario a = load_one(sc);
  CHECK(a.cluster.cpu.preset == "dgx-a100-epyc-7742");
  CHECK(a.cluster.cpu.name == "dgx-a100-epyc-7742 (modified: numa_nodes=2)");
  CHECK(a.cluster.cpu.numa_nodes == 2);
  CHECK(a.cluster.cpu.cores == 128);
  CHECK(a.cluster.cpu.memory_bandwidth.value() == Approx(409.6e9));
  // Without `preset`, the cluster preset's CPU is the base; --set reaches the same keys.
  const std::string bare = dir.write("b.yaml", gpt2_scenario("", "cluster: {topology: dgx-a100}\n"));
  const Scenario b = load_one(bare, {"cluster.cpu.numa_nodes=4", "cluster.cpu.memory_bandwidth=200GBps"});
  CHECK(b.cluster.cpu.preset == "dgx-a100-epyc-7742");
  CHECK(b.cluster.cpu.name == "dgx-a100-epyc-7742 (--set memory_bandwidth=200GBps, numa_nodes=4)");
  CHECK(b.cluster.cpu.numa_nodes == 4);
  CHECK(b.cluster.cpu.memory_bandwidth.value() == Approx(200e9));
  // A typo gets the nearest CPU key; a bad value names it.
  REQUIRE_THROWS_WITH(load_one(bare, {"cluster.cpu.numa_nodez=4"}),
                      Contains("<cli>: cluster.cpu.numa_nodez: unknown key; did you mean 'cluster.cpu.numa_nodes'?"));
  REQUIRE_THROWS_WITH(load_one(bare, {"cluster.cpu.numa_nodes=0"}), Contains("cluster.cpu.numa_nodes"));
  // A DeepSpeed sub-key without its section prefix names the keys it ends (new-user 14).
  REQUIRE_THROWS_WITH(load_one(bare, {"zero.pin_memory=true"}),
                      Contains("<cli>: zero.pin_memory: unknown key; did you mean 'zero.offload_optimizer_pin_memory' "
                               "or 'zero.offload_param_pin_memory'?"));
}

TEST_CASE("load_scenario: cluster.cpu.peak_fp32 is cores x base_clock x fp32_simd_lanes x fma_units x 2",
          "[scenario][unit]") {
  // topologies/cpus/dgx-a100-epyc-7742.yaml: 128 cores, 2.25GHz, 8 lanes (AVX2), 2 FMA units: 9.216e12 FLOP/s, the
  // peak_fp32 the preset gave before it gave the components. The other five presets' products (hand values) equal
  // their former peak_fp32 exactly too.
  FixtureDir dir;
  const std::string sc = dir.write("c.yaml", gpt2_scenario("", "cluster: {topology: dgx-a100}\n"));
  const Scenario a = load_one(sc);
  CHECK(a.cluster.cpu.base_clock.value() == 2.25e9);
  CHECK(a.cluster.cpu.fp32_simd_lanes == 8);
  CHECK(a.cluster.cpu.fma_units == 2);
  CHECK(a.cluster.cpu.peak_fp32.value() == 9.216e12);
  const std::pair<const char*, double> presets[] = {{"dgx2-xeon-8168", 8.2944e12}, // 48 x 2.7 x 16 x 2 x 2
                                                    {"dgx-h100-xeon-8480c", 14.336e12}, // 112 x 2.0 x 16 x 2 x 2
                                                    {"ryzen9-5950x", 1.7408e12}, // 16 x 3.4 x 8 x 2 x 2
                                                    {"ryzen9-7950x", 2.304e12}, // 16 x 4.5 x 8 x 2 x 2
                                                    {"threadripper-pro-5975wx", 3.6864e12}}; // 32 x 3.6 x 8 x 2 x 2
  for (const auto& [name, peak] : presets) {
    INFO(name);
    CHECK(load_one(sc, {std::string("cluster.cpu=") + name}).cluster.cpu.peak_fp32.value() == peak);
  }
  // Halving the cores halves the peak; a clock in MHz is a clock.
  CHECK(load_one(sc, {"cluster.cpu.cores=64"}).cluster.cpu.peak_fp32.value() == Approx(4.608e12).epsilon(1e-12));
  const Scenario mhz = load_one(sc, {"cluster.cpu.base_clock=3400MHz"});
  CHECK(mhz.cluster.cpu.base_clock.value() == Approx(3.4e9).epsilon(1e-12));
  CHECK(mhz.cluster.cpu.peak_fp32.value() == Approx(128 * 3.4e9 * 8 * 2 * 2).epsilon(1e-12));
  // AVX-512 lanes on the same host: 128 x 2.25e9 x 16 x 2 x 2.
  CHECK(load_one(sc, {"cluster.cpu.fp32_simd_lanes=16"}).cluster.cpu.peak_fp32.value() ==
        Approx(18.432e12).epsilon(1e-12));
  // A clock needs a frequency unit.
  REQUIRE_THROWS_WITH(load_one(sc, {"cluster.cpu.base_clock=2.7"}),
                      Contains("<cli>: cluster.cpu.base_clock: expected a frequency with a unit, got the bare number"));
  REQUIRE_THROWS_WITH(load_one(sc, {"cluster.cpu.base_clock=2.7GB"}), Contains("'GB' is a size in bytes"));
  REQUIRE_THROWS_WITH(load_one(sc, {"cluster.cpu.fma_units=0"}), Contains("<cli>: cluster.cpu.fma_units"));
}

TEST_CASE(
    "load_scenario: an explicit cluster.cpu.peak_fp32 overrides a preset's components, and one given with "
    "components that disagree is one error naming the keys",
    "[scenario][unit]") {
  FixtureDir dir;
  // Over the preset's components (a layer below): the scenario's peak_fp32 is used, cores only documents.
  const Scenario o = load_one(dir.write("o.yaml", gpt2_scenario("",
                                                                "cluster: {topology: dgx-a100, cpu: "
                                                                "{peak_fp32: 5TFLOPS}}\n")));
  CHECK(o.cluster.cpu.peak_fp32.value() == 5e12);
  CHECK(o.cluster.cpu.cores == 128);
  // With cores in the same map: 64 x 2.25e9 x 8 x 2 x 2 = 4.608e12. Written to the datasheet's digits it agrees.
  CHECK(load_one(dir.write("a.yaml", gpt2_scenario("",
                                                   "cluster: {topology: dgx-a100, cpu: {cores: 64, peak_fp32: "
                                                   "4.608TFLOPS}}\n")))
            .cluster.cpu.peak_fp32.value() == 4.608e12);
  REQUIRE_THROWS_WITH(
      load_one(dir.write("d.yaml", gpt2_scenario("",
                                                 "cluster: {topology: dgx-a100, cpu: {cores: 64, peak_fp32: "
                                                 "9.216TFLOPS}}\n"))),
      Contains("d.yaml:5: cluster.cpu.peak_fp32: cluster.cpu.peak_fp32 = 9.216 TFLOPS disagrees with cores x "
               "base_clock x fp32_simd_lanes x fma_units x 2 = 64 x 2.25 GHz x 8 x 2 x 2 = 4.608 TFLOPS; give "
               "peak_fp32 or its components, or make them agree"));
  // A --set component over the scenario's peak_fp32: reported at <cli>.
  REQUIRE_THROWS_WITH(load_one(dir.path() / "o.yaml", {"cluster.cpu.cores=64"}),
                      Contains("<cli>: cluster.cpu.cores: cluster.cpu.peak_fp32 = 5 TFLOPS disagrees with"));
  // A --set peak_fp32 over the scenario's cores is the latest word.
  CHECK(load_one(dir.path() / "a.yaml", {"cluster.cpu.peak_fp32=3TFLOPS"}).cluster.cpu.peak_fp32.value() == 3e12);
}

namespace {

/// ZEROSIM_DATA_DIR pointed at a copy of the checkout's presets for one test, restored after it.
class DataDirCopy {
 public:
  DataDirCopy() {
    for (const char* sub : {"topologies", "scenarios/models"}) {
      fs::create_directories(dir_.path() / sub);
      fs::copy(fs::path(ZEROSIM_DATA_DIR) / sub, dir_.path() / sub, fs::copy_options::recursive);
    }
    if (const char* old = std::getenv("ZEROSIM_DATA_DIR"))
      old_ = old;
    ::setenv("ZEROSIM_DATA_DIR", dir_.path().c_str(), 1);
  }
  ~DataDirCopy() {
    if (old_)
      ::setenv("ZEROSIM_DATA_DIR", old_->c_str(), 1);
    else
      ::unsetenv("ZEROSIM_DATA_DIR");
  }
  DataDirCopy(const DataDirCopy&) = delete;
  DataDirCopy& operator=(const DataDirCopy&) = delete;
  /// Replaces the component lines of CPU preset `name` by `lines`; returns the file's path.
  std::string rewrite_cpu(const std::string& name, const std::string& lines) const {
    const fs::path p = dir_.path() / "topologies" / "cpus" / (name + ".yaml");
    std::ifstream in(p);
    std::string text, line;
    bool replaced = false;
    while (std::getline(in, line)) {
      if (line.rfind("base_clock:", 0) == 0 || line.rfind("fp32_simd_lanes:", 0) == 0 ||
          line.rfind("fma_units:", 0) == 0) {
        if (!replaced)
          text += lines;
        replaced = true;
        continue;
      }
      text += line + "\n";
    }
    in.close();
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  FixtureDir dir_;
  std::optional<std::string> old_;
};

} // namespace

TEST_CASE("load_scenario: a CPU preset gives peak_fp32 or all of its components", "[scenario][unit]") {
  DataDirCopy data;
  FixtureDir dir;
  const std::string sc = dir.write("c.yaml", gpt2_scenario("", "cluster: {topology: dgx-a100}\n"));
  // topologies/cpus/dgx-a100-epyc-7742.yaml: line 1-2 comments, 3 cores, 4 the first component line.
  SECTION("peak_fp32 alone (a preset written before the components): used as is, cores only documents") {
    data.rewrite_cpu("dgx-a100-epyc-7742", "peak_fp32: 9.216TFLOPS\n");
    CHECK(load_one(sc).cluster.cpu.peak_fp32.value() == 9.216e12);
    CHECK(load_one(sc, {"cluster.cpu.cores=64"}).cluster.cpu.peak_fp32.value() == 9.216e12);
  }
  SECTION("peak_fp32 and components that disagree in one preset file") {
    data.rewrite_cpu("dgx-a100-epyc-7742",
                     "base_clock: 2.25GHz\nfp32_simd_lanes: 8\nfma_units: 2\npeak_fp32: 10TFLOPS\n");
    REQUIRE_THROWS_WITH(load_one(sc), Contains("dgx-a100-epyc-7742.yaml:7: cpu.peak_fp32: cpu.peak_fp32 = 10 TFLOPS "
                                               "disagrees with cores x base_clock x fp32_simd_lanes x fma_units x 2 = "
                                               "128 x 2.25 GHz x 8 x 2 x 2 = 9.216 TFLOPS"));
  }
  SECTION("some components only") {
    data.rewrite_cpu("dgx-a100-epyc-7742", "base_clock: 2.25GHz\nfp32_simd_lanes: 8\n");
    REQUIRE_THROWS_WITH(load_one(sc), Contains("dgx-a100-epyc-7742.yaml:4: cpu.base_clock: the components of "
                                               "peak_fp32 come together: base_clock and fp32_simd_lanes given without "
                                               "fma_units"));
  }
  SECTION("neither") {
    data.rewrite_cpu("dgx-a100-epyc-7742", "");
    REQUIRE_THROWS_WITH(load_one(sc), Contains("dgx-a100-epyc-7742.yaml: cpu.peak_fp32: required key missing"));
  }
}

TEST_CASE("load_scenario: an empty value is reported as empty, not as YAML's '~'", "[scenario][unit]") {
  FixtureDir dir;
  REQUIRE_THROWS_WITH(load_scenario(dir.write("e.yaml", gpt2_scenario("", "", "  micro_batch:\n"))),
                      Contains("e.yaml:5: training.micro_batch: expected a whole number, got an empty value"));
  const std::string sc = std::string(ZEROSIM_DATA_DIR) + "/scenarios/examples/single-gpu-zero-stages.yaml";
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.sm_count="}),
                      Contains("<cli>: cluster.gpu.sm_count: expected a whole number, got an empty value"));
}

TEST_CASE("load_scenario: zero.deepspeed_version applies the config-level differences of older DeepSpeed releases",
          "[scenario][validation]") {
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario("", "zero:\n  stage: 1\n"));
  // Default: the newest release modelled (0.19.5): stage 1 keeps contiguous_gradients, the multi-rank all-reduce
  // exists (from 0.12.4, PR #4695).
  const Scenario now = load_one(path);
  CHECK(now.zero.deepspeed_version == std::array<int, 3>{0, 19, 5});
  CHECK(now.zero.contiguous_gradients);
  CHECK(now.zero.use_multi_rank_bucket_allreduce);
  CHECK_FALSE(now.zero.deepspeed_before(0, 19, 0));
  // 0.9.0 (BELLE's pin): no use_multi_rank_bucket_allreduce yet; the engine turns overlap_comm and
  // contiguous_gradients off for stage 1 (engine.py l.1406-1412 @v0.9.0), even when the config sets them.
  const Scenario old = load_one(path, {"zero.deepspeed_version=0.9.0", "zero.overlap_comm=true"});
  CHECK(old.zero.deepspeed_version == std::array<int, 3>{0, 9, 0});
  CHECK_FALSE(old.zero.use_multi_rank_bucket_allreduce);
  CHECK_FALSE(old.zero.overlap_comm_effective());
  CHECK_FALSE(old.zero.contiguous_gradients);
  CHECK(old.zero.deepspeed_before(0, 19, 0));
  // 0.12.4 has the multi-rank all-reduce but still the stage-1 override (lifted in 0.13.0, PR #4887); "0.13" is
  // 0.13.0, where stage 2 is untouched either way.
  const Scenario mid = load_one(path, {"zero.deepspeed_version=0.12.4"});
  CHECK(mid.zero.use_multi_rank_bucket_allreduce);
  CHECK_FALSE(mid.zero.contiguous_gradients);
  // An overlap_comm the file does not set stays unset (false at stage 1 either way), so result.json's
  // overlap_comm_explicit says the user did not write it and diff marks it as the stage's default.
  CHECK_FALSE(mid.zero.overlap_comm.has_value());
  CHECK_FALSE(mid.zero.overlap_comm_effective());
  CHECK(load_one(path, {"zero.deepspeed_version=0.13"}).zero.contiguous_gradients);
  CHECK(load_one(path, {"zero.deepspeed_version=0.9.0", "zero.stage=2"}).zero.contiguous_gradients);
  // A local build's deepspeed.__version__ ("+<local>" suffix) is its release.
  CHECK(load_one(path, {"zero.deepspeed_version=0.16.0+cu118"}).zero.deepspeed_version == std::array<int, 3>{0, 16, 0});
  // The ZeRO-Infinity release (v0.3.15, 2021-04-19) is the oldest accepted.
  CHECK(load_one(path, {"zero.deepspeed_version=0.3.15", "training.precision=fp16"}).zero.deepspeed_version ==
        std::array<int, 3>{0, 3, 15});
}

TEST_CASE("load_scenario: an unset sub_group_size takes the release's default, 1e12 before DeepSpeed 0.4.1",
          "[scenario][validation]") {
  // deepspeed/runtime/zero/constants.py: ZERO_OPTIMIZATION_SUB_GROUP_SIZE_DEFAULT = 1000000000000 (l.93 @v0.3.15,
  // l.94 @v0.4.0), 1000000000 (l.94 @v0.4.1, l.95 @v0.6.0). A value the scenario writes is kept in every release.
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  const auto at = [&](const std::string& v, std::vector<std::string> extra = {}) {
    extra.push_back("training.precision=fp16");
    extra.push_back("zero.deepspeed_version=" + v);
    return load_one(path, extra).zero.sub_group_size;
  };
  CHECK(at("0.3.15") == 1'000'000'000'000);
  CHECK(at("0.4.0") == 1'000'000'000'000);
  CHECK(at("0.4.1") == 1'000'000'000);
  CHECK(at("0.19.5") == 1'000'000'000);
  CHECK(at("0.3.15", {"zero.sub_group_size=1e9"}) == 1'000'000'000);
  CHECK(at("0.4.0", {"zero.sub_group_size=0"}) == 0);
}

TEST_CASE("load_scenario: bf16 is refused on DeepSpeed releases without it", "[scenario][validation]") {
  // runtime/config.py: no bf16 section before v0.5.5; v0.5.5-v0.5.10 assert stage 2 (l.902 @v0.5.10); v0.6.0 allows
  // stages 1-3 (l.902 @v0.6.0).
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.5.4", "training.precision=bf16"}),
                      Contains("training.precision") && Contains("does not exist before DeepSpeed 0.5.5"));
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.5.10", "zero.stage=3", "training.precision=bf16"}),
                      Contains("runs only at zero.stage 2 before DeepSpeed 0.6.0"));
  CHECK(load_one(path, {"zero.deepspeed_version=0.5.5", "zero.stage=2", "training.precision=bf16"}).zero.stage == 2);
  CHECK(load_one(path, {"zero.deepspeed_version=0.6.0", "zero.stage=3", "training.precision=bf16"}).zero.stage == 3);
  CHECK(load_one(path, {"zero.deepspeed_version=0.5.4", "training.precision=fp16"}).zero.deepspeed_version ==
        std::array<int, 3>{0, 5, 4});
}

TEST_CASE("load_scenario: bf16 gradients are reduced in fp32 by default in DeepSpeed 0.9.0-0.9.1",
          "[scenario][validation]") {
  // engine.py communication_data_type: fp16 if fp16 is enabled, else fp32 (l.792-801 @v0.9.0, PR #2970); bf16 for
  // bf16 again from v0.9.2 (l.775-787 @v0.9.2, PR #3370). A value the scenario sets is kept.
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  const auto comm = [&](const std::string& v, const std::string& precision, std::vector<std::string> extra = {}) {
    extra.insert(extra.begin(), "zero.stage=3"); // a stage in `extra` comes later and wins
    extra.push_back("training.precision=" + precision);
    extra.push_back("zero.deepspeed_version=" + v);
    const Scenario sc = load_one(path, extra);
    return sc.zero.communication_data_type_effective(sc.training.precision);
  };
  CHECK(comm("0.9.0", "bf16") == CommDataType::FP32);
  CHECK(comm("0.9.1", "bf16") == CommDataType::FP32);
  CHECK(comm("0.9.2", "bf16") == CommDataType::BF16);
  CHECK(comm("0.9.0", "fp16") == CommDataType::FP16);
  CHECK(comm("0.9.0", "bf16", {"zero.communication_data_type=bf16"}) == CommDataType::BF16);
  // 0.5.8-0.8.x: `elif self.fp16_enabled() or self.zero_optimization_stage(): return torch.float16` comes before
  // the bf16 branch (engine.py l.843-844 @v0.8.3, l.750-751 @v0.5.8), so bf16 and fp32 models with ZeRO reduce in
  // fp16; without ZeRO (stage 0) bf16 stays bf16 (l.845-846 @v0.8.3). 0.5.7 has no communication_data_type.
  CHECK(comm("0.8.3", "bf16") == CommDataType::FP16);
  CHECK(comm("0.6.0", "bf16") == CommDataType::FP16);
  CHECK(comm("0.8.3", "fp32") == CommDataType::FP16);
  CHECK(comm("0.8.3", "bf16", {"zero.stage=1"}) == CommDataType::FP16);
  CHECK(comm("0.8.3", "bf16", {"zero.stage=0"}) == CommDataType::BF16);
  CHECK(comm("0.5.7", "fp32") == CommDataType::FP32);
  CHECK(comm("0.8.3", "bf16", {"zero.communication_data_type=bf16"}) == CommDataType::BF16);
}

TEST_CASE("load_scenario: communication_data_type_set and grad_accum_dtype_set say whether the scenario wrote the key",
          "[scenario][validation]") {
  // A release default the loader fills in (fp32 for bf16 at 0.9.0, engine.py l.792-801 @v0.9.0; fp32 accumulation
  // for bf16 at stage 0 before 0.17.6, engine.py get_data_types) is not the user's setting (result.json's *_explicit).
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  const Scenario def = load_one(path, {"zero.stage=3", "training.precision=bf16", "zero.deepspeed_version=0.9.0"});
  CHECK(def.zero.communication_data_type == CommDataType::FP32);
  CHECK_FALSE(def.zero.communication_data_type_set);
  const Scenario set = load_one(path, {"zero.stage=3", "training.precision=bf16", "zero.deepspeed_version=0.9.0",
                                       "zero.communication_data_type=fp32"});
  CHECK(set.zero.communication_data_type_set);
  const Scenario s0 = load_one(path, {"zero.stage=0", "training.precision=bf16", "zero.deepspeed_version=0.17.5"});
  CHECK(s0.zero.grad_accum_dtype == GradAccumDtype::FP32);
  CHECK_FALSE(s0.zero.grad_accum_dtype_set);
  CHECK(load_one(path, {"zero.stage=0", "training.precision=bf16", "zero.deepspeed_version=0.17.5",
                        "zero.grad_accum_dtype=fp32"})
            .zero.grad_accum_dtype_set);
}

TEST_CASE("load_scenario: fp32 communication with ZeRO is refused where DeepSpeed 0.5.8-0.8.x assert",
          "[scenario][validation]") {
  // engine.py _configure_zero_optimizer asserts fp16/bf16 communication from 0.5.8 to 0.8.1 (l.1323 @v0.5.8,
  // l.1509 @v0.8.1, absent at v0.8.2); stage 1/2 with reduce_scatter assert it to 0.8.x (stage_1_and_2.py l.239
  // @v0.8.3, absent at v0.9.0); stage 3 admits fp32 from 0.8.2 (stage3.py l.216 @v0.8.1 vs l.215 @v0.8.2).
  FixtureDir dir;
  const std::string path =
      dir.write("s.yaml", gpt2_scenario("", "zero:\n  stage: 3\n  communication_data_type: fp32\n")); // key on line 7
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.7.0"}),
                      Contains("s.yaml:7") && Contains("communication_data_type") &&
                          Contains("refused from DeepSpeed 0.5.8 to 0.8.1"));
  CHECK_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.8.3", "zero.stage=2"}),
                    Contains("with reduce_scatter is refused before DeepSpeed 0.9.0"));
  CHECK(load_one(path, {"zero.deepspeed_version=0.8.2"}).zero.communication_data_type == CommDataType::FP32);
  CHECK(load_one(path, {"zero.deepspeed_version=0.8.3", "zero.stage=2", "zero.reduce_scatter=false"})
            .zero.communication_data_type == CommDataType::FP32);
  CHECK(load_one(path, {"zero.deepspeed_version=0.9.0", "zero.stage=2"}).zero.communication_data_type ==
        CommDataType::FP32);
  CHECK(load_one(path, {"zero.deepspeed_version=0.8.1", "zero.stage=0"}).zero.communication_data_type ==
        CommDataType::FP32);
}

TEST_CASE("load_scenario: training.torch_version reads torch.__version__ and names the key when bad",
          "[scenario][validation]") {
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  // Default 2.8: the first release without ProcessGroupNCCL's record_stream (pytorch#150398).
  CHECK(load_one(path, {}).training.torch_version == std::array<int, 2>{2, 8});
  // NGC PyTorch 25.01 reports 2.6.0a0+ecf3bae40a: the patch, pre-release and local parts are ignored.
  const auto ngc = load_one(path, {"training.torch_version=2.6.0a0+ecf3bae40a"});
  CHECK(ngc.training.torch_version == std::array<int, 2>{2, 6});
  CHECK(ngc.training.torch_before(2, 8));
  CHECK(load_one(path, {"training.torch_version=2.10"}).training.torch_version == std::array<int, 2>{2, 10});
  REQUIRE_THROWS_WITH(load_one(path, {"training.torch_version=latest"}),
                      Contains("<cli>") && Contains("training.torch_version") &&
                          Contains("expected a PyTorch release such as 2.6"));
  REQUIRE_THROWS_WITH(load_one(path, {"training.torch_version=2"}), Contains("expected a PyTorch release"));
  REQUIRE_THROWS_WITH(load_one(path, {"training.torch_version=02.6"}), Contains("expected a PyTorch release"));
}

TEST_CASE("load_scenario: training.torch_nccl_avoid_record_streams exists from torch 2.1", "[scenario][validation]") {
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  // pytorch#89880 (merged 2023-02-25) named it NCCL_AVOID_RECORD_STREAMS; #97053 (merged 2023-03-25, after the
  // 2.0.0 release of 2023-03-15) gave it the TORCH_ prefix: 2.1 is the first release that reads the variable.
  CHECK_FALSE(load_one(path, {}).training.torch_nccl_avoid_record_streams);
  CHECK(load_one(path, {"training.torch_version=2.1", "training.torch_nccl_avoid_record_streams=true"})
            .training.torch_nccl_avoid_record_streams);
  REQUIRE_THROWS_WITH(load_one(path, {"training.torch_version=2.0", "training.torch_nccl_avoid_record_streams=true"}),
                      Contains("<cli>") && Contains("training.torch_nccl_avoid_record_streams") &&
                          Contains("does not exist before torch 2.1"));
  CHECK(load_one(path, {"training.torch_version=1.13", "training.torch_nccl_avoid_record_streams=false"})
            .training.torch_version == std::array<int, 2>{1, 13});
}

TEST_CASE("load_scenario: a bad zero.deepspeed_version is one line naming the key", "[scenario][validation]") {
  FixtureDir dir;
  const std::string path = dir.write("s.yaml", gpt2_scenario());
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=latest"}),
                      Contains("<cli>") && Contains("zero.deepspeed_version") &&
                          Contains("expected a DeepSpeed release such as 0.9.0"));
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.9.0.1"}), Contains("expected a DeepSpeed release"));
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.013.0"}), Contains("expected a DeepSpeed release"));
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.3.14"}),
                      Contains("older than the first release zerosim models (0.3.15)"));
  // Stage 3 parameter offload without optimizer offload: asserted in stage3.py up to v0.6.5, allowed from v0.6.6.
  REQUIRE_THROWS_WITH(load_one(path, {"zero.stage=3", "zero.offload_param=cpu", "zero.deepspeed_version=0.6.5"}),
                      Contains("<cli>") && Contains("zero.") &&
                          Contains("parameter offload without optimizer offload is refused before DeepSpeed 0.6.6"));
  CHECK(load_one(path, {"zero.stage=3", "zero.offload_param=cpu", "zero.deepspeed_version=0.6.6"}).zero.offload_param ==
        scenario::OffloadDevice::CPU);
  CHECK(load_one(path, {"zero.stage=3", "zero.offload_param=cpu", "zero.offload_optimizer=cpu",
                        "zero.deepspeed_version=0.3.15", "training.precision=fp16"})
            .zero.offload_param == scenario::OffloadDevice::CPU);
  // A key the release does not have is an error, not silently dropped.
  REQUIRE_THROWS_WITH(load_one(path, {"zero.deepspeed_version=0.10.0", "zero.use_multi_rank_bucket_allreduce=true"}),
                      Contains("zero.use_multi_rank_bucket_allreduce") &&
                          Contains("does not exist before DeepSpeed 0.12.4"));
}

TEST_CASE("load_scenario: a model whose shape --set changed says so in its name", "[scenario]") {
  FixtureDir dir;
  const std::string sc = dir.write("m.yaml", gpt2_scenario(""));
  CHECK(load_one(sc).model.name == "gpt2");
  const Scenario s = load_one(sc, {"model.layers=5", "model.hidden=1536"});
  CHECK(s.model.layers == 5);
  // Keys in dotted-key order, each with the value given.
  CHECK(s.model.name == "gpt2 (--set hidden=1536, layers=5)");
  // A rename is not a change of shape.
  CHECK(load_one(sc, {"model.name=mine"}).model.name == "mine");
}

TEST_CASE("load_scenario: a preset with keys overridden in the scenario says so in its name", "[scenario]") {
  // `model: {preset: llama-2-7b, layers: 16}` has half the layers of LLaMA-2 7B (3.5B parameters): labelled plainly
  // "llama-2-7b" it read as the 7B model in every header (a new user's report).
  FixtureDir dir;
  const auto model = [&dir](const std::string& name, const std::string& m) {
    return load_one(dir.write(name, "name: x\nmodel: " + m + "\ntraining:\n  seq_len: 128\n")).model;
  };
  const ModelSpec half = model("half.yaml", "{preset: llama-2-7b, layers: 16}");
  CHECK(half.layers == 16);
  CHECK(half.name == "llama-2-7b (modified: layers=16)");
  // Keys in dotted-key order, each with the value given.
  CHECK(model("two.yaml", "{preset: llama-2-7b, layers: 16, hidden: 2048}").name ==
        "llama-2-7b (modified: hidden=2048, layers=16)");
  // A scenario that names its model says what it is itself; a plain preset is unchanged.
  CHECK(model("named.yaml", "{preset: llama-2-7b, name: llama-7b-width-16l, layers: 16}").name == "llama-7b-width-16l");
  CHECK(model("plain.yaml", "{preset: llama-2-7b}").name == "llama-2-7b");
  CHECK(model("scalar.yaml", "llama-2-7b").name == "llama-2-7b");
  // A --set on top keeps its own mark; a key --set replaces is no longer the file's change.
  const std::string both = dir.write("both.yaml",
                                     "name: x\nmodel: {preset: llama-2-7b, layers: 16}\ntraining:\n"
                                     "  seq_len: 128\n");
  CHECK(load_one(both, {"model.intermediate=8192"}).model.name ==
        "llama-2-7b (modified: layers=16) (--set intermediate=8192)");
  CHECK(load_one(both, {"model.layers=8"}).model.name == "llama-2-7b (--set layers=8)");
}

TEST_CASE("load_scenario: a GPU or CPU preset with keys changed inline says so in its name, as a model does",
          "[scenario]") {
  // `gpu: {preset: a100-80gb, memory: 40GiB}` is not the 80 GiB card its preset's name says: every header and
  // result.json called it "a100-80gb" (a new user's report). The preset's own name stays in `preset`.
  FixtureDir dir;
  const auto cluster = [&dir](const std::string& name, const std::string& c) {
    return load_one(dir.write(name, gpt2_scenario("", "cluster: " + c + "\n"))).cluster;
  };
  const ClusterSpec half = cluster("g.yaml", "{topology: dgx-a100, gpu: {preset: a100-80gb, memory: 40GiB}}");
  CHECK(half.gpu.memory.value() == Approx(40.0 * 1073741824.0));
  CHECK(half.gpu.name == "a100-80gb (modified: memory=40GiB)");
  CHECK(half.gpu.preset == "a100-80gb");
  // Without `preset` the topology's GPU is the base; keys in dotted-key order; `source` changes no number.
  CHECK(cluster("g2.yaml", "{topology: dgx-a100, gpu: {sm_count: 54, memory: 40GiB, source: mine}}").gpu.name ==
        "a100-80gb (modified: memory=40GiB, sm_count=54)");
  // A preset chosen by name, in either form, is the preset.
  CHECK(cluster("g3.yaml", "{topology: dgx-a100, gpu: h100-sxm}").gpu.name == "h100-sxm");
  CHECK(cluster("g4.yaml", "{topology: dgx-a100, gpu: {preset: h100-sxm}}").gpu.name == "h100-sxm");
  // The CPU likewise (topologies/cpus/dgx-a100-epyc-7742.yaml has 8 NUMA nodes).
  const ClusterSpec cpu = cluster("c.yaml", "{topology: dgx-a100, cpu: {preset: dgx-a100-epyc-7742, numa_nodes: 2}}");
  CHECK(cpu.cpu.name == "dgx-a100-epyc-7742 (modified: numa_nodes=2)");
  CHECK(cpu.cpu.preset == "dgx-a100-epyc-7742");
  CHECK(cluster("c2.yaml", "{topology: dgx-a100}").cpu.name == "dgx-a100-epyc-7742");
  // --set keeps its own mark, as for the model; a key --set replaces is no longer the file's change.
  const std::string sc =
      dir.write("s.yaml", gpt2_scenario("", "cluster: {topology: dgx-a100, gpu: {memory: 40GiB}}\n"));
  CHECK(load_one(sc, {"cluster.gpu.sm_count=54"}).cluster.gpu.name ==
        "a100-80gb (modified: memory=40GiB) (--set sm_count=54)");
  CHECK(load_one(sc, {"cluster.gpu.memory=20GiB"}).cluster.gpu.name == "a100-80gb (--set memory=20GiB)");
  CHECK(load_one(sc, {"cluster.cpu.cores=64"}).cluster.cpu.name == "dgx-a100-epyc-7742 (--set cores=64)");
  // A label is not a preset name: NVLS still finds the H100 behind a modified one.
  CHECK(load_one(dir.write("n.yaml", gpt2_scenario("", "cluster: {topology: dgx-h100, nvls: true}\n")),
                 {"cluster.gpu.memory=40GiB"})
            .cluster.nvls);
}

TEST_CASE("load_scenario: a cluster preset with keys changed says so in its name, and so does its NVMe", "[scenario]") {
  // newuser30 finding 15: a dgx-a100 re-shaped to 4 GPUs and one 200 Gb/s NIC per node was reported "on dgx-a100".
  // The cluster's label lists the changed keys as the GPU's does; the GPU, CPU (labelled themselves), nodes and
  // topology are not listed, nor `source` at any depth.
  FixtureDir dir;
  const std::string sc =
      dir.write("c.yaml", gpt2_scenario("",
                                        "cluster:\n  topology: dgx-a100\n  nodes: 4\n  gpus_per_node: 4\n"
                                        "  nics_per_node: 1\n  nic: {bandwidth: 200Gbps, source: mine}\n"
                                        "  host_memory: 512GiB\n  gpu: a100-40gb\n  cpu: {cores: 64}\n"));
  const ClusterSpec c = load_one(sc).cluster;
  CHECK(c.name == "dgx-a100 (modified: gpus_per_node=4, host_memory=512GiB, nic.bandwidth=200Gbps, nics_per_node=1)");
  CHECK(c.topology == "dgx-a100");
  CHECK(c.cpu.name == "dgx-a100-epyc-7742 (modified: cores=64)");
  // --set keeps its own mark; a key --set replaces is no longer the file's change.
  CHECK(load_one(sc, {"cluster.nics_per_node=2", "cluster.nodes=2"}).cluster.name ==
        "dgx-a100 (modified: gpus_per_node=4, host_memory=512GiB, nic.bandwidth=200Gbps) (--set nics_per_node=2)");
  // An unchanged preset is its name.
  CHECK(load_one(dir.write("p.yaml", gpt2_scenario("", "cluster: {topology: dgx-a100, nodes: 2}\n"))).cluster.name ==
        "dgx-a100");
  // NVMe: the preset's figures, with its drive count (topologies/clusters/dgx-a100.yaml: 8 x 3.84 TB U.2 NVMe, RAID-0,
  // 8 x 7.0 = 56 GB/s read, 8 x 3.8 = 30.4 GB/s write).
  CHECK(c.nvme.name == "dgx-a100");
  CHECK(c.nvme.drives == 8);
  CHECK(c.nvme.read_bandwidth.value() == Approx(8 * 7.0e9));
  CHECK(c.nvme.write_bandwidth.value() == Approx(8 * 3.8e9));
  // A scenario's own drive bandwidths: the label says so, and the preset's drive count no longer describes them.
  const ClusterSpec one =
      load_one(sc, {"cluster.nvme.read_bandwidth=6.8GBps", "cluster.nvme.write_bandwidth=4GBps"}).cluster;
  CHECK(one.nvme.name == "dgx-a100 (--set read_bandwidth=6.8GBps, write_bandwidth=4GBps)");
  CHECK(one.nvme.drives == 0);
  CHECK(one.name ==
        "dgx-a100 (modified: gpus_per_node=4, host_memory=512GiB, nic.bandwidth=200Gbps, nics_per_node=1) "
        "(--set nvme.read_bandwidth=6.8GBps, nvme.write_bandwidth=4GBps)");
  const ClusterSpec counted = load_one(sc, {"cluster.nvme.read_bandwidth=6.8GBps", "cluster.nvme.drives=1"}).cluster;
  CHECK(counted.nvme.drives == 1);
  CHECK(counted.nvme.name == "dgx-a100 (--set drives=1, read_bandwidth=6.8GBps)");
}

TEST_CASE("load_scenario: bytes that are not UTF-8 are an input error naming the line and column", "[scenario]") {
  FixtureDir dir;
  // Line 3 holds a Latin-1 e-acute (0xE9), as an editor saving Latin-1 writes it.
  const std::string sc = dir.write("l1.yaml", "name: x\nmodel: gpt2\ndescription: \"caf\xe9\"\n");
  REQUIRE_THROWS_WITH(load_scenario(sc, {}), Contains("l1.yaml:3: scenario: not valid UTF-8 (byte 0xE9 at column 18)"));
  // Overlong "/" (0xC0 0xAF) and a UTF-16 surrogate (0xED 0xA0 0x80) are ill-formed too; 4-byte U+1F600 is fine.
  CHECK_THROWS_WITH(load_scenario(dir.write("o.yaml", "name: x\nmodel: gpt2\ndescription: \"\xc0\xaf\"\n"), {}),
                    Contains("o.yaml:3"));
  CHECK_THROWS_WITH(load_scenario(dir.write("s.yaml", "name: x\nmodel: gpt2\ndescription: \"\xed\xa0\x80\"\n"), {}),
                    Contains("s.yaml:3"));
  CHECK_NOTHROW(load_scenario(dir.write("ok.yaml", "name: x\nmodel: gpt2\ndescription: \"\xf0\x9f\x98\x80\"\n"), {}));
  REQUIRE_THROWS_WITH(load_scenario(dir.write("c.yaml", "name: x\nmodel: gpt2\n"), {"description=caf\xe9"}),
                      Contains("<cli>: description: not valid UTF-8"));
}

TEST_CASE("load_scenario: heads not dividing hidden is blamed on the key the user wrote, not the preset's",
          "[scenario][validation]") {
  FixtureDir dir;
  // The preset (gpt2.yaml) sets heads 12; the scenario's override sets hidden 1000 on line 2.
  const std::string sc = dir.write("ov.yaml", "name: m\nmodel: {preset: gpt2, hidden: 1000}\n");
  REQUIRE_THROWS_WITH(load_scenario(sc, {}),
                      Contains("ov.yaml:2: model.hidden: heads (12) must divide hidden (1000) (model.heads = 12 at "
                               "gpt2.yaml:"));
  REQUIRE_THROWS_WITH(load_scenario(dir.write("g.yaml", "name: m\nmodel: gpt2\n"), {"model.hidden=1000"}),
                      Contains("<cli>: model.hidden: heads (12) must divide hidden (1000)"));
}

TEST_CASE("load_scenario: model.activation comes from an HF GPT-2 config and is a gpt2-family key",
          "[scenario][validation]") {
  FixtureDir dir;
  // GPT2Config's activation_function defaults to gelu_new (transformers configuration_gpt2.py).
  const std::string cfg =
      dir.write("config.json", R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "n_positions": 128,
      "vocab_size": 100})");
  CHECK(load_one(dir.write("a.yaml", "name: a\nmodel: " + cfg + "\ntraining: {seq_len: 128}\n")).model.activation ==
        scenario::Activation::GELU_NEW);
  const std::string tanh = dir.write("tanh.json", R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
      "n_positions": 128, "vocab_size": 100, "activation_function": "gelu_pytorch_tanh"})");
  CHECK(load_one(dir.write("b.yaml", "name: b\nmodel: " + tanh + "\ntraining: {seq_len: 128}\n")).model.activation ==
        scenario::Activation::GELU);
  const std::string relu = dir.write("relu.json", R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4,
      "n_positions": 128, "vocab_size": 100, "activation_function": "relu"})");
  REQUIRE_THROWS_WITH(load_one(dir.write("c.yaml", "name: c\nmodel: " + relu + "\n")),
                      Contains("relu.json:2: model.activation_function: only gelu_new, gelu and gelu_pytorch_tanh"));
  REQUIRE_THROWS_WITH(load_one(dir.write("d.yaml", "name: d\nmodel: {preset: llama-2-7b, activation: gelu}\n")),
                      Contains("d.yaml:2: model.activation: is a gpt2-family key: llama blocks use SwiGLU"));
}

TEST_CASE("load_scenario: a YAML null model.head_dim means the default, as a config.json's null does",
          "[scenario][validation]") {
  // LlamaConfig head_dim=None means hidden_size // num_attention_heads; zerosim stores that default as 0. YAML `~` and
  // `null` now mean the same (before, "expected a whole number, got an empty value").
  FixtureDir dir;
  const auto head_dim = [&](const std::string& name, const std::string& model) {
    return load_one(dir.write(name, "name: a\nmodel: " + model + "\n")).model.head_dim;
  };
  CHECK(head_dim("tilde.yaml", "{preset: llama-2-7b, head_dim: ~}") == 0);
  CHECK(head_dim("null.yaml", "{preset: llama-2-7b, head_dim: null}") == 0);
  // Over a config.json that sets it (Mistral-NeMo: 128, not 5120 / 32 = 160), null is the default again: 0.
  const std::string nemo = dir.write("nemo/config.json", R"({"model_type": "mistral", "hidden_size": 5120,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "intermediate_size": 14336, "vocab_size": 131072, "max_position_embeddings": 1024000})");
  CHECK(head_dim("nemo128.yaml", "{preset: " + nemo + "}") == 128);
  CHECK(head_dim("nemo.yaml", "{preset: " + nemo + ", head_dim: ~}") == 0);
  // The same from the command line; the model's name says what --set changed.
  const std::string llama = dir.write("l.yaml", "name: a\nmodel: " + nemo + "\n");
  const Scenario cli = load_one(llama, {"model.head_dim=null"});
  CHECK(cli.model.head_dim == 0);
  CHECK_THAT(cli.model.name, Contains("(--set head_dim=null)"));
  // Null is "not written": GPT-2 accepts it (a written head_dim is a llama-family key), and heads must then divide
  // hidden again (32 does not divide 4100).
  CHECK(head_dim("g.yaml", "{preset: gpt2, head_dim: ~}") == 0);
  REQUIRE_THROWS_WITH(head_dim("odd.yaml", "{preset: llama-2-7b, hidden: 4100, head_dim: ~}"),
                      Contains("heads (32) must divide hidden (4100)"));
  // Other keys keep their rule: an empty value is an error naming file, line and key.
  REQUIRE_THROWS_WITH(head_dim("kv.yaml", "{preset: llama-2-7b, kv_heads: ~}"),
                      Contains("kv.yaml:2: model.kv_heads: expected a whole number, got an empty value"));
}

TEST_CASE("load_scenario: model.head_dim comes from a llama-family config.json and is a llama-family key",
          "[scenario][validation]") {
  FixtureDir dir;
  // mistralai/Mistral-Nemo-Base-2407 config.json (the keys zerosim reads): 32 heads of head_dim 128 on a hidden size
  // of 5120, so q_proj is 5120 -> 4096. Its checkpoint has 12,247,782,400 parameters (the hand count is in
  // tests/workload/workload_test.cpp); with head_dim ignored (d = 5120 / 32 = 160) it would come out at 12.77e9.
  const std::string nemo = dir.write("nemo/config.json", R"({"model_type": "mistral", "hidden_size": 5120,
    "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 14336, "vocab_size": 131072, "max_position_embeddings": 1024000,
    "tie_word_embeddings": false, "sliding_window": null})");
  const Scenario s = load_one(dir.write("n.yaml", "name: n\nmodel: " + nemo + "\ntraining: {seq_len: 1024}\n"));
  CHECK(s.model.head_dim == 128);
  CHECK(workload::build_workload(s.model, s.training).total_params == 12'247'782'400);
  // null, or hidden / heads itself (transformers saves head_dim in every LlamaConfig it writes), is the default: 0.
  const std::string base = R"({"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256)";
  dir.write("null/config.json", base + R"(, "head_dim": null})");
  CHECK(load_one(dir.write("null.yaml", "name: a\nmodel: null/config.json\n")).model.head_dim == 0);
  dir.write("same/config.json", base + R"(, "head_dim": 128})");
  CHECK(load_one(dir.write("same.yaml", "name: a\nmodel: same/config.json\n")).model.head_dim == 0);
  // A bad head_dim in the config is named at its line (line 3 of the file).
  dir.write("neg/config.json", base + R"(,
    "head_dim": -8})");
  REQUIRE_THROWS_WITH(load_one(dir.write("neg.yaml", "name: a\nmodel: neg/config.json\n")),
                      Contains("config.json:3: model.head_dim: expected a positive whole number, got '-8'"));
  // A config.json integer beyond any head dimension (2^52) is rejected at its line, not overflowed into the counts.
  dir.write("huge/config.json", base + R"(,
    "head_dim": 4503599627370496})");
  REQUIRE_THROWS_WITH(load_one(dir.write("huge.yaml", "name: a\nmodel: huge/config.json\n")),
                      Contains("config.json:3: model.head_dim:") && Contains("is not an attention head dimension"));
  // Inline: a head_dim frees heads x head_dim from hidden (heads 32 do not divide 4100; without head_dim that is
  // an error, whose hint names the key).
  const std::string odd = dir.write("odd.yaml", "name: a\nmodel: {preset: llama-2-7b, hidden: 4100}\n");
  REQUIRE_THROWS_WITH(load_one(odd), Contains("heads (32) must divide hidden (4100)"));
  REQUIRE_THROWS_WITH(load_one(odd), Contains("or set model.head_dim"));
  CHECK(load_one(odd, {"model.head_dim=128"}).model.head_dim == 128);
  // Negative: the key's own check.
  REQUIRE_THROWS_WITH(load_one(dir.write("m.yaml", "name: a\nmodel: llama-2-7b\n"), {"model.head_dim=-8"}),
                      Contains("<cli>: model.head_dim: must not be negative, got '-8'"));
  // GPT-2 and OPT split hidden evenly over their heads: the key is rejected where it was written.
  REQUIRE_THROWS_WITH(load_one(dir.write("g.yaml", "name: a\nmodel: {preset: gpt2, head_dim: 64}\n")),
                      Contains("g.yaml:2: model.head_dim: is a llama-family key: gpt2 blocks split hidden evenly over "
                               "the heads; remove it"));
  REQUIRE_THROWS_WITH(load_one(dir.write("o.yaml", "name: a\nmodel: opt-1.3b\n"), {"model.head_dim=64"}),
                      Contains("<cli>: model.head_dim: is a llama-family key: opt blocks"));
}

TEST_CASE("load_scenario: ZeRO++ and MiCS ds_config fields that change DeepSpeed's behaviour are kept for the report",
          "[scenario][unit]") {
  // DeepSpeed's defaults (runtime/zero/config.py): zero_hpz_partition_size 1, quantization flags false,
  // mics_shard_size -1. Only values that turn a feature on are kept (zero.unmodelled_ds_fields, noted by the report).
  FixtureDir dir;
  const std::string sc = dir.write("ds.yaml", gpt2_scenario("ds.json"));
  dir.write("ds.json",
            "{\"zero_optimization\": {\"stage\": 3, \"zero_hpz_partition_size\": 8,\n"
            "  \"zero_quantized_weights\": true, \"zero_quantized_gradients\": false}}\n");
  const Scenario on = load_one(sc);
  REQUIRE(on.zero.unmodelled_ds_fields.size() == 2);
  CHECK(on.zero.unmodelled_ds_fields[0] == std::make_pair(std::string("zero_hpz_partition_size"), std::string("8")));
  CHECK(on.zero.unmodelled_ds_fields[1] == std::make_pair(std::string("zero_quantized_weights"), std::string("true")));
  // The defaults written out: nothing to note.
  dir.write("ds.json",
            "{\"zero_optimization\": {\"stage\": 3, \"zero_hpz_partition_size\": 1,\n"
            "  \"zero_quantized_weights\": false, \"mics_shard_size\": -1, \"zeropp_loco_param\": null}}\n");
  CHECK(load_one(sc).zero.unmodelled_ds_fields.empty());
  dir.write("ds.json", "{\"zero_optimization\": {\"stage\": 3, \"mics_shard_size\": 4}}\n");
  CHECK(load_one(sc).zero.unmodelled_ds_fields.front().first == "mics_shard_size");
  // A wrong type is an input error at its line, as DeepSpeed's pydantic config would refuse it.
  dir.write("ds.json", "{\"zero_optimization\": {\"stage\": 3,\n  \"zero_hpz_partition_size\": \"8\"}}\n");
  REQUIRE_THROWS_WITH(load_scenario(sc), Contains("ds.json:2: zero_optimization.zero_hpz_partition_size: expected a "
                                                  "whole number, got '\"8\"'"));
  dir.write("ds.json", "{\"zero_optimization\": {\"stage\": 3,\n  \"zero_quantized_weights\": 1}}\n");
  REQUIRE_THROWS_WITH(load_scenario(sc),
                      Contains("ds.json:2: zero_optimization.zero_quantized_weights: expected true or false"));
}

TEST_CASE("load_scenario: eager attention's seq_len^2 bytes must fit zerosim's 64-bit memory counts",
          "[scenario][unit]") {
  // llama-2-7b: 32 heads, 32 layers. 16 B x 32 x 1 x s^2 x 32 <= 2^60 B gives s <= 2^23 = 8388608. Past about 2^28
  // the byte counts wrapped around (peak allocated at seq 2^30 came out below seq 2^20's); now it is an input error.
  FixtureDir dir;
  const std::string sc =
      dir.write("long.yaml",
                "name: long\nmodel: llama-2-7b\ntraining:\n  seq_len: 1073741824\n  flash_attention: false\n");
  REQUIRE_THROWS_WITH(load_scenario(sc),
                      Contains("long.yaml:4: training.seq_len: 1073741824 with eager attention "
                               "(training.flash_attention: false) is above 8388608, the limit for this model and "
                               "micro-batch") &&
                          Contains("must stay below 2^60 B (1 EiB)") && Contains("set training.flash_attention: true"));
  CHECK(load_one(sc, {"training.seq_len=8388608"}).training.seq_len == 8388608);
  REQUIRE_THROWS_WITH(load_scenario(sc, {"training.seq_len=8388609"}),
                      Contains("<cli>: training.seq_len: 8388609 with eager attention"));
  // Twice the micro-batch halves the limit on s^2: 2^23 / sqrt(2) = 5931641.
  REQUIRE_THROWS_WITH(load_scenario(sc, {"training.seq_len=8388608", "training.micro_batch=2"}),
                      Contains("is above 5931641"));
  // FlashAttention keeps no s x s tensor: only the 2^30 tokens limit applies.
  CHECK(load_one(sc, {"training.flash_attention=true"}).training.seq_len == 1073741824);
}

TEST_CASE("load_scenario: unset, training.flash_attention is what transformers' sdpa runs on the GPU",
          "[scenario][unit]") {
  // torch's scaled_dot_product_attention picks the FlashAttention-2 kernel for bf16/fp16 on Ampere and newer
  // (gpu.flash_attention: true in the A100, H100 and RTX 4090 presets) and has none on V100 (false): eager there.
  FixtureDir dir;
  const std::string a100 = dir.write("a.yaml", "name: a\nmodel: gpt2\ncluster: {topology: dgx-a100}\n");
  const std::string v100 = dir.write("v.yaml", "name: v\nmodel: gpt2\ncluster: {topology: dgx2-v100}\n");
  CHECK(load_one(a100).training.flash_attention);
  CHECK_FALSE(load_one(v100).training.flash_attention);
  // Written, it is kept: false on an A100 (eager), and true on a V100 is the input error it always was.
  CHECK_FALSE(load_one(a100, {"training.flash_attention=false"}).training.flash_attention);
  REQUIRE_THROWS_WITH(load_scenario(v100, {"training.flash_attention=true"}),
                      Contains("FlashAttention does not run on GPU"));
}

TEST_CASE("load_scenario: a mesh node on several nodes says how to approximate it, not 'use switch'", "[scenario]") {
  // mi300x-8: intra_node.bandwidth is one of a GPU's 7 peer links (64 GB/s/dir). The switch star gives each GPU one
  // link of intra_node bandwidth, so switching topology without changing it models 1/7 of the GPU's bandwidth; the
  // hint names the aggregate, 7 x 64 = 448 GB/s/dir.
  FixtureDir dir;
  const std::string sc = dir.write("mesh.yaml", "name: mesh\nmodel: gpt2\ncluster:\n  topology: mi300x-8\n");
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.nodes=2"}),
                      Contains("<cli>: cluster.nodes: mesh is modelled on one node only, got 2 nodes") &&
                          Contains("several mesh nodes are not modelled; simulate one node") &&
                          Contains("intra_node.bandwidth set to each GPU's aggregate link (here 7 peer links x 64GBps "
                                   "= 448GBps)") &&
                          !Contains("use intra_node_topology: switch on several nodes"));
}

TEST_CASE("load_scenario: bf16 and FlashAttention on a GPU that cannot run them are input errors naming the key",
          "[scenario]") {
  // v100-32gb: gpu.bf16 false (Volta tensor cores are fp16 only, NVIDIA Tesla V100 whitepaper) and
  // gpu.flash_attention false (FlashAttention 2: Ampere/Ada/Hopper, 1.x: Turing/Ampere; flash-attention README).
  FixtureDir dir;
  const std::string sc = dir.write("v.yaml",
                                   "name: v\nmodel: gpt2\ntraining:\n  seq_len: 128\n  precision: bf16\n"
                                   "cluster:\n  topology: dgx2-v100\n");
  REQUIRE_THROWS_WITH(load_scenario(sc), Contains("v.yaml:5: training.precision: bf16 needs bf16 tensor cores, which "
                                                  "GPU 'v100-32gb' does not have") &&
                                             Contains("use training.precision: fp16"));
  CHECK(load_one(sc, {"training.precision=fp16"}).training.precision == Precision::FP16);
  // Unset, the precision is fp16 on such a card (bf16 elsewhere).
  const std::string unset = dir.write("u.yaml", "name: u\nmodel: gpt2\ncluster:\n  topology: dgx2-v100\n");
  CHECK(load_one(unset).training.precision == Precision::FP16);
  CHECK(load_one(unset, {"cluster.topology=dgx-a100"}).training.precision == Precision::BF16);
  // From a ds_config, the error names its field and line.
  dir.write("ds.json", "{\"zero_optimization\": {\"stage\": 2},\n  \"bf16\": {\"enabled\": true}}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("d.yaml",
                                              "name: d\nmodel: gpt2\ncluster:\n  topology: dgx2-v100\n"
                                              "zero:\n  deepspeed_config: ds.json\n")),
                      Contains("ds.json:2: bf16.enabled: bf16 needs bf16 tensor cores"));
  // FlashAttention.
  REQUIRE_THROWS_WITH(load_scenario(unset, {"training.flash_attention=true"}),
                      Contains("<cli>: training.flash_attention: FlashAttention does not run on GPU 'v100-32gb'") &&
                          Contains("use training.flash_attention: false (eager attention)"));
  CHECK(load_one(unset, {"training.flash_attention=true", "cluster.topology=dgx-a100"}).training.flash_attention);
}

TEST_CASE("load_scenario: blanks around a --set's '=' are not part of the key", "[scenario][unit]") {
  // `--set 'zero.stage = 2'` was reported as "zero.stage : unknown key" (new-user 15 nit 15).
  CHECK(normalize_override("zero.stage = 2") == "zero.stage=2");
  CHECK(normalize_override(" \tzero.stage\t=  2") == "zero.stage=2");
  CHECK(normalize_override("model.name=a b") == "model.name=a b"); // blanks inside the value stay
  CHECK(normalize_override("no-equals") == "no-equals");
  FixtureDir dir;
  const std::string sc = dir.write("s.yaml", gpt2_scenario());
  CHECK(load_one(sc, {"zero.stage = 2"}).zero.stage == 2);
  CHECK(load_one(sc, {"training.micro_batch =4"}).training.micro_batch == 4);
  REQUIRE_THROWS_WITH(load_scenario(sc, {" = 2"}), Contains("<cli>: =2: expected an override 'dotted.key=value'"));
}

TEST_CASE("load_scenario: cluster.nccl_channels above NCCL's limit or the GPU's SMs is an error at its line",
          "[scenario][unit]") {
  FixtureDir dir;
  const auto yaml = [](const std::string& extra) {
    return "name: c\nmodel: gpt2\ntraining:\n  seq_len: 128\ncluster:\n  topology: dgx-a100\n" + extra;
  };
  // 10000 channels: NCCL runs at most 64.
  REQUIRE_THROWS_WITH(load_scenario(dir.write("a.yaml", yaml("  nccl_channels: 10000\n"))),
                      Contains("a.yaml:7: cluster.nccl_channels: NCCL runs at most 64 channels"));
  // The auto 16 channels of an NVLink node against a GPU of 8 SMs: the SM count set on the CLI is named.
  REQUIRE_THROWS_WITH(load_scenario(dir.write("b.yaml", yaml("")), {"cluster.gpu.sm_count=8"}),
                      Contains("16 NCCL channels would take all 8 SMs"));
  // 32 channels on the A100's 108 SMs are fine.
  CHECK(load_one(dir.write("c.yaml", yaml("  nccl_channels: 32\n"))).cluster.nccl_channels == 32);
}

TEST_CASE(
    "load_scenario: zero.stage3_model_persistence_threshold is read from YAML and from ds_config under both "
    "names (DeepSpeed config.py model_persistence_threshold, alias stage3_model_persistence_threshold)",
    "[scenario][validation]") {
  FixtureDir dir;
  SECTION("YAML, default and the two ds_config spellings") {
    CHECK(load_one(dir.write("plain.yaml", gpt2_scenario())).zero.stage3_model_persistence_threshold ==
          ZeroConfig::kNoPersistenceCap);
    const std::string sc =
        dir.write("ok.yaml", gpt2_scenario("", "zero:\n  stage: 3\n  stage3_model_persistence_threshold: 5e6\n"));
    CHECK(load_one(sc).zero.stage3_model_persistence_threshold == 5'000'000);
    dir.write("a.json", "{\"zero_optimization\": {\"stage\": 3, \"model_persistence_threshold\": 300}}");
    CHECK(load_one(dir.write("a.yaml", gpt2_scenario("a.json"))).zero.stage3_model_persistence_threshold == 300);
    dir.write("b.json", "{\"zero_optimization\": {\"stage\": 3, \"stage3_model_persistence_threshold\": 4e5}}");
    CHECK(load_one(dir.write("b.yaml", gpt2_scenario("b.json"))).zero.stage3_model_persistence_threshold == 400'000);
  }
  SECTION("a negative cap names file:line: key") {
    // line 5: zero:, line 6: stage, line 7: the cap
    const std::string sc =
        dir.write("bad.yaml", gpt2_scenario("", "zero:\n  stage: 3\n  stage3_model_persistence_threshold: -1\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("bad.yaml:7: zero.stage3_model_persistence_threshold"));
    dir.write("bad.json",
              "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"model_persistence_threshold\": "
              "\"lots\"\n  }\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("badj.yaml", gpt2_scenario("bad.json"))),
                        Contains("bad.json:4: zero_optimization.model_persistence_threshold"));
  }
}

TEST_CASE(
    "load_scenario: zero.communication_data_type is read from YAML and from the ds_config's top level, "
    "case-insensitively, and a bad value names file:line: key (DeepSpeed config.py get_communication_data_type)",
    "[scenario][validation]") {
  FixtureDir dir;
  SECTION("YAML value, default, and the top-level ds_config key in any case") {
    CHECK(load_one(dir.write("plain.yaml", gpt2_scenario())).zero.communication_data_type == CommDataType::MODEL);
    const std::string sc =
        dir.write("ok.yaml", gpt2_scenario("", "zero:\n  stage: 2\n  communication_data_type: fp32\n"));
    CHECK(load_one(sc).zero.communication_data_type == CommDataType::FP32);
    dir.write("ds.json", "{\n  \"communication_data_type\": \"FP32\",\n  \"zero_optimization\": {\"stage\": 3}\n}\n");
    CHECK(load_one(dir.write("ds.yaml", gpt2_scenario("ds.json"))).zero.communication_data_type == CommDataType::FP32);
    dir.write("null.json", "{\"communication_data_type\": null, \"zero_optimization\": {\"stage\": 3}}");
    CHECK(load_one(dir.write("null.yaml", gpt2_scenario("null.json"))).zero.communication_data_type ==
          CommDataType::MODEL);
    // A key written in the scenario wins over the JSON's.
    const std::string both = dir.write("both.yaml", gpt2_scenario("ds.json", "  communication_data_type: bf16\n"));
    CHECK(load_one(both).zero.communication_data_type == CommDataType::BF16);
  }
  SECTION("int8 in the ds_config names the JSON file, line and key") {
    dir.write("bad.json", "{\n  \"zero_optimization\": {\"stage\": 3},\n  \"communication_data_type\": \"int8\"\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                        Contains("bad.json:3: communication_data_type: expected one of fp32|fp16|bf16, got 'int8'"));
    dir.write("num.json", "{\n  \"communication_data_type\": 32\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("num.yaml", gpt2_scenario("num.json"))),
                        Contains("num.json:2: communication_data_type: expected fp16, bf16 or fp32, got '32'"));
  }
  SECTION("a bad YAML value names the scenario line") {
    // line 5: zero:, line 6: stage, line 7: communication_data_type
    const std::string sc =
        dir.write("bad.yaml", gpt2_scenario("", "zero:\n  stage: 2\n  communication_data_type: int8\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("bad.yaml:7: zero.communication_data_type"));
  }
}

TEST_CASE(
    "load_scenario: zero.stage3_use_all_reduce_for_fetch_params is read from YAML and from ds_config under both "
    "names (DeepSpeed config.py use_all_reduce_for_fetch_params, alias stage3_use_all_reduce_for_fetch_params)",
    "[scenario][validation]") {
  FixtureDir dir;
  CHECK_FALSE(load_one(dir.write("plain.yaml", gpt2_scenario())).zero.stage3_use_all_reduce_for_fetch_params);
  CHECK(load_one(dir.write("y.yaml",
                           gpt2_scenario("", "zero:\n  stage: 3\n  stage3_use_all_reduce_for_fetch_params: true\n")))
            .zero.stage3_use_all_reduce_for_fetch_params);
  for (const char* name : {"use_all_reduce_for_fetch_params", "stage3_use_all_reduce_for_fetch_params"}) {
    INFO(name);
    dir.write("ds.json", std::string("{\"zero_optimization\": {\"stage\": 3, \"") + name + "\": true}}");
    CHECK(load_one(dir.write("ds.yaml", gpt2_scenario("ds.json"))).zero.stage3_use_all_reduce_for_fetch_params);
  }
  // Not a boolean: the JSON's line and the field as written.
  dir.write("bad.json",
            "{\n  \"zero_optimization\": {\n    \"stage\": 3,\n    \"use_all_reduce_for_fetch_params\": 1\n"
            "  }\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                      Contains(
                          "bad.json:4: zero_optimization.use_all_reduce_for_fetch_params: expected true or false"));
}

TEST_CASE(
    "load_scenario: zero.stage3_allgather_sequential is read from YAML and from ds_config under both names "
    "(DeepSpeed config.py allgather_sequential, alias stage3_allgather_sequential)",
    "[scenario][validation]") {
  FixtureDir dir;
  CHECK_FALSE(load_one(dir.write("plain.yaml", gpt2_scenario())).zero.stage3_allgather_sequential);
  CHECK(load_one(dir.write("y.yaml", gpt2_scenario("", "zero:\n  stage: 3\n  stage3_allgather_sequential: true\n")))
            .zero.stage3_allgather_sequential);
  for (const char* name : {"allgather_sequential", "stage3_allgather_sequential"}) {
    INFO(name);
    dir.write("ds.json", std::string("{\"zero_optimization\": {\"stage\": 3, \"") + name + "\": true}}");
    CHECK(load_one(dir.write("ds.yaml", gpt2_scenario("ds.json"))).zero.stage3_allgather_sequential);
  }
  // line 5: zero:, line 6: stage, line 7: the key
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("bad.yaml",
                                    gpt2_scenario("", "zero:\n  stage: 3\n  stage3_allgather_sequential: 2\n"))),
                      Contains("bad.yaml:7: zero.stage3_allgather_sequential"));
}

TEST_CASE("load_scenario: LoRA on the llama-2-7b preset gives PEFT's printed counts", "[scenario][validation]") {
  // PEFT print_trainable_parameters(), Llama-2-7b-hf, r = 8, target_modules q_proj, v_proj (PEFT's llama default):
  // "trainable params: 4,194,304 || all params: 6,742,609,920". The preset alone is the checkpoint's 6,738,415,616.
  FixtureDir dir;
  const std::string sc = dir.write("l7.yaml", "name: l7\nmodel: llama-2-7b\ntraining:\n  seq_len: 512\n");
  const Scenario base = load_one(sc);
  CHECK(workload::build_workload(base.model, base.training).total_params == 6'738'415'616);
  const Scenario s = load_one(sc, {"training.lora_rank=8"});
  CHECK(s.training.lora_targets == std::vector<std::string>{"q_proj", "v_proj"});
  const auto w = workload::build_workload(s.model, s.training);
  CHECK(w.trainable_params == 4'194'304);
  CHECK(w.total_params == 6'742'609'920);
  // GPT-2's default is c_attn; a list given with --set is taken as written.
  FixtureDir d2;
  const std::string g = d2.write("g.yaml", gpt2_scenario());
  CHECK(load_one(g, {"training.lora_rank=8"}).training.lora_targets == std::vector<std::string>{"c_attn"});
  CHECK(load_one(g, {"training.lora_rank=8", "training.lora_targets=[c_fc, attn.c_proj]"}).training.lora_targets ==
        std::vector<std::string>{"c_fc", "attn.c_proj"});
  CHECK(load_one(g, {"training.lora_rank=8", "training.lora_targets=all-linear"}).training.lora_targets ==
        std::vector<std::string>{"all-linear"});
}

TEST_CASE("load_scenario: bad LoRA settings are one-line errors naming file, line and key", "[scenario][unit]") {
  FixtureDir dir;
  SECTION("a target that names no linear module of the family lists the valid names") {
    // gpt2_scenario: line 5 lora_rank, line 6 lora_targets.
    const std::string sc =
        dir.write("t.yaml", gpt2_scenario("", "", "  lora_rank: 8\n  lora_targets: [c_attn, q_proj]\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc),
                        Contains("t.yaml:6: training.lora_targets: 'q_proj' names no linear module of a gpt2 block") &&
                            Contains("valid: c_attn, c_proj, c_fc, attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, "
                                     "all-linear"));
    REQUIRE_THROWS_WITH(load_scenario(dir.write("t2.yaml", gpt2_scenario()),
                                      {"training.lora_rank=4", "training.lora_targets=[gate_proj]"}),
                        Contains("<cli>: training.lora_targets: 'gate_proj' names no linear module"));
  }
  SECTION("a rank above min(in, out) of a target") {
    // GPT-2 small c_attn is 768 -> 2304: at most 768.
    const std::string sc = dir.write("r.yaml", gpt2_scenario("", "", "  lora_rank: 769\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("r.yaml:5: training.lora_rank: rank 769 exceeds min(in, out) = "
                                                    "768 of attn.c_attn (768 -> 2304)"));
    CHECK_NOTHROW(load_scenario(sc, {"training.lora_rank=768"}));
  }
  SECTION("LoRA with trainable_fraction < 1") {
    const std::string sc = dir.write("f.yaml", gpt2_scenario("", "", "  lora_rank: 8\n  trainable_fraction: 0.01\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("f.yaml:5: training.lora_rank: LoRA and "
                                                    "training.trainable_fraction < 1 both say what trains"));
  }
  SECTION("targets or dropout without a rank") {
    const std::string sc = dir.write("n.yaml", gpt2_scenario("", "", "  lora_targets: [c_attn]\n"));
    REQUIRE_THROWS_WITH(load_scenario(sc), Contains("n.yaml:5: training.lora_targets: has no effect without LoRA"));
    const std::string sd = dir.write("d.yaml", gpt2_scenario("", "", "  lora_dropout: 0.1\n"));
    REQUIRE_THROWS_WITH(load_scenario(sd), Contains("d.yaml:5: training.lora_dropout: has no effect without LoRA"));
  }
  SECTION("malformed values") {
    const std::string sc = dir.write("m.yaml", gpt2_scenario());
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.lora_rank=0"}), Contains("<cli>: training.lora_rank:"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.lora_rank=8", "training.lora_dropout=1"}),
                        Contains("<cli>: training.lora_dropout: expected a probability in [0, 1)"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.lora_rank=8", "training.lora_targets=[]"}),
                        Contains("<cli>: training.lora_targets: expected at least one module name"));
    REQUIRE_THROWS_WITH(load_scenario(sc, {"training.lora_rank=8", "training.lora_targets={a: 1}"}),
                        Contains("<cli>: training.lora_targets: expected a list of module names"));
  }
}

TEST_CASE("load_scenario: the LoRA example loads with r = 16 on q_proj, v_proj", "[scenario][unit]") {
  // scenarios/examples/lora-llama-2-7b-single-gpu.yaml: 32 blocks x 2 targets x 16 x (4096 + 4096) = 8,388,608
  // trainable; all params 6,738,415,616 + 8,388,608 = 6,746,804,224; stage 2 and stage 3 compared.
  const std::string sc = std::string(ZEROSIM_DATA_DIR) + "/scenarios/examples/lora-llama-2-7b-single-gpu.yaml";
  const auto v = load_scenario(sc);
  REQUIRE(v.size() == 2);
  CHECK(v[0].scenario.zero.stage == 2);
  CHECK(v[1].scenario.zero.stage == 3);
  const auto w = workload::build_workload(v[0].scenario.model, v[0].scenario.training);
  CHECK(w.trainable_params == 8'388'608);
  CHECK(w.total_params == 6'746'804'224);
}

TEST_CASE(
    "load_scenario: training.gradient_clipping is read from YAML and from the ds_config's gradient_clipping, auto "
    "is HF Trainer's max_grad_norm default 1.0 with a note, and a bad value names file:line: key",
    "[scenario][validation]") {
  FixtureDir dir;
  SECTION("default 0 (DeepSpeed's), a YAML value, a ds_config number, and the scenario winning over the JSON") {
    CHECK(load_one(dir.write("plain.yaml", gpt2_scenario())).training.gradient_clipping == 0.0);
    CHECK(
        load_one(dir.write("y.yaml", gpt2_scenario("", "", "  gradient_clipping: 0.5\n"))).training.gradient_clipping ==
        0.5);
    dir.write("ds.json",
              "{\n  \"gradient_clipping\": 2.0,\n  \"bf16\": {\"enabled\": true},\n  \"zero_optimization\": "
              "{\"stage\": 2}\n}\n");
    const Scenario s = load_one(dir.write("ds.yaml", gpt2_scenario("ds.json")));
    CHECK(s.training.gradient_clipping == 2.0);
    CHECK(s.import_notes.empty());
    dir.write("int.json", "{\"gradient_clipping\": 1, \"zero_optimization\": {\"stage\": 2}}");
    CHECK(load_one(dir.write("int.yaml", gpt2_scenario("int.json"))).training.gradient_clipping == 1.0);
    CHECK(load_one(dir.write("both.yaml", gpt2_scenario("ds.json", "", "  gradient_clipping: 0\n")))
              .training.gradient_clipping == 0.0);
  }
  SECTION("\"auto\" is simulated as 1.0 with a note, unless the scenario sets it") {
    dir.write("auto.json", "{\n  \"gradient_clipping\": \"auto\",\n  \"zero_optimization\": {\"stage\": 2}\n}\n");
    const Scenario s = load_one(dir.write("auto.yaml", gpt2_scenario("auto.json")));
    CHECK(s.training.gradient_clipping == 1.0);
    REQUIRE(s.import_notes.size() == 1);
    CHECK_THAT(s.import_notes[0], Contains("gradient_clipping is \"auto\"") && Contains("--max_grad_norm") &&
                                      Contains("training.gradient_clipping = 1.0"));
    const Scenario set = load_one(dir.write("set.yaml", gpt2_scenario("auto.json", "", "  gradient_clipping: 0.3\n")));
    CHECK(set.training.gradient_clipping == 0.3);
    for (const auto& n : set.import_notes)
      CHECK_THAT(n, !Contains("gradient_clipping is \"auto\""));
  }
  SECTION("bad values name the JSON or scenario file, line and key") {
    dir.write("bad.json", "{\n  \"zero_optimization\": {\"stage\": 2},\n  \"gradient_clipping\": \"one\"\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("bad.yaml", gpt2_scenario("bad.json"))),
                        Contains("bad.json:3: gradient_clipping: expected a number (0 = no clipping) or \"auto\""));
    dir.write("neg.json", "{\n  \"gradient_clipping\": -1.0\n}\n");
    REQUIRE_THROWS_WITH(load_scenario(dir.write("neg.yaml", gpt2_scenario("neg.json"))),
                        Contains("neg.json:2: gradient_clipping"));
    // line 5: gradient_clipping under training:
    REQUIRE_THROWS_WITH(load_scenario(dir.write("y.yaml", gpt2_scenario("", "", "  gradient_clipping: big\n"))),
                        Contains("y.yaml:5: training.gradient_clipping"));
  }
}

TEST_CASE("load_scenario: training.precision fp32 loads, with eager attention unless FlashAttention is asked for",
          "[scenario][unit]") {
  FixtureDir dir;
  // The default cluster's GPU runs FlashAttention: unset, flash_attention follows it in bf16, but fp32 has no
  // FlashAttention kernel (flash-attn: fp16 and bf16 only), so it is false.
  const Scenario s = load_one(dir.write("f.yaml", gpt2_scenario("", "", "  precision: fp32\n")));
  CHECK(s.training.precision == Precision::FP32);
  CHECK_FALSE(s.training.flash_attention);
  CHECK_FALSE(s.training.tf32);
  CHECK(load_one(dir.write("b.yaml", gpt2_scenario())).training.flash_attention);
  const Scenario t = load_one(dir.write("t.yaml", gpt2_scenario("", "", "  precision: fp32\n  tf32: true\n")));
  CHECK(t.training.tf32);
  REQUIRE_THROWS_WITH(load_scenario(
                          dir.write("fa.yaml", gpt2_scenario("", "", "  precision: fp32\n  flash_attention: true\n"))),
                      Contains("fa.yaml:6: training.flash_attention: FlashAttention runs fp16 and bf16 only") &&
                          Contains("use training.flash_attention: false"));
  // fp32 accumulates in fp32; a 16-bit accumulation of fp32 gradients is not modelled.
  REQUIRE_THROWS_WITH(load_scenario(dir.write("ga.yaml", gpt2_scenario("", "zero:\n  grad_accum_dtype: bf16\n",
                                                                       "  precision: fp32\n"))),
                      Contains("ga.yaml:7: zero.grad_accum_dtype: accumulating fp32 gradients in a 16-bit dtype"));
}

TEST_CASE("load_scenario: training.precision tf32 and float32 are one-line errors naming the keys to use",
          "[scenario][unit]") {
  // TF32 is a matmul mode of fp32 training (torch.backends.cuda.matmul.allow_tf32), not a storage format: the
  // error names both keys rather than setting training.tf32 behind the user's back.
  FixtureDir dir;
  try {
    (void)load_scenario(dir.write("t.yaml", gpt2_scenario("", "", "  precision: tf32\n")));
    FAIL("tf32 loaded");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    CHECK_THAT(m, Contains("t.yaml:5: training.precision: expected one of bf16|fp16|fp32, got 'tf32'") &&
                      Contains("use training.precision: fp32 with training.tf32: true"));
    CHECK(std::count(m.begin(), m.end(), '\n') == 0);
  }
  REQUIRE_THROWS_WITH(load_scenario(dir.write("f.yaml", gpt2_scenario("", "", "  precision: float32\n"))),
                      Contains("got 'float32'") && Contains("did you mean 'fp32'?"));
  REQUIRE_THROWS_WITH(load_scenario(dir.write("e.yaml", gpt2_scenario("", "", "  precision: fp8\n"))),
                      Contains("FP8 training (Transformer Engine) is not simulated"));
}

TEST_CASE("load_scenario: each top-level ds_config key is imported or noted or refused", "[scenario][validation]") {
  // DeepSpeed reads its top-level keys one by one (deepspeed/runtime/config.py _initialize_params) and ignores any
  // other, so a misspelt key silently falls back to DeepSpeed's default; zerosim sorts each key instead.
  FixtureDir dir;
  const std::string zero = "  \"zero_optimization\": {\"stage\": 3}";
  const auto ds_notes = [](const Scenario& s) { // the notes this import adds (not the fp32 one of no fp16/bf16)
    std::vector<std::string> out;
    for (const std::string& n : s.import_notes)
      if (n.find(" is not imported: ") != std::string::npos ||
          n.find(" is not a DeepSpeed config key") != std::string::npos)
        out.push_back(n);
    return out;
  };
  const auto scenario_for = [&](const std::string& name, const std::string& body) {
    dir.write(name + ".json", "{\n" + body + "\n}\n");
    return dir.write(name + ".yaml", gpt2_scenario(name + ".json"));
  };
  SECTION("a near miss of a DeepSpeed key is an error with the key it resembles") {
    // zero_optimisation would leave DeepSpeed at stage 0 (zero_optimization absent).
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("brit", "  \"zero_optimisation\": {\"stage\": 3}")),
                        Contains("brit.json:2: zero_optimisation: unknown DeepSpeed config key") &&
                            Contains("did you mean 'zero_optimization'?"));
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("mbs", zero + ",\n  \"train_micro_batch_size_per_gpus\": 8")),
                        Contains("mbs.json:3: train_micro_batch_size_per_gpus: unknown DeepSpeed config key") &&
                            Contains("did you mean 'train_micro_batch_size_per_gpu'?"));
  }
  SECTION("another parallelism above size 1 is refused, size 1 is accepted") {
    const std::string dp_only = "not modelled: zerosim simulates ZeRO data parallelism only";
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("tp", zero + ",\n  \"tensor_parallel\": {\"autotp_size\": 4}")),
                        Contains("tp.json:3: tensor_parallel.autotp_size: " + dp_only));
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("tp2", zero + ",\n  \"tensor_parallel\": {\"tp_size\": 2}")),
                        Contains("tp2.json:3: tensor_parallel.tp_size: " + dp_only));
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("pp", zero + ",\n  \"pipeline\": {\n    \"stages\": 2\n  }")),
                        Contains("pp.json:4: pipeline.stages: " + dp_only));
    REQUIRE_THROWS_WITH(load_scenario(scenario_for("sp", zero + ",\n  \"sequence_parallel_size\": 4")),
                        Contains("sp.json:3: sequence_parallel_size: " + dp_only));
    const Scenario one = load_one(
        scenario_for("one", zero +
                                ",\n  \"tensor_parallel\": {\"autotp_size\": 1},\n  \"pipeline\": {\"stages\": 1},\n" +
                                "  \"sequence_parallel_size\": 1"));
    CHECK(one.zero.stage == 3);
    CHECK(ds_notes(one).empty());
  }
  SECTION("a DeepSpeed key that is set but not simulated gets one note each, in file order") {
    const Scenario s = load_one(scenario_for("blocks", zero + ",\n" +
                                                           "  \"steps_per_print\": 100,\n" // line 3
                                                           "  \"flops_profiler\": {\"enabled\": true},\n" // 4
                                                           "  \"sparse_attention\": {\"mode\": \"fixed\"},\n" // 5
                                                           "  \"amp\": {\"enabled\": true},\n" // 6
                                                           "  \"moe\": {\"enabled\": true}")); // 7
    const std::vector<std::string> notes = ds_notes(s);
    REQUIRE(notes.size() == 5);
    CHECK_THAT(notes[0], Contains("blocks.json:3: steps_per_print is not imported"));
    CHECK_THAT(notes[1], Contains("blocks.json:4: flops_profiler is not imported"));
    CHECK_THAT(notes[2], Contains("blocks.json:5: sparse_attention is not imported") && Contains("simulated as dense"));
    CHECK_THAT(notes[3], Contains("blocks.json:6: amp is not imported"));
    // "moe" is no DeepSpeed key (its MoE layers are built in model code) and is near none: a note, not an error.
    CHECK_THAT(notes[4], Contains("blocks.json:7: moe is not a DeepSpeed config key"));
    CHECK(s.zero.stage == 3);
  }
  SECTION("a top-level key is at its own line, not at that of a nested key of the same name") {
    // Review 28: the line was that of the first "steps_per_print" in the text, here flops_profiler's field on line
    // 3; a brace inside a string value does not count as nesting.
    const Scenario s = load_one(scenario_for("nested", zero + ",\n" +
                                                           "  \"flops_profiler\": {\"enabled\": true, "
                                                           "\"steps_per_print\": 5, \"output_file\": \"{x}\"},\n"
                                                           "  \"steps_per_print\": 100")); // line 4
    const std::vector<std::string> notes = ds_notes(s);
    REQUIRE(notes.size() == 2);
    CHECK_THAT(notes[0], Contains("nested.json:3: flops_profiler is not imported"));
    CHECK_THAT(notes[1], Contains("nested.json:4: steps_per_print is not imported"));
  }
  SECTION("a block written off, or at DeepSpeed's default, gets no note") {
    const Scenario s = load_one(scenario_for("off", zero + ",\n" +
                                                        "  \"wall_clock_breakdown\": false,\n"
                                                        "  \"flops_profiler\": {\"enabled\": false},\n"
                                                        "  \"tensorboard\": null,\n"
                                                        "  \"gradient_predivide_factor\": 1.0"));
    CHECK(ds_notes(s).empty());
  }
}

TEST_CASE("load_scenario: a DeepSpeed config given as the scenario says how to reference it",
          "[scenario][validation]") {
  FixtureDir dir;
  const std::string path = dir.write("ds.json",
                                     "{\n  \"train_micro_batch_size_per_gpu\": 2,\n"
                                     "  \"zero_optimization\": {\"stage\": 3}\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(path), Contains("ds.json:2: train_micro_batch_size_per_gpu: this is a DeepSpeed "
                                                    "config, not a scenario") &&
                                               Contains("'zero: {deepspeed_config: ds.json}'"));
}

TEST_CASE(
    "load_scenario: training.skipped_steps defaults to 0 and is refused, naming file:line: key, without fp16, and "
    "taken with optimizer offload",
    "[scenario][validation]") {
  FixtureDir dir;
  CHECK(load_one(dir.write("plain.yaml", gpt2_scenario())).training.skipped_steps == 0);
  CHECK(load_one(dir.write("fp16.yaml", gpt2_scenario("", "", "  precision: fp16\n  skipped_steps: 3\n")))
            .training.skipped_steps == 3);
  // line 5 is skipped_steps (lines 3-4 training: and seq_len:, line 5 the first `training` extra line)
  REQUIRE_THROWS_WITH(load_scenario(dir.write("bf16.yaml", gpt2_scenario("", "", "  skipped_steps: 2\n"))),
                      Contains("bf16.yaml:5: training.skipped_steps: overflow-skipped steps come from fp16 dynamic "
                               "loss scaling, and training.precision is bf16"));
  CHECK(load_one(dir.write("off.yaml", gpt2_scenario("", "zero: {stage: 2, offload_optimizer: cpu}\n",
                                                     "  precision: fp16\n  skipped_steps: 1\n")))
            .training.skipped_steps == 1);
  REQUIRE_THROWS_WITH(load_scenario(dir.write("neg.yaml", gpt2_scenario("", "", "  skipped_steps: -1\n"))),
                      Contains("neg.yaml:5: training.skipped_steps"));
}

TEST_CASE(
    "load_scenario: stage 3 reduce_scatter false in DeepSpeed 0.9.4-0.9.x with a parameter larger than "
    "reduce_bucket_size is refused at zero.reduce_scatter (stage3.py l.1084-1086 @v0.9.5, PR #3832 in 0.10.0)",
    "[scenario][validation]") {
  FixtureDir dir;
  // GPT-2's token embedding is 50,257 x 768 = 38,597,376 elements > 1e7; lines: 5 zero:, 6 stage, 7 reduce_scatter.
  const auto zero = [](const std::string& version) {
    return "zero:\n  stage: 3\n  reduce_scatter: false\n  reduce_bucket_size: 1e7\n  deepspeed_version: " + version +
           "\n";
  };
  REQUIRE_THROWS_WITH(load_scenario(dir.write("v094.yaml", gpt2_scenario("", zero("0.9.4")))),
                      Contains("v094.yaml:7: zero.reduce_scatter: false with a parameter larger than "
                               "zero.reduce_bucket_size (10000000 elements) fails in DeepSpeed 0.9.4-0.9.x"));
  CHECK(load_one(dir.write("v0100.yaml", gpt2_scenario("", zero("0.10.0")))).zero.deepspeed_version ==
        std::array<int, 3>{0, 10, 0});
  CHECK(load_one(dir.write("v093.yaml", gpt2_scenario("", zero("0.9.3")))).zero.deepspeed_version ==
        std::array<int, 3>{0, 9, 3});
}

TEST_CASE("load_scenario: element counts are whole numbers, as DeepSpeed's pydantic int fields take them",
          "[scenario][validation]") {
  // deepspeed/runtime/zero/config.py (v0.18.5 l.113, 132, 215, 221): reduce_bucket_size, allgather_bucket_size,
  // stage3_prefetch_bucket_size, ... are `int` fields of a pydantic 2 model (requirements.txt: pydantic>=2.0.0), whose
  // lax mode takes 5e8 (a float with no fraction) as 500000000 and refuses 1.5 (a fractional part).
  FixtureDir dir;
  const std::string sc = dir.write("counts.yaml", gpt2_scenario("",
                                                                "zero:\n  reduce_bucket_size: 5e8\n" // line 6
                                                                "  stage3_prefetch_bucket_size: 5.5e7\n")); // 7
  const Scenario s = load_one(sc);
  CHECK(s.zero.reduce_bucket_size == 500'000'000);
  CHECK(s.zero.stage3_prefetch_bucket_size == 55'000'000);
  // A fraction is refused, naming file, line and key; so are a negative count, NaN and a count beyond int64.
  REQUIRE_THROWS_WITH(load_scenario(dir.write("frac.yaml", gpt2_scenario("", "zero:\n  reduce_bucket_size: 2.5\n"))),
                      Contains("frac.yaml:6: zero.reduce_bucket_size: ") && Contains("whole number") &&
                          Contains("'2.5'"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.allgather_bucket_size=1e8.5"}), Contains("zero.allgather_bucket_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.stage3_max_live_parameters=-1"}),
                      Contains("<cli>") && Contains("zero.stage3_max_live_parameters"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.sub_group_size=.nan"}), Contains("zero.sub_group_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.sub_group_size=.inf"}), Contains("zero.sub_group_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.stage3_max_reuse_distance=1e19"}),
                      Contains("zero.stage3_max_reuse_distance") && Contains("out of range"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.reduce_bucket_size=[1, 2]"}), Contains("zero.reduce_bucket_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.reduce_bucket_size={a: 1}"}), Contains("zero.reduce_bucket_size"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.reduce_bucket_size=true"}), Contains("zero.reduce_bucket_size"));
  // In a ds_config too: JSON 5e8 is a float, read as 500000000; 2.5e0 is refused at its line.
  dir.write("ds.json", "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"reduce_bucket_size\": 5e8\n  }\n}\n");
  CHECK(load_one(dir.write("ds.yaml", gpt2_scenario("ds.json"))).zero.reduce_bucket_size == 500'000'000);
  dir.write("dsf.json",
            "{\n  \"zero_optimization\": {\n    \"stage\": 2,\n    \"reduce_bucket_size\": 2.5e0\n  }\n}\n");
  REQUIRE_THROWS_WITH(load_scenario(dir.write("dsf.yaml", gpt2_scenario("dsf.json"))),
                      Contains("dsf.json:4: zero_optimization.reduce_bucket_size") && Contains("whole number"));
}

TEST_CASE(
    "load_scenario: a size is a whole number of bytes: rounded to the nearest byte, aio.block_size refused "
    "when fractional, at most 2^53 B",
    "[scenario][validation]") {
  FixtureDir dir;
  const std::string sc = dir.write("sizes.yaml", gpt2_scenario());
  // 79.1 GiB = 79.1 x 2^30 = 84,932,978,278.4 B: the nearest byte is 84,932,978,278.
  CHECK(load_one(sc, {"cluster.host_memory=79.1GiB"}).cluster.host_memory.value() == 84'932'978'278.0);
  // 1.5 B rounds half away from zero: 2 B; 0.4 B: 0 B.
  CHECK(load_one(sc, {"simulation.cuda_context=1.5B"}).simulation.cuda_context.value() == 2.0);
  CHECK(load_one(sc, {"simulation.cuda_context=0.4B"}).simulation.cuda_context.value() == 0.0);
  CHECK(load_one(sc, {"cluster.gpu.memory=23.99GB"}).cluster.gpu.memory.value() == 23'990'000'000.0);
  // aio.block_size is an int in DeepSpeed's aio handle: 1.5 KiB = 1536 B is whole, 1.0001 KiB = 1024.1024 B is not.
  CHECK(load_one(sc, {"zero.aio.block_size=1.5KiB"}).zero.aio.block_size.value() == 1536.0);
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.aio.block_size=1.0001KiB"}),
                      Contains("<cli>: zero.aio.block_size: expected a whole number of bytes, got '1.0001KiB' "
                               "(1024.1024 B)"));
  REQUIRE_THROWS_WITH(load_scenario(dir.write("aio.yaml", gpt2_scenario("", "zero:\n  aio:\n    block_size: 0.5B\n"))),
                      Contains("aio.yaml:7: zero.aio.block_size: expected a whole number of bytes"));
  // Beyond 2^53 B = 9,007,199,254,740,992 B: 10 PB = 1e16 B is out of range; 1e308 TB overflows a double.
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.host_memory=10PB"}),
                      Contains("cluster.host_memory: '10PB' is out of range (at most 2^53 B = 8 PiB)"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory=1e308TB"}),
                      Contains("cluster.gpu.memory") && Contains("out of range"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory=-24GiB"}), Contains("cluster.gpu.memory"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory=.nanGiB"}), Contains("cluster.gpu.memory"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.host_memory=nanGiB"}), Contains("cluster.host_memory"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.host_memory=infGiB"}), Contains("cluster.host_memory"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"simulation.cuda_context=[1B]"}), Contains("simulation.cuda_context"));
}

TEST_CASE("load_scenario: ds_config bf16, its legacy name bfloat16 and fp16 are read as DeepSpeed reads them",
          "[scenario][validation]") {
  // deepspeed/runtime/precision_config.py (v0.18.5 l.32-36) get_bfloat16_config: the bf16 section, or the legacy
  // bfloat16 one only when bf16 is absent or null; deepspeed/runtime/config.py (v0.18.5 l.782-785) asserts that
  // fp16 and bf16 are not both enabled.
  FixtureDir dir;
  const auto load = [&](const std::string& name, const std::string& body) {
    dir.write(name + ".json", "{\n  \"zero_optimization\": {\"stage\": 1},\n" + body + "\n}\n");
    return load_scenario(dir.write(name + ".yaml", gpt2_scenario(name + ".json")));
  };
  const auto bf16_notes = [](const Scenario& s) {
    std::vector<std::string> out;
    for (const std::string& n : s.import_notes)
      if (n.find("bfloat16 is not imported") != std::string::npos)
        out.push_back(n);
    return out;
  };
  // The legacy name with fp16: both enabled, refused at the fp16 section (line 3).
  REQUIRE_THROWS_WITH(load("old", "  \"fp16\": {\"enabled\": true},\n  \"bfloat16\": {\"enabled\": true}"),
                      Contains("old.json:3: fp16.enabled: bfloat16 and fp16 cannot both be enabled"));
  REQUIRE_THROWS_WITH(load("new", "  \"bf16\": {\"enabled\": true},\n  \"fp16\": {\"enabled\": true}"),
                      Contains("new.json:4: fp16.enabled: bf16 and fp16 cannot both be enabled"));
  // bf16 written: bfloat16 is not read, whatever it says; a note at its line says so.
  {
    const auto v = load("both",
                        "  \"bf16\": {\"enabled\": false},\n  \"bfloat16\": {\"enabled\": true},\n"
                        "  \"fp16\": {\"enabled\": true}");
    const Scenario& s = v.front().scenario;
    CHECK(s.training.precision == Precision::FP16);
    REQUIRE(bf16_notes(s).size() == 1);
    CHECK_THAT(bf16_notes(s)[0],
               Contains("both.json:4: bfloat16 is not imported") && Contains("bfloat16.enabled true is ignored"));
  }
  {
    const auto v = load("same", "  \"bf16\": {\"enabled\": true},\n  \"bfloat16\": {\"enabled\": true}");
    CHECK(v.front().scenario.training.precision == Precision::BF16);
    REQUIRE(bf16_notes(v.front().scenario).size() == 1);
    CHECK_THAT(bf16_notes(v.front().scenario)[0], !Contains("ignored)"));
  }
  // bf16 null: as absent, so bfloat16 is read.
  {
    const auto v = load("null", "  \"bf16\": null,\n  \"bfloat16\": {\"enabled\": true}");
    CHECK(v.front().scenario.training.precision == Precision::BF16);
    CHECK(bf16_notes(v.front().scenario).empty());
  }
  REQUIRE_THROWS_WITH(load("nullfp", "  \"fp16\": null,\n  \"bf16\": {\"enabled\": true}"),
                      Contains("nullfp.json:3: fp16: expected a JSON object"));
}

TEST_CASE(
    "load_scenario: ds_config sequence_parallel_size must be a JSON whole number, tensor_parallel sizes may "
    "be digit strings",
    "[scenario][validation]") {
  // DeepSpeed divides the world size by sequence_parallel_size as written (deepspeed/runtime/config.py v0.18.5
  // l.680-681, inside a bare try/except that falls back to world size 1): a string is not converted there.
  // tensor_parallel's sizes are pydantic int fields (runtime/tensor_parallel/config.py), which convert "2" to 2.
  FixtureDir dir;
  const auto load = [&](const std::string& name, const std::string& body) {
    dir.write(name + ".json", "{\n  \"zero_optimization\": {\"stage\": 1},\n" + body + "\n}\n");
    return load_scenario(dir.write(name + ".yaml", gpt2_scenario(name + ".json")));
  };
  const std::string dp_only = "not modelled: zerosim simulates ZeRO data parallelism only";
  for (const char* bad : {"\"1\"", "\"2\"", "1.5", "0", "-2", "true", "[1]"}) {
    INFO(bad);
    REQUIRE_THROWS_WITH(load("sp", std::string("  \"sequence_parallel_size\": ") + bad),
                        Contains("sp.json:3: sequence_parallel_size: expected a whole number >= 1 (a JSON number, "
                                 "not a string), got '" +
                                 std::string(bad) + "'"));
  }
  CHECK(load("one", "  \"sequence_parallel_size\": 1.0").front().scenario.zero.stage == 1);
  CHECK(load("auto", "  \"sequence_parallel_size\": \"auto\"").front().scenario.zero.stage == 1);
  REQUIRE_THROWS_WITH(load("two", "  \"sequence_parallel_size\": 2.0"),
                      Contains("two.json:3: sequence_parallel_size: " + dp_only));
  REQUIRE_THROWS_WITH(load("tp", "  \"tensor_parallel\": {\"tp_size\": \"2\"}"),
                      Contains("tp.json:3: tensor_parallel.tp_size: " + dp_only));
  CHECK(load("tp1", "  \"tensor_parallel\": {\"autotp_size\": \"1\"}").front().scenario.zero.stage == 1);
}

TEST_CASE("load_scenario: ds_config data_types.param_dtype must match the fp16/bf16 mode, buffer_dtype is noted",
          "[scenario][validation]") {
  // DeepSpeed 0.19.2+ reads data_types.param_dtype and buffer_dtype (runtime/constants.py PARAM_DTYPE, BUFFER_DTYPE;
  // config.py v0.19.5 l.886-888); engine.py v0.19.5 _assert_valid_mixed_precision_config refuses a param_dtype other
  // than the model dtype of the fp16/bf16 flags; buffer_dtype casts registered buffers only.
  FixtureDir dir;
  const auto load = [&](const std::string& name, const std::string& body) {
    dir.write(name + ".json",
              "{\n  \"zero_optimization\": {\"stage\": 1},\n  \"bf16\": {\"enabled\": true},\n" + body + "\n}\n");
    return load_scenario(dir.write(name + ".yaml", gpt2_scenario(name + ".json")));
  };
  const auto notes_with = [](const Scenario& s, const std::string& what) {
    return std::count_if(s.import_notes.begin(), s.import_notes.end(),
                         [&](const std::string& n) { return n.find(what) != std::string::npos; });
  };
  REQUIRE_THROWS_WITH(load("fp16", "  \"data_types\": {\n    \"param_dtype\": \"fp16\"\n  }"),
                      Contains("fp16.json:5: data_types.param_dtype: param_dtype \"fp16\" is not the model dtype the "
                               "fp16/bf16 sections select (bf16)"));
  // The same dtype under another DtypeEnum name is no conflict, and changes nothing: no note.
  {
    const auto v = load("same", "  \"data_types\": {\"param_dtype\": \"bfloat16\"}");
    CHECK(v.front().scenario.training.precision == Precision::BF16);
    CHECK(notes_with(v.front().scenario, "param_dtype") == 0);
  }
  {
    const auto v = load("buf", "  \"data_types\": {\n    \"buffer_dtype\": \"fp32\"\n  }");
    CHECK(notes_with(v.front().scenario, "buf.json:5: data_types.buffer_dtype is not imported") == 1);
  }
  REQUIRE_THROWS_WITH(load("name", "  \"data_types\": {\"buffer_dtype\": \"fp8\"}"),
                      Contains("name.json:4: data_types.buffer_dtype: expected a dtype name") && Contains("'\"fp8\"'"));
  REQUIRE_THROWS_WITH(load("type", "  \"data_types\": [\"bf16\"]"),
                      Contains("type.json:4: data_types: expected a JSON object"));
  REQUIRE_THROWS_WITH(load("typo", "  \"data_types\": {\"param_dtyp\": \"bf16\"}"),
                      Contains("typo.json:4: data_types.param_dtyp: unknown DeepSpeed data_types field") &&
                          Contains("did you mean 'param_dtype'?"));
  {
    const auto v = load("other", "  \"data_types\": {\"checkpoint_dtype\": \"fp32\"}");
    CHECK(notes_with(v.front().scenario, "data_types.checkpoint_dtype is not a DeepSpeed data_types field") == 1);
  }
}

TEST_CASE("load_scenario: data_types.param_dtype and buffer_dtype are checked against the release, read from 0.19.2",
          "[scenario][validation]") {
  // runtime/constants.py has PARAM_DTYPE and BUFFER_DTYPE from v0.19.2 (l.480-483), not at v0.19.1; before, the
  // data_types dict is read with .get for grad_accum_dtype only, so a conflicting param_dtype is ignored, not refused
  // (engine.py _assert_valid_mixed_precision_config appears at v0.19.2, l.1325). zero.deepspeed_version may come
  // after the ds_config (here from --set): the check waits for it.
  FixtureDir dir;
  dir.write("c.json",
            "{\n  \"zero_optimization\": {\"stage\": 1},\n  \"bf16\": {\"enabled\": true},\n"
            "  \"data_types\": {\"param_dtype\": \"fp16\", \"buffer_dtype\": \"fp32\"}\n}\n");
  const std::string sc = dir.write("c.yaml", gpt2_scenario("c.json"));
  for (const char* old : {"0.19.1", "0.18.5", "0.9.0"}) {
    INFO(old);
    const auto v = load_scenario(sc, {std::string("zero.deepspeed_version=") + old});
    const auto& notes = v.front().scenario.import_notes;
    for (const char* k : {"param_dtype \"fp16\"", "buffer_dtype \"fp32\""})
      CHECK(std::count_if(notes.begin(), notes.end(), [&](const std::string& n) {
              return n.find(std::string("c.json:4: data_types.") + k +
                            " is ignored: DeepSpeed reads it from 0.19.2, "
                            "and zero.deepspeed_version is " +
                            old) != std::string::npos;
            }) == 1);
  }
  REQUIRE_THROWS_WITH(load_scenario(sc, {"zero.deepspeed_version=0.19.2"}),
                      Contains("c.json:4: data_types.param_dtype: param_dtype \"fp16\" is not the model dtype"));
  REQUIRE_THROWS_WITH(load_scenario(sc), Contains("c.json:4: data_types.param_dtype: param_dtype \"fp16\" is not the "
                                                  "model dtype the fp16/bf16 sections select (bf16)"));
}

TEST_CASE("load_scenario: a rate below 1 per second, an efficiency below 1e-6 or a duration above 1e6 s is refused",
          "[scenario][validation]") {
  // Before: cluster.gpu.peak_lp=1e-300FLOPS made every op time infinite (SimGrid reported a deadlock), and
  // simulation.host_op_launch=1e308s summed to infinity (SimGrid aborted: "duration is not finite").
  FixtureDir dir;
  const std::string sc = dir.write("bounds.yaml", gpt2_scenario());
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.peak_lp=1e-300FLOPS"}),
                      Contains("<cli>: cluster.gpu.peak_lp: '1e-300FLOPS' is below 1 FLOP/s"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory_bandwidth=0.5Bps"}),
                      Contains("cluster.gpu.memory_bandwidth: '0.5Bps' is below 1 B/s"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.host_link.bandwidth=1bps"}), // 1 bit/s = 0.125 B/s
                      Contains("cluster.host_link.bandwidth: '1bps' is below 1 B/s"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.gpu.memory_efficiency=1e-300"}),
                      Contains("cluster.gpu.memory_efficiency: '1e-300' is below 1e-6"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.host_link.efficiency=1e-7"}),
                      Contains("cluster.host_link.efficiency: '1e-7' is below 1e-6"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"simulation.host_op_launch=1e308s"}),
                      Contains("simulation.host_op_launch: '1e308s' is out of range (at most 1e6 s per op)"));
  REQUIRE_THROWS_WITH(load_scenario(sc, {"cluster.nic.latency=2e6s"}), Contains("cluster.nic.latency"));
  // The bounds themselves are taken, and 0 stays "none" where the key allows it.
  CHECK(load_one(sc, {"cluster.gpu.memory_bandwidth=1Bps"}).cluster.gpu.memory_bandwidth.value() == 1.0);
  CHECK(load_one(sc, {"cluster.host_link.efficiency=1e-6"}).cluster.host_link.efficiency == 1e-6);
  CHECK(load_one(sc, {"simulation.host_op_launch=1e6s"}).simulation.host.op_launch.value() == 1e6);
  CHECK(load_one(sc, {"cluster.nvme.read_bandwidth=0"}).cluster.nvme.read_bandwidth.value() == 0.0);
  // A training fraction is no efficiency: LoRA-like fractions far below 1e-6 stay possible.
  CHECK(load_one(sc, {"training.trainable_fraction=1e-7"}).training.trainable_fraction == 1e-7);
}

TEST_CASE("load_scenario: --set KEY=null resets the key to its default, as if the scenario did not write it",
          "[scenario][validation]") {
  // newuser29 #21: `--set training.precision=null` was refused ("got an empty value"), so a ds_config's fp16 could
  // not decide without editing the scenario.
  FixtureDir dir;
  dir.write("fp.json", "{\"fp16\": {\"enabled\": true}}");
  const std::string sc =
      dir.write("reset.yaml", gpt2_scenario("fp.json", "cluster:\n  gpu: {preset: rtx3090, memory: 48GiB}\n",
                                            "  precision: bf16\n  grad_accum: 4\n"));
  const Scenario base = load_one(sc);
  CHECK(base.training.precision == Precision::BF16); // the scenario wins over the ds_config
  CHECK(base.training.grad_accum == 4);
  CHECK(base.cluster.gpu.memory.value() == Approx(48.0 * 1024 * 1024 * 1024));
  // The imported ds_config's fp16 decides once the scenario's precision is reset.
  CHECK(load_one(sc, {"training.precision=null"}).training.precision == Precision::FP16);
  CHECK(load_one(sc, {"training.precision=~"}).training.precision == Precision::FP16);
  // The key table's default: grad_accum 1 (key_table.cpp "training.grad_accum" default "1").
  CHECK(load_one(sc, {"training.grad_accum=NULL"}).training.grad_accum == 1);
  // An inline GPU key falls back to its preset: rtx3090.yaml's 24 GiB (the card shows 24576 MiB to CUDA).
  CHECK(load_one(sc, {"cluster.gpu.memory=null"}).cluster.gpu.memory.value() == Approx(24.0 * 1024 * 1024 * 1024));
  // A key the scenario does not write: nothing to reset, no error (zero.stage stays the default 0).
  CHECK(load_one(sc, {"zero.stage=null"}).zero.stage == 0);
  // A later --set of the same key sets it again.
  CHECK(load_one(sc, {"training.precision=null", "training.precision=fp32"}).training.precision == Precision::FP32);
  // An empty value stays an error (more likely an unfinished edit), and names the reset.
  REQUIRE_THROWS_WITH(load_scenario(sc, {"training.precision="}),
                      Contains("training.precision: expected one of bf16|fp16|fp32, got an empty value") &&
                          Contains("--set training.precision=null resets it to its default"));
  // Inside a compared section the reset applies to every variant, as a value would.
  const std::string cmp =
      dir.write("cmp.yaml", gpt2_scenario("fp.json", "compare:\n  training: [{micro_batch: 1}, {micro_batch: 2}]\n",
                                          "  precision: bf16\n"));
  const auto v = load_scenario(cmp, {"training.precision=null"});
  REQUIRE(v.size() == 2);
  CHECK(v[0].scenario.training.precision == Precision::FP16);
  CHECK(v[1].scenario.training.precision == Precision::FP16);
  CHECK(v[1].scenario.training.micro_batch == 2);
}

TEST_CASE("load_scenario: the DeepSpeed batch names map to the same scenario keys as hint, as import and as --set",
          "[scenario][unit]") {
  // review29 17: one table (foreign names) for the three readers. DeepSpeed's train_micro_batch_size_per_gpu is the
  // per-GPU micro-batch and gradient_accumulation_steps the micro-steps per optimizer step (runtime/config.py
  // _batch_assertion: train_batch_size = micro-batch x GA x world size): training.micro_batch and training.grad_accum.
  FixtureDir dir;
  const std::string base = dir.write("b.yaml", "name: b\nmodel: gpt2\ncluster: {topology: one-rtx4090}\n");
  for (const auto& [name, key] :
       {std::pair<std::string, std::string>{"train_micro_batch_size_per_gpu", "training.micro_batch"},
        {"gradient_accumulation_steps", "training.grad_accum"}}) {
    INFO(name);
    // At a scenario's top level: a DeepSpeed key, with the scenario key that sets the same.
    const std::string stray = dir.write("s-" + name + ".yaml", "name: s\nmodel: gpt2\n" + name + ": 3\n");
    REQUIRE_THROWS_WITH(load_scenario(stray), Contains("s-" + name + ".yaml:3: " + name + ": unknown key") &&
                                                  Contains("did you mean '" + key + "'?") &&
                                                  Contains("a DeepSpeed config key"));
    // Under training (as --set): the same key.
    REQUIRE_THROWS_WITH(load_scenario(base, {"training." + name + "=3"}), Contains("did you mean '" + key + "'?"));
    // In an imported ds_config: sets that key.
    dir.write("d-" + name + ".json", "{\"" + name + "\": 3}");
    const Scenario s = load_one(dir.write("d-" + name + ".yaml", gpt2_scenario("d-" + name + ".json")));
    CHECK((key == "training.micro_batch" ? s.training.micro_batch : s.training.grad_accum) == 3);
  }
}

TEST_CASE("cluster.cpu: a topology file takes {preset: name, key: value} as a scenario does, and cpu.name renames",
          "[scenario][unit]") {
  // newuser32 #30 and #3. topologies/cpus/threadripper-pro-5975wx.yaml: 32 cores, 3.6 GHz, 8 fp32 lanes, 2 FMA units.
  FixtureDir dir;
  const auto topology = [&dir](const std::string& name, const std::string& cpu) {
    return dir.write(name, "description: \"a 4090 workstation\"\ngpu: rtx4090\ncpu: " + cpu +
                               "\ngpus_per_node: 1\n"
                               "intra_node: {bandwidth: 31.5GBps, latency: 5.7us, source: \"PCIe 4.0\"}\n"
                               "host_link: {bandwidth: 31.5GBps, latency: 5.7us, source: \"PCIe 4.0\"}\n"
                               "nics_per_node: 0\nfabric: none\nsource: \"test\"\n");
  };
  const auto scenario = [&dir](const std::string& name, const std::string& topo, const std::string& cpu = "") {
    return dir.write(name,
                     gpt2_scenario("", "cluster: {topology: " + topo + (cpu.empty() ? "" : ", cpu: " + cpu) + "}\n"));
  };
  topology("ws.yaml", "{preset: threadripper-pro-5975wx, cores: 16}");
  const CpuSpec c = load_one(scenario("a.yaml", "ws.yaml")).cluster.cpu;
  CHECK(c.cores == 16);
  CHECK(c.preset == "threadripper-pro-5975wx");
  CHECK(c.name == "threadripper-pro-5975wx (modified: cores=16)");
  // peak_fp32 from the components with the file's cores: 16 x 3.6 GHz x 8 x 2 x 2 = 1.8432 TFLOPS.
  CHECK(c.peak_fp32.value() == Approx(16 * 3.6e9 * 8 * 2 * 2).epsilon(1e-12));
  // The scenario's inline keys (no preset) override the topology file's: 16 x 4.0 GHz x 8 x 2 x 2 = 2.048 TFLOPS.
  const CpuSpec over = load_one(scenario("b.yaml", "ws.yaml", "{base_clock: 4.0GHz}")).cluster.cpu;
  CHECK(over.cores == 16);
  CHECK(over.peak_fp32.value() == Approx(16 * 4.0e9 * 8 * 2 * 2).epsilon(1e-12));
  // A scenario that names a CPU preset replaces the topology's CPU, its overrides included (32 cores again).
  const CpuSpec other = load_one(scenario("c.yaml", "ws.yaml", "threadripper-pro-5975wx")).cluster.cpu;
  CHECK(other.cores == 32);
  CHECK(other.name == "threadripper-pro-5975wx");
  // cpu.name, in the topology file or the scenario, is the name the reports show; the preset stays the preset.
  topology("named.yaml", "{preset: threadripper-pro-5975wx, name: tr-pro-7975wx, cores: 32, base_clock: 4.0GHz}");
  const CpuSpec named = load_one(scenario("d.yaml", "named.yaml")).cluster.cpu;
  CHECK(named.name == "tr-pro-7975wx");
  CHECK(named.preset == "threadripper-pro-5975wx");
  const CpuSpec renamed =
      load_one(scenario("e.yaml", "one-rtx4090", "{preset: threadripper-pro-5975wx, name: my-box, cores: 24}"))
          .cluster.cpu;
  CHECK(renamed.name == "my-box");
  CHECK(renamed.preset == "threadripper-pro-5975wx");
  CHECK(renamed.cores == 24);
  // Inline keys need a base in a topology file too: one line naming the file and key.
  topology("bad.yaml", "{cores: 16}");
  REQUIRE_THROWS_WITH(load_scenario(scenario("f.yaml", "bad.yaml")),
                      Catch::Contains("bad.yaml:3: cluster.cpu.preset: expected a CPU preset name"));
}
