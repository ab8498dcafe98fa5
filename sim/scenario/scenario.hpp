// The typed scenario: what a YAML scenario file describes, after loading, preset resolution and validation.
// Pure data; the loader (scenario_loader.hpp) builds it and names file:line:key for every error.
#pragma once

#include "sim/quantity.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace zerosim::scenario {

/// Architecture family; decides which tensors a transformer block has (see workload/).
/// GPT2: learned positions, LayerNorm, GELU MLP, biases (HF GPT2); LLAMA: rotary, RMSNorm, SwiGLU (HF Llama,
/// Mistral, Qwen2); OPT: learned positions (2 offset rows), LayerNorm, ReLU MLP, biases, separate q/k/v projections
/// and HF OPTAttention's eager softmax (mask add, clamp at the dtype's minimum, fp32 softmax cast back).
enum class ModelFamily { GPT2, LLAMA, OPT };
/// True for the families with a learned position table and GPT-style blocks (GPT-2, OPT).
[[nodiscard]] inline bool learned_positions(ModelFamily f) { return f != ModelFamily::LLAMA; }
/// Biases of a LLaMA-family block's attention projections (GPT-2 blocks always have them): NONE (LLaMA, Mistral),
/// QKV on q/k/v_proj (Qwen2), QKVO on all four (Hugging Face LlamaConfig.attention_bias = true).
enum class AttentionBias { NONE, QKV, QKVO };

/// The GPT-2 family's MLP activation (`model.activation`, Hugging Face config `activation_function`). GELU: one
/// torch kernel (nn.GELU / F.gelu, exact or tanh-approximated), which saves its input. GELU_NEW: transformers'
/// NewGELUActivation, the tanh formula written as eight eager tensor ops (HF GPT-2's "gelu_new").
enum class Activation { GELU, GELU_NEW };

/// Transformer dimensions, from a preset (scenarios/models/*.yaml), inline YAML or a Hugging Face config.json.
/// Symbols follow DESIGN.md: h = hidden, L = layers, a = heads, V = vocab.
struct ModelSpec {
  std::string name; ///< preset name or file it came from
  ModelFamily family = ModelFamily::GPT2;
  std::int64_t hidden = 0; ///< h
  std::int64_t layers = 0; ///< L
  std::int64_t heads = 0; ///< a
  std::int64_t kv_heads = 0; ///< grouped-query attention heads (== heads when no GQA)
  /// Attention head dimension d (LLaMA family only); 0 = hidden / heads. Hugging Face LlamaConfig, MistralConfig
  /// `head_dim` (null -> hidden_size // num_attention_heads; Qwen2Attention reads it with the same default): q_proj
  /// is h -> heads·d and o_proj heads·d -> h, so heads·d may differ from h (Mistral-NeMo-12B: h 5120, 32 × 128).
  std::int64_t head_dim = 0;
  std::int64_t intermediate = 0; ///< MLP inner size (4h for GPT-2; `intermediate_size` for LLaMA)
  std::int64_t vocab = 0; ///< V
  /// Learned position table rows (GPT-2, OPT: seq_len may not exceed it). Rotary families (LLaMA): the context
  /// length the model was trained for (config.json max_position_embeddings), recorded, not enforced: a longer
  /// seq_len gets a note; `zerosim plan` takes it as the default --seq-len. 0 = not known.
  std::int64_t max_positions = 0;
  /// Sliding-window attention (Mistral): each token attends to the last `sliding_window` tokens; 0 = full causal
  /// attention. Only FlashAttention skips the blocks outside the window (eager attention masks full s x s scores).
  std::int64_t sliding_window = 0;
  /// Layers below this index attend fully; the sliding window applies from this layer on (Hugging Face
  /// Qwen2Config.max_window_layers: layer i uses the window when i >= max_window_layers). 0 = every layer (Mistral).
  std::int64_t max_window_layers = 0;
  bool tied_embeddings = true; ///< LM head shares the token embedding (GPT-2: yes, LLaMA: no)
  AttentionBias attention_bias = AttentionBias::NONE; ///< LLaMA family only (`model.attention_bias`)
  /// Biases on gate_proj, up_proj and down_proj (Hugging Face LlamaConfig.mlp_bias); LLaMA family only
  /// (`model.mlp_bias`).
  bool mlp_bias = false;
  Activation activation = Activation::GELU; ///< GPT-2 family only (`model.activation`)
  std::string source; ///< where the dims come from (config URL or paper)
};

/// Training precision. FP16 / BF16: mixed precision (16-bit params and grads, fp32 master and Adam states).
/// FP32: no mixed precision (DeepSpeed with fp16 and bf16 disabled, HF Trainer without --fp16/--bf16): params,
/// grads, activations and collectives in fp32, 4 B per element (engine.py communication_data_type falls back to
/// torch.float32; _configure_optimizer runs the basic optimizer unwrapped at stage 0).
enum class Precision { FP16, BF16, FP32 };

/// Bytes of one element of the model's params, grads and activations in `p`: 2 (fp16, bf16) or 4 (fp32).
[[nodiscard]] inline double element_bytes(Precision p) { return p == Precision::FP32 ? 4.0 : 2.0; }
enum class OptimizerKind { ADAM, ADAMW };

/// Which implementation runs the GPU Adam(W) step. DeepSpeed's engine builds FusedAdam unless the config's optimizer
/// params say `torch_adam: true`, which builds torch.optim.Adam/AdamW (deepspeed/runtime/engine.py
/// _configure_basic_optimizer); torch then picks its foreach path on CUDA (PyTorch >= 2.0 default) or its
/// single-tensor path (PyTorch <= 1.13 default: foreach None -> False). They differ in step-time temporaries.
enum class OptimizerImpl { FUSED, TORCH_FOREACH, TORCH_SINGLE_TENSOR };

/// Which language-model loss runs on the logits (workload.cpp make_head). HF: transformers' ForCausalLMLoss,
/// logits.float() then cross_entropy = log_softmax + nll_loss (fp32 log-probabilities saved, two fp32 gradients in
/// backward). MEGATRON: Megatron-LM's vocab_parallel_cross_entropy on output.float() (megatron/mpu/cross_entropy.py,
/// the GPT-2 of the ZeRO papers and of Megatron-DeepSpeed): softmax computed in place in the fp32 copy, which is the
/// only saved tensor and becomes the gradient in place in backward.
enum class LossImpl { HF, MEGATRON };

/// How the element-wise parts of a block run (workload.cpp). HF: as transformers' Python modules run them in eager
/// PyTorch, one kernel per tensor op: LlamaRMSNorm upcasts to fp32 and takes five ops (to, pow, mean, mul, to) plus
/// the weight multiply, and saves the fp32 copy; apply_rotary_pos_emb is mul, neg, cat, mul, add; GPT-2's gelu_new
/// is eight ops and saves four tensors. FUSED: one kernel per module (Apex / Megatron / torch.compile / llm.c), which
/// saves only its input (Korthikanti et al. 2022 §4.1 count).
enum class KernelImpl { HF, FUSED };

/// Which FlashAttention kernels run the fused attention (training.flash_attention). FLASH2: FlashAttention-2
/// (Dao-AILab flash-attn >= 2, PyTorch SDPA's flash backend), the kernels gpu.attention_efficiency describes. TRITON:
/// FlashAttention written in Triton (flash-attention's flash_attn_triton.py, which llm-foundry's MPT runs as
/// attn_impl: triton), slower per FLOP (workload::attention_kernel_time).
enum class FlashAttentionKernel { FLASH2, TRITON };

