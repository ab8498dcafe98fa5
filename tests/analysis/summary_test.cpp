#include "analysis/summary.hpp"
#include "analysis/console.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;

namespace {
constexpr double kTol = 1e-12; // pure arithmetic on exact inputs
}

TEST_CASE("summarize: steady step time is the mean of steps >= 1, step 0 is warm-up", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  // steps 1 and 2 last 2.0 s and 2.5 s -> (2.0 + 2.5) / 2 = 2.25 s; step 0 lasts 3.0 s.
  CHECK(s.steady_state);
  CHECK(s.steps_completed == 3);
  CHECK(s.step_time_s == Approx(2.25).epsilon(kTol));
  CHECK(s.warmup_step_s == Approx(3.0).epsilon(kTol));
  REQUIRE(s.step_times_s.size() == 3);
  CHECK(s.step_times_s[2] == Approx(2.5).epsilon(kTol));
}

TEST_CASE("first_steady_step: step 2 with the throughput timer's sync once step 2 completed, else step 1",
          "[analysis][unit]") {
  const std::vector<trace::StepTiming> three{{0, 0.0, 3.0}, {1, 3.0, 5.0}, {2, 5.0, 7.5}};
  const std::vector<trace::StepTiming> two{{0, 0.0, 3.0}, {1, 3.0, 5.0}};
  // DeepSpeed's ThroughputTimer (start_step=2) syncs from step 2 on: step 1 is left out when step 2 exists.
  CHECK(first_steady_step(true, three) == 2);
  CHECK(first_steady_step(true, two) == 1); // simulation.steps 2: step 1 is the only steady candidate
  CHECK(first_steady_step(false, three) == 1);
  CHECK(first_steady_step(true, {}) == 1);
}

TEST_CASE("summarize: with the throughput timer's sync the steady window starts at step 2", "[analysis][unit]") {
  auto sc = synthetic_scenario();
  sc.zero.throughput_timer_sync = true;
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  // Step 1 (2.0 s) runs without the sync and is left out: the mean is step 2 alone, 2.5 s (not (2.0 + 2.5) / 2).
  CHECK(s.steady_state);
  CHECK(s.steady_first_step == 2);
  CHECK(s.step_time_s == Approx(2.5).epsilon(kTol));
  CHECK(s.warmup_step_s == Approx(3.0).epsilon(kTol));
  // The breakdown is step 2's: fwd 0.5, bwd 1.1, compute busy 1.8, comm busy 0.8, exposed comm 0.4.
  CHECK(s.breakdown.backward_s == Approx(1.1).epsilon(kTol));
  CHECK(s.breakdown.comm_busy_s == Approx(0.8).epsilon(kTol));
  CHECK(s.breakdown.exposed_comm_s == Approx(0.4).epsilon(kTol));
  CHECK(console_report(sc, {{"", "out", s}}).find("mean of steps >= 2; step 1 runs without") != std::string::npos);
  // Without the sync the window is steps >= 1, as in the case above.
  CHECK(summarize(synthetic_scenario(), synthetic_workload(), synthetic_run()).steady_first_step == 1);
}

TEST_CASE("summarize: tokens/s, TFLOPS per GPU, MFU and HFU by hand", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  // global batch = b * s * GA * N_d = 2 * 1024 * 4 * 8 = 65536 tokens; / 2.25 s = 29127.111... tokens/s.
  CHECK(s.global_batch_tokens == Approx(65536.0).epsilon(kTol));
  CHECK(s.tokens_per_s == Approx(65536.0 / 2.25).epsilon(kTol));
  // model TFLOPS/GPU = 6e12 FLOP * GA 4 / 2.25 s / 1e12 = 10.6667; MFU = 10.6667 / 312 = 0.0341880.
  CHECK(s.model_tflops_per_gpu == Approx(24.0 / 2.25).epsilon(kTol));
  CHECK(s.mfu == Approx(24.0 / 2.25 / 312.0).epsilon(kTol));
  // HFU uses hardware FLOPs 8e12: 32 / 2.25 / 312 = 0.0455840.
  CHECK(s.hardware_tflops_per_gpu == Approx(32.0 / 2.25).epsilon(kTol));
  CHECK(s.hfu == Approx(32.0 / 2.25 / 312.0).epsilon(kTol));
  CHECK(s.peak_tflops_per_gpu == Approx(312.0).epsilon(kTol));
}

TEST_CASE("summarize: breakdown of the steady step", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  const auto& b = s.breakdown;
  // Means over steps 1 and 2: fwd (0.5+0.5)/2, bwd (1.0+1.1)/2, opt 0.2, compute busy (1.8+1.8)/2 = 1.8,
  // other = 1.8 - 0.5 - 1.05 - 0.2 = 0.05, comm busy (0.6+0.8)/2 = 0.7; idle by cause, means of steps 1 and 2:
  // comm (0.1+0.4)/2 = 0.25, offload (0.05+0.1)/2 = 0.075, cpu (0.05+0.15)/2 = 0.1, other (0+0.05)/2 = 0.025.
  CHECK(b.forward_s == Approx(0.5).epsilon(kTol));
  CHECK(b.backward_s == Approx(1.05).epsilon(kTol));
  CHECK(b.optimizer_s == Approx(0.2).epsilon(kTol));
  CHECK(b.compute_busy_s == Approx(1.8).epsilon(kTol));
  CHECK(b.other_compute_s == Approx(0.05).epsilon(1e-9));
  CHECK(b.comm_busy_s == Approx(0.7).epsilon(kTol));
  CHECK(b.exposed_comm_s == Approx(0.25).epsilon(1e-9));
  CHECK(b.exposed_offload_s == Approx(0.075).epsilon(1e-9));
  CHECK(b.exposed_cpu_s == Approx(0.1).epsilon(1e-9));
  CHECK(b.idle_other_s == Approx(0.025).epsilon(1e-9));
  // The parts add up to the step: 1.8 + 0.25 + 0.075 + 0.1 + 0.025 = 2.25 s.
  CHECK(b.compute_busy_s + b.exposed_comm_s + b.exposed_offload_s + b.exposed_cpu_s + b.idle_other_s ==
        Approx(s.step_time_s).epsilon(1e-9));
}

