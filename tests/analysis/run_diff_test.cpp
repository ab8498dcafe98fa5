// Unit tests of analysis/run_diff.hpp on hand-written result.json and sweep.json texts; expected values computed by
// hand below.
#include <catch2/catch.hpp>

#include <algorithm>

#include "analysis/run_diff.hpp"
#include "analysis/sweep.hpp"

#include <sstream>
#include <string>
#include <vector>

using Catch::Contains;
using zerosim::analysis::diff_results;
using zerosim::analysis::diff_scenarios;
using zerosim::analysis::format_run_diff;
using zerosim::analysis::RunDiff;
using zerosim::analysis::same_settings;

namespace {

constexpr double kTol = 1e-12;

/// A minimal result.json: only the fields run_diff reads. Bytes are whole GiB (2^30 = 1073741824) for easy sums.
std::string result(int stage, double step_s, double tok_s, double mfu, double alloc, double reserved, double smi,
                   bool fits, const std::string& tags) {
  return R"({"variant": "", "scenario": {"name": "s", "zero": {"stage": )" + std::to_string(stage) +
         R"(, "offload_optimizer": "none"}, "training": {"micro_batch": 1}},
  "summary": {"step_time_s": )" +
         std::to_string(step_s) + R"(, "tokens_per_s": )" + std::to_string(tok_s) + R"(, "mfu": )" +
         std::to_string(mfu) + R"(, "peak_allocated_bytes": )" + std::to_string(alloc) +
         R"(, "peak_reserved_bytes": )" + std::to_string(reserved) + R"(, "nvidia_smi_bytes": )" + std::to_string(smi) +
         R"(, "fits": )" + (fits ? "true" : "false") + R"(, "peak_by_tag_bytes": )" + tags + "}}";
}

const double G = 1073741824.0;

} // namespace

TEST_CASE("diff_scenarios: flattens to dotted keys and lists only the changed ones", "[analysis][unit]") {
  const std::string a = R"({"scenario": {"zero": {"stage": 1, "x": "cpu"}, "list": [1, 2], "only_a": true}})";
  const std::string b = R"({"scenario": {"zero": {"stage": 3, "x": "cpu"}, "list": [1, 3]}})";
  const auto c = diff_scenarios(a, b);
  // Sorted keys: list, only_a, zero.stage ("zero.x" equal on both sides).
  REQUIRE(c.size() == 3);
  CHECK(c[0].key == "list");
  CHECK(c[0].a == "[1,2]");
  CHECK(c[0].b == "[1,3]");
  CHECK(c[1].key == "only_a");
  CHECK(c[1].b == "(absent)");
  CHECK(c[2].key == "zero.stage");
  CHECK(c[2].a == "1");
  CHECK(c[2].b == "3");
}

TEST_CASE("diff_scenarios: output switches are not differences between runs", "[analysis][unit]") {
  // `zerosim diff RUN SCENARIO.yaml` simulates the file with trace_json and memory_csv off: not a scenario change.
  const std::string a = R"({"scenario": {"zero": {"stage": 2}, "outputs": {"trace_json": true, "memory_csv": true}}})";
  const std::string b =
      R"({"scenario": {"zero": {"stage": 3}, "outputs": {"trace_json": false, "memory_csv": false}}})";
  const auto c = diff_scenarios(a, b);
  REQUIRE(c.size() == 1);
  CHECK(c[0].key == "zero.stage");
  // Nor is whether the scenario wrote a key (zero.overlap_comm_explicit): the effective value is the difference.
  const std::string x = R"({"scenario": {"zero": {"overlap_comm": false, "overlap_comm_explicit": false}}})";
  const std::string y = R"({"scenario": {"zero": {"overlap_comm": true, "overlap_comm_explicit": true}}})";
  const auto d = diff_scenarios(x, y);
  REQUIRE(d.size() == 1);
  CHECK(d[0].key == "zero.overlap_comm");
}

TEST_CASE("same_settings: a single run equals the comparison variant with its settings, names aside",
          "[analysis][unit]") {
  // A single run (no compare) and the variant of a comparison that set cluster.gpus_per_node=2: compare_key /
  // compare_values only name the comparison, and name, file and source texts name the run, not what it simulated.
  const std::string single =
      R"({"scenario": {"name": "a", "file": "a.yaml", "compare_key": "", "compare_values": [],
          "cluster": {"gpus_per_node": 2, "source": "x"}, "zero": {"stage": 2}}})";
  const std::string variant =
      R"({"scenario": {"name": "b", "file": "b.yaml", "compare_key": "cluster.gpus_per_node",
          "compare_values": ["1", "2"], "cluster": {"gpus_per_node": 2, "source": "y"}, "zero": {"stage": 2}}})";
  const std::string other =
      R"({"scenario": {"name": "a", "compare_key": "cluster.gpus_per_node", "compare_values": ["1", "2"],
          "cluster": {"gpus_per_node": 1}, "zero": {"stage": 2}}})";
  CHECK(same_settings(single, variant));
  CHECK_FALSE(same_settings(single, other));
  // The compare bookkeeping is not a difference diff lists either; the name still is.
  const auto c = diff_scenarios(single, variant);
  for (const auto& k : c)
    CHECK((k.key == "name" || k.key == "file" || k.key == "cluster.source"));
  // A GPU changed by --set in one and by the comparison in the other: the labels differ ("(--set memory=20GiB)",
  // "(modified: memory=20GiB)"), the settings do not. A label over other settings still differs by those.
  const auto gpu = [](const std::string& name, const std::string& memory) {
    return R"({"scenario": {"name": "a", "zero": {"stage": 2}, "gpu": {"name": ")" + name +
           R"(", "preset": "rtx4090", "memory_bytes": )" + memory + R"(}, "model": {"name": "gpt2", "layers": 12}}})";
  };
  CHECK(same_settings(gpu("rtx4090 (--set memory=20GiB)", "21474836480"),
                      gpu("rtx4090 (modified: memory=20GiB)", "21474836480")));
  CHECK_FALSE(same_settings(gpu("rtx4090 (--set memory=20GiB)", "21474836480"),
                            gpu("rtx4090 (modified: memory=22GiB)", "23622320128")));
}

