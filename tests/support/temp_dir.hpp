// Test support: a scratch directory per test, removed with its content at the end of the scope.
#pragma once

#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <string>
#include <system_error>

namespace zerosim::test {

/// A fresh empty directory under the system temp dir, "zerosim-<tag>-<pid>-<clock ticks>", removed with its
/// content by the destructor (errors ignored).
class TempDir {
 public:
  explicit TempDir(const std::string& tag = "e2e") {
    path_ = std::filesystem::temp_directory_path() /
            ("zerosim-" + tag + "-" + std::to_string(::getpid()) + "-" +
             std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

} // namespace zerosim::test
