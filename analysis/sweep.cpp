// Sweep expansion, keys, shards, rows, CSV/JSON and merge (analysis/sweep.hpp).
#include "analysis/sweep.hpp"

#include "analysis/json_numbers.hpp"
#include "analysis/measured_band.hpp"

#include "analysis/version.hpp"
#include "sim/error.hpp"
#include "sim/quantity.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

namespace zerosim::analysis {

namespace {

using nlohmann::json;

void check_spec(const SweepSpec& spec) {
  std::set<std::string> seen;
  for (const auto* group : {&spec.grid, &spec.zip})
    for (const SweepAxis& a : *group) {
      if (a.key.empty())
        throw Error("sweep: an axis has an empty key");
      if (a.values.empty())
        throw Error("sweep." + a.key + ": expected a non-empty list of values");
      if (!seen.insert(a.key).second)
        throw Error("sweep." + a.key + ": the key is swept twice");
    }
  for (const SweepAxis& a : spec.zip)
    if (a.values.size() != spec.zip.front().values.size())
      throw Error(fmt::format("sweep.zip.{}: {} values, but zip axis '{}' has {} (zipped axes advance together)", a.key,
                              a.values.size(), spec.zip.front().key, spec.zip.front().values.size()));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos)
    return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

/// An axis value as typed JSON: a value that is a JSON number or true / false as written ("2", "1.5", "true") is that,
/// any other ("dgx-h100", "24GiB", "{stage: 3}") the string as given.
json typed_value(const std::string& v) {
  if (v == "true" || v == "false")
    return v == "true";
  const json j = json::parse(v, nullptr, false);
  return !j.is_discarded() && j.is_number() ? j : json(v);
}

json row_json(const SweepRow& r) {
  json in = json::array();
  json values = json::object();
  for (const auto& [k, v] : r.inputs) {
    in.push_back(json::array({k, v}));
    values[k] = typed_value(v);
  }
  // An OOM before any steady-state step has only the warm-up step's time: null, as sweep.csv leaves those cells
  // empty, so that the two outputs never disagree (a fit keeps its numbers, warm-up or not: `steady_state` says).
  const bool timed = has_step_figures(r);
  const auto timing = [timed](double v) { return timed ? json(v) : json(nullptr); };
  return json{{"index", r.index},
              {"key", r.key},
              {"inputs", in},
              {"axis_values", values},
              {"status", row_status(r)},
              {"ok", r.ok},
              {"error", r.error},
              {"step_time_s", timing(r.step_time_s)},
              {"tokens_per_s", timing(r.tokens_per_s)},
              {"mfu", timing(r.mfu)},
              {"steady_state", r.steady_state},
              {"stopped_at_oom", r.stopped_at_oom},
              {"gemm_utilization", r.gemm_utilization},
              {"world_size", r.world_size},
              {"grad_accum", r.grad_accum},
              {"train_batch_size", r.train_batch_size},
              {"peak_allocated_bytes", r.peak_allocated_bytes},
              {"peak_allocated_rank", r.peak_allocated_rank},
              {"peak_at_init", r.peak_at_init},
              {"steady_peak_allocated_bytes", r.steady_peak_allocated_bytes},
              {"peak_reserved_bytes", r.peak_reserved_bytes},
              {"peak_reserved_rank", r.peak_reserved_rank},
              {"nvidia_smi_bytes", r.nvidia_smi_bytes},
              {"nvidia_smi_needed_bytes", r.nvidia_smi_needed_bytes},
              {"capacity_bytes", r.capacity_bytes},
              {"fits", r.fits},
              {"oom_reason", r.oom_reason},
              {"oom_gpu_demand_bytes", r.oom_gpu_demand_bytes},
              {"alloc_retries", r.alloc_retries},
              {"oom_on_host", r.oom_on_host},
              {"host_node_peak_bytes", r.host_node_peak_bytes},
              {"oom_host_demand_bytes", r.oom_host_demand_bytes},
              {"marginal", !r.marginal_reason.empty()},
              {"marginal_reason", r.marginal_reason},
              {"breakdown", json{{"forward_s", r.breakdown.forward_s},
                                 {"backward_s", r.breakdown.backward_s},
                                 {"optimizer_s", r.breakdown.optimizer_s},
                                 {"other_compute_s", r.breakdown.other_compute_s},
                                 {"compute_busy_s", r.breakdown.compute_busy_s},
                                 {"comm_busy_s", r.breakdown.comm_busy_s},
                                 {"exposed_comm_s", r.breakdown.exposed_comm_s},
                                 {"exposed_offload_s", r.breakdown.exposed_offload_s},
                                 {"exposed_offload_pcie_s", r.breakdown.exposed_offload_pcie_s},
                                 {"exposed_offload_nvme_s", r.breakdown.exposed_offload_nvme_s},
                                 {"exposed_cpu_s", r.breakdown.exposed_cpu_s},
                                 {"exposed_host_s", r.breakdown.exposed_host_s},
                                 {"idle_other_s", r.breakdown.idle_other_s}}},
              {"notes", r.notes},
              {"measured_band",
               r.measured_band.empty()
                   ? json(nullptr)
                   : json{{"label", r.measured_band}, {"low", r.measured_step_low}, {"high", r.measured_step_high}}},
              {"collective_bound", r.collective_bound},
              {"resolved", r.resolved}};
}

SweepRow row_of(const json& j) {
  SweepRow r;
  r.index = j.at("index").get<std::size_t>();
  r.key = j.at("key").get<std::string>();
  for (const auto& kv : j.at("inputs"))
    r.inputs.emplace_back(kv.at(0).get<std::string>(), kv.at(1).get<std::string>());
  r.ok = j.at("ok").get<bool>();
  // "status" is absent in rows written before invalid points had a status of their own (they read as errors).
  r.invalid = !r.ok && j.value("status", std::string()) == "invalid";
  r.error = j.at("error").get<std::string>();
  // null for an OOM without a steady-state step (row_json): read as 0, no step time.
  const auto timing = [&j](const char* key) { return j.at(key).is_null() ? 0.0 : j.at(key).get<double>(); };
  r.step_time_s = timing("step_time_s");
  r.tokens_per_s = timing("tokens_per_s");
  r.mfu = timing("mfu");
  r.steady_state = j.value("steady_state", true); // absent in older journals
  r.stopped_at_oom = j.value("stopped_at_oom", false); // absent in older journals
  r.gemm_utilization = j.value("gemm_utilization", 1.0); // journals before the GEMM shape model lack it
  r.world_size = j.at("world_size").get<int>();
  r.grad_accum = j.value("grad_accum", std::int64_t{0}); // absent in older journals and sweep.json files
  r.train_batch_size = j.value("train_batch_size", std::int64_t{0});
  r.peak_allocated_bytes = j.at("peak_allocated_bytes").get<double>();
  r.peak_allocated_rank = j.at("peak_allocated_rank").get<int>();
  r.peak_at_init = j.value("peak_at_init", false); // absent in older journals, as is the next one
  r.steady_peak_allocated_bytes = j.value("steady_peak_allocated_bytes", 0.0);
  r.peak_reserved_bytes = j.at("peak_reserved_bytes").get<double>();
  r.peak_reserved_rank = j.at("peak_reserved_rank").get<int>();
  r.nvidia_smi_bytes = j.at("nvidia_smi_bytes").get<double>();
  // Absent (older journals) or 0 (not recorded): the gates read the nvidia-smi figure, as before it existed.
  r.nvidia_smi_needed_bytes = j.value("nvidia_smi_needed_bytes", 0.0);
  if (!(r.nvidia_smi_needed_bytes > 0))
    r.nvidia_smi_needed_bytes = r.nvidia_smi_bytes;
  r.capacity_bytes = j.at("capacity_bytes").get<double>();
  r.fits = j.at("fits").get<bool>();
  r.oom_reason = j.at("oom_reason").get<std::string>();
  r.oom_gpu_demand_bytes = j.value("oom_gpu_demand_bytes", 0.0); // absent in older journals
  r.alloc_retries = j.value("alloc_retries", 0L); // absent in older journals, as are the next two
  r.oom_on_host = j.value("oom_on_host", false);
  r.host_node_peak_bytes = j.value("host_node_peak_bytes", 0.0);
  r.oom_host_demand_bytes = j.value("oom_host_demand_bytes", 0.0); // absent in older journals
  // Absent in journals written before it was recorded: derived from the row's own figures, as row_from_summary's
  // memory_bounds does (marginal_fit; a row that did not run or does not fit is not marginal).
  if (const auto m = j.find("marginal_reason"); m != j.end())
    r.marginal_reason = m->get<std::string>();
  else
    r.marginal_reason = marginal_reason(
        marginal_fit(r.ok && r.fits, r.alloc_retries, r.nvidia_smi_bytes, r.nvidia_smi_needed_bytes, r.capacity_bytes));
  if (const auto b = j.find("breakdown"); b != j.end() && b->is_object()) { // absent in older journals
    r.breakdown.forward_s = b->value("forward_s", 0.0);
    r.breakdown.backward_s = b->value("backward_s", 0.0);
    r.breakdown.optimizer_s = b->value("optimizer_s", 0.0);
    r.breakdown.other_compute_s = b->value("other_compute_s", 0.0);
    r.breakdown.compute_busy_s = b->value("compute_busy_s", 0.0);
    r.breakdown.comm_busy_s = b->value("comm_busy_s", 0.0);
    r.breakdown.exposed_comm_s = b->value("exposed_comm_s", 0.0);
    r.breakdown.exposed_offload_s = b->value("exposed_offload_s", 0.0);
    // The PCIe / NVMe split since session 26: an older journal's offload time is all read as PCIe.
    r.breakdown.exposed_offload_pcie_s = b->value("exposed_offload_pcie_s", r.breakdown.exposed_offload_s);
    r.breakdown.exposed_offload_nvme_s = b->value("exposed_offload_nvme_s", 0.0);
    r.breakdown.exposed_cpu_s = b->value("exposed_cpu_s", 0.0);
    r.breakdown.exposed_host_s = b->value("exposed_host_s", 0.0);
    r.breakdown.idle_other_s = b->value("idle_other_s", 0.0);
  }
  r.build = j.value("zerosim_build", std::string()); // journal records only, since build ids
  // The next three are absent in older journals; sweep.json rows keep their notes in its top-level list instead.
  r.notes = j.value("notes", std::vector<std::string>());
  if (const auto m = j.find("measured_band"); m != j.end() && m->is_object()) {
    r.measured_band = m->at("label").get<std::string>();
    r.measured_step_low = m->at("low").get<double>();
    r.measured_step_high = m->at("high").get<double>();
  }
  r.collective_bound = j.value("collective_bound", false); // absent in older journals
  r.resolved = j.value("resolved", std::map<std::string, std::string>());
  return r;
}

/// sweep.json's "notes": every distinct note of the rows once, with the indices of the points that have it, ordered
/// by the first such point and then by text, so that shards merged give the list of the whole sweep.
json notes_json(const std::vector<SweepRow>& rows) {
  std::map<std::string, std::vector<std::size_t>> by_text;
  for (const SweepRow& r : rows)
    for (const std::string& n : r.notes) {
      auto& points = by_text[n];
      if (points.empty() || points.back() != r.index)
        points.push_back(r.index);
    }
  std::vector<std::pair<std::string, std::vector<std::size_t>>> list(by_text.begin(), by_text.end());
  for (auto& [text, points] : list)
    std::sort(points.begin(), points.end());
  std::stable_sort(list.begin(), list.end(),
                   [](const auto& a, const auto& b) { return a.second.front() < b.second.front(); });
  json out = json::array();
  for (const auto& [text, points] : list)
    out.push_back({{"text", text}, {"points", points}});
  return out;
}

} // namespace

std::vector<std::string> SweepPoint::as_set_args() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : overrides)
    out.push_back(k + "=" + v);
  return out;
}

