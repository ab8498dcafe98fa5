// Unit tests of analysis/sweep.hpp: grid and zip expansion, point keys, shard slicing, rows, journal, CSV, merge.
#include "analysis/sweep.hpp"
#include "analysis/measured_band.hpp"
#include "analysis/version.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <sstream>

#include <set>
#include <string>
#include <vector>

using namespace zerosim::analysis;
using Catch::Contains;
using Catch::EndsWith;
using Catch::StartsWith;
using nlohmann::json;

namespace {

constexpr double kTol = 1e-12;

SweepSpec grid_2x3() {
  SweepSpec s;
  s.grid.push_back({"zero.stage", {"1", "2"}, 0});
  s.grid.push_back({"training.micro_batch", {"1", "2", "4"}, 0});
  return s;
}

SweepRow sample_row(std::size_t index, const std::string& key) {
  SweepRow r;
  r.index = index;
  r.key = key;
  r.inputs = {{"zero.stage", "2"}};
  r.ok = true;
  r.step_time_s = 1.25;
  r.tokens_per_s = 8192;
  r.mfu = 0.4;
  r.world_size = 8;
  r.peak_allocated_bytes = 3.0 * 1073741824.0;
  r.peak_reserved_bytes = 4.0 * 1073741824.0;
  r.capacity_bytes = 24.0 * 1073741824.0;
  r.fits = true;
  return r;
}

} // namespace

TEST_CASE("expand_sweep: a grid is the Cartesian product with the first axis slowest", "[analysis][unit]") {
  const auto pts = expand_sweep(grid_2x3());
  // 2 stages x 3 micro-batches = 6 points, ordered (1,1) (1,2) (1,4) (2,1) (2,2) (2,4).
  REQUIRE(pts.size() == 6);
  const std::vector<std::string> want{"zero.stage=1 training.micro_batch=1", "zero.stage=1 training.micro_batch=2",
                                      "zero.stage=1 training.micro_batch=4", "zero.stage=2 training.micro_batch=1",
                                      "zero.stage=2 training.micro_batch=2", "zero.stage=2 training.micro_batch=4"};
  for (std::size_t i = 0; i < pts.size(); ++i) {
    CHECK(pts[i].index == i);
    CHECK(pts[i].label() == want[i]);
  }
  CHECK(pts[4].as_set_args() == std::vector<std::string>{"zero.stage=2", "training.micro_batch=2"});
}

TEST_CASE("expand_sweep: zipped axes advance together, innermost", "[analysis][unit]") {
  SweepSpec s;
  s.grid.push_back({"zero.stage", {"2", "3"}, 0});
  s.zip.push_back({"cluster.nodes", {"1", "2", "4"}, 0});
  s.zip.push_back({"training.grad_accum", {"8", "4", "2"}, 0});
  const auto pts = expand_sweep(s);
  // 2 grid values x 3 zipped pairs = 6 points (not 2 x 3 x 3 = 18).
  REQUIRE(pts.size() == 6);
  CHECK(pts[0].label() == "zero.stage=2 cluster.nodes=1 training.grad_accum=8");
  CHECK(pts[2].label() == "zero.stage=2 cluster.nodes=4 training.grad_accum=2");
  CHECK(pts[4].label() == "zero.stage=3 cluster.nodes=2 training.grad_accum=4");
}

TEST_CASE("expand_sweep: an empty spec is the base scenario, one point", "[analysis][unit]") {
  const auto pts = expand_sweep(SweepSpec{});
  REQUIRE(pts.size() == 1);
  CHECK(pts[0].overrides.empty());
}

TEST_CASE("expand_sweep: bad definitions name the key", "[analysis][unit]") {
  SECTION("zip lengths differ") {
    SweepSpec s;
    s.zip.push_back({"cluster.nodes", {"1", "2"}, 0});
    s.zip.push_back({"training.grad_accum", {"8"}, 0});
    REQUIRE_THROWS_WITH(expand_sweep(s), Contains("training.grad_accum") && Contains("advance together"));
  }
  SECTION("empty axis") {
    SweepSpec s;
    s.grid.push_back({"zero.stage", {}, 0});
    REQUIRE_THROWS_WITH(expand_sweep(s), Contains("zero.stage") && Contains("non-empty"));
  }
  SECTION("key twice") {
    SweepSpec s;
    s.grid.push_back({"zero.stage", {"1"}, 0});
    s.zip.push_back({"zero.stage", {"2"}, 0});
    REQUIRE_THROWS_WITH(expand_sweep(s), Contains("zero.stage") && Contains("twice"));
  }
}

TEST_CASE("in_shard: shards partition the points exactly (disjoint, union = all, balanced)", "[analysis][unit]") {
  constexpr std::size_t kPoints = 103;
  for (int n = 1; n <= 8; ++n) {
    std::multiset<std::size_t> seen;
    std::size_t smallest = kPoints;
    std::size_t largest = 0;
    for (int i = 0; i < n; ++i) {
      std::size_t count = 0;
      for (std::size_t p = 0; p < kPoints; ++p)
        if (in_shard(p, Shard{i, n})) {
          seen.insert(p);
          ++count;
        }
      smallest = std::min(smallest, count);
      largest = std::max(largest, count);
    }
    CHECK(seen.size() == kPoints); // every point once: union = all and no point in two shards
    for (std::size_t p = 0; p < kPoints; ++p)
      CHECK(seen.count(p) == 1);
    CHECK(largest - smallest <= 1);
  }
}

TEST_CASE("parse_shard: reads i/n and rejects the rest", "[analysis][unit]") {
  const Shard s = parse_shard("3/16");
  CHECK(s.index == 3);
  CHECK(s.count == 16);
  SECTION("index not below count") { REQUIRE_THROWS_WITH(parse_shard("4/4"), Contains("'4/4'")); }
  SECTION("no slash") { REQUIRE_THROWS_WITH(parse_shard("3"), Contains("i/n")); }
  SECTION("negative") { REQUIRE_THROWS_WITH(parse_shard("-1/4"), Contains("i/n")); }
  SECTION("zero count") { REQUIRE_THROWS_WITH(parse_shard("0/0"), Contains("i/n")); }
}

