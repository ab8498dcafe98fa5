// ZeRO-Infinity NVMe offload in stage 3 (sim/zero/offload_nvme.hpp; zero_semantics.md §3.1, §3.5, §4.2).
// TinyModel (4 blocks x {1,000,000 weight, 1,000 bias}) at N = 2: every param is split evenly, the rank's partition
// is Σ ceil(n/2) = 4 x (500,000 + 500) = 2,002,000 elements = one sub-group (sub_group_size 1e9).
#include "program_walker.hpp"
#include "test_model.hpp"

#include "sim/program/program.hpp"
#include "sim/zero/offload_nvme.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

#include <string>
#include <utility>
#include <vector>

using namespace zerosim;
using namespace zerosim::zero::testing;
using program::CopyDir;
using program::MemTag;

namespace {

constexpr double kTol = 1e-9;
constexpr double kPart = 2'002'000;

scenario::ZeroConfig infinity(scenario::OffloadDevice opt, scenario::OffloadDevice par) {
  auto z = zero_config(3);
  z.offload_optimizer = opt;
  z.offload_param = par;
  // No CPU share of the lp partitions (offload_param.max_in_cpu 0), so that offload_param=nvme swaps every
  // swappable partition; DeepSpeed's default 1e9 would keep all of TinyModel's in host memory (tested below).
  z.param_max_in_cpu = 0;
  return z;
}

/// Bytes of every Copy in `dir` whose label starts with `prefix`, in program order.
std::vector<double> copies(const program::StepProgram& p, CopyDir dir, const std::string& prefix) {
  std::vector<double> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Copy>(&op.body);
          c != nullptr && c->dir == dir && p.labels[op.label].rfind(prefix, 0) == 0)
        out.push_back(c->bytes.value());
  return out;
}

/// The durations of every CpuCompute whose label starts with `prefix`, with their phase, in program order.
std::vector<std::pair<program::Phase, double>> cpu_ops(const program::StepProgram& p, const std::string& prefix) {
  std::vector<std::pair<program::Phase, double>> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::CpuCompute>(&op.body);
          c != nullptr && p.labels[op.label].rfind(prefix, 0) == 0)
        out.emplace_back(op.phase, c->duration.value());
  return out;
}

} // namespace

TEST_CASE("OffloadNvme: stage 3 programs with nvme are valid for every device pair and GA", "[zero][unit]") {
  using D = scenario::OffloadDevice;
  for (auto [opt, par] : {std::pair{D::NVME, D::NONE}, {D::NVME, D::CPU}, {D::NVME, D::NVME}, {D::CPU, D::NVME}})
    for (int ga : {1, 2})
      for (int n : {1, 2}) {
        INFO("opt " << static_cast<int>(opt) << " param " << static_cast<int>(par) << " GA " << ga << " N " << n);
        TinyModel m;
        m.grad_accum = ga;
        const auto p = generate(make_workload(m), infinity(opt, par), n, 2, 1e-10);
        CHECK(program::validate(p).empty());
        CHECK(!walk(p).deadlock);
      }
}

TEST_CASE("OffloadNvme: optimizer swap reads 8 B then 16 B and writes 4 + 12 B per partition element per step",
          "[zero][unit]") {
  // INIT: the fp32 master is swapped out, 4 x 2,002,000 = 8,008,000 B. Backward, at the GA boundary: each
  // bucket's fp32 grad partition goes to NVMe (stage3.py _swap_out_offload_fp32_gradients), 4 B x 2,002,000 =
  // 8,008,000 B per step in all. Step 0: read the fp32 master and the fp32 grads (m, v do not exist yet)
  // 8 x 2,002,000 = 16,016,000 B; write p, m, v 12 x 2,002,000 = 24,024,000 B. Step 1: read p, grads, m, v
  // 16 x 2,002,000 = 32,032,000 B (PartitionedOptimizerSwapper.swap_in_optimizer_state reads the gradients too).
  const auto p =
      generate(make_workload(), infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE), 2, 2, 1e-10);
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out fp32 master") == std::vector<double>{4 * kPart});
  double grads_out = 0;
  for (double b : copies(p, CopyDir::NVME_WRITE, "swap out fp32 grads"))
    grads_out += b;
  CHECK(grads_out == Approx(2 * 4 * kPart).epsilon(kTol)); // 2 steps
  const auto in = copies(p, CopyDir::NVME_READ, "swap in optimizer");
  REQUIRE(in.size() == 2);
  CHECK(in[0] == Approx(8 * kPart).epsilon(kTol));
  CHECK(in[1] == Approx(16 * kPart).epsilon(kTol));
  // Step 0's m, v are new pageable tensors: the master (pinned) is written first, then m, v after their copy into
  // pinned buffers (optimizer_utils.py _swap_out_unpinned_tensors), 4 + 8 B; step 1 writes all three at once.
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out optimizer") == std::vector<double>{4 * kPart, 8 * kPart, 12 * kPart});
  // No parameter swapping without offload_param=nvme.
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params").empty());
}

