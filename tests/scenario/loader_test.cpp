// Scenario loading: a good scenario with every section, presets, overrides, compare, ds_config.json and
// Hugging Face config.json import, and one test per kind of bad input (the message must name the key).
// Fixtures live in tests/scenario/data/; expected dimensions come from the public config files cited in the presets.
#include "sim/scenario/scenario_loader.hpp"

#include "sim/error.hpp"
#include "sim/scenario/key_table.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <utility>

using namespace zerosim;
using namespace zerosim::scenario;
using Catch::Contains;

namespace {
constexpr double kTol = 1e-12;
const std::string kData = std::string(ZEROSIM_DATA_DIR) + "/tests/scenario/data/";

Scenario load_one(const std::string& file, const std::vector<std::string>& overrides = {}) {
  auto v = load_scenario(kData + file, overrides);
  REQUIRE(v.size() == 1);
  return v.front().scenario;
}
} // namespace

TEST_CASE("load_scenario: a scenario with every section resolves to the values written", "[scenario][unit]") {
  const Scenario s = load_one("good.yaml");
  CHECK(s.name == "good-scenario");
  CHECK(s.description == "all sections set");
  // gpt2-xl: h1600 L48 a25 V50257 pos1024 (HF config.json)
  CHECK(s.model.name == "gpt2-xl");
  CHECK(s.model.family == ModelFamily::GPT2);
  CHECK(s.model.hidden == 1600);
  CHECK(s.model.layers == 48);
  CHECK(s.model.heads == 25);
  CHECK(s.model.kv_heads == 25);
  CHECK(s.model.intermediate == 6400); // 4h
  CHECK(s.model.vocab == 50257);
  CHECK(s.model.max_positions == 1024);
  CHECK(s.model.tied_embeddings);
  CHECK(s.training.micro_batch == 4);
  CHECK(s.training.seq_len == 512);
  CHECK(s.training.grad_accum == 8);
  CHECK(s.training.precision == Precision::FP16);
  CHECK(s.training.optimizer == OptimizerKind::ADAM);
  CHECK(s.training.activation_checkpointing);
  CHECK(s.training.flash_attention);
  CHECK(s.zero.stage == 2);
  CHECK_FALSE(s.zero.contiguous_gradients);
  CHECK(s.zero.reduce_bucket_size == 200'000'000);
  CHECK(s.zero.allgather_bucket_size == 300'000'000);
  CHECK(s.zero.overlap_comm_effective());
  CHECK(s.zero.offload_optimizer == OffloadDevice::CPU);
  CHECK(s.zero.offload_param == OffloadDevice::NONE);
  // Untouched DeepSpeed defaults (config.py; calibration.md §4.3)
  CHECK(s.zero.reduce_scatter);
  CHECK(s.zero.sub_group_size == 1'000'000'000);
  CHECK(s.zero.stage3_prefetch_bucket_size == 50'000'000);
  CHECK(s.zero.stage3_param_persistence_threshold == 100'000);
  // dgx-a100 preset with the scenario's overrides
  CHECK(s.cluster.topology == "dgx-a100");
  CHECK(s.cluster.nodes == 2);
  CHECK(s.cluster.gpus_per_node == 8);
  CHECK(s.cluster.world_size() == 16);
  CHECK(s.cluster.gpu.name == "a100-80gb");
  CHECK(s.cluster.gpu.memory.value() == Approx(80.0 * 1073741824.0).epsilon(kTol));
  CHECK(s.cluster.gpu.peak_lp.value() == Approx(312e12).epsilon(kTol));
  CHECK(s.cluster.gpu.matmul_efficiency == Approx(0.869).epsilon(kTol)); // 271.2/312 MAMF
  CHECK(s.cluster.intra_node.bandwidth.value() == Approx(250e9).epsilon(kTol)); // scenario wins over 300 GB/s
  CHECK(s.cluster.intra_node.latency.value() == Approx(3.4e-6).epsilon(kTol)); // preset (NCCL hwLat NVLink)
  CHECK(s.cluster.nic.bandwidth.value() == Approx(25e9).epsilon(kTol)); // 200 Gb/s / 8
  CHECK(s.cluster.nics_per_node == 8);
  CHECK(s.cluster.fabric == FabricKind::FAT_TREE);
  CHECK(s.simulation.steps == 3);
  CHECK(s.simulation.fidelity == Fidelity::ANALYTIC);
  CHECK(s.simulation.on_oom == OomPolicy::CONTINUE);
  CHECK(s.outputs.dir == "out/custom");
  CHECK_FALSE(s.outputs.trace_json);
  CHECK(s.outputs.result_json);
  CHECK(s.outputs.trace_ranks == 2);
  CHECK(s.compare_key.empty());
}

TEST_CASE("load_scenario: defaults are DeepSpeed's and the one-rtx4090 box", "[scenario][unit]") {
  const Scenario s = load_one("long_seq.yaml", {"training.seq_len=1024"});
  CHECK(s.zero.stage == 0);
  CHECK_FALSE(s.zero.overlap_comm_effective()); // config.py: true only for stage 3
  CHECK(s.cluster.topology == "one-rtx4090");
  CHECK(s.cluster.world_size() == 1);
  CHECK(s.cluster.gpu.name == "rtx4090");
  CHECK(s.cluster.gpu.memory.value() == Approx(24564.0 * 1048576.0).epsilon(kTol)); // CUDA total, 24564 MiB
  CHECK(s.cluster.gpu.peak_lp.value() == Approx(165.2e12).epsilon(kTol));
  CHECK(s.cluster.host_link.bandwidth.value() == Approx(31.5e9).epsilon(kTol));
  CHECK(s.cluster.fabric == FabricKind::NONE);
}

TEST_CASE("load_scenario: presets for the LLaMA family", "[scenario][unit]") {
  // llama-3-8b: h4096 L32 a32 kv8 inter14336 V128256 untied (Meta-Llama-3-8B config.json)
  const Scenario s = load_one("long_seq.yaml", {"model=llama-3-8b"});
  CHECK(s.model.family == ModelFamily::LLAMA);
  CHECK(s.model.hidden == 4096);
  CHECK(s.model.kv_heads == 8);
  CHECK(s.model.intermediate == 14336);
  CHECK(s.model.vocab == 128256);
  CHECK_FALSE(s.model.tied_embeddings);
  CHECK(s.model.max_positions == 8192); // max_position_embeddings: the trained context, recorded
  CHECK(s.training.seq_len == 2048); // no learned-position limit for rotary models
  CHECK(s.import_notes.empty());
}

TEST_CASE("load_scenario: a rotary model's sequence beyond its context length is a note, not an error",
          "[scenario][unit]") {
  // newuser31 F17b: Llama-2 (max_position_embeddings 4096, meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023
  // Table 1: context length 4k) at 8192 tokens ran without a word. RoPE scaling runs rotary models past it, so it is
  // allowed, with a note naming the context length.
  const Scenario at = load_one("long_seq.yaml", {"model=llama-2-7b", "training.seq_len=4096"});
  CHECK(at.model.max_positions == 4096);
  CHECK(at.import_notes.empty()); // at the context length: nothing to say
  const Scenario beyond = load_one("long_seq.yaml", {"model=llama-2-7b", "training.seq_len=8192"});
  CHECK(beyond.training.seq_len == 8192);
  REQUIRE(beyond.import_notes.size() == 1);
  CHECK_THAT(beyond.import_notes[0],
             Catch::StartsWith("training.seq_len 8192 is beyond llama-2-7b's context length of 4096 tokens") &&
                 Catch::Contains("RoPE scaling"));
}

TEST_CASE("load_scenario: inline model map with GQA", "[scenario][unit]") {
  const Scenario s = load_one("inline_model.yaml");
  CHECK(s.model.family == ModelFamily::LLAMA);
  CHECK(s.model.hidden == 256);
  CHECK(s.model.kv_heads == 2);
  CHECK(s.model.intermediate == 688);
  CHECK_FALSE(s.model.tied_embeddings); // llama default
}

TEST_CASE("load_scenario: overrides apply dotted keys before resolution", "[scenario][unit]") {
  const Scenario s =
      load_one("good.yaml", {"zero.stage=3", "model.layers=2", "cluster.gpu=h100-sxm", "cluster.nic.bandwidth=400Gbps",
                             "zero.offload_param={device: cpu}", "name=overridden"});
  CHECK(s.zero.stage == 3);
  CHECK(s.model.hidden == 1600); // gpt2-xl preset ...
  CHECK(s.model.layers == 2); // ... with layers overridden
  CHECK(s.cluster.gpu.name == "h100-sxm");
  CHECK(s.cluster.gpu.peak_lp.value() == Approx(989e12).epsilon(kTol));
  CHECK(s.cluster.nic.bandwidth.value() == Approx(50e9).epsilon(kTol));
  CHECK(s.zero.offload_param == OffloadDevice::CPU);
  CHECK(s.name == "overridden");
  // "auto" in the scenario uses the same HF Trainer rule as in a ds_config: gpt2-xl h = 1600 -> h^2 = 2,560,000.
  CHECK(load_one("good.yaml", {"zero.reduce_bucket_size=auto"}).zero.reduce_bucket_size == 2'560'000);
  REQUIRE_THROWS_WITH(load_one("good.yaml", {"zero.sub_group_size=auto"}), Contains("zero.sub_group_size"));
  // DeepSpeed's zero/config.py declares sub_group_size ge=0; 0 means one sub-group per parameter (stage3.py).
  CHECK(load_one("good.yaml", {"zero.sub_group_size=0"}).zero.sub_group_size == 0);
  REQUIRE_THROWS_WITH(load_one("good.yaml", {"zero.sub_group_size=-1"}), Contains("zero.sub_group_size"));
}

TEST_CASE("load_scenario: a NIC without an efficiency moves InfiniBand's payload per 4096-B MTU packet",
          "[scenario][unit]") {
  // IBTA vol. 1, an RDMA WRITE middle packet: LRH 8 + BTH 12 + 4096 B of data + ICRC 4 + VCRC 2 -> 4096 / 4122.
  const double by_hand = 4096.0 / (4096 + 8 + 12 + 4 + 2);
  CHECK(by_hand == Approx(0.993692).epsilon(1e-6));
  CHECK(kInfinibandPayloadEfficiency == Approx(by_hand).epsilon(kTol));
  // good.yaml: the dgx-a100 preset, which gives no nic.efficiency.
  CHECK(load_one("good.yaml").cluster.nic.efficiency == Approx(by_hand).epsilon(kTol));
  // A value given (a measured ratio, or 1 for the line rate) replaces the default; other links keep theirs.
  CHECK(load_one("good.yaml", {"cluster.nic.efficiency=0.96"}).cluster.nic.efficiency == Approx(0.96).epsilon(kTol));
  const Scenario line = load_one("good.yaml", {"cluster.nic.efficiency=1"});
  CHECK(line.cluster.nic.efficiency == 1.0);
  CHECK(line.cluster.intra_node.efficiency == Approx(0.8).epsilon(kTol));
}

TEST_CASE("load_scenario: cluster.gpu keys override the GPU preset inline", "[scenario][unit]") {
  const Scenario s = load_one("good.yaml", {"cluster.gpu.memory=40GiB"});
  CHECK(s.cluster.gpu.preset == "a100-80gb"); // the dgx-a100 topology's GPU is the base
  CHECK(s.cluster.gpu.name == "a100-80gb (--set memory=40GiB)");
  CHECK(s.cluster.gpu.memory.value() == Approx(40.0 * 1073741824.0).epsilon(kTol));
  CHECK(s.cluster.gpu.peak_lp.value() == Approx(312e12).epsilon(kTol));
  REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"cluster.gpu.memory=12"}),
                      Contains("<cli>: cluster.gpu.memory: expected a size with a unit"));
}

