// Which process group (NCCL communicator) each ZeRO collective runs on (training.process_groups,
// scenario::ProcessGroups), against DeepSpeed's source: zero.Init partitions on the world group unless given one
// (partition_parameters.py l.745-748 @v0.9.5), the engine on the mpu's group or a clone of the world group
// (utils/groups.py l.319-327 @v0.9.5); stage 3 reduce-scatters on the engine's group before v0.19.3 (stage3.py l.1151
// @v0.9.5, l.1637 @v0.19.2) and on the parameter's group from v0.19.3 (l.1782 @v0.19.5); stages 1-2 use the engine's
// group for the reduction and the step's all-gather (stage_1_and_2.py real_dp_process_group, l.186 @v0.9.5). Stage 3's
// gradient-norm all-reduce runs on the engine's group before v0.19.3 (get_grad_norm_direct, stage3.py l.2119
// @v0.19.2) and on the first parameter's group from v0.19.3 (_get_param_partition_group(params[0]), l.2207/2236
// @v0.19.3); the overflow flag stays on the engine's group (has_overflow, l.2564 @v0.19.2, l.2684 @v0.19.3).
#include "sim/zero/zero_program.hpp"
#include "tests/zero/test_model.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <set>
#include <string>
#include <utility>
#include <vector>

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

/// Names of the groups the program's collectives labelled `label` run on.
std::set<std::string> groups_labelled(const program::StepProgram& p, const std::string& label) {
  std::set<std::string> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Collective>(&op.body); c && p.labels.at(op.label) == label)
        out.insert(p.groups.at(c->group).name);
  return out;
}

program::StepProgram stage_program(int stage, std::array<int, 3> version, scenario::ProcessGroups groups,
                                   scenario::Precision precision = scenario::Precision::BF16) {
  auto wl = make_workload();
  wl.training.process_groups = groups;
  wl.training.precision = precision;
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

TEST_CASE("process groups: stage 3 all-reduces the gradient norm on the engine's group before DeepSpeed 0.19.3",
          "[zero][unit]") {
  // get_grad_norm_direct: dist.all_reduce(total_norm_cuda, ..., group=self.dp_process_group), stage3.py l.2119
  // @v0.19.2; has_overflow: group=self.dp_process_group, l.2564 @v0.19.2.
  const auto p = stage_program(3, {0, 19, 2}, scenario::ProcessGroups::DEEPSPEED, scenario::Precision::FP16);
  CHECK(groups_labelled(p, "allreduce grad norm") == Set{"dp"});
  CHECK(groups_labelled(p, "allreduce overflow flag") == Set{"dp"});
}

TEST_CASE("process groups: from DeepSpeed 0.19.3 stage 3 all-reduces the gradient norm on the parameters' group",
          "[zero][unit]") {
  // get_grad_norm_direct: process_group = self._get_param_partition_group(params[0]) (l.2207), all_reduce on it
  // (l.2236) @v0.19.3; zero.Init without an mpu partitions on the world group. has_overflow stays on
  // self.dp_process_group (l.2684 @v0.19.3).
  for (const std::array<int, 3> v : {std::array<int, 3>{0, 19, 3}, std::array<int, 3>{0, 19, 5}}) {
    const auto p = stage_program(3, v, scenario::ProcessGroups::DEEPSPEED, scenario::Precision::FP16);
    CHECK(groups_labelled(p, "allreduce grad norm") == Set{"world"});
    CHECK(groups_labelled(p, "allreduce overflow flag") == Set{"dp"});
  }
}

TEST_CASE(
    "process groups: with the mpu's group stage 3 issues its gathers and reduce-scatters in DeepSpeed's hook "
    "order",
    "[zero][unit]") {
  // Two blocks of a 1e6-element weight and a 1e3-element bias, 4 ranks, one step, DeepSpeed 0.19.5 defaults except
  // reduce_bucket_size 1e6 and stage3_prefetch_bucket_size 0 (no prefetch). Derived by hand from DeepSpeed's hooks:
  //  - the biases are persistent (1e3 <= stage3_param_persistence_threshold 1e5), so only the weights are gathered;
  //  - forward: each block's pre-forward hook fetches its weight (parameter_offload.py _pre_forward_module_hook
  //    l.353 -> pre_sub_module_forward_function -> fetch_sub_module l.537 @v0.19.5), and its post-forward hook
  //    releases it (release_sub_module l.560);
  //  - backward of block.1: its pre-backward hook fetches the weight again (_pre_backward_module_hook l.404 ->
  //    fetch_sub_module l.576); its two gradients reach reduce_independent_p_g_buckets_and_remove_grads (stage3.py
  //    l.1488) via reduce_partition_and_remove_grads (l.1428); the second finds 1e6 + its numel > 1e6 with a
  //    non-empty bucket and flushes the first (l.1502): reduce-scatter bucket 0;
  //  - backward of block.0: pre-backward fetch of block.0's weight, then its first gradient flushes block.1's
  //    second (bucket 1), its second flushes its first (bucket 2), and independent_gradient_partition_epilogue
  //    (l.1326-1329) flushes the last (bucket 3);
  //  - step: the gradient-norm all-reduce, then _post_step's all-gather of the persistent params (l.2542).
  // All run on one communicator, so this emission order is the order they run in.
  auto wl = make_workload(TinyModel{.blocks = 2});
  wl.training.process_groups = scenario::ProcessGroups::MPU;
  auto z = zero_config(3);
  z.deepspeed_version = {0, 19, 5};
  z.reduce_bucket_size = 1'000'000;
  z.stage3_prefetch_bucket_size = 0;
  const auto p = generate(wl, z, 4, 1);
  REQUIRE(p.groups.size() == 1);
  std::vector<std::pair<std::uint32_t, std::pair<CollectiveKind, std::string>>> seen;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Collective>(&op.body))
        seen.push_back({c->seq, {c->kind, p.labels.at(op.label)}});
  std::sort(seen.begin(), seen.end());
  std::vector<std::pair<CollectiveKind, std::string>> order;
  for (const auto& [seq, what] : seen)
    order.push_back(what);
  const std::vector<std::pair<CollectiveKind, std::string>> expected{
      {CollectiveKind::ALL_GATHER, "allgather block.0"},
      {CollectiveKind::ALL_GATHER, "allgather block.1"},
      {CollectiveKind::ALL_GATHER, "allgather block.1"},
      {CollectiveKind::REDUCE_SCATTER, "reduce_scatter bucket 0"},
      {CollectiveKind::ALL_GATHER, "allgather block.0"},
      {CollectiveKind::REDUCE_SCATTER, "reduce_scatter bucket 1"},
      {CollectiveKind::REDUCE_SCATTER, "reduce_scatter bucket 2"},
      {CollectiveKind::REDUCE_SCATTER, "reduce_scatter bucket 3"},
      {CollectiveKind::ALL_REDUCE, "allreduce grad norm"},
      {CollectiveKind::ALL_GATHER, "allgather persistent params"},
  };
  CHECK(order == expected);
}