std::string SweepPoint::label() const {
  std::string out;
  for (const auto& [k, v] : overrides)
    out += (out.empty() ? "" : " ") + k + "=" + v;
  return out;
}

std::size_t sweep_size(const SweepSpec& spec) {
  check_spec(spec);
  std::size_t n = 1;
  for (const SweepAxis& a : spec.grid)
    n *= a.values.size();
  if (!spec.zip.empty())
    n *= spec.zip.front().values.size();
  return n;
}

std::vector<SweepPoint> expand_sweep(const SweepSpec& spec) {
  const std::size_t n = sweep_size(spec);
  const std::size_t zn = spec.zip.empty() ? 1 : spec.zip.front().values.size();
  std::vector<SweepPoint> out(n);
  for (std::size_t i = 0; i < n; ++i) {
    SweepPoint& p = out[i];
    p.index = i;
    // Mixed-radix digits of i: the zip group is the least significant digit, the first grid axis the most.
    std::size_t rest = i / zn;
    std::vector<std::size_t> digit(spec.grid.size());
    for (std::size_t a = spec.grid.size(); a-- > 0;) {
      digit[a] = rest % spec.grid[a].values.size();
      rest /= spec.grid[a].values.size();
    }
    for (std::size_t a = 0; a < spec.grid.size(); ++a)
      p.overrides.emplace_back(spec.grid[a].key, spec.grid[a].values[digit[a]]);
    for (const SweepAxis& z : spec.zip)
      p.overrides.emplace_back(z.key, z.values[i % zn]);
  }
  return out;
}

