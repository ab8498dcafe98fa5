// `zerosim collective --fit`: a synthetic nccl-tests log generated from known alpha and bus bandwidth is fitted back.
// Runs the built `zerosim` binary (ZEROSIM_EXE).
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <unistd.h>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// Stdout of `cmd`; checks that it exits with status 0.
std::string run_capture(const std::string& cmd) {
  const zerosim::test::ShellOutcome o = zerosim::test::run_shell(cmd);
  CHECK(o.status == 0);
  return o.text;
}

constexpr double kFitTol = 0.01; // the brief: recover alpha and beta within 1 %

double number_after(const std::string& text, const std::string& label) {
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(label + R"(\s*=\s*([0-9.eE+-]+))")));
  return std::stod(m[1].str());
}

} // namespace

TEST_CASE("collective --fit: recovers alpha and bus bandwidth from a synthetic nccl-tests log", "[collectives][e2e]") {
  // 8 ranks, ring all-reduce, alpha = 3.5 us per step, bus bandwidth B = 150e9 B/s:
  // t(S) = 2(n-1)·alpha + 2(n-1)/n·S/B = 14 · 3.5 us + 1.75 · S / 150e9 (Patarasuk & Yuan 2009; nccl-tests
  // PERFORMANCE.md). Times printed in us with two decimals, as nccl-tests does.
  constexpr double kAlpha = 3.5e-6;
  constexpr double kBus = 150e9;
  const std::string path = "/tmp/zerosim-fit-test-" + std::to_string(::getpid()) + ".log";
  {
    std::ofstream f(path);
    f << "# nThread 1 nGpus 8 minBytes 1024 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20\n#\n";
    for (int r = 0; r < 8; ++r)
      f << "#  Rank  " << r << " Group  0 Pid  4242 on     host device  " << r << " [0x07] NVIDIA H100 80GB HBM3\n";
    f << "#\n#                                                              out-of-place                       "
         "in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   "
         "busbw "
         "#wrong\n#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  "
         "(GB/s)  "
         "(GB/s)\n";
    for (double s = 1024; s <= 1073741824.0; s *= 2) {
      const double t = 14 * kAlpha + 1.75 * s / kBus;
      const double algbw = s / t / 1e9;
      char line[256];
      std::snprintf(line, sizeof line,
                    "%12.0f %13.0f     float     sum      -1 %8.2f %7.2f %7.2f      0 %8.2f %7.2f %7.2f      0\n", s,
                    s / 4, t * 1e6, algbw, algbw * 1.75, t * 1e6, algbw, algbw * 1.75);
      f << line;
    }
    f << "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 42.0\n#\n";
  }
  const std::string out = run_capture(std::string(ZEROSIM_EXE) + " collective --op all_reduce --fit " + path);
  std::remove(path.c_str());
  INFO(out);
  CHECK(number_after(out, "latency alpha") * 1e-6 == Approx(kAlpha).epsilon(kFitTol));
  CHECK(number_after(out, "bus bandwidth B") * 1e9 == Approx(kBus).epsilon(kFitTol));
  CHECK(out.find("fit error: rms") != std::string::npos);
  CHECK(out.find("on 8 ranks") != std::string::npos);
}

TEST_CASE("collective --fit: the comparison table's columns stay aligned for sizes and times of any width",
          "[collectives][e2e]") {
  // Sizes 1 KB ... 1e18 B (19 digits): t(1e18 B) = 14 x 3.5 us + 1.75 x 1e18 / 150e9 s = 1.1667e7 s, printed as
  // 11666666666715.67 us (17 characters), both wider than a 14-character column.
  const std::string path = "/tmp/zerosim-fit-wide-" + std::to_string(::getpid()) + ".log";
  {
    std::ofstream f(path);
    for (int r = 0; r < 8; ++r)
      f << "#  Rank  " << r << " Group  0 Pid  4242 on     host device  " << r << " [0x07] NVIDIA H100 80GB HBM3\n";
    for (double s = 1e3; s <= 1e18; s *= 1000) {
      const double t = 14 * 3.5e-6 + 1.75 * s / 150e9;
      char line[512];
      std::snprintf(line, sizeof line, "%.0f %.0f float sum -1 %.2f 1 1 0 %.2f 1 1 0\n", s, s / 4, t * 1e6, t * 1e6);
      f << line;
    }
  }
  const std::string out = run_capture(std::string(ZEROSIM_EXE) + " collective --op all_reduce --fit " + path);
  std::remove(path.c_str());
  INFO(out);
  // The header and every row: right-aligned columns end at the same character positions.
  const auto column_ends = [](const std::string& line) {
    std::vector<std::size_t> ends;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] != ' ' && (i + 1 == line.size() || line[i + 1] == ' '))
        ends.push_back(i);
    return ends;
  };
  std::istringstream in(out);
  std::vector<std::string> table;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.find("size(B)") != std::string::npos)
      inside = true;
    else if (line.rfind("fit:", 0) == 0)
      inside = false;
    if (inside)
      table.push_back(line);
  }
  REQUIRE(table.size() == 7); // the header and 1e3, 1e6, ..., 1e18
  CHECK_THAT(table.back(), Catch::Contains("1000000000000000000") && Catch::Contains("11666666666715.67"));
  const std::vector<std::size_t> header = column_ends(table.front());
  REQUIRE(header.size() == 4);
  for (const std::string& row : table)
    CHECK(column_ends(row) == header);
}
