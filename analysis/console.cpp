#include "analysis/console.hpp"

#include "analysis/measured_band.hpp"
#include "analysis/version.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>

namespace zerosim::analysis {

namespace {

std::string fits_text(const RunSummary& s, bool brief = false) {
  if (s.oom_on_host)
    return fmt::format("no (host OOM: {:.2f} GiB host memory per node)", s.host_capacity_bytes / kGiB);
  if (s.oom && s.oom_gpu_demand_bytes > s.capacity_bytes) {
    // How far the first failing allocation was from fitting (RunSummary::oom_gpu_demand_bytes - capacity): the
    // step's later allocations need more, so it is not how much the step is short. A run simulated on past the
    // OOM (simulation.on_oom: continue, finished) also has the would-be nvidia-smi peak: its excess leads.
    const double first = s.oom_gpu_demand_bytes - s.capacity_bytes;
    const std::string at = s.oom_label.empty() ? std::string() : " at '" + s.oom_label + "'";
    if (simulated_past_gpu_oom(s))
      return fmt::format("no (OOM: nvidia-smi peak {} over; first failed allocation short by {}{})",
                         memory_text(s.nvidia_smi_bytes - s.capacity_bytes), memory_text(first), at);
    return fmt::format("no (OOM: first failed allocation short by {}{}; the whole step needs more)", memory_text(first),
                       at);
  }
  if (s.oom)
    return "no (OOM)";
  // Marginal as summary.json's `marginal` decides it (memory_bounds): it ran only by emptying the allocator's cache,
  // the nvidia-smi peak leaves less than plan's default headroom free, or the node's host peak less than its default
  // host headroom. The reason is named.
  if (const MemoryBounds b = memory_bounds(s); b.marginal) {
    const std::string count = b.by_retries ? fmt::format("{} ", s.alloc_retries) : std::string();
    if (brief) { // "yes, marginal (5 allocator retries)", "(1 allocator retry)"
      std::string reason = marginal_reason(b);
      if (b.by_retries && s.alloc_retries == 1)
        reason.replace(0, std::string("allocator retries").size(), "allocator retry");
      return fmt::format("yes, marginal ({}{})", count, reason);
    }
    // What each reason measured: the GPU peak after the retries or against the card, the host peak against the node.
    std::vector<std::string> figures;
    if (b.by_retries)
      figures.push_back(fmt::format(
          "a cudaMalloc failed {} time{} and succeeded only after the allocator released its cached blocks; the peak "
          "after that leaves {}",
          s.alloc_retries, s.alloc_retries == 1 ? "" : "s", memory_text(s.capacity_bytes - s.nvidia_smi_bytes)));
    else if (b.by_flushes)
      figures.push_back(
          fmt::format("the nvidia-smi peak leaves {}", memory_text(s.capacity_bytes - s.nvidia_smi_bytes)));
    if (b.by_headroom)
      figures.push_back(fmt::format("the memory it cannot give back, {:.3f} GiB, leaves {}",
                                    nvidia_smi_needed(s) / kGiB, memory_text(s.capacity_bytes - nvidia_smi_needed(s))));
    if (b.by_flushes)
      figures.push_back(
          fmt::format("{:.3f} GiB of the nvidia-smi peak are blocks held for other streams and cached "
                      "segments that a failed cudaMalloc's retry gives back; without them it needs "
                      "{:.3f} GiB",
                      (s.nvidia_smi_bytes - nvidia_smi_needed(s)) / kGiB, nvidia_smi_needed(s) / kGiB));
    if (b.by_host)
      figures.push_back(fmt::format("the node's host memory peak leaves {:.2f} of {:.2f} GiB",
                                    (s.host_capacity_bytes - s.host_node_peak_bytes) / kGiB,
                                    s.host_capacity_bytes / kGiB));
    std::string joined;
    for (const std::string& f : figures)
      joined += (joined.empty() ? "" : "; ") + f;
    return fmt::format("yes, marginal: {} ({})", marginal_reason(b), joined);
  }
  return s.fits ? "yes" : "no";
}

/// A host OOM stopped at its failed allocation (simulation.on_oom: stop): the node needed at least its live host
/// memory then plus that request (RunSummary::oom_host_demand_bytes), B; 0 otherwise. Not the node's peak over the
/// run plus the request: an earlier peak may have been freed before the failure. The whole step may need more.
double host_need_lower_bound(const RunSummary& s) {
  return s.oom_on_host && !s.finished ? s.oom_host_demand_bytes : 0.0;
}

/// Host memory of an offload run: the worst rank's peak, its node's, the capacity, and the pinned / pageable split
/// (pinned = page-locked by pin_memory, program::Alloc::pinned). Nothing without host allocations.
void host_lines(std::string& out, const RunSummary& s) {
  if (s.host_peak_bytes <= 0)
    return;
  out += fmt::format("  host memory peak:  {:.3f} GiB per rank, {:.3f} GiB per node", s.host_peak_bytes / kGiB,
                     s.host_node_peak_bytes / kGiB);
  out += s.host_capacity_bytes > 0 ? fmt::format(" of {:.2f} GiB\n", s.host_capacity_bytes / kGiB)
                                   : std::string(" (host memory unlimited)\n");
  // What the simulation does not hold (the OS, and per rank the Python process, PyTorch's CPU libraries and the CUDA
  // driver's host allocations): said when the fit is marginal by the host (marginal_fit's by_host, the one rule:
  // under kHostMarginalPercent of the node's RAM left), never after a host OOM (no fit then).
  if (marginal_fit(s).by_host)
    out += fmt::format(
        "  note: that leaves {:.2f} GiB of the node's RAM, under {:g} %, for what is not simulated (the OS, and per "
        "rank its Python process, PyTorch and the CUDA driver's host memory): marginal\n",
        (s.host_capacity_bytes - s.host_node_peak_bytes) / kGiB, kHostMarginalPercent);
  out += fmt::format("  host pinned/pageable: {:.3f} / {:.3f} GiB at the host peak (most pinned at once {:.3f} GiB)\n",
                     s.host_pinned_at_peak_bytes / kGiB, (s.host_peak_bytes - s.host_pinned_at_peak_bytes) / kGiB,
                     s.host_pinned_peak_bytes / kGiB);
  if (s.host_peak_attribution.empty())
    return;
  std::string where = s.host_peak_step >= 0 ? fmt::format("step {}", s.host_peak_step) : std::string();
  if (!s.host_peak_label.empty())
    where += fmt::format("{}at '{}'", where.empty() ? "" : ", ", s.host_peak_label);
  out += fmt::format("  what sets the host peak per rank{} (tag, GiB, the knob that controls it):\n",
                     where.empty() ? std::string() : " (" + where + ")");
  for (const auto& l : s.host_peak_attribution)
    out += fmt::format("    {:<16} {:>8.2f} GiB \u2014 {}\n", l.tag, l.bytes / kGiB, l.knob);
}

/// After a host OOM that stopped the run: how much host memory it needed at least, and how to learn the whole need.
void host_need_line(std::string& out, const RunSummary& s, const std::string& indent) {
  if (const double need = host_need_lower_bound(s); need > 0)
    out += fmt::format(
        "{}host memory needed: at least {:.2f} GiB per node (live host memory at the failed allocation "
        "plus its request); --set simulation.on_oom=continue simulates on as if memory were unlimited "
        "and reports the whole step's need\n",
        indent, need / kGiB);
}

/// "offload copies 1.5213 s", with " (PCIe 11.0 s, NVMe swaps 176.5 s)" when the run swapped to NVMe: the exposed
/// offload time of the breakdown (StepBreakdown::exposed_offload_s and its split).
std::string offload_wait_text(const RunSummary& s) {
  const StepBreakdown& b = s.breakdown;
  const bool nvme = b.exposed_offload_nvme_s > 0 || s.step_traffic.nvme_bytes[0] + s.step_traffic.nvme_bytes[1] > 0;
  if (!nvme)
    return fmt::format("offload copies {:.4f} s", b.exposed_offload_s);
  return fmt::format("offload copies {:.4f} s (PCIe {:.4f} s, NVMe swaps {:.4f} s)", b.exposed_offload_s,
                     b.exposed_offload_pcie_s, b.exposed_offload_nvme_s);
}

/// "offload per step: rank 0, step 2: PCIe H2D 37.80 GB, D2H 37.90 GB; NVMe read 126.30 GB, write 113.70 GB": rank
/// 0's copy bytes in the step of RunSummary::step_traffic (result.json copies_per_step), GB = 1e9 B. Nothing when that
/// step moved no bytes between GPU and host or NVMe.
void offload_bytes_line(std::string& out, const RunSummary& s, const std::string& lead) {
  const trace::Traffic& t = s.step_traffic;
  const auto h2d = t.copy_bytes[static_cast<std::size_t>(program::CopyDir::H2D)];
  const auto d2h = t.copy_bytes[static_cast<std::size_t>(program::CopyDir::D2H)];
  if (!has_step_time(s) || s.step_traffic_step < 0 || h2d + d2h + t.nvme_bytes[0] + t.nvme_bytes[1] <= 0)
    return;
  out += fmt::format("{}rank 0, step {}: PCIe H2D {:.2f} GB, D2H {:.2f} GB", lead, s.step_traffic_step, h2d / 1e9,
                     d2h / 1e9);
  if (t.nvme_bytes[0] + t.nvme_bytes[1] > 0)
    out += fmt::format("; NVMe read {:.2f} GB, write {:.2f} GB", t.nvme_bytes[0] / 1e9, t.nvme_bytes[1] / 1e9);
  out += "\n";
}

/// "NVMe written: 2205.54 TB per 1B tokens per node (rank 0 wrote 72.27 GB in step 2, x 2 ranks per node, x 15258.8
/// optimizer steps of 65536 tokens); ...": nvme_write_bytes_per_billion_tokens in TB (1e12 B) and its factors, GB =
/// 1e9 B, after `lead`. Nothing when the run wrote nothing to NVMe in a steady step.
void nvme_endurance_line(std::string& out, const RunSummary& s, const std::string& lead) {
  const double per_billion = nvme_write_bytes_per_billion_tokens(s);
  if (per_billion <= 0)
    return;
  const int ranks = std::min(s.gpus_per_node, s.world_size);
  out += fmt::format(
      "{}{:.2f} TB per 1B tokens per node (rank 0 wrote {:.2f} GB in step {}, x {} rank{} per node, x "
      "{:.1f} optimizer steps of {:.0f} tokens); the node's drives share it: set it against their "
      "rated endurance (TBW)\n",
      lead, per_billion / 1e12, s.step_traffic.nvme_bytes[1] / 1e9, s.step_traffic_step, ranks, ranks == 1 ? "" : "s",
      1e9 / s.global_batch_tokens, s.global_batch_tokens);
}

/// ", 1 thread per rank (torchrun)" when a rank runs its host work on `threads` OpenMP threads, fewer than its share
/// of the cores (RunSummary::cpu_threads_per_rank), set by `by`; "" for 0.
std::string threads_text(int threads, const std::string& by) {
  if (threads <= 0)
    return {};
  return fmt::format(", {} thread{} per rank ({})", threads, threads == 1 ? "" : "s", by);
}

/// ", CPU Adam time set by ...": which bound set the host's Adam passes (RunSummary::cpu_adam_bound), with the rate
/// when it is the rank's threads (threads x one core's DRAM rate); "" when the run did not say.
std::string adam_bound_text(const RunSummary& s) {
  const std::string lead = fmt::format(", {} time set by ", s.host_optimizer);
  if (s.cpu_adam_bound == "node_memory")
    return lead + (s.gpus_per_node > 1 ? "the rank's share of the node's DRAM" : "the node's DRAM");
  if (s.cpu_adam_bound == "thread_memory") {
    const int t = s.cpu_threads_per_rank;
    const double b1 = s.cpu_core_memory_bandwidth / 1e9;
    if (t <= 0) // its whole share of the cores, still below its share of the DRAM
      return lead + fmt::format("its cores' DRAM rate (one core's {:.1f} GB/s each)", b1);
    return lead +
           fmt::format("its {} thread{} DRAM rate ({} x one core's {:.1f} GB/s)", t, t == 1 ? "'s" : "s'", t, b1);
  }
  if (s.cpu_adam_bound == "compute")
    return lead + "its cores' fp32 peak";
  return {};
}

/// "1B tokens in 13.5 h on 16 GPUs = 215.5 GPU-hours": time_per_billion_tokens_s and its GPU time in GPU-hours;
/// "" without a step time.
std::string billion_tokens_text(const RunSummary& s) {
  const double t = time_per_billion_tokens_s(s);
  if (t <= 0)
    return {};
  return fmt::format("1B tokens in {} on {} GPU{} = {} GPU-hours", human_duration(t), s.world_size,
                     s.world_size == 1 ? "" : "s", gpu_hours_text(gpu_time_per_billion_tokens_s(s) / 3600.0));
}

/// The CPU-optimizer work per step (optimizer offload), after `lead`; nothing when there is none to show.
void host_step_line(std::string& out, const RunSummary& s, const std::string& lead) {
  const HostStep& h = s.host_step;
  if (!has_step_time(s) || h.total() <= 0)
    return;
  out += fmt::format(
      "{}busy {:.4f} s per step on rank 0: {} {:.4f} s, gradient unscale/clip "
      "{:.4f} s, fp32 -> lp params cast {:.4f} s",
      lead, h.total(), s.host_optimizer, h.cpu_adam_s, h.unscale_s, h.lp_cast_s);
  if (h.other_s > 0)
    out += fmt::format(", other {:.4f} s", h.other_s);
  out += fmt::format(" (the compute stream waited {:.4f} s of it)", s.breakdown.exposed_cpu_s);
  // The rate all of it streams at: the CPU's DRAM, shared by the node's ranks; a rank's pinned buffers sit on one
  // NUMA node (sim/zero/cpu_adam.hpp pinned_byte_weight).
  if (!s.cpu_name.empty() && s.cpu_memory_bandwidth > 0) {
    std::string numa;
    if (s.cpu_numa_nodes > 1)
      numa = fmt::format(" in {} NUMA nodes{}", s.cpu_numa_nodes,
                         s.gpus_per_node < s.cpu_numa_nodes && s.host_pinned_peak_bytes > 0
                             ? ", each rank's pinned buffers on one"
                             : "");
    out += fmt::format("; CPU {} ({:.1f} GB/s DRAM{}{}{})", s.cpu_name, s.cpu_memory_bandwidth / 1e9, numa,
                       s.gpus_per_node > 1 ? fmt::format(", shared by {} ranks", s.gpus_per_node) : std::string(),
                       threads_text(s.cpu_threads_per_rank, s.cpu_threads_set_by));
    out += adam_bound_text(s);
  }
  out += "\n";
}

/// "6.738 billion (Ψ = 6738415616)", with the trainable count when some parameters are frozen.
std::string params_text(const RunSummary& s) {
  // The largest of trillion / billion / million / thousand that leaves at least 1 (a tiny test model is not
  // "1.2e-08 billion", an absurd one not "8.014e+06 billion"); no exponent above 9999 trillion either.
  const double tn = s.params / 1e12;
  std::string t = s.params >= 1e12
                      ? fmt::format("{} trillion (Ψ = {:.0f})",
                                    tn < 1e4 ? fmt::format("{:.4g}", tn) : fmt::format("{:.0f}", tn), s.params)
                  : s.params >= 1e9 ? fmt::format("{:.4g} billion (Ψ = {:.0f})", s.params / 1e9, s.params)
                  : s.params >= 1e6 ? fmt::format("{:.4g} million (Ψ = {:.0f})", s.params / 1e6, s.params)
                  : s.params >= 1e3 ? fmt::format("{:.4g} thousand (Ψ = {:.0f})", s.params / 1e3, s.params)
                                    : fmt::format("Ψ = {:.0f}", s.params);
  if (s.trainable_params > 0 && s.trainable_params < s.params)
    t += fmt::format(", {:.0f} trainable", s.trainable_params) +
         (s.trainable_note.empty() ? std::string() : " (" + s.trainable_note + ")");
  return t;
}

std::string header(const scenario::Scenario& sc, bool any_nvme) {
  std::string h = fmt::format("zerosim {}: scenario '{}' - {}\n", version(), sc.name,
                              scenario_headline_text(scenario_headline(sc)));
  // The host CPU the topology assumes: with offload it sets the CPU optimizer step and the pageable copies (a 2-channel
  // desktop and an 8-channel workstation differ 4x in DRAM bandwidth), so it is named before any number. Without
  // offload (in the first variant, and none compared) it prices nothing: not said.
  const std::string& k = sc.compare_key;
  const bool compares_host = k.rfind("zero.offload", 0) == 0 || k.rfind("cluster.cpu", 0) == 0 || k == "zero";
  if (const auto& cpu = sc.cluster.cpu; !cpu.name.empty()) {
    const bool offload = sc.zero.offload_optimizer != scenario::OffloadDevice::NONE ||
                         sc.zero.offload_param != scenario::OffloadDevice::NONE;
    if (offload || compares_host)
      h += fmt::format(
          "host CPU: {} ({} cores, {:.1f} GB/s DRAM per node{}{}){}{}\n", cpu.name, cpu.cores,
          cpu.memory_bandwidth.value() / 1e9,
          sc.cluster.gpus_per_node > 1 ? fmt::format(", shared by {} ranks", sc.cluster.gpus_per_node) : "",
          sc.zero.offload_optimizer != scenario::OffloadDevice::NONE
              ? threads_text(scenario::cpu_limited_threads_per_rank(sc.training, cpu, sc.cluster.gpus_per_node),
                             scenario::cpu_threads_setter(sc.training))
              : std::string(),
          offload ? ": it sets the CPU optimizer step and the offload copies (set cluster.cpu to use another)"
                  : ", the topology's assumption (it prices only offload)",
          k == "cluster" || k.rfind("cluster.", 0) == 0 ? fmt::format(" (first variant; {} varies by row)", k) : "");
  }
  // The node's NVMe when the run (or a variant: `any_nvme`) offloads to it: its bandwidths set the swaps, and a
  // preset's RAID-0 of 8 drives is several times one drive, so whose figures they are is said, as for the CPU: the
  // topology's assumption, or its label with the cluster.nvme keys changed (NvmeSpec::name).
  const auto& n = sc.cluster.nvme;
  const bool nvme = any_nvme || sc.zero.offload_optimizer == scenario::OffloadDevice::NVME ||
                    sc.zero.offload_param == scenario::OffloadDevice::NVME;
  if (nvme && n.read_bandwidth.value() > 0) {
    const bool assumed = n.name.empty() || n.name == sc.cluster.topology; // no cluster.nvme key changed
    h +=
        fmt::format("NVMe of {}: {:.1f} GB/s read, {:.1f} GB/s write per node{}{}{}: it sets the NVMe swaps{}{}\n",
                    n.name.empty() ? sc.cluster.topology : n.name, n.read_bandwidth.value() / 1e9,
                    n.write_bandwidth.value() / 1e9,
                    n.drives > 0 ? fmt::format(" ({} drive{})", n.drives, n.drives == 1 ? "" : "s as one RAID-0 volume")
                                 : std::string(),
                    sc.cluster.gpus_per_node > 1 ? fmt::format(", shared by {} ranks", sc.cluster.gpus_per_node) : "",
                    assumed ? ", the topology's assumption" : "",
                    assumed ? " (set cluster.nvme.read_bandwidth and write_bandwidth to your drives')" : "",
                    k == "cluster" || k.rfind("cluster.", 0) == 0 ? fmt::format(" (first variant; {} varies by row)", k)
                                                                  : "");
  }
  h += "units: GiB = 2^30 bytes, TFLOPS = 10^12 FLOP/s, s = simulated seconds\n";
  return h;
}

/// Lines for a run that stopped early without an OOM, and the engine's diagnostics.
void note_lines(std::string& out, const RunSummary& s, const std::string& indent) {
  if (const std::string note = unfinished_run_note(s); !note.empty())
    out += fmt::format("{}note: {}\n", indent, note);
  for (const auto& d : s.diagnostics)
    out += fmt::format("{}note: {}\n", indent, d);
}

void tag_lines(std::string& out, const RunSummary& s, const std::string& indent) {
  for (const auto& [tag, bytes] : top_tags(s.peak_by_tag))
    out += fmt::format("{}{:<18} {:>9.3f} GiB\n", indent, program::to_string(tag), bytes / kGiB);
}

/// The peak's attribution (analysis/attribution.hpp): each live tag with the config knob that controls it.
void attribution_lines(std::string& out, const RunSummary& s, const std::string& indent) {
  if (s.peak_attribution.empty())
    return;
  std::string where;
  if (s.peak_step >= 0)
    where = fmt::format("step {}", s.peak_step);
  else if (peak_at_initialisation(s))
    where = "initialisation, before step 0";
  if (!s.peak_label.empty())
    where += fmt::format("{}at '{}'", where.empty() ? "" : ", ", s.peak_label);
  out += fmt::format("{}what sets the peak{} (tag, GiB at the peak, the knob that controls it):\n", indent,
                     where.empty() ? std::string() : " (" + where + ")");
  for (const auto& l : s.peak_attribution)
    out += fmt::format("{}  {:<16} {:>8.2f} GiB \u2014 {}\n", indent, l.tag, l.bytes / kGiB, l.knob);
}

/// The peak's contents: the attributed list when there is one (it names the knob), else the plain tag list.
void peak_lines(std::string& out, const RunSummary& s, const std::string& indent) {
  if (s.peak_attribution.empty())
    tag_lines(out, s, indent);
  else
    attribution_lines(out, s, indent);
}

/// cudaMalloc retries (PyTorch's num_alloc_retries) of the rank with the most, over the run (up to its first OOM);
/// nothing without.
void retry_lines(std::string& out, const RunSummary& s, const std::string& indent) {
  if (s.alloc_retries <= 0 || (s.oom && s.alloc_retries == 1)) // the OOM's own failed retry says nothing more
    return;
  out += fmt::format(
      "{}cudaMalloc retries: {} on rank {} (the most of any rank) {}: a cudaMalloc failed, so the "
      "allocator released its cached free segments and tried again.\n",
      indent, s.alloc_retries, s.alloc_retries_rank, s.oom ? "up to the OOM" : "over the whole run");
  if (s.alloc_retry_wait_s > 0)
    out += fmt::format(
        "{}  Before releasing them it waited {:.2f} ms in all for blocks that another stream was still "
        "using (record_stream); simulated, and hidden when the host runs ahead of the GPU.\n",
        indent, s.alloc_retry_wait_s * 1e3);
  out += fmt::format("{}  Not in the step time: the device synchronize of each retry's cudaFree.\n", indent);
}

/// "memory it needs:   44.021 GiB of the 79.439 GiB ...": the memory the run cannot give back
/// (RunSummary::nvidia_smi_needed_bytes), when a failed cudaMalloc's retry would release at least 1 MiB of the
/// nvidia-smi peak and the run fits on the GPU; nothing otherwise.
void needed_line(std::string& out, const RunSummary& s, const std::string& head) {
  const double given_back = s.nvidia_smi_bytes - nvidia_smi_needed(s);
  if (s.oom || !(given_back >= kMiB))
    return;
  out += fmt::format(
      "{}{:.3f} GiB of the {:.3f} GiB: the other {:.3f} GiB are blocks held for other streams and cached segments "
      "that a failed cudaMalloc's retry gives back (a cache flush: it waits for the other streams, then releases "
      "them); --headroom gates compare this figure (summary.json nvidia_smi_needed_bytes)\n",
      head, nvidia_smi_needed(s) / kGiB, s.nvidia_smi_bytes / kGiB, given_back / kGiB);
}

/// "nvidia-smi range:  20.123 to 27.456 GiB ...": the floor no run-ahead goes below (summary.json
/// nvidia_smi_low_bytes, MemoryBounds) beside the estimate, when the reserved note calls the held and cached blocks
/// uncertain (RunSummary::reserved_note: they are then a quarter of the reserved peak or more); nothing otherwise.
void smi_range_line(std::string& out, const RunSummary& s, const std::string& head) {
  if (s.reserved_note.empty())
    return;
  const MemoryBounds b = memory_bounds(s);
  out += fmt::format(
      "{}{:.3f} to {:.3f} GiB: no run-ahead goes below the allocated peak + CUDA context and NCCL buffers "
      "(summary.json nvidia_smi_low_bytes); the {:.3f} GiB of held and cached blocks at the reserved peak are the "
      "uncertain part (reserved_not_live_bytes)\n",
      head, b.nvidia_smi_low / kGiB, s.nvidia_smi_bytes / kGiB, b.reserved_not_live / kGiB);
}

/// What the reserved peak (the number that decides an OOM) held: the allocated tensors by tag, largest first, and
/// the cached free blocks; nothing when no GPU allocation was made.
void reserved_peak_lines(std::string& out, const RunSummary& s, const std::string& indent = "    ") {
  const ReservedSplit split = reserved_split(s);
  if (s.peak_reserved_bytes <= 0 || s.peak_reserved_label.empty())
    return;
  std::string tags;
  int shown = 0;
  int rest = 0; // tags beyond the four largest, summed so the list adds up to the allocated figure
  double rest_bytes = 0;
  for (const auto& [tag, bytes] : top_tags(s.peak_reserved_by_tag)) {
    if (!(bytes > 0))
      continue;
    if (shown++ < 4) {
      tags += fmt::format("{}{} {:.2f}", tags.empty() ? "" : ", ", program::to_string(tag), bytes / kGiB);
    } else {
      ++rest;
      rest_bytes += bytes;
    }
  }
  if (rest > 0)
    tags += fmt::format(", {} more {:.2f}", rest, rest_bytes / kGiB);
  // Blocks held for other streams are shown when they reach 1 MiB (a result.json without the field has none);
  // below that they count as cached.
  const bool show_held = split.held >= kMiB;
  const std::string held_text = show_held ? fmt::format(
                                                " + {:.3f} GiB held for other streams (blocks of freed tensors "
                                                "that a stream's queued kernels still use: record_stream)",
                                                split.held / kGiB)
                                          : std::string();
  out += fmt::format(
      "{}at the reserved peak ({}, at '{}'): {:.3f} GiB allocated ({}){} + {:.3f} GiB cached "
      "free blocks and fragmentation\n",
      indent, s.peak_reserved_step >= 0 ? fmt::format("step {}", s.peak_reserved_step) : std::string("initialisation"),
      s.peak_reserved_label, split.allocated / kGiB, tags, held_text,
      (split.cached + (show_held ? 0.0 : split.held)) / kGiB);
  if (!s.reserved_note.empty())
    out += fmt::format("{}note: {}\n", indent, s.reserved_note);
}

/// "model states:      2Ψ + 14Ψ/N_d = 25.27 GB (23.534 GiB) as the ZeRO paper counts them (...)": the paper's
/// figure (RunSummary::paper_model_state_bytes) for the reader to set against the simulated peak; nothing when it
/// does not apply.
void paper_model_states_line(std::string& out, const RunSummary& s, const char* head) {
  if (!(s.paper_model_state_bytes > 0))
    return;
  // 16Ψ/N_d at a huge N_d keeps its digits (not "0.00 GB"): size_in_units.
  const std::string size = size_in_units(s.paper_model_state_bytes);
  out += fmt::format(
      "{}{} = {} as the ZeRO paper counts them (§5.1, K = 12; stage {}, N_d = "
      "{}), to set against the simulated peak\n",
      head, paper_model_states_formula(s.zero_stage), size, s.zero_stage, s.world_size);
  if (const std::string note = bf16_optimizer_states_text(s); !note.empty())
    out += fmt::format("{:{}}but {}\n", "", std::string_view(head).size(), note);
}

/// "comm per step:     step 2, per rank: all-reduce 13.48 GB (wire 23.59 GB, 14 calls), ...; wire 35.38 GB =
/// 2.62Ψ elements of 2 B, ZeRO paper §7: ...": rank 0's collectives in one step (RunSummary::step_traffic), payload
/// and wire bytes by kind in GB (1e9 B), against the paper's volume; nothing when no step completed.
void step_traffic_line(std::string& out, const RunSummary& s, const char* head) {
  if (s.step_traffic_step < 0)
    return;
  const trace::Traffic& t = s.step_traffic;
  std::string kinds; // "all-reduce 13.48 GB (wire 23.59 GB, 14 calls), ..."
  std::string calls; // at N_d = 1: "all-reduce 4 calls on 3.12 GB, ..."
  double wire = 0;
  for (const program::CollectiveKind k : kReportCollectiveOrder) {
    const auto i = static_cast<std::size_t>(k);
    if (!(t.collective_calls[i] > 0))
      continue;
    std::string name = program::to_string(k);
    std::replace(name.begin(), name.end(), '_', '-');
    const char* plural = t.collective_calls[i] == 1 ? "" : "s";
    kinds += fmt::format("{}{} {:.2f} GB (wire {:.2f} GB, {:.0f} call{})", kinds.empty() ? "" : ", ", name,
                         t.collective_bytes[i] / 1e9, t.wire_bytes[i] / 1e9, t.collective_calls[i], plural);
    calls += fmt::format("{}{} {:.0f} call{} on {:.2f} GB", calls.empty() ? "" : ", ", name, t.collective_calls[i],
                         plural, t.collective_bytes[i] / 1e9);
    wire += t.wire_bytes[i];
  }
  if (!kinds.empty() && s.world_size == 1) {
    // A world of one: every collective returns at once (NCCL copies in place, or does nothing), though DeepSpeed
    // still calls them. Say so rather than "all-reduce 3.12 GB (wire 0.00 GB)".
    out += fmt::format(
        "{}step {}{}, per rank: none: at N_d = 1 the collectives are no-ops (DeepSpeed still calls them, NCCL "
        "returns at once): {}; wire {:.2f} GB\n",
        head, s.step_traffic_step, s.step_traffic_steady ? "" : " (warm-up)", calls, wire / 1e9);
    return;
  }
  if (kinds.empty()) {
    out += fmt::format("{}step {}{}, per rank: no collectives\n", head, s.step_traffic_step,
                       s.step_traffic_steady ? "" : " (warm-up)");
    return;
  }
  out += fmt::format("{}step {}{}, per rank: {}; wire {:.2f} GB", head, s.step_traffic_step,
                     s.step_traffic_steady ? "" : " (warm-up)", kinds, wire / 1e9);
  if (s.params > 0)
    out += fmt::format(" = {:.2f}Ψ elements of {:g} B; ZeRO paper §7: {}", step_wire_in_psi(s), s.element_bytes,
                       paper_comm_volume_text(s));
  out += "\n";
}

void block(std::string& out, const VariantSummary& v) {
  const auto& s = v.summary;
  if (!v.label.empty())
    out += fmt::format("variant {}\n", v.label);
  if (s.params > 0)
    out += fmt::format("  parameters:        {}\n", params_text(s));
  paper_model_states_line(out, s, "  model states:      ");
  step_traffic_line(out, s, "  comm per step:     ");
  const bool timed = has_step_time(s);
  // With gradient accumulation a step is GA micro-steps: the step time and its breakdown say so.
  const std::string ga_step = optimizer_step_text(s.grad_accum);
  const std::string per_step = ga_step.empty() ? std::string() : " " + ga_step;
  if (s.steps_completed == 0) {
    out += "  step time:         n/a (no optimizer step completed)\n";
  } else if (!timed) { // stopped at its OOM: it does not train, whatever steps completed before
    out += fmt::format(
        "  step time:         n/a (the run stopped at its OOM after {} completed step{}; simulation.on_oom: "
        "continue simulates on as if memory were unlimited)\n",
        s.steps_completed, s.steps_completed == 1 ? "" : "s");
  } else {
    // Timed past an OOM (simulation.on_oom: continue, the run finished): marked as the compare table marks it ("!"),
    // on the line itself, since the OOM line comes much later.
    const std::string past_oom =
        s.oom ? "simulated past its OOM (simulation.on_oom: continue, as if memory were unlimited): the real run "
                "stops there; "
              : "";
    if (s.steady_state)
      out += fmt::format(
          "  step time:         {:.4f} s{}{} ({}steady state, mean of steps >= {}{}; warm-up step 0: {:.4f} s)\n",
          s.step_time_s, s.oom ? "!" : "", per_step, past_oom, s.steady_first_step,
          s.steady_first_step >= 2 ? "; step 1 runs without the throughput timer's sync" : "", s.warmup_step_s);
    else
      out += fmt::format("  step time:         {:.4f} s{}{} ({}warm-up step 0 only; no steady-state step completed)\n",
                         s.step_time_s, s.oom ? "!" : "", per_step, past_oom);
  }
  if (!timed) { // no usable step: no rate and no breakdown to show (not a row of zeros)
    out += fmt::format("  throughput:        n/a ({:.0f} tokens per optimizer step)\n", s.global_batch_tokens);
  } else {
    // Time to train, per billion tokens (a unit that fits fine-tuning and pre-training alike): 1e9 / tokens/s.
    const std::string billion = billion_tokens_text(s);
    out += fmt::format("  throughput:        {:.1f} tokens/s ({:.0f} tokens per optimizer step){}\n", s.tokens_per_s,
                       s.global_batch_tokens, billion.empty() ? std::string() : "; " + billion);
    out += fmt::format(
        "  TFLOPS/GPU:        {:.2f} TFLOPS (model FLOPs: 6 per matmul weight + 12 x layers x hidden x seq per "
        "token, PaLM's count, docs/compute.md); MFU {:.1f} % of {:.1f} TFLOPS peak; HFU {:.1f} % (+ recompute)\n",
        s.model_tflops_per_gpu, s.mfu * 100, s.peak_tflops_per_gpu, s.hfu * 100);
    if (const std::string note = mfu_count_note(s); !note.empty())
      out += "                     note: MFU " + note + "\n";
  }
  if (timed && s.gemm_utilization < 1) // no step (an OOM at initialisation ran no GEMM): no GEMM rate either
    out += fmt::format(
        "  GEMM shapes:       {:.1f} % of the large-GEMM rate (tile and wave quantization, operand reads; "
        "docs/compute.md)\n",
        s.gemm_utilization * 100);
  const auto& b = s.breakdown;
  if (timed)
    out += fmt::format(
        "  step breakdown:    {}GPU compute: forward {:.4f} s, backward {:.4f} s, optimizer {:.4f} s, other (bucket "
        "copies, casts, checks) {:.4f} s; compute stream waiting on: communication streams (collectives and their "
        "bucket copies) {:.4f} s, "
        "{}, CPU optimizer {:.4f} s, host thread (Python: op launches, DeepSpeed hooks) "
        "{:.4f} s, other {:.4f} s; collectives in flight {:.4f} s\n",
        ga_step.empty() ? std::string() : "(" + ga_step + ") ", b.forward_s, b.backward_s, b.optimizer_s,
        b.other_compute_s, b.exposed_comm_s, offload_wait_text(s), b.exposed_cpu_s, b.exposed_host_s, b.idle_other_s,
        b.comm_busy_s);
  offload_bytes_line(out, s, "  offload per step:  ");
  nvme_endurance_line(out, s, "  NVMe written:      ");
  host_step_line(out, s, "  CPU optimizer:     ");
  out += fmt::format("  peak allocated:    {:.3f} GiB on rank {}", s.peak_bytes / kGiB, s.peak_rank);
  if (s.peak_step >= 0)
    out += fmt::format(", step {}", s.peak_step);
  if (!s.peak_label.empty())
    out += fmt::format(", at '{}'", s.peak_label);
  if (peak_at_initialisation(s))
    out += " (initialisation, before step 0)";
  if (s.steady_peak_reached)
    out += fmt::format("; steady-state peak {:.3f} GiB\n", s.steady_peak_bytes / kGiB);
  else if (s.finished && s.steps_completed == 1) // nothing stopped: one step was asked for
    out += "; no steady-state peak (only the warm-up step 0 was simulated: simulation.steps is 1)\n";
  else
    out += "; no steady-state peak (the run stopped before step 1)\n";
  peak_lines(out, s, "    ");
  if (s.peak_reserved_bytes > 0 || s.non_pytorch_bytes > 0) {
    out += fmt::format(
        "  peak reserved:     {:.3f} GiB on rank {} (PyTorch caching allocator segments: allocated + blocks "
        "held for other streams + cached free blocks + fragmentation)\n",
        s.peak_reserved_bytes / kGiB, s.peak_reserved_rank);
    reserved_peak_lines(out, s);
    out += fmt::format("  nvidia-smi est.:   {:.3f} GiB = reserved + {:.3f} GiB CUDA context and NCCL buffers\n",
                       s.nvidia_smi_bytes / kGiB, s.non_pytorch_bytes / kGiB);
    needed_line(out, s, "  memory it needs:   ");
    smi_range_line(out, s, "  nvidia-smi range:  ");
  }
  retry_lines(out, s, "  ");
  host_lines(out, s);
  if (s.oom_on_host)
    out += fmt::format(
        "  fits:              no, host OOM (a node's host allocations exceed cluster.host_memory = "
        "{:.2f} GiB)\n",
        s.host_capacity_bytes / kGiB);
  else
    out += fmt::format("  fits in {}: {} (OOM when reserved + CUDA context + NCCL exceed it)\n",
                       memory_text(s.capacity_bytes), fits_text(s));
  out += fmt::format("  OOM:               {}\n", s.oom ? s.oom_description : std::string("none"));
  host_need_line(out, s, "  ");
  note_lines(out, s, "  ");
}

/// A step time for the verdict: 4 significant digits, "n/a" without a completed step.
std::string verdict_time(const RunSummary& s) {
  std::string t =
      s.steps_completed > 0 ? fmt::format("{:.4g} s/step", s.step_time_s) : std::string("no step completed");
  if (s.host_node_peak_bytes > 0) // offload: the answer also depends on the host's RAM
    t += fmt::format(", {:.1f} GiB host RAM per node{}", s.host_node_peak_bytes / kGiB,
                     s.host_capacity_bytes > 0 ? "" : "*");
  if (memory_bounds(s).marginal) // the fits line says why
    t += ", marginal";
  return t;
}

} // namespace

ScenarioHeadline scenario_headline(const scenario::Scenario& sc) {
  ScenarioHeadline l;
  l.model = sc.model.name;
  l.topology = sc.cluster.name.empty() ? sc.cluster.topology : sc.cluster.name;
  l.nodes = sc.cluster.nodes;
  l.gpus_per_node = sc.cluster.gpus_per_node;
  l.gpu = sc.cluster.gpu.name;
  l.gpu_memory_bytes = sc.cluster.gpu.memory.value();
  l.micro_batch = sc.training.micro_batch;
  l.seq_len = sc.training.seq_len;
  l.grad_accum = sc.training.grad_accum;
  l.precision = scenario::to_string(sc.training.precision);
  l.flash_attention = sc.training.flash_attention;
  l.deepspeed_version = sc.zero.deepspeed_version;
  l.compare_key = sc.compare_key;
  return l;
}

std::string scenario_headline_text(const ScenarioHeadline& l) {
  std::string h =
      fmt::format("model {} on {}{}{} node(s) x {} {} ({} each)", l.model, l.topology, l.topology.empty() ? "" : ": ",
                  l.nodes, l.gpus_per_node, l.gpu, memory_text(l.gpu_memory_bytes));
  // The precision in use: a V100 (no bf16) switches an unset training.precision to fp16, which changes memory
  // (fp16's loss scaler) and speed, so the header says which one ran.
  // The attention too: unset, it follows the GPU (FlashAttention from Ampere on, eager before), and it decides the
  // s x s activations.
  h += fmt::format(", micro-batch {} x {} tokens, GA {}, {}, {}", l.micro_batch, l.seq_len, l.grad_accum, l.precision,
                   l.flash_attention ? "FlashAttention" : "eager attention");
  // The release whose behaviour is simulated, in full: "0.14" is 0.14.0, on the far side of 0.14.1's changes.
  const auto& v = l.deepspeed_version;
  h += fmt::format(", DeepSpeed {}.{}.{}", v[0], v[1], v[2]);
  // A later release than the newest zerosim reads runs with that one's behaviour: say so, not only the number.
  if (const auto& n = scenario::ZeroConfig::kNewestModelledRelease; v > n)
    h += fmt::format(" (simulated as {}.{}.{}, the newest release zerosim models)", n[0], n[1], n[2]);
  // The scenario shown is the first variant's: say so when the comparison varies something this line names.
  const std::string& k = l.compare_key;
  if (!k.empty() && (k == "model" || k.rfind("model.", 0) == 0 || k == "cluster" || k.rfind("cluster.", 0) == 0 ||
                     k == "training" || k == "training.micro_batch" || k == "training.seq_len" ||
                     k == "training.grad_accum" || k == "training.precision" || k == "training.flash_attention"))
    h += fmt::format(" (first variant; {} varies by row)", k);
  return h;
}

std::string compare_verdict(const std::vector<VariantSummary>& variants) {
  if (variants.size() < 2)
    return {};
  std::vector<const VariantSummary*> fit;
  std::vector<const VariantSummary*> no_fit;
  // Step times within kVerdictTieTolerance of each other are ties (the simulation's float noise, ~1e-15, must not
  // rank variants that do the same work): the fastest is the first in the compare order among those tied with the
  // minimum.
  double min_time = 0;
  bool any_time = false;
  for (const auto& v : variants) {
    (v.summary.fits && !v.summary.oom ? fit : no_fit).push_back(&v);
    if (has_step_time(v.summary) && (!any_time || v.summary.step_time_s < min_time)) {
      min_time = v.summary.step_time_s;
      any_time = true;
    }
  }
  const auto tied = [](double a, double b) { return std::abs(a - b) <= kVerdictTieTolerance * std::max(a, b); };
  const VariantSummary* fastest = nullptr; // fastest with a completed step, fitting or not
  for (const auto& v : variants)
    if (fastest == nullptr && has_step_time(v.summary) && tied(v.summary.step_time_s, min_time))
      fastest = &v;
  // Fastest first; variants without a completed step last; ties keep the compare order: sorted by time, then each
  // run of times tied with its first one back in the compare order (variants are in compare order in `variants`).
  std::stable_sort(fit.begin(), fit.end(), [](const VariantSummary* a, const VariantSummary* b) {
    const bool sa = a->summary.steps_completed > 0;
    const bool sb = b->summary.steps_completed > 0;
    if (sa != sb)
      return sa;
    return sa && a->summary.step_time_s < b->summary.step_time_s;
  });
  for (std::size_t i = 0; i < fit.size();) {
    std::size_t j = i + 1;
    if (fit[i]->summary.steps_completed > 0)
      while (j < fit.size() && fit[j]->summary.steps_completed > 0 &&
             tied(fit[j]->summary.step_time_s, fit[i]->summary.step_time_s))
        ++j;
    std::sort(fit.begin() + static_cast<std::ptrdiff_t>(i), fit.begin() + static_cast<std::ptrdiff_t>(j));
    i = j;
  }
  const bool same_capacity = std::all_of(variants.begin(), variants.end(), [&](const VariantSummary& v) {
    return v.summary.capacity_bytes == variants.front().summary.capacity_bytes;
  });
  const std::string where =
      same_capacity ? fmt::format("in {:.2f} GiB", variants.front().summary.capacity_bytes / kGiB) : "its GPU";
  std::string out = "verdict: ";
  if (fit.empty()) {
    out += fmt::format("no variant fits {}", where);
    // Those that fit the GPU but not the host's RAM are not a GPU-size answer: name them.
    std::string host;
    for (const VariantSummary* v : no_fit)
      if (v->summary.oom_on_host)
        host += (host.empty() ? "" : ", ") + v->label;
    if (!host.empty())
      out += " (out of host memory: " + host + ")";
  } else {
    out += fmt::format("fits {}: ", where);
    for (std::size_t i = 0; i < fit.size(); ++i)
      out += fmt::format("{}{} ({})", i == 0 ? "" : ", ", fit[i]->label, verdict_time(fit[i]->summary));
    if (std::any_of(fit.begin(), fit.end(), [](const VariantSummary* v) {
          return v->summary.host_node_peak_bytes > 0 && !(v->summary.host_capacity_bytes > 0);
        }))
      out += "\n         * host RAM not checked: cluster.host_memory is unset (unlimited)";
  }
  if (!no_fit.empty() && !fit.empty()) {
    out += "\n         does not fit: ";
    for (std::size_t i = 0; i < no_fit.size(); ++i)
      out += (i == 0 ? "" : ", ") + no_fit[i]->label + (no_fit[i]->summary.oom_on_host ? " (host memory)" : "");
  }
  if (!fit.empty() && fastest != nullptr && fastest != fit.front() &&
      !tied(fastest->summary.step_time_s, fit.front()->summary.step_time_s) &&
      !(fastest->summary.fits && !fastest->summary.oom) && fit.front()->summary.steps_completed > 0 &&
      fastest->summary.step_time_s > 0)
    out += fmt::format("\n         {} takes {:.2f}x the step time of {} ({}), which would need more {} memory",
                       fit.front()->label, fit.front()->summary.step_time_s / fastest->summary.step_time_s,
                       fastest->label, verdict_time(fastest->summary), fastest->summary.oom_on_host ? "host" : "GPU");
  return out;
}

bool simulated_past_gpu_oom(const RunSummary& s) {
  return s.oom && s.finished && !s.oom_on_host && s.nvidia_smi_bytes > s.capacity_bytes;
}

std::string memory_text(double bytes) {
  if (bytes >= 0.01 * kGiB)
    return fmt::format("{:.2f} GiB", bytes / kGiB);
  return fmt::format("{:.1f} MiB", bytes / kMiB);
}

std::string human_duration(double seconds) {
  if (seconds >= 86400 * 2)
    return fmt::format("{:.1f} d", seconds / 86400);
  if (seconds >= 3600 * 2)
    return fmt::format("{:.1f} h", seconds / 3600);
  if (seconds >= 120)
    return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.1f} s", seconds);
}

