#include "analysis/chrome_trace.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <sstream>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;
using nlohmann::json;

namespace {
constexpr double kTol = 1e-12;

json trace_of(const trace::RunResult& run) {
  std::ostringstream os;
  write_chrome_trace(os, run, "test");
  return json::parse(os.str());
}

std::vector<json> events(const json& t, const std::string& ph) {
  std::vector<json> out;
  for (const auto& e : t.at("traceEvents"))
    if (e.at("ph") == ph)
      out.push_back(e);
  return out;
}
} // namespace

TEST_CASE("write_chrome_trace: a process per traced rank and a thread per stream", "[analysis][unit]") {
  const json t = trace_of(synthetic_run());
  std::vector<std::string> procs;
  std::vector<std::pair<int, std::string>> threads;
  for (const auto& e : events(t, "M")) {
    if (e.at("name") == "process_name")
      procs.push_back(std::to_string(e.at("pid").get<int>()) + ":" + e.at("args").at("name").get<std::string>());
    if (e.at("name") == "thread_name")
      threads.emplace_back(e.at("pid").get<int>() * 100 + e.at("tid").get<int>(), e.at("args").at("name"));
  }
  // Spans exist on ranks 0 and 1 -> two processes; two streams each -> four threads.
  CHECK(procs == std::vector<std::string>{"0:rank 0", "1:rank 1"});
  REQUIRE(threads.size() == 4);
  CHECK(threads[0] == std::make_pair(0, std::string("compute")));
  CHECK(threads[1] == std::make_pair(1, std::string("comm")));
  CHECK(threads[3] == std::make_pair(101, std::string("comm")));
}

TEST_CASE("write_chrome_trace: spans are X events in microseconds with label, phase, bytes and flops",
          "[analysis][unit]") {
  const json t = trace_of(synthetic_run());
  const auto x = events(t, "X");
  REQUIRE(x.size() == 3);
  // Sorted by (rank, stream, start): rank 0 compute, rank 0 comm, rank 1 compute.
  CHECK(x[0].at("name") == "fwd block.0");
  CHECK(x[0].at("cat") == "forward");
  CHECK(x[0].at("ts").get<double>() == Approx(3.0e6).epsilon(kTol)); // 3.0 s = 3e6 us
  CHECK(x[0].at("dur").get<double>() == Approx(0.5e6).epsilon(kTol)); // 0.5 s
  CHECK(x[0].at("args").at("flops").get<double>() == Approx(2e12).epsilon(kTol));
  CHECK(x[1].at("name") == "allreduce bucket 0");
  CHECK(x[1].at("tid") == 1);
  CHECK(x[1].at("cat") == "grad_reduce");
  CHECK(x[1].at("args").at("bytes").get<double>() == Approx(4e9).epsilon(kTol));
  CHECK(x[2].at("pid") == 1);
}

TEST_CASE("write_chrome_trace: memory counters by tag in GiB", "[analysis][unit]") {
  const json t = trace_of(synthetic_run());
  const auto c = events(t, "C");
  REQUIRE(c.size() == 2);
  CHECK_THAT(c[0].at("name").get<std::string>(), Catch::Contains("GiB"));
  CHECK(c[0].at("ts").get<double>() == Approx(0.5e6).epsilon(kTol));
  CHECK(c[0].at("args").at("lp_params").get<double>() == Approx(2.0).epsilon(kTol)); // 2 GiB
  CHECK_FALSE(c[0].at("args").contains("activations"));
  // Second counter keeps lp_params (2 GiB) and adds activations (1 GiB): the tracks stack to 3 GiB.
  CHECK(c[1].at("args").at("lp_params").get<double>() == Approx(2.0).epsilon(kTol));
  CHECK(c[1].at("args").at("activations").get<double>() == Approx(1.0).epsilon(kTol));
}

