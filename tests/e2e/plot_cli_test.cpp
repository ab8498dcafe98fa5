// End-to-end tests of `zerosim plot`: simulate a small run with the built binary (ZEROSIM_EXE), plot it with the
// installed gnuplot and check the files: PNG signature (PNG spec §5.2: 89 50 4E 47 0D 0A 1A 0A), SVG root element,
// one memory picture per variant and traced rank, and the one-line / exit-2 error contract.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
using Catch::Contains;

namespace {

struct Outcome {
  int status = -1;
  std::string out;
  std::string err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempDir {
public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("zerosim-plot-e2e-" + std::to_string(::getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const fs::path& path() const { return path_; }

private:
  fs::path path_;
};

/// Runs `zerosim args...` in `tmp` with stdout/stderr captured; `env` entries ("K=V") are added to the environment.
Outcome zerosim(const fs::path& tmp, const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  const fs::path out = tmp / "stdout.txt";
  const fs::path err = tmp / "stderr.txt";
  std::vector<std::string> argv_s{ZEROSIM_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const auto& e : env) {
      const auto eq = e.find('=');
      ::setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0)
      ::_exit(127);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
  }
  Outcome o;
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

/// GPT-2 small (124M) on one RTX 4090, stage 0 vs 3, 2 steps: fast, and fits.
fs::path small_run(const fs::path& tmp) {
  const fs::path sc = tmp / "small.yaml";
  std::ofstream(sc) << "name: plot-e2e\nmodel: gpt2\ntraining: {micro_batch: 1, seq_len: 256}\nzero: {stage: 0}\n"
                       "cluster: {topology: one-rtx4090}\nsimulation: {steps: 2, on_oom: continue}\n"
                       "compare: {zero.stage: [0, 3]}\n";
  const fs::path out = tmp / "run";
  const Outcome o = zerosim(tmp, {"run", sc.string(), "--out", out.string(), "--quiet"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  return out;
}

bool is_png(const fs::path& p) {
  const std::string b = slurp(p);
  return b.size() > 1000 && b.compare(0, 8, std::string("\x89PNG\r\n\x1a\n", 8)) == 0;
}

std::size_t lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n' ? 1 : 0;
  return n;
}

} // namespace

TEST_CASE("zerosim plot: a two-variant run gives memory timelines, step breakdown and peak memory PNGs", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path());
  const fs::path pics = tmp.path() / "pics";
  const Outcome o = zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()});
  INFO("stdout: " << o.out << "\nstderr: " << o.err);
  REQUIRE(o.status == 0);
  for (const char* f : {"memory-stage-0-rank0.png", "memory-stage-3-rank0.png", "step-breakdown.png",
                        "peak-memory.png"}) {
    INFO(f);
    CHECK(is_png(pics / f));
    CHECK_THAT(o.out, Contains(f));
  }
  // The scripts are kept, and a second plot of the same run writes the same script text.
  const std::string first = slurp(pics / "memory-stage-3-rank0.gp");
  CHECK_THAT(first, Contains("allocated GPU memory (GiB = 2^30 B)"));
  REQUIRE(zerosim(tmp.path(), {"plot", run.string(), "--out", pics.string()}).status == 0);
  CHECK(slurp(pics / "memory-stage-3-rank0.gp") == first);
}

TEST_CASE("zerosim plot: --format svg writes SVG files into the run directory", "[e2e]") {
  TempDir tmp;
  const fs::path run = small_run(tmp.path());
  const Outcome o = zerosim(tmp.path(), {"plot", (run / "stage-3").string(), "--format", "svg"});
  INFO("stderr: " << o.err);
  REQUIRE(o.status == 0);
  const std::string svg = slurp(run / "stage-3" / "memory-stage-3-rank0.svg");
  CHECK_THAT(svg, Contains("<svg"));
  CHECK_THAT(slurp(run / "stage-3" / "peak-memory.svg"), Contains("</svg>"));
}

TEST_CASE("zerosim plot: a missing directory, a bad format or a missing gnuplot is one line and exit 2", "[e2e]") {
  TempDir tmp;
  const Outcome missing = zerosim(tmp.path(), {"plot", (tmp.path() / "nope").string()});
  CHECK(missing.status == 2);
  CHECK(lines(missing.err) == 1);
  CHECK_THAT(missing.err, Contains("zerosim: ") && Contains("does not exist"));

  const Outcome empty = zerosim(tmp.path(), {"plot", tmp.path().string()});
  CHECK(empty.status == 2);
  CHECK_THAT(empty.err, Contains("neither summary.json nor result.json"));

  const Outcome fmt = zerosim(tmp.path(), {"plot", tmp.path().string(), "--format", "gif"});
  CHECK(fmt.status == 2);
  CHECK_THAT(fmt.err, Contains("--format"));

  const fs::path run = small_run(tmp.path());
  const Outcome no_gnuplot =
      zerosim(tmp.path(), {"plot", run.string()}, {"ZEROSIM_GNUPLOT=" + (tmp.path() / "no-gnuplot").string()});
  CHECK(no_gnuplot.status == 2);
  CHECK(lines(no_gnuplot.err) == 1);
  CHECK_THAT(no_gnuplot.err, Contains("gnuplot not found"));
}
