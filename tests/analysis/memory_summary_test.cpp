// Allocated vs reserved vs nvidia-smi in the summary, result.json and console (caching-allocator model,
// reference/zero_semantics.md §6, §7 item 32). Inputs are the hand-built synthetic run plus reserved figures.
#include "analysis/console.hpp"
#include "analysis/result_json.hpp"
#include "analysis/summary.hpp"
#include "tests/analysis/synthetic_run.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <regex>

using namespace zerosim;
using namespace zerosim::analysis;
using namespace zerosim::analysis::testing;
using Catch::Contains;

namespace {
constexpr double kTol = 1e-12;
constexpr double kContext = 287'047'680.0; // PyTorch PR #86509, lazy loading

/// The synthetic run with reserved peaks: rank r reserves (13 + r) GiB; non-PyTorch = context + 16 MiB NCCL.
trace::RunResult run_with_reserved() {
  auto run = synthetic_run();
  for (auto& m : run.memory) {
    m.reserved_peak = m.peak;
    m.reserved_peak.bytes = (13.0 + m.rank) * kGiB;
    m.non_pytorch_bytes = kContext + 16.0 * (1 << 20);
    m.nvidia_smi_peak = m.reserved_peak.bytes + m.non_pytorch_bytes;
  }
  return run;
}
} // namespace

TEST_CASE("summarize: reserved peak and the nvidia-smi estimate come from the worst rank", "[analysis][unit]") {
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run_with_reserved());
  CHECK(s.peak_bytes == Approx(12.0 * kGiB).epsilon(kTol)); // allocated, unchanged
  CHECK(s.peak_reserved_bytes == Approx(15.0 * kGiB).epsilon(kTol)); // rank 2: 13 + 2 GiB
  CHECK(s.peak_reserved_rank == 2);
  // nvidia-smi = 15 GiB + 287,047,680 B + 16,777,216 B.
  CHECK(s.nvidia_smi_bytes == Approx(15.0 * kGiB + kContext + 16777216.0).epsilon(kTol));
  CHECK(s.fits); // 15.3 GiB <= 80 GiB
}

TEST_CASE("summarize: the memory the run cannot give back is the most over the ranks, not the worst nvidia-smi's",
          "[analysis][unit]") {
  // Ranks r = 0, 1, 2 reserve 13 + r GiB; give them 10 - r GiB a retry could not release (rank 0 holds the most
  // tensors, rank 2 the most blocks held for other streams). The figure is rank 0's 10 GiB + its CUDA context
  // (287,047,680 B) + 16 MiB of NCCL, though nvidia-smi's worst rank is rank 2.
  auto run = run_with_reserved();
  for (auto& m : run.memory)
    m.unreclaimable_peak = (10.0 - m.rank) * kGiB;
  const auto s = summarize(synthetic_scenario(), synthetic_workload(), run);
  CHECK(s.peak_reserved_rank == 2);
  CHECK(s.nvidia_smi_needed_bytes == Approx(10.0 * kGiB + kContext + 16777216.0).epsilon(kTol));
  CHECK(summary_from_json(summary_json(s)).nvidia_smi_needed_bytes == s.nvidia_smi_needed_bytes);
  // A summary.json written before the figure existed reads nvidia-smi's.
  auto old = nlohmann::json::parse(summary_json(s));
  old.erase("nvidia_smi_needed_bytes");
  CHECK(summary_from_json(old.dump()).nvidia_smi_needed_bytes == s.nvidia_smi_bytes);
}

TEST_CASE("summarize: a reserved peak above capacity does not fit even when allocated does", "[analysis][unit]") {
  auto sc = synthetic_scenario();
  sc.cluster.gpu.memory = Bytes(14.0 * kGiB); // allocated peak 12 GiB fits, nvidia-smi 15.3 GiB does not
  const auto s = summarize(sc, synthetic_workload(), run_with_reserved());
  CHECK_FALSE(s.fits);
}

