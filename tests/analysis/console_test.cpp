#include "analysis/console.hpp"
#include "analysis/measured_band.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;
using Catch::Contains;

TEST_CASE("console_report: one variant is a block with units", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  const std::string out = console_report(sc, {{"", "out", s}});
  CHECK_THAT(out, Contains("GiB = 2^30"));
  CHECK_THAT(out, Contains("2.2500 s")); // steady step time
  CHECK_THAT(out, Contains("warm-up step 0: 3.0000 s"));
  CHECK_THAT(out, Contains("29127.1 tokens/s")); // 65536 / 2.25
  // 1e9 tokens / (65536 / 2.25 tokens/s) = 34332.3 s = 9.54 h; x 8 GPUs = 76.29 GPU-hours.
  CHECK_THAT(out, Contains("; 1B tokens in 9.5 h on 8 GPUs = 76.29 GPU-hours"));
  CHECK_THAT(out, Contains("10.67 TFLOPS")); // 24 / 2.25
  CHECK_THAT(out, Contains("MFU 3.4 %")); // 10.667 / 312
  CHECK_THAT(out, Contains("12.000 GiB on rank 1"));
  CHECK_THAT(out, Contains("optimizer_states"));
  CHECK_THAT(out, Contains("fits in 80.00 GiB: yes"));
  CHECK_THAT(out, Contains("OOM:               none"));
  CHECK_THAT(out, !Contains("GEMM shapes")); // the synthetic GPU has no SM count: no shape model, no line
}

TEST_CASE("console_report: the GEMM shape line gives the fraction of the large-GEMM rate", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  s.gemm_utilization = 0.8125;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("GEMM shapes:       81.2 % of the large-GEMM rate"));
  // No step completed (an OOM at initialisation): no GEMM ran, so no rate of them.
  s.steps_completed = 0;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("GEMM shapes"));
}

TEST_CASE("console_report: cudaMalloc retries are reported with the worst rank, and only when there are some",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run();
  CHECK_THAT(console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}}), !Contains("cudaMalloc"));
  run.memory[1].alloc_retries = 2;
  run.memory[2].alloc_retries = 5;
  const auto s = summarize(sc, synthetic_workload(), run);
  CHECK(s.alloc_retries == 5);
  CHECK(s.alloc_retries_rank == 2);
  CHECK(s.alloc_retry_wait_s == 0.0);
  const std::string one = console_report(sc, {{"", "out", s}});
  CHECK_THAT(one, Contains("cudaMalloc retries: 5 on rank 2"));
  CHECK_THAT(one, !Contains("waited")); // no record_stream'd block to wait for: no wait sentence
  // A run that fits only by emptying the allocator's cache is a marginal fit, with what is left to spare.
  REQUIRE(s.fits);
  CHECK_THAT(one, Contains("yes, marginal: allocator retries (a cudaMalloc failed 5 times and succeeded only after "
                           "the allocator released its cached blocks; the peak after that leaves"));
  const std::string table = console_report(sc, {{"zero.stage=1", "o/1", s}, {"zero.stage=2", "o/2", s}});
  CHECK_THAT(table, Contains("yes, marginal (5 allocator retries) in 80.00 GiB"));
  CHECK_THAT(table, Contains("s/step, marginal)"));
  // With a wait (12.5 ms on the worst rank), and in a compared variant's own section too.
  run.memory[2].alloc_retry_wait = 12.5e-3;
  const auto w = summarize(sc, synthetic_workload(), run);
  const std::string two = console_report(sc, {{"zero.stage=1", "o/1", w}, {"zero.stage=2", "o/2", w}});
  CHECK_THAT(two, Contains("it waited 12.50 ms in all"));
  const auto section = two.find("zero.stage=2: step time and peak memory");
  REQUIRE(section != std::string::npos);
  CHECK(two.find("cudaMalloc retries: 5 on rank 2", section) != std::string::npos);
}

TEST_CASE("console_report: an OOM row says what the failing allocation needed beyond the card", "[analysis][unit]") {
  // newuser22 finding 11: the table's peaks are the values when the run stopped (below the capacity), so the fits
  // column names the shortfall. Hand calculation: the failing cudaMalloc asks for a new 2.5 GiB segment with 77 GiB
  // reserved and 1.25 GiB of CUDA context + NCCL on an 80 GiB card: 77 + 1.25 + 2.5 - 80 = 0.75 GiB more.
  const auto sc = synthetic_scenario();
  auto run = synthetic_run_stopped_by_oom(1, 2.0);
  run.labels.push_back("fwd L3 mlp");
  run.oom->label = static_cast<program::LabelId>(run.labels.size() - 1);
  run.oom->reserved = 77.0 * kGiB;
  run.oom->non_pytorch = 1.25 * kGiB;
  run.oom->needed = 2.5 * kGiB;
  const auto s = summarize(sc, synthetic_workload(), run);
  const std::string two = console_report(sc, {{"zero.stage=1", "o/1", s}, {"zero.stage=2", "o/2", s}});
  // Trial 24 finding 1: "needed 0.75 GiB more" read as "almost fits"; it is the first failed allocation's shortfall.
  CHECK_THAT(two, Contains("no (OOM: first failed allocation short by 0.75 GiB at 'fwd L3 mlp'; the whole step "
                           "needs more) in 80.00 GiB"));
  CHECK_THAT(console_report(sc, {{"", ".", s}}),
             Contains("fits in 80.00 GiB: no (OOM: first failed allocation short by 0.75 GiB at 'fwd L3 mlp'"));
  // Simulated on past the OOM (on_oom: continue, the run finished): the would-be nvidia-smi peak of 96.5 GiB is
  // 96.5 - 80 = 16.50 GiB over the card, and leads.
  auto on = s;
  on.finished = true;
  on.nvidia_smi_bytes = 96.5 * kGiB;
  CHECK_THAT(console_report(sc, {{"", ".", on}}),
             Contains("fits in 80.00 GiB: no (OOM: nvidia-smi peak 16.50 GiB over; first failed allocation short "
                      "by 0.75 GiB at 'fwd L3 mlp')"));
}

TEST_CASE("memory_text: GiB from 0.01 GiB on, MiB below (never 0.00 GiB)", "[analysis][unit]") {
  CHECK(memory_text(80.0 * kGiB) == "80.00 GiB");
  CHECK(memory_text(0.01 * kGiB) == "0.01 GiB");
  CHECK(memory_text(1024.0 * 1024.0) == "1.0 MiB"); // 2^20 B = 0.00098 GiB
  CHECK(memory_text(5.0 * 1024 * 1024) == "5.0 MiB");
  // Trial 24: cluster.gpu.memory=1MiB printed "(0.00 GiB each)" and "fits in 0.00 GiB".
  auto sc = synthetic_scenario();
  sc.cluster.gpu.memory = Bytes(1024.0 * 1024.0);
  CHECK_THAT(scenario_headline_text(scenario_headline(sc)), Contains("(1.0 MiB each)"));
}

TEST_CASE("console_report: several variants make one table, then each one's step and peak memory by tag",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto a = summarize(sc, synthetic_workload(), synthetic_run());
  auto small = sc;
  small.cluster.gpu.memory = Bytes(11.0 * kGiB);
  auto run = synthetic_run();
  run.steps[2].end = 7.0; // steps 1 and 2 both 2.0 s -> 32768 tokens/s, 12 TFLOPS, MFU 3.8 %
  auto b = summarize(small, synthetic_workload(), run);
  b.gemm_utilization = 0.5; // shown in its section only (the synthetic GPU of `a` has no SM count: no line)
  const std::string out = console_report(sc, {{"zero.stage=1", "o/stage-1", a}, {"zero.stage=2", "o/stage-2", b}});
  CHECK_THAT(out, Contains("  GEMM shapes: 50.0 % of the large-GEMM rate"));
  CHECK(out.find("GEMM shapes") > out.find("zero.stage=2: step time and peak memory"));
  CHECK_THAT(out, Contains("step time s"));
  CHECK_THAT(out, Contains("tokens/s"));
  CHECK_THAT(out, Contains("MFU %"));
  CHECK_THAT(out, Contains("peak GiB"));
  CHECK_THAT(out, Contains("zero.stage=1"));
  CHECK_THAT(out, Contains("2.2500"));
  CHECK_THAT(out, Contains("2.0000"));
  CHECK_THAT(out, Contains("32768.0"));
  CHECK_THAT(out, Contains("12.00"));
  CHECK_THAT(out, Contains("3.8"));
  CHECK_THAT(out, Contains("yes in 80.00 GiB"));
  CHECK_THAT(out, Contains("no in 11.00 GiB"));
  CHECK_THAT(out, Contains("zero.stage=2: step time and peak memory by tag (GiB = 2^30 B)"));
  // one header row + two variant rows before the per-variant sections
  const auto table_end = out.find(": step time and peak memory by tag");
  REQUIRE(table_end != std::string::npos);
  CHECK(out.find("zero.stage=2") < table_end);
}