TEST_CASE("diff_scenarios: cluster.gpu keys sort with the cluster's, source texts come last", "[analysis][unit]") {
  // result.json keeps the GPU beside the cluster ("gpu": {...}); the diff names it cluster.gpu.X and sorts it there,
  // between cluster.fabric and cluster.nodes; every *.source change follows the others.
  const std::string a = R"({"scenario": {"cluster": {"fabric": "none", "nodes": 1, "source": "p"},
    "gpu": {"memory": 1, "source": "x"}, "zero": {"stage": 1}}})";
  const std::string b = R"({"scenario": {"cluster": {"fabric": "fat-tree", "nodes": 2, "source": "q"},
    "gpu": {"memory": 2, "source": "y"}, "zero": {"stage": 3}}})";
  const auto c = diff_scenarios(a, b);
  REQUIRE(c.size() == 6);
  CHECK(c[0].key == "cluster.fabric");
  CHECK(c[1].key == "cluster.gpu.memory");
  CHECK(c[2].key == "cluster.nodes");
  CHECK(c[3].key == "zero.stage");
  CHECK(c[4].key == "cluster.gpu.source");
  CHECK(c[5].key == "cluster.source");
}

TEST_CASE("diff_scenarios: the GPU and CPU are named as a scenario writes them (cluster.gpu.X)", "[analysis][unit]") {
  // result.json records "gpu" and "cpu" beside "cluster"; the key a user sets is cluster.gpu.sm_count.
  const auto c = diff_scenarios(R"({"scenario": {"gpu": {"sm_count": 132}, "cpu": {"cores": 64}}})",
                                R"({"scenario": {"gpu": {"sm_count": 54}, "cpu": {"cores": 32}}})");
  REQUIRE(c.size() == 2);
  CHECK(c[0].key == "cluster.cpu.cores");
  CHECK(c[1].key == "cluster.gpu.sm_count");
}

TEST_CASE("diff_scenarios: sizes and rates are named and shown as a scenario writes them", "[analysis][unit]") {
  // result.json: cluster.host_memory_bytes 137438953472 = 128 x 2^30 B; intra_node bandwidth 300e9 B/s = 300 GB/s.
  const auto c = diff_scenarios(
      R"({"scenario": {"cluster": {"host_memory_bytes": 137438953472.0, "intra_node": {"bandwidth_bytes_per_s": 3e11}}}})",
      R"({"scenario": {"cluster": {"host_memory_bytes": 0.0, "intra_node": {"bandwidth_bytes_per_s": 5e10}}}})");
  REQUIRE(c.size() == 2);
  CHECK(c[0].key == "cluster.host_memory");
  CHECK(c[0].a == "128GiB");
  CHECK(c[0].b == "unlimited"); // host_memory 0: no limit (the desktop presets)
  CHECK(c[1].key == "cluster.intra_node.bandwidth");
  CHECK(c[1].a == "300GBps");
  CHECK(c[1].b == "50GBps");
  // A float that is not its decimal exactly (2 x 1.7e-6 = 3.3999999999999996e-06 as a double) prints as written.
  const auto l = diff_scenarios(R"({"scenario": {"cluster": {"intra_node": {"latency_s": 3.3999999999999996e-06}}}})",
                                R"({"scenario": {"cluster": {"intra_node": {"latency_s": 5.7e-06}}}})");
  REQUIRE(l.size() == 1);
  CHECK(l[0].key == "cluster.intra_node.latency");
  CHECK(l[0].a == "3.4e-06s");
  CHECK(l[0].b == "5.7e-06s");
}

TEST_CASE("diff_scenarios: every key printed is one --set takes, or is marked derived", "[analysis][unit]") {
  // newuser19c: `diff` printed cluster.intra_node.latency_s, which --set refuses (the key is
  // cluster.intra_node.latency). peak_lp is recorded in FLOP/s: 312e12 = 312 TFLOPS. gpu.memory_gib restates
  // gpu.memory_bytes (not a row of its own); world_size follows from keys a scenario sets; the GPU's name is a key
  // (cluster.gpu.name names an inline card, sim/scenario/key_table.cpp).
  const auto c = diff_scenarios(
      R"({"scenario": {"cluster": {"world_size": 8, "nic": {"latency_s": 5e-06}}, "gpu": {"name": "a100-80gb",
          "peak_lp_flops_per_s": 3.12e14, "memory_bytes": 85899345920.0, "memory_gib": 80.0}}})",
      R"({"scenario": {"cluster": {"world_size": 16, "nic": {"latency_s": 1e-05}}, "gpu": {"name": "h100-sxm",
          "peak_lp_flops_per_s": 9.89e14, "memory_bytes": 85520809984.0, "memory_gib": 79.6475}}})");
  REQUIRE(c.size() == 5);
  CHECK(c[0].key == "cluster.gpu.memory");
  CHECK_FALSE(c[0].derived);
  CHECK(c[1].key == "cluster.gpu.name");
  CHECK_FALSE(c[1].derived);
  CHECK(c[2].key == "cluster.gpu.peak_lp");
  CHECK(c[2].a == "312TFLOPS");
  CHECK(c[2].b == "989TFLOPS");
  CHECK_FALSE(c[2].derived);
  CHECK(c[3].key == "cluster.nic.latency");
  CHECK(c[3].b == "1e-05s");
  CHECK_FALSE(c[3].derived);
  CHECK(c[4].key == "cluster.world_size");
  CHECK(c[4].derived);
  // A suffix is removed only when the key without it is a scenario key: an unknown x_s keeps its name.
  const auto u =
      diff_scenarios(R"({"scenario": {"zero": {"mystery_s": 1}}})", R"({"scenario": {"zero": {"mystery_s": 2}}})");
  REQUIRE(u.size() == 1);
  CHECK(u[0].key == "zero.mystery_s");
  CHECK(u[0].derived);
}

