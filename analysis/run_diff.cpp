// `zerosim diff`: comparison of two result.json texts (analysis/run_diff.hpp).
#include "analysis/run_diff.hpp"

#include "analysis/json_numbers.hpp"

#include "sim/error.hpp"
#include "sim/quantity.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace zerosim::analysis {

namespace {

using nlohmann::json;

json parse(const std::string& text, const std::string& what) {
  try {
    json j = json::parse(text);
    if (!j.is_object())
      throw Error(what + ": malformed JSON: not an object");
    return j;
  } catch (const json::exception& e) {
    throw Error(what + ": malformed JSON: " + e.what());
  }
}

/// A value as the diff prints it. Floats get 12 significant digits: a latency computed as 2 x 1.7 us is stored as
/// 3.3999999999999996e-06 (its shortest round-trip form), printed 3.4e-06; byte counts up to 10^12 stay exact.
std::string value_text(const json& v) {
  if (v.is_string())
    return v.get<std::string>();
  // A whole float (a file written before counts and byte totals were written as integers: 4755.0) prints as the
  // integer a newer file holds, so that the two do not differ by form.
  if (v.is_number_float()) {
    if (const auto w = whole_value(v.get<double>()))
      return fmt::format("{}", *w);
    return fmt::format("{:.12g}", v.get<double>());
  }
  return v.dump();
}

void flatten(const json& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object() && !j.empty()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    return;
  }
  out[prefix] = value_text(j);
}

const json& scenario_of(const json& r, const std::string& what) {
  const auto it = r.find("scenario");
  if (it == r.end() || !it->is_object())
    throw Error(what + ": malformed JSON: no \"scenario\" object (not a result.json?)");
  return *it;
}

double number(const json& s, const char* key, const std::string& what) {
  const auto it = s.find(key);
  if (it == s.end() || !it->is_number())
    throw Error(what + ": malformed JSON: summary." + key + " missing or not a number");
  return it->get<double>();
}

/// number(), or 0 for null: a rate of a run without a step time (result.json writes null; step_kind says n/a).
double rate(const json& s, const char* key, const std::string& what) {
  const auto it = s.find(key);
  return it != s.end() && it->is_null() ? 0.0 : number(s, key, what);
}

bool boolean(const json& s, const char* key, const std::string& what) {
  const auto it = s.find(key);
  if (it == s.end() || !it->is_boolean())
    throw Error(what + ": malformed JSON: summary." + key + " missing or not a boolean");
  return it->get<bool>();
}

/// summary.`key` in bytes, unset when the file lacks it (written before it was recorded, or a hand-made file).
std::optional<double> optional_number(const json& s, const char* key, const std::string& what) {
  if (!s.contains(key))
    return std::nullopt;
  return number(s, key, what);
}

/// A result.json without summary.steps_completed (written before it existed) counts as steady. A run stopped at its
/// OOM (oom and not finished) has none, whatever steps completed before it (analysis::has_step_time).
StepTimeKind step_kind(const json& s, const std::string& what) {
  if (!s.contains("steps_completed"))
    return StepTimeKind::STEADY;
  if (number(s, "steps_completed", what) < 1)
    return StepTimeKind::NONE;
  if (const auto oom = s.find("oom");
      oom != s.end() && oom->is_boolean() && oom->get<bool>() && !boolean(s, "finished", what))
    return StepTimeKind::NONE;
  return boolean(s, "steady_state", what) ? StepTimeKind::STEADY : StepTimeKind::WARMUP_ONLY;
}

const json& summary_of(const json& r, const std::string& what) {
  const auto it = r.find("summary");
  if (it == r.end() || !it->is_object())
    throw Error(what + ": malformed JSON: no \"summary\" object (not a result.json?)");
  return *it;
}

std::map<std::string, double> tags_of(const json& s, const std::string& what) {
  const auto it = s.find("peak_by_tag_bytes");
  if (it == s.end() || !it->is_object())
    throw Error(what + ": malformed JSON: summary.peak_by_tag_bytes missing or not an object");
  std::map<std::string, double> m;
  for (auto t = it->begin(); t != it->end(); ++t) {
    if (!t.value().is_number())
      throw Error(what + ": malformed JSON: summary.peak_by_tag_bytes." + t.key() + " is not a number");
    m[t.key()] = t.value().get<double>();
  }
  return m;
}

/// The step-time breakdown rows of `zerosim diff`: result.json summary.breakdown key and the row's name, in the
/// console report's order (analysis/console.cpp "step breakdown"). compute_busy_s, the sum of the first four, is left
/// out. The PCIe / NVMe split of exposed offload is shown when either run waited on NVMe swaps.
constexpr std::array<std::pair<const char*, const char*>, 12> kBreakdownRows{{
    {"forward_s", "forward"},
    {"backward_s", "backward"},
    {"optimizer_s", "optimizer"},
    {"other_compute_s", "other compute"},
    {"exposed_comm_s", "exposed comm"},
    {"exposed_offload_s", "exposed offload"},
    {"exposed_offload_pcie_s", "  of it PCIe copies"},
    {"exposed_offload_nvme_s", "  of it NVMe swaps"},
    {"exposed_cpu_s", "exposed CPU optim."},
    {"exposed_host_s", "exposed host"},
    {"idle_other_s", "idle other"},
    {"comm_busy_s", "comm in flight"},
}};