TEST_CASE("load_scenario: override errors name <cli> and the key", "[scenario][validation]") {
  SECTION("unknown key, with a hint") {
    REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"zero.stag=2"}), Contains("<cli>: zero.stag: unknown key"));
    REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"zero.stag=2"}), Contains("did you mean 'zero.stage'?"));
  }
  SECTION("bad value") {
    REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"zero.stage=7"}), Contains("<cli>: zero.stage:"));
    REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"cluster.intra_node.bandwidth=300"}),
                        Contains("<cli>: cluster.intra_node.bandwidth:"));
  }
  SECTION("no '='") {
    REQUIRE_THROWS_WITH(load_scenario(kData + "good.yaml", {"zero.stage"}), Contains("dotted.key=value"));
  }
}

TEST_CASE("load_scenario: compare expands into one labelled variant per value", "[scenario][unit]") {
  const auto v = load_scenario(kData + "compare.yaml");
  REQUIRE(v.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CHECK(v[i].label == "zero.stage=" + std::to_string(i));
    CHECK(v[i].scenario.zero.stage == i);
    CHECK(v[i].scenario.compare_key == "zero.stage");
    CHECK(v[i].scenario.compare_values == std::vector<std::string>{"0", "1", "2", "3"});
  }
  CHECK(v[3].scenario.zero.overlap_comm_effective());
  REQUIRE_THROWS_WITH(load_scenario(kData + "compare_bad.yaml"), Contains("compare.zero.stag: unknown key"));
  REQUIRE_THROWS_WITH(load_scenario(kData + "compare_bad.yaml"), Contains("did you mean 'zero.stage'?"));
}

