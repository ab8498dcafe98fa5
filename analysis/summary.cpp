#include "analysis/summary.hpp"

#include "analysis/console.hpp"
#include "analysis/measured_band.hpp"

#include "sim/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace zerosim::analysis {

namespace {

double sum_tags(const trace::TagBytes& t) {
  double s = 0;
  for (double v : t)
    s += v;
  return s;
}

const char* device_name(program::Device d) { return d == program::Device::GPU ? "GPU" : "host"; }

} // namespace

std::string optimizer_step_text(std::int64_t grad_accum) {
  return grad_accum > 1 ? fmt::format("per optimizer step, GA={} micro-steps", grad_accum) : std::string();
}

std::string optimizer_step_text(const std::vector<std::int64_t>& grad_accums) {
  if (std::none_of(grad_accums.begin(), grad_accums.end(), [](std::int64_t g) { return g > 1; }))
    return {};
  if (std::all_of(grad_accums.begin(), grad_accums.end(), [&](std::int64_t g) { return g == grad_accums.front(); }))
    return optimizer_step_text(grad_accums.front());
  return "per optimizer step";
}

std::string label_of(const std::vector<std::string>& labels, program::LabelId id) {
  return id < labels.size() ? labels[id] : std::string();
}

int first_steady_step(bool throughput_timer_sync, const std::vector<trace::StepTiming>& steps) {
  constexpr int start = scenario::ZeroConfig::kThroughputTimerStartStep;
  if (throughput_timer_sync && std::any_of(steps.begin(), steps.end(), [](const auto& st) { return st.step >= start; }))
    return start;
  return 1;
}

HostStep host_step_of(const trace::RunResult& run, int first_step) {
  HostStep h;
  std::vector<std::pair<double, double>> windows; // [start, end) of the steps the summary averages
  for (const auto& st : run.steps)
    if (st.step >= first_step)
      windows.emplace_back(st.start, st.end);
  if (windows.empty() && !run.steps.empty())
    windows.emplace_back(run.steps.front().start, run.steps.front().end);
  if (windows.empty())
    return h;
  const auto starts_with = [](const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; };
  for (const auto& sp : run.spans) {
    if (sp.rank != 0 || sp.stream >= run.stream_kinds.size() || run.stream_kinds[sp.stream] != program::StreamKind::CPU)
      continue;
    double busy = 0;
    for (const auto& [a, b] : windows)
      busy += std::max(0.0, std::min(sp.end, b) - std::max(sp.start, a));
    if (busy <= 0)
      continue;
    const std::string label = label_of(run.labels, sp.label);
    double& slot = starts_with(label, "cpu adam")           ? h.cpu_adam_s
                   : starts_with(label, "unscale and clip") ? h.unscale_s
                   : starts_with(label, "cast fp32 -> lp")  ? h.lp_cast_s
                                                            : h.other_s;
    slot += busy;
  }
  const double k = 1.0 / static_cast<double>(windows.size());
  h.cpu_adam_s *= k;
  h.unscale_s *= k;
  h.lp_cast_s *= k;
  h.other_s *= k;
  return h;
}

std::vector<std::pair<program::MemTag, double>> top_tags(const trace::TagBytes& by_tag, std::size_t n) {
  std::vector<std::pair<program::MemTag, double>> out;
  for (std::size_t i = 0; i < by_tag.size(); ++i)
    if (by_tag[i] > 0)
      out.emplace_back(static_cast<program::MemTag>(i), by_tag[i]);
  // stable_sort keeps enum order among equal sizes: deterministic output.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > n)
    out.resize(n);
  return out;
}

std::string describe_oom(const trace::OomInfo& oom, const std::vector<std::string>& labels) {
  const double live = sum_tags(oom.live_by_tag);
  std::string what = label_of(labels, oom.label);
  std::string s = fmt::format("rank {} out of {} memory at t={:.6f} s", oom.rank, device_name(oom.device), oom.time);
  if (oom.step >= 0)
    s += fmt::format(" (step {})", oom.step);
  else
    s += " (initialisation, before step 0)";
  s += ": ";
  if (!what.empty())
    s += fmt::format("'{}' ", what);
  s += fmt::format("needed {:.2f} GiB of {} with {:.2f} GiB of {} allocated", oom.requested / kGiB,
                   program::to_string(oom.tag), live / kGiB, memory_text(oom.capacity));
  const auto top = top_tags(oom.live_by_tag, 3);
  if (!top.empty()) {
    s += " (largest:";
    for (std::size_t i = 0; i < top.size(); ++i)
      s += fmt::format("{} {} {:.2f} GiB", i == 0 ? "" : ",", program::to_string(top[i].first), top[i].second / kGiB);
    s += ")";
  }
  if (oom.device == program::Device::GPU && (oom.reserved > 0 || oom.non_pytorch > 0 || oom.needed > 0)) {
    // The caching allocator decides: cudaMalloc of a new segment fails (reference/zero_semantics.md §6); with
    // expandable segments, mapping more pages fails (caching_allocator.hpp).
    s += oom.expandable ? fmt::format("; mapping {:.2f} GiB more pages fails", oom.needed / kGiB)
                        : fmt::format("; cudaMalloc of a new {:.2f} GiB segment fails", oom.needed / kGiB);
    s += fmt::format(": {:.2f} GiB {} + {:.2f} GiB CUDA context and NCCL + {:.2f} GiB > {}{}", oom.reserved / kGiB,
                     oom.expandable ? "mapped" : "reserved", oom.non_pytorch / kGiB, oom.needed / kGiB,
                     memory_text(oom.capacity),
                     !oom.cache_released ? ""
                     : oom.expandable    ? " after unmapping the free pages"
                                         : " after releasing the cached free segments");
  } else if (oom.device == program::Device::HOST && oom.node >= 0) {
    s += fmt::format("; host memory is per node: node {} holds the allocations of all its ranks", oom.node);
  }
  s += "; GiB = 2^30 B";
  return s;
}

Elements suggested_sub_group_size(Elements largest) {
  if (largest < 10)
    return 0;
  Elements p = 1;
  while (p <= largest / 10) // p = 10^floor(log10(largest))
    p *= 10;
  return p / 10;
}