/// summary.breakdown.`key`, unset when the file has no breakdown or not that field (written before it existed).
std::optional<double> breakdown_field(const json& s, const char* key, const std::string& what) {
  const auto b = s.find("breakdown");
  if (b == s.end())
    return std::nullopt;
  if (!b->is_object())
    throw Error(what + ": malformed JSON: summary.breakdown is not an object");
  const auto it = b->find(key);
  if (it == b->end())
    return std::nullopt;
  if (!it->is_number())
    throw Error(what + ": malformed JSON: summary.breakdown." + key + " is not a number");
  return it->get<double>();
}

std::string label_of(const json& r) {
  const auto it = r.find("variant");
  return it != r.end() && it->is_string() ? it->get<std::string>() : std::string();
}

/// The relative change in the 8-character "delta %" column: one decimal below 1000 %, none from there (+3507%), and
/// a change that rounds to zero is "+0.0%", never "-0.0%".
std::string pct(double a, double b) {
  if (a == 0.0)
    return b == 0.0 ? "+0.0%" : "n/a";
  const double p = 100.0 * (b - a) / std::fabs(a);
  if (std::fabs(p) < 0.05)
    return "+0.0%";
  return std::fabs(p) < 999.95 ? fmt::format("{:+.1f}%", p) : fmt::format("{:+.0f}%", p);
}

std::string row(const char* what, double a, double b, double scale, const char* unit, int digits) {
  const double x = a / scale;
  const double y = b / scale;
  // A difference that rounds to zero at `digits` prints as +0, not -0.
  const double resolution = 0.5 * std::pow(10.0, -digits);
  const double d = std::fabs(y - x) < resolution ? 0.0 : y - x;
  // Both sides print as zero (one may be rounding noise, 1.8e-15 s): no relative change to show.
  const bool both_zero = std::fabs(x) < resolution && std::fabs(y) < resolution;
  return fmt::format("  {:<20} {:>12.{}f} {:>12.{}f} {:>+12.{}f} {:>8}  {}\n", what, x, digits, y, digits, d, digits,
                     both_zero ? std::string("+0.0%") : pct(a, b), unit);
}

/// A free-text reference field: `source` or `X.source` (which paper, datasheet or measurement a preset's numbers
/// come from); it changes with every preset and says nothing about what was simulated.
bool is_source_key(const std::string& k) {
  return k == "source" || (k.size() > 7 && k.compare(k.size() - 7, 7, ".source") == 0);
}

/// Adds `node` under dotted `key` to `out`: a map's entries recursively, anything else as its YAML flow text.
void flatten_label_value(const std::string& key, const YAML::Node& node, std::vector<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      flatten_label_value(key + "." + kv.first.as<std::string>(), kv.second, out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out.push_back(key + "=" + e.c_str());
}

} // namespace

std::string canonical_label(const std::string& label) {
  // Split at spaces outside braces and brackets: "a=1 b={c: 2, d: 3}" -> "a=1", "b={c: 2, d: 3}".
  std::vector<std::string> parts;
  std::string cur;
  int depth = 0;
  for (char ch : label) {
    depth += (ch == '{' || ch == '[') ? 1 : (ch == '}' || ch == ']') ? -1 : 0;
    if (ch == ' ' && depth == 0) {
      if (!cur.empty())
        parts.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty())
    parts.push_back(cur);
  std::vector<std::string> flat;
  try {
    for (const std::string& p : parts) {
      const auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0)
        return label;
      const std::string key = p.substr(0, eq);
      const std::string value = p.substr(eq + 1);
      if (!value.empty() && value.front() == '{')
        flatten_label_value(key, YAML::Load(value), flat);
      else
        flat.push_back(p);
    }
  } catch (const YAML::Exception&) {
    return label;
  }
  std::sort(flat.begin(), flat.end());
  std::string out;
  for (const std::string& f : flat)
    out += (out.empty() ? "" : " ") + f;
  return out;
}