TEST_CASE("load_scenario: ds_config.json import with the HF auto rules, scenario keys win", "[scenario][unit]") {
  const Scenario s = load_one("ds_scenario.yaml");
  const std::int64_t h = 4096; // llama-2-7b hidden
  CHECK(s.zero.stage == 3);
  CHECK(s.zero.reduce_bucket_size == h * h); // 16,777,216 (peft#877 log)
  CHECK(s.zero.stage3_prefetch_bucket_size == 15'099'494); // int(0.9 h^2), also in the peft#877 log
  CHECK(s.zero.stage3_param_persistence_threshold == 10 * h); // 40,960
  CHECK(s.zero.stage3_max_live_parameters == 200'000'000); // scenario's 2e8 beats the JSON's 1e9
  CHECK(s.zero.offload_optimizer == OffloadDevice::CPU);
  CHECK(s.zero.offload_param == OffloadDevice::CPU);
  CHECK(s.training.precision == Precision::FP16);
  CHECK(s.training.micro_batch == 2);
  CHECK(s.training.grad_accum == 1); // "auto" keeps the scenario's value
  CHECK(s.zero.deepspeed_config.find("ds_config.json") != std::string::npos);
}

TEST_CASE("load_scenario: Hugging Face config.json import for gpt2 and llama", "[scenario][unit]") {
  SECTION("gpt2-medium: n_embd 1024, n_layer 24, n_head 16, n_inner null -> 4h") {
    const Scenario s = load_one("hf_gpt2.yaml");
    CHECK(s.model.family == ModelFamily::GPT2);
    CHECK(s.model.hidden == 1024);
    CHECK(s.model.layers == 24);
    CHECK(s.model.heads == 16);
    CHECK(s.model.intermediate == 4096);
    CHECK(s.model.max_positions == 1024);
    CHECK(s.model.vocab == 50257);
    CHECK(s.model.tied_embeddings);
  }
  SECTION("TinyLlama-1.1B: GQA kv 4, untied") {
    const Scenario s = load_one("hf_llama.yaml");
    CHECK(s.model.family == ModelFamily::LLAMA);
    CHECK(s.model.hidden == 2048);
    CHECK(s.model.layers == 22);
    CHECK(s.model.heads == 32);
    CHECK(s.model.kv_heads == 4);
    CHECK(s.model.intermediate == 5632);
    CHECK(s.model.vocab == 32000);
    CHECK_FALSE(s.model.tied_embeddings);
  }
}