std::string gpu_hours_text(double hours) {
  const int digits = hours >= 1000 ? 0 : hours >= 100 ? 1 : hours >= 10 ? 2 : 3;
  return fmt::format("{:.{}f}", hours, digits);
}

std::string size_in_units(double bytes) {
  return bytes >= 0.1e9   ? fmt::format("{:.2f} GB ({:.3f} GiB)", bytes / 1e9, bytes / kGiB)
         : bytes >= 0.1e6 ? fmt::format("{:.2f} MB ({:.3f} MiB)", bytes / 1e6, bytes / kMiB)
                          : fmt::format("{:.2f} kB ({:.3f} KiB)", bytes / 1e3, bytes / 1024.0);
}

const char* paper_model_states_formula(int stage) {
  static constexpr const char* kFormula[] = {"16Ψ", "4Ψ + 12Ψ/N_d", "2Ψ + 14Ψ/N_d", "16Ψ/N_d"};
  return kFormula[std::clamp(stage, 0, 3)];
}

std::string bf16_optimizer_states_text(const RunSummary& s) {
  if (!s.bf16_optimizer || !(s.paper_model_state_bytes > 0) || !(s.params > 0))
    return {};
  const double n = std::max(s.world_size, 1);
  const double bytes = (2 + 4) * s.params + 12 * s.params / n;
  return fmt::format(
      "DeepSpeed runs BF16_Optimizer here (bf16 with fp32 gradient accumulation), which partitions the fp32 master "
      "and Adam states over N_d: 2Ψ bf16 params + 4Ψ fp32 gradient buffer + 12Ψ/N_d = {:.2f} GB ({:.3f} GiB), and 2Ψ "
      "of bf16 gradients from backward to the optimizer step",
      bytes / 1e9, bytes / kGiB);
}