std::vector<KeyChange> diff_scenarios(const std::string& result_a, const std::string& result_b,
                                      const std::string& what_a, const std::string& what_b) {
  const json ja = parse(result_a, what_a);
  const json jb = parse(result_b, what_b);
  std::map<std::string, std::string> fa, fb;
  flatten(scenario_of(ja, what_a), "", fa);
  flatten(scenario_of(jb, what_b), "", fb);
  std::set<std::string> keys;
  for (const auto& [k, v] : fa)
    keys.insert(k);
  for (const auto& [k, v] : fb)
    keys.insert(k);
  std::vector<KeyChange> out;
  for (const auto& k : keys) {
    const auto ia = fa.find(k);
    const auto ib = fb.find(k);
    const std::string va = ia == fa.end() ? "(absent)" : ia->second;
    const std::string vb = ib == fb.end() ? "(absent)" : ib->second;
    // outputs.* chooses which files a run writes, not what it simulates (`zerosim diff` turns the trace and memory
    // CSV off when it simulates a scenario file): never a difference between two runs. Nor is a *_explicit flag
    // (zero.overlap_comm_explicit: whether the scenario wrote the key), which no scenario key sets: the effective
    // value beside it is the difference. Nor are compare_key / compare_values: they name the comparison a variant
    // came from (a single run has none), while the variant's own settings are in the other keys.
    const bool bookkeeping = k.rfind("outputs.", 0) == 0 ||
                             (k.size() > 9 && k.compare(k.size() - 9, 9, "_explicit") == 0) || k == "compare_key" ||
                             k == "compare_values" || k.rfind("compare_values.", 0) == 0;
    if (va != vb && !bookkeeping) {
      // result.json records the GPU and CPU beside the cluster; a scenario writes them as cluster.gpu.X / cluster.cpu.X.
      const bool nested = k.rfind("gpu.", 0) == 0 || k.rfind("cpu.", 0) == 0;
      KeyChange c{nested ? "cluster." + k : k, va, vb};
      // Sizes, rates and times are recorded in B, B/s, FLOP/s and s under a unit suffix (cluster.host_memory_bytes,
      // cluster.nic.latency_s); the key a scenario sets has none (cluster.host_memory: 128GiB): named and shown that
      // way, so that the name can go to --set as printed.
      const auto unit = [&c](std::string_view suffix, double scale, const char* name) {
        if (c.key.size() <= suffix.size() || c.key.compare(c.key.size() - suffix.size(), suffix.size(), suffix) != 0)
          return false;
        const std::string bare = c.key.substr(0, c.key.size() - suffix.size());
        if (!scenario::is_settable_key(bare))
          return false;
        c.key = bare;
        for (std::string* v : {&c.a, &c.b}) {
          char* end = nullptr;
          const double x = std::strtod(v->c_str(), &end);
          if (end != v->c_str() && *end == '\0')
            *v = fmt::format("{:.6g}{}", x / scale, name);
        }
        return true;
      };
      (void)(unit("_bytes_per_s", 1e9, "GBps") || unit("_bytes", kGiB, "GiB") || unit("_flops_per_s", 1e12, "TFLOPS") ||
             unit("_s", 1.0, "s"));
      // cluster.host_memory: 0 is "unlimited" (the desktop presets), not a host without memory.
      if (c.key == "cluster.host_memory")
        for (std::string* v : {&c.a, &c.b})
          if (*v == "0GiB")
            *v = "unlimited";
      // gpu.memory_gib restates gpu.memory_bytes; the rest that no scenario sets (cluster.world_size = nodes x
      // gpus_per_node, a preset's name) follow from the keys that do and are marked so.
      if (c.key == "cluster.gpu.memory_gib")
        continue;
      c.derived = c.key != "file" && !scenario::is_settable_key(c.key);
      // A default that follows another key: overlap_comm follows zero.stage, the two dtypes training.precision
      // (result.json's KEY_explicit says whether the scenario set the key; files without the flag are taken as set).
      static const std::map<std::string, std::string> kDefaultFrom =
          {{"zero.overlap_comm", "zero.stage"},
           {"zero.grad_accum_dtype", "training.precision and zero.deepspeed_version"},
           {"zero.communication_data_type", "training.precision and zero.deepspeed_version"}};
      if (const auto from = kDefaultFrom.find(c.key); from != kDefaultFrom.end()) {
        const auto set_in = [&](const std::map<std::string, std::string>& f) {
          const auto it = f.find(c.key + "_explicit");
          return it == f.end() || it->second != "false";
        };
        if (!set_in(fa) && !set_in(fb))
          c.default_from = from->second;
      }
      out.push_back(c);
    }
  }
  // In key order as the user writes them (cluster.gpu.* with the other cluster keys), the free-text `source`
  // fields last (is_source_key).
  std::stable_sort(out.begin(), out.end(), [&](const KeyChange& a, const KeyChange& b) {
    const bool sa = is_source_key(a.key), sb = is_source_key(b.key);
    return sa != sb ? sb : a.key < b.key;
  });
  return out;
}

bool same_settings(const std::string& result_a, const std::string& result_b, const std::string& what_a,
                   const std::string& what_b) {
  const auto changes = diff_scenarios(result_a, result_b, what_a, what_b);
  return std::all_of(changes.begin(), changes.end(), [](const KeyChange& c) {
    const std::string& k = c.key;
    // The labels carry a preset's changes as they were written (scenario_loader.cpp changed_keys); the changed
    // keys themselves are compared on their own.
    const bool label = k == "model.name" || k == "cluster.gpu.name" || k == "cluster.cpu.name" || k == "cluster.name" ||
                       k == "cluster.nvme.name";
    return k == "name" || k == "description" || k == "file" || label || is_source_key(k);
  });
}