TEST_CASE("diff_results: figures, deltas and the five largest tag moves", "[analysis][unit]") {
  // Tags (GiB): A = {a:1, b:2, c:3, d:4, e:5, f:6, same:7}, B = {a:1.5, b:0, c:3, d:10, e:5.25, f:3, same:7, g:2}.
  // |moves| : a 0.5, b 2, c 0, d 6, e 0.25, f 3, g 2 -> top 5 = d(+6), f(-3), b(-2) and g(+2) (tie: name order),
  // a(+0.5).
  const std::string ta = "{\"a\": " + std::to_string(1 * G) + ", \"b\": " + std::to_string(2 * G) +
                         ", \"c\": " + std::to_string(3 * G) + ", \"d\": " + std::to_string(4 * G) +
                         ", \"e\": " + std::to_string(5 * G) + ", \"f\": " + std::to_string(6 * G) +
                         ", \"same\": " + std::to_string(7 * G) + "}";
  const std::string tb = "{\"a\": " + std::to_string(1.5 * G) + ", \"b\": 0, \"c\": " + std::to_string(3 * G) +
                         ", \"d\": " + std::to_string(10 * G) + ", \"e\": " + std::to_string(5.25 * G) +
                         ", \"f\": " + std::to_string(3 * G) + ", \"same\": " + std::to_string(7 * G) +
                         ", \"g\": " + std::to_string(2 * G) + "}";
  const std::string a = result(1, 2.0, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, ta);
  const std::string b = result(3, 2.5, 800.0, 0.4, 4 * G, 5 * G, 6 * G, false, tb);
  const auto d = diff_results(a, b);
  REQUIRE(d.changes.size() == 1);
  CHECK(d.changes[0].key == "zero.stage");
  CHECK(d.step_time_a_s == Approx(2.0).epsilon(kTol));
  CHECK(d.step_time_b_s == Approx(2.5).epsilon(kTol));
  CHECK(d.peak_allocated_b_bytes == Approx(4 * G).epsilon(kTol));
  CHECK(d.fits_a);
  CHECK_FALSE(d.fits_b);
  REQUIRE(d.top_tags.size() == 5);
  CHECK(d.top_tags[0].tag == "d");
  CHECK(d.top_tags[1].tag == "f");
  CHECK(d.top_tags[2].tag == "b");
  CHECK(d.top_tags[3].tag == "g");
  CHECK(d.top_tags[4].tag == "a");
  CHECK(d.top_tags[3].a_bytes == 0.0);

  RunDiff rd;
  rd.variants.push_back(d);
  rd.only_b.push_back("zero.stage=2");
  const std::string s = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(s, Contains("zero.stage: 1 -> 3"));
  // Step time 2.0 -> 2.5 s: delta +0.5 s = +25.0 %. Allocated 10 -> 4 GiB: -6 GiB = -60.0 %. MFU 50 -> 40 %:
  // -10 percentage points, -20 % of A.
  CHECK_THAT(s, Contains("2.0000       2.5000      +0.5000   +25.0%  s"));
  CHECK_THAT(s, Contains("10.000        4.000       -6.000   -60.0%  GiB"));
  CHECK_THAT(s, Contains("50.00        40.00       -10.00   -20.0%  % (delta in percentage points)"));
  CHECK_THAT(s, Contains("+6.000 GiB"));
  CHECK_THAT(s, Contains("only in B: variant zero.stage=2"));
  CHECK_THAT(s, !Contains("cudaMalloc retries")); // neither run retried (nor records it)
  // With retries on one side, a row says so.
  std::string b2 = b;
  b2.insert(b2.find("\"step_time_s\""), "\"alloc_retries\": 5, ");
  RunDiff rr;
  rr.variants.push_back(diff_results(a, b2));
  CHECK_THAT(format_run_diff(rr, "runA", "runB"), Contains("cudaMalloc retries              0            5"));
}

TEST_CASE("format_run_diff: a marginal fit shows in the fits row, with its reason", "[analysis][unit]") {
  // newuser31 F14: A fits with nvidia-smi 79 of 80 GiB (1 GiB free, under 5 % = 4 GiB: marginal), B with 52 GiB;
  // the fits row read yes / yes.
  std::string a = result(3, 8.0, 1000.0, 0.4, 42 * G, 77 * G, 79 * G, true, "{}");
  a.insert(a.find("\"step_time_s\""), "\"marginal\": true, \"marginal_reason\": \"less than 5 % of the card free\", ");
  std::string b = result(3, 8.0, 1000.0, 0.4, 42 * G, 50 * G, 52 * G, true, "{}");
  b.insert(b.find("\"step_time_s\""), "\"marginal\": false, \"marginal_reason\": \"\", ");
  RunDiff rd;
  rd.variants.push_back(diff_results(a, b));
  CHECK(rd.variants[0].marginal_a);
  CHECK_FALSE(rd.variants[0].marginal_b);
  const std::string s = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(s, Contains("  fits                 yes, marginal          yes\n"));
  CHECK_THAT(s, Contains("A: less than 5 % of the card free\n"));
  CHECK_THAT(s, !Contains("B: less")); // B is not marginal: no reason line
  // A file written before summary.marginal existed reads as not marginal: yes / yes, as before.
  RunDiff old;
  old.variants.push_back(diff_results(result(3, 8.0, 1000.0, 0.4, 42 * G, 77 * G, 79 * G, true, "{}"), b));
  CHECK_THAT(format_run_diff(old, "runA", "runB"), Contains("  fits                          yes          yes\n"));
}

TEST_CASE("format_run_diff: a change that rounds to zero is +0, and a change of 1000 % or more drops the decimal",
          "[analysis][unit]") {
  // Step time 2.0 -> 1.99999 s: -1e-5 s, below the 4th decimal: "+0.0000", "+0.0%" (not "-0.0000 -0.0%").
  // Step time 0.1 -> 3.6069 s: +3506.9 %, 9 characters in the 8-wide column: "+3507%".
  const auto line = [](double a_s, double b_s) {
    RunDiff rd;
    rd.variants.push_back(diff_results(result(1, a_s, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, "{}"),
                                       result(1, b_s, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, "{}")));
    return format_run_diff(rd, "runA", "runB");
  };
  CHECK_THAT(line(2.0, 1.99999), Contains("2.0000       2.0000      +0.0000    +0.0%  s"));
  CHECK_THAT(line(0.1, 3.6069), Contains("0.1000       3.6069      +3.5069   +3507%  s"));
  // 2e-5 -> 1.8e-15 s (a phase that is zero up to rounding noise): both print 0.0000, so no relative change either
  // ("+0.0%", not the "-100.0%" of the unrounded values).
  CHECK_THAT(line(2e-5, 1.8e-15), Contains("0.0000       0.0000      +0.0000    +0.0%  s"));
}

