#include "apps/validation_expect.hpp"

#include "sim/error.hpp"
#include "sim/scenario/units.hpp"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

namespace zerosim::cli {

namespace {

/// Bytes per unit for the byte units a claim may use (GB = 1e9, GiB = 2^30: PREAMBLE "Units"); 0 = not a byte unit.
double byte_unit(const std::string& u) {
  if (u == "B")
    return 1.0;
  if (u == "KB")
    return 1e3;
  if (u == "MB")
    return 1e6;
  if (u == "GB")
    return 1e9;
  if (u == "KiB")
    return 1024.0;
  if (u == "MiB")
    return 1024.0 * 1024.0;
  if (u == "GiB")
    return 1024.0 * 1024.0 * 1024.0;
  return 0.0;
}

std::string trim(const std::string& s) {
  std::size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a])))
    ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1])))
    --b;
  return s.substr(a, b - a);
}

/// A parsed metric term.
struct Term {
  enum Kind { PATH, RATIO, SUM } kind = PATH;
  std::string variant; // PATH: explicit "v@" prefix, "" if none
  std::string path; // PATH: "summary.a.b"
  std::vector<Term> args;
};

/// Recursive-descent parser over `s` from `pos`; throws std::string on error.
struct MetricParser {
  const std::string& s;
  std::size_t pos = 0;

  void skip() {
    while (pos < s.size() && std::isspace(static_cast<unsigned char>(s[pos])))
      ++pos;
  }
  Term term() {
    skip();
    for (const char* fn : {"ratio(", "sum("}) {
      const std::string f(fn);
      if (s.compare(pos, f.size(), f) == 0) {
        pos += f.size();
        Term t;
        t.kind = f == "ratio(" ? Term::RATIO : Term::SUM;
        t.args.push_back(term());
        skip();
        while (pos < s.size() && s[pos] == ',') {
          ++pos;
          t.args.push_back(term());
          skip();
        }
        if (pos >= s.size() || s[pos] != ')')
          throw std::string("expected ')' at character ") + std::to_string(pos + 1);
        ++pos;
        if (t.kind == Term::RATIO && t.args.size() != 2)
          throw std::string("ratio() takes two terms, got ") + std::to_string(t.args.size());
        return t;
      }
    }
    const std::size_t start = pos;
    while (pos < s.size() && s[pos] != ',' && s[pos] != ')' && s[pos] != '(')
      ++pos;
    if (pos < s.size() && s[pos] == '(')
      throw std::string("unknown function '") + trim(s.substr(start, pos - start)) + "' (use ratio or sum)";
    std::string text = trim(s.substr(start, pos - start));
    Term t;
    const auto at = text.find('@');
    if (at != std::string::npos) {
      t.variant = trim(text.substr(0, at));
      text = trim(text.substr(at + 1));
      if (t.variant.empty())
        throw std::string("empty variant before '@' in '") + text + "'";
    }
    if (text.empty() || text.front() == '.' || text.back() == '.' || text.find("..") != std::string::npos ||
        text.find_first_of(" \t") != std::string::npos || text.find('.') == std::string::npos)
      throw std::string("expected a result.json path like 'summary.step_time_s', got '") + text + "'";
    t.path = text;
    return t;
  }
};

Term parse_metric(const std::string& metric) {
  MetricParser p{metric};
  Term t = p.term();
  p.skip();
  if (p.pos != metric.size())
    throw std::string("unexpected '") + metric.substr(p.pos) + "' after the metric";
  return t;
}

void collect_variants(const Term& t, const std::string& dflt, std::set<std::string>& out) {
  if (t.kind == Term::PATH)
    out.insert(t.variant.empty() ? dflt : t.variant);
  for (const auto& a : t.args)
    collect_variants(a, dflt, out);
}