VariantDiff diff_results(const std::string& result_a, const std::string& result_b, const std::string& what_a,
                         const std::string& what_b) {
  const json ja = parse(result_a, what_a);
  const json jb = parse(result_b, what_b);
  VariantDiff d;
  d.changes = diff_scenarios(result_a, result_b, what_a, what_b);
  d.label_a = label_of(ja);
  d.label_b = label_of(jb);
  const json& sa = summary_of(ja, what_a);
  const json& sb = summary_of(jb, what_b);
  d.step_time_a_s = rate(sa, "step_time_s", what_a);
  d.step_time_b_s = rate(sb, "step_time_s", what_b);
  d.step_kind_a = step_kind(sa, what_a);
  d.step_kind_b = step_kind(sb, what_b);
  d.tokens_per_s_a = rate(sa, "tokens_per_s", what_a);
  d.tokens_per_s_b = rate(sb, "tokens_per_s", what_b);
  d.mfu_a = rate(sa, "mfu", what_a);
  d.mfu_b = rate(sb, "mfu", what_b);
  d.peak_allocated_a_bytes = number(sa, "peak_allocated_bytes", what_a);
  d.peak_allocated_b_bytes = number(sb, "peak_allocated_bytes", what_b);
  d.peak_reserved_a_bytes = number(sa, "peak_reserved_bytes", what_a);
  d.peak_reserved_b_bytes = number(sb, "peak_reserved_bytes", what_b);
  d.nvidia_smi_a_bytes = number(sa, "nvidia_smi_bytes", what_a);
  d.nvidia_smi_b_bytes = number(sb, "nvidia_smi_bytes", what_b);
  d.fits_a = boolean(sa, "fits", what_a);
  d.fits_b = boolean(sb, "fits", what_b);
  d.marginal_a = sa.contains("marginal") && boolean(sa, "marginal", what_a);
  d.marginal_b = sb.contains("marginal") && boolean(sb, "marginal", what_b);
  const auto reason = [](const json& sj) {
    const auto it = sj.find("marginal_reason");
    return it != sj.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  d.marginal_reason_a = reason(sa);
  d.marginal_reason_b = reason(sb);
  d.alloc_retries_a = sa.contains("alloc_retries") ? number(sa, "alloc_retries", what_a) : 0.0;
  d.alloc_retries_b = sb.contains("alloc_retries") ? number(sb, "alloc_retries", what_b) : 0.0;
  d.host_peak_a_bytes = optional_number(sa, "host_peak_memory_bytes", what_a);
  d.host_peak_b_bytes = optional_number(sb, "host_peak_memory_bytes", what_b);
  d.host_node_peak_a_bytes = optional_number(sa, "host_node_peak_memory_bytes", what_a);
  d.host_node_peak_b_bytes = optional_number(sb, "host_node_peak_memory_bytes", what_b);
  d.host_pinned_a_bytes = optional_number(sa, "host_pinned_at_peak_bytes", what_a);
  d.host_pinned_b_bytes = optional_number(sb, "host_pinned_at_peak_bytes", what_b);
  const auto ta = tags_of(sa, what_a);
  const auto tb = tags_of(sb, what_b);
  std::set<std::string> tags;
  for (const auto& [k, v] : ta)
    tags.insert(k);
  for (const auto& [k, v] : tb)
    tags.insert(k);
  for (const auto& t : tags) {
    const auto ia = ta.find(t);
    const auto ib = tb.find(t);
    const TagDelta td{t, ia == ta.end() ? 0.0 : ia->second, ib == tb.end() ? 0.0 : ib->second};
    if (td.b_bytes != td.a_bytes)
      d.top_tags.push_back(td);
  }
  std::stable_sort(d.top_tags.begin(), d.top_tags.end(), [](const TagDelta& x, const TagDelta& y) {
    return std::fabs(x.b_bytes - x.a_bytes) > std::fabs(y.b_bytes - y.a_bytes);
  });
  if (d.top_tags.size() > 5)
    d.top_tags.resize(5);
  if (sa.contains("breakdown") || sb.contains("breakdown")) {
    const auto nvme_a = breakdown_field(sa, "exposed_offload_nvme_s", what_a);
    const auto nvme_b = breakdown_field(sb, "exposed_offload_nvme_s", what_b);
    const bool split = nvme_a.value_or(0.0) > 0 || nvme_b.value_or(0.0) > 0;
    for (const auto& [key, name] : kBreakdownRows)
      if (split || (std::string(key) != "exposed_offload_pcie_s" && std::string(key) != "exposed_offload_nvme_s"))
        d.breakdown.push_back({name, breakdown_field(sa, key, what_a), breakdown_field(sb, key, what_b)});
  }
  return d;
}

std::string format_run_diff(const RunDiff& d, const std::string& name_a, const std::string& name_b) {
  std::string s = fmt::format("A: {}\nB: {}\n", name_a, name_b);
  for (const auto& n : d.notes)
    s += n + "\n";
  for (const auto& v : d.variants) {
    // A single run (no label) against a comparison's variant reads "(single run) vs cluster.gpus_per_node=2".
    const auto shown = [](const std::string& l) { return l.empty() ? std::string("(single run)") : l; };
    std::string head = v.label_a == v.label_b ? v.label_a : shown(v.label_a) + " vs " + shown(v.label_b);
    s += fmt::format("\n== variant {}\n", head.empty() ? std::string("(single run)") : head);
    if (v.changes.empty())
      s += "scenario keys that differ: none\n";
    else {
      s += "scenario keys that differ:\n";
      // Reference texts are named, not quoted: a preset's source is a paragraph of citations, and 30 lines of
      // them hid the numbers below.
      std::string sources;
      for (const auto& c : v.changes)
        if (is_source_key(c.key))
          sources += (sources.empty() ? "" : ", ") + c.key;
        else
          s += fmt::format("  {}: {} -> {}{}\n", c.key, c.a, c.b,
                           c.derived                 ? "  (derived, not a scenario key)"
                           : !c.default_from.empty() ? "  (the default for " + c.default_from + ", set by neither)"
                                                     : std::string());
      if (!sources.empty())
        s += "  references differ (their texts are in each run's result.json): " + sources + "\n";
    }
    s += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>8}  {}\n", "", "A", "B", "delta", "delta %", "unit");
    // Step time, tokens/s and MFU come from the steps that completed: with no step they mean nothing (n/a); from
    // the warm-up step only they are marked '*'; either way no delta against a steady-state figure.
    const bool steady = v.step_kind_a == StepTimeKind::STEADY && v.step_kind_b == StepTimeKind::STEADY;
    const auto timed = [&](const char* what, double a, double b, double scale, const char* unit, int digits) {
      if (steady)
        return row(what, a, b, scale, unit, digits);
      const auto cell = [&](StepTimeKind k, double x) {
        return k == StepTimeKind::NONE
                   ? std::string("n/a")
                   : fmt::format("{:.{}f}{}", x / scale, digits, k == StepTimeKind::WARMUP_ONLY ? "*" : "");
      };
      return fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>8}  {}\n", what, cell(v.step_kind_a, a),
                         cell(v.step_kind_b, b), "-", "-", unit);
    };
    s += timed("step time", v.step_time_a_s, v.step_time_b_s, 1.0, "s", 4);
    s += timed("tokens/s", v.tokens_per_s_a, v.tokens_per_s_b, 1.0, "tokens/s", 1);
    s += timed("MFU", v.mfu_a, v.mfu_b, 0.01, "% (delta in percentage points)", 2);
    // The step time's parts (seconds per step, rank 0), so the phase that moved shows; as the step time, from the
    // completed steps, and n/a on a side whose file lacks the breakdown (written before it was recorded).
    if (!v.breakdown.empty()) {
      s += "  step breakdown (s per step, rank 0; exposed = the compute stream waited on it):\n";
      for (const PhaseDelta& p : v.breakdown) {
        const std::string what = "  " + p.name;
        if (steady && p.a_s && p.b_s) {
          s += row(what.c_str(), *p.a_s, *p.b_s, 1.0, "s", 4);
          continue;
        }
        const auto cell = [](StepTimeKind k, const std::optional<double>& x) {
          if (!x || k == StepTimeKind::NONE)
            return std::string("n/a");
          return fmt::format("{:.4f}{}", *x, k == StepTimeKind::WARMUP_ONLY ? "*" : "");
        };
        s += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>8}  s\n", what, cell(v.step_kind_a, p.a_s),
                         cell(v.step_kind_b, p.b_s), "-", "-");
      }
    }
    if (!steady)
      s += "  (n/a: no step completed; *: warm-up step 0 only, no steady-state step completed; no delta)\n";
    s += row("peak allocated", v.peak_allocated_a_bytes, v.peak_allocated_b_bytes, kGiB, "GiB", 3);
    s += row("peak reserved", v.peak_reserved_a_bytes, v.peak_reserved_b_bytes, kGiB, "GiB", 3);
    s += row("nvidia-smi", v.nvidia_smi_a_bytes, v.nvidia_smi_b_bytes, kGiB, "GiB", 3);
    // Host memory, when either run used some (offload): GiB rows like the GPU's; a figure one file lacks is n/a,
    // with no delta.
    const auto used = [](const std::optional<double>& x) { return x.has_value() && *x > 0; };
    if (used(v.host_peak_a_bytes) || used(v.host_peak_b_bytes) || used(v.host_node_peak_a_bytes) ||
        used(v.host_node_peak_b_bytes)) {
      const auto host_row = [&s](const char* what, const std::optional<double>& a, const std::optional<double>& b) {
        if (a && b) {
          s += row(what, *a, *b, kGiB, "GiB", 3);
          return;
        }
        const auto cell = [](const std::optional<double>& x) {
          return x ? fmt::format("{:.3f}", *x / kGiB) : std::string("n/a");
        };
        s += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>8}  GiB\n", what, cell(a), cell(b), "-", "-");
      };
      host_row("host peak per rank", v.host_peak_a_bytes, v.host_peak_b_bytes);
      host_row("host peak per node", v.host_node_peak_a_bytes, v.host_node_peak_b_bytes);
      if (v.host_pinned_a_bytes || v.host_pinned_b_bytes)
        host_row("host pinned at peak", v.host_pinned_a_bytes, v.host_pinned_b_bytes);
    }
    // "yes, marginal" as the console says it (newuser31 F14), the reasons under the row.
    const auto fit_cell = [](bool fits, bool marginal) { return !fits ? "no" : marginal ? "yes, marginal" : "yes"; };
    s += fmt::format("  {:<20} {:>12} {:>12}\n", "fits", fit_cell(v.fits_a, v.marginal_a),
                     fit_cell(v.fits_b, v.marginal_b));
    if (v.fits_a && v.marginal_a && !v.marginal_reason_a.empty())
      s += fmt::format("  {:<20} A: {}\n", "", v.marginal_reason_a);
    if (v.fits_b && v.marginal_b && !v.marginal_reason_b.empty())
      s += fmt::format("  {:<20} B: {}\n", "", v.marginal_reason_b);
    if (v.alloc_retries_a > 0 || v.alloc_retries_b > 0)
      s += fmt::format("  {:<20} {:>12.0f} {:>12.0f} {:>+12.0f} {:>8}  (worst rank; PyTorch num_alloc_retries)\n",
                       "cudaMalloc retries", v.alloc_retries_a, v.alloc_retries_b,
                       v.alloc_retries_b - v.alloc_retries_a, "");
    if (v.top_tags.empty())
      s += "tags at the peak that moved: none\n";
    else {
      s += "tags at the peak that moved most (GiB):\n";
      for (const auto& t : v.top_tags)
        s += fmt::format("  {:<20} {:>12.3f} {:>12.3f} {:>+12.3f} GiB\n", t.tag, t.a_bytes / kGiB, t.b_bytes / kGiB,
                         (t.b_bytes - t.a_bytes) / kGiB);
    }
  }
  for (const auto& l : d.only_a)
    s += fmt::format("\nonly in A: variant {}\n", l.empty() ? std::string("(unlabelled)") : l);
  for (const auto& l : d.only_b)
    s += fmt::format("\nonly in B: variant {}\n", l.empty() ? std::string("(unlabelled)") : l);
  return s;
}