TEST_CASE("point_key: FNV-1a 64 of the overrides, independent of the index", "[analysis][unit]") {
  SweepPoint p;
  p.index = 7;
  p.overrides = {{"zero.stage", "2"}};
  // FNV-1a 64 of the bytes "--\nzero.stage=2\n" (no base overrides), computed with an independent 6-line Python
  // implementation (offset basis 0xcbf29ce484222325, prime 0x100000001b3): 7597e091e667281c.
  CHECK(point_key(p) == "7597e091e667281c");
  SweepPoint q = p;
  q.index = 0;
  CHECK(point_key(q) == point_key(p));
  q.overrides[0].second = "3";
  CHECK(point_key(q) != point_key(p));
  CHECK(point_key(p, {"training.seq_len=512"}) != point_key(p));
  // Spelling does not matter: axes in another order, --set in another order or repeated (the last value applies).
  SweepPoint two;
  two.overrides = {{"zero.stage", "2"}, {"training.micro_batch", "4"}};
  SweepPoint swapped;
  swapped.overrides = {{"training.micro_batch", "4"}, {"zero.stage", "2"}};
  CHECK(point_key(two) == point_key(swapped));
  CHECK(point_key(p, {"a=1", "b=2"}) == point_key(p, {"b=2", "a=1"}));
  CHECK(point_key(p, {"a=1", "a=2"}) == point_key(p, {"a=2"}));
  CHECK(point_key(p, {"a=2", "a=1"}) != point_key(p, {"a=2"}));
}

TEST_CASE("sweep.json rows: axis_values is the inputs as a typed object, marginal a bool", "[analysis][unit]") {
  // newuser31 F12: a dashboard read `inputs` ([key, "string"] pairs) with map/add; axis_values has them by key, a
  // number or bool typed as one, any other value (a preset name, a size with its unit) the string as given.
  SweepRow r = sample_row(0, "00000000000000ab");
  r.inputs = {{"zero.stage", "3"},           {"cluster.topology", "dgx-h100"}, {"training.lr_scale", "1.5"},
              {"zero.overlap_comm", "true"}, {"cluster.gpu.memory", "24GiB"},  {"training.micro_batch", "02"}};
  r.marginal_reason = "less than 5 % of the card free";
  const auto j = nlohmann::json::parse(row_to_json(r));
  const auto& v = j.at("axis_values");
  CHECK(v.at("zero.stage").is_number_integer());
  CHECK(v.at("zero.stage").get<int>() == 3);
  CHECK(v.at("cluster.topology") == "dgx-h100");
  CHECK(v.at("training.lr_scale").get<double>() == 1.5);
  CHECK(v.at("zero.overlap_comm") == true);
  CHECK(v.at("cluster.gpu.memory") == "24GiB");
  CHECK(v.at("training.micro_batch") == "02"); // not a JSON number (leading zero): kept as written
  // The pairs stay (stable field), in axis order.
  CHECK(j.at("inputs").at(1) == nlohmann::json::array({"cluster.topology", "dgx-h100"}));
  CHECK(j.at("marginal") == true);
  r.marginal_reason.clear();
  CHECK(nlohmann::json::parse(row_to_json(r)).at("marginal") == false);
}

TEST_CASE("SweepRow: JSON round trip", "[analysis][unit]") {
  SweepRow r = sample_row(5, "00000000000000aa");
  r.oom_reason = "rank 0 out of GPU memory";
  const SweepRow b = row_from_json(row_to_json(r));
  CHECK(b.index == 5);
  CHECK(b.key == r.key);
  CHECK(b.inputs == r.inputs);
  CHECK(b.ok);
  CHECK(b.step_time_s == Approx(1.25).epsilon(kTol));
  CHECK(b.peak_reserved_bytes == Approx(4.0 * 1073741824.0).epsilon(kTol));
  CHECK(b.fits);
  CHECK(b.oom_reason == r.oom_reason);
  REQUIRE_THROWS_WITH(row_from_json("{\"index\": 1"), Contains("malformed"));
}

TEST_CASE("parse_journal: skips a line cut short and keeps the last row of a key", "[analysis][unit]") {
  SweepRow a = sample_row(0, "000000000000000a");
  SweepRow b = sample_row(1, "000000000000000b");
  SweepRow a2 = a;
  a2.step_time_s = 2.5;
  const std::string cut = row_to_json(b).substr(0, 20);
  const std::string text = row_to_json(a) + "\n" + row_to_json(b) + "\n" + row_to_json(a2) + "\n" + cut;
  std::vector<std::size_t> bad;
  const auto rows = parse_journal(text, &bad);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key == a.key);
  CHECK(rows[0].step_time_s == Approx(2.5).epsilon(kTol));
  CHECK(rows[1].key == b.key);
  CHECK(bad.empty()); // a cut last line (no newline) is expected after a crash: not reported
}

TEST_CASE("parse_journal: reports the lines that are no row, except a cut last line", "[analysis][unit]") {
  // Line 1 a row, 2 garbage, 3 empty (ignored), 4 JSON without the row fields, 5 a row, 6 a row cut but ended by a
  // newline (not a torn append: reported), 7 cut without a newline (torn: silent).
  const std::string r0 = row_to_json(sample_row(0, "000000000000000a"));
  const std::string r1 = row_to_json(sample_row(1, "000000000000000b"));
  const std::string text = r0 + "\ngarbage\n\n{\"x\":1}\n" + r1 + "\n" + r1.substr(0, 30) + "\n" + r1.substr(0, 9);
  std::vector<std::size_t> bad;
  const auto rows = parse_journal(text, &bad);
  CHECK(rows.size() == 2);
  CHECK(bad == std::vector<std::size_t>{2, 4, 6});
  // The same garbage as the last line, ended by a newline: reported.
  bad.clear();
  (void)parse_journal(r0 + "\ngarbage\n", &bad);
  CHECK(bad == std::vector<std::size_t>{2});
}

TEST_CASE("sweep_csv: one column per axis, GiB = 2^30, RFC 4180 quoting", "[analysis][unit]") {
  SweepRow ok = sample_row(0, "k0");
  ok.gemm_utilization = 0.875;
  SweepRow bad;
  bad.index = 1;
  bad.key = "k1";
  bad.inputs = {{"zero.stage", "3"}};
  bad.error = "boom, \"quoted\"";
  const std::string csv = sweep_csv({"zero.stage"}, {ok, bad});
  CHECK(csv.rfind("index,key,zero.stage,status,error,step_time_s,", 0) == 0);
  // 3 * 2^30 B = 3.000 GiB allocated, 4.000 GiB reserved, 24.000 GiB capacity; GEMM shapes at 0.875 after MFU.
  CHECK_THAT(csv, Contains("0,k0,2,fits,,1.25,8192,0.4000,0.8750,8,3.000,0,4.000,0,0.000,24.000,true,"));
  // Every line has the header's number of fields (the error row's empty result columns included).
  const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  std::stringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  while (std::getline(in, line))
    if (line.find("\"boom") == std::string::npos) // the quoted error holds a comma of its own
      CHECK(fields(line) == fields(header));
  CHECK_THAT(csv, Contains("1,k1,3,error,\"boom, \"\"quoted\"\"\""));
}