TEST_CASE("result_json: summary carries allocated, reserved and nvidia-smi in GiB", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto run = run_with_reserved();
  const auto s = summarize(sc, synthetic_workload(), run);
  const auto j = nlohmann::json::parse(result_json(sc, "", s, run));
  const auto& js = j.at("summary");
  CHECK(js.at("peak_memory_gib").get<double>() == Approx(12.0).epsilon(kTol)); // kept: allocated peak
  CHECK(js.at("peak_allocated_gib").get<double>() == Approx(12.0).epsilon(kTol));
  CHECK(js.at("peak_reserved_gib").get<double>() == Approx(15.0).epsilon(kTol));
  CHECK(js.at("nvidia_smi_gib").get<double>() == Approx(15.0 + (kContext + 16777216.0) / kGiB).epsilon(kTol));
  CHECK(j.at("memory_per_rank").at(2).at("reserved_peak").at("gib").get<double>() == Approx(15.0).epsilon(kTol));
  const auto back = summary_from_json(summary_json(s));
  CHECK(back.peak_reserved_bytes == s.peak_reserved_bytes);
  CHECK(back.nvidia_smi_bytes == s.nvidia_smi_bytes);
  CHECK(back.peak_reserved_label == "alloc adam");
  CHECK(back.peak_reserved_by_tag == s.peak_reserved_by_tag);
  auto held = s;
  held.peak_reserved_held_bytes = 13.0 * kGiB;
  CHECK(summary_from_json(summary_json(held)).peak_reserved_held_bytes == held.peak_reserved_held_bytes);
}

TEST_CASE("console_report: shows reserved and the nvidia-smi estimate and what decides OOM", "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  const auto s = summarize(sc, synthetic_workload(), run_with_reserved());
  const std::string out = console_report(sc, {VariantSummary{"", ".", s}});
  CHECK_THAT(out, Contains("peak allocated:    12.000 GiB on rank 1"));
  CHECK_THAT(out, Contains("peak reserved:     15.000 GiB on rank 2"));
  CHECK_THAT(out, Contains("nvidia-smi est."));
  CHECK_THAT(out, Contains("OOM when reserved + CUDA context + NCCL exceed it"));
  // What the reserved peak held (rank 2: 12 GiB allocated = 8 optimizer states + 4 lp params; 15 - 12 = 3 GiB in
  // cached blocks).
  CHECK_THAT(out, Contains("at the reserved peak (step 1, at 'alloc adam'): 12.000 GiB allocated (optimizer_states "
                           "8.00, lp_params 4.00) + 3.000 GiB cached free blocks and fragmentation"));
  // Beyond the four largest tags the rest is summed so the list adds up to the allocated figure:
  // 12 GiB = 8 + 3.0625 + 0.5 + 0.25 + 3 x 0.0625, the last three shown as "3 more 0.19" (0.1875 GiB).
  auto many = s;
  many.peak_reserved_by_tag = {};
  const double parts[] = {8.0, 4.0 - 0.9375, 0.5, 0.25, 0.0625, 0.0625, 0.0625};
  for (std::size_t i = 0; i < std::size(parts); ++i)
    many.peak_reserved_by_tag[i] = parts[i] * kGiB;
  const std::string listed = console_report(sc, {VariantSummary{"", ".", many}});
  CHECK_THAT(listed, Contains("12.000 GiB allocated (") && Contains(", 3 more 0.19) + 3.000 GiB cached"));
  // 13 GiB of blocks not free at that peak: 13 - 12 = 1 GiB held for another stream (record_stream), and only
  // 15 - 13 = 2 GiB cached free.
  auto held = s;
  held.peak_reserved_held_bytes = 13.0 * kGiB;
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", held}}),
             Contains("12.000 GiB allocated (optimizer_states 8.00, lp_params 4.00) + 1.000 GiB held for other "
                      "streams") &&
                 Contains("record_stream) + 2.000 GiB cached free blocks and fragmentation"));
  // Each compared variant's own section says it too.
  const std::string two = console_report(sc, {VariantSummary{"a", "o/a", s}, VariantSummary{"b", "o/b", s}});
  CHECK(two.find("at the reserved peak", two.find("\nb: step time and peak memory")) != std::string::npos);
}