namespace {

/// A sweep row's inputs as a set: (key, value) pairs sorted, so "a=1 b=2" and "b=2 a=1" are the same point.
std::vector<std::pair<std::string, std::string>> point_inputs(const SweepRow& r) {
  auto in = r.inputs;
  std::sort(in.begin(), in.end());
  return in;
}

std::string point_label(const SweepRow& r) {
  std::string out;
  for (const auto& [k, v] : r.inputs)
    out += (out.empty() ? "" : " ") + k + "=" + v;
  return out.empty() ? std::string("(base scenario)") : out;
}

/// --set overrides "key=value" -> key -> value; a key given twice keeps its last value (as the loader applies them).
std::map<std::string, std::string> set_map(const std::vector<std::string>& sets) {
  std::map<std::string, std::string> m;
  for (const std::string& s : sets) {
    const auto eq = s.find('=');
    m[s.substr(0, eq)] = eq == std::string::npos ? std::string() : s.substr(eq + 1);
  }
  return m;
}

/// What a sweep diff line shows of one side: step time (s) and tokens/s when the row has step figures, '*' when
/// they come from the warm-up step only; memory (B) when the point was simulated.
struct SweepSide {
  bool step = false;
  bool warmup = false;
  bool memory = false;
};

SweepSide sweep_side(const SweepRow& r) {
  // has_step_figures is true for an error or invalid row ("has none anyway"): only a simulated row has figures.
  SweepSide s;
  s.step = r.ok && has_step_figures(r);
  s.warmup = s.step && !r.steady_state;
  s.memory = r.ok;
  return s;
}

} // namespace