TEST_CASE("load_scenario: each kind of bad input names its key", "[scenario][validation]") {
  SECTION("unknown key with typo hint") {
    REQUIRE_THROWS_WITH(load_one("typo.yaml"), Contains("typo.yaml:4: training.micro_btach: unknown key"));
    REQUIRE_THROWS_WITH(load_one("typo.yaml"), Contains("did you mean 'micro_batch'?"));
  }
  SECTION("wrong type") {
    REQUIRE_THROWS_WITH(load_one("wrong_type.yaml"),
                        Contains("training.activation_checkpointing: expected true or false"));
  }
  SECTION("bare number where a unit is due") {
    REQUIRE_THROWS_WITH(load_one("bare_number.yaml"), Contains("cluster.intra_node.bandwidth"));
    REQUIRE_THROWS_WITH(load_one("bare_number.yaml"), Contains("needs a unit"));
  }
  SECTION("zero size") {
    REQUIRE_THROWS_WITH(load_one("zero_size.yaml"), Contains("zero.reduce_bucket_size: must be positive"));
  }
  SECTION("negative value") {
    REQUIRE_THROWS_WITH(load_one("good.yaml", {"training.micro_batch=-1"}),
                        Contains("training.micro_batch: must be positive"));
  }
  SECTION("unknown preset lists valid names") {
    REQUIRE_THROWS_WITH(load_one("unknown_preset.yaml"), Contains("model: unknown preset 'gpt2-xxl'"));
    REQUIRE_THROWS_WITH(load_one("unknown_preset.yaml"), Contains("gpt2-xl"));
    REQUIRE_THROWS_WITH(load_one("good.yaml", {"cluster.topology=dgx-b200"}),
                        Contains("cluster.topology: unknown preset"));
    REQUIRE_THROWS_WITH(load_one("good.yaml", {"cluster.gpu=rtx5090"}), Contains("cluster.gpu: unknown preset"));
  }
  SECTION("stage out of range") {
    REQUIRE_THROWS_WITH(load_one("bad_stage.yaml"), Contains("bad_stage.yaml:4: zero.stage:"));
  }
  SECTION("offload_param without stage 3") {
    REQUIRE_THROWS_WITH(load_one("offload_param_stage2.yaml"),
                        Contains("zero.offload_param: parameter offload needs ZeRO stage 3"));
  }
  SECTION("heads not dividing hidden") {
    REQUIRE_THROWS_WITH(load_one("bad_heads.yaml"), Contains("model.heads: heads (12) must divide hidden (1000)"));
  }
  SECTION("kv_heads not dividing heads") {
    REQUIRE_THROWS_WITH(load_one("bad_kv_heads.yaml"), Contains("model.kv_heads"));
  }
  SECTION("seq_len beyond learned positions") {
    REQUIRE_THROWS_WITH(load_one("long_seq.yaml"), Contains("long_seq.yaml:4: training.seq_len: seq_len 2048 exceeds"));
  }
  SECTION("missing and malformed name") {
    // Without name: the file's stem, when it is a valid name; Unnamed.yaml's capitals are not.
    CHECK(load_one("missing_name.yaml").name == "missing_name");
    REQUIRE_THROWS_WITH(load_one("Unnamed.yaml"),
                        Contains("Unnamed.yaml: name: required key missing: the file name 'Unnamed' is not "
                                 "a name of [a-z0-9-_]"));
    // A given name wins over the stem.
    CHECK(load_one("missing_name.yaml", {"name=gate"}).name == "gate");
    REQUIRE_THROWS_WITH(load_one("bad_name.yaml"), Contains("bad_name.yaml:1: name:"));
  }
  SECTION("enum typo") {
    REQUIRE_THROWS_WITH(load_one("good.yaml", {"simulation.fidelity=flwo"}), Contains("did you mean 'flow'?"));
  }
  SECTION("multi-node without a fabric") {
    REQUIRE_THROWS_WITH(load_one("multi_node_no_fabric.yaml"), Contains("cluster.fabric"));
  }
}