/// The program that starts the node's ranks, which decides the OpenMP threads each rank's host work runs on
/// (OMP_NUM_THREADS; CPU Adam's `#pragma omp parallel for`, csrc/includes/cpu_adam.h Step_AVX; torch's CPU
/// kernels). DEEPSPEED: the `deepspeed` launcher without --bind_cores_to_rank sets nothing (deepspeed/launcher/
/// launch.py l.246-248 @v0.19.5), so each rank runs OpenMP's default, a thread per CPU it may use.
/// DEEPSPEED_BIND_CORES: --bind_cores_to_rank gives each rank physical cores / ranks cores (numactl -C) and sets
/// OMP_NUM_THREADS to that count (launch.py l.246-248; deepspeed/utils/numa.py get_numactl_cmd l.117-119).
/// TORCHRUN: torch.distributed.run sets OMP_NUM_THREADS=1 when it starts more than one process per node and the
/// variable is unset, with a warning (config_from_args). ACCELERATE: `accelerate launch` with DeepSpeed on one node
/// runs torch.distributed.run, so torchrun's rule (commands/launch.py deepspeed_launcher), and its multi-GPU
/// launcher sets OMP_NUM_THREADS to --num_cpu_threads_per_process, default 1 (utils/launch.py prepare_multi_gpu_env).
enum class Launcher { DEEPSPEED, DEEPSPEED_BIND_CORES, TORCHRUN, ACCELERATE };

/// What activation checkpointing recomputes (Megatron-LM `--recompute-granularity`; Korthikanti et al. 2022,
/// arXiv 2205.05198 §4.2). FULL: each transformer layer keeps only its input and re-runs its whole forward in
/// backward. SELECTIVE: each layer keeps everything except the attention core's s×s tensors (scores, softmax,
/// dropout), which are recomputed from the saved Q, K, V; with FlashAttention nothing of that size is saved, so
/// selective recomputes nothing.
enum class RecomputeGranularity { FULL, SELECTIVE };

/// Which torch.distributed process groups ZeRO's collectives run on (training.process_groups); each group is its own
/// NCCL communicator, whose collectives run one after another in issue order (program.hpp "Semantics").
/// DEEPSPEED: DeepSpeed's defaults in a script that passes no mpu (Hugging Face, a plain DeepSpeed loop): zero.Init
/// partitions the parameters on the world group (partition_parameters.py l.745-748 @v0.9.5), the engine reduces on a
/// clone of it (utils/groups.py _clone_world_group, l.304-327 @v0.9.5; engine.py l.1077): stage 3 gathers on the
/// first and reduce-scatters on the second before v0.19.3, on the first (the parameter's group) from v0.19.3
/// (stage3.py _get_param_partition_group, l.595-596 @v0.19.5); stages 0-2 use the engine's group only.
/// MPU: the launcher passes one data-parallel group to zero.Init and deepspeed.initialize (Megatron-DeepSpeed's
/// pretrain_gpt.py `zero.Init(data_parallel_group=mpu.get_data_parallel_group())` and megatron/training.py
/// `deepspeed.initialize(mpu=mpu)` with --no-pipeline-parallel), so every ZeRO collective shares one communicator.
enum class ProcessGroups { DEEPSPEED, MPU };

/// Training loop settings. micro_batch = b (sequences per micro-step per rank), seq_len = s.
struct TrainingSpec {
  std::int64_t micro_batch = 1;
  std::int64_t seq_len = 1024;
  std::int64_t grad_accum = 1; ///< GA: micro-steps per optimizer step
  /// DeepSpeed's train_batch_size: sequences per optimizer step over all GPUs (micro_batch x GA x N_d); the loader
  /// derives GA (or the micro-batch) from it; 0: not given.
  std::int64_t train_batch_size = 0;
  Precision precision = Precision::BF16;
  OptimizerKind optimizer = OptimizerKind::ADAMW;
  OptimizerImpl optimizer_impl = OptimizerImpl::FUSED; ///< GPU step implementation (see OptimizerImpl)
  LossImpl loss_impl = LossImpl::HF; ///< language-model loss implementation (see LossImpl)
  ProcessGroups process_groups = ProcessGroups::DEEPSPEED; ///< ZeRO's communicators (see ProcessGroups)
  /// DeepSpeed's top-level `gradient_clipping` (ds_config, default 0.0; HF Trainer's "auto" is its max_grad_norm,
  /// 1.0): the max global gradient L2 norm, 0 = no clipping. The optimizers' unscale_and_clip_grads then fold the
  /// clip coefficient ((norm / loss_scale + 1e-6) / clip, at least 1) into the unscale (stage_1_and_2.py, stage3.py,
  /// fp16/fused_optimizer.py); what that costs depends on the stage and release (sim/zero/stage2_generator.hpp
  /// stage12_clip_waits; nothing in stage 3 or mixed-precision stage 0; fp32 stage 0 runs DeepSpeed's
  /// clip_grad_norm_ only when clipping, stage0_generator.cpp).
  double gradient_clipping = 0.0;
  /// `training.skipped_steps`: the first this many simulated steps overflow under fp16 dynamic loss scaling and
  /// DeepSpeed skips their optimizer step (0 = none). Such a step runs forward, backward and the gradient
  /// reduction as usual, then the overflow check (and its flag all-reduce), halves the loss scale and zeroes the
  /// grads (zero_grad(set_to_none=True); stage 1/2 also drop averaged_gradients): no norm, no optimizer step, no
  /// parameter all-gather; stage 3 returns before _post_step, so the persistent params are not all-gathered
  /// (stage_1_and_2.py step, stage3.py _overflow_check_and_loss_scale_update, fp16/fused_optimizer.py step). An fp16
  /// block without loss-scale keys starts at 2^32 until DeepSpeed 0.17.1 (fp16/loss_scaler.py DynamicLossScaler()
  /// defaults, CreateLossScaler with dynamic_loss_args None) and halves it per overflow (hysteresis 1), so a run's
  /// first steps overflow. fp16 only; not with optimizer offload.
  std::int64_t skipped_steps = 0;
  KernelImpl kernel_impl = KernelImpl::HF; ///< eager module ops or fused kernels (see KernelImpl)
  /// The FlashAttention implementation (see FlashAttentionKernel); only read with flash_attention.
  FlashAttentionKernel flash_attention_kernel = FlashAttentionKernel::FLASH2;
  /// The training loop reads the loss on the host after every micro-step (the host waits for the compute stream):
  /// HF Trainer's logging_nan_inf_filter (default true) evaluates `torch.isnan(tr_loss_step) or
  /// torch.isinf(tr_loss_step)` in Python after each training_step (transformers trainer.py), and most hand-written
  /// loops print loss.item(). False: a loop that never reads a GPU value per step.
  bool loss_sync = true;
  bool activation_checkpointing = false; ///< recompute in backward (what: recompute_granularity)
  RecomputeGranularity recompute_granularity = RecomputeGranularity::FULL;
  /// DeepSpeed activation checkpointing's cpu_checkpointing (ds_config activation_checkpointing.cpu_checkpointing,
  /// deepspeed.checkpointing.configure(checkpoint_in_cpu=...)): each checkpointed block's input is copied to host
  /// memory in its forward and back before its recompute (deepspeed/runtime/activation_checkpointing/
  /// checkpointing.py CheckpointFunction, through v0.19.5: `.to('cpu')` / `.to(cuda)`, blocking, pageable). Needs
  /// full activation_checkpointing; applies to models that checkpoint through deepspeed.checkpointing (Megatron-
  /// DeepSpeed), not to transformers' gradient checkpointing.
  bool cpu_checkpointing = false;
  /// What starts the ranks (Launcher): sets each rank's OpenMP threads unless omp_num_threads is given.
  Launcher launcher = Launcher::DEEPSPEED;
  /// OMP_NUM_THREADS as set in the environment before launch, threads per rank; 0 = not set (the launcher decides).
  /// torchrun and accelerate keep a value set; deepspeed-bind-cores overwrites it (the loader rejects both together).
  int omp_num_threads = 0;
  bool flash_attention = false; ///< drops the 5as^2b attention-score term (Dao 2022)
  /// With precision FP32: PyTorch runs fp32 matmuls on TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32 =
  /// True, HF Trainer --tf32; default False since PyTorch 1.12), at GpuSpec::peak_tf32. Ignored in fp16/bf16.
  bool tf32 = false;
  /// Fraction f in (0, 1] of the parameters that train (LoRA/PEFT-style): the ZeRO generators split every tensor into
  /// a frozen part and a trainable adapter of f x numel; only adapters get grads, fp32 master and Adam states
  /// (sim/zero/generator_common.hpp; reference/calibration.md §4.4).
  double trainable_fraction = 1.0;
  /// LoRA as PEFT builds it (training.lora_rank, sim/scenario/lora.hpp): rank r of the adapters, 0 = no LoRA. Each
  /// targeted block linear (in × out) gets trainable lora_A (r × in) and lora_B (out × r); every base weight and
  /// bias is frozen. Excludes trainable_fraction < 1.
  std::int64_t lora_rank = 0;
  /// PEFT target_modules: module names matched as PEFT does (lora_target_matches); resolved by the loader to the
  /// family's PEFT default (lora_default_targets) when not given.
  std::vector<std::string> lora_targets;
  /// PEFT lora_dropout p in [0, 1): with p > 0 each adapter runs its own nn.Dropout on the input and saves its
  /// output and mask for backward; with 0 (PEFT's default, nn.Identity) lora_A reads the base layer's input.
  double lora_dropout = 0.0;
  /// `training.torch_version`: the PyTorch release, {major, minor}, where releases differ in memory behaviour.
  /// Before 2.8 ProcessGroupNCCL runs a collective on its own NCCL stream and record_stream()s the input of an
  /// all_reduce / reduce there, so the caching allocator takes the block back only once the collective has run on the
  /// GPU (pytorch#148590, relanded as #150398 for 2.8 after #150352 kept it out of 2.7; all_gather_into_tensor and
  /// reduce_scatter_tensor called synchronously are exempt from 2.2, #111431). From 2.8 a synchronous collective runs
  /// on the caller's stream with no record_stream: its input's block is reusable in that stream's order at once.
  std::array<int, 2> torch_version{2, 8};
  std::string torch_version_text = "2.8"; ///< as written; parsed into torch_version by the loader
  /// `training.torch_nccl_avoid_record_streams`: the run set TORCH_NCCL_AVOID_RECORD_STREAMS=1 (torch 2.1 to 2.7; the
  /// loader refuses it before 2.1). ProcessGroupNCCL then stashes a collective's tensors instead of record_stream()ing
  /// them and drops the stash in work.wait() right after making the current stream wait for the NCCL stream
  /// (WorkNCCL::synchronizeStream(s)); a synchronous collective's wait() follows its issue at once, so its input's
  /// block is reusable in the caller's stream order, as from 2.8. No effect from 2.8 (no record_stream at all).
  bool torch_nccl_avoid_record_streams = false;
  /// True when the simulated PyTorch release is older than major.minor.
  [[nodiscard]] bool torch_before(int major, int minor) const {
    return torch_version < std::array<int, 2>{major, minor};
  }
};

