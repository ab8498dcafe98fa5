// Scenario loading: YAML tree -> overrides -> presets and imports -> key table -> cross-field validation -> variants.
// Every value goes through key_table.cpp (one declaration per key, STYLE.md §6) and units.cpp.
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/yaml_text.hpp"

#include "sim/error.hpp"
#include "sim/scenario/key_table.hpp"
#include "sim/scenario/lora.hpp"
#include "sim/scenario/units.hpp"

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string_view>

#ifndef ZEROSIM_DATA_DIR
#define ZEROSIM_DATA_DIR "."
#endif

namespace zerosim::scenario {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr const char* kCli = "<cli>";
constexpr const char* kDefaultTopology = "one-rtx4090";

struct Loc {
  std::string file;
  int line = 0;
};

[[noreturn]] void fail(const Loc& at, const std::string& key, const std::string& msg, const std::string& hint = {}) {
  throw ScenarioError(at.file, at.line, key, msg, hint);
}

int line_of(const YAML::Node& n) {
  if (!n.IsDefined()) // also an absent key looked up through a const node: Mark() would throw InvalidNode
    return 0;
  const YAML::Mark m = n.Mark();
  return m.line < 0 ? 0 : m.line + 1;
}

/// Largest input file read (scenario, preset, config.json, ds_config): far above any real one, and a bound on what
/// a device such as /dev/zero given as a scenario could make zerosim read.
constexpr std::uintmax_t kMaxInputFileBytes = 16ULL << 20;

/// Offset of the first byte of `s` that does not belong to a well-formed UTF-8 sequence (Unicode 15, Table 3-7:
/// no overlong forms, no surrogates, nothing above U+10FFFF), or npos.
std::size_t first_invalid_utf8(const std::string& s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    int len = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3;
      lo = b == 0xE0 ? 0xA0 : 0x80;
      hi = b == 0xED ? 0x9F : 0xBF;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4;
      lo = b == 0xF0 ? 0x90 : 0x80;
      hi = b == 0xF4 ? 0x8F : 0xBF;
    } else {
      return i;
    }
    if (i + static_cast<std::size_t>(len) > n)
      return i;
    for (int k = 1; k < len; ++k) {
      const auto c = static_cast<unsigned char>(s[i + static_cast<std::size_t>(k)]);
      if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF))
        return i;
    }
    i += static_cast<std::size_t>(len);
  }
  return std::string::npos;
}

std::string read_text(const std::string& path, const Loc& at, const std::string& key) {
  std::error_code ec;
  const std::string what = at.file == path ? std::string() : "'" + path + "' ";
  if (fs::is_directory(path, ec))
    fail(at, key, (what.empty() ? std::string("is a directory") : what + "is a directory") + ", expected a file");
  // Regular files, and pipes such as bash's <(...) process substitution, are read; any input is capped so that a
  // device such as /dev/zero given by mistake ends in an error, not in memory exhaustion.
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(at, key, "cannot read file '" + path + "'");
  std::string text;
  std::array<char, 65536> chunk{};
  while (text.size() <= kMaxInputFileBytes && in.read(chunk.data(), chunk.size()).gcount() > 0)
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxInputFileBytes)
    fail(at, key, (what.empty() ? std::string("is") : what + "is") + " larger than 16 MiB, the limit for input files");
  // YAML and JSON are UTF-8 (YAML 1.2 §5.2, RFC 8259 §8.1); a Latin-1 byte would otherwise reach result.json.
  if (const std::size_t bad = first_invalid_utf8(text); bad != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const std::size_t column = bad - (line_start == std::string::npos ? 0 : line_start + 1) + 1;
    const int line =
        1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(bad), '\n'));
    std::array<char, 8> hex{};
    std::snprintf(hex.data(), hex.size(), "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    fail({path, line}, key,
         std::string("not valid UTF-8 (byte ") + hex.data() + " at column " + std::to_string(column) +
             "); save the file as UTF-8");
  }
  return text;
}

/// True when `s` is a scenario name: non-empty, of [a-z0-9-_] only (it names the output directory out/<name>). Both a
/// given `name:` (KeyType::NAME) and one taken from the file's stem are checked by it.
bool is_scenario_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

/// 1-based line of byte offset `pos` in `text` (nlohmann's parse_error::byte is 1-based, pointing past the error).
int line_at(const std::string& text, std::size_t pos) {
  const std::size_t end = std::min(pos > 0 ? pos - 1 : 0, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

/// Byte offset of the opening quote of `key` as a key of the outermost JSON object of `text` (strings skipped, braces
/// and brackets counted), npos when it has no such key: a nested key of the same name (offload_optimizer's
/// "pipeline") is not the top-level one.
std::size_t json_top_level_key(const std::string& text, const std::string& key) {
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == '"') {
      std::size_t end = i + 1;
      while (end < text.size() && text[end] != '"')
        end += text[end] == '\\' ? 2 : 1;
      if (end >= text.size())
        return std::string::npos;
      if (depth == 1 && text.compare(i + 1, end - i - 1, key) == 0 && end - i - 1 == key.size()) {
        std::size_t next = end + 1;
        while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next])))
          ++next;
        if (next < text.size() && text[next] == ':')
          return i;
      }
      i = end;
    }
  }
  return std::string::npos;
}

/// Line of `"key"` in a JSON text, 0 when absent (nlohmann keeps no positions for values): with `after`, the first
/// after `after` (a top-level key when it is one); without, the top-level key, else the first in the text.
int json_line_of_key(const std::string& text, const std::string& key, const std::string& after = {}) {
  std::size_t p = std::string::npos;
  if (after.empty()) {
    p = json_top_level_key(text, key);
  } else {
    std::size_t from = json_top_level_key(text, after);
    if (from == std::string::npos)
      from = text.find("\"" + after + "\"");
    p = text.find("\"" + key + "\"", from == std::string::npos ? 0 : from);
  }
  if (p == std::string::npos)
    p = text.find("\"" + key + "\"");
  return p == std::string::npos ? 0 : line_at(text, p + 1);
}

json parse_json(const std::string& path, const Loc& ref, const std::string& key, std::string& text) {
  text = read_text(path, ref, key);
  // A key given twice in one object: Python's json and nlohmann keep the last value silently, which hides a bad
  // edit; duplicate keys are an error, as in the YAML scenarios (check_duplicate_keys).
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start)
      open_objects.emplace_back();
    else if (event == json::parse_event_t::object_end && !open_objects.empty())
      open_objects.pop_back();
    else if (event == json::parse_event_t::key && duplicate.empty() && !open_objects.empty() &&
             !open_objects.back().insert(parsed.get<std::string>()).second)
      duplicate = parsed.get<std::string>();
    return true;
  };
  json j;
  try {
    j = json::parse(text, track);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    if (auto p = what.find("parse error"); p != std::string::npos)
      what = what.substr(p);
    fail({path, line_at(text, e.byte)}, key, "malformed JSON: " + what);
  }
  if (!duplicate.empty()) {
    const std::string quoted = "\"" + duplicate + "\"";
    const std::size_t first = text.find(quoted);
    const std::size_t second = first == std::string::npos ? first : text.find(quoted, first + 1);
    fail({path, second == std::string::npos ? 0 : line_at(text, second + 1)}, duplicate,
         "duplicate JSON key (first at line " +
             std::to_string(first == std::string::npos ? 0 : line_at(text, first + 1)) +
             "); JSON loaders keep the last value silently",
         "give '" + duplicate + "' once");
  }
  return j;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

} // namespace

bool names_topology_file(std::string_view topology) {
  return topology.find('/') != std::string_view::npos || topology.ends_with(".yaml") || topology.ends_with(".yml");
}

namespace {

bool is_preset_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
  }) && s.find("..") == std::string_view::npos;
}

std::vector<std::string> preset_names(const std::string& dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml")
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// "models", "gpus", "clusters" -> the preset directory.
std::string preset_dir(const std::string& kind) {
  if (kind == "models")
    return (fs::path(data_dir()) / "scenarios" / "models").string();
  return (fs::path(data_dir()) / "topologies" / kind).string();
}

/// yaml-cpp keeps both entries of a repeated mapping key (lookups see one of them): reject every repeat, naming the
/// dotted key and both lines. `prefix` is the dotted path of `n`; `file` is "<cli>" for a --set value.
/// Values visited when checking a document; YAML aliases (*name) re-visit their anchor's value, so a few lines of
/// nested aliases can expand to billions (a "billion laughs" document). Real scenarios have a few hundred.
constexpr long kMaxYamlValues = 1'000'000;

/// The largest size a BYTES key takes, 2^53 B (8 PiB): every whole number of bytes up to it is exact in a double,
/// and result.json writes it as a JSON integer (analysis/json_numbers.hpp whole_value).
constexpr double kMaxByteCount = 9007199254740992.0;

/// The longest duration a SECONDS key takes (a latency, a host launch), 1e6 s (11.6 days): summed over the ops of a
/// run it stays finite; every real one is below a second.
constexpr double kMaxDurationSeconds = 1e6;

/// The smallest efficiency (a fraction of a rate) taken, 1e-6: with rates of at least 1 per second (parse_scalar)
/// every op time stays finite.
constexpr double kMinEfficiency = 1e-6;

/// `v` in as few significant digits as read back to the same double (for messages): 1024.1024, 1e+20.
std::string shortest_text(double v) {
  std::array<char, 32> buf{};
  const auto r = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  return std::string(buf.data(), r.ptr);
}

/// `key_line`: the line of the key whose value `n` is (0 at the top): an alias's own node carries its anchor's line.
void check_duplicate_keys(const YAML::Node& n, const std::string& file, const std::string& prefix, long& budget,
                          int key_line = 0) {
  if (--budget < 0)
    fail({file, file == kCli ? 0 : (key_line > 0 ? key_line : line_of(n))}, prefix.empty() ? "yaml" : prefix,
         "more than " + std::to_string(kMaxYamlValues) +
             " values once YAML aliases (*name) are expanded; write the values out or use fewer nested aliases");
  if (n.IsSequence()) {
    for (const auto& item : n)
      check_duplicate_keys(item, file, prefix, budget, key_line);
    return;
  }
  if (!n.IsMap())
    return;
  std::map<std::string, int> seen; // key -> line of its first occurrence
  for (const auto& kv : n) {
    const std::string k = yaml_text(kv.first);
    const std::string path = prefix.empty() ? k : prefix + "." + k;
    const int line = file == kCli ? 0 : line_of(kv.first);
    if (const auto it = seen.find(k); it != seen.end()) {
      if (line > 0 && it->second == line)
        fail({file, line}, path, "duplicate key: given twice on line " + std::to_string(line),
             "write '" + k + ":' once");
      if (line > 0 && it->second > 0)
        fail({file, line}, path,
             "duplicate key: first at line " + std::to_string(it->second) + ", again at line " + std::to_string(line),
             "merge the two '" + k + ":' entries into one");
      fail({file, line}, path, "duplicate key", "write '" + k + ":' once");
    }
    seen.emplace(k, line);
    check_duplicate_keys(kv.second, file, path, budget, line);
  }
}

/// The line of the "---" marker that starts the document whose first value is on `value_line` (1-based): the last
/// line at or before it that starts with "---" followed by a space or the line's end; `value_line` if none.
int document_start_line(const std::string& text, int value_line) {
  int marker = 0;
  int n = 1;
  for (std::size_t at = 0; at < text.size() && n <= value_line; ++n) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    if (text.compare(at, 3, "---") == 0 &&
        (at + 3 == end || text[at + 3] == ' ' || text[at + 3] == '\t' || text[at + 3] == '\r'))
      marker = n;
    at = end + 1;
  }
  return marker > 0 ? marker : value_line;
}

YAML::Node load_yaml_file(const std::string& path, const Loc& ref, const std::string& key) {
  const std::string text = read_text(path, ref, key);
  YAML::Node root;
  try {
    // LoadAll, not Load: Load reads the first document and drops the rest without a word, so keys written after a
    // "---" line would silently not apply.
    const std::vector<YAML::Node> docs = YAML::LoadAll(text);
    if (!docs.empty())
      root = docs.front();
    for (std::size_t d = 1; d < docs.size(); ++d)
      if (!docs[d].IsNull())
        fail({path, document_start_line(text, line_of(docs[d]))}, "yaml",
             "a second YAML document (after a '---' line): zerosim reads one document per file",
             "remove the '---' line to keep these keys in the scenario, or move them to a file of their own");
  } catch (const YAML::ParserException& e) {
    // A tab in the indentation is a common cause whose parser message ("illegal map value") does not say so: name
    // the first line that indents with one, at or before the error.
    std::string hint;
    const int error_line = e.mark.line < 0 ? 0 : e.mark.line + 1;
    int n = 1;
    for (std::size_t at = 0; at < text.size() && (error_line == 0 || n <= error_line); ++n) {
      const std::size_t end = std::min(text.find('\n', at), text.size());
      const std::size_t lead = text.find_first_not_of(' ', at);
      if (lead < end && text[lead] == '\t') {
        hint = " (line " + std::to_string(n) + " indents with a tab character: YAML indents with spaces only)";
        break;
      }
      at = end + 1;
    }
    fail({path, error_line}, "yaml", "malformed YAML: " + e.msg + hint);
  }
  long budget = kMaxYamlValues;
  check_duplicate_keys(root, path, "", budget);
  return root;
}

std::string type_name(KeyType t, std::string_view choices) {
  switch (t) {
  case KeyType::STRING:
    return "a string";
  case KeyType::NAME:
    return "a name of [a-z0-9-_]";
  case KeyType::INT:
    return "a whole number";
  case KeyType::BOOL:
    return "true or false";
  case KeyType::REAL:
    return "a number";
  case KeyType::ELEMENTS:
    return "an element count like 5e8";
  case KeyType::BYTES:
    return "a size like '24GiB'";
  case KeyType::BYTE_RATE:
    return "a bandwidth like '450GBps'";
  case KeyType::SECONDS:
    return "a duration like '2us'";
  case KeyType::FLOP_RATE:
    return "a rate like '165.2TFLOPS'";
  case KeyType::FREQUENCY:
    return "a frequency like '2.7GHz'";
  case KeyType::ENUM:
  case KeyType::OFFLOAD:
    return "one of " + std::string(choices);
  case KeyType::SPECIAL:
    return "a value";
  }
  return "a value";
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t p = s.find(sep, start);
    out.emplace_back(s.substr(start, p == std::string_view::npos ? std::string_view::npos : p - start));
    if (p == std::string_view::npos)
      return out;
    start = p + 1;
  }
}

/// Parses scalar `text` for key `spec` (all checks of the key table), reporting errors as `key` at `at`.
KeyValue parse_scalar(const KeySpec& spec, const std::string& text, const Loc& at, const std::string& key) {
  KeyValue v;
  v.text = text;
  const ValueLocation w{at.file, at.line, key};
  const auto bad = [&](const std::string& extra = {}) {
    // An empty YAML value (`key:` or `--set key=`) is a null, which YAML writes back as '~'.
    const bool empty = text.empty() || text == "~" || text == "null";
    fail(at, key,
         "expected " + type_name(spec.type, spec.choices) + ", got " + (empty ? "an empty value" : "'" + text + "'") +
             extra);
  };
  bool numeric = false;
  switch (spec.type) {
  case KeyType::STRING:
  case KeyType::SPECIAL:
    break;
  case KeyType::NAME:
    if (!is_scenario_name(text))
      bad();
    break;
  case KeyType::INT: {
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, v.integer);
    if (ec != std::errc{} || p != e) {
      // Exponent notation of a whole number (4e3, as element counts take it) is accepted; 1.5 or 1e-3 are not.
      double d = 0;
      auto [pd, ecd] = std::from_chars(b, e, d);
      if (ecd != std::errc{} || pd != e || !std::isfinite(d) || d != std::floor(d))
        bad();
      if (std::fabs(d) > static_cast<double>(std::numeric_limits<int>::max()))
        fail(at, key,
             "'" + text + "' is out of range (at most " + std::to_string(std::numeric_limits<int>::max()) + ")");
      v.integer = static_cast<long long>(d);
    }
    // Whole-number keys are counts (nodes, GPUs, layers, heads, SMs): beyond 2^31 - 1 they would wrap when stored.
    if (v.integer > std::numeric_limits<int>::max() || v.integer < std::numeric_limits<int>::min())
      fail(at, key, "'" + text + "' is out of range (at most " + std::to_string(std::numeric_limits<int>::max()) + ")");
    v.real = static_cast<double>(v.integer);
    numeric = true;
    break;
  }
  case KeyType::BOOL:
    if (text == "true" || text == "True" || text == "TRUE")
      v.boolean = true;
    else if (text == "false" || text == "False" || text == "FALSE")
      v.boolean = false;
    else
      bad();
    break;
  case KeyType::REAL: {
    const char* b = text.data();
    const char* e = b + text.size();
    auto [p, ec] = std::from_chars(b, e, v.real);
    if (ec != std::errc{} || p != e || !std::isfinite(v.real))
      bad();
    numeric = true;
    break;
  }
  case KeyType::ELEMENTS:
    if (text == "auto") {
      v.is_auto = true;
      return v;
    }
    // A negative count of a key that must be positive gets the message 0 gets: parse_elements' "non-negative"
    // would suggest that 0 is fine.
    if (spec.check == KeyCheck::POSITIVE && !text.empty() && text.front() == '-')
      fail(at, key, "must be positive, got '" + text + "'");
    // DeepSpeed's default model_persistence_threshold is sys.maxsize (2^63 - 1), beyond parse_elements' range: that
    // exact value, as a ds_config written from DeepSpeed's defaults holds it, means no cap.
    if (spec.path == "zero.stage3_model_persistence_threshold" && text == "9223372036854775807") {
      v.integer = ZeroConfig::kNoPersistenceCap;
      v.real = static_cast<double>(v.integer);
      numeric = true;
      break;
    }
    v.integer = parse_elements(text, w);
    v.real = static_cast<double>(v.integer);
    numeric = true;
    break;
  case KeyType::BYTES: {
    // DeepSpeed's aio.block_size is a byte count: a bare whole number there is bytes, as in a ds_config's aio section.
    const bool aio = spec.path == "zero.aio.block_size";
    const bool bare =
        !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    const double bytes = parse_bytes(aio && bare ? text + "B" : text, w).value();
    // A size is a whole number of bytes, kept exact in a double and written as a JSON integer (json_numbers.hpp):
    // at most 2^53 B (8 PiB), far above any memory or request size.
    // gpu.memory has its own, lower limit with a better message (1e15 B, validate_limits).
    if (std::fabs(bytes) > kMaxByteCount && spec.path != "gpu.memory")
      fail(at, key, "'" + text + "' is out of range (at most 2^53 B = 8 PiB)");
    if (aio && bytes != std::floor(bytes))
      // DeepSpeed hands aio.block_size to its C++ aio handle as an int (swap_tensor/aio_config.py get_aio_config
      // passes the value through; csrc/aio/py_lib/deepspeed_py_io_handle.h v0.18.5 l.27 takes `const int
      // block_size`, and pybind11 does not convert a Python float to int), so a fraction is refused there too.
      fail(at, key, "expected a whole number of bytes, got '" + text + "' (" + shortest_text(bytes) + " B)");
    // A capacity written with a decimal prefix or a fraction of a binary one ("79.1GiB" = 84932978278.4 B) is a
    // person's rounding of a whole number of bytes: taken as the nearest byte.
    v.real = std::round(bytes);
    numeric = true;
    break;
  }
  case KeyType::BYTE_RATE:
    v.real = parse_byte_rate(text, w).value();
    numeric = true;
    break;
  case KeyType::SECONDS:
    v.real = parse_seconds(text, w).value();
    numeric = true;
    break;
  case KeyType::FLOP_RATE:
    v.real = parse_flop_rate(text, w).value();
    numeric = true;
    break;
  case KeyType::FREQUENCY:
    v.real = parse_frequency(text, w).value();
    numeric = true;
    break;
  case KeyType::ENUM:
  case KeyType::OFFLOAD: {
    const std::vector<std::string> choices = split(spec.choices, '|');
    if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
      // Formats a user may well mean but zerosim does not simulate: say so instead of a near spelling.
      if (key == "training.precision" &&
          (text == "bfloat16" || text == "float16" || text == "half" || text == "float32" || text == "float"))
        fail(at, key, "expected one of " + std::string(spec.choices) + ", got '" + text + "'",
             text == "bfloat16"                     ? "did you mean 'bf16'?"
             : text == "float32" || text == "float" ? "did you mean 'fp32'?"
                                                    : "did you mean 'fp16'?");
      // TF32 is how fp32 matmuls run (torch.backends.cuda.matmul.allow_tf32), not a format of params and grads:
      // refused with the two keys that say it, rather than silently setting a second key from this one.
      if (key == "training.precision" && text == "tf32")
        fail(at, key,
             "expected one of " + std::string(spec.choices) +
                 ", got 'tf32': TF32 is the tensor-core mode of fp32 "
                 "matmuls, not a storage precision",
             "use training.precision: fp32 with training.tf32: true");
      if (key == "training.precision" && text == "fp8")
        fail(at, key,
             "expected one of " + std::string(spec.choices) +
                 ", got 'fp8': FP8 training (Transformer Engine) is not "
                 "simulated");
      fail(at, key, "expected one of " + std::string(spec.choices) + ", got '" + text + "'",
           did_you_mean(text, choices));
    }
    break;
  }
  }
  if (numeric) {
    switch (spec.check) {
    case KeyCheck::NONE:
      break;
    case KeyCheck::POSITIVE:
      if (!(v.real > 0))
        fail(at, key, "must be positive, got '" + text + "'");
      break;
    case KeyCheck::NON_NEGATIVE:
      if (!(v.real >= 0))
        fail(at, key, "must not be negative, got '" + text + "'");
      break;
    case KeyCheck::FRACTION:
      if (!(v.real > 0 && v.real <= 1))
        fail(at, key, "must be a fraction in (0, 1], got '" + text + "'");
      break;
    case KeyCheck::STAGE:
      if (v.integer < 0 || v.integer > 3)
        fail(at, key, "ZeRO stage must be 0, 1, 2 or 3, got '" + text + "'");
      break;
    }
    // Every simulated time is bytes or FLOPs over a rate times an efficiency, or a sum of durations: these bounds
    // keep it finite (a rate of 1e-300 or a launch of 1e308 s gave an infinite op time, which SimGrid aborts on or
    // never completes), far outside any hardware. 0 stays where the key's check allows it ("none").
    const bool rate =
        spec.type == KeyType::BYTE_RATE || spec.type == KeyType::FLOP_RATE || spec.type == KeyType::FREQUENCY;
    if (rate && v.real > 0 && v.real < 1)
      fail(at, key, "'" + text + "' is below 1 " + std::string(spec.unit) + ", the smallest rate taken");
    if (spec.type == KeyType::SECONDS && v.real > kMaxDurationSeconds)
      fail(at, key, "'" + text + "' is out of range (at most 1e6 s per op)");
    const std::string_view path = spec.path;
    if (spec.type == KeyType::REAL && path.size() >= 10 && path.substr(path.size() - 10) == "efficiency" &&
        v.real < kMinEfficiency)
      fail(at, key, "'" + text + "' is below 1e-6, the smallest efficiency taken");
  }
  return v;
}

// ---- DeepSpeed's accepted `zero_optimization` fields.
// Source: deepspeedai/DeepSpeed master at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641,
// deepspeed/runtime/zero/config.py (class DeepSpeedZeroConfig) and deepspeed/runtime/zero/offload_config.py
// (DeepSpeedZeroOffloadParamConfig, DeepSpeedZeroOffloadOptimizerConfig). Their base DeepSpeedConfigModel
// (deepspeed/runtime/config_utils.py) sets extra="forbid" (an unknown field is an error) and populate_by_name=True
// (a field is accepted under its name and under its alias), so both spellings are listed.

/// One accepted field: its DeepSpeed name and the zerosim key it sets ("" = accepted but not modelled: ignored).
struct DsField {
  std::string_view name;
  std::string_view key;
};

const std::vector<DsField>& ds_zero_fields() {
  static const std::vector<DsField> fields = {
      {"stage", "zero.stage"},
      {"contiguous_gradients", "zero.contiguous_gradients"},
      {"reduce_scatter", "zero.reduce_scatter"},
      {"reduce_bucket_size", "zero.reduce_bucket_size"},
      {"use_multi_rank_bucket_allreduce", "zero.use_multi_rank_bucket_allreduce"},
      {"allgather_partitions", ""},
      {"allgather_bucket_size", "zero.allgather_bucket_size"},
      {"overlap_comm", "zero.overlap_comm"},
      {"load_from_fp32_weights", ""},
      {"elastic_checkpoint", ""},
      {"offload_param", "zero.offload_param"},
      {"offload_optimizer", "zero.offload_optimizer"},
      {"zenflow", ""},
      {"sub_group_size", "zero.sub_group_size"},
      {"cpu_offload_param", ""}, // deprecated bool -> offload_param {device: cpu}; handled by the importer
      {"cpu_offload_use_pin_memory", ""}, // deprecated, sets nothing
      {"cpu_offload", ""}, // deprecated bool -> offload_optimizer {device: cpu}; handled by the importer
      {"prefetch_bucket_size", "zero.stage3_prefetch_bucket_size"},
      {"stage3_prefetch_bucket_size", "zero.stage3_prefetch_bucket_size"},
      {"param_persistence_threshold", "zero.stage3_param_persistence_threshold"},
      {"stage3_param_persistence_threshold", "zero.stage3_param_persistence_threshold"},
      {"model_persistence_threshold", "zero.stage3_model_persistence_threshold"},
      {"stage3_model_persistence_threshold", "zero.stage3_model_persistence_threshold"},
      {"max_live_parameters", "zero.stage3_max_live_parameters"},
      {"stage3_max_live_parameters", "zero.stage3_max_live_parameters"},
      {"max_reuse_distance", "zero.stage3_max_reuse_distance"},
      {"stage3_max_reuse_distance", "zero.stage3_max_reuse_distance"},
      {"gather_16bit_weights_on_model_save", ""},
      {"stage3_gather_16bit_weights_on_model_save", ""},
      {"module_granularity_threshold", ""},
      {"stage3_module_granularity_threshold", ""},
      {"use_all_reduce_for_fetch_params", "zero.stage3_use_all_reduce_for_fetch_params"},
      {"stage3_use_all_reduce_for_fetch_params", "zero.stage3_use_all_reduce_for_fetch_params"},
      {"allgather_sequential", "zero.stage3_allgather_sequential"},
      {"stage3_allgather_sequential", "zero.stage3_allgather_sequential"},
      {"stage3_gather_fp16_weights_on_model_save", ""},
      {"ignore_unused_parameters", ""},
      {"legacy_stage1", ""},
      {"round_robin_gradients", "zero.round_robin_gradients"},
      {"zero_hpz_partition_size", ""},
      {"zero_quantized_weights", ""},
      {"zero_quantized_nontrainable_weights", ""},
      {"zero_quantized_gradients", ""},
      {"zeropp_loco_param", ""},
      {"mics_shard_size", ""},
      {"mics_hierarchical_params_gather", ""},
      {"memory_efficient_linear", ""},
      {"pipeline_loading_checkpoint", ""},
      {"override_module_apply", ""},
      {"log_trace_cache_warnings", ""},
      {"enable_sanity_checks", ""},
      {"save_muon_momentum_buffer_in_memory", ""},
      {"leaf_module", ""},
  };
  return fields;
}

/// ZeRO++ (Wang et al. 2023, arXiv 2306.10209) and MiCS (Zhang et al. 2022, arXiv 2205.00119) fields among the
/// accepted-but-not-modelled ones, with the check DeepSpeed's type makes and whether a value changes behaviour
/// (is not the default of deepspeed/runtime/zero/config.py: zero_hpz_partition_size 1, the quantization flags
/// false, zeropp_loco_param None, mics_shard_size -1, mics_hierarchical_params_gather false).
enum class DsFieldKind { BOOL, INT, OBJECT };
struct DsUnmodelled {
  std::string_view name;
  DsFieldKind kind;
  std::int64_t active_above; ///< INT: the value changes behaviour when greater than this
};
const std::vector<DsUnmodelled>& ds_unmodelled_fields() {
  static const std::vector<DsUnmodelled> fields = {
      {"zero_hpz_partition_size", DsFieldKind::INT, 1}, // hpZ when > 1 (partition_parameters.py)
      {"zero_quantized_weights", DsFieldKind::BOOL, 0},
      {"zero_quantized_nontrainable_weights", DsFieldKind::BOOL, 0},
      {"zero_quantized_gradients", DsFieldKind::BOOL, 0},
      {"zeropp_loco_param", DsFieldKind::OBJECT, 0},
      {"mics_shard_size", DsFieldKind::INT, 0}, // MiCS when > 0 (engine.py _configure_zero_optimizer)
      {"mics_hierarchical_params_gather", DsFieldKind::BOOL, 0},
  };
  return fields;
}

// ---- DeepSpeed's top-level ds_config keys.
// Source: deepspeedai/DeepSpeed master at commit edaa7221267243c7be7fb49c5d5f5c4fb97b4641: the keys
// DeepSpeedConfig._initialize_params reads (deepspeed/runtime/config.py, names in deepspeed/runtime/constants.py),
// plus those its sub-configs read from the top level: tensorboard / wandb / csv_monitor / comet
// (deepspeed/monitor/config.py), flops_profiler (deepspeed/profiling/constants.py), comms_logger
// (deepspeed/comm/constants.py), compression_training (deepspeed/compression/constants.py), data_efficiency and
// curriculum_learning (deepspeed/runtime/data_pipeline/constants.py), elasticity, autotuning, nebula,
// datastates_ckpt, pipeline, tensor_parallel (deepspeed/runtime/tensor_parallel/config.py), expert_parallel and
// sequence_parallel_size (config.py). DeepSpeed ignores a top-level key it does not read; zerosim does not
// (classify_ds_top_level).