namespace {
/// FNV-1a 64-bit over a sequence of strings, each followed by '\n'.
class Fnv1a {
 public:
  void feed(const std::string& s) {
    for (unsigned char c : s)
      mix(c);
    mix(static_cast<unsigned char>('\n'));
  }
  [[nodiscard]] std::string hex() const { return fmt::format("{:016x}", h_); }

 private:
  void mix(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL; // FNV 64 prime
  }
  std::uint64_t h_ = 0xcbf29ce484222325ULL; // FNV-1a 64 offset basis
};
} // namespace

std::string point_key(const SweepPoint& p, const std::vector<std::string>& base_sets, const std::string& context) {
  // What the point simulates, not how the command spelled it: the --set overrides with a repeated key reduced to
  // its last value (the one that applies), and both lists in key order.
  std::map<std::string, std::string> sets;
  for (const std::string& s : base_sets)
    sets[s.substr(0, s.find('='))] = s;
  std::vector<std::pair<std::string, std::string>> overrides = p.overrides;
  std::stable_sort(overrides.begin(), overrides.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  Fnv1a h;
  for (const auto& [k, s] : sets)
    h.feed(s);
  h.feed("--");
  for (const auto& [k, v] : overrides)
    h.feed(k + "=" + v);
  if (!context.empty()) { // keys of sweeps written before the context was hashed stay as they were without one
    h.feed("--context");
    h.feed(context);
  }
  return h.hex();
}

namespace {
/// Block style for every map and sequence under `n` (a flow map `{a: 1}` and its block form are the same YAML).
void to_block_style(YAML::Node n) {
  if (n.IsMap() || n.IsSequence()) {
    n.SetStyle(YAML::EmitterStyle::Block);
    if (n.IsMap())
      for (auto kv : n)
        to_block_style(kv.second);
    else
      for (auto child : n)
        to_block_style(child);
  }
}
} // namespace

bool holds_sweep_outputs(const std::string& dir) {
  std::error_code ec;
  const std::filesystem::path d(dir);
  return std::filesystem::is_regular_file(d / "sweep.json", ec) ||
         std::filesystem::is_regular_file(d / "journal.jsonl", ec);
}

std::string canonical_yaml_text(const std::string& text) {
  try {
    YAML::Emitter e;
    for (YAML::Node doc : YAML::LoadAll(text)) {
      to_block_style(doc);
      e << doc;
    }
    return e.good() ? std::string(e.c_str()) + "\n" : text;
  } catch (const YAML::Exception&) {
    return text;
  }
}

std::string without_sweep_block(const std::string& scenario_text) {
  std::string out;
  bool in_sweep = false;
  std::size_t pos = 0;
  while (pos < scenario_text.size()) {
    std::size_t end = scenario_text.find('\n', pos);
    end = end == std::string::npos ? scenario_text.size() : end + 1;
    const std::string line = scenario_text.substr(pos, end - pos);
    pos = end;
    const bool top_level =
        !line.empty() && line[0] != ' ' && line[0] != '\t' && line[0] != '\n' && line[0] != '\r' && line[0] != '#';
    if (top_level)
      in_sweep = line.rfind("sweep:", 0) == 0 || line.rfind("sweep :", 0) == 0;
    if (!in_sweep)
      out += line;
  }
  return out;
}

std::string sweep_fingerprint(const std::string& scenario_text, const SweepSpec& spec) {
  Fnv1a h;
  h.feed(scenario_text);
  for (const auto* group : {&spec.grid, &spec.zip}) {
    h.feed(group == &spec.grid ? "--grid" : "--zip");
    for (const SweepAxis& a : *group) {
      h.feed(a.key);
      for (const std::string& v : a.values)
        h.feed("=" + v);
    }
  }
  return h.hex();
}

Shard parse_shard(const std::string& text) {
  const std::size_t slash = text.find('/');
  const auto bad = [&text]() { return Error("--shard: expected i/n with 0 <= i < n (e.g. 0/4), got '" + text + "'"); };
  if (slash == std::string::npos || slash == 0 || slash + 1 >= text.size())
    throw bad();
  const std::string a = text.substr(0, slash);
  const std::string b = text.substr(slash + 1);
  const auto digits = [](const std::string& s) {
    return s.size() <= 9 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(a) || !digits(b))
    throw bad();
  Shard s{std::stoi(a), std::stoi(b)};
  if (s.count < 1 || s.index >= s.count)
    throw bad();
  return s;
}

bool in_shard(std::size_t index, const Shard& shard) {
  return index % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index);
}

