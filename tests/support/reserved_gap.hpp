// Test helper: checks the hatched "reserved, not allocated" band of a memory timeline gnuplot script (zerosim plot,
// zerosim report) against the memory.csv it was drawn from. The band's height at every data row must be reserved -
// allocated of a state memory.csv reaches at that row's time, computed here from the CSV rows alone.
#pragma once

#include <cmath>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace zerosim::test {

/// What check_reserved_gap found.
struct ReservedGapCheck {
  bool band = false; ///< the script has the band (its plot clause and key title)
  int rows = 0; ///< data rows checked
  std::vector<std::string> mismatches; ///< "t=...: band ... GiB, memory.csv ..." for rows that match no state
};

/// Checks the band of `script` (a memory timeline of `rank`) against `memory_csv` (its text, header
/// time_s,rank,device,tag,bytes,total_bytes,reserved_bytes). GiB = 2^30 B; the script prints 6 decimals, so a row
/// matches a state within 2e-6 GiB. The states at time t: the one before t's first CSV row, and the one after each
/// row at t (the script draws a busy stretch by its envelope, which picks states inside one time stamp).
inline ReservedGapCheck check_reserved_gap(const std::string& script, const std::string& memory_csv, int rank) {
  constexpr double kGiB = 1073741824.0;
  ReservedGapCheck out;
  static const std::regex band(R"re(\$mem using 1:(\d+):(\d+) with filledcurves fs pattern \d+ noborder )re"
                               R"re(lc rgb "#[0-9A-Fa-f]{6}" title "reserved, not allocated:")re");
  std::smatch m;
  if (!std::regex_search(script, m, band))
    return out;
  out.band = true;
  const std::size_t lower = std::stoul(m[1]) - 1;
  const std::size_t upper = std::stoul(m[2]) - 1;

  // Gaps (GiB) memory.csv reaches at each time.
  std::map<double, std::vector<double>> states;
  {
    std::istringstream in(memory_csv);
    std::string line;
    std::getline(in, line); // header
    std::map<std::string, double> bytes;
    double reserved = 0;
    auto gap = [&] {
      double allocated = 0;
      for (const auto& [tag, b] : bytes)
        allocated += b;
      return (reserved - allocated) / kGiB;
    };
    double last_t = -1;
    while (std::getline(in, line)) {
      std::vector<std::string> f;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');)
        f.push_back(cell);
      if (f.size() != 7 || f[2] != "gpu" || std::stoi(f[1]) != rank)
        continue;
      const double t = std::stod(f[0]);
      if (t != last_t)
        states[t].push_back(gap()); // the state before t's first row
      bytes[f[3]] = std::stod(f[4]);
      reserved = std::stod(f[6]);
      states[t].push_back(gap());
      last_t = t;
    }
    states[0.0].push_back(0.0); // the picture starts from nothing at t = 0
  }

  const auto begin = script.find("$mem << EOD\n");
  const auto end = script.find("EOD\n", begin == std::string::npos ? 0 : begin + 12);
  if (begin == std::string::npos || end == std::string::npos)
    return out;
  std::istringstream data(script.substr(begin + 12, end - begin - 12));
  double last_csv_t = states.empty() ? 0.0 : states.rbegin()->first;
  for (std::string line; std::getline(data, line);) {
    std::istringstream cells(line);
    std::vector<double> row;
    for (double x = 0; cells >> x;)
      row.push_back(x);
    if (row.size() <= upper)
      continue;
    ++out.rows;
    const double drawn = row[upper] - row[lower];
    // The last row is at the picture's end, the last CSV time: same state.
    const auto it = states.find(row[0] > last_csv_t ? last_csv_t : row[0]);
    bool ok = false;
    if (it != states.end())
      for (double g : it->second)
        ok = ok || std::abs(g - drawn) <= 2e-6;
    if (!ok) {
      std::ostringstream msg;
      msg.precision(9);
      msg << "t=" << row[0] << ": band " << drawn << " GiB, memory.csv";
      if (it == states.end())
        msg << " has no row at that time";
      else
        for (double g : it->second)
          msg << ' ' << g;
      out.mismatches.push_back(msg.str());
    }
  }
  return out;
}

} // namespace zerosim::test