/// How the import treats a top-level ds_config key.
enum class DsTopKind {
  IMPORTED, ///< read by import_deepspeed
  NOTED, ///< a DeepSpeed key not simulated: one note when it is set (not null, false or {"enabled": false})
  PARALLEL, ///< another parallelism: an error when its size is above 1 (zerosim simulates data parallelism only)
};
struct DsTopKey {
  std::string_view name;
  DsTopKind kind;
  std::string_view why; ///< NOTED: what it does and why the simulation leaves it out
};
const std::vector<DsTopKey>& ds_top_level_keys() {
  constexpr auto I = DsTopKind::IMPORTED;
  constexpr auto N = DsTopKind::NOTED;
  constexpr auto P = DsTopKind::PARALLEL;
  static const std::vector<DsTopKey> keys = {
      {"train_batch_size", I, ""},
      {"train_micro_batch_size_per_gpu", I, ""},
      {"gradient_accumulation_steps", I, ""},
      {"gradient_clipping", I, ""},
      {"fp16", I, ""},
      {"bf16", I, ""},
      {"bfloat16", I, ""},
      {"optimizer", I, ""},
      {"zero_optimization", I, ""},
      {"zero_force_ds_cpu_optimizer", I, ""},
      {"aio", I, ""},
      {"activation_checkpointing", I, ""},
      {"data_types", I, ""},
      {"communication_data_type", I, ""},
      {"timers", I, ""},
      {"tensor_parallel", P, ""},
      {"pipeline", P, ""},
      {"sequence_parallel_size", P, ""},
      {"steps_per_print", N, "a logging interval; the simulated step and memory do not depend on it"},
      {"wall_clock_breakdown", N, "per-phase timers that synchronize the device; not simulated"},
      {"memory_breakdown", N, "memory logging; not simulated"},
      {"dump_state", N, "logs the config at start; not part of a step"},
      {"log_level", N, "logging; not part of a step"},
      {"flops_profiler", N, "the FLOPs profiler (its profile_step is slower); not simulated"},
      {"comms_logger", N, "communication logging; not simulated"},
      {"tensorboard", N, "monitoring output; not part of a step"},
      {"wandb", N, "monitoring output; not part of a step"},
      {"csv_monitor", N, "monitoring output; not part of a step"},
      {"comet", N, "monitoring output; not part of a step"},
      {"scheduler", N, "the learning-rate schedule; step time and memory do not depend on it"},
      {"checkpoint", N, "checkpoint saving and loading; not part of a training step"},
      {"nebula", N, "checkpoint saving (Nebula); not part of a training step"},
      {"datastates_ckpt", N, "checkpoint saving (DataStates); not part of a training step"},
      {"dataloader_drop_last", N, "a data loader setting; not simulated"},
      {"zero_allow_untested_optimizer", N, "a permission flag; no effect on the simulation"},
      {"amp", N, "NVIDIA Apex AMP; not simulated (use fp16 or bf16)"},
      {"torch_autocast", N, "torch.autocast mixed precision; not simulated (use fp16 or bf16)"},
      {"sparse_attention", N, "block-sparse attention kernels; simulated as dense attention"},
      {"compression_training", N, "compression (quantization, pruning, layer reduction); not simulated"},
      {"weight_quantization", N, "weight quantization; not simulated"},
      {"quantize_training", N, "quantization-aware training; not simulated"},
      {"data_efficiency", N, "data sampling and routing (random-LTD, curriculum); not simulated"},
      {"curriculum_learning", N, "curriculum learning (changes the sequence length over a run); not simulated"},
      {"progressive_layer_drop", N, "skips layers on some steps; not simulated"},
      {"eigenvalue", N, "periodic Hessian eigenvalue estimation; not simulated"},
      {"hybrid_engine", N, "DeepSpeed-Chat's generation engine; not simulated"},
      {"compile", N, "torch.compile of the model; not simulated (kernels are priced as eager PyTorch's)"},
      {"graph_harvesting", N, "CUDA graph capture; not simulated"},
      {"autotuning", N, "the autotuner's settings (read by the deepspeed launcher); not part of a step"},
      {"elasticity", N,
       "elastic training, which can rewrite the batch sizes; not applied (the batch keys are read "
       "as written)"},
      {"expert_parallel", N, "expert parallelism of MoE layers; not simulated (the models here are dense)"},
      {"use_data_before_expert_parallelism", N, "MoE process-group order; not simulated"},
      {"seq_parallel_communication_data_type", N, "sequence parallelism's communication dtype; not simulated"},
      {"prescale_gradients", N,
       "gradient scaling before the reduction; simulated as DeepSpeed's default, scaling "
       "after it"},
      {"gradient_predivide_factor", N, "a split of the gradient averaging; simulated as DeepSpeed's default 1.0"},
      {"gradient_allreduce_op", N, "the gradient reduction op; simulated as DeepSpeed's default, mean"},
      {"sparse_gradients", N, "sparse embedding gradients; not simulated"},
      {"disable_allgather", N, "a legacy flag; not simulated"},
      {"managed_gradient_accumulation", N, "not simulated"},
      {"vocabulary_size", N, "a sanity check of the vocabulary; the model's vocab is used"},
  };
  return keys;
}

/// Fields of DeepSpeed's offload_param map (DeepSpeedZeroOffloadParamConfig); `device`, `buffer_count`,
/// `buffer_size`, `max_in_cpu` and `pin_memory` are read.
const std::vector<std::string>& ds_offload_param_fields() {
  static const std::vector<std::string> f = {"device",      "nvme_path",  "buffer_count",
                                             "buffer_size", "max_in_cpu", "pin_memory"};
  return f;
}

/// Fields of DeepSpeed's offload_optimizer map (DeepSpeedZeroOffloadOptimizerConfig); `device`, `ratio`,
/// `buffer_count`, `pin_memory`, `pipeline_read` and `pipeline_write` are read.
const std::vector<std::string>& ds_offload_optimizer_fields() {
  static const std::vector<std::string> f = {"device",        "nvme_path",         "buffer_count", "pin_memory",
                                             "pipeline_read", "pipeline_write",    "fast_init",    "ratio",
                                             "super_offload", "cpuadam_cores_perc"};
  return f;
}

/// What a field of DeepSpeed's offload maps that zerosim reads but does not model takes (offload_config.py), and its
/// default there.
struct OffloadExtra {
  enum Kind { BOOL, COUNT, FRACTION, PATH } kind;
  double dflt; ///< BOOL: 0 = false; COUNT, FRACTION: the number; PATH: unused (default null)
};

/// The unmodelled fields of the offload maps: nvme_path (a path or null: where the swap files go, which changes
/// nothing simulated), fast_init, super_offload (bools, false) and cpuadam_cores_perc (a number in [0, 1], 0.8). Null
/// for a modelled field (device, buffer_*, max_in_cpu, pin_memory, pipeline_read, pipeline_write, ratio).
const OffloadExtra* offload_extra(std::string_view field) {
  static const std::pair<std::string_view, OffloadExtra> kExtras[] = {{"nvme_path", {OffloadExtra::PATH, 0}},
                                                                      {"fast_init", {OffloadExtra::BOOL, 0}},
                                                                      {"super_offload", {OffloadExtra::BOOL, 0}},
                                                                      {"cpuadam_cores_perc",
                                                                       {OffloadExtra::FRACTION, 0.8}}};
  for (const auto& [name, e] : kExtras)
    if (name == field)
      return &e;
  return nullptr;
}

/// Checks an unmodelled offload field's value as DeepSpeed's pydantic model does (`is_bool`, `is_number`, `is_null`,
/// `is_string` describe it; `number` holds a number's value). Returns the error text ("" when valid) and sets
/// `active` when the value is not DeepSpeed's default (the report then notes that it is not modelled).
std::string check_offload_extra(const OffloadExtra& e, bool is_bool, bool bool_value, bool is_number, double number,
                                bool is_null, bool is_string, bool& active) {
  active = false;
  switch (e.kind) {
  case OffloadExtra::BOOL:
    if (!is_bool)
      return "expected true or false";
    active = bool_value != (e.dflt != 0);
    return {};
  case OffloadExtra::COUNT:
    if (is_bool || !is_number || !(number >= 0) || number != std::floor(number))
      return "expected a whole number >= 0";
    active = number != e.dflt;
    return {};
  case OffloadExtra::FRACTION:
    if (is_bool || !is_number || !(number >= 0 && number <= 1))
      return "expected a number in [0, 1]";
    active = number != e.dflt;
    return {};
  case OffloadExtra::PATH:
    if (!is_null && !is_string)
      return "expected a path or null";
    return {};
  }
  return {};
}

const std::vector<std::string>& ds_offload_fields(std::string_view key) {
  return key == "zero.offload_param" ? ds_offload_param_fields() : ds_offload_optimizer_fields();
}

/// The flat key a modelled field of DeepSpeed's offload map sets ("" for the fields not modelled): the swap buffers'
/// count and size.
std::string offload_field_key(std::string_view offload_key, std::string_view field) {
  const bool param = offload_key == "zero.offload_param";
  if (field == "buffer_count")
    return param ? "zero.offload_param_buffer_count" : "zero.offload_optimizer_buffer_count";
  if (field == "buffer_size" && param)
    return "zero.offload_param_buffer_size";
  if (field == "max_in_cpu" && param)
    return "zero.offload_param_max_in_cpu";
  if (field == "pin_memory")
    return param ? "zero.offload_param_pin_memory" : "zero.offload_optimizer_pin_memory";
  if ((field == "pipeline_read" || field == "pipeline_write") && !param)
    return "zero.offload_optimizer_" + std::string(field);
  return {};
}

/// Is `path` the flat key of a field of DeepSpeed's offload map (zero.offload_optimizer_pin_memory, ...)?
bool is_offload_field_key(std::string_view path) {
  for (const char* offload : {"zero.offload_param", "zero.offload_optimizer"})
    for (const char* field :
         {"buffer_count", "buffer_size", "max_in_cpu", "pin_memory", "pipeline_read", "pipeline_write"})
      if (path == offload_field_key(offload, field))
        return true;
  return false;
}

/// Is `path` a key an override or `compare:` may set? Returns the table path it maps to ("" if none).
std::string settable_path(const std::string& path) {
  if (path.rfind("cluster.gpu.", 0) == 0) {
    const std::string alias = "gpu." + path.substr(12);
    return find_key(alias) ? alias : std::string{};
  }
  if (path.rfind("cluster.cpu.", 0) == 0) {
    const std::string alias = "cpu." + path.substr(12);
    return find_key(alias) ? alias : std::string{};
  }
  if (path == "gpu" || path.rfind("gpu.", 0) == 0 || path == "cpu" || path.rfind("cpu.", 0) == 0)
    return {};
  if (find_key(path) || is_section(path))
    return path;
  return {};
}

/// The field a key of `path` that accepts a scalar-or-map form keeps its scalar in, when a map is needed to set
/// another field below it: `preset` for `model: gpt2-xl` and `cluster.gpu` / `cluster.cpu` presets, `device` for
/// an offload shorthand (`zero.offload_optimizer: cpu` = DeepSpeed's {device: cpu}); "" for any other path.
std::string scalar_form_field(const std::string& path) {
  if (path == "model" || path == "cluster.gpu" || path == "cluster.cpu")
    return "preset";
  if (const KeySpec* spec = find_key(path); spec != nullptr && spec->type == KeyType::OFFLOAD)
    return "device";
  return {};
}

/// The fields a map written for key `path` may hold, for a key whose value is a scalar or a map of named fields
/// (KeyType::OFFLOAD: DeepSpeed's offload map); nullptr for any other key (sections and presets are checked by the
/// key table itself).
const std::vector<std::string>* map_form_fields(const std::string& path) {
  if (const KeySpec* spec = find_key(path); spec != nullptr && spec->type == KeyType::OFFLOAD)
    return &ds_offload_fields(spec->path);
  return nullptr;
}

std::vector<std::string> all_paths() {
  std::vector<std::string> out;
  for (const KeySpec& k : key_table())
    if (k.path.rfind("cpu.", 0) == 0) // set in a scenario as cluster.cpu.<key>
      out.emplace_back("cluster." + std::string(k.path));
    else if (k.path.rfind("gpu.", 0) != 0)
      out.emplace_back(k.path);
  return out;
}

/// Sets `path` (dotted) in `root` to `value`, creating maps on the way. A scalar of a key with a scalar-or-map form
/// met on the way becomes that map (scalar_form_field): "model.layers=2" works on `model: gpt2-xl` ({preset:
/// gpt2-xl}), "zero.offload_optimizer.pin_memory=true" on `offload_optimizer: cpu` ({device: cpu}, newuser30 #12).
void set_path(YAML::Node node, const std::vector<std::string>& parts, std::size_t i, const YAML::Node& value,
              const Loc& at, const std::string& key) {
  const std::string& k = parts[i];
  if (i + 1 == parts.size()) {
    node[k] = value;
    return;
  }
  YAML::Node child = node[k];
  std::string prefix;
  for (std::size_t j = 0; j <= i; ++j)
    prefix += (j ? "." : "") + parts[j];
  const std::string scalar_field = scalar_form_field(prefix);
  if (!child.IsDefined() || child.IsNull()) {
    node[k] = YAML::Node(YAML::NodeType::Map);
  } else if (child.IsScalar() && !scalar_field.empty()) {
    YAML::Node m(YAML::NodeType::Map);
    m[scalar_field] = child.Scalar();
    node[k] = m;
  } else if (!child.IsMap()) {
    fail(at, key, "cannot set a key below '" + k + "', which is not a map");
  }
  set_path(node[k], parts, i + 1, value, at, key);
}

/// True for an override value YAML reads as null, written out: `null`, `Null`, `NULL` or `~` (not an empty value,
/// which is more likely an unfinished edit and stays an error).
bool is_null_override(const std::string& value) {
  return value == "null" || value == "Null" || value == "NULL" || value == "~";
}

/// `--set KEY=null`: KEY back to its default, as if the scenario did not write it (newuser29 #21): removes `path`
/// (dotted) from `root`; the preset, the imported ds_config.json or the key table's default then decides. Nothing
/// to remove (the key is not written, or a scalar such as `model: gpt2-xl` stands on the way) is no error.
void remove_path(YAML::Node node, const std::vector<std::string>& parts, std::size_t i) {
  if (!node.IsMap())
    return;
  if (i + 1 == parts.size()) {
    node.remove(parts[i]);
    return;
  }
  YAML::Node child = node[parts[i]];
  if (child.IsDefined() && child.IsMap())
    remove_path(child, parts, i + 1);
}

/// Applies one `--set key=value` (value text `text`) to `root`: set_path, or remove_path for a null value of a key
/// whose null means nothing else (not model.head_dim: its null is hidden / heads, also over a preset that sets it).
void apply_override(YAML::Node& root, const std::string& key, const std::string& text, const Loc& at) {
  if (is_null_override(text) && key != "model.head_dim") {
    remove_path(root, split(key, '.'), 0);
    return;
  }
  set_path(root, split(key, '.'), 0, YAML::Load(text), at, key);
}

/// Where a name of Hugging Face (TrainingArguments, PEFT, tokenizer) or of a DeepSpeed config lands in a scenario
/// (review29 17): the one table the unknown-key hints (hf_name_hint, the resolver's ds_key_hint) and the ds_config
/// import of the batch keys read. `key` is the scenario key that sets the same thing, `value` the value it takes
/// when the name is a flag (bf16 -> training.precision: bf16; "" otherwise). `ds_batch`: a top-level ds_config key
/// that the import maps to `key` (a whole number or HF Trainer's "auto").
struct ForeignName {
  std::string_view name;
  std::string_view key;
  std::string_view value;
  bool ds_batch = false;
};

const std::vector<ForeignName>& foreign_names() {
  static const std::vector<ForeignName> names{{"gradient_checkpointing", "training.activation_checkpointing", ""},
                                              {"per_device_train_batch_size", "training.micro_batch", ""},
                                              {"train_micro_batch_size_per_gpu", "training.micro_batch", "", true},
                                              {"gradient_accumulation_steps", "training.grad_accum", "", true},
                                              {"max_seq_length", "training.seq_len", ""},
                                              {"max_length", "training.seq_len", ""},
                                              {"model_max_length", "training.seq_len", ""},
                                              {"seq_length", "training.seq_len", ""},
                                              {"bf16", "training.precision", "bf16"},
                                              {"fp16", "training.precision", "fp16"},
                                              {"optim", "training.optimizer", ""},
                                              {"max_grad_norm", "training.gradient_clipping", ""},
                                              {"lora_r", "training.lora_rank", ""},
                                              {"target_modules", "training.lora_targets", ""}};
  return names;
}

/// The foreign_names() entry of `name`, or nullptr.
const ForeignName* foreign_name(std::string_view name) {
  for (const ForeignName& f : foreign_names())
    if (f.name == name)
      return &f;
  return nullptr;
}

/// "did you mean 'training.precision: bf16'?": the scenario key (and value) of foreign_names() entry `f`.
std::string foreign_key_question(const ForeignName& f) {
  return "did you mean '" + std::string(f.key) + (f.value.empty() ? "" : ": " + std::string(f.value)) + "'?";
}

/// The hint for a Hugging Face TrainingArguments / PEFT (or DeepSpeed) name written as a scenario key (the last name
/// of the path, e.g. training.gradient_checkpointing): the scenario key that sets the same thing; "" for another
/// name. An edit-distance guess would suggest a different feature (gradient_checkpointing -> gradient_clipping,
/// per_device_train_batch_size -> train_batch_size, the global batch), so these names are mapped, not guessed.
std::string hf_name_hint(const std::string& leaf) {
  const ForeignName* f = foreign_name(leaf);
  if (f == nullptr)
    return {};
  return foreign_key_question(*f) + " (" + leaf + " is the Hugging Face or DeepSpeed name; this key sets the same)";
}

/// Resolves one scenario tree (overrides and compare value already applied) into a Scenario.
class Resolver {
 public:
  Resolver(std::string file, std::set<std::string> cli) : file_(std::move(file)), cli_(std::move(cli)) {
    dir_ = fs::path(file_).parent_path();
  }

  /// This tree is one `compare:` variant: values at or below `key` come from the compare list entry at `at`, so
  /// errors about them point there instead of at the (replaced) key in the scenario.
  void set_compare_source(std::string key, Loc at) {
    compare_key_ = std::move(key);
    compare_at_ = std::move(at);
  }
  /// Values at or below `key` come from a compare_set entry at `at` (errors point there).
  void add_source(std::string key, Loc at) { extra_sources_.emplace_back(std::move(key), std::move(at)); }

  /// Where each key set through the key table was last set, and as what it was written (Variant::sources); after
  /// resolve().
  [[nodiscard]] std::map<std::string, KeySource> sources() const {
    std::map<std::string, KeySource> out;
    for (const auto& [path, at] : where_)
      out[path] = KeySource{at.file, at.line, shown(path)};
    return out;
  }

