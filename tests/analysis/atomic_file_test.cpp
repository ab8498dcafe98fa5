// analysis/atomic_file.hpp: all-or-nothing writes, and what they do to paths that are not plain files.
#include "analysis/atomic_file.hpp"
#include "sim/error.hpp"
#include "tests/support/temp_dir.hpp"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

namespace fs = std::filesystem;
using zerosim::analysis::write_file_atomic;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
} // namespace

TEST_CASE("write_file_atomic: a plain file is replaced whole and no .tmp stays", "[analysis][unit]") {
  const zerosim::test::TempDir dir("atomic");
  const fs::path f = dir.path() / "plan.csv";
  write_file_atomic(f.string(), "old");
  write_file_atomic(f.string(), "new");
  CHECK(slurp(f) == "new");
  CHECK_FALSE(fs::exists(dir.path() / "plan.csv.tmp"));
}

TEST_CASE("write_file_atomic: a symlink is written through, and stays a link", "[analysis][unit]") {
  const zerosim::test::TempDir dir("atomic");
  const fs::path real = dir.path() / "real.csv";
  const fs::path link = dir.path() / "link.csv";
  write_file_atomic(real.string(), "old");
  fs::create_symlink(real, link);
  write_file_atomic(link.string(), "new");
  CHECK(fs::is_symlink(link));
  CHECK(slurp(real) == "new");
}

TEST_CASE("write_file_atomic: a FIFO is written into, not replaced by a file", "[analysis][unit]") {
  // Renaming a temporary file over the FIFO (as over a device such as /dev/stdout) would replace the node and the
  // reader would get nothing.
  const zerosim::test::TempDir dir("atomic");
  const fs::path fifo = dir.path() / "pipe";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  write_file_atomic(fifo.string(), "through the pipe");
  reader.join();
  CHECK(got == "through the pipe");
  CHECK(fs::is_fifo(fifo));
}

TEST_CASE("write_file_atomic: a directory or a missing directory is an error naming the path", "[analysis][unit]") {
  const zerosim::test::TempDir dir("atomic");
  REQUIRE_THROWS_WITH(write_file_atomic(dir.path().string(), "x"), Catch::Contains(": is a directory"));
  const std::string missing = (dir.path() / "nope" / "f.csv").string();
  REQUIRE_THROWS_WITH(write_file_atomic(missing, "x"), Catch::Contains(missing) && !Catch::Contains(".tmp"));
}

TEST_CASE("write_file_atomic: a full device gives the OS reason, not only 'write failed'", "[analysis][unit]") {
  // /dev/full accepts open(2) and fails every write(2) with ENOSPC, as a full disk does; it is a device, so it is
  // written in place. 100 KiB is more than one buffer, so the failure comes from the fill, not the final flush.
  if (!fs::exists("/dev/full")) {
    WARN("no /dev/full: not checked");
    return;
  }
  REQUIRE_THROWS_WITH(write_file_atomic("/dev/full", std::string(100 * 1024, 'x')),
                      Catch::Contains("/dev/full: write failed: No space left on device"));
  REQUIRE_THROWS_WITH(write_file_atomic("/dev/full", "small"),
                      Catch::Contains("/dev/full: write failed: No space left on device"));
}