TEST_CASE("summarize: peak memory of the worst rank, lowest rank on a tie", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  CHECK(s.peak_rank == 1);
  CHECK(s.peak_bytes == Approx(12.0 * kGiB).epsilon(kTol));
  CHECK(s.steady_peak_bytes == Approx(11.0 * kGiB).epsilon(kTol));
  CHECK(s.peak_label == "alloc adam");
  CHECK(s.peak_step == 1);
  CHECK(s.peak_by_tag[tag(program::MemTag::OPTIMIZER_STATES)] == Approx(8.0 * kGiB).epsilon(kTol));
  CHECK(s.capacity_bytes == Approx(80.0 * kGiB).epsilon(kTol));
  CHECK(s.fits);
  CHECK_FALSE(s.oom);
  CHECK(s.oom_description.empty());
  CHECK(s.traffic.wire_bytes[0] == Approx(7e9).epsilon(kTol));
}

TEST_CASE("summarize: peak above capacity does not fit", "[analysis][unit]") {
  auto sc = synthetic_scenario();
  sc.cluster.gpu.memory = Bytes(11.5 * kGiB);
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK_FALSE(s.fits);
  CHECK_FALSE(s.oom);
}

TEST_CASE("summarize: an OOM is described and never fits", "[analysis][unit]") {
  auto run = synthetic_run();
  trace::OomInfo o;
  o.rank = 3;
  o.time = 4.25;
  o.step = 1;
  o.label = 3;
  o.tag = program::MemTag::OPTIMIZER_STATES;
  o.requested = 2.0 * kGiB;
  o.capacity = 24.0 * kGiB;
  o.live_by_tag[tag(program::MemTag::LP_PARAMS)] = 23.0 * kGiB;
  run.oom = o;
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  CHECK(s.oom);
  CHECK_FALSE(s.fits);
  CHECK_THAT(s.oom_description, Catch::Contains("rank 3"));
  CHECK_THAT(s.oom_description, Catch::Contains("optimizer_states"));
  CHECK_THAT(s.oom_description, Catch::Contains("2.00 GiB"));
  CHECK_THAT(s.oom_description, Catch::Contains("23.00 GiB of 24.00 GiB"));
  CHECK_THAT(s.oom_description, Catch::Contains("'alloc adam'"));
  CHECK_THAT(s.oom_description, Catch::Contains("step 1"));
  // Before the first step (model states allocated at initialisation) the phase is named, not left out.
  o.step = -1;
  run.oom = o;
  CHECK_THAT(summarize(synthetic_scenario(), synthetic_workload(), run).oom_description,
             Catch::Contains("at t=4.250000 s (initialisation, before step 0): "));
}

TEST_CASE("summarize: a run with no completed step reports zeros, not NaN", "[analysis][unit]") {
  auto run = synthetic_run();
  run.steps.clear();
  run.step_phase_busy.clear();
  run.step_comm_busy.clear();
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  CHECK(s.steps_completed == 0);
  CHECK(s.step_time_s == 0.0);
  CHECK(s.tokens_per_s == 0.0);
  CHECK(s.mfu == 0.0);
  CHECK(s.breakdown.exposed_comm_s == 0.0);
}

TEST_CASE("summarize: with only the warm-up step, it is reported and flagged not steady", "[analysis][unit]") {
  auto run = synthetic_run();
  run.steps.resize(1);
  run.step_phase_busy.resize(1);
  run.step_comm_busy.resize(1);
  run.step_idle.resize(1);
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  CHECK_FALSE(s.steady_state);
  CHECK(s.step_time_s == Approx(3.0).epsilon(kTol));
  // compute busy of step 0 = 0.5 + 1.0 = 1.5 s; its 1.5 s of idle time: 0.3 s behind communication, 1.2 s other.
  CHECK(s.breakdown.compute_busy_s == Approx(1.5).epsilon(kTol));
  CHECK(s.breakdown.exposed_comm_s == Approx(0.3).epsilon(kTol));
  CHECK(s.breakdown.idle_other_s == Approx(1.2).epsilon(kTol));
}

TEST_CASE("top_tags: sorted by size, zeros dropped, ties in enum order", "[analysis][unit]") {
  trace::TagBytes t{};
  t[tag(program::MemTag::ACTIVATIONS)] = 5;
  t[tag(program::MemTag::LP_PARAMS)] = 7;
  t[tag(program::MemTag::LP_GRADS)] = 5;
  const auto top = top_tags(t);
  REQUIRE(top.size() == 3);
  CHECK(top[0].first == program::MemTag::LP_PARAMS);
  CHECK(top[1].first == program::MemTag::LP_GRADS);
  CHECK(top[2].first == program::MemTag::ACTIVATIONS);
  CHECK(top_tags(t, 1).size() == 1);
}

TEST_CASE("describe_oom: the allocator's failing step in its own words (cudaMalloc of a segment, or page mapping)",
          "[analysis][unit]") {
  // 1 GiB needed; 22 GiB reserved + 0.25 GiB context + 1 GiB > 23 GiB. Default allocator: a new segment; expandable
  // segments (PyTorch Note [Expandable Segments]): more pages mapped, after unmapping the free ones.
  trace::OomInfo oom;
  oom.device = program::Device::GPU;
  oom.requested = oom.needed = kGiB;
  oom.capacity = 23 * kGiB;
  oom.reserved = 22 * kGiB;
  oom.non_pytorch = 0.25 * kGiB;
  oom.cache_released = true;
  CHECK_THAT(describe_oom(oom, {}), Catch::Contains("cudaMalloc of a new 1.00 GiB segment fails: 22.00 GiB reserved "
                                                    "+ 0.25 GiB CUDA context and NCCL + 1.00 GiB > 23.00 GiB after "
                                                    "releasing the cached free segments"));
  oom.expandable = true;
  CHECK_THAT(describe_oom(oom, {}), Catch::Contains("mapping 1.00 GiB more pages fails: 22.00 GiB mapped + 0.25 GiB "
                                                    "CUDA context and NCCL + 1.00 GiB > 23.00 GiB after unmapping the "
                                                    "free pages"));
}

