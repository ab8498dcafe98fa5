// The workload: a model x training setup turned into a per-layer table of parameters, FLOPs, memory traffic and
// activation bytes. Pure data + formulas; no SimGrid. Formulas live in workload/formulas.hpp, one per function.
#pragma once

#include "sim/quantity.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/workload/gemm.hpp"

#include <string>
#include <vector>

namespace zerosim::workload {

/// One parameter tensor (what DeepSpeed partitions individually in stage 3 and hooks per-param in stage 1/2).
struct ParamTensor {
  std::string name; ///< e.g. "h.3.attn.c_attn.weight"
  Elements numel = 0;
  bool trainable = true;
};

enum class LayerKind { EMBEDDING, BLOCK, HEAD };

/// One "module" in execution order: the unit at which ZeRO-3 fetches/releases parameters and at which
/// activations are saved. Costs are for one micro-batch (b sequences of s tokens) on one rank.
struct Layer {
  std::string name; ///< "embed", "block.0", ..., "head"
  LayerKind kind = LayerKind::BLOCK;
  std::vector<ParamTensor> params;
  Elements param_count = 0; ///< sum of params[i].numel (tied weights counted once, at first use)

  Flops fwd_flops; ///< forward matmul FLOPs (2 per multiply-add)
  Bytes fwd_bytes; ///< forward HBM traffic of memory-bound (non-matmul) kernels
  Flops bwd_flops; ///< backward matmul FLOPs (2 x forward); EXCLUDES recompute_flops
  Bytes bwd_bytes; ///< backward HBM traffic of memory-bound kernels; EXCLUDES recompute_bytes
  Bytes saved_activations; ///< bytes kept from forward to backward (the checkpoint only, if checkpointing)
  Bytes recompute_activations; ///< bytes re-materialised during backward when checkpointing (0 otherwise)
  Bytes param_grad_bytes_lp; ///< lp gradient bytes produced in backward (trainable params x 2 B)

