// Peak attribution: for the worst rank's peak GPU memory, each live tag with its size and the configuration knob
// that controls it ("ipg_bucket 1.86 GiB — reduce_bucket_size=5e8 (x2: overlap_comm=true)"), so a person sees which
// setting to change. Pure functions of the scenario and the recorded peak; no SimGrid.
#pragma once

#include "sim/program/program.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/trace/run_result.hpp"

#include <string>
#include <vector>

namespace zerosim::analysis {

struct RunSummary;

/// One live tag at the peak.
struct PeakAttributionLine {
  std::string tag; ///< program::to_string(MemTag), e.g. "ipg_bucket"
  double bytes = 0; ///< bytes of that tag live at the peak
  std::string knob; ///< the settings that control it, e.g. "reduce_bucket_size=5e8 (x2: overlap_comm=true)"
};

/// The knob text of `tag` for scenario `sc` with data-parallel degree `world_size` (N_d). Sources of each rule:
/// reference/zero_semantics.md §3.3 (stage 0), §3.4 (stage 1/2 buckets, grad partition, step-time fp32 cast),
/// §3.5 (stage 3 gather window, sub_group_size), §5.1 (activations: Korthikanti et al. 2022; Dao 2022).
[[nodiscard]] std::string knob_for(const scenario::Scenario& sc, program::MemTag tag, int world_size);

/// The live tags of `by_tag` (non-zero only), largest first (ties: enum order), each with knob_for(...).
[[nodiscard]] std::vector<PeakAttributionLine> attribute_peak(const scenario::Scenario& sc,
                                                              const trace::TagBytes& by_tag, int world_size);

/// The knob text of host-memory tag `tag` (optimizer offload, offload_param) for scenario `sc` with N_d =
/// `world_size`: which ds_config setting puts the buffer on the host and sizes it. Sources: stage_1_and_2.py
/// __init__ with cpu_offload (fp32 master and grad partitions, temp grad buffer, lp staging from v0.17.0), stage3.py
/// _setup_for_real_optimizer / initialize_optimizer_states (grad partitions, fp32 sub-group buffers),
/// swap_tensor/*_swapper.py (NVMe swap buffers), DeepSpeedCPUAdam (m, v created at the first step); summarized in
/// reference/zero_semantics.md §3.4-§3.5 and §4.
[[nodiscard]] std::string host_knob_for(const scenario::Scenario& sc, program::MemTag tag, int world_size);

/// The live tags of the worst rank's host peak (s.host_peak_by_tag), largest first, each with host_knob_for(...);
/// empty without host allocations.
[[nodiscard]] std::vector<PeakAttributionLine> attribute_host_peak(const scenario::Scenario& sc, const RunSummary& s);

/// attribute_peak(sc, s.peak_by_tag, s.world_size): the worst rank's peak of a run.
[[nodiscard]] std::vector<PeakAttributionLine> attribute_peak(const scenario::Scenario& sc, const RunSummary& s);

/// A DeepSpeed element count as people write it in ds_config: 500000000 -> "5e8", 50000000 -> "5e7",
/// 16777216 -> "16777216", 1500000000 -> "1.5e9", 0 -> "0".
[[nodiscard]] std::string format_elements(Elements n);

} // namespace zerosim::analysis