enum class OffloadDevice { NONE, CPU, NVME };

/// DeepSpeed `data_types.grad_accum_dtype` (deepspeed/runtime/engine.py get_data_types): the dtype gradients are
/// accumulated in; MODEL (unset) = the model's 16-bit dtype.
enum class GradAccumDtype { MODEL, FP32, FP16, BF16 };

/// DeepSpeed's top-level `communication_data_type` (deepspeed/runtime/config.py get_communication_data_type: fp16,
/// bf16 or fp32, case-insensitive; engine.py communication_data_type): the dtype gradients are reduced in; MODEL
/// (unset) = the model's 16-bit dtype (fp16 if fp16 is enabled, else bf16).
enum class CommDataType { MODEL, FP32, FP16, BF16 };

/// DeepSpeed `zero_optimization` settings, with DeepSpeed's names and code defaults
/// (deepspeed/runtime/zero/config.py; reference/zero_semantics.md §3.1). Sizes are in elements.
/// DeepSpeed's `aio` section (deepspeed/runtime/swap_tensor/constants.py, aio_config.py): how the async I/O
/// handle moves a ZeRO-Infinity swap to or from NVMe. Each of intra_op_parallelism threads keeps queue_depth
/// requests of block_size bytes in flight.
struct AioConfig {
  Bytes block_size{1'048'576};
  int queue_depth = 8;
  int intra_op_parallelism = 1; ///< threads per I/O operation (DeepSpeed < 0.14: `thread_count`)
  /// DeepSpeed's single_submit, overlap_events and use_gds: accepted, not modelled (the report notes other values).
  bool single_submit = false;
  bool overlap_events = true;
  bool use_gds = false;
  /// Bytes in flight on the device at once: block_size x queue_depth x intra_op_parallelism.
  [[nodiscard]] double inflight_bytes() const {
    return block_size.value() * static_cast<double>(queue_depth) * static_cast<double>(intra_op_parallelism);
  }
};

/// Pinned buffers an Adam optimizer sub-group holds while swapped in from NVMe: its fp32 params, exp_avg, exp_avg_sq
/// and one for its fp32 gradients (swap_tensor/optimizer_utils.py swap_in_optimizer_state: required_buffer_count =
/// num_tensors() + 1). DeepSpeed asserts when fewer are free.
inline constexpr int kAdamSwapBuffersPerSubGroup = 4;

struct ZeroConfig {
  int stage = 0;
  bool contiguous_gradients = true;
  bool reduce_scatter = true;
  Elements reduce_bucket_size = 500'000'000;
  Elements allgather_bucket_size = 500'000'000;
  std::optional<bool> overlap_comm; ///< unset: true for stage 3, false otherwise (config.py validator)
  bool use_multi_rank_bucket_allreduce = true;
  bool round_robin_gradients = false;
  Elements sub_group_size = 1'000'000'000;
  Elements stage3_prefetch_bucket_size = 50'000'000;
  Elements stage3_param_persistence_threshold = 100'000;
  /// Cap on the total full (unpartitioned) numel of persistent params per rank (DeepSpeed model_persistence_threshold,
  /// default sys.maxsize: no cap). parameter_offload.py mark_persistent_parameters walks module.named_parameters() in
  /// registration order and skips (continue, not break) a param that would take the running total past the cap.
  static constexpr Elements kNoPersistenceCap = std::numeric_limits<Elements>::max();
  Elements stage3_model_persistence_threshold = kNoPersistenceCap;
  Elements stage3_max_live_parameters = 1'000'000'000;
  Elements stage3_max_reuse_distance = 1'000'000'000;
  /// DeepSpeed use_all_reduce_for_fetch_params (partition_parameters.py _all_gather_coalesced): a fetch of more than
  /// one param fills a zeroed flat buffer with this rank's partitions and all-reduces it (about 2x the all-gather's
  /// bytes); the params view that buffer, which lives until all of them are released.
  bool stage3_use_all_reduce_for_fetch_params = false;
  /// DeepSpeed allgather_sequential (partition_parameters.py all_gather_coalesced -> _all_gather_sequential): one
  /// all-gather per param into its own padded buffer, no flat buffer or copies; the engine then sets
  /// prefetch_bucket_size to 1 (engine.py _configure_zero_optimizer), so a prefetch takes one param.
  bool stage3_allgather_sequential = false;
  OffloadDevice offload_optimizer = OffloadDevice::NONE;
  OffloadDevice offload_param = OffloadDevice::NONE;
  /// offload_param {buffer_count, buffer_size} (deepspeed/runtime/zero/offload_config.py, defaults 5 and 1e8): the
  /// pinned host buffers offload_param=nvme swaps through, buffer_size lp elements each
  /// (swap_tensor/partitioned_param_swapper.py). A fetched partition larger than buffer_size is an error there.
  int param_swap_buffer_count = 5;
  Elements param_swap_buffer_size = 100'000'000;
  /// offload_param.max_in_cpu (offload_config.py l.39 @v0.19.5, default 1e9, >= 0): with offload_param=nvme, the
  /// lp elements per rank stage3.py keeps in a pinned CPU flat buffer (_create_param_groups_fp16_flat_cpu_memory,
  /// l.808-831): min(this, the rank's trainable partition elements). The leading sub-groups that fit whole stay in
  /// it for good (AVAILABLE, final_location 'not-nvme'); the rest live on NVMe.
  Elements param_max_in_cpu = 1'000'000'000;
  /// offload_optimizer.buffer_count (default 4): pinned swap buffers of the largest sub-group each, fp32
  /// (swap_tensor/partitioned_optimizer_swapper.py via OptimizerSwapper).
  int optimizer_swap_buffer_count = 4;
  /// offload_optimizer.pipeline_read / pipeline_write (default false; deepspeed/runtime/zero/offload_config.py).
  /// Either one makes stage 3 use PipelinedOptimizerSwapper (stage3.py _configure_tensor_swapping): with
  /// pipeline_read the next sub-group's swap-in runs during this one's CPU step, with pipeline_write a sub-group's
  /// swap-out runs until the next sub-group's swap-out starts (swap_tensor/pipelined_optimizer_swapper.py).
  bool optimizer_pipeline_read = false;
  bool optimizer_pipeline_write = false;
  std::string deepspeed_config; ///< path of an imported ds_config.json, empty if none
  /// `data_types.grad_accum_dtype`. bf16 model + FP32 + stage 1 + no offload, or + stage 0 before DeepSpeed 0.18.5,
  /// selects DeepSpeed's BF16_Optimizer (engine.py _do_optimizer_sanity_check; reference/zero_semantics.md §3.2).
  /// MODEL is resolved by the loader: FP32 for bf16 at stage 0 before 0.17.6 (engine.py get_data_types).
  GradAccumDtype grad_accum_dtype = GradAccumDtype::MODEL;
  /// True when the scenario (file, ds_config or --set) wrote grad_accum_dtype, false when the loader filled in a
  /// release default (result.json's grad_accum_dtype_explicit).
  bool grad_accum_dtype_set = false;
  /// `communication_data_type` (a top-level ds_config key, kept here with the other gradient-reduction settings).
  /// Stage 0 and BF16_Optimizer (engine.py allreduce_bucket) and stage 1/2 (stage_1_and_2.py allreduce_bucket,
  /// gradient_reduction_w_predivide) cast each flattened gradient chunk to it with `.to()` before the all-reduce;
  /// stage 3 reduce-scatters in it and, from DeepSpeed 0.17.2, allocates its IPG bucket in it (stage3.py l.559-561
  /// @v0.17.2; the model dtype before, its grads cast at the reduction). The parameter
  /// all-gathers keep the model dtype.
  CommDataType communication_data_type = CommDataType::MODEL;
  /// True when the scenario wrote communication_data_type, false when it is MODEL or a release default the loader
  /// filled in (fp16 with ZeRO in DeepSpeed 0.5.8-0.8.x, fp32 for bf16 in 0.9.0-0.9.1; result.json's
  /// communication_data_type_explicit).
  bool communication_data_type_set = false;
  AioConfig aio; ///< NVMe swap I/O (offload to nvme)
  /// `zero.deepspeed_version`: the DeepSpeed release whose behaviour is simulated where releases differ, as
  /// {major, minor, patch}. The loader applies the config-level differences (use_multi_rank_bucket_allreduce from
  /// 0.12.4, stage 1's overlap_comm / contiguous_gradients from 0.13.0); the generators read deepspeed_before().
  std::array<int, 3> deepspeed_version{0, 19, 5};
  /// The newest release whose code zerosim's model follows: a later deepspeed_version behaves as this one.
  static constexpr std::array<int, 3> kNewestModelledRelease{0, 19, 5};
  std::string deepspeed_version_text = "0.19.5"; ///< as written; parsed into deepspeed_version by the loader