TEST_CASE("count_failures: error rows are failed, invalid rows only invalid, fits and oom neither",
          "[analysis][unit]") {
  // Five rows by hand: fits, oom, error, error, invalid -> 2 failed, 1 invalid.
  SweepRow fits = sample_row(0, "k0");
  SweepRow oom = sample_row(1, "k1");
  oom.fits = false;
  SweepPoint p;
  p.overrides = {{"zero.stage", "1"}};
  const SweepRow error = row_from_error(p, "k2", "boom");
  const SweepRow error2 = row_from_error(p, "k3", "boom");
  const SweepRow invalid = row_from_invalid(p, "k4", "offload_param needs stage 3");
  REQUIRE(row_status(error) == "error");
  REQUIRE(row_status(invalid) == "invalid");
  const RowFailures n = count_failures({fits, oom, error, error2, invalid});
  CHECK(n.failed == 2);
  CHECK(n.invalid == 1);
  const RowFailures none = count_failures({fits, oom});
  CHECK(none.failed == 0);
  CHECK(none.invalid == 0);
}

TEST_CASE("host_node_peak_gib_cell: GiB with three decimals, empty for a row that used no host memory",
          "[analysis][unit]") {
  // sweep.csv and plan.csv share the cell: a run without offload has no host figure (empty), not 0.000.
  SweepRow none = sample_row(0, "k0");
  CHECK(host_node_peak_gib_cell(none).empty());
  SweepRow offload = sample_row(1, "k1");
  offload.host_node_peak_bytes = 18.75 * 1073741824.0; // 18.75 x 2^30 B = 18.750 GiB
  CHECK(host_node_peak_gib_cell(offload) == "18.750");
  // The CSV columns: alloc_retries 0, then the cell, then exposed_host_s and comm_in_flight_s (0 in the sample rows).
  const std::string csv = sweep_csv({"zero.stage"}, {none, offload});
  // GA and global batch unknown in the sample rows: empty; then the peak's phase and no steady-state peak.
  CHECK_THAT(csv, Contains(",0,,0,0,,,step,,0,0,,,false,false\n1,k1,"));
  CHECK_THAT(csv, Contains(",0,18.750,0,0,,,step,,0,0,,,false,false\n"));
}

TEST_CASE("sweep_console_table: axis values, status with the marginal reason, times, memory, host only when used",
          "[analysis][unit]") {
  SweepRow fit = sample_row(0, "k0"); // 1.25 s, 8192 tokens/s, MFU 0.4 = 40.0 %, nvidia-smi 0 of 24 GiB
  fit.nvidia_smi_bytes = 12.5 * 1073741824.0;
  SweepRow tight = sample_row(1, "k1");
  tight.inputs = {{"zero.stage", "3"}};
  tight.nvidia_smi_bytes = 23.5 * 1073741824.0; // 0.5 of 24 GiB free: under 5 % (1.2 GiB)
  tight.marginal_reason = "less than 5 % of the card free";
  SweepRow oom = sample_row(2, "k2");
  oom.fits = false;
  oom.stopped_at_oom = true;
  oom.steady_state = false;
  SweepRow bad = row_from_error(SweepPoint{3, {{"zero.stage", "9"}}}, "k3", "boom");
  const std::string t = sweep_console_table({"zero.stage"}, {fit, tight, oom, bad}, 50);
  CHECK_THAT(t, StartsWith("index  zero.stage  status"));
  CHECK_THAT(t, Contains("fits  ") && Contains("1.2500    8192.0   40.0          12.500   24.00\n"));
  CHECK_THAT(t, Contains("fits, marginal (less than 5 % of the card free)") && Contains("23.500"));
  CHECK_THAT(t, Contains("oom") && Contains("n/a"));
  CHECK_THAT(t, Contains("error"));
  CHECK_THAT(t, !Contains("host GiB")); // no row used host memory
  // Host memory: a column, "-" for a row without; a host OOM says so. Two rows shown, one more counted.
  SweepRow host = sample_row(4, "k4");
  host.host_node_peak_bytes = 100.0 * 1073741824.0;
  host.oom_on_host = true;
  host.fits = false;
  const std::string h = sweep_console_table({"zero.stage"}, {fit, host, tight}, 2);
  CHECK_THAT(h, Contains("host GiB per node") && Contains("100.000") && Contains("host oom"));
  CHECK_THAT(h, Contains("... 1 more row in sweep.csv\n"));
  // The marginal reason survives the journal.
  CHECK(row_from_json(row_to_json(tight)).marginal_reason == "less than 5 % of the card free");
  // A host OOM that stopped the point: what the node needed at least, its live host memory at the failure plus the
  // request (hand: 90 + 6.5 = 96.5 GiB), as run's table prints it, not its earlier 100 GiB peak.
  SweepRow stopped = host;
  stopped.stopped_at_oom = true;
  stopped.steady_state = false;
  stopped.oom_host_demand_bytes = (90.0 + 6.5) * 1073741824.0;
  const std::string s = sweep_console_table({"zero.stage"}, {fit, stopped}, 50);
  CHECK_THAT(s, Contains("host oom") && Contains(">= 96.500") && !Contains("100.000"));
  CHECK(row_from_json(row_to_json(stopped)).oom_host_demand_bytes == stopped.oom_host_demand_bytes);
}

