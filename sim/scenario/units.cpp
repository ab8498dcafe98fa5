#include "sim/scenario/units.hpp"

#include "sim/error.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace zerosim::scenario {

namespace {

constexpr double kKi = 1024.0;

/// A dimension: its table, its name in messages and an example for the hint.
struct Dimension {
  const std::vector<UnitRow>& table;
  std::string_view what; ///< "a size"
  std::string_view example; ///< "'24GiB'"
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

[[noreturn]] void fail(const ValueLocation& w, const std::string& msg, const std::string& hint = {}) {
  throw ScenarioError(w.file, w.line, w.key, msg, hint);
}

/// Splits "1.5 GiB" into 1.5 and "GiB". Throws when there is no leading number.
std::pair<double, std::string_view> split_number(std::string_view text, const ValueLocation& w, std::string_view what,
                                                 std::string_view example) {
  const std::string_view t = trim(text);
  double v = 0;
  const char* begin = t.data();
  const char* end = t.data() + t.size();
  if (!t.empty() && t.front() == '+')
    ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, v);
  if (ec != std::errc{} || t.empty())
    fail(w, "expected " + std::string(what) + " like " + std::string(example) + ", got '" + std::string(text) + "'");
  if (!std::isfinite(v))
    fail(w, "expected a finite number, got '" + std::string(text) + "'");
  return {v, trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)))};
}

double parse_with(std::string_view text, const ValueLocation& w, const Dimension& dim) {
  auto [v, suffix] = split_number(text, w, dim.what, dim.example);
  if (suffix.empty() && v == 0.0)
    return 0.0; // a bare 0 is zero in every unit: no unit is needed to say "none" / "off"
  if (suffix.empty())
    fail(w, "expected " + std::string(dim.what) + " with a unit, got the bare number '" + std::string(trim(text)) + "'",
         std::string(dim.what) + " needs a unit, e.g. " + std::string(dim.example));
  for (const UnitRow& row : dim.table)
    if (row.suffix == suffix) {
      // A finite number times a unit can still overflow a double ("1e308TB"): an infinity is no quantity.
      if (!std::isfinite(v * row.factor))
        fail(w, "'" + std::string(trim(text)) + "' is out of range (beyond the largest double, ~1.8e308 in SI units)");
      return v * row.factor;
    }
  std::vector<std::string> names;
  for (const UnitRow& row : dim.table)
    names.emplace_back(row.suffix);
  std::string list;
  for (const auto& n : names)
    list += (list.empty() ? "" : ", ") + n;
  std::string hint = did_you_mean(suffix, names);
  // A unit of another kind ("2us" for a size, "2GB" for a latency): say what it measures rather than suggest the
  // nearest spelling of this kind's units.
  const std::pair<const std::vector<UnitRow>*, const char*> kinds[] = {{&byte_units(), "a size in bytes"},
                                                                       {&byte_rate_units(), "a bandwidth"},
                                                                       {&second_units(), "a time"},
                                                                       {&flop_rate_units(), "a FLOP rate"},
                                                                       {&frequency_units(), "a frequency"}};
  for (const auto& [table, kind] : kinds)
    if (table != &dim.table)
      for (const UnitRow& row : *table)
        if (row.suffix == suffix) {
          // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on the chain of operator+.
          std::string h(1, '\'');
          h.append(suffix).append("' is ").append(kind).append("; this key takes ").append(dim.what);
          h.append(", e.g. ").append(dim.example);
          hint.swap(h);
        }
  fail(w, "unknown unit '" + std::string(suffix) + "' in '" + std::string(trim(text)) + "' (valid: " + list + ")",
       hint);
}

} // namespace

const std::vector<UnitRow>& byte_units() {
  static const std::vector<UnitRow> t = {
      {"B", 1},
      {"kB", 1e3},
      {"MB", 1e6},
      {"GB", 1e9},
      {"TB", 1e12},
      {"PB", 1e15},
      {"KiB", kKi},
      {"MiB", kKi * kKi},
      {"GiB", kKi * kKi * kKi},
      {"TiB", kKi * kKi * kKi * kKi},
  };
  return t;
}

const std::vector<UnitRow>& byte_rate_units() {
  // Bytes per second (upper-case B), and bits per second (lower-case b, divided by 8 as SimGrid does).
  static const std::vector<UnitRow> t = {
      {"Bps", 1},         {"kBps", 1e3},     {"MBps", 1e6},        {"GBps", 1e9},
      {"TBps", 1e12},     {"KiBps", kKi},    {"MiBps", kKi * kKi}, {"GiBps", kKi * kKi * kKi},
      {"B/s", 1},         {"MB/s", 1e6},     {"GB/s", 1e9},        {"GiB/s", kKi * kKi * kKi},
      {"bps", 1.0 / 8},   {"kbps", 1e3 / 8}, {"Mbps", 1e6 / 8},    {"Gbps", 1e9 / 8},
      {"Tbps", 1e12 / 8},
  };
  return t;
}

