// End-to-end tests of `zerosim report`: simulate a run with the built binary (ZEROSIM_EXE), write the HTML report,
// and load it in headless Chromium (Debian package `chromium`, installed by scripts/install-deps.sh) with
// --dump-dom: the page must load (its own load marker "report-loaded" is in the DOM), raise no script error (its
// window.onerror sink "js-errors" stays empty) and show the headings and the step time of result.json. Also the
// one-line / exit-2 error contract and the "nothing fetched from the network" rule.
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"
#include "tests/support/reserved_gap.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

using zerosim::test::Outcome;
using zerosim::test::slurp;
using zerosim::test::TempDir;

namespace {

constexpr int kChromiumTimeoutSeconds = 120;

Outcome run_cli(const fs::path& tmp, const std::vector<std::string>& args) {
  zerosim::test::RunOptions opt;
  opt.chdir = false;
  return zerosim::test::run_zerosim(tmp, args, opt);
}

/// The Chromium executable: $ZEROSIM_CHROMIUM, else `chromium` or `chromium-browser` on PATH; "" when none.
std::string find_chromium() {
  if (const char* env = std::getenv("ZEROSIM_CHROMIUM"); env != nullptr && *env != '\0')
    return ::access(env, X_OK) == 0 ? std::string(env) : std::string();
  const char* path = std::getenv("PATH");
  for (const char* name : {"chromium", "chromium-browser"}) {
    std::stringstream ss(path != nullptr ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(ss, d, ':');) {
      const fs::path p = fs::path(d.empty() ? "." : d) / name;
      if (::access(p.c_str(), X_OK) == 0)
        return p.string();
    }
  }
  return {};
}

/// Loads `html` in headless Chromium and returns the serialized DOM after the load event (--dump-dom). Runs in its
/// own process group with a private profile and HOME under `tmp`; killed (the whole group) after the timeout.
std::string dump_dom(const fs::path& tmp, const fs::path& html) {
  const std::string chromium = find_chromium();
  if (chromium.empty())
    FAIL(
        "chromium not found on PATH (nor $ZEROSIM_CHROMIUM): install the Debian package chromium "
        "(scripts/install-deps.sh does)");
  const fs::path profile = tmp / "chromium-profile";
  fs::create_directories(profile);
  const fs::path out = tmp / "dom.html";
  const fs::path err = tmp / "chromium.err";
  // New headless mode (the only one in Chromium >= 132); --no-sandbox because tests may run as root in a container.
  std::vector<std::string> args{chromium,
                                "--headless",
                                "--no-sandbox",
                                "--disable-gpu",
                                "--disable-dev-shm-usage",
                                "--no-first-run",
                                "--no-default-browser-check",
                                "--disable-extensions",
                                "--disable-background-networking",
                                "--disable-sync",
                                "--user-data-dir=" + profile.string(),
                                "--dump-dom",
                                "file://" + fs::absolute(html).string()};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::setenv("HOME", tmp.c_str(), 1);
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0)
      ::_exit(127);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kChromiumTimeoutSeconds);
  for (;;) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("chromium did not finish within " << kChromiumTimeoutSeconds << " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL); // leftover helper processes of the group, if any
  INFO("chromium stderr (tail): " << [&] {
    const std::string e = slurp(err);
    return e.size() > 2000 ? e.substr(e.size() - 2000) : e;
  }());
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);
  return slurp(out);
}

/// Every src= / href= value of `html` that starts with http:// or https://.
std::vector<std::string> external_refs(const std::string& html) {
  static const std::regex re(R"re((src|href)\s*=\s*["']?\s*(https?://[^"' >]*))re", std::regex::icase);
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[2]);
  return out;
}

/// "%.4f" of a step time: the page's format ("{:.4f}" s, analysis/report.hpp); both round the exact binary value.
std::string four_decimals(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4f", v);
  return buf;
}

/// The text of the page's error sink <pre id="js-errors">...</pre> in a dumped DOM ("" when empty or absent).
std::string js_errors(const std::string& dom) {
  const std::string open = "<pre id=\"js-errors\">";
  const auto b = dom.find(open);
  if (b == std::string::npos)
    return "(no js-errors element)";
  const auto e = dom.find("</pre>", b);
  return dom.substr(b + open.size(), e == std::string::npos ? std::string::npos : e - b - open.size());
}