SweepRow row_from_summary(const SweepPoint& p, const std::string& key, const RunSummary& s) {
  SweepRow r;
  r.index = p.index;
  r.key = key;
  r.inputs = p.overrides;
  r.ok = true;
  r.step_time_s = s.step_time_s;
  r.tokens_per_s = s.tokens_per_s;
  r.mfu = s.mfu;
  r.steady_state = s.steady_state;
  r.stopped_at_oom = s.oom && !s.finished; // has_step_time(s) is false
  r.gemm_utilization = s.gemm_utilization;
  r.world_size = s.world_size;
  r.grad_accum = s.grad_accum;
  r.train_batch_size = s.train_batch_size;
  r.peak_allocated_bytes = s.peak_bytes;
  r.peak_allocated_rank = s.peak_rank;
  r.peak_at_init = peak_at_initialisation(s);
  r.steady_peak_allocated_bytes = s.steady_peak_reached ? s.steady_peak_bytes : 0.0;
  r.peak_reserved_bytes = s.peak_reserved_bytes;
  r.peak_reserved_rank = s.peak_reserved_rank;
  r.nvidia_smi_bytes = s.nvidia_smi_bytes;
  r.nvidia_smi_needed_bytes = nvidia_smi_needed(s);
  r.capacity_bytes = s.capacity_bytes;
  r.fits = s.fits;
  r.oom_reason = one_line(s.oom_description);
  r.oom_gpu_demand_bytes = s.oom_gpu_demand_bytes;
  r.alloc_retries = s.alloc_retries;
  r.oom_on_host = s.oom_on_host;
  r.host_node_peak_bytes = s.host_node_peak_bytes;
  r.oom_host_demand_bytes = s.oom_host_demand_bytes;
  r.marginal_reason = marginal_reason(memory_bounds(s));
  r.breakdown = s.breakdown;
  r.notes = s.diagnostics;
  if (!s.reserved_note.empty())
    r.notes.push_back(s.reserved_note);
  r.notes.insert(r.notes.end(), s.caveats.begin(), s.caveats.end());
  r.measured_band = s.measured_band;
  r.measured_step_low = s.measured_step_low;
  r.measured_step_high = s.measured_step_high;
  r.collective_bound = s.collective_bound;
  r.resolved = s.resolved;
  return r;
}

