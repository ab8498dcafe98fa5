#include "analysis/result_json.hpp"
#include "analysis/summary.hpp"
#include "sim/error.hpp"
#include "sim/scenario/key_table.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;
using nlohmann::json;

namespace {
constexpr double kTol = 1e-12;
}

TEST_CASE("result_json: echoes the scenario with effective overlap_comm and carries the summary", "[analysis][unit]") {
  const auto sc = synthetic_scenario(); // stage 3, overlap_comm unset -> effective true (DeepSpeed config.py)
  auto run = synthetic_run();
  run.memory[1].alloc_retries = 3;
  const auto s = summarize(sc, synthetic_workload(), run);
  const json j = json::parse(result_json(sc, "zero.stage=3", s, run));
  CHECK(j.at("variant") == "zero.stage=3");
  CHECK_FALSE(j.at("zerosim_version").get<std::string>().empty());
  CHECK(j.at("scenario").at("zero").at("overlap_comm") == true);
  CHECK(j.at("scenario").at("zero").at("overlap_comm_explicit") == false);
  CHECK(j.at("scenario").at("cluster").at("world_size") == 8);
  CHECK(j.at("scenario").at("gpu").at("memory_gib").get<double>() == Approx(80.0).epsilon(kTol));
  CHECK(j.at("scenario").at("training").at("grad_accum") == 4);
  CHECK(j.at("summary").at("step_time_s").get<double>() == Approx(2.25).epsilon(kTol));
  CHECK(j.at("summary").at("peak_memory_gib").get<double>() == Approx(12.0).epsilon(kTol));
  CHECK(j.at("step_times_s").size() == 3);
  CHECK(j.at("phase_breakdown").at("exposed_comm_s").get<double>() == Approx(0.25).epsilon(1e-9));
  REQUIRE(j.at("memory_per_rank").size() == 3);
  const auto& r1 = j.at("memory_per_rank").at(1);
  CHECK(r1.at("rank") == 1);
  CHECK(r1.at("alloc_retries") == 3);
  CHECK(j.at("memory_per_rank").at(0).at("alloc_retries") == 0);
  CHECK(r1.at("peak").at("label") == "alloc adam");
  CHECK(r1.at("peak").at("by_tag_bytes").at("optimizer_states").get<double>() == Approx(8.0 * kGiB).epsilon(kTol));
  CHECK(j.at("collectives").at("all_reduce").at("wire_bytes").get<double>() == Approx(7e9).epsilon(kTol));
  CHECK(j.at("collectives").at("all_reduce").at("calls").get<double>() == Approx(3).epsilon(kTol));
  CHECK(j.at("oom").is_null());
}

TEST_CASE("result_json: the oom object names rank, step, tag, sizes and what was live", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run();
  trace::OomInfo o;
  o.rank = 2;
  o.time = 1.5;
  o.step = 0;
  o.tag = program::MemTag::GATHER_BUFFER;
  o.requested = 1e9;
  o.capacity = 80.0 * kGiB;
  o.live_by_tag[tag(program::MemTag::ACTIVATIONS)] = 79.5 * kGiB;
  run.oom = o;
  const auto s = summarize(sc, synthetic_workload(), run);
  const json j = json::parse(result_json(sc, "", s, run));
  const auto& oj = j.at("oom");
  CHECK(oj.at("rank") == 2);
  CHECK(oj.at("step") == 0);
  CHECK(oj.at("tag") == "gather_buffer");
  CHECK(oj.at("time_s").get<double>() == Approx(1.5).epsilon(kTol));
  CHECK(oj.at("requested_bytes").get<double>() == Approx(1e9).epsilon(kTol));
  CHECK(oj.at("live_by_tag_bytes").at("activations").get<double>() == Approx(79.5 * kGiB).epsilon(kTol));
  CHECK(j.at("summary").at("fits") == false);
}

