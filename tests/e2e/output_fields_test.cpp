// End-to-end tests of the output field reference (analysis/output_fields.hpp, docs/outputs.md): every field a real
// run writes to result.json, summary.json and sweep.json is in the table and every table entry is written by one of
// the runs here; memory.csv's columns are the table's, and its `bytes` is each tag's live total after the event.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "analysis/output_fields.hpp"
#include "tests/support/cli_runner.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;
using nlohmann::json;
using zerosim::analysis::output_field_matches;
using zerosim::analysis::output_fields;
using zerosim::test::read_json;
using zerosim::test::run_zerosim;
using zerosim::test::slurp;
using zerosim::test::TempDir;

namespace {

using Path = std::vector<std::string>;

/// The leaves of `v` as key paths: an object's keys descend; an array of objects descends with "[]" appended to its
/// key; any other array, a scalar, null, {} and [] are leaves (OutputField::path's spelling).
void leaves(const json& v, Path at, std::vector<std::pair<Path, const json*>>& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, x] : v.items()) {
      Path p = at;
      p.push_back(k);
      leaves(x, p, out);
    }
    return;
  }
  if (v.is_array() && !v.empty() && v.front().is_object()) {
    at.back() += "[]";
    for (const auto& x : v)
      leaves(x, at, out);
    return;
  }
  out.emplace_back(at, &v);
}

std::string joined(const Path& p) {
  std::string s;
  for (const auto& k : p)
    s += (s.empty() ? "" : ".") + k;
  return s;
}

/// The table's entries for `file`.
std::vector<std::string> patterns(const std::string& file) {
  std::vector<std::string> out;
  for (const auto& f : output_fields())
    if (f.file == file)
      out.push_back(f.path);
  return out;
}

/// `p` is a table entry, or (its value null, {} or []) the head of one: a field whose members are absent this time.
bool covered(const std::vector<std::string>& table, const Path& p, const json& v) {
  Path as_array = p;
  as_array.back() += "[]";
  for (const auto& t : table) {
    if (output_field_matches(t, p))
      return true;
    if (!(v.is_null() || v.empty()))
      continue;
    // The entry's first p.size() segments.
    std::string head;
    std::size_t from = 0;
    for (std::size_t k = 0; k < p.size() && from != std::string::npos; ++k) {
      const std::size_t dot = t.find('.', from);
      head += (k == 0 ? "" : ".") + t.substr(from, dot == std::string::npos ? std::string::npos : dot - from);
      from = dot == std::string::npos ? dot : dot + 1;
    }
    if (from != std::string::npos && (output_field_matches(head, p) || output_field_matches(head, as_array)))
      return true;
  }
  return false;
}

/// Checks every leaf of `doc` against the table of `file` and records which entries were emitted. summary.json's
/// variants[].summary.* is checked against result.json's summary.* entries.
void check_file(const std::string& file, const json& doc, std::set<std::string>& emitted) {
  std::vector<std::pair<Path, const json*>> all;
  leaves(doc, {}, all);
  REQUIRE(!all.empty());
  for (auto [p, v] : all) {
    std::string f = file;
    if (file == "summary.json" && p.size() > 2 && p[0] == "variants[]" && p[1] == "summary") {
      p.erase(p.begin(), p.begin() + 1);
      f = "result.json";
      emitted.insert("summary.json:variants[].summary.*");
    }
    const auto table = patterns(f);
    INFO(f << ": " << joined(p));
    CHECK(covered(table, p, *v));
    for (const auto& t : table)
      if (output_field_matches(t, p) || output_field_matches(t + ".*", p))
        emitted.insert(f + ":" + t);
    // The table's type is what is written: an "integer" field is a JSON integer (never 4755.0), a "number" any JSON
    // number, a "bool" true or false (each may be null where the table says "| null").
    for (const auto& o : output_fields())
      if (o.file == f && output_field_matches(o.path, p) && !v->is_null()) {
        INFO("typed " << o.type << ", written " << v->dump());
        if (o.type == "integer")
          CHECK(v->is_number_integer());
        else if (o.type == "number" || o.type == "number | null")
          CHECK(v->is_number());
        else if (o.type == "bool")
          CHECK(v->is_boolean());
      }
  }
}