  /// `offload_optimizer.pin_memory` / `offload_param.pin_memory` as written; unset: the release's default, false
  /// before DeepSpeed 0.19.5 and true from it (deepspeed/runtime/zero/offload_config.py; PR #8207).
  std::optional<bool> offload_optimizer_pin_memory;
  std::optional<bool> offload_param_pin_memory;
  /// ds_config `zero_force_ds_cpu_optimizer` (default true): false lets a client optimizer other than
  /// DeepSpeedCPUAdam run with optimizer offload (engine.py _configure_optimizer). zerosim takes the host optimizer
  /// from training.optimizer_impl; this flag only lets the report point there.
  bool force_ds_cpu_optimizer = true;
  /// DeepSpeed's ThroughputTimer synchronizes the device (ds_config `timers.throughput.enabled` and
  /// `.synchronized`, both default true; deepspeed/utils/config.py DeepSpeedThroughputTimerConfig, PR #5363; before
  /// it the timer always synchronized): engine.forward calls its start() and engine.step() its stop()
  /// (engine.py l.2764, l.3475), each a get_accelerator().synchronize() from global step 2 on
  /// (deepspeed/utils/timer.py ThroughputTimer, start_step=2). False when the ds_config turns either off.
  bool throughput_timer_sync = true;
  /// The first global step at which DeepSpeed's ThroughputTimer synchronizes (deepspeed/utils/timer.py
  /// ThroughputTimer, start_step=2): the generators' syncs and the steady-state window start there.
  static constexpr int kThroughputTimerStartStep = 2;
  /// ZeRO++ and MiCS fields of an imported ds_config (zero_optimization) set to a value other than DeepSpeed's
  /// default, in file order as (field, value as written), e.g. ("zero_hpz_partition_size", "8"). DeepSpeed acts on
  /// them; zerosim does not model them (its stage 3 is plain ZeRO-3), and the report says so (analysis/summary.cpp).
  std::vector<std::pair<std::string, std::string>> unmodelled_ds_fields;
  /// Fields of the offload maps zerosim reads but does not model (scenario_loader.cpp offload_extra), set to a value
  /// other than DeepSpeed's default, as ("offload_optimizer.pipeline_read", "true"): the report notes them.
  std::vector<std::pair<std::string, std::string>> unmodelled_offload_fields;

  /// overlap_comm as DeepSpeed resolves it: the explicit value, else (stage == 3).
  [[nodiscard]] bool overlap_comm_effective() const { return overlap_comm.value_or(stage == 3); }
  /// offload_optimizer.pin_memory as DeepSpeed resolves it (see offload_optimizer_pin_memory).
  [[nodiscard]] bool pin_optimizer_effective() const {
    return offload_optimizer_pin_memory.value_or(!deepspeed_before(0, 19, 5));
  }
  /// offload_param.pin_memory as DeepSpeed resolves it (see offload_param_pin_memory).
  [[nodiscard]] bool pin_param_effective() const {
    return offload_param_pin_memory.value_or(!deepspeed_before(0, 19, 5));
  }
  /// Bytes per element of the gradient collectives: 4 for fp32, 2 for fp16 / bf16, `model_bytes` when unset.
  /// Bytes of one element of the gradient-accumulation dtype: `model_bytes` (the model's 16-bit size) when
  /// grad_accum_dtype is unset, 4 for fp32, 2 for fp16/bf16 (DeepSpeed gradient_accumulation_dtype; stage3.py sizes
  /// grad_partitions_flat_buffer with it).
  [[nodiscard]] double grad_accum_element_bytes(double model_bytes) const {
    return grad_accum_dtype == GradAccumDtype::MODEL  ? model_bytes
           : grad_accum_dtype == GradAccumDtype::FP32 ? 4.0
                                                      : 2.0;
  }
  [[nodiscard]] double comm_element_bytes(double model_bytes) const {
    return communication_data_type == CommDataType::MODEL  ? model_bytes
           : communication_data_type == CommDataType::FP32 ? 4.0
                                                           : 2.0;
  }
  /// True when communication_data_type is set to a dtype other than the model's `precision` (DeepSpeed then
  /// `.to()`s the gradients into a new tensor of that dtype).
  [[nodiscard]] bool comm_differs(Precision model) const {
    return (communication_data_type == CommDataType::FP32 && model != Precision::FP32) ||
           (communication_data_type == CommDataType::FP16 && model != Precision::FP16) ||
           (communication_data_type == CommDataType::BF16 && model != Precision::BF16);
  }
  /// grad_accum_dtype as DeepSpeed resolves it (engine.py get_data_types): the set value, else the model's 16-bit
  /// dtype. result.json records this, a value `--set zero.grad_accum_dtype=` takes back.
  [[nodiscard]] GradAccumDtype grad_accum_dtype_effective(Precision model) const {
    if (grad_accum_dtype != GradAccumDtype::MODEL)
      return grad_accum_dtype;
    return model == Precision::FP16   ? GradAccumDtype::FP16
           : model == Precision::FP32 ? GradAccumDtype::FP32
                                      : GradAccumDtype::BF16;
  }
  /// communication_data_type as DeepSpeed resolves it (engine.py communication_data_type): the set value, else the
  /// model's 16-bit dtype. result.json records this, a value `--set zero.communication_data_type=` takes back.
  [[nodiscard]] CommDataType communication_data_type_effective(Precision model) const {
    if (communication_data_type != CommDataType::MODEL)
      return communication_data_type;
    return model == Precision::FP16   ? CommDataType::FP16
           : model == Precision::FP32 ? CommDataType::FP32
                                      : CommDataType::BF16;
  }
  /// True when the simulated DeepSpeed release is older than major.minor.patch.
  [[nodiscard]] bool deepspeed_before(int major, int minor, int patch) const {
    return deepspeed_version < std::array<int, 3>{major, minor, patch};
  }
};

