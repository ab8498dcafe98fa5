// `zerosim collective --fit`: a synthetic nccl-tests log generated from known alpha and bus bandwidth is fitted back.
// Runs the built `zerosim` binary (ZEROSIM_EXE).
#include <catch2/catch.hpp>

#include "tests/support/cli_runner.hpp"

#include <unistd.h>
#include <fstream>
#include <regex>
#include <string>

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
