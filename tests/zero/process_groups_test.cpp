// Which process group (NCCL communicator) each ZeRO collective runs on (training.process_groups,
// scenario::ProcessGroups), against DeepSpeed's source: zero.Init partitions on the world group unless given one
// (partition_parameters.py l.745-748 @v0.9.5), the engine on the mpu's group or a clone of the world group
// (utils/groups.py l.319-327 @v0.9.5); stage 3 reduce-scatters on the engine's group before v0.19.3 (stage3.py l.1151
// @v0.9.5, l.1637 @v0.19.2) and on the parameter's group from v0.19.3 (l.1782 @v0.19.5); stages 1-2 use the engine's
// group for the reduction and the step's all-gather (stage_1_and_2.py real_dp_process_group, l.186 @v0.9.5).
#include "sim/zero/zero_program.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <set>
#include <string>

using namespace zerosim;
using namespace zerosim::zero;
using namespace zerosim::zero::testing;
using program::CollectiveKind;

namespace {

/// Names of the groups the program's collectives of `kind` run on.
std::set<std::string> groups_of(const program::StepProgram& p, CollectiveKind kind) {
  std::set<std::string> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Collective>(&op.body); c && c->kind == kind)
        out.insert(p.groups.at(c->group).name);
  return out;
}

program::StepProgram stage_program(int stage, std::array<int, 3> version, scenario::ProcessGroups groups) {
  auto wl = make_workload();
  wl.training.process_groups = groups;
  auto z = zero_config(stage);
  z.deepspeed_version = version;
  return generate(wl, z, 4);
}

using Set = std::set<std::string>;

} // namespace

TEST_CASE("process groups: DeepSpeed 0.9.5 stage 3 without an mpu gathers on the world group, reduces on the engine's",
          "[zero][unit]") {
  const auto p = stage_program(3, {0, 9, 5}, scenario::ProcessGroups::DEEPSPEED);
  CHECK(groups_of(p, CollectiveKind::ALL_GATHER) == Set{"world"});
  CHECK(groups_of(p, CollectiveKind::REDUCE_SCATTER) == Set{"dp"});
}

TEST_CASE("process groups: DeepSpeed 0.19.5 stage 3 without an mpu reduces on the parameters' group", "[zero][unit]") {
  const auto p = stage_program(3, {0, 19, 5}, scenario::ProcessGroups::DEEPSPEED);
  CHECK(groups_of(p, CollectiveKind::ALL_GATHER) == Set{"world"});
  CHECK(groups_of(p, CollectiveKind::REDUCE_SCATTER) == Set{"world"});
}

TEST_CASE("process groups: with the mpu's group every stage 3 collective shares one communicator", "[zero][unit]") {
  const auto p = stage_program(3, {0, 9, 5}, scenario::ProcessGroups::MPU);
  REQUIRE(p.groups.size() == 1);
  CHECK(groups_of(p, CollectiveKind::ALL_GATHER) == Set{"dp"});
  CHECK(groups_of(p, CollectiveKind::REDUCE_SCATTER) == Set{"dp"});
}

TEST_CASE("process groups: stage 2 reduces and gathers on the engine's group, with or without an mpu", "[zero][unit]") {
  for (const auto g : {scenario::ProcessGroups::DEEPSPEED, scenario::ProcessGroups::MPU}) {
    const auto p = stage_program(2, {0, 9, 5}, g);
    REQUIRE(p.groups.size() == 1);
    CHECK(groups_of(p, CollectiveKind::ALL_GATHER) == Set{"dp"});
  }
}
