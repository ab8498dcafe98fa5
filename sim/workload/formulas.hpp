// Closed-form transformer formulas, one function per formula (STYLE.md §8). Symbols follow DESIGN.md: h hidden,
// l (= L) layers, a heads, V vocab, s sequence length, b micro-batch, B global batch (sequences per iteration).
// Each comment gives the equation, its source and its limits. build_workload() derives the same quantities per
// tensor and per kernel for the real GPT-2 / LLaMA modules; these closed forms are the published references its
// tests compare against.
#pragma once

#include "sim/quantity.hpp"

#include <cstdint>

namespace zerosim::workload {

/// Parameters of one GPT transformer layer: 12h² + 13h
/// (QKV 3h² + 3h, attention projection h² + h, MLP 8h² + 5h, two LayerNorms 4h).
/// Source: Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters Using
/// Megatron-LM", SC21, §5.1, arXiv 2104.04473 (reference/zero_semantics.md §5.2).
/// Limits: GPT-2/3-style block (MLP 4h, biases, LayerNorm with bias); not valid for LLaMA (SwiGLU, RMSNorm, GQA).
[[nodiscard]] Elements gpt_layer_params(std::int64_t h);

/// Parameters of a GPT model: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h)) = l·(12h² + 13h) + V·h + s·h.
/// Source: Narayanan et al. 2021, arXiv 2104.04473, §5.1 (eq. for P).
/// Limits: learned position table of exactly s rows, tied LM head; omits the final LayerNorm (2h), so it is 2h
/// below the exact count of a real GPT-2 checkpoint (and uses s rather than max_positions).
[[nodiscard]] Elements gpt_model_params(std::int64_t l, std::int64_t h, std::int64_t V, std::int64_t s);

/// Activation bytes one GPT layer saves for backward, 16-bit activations, no parallelism: sbh·(34 + 5as/h)
/// = 34·s·b·h + 5·a·s²·b (attention 11sbh + 5as²b, MLP 19sbh, LayerNorms 4sbh).
/// Source: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
/// §4.1, arXiv 2205.05198 (reference/zero_semantics.md §5.1).
/// Limits: GPT block with MLP 4h and dropout (1-byte masks); ignores LayerNorm fp32 statistics (O(sb)).
[[nodiscard]] Bytes korthikanti_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a);

/// Same layer with FlashAttention: 34·s·b·h + 4·a·s·b. The s×s scores, probabilities and dropout mask
/// (the 5as²b term) are never stored; the kernel keeps one fp32 log-sum-exp per row per head (4·a·s·b bytes).
/// Source: Dao et al. 2022, "FlashAttention", §3.1 (only the softmax statistics are saved for backward),
/// arXiv 2205.14135, applied to Korthikanti's breakdown (reference/zero_semantics.md §5.1, derived).
/// Limits: as korthikanti_activation_bytes().
[[nodiscard]] Bytes flash_attention_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h, std::int64_t a);

/// Activation bytes per layer with full activation checkpointing (recomputation): 2·s·b·h, the layer input in 16 bit.
/// Source: Korthikanti et al. 2022, arXiv 2205.05198, full-recomputation case (reference/zero_semantics.md §5.1).
/// Limits: excludes the one layer's full activations re-materialised during its backward.
[[nodiscard]] Bytes checkpointed_activation_bytes(std::int64_t s, std::int64_t b, std::int64_t h);

/// FLOPs of a dense GEMM (m×k)·(k×n): 2·m·n·k (one multiply and one add per MAC).
/// Source: standard; the convention of Narayanan et al. 2021 §5.1 (arXiv 2104.04473).
[[nodiscard]] Flops gemm_flops(std::int64_t m, std::int64_t n, std::int64_t k);

/// Forward matmul FLOPs of one GPT layer: 24·b·s·h² + 4·b·s²·h
/// (QKV 6bsh², QKᵀ 2bs²h, scores·V 2bs²h, projection 2bsh², MLP 16bsh²).
/// Source: Narayanan et al. 2021, §5.1, arXiv 2104.04473.
/// Limits: MLP 4h; counts the full s×s attention (no causal halving); ignores element-wise ops and biases.
[[nodiscard]] Flops gpt_layer_forward_flops(std::int64_t b, std::int64_t s, std::int64_t h);

/// Training FLOPs per iteration of a GPT model (forward + backward, backward = 2× forward):
/// without recomputation F = 72·B·s·l·h²·(1 + s/(6h) + V/(12·l·h));
/// with full recomputation (forward run twice) F = 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)).
/// Source: Narayanan et al. 2021, §5.1 and its FLOP-count appendix, arXiv 2104.04473.
/// Limits: GPT layer as in gpt_layer_forward_flops(); the LM-head logits GEMM (2·B·s·h·V forward) is not recomputed.
[[nodiscard]] Flops narayanan_iteration_flops(std::int64_t B, std::int64_t s, std::int64_t l, std::int64_t h,
                                              std::int64_t V, bool recompute);

/// ZeRO-Infinity model-state working memory (MSWM): the fp16 parameter and gradient (2 + 2 B per element) of the
/// largest single operator, the h→4h MLP linear of h·4h elements: MSWM = 4 B · h · 4h = 16·h² bytes.
/// E.g. h = 8192 → 1 GiB, h = 65536 → 64 GiB.
/// Source: Rajbhandari et al. 2021, "ZeRO-Infinity", SC21, §3 (memory requirements), arXiv 2104.07857
/// (reference/zero_semantics.md §4.2 and §7 item 33).
/// Limits: GPT-style MLP of 4h without tiling; ZeRO-Infinity's memory-centric tiling divides it by the tiling factor.
[[nodiscard]] Bytes zero_infinity_mswm_bytes(std::int64_t h);

/// ZeRO-Infinity arithmetic intensity (FLOPs per byte moved) of the parameters and gradients: AIT = bsz·seq.
/// Per iteration a parameter costs 8 FLOPs per token (2 forward, 4 backward, 2 recompute: 2·4·12·bsz·seq·nl·hd²
/// over 12·nl·hd² parameters) and is moved 4 times at 2 B (forward, backward, recompute, gradient): 8 B.
/// Source: Rajbhandari et al. 2021, arXiv 2104.07857, §4 (reference/zero_semantics.md §4.2, §7 item 33).
/// Limits: `bsz` is the per-GPU batch in sequences; with full recomputation.
[[nodiscard]] double zero_infinity_ait_params(std::int64_t bsz, std::int64_t seq);

/// ZeRO-Infinity arithmetic intensity of the optimizer states: AIT = bsz·seq/4 (16 B of fp32 state read and written
/// per parameter per step against the same 8 FLOPs per token).
/// Source: Rajbhandari et al. 2021, arXiv 2104.07857, §4 (reference/zero_semantics.md §4.2).
[[nodiscard]] double zero_infinity_ait_optimizer(std::int64_t bsz, std::int64_t seq);

/// ZeRO-Infinity efficiency bound of a data movement at bandwidth `bw` (B/s) for a GPU of peak throughput `peak`
/// (FLOP/s): efficiency = ait·bw / (ait·bw + peak), in [0, 1).
/// Source: Rajbhandari et al. 2021, arXiv 2104.07857, §4, eq. for efficiency (reference/zero_semantics.md §4.2).
/// Limits: no overlap of compute and transfer is assumed (the paper's worst case).
[[nodiscard]] double zero_infinity_efficiency(double ait, double bw_bytes_per_s, double peak_flops);

} // namespace zerosim::workload
