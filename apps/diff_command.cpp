// `zerosim diff A B` (issue 5): what changed between two runs or scenarios and how much it moved step time and peak
// memory. A and B are run directories written by `zerosim run` (result.json, or summary.json + one folder per
// variant) or scenario files, simulated first into a temporary directory the way `zerosim run` does
// (apps/sim_child.hpp); or two sweep directories written by `zerosim sweep` (sweep.json), compared point by point.
// Comparison and report: analysis/run_diff.hpp.
#include "analysis/run_diff.hpp"
#include "analysis/sweep.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/sim_child.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

const char* kDiffUsage =
    "usage: zerosim diff RUN_A RUN_B (each a `zerosim run` output directory or a scenario file) | zerosim diff "
    "SWEEP_A SWEEP_B (two `zerosim sweep` output directories)";

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw Error("diff: " + p.string() + ": cannot read");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// One variant of a side: its result.json text, and its folder relative to the run directory as summary.json records
/// it ("" when there is none: a bare result.json, or a scenario file simulated into a temporary directory).
struct Entry {
  std::string text;
  std::string dir;
};

/// Label ("" for an unlabelled single run) -> its variant, in label order.
using Results = std::map<std::string, Entry>;

std::string label_in(const std::string& text, const fs::path& p) {
  try {
    const auto j = nlohmann::json::parse(text);
    const auto it = j.find("variant");
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  } catch (const nlohmann::json::exception& e) {
    throw Error("diff: " + p.string() + ": malformed JSON: " + e.what());
  }
}

Results load_run_dir(const fs::path& dir) {
  Results r;
  // summary.json lists the variants of the run that wrote the directory last (a single run: dir "."); files left
  // by an earlier run into the same directory are not part of it. A bare result.json (no summary.json) is a
  // single run too.
  if (!fs::is_regular_file(dir / "summary.json") && fs::is_regular_file(dir / "result.json")) {
    const std::string t = read_text(dir / "result.json");
    r[label_in(t, dir / "result.json")] = Entry{t, ""};
    return r;
  }
  const fs::path sj = dir / "summary.json";
  if (!fs::is_regular_file(sj))
    throw Error("diff: " + dir.string() + ": not a run directory (no result.json or summary.json)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text(sj));
  } catch (const nlohmann::json::exception& e) {
    throw Error("diff: " + sj.string() + ": malformed JSON: " + e.what());
  }
  const auto vs = j.find("variants");
  if (!j.is_object() || vs == j.end() || !vs->is_array())
    throw Error("diff: " + sj.string() + ": malformed JSON: no \"variants\" array");
  for (const auto& v : *vs) {
    if (!v.is_object() || !v.contains("dir") || !v["dir"].is_string())
      throw Error("diff: " + sj.string() + ": malformed JSON: a variant without a \"dir\"");
    const fs::path rp = dir / v["dir"].get<std::string>() / "result.json";
    if (!fs::is_regular_file(rp))
      throw Error("diff: " + rp.string() + ": missing (run with outputs.result_json: true)");
    const std::string t = read_text(rp);
    r[label_in(t, rp)] = Entry{t, v["dir"].get<std::string>()};
  }
  if (r.empty())
    throw Error("diff: " + sj.string() + ": the run has no finished variant");
  return r;
}

/// Simulates every variant of the scenario file into a private temporary directory (result.json only; removed on
/// return and on Ctrl-C) and loads the results.
Results simulate(const fs::path& file) {
  std::vector<scenario::Variant> variants = scenario::load_scenario(file.string(), {});
  if (variants.empty())
    throw Error("diff: " + file.string() + ": the scenario expands to no variant");
  const TempDir scratch("diff");
  const fs::path& tmp = scratch.path();
  Results r;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    auto& v = variants[i];
    v.scenario.outputs.result_json = true;
    v.scenario.outputs.trace_json = false;
    v.scenario.outputs.memory_csv = false;
    const fs::path d = tmp / ("variant-" + std::to_string(i));
    fs::create_directories(d);
    const SimChild child = start_simulation(v, d.string());
    const std::string msg = read_to_eof(child.fd);
    ::close(child.fd);
    analysis::RunSummary s;
    std::string why;
    if (!collect_simulation(child.pid, msg, s, why))
      throw Error("diff: " + file.string() + ": variant '" + v.label + "' failed: " + why);
    r[v.label] = Entry{read_text(d / "result.json"), ""};
  }
  return r;
}