const std::vector<UnitRow>& second_units() {
  static const std::vector<UnitRow> t = {
      {"s", 1},
      {"ms", 1e-3},
      {"us", 1e-6},
      {"ns", 1e-9},
  };
  return t;
}

const std::vector<UnitRow>& flop_rate_units() {
  static const std::vector<UnitRow> t = {
      {"FLOPS", 1}, {"kFLOPS", 1e3}, {"MFLOPS", 1e6}, {"GFLOPS", 1e9}, {"TFLOPS", 1e12}, {"PFLOPS", 1e15},
  };
  return t;
}

const std::vector<UnitRow>& frequency_units() {
  static const std::vector<UnitRow> t = {
      {"Hz", 1},
      {"kHz", 1e3},
      {"MHz", 1e6},
      {"GHz", 1e9},
  };
  return t;
}

Bytes parse_bytes(std::string_view text, const ValueLocation& where) {
  return Bytes(parse_with(text, where, {byte_units(), "a size", "'24GiB'"}));
}

ByteRate parse_byte_rate(std::string_view text, const ValueLocation& where) {
  return ByteRate(parse_with(text, where, {byte_rate_units(), "a bandwidth", "'450GBps' or '400Gbps'"}));
}

Seconds parse_seconds(std::string_view text, const ValueLocation& where) {
  return Seconds(parse_with(text, where, {second_units(), "a duration", "'2us'"}));
}

FlopRate parse_flop_rate(std::string_view text, const ValueLocation& where) {
  return FlopRate(parse_with(text, where, {flop_rate_units(), "a compute rate", "'165.2TFLOPS'"}));
}

Frequency parse_frequency(std::string_view text, const ValueLocation& where) {
  return Frequency(parse_with(text, where, {frequency_units(), "a frequency", "'2.7GHz'"}));
}

Elements parse_elements(std::string_view text, const ValueLocation& where) {
  auto [v, suffix] = split_number(text, where, "an element count", "500000000 or 5e8");
  if (!suffix.empty())
    fail(where, "expected an element count like 500000000 or 5e8, got '" + std::string(trim(text)) + "'",
         "DeepSpeed counts elements, not bytes: write a plain number");
  if (v < 0 || v != std::floor(v))
    fail(where, "expected a non-negative whole number of elements, got '" + std::string(trim(text)) + "'");
  if (v >= 9.2e18) // an Elements count is an int64: at most 2^63 - 1 ~ 9.22e18
    fail(where, "'" + std::string(trim(text)) + "' is out of range (at most 9.2e18 elements)");
  return static_cast<Elements>(v);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  // Rank by case-insensitive distance first, so "GIB" suggests "GiB" rather than "GB"; then by exact distance.
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string lw = lower(word);
  // A word that begins some candidates names them, whatever the distance: "a100" of "a100-40gb", "a100-80gb"; a word
  // of one or two characters only short ones ("G" of "GB", "GiB", rather than the nearest by edits, "B").
  std::vector<std::string> named;
  if (!lw.empty())
    for (const auto& c : candidates)
      if (lower(c).rfind(lw, 0) == 0 && lower(c) != lw && (lw.size() >= 3 || c.size() <= lw.size() + 2))
        named.push_back(c);
  // A word that ends some candidates after a separator ("pin_memory" of "offload_optimizer_pin_memory") names them
  // too: a DeepSpeed sub-key written without its section prefix, or a preset without its vendor prefix ("a6000" of
  // "rtx-a6000").
  if (named.empty() && lw.size() >= 3)
    for (const auto& c : candidates)
      if (const std::string l = lower(c);
          l.size() > lw.size() + 1 && l.compare(l.size() - lw.size(), lw.size(), lw) == 0 &&
          std::string_view("_.-").find(l[l.size() - lw.size() - 1]) != std::string_view::npos)
        named.push_back(c);
  if (!named.empty() && named.size() <= 3) {
    std::string out = "did you mean '" + named[0] + "'";
    for (std::size_t i = 1; i < named.size(); ++i)
      out += (i + 1 == named.size() ? " or '" : ", '") + named[i] + "'";
    return out + "?";
  }
  std::pair<std::size_t, std::size_t> best{std::numeric_limits<std::size_t>::max(), 0};
  std::string best_name;
  for (const auto& c : candidates) {
    const std::pair<std::size_t, std::size_t> d{edit_distance(lw, lower(c)), edit_distance(word, c)};
    if (d < best) { // first of equals wins: candidates come in table order, so the hint is deterministic
      best = d;
      best_name = c;
    }
  }
  const std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  if (best_name.empty() || best.second > limit)
    return {};
  return "did you mean '" + best_name + "'?";
}

} // namespace zerosim::scenario