TEST_CASE("row_from_json: a row written before marginal_reason was recorded is marginal when its figures say so",
          "[analysis][unit]") {
  // Hand: 23.5 of 24 GiB used leaves 0.5 GiB free, under 5 % of 24 GiB (1.2 GiB); one cudaMalloc retry alone also
  // makes a fit marginal (analysis::marginal_fit). Journals before session 29 have no marginal_reason key.
  const auto without_reason = [](const SweepRow& r) {
    nlohmann::json j = nlohmann::json::parse(row_to_json(r));
    j.erase("marginal_reason");
    j.erase("marginal");
    j.erase("nvidia_smi_needed_bytes"); // written since session 31: older rows gate on nvidia_smi_bytes
    return row_from_json(j.dump());
  };
  SweepRow tight = sample_row(0, "k0");
  tight.nvidia_smi_bytes = 23.5 * 1073741824.0;
  CHECK(without_reason(tight).marginal_reason == "less than 5 % of the card free");
  SweepRow retried = sample_row(1, "k1");
  retried.nvidia_smi_bytes = 12.0 * 1073741824.0; // half the card free
  retried.alloc_retries = 1;
  CHECK(without_reason(retried).marginal_reason == "allocator retries");
  SweepRow roomy = retried;
  roomy.alloc_retries = 0;
  CHECK(without_reason(roomy).marginal_reason.empty());
  SweepRow oom = tight; // does not fit: never marginal
  oom.fits = false;
  CHECK(without_reason(oom).marginal_reason.empty());
  // A row that has the key keeps what it says (here "": written by a build that found it not marginal).
  CHECK(row_from_json(row_to_json(roomy)).marginal_reason.empty());
}

TEST_CASE("row_from_summary: the marginal reason is derived from the run, as summary.json's marginal",
          "[analysis][unit]") {
  // review29 9: the row's reason comes from the summary, not set by hand. Card 24 GiB: 5 % is 1.2 GiB.
  const auto sc = testing::synthetic_scenario();
  RunSummary sum = summarize(sc, testing::synthetic_workload(), testing::synthetic_run());
  sum.oom = false;
  sum.fits = true;
  sum.capacity_bytes = 24.0 * 1073741824.0;
  sum.nvidia_smi_bytes = 20.0 * 1073741824.0; // 4 GiB free: not marginal
  sum.alloc_retries = 0;
  SweepPoint p;
  CHECK(row_from_summary(p, "k", sum).marginal_reason.empty());
  sum.nvidia_smi_bytes = 23.5 * 1073741824.0; // 0.5 GiB free < 1.2 GiB
  CHECK(row_from_summary(p, "k", sum).marginal_reason == "less than 5 % of the card free");
  sum.nvidia_smi_bytes = 20.0 * 1073741824.0;
  sum.alloc_retries = 1; // fitted only after emptying the cache
  CHECK(row_from_summary(p, "k", sum).marginal_reason == "allocator retries");
  sum.fits = false; // an OOM is no marginal fit
  sum.oom = true;
  CHECK(row_from_summary(p, "k", sum).marginal_reason.empty());
}

TEST_CASE("sweep_csv and the journal: every point's GA and global batch, last, empty when unknown",
          "[analysis][unit]") {
  // A point of a sweep that derives GA from training.train_batch_size = 64 on 8 GPUs at micro-batch 2: GA =
  // 64 / (2 x 8) = 4. The summary carries both (summarize: GA as resolved, b x GA x N_d sequences).
  const auto sc = testing::synthetic_scenario(); // b = 2, GA = 4, 1 node x 8
  const RunSummary sum = summarize(sc, testing::synthetic_workload(), testing::synthetic_run());
  CHECK(sum.grad_accum == 4);
  CHECK(sum.train_batch_size == 2 * 4 * 8);
  SweepPoint p;
  p.index = 0;
  p.overrides = {{"training.micro_batch", "2"}};
  SweepRow r = row_from_summary(p, "k", sum);
  CHECK(r.grad_accum == 4);
  CHECK(r.train_batch_size == 64);
  const std::string csv = sweep_csv({"training.micro_batch"}, {r, row_from_error(p, "k2", "boom")});
  const std::string header = csv.substr(0, csv.find('\n'));
  const std::string tail =
      ",grad_accum,train_batch_size,peak_allocated_at,steady_peak_allocated_gib,"
      "exposed_offload_pcie_s,exposed_offload_nvme_s,overlap_comm,marginal_reason,marginal,collective_bound";
  CHECK(header.substr(header.size() - tail.size()) == tail);
  const std::string row = csv.substr(header.size() + 1, csv.find('\n', header.size() + 1) - header.size() - 1);
  CHECK_THAT(row, Contains(",4,64,step,"));
  // Every row has as many cells as the header (the error row's are empty).
  const auto commas = [](const std::string& t) { return std::count(t.begin(), t.end(), ','); };
  std::istringstream lines(csv);
  for (std::string l; std::getline(lines, l);)
    CHECK(commas(l) == commas(header));
  // The journal and sweep.json keep both; a row written before they existed reads as unknown (0: empty cells).
  const SweepRow back = row_from_json(row_to_json(r));
  CHECK(back.grad_accum == 4);
  CHECK(back.train_batch_size == 64);
  auto j = nlohmann::json::parse(row_to_json(r));
  j.erase("grad_accum");
  j.erase("train_batch_size");
  j.erase("peak_at_init");
  j.erase("steady_peak_allocated_bytes");
  const SweepRow legacy = row_from_json(j.dump());
  CHECK(legacy.grad_accum == 0);
  CHECK_THAT(sweep_csv({"training.micro_batch"}, {legacy}), Contains(",,,step,,0.075,0,true,,false,false\n"));
}

TEST_CASE("sweep_csv and the journal: a peak reached at initialisation says so, with the steady-state peak",
          "[analysis][unit]") {
  const auto sc = testing::synthetic_scenario();
  RunSummary sum = summarize(sc, testing::synthetic_workload(), testing::synthetic_run());
  // Stage 2 at N_d = 64 (newuser23 finding 2): 25.103 GiB before step 0, 20.962 GiB over steps >= 1.
  sum.peak_bytes = 25.103 * zerosim::kGiB;
  sum.peak_step = -1;
  sum.steady_peak_bytes = 20.962 * zerosim::kGiB;
  sum.steady_peak_reached = true;
  SweepPoint p;
  p.index = 0;
  p.overrides = {{"zero.stage", "2"}};
  const SweepRow r = row_from_summary(p, "k", sum);
  CHECK(r.peak_at_init);
  CHECK(r.steady_peak_allocated_bytes == 20.962 * zerosim::kGiB);
  const std::string csv = sweep_csv({"zero.stage"}, {r});
  CHECK_THAT(csv, Contains(",25.103,") && Contains(",initialisation,20.962,0.075,0,true,,false,false\n"));
  const SweepRow back = row_from_json(row_to_json(r));
  CHECK(back.peak_at_init);
  CHECK(back.steady_peak_allocated_bytes == 20.962 * zerosim::kGiB);
  sum.peak_step = 1; // the same peak in step 1: "step"
  CHECK_THAT(sweep_csv({"zero.stage"}, {row_from_summary(p, "k", sum)}),
             Contains(",step,20.962,0.075,0,true,,false,false\n"));
}