void note_optimizer_swap_buffers(RunSummary& s, const scenario::Scenario& sc, const OptimizerSwapBuffers& b) {
  if (sc.zero.stage != 3 || sc.zero.offload_optimizer != scenario::OffloadDevice::NVME || b.count < 1 ||
      b.largest_sub_group <= 0)
    return;
  // PartitionedOptimizerSwapper: SwapBufferManager(num_elems = largest sub-group, count = buffer_count, fp32),
  // pinned; initialize_optimizer_states: one fp32 gradient buffer of the largest sub-group (sim/zero/offload_nvme).
  constexpr double kFp32 = 4.0;
  const double swap = static_cast<double>(b.count) * static_cast<double>(b.largest_sub_group) * kFp32;
  const double grad = static_cast<double>(b.largest_sub_group) * kFp32;
  // Only where the buffers matter: a quarter of the rank's host peak or more (at a host OOM too: one caused by another
  // buffer, say stage 3's grad_partitions_flat_buffer, gets no sub_group_size advice, which would not cure it).
  if (!(s.host_peak_bytes > 0 && swap >= 0.25 * s.host_peak_bytes))
    return;
  std::string n = fmt::format(
      "{}: offload_optimizer=nvme keeps offload_optimizer.buffer_count = {} pinned swap buffers, each the "
      "largest optimizer sub-group ({} fp32 elements at zero.sub_group_size = {}): {} x {} x 4 B = {:.2f} GB per "
      "rank",
      s.oom_on_host ? "host OOM" : "host memory", b.count, b.largest_sub_group, format_elements(sc.zero.sub_group_size),
      b.count, b.largest_sub_group, swap / 1e9);
  if (sc.cluster.gpus_per_node > 1)
    n += fmt::format(" ({:.2f} GB for the node's {} ranks)", swap * sc.cluster.gpus_per_node / 1e9,
                     sc.cluster.gpus_per_node);
  n += fmt::format(", plus a {:.2f} GB fp32 gradient buffer of that sub-group", grad / 1e9);
  // zero.sub_group_size 0 already makes one sub-group per parameter: nothing smaller to suggest.
  if (sc.zero.sub_group_size > 0)
    n += "; a smaller zero.sub_group_size cuts both";
  if (b.smaller_sub_group_size > 0 && b.smaller_largest_sub_group > 0 &&
      b.smaller_largest_sub_group < b.largest_sub_group)
    n += fmt::format(" (--set zero.sub_group_size={}: largest sub-group {} elements, swap buffers {:.2f} GB per rank)",
                     format_elements(b.smaller_sub_group_size), b.smaller_largest_sub_group,
                     static_cast<double>(b.count) * static_cast<double>(b.smaller_largest_sub_group) * kFp32 / 1e9);
  n += "; GB = 1e9 B";
  s.diagnostics.push_back(std::move(n));
}

void note_unmodelled_ds_fields(RunSummary& r, const scenario::Scenario& sc) {
  const auto& fields = sc.zero.unmodelled_ds_fields;
  if (fields.empty())
    return;
  // What each does in DeepSpeed, so the reader knows which way the simulated numbers are off. ZeRO++: Wang et al.
  // 2023, arXiv 2306.10209 (§3.1 qwZ, §3.2 hpZ, §3.3 qgZ); MiCS: Zhang et al. 2022, arXiv 2205.00119 (§3).
  const auto what = [](const std::string& name, const std::string& value) -> std::string {
    if (name == "zero_hpz_partition_size")
      return "ZeRO++ hpZ: a secondary copy of the parameter partitions per group of " + value +
             " GPUs (a node), so the backward's all-gathers stay inside it: more GPU memory, less inter-node "
             "all-gather traffic";
    if (name == "zero_quantized_weights")
      return "ZeRO++ qwZ: parameters all-gathered in int8: about half the all-gather traffic";
    if (name == "zero_quantized_nontrainable_weights")
      return "frozen parameters stored and gathered in int8: less memory and all-gather traffic";
    if (name == "zero_quantized_gradients")
      return "ZeRO++ qgZ: gradients reduce-scattered in int4 by all-to-all: less reduction traffic";
    if (name == "zeropp_loco_param")
      return "LoCo error feedback for qgZ";
    if (name == "mics_shard_size")
      return "MiCS: model states sharded within groups of " + value +
             " GPUs and replicated across groups: more memory per GPU, collectives inside a group";
    if (name == "mics_hierarchical_params_gather")
      return "MiCS's two-level parameter all-gather";
    return "not modelled";
  };
  std::string list;
  for (const auto& [name, value] : fields)
    list += fmt::format("{}{}: {} ({})", list.empty() ? "" : ", ", name, value, what(name, value));
  // engine.py _configure_zero_optimizer passes them to the stage-3 optimizer (DeepSpeedZeroOptimizer_Stage3, or
  // MiCS_Optimizer when mics_shard_size > 0) only.
  r.diagnostics.emplace_back(
      sc.zero.stage == 3
          ? fmt::format("not modelled: the ds_config sets {}; zerosim simulates plain ZeRO-3, so its step time, "
                        "traffic and memory are those without these features",
                        list)
          : fmt::format("the ds_config sets {}, which DeepSpeed applies at ZeRO stage 3 only (engine.py hands them to "
                        "the stage-3 optimizer): at stage {} they change nothing",
                        list, sc.zero.stage));
}

void note_unmodelled_offload_fields(RunSummary& r, const scenario::Scenario& sc) {
  const auto& fields = sc.zero.unmodelled_offload_fields;
  if (fields.empty())
    return;
  // What each does in DeepSpeed 0.19 (zero/offload_config.py, zero/stage3.py), so the reader knows which way the
  // simulated numbers are off.
  const auto what = [](const std::string& name) -> std::string {
    if (name == "offload_optimizer.fast_init")
      return "optimizer states initialised on NVMe from the swapped lp params: initialisation only";
    if (name == "offload_optimizer.super_offload")
      return "SuperOffload's stage-3 optimizer";
    if (name == "offload_optimizer.cpuadam_cores_perc")
      return "the share of CPU cores SuperOffload's CPU Adam uses";
    if (name == "aio.single_submit")
      return "libaio requests submitted one at a time";
    if (name == "aio.overlap_events")
      return "request submission not overlapped with completion";
    if (name == "aio.use_gds")
      return "GPUDirect Storage: swaps between NVMe and GPU memory without the host bounce buffer";
    return "not modelled";
  };
  std::string list;
  for (const auto& [name, value] : fields)
    list += fmt::format("{}{}: {} ({})", list.empty() ? "" : ", ", name, value, what(name));
  r.diagnostics.emplace_back(fmt::format(
      "not modelled: {}; zerosim simulates DeepSpeed's default for these offload and aio fields, so its step time and "
      "memory are those without them",
      list));
}

ReservedSplit reserved_split(const RunSummary& s) {
  ReservedSplit r;
  for (const double b : s.peak_reserved_by_tag)
    r.allocated += b;
  const double gap = std::max(0.0, s.peak_reserved_bytes - r.allocated);
  r.held = std::clamp(s.peak_reserved_held_bytes - r.allocated, 0.0, gap);
  r.cached = gap - r.held;
  return r;
}