TEST_CASE("format_run_diff: changed reference texts are named on one line, not quoted", "[analysis][unit]") {
  // Two presets' source fields are paragraphs of citations; the diff names the keys and quotes only the others.
  RunDiff rd;
  rd.variants.push_back(diff_results(result(1, 1.0, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, "{}"),
                                     result(1, 1.0, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, "{}")));
  rd.variants[0].changes = {{"cluster.nodes", "1", "2"},
                            {"cluster.gpu.source", "datasheet A", "datasheet B"},
                            {"cluster.source", "paper P", "paper Q"}};
  const std::string out = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(out, Contains("  cluster.nodes: 1 -> 2\n"));
  CHECK_THAT(out, Contains("  references differ (their texts are in each run's result.json): cluster.gpu.source, "
                           "cluster.source\n"));
  CHECK_THAT(out, !Contains("datasheet A") && !Contains("paper Q"));
}

TEST_CASE("diff_results: a step time from the warm-up step only, or from no step, gets no delta", "[analysis][unit]") {
  // A ran out of memory before any step completed (its step_time_s 0 means nothing); B completed only step 0.
  auto with_steps = [](std::string r, int completed, bool steady) {
    const auto at = r.find("\"step_time_s\"");
    return r.insert(at, "\"steps_completed\": " + std::to_string(completed) +
                            ", \"steady_state\": " + (steady ? "true" : "false") + ", ");
  };
  const std::string a = with_steps(result(1, 0.0, 0.0, 0.0, G, G, G, false, "{}"), 0, false);
  const std::string b = with_steps(result(3, 2.27, 900.0, 0.3, G, G, G, false, "{}"), 1, false);
  const auto d = diff_results(a, b);
  CHECK(d.step_kind_a == zerosim::analysis::StepTimeKind::NONE);
  CHECK(d.step_kind_b == zerosim::analysis::StepTimeKind::WARMUP_ONLY);
  RunDiff rd;
  rd.variants.push_back(d);
  const std::string s = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(s, Contains("step time                     n/a      2.2700*"));
  CHECK_THAT(s, Contains("tokens/s                      n/a       900.0*"));
  CHECK_THAT(s, Contains("MFU                           n/a       30.00*"));
  CHECK_THAT(s, Contains("warm-up step 0 only"));
  CHECK_THAT(s, !Contains("%  s\n")); // no delta % on the step time row
  CHECK_THAT(s, !Contains("-100.0%"));
  // B stopped at its OOM after steady-state steps (on_oom: stop: oom true, finished false): no step time either.
  auto stopped = [&](bool finished) {
    std::string r = with_steps(result(3, 2.27, 900.0, 0.3, G, G, G, false, "{}"), 2, true);
    return r.insert(r.find("\"step_time_s\""),
                    std::string("\"oom\": true, \"finished\": ") + (finished ? "true" : "false") + ", ");
  };
  CHECK(diff_results(a, stopped(false)).step_kind_b == zerosim::analysis::StepTimeKind::NONE);
  // Simulated on past the OOM (on_oom: continue, finished): its steady-state time stays.
  CHECK(diff_results(a, stopped(true)).step_kind_b == zerosim::analysis::StepTimeKind::STEADY);
}

TEST_CASE("diff_results: host memory rows appear when either run used host memory", "[analysis][unit]") {
  // A without offload writes zeros; B offloads: the worst rank peaks at 18 GiB of host memory, 6 GiB of it pinned,
  // and its node (4 ranks) at 72 GiB. Deltas: +18, +72 and +6 GiB; delta % from 0 is n/a.
  const auto with_host = [](std::string r, double rank, double node, double pinned) {
    return r.insert(r.find("\"step_time_s\""), "\"host_peak_memory_bytes\": " + std::to_string(rank) +
                                                   ", \"host_node_peak_memory_bytes\": " + std::to_string(node) +
                                                   ", \"host_pinned_at_peak_bytes\": " + std::to_string(pinned) + ", ");
  };
  const std::string plain = result(2, 1.0, 1000.0, 0.5, 10 * G, 12 * G, 13 * G, true, "{}");
  const std::string a = with_host(plain, 0, 0, 0);
  const std::string b = with_host(result(2, 1.5, 700.0, 0.3, 4 * G, 5 * G, 6 * G, true, "{}"), 18 * G, 72 * G, 6 * G);
  RunDiff rd;
  rd.variants.push_back(diff_results(a, b));
  CHECK(rd.variants[0].host_node_peak_b_bytes.value_or(0) == Approx(72 * G).epsilon(kTol));
  const std::string s = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(s, Contains("  host peak per rank          0.000       18.000      +18.000      n/a  GiB\n"));
  CHECK_THAT(s, Contains("  host peak per node          0.000       72.000      +72.000      n/a  GiB\n"));
  CHECK_THAT(s, Contains("  host pinned at peak         0.000        6.000       +6.000      n/a  GiB\n"));
  // The rows sit with the GPU memory rows, before fits.
  CHECK(s.find("nvidia-smi") < s.find("host peak per rank"));
  CHECK(s.find("host pinned at peak") < s.find("fits"));
  // Both offloading: a real delta %, 72 -> 54 GiB per node = -18 GiB = -25.0 %.
  RunDiff both;
  both.variants.push_back(diff_results(b, with_host(plain, 13.5 * G, 54 * G, 4.5 * G)));
  CHECK_THAT(format_run_diff(both, "runA", "runB"),
             Contains("  host peak per node         72.000       54.000      -18.000   -25.0%  GiB\n"));
  // A file without the host fields (written before they existed): n/a on its side, no delta.
  RunDiff old;
  old.variants.push_back(diff_results(plain, b));
  const std::string o = format_run_diff(old, "runA", "runB");
  CHECK_THAT(o, Contains("  host peak per rank            n/a       18.000            -        -  GiB\n"));
  CHECK_THAT(o, Contains("  host pinned at peak           n/a        6.000            -        -  GiB\n"));
  // Neither run used host memory: no host rows.
  RunDiff none;
  none.variants.push_back(diff_results(a, with_host(plain, 0, 0, 0)));
  CHECK_THAT(format_run_diff(none, "runA", "runB"), !Contains("host"));
  RunDiff neither_recorded;
  neither_recorded.variants.push_back(diff_results(plain, plain));
  CHECK_THAT(format_run_diff(neither_recorded, "runA", "runB"), !Contains("host"));
}