double eval(const Term& t, const Expectation& e, const std::vector<std::pair<std::string, nlohmann::json>>& sums) {
  if (t.kind == Term::SUM) {
    double s = 0;
    for (const auto& a : t.args)
      s += eval(a, e, sums);
    return s;
  }
  if (t.kind == Term::RATIO) {
    const double num = eval(t.args[0], e, sums);
    const double den = eval(t.args[1], e, sums);
    if (den == 0.0)
      throw Error("metric '" + e.metric + "': the divisor of ratio() is 0");
    return num / den;
  }
  const std::string variant = t.variant.empty() ? e.variant : t.variant;
  const auto it = std::find_if(sums.begin(), sums.end(), [&](const auto& p) { return p.first == variant; });
  if (it == sums.end())
    throw Error("metric '" + e.metric + "': no run of variant '" + variant + "'");
  const nlohmann::json* node = &it->second;
  std::string rest = t.path;
  bool bytes = false;
  while (!rest.empty()) {
    const auto dot = rest.find('.');
    const std::string key = rest.substr(0, dot);
    rest = dot == std::string::npos ? std::string() : rest.substr(dot + 1);
    if (node->is_array()) {
      const bool digits = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || std::stoul(key) >= node->size())
        throw Error("metric '" + e.metric + "': no element '" + key + "' in the list (path " + t.path + ")");
      node = &(*node)[std::stoul(key)];
      continue;
    }
    if (!node->is_object() || !node->contains(key)) {
      std::vector<std::string> keys; // the keys at this level, for a "did you mean"
      if (node->is_object())
        for (const auto& [k, v] : node->items())
          keys.push_back(k);
      const std::string hint = scenario::did_you_mean(key, keys);
      throw Error("metric '" + e.metric + "': result.json has no key '" + key + "' (path " + t.path + ")" +
                  (hint.empty() ? "" : "; " + hint));
    }
    node = &(*node)[key];
    if (key.size() >= 6 && key.compare(key.size() - 6, 6, "_bytes") == 0)
      bytes = true;
  }
  double v = 0;
  if (node->is_boolean())
    v = node->get<bool>() ? 1.0 : 0.0;
  else if (node->is_number())
    v = node->get<double>();
  else if (node->is_null())
    throw Error("metric '" + e.metric + "': " + t.path +
                " is null: the run stopped at its OOM and has no step time (simulation.on_oom: continue times it)");
  else
    throw Error("metric '" + e.metric + "': " + t.path + " is not a number");
  const double unit = byte_unit(e.unit);
  if (bytes && unit > 0)
    v /= unit;
  return v;
}

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

std::string scalar(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar())
    throw ScenarioError(file, line_of(n), key, "expected a text value");
  return n.as<std::string>();
}

double number(const std::string& file, const YAML::Node& n, const std::string& key) {
  const std::string text = scalar(file, n, key);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v))
    throw ScenarioError(file, line_of(n), key, "expected a number, got '" + text + "'");
  return v;
}

} // namespace

std::string metric_syntax_error(const std::string& metric) {
  try {
    (void)parse_metric(metric);
    return {};
  } catch (const std::string& why) {
    return why;
  }
}

std::vector<std::string> metric_variants(const Expectation& e) {
  std::set<std::string> out;
  collect_variants(parse_metric(e.metric), e.variant, out);
  return {out.begin(), out.end()};
}

double evaluate_metric(const Expectation& e, const std::vector<std::pair<std::string, nlohmann::json>>& summaries) {
  Term t;
  try {
    t = parse_metric(e.metric);
  } catch (const std::string& why) {
    throw Error("metric '" + e.metric + "': " + why);
  }
  return eval(t, e, summaries);
}

