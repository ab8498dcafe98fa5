#pragma once
// How much longer the measured steps of docs/validation.md's step-time claims took than zerosim simulates them, per
// GPU family: the one table the reports' best-case note, `plan --help`, plan's "measured band" lines and
// docs/validation.md's summary row ("step time without offload") quote. A test checks each entry against the claim's
// row of docs/validation.md's Results table (published and simulated values), so when the simulation changes and
// ./scripts/update-docs.sh regenerates that table, the test names the entry to update here.
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace zerosim::analysis {

/// One step-time claim without offload of scenarios/validation/ as docs/validation.md's Results table gives it.
struct StepTimeClaim {
  const char* name; ///< the table's claim column: "<scenario file stem>: <claim>"
  double published; ///< the claim's `value:` (the published number): s for a step, or a rate (MFU, TFLOPS/GPU)
  double simulated; ///< zerosim validate's simulated value, same unit
  bool rate; ///< published is a rate (higher = faster) rather than a step time

  /// Measured step / simulated step: published / simulated for a step time, simulated / published for a rate (the
  /// same work per step, so the step time is inversely proportional to the rate).
  [[nodiscard]] double measured_over_simulated() const { return rate ? simulated / published : published / simulated; }
};

/// A GPU family and its step-time claims.
struct StepTimeFamily {
  const char* label; ///< as the texts name it: "A100", "H100/GH200", "V100"
  std::vector<const char*> gpu_prefixes; ///< GPU preset names (topologies/gpus/) of the family start with one of these
  std::vector<StepTimeClaim> claims;
};

/// The families with step-time claims, in the order the texts list them. Source: docs/validation.md's Results table
/// (the claims of scenarios/validation/ on these GPUs whose metric is a step time, MFU or TFLOPS/GPU of a run
/// without offload).
[[nodiscard]] const std::vector<StepTimeFamily>& step_time_families();

/// The step-time claims of scenarios/validation/ on runs with CPU offload (optimizer, or optimizer and parameters),
/// on any GPU with an x86 host: their step is largely the host's (CPU Adam, the copies over PCIe), which the GPU
/// families' claims do not measure. Source: docs/validation.md's Results table, as step_time_families(); the GH200
/// offload claim (a Grace host, which no plan topology has) is left out.
[[nodiscard]] const std::vector<StepTimeClaim>& offload_step_claims();

/// The step-time claims of docs/validation.md's Results table that no band takes, each with why: the GH200 offload
/// step (a Grace host), the whyNLP/tinyllama README rows (gap 15: the A100 row's machine and interconnect are not
/// stated; the RTX 3090 row would be a family of one claim), and rows in seconds that time one phase of a step (the
/// ZeRO-Offload tutorial's forward and optimizer timers, gap 19), not the step. Listed so that a new step claim is
/// not silently missing.
[[nodiscard]] const std::vector<std::pair<std::string, std::string>>& step_claims_left_out();

/// A step-time claim on a GPU that has no family band (one claim is not a band): read with the GPU's "not validated"
/// note rather than as its band.
struct UnbandedStepClaim {
  const char* gpu_prefix; ///< GPU preset names (topologies/gpus/) the claim ran on start with this
  const char* label; ///< the GPU as the note names it: "RTX 3090"
  const char* gap; ///< docs/validation.md's known gap that explains the claim: "gap 15"
  StepTimeClaim claim; ///< docs/validation.md's Results row, as step_time_families() holds its claims
};

/// The step-time claims of step_claims_left_out() that ran on one GPU with no other claim: the whyNLP/tinyllama
/// TinyLlama ZeRO-2 step on 8 RTX 3090 (gap 15). Source: docs/validation.md's Results table, checked by a test.
[[nodiscard]] const std::vector<UnbandedStepClaim>& unbanded_step_claims();

/// How unvalidated_gpu_note() begins: how the reports find it among a run's caveats (RunSummary::caveats).
inline constexpr const char* kUnvalidatedGpuNoteStart = "no measured band covers ";

/// The console's note for a run on a GPU without a family band (measured_band(gpu_preset).own_family false): "no
/// measured band covers <gpu> ...: its simulated step time is not validated against measurements", plus the GPU's
/// lone claim of unbanded_step_claims() with its measured / simulated step, if it has one; "" for a GPU with a band.
[[nodiscard]] std::string unvalidated_gpu_note(const std::string& gpu_preset);

/// The label RunSummary::measured_band (summary.json, result.json, sweep rows) gives a run on a GPU that no family band
/// covers (measured_band(gpu).own_family false: unvalidated_gpu_note() is not empty), with or without offload, with
/// measured_step_low and _high both 1: its simulated step time is not validated against measurements, as the console's
/// note says, so no measured range is quoted for it.
inline constexpr const char* kNoMeasuredBand = "none";

/// The range of measured step / simulated step over a family's claims (or over all claims for a GPU without any).
struct MeasuredBand {
  std::string label; ///< the family's label, "all claims" for a GPU of no family, "offload" for offload_band()
  /// How the "not decidable" line names the claims: "on A100", "of all step-time claims without offload", "with
  /// offload" (offload_band), "on A100 or with offload" (combined_band).
  std::string where;
  double low = 1; ///< smallest measured / simulated step of the claims
  double high = 1; ///< largest
  std::size_t claims = 0; ///< how many claims the range is over
  bool own_family = false; ///< false: the GPU has no claim, the range is over every family's claims
};

/// The band of `claims` (the smallest and largest measured / simulated step of them) under `label` and `where`:
/// the one builder of measured_band, offload_band and collective_bound_band.
[[nodiscard]] MeasuredBand claims_band(std::string label, std::string where, const std::vector<StepTimeClaim>& claims,
                                       bool own_family);

/// The measured band for a GPU preset name (e.g. "a100-80gb" -> A100, "h200" -> H100/GH200: the same Hopper GPU with
/// more memory; "rtx4090" -> every claim, own_family false).
[[nodiscard]] MeasuredBand measured_band(const std::string& gpu_preset);

/// The band of offload_step_claims(), for a plan with offload whatever its GPU (label "offload", own_family true).
[[nodiscard]] MeasuredBand offload_band();

/// The band of one run or plan: offload_band() when it offloads (its step is largely the host's, whatever the GPU),
/// else measured_band(gpu_preset).
[[nodiscard]] MeasuredBand band_for(bool offload, const std::string& gpu_preset);

/// The band covering both `a` and `b` (the smaller low, the larger high, their claims together): the "not decidable"
/// spread of a table whose plans take either band (some with offload, some without).
[[nodiscard]] MeasuredBand combined_band(const MeasuredBand& a, const MeasuredBand& b);

/// The step-time claims of docs/validation.md's Results table whose step is mostly inter-node collectives: DeepSpeed's
/// ZeRO tutorial's 10B with ZeRO-2 on 32 V100 (gap 16), the Azure blog's 175B with ZeRO-3 at micro-batch 1 on 256
/// A100 (gap 17) and DeepSpeed's ZeRO++ tutorial's 18B ZeRO-3 baseline on 64 V100 (gap 20), the three runs of
/// docs/validation.md's "multi-node steps bound by collectives" row. Checked by a test against the Results table, as
/// step_time_families().
[[nodiscard]] const std::vector<StepTimeClaim>& collective_bound_step_claims();

/// The band of collective_bound_step_claims() (label "collective-bound", own_family true): measured steps 2.2-5.6x
/// the simulated step. Not a range a run falls in, a lower bound: the simulated time of such a step is optimistic by
/// an amount that depends on the fabric (gaps 16-18 and 20).
[[nodiscard]] MeasuredBand collective_bound_band();

/// The step-time claims of docs/validation.md's Results table on ZeRO-3 runs across nodes without offload: the Azure
/// blog's 175B on 32 DGX A100 nodes at micro-batch 32 (compute-bound: measured step 1.23x the simulated one) and at
/// micro-batch 1 (bound by collectives: 2.17x), gap 17. Every validation scenario with `zero.stage: 3`, more GPUs than
/// a node, no offload and a claim on its step time, MFU or TFLOPS is one of them unless step_claims_left_out() names
/// it (the ZeRO++ tutorial's 18B on 4 DGX-2, 5.6x, whose inter-node rate is not stated: gap 20); a test scans
/// scenarios/validation/, and a test checks their numbers against the Results table, as step_time_families().
[[nodiscard]] const std::vector<StepTimeClaim>& multinode_zero3_step_claims();

/// The band of multinode_zero3_step_claims() (label "multi-node ZeRO-3", own_family true): 1.23-2.17x.
[[nodiscard]] MeasuredBand multinode_zero3_band();

/// True for a run in the scope of multinode_zero3_step_claims(): ZeRO stage 3 without offload across nodes
/// (world_size > gpus_per_node, so every data-parallel collective crosses the fabric). Such a run's band is
/// run_band's, not its GPU family's alone: the validation record of that scope reaches 2.17x.
[[nodiscard]] bool in_multinode_zero3_scope(int stage, bool offload, int world_size, int gpus_per_node);

/// The band of one run or plan: offload_band() with offload; for a run in the multi-node ZeRO-3 scope
/// (in_multinode_zero3_scope) its GPU family's band combined with multinode_zero3_band(), labelled
/// "<family> and multi-node ZeRO-3" (e.g. "A100 and multi-node ZeRO-3": 1.02-2.17x; no comma, for the CSV cells);
/// else measured_band(gpu_preset).
[[nodiscard]] MeasuredBand run_band(bool offload, const std::string& gpu_preset, int stage, int world_size,
                                    int gpus_per_node);

/// How multinode_zero3_note() begins: how the reports find it among a run's caveats (RunSummary::caveats).
inline constexpr const char* kMultinodeZero3NoteStart = "this run is ZeRO-3 across nodes";

/// The note for a run in the multi-node ZeRO-3 scope that is not collective-bound: "this run is ZeRO-3 across nodes
/// (4 nodes): the validation record's ZeRO-3 steps across nodes took 1.23x (compute-bound) to 2.17x (bound by
/// collectives) the simulated step (docs/validation.md gap 17; gaps 16 and 18 also found multi-node collective time
/// optimistic), so read its step time within 1.02-2.17x (<family band> and that record), not the <family> band's
/// 1.02-1.48x alone". `family` is the run's GPU family band (measured_band).
[[nodiscard]] std::string multinode_zero3_note(int nodes, const MeasuredBand& family);

/// The share of the step at or above which a multi-node run counts as collective-bound: 0.5. Criterion: rank 0 has a
/// collective in flight (StepBreakdown::comm_busy_s) for at least half of the step. With a real inter-node rate at
/// half the simulated one -- less than the 2.2-5.6x of collective_bound_band() -- the collectives alone would then
/// take the whole step, so the simulated step stops being a compute-bound best case whatever the overlap.
inline constexpr double collective_bound_share = 0.5;

/// True when a run spans more than one node (world_size > gpus_per_node: every data-parallel collective then crosses
/// the nodes) and its collectives are in flight for at least collective_bound_share of the step. False without a step
/// time (step_time_s <= 0).
[[nodiscard]] bool is_collective_bound(int world_size, int gpus_per_node, double comm_busy_s, double step_time_s);

/// How collective_bound_note() begins: how the reports find it among a run's caveats (RunSummary::caveats).
inline constexpr const char* kCollectiveBoundNoteStart = "this run's step is bound by inter-node collectives";

/// The note for a collective-bound run (is_collective_bound): "this run's step is bound by inter-node collectives
/// (in flight 92 % of the simulated step, across 4 nodes): the measured runs of docs/validation.md in this regime took
/// 2.2-5.6x the simulated step (gaps 16-18 and 20), so read its step time as a lower bound, not the <label> band".
[[nodiscard]] std::string collective_bound_note(double busy_share, int nodes, const std::string& band_label);

/// What a collective-bound row means, for the legend of a table that marks such rows (sweep's and plan's): "multi-node
/// and collectives in flight for at least 50 % of the step: the measured runs of docs/validation.md in this regime
/// took 2.2-5.6x the simulated step (gaps 16-18 and 20), so read its step time as a lower bound, not within the
/// measured band".
[[nodiscard]] std::string collective_bound_mark_note();

/// "2-25 % longer on A100, 2-48 % on H100/GH200 and 20-41 % on V100": the bands of step_time_families() in
/// percent (measured / simulated - 1, rounded to whole percent), as plan --help, the best-case note and
/// docs/validation.md's summary quote them.
[[nodiscard]] std::string measured_step_margin_text();

/// The "not decidable" lines under plan's table: ranks whose throughputs (`tokens_per_s`, best first, as ranked)
/// lie closer together than the band's high / low ratio cannot be ordered by the simulation, since each real step may
/// be anywhere from low to high x its simulated step. Greedy groups from the first rank: each group is a rank and the
/// ranks after it within that ratio of it; one line per group of two or more, naming the ranks and then why ("not
/// decidable by simulation: ranks 1-3 differ by at most 4.1 % in simulated throughput (ranks 1 and 2 by 0.0 %), less
/// than the 23 % spread of the measured band (measured steps on A100 took 1.02-1.25x ...), so a real run may order
/// them either way"; a later group: "not decidable by simulation either: ranks 4 and 5 differ by 1.7 % in simulated
/// throughput, also less than that spread"), each ending in a newline. "" when every neighbour is further apart or the
/// band has no spread.
[[nodiscard]] std::string undecidable_ranks_note(const std::vector<double>& tokens_per_s, const MeasuredBand& band);

} // namespace zerosim::analysis