TEST_CASE("OffloadNvme: the host keeps one fp32 grad buffer of the largest sub-group, not the whole partition",
          "[zero][unit]") {
  // initialize_optimizer_states: a swappable sub-group's fp32 grad is a narrow of ONE zeros buffer of the largest
  // sub-group (pageable); with CPU offload each sub-group has its own pinned buffer. sub_group_size 500,000 on a
  // 2,002,000-element partition (N = 2; per-param partitions 500,000 and 500 -> sub-groups of the greedy packing,
  // the largest 500,500 elements: weight + bias partition of one block): host fp32 grads 4 x 500,500 B on NVMe
  // against 4 x 2,002,000 B with CPU offload.
  auto nvme = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE);
  nvme.sub_group_size = 500'500;
  auto cpu = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::NONE);
  cpu.sub_group_size = 500'500;
  const auto rn = walk(generate(make_workload(), nvme, 2, 2, 1e-10));
  const auto rc = walk(generate(make_workload(), cpu, 2, 2, 1e-10));
  REQUIRE(!rn.deadlock);
  REQUIRE(!rc.deadlock);
  CHECK(last_of(rn, 1)->host_tag(MemTag::FP32_GRADS) == Approx(4 * 500'500.0).epsilon(kTol));
  CHECK(last_of(rc, 1)->host_tag(MemTag::FP32_GRADS) == Approx(4 * kPart).epsilon(kTol));
}

TEST_CASE("OffloadNvme: host holds pinned swap buffers instead of the fp32 master and Adam state", "[zero][unit]") {
  // Both on NVMe, after 2 steps: optimizer swap buffers 4 (buffer_count) x 2,002,000 x 4 B = 32,032,000 B;
  // param swap buffers 5 x 1e8 x 2 B = 1e9 B, and the 4 weights' partitions, 500,000 x 2 B = 1,000,000 B each, under
  // DeepSpeed's 1 MiB = 1,048,576 B swap minimum, stay in host memory: 4e6 B (the persistent biases stay on the
  // GPU); the fp32 grad buffer of the largest sub-group (the default
  // sub_group_size 1e9 makes the whole partition one sub-group: 4 x 2,002,000) and the pinned lp grad partitions
  // (2 x 2,002,000); no Adam state in host memory. With max_in_cpu 0 no sub-group is in the CPU flat buffer, so
  // stage3.py reserves the pinned lp swap-out buffer (reserve_partitioned_swap_space): the one sub-group's FULL numels,
  // each rounded up to 1024 B / 2 B = 512 elements: 4 x 1,000,448 + 4 x 1,024 = 4,005,888 elements = 8,011,776 B.
  const auto r = walk(
      generate(make_workload(), infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME), 2, 2, 1e-10));
  REQUIRE(!r.deadlock);
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->host_tag(MemTag::FP32_MASTER) == Approx(4 * 4 * kPart).epsilon(kTol));
  CHECK(end->host_tag(MemTag::LP_PARAMS) == Approx(5 * 1e8 * 2 + 4 * 500'000 * 2 + 8'011'776).epsilon(kTol));
  CHECK(end->host_tag(MemTag::OPTIMIZER_STATES) == 0);
  CHECK(end->host_tag(MemTag::FP32_GRADS) == Approx(4 * kPart).epsilon(kTol));
  CHECK(end->host_tag(MemTag::GRAD_PARTITION) == Approx(2 * kPart).epsilon(kTol));
}

TEST_CASE(
    "OffloadNvme: offload_param=nvme reads each fetched partition from NVMe before its H2D copy and writes "
    "the updated lp partition back",
    "[zero][unit]") {
  // Weights of 2,000,000 elements, so that their partitions (1,000,000 x 2 B = 2e6 B) are over the 1 MiB swap
  // minimum; the biases (500-element partitions, persistent) stay on the GPU. INIT swaps out the weights'
  // partitions: 4 x 2e6 = 8e6 B. A fetch of a block's weight reads its partition, 2e6 B: step 0 (no trace, every
  // param released after use) reads 4 in the forward and 4 in the backward; step 1 reads block 0's on demand, and at
  // the fetches of blocks 0, 1, 2 the prefetch stops at the next weight, still on NVMe, which the swapper reads ahead
  // alone (nothing in flight): 3 more reads of 2e6 B, gathered on demand and kept to the backward (default reuse
  // distance). Every NVMe param read precedes an H2D copy of the same size on the copy stream. The step writes the
  // updated weights' partitions: 8e6 B per step.
  TinyModel m;
  m.weight_numel = 2'000'000;
  const auto p =
      generate(make_workload(m), infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME), 2, 2, 1e-10);
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out lp partitions") == std::vector<double>{8e6});
  const auto reads = copies(p, CopyDir::NVME_READ, "swap in params");
  CHECK(reads == std::vector<double>(12, 2e6));
  CHECK(copies(p, CopyDir::H2D, "h2d params") == reads);
  const auto lp_out = copies(p, CopyDir::NVME_WRITE, "swap out lp params");
  REQUIRE(lp_out.size() == 2);
  CHECK(lp_out[0] == Approx(8e6).epsilon(kTol));
}

TEST_CASE(
    "OffloadNvme: with offload_param=nvme the prefetch stops at a param still on NVMe and the swapper reads ahead "
    "up to twice the numel in flight (partitioned_param_coordinator.py fetch_sub_module, "
    "__prefetch_nvme_param_partitions)",
    "[zero][unit]") {
  // TinyModel with 2,000,000-element weights at N = 2, default persistence (each block gathers one weight w,
  // partition 1,000,000 elements = 2e6 B on NVMe, over the 1 MiB swap minimum; the biases persist), reuse distance 0,
  // 5 swap buffers. Trace positions: forward
  // 0-3 = blocks 0-3, backward 4-7 = blocks 3, 2, 1, 0. The prefetch walk puts back and stops at the first queued
  // param whose partition is not swapped in (l.444-463); then __prefetch_nvme_param_partitions reads ahead, from the
  // queue's head, the partitions still on NVMe while the numel considered is <= 2 x the numel in flight (l.666-690).
  // Step 1 (trace complete):
  //   pos 0: w0 read on demand ("block.0"); the walk stops at w1; nothing in flight, so one param is read ahead: w1.
  //   pos 1, 2: w1, w2 gathered on demand without a read; the walk stops at w2, w3: read ahead.
  //   pos 3: w3 gathered; the walk passes block 3's backward use (kept, it is gathered) and stops at w2 (released
  //     after its forward): w2 read ahead.
  //   pos 4: the walk takes w2 (swapped in: one all-gather prefetch, 2e6 in flight) and stops at w1; the swapper
  //     considers w1 (0 <= 4e6: read), its bias, w0 (2.001e6 <= 4e6: read): one read of 4e6 B.
  //   pos 5: the walk takes w1 and w0 in one call. pos 6, 7: nothing.
  // All-gathers: 4 forward on demand + 2 prefetches + the post-step persistent one = 7 (offload_param=cpu, whose
  // partitions are never on NVMe: block 0, one prefetch of blocks 1-3 whose walk passes every backward use, so
  // nothing is released before it, + 1 = 3).
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME);
  z.stage3_max_reuse_distance = 0;
  TinyModel m;
  m.weight_numel = 2'000'000;
  const auto p = generate(make_workload(m), z, 2, 2, 1e-10);
  const auto r = walk(p);
  REQUIRE(!r.deadlock);
  CHECK(r.stats(1, program::CollectiveKind::ALL_GATHER).calls == 7);
  std::vector<std::pair<std::string, double>> reads;
  for (const auto& st : p.streams)
    for (const auto& op : st.ops)
      if (const auto* c = std::get_if<program::Copy>(&op.body);
          c != nullptr && c->dir == CopyDir::NVME_READ && p.labels[op.label].rfind("swap in params", 0) == 0)
        reads.emplace_back(p.labels[op.label], c->bytes.value());
  // Step 0: 8 reads on demand (4 forward, 4 backward), then step 1's 6.
  REQUIRE(reads.size() == 14);
  const std::vector<std::pair<std::string, double>> step1(reads.begin() + 8, reads.end());
  CHECK(step1 == std::vector<std::pair<std::string, double>>{{"swap in params block.0", 2e6},
                                                             {"swap in params ahead block.1", 2e6},
                                                             {"swap in params ahead block.2", 2e6},
                                                             {"swap in params ahead block.3", 2e6},
                                                             {"swap in params ahead block.2", 2e6},
                                                             {"swap in params ahead block.1", 4e6}});
  auto cpu = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::CPU);
  cpu.stage3_max_reuse_distance = 0;
  CHECK(walk(generate(make_workload(m), cpu, 2, 2, 1e-10)).stats(1, program::CollectiveKind::ALL_GATHER).calls == 3);
}