double step_wire_in_psi(const RunSummary& s) {
  if (!(s.params > 0))
    return 0;
  double wire = 0;
  for (double w : s.step_traffic.wire_bytes)
    wire += w;
  return wire / (s.element_bytes * s.params);
}

std::string paper_comm_volume_text(const RunSummary& s) {
  const int n = std::max(s.world_size, 1);
  // Ψ elements sent per rank: 2Ψ (reduce-scatter + all-gather) at stages 0-2, 3Ψ at stage 3 (§7.2, §7.3).
  const auto volume = [n](int psi) {
    return fmt::format("{}Ψ x {}/{} = {:.2f}Ψ", psi, n - 1, n, psi * static_cast<double>(n - 1) / n);
  };
  std::string t = volume(s.zero_stage >= 3 ? 3 : 2);
  // Stage 3 sends its volume in every micro-step (below): compare one micro-step's share with the paper.
  const double per_micro_step =
      step_wire_in_psi(s) / (s.zero_stage >= 3 ? std::max(static_cast<double>(s.grad_accum), 1.0) : 1.0);
  // Stage 3 gathers a parameter again in backward unless it is still held (stage3_max_live_parameters,
  // stage3_max_reuse_distance; zero_semantics §3.5): a small model, all held, moves 2Ψ.
  if (s.zero_stage >= 3 && per_micro_step < 0.99 * 3.0 * (n - 1) / n)
    t += " (less: parameters still held from forward are not gathered again in backward)";
  // Stage 3 pads every parameter tensor to a multiple of N_d elements so that it splits into N_d equal partitions
  // (partition_parameters.py), and gathers and reduce-scatters the padded tensors: at a large N_d every small tensor
  // (a bias, a norm weight) travels as N_d elements, which can outweigh the parameters themselves.
  if (s.zero_stage >= 3 && per_micro_step > 1.01 * 3.0 * (n - 1) / n && s.params > 0 &&
      s.stage3_padding_params >= 0.005 * s.params)
    t += fmt::format(
        " (more: stage 3 pads each of the {} parameter tensors to a multiple of N_d = {} elements "
        "before it gathers or reduce-scatters it, {:.2f}Ψ of padding in all)",
        s.param_tensors, n, s.stage3_padding_params / s.params);
  const bool all_reduce =
      s.step_traffic.collective_calls[static_cast<std::size_t>(program::CollectiveKind::ALL_REDUCE)] > 0;
  const bool all_gather =
      s.step_traffic.collective_calls[static_cast<std::size_t>(program::CollectiveKind::ALL_GATHER)] > 0;
  if ((s.zero_stage == 1 || s.zero_stage == 2) && all_reduce)
    t += fmt::format(" (DeepSpeed's {}gradient all-reduce + parameter all-gather: {})",
                     s.bf16_optimizer ? "BF16_Optimizer: " : "", volume(3));
  // Stage 0 with BF16_Optimizer (bf16 before DeepSpeed 0.17.6): it partitions the fp32 master and Adam states like
  // stage 1, so after the gradient all-reduce it all-gathers the updated bf16 params (bf16_optimizer.py).
  else if (s.zero_stage == 0 && s.bf16_optimizer && all_reduce && all_gather)
    t += fmt::format(
        " (DeepSpeed's BF16_Optimizer, stage 1 in all but name: gradient all-reduce + parameter "
        "all-gather: {})",
        volume(3));
  // The paper's volume is one gradient reduction; with gradient accumulation stage 2 reduces the gradients in every
  // micro-step and stage 3 also gathers the parameters in every micro-step (stage_1_and_2.py and stage3.py reduce
  // per backward; stages 0 and 1 reduce once, at the accumulation boundary), so the step moves about GA times more.
  if (s.grad_accum > 1 && s.zero_stage >= 2)
    t += fmt::format(", x GA={} {}: stage {} {} in each of the {} micro-steps", s.grad_accum,
                     s.zero_stage >= 3 ? "gathers and reductions" : "reductions", s.zero_stage,
                     s.zero_stage >= 3 ? "gathers the parameters and reduce-scatters the gradients"
                                       : "reduces the gradients",
                     s.grad_accum);
  return t;
}