  Scenario resolve(const YAML::Node& root) {
    if (!root.IsMap())
      fail({file_, line_of(root)}, "yaml", "expected a map of scenario keys at the top level");
    // A DeepSpeed config given as the scenario (zerosim run ds_config.json): its keys are no scenario's, and YAML
    // reads the JSON, so say what it is (at its first such key) rather than that `model` is missing. A file with
    // any of a scenario's own top-level keys is a scenario: a stray DeepSpeed key in it is an unknown key (walk).
    bool scenario_keys = false;
    for (const auto& kv : root)
      if (const std::string k = yaml_text(kv.first); is_scenario_top_key(k))
        scenario_keys = true;
    if (!scenario_keys) {
      std::pair<int, std::string> first{0, ""};
      for (const char* k :
           {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps"})
        if (const YAML::Node n = child(root, k); n.IsDefined() && (first.second.empty() || line_of(n) < first.first))
          first = {line_of(n), k};
      if (!first.second.empty())
        fail({file_, first.first}, first.second, "this is a DeepSpeed config, not a scenario",
             "reference it from a scenario as 'zero: {deepspeed_config: " + fs::path(file_).filename().string() + "}'");
    }
    s_.file = file_;
    const YAML::Node cluster = child(root, "cluster");
    const YAML::Node zero = child(root, "zero");

    resolve_model(child(root, "model"));
    resolve_cluster(cluster);
    if (const YAML::Node ds = child(zero, "deepspeed_config"); ds.IsDefined() && !ds.IsNull())
      import_deepspeed(ds);
    walk(root, "", "", file_, true);
    name_cluster_changes();
    resolve_lora_targets(child(child(root, "training"), "lora_targets"));
    resolve_compare(child(root, "compare"));
    finish_and_validate();
    return s_;
  }

 private:
  /// Whether `k` is one of a scenario's own top-level keys (a section or key of the key table, or compare,
  /// compare_set, sweep), which no DeepSpeed config has.
  static bool is_scenario_top_key(const std::string& k) {
    static const std::vector<std::string> keys = [] {
      std::vector<std::string> v = child_keys("");
      for (const char* extra : {"compare", "compare_set", "sweep"})
        v.emplace_back(extra);
      return v;
    }();
    return std::find(keys.begin(), keys.end(), k) != keys.end();
  }

  /// The hint for a DeepSpeed config key written at a scenario's top level: where it belongs (the ds_config that
  /// zero.deepspeed_config names) and, for the batch keys, the scenario key that sets the same; "" for another key.
  static std::string ds_key_hint(const std::string& k) {
    if (std::none_of(ds_top_level_keys().begin(), ds_top_level_keys().end(),
                     [&](const DsTopKey& d) { return d.name == k; }))
      return {};
    const std::string in_ds = "a DeepSpeed config key: it belongs in the ds_config that zero.deepspeed_config names";
    if (const ForeignName* f = foreign_name(k); f != nullptr && f->ds_batch)
      return foreign_key_question(*f) + " (" + in_ds + ")";
    if (k == "train_batch_size")
      return in_ds + "; a scenario's global batch is training.micro_batch x training.grad_accum x the GPU count";
    if (k == "zero_optimization")
      return in_ds + ", or set its keys under zero: (zero.stage, ...)";
    return in_ds;
  }

  static YAML::Node child(const YAML::Node& n, const std::string& k) {
    if (!n.IsDefined() || !n.IsMap())
      return YAML::Node(YAML::NodeType::Undefined);
    return n[k];
  }

  bool from_cli(const std::string& display_path) const {
    for (const auto& c : cli_)
      if (display_path == c || display_path.rfind(c + ".", 0) == 0)
        return true;
    return false;
  }

  Loc loc(const std::string& display_path, const YAML::Node& n, const std::string& file, bool scenario) const {
    if (scenario && !compare_key_.empty() &&
        (display_path == compare_key_ || display_path.rfind(compare_key_ + ".", 0) == 0))
      return compare_at_;
    if (scenario)
      for (const auto& [k, at] : extra_sources_)
        if (display_path == k || display_path.rfind(k + ".", 0) == 0)
          return at;
    if (scenario && from_cli(display_path))
      return {kCli, 0};
    return {file, line_of(n)};
  }

  Loc where(const std::string& path) const {
    auto it = where_.find(path);
    return it == where_.end() ? Loc{file_, 0} : it->second;
  }

  /// For a check between two keys: where to report it and under which key. The key the user most likely wrote
  /// wins (the command line, then the scenario file, then a preset file; `a` on a tie), and the message names
  /// where the other key was set when that is another file, so `--set cluster.gpus_per_node=3` against a
  /// preset's gpus_per_pcie_switch is reported at <cli> with the preset's line in the text.
  struct Blame {
    Loc at;
    std::string key;
    std::string other_note; ///< " (cluster.x = v at file:line)" or empty
  };
  Blame blame(const std::string& a, const std::string& b, const std::string& b_value,
              const std::string& a_value) const {
    const auto rank = [&](const std::string& k) {
      auto it = where_.find(k);
      if (it == where_.end())
        return 3;
      return it->second.file == kCli ? 0 : it->second.file == file_ ? 1 : 2;
    };
    const bool pick_b = rank(b) < rank(a);
    const std::string& key = pick_b ? b : a;
    const std::string& other = pick_b ? a : b;
    const std::string& other_value = pick_b ? a_value : b_value;
    Blame out{where(key), shown(key), {}};
    auto it = where_.find(other);
    if (it != where_.end() && it->second.file != out.at.file)
      out.other_note = " (" + shown(other) + " = " + other_value + " at " +
                       fs::path(it->second.file).filename().string() +
                       (it->second.line > 0 ? ":" + std::to_string(it->second.line) : std::string()) + ")";
    return out;
  }

  /// A relative path of the scenario file is relative to its folder. One that reaches the loader as an override
  /// (`at` is the command line) is looked up in the current directory first, where a user typed it, then in the
  /// scenario's folder, where a sweep axis written in the file means it (`zerosim sweep` passes its axis values as
  /// overrides); when neither exists, the current directory's path is the one an error names.
  std::string resolve_path(const std::string& rel, const Loc& at) const {
    const fs::path p(rel);
    if (p.is_absolute())
      return p.lexically_normal().string();
    const fs::path in_file = (dir_ / p).lexically_normal();
    if (at.file != kCli)
      return in_file.string();
    std::error_code ec;
    const fs::path in_cwd = (fs::current_path(ec) / p).lexically_normal();
    if (!fs::exists(in_cwd, ec) && fs::exists(in_file, ec))
      return in_file.string();
    return in_cwd.string();
  }

  /// Applies one value through the key table. A value from the imported ds_config is remembered; when the scenario,
  /// a compare value or --set later gives the same key another value, that one wins (import_deepspeed) and the
  /// report says so (note_ds_override).
  void apply(const KeySpec& spec, const KeyValue& v, const Loc& at, const std::string& display) {
    KeyValue val = v;
    if (val.is_auto)
      val = resolve_auto(spec, at, display);
    const std::string path(spec.path);
    if (!s_.zero.deepspeed_config.empty() && at.file == s_.zero.deepspeed_config)
      from_ds_[path] = DsValue{val, at, display, v.is_auto};
    else if (const auto d = from_ds_.find(path); d != from_ds_.end()) {
      note_ds_override(spec, d->second, val, at, display);
      from_ds_.erase(d);
    }
    if (spec.set)
      spec.set(s_, val);
    where_[path] = at;
    shown_[path] = display;
    written_[path] = v.text;
  }

  /// A value the imported ds_config set (apply).
  struct DsValue {
    KeyValue value;
    Loc at;
    std::string display; ///< the JSON field, e.g. "zero_optimization.stage"
    bool was_auto = false; ///< written "auto" (value holds what HF Trainer fills in)
  };

  /// The report's note for a key set both in the imported ds_config and in the scenario (or a compare value or
  /// --set) with different values: which won and why. Nothing when the two agree.
  void note_ds_override(const KeySpec& spec, const DsValue& ds, const KeyValue& v, const Loc& at,
                        const std::string& display) {
    bool same = false;
    switch (spec.type) {
    case KeyType::BOOL:
      same = v.boolean == ds.value.boolean;
      break;
    case KeyType::INT:
    case KeyType::ELEMENTS:
      same = v.integer == ds.value.integer;
      break;
    case KeyType::REAL:
    case KeyType::BYTES:
    case KeyType::BYTE_RATE:
    case KeyType::SECONDS:
    case KeyType::FLOP_RATE:
      same = v.real == ds.value.real;
      break;
    default:
      same = v.text == ds.value.text;
    }
    if (same)
      return;
    const auto where_text = [](const Loc& l) {
      if (l.file == kCli)
        return std::string("--set");
      return fs::path(l.file).filename().string() + (l.line > 0 ? ":" + std::to_string(l.line) : std::string());
    };
    s_.import_notes.push_back(display + " " + v.text + " (" + where_text(at) + ") overrides " +
                              (ds.was_auto ? "\"auto\" (= " + ds.value.text + ")" : ds.value.text) +
                              " from the ds_config's " + ds.display + " (" + where_text(ds.at) +
                              "): a key given in the scenario or with --set wins over the imported ds_config");
  }

  /// One spelling of a DeepSpeed offload field seen in the scenario tree (see admit_spelling).
  struct Spelling {
    Loc at;
    std::string display; ///< as written: "zero.offload_optimizer.pin_memory" or "zero.offload_optimizer_pin_memory"
    KeyValue value;
    int layer = 0; ///< 0 the scenario file, 1 a compare value or compare_set entry, 2 a --set override
  };

  /// Which override layer the value at display path `display` comes from (Spelling::layer).
  int layer_of(const std::string& display) const {
    if (from_cli(display))
      return 2;
    const auto under = [&](const std::string& k) { return display == k || display.rfind(k + ".", 0) == 0; };
    if (!compare_key_.empty() && under(compare_key_))
      return 1;
    for (const auto& source : extra_sources_)
      if (under(source.first))
        return 1;
    return 0;
  }

  /// A field of DeepSpeed's offload map also has a flat key: `offload_optimizer: {pin_memory: true}` and
  /// `offload_optimizer_pin_memory: true` set one setting (likewise buffer_count, buffer_size). Given both ways, a
  /// later layer wins (the scenario file, then a compare value, then --set; a ds_config.json lies below all of them
  /// and is not seen here), and the same value twice is fine; two different values in one layer are an error, as
  /// which one won would depend on the order of the keys. Returns whether to apply `v` (false: a higher layer set it).
  bool admit_spelling(const KeySpec& spec, const KeyValue& v, const Loc& at, const std::string& display) {
    const Spelling now{at, display, v, layer_of(display)};
    const auto [it, first] = spelled_.try_emplace(std::string(spec.path), now);
    if (first)
      return true;
    Spelling& before = it->second;
    if (now.layer < before.layer)
      return false; // e.g. the scenario's map field after a --set of the flat key
    const bool same = v.boolean == before.value.boolean && v.integer == before.value.integer;
    if (same || now.layer > before.layer) {
      before = now;
      return true;
    }
    // Where the first spelling is: "line 7" in the same file, else "<cli>" or "file:line".
    std::string other_at = "line " + std::to_string(before.at.line);
    if (before.at.file != at.file || before.at.line <= 0)
      other_at = before.at.file == kCli ? std::string(kCli)
                                        : fs::path(before.at.file).filename().string() +
                                              (before.at.line > 0 ? ":" + std::to_string(before.at.line) : "");
    fail(at, display, v.text + " conflicts with " + before.display + ": " + before.value.text + " (" + other_at + ")",
         "give one");
  }

  /// The key as the user wrote it where `path` was last set (e.g. "zero_optimization.offload_optimizer" when it came
  /// from a ds_config.json), for cross-field errors located with where().
  std::string shown(const std::string& path) const {
    auto it = shown_.find(path);
    return it == shown_.end() ? path : it->second;
  }

  /// The value of `path` as the user wrote it where it was last set ("1.5", not "1.500000"), or `fallback` when it was
  /// not set through the key table.
  std::string written(const std::string& path, const std::string& fallback) const {
    auto it = written_.find(path);
    return it == written_.end() || it->second.empty() ? fallback : it->second;
  }

  /// HF Trainer "auto" rules for the ZeRO buckets (reference/calibration.md §4.3; transformers
  /// integrations/deepspeed.py): reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2,
  /// stage3_param_persistence_threshold = 10 h.
  KeyValue resolve_auto(const KeySpec& spec, const Loc& at, const std::string& display) const {
    const std::int64_t h = s_.model.hidden;
    KeyValue v;
    if (spec.path == "zero.reduce_bucket_size")
      v.integer = h * h;
    else if (spec.path == "zero.stage3_prefetch_bucket_size")
      v.integer = static_cast<std::int64_t>(0.9 * static_cast<double>(h * h));
    else if (spec.path == "zero.stage3_param_persistence_threshold")
      v.integer = 10 * h;
    else
      fail(at, display,
           "\"auto\" is only defined for reduce_bucket_size, stage3_prefetch_bucket_size and "
           "stage3_param_persistence_threshold");
    v.real = static_cast<double>(v.integer);
    v.text = std::to_string(v.integer);
    return v;
  }

  /// Walks a YAML map whose keys live under `table_prefix` in the key table; errors name `display_prefix`.
  void walk(const YAML::Node& node, const std::string& table_prefix, const std::string& display_prefix,
            const std::string& file, bool scenario) {
    if (!node.IsMap()) {
      fail(loc(display_prefix, node, file, scenario), display_prefix.empty() ? "yaml" : display_prefix,
           "expected a map, got '" + yaml_text(node) + "'");
    }
    for (const auto& kv : node) {
      const std::string k = yaml_text(kv.first);
      const std::string tpath = table_prefix.empty() ? k : table_prefix + "." + k;
      const std::string dpath = display_prefix.empty() ? k : display_prefix + "." + k;
      const YAML::Node& v = kv.second;
      const Loc at = loc(dpath, kv.first, file, scenario);
      const KeySpec* spec = (table_prefix.empty() && k == "gpu") ? nullptr : find_key(tpath);
      if (spec) {
        if (spec->type == KeyType::SPECIAL)
          continue;
        if (spec->path == "model.head_dim" && v.IsNull()) {
          // Hugging Face's head_dim null means hidden / heads (LlamaConfig); `head_dim: ~` in YAML means the same:
          // the default, as if the key were not written (also over a preset or config.json that sets it). Other
          // keys keep rejecting an empty value (`key:` is more likely an edit left unfinished).
          s_.model.head_dim = 0;
          where_.erase(std::string(spec->path));
          shown_.erase(std::string(spec->path));
          continue;
        }
        const KeyValue val = value_of(*spec, v, at, dpath);
        if (!is_offload_field_key(spec->path) || admit_spelling(*spec, val, at, dpath))
          apply(*spec, val, at, dpath);
        if (spec->type == KeyType::OFFLOAD && v.IsMap()) {
          for (const auto& f : v) {
            if (const std::string flat = offload_field_key(spec->path, yaml_text(f.first)); !flat.empty()) {
              const KeySpec& fs = *find_key(flat);
              const std::string fd = dpath + "." + yaml_text(f.first);
              const Loc fat = loc(fd, f.first, file, scenario);
              const KeyValue fv = value_of(fs, f.second, fat, fd);
              if (admit_spelling(fs, fv, fat, fd))
                apply(fs, fv, fat, fd);
            } else if (const OffloadExtra* e = offload_extra(yaml_text(f.first)); e != nullptr) {
              const std::string fd = dpath + "." + yaml_text(f.first);
              const Loc fat = loc(fd, f.first, file, scenario);
              const YAML::Node& n = f.second;
              bool b = false;
              double x = 0;
              const bool is_scalar = n.IsScalar();
              const bool is_bool = is_scalar && (n.Scalar() == "true" || n.Scalar() == "false");
              b = is_bool && n.Scalar() == "true";
              const bool is_number = is_scalar && !is_bool && YAML::convert<double>::decode(n, x);
              bool active = false;
              if (const std::string why =
                      check_offload_extra(*e, is_bool, b, is_number, x, n.IsNull(), is_scalar, active);
                  !why.empty())
                fail(fat, fd, why + ", got '" + yaml_text(n) + "'");
              note_offload_extra(std::string(spec->path), yaml_text(f.first), active, yaml_text(n));
            }
          }
        }
      } else if (is_section(tpath) && !(table_prefix.empty() && k == "gpu")) {
        if (v.IsNull())
          continue;
        walk(v, tpath, dpath, file, scenario);
      } else {
        std::vector<std::string> names = child_keys(table_prefix);
        if (table_prefix.empty()) // GPU keys live under cluster.gpu in a scenario, not at the top level
          names.erase(std::remove(names.begin(), names.end(), "gpu"), names.end());
        if (table_prefix.empty() && (k == "gpu" || k == "cpu"))
          fail(at, dpath, "unknown key", "in a scenario the " + k + " keys go under cluster: (cluster." + k + ")");
        if (table_prefix.empty())
          if (std::string hint = ds_key_hint(k); !hint.empty())
            fail(at, dpath, "unknown key", hint);
        if (std::string hint = hf_name_hint(k); !hint.empty())
          fail(at, dpath, "unknown key", hint);
        fail(at, dpath, "unknown key", did_you_mean(k, names));
      }
    }
  }

  KeyValue value_of(const KeySpec& spec, const YAML::Node& v, const Loc& at, const std::string& display) const {
    if (spec.type == KeyType::OFFLOAD && v.IsMap()) { // DeepSpeed's form {device: cpu, pin_memory: true, ...}
      const std::vector<std::string>& fields = ds_offload_fields(spec.path);
      for (const auto& f : v) {
        const std::string k = yaml_text(f.first);
        if (std::find(fields.begin(), fields.end(), k) == fields.end())
          fail(at, display + "." + k, "unknown DeepSpeed offload field", did_you_mean(k, fields));
        if (k == "ratio" && spec.path == "zero.offload_optimizer") {
          const YAML::Node& r = f.second;
          double ratio = 0;
          if (!r.IsScalar() || !YAML::convert<double>::decode(r, ratio) || !(ratio >= 0 && ratio <= 1))
            fail(at, display + ".ratio", "expected a number in [0, 1], got '" + yaml_text(r) + "'");
          if (ratio < 1)
            fail(at, display + ".ratio", "partial optimizer offload (ratio < 1) is not simulated yet");
        }
      }
      const YAML::Node d = v["device"];
      if (!d.IsDefined() || !d.IsScalar())
        fail(at, display + ".device", "expected device: none|cpu|nvme in the offload map");
      return parse_scalar(spec, d.Scalar(), at, display + ".device");
    }
    if (v.IsNull()) // `key:` with nothing after it, or `--set key=`
      fail(at, display, "expected " + type_name(spec.type, spec.choices) + ", got an empty value",
           at.file == kCli ? "--set " + display + "=null resets it to its default" : std::string());
    if (!v.IsScalar())
      fail(at, display, "expected " + type_name(spec.type, spec.choices) + ", got '" + yaml_text(v) + "'");
    return parse_scalar(spec, v.Scalar(), at, display);
  }

  // ---- model
  void resolve_model(const YAML::Node& m) {
    const Loc at = loc("model", m, file_, true);
    if (!m.IsDefined() || m.IsNull())
      fail({file_, 0}, "model", "required key missing", "e.g. 'model: gpt2-xl' (see `zerosim list`)");
    if (m.IsScalar()) {
      model_from_ref(m.Scalar(), at, "model");
    } else if (m.IsMap()) {
      if (const YAML::Node p = m["preset"]; p.IsDefined()) {
        if (!p.IsScalar())
          fail(loc("model.preset", p, file_, true), "model.preset", "expected a preset name or a config.json path");
        model_from_ref(p.Scalar(), loc("model.preset", p, file_, true), "model.preset");
      } else {
        s_.model.name = "inline";
      }
      walk(m, "model", "model", file_, true);
      require("model", at);
      name_cli_changes(m);
    } else {
      fail(at, "model", "expected a preset name, a config.json path or a map");
    }
    ModelSpec& md = s_.model;
    if (md.kv_heads == 0)
      md.kv_heads = md.heads;
    if (!where_.count("model.tied_embeddings"))
      md.tied_embeddings = learned_positions(md.family); // GPT-2 and OPT tie their LM head
    if (md.intermediate == 0) {
      if (learned_positions(md.family))
        md.intermediate = 4 * md.hidden; // GPT-2 MLP is h -> 4h -> h (Radford et al. 2019; HF n_inner null)
      else
        fail(at, "model.intermediate", "required for family llama (the SwiGLU MLP size, 'intermediate_size')");
    }
  }

  /// A model whose shape the scenario or --set changed is not the one its name says: the name gets the changes, e.g.
  /// "llama-2-7b (modified: layers=16)" for `model: {preset: llama-2-7b, layers: 16}` (unless the scenario names
  /// the model itself, `name:`) and "llama-1.1b-4l (--set layers=5)", so headers, reports and plots say what was
  /// simulated.
  void name_cli_changes(const YAML::Node& m) {
    const bool file_changes = m["preset"].IsDefined() && !m["name"].IsDefined(); // a preset, not renamed
    std::string changes = changed_keys("model", file_changes, s_.model.name);
    // `--set model.head_dim=null` (back to hidden / heads) is a change too, though it leaves no entry in where_.
    if (const YAML::Node hd = m["head_dim"]; hd.IsDefined() && hd.IsNull() && from_cli("model.head_dim"))
      changes += std::string(changes.empty() ? "" : ", ") + "head_dim=null";
    if (!changes.empty())
      s_.model.name += " (--set " + changes + ")";
  }

  /// The keys below `prefix` (the key table's, e.g. "gpu", "cluster") set over a preset: those from the scenario file
  /// (when `file_changes`) are added to `name` as " (modified: k=v, ...)"; those from --set are returned as "k=v, ..."
  /// for the caller's " (--set ...)". Keys in dotted-key order relative to `prefix` ("nic.bandwidth"), each with the
  /// value as written; `source` (the datasheet references, at any depth) changes no number and is not listed, nor
  /// are `name`, `preset` and the keys (and subtrees) in `skip`, which the caller reports otherwise.
  std::string changed_keys(const std::string& prefix, bool file_changes, std::string& name,
                           const std::vector<std::string>& skip = {}) const {
    std::string changes;
    std::string modified;
    for (const auto& [path, at] : where_) {
      if (path.rfind(prefix + ".", 0) != 0)
        continue;
      const std::string key = path.substr(prefix.size() + 1);
      const std::string last = key.substr(key.rfind('.') == std::string::npos ? 0 : key.rfind('.') + 1);
      if (key == "name" || key == "preset" || last == "source" ||
          std::any_of(skip.begin(), skip.end(),
                      [&key](const std::string& k) { return key == k || key.rfind(k + ".", 0) == 0; }))
        continue;
      const bool cli = at.file == kCli;
      if (!cli && !(file_changes && at.file == file_))
        continue;
      const std::string value = written(path, "");
      if (value.empty())
        continue;
      std::string& list = cli ? changes : modified;
      list += (list.empty() ? "" : ", ") + key + "=" + value;
    }
    if (!modified.empty())
      name += " (modified: " + modified + ")";
    return changes;
  }

  /// A cluster preset changed by the scenario's cluster keys or --set is labelled as a changed GPU or CPU preset is
  /// (changed_keys): "dgx-a100 (modified: gpus_per_node=4, nic.bandwidth=200Gbps)", "dgx-a100 (--set
  /// nics_per_node=1)". Left out: the GPU and CPU (labelled themselves), nodes (the headline gives it) and the
  /// topology. The node's NVMe gets the label of its own keys ("dgx-a100 (modified: read_bandwidth=6.8GBps)"), so a
  /// report can say whose figures an NVMe offload used. cluster.nvme.drives describes the bandwidths it came with: a
  /// scenario that gives its own NVMe bandwidth without a drive count leaves the count unstated (0).
  void name_cluster_changes() {
    ClusterSpec& c = s_.cluster;
    c.name = c.topology;
    if (const std::string cli = changed_keys("cluster", true, c.name, {"topology", "nodes", "gpu", "cpu"});
        !cli.empty())
      c.name += " (--set " + cli + ")";
    c.nvme.name = c.topology;
    if (const std::string cli = changed_keys("cluster.nvme", true, c.nvme.name); !cli.empty())
      c.nvme.name += " (--set " + cli + ")";
    const auto by_user = [&](const std::string& k) {
      const auto it = where_.find(k);
      return it != where_.end() && (it->second.file == kCli || it->second.file == file_);
    };
    if (!by_user("cluster.nvme.drives") &&
        (by_user("cluster.nvme.read_bandwidth") || by_user("cluster.nvme.write_bandwidth")))
      c.nvme.drives = 0;
  }

  /// A GPU or CPU preset changed by inline keys (`cluster.gpu: {preset: a100-80gb, memory: 40GiB}`, `--set
  /// cluster.gpu.memory=40GiB`) is labelled as a modified model is: "a100-80gb (modified: memory=40GiB)",
  /// "a100-80gb (--set memory=40GiB)", so no report calls a 40 GiB card an a100-80gb.
  void name_hardware_changes(const std::string& prefix, const YAML::Node& m, std::string& name) const {
    // A card the scenario names itself (`cluster.gpu: {preset: rtx3090, name: rtx-a6000, memory: 48GiB}`) keeps that
    // name, as a named model does; --set changes are still added.
    const std::string changes = changed_keys(prefix, !m["name"].IsDefined(), name);
    if (!changes.empty())
      name += " (--set " + changes + ")";
  }

  void model_from_ref(const std::string& ref, const Loc& at, const std::string& key) {
    if (ends_with(ref, ".json")) {
      import_hf_config(resolve_path(ref, at), at, key);
      return;
    }
    // A Hugging Face snapshot directory (not a preset name): its config.json.
    const std::vector<std::string> presets = preset_names(preset_dir("models"));
    if (std::find(presets.begin(), presets.end(), ref) == presets.end()) {
      std::error_code ec;
      const fs::path dir = resolve_path(ref, at);
      if (fs::is_directory(dir, ec)) {
        if (!fs::is_regular_file(dir / "config.json", ec))
          fail(at, key, "'" + ref + "' is a directory without a config.json",
               "give a preset name or a Hugging Face config.json (or a snapshot directory holding one)");
        import_hf_config((dir / "config.json").string(), at, key);
        return;
      }
    }
    const std::string path = preset_file("models", ref, at, key);
    const YAML::Node p = load_yaml_file(path, at, key);
    walk(p, "model", "model", path, false);
    require("model", {path, 0});
    if (s_.model.name.empty() || s_.model.name == "inline")
      s_.model.name = ref;
  }

  std::string preset_file(const std::string& kind, const std::string& name, const Loc& at, const std::string& key) {
    const std::string dir = preset_dir(kind);
    const std::vector<std::string> names = preset_names(dir);
    if (!is_preset_name(name) || std::find(names.begin(), names.end(), name) == names.end()) {
      // A path (it has a '/') is not a preset name: say what was looked for.
      if (kind == "models" && name.find('/') != std::string::npos)
        fail(at, key,
             "'" + name +
                 "' is neither a model preset nor a readable Hugging Face config.json or snapshot "
                 "directory (no such file or no config.json in it)");
      std::string list;
      for (std::size_t i = 0; i < names.size(); ++i)
        list += (i ? ", " : "") + names[i];
      std::string hint = did_you_mean(name, names);
      // A card with no preset is described inline over the nearest one (its name and the changed keys are reported).
      if (kind == "gpus")
        hint += std::string(hint.empty() ? "or" : " Or") +
                " define the card inline over the closest preset: cluster.gpu: {preset: rtx3090, name: my-card, "
                "memory: 48GiB, peak_lp: 150TFLOPS, memory_bandwidth: 768GBps, ...} (the gpu.* keys of "
                "docs/scenario-reference.md)";
      fail(at, key, "unknown preset '" + name + "' in " + dir + " (valid: " + list + ")", hint);
    }
    return (fs::path(dir) / (name + ".yaml")).string();
  }

  /// Hugging Face config.json: gpt2 names (n_embd, n_layer, ...) or llama-like names (hidden_size, ...).
  void import_hf_config(const std::string& path, const Loc& ref, const std::string& key) {
    std::string text;
    const json j = parse_json(path, ref, key, text);
    if (!j.is_object())
      fail({path, 1}, key, "expected a JSON object (a Hugging Face config.json)");
    const auto get_int = [&](const char* k, bool required, std::int64_t dflt) -> std::int64_t {
      const Loc at{path, json_line_of_key(text, k)};
      if (!j.contains(k) || j[k].is_null()) {
        if (required)
          fail(at, key + "." + k, "missing in the Hugging Face config");
        return dflt;
      }
      const json& v = j[k];
      if (!v.is_number_integer() || v.get<std::int64_t>() <= 0)
        fail(at, key + "." + k, "expected a positive whole number, got '" + v.dump() + "'");
      return v.get<std::int64_t>();
    };
    const auto get_bool = [&](const char* k, bool dflt) {
      if (!j.contains(k) || j[k].is_null())
        return dflt;
      if (!j[k].is_boolean())
        fail({path, json_line_of_key(text, k)}, key + "." + k, "expected true or false, got '" + j[k].dump() + "'");
      return j[k].get<bool>();
    };
    if (!j.contains("model_type") || !j["model_type"].is_string()) {
      // A DeepSpeed config given where the model's config.json belongs (plan --model ds_config.json).
      const bool deepspeed = j.contains("zero_optimization") || j.contains("train_batch_size") ||
                             j.contains("train_micro_batch_size_per_gpu");
      fail({path, json_line_of_key(text, "model_type")}, key + ".model_type",
           "expected a string model_type (gpt2, llama, mistral, opt, qwen2)",
           deepspeed ? "this is a DeepSpeed config (it has zero_optimization or a batch size): the model takes a "
                       "Hugging Face config.json, and a scenario reads a DeepSpeed config as zero.deepspeed_config"
                     : "");
    }
    const std::string type = j["model_type"].get<std::string>();
    ModelSpec& m = s_.model;
    // Name: `_name_or_path` (written by transformers' save_pretrained, e.g. "meta-llama/Llama-2-7b-hf"), else
    // "<directory>/<file> (<model_type>)": the directory of a downloaded checkpoint is its name, and the file and
    // type say what was read when it is not.
    m.name.clear();
    if (j.contains("_name_or_path") && j["_name_or_path"].is_string())
      m.name = j["_name_or_path"].get<std::string>();
    if (m.name.empty()) {
      std::error_code ec;
      const fs::path abs = fs::absolute(fs::path(path), ec).lexically_normal();
      const std::string dir = ec ? std::string() : abs.parent_path().filename().string();
      m.name = (dir.empty() ? std::string() : dir + "/") + fs::path(path).filename().string() + " (" + type + ")";
    }
    m.source = path;
    m.head_dim = 0; // hidden / heads unless a llama-family config says otherwise (below)
    if (type == "gpt2") {
      // transformers GPT2Config: n_embd, n_layer, n_head, n_positions, vocab_size, n_inner (None -> 4 n_embd),
      // tie_word_embeddings (PretrainedConfig default true).
      m.family = ModelFamily::GPT2;
      m.hidden = get_int("n_embd", true, 0);
      m.layers = get_int("n_layer", true, 0);
      m.heads = get_int("n_head", true, 0);
      m.kv_heads = m.heads;
      // GPT2Config's attribute_map reads max_position_embeddings as n_positions; very old configs only have n_ctx.
      if (j.contains("n_positions") && !j["n_positions"].is_null())
        m.max_positions = get_int("n_positions", true, 0);
      else if (j.contains("max_position_embeddings") && !j["max_position_embeddings"].is_null())
        m.max_positions = get_int("max_position_embeddings", true, 0);
      else
        m.max_positions = get_int("n_ctx", false, 0);
      if (m.max_positions == 0)
        fail({path, 0}, key + ".n_positions", "missing in the Hugging Face config (learned position embeddings)");
      m.vocab = get_int("vocab_size", true, 0);
      m.intermediate = get_int("n_inner", false, 4 * m.hidden);
      m.tied_embeddings = get_bool("tie_word_embeddings", true);
      // GPT2Config.activation_function, default "gelu_new" (transformers ACT2FN: NewGELUActivation); "gelu" and
      // "gelu_pytorch_tanh" are one torch kernel each. Others are not modelled.
      std::string act = "gelu_new";
      if (j.contains("activation_function") && !j["activation_function"].is_null()) {
        if (!j["activation_function"].is_string())
          fail({path, json_line_of_key(text, "activation_function")}, key + ".activation_function",
               "expected a string, got '" + j["activation_function"].dump() + "'");
        act = j["activation_function"].get<std::string>();
      }
      if (act != "gelu_new" && act != "gelu" && act != "gelu_pytorch_tanh")
        fail({path, json_line_of_key(text, "activation_function")}, key + ".activation_function",
             "only gelu_new, gelu and gelu_pytorch_tanh are modelled, got '" + act + "'");
      m.activation = act == "gelu_new" ? Activation::GELU_NEW : Activation::GELU;
    } else if (type == "opt") {
      // transformers OPTConfig: hidden_size, num_hidden_layers, num_attention_heads, ffn_dim, vocab_size,
      // max_position_embeddings (the table has 2 more rows, OPTLearnedPositionalEmbedding's offset),
      // tie_word_embeddings default true. OPT-350m projects a 512-wide embedding to the hidden size
      // (word_embed_proj_dim): not modelled; activation_function other than relu: not modelled.
      m.family = ModelFamily::OPT;
      m.hidden = get_int("hidden_size", true, 0);
      m.layers = get_int("num_hidden_layers", true, 0);
      m.heads = get_int("num_attention_heads", true, 0);
      m.kv_heads = m.heads;
      m.intermediate = get_int("ffn_dim", true, 0);
      m.vocab = get_int("vocab_size", true, 0);
      m.max_positions = get_int("max_position_embeddings", true, 0);
      m.tied_embeddings = get_bool("tie_word_embeddings", true);
      if (get_int("word_embed_proj_dim", false, m.hidden) != m.hidden)
        fail({path, json_line_of_key(text, "word_embed_proj_dim")}, key + ".word_embed_proj_dim",
             "an embedding projected to another width (OPT-350m's project_in/out) is not modelled");
      if (j.contains("activation_function") && j["activation_function"] != "relu")
        fail({path, json_line_of_key(text, "activation_function")}, key + ".activation_function",
             "only relu (every OPT checkpoint's) is modelled, got " + j["activation_function"].dump());
      // Variants of the layout no released checkpoint uses: refused rather than counted as the default.
      for (const auto& [k, dflt] : {std::pair<const char*, bool>{"enable_bias", true},
                                    {"layer_norm_elementwise_affine", true},
                                    {"_remove_final_layer_norm", false}})
        if (get_bool(k, dflt) != dflt)
          fail({path, json_line_of_key(text, k)}, key + "." + k,
               std::string("is ") + (dflt ? "false" : "true") + ": this OPT variant is not modelled");
    } else if (type == "llama" || type == "mistral" || type == "qwen2") {
      // transformers LlamaConfig and relatives: num_key_value_heads None -> num_attention_heads (LlamaConfig; an
      // absent key takes the class default: MistralConfig 8, Qwen2Config 32); rotary, so no
      // learned position table: max_position_embeddings (the trained context) is recorded, not enforced, since
      // rotary models are run beyond it (RoPE scaling); LlamaConfig.tie_word_embeddings default false.
      m.family = ModelFamily::LLAMA;
      m.hidden = get_int("hidden_size", true, 0);
      m.layers = get_int("num_hidden_layers", true, 0);
      m.heads = get_int("num_attention_heads", true, 0);
      m.kv_heads = get_int("num_key_value_heads", false, type == "mistral" ? 8 : type == "qwen2" ? 32 : m.heads);
      m.intermediate = get_int("intermediate_size", true, 0);
      m.vocab = get_int("vocab_size", true, 0);
      m.max_positions = get_int("max_position_embeddings", false, 0);
      m.tied_embeddings = get_bool("tie_word_embeddings", false);
      // Head dimension: LlamaConfig and MistralConfig head_dim (null -> hidden_size // num_attention_heads;
      // Qwen2Attention reads getattr(config, "head_dim", hidden_size // num_attention_heads)). q_proj is
      // hidden -> heads·head_dim (Mistral-NeMo-12B: 5120 -> 32·128). A head_dim equal to hidden / heads (recent
      // transformers write it into every saved config) is the default and stays 0, so --set model.hidden or
      // model.heads still rescale the heads as they do without it.
      if (const std::int64_t hd = get_int("head_dim", false, 0);
          hd != 0 && (m.hidden % m.heads != 0 || hd != m.hidden / m.heads)) {
        m.head_dim = hd;
        where_["model.head_dim"] = {path, json_line_of_key(text, "head_dim")};
      }
      // Biases: LlamaConfig reads attention_bias (default false: all four attention projections) and mlp_bias
      // (default false: gate/up/down_proj). Qwen2Attention always has them on q/k/v_proj (not o_proj) and
      // MistralAttention never; Qwen2MLP and MistralMLP have none (transformers modeling_qwen2.py and
      // modeling_mistral.py build those layers with fixed bias flags and do not read either key), so there a
      // written true changes nothing and gets a note.
      m.attention_bias = type == "qwen2"                                        ? AttentionBias::QKV
                         : type == "llama" && get_bool("attention_bias", false) ? AttentionBias::QKVO
                                                                                : AttentionBias::NONE;
      m.mlp_bias = type == "llama" && get_bool("mlp_bias", false);
      if (type != "llama")
        for (const char* k : {"attention_bias", "mlp_bias"})
          if (get_bool(k, false))
            s_.import_notes.push_back(fs::path(path).filename().string() + ":" +
                                      std::to_string(json_line_of_key(text, k)) + ": " + k + " is true, but " +
                                      "transformers' " + (type == "qwen2" ? "Qwen2" : "Mistral") +
                                      " layers do not read it (" +
                                      (type == "qwen2" ? "q/k/v_proj always have biases, o_proj and the MLP none"
                                                       : "no projection has a bias") +
                                      "): simulated as they build the model");
      // Sliding-window attention: MistralConfig.sliding_window (null = none) on every layer; Qwen2Config only when
      // use_sliding_window is true (its default is false), and only on layers i >= max_window_layers (default 28).
      m.sliding_window = 0;
      m.max_window_layers = 0;
      const bool zero_window = j.contains("sliding_window") && j["sliding_window"].is_number_integer() &&
                               j["sliding_window"].get<std::int64_t>() == 0; // 0 = none, as null
      const bool qwen2_window = type == "qwen2" && get_bool("use_sliding_window", false);
      if (!zero_window && (type == "mistral" || qwen2_window))
        m.sliding_window = get_int("sliding_window", false, 0);
      if (qwen2_window) {
        // 0 is allowed: every layer uses the window (HF: layer i does when i >= max_window_layers).
        const bool zero_layers = j.contains("max_window_layers") && j["max_window_layers"].is_number_integer() &&
                                 j["max_window_layers"].get<std::int64_t>() == 0;
        m.max_window_layers = zero_layers ? 0 : get_int("max_window_layers", false, 28);
      }
    } else {
      fail({path, json_line_of_key(text, "model_type")}, key + ".model_type",
           "unsupported model_type '" + type + "' (supported: gpt2, llama, mistral, opt, qwen2)");
    }
    for (const char* k : {"model.family", "model.hidden", "model.layers", "model.heads", "model.kv_heads",
                          "model.intermediate", "model.vocab", "model.max_positions", "model.tied_embeddings",
                          "model.sliding_window", "model.max_window_layers", "model.attention_bias", "model.mlp_bias"})
      where_[k] = {path, 0};
    // The line of each dimension in config.json, for the checks between keys (kv_heads must divide heads, ...).
    using KeyPair = std::pair<const char*, const char*>;
    const std::vector<KeyPair> hf_keys =
        type == "gpt2" ? std::vector<KeyPair>{{"model.hidden", "n_embd"},    {"model.layers", "n_layer"},
                                              {"model.heads", "n_head"},     {"model.intermediate", "n_inner"},
                                              {"model.vocab", "vocab_size"}, {"model.max_positions", "n_positions"}}
                       : std::vector<KeyPair>{{"model.hidden", "hidden_size"},
                                              {"model.layers", "num_hidden_layers"},
                                              {"model.heads", "num_attention_heads"},
                                              {"model.kv_heads", "num_key_value_heads"},
                                              {"model.intermediate", type == "opt" ? "ffn_dim" : "intermediate_size"},
                                              {"model.vocab", "vocab_size"},
                                              {"model.max_positions", "max_position_embeddings"},
                                              {"model.sliding_window", "sliding_window"},
                                              {"model.max_window_layers", "max_window_layers"},
                                              {"model.attention_bias", "attention_bias"},
                                              {"model.mlp_bias", "mlp_bias"}};
    for (const auto& [model_key, hf_key] : hf_keys)
      if (const int line = json_line_of_key(text, hf_key); line > 0)
        where_[model_key] = {path, line};
    // num_key_value_heads left out: MistralConfig's default 8 and Qwen2Config's 32 apply (LlamaConfig's None means
    // num_attention_heads). Errors about it point at model_type and say where the number came from.
    kv_default_.reset();
    if ((type == "mistral" || type == "qwen2") &&
        (!j.contains("num_key_value_heads") || j["num_key_value_heads"].is_null())) {
      where_["model.kv_heads"] = {path, json_line_of_key(text, "model_type")};
      kv_default_ =
          std::make_pair(where_["model.kv_heads"], std::string("num_key_value_heads is missing from ") +
                                                       fs::path(path).filename().string() + ", so " +
                                                       (type == "qwen2" ? "Qwen2Config" : "MistralConfig") +
                                                       "'s default " + std::to_string(m.kv_heads) + " applies");
    }
    // LlamaConfig's default cannot fail the divisibility check, so it is said as a note (a missing key usually
    // means a hand-edited config; the checkpoint may be GQA). Withdrawn when the scenario or --set gives
    // model.kv_heads (finish_llama_kv_note).
    llama_kv_note_.reset();
    if (type == "llama" && (!j.contains("num_key_value_heads") || j["num_key_value_heads"].is_null())) {
      s_.import_notes.push_back("num_key_value_heads is missing from " + fs::path(path).filename().string() +
                                ", so LlamaConfig's default num_attention_heads (" + std::to_string(m.heads) +
                                ", multi-head attention) applies; add num_key_value_heads if the checkpoint uses "
                                "grouped-query attention");
      llama_kv_note_ = std::make_pair(path, s_.import_notes.back());
    }
  }

  /// Drops the note of an imported llama config.json without num_key_value_heads (import_hf_config) when
  /// model.kv_heads was then set elsewhere (the scenario, a compare value, --set): the default did not apply.
  void finish_llama_kv_note() {
    if (!llama_kv_note_ || where("model.kv_heads").file == llama_kv_note_->first)
      return;
    auto& notes = s_.import_notes;
    notes.erase(std::remove(notes.begin(), notes.end(), llama_kv_note_->second), notes.end());
  }

  /// Every `required` table key below `prefix` must have been set.
  void require(const std::string& prefix, const Loc& at) const {
    for (const KeySpec& k : key_table()) {
      if (!k.required || k.type == KeyType::SPECIAL || k.path.rfind(prefix + ".", 0) != 0)
        continue;
      if (!where_.count(std::string(k.path)))
        fail(at, std::string(k.path), "required key missing");
    }
  }

  // ---- cluster and GPU
  void resolve_cluster(const YAML::Node& c) {
    std::string topo = kDefaultTopology;
    Loc topo_at{file_, 0};
    if (const YAML::Node t = child(c, "topology"); t.IsDefined()) {
      topo_at = loc("cluster.topology", t, file_, true);
      if (!t.IsScalar())
        fail(topo_at, "cluster.topology", "expected a cluster preset name");
      topo = t.Scalar();
    }
    // A file of the preset format (a topology of one's own, docs/topologies.md): relative to the scenario's folder
    // (a --set value: to the current directory first, resolve_path); its errors name its own lines.
    std::string path;
    if (names_topology_file(topo)) {
      path = resolve_path(topo, topo_at);
      std::error_code ec;
      if (!fs::exists(path, ec))
        fail(topo_at, "cluster.topology", "no such topology file '" + path + "'",
             "a preset name has no '/' and no .yaml ending; `zerosim list` shows the presets");
    } else {
      path = preset_file("clusters", topo, topo_at, "cluster.topology");
    }
    const YAML::Node p = load_yaml_file(path, topo_at, "cluster.topology");
    walk(p, "cluster", "cluster", path, false);
    require("cluster", {path, 0});
    s_.cluster.topology = topo;

    YAML::Node gpu = child(p, "gpu");
    Loc gpu_at{path, line_of(gpu)};
    if (!gpu.IsDefined() || !gpu.IsScalar())
      fail(gpu_at, "cluster.gpu", "the cluster preset must name its GPU preset");
    std::string gpu_name = gpu.Scalar();
    YAML::Node inline_gpu(YAML::NodeType::Undefined);
    if (const YAML::Node g = child(c, "gpu"); g.IsDefined()) {
      gpu_at = loc("cluster.gpu", g, file_, true);
      if (g.IsScalar()) {
        gpu_name = g.Scalar();
      } else if (g.IsMap()) { // {preset: name, key: value}; without `preset` the topology's GPU is the base
        if (const YAML::Node gp = g["preset"]; gp.IsDefined()) {
          if (!gp.IsScalar())
            fail(loc("cluster.gpu.preset", gp, file_, true), "cluster.gpu.preset", "expected a GPU preset name");
          gpu_name = gp.Scalar();
        }
        inline_gpu = g;
      } else {
        fail(gpu_at, "cluster.gpu", "expected a GPU preset name or {preset: name, key: value, ...}");
      }
    }
    const std::string gpath = preset_file("gpus", gpu_name, gpu_at, "cluster.gpu");
    walk(load_yaml_file(gpath, gpu_at, "cluster.gpu"), "gpu", "gpu", gpath, false);
    require("gpu", {gpath, 0});
    s_.cluster.gpu.name = gpu_name;
    s_.cluster.gpu.preset = gpu_name;
    s_.cluster.gpu.preset_memory = s_.cluster.gpu.memory;
    if (inline_gpu.IsDefined()) {
      walk(inline_gpu, "gpu", "cluster.gpu", file_, true);
      name_hardware_changes("gpu", inline_gpu, s_.cluster.gpu.name);
    }
    // Host CPU (topologies/cpus/): named by the cluster preset, or by the scenario's cluster.cpu.
    const YAML::Node preset_cpu = child(p, "cpu");
    const YAML::Node scenario_cpu = child(c, "cpu");
    const Loc cpu_at =
        scenario_cpu.IsDefined() ? loc("cluster.cpu", scenario_cpu, file_, true) : Loc{path, line_of(preset_cpu)};
    // As for the GPU: a preset name, or {preset: name, key: value, ...} whose keys override the preset's (without
    // `preset`, the cluster preset's CPU is the base). Names are kept as strings: assigning a YAML::Node rebinds
    // every node that shares it.
    // A topology file's cpu takes the same two forms (docs/topologies.md): its {preset: name, key: value, ...} keys
    // override the CPU preset, and the scenario's inline keys (without `preset`) override them in turn; a scenario
    // that names a CPU preset replaces the topology's CPU, overrides included.
    std::string topology_cpu = preset_cpu.IsDefined() && preset_cpu.IsScalar() ? preset_cpu.Scalar() : std::string();
    YAML::Node topology_cpu_keys(YAML::NodeType::Undefined);
    if (preset_cpu.IsDefined() && preset_cpu.IsMap()) {
      const YAML::Node cp = preset_cpu["preset"];
      if (!cp.IsDefined() || !cp.IsScalar())
        fail(cp.IsDefined() ? Loc{path, line_of(cp)} : Loc{path, line_of(preset_cpu)}, "cluster.cpu.preset",
             "expected a CPU preset name: inline CPU keys need a base, add preset: <name> (topologies/cpus/)");
      topology_cpu = cp.Scalar();
      topology_cpu_keys = preset_cpu;
    } else if (preset_cpu.IsDefined() && !preset_cpu.IsScalar()) {
      fail(Loc{path, line_of(preset_cpu)}, "cluster.cpu",
           "expected a CPU preset name (topologies/cpus/) or {preset: name, key: value, ...}");
    }
    std::string cpu_name =
        scenario_cpu.IsDefined() ? (scenario_cpu.IsScalar() ? scenario_cpu.Scalar() : std::string()) : topology_cpu;
    YAML::Node inline_cpu(YAML::NodeType::Undefined);
    if (const YAML::Node& sc = scenario_cpu; sc.IsDefined() && sc.IsMap()) {
      cpu_name = topology_cpu;
      if (const YAML::Node cp = sc["preset"]; cp.IsDefined()) {
        if (!cp.IsScalar())
          fail(loc("cluster.cpu.preset", cp, file_, true), "cluster.cpu.preset", "expected a CPU preset name");
        cpu_name = cp.Scalar();
        topology_cpu_keys = YAML::Node(YAML::NodeType::Undefined); // another CPU: not the topology's overrides
      }
      if (cpu_name.empty())
        fail(cpu_at, "cluster.cpu", "inline CPU keys need a base: add preset: <name> (topologies/cpus/)");
      inline_cpu = sc;
    } else if (scenario_cpu.IsDefined() && !scenario_cpu.IsScalar()) {
      fail(cpu_at, "cluster.cpu", "expected a CPU preset name (topologies/cpus/) or {preset: name, key: value, ...}");
    } else if (scenario_cpu.IsDefined()) {
      topology_cpu_keys = YAML::Node(YAML::NodeType::Undefined); // cluster.cpu: <name> replaces the topology's CPU
    }
    if (!cpu_name.empty()) {
      const std::string cpath = preset_file("cpus", cpu_name, cpu_at, "cluster.cpu");
      walk(load_yaml_file(cpath, cpu_at, "cluster.cpu"), "cpu", "cpu", cpath, false);
      require("cpu", {cpath, 0});
      s_.cluster.cpu.name = cpu_name;
      s_.cluster.cpu.preset = cpu_name;
      if (topology_cpu_keys.IsDefined()) {
        // The topology file's overrides, labelled as the scenario's are: "threadripper-pro-5975wx (modified:
        // cores=32)", unless the file names the CPU itself (cpu.name).
        walk(topology_cpu_keys, "cpu", "cluster.cpu", path, false);
        std::string modified;
        for (const auto& kv : topology_cpu_keys)
          if (const std::string k = yaml_text(kv.first); k != "preset" && k != "name" && k != "source")
            modified += (modified.empty() ? "" : ", ") + k + "=" + yaml_text(kv.second);
        if (!topology_cpu_keys["name"].IsDefined() && !modified.empty())
          s_.cluster.cpu.name += " (modified: " + modified + ")";
      }
      if (inline_cpu.IsDefined()) {
        walk(inline_cpu, "cpu", "cluster.cpu", file_, true);
        name_hardware_changes("cpu", inline_cpu, s_.cluster.cpu.name);
      }
      resolve_cpu_peak(cpath);
    }
  }

  /// cluster.cpu.peak_fp32 from its components (CpuSpec, derived_peak_fp32), or the explicit key. A layer is where a
  /// key was last set: the CPU preset file, the scenario file, the command line (later ones win). base_clock,
  /// fp32_simd_lanes and fma_units come all or none. An explicit peak_fp32 set in a later layer than every component
  /// (cores included) overrides them; otherwise, given with the components, it must agree with their product to
  /// 0.1 % (the digits a datasheet prints), and the explicit value is kept. Without components peak_fp32 is
  /// required. Errors name the key and its file and line.
  void resolve_cpu_peak(const std::string& preset_path) {
    CpuSpec& c = s_.cluster.cpu;
    // 0 the command line, 1 the scenario, 2 a topology file's cluster.cpu keys, 3 the CPU preset, 4 unset
    const auto layer = [&](const std::string& k) {
      auto it = where_.find(k);
      if (it == where_.end())
        return 4;
      return it->second.file == kCli ? 0 : it->second.file == file_ ? 1 : it->second.file == preset_path ? 3 : 2;
    };
    const char* const parts[] = {"cpu.base_clock", "cpu.fp32_simd_lanes", "cpu.fma_units"};
    std::vector<std::string> given, missing;
    for (const char* k : parts)
      (where_.count(k) ? given : missing).emplace_back(k);
    const auto join = [](const std::vector<std::string>& v) {
      std::string out;
      for (const auto& k : v)
        out += (out.empty() ? "" : " and ") + k.substr(4); // without "cpu."
      return out;
    };
    if (!given.empty() && !missing.empty())
      fail(where(given.front()), shown(given.front()),
           "the components of peak_fp32 come together: " + join(given) + " given without " + join(missing),
           "give base_clock, fp32_simd_lanes and fma_units (peak = cores x the three x 2), or peak_fp32 alone");
    const bool explicit_peak = where_.count("cpu.peak_fp32") > 0;
    if (given.empty()) {
      if (!explicit_peak)
        fail({preset_path, 0}, "cpu.peak_fp32", "required key missing",
             "give peak_fp32, or base_clock, fp32_simd_lanes and fma_units (peak = cores x the three x 2)");
      return; // the preset's (or scenario's) peak_fp32; cores only documents
    }
    const FlopRate derived = derived_peak_fp32(c);
    if (!explicit_peak) {
      c.peak_fp32 = derived;
      return;
    }
    // The component set in the latest layer (cores counts: --set cores=32 changes the product).
    std::string latest = "cpu.cores";
    for (const char* k : parts)
      if (layer(k) < layer(latest))
        latest = k;
    if (layer("cpu.peak_fp32") < layer(latest))
      return; // an override of the components below it
    if (std::abs(c.peak_fp32.value() - derived.value()) <= 1e-3 * derived.value())
      return;
    char product[200];
    std::snprintf(product, sizeof product, "%d x %.6g GHz x %d x %d x 2 = %.6g TFLOPS", c.cores,
                  c.base_clock.value() / 1e9, c.fp32_simd_lanes, c.fma_units, derived.value() / 1e12);
    char peak[64];
    std::snprintf(peak, sizeof peak, "%.6g TFLOPS", c.peak_fp32.value() / 1e12);
    const std::string at_key = layer(latest) < layer("cpu.peak_fp32") ? latest : std::string("cpu.peak_fp32");
    fail(where(at_key), shown(at_key),
         shown("cpu.peak_fp32") + " = " + peak +
             " disagrees with cores x base_clock x fp32_simd_lanes x fma_units x 2 = " + product,
         "give peak_fp32 or its components, or make them agree");
  }

  // ---- DeepSpeed ds_config.json
  // Applied before the scenario's own keys, so a key written in the scenario (or --set) wins over the JSON.
  void import_deepspeed(const YAML::Node& ds) {
    const Loc at = loc("zero.deepspeed_config", ds, file_, true);
    if (!ds.IsScalar())
      fail(at, "zero.deepspeed_config", "expected a path to a ds_config.json");
    const std::string path = resolve_path(ds.Scalar(), at);
    s_.zero.deepspeed_config = path;
    std::string text;
    const json j = parse_json(path, at, "zero.deepspeed_config", text);
    if (!j.is_object())
      fail({path, 1}, "zero.deepspeed_config", "expected a JSON object (a DeepSpeed config)");
    const auto jloc = [&](const std::string& k, const std::string& after = {}) {
      return Loc{path, json_line_of_key(text, k, after)};
    };
    classify_ds_top_level(j, jloc, path);
    if (j.contains("zero_optimization"))
      import_zero_optimization(j["zero_optimization"], path, text);
    import_precision(j, jloc, path);
    if (j.contains("aio") && !j["aio"].is_null())
      import_aio(j["aio"], jloc);
    if (j.contains("activation_checkpointing") && !j["activation_checkpointing"].is_null())
      import_activation_checkpointing(j["activation_checkpointing"], jloc);
    if (j.contains("data_types") && !j["data_types"].is_null())
      check_data_types(j["data_types"], jloc, path);
    // data_types.grad_accum_dtype (deepspeed/runtime/config.py, DtypeEnum l.103-106: fp32/float32/float,
    // fp16/float16/half, bf16/bfloat16); null = the model's dtype.
    if (j.contains("data_types") && j["data_types"].is_object() && j["data_types"].contains("grad_accum_dtype") &&
        !j["data_types"]["grad_accum_dtype"].is_null()) {
      const json& v = j["data_types"]["grad_accum_dtype"];
      const Loc l = jloc("grad_accum_dtype", "data_types");
      const std::string shown_key = "data_types.grad_accum_dtype";
      if (!v.is_string())
        fail(l, shown_key, "expected a dtype name (fp32, fp16, bf16), got '" + v.dump() + "'");
      std::string t = v.get<std::string>();
      if (t == "float32" || t == "float")
        t = "fp32";
      else if (t == "float16" || t == "half")
        t = "fp16";
      else if (t == "bfloat16")
        t = "bf16";
      const KeySpec& spec = *find_key("zero.grad_accum_dtype");
      apply(spec, parse_scalar(spec, t, l, shown_key), l, shown_key);
    }
    // communication_data_type (top level; deepspeed/runtime/config.py get_communication_data_type): null = the
    // model's dtype; otherwise fp16, bf16 or fp32 in any case (DeepSpeed lower()s it), anything else a ValueError.
    if (j.contains("communication_data_type") && !j["communication_data_type"].is_null()) {
      const json& v = j["communication_data_type"];
      const Loc l = jloc("communication_data_type");
      const std::string shown_key = "communication_data_type";
      if (!v.is_string())
        fail(l, shown_key, "expected fp16, bf16 or fp32, got '" + v.dump() + "'");
      std::string t = v.get<std::string>();
      std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      const KeySpec& spec = *find_key("zero.communication_data_type");
      apply(spec, parse_scalar(spec, t, l, shown_key), l, shown_key);
    }
    // gradient_clipping (top level; deepspeed/runtime/config.py get_gradient_clipping, default 0.0): a number, or
    // "auto", which HF Trainer fills from --max_grad_norm (transformers integrations/deepspeed.py
    // trainer_config_process; TrainingArguments.max_grad_norm defaults to 1.0): applied as 1.0, with a note.
    ds_auto_clip_ = false;
    if (j.contains("gradient_clipping") && !j["gradient_clipping"].is_null()) {
      const json& v = j["gradient_clipping"];
      const Loc l = jloc("gradient_clipping");
      const KeySpec& spec = *find_key("training.gradient_clipping");
      std::string t;
      if (v.is_string() && v.get<std::string>() == "auto") {
        t = "1.0";
        ds_auto_clip_ = true;
      } else if (!v.is_number() || !json_scalar_text(v, t)) {
        fail(l, "gradient_clipping", "expected a number (0 = no clipping) or \"auto\", got '" + v.dump() + "'");
      }
      apply(spec, parse_scalar(spec, t, l, "gradient_clipping"), l, "gradient_clipping");
    }
    for (const ForeignName& f : foreign_names()) {
      const std::string jk(f.name);
      const std::string tk(f.key);
      if (!f.ds_batch || !j.contains(jk))
        continue;
      const json& v = j[jk];
      if (v.is_string() && v.get<std::string>() == "auto") {
        ds_auto_batch_.emplace_back(jk, tk); // finish_auto_batch_note
        continue;
      }
      if (!v.is_number_integer())
        fail(jloc(jk), jk, "expected a whole number or \"auto\", got '" + v.dump() + "'");
      const KeySpec& spec = *find_key(tk);
      std::string t; // an integer beyond int64 stays as written, for parse_scalar's range check
      json_scalar_text(v, t);
      apply(spec, parse_scalar(spec, t, jloc(jk), jk), jloc(jk), jk);
    }
    import_optimizer(j, jloc);
    // No "optimizer" section: the client's optimizer steps (deepspeed.initialize(optimizer=...); HF Trainer passes
    // its own torch.optim.AdamW, transformers integrations/deepspeed.py deepspeed_optim_sched), checked against
    // the offload in validate_client_optimizer.
    ds_no_optimizer_.reset();
    if (!j.contains("optimizer") || j["optimizer"].is_null())
      ds_no_optimizer_ = std::make_pair(Loc{path, json_line_of_key(text, "offload_optimizer")}, hf_auto_key(j));
    if (j.contains("zero_force_ds_cpu_optimizer")) {
      const json& v = j["zero_force_ds_cpu_optimizer"];
      const Loc l = jloc("zero_force_ds_cpu_optimizer");
      if (!v.is_boolean())
        fail(l, "zero_force_ds_cpu_optimizer", "expected true or false, got '" + v.dump() + "'");
      const KeySpec& spec = *find_key("zero.force_ds_cpu_optimizer");
      apply(spec, parse_scalar(spec, v.get<bool>() ? "true" : "false", l, "zero_force_ds_cpu_optimizer"), l,
            "zero_force_ds_cpu_optimizer");
    }
    if (j.contains("timers") && !j["timers"].is_null())
      import_timers(j["timers"], jloc);
    // train_batch_size: DeepSpeed asserts train_batch_size == micro-batch x GA x world size (runtime/config.py
    // _batch_assertion); checked once the scenario's own keys and the cluster are known (validate_batch).
    if (j.contains("train_batch_size")) {
      const json& v = j["train_batch_size"];
      if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t{std::numeric_limits<int>::max()})
        fail(jloc("train_batch_size"), "train_batch_size",
             "'" + v.dump() + "' is out of range (at most " + std::to_string(std::numeric_limits<int>::max()) + ")");
      if (v.is_number_integer())
        ds_train_batch_ = std::make_pair(v.get<std::int64_t>(), jloc("train_batch_size"));
      else if (!(v.is_string() && v.get<std::string>() == "auto"))
        fail(jloc("train_batch_size"), "train_batch_size",
             "expected a whole number or \"auto\", got '" + v.dump() + "'");
    }
  }

  /// The `data_types` section apart from grad_accum_dtype (imported by import_deepspeed): DeepSpeed reads it with
  /// dict.get (deepspeed/runtime/config.py get_data_types_params), so it must be a JSON object. param_dtype and
  /// buffer_dtype are kept for check_data_types_for_release (DeepSpeed reads them from 0.19.2). Another key DeepSpeed
  /// ignores: a near miss of these is an error (a typo DeepSpeed would ignore), anything else a note.
  template <class JLoc>
  void check_data_types(const json& d, const JLoc& jloc, const std::string& path) {
    if (!d.is_object())
      fail(jloc("data_types"), "data_types",
           "expected a JSON object like {\"grad_accum_dtype\": \"fp32\"}, got '" + d.dump() + "'");
    const std::vector<std::string> fields = {"grad_accum_dtype", "param_dtype", "buffer_dtype"};
    const std::string file = fs::path(path).filename().string();
    for (const auto& [k, v] : d.items()) {
      const Loc at = jloc(k, "data_types");
      const std::string shown_key = "data_types." + k;
      const std::string here = file + ":" + std::to_string(at.line) + ": ";
      if (std::find(fields.begin(), fields.end(), k) == fields.end()) {
        if (std::string hint = did_you_mean(k, fields); !hint.empty())
          fail(at, shown_key, "unknown DeepSpeed data_types field (DeepSpeed ignores it, so it would not take effect)",
               hint);
        s_.import_notes.push_back(here + shown_key + " is not a DeepSpeed data_types field: DeepSpeed ignores it, " +
                                  "and so does the simulation");
        continue;
      }
      if (k == "grad_accum_dtype" || v.is_null()) // imported by import_deepspeed; null is DeepSpeed's default
        continue;
      // Whether DeepSpeed reads the field at all depends on the release, which zero.deepspeed_version (a scenario key
      // or --set, applied after this import) gives: checked in check_data_types_for_release.
      ds_data_types_.push_back({at, k, v, here});
    }
  }

  /// data_types.param_dtype / buffer_dtype of an imported ds_config, checked once the release is known (after
  /// apply_deepspeed_version): before 0.19.2 DeepSpeed reads neither (runtime/config.py get_data_types_params is a
  /// dict.get of grad_accum_dtype only; PARAM_DTYPE and BUFFER_DTYPE appear in runtime/constants.py at v0.19.2,
  /// l.480-483), so they are ignored: a note. From 0.19.2 they are DtypeEnum names, and param_dtype must equal the
  /// model dtype the fp16 / bf16 sections select (engine.py _assert_valid_mixed_precision_config, l.1325 @v0.19.2,
  /// l.1457 @v0.19.5): a different one is refused, an equal one changes nothing; buffer_dtype casts the model's
  /// registered buffers (rotary inv_freq, ...), which the simulation does not hold: a note.
  void check_data_types_for_release() {
    // DtypeEnum (deepspeed/runtime/config.py v0.19.5 l.101-105): each name and the dtype it stands for.
    static const std::vector<std::pair<std::string, std::string>> dtype_names =
        {{"fp16", "fp16"},      {"float16", "fp16"},  {"half", "fp16"},  {"torch.float16", "fp16"},
         {"fp32", "fp32"},      {"float32", "fp32"},  {"float", "fp32"}, {"torch.float32", "fp32"},
         {"bf16", "bf16"},      {"bfloat16", "bf16"}, {"int8", "int8"},  {"torch.bfloat16", "bf16"},
         {"torch.int8", "int8"}};
    for (const PendingDataType& d : ds_data_types_) {
      const std::string shown_key = "data_types." + d.field;
      if (s_.zero.deepspeed_before(0, 19, 2)) {
        s_.import_notes.push_back(d.here + shown_key + " " + d.value.dump() + " is ignored: DeepSpeed reads it from " +
                                  "0.19.2, and zero.deepspeed_version is " + s_.zero.deepspeed_version_text);
        continue;
      }
      const json& v = d.value;
      const std::string name = v.is_string() ? v.get<std::string>() : std::string();
      const auto named =
          v.is_string() ? std::find_if(dtype_names.begin(), dtype_names.end(),
                                       [&](const std::pair<std::string, std::string>& n) { return n.first == name; })
                        : dtype_names.end();
      if (named == dtype_names.end())
        fail(d.at, shown_key,
             "expected a dtype name (fp32, fp16, bf16, or float32, float16, bfloat16), got '" + v.dump() + "'");
      if (d.field == "param_dtype") {
        if (!ds_precision_mode_.empty() && named->second != ds_precision_mode_)
          fail(d.at, shown_key,
               "param_dtype " + v.dump() + " is not the model dtype the fp16/bf16 sections select (" +
                   ds_precision_mode_ + "): DeepSpeed 0.19.2+ refuses the pair at start-up",
               "set the matching fp16/bf16 \"enabled\" flag or remove data_types.param_dtype");
        if (ds_precision_mode_.empty())
          s_.import_notes.push_back(d.here + shown_key + " " + v.dump() +
                                    " is not checked: DeepSpeed 0.19.2+ requires it to match the fp16/bf16 mode, "
                                    "which an \"auto\" here leaves to HF Trainer's flag; the simulation trains in "
                                    "training.precision");
        continue;
      }
      s_.import_notes.push_back(d.here + shown_key + " is not imported: it casts the model's registered buffers " +
                                "(e.g. rotary inv_freq; DeepSpeed 0.19.2+), which the simulation does not hold");
    }
  }

  /// Sorts every top-level key of an imported ds_config (ds_top_level_keys()): an imported one is left to
  /// import_deepspeed; a DeepSpeed key the simulation leaves out gets one note in import_notes when it is set (not
  /// null, false, {"enabled": false} or DeepSpeed's default); another parallelism above size 1 (tensor_parallel's
  /// autotp_size / tp_size, pipeline.stages, sequence_parallel_size) is an error, as the simulation would answer
  /// for another job; a key DeepSpeed does not read is an error when it is a near miss of one it reads (a typo
  /// DeepSpeed would ignore silently), else a note. Keys are visited in file order, so the first error is the
  /// first in the file.
  template <class JLoc>
  void classify_ds_top_level(const json& j, const JLoc& jloc, const std::string& path) {
    std::vector<std::string> names;
    for (const DsTopKey& k : ds_top_level_keys())
      names.emplace_back(k.name);
    std::vector<std::pair<int, std::string>> keys; // (line, key)
    for (const auto& [k, v] : j.items())
      keys.emplace_back(jloc(k).line, k);
    std::stable_sort(keys.begin(), keys.end());
    const std::string file = fs::path(path).filename().string();
    constexpr const char* kDpOnly = "not modelled: zerosim simulates ZeRO data parallelism only";
    for (const auto& [line, k] : keys) {
      const json& v = j[k];
      const Loc at{path, line};
      const std::string here = file + ":" + std::to_string(line) + ": ";
      const auto f = std::find_if(ds_top_level_keys().begin(), ds_top_level_keys().end(),
                                  [&, &k = k](const DsTopKey& d) { return d.name == k; });
      if (f == ds_top_level_keys().end()) {
        if (std::string hint = did_you_mean(k, names); !hint.empty())
          fail(at, k,
               "unknown DeepSpeed config key (DeepSpeed ignores unknown top-level keys, so it would not take "
               "effect)",
               hint);
        s_.import_notes.push_back(here + k + " is not a DeepSpeed config key: DeepSpeed ignores it, and so does " +
                                  "the simulation");
        continue;
      }
      if (f->kind == DsTopKind::IMPORTED)
        continue;
      if (f->kind == DsTopKind::PARALLEL) {
        // A size written as a number above 1 (an "auto" or a missing one is DeepSpeed's default, 1 or decided by
        // the model code, which a data-parallel run does not have). tensor_parallel's sizes are pydantic int fields
        // (deepspeed/runtime/tensor_parallel/config.py TPConfig.tp_size, TPTrainingConfig.autotp_size), which
        // convert a string of digits ("2") to its number in pydantic's lax mode: such a string counts as the number.
        const auto above_one = [](const json& x) {
          if (x.is_string()) {
            const std::string t = x.get<std::string>();
            return !t.empty() && t.size() < 18 &&
                   std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c) != 0; }) &&
                   std::stoll(t) > 1;
          }
          return x.is_number() && x.get<double>() > 1;
        };
        if (k == "sequence_parallel_size") {
          // DeepSpeed reads it raw, with no conversion: DeepSpeedConfig.__init__ divides the world size by it
          // (deepspeed/runtime/config.py, v0.18.5 l.680-681, inside a bare try/except that then falls back to
          // world size 1), and deepspeed/__init__.py l.168-170 passes it to the device mesh as a dimension. A
          // string ("2") or a fraction would silently change the batch arithmetic there: refused here. null and
          // "auto" leave it to the model code, as before.
          const bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                       v.get<double>() == std::floor(v.get<double>()));
          if (!v.is_null() && !(v.is_string() && v.get<std::string>() == "auto") && (!whole || v.get<double>() < 1))
            fail(at, k, "expected a whole number >= 1 (a JSON number, not a string), got '" + v.dump() + "'",
                 "DeepSpeed divides the world size by it as written, without converting a string; write 1 or "
                 "remove it");
          if (above_one(v))
            fail(at, k, kDpOnly, "Ulysses sequence parallelism of size " + v.dump() + "; set it to 1 or remove it");
        } else if (v.is_object()) {
          const char* const fields[] = {"autotp_size", "tp_size", "stages"};
          for (const char* sub : fields)
            if (v.contains(sub) && above_one(v[sub]))
              fail(jloc(sub, k), k + "." + sub, kDpOnly,
                   std::string(k == "pipeline" ? "pipeline" : "tensor") + " parallelism of size " + v[sub].dump() +
                       "; set it to 1 or remove it");
          if (k == "tensor_parallel" && v.contains("tp") && v["tp"].is_object() && v["tp"].contains("tp_size") &&
              above_one(v["tp"]["tp_size"]))
            fail(jloc("tp_size", k), k + ".tp.tp_size", kDpOnly,
                 "tensor parallelism of size " + v["tp"]["tp_size"].dump() + "; set it to 1 or remove it");
        } else if (!v.is_null()) {
          fail(at, k, "expected a JSON object, got '" + v.dump() + "'");
        }
        continue;
      }
      const bool off =
          v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
          (v.is_object() && v.contains("enabled") && v["enabled"].is_boolean() && !v["enabled"].get<bool>()) ||
          (k == "gradient_predivide_factor" && v.is_number() && v.get<double>() == 1.0) ||
          (k == "gradient_allreduce_op" && v.is_string() && v.get<std::string>() == "mean");
      if (!off)
        s_.import_notes.push_back(here + k + " is not imported: " + std::string(f->why));
    }
  }

  /// The first key of `j` that holds "auto" among those HF Trainer fills in (transformers integrations/deepspeed.py
  /// HfTrainerDeepSpeedConfig.trainer_config_process and trainer_config_finalize, fill_match / fill_only), or ""
  /// when there is none. Such an "auto" marks a config written for HF Trainer; an "auto" anywhere else is left for
  /// DeepSpeed itself, which HF Trainer does not rewrite.
  static std::string hf_auto_key(const json& j) {
    static const char* const kFilled[] = {"train_micro_batch_size_per_gpu",
                                          "gradient_accumulation_steps",
                                          "train_batch_size",
                                          "gradient_clipping",
                                          "optimizer.params.lr",
                                          "optimizer.params.betas",
                                          "optimizer.params.eps",
                                          "optimizer.params.weight_decay",
                                          "scheduler.params.warmup_min_lr",
                                          "scheduler.params.warmup_max_lr",
                                          "scheduler.params.total_num_steps",
                                          "scheduler.params.warmup_num_steps",
                                          "fp16.enabled",
                                          "amp.enabled",
                                          "amp.opt_level",
                                          "bf16.enabled",
                                          "zero_optimization.reduce_bucket_size",
                                          "zero_optimization.stage3_prefetch_bucket_size",
                                          "zero_optimization.stage3_param_persistence_threshold"};
    for (const char* dotted : kFilled) {
      const json* node = &j;
      std::string_view rest(dotted);
      while (node && !rest.empty()) {
        const std::size_t dot = rest.find('.');
        const std::string part(rest.substr(0, dot));
        rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
        node = node->is_object() && node->contains(part) ? &(*node)[part] : nullptr;
      }
      if (node && node->is_string() && node->get<std::string>() == "auto")
        return dotted;
    }
    return {};
  }

  /// JSON scalar as the text a YAML scenario would hold; false for arrays, objects and null.
  static bool json_scalar_text(const json& v, std::string& out) {
    if (v.is_string())
      out = v.get<std::string>();
    else if (v.is_boolean())
      out = v.get<bool>() ? "true" : "false";
    else if (v.is_number_unsigned()) // beyond int64 (18446744073709551615): as written, for the range check
      out = std::to_string(v.get<std::uint64_t>());
    else if (v.is_number_integer())
      out = std::to_string(v.get<std::int64_t>());
    else if (v.is_number_float()) {
      std::ostringstream ss;
      ss.precision(17);
      ss << v.get<double>();
      out = ss.str();
    } else
      return false;
    return true;
  }

  /// A ZeRO++ or MiCS field (ds_unmodelled_fields()): its type is checked as DeepSpeed's config does, and a value
  /// that changes DeepSpeed's behaviour is kept in zero.unmodelled_ds_fields for the report's note.
  /// Records (or, `active` false, forgets) an unmodelled offload field set away from DeepSpeed's default, for the
  /// report's note (ZeroConfig::unmodelled_offload_fields); the last source to set it wins, as for other keys.
  void note_offload_extra(const std::string& offload_key, const std::string& field, bool active,
                          const std::string& value) {
    const std::string name = offload_key.substr(offload_key.find('.') + 1) + "." + field; // offload_optimizer.x
    auto& list = s_.zero.unmodelled_offload_fields;
    list.erase(std::remove_if(list.begin(), list.end(), [&](const auto& p) { return p.first == name; }), list.end());
    if (active)
      list.emplace_back(name, value);
  }

  void note_unmodelled(const std::string& name, const json& v, const Loc& at, const std::string& key) {
    const auto& fields = ds_unmodelled_fields();
    const auto f = std::find_if(fields.begin(), fields.end(), [&](const DsUnmodelled& d) { return d.name == name; });
    if (f == fields.end())
      return;
    bool active = false;
    switch (f->kind) {
    case DsFieldKind::BOOL:
      if (!v.is_boolean())
        fail(at, key, "expected true or false, got '" + v.dump() + "'");
      active = v.get<bool>();
      break;
    case DsFieldKind::INT:
      if (!v.is_number_integer())
        fail(at, key, "expected a whole number, got '" + v.dump() + "'");
      active = v.get<std::int64_t>() > f->active_above;
      break;
    case DsFieldKind::OBJECT:
      if (!v.is_null() && !v.is_object())
        fail(at, key, "expected a JSON object or null, got '" + v.dump() + "'");
      active = v.is_object();
      break;
    }
    if (active)
      s_.zero.unmodelled_ds_fields.emplace_back(name, v.dump());
  }

  /// `zero_optimization`: every field must be one DeepSpeed accepts (ds_zero_fields()); the modelled ones are
  /// applied through the key table, the others are ignored.
  void import_zero_optimization(const json& z, const std::string& path, const std::string& text) {
    const auto zloc = [&](const std::string& k) { return Loc{path, json_line_of_key(text, k, "zero_optimization")}; };
    const KeySpec& stage_spec = *find_key("zero.stage");
    if (z.is_boolean()) { // legacy form: true = stage 1 (config.py read_zero_config_deprecated)
      const Loc l{path, json_line_of_key(text, "zero_optimization")};
      apply(stage_spec, parse_scalar(stage_spec, z.get<bool>() ? "1" : "0", l, "zero_optimization"), l,
            "zero_optimization");
      return;
    }
    if (!z.is_object())
      fail({path, json_line_of_key(text, "zero_optimization")}, "zero_optimization", "expected a JSON object");
    std::vector<std::string> names;
    for (const DsField& f : ds_zero_fields())
      names.emplace_back(f.name);
    for (const auto& [k, v] : z.items()) {
      const std::string key = "zero_optimization." + k;
      const auto f = std::find_if(ds_zero_fields().begin(), ds_zero_fields().end(),
                                  [&, &k = k](const DsField& d) { return d.name == k; });
      if (f == ds_zero_fields().end())
        fail(zloc(k), key, "unknown DeepSpeed ZeRO field (DeepSpeed rejects unknown zero_optimization fields)",
             did_you_mean(k, names));
      if (f->key.empty()) { // a real DeepSpeed field this simulator does not model
        note_unmodelled(k, v, zloc(k), key);
        continue;
      }
      const KeySpec& spec = *find_key(f->key);
      std::string t;
      if (spec.type == KeyType::OFFLOAD && v.is_null()) {
        t = "none"; // Optional[...] = None: no offload
      } else if (spec.type == KeyType::OFFLOAD && v.is_object()) {
        const std::vector<std::string>& fields = ds_offload_fields(spec.path);
        for (const auto& [sk, sv] : v.items()) {
          if (std::find(fields.begin(), fields.end(), sk) == fields.end())
            fail(zloc(k), key + "." + sk, "unknown DeepSpeed offload field", did_you_mean(sk, fields));
          if (sk == "ratio") { // offload_config.py: ratio in [0, 1], default 1 (everything offloaded)
            if (!sv.is_number() || !(sv.get<double>() >= 0 && sv.get<double>() <= 1))
              fail(zloc(k), key + ".ratio", "expected a number in [0, 1], got '" + sv.dump() + "'");
            if (sv.get<double>() < 1)
              fail(zloc(k), key + ".ratio", "partial optimizer offload (ratio < 1) is not simulated yet");
          }
        }
        for (const auto& [sk, sv] : v.items())
          if (const OffloadExtra* e = offload_extra(sk); e != nullptr) {
            bool active = false;
            if (const std::string why =
                    check_offload_extra(*e, sv.is_boolean(), sv.is_boolean() && sv.get<bool>(), sv.is_number(),
                                        sv.is_number() ? sv.get<double>() : 0.0, sv.is_null(), sv.is_string(), active);
                !why.empty())
              fail(zloc(k), key + "." + sk, why + ", got '" + sv.dump() + "'");
            note_offload_extra(std::string(spec.path), sk, active, sv.dump());
          }
        for (const auto& [sk, sv] : v.items())
          if (const std::string flat = offload_field_key(spec.path, sk); !flat.empty()) {
            const KeySpec& fs = *find_key(flat);
            std::string ft;
            if (fs.type == KeyType::BOOL) { // pin_memory
              if (!sv.is_boolean())
                fail(zloc(k), key + "." + sk, "expected true or false, got '" + sv.dump() + "'");
              ft = sv.get<bool>() ? "true" : "false";
            } else if (!sv.is_number() || !json_scalar_text(sv, ft)) {
              fail(zloc(k), key + "." + sk, "expected a number, got '" + sv.dump() + "'");
            }
            apply(fs, parse_scalar(fs, ft, zloc(k), key + "." + sk), zloc(k), key + "." + sk);
          }
        if (!v.contains("device"))
          t = "none"; // offload_config.py: device defaults to "none"
        else if (!v["device"].is_string() || !json_scalar_text(v["device"], t))
          fail(zloc(k), key + ".device", "expected \"device\": \"none\"|\"cpu\"|\"nvme\"");
      } else if (!json_scalar_text(v, t)) {
        fail(zloc(k), key, "expected " + type_name(spec.type, spec.choices) + ", got '" + v.dump() + "'");
      }
      // "auto" is legal only where HF Trainer fills it in (the ELEMENTS bucket keys, calibration.md §4.3);
      // elsewhere it reaches parse_scalar and is reported as a wrong value.
      if (spec.type == KeyType::BOOL && !v.is_boolean())
        fail(zloc(k), key, "expected true or false, got '" + v.dump() + "'");
      if ((spec.type == KeyType::INT || spec.type == KeyType::ELEMENTS) && v.is_boolean())
        fail(zloc(k), key, "expected a number, got '" + v.dump() + "'");
      // DeepSpeed's zero_optimization fields are pydantic ints (runtime/zero/config.py): a JSON string passes only as
      // decimal digits ("500000000"); "5e8" is refused at launch ("unable to parse string as an integer"), so here.
      if ((spec.type == KeyType::INT || spec.type == KeyType::ELEMENTS) && v.is_string() && t != "auto" &&
          (t.empty() || t.find_first_not_of("0123456789") != std::string::npos))
        fail(zloc(k), key, "expected an integer, got the string '" + t + "'",
             "DeepSpeed's config refuses a string it cannot parse as an integer; write the number unquoted (" +
                 std::string(k) + ": 5e8 is accepted)");
      apply(spec, parse_scalar(spec, t, zloc(k), key), zloc(k), key);
    }
    // Deprecated booleans (config.py: cpu_offload -> offload_optimizer {device: cpu}, cpu_offload_param ->
    // offload_param {device: cpu}); config_utils.py refuses a deprecated field together with its replacement.
    for (const auto& [old_name, new_name] : {std::pair<const char*, const char*>{"cpu_offload", "offload_optimizer"},
                                             {"cpu_offload_param", "offload_param"}}) {
      if (!z.contains(old_name) || z[old_name].is_null())
        continue;
      const std::string key = std::string("zero_optimization.") + old_name;
      if (!z[old_name].is_boolean())
        fail(zloc(old_name), key, "expected true or false, got '" + z[old_name].dump() + "'");
      if (z.contains(new_name))
        fail(zloc(old_name), key,
             std::string("the deprecated ") + old_name + " cannot be given together with its replacement " + new_name,
             std::string("keep only \"") + new_name + "\"");
      const bool on = z[old_name].get<bool>();
      if (on) {
        const KeySpec& spec = *find_key(std::string("zero.") + new_name);
        apply(spec, parse_scalar(spec, "cpu", zloc(old_name), key), zloc(old_name), key);
      }
      // DeepSpeed warns whenever the field is written (newuser29 #11: accepted silently here before). By release:
      // up to 0.3.14 it is the offload switch itself (zero/config.py l.106-108 @v0.3.14; no offload_optimizer yet),
      // but apply_deepspeed_version refuses zero.deepspeed_version below 0.3.15, so the note below holds for every
      // release a scenario can name (review30 #11: no version gate needed);
      // 0.3.15-0.6.x warn "cpu_offload is deprecated. Please use offload_optimizer" (_sanity_check, l.65-78
      // @v0.3.15) and, when true, take offload_optimizer's defaults (get_default_offload_optimizer_config: device
      // cpu, pin_memory False, l.130-137); from 0.7.0 the pydantic model warns "Config parameter cpu_offload is
      // deprecated use offload_optimizer instead" (config_utils.py _process_deprecated_field) and builds the
      // replacement with new_param_fn: {device: cpu} from 0.7.1 (PR #2208), with the release's other defaults
      // (pin_memory True from 0.19.5). 0.7.0 alone builds it with device none, which that release still runs as
      // CPU offload (engine.py zero_cpu_offload l.648-649 and stage3.py _configure_offloading test only that
      // the section exists). cpu_offload_param maps to offload_param the same way.
      s_.import_notes.push_back(
          fs::path(path).filename().string() + ":" + std::to_string(zloc(old_name).line) + ": zero_optimization." +
          old_name + " is deprecated (DeepSpeed 0.3.15 and later warn and read it as " + new_name +
          (on ? std::string(" {device: cpu} with the release's other defaults): simulated as zero.") + new_name + " cpu"
              : std::string(" {device: cpu} only when true): false offloads nothing")) +
          "; write \"" + new_name + "\": {\"device\": \"cpu\"} instead");
    }
  }

  /// The `aio` section (deepspeed/runtime/swap_tensor/aio_config.py get_aio_config): block_size, queue_depth and
  /// intra_op_parallelism (`thread_count` before DeepSpeed 0.14) set zero.aio.*; single_submit, overlap_events and
  /// use_gds are accepted and not modelled. DeepSpeed reads the fields it knows and ignores others; a field it does
  /// not know is an error here, as it is most likely a typo.
  template <class JLoc>
  void import_aio(const json& a, const JLoc& jloc) {
    if (!a.is_object())
      fail(jloc("aio"), "aio", "expected a JSON object like {\"block_size\": 1048576, \"queue_depth\": 8}");
    static const std::vector<std::pair<std::string, std::string>> fields =
        {{"block_size", "zero.aio.block_size"},
         {"queue_depth", "zero.aio.queue_depth"},
         {"intra_op_parallelism", "zero.aio.intra_op_parallelism"},
         {"thread_count", "zero.aio.intra_op_parallelism"},
         {"single_submit", "zero.aio.single_submit"},
         {"overlap_events", "zero.aio.overlap_events"},
         {"use_gds", "zero.aio.use_gds"}};
    std::vector<std::string> names;
    for (const auto& f : fields)
      names.push_back(f.first);
    for (const auto& [k, v] : a.items()) {
      const std::string shown_key = "aio." + k;
      const auto f = std::find_if(fields.begin(), fields.end(), [&, &k = k](const auto& x) { return x.first == k; });
      if (f == fields.end())
        fail(jloc(k, "aio"), shown_key, "unknown DeepSpeed aio field", did_you_mean(k, names));
      const KeySpec& spec = *find_key(f->second);
      if (spec.type == KeyType::BOOL) { // single_submit, overlap_events, use_gds: accepted, not modelled
        if (!v.is_boolean())
          fail(jloc(k, "aio"), shown_key, "expected true or false, got '" + v.dump() + "'");
        apply(spec, parse_scalar(spec, v.template get<bool>() ? "true" : "false", jloc(k, "aio"), shown_key),
              jloc(k, "aio"), shown_key);
        continue;
      }
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.template get<std::uint64_t>() > 9007199254740992u))
        fail(jloc(k, "aio"), shown_key,
             v.is_number_integer() ? "'" + v.dump() + "' is out of range (at most 2^53)"
                                   : "expected a whole number, got '" + v.dump() + "'");
      // DeepSpeed's block_size is a byte count: bare numbers in the JSON are bytes.
      const std::string text =
          std::to_string(v.template get<std::int64_t>()) + (spec.type == KeyType::BYTES ? "B" : "");
      apply(spec, parse_scalar(spec, text, jloc(k, "aio"), shown_key), jloc(k, "aio"), shown_key);
    }
  }

  /// The `timers` section (deepspeed/utils/config.py get_timers_config): `throughput` with `enabled` and
  /// `synchronized` (booleans, default true) sets zero.throughput_timer_sync to their AND, located at the field that
  /// turned it off (else at `throughput`). Any other field is an error, as for `aio`.
  template <class JLoc>
  void import_timers(const json& t, const JLoc& jloc) {
    if (!t.is_object())
      fail(jloc("timers"), "timers", "expected a JSON object like {\"throughput\": {\"synchronized\": false}}");
    for (const auto& [k, v] : t.items()) {
      if (k != "throughput")
        fail(jloc(k, "timers"), "timers." + k, "unknown DeepSpeed timers field", did_you_mean(k, {"throughput"}));
    }
    if (!t.contains("throughput") || t["throughput"].is_null())
      return;
    const json& tp = t["throughput"];
    const Loc tl = jloc("throughput", "timers");
    if (!tp.is_object())
      fail(tl, "timers.throughput", "expected a JSON object like {\"enabled\": true, \"synchronized\": false}");
    bool sync = true;
    Loc at = tl;
    std::string shown_key = "timers.throughput";
    for (const auto& [k, v] : tp.items()) {
      const std::string key = "timers.throughput." + k;
      if (k != "enabled" && k != "synchronized")
        fail(jloc(k, "throughput"), key, "unknown DeepSpeed throughput timer field",
             did_you_mean(k, {"enabled", "synchronized"}));
      if (!v.is_boolean())
        fail(jloc(k, "throughput"), key, "expected true or false, got '" + v.dump() + "'");
      if (!v.template get<bool>() && sync) {
        sync = false;
        at = jloc(k, "throughput");
        shown_key = key;
      }
    }
    const KeySpec& spec = *find_key("zero.throughput_timer_sync");
    apply(spec, parse_scalar(spec, sync ? "true" : "false", at, shown_key), at, shown_key);
  }

  /// The `activation_checkpointing` section (deepspeed/runtime/activation_checkpointing/config.py): cpu_checkpointing
  /// sets training.cpu_checkpointing; partition_activations (a model-parallel partitioning, a no-op at model-parallel
  /// size 1), contiguous_memory_optimization, number_checkpoints, synchronize_checkpoint_boundary and profile are
  /// accepted and not modelled. An unknown field is an error, as for `aio`.
  template <class JLoc>
  void import_activation_checkpointing(const json& a, const JLoc& jloc) {
    if (!a.is_object())
      fail(jloc("activation_checkpointing"), "activation_checkpointing",
           "expected a JSON object like {\"cpu_checkpointing\": true}");
    static const std::vector<std::string> names = {"partition_activations",
                                                   "contiguous_memory_optimization",
                                                   "cpu_checkpointing",
                                                   "number_checkpoints",
                                                   "synchronize_checkpoint_boundary",
                                                   "profile"};
    for (const auto& [k, v] : a.items()) {
      const std::string shown_key = "activation_checkpointing." + k;
      const Loc l = jloc(k, "activation_checkpointing");
      if (std::find(names.begin(), names.end(), k) == names.end())
        fail(l, shown_key, "unknown DeepSpeed activation_checkpointing field", did_you_mean(k, names));
      if (k != "cpu_checkpointing")
        continue;
      if (!v.is_boolean())
        fail(l, shown_key, "expected true or false, got '" + v.dump() + "'");
      const KeySpec& spec = *find_key("training.cpu_checkpointing");
      apply(spec, parse_scalar(spec, v.template get<bool>() ? "true" : "false", l, shown_key), l, shown_key);
    }
  }

  /// True when section `section` of ds_config `j` writes "enabled" as true or false.
  static bool written_false_any(const json& j, const char* section) {
    return j.contains(section) && j[section].contains("enabled") && j[section]["enabled"].is_boolean();
  }

  /// `fp16` / `bf16` (or the legacy `bfloat16`) sections: {"enabled": true|false|"auto"}.
  template <class JLoc>
  void import_precision(const json& j, const JLoc& jloc, const std::string& path) {
    const auto enabled = [&](const char* section) -> int { // 1 true, 0 false/absent, -1 auto
      // A null bf16 is as absent (get_bfloat16_config's param_dict.get(BFLOAT16, None)); a null fp16 or bfloat16
      // is handed to the pydantic model as **None, a TypeError in DeepSpeed: refused below as no JSON object.
      if (!j.contains(section) || (std::string_view(section) == "bf16" && j[section].is_null()))
        return 0;
      const json& sec = j[section];
      if (!sec.is_object())
        fail(jloc(section), section, "expected a JSON object");
      if (!sec.contains("enabled"))
        return 0;
      const json& e = sec["enabled"];
      if (e.is_string() && e.get<std::string>() == "auto")
        return -1;
      if (!e.is_boolean())
        fail(jloc(section), std::string(section) + ".enabled", "expected true, false or \"auto\"");
      return e.get<bool>() ? 1 : 0;
    };
    // deepspeed/runtime/constants.py: BFLOAT16 = "bf16", BFLOAT16_OLD = "bfloat16" (kept for compatibility).
    // get_bfloat16_config (deepspeed/runtime/precision_config.py, v0.18.5 l.32-36) reads bfloat16 only when bf16 is
    // absent or null: with both written, bfloat16 is not read at all, whatever it says (noted below).
    const bool bf16_written = j.contains("bf16") && !j["bf16"].is_null();
    const char* bf_key = !bf16_written && j.contains("bfloat16") ? "bfloat16" : "bf16";
    const int bf16 = enabled(bf_key);
    const int fp16 = enabled("fp16");
    if (bf16_written && j.contains("bfloat16")) {
      const json& old = j["bfloat16"];
      const bool differs = old.is_object() && old.contains("enabled") && j["bf16"].is_object() &&
                           old["enabled"] != j["bf16"].value("enabled", json(false));
      s_.import_notes.push_back(
          fs::path(path).filename().string() + ":" + std::to_string(jloc("bfloat16").line) +
          ": bfloat16 is not imported: DeepSpeed reads this legacy name only when bf16 is absent or null, so bf16 " +
          "decides" + (differs ? " (bfloat16.enabled " + old["enabled"].dump() + " is ignored)" : ""));
    }
    // DeepSpeedConfig._initialize_params asserts that the two modes are not both enabled (deepspeed/runtime/
    // config.py, v0.18.5 l.782-785): the same refusal here, at the fp16 section.
    if (bf16 == 1 && fp16 == 1)
      fail(jloc("fp16"), "fp16.enabled",
           std::string(bf_key) + " and fp16 cannot both be enabled (DeepSpeed refuses the pair at start-up)",
           "enable one of them");
    ds_precision_mode_ = bf16 == 1 ? "bf16" : fp16 == 1 ? "fp16" : bf16 == 0 && fp16 == 0 ? "fp32" : "";
    if (bf16 == 0 && fp16 == 0 && !(written_false_any(j, bf_key) || written_false_any(j, "fp16")) &&
        !hf_auto_key(j).empty())
      ds_precision_mode_.clear(); // an HF Trainer config: its --bf16 / --fp16 flag adds the section
    const KeySpec& prec = *find_key("training.precision");
    // Neither enabled and at least one written disabled: DeepSpeed trains in fp32 without mixed precision
    // (engine.py: fp16_enabled() and bfloat16_enabled() false, so no FP16/BF16 wrapper and
    // communication_data_type fp32), simulated as training.precision fp32, with a note. Neither enabled because
    // none is written (sections absent, or present without "enabled": runtime/constants.py FP16_ENABLED_DEFAULT and
    // BFLOAT16_ENABLED_DEFAULT are False) runs fp32 as well in a raw DeepSpeed config; in an HF Trainer config (one
    // with "auto" in a key HF Trainer fills, hf_auto_key, as validate_client_optimizer tells them apart) accelerate's DeepSpeedPlugin adds the
    // section of --bf16 / --fp16 (set_mixed_precision), so there training.precision stays as the scenario sets it.
    // Either way training.precision in the scenario or --set wins, without an override note.
    const auto written_false = [&](const char* section) {
      return j.contains(section) && j[section].contains("enabled") && j[section]["enabled"].is_boolean();
    };
    if (bf16 == 0 && fp16 == 0 && (written_false(bf_key) || written_false("fp16"))) {
      const char* at = written_false("fp16") ? "fp16" : bf_key;
      const std::string key = std::string(at) + ".enabled";
      apply(prec, parse_scalar(prec, "fp32", jloc(at), key), jloc(at), key);
      fp32_from_ds_ = FromDs{jloc(at), "ds_config enables neither fp16 nor " + std::string(bf_key) +
                                           ": DeepSpeed trains in fp32 without mixed precision (no loss scaling, "
                                           "no fp32 master copy at stage 0): simulated as fp32"};
      return;
    }
    if (bf16 == 0 && fp16 == 0) {
      if (!hf_auto_key(j).empty())
        return; // an HF Trainer config: the flag adds the section (see above)
      const Loc at{path, j.contains("fp16") ? jloc("fp16").line : j.contains(bf_key) ? jloc(bf_key).line : 1};
      apply(prec, parse_scalar(prec, "fp32", at, "fp16/bf16"), at, "fp16/bf16");
      from_ds_.erase("training.precision"); // the absence is no value for the scenario to override
      fp32_from_ds_ =
          FromDs{at,
                 "ds_config enables neither fp16 nor " + std::string(bf_key) +
                     " (no \"enabled\": true in either section, and no \"auto\" in a key HF Trainer fills, so a raw "
                     "DeepSpeed config, not HF Trainer's): DeepSpeed trains in fp32 without mixed "
                     "precision: simulated as fp32 (set training.precision if the run was mixed "
                     "precision some other way)"};
      return;
    }
    const std::string bf_enabled = std::string(bf_key) + ".enabled";
    // "auto" is filled by HF Trainer from its own flags (transformers integrations/deepspeed.py,
    // HfTrainerDeepSpeedConfig.trainer_config_process: fp16.enabled <- --fp16 or --fp16_full_eval, bf16.enabled <-
    // --bf16 or --bf16_full_eval); a section left out stays disabled. So "auto" in one section with the other one
    // absent or false can run only that mixed precision (the other flag leaves DeepSpeed in fp32): it is
    // applied as if enabled. Both "auto" depends on the flag alone: training.precision stays as set. Either way
    // the report says what was assumed (finish_precision_note).
    if (bf16 == 1 || (bf16 == -1 && fp16 == 0))
      apply(prec, parse_scalar(prec, "bf16", jloc(bf_key), bf_enabled), jloc(bf_key), bf_enabled);
    if (fp16 == 1 || (fp16 == -1 && bf16 == 0))
      apply(prec, parse_scalar(prec, "fp16", jloc("fp16"), "fp16.enabled"), jloc("fp16"), "fp16.enabled");
    if (bf16 != 1 && fp16 != 1) // read from an "auto": the scenario's training.precision says the flag, no conflict
      from_ds_.erase("training.precision");
    if (fp16 == -1 || bf16 == -1) {
      precision_auto_.emplace();
      precision_auto_->fp16 = fp16 == -1;
      precision_auto_->bf16 = bf16 == -1;
      // The other section when only one is "auto": true, written false, or left out (no "enabled" either).
      const char* other = fp16 == -1 ? bf_key : "fp16";
      const int other_value = fp16 == -1 ? bf16 : fp16;
      precision_auto_->other_true = other_value == 1;
      precision_auto_->other_false =
          other_value == 0 && j.contains(other) && j[other].is_object() && j[other].contains("enabled");
      precision_auto_->bf_key = bf_key;
      // The section applied above (finish_precision_note matches training.precision's location against it): fp16
      // when written true, or "auto" with bf16 off; else bf16 (both "auto": nothing applied, bf16 for the note).
      // fp16 true + bf16 "auto" is fp16's line, not bf16's: on a config written over several lines the note was
      // lost (newuser29 #22).
      precision_auto_->at = fp16 == 1 || (fp16 == -1 && bf16 == 0) ? jloc("fp16") : jloc(bf_key);
    }
  }

  /// The report's note for an "auto" fp16/bf16 of an imported ds_config (import_precision), once the precision is
  /// final (after validate_gpu_capabilities); none when the scenario or --set wrote training.precision itself.
  void finish_precision_note() {
    // A ds_config with fp16 and bf16 off (import_precision): said when its fp32 is what runs.
    if (fp32_from_ds_) {
      const auto w = where_.find("training.precision");
      if (w != where_.end() && w->second.file == fp32_from_ds_->at.file && w->second.line == fp32_from_ds_->at.line)
        s_.import_notes.push_back(fp32_from_ds_->note);
    }
    if (!precision_auto_)
      return;
    const PrecisionAuto& a = *precision_auto_;
    const auto w = where_.find("training.precision");
    const bool from_ds = w == where_.end() || (w->second.file == a.at.file && w->second.line == a.at.line);
    if (!from_ds)
      return;
    // HF Trainer (transformers integrations/deepspeed.py, HfTrainerDeepSpeedConfig.trainer_config_process) fills
    // an "auto" fp16.enabled with --fp16 and bf16.enabled with --bf16, and refuses a written true/false its flag
    // contradicts (fill_match with must_match: "Please correct the following DeepSpeed config values that mismatch
    // TrainingArguments values"); a section left out is not checked and stays disabled. TrainingArguments takes at
    // most one of --fp16 / --bf16. DeepSpeed then trains in the enabled precision, or in fp32 with neither.
    //   bf16      fp16      --bf16        --fp16        neither
    //   auto      auto      bf16          fp16          fp32
    //   auto      absent    bf16          fp32          fp32
    //   auto      false     bf16          refused       fp32
    //   auto      true      refused       fp16          refused
    //   (and the same with bf16 and fp16 exchanged)
    const std::string p = to_string(s_.training.precision);
    const std::string bf_enabled = a.bf_key + ".enabled";
    std::string n = "ds_config ";
    if (a.fp16 && a.bf16) {
      n += "fp16.enabled and " + bf_enabled + " are \"auto\" (HF Trainer fills them from --fp16 / --bf16; with " +
           "neither flag DeepSpeed trains in fp32: training.precision fp32): simulated as " + p;
      n += s_.cluster.gpu.bf16 ? " (training.precision's default)" : " (GPU '" + s_.cluster.gpu.name + "' has no bf16)";
      n += "; set training.precision to the flag you train with";
    } else {
      const std::string auto_key = a.fp16 ? "fp16.enabled" : bf_enabled;
      const std::string other_key = a.fp16 ? bf_enabled : "fp16.enabled";
      const std::string flag = a.fp16 ? "--fp16" : "--bf16";
      const std::string other_flag = a.fp16 ? "--bf16" : "--fp16";
      if (a.other_true) {
        // Only the other section's flag matches its written true; it fills the "auto" one false.
        n += other_key + " is true and " + auto_key + " \"auto\": simulated as " + p + ", the one precision HF " +
             "Trainer accepts (only " + other_flag + " matches " + other_key + ": true; it fills " + auto_key +
             " with false)";
      } else {
        n += auto_key + " is \"auto\" (HF Trainer fills it from " + flag + "): simulated as " + p +
             ", the one mixed precision the config can enable (";
        n += a.other_false ? other_flag + " contradicts " + other_key + ": false, which HF Trainer refuses; with no " +
                                 "flag DeepSpeed trains in fp32: training.precision fp32)"
                           : "with " + other_flag + " or no flag DeepSpeed trains in fp32: training.precision fp32)";
      }
    }
    s_.import_notes.push_back(n);
  }

  /// `optimizer`: {"type": ..., "params": {...}}. zerosim models Adam and AdamW only. DeepSpeed lower-cases the
  /// type of its own optimizers (runtime/config.py, DEEPSPEED_OPTIMIZERS) and runs "adam" in AdamW mode unless
  /// params.adam_w_mode is false (runtime/engine.py _configure_basic_optimizer; ADAM_W_MODE_DEFAULT = True).
  template <class JLoc>
  void import_optimizer(const json& j, const JLoc& jloc) {
    if (!j.contains("optimizer") || j["optimizer"].is_null())
      return;
    const json& o = j["optimizer"];
    if (!o.is_object())
      fail(jloc("optimizer"), "optimizer", "expected a JSON object like {\"type\": \"AdamW\", \"params\": {...}}");
    if (!o.contains("type"))
      return;
    const Loc tl = jloc("type", "optimizer");
    if (!o["type"].is_string())
      fail(tl, "optimizer.type", "expected a string, got '" + o["type"].dump() + "'");
    const std::string written = o["type"].get<std::string>();
    std::string t = written;
    for (char& c : t)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (t != "adam" && t != "adamw") {
      std::string hint = did_you_mean(t, {"adam", "adamw"});
      fail(tl, "optimizer.type", "zerosim models Adam and AdamW only, got '" + written + "'",
           hint.empty() ? "use \"Adam\" or \"AdamW\"" : hint);
    }
    bool w_mode = true;
    if (o.contains("params") && o["params"].is_object() && o["params"].contains("adam_w_mode")) {
      const json& m = o["params"]["adam_w_mode"];
      if (!m.is_boolean())
        fail(jloc("adam_w_mode", "optimizer"), "optimizer.params.adam_w_mode",
             "expected true or false, got '" + m.dump() + "'");
      w_mode = m.get<bool>();
    }
    const KeySpec& spec = *find_key("training.optimizer");
    const std::string name = (t == "adamw" || w_mode) ? "adamw" : "adam";
    apply(spec, parse_scalar(spec, name, tl, "optimizer.type"), tl, "optimizer.type");
    // params.torch_adam: true builds torch.optim.Adam/AdamW instead of FusedAdam (engine.py
    // _configure_basic_optimizer). Which torch path runs depends on the torch version, which a ds_config does not
    // say: imported as PyTorch >= 2.0's foreach path; a scenario's training.optimizer_impl wins (e.g. torch 1.13:
    // torch-single-tensor).
    if (o.contains("params") && o["params"].is_object() && o["params"].contains("torch_adam")) {
      const json& ta = o["params"]["torch_adam"];
      const Loc l = jloc("torch_adam", "optimizer");
      if (!ta.is_boolean())
        fail(l, "optimizer.params.torch_adam", "expected true or false, got '" + ta.dump() + "'");
      const KeySpec& impl = *find_key("training.optimizer_impl");
      apply(impl, parse_scalar(impl, ta.get<bool>() ? "torch-foreach" : "fused", l, "optimizer.params.torch_adam"), l,
            "optimizer.params.torch_adam");
    }
  }

  // ---- compare
  void resolve_compare(const YAML::Node& c) {
    if (!c.IsDefined() || c.IsNull())
      return;
    const Loc at = loc("compare", c, file_, true);
    if (!c.IsMap() || c.size() != 1)
      fail(at, "compare", "expected one dotted key and a list of values, e.g. {zero.stage: [0, 1, 2, 3]}");
    const auto kv = *c.begin();
    const std::string key = yaml_text(kv.first);
    if (settable_path(key).empty())
      fail({file_, line_of(kv.first)}, "compare." + key, "unknown key", did_you_mean(key, all_paths()));
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      fail({file_, line_of(kv.second)}, "compare." + key, "expected a non-empty list of values");
    s_.compare_key = key;
    s_.compare_values.clear();
    for (const auto& v : kv.second)
      s_.compare_values.push_back(yaml_text(v));
  }

  /// training.torch_version: parses "major.minor[.patch][pre-release][+local]" (torch.__version__, e.g. NGC 25.01's
  /// 2.6.0a0+ecf3bae40a) into {major, minor}; the generators read torch_before().
  void apply_torch_version() {
    const std::string key = "training.torch_version";
    const std::string& text = s_.training.torch_version_text;
    static const std::regex release(
        R"(^([1-9]\d{0,2})\.(0|[1-9]\d{0,2})(?:\.(?:0|[1-9]\d{0,2})(?:(?:a|b|rc)\d{1,3})?)?(?:\+[A-Za-z0-9.]+)?$)");
    std::smatch m;
    if (!std::regex_match(text, m, release))
      fail(where(key), shown(key), "expected a PyTorch release such as 2.6 or 2.6.0a0+ecf3bae, got '" + text + "'");
    s_.training.torch_version = {std::stoi(m[1].str()), std::stoi(m[2].str())};
    // TORCH_NCCL_AVOID_RECORD_STREAMS: added as NCCL_AVOID_RECORD_STREAMS by pytorch#89880 (merged 2023-02-25) and
    // given its TORCH_ name by #97053 (merged 2023-03-25, after 2.0.0 of 2023-03-15): first released in 2.1.
    const std::string avoid = "training.torch_nccl_avoid_record_streams";
    if (s_.training.torch_nccl_avoid_record_streams && s_.training.torch_before(2, 1))
      fail(where(avoid), shown(avoid),
           "TORCH_NCCL_AVOID_RECORD_STREAMS does not exist before torch 2.1 (" + key + " = " + text + ")",
           "remove it, or set training.torch_version 2.1 or later");
  }

  /// zero.deepspeed_version: parses "major.minor[.patch]" and applies the releases' config-level differences
  /// (read in the DeepSpeed tags): use_multi_rank_bucket_allreduce exists from 0.12.4 (PR #4695; before, stage 1/2
  /// average_tensor issues one dist.reduce per owning rank); before 0.13.0 the engine turns overlap_comm and
  /// contiguous_gradients off for stage 1 whatever the config says (engine.py _configure_zero_optimizer,
  /// "meaningless in stage 1"; lifted by PR #4887). The 0.19.0 flatten-on-accelerator is read by the generators.
  void apply_deepspeed_version() {
    const std::string key = "zero.deepspeed_version";
    ZeroConfig& z = s_.zero;
    const std::string& text = z.deepspeed_version_text;
    // deepspeed.__version__ of a source or local build carries a "+<local>" suffix (0.16.0+cu118): ignored.
    static const std::regex release(
        R"(^(0|[1-9]\d{0,3})\.(0|[1-9]\d{0,3})(?:\.(0|[1-9]\d{0,3}))?(?:\+[A-Za-z0-9.]+)?$)"); // no 0.013
    std::smatch m;
    if (!std::regex_match(text, m, release))
      fail(where(key), shown(key), "expected a DeepSpeed release such as 0.9.0 or 0.14, got '" + text + "'");
    const std::array<int, 3> v{std::stoi(m[1].str()), std::stoi(m[2].str()), m[3].matched ? std::stoi(m[3].str()) : 0};
    // 0.3.15 is the ZeRO-Infinity release (swap_tensor/, offload_param); 0.3.15-0.8.x differ from 0.9.0 in the
    // model only where a gate says so (stage 3's offload gradient buffers before 0.6.0).
    if (v < std::array<int, 3>{0, 3, 15})
      fail(where(key), shown(key), "DeepSpeed " + text + " is older than the first release zerosim models (0.3.15)");
    z.deepspeed_version = v;
    // bf16 training: runtime/config.py reads no bf16 section before v0.5.5 (get_bfloat16_enabled and the
    // "bfloat16" key appear at v0.5.5; absent at v0.5.4), and from v0.5.5 to v0.5.10 asserts 'bfloat16 mode is only
    // enabled for Zero2 currently' (config.py l.902 @v0.5.10); v0.6.0 allows stages 1-3 (l.902 @v0.6.0).
    if (s_.training.precision == Precision::BF16 && z.deepspeed_before(0, 6, 0) &&
        (z.deepspeed_before(0, 5, 5) || z.stage != 2)) {
      const bool none = z.deepspeed_before(0, 5, 5);
      const Blame b = blame("training.precision", key, text, "bf16");
      fail(b.at, b.key,
           none ? "training.precision bf16 does not exist before DeepSpeed 0.5.5 (" + key + " = " + text + ")" +
                      b.other_note
                : "training.precision bf16 runs only at zero.stage 2 before DeepSpeed 0.6.0 (" + key + " = " + text +
                      ": 'bfloat16 mode is only enabled for Zero2 currently')" + b.other_note,
           none ? "set training.precision: fp16, or zero.deepspeed_version 0.5.5 or later"
                : "set training.precision: fp16, zero.stage: 2, or zero.deepspeed_version 0.6.0 or later");
    }
    // communication_data_type as engine.py resolves an unset one. 0.5.8-0.8.x: fp16 if fp16 is enabled OR a ZeRO
    // stage is set, before the bf16 branch (l.750-751 @v0.5.8, l.843-844 @v0.8.3), so bf16 and fp32 models with
    // ZeRO reduce their gradients in fp16 (2 B for bf16 as before, but through the `.to()` cast: cast kernel and
    // temporary, stage_1_and_2.py allreduce_bucket l.922-937 @v0.8.3; stage 0 keeps the model dtype). 0.9.0-0.9.1:
    // fp16 for fp16 and fp32 for anything else (l.792-801 @v0.9.0; PR #2970 "Make fp32 default communication data
    // type"), until 0.9.2 returns bf16 for bf16 again (l.775-787 @v0.9.2, PR #3370): bf16 gradients are reduced in
    // fp32, 4 B per element. Set here as DeepSpeed resolves it, as grad_accum_dtype is below; *_set records whether
    // the scenario wrote the key (result.json's communication_data_type_explicit).
    z.communication_data_type_set = where_.count("zero.communication_data_type") > 0;
    if (z.communication_data_type == CommDataType::MODEL && s_.training.precision != Precision::FP16) {
      if (z.stage >= 1 && !z.deepspeed_before(0, 5, 8) && z.deepspeed_before(0, 9, 0))
        z.communication_data_type = CommDataType::FP16;
      else if (s_.training.precision == Precision::BF16 && !z.deepspeed_before(0, 9, 0) && z.deepspeed_before(0, 9, 2))
        z.communication_data_type = CommDataType::FP32;
    }
    // fp32 communication with ZeRO: engine.py _configure_zero_optimizer asserts "ZeRO supports only
    // 'communication_data_type': ['fp16', 'bfp16']" from 0.5.8 to 0.8.1 (l.1323 @v0.5.8, l.1509 @v0.8.1; gone at
    // v0.8.2), and stage 1/2 with reduce_scatter assert "ZeRO-2 supports only float16 or bfloat16
    // communication_data_type with reduce scatter enabled" to 0.8.x (stage2.py l.203 @v0.5.8, stage_1_and_2.py l.239
    // @v0.8.3; gone at v0.9.0). Stage 3's own assert (stage3.py l.216 @v0.8.1) admits fp32 from 0.8.2 (l.215).
    if (z.communication_data_type == CommDataType::FP32 && z.stage >= 1 && !z.deepspeed_before(0, 5, 8) &&
        z.deepspeed_before(0, 9, 0) && (z.deepspeed_before(0, 8, 2) || (z.stage <= 2 && z.reduce_scatter))) {
      const Blame b = blame("zero.communication_data_type", key, text, "fp32");
      fail(b.at, b.key,
           z.deepspeed_before(0, 8, 2)
               ? "fp32 communication with ZeRO is refused from DeepSpeed 0.5.8 to 0.8.1 (" + key + " = " + text +
                     ": 'ZeRO supports only communication_data_type fp16, bfp16')" + b.other_note
               : "fp32 communication at zero.stage 1/2 with reduce_scatter is refused before DeepSpeed 0.9.0 (" + key +
                     " = " + text +
                     ": 'ZeRO-2 supports only float16 or bfloat16 communication_data_type with reduce "
                     "scatter enabled')" +
                     b.other_note,
           z.deepspeed_before(0, 8, 2) ? "set zero.communication_data_type: fp16 or bf16, or deepspeed_version 0.8.2 "
                                         "or later (stage 3) / 0.9.0 or later"
                                       : "set zero.communication_data_type: fp16 or bf16, zero.reduce_scatter: false, "
                                         "or deepspeed_version 0.9.0 or later");
    }
    // sub_group_size: ZERO_OPTIMIZATION_SUB_GROUP_SIZE_DEFAULT is 1e12 up to v0.4.0 (runtime/zero/constants.py l.94
    // @v0.4.0, l.93 @v0.3.15) and 1e9 from v0.4.1 (l.94 @v0.4.1): an unset key takes the release's default.
    if (z.deepspeed_before(0, 4, 1) && !where_.count("zero.sub_group_size"))
      z.sub_group_size = 1'000'000'000'000;
    if (z.deepspeed_before(0, 12, 4)) {
      const std::string mr = "zero.use_multi_rank_bucket_allreduce";
      if (where_.count(mr) && z.use_multi_rank_bucket_allreduce)
        fail(where(mr), shown(mr), "does not exist before DeepSpeed 0.12.4 (" + key + " = " + text + ")",
             "remove it, or set a later deepspeed_version");
      z.use_multi_rank_bucket_allreduce = false;
    }
    if (z.deepspeed_before(0, 13, 0) && z.stage == 1) {
      // Forced off; an unset overlap_comm already means false at stage 1 and stays unset, so that result.json's
      // overlap_comm_explicit (and diff's "the default for zero.stage") still say whether the user wrote it.
      if (z.overlap_comm.has_value())
        z.overlap_comm = false;
      z.contiguous_gradients = false;
    }
    // Before 0.17.6 (PR #7515, "Enable non-ZeRO mode") a bf16 model without ZeRO accumulates its gradients in fp32
    // by default (engine.py get_data_types), which selects BF16_Optimizer; an explicit bf16 accumulation raises
    // "Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO" (outside pipeline parallelism).
    z.grad_accum_dtype_set = where_.count("zero.grad_accum_dtype") > 0;
    if (z.deepspeed_before(0, 17, 6) && z.stage == 0 && s_.training.precision == Precision::BF16) {
      if (z.grad_accum_dtype == GradAccumDtype::BF16)
        fail(where("zero.grad_accum_dtype"), shown("zero.grad_accum_dtype"),
             "bf16 accumulation without ZeRO is refused before DeepSpeed 0.17.6 (" + key + " = " + text +
                 ": 'Bfloat16 wrapper must use a gradient accumulation type of fp32, enable ZeRO')",
             "remove grad_accum_dtype (fp32, BF16_Optimizer), set zero.stage: 1, or a later deepspeed_version");
      if (z.grad_accum_dtype == GradAccumDtype::MODEL)
        z.grad_accum_dtype = GradAccumDtype::FP32;
    }
    // Before v0.6.6 stage3.py asserted "parameter offload is only available with optimizer state offload" (read at
    // v0.3.15 and v0.6.5; gone at v0.6.6).
    if (z.offload_param != OffloadDevice::NONE && z.stage == 3 && z.offload_optimizer == OffloadDevice::NONE &&
        z.deepspeed_before(0, 6, 6)) {
      const Blame b = blame("zero.offload_param", "zero.deepspeed_version", z.deepspeed_version_text,
                            z.offload_param == OffloadDevice::NVME ? "nvme" : "cpu");
      fail(b.at, b.key,
           "parameter offload without optimizer offload is refused before DeepSpeed 0.6.6 (stage3.py: 'parameter "
           "offload is only available with optimizer state offload')" +
               b.other_note,
           "set zero.offload_optimizer too, or a later deepspeed_version");
    }
  }

  /// training.skipped_steps: overflow-skipped steps exist only under fp16 dynamic loss scaling (bf16 and fp32 run a
  /// static scale of 1: fp16/loss_scaler.py CreateLossScaler).
  void validate_skipped_steps() {
    const std::string key = "training.skipped_steps";
    if (s_.training.skipped_steps == 0)
      return;
    if (s_.training.precision != Precision::FP16)
      fail(where(key), shown(key),
           "overflow-skipped steps come from fp16 dynamic loss scaling, and training.precision is " +
               std::string(to_string(s_.training.precision)),
           "set training.precision: fp16, or remove " + key);
  }

  /// Stage 3 with reduce_scatter false and contiguous gradients in DeepSpeed 0.9.4-0.9.x: a param larger than
  /// reduce_bucket_size makes __reduce_and_partition_ipg_grads narrow the IPG bucket past its end, a RuntimeError
  /// (stage3.py l.1084-1086 @v0.9.5; PR #3832 sent such buckets to the reduce-scatter in 0.10.0). Refused here when
  /// the V x h embedding or an h x max(intermediate, heads x head_dim) weight, a lower bound on the largest
  /// tensor, exceeds the bucket; the generator (stage3_generator.cpp all_reduces_bucket) catches the rest.
  void validate_stage3_all_reduce_bucket() {
    const ZeroConfig& z = s_.zero;
    if (z.stage != 3 || z.reduce_scatter || !z.contiguous_gradients || z.deepspeed_before(0, 9, 4) ||
        !z.deepspeed_before(0, 10, 0))
      return;
    const ModelSpec& m = s_.model;
    const std::int64_t hq = (m.head_dim > 0 ? m.head_dim * m.heads : m.hidden);
    const double largest =
        static_cast<double>(m.hidden) * static_cast<double>(std::max({m.vocab, m.intermediate, hq, std::int64_t{1}}));
    if (largest > static_cast<double>(z.reduce_bucket_size))
      fail(where("zero.reduce_scatter"), shown("zero.reduce_scatter"),
           "false with a parameter larger than zero.reduce_bucket_size (" + std::to_string(z.reduce_bucket_size) +
               " elements) fails in DeepSpeed 0.9.4-0.9.x (stage3.py narrows the IPG bucket past its end; fixed in "
               "0.10.0, PR #3832; zero.deepspeed_version = " +
               z.deepspeed_version_text + ")",
           "set reduce_scatter true, a larger reduce_bucket_size, or deepspeed_version 0.10.0");
  }

  /// training.lora_targets: a list of PEFT target_modules names or one name (all-linear); checked against the
  /// family's block linears in validate_lora once the model is known.
  void resolve_lora_targets(const YAML::Node& n) {
    if (!n.IsDefined())
      return;
    const std::string key = "training.lora_targets";
    const Loc at = loc(key, n, file_, true);
    where_[key] = at;
    shown_[key] = key;
    std::vector<std::string> targets;
    const auto name = [&](const YAML::Node& v) {
      if (!v.IsScalar() || v.Scalar().empty())
        fail(at, key, "expected a list of module names such as [q_proj, v_proj], got '" + yaml_text(v) + "'");
      targets.push_back(v.Scalar());
    };
    if (n.IsSequence()) {
      for (const auto& v : n)
        name(v);
    } else {
      name(n);
    }
    if (targets.empty())
      fail(at, key, "expected at least one module name, got an empty list", "leave the key out for PEFT's default");
    s_.training.lora_targets = targets;
  }

  /// LoRA (training.lora_rank / lora_targets / lora_dropout): PEFT's rules, and what zerosim cannot combine.
  void validate_lora() {
    TrainingSpec& t = s_.training;
    const ModelSpec& m = s_.model;
    if (t.lora_rank == 0) {
      for (const char* k : {"training.lora_targets", "training.lora_dropout"})
        if (where_.count(k))
          fail(where(k), shown(k), "has no effect without LoRA", "set training.lora_rank (e.g. 16)");
      return;
    }
    if (t.trainable_fraction < 1) {
      const Blame b = blame("training.lora_rank", "training.trainable_fraction", std::to_string(t.trainable_fraction),
                            std::to_string(t.lora_rank));
      fail(b.at, b.key, "LoRA and training.trainable_fraction < 1 both say what trains; give one" + b.other_note,
           "lora_rank models PEFT's adapters on named modules; trainable_fraction a fraction of every tensor");
    }
    if (!(t.lora_dropout < 1))
      fail(where("training.lora_dropout"), shown("training.lora_dropout"),
           "expected a probability in [0, 1), got " + std::to_string(t.lora_dropout));
    if (t.lora_targets.empty())
      t.lora_targets = lora_default_targets(m.family);
    const std::vector<LoraLinear> linears = lora_linears(m);
    const Loc at = where_.count("training.lora_targets") ? where("training.lora_targets") : where("training.lora_rank");
    const std::string key = where_.count("training.lora_targets") ? "training.lora_targets" : "training.lora_rank";
    for (const std::string& target : t.lora_targets)
      if (std::none_of(linears.begin(), linears.end(),
                       [&](const LoraLinear& l) { return lora_target_matches(target, l.path); }))
        fail(at, key,
             "'" + target + "' names no linear module of a " + to_string(m.family) + " block (PEFT: target not found)",
             "valid: " + lora_target_names(m));
    for (const LoraLinear& l : linears)
      if (lora_targeted(t.lora_targets, l.path) && t.lora_rank > std::min(l.in, l.out))
        fail(where("training.lora_rank"), shown("training.lora_rank"),
             "rank " + std::to_string(t.lora_rank) +
                 " exceeds min(in, out) = " + std::to_string(std::min(l.in, l.out)) + " of " + l.path + " (" +
                 std::to_string(l.in) + " -> " + std::to_string(l.out) + ")",
             "a rank above the smaller side adds parameters without adding rank");
  }

  // ---- cross-field checks (everything the simulation relies on is checked here)
  void finish_and_validate() {
    // Without a name the scenario file's stem names the run (job7b.yaml -> job7b), checked as a given name is: it
    // names the output directory, so only [a-z0-9-_].
    // A file that is no regular file (zerosim run <(...) reads /dev/fd/63) has no name of its own: '63' would
    // name the run and its output directory.
    if (!where_.count("name")) {
      const std::string stem = fs::path(file_).stem().string();
      std::error_code ec;
      if (file_.rfind("/dev/", 0) == 0 || file_.rfind("/proc/", 0) == 0 ||
          (fs::exists(file_, ec) && !fs::is_regular_file(file_, ec)))
        fail({file_, 0}, "name",
             "required key missing: " + file_ + " is no regular file (a pipe?), so its name '" + stem +
                 "' cannot name the run",
             "e.g. 'name: my-run'");
      if (!is_scenario_name(stem))
        fail({file_, 0}, "name", "required key missing: the file name '" + stem + "' is not a name of [a-z0-9-_]",
             "e.g. 'name: my-run', or rename the file");
      s_.name = stem;
    }
    validate_gpu_capabilities();
    finish_precision_note();
    finish_auto_clip_note();
    finish_llama_kv_note();
    const ModelSpec& m = s_.model;
    if (learned_positions(m.family) && where_.count("model.head_dim")) // workload.cpp rejects it the same way
      fail(where("model.head_dim"), "model.head_dim",
           std::string("is a llama-family key: ") + to_string(m.family) + " blocks split hidden evenly over the heads",
           "remove it");
    if (m.head_dim == 0 && m.hidden % m.heads != 0) { // an explicit head_dim frees heads x head_dim from hidden
      const Blame b = blame("model.heads", "model.hidden", std::to_string(m.hidden), std::to_string(m.heads));
      fail(b.at, b.key,
           "heads (" + std::to_string(m.heads) + ") must divide hidden (" + std::to_string(m.hidden) + ")" +
               b.other_note,
           m.family == ModelFamily::LLAMA ? "or set model.head_dim (heads x head_dim need not equal hidden)" : "");
    }
    if (m.heads % m.kv_heads != 0) {
      const Blame b = blame("model.kv_heads", "model.heads", std::to_string(m.heads), std::to_string(m.kv_heads));
      const Loc kv_at = where("model.kv_heads");
      const bool defaulted =
          kv_default_ && kv_default_->first.file == kv_at.file && kv_default_->first.line == kv_at.line;
      fail(b.at, b.key,
           "kv_heads (" + std::to_string(m.kv_heads) + ") must divide heads (" + std::to_string(m.heads) + ")" +
               b.other_note + (defaulted ? "; " + kv_default_->second : std::string()),
           defaulted ? "add num_key_value_heads to the config.json (the checkpoint's own value)" : "");
    }
    if (learned_positions(m.family)) {
      if (m.max_positions <= 0)
        fail(where_.count("model.max_positions") ? where("model.max_positions") : where("model.family"),
             "model.max_positions",
             std::string("required for family ") + to_string(m.family) + " (learned position embeddings)");
      if (s_.training.seq_len > m.max_positions)
        fail(where("training.seq_len"), "training.seq_len",
             "seq_len " + std::to_string(s_.training.seq_len) + " exceeds the model's max_positions " +
                 std::to_string(m.max_positions) + " (learned position embeddings)");
    } else if (m.max_positions > 0 && s_.training.seq_len > m.max_positions) {
      // Rotary families: the context length the model was trained for is recorded, not enforced (RoPE scaling and
      // long-context fine-tunes run past it), so a longer sequence is a note, not an error (newuser31 F17b).
      s_.import_notes.push_back(
          "training.seq_len " + std::to_string(s_.training.seq_len) + " is beyond " +
          (m.name.empty() || m.name == "inline" ? std::string("the model") : m.name) + "'s context length of " +
          std::to_string(m.max_positions) +
          " tokens (model.max_positions, the config.json's max_position_embeddings): the model runs past it only "
          "with RoPE scaling or training at that length; the simulation costs the longer sequences all the same");
    }
    if (learned_positions(m.family) && (m.sliding_window > 0 || m.max_window_layers > 0))
      fail(where(m.sliding_window > 0 ? "model.sliding_window" : "model.max_window_layers"),
           m.sliding_window > 0 ? "model.sliding_window" : "model.max_window_layers",
           std::string("is a llama-family key: ") + to_string(m.family) + " attends to the whole causal context",
           "remove it");
    if (m.family != ModelFamily::GPT2 && where_.count("model.activation"))
      fail(where("model.activation"), "model.activation",
           std::string("is a gpt2-family key: ") + to_string(m.family) +
               (m.family == ModelFamily::OPT ? " blocks use ReLU" : " blocks use SwiGLU"),
           "remove it");
    if (learned_positions(m.family) && m.attention_bias != AttentionBias::NONE)
      fail(where("model.attention_bias"), "model.attention_bias",
           std::string("is a llama-family key: ") + to_string(m.family) + " blocks always have biases", "remove it");
    if (learned_positions(m.family) && m.mlp_bias)
      fail(where("model.mlp_bias"), "model.mlp_bias",
           std::string("is a llama-family key: ") + to_string(m.family) + " blocks always have biases", "remove it");
    if (learned_positions(m.family) && m.kv_heads != m.heads) // workload.cpp rejects it the same way
      fail(where("model.kv_heads"), "model.kv_heads",
           std::string("family ") + to_string(m.family) + " has no grouped-query attention: kv_heads (" +
               std::to_string(m.kv_heads) + ") must equal heads (" + std::to_string(m.heads) + ")");
    if (const std::int64_t tbs = s_.training.train_batch_size; tbs > 0) {
      if (ds_train_batch_ && ds_train_batch_->first != tbs)
        fail(where("training.train_batch_size"), "training.train_batch_size",
             std::to_string(tbs) + " differs from the ds_config's train_batch_size " +
                 std::to_string(ds_train_batch_->first) + " (" + ds_train_batch_->second.file + " line " +
                 std::to_string(ds_train_batch_->second.line) + ")",
             "give it in one place");
      ds_train_batch_ = std::make_pair(tbs, where("training.train_batch_size"));
      train_batch_key_ = "training.train_batch_size";
    }
    if (ds_train_batch_)
      resolve_train_batch();
    finish_auto_batch_note(); // after resolve_train_batch: a GA or micro-batch it derived is what is simulated
    // LoRA-style fraction: each tensor keeps round(f x numel) trainable elements (workload::adapter_numel); when even
    // the largest tensor (the V x h embedding, or an MLP or attention projection) rounds to 0, nothing trains.
    if (const double f = s_.training.trainable_fraction; f < 1) {
      const std::int64_t hq = (m.head_dim > 0 ? m.head_dim * m.heads : m.hidden);
      const double largest =
          static_cast<double>(m.hidden) * static_cast<double>(std::max({m.vocab, m.intermediate, hq, std::int64_t{1}}));
      if (f * largest < 0.5) {
        std::array<char, 160> msg{}, hint{};
        std::snprintf(msg.data(), msg.size(),
                      "%g leaves no parameter trainable: round(f x numel) is 0 for every tensor (the largest has "
                      "%.0f elements)",
                      f, largest);
        std::snprintf(hint.data(), hint.size(), "at least %.2g", 0.5 / largest);
        fail(where("training.trainable_fraction"), "training.trainable_fraction", msg.data(), hint.data());
      }
    }
    validate_lora();
    validate_limits();
    validate_offload();
    validate_launcher();
    validate_client_optimizer();
    resolve_cpu_optimizer_impl();
    apply_deepspeed_version();
    apply_torch_version();
    check_data_types_for_release();
    validate_grad_accum_dtype();
    validate_skipped_steps();
    validate_stage3_all_reduce_bucket();
    if (s_.training.recompute_granularity == RecomputeGranularity::SELECTIVE && !s_.training.activation_checkpointing)
      fail(where("training.recompute_granularity"), shown("training.recompute_granularity"),
           "selective recomputation is a kind of activation checkpointing, which is off",
           "also set training.activation_checkpointing: true");
    const bool full_checkpointing =
        s_.training.activation_checkpointing && s_.training.recompute_granularity == RecomputeGranularity::FULL;
    // From a ds_config the block is DeepSpeed's, which accepts it whatever the model does: with nothing to move it
    // is a no-op (a note in the report), not an error. Written as a scenario key, it is a mistake.
    if (s_.training.cpu_checkpointing && !full_checkpointing &&
        shown("training.cpu_checkpointing").rfind("activation_checkpointing.", 0) == 0) {
      s_.training.cpu_checkpointing = false;
      s_.import_notes.emplace_back(
          "the ds_config's activation_checkpointing.cpu_checkpointing: true changes nothing here: the scenario has "
          "no full activation checkpointing (training.activation_checkpointing) whose checkpoints it would move to "
          "the host; DeepSpeed acts on it only for models that checkpoint through deepspeed.checkpointing");
    }
    if (s_.training.cpu_checkpointing && !full_checkpointing)
      fail(where("training.cpu_checkpointing"), shown("training.cpu_checkpointing"),
           "cpu_checkpointing moves full activation checkpoints to the CPU, and " +
               std::string(s_.training.activation_checkpointing ? "recompute_granularity is selective"
                                                                : "activation_checkpointing is off"),
           "set training.activation_checkpointing: true with recompute_granularity: full, or cpu_checkpointing: "
           "false (a ds_config's activation_checkpointing block acts only on models that checkpoint through "
           "deepspeed.checkpointing)");
    ClusterSpec& c = s_.cluster;
    if (c.nodes > 1) {
      if (c.fabric == FabricKind::NONE)
        fail(where("cluster.nodes"), "cluster.fabric", std::to_string(c.nodes) + " nodes need a fabric",
             "set cluster.fabric: fat-tree or single-switch");
      if (c.nics_per_node <= 0 || c.nic.bandwidth.value() <= 0)
        fail(where("cluster.nodes"), "cluster.nic", std::to_string(c.nodes) + " nodes need NICs",
             "set cluster.nics_per_node and cluster.nic.bandwidth");
      // Per-GPU NICs (nic_per_gpu, and always on a rail fabric): GPU i uses NIC i / (gpus_per_node / nics_per_node)
      // (topologies/builder/platform_builder.hpp), so the NICs must split the GPUs evenly.
      if ((c.nic_per_gpu || c.fabric == FabricKind::RAIL) &&
          (c.nics_per_node > c.gpus_per_node || c.gpus_per_node % c.nics_per_node != 0)) {
        const Blame b = blame("cluster.nics_per_node", "cluster.gpus_per_node", std::to_string(c.gpus_per_node),
                              std::to_string(c.nics_per_node));
        fail(b.at, b.key,
             std::to_string(c.nics_per_node) + " NICs do not split " + std::to_string(c.gpus_per_node) +
                 " GPUs evenly (per-GPU NICs: GPU i uses NIC i / (gpus_per_node / nics_per_node))" + b.other_note,
             "set nics_per_node to a divisor of gpus_per_node");
      }
    }
    // Fat tree (topologies/builder/platform_builder.cpp fabric_shape): 2 or 3 switch levels, and every leaf switch
    // has leaf / fabric_oversubscription uplinks, a whole number >= 1, where leaf is fat_tree_leaf_radix lowered to a
    // divisor of the nodes. Checked here, not when the platform is built, so that it is an input error.
    if (c.fabric_levels != 2 && c.fabric_levels != 3)
      fail(where("cluster.fabric_levels"), shown("cluster.fabric_levels"),
           "a fat tree has 2 (leaf, spine) or 3 (leaf, aggregation, core) switch levels, got '" +
               written("cluster.fabric_levels", std::to_string(c.fabric_levels)) + "'");
    if (c.nodes > 1 && c.fabric == FabricKind::FAT_TREE) {
      const int leaf = scenario::fat_tree_leaf_nodes(c.nodes, c.fat_tree_leaf_radix);
      const double o = c.fabric_oversubscription;
      const double up = leaf / o;
      if (!(o >= 1) || std::abs(up - std::round(up)) > 1e-9 || std::round(up) < 1) {
        char g[32];
        std::snprintf(g, sizeof g, "%g", o);
        const std::string text = written("cluster.fabric_oversubscription", g);
        const Blame b = blame("cluster.fabric_oversubscription", "cluster.fat_tree_leaf_radix",
                              written("cluster.fat_tree_leaf_radix", std::to_string(c.fat_tree_leaf_radix)), text);
        std::string divisors;
        for (int k = 1; k <= leaf; ++k)
          if (leaf % k == 0)
            divisors += (divisors.empty() ? "" : ", ") + std::to_string(k);
        const std::string lowered =
            leaf == c.fat_tree_leaf_radix ? std::string()
            : c.fat_tree_leaf_radix > 0
                ? " (fat_tree_leaf_radix " + std::to_string(c.fat_tree_leaf_radix) + " lowered to a divisor of the " +
                      std::to_string(c.nodes) + " nodes)"
                : " (the default 32 lowered to a divisor of the " + std::to_string(c.nodes) + " nodes)";
        const std::string why = b.key == shown("cluster.fabric_oversubscription")
                                    ? "must be at least 1 and divide the " + std::to_string(leaf) +
                                          " nodes per leaf switch" + lowered + " into whole uplinks, got '" + text + "'"
                                    : std::to_string(leaf) + " nodes per leaf switch" + lowered +
                                          " do not make whole uplinks at fabric_oversubscription '" + text + "'";
        fail(b.at, b.key, why + b.other_note,
             "use a fabric_oversubscription that divides " + std::to_string(leaf) + " (" + divisors + ")");
      }
    }
    // PCIe switches (topologies/builder/platform_builder.hpp): GPU i hangs from switch i / gpus_per_pcie_switch, so
    // the switches must split the node's GPUs evenly, or hold them all (fewer GPUs than one switch takes: a partly
    // filled switch, e.g. gpus_per_node 1 on a DGX preset); uplink fields not given take the host_link's values.
    if (c.gpus_per_node > c.gpus_per_pcie_switch && c.gpus_per_node % c.gpus_per_pcie_switch != 0) {
      const Blame b = blame("cluster.gpus_per_pcie_switch", "cluster.gpus_per_node", std::to_string(c.gpus_per_node),
                            std::to_string(c.gpus_per_pcie_switch));
      fail(b.at, b.key,
           std::to_string(c.gpus_per_pcie_switch) + " GPUs per PCIe switch do not divide " +
               std::to_string(c.gpus_per_node) + " GPUs per node" + b.other_note,
           "set gpus_per_pcie_switch to a divisor of gpus_per_node (1 = no switch level)");
    }
    if (c.gpus_per_pcie_switch > 1 && !c.p2p && c.fabric == FabricKind::RAIL && c.nodes > 1)
      fail(where("cluster.gpus_per_pcie_switch"), "cluster.gpus_per_pcie_switch",
           "PCIe switches without p2p are not modelled on a rail fabric (its routing would send host-staged "
           "GPU-GPU copies through the NIC)",
           "set gpus_per_pcie_switch: 1, cluster.p2p: true, or another fabric");
    // NCCL channels: at most NCCL's channel limit (MAXCHANNELS: 32 or 64 by release), and fewer than the GPU's SMs,
    // which their CTAs would otherwise all take from every overlapped kernel (ClusterSpec::nccl_channels).
    if (c.nccl_channels > 64)
      fail(where("cluster.nccl_channels"), shown("cluster.nccl_channels"),
           "NCCL runs at most 64 channels (MAXCHANNELS; 32 in older releases), got " + std::to_string(c.nccl_channels),
           "NCCL logs its count as 'N coll channels' with NCCL_DEBUG=INFO");
    if (c.gpu.sm_count > 0 && c.nccl_channels_effective() >= c.gpu.sm_count) {
      const Blame b = blame("cluster.nccl_channels", "gpu.sm_count", std::to_string(c.gpu.sm_count),
                            std::to_string(c.nccl_channels_effective()));
      fail(b.at, b.key,
           std::to_string(c.nccl_channels_effective()) + " NCCL channels would take all " +
               std::to_string(c.gpu.sm_count) + " SMs (one CTA each) from every kernel beside a collective" +
               b.other_note,
           "NCCL uses 2-32 channels on GPUs of 80-140 SMs; gpu.sm_count: 0 turns the SM model off");
    }
    if (!where_.count("cluster.pcie_switch_uplink.bandwidth"))
      c.pcie_switch_uplink.bandwidth = c.host_link.bandwidth;
    if (!where_.count("cluster.pcie_switch_uplink.latency"))
      c.pcie_switch_uplink.latency = c.host_link.latency;
    if (!where_.count("cluster.pcie_switch_uplink.efficiency"))
      c.pcie_switch_uplink.efficiency = c.host_link.efficiency;
    // A NIC moves payload at its line rate less the InfiniBand packet headers unless its efficiency is given.
    if (!where_.count("cluster.nic.efficiency"))
      c.nic.efficiency = kInfinibandPayloadEfficiency;
    // A host_link set in the scenario or on the command line above its share of a preset's PCIe switch uplink: the
    // GPUs behind one switch copy through that uplink, so a faster host_link alone (a PCIe-generation what-if) moves
    // the offload copies little or not at all. Say which key binds.
    const auto by_user = [&](const std::string& k) {
      const auto it = where_.find(k);
      return it != where_.end() && (it->second.file == kCli || it->second.file == file_);
    };
    const int per_switch = std::min(c.gpus_per_pcie_switch, c.gpus_per_node);
    if (per_switch > 1 && by_user("cluster.host_link.bandwidth") && !by_user("cluster.pcie_switch_uplink.bandwidth") &&
        (s_.zero.offload_optimizer != OffloadDevice::NONE || s_.zero.offload_param != OffloadDevice::NONE) &&
        c.host_link.bandwidth.value() * per_switch > c.pcie_switch_uplink.bandwidth.value() * (1 + 1e-9)) {
      const Loc at = where("cluster.host_link.bandwidth");
      const std::string at_text = at.file == kCli
                                      ? std::string("--set")
                                      : fs::path(at.file).filename().string() + ":" + std::to_string(at.line);
      const auto gbps = [](double x) {
        std::ostringstream o;
        o << std::fixed << std::setprecision(2) << x / 1e9;
        return o.str();
      };
      s_.import_notes.push_back(
          "cluster.host_link.bandwidth " + gbps(c.host_link.bandwidth.value()) + " GB/s (" + at_text +
          ") is above its share of the PCIe switch uplink: " + std::to_string(per_switch) +
          " GPUs share cluster.pcie_switch_uplink.bandwidth " + gbps(c.pcie_switch_uplink.bandwidth.value()) +
          " GB/s (" + gbps(c.pcie_switch_uplink.bandwidth.value() / per_switch) +
          " GB/s each when they copy at once), which then bounds the offload copies; for a "
          "PCIe-generation what-if set cluster.pcie_switch_uplink.bandwidth too");
    }
    // A full mesh (platform_builder.hpp): peer links between GPUs, so it needs p2p; inter-node routing through a
    // node gateway is modelled for the switch star only.
    if (c.intra_node_topology == IntraNodeTopology::MESH && !c.p2p)
      fail(where("cluster.intra_node_topology"), "cluster.intra_node_topology",
           "mesh links GPUs directly and needs GPU peer-to-peer (cluster.p2p: true)",
           "use intra_node_topology: switch for a cluster without p2p");
    if (c.intra_node_topology == IntraNodeTopology::MESH && c.nodes > 1) {
      const Blame b = blame("cluster.intra_node_topology", "cluster.nodes", std::to_string(c.nodes), "mesh");
      // Not "use switch": a mesh's intra_node.bandwidth is one peer link, and the switch star would make it each
      // GPU's whole link (7x too little on MI300X). Say what the switch model needs instead.
      const auto gbps = [](double bytes_per_s) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%gGBps", bytes_per_s / 1e9);
        return std::string(buf);
      };
      const double link = c.intra_node.bandwidth.value();
      fail(b.at, b.key,
           "mesh is modelled on one node only, got " + std::to_string(c.nodes) + " nodes" + b.other_note +
               ": several mesh nodes are not modelled",
           "simulate one node; or approximate them with intra_node_topology: switch and intra_node.bandwidth set to "
           "each GPU's aggregate link (here " +
               std::to_string(c.gpus_per_node - 1) + " peer links x " + gbps(link) + " = " +
               gbps(static_cast<double>(c.gpus_per_node - 1) * link) + "), not the mesh's per-peer-link figure");
    }
    // Reported at the mesh key (the user's line), not at a preset's nvls.
    if (c.intra_node_topology == IntraNodeTopology::MESH && c.nvls)
      fail(where("cluster.intra_node_topology"), "cluster.intra_node_topology",
           "a mesh node has no NVSwitch, but cluster.nvls is true (NVLS reduces inside the switch)",
           "add cluster.nvls: false with intra_node_topology: mesh");
    if (c.nvls && !c.p2p)
      fail(where("cluster.nvls"), "cluster.nvls", "NVLS reduces inside an NVSwitch and needs GPU peer-to-peer",
           "set cluster.nvls: false for a cluster without p2p");
    // NVLink SHARP is a feature of the third-generation NVSwitch, which ships with Hopper (NVIDIA H100 Tensor Core
    // GPU Architecture whitepaper, "NVLink Switch System": "NVLink SHARP ... new in third-generation NVSwitch";
    // docs/collectives.md "NVLS"). The GPU preset names the generation: A100/V100 NVSwitch systems (NVSwitch 1/2)
    // and NVLink bridges (no NVSwitch: RTX 3090, A40) have no in-switch reduction.
    if (c.nvls && !has_nvlink_sharp_gpu(c.gpu.preset))
      fail(where("cluster.nvls"), "cluster.nvls",
           "NVLS needs an NVSwitch-3 node with NVLink SHARP (H100/H200 HGX/DGX); GPU '" + c.gpu.name +
               "' has none (NVSwitch 1/2 or an NVLink bridge)",
           "set cluster.nvls: false");
    if (c.collective_algorithm == "direct" && c.nodes > 1)
      fail(where("cluster.collective_algorithm"), "cluster.collective_algorithm",
           "direct runs on one node only, got " + std::to_string(c.nodes) + " nodes",
           "use auto, ring, tree or hierarchical on several nodes");
    if (c.collective_algorithm == "nvls") {
      if (!c.nvls)
        fail(where("cluster.collective_algorithm"), "cluster.collective_algorithm",
             "nvls needs an NVSwitch with NVLink SHARP (cluster.nvls: true; H100/H200 NVSwitch systems)",
             "use ring, tree or auto, or set cluster.nvls: true");
      if (c.nodes > 1)
        fail(where("cluster.collective_algorithm"), "cluster.collective_algorithm",
             "nvls runs on one node only (NCCL's multi-node NVLS needs CollNet/SHARP switches, not modelled)",
             "use auto, ring, tree or hierarchical on " + std::to_string(c.nodes) + " nodes");
    }
  }

  /// What the card can run (GpuSpec::bf16, flash_attention). bf16 needs bf16 tensor cores, which Volta lacks
  /// (NVIDIA Tesla V100 GPU Architecture whitepaper: fp16 tensor cores only; bf16 arrived with Ampere): written,
  /// it is an error (pricing it at the fp16 rate would describe a run that cannot happen); left unset, the
  /// precision is fp16 on such a card. FlashAttention needs Ampere, Ada or Hopper (FlashAttention 2) or Turing /
  /// Ampere (FlashAttention 1; Dao-AILab/flash-attention README). Runs before anything reads training.precision.
  void validate_gpu_capabilities() {
    const GpuSpec& g = s_.cluster.gpu;
    const std::string gpu = g.name.empty() ? std::string("(inline)") : g.name;
    if (!g.bf16 && s_.training.precision == Precision::BF16) {
      if (!where_.count("training.precision"))
        s_.training.precision = Precision::FP16;
      else
        fail(where("training.precision"), shown("training.precision"),
             "bf16 needs bf16 tensor cores, which GPU '" + gpu +
                 "' does not have (gpu.bf16: false; Volta multiplies fp16 only)",
             "use training.precision: fp16 (with DeepSpeed's dynamic loss scaling, as V100 runs did)");
    }
    // Unset, the attention is what transformers' default "sdpa" runs on this card: PyTorch's FlashAttention-2
    // kernel from Ampere on (torch.nn.functional.scaled_dot_product_attention picks it for bf16/fp16 inputs), eager
    // attention where the card has none.
    // fp32: FlashAttention has fp16/bf16 kernels only (flash-attn raises "FlashAttention only support fp16 and bf16
    // data type"; transformers' flash_attention_2 path passes fp32 tensors through to it), and PyTorch's SDPA skips
    // its flash backend for fp32 inputs (sdp_utils check_tensor_dtype) and runs the memory-efficient or math kernel.
    // The memory-efficient kernel is not modelled; eager attention is, so an unset flash_attention is false as on a
    // card without FlashAttention, and a written true is an error.
    const bool fp32 = s_.training.precision == Precision::FP32;
    if (!where_.count("training.flash_attention"))
      s_.training.flash_attention = g.flash_attention && !fp32;
    if (fp32 && s_.training.flash_attention)
      fail(where("training.flash_attention"), shown("training.flash_attention"),
           "FlashAttention runs fp16 and bf16 only, not training.precision fp32 (flash-attn: \"FlashAttention only "
           "support fp16 and bf16 data type\")",
           "use training.flash_attention: false (eager attention; SDPA's fp32 memory-efficient kernel is not "
           "modelled)");
    if (!g.flash_attention && s_.training.flash_attention)
      fail(where("training.flash_attention"), shown("training.flash_attention"),
           "FlashAttention does not run on GPU '" + gpu +
               "' (gpu.flash_attention: false; FlashAttention 2 needs Ampere, Ada or Hopper, FlashAttention 1 "
               "Turing or Ampere)",
           "use training.flash_attention: false (eager attention)");
  }

  /// Sizes beyond which a simulation would run for minutes to hours without telling the user anything new: the
  /// program is unrolled per step, micro-step and layer, and `chunk` sends every ring step as a message. Each limit
  /// is far above real training setups (the largest published dense transformers have about 100-130 layers).
  void validate_limits() const {
    constexpr std::int64_t kMaxLayers = kMaxModelLayers, kMaxSteps = 100, kMaxChunkRanks = 1024,
                           kMaxUnfoldedRanks = 65536;
    if (s_.model.layers > kMaxLayers)
      fail(where("model.layers"), "model.layers",
           std::to_string(s_.model.layers) + " layers is above the " + std::to_string(kMaxLayers) +
               " zerosim simulates");
    if (s_.simulation.steps > kMaxSteps)
      fail(where("simulation.steps"), "simulation.steps",
           std::to_string(s_.simulation.steps) + " steps is above " + std::to_string(kMaxSteps),
           "steps after the warm-up repeat the steady state; 2 or 3 are enough");
    if (s_.training.grad_accum > kMaxGradAccum)
      fail(where("training.grad_accum"), "training.grad_accum",
           std::to_string(s_.training.grad_accum) + " micro-steps per step is above " + std::to_string(kMaxGradAccum),
           "every micro-step is simulated, and past the first few each adds the same time: extrapolate from a "
           "smaller grad_accum");
    // Each limit above can hold while their product does not: the program holds every layer of every micro-step of
    // every step (about 13 kB and 0.13 ms of simulation per layer pass: 100 layers x GA 100 x 20 steps took 2.5 GB
    // and 26 s), and 1000 layers x GA 256 x 100 steps ran out of 20 GB after minutes (newuser20a). 500,000 layer
    // passes are about 6.5 GB and a minute.
    const double passes = static_cast<double>(s_.model.layers) * static_cast<double>(s_.training.grad_accum) *
                          static_cast<double>(s_.simulation.steps);
    if (passes > static_cast<double>(kMaxLayerPasses)) {
      const std::int64_t largest =
          std::max({s_.model.layers, s_.training.grad_accum, static_cast<std::int64_t>(s_.simulation.steps)});
      const char* key = largest == s_.simulation.steps      ? "simulation.steps"
                        : largest == s_.training.grad_accum ? "training.grad_accum"
                                                            : "model.layers";
      fail(where(key), key,
           "model.layers x training.grad_accum x simulation.steps = " + std::to_string(s_.model.layers) + " x " +
               std::to_string(s_.training.grad_accum) + " x " + std::to_string(s_.simulation.steps) + " = " +
               std::to_string(static_cast<long long>(passes)) + " layer passes is above the " +
               std::to_string(kMaxLayerPasses) + " zerosim simulates in one run (about 13 kB of memory each)",
           "use 2-3 steps (the steps after the warm-up repeat), or a smaller grad_accum (each micro-step past the "
           "first few adds the same time)");
    }
    // Tokens per micro-batch: beyond 2^30 (1e9 tokens on one GPU) byte counts of the logits (b·s·V) leave the range
    // in which memory is counted exactly; real micro-batches hold at most a few million tokens.
    constexpr double kMaxTokens = 1073741824.0;
    const double tokens = static_cast<double>(s_.training.micro_batch) * static_cast<double>(s_.training.seq_len);
    if (tokens > kMaxTokens)
      fail(where(s_.training.micro_batch > s_.training.seq_len ? "training.micro_batch" : "training.seq_len"),
           s_.training.micro_batch > s_.training.seq_len ? "training.micro_batch" : "training.seq_len",
           "micro_batch x seq_len = " + std::to_string(static_cast<long long>(tokens)) +
               " tokens per micro-batch is above 2^30");
    // Eager attention materialises a x b x s^2 scores per layer (sim/workload/workload.cpp: up to 8 B per score saved
    // for backward, 14 B at once in the softmax's footprint). Memory is counted in 64-bit bytes (the engine's pools
    // and caching allocator), which s^2 overflows from about s = 2^28: the peak then came out smaller than at 2^20.
    // Bound 16 B per score over every layer by 2^60 B (1 EiB), far inside 2^63 and above any real device.
    if (!s_.training.flash_attention && s_.model.heads > 0 && s_.model.layers > 0) {
      constexpr double kMaxScoreBytes = 1152921504606846976.0; // 2^60 B
      const double per_s2 = 16.0 * static_cast<double>(s_.model.heads) * static_cast<double>(s_.training.micro_batch) *
                            static_cast<double>(s_.model.layers);
      const double seq = static_cast<double>(s_.training.seq_len);
      if (per_s2 * seq * seq > kMaxScoreBytes) {
        auto max_seq = static_cast<std::int64_t>(std::sqrt(kMaxScoreBytes / per_s2));
        while (per_s2 * static_cast<double>(max_seq + 1) * static_cast<double>(max_seq + 1) <= kMaxScoreBytes)
          ++max_seq;
        while (max_seq > 0 && per_s2 * static_cast<double>(max_seq) * static_cast<double>(max_seq) > kMaxScoreBytes)
          --max_seq;
        fail(where("training.seq_len"), shown("training.seq_len"),
             std::to_string(s_.training.seq_len) + " with eager attention (training.flash_attention: false) is above " +
                 std::to_string(max_seq) + ", the limit for this model and micro-batch: " +
                 std::to_string(s_.model.heads) + " heads x micro_batch " + std::to_string(s_.training.micro_batch) +
                 " x seq_len^2 scores per layer, over " + std::to_string(s_.model.layers) +
                 " layers at up to 16 B each, must stay below 2^60 B (1 EiB) for zerosim's 64-bit memory counts",
             "set training.flash_attention: true (no seq_len x seq_len tensors), or a shorter seq_len");
      }
    }
    // GPUs in one node: a node is simulated whole (folding drops nodes, never GPUs of a node), and its switch and
    // routes grow with the square of its GPUs (2048 GPUs: 40 s and 0.5 GB; 100000 filled a 23 GiB host). The largest
    // NVLink domains hold 72 (GB200 NVL72) to 576 GPUs (NVL576); larger clusters are more nodes.
    if (s_.cluster.gpus_per_node > kMaxGpusPerNode)
      fail(where("cluster.gpus_per_node"), "cluster.gpus_per_node",
           std::to_string(s_.cluster.gpus_per_node) + " GPUs in one node is above the " +
               std::to_string(kMaxGpusPerNode) + " zerosim simulates (the largest NVLink domains hold 576 GPUs)",
           "model a larger cluster with cluster.nodes");
    // A NUMA node holds at least one core (sim/zero/cpu_adam.hpp pinned_byte_weight splits the DRAM by node).
    if (s_.cluster.cpu.cores > 0 && s_.cluster.cpu.numa_nodes > s_.cluster.cpu.cores)
      fail(where("cluster.cpu"), "cpu.numa_nodes",
           std::to_string(s_.cluster.cpu.numa_nodes) + " NUMA nodes is more than the CPU's " +
               std::to_string(s_.cluster.cpu.cores) + " cores",
           "each NUMA node has cores of its own (e.g. 8 for two EPYC sockets in NPS4)");
    const std::int64_t world = static_cast<std::int64_t>(s_.cluster.nodes) * s_.cluster.gpus_per_node;
    if (world > kMaxWorldGpus)
      fail(where("cluster.nodes"), "cluster.nodes",
           std::to_string(s_.cluster.nodes) + " nodes x " + std::to_string(s_.cluster.gpus_per_node) + " GPUs = " +
               std::to_string(world) + " GPUs is above the " + std::to_string(kMaxWorldGpus) + " zerosim simulates");
    // Gradient buckets per micro-step: every bucket is its own copy kernels and collective; a bucket of a few
    // elements turns a step into millions of ops (and hours of simulation) while DeepSpeed's are 5e8 by default.
    constexpr std::int64_t kMinBucket = 10000;
    if (s_.zero.stage >= 1 && s_.zero.reduce_bucket_size < kMinBucket)
      fail(where("zero.reduce_bucket_size"), "zero.reduce_bucket_size",
           std::to_string(s_.zero.reduce_bucket_size) + " elements is below the " + std::to_string(kMinBucket) +
               " zerosim simulates (one collective per bucket)",
           "DeepSpeed's default is 5e8; 1e5 or more");
    if (s_.cluster.host_memory.value() > 1e17) // 100 PB: no node comes within four orders of magnitude
      fail(where("cluster.host_memory"), shown("cluster.host_memory"),
           "more than 1e17 B (100 PB) of host RAM per node is not a node; today's largest servers hold a few TB",
           "0 means unlimited");
    if (s_.cluster.gpu.memory.value() > 1e15) // 1 PB: no device comes within three orders of magnitude
      fail(where("gpu.memory"), shown("gpu.memory"),
           "a GPU of more than 1e15 B (1 PB) of memory is not a GPU; today's largest hold under 300 GB");
    if (s_.model.head_dim > 65536) // also from a config.json, whose integers are not range-checked like --set's
      fail(where("model.head_dim"), shown("model.head_dim"),
           std::to_string(s_.model.head_dim) + " is not an attention head dimension (today's models use 64-256)");
    if (s_.cluster.gpu.sm_count > 100000)
      fail(where("gpu.sm_count"), shown("gpu.sm_count"),
           std::to_string(s_.cluster.gpu.sm_count) + " SMs is not a GPU (the largest have a few hundred)");
    if (s_.cluster.gpu.compute_capability > 20) { // CUDA's are major.minor, 1.0 to 12.x so far
      std::ostringstream cc;
      cc << s_.cluster.gpu.compute_capability;
      fail(where("gpu.compute_capability"), shown("gpu.compute_capability"),
           cc.str() + " is not a CUDA compute capability (major.minor: 8.0 A100, 9.0 H100, 10.0 B200)",
           "0 for a GPU that is not NVIDIA's");
    }
    if (s_.simulation.fidelity == Fidelity::CHUNK && world > kMaxChunkRanks)
      fail(where("simulation.fidelity"), "simulation.fidelity",
           "chunk sends every algorithm step as a message (2(N-1) per rank per all-reduce); " + std::to_string(world) +
               " GPUs is above " + std::to_string(kMaxChunkRanks),
           "use fidelity flow (contention) or analytic at this scale");
    // GPUs simulated as their own actors: one node is never folded, and a torus, a dragonfly or an oversubscribed
    // fat tree is not folded by auto, so fold: off is not the only way to reach the limit.
    const std::int64_t simulated = scenario::simulated_ranks(s_.cluster, s_.simulation.fold, s_.simulation.fidelity);
    if (simulated > kMaxUnfoldedRanks && s_.simulation.fold == FoldPolicy::OFF)
      fail(where("simulation.fold"), "simulation.fold",
           "off simulates every one of the " + std::to_string(world) + " GPUs as its own actors; the limit is " +
               std::to_string(kMaxUnfoldedRanks),
           "use fold: auto");
    if (simulated > kMaxUnfoldedRanks)
      fail(where("cluster.fabric"), "cluster.fabric",
           "fold: auto does not fold a torus, a dragonfly or an oversubscribed fat tree, so every one of the " +
               std::to_string(world) + " GPUs would be simulated as its own actors; the limit is " +
               std::to_string(kMaxUnfoldedRanks),
           "use fewer nodes, or a non-blocking fat tree, a single switch or a rail fabric");
  }

  /// ds_config train_batch_size = micro-batch x GA x GPUs (DeepSpeed runtime/config.py
  /// _set_batch_related_parameters): with both others given (in the ds_config or the scenario) it must match; with
  /// one of them the other is derived (it must divide); with neither, GA = 1 and the micro-batch is derived.
  void resolve_train_batch() {
    const auto& [tbs, at] = *ds_train_batch_;
    const std::int64_t ws = static_cast<std::int64_t>(s_.cluster.nodes) * s_.cluster.gpus_per_node;
    const bool mb_given = where_.count("training.micro_batch") > 0;
    const bool ga_given = where_.count("training.grad_accum") > 0;
    std::int64_t& mb = s_.training.micro_batch;
    std::int64_t& ga = s_.training.grad_accum;
    const auto derive = [&](std::int64_t& out, std::int64_t per, const char* what) {
      if (per <= 0 || tbs % per != 0 || tbs / per < 1)
        fail(at, train_batch_key_,
             std::to_string(tbs) + " is not a multiple of " + std::to_string(per) + " (" + what + ")",
             "DeepSpeed derives the missing batch setting from train_batch_size and the others");
      out = tbs / per;
    };
    if (mb_given && ga_given) {
      if (mb * ga * ws != tbs) {
        // Advice that loads as written: a grad_accum or micro_batch that makes the product tbs (when one divides),
        // else the product as the global batch; a scenario's train_batch_size may also go (0 = not given), a
        // ds_config's may become "auto" (HF Trainer fills it in).
        std::vector<std::string> fixes;
        if (tbs % (mb * ws) == 0)
          fixes.push_back("training.grad_accum: " + std::to_string(tbs / (mb * ws)));
        if (tbs % (ga * ws) == 0)
          fixes.push_back("training.micro_batch: " + std::to_string(tbs / (ga * ws)));
        const bool in_scenario = train_batch_key_ == "training.train_batch_size";
        if (in_scenario)
          fixes.push_back("training.train_batch_size: " + std::to_string(mb * ga * ws) +
                          " (or 0, no global batch given)");
        else
          fixes.push_back("\"train_batch_size\": " + std::to_string(mb * ga * ws) + " or \"auto\" in " +
                          fs::path(at.file).filename().string());
        std::string hint = "set ";
        for (std::size_t i = 0; i < fixes.size(); ++i)
          hint += (i == 0 ? "" : i + 1 == fixes.size() ? ", or " : ", ") + fixes[i];
        fail(at, train_batch_key_,
             std::to_string(tbs) + " is not micro_batch x grad_accum x GPUs = " + std::to_string(mb) + " x " +
                 std::to_string(ga) + " x " + std::to_string(ws) + " = " + std::to_string(mb * ga * ws) +
                 " (DeepSpeed asserts the equality)",
             hint);
      }
    } else if (mb_given) {
      derive(ga, mb * ws, "micro_batch x GPUs");
      batch_derived_["training.grad_accum"] = "derived from " + train_batch_key_ + " " + std::to_string(tbs) +
                                              " / (micro_batch " + std::to_string(mb) + " x " + std::to_string(ws) +
                                              " GPUs)";
    } else if (ga_given) {
      derive(mb, ga * ws, "grad_accum x GPUs");
      batch_derived_["training.micro_batch"] = "derived from " + train_batch_key_ + " " + std::to_string(tbs) +
                                               " / (grad_accum " + std::to_string(ga) + " x " + std::to_string(ws) +
                                               " GPUs)";
    } else {
      ga = 1;
      derive(mb, ws, "GPUs");
      batch_derived_["training.grad_accum"] =
          "with " + train_batch_key_ + " " + std::to_string(tbs) + " and neither it nor the micro-batch given";
      batch_derived_["training.micro_batch"] =
          "derived from " + train_batch_key_ + " " + std::to_string(tbs) + " / " + std::to_string(ws) + " GPUs";
    }
  }

  /// The offload combinations the program generator accepts (sim/zero/zero_program.cpp generate_program rejects
  /// every other one; mirrored here so a bad combination is an input error at load time, never a failed
  /// simulation process). DeepSpeed: offload_param is a stage-3 feature and offload_optimizer works with the ZeRO
  /// optimizer of stages 1-3 (deepspeed/runtime/zero/offload_config.py docstrings; zero_semantics.md §3.5).
  /// DeepSpeed's dtype checks (engine.py _do_optimizer_sanity_check): without ZeRO (stage 0) the accumulation dtype
  /// must equal the model's ("unsupported mix of model_dtype and grad_accum_dtype"), except bf16 with fp32
  /// accumulation before 0.18.5 (BF16_Optimizer; PR #7790 removed it); zerosim models fp32 or the model's own
  /// 16-bit dtype, not the other 16-bit one. Runs after apply_deepspeed_version.
  void validate_grad_accum_dtype() const {
    const GradAccumDtype a = s_.zero.grad_accum_dtype;
    if (a == GradAccumDtype::MODEL)
      return;
    // fp32 model: fp32 accumulation is the model's own dtype (engine.py get_data_types); a 16-bit one is not modelled.
    if (s_.training.precision == Precision::FP32) {
      if (a != GradAccumDtype::FP32)
        fail(where("zero.grad_accum_dtype"), shown("zero.grad_accum_dtype"),
             "accumulating fp32 gradients in a 16-bit dtype is not modelled", "use fp32 or remove grad_accum_dtype");
      return;
    }
    const bool bf16 = s_.training.precision == Precision::BF16;
    const GradAccumDtype model = bf16 ? GradAccumDtype::BF16 : GradAccumDtype::FP16;
    const std::string model_name = bf16 ? "bf16" : "fp16";
    if (a != GradAccumDtype::FP32 && a != model)
      fail(where("zero.grad_accum_dtype"), shown("zero.grad_accum_dtype"),
           "accumulating " + model_name + " gradients in the other 16-bit dtype is not modelled",
           "use fp32 or " + model_name);
    if (a == GradAccumDtype::FP32 && s_.zero.stage == 0 && (!bf16 || !s_.zero.deepspeed_before(0, 18, 5)))
      fail(where("zero.grad_accum_dtype"), shown("zero.grad_accum_dtype"),
           "fp32 accumulation of " + model_name +
               " gradients needs ZeRO (stage 0: DeepSpeed raises 'unsupported mix of model_dtype and "
               "grad_accum_dtype'" +
               (bf16 ? "; bf16 ran BF16_Optimizer before 0.18.5, zero.deepspeed_version = " +
                           s_.zero.deepspeed_version_text + ")"
                     : ")"),
           bf16 ? "set zero.stage: 1, remove grad_accum_dtype, or set zero.deepspeed_version below 0.18.5"
                : "set zero.stage: 1, or remove grad_accum_dtype");
    // Stages 1 and 2 on the ZeRO optimizer with a separate accumulation dtype keep fp32 copies of the gradients
    // (stage_1_and_2.py use_separate_grad_accum: param.grad_accum at stage 1, the partition buffers at stage 2),
    // which zerosim does not model; simulating without them would report a different run. Stage 3 sizes its
    // grad_partitions_flat_buffer in the dtype (modelled), BF16_Optimizer is its own path.
    if (a == GradAccumDtype::FP32 && (s_.zero.stage == 1 || s_.zero.stage == 2) &&
        !uses_bf16_optimizer(s_.training, s_.zero))
      fail(where("zero.grad_accum_dtype"), shown("zero.grad_accum_dtype"),
           "fp32 accumulation of " + model_name + " gradients at stage " + std::to_string(s_.zero.stage) +
               (s_.zero.offload_optimizer != OffloadDevice::NONE ? " with offload_optimizer" : "") +
               " is not modelled (DeepSpeed's ZeRO optimizer then keeps fp32 copies of the gradients, "
               "stage_1_and_2.py use_separate_grad_accum)",
           bf16 && s_.zero.stage == 1 ? "remove grad_accum_dtype, drop the offload (BF16_Optimizer), or use stage 3"
                                      : "remove grad_accum_dtype, or use stage 3");
  }

  /// An imported ds_config's "auto" train_micro_batch_size_per_gpu / gradient_accumulation_steps that the scenario
  /// does not set: HF Trainer fills them from --per_device_train_batch_size / --gradient_accumulation_steps
  /// (transformers integrations/deepspeed.py trainer_config_process), which zerosim cannot see, so the report says
  /// which value was simulated.
  void finish_auto_batch_note() {
    for (const auto& [ds_key, key] : ds_auto_batch_) {
      if (where_.count(key))
        continue;
      const bool mb = key == "training.micro_batch";
      const std::int64_t v = mb ? s_.training.micro_batch : s_.training.grad_accum;
      // Derived from a global batch (resolve_train_batch): DeepSpeed's rule (runtime/config.py
      // _set_batch_related_parameters), which the HF Trainer's value must then match.
      if (const auto d = batch_derived_.find(key); d != batch_derived_.end()) {
        s_.import_notes.push_back(
            "ds_config " + ds_key + " is \"auto\" (HF Trainer fills it from " +
            (mb ? "--per_device_train_batch_size" : "--gradient_accumulation_steps") + "): simulated as " + key +
            " = " + std::to_string(v) + ", " + d->second +
            ", as DeepSpeed derives it (train_batch_size = micro_batch x grad_accum x GPUs); pass " +
            (mb ? "--per_device_train_batch_size " : "--gradient_accumulation_steps ") + std::to_string(v) +
            " to match");
        continue;
      }
      s_.import_notes.push_back(
          "ds_config " + ds_key + " is \"auto\" (HF Trainer fills it from " +
          (mb ? "--per_device_train_batch_size" : "--gradient_accumulation_steps") + "): simulated as " + key + " = " +
          std::to_string(v) + ", the default; set " + key + " to your " +
          (mb ? "per_device_train_batch_size" : "gradient_accumulation_steps") +
          (mb && !where_.count("training.seq_len")
               ? " (and training.seq_len, here the default " + std::to_string(s_.training.seq_len) + " tokens)"
               : std::string()));
    }
  }

  /// An imported ds_config's "auto" gradient_clipping that the scenario does not override: HF Trainer fills it from
  /// --max_grad_norm, which zerosim cannot see, so the report says which value was simulated.
  void finish_auto_clip_note() {
    const std::string key = "training.gradient_clipping";
    if (!ds_auto_clip_ || where_.at(key).file != s_.zero.deepspeed_config)
      return;
    s_.import_notes.push_back(
        "ds_config gradient_clipping is \"auto\" (HF Trainer fills it from --max_grad_norm): "
        "simulated as " +
        key + " = 1.0, HF's default; set " + key + " to your max_grad_norm (0 = none)");
  }

  /// A ds_config without an "optimizer" section under optimizer offload: the client's optimizer steps, and
  /// DeepSpeed refuses any but DeepSpeedCPUAdam/DeepSpeedCPULion there unless zero_force_ds_cpu_optimizer is false
  /// (deepspeed/runtime/engine.py _configure_optimizer raises ZeRORuntimeException; the key's default is true,
  /// runtime/constants.py ZERO_FORCE_DS_CPU_OPTIMIZER_DEFAULT). A config with "auto" in a key HF Trainer fills (hf_auto_key) is
  /// HF Trainer's, whose client optimizer is torch.optim.AdamW: refused, as DeepSpeed would. Otherwise the client may pass
  /// DeepSpeedCPUAdam: simulated as that, with a note saying so.
  /// With zero_force_ds_cpu_optimizer false, DeepSpeed runs HF Trainer's torch.optim.AdamW (Trainer.create_optimizer)
  /// on the offloaded CPU tensors: an "auto" config whose scenario leaves training.optimizer_impl unset is simulated
  /// as torch's single-tensor CPU AdamW, with a note.
  void validate_client_optimizer() {
    if (!ds_no_optimizer_ || s_.zero.offload_optimizer == OffloadDevice::NONE ||
        s_.training.optimizer_impl != OptimizerImpl::FUSED)
      return;
    const Loc& at = ds_no_optimizer_->first;
    if (!s_.zero.force_ds_cpu_optimizer) {
      if (!ds_no_optimizer_->second.empty() && !written_.count("training.optimizer_impl")) {
        s_.training.optimizer_impl = OptimizerImpl::TORCH_SINGLE_TENSOR;
        s_.import_notes.push_back(
            fs::path(at.file).filename().string() + " has no \"optimizer\" section and \"auto\" values (" +
            ds_no_optimizer_->second +
            ": an HF Trainer config): HF Trainer passes its "
            "torch.optim.AdamW (Trainer.create_optimizer), which DeepSpeed runs on the CPU since "
            "zero_force_ds_cpu_optimizer is false: simulated as training.optimizer_impl = torch-single-tensor "
            "(set training.optimizer_impl: fused if your code passes DeepSpeedCPUAdam)");
      }
      return;
    }
    // Located at the key that turned the offload on: the ds_config's offload_optimizer, or the scenario's or the
    // command line's zero.offload_optimizer.
    if (!ds_no_optimizer_->second.empty())
      fail(where("zero.offload_optimizer"), shown("zero.offload_optimizer"),
           fs::path(at.file).filename().string() + " has no \"optimizer\" section: HF Trainer (the config's " +
               ds_no_optimizer_->second +
               " is \"auto\", which HF Trainer fills) then passes its "
               "torch.optim.AdamW, which DeepSpeed refuses with ZeRO-Offload while zero_force_ds_cpu_optimizer is "
               "true, its default (engine.py _configure_optimizer: ZeRORuntimeException)",
           "add \"optimizer\": {\"type\": \"AdamW\", \"params\": {...}} (DeepSpeedCPUAdam), or set "
           "\"zero_force_ds_cpu_optimizer\": false and training.optimizer_impl: torch-single-tensor (torch's CPU "
           "AdamW)");
    s_.import_notes.push_back(fs::path(at.file).filename().string() +
                              " has no \"optimizer\" section: simulated as a client DeepSpeedCPUAdam, the only "
                              "client optimizer DeepSpeed accepts with offload_optimizer while "
                              "zero_force_ds_cpu_optimizer is true (engine.py _configure_optimizer refuses others)");
  }

  /// torch_adam from a ds_config is imported as the foreach path, PyTorch >= 2.0's default for CUDA tensors; with
  /// optimizer offload the step runs on CPU tensors, where torch's default is the single-tensor loop
  /// (optim/optimizer.py _default_to_fused_or_foreach). A scenario's own training.optimizer_impl is kept.
  void resolve_cpu_optimizer_impl() {
    if (s_.zero.offload_optimizer != OffloadDevice::NONE &&
        s_.training.optimizer_impl == OptimizerImpl::TORCH_FOREACH &&
        shown("training.optimizer_impl") == "optimizer.params.torch_adam")
      s_.training.optimizer_impl = OptimizerImpl::TORCH_SINGLE_TENSOR;
  }

  /// training.launcher and training.omp_num_threads against the node (scenario.hpp cpu_threads_per_rank).
  void validate_launcher() const {
    const TrainingSpec& t = s_.training;
    const CpuSpec& cpu = s_.cluster.cpu;
    const int ranks = s_.cluster.gpus_per_node;
    if (t.launcher == Launcher::DEEPSPEED_BIND_CORES && t.omp_num_threads > 0)
      fail(where("training.omp_num_threads"), shown("training.omp_num_threads"),
           "deepspeed-bind-cores sets OMP_NUM_THREADS to each rank's cores itself, over the value exported "
           "(deepspeed/launcher/launch.py l.248 @v0.19.5)",
           "drop training.omp_num_threads, or use training.launcher: deepspeed with it");
    // deepspeed/utils/numa.py get_numactl_cmd asserts at least one core per rank (l.119-120 @v0.19.5).
    if (t.launcher == Launcher::DEEPSPEED_BIND_CORES && cpu.cores > 0 && cpu.cores < ranks)
      fail(where("training.launcher"), shown("training.launcher"),
           "--bind_cores_to_rank gives each rank cores / ranks = " + std::to_string(cpu.cores) + " / " +
               std::to_string(ranks) + " cores, which is 0: DeepSpeed's launcher asserts at least one",
           "use training.launcher: deepspeed");
    if (s_.zero.offload_optimizer == OffloadDevice::NONE || cpu.cores <= 0)
      return;
    const int threads = cpu_threads_per_rank(t, cpu, ranks);
    const double share = static_cast<double>(cpu.cores) / ranks;
    if (threads > 0 && threads < share && !(cpu.core_memory_bandwidth.value() > 0)) {
      const std::string key = t.omp_num_threads > 0 ? "training.omp_num_threads" : "training.launcher";
      fail(where(key), shown(key),
           std::to_string(threads) + " OpenMP thread(s) per rank run CPU Adam on fewer than the rank's " +
               std::to_string(cpu.cores) + " / " + std::to_string(ranks) +
               " cores, bound by what one core draws from DRAM, which the CPU '" + cpu.name +
               "' does not give (cpu.core_memory_bandwidth)",
           "set cluster.cpu: {preset: " + (cpu.preset.empty() ? std::string("NAME") : cpu.preset) +
               ", core_memory_bandwidth: RATE}, RATE being one core's DRAM bytes read plus written per second "
               "alone on its own NUMA node (STREAM Triad's rate of `OMP_NUM_THREADS=1 numactl --physcpubind=0 "
               "--membind=0 ./stream`, as <value>GBps), or use training.launcher: deepspeed (every core per rank)");
    }
  }

  void validate_offload() const {
    const ZeroConfig& z = s_.zero;
    const std::string stage = std::to_string(z.stage);
    // NVMe swapping exists in stage 3 only (stage_1_and_2.py treats any offload device as cpu_offload), and needs
    // the node's NVMe (cluster.nvme; the engine's SimGrid Disk).
    const bool nvme_used =
        z.stage == 3 && (z.offload_optimizer == OffloadDevice::NVME || z.offload_param == OffloadDevice::NVME);
    if (nvme_used && !(s_.cluster.nvme.read_bandwidth.value() > 0 && s_.cluster.nvme.write_bandwidth.value() > 0))
      fail(where(z.offload_param == OffloadDevice::NVME ? "zero.offload_param" : "zero.offload_optimizer"),
           shown(z.offload_param == OffloadDevice::NVME ? "zero.offload_param" : "zero.offload_optimizer"),
           "offload to nvme needs the node's NVMe, but cluster.nvme has no read/write bandwidth",
           "set cluster.nvme.read_bandwidth and cluster.nvme.write_bandwidth, or use a topology with NVMe");
    // DeepSpeed's PartitionedOptimizerSwapper (and the pipelined one) swaps a sub-group in with one pinned buffer per
    // state tensor plus one for its gradients (swap_in_optimizer_state: required_buffer_count = num_tensors() + 1;
    // Adam's tensors are the fp32 params, exp_avg and exp_avg_sq), taken from SwapBufferManager's buffer_count
    // buffers; with fewer, allocate() returns None and the first optimizer step fails `assert pinned_buffers is not
    // None`. Stage 1-2 have no swapper (nvme runs as cpu there).
    if (z.stage == 3 && z.offload_optimizer == OffloadDevice::NVME &&
        z.optimizer_swap_buffer_count < kAdamSwapBuffersPerSubGroup)
      fail(where("zero.offload_optimizer_buffer_count"), shown("zero.offload_optimizer_buffer_count"),
           std::to_string(z.optimizer_swap_buffer_count) +
               " pinned swap buffers are fewer than an Adam sub-group swaps in at once, 4 (fp32 params, exp_avg, "
               "exp_avg_sq and the fp32 gradients): DeepSpeed's swap_in_optimizer_state asserts at the first "
               "optimizer step that its SwapBufferManager has them free",
           "set zero.offload_optimizer_buffer_count (buffer_count in the offload_optimizer map) to at least 4, "
           "DeepSpeed's default");
    // With optimizer offload the step runs on the CPU: DeepSpeedCPUAdam (fused), or torch.optim on the CPU tensors
    // (torch_adam, or a client optimizer with zero_force_ds_cpu_optimizer false; engine.py _configure_optimizer),
    // priced by sim/zero/cpu_adam.hpp torch_cpu_adam_step_time (resolve_cpu_optimizer_impl).
    // The stage and the offload device may come from different places (a ds_config's offload block under a
    // scenario's zero.stage, which wins over the ds_config's stage): blame() reports at the one the user more
    // likely wrote and names where the other was set.
    const auto device = [](OffloadDevice d) { return std::string(d == OffloadDevice::NVME ? "nvme" : "cpu"); };
    if (z.offload_param != OffloadDevice::NONE && z.stage != 3) {
      const Blame b = blame("zero.offload_param", "zero.stage", stage, device(z.offload_param));
      fail(b.at, b.key, "parameter offload needs ZeRO stage 3 (got stage " + stage + ")" + b.other_note,
           "set zero.stage: 3 or offload_param: none");
    }
    if (z.offload_optimizer != OffloadDevice::NONE && z.stage == 0) {
      const Blame b = blame("zero.offload_optimizer", "zero.stage", stage, device(z.offload_optimizer));
      fail(b.at, b.key,
           "optimizer offload needs ZeRO stage 1, 2 or 3 (got stage 0, which has no ZeRO optimizer to offload)" +
               b.other_note,
           "set zero.stage: 1 or higher, or offload_optimizer: none");
    }
  }

  std::string file_;
  fs::path dir_;
  std::set<std::string> cli_;
  std::vector<std::pair<std::string, Loc>> extra_sources_; ///< compare_set keys of this variant and their lines
  std::string compare_key_; ///< set for a compare variant: the varied key ...
  Loc compare_at_; ///< ... and where its value is written
  std::map<std::string, Loc> where_;
  /// ds_config train_batch_size and where it was written, checked by validate_batch.
  std::optional<std::pair<std::int64_t, Loc>> ds_train_batch_;
  std::string train_batch_key_ = "train_batch_size"; ///< the key errors of resolve_train_batch name
  /// An imported ds_config's fp16/bf16 "enabled": "auto" (import_precision), for finish_precision_note.
  struct PrecisionAuto {
    bool fp16 = false; ///< fp16.enabled is "auto"
    bool bf16 = false; ///< bf16.enabled (or bfloat16.enabled) is "auto"
    bool other_true = false; ///< only one is "auto", and the other section's enabled is true
    bool other_false = false; ///< only one is "auto", and the other section's enabled is written false
    std::string bf_key; ///< "bf16" or the legacy "bfloat16"
    Loc at; ///< the section applied, or the bf16 one when both are "auto"
  };
  std::optional<PrecisionAuto> precision_auto_;
  /// An imported ds_config that enables neither fp16 nor bf16 (import_precision): where it set training.precision
  /// fp32 and the report's note, given by finish_precision_note if that value is the one that runs.
  struct FromDs {
    Loc at;
    std::string note;
  };
  std::optional<FromDs> fp32_from_ds_;
  /// The model dtype the imported ds_config's fp16 / bf16 sections select ("fp16", "bf16", "fp32"), or "" when an
  /// "auto" (or an HF Trainer config without either) leaves it to a flag: what data_types.param_dtype must match.
  std::string ds_precision_mode_;
  /// A data_types field of the ds_config whose meaning depends on the release (check_data_types_for_release).
  struct PendingDataType {
    Loc at;
    std::string field; ///< "param_dtype" or "buffer_dtype"
    json value;
    std::string here; ///< "<file>:<line>: " for notes
  };
  std::vector<PendingDataType> ds_data_types_;
  /// An imported ds_config's "auto" batch keys: {ds_config key, scenario key} (finish_auto_batch_note).
  std::vector<std::pair<std::string, std::string>> ds_auto_batch_;
  /// The batch settings resolve_train_batch derived from a global batch, by scenario key, with how ("derived from
  /// training.train_batch_size 256 / (micro_batch 2 x 16 GPUs)"); read by finish_auto_batch_note.
  std::map<std::string, std::string> batch_derived_;
  /// An imported ds_config's gradient_clipping is "auto" (finish_auto_clip_note).
  bool ds_auto_clip_ = false;
  /// An imported ds_config without "optimizer": {its offload_optimizer line (0 if none), the first key holding an
  /// "auto" HF Trainer fills, "" when none (then not an HF Trainer config; hf_auto_key)} (validate_client_optimizer).
  std::optional<std::pair<Loc, std::string>> ds_no_optimizer_;
  /// An imported mistral/qwen2 config.json without num_key_value_heads: where model.kv_heads then points (its
  /// model_type line) and the sentence naming the class default used.
  std::optional<std::pair<Loc, std::string>> kv_default_;
  /// The note of an imported llama config.json without num_key_value_heads: {that config.json, the note}
  /// (finish_llama_kv_note).
  std::optional<std::pair<std::string, std::string>> llama_kv_note_;
  /// Keys the imported ds_config set, by dotted path, until the scenario or --set sets them again (apply).
  std::map<std::string, DsValue> from_ds_;
  std::map<std::string, std::string> shown_;
  /// Each key's value as written where it was last set (KeyValue::text), for cross-field errors (written()).
  std::map<std::string, std::string> written_;
  /// Flat path of an offload field (zero.offload_optimizer_pin_memory) -> the spelling that set it (admit_spelling).
  std::map<std::string, Spelling> spelled_;
  Scenario s_;
};

} // namespace