TEST_CASE(
    "OffloadNvme: a partition under max(1 MiB and aio block_size) stays in host memory and a larger one is swapped",
    "[zero][unit]") {
  // DeepSpeed v0.19.6 (swap_tensor/utils.py MIN_AIO_BYTES = 1024**2; partitioned_param_swapper.py swappable_tensor;
  // partition_parameters.py _partition_param): a partition goes to NVMe iff max(1 MiB, aio.block_size) <= its lp
  // bytes; else it is a (pinned) CPU tensor. TinyModel at N = 2 with block 0's weight at 2,000,000 elements: its
  // partition is 1,000,000 x 2 B = 2e6 B >= 1,048,576 B: swapped. Blocks 1-3's weights: 500,000 x 2 B = 1e6 B <
  // 1,048,576 B: in host memory. The biases (500-element partitions) persist: on the GPU.
  TinyModel m;
  auto wl = make_workload(m);
  wl.layers[0].params[0].numel = 2'000'000;
  wl.layers[0].param_count = 2'001'000;
  wl.total_params = wl.trainable_params = 2'001'000 + 3 * 1'001'000.0;
  wl.largest_tensor_numel = 2'000'000;
  wl.largest_layer_params = 2'001'000;
  auto z = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::NVME);
  const auto p = generate(wl, z, 2, 2, 1e-10);
  REQUIRE(program::validate(p).empty());
  const auto r = walk(p);
  REQUIRE(!r.deadlock);
  // Host: the 5 x 1e8 x 2 B swap buffers + blocks 1-3's partitions, 3 x 1e6 B + the pinned lp swap-out buffer of the
  // one sub-group's full numels rounded up to 512 elements: 2,000,384 + 3 x 1,000,448 + 4 x 1,024 = 5,005,824
  // elements = 10,011,648 B (it does not depend on aio.block_size).
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->host_tag(MemTag::LP_PARAMS) == Approx(5 * 1e8 * 2 + 3e6 + 10'011'648).epsilon(kTol));
  // NVMe: only block 0's partition is written at INIT and after each step, and every param read is it.
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out lp partitions") == std::vector<double>{2e6});
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out lp params") == std::vector<double>{2e6, 2e6});
  const auto reads = copies(p, CopyDir::NVME_READ, "swap in params");
  REQUIRE(!reads.empty());
  CHECK(reads == std::vector<double>(reads.size(), 2e6));
  // The small partitions still reach the GPU, from host memory: H2D copies of 1e6 B with no NVMe read.
  const auto h2d = copies(p, CopyDir::H2D, "h2d params");
  CHECK(std::count(h2d.begin(), h2d.end(), 1e6) > 0);
  // aio.block_size 4 MiB raises the minimum past 2e6 B: every partition stays in host memory, 2e6 + 3e6 B.
  z.aio.block_size = Bytes(4.0 * 1024 * 1024);
  const auto big = generate(wl, z, 2, 2, 1e-10);
  CHECK(copies(big, CopyDir::NVME_WRITE, "swap out lp").empty());
  CHECK(copies(big, CopyDir::NVME_READ, "swap in params").empty());
  const auto big_run = walk(big);
  const Sample* big_end = last_of(big_run, 1);
  REQUIRE(big_end != nullptr);
  CHECK(big_end->host_tag(MemTag::LP_PARAMS) == Approx(5 * 1e8 * 2 + 5e6 + 10'011'648).epsilon(kTol));
  // The rule itself, at the boundary: 1 MiB is swapped (min <= bytes), one byte less is not.
  const auto d = zero_config(3);
  CHECK(zero::nvme_swappable(Bytes(1024.0 * 1024), d));
  CHECK_FALSE(zero::nvme_swappable(Bytes(1024.0 * 1024 - 1), d));
  CHECK(zero::nvme_min_swappable_bytes(z).value() == 4.0 * 1024 * 1024);
}

TEST_CASE("OffloadNvme: the swap buffers follow buffer_count and buffer_size, and a partition must fit one",
          "[zero][unit]") {
  // Pinned host swap buffers: offload_param 3 x 2e6 lp elements x 2 B = 12e6 B, plus the 4 weights' partitions kept
  // in host memory (500,000 x 2 B = 1e6 B each, under the 1 MiB swap minimum): 4e6 B; offload_optimizer 2 x the
  // largest sub-group (the whole 2,002,000-element partition at the default sub_group_size) x 4 B = 16,016,000 B;
  // the pinned lp swap-out buffer, 8,011,776 B (see "host holds pinned swap buffers" above).
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME);
  z.param_swap_buffer_count = 3;
  z.param_swap_buffer_size = 2'000'000;
  z.optimizer_swap_buffer_count = 2;
  const auto r = walk(generate(make_workload(), z, 2, 2, 1e-10));
  REQUIRE(!r.deadlock);
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->host_tag(MemTag::LP_PARAMS) == Approx(3 * 2e6 * 2 + 4e6 + 8'011'776).epsilon(kTol));
  CHECK(end->host_tag(MemTag::FP32_MASTER) == Approx(2 * 4 * kPart).epsilon(kTol));
  // The largest tensor has 1,000,000 elements: at N = 2 its partition is 500,000, at N = 1 the whole tensor.
  const auto wl = make_workload();
  z.param_swap_buffer_size = 500'000;
  CHECK(zero::check_param_swap_buffers(wl, z, 2).empty());
  CHECK_THAT(zero::check_param_swap_buffers(wl, z, 1), Catch::Contains("1000000 elements"));
  CHECK_THROWS_WITH(generate(wl, z, 1, 2, 1e-10), Catch::Contains("zero.offload_param.buffer_size"));
  z.offload_param = scenario::OffloadDevice::CPU; // only NVMe swapping uses the buffers
  CHECK(zero::check_param_swap_buffers(wl, z, 1).empty());
}