Results load_side(const std::string& arg) {
  const fs::path p(arg);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw Error("diff: " + arg + ": no such file or directory");
  if (fs::is_directory(p, ec))
    return load_run_dir(p);
  const std::string ext = p.extension().string();
  if (ext == ".yaml" || ext == ".yml")
    return simulate(p);
  if (p.filename() == "result.json")
    return load_run_dir(p.parent_path().empty() ? fs::path(".") : p.parent_path());
  throw Error("diff: " + arg + ": not a run directory or a scenario file (.yaml)");
}

/// True when `label` pairs with a label of `other` as written or by canonical_label.
bool pairs_by_label(const std::string& label, const Results& other) {
  if (other.count(label) != 0)
    return true;
  const std::string c = analysis::canonical_label(label);
  for (const auto& [l, e] : other)
    if (analysis::canonical_label(l) == c)
      return true;
  return false;
}

/// A single run (`one`, named `one_name`) against a comparison of several variants (`many`, named `many_name`) whose
/// labels it does not share: pairs it with the first variant that has its settings (analysis::same_settings), with a
/// note saying so and naming the variants left out; `single_is_a` says which side the single run is. Without such a
/// variant, a one-line error listing the variant folders (or labels, for a scenario file) to pass instead.
analysis::RunDiff pair_by_settings(const Results& one, const std::string& one_name, const Results& many,
                                   const std::string& many_name, bool single_is_a) {
  const auto& [one_label, single] = *one.begin();
  const std::string what_one = "diff: " + one_name;
  const std::string what_many = "diff: " + many_name;
  const auto name_of = [](const std::string& label, const Entry& e) { return e.dir.empty() ? label : e.dir; };
  const auto match = std::find_if(many.begin(), many.end(), [&](const auto& kv) {
    return analysis::same_settings(single.text, kv.second.text, what_one,
                                   what_many + "/" + name_of(kv.first, kv.second));
  });
  const std::string single_text =
      one_label.empty() ? one_name + " is a single run" : one_name + " is one variant (" + one_label + ")";
  if (match == many.end()) {
    std::string names;
    for (const auto& [label, e] : many)
      names += (names.empty() ? "" : ", ") + name_of(label, e);
    const auto& [first_label, first] = *many.begin();
    const bool folders = !first.dir.empty();
    const std::string example = (fs::path(many_name) / name_of(first_label, first)).string();
    throw Error("diff: " + single_text + " and " + many_name + " holds " + std::to_string(many.size()) +
                " variants, none with its settings: " +
                (folders ? "pass one variant folder instead, e.g. `zerosim diff " +
                               (single_is_a ? one_name + " " + example : example + " " + one_name) +
                               "` (variants: " + names + ")"
                         : "run " + many_name +
                               " with `zerosim run` and pass one of its variant folders (variants: " + names + ")"));
  }
  analysis::RunDiff d;
  const std::string& a_text = single_is_a ? single.text : match->second.text;
  const std::string& b_text = single_is_a ? match->second.text : single.text;
  d.variants.push_back(
      analysis::diff_results(a_text, b_text, single_is_a ? what_one : what_many, single_is_a ? what_many : what_one));
  std::string others;
  for (const auto& [label, e] : many)
    if (label != match->first)
      others += (others.empty() ? "" : ", ") + name_of(label, e);
  const std::string side = single_is_a ? "B" : "A";
  d.notes.push_back(single_text + ": compared with " + side + "'s variant " + match->first +
                    (match->second.dir.empty() ? std::string() : " (folder " + match->second.dir + ")") +
                    ", the one with the same settings" +
                    (others.empty() ? std::string() : "; " + side + "'s other variants are not compared: " + others));
  return d;
}