SweepRow row_from_error(const SweepPoint& p, const std::string& key, const std::string& why) {
  SweepRow r;
  r.index = p.index;
  r.key = key;
  r.inputs = p.overrides;
  r.ok = false;
  r.error = one_line(why);
  return r;
}

SweepRow row_from_invalid(const SweepPoint& p, const std::string& key, const std::string& why) {
  SweepRow r = row_from_error(p, key, why);
  r.invalid = true;
  return r;
}

std::string row_status(const SweepRow& r) {
  if (!r.ok)
    return r.invalid ? "invalid" : "error";
  return r.fits ? "fits" : "oom";
}

RowFailures count_failures(const std::vector<SweepRow>& rows) {
  RowFailures n;
  for (const SweepRow& r : rows) {
    n.failed += !r.ok && !r.invalid ? 1 : 0;
    n.invalid += r.invalid ? 1 : 0;
  }
  return n;
}

std::string host_node_peak_gib_cell(const SweepRow& r) { return host_gib_cell(r.host_node_peak_bytes, 0, ""); }

std::string sweep_console_table(const std::vector<std::string>& axis_keys, const std::vector<SweepRow>& rows,
                                std::size_t max_rows) {
  const bool host = std::any_of(rows.begin(), rows.end(), [](const SweepRow& r) { return r.host_node_peak_bytes > 0; });
  std::vector<std::string> head{"index"};
  for (const auto& k : axis_keys)
    head.push_back(k);
  const std::size_t first_number = head.size() + 1; // right-aligned from step time s on
  for (const char* h : {"status", "step time s", "tokens/s", "MFU %", "nvidia-smi GiB", "of GiB"})
    head.emplace_back(h);
  if (host)
    head.emplace_back("host GiB per node");
  std::vector<std::vector<std::string>> table{head};
  const std::size_t shown = std::min(rows.size(), max_rows);
  bool any_bound = false; // a shown row is collective-bound: its step time is marked "+"
  for (std::size_t i = 0; i < shown; ++i) {
    const SweepRow& r = rows[i];
    std::vector<std::string> line{std::to_string(r.index)};
    for (const auto& k : axis_keys) {
      std::string v;
      for (const auto& [ik, iv] : r.inputs)
        if (ik == k)
          v = iv;
      line.push_back(v);
    }
    std::string status = row_status(r);
    if (r.ok && r.oom_on_host)
      status = "host oom";
    else if (!r.marginal_reason.empty())
      status = "fits, marginal (" + r.marginal_reason + ")";
    line.push_back(status);
    const bool timed = r.ok && r.steady_state && has_step_figures(r);
    any_bound = any_bound || (timed && r.collective_bound);
    line.push_back(timed ? fmt::format("{:.4f}{}", r.step_time_s, r.collective_bound ? "+" : "") : "n/a");
    line.push_back(timed ? fmt::format("{:.1f}", r.tokens_per_s) : "n/a");
    line.push_back(timed ? fmt::format("{:.1f}", r.mfu * 100) : "n/a");
    line.push_back(r.ok ? fmt::format("{:.3f}", r.nvidia_smi_bytes / kGiB) : "");
    line.push_back(r.ok ? fmt::format("{:.2f}", r.capacity_bytes / kGiB) : "");
    // After a host OOM that stopped the point: what the node needed at least (live at the failure + the request),
    // as run's table shows it, not the node's peak short of the failure.
    if (host)
      line.push_back(host_gib_cell(r.host_node_peak_bytes,
                                   r.ok && r.oom_on_host && r.stopped_at_oom ? r.oom_host_demand_bytes : 0.0, "-"));
    table.push_back(std::move(line));
  }
  std::vector<std::size_t> w(head.size(), 0);
  for (const auto& line : table)
    for (std::size_t c = 0; c < line.size(); ++c)
      w[c] = std::max(w[c], line[c].size());
  std::string out;
  for (const auto& line : table) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c)
      text += c == 0             ? fmt::format("{:>{}}", line[c], w[c])
              : c < first_number ? fmt::format("  {:<{}}", line[c], w[c])
                                 : fmt::format("  {:>{}}", line[c], w[c]);
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + "\n";
  }
  if (rows.size() > shown)
    out += fmt::format("... {} more row{} in sweep.csv\n", rows.size() - shown, rows.size() - shown == 1 ? "" : "s");
  if (any_bound)
    out += std::string("+ collective-bound (sweep.json collective_bound): ") + collective_bound_mark_note() + "\n";
  return out;
}

std::string row_to_json(const SweepRow& r) { return row_json(r).dump(-1, ' ', false, json::error_handler_t::replace); }

