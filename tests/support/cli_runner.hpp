// Test support: run the built `zerosim` binary (path from the ZEROSIM_EXE compile definition) as a child process,
// capture its exit status and output (scratch directories: tests/support/temp_dir.hpp). Header-only; include it from
// a test target that defines ZEROSIM_EXE and depends on the zerosim target.
#pragma once

#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace zerosim::test {

/// Exit status and captured output of one zerosim run.
struct Outcome {
  int status = -1; ///< exit status, -1 when killed or not exited normally
  std::string out; ///< stdout
  std::string err; ///< stderr
};

/// The whole content of file `p` ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The JSON document in file `p` (a run's result.json, summary.json, plan.json ...); the file must exist and not be
/// empty (REQUIRE), and nlohmann::json::parse throws on malformed text, which fails the test.
inline nlohmann::json read_json(const std::filesystem::path& p) {
  const std::string text = slurp(p);
  REQUIRE(!text.empty());
  return nlohmann::json::parse(text);
}

/// Writes `text` to `dir / name` and returns that path (a test's scenario or config file).
inline std::filesystem::path write_file(const std::filesystem::path& dir, const std::string& name,
                                        const std::string& text) {
  const std::filesystem::path p = dir / name;
  std::ofstream(p) << text;
  return p;
}

/// How run_zerosim starts the child.
struct RunOptions {
  bool chdir = true; ///< run with `dir` as the working directory (else inherit the test's)
  std::vector<std::string> env; ///< "K=V" entries added to the child's environment
  int timeout_seconds = 900; ///< SIGKILL and FAIL after this long (generous: some runs simulate GPT-2 XL)
  /// RLIMIT_FSIZE of the child and of the simulations it forks, in bytes (0 = unlimited): a write past it fails as
  /// on a full disk. The kernel then sends SIGXFSZ, which kills the writer (as the OOM killer's SIGKILL would)
  /// unless `ignore_sigxfsz`, when the write fails with EFBIG instead. No core file is written either way.
  std::uint64_t max_file_bytes = 0;
  bool ignore_sigxfsz = false; ///< see max_file_bytes
};

/// Runs `zerosim args...` with stdout / stderr captured into dir/stdout.txt and dir/stderr.txt.
inline Outcome run_zerosim(const std::filesystem::path& dir, const std::vector<std::string>& args,
                           const RunOptions& opt = {}) {
  const std::filesystem::path out = dir / "stdout.txt";
  const std::filesystem::path err = dir / "stderr.txt";
  std::vector<std::string> argv_s{ZEROSIM_EXE};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    for (const auto& e : opt.env) {
      const auto eq = e.find('=');
      ::setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
    }
    const int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0 || (opt.chdir && ::chdir(dir.c_str()) != 0))
      ::_exit(127);
    if (opt.max_file_bytes > 0) {
      const rlimit fsize{opt.max_file_bytes, opt.max_file_bytes};
      const rlimit no_core{0, 0};
      if (::setrlimit(RLIMIT_FSIZE, &fsize) != 0 || ::setrlimit(RLIMIT_CORE, &no_core) != 0)
        ::_exit(127);
      ::signal(SIGXFSZ, opt.ignore_sigxfsz ? SIG_IGN : SIG_DFL); // exec and fork keep an ignored signal ignored
    }
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt.timeout_seconds);
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      FAIL("zerosim did not finish within " << opt.timeout_seconds << " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Outcome o;
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(out);
  o.err = slurp(err);
  return o;
}

/// Exit status and combined output of a shell command.
struct ShellOutcome {
  int status = -1; ///< exit status, -1 when not exited normally
  std::string text; ///< what the command wrote on the pipe
};

/// Runs `cmd` through /bin/sh (popen) and reads its stdout to the end (add " 2>&1" to `cmd` for stderr too).
inline ShellOutcome run_shell(const std::string& cmd) {
  FILE* p = ::popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  ShellOutcome o;
  char buf[4096];
  for (std::size_t k; (k = std::fread(buf, 1, sizeof buf, p)) > 0;)
    o.text.append(buf, k);
  const int st = ::pclose(p);
  o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return o;
}

/// Number of '\n'-terminated lines in `s` (a one-line error message counts 1).
inline std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s)
    n += c == '\n' ? 1 : 0;
  return n;
}

} // namespace zerosim::test