TEST_CASE("diff_results: the step-time breakdown gets a row per phase, in the console's order", "[analysis][unit]") {
  // A: stage 2 on the GPU; B: the optimizer offloaded to the CPU. B's GPU optimizer step goes (0.25 -> 0 s:
  // -0.25 s = -100.0 %), the compute stream now waits 0.3 s on offload copies and 0.75 s on the CPU optimizer (from
  // 0: +0.3 and +0.75 s, delta % n/a). Backward 1.0 -> 1.1 s: +0.1 s = +10.0 %.
  const auto with_breakdown = [](std::string r, const std::string& b) {
    return r.insert(r.find("\"step_time_s\""), "\"breakdown\": {" + b + "}, ");
  };
  const std::string a = with_breakdown(
      result(2, 1.8, 1000.0, 0.5, G, G, G, true, "{}"),
      R"("forward_s": 0.5, "backward_s": 1.0, "optimizer_s": 0.25, "other_compute_s": 0.05, "compute_busy_s": 1.8,
         "comm_busy_s": 0, "exposed_comm_s": 0, "exposed_offload_s": 0, "exposed_cpu_s": 0, "exposed_host_s": 0.01,
         "idle_other_s": 0.002)");
  const std::string b = with_breakdown(
      result(2, 2.7, 700.0, 0.3, G, G, G, true, "{}"),
      R"("forward_s": 0.5, "backward_s": 1.1, "optimizer_s": 0, "other_compute_s": 0.05, "compute_busy_s": 1.65,
         "comm_busy_s": 0, "exposed_comm_s": 0, "exposed_offload_s": 0.3, "exposed_cpu_s": 0.75,
         "exposed_host_s": 0.01, "idle_other_s": 0.002)");
  const auto d = diff_results(a, b);
  REQUIRE(d.breakdown.size() == 10);
  CHECK(d.breakdown[5].name == "exposed offload");
  CHECK(d.breakdown[5].b_s.value_or(-1) == Approx(0.3).epsilon(kTol));
  RunDiff rd;
  rd.variants.push_back(d);
  const std::string s = format_run_diff(rd, "runA", "runB");
  CHECK_THAT(s, Contains("  step breakdown (s per step, rank 0; exposed = the compute stream waited on it):\n"));
  CHECK_THAT(s, Contains("    backward                 1.0000       1.1000      +0.1000   +10.0%  s\n"));
  CHECK_THAT(s, Contains("    optimizer                0.2500       0.0000      -0.2500  -100.0%  s\n"));
  CHECK_THAT(s, Contains("    exposed comm             0.0000       0.0000      +0.0000    +0.0%  s\n"));
  CHECK_THAT(s, Contains("    exposed offload          0.0000       0.3000      +0.3000      n/a  s\n"));
  CHECK_THAT(s, Contains("    exposed CPU optim.       0.0000       0.7500      +0.7500      n/a  s\n"));
  // Order: after MFU, GPU compute then the waits then collectives in flight, before the memory rows.
  const std::vector<const char*> order = {"MFU",
                                          "    forward",
                                          "    backward",
                                          "    optimizer",
                                          "    other compute",
                                          "    exposed comm",
                                          "    exposed offload",
                                          "    exposed CPU optim.",
                                          "    exposed host",
                                          "    idle other",
                                          "    comm in flight",
                                          "peak allocated"};
  for (std::size_t i = 1; i < order.size(); ++i) {
    INFO(order[i - 1] << " before " << order[i]);
    CHECK(s.find(order[i - 1]) < s.find(order[i]));
  }
  // A file without a breakdown (written before it was recorded): n/a on its side, no delta; neither: no rows.
  RunDiff old;
  old.variants.push_back(diff_results(result(2, 1.8, 1000.0, 0.5, G, G, G, true, "{}"), b));
  CHECK_THAT(format_run_diff(old, "runA", "runB"),
             Contains("    exposed offload             n/a       0.3000            -        -  s\n"));
  const std::string plain = result(2, 1.8, 1000.0, 0.5, G, G, G, true, "{}");
  CHECK(diff_results(plain, plain).breakdown.empty());
  RunDiff none;
  none.variants.push_back(diff_results(plain, plain));
  CHECK_THAT(format_run_diff(none, "runA", "runB"), !Contains("step breakdown"));
}

TEST_CASE("diff_results: malformed JSON and missing fields name the input", "[analysis][unit]") {
  const std::string ok = result(1, 1.0, 1.0, 0.1, G, G, G, true, "{}");
  REQUIRE_THROWS_WITH(diff_results("{not json", ok, "runA", "runB"), Contains("runA: malformed JSON"));
  REQUIRE_THROWS_WITH(diff_results(ok, R"({"scenario": {}})", "runA", "runB"),
                      Contains("runB: malformed JSON: no \"summary\""));
  REQUIRE_THROWS_WITH(diff_results(ok, R"({"summary": {}})", "runA", "runB"), Contains("no \"scenario\""));
}