std::string data_dir() {
  // A ZEROSIM_DATA_DIR without the presets would make every preset "unknown" with an empty list of valid names
  // (and `zerosim list` list nothing): say what is wrong with it instead.
  if (const char* env = std::getenv("ZEROSIM_DATA_DIR"); env && *env) {
    std::error_code ec;
    if (!fs::is_directory(fs::path(env) / "topologies" / "clusters", ec) ||
        !fs::is_directory(fs::path(env) / "scenarios" / "models", ec))
      throw ScenarioError("<environment>", 0, "ZEROSIM_DATA_DIR",
                          std::string("'") + env +
                              (fs::exists(env, ec) ? "' holds no zerosim presets (topologies/clusters/ and "
                                                     "scenarios/models/)"
                                                   : "' does not exist"),
                          "point it at a zerosim checkout, or unset it to use the presets of the checkout zerosim was "
                          "built in");
    return env;
  }
  // The checkout the running binary was built in (build/apps/zerosim -> two levels up), so a copied or moved
  // checkout with its own build reads its own presets; else the source dir compiled in.
  static const std::string found = [] {
    std::error_code ec;
    fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    for (int up = 0; !ec && up < 4 && !dir.empty(); ++up, dir = dir.parent_path())
      if (fs::is_directory(dir / "topologies" / "clusters", ec) && fs::is_directory(dir / "scenarios", ec))
        return dir.string();
    return std::string(ZEROSIM_DATA_DIR);
  }();
  return found;
}