TEST_CASE("summarize: a host OOM's demand is the node's live host memory at the failure plus the request",
          "[analysis][unit]") {
  auto run = synthetic_run();
  trace::OomInfo o;
  o.device = program::Device::HOST;
  o.requested = o.needed = 2.25 * kGiB;
  o.capacity = 20.0 * kGiB;
  o.allocated = o.reserved = 18.5 * kGiB; // the node's pool total when it failed
  run.oom = o;
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  CHECK(s.oom_on_host);
  CHECK(s.oom_host_demand_bytes == (18.5 + 2.25) * kGiB); // hand: 20.75 GiB, not the run's node peak + request
  CHECK(s.oom_gpu_demand_bytes == 0.0);
  o.device = program::Device::GPU; // a GPU OOM leaves the host figure at 0
  run.oom = o;
  CHECK(summarize(synthetic_scenario(), synthetic_workload(), run).oom_host_demand_bytes == 0.0);
}

TEST_CASE("summarize: offload_optimizer=nvme below stage 3 carries a note that it runs as cpu", "[analysis][unit]") {
  // stage_1_and_2.py treats any offload device as cpu_offload (no NVMe swapper); stage 3 swaps to NVMe.
  auto sc = synthetic_scenario();
  sc.zero.offload_optimizer = scenario::OffloadDevice::NVME;
  const auto has_note = [&](int stage) {
    sc.zero.stage = stage;
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(),
                       [](const std::string& d) { return d.find("runs as cpu") != std::string::npos; });
  };
  CHECK(has_note(1));
  CHECK(has_note(2));
  CHECK_FALSE(has_note(3));
}

TEST_CASE("summarize: a card without NVLink on a node linked faster than PCIe carries a note", "[analysis][unit]") {
  // RTX 4090 (no NVLink connector) with a 300 GB/s/dir NVSwitch link vs 31.5 GB/s PCIe 4.0 x16: impossible machine.
  auto sc = synthetic_scenario();
  sc.cluster.gpu.name = "rtx4090";
  sc.cluster.gpus_per_node = 8;
  sc.cluster.intra_node.bandwidth = ByteRate(300e9);
  sc.cluster.host_link.bandwidth = ByteRate(31.5e9);
  const auto note = [&]() {
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    const auto it = std::find_if(s.diagnostics.begin(), s.diagnostics.end(),
                                 [](const std::string& d) { return d.find("has no NVLink") != std::string::npos; });
    return it == s.diagnostics.end() ? std::string() : *it;
  };
  CHECK(note().empty()); // nvlink defaults to true
  sc.cluster.gpu.nvlink = false;
  CHECK(note().find("300.0 GB/s per direction (PCIe here: 31.5 GB/s") != std::string::npos);
  sc.cluster.intra_node.bandwidth = ByteRate(31.5e9); // a PCIe node (4x-rtx4090-pcie): nothing to say
  CHECK(note().empty());
  sc.cluster.intra_node.bandwidth = ByteRate(300e9);
  sc.cluster.p2p = false; // GPU traffic staged through the host: the intra_node figure is unused
  CHECK(note().empty());
}

TEST_CASE("host_step_of: rank 0's CPU-optimizer work per steady step, by kind, clipped to the steps",
          "[analysis][unit]") {
  trace::RunResult r;
  r.stream_names = {"compute", "cpu", "copy"};
  r.stream_kinds = {program::StreamKind::COMPUTE, program::StreamKind::CPU, program::StreamKind::COPY};
  r.labels = {"",
              "cpu adam",
              "unscale and clip fp32 grads (cpu) sub-group 1",
              "cast fp32 -> lp partition (cpu)",
              "swap in",
              "h2d lp params"};
  r.steps = {{0, 0.0, 2.0}, {1, 2.0, 4.0}, {2, 4.0, 6.0}};
  // Step 0 (warm-up, not counted): 1.5 s of CPU Adam.
  r.spans.push_back({0, 1, 0.5, 2.0, 1, program::Phase::OPTIMIZER, 3, 0, 0});
  // Step 1: unscale 0.2 s, Adam 0.6 s, cast 0.1 s.
  r.spans.push_back({0, 1, 2.5, 2.7, 2, program::Phase::OPTIMIZER, 3, 0, 0});
  r.spans.push_back({0, 1, 2.7, 3.3, 1, program::Phase::OPTIMIZER, 3, 0, 0});
  r.spans.push_back({0, 1, 3.3, 3.4, 3, program::Phase::OPTIMIZER, 3, 0, 0});
  // Step 2: Adam 0.8 s, of which 0.3 s run past the last step's end (6.0) and are not counted; other 0.1 s.
  r.spans.push_back({0, 1, 5.5, 6.3, 1, program::Phase::OPTIMIZER, 3, 0, 0});
  r.spans.push_back({0, 1, 4.2, 4.3, 4, program::Phase::OPTIMIZER, 3, 0, 0});
  // Not CPU-optimizer work: a copy-stream span and rank 1's CPU stream.
  r.spans.push_back({0, 2, 3.4, 3.6, 5, program::Phase::OFFLOAD, 2, 1e9, 0});
  r.spans.push_back({1, 1, 2.7, 3.3, 1, program::Phase::OPTIMIZER, 3, 0, 0});
  const HostStep h = host_step_of(r);
  // Means over steps 1 and 2: Adam (0.6 + 0.5) / 2 = 0.55, unscale 0.2 / 2 = 0.1, cast 0.1 / 2 = 0.05, other 0.05.
  CHECK(h.cpu_adam_s == Approx(0.55).epsilon(1e-12));
  CHECK(h.unscale_s == Approx(0.1).epsilon(1e-12));
  CHECK(h.lp_cast_s == Approx(0.05).epsilon(1e-12));
  CHECK(h.other_s == Approx(0.05).epsilon(1e-12));
  CHECK(h.total() == Approx(0.75).epsilon(1e-12));
  // From step 2 (first_steady_step with the throughput timer's sync): Adam 0.5, other 0.1.
  CHECK(host_step_of(r, 2).cpu_adam_s == Approx(0.5).epsilon(1e-12));
  CHECK(host_step_of(r, 2).unscale_s == 0.0);
  CHECK(host_step_of(r, 2).other_s == Approx(0.1).epsilon(1e-12));
  // Only the warm-up step completed: it is the one averaged (1.5 s of Adam).
  r.steps.resize(1);
  CHECK(host_step_of(r).cpu_adam_s == Approx(1.5).epsilon(1e-12));
  // Without stream kinds (no CPU stream known) there is nothing to split.
  r.stream_kinds.clear();
  CHECK(host_step_of(r).total() == 0.0);
}

