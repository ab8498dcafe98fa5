// Peak attribution: each live tag at the worst rank's peak with the knob that controls it. Inputs are built by hand
// (tests/analysis/synthetic_run.hpp); the knob texts are checked against DeepSpeed's rules in zero_semantics.md.
#include "analysis/attribution.hpp"
#include "analysis/console.hpp"
#include "analysis/result_json.hpp"
#include "analysis/summary.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;
using Catch::Contains;
using nlohmann::json;

namespace {

constexpr double kTol = 1e-12;

/// Stage 2 with overlap_comm on: the default 5e8-element lp bucket is doubled -> 2 x 5e8 x 2 B = 2e9 B = 1.86 GiB
/// (zero_semantics.md §3.4, §7 item 10).
scenario::Scenario stage2_overlap() {
  auto sc = synthetic_scenario();
  sc.zero.stage = 2;
  sc.zero.overlap_comm = true;
  sc.training.micro_batch = 1;
  sc.training.seq_len = 1024;
  sc.training.activation_checkpointing = false;
  sc.training.flash_attention = true;
  return sc;
}

} // namespace

TEST_CASE("format_elements: DeepSpeed-style element counts", "[analysis][unit]") {
  CHECK(format_elements(500'000'000) == "5e8");
  CHECK(format_elements(50'000'000) == "5e7");
  CHECK(format_elements(100'000) == "1e5");
  CHECK(format_elements(1'500'000'000) == "1.5e9");
  CHECK(format_elements(16'777'216) == "16777216"); // HF "auto" reduce_bucket_size for h = 4096 (calibration §4.3)
  CHECK(format_elements(40'960) == "40960");
  CHECK(format_elements(0) == "0");
}

TEST_CASE("attribute_peak: stage 2 bucket, activations and optimizer states name their knobs, largest first",
          "[analysis][unit]") {
  const auto sc = stage2_overlap();
  trace::TagBytes t{};
  t[tag(program::MemTag::IPG_BUCKET)] = 2e9; // 1.86 GiB
  t[tag(program::MemTag::ACTIVATIONS)] = 3.0 * kGiB;
  t[tag(program::MemTag::OPTIMIZER_STATES)] = 1.5e9; // 8 B/param x 1.5e9/8 params (N_d = 8)
  const auto lines = attribute_peak(sc, t, 8);
  REQUIRE(lines.size() == 3); // zero tags are left out
  CHECK(lines[0].tag == "activations");
  CHECK(lines[0].bytes == Approx(3.0 * kGiB).epsilon(kTol));
  CHECK(lines[0].knob == "micro_batch=1, seq_len=1024, activation_checkpointing=false, flash_attention=true");
  CHECK(lines[1].tag == "ipg_bucket");
  CHECK(lines[1].bytes / kGiB == Approx(1.862645).epsilon(1e-6)); // 2e9 / 2^30
  CHECK(lines[1].knob == "reduce_bucket_size=5e8 (x2: overlap_comm=true)");
  CHECK(lines[2].tag == "optimizer_states");
  CHECK_THAT(lines[2].knob, Contains("8 B/param") && Contains("partitions over N_d=8"));
}

TEST_CASE("knob_for: the rules differ by ZeRO stage", "[analysis][unit]") {
  auto sc = synthetic_scenario(); // stage 3, overlap_comm unset (effective true), N_d = 8
  using program::MemTag;
  // Stage 3: one IPG bucket from init, not doubled (zero_semantics.md §7 item 11).
  CHECK(knob_for(sc, MemTag::IPG_BUCKET, 8) ==
        "reduce_bucket_size=5e8 (zero.stage=3: one bucket from init, not doubled by overlap_comm)");
  CHECK(knob_for(sc, MemTag::GATHER_BUFFER, 8) ==
        "stage3_prefetch_bucket_size=5e7, stage3_max_live_parameters=1e9, stage3_max_reuse_distance=1e9");
  sc.zero.stage3_use_all_reduce_for_fetch_params = true; // partition_parameters.py _all_gather_coalesced
  CHECK(knob_for(sc, MemTag::GATHER_BUFFER, 8) ==
        "stage3_prefetch_bucket_size=5e7, stage3_max_live_parameters=1e9, stage3_max_reuse_distance=1e9, "
        "stage3_use_all_reduce_for_fetch_params=true (each fetch's flat buffer lives until all its params are "
        "released)");
  sc.zero.stage3_use_all_reduce_for_fetch_params = false;
  sc.zero.stage3_allgather_sequential = true; // engine.py: prefetch_bucket_size forced to 1
  CHECK_THAT(knob_for(sc, MemTag::GATHER_BUFFER, 8), Contains("stage3_allgather_sequential=true") &&
                                                         Contains("stage3_prefetch_bucket_size forced to 1") &&
                                                         !Contains("stage3_prefetch_bucket_size=5e7"));
  sc.zero.stage3_allgather_sequential = false;
  CHECK_THAT(knob_for(sc, MemTag::FP32_GRADS, 8), Contains("sub_group_size=1e9"));
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8),
             Contains("partitioned over N_d=8") && Contains("stage3_param_persistence_threshold=1e5"));
  // The cap on the persistent total (parameter_offload.py mark_persistent_parameters) is named only when set.
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8), !Contains("stage3_model_persistence_threshold"));
  sc.zero.stage3_model_persistence_threshold = 2'000'000;
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8),
             Contains(
                 "stage3_param_persistence_threshold=1e5 (at most stage3_model_persistence_threshold=2e6 in all)"));
  sc.zero.stage3_model_persistence_threshold = scenario::ZeroConfig::kNoPersistenceCap;
  // Offloaded parameters sit on the host with offload_param=cpu and on NVMe with nvme (DeepSpeed's defaults: 5
  // buffers of 1e8 elements, offload_config.py), not "on the host".
  sc.zero.offload_param = scenario::OffloadDevice::CPU;
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8), Contains("param partitions on the host (offload_param=cpu)"));
  sc.zero.offload_param = scenario::OffloadDevice::NVME;
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8),
             Contains("param partitions on NVMe (offload_param=nvme, swapped in through 5 pinned host buffers of "
                      "offload_param.buffer_size=1e8)") &&
                 !Contains("on the host"));
  sc.zero.offload_param = scenario::OffloadDevice::NONE;
  // Stage 1/2: overlap_comm defaults to false -> one bucket; fp32 grads are the step-time cast.
  sc.zero.stage = 1;
  CHECK(knob_for(sc, MemTag::IPG_BUCKET, 8) == "reduce_bucket_size=5e8 (x1: overlap_comm=false)");
  CHECK_THAT(knob_for(sc, MemTag::FP32_GRADS, 8), Contains("step-time cast"));
  CHECK_THAT(knob_for(sc, MemTag::LP_GRADS, 8), Contains("grad_accum=4"));
  // Stage 0: nothing is partitioned.
  sc.zero.stage = 0;
  CHECK_THAT(knob_for(sc, MemTag::OPTIMIZER_STATES, 8), Contains("not partitioned"));
  CHECK_THAT(knob_for(sc, MemTag::LP_PARAMS, 8), Contains("full copy on every rank"));
}