void check_every_entry_emitted(const std::string& file, const std::set<std::string>& emitted) {
  for (const auto& t : patterns(file)) {
    INFO(file << ": table entry " << t << " was written by none of the runs");
    CHECK(emitted.count(file + ":" + t) == 1);
  }
}

/// GPT-2 small on one DGX A100 node (8 ranks, analytic fidelity): stage 2 with optimizer offload to the CPU fits
/// (16 B/param x 124.4M = 2.0 GB of model states, ZeRO paper §3.1, far below 80 GiB); with 1 GiB of GPU memory
/// the lp params alone (2 B x 124.4M = 0.25 GB) and 8 sequences' activations of 1024 tokens
/// (Korthikanti et al. 2022: s·b·h·34 = 1024·8·768·34 = 214 MB per layer, 12 layers) do not.
std::string scenario(const std::string& memory) {
  return "name: fields\nmodel: gpt2\ntraining: {micro_batch: 8, seq_len: 1024}\n"
         "zero: {stage: 2, offload_optimizer: cpu}\n"
         "cluster: {topology: dgx-a100, nodes: 1" +
         (memory.empty() ? std::string() : ", gpu: {memory: " + memory + "}") +
         "}\nsimulation: {steps: 3, fidelity: analytic, on_oom: continue}\n";
}

} // namespace

TEST_CASE("output fields: result.json, summary.json and sweep.json write exactly the fields docs/outputs.md lists",
          "[e2e]") {
  TempDir tmp;
  std::ofstream(tmp.path() / "fit.yaml") << scenario("");
  std::ofstream(tmp.path() / "oom.yaml") << scenario("1GiB");
  REQUIRE(run_zerosim(tmp.path(), {"run", "fit.yaml", "--out", "fit", "--quiet"}).status == 0);
  REQUIRE(run_zerosim(tmp.path(), {"run", "oom.yaml", "--out", "oom", "--quiet"}).status == 0);
  // A sweep with a simulated point at each stage and an invalid one (offload_param needs stage 3).
  const auto sw = run_zerosim(tmp.path(), {"sweep", "fit.yaml", "--axis", "zero.stage=2,3", "--axis",
                                           "zero.offload_param=none,cpu", "--out", "sw", "--quiet"});
  INFO(sw.err);
  REQUIRE(sw.status == 0);

  std::set<std::string> emitted;
  for (const char* run : {"fit", "oom"}) {
    check_file("result.json", read_json(tmp.path() / run / "result.json"), emitted);
    check_file("summary.json", read_json(tmp.path() / run / "summary.json"), emitted);
  }
  CHECK(read_json(tmp.path() / "oom" / "result.json").at("oom").is_object());
  check_file("sweep.json", read_json(tmp.path() / "sw" / "sweep.json"), emitted);
  check_every_entry_emitted("result.json", emitted);
  check_every_entry_emitted("summary.json", emitted);
  check_every_entry_emitted("sweep.json", emitted);

  // memory.csv: the table's columns, in order.
  std::ifstream csv(tmp.path() / "fit" / "memory.csv");
  std::string header;
  std::getline(csv, header);
  std::string expected;
  for (const auto& c : patterns("memory.csv"))
    expected += (expected.empty() ? "" : ",") + c;
  CHECK(header == expected);
}