TEST_CASE("console_report: an OOM, an unfinished run and diagnostics are each one line", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run_stopped_by_oom(0, 2.0);
  run.diagnostics = {"ranks folded: 8 ranks simulated as 1"};
  const auto s = summarize(sc, synthetic_workload(), run);
  const std::string out = console_report(sc, {{"", ".", s}});
  CHECK_THAT(out, Contains("fits in 80.00 GiB: no (OOM)"));
  CHECK_THAT(out, Contains("OOM:               rank 0 out of GPU memory"));
  CHECK_THAT(out, Contains("needed 3.00 GiB of activations"));
  CHECK_THAT(out, Contains("note: ranks folded: 8 ranks simulated as 1"));

  auto stalled = synthetic_run();
  stalled.finished = false;
  const std::string out2 = console_report(sc, {{"", ".", summarize(sc, synthetic_workload(), stalled)}});
  CHECK_THAT(out2, Contains("note: the run did not finish (3 optimizer step(s) completed)"));
}

TEST_CASE("console_report: no completed variant says so", "[analysis][unit]") {
  const std::string out = console_report(synthetic_scenario(), {});
  CHECK_THAT(out, Contains("no variant completed"));
}

TEST_CASE("compare_verdict: fitting variants fastest first, the others named, the slowdown vs a faster OOM",
          "[analysis][unit]") {
  // Four variants on a 24 GiB GPU: stage 0 stops at an OOM before a step; stage 1 runs (on_oom: continue) at
  // 1.00 s/step but does not fit; stage 3 fits at 1.62 s; stage 2 fits at 1.41 s.
  auto variant = [](const char* label, bool fits, int steps, double t) {
    VariantSummary v;
    v.label = label;
    v.summary.capacity_bytes = 24.0 * kGiB;
    v.summary.fits = fits;
    v.summary.oom = !fits;
    v.summary.steps_completed = steps;
    v.summary.finished = steps > 0; // an OOM with steps ran on past it (on_oom: continue)
    v.summary.step_time_s = t;
    return v;
  };
  const std::vector<VariantSummary> vs{variant("zero.stage=0", false, 0, 0.0), variant("zero.stage=1", false, 3, 1.0),
                                       variant("zero.stage=3", true, 3, 1.62), variant("zero.stage=2", true, 3, 1.41)};
  // Slowdown of the fastest fitting variant: 1.41 / 1.00 = 1.41x.
  CHECK(compare_verdict(vs) ==
        "verdict: fits in 24.00 GiB: zero.stage=2 (1.41 s/step), zero.stage=3 (1.62 s/step)\n"
        "         does not fit: zero.stage=0, zero.stage=1\n"
        "         zero.stage=2 takes 1.41x the step time of zero.stage=1 (1 s/step), which would need more GPU "
        "memory");
  // A host-memory OOM is named as such (offload buffers exceed cluster.host_memory).
  auto host = variant("offload", false, 0, 0.0);
  host.summary.oom_on_host = true;
  host.summary.host_capacity_bytes = 20.0 * kGiB;
  CHECK(compare_verdict({variant("a", true, 2, 0.5), host}) ==
        "verdict: fits in 24.00 GiB: a (0.5 s/step)\n         does not fit: offload (host memory)");
  CHECK(compare_verdict({variant("a", false, 0, 0.0), host}) ==
        "verdict: no variant fits in 24.00 GiB (out of host memory: offload)");
  const std::string two = console_report(synthetic_scenario(), {variant("a", true, 2, 0.5), host});
  CHECK_THAT(two, Contains("no (host OOM: 20.00 GiB host memory per node)\n")); // not "... in 24.00 GiB" (the GPU)
  CHECK_THAT(two, Contains("  yes in 24.00 GiB\n")); // the GPU fit keeps its capacity
  // Alone, its fits line names the host rule, not the GPU's.
  const std::string alone = console_report(synthetic_scenario(), {host});
  CHECK_THAT(alone, Contains("fits:              no, host OOM (a node's host allocations exceed "
                             "cluster.host_memory = 20.00 GiB)"));
  CHECK_THAT(alone, !Contains("OOM when reserved + CUDA context"));
  // Stopped at the host OOM: what the node needed at least is its live host memory then plus the failed request,
  // 18.5 + 2.25 = 20.75 GiB (> the 20 GiB it has), in the host column of the table and on a line of its own. The
  // node peaked higher earlier (19.8 GiB, a temporary freed before the failure): peak + request = 22.05 GiB would
  // overstate the need.
  host.summary.host_node_peak_bytes = 19.8 * kGiB;
  host.summary.oom_request_bytes = 2.25 * kGiB;
  host.summary.oom_host_demand_bytes = (18.5 + 2.25) * kGiB;
  const std::string need = console_report(synthetic_scenario(), {variant("a", true, 2, 0.5), host});
  CHECK_THAT(need, Contains("host GiB per node"));
  CHECK_THAT(need, Contains(">= 20.750  no (host OOM: 20.00 GiB host memory per node)\n"));
  CHECK_THAT(need, !Contains("22.05"));
  CHECK_THAT(need, Contains("  host memory needed: at least 20.75 GiB per node (live host memory at the failed "
                            "allocation plus its request); --set simulation.on_oom=continue"));
  // The variant without host memory shows "-" there; without any host memory the column is not printed (above).
  CHECK_THAT(need, Contains("  -  yes in 24.00 GiB\n"));
  CHECK_THAT(two, !Contains("host GiB per node"));
  // An offload variant that fits the GPU with host memory unlimited: its host RAM is given, and marked as unchecked.
  auto offload = variant("offload", true, 3, 2.0);
  offload.summary.host_node_peak_bytes = 26.5 * kGiB;
  CHECK(compare_verdict({offload, variant("b", false, 0, 0.0)}) ==
        "verdict: fits in 24.00 GiB: offload (2 s/step, 26.5 GiB host RAM per node*)\n"
        "         * host RAM not checked: cluster.host_memory is unset (unlimited)\n"
        "         does not fit: b");
  offload.summary.host_capacity_bytes = 64.0 * kGiB; // checked: no mark
  CHECK(compare_verdict({offload, variant("b", false, 0, 0.0)}) ==
        "verdict: fits in 24.00 GiB: offload (2 s/step, 26.5 GiB host RAM per node)\n         does not fit: b");
  // The fastest fits: one line, nothing about slowdowns.
  const std::vector<VariantSummary> fast_fits{variant("a", true, 2, 0.5), variant("b", false, 0, 0.0)};
  CHECK(compare_verdict(fast_fits) == "verdict: fits in 24.00 GiB: a (0.5 s/step)\n         does not fit: b");
  CHECK(compare_verdict({variant("a", false, 0, 0.0), variant("b", false, 0, 0.0)}) ==
        "verdict: no variant fits in 24.00 GiB");
  CHECK(compare_verdict({variant("a", true, 2, 0.5)}).empty());
  // Stage 1 stopped at its OOM after 3 steps instead (on_oom: stop): it has no step time (n/a in the table), so no
  // slowdown is measured against it.
  std::vector<VariantSummary> stopped = vs;
  stopped[1].summary.finished = false;
  CHECK(compare_verdict(stopped) ==
        "verdict: fits in 24.00 GiB: zero.stage=2 (1.41 s/step), zero.stage=3 (1.62 s/step)\n"
        "         does not fit: zero.stage=0, zero.stage=1");
  // Trial 24 finding 8: step times equal but for float noise (0.1772808868639207 / ...208 / ...2096 s) are ties
  // within the relative 1e-6 tolerance, listed in the compare order, not by their last digits.
  const std::vector<VariantSummary> ties{variant("zero.stage=0", true, 3, 0.1772808868639208),
                                         variant("zero.stage=1", true, 3, 0.1772808868639207),
                                         variant("zero.stage=2", true, 3, 0.1772808868639209),
                                         variant("zero.stage=3", true, 3, 0.1854)};
  CHECK(compare_verdict(ties) ==
        "verdict: fits in 24.00 GiB: zero.stage=0 (0.1773 s/step), zero.stage=1 (0.1773 "
        "s/step), zero.stage=2 (0.1773 s/step), zero.stage=3 (0.1854 s/step)");
  // 1e-6 relative apart is still a tie; 1e-5 is not (the faster goes first).
  CHECK(compare_verdict({variant("b", true, 3, 1.000001), variant("a", true, 3, 1.0)}) ==
        "verdict: fits in 24.00 GiB: b (1 s/step), a (1 s/step)");
  CHECK(compare_verdict({variant("b", true, 3, 1.00001), variant("a", true, 3, 1.0)}) ==
        "verdict: fits in 24.00 GiB: a (1 s/step), b (1 s/step)");
  // The slowdown names the first of the tied fastest non-fitting variants in the compare order.
  const std::vector<VariantSummary> slow{variant("s3", true, 3, 2.0), variant("s0", false, 3, 0.5000000000000001),
                                         variant("s1", false, 3, 0.5), variant("s2", false, 3, 0.5)};
  CHECK_THAT(compare_verdict(slow), Contains("s3 takes 4.00x the step time of s0 (0.5 s/step)"));
  // In the console report, right after the table.
  const auto sc = synthetic_scenario();
  const std::string out = console_report(sc, vs);
  CHECK_THAT(out, Contains("\nverdict: fits in 24.00 GiB: zero.stage=2 (1.41 s/step)"));
  CHECK(out.find("verdict:") < out.find(": step time and peak memory by tag"));
}