TEST_CASE("load_scenario: file errors: unreadable, malformed YAML and JSON with line numbers",
          "[scenario][validation]") {
  REQUIRE_THROWS_WITH(load_scenario(kData + "no-such-file.yaml"), Contains("cannot read"));
  REQUIRE_THROWS_WITH(load_one("unreadable_ds.yaml"), Contains("zero.deepspeed_config: cannot read"));
  REQUIRE_THROWS_WITH(load_one("malformed.yaml"), Contains("malformed.yaml:"));
  REQUIRE_THROWS_WITH(load_one("malformed.yaml"), Contains("malformed YAML"));
  // ds_malformed.json has the stray ',' on line 4.
  REQUIRE_THROWS_WITH(load_one("ds_malformed.yaml"),
                      Contains("ds_malformed.json:4: zero.deepspeed_config: malformed JSON"));
  // A key we read with the wrong type, on line 4 of the JSON.
  REQUIRE_THROWS_WITH(load_one("ds_bad_type.yaml"), Contains("ds_bad_type.json:4: zero_optimization.overlap_comm"));
  // A tab in the indentation: the parser says "illegal map value" (or similar); the message names the tab's line.
  const zerosim::test::TempDir tmp;
  const std::string tabbed = (tmp.path() / "tabs.yaml").string();
  std::ofstream(tabbed) << "name: t\nmodel: gpt2\ntraining:\n  micro_batch: 1\n\tseq_len: 256\n";
  REQUIRE_THROWS_WITH(load_scenario(tabbed),
                      Contains("malformed YAML") && Contains("(line 5 indents with a tab character: YAML indents with "
                                                             "spaces only)"));
}

