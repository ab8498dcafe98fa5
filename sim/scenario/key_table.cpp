#include "sim/scenario/key_table.hpp"

#include <algorithm>

namespace zerosim::scenario {

namespace {

using S = Scenario;
using V = KeyValue;

int as_int(const V& v) { return static_cast<int>(v.integer); }

/// Records an aio field zerosim accepts but does not model (zero.aio.single_submit, ...) in
/// ZeroConfig::unmodelled_offload_fields when set away from DeepSpeed's default (`dflt`), for the report's note; a
/// later setting replaces an earlier one.
void note_unmodelled_aio(S& s, const std::string& name, bool value, bool dflt) {
  auto& list = s.zero.unmodelled_offload_fields;
  list.erase(std::remove_if(list.begin(), list.end(), [&](const auto& p) { return p.first == name; }), list.end());
  if (value != dflt)
    list.emplace_back(name, value ? "true" : "false");
}

ModelFamily family_of(const std::string& t) {
  return t == "gpt2" ? ModelFamily::GPT2 : t == "opt" ? ModelFamily::OPT : ModelFamily::LLAMA;
}
Precision precision_of(const std::string& t) {
  return t == "fp16" ? Precision::FP16 : t == "fp32" ? Precision::FP32 : Precision::BF16;
}
OptimizerKind optimizer_of(const std::string& t) { return t == "adam" ? OptimizerKind::ADAM : OptimizerKind::ADAMW; }
OffloadDevice offload_of(const std::string& t) {
  return t == "cpu" ? OffloadDevice::CPU : t == "nvme" ? OffloadDevice::NVME : OffloadDevice::NONE;
}
Launcher launcher_of(const std::string& t) {
  return t == "deepspeed-bind-cores" ? Launcher::DEEPSPEED_BIND_CORES
         : t == "torchrun"           ? Launcher::TORCHRUN
         : t == "accelerate"         ? Launcher::ACCELERATE
                                     : Launcher::DEEPSPEED;
}
OptimizerImpl optimizer_impl_of(const std::string& t) {
  return t == "torch-foreach"         ? OptimizerImpl::TORCH_FOREACH
         : t == "torch-single-tensor" ? OptimizerImpl::TORCH_SINGLE_TENSOR
                                      : OptimizerImpl::FUSED;
}
CommDataType comm_of(const std::string& t) {
  return t == "fp32" ? CommDataType::FP32 : t == "fp16" ? CommDataType::FP16 : CommDataType::BF16;
}
GradAccumDtype accum_of(const std::string& t) {
  return t == "fp32" ? GradAccumDtype::FP32 : t == "fp16" ? GradAccumDtype::FP16 : GradAccumDtype::BF16;
}
FabricKind fabric_of(const std::string& t) {
  return t == "single-switch" ? FabricKind::SINGLE_SWITCH
         : t == "fat-tree"    ? FabricKind::FAT_TREE
         : t == "torus"       ? FabricKind::TORUS
         : t == "dragonfly"   ? FabricKind::DRAGONFLY
         : t == "rail"        ? FabricKind::RAIL
                              : FabricKind::NONE;
}

constexpr KeyCheck NONE = KeyCheck::NONE;
constexpr KeyCheck POS = KeyCheck::POSITIVE;
constexpr KeyCheck NONNEG = KeyCheck::NON_NEGATIVE;
constexpr KeyCheck FRAC = KeyCheck::FRACTION;

// clang-format off
const std::vector<KeySpec> kTable = {
  // ---- top level
  {"name", KeyType::NAME, "", "", "the file's stem", NONE, false,
   "scenario name, [a-z0-9-_]; names the output directory; without it, the scenario file's name without .yaml "
   "(job7b.yaml: job7b), which must then be such a name",
   [](S& s, const V& v) { s.name = v.text; }},
  {"description", KeyType::STRING, "", "", "\"\"", NONE, false, "free text shown in the summary",
   [](S& s, const V& v) { s.description = v.text; }},
  {"model", KeyType::SPECIAL, "", "", "(required)", NONE, true,
   "preset name (scenarios/models/), path to a Hugging Face config.json (relative to the scenario file; with --set to the current directory), or an inline map", nullptr},
  {"compare", KeyType::SPECIAL, "", "", "(none)", NONE, false,
   "one dotted key and a list of values; one simulation per value (a --set of that key, or of a key the values of a "
   "compared section name, runs that one setting instead, with a note)",
   nullptr},
  {"compare_set", KeyType::SPECIAL, "", "", "(none)", NONE, false,
   "extra overrides for some compare variants: {VALUE: {dotted.key: value, ...}}, e.g. {3: {training.optimizer_impl: "
   "fused}} when stage 3 ran with another ds_config",
   nullptr},
  {"sweep", KeyType::SPECIAL, "", "", "(none)", NONE, false,
   "grid/zip axes read by `zerosim sweep` (docs/sweeps-and-planning.md); ignored by `zerosim run`", nullptr},
  {"expect", KeyType::SPECIAL, "", "", "(none)", NONE, false,
   "validation claims {claim, metric, value, unit, tolerance, source, note, variant, known_gap} read by `zerosim validate` "
   "(docs/validation.md); ignored by `zerosim run`", nullptr},

  // ---- model (inline map, preset files under scenarios/models/)
  {"model.preset", KeyType::SPECIAL, "", "", "", NONE, false, "preset or config.json the inline keys override", nullptr},
  {"model.name", KeyType::STRING, "", "", "(preset name)", NONE, false, "display name",
   [](S& s, const V& v) { s.model.name = v.text; }},
  {"model.family", KeyType::ENUM, "gpt2|llama|opt", "", "(required)", NONE, true,
   "gpt2: learned positions, LayerNorm, GELU MLP; llama: rotary, RMSNorm, SwiGLU MLP; opt: learned positions, "
   "LayerNorm, ReLU MLP, Hugging Face OPTAttention (fp32 softmax)",
   [](S& s, const V& v) { s.model.family = family_of(v.text); }},
  {"model.hidden", KeyType::INT, "", "", "(required)", POS, true, "h, hidden size",
   [](S& s, const V& v) { s.model.hidden = v.integer; }},
  {"model.layers", KeyType::INT, "", "", "(required)", POS, true, "L, transformer blocks",
   [](S& s, const V& v) { s.model.layers = v.integer; }},
  {"model.heads", KeyType::INT, "", "", "(required)", POS, true,
   "a, attention heads; must divide hidden unless model.head_dim is set",
   [](S& s, const V& v) { s.model.heads = v.integer; }},
  {"model.kv_heads", KeyType::INT, "", "", "heads", POS, false, "key/value heads (GQA); must divide heads",
   [](S& s, const V& v) { s.model.kv_heads = v.integer; }},
  {"model.head_dim", KeyType::INT, "", "", "0 (hidden / heads)", NONNEG, false,
   "llama family: d, the attention head dimension (Hugging Face head_dim); q_proj is hidden -> heads x head_dim and "
   "o_proj back, so heads x head_dim may differ from hidden (Mistral-NeMo: 32 x 128 against 5120); null (~) means "
   "the default, as Hugging Face's head_dim null does",
   [](S& s, const V& v) { s.model.head_dim = v.integer; }},
  {"model.intermediate", KeyType::INT, "", "", "4*hidden (gpt2)", POS, false, "MLP inner size",
   [](S& s, const V& v) { s.model.intermediate = v.integer; }},
  {"model.vocab", KeyType::INT, "", "", "(required)", POS, true, "V, vocabulary size",
   [](S& s, const V& v) { s.model.vocab = v.integer; }},
  {"model.max_positions", KeyType::INT, "", "", "(required for gpt2)", NONNEG, false,
   "gpt2: learned position table rows, seq_len may not exceed it; llama (rotary): trained context, recorded only, "
   "longer seq_len allowed with a note; zerosim plan's default --seq-len",
   [](S& s, const V& v) { s.model.max_positions = v.integer; }},
  {"model.sliding_window", KeyType::INT, "", "", "0", NONNEG, false,
   "sliding-window attention (Mistral): tokens attended per query, 0 = full causal; with "
   "training.flash_attention the kernel skips the blocks outside the window (eager attention still scores s x s)",
   [](S& s, const V& v) { s.model.sliding_window = v.integer; }},
  {"model.max_window_layers", KeyType::INT, "", "", "0", NONNEG, false,
   "blocks 0 .. max_window_layers-1 attend fully, the later ones use model.sliding_window (Qwen2's config.json "
   "key); 0 = every block uses the window",
   [](S& s, const V& v) { s.model.max_window_layers = v.integer; }},
  {"model.attention_bias", KeyType::ENUM, "none|qkv|qkvo|true|false", "", "none", NONE, false,
   "llama family: biases on the attention projections (qkv: Qwen2; qkvo: Hugging Face attention_bias: true, "
   "which true and false spell as in LlamaConfig); gpt2 and opt blocks always have biases",
   [](S& s, const V& v) {
     s.model.attention_bias = v.text == "qkv"                        ? AttentionBias::QKV
                              : v.text == "qkvo" || v.text == "true" ? AttentionBias::QKVO
                                                                     : AttentionBias::NONE;
   }},
  {"model.mlp_bias", KeyType::BOOL, "", "", "false", NONE, false,
   "llama family: biases on the MLP's gate/up/down projections (Hugging Face LlamaConfig mlp_bias); gpt2 and opt "
   "blocks always have biases",
   [](S& s, const V& v) { s.model.mlp_bias = v.boolean; }},
  {"model.activation", KeyType::ENUM, "gelu|gelu_new", "", "gelu", NONE, false,
   "gpt2 family: the MLP activation (Hugging Face activation_function): gelu is one kernel (nn.GELU, also "
   "gelu_pytorch_tanh); gelu_new is transformers' NewGELUActivation, eight eager ops (HF GPT-2) unless "
   "training.kernel_impl is fused",
   [](S& s, const V& v) { s.model.activation = v.text == "gelu_new" ? Activation::GELU_NEW : Activation::GELU; }},
  {"model.tied_embeddings", KeyType::BOOL, "", "", "true (gpt2), false (llama)", NONE, false,
   "LM head shares the token embedding", [](S& s, const V& v) { s.model.tied_embeddings = v.boolean; }},
  {"model.source", KeyType::STRING, "", "", "\"\"", NONE, false, "where the dimensions come from",
   [](S& s, const V& v) { s.model.source = v.text; }},

  // ---- training
  {"training.micro_batch", KeyType::INT, "", "sequences", "1", POS, false, "b, sequences per micro-step per GPU",
   [](S& s, const V& v) { s.training.micro_batch = v.integer; }},
  {"training.seq_len", KeyType::INT, "", "tokens", "1024", POS, false, "s, tokens per sequence",
   [](S& s, const V& v) { s.training.seq_len = v.integer; }},
  {"training.grad_accum", KeyType::INT, "", "", "1", POS, false, "GA, micro-steps per optimizer step",
   [](S& s, const V& v) { s.training.grad_accum = v.integer; }},
  {"training.train_batch_size", KeyType::INT, "", "sequences", "0 (not given)", NONNEG, false,
   "global batch per optimizer step, DeepSpeed's train_batch_size = micro_batch x grad_accum x GPUs: with micro_batch "
   "given, grad_accum is derived (so a sweep over cluster.nodes keeps the global batch); with grad_accum given, the "
   "micro-batch; with both, they must match; it must divide",
   [](S& s, const V& v) { s.training.train_batch_size = v.integer; }},
  {"training.precision", KeyType::ENUM, "bf16|fp16|fp32", "", "bf16 (fp16 on a GPU with gpu.bf16: false)", NONE,
   false,
   "format of params, grads and activations: bf16 or fp16 mixed precision (fp32 master weights and Adam states), or "
   "fp32 without mixed precision (DeepSpeed with fp16 and bf16 disabled, HF Trainer without --fp16/--bf16: 4 B "
   "params, grads, activations and collectives; stage 0 runs the optimizer unwrapped, with no master copy; matmuls "
   "at gpu.peak_fp32, or gpu.peak_tf32 with training.tf32; FlashAttention does not run, so an unset "
   "training.flash_attention is false)",
   [](S& s, const V& v) { s.training.precision = precision_of(v.text); }},
  {"training.optimizer", KeyType::ENUM, "adamw|adam", "", "adamw", NONE, false, "optimizer (both keep 2 fp32 states)",
   [](S& s, const V& v) { s.training.optimizer = optimizer_of(v.text); }},
  {"training.optimizer_impl", KeyType::ENUM, "fused|torch-foreach|torch-single-tensor", "", "fused", NONE, false,
   "GPU Adam step: DeepSpeed FusedAdam (default), or torch.optim (ds_config optimizer.params.torch_adam: true, imported as torch-foreach) "
   "with PyTorch >= 2.0's foreach path (one 4 B/element temporary) or <= 1.13's single-tensor path (two); all "
   "stages (stage 3 per optimizer sub-group). With offload_optimizer the torch step runs on the CPU tensors "
   "(torch_adam imported as single-tensor, torch's CPU default), its new temporaries paying "
   "cpu.page_fault_bandwidth",
   [](S& s, const V& v) { s.training.optimizer_impl = optimizer_impl_of(v.text); }},
  {"training.gradient_clipping", KeyType::REAL, "", "", "0 (none)", NONNEG, false,
   "DeepSpeed's gradient_clipping: max global gradient L2 norm, 0 = no clipping (ds_config key; HF Trainer's \"auto\" "
   "is max_grad_norm, 1.0). With mixed precision the norm is computed either way; with clipping > 0 stages 1 and "
   "2 of DeepSpeed 0.13.2-0.14.2 read the norm on the host (`if clip > 1` on a GPU tensor), a host wait per step, "
   "as does BF16_Optimizer from 0.14.1 (`if clip_coef < 1`), and fp32 stage 0 runs clip_grad_norm_ (a norm, an "
   "all-reduce and a multiply per step)",
   [](S& s, const V& v) { s.training.gradient_clipping = v.real; }},
  {"training.skipped_steps", KeyType::INT, "", "steps", "0", NONNEG, false,
   "the first N simulated steps overflow under fp16 dynamic loss scaling and DeepSpeed skips their optimizer step: "
   "forward, backward and gradient reduction as usual, then the overflow check and its flag all-reduce, and the "
   "grads are zeroed: no norm, optimizer step or parameter all-gather (stage 3: no persistent-param all-gather). "
   "An fp16 block without loss-scale keys starts the scale at 2^32 before DeepSpeed 0.17.1 (DynamicLossScaler() "
   "defaults), halved per overflow, so a run's first steps overflow (fp16/loss_scaler.py). fp16 only. With "
   "optimizer offload the grads still go to the host in the backward; no CPU Adam, no copy of the parameters back "
   "and no NVMe optimizer swap runs, and lazy Adam state appears at the first step that runs",
   [](S& s, const V& v) { s.training.skipped_steps = v.integer; }},
  {"training.loss_impl", KeyType::ENUM, "hf|megatron", "", "hf", NONE, false,
   "LM loss on the logits: hf (transformers: fp32 log_softmax saved, 14 B per logit at the backward peak with "
   "16-bit logits) or megatron (Megatron-LM vocab_parallel_cross_entropy: in-place fp32 softmax, 6 B per logit)",
   [](S& s, const V& v) { s.training.loss_impl = v.text == "megatron" ? LossImpl::MEGATRON : LossImpl::HF; }},
  {"training.process_groups", KeyType::ENUM, "deepspeed|mpu", "", "deepspeed", NONE, false,
   "the process groups ZeRO's collectives run on, each its own NCCL communicator, which runs its collectives one "
   "after another in issue order whatever their stream (NCCL src/enqueue.cc, and PyTorch ProcessGroupNCCL's own "
   "stream per group): deepspeed = DeepSpeed's defaults with no mpu (HF Trainer, a plain script): stage 3 gathers "
   "on zero.Init's world group and reduce-scatters on the "
   "engine's clone of it, so they overlap, before 0.19.3 (from 0.19.3 on the parameter's group: one communicator; "
   "stage3.py _get_param_partition_group); stages 0-2 use the engine's group only; mpu = the launcher passes one "
   "data-parallel group to zero.Init and deepspeed.initialize, as Megatron-DeepSpeed does (pretrain_gpt.py, "
   "megatron/training.py with --no-pipeline-parallel): every ZeRO collective on one communicator. The GPU holds NCCL "
   "buffers for two communicators at stage 3, and under mpu at every stage (the data-parallel group and the world "
   "group of Megatron's barriers), one at stages 0-2 otherwise (sim/engine/memory_pool.hpp nccl_communicators)",
   [](S& s, const V& v) {
     s.training.process_groups = v.text == "mpu" ? ProcessGroups::MPU : ProcessGroups::DEEPSPEED;
   }},
  {"training.loss_sync", KeyType::BOOL, "", "", "true", NONE, false,
   "the training loop reads the loss on the host after every micro-step, so the host waits for the GPU there and "
   "cannot run ahead into the next micro-step: HF Trainer's logging_nan_inf_filter (default true) does, as does a "
   "loop printing loss.item() each step; false for a loop that reads no GPU value per step",
   [](S& s, const V& v) { s.training.loss_sync = v.boolean; }},
  {"training.kernel_impl", KeyType::ENUM, "hf|fused", "", "hf", NONE, false,
   "element-wise kernels: hf = transformers' eager modules (LlamaRMSNorm in fp32 over 6 ops, rotary embeddings over "
   "5, gelu_new over 8: more HBM traffic and saved tensors); fused = one kernel per module (Apex, Megatron, "
   "torch.compile, llm.c)",
   [](S& s, const V& v) { s.training.kernel_impl = v.text == "fused" ? KernelImpl::FUSED : KernelImpl::HF; }},
  {"training.torch_version", KeyType::STRING, "", "", "2.8", NONE, false,
   "PyTorch release (major.minor; a patch and a local suffix such as NGC's 2.6.0a0+ecf3bae are ignored): before 2.8 "
   "ProcessGroupNCCL record_stream()s an all_reduce / reduce input on its NCCL stream (pytorch#148590, in 2.8), so "
   "with the host thread running ahead each stage 1/2 gradient flatten the host drops stays reserved until its "
   "collective has run on the GPU; from 2.8 the block is reused in the reduction stream's order at once",
   [](S& s, const V& v) { s.training.torch_version_text = v.text; }},
  {"training.torch_nccl_avoid_record_streams", KeyType::BOOL, "", "", "false", NONE, false,
   "the run set TORCH_NCCL_AVOID_RECORD_STREAMS=1 (torch 2.1 to 2.7; refused before 2.1, no effect from 2.8): "
   "ProcessGroupNCCL stashes a collective's tensors until work.wait() instead of record_stream()ing them, and "
   "wait() makes the caller's stream wait for the NCCL stream first, so a gradient flatten's block is reused in the "
   "reduction stream's order at once, as from 2.8 (pytorch#89880, renamed by #97053)",
   [](S& s, const V& v) { s.training.torch_nccl_avoid_record_streams = v.boolean; }},
  {"training.activation_checkpointing", KeyType::BOOL, "", "", "false", NONE, false,
   "recompute activations in backward (what: training.recompute_granularity)",
   [](S& s, const V& v) { s.training.activation_checkpointing = v.boolean; }},
  {"training.recompute_granularity", KeyType::ENUM, "full|selective", "", "full", NONE, false,
   "with activation_checkpointing: full (keep each layer's input, re-run its forward) or selective (Megatron-LM: "
   "recompute only the attention core's s^2 tensors; Korthikanti et al. 2022 §4.2)",
   [](S& s, const V& v) {
     s.training.recompute_granularity =
         v.text == "selective" ? RecomputeGranularity::SELECTIVE : RecomputeGranularity::FULL;
   }},
  {"training.cpu_checkpointing", KeyType::BOOL, "", "", "false", NONE, false,
   "with full activation_checkpointing through deepspeed.checkpointing (Megatron-DeepSpeed; ds_config "
   "activation_checkpointing.cpu_checkpointing): each block's checkpoint lives in host memory between its forward "
   "and its recompute, copied out and back with blocking pageable copies",
   [](S& s, const V& v) { s.training.cpu_checkpointing = v.boolean; }},
  {"training.launcher", KeyType::ENUM, "deepspeed|deepspeed-bind-cores|torchrun|accelerate", "", "deepspeed", NONE,
   false,
   "what starts the ranks, which sets the OpenMP threads of each rank's host work (CPU Adam, the host's element-wise "
   "passes) under optimizer offload: deepspeed = DeepSpeed's launcher, which sets no OMP_NUM_THREADS "
   "(launcher/launch.py l.246-248 @v0.19.5), so each rank runs a thread per CPU and the node's ranks share all "
   "cores; deepspeed-bind-cores = its --bind_cores_to_rank, cores / ranks cores and threads per rank (numactl); "
   "torchrun = torch.distributed.run, OMP_NUM_THREADS=1 per rank with more than one rank per node; accelerate = "
   "`accelerate launch`, which sets 1 like torchrun (its multi-node pdsh path runs DeepSpeed's launcher: use "
   "deepspeed there; this is accelerate's DeepSpeed-plugin path: a plain `accelerate launch` of a --deepspeed script "
   "sets num_cpu_threads_per_process, default 1, even for one rank per node: give training.omp_num_threads: 1). No "
   "effect on the simulated times without offload_optimizer (its core checks still apply)",
   [](S& s, const V& v) { s.training.launcher = launcher_of(v.text); }},
  {"training.omp_num_threads", KeyType::INT, "", "threads", "0 (what training.launcher sets)", NONNEG, false,
   "OMP_NUM_THREADS as exported before the launch: OpenMP threads per rank; torchrun and accelerate keep it, "
   "deepspeed-bind-cores overwrites it (an error here). A rank runs min(threads, cores / ranks) cores' worth of "
   "CPU Adam, drawing at most that many x cpu.core_memory_bandwidth; more threads than cores are time-shared "
   "(their switching cost is not modelled)",
   [](S& s, const V& v) { s.training.omp_num_threads = as_int(v); }},
  {"training.flash_attention", KeyType::BOOL, "", "", "gpu.flash_attention", NONE, false,
   "fused FlashAttention kernels: no s^2 attention-score activations (Dao 2022); false = eager attention "
   "(transformers attn_implementation \"eager\"). Unset, what transformers' default \"sdpa\" (most models since "
   "4.36) runs: PyTorch's flash kernel in bf16/fp16 where the GPU has one (true from Ampere on), eager attention "
   "where the GPU has none (gpu.flash_attention: false, e.g. V100; SDPA's memory-efficient kernel is not modelled)",
   [](S& s, const V& v) { s.training.flash_attention = v.boolean; }},
  {"training.tf32", KeyType::BOOL, "", "", "false", NONE, false,
   "with training.precision: fp32, PyTorch runs the fp32 matmuls on TF32 tensor cores at gpu.peak_tf32 "
   "(torch.backends.cuda.matmul.allow_tf32 = True, HF Trainer --tf32; PyTorch's default is False since 1.12, so the "
   "GEMMs run on the CUDA cores at gpu.peak_fp32); no effect in bf16/fp16 or on a card without TF32 (gpu.peak_tf32 0)",
   [](S& s, const V& v) { s.training.tf32 = v.boolean; }},
  {"training.flash_attention_kernel", KeyType::ENUM, "flash2|triton", "", "flash2", NONE, false,
   "with flash_attention: flash2 = FlashAttention-2 (flash-attn 2, PyTorch SDPA), the kernels gpu.attention_efficiency "
   "describes; triton = FlashAttention in Triton (flash-attn's flash_attn_triton.py, llm-foundry attn_impl: triton), "
   "1.4x the FlashAttention-2 time forward and 2x backward (Dao 2023, arXiv 2307.08691 §4.1)",
   [](S& s, const V& v) {
     s.training.flash_attention_kernel =
         v.text == "triton" ? FlashAttentionKernel::TRITON : FlashAttentionKernel::FLASH2;
   }},
  {"training.trainable_fraction", KeyType::REAL, "", "", "1", FRAC, false,
   "fraction of the parameters that train (LoRA/PEFT adapters); the rest is frozen: no grads, no weight-gradient "
   "GEMMs, no optimizer states. Stage 3 partitions the frozen 16-bit weights like the others (zero.Init); 4-bit "
   "QLoRA bases, which ZeRO-3 cannot split, are not modelled",
   [](S& s, const V& v) { s.training.trainable_fraction = v.real; }},
  {"training.lora_rank", KeyType::INT, "", "", "(no LoRA)", POS, false,
   "LoRA as PEFT builds it: rank r of the adapters; each targeted block linear (in x out) gets trainable lora_A "
   "(r x in) and lora_B (out x r), every base weight and bias is frozen (no grads, no weight-gradient GEMMs, no "
   "optimizer states; frozen linears keep no input for backward); at most min(in, out) of every target; excludes "
   "training.trainable_fraction < 1",
   [](S& s, const V& v) { s.training.lora_rank = v.integer; }},
  {"training.lora_targets", KeyType::SPECIAL, "", "", "PEFT's default: q_proj, v_proj (llama, opt); c_attn (gpt2)",
   NONE, false,
   "PEFT target_modules: a list of module names, each matching a block linear whose path equals it or ends with "
   "'.' + it (q_proj, self_attn.o_proj, mlp.c_proj, ...), or all-linear (every block linear, not the LM head); "
   "needs training.lora_rank",
   nullptr},
  {"training.lora_dropout", KeyType::REAL, "", "", "0", NONNEG, false,
   "PEFT lora_dropout p in [0, 1): with p > 0 each adapter saves its dropout output and mask (3 B per input "
   "element); with 0 lora_A reads the base layer's input, which the activations keep anyway. lora_alpha only scales "
   "the adapter output and costs nothing here",
   [](S& s, const V& v) { s.training.lora_dropout = v.real; }},

  // ---- zero (DeepSpeed names and code defaults: deepspeed/runtime/zero/config.py; zero_semantics.md §3.1)
  {"zero.stage", KeyType::INT, "", "", "0", KeyCheck::STAGE, false, "ZeRO stage 0..3",
   [](S& s, const V& v) { s.zero.stage = as_int(v); }},
  {"zero.contiguous_gradients", KeyType::BOOL, "", "", "true", NONE, false, "copy gradients into a contiguous buffer (the IPG bucket); at stage 3 off: no bucket, each "
   "gradient stays in its own tensor until its bucket's reduce-scatter (before DeepSpeed 0.6.0 an all-reduce of "
   "the flattened bucket: stage3.py)",
   [](S& s, const V& v) { s.zero.contiguous_gradients = v.boolean; }},
  {"zero.reduce_scatter", KeyType::BOOL, "", "", "true", NONE, false, "reduce gradients with reduce-scatter; stage 3: false all-reduces each contiguous bucket from DeepSpeed 0.9.4 "
   "(0.6.0-0.9.3 ignore it; from 0.10.0 a parameter larger than the bucket is still reduce-scattered; before 0.6.0 "
   "the whole reduce_bucket_size IPG buffer is all-reduced per bucket: stage3.py)",
   [](S& s, const V& v) { s.zero.reduce_scatter = v.boolean; }},
  {"zero.reduce_bucket_size", KeyType::ELEMENTS, "", "elements", "5e8", POS, false,
   "gradient (IPG) bucket; \"auto\" = h^2",
   [](S& s, const V& v) { s.zero.reduce_bucket_size = v.integer; }},
  {"zero.allgather_bucket_size", KeyType::ELEMENTS, "", "elements", "5e8", POS, false,
   "stage 1/2 parameter all-gather bucket; no effect with DeepSpeed's torch (all_gather_dp_groups takes the "
   "all_gather_into_tensor path, which ignores it: runtime/utils.py), so the updated parameters go out in one "
   "all-gather per partition group",
   [](S& s, const V& v) { s.zero.allgather_bucket_size = v.integer; }},
  {"zero.overlap_comm", KeyType::BOOL, "", "", "true for stage 3, else false", NONE, false,
   "overlap gradient reduction with backward", [](S& s, const V& v) { s.zero.overlap_comm = v.boolean; }},
  {"zero.deepspeed_version", KeyType::STRING, "", "", "0.19.5", NONE, false,
   "DeepSpeed release simulated where releases differ (0.3.15 or later; 0.3.15 to 0.8.x run as 0.9.0 except that "
   "before 0.6.0 stage 3 with offload_optimizer has no host grad_partitions_flat_buffer: lp grads are kept on the "
   "host only with grad_accum > 1, pinned iff offload_param.pin_memory, the fp32 grads go D2H at the boundary, and "
   "two lp GPU buffers hold the reduced partitions, each the largest sub-group's partition to 0.4.0 and the largest "
   "param's from 0.4.1; sub_group_size defaults to 1e12 before 0.4.1; and stage 3 allocates its "
   "IPG bucket at each backward, two with overlap_comm, and reduce-scatters each parameter's gradient on its own "
   "(one collective per parameter, not one per bucket); before 0.6.6 stage 3 refuses offload_param without "
   "offload_optimizer; and fp16 stage 1/2 offload updates the lp params inside DeepSpeedCPUAdam, adam_update_copy: "
   "4 B per param H2D in 128M-element tiles behind the CPU Adam, no host cast): before 0.4.0 stage 1/2 with "
   "contiguous_gradients refuse a parameter larger than reduce_bucket_size; before 0.8.0 stage 1/2 with overlap_comm "
   "and contiguous_gradients synchronize the device before each bucket's reduction; before 0.11.2 the stage 1/2 step "
   "checks bf16 and fp32 grads for overflow too (0.11.2-0.17.0 "
   "only fp16, PR #4512; from 0.17.1 fp16, and bf16 per bf16.check_grad_overflow, on from 0.19.3); before 0.12.4 no "
   "use_multi_rank_bucket_allreduce (stage 2 reduces each bucket to its owners on views of it, no flatten or "
   "synchronize); before 0.13.0 stage 1 ignores overlap_comm and contiguous_gradients; before 0.14.3 overlap_comm "
   "lets the bucket reductions queue up behind the backward (compute waits only at its end), and offload_optimizer "
   "with the fused DeepSpeedCPUAdam pins two 512 MiB tile buffers per rank (1 GiB of page-locked host memory); "
   "before "
   "0.17.6 bf16 without ZeRO (stage 0) accumulates in fp32 with BF16_Optimizer; before 0.19.0 stage 1/2 flatten the "
   "lp params on the CPU; stage 1/2 CPU offload sends the updated params up as fp32 into a GPU temporary from 0.14.1 "
   "to 0.16 (4 B per param H2D, no host cast) and from a pageable host cast from 0.9.0 to 0.14.0; an unset "
   "communication_data_type is fp16 with ZeRO (stage 1-3) in 0.5.8-0.8.x, bf16 and fp32 models too (their "
   "gradients pass a cast), and fp32 for bf16 in 0.9.0-0.9.1 only (from 0.9.2 the model's dtype again); fp32 "
   "communication with ZeRO is refused from 0.5.8 to 0.8.1, at stage 1/2 with reduce_scatter to 0.8.x; before 0.17.2 "
   "stage 3's IPG bucket is of the model dtype, cast per bucket at the reduction; the offload "
   "inf/nan check "
   "keeps 4 B per element before 0.13.3, 11 B from it; an imported ds_config's data_types.param_dtype and "
   "buffer_dtype are read from 0.19.2 (ignored before, with a note); later releases than 0.19.5 (the newest read) "
   "run as 0.19.5",
   [](S& s, const V& v) { s.zero.deepspeed_version_text = v.text; }},
  {"zero.use_multi_rank_bucket_allreduce", KeyType::BOOL, "", "", "true (DeepSpeed >= 0.12.4)", NONE, false,
   "stage 1/2 with reduce_scatter: all-reduce each bucket in <= reduce_bucket_size chunks, not one reduce per "
   "owning rank",
   [](S& s, const V& v) { s.zero.use_multi_rank_bucket_allreduce = v.boolean; }},
  {"zero.round_robin_gradients", KeyType::BOOL, "", "", "false", NONE, false, "stage 1/2 gradient partition order",
   [](S& s, const V& v) { s.zero.round_robin_gradients = v.boolean; }},
  {"zero.aio.block_size", KeyType::BYTES, "", "B", "1MiB", POS, false,
   "NVMe swap request size (DeepSpeed aio.block_size; a bare whole number is bytes, as in DeepSpeed; a whole "
   "number of bytes, as DeepSpeed's aio handle takes an int); an "
   "offload_param=nvme partition under max(1 MiB, it) stays in host memory (swappable_tensor)",
   [](S& s, const V& v) { s.zero.aio.block_size = Bytes(v.real); }},
  {"zero.aio.queue_depth", KeyType::INT, "", "", "8", POS, false,
   "NVMe requests in flight per I/O thread (DeepSpeed aio.queue_depth)",
   [](S& s, const V& v) { s.zero.aio.queue_depth = as_int(v); }},
  {"zero.aio.intra_op_parallelism", KeyType::INT, "", "", "1", POS, false,
   "I/O threads per swap (DeepSpeed aio.intra_op_parallelism, formerly thread_count)",
   [](S& s, const V& v) { s.zero.aio.intra_op_parallelism = as_int(v); }},
  {"zero.aio.thread_count", KeyType::INT, "", "", "1", POS, false,
   "DeepSpeed's name for intra_op_parallelism before 0.14: sets zero.aio.intra_op_parallelism",
   [](S& s, const V& v) { s.zero.aio.intra_op_parallelism = as_int(v); }},
  {"zero.aio.single_submit", KeyType::BOOL, "", "", "false", NONE, false,
   "DeepSpeed aio.single_submit (submit requests one at a time): accepted, not modelled (each round of requests "
   "pays one device latency either way)",
   [](S& s, const V& v) {
     s.zero.aio.single_submit = v.boolean;
     note_unmodelled_aio(s, "aio.single_submit", v.boolean, false); }},
  {"zero.aio.overlap_events", KeyType::BOOL, "", "", "true", NONE, false,
   "DeepSpeed aio.overlap_events (overlap request submission and completion): accepted, not modelled",
   [](S& s, const V& v) {
     s.zero.aio.overlap_events = v.boolean;
     note_unmodelled_aio(s, "aio.overlap_events", v.boolean, true); }},
  {"zero.aio.use_gds", KeyType::BOOL, "", "", "false", NONE, false,
   "DeepSpeed aio.use_gds (GPUDirect Storage): accepted, not modelled (swaps are staged through host memory)",
   [](S& s, const V& v) {
     s.zero.aio.use_gds = v.boolean;
     note_unmodelled_aio(s, "aio.use_gds", v.boolean, false); }},
  {"zero.sub_group_size", KeyType::ELEMENTS, "", "elements", "1e9 (1e12 before DeepSpeed 0.4.1)", NONNEG, false,
   "stage 3 optimizer sub-group: params are packed in order until a group's partitions reach it; 0 = one sub-group "
   "per parameter (stage3.py _create_fp16_sub_groups)",
   [](S& s, const V& v) { s.zero.sub_group_size = v.integer; }},
  {"zero.stage3_prefetch_bucket_size", KeyType::ELEMENTS, "", "elements", "5e7", NONNEG, false,
   "stage 3 parameter prefetch; \"auto\" = 0.9 h^2",
   [](S& s, const V& v) { s.zero.stage3_prefetch_bucket_size = v.integer; }},
  {"zero.stage3_param_persistence_threshold", KeyType::ELEMENTS, "", "elements", "1e5", NONNEG, false,
   "stage 3: smaller parameters stay gathered; \"auto\" = 10 h",
   [](S& s, const V& v) { s.zero.stage3_param_persistence_threshold = v.integer; }},
  {"zero.stage3_model_persistence_threshold", KeyType::ELEMENTS, "", "elements", "9223372036854775807 (sys.maxsize: no cap)",
   NONNEG, false,
   "stage 3: cap on the total full numel of persistent params; params are taken in module registration order and "
   "one that would pass the cap is skipped, a later smaller one may still persist",
   [](S& s, const V& v) { s.zero.stage3_model_persistence_threshold = v.integer; }},
  {"zero.stage3_max_live_parameters", KeyType::ELEMENTS, "", "elements", "1e9", NONNEG, false,
   "stage 3 limit on gathered parameters",
   [](S& s, const V& v) { s.zero.stage3_max_live_parameters = v.integer; }},
  {"zero.stage3_max_reuse_distance", KeyType::ELEMENTS, "", "elements", "1e9", NONNEG, false,
   "stage 3: keep a parameter gathered if reused within this distance",
   [](S& s, const V& v) { s.zero.stage3_max_reuse_distance = v.integer; }},
  {"zero.stage3_use_all_reduce_for_fetch_params", KeyType::BOOL, "", "", "false", NONE, false,
   "stage 3: a fetch of several params all-reduces a zero-filled flat buffer instead of all-gathering (about 2x the "
   "bytes on the wire, no gather-side copies; the buffer lives until all its params are released)",
   [](S& s, const V& v) { s.zero.stage3_use_all_reduce_for_fetch_params = v.boolean; }},
  {"zero.stage3_allgather_sequential", KeyType::BOOL, "", "", "false", NONE, false,
   "stage 3: one all-gather per parameter into its own buffer (no flat buffer, no copies, many more collectives); "
   "DeepSpeed then forces stage3_prefetch_bucket_size to 1, so a prefetch takes the next parameter only",
   [](S& s, const V& v) { s.zero.stage3_allgather_sequential = v.boolean; }},
  {"zero.offload_optimizer", KeyType::OFFLOAD, "none|cpu|nvme", "", "none", NONE, false,
   "optimizer states and step on CPU (or NVMe); also DeepSpeed's map {device: cpu, pin_memory: true, ...} "
   "(DeepSpeedZeroOffloadOptimizerConfig, zero/offload_config.py): device, pin_memory, buffer_count, ratio, "
   "pipeline_read and pipeline_write are simulated (also as zero.offload_optimizer_* keys); nvme_path, fast_init, "
   "super_offload and cpuadam_cores_perc are accepted and type-checked as DeepSpeed does but have no simulated effect "
   "(a value other than DeepSpeed's default, e.g. fast_init: true, gets a \"not modelled\" note in the report); any "
   "other field is an error",
   [](S& s, const V& v) { s.zero.offload_optimizer = offload_of(v.text); }},
  {"zero.offload_param", KeyType::OFFLOAD, "none|cpu|nvme", "", "none", NONE, false,
   "stage 3 only: the bf16/fp16 parameter partitions live on CPU (or NVMe) and are copied to the GPU per fetch; "
   "without offload_optimizer the fp32 master, Adam and the step stay on the GPU. Also DeepSpeed's map {device: cpu, "
   "...} (DeepSpeedZeroOffloadParamConfig): device, pin_memory, buffer_count, buffer_size and max_in_cpu are "
   "simulated; nvme_path is accepted with no simulated effect; any other field is an error",
   [](S& s, const V& v) { s.zero.offload_param = offload_of(v.text); }},
  {"zero.offload_param_buffer_count", KeyType::INT, "", "", "5", POS, false,
   "offload_param.buffer_count: pinned swap buffers of offload_param=nvme (also in the offload_param map; given both "
   "ways, the values must agree)",
   [](S& s, const V& v) { s.zero.param_swap_buffer_count = static_cast<int>(v.integer); }},
  {"zero.offload_param_buffer_size", KeyType::ELEMENTS, "", "elements", "1e8", POS, false,
   "offload_param.buffer_size: lp elements per swap buffer; a fetched partition larger than it is an error, as in "
   "DeepSpeed (also in the offload_param map; given both ways, the values must agree)",
   [](S& s, const V& v) { s.zero.param_swap_buffer_size = v.integer; }},
  {"zero.offload_param_max_in_cpu", KeyType::ELEMENTS, "", "elements", "1e9", NONE, false,
   "offload_param.max_in_cpu: with offload_param=nvme, lp parameter elements per rank kept in a pinned host buffer "
   "(min(this, the rank's trainable partition elements)); the leading sub-groups that fit whole are fetched from it "
   "over PCIe and updated in place, never read from or written to NVMe; the rest swap. 0 puts every swappable "
   "partition on NVMe (also in the offload_param map; given both ways, the values must agree)",
   [](S& s, const V& v) { s.zero.param_max_in_cpu = v.integer; }},
  {"zero.offload_optimizer_pin_memory", KeyType::BOOL, "", "", "false before DeepSpeed 0.19.5, true from it", NONE,
   false,
   "offload_optimizer.pin_memory (also in the offload_optimizer map; given both ways, the values must agree): which "
   "host buffers are page-locked follows the release (stage 1/2 pin the fp32 master whatever it says from 0.14.1 to "
   "0.18.2); reported in host pinned/pageable; a copy to or from a pageable buffer is staged by the driver "
   "(cpu.pageable_copy_bandwidth) and blocks the host. Set without offload_optimizer (device none) it has no effect "
   "(DeepSpeed ignores it too), and the report notes so",
   [](S& s, const V& v) { s.zero.offload_optimizer_pin_memory = v.boolean; }},
  {"zero.force_ds_cpu_optimizer", KeyType::BOOL, "", "", "true", NONE, false,
   "DeepSpeed's zero_force_ds_cpu_optimizer (imported from a ds_config): false lets a client optimizer run on the "
   "offloaded CPU tensors; which one runs is training.optimizer_impl (torch-single-tensor for torch.optim.AdamW), "
   "and the report says so when it is left at fused",
   [](S& s, const V& v) { s.zero.force_ds_cpu_optimizer = v.boolean; }},
  {"zero.throughput_timer_sync", KeyType::BOOL, "", "", "true", NONE, false,
   "DeepSpeed's throughput timer synchronizes the GPU at every micro-step's forward and engine.step() (ds_config "
   "timers.throughput.enabled and .synchronized, both default true; imported as one value, false when either is): "
   "the host cannot run ahead of the GPU across micro-steps and the GPU waits for the next forward's first "
   "launches; from step 2 on, as in DeepSpeed (simulation.steps >= 3 to see it; step 1 runs without it, so when step 2 "
   "completes the steady-state mean starts there and leaves step 1 out; with training.loss_sync the host already "
   "waits at each micro-step's end)",
   [](S& s, const V& v) { s.zero.throughput_timer_sync = v.boolean; }},
  {"zero.offload_param_pin_memory", KeyType::BOOL, "", "", "false before DeepSpeed 0.19.5, true from it", NONE, false,
   "offload_param.pin_memory (also in the offload_param map; given both ways, the values must agree): stage 3 pins "
   "the offloaded lp partitions whatever it says (stage3.py); it decides only zero.Init's parameter storage, which "
   "training replaces: no effect here. Set without offload_param (device none) it has no effect either, and the "
   "report notes so",
   [](S& s, const V& v) { s.zero.offload_param_pin_memory = v.boolean; }},
  {"zero.offload_optimizer_buffer_count", KeyType::INT, "", "", "4", POS, false,
   "offload_optimizer.buffer_count: pinned fp32 swap buffers of the largest sub-group, offload_optimizer=nvme (also "
   "in the offload_optimizer map; given both ways, the values must agree); at least 4 at stage 3, Adam's swap-in of "
   "a sub-group (DeepSpeed asserts); more cost host memory and do not change the simulated step",
   [](S& s, const V& v) { s.zero.optimizer_swap_buffer_count = static_cast<int>(v.integer); }},
  {"zero.offload_optimizer_pipeline_read", KeyType::BOOL, "", "", "false", NONE, false,
   "offload_optimizer.pipeline_read (also in the offload_optimizer map; given both ways, the values must agree), "
   "offload_optimizer=nvme at stage 3: the next sub-group's NVMe swap-in runs during this sub-group's CPU step "
   "(PipelinedOptimizerSwapper); with pipeline_write too a step needs buffer_count >= 12 (8 with one of them) when "
   "more than one sub-group is swapped. No effect otherwise",
   [](S& s, const V& v) { s.zero.optimizer_pipeline_read = v.boolean; }},
  {"zero.offload_optimizer_pipeline_write", KeyType::BOOL, "", "", "false", NONE, false,
   "offload_optimizer.pipeline_write (also in the offload_optimizer map; given both ways, the values must agree), "
   "offload_optimizer=nvme at stage 3: a sub-group's NVMe swap-out runs on while the next sub-group is swapped in "
   "and stepped, and is waited for at the next swap-out (PipelinedOptimizerSwapper, own read and write aio handles "
   "sharing the drives); needs buffer_count >= 8 (12 with pipeline_read) when more than one sub-group is swapped. "
   "No effect otherwise",
   [](S& s, const V& v) { s.zero.optimizer_pipeline_write = v.boolean; }},
  {"zero.grad_accum_dtype", KeyType::ENUM, "fp32|fp16|bf16", "",
   "the model's (training.precision); fp32 for bf16 at stage 0 before DeepSpeed 0.17.6", NONE, false,
   "DeepSpeed data_types.grad_accum_dtype; fp32 with bf16 at stage 1 (no offload), or at stage 0 before DeepSpeed "
   "0.18.5, selects BF16_Optimizer: a full fp32 gradient buffer (4 B/param) on every GPU. Stage 0 has two cut-overs: "
   "0.17.6 makes bf16 its default (engine.py get_data_types), 0.18.5 refuses fp32 (_do_optimizer_sanity_check). "
   "At stage 3 it is the dtype of grad_partitions_flat_buffer (fp32: 4 B/param / N_d, stage3.py); fp32 on the ZeRO "
   "optimizer of stages 1-2 (stage 2, or stage 1 with offload) is refused as not modelled",
   [](S& s, const V& v) { s.zero.grad_accum_dtype = accum_of(v.text); }},
  {"zero.communication_data_type", KeyType::ENUM, "fp32|fp16|bf16", "", "the model's (fp16 with ZeRO in DeepSpeed 0.5.8-0.8.x, fp32 for bf16 in 0.9.0-0.9.1)", NONE,
   false,
   "DeepSpeed's communication_data_type, the gradient reductions' dtype (a top-level ds_config key, imported from "
   "there). fp32 with a 16-bit model: stages 0-2 cast each flattened chunk to an fp32 temporary (2x its bytes) and "
   "all-reduce 4 B/element; stage 3's IPG bucket is fp32 (4 B x reduce_bucket_size, from init; the model dtype "
   "before DeepSpeed 0.17.2, its grads cast at the reduction) and it reduce-scatters 4 B/element; BF16_Optimizer all-reduces its fp32 grads as they are. Parameter all-gathers keep "
   "the model dtype",
   [](S& s, const V& v) { s.zero.communication_data_type = comm_of(v.text); }},
  {"zero.deepspeed_config", KeyType::SPECIAL, "", "", "(none)", NONE, false,
   "ds_config.json to import (relative to the scenario; with --set to the current directory); keys written here win, and the report notes each one that changes the ds_config's value. Its \"auto\" micro-batch and "
   "gradient accumulation (filled by HF Trainer from its TrainingArguments) keep training.micro_batch and "
   "training.grad_accum: set those to your per_device_train_batch_size and gradient_accumulation_steps. An "
   "\"auto\" fp16 or bf16 enabled (filled from --fp16 / --bf16) is that precision when the other section is absent "
   "or false (the only one it can run), the other one when that is true (HF Trainer refuses a written value its flag "
   "contradicts), and training.precision when both are \"auto\"; the report notes which was assumed. Neither "
   "enabled with one written false, or none written in a config without \"auto\" values (raw DeepSpeed, not HF "
   "Trainer): fp32 (DeepSpeed without mixed precision), noted; training.precision in the scenario wins",
   nullptr},

  // ---- gpu (preset files under topologies/gpus/)
  {"gpu.memory", KeyType::BYTES, "", "B", "(required)", POS, true, "device memory the card exposes",
   [](S& s, const V& v) { s.cluster.gpu.memory = Bytes(v.real); }},
  {"gpu.peak_lp", KeyType::FLOP_RATE, "", "FLOP/s", "(required)", POS, true,
   "dense fp16/bf16 tensor peak (GeForce: FP32-accumulate figure)",
   [](S& s, const V& v) { s.cluster.gpu.peak_lp = FlopRate(v.real); }},
  {"gpu.peak_fp32", KeyType::FLOP_RATE, "", "FLOP/s", "(required)", POS, true, "non-tensor fp32 peak",
   [](S& s, const V& v) { s.cluster.gpu.peak_fp32 = FlopRate(v.real); }},
  {"gpu.peak_tf32", KeyType::FLOP_RATE, "", "FLOP/s", "0 (no TF32 tensor cores)", NONNEG, false,
   "dense TF32 tensor peak (Ampere and later), the matmul rate of an fp32 run with training.tf32: true",
   [](S& s, const V& v) { s.cluster.gpu.peak_tf32 = FlopRate(v.real); }},
  {"gpu.matmul_efficiency", KeyType::REAL, "", "", "(required)", FRAC, true,
   "achievable fraction of peak_lp for large GEMMs (fp32 runs: of peak_fp32 or peak_tf32, assumed the same)",
   [](S& s, const V& v) { s.cluster.gpu.matmul_efficiency = v.real; }},
  {"gpu.attention_efficiency", KeyType::REAL, "", "", "(matmul_efficiency)", FRAC, false,
   "achievable fraction of peak_lp in FlashAttention kernels (training.flash_attention: true); unset: matmul_efficiency",
   [](S& s, const V& v) { s.cluster.gpu.attention_efficiency = v.real; }},
  {"gpu.memory_bandwidth", KeyType::BYTE_RATE, "", "B/s", "(required)", POS, true, "datasheet memory bandwidth",
   [](S& s, const V& v) { s.cluster.gpu.memory_bandwidth = ByteRate(v.real); }},
  {"gpu.memory_efficiency", KeyType::REAL, "", "", "(required)", FRAC, true,
   "achievable fraction of memory_bandwidth", [](S& s, const V& v) { s.cluster.gpu.memory_efficiency = v.real; }},
  {"gpu.sm_count", KeyType::INT, "", "", "0 (no tile/wave quantization)", NONNEG, false,
   "SMs (AMD: CUs) that run GEMM tiles in waves: prices each GEMM's tile and wave quantization only (the rate is peak_lp; docs/compute.md)",
   [](S& s, const V& v) { s.cluster.gpu.sm_count = as_int(v); }},
  {"gpu.compute_capability", KeyType::REAL, "", "", "0 (no NCCL bandwidth caps)", NONNEG, false,
   "CUDA compute capability, e.g. 8.0 (A100), 9.0 (H100): picks the GPU generation of NCCL's absolute and per-channel "
   "bandwidth caps (LL, LL128, tree; docs/collectives.md); 0 = not an NVIDIA GPU: no caps",
   [](S& s, const V& v) { s.cluster.gpu.compute_capability = v.real; }},
  {"gpu.nvlink", KeyType::BOOL, "", "", "true", NONE, false,
   "false: the card has no NVLink (or other GPU-to-GPU link besides PCIe), e.g. GeForce RTX 4090; a run whose "
   "node links are faster than PCIe then says so",
   [](S& s, const V& v) { s.cluster.gpu.nvlink = v.boolean; }},
  {"gpu.bf16", KeyType::BOOL, "", "", "true", NONE, false,
   "false: the card has no bf16 tensor cores (Volta V100: fp16 only); training.precision: bf16 is then an error and "
   "an unset precision means fp16",
   [](S& s, const V& v) { s.cluster.gpu.bf16 = v.boolean; }},
  {"gpu.flash_attention", KeyType::BOOL, "", "", "true", NONE, false,
   "false: FlashAttention does not run on the card (FlashAttention 2 needs Ampere, Ada or Hopper, FlashAttention 1 "
   "Turing or Ampere; V100 has neither); training.flash_attention: true is then an error",
   [](S& s, const V& v) { s.cluster.gpu.flash_attention = v.boolean; }},
  {"gpu.source", KeyType::STRING, "", "", "(required)", NONE, true, "datasheet references",
   [](S& s, const V& v) { s.cluster.gpu.source = v.text; }},
  {"gpu.preset", KeyType::SPECIAL, "", "", "", NONE, false, "GPU preset the inline keys override", nullptr},
  {"gpu.name", KeyType::STRING, "", "", "(preset name)", NONE, false,
   "display name of an inline card (`cluster.gpu: {preset: rtx3090, name: my-card, memory: 48GiB}`); reports show it "
   "instead of \"rtx3090 (modified: ...)\"",
   [](S& s, const V& v) { s.cluster.gpu.name = v.text; }},

  // ---- cpu (preset files under topologies/cpus/, named by cluster.cpu; used by the CPU-Adam model of offload,
  // sim/zero/cpu_adam.hpp)
  {"cpu.cores", KeyType::INT, "", "", "(required)", POS, true,
   "physical cores of the node (all sockets); with base_clock, fp32_simd_lanes and fma_units it gives peak_fp32. "
   "The node's ranks share them; how many each rank's CPU Adam runs on follows training.launcher and "
   "training.omp_num_threads (min(threads, cores / ranks))",
   [](S& s, const V& v) { s.cluster.cpu.cores = as_int(v); }},
  {"cpu.base_clock", KeyType::FREQUENCY, "", "Hz", "(none: give peak_fp32)", POS, false,
   "all-core base clock, e.g. 2.7GHz; a component of peak_fp32",
   [](S& s, const V& v) { s.cluster.cpu.base_clock = Frequency(v.real); }},
  {"cpu.fp32_simd_lanes", KeyType::INT, "", "", "(none: give peak_fp32)", POS, false,
   "fp32 lanes of one FMA pipe: AVX2 8, AVX-512 16 (Zen 4 runs AVX-512 on 256-bit pipes: 8); DeepSpeed builds CPU "
   "Adam for AVX-512 or AVX2 from the building host's CPU flags (op_builder/builder.py simd_width): give the build's "
   "width if it is narrower",
   [](S& s, const V& v) { s.cluster.cpu.fp32_simd_lanes = as_int(v); }},
  {"cpu.fma_units", KeyType::INT, "", "", "(none: give peak_fp32)", POS, false,
   "FMA pipes per core (Skylake-SP Platinum, Sapphire Rapids, Zen 2-4: 2)",
   [](S& s, const V& v) { s.cluster.cpu.fma_units = as_int(v); }},
  {"cpu.peak_fp32", KeyType::FLOP_RATE, "", "FLOP/s", "cores x base_clock x fp32_simd_lanes x fma_units x 2", POS,
   false,
   "node fp32 SIMD peak, the compute bound of CPU Adam. A preset gives it or its components; given with a component "
   "in one file (or under a --set component) it must agree with their product to 0.1%; set in a later layer than "
   "every component (the scenario over the preset, --set over the scenario) it overrides them; alone, cores only "
   "documents",
   [](S& s, const V& v) { s.cluster.cpu.peak_fp32 = FlopRate(v.real); }},
  {"cpu.memory_bandwidth", KeyType::BYTE_RATE, "", "B/s", "(required)", POS, true,
   "node DRAM bandwidth: channels x transfer rate x 8 B, all sockets",
   [](S& s, const V& v) { s.cluster.cpu.memory_bandwidth = ByteRate(v.real); }},
  {"cpu.numa_nodes", KeyType::INT, "", "", "1", POS, false,
   "NUMA nodes the node's DRAM is split into (sockets x nodes per socket, e.g. AMD NPS4 = 4 per socket); each "
   "gives memory_bandwidth / numa_nodes, and a rank's pinned offload buffers sit on one of them",
   [](S& s, const V& v) { s.cluster.cpu.numa_nodes = as_int(v); }},
  {"cpu.page_fault_bandwidth", KeyType::BYTE_RATE, "", "B/s", "10.74GBps", POS, false,
   "bytes per second one rank first-touches in a new host tensor (page faults): the cost of the fresh "
   "temporaries of torch.optim's Adam on the CPU and of a host cast into a new tensor, every step (derived from "
   "ZeRO-Offload Table 4's PyTorch CPU Adam)",
   [](S& s, const V& v) { s.cluster.cpu.page_fault_bandwidth = ByteRate(v.real); }},
  {"cpu.core_memory_bandwidth", KeyType::BYTE_RATE, "", "B/s", "(none)", POS, false,
   "bytes of DRAM traffic one core moves per second alone in a streaming loop, read plus written as STREAM counts "
   "them (a read-only run's rate counts as is, a memcpy's copied rate twice; [assumption] CPU Adam's read/write mix "
   "moves as many bytes per second); bounds a "
   "rank that runs on fewer cores than its share (training.launcher torchrun / accelerate, training.omp_num_threads), "
   "which then needs it",
   [](S& s, const V& v) { s.cluster.cpu.core_memory_bandwidth = ByteRate(v.real); }},
  {"cpu.pageable_copy_bandwidth", KeyType::BYTE_RATE, "", "B/s", "15GBps", POS, false,
   "one thread's memcpy rate between pageable memory and the CUDA driver's pinned staging buffer: a copy from "
   "pageable host memory (pin_memory false) takes bytes/link + bytes/this either way",
   [](S& s, const V& v) { s.cluster.cpu.pageable_copy_bandwidth = ByteRate(v.real); }},
  {"cpu.source", KeyType::STRING, "", "", "(required)", NONE, true, "datasheet references",
   [](S& s, const V& v) { s.cluster.cpu.source = v.text; }},
  {"cpu.preset", KeyType::SPECIAL, "", "", "", NONE, false, "CPU preset the inline keys override", nullptr},
  {"cpu.name", KeyType::STRING, "", "", "(preset name)", NONE, false,
   "display name of an inline CPU (`cluster.cpu: {preset: threadripper-pro-5975wx, name: tr-pro-7975wx, cores: 32}`); "
   "the report's header and result.json show it instead of \"threadripper-pro-5975wx (modified: ...)\" (the preset "
   "stays in result.json's cpu.preset)",
   [](S& s, const V& v) { s.cluster.cpu.name = v.text; }},

  // ---- cluster (scenario `cluster:` map, and preset files under topologies/clusters/)
  {"cluster.topology", KeyType::SPECIAL, "", "", "one-rtx4090", NONE, false,
   "cluster preset (topologies/clusters/), or the path of a topology file of the preset format (a name with '/' or "
   "ending in .yaml; relative to the scenario file, with --set to the current directory)",
   nullptr},
  {"cluster.nodes", KeyType::INT, "", "", "1", POS, false, "identical nodes",
   [](S& s, const V& v) { s.cluster.nodes = as_int(v); }},
  {"cluster.gpus_per_node", KeyType::INT, "", "", "(from the preset)", POS, true,
   "GPUs per node, at most 1024 (a node is simulated whole; the largest NVLink domains hold 72-576 GPUs)",
   [](S& s, const V& v) { s.cluster.gpus_per_node = as_int(v); }},
  {"cluster.gpu", KeyType::SPECIAL, "", "", "(from the preset)", NONE, true,
   "GPU preset name (topologies/gpus/) or {preset: name, key: value}", nullptr},
  {"cluster.cpu", KeyType::SPECIAL, "", "", "(from the preset)", NONE, false,
   "host CPU preset name (topologies/cpus/) or {preset: name, key: value}; needed by optimizer offload (CPU Adam)",
   nullptr},
  {"cluster.intra_node.bandwidth", KeyType::BYTE_RATE, "", "B/s", "(from the preset)", POS, true,
   "per-GPU link into the node switch, per direction",
   [](S& s, const V& v) { s.cluster.intra_node.bandwidth = ByteRate(v.real); }},
  {"cluster.intra_node.latency", KeyType::SECONDS, "", "s", "(from the preset)", NONNEG, true,
   "per GPU -> GPU hop inside the node (part of every node crossing too); a collective step pays what its route "
   "has beyond NCCL's per-step latency (3.4 us NVLink, 5.7 us PCIe: docs/collectives.md \"Route latency per step\")",
   [](S& s, const V& v) { s.cluster.intra_node.latency = Seconds(v.real); }},
  {"cluster.intra_node.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.intra_node.source = v.text; }},
  {"cluster.host_link.bandwidth", KeyType::BYTE_RATE, "", "B/s", "(from the preset)", POS, true,
   "per-GPU PCIe link to host memory, per direction",
   [](S& s, const V& v) { s.cluster.host_link.bandwidth = ByteRate(v.real); }},
  {"cluster.host_link.latency", KeyType::SECONDS, "", "s", "(from the preset)", NONNEG, true,
   "once per GPU <-> CPU copy (offload copies, the host leg of NVMe swaps; + pcie_switch_uplink.latency behind a "
   "PCIe switch); twice per host-staged GPU -> GPU hop (p2p false, + host_bridge.latency), of which a collective "
   "step pays what its route has beyond NCCL's per-step latency (docs/collectives.md \"Route latency per step\")",
   [](S& s, const V& v) { s.cluster.host_link.latency = Seconds(v.real); }},
  {"cluster.host_link.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.host_link.source = v.text; }},
  {"cluster.nic.bandwidth", KeyType::BYTE_RATE, "", "B/s", "(from the preset)", POS, false,
   "per NIC, per direction", [](S& s, const V& v) { s.cluster.nic.bandwidth = ByteRate(v.real); }},
  {"cluster.nic.latency", KeyType::SECONDS, "", "s", "(from the preset)", NONNEG, false,
   "per switch level a node crossing traverses (fabric closed forms: docs/collectives.md); every node-crossing step "
   "of a collective pays the crossing's latency beyond NCCL's 14 us network step (\"Route latency per step\")",
   [](S& s, const V& v) { s.cluster.nic.latency = Seconds(v.real); }},
  {"cluster.nic.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.nic.source = v.text; }},
  {"cluster.nics_per_node", KeyType::INT, "", "", "(from the preset)", NONNEG, false, "NICs per node",
   [](S& s, const V& v) { s.cluster.nics_per_node = as_int(v); }},
  {"cluster.fabric", KeyType::ENUM, "none|single-switch|fat-tree|torus|dragonfly|rail", "", "(from the preset)", NONE, false,
   "network between nodes, used when nodes > 1 (docs/collectives.md, Fabrics)", [](S& s, const V& v) { s.cluster.fabric = fabric_of(v.text); }},
  {"cluster.fat_tree_leaf_radix", KeyType::INT, "", "", "0 (builder chooses)", NONNEG, false, "nodes per leaf switch",
   [](S& s, const V& v) { s.cluster.fat_tree_leaf_radix = as_int(v); }},
  {"cluster.fabric_levels", KeyType::INT, "", "", "2", POS, false,
   "fat-tree switch levels: 2 (leaf, spine) or 3 (leaf, aggregation, core)",
   [](S& s, const V& v) { s.cluster.fabric_levels = as_int(v); }},
  {"cluster.fabric_oversubscription", KeyType::REAL, "", "", "1", POS, false,
   "fat-tree leaf downlinks per uplink (1 non-blocking, 2 = 2:1); at least 1, and must divide the nodes per leaf "
   "switch (fat_tree_leaf_radix lowered to a divisor of nodes). One job's collectives do not feel it: a ring "
   "crosses a leaf's uplinks with one flow each way and a leaf keeps at least one uplink, and the tree's upper edges "
   "are priced as the ring's neighbour crossings; it shows only when many nodes of a leaf send across leaves at "
   "once (docs/collectives.md, \"What fabric_oversubscription changes\")",
   [](S& s, const V& v) { s.cluster.fabric_oversubscription = v.real; }},
  {"cluster.torus_dimensions", KeyType::INT, "", "", "2", POS, false,
   "torus dimensions; nodes are factored into that many near-equal sizes",
   [](S& s, const V& v) { s.cluster.torus_dimensions = as_int(v); }},
  {"cluster.nic_per_gpu", KeyType::BOOL, "", "", "false", NONE, false,
   "every GPU reaches the fabric through its own NIC (GPU i -> NIC i over its PCIe switch); nics_per_node must divide "
   "gpus_per_node; always on for fabric rail",
   [](S& s, const V& v) { s.cluster.nic_per_gpu = v.boolean; }},
  {"cluster.rail_spine", KeyType::BOOL, "", "", "true", NONE, false,
   "fabric rail: a spine joins the rail switches (cross-rail traffic); false: cross-rail traffic crosses NVLink",
   [](S& s, const V& v) { s.cluster.rail_spine = v.boolean; }},
  {"cluster.intra_node_topology", KeyType::ENUM, "switch|mesh", "", "switch", NONE, false,
   "GPU-GPU wiring inside a node: switch = star through the node switch (each GPU one intra_node link); mesh = one "
   "link per GPU pair, intra_node.bandwidth per peer link (p2p and one node only; docs/collectives.md)",
   [](S& s, const V& v) {
     s.cluster.intra_node_topology = v.text == "mesh" ? IntraNodeTopology::MESH : IntraNodeTopology::SWITCH;
   }},
  {"cluster.nvls", KeyType::BOOL, "", "", "false", NONE, false,
   "NVSwitch with NVLink SHARP (H100/H200): NCCL's NVLS collectives on one node (docs/collectives.md, NVLS)",
   [](S& s, const V& v) { s.cluster.nvls = v.boolean; }},
  {"cluster.nvme.read_bandwidth", KeyType::BYTE_RATE, "", "B/s", "0 (no NVMe)", NONNEG, false,
   "node-local NVMe read bandwidth (offload to nvme): the aggregate of all the node's drives, striped as one "
   "RAID-0 volume (n drives of b B/s each are n x b; cluster.nvme.drives only reports n), shared by the node's ranks; a read "
   "and a write at the same time share max(read, write) bandwidth. Simplification: NVMe DMA is charged to neither "
   "the host's DRAM bandwidth (the CPU optimizer's time does not change with it) nor the PCIe switches the drives "
   "may sit behind, so many-drive or fast-drive what-ifs are optimistic",
   [](S& s, const V& v) { s.cluster.nvme.read_bandwidth = ByteRate(v.real); }},
  {"cluster.nvme.write_bandwidth", KeyType::BYTE_RATE, "", "B/s", "0 (no NVMe)", NONNEG, false,
   "node-local NVMe write bandwidth: the aggregate of all the node's drives (RAID-0), as read_bandwidth",
   [](S& s, const V& v) { s.cluster.nvme.write_bandwidth = ByteRate(v.real); }},
  {"cluster.nvme.drives", KeyType::INT, "", "", "0 (not stated)", NONNEG, false,
   "drives striped into read_bandwidth and write_bandwidth, as the report names them (not simulated: the bandwidths "
   "are the aggregate); a scenario that sets a bandwidth without it leaves it unstated",
   [](S& s, const V& v) { s.cluster.nvme.drives = static_cast<int>(v.integer); }},
  {"cluster.nvme.latency", KeyType::SECONDS, "", "s", "0", NONNEG, false,
   "device latency per round of zero.aio requests",
   [](S& s, const V& v) { s.cluster.nvme.latency = Seconds(v.real); }},
  {"cluster.nvme.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.nvme.source = v.text; }},
  {"cluster.host_memory", KeyType::BYTES, "", "B", "0 (unlimited)", NONNEG, false,
   "host RAM per node, shared by its ranks; offloaded states beyond it are a host OOM (the DGX presets set their "
   "datasheet RAM: DGX-2 1.5 TiB, DGX A100 and DGX H100 2 TiB; hgx-a100-4gpu its sourced cluster's 512 GiB; the "
   "desktop and other vendor-server presets leave it 0). Installed DIMMs hold power-of-two GiB and their makers' "
   "\"GB\" means GiB, so a \"256 GB\" machine (8 x 32 GB DIMMs) is 256GiB; 256GB is 238.42 GiB, 7 % less "
   "(hgx-a100-4gpu uses 512GiB for that reason)",
   [](S& s, const V& v) { s.cluster.host_memory = Bytes(v.real); }},
  {"cluster.intra_node.efficiency", KeyType::REAL, "", "", "1", FRAC, false,
   "achievable fraction of the bandwidth (NCCL topo.h per-link figures)",
   [](S& s, const V& v) { s.cluster.intra_node.efficiency = v.real; }},
  {"cluster.host_link.efficiency", KeyType::REAL, "", "", "1", FRAC, false,
   "achievable fraction of the bandwidth", [](S& s, const V& v) { s.cluster.host_link.efficiency = v.real; }},
  {"cluster.nic.efficiency", KeyType::REAL, "", "", "0.99369", FRAC, false,
   "achievable fraction of the bandwidth; unset: InfiniBand's payload per 4096-B MTU packet, 4096 / (4096 + 26 B "
   "of headers) (RoCE v2 over IPv4 with Ethernet framing: 4096 / 4178 = 0.98037)",
   [](S& s, const V& v) { s.cluster.nic.efficiency = v.real; }},
  {"cluster.p2p", KeyType::BOOL, "", "", "true", NONE, false,
   "GPU peer-to-peer; false: GPU-GPU traffic is staged through host memory (two PCIe crossings + host bridge)",
   [](S& s, const V& v) { s.cluster.p2p = v.boolean; }},
  {"cluster.host_bridge.bandwidth", KeyType::BYTE_RATE, "", "B/s", "0 (not modelled)", NONNEG, false,
   "host path shared by all host-staged GPU-GPU traffic (p2p: false)",
   [](S& s, const V& v) { s.cluster.host_bridge.bandwidth = ByteRate(v.real); }},
  {"cluster.host_bridge.latency", KeyType::SECONDS, "", "s", "0", NONNEG, false, "host bridge latency",
   [](S& s, const V& v) { s.cluster.host_bridge.latency = Seconds(v.real); }},
  {"cluster.host_bridge.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.host_bridge.source = v.text; }},
  {"cluster.gpus_per_pcie_switch", KeyType::INT, "", "", "1", POS, false,
   "GPUs behind one PCIe switch whose single uplink to the CPU they share (offload copies, host-staged GPU-GPU "
   "traffic); 1 = every host_link goes straight to the CPU; must divide gpus_per_node (or exceed it: one partly filled "
   "switch)",
   [](S& s, const V& v) { s.cluster.gpus_per_pcie_switch = as_int(v); }},
  {"cluster.pcie_switch_uplink.bandwidth", KeyType::BYTE_RATE, "", "B/s", "host_link.bandwidth", POS, false,
   "PCIe switch -> CPU uplink, per direction, shared by the switch's GPUs (gpus_per_pcie_switch > 1)",
   [](S& s, const V& v) { s.cluster.pcie_switch_uplink.bandwidth = ByteRate(v.real); }},
  {"cluster.pcie_switch_uplink.latency", KeyType::SECONDS, "", "s", "host_link.latency", NONNEG, false,
   "PCIe switch uplink latency", [](S& s, const V& v) { s.cluster.pcie_switch_uplink.latency = Seconds(v.real); }},
  {"cluster.pcie_switch_uplink.efficiency", KeyType::REAL, "", "", "host_link.efficiency", FRAC, false,
   "achievable fraction of the bandwidth", [](S& s, const V& v) { s.cluster.pcie_switch_uplink.efficiency = v.real; }},
  {"cluster.pcie_switch_uplink.source", KeyType::STRING, "", "", "", NONE, false, "reference",
   [](S& s, const V& v) { s.cluster.pcie_switch_uplink.source = v.text; }},
  {"cluster.collective_algorithm", KeyType::ENUM, "auto|ring|tree|hierarchical|nvls|direct", "", "auto", NONE, false,
   "collective algorithm; auto = NCCL's tuner choice by size",
   [](S& s, const V& v) { s.cluster.collective_algorithm = v.text; }},
  {"cluster.collective_protocol", KeyType::ENUM, "auto|ll|ll128|simple|none", "", "auto", NONE, false,
   "NCCL protocol; auto = tuner choice, none = ideal alpha-beta",
   [](S& s, const V& v) { s.cluster.collective_protocol = v.text; }},
  {"cluster.nccl_channels", KeyType::INT, "", "", "auto (0 on one GPU, 2 over PCIe-class intra_node, else 16)", NONNEG,
   false,
   "NCCL channels of the data-parallel communicator (NCCL_MIN_CTAS / NCCL_MAX_CTAS): a running collective holds one "
   "SM per channel, which compute kernels lose meanwhile (needs gpu.sm_count), and each channel holds NCCL "
   "buffers on the GPU (about 18 MiB per channel per communicator with the ring, 12 MiB more when all-reduces "
   "run the tree); with gpu.compute_capability it also bounds collective bandwidth after NCCL's tuner "
   "(channels x the fastest channel, per-channel LL128 and tree caps; docs/collectives.md); at most 64",
   [](S& s, const V& v) { s.cluster.nccl_channels = as_int(v); }},
  {"cluster.source", KeyType::STRING, "", "", "", NONE, false, "references for the preset",
   [](S& s, const V& v) { s.cluster.source = v.text; }},
  {"cluster.description", KeyType::STRING, "", "", "", NONE, false, "what the preset models", nullptr},
  {"cluster.plan_default", KeyType::BOOL, "", "", "true", NONE, false,
   "whether `zerosim plan --gpu G` without --topology may pick this preset as G's node; false for a preset of one "
   "site's node rather than the GPU's usual one (hgx-a100-4gpu), which plan then uses only when --topology names it",
   nullptr},

  // ---- simulation
  {"simulation.steps", KeyType::INT, "", "", "2", POS, false, "optimizer steps, numbered from 0; step 0 is warm-up",
   [](S& s, const V& v) { s.simulation.steps = as_int(v); }},
  {"simulation.fidelity", KeyType::ENUM, "flow|analytic|chunk", "", "flow", NONE, false,
   "network model of collectives: flow (one flow per rank per phase), analytic (closed form), chunk (a message per "
   "algorithm step; small N)",
   [](S& s, const V& v) {
     s.simulation.fidelity = v.text == "analytic" ? Fidelity::ANALYTIC
                             : v.text == "chunk"  ? Fidelity::CHUNK
                                                  : Fidelity::FLOW;
   }},
  {"simulation.on_oom", KeyType::ENUM, "stop|continue", "", "stop", NONE, false,
   "continue: record the OOM and run on as if memory were unlimited",
   [](S& s, const V& v) { s.simulation.on_oom = v.text == "continue" ? OomPolicy::CONTINUE : OomPolicy::STOP; }},
  {"simulation.fold", KeyType::ENUM, "auto|on|off", "", "auto", NONE, false,
   "simulate one or two nodes of symmetric data-parallel ranks for all of them (auto: when nodes > 2 on a "
   "symmetric non-blocking fabric; never on an oversubscribed fat tree, a torus or a dragonfly)",
   [](S& s, const V& v) {
     s.simulation.fold = v.text == "on" ? FoldPolicy::ON : v.text == "off" ? FoldPolicy::OFF : FoldPolicy::AUTO;
   }},

  {"simulation.cuda_context", KeyType::BYTES, "", "B", "287047680B", NONNEG, false,
   "GPU memory of the CUDA context + kernels, outside PyTorch's allocator (lazy loading, PyTorch PR #86509)",
   [](S& s, const V& v) { s.simulation.cuda_context = Bytes(v.real); }},
  {"simulation.expandable_segments", KeyType::BOOL, "", "", "false", NONE, false,
   "PyTorch caching allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: one segment per stream grown "
   "by 20 MiB pages, free pages unmapped before an OOM (less fragmentation; sim/engine/caching_allocator.hpp)",
   [](S& s, const V& v) { s.simulation.expandable_segments = v.boolean; }},
  {"simulation.host_op_launch", KeyType::SECONDS, "", "s", "10us", NONNEG, false,
   "host time per PyTorch eager op (Python + dispatcher + kernel launch, 5-25 us/op; sources in scenario.hpp "
   "HostSpec); 0 in all three host_* keys turns the host-thread model off",
   [](S& s, const V& v) { s.simulation.host.op_launch = Seconds(v.real); }},
  {"simulation.host_module_hook", KeyType::SECONDS, "", "s", "200us", NONNEG, false,
   "host time per DeepSpeed ZeRO-3 module hook (fetch_sub_module / release_sub_module; derived from "
   "DeepSpeedExamples bf16_master_weight on 4 x H100, checked on DeepSpeed's autotuning example; see scenario.hpp "
   "HostSpec)",
   [](S& s, const V& v) { s.simulation.host.module_hook = Seconds(v.real); }},
  {"simulation.host_param_hook", KeyType::SECONDS, "", "s", "40us", NONNEG, false,
   "host time per parameter tensor per hook (ZeRO-3 fetch/release of one param, ZeRO-1/2/3 gradient hook; "
   "derived, see scenario.hpp HostSpec)",
   [](S& s, const V& v) { s.simulation.host.param_hook = Seconds(v.real); }},
  {"simulation.host_launch_queue", KeyType::INT, "", "kernels", "1024", NONNEG, false,
   "kernels the compute stream holds queued before a launch blocks the host thread (CUDA's launch queue, ~1000 "
   "per stream measured; scenario.hpp HostSpec); bounds how far the host runs ahead of the GPU; 0 = unbounded. "
   "An assumption that ZeRO-3's reserved and nvidia-smi peaks depend on (docs/zero-stages.md)",
   [](S& s, const V& v) { s.simulation.host.launch_queue = as_int(v); }},

  // ---- outputs
  {"outputs.dir", KeyType::STRING, "", "", "out/<name>", NONE, false, "output directory",
   [](S& s, const V& v) { s.outputs.dir = v.text; }},
  {"outputs.result_json", KeyType::BOOL, "", "", "true", NONE, false, "write result.json",
   [](S& s, const V& v) { s.outputs.result_json = v.boolean; }},
  {"outputs.trace_json", KeyType::BOOL, "", "", "true", NONE, false, "write trace.json (Perfetto)",
   [](S& s, const V& v) { s.outputs.trace_json = v.boolean; }},
  {"outputs.memory_csv", KeyType::BOOL, "", "", "true", NONE, false, "write memory.csv",
   [](S& s, const V& v) { s.outputs.memory_csv = v.boolean; }},
  {"outputs.trace_ranks", KeyType::INT, "", "", "1", NONNEG, false, "ranks with full timelines",
   [](S& s, const V& v) { s.outputs.trace_ranks = as_int(v); }},
  {"outputs.trace_steps", KeyType::INT, "", "steps", "3", NONNEG, false,
   "optimizer steps, from step 0, kept in trace.json and memory.csv (3: the warm-up step and two steady-state "
   "steps); 0 = all (the summary and result.json always cover every step)",
   [](S& s, const V& v) { s.outputs.trace_steps = as_int(v); }},
};
// clang-format on

} // namespace

const std::vector<KeySpec>& key_table() { return kTable; }

const KeySpec* find_key(std::string_view path) {
  for (const KeySpec& k : kTable)
    if (k.path == path)
      return &k;
  return nullptr;
}

bool is_section(std::string_view path) {
  for (const KeySpec& k : kTable)
    if (k.path.size() > path.size() + 1 && k.path.substr(0, path.size()) == path && k.path[path.size()] == '.')
      return true;
  return false;
}

std::string key_reference_markdown() {
  static const char* const kTypeNames[] = {"string",    "name", "integer",   "bool",     "number",
                                           "elements",  "size", "bandwidth", "duration", "compute rate",
                                           "frequency", "enum", "offload",   "special"};
  std::string out = "| key | type | unit | default | description |\n|---|---|---|---|---|\n";
  for (const KeySpec& k : kTable) {
    std::string type = kTypeNames[static_cast<int>(k.type)];
    if (!k.choices.empty())
      type += ": " + std::string(k.choices);
    std::string choices;
    for (char c : type) // '|' would split the Markdown cell
      choices += c == '|' ? std::string("\\|") : std::string(1, c);
    out += "| `" + std::string(k.path) + "` | " + choices + " | " + std::string(k.unit) + " | " +
           std::string(k.default_text) + " | " + std::string(k.doc) + " |\n";
  }
  return out;
}

std::vector<std::string> child_keys(std::string_view prefix) {
  std::vector<std::string> out;
  for (const KeySpec& k : kTable) {
    std::string_view rest = k.path;
    if (!prefix.empty()) {
      if (rest.size() <= prefix.size() + 1 || rest.substr(0, prefix.size()) != prefix || rest[prefix.size()] != '.')
        continue;
      rest.remove_prefix(prefix.size() + 1);
    }
    std::string child(rest.substr(0, rest.find('.')));
    if (std::find(out.begin(), out.end(), child) == out.end())
      out.push_back(child);
  }
  return out;
}

} // namespace zerosim::scenario