TEST_CASE("compare_verdict: an offload variant states the host RAM its node needs", "[analysis][unit]") {
  // Hand-set: 28.2 GiB of host memory on the node (offload buffers); the verdict prints it to 0.1 GiB.
  VariantSummary off;
  off.label = "offload";
  off.summary.capacity_bytes = 24.0 * kGiB;
  off.summary.fits = true;
  off.summary.steps_completed = 2;
  off.summary.step_time_s = 1.5;
  off.summary.host_peak_bytes = 28.2 * kGiB;
  off.summary.host_node_peak_bytes = 28.2 * kGiB;
  VariantSummary gpu = off;
  gpu.label = "gpu";
  gpu.summary.fits = false;
  gpu.summary.oom = true;
  gpu.summary.host_peak_bytes = 0;
  gpu.summary.host_node_peak_bytes = 0;
  gpu.summary.steps_completed = 0; // OOM at the first step
  CHECK(compare_verdict({gpu, off}) ==
        "verdict: fits in 24.00 GiB: offload (1.5 s/step, 28.2 GiB host RAM per node*)\n"
        "         * host RAM not checked: cluster.host_memory is unset (unlimited)\n"
        "         does not fit: gpu");
  // The detail block of a compared run shows the host lines too (not only single-variant runs).
  CHECK_THAT(console_report(synthetic_scenario(), {gpu, off}), Contains("  host memory peak:  28.200 GiB per rank"));
  // With the node's RAM given: 28.2 of 30 GiB leaves 1.80 GiB, under a tenth (3.0 GiB, kHostMarginalPercent), for
  // the OS and the processes' own memory (not simulated): said, and the fit is marginal by the shared rule (the fits
  // line names the host reason and its figures; the verdict says marginal). Of 32 GiB, 3.80 GiB is more than a tenth
  // (3.2 GiB): nothing said, not marginal.
  off.summary.host_capacity_bytes = 30.0 * kGiB;
  const std::string tight = console_report(synthetic_scenario(), {off});
  CHECK_THAT(tight, Contains("  note: that leaves 1.80 GiB of the node's RAM, under 10 %, for what is not simulated"));
  CHECK_THAT(tight, Contains("yes, marginal: host RAM under 10 % free (the node's host memory peak leaves 1.80 of "
                             "30.00 GiB)"));
  CHECK_THAT(compare_verdict({gpu, off}), Contains("offload (1.5 s/step, 28.2 GiB host RAM per node, marginal)"));
  off.summary.host_capacity_bytes = 32.0 * kGiB;
  const std::string roomy = console_report(synthetic_scenario(), {off});
  CHECK_THAT(roomy, !Contains("for what is not simulated") && !Contains("marginal"));
  // Out of host memory: the peak stops short of the allocation that failed, so "marginal" would contradict the
  // "fits: no, host OOM" line below it: not said.
  off.summary.host_capacity_bytes = 30.0 * kGiB;
  off.summary.oom = true;
  off.summary.oom_on_host = true;
  const std::string host_oom = console_report(synthetic_scenario(), {off});
  CHECK_THAT(host_oom, Contains("fits:              no, host OOM") && !Contains("for what is not simulated"));
}

TEST_CASE("console_report: the header says it shows the first variant when the comparison varies what it names",
          "[analysis][unit]") {
  // The header names the model, cluster and micro-batch of the scenario it is given (the first variant's): with
  // compare over model.layers it says so; with compare over zero.stage (not in the header) it adds nothing.
  auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  sc.compare_key = "model.layers";
  CHECK_THAT(console_report(sc, {{"a", "a", s}, {"b", "b", s}}),
             Catch::Contains("(first variant; model.layers varies by row)"));
  sc.compare_key = "zero.stage";
  CHECK_THAT(console_report(sc, {{"a", "a", s}, {"b", "b", s}}), !Catch::Contains("first variant"));
  // The simulated DeepSpeed release in full (new-user 14: "0.14" is 0.14.0, before 0.14.1's offload changes).
  sc.zero.deepspeed_version = {0, 14, 0};
  CHECK_THAT(console_report(sc, {{"a", "a", s}}), Catch::Contains(", DeepSpeed 0.14.0\n"));
  sc.zero.deepspeed_version = {0, 19, 5};
  CHECK_THAT(console_report(sc, {{"a", "a", s}}), Catch::Contains(", DeepSpeed 0.19.5\n"));
  // A later release than zerosim reads behaves as 0.19.5: the header says so (new-user 15 nit 14).
  sc.zero.deepspeed_version = {1, 0, 0};
  CHECK_THAT(console_report(sc, {{"a", "a", s}}),
             Catch::Contains(", DeepSpeed 1.0.0 (simulated as 0.19.5, the newest release zerosim models)\n"));
}

TEST_CASE("console_report: the header names the precision and the attention that ran", "[analysis][unit]") {
  // synthetic_scenario(): b = 2, s = 1024, GA = 4; precision bf16 by default, fp16 as a V100 runs it; the attention
  // (training.flash_attention, unset: the GPU's) decides the s x s activations.
  auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  sc.training.flash_attention = false;
  CHECK_THAT(console_report(sc, {{"a", "a", s}}),
             Contains("micro-batch 2 x 1024 tokens, GA 4, bf16, eager attention, DeepSpeed "));
  sc.training.precision = scenario::Precision::FP16;
  sc.training.flash_attention = true;
  CHECK_THAT(console_report(sc, {{"a", "a", s}}),
             Contains("micro-batch 2 x 1024 tokens, GA 4, fp16, FlashAttention, DeepSpeed "));
  sc.compare_key = "training.precision";
  CHECK_THAT(console_report(sc, {{"a", "a", s}, {"b", "b", s}}),
             Contains("(first variant; training.precision varies by row)"));
}

TEST_CASE("console_report: no steady-state peak is claimed for a run that stopped before step 1", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run();
  for (auto& m : run.memory)
    m.steady_peak.step = 1;
  CHECK_THAT(console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}}),
             Contains("; steady-state peak "));
  for (auto& m : run.memory)
    m.steady_peak.step = 0; // the fallback: no step >= 1 began, the whole-run peak (RankMemory::steady_peak)
  const std::string out = console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}});
  CHECK_THAT(out, Contains("no steady-state peak (the run stopped before step 1)"));
  CHECK_THAT(out, !Contains("; steady-state peak "));
  // simulation.steps: 1: the run finished after its one step; nothing stopped it.
  run.steps.resize(1);
  const std::string one = console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}});
  CHECK_THAT(one, Contains("no steady-state peak (only the warm-up step 0 was simulated: simulation.steps is 1)"));
  CHECK_THAT(one, !Contains("the run stopped before step 1"));
}

