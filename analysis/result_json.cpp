#include "analysis/result_json.hpp"

#include "analysis/atomic_file.hpp"
#include "analysis/attribution.hpp"
#include "analysis/json_numbers.hpp"
#include "analysis/version.hpp"
#include "sim/error.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <string_view>
#include <type_traits>

namespace zerosim::analysis {

using nlohmann::json;

namespace {

const char* copy_dir_name(std::size_t i) {
  switch (i) {
  case 0:
    return "h2d";
  case 1:
    return "d2h";
  default:
    return "d2d";
  }
}

/// peak_attribution: [{tag, gib, knob}] (analysis/attribution.hpp), largest first.
json attribution_json(const std::vector<PeakAttributionLine>& lines) {
  json arr = json::array();
  for (const auto& l : lines)
    arr.push_back({{"tag", l.tag}, {"gib", l.bytes / kGiB}, {"knob", l.knob}});
  return arr;
}

/// The inverse of attribution_json; empty when `key` is absent (summaries written before it existed).
std::vector<PeakAttributionLine> attribution_from(const json& j, const char* key) {
  std::vector<PeakAttributionLine> out;
  if (j.contains(key))
    for (const auto& a : j.at(key))
      out.push_back(
          {a.at("tag").get<std::string>(), a.at("gib").get<double>() * kGiB, a.at("knob").get<std::string>()});
  return out;
}

json tags_json(const trace::TagBytes& t) {
  json j = json::object();
  for (std::size_t i = 0; i < t.size(); ++i)
    j[program::to_string(static_cast<program::MemTag>(i))] = t[i];
  return j;
}

trace::TagBytes tags_from(const json& j) {
  trace::TagBytes t{};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const char* name = program::to_string(static_cast<program::MemTag>(i));
    if (j.contains(name))
      t[i] = j.at(name).get<double>();
  }
  return t;
}

json link_json(const scenario::LinkSpec& l) {
  return {{"bandwidth_bytes_per_s", l.bandwidth.value()}, {"latency_s", l.latency.value()}, {"source", l.source}};
}

const char* optimizer_impl_name(scenario::OptimizerImpl i) {
  switch (i) {
  case scenario::OptimizerImpl::FUSED:
    return "fused";
  case scenario::OptimizerImpl::TORCH_FOREACH:
    return "torch-foreach";
  case scenario::OptimizerImpl::TORCH_SINGLE_TENSOR:
    return "torch-single-tensor";
  }
  return "?";
}

json efficiency_link_json(const scenario::LinkSpec& l) {
  json j = link_json(l);
  j["efficiency"] = l.efficiency;
  return j;
}

/// A path the inputs were read from as result.json records it: absolute, with symbolic links, "." and ".." resolved
/// (std::filesystem::weakly_canonical), so that the same file gives the same field from any working directory
/// and however the command line spelt it (new-user trial 27, F6). `p` itself when empty or when that fails.
std::string canonical_path_text(const std::string& p) {
  if (p.empty())
    return p;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(p, ec);
  if (ec)
    return p;
  const std::filesystem::path c = std::filesystem::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal().string() : c.string();
}

/// model.source: a preset's reference (a URL, a paper), or the path of the config.json the model was read from,
/// which is recorded as canonical_path_text.
std::string model_source_text(const std::string& source) {
  std::error_code ec;
  return !source.empty() && std::filesystem::is_regular_file(source, ec) ? canonical_path_text(source) : source;
}

json scenario_json(const scenario::Scenario& sc) {
  const auto& m = sc.model;
  const auto& t = sc.training;
  const auto& z = sc.zero;
  const auto& c = sc.cluster;
  const auto& g = c.gpu;
  json j;
  j["name"] = sc.name;
  j["description"] = sc.description;
  j["file"] = canonical_path_text(sc.file);
  j["model"] = {{"name", m.name},
                {"family", scenario::to_string(m.family)},
                {"hidden", m.hidden},
                {"layers", m.layers},
                {"heads", m.heads},
                {"kv_heads", m.kv_heads},
                {"head_dim", m.head_dim}, // 0 = hidden / heads
                {"intermediate", m.intermediate},
                {"vocab", m.vocab},
                {"max_positions", m.max_positions},
                {"sliding_window", m.sliding_window},
                {"max_window_layers", m.max_window_layers},
                {"attention_bias", scenario::to_string(m.attention_bias)},
                {"mlp_bias", m.mlp_bias},
                // The MLP's activation: model.activation sets it for GPT-2; LLaMA blocks are SwiGLU, OPT's ReLU.
                {"activation", m.family == scenario::ModelFamily::LLAMA ? std::string("swiglu")
                               : m.family == scenario::ModelFamily::OPT ? std::string("relu")
                                                                        : scenario::to_string(m.activation)},
                {"tied_embeddings", m.tied_embeddings},
                {"source", model_source_text(m.source)}};
  j["training"] = {{"micro_batch", t.micro_batch},
                   {"seq_len", t.seq_len},
                   {"grad_accum", t.grad_accum},
                   {"train_batch_size", t.train_batch_size},
                   {"precision", scenario::to_string(t.precision)},
                   {"optimizer", scenario::to_string(t.optimizer)},
                   {"optimizer_impl", optimizer_impl_name(t.optimizer_impl)},
                   {"launcher", scenario::to_string(t.launcher)},
                   {"omp_num_threads", t.omp_num_threads},
                   {"loss_impl", t.loss_impl == scenario::LossImpl::MEGATRON ? "megatron" : "hf"},
                   {"process_groups", t.process_groups == scenario::ProcessGroups::MPU ? "mpu" : "deepspeed"},
                   {"gradient_clipping", t.gradient_clipping},
                   {"skipped_steps", t.skipped_steps},
                   {"kernel_impl", scenario::to_string(t.kernel_impl)},
                   {"loss_sync", t.loss_sync},
                   {"activation_checkpointing", t.activation_checkpointing},
                   {"recompute_granularity",
                    t.recompute_granularity == scenario::RecomputeGranularity::SELECTIVE ? "selective" : "full"},
                   {"cpu_checkpointing", t.cpu_checkpointing},
                   {"flash_attention", t.flash_attention},
                   {"tf32", t.tf32},
                   {"flash_attention_kernel", scenario::to_string(t.flash_attention_kernel)},
                   {"trainable_fraction", t.trainable_fraction},
                   {"lora_rank", t.lora_rank},
                   {"lora_targets", t.lora_targets},
                   {"lora_dropout", t.lora_dropout},
                   {"torch_version", t.torch_version_text},
                   {"torch_nccl_avoid_record_streams", t.torch_nccl_avoid_record_streams}};
  j["zero"] = {{"stage", z.stage},
               {"contiguous_gradients", z.contiguous_gradients},
               {"reduce_scatter", z.reduce_scatter},
               {"reduce_bucket_size", z.reduce_bucket_size},
               {"allgather_bucket_size", z.allgather_bucket_size},
               {"overlap_comm", z.overlap_comm_effective()},
               {"overlap_comm_explicit", z.overlap_comm.has_value()},
               {"deepspeed_version", z.deepspeed_version_text},
               {"use_multi_rank_bucket_allreduce", z.use_multi_rank_bucket_allreduce},
               {"round_robin_gradients", z.round_robin_gradients},
               {"sub_group_size", z.sub_group_size},
               {"stage3_prefetch_bucket_size", z.stage3_prefetch_bucket_size},
               {"stage3_param_persistence_threshold", z.stage3_param_persistence_threshold},
               {"stage3_model_persistence_threshold", z.stage3_model_persistence_threshold},
               {"stage3_max_live_parameters", z.stage3_max_live_parameters},
               {"stage3_max_reuse_distance", z.stage3_max_reuse_distance},
               {"stage3_use_all_reduce_for_fetch_params", z.stage3_use_all_reduce_for_fetch_params},
               {"stage3_allgather_sequential", z.stage3_allgather_sequential},
               {"offload_optimizer", scenario::to_string(z.offload_optimizer)},
               {"offload_param", scenario::to_string(z.offload_param)},
               {"offload_param_buffer_count", z.param_swap_buffer_count},
               {"offload_param_buffer_size", z.param_swap_buffer_size},
               {"offload_param_max_in_cpu", z.param_max_in_cpu},
               {"offload_optimizer_buffer_count", z.optimizer_swap_buffer_count},
               {"offload_optimizer_pipeline_read", z.optimizer_pipeline_read},
               {"offload_optimizer_pipeline_write", z.optimizer_pipeline_write},
               {"offload_optimizer_pin_memory", z.pin_optimizer_effective()},
               {"offload_param_pin_memory", z.pin_param_effective()},
               {"force_ds_cpu_optimizer", z.force_ds_cpu_optimizer},
               {"throughput_timer_sync", z.throughput_timer_sync},
               // Resolved (unset = the model's dtype): the value diff prints is one --set takes back.
               {"grad_accum_dtype", scenario::to_string(z.grad_accum_dtype_effective(t.precision))},
               {"grad_accum_dtype_explicit", z.grad_accum_dtype_set},
               {"communication_data_type", scenario::to_string(z.communication_data_type_effective(t.precision))},
               {"communication_data_type_explicit", z.communication_data_type_set},
               {"aio",
                {{"block_size_bytes", z.aio.block_size.value()},
                 {"queue_depth", z.aio.queue_depth},
                 {"intra_op_parallelism", z.aio.intra_op_parallelism},
                 {"thread_count", z.aio.intra_op_parallelism}, // DeepSpeed's name before 0.14, the same setting
                 {"single_submit", z.aio.single_submit},
                 {"overlap_events", z.aio.overlap_events},
                 {"use_gds", z.aio.use_gds}}},
               {"deepspeed_config", canonical_path_text(z.deepspeed_config)}};
  // name: the preset with the cluster keys the scenario changed ("dgx-a100 (modified: nics_per_node=1)").
  j["cluster"] = {{"topology", c.topology},
                  {"name", c.name},
                  {"nodes", c.nodes},
                  {"gpus_per_node", c.gpus_per_node},
                  {"world_size", c.world_size()},
                  {"intra_node", efficiency_link_json(c.intra_node)},
                  {"intra_node_topology",
                   c.intra_node_topology == scenario::IntraNodeTopology::MESH ? "mesh" : "switch"},
                  {"host_link", efficiency_link_json(c.host_link)},
                  {"p2p", c.p2p},
                  {"host_bridge", efficiency_link_json(c.host_bridge)},
                  {"gpus_per_pcie_switch", c.gpus_per_pcie_switch},
                  {"pcie_switch_uplink", efficiency_link_json(c.pcie_switch_uplink)},
                  {"nic", efficiency_link_json(c.nic)},
                  {"nics_per_node", c.nics_per_node},
                  {"nic_per_gpu", c.nic_per_gpu},
                  {"fabric", scenario::to_string(c.fabric)},
                  {"fat_tree_leaf_radix", c.fat_tree_leaf_radix},
                  {"fabric_levels", c.fabric_levels},
                  {"fabric_oversubscription", c.fabric_oversubscription},
                  {"torus_dimensions", c.torus_dimensions},
                  {"rail_spine", c.rail_spine},
                  {"nvls", c.nvls},
                  {"collective_algorithm", c.collective_algorithm},
                  {"collective_protocol", c.collective_protocol},
                  {"nccl_channels", c.nccl_channels_effective()}, // as simulated: auto resolved
                  {"nvme",
                   {{"name", c.nvme.name},
                    {"drives", c.nvme.drives},
                    {"read_bandwidth_bytes_per_s", c.nvme.read_bandwidth.value()},
                    {"write_bandwidth_bytes_per_s", c.nvme.write_bandwidth.value()},
                    {"latency_s", c.nvme.latency.value()},
                    {"source", c.nvme.source}}},
                  {"host_memory_bytes", c.host_memory.value()},
                  {"source", c.source}};
  // name: the label, with any inline changes ("a100-80gb (modified: memory=40GiB)"); preset: the catalog entry.
  j["cpu"] = {{"name", c.cpu.name},
              {"preset", c.cpu.preset},
              {"cores", c.cpu.cores},
              {"base_clock_hz", c.cpu.base_clock.value()}, // 0 (and lanes, FMA units) when peak_fp32 was given alone
              {"fp32_simd_lanes", c.cpu.fp32_simd_lanes},
              {"fma_units", c.cpu.fma_units},
              {"peak_fp32_flops_per_s", c.cpu.peak_fp32.value()},
              {"memory_bandwidth_bytes_per_s", c.cpu.memory_bandwidth.value()},
              {"numa_nodes", c.cpu.numa_nodes},
              {"pageable_copy_bandwidth_bytes_per_s", c.cpu.pageable_copy_bandwidth.value()},
              {"page_fault_bandwidth_bytes_per_s", c.cpu.page_fault_bandwidth.value()},
              {"core_memory_bandwidth_bytes_per_s", c.cpu.core_memory_bandwidth.value()}, // 0: not given
              {"source", c.cpu.source}};
  j["gpu"] = {{"name", g.name},
              {"preset", g.preset},
              {"memory_bytes", g.memory.value()},
              {"memory_gib", g.memory.value() / kGiB},
              {"peak_lp_flops_per_s", g.peak_lp.value()},
              {"peak_fp32_flops_per_s", g.peak_fp32.value()},
              {"peak_tf32_flops_per_s", g.peak_tf32.value()},
              {"matmul_efficiency", g.matmul_efficiency},
              {"attention_efficiency", g.attention_efficiency > 0 ? g.attention_efficiency : g.matmul_efficiency},
              {"memory_bandwidth_bytes_per_s", g.memory_bandwidth.value()},
              {"memory_efficiency", g.memory_efficiency},
              {"sm_count", g.sm_count},
              {"compute_capability", g.compute_capability},
              {"nvlink", g.nvlink},
              {"bf16", g.bf16},
              {"flash_attention", g.flash_attention},
              {"source", g.source}};
  j["simulation"] = {{"steps", sc.simulation.steps},
                     {"fidelity", scenario::to_string(sc.simulation.fidelity)},
                     {"on_oom", scenario::to_string(sc.simulation.on_oom)},
                     {"fold", scenario::to_string(sc.simulation.fold)},
                     {"cuda_context_bytes", sc.simulation.cuda_context.value()},
                     {"expandable_segments", sc.simulation.expandable_segments},
                     {"host_op_launch_s", sc.simulation.host.op_launch.value()},
                     {"host_module_hook_s", sc.simulation.host.module_hook.value()},
                     {"host_param_hook_s", sc.simulation.host.param_hook.value()},
                     {"host_launch_queue", sc.simulation.host.launch_queue}};
  j["outputs"] = {{"dir", sc.outputs.dir},
                  {"result_json", sc.outputs.result_json},
                  {"trace_json", sc.outputs.trace_json},
                  {"memory_csv", sc.outputs.memory_csv},
                  {"trace_ranks", sc.outputs.trace_ranks},
                  {"trace_steps", sc.outputs.trace_steps}};
  j["compare_key"] = sc.compare_key;
  j["compare_values"] = sc.compare_values;
  return j;
}

json traffic_json(const trace::Traffic& t) {
  json j = json::object();
  for (std::size_t i = 0; i < t.collective_bytes.size(); ++i)
    j[program::to_string(static_cast<program::CollectiveKind>(i))] = {{"payload_bytes", t.collective_bytes[i]},
                                                                      {"wire_bytes", t.wire_bytes[i]},
                                                                      {"calls", t.collective_calls[i]}};
  return j;
}

/// "collectives_per_step": rank 0's collectives in one step (RunSummary::step_traffic) by kind, with the step's
/// number; null when no step completed.
json step_traffic_json(const RunSummary& s) {
  if (s.step_traffic_step < 0)
    return nullptr;
  json j = traffic_json(s.step_traffic);
  j["step"] = s.step_traffic_step;
  j["steady_state"] = s.step_traffic_steady; // a step >= 1 followed by another (RunSummary::step_traffic)
  return j;
}

/// "copies" (whole run) and "copies_per_step": a rank's GPU <-> host copy bytes by direction and NVMe swap bytes.
json copies_json(const trace::Traffic& t) {
  json j = json::object();
  for (std::size_t i = 0; i < t.copy_bytes.size(); ++i)
    j[std::string(copy_dir_name(i)) + "_bytes"] = t.copy_bytes[i];
  j["nvme_read_bytes"] = t.nvme_bytes[0]; // NVMe swap traffic of the rank (offload to nvme)
  j["nvme_write_bytes"] = t.nvme_bytes[1];
  return j;
}

/// "copies_per_step": rank 0's copy and NVMe bytes in the step of "collectives_per_step" (RunSummary::step_traffic),
/// with its number; null when no step completed. "copies" holds the whole run's, warm-up step 0 included.
json step_copies_json(const RunSummary& s) {
  if (s.step_traffic_step < 0)
    return nullptr;
  json j = copies_json(s.step_traffic);
  j["step"] = s.step_traffic_step;
  j["steady_state"] = s.step_traffic_steady;
  j["rank"] = 0;
  return j;
}

/// The StepBreakdown fields under their JSON keys: the one list behind "breakdown" (summary), "phase_breakdown"
/// (result.json) and summary_from_json. `b` is a StepBreakdown or a const one; `f(key, member)`.
template <class Breakdown, class F>
void for_each_breakdown_field(Breakdown& b, F&& f) {
  f("forward_s", b.forward_s);
  f("backward_s", b.backward_s);
  f("optimizer_s", b.optimizer_s);
  f("other_compute_s", b.other_compute_s);
  f("compute_busy_s", b.compute_busy_s);
  f("comm_busy_s", b.comm_busy_s);
  f("exposed_comm_s", b.exposed_comm_s);
  f("exposed_offload_s", b.exposed_offload_s);
  f("exposed_offload_pcie_s", b.exposed_offload_pcie_s);
  f("exposed_offload_nvme_s", b.exposed_offload_nvme_s);
  f("exposed_cpu_s", b.exposed_cpu_s);
  f("exposed_host_s", b.exposed_host_s);
  f("idle_other_s", b.idle_other_s);
}

/// The HostStep fields under their JSON keys (summary "host_step"); `h` is a HostStep or a const one.
template <class Host, class F>
void for_each_host_step_field(Host& h, F&& f) {
  f("cpu_adam_s", h.cpu_adam_s);
  f("unscale_s", h.unscale_s);
  f("lp_cast_s", h.lp_cast_s);
  f("other_s", h.other_s);
}

json breakdown_json(const StepBreakdown& b) {
  json j;
  for_each_breakdown_field(b, [&](const char* key, double v) { j[key] = v; });
  return j;
}

/// The RunSummary fields stored as-is under one key each, in the order summary_from_json reads them: the one list
/// summary_obj writes and summary_from_json reads. `s` is a RunSummary or a const one; `f(key, member, required)`,
/// `required` false for keys added with the caching-allocator model (older summaries lack them).
template <class Summary, class F>
void for_each_summary_field(Summary& s, F&& f) {
  f("gpu", s.gpu_name, true);
  f("cpu", s.cpu_name, false);
  f("cpu_memory_bandwidth_bytes_per_s", s.cpu_memory_bandwidth, false);
  f("gpus_per_node", s.gpus_per_node, false);
  f("cpu_numa_nodes", s.cpu_numa_nodes, false);
  f("cpu_core_memory_bandwidth_bytes_per_s", s.cpu_core_memory_bandwidth, false);
  f("cpu_threads_per_rank", s.cpu_threads_per_rank, false);
  f("cpu_threads_set_by", s.cpu_threads_set_by, false);
  f("cpu_adam_bound", s.cpu_adam_bound, false);
  f("host_optimizer", s.host_optimizer, false);
  f("world_size", s.world_size, true);
  f("steps_completed", s.steps_completed, true);
  f("finished", s.finished, true);
  f("warmup_step_time_s", s.warmup_step_s, true);
  f("step_time_s", s.step_time_s, true);
  f("steady_state", s.steady_state, true);
  f("steady_first_step", s.steady_first_step, false);
  f("step_times_s", s.step_times_s, true);
  f("global_batch_tokens", s.global_batch_tokens, true);
  f("grad_accum", s.grad_accum, false);
  f("train_batch_size", s.train_batch_size, false);
  f("params", s.params, false);
  f("trainable_params", s.trainable_params, false);
  f("trainable_note", s.trainable_note, false);
  f("zero_stage", s.zero_stage, false);
  f("bf16_optimizer", s.bf16_optimizer, false);
  f("stage3_padding_params", s.stage3_padding_params, false);
  f("param_tensors", s.param_tensors, false);
  f("paper_model_state_bytes", s.paper_model_state_bytes, false);
  f("element_bytes", s.element_bytes, false);
  f("tokens_per_s", s.tokens_per_s, true);
  f("model_tflops_per_gpu", s.model_tflops_per_gpu, true);
  f("hardware_tflops_per_gpu", s.hardware_tflops_per_gpu, true);
  f("peak_tflops_per_gpu", s.peak_tflops_per_gpu, true);
  f("mfu", s.mfu, true);
  f("hfu", s.hfu, true);
  f("attention_flops_share", s.attention_flops_share, false);
  f("executed_flops_ratio", s.executed_flops_ratio, false);
  f("gemm_utilization", s.gemm_utilization, false);
  f("capacity_bytes", s.capacity_bytes, true);
  f("peak_memory_bytes", s.peak_bytes, true);
  f("peak_rank", s.peak_rank, true);
  f("peak_time_s", s.peak_time_s, true);
  f("peak_step", s.peak_step, true);
  f("peak_label", s.peak_label, true);
  f("steady_peak_memory_bytes", s.steady_peak_bytes, true);
  f("steady_peak_reached", s.steady_peak_reached, false);
  f("host_peak_memory_bytes", s.host_peak_bytes, true);
  f("peak_reserved_bytes", s.peak_reserved_bytes, false);
  f("peak_reserved_rank", s.peak_reserved_rank, false);
  f("peak_reserved_time_s", s.peak_reserved_time_s, false);
  f("peak_reserved_step", s.peak_reserved_step, false);
  f("peak_reserved_label", s.peak_reserved_label, false);
  f("peak_reserved_held_bytes", s.peak_reserved_held_bytes, false);
  f("reserved_note", s.reserved_note, false);
  f("non_pytorch_bytes", s.non_pytorch_bytes, false);
  f("nvidia_smi_bytes", s.nvidia_smi_bytes, false);
  f("nvidia_smi_needed_bytes", s.nvidia_smi_needed_bytes, false);
  f("alloc_retries", s.alloc_retries, false);
  f("alloc_retries_rank", s.alloc_retries_rank, false);
  f("alloc_retry_wait_s", s.alloc_retry_wait_s, false);
  f("host_node_peak_memory_bytes", s.host_node_peak_bytes, false);
  f("host_capacity_bytes", s.host_capacity_bytes, false);
  f("host_pinned_at_peak_bytes", s.host_pinned_at_peak_bytes, false);
  f("peak_host_pinned_bytes", s.host_pinned_peak_bytes, false);
  f("fits", s.fits, true);
  f("oom", s.oom, true);
  f("oom_description", s.oom_description, true);
  f("oom_gpu_demand_bytes", s.oom_gpu_demand_bytes, false);
  f("oom_label", s.oom_label, false);
  f("oom_request_bytes", s.oom_request_bytes, false);
  f("oom_tag", s.oom_tag, false);
  f("oom_rank", s.oom_rank, false);
  f("oom_on_host", s.oom_on_host, false);
  f("oom_host_demand_bytes", s.oom_host_demand_bytes, false);
  f("diagnostics", s.diagnostics, true);
  f("caveats", s.caveats, false);
  f("measured_band", s.measured_band, false);
  f("measured_step_low", s.measured_step_low, false);
  f("measured_step_high", s.measured_step_high, false);
  f("collective_bound", s.collective_bound, false);
  f("comm_busy_share", s.comm_busy_share, false);
  f("resolved", s.resolved, false);
}

/// The summary keys that need a step time (null without one).
constexpr const char* kStepRateKeys[] =
    {"step_time_s", "tokens_per_s", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu", "hfu"};

bool is_step_rate_key(const char* key) {
  return std::any_of(std::begin(kStepRateKeys), std::end(kStepRateKeys),
                     [key](const char* k) { return std::string_view(k) == key; });
}

json summary_obj(const RunSummary& s) {
  json j;
  for_each_summary_field(s, [&](const char* key, const auto& v, bool) { j[key] = v; });
  // A run without a step time (no step completed, or stopped at its OOM: has_step_time) has no rates either: null,
  // as sweep.json writes them, never a 0 s step that a script could average or take the minimum of.
  if (!has_step_time(s))
    for (const char* key : kStepRateKeys)
      j[key] = nullptr;
  j["breakdown"] = breakdown_json(s.breakdown);
  json host = json::object();
  for_each_host_step_field(s.host_step, [&](const char* key, double v) { host[key] = v; });
  j["host_step"] = host;
  j["capacity_gib"] = s.capacity_bytes / kGiB;
  j["peak_memory_gib"] = s.peak_bytes / kGiB;
  j["peak_by_tag_bytes"] = tags_json(s.peak_by_tag);
  j["peak_reserved_by_tag_bytes"] = tags_json(s.peak_reserved_by_tag); // allocated at the reserved peak
  j["peak_attribution"] = attribution_json(s.peak_attribution);
  j["steady_peak_memory_gib"] = s.steady_peak_bytes / kGiB;
  // Host memory of the worst rank at its peak, split into page-locked (pin_memory) and pageable bytes.
  j["host_pageable_at_peak_bytes"] = s.host_peak_bytes - s.host_pinned_at_peak_bytes;
  j["host_peak_step"] = s.host_peak_step;
  j["host_peak_label"] = s.host_peak_label;
  j["host_peak_by_tag_bytes"] = tags_json(s.host_peak_by_tag);
  j["host_peak_attribution"] = attribution_json(s.host_peak_attribution);
  // PyTorch caching allocator: allocated (max_memory_allocated; = peak_memory_*), reserved (max_memory_reserved), and
  // the nvidia-smi estimate = reserved + CUDA context + NCCL buffers. A GPU OOM is decided on the latter.
  j["peak_allocated_bytes"] = s.peak_bytes;
  j["peak_allocated_gib"] = s.peak_bytes / kGiB;
  j["peak_reserved_gib"] = s.peak_reserved_bytes / kGiB;
  j["nvidia_smi_gib"] = s.nvidia_smi_bytes / kGiB;
  // What a capacity gate can apply without parsing reserved_note: the uncertain part, a floor, and a marginal fit.
  const MemoryBounds bounds = memory_bounds(s);
  j["reserved_not_live_bytes"] = bounds.reserved_not_live;
  j["nvidia_smi_low_bytes"] = bounds.nvidia_smi_low;
  j["marginal"] = bounds.marginal;
  j["marginal_reason"] = marginal_reason(bounds);
  j["oom_decided_by"] =
      "reserved + cuda_context + nccl_buffers > capacity (GPU); host memory per node > "
      "host_capacity (host)";
  j["collectives"] = traffic_json(s.traffic);
  j["collectives_per_step"] = step_traffic_json(s);
  j["copies"] = copies_json(s.traffic);
  j["copies_per_step"] = step_copies_json(s);
  j["nvme_write_bytes_per_1b_tokens"] = nvme_write_bytes_per_billion_tokens(s);
  // Time and GPU time to train 1e9 tokens (the console's "1B tokens in ... = ... GPU-hours"): null without a step
  // time, as the rates above.
  const double per_billion = time_per_billion_tokens_s(s);
  j["time_per_1b_tokens_s"] = per_billion > 0 ? json(per_billion) : json(nullptr);
  j["gpu_time_per_1b_tokens_s"] = per_billion > 0 ? json(gpu_time_per_billion_tokens_s(s)) : json(nullptr);
  return j;
}

json rank_memory_json(const trace::RankMemory& m, const std::vector<std::string>& labels) {
  auto peak = [&](const trace::MemoryPeak& p) {
    return json{{"bytes", p.bytes},
                {"gib", p.bytes / kGiB},
                {"time_s", p.time},
                {"step", p.step},
                {"label", label_of(labels, p.label)},
                {"by_tag_bytes", tags_json(p.by_tag)}};
  };
  return json{{"rank", m.rank},
              {"peak", peak(m.peak)},
              {"steady_peak", peak(m.steady_peak)},
              {"final_bytes", m.final_bytes},
              {"final_by_tag_bytes", tags_json(m.final_by_tag)},
              {"reserved_peak", peak(m.reserved_peak)},
              {"reserved_peak_held_bytes", m.reserved_peak_held},
              {"final_reserved_bytes", m.final_reserved},
              {"non_pytorch_bytes", m.non_pytorch_bytes},
              {"nvidia_smi_peak_bytes", m.nvidia_smi_peak},
              {"nvidia_smi_peak_gib", m.nvidia_smi_peak / kGiB},
              {"unreclaimable_peak_bytes", m.unreclaimable_peak},
              {"pinned_peak_bytes", m.pinned_peak},
              {"pinned_at_peak_bytes", m.pinned_at_peak},
              {"alloc_retries", m.alloc_retries},
              {"alloc_retry_wait_s", m.alloc_retry_wait}};
}

} // namespace

std::string result_json(const scenario::Scenario& sc, const std::string& variant, const RunSummary& summary,
                        const trace::RunResult& run) {
  json j;
  j["zerosim_version"] = version();
  j["zerosim_build"] = build_id();
  j["variant"] = variant;
  j["scenario"] = scenario_json(sc);
  j["summary"] = summary_obj(summary);
  j["peak_attribution"] = attribution_json(attribute_peak(sc, summary));
  j["host_peak_attribution"] = attribution_json(attribute_host_peak(sc, summary));

  json steps = json::array();
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    const auto& st = run.steps[i];
    json e{{"step", st.step}, {"start_s", st.start}, {"end_s", st.end}, {"duration_s", st.duration()}};
    if (i < run.step_phase_busy.size()) {
      json ph = json::object();
      for (std::size_t p = 0; p < run.step_phase_busy[i].seconds.size(); ++p)
        ph[std::string(program::to_string(static_cast<program::Phase>(p))) + "_s"] = run.step_phase_busy[i].seconds[p];
      e["compute_busy_by_phase"] = ph;
    }
    if (i < run.step_comm_busy.size())
      e["comm_busy_s"] = run.step_comm_busy[i];
    if (i < run.step_traffic.size())
      e["collectives"] = traffic_json(run.step_traffic[i]);
    steps.push_back(e);
  }
  j["steps"] = steps;
  j["step_times_s"] = summary.step_times_s;
  json phases = breakdown_json(summary.breakdown);
  phases["step_time_s"] = has_step_time(summary) ? json(summary.step_time_s) : json(nullptr);
  j["phase_breakdown"] = phases;
  // Folded runs list the simulated ranks only; every other rank is a symmetric copy (see diagnostics).
  j["simulated_ranks"] = run.simulated_ranks;
  json mem = json::array();
  for (const auto& m : run.memory)
    mem.push_back(rank_memory_json(m, run.labels));
  j["memory_per_rank"] = mem;
  json host = json::array();
  for (const auto& m : run.host_memory)
    host.push_back(rank_memory_json(m, run.labels));
  j["host_memory_per_rank"] = host;
  json nodes = json::array();
  for (const auto& m : run.host_node_memory) {
    json n = rank_memory_json(m, run.labels);
    n["node"] = m.rank; // "rank" holds the node index for these entries
    nodes.push_back(n);
  }
  j["host_memory_per_node"] = nodes;
  j["host_capacity_bytes"] = run.host_capacity;
  j["collectives"] = traffic_json(run.traffic);
  // One step's figures (the last completed step): the whole run's above include the warm-up step 0.
  j["collectives_per_step"] = step_traffic_json(summary);
  j["copies"] = copies_json(run.traffic);
  j["copies_per_step"] = step_copies_json(summary);
  if (run.oom) {
    const auto& o = *run.oom;
    j["oom"] = {{"time_s", o.time},
                {"rank", o.rank},
                {"step", o.step},
                {"device", o.device == program::Device::GPU ? "gpu" : "host"},
                {"label", label_of(run.labels, o.label)},
                {"tag", program::to_string(o.tag)},
                {"requested_bytes", o.requested},
                {"capacity_bytes", o.capacity},
                {"live_by_tag_bytes", tags_json(o.live_by_tag)},
                {"allocated_bytes", o.allocated},
                {"reserved_bytes", o.reserved},
                {"non_pytorch_bytes", o.non_pytorch},
                {"needed_bytes", o.needed},
                {"cache_released", o.cache_released},
                {"node", o.node},
                {"description", summary.oom_description}};
  } else {
    j["oom"] = nullptr;
  }
  j["finished"] = run.finished;
  j["end_time_s"] = run.end_time;
  j["diagnostics"] = run.diagnostics;
  write_whole_numbers_as_integers(j);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

void write_result_json(const std::string& path, const scenario::Scenario& sc, const std::string& variant,
                       const RunSummary& summary, const trace::RunResult& run) {
  write_file_atomic(path, result_json(sc, variant, summary, run));
}

std::string simulated_scenario_text(const scenario::Scenario& sc) {
  json j = scenario_json(sc);
  // Where the inputs were read from, as the command line spelled it (relative to the working directory): the same
  // files give the same fields below whatever the spelling, and a moved copy too. The fields read from them stay.
  j.erase("file");
  j["zero"].erase("deepspeed_config");
  j["model"].erase("source"); // a Hugging Face config.json's path; a preset's reference changes no number
  // The cluster's and NVMe's labels spell the changed keys as written ("200Gbps" or "25GBps"); the keys are above.
  j["cluster"].erase("name");
  j["cluster"]["nvme"].erase("name");
  return j.dump(-1, ' ', false, json::error_handler_t::replace); // a Latin-1 model directory name must not throw
}

std::string cluster_text(const scenario::ClusterSpec& c) {
  scenario::Scenario sc;
  sc.cluster = c;
  json j = scenario_json(sc);
  // The labels spell the changed keys as and where they were written; the keys themselves are compared.
  j["cluster"].erase("name");
  j["cluster"]["nvme"].erase("name");
  return json{{"cluster", j["cluster"]}, {"gpu", j["gpu"]}, {"cpu", j["cpu"]}}.dump();
}

std::string summary_json(const RunSummary& s) {
  return summary_obj(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

RunSummary summary_in_file(const std::string& summary_text, const std::string& file) {
  if (summary_text.empty())
    throw Error(file + ": no \"summary\" object");
  try {
    return summary_from_json(summary_text);
  } catch (const std::exception& e) {
    throw Error(file + ": malformed summary (" + e.what() + ")");
  }
}

RunSummary summary_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    RunSummary s;
    for_each_summary_field(s, [&](const char* key, auto& v, bool required) {
      using T = std::decay_t<decltype(v)>;
      if (j.contains(key) && j.at(key).is_null() && is_step_rate_key(key)) // no step time (summary_obj): 0
        return;
      v = required ? j.at(key).get<T>() : j.value(key, v); // optional keys keep RunSummary's default
    });
    if (!j.contains("nvidia_smi_needed_bytes")) // written since session 31: before, the gates read nvidia-smi's
      s.nvidia_smi_needed_bytes = s.nvidia_smi_bytes;
    const auto& b = j.at("breakdown");
    for_each_breakdown_field(s.breakdown, [&](const char* key, double& v) {
      // exposed_host_s is written since session 11: an older summary's host time is in idle_other_s. The PCIe / NVMe
      // split of exposed_offload_s since session 26: an older summary's is all read as PCIe (set below).
      const std::string k = key;
      v = k == "exposed_host_s" || k == "exposed_offload_pcie_s" || k == "exposed_offload_nvme_s"
              ? b.value(key, 0.0)
              : b.at(key).get<double>();
    });
    if (!b.contains("exposed_offload_pcie_s"))
      s.breakdown.exposed_offload_pcie_s = s.breakdown.exposed_offload_s;
    if (j.contains("host_step")) // written since session 11
      for_each_host_step_field(s.host_step, [&](const char* key, double& v) { v = j.at("host_step").value(key, 0.0); });
    s.peak_by_tag = tags_from(j.at("peak_by_tag_bytes"));
    if (j.contains("peak_reserved_by_tag_bytes"))
      s.peak_reserved_by_tag = tags_from(j.at("peak_reserved_by_tag_bytes"));
    s.peak_attribution = attribution_from(j, "peak_attribution");
    // Host peak attribution: written since session 22.
    s.host_peak_step = j.value("host_peak_step", -1);
    s.host_peak_label = j.value("host_peak_label", std::string());
    if (j.contains("host_peak_by_tag_bytes"))
      s.host_peak_by_tag = tags_from(j.at("host_peak_by_tag_bytes"));
    s.host_peak_attribution = attribution_from(j, "host_peak_attribution");
    const auto& c = j.at("collectives");
    for (std::size_t i = 0; i < s.traffic.collective_bytes.size(); ++i) {
      const char* name = program::to_string(static_cast<program::CollectiveKind>(i));
      if (!c.contains(name)) // "reduce" is newer than some result.json files: none then
        continue;
      const auto& k = c.at(name);
      s.traffic.collective_bytes[i] = k.at("payload_bytes").get<double>();
      s.traffic.wire_bytes[i] = k.at("wire_bytes").get<double>();
      s.traffic.collective_calls[i] = k.at("calls").get<double>();
    }
    if (const auto ps = j.find("collectives_per_step"); ps != j.end() && ps->is_object()) { // older runs lack it
      s.step_traffic_step = ps->at("step").get<int>();
      s.step_traffic_steady = ps->value("steady_state", false);
      for (std::size_t i = 0; i < s.step_traffic.collective_bytes.size(); ++i) {
        const char* name = program::to_string(static_cast<program::CollectiveKind>(i));
        if (!ps->contains(name))
          continue;
        const auto& k = ps->at(name);
        s.step_traffic.collective_bytes[i] = k.at("payload_bytes").get<double>();
        s.step_traffic.wire_bytes[i] = k.at("wire_bytes").get<double>();
        s.step_traffic.collective_calls[i] = k.at("calls").get<double>();
      }
    }
    const auto& cp = j.at("copies");
    for (std::size_t i = 0; i < s.traffic.copy_bytes.size(); ++i)
      s.traffic.copy_bytes[i] = cp.at(std::string(copy_dir_name(i)) + "_bytes").get<double>();
    s.traffic.nvme_bytes = {cp.value("nvme_read_bytes", 0.0), cp.value("nvme_write_bytes", 0.0)};
    if (const auto ps = j.find("copies_per_step"); ps != j.end() && ps->is_object()) { // since session 26
      for (std::size_t i = 0; i < s.step_traffic.copy_bytes.size(); ++i)
        s.step_traffic.copy_bytes[i] = ps->value(std::string(copy_dir_name(i)) + "_bytes", 0.0);
      s.step_traffic.nvme_bytes = {ps->value("nvme_read_bytes", 0.0), ps->value("nvme_write_bytes", 0.0)};
    }
    return s;
  } catch (const json::exception& e) {
    throw Error(std::string("malformed run summary: ") + e.what());
  }
}

std::string summary_file_json(const std::string& scenario_name, const std::vector<VariantSummary>& v) {
  json j;
  j["zerosim_version"] = version();
  j["zerosim_build"] = build_id();
  j["scenario"] = scenario_name;
  json arr = json::array();
  for (const auto& x : v)
    // `key` names the variant across runs for a feed that merges several summary.json files: the label stays "" for
    // a single run (a stable promise, docs/outputs.md), so the key is the scenario's name there and
    // "<scenario>/<label>" for a compare variant.
    arr.push_back({{"label", x.label},
                   {"key", x.label.empty() ? scenario_name : scenario_name + "/" + x.label},
                   {"dir", x.dir},
                   {"summary", summary_obj(x.summary)}});
  j["variants"] = arr;
  write_whole_numbers_as_integers(j);
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

void write_summary_json(const std::string& path, const std::string& scenario_name,
                        const std::vector<VariantSummary>& v) {
  write_file_atomic(path, summary_file_json(scenario_name, v));
}

} // namespace zerosim::analysis