/// One GPU model from the catalog (topologies/gpus/*.yaml). Peaks are dense; GeForce cards use the
/// FP32-accumulate tensor peak (reference/hardware.md).
struct GpuSpec {
  /// What the reports call the card: the preset's name, plus the keys a scenario or --set changed, e.g.
  /// "a100-80gb (modified: memory=40GiB)" (scenario_loader.cpp name_changes).
  std::string name;
  /// The catalog preset the spec was read from (topologies/gpus/<preset>.yaml), unchanged by inline keys; "" when
  /// the spec was built in code.
  std::string preset;
  Bytes memory; ///< HBM / GDDR capacity
  /// The preset's `memory` before a scenario or --set changed it (0 when the spec was built in code): what the card
  /// exposes, for the note on a capacity typed in decimal GB (analysis/summary.cpp).
  Bytes preset_memory;
  FlopRate peak_lp; ///< dense fp16/bf16 tensor-core peak (used for MFU)
  FlopRate peak_fp32; ///< non-tensor fp32 peak
  /// Dense TF32 tensor-core peak (Ampere and later); 0 = the card has no TF32 tensor cores (Volta, Turing), so an
  /// fp32 run with training.tf32 runs at peak_fp32.
  FlopRate peak_tf32;
  double matmul_efficiency = 1; ///< achievable fraction of peak_lp for large GEMMs (MAMF tables)
  /// Achievable fraction of peak_lp inside fused attention kernels (FlashAttention); 0 = matmul_efficiency.
  double attention_efficiency = 0;
  ByteRate memory_bandwidth; ///< datasheet HBM/GDDR bandwidth
  double memory_efficiency = 1; ///< achievable fraction of memory_bandwidth for streaming kernels
  /// Streaming multiprocessors (AMD: compute units) that run GEMM tiles in waves (workload/gemm.hpp); 0 = not
  /// given: every GEMM at the large-GEMM rate, no tile or wave quantization.
  int sm_count = 0;
  /// CUDA compute capability (7.0 V100, 8.0 A100, 8.6 / 8.9 GeForce Ampere / Ada, 9.0 H100 / H200); 0 = not an
  /// NVIDIA GPU or not given. Picks the row of NCCL's bandwidth caps (collectives::phase_bandwidth_factor); 0: none.
  double compute_capability = 0;
  /// false: no NVLink or other GPU-to-GPU link besides PCIe (GeForce Ada); only checked against the node's links
  /// (analysis/summary.cpp notes a faster intra_node link), never used to price traffic.
  bool nvlink = true;
  /// false: no bf16 tensor cores (Volta and older: fp16 only); training.precision bf16 is then an input error, and
  /// an unset precision means fp16 on such a card (scenario_loader.cpp).
  bool bf16 = true;
  /// false: FlashAttention does not run on the card (FlashAttention 2 needs Ampere, Ada or Hopper, FlashAttention 1
  /// Turing or Ampere: Dao-AILab/flash-attention README); training.flash_attention true is then an input error.
  bool flash_attention = true;
  std::string source;
};

/// The host CPU of a node (topologies/cpus/*.yaml), all sockets together; used by the CPU-Adam model
/// (sim/zero/cpu_adam.hpp). A default-constructed CpuSpec (empty name) means "no CPU given".
struct CpuSpec {
  /// The preset's name plus the keys a scenario or --set changed, as GpuSpec::name.
  std::string name;
  /// The catalog preset the spec was read from (topologies/cpus/<preset>.yaml); "" when built in code.
  std::string preset;
  int cores = 0; ///< physical cores of the node (all sockets)
  /// The components of peak_fp32 (0: not given). base_clock: the all-core base clock; fp32_simd_lanes: fp32 lanes
  /// of one FMA pipe (AVX2 8, AVX-512 16; Zen 4 issues AVX-512 on 256-bit pipes: 8); fma_units: FMA pipes per core.
  Frequency base_clock;
  int fp32_simd_lanes = 0;
  int fma_units = 0;
  /// Node fp32 SIMD peak. The loader derives it as derived_peak_fp32() when the components are given, or takes the
  /// cpu.peak_fp32 key (an explicit override; scenario_loader.cpp resolve_cpu_peak).
  FlopRate peak_fp32;
  ByteRate memory_bandwidth; ///< DRAM channels x transfer rate x 8 B, all sockets
  /// NUMA nodes of the DRAM (sockets x nodes per socket as the BIOS exposes them), each with memory_bandwidth /
  /// numa_nodes. Page-locked host buffers sit on one node (sim/zero/cpu_adam.hpp pinned_byte_weight).
  int numa_nodes = 1;
  /// Rate of one CPU thread's memcpy between pageable memory and the CUDA driver's pinned staging buffer, which
  /// adds to copies from or to pageable host memory (program::Copy::pageable). Default 15 GB/s [assumption: a
  /// DDR4 server core's memcpy; the CPU presets carry their own].
  ByteRate pageable_copy_bandwidth{15e9};
  /// Bytes per second one rank's process first-touches in a freshly allocated host tensor (the kernel's page faults
  /// and zeroing): torch's CPU allocator does not cache, so a large temporary (torch.optim's Adam denominators on
  /// the CPU, a dtype cast into a new tensor) faults in every page at every step. Default 10.74 GB/s [derived:
  /// ZeRO-Offload Table 4, PyTorch CPU Adam on 1B params in 1.39 s on the DGX-2 host, less its 88 B of passes at
  /// CPU Adam's per-byte rate, 0.645 s, leaves 0.745 s for its 8 B of fresh temporaries; sim/zero/cpu_adam.hpp].
  ByteRate page_fault_bandwidth{10.74e9};
  /// Bytes of DRAM traffic one core moves per second on its own in a streaming loop, bytes read plus bytes written
  /// as STREAM counts them; 0 = not given. A read-only run's rate counts as is, a memcpy's copied rate twice; each
  /// preset says which it used. [assumption] CPU Adam's mix of reads and writes (30 B) moves as many bytes per
  /// second as the measured stream. Bounds a rank that runs fewer threads than its share of the cores
  /// (sim/zero/cpu_adam.hpp cpu_adam_seconds_per_param); one core cannot draw the node's DRAM bandwidth (concurrency
  /// / latency: Little's law).
  ByteRate core_memory_bandwidth;
  std::string source;
};

/// cores x base_clock x fp32_simd_lanes x fma_units x 2 FLOP (an FMA is two) of `cpu`, in FLOP/s; 0 when a component
/// is not given. The DeepSpeedCPUAdam loop is OpenMP over the cores, each running SIMD_WIDTH-lane FMAs
/// (csrc/includes/simd.h, csrc/adam/cpu_adam_impl.cpp).
[[nodiscard]] inline FlopRate derived_peak_fp32(const CpuSpec& cpu) {
  if (cpu.cores <= 0 || !(cpu.base_clock.value() > 0) || cpu.fp32_simd_lanes <= 0 || cpu.fma_units <= 0)
    return FlopRate(0);
  return FlopRate(static_cast<double>(cpu.cores) * cpu.base_clock.value() * cpu.fp32_simd_lanes * cpu.fma_units * 2);
}