TEST_CASE("console_report: a run without a completed step shows n/a, not a breakdown of zeros", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run();
  run.steps.clear();
  run.step_phase_busy.clear();
  run.step_comm_busy.clear();
  run.step_idle.clear();
  const auto s = summarize(sc, synthetic_workload(), run);
  REQUIRE(s.steps_completed == 0);
  const std::string out = console_report(sc, {{"", "out", s}});
  CHECK_THAT(out, Contains("step time:         n/a"));
  CHECK_THAT(out, Contains("throughput:        n/a"));
  CHECK_THAT(out, !Contains("step breakdown:"));
  CHECK_THAT(out, !Contains("TFLOPS/GPU:"));
  // In a compare table the row says n/a for the rates too, not 0.0 tokens/s.
  const auto full = summarize(sc, synthetic_workload(), synthetic_run());
  const std::string table = console_report(sc, {{"zero.stage=2", "o/a", full}, {"zero.stage=3", "o/b", s}});
  CHECK_THAT(table, Contains("zero.stage=3          n/a           n/a         n/a     n/a  "));
}

TEST_CASE(
    "console_report: a compared variant with only the warm-up step is marked '*', and the best-case caveat "
    "ends every report with a step time",
    "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto full = summarize(sc, synthetic_workload(), synthetic_run());
  auto run = synthetic_run();
  run.steps.resize(1); // OOM in step 1: only step 0 (3.0 s in the synthetic run) completed
  const auto warm = summarize(sc, synthetic_workload(), run);
  REQUIRE(warm.steps_completed == 1);
  REQUIRE_FALSE(warm.steady_state);
  const std::string out = console_report(sc, {{"zero.stage=2", "o/a", full}, {"zero.stage=3", "o/b", warm}});
  CHECK_THAT(out, Contains("     3.0000*  "));
  CHECK_THAT(out, Contains("* warm-up step 0 only: the run stopped before a steady-state step"));
  CHECK_THAT(out, !Contains("2.2500*")); // the steady-state variant is not marked
  CHECK_THAT(out, !Contains("! simulated past its OOM"));
  // A variant run on past its OOM (on_oom: continue) has step times the real run never reaches: marked '!'.
  auto past = full;
  past.oom = true;
  const std::string over = console_report(sc, {{"zero.stage=2", "o/a", full}, {"zero.stage=3", "o/b", past}});
  CHECK_THAT(over, Contains("     2.2500!  ") && Contains("! simulated past its OOM (simulation.on_oom: continue)"));
  // A variant stopped at its OOM (on_oom: stop: the run did not finish) after its warm-up step does not train: n/a
  // for its step time and rates, and neither mark (README: "stops there ... step time n/a").
  auto stopped = warm;
  stopped.oom = true;
  stopped.finished = false;
  const std::string halt = console_report(sc, {{"zero.stage=2", "o/a", full}, {"zero.stage=3", "o/b", stopped}});
  CHECK_THAT(halt, Contains("zero.stage=3          n/a           n/a         n/a     n/a  "));
  CHECK_THAT(halt, !Contains("3.0000") && !Contains("! simulated past its OOM") && !Contains("* warm-up step 0 only"));
  CHECK_THAT(out, Contains(std::string("note: ") + best_case_note() + "\n"));
  // Single run: the same caveat; none when no step completed (no step time to qualify).
  CHECK_THAT(console_report(sc, {{"", "out", full}}), Contains(best_case_note()));
  run.steps.clear();
  CHECK_THAT(console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}}), !Contains(best_case_note()));
}

TEST_CASE("console_report: a single run stopped at its OOM after steady-state steps has no step time, as in a table",
          "[analysis][unit]") {
  // The synthetic run completes steps 0-2 (steady 2.25 s); here an OOM in step 3 stops it (on_oom: stop). README:
  // "A variant that runs out of memory stops there (... step time n/a)"; the compare table says n/a, so must the
  // single-variant block: no step time, rate, TFLOPS or breakdown of a configuration that does not train.
  const auto sc = synthetic_scenario();
  auto run = synthetic_run_stopped_by_oom(3, 7.6);
  const auto s = summarize(sc, synthetic_workload(), run);
  REQUIRE(s.steps_completed == 3);
  REQUIRE(s.steady_state);
  CHECK_FALSE(has_step_time(s));
  const std::string out = console_report(sc, {{"", "out", s}});
  CHECK_THAT(out, Contains("  step time:         n/a (the run stopped at its OOM after 3 completed steps; "
                           "simulation.on_oom: continue simulates on as if memory were unlimited)\n"));
  CHECK_THAT(out, Contains("  throughput:        n/a ("));
  CHECK_THAT(out,
             !Contains("2.2500") && !Contains("tokens/s") && !Contains("TFLOPS/GPU:") && !Contains("step breakdown:"));
  CHECK_THAT(out, !Contains(best_case_note())); // no step time to qualify
  CHECK_THAT(out, Contains("fits in 80.00 GiB: no (OOM)"));
  // The same run simulated on past its OOM (on_oom: continue: finished) keeps its 2.25 s.
  run.finished = true;
  const auto past = summarize(sc, synthetic_workload(), run);
  CHECK(has_step_time(past));
  // Marked on the step-time line, as the compare table marks it with "!" (the OOM line comes much later).
  CHECK_THAT(console_report(sc, {{"", "out", past}}),
             Contains("step time:         2.2500 s! per optimizer step, GA=4 micro-steps (simulated past its OOM "
                      "(simulation.on_oom: continue, as if memory "
                      "were unlimited): the real run stops there; steady state, mean of steps >= 1;"));
  CHECK_THAT(console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), synthetic_run())}}),
             Contains("step time:         2.2500 s per optimizer step, GA=4 micro-steps (steady state"));
  // In a comparison the stopped variant's detail lines have no step breakdown either.
  const auto full = summarize(sc, synthetic_workload(), synthetic_run());
  const std::string table = console_report(sc, {{"zero.stage=2", "o/a", full}, {"zero.stage=3", "o/b", s}});
  const std::string detail = table.substr(table.find("\nzero.stage=3: step time and peak memory"));
  CHECK_THAT(detail, !Contains("  step: GPU compute"));
  CHECK_THAT(table, Contains("zero.stage=3          n/a           n/a         n/a     n/a  "));
}

TEST_CASE("console_report: the parameter count is in billions, millions or thousands, whichever leaves >= 1",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  const auto line = [&](double params) {
    s.params = params;
    s.trainable_params = params;
    return console_report(sc, {{"", "out", s}});
  };
  CHECK_THAT(line(6738415616.0), Contains("6.738 billion (Ψ = 6738415616)"));
  CHECK_THAT(line(124439808.0), Contains("124.4 million (Ψ = 124439808)"));
  CHECK_THAT(line(40040.0), Contains("40.04 thousand (Ψ = 40040)"));
  CHECK_THAT(line(12.0), Contains("parameters:        Ψ = 12\n"));
  // Trial 24: hidden 1e7 gave "8.014e+06 billion"; 8.014e15 = 8014 trillion, and no exponent beyond 9999 trillion.
  CHECK_THAT(line(8.014e15), Contains("8014 trillion (Ψ = 8014000000000000)"));
  CHECK_THAT(line(1.5e12), Contains("1.5 trillion (Ψ = 1500000000000)"));
  CHECK_THAT(line(8.014e16), Contains("80140 trillion (Ψ = 80140000000000000)"));
}