MarginalFit marginal_fit(bool fits, long alloc_retries, double nvidia_smi_bytes, double needed_bytes,
                         double capacity_bytes, double host_node_peak_bytes, double host_capacity_bytes,
                         double headroom) {
  MarginalFit m;
  const double share = capacity_bytes * kDefaultHeadroomPercent / 100.0;
  m.by_retries = fits && alloc_retries > 0;
  m.by_headroom = fits && !leaves_headroom(needed_bytes, capacity_bytes, share);
  m.by_flushes =
      fits && !m.by_headroom && !leaves_headroom(nvidia_smi_bytes, capacity_bytes, std::max(share, headroom));
  m.by_host =
      fits && host_capacity_bytes > 0 && host_node_peak_bytes > 0 &&
      !leaves_headroom(host_node_peak_bytes, host_capacity_bytes, host_capacity_bytes * kHostMarginalPercent / 100.0);
  m.marginal = m.by_retries || m.by_headroom || m.by_flushes || m.by_host;
  return m;
}

MemoryBounds memory_bounds(const RunSummary& s) {
  MemoryBounds b;
  static_cast<MarginalFit&>(b) = marginal_fit(s);
  const ReservedSplit split = reserved_split(s);
  b.reserved_not_live = split.held + split.cached;
  b.nvidia_smi_low = std::min(s.nvidia_smi_bytes, std::max(s.peak_bytes, split.allocated) + s.non_pytorch_bytes);
  return b;
}

namespace {

/// "a", "a and b", "a, b and c"; "" for none.
std::string and_join(const std::vector<std::string>& parts) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

/// One reason a fit is marginal (MarginalFit): its words ("less than 5 % of the card free") and the figures behind
/// it for a line about one fit ("nvidia-smi 3.85 of 4.00 GiB leaves ..."), so that marginal_reason and
/// marginal_detail say the same reasons in the same words (review29 18).
struct MarginalPart {
  std::string reason;
  std::string figures;
  std::string legend; ///< what the reason means, after it in a `~` legend (marginal_legend)
};

/// The reasons `b` holds, in the order retries, card, flushes, host; with the figures of `s` when it is given
/// (`headroom` as marginal_fit's).
std::vector<MarginalPart> marginal_parts(const MarginalFit& b, const RunSummary* s, double headroom = -1) {
  std::vector<MarginalPart> parts;
  if (b.by_retries)
    parts.push_back({"allocator retries",
                     s == nullptr ? std::string()
                                  : fmt::format("the caching allocator released its cached blocks {} to fit",
                                                s->alloc_retries == 1 ? std::string("once")
                                                                      : fmt::format("{} times", s->alloc_retries)),
                     "a cudaMalloc succeeded only after the caching allocator released its cached blocks"});
  if (b.by_headroom)
    parts.push_back(
        {fmt::format("less than {:g} % of the card free", kDefaultHeadroomPercent),
         s == nullptr ? std::string()
                      : fmt::format("it cannot give back {:.2f} of {:.2f} GiB, leaving {:.2f} GiB, under {:.2f} GiB",
                                    nvidia_smi_needed(*s) / kGiB, s->capacity_bytes / kGiB,
                                    (s->capacity_bytes - nvidia_smi_needed(*s)) / kGiB,
                                    s->capacity_bytes * kDefaultHeadroomPercent / 100.0 / kGiB),
         fmt::format("in the memory the run cannot give back, nvidia-smi's peak less what a cudaMalloc retry "
                     "reclaims; --headroom {:g}% keeps it free",
                     kDefaultHeadroomPercent)});
  if (b.by_flushes) {
    const double limit = s == nullptr ? 0.0 : std::max(s->capacity_bytes * kDefaultHeadroomPercent / 100.0, headroom);
    parts.push_back(
        {"headroom only after cache flushes",
         s == nullptr
             ? std::string()
             : fmt::format("nvidia-smi {:.2f} of {:.2f} GiB leaves {:.2f} GiB, under {:.2f} GiB; {:.2f} GiB of it is "
                           "blocks held for other streams and cached segments a cudaMalloc retry gives back, without "
                           "which it needs {:.2f} GiB",
                           s->nvidia_smi_bytes / kGiB, s->capacity_bytes / kGiB,
                           (s->capacity_bytes - s->nvidia_smi_bytes) / kGiB, limit / kGiB,
                           (s->nvidia_smi_bytes - nvidia_smi_needed(*s)) / kGiB, nvidia_smi_needed(*s) / kGiB),
         fmt::format("the nvidia-smi peak leaves less than {:g} % of the card or --headroom free, the memory the "
                     "run cannot give back leaves it: the caching allocator keeps it only by cache flushes, waiting "
                     "for blocks held for other streams and releasing cached segments when a cudaMalloc fails",
                     kDefaultHeadroomPercent)});
  }
  if (b.by_host)
    parts.push_back(
        {fmt::format("host RAM under {:g} % free", kHostMarginalPercent),
         s == nullptr ? std::string()
                      : fmt::format("node peak {:.2f} of {:.2f} GiB leaves {:.2f} GiB, under {:.2f} GiB",
                                    s->host_node_peak_bytes / kGiB, s->host_capacity_bytes / kGiB,
                                    (s->host_capacity_bytes - s->host_node_peak_bytes) / kGiB,
                                    s->host_capacity_bytes * kHostMarginalPercent / 100.0 / kGiB),
         fmt::format("at the node's host memory peak; --host-headroom {:g}% keeps it free", kHostMarginalPercent)});
  return parts;
}

} // namespace

double nvme_write_bytes_per_billion_tokens(const RunSummary& s) {
  const double per_rank_step = s.step_traffic.nvme_bytes[1];
  const int ranks = std::min(s.gpus_per_node, s.world_size);
  if (!has_step_time(s) || !s.step_traffic_steady || per_rank_step <= 0 || ranks < 1 || s.global_batch_tokens <= 0)
    return 0;
  return per_rank_step * ranks * (1e9 / s.global_batch_tokens);
}

double time_per_billion_tokens_s(const RunSummary& s) {
  return has_step_time(s) && s.tokens_per_s > 0 ? 1e9 / s.tokens_per_s : 0.0;
}

double gpu_time_per_billion_tokens_s(const RunSummary& s) { return time_per_billion_tokens_s(s) * s.world_size; }

std::string host_gib_cell(double node_peak, double need_at_oom, const char* none) {
  if (need_at_oom > 0)
    return fmt::format(">= {:.3f}", need_at_oom / kGiB);
  return node_peak > 0 ? fmt::format("{:.3f}", node_peak / kGiB) : std::string(none);
}