/// OpenMP threads each of the node's `ranks_per_node` ranks runs its host work on, as `training` launches them:
/// deepspeed-bind-cores: cpu.cores / ranks_per_node, rounded down (deepspeed/utils/numa.py get_numactl_cmd l.117-119
/// @v0.19.5: physical cores // local processes; launch.py l.248 exports it, over any OMP_NUM_THREADS); otherwise
/// training.omp_num_threads when given; torchrun and accelerate: 1 when ranks_per_node > 1 (torch/distributed/run.py
/// config_from_args); else 0, OpenMP's default: a thread per CPU the process may run on, at least the cores, so the
/// node's ranks share every core.
[[nodiscard]] inline int cpu_threads_per_rank(const TrainingSpec& training, const CpuSpec& cpu, int ranks_per_node) {
  if (training.launcher == Launcher::DEEPSPEED_BIND_CORES && cpu.cores > 0 && ranks_per_node > 0)
    return cpu.cores / ranks_per_node;
  if (training.omp_num_threads > 0)
    return training.omp_num_threads;
  const bool one_per_rank = training.launcher == Launcher::TORCHRUN || training.launcher == Launcher::ACCELERATE;
  return one_per_rank && ranks_per_node > 1 ? 1 : 0;
}

/// The OpenMP threads per rank (cpu_threads_per_rank) when they are fewer than a rank's share of the cores, cpu.cores
/// / ranks_per_node: the rank's host work is thread-limited (sim/zero/cpu_adam.hpp: c cores and c x
/// cpu.core_memory_bandwidth), e.g. torchrun's 1 thread per rank. 0 when the share is used (or cpu.cores is not
/// given). What set them: cpu_threads_setter.
[[nodiscard]] inline int cpu_limited_threads_per_rank(const TrainingSpec& training, const CpuSpec& cpu,
                                                      int ranks_per_node) {
  const int threads = cpu_threads_per_rank(training, cpu, ranks_per_node);
  if (threads <= 0 || cpu.cores <= 0 || ranks_per_node <= 0)
    return 0;
  return static_cast<double>(threads) < static_cast<double>(cpu.cores) / ranks_per_node ? threads : 0;
}

/// What sets cpu_threads_per_rank, as a person names it: "OMP_NUM_THREADS" when training.omp_num_threads is given
/// (and the launcher keeps it), else the launcher ("torchrun", "accelerate", "deepspeed-bind-cores", "deepspeed").
[[nodiscard]] const char* cpu_threads_setter(const TrainingSpec& training);

/// Cores' worth of CPU one of `ranks_per_node` ranks computes with when each runs `threads_per_rank` OpenMP threads
/// (cpu_threads_per_rank; 0 = OpenMP's default, every CPU): min(threads, cores / ranks). The ranks step together, so
/// cores / ranks is a rank's share whether its threads are bound (numactl) or time-share all cores. Returns
/// cores / ranks for 0 threads, and 0 when cpu.cores is not given.
[[nodiscard]] inline double cpu_cores_per_rank(const CpuSpec& cpu, int ranks_per_node, int threads_per_rank) {
  if (cpu.cores <= 0 || ranks_per_node <= 0)
    return 0.0;
  const double share = static_cast<double>(cpu.cores) / ranks_per_node;
  return threads_per_rank > 0 ? std::min(static_cast<double>(threads_per_rank), share) : share;
}

/// A link class of the topology: bandwidth per direction and one-hop latency.
struct LinkSpec {
  ByteRate bandwidth;
  Seconds latency;
  std::string source;
  /// Achievable fraction of `bandwidth` for payload (e.g. NCCL src/graph/topo.h counts 20.6 of 25 GB/s per NVLink4
  /// link); the platform builder gives the SimGrid link bandwidth x efficiency. 1 = the datasheet figure.
  double efficiency = 1.0;
};

/// InfiniBand payload per byte on the wire for NCCL's RDMA writes: a 4096-B MTU packet carries 4096 B of data behind
/// LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 B of headers (IBTA spec vol. 1: a middle packet of an RDMA WRITE; the RETH's
/// 16 B and the immediate's 4 B come once per message, under 0.01 % of NCCL's 512 KiB Simple steps), so
/// 4096 / 4122 = 0.99369 of the line rate, which is the data rate after the link's encoding (HDR: 4 x 50 Gb/s). The
/// loader's default for cluster.nic.efficiency. Not included: the NIC's PCIe link (Gen4 x16 behind a 200 Gb/s NIC,
/// Gen5 x16 behind a 400 Gb/s one: not the bottleneck, docs/collectives.md) and the rest of what ib_write_bw loses
/// (it reports about 0.96-0.97 of the line rate on EDR/HDR, which no closed form here accounts for).
inline constexpr double kInfinibandPayloadEfficiency = 4096.0 / (4096.0 + 8.0 + 12.0 + 4.0 + 2.0);

/// The node-local NVMe storage ZeRO-Infinity swaps to (offload_optimizer / offload_param device nvme), all drives
/// of the node together (DeepSpeed stripes one nvme_path; a RAID-0 array of the node's drives is assumed). A SimGrid
/// Disk on the node's CPU host; its bandwidth is shared by the node's ranks. Bandwidth 0 = no NVMe.
struct NvmeSpec {
  /// Whose figures these are: the cluster preset's name plus the cluster.nvme keys the scenario or --set changed, as
  /// GpuSpec::name ("dgx-a100", "dgx-a100 (modified: read_bandwidth=6.8GBps)"); "" when built in code.
  std::string name;
  ByteRate read_bandwidth;
  ByteRate write_bandwidth;
  /// Drives striped into the bandwidths above (cluster.nvme.drives): reported, not simulated (the bandwidths are
  /// the aggregate). 0 = not stated.
  int drives = 0;
  /// Device latency of one round of I/O requests: a swap of S bytes pays it ⌈S / zero.aio in-flight bytes⌉ times.
  Seconds latency;
  std::string source;
};

/// Network between nodes (topologies/builder/platform_builder.hpp, docs/collectives.md "Fabrics"): SINGLE_SWITCH
/// every node on one switch; FAT_TREE a 2- or 3-level fat tree (fabric_levels), optionally oversubscribed at the
/// leaf switches (fabric_oversubscription); TORUS a torus_dimensions-D torus of direct node-to-node links;
/// DRAGONFLY groups of all-to-all routers joined by one global link per group pair (Kim et al. 2008, ISCA);
/// RAIL a rail-optimized fabric: NIC i of every node on rail switch i, rail switches optionally joined by a spine
/// (NVIDIA DGX SuperPOD reference architecture; every GPU reaches the fabric through its own NIC).
enum class FabricKind { NONE, SINGLE_SWITCH, FAT_TREE, TORUS, DRAGONFLY, RAIL };

/// GPU-to-GPU wiring inside a node (topologies/builder/platform_builder.hpp, docs/collectives.md "Full-mesh nodes"):
/// SWITCH a star through the node switch (NVSwitch: each GPU one intra_node link into it); MESH a full mesh, one
/// dedicated split-duplex link of intra_node bandwidth per GPU pair (AMD MI300X Infinity Fabric / xGMI; p2p and
/// one node only).
enum class IntraNodeTopology { SWITCH, MESH };