TEST_CASE("console_report: the CPU optimizer line splits the host step and names the CPU whose DRAM sets it",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  // Without host work (no offload) there is no line.
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("CPU optimizer:"));
  s.host_step.cpu_adam_s = 0.28;
  s.host_step.unscale_s = 0.08;
  s.host_step.lp_cast_s = 0.06;
  s.breakdown.exposed_cpu_s = 0.25;
  s.cpu_name = "ryzen9-7950x";
  s.cpu_memory_bandwidth = 83.2e9;
  s.gpus_per_node = 8; // the synthetic node
  const std::string out = console_report(sc, {{"", "out", s}});
  // busy = 0.28 + 0.08 + 0.06 = 0.42 s.
  CHECK_THAT(out, Contains("  CPU optimizer:     busy 0.4200 s per step on rank 0: CPU Adam 0.2800 s, gradient "
                           "unscale/clip 0.0800 s, fp32 -> lp params cast 0.0600 s (the compute stream waited 0.2500 s "
                           "of it); CPU ryzen9-7950x (83.2 GB/s DRAM, shared by 8 ranks)\n"));
  // torch.optim on the CPU tensors (training.optimizer_impl torch-single-tensor) is named as such.
  auto torch_sc = sc;
  torch_sc.training.optimizer_impl = scenario::OptimizerImpl::TORCH_SINGLE_TENSOR;
  auto t = summarize(torch_sc, synthetic_workload(), synthetic_run());
  t.host_step = s.host_step;
  CHECK_THAT(console_report(torch_sc, {{"", "out", t}}),
             Contains("busy 0.4200 s per step on rank 0: torch single-tensor Adam 0.2800 s, gradient"));
  // A CPU of 8 NUMA nodes under 2 ranks: each rank's pinned buffers sit on one node; with 8 ranks every node is used.
  s.cpu_name = "dgx-a100-epyc-7742";
  s.cpu_memory_bandwidth = 409.6e9;
  s.cpu_numa_nodes = 8;
  s.gpus_per_node = 2;
  s.host_pinned_peak_bytes = 1e9;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("; CPU dgx-a100-epyc-7742 (409.6 GB/s DRAM in 8 NUMA nodes, each rank's pinned buffers on one, "
                      "shared by 2 ranks)\n"));
  // Nothing pinned (pin_memory false): no pinned buffers to place.
  s.host_pinned_peak_bytes = 0;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("(409.6 GB/s DRAM in 8 NUMA nodes, shared by 2 ranks)\n"));
  s.host_pinned_peak_bytes = 1e9;
  s.gpus_per_node = 8;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("(409.6 GB/s DRAM in 8 NUMA nodes, shared by 8 ranks)\n"));
}

TEST_CASE("human_duration and gpu_hours_text: the unit changes at twice the next unit, 4 significant digits",
          "[analysis][unit]") {
  CHECK(human_duration(119.9) == "119.9 s");
  CHECK(human_duration(120) == "2.0 min");
  CHECK(human_duration(7199) == "120.0 min"); // 7199 / 60 = 119.98
  CHECK(human_duration(7200) == "2.0 h");
  CHECK(human_duration(172800) == "2.0 d");
  CHECK(human_duration(2e6) == "23.1 d"); // 2e6 / 86400 = 23.15
  CHECK(gpu_hours_text(10340.4) == "10340");
  CHECK(gpu_hours_text(103.44) == "103.4");
  CHECK(gpu_hours_text(10.344) == "10.34");
  CHECK(gpu_hours_text(1.0344) == "1.034");
}

TEST_CASE("large_trace_note: the size in MB, the viewers and the keys that make the trace smaller",
          "[analysis][unit]") {
  scenario::OutputSpec o; // defaults: every step, rank 0 only
  // 587,400,000 B = 587.4 MB, printed without decimals.
  CHECK(large_trace_note("out/x/trace.json", 587.4e6, o) ==
        "note: out/x/trace.json is 587 MB: ui.perfetto.dev opens it (slowly), chrome://tracing does not; "
        "outputs.trace_steps: 1 (step 0 only) or outputs.trace_json: false make it smaller");
  o.trace_ranks = 4;
  CHECK_THAT(large_trace_note("t.json", 250e6, o),
             Catch::EndsWith("; outputs.trace_steps: 1 (step 0 only), outputs.trace_ranks: 1 or "
                             "outputs.trace_json: false make it smaller"));
  o.trace_ranks = 1;
  o.trace_steps = 1; // already one step: only turning the trace off is left
  CHECK_THAT(large_trace_note("t.json", 250e6, o), Catch::EndsWith("; outputs.trace_json: false make it smaller"));
}