TEST_CASE("knob_for: stage 1 holds its lp grads because overlap_comm is false, at GA 1 as at GA > 1",
          "[analysis][unit]") {
  // stage_1_and_2.py (v0.19.5) process_gradients reduces in the backward hooks only `if self.partition_gradients or
  // self.overlap_comm`, and reduce_ready_partitions_and_remove_grads only at the GA boundary (zero_semantics.md §3.4).
  auto sc = synthetic_scenario();
  using program::MemTag;
  sc.zero.stage = 1;
  sc.zero.overlap_comm = false;
  sc.training.grad_accum = 1;
  const std::string ga1 = knob_for(sc, MemTag::LP_GRADS, 8);
  CHECK(ga1 ==
        "bf16 grads 2 B/param, full, until the reduction after backward (zero.stage=1, overlap_comm=false: "
        "its backward hooks do not reduce; overlap_comm=true or stage 2 reduce bucket by bucket)");
  CHECK_THAT(ga1, !Contains("grad_accum") && !Contains("micro-step"));
  sc.training.grad_accum = 4;
  CHECK_THAT(knob_for(sc, MemTag::LP_GRADS, 8), Contains("accumulated over grad_accum=4 micro-steps") &&
                                                    Contains("overlap_comm=false") && Contains("all at once"));
  sc.zero.overlap_comm = true;
  CHECK_THAT(knob_for(sc, MemTag::LP_GRADS, 8),
             Contains("grad_accum=4") && Contains("overlap_comm=true") && Contains("reduces them bucket by bucket"));
  sc.training.grad_accum = 1;
  CHECK_THAT(knob_for(sc, MemTag::LP_GRADS, 8),
             Contains("not yet copied into the bucket") && Contains("overlap_comm=true") && !Contains("grad_accum"));
  // grads_in_partition holds every param overlapping the partition whole, so it is not 2 B/param / N_d.
  CHECK_THAT(knob_for(sc, MemTag::GRAD_PARTITION, 8),
             Contains("every param overlapping") && Contains("1/N_d=8") && !Contains("2 B/param / N_d"));
}