TEST_CASE("canonical_label: a compared section pairs with the key compare that sets the same keys",
          "[analysis][unit]") {
  using zerosim::analysis::canonical_label;
  // compare: {zero: [{stage: 0}]} labels its variant "zero={stage: 0}"; compare: {zero.stage: [0]} "zero.stage=0".
  CHECK(canonical_label("zero={stage: 0}") == "zero.stage=0");
  CHECK(canonical_label("zero={stage: 0}") == canonical_label("zero.stage=0"));
  // Keys sorted, nested sections flattened, one space between parts (sweep labels are "k=v k=v").
  CHECK(canonical_label("zero={stage: 2, overlap_comm: true}") == "zero.overlap_comm=true zero.stage=2");
  CHECK(canonical_label("training.micro_batch=4 zero.stage=3") ==
        canonical_label("zero.stage=3 training.micro_batch=4"));
  CHECK(canonical_label("cluster={gpu: {preset: h100}, nodes: 2}") == "cluster.gpu.preset=h100 cluster.nodes=2");
  // Different values stay different; a label that is not key=value, or not valid YAML, is returned unchanged.
  CHECK(canonical_label("zero={stage: 2}") != canonical_label("zero.stage=3"));
  CHECK(canonical_label("") == "");
  CHECK(canonical_label("baseline") == "baseline");
  CHECK(canonical_label("zero={stage: [1") == "zero={stage: [1");
}

namespace {

/// One hand-made sweep.json row with the fields sweep_from_json reads. `status`: "fits"; "oom", stopped at its OOM
/// (step figures null, memory what was in use); "oom-continue", run on past its OOM (on_oom: continue, figures kept);
/// "error" (not simulated to the end: no figures at all). `inputs` is the JSON array of [key, value] pairs.
std::string sweep_row(int index, const std::string& inputs, const std::string& status, double step_s, double tok_s,
                      double alloc_gib, double smi_gib, bool steady = true) {
  const bool ok = status != "error";
  const bool stopped = status == "oom";
  const auto timing = [&](double v) { return stopped || !ok ? std::string("null") : std::to_string(v); };
  return R"({"index": )" + std::to_string(index) + R"(, "key": "k)" + std::to_string(index) + R"(", "inputs": )" +
         inputs + R"(, "status": ")" + (status == "oom-continue" ? "oom" : status) + R"(", "ok": )" +
         (ok ? "true" : "false") + R"(, "error": ")" + (ok ? "" : "boom") + R"(", "step_time_s": )" + timing(step_s) +
         R"(, "tokens_per_s": )" + timing(tok_s) + R"(, "mfu": )" + timing(0.3) + R"(, "steady_state": )" +
         (steady ? "true" : "false") + R"(, "stopped_at_oom": )" + (stopped ? "true" : "false") +
         R"(, "world_size": 1, "peak_allocated_bytes": )" + std::to_string(alloc_gib * G) +
         R"(, "peak_allocated_rank": 0, "peak_reserved_bytes": )" + std::to_string(alloc_gib * G) +
         R"(, "peak_reserved_rank": 0, "nvidia_smi_bytes": )" + std::to_string(smi_gib * G) +
         R"(, "capacity_bytes": )" + std::to_string(24 * G) + R"(, "fits": )" + (status == "fits" ? "true" : "false") +
         R"(, "oom_reason": ""})";
}

/// A hand-made sweep table (sweep_from_json of the text `zerosim sweep` writes).
zerosim::analysis::SweepTable sweep_table(const std::string& scenario, const std::string& axes, const std::string& sets,
                                          const std::string& fingerprint, const std::string& version,
                                          const std::vector<std::string>& rows) {
  std::string r;
  for (const auto& row : rows)
    r += (r.empty() ? "" : ", ") + row;
  return zerosim::analysis::sweep_from_json(R"({"zerosim_version": ")" + version + R"(", "scenario": ")" + scenario +
                                            R"(", "axes": )" + axes + R"(, "points_total": )" +
                                            std::to_string(rows.size()) + R"(, "shard": "0/1", "set": )" + sets +
                                            R"(, "fingerprint": ")" + fingerprint + R"(", "rows": [)" + r + "]}");
}

/// The line of `text` that starts with `prefix` ("" when none).
std::string line_starting(const std::string& text, const std::string& prefix) {
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (l.rfind(prefix, 0) == 0)
      return l;
  return "";
}

} // namespace