TEST_CASE("summarize: a large exposed communication share with DeepSpeed's default overlap_comm gets a hint",
          "[analysis][unit]") {
  // The synthetic run: steady step 2.25 s with 0.25 s of exposed communication (11 % >= 10 %), 8 GPUs.
  auto sc = synthetic_scenario();
  sc.zero.stage = 2; // overlap_comm unset: DeepSpeed's default, false at stage 2
  const auto hinted = summarize(sc, synthetic_workload(), synthetic_run());
  const auto has_hint = [](const RunSummary& s) {
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
      return d.find("try --set zero.overlap_comm=true") != std::string::npos;
    });
  };
  CHECK(has_hint(hinted));
  CHECK(std::any_of(hinted.diagnostics.begin(), hinted.diagnostics.end(),
                    [](const std::string& d) { return d.rfind("11 % of the step is exposed communication", 0) == 0; }));
  // Chosen by the scenario (either way), stage 3 (whose default is true), or stage 1 before DeepSpeed 0.13.0 (which
  // ignores the key): no hint.
  sc.zero.overlap_comm = false;
  CHECK_FALSE(has_hint(summarize(sc, synthetic_workload(), synthetic_run())));
  sc.zero.overlap_comm.reset();
  sc.zero.stage = 3;
  CHECK_FALSE(has_hint(summarize(sc, synthetic_workload(), synthetic_run())));
  sc.zero.stage = 1;
  CHECK(has_hint(summarize(sc, synthetic_workload(), synthetic_run())));
  sc.zero.deepspeed_version_text = "0.12.6";
  sc.zero.deepspeed_version = {0, 12, 6};
  CHECK_FALSE(has_hint(summarize(sc, synthetic_workload(), synthetic_run())));
}

TEST_CASE("summarize: a GPU named for its size whose memory was written in GB (not GiB) gets a note",
          "[analysis][unit]") {
  // a100-80gb with memory: 80GB = 80e9 B = 74.51 GiB (80e9 / 2^30), where the card exposes 80 GiB.
  auto sc = synthetic_scenario();
  const auto noted = [&](double bytes) {
    sc.cluster.gpu.name = "a100-80gb";
    sc.cluster.gpu.memory = Bytes(bytes);
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
      return d.find("cluster.gpu.memory is 80 GB = 74.51 GiB") != std::string::npos &&
             d.find("write 80GiB if you meant the card") != std::string::npos;
    });
  };
  CHECK(noted(80e9));
  CHECK_FALSE(noted(80.0 * 1024 * 1024 * 1024)); // the preset's 80 GiB
  CHECK_FALSE(noted(70e9)); // another size on purpose
  // Memory written inline is a modified card: its label no longer ends in "-80gb", its preset still does.
  sc.cluster.gpu.preset = "a100-80gb";
  sc.cluster.gpu.name = "a100-80gb (modified: memory=80GB)";
  sc.cluster.gpu.memory = Bytes(80e9);
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
    return d.find("a 80 GB card such as a100-80gb exposes 80 GiB") != std::string::npos;
  }));
}

TEST_CASE(
    "summarize: a card whose name does not carry its size, its memory written as the GB it is sold as, gets a "
    "note",
    "[analysis][unit]") {
  // h100-sxm: 81559 MiB = 81559 x 2^20 / 2^30 = 79.65 GiB, sold as 80 GB (79.65 rounded up to whole GiB);
  // memory: 80GB = 80e9 B = 80e9 / 2^30 = 74.51 GiB.
  auto sc = synthetic_scenario();
  sc.cluster.gpu.name = "h100-sxm (--set memory=80GB)";
  sc.cluster.gpu.preset = "h100-sxm";
  sc.cluster.gpu.preset_memory = Bytes(81559.0 * 1024 * 1024);
  const auto noted = [&](double bytes) {
    sc.cluster.gpu.memory = Bytes(bytes);
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
      return d.find(
                 "cluster.gpu.memory is 80 GB = 74.51 GiB (GB = 1e9 B), but the h100-sxm preset's card, sold as "
                 "80 GB, exposes 79.65 GiB (the preset's value): write 79.65GiB") != std::string::npos;
    });
  };
  CHECK(noted(80e9));
  CHECK_FALSE(noted(81559.0 * 1024 * 1024)); // the preset's own capacity
  CHECK_FALSE(noted(70e9)); // another size on purpose
  CHECK_FALSE(noted(81e9)); // not the size it is sold as
  sc.cluster.gpu.preset_memory = Bytes(0); // a card built in code: nothing to compare with
  CHECK_FALSE(noted(80e9));
}