TEST_CASE("summarize: a stage-3 reserved peak mostly not live tensors gets one note on host run-ahead",
          "[analysis][unit]") {
  // synthetic_scenario: ZeRO stage 3, overlap_comm unset (stage 3: on, a separate all-gather stream), host model on
  // with the default launch queue of 1024 kernels. Rank 2's reserved peak holds 12 GiB of tensors (8 optimizer
  // states + 4 lp params).
  auto sc = synthetic_scenario();
  // 15 GiB reserved: 15 - 12 = 3 GiB not live, 3/15 = 20 % < 25 %: no note.
  const auto below = summarize(sc, synthetic_workload(), run_with_reserved());
  CHECK(below.reserved_note.empty());
  // 16 GiB reserved (rank 2: 13 + 2 + 1): 16 - 12 = 4 GiB not live = exactly a quarter of 16: the note, with the
  // figures 4.0 of 16.0 GiB and the bound in force.
  auto run = run_with_reserved();
  run.memory[2].reserved_peak.bytes = 16.0 * kGiB;
  run.memory[2].nvidia_smi_peak = run.memory[2].reserved_peak.bytes + run.memory[2].non_pytorch_bytes;
  const auto s = summarize(sc, synthetic_workload(), run);
  REQUIRE(s.peak_reserved_bytes == Approx(16.0 * kGiB).epsilon(kTol));
  CHECK_THAT(s.reserved_note, Contains("4.0 GiB of the 16.0 GiB reserved peak are not live tensors") &&
                                  Contains("simulation.host_launch_queue = 1024 kernels, an assumption"));
  // Said once in the console (in the reserved-peak lines), and kept through summary.json.
  const std::string out = console_report(sc, {VariantSummary{"", ".", s}});
  const auto first = out.find("reserved peak are not live tensors");
  REQUIRE(first != std::string::npos);
  CHECK(out.find("reserved peak are not live tensors", first + 1) == std::string::npos);
  CHECK(summary_from_json(summary_json(s)).reserved_note == s.reserved_note);
  // Without a bound, the note says so.
  CHECK_THAT(reserved_run_ahead_note(s, 3, true, true, 0),
             Contains("without a bound here (simulation.host_launch_queue: 0)"));
  // Not at stage 2, not with the all-gather on the compute stream (overlap_comm off: record_stream onto the
  // allocating stream holds nothing), not without the host model.
  CHECK(reserved_run_ahead_note(s, 2, true, true, 1024).empty());
  CHECK(reserved_run_ahead_note(s, 3, false, true, 1024).empty());
  CHECK(reserved_run_ahead_note(s, 3, true, false, 1024).empty());
  sc.zero.overlap_comm = false;
  CHECK(summarize(sc, synthetic_workload(), run).reserved_note.empty());
}