/// The cluster: `nodes` identical nodes of `gpus_per_node` GPUs; NVSwitch/PCIe inside a node, NICs between.
struct ClusterSpec {
  std::string topology; ///< preset name (topologies/clusters/*.yaml)
  /// The preset's name plus the cluster keys the scenario or --set changed (GPU, CPU, nodes and topology left out),
  /// as GpuSpec::name: "dgx-a100 (modified: gpus_per_node=4, nics_per_node=1)"; "" when built in code.
  std::string name;
  int nodes = 1;
  int gpus_per_node = 1;
  GpuSpec gpu;
  CpuSpec cpu; ///< host CPU of every node (cluster.cpu preset); needed by optimizer offload
  NvmeSpec nvme; ///< node-local NVMe (cluster.nvme); needed by offload to nvme
  /// Per-GPU link into the node's switch (NVLink/NVSwitch, or PCIe when no P2P); on a mesh, the link of each GPU pair.
  LinkSpec intra_node;
  IntraNodeTopology intra_node_topology = IntraNodeTopology::SWITCH; ///< star through the node switch, or full mesh
  LinkSpec host_link; ///< per-GPU PCIe link to host memory (offload traffic)
  LinkSpec nic; ///< per-NIC link into the fabric
  /// false: no GPU peer-to-peer (e.g. GeForce cards on PCIe): GPU -> GPU traffic is staged through host memory,
  /// crossing the sender's host_link up, the shared host_bridge, and the receiver's host_link down.
  bool p2p = true;
  /// The host path every host-staged GPU -> GPU transfer shares (CPU root complex and host memory), one shared
  /// link for both directions; used when p2p is false (bandwidth 0: not modelled, only the PCIe links count).
  LinkSpec host_bridge;
  /// GPUs behind one PCIe switch (topologies/builder/platform_builder.hpp): GPU i hangs from switch
  /// i / gpus_per_pcie_switch over its host_link, and the switch reaches the CPU over ONE split-duplex
  /// pcie_switch_uplink shared by its GPUs (DGX-2, DGX A100: 2). 1 = no switch level (each host_link goes straight to
  /// the CPU). Must divide gpus_per_node, or exceed it (one partly filled switch holds all GPUs).
  int gpus_per_pcie_switch = 1;
  /// Uplink of each PCIe switch to the CPU root complex, per direction; used when gpus_per_pcie_switch > 1. The
  /// loader fills every field not given from host_link; a bandwidth of 0 (hand-built specs) means "host_link's
  /// values" to the builder.
  LinkSpec pcie_switch_uplink;
  int nics_per_node = 0;
  FabricKind fabric = FabricKind::NONE;
  int fat_tree_leaf_radix = 0; ///< nodes per leaf switch (0: chosen by the builder)
  int fabric_levels = 2; ///< fat tree: switch levels, 2 (leaf + spine) or 3 (leaf + aggregation + core)
  /// fat tree: leaf switch downlinks per uplink (1 = non-blocking; 2 = 2:1, half as many uplinks as nodes below)
  double fabric_oversubscription = 1.0;
  int torus_dimensions = 2; ///< torus: number of dimensions (nodes factored into near-equal sizes)
  /// true: every GPU reaches the fabric through its own NIC, GPU i -> NIC i / (gpus_per_node / nics_per_node) over
  /// its PCIe switch (DGX A100/H100, DGX-2: 8 NICs); false: one node gateway carrying all NICs. Always true on RAIL.
  bool nic_per_gpu = false;
  bool rail_spine = true; ///< rail fabric: rail switches joined by a spine (cross-rail traffic); false: none
  /// NVSwitch with NVLink SHARP (NVSwitch-3: H100/H200 HGX/DGX): enables NCCL's NVLS all-reduce (and
  /// all-gather / reduce-scatter, which its tuner prices below the ring) on one node.
  bool nvls = false;
  Bytes host_memory; ///< host RAM per node, 0 = unlimited
  /// Collective algorithm: "auto" (NCCL's tuner picks by size; sim/collectives/nccl_tuning.hpp) or a registry name
  /// ("ring", "tree", "hierarchical", "nvls", "direct").
  std::string collective_algorithm = "auto";
  /// Collective protocol: "auto", "ll", "ll128", "simple", or "none" (ideal alpha-beta: no launch latency, full
  /// link bandwidth, the platform's hop latencies).
  std::string collective_protocol = "auto";
  /// NCCL channels of the data-parallel communicator; -1 = auto (nccl_channels_effective). NCCL runs a collective as
  /// one CTA per channel, and a CTA holds its SM from the kernel's launch to its end (NCCL_MIN_CTAS / NCCL_MAX_CTAS
  /// bound the channel count; NCCL documentation, "Environment Variables"), and holds about 18 MiB of device memory
  /// per channel for the ring's buffers and arrays (sim/engine/memory_pool.hpp nccl_buffer_bytes).
  int nccl_channels = -1;
  std::string source;

  [[nodiscard]] int world_size() const { return nodes * gpus_per_node; }
  /// The channels NCCL uses: 0 for a single rank (no communicator); nccl_channels when set; else 2 when the
  /// intra-node link is PCIe-class (<= 64 GB/s per direction, PCIe 5.0 x16) and 16 when it is NVLink / NVSwitch.
  /// The auto values are an assumption, not a measurement: NCCL's topology search picks 2-32 by the links it finds
  /// (NVIDIA/nccl issue #713: 4 and 6 on two 4-GPU NVLink boxes; 24 CTAs for an all-gather on an H100, NVIDIA
  /// developer forum thread 337991).
  [[nodiscard]] int nccl_channels_effective() const {
    if (world_size() <= 1)
      return 0;
    if (nccl_channels >= 0)
      return nccl_channels;
    return intra_node.bandwidth.value() <= 64e9 ? 2 : 16;
  }
};

/// Network fidelity of collectives (DESIGN.md "collectives/"): FLOW one aggregated flow per rank per phase;
/// ANALYTIC the alpha-beta closed form (no network events); CHUNK every algorithm step is a message (teaching,
/// N <= 256; docs/collectives.md).
enum class Fidelity { FLOW, ANALYTIC, CHUNK };
enum class OomPolicy { STOP, CONTINUE };
/// Rank folding: simulate one representative group of symmetric data-parallel ranks instead of all of them
/// (DESIGN.md "Scale"). AUTO folds when the cluster has more than two nodes.
enum class FoldPolicy { AUTO, ON, OFF };

/// The host (Python) thread that issues a rank's GPU work (sim/zero/generator_common.hpp "Host thread"). Each cost
/// is host time; 0 s everywhere turns the host model off (the GPU streams then run back to back, as without it).
struct HostSpec {
  /// PyTorch eager per-op overhead: Python call + dispatcher + autograd recording + cudaLaunchKernel, per ATen op.
  /// 10 us: "~5-25 us of CPU-side work per op" (Python ~1 us, pybind11 ~1 us, autograd ~1-3 us, dispatcher ~1-2 us,
  /// backend ~1-5 us, cudaLaunchKernel ~1-3 us; "From PyTorch op to kernel launch",
  /// https://jiahuanglin.xyz/all_lessons/gpu_kernel_serving/18_pytorch_to_kernel.html); the overhead-bound regime
  /// of eager PyTorch: H. He, "Making Deep Learning Go Brrrr From First Principles", 2022,
  /// https://horace.io/brrr_intro.html, "Overhead".
  Seconds op_launch = Seconds(10e-6);
  /// One DeepSpeed module hook invocation (ZeRO-3 pre/post forward/backward hook: fetch_sub_module /
  /// release_sub_module bookkeeping, trace step, profiler events). 200 us [derived, session 9]: DeepSpeedExamples
  /// training/bf16_master_weight (README @6a3d817, DeepSpeed ~0.18, 4 x H100, a 6.86B 32-block GPT at micro-batch 1 x
  /// 512 with checkpointing and stage3_param_persistence_threshold 0) measures 0.6016 s per step, where the GPU
  /// computes for 0.05 s; zerosim reproduces it with 4.1x the earlier defaults (50 us per module hook, 10 us per
  /// param, from DeepSpeed#1174 / PR #1188 of 2021: BERT 5.1B on 8 x A100, ZeRO-3 forward 270 ms vs ZeRO-2 60 ms,
  /// ~155 us per module forward), rounded to 4x. Checked, not fitted, on DeepSpeed's own autotuning example
  /// (DeepSpeedExamples@127c7a1 gpt2-xl, 16 V100): stage 3 / stage 1 step 2.79 simulated vs 3.12 measured (it was
  /// 1.16 with the 2021 values). That run is of November 2021 (DeepSpeed 0.5.6-0.5.7, DeepSpeedExamples 2467552b), so
  /// hooks this heavy are not only a later release's: DeepSpeed#1174's 2021 figure is a BERT forward on A100, not a
  /// step. Later changes moved the cost both ways (PR #6694 "fetch/release loop time is excessively long", PR #6649
  /// -40% host time from fewer hooks). docs/validation.md gaps 3 and 12.
  Seconds module_hook = Seconds(200e-6);
  /// Per parameter tensor and per hook that touches it: ZeRO-3 fetch or release of one param (status, partition,
  /// record_stream, narrow/cat), or one ZeRO-1/2/3 gradient hook (reduce_ready_partitions_and_remove_grads /
  /// reduce_partition_and_remove_grads). 40 us [derived]: the same 4x of the 2021 derivation's 10 us (the remainder
  /// of its 155 us per module after two module hooks); DeepSpeed PR #7886 shows per-hook Python work at this scale
  /// (an O(n) count added to every ZeRO-2 gradient hook of a 147-tensor, 24-layer model raised the step from 50.5 to
  /// 126.5 ms on 8xH100).
  Seconds param_hook = Seconds(40e-6);
  /// Kernels a CUDA stream holds queued but not yet finished before cudaLaunchKernel blocks the host thread: "about
  /// 1000" per stream, measured (a host launching 10,000 short kernels into one stream blocks after ~1000 of them, and
  /// each of 3 streams takes ~1000; NVIDIA developer forums t/68937 and Stack Overflow q/53970187, 2018), not settable
  /// (cudaLimitDevRuntimePendingLaunchCount governs device-side launches only). 1024 [assumption: the power of two
  /// nearest the measured ~1000]. It bounds how far the Python thread runs ahead of the GPU; 0 = unbounded.
  int launch_queue = 1024;