TEST_CASE(
    "summarize: optimizer offload with pageable buffers (pin_memory false) gets a note naming the "
    "staging memcpy rate",
    "[analysis][unit]") {
  auto sc = synthetic_scenario();
  const auto noted = [&] {
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
      return d.find("offload_optimizer.pin_memory is false") != std::string::npos &&
             d.find("cpu.pageable_copy_bandwidth = 12 GB/s") != std::string::npos;
    });
  };
  sc.cluster.cpu.pageable_copy_bandwidth = ByteRate(12e9);
  CHECK_FALSE(noted()); // no offload
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.zero.offload_optimizer_pin_memory = false;
  CHECK(noted());
  // Written false: not called the default.
  const auto written = summarize(sc, synthetic_workload(), synthetic_run()).diagnostics;
  CHECK(std::none_of(written.begin(), written.end(), [](const std::string& d) {
    return d.find("DeepSpeed's default before 0.19.5") != std::string::npos;
  }));
  sc.zero.offload_optimizer_pin_memory = true;
  CHECK_FALSE(noted());
  // Unset: DeepSpeed's default, false before 0.19.5 and true from it.
  sc.zero.offload_optimizer_pin_memory.reset();
  sc.zero.deepspeed_version = {0, 17, 6};
  CHECK(noted());
  const auto unset = summarize(sc, synthetic_workload(), synthetic_run()).diagnostics;
  CHECK(std::any_of(unset.begin(), unset.end(), [](const std::string& d) {
    return d.find("pin_memory is false (DeepSpeed's default before 0.19.5)") != std::string::npos;
  }));
  sc.zero.deepspeed_version = {0, 19, 5};
  CHECK_FALSE(noted());
}