/// `what` of the scenario a result.json text records: "name" (scenario.name) or "model" (scenario.model.name); ""
/// when absent.
std::string scenario_field(const std::string& text, const std::string& what) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("scenario") || !j["scenario"].is_object())
    return "";
  const auto& s = j["scenario"];
  const nlohmann::json* v =
      what == "model"
          ? (s.contains("model") && s["model"].is_object() && s["model"].contains("name") ? &s["model"]["name"]
                                                                                          : nullptr)
          : (s.contains("name") ? &s["name"] : nullptr);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

/// The one-line error for two comparisons that pair no variant: both sides' variants (folders when there are), what
/// else differs (scenario name, model), and what to pass instead.
Error nothing_paired(const Results& a, const std::string& a_name, const Results& b, const std::string& b_name) {
  const auto names = [](const Results& r) {
    std::string s;
    for (const auto& [label, e] : r)
      s += (s.empty() ? "" : ", ") + (e.dir.empty() ? (label.empty() ? std::string("(unlabelled)") : label) : e.dir);
    return s;
  };
  const std::string& ta = a.begin()->second.text;
  const std::string& tb = b.begin()->second.text;
  std::string differ;
  for (const char* what : {"name", "model"}) {
    const std::string x = scenario_field(ta, what);
    const std::string y = scenario_field(tb, what);
    if (x != y)
      differ += std::string(differ.empty() ? "" : ", ") + (std::string(what) == "name" ? "scenario '" : "model ") + x +
                (std::string(what) == "name" ? "'" : "") + " vs " + (std::string(what) == "name" ? "'" : "") + y +
                (std::string(what) == "name" ? "'" : "");
  }
  return Error("diff: no variant of " + a_name + " (" + names(a) + ") pairs with one of " + b_name + " (" + names(b) +
               "): variants pair by the keys they set" + (differ.empty() ? "" : "; the runs also differ in " + differ) +
               "; pass one variant folder of each to compare two of them");
}

/// The sweep.json that `arg` names, when it is a sweep: a directory holding a sweep's outputs (sweep.json or its
/// journal.jsonl: analysis::holds_sweep_outputs), or a file named sweep.json. Empty otherwise.
fs::path sweep_json_of(const std::string& arg) {
  const fs::path p(arg);
  std::error_code ec;
  if (fs::is_directory(p, ec))
    return analysis::holds_sweep_outputs(arg) ? p / "sweep.json" : fs::path();
  return p.filename() == "sweep.json" && fs::is_regular_file(p, ec) ? p : fs::path();
}

/// What a side that is not a sweep is, for the error that pairs it with one.
std::string not_a_sweep(const std::string& arg) {
  const fs::path p(arg);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw Error("diff: " + arg + ": no such file or directory");
  if (fs::is_directory(p, ec))
    return fs::is_regular_file(p / "summary.json", ec) || fs::is_regular_file(p / "result.json", ec)
               ? "a run directory"
               : "a directory without sweep.json";
  const std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml" ? "a scenario file" : "not a sweep";
}

/// The sweep table in `path` (a sweep.json). Throws Error naming the file when it is missing (an interrupted sweep
/// has only its journal) or malformed.
analysis::SweepTable load_sweep(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error("diff: " + path.string() +
                ": missing (an unfinished sweep: run the same `zerosim sweep` command again to finish it)");
  try {
    return analysis::sweep_from_json(read_text(path));
  } catch (const Error& e) {
    // sweep_from_json says "malformed sweep.json: ..."; the path says which one.
    std::string what = e.what();
    const std::string prefix = "malformed sweep.json: ";
    if (what.rfind(prefix, 0) == 0)
      what = what.substr(prefix.size());
    throw Error("diff: " + path.string() + ": malformed sweep.json: " + what);
  }
}