TEST_CASE("OffloadNvme: stage 2 with offload_optimizer=nvme is the CPU path (stage_1_and_2.py cpu_offload)",
          "[zero][unit]") {
  auto zc = zero_config(2);
  zc.offload_optimizer = scenario::OffloadDevice::CPU;
  auto zn = zc;
  zn.offload_optimizer = scenario::OffloadDevice::NVME;
  const auto wl = make_workload();
  const auto rc = walk(generate(wl, zc, 2, 2, 1e-10));
  const auto rn = walk(generate(wl, zn, 2, 2, 1e-10));
  const auto pn = generate(wl, zn, 2, 2, 1e-10);
  CHECK(copies(pn, CopyDir::NVME_READ, "").empty());
  CHECK(copies(pn, CopyDir::NVME_WRITE, "").empty());
  CHECK(rn.copied(1, CopyDir::D2H) == rc.copied(1, CopyDir::D2H));
  CHECK(last_of(rn, 1)->host_tag(MemTag::OPTIMIZER_STATES) == last_of(rc, 1)->host_tag(MemTag::OPTIMIZER_STATES));
}

namespace {

/// Sum of the Copy bytes in `dir` whose label starts with `prefix`.
double copied(const program::StepProgram& p, CopyDir dir, const std::string& prefix) {
  double sum = 0;
  for (double b : copies(p, dir, prefix))
    sum += b;
  return sum;
}

/// The Alloc ops labelled `label`.
std::vector<program::Alloc> allocs(const program::StepProgram& p, const std::string& label) {
  std::vector<program::Alloc> out;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* a = std::get_if<program::Alloc>(&op.body); a != nullptr && p.labels[op.label] == label)
        out.push_back(*a);
  return out;
}

} // namespace

TEST_CASE("OffloadNvme: before DeepSpeed 0.6.0, GA 1 keeps no lp gradient in host memory", "[zero][unit]") {
  // v0.3.15 / v0.5.10 stage3.py: grads_in_partition is created only when gradient_accumulation_steps > 1 with
  // offload_optimizer (partition_previous_reduced_grads); grad_partitions_flat_buffer (2 B x 2,002,000 on the host
  // in 0.19.5) came with v0.6.0 (PR #1453). The reduced partitions land in temp_grad_gpu_buffer, and with
  // temp_grad_buffer_for_gpu_offload that is 2 GPU tensors of the largest sub-group (sub_group_size 1e9: the whole
  // 2,002,000-element partition) x 2 B = 8,008,000 B kept for the run. At the boundary each partition goes D2H as
  // fp32 only: 4 x 2,002,000 B per step, no lp copy either way.
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME);
  z.deepspeed_version = {0, 3, 15};
  const auto p = generate(make_workload(), z, 2, 2, 1e-10);
  const auto r = walk(p);
  REQUIRE(!r.deadlock);
  CHECK(program::validate(p).empty());
  const Sample* end = last_of(r, 1);
  REQUIRE(end != nullptr);
  CHECK(end->host_tag(MemTag::GRAD_PARTITION) == 0);
  CHECK(end->tag(MemTag::FLATTEN_TEMP) == Approx(2 * 2 * kPart).epsilon(kTol));
  CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::GRAD_PARTITION); }) == 0);
  CHECK(copied(p, CopyDir::D2H, "d2h fp32 grad partition") == Approx(2 * 4 * kPart).epsilon(kTol)); // 2 steps
  CHECK(copies(p, CopyDir::D2H, "d2h lp grad partition").empty());
  CHECK(copies(p, CopyDir::H2D, "h2d lp grad partition").empty());
  // The fp32 grads still go on to NVMe: 4 B per element per step.
  CHECK(copied(p, CopyDir::NVME_WRITE, "swap out fp32 grads") == Approx(2 * 4 * kPart).epsilon(kTol));
  // 0.6.0 has the 2 B host buffer and no temp GPU buffers.
  z.deepspeed_version = {0, 6, 0};
  const auto r6 = walk(generate(make_workload(), z, 2, 2, 1e-10));
  REQUIRE(!r6.deadlock);
  CHECK(last_of(r6, 1)->host_tag(MemTag::GRAD_PARTITION) == Approx(2 * kPart).epsilon(kTol));
  CHECK(last_of(r6, 1)->tag(MemTag::FLATTEN_TEMP) == 0);
}

TEST_CASE("Stage3: before DeepSpeed 0.6.0 the two offload grad buffers are sized per release", "[zero][unit]") {
  // stage3.py __init__ with offload_optimizer: temp_grad_buffer_for_gpu_offload and temp_grad_gpu_buffer, two GPU
  // tensors of largest_partitioned_param_numel elements of the model dtype. v0.4.0 (l.855, as l.858 @v0.3.15):
  // max(fp16_partitioned_groups_flat_numel), the largest sub-group: at sub_group_size 1e9 the whole partition,
  // 2,002,000 elements, so 2 x 2 B x 2,002,000 = 8,008,000 B. v0.4.1 (l.855-858, PR #1150) and v0.5.10 (l.851-854):
  // the largest partitioned tensor, a 1,000,000-element weight over N = 2, 500,000 elements: 2 x 2 B x 500,000 =
  // 2,000,000 B.
  const std::vector<std::pair<std::array<int, 3>, double>> cases = {{{0, 3, 15}, 8'008'000.0},
                                                                    {{0, 4, 0}, 8'008'000.0},
                                                                    {{0, 4, 1}, 2'000'000.0},
                                                                    {{0, 5, 10}, 2'000'000.0}};
  for (const auto& [v, bytes] : cases) {
    INFO("deepspeed " << v[0] << "." << v[1] << "." << v[2]);
    auto z = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::CPU);
    z.deepspeed_version = v;
    const auto p = generate(make_workload(), z, 2, 2, 1e-10);
    const auto r = walk(p);
    REQUIRE(!r.deadlock);
    CHECK(last_of(r, -1)->tag(MemTag::FLATTEN_TEMP) == Approx(bytes).epsilon(kTol));
    for (const char* name : {"temp_grad_buffer_for_gpu_offload", "temp_grad_gpu_buffer"}) {
      const auto a = allocs(p, name);
      REQUIRE(a.size() == 1);
      CHECK(a[0].bytes.value() == Approx(bytes / 2).epsilon(kTol));
    }
  }
}

