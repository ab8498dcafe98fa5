// `zerosim validate [DIR|FILE...]`: runs each validation scenario (scenarios/validation/, STYLE.md §12) -- every
// variant in its own forked process, like `zerosim run` -- and compares the claims of its `expect:` block with the
// simulated values (apps/validation_expect.hpp). Prints one row per claim (claim, reference, simulated, delta %,
// tolerance, status, source) and the mean and max |delta|, in the manner of Calculon's validation table.
#include "analysis/result_json.hpp"
#include "apps/cli.hpp"
#include "apps/sim_child.hpp"
#include "apps/validation_expect.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;

const char* kValidateUsage = "usage: zerosim validate [DIR|SCENARIO.yaml...] [--quiet] [--markdown]";

/// Directory holding scenarios/ ($ZEROSIM_DATA_DIR, else the build-time default).
fs::path data_dir() {
  if (const char* env = std::getenv("ZEROSIM_DATA_DIR"); env != nullptr && *env != '\0')
    return env;
#ifdef ZEROSIM_DATA_DIR
  return ZEROSIM_DATA_DIR;
#else
  return ".";
#endif
}

/// The variant of `variants` a claim names: its label ("zero.stage=2"), or the value part of the label ("2").
/// "" names the only variant. Returns the index, or -1.
int find_variant(const std::vector<scenario::Variant>& variants, const std::string& name) {
  if (name.empty())
    return variants.size() == 1 ? 0 : -1;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    const std::string& l = variants[i].label;
    const auto eq = l.find('=');
    if (l == name || (eq != std::string::npos && l.substr(eq + 1) == name))
      return static_cast<int>(i);
  }
  return -1;
}

std::string labels_of(const std::vector<scenario::Variant>& variants) {
  std::string s;
  for (const auto& v : variants)
    s += (s.empty() ? "" : ", ") + (v.label.empty() ? std::string("(single run)") : v.label);
  return s;
}

/// A validation file with its claims and variants, checked before anything runs.
struct ValidationFile {
  std::string path;
  std::vector<Expectation> claims;
  std::vector<scenario::Variant> variants;
};

ValidationFile load_file(const std::string& path) {
  ValidationFile f;
  f.path = path;
  f.claims = parse_expectations(path);
  f.variants = scenario::load_scenario(path, {});
  if (f.variants.empty())
    throw Error(path + ": the scenario expands to no variant");
  for (std::size_t i = 0; i < f.claims.size(); ++i)
    for (const auto& v : metric_variants(f.claims[i]))
      if (find_variant(f.variants, v) < 0)
        throw ScenarioError(path, f.claims[i].line, "expect[" + std::to_string(i) + "].variant",
                            v.empty() ? "the scenario has several variants: name one" : "no variant '" + v + "'",
                            "variants: " + labels_of(f.variants));
  return f;
}

std::string fmt_num(double v) {
  if (std::isinf(v))
    return v > 0 ? "+inf" : "-inf";
  const double a = std::fabs(v);
  if (a != 0 && (a >= 1e6 || a < 1e-3))
    return fmt::format("{:.4g}", v);
  return fmt::format("{:.4f}", v);
}

struct Row {
  std::string claim, reference, simulated, delta, tolerance, status, source;
};

} // namespace