std::string unfinished_run_note(const RunSummary& s) {
  return !s.finished && !s.oom
             ? fmt::format("the run did not finish ({} optimizer step(s) completed)", s.steps_completed)
             : std::string();
}

namespace {
/// The one user's nvidia-smi readings above the simulated peak (docs/validation.md "What to expect", gap 2), as both
/// notes below quote them.
constexpr const char* kSmiWho = "one user's nvidia-smi with DeepSpeed 0.9";
constexpr const char* kSmiAbove = "13-28 % above the simulated peak";
} // namespace

const char* best_case_note() {
  static const std::string note = std::string(
                                      "step times are the simulated best case: the measured runs of "
                                      "docs/validation.md took ") +
                                  measured_step_margin_text() +
                                  " (their GPU part; the claimed CPU-offload steps on 1-2 GPUs agreed within 16 %, "
                                  "one user's 8-GPU offload runs, not a claim, took about 1.5x on top); measured "
                                  "ZeRO-2 and -3 steps were also slower relative to ZeRO-1 than simulated, and " +
                                  kSmiWho + " " + kSmiAbove + " (known gaps), so budget with a margin";
  return note.c_str();
}

const char* memory_margin_note() {
  static const std::string note = std::string("memory: ") + kSmiWho + " read " + kSmiAbove +
                                  " (a known gap of docs/validation.md), so budget memory with a margin";
  return note.c_str();
}