TEST_CASE("diff_sweeps: points pair by their overrides in any order, the rest are listed per side",
          "[analysis][unit]") {
  using zerosim::analysis::diff_sweeps;
  using zerosim::analysis::format_sweep_diff;
  // A sweeps zero.stage then training.micro_batch; B names the same keys the other way round, and in another row
  // order. Paired: (stage 1, mb 1), (stage 1, mb 2), (stage 2, mb 1); only in A: (stage 3, mb 1); only in B:
  // (mb 4, stage 1).
  const auto a =
      sweep_table("gpt2-sweep", R"(["zero.stage", "training.micro_batch"])",
                  R"(["simulation.steps=2", "training.seq_len=256"])", "aaaaaaaaaaaaaaaa", "1.0.0",
                  {sweep_row(0, R"([["zero.stage", "1"], ["training.micro_batch", "1"]])", "fits", 0.5, 1000, 2, 3),
                   sweep_row(1, R"([["zero.stage", "1"], ["training.micro_batch", "2"]])", "oom", 0, 0, 23, 24),
                   sweep_row(2, R"([["zero.stage", "2"], ["training.micro_batch", "1"]])", "error", 0, 0, 0, 0),
                   sweep_row(3, R"([["zero.stage", "3"], ["training.micro_batch", "1"]])", "fits", 0.7, 900, 4, 5)});
  const auto b =
      sweep_table("gpt2-sweep", R"(["training.micro_batch", "zero.stage"])",
                  R"(["training.seq_len=512", "zero.overlap_comm=true"])", "bbbbbbbbbbbbbbbb", "1.0.0",
                  {sweep_row(0, R"([["training.micro_batch", "1"], ["zero.stage", "2"]])", "fits", 0.4, 1200, 3, 4),
                   sweep_row(1, R"([["training.micro_batch", "1"], ["zero.stage", "1"]])", "fits", 0.6, 800, 2.5, 3.5),
                   sweep_row(2, R"([["training.micro_batch", "2"], ["zero.stage", "1"]])", "fits", 1.0, 1000, 20, 22),
                   sweep_row(3, R"([["training.micro_batch", "4"], ["zero.stage", "1"]])", "fits", 2.0, 1000, 22, 23)});
  const auto d = diff_sweeps(a, b);
  REQUIRE(d.points.size() == 3);
  // In A's row order, labelled as A writes them.
  CHECK(d.points[0].label == "zero.stage=1 training.micro_batch=1");
  CHECK(d.points[0].b.step_time_s == Approx(0.6).epsilon(kTol));
  CHECK(d.points[1].label == "zero.stage=1 training.micro_batch=2");
  CHECK(d.points[2].label == "zero.stage=2 training.micro_batch=1");
  CHECK(d.points[2].b.step_time_s == Approx(0.4).epsilon(kTol));
  CHECK(d.only_a == std::vector<std::string>{"zero.stage=3 training.micro_batch=1"});
  CHECK(d.only_b == std::vector<std::string>{"training.micro_batch=4 zero.stage=1"});
  // --set overrides by key: one only in A, one changed, one only in B.
  REQUIRE(d.set_changes.size() == 3);
  CHECK((d.set_changes[0].key == "simulation.steps" && d.set_changes[0].a == "2" && d.set_changes[0].b == "(absent)"));
  CHECK((d.set_changes[1].key == "training.seq_len" && d.set_changes[1].a == "256" && d.set_changes[1].b == "512"));
  CHECK((d.set_changes[2].key == "zero.overlap_comm" && d.set_changes[2].a == "(absent)" &&
         d.set_changes[2].b == "true"));

  const std::string out = format_sweep_diff(d, "out/a", "out/b");
  INFO(out);
  CHECK_THAT(out, Contains("A: out/a (sweep of 'gpt2-sweep', 4 points)\nB: out/b (sweep of 'gpt2-sweep', 4 points)\n"
                           "--set overrides that differ:\n  simulation.steps: 2 -> (absent)\n"
                           "  training.seq_len: 256 -> 512\n  zero.overlap_comm: (absent) -> true\n"
                           "scenario name: the same (gpt2-sweep)\n"
                           "scenario file or axis values: differ (sweep fingerprint aaaaaaaaaaaaaaaa -> "
                           "bbbbbbbbbbbbbbbb)\n"));
  CHECK_THAT(out, !Contains("zerosim version"));
  CHECK_THAT(out, Contains("GiB = 2^30 B"));
  // Step time 0.5 s -> 0.6 s: (0.6 - 0.5) / 0.5 = +20.0 %; tokens/s 1000 -> 800: (800 - 1000) / 1000 = -20.0 %;
  // peak allocated 2 -> 2.5 GiB, nvidia-smi 3 -> 3.5 GiB.
  const std::string header = line_starting(out, "  point ");
  const std::string fit = line_starting(out, "  zero.stage=1 training.micro_batch=1 ");
  CHECK(fit ==
        "  zero.stage=1 training.micro_batch=1  fits/fits   0.5000 -> 0.6000   +20.0%      -20.0%   2.000 ->  "
        "2.500       3.000 ->  3.500");
  // A stopped at its OOM: no step time (n/a, no delta), but the memory in use when it stopped.
  const std::string oom = line_starting(out, "  zero.stage=1 training.micro_batch=2 ");
  CHECK(oom ==
        "  zero.stage=1 training.micro_batch=2  oom/fits       n/a -> 1.0000      n/a         n/a  23.000 -> "
        "20.000      24.000 -> 22.000");
  // A failed: neither step figures nor memory, and never a 0 or a delta against one.
  const std::string error = line_starting(out, "  zero.stage=2 training.micro_batch=1 ");
  CHECK_THAT(error, Contains("error/fits") && Contains("n/a -> 0.4000") && Contains("n/a ->  3.000") &&
                        Contains("n/a ->  4.000") && !Contains("0.0000") && !Contains("0.000 ->") && !Contains("%"));
  // Columns aligned: status and step time start under their headers, the A -> B columns' arrows line up (their A
  // and B parts are right-aligned), the delta % column ends under its header.
  for (const char* column : {"status", "step time (s)"}) {
    INFO(column);
    const std::size_t at = header.find(column);
    REQUIRE(at != std::string::npos);
    CHECK(fit[at - 1] == ' ');
    CHECK(fit[at] != ' ');
  }
  const auto arrows = [](const std::string& l) {
    std::vector<std::size_t> at;
    for (std::size_t i = l.find(" -> "); i != std::string::npos; i = l.find(" -> ", i + 1))
      at.push_back(i);
    return at;
  };
  CHECK(arrows(fit).size() == 3);
  CHECK(arrows(fit) == arrows(oom));
  CHECK(arrows(fit) == arrows(error));
  CHECK(arrows(fit)[1] > header.find("peak allocated (GiB)"));
  CHECK(arrows(fit)[2] > header.find("nvidia-smi (GiB)"));
  CHECK(header.find("delta %") + 7 == fit.find("+20.0%") + 6); // right-aligned
  CHECK_THAT(out, Contains("(n/a: no such figure"));
  CHECK_THAT(out, Contains("\n\nonly in A: zero.stage=3 training.micro_batch=1\n"
                           "only in B: training.micro_batch=4 zero.stage=1\n"));
}