TEST_CASE("note_optimizer_swap_buffers: NVMe swap buffers in GB per rank and node, only when host memory matters",
          "[analysis][unit]") {
  // 8 ranks per node, offload_optimizer=nvme at stage 3, largest sub-group 1,000,000,000 elements (DeepSpeed's default
  // sub_group_size), 4 buffers: 4 x 1e9 x 4 B = 16.00 GB per rank, 128.00 GB per node; the fp32 gradient buffer
  // 1e9 x 4 B = 4.00 GB. At sub_group_size 1e8 the largest sub-group of 100,000,000 gives 4 x 1e8 x 4 B = 1.60 GB.
  auto sc = synthetic_scenario();
  sc.zero.stage = 3;
  sc.zero.offload_optimizer = scenario::OffloadDevice::NVME;
  sc.zero.sub_group_size = 1'000'000'000;
  sc.cluster.gpus_per_node = 8;
  const OptimizerSwapBuffers b{4, 1'000'000'000, 100'000'000, 100'000'000};
  RunSummary s;
  s.host_peak_bytes = 40e9; // 16 GB of swap buffers >= 40 GB / 4
  note_optimizer_swap_buffers(s, sc, b);
  REQUIRE(s.diagnostics.size() == 1);
  const std::string& n = s.diagnostics[0];
  CHECK_THAT(n, Catch::Contains("offload_optimizer.buffer_count = 4 pinned swap buffers"));
  CHECK_THAT(n, Catch::Contains("1000000000 fp32 elements at zero.sub_group_size = 1e9"));
  CHECK_THAT(n, Catch::Contains("4 x 1000000000 x 4 B = 16.00 GB per rank (128.00 GB for the node's 8 ranks)"));
  CHECK_THAT(n, Catch::Contains("plus a 4.00 GB fp32 gradient buffer"));
  CHECK_THAT(n, Catch::Contains("--set zero.sub_group_size=1e8: largest sub-group 100000000 elements, swap buffers "
                                "1.60 GB per rank"));
  CHECK_THAT(n, Catch::Contains("GB = 1e9 B"));

  // A small share of a large host peak (16 GB < 70 GB / 4), no host OOM: no note.
  RunSummary quiet;
  quiet.host_peak_bytes = 70e9;
  note_optimizer_swap_buffers(quiet, sc, b);
  CHECK(quiet.diagnostics.empty());
  // The same small share at a host OOM (another buffer overflowed, e.g. stage 3's grad_partitions_flat_buffer): no
  // note, whose sub_group_size advice would not cure it.
  quiet.oom = quiet.oom_on_host = true;
  note_optimizer_swap_buffers(quiet, sc, b);
  CHECK(quiet.diagnostics.empty());
  // A host OOM where the buffers are a quarter of the peak or more (16 GB >= 40 GB / 4): the note, marked as the OOM's.
  RunSummary oom;
  oom.host_peak_bytes = 40e9;
  oom.oom = oom.oom_on_host = true;
  note_optimizer_swap_buffers(oom, sc, b);
  REQUIRE(oom.diagnostics.size() == 1);
  CHECK_THAT(oom.diagnostics[0], Catch::StartsWith("host OOM: offload_optimizer=nvme"));
  // CPU offload has no swap buffers: no note.
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  RunSummary cpu;
  cpu.host_peak_bytes = 40e9;
  note_optimizer_swap_buffers(cpu, sc, b);
  CHECK(cpu.diagnostics.empty());
}

TEST_CASE("suggested_sub_group_size: the power of ten below the largest sub-group's", "[analysis][unit]") {
  CHECK(suggested_sub_group_size(1'000'400'000) == 100'000'000);
  CHECK(suggested_sub_group_size(124'439'808) == 10'000'000);
  CHECK(suggested_sub_group_size(10) == 1);
  CHECK(suggested_sub_group_size(9) == 0);
}

TEST_CASE("summarize: pin_memory without its offload gets a note that it has no effect", "[analysis][unit]") {
  // offload_optimizer.pin_memory written with offload_optimizer none: DeepSpeed reads pin_memory only from an
  // active offload config, so the setting does nothing. With the offload on, it does: no note.
  auto sc = synthetic_scenario();
  sc.zero.offload_optimizer = scenario::OffloadDevice::NONE;
  sc.zero.offload_param = scenario::OffloadDevice::NONE;
  sc.zero.offload_optimizer_pin_memory = true;
  const auto has_note = [](const RunSummary& s, const std::string& text) {
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(),
                       [&](const std::string& d) { return d.find(text) != std::string::npos; });
  };
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(has_note(s, "offload_optimizer.pin_memory is set (true) but offload_optimizer is none"));
  CHECK(has_note(s, "no effect without offload_optimizer/offload_param"));
  CHECK_FALSE(has_note(s, "offload_param.pin_memory"));

  sc.zero.offload_optimizer_pin_memory.reset();
  sc.zero.offload_param_pin_memory = false;
  CHECK(has_note(summarize(sc, synthetic_workload(), synthetic_run()),
                 "offload_param.pin_memory is set (false) but offload_param is none"));

  sc.zero.offload_param_pin_memory.reset();
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.zero.offload_optimizer_pin_memory = true;
  CHECK_FALSE(has_note(summarize(sc, synthetic_workload(), synthetic_run()), "pin_memory is set"));
}

TEST_CASE("summarize: zero_force_ds_cpu_optimizer false with DeepSpeed's CPU Adam simulated points to optimizer_impl",
          "[analysis][unit]") {
  auto sc = synthetic_scenario();
  const auto noted = [&] {
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    return std::any_of(s.diagnostics.begin(), s.diagnostics.end(), [](const std::string& d) {
      return d.find("zero_force_ds_cpu_optimizer is false") != std::string::npos &&
             d.find("training.optimizer_impl: torch-single-tensor") != std::string::npos;
    });
  };
  sc.zero.force_ds_cpu_optimizer = false;
  CHECK_FALSE(noted()); // no offload: the flag does nothing
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  CHECK(noted());
  sc.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR; // the client optimizer is said
  CHECK_FALSE(noted());
  sc.training.optimizer_impl = scenario::OptimizerImpl::FUSED;
  sc.zero.force_ds_cpu_optimizer = true; // DeepSpeed's default: only DeepSpeedCPUAdam
  CHECK_FALSE(noted());
}

TEST_CASE("summarize: ZeRO++ and MiCS settings from a ds_config get a not-modelled note", "[analysis][unit]") {
  // zero_hpz_partition_size 8 and zero_quantized_weights true (the ZeRO++ tutorial's config) change memory and
  // traffic in DeepSpeed; zerosim runs plain ZeRO-3, so the report must say so. Without them: no note.
  auto sc = synthetic_scenario();
  sc.zero.stage = 3;
  const auto note = [&]() -> std::string {
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    for (const auto& d : s.diagnostics)
      if (d.find("zero_hpz_partition_size") != std::string::npos || d.find("mics_shard_size") != std::string::npos)
        return d;
    return "";
  };
  CHECK(note().empty());
  sc.zero.unmodelled_ds_fields = {{"zero_hpz_partition_size", "8"}, {"zero_quantized_weights", "true"}};
  const std::string n = note();
  CHECK_THAT(n, Catch::StartsWith("not modelled: the ds_config sets zero_hpz_partition_size: 8 (ZeRO++ hpZ: a "
                                  "secondary copy of the parameter partitions per group of 8 GPUs"));
  CHECK_THAT(n, Catch::Contains("more GPU memory, less inter-node all-gather traffic"));
  CHECK_THAT(n, Catch::Contains("zero_quantized_weights: true (ZeRO++ qwZ: parameters all-gathered in int8"));
  CHECK_THAT(n, Catch::Contains("zerosim simulates plain ZeRO-3"));
  CHECK(n.find('\n') == std::string::npos);
  // Below stage 3 DeepSpeed does not use them: the note says they change nothing.
  sc.zero.stage = 2;
  sc.zero.unmodelled_ds_fields = {{"mics_shard_size", "4"}};
  CHECK_THAT(note(), Catch::Contains("applies at ZeRO stage 3 only"));
  CHECK_THAT(note(), Catch::Contains("at stage 2 they change nothing"));
}

TEST_CASE("summarize: every ds_config import note is a report note, in order", "[analysis][unit]") {
  auto sc = synthetic_scenario();
  const auto before = summarize(sc, synthetic_workload(), synthetic_run()).diagnostics;
  sc.import_notes = {"ds_config fp16.enabled is \"auto\" (...): simulated as fp16", "a second note"};
  const auto after = summarize(sc, synthetic_workload(), synthetic_run()).diagnostics;
  REQUIRE(after.size() == before.size() + 2);
  const auto first = std::find(after.begin(), after.end(), sc.import_notes[0]);
  REQUIRE(first != after.end());
  REQUIRE(std::next(first) != after.end());
  CHECK(*std::next(first) == sc.import_notes[1]);
}

TEST_CASE("paper_model_state_bytes: the ZeRO paper's Fig. 1 example (Rajbhandari et al. 2020)", "[analysis][unit]") {
  // Fig. 1: Ψ = 7.5B, N_d = 64, K = 12: baseline (2 + 2 + 12) x 7.5e9 = 120 GB; P_os 2Ψ + 2Ψ + 12Ψ/64 = 31.4 GB;
  // P_os+g 2Ψ + 14Ψ/64 = 16.6 GB; P_os+g+p 16Ψ/64 = 1.9 GB (the figure's rounding).
  const double psi = 7.5e9;
  CHECK(paper_model_state_bytes(0, psi, 64) == Approx(120e9));
  CHECK(paper_model_state_bytes(1, psi, 64) / 1e9 == Approx(31.4).margin(0.05));
  CHECK(paper_model_state_bytes(2, psi, 64) / 1e9 == Approx(16.6).margin(0.05));
  CHECK(paper_model_state_bytes(3, psi, 64) / 1e9 == Approx(1.9).margin(0.05));
  CHECK_THROWS_WITH(paper_model_state_bytes(4, psi, 64), Catch::Contains("stage 0-3"));
}

TEST_CASE("summarize: model states by the paper's count apply without offload and frozen parameters only",
          "[analysis][unit]") {
  // The synthetic scenario: stage 3 on 8 GPUs; Ψ = 1e9 all trainable: 16 x 1e9 / 8 = 2 GB.
  auto sc = synthetic_scenario();
  auto wl = synthetic_workload();
  wl.total_params = 1'000'000'000;
  wl.trainable_params = 1'000'000'000;
  const auto s = summarize(sc, wl, synthetic_run());
  CHECK(s.zero_stage == 3);
  CHECK(s.paper_model_state_bytes == Approx(2e9));
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", s}}),
             Catch::Contains("model states:      16Ψ/N_d = 2.00 GB (1.863 GiB) as the ZeRO paper counts them "
                             "(§5.1, K = 12; stage 3, N_d = 8)"));
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU; // ZeRO-Offload: the paper's GPU count does not apply
  CHECK(summarize(sc, wl, synthetic_run()).paper_model_state_bytes == 0);
  sc.zero.offload_optimizer = scenario::OffloadDevice::NONE;
  wl.trainable_params = 1'000'000; // LoRA-style: states for the adapters only
  const auto frozen = summarize(sc, wl, synthetic_run());
  CHECK(frozen.paper_model_state_bytes == 0);
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", frozen}}), !Catch::Contains("ZeRO paper counts"));
}

TEST_CASE("summarize: stage 3's padding to multiples of N_d, and BF16_Optimizer's model states", "[analysis][unit]") {
  // The synthetic scenario: stage 3 on 8 GPUs. Three tensors of 10, 16 and 3 elements pad to 16, 16 and 8 (the next
  // multiples of 8): 40 - 29 = 11 elements of padding.
  auto sc = synthetic_scenario();
  auto wl = synthetic_workload();
  wl.layers.resize(2);
  wl.layers[0].params = {{"a", 10, true}, {"b", 16, true}};
  wl.layers[1].params = {{"c", 3, true}};
  wl.total_params = 29;
  wl.trainable_params = 29;
  auto s = summarize(sc, wl, synthetic_run());
  CHECK(s.param_tensors == 3);
  CHECK(s.stage3_padding_params == 11);
  CHECK_FALSE(s.bf16_optimizer);
  sc.zero.stage = 2; // no per-tensor partitioning below stage 3
  CHECK(summarize(sc, wl, synthetic_run()).stage3_padding_params == 0);
  // Stage 0, bf16, fp32 gradient accumulation: DeepSpeed's BF16_Optimizer (scenario::uses_bf16_optimizer). Ψ = 1e9 on
  // 8 GPUs: the paper's 16Ψ = 16 GB, while BF16_Optimizer holds 2Ψ + 4Ψ + 12Ψ/8 = 7.5 GB = 6.985 GiB.
  sc.zero.stage = 0;
  sc.training.precision = scenario::Precision::BF16;
  sc.zero.grad_accum_dtype = scenario::GradAccumDtype::FP32;
  wl.total_params = 1'000'000'000;
  wl.trainable_params = 1'000'000'000;
  s = summarize(sc, wl, synthetic_run());
  CHECK(s.bf16_optimizer);
  CHECK(s.paper_model_state_bytes == Approx(16e9));
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", s}}),
             Catch::Contains("model states:      16Ψ = 16.00 GB (14.901 GiB) as the ZeRO paper counts them") &&
                 Catch::Contains("\n                     but DeepSpeed runs BF16_Optimizer here (bf16 with fp32 "
                                 "gradient accumulation), which partitions the fp32 master and Adam states over N_d: "
                                 "2Ψ bf16 params + 4Ψ fp32 gradient buffer + 12Ψ/N_d = 7.50 GB (6.985 GiB), and 2Ψ of "
                                 "bf16 gradients from backward to the optimizer step\n"));
  sc.zero.grad_accum_dtype = scenario::GradAccumDtype::BF16; // FP16_Optimizer: the paper's figure, no note
  s = summarize(sc, wl, synthetic_run());
  CHECK_FALSE(s.bf16_optimizer);
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", s}}), !Catch::Contains("BF16_Optimizer"));
}