  // Added by the workload module (source-compatible additions):
  /// Forward re-run at the start of this layer's backward when activation checkpointing is on (= fwd_flops for
  /// fully checkpointed blocks, the attention core's QKᵀ and P·V with selective recomputation, 0 otherwise). The GPU executes recompute_flops + bwd_flops in the layer's backward;
  /// model FLOPs (MFU) exclude it, hardware FLOPs (HFU) include it.
  Flops recompute_flops;
  /// The attention part (QKᵀ and P·V) of fwd_flops / bwd_flops / recompute_flops when it runs as one fused
  /// FlashAttention kernel (training.flash_attention); 0 otherwise (eager attention is cuBLAS batched GEMMs).
  Flops fwd_attention_flops;
  Flops bwd_attention_flops;
  Flops recompute_attention_flops;
  /// FLOPs the FlashAttention kernels execute per attention FLOP counted above: a causal mask lets them skip the
  /// blocks above the diagonal (half the work), and the backward kernel recomputes QKᵀ (2.5x the forward's work,
  /// counted as 2x). Source: Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py flops() -- causal
  /// divides 4·s²·d·heads by 2, backward is 2.5x forward -- the count behind the published FlashAttention FLOP/s,
  /// hence behind gpu.attention_efficiency. The GPT-2 and LLaMA families are causal language models.
  double fwd_attention_work = 1;
  double bwd_attention_work = 1;
  Bytes recompute_bytes; ///< memory-bound traffic of that re-run forward (fwd_bytes, the core's kernels, or 0)
  /// Transient bytes live only inside this layer's forward on top of what it saves (freed before the next layer):
  /// the head's fp32 logits upcast; a checkpointed block's no-grad intermediates (largest kernel in + out).
  Bytes fwd_working_bytes;
  /// Transient bytes live inside this layer's backward on top of its saved (and recomputed) activations:
  /// activation gradients of the largest kernel (dy + dx); the head's fp32 logit gradients.
  Bytes bwd_working_bytes;
  /// What forward keeps for backward, tensor by tensor as autograd allocates it (the "Saved for backward" lists in
  /// workload.cpp); sums to saved_activations. Full checkpointing: the layer input alone. The generators allocate
  /// each tensor separately, so the caching allocator sees PyTorch's block sizes.
  std::vector<Bytes> activation_tensors;
  /// Per activation_tensors entry, the module whose backward frees it (a parameter tensor's name without its last
  /// component, e.g. "layers.3.mlp.down_proj"): the module that saved it, or for a tensor saved by the parameter-free
  /// ops that follow a module in forward (attention core, activation function, dropout) that module, whose backward
  /// part runs those ops' backward nodes [simplification: they run after the next module's gradient hooks, as
  /// autograd runs AccumulateGrad first, and before this module's kernels]; a tensor several modules read (the q/k/v
  /// input), the first of them. Empty string, no such module in the layer, or an empty list: the layer's end. The
  /// generators free a split layer's tensors per part with it (GeneratorContext::backward).
  std::vector<std::string> activation_modules;
  /// What the recompute pass re-materialises at the start of this layer's backward, tensor by tensor; sums to
  /// recompute_activations. Full checkpointing: the whole saved set; selective: the attention core's s×s tensors.
  std::vector<Bytes> recompute_tensors;
  /// Per recompute_tensors entry, the module whose backward frees it (as activation_modules).
  std::vector<std::string> recompute_modules;
  /// The forward GEMMs as cuBLAS runs them, in order (gemm.hpp), without those fused into FlashAttention: their
  /// FLOPs plus fwd_attention_flops make fwd_flops. Backward runs backward_gemms() of each; a checkpointed
  /// layer's recompute runs these again. The generators price them with gemm_utilization() on the scenario's GPU.
  std::vector<Gemm> gemms;
  /// The GEMMs of the recompute pass: `gemms` with full checkpointing, the attention core's QKᵀ and P·V with
  /// selective recomputation, none otherwise.
  std::vector<Gemm> recompute_gemms;
  /// Fraction of each weight's gradient GEMM the backward runs (training.trainable_fraction): autograd computes no
  /// gradient for frozen weights, so with LoRA-style adapters the weight-gradient GEMMs shrink to the adapters'.
  /// 0 with training.lora_rank (every base weight frozen); the adapters' GEMMs (Gemm::adapter) run both.
  double wgrad_fraction = 1;
};

/// The model x training workload on one rank.
struct Workload {
  scenario::ModelSpec model;
  scenario::TrainingSpec training;
  std::vector<Layer> layers; ///< in forward order: embed, block.0 .. block.L-1, head
  Elements total_params = 0; ///< Ψ (unique parameters)
  /// Parameters the optimizer updates: Ψ, or with training.trainable_fraction f < 1 the adapters'
  /// Σ adapter_numel(numel, f) over the tensors, or with training.lora_rank r the LoRA adapters' Σ r·(in + out) over
  /// the targeted linears (PEFT's "trainable params"; total_params then includes them, as PEFT's "all params" does).
  Elements trainable_params = 0;
  Elements largest_tensor_numel = 0; ///< largest single parameter tensor
  Elements largest_layer_params = 0; ///< largest module's direct params (DeepSpeed estimator's "largest layer")
  double bytes_per_lp = 2.0; ///< element size of params, grads and activations: 2 (fp16/bf16) or 4 (fp32)
  std::int64_t tokens_per_micro_batch = 0; ///< b * s
  Flops model_flops_per_micro_batch; ///< fwd + bwd matmul FLOPs without recomputation (for MFU)
  Flops hardware_flops_per_micro_batch; ///< including recomputation (for HFU)
};

/// Elements of the trainable adapter that training.trainable_fraction `f` (0 < f <= 1) gives a tensor of `numel`
/// elements: round(f x numel), at most numel (f = 1: the whole tensor). LoRA/PEFT-style training, as the generators
/// split each tensor into a frozen base and that adapter.
[[nodiscard]] Elements adapter_numel(Elements numel, double f);

/// Builds the per-layer table. Throws zerosim::Error (not a ScenarioError) on impossible dims (e.g. heads not
/// dividing hidden); the loader validates user input before this is called. kv_heads == 0 means kv_heads = heads;
/// intermediate == 0 means 4h for GPT-2 (Hugging Face n_inner = None) and is an error for LLaMA.
/// Derivations (per tensor, per GEMM, per memory-bound kernel, per saved tensor) are written out in workload.cpp.
[[nodiscard]] Workload build_workload(const scenario::ModelSpec& model, const scenario::TrainingSpec& training);

/// The GEMM parameters of `gpu` (gemm.hpp): its SM count, `peak` (scenario::matmul_peak: peak_lp in fp16/bf16,
/// peak_fp32 or peak_tf32 in fp32; 0 = peak_lp) × matmul_efficiency, memory_bandwidth × memory_efficiency, and
/// `element_bytes` per operand element.
[[nodiscard]] GemmHardware gemm_hardware(const scenario::GpuSpec& gpu, double element_bytes, FlopRate peak = {});

/// Time of the fused attention kernels per executed FLOP, relative to FlashAttention-2 at gpu.attention_efficiency:
/// `forward` for the forward and its recompute, `backward` for the backward kernel.
struct AttentionKernelTime {
  double forward = 1;
  double backward = 1;
};
/// AttentionKernelTime of `k`: 1 and 1 for FLASH2; for TRITON 1.4 forward and 2 backward. Source: Dao 2023
/// (FlashAttention-2, arXiv 2307.08691) §4.1, A100 80GB, head dimension 64 and 128, causal and not, 512 to 16k tokens:
/// FlashAttention-2 is about 1.3-1.5x faster than FlashAttention in Triton in the forward pass (1.4: the midpoint) and
/// about 2x faster in the backward pass. [assumption: the paper's Triton kernel is triton.ops.flash_attention, whose
/// sequence-parallel backward comes from flash-attention's flash_attn_triton.py, the kernel llm-foundry runs; the
/// A100 ratios are used on every GPU]
[[nodiscard]] AttentionKernelTime attention_kernel_time(scenario::FlashAttentionKernel k);

/// gemm_utilization() of a layer's forward GEMMs, of its recompute GEMMs and of the forward's backward GEMMs.
struct LayerGemmUtilization {
  double forward = 1;
  double recompute = 1;
  double backward = 1;
};
[[nodiscard]] LayerGemmUtilization layer_gemm_utilization(const Layer& layer, const GemmHardware& hw);
/// layer_gemm_utilization() of every layer of `w`, in order (a layer identical to the previous one reuses its result).
[[nodiscard]] std::vector<LayerGemmUtilization> gemm_utilizations(const Workload& w, const GemmHardware& hw);

/// The whole micro-step's GEMM utilization: every layer's forward, recompute and backward GEMM FLOPs at the
/// large-GEMM rate ÷ their time at the layers' utilizations (FlashAttention FLOPs excluded). 1 without GEMMs or
/// with hw.sm_count == 0. What the report prints as "GEMM shapes reach X % of the large-GEMM rate".
[[nodiscard]] double step_gemm_utilization(const Workload& w, const GemmHardware& hw);

} // namespace zerosim::workload