TEST_CASE("sweep_csv: a point that stopped before a steady-state step has empty step time, tokens/s and MFU",
          "[analysis][unit]") {
  SweepRow warm = sample_row(2, "k2");
  warm.fits = false;
  warm.steady_state = false; // OOM in step 1: step_time_s holds the warm-up step's 1.25 s
  const std::string csv = sweep_csv({"zero.stage"}, {warm});
  CHECK_THAT(csv, Contains("2,k2,2,oom,,,,,1.0000,8,3.000,")); // gemm_utilization 1 (sample_row), 8 ranks, 3 GiB
  CHECK_THAT(csv, !Contains("1.25"));
  // The journal keeps the flag (and rows written before it existed read as steady).
  CHECK_FALSE(row_from_json(row_to_json(warm)).steady_state);
  CHECK(row_from_json(row_to_json(sample_row(3, "k3"))).steady_state);
}

TEST_CASE("sweep_csv: a point stopped at its OOM after steady-state steps has no step time and no breakdown",
          "[analysis][unit]") {
  // on_oom: stop, OOM in step 2 after steps 0 and 1 completed: the run has a steady-state mean (3.49 s), but the
  // configuration does not train (README: step time n/a), so sweep.csv leaves the step time, tokens/s, MFU and the
  // eight breakdown columns, exposed_host_s and comm_in_flight_s empty, in their usual positions.
  RunSummary s;
  s.steps_completed = 2;
  s.steady_state = true;
  s.step_time_s = 3.49;
  s.tokens_per_s = 18759.3;
  s.mfu = 0.5183;
  s.world_size = 8;
  s.peak_bytes = 3.0 * 1073741824.0;
  s.peak_step = 2;
  s.peak_reserved_bytes = 4.0 * 1073741824.0;
  s.capacity_bytes = 24.0 * 1073741824.0;
  s.oom = true;
  s.finished = false;
  s.oom_description = "rank 1 out of GPU memory";
  s.breakdown.forward_s = 0.816;
  s.breakdown.exposed_host_s = 0.131;
  s.breakdown.comm_busy_s = 0.377;
  SweepPoint p;
  p.index = 5;
  p.overrides = {{"zero.stage", "2"}};
  const SweepRow r = row_from_summary(p, "k5", s);
  CHECK(r.stopped_at_oom);
  CHECK_FALSE(has_step_figures(r));
  const std::string csv = sweep_csv({"zero.stage"}, {r});
  // 33 columns: index, key, the axis, status, error, step_time_s, tokens_per_s, mfu, gemm_utilization 1, 8 ranks,
  // 3 GiB allocated on rank 0, 4 GiB reserved on rank 0, nvidia-smi 0, capacity 24 GiB, fits false, the reason, 8
  // empty breakdown cells, 0 retries, no host memory, no host-thread time, no in-flight time, then GA and global
  // batch unknown (this hand-made summary has neither), the peak in a step (2), no steady-state peak recorded.
  CHECK_THAT(csv, Contains("\n5,k5,2,oom,,,,,1.0000,8,3.000,0,4.000,0,0.000,24.000,false,rank 1 out of GPU memory,"
                           ",,,,,,,,0,,,,,,step,,,,,,false,\n"));
  CHECK_THAT(csv, !Contains("3.49") && !Contains("0.816") && !Contains("0.131") && !Contains("0.377"));
  // The journal keeps the flag: a merge writes the same row; sweep.json has null times.
  const std::string text = row_to_json(r);
  CHECK_THAT(text, Contains("\"step_time_s\":null") && Contains("\"stopped_at_oom\":true"));
  CHECK(sweep_csv({"zero.stage"}, {row_from_json(text)}) == csv);
  // The same point simulated on past its OOM (on_oom: continue: finished) keeps its numbers.
  s.finished = true;
  const std::string cont = sweep_csv({"zero.stage"}, {row_from_summary(p, "k5", s)});
  CHECK_THAT(cont, Contains("\n5,k5,2,oom,,3.49,18759.3,0.5183,") && Contains(",0.816,"));
}

TEST_CASE("SweepRow: an OOM row without a steady-state step has null step time, tokens/s and MFU in JSON",
          "[analysis][unit]") {
  SweepRow warm = sample_row(2, "k2");
  warm.fits = false;
  warm.steady_state = false; // OOM in step 1: step_time_s etc. hold the warm-up step's 1.25 s, 8192 tokens/s, 0.4
  warm.oom_reason = "rank 0 out of GPU memory";
  const std::string text = row_to_json(warm);
  // Null, as sweep.csv leaves those cells empty: the two outputs agree.
  CHECK_THAT(text, Contains("\"step_time_s\":null") && Contains("\"tokens_per_s\":null") && Contains("\"mfu\":null"));
  CHECK_THAT(text, Contains("\"status\":\"oom\""));
  const SweepRow back = row_from_json(text);
  CHECK(back.ok);
  CHECK_FALSE(back.invalid);
  CHECK_FALSE(back.fits);
  CHECK_FALSE(back.steady_state);
  CHECK(back.step_time_s == 0.0);
  CHECK(back.tokens_per_s == 0.0);
  CHECK(back.mfu == 0.0);
  CHECK(back.oom_reason == warm.oom_reason);
  CHECK(back.peak_reserved_bytes == Approx(4.0 * 1073741824.0).epsilon(kTol)); // the memory columns stay
  CHECK(sweep_csv({"zero.stage"}, {back}) == sweep_csv({"zero.stage"}, {warm}));
  // A whole sweep.json with such a row reads back too.
  SweepTable one;
  one.scenario = "demo";
  one.axis_keys = {"zero.stage"};
  one.points_total = 1;
  one.rows = {warm};
  const SweepTable t = sweep_from_json(sweep_json(one));
  REQUIRE(t.rows.size() == 1);
  CHECK(t.rows[0].step_time_s == 0.0);
  // An OOM simulated on past (on_oom: continue) after steady-state steps, and a fit even without one
  // (simulation.steps: 1), keep their numbers.
  SweepRow late = warm;
  late.steady_state = true;
  CHECK(row_from_json(row_to_json(late)).step_time_s == Approx(1.25).epsilon(kTol));
  SweepRow warm_fit = sample_row(3, "k3");
  warm_fit.steady_state = false;
  CHECK(row_from_json(row_to_json(warm_fit)).tokens_per_s == Approx(8192.0).epsilon(kTol));
}