TEST_CASE("diff_sweeps: scenario names, versions, a warm-up-only figure and a sweep with nothing in common",
          "[analysis][unit]") {
  using zerosim::analysis::diff_sweeps;
  using zerosim::analysis::format_sweep_diff;
  // Same --sets (given in another order), another scenario name and zerosim version. B's point ran only the warm-up
  // step (a fit keeps its numbers, marked '*'): no delta against A's steady-state step time.
  const auto a = sweep_table("first", R"(["training.micro_batch"])", R"(["zero.stage=2", "cluster.nodes=1"])", "f",
                             "1.0.0", {sweep_row(0, R"([["training.micro_batch", "1"]])", "fits", 0.5, 1000, 2, 3)});
  const auto b =
      sweep_table("second", R"(["training.micro_batch"])", R"(["cluster.nodes=1", "zero.stage=2"])", "f", "1.1.0",
                  {sweep_row(0, R"([["training.micro_batch", "1"]])", "fits", 0.4, 1250, 2, 3, false)});
  const auto d = diff_sweeps(a, b);
  REQUIRE(d.points.size() == 1);
  CHECK(d.set_changes.empty());
  const std::string out = format_sweep_diff(d, "a", "b");
  INFO(out);
  CHECK_THAT(out, Contains("--set overrides that differ: none\nscenario name: first -> second\n"
                           "zerosim version: 1.0.0 -> 1.1.0\n"));
  CHECK_THAT(out, !Contains("fingerprint"));
  CHECK_THAT(out, Contains("  training.micro_batch=1  fits/fits  0.5000 -> 0.4000*        -           -"));
  CHECK_THAT(out, Contains("(*: warm-up step 0 only"));
  CHECK_THAT(out, !Contains("n/a"));
  CHECK_THAT(out, !Contains("only in"));
  // A run on past its OOM (on_oom: continue) keeps its step figures: a delta, status oom.
  const auto c = sweep_table("first", R"(["training.micro_batch"])", "[]", "f", "1.0.0",
                             {sweep_row(0, R"([["training.micro_batch", "1"]])", "oom-continue", 0.6, 800, 30, 31)});
  CHECK_THAT(format_sweep_diff(diff_sweeps(a, c), "a", "c"),
             Contains("fits/oom  0.5000 -> 0.6000   +20.0%      -20.0%") && Contains("zero.stage: 2 -> (absent)"));
  // Other axis values: nothing pairs, every point is one-sided (the CLI makes that an error).
  const auto e = sweep_table("first", R"(["training.micro_batch"])", "[]", "f", "1.0.0",
                             {sweep_row(0, R"([["training.micro_batch", "8"]])", "fits", 0.5, 1000, 2, 3)});
  const auto none = diff_sweeps(a, e);
  CHECK(none.points.empty());
  CHECK(none.only_a == std::vector<std::string>{"training.micro_batch=1"});
  CHECK(none.only_b == std::vector<std::string>{"training.micro_batch=8"});
  // A sweep without axes is its base scenario: one point, which pairs with the other's.
  const auto base = sweep_table("first", "[]", "[]", "f", "1.0.0", {sweep_row(0, "[]", "fits", 0.5, 1000, 2, 3)});
  const auto both = diff_sweeps(base, base);
  REQUIRE(both.points.size() == 1);
  CHECK(both.points[0].label == "(base scenario)");
}

TEST_CASE("format_sweep_diff: a marginal fit is marked '~' in the status column, with a legend", "[analysis][unit]") {
  using zerosim::analysis::diff_sweeps;
  using zerosim::analysis::format_sweep_diff;
  // On the 24 GiB card of sweep_row, A's nvidia-smi 23 GiB leaves 1 GiB, under 5 % (1.2 GiB): marginal (the row has
  // no marginal_reason, so sweep_from_json derives it from these figures); B's 5 GiB is not.
  const auto a = sweep_table("s", R"(["zero.stage"])", "[]", "f", "1.0.0",
                             {sweep_row(0, R"([["zero.stage", "1"]])", "fits", 0.5, 1000, 20, 23)});
  const auto b = sweep_table("s", R"(["zero.stage"])", "[]", "f", "1.0.0",
                             {sweep_row(0, R"([["zero.stage", "1"]])", "fits", 0.5, 1000, 4, 5)});
  const std::string out = format_sweep_diff(diff_sweeps(a, b), "out/a", "out/b");
  INFO(out);
  CHECK_THAT(line_starting(out, "  zero.stage=1 "), Contains(" fits~/fits "));
  CHECK_THAT(out, Contains("(~: a marginal fit: it fits with little to spare; why is the row's marginal_reason in "
                           "sweep.csv)"));
  const std::string same = format_sweep_diff(diff_sweeps(b, b), "out/b", "out/b");
  CHECK_THAT(same, Contains(" fits/fits ") && !Contains("~"));
}

TEST_CASE("format_sweep_diff: more than 8 points on one side are cut to the first 5 and a count", "[analysis][unit]") {
  // New-user trial: a superset sweep listed 28 "only in A" lines. 8 stay listed in full; 9 become 5 + "4 more".
  zerosim::analysis::SweepDiff d;
  for (int i = 0; i < 9; ++i)
    d.only_a.push_back("training.micro_batch=" + std::to_string(i + 1));
  for (int i = 0; i < 8; ++i)
    d.only_b.push_back("zero.stage=" + std::to_string(i));
  const std::string out = zerosim::analysis::format_sweep_diff(d, "a", "b");
  CHECK_THAT(out, Contains("only in A: training.micro_batch=5\nonly in A: ... and 4 more (9 points in all)\n"));
  CHECK_THAT(out, !Contains("training.micro_batch=6"));
  CHECK_THAT(out, Contains("only in B: zero.stage=7\n"));
  CHECK_THAT(out, !Contains("only in B: ..."));
}

TEST_CASE("diff_scenarios: dtypes neither run set are marked as following training.precision", "[analysis][unit]") {
  // Reviewer: a bf16 run against an fp16 one printed zero.grad_accum_dtype and zero.communication_data_type as the
  // user's changes although neither file set them (unset = the model's dtype, engine.py get_data_types).
  const std::string a = R"({"scenario": {"training": {"precision": "bf16"}, "zero": {"grad_accum_dtype": "bf16",
      "grad_accum_dtype_explicit": false, "communication_data_type": "bf16", "communication_data_type_explicit": false}}})";
  const std::string b = R"({"scenario": {"training": {"precision": "fp16"}, "zero": {"grad_accum_dtype": "fp16",
      "grad_accum_dtype_explicit": false, "communication_data_type": "fp32", "communication_data_type_explicit": true}}})";
  const auto c = diff_scenarios(a, b);
  REQUIRE(c.size() == 3);
  const auto from = [&](const std::string& key) {
    const auto it = std::find_if(c.begin(), c.end(), [&](const auto& k) { return k.key == key; });
    REQUIRE(it != c.end());
    return it->default_from;
  };
  CHECK(from("training.precision").empty());
  CHECK(from("zero.communication_data_type").empty()); // B set it: a change of the user's
  // Its default follows the precision and, for bf16 at stage 0 before 0.17.6, the release (engine.py get_data_types).
  CHECK(from("zero.grad_accum_dtype") == "training.precision and zero.deepspeed_version");
}
