// The zerosim exception family (STYLE.md §7): one root, location first.
#pragma once

#include <stdexcept>
#include <string>

namespace zerosim {

/// Root of every error zerosim throws on purpose. A broken internal invariant is an assert, not an Error;
/// running out of simulated memory is a result (OOM), not an Error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input in a scenario, preset, ds_config.json or config.json file, or a `--set` override.
/// what() reads `file:line: key: message` (plus `; hint` when there is one), ready to print as one line.
class ScenarioError : public Error {
 public:
  /// @param file  path of the offending file ("<cli>" for command-line overrides)
  /// @param line  1-based line number, 0 when unknown
  /// @param key   dotted key path, e.g. "zero.reduce_bucket_size"
  /// @param message what was expected and what was found, e.g. "expected a size like '24GiB', got 'abc'"
  /// @param hint  optional suggestion, e.g. "did you mean 'micro_batch'?"
  ScenarioError(std::string file, int line, std::string key, const std::string& message, const std::string& hint = {})
      : Error(format(file, line, key, message, hint)), file_(std::move(file)), line_(line), key_(std::move(key)) {}

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] const std::string& key() const { return key_; }

 private:
  static std::string format(const std::string& file, int line, const std::string& key, const std::string& message,
                            const std::string& hint) {
    std::string s;
    s.reserve(file.size() + key.size() + message.size() + hint.size() + 16);
    s.append(file);
    if (line > 0)
      s.append(":").append(std::to_string(line));
    s.append(": ").append(key).append(": ").append(message);
    if (!hint.empty())
      s.append("; ").append(hint);
    return s;
  }
  std::string file_;
  int line_;
  std::string key_;
};

} // namespace zerosim