TEST_CASE("summarize: the summary carries the worst rank's attribution", "[analysis][unit]") {
  // synthetic_run(): worst rank 1 at 12 GiB = optimizer_states 8 GiB + lp_params 4 GiB, step 1, 'alloc adam'.
  const auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  REQUIRE(s.peak_attribution.size() == 2);
  CHECK(s.peak_attribution[0].tag == "optimizer_states");
  CHECK(s.peak_attribution[0].bytes == Approx(8.0 * kGiB).epsilon(kTol));
  CHECK(s.peak_attribution[1].tag == "lp_params");
  CHECK(s.peak_attribution[1].bytes == Approx(4.0 * kGiB).epsilon(kTol));
}

TEST_CASE("result_json: peak_attribution lists tag, gib and knob and survives the summary round trip",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto run = synthetic_run();
  const auto s = summarize(sc, synthetic_workload(), run);
  const json j = json::parse(result_json(sc, "", s, run));
  const auto& a = j.at("peak_attribution");
  REQUIRE(a.size() == 2);
  CHECK(a[0].at("tag") == "optimizer_states");
  CHECK(a[0].at("gib").get<double>() == Approx(8.0).epsilon(kTol));
  CHECK_THAT(a[0].at("knob").get<std::string>(), Contains("8 B/param"));
  CHECK(j.at("summary").at("peak_attribution") == a);
  const auto back = summary_from_json(summary_json(s));
  REQUIRE(back.peak_attribution.size() == 2);
  CHECK(back.peak_attribution[1].tag == "lp_params");
  CHECK(back.peak_attribution[1].bytes == s.peak_attribution[1].bytes);
  CHECK(back.peak_attribution[1].knob == s.peak_attribution[1].knob);
}

TEST_CASE("console_report: each variant block shows what sets the peak, with step and op label", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  const std::string one = console_report(sc, {{"", ".", s}});
  CHECK_THAT(one, Contains("what sets the peak (step 1, at 'alloc adam')"));
  CHECK_THAT(one, Contains("optimizer_states     8.00 GiB \u2014 AdamW m,v fp32 8 B/param"));
  const std::string two = console_report(sc, {{"zero.stage=2", "stage-2", s}, {"zero.stage=3", "stage-3", s}});
  std::size_t n = 0;
  for (std::size_t pos = two.find("what sets the peak"); pos != std::string::npos;
       pos = two.find("what sets the peak", pos + 1))
    ++n;
  CHECK(n == 2);
}

TEST_CASE("knob_for: BF16_Optimizer's fp32 grad buffer is a full 4 B/param copy, not divided by N_d",
          "[analysis][unit]") {
  // zero_semantics.md §3.2: bf16 + grad_accum_dtype fp32 + stage 1 + no offload selects BF16_Optimizer, whose fp32
  // gradient buffer holds every parameter on every rank (bf16_optimizer.py).
  scenario::Scenario sc = stage2_overlap();
  sc.training.precision = scenario::Precision::BF16;
  sc.zero.stage = 1;
  sc.zero.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  CHECK_THAT(knob_for(sc, program::MemTag::FP32_GRADS, 8), Contains("BF16_Optimizer") && Contains("not partitioned"));
  sc.zero.grad_accum_dtype = scenario::GradAccumDtype::MODEL;
  CHECK_THAT(knob_for(sc, program::MemTag::FP32_GRADS, 8), Contains("/ N_d=8"));
}

