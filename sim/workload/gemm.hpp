// GEMM shapes and the tile / wave quantization of their kernels.
//
// cuBLAS computes C[m×n] = A[m×k]·B[k×n] by splitting C into thread-block (CTA) tiles, one tile per SM at a time;
// the tiles of a kernel run in waves of `sm_count`. Two effects make a GEMM slower than its FLOPs at the large-GEMM
// rate (NVIDIA, "Matrix Multiplication Background User's Guide", DU-09799-001, ch. 3):
//  - tile quantization (§3.1): a tile that sticks out of C still costs a whole tile;
//  - wave quantization (§3.2): the last wave keeps only some SMs busy.
// cuBLAS picks a tile size per shape among those of §2.3 (256×128 and 128×256 the most efficient, then 128×128,
// 256×64 / 64×256, 128×64 / 64×128, 64×64) and splits K across CTAs when the tiles alone cannot fill the GPU
// (split-K). best_tiling() makes the same choice by minimising the modelled time. A small GEMM can also be bound
// by reading its operands: gemm_seconds() adds that roofline floor.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace zerosim::workload {

/// One GEMM: C[m×n] = A[m×k]·B[k×n], `batch` independent products of that shape (batched attention GEMMs:
/// batch = b·a). 2·m·n·k·batch FLOPs.
struct Gemm {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t batch = 1;
  /// B is a weight (x·W): its backward has a weight-gradient GEMM, skipped for frozen weights. False for the
  /// attention GEMMs (QKᵀ, P·V), whose both backward GEMMs are activation gradients.
  bool weight = true;
  /// A LoRA adapter's GEMM (lora_A or lora_B, training.lora_rank): its weight trains, so its weight-gradient GEMM
  /// runs whatever the layer's wgrad_fraction (which is 0 with LoRA: every base weight is frozen).
  bool adapter = false;
  [[nodiscard]] double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) * static_cast<double>(batch);
  }
  friend bool operator==(const Gemm&, const Gemm&) = default;
};

/// The two backward GEMMs of a forward Y = X·W (X = A, W = B): the input gradient dX = dY·Wᵀ (m×k, reduction
/// over n) and the weight gradient dW = Xᵀ·dY (k×n, reduction over m). Together 2× the forward FLOPs
/// (Narayanan et al. 2021 §5.1).
[[nodiscard]] std::array<Gemm, 2> backward_gemms(const Gemm& g);

/// How one GEMM is laid out on the GPU: tile_m × tile_n CTA tiles, K split `split_k` ways, `ctas` CTAs in
/// `waves` waves of sm_count. `slot_flops` is the tensor-core time in FLOP units: waves × sm_count × 2·tile_m·
/// tile_n·⌈k/split_k⌉ / tile_throughput, so the compute time is slot_flops / (peak × matmul_efficiency);
/// `seconds` is the kernel's time (gemm_seconds). utilization() = flops / slot_flops.
struct GemmTiling {
  int tile_m = 0;
  int tile_n = 0;
  int split_k = 1;
  std::int64_t ctas = 0;
  std::int64_t waves = 0;
  double tile_throughput = 1; ///< the tile's rate relative to the large tiles (kTileThroughput)
  double flops = 0;
  double slot_flops = 0;
  double seconds = 0;
  [[nodiscard]] double utilization() const { return slot_flops > 0 ? flops / slot_flops : 1.0; }
};

/// Relative rate of a tile_m × tile_n tile: min(1, (tile_m·tile_n / (tile_m + tile_n)) / 64). A tile reads
/// (tile_m + tile_n) operand elements per k step for tile_m·tile_n multiply-adds; tiles from 128×128 up reuse
/// enough to keep the tensor cores fed (the guide's "larger tiles are more efficient"), smaller ones are fed at
/// their reuse ratio: 256×64 0.8, 128×64 2/3, 64×64 1/2. [assumption: the guide gives the order, not the ratios]
[[nodiscard]] double tile_throughput(int tile_m, int tile_n);

/// Smallest K slice a split-K CTA is given: 256 elements (four 64-deep main-loop steps). [assumption]
inline constexpr std::int64_t kMinSplitKDepth = 256;

/// What a GEMM's time depends on besides its shape.
struct GemmHardware {
  int sm_count = 0; ///< SMs (CUs); 0 = no tile / wave quantization (every GEMM at the large-GEMM rate)
  double flop_rate = 0; ///< large-GEMM rate: peak_lp × matmul_efficiency, FLOP/s
  double byte_rate = 0; ///< memory_bandwidth × memory_efficiency, B/s; 0 = no operand-read floor
  double element_bytes = 2; ///< operand element size (fp16 / bf16)
};

/// The fastest tiling of `g` (cuBLAS's heuristic choice, modelled): over the tiles of the guide's §2.3 and, when
/// the tiles alone leave SMs idle, split-K factors up to 16 that still fit one wave (tiles × split <= sm_count,
/// ⌈k/split⌉ >= kMinSplitKDepth), the least `seconds`: max(slot_flops / flop_rate, bytes / byte_rate) with
/// bytes = element_bytes·(m·k + k·n + m·n) per product plus a split-K's fp32 partial sums (written, read back)
/// -- a roofline per kernel (Williams et al. 2009) over the tiled compute time. Ties go to the larger tile, then
/// the smaller split. Throws std::invalid_argument when sm_count < 1, flop_rate <= 0 or a dimension < 1.
[[nodiscard]] GemmTiling best_tiling(const Gemm& g, const GemmHardware& hw);

/// Seconds of one GEMM: best_tiling(g, hw).seconds; with sm_count 0, flops / flop_rate (the large-GEMM rate).
/// Throws std::invalid_argument when flop_rate <= 0.
[[nodiscard]] double gemm_seconds(const Gemm& g, const GemmHardware& hw);

/// Fraction of the large-GEMM rate a sequence of GEMMs run back to back reaches: (Σ flops / flop_rate) /
/// Σ gemm_seconds. 1 for an empty list or hw.sm_count == 0.
[[nodiscard]] double gemm_utilization(std::span<const Gemm> gemms, const GemmHardware& hw);

} // namespace zerosim::workload