std::string journal_record(const SweepRow& r) {
  json j = row_json(r);
  j["zerosim_build"] = r.build;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

SweepRow row_from_json(const std::string& text) {
  try {
    return row_of(json::parse(text));
  } catch (const json::exception& e) {
    throw Error(std::string("sweep row: malformed JSON: ") + e.what());
  }
}

std::vector<SweepRow> parse_journal(const std::string& text, std::vector<std::size_t>* bad_lines) {
  std::map<std::string, SweepRow> by_key;
  std::vector<std::string> order;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty())
      continue;
    SweepRow r;
    try {
      r = row_from_json(line);
    } catch (const Error&) {
      // Skipped: that point simply runs again. A last line without its newline is a row cut short by a crash (the
      // sweep cuts it); any other is not a journal record (an edit, another program's JSON): the caller says so.
      const bool torn = in.eof() && !text.empty() && text.back() != '\n';
      if (bad_lines != nullptr && !torn)
        bad_lines->push_back(number);
      continue;
    }
    if (by_key.count(r.key) == 0)
      order.push_back(r.key);
    by_key[r.key] = std::move(r);
  }
  std::vector<SweepRow> out;
  for (const auto& k : order)
    out.push_back(by_key[k]);
  return out;
}

std::string sweep_csv(const std::vector<std::string>& axis_keys, const std::vector<SweepRow>& rows) {
  std::string out = "index,key";
  for (const auto& k : axis_keys) {
    out += ',';
    out += csv_field(k);
  }
  out +=
      ",status,error,step_time_s,tokens_per_s,mfu,gemm_utilization,world_size,peak_allocated_gib,peak_allocated_rank,"
      "peak_reserved_gib,peak_reserved_rank,nvidia_smi_gib,capacity_gib,fits,oom_reason,forward_s,backward_s,"
      "optimizer_s,other_compute_s,exposed_comm_s,exposed_offload_s,exposed_cpu_s,idle_other_s,alloc_retries,"
      "host_node_peak_gib,exposed_host_s,comm_in_flight_s,grad_accum,train_batch_size,peak_allocated_at,"
      "steady_peak_allocated_gib,exposed_offload_pcie_s,exposed_offload_nvme_s,overlap_comm,marginal_reason,"
      "marginal,collective_bound\n";
  for (const SweepRow& r : rows) {
    out += fmt::format("{},{}", r.index, r.key);
    for (const auto& k : axis_keys) {
      std::string v;
      for (const auto& [ik, iv] : r.inputs)
        if (ik == k)
          v = iv;
      out += ',';
      out += csv_field(v);
    }
    if (!r.ok) {
      out += ',' + row_status(r) + ',';
      out += csv_field(r.error);
      // 13 result + 8 breakdown + 2 memory columns + the host-thread and in-flight ones + GA and batch + the peak's
      // phase and the steady-state peak + the offload split + overlap_comm, marginal_reason, marginal and
      // collective_bound, empty
      out += ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,\n";
      continue;
    }
    // A point that stopped before a steady-state step completed, or at its OOM, has no step time to compare: empty
    // cells, not 0 or the warm-up step's, and no breakdown either (the docs call it the steady-state step's).
    const bool st = r.steady_state && has_step_figures(r);
    out += fmt::format(",{},,{},{},{},{:.4f},{},{:.3f},{},{:.3f},{},{:.3f},{:.3f},{},{}", row_status(r),
                       st ? fmt::format("{:.6g}", r.step_time_s) : std::string(),
                       st ? fmt::format("{:.6g}", r.tokens_per_s) : std::string(),
                       st ? fmt::format("{:.4f}", r.mfu) : std::string(), r.gemm_utilization, r.world_size,
                       r.peak_allocated_bytes / kGiB, r.peak_allocated_rank, r.peak_reserved_bytes / kGiB,
                       r.peak_reserved_rank, r.nvidia_smi_bytes / kGiB, r.capacity_bytes / kGiB,
                       r.fits ? "true" : "false", csv_field(r.oom_reason));
    const StepBreakdown& b = r.breakdown;
    out += st ? fmt::format(",{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g}", b.forward_s, b.backward_s,
                            b.optimizer_s, b.other_compute_s, b.exposed_comm_s, b.exposed_offload_s, b.exposed_cpu_s,
                            b.idle_other_s)
              : std::string(",,,,,,,,");
    // cudaMalloc retries (a fit with retries is marginal) and the node's host RAM (offload), empty without offload.
    // The host thread's exposed time and the collectives' in-flight time come last: added after the other columns
    // (sessions 11 and 18), so that their positions stay where scripts reading sweep.csv expect them. In flight minus
    // exposed_comm_s is about the communication hidden behind compute (exposed_comm_s also holds waits on bucket
    // copies, so the difference is approximate and can be slightly negative).
    out += fmt::format(",{},{},{},{}", r.alloc_retries, host_node_peak_gib_cell(r),
                       st ? fmt::format("{:.6g}", b.exposed_host_s) : std::string(),
                       st ? fmt::format("{:.6g}", b.comm_busy_s) : std::string());
    // The GA the point ran with and its global batch in sequences: derived per point from training.train_batch_size
    // when that is set (GA = train_batch_size / (micro_batch x N_d)), so a reader sees why step times differ.
    out += fmt::format(",{},{}", r.grad_accum > 0 ? std::to_string(r.grad_accum) : std::string(),
                       r.train_batch_size > 0 ? std::to_string(r.train_batch_size) : std::string());
    // Where peak_allocated_gib was reached: "initialisation" (before step 0, e.g. stage 1-2's flatten copy of the lp
    // params) or "step"; and the peak over steps >= 1, what training holds (empty when no step >= 1 began).
    out += fmt::format(",{},{}", r.peak_at_init ? "initialisation" : "step",
                       r.steady_peak_allocated_bytes > 0 ? fmt::format("{:.3f}", r.steady_peak_allocated_bytes / kGiB)
                                                         : std::string());
    // exposed_offload_s split: PCIe copies and NVMe swaps (added in session 26, last for the same reason).
    out += st ? fmt::format(",{:.6g},{:.6g}", b.exposed_offload_s - b.exposed_offload_nvme_s, b.exposed_offload_nvme_s)
              : std::string(",,");
    // zero.overlap_comm as the point resolved it (its default follows zero.stage: a stage axis changes it; added in
    // session 27, last for the same reason); empty in rows written before it was recorded.
    const auto overlap = r.resolved.find("zero.overlap_comm");
    out += "," + (overlap != r.resolved.end() ? overlap->second : std::string());
    // Why a fit is marginal (sweep.json's marginal_reason), empty otherwise: the status stays "fits" (added in session
    // 29, last for the same reason).
    out += "," + csv_field(r.marginal_reason);
    // The same as a bool (sweep.json's marginal), for a filter that should not test a text for emptiness (newuser31
    // F12; added in session 31).
    out += std::string(",") + (r.marginal_reason.empty() ? "false" : "true");
    // Collective-bound (sweep.json's collective_bound): the step time is a lower bound (added in session 30, last for
    // the same reason); empty without a step time.
    out += st ? std::string(r.collective_bound ? ",true\n" : ",false\n") : std::string(",\n");
  }
  return out;
}