namespace {

/// The scenario tree of `path` with `overrides` applied; `cli` receives the overridden keys. Called once per compare
/// variant as well: a fresh parse keeps every node's line (YAML::Clone drops the marks).
YAML::Node load_root(const std::string& path, const std::vector<std::string>& overrides, std::set<std::string>& cli) {
  YAML::Node root = load_yaml_file(path, {path, 0}, "scenario");
  if (!root.IsDefined() || root.IsNull())
    fail({path, 0}, "yaml", "the scenario file is empty");
  if (!root.IsMap())
    fail({path, line_of(root)}, "yaml", "expected a map of scenario keys at the top level");

  for (const std::string& o : overrides) {
    const std::size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      fail({kCli, 0}, o, "expected an override 'dotted.key=value'", "e.g. --set zero.stage=2");
    const std::string key = o.substr(0, eq);
    if (first_invalid_utf8(o) != std::string::npos)
      fail({kCli, 0}, first_invalid_utf8(key) == std::string::npos ? key : std::string("--set"),
           "not valid UTF-8; give the value in UTF-8");
    // A field of a key that takes a scalar-or-map form (zero.offload_optimizer.pin_memory): set in that key's map
    // through the generic path below (set_path turns a scalar written first into the map); the key itself is what
    // the command line set.
    const std::size_t last_dot = key.rfind('.');
    const std::string parent = last_dot == std::string::npos ? std::string() : key.substr(0, last_dot);
    const std::vector<std::string>* fields = settable_path(key).empty() ? map_form_fields(parent) : nullptr;
    if (fields != nullptr) {
      const std::string field = key.substr(last_dot + 1);
      if (std::find(fields->begin(), fields->end(), field) == fields->end())
        fail({kCli, 0}, key, "unknown DeepSpeed offload field", did_you_mean(field, *fields));
    } else if (settable_path(key).empty()) {
      // The key table documents GPU and CPU preset keys as gpu.X / cpu.X; in a scenario they live under cluster.
      if ((key.rfind("gpu.", 0) == 0 || key.rfind("cpu.", 0) == 0) && !settable_path("cluster." + key).empty())
        fail({kCli, 0}, key, "unknown key", "in a scenario it is cluster." + key);
      std::string hint = hf_name_hint(key.substr(key.rfind('.') + 1));
      if (hint.empty())
        hint = did_you_mean(key, all_paths());
      // Nothing near the whole path: try the last name among its section's keys, as a scenario file's typo gets
      // (zero.pin_memory -> zero.offload_optimizer_pin_memory), and name the suggestions with their section.
      if (const std::size_t dot = key.rfind('.');
          hint.empty() && dot != std::string::npos && is_section(key.substr(0, dot))) {
        const std::string section = key.substr(0, dot);
        hint = did_you_mean(key.substr(dot + 1), child_keys(section));
        for (const std::string& leaf : child_keys(section))
          if (const std::size_t at = hint.find("'" + leaf + "'"); at != std::string::npos)
            hint.insert(at + 1, section + ".");
      }
      fail({kCli, 0}, key, "unknown key", hint);
    }
    YAML::Node value;
    try {
      value = YAML::Load(o.substr(eq + 1));
    } catch (const YAML::Exception& e) {
      fail({kCli, 0}, key, "malformed value '" + o.substr(eq + 1) + "': " + e.msg);
    }
    long budget = kMaxYamlValues;
    check_duplicate_keys(value, kCli, key, budget);
    apply_override(root, key, o.substr(eq + 1), {kCli, 0});
    cli.insert(fields != nullptr ? parent : key);
  }
  return root;
}

} // namespace