TEST_CASE("SweepRow: a combination the loader rejects is status invalid, distinct from error, in CSV and JSON",
          "[analysis][unit]") {
  SweepPoint p;
  p.index = 4;
  p.overrides = {{"zero.stage", "1"}, {"zero.offload_param", "cpu"}};
  const SweepRow inv =
      row_from_invalid(p, "k4", "<cli>: zero.offload_param: parameter offload needs ZeRO stage 3\n(got stage 1)");
  CHECK_FALSE(inv.ok);
  CHECK(inv.invalid);
  CHECK(inv.error == "<cli>: zero.offload_param: parameter offload needs ZeRO stage 3 (got stage 1)"); // one line
  CHECK(row_status(inv) == "invalid");
  const SweepRow err = row_from_error(p, "k5", "simulation process killed by signal 9");
  CHECK_FALSE(err.invalid);
  CHECK(row_status(err) == "error");
  // JSON round trip keeps the distinction (a resumed sweep reads it from the journal).
  const std::string text = row_to_json(inv);
  CHECK_THAT(text, Contains("\"status\":\"invalid\""));
  const SweepRow back = row_from_json(text);
  CHECK(back.index == 4);
  CHECK(back.key == "k4");
  CHECK(back.inputs == p.overrides);
  CHECK_FALSE(back.ok);
  CHECK(back.invalid);
  CHECK(back.error == inv.error);
  CHECK_FALSE(row_from_json(row_to_json(err)).invalid);
  // A row written before "status" existed is an error row (its journal predates invalid points).
  std::string old = text;
  const auto at = old.find("\"status\":\"invalid\",");
  REQUIRE(at != std::string::npos);
  old.erase(at, std::string("\"status\":\"invalid\",").size());
  CHECK_FALSE(row_from_json(old).invalid);
  // CSV: status invalid, the reason in the error column, the result columns empty as for an error.
  const std::string csv = sweep_csv({"zero.stage", "zero.offload_param"}, {inv, err});
  CHECK_THAT(csv, Contains("4,k4,1,cpu,invalid,<cli>: zero.offload_param: parameter offload needs ZeRO stage 3 "
                           "(got stage 1),,,,"));
  CHECK_THAT(csv, Contains("4,k5,1,cpu,error,simulation process killed by signal 9,,,,"));
  const auto fields = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  std::stringstream in(csv);
  std::string header, line;
  std::getline(in, header);
  while (std::getline(in, line))
    CHECK(fields(line) == fields(header));
  // Rows of fits and OOMs read as before.
  SweepRow oom = sample_row(6, "k6");
  oom.fits = false;
  CHECK(row_status(sample_row(5, "k5")) == "fits");
  CHECK(row_status(oom) == "oom");
}

TEST_CASE("merge_sweeps: joins shards in index order and reports missing points", "[analysis][unit]") {
  SweepTable s0{"demo", {"zero.stage"}, 4, Shard{0, 2}, {sample_row(0, "a"), sample_row(2, "c")}, {}, "", "", ""};
  SweepTable s1{"demo", {"zero.stage"}, 4, Shard{1, 2}, {sample_row(1, "b")}, {}, "", "", ""};
  std::vector<std::size_t> missing;
  const SweepTable m = merge_sweeps({s1, s0}, missing);
  REQUIRE(m.rows.size() == 3);
  CHECK(m.rows[0].index == 0);
  CHECK(m.rows[1].index == 1);
  CHECK(m.rows[2].index == 2);
  CHECK(missing == std::vector<std::size_t>{3});
  CHECK(m.shard.count == 1);
  // JSON round trip of the merged table.
  const SweepTable back = sweep_from_json(sweep_json(m));
  CHECK(back.points_total == 4);
  CHECK(back.rows.size() == 3);

  SweepTable other = s1;
  other.points_total = 5;
  REQUIRE_THROWS_WITH(merge_sweeps({s0, other}, missing), Contains("different sweeps"));
  SweepTable clash = s1;
  clash.rows = {sample_row(0, "zz")};
  REQUIRE_THROWS_WITH(merge_sweeps({s0, clash}, missing), Contains("two different keys"));
  // Shards run with different --set overrides are different sweeps; the overrides survive the JSON round trip.
  SweepTable flow = s1;
  flow.sets = {"simulation.fidelity=flow"};
  REQUIRE_THROWS_WITH(merge_sweeps({s0, flow}, missing),
                      Contains("different --set overrides (none vs simulation.fidelity=flow)"));
  CHECK(sweep_from_json(sweep_json(flow)).sets == flow.sets);
  // Same axis names but other values, or another scenario file: another fingerprint, refused.
  SweepSpec spec;
  spec.grid.push_back({"training.micro_batch", {"1", "2"}});
  SweepSpec reordered = spec;
  reordered.grid[0].values = {"2", "1"};
  CHECK(sweep_fingerprint("name: a\n", spec) != sweep_fingerprint("name: a\n", reordered));
  CHECK(sweep_fingerprint("name: a\n", spec) != sweep_fingerprint("name: b\n", spec));
  CHECK(sweep_fingerprint("name: a\n", spec) == sweep_fingerprint("name: a\n", spec));
  SweepTable a = s0, b = s1;
  a.fingerprint = sweep_fingerprint("name: a\n", spec);
  b.fingerprint = sweep_fingerprint("name: a\n", reordered);
  REQUIRE_THROWS_WITH(merge_sweeps({a, b}, missing), Contains("the scenario file or the axis values differ"));
  CHECK(sweep_from_json(sweep_json(a)).fingerprint == a.fingerprint);
}

