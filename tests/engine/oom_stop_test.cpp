// Stopping a run on an OOM (on_oom: stop) while collectives are in flight: the run ends without SimGrid printing
// anything. One simulation per TEST_CASE (SimGrid's Engine is a process singleton).
#include "sim/engine/engine.hpp"
#include "tests/support/test_gpu.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using namespace zerosim;
using namespace zerosim::program;
using Catch::Contains;

namespace {

constexpr double kTol = 1e-9;

/// 2 nodes of 8 GPUs with one NIC per GPU (25e9 B/s, 4 us), NVLink 100e9 B/s and 2 us, 80e9 B of GPU memory. With
/// per-GPU NICs a node-crossing ring hop is split into rail sub-flows (Comm::sendto_async, owned by SimGrid's
/// maestro, so killing the actor that started them does not cancel them).
scenario::ClusterSpec rail_cluster() {
  scenario::ClusterSpec c;
  c.nodes = 2;
  c.gpus_per_node = 8;
  c.intra_node = {ByteRate(100e9), Seconds(2e-6), "test"};
  c.host_link = {ByteRate(25e9), Seconds(1e-6), "test"};
  c.nic = {ByteRate(25e9), Seconds(4e-6), "test"};
  c.nics_per_node = 8;
  c.nic_per_gpu = true;
  c.fabric = scenario::FabricKind::FAT_TREE;
  c.gpu = zerosim::test::test_gpu(80e9); // 100e12 FLOP/s x 0.5, 2e12 B/s x 0.8
  c.collective_algorithm = "ring";
  c.collective_protocol = "none";
  return c;
}

/// Stream "gather" all-gathers 8e9 B; stream "compute" runs a 1e11-FLOP kernel, 1e11 / (100e12 x 0.5) = 2 ms, then
/// allocates 100e9 B > 80e9 B: OOM at t = 2 ms on every rank. The all-gather's first ring step alone moves
/// 8e9 / 16 = 5e8 B over a 25e9 B/s NIC, 20 ms, so its messages are in flight when the run stops.
StepProgram oom_during_gather() {
  ProgramBuilder b;
  b.add_group("dp");
  auto gather = b.add_stream("gather", StreamKind::COMM);
  auto comp = b.add_stream("compute", StreamKind::COMPUTE);
  b.collective(gather, Phase::FORWARD, "allgather", CollectiveKind::ALL_GATHER, Bytes(8e9));
  b.compute(comp, Phase::FORWARD, "fwd", Flops(1e11), Bytes(0));
  b.alloc(comp, Phase::FORWARD, "act", MemTag::ACTIVATIONS, Bytes(100e9));
  return b.build(1);
}

/// Runs `f` with the process's stderr (fd 2) sent to a file; returns what was written there.
template <class F>
std::string capture_stderr(F&& f) {
  const auto path = std::filesystem::temp_directory_path() / ("zerosim-oom-stop-" + std::to_string(::getpid()));
  std::fflush(stderr);
  std::cerr.flush();
  const int saved = ::dup(2);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(saved >= 0);
  REQUIRE(fd >= 0);
  ::dup2(fd, 2);
  ::close(fd);
  try {
    f();
  } catch (...) {
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    throw;
  }
  std::fflush(stderr);
  std::cerr.flush();
  ::dup2(saved, 2);
  ::close(saved);
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::filesystem::remove(path);
  return s.str();
}

void check_stop(scenario::Fidelity fidelity) {
  engine::EngineOptions o;
  o.fidelity = fidelity;
  o.fold = scenario::FoldPolicy::OFF;
  o.on_oom = scenario::OomPolicy::STOP;
  trace::RunResult r;
  const std::string err = capture_stderr([&] { r = engine::run_simulation(rail_cluster(), oom_during_gather(), o); });
  INFO("stderr: " << err);
  CHECK(err.empty()); // no "Backtrace ... s4u::Comm::~Comm", no "Process called exit when leaving"
  REQUIRE(r.oom.has_value());
  CHECK_FALSE(r.finished);
  CHECK(r.oom->time == Approx(2e-3).epsilon(kTol));
  CHECK(r.oom->requested == Approx(100e9).epsilon(kTol));
}

} // namespace

TEST_CASE("run_simulation: an OOM stop during a chunk-fidelity all-gather prints nothing on stderr", "[engine][unit]") {
  check_stop(scenario::Fidelity::CHUNK);
}

TEST_CASE("run_simulation: an OOM stop during a flow-fidelity all-gather prints nothing on stderr", "[engine][unit]") {
  check_stop(scenario::Fidelity::FLOW);
}