  /// True when any cost is > 0.
  [[nodiscard]] bool enabled() const {
    return op_launch.value() > 0 || module_hook.value() > 0 || param_hook.value() > 0;
  }
  /// All costs 0: no host model.
  [[nodiscard]] static HostSpec none() { return HostSpec{Seconds(0), Seconds(0), Seconds(0)}; }
};

struct SimulationSpec {
  int steps = 2; ///< optimizer steps simulated; step 1 is warm-up, the rest steady state
  Fidelity fidelity = Fidelity::FLOW;
  OomPolicy on_oom = OomPolicy::STOP; ///< CONTINUE records the OOM and runs on as if memory were unlimited
  FoldPolicy fold = FoldPolicy::AUTO;
  /// Device memory outside PyTorch's allocator per GPU for the CUDA context and kernel images: 287,047,680 B with
  /// lazy module loading (PyTorch PR #86509; reference/zero_semantics.md §6, §7 item 32).
  Bytes cuda_context = Bytes(287'047'680.0);
  /// PyTorch's PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (sim/engine/caching_allocator.hpp).
  bool expandable_segments = false;
  HostSpec host; ///< host-thread costs (simulation.host_*)
};

struct OutputSpec {
  std::string dir; ///< output directory; empty: out/<scenario name>
  bool result_json = true;
  bool trace_json = true;
  bool memory_csv = true;
  int trace_ranks = 1; ///< ranks 0..n-1 get full timelines in trace.json / memory.csv
  /// Optimizer steps 0..n-1 kept in trace.json / memory.csv; 0: all. 3 by default: the warm-up step and two steady
  /// ones, so a long run (40 steps for a steady mean) does not write gigabytes of timeline.
  int trace_steps = 3;
};

/// A whole scenario. `compare` lists variants: each is a set of dotted-key overrides applied to this scenario
/// (e.g. {"zero.stage": "2"}), simulated separately and printed side by side.
struct Scenario {
  std::string name;
  std::string description;
  std::string file; ///< the YAML it was loaded from
  ModelSpec model;
  TrainingSpec training;
  ZeroConfig zero;
  ClusterSpec cluster;
  SimulationSpec simulation;
  OutputSpec outputs;
  std::string compare_key; ///< dotted key varied by `compare:`, empty if none
  std::vector<std::string> compare_values; ///< its values, as written
  /// What importing a ds_config decided that its reader should know, one sentence each, in the order decided: a
  /// block DeepSpeed accepts but that acts on nothing here (activation_checkpointing.cpu_checkpointing without full
  /// checkpointing), what fp16/bf16 "auto" was simulated as (scenario_loader.cpp). The report lists them as notes
  /// (analysis/summary.cpp).
  std::vector<std::string> import_notes;
};

[[nodiscard]] const char* to_string(ModelFamily);
[[nodiscard]] const char* to_string(AttentionBias);
[[nodiscard]] const char* to_string(Activation);
[[nodiscard]] const char* to_string(KernelImpl);
[[nodiscard]] const char* to_string(FlashAttentionKernel);
/// The training.launcher value ("deepspeed", "deepspeed-bind-cores", "torchrun", "accelerate").
[[nodiscard]] const char* to_string(Launcher);
[[nodiscard]] const char* to_string(Precision);
[[nodiscard]] const char* to_string(OptimizerKind);
[[nodiscard]] const char* to_string(OffloadDevice);
/// "fp32", "fp16", "bf16" as zero.grad_accum_dtype takes them; "model" for MODEL (unset), which no key takes: print
/// ZeroConfig::grad_accum_dtype_effective() where a user reads it.
[[nodiscard]] const char* to_string(GradAccumDtype);
/// "fp32", "fp16", "bf16" as zero.communication_data_type takes them; "model" for MODEL (unset), which no key takes:
/// print ZeroConfig::communication_data_type_effective() where a user reads it.
[[nodiscard]] const char* to_string(CommDataType);
[[nodiscard]] const char* to_string(FabricKind);
[[nodiscard]] const char* to_string(Fidelity);
[[nodiscard]] const char* to_string(OomPolicy);
[[nodiscard]] const char* to_string(FoldPolicy);

/// How many GPUs a run simulates as their own actors (DESIGN.md "Scale"): the world size, or with rank folding one
/// representative group, the first node (`analytic`) or the first two (`flow`, `chunk`). AUTO folds when the cluster
/// has more than two nodes on a symmetric, non-blocking fabric (not an oversubscribed fat tree, a torus or a
/// dragonfly). In 64 bits: the loader asks before it has bounded nodes x gpus_per_node.
[[nodiscard]] std::int64_t simulated_ranks(const ClusterSpec& cluster, FoldPolicy fold, Fidelity fidelity);

/// Nodes per leaf switch of a fat tree of `nodes` nodes: `requested` (cluster.fat_tree_leaf_radix; 0 or less: 32)
/// lowered to the largest divisor of `nodes` not above it, so that the 2-level tree has nodes / radix leaf switches
/// (topologies/builder/platform_builder.hpp builds it; the loader checks fabric_oversubscription against it).
[[nodiscard]] int fat_tree_leaf_nodes(int nodes, int requested);

/// True when DeepSpeed runs its BF16_Optimizer: bf16 model, grad_accum_dtype fp32, and stage 1 without optimizer
/// offload (instead of ZeRO stage 1) or stage 0 (instead of FP16_Optimizer; DeepSpeed < 0.18.5 only, which the
/// loader enforces, and bf16's default accumulation dtype at stage 0 before 0.17.6) (deepspeed/runtime/engine.py
/// _do_optimizer_sanity_check, get_data_types; zero_semantics.md §3.2). It keeps a full fp32 gradient buffer
/// (4 B/param, not partitioned) on every GPU and partitions the fp32 master and Adam states over N_d.
[[nodiscard]] bool uses_bf16_optimizer(const TrainingSpec& training, const ZeroConfig& zero);

/// The peak rate of the training's matmuls on `gpu` (FLOP/s, dense): peak_lp in fp16/bf16; in fp32, peak_tf32 when
/// training.tf32 and the card has TF32 tensor cores (peak_tf32 > 0), else peak_fp32 (CUDA-core SGEMM: PyTorch's
/// torch.backends.cuda.matmul.allow_tf32 defaults to False since 1.12). The GEMMs then run at this x
/// matmul_efficiency [assumption: the same achievable fraction as the card's 16-bit GEMMs].
[[nodiscard]] FlopRate matmul_peak(const GpuSpec& gpu, const TrainingSpec& training);

/// Is `gpu` (a topologies/gpus/ preset name) of the Hopper generation or later, whose NVSwitch-3 systems reduce in
/// the switch (NVLink SHARP, `cluster.nvls`)? H100/H200/GH200 and Blackwell B100/B200/GB200/B300.
[[nodiscard]] bool has_nvlink_sharp_gpu(std::string_view gpu);

} // namespace zerosim::scenario
