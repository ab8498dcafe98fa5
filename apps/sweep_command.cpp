// `zerosim sweep` and `zerosim merge`: a parameter sweep over scenario keys, one forked simulation per point (up to
// --jobs at once), resumable through a journal, sliceable with --shard i/n, and the merge of shard outputs.
// The pure parts (expansion, keys, shards, rows, CSV/JSON, merge) live in analysis/sweep.hpp.
#include "analysis/atomic_file.hpp"
#include "analysis/result_json.hpp"
#include "analysis/sweep.hpp"
#include "analysis/version.hpp"
#include "apps/checked_scenario.hpp"
#include "apps/cli.hpp"
#include "apps/cli_common.hpp"
#include "apps/output_lock.hpp"
#include "apps/sim_child.hpp"
#include "sim/scenario/scenario_loader.hpp"
#include "sim/scenario/units.hpp"
#include "sim/scenario/yaml_text.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>
#include <boost/program_options.hpp>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace zerosim::cli {

namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;

/// Rows of the results table `zerosim sweep` prints; the rest are in sweep.csv.
constexpr std::size_t kConsoleRows = 50;

const char* kSweepUsage =
    "usage: zerosim sweep SCENARIO.yaml [--axis key=v1,v2,...]... [--zip key=v1,v2,...]... [--set key=value]... "
    "[--out DIR] [--jobs J] [--shard i/n] [--fresh] [--quiet]";
const char* kMergeUsage = "usage: zerosim merge DIR|sweep.json... --out DIR";

using scenario::yaml_text;

int line_of(const YAML::Node& n) { return n.Mark().line >= 0 ? n.Mark().line + 1 : 0; }

/// Reads the axes of a `group` map ({key: [values]}) into `out`.
void read_axes(const std::string& path, const YAML::Node& group, const std::string& where,
               std::vector<analysis::SweepAxis>& out) {
  if (!group.IsMap())
    throw ScenarioError(path, line_of(group), where, "expected a map of dotted keys to lists of values",
                        "e.g. sweep: {grid: {zero.stage: [1, 2, 3]}}");
  for (const auto& kv : group) {
    const std::string key = kv.first.as<std::string>();
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      throw ScenarioError(path, line_of(kv.first), where + "." + key,
                          "expected a non-empty list of values, got '" + yaml_text(kv.second) + "'");
    analysis::SweepAxis a{key, {}, line_of(kv.first)};
    for (const auto& v : kv.second)
      a.values.push_back(yaml_text(v));
    out.push_back(std::move(a));
  }
}

/// A `sweep:` sub-key that is neither grid: nor zip: nor an axis (a misspelt group such as `grd:` or `axes:`): an
/// unknown key, with the nearest of grid and zip when one is close.
ScenarioError unknown_sweep_key(const std::string& path, const YAML::Node& key) {
  const std::string k = key.as<std::string>();
  const std::string mean = scenario::did_you_mean(k, {"grid", "zip"});
  const std::string takes = "sweep: takes grid:, zip: or scenario keys, each with a list of values";
  return ScenarioError(path, line_of(key), "sweep." + k, "unknown key",
                       mean.empty() ? takes : mean + " (" + takes + ")");
}

/// The `sweep:` block of the scenario file: {grid: {...}, zip: {...}} or a plain {key: [values]} map (all grid).
analysis::SweepSpec read_sweep_block(const std::string& path, int& block_line) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ScenarioError(path, e.mark.line >= 0 ? e.mark.line + 1 : 0, "yaml", e.msg);
  }
  analysis::SweepSpec spec;
  block_line = 0;
  if (!root.IsMap())
    return spec;
  const YAML::Node s = root["sweep"];
  if (!s.IsDefined() || s.IsNull())
    return spec;
  block_line = line_of(s);
  if (!s.IsMap())
    throw ScenarioError(path, line_of(s), "sweep", "expected a map with grid: and/or zip:, got '" + yaml_text(s) + "'");
  const bool structured = s["grid"].IsDefined() || s["zip"].IsDefined();
  if (!structured) {
    // An axis takes a list: a map under the block is a group whose name is misspelt, not an axis.
    for (const auto& kv : s)
      if (kv.second.IsMap())
        throw unknown_sweep_key(path, kv.first);
    read_axes(path, s, "sweep", spec.grid);
    return spec;
  }
  for (const auto& kv : s) {
    const std::string k = kv.first.as<std::string>();
    if (k == "grid")
      read_axes(path, kv.second, "sweep.grid", spec.grid);
    else if (k == "zip")
      read_axes(path, kv.second, "sweep.zip", spec.zip);
    else
      throw unknown_sweep_key(path, kv.first);
  }
  return spec;
}