TEST_CASE("console_report: the comm per step line gives payload and wire by kind against the ZeRO paper's volume",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  // synthetic_run records no per-step traffic: no line.
  CHECK(s.step_traffic_step == -1);
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("comm per step"));
  // Stage 1 at N_d = 4, Ψ = 1e9, as DeepSpeed's defaults run it: the bf16 gradients all-reduced (2Ψ B = 2 GB of
  // payload, a ring sends 2 x 3/4 of it: 3 GB) and the updated parameters all-gathered (2 GB, 3/4 sent: 1.5 GB).
  // Wire 4.5 GB = 2.25 x Ψ x 2 B. ZeRO paper §7: 2Ψ x 3/4 = 1.50Ψ; DeepSpeed's 3Ψ x 3/4 = 2.25Ψ.
  s.zero_stage = 1;
  s.world_size = 4;
  s.params = 1e9;
  s.grad_accum = 1; // one micro-step (the synthetic scenario's GA 4 comes below)
  s.step_traffic_step = 2;
  s.step_traffic_steady = true;
  const auto ar = static_cast<std::size_t>(program::CollectiveKind::ALL_REDUCE);
  const auto ag = static_cast<std::size_t>(program::CollectiveKind::ALL_GATHER);
  const auto rs = static_cast<std::size_t>(program::CollectiveKind::REDUCE_SCATTER);
  s.step_traffic.collective_calls[ar] = 14;
  s.step_traffic.collective_bytes[ar] = 2e9;
  s.step_traffic.wire_bytes[ar] = 3e9;
  s.step_traffic.collective_calls[ag] = 1;
  s.step_traffic.collective_bytes[ag] = 2e9;
  s.step_traffic.wire_bytes[ag] = 1.5e9;
  const std::string single = console_report(sc, {{"", "out", s}});
  CHECK_THAT(single, Contains("  comm per step:     step 2, per rank: all-reduce 2.00 GB (wire 3.00 GB, 14 calls), "
                              "all-gather 2.00 GB (wire 1.50 GB, 1 call); wire 4.50 GB = 2.25Ψ elements of 2 B; "
                              "ZeRO paper §7: 2Ψ x 3/4 = 1.50Ψ (DeepSpeed's gradient all-reduce + parameter "
                              "all-gather: 3Ψ x 3/4 = 2.25Ψ)\n"));
  // At N_d = 1 the collectives move nothing: DeepSpeed still calls them and NCCL returns at once. The line says
  // so rather than "all-reduce 2.00 GB" (newuser25 F1).
  {
    auto one = s;
    one.world_size = 1;
    one.step_traffic.wire_bytes[ar] = 0;
    one.step_traffic.wire_bytes[ag] = 0;
    const std::string text = console_report(sc, {{"", "out", one}});
    CHECK_THAT(text, Contains("  comm per step:     step 2, per rank: none: at N_d = 1 the collectives are no-ops "
                              "(DeepSpeed still calls them, NCCL returns at once): all-reduce 14 calls on 2.00 GB, "
                              "all-gather 1 call on 2.00 GB; wire 0.00 GB\n"));
    CHECK_THAT(text, !Contains("all-reduce 2.00 GB (wire"));
  }
  // One line per variant, placed after the model-states line; in a comparison too.
  CHECK(single.find("comm per step") > single.find("parameters:"));
  const std::string two = console_report(sc, {{"a", "a", s}, {"b", "b", s}});
  std::size_t lines = 0;
  for (std::size_t at = 0; (at = two.find("  comm per step: step 2, per rank: all-reduce", at)) != std::string::npos;
       ++at)
    ++lines;
  CHECK(lines == 2);
  // Stage 3 (paper: parameters all-gathered in forward and backward, gradients reduce-scattered): 3Ψ x 3/4 = 2.25Ψ.
  // Here the all-gathers sent only 1.5 GB (each parameter once): 3 GB in all = 1.50Ψ, so the line says why.
  s.zero_stage = 3;
  s.step_traffic = {};
  s.step_traffic.collective_calls[ag] = 50;
  s.step_traffic.collective_bytes[ag] = 2e9;
  s.step_traffic.wire_bytes[ag] = 1.5e9;
  s.step_traffic.collective_calls[rs] = 1;
  s.step_traffic.collective_bytes[rs] = 2e9;
  s.step_traffic.wire_bytes[rs] = 1.5e9;
  const std::string z3 = console_report(sc, {{"", "out", s}});
  CHECK_THAT(z3, Contains("all-gather 2.00 GB (wire 1.50 GB, 50 calls), reduce-scatter 2.00 GB (wire 1.50 GB, 1 "
                          "call); wire 3.00 GB = 1.50Ψ elements of 2 B; ZeRO paper §7: 3Ψ x 3/4 = 2.25Ψ (less: "));
  CHECK_THAT(z3, !Contains("all-reduce"));
  // Gathered twice (4 GB of payload, 3 GB sent): 4.5 GB = 2.25Ψ, the paper's figure: no explanation.
  s.step_traffic.collective_bytes[ag] = 4e9;
  s.step_traffic.wire_bytes[ag] = 3e9;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("= 2.25Ψ elements of 2 B; ZeRO paper §7: 3Ψ x 3/4 = 2.25Ψ\n"));
  // Gradient accumulation: stage 3 gathers and reduce-scatters in each of the GA = 4 micro-steps, so the step's
  // volume is about 4 x the paper's per-reduction figure (newuser22 finding 12): said next to it. Stage 2 reduces
  // per micro-step too; stage 1 reduces once per step (at the boundary), so it gets no such words. Four micro-steps
  // of the traffic above: 18 GB = 9.00Ψ, each micro-step's share the paper's 2.25Ψ, so neither less nor more.
  s.grad_accum = 4;
  for (const auto k : {ag, rs}) {
    s.step_traffic.collective_bytes[k] *= 4;
    s.step_traffic.wire_bytes[k] *= 4;
  }
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains(
                 "= 9.00Ψ elements of 2 B; ZeRO paper §7: 3Ψ x 3/4 = 2.25Ψ, x GA=4 gathers and reductions: stage 3 "
                 "gathers the parameters and reduce-scatters the gradients in each of the 4 micro-steps\n"));
  // One micro-step's worth in a GA = 4 step is less than the paper's per micro-step.
  for (const auto k : {ag, rs}) {
    s.step_traffic.collective_bytes[k] /= 4;
    s.step_traffic.wire_bytes[k] /= 4;
  }
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("2.25Ψ (less: parameters still held"));
  s.zero_stage = 2;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains(
                 "2Ψ x 3/4 = 1.50Ψ, x GA=4 reductions: stage 2 reduces the gradients in each of the 4 micro-steps"));
  s.zero_stage = 1;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("x GA="));
  s.zero_stage = 3;
  s.grad_accum = 1;
  // More than the paper's: stage 3's padding of each tensor to a multiple of N_d (newuser23 finding 6). 100 tensors,
  // Ψ = 1e9 plus 0.5e9 elements of padding, gathered twice and reduce-scattered once: 3 x 1.5e9 elements x 2 B x 3/4 =
  // 6.75 GB sent, 3.375Ψ against 2.25Ψ. Without recorded padding (an older result.json) no reason is given.
  s.step_traffic.collective_bytes[ag] = 6e9;
  s.step_traffic.wire_bytes[ag] = 4.5e9;
  s.step_traffic.collective_bytes[rs] = 3e9;
  s.step_traffic.wire_bytes[rs] = 2.25e9;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("ZeRO paper §7: 3Ψ x 3/4 = 2.25Ψ\n"));
  s.stage3_padding_params = 0.5e9;
  s.param_tensors = 100;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("ZeRO paper §7: 3Ψ x 3/4 = 2.25Ψ (more: stage 3 pads each of the 100 parameter tensors to a "
                      "multiple of N_d = 4 elements before it gathers or reduce-scatters it, 0.50Ψ of padding in "
                      "all)\n"));
  // Padding that does not make the step exceed the paper's figure is not offered as a reason.
  s.step_traffic.wire_bytes[ag] = 3e9;
  s.step_traffic.wire_bytes[rs] = 1.5e9;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("(more:"));
  s.stage3_padding_params = 0;
  // Stage 0 under BF16_Optimizer (bf16 with fp32 accumulation before DeepSpeed 0.17.6): gradient all-reduce
  // (2 x 3/4 x 2 GB = 3 GB) + parameter all-gather (3/4 x 2 GB = 1.5 GB) = 4.5 GB = 2.25Ψ = 3Ψ x 3/4; stage 0 under
  // FP16_Optimizer never all-gathers.
  s.zero_stage = 0;
  s.step_traffic = {};
  s.step_traffic.collective_calls[ar] = 1;
  s.step_traffic.collective_bytes[ar] = 2e9;
  s.step_traffic.wire_bytes[ar] = 3e9;
  s.step_traffic.collective_calls[ag] = 1;
  s.step_traffic.collective_bytes[ag] = 2e9;
  s.step_traffic.wire_bytes[ag] = 1.5e9;
  s.bf16_optimizer = true;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("wire 4.50 GB = 2.25Ψ elements of 2 B; ZeRO paper §7: 2Ψ x 3/4 = 1.50Ψ (DeepSpeed's "
                      "BF16_Optimizer, stage 1 in all but name: gradient all-reduce + parameter all-gather: 3Ψ x 3/4 = "
                      "2.25Ψ)\n"));
  s.zero_stage = 1; // BF16_Optimizer instead of stage 1: the stage-1 note names it
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("(DeepSpeed's BF16_Optimizer: gradient all-reduce + parameter all-gather: 3Ψ x 3/4 = 2.25Ψ)"));
  s.zero_stage = 3;
  s.bf16_optimizer = false;
  // Only the warm-up step completed: said so.
  s.step_traffic_step = 0;
  s.step_traffic_steady = false;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("comm per step:     step 0 (warm-up), per rank:"));
}

TEST_CASE("console_report: a peak reached at initialisation is labelled, with the steady-state peak beside it",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  s.peak_bytes = 25.103 * kGiB; // stage 2's lp params + their flatten copy before step 0 (newuser23 finding 2)
  s.peak_step = -1;
  s.peak_label = "flatten lp params";
  s.steady_peak_bytes = 20.962 * kGiB;
  s.steady_peak_reached = true;
  REQUIRE(peak_at_initialisation(s));
  const std::string one = console_report(sc, {{"", "out", s}});
  CHECK_THAT(one, Contains("25.103 GiB on rank 1, at 'flatten lp params' (initialisation, before step 0); "
                           "steady-state peak 20.962 GiB"));
  CHECK_THAT(one, Contains("what sets the peak (initialisation, before step 0, at 'flatten lp params')"));
  auto later = s; // the same peak in step 1: no initialisation label, no "^"
  later.peak_step = 1;
  const std::string table = console_report(sc, {{"zero.stage=2", "o/2", s}, {"zero.stage=3", "o/3", later}});
  CHECK_THAT(table, Contains("   25.103^  ")); // the peak column marks it
  CHECK_THAT(table, Contains("   25.103   "));
  CHECK_THAT(table, Contains("^ peak GiB reached at initialisation, before step 0 (e.g. the flatten copy of the lp "
                             "params); steady-state peak (steps >= 1): zero.stage=2 20.962 GiB\n"));
  CHECK_THAT(table, Contains("zero.stage=2: step time and peak memory by tag (GiB = 2^30 B): 25.103 GiB allocated on "
                             "rank 1 at initialisation (before step 0); steady-state peak 20.962 GiB\n"));
  // An OOM at initialisation that stopped the run: its OOM line says where, no "^".
  auto stopped = s;
  stopped.oom = true;
  stopped.finished = false;
  stopped.steps_completed = 0;
  CHECK_FALSE(peak_at_initialisation(stopped));
}

TEST_CASE("console_report: table columns widen to their widest cell", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  auto big = s;
  big.step_time_s = 25269058560.2829; // a 1 bps NIC (newuser23 finding 7)
  big.peak_bytes = 1230069.854 * kGiB; // micro_batch 100000
  const std::string table = console_report(sc, {{"a", "o/a", s}, {"b", "o/b", big}});
  // Every row's "fits" column starts at the same offset as the header's.
  std::vector<std::size_t> at;
  std::size_t pos = 0;
  for (std::string line; pos < table.size();) {
    const std::size_t end = table.find('\n', pos);
    line = table.substr(pos, end - pos);
    pos = end + 1;
    if (line.rfind("variant ", 0) == 0)
      at.push_back(line.find("fits ("));
    else if (line.rfind("a  ", 0) == 0 || line.rfind("b  ", 0) == 0)
      at.push_back(line.find("yes"));
  }
  REQUIRE(at.size() == 3);
  CHECK(at[0] == at[1]);
  CHECK(at[0] == at[2]);
  // The step time column is as wide as "25269058560.2829" (16 characters): the header right-aligned in it.
  CHECK_THAT(table, Contains("variant       step time s"));
  CHECK_THAT(table, Contains("b        25269058560.2829"));
  CHECK_THAT(table, Contains("  1230069.854  "));
}

