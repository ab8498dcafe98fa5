#include "apps/cli.hpp"

namespace zerosim::cli {

std::string variant_dir_name(const std::string& label) {
  if (label.empty())
    return {};
  std::string key = label;
  std::string value;
  if (const auto eq = label.find('='); eq != std::string::npos) {
    key = label.substr(0, eq);
    value = label.substr(eq + 1);
  }
  if (const auto dot = key.rfind('.'); dot != std::string::npos)
    key = key.substr(dot + 1);
  std::string raw = value.empty() ? key : key + "-" + value;
  std::string out;
  for (char c : raw) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    const char x = ok ? c : '-';
    if (x == '-' && !out.empty() && out.back() == '-')
      continue; // collapse runs of separators
    out += x;
  }
  while (!out.empty() && (out.back() == '-' || out.back() == '.'))
    out.pop_back();
  while (!out.empty() && (out.front() == '-' || out.front() == '.'))
    out.erase(out.begin());
  return out.empty() ? std::string("variant") : out;
}

} // namespace zerosim::cli