std::string sweep_json(const SweepTable& t) {
  const json notes = notes_json(t.rows);
  std::map<std::string, std::size_t> note_index;
  for (std::size_t i = 0; i < notes.size(); ++i)
    note_index[notes[i].at("text").get<std::string>()] = i;
  json rows = json::array();
  for (const SweepRow& r : t.rows) {
    json row = row_json(r);
    row.erase("notes"); // once per text in "notes" below; the row keeps its order of them
    json indices = json::array();
    for (const std::string& n : r.notes)
      indices.push_back(note_index.at(n));
    row["note_indices"] = indices;
    rows.push_back(row);
  }
  const json j{{"zerosim_version", t.zerosim_version.empty() ? std::string(version()) : t.zerosim_version},
               {"scenario", t.scenario},
               {"axes", t.axis_keys},
               {"points_total", t.points_total},
               {"shard", fmt::format("{}/{}", t.shard.index, t.shard.count)},
               {"set", t.sets},
               {"fingerprint", t.fingerprint},
               {"notes", notes},
               {"rows", rows}};
  json k = j; // (nlohmann's json orders keys: the field's place does not depend on where it is added)
  if (!t.zerosim_build.empty())
    k["zerosim_build"] = t.zerosim_build;
  write_whole_numbers_as_integers(k);
  return k.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

SweepTable sweep_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    if (!j.is_object())
      throw Error("malformed sweep.json: expected a JSON object");
    for (const char* key : {"scenario", "axes", "points_total", "shard", "rows"})
      if (!j.contains(key))
        throw Error(std::string("malformed sweep.json: missing key '") + key + "'");
    SweepTable t;
    t.scenario = j.at("scenario").get<std::string>();
    t.axis_keys = j.at("axes").get<std::vector<std::string>>();
    t.points_total = j.at("points_total").get<std::size_t>();
    t.shard = parse_shard(j.at("shard").get<std::string>());
    if (j.contains("set")) // absent in sweeps written before it was recorded
      t.sets = j.at("set").get<std::vector<std::string>>();
    if (j.contains("fingerprint"))
      t.fingerprint = j.at("fingerprint").get<std::string>();
    if (j.contains("zerosim_version"))
      t.zerosim_version = j.at("zerosim_version").get<std::string>();
    if (j.contains("zerosim_build"))
      t.zerosim_build = j.at("zerosim_build").get<std::string>();
    const json no_notes = json::array();
    const auto n = j.find("notes"); // absent in sweeps written before it was recorded
    const json& notes = n != j.end() ? *n : no_notes;
    std::vector<bool> ordered; // per row: it has note_indices (absent in sweeps written before they were recorded)
    for (const auto& r : j.at("rows")) {
      SweepRow row = row_of(r);
      const auto order = r.find("note_indices");
      ordered.push_back(order != r.end());
      if (order != r.end()) // the row's notes in its own order (diagnostics, the reserved note, caveats)
        for (const auto& i : *order) {
          const auto k = i.get<std::size_t>();
          if (k >= notes.size())
            throw Error(fmt::format("malformed sweep.json: point {} has note index {}, the notes list has {}",
                                    row.index, k, notes.size()));
          row.notes.push_back(notes[k].at("text").get<std::string>());
        }
      t.rows.push_back(std::move(row));
    }
    std::map<std::size_t, SweepRow*> unordered; // older rows: their notes in the list's order
    for (std::size_t k = 0; k < t.rows.size(); ++k)
      if (!ordered[k])
        unordered[t.rows[k].index] = &t.rows[k];
    for (const auto& note : notes)
      for (const auto& i : note.at("points"))
        if (const auto it = unordered.find(i.get<std::size_t>()); it != unordered.end())
          it->second->notes.push_back(note.at("text").get<std::string>());
    return t;
  } catch (const json::exception& e) {
    // nlohmann's messages start with "[json.exception.KIND.ID] "; the rest reads as English.
    std::string what = e.what();
    if (const auto close = what.find("] "); !what.empty() && what[0] == '[' && close != std::string::npos)
      what = what.substr(close + 2);
    throw Error("malformed sweep.json: " + what);
  }
}