std::vector<Expectation> parse_expectations(const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(file);
  } catch (const YAML::BadFile&) {
    throw ScenarioError(file, 0, "expect", "cannot read the file");
  } catch (const YAML::Exception& ex) {
    throw ScenarioError(file, ex.mark.line >= 0 ? ex.mark.line + 1 : 0, "expect", "YAML syntax: " + ex.msg);
  }
  if (!root.IsMap() || !root["expect"])
    throw ScenarioError(file, 0, "expect", "a validation scenario needs a top-level 'expect:' list of claims");
  const YAML::Node list = root["expect"];
  if (!list.IsSequence() || list.size() == 0)
    throw ScenarioError(file, line_of(list), "expect", "expected a non-empty list of {metric, value, source, ...}");
  static const std::set<std::string> kKeys = {"claim",     "metric", "variant", "value",    "unit",
                                              "tolerance", "source", "note",    "known_gap"};
  std::vector<Expectation> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const YAML::Node item = list[i];
    const std::string base = "expect[" + std::to_string(i) + "]";
    if (!item.IsMap())
      throw ScenarioError(file, line_of(item), base, "expected a map {metric, value, source, ...}");
    for (const auto& kv : item) {
      const std::string k = kv.first.as<std::string>();
      if (kKeys.count(k) == 0)
        throw ScenarioError(file, line_of(kv.first), base + "." + k, "unknown key",
                            "known: claim, metric, variant, value, unit, tolerance, source, note, known_gap");
    }
    Expectation e;
    e.line = line_of(item);
    for (const char* req : {"metric", "value", "source"})
      if (!item[req])
        throw ScenarioError(file, e.line, base + "." + req, "missing (every claim needs metric, value and source)");
    e.metric = scalar(file, item["metric"], base + ".metric");
    if (const std::string why = metric_syntax_error(e.metric); !why.empty())
      throw ScenarioError(file, line_of(item["metric"]), base + ".metric", why);
    e.value = number(file, item["value"], base + ".value");
    e.source = scalar(file, item["source"], base + ".source");
    if (trim(e.source).empty())
      throw ScenarioError(file, line_of(item["source"]), base + ".source", "empty: cite where the number comes from");
    if (item["claim"])
      e.claim = scalar(file, item["claim"], base + ".claim");
    if (item["variant"])
      e.variant = scalar(file, item["variant"], base + ".variant");
    if (item["unit"])
      e.unit = trim(scalar(file, item["unit"], base + ".unit"));
    if (item["note"])
      e.note = scalar(file, item["note"], base + ".note");
    if (item["known_gap"]) {
      e.known_gap = trim(scalar(file, item["known_gap"], base + ".known_gap"));
      if (e.known_gap.empty())
        throw ScenarioError(file, line_of(item["known_gap"]), base + ".known_gap", "empty: give the reason");
    }
    if (!item["tolerance"])
      throw ScenarioError(file, e.line, base + ".tolerance",
                          "missing (relative like 0.10 or '10%', absolute like '0.5 GiB' in the claim's unit)");
    const YAML::Node tol = item["tolerance"];
    const std::string tkey = base + ".tolerance";
    const std::string text = trim(scalar(file, tol, tkey));
    char* end = nullptr;
    const double t = std::strtod(text.c_str(), &end);
    const std::string suffix = end != nullptr ? trim(std::string(end)) : text;
    if (text.empty() || end == text.c_str() || !std::isfinite(t) || t < 0)
      throw ScenarioError(file, line_of(tol), tkey, "expected a tolerance >= 0, got '" + text + "'");
    if (suffix.empty()) {
      e.tolerance = t;
    } else if (suffix == "%") {
      e.tolerance = t / 100.0;
    } else if (!e.unit.empty() && suffix == e.unit) {
      e.tolerance = t;
      e.tolerance_absolute = true;
    } else {
      throw ScenarioError(file, line_of(tol), tkey,
                          "unit '" + suffix + "' does not match the claim's unit '" + e.unit + "'",
                          "write a relative tolerance (0.10, '10%') or an absolute one in the claim's unit");
    }
    out.push_back(std::move(e));
  }
  return out;
}

ClaimResult compare_claim(const Expectation& e, double simulated) {
  ClaimResult r;
  r.reference = e.value;
  r.simulated = simulated;
  const double diff = simulated - e.value;
  if (e.value != 0.0)
    r.delta_pct = diff / std::fabs(e.value) * 100.0;
  else
    r.delta_pct = diff == 0.0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), diff);
  const double allowed = e.tolerance_absolute ? e.tolerance : e.tolerance * std::fabs(e.value);
  r.within = std::fabs(diff) <= allowed;
  r.status = r.within ? ClaimStatus::PASS : (e.known_gap.empty() ? ClaimStatus::FAIL : ClaimStatus::KNOWN_GAP);
  return r;
}

const char* to_string(ClaimStatus s) {
  switch (s) {
  case ClaimStatus::PASS:
    return "pass";
  case ClaimStatus::FAIL:
    return "FAIL";
  case ClaimStatus::KNOWN_GAP:
    return "gap";
  }
  return "?";
}

} // namespace zerosim::cli