/// "key=v1,v2,..." from --axis / --zip.
analysis::SweepAxis parse_cli_axis(const std::string& opt, const std::string& text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 >= text.size())
    throw ScenarioError("<cli>", 0, opt, "expected key=v1,v2,..., got '" + text + "'");
  analysis::SweepAxis a{text.substr(0, eq), {}, 0};
  // A YAML list as the whole value (`zero.stage=[1,2]`, the sweep: block's spelling) would split into "[1" and "2]".
  if (text[eq + 1] == '[' && text.back() == ']')
    throw ScenarioError("<cli>", 0, opt,
                        "'" + text + "': " + opt + " takes the values without brackets, e.g. " + a.key + "=" +
                            text.substr(eq + 2, text.size() - eq - 3));
  std::stringstream in(text.substr(eq + 1));
  std::string v;
  while (std::getline(in, v, ',')) {
    if (v.empty())
      throw ScenarioError("<cli>", 0, opt, "empty value in '" + text + "' (two commas, or one at the end)");
    a.values.push_back(v);
  }
  if (text.back() == ',')
    throw ScenarioError("<cli>", 0, opt, "empty value in '" + text + "' (two commas, or one at the end)");
  return a;
}

/// The message of a ScenarioError without its "file:line: key: " prefix.
std::string scenario_message(const ScenarioError& e) {
  const std::string w = e.what();
  const std::size_t at = w.find(e.key() + ": ");
  return at == std::string::npos ? w : w.substr(at + e.key().size() + 2);
}

/// The overrides of one point: the --sets, then the axis values (`axis`, "key=value"), then again the --sets that
/// name a key inside a swept one (`--set model.layers=2` with `--axis model=gpt2,llama-2-7b`), which the axis value
/// would otherwise replace.
std::vector<std::string> point_overrides(const std::vector<std::string>& sets, const std::vector<std::string>& axis) {
  std::vector<std::string> out = sets;
  out.insert(out.end(), axis.begin(), axis.end());
  for (const std::string& st : sets)
    for (const std::string& a : axis) {
      const std::string key = a.substr(0, a.find('='));
      if (st.compare(0, key.size() + 1, key + ".") == 0) {
        out.push_back(st);
        break;
      }
    }
  return out;
}

/// True when the overrides `sets` (the base --sets plus one axis value) load together with some value of another
/// axis of `spec` than `key`: the value is then valid in part of the grid.
bool valid_with_another_axis(const std::string& path, const std::vector<std::string>& sets,
                             const analysis::SweepSpec& spec, const std::string& key) {
  for (const auto* group : {&spec.grid, &spec.zip})
    for (const analysis::SweepAxis& other : *group) {
      if (other.key == key)
        continue;
      for (const std::string& w : other.values) {
        std::vector<std::string> s = sets;
        s.push_back(other.key + "=" + w);
        try {
          (void)load_checked_scenario(path, s);
          return true;
        } catch (const ScenarioError&) {
        }
      }
    }
  return false;
}

std::string hms(double s) {
  const long t = static_cast<long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}:{:02}:{:02}", t / 3600, t / 60 % 60, t % 60)
                   : fmt::format("{}:{:02}", t / 60, t % 60);
}

/// The ETA of `total - done` points at the rate of the `simulated` ones so far.
std::string eta_text(std::size_t done, std::size_t total, double elapsed, std::size_t simulated) {
  if (done >= total)
    return "0:00";
  if (simulated == 0)
    return "--:--";
  return hms(elapsed / static_cast<double>(simulated) * static_cast<double>(total - done));
}

/// One progress line on stderr: "\r[#####-----] 12/40  elapsed 0:31  ETA 1:12".
void draw_progress(std::size_t done, std::size_t total, double elapsed, std::size_t simulated) {
  constexpr int kWidth = 30;
  const int fill = total == 0 ? kWidth : static_cast<int>(kWidth * done / total);
  std::cerr << fmt::format("\r[{}{}] {}/{}  elapsed {}  ETA {} ", std::string(fill, '#'),
                           std::string(kWidth - fill, '-'), done, total, hms(elapsed),
                           eta_text(done, total, elapsed, simulated))
            << std::flush;
}