std::size_t count(const std::string& s, const std::string& what) {
  std::size_t n = 0;
  for (auto p = s.find(what); p != std::string::npos; p = s.find(what, p + what.size()))
    ++n;
  return n;
}

/// GPT-2 small (124M) on one RTX 4090, 2 steps, one variant: fast, and fits.
fs::path small_single_run(const fs::path& tmp) {
  const fs::path sc = tmp / "small.yaml";
  std::ofstream(sc) << "name: report-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 2}\n"
                       "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2}\n";
  const fs::path out = tmp / "run";
  const Outcome o = run_cli(tmp, {"run", sc.string(), "--out", out.string(), "--quiet"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  return out;
}

} // namespace

TEST_CASE("zerosim report: the default scenario's page loads in headless Chromium with its headings and numbers",
          "[e2e]") {
  TempDir tmp("report-e2e");
  const fs::path run = tmp.path() / "run";
  const std::string sc = std::string(ZEROSIM_DATA_DIR) + "/scenarios/examples/single-gpu-zero-stages.yaml";
  const Outcome r = run_cli(tmp.path(), {"run", sc, "--out", run.string(), "--quiet"});
  INFO("run stderr: " << r.err);
  REQUIRE(r.status == 0);

  const Outcome o = run_cli(tmp.path(), {"report", run.string()});
  INFO("report stderr: " << o.err);
  REQUIRE(o.status == 0);
  CHECK(o.err.empty()); // gnuplot drew every picture: no warning
  const fs::path html_path = run / "report.html";
  CHECK_THAT(o.out, Contains(html_path.string()));
  REQUIRE(fs::exists(html_path));
  const std::string html = slurp(html_path);
  CHECK(external_refs(html).empty());

  const std::string dom = dump_dom(tmp.path(), html_path);
  REQUIRE_THAT(dom, Contains("<div id=\"report-loaded\" hidden=\"\">report loaded</div>")); // in the DOM, not shown
  CHECK(js_errors(dom).empty());
  CHECK_THAT(dom, Contains("<h1>zerosim report: single-gpu-zero-stages</h1>"));
  for (const char* h : {"<h2>Summary</h2>", "<h2>Step-time breakdown</h2>", "<h2>Peak memory attribution</h2>",
                        "<h2>Plots</h2>", "<h2>Stream timeline of one step</h2>"})
    CHECK_THAT(dom, Contains(h));
  // Stage 0-2 without offload do not fit a 24 GiB RTX 4090 (docs/zero-stages.md): the page says so.
  CHECK_THAT(dom, Contains("<h2>Out of memory</h2>"));
  CHECK_THAT(dom, Contains("<td class=\"oom\">OOM</td>"));
  CHECK_THAT(dom, Contains("<td class=\"fits\">fits</td>"));

  // Every variant's step time from its result.json, and its label as a heading.
  const nlohmann::json summary = nlohmann::json::parse(slurp(run / "summary.json"));
  REQUIRE(summary.at("variants").size() == 6);
  for (const auto& v : summary.at("variants")) {
    const nlohmann::json result = nlohmann::json::parse(slurp(run / v.at("dir").get<std::string>() / "result.json"));
    const double step = result.at("summary").at("step_time_s").get<double>();
    INFO("variant " << v.at("dir").get<std::string>() << ", step time " << step);
    CHECK_THAT(dom, Contains("<td class=\"num\">" + four_decimals(step) + "</td>"));
  }
  // Pictures: a memory timeline per variant, the breakdown and the peak memory (gnuplot), and a timeline per variant.
  CHECK(count(dom, "<figure>") == 6 + 2);
  // The memory timelines are PNG data URIs (base64 of the PNG signature starts "iVBORw0KGgo"); the page's load
  // script writes "image not decoded" into the error sink for any image Chromium could not decode.
  CHECK(count(dom, "src=\"data:image/png;base64,iVBORw0KGgo") == 6);
  CHECK(count(dom, "<svg class=\"timeline\"") == 6);
}

TEST_CASE("zerosim report: a script error on the page is caught by the page's error sink", "[e2e]") {
  // Negative control of the test harness above: the same page with a failing script shows the error in the DOM.
  TempDir tmp("report-e2e");
  const fs::path run = small_single_run(tmp.path());
  const fs::path html_path = tmp.path() / "broken.html";
  const Outcome o = run_cli(tmp.path(), {"report", run.string(), "--out", html_path.string()});
  INFO("report stderr: " << o.err);
  REQUIRE(o.status == 0);
  std::string html = slurp(html_path);
  const auto body_end = html.rfind("</body>");
  REQUIRE(body_end != std::string::npos);
  html.insert(body_end, "<script>no_such_function_zerosim();</script>\n");
  std::ofstream(html_path, std::ios::binary | std::ios::trunc) << html;
  const std::string dom = dump_dom(tmp.path(), html_path);
  CHECK_THAT(js_errors(dom), Contains("JS error: "));
  CHECK_THAT(js_errors(dom), Contains("no_such_function_zerosim"));
  CHECK_THAT(dom, Contains("report loaded")); // the load handler still ran
}

TEST_CASE("zerosim report: --out FILE, a single-variant run, and the error contract", "[e2e]") {
  TempDir tmp("report-e2e");
  const fs::path run = small_single_run(tmp.path());
  const fs::path out = tmp.path() / "page.html";
  const Outcome ok = run_cli(tmp.path(), {"report", run.string(), "--out", out.string()});
  INFO("stderr: " << ok.err);
  REQUIRE(ok.status == 0);
  REQUIRE(fs::exists(out));
  CHECK_FALSE(fs::exists(run / "report.html"));
  const std::string html = slurp(out);
  CHECK_THAT(html, Contains("<h1>zerosim report: report-e2e</h1>"));
  const nlohmann::json result = nlohmann::json::parse(slurp(run / "result.json"));
  CHECK_THAT(html, Contains("<td class=\"num\">" + four_decimals(result.at("summary").at("step_time_s").get<double>()) +
                            "</td>"));
  CHECK(html.find("id=\"oom\"") == std::string::npos);

  // Without gnuplot the page is still written; it says why the pictures are missing, and stderr warns once.
  {
    zerosim::test::RunOptions opt;
    opt.chdir = false;
    opt.env = {"ZEROSIM_GNUPLOT=" + (tmp.path() / "no-gnuplot").string()};
    const fs::path page = tmp.path() / "no-plots.html";
    const Outcome o = zerosim::test::run_zerosim(tmp.path(), {"report", run.string(), "--out", page.string()}, opt);
    CHECK(o.status == 0);
    CHECK_THAT(o.err, Contains("warning: plots not drawn: gnuplot not found"));
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    const std::string text = slurp(page);
    CHECK_THAT(text, Contains("plots not drawn: gnuplot not found"));
    CHECK(text.find("<figure>") == std::string::npos);
    CHECK_THAT(text, Contains("<svg class=\"timeline\""));
  }
  // A gnuplot that fails on one picture (the step breakdown) only: that picture says why, the others are drawn.
  {
    const fs::path fake = tmp.path() / "picky-gnuplot";
    std::ofstream(fake)
        << "#!/bin/sh\nif grep -q 'step-time breakdown' \"$1\"; then echo 'line 1: no' >&2; exit 1; fi\n"
           "if grep -q 'memory timeline' \"$1\"; then cp \"$1\" '"
        << (tmp.path() / "report-memory.gp").string() << "'; fi\nexec gnuplot \"$@\"\n";
    fs::permissions(fake, fs::perms::owner_all);
    zerosim::test::RunOptions opt;
    opt.chdir = false;
    opt.env = {"ZEROSIM_GNUPLOT=" + fake.string()};
    const fs::path page = tmp.path() / "some-plots.html";
    const Outcome o = zerosim::test::run_zerosim(tmp.path(), {"report", run.string(), "--out", page.string()}, opt);
    CHECK(o.status == 0);
    const std::string text = slurp(page);
    CHECK_THAT(text, Contains("not drawn: gnuplot failed") && Contains("line 1: no"));
    CHECK_THAT(text, Contains("data:image/png;base64,")); // the memory timeline is there
    // with the gap between the allocated stack and the reserved line: reserved - allocated of memory.csv.
    const auto gap =
        zerosim::test::check_reserved_gap(slurp(tmp.path() / "report-memory.gp"), slurp(run / "memory.csv"), 0);
    CHECK(gap.band);
    CHECK(gap.rows > 100);
    CHECK(gap.mismatches == std::vector<std::string>{});
  }

  auto one_line_exit2 = [&](const std::vector<std::string>& args, const std::string& what) {
    const Outcome o = run_cli(tmp.path(), args);
    INFO("args[1..]: " << (args.size() > 1 ? args[1] : std::string()) << "; stderr: " << o.err);
    CHECK(o.status == 2);
    CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
    CHECK_THAT(o.err, Contains(what));
  };
  one_line_exit2({"report"}, "missing RUN_DIR");
  one_line_exit2({"report", run.string(), "--bogus"}, "unknown option '--bogus'");
  one_line_exit2({"report", run.string(), "--out"}, "--out needs a value");
  one_line_exit2({"report", run.string(), run.string()}, "more than one run directory");
  one_line_exit2({"report", run.string(), "--out", tmp.path().string()}, "is a directory; give the HTML file");
  const fs::path missing = tmp.path() / "no-such-run";
  one_line_exit2({"report", missing.string()}, "no-such-run");
  CHECK_FALSE(fs::exists(missing / "report.html"));

  // A broken result.json: the error names it, and nothing (not even a .tmp) is written.
  const fs::path broken = tmp.path() / "broken";
  fs::create_directories(broken);
  std::ofstream(broken / "result.json") << "{\"summary\": 3";
  one_line_exit2({"report", broken.string()}, (broken / "result.json").string());
  CHECK_FALSE(fs::exists(broken / "report.html"));
  CHECK_FALSE(fs::exists(broken / "report.html.tmp"));

  // A sweep directory (sweep.json, no summary.json): the error says what to do instead (a new user's report).
  const fs::path sweep = tmp.path() / "a-sweep";
  fs::create_directories(sweep);
  std::ofstream(sweep / "sweep.json") << "{}";
  one_line_exit2({"report", sweep.string()}, "is a sweep directory: `zerosim plot");
  CHECK_FALSE(fs::exists(sweep / "report.html"));
}

TEST_CASE("zerosim report: a stage-3 8-GPU step's timeline has at most a rectangle per pixel per lane", "[e2e]") {
  // LLaMA-2 7B, ZeRO-3 on one DGX H100 (8 GPUs), ranks 0 and 1 traced: thousands of sub-pixel ops (stage 3's
  // per-module all-gathers and their host launches). Sub-pixel ops of a lane closer than a pixel share a rectangle,
  // so a lane has at most 2 kReportTimelinePlotPx + 1 = 1821 of them (each but the last a pixel wide, followed by a
  // pixel of gap, or followed by a pixel-wide op: at most one per pixel-wide rectangle). Before that rule the page was 1.81 MB with 8808 rectangles (3044 on a host lane); now about 0.8 MB.
  TempDir tmp("report-e2e");
  const fs::path run = tmp.path() / "run";
  const std::string sc = std::string(ZEROSIM_DATA_DIR) + "/scenarios/teaching/perfetto-trace.yaml";
  const Outcome r = run_cli(tmp.path(), {"run", sc, "--set", "cluster.nodes=1", "--out", run.string(), "--quiet"});
  INFO("run stderr: " << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(run_cli(tmp.path(), {"report", run.string()}).status == 0);
  const std::string html = slurp(run / "report.html");
  const auto begin = html.find("<svg class=\"timeline\"");
  REQUIRE(begin != std::string::npos);
  const std::string svg = html.substr(begin, html.find("</svg>", begin) - begin);
  // The op rectangles (those with a tooltip) by lane (their y).
  std::map<std::string, std::size_t> per_lane;
  const std::regex op_rect(
      "<rect x=\"[0-9.]+\" y=\"([0-9.]+)\" width=\"[0-9.]+\" height=\"16\" fill=\"#[0-9A-Fa-f]+\">"
      "<title>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), op_rect); it != std::sregex_iterator(); ++it)
    ++per_lane[(*it)[1].str()];
  // 2 ranks x 4 streams (compute, host, gather, reduce).
  CHECK(per_lane.size() == 8);
  for (const auto& [y, n] : per_lane) {
    INFO("lane at y = " << y);
    CHECK(n <= 1821);
  }
  // Merged ops say how many share their rectangle.
  CHECK_THAT(svg, Contains(" ops closer than a pixel, rank 0 host: "));
  // At most 8 x 1821 rectangles of a few hundred bytes and the pictures: under the 2 MB a page should stay below.
  CHECK(html.size() < 2'000'000);
}