TEST_CASE("knob_for: with stage 1/2 optimizer offload the GPU's flatten temporaries are the offload path's",
          "[analysis][unit]") {
  // New-user 14: a 0.14.2 offload run's GPU peak held the fp32 partition sent up for the GPU-side cast
  // (stage_1_and_2.py v0.14.1-v0.16), while the line pointed at reduce_bucket_size and at torch.optim temporaries that
  // live on the host with offload.
  auto sc = synthetic_scenario();
  using program::MemTag;
  sc.zero.stage = 2;
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  sc.zero.deepspeed_version = {0, 14, 2};
  const std::string k = knob_for(sc, MemTag::FLATTEN_TEMP, 8);
  CHECK_THAT(k, Contains("the fp32 partition sent H2D and cast on the GPU, 4 B/param / N_d=8"));
  CHECK_THAT(k, !Contains("torch AdamW"));
  sc.zero.deepspeed_version = {0, 17, 6}; // the host casts from v0.17.0
  CHECK_THAT(knob_for(sc, MemTag::FLATTEN_TEMP, 8), !Contains("sent H2D") && Contains("offload temporaries"));
  sc.zero.offload_optimizer = scenario::OffloadDevice::NONE; // the torch step on the GPU: its temporaries are here
  CHECK_THAT(knob_for(sc, MemTag::FLATTEN_TEMP, 8), Contains("torch AdamW sqrt + denom temps 8 B/param"));
}

TEST_CASE(
    "knob_for: communication_data_type fp32 names itself where it sizes the stage-3 bucket and the cast "
    "temporaries (stage3.py, stage_1_and_2.py allreduce_bucket)",
    "[analysis][unit]") {
  auto sc = synthetic_scenario(); // stage 3, bf16
  using program::MemTag;
  sc.zero.communication_data_type = scenario::CommDataType::FP32;
  CHECK(knob_for(sc, MemTag::IPG_BUCKET, 8) ==
        "reduce_bucket_size=5e8 x 4 B/element (communication_data_type=fp32) (zero.stage=3: one bucket from init, "
        "not doubled by overlap_comm)");
  sc.zero.stage = 2;
  sc.zero.overlap_comm = false;
  // Stage 1/2 buckets keep the model dtype; the casts are flatten/cast temporaries.
  CHECK(knob_for(sc, MemTag::IPG_BUCKET, 8) == "reduce_bucket_size=5e8 (x1: overlap_comm=false)");
  CHECK_THAT(knob_for(sc, MemTag::FLATTEN_TEMP, 8),
             Contains("<= reduce_bucket_size=5e8 per in-flight chunk, plus their casts to "
                      "communication_data_type=fp32 (4 B/element)"));
  // The model's own dtype written out casts nothing.
  sc.zero.communication_data_type = scenario::CommDataType::BF16;
  CHECK_THAT(knob_for(sc, MemTag::FLATTEN_TEMP, 8), !Contains("communication_data_type"));
}