TEST_CASE("summarize: a LoRA run says what trains next to the trainable count", "[analysis][unit]") {
  // PEFT's figure for Llama-2-7B, r = 8 on q_proj, v_proj: 4,194,304 trainable of 6,742,609,920.
  auto sc = synthetic_scenario();
  auto wl = synthetic_workload();
  wl.total_params = 6'742'609'920;
  wl.trainable_params = 4'194'304;
  sc.training.lora_rank = 8;
  sc.training.lora_dropout = 0.05;
  wl.training.lora_targets = {"q_proj", "v_proj"};
  const auto s = summarize(sc, wl, synthetic_run());
  CHECK(s.trainable_note == "LoRA r=8 on q_proj, v_proj, dropout 0.05");
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", s}}),
             Catch::Contains("6.743 billion (Ψ = 6742609920), 4194304 trainable (LoRA r=8 on q_proj, v_proj, "
                             "dropout 0.05)"));
  sc.training.lora_rank = 0;
  sc.training.trainable_fraction = 0.01;
  CHECK(summarize(sc, wl, synthetic_run()).trainable_note == "trainable_fraction 0.01");
}

TEST_CASE("summarize: exposed offload time is split into PCIe copies and NVMe swaps", "[analysis][unit]") {
  auto run = synthetic_run();
  // Steps 1 and 2 (the steady window) waited 0.2 s and 0.4 s on NVMe swaps besides their PCIe copies (0.05, 0.1 s).
  run.step_idle[1].offload_nvme = 0.2;
  run.step_idle[2].offload_nvme = 0.4;
  run.steps[1].end += 0.2;
  run.steps[2].start += 0.2;
  run.steps[2].end += 0.6;
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  const auto& b = s.breakdown;
  // Means: PCIe (0.05 + 0.1) / 2 = 0.075 s, NVMe (0.2 + 0.4) / 2 = 0.3 s; total 0.375 s.
  CHECK(b.exposed_offload_pcie_s == Approx(0.075).epsilon(1e-9));
  CHECK(b.exposed_offload_nvme_s == Approx(0.3).epsilon(1e-9));
  CHECK(b.exposed_offload_s == Approx(0.375).epsilon(1e-9));
  // Steps of 2.2 s and 2.9 s: mean 2.55 s = 1.8 + 0.25 + 0.375 + 0.1 + 0.025.
  CHECK(b.compute_busy_s + b.exposed_comm_s + b.exposed_offload_s + b.exposed_cpu_s + b.idle_other_s ==
        Approx(s.step_time_s).epsilon(1e-9));
}