TEST_CASE("memory_bounds: the not-live reserved bytes, the nvidia-smi floor and a marginal fit, by hand",
          "[analysis][unit]") {
  // run_with_reserved: allocated peak 12 GiB (rank 1); reserved peak 15 GiB on rank 2 holding 12 GiB of tensors
  // (8 optimizer states + 4 lp params), no blocks held for other streams; non-PyTorch 287,047,680 + 16,777,216 B.
  const double non_pytorch = kContext + 16777216.0;
  const auto sc = synthetic_scenario(); // 80 GiB card
  const auto s = summarize(sc, synthetic_workload(), run_with_reserved());
  const MemoryBounds b = memory_bounds(s);
  CHECK(b.reserved_not_live == Approx(3.0 * kGiB).epsilon(kTol)); // 15 - 12 GiB, all cached free blocks
  CHECK(b.nvidia_smi_low == Approx(12.0 * kGiB + non_pytorch).epsilon(kTol)); // max(12, 12) GiB + non-PyTorch
  CHECK(s.nvidia_smi_bytes - b.nvidia_smi_low == Approx(b.reserved_not_live).epsilon(kTol));
  CHECK_FALSE(b.marginal); // 15.28 GiB of 80 GiB
  // A larger allocated peak elsewhere raises the floor: 13.5 GiB + non-PyTorch.
  auto higher = s;
  higher.peak_bytes = 13.5 * kGiB;
  CHECK(memory_bounds(higher).nvidia_smi_low == Approx(13.5 * kGiB + non_pytorch).epsilon(kTol));
  // Held blocks count as not live too: held 13 GiB = 12 live + 1 held, the other 2 GiB cached.
  auto held = s;
  held.peak_reserved_held_bytes = 13.0 * kGiB;
  CHECK(memory_bounds(held).reserved_not_live == Approx(3.0 * kGiB).epsilon(kTol));
  // Marginal: cudaMalloc retries on an 80 GiB card.
  auto retries = s;
  retries.alloc_retries = 1;
  CHECK(memory_bounds(retries).marginal);
  // Marginal by headroom: nvidia-smi 15 GiB + 0.283 GiB = 15.283 GiB. On a 16 GiB card 0.717 GiB is free, under 5 %
  // of 16 = 0.8 GiB: marginal. On 16.2 GiB 0.917 GiB is free, over 5 % of 16.2 = 0.81 GiB: not. On 14 GiB it does
  // not fit, so it is not marginal either.
  auto card = [&](double gib) {
    auto c = sc;
    c.cluster.gpu.memory = Bytes(gib * kGiB);
    return summarize(c, synthetic_workload(), run_with_reserved());
  };
  const auto on16 = card(16.0);
  REQUIRE(on16.fits);
  CHECK(memory_bounds(on16).marginal);
  CHECK_FALSE(memory_bounds(card(16.2)).marginal);
  const auto on14 = card(14.0);
  REQUIRE_FALSE(on14.fits);
  CHECK_FALSE(memory_bounds(on14).marginal);
  // In result.json's and summary.json's summary.
  const auto j = nlohmann::json::parse(result_json(sc, "", on16, run_with_reserved())).at("summary");
  CHECK(j.at("reserved_not_live_bytes").get<double>() == Approx(3.0 * kGiB).epsilon(kTol));
  CHECK(j.at("nvidia_smi_low_bytes").get<double>() == Approx(12.0 * kGiB + non_pytorch).epsilon(kTol));
  CHECK(j.at("marginal").get<bool>());
}

TEST_CASE("marginal_fit: the node's host RAM is part of the one marginal definition, by hand", "[analysis][unit]") {
  // newuser29 #4: Mistral-7B with ZeRO-3 optimizer offload on a 128 GiB workstation peaks at 121.4 GiB of host RAM per
  // node. 128 - 121.4 = 6.6 GiB free, under kHostMarginalPercent (10 %) of 128 GiB = 12.8 GiB: marginal by the host,
  // although the GPU (12.03 of 24 GiB nvidia-smi, no retries) has room.
  constexpr double kCard = 24.0 * kGiB;
  const MarginalFit tight = marginal_fit(true, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 121.4 * kGiB, 128.0 * kGiB);
  CHECK(tight.marginal);
  CHECK(tight.by_host);
  CHECK_FALSE(tight.by_headroom);
  CHECK_FALSE(tight.by_retries);
  CHECK(marginal_reason(tight) == "host RAM under 10 % free");
  // 115 GiB leaves 13 GiB, more than 12.8 GiB: not marginal. 115.2 GiB leaves exactly 12.8 GiB: not (the gate keeps
  // at least that much, leaves_headroom's <=).
  CHECK_FALSE(marginal_fit(true, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 115.0 * kGiB, 128.0 * kGiB).marginal);
  CHECK_FALSE(marginal_fit(true, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 115.2 * kGiB, 128.0 * kGiB).marginal);
  // Unlimited host memory (0) or no host memory used (no offload): no host test. A run that does not fit: no mark.
  CHECK_FALSE(marginal_fit(true, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 121.4 * kGiB, 0).marginal);
  CHECK_FALSE(marginal_fit(true, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 0, 128.0 * kGiB).marginal);
  CHECK_FALSE(marginal_fit(false, 0, 12.03 * kGiB, 12.03 * kGiB, kCard, 121.4 * kGiB, 128.0 * kGiB).marginal);
  // All three reasons, in the console's order, "a, b and c": 23.99 of 24 GiB leaves 0.01 GiB, under 1.2 GiB.
  const MarginalFit all = marginal_fit(true, 32, 23.99 * kGiB, 23.99 * kGiB, kCard, 121.4 * kGiB, 128.0 * kGiB);
  CHECK(marginal_reason(all) == "allocator retries, less than 5 % of the card free and host RAM under 10 % free");
  // From a summary: the figures of the detail, and summary.json's marginal and marginal_reason.
  RunSummary s;
  s.fits = true;
  s.capacity_bytes = kCard;
  s.nvidia_smi_bytes = 12.03 * kGiB;
  s.host_node_peak_bytes = 121.4 * kGiB;
  s.host_capacity_bytes = 128.0 * kGiB;
  CHECK(memory_bounds(s).by_host);
  CHECK(marginal_detail(s) ==
        "host RAM under 10 % free (node peak 121.40 of 128.00 GiB leaves 6.60 GiB, under 12.80 GiB)");
  // A host OOM is no fit (summarize sets fits false with oom; marginal_fit(s) also reads oom).
  auto oom = s;
  oom.oom = true;
  oom.oom_on_host = true;
  CHECK_FALSE(memory_bounds(oom).marginal);
  const auto sc = synthetic_scenario();
  auto on16 = summarize(sc, synthetic_workload(), run_with_reserved());
  on16.host_node_peak_bytes = 121.4 * kGiB;
  on16.host_capacity_bytes = 128.0 * kGiB;
  const auto j = nlohmann::json::parse(result_json(sc, "", on16, run_with_reserved())).at("summary");
  CHECK(j.at("marginal").get<bool>());
  CHECK(j.at("marginal_reason").get<std::string>() == "host RAM under 10 % free");
}