void append_line(const fs::path& file, const std::string& line) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    throw Error(file.string() + ": cannot open the sweep journal: " + std::strerror(errno));
  const std::string data = line + "\n";
  std::size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      ::close(fd);
      throw Error(file.string() + ": cannot write the sweep journal: " + std::strerror(errno));
    }
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// A running point.
struct Running {
  SimChild child;
  std::size_t point = 0; ///< position in the shard's point list
  std::string buffer;
};

/// Removes the sweep pictures `zerosim plot` drew from an earlier sweep.csv in `dir` (sweep-breakdown, -scaling,
/// -memory; png or svg, and their gnuplot scripts): they no longer show the table just written. Returns how many
/// pictures were removed (scripts not counted).
std::size_t remove_stale_sweep_pictures(const fs::path& dir) {
  std::size_t removed = 0;
  for (const char* name : {"sweep-breakdown", "sweep-scaling", "sweep-memory"})
    for (const char* ext : {".png", ".svg", ".gp"}) {
      std::error_code ec;
      const bool gone = fs::remove(dir / (std::string(name) + ext), ec);
      removed += gone && std::string(ext) != ".gp" ? 1 : 0;
    }
  return removed;
}

/// Writes the sweep's table (sweep.json, sweep.csv) into `dir`; when it differs from the table already there, drops
/// the pictures drawn from that one and, unless `quiet`, says so on stderr (an unchanged rerun keeps them).
void write_sweep_table(const fs::path& dir, const analysis::SweepTable& t, const std::vector<std::string>& axis_keys,
                       const std::vector<analysis::SweepRow>& rows, bool quiet) {
  const fs::path json_path = dir / "sweep.json";
  const std::string text = analysis::sweep_json(t);
  std::string before;
  if (std::ifstream in(json_path, std::ios::binary); in)
    before.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  analysis::write_file_atomic(json_path.string(), text);
  analysis::write_file_atomic((dir / "sweep.csv").string(), analysis::sweep_csv(axis_keys, rows));
  if (before == text)
    return;
  if (const std::size_t n = remove_stale_sweep_pictures(dir); n > 0 && !quiet)
    std::cerr << fmt::format(
        "note: removed {} sweep picture{} drawn from the previous sweep.csv; `zerosim plot {}` "
        "draws them from this one\n",
        n, n == 1 ? "" : "s", dir.string());
}

} // namespace

std::vector<analysis::SweepRow> run_points(const std::vector<analysis::SweepPoint>& points,
                                           const std::vector<std::string>& keys,
                                           const std::function<scenario::Variant(std::size_t)>& make, unsigned jobs,
                                           const std::string& journal, Progress progress, std::size_t already_done,
                                           std::size_t total, std::size_t* simulated_out) {
  std::vector<analysis::SweepRow> rows(points.size());
  std::map<int, Running> running; // by fd
  std::size_t next = 0;
  std::size_t finished = 0;
  // Finished points that ran a simulation (the ETA's rate): not an invalid point, nor one whose scenario failed to
  // load, which take no time.
  std::size_t simulated = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto elapsed = [&t0]() { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool bar = progress == Progress::BAR;
  double last_line = 0; // elapsed() at the last plain progress line
  const auto record = [&](std::size_t i, analysis::SweepRow r, bool ran) {
    r.build = analysis::build_id();
    if (!journal.empty())
      append_line(journal, analysis::journal_record(r));
    simulated += ran ? 1 : 0;
    rows[i] = std::move(r);
    ++finished;
    if (bar)
      draw_progress(already_done + finished, total, elapsed(), simulated);
    const double now = elapsed();
    if (progress == Progress::LINES && (now - last_line >= progress_line_seconds() || finished == points.size())) {
      last_line = now;
      std::cerr << fmt::format("sweep: {}/{} points done, elapsed {}, ETA {}\n", already_done + finished, total,
                               hms(now), eta_text(already_done + finished, total, now, simulated))
                << std::flush;
    }
  };
  if (bar)
    draw_progress(already_done, total, 0, 0);
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && running.size() < jobs) {
      const std::size_t i = next++;
      scenario::Variant v;
      try {
        v = make(i);
      } catch (const ScenarioError& e) {
        // The loader rejects this combination of values (offload_param=cpu with stage 1): an invalid point, never
        // simulated, not a failed simulation.
        record(i, analysis::row_from_invalid(points[i], keys[i], e.what()), false);
        continue;
      } catch (const std::exception& e) {
        record(i, analysis::row_from_error(points[i], keys[i], e.what()), false);
        continue;
      }
      v.label = points[i].label();
      v.scenario.outputs.result_json = false;
      v.scenario.outputs.trace_json = false;
      v.scenario.outputs.memory_csv = false;
      const SimChild c = start_simulation(v, ".");
      running[c.fd] = Running{c, i, {}};
    }
    if (running.empty())
      continue;
    std::vector<pollfd> fds;
    for (const auto& [fd, r] : running)
      fds.push_back(pollfd{fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), bar ? 1000 : -1) < 0) {
      if (errno == EINTR)
        continue;
      throw Error(std::string("sweep: poll failed: ") + std::strerror(errno));
    }
    for (const pollfd& p : fds) {
      if (p.revents == 0)
        continue;
      Running& r = running.at(p.fd);
      char buf[65536];
      const ssize_t n = ::read(p.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR)
        continue;
      if (n > 0) {
        r.buffer.append(buf, static_cast<std::size_t>(n));
        continue;
      }
      ::close(p.fd);
      analysis::RunSummary s;
      std::string why;
      const std::size_t i = r.point;
      const bool ok = collect_simulation(r.child.pid, r.buffer, s, why);
      running.erase(p.fd);
      record(i,
             ok ? analysis::row_from_summary(points[i], keys[i], s) : analysis::row_from_error(points[i], keys[i], why),
             true);
    }
    if (bar)
      draw_progress(already_done + finished, total, elapsed(), simulated);
  }
  if (bar)
    std::cerr << "\n";
  if (simulated_out != nullptr)
    *simulated_out = simulated;
  return rows;
}

