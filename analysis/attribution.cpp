#include "analysis/attribution.hpp"

#include "analysis/summary.hpp"

#include <fmt/format.h>

namespace zerosim::analysis {

namespace {

using program::MemTag;

const char* yes_no(bool b) { return b ? "true" : "false"; }

std::string optimizer_name(const scenario::Scenario& sc) {
  return sc.training.optimizer == scenario::OptimizerKind::ADAMW ? "AdamW" : "Adam";
}

} // namespace

std::string format_elements(Elements n) {
  if (n <= 0)
    return std::to_string(n);
  const std::string s = std::to_string(n);
  std::size_t zeros = 0;
  while (zeros < s.size() && s[s.size() - 1 - zeros] == '0')
    ++zeros;
  if (zeros < 4)
    return s; // e.g. 16777216 (HF "auto" h^2) or 40960: print as is
  const std::string digits = s.substr(0, s.size() - zeros);
  std::string out(1, digits[0]);
  if (digits.size() > 1) {
    out.push_back('.');
    out.append(digits, 1, std::string::npos);
  }
  out.push_back('e');
  out.append(std::to_string(s.size() - 1));
  return out;
}

namespace {

/// In fp32 training (training.precision fp32) the model's params and grads, and the buffers sized in their dtype,
/// are 4 B per element where the texts below say 2 B (fp16/bf16): " 2 B" and "(2 B" become 4 B there.
std::string with_model_bytes(const scenario::Scenario& sc, std::string text) {
  if (sc.training.precision != scenario::Precision::FP32)
    return text;
  for (std::size_t i = text.find("2 B"); i != std::string::npos; i = text.find("2 B", i + 3))
    if (i > 0 && (text[i - 1] == ' ' || text[i - 1] == '('))
      text[i] = '4';
  return text;
}

std::string knob_for_16bit(const scenario::Scenario& sc, MemTag tag, int world_size) {
  const auto& z = sc.zero;
  const auto& t = sc.training;
  const int stage = z.stage;
  const int nd = world_size > 0 ? world_size : sc.cluster.world_size();
  const char* lp = scenario::to_string(t.precision);
  const bool opt_offload = z.offload_optimizer != scenario::OffloadDevice::NONE;
  // BF16_Optimizer (stage 1, or stage 0 with fp32 accumulation before DeepSpeed 0.18.5) partitions the fp32 master
  // and optimizer states over N_d even without ZeRO and keeps a full fp32 grad buffer (zero_semantics.md §3.2).
  const bool bf16_opt = scenario::uses_bf16_optimizer(t, z);
  const std::string bf16_opt_why =
      fmt::format("BF16_Optimizer: precision=bf16, grad_accum_dtype=fp32, zero.stage={}, deepspeed_version={}", stage,
                  z.deepspeed_version_text);
  const std::string bucket = "reduce_bucket_size=" + format_elements(z.reduce_bucket_size);
  // zero.communication_data_type (DeepSpeed's top-level communication_data_type) other than the model's dtype: the
  // gradient chunks are `.to()`-cast for their reduction (stage 0-2), stage 3's bucket is allocated in it.
  const bool comm_cast = z.comm_differs(t.precision);
  const char* comm_name = scenario::to_string(z.communication_data_type_effective(t.precision));
  const std::string comm_note = comm_cast
                                    ? fmt::format(", plus their casts to communication_data_type={} ({} B/element)",
                                                  comm_name, z.comm_element_bytes(scenario::element_bytes(t.precision)))
                                    : std::string();
  // Stage 3's persistent params: at most stage3_param_persistence_threshold each and, when capped,
  // stage3_model_persistence_threshold in all (parameter_offload.py mark_persistent_parameters).
  const std::string persist_cap = z.stage3_model_persistence_threshold == scenario::ZeroConfig::kNoPersistenceCap
                                      ? std::string()
                                      : fmt::format(" (at most stage3_model_persistence_threshold={} in all)",
                                                    format_elements(z.stage3_model_persistence_threshold));
  switch (tag) {
  case MemTag::LP_PARAMS:
    // Stage 0-2 keep the full lp model on every rank; stage 3 partitions each parameter (zero_semantics.md §3.5).
    if (stage < 3)
      return fmt::format("{} params 2 B/param, a full copy on every rank (zero.stage={} < 3 does not partition them)",
                         lp, stage);
    // offload_param=nvme keeps the partitions on NVMe, swapped through buffer_count pinned host buffers
    // (swap_tensor/partitioned_param_swapper.py), not in host memory.
    if (z.offload_param == scenario::OffloadDevice::NVME)
      return fmt::format(
          "{} param partitions on NVMe (offload_param=nvme, swapped in through {} pinned host buffers of "
          "offload_param.buffer_size={}); params <= stage3_param_persistence_threshold={}{} stay on every GPU",
          lp, z.param_swap_buffer_count, format_elements(z.param_swap_buffer_size),
          format_elements(z.stage3_param_persistence_threshold), persist_cap);
    if (z.offload_param != scenario::OffloadDevice::NONE)
      return fmt::format(
          "{} param partitions on the host (offload_param={}); params <= "
          "stage3_param_persistence_threshold={}{} stay on every GPU",
          lp, scenario::to_string(z.offload_param), format_elements(z.stage3_param_persistence_threshold), persist_cap);
    return fmt::format(
        "{} params 2 B/param partitioned over N_d={} (zero.stage=3), plus params <= "
        "stage3_param_persistence_threshold={}{} kept whole on every rank",
        lp, nd, format_elements(z.stage3_param_persistence_threshold), persist_cap);
  case MemTag::LP_GRADS:
    // §3.3 (stage 0 all-reduce after backward), §3.4 (stage 1 holds full grads to the GA boundary; stage 2 frees
    // out-of-partition grads after each bucket), §3.5 (stage 3 per-layer grads until reduce-scattered). Stage 1's
    // backward hooks reduce only `if self.partition_gradients or self.overlap_comm` (stage_1_and_2.py
    // process_gradients, v0.19.5 l.1737), and only at the GA boundary (reduce_ready_partitions_and_remove_grads): with
    // overlap_comm=false even GA = 1 keeps every grad until reduce_gradients() after backward.
    if (bf16_opt)
      return fmt::format("{} grads 2 B/param (param.grad), full on every rank until zero_grad after the step ({})", lp,
                         bf16_opt_why);
    switch (stage) {
    case 0:
      return fmt::format("{} grads 2 B/param, full on every rank until the all-reduce after backward (zero.stage=0)",
                         lp);
    case 1: {
      const bool overlap = z.overlap_comm_effective();
      if (t.grad_accum > 1)
        return fmt::format(
            "{} grads 2 B/param, full, accumulated over grad_accum={} micro-steps until the boundary micro-step{} "
            "(zero.stage=1, overlap_comm={}; stage 2 reduces every micro-step bucket by bucket)",
            lp, t.grad_accum,
            overlap ? ", whose backward reduces them bucket by bucket"
                    : ", then reduced all at once after its backward",
            yes_no(overlap));
      if (overlap)
        return fmt::format(
            "{} grads not yet copied into the bucket: {} (zero.stage=1, overlap_comm=true reduces "
            "bucket by bucket during backward)",
            lp, bucket);
      return fmt::format(
          "{} grads 2 B/param, full, until the reduction after backward (zero.stage=1, overlap_comm=false: its "
          "backward hooks do not reduce; overlap_comm=true or stage 2 reduce bucket by bucket)",
          lp);
    }
    case 2:
      return fmt::format(
          "{} grads not yet reduced: {}, contiguous_gradients={} (zero.stage=2 frees out-of-partition "
          "grads after each bucket)",
          lp, bucket, yes_no(z.contiguous_gradients));
    default:
      return fmt::format("{} grads of the current layers until reduce-scattered: {} (zero.stage=3)", lp, bucket);
    }
  case MemTag::GRAD_PARTITION:
    if (stage == 2 && t.grad_accum > 1)
      return fmt::format(
          "grads_in_partition 2 B x numel of every param overlapping a rank's 1/N_d={} flat partition, boundary "
          "params whole (zero.stage=2); "
          "grad_accum={} adds a second partition buffer while accumulating",
          nd, t.grad_accum);
    if (stage == 3)
      return fmt::format("grad_partitions_flat_buffer {} B/param / N_d={} (zero.stage=3, zero.grad_accum_dtype={}{})",
                         z.grad_accum_element_bytes(2.0), nd,
                         scenario::to_string(z.grad_accum_dtype_effective(t.precision)),
                         opt_offload ? ", offload_optimizer=cpu keeps it on the host" : "");
    // ipg_bucket.cpp make_flat_partition: every param overlapping the rank's flat partition counts whole (§3.4),
    // so it exceeds 2 B x Ψ/N_d (LLaMA-2 7B, N_d = 8: 1.68 GiB, not 1.57).
    return fmt::format(
        "grads_in_partition 2 B x numel of every param overlapping a rank's 1/N_d={} flat partition, "
        "boundary params whole (zero.stage={})",
        nd, stage);
  case MemTag::FP32_MASTER:
    if (bf16_opt)
      return fmt::format("fp32 master weights 4 B/param partitioned over N_d={} ({})", nd, bf16_opt_why);
    if (stage == 0)
      return fmt::format(
          "fp32 master weights 4 B/param, not partitioned (zero.stage=0; stage >= 1 partitions over "
          "N_d={}, offload_optimizer=cpu moves them to the host)",
          nd);
    return fmt::format(
        "fp32 master weights 4 B/param (ZeRO stage >= 1 partitions over N_d={}; "
        "offload_optimizer=cpu moves them to the host)",
        nd);
  case MemTag::OPTIMIZER_STATES:
    // zero_semantics.md §1.1: K = 12 B/param of which m, v are 8; §7 item 17: created at the first step.
    if (bf16_opt)
      return fmt::format("{} m,v fp32 8 B/param partitioned over N_d={} ({})", optimizer_name(sc), nd, bf16_opt_why);
    if (stage == 0)
      return fmt::format(
          "{} m,v fp32 8 B/param, not partitioned (zero.stage=0; ZeRO stage >= 1 partitions over "
          "N_d={}; offload_optimizer=cpu moves them to the host)",
          optimizer_name(sc), nd);
    return fmt::format(
        "{} m,v fp32 8 B/param (ZeRO stage >= 1 partitions over N_d={}; offload_optimizer=cpu moves "
        "them to the host)",
        optimizer_name(sc), nd);
  case MemTag::FP32_GRADS:
    // §3.3 (stage 0 list + flat fp32 copy), §3.4 (stage 1/2 step-time cast of the partition), §3.5 / §7 item 20
    // (stage 3: 4 B x min(sub_group_size, Ψ/N) per sub-group).
    if (stage == 3 && z.sub_group_size == 0)
      return fmt::format(
          "fp32 grads of one optimizer sub-group: 4 B x one parameter's partition (sub_group_size=0: "
          "one sub-group per parameter; zero.stage=3, N_d={})",
          nd);
    if (stage == 3)
      return fmt::format(
          "fp32 grads of one optimizer sub-group: 4 B x min(sub_group_size={}, params/N_d) "
          "(zero.stage=3, N_d={})",
          format_elements(z.sub_group_size), nd);
    if (bf16_opt)
      return fmt::format("fp32 grad buffer 4 B/param, not partitioned, on every rank ({}; {})", bf16_opt_why,
                         stage == 1 ? "another grad_accum_dtype keeps ZeRO stage 1"
                         : z.deepspeed_before(0, 17, 6)
                             ? "from DeepSpeed 0.17.6 stage 0 accumulates bf16 grads in bf16 (FP16_Optimizer)"
                             : "grad_accum_dtype: bf16 (the default) runs FP16_Optimizer in bf16 instead");
    if (stage == 0)
      return "step-time fp32 copies of all grads, 8 B/param: a 4 B/param list and its 4 B/param flat copy live at "
             "once, not partitioned (zero.stage=0)";
    return fmt::format("step-time cast of the grad partition to fp32, 4 B/param / N_d={} (zero.stage={})", nd, stage);
  case MemTag::IPG_BUCKET:
    // §3.4: stage 1/2 allocate B_r lp elements, a second buffer with overlap_comm; §3.5 / §7 item 11: stage 3
    // allocates one at init, not doubled.
    // Before v0.6.0 stage3.py allocated ipg_buffer at each backward, doubled by overlap_comm.
    if (stage == 3 && z.deepspeed_before(0, 6, 0))
      return fmt::format("{} (zero.stage=3, DeepSpeed {} before 0.6.0: allocated for each backward{})", bucket,
                         z.deepspeed_version_text, z.overlap_comm_effective() ? ", x2: overlap_comm=true" : "");
    if (stage == 3)
      return fmt::format("{}{} (zero.stage=3: one bucket from init, not doubled by overlap_comm)", bucket,
                         comm_cast ? fmt::format(" x {} B/element (communication_data_type={})",
                                                 z.comm_element_bytes(2.0), comm_name)
                                   : std::string());
    return z.overlap_comm_effective() ? fmt::format("{} (x2: overlap_comm=true)", bucket)
                                      : fmt::format("{} (x1: overlap_comm=false)", bucket);
  case MemTag::FLATTEN_TEMP:
    if (bf16_opt)
      return z.communication_data_type == scenario::CommDataType::FP32
                 ? fmt::format(
                       "the lp params flattened at init; no cast for the all-reduce: "
                       "communication_data_type=fp32 reduces the fp32 grad buffer as it is ({})",
                       bf16_opt_why)
                 : fmt::format(
                       "{} cast of the fp32 grad buffer for its all-reduce (communication_data_type), 2 "
                       "B/param, and the lp params flattened at init ({})",
                       comm_name, bf16_opt_why);
    if (stage == 0)
      return fmt::format(
          "flatten temporaries of the all-reduce after backward (5e8-element buckets, DeepSpeed's "
          "MEMORY_OPT_ALLREDUCE_SIZE){} and of the lp params at init",
          comm_note);
    if (z.offload_optimizer != scenario::OffloadDevice::NONE && stage != 3)
      // stage_1_and_2.py with cpu_offload: temp_grad_buffer_for_gpu_offload, per-param fp32 casts of the grads and
      // the overflow check's temporaries at the boundary, and (v0.14.1-v0.16) the fp32 partition sent up and cast on
      // the GPU. torch.optim's temporaries of an offloaded step live on the host, not here.
      return fmt::format(
          "offload temporaries: the largest param's lp grad buffer and, per param at the boundary, its fp32 cast and "
          "inf/nan-check copies{}; flatten/cast temporaries around collectives, <= {} per in-flight chunk{} "
          "(zero.stage={}, "
          "offload_optimizer)",
          !z.deepspeed_before(0, 14, 1) && z.deepspeed_before(0, 17, 0)
              ? fmt::format("; the fp32 partition sent H2D and cast on the GPU, 4 B/param / N_d={} (DeepSpeed "
                            "0.14.1-0.16; 0.17.0 casts on the host)",
                            nd)
              : "",
          bucket, comm_note, stage);
    return fmt::format(
        "flatten/cast temporaries around collectives, <= {} per in-flight chunk{}; step-time flatten of "
        "the grad partition; lp params flattened at init (zero.stage={}){}",
        bucket, comm_note, stage,
        t.optimizer_impl == scenario::OptimizerImpl::FUSED || z.offload_optimizer != scenario::OffloadDevice::NONE ? ""
        : t.optimizer_impl == scenario::OptimizerImpl::TORCH_FOREACH
            ? "; torch AdamW update temp 4 B/param / N_d (training.optimizer_impl=torch-foreach)"
            : "; torch AdamW sqrt + denom temps 8 B/param / N_d "
              "(training.optimizer_impl=torch-single-tensor)");
  case MemTag::GATHER_BUFFER:
    // partition_parameters.py _all_gather_coalesced: with use_all_reduce_for_fetch_params the params view the flat
    // all-reduce buffer (no per-param copy), which lives until the last of them is released.
    // engine.py _configure_zero_optimizer: allgather_sequential sets prefetch_bucket_size to 1 (one param ahead).
    if (z.stage3_allgather_sequential)
      return fmt::format(
          "stage3_allgather_sequential=true (one buffer per param, no copies; prefetch one param: "
          "stage3_prefetch_bucket_size forced to 1), stage3_max_live_parameters={}, stage3_max_reuse_distance={}",
          format_elements(z.stage3_max_live_parameters), format_elements(z.stage3_max_reuse_distance));
    return fmt::format(
        "stage3_prefetch_bucket_size={}, stage3_max_live_parameters={}, stage3_max_reuse_distance={}{}",
        format_elements(z.stage3_prefetch_bucket_size), format_elements(z.stage3_max_live_parameters),
        format_elements(z.stage3_max_reuse_distance),
        z.stage3_use_all_reduce_for_fetch_params
            ? ", stage3_use_all_reduce_for_fetch_params=true (each fetch's flat buffer lives until all its params are "
              "released)"
            : "");
  case MemTag::ACTIVATIONS:
    // Korthikanti et al. 2022 sbh(34 + 5as/h) per layer; 2sbh with full recompute; FlashAttention drops 5as²b
    // (zero_semantics.md §5.1).
    return fmt::format("micro_batch={}, seq_len={}, activation_checkpointing={}, flash_attention={}", t.micro_batch,
                       t.seq_len, yes_no(t.activation_checkpointing), yes_no(t.flash_attention));
  case MemTag::WORKING:
    return fmt::format(
        "per-layer transients (activation grads, fp32 logits, recomputed layer): micro_batch={}, "
        "seq_len={}, vocab={}, activation_checkpointing={}",
        t.micro_batch, t.seq_len, sc.model.vocab, yes_no(t.activation_checkpointing));
  case MemTag::COUNT_:
    break;
  }
  return "";
}

} // namespace

std::string knob_for(const scenario::Scenario& sc, MemTag tag, int world_size) {
  return with_model_bytes(sc, knob_for_16bit(sc, tag, world_size));
}

namespace {

std::string host_knob_for_16bit(const scenario::Scenario& sc, MemTag tag, int world_size) {
  const auto& z = sc.zero;
  const int stage = z.stage;
  const int nd = world_size > 0 ? world_size : sc.cluster.world_size();
  const char* lp = scenario::to_string(sc.training.precision);
  const bool nvme_opt = z.offload_optimizer == scenario::OffloadDevice::NVME;
  const std::string opt = fmt::format("offload_optimizer={}, pin_memory={}", scenario::to_string(z.offload_optimizer),
                                      yes_no(z.pin_optimizer_effective()));
  switch (tag) {
  case MemTag::FP32_MASTER:
    // stage3.py with NVMe: SwapBufferManager of buffer_count fp32 buffers of the largest sub-group (swap_tensor/
    // partitioned_optimizer_swapper.py); stage 1/2 run NVMe optimizer offload like cpu (stage_1_and_2.py has no
    // swapper).
    if (nvme_opt && stage == 3)
      return fmt::format(
          "optimizer swap buffers: offload_optimizer.buffer_count={} x the largest sub-group (sub_group_size={}) x "
          "4 B, pinned; the fp32 master itself is on NVMe (offload_optimizer=nvme)",
          z.optimizer_swap_buffer_count, format_elements(z.sub_group_size));
    return fmt::format("fp32 master partition 4 B/param / N_d={} on the host ({})", nd, opt);
  case MemTag::OPTIMIZER_STATES:
    // Stage 3 with NVMe: the m, v DeepSpeedCPUAdam creates (pageable) are freed at the sub-group's swap-out by
    // PartitionedOptimizerSwapper (release_memory), but kept until its next swap-in by PipelinedOptimizerSwapper
    // (pipelined_optimizer_swapper.py _swap_out_optimizer_state; optimizer_utils.py set_swap_buffers).
    if (nvme_opt && stage == 3) {
      const std::string when =
          z.deepspeed_before(0, 13, 2)
              ? fmt::format("created at initialisation (DeepSpeed {} before 0.13.2)", z.deepspeed_version_text)
              : std::string("created at the first step");
      if (z.optimizer_pipeline_read || z.optimizer_pipeline_write)
        return fmt::format(
            "{} m,v fp32 8 B/param / N_d={} on the host, {}: the pipelined swapper (offload_optimizer.pipeline_read/"
            "pipeline_write) writes them to NVMe but keeps these pageable tensors until each sub-group's next "
            "swap-in ({})",
            optimizer_name(sc), nd, when, opt);
      return fmt::format(
          "{} m,v fp32 8 B x one sub-group (sub_group_size={}) on the host, {}, freed at its swap-out to NVMe ({})",
          optimizer_name(sc), format_elements(z.sub_group_size), when, opt);
    }
    // initialize_optimizer_states ran one optimizer step before DeepSpeed 0.13.2 (PR #5104 removed it).
    if (z.deepspeed_before(0, 13, 2))
      return fmt::format(
          "{} m,v fp32 8 B/param / N_d={} on the host, created at initialisation (DeepSpeed {} before "
          "0.13.2) ({})",
          optimizer_name(sc), nd, z.deepspeed_version_text, opt);
    return fmt::format("{} m,v fp32 8 B/param / N_d={} on the host, created at the first step ({})", optimizer_name(sc),
                       nd, opt);
  case MemTag::FP32_GRADS:
    if (nvme_opt && stage == 3 && z.sub_group_size == 0)
      return "one fp32 grad buffer of the largest sub-group, 4 B x the largest parameter's partition "
             "(sub_group_size=0: "
             "one sub-group per parameter; offload_optimizer=nvme: the other sub-groups' grads wait on NVMe)";
    if (nvme_opt && stage == 3)
      return fmt::format(
          "one fp32 grad buffer of the largest sub-group, 4 B x min(sub_group_size={}, params/N_d) (offload_optimizer="
          "nvme: the other sub-groups' grads wait on NVMe)",
          format_elements(z.sub_group_size));
    return fmt::format("fp32 grad partition 4 B/param / N_d={} on the host ({})", nd, opt);
  case MemTag::GRAD_PARTITION:
    // Before v0.6.0 stage3.py kept lp grads on the host only with gradient accumulation (grads_in_partition).
    if (stage == 3 && z.deepspeed_before(0, 6, 0))
      return fmt::format(
          "grads_in_partition 2 B/param / N_d={} on the host, with gradient_accumulation_steps > 1 only, "
          "pinned iff offload_param.pin_memory (zero.deepspeed_version={} is before 0.6.0)",
          nd, z.deepspeed_version_text);
    return fmt::format("grad_partitions_flat_buffer {} B/param / N_d={} on the host (zero.stage=3, {})",
                       z.grad_accum_element_bytes(2.0), nd, opt);
  case MemTag::LP_PARAMS:
    if (stage == 3 && z.offload_param == scenario::OffloadDevice::NVME)
      return fmt::format(
          "param swap buffers: offload_param.buffer_count={} x buffer_size={} x 2 B, pinned (offload_param=nvme)",
          z.param_swap_buffer_count, format_elements(z.param_swap_buffer_size));
    if (stage == 3)
      // stage3.py param_groups_fp16_flat_cpu_memory: get_accelerator().pin_memory(...) whatever pin_memory says.
      return fmt::format(
          "{} param partitions 2 B/param / N_d={}, pinned whatever offload_param.pin_memory says (offload_param={})",
          lp, nd, scenario::to_string(z.offload_param));
    return fmt::format(
        "{} staging partition 2 B/param / N_d={}: the host casts the updated fp32 partition into it before the H2D "
        "copy (DeepSpeed >= 0.17.0; {})",
        lp, nd, opt);
  case MemTag::LP_GRADS:
    return fmt::format("{} grad accumulation partition 2 B/param / N_d={} on the host (grad_accum={} > 1, {})", lp, nd,
                       sc.training.grad_accum, opt);
  case MemTag::FLATTEN_TEMP: {
    // offload_cpu.cpp emit_cpu_adam_tile_buffers: DeepSpeedCPUAdam's two pinned TILE buffers before v0.14.3.
    const std::string tiles =
        z.deepspeed_before(0, 14, 3) && sc.training.optimizer_impl == scenario::OptimizerImpl::FUSED
            ? fmt::format("DeepSpeedCPUAdam's 2 pinned tile buffers, 1 GiB (DeepSpeed {} before 0.14.3)",
                          z.deepspeed_version_text)
            : std::string();
    if (stage == 3)
      return fmt::format("{}{}host temporaries of the optimizer's init and step ({})", tiles, tiles.empty() ? "" : "; ",
                         opt);
    // offload_cpu.cpp emit_stage12_offload_init / emit_stage12_offload_step: the pinned twin of the GPU's temp grad
    // buffer; before v0.14.1 also the step's pageable lp cast of the fp32 partition.
    return fmt::format("host twin of temp_grad_buffer_for_gpu_offload (the largest param x 2 B){}{} ({})",
                       z.deepspeed_before(0, 14, 1)
                           ? fmt::format(" and the step's {} cast of the fp32 partition, 2 B/param / N_d={} "
                                         "(DeepSpeed < 0.14.1)",
                                         lp, nd)
                           : std::string(),
                       tiles.empty() ? std::string() : "; " + tiles, opt);
  }
  case MemTag::ACTIVATIONS:
    // generator_common.cpp forward with cpu_checkpointing: each checkpointed block's input, `.to('cpu')`, pageable.
    return fmt::format(
        "activation checkpoints in host memory (training.cpu_checkpointing=true): each checkpointed "
        "block's input, micro_batch={} x seq_len={} x hidden={} x 2 B, pageable",
        sc.training.micro_batch, sc.training.seq_len, sc.model.hidden);
  default:
    return "";
  }
}

} // namespace

std::string host_knob_for(const scenario::Scenario& sc, MemTag tag, int world_size) {
  return with_model_bytes(sc, host_knob_for_16bit(sc, tag, world_size));
}

namespace {

/// Why a host buffer is pageable although offload_optimizer.pin_memory is true, for the buffers DeepSpeed does not
/// pin itself (the simulated allocation says it is pageable; this names the source line); "" when no reason is
/// recorded here.
std::string pageable_reason(const scenario::Scenario& sc, MemTag tag) {
  const auto& z = sc.zero;
  if (!z.pin_optimizer_effective() || z.offload_optimizer == scenario::OffloadDevice::NONE)
    return "";
  if (tag == MemTag::OPTIMIZER_STATES)
    // DeepSpeedCPUAdam.step: state['exp_avg'] / ['exp_avg_sq'] = torch.zeros_like(p.data, ..., device=device), the
    // host fp32 partition's device, never pin_memory'd (ops/adam/cpu_adam.py l.154-157 @v0.18.5); torch.optim's
    // Adam likewise.
    return "pin_memory does not reach them: the optimizer creates m, v itself with torch.zeros_like at its first "
           "step (deepspeed/ops/adam/cpu_adam.py l.154-157 @v0.18.5)";
  if (tag == MemTag::FP32_MASTER && z.stage == 3)
    // stage3.py _create_fp32_partitions: converted = lp partition .to(cpu, fp32); append(converted.clone().detach()),
    // no pin_memory (l.982-985 @v0.18.5), unlike grad_partitions_flat_buffer (l.628-629) and the sub-group gradient
    // buffers (l.1157-1158), which follow pin_memory.
    return "stage3.py _create_fp32_partitions clones the lp partition to fp32 on the host without pinning it "
           "(l.982-985 @v0.18.5)";
  return "";
}

} // namespace

std::vector<PeakAttributionLine> attribute_host_peak(const scenario::Scenario& sc, const RunSummary& s) {
  std::vector<PeakAttributionLine> out;
  for (const auto& [tag, bytes] : top_tags(s.host_peak_by_tag)) {
    // Pinned or pageable as the simulated allocations were (program::Alloc::pinned), so that the lines add up to
    // the summary's pinned / pageable split (newuser31 F17: every line said pin_memory=true while 2/3 was pageable).
    const double pinned = s.host_pinned_at_peak_by_tag[static_cast<std::size_t>(tag)];
    std::string state;
    if (pinned <= 0.5) {
      state = "pageable";
      if (const std::string why = pageable_reason(sc, tag); !why.empty())
        state += " (" + why + ")";
    } else if (pinned >= bytes - 0.5)
      state = "pinned";
    else
      state = fmt::format("{:.2f} GiB pinned, {:.2f} GiB pageable", pinned / kGiB, (bytes - pinned) / kGiB);
    out.push_back({program::to_string(tag), bytes, state + "; " + host_knob_for(sc, tag, s.world_size)});
  }
  return out;
}

std::vector<PeakAttributionLine> attribute_peak(const scenario::Scenario& sc, const trace::TagBytes& by_tag,
                                                int world_size) {
  std::vector<PeakAttributionLine> out;
  for (const auto& [tag, bytes] : top_tags(by_tag))
    out.push_back({program::to_string(tag), bytes, knob_for(sc, tag, world_size)});
  return out;
}

std::vector<PeakAttributionLine> attribute_peak(const scenario::Scenario& sc, const RunSummary& s) {
  return attribute_peak(sc, s.peak_by_tag, s.world_size);
}

} // namespace zerosim::analysis