SweepDiff diff_sweeps(const SweepTable& a, const SweepTable& b) {
  SweepDiff d;
  d.scenario_a = a.scenario;
  d.scenario_b = b.scenario;
  d.fingerprint_a = a.fingerprint;
  d.fingerprint_b = b.fingerprint;
  d.version_a = a.zerosim_version;
  d.version_b = b.zerosim_version;
  d.rows_a = a.rows.size();
  d.rows_b = b.rows.size();
  d.shard_a = a.shard;
  d.shard_b = b.shard;
  const auto sa = set_map(a.sets);
  const auto sb = set_map(b.sets);
  std::set<std::string> keys;
  for (const auto& [k, v] : sa)
    keys.insert(k);
  for (const auto& [k, v] : sb)
    keys.insert(k);
  for (const std::string& k : keys) {
    const auto ia = sa.find(k);
    const auto ib = sb.find(k);
    const std::string va = ia == sa.end() ? "(absent)" : ia->second;
    const std::string vb = ib == sb.end() ? "(absent)" : ib->second;
    if (ia == sa.end() || ib == sb.end() || va != vb)
      d.set_changes.push_back(KeyChange{k, va, vb});
  }
  // B's rows by input set, each list in B's row order: a point listed twice pairs in order.
  std::map<std::vector<std::pair<std::string, std::string>>, std::vector<std::size_t>> by_inputs;
  for (std::size_t i = 0; i < b.rows.size(); ++i)
    by_inputs[point_inputs(b.rows[i])].push_back(i);
  std::map<std::vector<std::pair<std::string, std::string>>, std::size_t> used; // pairs taken per input set
  std::vector<bool> b_paired(b.rows.size(), false);
  for (const SweepRow& r : a.rows) {
    const auto in = point_inputs(r);
    const auto it = by_inputs.find(in);
    std::size_t& n = used[in];
    if (it == by_inputs.end() || n >= it->second.size()) {
      d.only_a.push_back(point_label(r));
      continue;
    }
    const std::size_t j = it->second[n++];
    b_paired[j] = true;
    d.points.push_back(SweepPointDiff{point_label(r), r, b.rows[j]});
  }
  for (std::size_t j = 0; j < b.rows.size(); ++j)
    if (!b_paired[j])
      d.only_b.push_back(point_label(b.rows[j]));
  return d;
}