int sweep_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim sweep options");
  visible.add_options() //
      ("axis", po::value<std::vector<std::string>>()->composing(),
       "grid axis key=v1,v2,... (repeatable; replaces the file's sweep: block)") //
      ("zip", po::value<std::vector<std::string>>()->composing(),
       "zipped axis key=v1,v2,... (repeatable; zipped axes advance together)") //
      ("set", po::value<std::vector<std::string>>()->composing(), "override a scenario key for every point") //
      ("out", po::value<std::string>(), "output directory (default: out/<scenario name>-sweep)") //
      ("jobs,j", po::value<int>(), "points simulated at once (default: number of cores)") //
      ("shard", po::value<std::string>(), "run only slice i of n (0-based), e.g. --shard 3/16") //
      ("fresh", po::bool_switch(),
       "start over: delete the journal (every finished point, matching or not) and simulate every point again") //
      ("quiet,q", po::bool_switch(), "no progress bar and no final line") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "scenario", "sweep", kSweepUsage, vm))
    return 0;
  (void)progress_line_seconds(); // a bad ZEROSIM_PROGRESS_SECONDS is an error now, not when the first line is due
  if (!vm.count("scenario") || vm["scenario"].as<std::vector<std::string>>().size() != 1)
    throw UsageError(std::string("sweep: expected one scenario file (") + kSweepUsage + ")");
  const std::string path = vm["scenario"].as<std::vector<std::string>>().front();
  // `--set 'k = v'` reads as k=v (scenario::normalize_override), here as in the loader, so that the checks below
  // and the sweep's point keys see the key itself.
  std::vector<std::string> sets;
  if (vm.count("set"))
    for (const std::string& st : vm["set"].as<std::vector<std::string>>())
      sets.push_back(scenario::normalize_override(st));
  check_distinct_sets(sets);
  if (vm.count("jobs") && vm["jobs"].as<int>() < 1)
    throw UsageError("sweep: --jobs must be at least 1");
  const unsigned jobs = vm.count("jobs") ? static_cast<unsigned>(vm["jobs"].as<int>())
                                         : std::max(1u, std::thread::hardware_concurrency());
  analysis::Shard shard;
  if (vm.count("shard")) {
    try {
      shard = analysis::parse_shard(vm["shard"].as<std::string>());
    } catch (const Error& e) {
      throw UsageError(std::string("sweep: ") + e.what());
    }
  }

  // The base scenario must load on its own (every input error surfaces before any output exists).
  const std::vector<scenario::Variant> base = scenario::load_scenario(path, sets);
  if (base.size() != 1) {
    // Name the compare: line (the loader has already checked the file parses).
    const YAML::Node cmp = YAML::LoadFile(path)["compare"];
    const std::string key = base.front().scenario.compare_key;
    throw ScenarioError(path, cmp ? line_of(cmp) : 0, "compare",
                        "this scenario compares " + key + " and a sweep cannot also compare",
                        "add --set compare=null and sweep " + key + " as an axis, e.g. --axis " + key + "=...");
  }
  int block_line = 0;
  analysis::SweepSpec spec = read_sweep_block(path, block_line);
  if (vm.count("axis") || vm.count("zip")) {
    spec = {};
    block_line = 0; // the axes come from the command line: errors name <cli>, not the file's sweep: block
    if (vm.count("axis"))
      for (const auto& a : vm["axis"].as<std::vector<std::string>>())
        spec.grid.push_back(parse_cli_axis("--axis", a));
    if (vm.count("zip"))
      for (const auto& a : vm["zip"].as<std::vector<std::string>>())
        spec.zip.push_back(parse_cli_axis("--zip", a));
  }
  std::vector<analysis::SweepPoint> points;
  try {
    points = analysis::expand_sweep(spec);
  } catch (const ScenarioError&) {
    throw;
  } catch (const Error& e) {
    // Point at the axis the message names (sweep.KEY: / sweep.zip.KEY:) when the file gives its line.
    const std::string what = e.what();
    int line = block_line;
    for (const auto* group : {&spec.grid, &spec.zip})
      for (const analysis::SweepAxis& a : *group)
        if (a.line > 0 &&
            (what.rfind("sweep." + a.key + ":", 0) == 0 || what.rfind("sweep.zip." + a.key + ":", 0) == 0))
          line = a.line;
    throw ScenarioError(block_line > 0 ? path : "<cli>", line, "sweep", what);
  }
  // Every axis value must be a valid override on its own: a typo is an input error (exit 2), not N error rows.
  std::vector<std::string> axis_keys;
  for (const auto* group : {&spec.grid, &spec.zip})
    for (const analysis::SweepAxis& a : *group) {
      axis_keys.push_back(a.key);
      // A grid axis must not repeat a value; a zip axis may (`--zip hidden=2048,2048 --zip layers=24,48`), as long as
      // no two zipped points are equal on every zip axis.
      const bool zipped = group == &spec.zip;
      for (std::size_t i = 0; i < a.values.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
          if (a.values[i] == a.values[j] &&
              (!zipped || std::all_of(spec.zip.begin(), spec.zip.end(), [i, j](const analysis::SweepAxis& z) {
                return i < z.values.size() && j < z.values.size() && z.values[i] == z.values[j];
              })))
            throw ScenarioError(a.line > 0 ? path : "<cli>", a.line, "sweep." + a.key,
                                "duplicate value '" + a.values[i] + "' (each point would be simulated twice)");
      for (const std::string& v : a.values) {
        const std::vector<std::string> s = point_overrides(sets, {a.key + "=" + v});
        try {
          (void)load_checked_scenario(path, s);
        } catch (const ScenarioError& e) {
          // A value valid only together with another axis' value (offload_param=cpu with stage=3 when the base is
          // stage 2) is no typo: its invalid points become rows with status invalid (not simulated). Nor is one the
          // loader blames on another key (cluster.nodes=3 against a fixed training.train_batch_size 256 that 24 GPUs
          // do not divide): the key accepts the value, the combination is what fails.
          const bool about_axis = e.key() == a.key || e.key().rfind(a.key + ".", 0) == 0 ||
                                  a.key.rfind(e.key() + ".", 0) == 0; // cluster.gpu vs cluster.gpu.memory
          if (about_axis && !valid_with_another_axis(path, s, spec, a.key)) {
            // An unknown axis key is the key's fault, not this value's.
            const std::string m = scenario_message(e);
            const bool key_unknown = e.key() == a.key && m.rfind("unknown key", 0) == 0;
            throw ScenarioError(a.line > 0 ? path : "<cli>", a.line, "sweep." + a.key,
                                key_unknown ? m : "value '" + v + "': " + m);
          }
        }
      }
    }

  // The sweep: block is read from the file (read_sweep_block); a --set of it would be ignored.
  for (const std::string& st : sets)
    if (st.rfind("sweep=", 0) == 0 || st.rfind("sweep.", 0) == 0)
      throw UsageError("sweep: --set " + st.substr(0, st.find('=')) +
                       ": the sweep: block cannot be set; --axis and --zip replace it");
  // A key both fixed by --set and swept: the axis would silently win.
  for (const std::string& st : sets) {
    const std::string k = st.substr(0, st.find('='));
    if (std::find(axis_keys.begin(), axis_keys.end(), k) != axis_keys.end())
      throw ScenarioError("<cli>", 0, k, "is set with --set and also swept; the axis values would replace the --set",
                          "drop the --set, or the axis");
  }

  // A grid whose every point is a combination the loader rejects has nothing to simulate: an input error, before
  // anything is written (the first point's reason). Stops at the first valid point, so a usual grid loads one.
  if (!points.empty()) {
    std::optional<ScenarioError> first;
    bool any_valid = false;
    for (const auto& p : points) {
      try {
        (void)load_checked_scenario(path, point_overrides(sets, p.as_set_args()));
        any_valid = true;
        break;
      } catch (const ScenarioError& e) {
        if (!first)
          first = e;
      }
    }
    if (!any_valid && first)
      throw ScenarioError(first->file(), first->line(), first->key(),
                          scenario_message(*first) + " (at every point of the sweep: nothing to simulate)");
  }

  fs::path out_dir = vm.count("out") ? fs::path(vm["out"].as<std::string>())
                                     : fs::path("out") / (base.front().scenario.name + "-sweep");
  if (out_dir.empty())
    throw UsageError("sweep: --out: empty path");
  check_out_not_root("sweep", "--out", out_dir);
  std::error_code ec;
  // A run's directory (zerosim run: summary.json, no sweep files): the sweep's files would sit among the run's.
  if (fs::is_regular_file(out_dir / "summary.json", ec) && !analysis::holds_sweep_outputs(out_dir.string()))
    throw Error(out_dir.string() + ": holds a run's outputs (summary.json); choose another --out");
  fs::create_directories(out_dir, ec);
  if (ec)
    throw Error(out_dir.string() + ": cannot create the output directory: " + ec.message());
  const OutputLock lock(out_dir); // one sweep at a time per directory: two would interleave the journal
  const fs::path journal = out_dir / "journal.jsonl";
  if (vm["fresh"].as<bool>())
    fs::remove(journal, ec);

  std::map<std::string, analysis::SweepRow> done;
  if (fs::exists(journal)) {
    const std::string text = slurp(journal);
    std::vector<std::size_t> bad;
    for (auto& r : analysis::parse_journal(text, &bad))
      done[r.key] = std::move(r);
    // Lines that are no journal record (an edit, another program's output) are skipped, and their points simulated
    // again if they were any; the resume goes on, but the user hears of it. A torn last line is expected: silent.
    if (!bad.empty()) {
      std::string lines;
      for (std::size_t k = 0; k < bad.size() && k < 5; ++k)
        lines += (k == 0 ? "" : ", ") + std::to_string(bad[k]);
      if (bad.size() > 5)
        lines += ", ...";
      const bool one = bad.size() == 1;
      std::cerr << fmt::format(
          "zerosim: warning: {}: skipped {} line{} that {} no sweep journal record{} (line{} "
          "{}); {} in the file\n",
          journal.string(), bad.size(), one ? "" : "s", one ? "is" : "are", one ? "" : "s", one ? "" : "s", lines,
          one ? "it stays" : "they stay");
    }
    // A run killed in the middle of an append leaves a torn last line: cut it, so the next record starts a line.
    if (!text.empty() && text.back() != '\n') {
      const std::size_t keep = text.rfind('\n');
      fs::resize_file(journal, keep == std::string::npos ? 0 : keep + 1, ec);
      if (ec)
        throw Error(journal.string() + ": cannot cut the torn last line of the sweep journal: " + ec.message());
    }
  }

  // A point's key covers what decides its result: its overrides, the scenario file (as YAML reads it: a comment or
  // a re-indentation changes nothing) without its sweep block, and the
  // point's resolved scenario (presets, ds_config.json and config.json included). A journal row of an edited
  // scenario or preset then matches no point and is simulated again instead of resumed with stale numbers. Not the
  // paths the files were read from: the same sweep run from another directory, by an absolute path or after a move
  // resumes. (An invalid point has no resolved scenario: its overrides and the file's text identify it.)
  const std::string shared = analysis::without_sweep_block(analysis::canonical_yaml_text(slurp(path)));
  const auto key_of = [&](const analysis::SweepPoint& p) {
    std::string resolved;
    try {
      resolved = analysis::simulated_scenario_text(
          scenario::load_scenario(path, point_overrides(sets, p.as_set_args())).front().scenario);
    } catch (const ScenarioError&) {
    }
    return analysis::point_key(p, sets, shared + "\n" + resolved);
  };
  std::set<std::string> all_keys; // every shard's: a row of another shard in this journal is not stale
  std::vector<std::string> keys(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    keys[i] = key_of(points[i]);
    all_keys.insert(keys[i]);
  }
  std::size_t stale = 0;
  for (const auto& [k, r] : done)
    stale += all_keys.count(k) == 0 ? 1 : 0;

  std::vector<analysis::SweepRow> rows; // this shard's rows, by point index
  std::vector<analysis::SweepPoint> to_run;
  std::vector<std::string> to_run_keys;
  std::vector<std::size_t> slot; // rows[] position of each to_run point
  // A journal row another zerosim build computed (a `git pull` and a rebuild since, or rows written before build ids)
  // is simulated again: two builds may model the point differently, and one table must come from one build.
  const std::string this_build = analysis::build_id();
  std::size_t other_build = 0;
  std::set<std::string> other_builds;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    if (!analysis::in_shard(p.index, shard))
      continue;
    const std::string& key = keys[i];
    auto it = done.find(key);
    if (it != done.end() && it->second.build != this_build) {
      ++other_build;
      other_builds.insert(it->second.build);
      it = done.end();
    }
    if (it != done.end()) {
      analysis::SweepRow r = it->second;
      r.index = p.index;
      r.inputs = p.overrides;
      rows.push_back(std::move(r));
    } else {
      slot.push_back(rows.size());
      rows.emplace_back();
      to_run.push_back(p);
      to_run_keys.push_back(key);
    }
  }
  const std::size_t resumed = rows.size() - to_run.size();
  const bool quiet = vm["quiet"].as<bool>();
  if (stale > 0)
    std::cerr << fmt::format(
        "sweep: {} finished point{} in {} no longer match{} a point of this sweep (the scenario, a preset it uses, a "
        "--set or an axis changed): not reused, kept in the journal for a sweep that matches {} again (--fresh "
        "starts over, deleting every finished point)\n",
        stale, stale == 1 ? "" : "s", journal.string(), stale == 1 ? "es" : "", stale == 1 ? "it" : "them");
  if (other_build > 0) {
    std::vector<std::string> names;
    for (const std::string& b : other_builds)
      names.push_back(b.empty() ? std::string("an unrecorded build (a zerosim before build ids)")
                                : analysis::build_name(b));
    std::cerr << fmt::format("sweep: {} point{} re-simulated: computed by {}, this is build {}\n", other_build,
                             other_build == 1 ? "" : "s", fmt::join(names, " and "), this_build);
  }
  // Outside git a build is "unknown-<version>": rows of two builds of one release cannot be told apart, and are taken
  // as this one's.
  if (resumed > 0 && this_build.rfind("unknown-", 0) == 0 && !quiet)
    std::cerr << fmt::format(
        "note: this zerosim was built outside git (build {}), so the {} resumed point{} "
        "cannot be checked to come from this build of the release; if its sources changed since, --fresh "
        "simulates {} again\n",
        this_build, resumed, resumed == 1 ? "" : "s", resumed == 1 ? "it" : "them");
  const bool tty = ::isatty(2) != 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto make = [&](std::size_t i) {
    return std::move(load_checked_scenario(path, point_overrides(sets, to_run[i].as_set_args())).front());
  };
  const std::string resume_note = "zerosim: interrupted; the finished points are in " + journal.string() +
                                  ": run the same command again to simulate only the rest\n";
  set_interrupt_message(resume_note, resume_note);
  // The journal exists from the start, so the note names a file that is there even when Ctrl-C comes before the
  // first point finishes (it then holds none).
  std::ofstream(journal, std::ios::app).flush();
  std::size_t simulated = 0; // of to_run: the points that ran a simulation
  auto ran =
      run_points(to_run, to_run_keys, make, jobs, journal.string(),
                 quiet ? Progress::NONE : (tty ? Progress::BAR : Progress::LINES), resumed, rows.size(), &simulated);
  for (std::size_t k = 0; k < ran.size(); ++k)
    rows[slot[k]] = std::move(ran[k]);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  analysis::SweepTable t;
  t.scenario = base.front().scenario.name;
  t.axis_keys = axis_keys;
  t.points_total = points.size();
  t.shard = shard;
  t.sets = sets;
  std::sort(t.sets.begin(), t.sets.end());
  t.fingerprint = analysis::sweep_fingerprint(analysis::canonical_yaml_text(slurp(path)), spec);
  t.zerosim_build = this_build;
  t.zerosim_version = analysis::version();
  t.rows = rows;
  // simulated + resumed + invalid + unloaded = the shard's points; failed (status error) counts simulated, resumed
  // and unloaded points (an error row whose scenario failed to load: never simulated). An invalid point (a
  // combination the loader rejects) is neither simulated nor failed.
  const auto [failed, invalid] = analysis::count_failures(rows);
  std::size_t invalid_new = 0; // of this run's points (slot), the rest came from the journal
  for (const std::size_t k : slot)
    invalid_new += rows[k].invalid ? 1 : 0;
  const std::size_t invalid_resumed = invalid - invalid_new;
  const std::size_t unloaded = to_run.size() - invalid_new - simulated;
  write_sweep_table(out_dir, t, axis_keys, rows, quiet);
  // Jobs that could run at once: never more than the points this run simulated (at least 1).
  const std::size_t used_jobs = std::max<std::size_t>(1, std::min<std::size_t>(jobs, to_run.size()));
  if (!quiet) {
    std::cerr << fmt::format("sweep: {} point{}{}: {} simulated, {} resumed, {} failed{}{}, {:.1f} s with {} job{}\n",
                             rows.size(), rows.size() == 1 ? "" : "s",
                             shard.count > 1
                                 ? fmt::format(" (shard {}/{} of {})", shard.index, shard.count, points.size())
                                 : std::string(),
                             simulated, resumed - invalid_resumed, failed,
                             unloaded > 0 ? fmt::format(" ({} not simulated: the scenario did not load)", unloaded)
                                          : std::string(),
                             invalid > 0 ? fmt::format(", {} invalid combination{} (not simulated)", invalid,
                                                       invalid == 1 ? "" : "s")
                                         : std::string(),
                             secs, used_jobs, used_jobs == 1 ? "" : "s");
    if (axis_keys.empty())
      std::cerr << "note: no axis in the scenario's sweep: block (if any) and no --axis/--zip: the one point is the "
                   "scenario itself (e.g. --axis training.micro_batch=1,2,4)\n";
    std::cout << analysis::sweep_console_table(axis_keys, rows, kConsoleRows);
    std::cout << "outputs in " << out_dir.string() << " (sweep.csv, sweep.json, journal.jsonl)\n";
  }
  return failed > 0 ? 1 : 0; // invalid points alone are no failure: every valid point ran
}

