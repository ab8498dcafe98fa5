// Test support: a SimGrid engine configured as zerosim's engine configures it (CM02, crosstraffic:0, TCP-gamma:0:
// reference/simgrid_notes.md §3), so that transfer times equal latency + size / bandwidth. One Engine per process:
// ctest runs each TEST_CASE in its own process.
#pragma once

#include <xbt/log.h>
#include <simgrid/s4u.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::test {

/// A fresh sg4::Engine (program name "topologies_tests") with SimGrid's log threshold at warning and the network
/// model of reference/simgrid_notes.md §3. Call once per process.
inline std::unique_ptr<simgrid::s4u::Engine> make_simgrid_engine() {
  static int argc = 1;
  static char name[] = "topologies_tests";
  static char* argv[] = {name, nullptr};
  xbt_log_control_set("root.thresh:warning");
  auto e = std::make_unique<simgrid::s4u::Engine>(&argc, argv);
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:0");
  return e;
}

/// Simulated seconds of one `bytes` transfer from `src` to `dst` with nothing else on the network (runs `e` to the
/// end: call once per engine).
inline double transfer_time(simgrid::s4u::Engine& e, simgrid::s4u::Host* src, simgrid::s4u::Host* dst, double bytes) {
  double elapsed = -1;
  simgrid::s4u::Actor::create("sender", src, [&]() {
    const double t0 = simgrid::s4u::Engine::get_clock();
    simgrid::s4u::Comm::sendto(src, dst, static_cast<std::uint64_t>(bytes));
    elapsed = simgrid::s4u::Engine::get_clock() - t0;
  });
  e.run();
  return elapsed;
}

/// Starts every (src, dst) transfer of `bytes` at t = 0 and runs `e` to the end (call once per engine); returns each
/// transfer's completion time (simulated seconds).
inline std::vector<double> concurrent_transfer_times(
    simgrid::s4u::Engine& e, const std::vector<std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*>>& pairs,
    double bytes) {
  std::vector<double> done(pairs.size(), -1);
  for (std::size_t i = 0; i < pairs.size(); ++i)
    simgrid::s4u::Actor::create("sender" + std::to_string(i), pairs[i].first, [&, i]() {
      simgrid::s4u::Comm::sendto(pairs[i].first, pairs[i].second, static_cast<std::uint64_t>(bytes));
      done[i] = simgrid::s4u::Engine::get_clock();
    });
  e.run();
  return done;
}

} // namespace zerosim::test