std::string mfu_count_note(const RunSummary& s) {
  if (!has_step_time(s) || !(s.mfu > 0) || !(s.executed_flops_ratio <= 0.95))
    return {};
  return fmt::format(
      "counts attention as the full s x s product (PaLM's convention, docs/compute.md), here {:.1f} % of the "
      "model FLOPs; the causal FlashAttention kernels execute about half of it, so the GPU runs {:.1f} % of the "
      "counted FLOPs: an executed rate of {:.2f} TFLOPS, {:.1f} % of peak",
      s.attention_flops_share * 100, s.executed_flops_ratio * 100, s.model_tflops_per_gpu * s.executed_flops_ratio,
      s.mfu * s.executed_flops_ratio * 100);
}

std::string large_trace_note(const std::string& path, double bytes, const scenario::OutputSpec& outputs) {
  std::vector<std::string> keys;
  if (outputs.trace_steps != 1)
    keys.emplace_back("outputs.trace_steps: 1 (step 0 only)");
  if (outputs.trace_ranks > 1)
    keys.emplace_back("outputs.trace_ranks: 1");
  keys.emplace_back("outputs.trace_json: false");
  std::string shrink;
  for (std::size_t i = 0; i < keys.size(); ++i)
    shrink += (i == 0 ? "" : i + 1 == keys.size() ? " or " : ", ") + keys[i];
  return fmt::format(
      "note: {} is {:.0f} MB: ui.perfetto.dev opens it (slowly), chrome://tracing does not; {} "
      "make it smaller",
      path, bytes / 1e6, shrink);
}