TEST_CASE(
    "OffloadNvme: before DeepSpeed 0.6.0, GA 2 keeps grads_in_partition per sub-group, pinned iff "
    "offload_param.pin_memory",
    "[zero][unit]") {
  // sub_group_size 500,500 packs the 2,002,000-element partition into 4 sub-groups of 500,500 (one block's weight
  // and bias partitions each). grads_in_partition: one CPU tensor of 2 x 500,500 = 1,001,000 B per sub-group,
  // 4,004,000 B in all. pin_memory true: torch.zeros(...).pin_memory() holds the pageable zeros and the pinned copy
  // at once, so the host peak of the tag is 4,004,000 + 1,001,000 = 5,005,000 B. Per step: micro-step 0 sends the
  // partition D2H (2 x 2,002,000 B); micro-step 1, the boundary, brings it back H2D (2 x 2,002,000 B) and sends the
  // fp32 sum D2H (4 x 2,002,000 B).
  for (bool pin : {true, false}) {
    INFO("pin_memory " << pin);
    auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME);
    z.deepspeed_version = {0, 3, 16};
    z.sub_group_size = 500'500;
    z.offload_param_pin_memory = pin;
    TinyModel m;
    m.grad_accum = 2;
    const auto p = generate(make_workload(m), z, 2, 2, 1e-10);
    const auto r = walk(p);
    REQUIRE(!r.deadlock);
    CHECK(program::validate(p).empty());
    CHECK(last_of(r, 1)->host_tag(MemTag::GRAD_PARTITION) == Approx(4 * 2 * 500'500.0).epsilon(kTol));
    CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::GRAD_PARTITION); }) ==
          Approx((pin ? 5 : 4) * 2 * 500'500.0).epsilon(kTol));
    for (int i = 0; i < 4; ++i) {
      const auto a = allocs(p, "grads_in_partition sub-group " + std::to_string(i));
      REQUIRE(a.size() == 1);
      CHECK(a[0].device == program::Device::HOST);
      CHECK(a[0].pinned == pin);
      CHECK(allocs(p, "grads_in_partition sub-group " + std::to_string(i) + " (pageable zeros)").size() ==
            (pin ? 1U : 0U));
    }
    CHECK(copied(p, CopyDir::D2H, "d2h lp grad partition") == Approx(2 * 2 * kPart).epsilon(kTol));
    CHECK(copied(p, CopyDir::H2D, "h2d lp grad partition") == Approx(2 * 2 * kPart).epsilon(kTol));
    CHECK(copied(p, CopyDir::D2H, "d2h fp32 grad partition") == Approx(2 * 4 * kPart).epsilon(kTol));
  }
}

TEST_CASE("Stage3: before DeepSpeed 0.6.0 each backward allocates the IPG buffers, two with overlap_comm",
          "[zero][unit]") {
  // v0.3.15 / v0.5.10 stage3.py backward(): ipg_buffer = [reduce_bucket_size elements of the model dtype] plus a
  // second one with overlap_comm, dropped by ipg_epilogue's _release_ipg_buffers; from v0.6.0 one
  // __ipg_bucket_flat_buffer is allocated in __init__ and kept. reduce_bucket_size 1,000,000 x 2 B = 2,000,000 B.
  for (bool overlap : {true, false}) {
    INFO("overlap_comm " << overlap);
    auto z = zero_config(3);
    z.contiguous_gradients = true;
    z.overlap_comm = overlap;
    z.reduce_bucket_size = 1'000'000;
    z.deepspeed_version = {0, 5, 10};
    const auto r = walk(generate(make_workload(), z, 2, 2, 1e-10));
    REQUIRE(!r.deadlock);
    const auto ipg = [](const Sample& s) { return s.tag(MemTag::IPG_BUCKET); };
    CHECK(last_of(r, -1)->tag(MemTag::IPG_BUCKET) == 0);
    CHECK(r.peak(ipg, 1) == Approx((overlap ? 2 : 1) * 2e6).epsilon(kTol));
    CHECK(last_of(r, 1)->tag(MemTag::IPG_BUCKET) == 0);
    z.deepspeed_version = {0, 6, 0};
    const auto r6 = walk(generate(make_workload(), z, 2, 2, 1e-10));
    REQUIRE(!r6.deadlock);
    CHECK(last_of(r6, -1)->tag(MemTag::IPG_BUCKET) == Approx(2e6).epsilon(kTol));
    CHECK(r6.peak(ipg, 1) == Approx(2e6).epsilon(kTol));
  }
}

namespace {
/// Bytes of every Copy in `dir` on the stream named `stream`, in program order.
std::vector<double> copies_on(const program::StepProgram& p, const std::string& stream, CopyDir dir) {
  std::vector<double> out;
  for (const auto& s : p.streams)
    if (s.name == stream)
      for (const auto& op : s.ops)
        if (const auto* c = std::get_if<program::Copy>(&op.body); c != nullptr && c->dir == dir)
          out.push_back(c->bytes.value());
  return out;
}
} // namespace

TEST_CASE("OffloadNvme: a pipelined optimizer swapper needs 4 swap buffers per sub-group in flight", "[zero][unit]") {
  // pipelined_optimizer_swapper.py _swap_in_optimizer_state allocates num_tensors (fp32 param, exp_avg, exp_avg_sq)
  // + 1 (the fp32 grad) = 4 buffers per sub-group; pipeline_read adds the next sub-group's read, pipeline_write the
  // previous one's write: 4 x (1 + 1) = 8, 4 x (1 + 1 + 1) = 12. A single sub-group has no next one: 4.
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE);
  CHECK(zero::optimizer_swap_buffers_needed(z, 4) == 4);
  CHECK(zero::check_optimizer_swap_buffers(z, 4).empty()); // not pipelined: not this check's business
  z.optimizer_pipeline_read = true;
  CHECK(zero::optimizer_swap_buffers_needed(z, 4) == 8);
  CHECK_THAT(zero::check_optimizer_swap_buffers(z, 4), Catch::Contains("needs 8") && Catch::Contains("pipeline_read"));
  CHECK(zero::check_optimizer_swap_buffers(z, 1).empty());
  z.optimizer_pipeline_write = true;
  CHECK(zero::optimizer_swap_buffers_needed(z, 4) == 12);
  z.optimizer_swap_buffer_count = 8;
  CHECK_THAT(zero::check_optimizer_swap_buffers(z, 2), Catch::Contains("needs 12"));
  z.optimizer_swap_buffer_count = 12;
  CHECK(zero::check_optimizer_swap_buffers(z, 2).empty());
  z.offload_optimizer = scenario::OffloadDevice::CPU; // only the NVMe swapper pipelines
  z.optimizer_swap_buffer_count = 4;
  CHECK(zero::check_optimizer_swap_buffers(z, 4).empty());
}