std::string marginal_reason(const MarginalFit& b) {
  std::vector<std::string> reasons;
  for (const MarginalPart& p : marginal_parts(b, nullptr))
    reasons.push_back(p.reason);
  return and_join(reasons);
}

MarginalFit& operator|=(MarginalFit& a, const MarginalFit& b) {
  a.marginal = a.marginal || b.marginal;
  a.by_retries = a.by_retries || b.by_retries;
  a.by_headroom = a.by_headroom || b.by_headroom;
  a.by_flushes = a.by_flushes || b.by_flushes;
  a.by_host = a.by_host || b.by_host;
  return a;
}

std::string marginal_legend(const MarginalFit& m) {
  std::vector<std::string> reasons;
  for (const MarginalPart& p : marginal_parts(m, nullptr))
    reasons.push_back(p.reason + " (" + p.legend + ")");
  return fmt::format("{}", fmt::join(reasons, "; or "));
}

std::string marginal_detail(const RunSummary& s, double headroom) {
  std::vector<std::string> reasons;
  for (const MarginalPart& p : marginal_parts(marginal_fit(s, headroom), &s, headroom))
    reasons.push_back(p.reason + " (" + p.figures + ")");
  return and_join(reasons);
}

std::string reserved_run_ahead_note(const RunSummary& s, int stage, bool gather_stream, bool host_model,
                                    int launch_queue) {
  // Without a separate all-gather stream DeepSpeed allocates the gathered params on the compute stream
  // (parameter_offload.py l.189-190: default_stream() unless overlap_comm), where record_stream holds nothing.
  if (stage != 3 || !gather_stream || !host_model || !(s.peak_reserved_bytes > 0))
    return {};
  const ReservedSplit split = reserved_split(s);
  const double unallocated = split.held + split.cached;
  if (unallocated < 0.25 * s.peak_reserved_bytes)
    return {};
  const std::string bound =
      launch_queue > 0
          ? fmt::format(
                "bounds that run-ahead by CUDA's launch queue, simulation.host_launch_queue = {} kernels, an "
                "assumption (about 1000 measured on one machine)",
                launch_queue)
          : std::string("lets the thread run ahead without a bound here (simulation.host_launch_queue: 0)");
  return fmt::format(
      "{:.1f} GiB of the {:.1f} GiB reserved peak are not live tensors but blocks held for other streams and cached "
      "free blocks. At ZeRO stage 3 much of that is gathered parameters the Python thread had already released "
      "while the GPU had not yet used them (record_stream keeps them reserved until it has; the all-gather stream's "
      "cache keeps them afterwards), so it depends on how far the thread runs ahead of the GPU. zerosim {}; "
      "DeepSpeed's own fetch throttle waits for the all-gather stream, not for the GPU's compute. Treat the reserved "
      "and nvidia-smi peaks as uncertain by that much: rerun with a smaller simulation.host_launch_queue (e.g. 128) "
      "to see how far they move (docs/zero-stages.md)",
      unallocated / kGiB, s.peak_reserved_bytes / kGiB, bound);
}

double paper_model_state_bytes(int stage, double params, int n_d) {
  if (stage < 0 || stage > 3 || n_d < 1)
    throw Error(
        fmt::format("paper_model_state_bytes: need stage 0-3 and N_d >= 1, got stage {} and N_d {}", stage, n_d));
  constexpr double k = 12.0; // fp32 master 4 + Adam momentum 4 + variance 4 (§5.1)
  const double n = n_d;
  switch (stage) {
  case 0:
    return (2 + 2 + k) * params;
  case 1:
    return (2 + 2) * params + k * params / n;
  case 2:
    return 2 * params + (2 + k) * params / n;
  default:
    return (2 + 2 + k) * params / n;
  }
}