TEST_CASE("write_chrome_trace: instant events for step boundaries and the OOM", "[analysis][unit]") {
  auto run = synthetic_run();
  trace::OomInfo o;
  o.rank = 1;
  o.time = 6.0;
  o.requested = 1e9;
  o.capacity = 2e9;
  run.oom = o;
  const json t = trace_of(run);
  const auto i = events(t, "i");
  REQUIRE(i.size() == 7); // 3 steps x (begin, end) + OOM
  CHECK(i[0].at("name") == "step 0 begin");
  CHECK(i[3].at("name") == "step 1 end");
  CHECK(i[3].at("ts").get<double>() == Approx(5.0e6).epsilon(kTol));
  CHECK(i[6].at("name") == "OOM");
  CHECK(i[6].at("pid") == 1);
  CHECK(i[6].at("ts").get<double>() == Approx(6.0e6).epsilon(kTol));
}

TEST_CASE("write_chrome_trace: output is deterministic and the file writer leaves no .tmp", "[analysis][unit]") {
  TempDir dir("trace");
  const auto run = synthetic_run();
  const auto path = (dir.path() / "trace.json").string();
  write_chrome_trace(path, run, "test");
  std::ifstream in(path);
  std::stringstream a;
  a << in.rdbuf();
  std::ostringstream b;
  write_chrome_trace(b, run, "test");
  CHECK(a.str() == b.str());
  CHECK_NOTHROW(json::parse(a.str()));
  CHECK_FALSE(has_tmp_file(dir.path()));
}

TEST_CASE("write_chrome_trace: an empty run is still a valid trace", "[analysis][unit]") {
  const json t = trace_of(trace::RunResult{});
  CHECK(t.at("traceEvents").is_array());
  CHECK(events(t, "M").size() == 2); // rank 0 name + sort index, no streams
}

TEST_CASE("write_chrome_trace: steps > 0 keeps only the first optimizer steps", "[analysis][unit]") {
  // synthetic_run(): steps 0 [0, 3] s, 1 [3, 5] s, 2 [5, 7.5] s; spans start at 3.0 (rank 0 and 1 compute) and
  // 4.0 s (rank 0 comm), memory samples at 0.5 and 3.25 s.
  const auto run = synthetic_run();
  CHECK(traced_until(run, 0) == std::numeric_limits<double>::infinity());
  CHECK(traced_until(run, 1) == Approx(3.0).epsilon(kTol));
  CHECK(traced_until(run, 4) == std::numeric_limits<double>::infinity()); // only 3 steps completed

  std::ostringstream one;
  write_chrome_trace(one, run, "test", 1);
  const json t1 = json::parse(one.str());
  // Step 0 ends at 3.0 s: the spans starting at 3.0 s belong to step 1 and go; the sample at 0.5 s stays; marks of
  // step 0 only. Both ranks keep their process names.
  CHECK(events(t1, "X").empty());
  REQUIRE(events(t1, "C").size() == 1);
  CHECK(events(t1, "C")[0].at("ts").get<double>() == Approx(0.5e6).epsilon(kTol));
  const auto marks1 = events(t1, "i");
  REQUIRE(marks1.size() == 2);
  CHECK(marks1[1].at("name") == "step 0 end");
  CHECK(events(t1, "M").size() == 2 * (2 + 2 * 2)); // 2 ranks x (process name + sort, 2 streams x name + sort)

  std::ostringstream two;
  write_chrome_trace(two, run, "test", 2);
  const json t2 = json::parse(two.str());
  // Until 5.0 s: all three spans, both samples, the marks of steps 0 and 1.
  CHECK(events(t2, "X").size() == 3);
  CHECK(events(t2, "C").size() == 2);
  CHECK(events(t2, "i").size() == 4);

  // More steps than the run has: everything, as with 0.
  std::ostringstream all;
  write_chrome_trace(all, run, "test", 0);
  std::ostringstream more;
  write_chrome_trace(more, run, "test", 5);
  CHECK(more.str() == all.str());
  CHECK(events(json::parse(all.str()), "i").size() == 6);
}

TEST_CASE("write_chrome_trace: steps > 0 keeps the OOM mark even after the last kept step", "[analysis][unit]") {
  // An OOM at 6.0 s (step 2) with simulation.on_oom: continue; the trace keeps steps 0 and 1 (until 5.0 s).
  auto run = synthetic_run_stopped_by_oom(2, 6.0);
  std::ostringstream os;
  write_chrome_trace(os, run, "test", 2);
  const auto marks = events(json::parse(os.str()), "i");
  REQUIRE(marks.size() == 5);
  CHECK(marks[4].at("name") == "OOM");
}