TEST_CASE("console_report: a marginal fit is decided as summary.json's marginal and names its reason",
          "[analysis][unit]") {
  // run_with_reserved: nvidia-smi 15 GiB + 0.283 GiB (context 287,047,680 B + 16 MiB NCCL) = 15.283 GiB, no retries.
  auto card = [](double gib) {
    auto c = synthetic_scenario();
    c.cluster.gpu.memory = Bytes(gib * kGiB);
    return c;
  };
  const auto one = [&](double gib, int retries) {
    const auto sc = card(gib);
    auto s = summarize(sc, synthetic_workload(), run_with_reserved());
    s.alloc_retries = retries;
    return console_report(sc, {VariantSummary{"", ".", s}});
  };
  const auto table = [&](double gib, int retries) {
    const auto sc = card(gib);
    auto s = summarize(sc, synthetic_workload(), run_with_reserved());
    s.alloc_retries = retries;
    return console_report(sc, {VariantSummary{"a", "o/a", s}, VariantSummary{"b", "o/b", s}});
  };
  // 80 GiB: 64.7 GiB free, no retries: a plain fit.
  CHECK_THAT(one(80, 0), Contains("fits in 80.00 GiB: yes (OOM when"));
  CHECK_THAT(one(80, 0), !Contains("marginal"));
  // 16 GiB: 0.717 GiB free, under 5 % of 16 GiB = 0.8 GiB: marginal by headroom though the allocator never retried.
  // (The synthetic ranks record no unreclaimable peak: the memory the run cannot give back reads as nvidia-smi's.)
  CHECK_THAT(one(16, 0), Contains("yes, marginal: less than 5 % of the card free (the memory it cannot give back, "
                                  "15.283 GiB, leaves"));
  CHECK_THAT(table(16, 0), Contains("yes, marginal (less than 5 % of the card free) in 16.00 GiB"));
  CHECK_THAT(table(16, 0), Contains("s/step, marginal)"));
  // 16.2 GiB: 0.917 GiB free, over 5 % of 16.2 GiB = 0.81 GiB: not marginal.
  CHECK_THAT(one(16.2, 0), !Contains("marginal"));
  // Retries on 80 GiB: marginal by retries only, one retry in the singular.
  CHECK_THAT(one(80, 3), Contains("yes, marginal: allocator retries (a cudaMalloc failed 3 times"));
  CHECK_THAT(table(80, 1), Contains("yes, marginal (1 allocator retry) in 80.00 GiB"));
  // Both on 16 GiB.
  CHECK_THAT(one(16, 2), Contains("yes, marginal: allocator retries and less than 5 % of the card free (a cudaMalloc "
                                  "failed 2 times"));
  CHECK_THAT(table(16, 2),
             Contains("yes, marginal (2 allocator retries and less than 5 % of the card free) in 16.00 GiB"));
  CHECK(marginal_reason(MemoryBounds{}).empty());
}