TEST_CASE("attribute_host_peak: each host tag says whether it is pinned, and the tags add up to the summary's split",
          "[analysis][unit]") {
  // newuser31 F17: 70B, stage 3, optimizer offload to the CPU with pin_memory true, N_d 32. Per rank, by hand from
  // Psi = 68.977e9: m, v 8 Psi / 32 = 16.06 GiB and the fp32 master 4 Psi / 32 = 8.03 GiB are pageable (DeepSpeedCPUAdam's
  // torch.zeros_like, stage3.py's unpinned clone), the fp32 grads 4 Psi / 32 = 8.03 GiB and the bf16
  // grad_partitions_flat_buffer 2 Psi / 32 = 4.01 GiB pinned (stage3.py l.628-629 and l.1157-1158 follow
  // pin_memory): 12.04 GiB pinned and 24.09 GiB pageable, the summary's split.
  using program::MemTag;
  auto sc = synthetic_scenario();
  sc.zero.stage = 3;
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.zero.offload_optimizer_pin_memory = true;
  RunSummary s;
  s.world_size = 32;
  const double psi = 68.977e9;
  const auto at = [](MemTag t) { return static_cast<std::size_t>(t); };
  s.host_peak_by_tag[at(MemTag::OPTIMIZER_STATES)] = 8 * psi / 32;
  s.host_peak_by_tag[at(MemTag::FP32_MASTER)] = 4 * psi / 32;
  s.host_peak_by_tag[at(MemTag::FP32_GRADS)] = 4 * psi / 32;
  s.host_peak_by_tag[at(MemTag::GRAD_PARTITION)] = 2 * psi / 32;
  s.host_pinned_at_peak_by_tag[at(MemTag::FP32_GRADS)] = 4 * psi / 32;
  s.host_pinned_at_peak_by_tag[at(MemTag::GRAD_PARTITION)] = 2 * psi / 32;
  const auto lines = attribute_host_peak(sc, s);
  REQUIRE(lines.size() == 4);
  double pinned = 0;
  double pageable = 0;
  for (const auto& l : lines) {
    INFO(l.tag << ": " << l.knob);
    const bool is_pinned = l.knob.rfind("pinned; ", 0) == 0;
    CHECK((is_pinned || l.knob.rfind("pageable", 0) == 0));
    (is_pinned ? pinned : pageable) += l.bytes;
  }
  CHECK(pinned / kGiB == Approx(6 * psi / 32 / kGiB).epsilon(kTol)); // 12.04 GiB
  CHECK(pageable / kGiB == Approx(12 * psi / 32 / kGiB).epsilon(kTol)); // 24.09 GiB
  CHECK(6 * psi / 32 / kGiB == Approx(12.045).epsilon(1e-3));
  CHECK(12 * psi / 32 / kGiB == Approx(24.090).epsilon(1e-3));
  // Largest first: optimizer_states, then the two 8.03 GiB tags, then grad_partition.
  CHECK_THAT(lines[0].knob, Contains("pageable (pin_memory does not reach them") && Contains("cpu_adam.py l.154-157"));
  CHECK(lines[3].tag == "grad_partition");
  CHECK_THAT(lines[3].knob, Contains("pinned; grad_partitions_flat_buffer"));
  for (const auto& l : lines)
    if (l.tag == "fp32_master")
      CHECK_THAT(l.knob, Contains("pageable (stage3.py _create_fp32_partitions") && Contains("l.982-985"));
  // A tag partly pinned says how much of each.
  s.host_pinned_at_peak_by_tag[at(MemTag::GRAD_PARTITION)] = 1 * kGiB;
  s.host_peak_by_tag[at(MemTag::GRAD_PARTITION)] = 3 * kGiB;
  for (const auto& l : attribute_host_peak(sc, s))
    if (l.tag == "grad_partition")
      CHECK_THAT(l.knob, Contains("1.00 GiB pinned, 2.00 GiB pageable; "));
}