TEST_CASE("list_presets: every shipped preset loads and has a summary and a source", "[scenario][unit]") {
  const auto presets = list_presets();
  std::set<std::string> names;
  for (const auto& p : presets) {
    INFO(p.kind << " " << p.name);
    CHECK_FALSE(p.summary.empty());
    CHECK_FALSE(p.source.empty());
    names.insert(p.kind + "/" + p.name);
  }
  for (const char* n : {"model/gpt2",           "model/gpt2-xl",     "model/llama-2-7b",  "model/llama-2-13b",
                        "model/llama-3-8b",     "model/gpt3-175b",   "model/llama-2-70b", "model/llama-3-70b",
                        "model/llama-3.1-405b", "model/mistral-7b",  "model/qwen2.5-7b",  "model/qwen2.5-72b",
                        "model/opt-1.3b",       "model/opt-6.7b",    "model/opt-13b",     "model/opt-30b",
                        "model/opt-66b",        "gpu/rtx3090",       "gpu/rtx4090",       "gpu/v100-32gb",
                        "gpu/a100-40gb",        "gpu/a100-80gb",     "gpu/h100-sxm",      "gpu/h200",
                        "topology/one-rtx4090", "topology/dgx-a100", "topology/dgx-h100"}) {
    INFO(n);
    CHECK(names.count(n) == 1);
  }
  // A card's missing capabilities are part of its summary (gpu.bf16, gpu.flash_attention: false on V100).
  for (const auto& p : presets)
    if (p.kind == "gpu")
      CHECK((p.summary.find("no bf16") != std::string::npos) == (p.name == "v100-32gb"));
  const auto v100 =
      std::find_if(presets.begin(), presets.end(), [](const PresetInfo& p) { return p.name == "v100-32gb"; });
  REQUIRE(v100 != presets.end());
  CHECK(v100->summary == "31.75 GiB, 125.0 TFLOPS fp16 (no bf16) dense, 900 GB/s memory, no FlashAttention");
}

TEST_CASE("GPU presets: peak_lp x matmul_efficiency is the cited measured large-GEMM rate", "[scenario][unit]") {
  // Measured best large-GEMM TFLOPS, 16-bit operands (the sources in each preset's comment):
  // ml-engineering compute/accelerator README, MAMF table (BF16): A100 SXM 271.2, H100 SXM 794.5 ("H200 is the
  // same"), MI300X 668.4; mag-/gpu_benchmark README @93322b7 (mamf-finder): Tesla V100-SXM2-32GB 94.0;
  // mli/transformers-benchmarks#4: RTX 4090 fp16 at n = 8192 158.6. The fractions are written to 3 digits, so the
  // product is within 0.1 % of the figure (0.869 x 312 = 271.13, 0.511 x 1307 = 667.9); 0.2 % allowed.
  const std::vector<std::pair<std::string, double>> measured = {{"a100-40gb", 271.2e12}, {"a100-80gb", 271.2e12},
                                                                {"h100-sxm", 794.5e12},  {"h200", 794.5e12},
                                                                {"mi300x", 668.4e12},    {"v100-32gb", 94.0e12},
                                                                {"rtx4090", 158.6e12}};
  for (const auto& [gpu, tflops] : measured) {
    INFO(gpu);
    const Scenario s = load_one("long_seq.yaml", {"training.seq_len=1024", "cluster.gpu=" + gpu});
    CHECK(s.cluster.gpu.peak_lp.value() * s.cluster.gpu.matmul_efficiency == Approx(tflops).epsilon(0.002));
  }
}

TEST_CASE("list_presets: a full-mesh node shows its per-link and per-GPU bandwidth, a node with NVMe its rates",
          "[scenario][unit]") {
  // mi300x-8.yaml: 64 GB/s per peer link per direction, 7 peers -> 448 GB/s per GPU; dgx-a100.yaml: NVMe RAID-0
  // 56 GB/s read, 30.4 GB/s write.
  std::map<std::string, std::string> summary;
  for (const auto& p : list_presets())
    summary[p.kind + "/" + p.name] = p.summary;
  CHECK_THAT(summary.at("topology/mi300x-8"),
             Catch::Matchers::Contains("full mesh of 64.0 GB/s/dir links (448.0 GB/s/dir per GPU)"));
  CHECK_THAT(summary.at("topology/dgx-a100"), Catch::Matchers::Contains("intra-node 300.0 GB/s/dir") &&
                                                  Catch::Matchers::Contains("NVMe 56.0 / 30.4 GB/s read / write"));
  CHECK_THAT(summary.at("topology/4x-rtx4090-pcie"), Catch::Matchers::Contains("no GPU peer-to-peer"));
}