int merge_command(const std::vector<std::string>& args) {
  po::options_description visible("zerosim merge options");
  visible.add_options()("out", po::value<std::string>(), "output directory of the merged sweep.csv / sweep.json") //
      ("help,h", po::bool_switch(), "show this help");
  po::variables_map vm;
  if (!parse_command_line(args, visible, "input", "merge", kMergeUsage, vm))
    return 0;
  if (!vm.count("input") || !vm.count("out"))
    throw UsageError(std::string("merge: expected shard outputs and --out (") + kMergeUsage + ")");
  std::vector<analysis::SweepTable> parts;
  std::vector<std::string> names; // as given, for messages
  const fs::path out_arg(vm["out"].as<std::string>());
  check_out_not_root("merge", "--out", out_arg);
  for (const auto& in : vm["input"].as<std::vector<std::string>>()) {
    fs::path p(in);
    std::error_code same_ec;
    // Writing the merge into a shard's own directory would make that shard look like the whole sweep.
    if (fs::exists(out_arg, same_ec) && fs::equivalent(fs::is_directory(p) ? p : p.parent_path(), out_arg, same_ec))
      throw UsageError("merge: --out " + out_arg.string() + " is one of the inputs; give a new directory");
    if (fs::is_directory(p))
      p /= "sweep.json";
    if (!fs::exists(p))
      throw Error(p.string() + ": no such sweep output");
    try {
      parts.push_back(analysis::sweep_from_json(slurp(p)));
      names.push_back(in);
    } catch (const Error& e) {
      throw Error(p.string() + ": " + e.what());
    }
  }
  std::vector<std::size_t> missing;
  const analysis::SweepTable t = analysis::merge_sweeps(parts, missing, names);
  const fs::path out_dir(vm["out"].as<std::string>());
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw Error(out_dir.string() + ": cannot create the output directory: " + ec.message());
  write_sweep_table(out_dir, t, t.axis_keys, t.rows, false);
  std::cout << fmt::format("merged {} outputs: {} of {} points", parts.size(), t.rows.size(), t.points_total);
  if (!missing.empty()) {
    std::string first;
    for (std::size_t k = 0; k < missing.size() && k < 10; ++k)
      first += (k ? "," : "") + std::to_string(missing[k]);
    std::cout << fmt::format(", {} missing (first: {})", missing.size(), first);
  }
  std::cout << "\noutputs in " << out_dir.string() << "\n";
  return missing.empty() ? 0 : 1;
}

} // namespace zerosim::cli