TEST_CASE("host_knob_for: each offloaded buffer names the ds_config setting that puts it on the host and sizes it",
          "[analysis][unit]") {
  using program::MemTag;
  auto sc = synthetic_scenario();
  sc.zero.stage = 2;
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.zero.offload_optimizer_pin_memory = true;
  // stage_1_and_2.py with cpu_offload: fp32 master and fp32 grad partitions 4 B/param / N_d on the host.
  CHECK(host_knob_for(sc, MemTag::FP32_MASTER, 8) ==
        "fp32 master partition 4 B/param / N_d=8 on the host (offload_optimizer=cpu, pin_memory=true)");
  CHECK_THAT(host_knob_for(sc, MemTag::OPTIMIZER_STATES, 8),
             Contains("m,v fp32 8 B/param / N_d=8") && Contains("first step"));
  CHECK_THAT(host_knob_for(sc, MemTag::LP_GRADS, 8), Contains("grad_accum="));
  // Stage 3 with NVMe: the host holds buffer_count swap buffers of the largest sub-group, not the fp32 master
  // (swap_tensor/partitioned_optimizer_swapper.py); offload_param=nvme swaps through buffer_count x buffer_size.
  sc.zero.stage = 3;
  sc.zero.offload_optimizer = scenario::OffloadDevice::NVME;
  sc.zero.optimizer_swap_buffer_count = 4;
  sc.zero.sub_group_size = 1'000'000'000;
  CHECK_THAT(host_knob_for(sc, MemTag::FP32_MASTER, 8),
             Contains("buffer_count=4") && Contains("sub_group_size=1e9") && Contains("on NVMe"));
  // sub_group_size 0 is one sub-group per parameter (stage3.py _create_fp16_sub_groups): no "min(0, ...)".
  sc.zero.sub_group_size = 0;
  CHECK_THAT(host_knob_for(sc, MemTag::FP32_GRADS, 8),
             Contains("the largest parameter's partition") && !Contains("min(sub_group_size=0"));
  sc.zero.sub_group_size = 1'000'000'000;
  CHECK_THAT(host_knob_for(sc, MemTag::FP32_GRADS, 8), Contains("min(sub_group_size=1e9, params/N_d)"));
  // Adam's m, v: at the first step from DeepSpeed 0.13.2, at initialisation before (initialize_optimizer_states'
  // step, removed by PR #5104).
  CHECK_THAT(host_knob_for(sc, MemTag::OPTIMIZER_STATES, 8), Contains("created at the first step"));
  sc.zero.deepspeed_version = {0, 13, 1};
  sc.zero.deepspeed_version_text = "0.13.1";
  CHECK_THAT(host_knob_for(sc, MemTag::OPTIMIZER_STATES, 8),
             Contains("created at initialisation (DeepSpeed 0.13.1 before 0.13.2)"));
  // NVMe: PartitionedOptimizerSwapper frees a sub-group's m, v at its swap-out (release_memory); the pipelined one
  // keeps them until the sub-group's next swap-in (pipelined_optimizer_swapper.py).
  CHECK_THAT(host_knob_for(sc, MemTag::OPTIMIZER_STATES, 8),
             Contains("8 B x one sub-group (sub_group_size=1e9)") && Contains("freed at its swap-out"));
  sc.zero.optimizer_pipeline_read = true;
  CHECK_THAT(host_knob_for(sc, MemTag::OPTIMIZER_STATES, 8),
             Contains("8 B/param / N_d=8") && Contains("created at initialisation") &&
                 Contains("keeps these pageable tensors until each sub-group's next swap-in"));
  sc.zero.optimizer_pipeline_read = false;
  sc.zero.deepspeed_version = {0, 19, 5};
  sc.zero.deepspeed_version_text = "0.19.5";
  sc.zero.offload_param = scenario::OffloadDevice::NVME;
  sc.zero.param_swap_buffer_count = 5;
  sc.zero.param_swap_buffer_size = 100'000'000;
  CHECK_THAT(host_knob_for(sc, MemTag::LP_PARAMS, 8), Contains("buffer_count=5 x buffer_size=1e8 x 2 B"));
  sc.zero.offload_param = scenario::OffloadDevice::CPU;
  CHECK_THAT(host_knob_for(sc, MemTag::LP_PARAMS, 8), Contains("2 B/param / N_d=8") && Contains("offload_param=cpu"));
  // Before DeepSpeed 0.6.0 stage 3's IPG bucket is allocated at each backward, doubled by overlap_comm.
  sc.zero.deepspeed_version = {0, 5, 10};
  sc.zero.deepspeed_version_text = "0.5.10";
  sc.zero.overlap_comm = true;
  CHECK(knob_for(sc, MemTag::IPG_BUCKET, 8) ==
        "reduce_bucket_size=5e8 (zero.stage=3, DeepSpeed 0.5.10 before 0.6.0: allocated for each backward, x2: "
        "overlap_comm=true)");
  sc.zero.deepspeed_version = {0, 19, 5};
  sc.zero.deepspeed_version_text = "0.19.5";
  // Stage 3's host lp gradients: grad_partitions_flat_buffer from DeepSpeed 0.6.0, grads_in_partition (GA > 1
  // only) before it (stage3.py at v0.3.15 partition_previous_reduced_grads).
  CHECK_THAT(host_knob_for(sc, MemTag::GRAD_PARTITION, 8), Contains("grad_partitions_flat_buffer 2 B/param / N_d=8"));
  sc.zero.deepspeed_version = {0, 3, 15};
  sc.zero.deepspeed_version_text = "0.3.15";
  CHECK_THAT(host_knob_for(sc, MemTag::GRAD_PARTITION, 8), Contains("grads_in_partition 2 B/param / N_d=8") &&
                                                               Contains("gradient_accumulation_steps > 1") &&
                                                               Contains("0.3.15"));
  // training.cpu_checkpointing: the checkpoints' host copies name their knob and their size's factors.
  CHECK_THAT(host_knob_for(sc, MemTag::ACTIVATIONS, 8),
             Contains("training.cpu_checkpointing=true") &&
                 Contains("micro_batch=" + std::to_string(sc.training.micro_batch) +
                          " x seq_len=" + std::to_string(sc.training.seq_len) +
                          " x hidden=" + std::to_string(sc.model.hidden) + " x 2 B"));
}