int validate_command(const std::vector<std::string>& args) {
  std::vector<std::string> inputs;
  bool quiet = false;
  bool markdown = false;
  for (const auto& a : args) {
    if (a == "--help" || a == "-h") {
      std::cout << kValidateUsage << "\n\nruns every scenario with an `expect:` block (default: "
                << "scenarios/validation/) and compares its claims with the simulation; exit 0 when every claim "
                   "passes or is a documented known gap, 1 otherwise, 2 on bad input; --quiet prints only the "
                   "failing claims and the summary line; --markdown prints the summary line and then the table in "
                   "Markdown (docs/validation.md's Results, which scripts/update-docs.sh rewrites from it)\n";
      return 0;
    }
    if (a == "--quiet" || a == "-q") {
      quiet = true;
      continue;
    }
    if (a == "--markdown") {
      markdown = true;
      continue;
    }
    if (a.rfind("-", 0) == 0)
      throw UsageError("validate: unknown option '" + a + "' (" + kValidateUsage + ")");
    inputs.push_back(a);
  }
  if (inputs.empty())
    inputs.push_back((data_dir() / "scenarios" / "validation").string());

  std::vector<std::string> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(in))
        if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml"))
          found.push_back(e.path().string());
      std::sort(found.begin(), found.end()); // deterministic order
      if (found.empty())
        throw UsageError("validate: " + in + ": no .yaml scenario in the directory");
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(in, ec)) {
      files.push_back(in);
    } else {
      throw UsageError("validate: " + in + ": no such file or directory");
    }
  }

  // Every input error surfaces before the first simulation.
  std::vector<ValidationFile> vfiles;
  for (const auto& f : files)
    vfiles.push_back(load_file(f));

  std::vector<Row> rows;
  int n_pass = 0, n_fail = 0, n_gap = 0;
  std::vector<double> deltas;
  int run_no = 0; // one scratch sub-directory per simulation
  std::optional<TempDir> scratch; // created with the first simulation; removed on return and on Ctrl-C
  for (const auto& vf : vfiles) {
    // Simulate only the variants the claims use; only result.json is written (into the scratch directory).
    std::set<int> needed;
    for (const auto& c : vf.claims)
      for (const auto& v : metric_variants(c))
        needed.insert(find_variant(vf.variants, v));
    std::vector<std::pair<std::string, nlohmann::json>> summaries;
    std::vector<std::pair<std::string, std::string>> failed; // variant label, why
    for (const int i : needed) {
      scenario::Variant v = vf.variants[static_cast<std::size_t>(i)];
      v.scenario.outputs.result_json = true; // the claims read it; the scratch directory is removed at the end
      v.scenario.outputs.trace_json = false;
      v.scenario.outputs.memory_csv = false;
      if (!scratch)
        scratch.emplace("validate");
      const fs::path dir = scratch->path() / std::to_string(run_no++);
      std::error_code mk;
      fs::create_directories(dir, mk);
      if (mk)
        throw Error(dir.string() + ": cannot create a scratch directory: " + mk.message());
      const SimChild child = start_simulation(v, dir.string());
      const std::string msg = read_to_eof(child.fd);
      ::close(child.fd);
      analysis::RunSummary s;
      std::string why;
      if (!collect_simulation(child.pid, msg, s, why)) {
        failed.emplace_back(v.label, why);
        continue;
      }
      nlohmann::json j;
      {
        std::ifstream in(dir / "result.json");
        j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
      }
      if (j.is_discarded() || !j.is_object()) // no result.json: the summary is still known
        j = nlohmann::json{{"summary", nlohmann::json::parse(analysis::summary_json(s))}};
      // Register under every name a claim may use: the label and its value part.
      summaries.emplace_back(v.label, j);
      const auto eq = v.label.find('=');
      if (eq != std::string::npos)
        summaries.emplace_back(v.label.substr(eq + 1), j);
      if (vf.variants.size() == 1)
        summaries.emplace_back("", j);
    }
    const std::string stem = fs::path(vf.path).stem().string();
    for (std::size_t k = 0; k < vf.claims.size(); ++k) {
      const Expectation& c = vf.claims[k];
      Row r;
      r.claim =
          stem + ": " + (c.claim.empty() ? c.metric + (c.variant.empty() ? "" : " [" + c.variant + "]") : c.claim);
      r.reference = fmt_num(c.value) + (c.unit.empty() ? "" : " " + c.unit);
      r.tolerance =
          c.tolerance_absolute ? fmt_num(c.tolerance) + " " + c.unit : fmt::format("{:g}%", c.tolerance * 100);
      r.source = c.source;
      try {
        const double sim = evaluate_metric(c, summaries);
        const ClaimResult res = compare_claim(c, sim);
        r.simulated = fmt_num(sim) + (c.unit.empty() ? "" : " " + c.unit);
        r.delta = std::isinf(res.delta_pct) ? fmt_num(res.delta_pct) : fmt::format("{:+.1f}", res.delta_pct);
        r.status = to_string(res.status);
        if (!c.known_gap.empty() && res.status == ClaimStatus::PASS)
          r.status = "pass (known_gap set: remove it)";
        if (std::isfinite(res.delta_pct))
          deltas.push_back(std::fabs(res.delta_pct));
        (res.status == ClaimStatus::PASS ? n_pass : res.status == ClaimStatus::FAIL ? n_fail : n_gap)++;
      } catch (const std::exception& e) {
        r.simulated = "-";
        r.delta = "-";
        std::string why = one_line(e.what());
        for (const auto& [label, w] : failed)
          why += "; variant '" + label + "' failed: " + w;
        r.status = "FAIL (" + why + ")";
        ++n_fail;
      }
      rows.push_back(std::move(r));
    }
  }
  scratch.reset();

  // The summary line, --quiet included (what a CI log needs); last in the text table, first above the Markdown one.
  double mean = 0, mx = 0;
  for (double d : deltas) {
    mean += d;
    mx = std::max(mx, d);
  }
  if (!deltas.empty())
    mean /= static_cast<double>(deltas.size());
  const std::string summary = fmt::format(
      "{} claims: {} pass, {} known gap, {} fail; |delta| over all claims (gaps included) "
      "mean {:.1f}%, max {:.1f}% (GB = 1e9 B, GiB = 2^30 B)\n",
      rows.size(), n_pass, n_gap, n_fail, mean, mx);
  // --quiet: the failing claims only (and the summary line below).
  const auto shown = [quiet](const Row& r) { return !quiet || r.status.rfind("FAIL", 0) == 0; };
  if (markdown) {
    // A '|' inside a cell would end it.
    const auto cell = [](const std::string& t) {
      std::string out;
      for (char ch : t)
        out += ch == '|' ? std::string("\\|") : std::string(1, ch);
      return out;
    };
    std::cout << summary << "\n| claim | reference | simulated | delta % | tolerance | status | source |\n"
              << "|---|---|---|---|---|---|---|\n";
    for (const auto& r : rows)
      if (shown(r))
        std::cout << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", cell(r.claim), cell(r.reference),
                                 cell(r.simulated), cell(r.delta), cell(r.tolerance), cell(r.status), cell(r.source));
    return n_fail == 0 ? 0 : 1;
  }
  if (std::any_of(rows.begin(), rows.end(), shown)) {
    std::size_t wc = 5, wr = 9, ws = 9, wd = 7, wt = 9, wst = 6;
    for (const auto& r : rows) {
      wc = std::max(wc, r.claim.size());
      wr = std::max(wr, r.reference.size());
      ws = std::max(ws, r.simulated.size());
      wd = std::max(wd, r.delta.size());
      wt = std::max(wt, r.tolerance.size());
      wst = std::max(wst, std::min<std::size_t>(r.status.size(), 6));
    }
    std::cout << fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n", "claim", wc, "reference", wr,
                             "simulated", ws, "delta %", wd, "tolerance", wt, "status", wst, "source");
    for (const auto& r : rows)
      if (shown(r))
        std::cout << fmt::format("{:<{}}  {:>{}}  {:>{}}  {:>{}}  {:>{}}  {:<{}}  {}\n", r.claim, wc, r.reference, wr,
                                 r.simulated, ws, r.delta, wd, r.tolerance, wt, r.status, wst, r.source);
  }
  std::cout << summary;
  return n_fail == 0 ? 0 : 1;
}

} // namespace zerosim::cli