TEST_CASE("key_table: every key is declared once with a doc line", "[scenario][unit]") {
  std::set<std::string> seen;
  for (const KeySpec& k : key_table()) {
    INFO(k.path);
    CHECK(seen.insert(std::string(k.path)).second);
    CHECK_FALSE(k.doc.empty());
    // A preset file's prose, and plan's choice of preset (apps/plan_command.cpp topology_for): no setting of a run.
    CHECK((k.type == KeyType::SPECIAL || k.set != nullptr || k.path == "cluster.description" ||
           k.path == "cluster.plan_default"));
  }
}

TEST_CASE("key_table: the pin_memory keys say they do nothing without their offload, as the report notes",
          "[scenario][unit]") {
  // analysis/summary.cpp notes "<section>.pin_memory is set ... but <section> is none"; the reference says it first.
  for (const auto& [key, offload] :
       {std::pair<const char*, const char*>{"zero.offload_optimizer_pin_memory", "offload_optimizer"},
        {"zero.offload_param_pin_memory", "offload_param"}}) {
    INFO(key);
    const KeySpec* k = find_key(key);
    REQUIRE(k != nullptr);
    CHECK_THAT(std::string(k->doc),
               Contains(std::string("Set without ") + offload + " (device none) it has no effect"));
    CHECK_THAT(std::string(k->doc), Contains("the report notes so"));
  }
}

TEST_CASE("key_table: the Markdown reference lists every key", "[scenario][unit]") {
  const std::string md = key_reference_markdown();
  for (const KeySpec& k : key_table()) {
    INFO(k.path);
    CHECK(md.find("| `" + std::string(k.path) + "` |") != std::string::npos);
  }
  CHECK(md.find("none\\|cpu\\|nvme") != std::string::npos); // '|' escaped inside a cell
}

TEST_CASE("key_table: docs/scenario-reference.md holds the current generated table", "[scenario][unit]") {
  // Regenerate with scripts/update-docs.sh.
  std::ifstream in(std::string(ZEROSIM_DATA_DIR) + "/docs/scenario-reference.md");
  REQUIRE(in.good());
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO("docs/scenario-reference.md is stale: run scripts/update-docs.sh");
  REQUIRE(doc.find(key_reference_markdown()) != std::string::npos);
}

TEST_CASE("load_scenario: cluster.nvls without an NVSwitch-3 (A100 NVSwitch, NVLink bridge) is an input error",
          "[scenario][unit]") {
  // NVLink SHARP arrived with the third-generation NVSwitch (Hopper); DGX A100 has NVSwitch 2 and the RTX 3090 pair
  // an NVLink bridge, so neither can run NVLS. The message is located at the line of `nvls: true` (line 5).
  const std::string path =
      (std::filesystem::temp_directory_path() / ("zerosim-nvls-check-" + std::to_string(::getpid()) + ".yaml"))
          .string();
  {
    std::ofstream f(path);
    f << "name: nvls-check\nmodel: gpt2\ncluster:\n  topology: dgx-a100\n  nvls: true\n";
  }
  REQUIRE_THROWS_WITH(load_scenario(path),
                      Contains(path + ":5: cluster.nvls") && Contains("NVSwitch-3") && Contains("a100-80gb"));
  std::filesystem::remove(path);
  const std::string base = kData + "good.yaml";
  REQUIRE_THROWS_WITH(load_scenario(base,
                                    {"cluster.topology=2x-rtx3090-nvlink", "cluster.nodes=1", "cluster.nvls=true"}),
                      Contains("cluster.nvls") && Contains("rtx3090"));
  // The H100 preset has it (nvls: true in topologies/clusters/dgx-h100.yaml).
  CHECK(load_scenario(base, {"cluster.topology=dgx-h100"}).front().scenario.cluster.nvls);
}