/// `zerosim diff SWEEP_A SWEEP_B`: the points of two sweeps compared. Two sweeps of which no point pairs are an
/// error (as two comparisons of which no variant pairs), not an empty diff.
int compare_sweeps(const std::string& name_a, const fs::path& json_a, const std::string& name_b,
                   const fs::path& json_b) {
  const analysis::SweepTable a = load_sweep(json_a);
  const analysis::SweepTable b = load_sweep(json_b);
  const analysis::SweepDiff d = analysis::diff_sweeps(a, b);
  if (d.points.empty()) {
    const auto what = [](const analysis::SweepTable& t) {
      return fmt::format("{} point{}, axes {}", t.rows.size(), t.rows.size() == 1 ? "" : "s",
                         t.axis_keys.empty() ? std::string("none") : fmt::format("{}", fmt::join(t.axis_keys, ", ")));
    };
    throw Error("diff: no point of " + name_a + " (" + what(a) + ") pairs with one of " + name_b + " (" + what(b) +
                "): points pair by the values of their axes");
  }
  std::cout << analysis::format_sweep_diff(d, name_a, name_b);
  std::cout.flush();
  return 0;
}

} // namespace

int diff_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim diff options");
  visible.add_options()("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "runs", "diff", kDiffUsage, vm))
    return 0;
  const std::vector<std::string> runs =
      vm.count("runs") ? vm["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (runs.size() != 2)
    throw UsageError("diff: expected two runs, got " + std::to_string(runs.size()) + " (" + kDiffUsage + ")");
  try {
    // Two sweeps compare point by point; a sweep and a run (or scenario file) have nothing to pair.
    const fs::path sweep_a = sweep_json_of(runs[0]);
    const fs::path sweep_b = sweep_json_of(runs[1]);
    if (!sweep_a.empty() && !sweep_b.empty())
      return compare_sweeps(runs[0], sweep_a, runs[1], sweep_b);
    if (!sweep_a.empty() || !sweep_b.empty()) {
      const std::string& sweep = sweep_a.empty() ? runs[1] : runs[0];
      const std::string& other = sweep_a.empty() ? runs[0] : runs[1];
      throw Error("diff: " + sweep + " is a sweep (sweep.json) and " + other + " is " + not_a_sweep(other) +
                  ": compare two sweeps, or two runs");
    }
    const Results a = load_side(runs[0]);
    const Results b = load_side(runs[1]);
    analysis::RunDiff d;
    if (a.size() == 1 && b.size() == 1) {
      d.variants.push_back(analysis::diff_results(a.begin()->second.text, b.begin()->second.text, "diff: " + runs[0],
                                                  "diff: " + runs[1]));
    } else if (a.size() == 1 && !pairs_by_label(a.begin()->first, b)) {
      // A single run against a comparison: its label ("" for a plain run) names no variant; its settings may.
      d = pair_by_settings(a, runs[0], b, runs[1], true);
    } else if (b.size() == 1 && !pairs_by_label(b.begin()->first, a)) {
      d = pair_by_settings(b, runs[1], a, runs[0], false);
    } else {
      // Pair labels as written, then what is left by canonical_label (a compared section "zero={stage: 0}" meets
      // the key compare "zero.stage=0").
      std::map<std::string, std::string> b_canonical; // canonical label -> B label, for B labels not in A
      for (const auto& [label, text] : b)
        if (a.count(label) == 0)
          b_canonical.emplace(analysis::canonical_label(label), label);
      std::set<std::string> b_paired;
      for (const auto& [label, text] : a) {
        auto it = b.find(label);
        if (it == b.end()) {
          const auto c = b_canonical.find(analysis::canonical_label(label));
          if (c != b_canonical.end() && b_paired.count(c->second) == 0)
            it = b.find(c->second);
        }
        if (it == b.end()) {
          d.only_a.push_back(label);
          continue;
        }
        b_paired.insert(it->first);
        d.variants.push_back(
            analysis::diff_results(text.text, it->second.text, "diff: " + runs[0], "diff: " + runs[1]));
      }
      for (const auto& [label, text] : b)
        if (b_paired.count(label) == 0)
          d.only_b.push_back(label);
      // Nothing to compare: not a diff with only one-sided lines (and exit 0), but the same kind of error as a
      // single run that matches no variant (pair_by_settings).
      if (d.variants.empty())
        throw nothing_paired(a, runs[0], b, runs[1]);
    }
    std::cout << analysis::format_run_diff(d, runs[0], runs[1]);
    std::cout.flush();
    return 0;
  } catch (const ScenarioError& e) {
    throw Error(std::string("diff: ") + e.what());
  }
}

} // namespace zerosim::cli