TEST_CASE("console_report: the paper's model states keep their digits at a huge N_d", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  s.zero_stage = 3;
  s.world_size = 800000;
  // GPT-2 124M: 16 x 124,439,808 / 800,000 = 2488.80 B = 2.49 kB = 2.430 KiB.
  s.paper_model_state_bytes = 16.0 * 124439808 / 800000;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("16Ψ/N_d = 2.49 kB (2.430 KiB) as the ZeRO paper"));
  // 16 x 124,439,808 / 64 = 31,109,952 B = 31.11 MB = 29.669 MiB.
  s.paper_model_state_bytes = 16.0 * 124439808 / 64;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("= 31.11 MB (29.669 MiB) as"));
  s.paper_model_state_bytes = 16.0 * 124439808 / 8; // 248.88 MB = 0.25 GB, 0.232 GiB
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("= 0.25 GB (0.232 GiB) as"));
}

TEST_CASE("console_report: MFU notes what a causal FlashAttention kernel executes when attention dominates",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  // LLaMA-2 7B at s = 131072 (newuser23 finding 8): per token 6 x 6.607e9 = 3.964e10 non-attention FLOPs and
  // 12 x 32 x 4096 x 131072 = 2.062e11 attention FLOPs: attention share 2.062e11 / 2.458e11 = 0.839. A causal kernel
  // runs forward 0.5 and backward 0.625 (2.5/2 x 0.5) of the count; backward is 2/3 of the attention count:
  // executed attention 1/3 x 0.5 + 2/3 x 0.625 = 0.5833, ratio 0.161 + 0.839 x 0.5833 = 0.6504.
  s.attention_flops_share = 0.839;
  s.executed_flops_ratio = 0.161 + 0.839 * (0.5 / 3 + 2 * 0.625 / 3);
  s.model_tflops_per_gpu = 588.78;
  s.mfu = 0.595;
  const std::string note = mfu_count_note(s);
  // 588.78 x 0.65042 = 382.95 TFLOPS; 59.5 % x 0.65042 = 38.7 %.
  CHECK(note ==
        "counts attention as the full s x s product (PaLM's convention, docs/compute.md), here 83.9 % of the "
        "model FLOPs; the causal FlashAttention kernels execute about half of it, so the GPU runs 65.0 % of "
        "the counted FLOPs: an executed rate of 382.95 TFLOPS, 38.7 % of peak");
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("\n                     note: MFU counts attention"));
  CHECK_THAT(console_report(sc, {{"a", "o/a", s}, {"b", "o/b", s}}), Contains("\n  MFU: counts attention"));
  s.executed_flops_ratio = 0.96; // short context: attention a small share, no note
  CHECK(mfu_count_note(s).empty());
}

TEST_CASE("console_report: the comparison table says which steps its step time averages, as the report does",
          "[analysis][unit]") {
  // synthetic_scenario has no throughput-timer sync: steps >= 1 (analysis/summary.cpp first_steady_step); with the
  // sync, DeepSpeed's ThroughputTimer starts at step 2 and so does the mean.
  auto sc = synthetic_scenario();
  const auto off = summarize(sc, synthetic_workload(), synthetic_run());
  sc.zero.throughput_timer_sync = true;
  const auto on = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK_THAT(console_report(sc, {{"a", "o/a", on}, {"b", "o/b", on}}),
             Contains("\nstep time s: mean of steps >= 2 (step 0 is warm-up; step 1 runs without the throughput "
                      "timer's sync)\n"));
  CHECK_THAT(console_report(sc, {{"a", "o/a", off}, {"b", "o/b", off}}),
             Contains("\nstep time s: mean of steps >= 1 (step 0 is warm-up)\n"));
  CHECK_THAT(console_report(sc, {{"a", "o/a", off}, {"b", "o/b", on}}),
             Contains("\nstep time s: mean of steps >= 1 (a), >= 2 (b) (step 0 is warm-up)\n"));
}

TEST_CASE("console_report: with NVMe swaps the breakdown splits the offload wait and gives the step's bytes",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto run = synthetic_run();
  run.step_idle[1].offload_nvme = 0.2;
  run.step_idle[2].offload_nvme = 0.4;
  // Rank 0's traffic of its last step (2): 3e9 B H2D, 1.5e9 B D2H, 12.5e9 B read from NVMe, 10e9 B written.
  run.step_traffic.assign(3, trace::Traffic{});
  run.step_traffic[2].copy_bytes[static_cast<std::size_t>(program::CopyDir::H2D)] = 3e9;
  run.step_traffic[2].copy_bytes[static_cast<std::size_t>(program::CopyDir::D2H)] = 1.5e9;
  run.step_traffic[2].nvme_bytes = {12.5e9, 10e9};
  const std::string out = console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), run)}});
  // PCIe (0.05 + 0.1) / 2 = 0.075 s, NVMe (0.2 + 0.4) / 2 = 0.3 s.
  CHECK_THAT(out, Contains("offload copies 0.3750 s (PCIe 0.0750 s, NVMe swaps 0.3000 s)"));
  CHECK_THAT(out, Contains("offload per step:  rank 0, step 2: PCIe H2D 3.00 GB, D2H 1.50 GB; NVMe read 12.50 GB, "
                           "write 10.00 GB\n"));
  // Endurance: 10e9 B x 8 ranks per node x 1e9 / 65536 tokens = 8e10 x 15258.7890625 steps = 1.22070e15 B per 1B
  // tokens = 1220.70 TB.
  CHECK_THAT(out, Contains("\n  NVMe written:      1220.70 TB per 1B tokens per node (rank 0 wrote 10.00 GB in step 2, "
                           "x 8 ranks per node, x 15258.8 optimizer steps of 65536 tokens)"));
  // Without NVMe traffic the wait is one figure and no NVMe bytes are printed.
  const std::string plain = console_report(sc, {{"", "out", summarize(sc, synthetic_workload(), synthetic_run())}});
  CHECK_THAT(plain, Contains("offload copies 0.0750 s, CPU optimizer"));
  CHECK_THAT(plain, !Contains("NVMe"));
}

TEST_CASE("console_report: the header names the host CPU, and says it prices the offload step when there is one",
          "[analysis][unit]") {
  auto sc = synthetic_scenario(); // 8 GPUs per node
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  // No CPU in the cluster (built in code): no line.
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("host CPU:"));
  // The 2x-rtx3090 presets' host: 2 channels x 3200 MT/s x 8 B = 51.2 GB/s.
  sc.cluster.cpu.name = "ryzen9-5950x";
  sc.cluster.cpu.cores = 16;
  sc.cluster.cpu.memory_bandwidth = ByteRate(51.2e9);
  // Without offload it prices nothing: no line (review29 14), unless the comparison offloads in a later variant.
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("host CPU:"));
  sc.compare_key = "zero.offload_optimizer";
  CHECK_THAT(console_report(sc, {{"a", "a", s}, {"b", "b", s}}),
             Contains("\nhost CPU: ryzen9-5950x (16 cores, 51.2 GB/s DRAM per node, shared by 8 ranks), the "
                      "topology's assumption (it prices only offload)\nunits: "));
  sc.compare_key.clear();
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("host CPU: ryzen9-5950x (16 cores, 51.2 GB/s DRAM per node, shared by 8 ranks): it sets the CPU "
                      "optimizer step and the offload copies (set cluster.cpu to use another)\n"));
  // A comparison over the cluster may change the CPU by row.
  sc.compare_key = "cluster.topology";
  CHECK_THAT(console_report(sc, {{"a", "a", s}, {"b", "b", s}}),
             Contains("use another) (first variant; cluster.topology varies by row)\n"));
  sc.compare_key.clear();
  // torchrun exports OMP_NUM_THREADS=1 for more than one local rank (torch/distributed/run.py): 1 thread of a rank's
  // 16 / 8 = 2 cores, so the rank is thread-limited and the line says so and by what.
  sc.training.launcher = scenario::Launcher::TORCHRUN;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("(16 cores, 51.2 GB/s DRAM per node, shared by 8 ranks, 1 thread per rank (torchrun)): it sets"));
  // deepspeed-bind-cores gives each rank its 16 / 8 = 2 cores: not limited, nothing said.
  sc.training.launcher = scenario::Launcher::DEEPSPEED_BIND_CORES;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("shared by 8 ranks): it sets"));
  // OMP_NUM_THREADS kept by the deepspeed launcher: named as the setter. 1 < 2 cores per rank.
  sc.training.launcher = scenario::Launcher::DEEPSPEED;
  sc.training.omp_num_threads = 1;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("shared by 8 ranks, 1 thread per rank (OMP_NUM_THREADS))"));
  // 2 threads fill the 2-core share: not limited.
  sc.training.omp_num_threads = 2;
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains("shared by 8 ranks): it sets"));
}