RunSummary summarize(const scenario::Scenario& sc, const workload::Workload& wl, const trace::RunResult& run) {
  RunSummary r;
  r.gpu_name = sc.cluster.gpu.name;
  r.cpu_name = sc.cluster.cpu.name;
  r.cpu_memory_bandwidth = sc.cluster.cpu.memory_bandwidth.value();
  r.gpus_per_node = sc.cluster.gpus_per_node;
  r.cpu_numa_nodes = sc.cluster.cpu.numa_nodes;
  r.cpu_core_memory_bandwidth = sc.cluster.cpu.core_memory_bandwidth.value();
  if (sc.zero.offload_optimizer != scenario::OffloadDevice::NONE) {
    r.cpu_threads_per_rank =
        scenario::cpu_limited_threads_per_rank(sc.training, sc.cluster.cpu, sc.cluster.gpus_per_node);
    if (r.cpu_threads_per_rank > 0)
      r.cpu_threads_set_by = scenario::cpu_threads_setter(sc.training);
  }
  switch (sc.training.optimizer_impl) {
  case scenario::OptimizerImpl::FUSED:
    break;
  case scenario::OptimizerImpl::TORCH_FOREACH:
    r.host_optimizer = "torch foreach Adam";
    break;
  case scenario::OptimizerImpl::TORCH_SINGLE_TENSOR:
    r.host_optimizer = "torch single-tensor Adam";
    break;
  }
  r.world_size = run.world_size > 0 ? run.world_size : sc.cluster.world_size();
  r.params = static_cast<double>(wl.total_params);
  r.trainable_params = static_cast<double>(wl.trainable_params);
  if (const auto& t = sc.training; t.lora_rank > 0) {
    std::string targets;
    for (const std::string& m : wl.training.lora_targets)
      targets += (targets.empty() ? "" : ", ") + m;
    r.trainable_note = fmt::format("LoRA r={} on {}", t.lora_rank, targets);
    if (t.lora_dropout > 0)
      r.trainable_note += fmt::format(", dropout {:g}", t.lora_dropout);
  } else if (t.trainable_fraction < 1) {
    r.trainable_note = fmt::format("trainable_fraction {:g}", t.trainable_fraction);
  }
  r.zero_stage = sc.zero.stage;
  r.bf16_optimizer = scenario::uses_bf16_optimizer(sc.training, sc.zero);
  {
    const std::int64_t n = std::max<std::int64_t>(r.world_size, 1);
    std::int64_t padding = 0;
    for (const workload::Layer& l : wl.layers)
      for (const workload::ParamTensor& t : l.params) {
        ++r.param_tensors;
        padding += (t.numel + n - 1) / n * n - t.numel;
      }
    r.stage3_padding_params = sc.zero.stage == 3 ? static_cast<double>(padding) : 0.0;
  }
  r.grad_accum = sc.training.grad_accum;
  r.train_batch_size = sc.training.micro_batch * sc.training.grad_accum * sc.cluster.world_size();
  r.paper_model_state_bytes = paper_model_state_bytes(sc.zero.stage, r.params, sc.cluster.world_size());
  // The paper's accounting is mixed precision's (2 B params and grads, K = 12): not the model states of an fp32 run.
  if (sc.zero.offload_optimizer != scenario::OffloadDevice::NONE ||
      sc.zero.offload_param != scenario::OffloadDevice::NONE || wl.trainable_params != wl.total_params ||
      sc.training.precision == scenario::Precision::FP32)
    r.paper_model_state_bytes = 0;
  r.element_bytes = wl.bytes_per_lp;
  r.steps_completed = static_cast<int>(run.steps.size());
  r.finished = run.finished;

  // Step times: step 0 is warm-up (DeepSpeed allocates optimizer state and buckets lazily on the first step), the
  // steady state is the mean of the completed steps of the steady window (first_steady_step: from step 1, or from
  // step 2 when the throughput timer's device sync starts there).
  r.steady_first_step = first_steady_step(sc.zero.throughput_timer_sync, run.steps);
  double steady_sum = 0;
  int steady_n = 0;
  StepBreakdown acc;
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const auto& st = run.steps[i];
    r.step_times_s.push_back(st.duration());
    if (st.step == 0)
      r.warmup_step_s = st.duration();
    if (st.step < r.steady_first_step)
      continue;
    steady_sum += st.duration();
    ++steady_n;
    if (i < run.step_phase_busy.size()) {
      const auto& ph = run.step_phase_busy[i].seconds;
      acc.forward_s += ph[static_cast<std::size_t>(program::Phase::FORWARD)];
      acc.backward_s += ph[static_cast<std::size_t>(program::Phase::BACKWARD)];
      acc.optimizer_s += ph[static_cast<std::size_t>(program::Phase::OPTIMIZER)];
      double all = 0;
      for (double v : ph)
        all += v;
      acc.compute_busy_s += all;
    }
    if (i < run.step_comm_busy.size())
      acc.comm_busy_s += run.step_comm_busy[i];
    if (i < run.step_idle.size()) {
      acc.exposed_comm_s += run.step_idle[i].comm;
      acc.exposed_offload_pcie_s += run.step_idle[i].offload_copy;
      acc.exposed_offload_nvme_s += run.step_idle[i].offload_nvme;
      acc.exposed_cpu_s += run.step_idle[i].cpu;
      acc.exposed_host_s += run.step_idle[i].host;
      acc.idle_other_s += run.step_idle[i].other;
    }
  }
  if (steady_n > 0) {
    r.steady_state = true;
    r.step_time_s = steady_sum / steady_n;
    const double k = 1.0 / steady_n;
    r.breakdown.forward_s = acc.forward_s * k;
    r.breakdown.backward_s = acc.backward_s * k;
    r.breakdown.optimizer_s = acc.optimizer_s * k;
    r.breakdown.compute_busy_s = acc.compute_busy_s * k;
    r.breakdown.comm_busy_s = acc.comm_busy_s * k;
    r.breakdown.exposed_comm_s = acc.exposed_comm_s * k;
    r.breakdown.exposed_offload_pcie_s = acc.exposed_offload_pcie_s * k;
    r.breakdown.exposed_offload_nvme_s = acc.exposed_offload_nvme_s * k;
    r.breakdown.exposed_cpu_s = acc.exposed_cpu_s * k;
    r.breakdown.exposed_host_s = acc.exposed_host_s * k;
    r.breakdown.idle_other_s = acc.idle_other_s * k;
  } else if (!run.steps.empty()) {
    // Only the warm-up step completed: report it, flagged as not steady.
    r.step_time_s = run.steps.front().duration();
    if (!run.step_phase_busy.empty()) {
      const auto& ph = run.step_phase_busy.front().seconds;
      r.breakdown.forward_s = ph[static_cast<std::size_t>(program::Phase::FORWARD)];
      r.breakdown.backward_s = ph[static_cast<std::size_t>(program::Phase::BACKWARD)];
      r.breakdown.optimizer_s = ph[static_cast<std::size_t>(program::Phase::OPTIMIZER)];
      for (double v : ph)
        r.breakdown.compute_busy_s += v;
    }
    if (!run.step_comm_busy.empty())
      r.breakdown.comm_busy_s = run.step_comm_busy.front();
    if (!run.step_idle.empty()) {
      r.breakdown.exposed_comm_s = run.step_idle.front().comm;
      r.breakdown.exposed_offload_pcie_s = run.step_idle.front().offload_copy;
      r.breakdown.exposed_offload_nvme_s = run.step_idle.front().offload_nvme;
      r.breakdown.exposed_cpu_s = run.step_idle.front().cpu;
      r.breakdown.exposed_host_s = run.step_idle.front().host;
      r.breakdown.idle_other_s = run.step_idle.front().other;
    }
  }
  r.breakdown.exposed_offload_s = r.breakdown.exposed_offload_pcie_s + r.breakdown.exposed_offload_nvme_s;
  r.host_step = host_step_of(run, r.steady_first_step);
  r.breakdown.other_compute_s = std::max(0.0, r.breakdown.compute_busy_s - r.breakdown.forward_s -
                                                  r.breakdown.backward_s - r.breakdown.optimizer_s);

  // Throughput: global batch = b * s * GA * N_d tokens per optimizer step.
  const double ga = static_cast<double>(sc.training.grad_accum);
  r.global_batch_tokens = static_cast<double>(sc.training.micro_batch) * static_cast<double>(sc.training.seq_len) * ga *
                          static_cast<double>(r.world_size);
  // MFU against the peak of the precision the matmuls run in (peak_lp; fp32: peak_fp32 or, with tf32, peak_tf32).
  const FlopRate peak = scenario::matmul_peak(sc.cluster.gpu, sc.training);
  r.peak_tflops_per_gpu = peak.value() / 1e12;
  r.gemm_utilization =
      workload::step_gemm_utilization(wl, workload::gemm_hardware(sc.cluster.gpu, wl.bytes_per_lp, peak));
  if (r.step_time_s > 0) {
    r.tokens_per_s = r.global_batch_tokens / r.step_time_s;
    r.model_tflops_per_gpu = wl.model_flops_per_micro_batch.value() * ga / r.step_time_s / 1e12;
    // What the GPU executes of the counted model FLOPs: the FlashAttention kernels' work factors (causal: half).
    double attention = 0.0;
    double executed_attention = 0.0;
    for (const workload::Layer& l : wl.layers) {
      attention += l.fwd_attention_flops.value() + l.bwd_attention_flops.value();
      executed_attention +=
          l.fwd_attention_flops.value() * l.fwd_attention_work + l.bwd_attention_flops.value() * l.bwd_attention_work;
    }
    if (const double model = wl.model_flops_per_micro_batch.value(); model > 0 && attention > 0) {
      r.attention_flops_share = attention / model;
      r.executed_flops_ratio = (model - attention + executed_attention) / model;
    }
    r.hardware_tflops_per_gpu = wl.hardware_flops_per_micro_batch.value() * ga / r.step_time_s / 1e12;
    if (r.peak_tflops_per_gpu > 0) {
      r.mfu = r.model_tflops_per_gpu / r.peak_tflops_per_gpu;
      r.hfu = r.hardware_tflops_per_gpu / r.peak_tflops_per_gpu;
    }
  }

  // Memory: the worst rank (lowest rank wins ties, so the answer does not depend on iteration order).
  r.capacity_bytes = sc.cluster.gpu.memory.value();
  const trace::RankMemory* worst = nullptr;
  for (const auto& m : run.memory)
    if (worst == nullptr || m.peak.bytes > worst->peak.bytes ||
        (m.peak.bytes == worst->peak.bytes && m.rank < worst->rank))
      worst = &m;
  if (worst != nullptr) {
    r.peak_bytes = worst->peak.bytes;
    r.peak_rank = static_cast<int>(worst->rank);
    r.peak_time_s = worst->peak.time;
    r.peak_step = worst->peak.step;
    r.peak_label = label_of(run.labels, worst->peak.label);
    r.peak_by_tag = worst->peak.by_tag;
  }
  r.steady_peak_reached = false;
  for (const auto& m : run.memory) {
    r.steady_peak_bytes = std::max(r.steady_peak_bytes, m.steady_peak.bytes);
    r.steady_peak_reached = r.steady_peak_reached || m.steady_peak.step >= 1;
  }
  for (const auto& m : run.host_memory) {
    if (m.peak.bytes > r.host_peak_bytes || r.host_peak_bytes == 0) {
      r.host_peak_bytes = m.peak.bytes;
      r.host_pinned_at_peak_bytes = m.pinned_at_peak;
      r.host_peak_step = m.peak.step;
      r.host_peak_label = label_of(run.labels, m.peak.label);
      r.host_peak_by_tag = m.peak.by_tag;
      r.host_pinned_at_peak_by_tag = m.pinned_by_tag_at_peak;
    }
    r.host_pinned_peak_bytes = std::max(r.host_pinned_peak_bytes, m.pinned_peak);
  }
  for (const auto& m : run.host_node_memory)
    r.host_node_peak_bytes = std::max(r.host_node_peak_bytes, m.peak.bytes);
  r.host_capacity_bytes = run.host_capacity;
  const trace::RankMemory* worst_reserved = nullptr;
  for (const auto& m : run.memory)
    if (worst_reserved == nullptr || m.nvidia_smi_peak > worst_reserved->nvidia_smi_peak ||
        (m.nvidia_smi_peak == worst_reserved->nvidia_smi_peak && m.rank < worst_reserved->rank))
      worst_reserved = &m;
  for (const auto& m : run.memory)
    // 0 with a reserved peak: a RankMemory made without the figure (tests); read as the reserved peak.
    r.nvidia_smi_needed_bytes =
        std::max(r.nvidia_smi_needed_bytes,
                 (m.unreclaimable_peak > 0 ? m.unreclaimable_peak : m.reserved_peak.bytes) + m.non_pytorch_bytes);
  for (const auto& m : run.memory)
    if (m.alloc_retries > r.alloc_retries) {
      r.alloc_retries = m.alloc_retries;
      r.alloc_retries_rank = static_cast<int>(m.rank);
      r.alloc_retry_wait_s = m.alloc_retry_wait;
    }
  if (worst_reserved != nullptr) {
    r.peak_reserved_bytes = worst_reserved->reserved_peak.bytes;
    r.peak_reserved_rank = static_cast<int>(worst_reserved->rank);
    r.peak_reserved_time_s = worst_reserved->reserved_peak.time;
    r.peak_reserved_step = worst_reserved->reserved_peak.step;
    r.peak_reserved_label = label_of(run.labels, worst_reserved->reserved_peak.label);
    r.peak_reserved_by_tag = worst_reserved->reserved_peak.by_tag;
    r.peak_reserved_held_bytes = worst_reserved->reserved_peak_held;
    r.non_pytorch_bytes = worst_reserved->non_pytorch_bytes;
    r.nvidia_smi_bytes = worst_reserved->nvidia_smi_peak;
  }

  r.oom = run.oom.has_value();
  if (r.oom)
    r.oom_description = describe_oom(*run.oom, run.labels);
  if (r.oom) {
    r.oom_label = label_of(run.labels, run.oom->label);
    r.oom_request_bytes = run.oom->requested;
    r.oom_tag = program::to_string(run.oom->tag);
    r.oom_rank = static_cast<int>(run.oom->rank);
  }
  r.oom_on_host = r.oom && run.oom->device == program::Device::HOST;
  if (r.oom_on_host) // the node's pool total when it failed (stream_actor.cpp do_alloc), not its peak over the run
    r.oom_host_demand_bytes = run.oom->allocated + run.oom->requested;
  if (r.oom && run.oom->device == program::Device::GPU) {
    const trace::OomInfo& o = *run.oom;
    r.oom_gpu_demand_bytes =
        o.needed > 0 ? o.reserved + o.non_pytorch + o.needed : o.allocated + o.requested + o.non_pytorch;
  }
  r.fits = !r.oom && r.peak_bytes <= r.capacity_bytes && r.nvidia_smi_bytes <= r.capacity_bytes;
  r.traffic = run.traffic;
  // One step's traffic: the last completed step, a steady-state one from step 1 on (step 0 differs: stage 3 records
  // its module trace then and gathers more). STEP_END joins every stream, so a completed step's ops have all run.
  if (!run.steps.empty() && run.step_traffic.size() == run.steps.size()) {
    r.step_traffic = run.step_traffic.back();
    r.step_traffic_step = run.steps.back().step;
    r.step_traffic_steady = r.step_traffic_step >= 1;
  }
  r.reserved_note = reserved_run_ahead_note(r, sc.zero.stage, sc.zero.overlap_comm_effective(),
                                            sc.simulation.host.enabled(), sc.simulation.host.launch_queue);
  r.diagnostics = run.diagnostics;
  // stage_1_and_2.py has no NVMe swapper: any offload device is its cpu_offload path (offload_nvme.hpp).
  if (sc.zero.offload_optimizer == scenario::OffloadDevice::NVME && sc.zero.stage < 3)
    r.diagnostics.emplace_back("offload_optimizer=nvme at stage " + std::to_string(sc.zero.stage) +
                               " runs as cpu: DeepSpeed's stage 1/2 optimizer keeps the offloaded states in host "
                               "memory (NVMe swapping exists in stage 3 only)");
  // A card without NVLink on a node whose GPU-to-GPU link is faster than its PCIe link (e.g. --set
  // cluster.gpu=rtx4090 on dgx-a100): the collectives ran over a link such a machine does not have.
  const scenario::ClusterSpec& c = sc.cluster;
  if (!c.gpu.nvlink && c.p2p && c.gpus_per_node > 1 && c.intra_node.bandwidth.value() > c.host_link.bandwidth.value())
    r.diagnostics.emplace_back(fmt::format(
        "cluster.gpu {} has no NVLink, but the node's GPU-to-GPU link is {:.1f} GB/s per direction (PCIe here: {:.1f} "
        "GB/s{}): the collectives ran at the faster rate; for PCIe-connected cards use a PCIe topology (e.g. "
        "4x-rtx4090-pcie) or set cluster.intra_node",
        c.gpu.name.empty() ? "(inline)" : c.gpu.name, c.intra_node.bandwidth.value() / 1e9,
        c.host_link.bandwidth.value() / 1e9, c.topology.empty() ? "" : ", topology " + c.topology));
  // A GPU named for its marketing size ("a100-80gb": 80 GiB, nvidia-smi's 81920 MiB) whose memory was set in decimal
  // units to that number (memory: 80GB = 74.51 GiB): every fit verdict is then 7 % pessimistic, which is rarely meant.
  // The size is read from the preset's name: the label of a modified card ("a100-80gb (modified: memory=80GB)")
  // does not end in it.
  const std::string& preset = c.gpu.preset.empty() ? c.gpu.name : c.gpu.preset;
  bool gb_noted = false;
  if (const std::size_t at = preset.rfind('-');
      at != std::string::npos && preset.size() > at + 3 && preset.compare(preset.size() - 2, 2, "gb") == 0) {
    const std::string digits = preset.substr(at + 1, preset.size() - at - 3);
    if (!digits.empty() && std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      const double n = std::stod(digits);
      if (c.gpu.memory.value() == n * 1e9) {
        gb_noted = true;
        r.diagnostics.emplace_back(fmt::format(
            "cluster.gpu.memory is {0:.0f} GB = {1:.2f} GiB (GB = 1e9 B), but a {0:.0f} GB card such as {2} exposes "
            "{0:.0f} GiB (the preset's value): write {0:.0f}GiB if you meant the card",
            n, n * 1e9 / (1024.0 * 1024.0 * 1024.0), preset));
      }
    }
  }
  // The same for a preset whose name does not carry its size (h100-sxm: 81559 MiB = 79.65 GiB, sold as "80 GB"): the
  // memory was set to N GB, N the preset's capacity rounded up to whole GiB (the size such a card is sold as), which
  // is less than the card exposes.
  const double gb = c.gpu.memory.value() / 1e9;
  const double was = c.gpu.preset_memory.value();
  if (!gb_noted && was > c.gpu.memory.value() && gb == std::ceil(was / (1024.0 * 1024.0 * 1024.0)))
    r.diagnostics.emplace_back(fmt::format(
        "cluster.gpu.memory is {0:.0f} GB = {1:.2f} GiB (GB = 1e9 B), but the {2} preset's card, sold as {0:.0f} GB, "
        "exposes {3:.2f} GiB (the preset's value): write {3:.2f}GiB, or leave cluster.gpu.memory out, if you meant "
        "the card",
        gb, c.gpu.memory.value() / (1024.0 * 1024.0 * 1024.0), c.gpu.preset, was / (1024.0 * 1024.0 * 1024.0)));
  // Stages 1/2 with DeepSpeed's default overlap_comm (false) reduce gradients on the compute stream: a large exposed
  // share may be the default, not the hardware. Most DeepSpeed and Hugging Face example configs set it true. Said
  // when at least a tenth of the step is exposed communication and the scenario did not choose overlap_comm itself
  // (stage 1 reads it from DeepSpeed 0.13.0 on).
  const bool knob = sc.zero.stage == 2 || (sc.zero.stage == 1 && !sc.zero.deepspeed_before(0, 13, 0));
  if (knob && !sc.zero.overlap_comm.has_value() && r.world_size > 1 && r.steps_completed > 0 &&
      r.breakdown.exposed_comm_s > 0.1 * r.step_time_s)
    r.diagnostics.emplace_back(fmt::format(
        "{:.0f} % of the step is exposed communication with overlap_comm off (DeepSpeed's default for stage {}; most "
        "example configs set it true, which reduces the gradient buckets during backward at 2 x reduce_bucket_size "
        "of extra memory): try --set zero.overlap_comm=true",
        100.0 * r.breakdown.exposed_comm_s / r.step_time_s, sc.zero.stage));
  // Pageable offload buffers (offload_optimizer.pin_memory false, DeepSpeed's default before 0.19.5): the copies
  // to and from them are staged by the driver and block the host (program::Copy::pageable). Said because the knob
  // is one line and the default changed across releases.
  if (sc.zero.offload_optimizer != scenario::OffloadDevice::NONE && !sc.zero.pin_optimizer_effective())
    r.diagnostics.emplace_back(fmt::format(
        "offload_optimizer.pin_memory is false{}: copies to and from pageable "
        "host buffers go through the driver's staging memcpy (cpu.pageable_copy_bandwidth = {:.0f} GB/s) and block "
        "the host until done; pin_memory: true removes that at the cost of page-locked host RAM",
        sc.zero.offload_optimizer_pin_memory.has_value() ? "" : " (DeepSpeed's default before 0.19.5)",
        sc.cluster.cpu.pageable_copy_bandwidth.value() / 1e9));
  // zero_force_ds_cpu_optimizer false exists to let a client optimizer (often torch.optim.AdamW) run on the offloaded
  // CPU tensors; zerosim cannot see the training script, so say which host optimizer it simulated and how to change
  // it (ZeRO-Offload Table 4: PyTorch's CPU Adam ~6x DeepSpeed's).
  if (sc.zero.offload_optimizer != scenario::OffloadDevice::NONE && !sc.zero.force_ds_cpu_optimizer &&
      sc.training.optimizer_impl == scenario::OptimizerImpl::FUSED)
    r.diagnostics.emplace_back(
        "zero_force_ds_cpu_optimizer is false, which lets a client optimizer run on the offloaded CPU tensors; this "
        "run simulates DeepSpeedCPUAdam. If your training code passes torch.optim.AdamW, set "
        "training.optimizer_impl: torch-single-tensor (its CPU step is about 6x slower, ZeRO-Offload Table 4)");
  // pin_memory only decides whether offloaded states sit in page-locked host memory (stage_1_and_2.py and stage3.py
  // use it for their offload buffers). Without that offload it does nothing; DeepSpeed accepts it silently, so say
  // so rather than let it look like a setting that was applied.
  const auto unused_pin = [&](const std::optional<bool>& pin, scenario::OffloadDevice device, const char* section) {
    if (pin.has_value() && device == scenario::OffloadDevice::NONE)
      r.diagnostics.emplace_back(fmt::format(
          "{0}.pin_memory is set ({1}) but {0} is none: pin_memory only places offloaded states in pinned host "
          "memory, so it has no effect without offload_optimizer/offload_param (DeepSpeed ignores it too)",
          section, *pin ? "true" : "false"));
  };
  unused_pin(sc.zero.offload_optimizer_pin_memory, sc.zero.offload_optimizer, "offload_optimizer");
  unused_pin(sc.zero.offload_param_pin_memory, sc.zero.offload_param, "offload_param");
  // training.skipped_steps: the step time of an overflow-skipped step leaves the optimizer out, which the reader of
  // the table should know (DeepSpeed logs these as "OVERFLOW! ... Skipping step").
  if (const std::int64_t k = sc.training.skipped_steps; k > 0)
    r.diagnostics.emplace_back(fmt::format(
        "training.skipped_steps = {}: {} under fp16 dynamic loss scaling and skip{} the optimizer step (overflow "
        "check and loss-scale update only: no gradient norm, optimizer step or parameter all-gather){}",
        k, k == 1 ? "step 0 overflows" : fmt::format("steps 0-{} overflow", k - 1), k == 1 ? "s" : "",
        k >= sc.simulation.steps ? ", so every simulated step, and the step time, is a skipped one" : ""));
  note_unmodelled_ds_fields(r, sc);
  note_unmodelled_offload_fields(r, sc);
  r.diagnostics.insert(r.diagnostics.end(), sc.import_notes.begin(), sc.import_notes.end());
  // The console's notes that qualify a number, kept for result.json, summary.json and sweep rows (RunSummary::caveats):
  // the same texts as the report prints, which stays as it is.
  const bool offload = sc.zero.offload_optimizer != scenario::OffloadDevice::NONE ||
                       sc.zero.offload_param != scenario::OffloadDevice::NONE;
  const std::string gpu_preset = sc.cluster.gpu.preset.empty() ? sc.cluster.gpu.name : sc.cluster.gpu.preset;
  // The GPU family's band (or the offload claims'), and the run's: ZeRO-3 across nodes adds the validation record of
  // that scope (run_band, in_multinode_zero3_scope).
  const MeasuredBand family = band_for(offload, gpu_preset);
  const MeasuredBand band = run_band(offload, gpu_preset, sc.zero.stage, r.world_size, sc.cluster.gpus_per_node);
  const int nodes = (r.world_size + sc.cluster.gpus_per_node - 1) / std::max(1, sc.cluster.gpus_per_node);
  // A GPU no family band covers (GeForce, workstation cards, a hand-described GPU): the console's note says its step
  // time is not validated, with or without offload, so the JSON says the same (kNoMeasuredBand, factors 1) rather than
  // quote the band of other GPUs' runs, and carries that note among the caveats (--quiet loses none).
  const std::string unvalidated = gpu_preset.empty() ? std::string() : unvalidated_gpu_note(gpu_preset);
  r.measured_band = unvalidated.empty() ? band.label : kNoMeasuredBand;
  r.measured_step_low = unvalidated.empty() ? band.low : 1.0;
  r.measured_step_high = unvalidated.empty() ? band.high : 1.0;
  if (has_step_time(r) && r.step_time_s > 0) {
    r.comm_busy_share = r.breakdown.comm_busy_s / r.step_time_s;
    r.collective_bound =
        is_collective_bound(r.world_size, sc.cluster.gpus_per_node, r.breakdown.comm_busy_s, r.step_time_s);
  }
  if (const std::string note = unfinished_run_note(r); !note.empty())
    r.caveats.push_back(note);
  // A collective-bound run's step-time caveat is the collective-bound note: the measured band of the best-case note
  // would understate how far its step may be from the simulated one. The memory part of that note still applies.
  if (has_step_time(r) && !r.collective_bound)
    r.caveats.emplace_back(best_case_note());
  // ZeRO-3 across nodes: its validation record reaches 2.17x, beyond the family band the best-case note quotes
  // (docs/validation.md gap 17). A collective-bound run's own note below says more.
  if (has_step_time(r) && !r.collective_bound &&
      in_multinode_zero3_scope(sc.zero.stage, offload, r.world_size, sc.cluster.gpus_per_node))
    r.caveats.push_back(multinode_zero3_note(nodes, family));
  if (has_step_time(r) && !unvalidated.empty())
    r.caveats.push_back(unvalidated);
  if (const std::string note = mfu_count_note(r); !note.empty())
    r.caveats.push_back("MFU " + note);
  if (r.collective_bound) {
    r.caveats.push_back(collective_bound_note(r.comm_busy_share, nodes, family.label));
    r.caveats.emplace_back(memory_margin_note());
  }
  // The defaults that follow other keys, as resolved (RunSummary::resolved): what a sweep row needs to say why two
  // points differ when only the key they follow was swept (stage 2's overlap_comm false against stage 3's true).
  const auto& z = sc.zero;
  const auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  r.resolved = {{"zero.overlap_comm", flag(z.overlap_comm_effective())},
                {"zero.contiguous_gradients", flag(z.contiguous_gradients)},
                {"zero.use_multi_rank_bucket_allreduce", flag(z.use_multi_rank_bucket_allreduce)},
                {"zero.reduce_bucket_size", std::to_string(z.reduce_bucket_size)},
                {"zero.stage3_prefetch_bucket_size", std::to_string(z.stage3_prefetch_bucket_size)},
                {"zero.stage3_param_persistence_threshold", std::to_string(z.stage3_param_persistence_threshold)},
                {"zero.grad_accum_dtype", scenario::to_string(z.grad_accum_dtype_effective(sc.training.precision))},
                {"zero.communication_data_type",
                 scenario::to_string(z.communication_data_type_effective(sc.training.precision))},
                {"zero.offload_optimizer_pin_memory", flag(z.pin_optimizer_effective())},
                {"zero.offload_param_pin_memory", flag(z.pin_param_effective())},
                {"cluster.nccl_channels", std::to_string(sc.cluster.nccl_channels_effective())}};
  r.peak_attribution = attribute_peak(sc, r);
  r.host_peak_attribution = attribute_host_peak(sc, r);
  return r;
}

} // namespace zerosim::analysis