bool is_valid_utf8(const std::string& text) { return first_invalid_utf8(text) == std::string::npos; }

bool is_settable_key(const std::string& path) { return !settable_path(path).empty(); }

std::string normalize_override(const std::string& override_text) {
  const std::size_t eq = override_text.find('=');
  if (eq == std::string::npos)
    return override_text;
  const auto blank = [](char c) { return c == ' ' || c == '\t'; };
  std::size_t key_begin = 0, key_end = eq, value_begin = eq + 1;
  while (key_begin < key_end && blank(override_text[key_begin]))
    ++key_begin;
  while (key_end > key_begin && blank(override_text[key_end - 1]))
    --key_end;
  while (value_begin < override_text.size() && blank(override_text[value_begin]))
    ++value_begin;
  return override_text.substr(key_begin, key_end - key_begin) + "=" + override_text.substr(value_begin);
}

std::vector<Variant> load_scenario(const std::string& path, const std::vector<std::string>& raw_overrides) {
  std::vector<std::string> overrides;
  for (const std::string& o : raw_overrides)
    overrides.push_back(normalize_override(o));
  std::set<std::string> cli;
  YAML::Node root = load_root(path, overrides, cli);

  const YAML::Node& const_root = root; // const access: a non-const operator[] may add the key
  const YAML::Node compare = const_root["compare"];
  if (!compare.IsDefined() || compare.IsNull()) {
    // `--set compare=null` turns a comparison off: its compare_set goes with it. Written without a compare: block,
    // or given with --set next to compare=null, compare_set is a mistake.
    if (const YAML::Node cs = const_root["compare_set"];
        cs.IsDefined() && !cs.IsNull() && (!cli.count("compare") || cli.count("compare_set")))
      fail(cli.count("compare_set") ? Loc{kCli, 0} : Loc{path, line_of(cs)}, "compare_set",
           "needs a compare: block (it adds overrides to compare variants)");
    Resolver r(path, cli);
    Scenario sc = r.resolve(root);
    return {Variant{"", std::move(sc), "", r.sources()}};
  }

  // Validate the compare block itself (key and list) before expanding it into one tree per value. A compare block
  // given with --set is reported at <cli>.
  const bool compare_cli = cli.count("compare") != 0;
  const auto cmp_loc = [&](const YAML::Node& n) { return compare_cli ? Loc{kCli, 0} : Loc{path, line_of(n)}; };
  if (!compare.IsMap() || compare.size() != 1)
    fail(cmp_loc(compare), "compare", "expected one dotted key and a list of values, e.g. {zero.stage: [0, 1, 2, 3]}");
  const auto kv = *compare.begin();
  const std::string key = yaml_text(kv.first);
  if (settable_path(key).empty())
    fail(cmp_loc(kv.first), "compare." + key, "unknown key", did_you_mean(key, all_paths()));
  if (!kv.second.IsSequence() || kv.second.size() == 0)
    fail(cmp_loc(kv.second), "compare." + key, "expected a non-empty list of values");

  // Duplicate values would give two identical variants (and folders "x" and "x-2"): reject them.
  {
    std::set<std::string> seen;
    for (const auto& v : kv.second)
      if (!seen.insert(yaml_text(v)).second)
        fail(cmp_loc(v), "compare." + key, "duplicate value '" + yaml_text(v) + "'");
  }
  std::string values_list;
  for (const auto& v : kv.second)
    values_list += (values_list.empty() ? "" : ", ") + yaml_text(v);

  // compare_set: {VALUE: {dotted.key: value}} -- extra overrides of the variants whose compare value is VALUE.
  // Checked here: every VALUE is one of the compared values (as printed), every key is settable, and no key sets
  // what the compare value itself sets (the variant's label would lie).
  const YAML::Node extra = const_root["compare_set"];
  // A compare_set given with --set is reported at <cli>, like a compare block.
  const auto cs_loc = [&](const YAML::Node& n) {
    return cli.count("compare_set") ? Loc{kCli, 0} : Loc{path, line_of(n)};
  };
  if (extra.IsDefined() && !extra.IsNull()) {
    if (!extra.IsMap())
      fail(cs_loc(extra), "compare_set", "expected a map {compare value: {dotted.key: value, ...}}");
    for (const auto& e : extra) {
      const std::string value = yaml_text(e.first);
      const auto match =
          std::find_if(kv.second.begin(), kv.second.end(), [&](const YAML::Node& v) { return yaml_text(v) == value; });
      if (match == kv.second.end())
        fail(cs_loc(e.first), "compare_set." + value, "not one of the values of compare." + key,
             "the values, as written here: " + values_list +
                 (kv.second[0].IsMap()
                      ? "; key a map value by that text in quotes, e.g. \"" + yaml_text(kv.second[0]) + "\": {...}"
                      : std::string()));
      if (!e.second.IsMap())
        fail(cs_loc(e.second), "compare_set." + value, "expected a map of dotted keys to values");
      for (const auto& o : e.second) {
        const std::string k = yaml_text(o.first);
        if (settable_path(k).empty())
          fail(cs_loc(o.first), "compare_set." + value + "." + k, "unknown key", did_you_mean(k, all_paths()));
        bool set_by_value = k == key || key.rfind(k + ".", 0) == 0;
        if ((*match).IsMap())
          for (const auto& f : *match)
            set_by_value = set_by_value || k == key + "." + yaml_text(f.first);
        if (set_by_value)
          fail(cs_loc(o.first), "compare_set." + value + "." + k,
               "is set by the compare value itself: a variant labelled '" + key + "=" + value +
                   "' would run something else");
      }
    }
  }

  // `--set K=V` of a key the comparison varies replaces the comparison: one run with V (validated like any other
  // value), and a note saying so. K is the compared key, or in a compared section (`compare: {zero: [{stage: 2},
  // {stage: 3, offload_param: cpu}]}`) a key some value names (zero.stage, zero.offload_param): applied to every
  // variant it would run each under a label that no longer says what it is. With the compared key itself, V's
  // compare_set overrides apply when V is one of the compared values.
  std::string varied = cli.count(key) != 0 ? key : std::string();
  if (varied.empty() && is_section(key))
    for (const auto& v : kv.second)
      if (v.IsMap())
        for (const auto& f : v)
          if (const std::string k = key + "." + yaml_text(f.first); varied.empty() && cli.count(k) != 0)
            varied = k;
  if (!varied.empty() && !compare_cli) {
    root.remove("compare");
    std::string set_value;
    for (const std::string& o : overrides)
      if (const std::size_t eq = o.find('='); eq != std::string::npos && o.substr(0, eq) == varied)
        set_value = o.substr(eq + 1);
    const std::string note = "--set " + varied + "=" + set_value + " replaces the comparison compare." + key + " (" +
                             std::to_string(kv.second.size()) + " values): one run with that setting";
    if (extra.IsDefined() && extra.IsMap())
      for (const std::string& o : overrides) {
        const std::size_t eq = o.find('=');
        if (eq == std::string::npos || o.substr(0, eq) != key)
          continue;
        const std::string value = yaml_text(YAML::Load(o.substr(eq + 1)));
        for (const auto& e : extra)
          if (yaml_text(e.first) == value)
            for (const auto& f : e.second)
              set_path(root, split(yaml_text(f.first), '.'), 0, YAML::Clone(f.second), {path, line_of(f.second)},
                       yaml_text(f.first));
      }
    Resolver r(path, cli);
    Scenario sc = r.resolve(root);
    return {Variant{"", std::move(sc), note, r.sources()}};
  }

  // Every variant is resolved and validated here, before anything runs; an error names the compare value, unless
  // every variant fails with the same message (the error does not depend on the compared key).
  std::vector<Variant> out;
  std::vector<std::pair<std::string, ScenarioError>> failed; // (variant label, its error)
  for (const auto& v : kv.second) {
    std::set<std::string> ignored;
    YAML::Node copy = load_root(path, overrides, ignored);
    const Loc value_at = cmp_loc(v);
    // A compared section (e.g. `compare: {zero: [{stage: 2}, ...]}`) is merged into the scenario's section, key by
    // key, as --set would do: keys the value does not name keep the scenario's values.
    if (v.IsMap() && is_section(key) && key != "model") {
      for (const auto& e : v)
        set_path(copy, split(key + "." + yaml_text(e.first), '.'), 0, YAML::Clone(e.second), value_at, key);
    } else {
      set_path(copy, split(key, '.'), 0, YAML::Clone(v), value_at, key);
    }
    std::vector<std::pair<std::string, Loc>> set_by_extra;
    if (extra.IsDefined() && extra.IsMap())
      for (const auto& e : extra)
        if (yaml_text(e.first) == yaml_text(v))
          for (const auto& o : e.second) {
            const std::string k = yaml_text(o.first);
            set_path(copy, split(k, '.'), 0, YAML::Clone(o.second), {path, line_of(o.second)}, k);
            set_by_extra.emplace_back(k, Loc{path, line_of(o.second)});
          }
    // `--set` keys inside a compared section apply to every variant (applied again after the value, which matters
    // for `model`, whose value replaces the section); one the compare value itself names is a conflict.
    for (const std::string& o : overrides) {
      const std::size_t eq = o.find('=');
      if (o.compare(0, key.size() + 1, key + ".") != 0 || eq == std::string::npos)
        continue;
      apply_override(copy, o.substr(0, eq), o.substr(eq + 1), {kCli, 0});
    }
    std::set<std::string> vcli = cli;
    vcli.erase(key); // the compare value comes from the compare list, not from a --set of the key
    Resolver r(path, vcli);
    r.set_compare_source(key, value_at);
    for (auto& [k, at] : set_by_extra)
      r.add_source(k, at);
    const std::string label = key + "=" + yaml_text(v);
    try {
      Scenario sc = r.resolve(copy);
      out.push_back(Variant{label, std::move(sc), "", r.sources()});
    } catch (const ScenarioError& e) {
      failed.emplace_back(label, e);
    }
  }
  if (failed.empty())
    return out;
  const ScenarioError& e = failed.front().second;
  const bool common =
      failed.size() == kv.second.size() && std::all_of(failed.begin(), failed.end(), [&](const auto& f) {
        return std::string_view(f.second.what()) == std::string_view(e.what());
      });
  if (common)
    throw e;
  // Re-throw with the variant named: "file:line: key: message (compare variant zero.stage=0)".
  std::string prefix = e.file();
  if (e.line() > 0)
    prefix += ":" + std::to_string(e.line());
  prefix += ": " + e.key() + ": ";
  std::string what = e.what();
  if (what.rfind(prefix, 0) == 0)
    what = what.substr(prefix.size());
  throw ScenarioError(e.file(), e.line(), e.key(), what + " (compare variant " + failed.front().first + ")");
}