TEST_CASE("summarize: a rank on fewer OpenMP threads than its cores is recorded with what set them",
          "[analysis][unit]") {
  auto sc = synthetic_scenario(); // 8 GPUs per node
  sc.cluster.cpu.name = "threadripper-pro-5975wx";
  sc.cluster.cpu.cores = 32; // 32 / 8 = 4 cores per rank
  sc.zero.offload_optimizer = scenario::OffloadDevice::CPU;
  sc.training.launcher = scenario::Launcher::ACCELERATE; // --num_cpu_threads_per_process, default 1
  auto s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(s.cpu_threads_per_rank == 1);
  CHECK(s.cpu_threads_set_by == "accelerate");
  sc.training.omp_num_threads = 3; // accelerate keeps an exported OMP_NUM_THREADS: 3 < 4
  s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(s.cpu_threads_per_rank == 3);
  CHECK(s.cpu_threads_set_by == "OMP_NUM_THREADS");
  sc.training.omp_num_threads = 4; // the whole share
  s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(s.cpu_threads_per_rank == 0);
  CHECK(s.cpu_threads_set_by.empty());
  // Without optimizer offload there is no CPU Adam to limit.
  sc.training.omp_num_threads = 1;
  sc.zero.offload_optimizer = scenario::OffloadDevice::NONE;
  CHECK(summarize(sc, synthetic_workload(), synthetic_run()).cpu_threads_per_rank == 0);
  // The host-step line carries it.
  s.host_step.cpu_adam_s = 0.28;
  s.breakdown.exposed_cpu_s = 0.25;
  s.cpu_name = "threadripper-pro-5975wx";
  s.cpu_memory_bandwidth = 204.8e9;
  s.gpus_per_node = 8;
  s.cpu_threads_per_rank = 1;
  s.cpu_threads_set_by = "torchrun";
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("; CPU threadripper-pro-5975wx (204.8 GB/s DRAM, shared by 8 ranks, 1 thread per rank "
                      "(torchrun))\n"));
  // With the bound the run found (RunSummary::cpu_adam_bound), the line names it, and the one-core rate for threads.
  s.cpu_core_memory_bandwidth = 40.4e9;
  s.cpu_adam_bound = "thread_memory";
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("(torchrun)), CPU Adam time set by its 1 thread's DRAM rate (1 x one core's 40.4 GB/s)\n"));
  s.cpu_threads_per_rank = 3;
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains("set by its 3 threads' DRAM rate (3 x one core's 40.4 GB/s)"));
  s.cpu_adam_bound = "node_memory";
  CHECK_THAT(console_report(sc, {{"", "out", s}}),
             Contains(", CPU Adam time set by the rank's share of the node's DRAM\n"));
  s.cpu_adam_bound = "compute";
  CHECK_THAT(console_report(sc, {{"", "out", s}}), Contains(", CPU Adam time set by its cores' fp32 peak\n"));
}

TEST_CASE("console_report: a run on a GPU outside the measured bands says its step time is not validated",
          "[analysis][unit]") {
  auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  sc.cluster.gpu.preset = "a100-80gb"; // a band of its own (analysis/measured_band.cpp)
  CHECK_THAT(console_report(sc, {{"", "out", s}}), !Contains("not validated"));
  // RTX 3090: no band; its one claim (whyNLP TinyLlama on 8 RTX 3090) took 1.8200 / 1.2241 = 1.49x the simulated step.
  sc.cluster.gpu.preset = "rtx3090";
  const std::string out = console_report(sc, {{"", "out", s}});
  CHECK_THAT(out, Contains("\nnote: no measured band covers rtx3090 (the bands of docs/validation.md are A100, "
                           "H100/GH200 and V100 runs): its simulated step time is not validated against measurements"));
  CHECK_THAT(out, Contains("measured a step 49 % longer than simulated"));
}

TEST_CASE("console_report: a comparison gives each variant's time and GPU-hours per 1B tokens", "[analysis][unit]") {
  // newuser30 finding 2: only a single run printed them. The synthetic run: 65536 tokens per 2.25 s step on 8 GPUs =
  // 29127.1 tokens/s; 1e9 / 29127.1 = 34332.3 s = 9.537 h (printed 9.5 h); x 8 GPUs = 76.29 GPU-hours.
  const auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), synthetic_run());
  CHECK(time_per_billion_tokens_s(s) == Approx(1e9 * 2.25 / 65536));
  CHECK(gpu_time_per_billion_tokens_s(s) == Approx(8 * 1e9 * 2.25 / 65536));
  const std::string out = console_report(sc, {{"zero.stage=2", "o/a", s}, {"zero.stage=3", "o/b", s}});
  CHECK_THAT(out, Contains("1B tokens in  GPU-h per 1B"));
  CHECK_THAT(out, Contains("        9.5 h         76.29  ")); // the two cells, right-aligned under their heads
  CHECK_THAT(out, Contains("\n  throughput: 29127.1 tokens/s; 1B tokens in 9.5 h on 8 GPUs = 76.29 GPU-hours\n"));
  // No step time: n/a, and no block line.
  auto none = s;
  none.steps_completed = 0;
  const std::string na = console_report(sc, {{"zero.stage=2", "o/a", s}, {"zero.stage=3", "o/b", none}});
  CHECK(time_per_billion_tokens_s(none) == 0.0);
  CHECK_THAT(na, Contains("           n/a           n/a  "));
}

TEST_CASE("console_report: a collective-bound run's note replaces the measured band's, which keeps its memory part",
          "[analysis][unit]") {
  // The band note (2-25 % longer on A100, ...) would understate a collective-bound step (docs/validation.md gaps
  // 16-18 and 20: 2.2-5.6x); its memory part (13-28 % nvidia-smi) still applies.
  const auto sc = synthetic_scenario();
  const auto plain = summarize(sc, synthetic_workload(), synthetic_run());
  auto bound = plain;
  bound.collective_bound = true;
  bound.caveats = {collective_bound_note(0.9, 2, "A100"), memory_margin_note()};
  const std::string one = console_report(sc, {{"", "out", bound}});
  CHECK_THAT(one, Contains("\nnote: " + collective_bound_note(0.9, 2, "A100") + "\n"));
  CHECK_THAT(one, Contains("\nnote: memory: one user's nvidia-smi with DeepSpeed 0.9 read 13-28 % above the simulated "
                           "peak (a known gap of docs/validation.md), so budget memory with a margin\n"));
  CHECK_THAT(one, !Contains(best_case_note()));
  // A comparison with one collective-bound variant: the band note for the other, the named note for that one, and
  // its step time marked.
  const std::string mixed = console_report(sc, {{"a", "o/a", plain}, {"b", "o/b", bound}});
  CHECK_THAT(mixed, Contains(std::string("note: ") + best_case_note() + "\n"));
  CHECK_THAT(mixed, Contains("\nnote: b: " + collective_bound_note(0.9, 2, "A100") + "\n"));
  CHECK_THAT(mixed, !Contains(memory_margin_note()));
  CHECK_THAT(mixed, Contains("2.2500+") && Contains("\n+ collective-bound (summary.json collective_bound)"));
  // Every variant collective-bound: no band note.
  const std::string both = console_report(sc, {{"a", "o/a", bound}, {"b", "o/b", bound}});
  CHECK_THAT(both, !Contains(best_case_note()) && Contains(memory_margin_note()));
}