std::string build_name(const std::string& build) {
  return build.empty() ? std::string("an unrecorded build") : "build " + build;
}

SweepTable merge_sweeps(const std::vector<SweepTable>& parts, std::vector<std::size_t>& missing,
                        const std::vector<std::string>& names) {
  missing.clear();
  if (parts.empty())
    throw Error("merge: no sweep output to merge");
  SweepTable out;
  out.scenario = parts.front().scenario;
  out.axis_keys = parts.front().axis_keys;
  out.points_total = parts.front().points_total;
  out.sets = parts.front().sets;
  out.fingerprint = parts.front().fingerprint;
  out.zerosim_build = parts.front().zerosim_build;
  out.zerosim_version = parts.front().zerosim_version;
  std::map<std::size_t, SweepRow> by_index;
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const SweepTable& t = parts[p];
    if (t.scenario != out.scenario || t.axis_keys != out.axis_keys || t.points_total != out.points_total)
      throw Error(
          fmt::format("merge: the outputs come from different sweeps (scenario '{}' with {} points vs "
                      "'{}' with {} points, or different axes)",
                      out.scenario, out.points_total, t.scenario, t.points_total));
    if (t.sets != out.sets) {
      const auto list = [](const std::vector<std::string>& v) {
        return v.empty() ? std::string("none") : fmt::format("{}", fmt::join(v, " "));
      };
      throw Error(fmt::format("merge: the outputs were run with different --set overrides ({} vs {})", list(out.sets),
                              list(t.sets)));
    }
    if (t.fingerprint != out.fingerprint)
      throw Error("merge: the outputs come from different sweeps (the scenario file or the axis values differ)");
    // Two builds may model the same point differently (a timing-model change between them): one table must come
    // from one build. Checked once the parts are known
    // to be shards of one sweep.
    if (t.zerosim_build != out.zerosim_build) {
      const bool named = names.size() == parts.size();
      throw Error(
          fmt::format("merge: {} was computed by {} and {} by {}: one table would mix two builds' "
                      "numbers; run `zerosim sweep` again on one of them with the other's build (it "
                      "re-simulates the points another build computed)",
                      named ? names.front() : std::string("output 1"), build_name(out.zerosim_build),
                      named ? names[p] : "output " + std::to_string(p + 1), build_name(t.zerosim_build)));
    }
    // One build is one release, but sweep.json files written before build ids ("" builds) may come from two.
    if (t.zerosim_version != out.zerosim_version) {
      const bool named = names.size() == parts.size();
      const auto release = [](const std::string& v) {
        return v.empty() ? std::string("an unrecorded release") : "zerosim " + v;
      };
      throw Error(
          fmt::format("merge: {} was written by {} and {} by {}: one table would mix two releases' numbers; "
                      "run `zerosim sweep` again on one of them with the other's release",
                      named ? names.front() : std::string("output 1"), release(out.zerosim_version),
                      named ? names[p] : "output " + std::to_string(p + 1), release(t.zerosim_version)));
    }
    for (const SweepRow& r : t.rows) {
      if (r.index >= out.points_total)
        throw Error(
            fmt::format("merge: row index {} out of range (the sweep has {} points)", r.index, out.points_total));
      const auto it = by_index.find(r.index);
      if (it != by_index.end() && it->second.key != r.key)
        throw Error(fmt::format("merge: point {} has two different keys ({} and {})", r.index, it->second.key, r.key));
      by_index[r.index] = r;
    }
  }
  for (std::size_t i = 0; i < out.points_total; ++i)
    if (by_index.count(i) == 0)
      missing.push_back(i);
  for (auto& [i, r] : by_index)
    out.rows.push_back(std::move(r));
  return out;
}

} // namespace zerosim::analysis