TEST_CASE("console_report: the nvidia-smi floor is printed beside the estimate when the reserved note applies",
          "[analysis][unit]") {
  const auto sc = synthetic_scenario();
  auto s = summarize(sc, synthetic_workload(), run_with_reserved());
  REQUIRE(s.reserved_note.empty()); // not stage 3 with an all-gather stream: no note, no range
  CHECK_THAT(console_report(sc, {VariantSummary{"", ".", s}}), !Contains("nvidia-smi range"));
  // With the note: floor 12 GiB allocated + 0.283 GiB non-PyTorch = 12.283 GiB, estimate 15.283 GiB, 15 - 12 = 3 GiB
  // of cached blocks uncertain.
  s.reserved_note = "uncertain";
  const std::string out = console_report(sc, {VariantSummary{"", ".", s}});
  CHECK_THAT(out, Contains("  nvidia-smi range:  12.283 to 15.283 GiB: no run-ahead goes below"));
  CHECK_THAT(out, Contains("the 3.000 GiB of held and cached blocks"));
  const std::string two = console_report(sc, {VariantSummary{"a", "o/a", s}, VariantSummary{"b", "o/b", s}});
  CHECK_THAT(two, Contains("  nvidia-smi range: 12.283 to 15.283 GiB"));
}

TEST_CASE("marginal_detail, marginal_legend: marginal_reason's phrases with their figures or their meaning",
          "[analysis][unit]") {
  // review29 18-19: one list of reasons feeds the three texts. All three reasons at once: 32 retries, nvidia-smi
  // 23.99 of 24 GiB (leaves 0.01 GiB, under 5 % = 1.20 GiB), host 121.4 of 128 GiB (leaves 6.60, under 12.80 GiB).
  RunSummary s;
  s.fits = true;
  s.alloc_retries = 32;
  s.capacity_bytes = 24.0 * kGiB;
  s.nvidia_smi_bytes = 23.99 * kGiB;
  s.host_node_peak_bytes = 121.4 * kGiB;
  s.host_capacity_bytes = 128.0 * kGiB;
  const MarginalFit all = marginal_fit(s);
  CHECK(marginal_detail(s) ==
        "allocator retries (the caching allocator released its cached blocks 32 times to fit), "
        "less than 5 % of the card free (it cannot give back 23.99 of 24.00 GiB, leaving 0.01 GiB, under "
        "1.20 GiB) and host RAM under 10 % free (node peak 121.40 of 128.00 GiB leaves 6.60 GiB, "
        "under 12.80 GiB)");
  // Without the parenthesised figures the detail is marginal_reason's text.
  const std::regex figures(" \\([^()]*\\)");
  CHECK(std::regex_replace(marginal_detail(s), figures, "") == marginal_reason(all));
  CHECK(marginal_legend(all) ==
        "allocator retries (a cudaMalloc succeeded only after the caching allocator released its cached blocks); or "
        "less than 5 % of the card free (in the memory the run cannot give back, nvidia-smi's peak less what a "
        "cudaMalloc retry reclaims; --headroom 5% keeps it free); or host RAM under 10 % free (at the node's host "
        "memory peak; --host-headroom 10% keeps it free)");
  // |= gathers the reasons of several fits for one legend: a retry-only fit and a host-only fit give both.
  MarginalFit merged;
  CHECK(marginal_legend(merged).empty());
  merged |= marginal_fit(true, 1, 12.0 * kGiB, 12.0 * kGiB, 24.0 * kGiB);
  merged |= marginal_fit(true, 0, 12.0 * kGiB, 12.0 * kGiB, 24.0 * kGiB, 121.4 * kGiB, 128.0 * kGiB);
  CHECK(merged.marginal);
  CHECK(merged.by_retries);
  CHECK_FALSE(merged.by_headroom);
  CHECK(merged.by_host);
  CHECK(std::regex_replace(marginal_legend(merged), figures, "") == "allocator retries; or host RAM under 10 % free");
  // A fit that is not marginal adds nothing.
  merged |= marginal_fit(true, 0, 1.0 * kGiB, 1.0 * kGiB, 24.0 * kGiB);
  CHECK_FALSE(merged.by_headroom);
}