TEST_CASE("merge_sweeps: refuses shards of two builds, naming both builds and both outputs", "[analysis][unit]") {
  // New-user trial 27 F1: a shard of an older build merged with one of HEAD gave a table whose rows came from two
  // timing models, exit 0. One build's shards merge, and the merged table says which build computed them.
  SweepTable s0{"demo", {"zero.stage"}, 2, Shard{0, 2}, {sample_row(0, "a")}, {}, "", "", "0123456789ab"};
  SweepTable s1{"demo", {"zero.stage"}, 2, Shard{1, 2}, {sample_row(1, "b")}, {}, "", "", "0123456789ab"};
  std::vector<std::size_t> missing;
  const SweepTable m = merge_sweeps({s0, s1}, missing, {"shM-0", "shM-1"});
  CHECK(m.zerosim_build == "0123456789ab");
  CHECK(sweep_from_json(sweep_json(m)).zerosim_build == "0123456789ab");
  SweepTable newer = s1;
  newer.zerosim_build = "fedcba987654-dirty.0a1b2c3d";
  REQUIRE_THROWS_WITH(merge_sweeps({s0, newer}, missing, {"shM-0", "shM-1"}),
                      StartsWith("merge: shM-0 was computed by build 0123456789ab and shM-1 by build "
                                 "fedcba987654-dirty.0a1b2c3d: "));
  // A sweep.json written before build ids has none: a build of its own, never taken for a recorded one.
  SweepTable old = s1;
  old.zerosim_build.clear();
  REQUIRE_THROWS_WITH(merge_sweeps({s0, old}, missing, {"shM-0", "old"}), Contains("and old by an unrecorded build"));
  CHECK(sweep_json(old).find("zerosim_build") == std::string::npos);
  // Without names the parts are numbered.
  REQUIRE_THROWS_WITH(merge_sweeps({s0, newer}, missing), StartsWith("merge: output 1 was computed by"));
}

TEST_CASE("merge_sweeps: the merged table names its shards' release with their build, not the merging binary's",
          "[analysis][unit]") {
  // Review 27: a merge wrote the merging zerosim's version() beside the shards' zerosim_build, a pair no binary ever
  // was. Shards of release 0.0.9 (not this binary's, version() below) merge into a table that says 0.0.9.
  REQUIRE(std::string(version()) != "0.0.9");
  SweepTable s0{"demo", {"zero.stage"}, 2, Shard{0, 2}, {sample_row(0, "a")}, {}, "", "0.0.9", "0123456789ab"};
  SweepTable s1{"demo", {"zero.stage"}, 2, Shard{1, 2}, {sample_row(1, "b")}, {}, "", "0.0.9", "0123456789ab"};
  std::vector<std::size_t> missing;
  const SweepTable m = merge_sweeps({s0, s1}, missing, {"shV-0", "shV-1"});
  CHECK(m.zerosim_version == "0.0.9");
  const auto j = nlohmann::json::parse(sweep_json(m));
  CHECK(j.at("zerosim_version") == "0.0.9");
  CHECK(j.at("zerosim_build") == "0123456789ab");
  CHECK(sweep_from_json(sweep_json(m)).zerosim_version == "0.0.9");
  // A table without a recorded release (built in memory) is written with this binary's.
  SweepTable fresh = s0;
  fresh.zerosim_version.clear();
  CHECK(nlohmann::json::parse(sweep_json(fresh)).at("zerosim_version") == version());
  // Two releases in one table are refused as two builds are: sweep.json files written before build ids ("" builds)
  // differ only in their release.
  s0.zerosim_build.clear();
  s1.zerosim_build.clear();
  SweepTable other = s1;
  other.zerosim_version = "0.1.0";
  REQUIRE_THROWS_WITH(merge_sweeps({s0, other}, missing, {"shV-0", "shV-1"}),
                      StartsWith("merge: shV-0 was written by zerosim 0.0.9 and shV-1 by zerosim 0.1.0: "));
  CHECK(merge_sweeps({s0, s1}, missing).zerosim_version == "0.0.9");
}

TEST_CASE("journal_record: a journal line carries the build that computed the row, and reads it back",
          "[analysis][unit]") {
  SweepRow r = sample_row(3, "k3");
  r.build = "0123456789ab";
  const std::string line = journal_record(r);
  CHECK(line.find('\n') == std::string::npos);
  CHECK(json::parse(line).at("zerosim_build") == "0123456789ab");
  const auto rows = parse_journal(line + "\n");
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].build == "0123456789ab");
  CHECK(rows[0].key == "k3");
  // A record written before build ids: build "".
  CHECK(row_from_json(row_to_json(r)).build.empty());
  // sweep.json's rows do not repeat it: the table's zerosim_build covers them.
  CHECK(row_to_json(r).find("zerosim_build") == std::string::npos);
}

TEST_CASE("without_sweep_block: drops the top-level sweep block and keeps the rest, and point_key hashes a context",
          "[analysis][unit]") {
  const std::string text =
      "name: s\n"
      "sweep:\n"
      "  grid:\n"
      "    zero.stage: [1, 2]\n"
      "\n"
      "  # a comment inside the block\n"
      "training: {seq_len: 256}\n"
      "sweep: {zero.stage: [3]}\n"
      "# a comment after the block counts with it\n"
      "zero: {stage: 1}\n"
      "# a comment after another key stays\n";
  CHECK(without_sweep_block(text) ==
        "name: s\ntraining: {seq_len: 256}\nzero: {stage: 1}\n# a comment after another key stays\n");
  CHECK(without_sweep_block("").empty());
  SweepPoint p;
  p.overrides = {{"zero.stage", "2"}};
  // The same point in another scenario text gets another key; no context keeps the key of older journals.
  CHECK(point_key(p, {}, "training: {seq_len: 256}") != point_key(p, {}, "training: {seq_len: 512}"));
  CHECK(point_key(p, {}, "") == point_key(p));
}

TEST_CASE("canonical_yaml_text: comments, blank lines, indentation and quoting do not change it, a value does",
          "[analysis][unit]") {
  const std::string a = "name: x\nmodel: gpt2\ntraining: {seq_len: 256, micro_batch: 1}\n";
  const std::string b =
      "# notes\nname: \"x\"   # the name\n\nmodel: gpt2\ntraining:\n    seq_len: 256\n    micro_batch: 1\n";
  CHECK(canonical_yaml_text(a) == canonical_yaml_text(b));
  CHECK(canonical_yaml_text(a) !=
        canonical_yaml_text("name: x\nmodel: gpt2\ntraining: {seq_len: 512, micro_batch: 1}\n"));
  // Key order is kept (it is what the file says), and text that is not YAML comes back as it is.
  CHECK(canonical_yaml_text(a) !=
        canonical_yaml_text("model: gpt2\nname: x\ntraining: {seq_len: 256, micro_batch: 1}\n"));
  CHECK(canonical_yaml_text("a: [1, 2\n") == "a: [1, 2\n");
  // The sweep block is still found at the top level of the canonical text.
  CHECK(without_sweep_block(canonical_yaml_text("name: x\nsweep: {grid: {zero.stage: [1, 2]}}\nmodel: gpt2\n")) ==
        canonical_yaml_text("name: x\nmodel: gpt2\n"));
}

