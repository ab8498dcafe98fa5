// `zerosim list`: the shipped presets (models, GPUs, topologies) grouped by kind, and the collective algorithms.
#include "analysis/output_fields.hpp"
#include "apps/cli.hpp"
#include "sim/collectives/collective_registry.hpp"
#include "sim/scenario/key_table.hpp"
#include "sim/scenario/scenario_loader.hpp"

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include <iostream>

namespace zerosim::cli {

int list_command(const std::vector<std::string>& args) {
  namespace po = boost::program_options;
  po::options_description opts("zerosim list options");
  opts.add_options()("help,h", po::bool_switch(),
                     "show this help")("keys", po::bool_switch(),
                                       "print the scenario key reference (Markdown; docs/scenario-reference.md)")(
      "outputs", po::bool_switch(),
      "print the output field reference (Markdown; docs/outputs.md): result.json, summary.json, sweep.json, "
      "memory.csv")("json", po::bool_switch(),
                    "with --outputs: the same table as JSON (fields: file, name, type, unit, stable, meaning)");
  po::variables_map vm;
  try {
    // An empty positional description makes program_options reject stray words ("zerosim list extra").
    po::store(po::command_line_parser(args).options(opts).positional(po::positional_options_description{}).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw UsageError(std::string("list: ") + e.what() + " (usage: zerosim list [--keys | --outputs [--json]])");
  }
  if (vm["help"].as<bool>()) {
    std::cout << "usage: zerosim list [--keys | --outputs [--json]]\n\n" << opts << "\n";
    return 0;
  }
  if (vm["json"].as<bool>() && !vm["outputs"].as<bool>())
    throw UsageError("list: --json needs --outputs (usage: zerosim list [--keys | --outputs [--json]])");
  if (vm["outputs"].as<bool>()) {
    std::cout << (vm["json"].as<bool>() ? analysis::output_fields_json() : analysis::output_fields_markdown());
    return 0;
  }
  if (vm["keys"].as<bool>()) {
    std::cout << scenario::key_reference_markdown();
    return 0;
  }
  const auto presets = scenario::list_presets(); // sorted by kind, then name
  std::string out;
  std::string kind;
  for (const auto& p : presets) {
    if (p.kind != kind) {
      kind = p.kind;
      out += fmt::format("{}{} presets:\n", out.empty() ? "" : "\n", kind);
    }
    out += fmt::format("  {:<24} {}", p.name, p.summary);
    if (!p.source.empty())
      out += fmt::format("  [source: {}]", p.source);
    out += "\n";
  }
  out += fmt::format("{}collective algorithms:\n", out.empty() ? "" : "\n");
  for (const auto& a : collectives::algorithm_registry()) {
    out += fmt::format("  {:<24} {}", a.name, a.description);
    if (a.reference != nullptr && a.reference[0] != '\0')
      out += fmt::format("  [source: {}]", a.reference);
    out += "\n";
  }
  std::cout << out;
  return 0;
}

} // namespace zerosim::cli