TEST_CASE("output fields: plan --json writes exactly the fields docs/outputs.md lists for plan.json", "[e2e]") {
  // GPT-2 on one DGX A100 node with a small host RAM: feasible plans with and without offload (a host peak), and
  // rejected, pruned or dominated candidates (nulls), with every option plan.json records given.
  TempDir tmp;
  const auto o = run_zerosim(tmp.path(), {"plan",      "--model",
                                          "gpt2",      "--gpu",
                                          "a100-80gb", "--max-gpus",
                                          "2",         "--global-batch",
                                          "8",         "--seq-len",
                                          "256",       "--tokens",
                                          "1e9",       "--price-per-gpu-hour",
                                          "2",         "--time-margin",
                                          "1.2",       "--deadline",
                                          "30d",       "--max-step-time",
                                          "10s",       "--host-memory",
                                          "64GiB",     "--exhaustive",
                                          "--set",     "training.kernel_impl=fused",
                                          "--json",    "p.json",
                                          "--jobs",    "2"});
  INFO(o.out << o.err);
  REQUIRE(o.status == 0);
  std::set<std::string> emitted;
  const json doc = read_json(tmp.path() / "p.json");
  check_file("plan.json", doc, emitted);
  check_every_entry_emitted("plan.json", emitted);
  // A host peak somewhere (an offload plan), so host_node_peak_gib is a number in one row at least.
  CHECK(std::any_of(doc.at("rows").begin(), doc.at("rows").end(),
                    [](const json& r) { return r.at("host_node_peak_gib").is_number(); }));
}

TEST_CASE("output fields: memory.csv's bytes is the tag's live total after the event, summing to total_bytes",
          "[e2e]") {
  // If `bytes` were the size allocated or freed, the tags' latest values would not add up to the device's total.
  TempDir tmp;
  std::ofstream(tmp.path() / "fit.yaml") << scenario("");
  REQUIRE(run_zerosim(tmp.path(), {"run", "fit.yaml", "--out", "fit", "--quiet"}).status == 0);
  std::ifstream csv(tmp.path() / "fit" / "memory.csv");
  std::string line;
  std::getline(csv, line);
  std::map<std::tuple<std::string, std::string>, std::map<std::string, double>> live; // (rank, device) -> tag
  std::set<std::string> devices;
  std::size_t rows = 0;
  bool saw_drop = false;
  while (std::getline(csv, line)) {
    std::vector<std::string> c;
    std::stringstream in(line);
    for (std::string f; std::getline(in, f, ',');)
      c.push_back(f);
    REQUIRE(c.size() == 7);
    auto& tags = live[{c[1], c[2]}];
    const double bytes = std::stod(c[4]);
    CHECK(bytes >= 0); // a total, never a negative delta for a free
    saw_drop = saw_drop || (tags.count(c[3]) != 0 && bytes < tags[c[3]]);
    tags[c[3]] = bytes;
    double sum = 0;
    for (const auto& [tag, b] : tags)
      sum += b;
    INFO(line);
    CHECK(sum == Approx(std::stod(c[5])).margin(0.5));
    devices.insert(c[2]);
    ++rows;
  }
  CHECK(rows > 100);
  CHECK(saw_drop); // frees show as a smaller total
  // Optimizer offload to the CPU: host rows too.
  CHECK(devices == std::set<std::string>{"gpu", "host"});
}

TEST_CASE("output fields: list --outputs --json gives the table as JSON, one entry per field", "[e2e]") {
  TempDir tmp;
  const auto r = run_zerosim(tmp.path(), {"list", "--outputs", "--json"});
  REQUIRE(r.status == 0);
  const json j = json::parse(r.out);
  const auto& fields = j.at("fields");
  REQUIRE(fields.size() == output_fields().size());
  // The same entries, in the same order, as the Markdown table (docs/outputs.md) is made of.
  for (std::size_t k = 0; k < fields.size(); ++k) {
    const auto& o = output_fields()[k];
    INFO(o.file << ": " << o.path);
    CHECK(fields[k].at("file") == o.file);
    CHECK(fields[k].at("name") == o.path);
    CHECK(fields[k].at("type") == o.type);
    CHECK(fields[k].at("unit") == o.unit);
    CHECK(fields[k].at("stable") == o.stable);
    CHECK(fields[k].at("meaning") == o.meaning);
  }
  // One field by hand: summary.json's world_size is an integer count, stable.
  CHECK(std::any_of(fields.begin(), fields.end(), [](const json& f) {
    return f.at("file") == "result.json" && f.at("name") == "summary.world_size" && f.at("type") == "integer" &&
           f.at("unit") == "count" && f.at("stable") == true;
  }));
  CHECK(j.at("placeholders").at("<kind>").size() == 4);
  // --json alone is a usage error.
  const auto bad = run_zerosim(tmp.path(), {"list", "--json"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, Contains("--json needs --outputs"));
}