TEST_CASE("marginal_fit: a fit that keeps the headroom only by cache flushes is marginal, not rejected, by hand",
          "[analysis][unit]") {
  // newuser31 F6: Llama-2-70B, stage 3, 32 x H100 (79.65 GiB), mb 1, GA 2: nvidia-smi 79.44 GiB, of which the run
  // cannot give back 46.99 GiB (the rest is blocks held for other streams and cached segments that a failed
  // cudaMalloc's retry releases), 7 retries. Default headroom 5 % of 79.65 = 3.9825 GiB: limit 75.6675 GiB.
  constexpr double kCard = 79.65 * kGiB;
  constexpr double kSmi = 79.44 * kGiB;
  constexpr double kNeeded = 46.99 * kGiB;
  const double limit = kCard - 0.05 * kCard;
  CHECK(limit == Approx(75.6675 * kGiB).epsilon(1e-12));
  // The gate (plan, largest, run --check) compares the memory it cannot give back: 46.99 <= 75.67 passes; the
  // nvidia-smi figure would have failed it (79.44 > 75.67).
  CHECK(leaves_headroom(kNeeded, kCard, kCard - limit));
  CHECK_FALSE(leaves_headroom(kSmi, kCard, kCard - limit));
  const MarginalFit m = marginal_fit(true, 7, kSmi, kNeeded, kCard);
  CHECK(m.marginal);
  CHECK(m.by_retries);
  CHECK(m.by_flushes); // 79.65 - 79.44 = 0.21 GiB free at nvidia-smi's peak, under 3.98 GiB
  CHECK_FALSE(m.by_headroom); // 79.65 - 46.99 = 32.66 GiB free without the reclaimable blocks
  CHECK(marginal_reason(m) == "allocator retries and headroom only after cache flushes");
  // Without retries the flushes alone make it marginal (the card is larger than the run's reserved peak needs, but
  // not by 5 %).
  CHECK(marginal_reason(marginal_fit(true, 0, kSmi, kNeeded, kCard)) == "headroom only after cache flushes");
  // A gate's --headroom moves the flushes test: 40 % (31.86 GiB, limit 47.79 GiB) still passes the gate (46.99 <=
  // 47.79) and nvidia-smi's 79.44 is above the limit: marginal by flushes. With no held or cached blocks (needed =
  // nvidia-smi = 47.0 GiB) the same gate passes cleanly.
  const double h40 = 0.40 * kCard;
  CHECK(leaves_headroom(kNeeded, kCard, h40));
  CHECK(marginal_fit(true, 0, kSmi, kNeeded, kCard, 0, 0, h40).by_flushes);
  CHECK_FALSE(marginal_fit(true, 0, 47.0 * kGiB, 47.0 * kGiB, kCard, 0, 0, h40).marginal);
  // Where the run itself leaves less than 5 %: by_headroom, and then not by_flushes (one reason, the stronger).
  const MarginalFit tight = marginal_fit(true, 0, kSmi, 76.0 * kGiB, kCard);
  CHECK(tight.by_headroom);
  CHECK_FALSE(tight.by_flushes);
  // The detail names the figures: 79.44 - 46.99 = 32.45 GiB given back by a retry.
  RunSummary s;
  s.fits = true;
  s.capacity_bytes = kCard;
  s.nvidia_smi_bytes = kSmi;
  s.nvidia_smi_needed_bytes = kNeeded;
  CHECK(marginal_detail(s) ==
        "headroom only after cache flushes (nvidia-smi 79.44 of 79.65 GiB leaves 0.21 GiB, "
        "under 3.98 GiB; 32.45 GiB of it is blocks held for other streams and cached segments "
        "a cudaMalloc retry gives back, without which it needs 46.99 GiB)");
  // summary.json's marginal and marginal_reason, and the not-recorded fallback: 0 reads as nvidia-smi's figure, so
  // the same run is then marginal by the 5 % share itself.
  CHECK(memory_bounds(s).by_flushes);
  s.nvidia_smi_needed_bytes = 0;
  CHECK(nvidia_smi_needed(s) == kSmi);
  CHECK(memory_bounds(s).by_headroom);
}