TEST_CASE(
    "OffloadNvme: pipeline_read and pipeline_write split the optimizer swaps over a read and a write stream, "
    "with buffer_count x the largest sub-group x 4 B of pinned host buffers",
    "[zero][unit]") {
  // N = 2, sub_group_size 500,500: each block's partition (500,000 + 500) is one sub-group, K = 4.
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE);
  z.sub_group_size = 500'500;
  z.optimizer_pipeline_read = true;
  z.optimizer_pipeline_write = true;
  const auto wl = make_workload();
  // DeepSpeed's default 4 buffers cannot hold three sub-groups' swaps: PipelinedOptimizerSwapper asserts.
  CHECK_THROWS_WITH(generate(wl, z, 2, 2, 1e-10),
                    Catch::Contains("zero.offload_optimizer.buffer_count") && Catch::Contains("needs 12"));
  z.optimizer_swap_buffer_count = 12;
  const auto p = generate(wl, z, 2, 2, 1e-10);
  const auto r = walk(p);
  REQUIRE(!r.deadlock);
  // SwapBufferManager(num_elems = largest sub-group, count = buffer_count), fp32: 12 x 500,500 x 4 B = 24,024,000 B.
  CHECK(last_of(r, 1)->host_tag(MemTag::FP32_MASTER) == Approx(12 * 500'500 * 4.0).epsilon(kTol));
  // The read handle reads every sub-group each step (8 B/elem at step 0, 16 B after); the write handle takes the
  // fp32 grads at the GA boundary (4 B/elem) and the optimizer swap-outs (12 B/elem).
  const auto reads = copies_on(p, "nvme", CopyDir::NVME_READ);
  REQUIRE(reads.size() == 8);
  CHECK(reads[0] == Approx(8 * 500'500.0).epsilon(kTol));
  CHECK(reads[7] == Approx(16 * 500'500.0).epsilon(kTol));
  CHECK(copies_on(p, "nvme", CopyDir::NVME_WRITE).empty());
  const auto writes = copies_on(p, "nvme write", CopyDir::NVME_WRITE);
  double written = 0;
  for (const double w : writes)
    written += w;
  // INIT's swap-out of the fp32 master (4 B x 2,002,000, initialize_parameters on the write handle), then per step
  // 4 + 12 B x 2,002,000: 8,008,000 + 2 x 32,032,000 = 72,072,000 B.
  CHECK(written == Approx(4 * kPart + 2 * 16 * kPart).epsilon(kTol));
}

TEST_CASE("OffloadNvme: the new pageable m, v are copied into the pinned swap buffers at the step that creates them",
          "[zero][unit]") {
  // CPU Adam creates m, v with torch.zeros_like (pageable); the swapper copies them into pinned swap buffers before
  // writing them (optimizer_utils.py l.412-433 _swap_out_unpinned_tensors; pipelined_optimizer_swapper.py l.177-188
  // @v0.19.5): 8 B read + 8 B written per element. At cpu_adam_seconds_per_param 1e-10 a host byte costs
  // 1e-10 / 30 s (cpu_seconds_per_byte); the pinned 8 B count pinned_byte_weight times. Partition 2,002,000
  // elements: weight 1: 16 x 2,002,000 x 1e-10 / 30 = 1.067733e-4 s; weight 2: (8 + 2 x 8) x 2,002,000 x 1e-10 / 30
  // = 1.6016e-4 s. From step 1 on m, v are read into (and written from) the pinned buffers: no copy.
  const auto wl = make_workload();
  const std::string label = "copy adam m,v into pinned swap buffers";
  for (const double weight : {1.0, 2.0}) {
    INFO("pinned_byte_weight " << weight);
    auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE); // DeepSpeed 0.19.5: lazy m, v
    zero::GeneratorInput in{wl, z, 2, 2, 1e-10};
    in.pinned_byte_weight = weight;
    const auto p = zero::generate_program(in);
    const auto ops = cpu_ops(p, label);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].first == program::Phase::OFFLOAD); // the swapper's work, as its writes
    CHECK(ops[0].second == Approx((8 + 8 * weight) * kPart * 1e-10 / 30).epsilon(kTol));
    // PartitionedOptimizerSwapper: step 0 writes the pinned master (4 B), then the copied m, v (8 B); step 1 all
    // three at once (12 B).
    CHECK(copies(p, CopyDir::NVME_WRITE, "swap out optimizer") ==
          std::vector<double>{4 * kPart, 8 * kPart, 12 * kPart});
    CHECK(!walk(p).deadlock);
  }
  {
    // PipelinedOptimizerSwapper: the copy, then one 12 B write per swap-out (one sub-group: 4 buffers suffice).
    auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE);
    z.optimizer_pipeline_read = true;
    z.optimizer_pipeline_write = true;
    const auto p = generate(wl, z, 2, 2, 1e-10);
    const auto ops = cpu_ops(p, label);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].second == Approx(16 * kPart * 1e-10 / 30).epsilon(kTol));
    CHECK(copies(p, CopyDir::NVME_WRITE, "swap out optimizer") == std::vector<double>{12 * kPart, 12 * kPart});
    CHECK(!walk(p).deadlock);
  }
  {
    // Before v0.13.2 initialize_optimizer_states' step creates them: the copy is at init, none at the steps.
    auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NONE);
    z.deepspeed_version = {0, 13, 1};
    const auto p = generate(wl, z, 2, 2, 1e-10);
    const auto ops = cpu_ops(p, label);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].first == program::Phase::INIT);
    CHECK(ops[0].second == Approx(16 * kPart * 1e-10 / 30).epsilon(kTol));
    CHECK(copies(p, CopyDir::NVME_WRITE, "swap out optimizer") ==
          std::vector<double>{4 * kPart, 8 * kPart, 12 * kPart, 12 * kPart});
    CHECK(!walk(p).deadlock);
  }
}