TEST_CASE("summarize: offload fields set away from DeepSpeed's default are named in a not-modelled note",
          "[analysis][unit]") {
  auto sc = synthetic_scenario();
  for (const auto& d : summarize(sc, synthetic_workload(), synthetic_run()).diagnostics)
    CHECK_THAT(d, !Catch::Contains("fast_init"));
  sc.zero.unmodelled_offload_fields = {{"offload_optimizer.fast_init", "true"}};
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  std::string all;
  for (const auto& d : s.diagnostics)
    all += d + "\n";
  CHECK_THAT(all,
             Catch::Contains("not modelled: offload_optimizer.fast_init: true (optimizer states initialised on NVMe "
                             "from the swapped lp params: initialisation only)"));
}

TEST_CASE("nvme_write_bytes_per_billion_tokens: a node's NVMe writes per 1e9 tokens, from a steady step only",
          "[analysis][unit]") {
  // newuser29 #15: 2x RTX 3090, Llama-3-8B with offload_optimizer and offload_param nvme, mb 1 x seq 2048 x GA 16 x 2
  // GPUs = 65536 tokens per step; rank 0 wrote 72.27 GB in its last step. By hand: 72.27e9 B x 2 ranks = 144.54e9 B
  // per step; 1e9 / 65536 = 15258.7890625 steps per 1B tokens; 144.54e9 x 15258.7890625 = 2.205505e15 B = 2205.51 TB,
  // past a 1 TB 980 PRO's rated 600 TBW after 0.27B tokens.
  RunSummary s;
  s.world_size = 2;
  s.gpus_per_node = 2;
  s.steps_completed = 3;
  s.finished = true;
  s.global_batch_tokens = 65536;
  s.step_traffic.nvme_bytes = {80e9, 72.27e9};
  s.step_traffic_step = 2;
  s.step_traffic_steady = true;
  CHECK(nvme_write_bytes_per_billion_tokens(s) == Approx(2205.5054e12).epsilon(1e-6));
  // One GPU of a two-GPU node: one rank writes to the drives.
  s.world_size = 1;
  s.global_batch_tokens = 32768;
  CHECK(nvme_write_bytes_per_billion_tokens(s) == Approx(72.27e9 * 1e9 / 32768).epsilon(1e-12));
  // Step 0 holds the initial writes of the fp32 master: no figure from it.
  s.step_traffic_step = 0;
  s.step_traffic_steady = false;
  CHECK(nvme_write_bytes_per_billion_tokens(s) == 0);
  // No NVMe writes: none.
  s.step_traffic_step = 2;
  s.step_traffic_steady = true;
  s.step_traffic.nvme_bytes = {0, 0};
  CHECK(nvme_write_bytes_per_billion_tokens(s) == 0);
  // Stopped at an OOM: no step time, no figure.
  s.step_traffic.nvme_bytes = {80e9, 72.27e9};
  s.oom = true;
  s.finished = false;
  CHECK(nvme_write_bytes_per_billion_tokens(s) == 0);
}

TEST_CASE("summarize: a GPU no measured band covers gets band none and the not-validated caveat, offload or not",
          "[analysis][unit]") {
  // docs/validation.md's step-time bands are A100, H100/GH200 and V100 runs (analysis/measured_band.hpp), and the
  // offload claims ran on V100 and A100: none on an RTX 4090, so the console says its step is not validated and the
  // JSON must not quote another band (newuser32 #24).
  const auto caveat_starts = [](const RunSummary& s, const std::string& start) {
    return std::any_of(s.caveats.begin(), s.caveats.end(),
                       [&](const std::string& c) { return c.rfind(start, 0) == 0; });
  };
  for (const auto device : {scenario::OffloadDevice::NONE, scenario::OffloadDevice::CPU}) {
    auto sc = synthetic_scenario();
    sc.cluster.gpu.preset = "rtx4090";
    sc.zero.offload_optimizer = device;
    const auto s = summarize(sc, synthetic_workload(), synthetic_run());
    INFO(static_cast<int>(device));
    CHECK(s.measured_band == "none");
    CHECK(s.measured_step_low == 1.0);
    CHECK(s.measured_step_high == 1.0);
    CHECK(caveat_starts(s, "no measured band covers rtx4090 (the bands of docs/validation.md are A100, "));
    CHECK(caveat_starts(s, "step times are the simulated best case"));
  }
  // A hand-described GPU (name, no preset) is covered by no band either.
  const auto toy = summarize(synthetic_scenario(), synthetic_workload(), synthetic_run());
  CHECK(toy.measured_band == "none");
  CHECK(caveat_starts(toy, "no measured band covers ToyGPU"));
  // An A100 with CPU optimizer offload keeps the offload claims' band: 2.497 / 2.7124 s = 0.92059 (ZenFlow 3B, bound
  // cores) to 26.0675 / 18.8209 s = 1.38503 (the ZeRO-Offload tutorial's 10B on one V100), and no such caveat.
  auto a100 = synthetic_scenario();
  a100.cluster.gpu.preset = "a100-80gb";
  a100.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  const auto s = summarize(a100, synthetic_workload(), synthetic_run());
  CHECK(s.measured_band == "offload");
  CHECK(s.measured_step_low == Approx(2.497 / 2.7124).epsilon(1e-4));
  CHECK(s.measured_step_high == Approx(26.0675 / 18.8209).epsilon(1e-4));
  CHECK_FALSE(caveat_starts(s, "no measured band covers"));
}