std::string console_report(const scenario::Scenario& sc, const std::vector<VariantSummary>& variants) {
  bool any_step = false;
  bool all_bound = true; // every variant with a step time is collective-bound
  bool any_nvme = false; // some variant swapped to NVMe
  for (const auto& v : variants) {
    any_step = any_step || has_step_time(v.summary);
    all_bound = all_bound && (!has_step_time(v.summary) || v.summary.collective_bound);
    any_nvme = any_nvme || v.summary.step_traffic.nvme_bytes[0] + v.summary.step_traffic.nvme_bytes[1] > 0 ||
               v.summary.breakdown.exposed_offload_nvme_s > 0;
  }
  std::string out = header(sc, any_nvme);
  // The measured band's note, unless every step is collective-bound: their note below replaces it (the band would
  // understate the uncertainty of such a step), and only its memory part is kept.
  std::string caveat = any_step && !all_bound ? fmt::format("note: {}\n", best_case_note()) : std::string();
  // A GPU outside the bands (GeForce, workstation cards): the note above quotes other GPUs' runs, so say so.
  if (const std::string gpu = sc.cluster.gpu.preset.empty() ? sc.cluster.gpu.name : sc.cluster.gpu.preset;
      any_step && !gpu.empty())
    if (const std::string note = unvalidated_gpu_note(gpu); !note.empty())
      caveat += fmt::format("note: {}\n", note);
  // Collective-bound variants (RunSummary::collective_bound): the band above does not cover them (gaps 16-18, 20). ZeRO-3
  // across nodes: its validation record is wider than the band above (gap 17).
  for (const auto& v : variants)
    for (const std::string& c : v.summary.caveats)
      if ((v.summary.collective_bound && c.rfind(kCollectiveBoundNoteStart, 0) == 0) ||
          c.rfind(kMultinodeZero3NoteStart, 0) == 0)
        caveat += variants.size() == 1 ? fmt::format("note: {}\n", c) : fmt::format("note: {}: {}\n", v.label, c);
  if (any_step && all_bound)
    caveat += fmt::format("note: {}\n", memory_margin_note());
  if (variants.size() == 1) {
    block(out, variants.front());
    return out + caveat;
  }
  if (variants.empty())
    return out + "no variant completed\n";

  std::size_t w = std::string("variant").size();
  for (const auto& v : variants)
    w = std::max(w, v.label.size());
  // The numeric columns, as text: each column is as wide as its widest cell or its header (a micro-batch of 100000
  // or a 1 bps NIC gives numbers far wider than usual, which must not push the columns out of line).
  // The node's host memory peak is a column when a variant offloads: for offload choices it decides the fit as often
  // as the GPU does (a host OOM names only the capacity it exceeded).
  const bool host_column = std::any_of(variants.begin(), variants.end(),
                                       [](const VariantSummary& v) { return v.summary.host_node_peak_bytes > 0; });
  // The time and GPU-hours to train 1e9 tokens follow tokens/s (time_per_billion_tokens_s), as a single run's
  // throughput line gives them.
  using Cells = std::array<std::string, 11>;
  const Cells
      head{"step time s",  "tokens/s",       "TFLOPS/GPU",        "MFU %", "1B tokens in", "GPU-h per 1B", "peak GiB",
           "reserved GiB", "nvidia-smi GiB", "host GiB per node", ""};
  std::vector<Cells> cells;
  bool any_warmup_only = false;
  bool any_past_oom = false;
  bool any_init_peak = false;
  bool any_bound = false; // a collective-bound variant: its step time is marked "+", its note is at the end
  for (const auto& v : variants) {
    const auto& s = v.summary;
    // A run stopped after the warm-up step has only step 0's time (lazy Adam state, stage-3 trace): marked. So is
    // a time measured past an OOM (simulation.on_oom: continue, the run finished), which the real run never
    // reaches. A variant stopped at its OOM (on_oom: stop) does not train, whatever steps it completed before: its
    // step time and rates are n/a (has_step_time), as README says and as sweep.csv leaves them.
    const bool rated = has_step_time(s); // no step: no rate either (n/a, not 0)
    const bool past_oom = s.oom && rated;
    const bool init_peak = peak_at_initialisation(s); // marked "^", its steady-state peak under the table
    any_init_peak = any_init_peak || init_peak;
    const std::string step = !rated ? std::string("n/a")
                                    : fmt::format("{:.4f}{}{}{}", s.step_time_s, s.steady_state ? "" : "*",
                                                  past_oom ? "!" : "", s.collective_bound ? "+" : "");
    any_bound = any_bound || (rated && s.collective_bound);
    any_warmup_only = any_warmup_only || (rated && !s.steady_state);
    any_past_oom = any_past_oom || past_oom;
    // A host OOM names the host memory it exceeded: "in <GPU capacity>" beside it would read as the limit.
    cells.push_back(
        Cells{step, rated ? fmt::format("{:.1f}", s.tokens_per_s) : "n/a",
              rated ? fmt::format("{:.2f}", s.model_tflops_per_gpu) : "n/a",
              rated ? fmt::format("{:.1f}", s.mfu * 100) : "n/a",
              time_per_billion_tokens_s(s) > 0 ? human_duration(time_per_billion_tokens_s(s)) : "n/a",
              time_per_billion_tokens_s(s) > 0 ? gpu_hours_text(gpu_time_per_billion_tokens_s(s) / 3600.0) : "n/a",
              fmt::format("{:.3f}{}", s.peak_bytes / kGiB, init_peak ? "^" : ""),
              fmt::format("{:.3f}", s.peak_reserved_bytes / kGiB), fmt::format("{:.3f}", s.nvidia_smi_bytes / kGiB),
              host_gib_cell(s.host_node_peak_bytes, host_need_lower_bound(s), "-"),
              fits_text(s, true) + (s.oom_on_host ? std::string() : " in " + memory_text(s.capacity_bytes))});
  }
  std::array<std::size_t, 10> cw{11, 12, 10, 6, 12, 12, 9, 12, 14, 0}; // at least the widths of ordinary runs
  for (std::size_t c = 0; c < cw.size(); ++c) {
    if (c == 9 && !host_column)
      continue; // width 0: no column

    cw[c] = std::max(cw[c], head[c].size());
    for (const Cells& r : cells)
      cw[c] = std::max(cw[c], r[c].size());
  }
  const auto table_line = [&](const std::string& label, const Cells& r, const std::string& last) {
    std::string line = fmt::format("{:<{}}", label, w);
    for (std::size_t c = 0; c < cw.size(); ++c)
      if (cw[c] > 0)
        line += fmt::format("  {:>{}}", r[c], cw[c]);
    return line + "  " + last + "\n";
  };
  out += table_line("variant", head, "fits (reserved + context + NCCL decides OOM)");
  for (std::size_t i = 0; i < variants.size(); ++i)
    out += table_line(variants[i].label, cells[i], cells[i][10]);
  {
    // With gradient accumulation a step is GA micro-steps: say how many, per variant when they differ.
    std::vector<std::int64_t> gas;
    for (const auto& v : variants)
      gas.push_back(v.summary.grad_accum);
    const std::string ga_step = optimizer_step_text(gas);
    if (!ga_step.empty() && ga_step == optimizer_step_text(gas.front())) {
      out += "step time s: " + ga_step + "\n";
    } else if (!ga_step.empty() && !std::all_of(variants.begin(), variants.end(), [](const VariantSummary& v) {
                 return v.label.find("grad_accum=") != std::string::npos;
               })) {
      std::string each;
      for (const auto& v : variants)
        each += fmt::format("{}{} GA={}", each.empty() ? "" : ", ", v.label, v.summary.grad_accum);
      out += "step time s: " + ga_step + ", of GA micro-steps: " + each + "\n";
    } else if (!ga_step.empty()) {
      out += "step time s: " + ga_step + ", of training.grad_accum micro-steps\n";
    }
  }
  if (any_warmup_only)
    out += "* warm-up step 0 only: the run stopped before a steady-state step (tokens/s, TFLOPS and MFU from it)\n";
  if (any_init_peak) {
    // The peak column is the whole run's (as max_memory_allocated reports it); when that was an initialisation
    // transient, what training holds is the steady-state peak: named per variant.
    std::string steady;
    for (const auto& v : variants)
      if (peak_at_initialisation(v.summary))
        steady +=
            fmt::format("{}{} {}", steady.empty() ? "" : ", ", v.label,
                        v.summary.steady_peak_reached ? fmt::format("{:.3f} GiB", v.summary.steady_peak_bytes / kGiB)
                                                      : std::string("none (no step >= 1 began)"));
    out +=
        "^ peak GiB reached at initialisation, before step 0 (e.g. the flatten copy of the lp params); "
        "steady-state peak (steps >= 1): " +
        steady + "\n";
  }
  if (any_past_oom)
    out +=
        "! simulated past its OOM (simulation.on_oom: continue) as if memory were unlimited: the real run stops "
        "there\n";
  if (any_bound)
    out +=
        "+ collective-bound (summary.json collective_bound): its step time is a lower bound, see its note at the "
        "end\n";
  if (std::any_of(variants.begin(), variants.end(), [](const VariantSummary& v) { return has_step_time(v.summary); })) {
    // Which steps the step time averages (first_steady_step), as a single run's block and report.html say it.
    std::set<int> firsts;
    std::string each;
    for (const auto& v : variants)
      if (has_step_time(v.summary)) {
        firsts.insert(v.summary.steady_first_step);
        each += fmt::format("{}>= {} ({})", each.empty() ? "" : ", ", v.summary.steady_first_step, v.label);
      }
    const int first = *firsts.begin();
    out += "step time s: mean of steps " + (firsts.size() == 1 ? ">= " + std::to_string(first) : each) +
           " (step 0 is warm-up" +
           (firsts.size() == 1 && first >= 2 ? "; step 1 runs without the throughput timer's sync" : "") + ")\n";
  }
  out += compare_verdict(variants) + "\n";
  for (const auto& v : variants) {
    const auto& s = v.summary;
    out += fmt::format("\n{}: step time and peak memory by tag (GiB = 2^30 B): {:.3f} GiB allocated on rank {}{}\n",
                       v.label, s.peak_bytes / kGiB, s.peak_rank,
                       !peak_at_initialisation(s) ? std::string()
                       : s.steady_peak_reached
                           ? fmt::format(" at initialisation (before step 0); steady-state peak {:.3f} GiB",
                                         s.steady_peak_bytes / kGiB)
                           : std::string(" at initialisation (before step 0)"));
    if (s.params > 0)
      out += fmt::format("  parameters: {}\n", params_text(s));
    paper_model_states_line(out, s, "  model states: ");
    step_traffic_line(out, s, "  comm per step: ");
    const auto& b = s.breakdown;
    if (has_step_time(s))
      out += fmt::format(
          "  step{}: GPU compute {:.4f} s (forward {:.4f}, backward {:.4f}, optimizer {:.4f}, other kernels {:.4f}); "
          "waiting on communication streams {:.4f} s, {}, CPU optimizer {:.4f} s, "
          "host thread {:.4f} s, other {:.4f} s\n",
          s.grad_accum > 1 ? " (" + optimizer_step_text(s.grad_accum) + ")" : std::string(), b.compute_busy_s,
          b.forward_s, b.backward_s, b.optimizer_s, b.other_compute_s, b.exposed_comm_s, offload_wait_text(s),
          b.exposed_cpu_s, b.exposed_host_s, b.idle_other_s);
    if (const std::string billion = billion_tokens_text(s); !billion.empty())
      out += fmt::format("  throughput: {:.1f} tokens/s; {}\n", s.tokens_per_s, billion);
    offload_bytes_line(out, s, "  offload per step: ");
    nvme_endurance_line(out, s, "  NVMe written: ");
    if (const std::string note = mfu_count_note(s); !note.empty())
      out += "  MFU: " + note + "\n";
    host_step_line(out, s, "  CPU optimizer: ");
    if (has_step_time(s) && s.gemm_utilization < 1)
      out +=
          fmt::format("  GEMM shapes: {:.1f} % of the large-GEMM rate (docs/compute.md)\n", s.gemm_utilization * 100);
    peak_lines(out, s, "  ");
    reserved_peak_lines(out, s, "  ");
    smi_range_line(out, s, "  nvidia-smi range: ");
    retry_lines(out, s, "  ");
    host_lines(out, s);
    if (s.oom)
      out += fmt::format("  OOM: {}\n", s.oom_description);
    host_need_line(out, s, "  ");
    note_lines(out, s, "  ");
  }
  return out + caveat;
}

} // namespace zerosim::analysis