TEST_CASE(
    "OffloadNvme: the initial fp32 master is copied into the pinned swap buffers before its first NVMe write, "
    "from where _create_fp32_partitions finds it",
    "[zero][unit]") {
  // initialize_parameters -> _swap_out_unpinned_tensors: `dst.data.copy_(src.data)` of each sub-group's source into
  // a pinned fp32 swap buffer, then the aio write (optimizer_utils.py l.412-433, stage3.py l.1054-1059 and
  // l.1097-1099 @v0.19.5; the same from v0.3.16). Partition 2,002,000 elements (bf16, N = 2, one sub-group); a
  // host byte costs 1e-10 / 30 s at cpu_adam_seconds_per_param 1e-10, a pinned one pinned_byte_weight (3) times:
  //  - lp partitions on the GPU: a blocking copy_ across devices and dtypes goes D2H in lp into a pageable temporary
  //    (2 B x 2,002,000 = 4,004,000 B D2H, the temporary 4,004,000 B of host memory) that the CPU converts: 2 B
  //    pageable read + 4 B pinned written, (2 + 3 x 4) x 2,002,000 x 1e-10 / 30 = 9.3427e-5 s;
  //  - offload_param=cpu, the pinned lp partitions: (3 x 2 + 3 x 4) x 2,002,000 x 1e-10 / 30 = 1.2012e-4 s, no D2H;
  //  - offload_param=nvme, the unpinned fp32 buffer: (4 + 3 x 4) x 2,002,000 x 1e-10 / 30 = 1.06773e-4 s.
  // The unpriced copy made the first write follow the build of the master directly.
  const auto wl = make_workload();
  const std::string label = "copy fp32 master into pinned swap buffers";
  using D = scenario::OffloadDevice;
  for (const auto& [par, bytes] : {std::pair{D::NONE, 14.0}, {D::CPU, 18.0}, {D::NVME, 16.0}}) {
    INFO("offload_param " << static_cast<int>(par));
    zero::GeneratorInput in{wl, infinity(D::NVME, par), 2, 2, 1e-10};
    in.pinned_byte_weight = 3.0;
    const auto p = zero::generate_program(in);
    const auto ops = cpu_ops(p, label);
    REQUIRE(ops.size() == 1);
    CHECK(ops[0].first == program::Phase::INIT);
    CHECK(ops[0].second == Approx(bytes * kPart * 1e-10 / 30).epsilon(kTol));
    const auto d2h = copies(p, CopyDir::D2H, "d2h lp partition for the fp32 master");
    CHECK(d2h == (par == D::NONE ? std::vector<double>{2 * kPart} : std::vector<double>{}));
    CHECK(ordered_after(p, find_op(p, "cpu", -1, label, false), find_op(p, "nvme", -1, "swap out fp32 master", false)));
    const auto r = walk(p);
    CHECK(!r.deadlock);
    CHECK(r.peak([](const Sample& s) { return s.host_tag(MemTag::FLATTEN_TEMP); }, -1) ==
          Approx(par == D::NONE ? 2 * kPart : 0.0).epsilon(kTol));
  }
}

namespace {

/// Three blocks of one 1e9-element weight each (TinyModel without its biases): at N = 2 every partition is 5e8
/// elements and the rank's trainable partition 1.5e9 elements.
workload::Workload three_1e9_weights() {
  TinyModel m;
  m.blocks = 3;
  m.weight_numel = 1'000'000'000;
  auto wl = make_workload(m);
  wl.total_params = 0;
  for (auto& l : wl.layers) {
    l.params.pop_back(); // the bias
    l.param_count = m.weight_numel;
    l.param_grad_bytes_lp = Bytes(2.0 * 1e9);
    wl.total_params += l.param_count;
  }
  wl.trainable_params = wl.total_params;
  wl.largest_layer_params = m.weight_numel;
  return wl;
}

/// Bytes of every Copy in `dir` labelled `prefix`..., by the phase it runs in.
double copied_in(const program::StepProgram& p, CopyDir dir, const std::string& prefix, program::Phase phase) {
  double sum = 0;
  for (const auto& s : p.streams)
    for (const auto& op : s.ops)
      if (const auto* c = std::get_if<program::Copy>(&op.body);
          c != nullptr && c->dir == dir && op.phase == phase && p.labels[op.label].rfind(prefix, 0) == 0)
        sum += c->bytes.value();
  return sum;
}

} // namespace

TEST_CASE("OffloadNvme: offload_param.max_in_cpu keeps the leading sub-groups in a pinned CPU buffer, off NVMe",
          "[zero][unit]") {
  // stage3.py @v0.19.5: _create_param_groups_fp16_flat_cpu_memory (l.808-831) allocates min(Σ partitions,
  // max_in_cpu) lp elements of pinned CPU memory per rank; _create_fp16_partitions_with_defragmentation (l.897-923)
  // gives a sub-group a slice iff flat_offset + its elements <= that; _move_to_flat_buffer (l.776-806) swaps those
  // in for good ('not-nvme'), and _partitioned_params_swap_out (l.1190-1209) only writes the others to NVMe.
  // Hand count, 3 weights of 1e9 at N = 2 (5e8-element partitions, 1.5e9 per rank), sub_group_size 1e9 (default):
  // sub-group 0 = {w0, w1} closes at exactly 1e9 elements, sub-group 1 = {w2} = 5e8. max_in_cpu 1e9 (default): the
  // buffer is min(1.5e9, 1e9) = 1e9 elements = 2e9 B pinned; sub-group 0 fits (0 + 1e9 <= 1e9), sub-group 1 does
  // not (1e9 + 5e8 > 1e9). So 1e9 elements live in host memory and 5e8 (block.2) on NVMe.
  const auto wl = three_1e9_weights();
  auto z = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::NVME);
  z.param_swap_buffer_size = 500'000'000; // a partition must fit one swap buffer
  z.param_max_in_cpu = 1'000'000'000; // DeepSpeed's default
  const auto p = generate(wl, z, 2, 2, 1e-12);
  REQUIRE(program::validate(p).empty());
  const auto buf = allocs(p, "lp partitions within max_in_cpu (pinned host flat buffer)");
  REQUIRE(buf.size() == 1);
  CHECK(buf[0].bytes.value() == Approx(2e9).epsilon(kTol));
  CHECK(buf[0].device == program::Device::HOST);
  CHECK(buf[0].pinned);
  // INIT: zero.Init writes all three partitions (3 x 5e8 x 2 B = 3e9 B), then w0 and w1 are read back into the
  // buffer (2 x 5e8 x 2 B = 2e9 B).
  CHECK(copied_in(p, CopyDir::NVME_WRITE, "swap out lp partitions", program::Phase::INIT) == Approx(3e9).epsilon(kTol));
  CHECK(copied_in(p, CopyDir::NVME_READ, "swap in lp partitions to the CPU flat buffer", program::Phase::INIT) ==
        Approx(2e9).epsilon(kTol));
  // Per step, only sub-group 1's lp partition is written: 5e8 x 2 B = 1e9 B, 2e9 B over the 2 steps.
  CHECK(copied_in(p, CopyDir::NVME_WRITE, "swap out lp params", program::Phase::OFFLOAD) == Approx(2e9).epsilon(kTol));
  // Every parameter read is block.2's 5e8-element partition (1e9 B); blocks 0 and 1 are fetched H2D from host memory.
  const auto reads = copies(p, CopyDir::NVME_READ, "swap in params");
  REQUIRE(!reads.empty());
  for (const double b : reads)
    CHECK(b == Approx(1e9).epsilon(kTol));
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params block.0").empty());
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params block.1").empty());
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params ahead block.0").empty());
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params ahead block.1").empty());

  // max_in_cpu 0: no buffer (flat_buffer_size 0 is a 1-element tensor, which no sub-group fits), everything swaps:
  // 1.5e9 x 2 B = 3e9 B written per step, and every block's partition is read.
  z.param_max_in_cpu = 0;
  const auto q = generate(wl, z, 2, 2, 1e-12);
  CHECK(allocs(q, "lp partitions within max_in_cpu (pinned host flat buffer)").empty());
  CHECK(copied_in(q, CopyDir::NVME_READ, "swap in lp partitions to the CPU flat buffer", program::Phase::INIT) == 0);
  CHECK(copied_in(q, CopyDir::NVME_WRITE, "swap out lp params", program::Phase::OFFLOAD) == Approx(6e9).epsilon(kTol));
  CHECK(copied(q, CopyDir::NVME_READ, "swap in params") > copied(p, CopyDir::NVME_READ, "swap in params"));
}