TEST_CASE("load_scenario: a path given with --set is relative to the current directory, one in the file to the file",
          "[scenario][unit]") {
  // A student ran `zerosim run my/s.yaml --set model=my/cfg.json` from the repository root and got "cannot read
  // file 'my/my/cfg.json'": command-line paths were taken relative to the scenario's folder. Here the scenario lives
  // in sub/ and names sub/in-file.json as "in-file.json"; the --set path "top.json" is in the current directory.
  const zerosim::test::TempDir tmp;
  std::filesystem::create_directories(tmp.path() / "sub");
  const std::string cfg = R"({"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 2,
    "num_attention_heads": 8, "intermediate_size": 1376, "vocab_size": 1000, "max_position_embeddings": 2048})";
  std::ofstream(tmp.path() / "top.json") << cfg;
  std::ofstream(tmp.path() / "sub" / "in-file.json") << cfg;
  std::ofstream(tmp.path() / "sub" / "s.yaml") << "name: t\nmodel: in-file.json\ntraining: {micro_batch: 1, "
                                                  "seq_len: 128}\n";
  // Back to the test's directory however the case ends (a throw would leave it in the removed temporary one).
  struct RestoreCwd {
    std::filesystem::path dir = std::filesystem::current_path();
    ~RestoreCwd() { std::filesystem::current_path(dir); }
  } restore;
  std::filesystem::current_path(tmp.path());
  const std::string scenario = (tmp.path() / "sub" / "s.yaml").string();
  CHECK(load_scenario(scenario).front().scenario.model.hidden == 512); // in the file: sub/in-file.json
  CHECK(load_scenario(scenario, {"model=top.json"}).front().scenario.model.hidden == 512); // --set: ./top.json
  // Not in the current directory but next to the scenario: a sweep axis written in the file (zerosim sweep passes
  // its values as overrides) still finds it.
  CHECK(load_scenario(scenario, {"model=in-file.json"}).front().scenario.model.hidden == 512);
  // In neither place: the error names the path in the current directory, where the user typed it.
  CHECK_THROWS_WITH(load_scenario(scenario, {"model=none.json"}),
                    Catch::Contains((tmp.path() / "none.json").lexically_normal().string()));
}

// newuser30 #12: the dotted DeepSpeed path zero.offload_optimizer.device sets the same map field the YAML
// `offload_optimizer: {device: cpu}` does (DeepSpeedZeroOffloadOptimizerConfig.device); a shorthand written first
// (`cpu`) stays the device when another field is set; a field the map does not have is one error line.
TEST_CASE("load_scenario: --set of an offload map field works like the YAML map", "[scenario][unit]") {
  const Scenario dotted = load_one("good.yaml", {"zero.stage=2", "zero.offload_optimizer.device=cpu"});
  CHECK(dotted.zero.offload_optimizer == OffloadDevice::CPU);
  const Scenario both =
      load_one("good.yaml", {"zero.stage=2", "zero.offload_optimizer=cpu", "zero.offload_optimizer.pin_memory=true"});
  CHECK(both.zero.offload_optimizer == OffloadDevice::CPU);
  REQUIRE(both.zero.offload_optimizer_pin_memory.has_value());
  CHECK(*both.zero.offload_optimizer_pin_memory);
  const Scenario param =
      load_one("good.yaml", {"zero.stage=3", "zero.offload_optimizer=cpu", "zero.offload_param.device=cpu"});
  CHECK(param.zero.offload_param == OffloadDevice::CPU);
  REQUIRE_THROWS_WITH(load_one("good.yaml", {"zero.offload_optimizer.devcie=cpu"}),
                      Contains("zero.offload_optimizer.devcie: unknown DeepSpeed offload field") &&
                          Contains("did you mean 'device'"));
  // The field goes through the generic --set path (review of session 30: no special case with its own parse): a
  // null value removes the field again, over the shorthand too, and the value gets the duplicate-key check every
  // --set value gets (a map given twice the same key is refused before the field's own type check).
  const Scenario unset =
      load_one("good.yaml", {"zero.stage=2", "zero.offload_optimizer=cpu", "zero.offload_optimizer.pin_memory=true",
                             "zero.offload_optimizer.pin_memory=null"});
  CHECK(unset.zero.offload_optimizer == OffloadDevice::CPU);
  CHECK(!unset.zero.offload_optimizer_pin_memory.has_value());
  REQUIRE_THROWS_WITH(load_one("good.yaml", {"zero.stage=2", "zero.offload_optimizer=cpu",
                                             "zero.offload_optimizer.pin_memory={a: 1, a: 2}"}),
                      Contains("<cli>") && Contains("zero.offload_optimizer.pin_memory.a: duplicate key"));
}