TEST_CASE("summarize: the worst rank's host peak is attributed by tag, largest first, with step and op",
          "[analysis][unit]") {
  auto sc = synthetic_scenario();
  sc.zero.stage = 2;
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  auto run = synthetic_run();
  // Two ranks' host memory by hand: rank 0 peaks at 20 GiB, rank 1 at 30 GiB = m,v 16 + fp32 master 8 + fp32 grads 6
  // (rank 1 is the worst), reached in step 0 by 'alloc adam' (label 3).
  for (std::uint32_t rank = 0; rank < 2; ++rank) {
    trace::RankMemory m;
    m.rank = rank;
    m.peak.bytes = (rank == 0 ? 20.0 : 30.0) * kGiB;
    m.peak.step = 0;
    m.peak.label = 3;
    m.peak.by_tag[tag(program::MemTag::OPTIMIZER_STATES)] = (rank == 0 ? 8.0 : 16.0) * kGiB;
    m.peak.by_tag[tag(program::MemTag::FP32_MASTER)] = (rank == 0 ? 4.0 : 8.0) * kGiB;
    m.peak.by_tag[tag(program::MemTag::FP32_GRADS)] = (rank == 0 ? 8.0 : 6.0) * kGiB;
    m.pinned_at_peak = (rank == 0 ? 8.0 : 6.0) * kGiB; // the fp32 grads pinned, the rest pageable
    m.pinned_by_tag_at_peak[tag(program::MemTag::FP32_GRADS)] = m.pinned_at_peak;
    run.host_memory.push_back(m);
  }
  const auto s = summarize(sc, synthetic_workload(), run);
  CHECK(s.host_peak_bytes == Approx(30.0 * kGiB).epsilon(kTol));
  CHECK(s.host_peak_step == 0);
  CHECK(s.host_peak_label == "alloc adam");
  REQUIRE(s.host_peak_attribution.size() == 3);
  CHECK(s.host_peak_attribution[0].tag == "optimizer_states");
  CHECK(s.host_peak_attribution[0].bytes == Approx(16.0 * kGiB).epsilon(kTol));
  CHECK(s.host_peak_attribution[1].tag == "fp32_master");
  CHECK(s.host_peak_attribution[2].tag == "fp32_grads");
  CHECK(s.host_peak_attribution[2].bytes == Approx(6.0 * kGiB).epsilon(kTol));
  // The worst rank's pinned bytes by tag come with its peak: 6 GiB of fp32 grads pinned, the 24 GiB of m, v and the
  // master pageable, as "host pinned/pageable: 6.000 / 24.000 GiB" says.
  CHECK(s.host_pinned_at_peak_by_tag[tag(program::MemTag::FP32_GRADS)] == Approx(6.0 * kGiB).epsilon(kTol));
  CHECK_THAT(s.host_peak_attribution[2].knob, Catch::StartsWith("pinned; fp32 grad partition"));
  CHECK_THAT(s.host_peak_attribution[0].knob, Catch::StartsWith("pageable"));
  CHECK_THAT(console_report(sc, {{"", ".", s}}),
             Contains("what sets the host peak per rank (step 0, at 'alloc adam')") &&
                 Contains("fp32 master partition 4 B/param / N_d=8"));
  const json j = json::parse(result_json(sc, "", s, run));
  REQUIRE(j.at("host_peak_attribution").size() == 3);
  CHECK(j.at("host_peak_attribution")[0].at("gib").get<double>() == Approx(16.0).epsilon(kTol));
  const auto back = summary_from_json(summary_json(s));
  REQUIRE(back.host_peak_attribution.size() == 3);
  CHECK(back.host_peak_attribution[1].knob == s.host_peak_attribution[1].knob);
  CHECK(back.host_peak_label == "alloc adam");
  // Without offload nothing is attributed on the host.
  CHECK(summarize(synthetic_scenario(), synthetic_workload(), synthetic_run()).host_peak_attribution.empty());
}