namespace {

/// The scenario of GPT-2 on the `kind` preset (gpus, cpus, clusters) `name`, set as cluster.`key`: presets are
/// checked exactly as scenarios use them. Errors name the preset file.
Scenario resolve_cluster_preset(const char* kind, const std::string& name, const char* key) {
  YAML::Node root(YAML::NodeType::Map);
  root["name"] = "list";
  root["model"] = "gpt2";
  root["cluster"][key] = name;
  Resolver r((fs::path(preset_dir(kind)) / (name + ".yaml")).string(), {});
  return r.resolve(root);
}

} // namespace

std::vector<PresetInfo> list_presets() {
  std::vector<PresetInfo> out;
  char buf[320];
  for (const std::string& name : preset_names(preset_dir("models"))) {
    // Resolve through a tiny scenario so presets are checked exactly as scenarios use them.
    YAML::Node root(YAML::NodeType::Map);
    root["name"] = "list";
    root["model"] = name;
    root["training"]["seq_len"] = 1;
    Resolver r((fs::path(data_dir()) / "scenarios" / "models" / (name + ".yaml")).string(), {});
    const Scenario s = r.resolve(root);
    std::snprintf(buf, sizeof buf, "%s, h=%lld, L=%lld, a=%lld, kv=%lld, V=%lld%s", to_string(s.model.family),
                  static_cast<long long>(s.model.hidden), static_cast<long long>(s.model.layers),
                  static_cast<long long>(s.model.heads), static_cast<long long>(s.model.kv_heads),
                  static_cast<long long>(s.model.vocab), s.model.tied_embeddings ? ", tied embeddings" : "");
    out.push_back({"model", name, buf, s.model.source});
  }
  for (const std::string& name : preset_names(preset_dir("gpus"))) {
    const Scenario s = resolve_cluster_preset("gpus", name, "gpu");
    const GpuSpec& g = s.cluster.gpu;
    std::snprintf(buf, sizeof buf, "%.2f GiB, %.1f TFLOPS %s dense, %.0f GB/s memory%s", g.memory.value() / kGiB,
                  g.peak_lp.value() / 1e12, g.bf16 ? "16-bit" : "fp16 (no bf16)", g.memory_bandwidth.value() / kGB,
                  g.flash_attention ? "" : ", no FlashAttention");
    out.push_back({"gpu", name, buf, g.source});
  }
  for (const std::string& name : preset_names(preset_dir("cpus"))) {
    const Scenario s = resolve_cluster_preset("cpus", name, "cpu");
    const CpuSpec& c = s.cluster.cpu;
    std::snprintf(buf, sizeof buf,
                  "%d cores, %.1f GB/s DRAM in %d NUMA node%s, %.2f TFLOPS fp32, pageable copies staged at %.0f GB/s "
                  "(the host of optimizer offload)",
                  c.cores, c.memory_bandwidth.value() / kGB, c.numa_nodes, c.numa_nodes == 1 ? "" : "s",
                  c.peak_fp32.value() / 1e12, c.pageable_copy_bandwidth.value() / kGB);
    out.push_back({"cpu", name, buf, c.source});
  }
  for (const std::string& name : preset_names(preset_dir("clusters"))) {
    const Scenario s = resolve_cluster_preset("clusters", name, "topology");
    const ClusterSpec& c = s.cluster;
    // Without peer-to-peer, GPU traffic is staged through host memory: no intra-node figure of its own. A full mesh's
    // figure is one peer link (each GPU has gpus_per_node - 1 of them), a switch's each GPU's link into it.
    const bool mesh = c.intra_node_topology == IntraNodeTopology::MESH;
    int n = !c.p2p ? std::snprintf(buf, sizeof buf,
                                   "%d x %s per node, no GPU peer-to-peer (GPU traffic through host memory), host "
                                   "%.1f GB/s/dir",
                                   c.gpus_per_node, c.gpu.name.c_str(), c.host_link.bandwidth.value() / kGB)
            : mesh ? std::snprintf(buf, sizeof buf,
                                   "%d x %s per node, full mesh of %.1f GB/s/dir links (%.1f GB/s/dir per GPU), host "
                                   "%.1f GB/s/dir",
                                   c.gpus_per_node, c.gpu.name.c_str(), c.intra_node.bandwidth.value() / kGB,
                                   c.intra_node.bandwidth.value() * (c.gpus_per_node - 1) / kGB,
                                   c.host_link.bandwidth.value() / kGB)
                   : std::snprintf(buf, sizeof buf, "%d x %s per node, intra-node %.1f GB/s/dir, host %.1f GB/s/dir",
                                   c.gpus_per_node, c.gpu.name.c_str(), c.intra_node.bandwidth.value() / kGB,
                                   c.host_link.bandwidth.value() / kGB);
    if (c.nics_per_node > 0 && n > 0 && static_cast<std::size_t>(n) < sizeof buf)
      n += std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), ", %d NICs x %.1f GB/s, %s between nodes",
                         c.nics_per_node, c.nic.bandwidth.value() / kGB, to_string(c.fabric));
    if (c.nvme.read_bandwidth.value() > 0 && n > 0 && static_cast<std::size_t>(n) < sizeof buf)
      std::snprintf(buf + n, sizeof buf - static_cast<std::size_t>(n), ", NVMe %.1f / %.1f GB/s read / write",
                    c.nvme.read_bandwidth.value() / kGB, c.nvme.write_bandwidth.value() / kGB);
    out.push_back({"topology", name, buf, c.source});
  }
  return out;
}

} // namespace zerosim::scenario