std::string format_sweep_diff(const SweepDiff& d, const std::string& name_a, const std::string& name_b) {
  const auto side = [](const std::string& name, const std::string& scenario, std::size_t rows, const Shard& shard) {
    return fmt::format("{} (sweep of '{}', {}{} point{})\n", name, scenario,
                       shard.count > 1 ? fmt::format("shard {}/{}, ", shard.index, shard.count) : std::string(), rows,
                       rows == 1 ? "" : "s");
  };
  std::string s = "A: " + side(name_a, d.scenario_a, d.rows_a, d.shard_a);
  s += "B: " + side(name_b, d.scenario_b, d.rows_b, d.shard_b);
  if (d.set_changes.empty())
    s += "--set overrides that differ: none\n";
  else {
    s += "--set overrides that differ:\n";
    for (const KeyChange& c : d.set_changes)
      s += fmt::format("  {}: {} -> {}\n", c.key, c.a, c.b);
  }
  s += d.scenario_a == d.scenario_b ? fmt::format("scenario name: the same ({})\n", d.scenario_a)
                                    : fmt::format("scenario name: {} -> {}\n", d.scenario_a, d.scenario_b);
  // The fingerprint hashes the scenario file and the axis values (not the --sets): an edited scenario shows here
  // even when every point pairs.
  if (!d.fingerprint_a.empty() && !d.fingerprint_b.empty() && d.fingerprint_a != d.fingerprint_b)
    s += fmt::format("scenario file or axis values: differ (sweep fingerprint {} -> {})\n", d.fingerprint_a,
                     d.fingerprint_b);
  if (!d.version_a.empty() && !d.version_b.empty() && d.version_a != d.version_b)
    s += fmt::format("zerosim version: {} -> {}\n", d.version_a, d.version_b);

  // One row of cells per paired point. "A -> B" columns keep their A and B parts aligned on their own.
  struct Line {
    std::string label, status, step_a, step_b, step_delta, tokens_delta, alloc_a, alloc_b, smi_a, smi_b;
  };
  bool any_na = false;
  bool any_warmup = false;
  bool any_marginal = false;
  std::vector<Line> lines;
  for (const SweepPointDiff& p : d.points) {
    const SweepSide a = sweep_side(p.a);
    const SweepSide b = sweep_side(p.b);
    Line l;
    l.label = p.label;
    // A marginal fit is "fits~" (as plan and largest mark it), its reasons in sweep.csv's marginal_reason.
    const auto status = [](const SweepRow& r) {
      return row_status(r) + (r.ok && r.fits && !r.marginal_reason.empty() ? "~" : "");
    };
    l.status = status(p.a) + "/" + status(p.b);
    any_marginal = any_marginal || l.status.find('~') != std::string::npos;
    const auto step = [](const SweepSide& x, double v) {
      return x.step ? fmt::format("{:.4f}{}", v, x.warmup ? "*" : "") : std::string("n/a");
    };
    l.step_a = step(a, p.a.step_time_s);
    l.step_b = step(b, p.b.step_time_s);
    // A delta only between two steady-state figures: none against n/a, nor between warm-up and steady state.
    const bool comparable = a.step && b.step && !a.warmup && !b.warmup;
    const std::string no_delta = a.step && b.step ? "-" : "n/a";
    l.step_delta = comparable ? pct(p.a.step_time_s, p.b.step_time_s) : no_delta;
    l.tokens_delta = comparable ? pct(p.a.tokens_per_s, p.b.tokens_per_s) : no_delta;
    const auto gib = [](const SweepSide& x, double bytes) {
      return x.memory ? fmt::format("{:.3f}", bytes / kGiB) : std::string("n/a");
    };
    l.alloc_a = gib(a, p.a.peak_allocated_bytes);
    l.alloc_b = gib(b, p.b.peak_allocated_bytes);
    l.smi_a = gib(a, p.a.nvidia_smi_bytes);
    l.smi_b = gib(b, p.b.nvidia_smi_bytes);
    any_na = any_na || !a.step || !b.step || !a.memory || !b.memory;
    any_warmup = any_warmup || a.warmup || b.warmup;
    lines.push_back(std::move(l));
  }
  if (!lines.empty()) {
    const char* h_label = "point";
    const char* h_status = "status";
    const char* h_step = "step time (s)";
    const char* h_step_delta = "delta %";
    const char* h_tokens = "tokens/s %";
    const char* h_alloc = "peak allocated (GiB)";
    const char* h_smi = "nvidia-smi (GiB)";
    const auto width = [&lines](std::string Line::*f, const char* header) {
      std::size_t w = header == nullptr ? 0 : std::string(header).size();
      for (const Line& l : lines)
        w = std::max(w, (l.*f).size());
      return w;
    };
    const std::size_t w_label = width(&Line::label, h_label);
    const std::size_t w_status = width(&Line::status, h_status);
    const std::size_t w_step_a = width(&Line::step_a, nullptr), w_step_b = width(&Line::step_b, nullptr);
    const std::size_t w_step_delta = width(&Line::step_delta, h_step_delta);
    const std::size_t w_tokens = width(&Line::tokens_delta, h_tokens);
    const std::size_t w_alloc_a = width(&Line::alloc_a, nullptr), w_alloc_b = width(&Line::alloc_b, nullptr);
    const std::size_t w_smi_a = width(&Line::smi_a, nullptr), w_smi_b = width(&Line::smi_b, nullptr);
    const auto pair = [](const std::string& x, std::size_t wx, const std::string& y, std::size_t wy) {
      return fmt::format("{:>{}} -> {:>{}}", x, wx, y, wy);
    };
    const std::size_t w_step = std::max(std::string(h_step).size(), w_step_a + 4 + w_step_b);
    const std::size_t w_alloc = std::max(std::string(h_alloc).size(), w_alloc_a + 4 + w_alloc_b);
    const auto line = [&](const std::string& label, const std::string& status, const std::string& step,
                          const std::string& step_delta, const std::string& tokens, const std::string& alloc,
                          const std::string& smi) {
      std::string t =
          fmt::format("  {:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {:<{}}  {}", label, w_label, status, w_status, step,
                      w_step, step_delta, w_step_delta, tokens, w_tokens, alloc, w_alloc, smi);
      t.erase(t.find_last_not_of(' ') + 1);
      return t + "\n";
    };
    s += fmt::format("\n{} point{} in both, in A's order (A -> B; s per steady-state step; GiB = 2^30 B):\n",
                     lines.size(), lines.size() == 1 ? "" : "s");
    s += line(h_label, h_status, h_step, h_step_delta, h_tokens, h_alloc, h_smi);
    for (const Line& l : lines)
      s += line(l.label, l.status, pair(l.step_a, w_step_a, l.step_b, w_step_b), l.step_delta, l.tokens_delta,
                pair(l.alloc_a, w_alloc_a, l.alloc_b, w_alloc_b), pair(l.smi_a, w_smi_a, l.smi_b, w_smi_b));
    if (any_na)
      s += "  (n/a: no such figure: a point that stopped at its OOM has no step time, one with status error or "
           "invalid was not simulated; no delta against n/a)\n";
    if (any_warmup)
      s += "  (*: warm-up step 0 only, no steady-state step completed; no delta)\n";
    if (any_marginal)
      s += "  (~: a marginal fit: it fits with little to spare; why is the row's marginal_reason in sweep.csv)\n";
  }
  if (!d.only_a.empty() || !d.only_b.empty())
    s += "\n";
  // A superset sweep would list every extra point: up to kOnlyListed of them are named, beyond that the first
  // kOnlyNamed and a count.
  constexpr std::size_t kOnlyListed = 8;
  constexpr std::size_t kOnlyNamed = 5;
  for (const auto& [which, only] : {std::pair{"A", &d.only_a}, std::pair{"B", &d.only_b}}) {
    const bool cut = only->size() > kOnlyListed;
    for (std::size_t i = 0; i < (cut ? kOnlyNamed : only->size()); ++i)
      s += fmt::format("only in {}: {}\n", which, (*only)[i]);
    if (cut)
      s += fmt::format("only in {}: ... and {} more ({} points in all)\n", which, only->size() - kOnlyNamed,
                       only->size());
  }
  return s;
}

} // namespace zerosim::analysis