TEST_CASE("OffloadNvme: a sub-group that crosses max_in_cpu goes to NVMe whole, and so do all after it",
          "[zero][unit]") {
  // TinyModel's biases back (1,000 elements, 500 per rank): sub-group 0 = {w0, b0, w1} = 5e8 + 500 + 5e8 =
  // 1,000,000,500 elements (_create_fp16_sub_groups closes a group once it holds >= sub_group_size), more than the
  // 1e9-element buffer, so it gets no slice; sub-group 1 = {b1, w2, b2} starts at flat_offset 1,000,000,500 and does
  // not fit either. The buffer is still allocated: min(1,500,001,500, 1e9) = 1e9 elements = 2e9 B pinned. All three
  // weights swap: 1.5e9 x 2 B = 3e9 B written per step (the biases, 1,000 B each, are under the 1 MiB swap minimum).
  TinyModel m;
  m.blocks = 3;
  m.weight_numel = 1'000'000'000;
  auto z = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::NVME);
  z.param_swap_buffer_size = 500'000'000;
  z.param_max_in_cpu = 1'000'000'000; // DeepSpeed's default
  const auto p = generate(make_workload(m), z, 2, 1, 1e-12);
  REQUIRE(program::validate(p).empty());
  const auto buf = allocs(p, "lp partitions within max_in_cpu (pinned host flat buffer)");
  REQUIRE(buf.size() == 1);
  CHECK(buf[0].bytes.value() == Approx(2e9).epsilon(kTol));
  CHECK(copied_in(p, CopyDir::NVME_READ, "swap in lp partitions to the CPU flat buffer", program::Phase::INIT) == 0);
  CHECK(copied_in(p, CopyDir::NVME_WRITE, "swap out lp params", program::Phase::OFFLOAD) == Approx(3e9).epsilon(kTol));
  CHECK(!copies(p, CopyDir::NVME_READ, "swap in params block.0").empty());
}

TEST_CASE("OffloadNvme: with the default max_in_cpu a small model's params never touch NVMe after init",
          "[zero][unit]") {
  // TinyModel at N = 2: 2,002,000 partition elements per rank, one sub-group, within 1e9: the whole partition is
  // in the pinned buffer (2,002,000 x 2 B = 4,004,000 B), no param is read from or written to NVMe in a step, and
  // the run still completes (the walker finds no deadlock).
  auto z = infinity(scenario::OffloadDevice::NVME, scenario::OffloadDevice::NVME);
  z.param_max_in_cpu = 1'000'000'000; // DeepSpeed's default
  const auto p = generate(make_workload(), z, 2, 2, 1e-10);
  REQUIRE(program::validate(p).empty());
  CHECK(!walk(p).deadlock);
  const auto buf = allocs(p, "lp partitions within max_in_cpu (pinned host flat buffer)");
  REQUIRE(buf.size() == 1);
  CHECK(buf[0].bytes.value() == Approx(4'004'000).epsilon(kTol));
  CHECK(copies(p, CopyDir::NVME_READ, "swap in params").empty());
  CHECK(copies(p, CopyDir::NVME_WRITE, "swap out lp params").empty());
}

TEST_CASE(
    "OffloadNvme: with a sub-group on NVMe the host reserves a pinned lp swap-out buffer of the largest "
    "sub-group's full params",
    "[zero][unit]") {
  // stage3.py l.925-938 @v0.19.5: when some sub-group has no slice of the CPU flat buffer,
  // reserve_partitioned_swap_space (partitioned_param_swapper.py l.393-398) pins Σ _io_aligned_numel(ds_numel) lp elements over the params of the
  // sub-group with the most partition elements: full numels, not partitions. Three 1e9 weights at N = 2, default
  // max_in_cpu 1e9: sub-group 0 = {w0, w1} (1e9 partition elements) is in CPU, sub-group 1 = {w2} on NVMe. The largest
  // is sub-group 0: 2 x 1e9 full elements (1e9 = 1,953,125 x 512, already aligned) x 2 B = 4e9 B.
  // Before v0.4.0 (stage3.py l.1170-1177 @v0.3.16) param_group_fp16_flat_reuse_buffer holds the largest partition
  // elements up to the first sub-group on NVMe: 1e9 x 2 B = 2e9 B. With max_in_cpu 2e9 every sub-group is in CPU:
  // no buffer.
  const auto wl = three_1e9_weights();
  auto z = infinity(scenario::OffloadDevice::CPU, scenario::OffloadDevice::NVME);
  z.param_swap_buffer_size = 500'000'000;
  z.param_max_in_cpu = 1'000'000'000;
  const std::string label = "lp swap-out buffer of the largest sub-group (pinned host)";
  const auto buf = allocs(generate(wl, z, 2, 1, 1e-12), label);
  REQUIRE(buf.size() == 1);
  CHECK(buf[0].bytes.value() == Approx(4e9).epsilon(kTol));
  CHECK(buf[0].device == program::Device::HOST);
  CHECK(buf[0].pinned);
  z.deepspeed_version = {0, 3, 16};
  const auto old = allocs(generate(wl, z, 2, 1, 1e-12), label);
  REQUIRE(old.size() == 1);
  CHECK(old[0].bytes.value() == Approx(2e9).epsilon(kTol));
  z.deepspeed_version = {0, 19, 5};
  z.param_max_in_cpu = 2'000'000'000;
  CHECK(allocs(generate(wl, z, 2, 1, 1e-12), label).empty());
}