TEST_CASE("sweep.json: each note once with its points, rows get theirs back, resolved defaults round-trip",
          "[analysis][unit]") {
  // New-user 27 F4 and F5: the notes of the report (here two shared, one of point 2 only) and the defaults that
  // follow other keys reach the rows a script reads.
  RunSummary s;
  s.world_size = 8;
  s.finished = true;
  s.steps_completed = 3;
  s.diagnostics = {"ranks folded"};
  s.caveats = {"step times are the simulated best case"};
  s.measured_band = "A100";
  s.measured_step_low = 1.02;
  s.measured_step_high = 1.28;
  SweepTable t;
  t.scenario = "s";
  t.axis_keys = {"zero.stage"};
  t.points_total = 3;
  for (int stage = 1; stage <= 3; ++stage) {
    SweepPoint p;
    p.index = static_cast<std::size_t>(stage - 1);
    p.overrides = {{"zero.stage", std::to_string(stage)}};
    s.resolved = {{"zero.overlap_comm", stage == 3 ? "true" : "false"}};
    s.reserved_note = stage == 3 ? "reserved depends on run-ahead" : "";
    t.rows.push_back(row_from_summary(p, "k" + std::to_string(stage), s));
  }
  CHECK(t.rows[2].notes == std::vector<std::string>{"ranks folded", "reserved depends on run-ahead",
                                                    "step times are the simulated best case"});
  const std::string text = sweep_json(t);
  const auto j = nlohmann::json::parse(text);
  REQUIRE(j.at("notes").size() == 3);
  CHECK(j["notes"][0].at("text") == "ranks folded"); // first point 0, then by text
  CHECK(j["notes"][0].at("points") == nlohmann::json::array({0, 1, 2}));
  CHECK(j["notes"][1].at("text") == "step times are the simulated best case");
  CHECK(j["notes"][2].at("text") == "reserved depends on run-ahead");
  CHECK(j["notes"][2].at("points") == nlohmann::json::array({2}));
  CHECK(!j["rows"][0].contains("notes"));
  // Each row's own order as positions in that list: point 2's ranks folded (0), reserved (2), best case (1).
  CHECK(j["rows"][0].at("note_indices") == nlohmann::json::array({0, 1}));
  CHECK(j["rows"][2].at("note_indices") == nlohmann::json::array({0, 2, 1}));
  CHECK(j["rows"][2].at("resolved").at("zero.overlap_comm") == "true");
  CHECK(j["rows"][0].at("measured_band").at("high") == 1.28);
  const SweepTable back = sweep_from_json(text);
  REQUIRE(back.rows.size() == 3);
  // Read back in the documented order (diagnostics, reserved note, caveats), not the list's (review 27).
  CHECK(back.rows[0].notes == std::vector<std::string>{"ranks folded", "step times are the simulated best case"});
  CHECK(back.rows[2].notes == std::vector<std::string>{"ranks folded", "reserved depends on run-ahead",
                                                       "step times are the simulated best case"});
  CHECK(back.rows[1].resolved.at("zero.overlap_comm") == "false");
  CHECK(back.rows[1].measured_band == "A100");
  CHECK(sweep_json(back) == text); // merge and diff read it back unchanged
  // A sweep.json written before note_indices: each row's notes in the list's order.
  auto older = j;
  for (auto& r : older.at("rows"))
    r.erase("note_indices");
  CHECK(sweep_from_json(older.dump()).rows[2].notes ==
        std::vector<std::string>{"ranks folded", "step times are the simulated best case",
                                 "reserved depends on run-ahead"});
  // An index past the list is a one-line error naming the point.
  auto bad = j;
  bad["rows"][1]["note_indices"] = nlohmann::json::array({3});
  REQUIRE_THROWS_WITH(sweep_from_json(bad.dump()),
                      "malformed sweep.json: point 1 has note index 3, the notes list has 3");
  // The journal keeps the texts on the row; the CSV's third-to-last column is the resolved overlap_comm (then the
  // marginal reason, empty, and marginal, false: these rows are not marginal).
  CHECK(row_from_json(row_to_json(t.rows[2])).notes == t.rows[2].notes);
  const std::string csv = sweep_csv({"zero.stage"}, t.rows);
  CHECK_THAT(csv, Contains(",false,,false,\n1,k2,") && Contains(",true,,false,\n"));
}

TEST_CASE("sweep rows: a collective-bound point is marked in the table, last in sweep.csv, and in its JSON row",
          "[analysis][unit]") {
  const auto sc = testing::synthetic_scenario();
  RunSummary sum = summarize(sc, testing::synthetic_workload(), testing::synthetic_run());
  SweepPoint p;
  p.overrides = {{"zero.stage", "2"}};
  SweepRow plain = row_from_summary(p, "k1", sum);
  sum.collective_bound = true;
  SweepRow bound = row_from_summary(p, "k2", sum);
  CHECK_FALSE(plain.collective_bound);
  CHECK(bound.collective_bound);
  // Journal and sweep.json: kept; absent (an older journal) reads as false.
  CHECK(row_from_json(row_to_json(bound)).collective_bound);
  CHECK_FALSE(row_from_json(row_to_json(plain)).collective_bound);
  auto old = nlohmann::json::parse(row_to_json(bound));
  old.erase("collective_bound");
  CHECK_FALSE(row_from_json(old.dump()).collective_bound);
  // sweep.csv: the last column, true / false, empty for a point without a step time.
  const std::string csv = sweep_csv({"zero.stage"}, {plain, bound, row_from_error(p, "k3", "boom")});
  std::vector<std::string> lines;
  std::istringstream in(csv);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  REQUIRE(lines.size() == 4);
  CHECK_THAT(lines[0], EndsWith(",marginal_reason,marginal,collective_bound"));
  CHECK_THAT(lines[1], EndsWith(",false"));
  CHECK_THAT(lines[2], EndsWith(",true"));
  CHECK_THAT(lines[3], EndsWith(","));
  const auto columns = [](const std::string& l) { return std::count(l.begin(), l.end(), ','); };
  CHECK(columns(lines[3]) == columns(lines[0]));
  CHECK(columns(lines[1]) == columns(lines[0]));
  // The table: the bound point's step time marked "+", and the legend under the table.
  const std::string table = sweep_console_table({"zero.stage"}, {plain, bound}, 10);
  CHECK_THAT(table, Contains("2.2500+"));
  CHECK_THAT(table, Contains("\n+ collective-bound (sweep.json collective_bound): " + collective_bound_mark_note()));
  CHECK_THAT(sweep_console_table({"zero.stage"}, {plain}, 10), !Contains("collective-bound"));
}