TEST_CASE("summary_json: a run stopped at its OOM writes null rates, as sweep.json does, and reads them back as 0",
          "[analysis][unit]") {
  // has_step_time: steps completed, but stopped at the OOM (on_oom: stop) -> no step time, tokens/s, TFLOPS, MFU.
  auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  REQUIRE(s.step_time_s > 0);
  s.oom = true;
  s.finished = false;
  const json j = json::parse(summary_json(s));
  for (const char* key :
       {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu"}) {
    INFO(key);
    CHECK(j.at(key).is_null());
  }
  CHECK(j.at("steps_completed").get<int>() == s.steps_completed); // what did complete stays
  const auto t = summary_from_json(summary_json(s));
  CHECK(t.step_time_s == 0);
  CHECK(t.mfu == 0);
  // Null elsewhere is a malformed summary, not a 0.
  json broken = json::parse(summary_json(s));
  broken["world_size"] = nullptr;
  CHECK_THROWS_AS(summary_from_json(broken.dump()), std::exception);
  // Simulated on past the OOM (on_oom: continue, finished): the rates are numbers, as the console prints them ("!").
  s.finished = true;
  CHECK(json::parse(summary_json(s)).at("step_time_s").get<double>() == Approx(s.step_time_s).epsilon(kTol));
}

TEST_CASE("summary_json: round trip keeps every field", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  const auto t = summary_from_json(summary_json(s));
  CHECK(t.gpu_name == s.gpu_name);
  CHECK(t.step_time_s == s.step_time_s);
  CHECK(t.tokens_per_s == s.tokens_per_s);
  CHECK(t.mfu == s.mfu);
  CHECK(t.peak_bytes == s.peak_bytes);
  CHECK(t.peak_rank == s.peak_rank);
  CHECK(t.peak_label == s.peak_label);
  CHECK(t.peak_by_tag == s.peak_by_tag);
  CHECK(t.breakdown.exposed_comm_s == s.breakdown.exposed_comm_s);
  CHECK(t.step_times_s == s.step_times_s);
  CHECK(t.traffic.wire_bytes == s.traffic.wire_bytes);
  CHECK(t.fits == s.fits);
  CHECK(t.capacity_bytes == s.capacity_bytes);
  CHECK(t.diagnostics == s.diagnostics);
  // Flags whose wrong value changes what the console claims, both ways.
  auto u = s;
  u.steady_peak_reached = !s.steady_peak_reached;
  u.alloc_retry_wait_s = 0.25;
  const auto v = summary_from_json(summary_json(u));
  CHECK(v.steady_peak_reached == u.steady_peak_reached);
  CHECK(t.steady_peak_reached == s.steady_peak_reached);
  CHECK(v.alloc_retry_wait_s == 0.25);
  // The host optimizer's name reaches the console of the parent process (a run's summary crosses a pipe).
  u.host_optimizer = "torch single-tensor Adam";
  CHECK(summary_from_json(summary_json(u)).host_optimizer == "torch single-tensor Adam");
}

TEST_CASE("summary_json: one step's collectives under collectives_per_step, null without a step, absent in older runs",
          "[analysis][unit]") {
  auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  CHECK(json::parse(summary_json(s)).at("collectives_per_step").is_null()); // synthetic_run has no per-step traffic
  s.step_traffic_step = 2;
  s.step_traffic_steady = true;
  s.step_traffic.collective_calls[0] = 14;
  s.step_traffic.collective_bytes[0] = 2e9;
  s.step_traffic.wire_bytes[0] = 3.5e9;
  const json j = json::parse(summary_json(s));
  const json& c = j.at("collectives_per_step");
  CHECK(c.at("step").get<int>() == 2);
  CHECK(c.at("steady_state").get<bool>());
  CHECK(c.at("all_reduce").at("payload_bytes").get<double>() == 2e9);
  CHECK(c.at("all_reduce").at("wire_bytes").get<double>() == 3.5e9);
  CHECK(c.at("all_reduce").at("calls").get<double>() == 14);
  CHECK(c.at("all_gather").at("calls").get<double>() == 0);
  CHECK(j.at("collectives").at("all_reduce").at("wire_bytes").get<double>() == 7e9); // the whole run's, kept
  const auto t = summary_from_json(j.dump());
  CHECK(t.step_traffic_step == 2);
  CHECK(t.step_traffic_steady);
  CHECK(t.step_traffic.wire_bytes == s.step_traffic.wire_bytes);
  CHECK(t.step_traffic.collective_bytes == s.step_traffic.collective_bytes);
  CHECK(t.step_traffic.collective_calls == s.step_traffic.collective_calls);
  json old = j;
  old.erase("collectives_per_step");
  CHECK(summary_from_json(old.dump()).step_traffic_step == -1);
}

TEST_CASE("summary_from_json: malformed text is a zerosim::Error", "[analysis][unit]") {
  REQUIRE_THROWS_AS(summary_from_json("{not json"), zerosim::Error);
  REQUIRE_THROWS_WITH(summary_from_json("{}"), Catch::Contains("malformed run summary"));
}

TEST_CASE("write_result_json: writes the file and leaves no .tmp", "[analysis][unit]") {
  TempDir dir("result-json");
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const auto s = summarize(sc, synthetic_workload(), run);
  const auto path = (dir.path() / "result.json").string();
  write_result_json(path, sc, "", s, run);
  std::ifstream in(path);
  REQUIRE(in);
  const json j = json::parse(in);
  CHECK(j.at("summary").at("world_size") == 8);
  CHECK_FALSE(has_tmp_file(dir.path()));
}

TEST_CASE("write_result_json: an unwritable path throws and leaves nothing", "[analysis][unit]") {
  TempDir dir("result-json-bad");
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const auto s = summarize(sc, synthetic_workload(), run);
  const auto path = (dir.path() / "missing-dir" / "result.json").string();
  REQUIRE_THROWS_WITH(write_result_json(path, sc, "", s, run), Catch::Contains("result.json"));
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("write_summary_json: lists every variant with its label and dir", "[analysis][unit]") {
  TempDir dir("summary-json");
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  const auto path = (dir.path() / "summary.json").string();
  write_summary_json(path, "synthetic", {{"zero.stage=1", "out/stage-1", s}, {"zero.stage=2", "out/stage-2", s}});
  std::ifstream in(path);
  const json j = json::parse(in);
  CHECK(j.at("scenario") == "synthetic");
  REQUIRE(j.at("variants").size() == 2);
  CHECK(j.at("variants").at(1).at("label") == "zero.stage=2");
  CHECK(j.at("variants").at(1).at("dir") == "out/stage-2");
  CHECK(j.at("variants").at(0).at("summary").at("step_time_s").get<double>() == Approx(2.25).epsilon(kTol));
  CHECK_FALSE(has_tmp_file(dir.path()));
}

TEST_CASE("result_json: the scenario record holds every settable key of the key table (zerosim diff compares it)",
          "[analysis][unit]") {
  // A new user found runs differing only in training.loss_impl or cluster.intra_node_topology reported as "scenario
  // keys that differ: none": the record listed a fixed set of keys. Every non-special key of the table must now
  // appear, under its section, by its leaf name or the leaf name plus a unit suffix (_bytes, _s, _bytes_per_s,
  // _flops_per_s, _hz): "gpu.X" and "cpu.X" keys live under scenario.gpu / scenario.cpu; model.preset is model.name.
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const json j = json::parse(result_json(sc, "", summarize(sc, synthetic_workload(), run), run)).at("scenario");
  std::vector<std::string> missing;
  std::size_t checked = 0;
  for (const auto& k : scenario::key_table()) {
    if (k.type == scenario::KeyType::SPECIAL || k.path.find('.') == std::string_view::npos)
      continue;
    std::string path(k.path);
    if (path == "model.preset")
      path = "model.name";
    if (path.rfind("cluster.description", 0) == 0 || path == "cluster.plan_default")
      continue; // a preset file's prose, and which preset plan picks for a GPU: not settings of a run
    std::vector<std::string> parts;
    for (std::size_t a = 0, b; a <= path.size(); a = b + 1) {
      b = path.find('.', a);
      if (b == std::string::npos)
        b = path.size();
      parts.push_back(path.substr(a, b - a));
    }
    const json* node = &j;
    bool found = true;
    for (std::size_t i = 0; i + 1 < parts.size() && found; ++i) {
      found = node->contains(parts[i]);
      if (found)
        node = &node->at(parts[i]);
    }
    const std::string& leaf = parts.back();
    found = found && (node->contains(leaf) || node->contains(leaf + "_bytes") || node->contains(leaf + "_s") ||
                      node->contains(leaf + "_bytes_per_s") || node->contains(leaf + "_flops_per_s") ||
                      node->contains(leaf + "_hz"));
    ++checked;
    if (!found)
      missing.push_back(std::string(k.path));
  }
  CHECK(checked > 100); // the table holds ~120 settable keys: the loop is not vacuous
  INFO("keys missing from result.json's scenario record: " << [&] {
    std::string s;
    for (const auto& m : missing)
      s += m + " ";
    return s;
  }());
  CHECK(missing.empty());
}

TEST_CASE("result_json: a source path that is not UTF-8 (a Latin-1 file name) is written with U+FFFD, not thrown",
          "[analysis][unit]") {
  auto sc = synthetic_scenario();
  sc.model.source = "caf\xe9/config.json"; // 0xE9 alone is not UTF-8 (Unicode 15, Table 3-7)
  const auto run = synthetic_run();
  const auto s = summarize(sc, synthetic_workload(), run);
  std::string text;
  REQUIRE_NOTHROW(text = result_json(sc, "", s, run));
  CHECK(json::parse(text).at("scenario").at("model").at("source") == "caf\xef\xbf\xbd/config.json");
}

TEST_CASE("simulated_scenario_text: leaves out the paths the inputs were read from, keeps what was read",
          "[analysis][unit]") {
  // New-user 15: one sweep run as sc/l13sweep.yaml and as /tmp/nu15/sc/l13sweep.yaml resumed nothing, because the
  // sweep's point key hashed the scenario's path as typed (and the ds_config.json path resolved against it).
  auto a = synthetic_scenario();
  auto b = a;
  a.file = "sc/l13sweep.yaml";
  b.file = "/tmp/nu15/sc/l13sweep.yaml";
  a.zero.deepspeed_config = "sc/ds_config.json";
  b.zero.deepspeed_config = "/tmp/nu15/sc/ds_config.json";
  a.model.source = "sc/config.json";
  b.model.source = "/moved/config.json";
  const std::string text = simulated_scenario_text(a);
  CHECK(text == simulated_scenario_text(b));
  CHECK(text.find("l13sweep") == std::string::npos);
  CHECK(text.find("ds_config") == std::string::npos);
  CHECK(text.find("config.json") == std::string::npos);
  // What the files said is still there: another stage is another text.
  b.zero.stage = a.zero.stage == 3 ? 2 : 3;
  CHECK(simulated_scenario_text(b) != text);
  // A model named after a directory that is not UTF-8 (config.json without _name_or_path) does not throw.
  b.model.name = "caf\xe9/config.json (gpt2)";
  CHECK_NOTHROW(simulated_scenario_text(b));
}

TEST_CASE("result_json: every choice key records a value its --set takes (unset dtypes as the model's)",
          "[analysis][unit]") {
  // `zerosim diff` prints the recorded value for --set. zero.communication_data_type and zero.grad_accum_dtype
  // were recorded as "model" when unset, which --set refuses (choices fp32|fp16|bf16). Unset means the model's
  // 16-bit dtype (DeepSpeed engine.py communication_data_type, get_data_types): bf16 for a bf16 model, fp16 for fp16.
  auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const auto record = [&] {
    return json::parse(result_json(sc, "", summarize(sc, synthetic_workload(), run), run)).at("scenario");
  };
  sc.training.precision = scenario::Precision::BF16;
  json j = record();
  CHECK(j.at("zero").at("communication_data_type") == "bf16");
  CHECK(j.at("zero").at("grad_accum_dtype") == "bf16");
  sc.training.precision = scenario::Precision::FP16;
  j = record();
  CHECK(j.at("zero").at("communication_data_type") == "fp16");
  CHECK(j.at("zero").at("grad_accum_dtype") == "fp16");
  sc.zero.communication_data_type = scenario::CommDataType::FP32;
  sc.zero.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  j = record();
  CHECK(j.at("zero").at("communication_data_type") == "fp32");
  CHECK(j.at("zero").at("grad_accum_dtype") == "fp32");

  // Every ENUM key of the table recorded by its leaf name holds one of its choices, with every key at its default.
  sc = synthetic_scenario();
  j = record();
  std::vector<std::string> bad;
  std::size_t checked = 0;
  for (const auto& k : scenario::key_table()) {
    if (k.type != scenario::KeyType::ENUM)
      continue;
    const std::string path(k.path);
    const auto dot = path.rfind('.');
    if (dot == std::string::npos)
      continue;
    std::string section = path.substr(0, dot);
    if (section == "cluster.gpu" || section == "cluster.cpu")
      section = section.substr(8); // recorded under scenario.gpu / scenario.cpu
    const std::string leaf = path.substr(dot + 1);
    if (!j.contains(section) || !j.at(section).contains(leaf) || !j.at(section).at(leaf).is_string())
      continue;
    ++checked;
    const std::string v = j.at(section).at(leaf).get<std::string>();
    const std::string choices = "|" + std::string(k.choices) + "|";
    if (choices.find("|" + v + "|") == std::string::npos)
      bad.push_back(path + "=" + v + " (" + std::string(k.choices) + ")");
  }
  CHECK(checked >= 10); // the table has a dozen and more choice keys: the loop is not vacuous
  INFO("recorded values --set refuses: " << [&] {
    std::string s;
    for (const auto& b : bad)
      s += b + " ";
    return s;
  }());
  CHECK(bad.empty());
}
